/* cuBLAS for the ops library's GEMM on CUDA: loaded at run time on first
 * use (dlopen, like the driver and NVRTC), one handle per rk context on the
 * context's default stream, in cuBLAS's default (full f32) math mode.
 *
 * cuBLAS is column-major; rk's matrices are row-major. A row-major m x n
 * matrix is the column-major n x m matrix of its transpose, so C = A B is
 * computed as C^T = B^T A^T: cublasSgemm(N, N, n, m, k, B, n, A, k, C, n).
 *
 * cuBLAS loads its kernels lazily (at a kernel's first use), and loading a
 * module waits until no kernel runs on the device: beside a resident actor
 * kernel it would never return (cuda_actor.c, "Pausing for the driver").
 * Every cuBLAS call is therefore made holding the actor pause lock with no
 * actor kernel resident (rk__cu_hold_no_actors); while one is, GEMM answers
 * RK_ERR_UNAVAILABLE and the ops library runs its own kernel. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "base/error.h"
#include "base/strbuf.h"

/* cuBLAS's types and entry points (cublas_api.h, v2 interface). */
typedef int rk_cublas_status_t;
typedef struct rk_cublas_context *rk_cublas_handle_t;
enum { RK_CUBLAS_SUCCESS = 0, RK_CUBLAS_ALLOC_FAILED = 3, RK_CUBLAS_OP_N = 0 };

typedef struct cublas_api {
  void *handle;
  char path[512];
  rk_cublas_status_t (*create)(rk_cublas_handle_t *handle);
  rk_cublas_status_t (*destroy)(rk_cublas_handle_t handle);
  rk_cublas_status_t (*set_stream)(rk_cublas_handle_t handle, CUstream s);
  rk_cublas_status_t (*sgemm)(rk_cublas_handle_t handle, int transa, int transb,
                              int m, int n, int k, const float *alpha,
                              const float *a, int lda, const float *b, int ldb,
                              const float *beta, float *c, int ldc);
} cublas_api_t;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cublas_api_t g_api;
static char g_why[1024]; /* why there is none, when handle is NULL */

static void load_once(void) {
  static const char *const kDefaults[] = {"libcublas.so.13", "libcublas.so.12",
                                          "libcublas.so.11", "libcublas.so"};
  const char *names[4];
  const size_t count =
      rk__cu_library_names("RK_CUBLAS_LIB", kDefaults, 4, names);
  rk__strbuf_t tried;
  rk__strbuf_init(&tried);
  void *h =
      rk__cu_open_first(names, count, g_api.path, sizeof g_api.path, &tried);
  if (!h) {
    snprintf(g_why, sizeof g_why,
             "cuBLAS not found: %s (set RK_CUBLAS_LIB to the library)",
             tried.data ? tried.data : "out of memory");
    rk__strbuf_free(&tried);
    return;
  }
  rk__strbuf_free(&tried);
  const char *missing = NULL;
#define RK_CUBLAS_RESOLVE_(field, symbol) \
  do {                                    \
    void *p = dlsym(h, symbol);           \
    if (!p && !missing) missing = symbol; \
    memcpy(&g_api.field, &p, sizeof p);   \
  } while (0)
  RK_CUBLAS_RESOLVE_(create, "cublasCreate_v2");
  RK_CUBLAS_RESOLVE_(destroy, "cublasDestroy_v2");
  RK_CUBLAS_RESOLVE_(set_stream, "cublasSetStream_v2");
  RK_CUBLAS_RESOLVE_(sgemm, "cublasSgemm_v2");
#undef RK_CUBLAS_RESOLVE_
  if (missing) {
    snprintf(g_why, sizeof g_why, "%s is not a usable cuBLAS: it lacks %s",
             g_api.path, missing);
    dlclose(h);
    return;
  }
  g_api.handle = h;
}

bool rk__cu_blas_find(char *out, size_t cap) {
  pthread_once(&g_once, load_once);
  snprintf(out, cap, "%s", g_api.handle ? g_api.path : g_why);
  return g_api.handle != NULL;
}

static const char *file_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* The context's handle, made on first use (blas_lock held, the actor pause
 * lock held with no actor resident). NULL with ctx->blas_why set. */
static rk_cublas_handle_t context_handle(cu_context_t *ctx) {
  if (ctx->blas || ctx->blas_failed) return ctx->blas;
  rk_cublas_handle_t h = NULL;
  rk_cublas_status_t st = g_api.create(&h);
  if (st == RK_CUBLAS_SUCCESS) {
    st = g_api.set_stream(h, ctx->stream);
    if (st != RK_CUBLAS_SUCCESS) {
      g_api.destroy(h);
      h = NULL;
    }
  }
  if (!h) {
    ctx->blas_failed = true;
    snprintf(ctx->blas_why, sizeof ctx->blas_why,
             "%.64s could not make a handle on %.64s (cuBLAS status %d)",
             file_name(g_api.path), ctx->dev->info.name, st);
    return NULL;
  }
  ctx->blas = h;
  return h;
}

rk_status_t rk__cu_blas_sgemm(rk_context_t *context, size_t m, size_t n,
                              size_t k, rk_devptr_t a, rk_devptr_t b,
                              rk_devptr_t c, char *library, size_t cap) {
  cu_context_t *ctx = cu_ctx(context);
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cuBLAS takes dimensions of at most INT_MAX (m=%zu "
                    "n=%zu k=%zu)",
                    m, n, k);
  pthread_once(&g_once, load_once);
  if (!g_api.handle) return rk__fail(RK_ERR_UNAVAILABLE, "%s", g_why);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  if (!rk__cu_hold_no_actors())
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cuBLAS is not used while resident actor kernels run (it "
                    "loads its kernels on first use, and a load waits until "
                    "no kernel runs)");
  pthread_mutex_lock(&ctx->blas_lock);
  rk_cublas_handle_t h = context_handle(ctx);
  rk_status_t s = RK_OK;
  if (!h) {
    s = rk__fail(RK_ERR_UNAVAILABLE, "%s", ctx->blas_why);
  } else {
    const float one = 1.0f, zero = 0.0f;
    const rk_cublas_status_t st = g_api.sgemm(
        h, RK_CUBLAS_OP_N, RK_CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
        (const float *)(uintptr_t)b, (int)n, (const float *)(uintptr_t)a,
        (int)k, &zero, (float *)(uintptr_t)c, (int)n);
    if (st != RK_CUBLAS_SUCCESS)
      s = rk__fail(
          st == RK_CUBLAS_ALLOC_FAILED ? RK_ERR_OUT_OF_MEMORY : RK_ERR_LAUNCH,
          "cuda: cublasSgemm (%zu x %zu x %zu) failed: cuBLAS status %d", m, n,
          k, st);
  }
  pthread_mutex_unlock(&ctx->blas_lock);
  rk__cu_release_no_actors();
  if (s == RK_OK && library && cap)
    snprintf(library, cap, "%s", file_name(g_api.path));
  return s;
}

void rk__cu_blas_release(cu_context_t *ctx) {
  if (!ctx->blas) return;
  /* Destroying a handle frees its memory; never beside a resident kernel
   * (none is left when a context goes, unless one never stopped: then the
   * handle is left to the process's end). */
  if (rk__cu_hold_no_actors()) {
    if (ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS)
      g_api.destroy((rk_cublas_handle_t)ctx->blas);
    rk__cu_release_no_actors();
  }
  ctx->blas = NULL;
}
