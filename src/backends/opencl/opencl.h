/* OpenCL backend internals.
 *
 * Devices are every device of every platform the ICD loader reports, GPUs
 * and accelerators first; CPU devices (PoCL's, Intel's CPU runtime) are
 * flagged RK_CAP_SOFTWARE so automatic selection prefers rk's own CPU
 * backend. A context is one cl_context with an in-order command queue for
 * the default stream; each rk stream has its own in-order queue.
 *
 * Device pointers are rk addresses, not OpenCL ones: every allocation gets
 * a range of a process-wide, never reused address space with bit 63 set
 * (so no host address is ever mistaken for one), and a sorted table maps an
 * address to (cl_mem, offset). Kernels receive each pointer parameter as a
 * buffer plus a byte offset (the generated kernel is rewritten to take
 * both), so a pointer may point anywhere inside an allocation.
 */
#ifndef RK_BACKENDS_OPENCL_OPENCL_H_
#define RK_BACKENDS_OPENCL_OPENCL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/opencl/cl_api.h"
#include "hal/alloc_table.h"
#include "hal/hal.h"
#include "hal/pending.h"
#include "rk/codegen.h"

/* ---- Backend and devices ------------------------------------------------ */

typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  cl_device_type type;
  rk_device_info_t info;
  uint64_t max_alloc;      /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  size_t max_item[3];      /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
  char platform_name[128]; /* for messages and the build cache key */
  char version[128];
} ocl_device_t;

typedef struct ocl_backend {
  rk_backend_t base;
  rk_cl_api_t api;
  ocl_device_t *devices;
} ocl_backend_t;

/* ---- Contexts and memory ------------------------------------------------ */

typedef struct ocl_program_cache ocl_program_cache_t;

typedef struct ocl_context {
  rk_context_t base;
  const rk_cl_api_t *api;
  const ocl_device_t *dev;
  cl_context cl;
  cl_command_queue queue;    /* the default stream */
  pthread_rwlock_t mem_lock; /* readers: resolve + enqueue; writer: alloc */
  rk__alloc_table_t allocs;  /* handle: the cl_mem */
  pthread_mutex_t cache_lock;
  ocl_program_cache_t *cache; /* built programs by content hash */
  rk__pending_t pending;      /* first unreported default-stream error */
} ocl_context_t;

static inline ocl_context_t *ocl_ctx(rk_context_t *c) {
  return (ocl_context_t *)c;
}

/* Finds the allocation holding [ptr, ptr+n) (n may be 0: ptr inside).
 * Caller holds mem_lock. On failure the message names the pointer. */
rk_status_t rk__ocl_resolve_locked(ocl_context_t *ctx, rk_devptr_t ptr,
                                   size_t n, cl_mem *out_mem,
                                   size_t *out_offset);

/* Performs (enqueues) a copy on `queue`, resolving both sides under the
 * memory lock. `blocking`: wait for it before returning. With out_event
 * the event of the (last) command is returned. */
rk_status_t rk__ocl_enqueue_copy(ocl_context_t *ctx, cl_command_queue queue,
                                 const rk__copy_t *copy, bool blocking,
                                 cl_event *out_event);

/* ---- Modules and launches ----------------------------------------------- */

typedef struct ocl_function {
  cl_kernel kernel;
  pthread_mutex_t lock; /* arguments are set and enqueued as one step */
  cl_uint *cl_index;    /* OpenCL argument index of each rk parameter */
  bool dyn_shared;      /* takes the hidden __local rk_dyn_shared */
  cl_uint dyn_index;
  size_t max_work_group; /* CL_KERNEL_WORK_GROUP_SIZE */
} ocl_function_t;

typedef struct ocl_module {
  rk_module_t base;
  cl_program program;
  rk_entry_list_t *entries; /* names and parameters */
  ocl_function_t *fns;
  rk__param_t *params;
} ocl_module_t;

typedef struct ocl_launch {
  rk_function_t *function;
  rk_dim3_t grid, block;
  size_t shared_mem;
  rk__args_t *args; /* owned */
} ocl_launch_t;

rk_status_t rk__ocl_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module);
void rk__ocl_module_destroy(rk_module_t *module);
void rk__ocl_cache_release(ocl_context_t *ctx);
/* Builds OpenCL C `text` for the context's device, or takes it from the
 * context's cache (unless no_cache); returns a program reference the caller
 * releases. A build failure is RK_ERR_COMPILE with the build log and the
 * generated line the first error points at. */
rk_status_t rk__ocl_get_program(ocl_context_t *ctx, const char *text,
                                const char *name, bool no_cache,
                                cl_program *out, bool *out_hit);
/* Sets the kernel's arguments and enqueues it on `queue`; does not take
 * ownership of launch->args. */
rk_status_t rk__ocl_enqueue_launch(ocl_context_t *ctx, cl_command_queue queue,
                                   const ocl_launch_t *launch,
                                   cl_event *out_event);

/* ---- Streams ------------------------------------------------------------ */

rk_status_t rk__ocl_stream_create(rk_context_t *context, rk_stream_t **out);
rk_status_t rk__ocl_stream_destroy(rk_stream_t *stream);
rk_status_t rk__ocl_stream_synchronize(rk_stream_t *stream);
rk_status_t rk__ocl_stream_copy(rk_stream_t *stream, const rk__copy_t *copy);
/* Takes ownership of launch->args. */
rk_status_t rk__ocl_stream_launch(rk_stream_t *stream,
                                  const ocl_launch_t *launch);

#endif /* RK_BACKENDS_OPENCL_OPENCL_H_ */
