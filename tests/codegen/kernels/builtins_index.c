#include <rk/kernel.h>

/* Writes every index built-in of every thread, and exercises the fences. */
RK_KERNEL void builtins_index(uint32_t *out) {
  uint32_t t = rk_global_idx_x() +
               rk_global_idx_y() * rk_block_dim_x() * rk_grid_dim_x() +
               rk_global_idx_z() * rk_block_dim_x() * rk_grid_dim_x() *
                   rk_block_dim_y() * rk_grid_dim_y();
  out[t * 15u + 0u] = rk_thread_idx_x();
  out[t * 15u + 1u] = rk_thread_idx_y();
  out[t * 15u + 2u] = rk_thread_idx_z();
  out[t * 15u + 3u] = rk_block_idx_x();
  out[t * 15u + 4u] = rk_block_idx_y();
  out[t * 15u + 5u] = rk_block_idx_z();
  out[t * 15u + 6u] = rk_block_dim_x();
  out[t * 15u + 7u] = rk_block_dim_y();
  out[t * 15u + 8u] = rk_block_dim_z();
  out[t * 15u + 9u] = rk_grid_dim_x();
  out[t * 15u + 10u] = rk_grid_dim_y();
  out[t * 15u + 11u] = rk_grid_dim_z();
  out[t * 15u + 12u] = rk_global_idx_x();
  out[t * 15u + 13u] = rk_global_idx_y();
  out[t * 15u + 14u] = rk_global_idx_z();
  rk_thread_fence();
  rk_sync_threads();
}
