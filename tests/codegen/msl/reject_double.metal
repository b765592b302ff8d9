// Metal has no double.
#include <metal_stdlib>

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#if RK_MSL_DEFECT
  double s = 2.0;
#else
  float s = 2.0f;
#endif
  x[rk_tid.x] *= s;
}
