/* One CPU worker pool for the CPU backend and the ops library
 * (src/base/pool.c): with default thread counts a CPU-backend context and
 * an ops handle that runs a threaded op hold the same pool (one live pool,
 * its thread count the CPUs), and both still compute right while the other
 * uses it from another thread; an ops handle with a different thread count
 * gets a pool of its own (the negative control: the count can tell); every
 * item of concurrent runs runs exactly once; the last release stops the
 * workers. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/sys.h"
#include "rk/ops.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

enum { ITEMS = 10000, BIG = 1 << 20 };

typedef struct count_arg {
  unsigned char *hits;
} count_arg_t;

static void count_items(void *arg, uint64_t first, uint64_t end) {
  count_arg_t *c = arg;
  for (uint64_t i = first; i < end; ++i)
    __atomic_add_fetch(&c->hits[i], 1, __ATOMIC_RELAXED);
}

static void *runner(void *arg) {
  rk__pool_t *pool = arg;
  unsigned char *hits = calloc(ITEMS, 1);
  count_arg_t c = {hits};
  bool ok = hits != NULL;
  for (int round = 0; round < 20 && ok; ++round) {
    memset(hits, 0, ITEMS);
    rk__pool_run(pool, ITEMS, 7, count_items, &c);
    for (int i = 0; i < ITEMS; ++i) ok &= hits[i] == 1;
  }
  free(hits);
  return ok ? arg : NULL;
}

static void *ops_loop(void *arg) {
  rk_ops_t *ops = arg;
  float *x = malloc(BIG * sizeof(float)), *y = malloc(BIG * sizeof(float));
  bool ok = x && y;
  for (int i = 0; ok && i < BIG; ++i) x[i] = (float)(i % 100) - 50.0f;
  for (int round = 0; ok && round < 10; ++round) {
    rk_op_report_t r;
    ok = rk_ops_relu(ops, BIG, x, y, &r) == RK_OK;
    for (int i = 0; ok && i < BIG; i += 997) ok = y[i] == (x[i] > 0 ? x[i] : 0);
  }
  free(x);
  free(y);
  return ok ? arg : NULL;
}

static int allowed_cpus(void) {
  int ids[1024];
  return rk__allowed_cpus(ids, 1024);
}

int main(void) {
  rk_test_use_temp_cache();
  unsetenv("RK_OPS_THREADS");
  unsetenv("RK_CPU_THREADS");
  CHECK(rk__pool_count() == 0, "no pool before anything runs");

  /* Items of runs from three threads at once on a 3-thread pool. */
  rk__pool_t *p3 = NULL;
  if (CHECK_OK(rk__pool_acquire(3, &p3))) {
    CHECK(rk__pool_threads(p3) == 3, "3 threads");
    pthread_t t[3];
    for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, runner, p3);
    for (int i = 0; i < 3; ++i) {
      void *ret;
      pthread_join(t[i], &ret);
      CHECK(ret == p3, "run %d: every item exactly once", i);
    }
    rk__pool_t *again = NULL;
    CHECK_OK(rk__pool_acquire(3, &again));
    CHECK(again == p3, "the same size gives the same pool");
    rk__pool_release(again);
    rk__pool_release(p3);
  }
  CHECK(rk__pool_count() == 0, "the last release stops the pool");

  /* The CPU backend and the ops library, default sizes. */
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  rk_ops_t *ops = NULL, *ops1 = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be)) ||
      !CHECK_OK(rk_backend_create_context(be, 0, &ctx)))
    goto done;
  CHECK(rk__pool_count() == 1, "the CPU context holds a pool");
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target.kind = RK_EXEC_SIMD;
  o.target.isa = rk_isa_best();
  o.gpu_backends = 0;
  if (o.target.isa == RK_ISA_NONE) o.target.kind = RK_EXEC_SCALAR;
  if (!CHECK_OK(rk_ops_create(&o, &ops))) goto done;
  /* A threaded op (2^20 elements: several parts on 2+ CPUs). */
  {
    static float x[BIG], y[BIG];
    rk_op_report_t r;
    if (CHECK_OK(rk_ops_relu(ops, BIG, x, y, &r)))
      CHECK(r.threads >= 2 || allowed_cpus() < 2,
            "relu ran on %d threads (%d CPUs)", r.threads, allowed_cpus());
  }
  void *ret = ops_loop(ops);
  CHECK(ret == ops, "relu on the shared pool");
  CHECK(rk__pool_count() == 1,
        "the ops handle shares the CPU backend's pool (%d pools)",
        rk__pool_count());
  /* Negative control: a handle with another thread count has its own. */
  rk_ops_options_t o1 = o;
  o1.threads = 7;
  if (CHECK_OK(rk_ops_create(&o1, &ops1))) {
    ret = ops_loop(ops1);
    CHECK(ret == ops1, "relu on a 7-thread pool");
    CHECK(rk__pool_count() == 2, "threads = 7: a second pool (%d)",
          rk__pool_count());
    rk_ops_destroy(ops1);
    CHECK(rk__pool_count() == 1, "destroying that handle stops it");
  }
  /* Both users at once: the ops loop on another thread while a kernel runs
   * on the CPU backend here. */
  {
    pthread_t t;
    pthread_create(&t, NULL, ops_loop, ops);
    const char *src =
        "RK_KERNEL void sq(int n, float *x) {\n"
        "  uint32_t i = rk_global_idx_x();\n"
        "  if (i < (uint32_t)n) x[i] = x[i] * x[i];\n"
        "}\n";
    rk_module_t *mod = NULL;
    rk_function_t *fn = NULL;
    rk_devptr_t d = 0;
    static float h[4096];
    for (int i = 0; i < 4096; ++i) h[i] = (float)i;
    if (CHECK_OK(rk_context_compile(ctx, src, NULL, &mod)) &&
        CHECK_OK(rk_module_get_function(mod, "sq", &fn)) &&
        CHECK_OK(rk_context_allocate(ctx, sizeof h, &d)) &&
        CHECK_OK(rk_context_copy_to_device(ctx, d, h, sizeof h))) {
      for (int k = 0; k < 20; ++k) {
        rk_arg_t a[] = {rk_arg_i32(4096), rk_arg_ptr(d)};
        CHECK_OK(rk_function_launch(fn, rk_dim3(16, 1, 1), rk_dim3(256, 1, 1),
                                    0, NULL, a, 2));
        CHECK_OK(rk_context_synchronize(ctx));
        CHECK_OK(rk_context_copy_to_device(ctx, d, h, sizeof h));
      }
      CHECK_OK(
          rk_function_launch(fn, rk_dim3(16, 1, 1), rk_dim3(256, 1, 1), 0, NULL,
                             (rk_arg_t[]){rk_arg_i32(4096), rk_arg_ptr(d)}, 2));
      static float out[4096];
      CHECK_OK(rk_context_copy_to_host(ctx, out, d, sizeof out));
      int bad = -1;
      for (int i = 0; i < 4096 && bad < 0; ++i)
        if (out[i] != h[i] * h[i]) bad = i;
      CHECK(bad < 0, "the CPU backend's kernel while ops run: element %d", bad);
    }
    if (d) rk_context_free(ctx, d);
    rk_module_destroy(mod);
    pthread_join(t, &ret);
    CHECK(ret == ops, "relu on another thread meanwhile");
  }

done:
  rk_ops_destroy(ops);
  rk_context_destroy(ctx);
  rk_backend_destroy(be);
  CHECK(rk__pool_count() == 0, "no pool left (%d)", rk__pool_count());
  return rk_test_finish("pool_shared");
}
