/* bench_launch - launch overhead of rk's CPU backend next to an OpenMP
 * parallel region, measured side by side in one run.
 *
 * One rk op is rk_function_launch (NULL stream) followed by
 * rk_context_synchronize; one OpenMP op is one
 * `#pragma omp parallel num_threads(T)` region doing the same work. T is the
 * rk pool's thread count: RK_CPU_THREADS if set, else the device's
 * compute_units (the allowed CPUs); OpenMP gets the same T.
 *
 * Configurations (each timed on both sides):
 *   1. grid=T  block=1   rk `empty(void)`      | region with an empty body
 *   2. grid=4T block=64  rk `empty(void)`      | `parallel for` over 4T
 *      iterations (default static schedule), each a 64-step inner loop that
 *      stores the "thread index" to a thread-local, like rk's block loop
 *   3. grid=T  block=1   rk `empty_arg(int)`   | region reading one int:
 *      adds rk's argument checking and packing
 *   4. grid=T  block=1   rk `spin(int, ptr)`   | region where each thread
 *      runs the same chain: every block/thread does ~5 us of dependent
 *      integer work, so rk's pool workers must take part; the overhead is
 *      the op time minus the work of one block
 *
 * With an empty kernel rk's launching thread may claim every block before a
 * pool worker notices the launch (an OpenMP region always forks and joins
 * the whole team). After every rk round an untimed probe (10 launches of a
 * kernel that counts how many blocks run at the same time) reports how
 * many threads really ran blocks, so the numbers can be read correctly: in the
 * work configuration fewer than min(T, grid) threads means rk ran the
 * launch (partly) serially.
 *
 * Other busy processes distort both sides (an OpenMP join waits for a
 * descheduled thread), so the CPU time other processes used during the run
 * is printed, with a warning above 5%.
 *
 * Method: per configuration, compile (before any timing; the kernel cache
 * stays at its default location), check once that a counting kernel really
 * runs grid*block threads, warm up both sides, then run R rounds of N ops
 * per side, alternating which side goes first in each round so that drift
 * hits both equally. Before each timed round the benchmark sleeps long
 * enough for the other side's idle threads to stop spinning and park (rk
 * spins RK_CPU_SPIN_US, libgomp GOMP_SPINCOUNT pause loops), then runs a
 * short untimed burst so its own threads are awake. Per-op time is round
 * time / N; the report gives median, p10, p90, min and max of the per-round
 * values and the rk/OpenMP ratio of the medians.
 *
 * The exit status never depends on timing: it is non-zero only when an rk
 * call fails, a check of what the kernels did fails, or the command line is
 * wrong.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <dlfcn.h>
#include <omp.h>
#endif

#include "bench_json.h"
#include "bench_stats.h"
#include "rk/rk.h"

/* The dependent chain both sides run in configuration 4 (and the host uses
 * to size it); kept identical to the kernel source below. */
#define LCG_STEP(x) ((x)*1664525u + 1013904223u)

static const char kKernelSource[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "RK_KERNEL void empty(void) {}\n"
    "\n"
    "RK_KERNEL void empty_arg(int ignored) { (void)ignored; }\n"
    "\n"
    "/* n steps of a dependent chain per block. */\n"
    "RK_KERNEL void spin(int n, unsigned *sink) {\n"
    "  unsigned x = rk_block_idx_x() + 1u;\n"
    "  for (int i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;\n"
    "  if (rk_thread_idx_x() == 0) sink[rk_block_idx_x()] = x;\n"
    "}\n"
    "\n"
    "RK_KERNEL void count(unsigned *counter) {\n"
    "  rk_atomic_add_u32(counter, 1u);\n"
    "}\n"
    "\n"
    "/* Like spin, but counts how many blocks run at the same time: c[0]\n"
    " * is the number running now, c[1] the peak, c[2] keeps the chain. */\n"
    "RK_KERNEL void where(int n, unsigned *c) {\n"
    "  unsigned now = rk_atomic_add_u32(&c[0], 1u) + 1u;\n"
    "  rk_atomic_max_u32(&c[1], now);\n"
    "  unsigned x = rk_block_idx_x() + 1u;\n"
    "  for (int i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;\n"
    "  if (x == 0xffffffffu) c[2] = x;\n"
    "  rk_atomic_sub_u32(&c[0], 1u);\n"
    "}\n";

enum { K_EMPTY, K_EMPTY_ARG, K_SPIN, K_COUNT, K_WHERE, K_NUM };
static const char *const kKernelNames[K_NUM] = {"empty", "empty_arg", "spin",
                                                "count", "where"};

typedef enum omp_body {
  OMP_EMPTY,  /* empty region */
  OMP_BLOCKS, /* parallel for over the blocks, inner loop over threads */
  OMP_ARG,    /* region that reads one shared int */
  OMP_SPIN,   /* every thread runs the chain */
} omp_body_t;

enum { kNumConfigs = 4, kMaxSink = 4096 };

typedef struct config {
  char name[48]; /* "grid=2,block=1" */
  const char *rk_desc, *omp_desc;
  uint32_t grid, block;
  int kernel; /* K_* */
  omp_body_t omp;
  int spin_n; /* chain steps per block / thread (OMP_SPIN, K_SPIN) */
  rk_arg_t args[2];
  size_t nargs;
} config_t;

typedef struct options {
  long rounds, iters, warmup;
  long cooldown_ms; /* < 0: automatic */
  long work_ns;     /* configuration 4's work per block */
  bool quick, json;
  bool run_rk, run_omp;
} options_t;

/* ---- Failure handling --------------------------------------------------- */

static void die_rk(rk_status_t s, const char *what) {
  fprintf(stderr, "bench_launch: %s failed: %s: %s\n", what, rk_status_name(s),
          rk_last_error());
  exit(1);
}

#define RK_CHECK(call)                  \
  do {                                  \
    rk_status_t s_ = (call);            \
    if (s_ != RK_OK) die_rk(s_, #call); \
  } while (0)

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "bench_launch: out of memory\n");
    exit(1);
  }
  return p;
}

/* ---- Host helpers ------------------------------------------------------- */

static uint32_t __attribute__((noinline)) lcg_chain(uint32_t x, int n) {
  for (int i = 0; i < n; ++i) x = LCG_STEP(x);
  return x;
}

/* Chain steps that take about `ns` nanoseconds on this thread; the measured
 * time of that many steps goes to *out_us. */
static int calibrate_chain(long ns, double *out_us) {
  volatile uint32_t sink = 0;
  int n = 1 << 16;
  double best = INFINITY;
  for (int rep = 0; rep < 7; ++rep) {
    uint64_t t0 = rkb_now_ns();
    sink = lcg_chain(sink + 1, n);
    double dt = (double)(rkb_now_ns() - t0);
    if (dt < best) best = dt;
  }
  double per_step = best / n;
  int steps = (int)((double)ns / per_step);
  if (steps < 1) steps = 1;
  double samples[15];
  for (int rep = 0; rep < 15; ++rep) {
    uint64_t t0 = rkb_now_ns();
    sink = lcg_chain(sink + 1, steps);
    samples[rep] = (double)(rkb_now_ns() - t0) / 1e3;
  }
  *out_us = rkb_summarize(samples, 15).median;
  return steps;
}

/* Parses GOMP_SPINCOUNT as libgomp does: a number with an optional k, M, G
 * or T suffix, or "infinite"/"infinity". Returns -1 for infinite, -2 when
 * unset or unparsable. */
static double gomp_spincount_env(void) {
  const char *e = getenv("GOMP_SPINCOUNT");
  if (!e || !*e) return -2;
  if (!strcasecmp(e, "infinite") || !strcasecmp(e, "infinity")) return -1;
  char *end;
  double v = strtod(e, &end);
  if (end == e || v < 0) return -2;
  switch (*end) {
    case 'k':
    case 'K':
      v *= 1e3;
      ++end;
      break;
    case 'm':
    case 'M':
      v *= 1e6;
      ++end;
      break;
    case 'g':
    case 'G':
      v *= 1e9;
      ++end;
      break;
    case 't':
    case 'T':
      v *= 1e12;
      ++end;
      break;
    default:
      break;
  }
  return *end ? -2 : v;
}

/* The spin count libgomp's idle threads use before parking, chosen as
 * libgomp does (env.c, config/linux/wait.h): GOMP_SPINCOUNT if set; else
 * OMP_WAIT_POLICY=active: 3e10 (treated as infinite), passive: 0, unset:
 * 300000 - or, with more threads than CPUs, 1000 (active) / 100 (unset).
 * Returns -1 for infinite. */
static double gomp_spin_count(int threads, int cpus) {
  const char *p = getenv("OMP_WAIT_POLICY");
  int policy = !p                          ? 0
               : !strcasecmp(p, "active")  ? 1
               : !strcasecmp(p, "passive") ? -1
                                           : 0;
  double count = gomp_spincount_env();
  if (count == -2) count = policy > 0 ? -1 : policy < 0 ? 0 : 300000;
  if (threads > cpus) {
    double throttled = policy > 0 ? 1000 : 100;
    if (count < 0 || count > throttled) count = throttled;
  }
  return count;
}

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

/* Nanoseconds one spin-loop step (a load and a pause) takes here. */
static double pause_ns(void) {
  enum { kN = 100000 };
  volatile uint32_t word = 0;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < kN && word == 0; ++i) cpu_pause();
  return (double)(rkb_now_ns() - t0) / kN;
}

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

/* ---- The OpenMP side ---------------------------------------------------- */

#ifdef _OPENMP
static _Thread_local volatile uint32_t g_omp_tid;
static volatile int g_omp_sink;
static uint32_t g_omp_spin_sink[kMaxSink];

static void omp_op(const config_t *c, int threads) {
  switch (c->omp) {
    case OMP_EMPTY:
      /* An empty asm keeps GCC from deleting an empty region outright. */
#pragma omp parallel num_threads(threads)
    {
      __asm__ volatile("" ::: "memory");
    } break;
    case OMP_BLOCKS: {
      const long nblocks = (long)c->grid;
      const uint32_t bdim = c->block;
#pragma omp parallel for num_threads(threads)
      for (long b = 0; b < nblocks; ++b)
        for (uint32_t t = 0; t < bdim; ++t) g_omp_tid = t;
      break;
    }
    case OMP_ARG: {
      const int arg = 7;
#pragma omp parallel num_threads(threads)
      { __atomic_store_n(&g_omp_sink, arg, __ATOMIC_RELAXED); }
      break;
    }
    case OMP_SPIN: {
      const int n = c->spin_n;
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num();
        uint32_t x = (uint32_t)t + 1u;
        for (int i = 0; i < n; ++i) x = LCG_STEP(x);
        g_omp_spin_sink[t % kMaxSink] = x;
      }
      break;
    }
  }
}

/* Checks the chain results of the last OMP_SPIN region (this also keeps the
 * compiler from dropping the region's work as dead stores). */
static void omp_check_spin(const config_t *c, int threads) {
  for (int t = 0; t < threads && t < kMaxSink; ++t) {
    uint32_t want = lcg_chain((uint32_t)t + 1u, c->spin_n);
    if (g_omp_spin_sink[t] != want) {
      fprintf(stderr,
              "bench_launch: config %s: OpenMP thread %d computed "
              "%u, expected %u\n",
              c->name, t, g_omp_spin_sink[t], want);
      exit(1);
    }
  }
}

static int omp_team_size(int threads) {
  int n = 0;
#pragma omp parallel num_threads(threads)
  {
#pragma omp single
    n = omp_get_num_threads();
  }
  return n;
}

/* Where libgomp was loaded from (resolved through symlinks). */
static void omp_library_path(char *out, size_t cap) {
  Dl_info info;
  snprintf(out, cap, "unknown");
  if (dladdr((void *)&omp_get_num_threads, &info) && info.dli_fname) {
    char *real = realpath(info.dli_fname, NULL);
    snprintf(out, cap, "%s", real ? real : info.dli_fname);
    free(real);
  }
}
#endif

/* ---- The rk side -------------------------------------------------------- */

typedef struct rk_side {
  rk_context_t *ctx;
  rk_function_t *fn[K_NUM];
} rk_side_t;

static void rk_op(const rk_side_t *r, const config_t *c) {
  RK_CHECK(rk_function_launch(r->fn[c->kernel], rk_dim3(c->grid, 1, 1),
                              rk_dim3(c->block, 1, 1), 0, NULL, c->args,
                              c->nargs));
  RK_CHECK(rk_context_synchronize(r->ctx));
}

/* Runs `count` with the configuration's shape and checks every thread ran. */
static void rk_check_shape(const rk_side_t *r, const config_t *c) {
  rk_devptr_t counter;
  RK_CHECK(rk_context_allocate(r->ctx, sizeof(uint32_t), &counter));
  uint32_t zero = 0, got = 0;
  RK_CHECK(rk_context_copy_to_device(r->ctx, counter, &zero, sizeof zero));
  rk_arg_t arg = rk_arg_ptr(counter);
  RK_CHECK(rk_function_launch(r->fn[K_COUNT], rk_dim3(c->grid, 1, 1),
                              rk_dim3(c->block, 1, 1), 0, NULL, &arg, 1));
  RK_CHECK(rk_context_synchronize(r->ctx));
  RK_CHECK(rk_context_copy_to_host(r->ctx, &got, counter, sizeof got));
  RK_CHECK(rk_context_free(r->ctx, counter));
  uint64_t want = (uint64_t)c->grid * c->block;
  if (got != want) {
    fprintf(stderr,
            "bench_launch: config %s: the counting kernel ran %u threads, "
            "expected %llu\n",
            c->name, got, (unsigned long long)want);
    exit(1);
  }
}

/* Checks the spin kernel's results against the host's chain. */
static void rk_check_spin(const rk_side_t *r, const config_t *c,
                          rk_devptr_t sink) {
  uint32_t *got = xcalloc(c->grid, sizeof *got);
  rk_op(r, c);
  RK_CHECK(rk_context_copy_to_host(r->ctx, got, sink, c->grid * sizeof *got));
  for (uint32_t b = 0; b < c->grid; ++b) {
    if (got[b] != lcg_chain(b + 1u, c->spin_n)) {
      fprintf(stderr,
              "bench_launch: config %s: block %u computed %u, "
              "expected %u\n",
              c->name, b, got[b], lcg_chain(b + 1u, c->spin_n));
      exit(1);
    }
  }
  free(got);
}

/* How many threads run the blocks: `probes` launches of `where` with the
 * configuration's shape and work (each followed by a copy back), untimed.
 * Gives the mean over launches of the peak number of blocks that ran at
 * the same time (each on its own thread). */
static void rk_probe_threads(const rk_side_t *r, const config_t *c, long probes,
                             double *mean_threads) {
  rk_devptr_t dev;
  unsigned counters[3];
  RK_CHECK(rk_context_allocate(r->ctx, sizeof counters, &dev));
  rk_arg_t args[2] = {rk_arg_i32(c->kernel == K_SPIN ? c->spin_n : 0),
                      rk_arg_ptr(dev)};
  uint64_t peak_sum = 0;
  for (long p = 0; p < probes; ++p) {
    memset(counters, 0, sizeof counters);
    RK_CHECK(rk_context_copy_to_device(r->ctx, dev, counters, sizeof counters));
    RK_CHECK(rk_function_launch(r->fn[K_WHERE], rk_dim3(c->grid, 1, 1),
                                rk_dim3(c->block, 1, 1), 0, NULL, args, 2));
    RK_CHECK(rk_context_synchronize(r->ctx));
    RK_CHECK(rk_context_copy_to_host(r->ctx, counters, dev, sizeof counters));
    peak_sum += counters[1];
  }
  RK_CHECK(rk_context_free(r->ctx, dev));
  *mean_threads = probes ? (double)peak_sum / (double)probes : 0;
}

/* ---- Timing ------------------------------------------------------------- */

typedef enum side { SIDE_RK, SIDE_OMP } side_t;

typedef struct bench {
  const options_t *opt;
  rk_side_t *rk;
  int threads;
  long cooldown_ms;
} bench_t;

static void run_ops(const bench_t *b, side_t side, const config_t *c, long n) {
  if (side == SIDE_RK) {
    for (long i = 0; i < n; ++i) rk_op(b->rk, c);
  } else {
#ifdef _OPENMP
    for (long i = 0; i < n; ++i) omp_op(c, b->threads);
#endif
  }
}

/* One timed round: let the other side's threads park, wake ours with an
 * untimed burst, then time `iters` ops. Returns microseconds per op. */
static double timed_round(const bench_t *b, side_t side, const config_t *c) {
  sleep_ms(b->cooldown_ms);
  long burst = b->opt->iters / 10;
  if (burst < 10) burst = 10;
  run_ops(b, side, c, burst);
  uint64_t t0 = rkb_now_ns();
  run_ops(b, side, c, b->opt->iters);
  uint64_t t1 = rkb_now_ns();
  return (double)(t1 - t0) / 1e3 / (double)b->opt->iters;
}

typedef struct result {
  rkb_summary_t rk, omp;
  bool have_rk, have_omp;
  /* From a short rk_probe_threads after every rk round: blocks running at
   * once per launch (over rounds), and the rounds whose launches ran on
   * fewer than 90% of min(T, grid) threads. */
  rkb_summary_t rk_threads;
  long rk_narrow_rounds;
} result_t;

static result_t run_config(const bench_t *b, const config_t *c, double *rk_us,
                           double *omp_us, double *rk_thr) {
  const options_t *o = b->opt;
  bool do_rk = o->run_rk, do_omp = o->run_omp;
#ifndef _OPENMP
  do_omp = false;
#endif
  result_t res;
  memset(&res, 0, sizeof res);
  /* Each side warms up only once the other side's threads have parked: a
   * spinning OpenMP thread on the CPU of rk's pinned worker (or the
   * reverse) would distort both the warm-up and the probe. */
  if (do_rk) {
    sleep_ms(b->cooldown_ms);
    rk_check_shape(b->rk, c);
    run_ops(b, SIDE_RK, c, o->warmup);
  }
  if (do_omp) {
    sleep_ms(b->cooldown_ms);
    run_ops(b, SIDE_OMP, c, o->warmup);
#ifdef _OPENMP
    if (c->omp == OMP_SPIN) omp_check_spin(c, b->threads);
#endif
  }
  uint32_t ideal =
      (uint32_t)b->threads < c->grid ? (uint32_t)b->threads : c->grid;
  for (long r = 0; r < o->rounds; ++r) {
    /* Even rounds: rk first; odd rounds: OpenMP first. */
    for (int k = 0; k < 2; ++k) {
      side_t side = ((r + k) % 2 == 0) ? SIDE_RK : SIDE_OMP;
      if (side == SIDE_RK && do_rk) {
        rk_us[r] = timed_round(b, side, c);
        rk_probe_threads(b->rk, c, 10, &rk_thr[r]);
        if (rk_thr[r] < 0.9 * ideal) ++res.rk_narrow_rounds;
      }
      if (side == SIDE_OMP && do_omp) omp_us[r] = timed_round(b, side, c);
    }
  }
  res.have_rk = do_rk;
  res.have_omp = do_omp;
  if (do_rk) {
    res.rk = rkb_summarize(rk_us, (size_t)o->rounds);
    res.rk_threads = rkb_summarize(rk_thr, (size_t)o->rounds);
  }
  if (do_omp) res.omp = rkb_summarize(omp_us, (size_t)o->rounds);
  return res;
}

/* ---- Command line ------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: bench_launch [--rounds N] [--iters N] [--warmup N]\n"
      "                    [--cooldown-ms N] [--work-ns N] "
      "[--side rk|omp|both]\n"
      "                    [--quick] [--json] [--help]\n"
      "\n"
      "rk_function_launch + rk_context_synchronize of an empty kernel on "
      "rk's CPU\n"
      "backend next to an OpenMP parallel region with the same thread "
      "count,\n"
      "interleaved in one run (4 configurations; see the source header).\n"
      "\n"
      "  --rounds N       timed rounds per side and configuration "
      "(default 30)\n"
      "  --iters N        ops per round (default 1000)\n"
      "  --warmup N       untimed ops per side before the rounds "
      "(default 2000)\n"
      "  --cooldown-ms N  pause before each round so the other side's idle "
      "threads\n"
      "                   park (default: from RK_CPU_SPIN_US and libgomp's "
      "spin count)\n"
      "  --work-ns N      work per block in the 'work' configuration "
      "(default 5000)\n"
      "  --side S         time only rk or only OpenMP (for profiling); "
      "default both\n"
      "  --quick          a few short rounds (CI smoke test)\n"
      "  --json           one JSON object on stdout (the table goes to "
      "stderr)\n"
      "  --help           this text\n"
      "\n"
      "Environment: RK_CPU_THREADS (thread count for both sides), "
      "RK_CPU_SPIN_US,\n"
      "RK_CACHE_DIR, OMP_WAIT_POLICY, GOMP_SPINCOUNT, OMP_PROC_BIND.\n"
      "Prints a table and one 'RESULT launch ...' line per configuration. "
      "The exit\n"
      "status is non-zero only if an rk call or a result check fails, never "
      "because\n"
      "of timing.\n");
}

static int parse_options(int argc, char **argv, options_t *o) {
  o->rounds = 30;
  o->iters = 1000;
  o->warmup = 2000;
  o->cooldown_ms = -1;
  o->work_ns = 5000;
  o->quick = o->json = false;
  o->run_rk = o->run_omp = true;
  bool set_rounds = false, set_iters = false, set_warmup = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    long *target = NULL;
    long lo = 1, hi = 100000000;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--quick")) {
      o->quick = true;
      continue;
    } else if (!strcmp(a, "--json")) {
      o->json = true;
      continue;
    } else if (!strcmp(a, "--side")) {
      if (i + 1 >= argc) goto missing;
      const char *v = argv[++i];
      if (!strcmp(v, "rk")) {
        o->run_omp = false;
      } else if (!strcmp(v, "omp")) {
        o->run_rk = false;
      } else if (strcmp(v, "both")) {
        fprintf(stderr, "bench_launch: --side takes rk, omp or both\n");
        return -1;
      }
      continue;
    } else if (!strcmp(a, "--rounds")) {
      target = &o->rounds;
      set_rounds = true;
      hi = 1000000;
    } else if (!strcmp(a, "--iters")) {
      target = &o->iters;
      set_iters = true;
    } else if (!strcmp(a, "--warmup")) {
      target = &o->warmup;
      set_warmup = true;
      lo = 0;
    } else if (!strcmp(a, "--cooldown-ms")) {
      target = &o->cooldown_ms;
      lo = 0;
      hi = 60000;
    } else if (!strcmp(a, "--work-ns")) {
      target = &o->work_ns;
      hi = 10000000;
    } else {
      fprintf(stderr, "bench_launch: unknown option '%s'\n", a);
      usage(stderr);
      return -1;
    }
    if (i + 1 >= argc) goto missing;
    if (rkb_parse_long(argv[++i], lo, hi, target) != 0) {
      fprintf(stderr, "bench_launch: %s needs a number from %ld to %ld\n", a,
              lo, hi);
      return -1;
    }
    continue;
  missing:
    fprintf(stderr, "bench_launch: %s needs a value\n", a);
    return -1;
  }
  if (o->quick) {
    if (!set_rounds) o->rounds = 3;
    if (!set_iters) o->iters = 50;
    if (!set_warmup) o->warmup = 50;
  }
  return 0;
}

/* ---- Main --------------------------------------------------------------- */

/* Other processes busy on the CPUs distort both sides (an OpenMP join
 * waits for a descheduled thread; rk's pinned workers cannot move away).
 * A snapshot of all CPUs' busy time (/proc/stat) and of this process's own
 * CPU time gives what everything else used in between. */
typedef struct cpu_snapshot {
  bool ok;
  double busy_s, steal_s; /* all CPUs: busy (not idle/iowait), stolen */
  double self_s;          /* this process, all threads */
  uint64_t wall_ns;
} cpu_snapshot_t;

static cpu_snapshot_t cpu_snapshot(void) {
  cpu_snapshot_t c;
  memset(&c, 0, sizeof c);
  c.wall_ns = rkb_now_ns();
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
    c.self_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return c;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  if (n < 7 || hz <= 0) return c;
  /* user nice system idle iowait irq softirq steal */
  c.busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)hz;
  c.steal_s = n >= 8 ? (double)v[7] / (double)hz : 0;
  c.ok = true;
  return c;
}

/* Prints how much CPU other processes (and the hypervisor) took; returns
 * that share in percent of all CPUs' time (-1 when unknown). */
static double print_interference(const cpu_snapshot_t *a,
                                 const cpu_snapshot_t *b, int cpus) {
  if (!a->ok || !b->ok || cpus <= 0) {
    printf("CPU use by other processes: unknown (no /proc/stat)\n");
    return -1;
  }
  double wall = (double)(b->wall_ns - a->wall_ns) / 1e9;
  double capacity = wall * cpus;
  double others = (b->busy_s - a->busy_s) - (b->self_s - a->self_s);
  if (others < 0) others = 0;
  double steal = b->steal_s - a->steal_s;
  printf(
      "CPU use during the run: this benchmark %.0f%%, other processes "
      "%.0f%%, stolen by the\nhypervisor %.0f%% (of %d CPUs x %.1f s)\n",
      100 * (b->self_s - a->self_s) / capacity, 100 * others / capacity,
      100 * steal / capacity, cpus, wall);
  if (others > 0.05 * capacity || steal > 0.05 * capacity)
    printf(
        "warning: other processes or the hypervisor took more than 5%% "
        "of the CPUs: both sides\nare distorted; rerun on a quiet "
        "machine for comparable numbers\n");
  return 100 * (others + steal) / capacity;
}

static void print_row(const char *label, const char *side,
                      const rkb_summary_t *s) {
  printf("%-26s %-4s %10.3f %10.3f %10.3f %10.3f %10.3f\n", label, side,
         s->median, s->p10, s->p90, s->min, s->max);
}

int main(int argc, char **argv) {
  options_t opt;
  if (parse_options(argc, argv, &opt) != 0) return 2;
  rkb_json_t json;
  if (opt.json && !rkb_json_begin(&json, "launch")) {
    fprintf(stderr, "bench_launch: --json: cannot duplicate stdout\n");
    return 1;
  }

  rk_backend_t *be = NULL;
  RK_CHECK(rk_backend_open(RK_BACKEND_CPU, &be));
  rk_device_info_t info;
  RK_CHECK(rk_backend_device_info(be, 0, &info));
  rk_side_t rk;
  memset(&rk, 0, sizeof rk);
  RK_CHECK(rk_backend_create_context(be, 0, &rk.ctx));

  /* The pool size: RK_CPU_THREADS (validated by context creation above)
   * wins over the allowed CPUs. */
  int threads = (int)info.compute_units;
  long env_threads;
  if (rkb_parse_long(getenv("RK_CPU_THREADS"), 1, 1024, &env_threads) == 0)
    threads = (int)env_threads;
  if (threads < 1) threads = 1;

  /* Compile before any timing; the cache stays where the user has it. */
  rk_module_t *mod = NULL;
  uint64_t c0 = rkb_now_ns();
  RK_CHECK(rk_context_compile(rk.ctx, kKernelSource, NULL, &mod));
  double compile_ms = (double)(rkb_now_ns() - c0) / 1e6;
  for (int k = 0; k < K_NUM; ++k)
    RK_CHECK(rk_module_get_function(mod, kKernelNames[k], &rk.fn[k]));

  /* How long each side's idle threads spin before parking. */
  double spin_count = gomp_spin_count(threads, (int)info.compute_units);
  double pns = pause_ns();
  long rk_spin_us = 200, v;
  if (rkb_parse_long(getenv("RK_CPU_SPIN_US"), 0, 1000000, &v) == 0)
    rk_spin_us = v;
  double gomp_spin_ms = spin_count < 0 ? INFINITY : spin_count * pns / 1e6;
  long cooldown = opt.cooldown_ms;
  if (cooldown < 0) {
    double need = (double)rk_spin_us / 1e3;
    if (isfinite(gomp_spin_ms) && gomp_spin_ms > need) need = gomp_spin_ms;
    /* Twice the longer spin plus a millisecond, capped. */
    cooldown = (long)ceil(2 * need + 1);
    if (cooldown > 200) cooldown = 200;
  }

  double work_us = 0;
  int spin_n = calibrate_chain(opt.work_ns, &work_us);

  printf("bench_launch: rk launch+sync vs an OpenMP parallel region\n");
  printf("rk %s, backend %s, device \"%s\", compute_units %u\n", rk_version(),
         rk_backend_name(be), info.name, info.compute_units);
  printf(
      "threads T = %d (from %s); RK_CPU_SPIN_US=%s (rk idle spin %ld "
      "us); RK_CACHE_DIR=%s\n",
      threads, getenv("RK_CPU_THREADS") ? "RK_CPU_THREADS" : "compute_units",
      env_or("RK_CPU_SPIN_US", "unset"), rk_spin_us,
      env_or("RK_CACHE_DIR", "unset (default cache)"));
  printf("kernel module: %s in %.1f ms, before any timing\n",
         rk_module_cache_hit(mod) ? "loaded from the cache" : "compiled",
         compile_ms);
#ifdef _OPENMP
  char libpath[512];
  omp_library_path(libpath, sizeof libpath);
  int team = omp_team_size(threads);
  printf("OpenMP: _OPENMP=%d, runtime %s, compiler %s\n", _OPENMP, libpath,
         __VERSION__);
  printf(
      "OpenMP settings: OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s "
      "OMP_PROC_BIND=%s OMP_DYNAMIC=%s; team size %d\n",
      env_or("OMP_WAIT_POLICY", "unset"), env_or("GOMP_SPINCOUNT", "unset"),
      env_or("OMP_PROC_BIND", "unset"), env_or("OMP_DYNAMIC", "unset"), team);
  if (spin_count < 0)
    printf(
        "OpenMP idle threads spin (practically) forever "
        "(OMP_WAIT_POLICY=active or GOMP_SPINCOUNT=infinite):\n"
        "  they never park, so rk rounds compete with them for CPUs; "
        "the comparison is not fair\n");
  else
    printf(
        "OpenMP idle spin: %.0f pause loops x %.1f ns = %.2f ms before "
        "parking (rk: %ld us)\n",
        spin_count, pns, gomp_spin_ms, rk_spin_us);
  if (team != threads)
    printf("warning: OpenMP gave a team of %d threads, not %d\n", team,
           threads);
#else
  printf(
      "OpenMP: NOT AVAILABLE - bench_launch was built without OpenMP; "
      "only rk is measured\n");
#endif
  printf(
      "rounds %ld x %ld ops per side, warmup %ld, cooldown %ld ms before "
      "each round,\nalternating which side goes first%s\n",
      opt.rounds, opt.iters, opt.warmup, cooldown,
      opt.quick ? " (--quick: smoke run, numbers are rough)" : "");
  printf(
      "work config: %d chain steps = %.2f us on one thread (per block "
      "and per OpenMP thread)\n\n",
      spin_n, work_us);

  uint32_t t = (uint32_t)threads;
  rk_devptr_t spin_sink;
  RK_CHECK(
      rk_context_allocate(rk.ctx, (size_t)t * sizeof(uint32_t), &spin_sink));
  config_t configs[kNumConfigs];
  memset(configs, 0, sizeof configs);
  config_t *c = &configs[0];
  snprintf(c->name, sizeof c->name, "grid=%u,block=1", t);
  c->rk_desc = "empty(void)";
  c->omp_desc = "parallel, empty body";
  c->grid = t;
  c->block = 1;
  c->kernel = K_EMPTY;
  c->omp = OMP_EMPTY;
  c = &configs[1];
  snprintf(c->name, sizeof c->name, "grid=%u,block=64", 4 * t);
  c->rk_desc = "empty(void)";
  c->omp_desc = "parallel for over the blocks, 64-step inner loop";
  c->grid = 4 * t;
  c->block = 64;
  c->kernel = K_EMPTY;
  c->omp = OMP_BLOCKS;
  c = &configs[2];
  snprintf(c->name, sizeof c->name, "grid=%u,block=1,arg", t);
  c->rk_desc = "empty_arg(int), one i32 checked and packed";
  c->omp_desc = "parallel, reads one int";
  c->grid = t;
  c->block = 1;
  c->kernel = K_EMPTY_ARG;
  c->omp = OMP_ARG;
  c->args[0] = rk_arg_i32(7);
  c->nargs = 1;
  c = &configs[3];
  snprintf(c->name, sizeof c->name, "grid=%u,block=1,work", t);
  c->rk_desc = "spin(n, sink): the chain once per block";
  c->omp_desc = "parallel, each thread runs the chain once";
  c->grid = t;
  c->block = 1;
  c->kernel = K_SPIN;
  c->omp = OMP_SPIN;
  c->spin_n = spin_n;
  c->args[0] = rk_arg_i32(spin_n);
  c->args[1] = rk_arg_ptr(spin_sink);
  c->nargs = 2;
  if (opt.run_rk) rk_check_spin(&rk, &configs[3], spin_sink);

  bench_t b = {&opt, &rk, threads, cooldown};
  cpu_snapshot_t cpu_before = cpu_snapshot();
  double *rk_us = xcalloc((size_t)opt.rounds, sizeof *rk_us);
  double *omp_us = xcalloc((size_t)opt.rounds, sizeof *omp_us);
  double *rk_thr = xcalloc((size_t)opt.rounds, sizeof *rk_thr);
  result_t results[kNumConfigs];
  for (int i = 0; i < kNumConfigs; ++i)
    results[i] = run_config(&b, &configs[i], rk_us, omp_us, rk_thr);

  cpu_snapshot_t cpu_after = cpu_snapshot();
  double others_pct =
      print_interference(&cpu_before, &cpu_after, (int)info.compute_units);
  printf(
      "\nper-op time in microseconds (one op = launch+sync, or one "
      "parallel region)\n");
  printf("%-26s %-4s %10s %10s %10s %10s %10s\n", "config", "side", "median",
         "p10", "p90", "min", "max");
  for (int i = 0; i < kNumConfigs; ++i) {
    const config_t *ci = &configs[i];
    const result_t *r = &results[i];
    if (r->have_rk) print_row(ci->name, "rk", &r->rk);
    if (r->have_omp) print_row(r->have_rk ? "" : ci->name, "omp", &r->omp);
    if (r->have_rk && r->have_omp && r->omp.median > 0)
      printf("%-26s ratio rk/omp (medians) = %.2f\n", "",
             r->rk.median / r->omp.median);
    if (ci->kernel == K_SPIN) {
      printf("%-26s overhead above the %.2f us of work:", "", work_us);
      if (r->have_rk) printf(" rk %.3f us", r->rk.median - work_us);
      if (r->have_omp) printf(" omp %.3f us", r->omp.median - work_us);
      printf("\n");
    }
  }
  if (opt.run_rk) {
    printf(
        "\nhow many of rk's blocks ran at once (untimed: 10 launches of "
        "`where`, same shape\nand work, after every rk round; rounds "
        "'narrow' when the peak is below 90%% of\nmin(T, grid)):\n");
    for (int i = 0; i < kNumConfigs; ++i) {
      const result_t *r = &results[i];
      printf(
          "  %-24s blocks at once median %.2f (min %.2f, max %.2f), narrow "
          "rounds %ld/%ld\n",
          configs[i].name, r->rk_threads.median, r->rk_threads.min,
          r->rk_threads.max, r->rk_narrow_rounds, opt.rounds);
    }
    printf(
        "  An empty kernel's blocks are usually all run by the launching "
        "thread before a\n  worker sees the launch, so narrow rounds are "
        "expected there; in the work config\n  they mean the launch ran "
        "(partly) serially, e.g. because the launching thread\n  shared a "
        "CPU with a pinned worker. An OpenMP region always runs on all %d "
        "threads.\n",
        threads);
  }
  printf("\nwhat each side runs:\n");
  for (int i = 0; i < kNumConfigs; ++i)
    printf("  %-24s rk: %s | omp: %s\n", configs[i].name, configs[i].rk_desc,
           configs[i].omp_desc);
  printf("\n");

  for (int i = 0; i < kNumConfigs; ++i) {
    const config_t *ci = &configs[i];
    const result_t *r = &results[i];
    printf("RESULT launch config=%s threads=%d rounds=%ld iters=%ld", ci->name,
           threads, opt.rounds, opt.iters);
    if (r->have_rk)
      printf(" rk_median_us=%.3f rk_p10_us=%.3f rk_p90_us=%.3f", r->rk.median,
             r->rk.p10, r->rk.p90);
    else
      printf(" rk_median_us=na");
    if (r->have_omp)
      printf(" omp_median_us=%.3f omp_p10_us=%.3f omp_p90_us=%.3f",
             r->omp.median, r->omp.p10, r->omp.p90);
    else
      printf(" omp_median_us=na");
    if (r->have_rk && r->have_omp && r->omp.median > 0)
      printf(" ratio=%.3f", r->rk.median / r->omp.median);
    else
      printf(" ratio=na");
    if (ci->kernel == K_SPIN) printf(" work_us=%.3f", work_us);
    if (r->have_rk)
      printf(" rk_threads_per_launch=%.2f rk_narrow_rounds=%ld",
             r->rk_threads.median, r->rk_narrow_rounds);
    if (others_pct >= 0) printf(" others_cpu_pct=%.1f", others_pct);
    printf("\n");
  }
  if (opt.json) {
    rkb_json_str(&json, "backend", rk_backend_name(be));
    rkb_json_str(&json, "device", info.name);
    rkb_json_int(&json, "threads", threads);
    rkb_json_int(&json, "rounds", opt.rounds);
    rkb_json_int(&json, "iters", opt.iters);
    rkb_json_bool(&json, "quick", opt.quick);
    rkb_json_str(&json, "unit", "us per op (launch+sync, or one region)");
    rkb_json_num(&json, "work_us", work_us);
    rkb_json_num(&json, "others_cpu_pct", others_pct >= 0 ? others_pct : NAN);
    rkb_json_key(&json, "configs");
    rkb_json_array(&json);
    for (int i = 0; i < kNumConfigs; ++i) {
      const config_t *ci = &configs[i];
      const result_t *r = &results[i];
      rkb_json_object(&json);
      rkb_json_str(&json, "name", ci->name);
      rkb_json_str(&json, "rk_runs", ci->rk_desc);
      rkb_json_str(&json, "omp_runs", ci->omp_desc);
      if (r->have_rk) rkb_json_summary(&json, "rk_us", &r->rk);
      if (r->have_omp) rkb_json_summary(&json, "omp_us", &r->omp);
      if (r->have_rk && r->have_omp && r->omp.median > 0)
        rkb_json_num(&json, "ratio", r->rk.median / r->omp.median);
      if (r->have_rk) {
        rkb_json_num(&json, "rk_threads_per_launch", r->rk_threads.median);
        rkb_json_int(&json, "rk_narrow_rounds", r->rk_narrow_rounds);
      }
      rkb_json_end_object(&json);
    }
    rkb_json_end_array(&json);
    rkb_json_finish(&json);
  }

  free(rk_us);
  free(omp_us);
  free(rk_thr);
  RK_CHECK(rk_context_free(rk.ctx, spin_sink));
  RK_CHECK(rk_module_destroy(mod));
  RK_CHECK(rk_context_destroy(rk.ctx));
  RK_CHECK(rk_backend_destroy(be));
  return 0;
}
