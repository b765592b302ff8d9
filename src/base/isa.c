/* Run-time ISA detection and the names of execution kinds and ISAs
 * (rk/select.h), below both the cost model and the ops library. A CPU
 * kernel table is used only after rk_isa_supported() said yes, so code built
 * for an ISA the CPU lacks never runs. */
#include "base/isa.h"

#include <stdbool.h>
#include <stddef.h>

const char *rk_exec_kind_name(rk_exec_kind_t kind) {
  switch (kind) {
    case RK_EXEC_SCALAR:
      return "scalar";
    case RK_EXEC_SIMD:
      return "simd";
    case RK_EXEC_GPU:
      return "gpu";
  }
  return "unknown";
}

const char *rk_isa_name(rk_isa_t isa) {
  switch (isa) {
    case RK_ISA_NONE:
      return "none";
    case RK_ISA_AVX2:
      return "avx2";
    case RK_ISA_AVX512:
      return "avx512";
    case RK_ISA_NEON:
      return "neon";
  }
  return "unknown";
}

bool rk_isa_supported(rk_isa_t isa) {
  switch (isa) {
    case RK_ISA_NONE:
      return true;
#ifdef RK__HAVE_X86
    case RK_ISA_AVX2:
      /* __builtin_cpu_supports also checks that the OS saves the YMM
       * state (XGETBV), not only the CPUID bits. */
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case RK_ISA_AVX512:
      return __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#ifdef RK__HAVE_NEON
    case RK_ISA_NEON:
      return true; /* Advanced SIMD is mandatory on AArch64 */
#endif
    default:
      return false;
  }
}

rk_isa_t rk_isa_best(void) {
  static const rk_isa_t order[] = {RK_ISA_AVX512, RK_ISA_AVX2, RK_ISA_NEON};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; ++i)
    if (rk_isa_supported(order[i])) return order[i];
  return RK_ISA_NONE;
}
