/* Ops on memory in the caller's own context (rk_ops_buffer_wrap), on every
 * backend that opens here among CPU, OpenCL, WebGPU and CUDA (the CPU
 * backend always): the caller's kernel writes x, an op reads it and writes
 * y in place, the caller's kernel then reads y; a reduction and a matmul on
 * wrapped memory at byte offsets; the report; and the errors (ranges
 * outside the allocation, buffers of two contexts, or of the caller's and
 * the handle's contexts, in one op). Buffers are destroyed before the
 * context, which is destroyed before the handle, as the API asks.
 *
 * RK_OPS_TEST_BACKENDS=cpu,opencl limits the backends tried. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/ops.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

enum { N = 1000, M = 13, K = 7, P = 9 };

static const char *kUserKernels =
    "RK_KERNEL void user_fill(int n, float *x) {\n"
    "  uint32_t i = rk_global_idx_x();\n"
    "  if (i < (uint32_t)n) x[i] = (float)i * 0.004f - 2.0f;\n"
    "}\n"
    "RK_KERNEL void user_double(int n, const float *y, float *z) {\n"
    "  uint32_t i = rk_global_idx_x();\n"
    "  if (i < (uint32_t)n) z[i] = 2.0f * y[i];\n"
    "}\n";

static float xval(int i) { return (float)i * 0.004f - 2.0f; }

static bool close_rel(double got, double ref, double rel) {
  return fabs(got - ref) <= rel * fabs(ref) + 1e-30;
}

static void run_backend(rk_backend_kind_t kind) {
  rk_backend_t *be = NULL;
  if (rk_backend_open(kind, &be) != RK_OK || rk_backend_device_count(be) < 1) {
    if (kind == RK_BACKEND_CPU) CHECK(false, "the CPU backend opens");
    printf("note: %s not tested here: %s\n", rk_backend_kind_name(kind),
           rk_last_error());
    rk_backend_destroy(be);
    return;
  }
  printf("backend %s\n", rk_backend_kind_name(kind));
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.gpu_backends = 0; /* the handle opens nothing itself */
  rk_ops_t *ops = NULL;
  rk_context_t *ctx = NULL, *ctx2 = NULL;
  rk_module_t *mod = NULL;
  rk_function_t *fill = NULL, *dbl = NULL;
  rk_devptr_t x = 0, y = 0, z = 0, mats = 0, other = 0;
  rk_ops_buffer_t *bx = NULL, *by = NULL, *bz = NULL, *ba = NULL, *bb = NULL,
                  *bc = NULL, *bother = NULL, *bown = NULL;
  static float host[N];
  if (!CHECK_OK(rk_ops_create(&o, &ops)) ||
      !CHECK_OK(rk_backend_create_context(be, 0, &ctx)) ||
      !CHECK_OK(rk_context_compile(ctx, kUserKernels, NULL, &mod)) ||
      !CHECK_OK(rk_module_get_function(mod, "user_fill", &fill)) ||
      !CHECK_OK(rk_module_get_function(mod, "user_double", &dbl)) ||
      !CHECK_OK(rk_context_allocate(ctx, N * sizeof(float), &x)) ||
      !CHECK_OK(rk_context_allocate(ctx, N * sizeof(float), &y)) ||
      !CHECK_OK(rk_context_allocate(ctx, N * sizeof(float), &z)))
    goto done;

  /* The caller's kernel produces x on the device. */
  rk_arg_t fa[] = {rk_arg_i32(N), rk_arg_ptr(x)};
  if (!CHECK_OK(rk_function_launch(fill, rk_dim3((N + 255) / 256, 1, 1),
                                   rk_dim3(256, 1, 1), 0, NULL, fa, 2)))
    goto done;

  /* exp(x) into y, both the caller's memory. */
  if (!CHECK_OK(rk_ops_buffer_wrap(ops, ctx, x, N, &bx)) ||
      !CHECK_OK(rk_ops_buffer_wrap(ops, ctx, y, N, &by)) ||
      !CHECK_OK(rk_ops_buffer_wrap(ops, ctx, z, N, &bz)))
    goto done;
  CHECK(rk_ops_buffer_length(bx) == N, "wrapped length");
  rk_op_desc_t d = {.op = RK_OP_EXP, .n = N};
  rk_ops_buffer_t *xy[] = {bx, by};
  rk_op_report_t r;
  /* Negative control: y holds no exp(x) yet, and the check below sees it. */
  memset(host, 0, sizeof host);
  CHECK_OK(rk_context_copy_to_device(ctx, y, host, sizeof host));
  CHECK_OK(rk_context_copy_to_host(ctx, host, y, sizeof host));
  CHECK(!close_rel(host[7], exp((double)xval(7)), 1e-5),
        "the check can fail (y is 0 before the op)");
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0.0f, xy, 2, NULL, &r))) {
    CHECK(r.target.kind == RK_EXEC_GPU && r.target.backend == kind &&
              r.target.device == 0,
          "the report names the context's backend");
    CHECK(strstr(r.note, "caller's device memory") != NULL, "note: %s", r.note);
    /* The caller's kernel consumes the op's result: z = 2 y. */
    rk_arg_t da[] = {rk_arg_i32(N), rk_arg_ptr(y), rk_arg_ptr(z)};
    CHECK_OK(rk_function_launch(dbl, rk_dim3((N + 255) / 256, 1, 1),
                                rk_dim3(256, 1, 1), 0, NULL, da, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, host, z, sizeof host));
    int bad = -1;
    for (int i = 0; i < N && bad < 0; ++i)
      if (!close_rel(host[i], 2.0 * exp((double)xval(i)), 1e-5)) bad = i;
    CHECK(bad < 0, "%s: 2 exp(x) wrong at %d: %g", rk_backend_kind_name(kind),
          bad, bad < 0 ? 0.0 : (double)host[bad]);
  }
  /* In place on the caller's memory: y = tanh(y), then dot(x, y). */
  rk_ops_buffer_t *yy[] = {by, by};
  d.op = RK_OP_TANH;
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0.0f, yy, 2, NULL, &r))) {
    CHECK_OK(rk_context_copy_to_host(ctx, host, y, sizeof host));
    int bad = -1;
    for (int i = 0; i < N && bad < 0; ++i)
      if (!close_rel(host[i], tanh(exp((double)xval(i))), 1e-5)) bad = i;
    CHECK(bad < 0, "in-place tanh wrong at %d", bad);
  }
  d.op = RK_OP_DOT;
  float dot = NAN;
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0.0f, xy, 2, &dot, &r))) {
    double ref = 0.0, mag = 0.0;
    for (int i = 0; i < N; ++i) {
      double t = (double)xval(i) * tanh(exp((double)xval(i)));
      ref += t;
      mag += fabs(t);
    }
    CHECK(fabs(dot - ref) <= 1e-5 * mag, "dot %g, want %g", (double)dot, ref);
  }

  /* matmul on three views of one allocation, at byte offsets. */
  size_t na = M * K, nb = K * P, nc = M * P;
  if (!CHECK_OK(
          rk_context_allocate(ctx, (na + nb + nc + 3) * sizeof(float), &mats)))
    goto done;
  static float A[M * K], B[K * P], C[M * P];
  for (size_t i = 0; i < na; ++i) A[i] = (float)((int)(i % 7) - 3) * 0.5f;
  for (size_t i = 0; i < nb; ++i) B[i] = (float)((int)(i % 5) - 2) * 0.25f;
  rk_devptr_t pa = mats + sizeof(float), pb = pa + na * sizeof(float),
              pc = pb + nb * sizeof(float) + sizeof(float);
  CHECK_OK(rk_context_copy_to_device(ctx, pa, A, sizeof A));
  CHECK_OK(rk_context_copy_to_device(ctx, pb, B, sizeof B));
  if (CHECK_OK(rk_ops_buffer_wrap(ops, ctx, pa, na, &ba)) &&
      CHECK_OK(rk_ops_buffer_wrap(ops, ctx, pb, nb, &bb)) &&
      CHECK_OK(rk_ops_buffer_wrap(ops, ctx, pc, nc, &bc))) {
    rk_op_desc_t md = {.op = RK_OP_MATMUL, .m = M, .n = P, .k = K};
    rk_ops_buffer_t *abc[] = {ba, bb, bc};
    if (CHECK_OK(rk_ops_run_resident(ops, &md, 0.0f, abc, 3, NULL, &r))) {
      CHECK_OK(rk_context_copy_to_host(ctx, C, pc, sizeof C));
      int bad = -1;
      for (int i = 0; i < M && bad < 0; ++i)
        for (int j = 0; j < P && bad < 0; ++j) {
          double ref = 0.0;
          for (int k = 0; k < K; ++k)
            ref += (double)A[i * K + k] * B[k * P + j];
          if (fabs(C[i * P + j] - ref) > 1e-5) bad = i * P + j;
        }
      CHECK(bad < 0, "matmul on wrapped views wrong at %d", bad);
    }
    /* B's view is too short for a larger k. */
    md.k = K + 1;
    CHECK_STATUS(rk_ops_run_resident(ops, &md, 0.0f, abc, 3, NULL, &r),
                 RK_ERR_OUT_OF_RANGE);
  }

  /* Errors. */
  rk_ops_buffer_t *bad_buf = NULL;
  CHECK(rk_ops_buffer_wrap(ops, ctx, x, N + 1, &bad_buf) != RK_OK,
        "a range past the allocation's end is refused");
  CHECK(rk_ops_buffer_wrap(ops, ctx, x + 8, N, &bad_buf) != RK_OK,
        "an offset range past the end is refused");
  CHECK_STATUS(rk_ops_buffer_wrap(ops, ctx, x, 0, &bad_buf),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_buffer_wrap(ops, NULL, x, N, &bad_buf),
               RK_ERR_INVALID_ARGUMENT);
  CHECK(bad_buf == NULL, "no buffer on errors");
  /* A second context of the same device: its buffers do not mix. */
  if (CHECK_OK(rk_backend_create_context(be, 0, &ctx2)) &&
      CHECK_OK(rk_context_allocate(ctx2, N * sizeof(float), &other)) &&
      CHECK_OK(rk_ops_buffer_wrap(ops, ctx2, other, N, &bother))) {
    rk_ops_buffer_t *mixed[] = {bx, bother};
    d.op = RK_OP_EXP;
    CHECK_STATUS(rk_ops_run_resident(ops, &d, 0.0f, mixed, 2, NULL, &r),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("different");
  }
  /* Nor do they mix with a buffer in the handle's own context. */
  rk_exec_target_t t = {RK_EXEC_GPU, RK_ISA_NONE, kind, 0};
  if (CHECK_OK(rk_ops_buffer_create(ops, &t, N, &bown))) {
    rk_ops_buffer_t *mixed[] = {bx, bown};
    CHECK_STATUS(rk_ops_run_resident(ops, &d, 0.0f, mixed, 2, NULL, &r),
                 RK_ERR_INVALID_ARGUMENT);
  }

done:
  rk_ops_buffer_destroy(bx);
  rk_ops_buffer_destroy(by);
  rk_ops_buffer_destroy(bz);
  rk_ops_buffer_destroy(ba);
  rk_ops_buffer_destroy(bb);
  rk_ops_buffer_destroy(bc);
  rk_ops_buffer_destroy(bother);
  rk_ops_buffer_destroy(bown);
  /* Wrapping never took ownership: the caller frees its memory. */
  if (ctx) {
    if (x) CHECK_OK(rk_context_free(ctx, x));
    if (y) CHECK_OK(rk_context_free(ctx, y));
    if (z) CHECK_OK(rk_context_free(ctx, z));
    if (mats) CHECK_OK(rk_context_free(ctx, mats));
  }
  if (ctx2 && other) CHECK_OK(rk_context_free(ctx2, other));
  rk_module_destroy(mod);
  rk_context_destroy(ctx2);
  rk_context_destroy(ctx);
  rk_ops_destroy(ops);
  rk_backend_destroy(be);
}

int main(void) {
  rk_test_use_temp_cache();
  const char *only = getenv("RK_OPS_TEST_BACKENDS");
  const rk_backend_kind_t kinds[] = {RK_BACKEND_CPU, RK_BACKEND_OPENCL,
                                     RK_BACKEND_WEBGPU, RK_BACKEND_CUDA};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    if (only && kinds[i] != RK_BACKEND_CPU &&
        !strstr(only, rk_backend_kind_name(kinds[i])))
      continue;
    run_backend(kinds[i]);
  }
  return rk_test_finish("ops_user_memory");
}
