/* Helpers shared by the CPU backend tests. */
#ifndef RK_TESTS_BACKENDS_CPU_CPU_TEST_UTIL_H_
#define RK_TESTS_BACKENDS_CPU_CPU_TEST_UTIL_H_

#include <stdbool.h>

#include "rk/rk.h"
#include "rk_test.h"

/* A kernel `scale(n, factor, x)`: x[i] = i * factor * SCALE (SCALE
 * defaults to 1 and may be set with a define). */
extern const char kCpuScaleSource[];

/* Opens the CPU backend; exits with a failure if it cannot. */
rk_backend_t *cpu_open(void);

/* Compiles with the given options; returns the status, *out_mod on
 * success. */
rk_status_t cpu_compile(rk_context_t *ctx, const char *source,
                        const char *source_name, const char *const *defines,
                        bool no_cache, rk_module_t **out_mod);

/* Launches `scale` from mod over n elements and checks every result against
 * i * factor * scale. */
bool cpu_run_scale(rk_context_t *ctx, rk_module_t *mod, int factor, int scale);

/* Number of entries of `dir` whose name ends with `suffix` (-1 if dir
 * cannot be read). */
int cpu_count_files(const char *dir, const char *suffix);
/* Number of entries of `dir` other than . and .. (-1 if unreadable). */
int cpu_count_entries(const char *dir);
bool cpu_path_exists(const char *path);

#endif /* RK_TESTS_BACKENDS_CPU_CPU_TEST_UTIL_H_ */
