#include <rk/kernel.h>

/* y = a*x + y */
RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {
  int i = (int)rk_global_idx_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
