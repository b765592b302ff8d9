/* Helpers shared by the codegen tests: the kernel corpus and files. */
#ifndef RK_TESTS_CODEGEN_CG_TEST_UTIL_H_
#define RK_TESTS_CODEGEN_CG_TEST_UTIL_H_

#include <stdbool.h>
#include <stddef.h>

#include "rk/codegen.h"

/* tests/codegen in the source tree (set by CMake). */
#define CG_TEST_DIR RK_CODEGEN_TEST_DIR

enum { CG_MAX_KERNELS = 64 };

/* The corpus: tests/codegen/kernels/<name>.c, sorted by name. */
typedef struct cg_corpus {
  int count;
  char names[CG_MAX_KERNELS][64]; /* without ".c" */
} cg_corpus_t;

/* Lists the corpus; fails the test (and returns false) if it cannot. */
bool cg_corpus_load(cg_corpus_t *out);

/* Reads tests/codegen/kernels/<name>.c (malloc'd; NULL on failure). */
char *cg_read_kernel(const char *name);

/* Reads a whole file (malloc'd, NUL-terminated); NULL if it cannot. */
char *cg_read_file(const char *path);
bool cg_write_file(const char *path, const char *text);

/* Transpiles with source_name "<name>.c". */
rk_status_t cg_transpile(const char *source, const char *name,
                         rk_target_t target, char **out_text);

/* File extension of a target's output: "c", "cu", "cl", "wgsl", "metal". */
const char *cg_target_ext(rk_target_t target);

#endif /* RK_TESTS_CODEGEN_CG_TEST_UTIL_H_ */
