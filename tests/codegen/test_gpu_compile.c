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
 * Every corpus kernel with actor handlers is also transpiled to CUDA with
 * persistent_actors and must compile with NVRTC defining rk_actor_<h> for
 * each handler h besides its usual entry points; the corpus must hold
 * handlers of every shape (void and int, with and without state). The ops
 * library's GPU kernels (src/ops/ops_gpu.c), source the library itself
 * hands to the transpiler, go through every half like a corpus kernel.
 *
 * Each half runs where its compiler is (see tests/gpucompile/gpucompile.h);
 * a missing one is reported as SKIPPED with the reason, never as passed.
 * The test exits 77 only when neither half could run. MSL output is
 * transpiled (so refusals are still checked) but not compiled: there is no
 * Metal compiler on these machines, and the test says so
 * (codegen_msl_validate parses it with clang and a stand-in
 * <metal_stdlib>).
 */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg_test_util.h"
#include "gpucompile/gpucompile.h"
#include "ops/ops_gpu_source.h"
#include "rk_test.h"

enum { kLogCap = 32 * 1024, kMaxEntries = 64 };

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

/* Persistent actor kernels: what ran and the handler shapes seen. */
typedef struct actors {
  int kernels;  /* corpus kernels with handlers */
  int compiled; /* of them, compiled with NVRTC */
  int entries;  /* rk_actor_<h> entry points found */
  int failed;
  bool shape[2][2]; /* [returns int][has state] */
} actors_t;

/* The handler's shape from its listing: an int handler's last parameter
 * is rk_status, and the state follows the two messages. */
static void note_shape(actors_t *a, const rk_entry_t *e) {
  size_t messages = e->param_count - (e->handler_status ? 1 : 0);
  a->shape[e->handler_status][messages > 2] = true;
}

/* Kernel `name` (its entry points in `list`) transpiled to CUDA with
 * persistent_actors must compile and define every entry point plus
 * rk_actor_<h> for each handler h. Notes the handlers' shapes either way. */
static void check_persistent(const half_t *cuda, actors_t *a, const char *name,
                             const char *src, const rk_entry_list_t *list,
                             char *log) {
  const char *entries[2 * kMaxEntries];
  char actor_names[kMaxEntries][160];
  size_t n = 0, nactors = 0;
  for (size_t i = 0; i < list->count && i < kMaxEntries; ++i) {
    const rk_entry_t *e = &list->entries[i];
    entries[n++] = e->name;
    if (e->kind != RK_ENTRY_HANDLER) continue;
    note_shape(a, e);
    /* A handler with output ports (rk_send) has no resident CUDA kernel
     * yet: its own and batch kernels are compiled above. */
    bool ports = false;
    for (size_t k = 0; k < e->param_count; ++k)
      ports |= strcmp(e->params[k].name, "rk_ports") == 0;
    if (ports) continue;
    snprintf(actor_names[nactors], sizeof actor_names[nactors], "rk_actor_%s",
             e->name);
    entries[n++] = actor_names[nactors++];
  }
  if (nactors == 0) return;
  a->kernels++;
  char source_name[128];
  snprintf(source_name, sizeof source_name, "%s.c", name);
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = source_name;
  o.persistent_actors = true;
  char *text = NULL;
  if (!CHECK_OK(rk_transpile(src, RK_TARGET_CUDA, &o, &text))) {
    a->failed++;
    return;
  }
  if (cuda->available) {
    char file[160];
    snprintf(file, sizeof file, "%s.persistent.cu", name);
    int rc = rk_gpucompile_cuda_kernels(text, file, entries, n, log, kLogCap);
    if (CHECK(rc == RK_GPUCOMPILE_OK,
              "%s with persistent actors: NVRTC refused it (rc %d); log:\n%s"
              "\n--- the source:\n%s",
              name, rc, log, text)) {
      printf("  %-14s CUDA   persistent: %zu rk_actor_ kernel(s) compiled\n",
             name, nactors);
      a->compiled++;
      a->entries += (int)nactors;
    } else {
      a->failed++;
    }
  }
  rk_transpile_free(text);
}

/* Lists kernel `name`'s entry points and runs it through every half, then
 * through NVRTC again with its persistent actor kernels. */
static void check_corpus_kernel(half_t *halves, size_t nhalves, actors_t *a,
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
    const char *entries[kMaxEntries];
    size_t n = 0;
    for (size_t i = 0; i < list->count && n < kMaxEntries; ++i)
      entries[n++] = list->entries[i].name;
    for (size_t h = 0; h < nhalves; ++h)
      check_kernel(&halves[h], name, src, entries, n, log);
    check_persistent(&halves[0], a, name, src, list, log);
  }
  rk_entry_list_destroy(list);
  free(src);
}

/* The ops library's GPU kernels, as the library hands them to
 * rk_context_compile(): every target must take them (no refusal is
 * recorded for them), and each compiler that is here must build them. */
static void check_ops_kernels(half_t *halves, size_t nhalves, char *log) {
  const char *src = rk__ops_gpu_source();
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = "rk_ops_kernels.c";
  rk_entry_list_t *list = NULL;
  if (!CHECK_OK(rk_codegen_list_entries(src, &o, &list, NULL))) return;
  CHECK(list->count >= 15, "the ops kernels have %zu entry points, want 15",
        list->count);
  const char *entries[kMaxEntries];
  size_t n = 0;
  for (size_t i = 0; i < list->count && n < kMaxEntries; ++i)
    entries[n++] = list->entries[i].name;
  for (size_t h = 0; h < nhalves; ++h) {
    const half_t *half = &halves[h];
    char *text = NULL;
    if (!CHECK_OK(rk_transpile(src, half->target, &o, &text))) continue;
    if (half->compiler && half->available) {
      int rc = compile_text(half, "rk_ops_kernels", text, entries, n, log);
      if (CHECK(rc == RK_GPUCOMPILE_OK,
                "the ops kernels' %s output: %s refused it (rc %d); log:\n%s"
                "\n--- the source:\n%s",
                half->label, half->compiler, rc, log, text))
        printf("  %-14s %-6s %zu entry points compiled\n", "ops kernels",
               half->label, n);
    } else {
      printf("  %-14s %-6s transpiled, not compiled (no compiler)\n",
             "ops kernels", half->label);
    }
    rk_transpile_free(text);
  }
  rk_entry_list_destroy(list);
}

static void print_half(const half_t *h, int kernels) {
  if (!h->compiler) {
    printf(
        "%-7s SKIPPED (not compiled): no Metal compiler on this machine "
        "(codegen_msl_validate parses it with clang); %d of %d kernels "
        "transpiled, %d refused as recorded\n",
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
  actors_t actors;
  memset(&actors, 0, sizeof actors);
  char *log = malloc(kLogCap);
  if (CHECK(log != NULL, "out of memory") && cg_corpus_load(&corpus)) {
    CHECK(corpus.count >= 15, "the corpus has %d kernels, want at least 15",
          corpus.count);
    for (int k = 0; k < corpus.count; ++k)
      check_corpus_kernel(halves, kHalves, &actors, corpus.names[k], log);
    check_ops_kernels(halves, kHalves, log);
    static const char *const kShapes[2][2] = {
        {"void without state", "void with state"},
        {"int without state", "int with state"}};
    for (int r = 0; r < 2; ++r)
      for (int st = 0; st < 2; ++st)
        CHECK(actors.shape[r][st], "no corpus handler is %s", kShapes[r][st]);
    printf("\n");
    for (int h = 0; h < kHalves; ++h) print_half(&halves[h], corpus.count);
    if (halves[0].available)
      printf(
          "CUDA    persistent actors: %d of %d kernels with handlers compiled, "
          "%d rk_actor_ entry points found; %d failed\n",
          actors.compiled, actors.kernels, actors.entries, actors.failed);
    else
      printf("CUDA    persistent actors SKIPPED: %s\n", halves[0].what);
  }
  free(log);
  if (!halves[0].available || !halves[1].available)
    printf("note: only the %s half ran; see SKIPPED above\n",
           halves[0].available ? "CUDA" : "OpenCL");
  return rk_test_finish("codegen_gpu_compile");
}
