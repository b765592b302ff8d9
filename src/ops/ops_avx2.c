/* The SIMD kernels for AVX2 + FMA (8 floats per vector). Used only when
 * rk_isa_supported(RK_ISA_AVX2) says the CPU has them. */
#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), \
                             apply_to = function)
#pragma clang fp contract(fast)
#else
#pragma GCC target("avx2,fma")
/* a * b + c in the kernels is one fused multiply-add (-std=c11 turns
 * contraction off elsewhere). */
#pragma GCC optimize("fp-contract=fast")
#endif

#include <immintrin.h>
#define RK_SIMD_MAX(a, b) ((vf)_mm256_max_ps((__m256)(a), (__m256)(b)))
#define RK_SIMD_FMA(a, b, c) \
  ((vf)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define RK_SIMD_MIN(a, b) ((vf)_mm256_min_ps((__m256)(a), (__m256)(b)))
#define RK_SIMD_ROUND(v)            \
  ((vf)_mm256_round_ps((__m256)(v), \
                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define RK_SIMD_LANES 8
#define RK_SIMD_TABLE rk__ops_avx2
#define RK_SIMD_NAME "avx2"
#define RK_SIMD_ISA RK_ISA_AVX2
#include "ops/ops_simd_impl.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif
#else
typedef int rk__ops_avx2_unused_t; /* not an x86 build */
#endif
