/* The SIMD kernels, written once with the compiler's vector extensions and
 * instantiated per instruction set. A translation unit defines
 *
 *   RK_SIMD_LANES  floats per vector (8 for AVX2, 16 for AVX-512, 4 for NEON)
 *   RK_SIMD_TABLE  the name of the rk__ops_cpu_t to define
 *   RK_SIMD_NAME   its name string;  RK_SIMD_ISA  its rk_isa_t
 *
 * and turns on the instruction set for the whole file (a target pragma), so
 * the rest of rk needs no -m flags and this code runs only after the run-time
 * check in ops_isa.c. Loads and stores go through memcpy, which compiles to
 * unaligned vector moves: any pointer alignment works. Tails (n not a
 * multiple of the width) go through a vector-sized stack buffer, so every
 * element is computed by the same instructions.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/ops_internal.h"

#define VL RK_SIMD_LANES
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
/* Bit patterns, where shifts and wrap-around must be defined. */
typedef uint32_t vu __attribute__((vector_size(VL * 4)));

static inline vf ld(const float *p) {
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void st(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline vf splat(float s) { return (vf){0} + s; }
/* m ? a : b, lane by lane (m all ones or all zeros). */
static inline vf sel(vi m, vf a, vf b) {
  return (vf)((m & (vi)a) | (~m & (vi)b));
}

/* ---- Transcendental functions -------------------------------------------
 * Each is branch-free: special inputs (NaN, infinities, the ends of the
 * range) are masked in after the polynomial, so every lane costs the same.
 * Polynomials are evaluated in Estrin's scheme (pairs of terms combined by
 * powers of r) so that the dependency chain is short and the FMA units stay
 * busy. Measured accuracy (max ulp over a dense sweep) is in docs/ops.md and
 * checked by tests/ops/test_ops_ulp.c. */

static inline vf vabs(vf x) { return (vf)((vi)x & 0x7fffffff); }
/* m ? 0 : x */
static inline vf zero_if(vi m, vf x) { return (vf)(~m & (vi)x); }

/* A translation unit may define these with one instruction each (see
 * ops_avx2.c, ops_avx512.c); the fallbacks have the same results:
 *   RK_SIMD_MAX(a, b), RK_SIMD_MIN(a, b)  a > b ? a : b (a < b ? a : b),
 *       b when either is NaN (x86's maxps/minps)
 *   RK_SIMD_FMA(a, b, c)  a b + c rounded once (the fallback relies on
 *       contraction; the corrections in sigmoid and tanh need it fused)
 *   RK_SIMD_ROUND(v)      v rounded to the nearest integer, |v| < 2^22
 *   RK_SIMD_LDEXP(p, nf)  p 2^nf for p in [1/2, 2], nf an integer in
 *       [-151, 129], overflow to +inf and underflow to subnormals rounded
 *       once (or twice, in the fallback, which rounds p 2^ceil(nf/2) first:
 *       still exact for p 2^nf >= 2^-126) */
#ifndef RK_SIMD_MAX
#define RK_SIMD_MAX(a, b) sel((a) > (b), (a), (b))
#endif
#ifndef RK_SIMD_MIN
#define RK_SIMD_MIN(a, b) sel((a) < (b), (a), (b))
#endif
#ifndef RK_SIMD_FMA
#define RK_SIMD_FMA(a, b, c) ((a) * (b) + (c))
#endif
#ifndef RK_SIMD_ROUND
#define RK_SIMD_ROUND(v) (((v) + 12582912.0f) - 12582912.0f)
#endif
#ifndef RK_SIMD_LDEXP
static inline vf ldexp_2(vf p, vf nf) {
  vi n = __builtin_convertvector(nf, vi);
  vi n1 = n >> 1;
  vf s1 = (vf)((vu)(n1 + 127) << 23);
  vf s2 = (vf)((vu)(n - n1 + 127) << 23);
  return p * s1 * s2;
}
#define RK_SIMD_LDEXP(p, nf) ldexp_2((p), (nf))
#endif

/* x = nf ln2 + r with |r| <= ln2/2 and nf an integer (ln2 split in two so
 * nf ln2 is exact). */
static inline vf reduce_ln2(vf x, vf *nf) {
  vf n = RK_SIMD_ROUND(x * 1.44269504088896341f);
  vf r = x - n * 0.693145751953125f;
  *nf = n;
  return r - n * 1.428606765330187045e-06f;
}

/* e^r - 1 - r for |r| <= ln2/2: r^2 Q(r) with Q a degree-4 near-minimax
 * fit of (e^r - 1 - r) / r^2 (coefficients rounded to float; relative error
 * of 1 + r + r^2 Q below 0.2 ulp). */
static inline vf expm1_tail(vf r) {
  vf r2 = r * r;
  vf q01 = r * 0.16666576266288757f + 0.5f;
  vf q23 = r * 0.008363190107047558f + 0.041666556149721146f;
  vf q = (r2 * 0.0013926198007538915f + q23) * r2 + q01;
  return q * r2;
}

/* exp(x): e^r as 1 + (r + r^2 Q(r)), times 2^n. x is first clamped to
 * [-104, 89] (so NaN passes through the clamp and the arithmetic, +inf
 * becomes 2^128 = +inf and -inf 0); results down to the smallest subnormal
 * and up to FLT_MAX come out right. */
static inline vf v_exp(vf x) {
  vf xc = RK_SIMD_MIN(splat(89.0f), RK_SIMD_MAX(splat(-104.0f), x));
  vf nf;
  vf r = reduce_ln2(xc, &nf);
  vf p = (expm1_tail(r) + r) + 1.0f;
  return RK_SIMD_LDEXP(p, nf);
}

/* sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, with
 * e = e^-|x| <= 1 in both: nothing overflows, and results for x < -87
 * keep their subnormal digits instead of becoming 0. */
static inline vf v_sigmoid(vf x) {
  vf e = v_exp((vf)((vi)x | (int32_t)0x80000000)); /* e^-|x| */
  vf num = sel(x < 0.0f, e, splat(1.0f));
  /* num / (1 + e), corrected once for the rounding of 1 + e (its error dd
   * is exact since e <= 1) and of the division, as in v_tanh. */
  vf d = 1.0f + e;
  vf inv = 1.0f / d;
  vf q = num * inv;
  vf dd = (1.0f - d) + e;
  vf res = RK_SIMD_FMA(-q, d, num) - q * dd;
  return RK_SIMD_FMA(res, inv, q);
}

/* tanh(x) = sign(x) e / (e + 2) with e = expm1(2|x|): no cancellation near
 * 0 (e is computed without forming e^2|x| - 1), and |x| is clamped at 9.5,
 * past which tanh rounds to 1. expm1(u) = 2^n expm1(r) + (2^n - 1), with
 * 2^n - 1 exact for the n < 28 that occur. The quotient is corrected once
 * for the rounding of e + 2 and of the division (with d = e + 2 rounded
 * and its error dd found exactly, t = q + (e - q d - q dd) / d), so only
 * e's own error, damped by 2 / (e + 2), remains. NaN stays NaN. */
static inline vf v_tanh(vf x) {
  vf a = vabs(x);
  vi sign = (vi)x ^ (vi)a;                 /* the sign bit */
  vf u = RK_SIMD_MIN(splat(19.0f), a + a); /* NaN stays NaN */
  vf nf;
  vf r = reduce_ln2(u, &nf);
  vf em = expm1_tail(r) + r;
  vf s = (vf)((vu)(__builtin_convertvector(nf, vi) + 127) << 23);
  vf e = RK_SIMD_FMA(em, s, s - 1.0f);
  vf d = e + 2.0f;
  vf inv = 1.0f / d;
  vf q = e * inv;
  /* (e + 2) - d exactly: the larger of e and 2 minus d, plus the other. */
  vi big = e > 2.0f;
  vf dd = sel(big, (e - d) + 2.0f, (2.0f - d) + e);
  vf res = RK_SIMD_FMA(-q, d, e) - q * dd;
  vf t = RK_SIMD_FMA(res, inv, q);
  return (vf)((vi)t | sign);
}

/* ln(x): x = 2^k m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by
 * 2^23 first), f = m - 1 (exact), ln(1 + f) = f - f^2/2 + f^3 P(f) with P
 * a degree-7 near-minimax fit (relative error below 0.35 ulp), and k ln2
 * added in two parts. 0 gives -inf, +inf gives +inf, negatives and NaN
 * give NaN. */
#ifdef RK_SIMD_HAS_GETMANT
/* With instructions that split a float into exponent and mantissa
 * (AVX-512's getexp/getmant, which also take subnormals, zeros, infinities,
 * negatives and NaN to the right results through the formula below):
 * x = 2^k m with m in [3/4, 3/2), k = getexp(x) (+1 when m < 1), f = m - 1 in
 * [-1/4, 1/2), and P of degree 8 fitted to that interval (relative error
 * below 0.15 ulp). */
static inline vf v_log(vf x) {
  vf m = RK_SIMD_GETMANT(x);
  vf kf = RK_SIMD_GETEXP(x) + (vf)((m < 1.0f) & (vi)splat(1.0f));
  vf f = m - 1.0f;
  vf f2 = f * f, f4 = f2 * f2;
  vf p01 = f * -0.25000056624412537f + 0.3333333432674408f;
  vf p23 = f * -0.16660809516906738f + 0.20000141859054565f;
  vf p45 = f * -0.1263936161994934f + 0.14268255233764648f;
  vf p67 = f * -0.09562506526708603f + 0.11681360751390457f;
  vf p = ((p23 * f2 + p01) + (p67 * f2 + p45) * f4) +
         (f4 * f4) * 0.04287724941968918f;
  vf lo = (p * f - 0.5f) * f2 + kf * 1.428606765330187045e-06f;
  return kf * 0.693145751953125f + (f + lo);
}
#else
static inline vf v_log(vf x) {
  vi tiny = x < 1.17549435e-38f;
  vf xs = sel(tiny, x * 8388608.0f, x);
  vu ix = (vu)xs - 0x3f3504f3u;
  vi k = ((vi)ix >> 23) - (tiny & 23);
  vf f = (vf)((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  vf f2 = f * f, f4 = f2 * f2;
  vf p01 = f * -0.25000306963920593f + 0.3333333134651184f;
  vf p23 = f * -0.16641247272491455f + 0.2000104784965515f;
  vf p45 = f * -0.12998490035533905f + 0.14214356243610382f;
  vf p67 = f * -0.07903643697500229f + 0.1262373924255371f;
  vf p = (p23 * f2 + p01) + (p67 * f2 + p45) * f4;
  vf kf = __builtin_convertvector(k, vf);
  vf lo = (p * f - 0.5f) * f2 + kf * 1.428606765330187045e-06f;
  vf y = kf * 0.693145751953125f + (f + lo);
  y = sel(x == INFINITY, x, y);
  y = sel(x == 0.0f, splat(-INFINITY), y);
  return sel(x >= 0.0f, y, splat(NAN)); /* negatives and NaN */
}
#endif

/* ---- Element-wise ------------------------------------------------------- */

/* Defines fname(n, a, b, out) with out = expr(a, b) lane by lane: two
 * vectors per step, then one, then the tail on a zero-padded copy. */
#define RK_SIMD_BINARY(fname, expr)                                         \
  static void fname(size_t n, const float *a, const float *b, float *out) { \
    size_t i = 0;                                                           \
    for (; i + 2 * VL <= n; i += 2 * VL) {                                  \
      vf x0 = ld(a + i), y0 = ld(b + i);                                    \
      vf x1 = ld(a + i + VL), y1 = ld(b + i + VL);                          \
      st(out + i, (vf)(expr(x0, y0)));                                      \
      st(out + i + VL, (vf)(expr(x1, y1)));                                 \
    }                                                                       \
    for (; i + VL <= n; i += VL)                                            \
      st(out + i, (vf)(expr(ld(a + i), ld(b + i))));                        \
    if (i < n) {                                                            \
      float ta[VL] = {0}, tb[VL] = {0}, to[VL];                             \
      memcpy(ta, a + i, (n - i) * sizeof(float));                           \
      memcpy(tb, b + i, (n - i) * sizeof(float));                           \
      st(to, (vf)(expr(ld(ta), ld(tb))));                                   \
      memcpy(out + i, to, (n - i) * sizeof(float));                         \
    }                                                                       \
  }

#define E_ADD(x, y) ((x) + (y))
#define E_SUB(x, y) ((x) - (y))
#define E_MUL(x, y) ((x) * (y))
RK_SIMD_BINARY(v_add, E_ADD)
RK_SIMD_BINARY(v_sub, E_SUB)
RK_SIMD_BINARY(v_mul, E_MUL)

/* The same for fname(n, x, y) with y = expr(x). */
#define RK_SIMD_UNARY(fname, expr)                           \
  static void fname(size_t n, const float *x, float *y) {    \
    size_t i = 0;                                            \
    for (; i + 2 * VL <= n; i += 2 * VL) {                   \
      vf x0 = ld(x + i), x1 = ld(x + i + VL);                \
      st(y + i, expr(x0));                                   \
      st(y + i + VL, expr(x1));                              \
    }                                                        \
    for (; i + VL <= n; i += VL) st(y + i, expr(ld(x + i))); \
    if (i < n) {                                             \
      float tx[VL] = {0}, ty[VL];                            \
      memcpy(tx, x + i, (n - i) * sizeof(float));            \
      st(ty, expr(ld(tx)));                                  \
      memcpy(y + i, ty, (n - i) * sizeof(float));            \
    }                                                        \
  }

/* relu: x > 0 ? x : 0, so NaN gives 0 as in the scalar code. */
static inline vf v_relu1(vf x) { return sel(x > 0.0f, x, splat(0.0f)); }
RK_SIMD_UNARY(v_relu, v_relu1)
RK_SIMD_UNARY(v_sigm, v_sigmoid)
RK_SIMD_UNARY(v_expk, v_exp)
RK_SIMD_UNARY(v_tanh_own, v_tanh)

/* tanh: libmvec's where the translation unit names its function
 * (RK_SIMD_MVEC_TANH, a member of rk__ops_vecmath_t with this width) and
 * it loaded, else rk's own. */
static void v_tanhk(size_t n, const float *x, float *y) {
#ifdef RK_SIMD_MVEC_TANH
  vf (*f)(vf);
  *(void **)&f = rk__ops_vecmath()->RK_SIMD_MVEC_TANH;
  if (f) {
    size_t i = 0;
    for (; i + VL <= n; i += VL) st(y + i, f(ld(x + i)));
    if (i < n) {
      float tx[VL] = {0}, ty[VL];
      memcpy(tx, x + i, (n - i) * sizeof(float));
      st(ty, f(ld(tx)));
      memcpy(y + i, ty, (n - i) * sizeof(float));
    }
    return;
  }
#endif
  v_tanh_own(n, x, y);
}
RK_SIMD_UNARY(v_logk, v_log)

static void v_scale(size_t n, float alpha, const float *x, float *y) {
  vf s = splat(alpha);
  size_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    vf x0 = ld(x + i), x1 = ld(x + i + VL);
    st(y + i, s * x0);
    st(y + i + VL, s * x1);
  }
  for (; i < n; ++i) y[i] = alpha * x[i];
}

static void v_axpy(size_t n, float alpha, const float *x, float *y) {
  vf s = splat(alpha);
  size_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    vf x0 = ld(x + i), x1 = ld(x + i + VL);
    vf y0 = ld(y + i), y1 = ld(y + i + VL);
    st(y + i, s * x0 + y0);
    st(y + i + VL, s * x1 + y1);
  }
  if (i < n) {
    float tx[2 * VL] = {0}, ty[2 * VL] = {0};
    memcpy(tx, x + i, (n - i) * sizeof(float));
    memcpy(ty, y + i, (n - i) * sizeof(float));
    st(ty, s * ld(tx) + ld(ty));
    st(ty + VL, s * ld(tx + VL) + ld(ty + VL));
    memcpy(y + i, ty, (n - i) * sizeof(float));
  }
}

static void v_fma(size_t n, const float *a, const float *b, const float *c,
                  float *out) {
  size_t i = 0;
  for (; i + VL <= n; i += VL) st(out + i, ld(a + i) * ld(b + i) + ld(c + i));
  if (i < n) {
    float ta[VL] = {0}, tb[VL] = {0}, tc[VL] = {0}, to[VL];
    memcpy(ta, a + i, (n - i) * sizeof(float));
    memcpy(tb, b + i, (n - i) * sizeof(float));
    memcpy(tc, c + i, (n - i) * sizeof(float));
    st(to, ld(ta) * ld(tb) + ld(tc));
    memcpy(out + i, to, (n - i) * sizeof(float));
  }
}

/* ---- Reductions --------------------------------------------------------- */

static inline double hsum(vf v) {
  double s = 0.0;
  for (int l = 0; l < VL; ++l) s += v[l];
  return s;
}

/* Four float accumulators over blocks of RK_SIMD_BLOCK elements; each
 * block's sum is added to a double, so the float error stays bounded by the
 * block length (RK_SIMD_BLOCK / (4 VL) additions per lane) whatever n is. */
#define RK_SIMD_BLOCK 4096

static double v_dot(size_t n, const float *x, const float *y) {
  double total = 0.0;
  size_t i = 0;
  while (i + 4 * VL <= n) {
    size_t end = i + RK_SIMD_BLOCK < n ? i + RK_SIMD_BLOCK : n;
    vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (; i + 4 * VL <= end; i += 4 * VL) {
      s0 = ld(x + i) * ld(y + i) + s0;
      s1 = ld(x + i + VL) * ld(y + i + VL) + s1;
      s2 = ld(x + i + 2 * VL) * ld(y + i + 2 * VL) + s2;
      s3 = ld(x + i + 3 * VL) * ld(y + i + 3 * VL) + s3;
    }
    total += hsum((s0 + s1) + (s2 + s3));
  }
  for (; i < n; ++i) total += (double)x[i] * (double)y[i];
  return total;
}

static double v_sum(size_t n, const float *x) {
  double total = 0.0;
  size_t i = 0;
  while (i + 4 * VL <= n) {
    size_t end = i + RK_SIMD_BLOCK < n ? i + RK_SIMD_BLOCK : n;
    vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (; i + 4 * VL <= end; i += 4 * VL) {
      s0 += ld(x + i);
      s1 += ld(x + i + VL);
      s2 += ld(x + i + 2 * VL);
      s3 += ld(x + i + 3 * VL);
    }
    total += hsum((s0 + s1) + (s2 + s3));
  }
  for (; i < n; ++i) total += x[i];
  return total;
}

/* min/max keep a NaN flag per lane; any NaN makes the result NaN. */
#define RK_SIMD_MINMAX(fname, init, better)       \
  static double fname(size_t n, const float *x) { \
    vf m0 = splat(init), m1 = splat(init);        \
    vi nan = {0};                                 \
    size_t i = 0;                                 \
    for (; i + 2 * VL <= n; i += 2 * VL) {        \
      vf a = ld(x + i), b = ld(x + i + VL);       \
      m0 = sel(a better m0, a, m0);               \
      m1 = sel(b better m1, b, m1);               \
      nan |= (a != a) | (b != b);                 \
    }                                             \
    m0 = sel(m1 better m0, m1, m0);               \
    float m = init;                               \
    bool any_nan = false;                         \
    for (int l = 0; l < VL; ++l) {                \
      if (m0[l] better m) m = m0[l];              \
      any_nan |= nan[l] != 0;                     \
    }                                             \
    for (; i < n; ++i) {                          \
      if (x[i] better m) m = x[i];                \
      any_nan |= x[i] != x[i];                    \
    }                                             \
    return any_nan ? (double)NAN : (double)m;     \
  }

RK_SIMD_MINMAX(v_min, INFINITY, <)
RK_SIMD_MINMAX(v_max, -INFINITY, >)

/* ---- Matrices ----------------------------------------------------------- */

static float dotf(size_t n, const float *x, const float *y) {
  vf s0 = {0}, s1 = {0};
  size_t i = 0;
  for (; i + 2 * VL <= n; i += 2 * VL) {
    s0 = ld(x + i) * ld(y + i) + s0;
    s1 = ld(x + i + VL) * ld(y + i + VL) + s1;
  }
  for (; i + VL <= n; i += VL) s0 = ld(x + i) * ld(y + i) + s0;
  s0 += s1;
  float s = 0.0f;
  for (int l = 0; l < VL; ++l) s += s0[l];
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

static void v_gemv(size_t m, size_t n, const float *a, size_t lda,
                   const float *x, float *y) {
  for (size_t i = 0; i < m; ++i) y[i] = dotf(n, a + i * lda, x);
}

/* GEMM: C is zeroed, then for each block of KB rows of B, tiles of 4 rows x
 * 2 vectors of C are updated from B's rows read in place (the block of B
 * stays in cache while the tile's rows of A stream by). */
enum { KB = 256 };

static void tile4(size_t kb, const float *a, size_t lda, const float *b,
                  size_t ldb, float *c, size_t ldc) {
  vf c00 = ld(c), c01 = ld(c + VL);
  vf c10 = ld(c + ldc), c11 = ld(c + ldc + VL);
  vf c20 = ld(c + 2 * ldc), c21 = ld(c + 2 * ldc + VL);
  vf c30 = ld(c + 3 * ldc), c31 = ld(c + 3 * ldc + VL);
  for (size_t p = 0; p < kb; ++p) {
    vf b0 = ld(b + p * ldb), b1 = ld(b + p * ldb + VL);
    vf a0 = splat(a[p]), a1 = splat(a[lda + p]);
    vf a2 = splat(a[2 * lda + p]), a3 = splat(a[3 * lda + p]);
    c00 = a0 * b0 + c00;
    c01 = a0 * b1 + c01;
    c10 = a1 * b0 + c10;
    c11 = a1 * b1 + c11;
    c20 = a2 * b0 + c20;
    c21 = a2 * b1 + c21;
    c30 = a3 * b0 + c30;
    c31 = a3 * b1 + c31;
  }
  st(c, c00);
  st(c + VL, c01);
  st(c + ldc, c10);
  st(c + ldc + VL, c11);
  st(c + 2 * ldc, c20);
  st(c + 2 * ldc + VL, c21);
  st(c + 3 * ldc, c30);
  st(c + 3 * ldc + VL, c31);
}

/* One row of C, columns [0, n), from the same block. */
static void row1(size_t n, size_t kb, const float *a, const float *b,
                 size_t ldb, float *c) {
  size_t j = 0;
  for (; j + VL <= n; j += VL) {
    vf acc = ld(c + j);
    for (size_t p = 0; p < kb; ++p)
      acc = splat(a[p]) * ld(b + p * ldb + j) + acc;
    st(c + j, acc);
  }
  for (; j < n; ++j) {
    float acc = c[j];
    for (size_t p = 0; p < kb; ++p) acc += a[p] * b[p * ldb + j];
    c[j] = acc;
  }
}

static void v_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda,
                   const float *b, size_t ldb, float *c, size_t ldc) {
  for (size_t i = 0; i < m; ++i) memset(c + i * ldc, 0, n * sizeof(float));
  size_t nfull = n - n % (2 * VL);
  for (size_t p0 = 0; p0 < k; p0 += KB) {
    size_t kb = k - p0 < KB ? k - p0 : KB;
    const float *bp = b + p0 * ldb;
    size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      const float *ai = a + i * lda + p0;
      for (size_t j = 0; j < nfull; j += 2 * VL)
        tile4(kb, ai, lda, bp + j, ldb, c + i * ldc + j, ldc);
      if (nfull < n)
        for (size_t r = 0; r < 4; ++r)
          row1(n - nfull, kb, ai + r * lda, bp + nfull, ldb,
               c + (i + r) * ldc + nfull);
    }
    for (; i < m; ++i) row1(n, kb, a + i * lda + p0, bp, ldb, c + i * ldc);
  }
}

const rk__ops_cpu_t RK_SIMD_TABLE = {
    .name = RK_SIMD_NAME,
    .isa = RK_SIMD_ISA,
    .add = v_add,
    .sub = v_sub,
    .mul = v_mul,
    .scale = v_scale,
    .axpy = v_axpy,
    .fma = v_fma,
    .relu = v_relu,
    .sigmoid = v_sigm,
    .exp = v_expk,
    .tanh = v_tanhk,
    .log = v_logk,
    .dot = v_dot,
    .sum = v_sum,
    .min = v_min,
    .max = v_max,
    .gemm = v_gemm,
    .gemv = v_gemv,
};
