// threadgroup variables belong to kernels: a helper cannot declare one.
#include <metal_stdlib>

#if RK_MSL_DEFECT
static float helper(uint i) {
  threadgroup float t[64];
  t[i] = 1.0f;
  return t[i];
}
#else
static float helper(threadgroup float *t, uint i) {
  t[i] = 1.0f;
  return t[i];
}
#endif

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#if RK_MSL_DEFECT
  x[rk_tid.x] = helper(rk_tid.x);
#else
  threadgroup float t[64];
  x[rk_tid.x] = helper(t, rk_tid.x);
#endif
}
