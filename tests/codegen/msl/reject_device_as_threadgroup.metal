// A device pointer passed where a threadgroup pointer is expected is refused.
#include <metal_stdlib>

static float first(threadgroup const float *t) { return t[0]; }

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
  threadgroup float t[64];
  t[rk_tid.x] = x[rk_tid.x];
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
#if RK_MSL_DEFECT
  x[rk_tid.x] = first(x);
#else
  x[rk_tid.x] = first(t);
#endif
}
