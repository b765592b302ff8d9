/* Internals of the ops library (rk/ops.h).
 *
 * ops.c checks arguments, asks the policy for a target and dispatches to one
 * of three engines:
 *   - a CPU kernel table (rk__ops_cpu_t): ops_scalar.c in plain C, and one
 *     table per ISA built from ops_simd_impl.h (ops_avx2.c, ops_avx512.c,
 *     ops_neon.c), split for large sizes over the process's shared CPU
 *     worker pool (base/pool.c, the one the CPU backend launches on);
 *   - a CBLAS library loaded at run time for GEMM/GEMV (ops_blas.c);
 *   - kernels in the kernel language run through the HAL (ops_gpu.c).
 */
#ifndef RK_OPS_OPS_INTERNAL_H_
#define RK_OPS_OPS_INTERNAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/isa.h"
#include "rk/ops.h"

/* ---- CPU kernels -------------------------------------------------------- */

typedef void (*rk__ops_binary_fn)(size_t n, const float *a, const float *b,
                                  float *out);
typedef void (*rk__ops_unary_fn)(size_t n, const float *x, float *y);
typedef void (*rk__ops_alpha_fn)(size_t n, float alpha, const float *x,
                                 float *y);
typedef void (*rk__ops_ternary_fn)(size_t n, const float *a, const float *b,
                                   const float *c, float *out);
/* Reductions return a double so partial results combine without a second
 * rounding; min/max return the float value exactly. */
typedef double (*rk__ops_reduce2_fn)(size_t n, const float *x, const float *y);
typedef double (*rk__ops_reduce_fn)(size_t n, const float *x);

/* One instruction set's kernels. Every pointer is set. */
typedef struct rk__ops_cpu {
  const char *name; /* "scalar", "avx2", "avx512", "neon" */
  rk_isa_t isa;
  rk__ops_binary_fn add, sub, mul;
  rk__ops_alpha_fn scale, axpy;
  rk__ops_ternary_fn fma;
  rk__ops_unary_fn relu, sigmoid, exp, tanh, log;
  rk__ops_reduce2_fn dot;
  rk__ops_reduce_fn sum, min, max; /* min/max of n == 0: +inf / -inf */
  /* Rows [0, m) of C = A B with A m x k (row stride lda), B k x n (ldb),
   * C (ldc). */
  void (*gemm)(size_t m, size_t n, size_t k, const float *a, size_t lda,
               const float *b, size_t ldb, float *c, size_t ldc);
  /* y[0..m) = A[m x n] x */
  void (*gemv)(size_t m, size_t n, const float *a, size_t lda, const float *x,
               float *y);
} rk__ops_cpu_t;

extern const rk__ops_cpu_t rk__ops_scalar;
#ifdef RK__HAVE_X86
extern const rk__ops_cpu_t rk__ops_avx2;
extern const rk__ops_cpu_t rk__ops_avx512;
#endif
#ifdef RK__HAVE_NEON
extern const rk__ops_cpu_t rk__ops_neon;
#endif

/* The table for a supported ISA (RK_ISA_NONE: scalar); NULL otherwise. */
const rk__ops_cpu_t *rk__ops_cpu_for(rk_isa_t isa);

/* ---- BLAS --------------------------------------------------------------- */

/* Loads a CBLAS once per process (RK_BLAS_LIB, then the usual sonames);
 * false when none is found. */
bool rk__ops_blas_available(void);
const char *rk__ops_blas_soname(void);
/* C = A B, row-major, through cblas_sgemm. */
void rk__ops_blas_sgemm(size_t m, size_t n, size_t k, const float *a,
                        const float *b, float *c);
/* y = A x, row-major, through cblas_sgemv. */
void rk__ops_blas_sgemv(size_t m, size_t n, const float *a, const float *x,
                        float *y);

/* Elements per thread below which a vector op stays on one thread (so it
 * runs on two from 2 * this many); `rk calibrate` measures on both sides. */
#define RK__OPS_PAR_MIN_ELEMS (1 << 16)

/* ---- Vector math library ------------------------------------------------ */

/* Functions of glibc's libmvec that the SIMD kernels call when it loads
 * (ops_vecmath.c); NULL members are absent. */
typedef struct rk__ops_vecmath {
  const char *name; /* NULL: not loaded (or RK_VECMATH=none) */
  void *tanh8;      /* _ZGVdN8v_tanhf: AVX2 */
  void *tanh16;     /* _ZGVeN16v_tanhf: AVX-512 */
} rk__ops_vecmath_t;
const rk__ops_vecmath_t *rk__ops_vecmath(void);

/* ---- GPU ---------------------------------------------------------------- */

typedef struct rk__ops_gpu rk__ops_gpu_t;

/* Opens `backend`, creates a context on `device`, compiles the ops kernels. */
rk_status_t rk__ops_gpu_create(rk_backend_kind_t backend, int device,
                               rk__ops_gpu_t **out);
/* An engine in `context`, which the caller owns and must keep alive until
 * the engine is destroyed: the kernels are compiled there, and destroying
 * the engine frees its module and scratch memory but not the context. */
rk_status_t rk__ops_gpu_create_in(rk_context_t *context, rk__ops_gpu_t **out);
void rk__ops_gpu_destroy(rk__ops_gpu_t *gpu);
/* Whether the device is a software emulation (never chosen automatically). */
bool rk__ops_gpu_is_software(const rk__ops_gpu_t *gpu);

/* The operation's operands, as passed to rk_ops_*. */
typedef struct rk__ops_args {
  rk_op_t op;
  size_t m, n, k;
  float alpha;
  const float *a, *b, *c; /* inputs in order */
  float *out;             /* element-wise / matrix output */
  float *result;          /* reductions */
} rk__ops_args_t;

/* A GPU run's use of the backend's vendor BLAS (matmul). */
typedef struct rk__ops_gpu_blas {
  bool allowed;     /* in: matmul may go to the vendor BLAS */
  char library[48]; /* out: the library that ran it, or "" */
  char why[160];    /* out: why an allowed BLAS did not run, or "" */
} rk__ops_gpu_blas_t;

/* Runs one op: copies in, launches, copies out. `dev` NULL: the operands
 * are the host pointers in args; else dev[0..2] are resident inputs and
 * dev[3] the resident output (results of reductions still go to
 * args->result). `blas` may be NULL (rk's own kernels only). Thread-safe
 * (serialised per context). */
rk_status_t rk__ops_gpu_run(rk__ops_gpu_t *gpu, const rk__ops_args_t *args,
                            const rk_devptr_t *dev, rk__ops_gpu_blas_t *blas);
/* The engine's context (for resident buffers). */
rk_context_t *rk__ops_gpu_context(const rk__ops_gpu_t *gpu);

#endif /* RK_OPS_OPS_INTERNAL_H_ */
