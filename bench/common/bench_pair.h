/* bench_pair.h - the driver shared by the benchmarks that put rk next to a
 * backend's own API (bench/backends/): command-line parsing, answer checks,
 * timed rounds of both sides and the printed table. Header-only, for one
 * translation unit per program (it keeps a failure count of its own).
 *
 *   long rounds = 21, iters = 300;
 *   if (rkb_pair_args(argc, argv, 5, 30, &rounds, &iters) != 0) return 2;
 *   ...
 *   rkb_pair_device(info.name);                // for --json
 *   rkb_pair_table("raw OpenCL");
 *   rkb_pair_measure("dispatch", rk_dispatch, &s, raw_dispatch, &raw,
 *                    rounds, iters, a, b);
 *   ...
 *   return rkb_pair_exit();
 *
 * A side is `double fn(void *side, int iters)`: it runs `iters` operations,
 * checks every answer (RKB_CHECK) and returns microseconds per operation.
 *
 * --json: rkb_pair_exit prints every row as one JSON object on stdout; the
 * table goes to stderr meanwhile (bench_json.h). */
#ifndef RK_BENCH_PAIR_H_
#define RK_BENCH_PAIR_H_

#include <stdio.h>
#include <string.h>

#include "bench_json.h"
#include "bench_stats.h"
#include "rk/actor.h"
#include "rk/rk.h"

/* Checks that failed so far. */
static int rkb_failures __attribute__((unused));

/* --json: the rows so far, written by rkb_pair_exit. */
enum { RKB_PAIR_MAX_ROWS = 32 };
typedef struct rkb_pair_result {
  char name[32];
  rkb_summary_t rk, raw;
} rkb_pair_result_t;
static struct {
  bool on;
  rkb_json_t j;
  long rounds, iters;
  char device[256], raw_name[64];
  rkb_pair_result_t rows[RKB_PAIR_MAX_ROWS];
  int nrows;
} rkb_pair_json __attribute__((unused));

/* Counts and prints a failed check; the benchmark goes on. */
#define RKB_CHECK(cond, ...)                \
  do {                                      \
    if (!(cond)) {                          \
      printf("CHECK FAILED (%s): ", #cond); \
      printf(__VA_ARGS__);                  \
      printf("\n");                         \
      ++rkb_failures;                       \
    }                                       \
  } while (0)

/* One side of a row: `iters` operations, microseconds per operation. */
typedef double (*rkb_side_fn)(void *side, int iters);

/* Parses [--quick] [--rounds N] [--iters N] [--json] into *rounds and
 * *iters (left as they are unless given; --quick sets quick_rounds and
 * quick_iters). 0 on success; otherwise prints the usage and returns -1. */
static inline int rkb_pair_args(int argc, char **argv, long quick_rounds,
                                long quick_iters, long *rounds, long *iters) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      *rounds = quick_rounds;
      *iters = quick_iters;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1, 10000, rounds) == 0) {
      ++i;
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1, 10000000, iters) == 0) {
      ++i;
    } else if (strcmp(argv[i], "--json") == 0) {
      rkb_pair_json.on = true;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--rounds N] [--iters N] [--json]\n",
              argv[0]);
      return -1;
    }
  }
  if (rkb_pair_json.on) {
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    if (strncmp(base, "bench_", 6) == 0) base += 6;
    if (!rkb_json_begin(&rkb_pair_json.j, base)) {
      fprintf(stderr, "%s: --json: cannot duplicate stdout\n", argv[0]);
      return -1;
    }
    rkb_pair_json.rounds = *rounds;
    rkb_pair_json.iters = *iters;
  }
  return 0;
}

/* The device measured, for --json. */
static inline void rkb_pair_device(const char *name) {
  snprintf(rkb_pair_json.device, sizeof rkb_pair_json.device, "%s", name);
}

/* Prints the table's heading; `raw_name` labels the second column. */
static inline void rkb_pair_table(const char *raw_name) {
  snprintf(rkb_pair_json.raw_name, sizeof rkb_pair_json.raw_name, "%s",
           raw_name);
  printf("microseconds per operation: median (p10-p90); ratio = rk / raw\n");
  printf("%-10s %32s %32s %7s\n", "operation", "rk", raw_name, "ratio");
}

/* Prints one row: both sides' medians and p10-p90 over `rounds` values, and
 * the ratio of the medians. */
static inline void rkb_pair_row(const char *name, const double *rk,
                                const double *raw, int rounds) {
  rkb_summary_t a = rkb_summarize(rk, (size_t)rounds);
  rkb_summary_t b = rkb_summarize(raw, (size_t)rounds);
  if (rkb_pair_json.nrows < RKB_PAIR_MAX_ROWS) {
    rkb_pair_result_t *r = &rkb_pair_json.rows[rkb_pair_json.nrows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->rk = a;
    r->raw = b;
  }
  printf("%-10s %10.2f (%8.2f-%8.2f) %10.2f (%8.2f-%8.2f) %7.2f\n", name,
         a.median, a.p10, a.p90, b.median, b.p10, b.p90,
         b.median > 0 ? a.median / b.median : 0.0);
}

/* Warms both sides up (5 operations each), then alternates `rounds` rounds
 * of `iters` operations of each into a[] and b[] and prints the row. */
static inline void rkb_pair_measure(const char *name, rkb_side_fn rk_op,
                                    void *rk_side, rkb_side_fn raw_op,
                                    void *raw_side, long rounds, long iters,
                                    double *a, double *b) {
  rk_op(rk_side, 5);
  raw_op(raw_side, 5);
  for (long k = 0; k < rounds; ++k) {
    a[k] = rk_op(rk_side, (int)iters);
    b[k] = raw_op(raw_side, (int)iters);
  }
  rkb_pair_row(name, a, b, (int)rounds);
}

/* Opens device 0's backend `kind`; NULL after printing "SKIPPED: no
 * <device>: <reason>" (the caller exits 77) when it cannot be opened or has
 * no device, `none` being the reason in the latter case. */
static inline rk_backend_t *rkb_pair_open(rk_backend_kind_t kind,
                                          const char *device,
                                          const char *none) {
  rk_backend_t *be = NULL;
  if (rk_backend_open(kind, &be) != RK_OK || rk_backend_device_count(be) == 0) {
    printf("SKIPPED: no %s: %s\n", device, be ? none : rk_last_error());
    rk_backend_destroy(be);
    return NULL;
  }
  return be;
}

/* What the rk side of the common rows needs. */
typedef struct rkb_rk_side {
  rk_context_t *ctx;
  rk_function_t *empty; /* a kernel with no parameters that does nothing */
  rk_devptr_t buf;      /* 64 bytes */
} rkb_rk_side_t;

/* "dispatch", rk side: `empty` launched on the default stream and waited
 * for (rk_function_launch + rk_context_synchronize). `side` is an
 * rkb_rk_side_t *. */
static inline double rkb_rk_dispatch(void *side, int iters) {
  rkb_rk_side_t *s = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    rk_status_t st = rk_function_launch(s->empty, rk_dim3(1, 1, 1),
                                        rk_dim3(1, 1, 1), 0, NULL, NULL, 0);
    if (st == RK_OK) st = rk_context_synchronize(s->ctx);
    if (st != RK_OK) {
      RKB_CHECK(false, "rk dispatch %d: %s", i, rk_last_error());
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* "roundtrip", rk side: 64 bytes copied to `buf` and back
 * (rk_context_copy_to_device + rk_context_copy_to_host). */
static inline double rkb_rk_roundtrip(void *side, int iters) {
  rkb_rk_side_t *s = side;
  unsigned char out[64], in[64];
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, sizeof out);
    rk_status_t st = rk_context_copy_to_device(s->ctx, s->buf, out, sizeof out);
    if (st == RK_OK)
      st = rk_context_copy_to_host(s->ctx, in, s->buf, sizeof in);
    if (st != RK_OK || in[0] != (unsigned char)(i & 0xff) || in[63] != in[0]) {
      RKB_CHECK(false, "rk round trip %d: %s", i, rk_status_name(st));
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* The rk side of the "actor" rows: rk_actor_call with an int request that
 * the handler answers with request + 1. `actor` is an rk_actor_t *. */
static inline double rkb_actor_calls(void *actor, int iters) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q = i, a = -1;
    rk_status_t st = rk_actor_call((rk_actor_t *)actor, &q, sizeof q, &a,
                                   sizeof a, RK_TIMEOUT_INFINITE, NULL);
    if (st != RK_OK || a != i + 1) {
      RKB_CHECK(false, "rk actor call %d: %s, answer %d", i, rk_status_name(st),
                a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* Launches handler `name` of `source` as an RK_ACTOR_PERSISTENT actor;
 * NULL, with the reason in why[cap], when it cannot start. */
static inline rk_actor_t *rkb_persistent_actor(rk_context_t *ctx,
                                               const char *source,
                                               const char *name, char *why,
                                               size_t cap) {
  rk_actor_options_t ao;
  rk_actor_options_init(&ao);
  ao.mode = RK_ACTOR_PERSISTENT;
  rk_actor_t *actor = NULL;
  rk_status_t s = rk_actor_launch(ctx, source, name, &ao, &actor);
  if (s != RK_OK) {
    snprintf(why, cap, "%s: %s", rk_status_name(s), rk_last_error());
    return NULL;
  }
  return actor;
}

/* Prints how the actor ran its handler, under the table. */
static inline void rkb_actor_note(rk_actor_t *actor) {
  rk_actor_stats_t st;
  if (rk_actor_stats(actor, &st) == RK_OK)
    printf(
        "           (actor execution: %s, %llu batches for %llu "
        "requests)\n",
        rk_actor_execution_name(st.execution), (unsigned long long)st.batches,
        (unsigned long long)st.processed);
}

/* The exit status: 1 if a check failed (with a count printed), else 0.
 * With --json, prints the rows (microseconds per operation) first. */
static inline int rkb_pair_exit(void) {
  if (rkb_pair_json.on) {
    rkb_json_t *j = &rkb_pair_json.j;
    rkb_json_str(j, "device", rkb_pair_json.device);
    rkb_json_str(j, "raw", rkb_pair_json.raw_name);
    rkb_json_int(j, "rounds", rkb_pair_json.rounds);
    rkb_json_int(j, "iters", rkb_pair_json.iters);
    rkb_json_int(j, "failures", rkb_failures);
    rkb_json_str(j, "unit", "us per operation");
    rkb_json_key(j, "rows");
    rkb_json_array(j);
    for (int i = 0; i < rkb_pair_json.nrows; ++i) {
      const rkb_pair_result_t *r = &rkb_pair_json.rows[i];
      rkb_json_object(j);
      rkb_json_str(j, "row", r->name);
      rkb_json_summary(j, "rk_us", &r->rk);
      rkb_json_summary(j, "raw_us", &r->raw);
      rkb_json_num(j, "ratio",
                   r->raw.median > 0 ? r->rk.median / r->raw.median : NAN);
      rkb_json_end_object(j);
    }
    rkb_json_end_array(j);
    rkb_json_finish(j);
    rkb_pair_json.on = false;
  }
  if (rkb_failures) printf("%d check(s) FAILED\n", rkb_failures);
  return rkb_failures ? 1 : 0;
}

#endif /* RK_BENCH_PAIR_H_ */
