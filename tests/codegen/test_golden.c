/* Golden files: every corpus kernel (tests/codegen/kernels/NAME.c) transpiled
 * for C, CUDA, OpenCL, MSL and WGSL must match
 * tests/codegen/golden/<kernel>.<ext> exactly. A target that refuses a
 * kernel has <kernel>.<ext>.err holding the expected diagnostic instead.
 * (The WGSL goldens are validated by a WebGPU implementation in
 * codegen_wgsl_validate, where one is available.)
 *
 * Then every kernel's C output must compile with the system C compiler
 * (cc -fsyntax-only -std=c11 -Wall -Wextra -Werror -I include
 * -DRK_CPU_MODULE=1), and so must every kernel source itself.
 *
 * With the WGSL loop guard (rk_transpile_options_t.wgsl_loop_guard), the
 * kernels of kGuarded must match golden/<kernel>.guarded.wgsl (validated
 * like the others); a kernel without loops prints as it does without the
 * guard; the entry list marks exactly the entries that loop; the option is
 * refused for other targets.
 *
 * After an intended change of the printers, rewrite the goldens with
 *   RK_UPDATE_GOLDEN=1 ctest --test-dir <build> -R codegen_golden
 * and review the diff (git diff tests/codegen/golden).
 */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sys.h"
#include "cg_test_util.h"
#include "rk_test.h"

static const rk_target_t kGoldenTargets[] = {RK_TARGET_C, RK_TARGET_CUDA,
                                             RK_TARGET_OPENCL, RK_TARGET_MSL,
                                             RK_TARGET_WGSL};

static bool g_update;
static int g_mismatches;

/* Prints the first line where want and got differ. */
static void show_difference(const char *path, const char *want,
                            const char *got) {
  int line = 1;
  const char *w = want, *g = got;
  while (*w && *w == *g) {
    if (*w == '\n') line++;
    w++;
    g++;
  }
  const char *ws = w, *gs = g;
  while (ws > want && ws[-1] != '\n') ws--;
  while (gs > got && gs[-1] != '\n') gs--;
  printf("  %s differs at line %d:\n    expected: %.*s\n    actual:   %.*s\n",
         path, line, (int)strcspn(ws, "\n"), ws, (int)strcspn(gs, "\n"), gs);
}

/* Compares text with the golden file at path (or rewrites it). The file
 * that should not exist (the .err twin) is removed on update and reported
 * otherwise. */
static void check_golden(const char *path, const char *stale,
                         const char *text) {
  if (g_update) {
    CHECK(cg_write_file(path, text), "cannot write %s", path);
    unlink(stale);
    return;
  }
  char *want = cg_read_file(path);
  if (!CHECK(want != NULL, "missing golden file %s", path)) {
    g_mismatches++;
    return;
  }
  if (strcmp(want, text) != 0) {
    g_mismatches++;
    CHECK(false, "output differs from %s", path);
    show_difference(path, want, text);
  }
  free(want);
  CHECK(access(stale, F_OK) != 0, "stale golden file %s (remove it)", stale);
}

static void test_goldens(const cg_corpus_t *corpus) {
  CHECK(corpus->count >= 15, "the corpus has %d kernels, want at least 15",
        corpus->count);
  for (int k = 0; k < corpus->count; ++k) {
    const char *name = corpus->names[k];
    char *src = cg_read_kernel(name);
    if (!CHECK(src != NULL, "cannot read kernel %s", name)) continue;
    for (size_t t = 0; t < sizeof kGoldenTargets / sizeof *kGoldenTargets;
         ++t) {
      rk_target_t target = kGoldenTargets[t];
      char path[1024], err_path[1100];
      snprintf(path, sizeof path, "%s/golden/%s.%s", CG_TEST_DIR, name,
               cg_target_ext(target));
      snprintf(err_path, sizeof err_path, "%s.err", path);
      char *out = NULL;
      rk_status_t s = cg_transpile(src, name, target, &out);
      if (s == RK_OK) {
        check_golden(path, err_path, out);
      } else {
        CHECK(s == RK_ERR_COMPILE, "%s for %s: %s: %s", name,
              rk_target_name(target), rk_status_name(s), rk_last_error());
        char msg[4096];
        snprintf(msg, sizeof msg, "%s\n", rk_last_error());
        check_golden(err_path, path, msg);
      }
      rk_transpile_free(out);
    }
    free(src);
  }
  if (g_mismatches)
    printf(
        "\n%d golden file(s) differ. If the change is intended, run\n"
        "  RK_UPDATE_GOLDEN=1 ctest --test-dir <build dir> -R "
        "codegen_golden\nand review `git diff tests/codegen/golden`.\n\n",
        g_mismatches);
  if (g_update) printf("golden files rewritten under %s/golden\n", CG_TEST_DIR);
}

/* ---- The WGSL loop guard ------------------------------------------------- */

/* Loops of every kind and their exits (loops, loop_exits), a compare-and-
 * swap (atomics_all), a staged stencil (heat2d), batch kernels of a
 * stateless and a stateful handler (actor_echo, actor_account). */
static const char *const kGuarded[] = {"loops",  "loop_exits", "atomics_all",
                                       "heat2d", "actor_echo", "actor_account"};

static char *guarded(const char *src, const char *name, rk_target_t target,
                     rk_status_t *out_status) {
  char source_name[128];
  snprintf(source_name, sizeof source_name, "%s.c", name);
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = source_name;
  o.wgsl_loop_guard = true;
  char *out = NULL;
  *out_status = rk_transpile(src, target, &o, &out);
  return out;
}

static void test_loop_guard(void) {
  for (size_t k = 0; k < sizeof kGuarded / sizeof *kGuarded; ++k) {
    char *src = cg_read_kernel(kGuarded[k]);
    if (!CHECK(src != NULL, "cannot read kernel %s", kGuarded[k])) continue;
    rk_status_t s;
    char *out = guarded(src, kGuarded[k], RK_TARGET_WGSL, &s);
    if (CHECK_OK(s)) {
      char path[1024], stale[1100];
      snprintf(path, sizeof path, "%s/golden/%s.guarded.wgsl", CG_TEST_DIR,
               kGuarded[k]);
      snprintf(stale, sizeof stale, "%s.err", path);
      check_golden(path, stale, out);
      CHECK(strstr(out, "rk_loops_begun = rk_loop_guard.zero0;") != NULL,
            "%s: no entry seeds the loop guard", kGuarded[k]);
    }
    rk_transpile_free(out);
    /* Entries that loop, listed as such. */
    rk_entry_list_t *list = NULL;
    if (CHECK_OK(rk_codegen_list_entries(src, NULL, &list, NULL))) {
      for (size_t i = 0; i < list->count; ++i) {
        const rk_entry_t *e = &list->entries[i];
        if (e->batch_of || strcmp(kGuarded[k], "atomics_all") == 0 ||
            strcmp(kGuarded[k], "loops") == 0)
          CHECK(e->loops, "%s: entry %s is not marked as looping", kGuarded[k],
                e->name);
      }
    }
    rk_entry_list_destroy(list);
    free(src);
  }
  /* No loop: the same text as without the guard, and not marked. */
  char *src = cg_read_kernel("saxpy");
  if (CHECK(src != NULL, "cannot read kernel saxpy")) {
    rk_status_t s;
    char *plain = NULL;
    char *out = guarded(src, "saxpy", RK_TARGET_WGSL, &s);
    if (CHECK_OK(s) &&
        CHECK_OK(cg_transpile(src, "saxpy", RK_TARGET_WGSL, &plain)))
      CHECK(strcmp(out, plain) == 0,
            "the loop guard changed a kernel without loops");
    rk_transpile_free(out);
    rk_transpile_free(plain);
    rk_entry_list_t *list = NULL;
    if (CHECK_OK(rk_codegen_list_entries(src, NULL, &list, NULL)))
      for (size_t i = 0; i < list->count; ++i)
        CHECK(!list->entries[i].loops, "saxpy's %s is marked as looping",
              list->entries[i].name);
    rk_entry_list_destroy(list);
    /* Other targets refuse the option, naming it. */
    out = guarded(src, "saxpy", RK_TARGET_OPENCL, &s);
    CHECK(s == RK_ERR_INVALID_ARGUMENT && out == NULL,
          "wgsl_loop_guard for opencl: %s", rk_status_name(s));
    CHECK_ERROR_HAS("wgsl_loop_guard");
    free(src);
  }
}

/* ---- C compiler checks --------------------------------------------------- */

static const char *compiler(void) {
  const char *cc = getenv("CC");
  return cc && *cc && !strchr(cc, ' ') ? cc : "cc";
}

/* Runs the C compiler on `path` (syntax only, warnings are errors). Extra
 * arguments (e.g. -include x.h) come first. Returns false with the log
 * printed on failure; *out_ran false when no compiler could be started. */
static bool compile_c(const char *path, const char *extra1, const char *extra2,
                      bool *out_ran) {
  char *argv[] = {(char *)compiler(),
                  "-fsyntax-only",
                  "-std=c11",
                  "-Wall",
                  "-Wextra",
                  "-Werror",
                  "-Wno-unused-function",
                  "-Wno-unused-parameter",
                  "-I" RK_SOURCE_INCLUDE_DIR,
                  "-DRK_CPU_MODULE=1",
                  (char *)(extra1 ? extra1 : "-DRK_NOTHING_="),
                  (char *)(extra2 ? extra2 : "-DRK_NOTHING2_="),
                  (char *)path,
                  NULL};
  char *log = NULL;
  int code = -1;
  rk_status_t s = rk__run_process(argv, &log, &code);
  *out_ran = s == RK_OK;
  bool ok = s == RK_OK && code == 0;
  if (s == RK_OK && code != 0) printf("%s\n", log ? log : "");
  free(log);
  return ok;
}

static void test_c_compiles(const cg_corpus_t *corpus) {
  const char *dir = rk_test_temp_dir();
  bool ran = false;
  for (int k = 0; k < corpus->count; ++k) {
    const char *name = corpus->names[k];
    char *src = cg_read_kernel(name);
    if (!src) continue;
    char *out = NULL;
    if (CHECK_OK(cg_transpile(src, name, RK_TARGET_C, &out))) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s.c", dir, name);
      CHECK(cg_write_file(path, out), "cannot write %s", path);
      bool ok = compile_c(path, NULL, NULL, &ran);
      if (!ran) {
        printf("note: no C compiler (%s); C output not compiled\n", compiler());
        free(out);
        free(src);
        return;
      }
      CHECK(ok, "the C output of %s does not compile", name);
    }
    free(out);
    /* The source itself is valid C with rk/kernel.h. */
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels/%s.c", CG_TEST_DIR, name);
    CHECK(compile_c(path, NULL, NULL, &ran),
          "kernel source %s is not valid C with rk/kernel.h", name);
    free(src);
  }
}

int main(void) {
  const char *update = getenv("RK_UPDATE_GOLDEN");
  g_update = update && *update && strcmp(update, "0") != 0;
  cg_corpus_t corpus;
  if (cg_corpus_load(&corpus)) {
    test_goldens(&corpus);
    test_loop_guard();
    test_c_compiles(&corpus);
  }
  return rk_test_finish("codegen_golden");
}
