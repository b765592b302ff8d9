// A misspelt attribute: clang ignores attributes it does not know, and the
// test accepts that only for the names Metal defines.
#include <metal_stdlib>

kernel void k(device float *x [[buffer(0)]],
#if RK_MSL_DEFECT
              uint3 rk_tid [[thread_position_in_thredgroup]]) {
#else
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#endif
  x[rk_tid.x] = 1.0f;
}
