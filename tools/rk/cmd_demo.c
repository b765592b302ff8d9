/* cmd_demo.c - `rk demo [--backend NAME] [--json] [--quick]`: an actor in
 * persistent and traditional mode side by side (demo_actors.c); and
 * `rk demo saxpy [--backend NAME] [--n N]`: compiles a saxpy kernel, runs it
 * on N elements and checks every element on the host.
 *
 * The saxpy demo
 * It walks the whole public API once, in the order a program would:
 * backend -> context -> compile -> function -> allocate -> copy -> launch ->
 * synchronize -> copy back, then releases everything in reverse order. Every
 * rk call is checked; a failure is reported as
 *   rk demo: <what>: <status name>: <rk_last_error()>
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "tool.h"

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

enum {
  kBlockSize = 256,
  kDefaultN = 1 << 20,
  kMaxMismatchesShown = 10,
};
static const float kA = 2.5f;
/* The kernel compiler may fuse a*x+y into one rounding (FMA) where the host
 * rounds twice; results may then differ in the last bit. */
static const float kRelTolerance = 1e-6f;

/* Reports a failed rk call and returns false, for `if (!check(...)) goto`. */
static bool check(rk_status_t s, const char *what) {
  if (s == RK_OK) return true;
  fprintf(stderr, "rk demo: %s: %s: %s\n", what, rk_status_name(s),
          rk_last_error());
  return false;
}

/* Parses N: a decimal integer from 1 to INT_MAX (the kernel's n is an int). */
static bool parse_n(const char *text, int *out_n) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < 1 || v > INT_MAX)
    return false;
  *out_n = (int)v;
  return true;
}

/* The inputs: positive, so a*x+y never cancels and a relative tolerance is
 * meaningful. */
static void fill_inputs(float *x, float *y, int n) {
  for (int i = 0; i < n; ++i) {
    x[i] = 1.0f + (float)(i % 1000) * 0.001f;
    y[i] = 0.5f + (float)(i % 777) * 0.25f;
  }
}

/* Compares y (device result) with a*x+y0 computed here; prints the first
 * mismatches. Returns how many elements differ. */
static long count_mismatches(const float *x, const float *y0, const float *y,
                             int n) {
  long bad = 0;
  for (int i = 0; i < n; ++i) {
    float want = kA * x[i] + y0[i];
    float diff = y[i] > want ? y[i] - want : want - y[i];
    if (diff <= kRelTolerance * want) continue; /* false for NaN, too */
    if (bad == 0)
      printf("mismatches (the first %d at most):\n", kMaxMismatchesShown);
    if (bad < kMaxMismatchesShown)
      printf("  y[%d] = %.9g, expected %.9g\n", i, (double)y[i], (double)want);
    ++bad;
  }
  return bad;
}

/* Runs the demo on an open backend. Returns a TOOL_EXIT_* code. */
static int run_on(rk_backend_t *be, int n) {
  int result = TOOL_EXIT_FAILURE;
  size_t bytes = (size_t)n * sizeof(float);
  rk_context_t *ctx = NULL;
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_devptr_t dx = 0, dy = 0;
  float *x = malloc(bytes), *y0 = malloc(bytes), *y = malloc(bytes);
  if (!x || !y0 || !y) {
    fprintf(stderr, "rk demo: out of host memory for %d elements\n", n);
    goto out_host;
  }
  fill_inputs(x, y0, n);

  rk_device_info_t info;
  if (!check(rk_backend_device_info(be, 0, &info), "reading device 0"))
    goto out_host;
  printf("%-14s%s\n", "backend", rk_backend_name(be));
  printf("%-14s%s\n", "device", info.name);
  printf("%-14s%d (y = a*x + y, a = %g)\n", "elements", n, (double)kA);
  fflush(stdout); /* show what runs before a possibly slow compile */

  if (!check(rk_backend_create_context(be, 0, &ctx), "creating a context"))
    goto out_host;

  rk_compile_options_t options;
  rk_compile_options_init(&options);
  options.source_name = "saxpy.c";
  double t0 = tool_now_seconds();
  if (!check(rk_context_compile(ctx, kSource, &options, &mod),
             "compiling saxpy"))
    goto out_context;
  double compile_s = tool_now_seconds() - t0;
  if (!check(rk_module_get_function(mod, "saxpy", &fn), "finding kernel saxpy"))
    goto out_module;

  if (!check(rk_context_allocate(ctx, bytes, &dx), "allocating x"))
    goto out_module;
  if (!check(rk_context_allocate(ctx, bytes, &dy), "allocating y")) goto out_x;
  if (!check(rk_context_copy_to_device(ctx, dx, x, bytes), "copying x") ||
      !check(rk_context_copy_to_device(ctx, dy, y0, bytes), "copying y"))
    goto out_y;

  /* In 32 unsigned bits: n + 255 overflows an int when n is near INT_MAX. */
  uint32_t blocks = ((uint32_t)n + (kBlockSize - 1)) / kBlockSize;
  rk_arg_t args[] = {rk_arg_i32(n), rk_arg_f32(kA), rk_arg_ptr(dx),
                     rk_arg_ptr(dy)};
  t0 = tool_now_seconds();
  if (!check(rk_function_launch(fn, rk_dim3(blocks, 1, 1),
                                rk_dim3(kBlockSize, 1, 1), 0, NULL, args,
                                sizeof args / sizeof args[0]),
             "launching saxpy") ||
      !check(rk_context_synchronize(ctx), "running saxpy"))
    goto out_y;
  double run_s = tool_now_seconds() - t0;
  if (!check(rk_context_copy_to_host(ctx, y, dy, bytes), "copying y back"))
    goto out_y;

  printf("%-14s%s\n", "kernel cache",
         rk_module_cache_hit(mod) ? "hit (loaded the compiled kernel)"
                                  : "miss (compiled it now)");
  printf("%-14s%.1f ms\n", "compile", compile_s * 1e3);
  printf("%-14s%.3f ms (%u block%s of %d threads)\n", "launch+sync",
         run_s * 1e3, (unsigned)blocks, blocks == 1 ? "" : "s", kBlockSize);
  printf("\n");
  long bad = count_mismatches(x, y0, y, n);
  if (bad == 0) {
    printf("result: OK (%d %s)\n", n,
           n == 1 ? "element matches" : "elements match");
    result = TOOL_EXIT_OK;
  } else {
    printf("result: FAILED (%ld of %d elements differ)\n", bad, n);
  }

  /* Release in reverse order of creation; a failure here fails the demo. */
out_y:
  if (!check(rk_context_free(ctx, dy), "freeing y")) result = TOOL_EXIT_FAILURE;
out_x:
  if (!check(rk_context_free(ctx, dx), "freeing x")) result = TOOL_EXIT_FAILURE;
out_module:
  if (!check(rk_module_destroy(mod), "releasing the module"))
    result = TOOL_EXIT_FAILURE;
out_context:
  if (!check(rk_context_destroy(ctx), "releasing the context"))
    result = TOOL_EXIT_FAILURE;
out_host:
  free(y);
  free(y0);
  free(x);
  return result;
}

/* Opens the backend named by --backend (or the automatic choice). */
static bool open_backend(const char *backend_name, rk_backend_t **out,
                         int *out_exit) {
  rk_backend_kind_t kind = RK_BACKEND_AUTO;
  if (backend_name && rk_backend_kind_from_name(backend_name, &kind) != RK_OK) {
    *out_exit = tool_usage_error("demo", "--backend: %s", rk_last_error());
    return false;
  }
  const char *what =
      kind == RK_BACKEND_AUTO ? "opening a backend" : "opening the backend";
  if (!check(rk_backend_open(kind, out), what)) {
    *out_exit = TOOL_EXIT_FAILURE;
    return false;
  }
  return true;
}

static int run(int argc, char **argv) {
  const char *backend_name = NULL;
  int n = kDefaultN;
  bool saxpy = argc > 1 && strcmp(argv[1], "saxpy") == 0;
  bool halo = argc > 1 && strcmp(argv[1], "halo") == 0;
  bool json = false, quick = false, n_given = false, split = false;
  const char *member_of = NULL;
  for (int i = saxpy || halo ? 2 : 1; i < argc; ++i) {
    const char *value;
    if (tool_is_help(argv[i])) {
      tool_cmd_demo.help(stdout);
      return TOOL_EXIT_OK;
    }
    if (tool_match_option(argc, argv, &i, "--backend", &value)) {
      if (!value || !*value)
        return tool_usage_error("demo", "--backend needs a backend name");
      backend_name = value;
    } else if (tool_match_option(argc, argv, &i, "--n", &value)) {
      if (!value)
        return tool_usage_error("demo", "--n needs a number of elements");
      if (!parse_n(value, &n))
        return tool_usage_error("demo",
                                "--n '%s' is not a number of elements from 1 "
                                "to %d",
                                value, INT_MAX);
      n_given = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (strcmp(argv[i], "--split") == 0) {
      split = true;
    } else if (tool_match_option(argc, argv, &i, "--split-member", &value)) {
      /* Internal: the second process of --split, joining `value`. */
      if (!value || !*value)
        return tool_usage_error("demo", "--split-member needs an address");
      member_of = value;
    } else if (argv[i][0] == '-') {
      return tool_usage_error("demo", "unknown option '%s'", argv[i]);
    } else {
      return tool_usage_error("demo", "unexpected argument '%s'", argv[i]);
    }
  }
  if (saxpy && (json || quick))
    return tool_usage_error("demo",
                            "--json and --quick are for the actor "
                            "demo, not saxpy");
  if ((split || member_of) && !halo)
    return tool_usage_error("demo", "--split is for 'rk demo halo'");
  if (!saxpy && n_given)
    return tool_usage_error("demo", "--n is for 'rk demo saxpy'");

  rk_backend_t *be = NULL;
  int result = TOOL_EXIT_FAILURE;
  if (!open_backend(backend_name, &be, &result)) return result;
  result = saxpy  ? run_on(be, n)
           : halo ? tool_demo_halo(be, json, quick, split, member_of)
                  : tool_demo_actors(be, json, quick);
  if (!check(rk_backend_destroy(be), "releasing the backend"))
    result = TOOL_EXIT_FAILURE;
  return result;
}

static void help(FILE *out) {
  fprintf(
      out,
      "Usage: rk demo [--backend NAME] [--json] [--quick]\n"
      "       rk demo halo [--backend NAME] [--json] [--quick] [--split]\n"
      "       rk demo saxpy [--backend NAME] [--n N]\n"
      "\n"
      "rk demo launches one actor (a simulated body driven by commands:\n"
      "set a force, step, query) in traditional mode (one kernel launch\n"
      "per command) and in persistent mode (the handler stays resident\n"
      "and polls a ring), measures both the same way and prints them\n"
      "side by side:\n"
      "  inject a command         rk_actor_send returning\n"
      "  single compute step      rk_actor_call: sent, handled, answer\n"
      "                           seen by the host\n"
      "  mixed workload, 300 ops  two commands sent per query called,\n"
      "                           until every answer is in\n"
      "  round trip p50/p99       over the single steps\n"
      "  messages per second      pipelined, 256 in flight\n"
      "then a guide to which mode suits which work. Both actors must end\n"
      "in the state the host computes for the same commands.\n"
      "  --json   one JSON object instead of the table\n"
      "  --quick  fewer samples (a smoke run)\n"
      "\n"
      "rk demo halo runs a 2D heat simulation split into a grid of tile\n"
      "actors (3 x 3 tiles of 32 x 32 cells, 5 timed rounds of 40 steps;\n"
      "--quick: 2 x 2, 3 of 10). Each step every tile sends its edges to\n"
      "its neighbours\n"
      "through K2K channels (rk_send) and computes once their halos are\n"
      "in; the host only sends \"advance N steps\" and reads the tiles\n"
      "back. The result must match the same simulation run as one\n"
      "stencil kernel launched per step on the same backend, within an\n"
      "absolute 1e-3 (temperatures 0 to 100); it prints steps per second\n"
      "for both, the median over rounds with the lowest and highest\n"
      "(--json: matches_reference, max_abs_diff, ...).\n"
      "--split runs the right half of the tiles in a second process joined\n"
      "to this one as a cluster (UCX); the ports across the cut are wired\n"
      "to proxies of the other side's tiles (rk_cluster_lookup_actor), and\n"
      "the result must still match.\n"
      "\n"
      "rk demo saxpy compiles the saxpy kernel below (y = a*x + y), runs\n"
      "it on N\n"
      "elements and checks every element against the same computation\n"
      "done here on the host. It is the quickest check that a backend\n"
      "and its kernel compiler work.\n"
      "\n"
      "Options:\n"
      "  --backend NAME  cpu, cuda, metal, webgpu, opencl or auto; wins\n"
      "                  over RK_BACKEND. Default: automatic selection\n"
      "                  (RK_BACKEND if set; see 'rk help devices').\n"
      "  --n N           number of elements, 1 to %d;\n"
      "                  default: %d\n"
      "  -h, --help      show this help\n"
      "\n"
      "The kernel, in the rk kernel language:\n"
      "\n",
      INT_MAX, kDefaultN);
  for (const char *line = kSource; *line;) {
    size_t len = strcspn(line, "\n");
    fprintf(out, len ? "    %.*s\n" : "%.*s\n", (int)len, line);
    line += len + (line[len] == '\n');
  }
  fputs(
      "\n"
      "Example:\n"
      "  $ rk demo saxpy --n 1000\n"
      "  backend       cpu\n"
      "  device        AMD EPYC 7B13\n"
      "  elements      1000 (y = a*x + y, a = 2.5)\n"
      "  kernel cache  hit (loaded the compiled kernel)\n"
      "  compile       1.5 ms\n"
      "  launch+sync   0.051 ms (4 blocks of 256 threads)\n"
      "\n"
      "  result: OK (1000 elements match)\n"
      "\n"
      "Output:\n"
      "  kernel cache  'hit': the compiled kernel came from the kernel cache\n"
      "                (RK_CACHE_DIR); 'miss': it was compiled now and is\n"
      "                cached for the next run\n"
      "  compile       time of rk_context_compile (on a miss it includes\n"
      "                the C compiler, for cpu)\n"
      "  launch+sync   one launch of ceil(N/256) blocks of 256 threads and\n"
      "                rk_context_synchronize\n"
      "  result        OK when every element is within a relative 1e-6 of\n"
      "                the host's a*x+y (the kernel may use a fused\n"
      "                multiply-add); otherwise FAILED, with the first\n"
      "                mismatches\n"
      "\n"
      "Exit status: 0 OK; 1 when an rk call fails (the message says which\n"
      "and why) or elements differ; 2 on a usage error.\n",
      out);
}

const tool_command_t tool_cmd_demo = {
    "demo",
    "an actor in persistent and traditional mode, side by side (or halo, "
    "saxpy)",
    run, help};
