#include <rk/kernel.h>

#define BINS 64

/* Histogram of values in [0, 1): counts per block in shared memory, then
 * one atomic add per bin into the global histogram. */
RK_KERNEL void histogram(int n, const float *values, uint32_t *bins) {
  RK_SHARED uint32_t local[BINS];
  unsigned t = rk_thread_idx_x();
  for (unsigned b = t; b < BINS; b += rk_block_dim_x()) local[b] = 0u;
  rk_sync_threads();
  unsigned stride = rk_block_dim_x() * rk_grid_dim_x();
  for (unsigned i = rk_global_idx_x(); i < (unsigned)n; i += stride) {
    int b = (int)(values[i] * BINS);
    b = b < 0 ? 0 : b >= BINS ? BINS - 1 : b;
    rk_atomic_add_u32(&local[b], 1u);
  }
  rk_sync_threads();
  for (unsigned b = t; b < BINS; b += rk_block_dim_x())
    if (local[b] != 0u) rk_atomic_add_u32(&bins[b], local[b]);
}
