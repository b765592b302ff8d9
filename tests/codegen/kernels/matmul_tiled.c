#include <rk/kernel.h>

#define TILE 16

/* C = A * B for row-major n x n matrices, one TILE x TILE block of C per
 * block of threads; tiles of A and B are staged in block-shared memory. */
RK_KERNEL void matmul_tiled(int n, const float *a, const float *b, float *c) {
  RK_SHARED float ta[TILE][TILE];
  RK_SHARED float tb[TILE][TILE + 1]; /* padded against bank conflicts */
  int tx = (int)rk_thread_idx_x();
  int ty = (int)rk_thread_idx_y();
  int row = (int)rk_block_idx_y() * TILE + ty;
  int col = (int)rk_block_idx_x() * TILE + tx;
  float acc = 0.0f;
  for (int t0 = 0; t0 < n; t0 += TILE) {
    ta[ty][tx] = row < n && t0 + tx < n ? a[row * n + t0 + tx] : 0.0f;
    tb[ty][tx] = col < n && t0 + ty < n ? b[(t0 + ty) * n + col] : 0.0f;
    rk_sync_threads();
    for (int k = 0; k < TILE; ++k) acc += ta[ty][k] * tb[k][tx];
    rk_sync_threads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
