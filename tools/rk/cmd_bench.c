/* cmd_bench.c - `rk bench`: what a small command costs on each backend of
 * this machine, side by side in one run.
 *
 * Four measurements per backend, each through the public API: a kernel
 * launch and rk_context_synchronize on one element; rk_actor_call of a
 * persistent actor (resident where the backend keeps a handler resident,
 * else by relaunch); the same handler in traditional mode (a launch per
 * request); and a persistent actor's pipelined messages per second (64 in
 * flight, rk_actor_send / rk_actor_receive). Every answer is checked (the
 * kernel's element, each response's sequence number), so a wrong result
 * fails the benchmark instead of timing it. Rounds rotate the order of the
 * backends; each figure is the median over rounds of a round's median,
 * with the 10th and 90th percentiles over rounds beside it.
 *
 * The full benchmark programs (bench/, `make bench`) measure more, against
 * the raw APIs and other libraries; this command answers "which backend
 * should small commands go to here", from an installed rk.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rk/rk.h"
#include "tool.h"

static const char kKernel[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "RK_KERNEL void bump(int n, int *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] = x[i] + 1;\n"
    "}\n";

static const char kActor[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "typedef struct { uint32_t seq; uint32_t pad; } ping_t;\n"
    "\n"
    "RK_HANDLER int echo(const ping_t *in, ping_t *out) {\n"
    "  out->seq = in->seq + 1u;\n"
    "  out->pad = 0u;\n"
    "  return 0;\n"
    "}\n";

typedef struct {
  uint32_t seq, pad;
} ping_t;

enum {
  kMaxRounds = 101,
  kWindow = 64, /* pipelined requests in flight */
  kKinds = 5,
};

/* A round's sizes. */
typedef struct {
  int launches, calls, trad_calls, stream;
} sizes_t;

/* One figure: a value per round. */
typedef struct {
  double v[kMaxRounds];
  int n;
} figure_t;

typedef struct {
  rk_backend_kind_t kind;
  rk_backend_t *be;
  rk_context_t *ctx;
  rk_module_t *mod;
  rk_function_t *fn;
  rk_devptr_t x;
  int x_value; /* what the kernel's element holds now */
  rk_actor_t *pers, *trad;
  uint32_t seq;
  char device[128];
  char why[512]; /* not available, or what failed */
  bool failed;   /* available, but a measurement failed */
  rk_actor_execution_t execution;
  figure_t launch_us, call_us, trad_us, stream_mps;
} bench_backend_t;

/* The machine's CPU time so far (/proc/stat: every CPU, busy), and this
 * process's: what other processes took during the rounds is the
 * difference, as the bench/ programs report it. */
typedef struct {
  bool ok;
  double busy_s, self_s, wall_s;
} cpu_use_t;

static cpu_use_t cpu_use(void) {
  cpu_use_t c = {false, 0, 0, tool_now_seconds()};
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
    c.self_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return c;
  unsigned long long v[7] = {0};
  const int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
  fclose(f);
  const long hz = sysconf(_SC_CLK_TCK);
  if (n < 7 || hz <= 0) return c;
  c.busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)hz;
  c.ok = true;
  return c;
}

/* Percent of the machine's CPUs that other processes used between a and
 * b; negative when unknown: no /proc/stat, or a span too short for its
 * clock ticks (USER_HZ, 100 a second: under 0.5 s the count is mostly
 * rounding). */
static double others_pct(const cpu_use_t *a, const cpu_use_t *b) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const double wall = b->wall_s - a->wall_s;
  if (!a->ok || !b->ok || cpus <= 0 || wall < 0.5) return -1;
  double others = (b->busy_s - a->busy_s) - (b->self_s - a->self_s);
  if (others < 0) others = 0;
  const double pct = 100 * others / (wall * (double)cpus);
  return pct > 100 ? 100 : pct;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* p10, p50 and p90 over the rounds (nearest rank). */
static void spread_of(const figure_t *f, double out[3]) {
  double v[kMaxRounds];
  memcpy(v, f->v, (size_t)f->n * sizeof v[0]);
  qsort(v, (size_t)f->n, sizeof v[0], cmp_double);
  const int n = f->n;
  out[0] = v[(n - 1) / 10];
  out[1] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  out[2] = v[n - 1 - (n - 1) / 10];
}

/* `text` on one line: each run of white space (new lines included) one
 * space, for a table row. */
static void one_line(char *out, size_t cap, const char *text) {
  size_t n = 0;
  bool space = false;
  for (const char *p = text; *p && n + 1 < cap; ++p) {
    const bool ws = *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r';
    if (ws) {
      space = n > 0;
      continue;
    }
    if (space && n + 2 < cap) out[n++] = ' ';
    space = false;
    out[n++] = *p;
  }
  out[n] = '\0';
}

/* Records a failure of b: the first one's text stays. */
static bool failed(bench_backend_t *b, rk_status_t s, const char *what) {
  if (s == RK_OK) return false;
  if (!b->failed) {
    char text[sizeof b->why];
    snprintf(text, sizeof text, "%s: %s: %s", what, rk_status_name(s),
             rk_last_error());
    one_line(b->why, sizeof b->why, text);
  }
  b->failed = true;
  return true;
}

static bool setup(bench_backend_t *b) {
  rk_device_info_t info;
  rk_compile_options_t co;
  rk_compile_options_init(&co);
  co.source_name = "bench_bump.c";
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = o.output_capacity = 2 * kWindow;
  rk_actor_options_t t = o;
  t.mode = RK_ACTOR_TRADITIONAL;
  const int zero = 0;
  if (failed(b, rk_backend_device_info(b->be, 0, &info), "device 0") ||
      failed(b, rk_backend_create_context(b->be, 0, &b->ctx), "a context") ||
      failed(b, rk_context_compile(b->ctx, kKernel, &co, &b->mod),
             "compiling the kernel") ||
      failed(b, rk_module_get_function(b->mod, "bump", &b->fn), "the kernel") ||
      failed(b, rk_context_allocate(b->ctx, sizeof zero, &b->x),
             "device memory") ||
      failed(b, rk_context_copy_to_device(b->ctx, b->x, &zero, sizeof zero),
             "device memory") ||
      failed(b, rk_actor_launch(b->ctx, kActor, "echo", &o, &b->pers),
             "a persistent actor") ||
      failed(b, rk_actor_launch(b->ctx, kActor, "echo", &t, &b->trad),
             "a traditional actor"))
    return false;
  snprintf(b->device, sizeof b->device, "%s", info.name);
  rk_actor_stats_t st;
  if (failed(b, rk_actor_stats(b->pers, &st), "the actor's stats"))
    return false;
  b->execution = st.execution;
  return true;
}

static void teardown(bench_backend_t *b) {
  rk_actor_destroy(b->pers);
  rk_actor_destroy(b->trad);
  if (b->x) rk_context_free(b->ctx, b->x);
  if (b->mod) rk_module_destroy(b->mod);
  if (b->ctx) rk_context_destroy(b->ctx);
  if (b->be) rk_backend_destroy(b->be);
}

static bool measure_launch(bench_backend_t *b, int n, double *samples) {
  const rk_arg_t args[] = {rk_arg_i32(1), rk_arg_ptr(b->x)};
  for (int i = 0; i < n; ++i) {
    const double t0 = tool_now_seconds();
    if (failed(b,
               rk_function_launch(b->fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, args, 2),
               "a launch") ||
        failed(b, rk_context_synchronize(b->ctx), "synchronizing"))
      return false;
    samples[i] = (tool_now_seconds() - t0) * 1e6;
  }
  b->x_value += n;
  int got = -1;
  if (failed(b, rk_context_copy_to_host(b->ctx, &got, b->x, sizeof got),
             "reading the kernel's element"))
    return false;
  if (got != b->x_value) {
    snprintf(b->why, sizeof b->why,
             "the kernel's element is %d after %d launches, not %d", got,
             b->x_value, b->x_value);
    b->failed = true;
    return false;
  }
  return true;
}

/* A response must carry its request's number plus one. */
static bool check_answer(bench_backend_t *b, const ping_t *r, uint32_t sent) {
  if (r->seq == sent + 1u) return true;
  snprintf(b->why, sizeof b->why,
           "request %u was answered %u (the handler adds one)", sent, r->seq);
  b->failed = true;
  return false;
}

static bool measure_calls(bench_backend_t *b, rk_actor_t *a, int n,
                          double *samples) {
  for (int i = 0; i < n; ++i) {
    const ping_t q = {++b->seq, 0};
    ping_t r;
    const double t0 = tool_now_seconds();
    if (failed(
            b,
            rk_actor_call(a, &q, sizeof q, &r, sizeof r, 10000000000ull, NULL),
            "a call"))
      return false;
    samples[i] = (tool_now_seconds() - t0) * 1e6;
    if (!check_answer(b, &r, q.seq)) return false;
  }
  return true;
}

/* Messages per second: kWindow in flight, answers in order. */
static bool measure_stream(bench_backend_t *b, int n, double *out) {
  const uint32_t first = b->seq + 1u;
  uint32_t next = first; /* the next request's number */
  const double t0 = tool_now_seconds();
  for (int done = 0; done < n; ++done) {
    while (next - first < (uint32_t)n &&
           next - first - (uint32_t)done < (uint32_t)kWindow) {
      const ping_t q = {next, 0};
      if (failed(b, rk_actor_send(b->pers, &q, sizeof q, 10000000000ull, NULL),
                 "a send"))
        return false;
      next++;
    }
    ping_t r;
    if (failed(b, rk_actor_receive(b->pers, &r, sizeof r, 10000000000ull, NULL),
               "a receive") ||
        !check_answer(b, &r, first + (uint32_t)done))
      return false;
  }
  *out = n / (tool_now_seconds() - t0);
  b->seq = next - 1u;
  return true;
}

/* One round on b: every figure once. */
static void round_on(bench_backend_t *b, const sizes_t *z, double *scratch) {
  if (b->failed) return;
  if (!measure_launch(b, z->launches, scratch)) return;
  b->launch_us.v[b->launch_us.n++] = median_of(scratch, z->launches);
  if (!measure_calls(b, b->pers, z->calls, scratch)) return;
  b->call_us.v[b->call_us.n++] = median_of(scratch, z->calls);
  if (!measure_calls(b, b->trad, z->trad_calls, scratch)) return;
  b->trad_us.v[b->trad_us.n++] = median_of(scratch, z->trad_calls);
  double mps;
  if (!measure_stream(b, z->stream, &mps)) return;
  b->stream_mps.v[b->stream_mps.n++] = mps;
}

/* "1.23 us [1.10-1.50]" */
static void cell(char *out, size_t cap, const figure_t *f, bool rate) {
  if (f->n == 0) {
    snprintf(out, cap, "-");
    return;
  }
  double s[3];
  spread_of(f, s);
  if (rate) {
    /* The unit of the median, for all three. */
    const double u = s[1] >= 1e6 ? 1e6 : s[1] >= 1e3 ? 1e3 : 1.0;
    snprintf(out, cap, "%.3g %s/s [%.3g-%.3g]", s[1] / u,
             u == 1e6   ? "M"
             : u == 1e3 ? "k"
                        : "",
             s[0] / u, s[2] / u);
  } else
    snprintf(out, cap, "%.3g us [%.3g-%.3g]", s[1], s[0], s[2]);
}

static void print_table(bench_backend_t *bs, int nb, int rounds,
                        double others) {
  printf("rk bench: %d round%s; medians over rounds [p10-p90]\n", rounds,
         rounds == 1 ? "" : "s");
  if (others >= 0)
    printf(
        "other processes used %.0f%% of the machine's %ld CPUs during the "
        "rounds%s\n",
        others, sysconf(_SC_NPROCESSORS_ONLN),
        others > 5 ? ": the figures are disturbed" : "");
  printf("\n");
  printf("%-8s %-26s %-26s %-26s %s\n", "backend", "launch + synchronize",
         "actor call (persistent)", "actor call (traditional)",
         "actor messages (64 in flight)");
  for (int i = 0; i < nb; ++i) {
    bench_backend_t *b = &bs[i];
    const char *name = rk_backend_kind_name(b->kind);
    if (!b->be) {
      printf("%-8s not available: %s\n", name, b->why);
      continue;
    }
    char c[4][64];
    cell(c[0], sizeof c[0], &b->launch_us, false);
    cell(c[1], sizeof c[1], &b->call_us, false);
    cell(c[2], sizeof c[2], &b->trad_us, false);
    cell(c[3], sizeof c[3], &b->stream_mps, true);
    printf("%-8s %-26s %-26s %-26s %s\n", name, c[0], c[1], c[2], c[3]);
    printf("%-8s device: %s; persistent actor: %s\n", "", b->device,
           rk_actor_execution_name(b->execution));
    if (b->failed) printf("%-8s FAILED: %s\n", "", b->why);
  }
}

static void json_figure(FILE *out, const char *key, const figure_t *f) {
  fprintf(out, ",\"%s\":", key);
  if (f->n == 0) {
    fputs("null", out);
    return;
  }
  double s[3];
  spread_of(f, s);
  fputs("{\"p10\":", out);
  tool_json_number(out, s[0]);
  fputs(",\"p50\":", out);
  tool_json_number(out, s[1]);
  fputs(",\"p90\":", out);
  tool_json_number(out, s[2]);
  fputc('}', out);
}

static void print_json(bench_backend_t *bs, int nb, int rounds, bool quick,
                       double others) {
  printf("{\"benchmark\":\"rk bench\",\"rk_version\":");
  tool_json_string(stdout, rk_version());
  printf(",\"rounds\":%d,\"quick\":%s,\"window\":%d,\"others_cpu_pct\":",
         rounds, quick ? "true" : "false", kWindow);
  tool_json_number(stdout, others >= 0 ? others : NAN);
  printf(",\"backends\":[");
  for (int i = 0; i < nb; ++i) {
    bench_backend_t *b = &bs[i];
    printf("%s{\"backend\":", i ? "," : "");
    tool_json_string(stdout, rk_backend_kind_name(b->kind));
    printf(",\"available\":%s", b->be ? "true" : "false");
    if (!b->be) {
      fputs(",\"reason\":", stdout);
      tool_json_string(stdout, b->why);
      fputc('}', stdout);
      continue;
    }
    fputs(",\"device\":", stdout);
    tool_json_string(stdout, b->device);
    fputs(",\"persistent_execution\":", stdout);
    tool_json_string(stdout, rk_actor_execution_name(b->execution));
    printf(",\"ok\":%s", b->failed ? "false" : "true");
    if (b->failed) {
      fputs(",\"error\":", stdout);
      tool_json_string(stdout, b->why);
    }
    json_figure(stdout, "launch_us", &b->launch_us);
    json_figure(stdout, "call_us", &b->call_us);
    json_figure(stdout, "traditional_call_us", &b->trad_us);
    json_figure(stdout, "stream_msgs_per_s", &b->stream_mps);
    fputc('}', stdout);
  }
  printf("]}\n");
}

static bool parse_rounds(const char *text, int *out) {
  char *end;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (end == text || *end || errno == ERANGE || v < 1 || v > kMaxRounds)
    return false;
  *out = (int)v;
  return true;
}

static int run(int argc, char **argv) {
  const char *backend_name = NULL;
  bool json = false, quick = false;
  int rounds = 0;
  for (int i = 1; i < argc; ++i) {
    const char *value;
    if (tool_is_help(argv[i])) {
      tool_cmd_bench.help(stdout);
      return TOOL_EXIT_OK;
    }
    if (tool_match_option(argc, argv, &i, "--backend", &value)) {
      if (!value || !*value)
        return tool_usage_error("bench", "--backend needs a backend name");
      backend_name = value;
    } else if (tool_match_option(argc, argv, &i, "--rounds", &value)) {
      if (!value || !parse_rounds(value, &rounds))
        return tool_usage_error("bench",
                                "--rounds '%s' is not a number from 1 to %d",
                                value ? value : "", kMaxRounds);
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (argv[i][0] == '-') {
      return tool_usage_error("bench", "unknown option '%s'", argv[i]);
    } else {
      return tool_usage_error("bench", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!rounds) rounds = quick ? 3 : 11;
  /* RK_BACKEND names the backend every rk command uses; --backend wins. */
  const char *env = getenv("RK_BACKEND");
  const bool from_env = !backend_name && env && *env && strcmp(env, "auto");
  if (from_env) backend_name = env;
  const sizes_t z =
      quick ? (sizes_t){20, 50, 10, 500} : (sizes_t){200, 1000, 100, 20000};

  /* Every backend built in, or the one named; "all" is every one. */
  static const rk_backend_kind_t kAll[kKinds] = {
      RK_BACKEND_CPU, RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU,
      RK_BACKEND_OPENCL};
  bench_backend_t bs[kKinds];
  memset(bs, 0, sizeof bs);
  int nb = 0;
  const bool one = backend_name && strcmp(backend_name, "all") != 0;
  if (one) {
    rk_backend_kind_t kind;
    if (rk_backend_kind_from_name(backend_name, &kind) != RK_OK ||
        kind == RK_BACKEND_AUTO)
      return tool_usage_error("bench",
                              "%s '%s': not one of cpu, cuda, metal, "
                              "webgpu, opencl, all",
                              from_env ? "RK_BACKEND" : "--backend",
                              backend_name);
    bs[nb++].kind = kind;
  } else {
    for (int k = 0; k < kKinds; ++k)
      if (rk_backend_kind_built_in(kAll[k])) bs[nb++].kind = kAll[k];
  }
  int usable = 0;
  for (int i = 0; i < nb; ++i) {
    bench_backend_t *b = &bs[i];
    if (rk_backend_open(b->kind, &b->be) != RK_OK) {
      b->be = NULL;
      one_line(b->why, sizeof b->why, rk_last_error());
      if (one) {
        fprintf(stderr, "rk bench: %s is not available: %s\n",
                rk_backend_kind_name(b->kind), b->why);
        return TOOL_EXIT_FAILURE;
      }
      continue;
    }
    if (!json) {
      fprintf(stderr, "rk bench: setting up %s ...\n",
              rk_backend_kind_name(b->kind));
    }
    if (setup(b)) usable++;
  }
  const int most = z.launches > z.calls ? z.launches : z.calls;
  double *scratch = malloc((size_t)most * sizeof *scratch);
  if (!scratch) {
    fprintf(stderr, "rk bench: out of memory\n");
    return TOOL_EXIT_FAILURE;
  }
  const cpu_use_t before = cpu_use();
  for (int r = 0; r < rounds && usable; ++r) {
    if (!json) fprintf(stderr, "rk bench: round %d of %d\n", r + 1, rounds);
    /* The order rotates: no backend always runs right after another. */
    for (int k = 0; k < nb; ++k) {
      bench_backend_t *b = &bs[(r + k) % nb];
      if (b->be) round_on(b, &z, scratch);
    }
  }
  const cpu_use_t after = cpu_use();
  const double others = others_pct(&before, &after);
  free(scratch);
  bool any_failed = false;
  for (int i = 0; i < nb; ++i) any_failed |= bs[i].be && bs[i].failed;
  if (json)
    print_json(bs, nb, rounds, quick, others);
  else
    print_table(bs, nb, rounds, others);
  for (int i = 0; i < nb; ++i) teardown(&bs[i]);
  if (!usable && !any_failed) {
    fprintf(stderr, "rk bench: no backend could be opened\n");
    return TOOL_EXIT_FAILURE;
  }
  return any_failed ? TOOL_EXIT_FAILURE : TOOL_EXIT_OK;
}

static void help(FILE *out) {
  fputs(
      "Usage: rk bench [--backend NAME|all] [--rounds N] [--quick] [--json]\n"
      "\n"
      "Measures what a small command costs on each backend of this machine,\n"
      "side by side in one run:\n"
      "  launch + synchronize       a kernel launch on one element and\n"
      "                             rk_context_synchronize\n"
      "  actor call (persistent)    rk_actor_call round trip of a persistent\n"
      "                             actor (resident, or by relaunch where the\n"
      "                             backend cannot keep a handler resident)\n"
      "  actor call (traditional)   the same handler with a launch per\n"
      "                             request\n"
      "  actor messages             a persistent actor's messages per second,\n"
      "                             64 in flight (rk_actor_send/receive)\n"
      "Every answer is checked; a wrong one fails the run. Rounds rotate the\n"
      "backends' order; each figure is the median over rounds of a round's\n"
      "median, with the 10th and 90th percentiles over rounds.\n"
      "\n"
      "Options:\n"
      "  --backend NAME  only this backend (cpu, cuda, metal, webgpu,\n"
      "                  opencl); all: every one built in, a backend that\n"
      "                  does not open shown with the reason. Default: the\n"
      "                  one RK_BACKEND names, else all\n"
      "  --rounds N      rounds, 1 to 101 (default 11; --quick: 3)\n"
      "  --quick         fewer and smaller rounds (seconds, not minutes)\n"
      "  --json          one JSON object: per backend, p10/p50/p90 of\n"
      "                  launch_us, call_us, traditional_call_us and\n"
      "                  stream_msgs_per_s, or why it is not available;\n"
      "                  others_cpu_pct: what other processes used (null\n"
      "                  for a run under half a second)\n"
      "\n"
      "Example:\n"
      "  rk bench --quick\n"
      "\n"
      "The programs under bench/ (make bench) measure more, against the raw\n"
      "vendor APIs and other libraries.\n"
      "\n"
      "Exit status: 0 when every backend that opened was measured; 1 when a\n"
      "measurement failed or gave a wrong answer, the named backend is not\n"
      "available, or none is; 2 on a bad command line.\n",
      out);
}

const tool_command_t tool_cmd_bench = {
    "bench", "measure launches and actor calls on every backend, side by side",
    run, help};
