/* ulp_sweep.h - the accuracy of a vector float function, measured as its
 * largest error in units in the last place (ulp) over a dense sweep of a
 * float range against a double-precision reference. Header-only; used by
 * bench/ops/bench_transcendental and tests/ops/test_ops_ulp.
 *
 *   rkb_ulp_t u;
 *   rkb_ulp_init(&u);
 *   float x[RKB_SWEEP_CHUNK], y[RKB_SWEEP_CHUNK];
 *   rkb_sweep_t s = rkb_sweep_begin(-10.0f, 10.0f, 61);
 *   size_t got;
 *   while ((got = rkb_sweep_next(&s, x, RKB_SWEEP_CHUNK)) > 0) {
 *     my_tanh(got, x, y);
 *     for (size_t i = 0; i < got; ++i) rkb_ulp_add(&u, x[i], y[i], tanh(x[i]));
 *   }
 *   printf("max %.2f ulp at %g\n", u.max, u.worst_x);
 *
 * The sweep visits every `stride`-th float of [lo, hi] in order of value,
 * stepping through bit patterns, so every binade (tiny, subnormal and large
 * values alike) gets the same share of samples; lo and hi themselves are
 * always visited. The error of y against the exact value r is |y - r| / ulp(r),
 * where ulp(r) is the spacing of floats at r (2^-149 in the subnormal
 * range). A reference that rounds to an infinity needs exactly that infinity
 * (anything else is an infinite error), and a NaN reference needs a NaN. */
#ifndef RK_BENCH_ULP_SWEEP_H_
#define RK_BENCH_ULP_SWEEP_H_

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { RKB_SWEEP_CHUNK = 4096 };

/* Floats in an order-preserving unsigned encoding: a < b as floats iff
 * key(a) < key(b) (for non-NaN values; -0 sorts before +0). */
static inline uint32_t rkb_float_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
static inline float rkb_key_float(uint32_t k) {
  uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

typedef struct rkb_sweep {
  uint64_t next, last, stride;
  int done;
} rkb_sweep_t;

static inline rkb_sweep_t rkb_sweep_begin(float lo, float hi, uint32_t stride) {
  rkb_sweep_t s;
  s.next = rkb_float_key(lo);
  s.last = rkb_float_key(hi);
  s.stride = stride ? stride : 1;
  s.done = s.next > s.last;
  return s;
}

/* Up to `cap` more points into x; 0 at the end. */
static inline size_t rkb_sweep_next(rkb_sweep_t *s, float *x, size_t cap) {
  size_t got = 0;
  while (!s->done && got < cap) {
    x[got++] = rkb_key_float((uint32_t)s->next);
    if (s->next == s->last)
      s->done = 1;
    else if (s->next + s->stride > s->last)
      s->next = s->last; /* always end on hi */
    else
      s->next += s->stride;
  }
  return got;
}

/* The number of points a sweep of [lo, hi] with this stride visits. */
static inline uint64_t rkb_sweep_count(float lo, float hi, uint32_t stride) {
  uint64_t a = rkb_float_key(lo), b = rkb_float_key(hi);
  if (a > b) return 0;
  uint64_t n = (b - a) / (stride ? stride : 1) + 1;
  return (b - a) % (stride ? stride : 1) ? n + 1 : n;
}

/* |y - ref| in ulps of ref (see the top of the file). */
static inline double rkb_ulp_error(float y, double ref) {
  if (isnan(ref)) return isnan(y) ? 0.0 : INFINITY;
  if (isnan(y)) return INFINITY;
  float rf = (float)ref;
  if (isinf(rf) || isinf(y)) return y == rf ? 0.0 : INFINITY;
  int e = ref == 0.0 ? -126 : ilogb(ref);
  if (e < -126) e = -126;
  return fabs((double)y - ref) / ldexp(1.0, e - 23);
}

typedef struct rkb_ulp {
  double max;      /* largest error seen */
  float worst_x;   /* the input that gave it */
  uint64_t points; /* inputs checked */
} rkb_ulp_t;

static inline void rkb_ulp_init(rkb_ulp_t *u) {
  u->max = 0.0;
  u->worst_x = 0.0f;
  u->points = 0;
}

static inline void rkb_ulp_add(rkb_ulp_t *u, float x, float y, double ref) {
  double e = rkb_ulp_error(y, ref);
  ++u->points;
  if (e > u->max || (e != e)) {
    u->max = e;
    u->worst_x = x;
  }
}

/* Double-precision references. */
static inline double rkb_ref_exp(double x) { return exp(x); }
static inline double rkb_ref_sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
static inline double rkb_ref_tanh(double x) { return tanh(x); }
static inline double rkb_ref_log(double x) { return log(x); }

#endif /* RK_BENCH_ULP_SWEEP_H_ */
