/* bench_clock - what one process-wide hybrid logical clock costs next to a
 * clock per actor, measured side by side in one run.
 *
 * Every request the host sends ticks a clock and every response it takes
 * is merged into one (src/base/hlc.h: rk__hlc_tick, rk__hlc_observe). rk
 * used to keep one such word per actor; it now keeps one per process, so
 * that causality holds across actors (docs/actors.md, "Clocks"). The
 * difference is contention: threads talking to different actors now write
 * the same cache line.
 *
 * Measured, in rounds that rotate the order of the configurations:
 *   private, T threads: each thread ticks and observes its own word (what
 *     per-actor clocks cost when each thread has its own actor);
 *   shared, T threads:  all threads tick and observe one word (the process
 *     clock);
 * for T = 1 and 2 (threads pinned to different CPUs when there are two).
 * One "event pair" is a tick (a send) and an observe of a stamp one later
 * (a receive). For scale: an rk_actor_call round trip on the CPU backend.
 * Reported: ns per event pair per thread, median over rounds with p10-p90,
 * and the ratio shared / private.
 *
 *   bench_clock [--quick] [--json] [--rounds R] [--pairs N]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hlc.h"
#include "base/sys.h"
#include "bench_json.h"
#include "bench_stats.h"

enum { kMaxThreads = 2, kMaxRounds = 1000 };

typedef struct {
  _Alignas(128) uint64_t word;
} line_t;

static line_t g_words[kMaxThreads]; /* private clocks */
static line_t g_shared;             /* the shared one */

typedef struct {
  uint64_t *clock;
  long pairs;
  int cpu;
  rk__barrier_t *start;
  uint64_t ns;
} worker_t;

/* Best effort; macOS has no CPU affinity. */
static void pin(int cpu) {
  if (cpu >= 0) rk__pin_thread(pthread_self(), cpu);
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pin(w->cpu);
  rk__barrier_wait(w->start);
  const uint64_t t0 = rkb_now_ns();
  uint64_t sink = 0;
  for (long i = 0; i < w->pairs; ++i) {
    const uint64_t t = rk__hlc_tick(w->clock); /* a send */
    rk__hlc_observe(w->clock, t + 1);          /* its response */
    sink += t;
  }
  w->ns = rkb_now_ns() - t0;
  if (sink == 1) printf("?");
  return NULL;
}

/* ns per event pair per thread for `threads` threads on private or shared
 * words. */
static double run(int threads, bool shared, long pairs, const int *cpus,
                  int ncpus) {
  rk__barrier_t start;
  rk__barrier_init(&start, (unsigned)threads);
  worker_t w[kMaxThreads];
  pthread_t th[kMaxThreads];
  for (int i = 0; i < threads; ++i) {
    w[i] = (worker_t){shared ? &g_shared.word : &g_words[i].word, pairs,
                      ncpus >= threads ? cpus[i] : -1, &start, 0};
    pthread_create(&th[i], NULL, worker_main, &w[i]);
  }
  double total = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(th[i], NULL);
    total += (double)w[i].ns;
  }
  rk__barrier_destroy(&start);
  return total / threads / (double)pairs;
}

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

static int usage(void) {
  fprintf(stderr,
          "usage: bench_clock [--quick] [--json] [--rounds R] [--pairs N]\n"
          "  --rounds R  timed rounds of every configuration (30; quick: 5)\n"
          "  --pairs N   event pairs per thread per round (1000000; quick: "
          "100000)\n"
          "  --json      one JSON object on stdout (the table to stderr)\n");
  return 2;
}

int main(int argc, char **argv) {
  bool quick = false, json = false;
  long rounds = -1, pairs = -1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      if (rkb_parse_long(argv[++i], 1, kMaxRounds, &rounds)) return usage();
    } else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
      if (rkb_parse_long(argv[++i], 1, 1000000000L, &pairs)) return usage();
    } else {
      return usage();
    }
  }
  if (rounds < 0) rounds = quick ? 5 : 30;
  if (pairs < 0) pairs = quick ? 100000 : 1000000;
  rkb_json_t j;
  if (json) rkb_json_begin(&j, "clock");
  int cpus[kMaxThreads];
  const int ncpus = rk__allowed_cpus(cpus, kMaxThreads);
  printf("bench_clock: %ld rounds, %ld event pairs per thread; %d CPUs %s\n",
         rounds, pairs, ncpus,
         ncpus >= 2 ? "(threads pinned)" : "(one CPU: threads not pinned)");

  /* For scale: one actor call. */
  double call_ns = 0;
  {
    rk_backend_t *be = NULL;
    rk_context_t *ctx = NULL;
    rk_actor_t *a = NULL;
    if (rk_backend_open(RK_BACKEND_CPU, &be) == RK_OK &&
        rk_backend_create_context(be, 0, &ctx) == RK_OK &&
        rk_actor_launch(ctx, kSource, "add_one", NULL, &a) == RK_OK) {
      int q = 1, r = 0;
      const long n = quick ? 2000 : 20000;
      for (long i = 0; i < n / 10; ++i)
        rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
      const uint64_t t0 = rkb_now_ns();
      for (long i = 0; i < n; ++i)
        if (rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                          NULL) != RK_OK ||
            r != 2) {
          fprintf(stderr, "bench_clock: rk_actor_call failed: %s\n",
                  rk_last_error());
          return 1;
        }
      call_ns = (double)(rkb_now_ns() - t0) / (double)n;
    } else {
      fprintf(stderr, "bench_clock: no CPU actor: %s\n", rk_last_error());
      return 1;
    }
    rk_actor_destroy(a);
    rk_context_destroy(ctx);
    rk_backend_destroy(be);
  }

  /* Configurations: {threads, shared}. */
  const struct {
    int threads;
    bool shared;
    const char *name;
  } cfg[] = {{1, false, "private, 1 thread"},
             {1, true, "shared, 1 thread"},
             {2, false, "private, 2 threads"},
             {2, true, "shared, 2 threads"}};
  enum { kCfg = 4 };
  double *v[kCfg];
  for (int c = 0; c < kCfg; ++c) v[c] = calloc((size_t)rounds, sizeof **v);
  for (int c = 0; c < kCfg; ++c) /* warm-up */
    run(cfg[c].threads, cfg[c].shared, pairs / 10 + 1, cpus, ncpus);
  for (long r = 0; r < rounds; ++r)
    for (int k = 0; k < kCfg; ++k) {
      const int c = (int)((k + r) % kCfg);
      v[c][r] = run(cfg[c].threads, cfg[c].shared, pairs, cpus, ncpus);
    }
  rkb_summary_t s[kCfg];
  printf("%-22s %10s %10s %10s\n", "ns per send+receive", "median", "p10",
         "p90");
  for (int c = 0; c < kCfg; ++c) {
    s[c] = rkb_summarize(v[c], (size_t)rounds);
    printf("%-22s %10.2f %10.2f %10.2f\n", cfg[c].name, s[c].median, s[c].p10,
           s[c].p90);
  }
  /* The ratio round by round, for its spread. */
  double ratio1[kMaxRounds], ratio2[kMaxRounds];
  for (long r = 0; r < rounds; ++r) {
    ratio1[r] = v[1][r] / v[0][r];
    ratio2[r] = v[3][r] / v[2][r];
  }
  const rkb_summary_t r1 = rkb_summarize(ratio1, (size_t)rounds);
  const rkb_summary_t r2 = rkb_summarize(ratio2, (size_t)rounds);
  printf("shared / private, 1 thread:  %.2fx (p10-p90 %.2f-%.2f)\n", r1.median,
         r1.p10, r1.p90);
  printf("shared / private, 2 threads: %.2fx (p10-p90 %.2f-%.2f)\n", r2.median,
         r2.p10, r2.p90);
  printf("for scale, one rk_actor_call (CPU backend): %.0f ns\n", call_ns);
  if (json) {
    rkb_json_int(&j, "rounds", rounds);
    rkb_json_int(&j, "pairs", pairs);
    rkb_json_int(&j, "cpus", ncpus);
    rkb_json_num(&j, "call_ns", call_ns);
    rkb_json_key(&j, "configs");
    rkb_json_array(&j);
    for (int c = 0; c < kCfg; ++c) {
      rkb_json_object(&j);
      rkb_json_str(&j, "name", cfg[c].name);
      rkb_json_int(&j, "threads", cfg[c].threads);
      rkb_json_bool(&j, "shared", cfg[c].shared);
      rkb_json_summary(&j, "ns_per_pair", &s[c]);
      rkb_json_end_object(&j);
    }
    rkb_json_end_array(&j);
    rkb_json_summary(&j, "ratio_shared_private_1", &r1);
    rkb_json_summary(&j, "ratio_shared_private_2", &r2);
    rkb_json_finish(&j);
  }
  for (int c = 0; c < kCfg; ++c) free(v[c]);
  return 0;
}
