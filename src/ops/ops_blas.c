/* A CBLAS library loaded at run time, once per process: the file named by
 * RK_BLAS_LIB (a path or soname; "none" turns BLAS off), else the first of
 * libopenblas.so.0, libblis.so.4, libcblas.so.3 and libblas.so.3 (which on
 * Debian exports the CBLAS interface too) that has cblas_sgemm. Nothing at
 * build time: the few CBLAS enums are declared here with the values the
 * CBLAS standard fixes.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ops/ops_internal.h"

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };

typedef void (*sgemm_fn)(int order, int trans_a, int trans_b, int m, int n,
                         int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c,
                         int ldc);
typedef void (*sgemv_fn)(int order, int trans, int m, int n, float alpha,
                         const float *a, int lda, const float *x, int incx,
                         float beta, float *y, int incy);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static sgemm_fn g_sgemm;
static sgemv_fn g_sgemv;
static char g_name[256];

static bool try_load(const char *name) {
  void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return false;
  sgemm_fn gemm;
  sgemv_fn gemv;
  /* POSIX: a function pointer read through dlsym's object pointer. */
  *(void **)&gemm = dlsym(dl, "cblas_sgemm");
  *(void **)&gemv = dlsym(dl, "cblas_sgemv");
  if (!gemm || !gemv) {
    dlclose(dl);
    return false;
  }
  g_sgemm = gemm;
  g_sgemv = gemv;
  snprintf(g_name, sizeof g_name, "%s", name);
  return true; /* stays loaded for the life of the process */
}

static void load_once(void) {
  const char *env = getenv("RK_BLAS_LIB");
  if (env && *env) {
    if (strcmp(env, "none") != 0 && !try_load(env))
      rk__log(RK__LOG_WARN,
              "RK_BLAS_LIB=%s cannot be loaded or has no cblas_sgemm; "
              "matmul uses rk's own GEMM (reports name the engine)",
              env);
    return;
  }
  static const char *const names[] = {"libopenblas.so.0", "libblis.so.4",
                                      "libcblas.so.3", "libblas.so.3"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (try_load(names[i])) return;
}

bool rk__ops_blas_available(void) {
  pthread_once(&g_once, load_once);
  return g_sgemm != NULL;
}

const char *rk__ops_blas_soname(void) {
  return rk__ops_blas_available() ? g_name : NULL;
}

const char *rk_ops_blas_name(void) { return rk__ops_blas_soname(); }

/* Sizes were checked to fit an int by the caller. */
void rk__ops_blas_sgemm(size_t m, size_t n, size_t k, const float *a,
                        const float *b, float *c) {
  g_sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)m, (int)n,
          (int)k, 1.0f, a, k ? (int)k : 1, b, n ? (int)n : 1, 0.0f, c,
          n ? (int)n : 1);
}

void rk__ops_blas_sgemv(size_t m, size_t n, const float *a, const float *x,
                        float *y) {
  g_sgemv(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, (int)m, (int)n, 1.0f, a,
          n ? (int)n : 1, x, 1, 0.0f, y, 1);
}
