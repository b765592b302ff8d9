#include <rk/kernel.h>

#define BLOCK 256

/* One partial sum per block of BLOCK threads: a tree reduction in
 * block-shared memory with a barrier after every level. */
RK_KERNEL void reduce_sum(int n, const float *in, float *partial) {
  RK_SHARED float s[BLOCK];
  unsigned t = rk_thread_idx_x();
  unsigned i = rk_global_idx_x();
  s[t] = i < (unsigned)n ? in[i] : 0.0f;
  rk_sync_threads();
  for (unsigned k = rk_block_dim_x() / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    rk_sync_threads();
  }
  if (t == 0) partial[rk_block_idx_x()] = s[0];
}
