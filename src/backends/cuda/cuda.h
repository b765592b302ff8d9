/* CUDA backend internals.
 *
 * One rk context is the device's primary context (retained on create,
 * released on destroy) made current on the calling thread by every entry
 * point. rk's default stream is a non-blocking CUDA stream of the context,
 * each rk stream another; persistent actors run on streams of their own, so
 * that synchronizing a context never waits for a resident kernel.
 *
 * Device pointers are CUDA's own (rk_devptr_t == CUdeviceptr); a sorted
 * allocation table checks each one before the driver sees it. Memory comes
 * from the stream-ordered allocator where the device has one
 * (cuMemAllocAsync/cuMemFreeAsync): cuMemFree synchronizes the whole
 * context, which never returns while a persistent actor kernel is resident.
 *
 * Modules: kernel-language source -> rk_transpile(CUDA, with the persistent
 * actor kernels) -> NVRTC for the device's architecture (a CUBIN; PTX for
 * the newest virtual architecture NVRTC knows when it does not know the
 * device's) -> cuModuleLoadData. Built images are cached on disk under
 * <cache>/cuda/<hash>.{cubin,ptx}, the hash covering the CUDA text, the
 * options, the architecture and NVRTC's version.
 */
#ifndef RK_BACKENDS_CUDA_CUDA_H_
#define RK_BACKENDS_CUDA_CUDA_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cuda/cuda_api.h"
#include "hal/alloc_table.h"
#include "hal/hal.h"
#include "hal/pending.h"
#include "rk/codegen.h"

/* ---- Backend and devices ------------------------------------------------ */

typedef struct cu_device {
  CUdevice dev;
  rk_device_info_t info;
  int cc_major, cc_minor;
  int sms;
  int max_threads_per_sm;
  uint32_t max_block[3], max_grid[3];
  bool memory_pools; /* cuMemAllocAsync usable */
} cu_device_t;

typedef struct cu_backend {
  rk_backend_t base;
  rk_cu_api_t api;
  cu_device_t *devices;
} cu_backend_t;

/* ---- Contexts and memory ------------------------------------------------ */

typedef struct cu_context {
  rk_context_t base;
  const rk_cu_api_t *api;
  const cu_device_t *dev;
  CUcontext cu;
  CUstream stream;           /* rk's default stream */
  CUstream mem_stream;       /* stream-ordered allocations, waited for */
  pthread_rwlock_t mem_lock; /* readers: check + use; writer: alloc/free */
  rk__alloc_table_t allocs;  /* handle unused: base is the CUdeviceptr */
  rk__pending_t pending;     /* first unreported default-stream error */
  uint32_t lost;             /* atomic: a sticky driver error was seen */
  uint32_t stuck_actors;     /* atomic: actor kernels that never stopped */
  /* Resident actor kernels, and what waits for none to be resident:
   * freeing pinned memory and unloading a module may wait for the whole
   * context, so while an actor kernel runs they are kept here (pinned
   * blocks are reused by the next actor of the same size) and done when
   * the last one stops or the context goes. Guarded by defer_lock. */
  pthread_mutex_t defer_lock;
  uint32_t resident;
  struct cu_deferred *deferred;
  struct cu_pinned *pinned; /* live pinned mapped blocks and their sizes */
  /* Pinned blocks that stream copies to and from ordinary host memory go
   * through (cuda_memory.c), kept until the context goes. Guarded by
   * stage_lock. */
  pthread_mutex_t stage_lock;
  struct cu_stage *stage_free; /* idle */
  struct cu_stage *stage_all;  /* every block */
  /* cuBLAS (cuda_blas.c): the context's handle, made on first use under
   * blas_lock; blas_failed once making it failed (blas_why says why). */
  pthread_mutex_t blas_lock;
  void *blas;
  bool blas_failed;
  char blas_why[192];
} cu_context_t;

static inline cu_context_t *cu_ctx(rk_context_t *c) {
  return (cu_context_t *)c;
}

/* Makes the context current on this thread; RK_ERR_DEVICE_LOST once the
 * context has seen a sticky error. */
rk_status_t rk__cu_enter(cu_context_t *ctx);
/* rk__cu_fail, and marks the context lost when `err` is one of the sticky
 * errors after which CUDA refuses every further call (illegal address,
 * launch failure, ...). */
rk_status_t rk__cu_check(cu_context_t *ctx, CUresult err, const char *what);

/* Synchronizes the default stream and every rk stream of the context (not
 * actor streams). */
rk_status_t rk__cu_sync_streams(cu_context_t *ctx);

rk_status_t rk__cu_allocate(rk_context_t *context, size_t bytes,
                            rk_devptr_t *out_ptr);
rk_status_t rk__cu_free(rk_context_t *context, rk_devptr_t ptr);
rk_status_t rk__cu_check_range(rk_context_t *context, rk_devptr_t ptr,
                               size_t n);
rk_status_t rk__cu_copy(rk_context_t *context, rk_stream_t *stream,
                        const rk__copy_t *copy);
rk_status_t rk__cu_mapped_alloc(rk_context_t *context, size_t bytes,
                                void **out_host);
void rk__cu_mapped_free(rk_context_t *context, void *host);
/* Frees every allocation still in the table (context teardown). */
void rk__cu_memory_release(cu_context_t *ctx);
/* Context teardown, every stream finished: frees the staging blocks (or,
 * with `abandon`, only rk's records of them). */
void rk__cu_stage_release(cu_context_t *ctx, bool abandon);

/* Resident actor bookkeeping (see cu_context_t.resident). */
void rk__cu_resident_begin(cu_context_t *ctx);
/* An actor kernel stopped: when it was the last, does what was deferred. */
void rk__cu_resident_end(cu_context_t *ctx);
/* Unloads `module` now, or once no actor kernel is resident. */
void rk__cu_unload_module(cu_context_t *ctx, CUmodule module);
/* Does everything deferred (context teardown; no kernel is resident). */
void rk__cu_deferred_flush(cu_context_t *ctx);
/* Context teardown: the deferred work, then every pinned block still
 * live (the actor layer frees its own; this is the safety net). */
void rk__cu_pinned_release(cu_context_t *ctx);
/* Context teardown beside a kernel that never stopped: forgets the deferred
 * work and the pinned blocks without touching them (the kernel may still
 * use them; they stay until the process exits). */
void rk__cu_pinned_abandon(cu_context_t *ctx);

/* ---- Building ----------------------------------------------------------- */

/* A built module image. */
typedef struct rk__cu_image {
  void *data;
  size_t size;
  bool ptx;       /* PTX text (NUL-terminated) rather than a CUBIN */
  bool cache_hit; /* read from the disk cache */
  char arch[32];  /* "sm_90", "compute_90" */
} rk__cu_image_t;

/* Kernel-language source -> CUDA C (with the persistent actor kernels) ->
 * an image for compute capability cc_major.cc_minor, through the disk cache
 * unless options->no_cache. Needs NVRTC, not a GPU. On success *out_entries
 * lists the module's kernels (release with rk_entry_list_destroy) and
 * *out_text (optional) is the CUDA C built (free()). Errors: RK_ERR_COMPILE
 * with the transpiler's diagnostic against the user's lines, or with
 * NVRTC's log and the generated line it points at; RK_ERR_UNAVAILABLE
 * without NVRTC. */
rk_status_t rk__cu_build(const char *source,
                         const rk_compile_options_t *options, int cc_major,
                         int cc_minor, rk__cu_image_t *out_image,
                         rk_entry_list_t **out_entries, char **out_text);
void rk__cu_image_free(rk__cu_image_t *image);
/* The NVRTC half of rk__cu_build: CUDA C `text` to an image, through the
 * disk cache unless no_cache (*image zeroed first by the caller). */
rk_status_t rk__cu_build_text(const char *text, const char *name, int cc_major,
                              int cc_minor, bool no_cache,
                              rk__cu_image_t *image);

/* ---- Modules and launches ----------------------------------------------- */

typedef struct cu_function {
  CUfunction fn;
  int max_threads; /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
  int static_shared;
} cu_function_t;

typedef struct cu_module {
  rk_module_t base;
  CUmodule module;
  rk_entry_list_t *entries;
  cu_function_t *fns;
  rk__param_t *params;
} cu_module_t;

rk_status_t rk__cu_compile(rk_context_t *context, const char *source,
                           const rk_compile_options_t *options,
                           rk_module_t **out_module);
void rk__cu_module_destroy(rk_module_t *module);
/* `status` when grid or block exceed the device's dimensions ("<what> of
 * '<name>': ..."). */
rk_status_t rk__cu_check_geometry(const cu_context_t *ctx, rk_status_t status,
                                  const char *what, const char *name,
                                  rk_dim3_t grid, rk_dim3_t block);
rk_status_t rk__cu_launch(rk_function_t *function, rk_dim3_t grid,
                          rk_dim3_t block, size_t shared_mem,
                          rk_stream_t *stream, rk__args_t *args);

/* ---- Streams ------------------------------------------------------------ */

typedef struct cu_stream {
  rk_stream_t base;
  CUstream stream;
  /* Staged copies queued and not yet finished (cuda_memory.c), newest
   * first, and how many; guarded by the context's stage_lock. sync_lock
   * is held from taking that list through the synchronization to the
   * copies into the callers' memory, so that a synchronization returns
   * only once its stream's data is in place. */
  struct cu_stage *staged;
  unsigned nstaged;
  pthread_mutex_t sync_lock;
} cu_stream_t;

/* Waits for the work queued on `st`, then finishes its staged copies (on
 * success: the data of copies to the host goes to the callers' memory).
 * `what` names the caller in an error. */
rk_status_t rk__cu_stream_sync(cu_context_t *ctx, cu_stream_t *st,
                               const char *what);

rk_status_t rk__cu_stream_create(rk_context_t *context, rk_stream_t **out);
rk_status_t rk__cu_stream_destroy(rk_stream_t *stream);
rk_status_t rk__cu_stream_synchronize(rk_stream_t *stream);

/* ---- Persistent actors -------------------------------------------------- */

rk_status_t rk__cu_actor_start(rk_context_t *context,
                               const rk__actor_device_t *device,
                               rk__actor_worker_t **out_worker);
void rk__cu_actor_release(rk__actor_worker_t *worker, bool stopped);

/* Driver work that may wait until no kernel runs on the device (loading a
 * module, pinning host memory) goes between these two: every resident
 * actor kernel of the process leaves at a request boundary and is
 * relaunched where it stopped afterwards (cuda_actor.c). A kernel that
 * does not leave within 5 s makes the pause fail (RK_ERR_TIMEOUT, nothing
 * held, every kernel running again): do not resume then. Both leave
 * `caller`'s context current (NULL: whichever). */
rk_status_t rk__cu_pause_actors(cu_context_t *caller, const char *why);
/* How long a pause waits for the kernels (5 s; tests shorten it). */
extern uint64_t rk__cu_pause_timeout_ns;
void rk__cu_resume_actors(cu_context_t *caller);
/* For library calls that may load modules behind rk's back (cuBLAS loads
 * its kernels lazily): true, with no resident actor kernel in the process
 * and none launched until rk__cu_release_no_actors; false, doing nothing,
 * while one is resident (such a load would wait for it for ever). */
bool rk__cu_hold_no_actors(void);
void rk__cu_release_no_actors(void);

/* ---- cuBLAS (cuda_blas.c) ---------------------------------------------- */

/* C = A B (row-major f32, m x k times k x n) on the context's default
 * stream through cuBLAS, loaded on first use (RK_CUBLAS_LIB, else
 * libcublas.so.13, .12, .11, libcublas.so). RK_ERR_UNAVAILABLE, with the
 * reason, when there is no usable cuBLAS or a resident actor kernel runs
 * (cuBLAS may load modules then, which would wait for it): the caller
 * runs its own kernel. `library` gets the library's file name. */
rk_status_t rk__cu_blas_sgemm(rk_context_t *context, size_t m, size_t n,
                              size_t k, rk_devptr_t a, rk_devptr_t b,
                              rk_devptr_t c, char *library, size_t cap);
/* Context teardown: the handle, if any. */
void rk__cu_blas_release(cu_context_t *ctx);
/* Loads cuBLAS as a matmul would (no GPU needed): true with its path in
 * `out`, else false with why there is none. */
bool rk__cu_blas_find(char *out, size_t cap);

#endif /* RK_BACKENDS_CUDA_CUDA_H_ */
