// The operands of ?: must have one type, address space included: a struct
// in constant memory beside a struct value needs a copy (rk's MSL casts it).
#include <metal_stdlib>

typedef struct {
  float lo;
  float hi;
} range_t;

static range_t widen(range_t r) {
  r.hi += 1.0f;
  return r;
}

kernel void k(constant range_t &r [[buffer(0)]],
              device float *out [[buffer(1)]],
              uint3 rk_tid [[thread_position_in_threadgroup]]) {
#if RK_MSL_DEFECT
  range_t q = rk_tid.x % 2u == 0u ? widen(r) : r;
#else
  range_t q = rk_tid.x % 2u == 0u ? widen(r) : (range_t)r;
#endif
  out[rk_tid.x] = q.hi - q.lo;
}
