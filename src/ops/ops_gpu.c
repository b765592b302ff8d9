/* The GPU engine: every op as a kernel in rk's kernel language, compiled
 * once per context through rk_context_compile and launched through the
 * public HAL API, so the same source runs on every backend (the CPU backend
 * runs it as C; CUDA, OpenCL, WebGPU and Metal get it transpiled).
 *
 * A call copies its operands into device buffers kept per context (grown,
 * never shrunk, so repeated calls of one size allocate nothing), launches,
 * synchronizes and copies the result back. Element-wise kernels use a
 * grid-stride loop over at most 1024 blocks of 256 threads; reductions let
 * each of at most 64 x 256 threads reduce its stride into one partial value
 * and the host combines the partials (in double for sums). matvec runs one
 * thread per row; matmul computes one element of C per thread in 16 x 16
 * blocks, staging tiles of A and B in block-shared memory.
 * Device operands are limited to 2^31 - 1 elements (32-bit indices, as
 * WGSL has no 64-bit integers).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "hal/blas_hal.h"
#include "ops/ops_gpu_source.h"
#include "ops/ops_internal.h"
#include "rk/backend.h"

static const char kOpsKernels[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "RK_KERNEL void ops_add(int n, const float *a, const float *b, float *o) "
    "{\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    o[i] = a[i] + b[i];\n"
    "}\n"
    "RK_KERNEL void ops_sub(int n, const float *a, const float *b, float *o) "
    "{\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    o[i] = a[i] - b[i];\n"
    "}\n"
    "RK_KERNEL void ops_mul(int n, const float *a, const float *b, float *o) "
    "{\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    o[i] = a[i] * b[i];\n"
    "}\n"
    "RK_KERNEL void ops_scale(int n, float alpha, const float *x, float *y) "
    "{\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = alpha * x[i];\n"
    "}\n"
    "RK_KERNEL void ops_axpy(int n, float alpha, const float *x, float *y) "
    "{\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = fmaf(alpha, x[i], y[i]);\n"
    "}\n"
    "RK_KERNEL void ops_fma(int n, const float *a, const float *b,\n"
    "                       const float *c, float *o) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    o[i] = fmaf(a[i], b[i], c[i]);\n"
    "}\n"
    "RK_KERNEL void ops_relu(int n, const float *x, float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = x[i] > 0.0f ? x[i] : 0.0f;\n"
    "}\n"
    "RK_KERNEL void ops_sigmoid(int n, const float *x, float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = 1.0f / (1.0f + expf(-x[i]));\n"
    "}\n"
    "RK_KERNEL void ops_exp(int n, const float *x, float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = expf(x[i]);\n"
    "}\n"
    "RK_KERNEL void ops_tanh(int n, const float *x, float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = tanhf(x[i]);\n"
    "}\n"
    "RK_KERNEL void ops_log(int n, const float *x, float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += s)\n"
    "    y[i] = logf(x[i]);\n"
    "}\n"
    "/* Reductions: one partial value per thread; n >= 1. */\n"
    "RK_KERNEL void ops_dot(int n, const float *x, const float *y,\n"
    "                       float *part) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  uint32_t g = rk_global_idx_x();\n"
    "  float acc = 0.0f;\n"
    "  for (uint32_t i = g; i < (uint32_t)n; i += s)\n"
    "    acc = fmaf(x[i], y[i], acc);\n"
    "  part[g] = acc;\n"
    "}\n"
    "RK_KERNEL void ops_sum(int n, const float *x, float *part) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  uint32_t g = rk_global_idx_x();\n"
    "  float acc = 0.0f;\n"
    "  for (uint32_t i = g; i < (uint32_t)n; i += s)\n"
    "    acc += x[i];\n"
    "  part[g] = acc;\n"
    "}\n"
    "/* A thread past the end starts from x[0], which leaves the minimum\n"
    " * unchanged; a NaN, once taken, is never replaced. */\n"
    "RK_KERNEL void ops_min(int n, const float *x, float *part) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  uint32_t g = rk_global_idx_x();\n"
    "  float m = x[g < (uint32_t)n ? g : 0u];\n"
    "  for (uint32_t i = g; i < (uint32_t)n; i += s) {\n"
    "    float v = x[i];\n"
    "    if (v < m || v != v) m = v;\n"
    "  }\n"
    "  part[g] = m;\n"
    "}\n"
    "RK_KERNEL void ops_max(int n, const float *x, float *part) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  uint32_t g = rk_global_idx_x();\n"
    "  float m = x[g < (uint32_t)n ? g : 0u];\n"
    "  for (uint32_t i = g; i < (uint32_t)n; i += s) {\n"
    "    float v = x[i];\n"
    "    if (v > m || v != v) m = v;\n"
    "  }\n"
    "  part[g] = m;\n"
    "}\n"
    "RK_KERNEL void ops_matvec(int m, int n, const float *a, const float *x,\n"
    "                          float *y) {\n"
    "  uint32_t s = rk_grid_dim_x() * rk_block_dim_x();\n"
    "  uint32_t un = (uint32_t)n;\n"
    "  for (uint32_t r = rk_global_idx_x(); r < (uint32_t)m; r += s) {\n"
    "    float acc = 0.0f;\n"
    "    for (uint32_t j = 0u; j < un; ++j)\n"
    "      acc = fmaf(a[r * un + j], x[j], acc);\n"
    "    y[r] = acc;\n"
    "  }\n"
    "}\n"
    "/* 16 x 16 tiles of A and B staged in block-shared memory; every\n"
    " * thread of the block reaches both barriers (the loop bound is the\n"
    " * same for all), and threads outside C only help loading. */\n"
    "RK_KERNEL void ops_matmul(int m, int n, int k, const float *a,\n"
    "                          const float *b, float *c) {\n"
    "  RK_SHARED float ta[16][16];\n"
    "  RK_SHARED float tb[16][16];\n"
    "  uint32_t tx = rk_thread_idx_x();\n"
    "  uint32_t ty = rk_thread_idx_y();\n"
    "  uint32_t col = rk_block_idx_x() * 16u + tx;\n"
    "  uint32_t row = rk_block_idx_y() * 16u + ty;\n"
    "  uint32_t um = (uint32_t)m;\n"
    "  uint32_t un = (uint32_t)n;\n"
    "  uint32_t uk = (uint32_t)k;\n"
    "  float acc = 0.0f;\n"
    "  for (uint32_t t0 = 0u; t0 < uk; t0 += 16u) {\n"
    "    float va = 0.0f;\n"
    "    float vb = 0.0f;\n"
    "    if (row < um && t0 + tx < uk) va = a[row * uk + t0 + tx];\n"
    "    if (t0 + ty < uk && col < un) vb = b[(t0 + ty) * un + col];\n"
    "    ta[ty][tx] = va;\n"
    "    tb[ty][tx] = vb;\n"
    "    rk_sync_threads();\n"
    "    for (uint32_t p = 0u; p < 16u; ++p)\n"
    "      acc = fmaf(ta[ty][p], tb[p][tx], acc);\n"
    "    rk_sync_threads();\n"
    "  }\n"
    "  if (row < um && col < un) c[row * un + col] = acc;\n"
    "}\n";

const char *rk__ops_gpu_source(void) { return kOpsKernels; }

enum {
  EW_BLOCK = 256,
  EW_MAX_BLOCKS = 1024,
  RED_MAX_BLOCKS = 64,
  MM_TILE = 16,
  MAX_GRID = 65535, /* the smallest per-dimension limit (WebGPU) */
  NBUF = 4,
};

struct rk__ops_gpu {
  rk_backend_t *backend;
  rk_context_t *context;
  rk_module_t *module;
  rk_function_t *fn[RK_OP_COUNT_];
  bool software;
  bool borrowed;        /* the context (and backend) belong to the caller */
  pthread_mutex_t lock; /* one op at a time on the scratch buffers */
  rk_devptr_t buf[NBUF];
  size_t cap[NBUF];
  float *partials; /* host copy of reduction partials */
  /* Multiply-adds (m n k) from which a matmul goes to the vendor BLAS:
   * RK_OPS_GPU_BLAS_MIN, else kBlasMin. */
  double blas_min;
};

/* Below 512^3 multiply-adds rk's kernel: on an H200 it was 1.3x faster
 * than cuBLAS at 256^3 (a call is short enough for cuBLAS's own set-up to
 * show), cuBLAS 4x faster at 1024^3 (docs/benchmarks.md). */
static const double kBlasMin = 512.0 * 512.0 * 512.0;

static double blas_min_from_env(void) {
  const char *e = getenv("RK_OPS_GPU_BLAS_MIN");
  if (!e || !*e) return kBlasMin;
  char *end = NULL;
  const double v = strtod(e, &end);
  return end && *end == '\0' && v >= 0 ? v : kBlasMin;
}

static const char *const kNames[RK_OP_COUNT_] = {
    [RK_OP_ADD] = "ops_add",       [RK_OP_SUB] = "ops_sub",
    [RK_OP_MUL] = "ops_mul",       [RK_OP_SCALE] = "ops_scale",
    [RK_OP_AXPY] = "ops_axpy",     [RK_OP_FMA] = "ops_fma",
    [RK_OP_DOT] = "ops_dot",       [RK_OP_SUM] = "ops_sum",
    [RK_OP_MIN] = "ops_min",       [RK_OP_MAX] = "ops_max",
    [RK_OP_RELU] = "ops_relu",     [RK_OP_SIGMOID] = "ops_sigmoid",
    [RK_OP_EXP] = "ops_exp",       [RK_OP_MATVEC] = "ops_matvec",
    [RK_OP_MATMUL] = "ops_matmul", [RK_OP_TANH] = "ops_tanh",
    [RK_OP_LOG] = "ops_log",
};

void rk__ops_gpu_destroy(rk__ops_gpu_t *gpu) {
  if (!gpu) return;
  if (gpu->context) {
    for (int i = 0; i < NBUF; ++i)
      if (gpu->buf[i]) rk_context_free(gpu->context, gpu->buf[i]);
    rk_module_destroy(gpu->module);
    if (!gpu->borrowed) rk_context_destroy(gpu->context);
  }
  if (!gpu->borrowed) rk_backend_destroy(gpu->backend);
  pthread_mutex_destroy(&gpu->lock);
  free(gpu->partials);
  free(gpu);
}

static rk_status_t compile_kernels(rk__ops_gpu_t *gpu);

rk_status_t rk__ops_gpu_create(rk_backend_kind_t kind, int device,
                               rk__ops_gpu_t **out) {
  rk__ops_gpu_t *gpu = calloc(1, sizeof *gpu);
  if (!gpu) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: gpu engine");
  pthread_mutex_init(&gpu->lock, NULL);
  gpu->blas_min = blas_min_from_env();
  rk_status_t s = RK_OK;
  gpu->partials = malloc(sizeof(float) * RED_MAX_BLOCKS * EW_BLOCK);
  if (!gpu->partials) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: gpu engine");
    goto fail;
  }
  s = rk_backend_open(kind, &gpu->backend);
  if (s != RK_OK) {
    s = rk__fail_context(s, "ops: backend %s", rk_backend_kind_name(kind));
    goto fail;
  }
  int count = rk_backend_device_count(gpu->backend);
  if (device < 0 || device >= count) {
    s = rk__fail(RK_ERR_UNAVAILABLE,
                 "ops: backend %s has %d device(s); device %d requested",
                 rk_backend_kind_name(kind), count, device);
    goto fail;
  }
  rk_device_info_t info;
  if (rk_backend_device_info(gpu->backend, device, &info) == RK_OK)
    gpu->software = (info.caps & RK_CAP_SOFTWARE) != 0;
  s = rk_backend_create_context(gpu->backend, device, &gpu->context);
  if (s != RK_OK) goto fail;
  s = compile_kernels(gpu);
  if (s != RK_OK) goto fail;
  *out = gpu;
  return RK_OK;
fail:
  rk__ops_gpu_destroy(gpu);
  return s;
}

rk_status_t rk__ops_gpu_create_in(rk_context_t *context, rk__ops_gpu_t **out) {
  rk__ops_gpu_t *gpu = calloc(1, sizeof *gpu);
  if (!gpu) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: gpu engine");
  pthread_mutex_init(&gpu->lock, NULL);
  gpu->blas_min = blas_min_from_env();
  gpu->borrowed = true;
  gpu->context = context;
  gpu->backend = rk_context_backend(context);
  rk_status_t s = RK_OK;
  gpu->partials = malloc(sizeof(float) * RED_MAX_BLOCKS * EW_BLOCK);
  if (!gpu->partials) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: gpu engine");
    goto fail;
  }
  s = compile_kernels(gpu);
  if (s != RK_OK) goto fail;
  *out = gpu;
  return RK_OK;
fail:
  rk__ops_gpu_destroy(gpu);
  return s;
}

/* The ops kernels into gpu->context. */
static rk_status_t compile_kernels(rk__ops_gpu_t *gpu) {
  rk_status_t s;
  rk_compile_options_t co;
  rk_compile_options_init(&co);
  co.source_name = "rk_ops_kernels.c";
  s = rk_context_compile(gpu->context, kOpsKernels, &co, &gpu->module);
  if (s != RK_OK)
    return rk__fail_context(s, "ops: compiling the ops kernels for %s",
                            rk_backend_name(gpu->backend));
  for (int op = 0; op < RK_OP_COUNT_; ++op)
    RK_RETURN_IF_ERROR(
        rk_module_get_function(gpu->module, kNames[op], &gpu->fn[op]));
  return RK_OK;
}

bool rk__ops_gpu_is_software(const rk__ops_gpu_t *gpu) { return gpu->software; }

/* Scratch buffer `i` with at least `bytes` (> 0). */
static rk_status_t scratch(rk__ops_gpu_t *gpu, int i, size_t bytes,
                           rk_devptr_t *out) {
  if (gpu->cap[i] < bytes) {
    if (gpu->buf[i]) {
      rk_context_free(gpu->context, gpu->buf[i]);
      gpu->buf[i] = 0;
      gpu->cap[i] = 0;
    }
    size_t want = bytes < 4096 ? 4096 : bytes;
    RK_RETURN_IF_ERROR(rk_context_allocate(gpu->context, want, &gpu->buf[i]));
    gpu->cap[i] = want;
  }
  *out = gpu->buf[i];
  return RK_OK;
}

static uint32_t blocks_for(size_t n, uint32_t max_blocks) {
  size_t b = (n + EW_BLOCK - 1) / EW_BLOCK;
  if (b < 1) b = 1;
  return b > max_blocks ? max_blocks : (uint32_t)b;
}

/* `dev`, when not NULL, holds resident operands: dev[0..2] the inputs and
 * dev[3] the output (0 for a reduction); nothing is copied for them. */
static rk_status_t run_locked(rk__ops_gpu_t *gpu, const rk__ops_args_t *a,
                              const rk_devptr_t *dev,
                              rk__ops_gpu_blas_t *blas) {
  rk_context_t *ctx = gpu->context;
  rk_function_t *fn = gpu->fn[a->op];
  rk_devptr_t d[NBUF] = {0};
  rk_arg_t args[8];
  size_t nargs = 0;
  rk_dim3_t grid, block = rk_dim3(EW_BLOCK, 1, 1);
  size_t nf = sizeof(float);
  size_t out_count = 0; /* elements of the output (buffer 3) */
  int nin = 0;          /* inputs copied to buffers 0.. */
  const float *in[3] = {a->a, a->b, a->c};
  size_t in_count[3] = {a->n, a->n, a->n};
  int ni = (int)a->n;

  switch (a->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
      nin = 2;
      out_count = a->n;
      break;
    case RK_OP_FMA:
      nin = 3;
      out_count = a->n;
      break;
    case RK_OP_SCALE:
    case RK_OP_RELU:
    case RK_OP_SIGMOID:
    case RK_OP_EXP:
    case RK_OP_TANH:
    case RK_OP_LOG:
      nin = 1;
      out_count = a->n;
      break;
    case RK_OP_AXPY: /* y is an input and the output: buffer 1 */
      nin = 2;
      break;
    case RK_OP_DOT:
      nin = 2;
      break;
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      nin = 1;
      break;
    case RK_OP_MATVEC:
      nin = 2;
      in_count[0] = a->m * a->n;
      out_count = a->m;
      break;
    case RK_OP_MATMUL:
      nin = 2;
      in_count[0] = a->m * a->k;
      in_count[1] = a->k * a->n;
      out_count = a->m * a->n;
      break;
    default:
      return rk__fail(RK_ERR_INTERNAL, "ops: no kernel for op %d", a->op);
  }
  for (int i = 0; i < nin; ++i) {
    if (dev) {
      d[i] = dev[i];
      continue;
    }
    RK_RETURN_IF_ERROR(scratch(gpu, i, in_count[i] * nf, &d[i]));
    RK_RETURN_IF_ERROR(
        rk_context_copy_to_device(ctx, d[i], in[i], in_count[i] * nf));
  }
  bool reduce = a->op == RK_OP_DOT || a->op == RK_OP_SUM ||
                a->op == RK_OP_MIN || a->op == RK_OP_MAX;
  uint32_t nb = blocks_for(a->n, reduce ? RED_MAX_BLOCKS : EW_MAX_BLOCKS);
  size_t nparts = (size_t)nb * EW_BLOCK;
  if (reduce) out_count = nparts;
  if (dev && !reduce)
    d[3] = dev[3];
  else if (a->op != RK_OP_AXPY)
    RK_RETURN_IF_ERROR(scratch(gpu, 3, out_count * nf, &d[3]));
  grid = rk_dim3(nb, 1, 1);

  switch (a->op) {
    case RK_OP_SCALE:
    case RK_OP_AXPY:
      args[nargs++] = rk_arg_i32(ni);
      args[nargs++] = rk_arg_f32(a->alpha);
      args[nargs++] = rk_arg_ptr(d[0]);
      args[nargs++] = rk_arg_ptr(a->op == RK_OP_AXPY ? d[1] : d[3]);
      break;
    case RK_OP_MATVEC:
      grid = rk_dim3(blocks_for(a->m, EW_MAX_BLOCKS), 1, 1);
      args[nargs++] = rk_arg_i32((int)a->m);
      args[nargs++] = rk_arg_i32(ni);
      args[nargs++] = rk_arg_ptr(d[0]);
      args[nargs++] = rk_arg_ptr(d[1]);
      args[nargs++] = rk_arg_ptr(d[3]);
      break;
    case RK_OP_MATMUL:
      block = rk_dim3(MM_TILE, MM_TILE, 1);
      grid = rk_dim3((uint32_t)((a->n + MM_TILE - 1) / MM_TILE),
                     (uint32_t)((a->m + MM_TILE - 1) / MM_TILE), 1);
      args[nargs++] = rk_arg_i32((int)a->m);
      args[nargs++] = rk_arg_i32(ni);
      args[nargs++] = rk_arg_i32((int)a->k);
      args[nargs++] = rk_arg_ptr(d[0]);
      args[nargs++] = rk_arg_ptr(d[1]);
      args[nargs++] = rk_arg_ptr(d[3]);
      break;
    default:
      args[nargs++] = rk_arg_i32(ni);
      for (int i = 0; i < nin; ++i) args[nargs++] = rk_arg_ptr(d[i]);
      args[nargs++] = rk_arg_ptr(d[3]);
      break;
  }
  bool launched = false;
  if (a->op == RK_OP_MATMUL && blas && blas->allowed &&
      (double)a->m * (double)a->n * (double)a->k >= gpu->blas_min) {
    /* The vendor's GEMM where the backend has one that can run now; if it
     * cannot, rk's kernel, and the caller's message as it was. */
    char *saved = rk__error_save();
    const rk_status_t bs =
        rk__hal_blas_sgemm(ctx, a->m, a->n, a->k, d[0], d[1], d[3],
                           blas->library, sizeof blas->library);
    if (bs == RK_ERR_UNAVAILABLE || bs == RK_ERR_UNIMPLEMENTED) {
      if (bs == RK_ERR_UNAVAILABLE)
        snprintf(blas->why, sizeof blas->why, "%s", rk_last_error());
      rk__error_restore(saved);
    } else {
      free(saved);
      if (bs != RK_OK) return bs;
      launched = true;
    }
  }
  if (!launched)
    RK_RETURN_IF_ERROR(
        rk_function_launch(fn, grid, block, 0, NULL, args, nargs));
  RK_RETURN_IF_ERROR(rk_context_synchronize(ctx));

  if (dev && !reduce) return RK_OK; /* the result stays on the device */
  if (a->op == RK_OP_AXPY)
    return rk_context_copy_to_host(ctx, a->out, d[1], a->n * nf);
  if (!reduce)
    return rk_context_copy_to_host(ctx, a->out, d[3], out_count * nf);

  float *p = gpu->partials;
  RK_RETURN_IF_ERROR(rk_context_copy_to_host(ctx, p, d[3], nparts * nf));
  if (a->op == RK_OP_DOT || a->op == RK_OP_SUM) {
    double acc = 0.0;
    for (size_t i = 0; i < nparts; ++i) acc += p[i];
    *a->result = (float)acc;
  } else {
    bool is_min = a->op == RK_OP_MIN;
    float m = p[0];
    for (size_t i = 1; i < nparts; ++i)
      if ((is_min ? p[i] < m : p[i] > m) || p[i] != p[i]) m = p[i];
    *a->result = m;
  }
  return RK_OK;
}

rk_status_t rk__ops_gpu_run(rk__ops_gpu_t *gpu, const rk__ops_args_t *a,
                            const rk_devptr_t *dev, rk__ops_gpu_blas_t *blas) {
  /* Limits of the kernels' 32-bit indices and of the grid. */
  size_t lim = INT32_MAX;
  bool too_big = a->n > lim || a->m > lim || a->k > lim;
  if (!too_big && a->op == RK_OP_MATVEC) too_big = a->m * a->n > lim;
  if (!too_big && a->op == RK_OP_MATMUL)
    too_big = a->m * a->k > lim || a->k * a->n > lim || a->m * a->n > lim ||
              (a->m + MM_TILE - 1) / MM_TILE > MAX_GRID ||
              (a->n + MM_TILE - 1) / MM_TILE > MAX_GRID;
  if (too_big)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "ops %s: GPU kernels take operands of at most 2^31 - 1 "
                    "elements (m=%zu n=%zu k=%zu)",
                    rk_op_name(a->op), a->m, a->n, a->k);
  pthread_mutex_lock(&gpu->lock);
  if (blas) blas->library[0] = blas->why[0] = '\0';
  rk_status_t s = run_locked(gpu, a, dev, blas);
  pthread_mutex_unlock(&gpu->lock);
  if (s != RK_OK)
    return rk__fail_context(s, "ops %s on %s", rk_op_name(a->op),
                            rk_backend_name(gpu->backend));
  return RK_OK;
}

rk_context_t *rk__ops_gpu_context(const rk__ops_gpu_t *gpu) {
  return gpu->context;
}
