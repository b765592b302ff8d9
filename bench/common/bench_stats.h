/* bench_stats.h - small header-only helpers shared by the benchmarks in
 * bench/: a monotonic clock, order statistics over per-round samples, and
 * strict parsing of numeric command-line values.
 *
 *   double per_op_us[ROUNDS];            // one value per timed round
 *   rkb_summary_t s = rkb_summarize(per_op_us, ROUNDS);
 *   printf("median %.3f us (p10 %.3f, p90 %.3f)\n", s.median, s.p10, s.p90);
 *
 * Compile with _GNU_SOURCE or _POSIX_C_SOURCE >= 199309L (clock_gettime).
 * Percentiles use linear interpolation between closest ranks, so the median
 * of an even count is the mean of the two middle values. */
#ifndef RK_BENCH_STATS_H_
#define RK_BENCH_STATS_H_

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t rkb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct rkb_summary {
  size_t n;
  double min, p10, median, p90, max, mean;
} rkb_summary_t;

static int rkb_cmp_double_(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile (0 <= q <= 1) of n sorted values. */
static inline double rkb_quantile_sorted(const double *sorted, size_t n,
                                         double q) {
  if (n == 0) return 0.0;
  if (q <= 0.0) return sorted[0];
  if (q >= 1.0) return sorted[n - 1];
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  double frac = pos - (double)lo;
  if (lo + 1 >= n) return sorted[n - 1];
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

/* Summarises n values (left unchanged; a sorted copy is made). All zero when
 * n is 0 or the copy cannot be allocated. */
static inline rkb_summary_t rkb_summarize(const double *values, size_t n) {
  rkb_summary_t s;
  memset(&s, 0, sizeof s);
  if (n == 0) return s;
  double *v = malloc(n * sizeof *v);
  if (!v) return s;
  memcpy(v, values, n * sizeof *v);
  qsort(v, n, sizeof *v, rkb_cmp_double_);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += v[i];
  s.n = n;
  s.min = v[0];
  s.max = v[n - 1];
  s.p10 = rkb_quantile_sorted(v, n, 0.10);
  s.median = rkb_quantile_sorted(v, n, 0.50);
  s.p90 = rkb_quantile_sorted(v, n, 0.90);
  s.mean = sum / (double)n;
  free(v);
  return s;
}

/* Parses a whole decimal string as an integer in [lo, hi]; 0 on success,
 * -1 when it is empty, has trailing characters or is out of range. */
static inline int rkb_parse_long(const char *text, long lo, long hi,
                                 long *out) {
  if (!text || !*text) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

#endif /* RK_BENCH_STATS_H_ */
