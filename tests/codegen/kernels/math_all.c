#include <rk/kernel.h>

/* Every float math built-in, including calls with int and double
 * arguments that C converts to float. */
RK_KERNEL void math_all(int n, const float *x, float *out) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  float v = x[i];
  float a = fabsf(v) + 1.0f;
  out[i * 14 + 0] = sqrtf(a);
  out[i * 14 + 1] = expf(v * 0.1f);
  out[i * 14 + 2] = logf(a);
  out[i * 14 + 3] = powf(a, 1.5f);
  out[i * 14 + 4] = sinf(v);
  out[i * 14 + 5] = cosf(v);
  out[i * 14 + 6] = tanf(v * 0.25f);
  out[i * 14 + 7] = fabsf(v);
  out[i * 14 + 8] = fminf(v, 0.5f);
  out[i * 14 + 9] = fmaxf(v, i);
  out[i * 14 + 10] = floorf(v);
  out[i * 14 + 11] = ceilf(v);
  out[i * 14 + 12] = fmaf(v, 2.0f, 1);
  out[i * 14 + 13] = tanhf(v);
}
