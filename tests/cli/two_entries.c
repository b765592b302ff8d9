#include <rk/kernel.h>

/* Two entry points sharing a helper, for `rk transpile --entry`. */
static float twice(float v) { return 2.0f * v; }

RK_KERNEL void scale(int n, const float *x, float *y) {
  int i = (int)rk_global_idx_x();
  if (i < n) y[i] = twice(x[i]);
}

RK_KERNEL void fill(int n, float value, float *y) {
  int i = (int)rk_global_idx_x();
  if (i < n) y[i] = twice(value);
}
