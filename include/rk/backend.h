/* rk/backend.h - the backend interface: backend -> context -> module ->
 * function, plus streams.
 *
 * A backend is one compute API (CPU, CUDA, WebGPU, Metal, OpenCL). Each is
 * loaded at run time; opening one that is missing fails with
 * RK_ERR_UNAVAILABLE and rk_last_error() names what was tried. A context owns
 * device memory, compiled modules and streams on one device.
 *
 *   rk_backend_t *be;  rk_context_t *ctx;  rk_module_t *mod;
 *   rk_function_t *fn; rk_devptr_t x;
 *   rk_backend_open(RK_BACKEND_AUTO, &be);          // RK_BACKEND=cpu overrides
 *   rk_backend_create_context(be, 0, &ctx);
 *   rk_context_allocate(ctx, n * sizeof(float), &x);
 *   rk_context_compile(ctx, source, NULL, &mod);    // kernel language source
 *   rk_module_get_function(mod, "scale", &fn);
 *   rk_arg_t args[] = {rk_arg_i32(n), rk_arg_f32(2.0f), rk_arg_ptr(x)};
 *   rk_function_launch(fn, rk_dim3(blocks, 1, 1), rk_dim3(256, 1, 1), 0,
 *                      NULL, args, 3);
 *   rk_context_synchronize(ctx);
 *   ...
 *   rk_context_destroy(ctx);  rk_backend_destroy(be);
 *
 * Thread safety: backends and contexts may be used from several threads at
 * once; one stream must not be used from two threads at the same time.
 * Ownership: each create/open has exactly one matching destroy. Destroying a
 * context also releases the memory, modules, functions and streams it still
 * owns; destroying a backend that still has contexts is RK_ERR_INVALID_STATE.
 * As with free(), using or destroying an object after it was destroyed is
 * undefined behaviour (device pointers, by contrast, are always checked).
 */
#ifndef RK_BACKEND_H_
#define RK_BACKEND_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rk_backend_kind {
  RK_BACKEND_AUTO = 0, /* the best backend with a usable device */
  RK_BACKEND_CPU,
  RK_BACKEND_CUDA,
  RK_BACKEND_METAL,
  RK_BACKEND_WEBGPU,
  RK_BACKEND_OPENCL,
  RK_BACKEND_KIND_COUNT_
} rk_backend_kind_t;

/* "auto", "cpu", "cuda", "metal", "webgpu", "opencl"; "unknown" otherwise. */
const char *rk_backend_kind_name(rk_backend_kind_t kind);
/* Parses a name as above (case-insensitive). Unknown names are
 * RK_ERR_INVALID_ARGUMENT and the message lists the known ones. */
rk_status_t rk_backend_kind_from_name(const char *name,
                                      rk_backend_kind_t *out_kind);
/* Whether this build of rk has the backend `kind` (whether it opens here
 * is rk_backend_open's answer). False for RK_BACKEND_AUTO. */
bool rk_backend_kind_built_in(rk_backend_kind_t kind);

typedef struct rk_backend rk_backend_t;
typedef struct rk_context rk_context_t;
typedef struct rk_module rk_module_t;
typedef struct rk_function rk_function_t;
typedef struct rk_stream rk_stream_t;

/* A device address. On the CPU backend it is a host address; elsewhere it is
 * only meaningful to the backend. Offsets within an allocation are formed by
 * adding a byte count. 0 is never a valid allocation. */
typedef uint64_t rk_devptr_t;

typedef struct rk_dim3 {
  uint32_t x, y, z;
} rk_dim3_t;

static inline rk_dim3_t rk_dim3(uint32_t x, uint32_t y, uint32_t z) {
  rk_dim3_t d = {x, y, z};
  return d;
}

/* ---- Backends ----------------------------------------------------------- */

/* Capability flags of a device (rk_device_info_t.caps). */
enum {
  RK_CAP_PERSISTENT_KERNELS = 1u << 0, /* a kernel may stay resident */
  RK_CAP_COOPERATIVE_LAUNCH = 1u << 1, /* grid-wide sync is supported */
  RK_CAP_MAPPED_HOST_MEMORY = 1u << 2, /* device can access host memory */
  RK_CAP_ATOMIC64 = 1u << 3,           /* 64-bit atomics in kernels */
  RK_CAP_F64 = 1u << 4,                /* double precision in kernels */
  RK_CAP_SOFTWARE = 1u << 5, /* an emulation (lavapipe, PoCL's CPU device);
                                never chosen by RK_BACKEND_AUTO */
  RK_CAP_INT64 = 1u << 6,    /* 64-bit integer types in kernels */
  RK_CAP_MANAGED_CONCURRENT = 1u << 7, /* host and device may use managed
                                          memory at the same time (CUDA) */
};

typedef struct rk_device_info {
  char name[128];
  char vendor[64];
  rk_backend_kind_t backend;
  uint32_t compute_units; /* cores, SMs, compute units */
  uint64_t memory_bytes;  /* device (or system) memory */
  uint32_t max_threads_per_block;
  uint64_t shared_mem_per_block; /* bytes of block-shared memory */
  uint32_t caps;                 /* RK_CAP_* flags */
  /* The device's architecture where the backend names one: "sm_90" for a
   * CUDA device of compute capability 9.0; empty otherwise. */
  char arch[32];
} rk_device_info_t;

/* Opens a backend. RK_BACKEND_AUTO tries CUDA, Metal, WebGPU, OpenCL, CPU in
 * that order and takes the first with a usable, non-software device; the
 * environment variable RK_BACKEND=name overrides the choice (a named backend
 * that is absent is an error, never a silent fallback). An explicit kind that
 * cannot be opened returns RK_ERR_UNAVAILABLE with the reason (which libraries
 * were tried). *out_backend is set only on success. */
rk_status_t rk_backend_open(rk_backend_kind_t kind, rk_backend_t **out_backend);
/* Releases a backend. RK_ERR_INVALID_STATE (and nothing released) while it
 * still has contexts. NULL is accepted and ignored. */
rk_status_t rk_backend_destroy(rk_backend_t *backend);

rk_backend_kind_t rk_backend_kind(const rk_backend_t *backend);
const char *rk_backend_name(const rk_backend_t *backend);
/* The vendor library the backend loaded and the versions it reports
 * ("wgpu-native 29.0.0.0 (/path/libwgpu_native.so)", "libOpenCL.so.1:
 * OpenCL 3.0 PoCL 3.1 ..."); "" for a backend without one (cpu) or a NULL
 * backend. The string lives as long as the backend. */
const char *rk_backend_library(const rk_backend_t *backend);
/* Number of usable devices; 0 if none (or backend is NULL). */
int rk_backend_device_count(const rk_backend_t *backend);
rk_status_t rk_backend_device_info(const rk_backend_t *backend, int device,
                                   rk_device_info_t *out_info);
/* Creates a context on device `device` (0 .. count-1). */
rk_status_t rk_backend_create_context(rk_backend_t *backend, int device,
                                      rk_context_t **out_context);

/* ---- Contexts and memory ----------------------------------------------- */

/* Releases the context and everything it still owns (memory, modules,
 * functions, streams; pending stream work is finished first). Returns the
 * first unreported asynchronous error, if any. NULL is accepted.
 * RK_ERR_INVALID_STATE, nothing released, while a destroyed actor's handler
 * that never returned still runs on the context (rk/actor.h). */
rk_status_t rk_context_destroy(rk_context_t *context);
rk_backend_t *rk_context_backend(const rk_context_t *context);

/* Allocates `bytes` (> 0) of device memory, aligned to at least 64 bytes.
 * Absurd sizes are RK_ERR_OUT_OF_MEMORY, never a crash. */
rk_status_t rk_context_allocate(rk_context_t *context, size_t bytes,
                                rk_devptr_t *out_ptr);
/* Frees an allocation returned by rk_context_allocate. A pointer that is not
 * the start of a live allocation of this context is RK_ERR_INVALID_ARGUMENT.
 * Work queued before it that uses the memory: on CUDA the free waits for
 * the context's streams first; elsewhere it fails when it runs, reported by
 * the next synchronization (docs/api.md). */
rk_status_t rk_context_free(rk_context_t *context, rk_devptr_t ptr);

/* Synchronous copies. `ptr`s may point inside an allocation; the whole range
 * must lie within one live allocation of this context (otherwise
 * RK_ERR_OUT_OF_RANGE or RK_ERR_INVALID_ARGUMENT, and nothing is copied).
 * n == 0 is RK_ERR_INVALID_ARGUMENT. They are ordered after all work already
 * queued on the NULL stream. */
rk_status_t rk_context_copy_to_device(rk_context_t *context, rk_devptr_t dst,
                                      const void *src, size_t n);
rk_status_t rk_context_copy_to_host(rk_context_t *context, void *dst,
                                    rk_devptr_t src, size_t n);
rk_status_t rk_context_copy_device_to_device(rk_context_t *context,
                                             rk_devptr_t dst, rk_devptr_t src,
                                             size_t n);

/* Waits for all work on all streams of the context. Returns the first error
 * raised by asynchronous work since the last synchronization (and its message
 * in rk_last_error()); the error is then cleared. */
rk_status_t rk_context_synchronize(rk_context_t *context);

/* ---- Modules and functions --------------------------------------------- */

typedef struct rk_compile_options {
  /* Name used in diagnostics ("saxpy.c"); default "<source>". */
  const char *source_name;
  /* NULL-terminated list of "NAME" or "NAME=VALUE" preprocessor defines. */
  const char *const *defines;
  /* Bypass the on-disk cache (always compile). */
  bool no_cache;
} rk_compile_options_t;

void rk_compile_options_init(rk_compile_options_t *options);

/* Compiles kernel-language source (C with #include <rk/kernel.h>) into a
 * module. Compiler diagnostics come back with RK_ERR_COMPILE in
 * rk_last_error(). `options` may be NULL for defaults. */
rk_status_t rk_context_compile(rk_context_t *context, const char *source,
                               const rk_compile_options_t *options,
                               rk_module_t **out_module);
/* Releases a module and its functions. NULL is accepted. Work already queued
 * that uses the module is finished first. */
rk_status_t rk_module_destroy(rk_module_t *module);
/* Whether the module was loaded from the on-disk kernel cache rather than
 * compiled (false on backends without a cache or with no_cache set). */
bool rk_module_cache_hit(const rk_module_t *module);
/* Number of kernels (RK_KERNEL entry points) in the module. */
size_t rk_module_function_count(const rk_module_t *module);
/* Looks up a kernel (RK_KERNEL) by name: RK_ERR_NOT_FOUND lists the names
 * the module has. The function is owned by the module. */
rk_status_t rk_module_get_function(rk_module_t *module, const char *name,
                                   rk_function_t **out_function);

/* Kinds of kernel parameters and launch arguments. */
typedef enum rk_arg_kind {
  RK_ARG_I32 = 1,
  RK_ARG_U32,
  RK_ARG_I64,
  RK_ARG_U64,
  RK_ARG_F32,
  RK_ARG_F64,
  RK_ARG_PTR,    /* a device pointer (rk_devptr_t) */
  RK_ARG_STRUCT, /* a small struct passed by value (<= RK_ARG_STRUCT_MAX) */
} rk_arg_kind_t;

enum { RK_ARG_STRUCT_MAX = 256 };

/* "i32", "u32", "i64", "u64", "f32", "f64", "ptr", "struct". */
const char *rk_arg_kind_name(rk_arg_kind_t kind);

typedef struct rk_arg {
  rk_arg_kind_t kind;
  size_t size; /* bytes of the value; for RK_ARG_STRUCT the struct's size */
  union {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    rk_devptr_t ptr;
    const void *data; /* RK_ARG_STRUCT: copied at launch */
  } value;
} rk_arg_t;

static inline rk_arg_t rk_arg_i32(int32_t v) {
  rk_arg_t a = {RK_ARG_I32, sizeof v, {0}};
  a.value.i32 = v;
  return a;
}
static inline rk_arg_t rk_arg_u32(uint32_t v) {
  rk_arg_t a = {RK_ARG_U32, sizeof v, {0}};
  a.value.u32 = v;
  return a;
}
static inline rk_arg_t rk_arg_i64(int64_t v) {
  rk_arg_t a = {RK_ARG_I64, sizeof v, {0}};
  a.value.i64 = v;
  return a;
}
static inline rk_arg_t rk_arg_u64(uint64_t v) {
  rk_arg_t a = {RK_ARG_U64, sizeof v, {0}};
  a.value.u64 = v;
  return a;
}
static inline rk_arg_t rk_arg_f32(float v) {
  rk_arg_t a = {RK_ARG_F32, sizeof v, {0}};
  a.value.f32 = v;
  return a;
}
static inline rk_arg_t rk_arg_f64(double v) {
  rk_arg_t a = {RK_ARG_F64, sizeof v, {0}};
  a.value.f64 = v;
  return a;
}
static inline rk_arg_t rk_arg_ptr(rk_devptr_t v) {
  rk_arg_t a = {RK_ARG_PTR, sizeof v, {0}};
  a.value.ptr = v;
  return a;
}
static inline rk_arg_t rk_arg_struct(const void *data, size_t size) {
  rk_arg_t a = {RK_ARG_STRUCT, size, {0}};
  a.value.data = data;
  return a;
}

const char *rk_function_name(const rk_function_t *function);
/* The most threads one block of this kernel may have: the device's
 * max_threads_per_block, or less where the compiled kernel allows less (its
 * registers on CUDA, the driver's work-group size on OpenCL, the pipeline's
 * limit on Metal). A launch with a larger block is RK_ERR_INVALID_ARGUMENT.
 * 0 for NULL. */
uint32_t rk_function_max_block_threads(const rk_function_t *function);
/* The kernel's parameters, as declared in its source. */
size_t rk_function_param_count(const rk_function_t *function);
/* Kind and size in bytes of parameter `index`; RK_ERR_OUT_OF_RANGE past the
 * end. */
rk_status_t rk_function_param(const rk_function_t *function, size_t index,
                              rk_arg_kind_t *out_kind, size_t *out_size);

/* Launches `grid` blocks of `block` threads. `shared_mem` is the dynamic
 * block-shared memory in bytes (rk_dynamic_shared() in the kernel). The
 * arguments must match the kernel's parameters in number, kind and size, and
 * pointer arguments must point into live allocations of the context; a
 * mismatch is RK_ERR_INVALID_ARGUMENT before anything runs. `stream` NULL is
 * the context's default stream. The launch is asynchronous; call
 * rk_stream_synchronize or rk_context_synchronize before reading results. */
rk_status_t rk_function_launch(rk_function_t *function, rk_dim3_t grid,
                               rk_dim3_t block, size_t shared_mem,
                               rk_stream_t *stream, const rk_arg_t *args,
                               size_t nargs);

/* ---- Streams ------------------------------------------------------------ */

/* An in-order asynchronous queue of copies and launches. Errors raised while
 * executing queued work surface at the next rk_stream_synchronize or
 * rk_context_synchronize. */
rk_status_t rk_context_create_stream(rk_context_t *context,
                                     rk_stream_t **out_stream);
/* Finishes queued work, then releases the stream. Returns its unreported
 * error, if any. NULL is accepted. */
rk_status_t rk_stream_destroy(rk_stream_t *stream);
rk_status_t rk_stream_synchronize(rk_stream_t *stream);

/* Asynchronous copies. Bounds are checked when queued (and again when run,
 * in case the memory was freed meanwhile). Host memory must stay valid until
 * the copy has completed. */
rk_status_t rk_stream_copy_to_device(rk_stream_t *stream, rk_devptr_t dst,
                                     const void *src, size_t n);
rk_status_t rk_stream_copy_to_host(rk_stream_t *stream, void *dst,
                                   rk_devptr_t src, size_t n);
rk_status_t rk_stream_copy_device_to_device(rk_stream_t *stream,
                                            rk_devptr_t dst, rk_devptr_t src,
                                            size_t n);

#ifdef __cplusplus
}
#endif

#endif /* RK_BACKEND_H_ */
