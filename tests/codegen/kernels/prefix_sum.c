#include <rk/kernel.h>

#define BLOCK 256

/* Inclusive prefix sum within each block (Hillis-Steele, double-buffered
 * in block-shared memory); block totals go to `sums` for a second pass. */
RK_KERNEL void prefix_sum(int n, const int *in, int *out, int *sums) {
  RK_SHARED int buf[2][BLOCK];
  int t = (int)rk_thread_idx_x();
  int i = (int)rk_global_idx_x();
  int src = 0;
  buf[0][t] = i < n ? in[i] : 0;
  rk_sync_threads();
  for (int offset = 1; offset < BLOCK; offset *= 2) {
    int dst = 1 - src;
    if (t >= offset)
      buf[dst][t] = buf[src][t] + buf[src][t - offset];
    else
      buf[dst][t] = buf[src][t];
    rk_sync_threads();
    src = dst;
  }
  if (i < n) out[i] = buf[src][t];
  if (t == BLOCK - 1) sums[rk_block_idx_x()] = buf[src][t];
}
