/* gpucompile, CUDA half: NVRTC accepts a hand-written kernel that uses
 * only built-ins (no headers), refuses a broken one with its error in the
 * log, finds entry points by name, and reports itself unavailable, with
 * the paths tried, when the library is not there.
 *
 *   test_gpucompile_cuda                       NVRTC's verdicts (skips, 77,
 *                                              without NVRTC)
 *   test_gpucompile_cuda --expect-unavailable  run with RK_GPUCOMPILE_NVRTC
 *                                              naming a missing library
 */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpucompile/gpucompile.h"
#include "rk_test.h"

/* Block-shared staging and a barrier: what generated kernels use. */
static const char kSaxpy[] =
    "extern \"C\" __global__ void saxpy(int n, float a, const float *x,\n"
    "                                   float *y) {\n"
    "  __shared__ float tile[256];\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  tile[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  if (i < n) y[i] = a * tile[threadIdx.x] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void count(unsigned *counter) {\n"
    "  atomicAdd(counter, 1u);\n"
    "}\n";

/* `tile` is used but never declared. */
static const char kBroken[] =
    "extern \"C\" __global__ void saxpy(int n, float a, const float *x,\n"
    "                                   float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * tile[threadIdx.x] + y[i];\n"
    "}\n";

static bool contains(const char *text, const char *needle) {
  return strstr(text, needle) != NULL;
}

static void test_compiles(void) {
  char log[8192];
  int rc = rk_gpucompile_cuda(kSaxpy, "saxpy.cu", log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_OK, "saxpy.cu: rc %d, log:\n%s", rc, log);
  const char *names[] = {"saxpy", "count"};
  rc =
      rk_gpucompile_cuda_kernels(kSaxpy, "saxpy.cu", names, 2, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_OK, "saxpy + count: rc %d, log:\n%s", rc, log);
}

static void test_broken(void) {
  char log[8192];
  int rc = rk_gpucompile_cuda(kBroken, "broken.cu", log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "broken.cu compiled? rc %d, log:\n%s", rc,
        log);
  /* NVRTC: broken.cu(4): error: identifier "tile" is undefined */
  CHECK(contains(log, "broken.cu(4)") && contains(log, "error") &&
            contains(log, "\"tile\""),
        "the log does not locate the error:\n%s", log);
}

static void test_missing_entry(void) {
  char log[8192];
  const char *names[] = {"saxpy", "saxpy_f64"};
  int rc =
      rk_gpucompile_cuda_kernels(kSaxpy, "saxpy.cu", names, 2, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "saxpy_f64 found? rc %d, log:\n%s", rc,
        log);
  CHECK(contains(log, "\"saxpy_f64\"") && !contains(log, "\"saxpy\"") &&
            contains(log, "saxpy, count"),
        "the log should name the missing kernel and list the others:\n%s", log);
  /* A C++ (mangled) kernel is not an entry point under its plain name. */
  static const char kMangled[] = "__global__ void plain(int *p) { *p = 1; }\n";
  const char *plain[] = {"plain"};
  rc = rk_gpucompile_cuda_kernels(kMangled, "mangled.cu", plain, 1, log,
                                  sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED && contains(log, "_Z5plainPi"),
        "mangled kernel: rc %d, log:\n%s", rc, log);
}

static void test_small_log(void) {
  char log[8];
  memset(log, 'x', sizeof log);
  int rc = rk_gpucompile_cuda(kBroken, "broken.cu", log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED && memchr(log, '\0', sizeof log) != NULL,
        "rc %d, log not terminated", rc);
  rc = rk_gpucompile_cuda(kBroken, NULL, NULL, 0);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "rc %d without a log", rc);
  rc = rk_gpucompile_cuda(kSaxpy, NULL, NULL, 0);
  CHECK(rc == RK_GPUCOMPILE_OK, "rc %d without a log", rc);
}

static void *compile_in_thread(void *arg) {
  (void)arg;
  char log[4096];
  intptr_t bad = 0;
  for (int i = 0; i < 2; i++) {
    if (rk_gpucompile_cuda(kSaxpy, "saxpy.cu", log, sizeof log) != 0) bad++;
    if (rk_gpucompile_cuda(kBroken, "broken.cu", log, sizeof log) != 1) bad++;
  }
  return (void *)bad;
}

static void test_threads(void) {
  pthread_t threads[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&threads[i], NULL, compile_in_thread, NULL);
  for (int i = 0; i < 4; i++) {
    void *bad = NULL;
    pthread_join(threads[i], &bad);
    CHECK(bad == NULL, "thread %d: %d wrong verdicts", i, (int)(intptr_t)bad);
  }
}

int main(int argc, char **argv) {
  char what[1024];
  int rc = rk_gpucompile_cuda_describe(what, sizeof what);
  if (argc > 1 && strcmp(argv[1], "--expect-unavailable") == 0) {
    const char *env = getenv("RK_GPUCOMPILE_NVRTC");
    CHECK(env != NULL, "run with RK_GPUCOMPILE_NVRTC set");
    CHECK(rc == RK_GPUCOMPILE_UNAVAILABLE, "describe: rc %d", rc);
    rc = rk_gpucompile_cuda(kSaxpy, "saxpy.cu", what, sizeof what);
    CHECK(rc == RK_GPUCOMPILE_UNAVAILABLE, "compile: rc %d", rc);
    CHECK(env && contains(what, env) && contains(what, "NVRTC not found"),
          "the reason should name the paths tried:\n%s", what);
    printf("unavailable as expected: %s\n", what);
    return rk_test_finish("gpucompile_cuda_unavailable");
  }
  if (rc == RK_GPUCOMPILE_UNAVAILABLE) RK_TEST_SKIP("%s", what);
  printf("using %s\n", what);
  test_compiles();
  test_broken();
  test_missing_entry();
  test_small_log();
  test_threads();
  return rk_test_finish("gpucompile_cuda");
}
