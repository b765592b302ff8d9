#include <rk/kernel.h>

/* 64-bit integers and double: fine for C, CUDA and OpenCL (which needs
 * cl_khr_fp64), refused by Metal (no double). */
RK_KERNEL void wide_types(int n, const double *x, int64_t *acc,
                          uint64_t seed, double *out) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  uint64_t h = seed ^ (uint64_t)i * 0x9E3779B97F4A7C15ull;
  h ^= h >> 33;
  int64_t big = (int64_t)(h & 0xFFFFFFFFFFull) - 1099511627776ll;
  acc[i] = big + (int64_t)x[i];
  out[i] = x[i] * 0.5 + (double)big / 3.0;
}
