/* The SIMD kernels for AVX-512F (16 floats per vector). Used only when
 * rk_isa_supported(RK_ISA_AVX512) says the CPU has them. */
#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), \
                             apply_to = function)
#pragma clang fp contract(fast)
#else
#pragma GCC target("avx512f,avx2,fma")
/* a * b + c in the kernels is one fused multiply-add (-std=c11 turns
 * contraction off elsewhere). */
#pragma GCC optimize("fp-contract=fast")
#endif

#define RK_SIMD_LANES 16
#define RK_SIMD_TABLE rk__ops_avx512
#define RK_SIMD_NAME "avx512"
#define RK_SIMD_ISA RK_ISA_AVX512
#include "ops/ops_simd_impl.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif
#else
typedef int rk__ops_avx512_unused_t; /* not an x86 build */
#endif
