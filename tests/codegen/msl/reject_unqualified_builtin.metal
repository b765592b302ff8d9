// rk's output has no `using namespace metal`: Metal functions are
// qualified, and an unqualified one is undeclared.
#include <metal_stdlib>

kernel void k(device float *x [[buffer(0)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#if RK_MSL_DEFECT
  x[rk_tid.x] = sqrt(x[rk_tid.x]);
#else
  x[rk_tid.x] = metal::sqrt(x[rk_tid.x]);
#endif
}
