/* rk/ops.h - vector and matrix operations on f32 data that run where the
 * selection policy says: scalar C, SIMD (AVX2+FMA, AVX-512, NEON; threads
 * for large sizes; a BLAS for GEMM) or a GPU backend through the HAL.
 *
 *   rk_ops_options_t o;
 *   rk_ops_options_init(&o);               // RK_POLICY_CALIBRATED
 *   rk_ops_t *ops;
 *   if (rk_ops_create(&o, &ops) != RK_OK) ...rk_last_error()...
 *   rk_op_report_t r;
 *   rk_ops_axpy(ops, n, 2.0f, x, y, &r);   // y = 2x + y
 *   printf("ran on %s (%s) in %.1f us\n", rk_exec_kind_name(r.target.kind),
 *          r.engine, r.wall_s * 1e6);
 *   rk_ops_destroy(ops);
 *
 * The choice is binding: every call runs on exactly one target, the one the
 * policy picked, and the report says which. Operands are host pointers (any
 * alignment); a GPU target copies them to the device and the results back
 * within the call. Sizes are element counts; n == 0 is allowed everywhere.
 * Operands already on a GPU live in rk_ops_buffer_t (see the end of this
 * file).
 *
 * Thread safety: one handle may be used from several threads at once (calls
 * that use the handle's thread pool or a GPU context take turns on it);
 * rk_ops_set_policy must not race with other calls on the same handle.
 * Errors: RK_ERR_INVALID_ARGUMENT for NULL operands or a size whose byte
 * count overflows; RK_ERR_UNAVAILABLE when a forced target is absent (an ISA
 * this CPU lacks, a backend that does not open); GPU errors as the HAL
 * reports them. On error the outputs are unspecified. See docs/ops.md.
 */
#ifndef RK_OPS_H_
#define RK_OPS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/select.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_ops rk_ops_t;

/* How each call picks its target. */
typedef enum rk_policy {
  RK_POLICY_CALIBRATED = 0, /* the cost model's cheapest candidate */
  RK_POLICY_COMPAT,         /* the compatibility selector's rules */
  RK_POLICY_FORCED,         /* exactly rk_ops_options_t.target */
} rk_policy_t;

/* "calibrated", "compat", "forced"; "unknown" otherwise. */
const char *rk_policy_name(rk_policy_t policy);

/* The bit of a backend in rk_ops_options_t.gpu_backends. */
#define RK_OPS_BACKEND_BIT(kind) (1u << (unsigned)(kind))
/* CUDA, Metal, WebGPU and OpenCL (not the CPU backend, which is not a GPU:
 * it runs the GPU kernels only when forced). */
#define RK_OPS_GPU_BACKENDS_ALL            \
  (RK_OPS_BACKEND_BIT(RK_BACKEND_CUDA) |   \
   RK_OPS_BACKEND_BIT(RK_BACKEND_METAL) |  \
   RK_OPS_BACKEND_BIT(RK_BACKEND_WEBGPU) | \
   RK_OPS_BACKEND_BIT(RK_BACKEND_OPENCL))

typedef struct rk_ops_options {
  rk_policy_t policy;      /* default RK_POLICY_CALIBRATED */
  rk_exec_target_t target; /* RK_POLICY_FORCED: where every op runs */
  /* Where the operands live, passed to the cost model (default
   * RK_RESIDENT_HOST). Operands are always host pointers; the hint only
   * changes the prediction. */
  rk_residency_t residency;
  /* Backends the calibrated and compat policies may use for GPU targets
   * (RK_OPS_BACKEND_BIT flags; default RK_OPS_GPU_BACKENDS_ALL; 0 keeps
   * every op on the CPU and opens no GPU backend, not even to probe).
   * Forced targets ignore it. */
  uint32_t gpu_backends;
  /* RK_POLICY_COMPAT: the selector's parameters (default rk_compat_init). */
  rk_compat_selector_t compat;
  /* Worker threads for large SIMD ops, the calling thread included; 0 means
   * the environment variable RK_OPS_THREADS, else the CPUs this process may
   * use. 1 disables threading. */
  int threads;
  /* Use a CBLAS library for matmul/matvec on the best ISA when one loads,
   * and cuBLAS for large matmuls on CUDA (default true; see RK_BLAS_LIB,
   * RK_CUBLAS_LIB and RK_OPS_GPU_BLAS_MIN in docs/ops.md). */
  bool use_blas;
} rk_ops_options_t;

/* The defaults above. */
void rk_ops_options_init(rk_ops_options_t *options);

/* Creates a handle. `options` may be NULL for defaults. A forced target is
 * checked here: an ISA the CPU lacks or rk was built without is
 * RK_ERR_UNAVAILABLE; a GPU backend is opened (and its kernels compiled) on
 * first use. RK_POLICY_CALIBRATED loads the cost model profile (see
 * rk_cost_model_open; with gpu_backends 0, rk_cost_model_options_t.cpu_only)
 * and prints nothing when there is none: each report's default_rates says
 * so. RK_ERR_INVALID_ARGUMENT for a bad option. */
rk_status_t rk_ops_create(const rk_ops_options_t *options, rk_ops_t **out_ops);
/* The cost model of a handle with RK_POLICY_CALIBRATED (NULL otherwise),
 * owned by the handle: rk_cost_model_info says where its rates come from
 * (a profile, or defaults and why). */
const rk_cost_model_t *rk_ops_cost_model(const rk_ops_t *ops);

/* Releases the handle, its threads and GPU contexts. NULL is ignored. */
void rk_ops_destroy(rk_ops_t *ops);

/* Changes the policy (and for RK_POLICY_FORCED the target) of a handle,
 * keeping its threads and GPU contexts. Checked as in rk_ops_create; on error
 * the handle is unchanged. Not to be called while another thread is inside
 * an op on the same handle. */
rk_status_t rk_ops_set_policy(rk_ops_t *ops, rk_policy_t policy,
                              const rk_exec_target_t *target);

/* What one call did. */
typedef struct rk_op_report {
  rk_op_t op;
  rk_policy_t policy;
  rk_exec_target_t target; /* where it ran */
  /* The policy's own answer when it differs from where the op ran (compat
   * chose GPU and no GPU backend is present); else equal to target. */
  rk_exec_target_t chosen;
  bool has_prediction; /* calibrated: the model's prediction for target */
  double predicted_s;
  /* The prediction used rk's default rates, not rates measured on this
   * machine: no profile, or none for this target (rk_ops_cost_model and
   * rk_cost_model_info say why; `rk calibrate` measures). rk prints no
   * warning: this is where a program learns it. */
  bool default_rates;
  double wall_s; /* measured, from entry to return (copies included) */
  int threads;   /* CPU threads that worked on it (1 on a GPU target) */
  /* The code that ran: "scalar", "avx2", "avx512", "neon",
   * "cblas:libopenblas.so.0", "gemm:avx512", "kernel:opencl",
   * "blas:libcublas.so.13", ... */
  char engine[64];
  /* Why the target differs from the policy's answer, or "" */
  char note[160];
} rk_op_report_t;

/* ---- Element-wise: out[i] = f(inputs[i]); out may alias an input ------- */

rk_status_t rk_ops_add(rk_ops_t *ops, size_t n, const float *a, const float *b,
                       float *out, rk_op_report_t *report);
rk_status_t rk_ops_sub(rk_ops_t *ops, size_t n, const float *a, const float *b,
                       float *out, rk_op_report_t *report);
rk_status_t rk_ops_mul(rk_ops_t *ops, size_t n, const float *a, const float *b,
                       float *out, rk_op_report_t *report);
/* y = alpha * x */
rk_status_t rk_ops_scale(rk_ops_t *ops, size_t n, float alpha, const float *x,
                         float *y, rk_op_report_t *report);
/* y = alpha * x + y */
rk_status_t rk_ops_axpy(rk_ops_t *ops, size_t n, float alpha, const float *x,
                        float *y, rk_op_report_t *report);
/* out = a * b + c (fused on SIMD and GPU targets) */
rk_status_t rk_ops_fma(rk_ops_t *ops, size_t n, const float *a, const float *b,
                       const float *c, float *out, rk_op_report_t *report);
/* y = max(x, 0) (NaN gives 0) */
rk_status_t rk_ops_relu(rk_ops_t *ops, size_t n, const float *x, float *y,
                        rk_op_report_t *report);
/* y = 1 / (1 + exp(-x)) */
rk_status_t rk_ops_sigmoid(rk_ops_t *ops, size_t n, const float *x, float *y,
                           rk_op_report_t *report);
/* y = exp(x) */
rk_status_t rk_ops_exp(rk_ops_t *ops, size_t n, const float *x, float *y,
                       rk_op_report_t *report);
/* y = tanh(x) */
rk_status_t rk_ops_tanh(rk_ops_t *ops, size_t n, const float *x, float *y,
                        rk_op_report_t *report);
/* y = ln(x): -inf at 0, NaN below 0 */
rk_status_t rk_ops_log(rk_ops_t *ops, size_t n, const float *x, float *y,
                       rk_op_report_t *report);

/* ---- Reductions into *out_result ---------------------------------------
 * Empty input: dot and sum give 0, min gives +infinity and max -infinity
 * (the identities). A NaN element makes min and max NaN. */

rk_status_t rk_ops_dot(rk_ops_t *ops, size_t n, const float *x, const float *y,
                       float *out_result, rk_op_report_t *report);
rk_status_t rk_ops_sum(rk_ops_t *ops, size_t n, const float *x,
                       float *out_result, rk_op_report_t *report);
rk_status_t rk_ops_min(rk_ops_t *ops, size_t n, const float *x,
                       float *out_result, rk_op_report_t *report);
rk_status_t rk_ops_max(rk_ops_t *ops, size_t n, const float *x,
                       float *out_result, rk_op_report_t *report);

/* ---- Matrices (row-major, dense) --------------------------------------- */

/* y[m] = A[m x n] x[n]. y must not overlap A or x. m or n may be 0 (n == 0
 * gives y = 0). */
rk_status_t rk_ops_matvec(rk_ops_t *ops, size_t m, size_t n, const float *a,
                          const float *x, float *y, rk_op_report_t *report);
/* C[m x n] = A[m x k] B[k x n]. C must not overlap A or B. Any size may be 0
 * (k == 0 gives C = 0). */
rk_status_t rk_ops_matmul(rk_ops_t *ops, size_t m, size_t n, size_t k,
                          const float *a, const float *b, float *c,
                          rk_op_report_t *report);

/* ---- Device-resident operands ------------------------------------------
 *
 * A buffer is an array of floats in device memory of one GPU target, in the
 * handle's context for that target (the same one its host-pointer ops use).
 * Ops on buffers run on that device whatever the policy (the data is there)
 * and copy nothing but a reduction's result:
 *
 *   rk_exec_target_t gpu = {RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_OPENCL, 0};
 *   rk_ops_buffer_t *x, *y;
 *   rk_ops_buffer_create(ops, &gpu, n, &x);  rk_ops_buffer_create(...&y);
 *   rk_ops_buffer_write(x, 0, host_x, n);
 *   rk_op_desc_t d = {.op = RK_OP_EXP, .n = n};
 *   rk_ops_buffer_t *operands[] = {x, y};
 *   rk_ops_run_resident(ops, &d, 0.0f, operands, 2, NULL, &report);
 *   rk_ops_buffer_read(y, 0, host_y, n);
 *
 * Buffers must be destroyed before their handle. A buffer may be used by
 * several threads as long as no two write it at once. */
typedef struct rk_ops_buffer rk_ops_buffer_t;

/* Allocates n (> 0) floats on the device of `target` (RK_EXEC_GPU), opening
 * the backend and compiling the kernels on first use. */
rk_status_t rk_ops_buffer_create(rk_ops_t *ops, const rk_exec_target_t *target,
                                 size_t n, rk_ops_buffer_t **out_buffer);
/* Wraps n (> 0) floats at `ptr` in the caller's own context `context` (from
 * rk_backend_create_context; ptr from rk_context_allocate, possibly plus a
 * byte offset) as a buffer, so that ops read their inputs from, and write
 * their results to, memory the caller's own kernels use, with no copy
 * through the host. [ptr, ptr + 4n) must lie inside one live allocation of
 * the context (else RK_ERR_OUT_OF_RANGE or RK_ERR_INVALID_ARGUMENT). The
 * buffer's target is the context's backend and device. The first wrapped
 * buffer of a context compiles the ops kernels there; they stay until the
 * last wrapped buffer of that context is destroyed. The memory stays the
 * caller's: rk_ops_buffer_destroy does not free it. Ops on wrapped buffers
 * are ordered after work the caller queued on the context's NULL stream and
 * complete before they return. Destroy wrapped buffers before their context
 * and before the handle; buffers of different contexts do not mix in one
 * op (RK_ERR_INVALID_ARGUMENT). */
rk_status_t rk_ops_buffer_wrap(rk_ops_t *ops, rk_context_t *context,
                               rk_devptr_t ptr, size_t n,
                               rk_ops_buffer_t **out_buffer);
/* NULL is ignored. A wrapped buffer's memory is not freed. */
void rk_ops_buffer_destroy(rk_ops_buffer_t *buffer);
/* The length in floats; 0 for NULL. */
size_t rk_ops_buffer_length(const rk_ops_buffer_t *buffer);
/* Copies n floats between host memory and elements [offset, offset + n) of
 * the buffer (RK_ERR_OUT_OF_RANGE past its end; n == 0 does nothing). */
rk_status_t rk_ops_buffer_write(rk_ops_buffer_t *buffer, size_t offset,
                                const float *src, size_t n);
rk_status_t rk_ops_buffer_read(const rk_ops_buffer_t *buffer, size_t offset,
                               float *dst, size_t n);

/* Runs desc->op (sizes desc->m, n, k as in rk_op_desc_t; the residency
 * fields are ignored) on buffers of one target, given in the order of the
 * host call's arrays: add/sub/mul (a, b, out), scale (x, y), axpy (x, y),
 * fma (a, b, c, out), relu/sigmoid/exp (x, y), dot (x, y), sum/min/max (x),
 * matvec (A, x, y), matmul (A, B, C). `alpha` is used by scale and axpy.
 * Reductions write *out_result on the host; other results stay in the
 * output buffer. Each buffer must hold at least the elements the shape
 * needs (else RK_ERR_OUT_OF_RANGE); buffers of different targets, a wrong
 * count and overlaps as for host pointers are RK_ERR_INVALID_ARGUMENT. The
 * report names the buffers' target; with the calibrated policy it also
 * carries the model's prediction for that target with resident inputs. */
rk_status_t rk_ops_run_resident(rk_ops_t *ops, const rk_op_desc_t *desc,
                                float alpha, rk_ops_buffer_t *const *operands,
                                size_t noperands, float *out_result,
                                rk_op_report_t *report);

/* The CBLAS library matmul uses ("libopenblas.so.0"), or NULL when none
 * loaded (then matmul runs rk's own blocked SIMD GEMM). */
const char *rk_ops_blas_name(void);

#ifdef __cplusplus
}
#endif

#endif /* RK_OPS_H_ */
