// A misspelt Metal built-in function is refused.
// RK_MSL_DEFECT=1: threadgroup_barier (one r).
#include <metal_stdlib>

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
  threadgroup float t[64];
  t[rk_tid.x] = x[rk_tid.x];
#if RK_MSL_DEFECT
  metal::threadgroup_barier(metal::mem_flags::mem_threadgroup);
#else
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
#endif
  x[rk_tid.x] = t[63u - rk_tid.x];
}
