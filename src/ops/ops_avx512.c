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

#include <immintrin.h>
#define RK_SIMD_MAX(a, b) ((vf)_mm512_max_ps((__m512)(a), (__m512)(b)))
#define RK_SIMD_FMA(a, b, c) \
  ((vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define RK_SIMD_MIN(a, b) ((vf)_mm512_min_ps((__m512)(a), (__m512)(b)))
#define RK_SIMD_ROUND(v)                 \
  ((vf)_mm512_roundscale_ps((__m512)(v), \
                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define RK_SIMD_LDEXP(p, nf) ((vf)_mm512_scalef_ps((__m512)(p), (__m512)(nf)))
#define RK_SIMD_HAS_GETMANT
#define RK_SIMD_GETEXP(v) ((vf)_mm512_getexp_ps((__m512)(v)))
#define RK_SIMD_GETMANT(v) \
  ((vf)_mm512_getmant_ps((__m512)(v), _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_nan))
#define RK_SIMD_MVEC_TANH tanh16
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
