/* The CPU kernel table of an instruction set (ISA detection itself is in
 * base/isa.c). */
#include "ops/ops_internal.h"

const rk__ops_cpu_t *rk__ops_cpu_for(rk_isa_t isa) {
  if (!rk_isa_supported(isa)) return NULL;
  switch (isa) {
    case RK_ISA_NONE:
      return &rk__ops_scalar;
#ifdef RK__HAVE_X86
    case RK_ISA_AVX2:
      return &rk__ops_avx2;
    case RK_ISA_AVX512:
      return &rk__ops_avx512;
#endif
#ifdef RK__HAVE_NEON
    case RK_ISA_NEON:
      return &rk__ops_neon;
#endif
    default:
      return NULL;
  }
}
