#include <rk/kernel.h>

/* One partial sum per block of 256 threads. */
RK_KERNEL void block_sum(const float *in, float *out) {
  RK_SHARED float s[256];
  unsigned t = rk_thread_idx_x();
  s[t] = in[rk_global_idx_x()];
  rk_sync_threads();
  for (unsigned k = rk_block_dim_x() / 2; k > 0; k /= 2) {
    if (t < k) s[t] += s[t + k];
    rk_sync_threads();
  }
  if (t == 0) out[rk_block_idx_x()] = s[0];
}
