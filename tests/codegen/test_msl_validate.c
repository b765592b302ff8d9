/* MSL checked by clang: there is no Metal compiler on Linux, so the MSL
 * printer's output is parsed by clang as C++ for OpenCL 2021 (C++17 with
 * address spaces) against a stand-in <metal_stdlib> (tests/codegen/msl/
 * metal_stdlib, which explains the mapping), with warnings as errors:
 *   - every MSL golden (tests/codegen/golden/<kernel>.metal),
 *   - the MSL of every corpus kernel, transpiled now (the same text as its
 *     golden when codegen_golden passes, then checked once), with its
 *     handlers' batch entries,
 *   - the MSL of the ops library's GPU kernels (src/ops/ops_gpu.c).
 * Each transpiled module must also define every entry point that
 * rk_codegen_list_entries() lists (checked by naming them in decltype
 * after the module). clang ignores the attributes it does not know
 * ([[buffer(0)]]) with a warning: the test accepts that warning only for
 * attribute names Metal defines.
 *
 * Then the negative cases, tests/codegen/msl/reject_*.metal: each is a
 * small MSL program that must pass as written and be refused with
 * -DRK_MSL_DEFECT=1, which introduces one defect (a misspelt built-in or
 * attribute, device memory where threadgroup memory is expected and the
 * reverse, operands of ?: in two address spaces, a struct assigned to a
 * float, ...), with the expected words in clang's message.
 *
 * Exits 77 when clang is absent or too old for -cl-std=clc++2021 (clang 14
 * or newer). Semantics a Metal compiler would check beyond the language
 * (resource limits, argument buffer layout, ...) are not checked here.
 */
#define RK_TEST_IMPLEMENTATION
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "cg_test_util.h"
#include "ops/ops_gpu_source.h"
#include "rk_test.h"

enum { kMaxEntries = 64 };

#define MSL_DIR CG_TEST_DIR "/msl"

/* The attribute names of Metal kernel functions and their arguments (MSL
 * specification, "Attributes for Kernel Function Input Arguments" and
 * around). [[threadgroup(i)]] reaches clang as __local: the stand-in
 * defines threadgroup as that address space. */
static const char *const kMetalAttributes[] = {
    "buffer",
    "__local",
    "texture",
    "sampler",
    "stage_in",
    "function_constant",
    "max_total_threads_per_threadgroup",
    "dispatch_threads_per_threadgroup",
    "grid_origin",
    "grid_size",
    "quadgroup_index_in_threadgroup",
    "quadgroups_per_threadgroup",
    "simdgroup_index_in_threadgroup",
    "simdgroups_per_threadgroup",
    "thread_execution_width",
    "thread_index_in_quadgroup",
    "thread_index_in_simdgroup",
    "thread_index_in_threadgroup",
    "thread_position_in_grid",
    "thread_position_in_threadgroup",
    "threadgroup_position_in_grid",
    "threadgroups_per_grid",
    "threads_per_grid",
    "threads_per_simdgroup",
    "threads_per_threadgroup",
};

/* $RK_MSL_CLANG, else the clang CMake found, else clang from PATH. */
static const char *clang_path(void) {
  const char *env = getenv("RK_MSL_CLANG");
  if (env && *env) return env;
  return *RK_MSL_CLANG && !strstr(RK_MSL_CLANG, "NOTFOUND") ? RK_MSL_CLANG
                                                            : "clang";
}

/* Runs clang on `path`; `define` (e.g. "-DRK_MSL_DEFECT=1") may be NULL.
 * Returns the exit status (-2: clang could not be started), the output in
 * *out_log (malloc'd). */
static int run_clang(const char *path, const char *define, char **out_log) {
  char *argv[] = {(char *)clang_path(),
                  "-fsyntax-only",
                  "-x",
                  "clcpp",
                  "-cl-std=clc++2021",
                  "-cl-no-stdinc",
                  "-Xclang",
                  "-cl-ext=-all,+cl_khr_fp16,+__opencl_c_generic_address_space,"
                  "+__opencl_c_program_scope_global_variables,+__cl_clang_"
                  "function_pointers",
                  "-I" MSL_DIR,
                  "-Werror",
                  "-Wno-error=unknown-attributes",
                  "-fno-caret-diagnostics",
                  "-fno-color-diagnostics",
                  (char *)(define ? define : "-DRK_MSL_NOTHING_="),
                  (char *)path,
                  NULL};
  int code = -1;
  *out_log = NULL;
  if (rk__run_process(argv, out_log, &code) != RK_OK) return -2;
  return code;
}

/* The first attribute in clang's "unknown attribute 'X' ignored" warnings
 * that Metal does not define, copied to `bad`; false if there is none. */
static bool unknown_attribute(const char *log, char *bad, size_t cap) {
  static const char kWarn[] = "warning: unknown attribute '";
  for (const char *s = log ? strstr(log, kWarn) : NULL; s;
       s = strstr(s, kWarn)) {
    s += sizeof kWarn - 1;
    size_t n = strcspn(s, "'\n");
    bool known = false;
    for (size_t i = 0; i < sizeof kMetalAttributes / sizeof *kMetalAttributes;
         ++i)
      if (strlen(kMetalAttributes[i]) == n &&
          strncmp(kMetalAttributes[i], s, n) == 0)
        known = true;
    if (!known) {
      snprintf(bad, cap, "%.*s", (int)n, s);
      return true;
    }
  }
  return false;
}

/* Checks one MSL file with clang: true when clang accepts it and every
 * attribute it ignored is a Metal one. The reason otherwise goes to
 * *out_log (malloc'd, with clang's output). */
static bool msl_valid(const char *path, const char *define, char **out_log) {
  int code = run_clang(path, define, out_log);
  if (code != 0) return false;
  char bad[128];
  if (!unknown_attribute(*out_log, bad, sizeof bad)) return true;
  char *why = NULL;
  size_t n = strlen(*out_log) + sizeof bad + 64;
  if ((why = malloc(n)) != NULL)
    snprintf(why, n, "%s\nnot a Metal attribute: [[%s]]\n", *out_log, bad);
  free(*out_log);
  *out_log = why;
  return false;
}

typedef struct tally {
  int files;    /* MSL modules clang accepted */
  int entries;  /* entry points found in them */
  int handlers; /* handler kernels among them */
  int batches;  /* rk_batch_ entries among them */
} tally_t;

/* Writes `text` (one MSL module) to the temporary directory as
 * <label>.metal, followed by a check that each of `entries` is declared
 * (decltype of a function needs OpenCL's function pointer extension,
 * enabled only after the module), and checks it. */
static void check_module(tally_t *t, const char *label, const char *text,
                         const rk_entry_list_t *entries) {
  char path[1024];
  static const char *dir; /* one directory: labels are unique */
  if (!dir) dir = rk_test_temp_dir();
  snprintf(path, sizeof path, "%s/%s.metal", dir, label);
  FILE *f = fopen(path, "wb");
  if (!CHECK(f != NULL, "cannot write %s", path)) return;
  fputs(text, f);
  size_t n = entries ? entries->count : 0;
  if (n)
    fputs("\n#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable\n",
          f);
  for (size_t i = 0; i < n; ++i)
    fprintf(f, "using rk_entry_check_%zu_ = decltype(%s);\n", i,
            entries->entries[i].name);
  if (!CHECK(fclose(f) == 0, "cannot write %s", path)) return;
  char *log = NULL;
  bool valid = msl_valid(path, NULL, &log);
  if (CHECK(valid,
            "%s: the MSL does not pass clang with the stand-in "
            "<metal_stdlib>:\n%s\n--- the source (%s):\n%s",
            label, log ? log : "(no output)", path, text)) {
    t->files++;
    t->entries += (int)n;
    for (size_t i = 0; i < n; ++i) {
      t->handlers += entries->entries[i].kind == RK_ENTRY_HANDLER;
      t->batches += entries->entries[i].batch_of != NULL;
    }
  }
  free(log);
}

/* Transpiles `src` to MSL, lists its entry points and checks both; `golden`
 * (may be NULL) is the golden text, checked too unless it is the same. */
static void check_source(tally_t *t, const char *label, const char *src,
                         const char *source_name, const char *golden) {
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = source_name;
  char *text = NULL;
  rk_entry_list_t *list = NULL;
  if (CHECK_OK(rk_transpile(src, RK_TARGET_MSL, &o, &text)) &&
      CHECK_OK(rk_codegen_list_entries(src, &o, &list, NULL))) {
    check_module(t, label, text, list);
    printf("  %-18s %zu entry point(s)%s\n", label, list->count,
           golden && strcmp(golden, text) == 0 ? ", same as its golden" : "");
    if (golden && strcmp(golden, text) != 0) {
      char golden_label[128];
      snprintf(golden_label, sizeof golden_label, "%s.golden", label);
      check_module(t, golden_label, golden, NULL);
      printf("  %-18s differs from the output (see codegen_golden)\n",
             golden_label);
    }
  }
  rk_entry_list_destroy(list);
  rk_transpile_free(text);
}

/* Every corpus kernel that MSL takes, with its golden. */
static void check_corpus(tally_t *t, const cg_corpus_t *corpus) {
  for (int k = 0; k < corpus->count; ++k) {
    const char *name = corpus->names[k];
    char path[1024], source_name[128];
    snprintf(path, sizeof path, "%s/golden/%s.metal.err", CG_TEST_DIR, name);
    FILE *err = fopen(path, "rb");
    if (err) { /* refused for MSL, as codegen_golden checks */
      fclose(err);
      printf("  %-18s refused for MSL (golden/%s.metal.err)\n", name, name);
      continue;
    }
    char *src = cg_read_kernel(name);
    snprintf(path, sizeof path, "%s/golden/%s.metal", CG_TEST_DIR, name);
    char *golden = cg_read_file(path);
    snprintf(source_name, sizeof source_name, "%s.c", name);
    if (CHECK(src != NULL, "cannot read kernel %s", name) &&
        CHECK(golden != NULL, "no golden %s", path))
      check_source(t, name, src, source_name, golden);
    free(golden);
    free(src);
  }
}

/* Goldens without a corpus kernel (none are expected; checked all the
 * same, so that every .metal file under golden/ passes). */
static void check_orphan_goldens(tally_t *t, const cg_corpus_t *corpus) {
  DIR *d = opendir(CG_TEST_DIR "/golden");
  if (!CHECK(d != NULL, "cannot list %s/golden", CG_TEST_DIR)) return;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 6, ".metal") != 0) continue;
    bool known = false;
    for (int k = 0; k < corpus->count; ++k)
      if (strlen(corpus->names[k]) == n - 6 &&
          strncmp(corpus->names[k], e->d_name, n - 6) == 0)
        known = true;
    if (known) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s", CG_TEST_DIR, e->d_name);
    char *text = cg_read_file(path);
    if (CHECK(text != NULL, "cannot read %s", path))
      check_module(t, e->d_name, text, NULL);
    free(text);
  }
  closedir(d);
}

/* A negative case: must pass as written and fail with the defect, with
 * `expect` in clang's output (or in the attribute check's). */
typedef struct reject {
  const char *file;
  const char *expect;
} reject_t;

static const reject_t kRejects[] = {
    {"reject_builtin_misspelt.metal", "threadgroup_barier"},
    {"reject_attribute_misspelt.metal", "thread_position_in_thredgroup"},
    {"reject_unqualified_builtin.metal", "undeclared identifier 'sqrt'"},
    {"reject_device_as_threadgroup.metal",
     "address space '__global' as a pointer to address space '__local'"},
    {"reject_threadgroup_as_device.metal",
     "from '__local float[64]' to '__global float *"},
    {"reject_device_as_thread.metal", "'__private float *"},
    {"reject_threadgroup_in_helper.metal", "local address space"},
    {"reject_struct_cond_spaces.metal", "incompatible operand types"},
    {"reject_struct_to_float.metal",
     "assigning to 'float' from incompatible type"},
    {"reject_plain_atomic.metal", "atomic_fetch_add_explicit"},
    {"reject_double.metal", "'double'"},
};

static void check_rejects(void) {
  for (size_t i = 0; i < sizeof kRejects / sizeof *kRejects; ++i) {
    const reject_t *r = &kRejects[i];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", MSL_DIR, r->file);
    char *log = NULL;
    bool good = msl_valid(path, "-DRK_MSL_DEFECT=0", &log);
    CHECK(good, "%s without its defect does not pass:\n%s", r->file,
          log ? log : "");
    free(log);
    bool bad = msl_valid(path, "-DRK_MSL_DEFECT=1", &log);
    if (CHECK(!bad, "%s with its defect passes", r->file) &&
        CHECK(log && strstr(log, r->expect),
              "%s is refused, but not with \"%s\":\n%s", r->file, r->expect,
              log ? log : ""))
      printf("  %-37s refused: %s\n", r->file, r->expect);
    free(log);
  }
}

/* Skips the test (77) unless clang runs and knows C++ for OpenCL 2021. */
static void require_clang(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/probe.clcpp", rk_test_temp_dir());
  if (!cg_write_file(path, "kernel void rk_probe() {}\n"))
    RK_TEST_SKIP("cannot write %s", path);
  char *argv[] = {(char *)clang_path(), "-fsyntax-only", "-x", "clcpp",
                  "-cl-std=clc++2021",  (char *)path,    NULL};
  char *log = NULL;
  int code = -1;
  rk_status_t s = rk__run_process(argv, &log, &code);
  if (s != RK_OK)
    RK_TEST_SKIP(
        "no clang to check MSL with (%s cannot be started; set "
        "RK_MSL_CLANG)",
        clang_path());
  if (code != 0)
    RK_TEST_SKIP(
        "%s does not parse C++ for OpenCL 2021 (clang 14 or newer "
        "does):\n%s",
        clang_path(), log ? log : "");
  free(log);
}

/* --dir DIR: every .metal file in DIR, the MSL texts a backend handed to Metal
 * (the fake Metal of tests/backends/metal writes each one there when
 * cts_metal_fake runs), checked like the modules above. At least one must
 * be there, so a run that checked nothing fails. */
static int check_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    CHECK(false, "cannot open %s", dir);
    return rk_test_finish("codegen_msl_validate --dir");
  }
  tally_t t = {0};
  int seen = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 6, ".metal") != 0) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *text = NULL;
    size_t size = 0;
    if (!CHECK_OK(rk__read_file(path, &text, &size))) continue;
    char label[1024];
    snprintf(label, sizeof label, "backend-%.*s", (int)(n - 6), e->d_name);
    check_module(&t, label, text, NULL);
    free(text);
    ++seen;
  }
  closedir(d);
  CHECK(seen > 0, "no MSL in %s: the Metal backend handed nothing to check",
        dir);
  printf("%d of %d MSL texts the Metal backend compiled pass\n", t.files, seen);
  return rk_test_finish("codegen_msl_validate --dir");
}

int main(int argc, char **argv) {
  require_clang();
  if (argc == 3 && strcmp(argv[1], "--dir") == 0) return check_dir(argv[2]);
  printf("MSL checked with %s -x clcpp -cl-std=clc++2021 and %s/metal_stdlib\n",
         clang_path(), MSL_DIR);
  tally_t t = {0};
  cg_corpus_t corpus;
  if (cg_corpus_load(&corpus)) {
    CHECK(corpus.count >= 15, "the corpus has %d kernels, want at least 15",
          corpus.count);
    check_corpus(&t, &corpus);
    check_orphan_goldens(&t, &corpus);
  }
  check_source(&t, "rk_ops_kernels", rk__ops_gpu_source(), "rk_ops_kernels.c",
               NULL);
  CHECK(t.handlers >= 4 && t.batches == t.handlers,
        "%d handler kernels and %d batch entries checked, want at least 4 "
        "and one batch entry each",
        t.handlers, t.batches);
  printf(
      "%d MSL modules pass, %d entry points found (%d handlers, %d batch "
      "entries)\n",
      t.files, t.entries, t.handlers, t.batches);
  check_rejects();
  return rk_test_finish("codegen_msl_validate");
}
