/* trace_program.c - a known rk program for the trace test
 * (check_trace.py): every kind of event the trace records, in an order
 * the test can check.
 *
 *   RK_TRACE=out.json trace_program [--stop]
 *
 * It compiles one kernel twice (a cache miss, then a hit, in a fresh cache
 * directory), copies to the device, launches, synchronizes, copies back,
 * does the same on a stream, runs rk_ops_add under the calibrated policy
 * (a cost decision), calls an actor twice, and wraps it all in a user range
 * "trace program". With --stop it calls rk_trace_stop() itself; otherwise
 * the trace is written at exit. Exit 0 when every call succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static const char *kKernel =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void twice(int n, float *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] *= 2.0f;\n"
    "}\n";

static const char *kHandler =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

enum { N = 256 };

static void kernels(rk_context_t *ctx) {
  rk_compile_options_t co;
  rk_compile_options_init(&co);
  co.source_name = "twice.c";
  rk_module_t *m1 = NULL, *m2 = NULL;
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kKernel, &co, &m1))) return;
  CHECK(!rk_module_cache_hit(m1), "the first compile hit the cache");
  if (!CHECK_OK(rk_context_compile(ctx, kKernel, &co, &m2))) return;
  CHECK(rk_module_cache_hit(m2), "the second compile missed the cache");
  if (!CHECK_OK(rk_module_get_function(m2, "twice", &fn))) return;

  float host[N];
  for (int i = 0; i < N; ++i) host[i] = (float)i;
  rk_devptr_t x;
  if (!CHECK_OK(rk_context_allocate(ctx, sizeof host, &x))) return;
  rk_arg_t args[] = {rk_arg_i32(N), rk_arg_ptr(x)};
  CHECK_OK(rk_context_copy_to_device(ctx, x, host, sizeof host));
  CHECK_OK(rk_function_launch(fn, rk_dim3(N / 64, 1, 1), rk_dim3(64, 1, 1), 0,
                              NULL, args, 2));
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_copy_to_host(ctx, host, x, sizeof host));
  CHECK(host[N - 1] == 2.0f * (N - 1), "x[%d] = %g", N - 1, host[N - 1]);

  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(ctx, &st))) {
    CHECK_OK(rk_stream_copy_to_device(st, x, host, sizeof host));
    CHECK_OK(rk_function_launch(fn, rk_dim3(N / 64, 1, 1), rk_dim3(64, 1, 1), 0,
                                st, args, 2));
    CHECK_OK(rk_stream_copy_to_host(st, host, x, sizeof host));
    CHECK_OK(rk_stream_synchronize(st));
    CHECK(host[N - 1] == 4.0f * (N - 1), "x[%d] = %g", N - 1, host[N - 1]);
    CHECK_OK(rk_stream_destroy(st));
  }
  CHECK_OK(rk_context_free(ctx, x));
}

static void ops(void) {
  rk_ops_options_t oo;
  rk_ops_options_init(&oo);
  oo.policy = RK_POLICY_CALIBRATED;
  oo.gpu_backends = 0; /* CPU candidates only: no GPU backend probed */
  rk_ops_t *ops = NULL;
  if (!CHECK_OK(rk_ops_create(&oo, &ops))) return;
  float a[N], b[N], out[N];
  for (int i = 0; i < N; ++i) a[i] = b[i] = (float)i;
  CHECK_OK(rk_ops_add(ops, N, a, b, out, NULL));
  CHECK(out[3] == 6.0f, "out[3] = %g", out[3]);
  rk_ops_destroy(ops);
}

static void actor(rk_context_t *ctx) {
  rk_actor_options_t ao;
  rk_actor_options_init(&ao);
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(ctx, kHandler, "add_one", &ao, &a))) return;
  for (int i = 0; i < 2; ++i) {
    int q = 41 + i, r = 0;
    CHECK_OK(
        rk_actor_call(a, &q, sizeof q, &r, sizeof r, 10000000000ull, NULL));
    CHECK(r == q + 1, "answer %d to %d", r, q);
  }
  CHECK_OK(rk_actor_terminate(a, 5000000000ull));
  rk_actor_destroy(a);
}

int main(int argc, char **argv) {
  bool stop = argc > 1 && strcmp(argv[1], "--stop") == 0;
  rk_test_use_temp_cache();
  CHECK(rk_trace_active(), "no trace is recording (RK_TRACE unset?)");
  rk_trace_range_push("trace program");
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  if (CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be)) &&
      CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    kernels(ctx);
    ops();
    actor(ctx);
  }
  rk_trace_range_pop();
  if (ctx) CHECK_OK(rk_context_destroy(ctx));
  if (be) CHECK_OK(rk_backend_destroy(be));
  if (stop) CHECK_OK(rk_trace_stop());
  return rk_test_finish("trace_program");
}
