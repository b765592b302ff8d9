// A device address does not convert to a thread pointer.
#include <metal_stdlib>

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#if RK_MSL_DEFECT
  thread float *p = &x[rk_tid.x];
#else
  device float *p = &x[rk_tid.x];
#endif
  *p = 2.0f;
}
