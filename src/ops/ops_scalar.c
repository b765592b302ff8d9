/* The scalar reference: plain C, one element at a time, on the calling
 * thread. The compiler is asked not to vectorize these loops, so "scalar" in
 * a report means scalar instructions. Reductions accumulate in double. */
#include <math.h>
#include <stddef.h>

#include "ops/ops_internal.h"

#if defined(__clang__)
#define RK__NOVEC _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define RK__NOVEC
#if defined(__GNUC__)
#pragma GCC optimize("no-tree-vectorize")
#endif
#endif

static void s_add(size_t n, const float *a, const float *b, float *out) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

static void s_sub(size_t n, const float *a, const float *b, float *out) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}

static void s_mul(size_t n, const float *a, const float *b, float *out) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

static void s_scale(size_t n, float alpha, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

static void s_axpy(size_t n, float alpha, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}

static void s_fma(size_t n, const float *a, const float *b, const float *c,
                  float *out) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) out[i] = a[i] * b[i] + c[i];
}

static void s_relu(size_t n, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void s_sigmoid(size_t n, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) {
    /* e^-|x| <= 1: no overflow, and tiny results keep their digits. */
    float e = expf(-fabsf(x[i]));
    y[i] = (x[i] < 0.0f ? e : 1.0f) / (1.0f + e);
  }
}

static void s_exp(size_t n, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = expf(x[i]);
}

static void s_tanh(size_t n, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = tanhf(x[i]);
}

static void s_log(size_t n, const float *x, float *y) {
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) y[i] = logf(x[i]);
}

static double s_dot(size_t n, const float *x, const float *y) {
  double acc = 0.0;
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) acc += (double)x[i] * (double)y[i];
  return acc;
}

static double s_sum(size_t n, const float *x) {
  double acc = 0.0;
  RK__NOVEC
  for (size_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

/* NaN propagates: once m is NaN no comparison replaces it. */
static double s_min(size_t n, const float *x) {
  float m = INFINITY;
  for (size_t i = 0; i < n; ++i)
    if (x[i] < m || x[i] != x[i]) m = x[i];
  return m;
}

static double s_max(size_t n, const float *x) {
  float m = -INFINITY;
  for (size_t i = 0; i < n; ++i)
    if (x[i] > m || x[i] != x[i]) m = x[i];
  return m;
}

static void s_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda,
                   const float *b, size_t ldb, float *c, size_t ldc) {
  for (size_t i = 0; i < m; ++i) {
    float *ci = c + i * ldc;
    RK__NOVEC
    for (size_t j = 0; j < n; ++j) ci[j] = 0.0f;
    for (size_t p = 0; p < k; ++p) {
      float aip = a[i * lda + p];
      const float *bp = b + p * ldb;
      RK__NOVEC
      for (size_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
}

static void s_gemv(size_t m, size_t n, const float *a, size_t lda,
                   const float *x, float *y) {
  for (size_t i = 0; i < m; ++i) {
    float acc = 0.0f;
    RK__NOVEC
    for (size_t j = 0; j < n; ++j) acc += a[i * lda + j] * x[j];
    y[i] = acc;
  }
}

const rk__ops_cpu_t rk__ops_scalar = {
    .name = "scalar",
    .isa = RK_ISA_NONE,
    .add = s_add,
    .sub = s_sub,
    .mul = s_mul,
    .scale = s_scale,
    .axpy = s_axpy,
    .fma = s_fma,
    .relu = s_relu,
    .sigmoid = s_sigmoid,
    .exp = s_exp,
    .tanh = s_tanh,
    .log = s_log,
    .dot = s_dot,
    .sum = s_sum,
    .min = s_min,
    .max = s_max,
    .gemm = s_gemm,
    .gemv = s_gemv,
};
