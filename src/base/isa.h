/* Which instruction sets this build has code for; the run-time checks and
 * names are rk_isa_supported(), rk_isa_best() and rk_isa_name() of
 * rk/select.h, implemented in base/isa.c. */
#ifndef RK_BASE_ISA_H_
#define RK_BASE_ISA_H_

#include "rk/select.h"

#if defined(__x86_64__) || defined(__i386__)
#define RK__HAVE_X86 1
#endif
#if defined(__aarch64__)
#define RK__HAVE_NEON 1
#endif

#endif /* RK_BASE_ISA_H_ */
