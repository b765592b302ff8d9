// A type error: a struct assigned to a float.
#include <metal_stdlib>

typedef struct {
  float x;
  float y;
} pair_t;

kernel void k(device const pair_t *in [[buffer(0)]],
              device float *out [[buffer(1)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
  pair_t p = in[rk_tid.x];
#if RK_MSL_DEFECT
  out[rk_tid.x] = p;
#else
  out[rk_tid.x] = p.x + p.y;
#endif
}
