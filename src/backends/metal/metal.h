/* Metal backend internals.
 *
 * Plain C through the Objective-C runtime: no Objective-C compiler and no
 * Apple headers. libobjc and Metal.framework are loaded at run time
 * (metal_objc.c); every message is sent with objc_msgSend cast to the
 * method's exact prototype (RK_SEND below), so the same sources build on
 * every platform and the backend reports "unavailable" where the libraries
 * are missing (everywhere but macOS).
 *
 * Devices: MTLCopyAllDevices. A context holds one id<MTLDevice>. Device
 * memory is one MTLBuffer per allocation: shared storage (host-visible)
 * where the device has unified memory, so copies are memcpy on `contents`;
 * private storage elsewhere, copied by blits through shared staging
 * buffers. Device pointers are rk addresses (bit 63 set, never reused)
 * mapped to (buffer, offset) by a sorted table, as on OpenCL.
 *
 * Kernels: the front end's MSL (rk__kernel_front_end) compiled with
 * newLibraryWithSource:options:error:, one MTLLibrary per module (cached
 * per context by content hash) and one compute pipeline per entry, made
 * when the module is built. Launches bind [[buffer(i)]] in parameter order
 * (pointers with setBuffer:offset:atIndex:, values with
 * setBytes:length:atIndex:) and dispatch the launch's grid of threadgroups.
 *
 * Streams (metal_stream.c): every rk stream, the default one included, is
 * an MTLCommandQueue plus a host list of held operations run in order by
 * the stream's thread (or by a thread synchronizing it). A launch on an
 * idle stream is committed at once on the caller's thread; held launches in
 * a row go into one command buffer; a held copy waits for the command
 * buffers before it and checks its memory again when it runs. Command
 * buffers report through a completion handler (a block literal built by
 * hand after the Apple block ABI) that keeps the first error for the next
 * synchronization. Model: tests/model/metal_stream.pml.
 *
 * Autorelease pools: every entry point that sends messages and every
 * stream-thread step runs inside objc_autoreleasePoolPush/Pop.
 */
#ifndef RK_BACKENDS_METAL_METAL_H_
#define RK_BACKENDS_METAL_METAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hal/alloc_table.h"
#include "hal/hal.h"
#include "hal/pending.h"
#include "rk/codegen.h"

/* ---- The Objective-C runtime (metal_objc.c) ------------------------------ */

typedef void *mtl_id;  /* id */
typedef void *mtl_sel; /* SEL */

/* MTLSize: three NSUIntegers. */
typedef struct mtl_size {
  unsigned long width, height, depth;
} mtl_size_t;

/* Constants of Metal's public headers used here. */
enum {
  kMtlStorageShared = 0 << 4,  /* MTLResourceStorageModeShared */
  kMtlStoragePrivate = 2 << 4, /* MTLResourceStorageModePrivate */
  kMtlCommandBufferStatusCompleted = 4,
  kMtlCommandBufferStatusError = 5,
};

/* X(field, "selector:name:") for every message the backend sends. */
#define RK_MTL_SELECTORS(X)                                                \
  X(alloc, "alloc")                                                        \
  X(init, "init")                                                          \
  X(retain, "retain")                                                      \
  X(release, "release")                                                    \
  X(count, "count")                                                        \
  X(objectAtIndex, "objectAtIndex:")                                       \
  X(stringWithUTF8String, "stringWithUTF8String:")                         \
  X(UTF8String, "UTF8String")                                              \
  X(localizedDescription, "localizedDescription")                          \
  X(code, "code")                                                          \
  X(name, "name")                                                          \
  X(registryID, "registryID")                                              \
  X(hasUnifiedMemory, "hasUnifiedMemory")                                  \
  X(maxThreadsPerThreadgroup, "maxThreadsPerThreadgroup")                  \
  X(maxThreadgroupMemoryLength, "maxThreadgroupMemoryLength")              \
  X(recommendedMaxWorkingSetSize, "recommendedMaxWorkingSetSize")          \
  X(maxBufferLength, "maxBufferLength")                                    \
  X(newCommandQueue, "newCommandQueue")                                    \
  X(newBufferWithLength, "newBufferWithLength:options:")                   \
  X(newBufferWithBytes, "newBufferWithBytes:length:options:")              \
  X(contents, "contents")                                                  \
  X(newLibraryWithSource, "newLibraryWithSource:options:error:")           \
  X(setFastMathEnabled, "setFastMathEnabled:")                             \
  X(newFunctionWithName, "newFunctionWithName:")                           \
  X(newComputePipelineState, "newComputePipelineStateWithFunction:error:") \
  X(maxTotalThreadsPerThreadgroup, "maxTotalThreadsPerThreadgroup")        \
  X(staticThreadgroupMemoryLength, "staticThreadgroupMemoryLength")        \
  X(commandBuffer, "commandBuffer")                                        \
  X(computeCommandEncoder, "computeCommandEncoder")                        \
  X(blitCommandEncoder, "blitCommandEncoder")                              \
  X(setComputePipelineState, "setComputePipelineState:")                   \
  X(setBuffer, "setBuffer:offset:atIndex:")                                \
  X(setBytes, "setBytes:length:atIndex:")                                  \
  X(setThreadgroupMemoryLength, "setThreadgroupMemoryLength:atIndex:")     \
  X(dispatchThreadgroups, "dispatchThreadgroups:threadsPerThreadgroup:")   \
  X(copyBuffer,                                                            \
    "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:")        \
  X(endEncoding, "endEncoding")                                            \
  X(addCompletedHandler, "addCompletedHandler:")                           \
  X(commit, "commit")                                                      \
  X(status, "status")                                                      \
  X(error, "error")

typedef struct rk_objc_api {
  void *objc_handle, *metal_handle;
  char objc_path[512], metal_path[512];
  mtl_id (*objc_getClass)(const char *name);
  mtl_sel (*sel_registerName)(const char *name);
  void (*objc_msgSend)(void);
  void (*objc_msgSend_stret)(void); /* x86-64 only: struct returns */
  void *(*objc_autoreleasePoolPush)(void);
  void (*objc_autoreleasePoolPop)(void *pool);
  mtl_id (*MTLCopyAllDevices)(void);
  void *stack_block_isa; /* _NSConcreteStackBlock */
  mtl_id NSString, MTLCompileOptions;
  struct {
#define RK_MTL_SEL_FIELD_(field, name) mtl_sel field;
    RK_MTL_SELECTORS(RK_MTL_SEL_FIELD_)
#undef RK_MTL_SEL_FIELD_
  } sel;
} rk_objc_api_t;

/* A message: objc_msgSend cast to the exact prototype of the method sent,
 *   RK_SEND(api, RET, (mtl_id, mtl_sel, ARG TYPES...), receiver, selector,
 *           args...) */
#define RK_SEND(api, ret, prototype, ...) \
  ((ret(*) prototype)(api)->objc_msgSend)(__VA_ARGS__)

/* Loads libobjc and Metal once per process ($RK_METAL_OBJC_LIB and
 * $RK_METAL_LIB name other files: the tests' fake runtime). *out points at
 * the process-wide table. RK_ERR_UNAVAILABLE with every path tried. */
rk_status_t rk__mtl_api_load(const rk_objc_api_t **out);

/* Messages with a result the caller releases or reads at once. */
mtl_id rk__mtl_send(const rk_objc_api_t *api, mtl_id obj, mtl_sel sel);
unsigned long rk__mtl_send_ul(const rk_objc_api_t *api, mtl_id obj,
                              mtl_sel sel);
bool rk__mtl_send_bool(const rk_objc_api_t *api, mtl_id obj, mtl_sel sel);
/* A method returning MTLSize (objc_msgSend_stret on x86-64). */
mtl_size_t rk__mtl_send_size(const rk_objc_api_t *api, mtl_id obj, mtl_sel sel);
void rk__mtl_release(const rk_objc_api_t *api, mtl_id obj); /* nil: no-op */
void rk__mtl_retain(const rk_objc_api_t *api, mtl_id obj);
/* An autoreleased NSString of `s` (nil when it cannot be made). */
mtl_id rk__mtl_string(const rk_objc_api_t *api, const char *s);
/* The UTF-8 text of an NSString ("" for nil). Valid while the string
 * and the current autorelease pool live. */
const char *rk__mtl_utf8(const rk_objc_api_t *api, mtl_id string);
/* [[error localizedDescription] UTF8String], or `fallback` for nil. */
const char *rk__mtl_error_text(const rk_objc_api_t *api, mtl_id error,
                               const char *fallback);

/* Autorelease pools around every stretch of messaging. */
static inline void *rk__mtl_pool_push(const rk_objc_api_t *api) {
  return api->objc_autoreleasePoolPush();
}
static inline void rk__mtl_pool_pop(const rk_objc_api_t *api, void *pool) {
  api->objc_autoreleasePoolPop(pool);
}

/* ---- Blocks (the Apple block ABI, built by hand) ------------------------- */

/* A block literal's descriptor with a signature (BLOCK_HAS_SIGNATURE). */
typedef struct mtl_block_descriptor {
  unsigned long reserved;
  unsigned long size; /* of the whole literal, captures included */
  const char *signature;
} mtl_block_descriptor_t;

typedef struct mtl_stream mtl_stream_t;

/* void (^)(id<MTLCommandBuffer>) capturing the stream and the waiter of
 * the command buffer (plain values: no copy or dispose helpers). Built on
 * the stack; Metal copies it (Block_copy) when the handler is added. */
typedef struct mtl_completion_block {
  void *isa;
  int flags;
  int reserved;
  void (*invoke)(struct mtl_completion_block *self, mtl_id command_buffer);
  const mtl_block_descriptor_t *descriptor;
  mtl_stream_t *stream;
  void *wait;
} mtl_completion_block_t;

enum { kMtlBlockHasSignature = 1 << 30 };

/* ---- Backend, devices, contexts ------------------------------------------ */

typedef struct mtl_device {
  mtl_id device; /* retained */
  rk_device_info_t info;
  uint64_t registry_id;
  bool unified;
  mtl_size_t max_threads; /* maxThreadsPerThreadgroup */
  uint64_t max_buffer;    /* maxBufferLength */
} mtl_device_t;

typedef struct mtl_backend {
  rk_backend_t base;
  const rk_objc_api_t *api;
  mtl_device_t *devices;
} mtl_backend_t;

typedef struct mtl_library_cache mtl_library_cache_t;

typedef struct mtl_context {
  rk_context_t base;
  const rk_objc_api_t *api;
  const mtl_device_t *dev;
  pthread_rwlock_t mem_lock; /* readers: resolve + encode; writer: alloc */
  rk__alloc_table_t allocs;  /* handle: the id<MTLBuffer> */
  pthread_mutex_t cache_lock;
  mtl_library_cache_t *cache; /* built libraries by content hash */
  mtl_stream_t *default_stream;
} mtl_context_t;

static inline mtl_context_t *mtl_ctx(rk_context_t *c) {
  return (mtl_context_t *)c;
}

/* The buffer holding [ptr, ptr+n) and ptr's offset in it, retained for the
 * caller (release with rk__mtl_release). The message names the pointer. */
rk_status_t rk__mtl_resolve(mtl_context_t *ctx, rk_devptr_t ptr, size_t n,
                            mtl_id *out_buffer, size_t *out_offset);

/* ---- Modules and launches (metal_module.c) --------------------------------
 */

typedef struct mtl_function {
  mtl_id pipeline;           /* id<MTLComputePipelineState> */
  unsigned long max_threads; /* maxTotalThreadsPerThreadgroup */
  size_t static_shared;      /* the entry's threadgroup memory */
  bool dyn_shared;
} mtl_function_t;

typedef struct mtl_module {
  rk_module_t base;
  mtl_id library;
  rk_entry_list_t *entries;
  mtl_function_t *fns;
  rk__param_t *params;
} mtl_module_t;

typedef struct mtl_launch {
  rk_function_t *function;
  rk_dim3_t grid, block;
  size_t shared_mem;
  rk__args_t *args; /* owned */
} mtl_launch_t;

rk_status_t rk__mtl_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module);
void rk__mtl_module_destroy(rk_module_t *module);
void rk__mtl_cache_release(mtl_context_t *ctx);
/* Checks a launch against the function and device limits (at launch). */
rk_status_t rk__mtl_check_launch(mtl_context_t *ctx, const mtl_launch_t *L);
/* Encodes one launch into `encoder` (a compute command encoder); the
 * pointers are resolved now. */
rk_status_t rk__mtl_encode_launch(mtl_context_t *ctx, mtl_id encoder,
                                  const mtl_launch_t *L);

/* ---- Streams (metal_stream.c) -------------------------------------------- */

rk_status_t rk__mtl_stream_new(mtl_context_t *ctx, mtl_stream_t **out);
/* Finishes the stream's work, stops its thread and frees it; returns its
 * unreported error. */
rk_status_t rk__mtl_stream_free(mtl_stream_t *st);
/* Waits until everything queued has run; returns (and clears) the first
 * unreported error. */
rk_status_t rk__mtl_stream_sync(mtl_stream_t *st);
/* Waits until everything queued has run, leaving errors pending. */
void rk__mtl_stream_drain(mtl_stream_t *st);
/* Queue a copy (re-checked when it runs) or a launch (takes args). */
rk_status_t rk__mtl_stream_copy(mtl_stream_t *st, const rk__copy_t *copy);
rk_status_t rk__mtl_stream_launch(mtl_stream_t *st, const mtl_launch_t *L);
/* Performs a copy now, on the calling thread (the stream before it must
 * have drained). */
rk_status_t rk__mtl_copy_now(mtl_context_t *ctx, mtl_stream_t *st,
                             const rk__copy_t *copy);

rk_status_t rk__mtl_stream_create(rk_context_t *context, rk_stream_t **out);
rk_status_t rk__mtl_stream_destroy(rk_stream_t *stream);
rk_status_t rk__mtl_stream_synchronize(rk_stream_t *stream);

#endif /* RK_BACKENDS_METAL_METAL_H_ */
