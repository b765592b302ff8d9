/* CPU backend: execution details - 1024-thread blocks with barriers (one
 * fiber per thread), barriers with one-thread blocks, barriers reached
 * through a macro, concurrent launches from several host threads, and the
 * pool's environment settings. */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cpu_test_util.h"

static rk_backend_t *g_be;

static rk_context_t *new_context(void) {
  rk_context_t *ctx = NULL;
  if (!CHECK_OK(rk_backend_create_context(g_be, 0, &ctx))) exit(1);
  return ctx;
}

static rk_function_t *compile_fn(rk_context_t *ctx, const char *name,
                                 const char *src, const char *kernel) {
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  if (!CHECK_OK(cpu_compile(ctx, src, name, NULL, false, &mod))) return NULL;
  if (!CHECK_OK(rk_module_get_function(mod, kernel, &fn))) return NULL;
  return fn;
}

/* ---- 1024 threads per block with barriers ------------------------------ */

static const char kBigBlockSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void sum1024(const int *in, int *out) {\n"
    "  RK_SHARED int sh[1024];\n"
    "  uint32_t t = rk_thread_idx_x();\n"
    "  sh[t] = in[rk_global_idx_x()];\n"
    "  rk_sync_threads();\n"
    "  for (uint32_t s = 512; s > 0; s >>= 1) {\n"
    "    if (t < s) sh[t] += sh[t + s];\n"
    "    rk_sync_threads();\n"
    "  }\n"
    "  if (t == 0) out[rk_block_idx_x()] = sh[0];\n"
    "}\n"
    /* A 16x8x8 block: each thread's linear index from its 3D index, written
     * to shared memory, read back reversed after a barrier. */
    "RK_KERNEL void reverse3d(int *out) {\n"
    "  RK_SHARED int sh[1024];\n"
    "  uint32_t t = (rk_thread_idx_z() * rk_block_dim_y() + "
    "rk_thread_idx_y())\n"
    "               * rk_block_dim_x() + rk_thread_idx_x();\n"
    "  sh[t] = (int)(t + 1000 * rk_block_idx_x());\n"
    "  rk_sync_threads();\n"
    "  out[rk_block_idx_x() * 1024 + t] = sh[1023 - t];\n"
    "}\n";

static void test_1024_thread_barriers(void) {
  enum { kBlocks = 6, kN = kBlocks * 1024 };
  rk_context_t *ctx = new_context();
  rk_function_t *sum =
      compile_fn(ctx, "bigblock.c", kBigBlockSource, "sum1024");
  rk_function_t *rev =
      compile_fn(ctx, "bigblock.c", kBigBlockSource, "reverse3d");
  int *in = malloc(kN * sizeof *in), *out = malloc(kN * sizeof *out);
  int sums[kBlocks];
  uint32_t seed = 7;
  for (int i = 0; i < kN; ++i) {
    seed = seed * 1664525u + 1013904223u;
    in[i] = (int)(seed >> 20) - 2048;
  }
  rk_devptr_t din = 0, dout = 0;
  CHECK_OK(rk_context_allocate(ctx, kN * sizeof *in, &din));
  CHECK_OK(rk_context_allocate(ctx, kN * sizeof *out, &dout));
  if (sum && rev && din && dout) {
    CHECK_OK(rk_context_copy_to_device(ctx, din, in, kN * sizeof *in));
    rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(sum, rk_dim3(kBlocks, 1, 1),
                                rk_dim3(1024, 1, 1), 0, NULL, args, 2));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, sums, dout, sizeof sums));
    for (int b = 0; b < kBlocks; ++b) {
      int want = 0;
      for (int i = 0; i < 1024; ++i) want += in[b * 1024 + i];
      CHECK(sums[b] == want, "block %d of 1024 threads: sum %d, expected %d", b,
            sums[b], want);
    }
    rk_arg_t rargs[] = {rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(rev, rk_dim3(kBlocks, 1, 1), rk_dim3(16, 8, 8),
                                0, NULL, rargs, 1));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, kN * sizeof *out));
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      int b = i / 1024, t = i % 1024;
      int want = (1023 - t) + 1000 * b;
      if (!CHECK(out[i] == want, "16x8x8 block: out[%d] = %d, expected %d", i,
                 out[i], want))
        ++bad;
    }
  }
  free(in);
  free(out);
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- A barrier kernel with one thread per block ------------------------ */

static const char kOneThreadSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void doubled(const int *in, int *out) {\n"
    "  RK_SHARED int sh[1];\n"
    "  sh[0] = in[rk_block_idx_x()];\n"
    "  rk_sync_threads();\n"
    "  out[rk_block_idx_x()] = sh[0] * 2 + (int)rk_block_dim_x();\n"
    "}\n";

static void test_barrier_with_one_thread(void) {
  enum { kBlocks = 1000 };
  rk_context_t *ctx = new_context();
  rk_function_t *fn = compile_fn(ctx, "one.c", kOneThreadSource, "doubled");
  int in[kBlocks], out[kBlocks];
  for (int i = 0; i < kBlocks; ++i) in[i] = i * 3 - 500;
  rk_devptr_t din = 0, dout = 0;
  CHECK_OK(rk_context_allocate(ctx, sizeof in, &din));
  CHECK_OK(rk_context_allocate(ctx, sizeof out, &dout));
  if (fn && din && dout) {
    CHECK_OK(rk_context_copy_to_device(ctx, din, in, sizeof in));
    rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(kBlocks, 1, 1), rk_dim3(1, 1, 1), 0,
                                NULL, args, 2));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, sizeof out));
    int bad = 0;
    for (int i = 0; i < kBlocks && bad < 5; ++i)
      if (!CHECK(out[i] == in[i] * 2 + 1, "out[%d] = %d, expected %d", i,
                 out[i], in[i] * 2 + 1))
        ++bad;
    /* The same on a stream. */
    rk_stream_t *st = NULL;
    CHECK_OK(rk_context_create_stream(ctx, &st));
    memset(out, 0, sizeof out);
    CHECK_OK(rk_stream_copy_to_device(st, dout, out, sizeof out));
    CHECK_OK(rk_function_launch(fn, rk_dim3(kBlocks, 1, 1), rk_dim3(1, 1, 1), 0,
                                st, args, 2));
    CHECK_OK(rk_stream_copy_to_host(st, out, dout, sizeof out));
    CHECK_OK(rk_stream_synchronize(st));
    CHECK(out[kBlocks - 1] == in[kBlocks - 1] * 2 + 1, "on a stream: %d",
          out[kBlocks - 1]);
    CHECK_OK(rk_stream_destroy(st));
  }
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- Macros that hide code ------------------------------------------------
 */

/* A barrier behind a function-like macro. */
static const char kMacroBarrierSource[] =
    "#include <rk/kernel.h>\n"
    "#define BARRIER() rk_sync_threads()\n"
    "RK_KERNEL void reverse(const int *in, int *out) {\n"
    "  RK_SHARED int sh[64];\n"
    "  uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();\n"
    "  uint32_t base = rk_block_idx_x() * b;\n"
    "  sh[t] = in[base + t];\n"
    "  BARRIER();\n"
    "  out[base + t] = sh[b - 1 - t];\n"
    "}\n";

/* The same with the code coming from a define the source cannot show. */
static const char kDefineBarrierSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void reverse(const int *in, int *out) {\n"
    "  RK_SHARED int sh[64];\n"
    "  uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();\n"
    "  uint32_t base = rk_block_idx_x() * b;\n"
    "  sh[t] = in[base + t];\n"
    "  BARRIER;\n"
    "  out[base + t] = sh[b - 1 - t];\n"
    "}\n";

/* The CPU backend compiles through the front end every backend shares, so
 * a macro that stands for code (which the system compiler would expand) is
 * refused as it is on every other backend, naming the macro, never built
 * into a kernel whose barrier the backend cannot see. */
static void test_barrier_through_macro(void) {
  rk_context_t *ctx = new_context();
  rk_module_t *mod = NULL;
  CHECK_STATUS(
      cpu_compile(ctx, kMacroBarrierSource, "macro.c", NULL, false, &mod),
      RK_ERR_COMPILE);
  CHECK_ERROR_HAS("macro.c:2:9");
  CHECK_ERROR_HAS("function-like macro 'BARRIER'");
  CHECK(mod == NULL, "a refused source gave a module");

  const char *defines[] = {"BARRIER=rk_sync_threads()", NULL};
  CHECK_STATUS(
      cpu_compile(ctx, kDefineBarrierSource, "define.c", defines, false, &mod),
      RK_ERR_COMPILE);
  CHECK_ERROR_HAS("define.c: define 'BARRIER=rk_sync_threads()'");
  CHECK(mod == NULL, "a refused source gave a module");
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- Concurrent launches from several host threads --------------------- */

/* ThreadSanitizer makes every fiber switch a synchronisation event; a few
 * rounds there check the same interleavings in a reasonable time. */
#if defined(__SANITIZE_THREAD__)
enum { kHostThreads = 4, kRounds = 3, kWorkN = 20000 };
#else
enum { kHostThreads = 4, kRounds = 25, kWorkN = 20000 };
#endif

static const char kConcurrentSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void affine(int n, int mul, int add, int *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] = x[i] * mul + add;\n"
    "}\n"
    "RK_KERNEL void block_sum(int n, const int *in, int *out) {\n"
    "  RK_SHARED int sh[128];\n"
    "  uint32_t t = rk_thread_idx_x(), i = rk_global_idx_x();\n"
    "  sh[t] = i < (uint32_t)n ? in[i] : 0;\n"
    "  rk_sync_threads();\n"
    "  for (uint32_t s = 64; s > 0; s >>= 1) {\n"
    "    if (t < s) sh[t] += sh[t + s];\n"
    "    rk_sync_threads();\n"
    "  }\n"
    "  if (t == 0) out[rk_block_idx_x()] = sh[0];\n"
    "}\n";

typedef struct worker {
  rk_context_t *ctx;
  rk_module_t *mod;
  int id;
  int bad;          /* wrong results */
  int failed_calls; /* rk calls that failed */
  char first_error[512];
} worker_t;

static void worker_fail(worker_t *w, const char *what) {
  if (w->failed_calls++ == 0)
    snprintf(w->first_error, sizeof w->first_error, "%s: %s", what,
             rk_last_error());
}

#define WORKER_OK(w, expr) \
  ((expr) == RK_OK ? true : (worker_fail(w, #expr), false))

static void *worker_main(void *p) {
  worker_t *w = p;
  rk_context_t *ctx = w->ctx;
  rk_function_t *affine = NULL, *sum = NULL;
  /* Each thread also compiles a module of its own, concurrently. */
  char define[32];
  snprintf(define, sizeof define, "SCALE=%d", w->id + 2);
  const char *defines[] = {define, NULL};
  rk_module_t *own = NULL;
  if (!WORKER_OK(w, cpu_compile(ctx, kCpuScaleSource, "scale.c", defines, false,
                                &own)) ||
      !WORKER_OK(w, rk_module_get_function(w->mod, "affine", &affine)) ||
      !WORKER_OK(w, rk_module_get_function(w->mod, "block_sum", &sum)))
    return NULL;
  int *h = malloc(kWorkN * sizeof *h), *out = malloc(kWorkN * sizeof *out);
  rk_devptr_t d = 0, dsum = 0;
  int nblocks = (kWorkN + 127) / 128;
  if (!WORKER_OK(w, rk_context_allocate(ctx, kWorkN * sizeof *h, &d)) ||
      !WORKER_OK(w, rk_context_allocate(ctx, nblocks * sizeof(int), &dsum)))
    goto done;
  for (int r = 0; r < kRounds; ++r) {
    int mul = w->id + 2, add = r * 10 + w->id;
    for (int i = 0; i < kWorkN; ++i) h[i] = i + w->id * 100000;
    rk_arg_t args[] = {rk_arg_i32(kWorkN), rk_arg_i32(mul), rk_arg_i32(add),
                       rk_arg_ptr(d)};
    rk_arg_t sargs[] = {rk_arg_i32(kWorkN), rk_arg_ptr(d), rk_arg_ptr(dsum)};
    if (!WORKER_OK(w,
                   rk_context_copy_to_device(ctx, d, h, kWorkN * sizeof *h)) ||
        !WORKER_OK(w,
                   rk_function_launch(affine, rk_dim3(nblocks, 1, 1),
                                      rk_dim3(128, 1, 1), 0, NULL, args, 4)) ||
        !WORKER_OK(w,
                   rk_function_launch(sum, rk_dim3(nblocks, 1, 1),
                                      rk_dim3(128, 1, 1), 0, NULL, sargs, 3)) ||
        !WORKER_OK(w,
                   rk_context_copy_to_host(ctx, out, d, kWorkN * sizeof *out)))
      break;
    for (int i = 0; i < kWorkN; ++i)
      if (out[i] != h[i] * mul + add) w->bad++;
    int sums[(kWorkN + 127) / 128];
    if (!WORKER_OK(w, rk_context_copy_to_host(ctx, sums, dsum, sizeof sums)))
      break;
    for (int b = 0; b < nblocks; ++b) {
      int want = 0;
      for (int i = b * 128; i < (b + 1) * 128 && i < kWorkN; ++i)
        want += h[i] * mul + add;
      if (sums[b] != want) w->bad++;
    }
  }
  /* The thread's own module computes with its own define. */
  rk_function_t *scale = NULL;
  if (WORKER_OK(w, rk_module_get_function(own, "scale", &scale))) {
    rk_arg_t args[] = {rk_arg_i32(kWorkN), rk_arg_i32(1), rk_arg_ptr(d)};
    if (WORKER_OK(w,
                  rk_function_launch(scale, rk_dim3(nblocks, 1, 1),
                                     rk_dim3(128, 1, 1), 0, NULL, args, 3)) &&
        WORKER_OK(w,
                  rk_context_copy_to_host(ctx, out, d, kWorkN * sizeof *out)))
      for (int i = 0; i < kWorkN; ++i)
        if (out[i] != i * (w->id + 2)) w->bad++;
  }
done:
  if (d) rk_context_free(ctx, d);
  if (dsum) rk_context_free(ctx, dsum);
  free(h);
  free(out);
  return NULL;
}

static void test_concurrent_launches(void) {
  rk_context_t *ctx = new_context();
  rk_module_t *mod = NULL;
  if (!CHECK_OK(cpu_compile(ctx, kConcurrentSource, "concurrent.c", NULL, false,
                            &mod)))
    return;
  worker_t w[kHostThreads];
  pthread_t t[kHostThreads];
  for (int i = 0; i < kHostThreads; ++i) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx = ctx;
    w[i].mod = mod;
    w[i].id = i;
    pthread_create(&t[i], NULL, worker_main, &w[i]);
  }
  for (int i = 0; i < kHostThreads; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < kHostThreads; ++i) {
    CHECK(w[i].failed_calls == 0, "host thread %d: %d failed calls, first: %s",
          i, w[i].failed_calls, w[i].first_error);
    CHECK(w[i].bad == 0, "host thread %d: %d wrong results", i, w[i].bad);
  }
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- Pool settings from the environment -------------------------------- */

static void test_pool_environment(void) {
  rk_context_t *ctx = NULL;
  static const char *const kBadThreads[] = {"0", "-3", "abc", "2x", "1025"};
  for (size_t i = 0; i < sizeof kBadThreads / sizeof kBadThreads[0]; ++i) {
    setenv("RK_CPU_THREADS", kBadThreads[i], 1);
    CHECK_STATUS(rk_backend_create_context(g_be, 0, &ctx),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("RK_CPU_THREADS");
  }
  setenv("RK_CPU_THREADS", "1", 1);
  ctx = new_context(); /* no workers: the caller runs every block */
  rk_module_t *mod = NULL;
  if (CHECK_OK(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod)))
    cpu_run_scale(ctx, mod, 7, 1);
  CHECK_OK(rk_context_destroy(ctx));
  setenv("RK_CPU_THREADS", "7", 1); /* more threads than CPUs: unpinned */
  ctx = new_context();
  if (CHECK_OK(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod)))
    cpu_run_scale(ctx, mod, 9, 1);
  CHECK_OK(rk_context_destroy(ctx));
  unsetenv("RK_CPU_THREADS");

  setenv("RK_CPU_SPIN_US", "-1", 1);
  CHECK_STATUS(rk_backend_create_context(g_be, 0, &ctx),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("RK_CPU_SPIN_US");
  setenv("RK_CPU_SPIN_US", "0", 1); /* park at once */
  ctx = new_context();
  if (CHECK_OK(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod)))
    cpu_run_scale(ctx, mod, 11, 1);
  CHECK_OK(rk_context_destroy(ctx));
  unsetenv("RK_CPU_SPIN_US");
}

int main(void) {
  rk_test_use_temp_cache();
  unsetenv("RK_CPU_THREADS");
  unsetenv("RK_CPU_SPIN_US");
  g_be = cpu_open();
  test_1024_thread_barriers();
  test_barrier_with_one_thread();
  test_barrier_through_macro();
  test_concurrent_launches();
  test_pool_environment();
  CHECK_OK(rk_backend_destroy(g_be));
  return rk_test_finish("cpu_exec");
}
