// Metal atomics take atomic_int/atomic_uint objects, not plain integers.
#include <metal_stdlib>

kernel void k(device int *counter [[buffer(0)]]) {
#if RK_MSL_DEFECT
  metal::atomic_fetch_add_explicit(&counter[0], 1,
                                   metal::memory_order_relaxed);
#else
  metal::atomic_fetch_add_explicit((device metal::atomic_int *)&counter[0], 1,
                                   metal::memory_order_relaxed);
#endif
}
