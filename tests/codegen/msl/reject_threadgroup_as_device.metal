// A threadgroup pointer passed where a device pointer is expected is refused.
#include <metal_stdlib>

static void store(device float *out, uint i, float v) { out[i] = v; }

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
  threadgroup float t[64];
#if RK_MSL_DEFECT
  store(t, rk_tid.x, 1.0f);
#else
  store(x, rk_tid.x, 1.0f);
#endif
  t[rk_tid.x] = 0.0f;
}
