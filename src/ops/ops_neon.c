/* The SIMD kernels for ARM Advanced SIMD (4 floats per vector), which every
 * AArch64 CPU has. */
#if defined(__aarch64__)
#if defined(__clang__)
#pragma clang fp contract(fast)
#else
#pragma GCC optimize("fp-contract=fast")
#endif
#define RK_SIMD_LANES 4
#define RK_SIMD_TABLE rk__ops_neon
#define RK_SIMD_NAME "neon"
#define RK_SIMD_ISA RK_ISA_NEON
#include "ops/ops_simd_impl.h"
#else
typedef int rk__ops_neon_unused_t; /* not an AArch64 build */
#endif
