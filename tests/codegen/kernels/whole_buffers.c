#include <rk/kernel.h>

/* Buffers used as a whole: as a condition (the buffer is not NULL; WGSL
 * bindings always are) and as an atomic's target (its element 0). The step
 * comes from conditional compilation. */
#ifndef STEP
#define STEP 3
#endif

RK_KERNEL void tickets(int n, int *counter, int *ticket, float *flag) {
  uint32_t i = rk_global_idx_x();
  if (i < (uint32_t)n && ticket) ticket[i] = rk_atomic_add_i32(counter, STEP);
  if (i == 0u && flag) flag[0] = !counter ? -1.0f : 1.5f;
}
