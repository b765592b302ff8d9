/* gpucompile, OpenCL half: the OpenCL platform builds a hand-written
 * OpenCL C 1.2 kernel, refuses a broken one with its error in the build
 * log, finds kernels by name, and reports itself unavailable, with the
 * paths tried, when the ICD loader is not there.
 *
 *   test_gpucompile_opencl                       the platform's verdicts
 *                                                (skips, 77, without one)
 *   test_gpucompile_opencl --expect-unavailable  run with
 *                                                RK_GPUCOMPILE_OPENCL naming
 *                                                a missing library
 */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpucompile/gpucompile.h"
#include "rk_test.h"

static const char kSaxpy[] =
    "__kernel void saxpy(int n, float a, __global const float *x,\n"
    "                    __global float *y) {\n"
    "  __local float tile[64];\n"
    "  int i = get_global_id(0);\n"
    "  tile[get_local_id(0)] = i < n ? x[i] : 0.0f;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (i < n) y[i] = a * tile[get_local_id(0)] + y[i];\n"
    "}\n"
    "__kernel void count(__global volatile uint *counter) {\n"
    "  atomic_inc(counter);\n"
    "}\n";

/* `tile` is used but never declared. */
static const char kBroken[] =
    "__kernel void saxpy(int n, float a, __global const float *x,\n"
    "                    __global float *y) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) y[i] = a * tile[get_local_id(0)] + y[i];\n"
    "}\n";

static bool contains(const char *text, const char *needle) {
  return strstr(text, needle) != NULL;
}

static void test_compiles(void) {
  char log[8192];
  int rc = rk_gpucompile_opencl(kSaxpy, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_OK, "saxpy: rc %d, log:\n%s", rc, log);
  const char *names[] = {"saxpy", "count"};
  rc = rk_gpucompile_opencl_kernels(kSaxpy, names, 2, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_OK, "saxpy + count: rc %d, log:\n%s", rc, log);
}

static void test_broken(void) {
  char log[8192];
  int rc = rk_gpucompile_opencl(kBroken, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "broken source built? rc %d, log:\n%s", rc,
        log);
  /* Clang: <source>:4:25: error: use of undeclared identifier 'tile' */
  CHECK(
      contains(log, ":4:") && contains(log, "error") && contains(log, "'tile'"),
      "the build log does not locate the error:\n%s", log);
}

static void test_missing_kernel(void) {
  char log[8192];
  const char *names[] = {"saxpy", "saxpy_f64"};
  int rc = rk_gpucompile_opencl_kernels(kSaxpy, names, 2, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "saxpy_f64 found? rc %d, log:\n%s", rc,
        log);
  CHECK(contains(log, "\"saxpy_f64\"") && !contains(log, "\"saxpy\"") &&
            contains(log, "count"),
        "the log should name the missing kernel and list the others:\n%s", log);
}

static void test_small_log(void) {
  char log[8];
  memset(log, 'x', sizeof log);
  int rc = rk_gpucompile_opencl(kBroken, log, sizeof log);
  CHECK(rc == RK_GPUCOMPILE_FAILED && memchr(log, '\0', sizeof log) != NULL,
        "rc %d, log not terminated", rc);
  rc = rk_gpucompile_opencl(kBroken, NULL, 0);
  CHECK(rc == RK_GPUCOMPILE_FAILED, "rc %d without a log", rc);
  rc = rk_gpucompile_opencl(kSaxpy, NULL, 0);
  CHECK(rc == RK_GPUCOMPILE_OK, "rc %d without a log", rc);
}

static void *build_in_thread(void *arg) {
  (void)arg;
  char log[4096];
  intptr_t bad = 0;
  if (rk_gpucompile_opencl(kSaxpy, log, sizeof log) != 0) bad++;
  if (rk_gpucompile_opencl(kBroken, log, sizeof log) != 1) bad++;
  return (void *)bad;
}

static void test_threads(void) {
  pthread_t threads[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&threads[i], NULL, build_in_thread, NULL);
  for (int i = 0; i < 3; i++) {
    void *bad = NULL;
    pthread_join(threads[i], &bad);
    CHECK(bad == NULL, "thread %d: %d wrong verdicts", i, (int)(intptr_t)bad);
  }
}

int main(int argc, char **argv) {
  char what[1024];
  int rc = rk_gpucompile_opencl_describe(what, sizeof what);
  if (argc > 1 && strcmp(argv[1], "--expect-unavailable") == 0) {
    const char *env = getenv("RK_GPUCOMPILE_OPENCL");
    CHECK(env != NULL, "run with RK_GPUCOMPILE_OPENCL set");
    CHECK(rc == RK_GPUCOMPILE_UNAVAILABLE, "describe: rc %d", rc);
    rc = rk_gpucompile_opencl(kSaxpy, what, sizeof what);
    CHECK(rc == RK_GPUCOMPILE_UNAVAILABLE, "build: rc %d", rc);
    CHECK(env && contains(what, env) && contains(what, "not found"),
          "the reason should name the paths tried:\n%s", what);
    printf("unavailable as expected: %s\n", what);
    return rk_test_finish("gpucompile_opencl_unavailable");
  }
  if (rc == RK_GPUCOMPILE_UNAVAILABLE) RK_TEST_SKIP("%s", what);
  printf("using %s\n", what);
  test_compiles();
  test_broken();
  test_missing_kernel();
  test_small_log();
  test_threads();
  return rk_test_finish("gpucompile_opencl");
}
