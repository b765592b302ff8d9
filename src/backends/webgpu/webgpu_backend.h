/* WebGPU backend internals.
 *
 * One WGPUInstance and one list of adapters (one per rk device) per loaded
 * implementation, kept for the life of the process and shared by every
 * opened backend; one WGPUDevice per context. Device memory is one
 * WGPUBuffer per allocation; a device pointer is (tag, allocation id, byte
 * offset), see webgpu_memory.c.
 * Kernels are transpiled to WGSL one entry point at a time and each gets its
 * own shader module, explicit bind group layout and a small cache of compute
 * pipelines keyed by workgroup size and dynamic shared bytes
 * (webgpu_module.c).
 *
 * WebGPU has one queue per device. The default stream records launches into
 * one open command encoder (one compute pass for consecutive launches) that
 * is submitted when a copy, a synchronization or a batch limit needs it;
 * by-value kernel parameters go into a per-context slab buffer bound with a
 * dynamic offset. Other streams keep their operations on the host and
 * submit them in order at their next synchronization (or when many are
 * queued), re-validating device pointers then (webgpu_stream.c).
 *
 * Locking: wg_context_t.lock serialises everything that touches the device
 * (memory table, encoder, slab, staging buffer, pipeline caches). Errors
 * raised by the implementation's callbacks go to `pending` and `lost`, each
 * with a lock of its own, since callbacks may run inside calls made under
 * `lock`.
 */
#ifndef RK_BACKENDS_WEBGPU_WEBGPU_BACKEND_H_
#define RK_BACKENDS_WEBGPU_WEBGPU_BACKEND_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/webgpu/webgpu_api.h"
#include "hal/hal.h"
#include "hal/pending.h"

/* Bytes of the buffers bound for NULL pointer arguments. */
enum { kNullBytes = 4096 };

typedef struct wg_backend {
  rk_backend_t base;
  const rk__wgpu_procs_t *p;
  WGPUInstance instance;
  /* The process-wide adapter list's arrays (not owned). */
  WGPUAdapter *adapters;
  WGPULimits *limits;
  rk_device_info_t *infos;
  char (*backend_names)[16];
} wg_backend_t;

typedef struct wg_alloc {
  uint32_t id;
  WGPUBuffer buffer;
  uint64_t size;   /* as requested */
  uint64_t padded; /* the buffer's size */
} wg_alloc_t;

typedef struct wg_function wg_function_t;

enum { kWgBindCacheSize = 32, kWgBindCacheMaxPtrs = 16 };

/* Loop guard slots (see wg_context_t.guard): launches of guarded kernels
 * between two reads of the guard buffer. */
enum { kWgGuardSlots = 256, kWgGuardName = 128 };

typedef struct wg_bind_cache_entry {
  const wg_function_t *fn;
  WGPUBindGroup group;
  size_t nptrs;
  uint32_t ids[kWgBindCacheMaxPtrs];
  uint64_t offsets[kWgBindCacheMaxPtrs];
} wg_bind_cache_entry_t;

typedef struct wg_context {
  rk_context_t base;
  const rk__wgpu_procs_t *p;
  WGPUInstance instance; /* the backend's */
  WGPUDevice device;
  WGPUQueue queue;
  WGPULimits limits;
  uint32_t align; /* minStorageBufferOffsetAlignment (>= 4) */

  pthread_mutex_t lock;
  wg_alloc_t *allocs; /* sorted by id */
  size_t nallocs, cap;
  WGPUCommandEncoder encoder;  /* open, with recorded work; NULL if none */
  WGPUComputePassEncoder pass; /* open pass of `encoder`, or NULL */
  size_t recorded;             /* commands in `encoder` */
  WGPUBuffer slab;             /* by-value parameters */
  uint64_t slab_size, slab_used;
  WGPUBuffer staging; /* map-read staging for copies to the host */
  uint64_t staging_size;
  WGPUBuffer dummy;    /* bound for NULL writable pointer arguments */
  WGPUBuffer dummy_ro; /* ... and for NULL const ones */
  wg_bind_cache_entry_t cache[kWgBindCacheSize];
  size_t cache_next;

  /* The loop guard, on adapters that end long loops early (base.loop_limit
   * set): kernels that loop are compiled with wgsl_loop_guard, and each of
   * their launches binds its own slot (guard_slot bytes, a dynamic offset)
   * of `guard` at group 1, whose first word the kernel sets when a loop was
   * cut short. Every read of device memory into host memory (copies,
   * synchronizations) also reads the slots used since the last one; a set
   * word fails it, naming the kernel of that slot. NULL guard: off. */
  WGPUBuffer guard;
  WGPUBindGroupLayout guard_bgl;
  WGPUBindGroup guard_group;
  uint32_t guard_slot;
  size_t guard_used;
  char (*guard_names)[kWgGuardName]; /* kWgGuardSlots: each slot's kernel */
  char adapter[256];                 /* the adapter's name, for messages */

  rk__pending_t pending;     /* first unreported asynchronous error */
  pthread_mutex_t lost_lock; /* lost_msg */
  bool lost;
  char lost_msg[1024];
} wg_context_t;

typedef struct wg_pipeline {
  uint32_t wg[3];
  uint32_t dyn_shared;
  WGPUComputePipeline pipeline;
} wg_pipeline_t;

/* The backend's side of an rk_function_t (the module keeps both arrays in
 * the same order; rk__wg_function maps one to the other). */
struct wg_function {
  rk_function_t *base;
  char *unavailable;     /* why the target cannot run it; NULL if it can */
  char *wgsl;            /* the entry's WGSL */
  char entry_point[128]; /* its @compute function's name in the WGSL */
  WGPUShaderModule shader;
  WGPUBindGroupLayout bgl;
  WGPUPipelineLayout layout;
  size_t nptrs;            /* buffer bindings 0..nptrs-1 */
  uint64_t read_only_mask; /* bit i: parameter i is a `const T *` */
  uint32_t bind_elem[64];  /* element size of each buffer binding */
  size_t params_bytes;     /* packed by-value parameters; 0: no binding */
  uint64_t params_bind;    /* bound size of the parameter block */
  bool dynamic_shared;     /* the WGSL has `override rk_dyn_shared_bytes` */
  bool guarded;            /* binds the context's loop guard at group 1 */
  wg_pipeline_t *pipelines;
  size_t npipelines;
};

typedef struct wg_module {
  rk_module_t base;
  wg_function_t *fns; /* parallel to base.functions */
  rk__param_t *params;
  char *names;
} wg_module_t;

static inline wg_context_t *wg_ctx(rk_context_t *c) {
  return (wg_context_t *)c;
}

static inline wg_function_t *rk__wg_function(rk_function_t *fn) {
  wg_module_t *m = (wg_module_t *)fn->module;
  return &m->fns[fn - m->base.functions];
}

/* ---- webgpu_backend.c --------------------------------------------------- */

/* Runs the instance's events until *flag is non-zero. `gpu`: the event
 * waits for submitted GPU work (blocks in the device poll when the library
 * has one). RK_ERR_DEVICE_LOST if the device is lost meanwhile. */
rk_status_t rk__wg_wait(wg_context_t *ctx, const int *flag, bool gpu);
/* Pops an error scope pushed by the caller: RK_OK, or the scope's error
 * mapped to `status` (out of memory to RK_ERR_OUT_OF_MEMORY) with the
 * implementation's message in `msg`. */
rk_status_t rk__wg_pop_scope(wg_context_t *ctx, rk_status_t status, char *msg,
                             size_t cap);

/* ---- webgpu_memory.c (callers hold ctx->lock) ---------------------------- */

rk_status_t rk__wg_allocate(wg_context_t *ctx, size_t bytes, rk_devptr_t *out);
rk_status_t rk__wg_free(wg_context_t *ctx, rk_devptr_t ptr);
/* The allocation holding [ptr, ptr+n) and ptr's offset in it. */
rk_status_t rk__wg_lookup(wg_context_t *ctx, rk_devptr_t ptr, size_t n,
                          wg_alloc_t **out_alloc, uint64_t *out_offset);
/* Ends the open compute pass (copies cannot be recorded inside one). */
void rk__wg_end_pass(wg_context_t *ctx);
/* The open encoder, created if needed (NULL only on failure). */
WGPUCommandEncoder rk__wg_encoder(wg_context_t *ctx);
/* Submits the open encoder, if any. */
rk_status_t rk__wg_flush(wg_context_t *ctx);
/* Performs a copy in queue order (re-validating pointers). Copies to the
 * host wait for the data. */
rk_status_t rk__wg_copy(wg_context_t *ctx, const rk__copy_t *copy);
/* The largest read done with one map of the staging buffer (larger ones
 * go in pieces, so the staging buffer stays at most about this big). */
#define RK__WG_STAGING_MAX ((size_t)64 << 20)

/* One range of a device buffer to read into host memory. */
typedef struct rk__wg_read {
  void *dst;
  WGPUBuffer buffer;
  uint64_t offset;
  size_t n;
} rk__wg_read_t;
/* Reads the ranges with one submit and one wait (after all recorded
 * work). Their total (each rounded up to 8 bytes) must be at most
 * RK__WG_STAGING_MAX plus 16 bytes per range. */
rk_status_t rk__wg_read_many(wg_context_t *ctx, size_t count,
                             const rk__wg_read_t *reads);
/* Reads the loop guard's slots used since the last read (after all work
 * recorded so far) and fails with its error when a launch was cut short;
 * with no slot in use, waits until the queue is idle if `or_wait`. Takes
 * ctx->lock. rk__wg_read_many() checks the slots with every read. */
rk_status_t rk__wg_guard_check(wg_context_t *ctx, bool or_wait);
/* Takes a loop guard slot for a launch of f (checking the slots first
 * when all are taken): its dynamic offset in *out_offset. Caller holds
 * ctx->lock. */
rk_status_t rk__wg_guard_slot(wg_context_t *ctx, const wg_function_t *f,
                              uint32_t *out_offset);
/* Drops cached bind groups that use allocation `id` (0: all of them) or
 * function `fn` (NULL: any). */
void rk__wg_cache_drop(wg_context_t *ctx, uint32_t id, const wg_function_t *fn);

/* ---- webgpu_module.c ---------------------------------------------------- */

rk_status_t rk__wg_compile(rk_context_t *context, const char *source,
                           const rk_compile_options_t *options,
                           rk_module_t **out_module);
void rk__wg_module_destroy(rk_module_t *module);
/* Records a launch in the open encoder. Caller holds ctx->lock. */
rk_status_t rk__wg_launch_locked(wg_context_t *ctx, wg_function_t *fn,
                                 rk_dim3_t grid, rk_dim3_t block,
                                 size_t shared_mem, const rk__args_t *args);

/* ---- webgpu_stream.c ---------------------------------------------------- */

rk_status_t rk__wg_stream_create(rk_context_t *context, rk_stream_t **out);
rk_status_t rk__wg_stream_destroy(rk_stream_t *stream);
rk_status_t rk__wg_stream_synchronize(rk_stream_t *stream);
rk_status_t rk__wg_stream_copy(rk_stream_t *stream, const rk__copy_t *copy);
rk_status_t rk__wg_stream_launch(rk_stream_t *stream, rk_function_t *fn,
                                 rk_dim3_t grid, rk_dim3_t block,
                                 size_t shared_mem, rk__args_t *args);
/* Waits until everything submitted so far has run. */
rk_status_t rk__wg_wait_idle(wg_context_t *ctx);

#endif /* RK_BACKENDS_WEBGPU_WEBGPU_BACKEND_H_ */
