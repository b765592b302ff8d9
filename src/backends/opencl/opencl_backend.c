/* The OpenCL backend: platforms and devices, contexts, memory, copies,
 * default-stream launches. See opencl.h for the design. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "base/error.h"
#include "base/log.h"
#include "base/strbuf.h"

enum {
  kMaxPlatforms = 16,
  kMaxDevicesPerPlatform = 16,
  kAlign = 64,
};

/* rk addresses: bit 63 set, handed out in increasing order, never reused
 * (process-wide, so a pointer of one context is never live in another). */
static const uint64_t kAddressBase = (uint64_t)1 << 63;
static uint64_t g_next_address = ((uint64_t)1 << 63) + 0x10000;

static cl_mem mem_of(const rk__alloc_t *a) {
  return (cl_mem)(uintptr_t)a->handle;
}

/* ---- Devices ------------------------------------------------------------ */

static void info_string(const rk_cl_api_t *api, cl_device_id dev,
                        cl_device_info param, char *out, size_t cap) {
  size_t got = 0;
  out[0] = '\0';
  if (api->clGetDeviceInfo(dev, param, cap, out, &got) != RK_CL_SUCCESS)
    snprintf(out, cap, "unknown");
  out[cap - 1] = '\0';
}

static uint64_t info_u64(const rk_cl_api_t *api, cl_device_id dev,
                         cl_device_info param) {
  cl_ulong v = 0;
  if (api->clGetDeviceInfo(dev, param, sizeof v, &v, NULL) != RK_CL_SUCCESS)
    return 0;
  return v;
}

static uint32_t info_u32(const rk_cl_api_t *api, cl_device_id dev,
                         cl_device_info param) {
  cl_uint v = 0;
  if (api->clGetDeviceInfo(dev, param, sizeof v, &v, NULL) != RK_CL_SUCCESS)
    return 0;
  return v;
}

static void describe_device(const rk_cl_api_t *api, ocl_device_t *d) {
  rk_device_info_t *info = &d->info;
  memset(info, 0, sizeof *info);
  info->backend = RK_BACKEND_OPENCL;
  info_string(api, d->id, RK_CL_DEVICE_NAME, info->name, sizeof info->name);
  info_string(api, d->id, RK_CL_DEVICE_VENDOR, info->vendor,
              sizeof info->vendor);
  info_string(api, d->id, RK_CL_DEVICE_VERSION, d->version, sizeof d->version);
  d->type = info_u64(api, d->id, RK_CL_DEVICE_TYPE);
  info->compute_units = info_u32(api, d->id, RK_CL_DEVICE_MAX_COMPUTE_UNITS);
  info->memory_bytes = info_u64(api, d->id, RK_CL_DEVICE_GLOBAL_MEM_SIZE);
  d->max_alloc = info_u64(api, d->id, RK_CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  size_t wg = 0;
  if (api->clGetDeviceInfo(d->id, RK_CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg,
                           &wg, NULL) != RK_CL_SUCCESS)
    wg = 1;
  size_t items[3] = {wg, wg, wg};
  if (api->clGetDeviceInfo(d->id, RK_CL_DEVICE_MAX_WORK_ITEM_SIZES,
                           sizeof items, items, NULL) != RK_CL_SUCCESS) {
    items[0] = items[1] = items[2] = wg;
  }
  memcpy(d->max_item, items, sizeof items);
  info->max_threads_per_block = wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
  info->shared_mem_per_block =
      info_u64(api, d->id, RK_CL_DEVICE_LOCAL_MEM_SIZE);
  char ext[4096];
  info_string(api, d->id, RK_CL_DEVICE_EXTENSIONS, ext, sizeof ext);
  if (info_u64(api, d->id, RK_CL_DEVICE_DOUBLE_FP_CONFIG) != 0 ||
      strstr(ext, "cl_khr_fp64"))
    info->caps |= RK_CAP_F64;
  if (strstr(ext, "cl_khr_int64_base_atomics")) info->caps |= RK_CAP_ATOMIC64;
  /* OpenCL C's long is mandatory in the full profile; an embedded-profile
   * device has it only with cles_khr_int64. */
  char profile[32];
  info_string(api, d->id, RK_CL_DEVICE_PROFILE, profile, sizeof profile);
  if (strcmp(profile, "FULL_PROFILE") == 0 || strstr(ext, "cles_khr_int64"))
    info->caps |= RK_CAP_INT64;
  /* A CPU device behind OpenCL (PoCL, a CPU runtime) emulates a GPU on the
   * processor that rk's CPU backend already drives natively; so do GPU
   * devices layered on a software rasterizer (rusticl or clvk on llvmpipe,
   * lavapipe or SwiftShader). */
  static const char *const kSoftware[] = {"llvmpipe", "lavapipe",
                                          "SwiftShader"};
  if (d->type & RK_CL_DEVICE_TYPE_CPU) info->caps |= RK_CAP_SOFTWARE;
  for (size_t i = 0; i < sizeof kSoftware / sizeof kSoftware[0]; ++i)
    if (strstr(info->name, kSoftware[i])) info->caps |= RK_CAP_SOFTWARE;
}

static int device_rank(const ocl_device_t *d) {
  if (d->type & RK_CL_DEVICE_TYPE_GPU) return 0;
  if (d->type & RK_CL_DEVICE_TYPE_ACCELERATOR) return 1;
  if (d->type & RK_CL_DEVICE_TYPE_CPU) return 3;
  return 2;
}

static int compare_devices(const void *a, const void *b) {
  return device_rank(a) - device_rank(b);
}

static rk_status_t find_devices(ocl_backend_t *be) {
  const rk_cl_api_t *api = &be->api;
  cl_platform_id platforms[kMaxPlatforms];
  cl_uint np = 0;
  cl_int err = api->clGetPlatformIDs(kMaxPlatforms, platforms, &np);
  if (err != RK_CL_SUCCESS || np == 0)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "%s loaded, but it reports no OpenCL platform "
                    "(clGetPlatformIDs: %s); no driver is registered in "
                    "/etc/OpenCL/vendors (or $OCL_ICD_VENDORS)",
                    api->path, rk__cl_error_name(err));
  if (np > kMaxPlatforms) np = kMaxPlatforms;
  size_t cap = (size_t)np * kMaxDevicesPerPlatform;
  be->devices = calloc(cap, sizeof *be->devices);
  if (!be->devices) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: devices");
  size_t n = 0;
  /* rk_backend_library: the loader, then each platform's version. */
  size_t used = (size_t)snprintf(be->base.library, sizeof be->base.library,
                                 "%s", api->path);
  for (cl_uint p = 0; p < np; ++p) {
    char version[160] = "";
    if (api->clGetPlatformInfo(platforms[p], RK_CL_PLATFORM_VERSION,
                               sizeof version, version,
                               NULL) == RK_CL_SUCCESS &&
        used < sizeof be->base.library) {
      version[sizeof version - 1] = '\0';
      used += (size_t)snprintf(be->base.library + used,
                               sizeof be->base.library - used, "%s%s",
                               p ? "; " : ": ", version);
    }
  }
  for (cl_uint p = 0; p < np; ++p) {
    cl_device_id ids[kMaxDevicesPerPlatform];
    cl_uint nd = 0;
    if (api->clGetDeviceIDs(platforms[p], RK_CL_DEVICE_TYPE_ALL,
                            kMaxDevicesPerPlatform, ids, &nd) != RK_CL_SUCCESS)
      continue;
    if (nd > kMaxDevicesPerPlatform) nd = kMaxDevicesPerPlatform;
    char pname[128] = "unknown";
    size_t got = 0;
    if (api->clGetPlatformInfo(platforms[p], RK_CL_PLATFORM_NAME, sizeof pname,
                               pname, &got) != RK_CL_SUCCESS)
      snprintf(pname, sizeof pname, "unknown");
    pname[sizeof pname - 1] = '\0';
    for (cl_uint d = 0; d < nd; ++d) {
      if (info_u32(api, ids[d], RK_CL_DEVICE_AVAILABLE) == 0) continue;
      ocl_device_t *dev = &be->devices[n++];
      dev->platform = platforms[p];
      dev->id = ids[d];
      snprintf(dev->platform_name, sizeof dev->platform_name, "%s", pname);
      describe_device(api, dev);
    }
  }
  /* Stable enough: equal ranks keep platform order in practice. */
  qsort(be->devices, n, sizeof *be->devices, compare_devices);
  be->base.device_count = (int)n;
  return RK_OK;
}

static void ocl_destroy(rk_backend_t *backend) {
  ocl_backend_t *be = (ocl_backend_t *)backend;
  free(be->devices);
  rk__cl_api_unload(&be->api);
  free(be);
}

static rk_status_t ocl_open(rk_backend_t **out) {
  ocl_backend_t *be = calloc(1, sizeof *be);
  if (!be) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: backend");
  /* Drivers may print while they start (to the debug log instead). */
  rk__capture_t cap;
  rk__capture_begin(&cap);
  rk_status_t s = rk__cl_api_load(&be->api);
  if (s == RK_OK) s = find_devices(be);
  char said[512];
  rk__capture_end(&cap, "opencl", said, sizeof said);
  if (s != RK_OK) {
    ocl_destroy(&be->base);
    if (!said[0]) return s;
    char why[2048];
    snprintf(why, sizeof why, "%s", rk_last_error());
    return rk__fail(s, "%s (the driver printed: %s)", why, said);
  }
  *out = &be->base;
  return RK_OK;
}

static rk_status_t ocl_device_info(const rk_backend_t *backend, int device,
                                   rk_device_info_t *out) {
  *out = ((const ocl_backend_t *)backend)->devices[device].info;
  return RK_OK;
}

/* ---- Contexts ----------------------------------------------------------- */

static rk_status_t ocl_context_create(rk_backend_t *backend, int device,
                                      rk_context_t **out) {
  ocl_backend_t *be = (ocl_backend_t *)backend;
  const rk_cl_api_t *api = &be->api;
  const ocl_device_t *dev = &be->devices[device];
  ocl_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: context");
  ctx->api = api;
  ctx->dev = dev;
  cl_int err = RK_CL_SUCCESS;
  cl_context_properties props[] = {RK_CL_CONTEXT_PLATFORM,
                                   (cl_context_properties)dev->platform, 0};
  ctx->cl = api->clCreateContext(props, 1, &dev->id, NULL, NULL, &err);
  if (!ctx->cl) {
    free(ctx);
    return rk__cl_fail(err, "clCreateContext");
  }
  ctx->queue = api->clCreateCommandQueue(ctx->cl, dev->id, 0, &err);
  if (!ctx->queue) {
    api->clReleaseContext(ctx->cl);
    free(ctx);
    return rk__cl_fail(err, "clCreateCommandQueue");
  }
  pthread_rwlock_init(&ctx->mem_lock, NULL);
  pthread_mutex_init(&ctx->cache_lock, NULL);
  rk__pending_init(&ctx->pending);
  *out = &ctx->base;
  return RK_OK;
}

static rk_status_t ocl_synchronize(rk_context_t *context) {
  ocl_context_t *ctx = ocl_ctx(context);
  cl_int err = ctx->api->clFinish(ctx->queue);
  if (err != RK_CL_SUCCESS) {
    rk__pending_record_last(&ctx->pending,
                            rk__cl_fail(err, "clFinish (default stream)"));
  }
  return rk__pending_take(&ctx->pending);
}

static rk_status_t ocl_context_destroy(rk_context_t *context) {
  ocl_context_t *ctx = ocl_ctx(context);
  const rk_cl_api_t *api = ctx->api;
  rk_status_t s = ocl_synchronize(context);
  for (size_t i = 0; i < ctx->allocs.count; ++i)
    api->clReleaseMemObject(mem_of(&ctx->allocs.items[i]));
  rk__alloc_table_release(&ctx->allocs);
  rk__ocl_cache_release(ctx);
  api->clReleaseCommandQueue(ctx->queue);
  api->clReleaseContext(ctx->cl);
  pthread_rwlock_destroy(&ctx->mem_lock);
  pthread_mutex_destroy(&ctx->cache_lock);
  rk__pending_destroy(&ctx->pending);
  free(ctx);
  return s;
}

/* ---- Memory ------------------------------------------------------------- */

rk_status_t rk__ocl_resolve_locked(ocl_context_t *ctx, rk_devptr_t ptr,
                                   size_t n, cl_mem *out_mem,
                                   size_t *out_offset) {
  const rk__alloc_t *a = NULL;
  RK_RETURN_IF_ERROR(rk__alloc_table_find(&ctx->allocs, ptr, n, &a));
  if (out_mem) *out_mem = mem_of(a);
  if (out_offset) *out_offset = (size_t)(ptr - a->base);
  return RK_OK;
}

static rk_status_t ocl_allocate(rk_context_t *context, size_t bytes,
                                rk_devptr_t *out) {
  ocl_context_t *ctx = ocl_ctx(context);
  const ocl_device_t *dev = ctx->dev;
  uint64_t limit = dev->max_alloc ? dev->max_alloc : dev->info.memory_bytes;
  if (bytes > limit || bytes > SIZE_MAX - 2 * kAlign)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: %zu bytes is more than the %llu bytes one "
                    "allocation may have on %s",
                    bytes, (unsigned long long)limit, dev->info.name);
  cl_int err = RK_CL_SUCCESS;
  cl_mem mem = ctx->api->clCreateBuffer(ctx->cl, RK_CL_MEM_READ_WRITE, bytes,
                                        NULL, &err);
  if (!mem) {
    rk__cl_fail(err, "clCreateBuffer");
    return rk__fail_context(RK_ERR_OUT_OF_MEMORY, "allocate: %zu bytes", bytes);
  }
  /* Room for the allocation rounded up, plus a gap, so that one past the
   * end is never inside the next allocation. */
  uint64_t span = ((uint64_t)bytes + 2 * kAlign - 1) & ~(uint64_t)(kAlign - 1);
  uint64_t base = __atomic_fetch_add(&g_next_address, span, __ATOMIC_RELAXED);
  if (base < kAddressBase || base + span < base) {
    ctx->api->clReleaseMemObject(mem);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: the OpenCL backend's address space is used "
                    "up");
  }
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_insert(&ctx->allocs, base, bytes,
                                         (uint64_t)(uintptr_t)mem);
  if (s != RK_OK) {
    pthread_rwlock_unlock(&ctx->mem_lock);
    ctx->api->clReleaseMemObject(mem);
    return s;
  }
  pthread_rwlock_unlock(&ctx->mem_lock);
  *out = base;
  return RK_OK;
}

static rk_status_t ocl_free(rk_context_t *context, rk_devptr_t ptr) {
  ocl_context_t *ctx = ocl_ctx(context);
  rk__alloc_t a;
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_remove(&ctx->allocs, ptr, &a);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK) return s;
  /* Commands already enqueued keep their own reference: OpenCL deletes the
   * buffer once they have finished. */
  ctx->api->clReleaseMemObject(mem_of(&a));
  return RK_OK;
}

static rk_status_t ocl_check_range(rk_context_t *context, rk_devptr_t ptr,
                                   size_t n) {
  ocl_context_t *ctx = ocl_ctx(context);
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = rk__ocl_resolve_locked(ctx, ptr, n, NULL, NULL);
  pthread_rwlock_unlock(&ctx->mem_lock);
  return s;
}

/* ---- Copies ------------------------------------------------------------- */

static rk_status_t enqueue_copy_locked(ocl_context_t *ctx,
                                       cl_command_queue queue,
                                       const rk__copy_t *c, bool blocking,
                                       cl_event *out_event) {
  const rk_cl_api_t *api = ctx->api;
  cl_mem dst = NULL, src = NULL;
  size_t doff = 0, soff = 0;
  if (c->dir != RK__COPY_TO_HOST) {
    rk_status_t s = rk__ocl_resolve_locked(ctx, c->dst, c->n, &dst, &doff);
    if (s != RK_OK) return rk__fail_context(s, "destination");
  }
  if (c->dir != RK__COPY_TO_DEVICE) {
    rk_status_t s = rk__ocl_resolve_locked(ctx, c->src, c->n, &src, &soff);
    if (s != RK_OK) return rk__fail_context(s, "source");
  }
  cl_bool block = blocking ? RK_CL_TRUE : RK_CL_FALSE;
  cl_int err = RK_CL_SUCCESS;
  switch (c->dir) {
    case RK__COPY_TO_DEVICE:
      err = api->clEnqueueWriteBuffer(queue, dst, block, doff, c->n, c->host, 0,
                                      NULL, out_event);
      return err == RK_CL_SUCCESS ? RK_OK
                                  : rk__cl_fail(err, "clEnqueueWriteBuffer");
    case RK__COPY_TO_HOST:
      err = api->clEnqueueReadBuffer(queue, src, block, soff, c->n, c->host, 0,
                                     NULL, out_event);
      return err == RK_CL_SUCCESS ? RK_OK
                                  : rk__cl_fail(err, "clEnqueueReadBuffer");
    case RK__COPY_DEVICE_TO_DEVICE:
      break;
  }
  bool overlap = dst == src && doff < soff + c->n && soff < doff + c->n;
  if (!overlap) {
    err = api->clEnqueueCopyBuffer(queue, src, dst, soff, doff, c->n, 0, NULL,
                                   out_event);
  } else {
    /* OpenCL refuses overlapping copies within one buffer
     * (CL_MEM_COPY_OVERLAP): go through a temporary buffer, released at
     * once (OpenCL keeps it until both copies have run). */
    cl_mem tmp =
        api->clCreateBuffer(ctx->cl, RK_CL_MEM_READ_WRITE, c->n, NULL, &err);
    if (!tmp) return rk__cl_fail(err, "clCreateBuffer (overlapping copy)");
    err =
        api->clEnqueueCopyBuffer(queue, src, tmp, soff, 0, c->n, 0, NULL, NULL);
    if (err == RK_CL_SUCCESS)
      err = api->clEnqueueCopyBuffer(queue, tmp, dst, 0, doff, c->n, 0, NULL,
                                     out_event);
    api->clReleaseMemObject(tmp);
  }
  if (err != RK_CL_SUCCESS) return rk__cl_fail(err, "clEnqueueCopyBuffer");
  if (blocking) {
    err = api->clFinish(queue);
    if (err != RK_CL_SUCCESS) return rk__cl_fail(err, "clFinish");
  }
  return RK_OK;
}

rk_status_t rk__ocl_enqueue_copy(ocl_context_t *ctx, cl_command_queue queue,
                                 const rk__copy_t *copy, bool blocking,
                                 cl_event *out_event) {
  /* Held until the command is enqueued (or done), so a concurrent free
   * cannot release the buffer in between. */
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = enqueue_copy_locked(ctx, queue, copy, blocking, out_event);
  pthread_rwlock_unlock(&ctx->mem_lock);
  return s;
}

static rk_status_t ocl_copy(rk_context_t *context, rk_stream_t *stream,
                            const rk__copy_t *copy) {
  if (stream) return rk__ocl_stream_copy(stream, copy);
  ocl_context_t *ctx = ocl_ctx(context);
  return rk__ocl_enqueue_copy(ctx, ctx->queue, copy, true, NULL);
}

/* ---- Launches ----------------------------------------------------------- */

static rk_status_t ocl_launch(rk_function_t *function, rk_dim3_t grid,
                              rk_dim3_t block, size_t shared_mem,
                              rk_stream_t *stream, rk__args_t *args) {
  ocl_launch_t launch = {function, grid, block, shared_mem, args};
  if (stream) return rk__ocl_stream_launch(stream, &launch);
  ocl_context_t *ctx = ocl_ctx(function->module->context);
  rk_status_t s = rk__ocl_enqueue_launch(ctx, ctx->queue, &launch, NULL);
  rk__args_free(args);
  return s;
}

/* ---- LeakSanitizer ------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define RK_OCL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RK_OCL_ASAN 1
#endif
#endif
#ifdef RK_OCL_ASAN
/* PoCL's pthread device leaks LLVM pass objects each time it compiles a
 * work-group function, and the OpenCL stack keeps compiler state for the
 * life of the process. Those allocations are the driver's, not rk's: in
 * AddressSanitizer builds they are kept out of leak reports (LeakSanitizer's
 * documented hook; weak, so a program's own suppressions take precedence). */
__attribute__((weak, used)) const char *__lsan_default_suppressions(void);
__attribute__((weak, used)) const char *__lsan_default_suppressions(void) {
  return "leak:libpocl.so\n"
         "leak:libpocl-devices-\n"
         "leak:libLLVM\n"
         "leak:libclang-cpp.so\n";
}
#endif

const rk__backend_vtable_t rk__opencl_backend = {
    .destroy = ocl_destroy,
    .kind = RK_BACKEND_OPENCL,
    .name = "opencl",
    .open = ocl_open,
    .device_info = ocl_device_info,
    .context_create = ocl_context_create,
    .context_destroy = ocl_context_destroy,
    .allocate = ocl_allocate,
    .free = ocl_free,
    .check_range = ocl_check_range,
    .copy = ocl_copy,
    .synchronize = ocl_synchronize,
    .compile = rk__ocl_compile,
    .module_destroy = rk__ocl_module_destroy,
    .launch = ocl_launch,
    .stream_create = rk__ocl_stream_create,
    .stream_destroy = rk__ocl_stream_destroy,
    .stream_synchronize = rk__ocl_stream_synchronize,
    /* No resident kernels: the actor layer relaunches in batches. */
    .actor_start = NULL,
    .actor_release = NULL,
    .mapped_alloc = NULL,
    .mapped_free = NULL,
};
