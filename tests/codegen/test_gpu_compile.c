/* GPU compiles of the transpiler's output: every corpus kernel
 * (tests/codegen/kernels/NAME.c) transpiled to CUDA must compile with NVRTC
 * and define each of its entry points (as rk_codegen_list_entries() lists
 * them) under that name in the PTX; transpiled to OpenCL C it must build
 * with the installed platform (PoCL here) and yield a kernel object for
 * each entry point. codegen_golden pins the text; this test checks that the
 * text is a program the vendor compilers accept.
 *
 * A target may refuse a kernel (Metal has no double): that is accepted only
 * when rk_transpile() says RK_ERR_COMPILE *and* the goldens record it
 * (golden/NAME.<ext>.err exists); any other refusal is a failure.
 *
 * Each half runs where its compiler is (see tests/gpucompile/gpucompile.h);
 * a missing one is reported as SKIPPED with the reason, never as passed.
 * The test exits 77 only when neither half could run. MSL output is
 * transpiled (so refusals are still checked) but not compiled: there is no
 * Metal compiler on these machines, and the test says so.
 */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg_test_util.h"
#include "gpucompile/gpucompile.h"
#include "rk_test.h"

enum { kLogCap = 32 * 1024 };

/* One compiled target: what ran and what it found. */
typedef struct half {
  rk_target_t target;
  const char *label;    /* "CUDA", "OpenCL", "MSL" */
  const char *compiler; /* "NVRTC", "OpenCL", NULL: none */
  bool available;
  char what[1024]; /* compiler description, or why it is unavailable */
  int compiled, entries, refused, failed;
} half_t;

/* Compiles `text` for h's target, requiring the `n` entry points. */
static int compile_text(const half_t *h, const char *name, const char *text,
                        const char *const *entries, size_t n, char *log) {
  char file[128];
  snprintf(file, sizeof file, "%s.%s", name, cg_target_ext(h->target));
  if (h->target == RK_TARGET_CUDA)
    return rk_gpucompile_cuda_kernels(text, file, entries, n, log, kLogCap);
  return rk_gpucompile_opencl_kernels(text, entries, n, log, kLogCap);
}

/* Transpiles kernel `name` for h's target and, where h has a compiler,
 * compiles the result. */
static void check_kernel(half_t *h, const char *name, const char *src,
                         const char *const *entries, size_t n, char *log) {
  char *text = NULL;
  rk_status_t s = cg_transpile(src, name, h->target, &text);
  if (s != RK_OK) {
    char err_path[1024];
    snprintf(err_path, sizeof err_path, "%s/golden/%s.%s.err", CG_TEST_DIR,
             name, cg_target_ext(h->target));
    bool recorded = access(err_path, F_OK) == 0;
    if (CHECK(s == RK_ERR_COMPILE && recorded,
              "%s refused for %s (%s) without a golden %s:\n%s", name,
              rk_target_name(h->target), rk_status_name(s), err_path,
              rk_last_error())) {
      printf("  %-14s %-6s refused, as golden/%s.%s.err records\n", name,
             h->label, name, cg_target_ext(h->target));
      h->refused++;
    } else {
      h->failed++;
    }
    return;
  }
  if (!h->compiler || !h->available) {
    rk_transpile_free(text);
    return;
  }
  int rc = compile_text(h, name, text, entries, n, log);
  if (CHECK(
          rc == RK_GPUCOMPILE_OK,
          "%s's %s output: %s %s (rc %d); log:\n%s\n--- the source:\n%s", name,
          h->label, h->compiler,
          rc == RK_GPUCOMPILE_UNAVAILABLE ? "became unavailable" : "refused it",
          rc, log, text)) {
    h->compiled++;
    h->entries += (int)n;
  } else {
    h->failed++;
  }
  rk_transpile_free(text);
}

/* Lists kernel `name`'s entry points and runs it through every half. */
static void check_corpus_kernel(half_t *halves, size_t nhalves,
                                const char *name, char *log) {
  char *src = cg_read_kernel(name);
  if (!CHECK(src != NULL, "cannot read kernel %s", name)) return;
  char source_name[128];
  snprintf(source_name, sizeof source_name, "%s.c", name);
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = source_name;
  rk_entry_list_t *list = NULL;
  if (CHECK_OK(rk_codegen_list_entries(src, &o, &list, NULL)) &&
      CHECK(list->count > 0, "%s has no entry points", name)) {
    const char *entries[64];
    size_t n = 0;
    for (size_t i = 0; i < list->count && n < 64; ++i)
      entries[n++] = list->entries[i].name;
    for (size_t h = 0; h < nhalves; ++h)
      check_kernel(&halves[h], name, src, entries, n, log);
  }
  rk_entry_list_destroy(list);
  free(src);
}

static void print_half(const half_t *h, int kernels) {
  if (!h->compiler) {
    printf(
        "%-7s SKIPPED (not compiled): no Metal compiler on this machine; "
        "%d of %d kernels transpiled, %d refused as recorded\n",
        h->label, kernels - h->refused - h->failed, kernels, h->refused);
  } else if (!h->available) {
    printf("%-7s SKIPPED: %s\n", h->label, h->what);
  } else {
    printf(
        "%-7s RAN: %d of %d kernels compiled with %s, %d entry points "
        "found; %d refused as recorded; %d failed\n",
        h->label, h->compiled, kernels, h->what, h->entries, h->refused,
        h->failed);
  }
}

int main(void) {
  half_t halves[] = {
      {.target = RK_TARGET_CUDA, .label = "CUDA", .compiler = "NVRTC"},
      {.target = RK_TARGET_OPENCL, .label = "OpenCL", .compiler = "OpenCL"},
      {.target = RK_TARGET_MSL, .label = "MSL", .compiler = NULL},
  };
  enum { kHalves = sizeof halves / sizeof halves[0] };
  halves[0].available =
      rk_gpucompile_cuda_describe(halves[0].what, sizeof halves[0].what) ==
      RK_GPUCOMPILE_OK;
  halves[1].available =
      rk_gpucompile_opencl_describe(halves[1].what, sizeof halves[1].what) ==
      RK_GPUCOMPILE_OK;
  if (!halves[0].available && !halves[1].available)
    RK_TEST_SKIP("neither GPU compiler is here\n  CUDA: %s\n  OpenCL: %s",
                 halves[0].what, halves[1].what);
  for (int h = 0; h < 2; ++h)
    printf("%-7s %s: %s\n", halves[h].label,
           halves[h].available ? "using" : "UNAVAILABLE, half skipped",
           halves[h].what);
  fflush(stdout);

  cg_corpus_t corpus;
  char *log = malloc(kLogCap);
  if (CHECK(log != NULL, "out of memory") && cg_corpus_load(&corpus)) {
    CHECK(corpus.count >= 15, "the corpus has %d kernels, want at least 15",
          corpus.count);
    for (int k = 0; k < corpus.count; ++k)
      check_corpus_kernel(halves, kHalves, corpus.names[k], log);
    printf("\n");
    for (int h = 0; h < kHalves; ++h) print_half(&halves[h], corpus.count);
  }
  free(log);
  if (!halves[0].available || !halves[1].available)
    printf("note: only the %s half ran; see SKIPPED above\n",
           halves[0].available ? "CUDA" : "OpenCL");
  return rk_test_finish("codegen_gpu_compile");
}
