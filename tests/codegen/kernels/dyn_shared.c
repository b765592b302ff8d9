#include <rk/kernel.h>

/* Dynamic block-shared memory: rk_dynamic_shared() is the launch's
 * shared_mem bytes, sized when the kernel is launched rather than when it
 * is written. */

/* Each block doubles its slice of `in` and stores it reversed, through
 * shared memory (block size floats). */
RK_KERNEL void dyn_reverse(int n, const float *in, float *out) {
  float *tile = (float *)rk_dynamic_shared();
  uint32_t t = rk_thread_idx_x();
  uint32_t b = rk_block_dim_x();
  int i = (int)(rk_block_idx_x() * b + t);
  tile[t] = i < n ? in[i] * 2.0f : 0.0f;
  rk_sync_threads();
  int j = (int)(rk_block_idx_x() * b + (b - 1u - t));
  if (j < n) out[j] = tile[t];
}

/* Counts the values of `in` by their low `bins` bits' value, first per
 * block in shared counters (bins ints), then into `counts`. */
RK_KERNEL void dyn_count(int n, int bins, const int *in, int *counts) {
  int *local = (int *)rk_dynamic_shared();
  int t = (int)rk_thread_idx_x();
  for (int k = t; k < bins; k += (int)rk_block_dim_x()) local[k] = 0;
  rk_sync_threads();
  int i = (int)rk_global_idx_x();
  if (i < n) rk_atomic_add_i32(&local[in[i] % bins], 1);
  rk_sync_threads();
  for (int k = t; k < bins; k += (int)rk_block_dim_x())
    rk_atomic_add_i32(&counts[k], local[k]);
}
