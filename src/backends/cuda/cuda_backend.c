/* The CUDA backend: devices, contexts, synchronization and the vtable (see
 * cuda.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "base/error.h"

/* ---- Errors ------------------------------------------------------------- */

/* Errors after which the context refuses every further call. */
static bool sticky(CUresult err) {
  switch (err) {
    case RK_CUDA_ERROR_ILLEGAL_ADDRESS:
    case RK_CUDA_ERROR_LAUNCH_TIMEOUT:
    case RK_CUDA_ERROR_ASSERT:
    case RK_CUDA_ERROR_HARDWARE_STACK_ERROR:
    case RK_CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case RK_CUDA_ERROR_MISALIGNED_ADDRESS:
    case RK_CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case RK_CUDA_ERROR_INVALID_PC:
    case RK_CUDA_ERROR_LAUNCH_FAILED:
    case RK_CUDA_ERROR_ECC_UNCORRECTABLE:
    case RK_CUDA_ERROR_NVLINK_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

rk_status_t rk__cu_check(cu_context_t *ctx, CUresult err, const char *what) {
  if (err == RK_CUDA_SUCCESS) return RK_OK;
  rk_status_t s = rk__cu_fail(ctx->api, err, what);
  if (sticky(err)) {
    __atomic_store_n(&ctx->lost, 1u, __ATOMIC_RELEASE);
    rk__fail_context(s,
                     "the CUDA context of %s is lost (a kernel faulted); "
                     "destroy it and create a new one",
                     ctx->dev->info.name);
  }
  return s;
}

rk_status_t rk__cu_enter(cu_context_t *ctx) {
  if (__atomic_load_n(&ctx->lost, __ATOMIC_ACQUIRE))
    return rk__fail(RK_ERR_DEVICE_LOST,
                    "cuda: the context of %s is lost after a kernel fault; "
                    "destroy it and create a new one",
                    ctx->dev->info.name);
  CUresult err = ctx->api->cuCtxSetCurrent(ctx->cu);
  return err == RK_CUDA_SUCCESS ? RK_OK
                                : rk__cu_check(ctx, err, "cuCtxSetCurrent");
}

/* ---- Devices ------------------------------------------------------------ */

static int attr(const rk_cu_api_t *api, CUdevice dev, int which) {
  int v = 0;
  if (api->cuDeviceGetAttribute(&v, which, dev) != RK_CUDA_SUCCESS) v = 0;
  return v;
}

static rk_status_t describe(const rk_cu_api_t *api, int ordinal,
                            cu_device_t *d) {
  CUresult err = api->cuDeviceGet(&d->dev, ordinal);
  if (err != RK_CUDA_SUCCESS) return rk__cu_fail(api, err, "cuDeviceGet");
  rk_device_info_t *info = &d->info;
  memset(info, 0, sizeof *info);
  if (api->cuDeviceGetName(info->name, (int)sizeof info->name, d->dev) !=
      RK_CUDA_SUCCESS)
    snprintf(info->name, sizeof info->name, "CUDA device %d", ordinal);
  info->name[sizeof info->name - 1] = '\0';
  snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
  info->backend = RK_BACKEND_CUDA;
  size_t total = 0;
  if (api->cuDeviceTotalMem(&total, d->dev) == RK_CUDA_SUCCESS)
    info->memory_bytes = total;
  const CUdevice dev = d->dev;
  d->cc_major = attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d->cc_minor = attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d->sms = attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d->max_threads_per_sm =
      attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  for (int i = 0; i < 3; ++i) {
    d->max_block[i] =
        (uint32_t)attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
    d->max_grid[i] =
        (uint32_t)attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
  }
  d->memory_pools =
      api->cuMemAllocAsync && api->cuMemFreeAsync &&
      attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  info->compute_units = (uint32_t)d->sms;
  info->max_threads_per_block =
      (uint32_t)attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info->shared_mem_per_block = (uint64_t)attr(
      api, dev, RK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  /* Every device rk can build for (compute capability 7.0 and up, for
   * __nanosleep and the .sys-scoped loads and stores) has 64-bit integers,
   * 64-bit atomics and doubles. */
  info->caps = RK_CAP_ATOMIC64 | RK_CAP_F64 | RK_CAP_INT64;
  bool mapped =
      attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 0 &&
      attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) != 0;
  if (mapped) info->caps |= RK_CAP_MAPPED_HOST_MEMORY;
  if (mapped && d->cc_major >= 7) info->caps |= RK_CAP_PERSISTENT_KERNELS;
  if (attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
    info->caps |= RK_CAP_MANAGED_CONCURRENT;
  snprintf(info->arch, sizeof info->arch, "sm_%d%d", d->cc_major % 100,
           d->cc_minor % 10);
  if (attr(api, dev, RK_CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) &&
      api->cuLaunchCooperativeKernel)
    info->caps |= RK_CAP_COOPERATIVE_LAUNCH;
  return RK_OK;
}

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

/* Once per process, before the first cuInit (which reads it). */
static void set_module_loading(void) {
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

static void cu_destroy(rk_backend_t *backend) {
  cu_backend_t *be = (cu_backend_t *)backend;
  free(be->devices);
  rk__cu_api_unload(&be->api);
  free(be);
}

static rk_status_t cu_open(rk_backend_t **out) {
  /* Module loading must not wait for a resident actor kernel: with lazy
   * loading (the default since CUDA 12.2) the first launch of a kernel may
   * synchronize the context, which never happens while a persistent kernel
   * runs. The user's own setting wins. */
  pthread_once(&g_env_once, set_module_loading);
  cu_backend_t *be = calloc(1, sizeof *be);
  if (!be) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: backend");
  rk_status_t s = rk__cu_api_load(&be->api);
  if (s != RK_OK) {
    free(be);
    return s;
  }
  int count = 0;
  CUresult err = be->api.cuDeviceGetCount(&count);
  /* After cuInit found no device, drivers answer NO_DEVICE or
   * NOT_INITIALIZED here: both mean 0 devices. */
  if (err != RK_CUDA_SUCCESS && err != RK_CUDA_ERROR_NO_DEVICE &&
      err != RK_CUDA_ERROR_NOT_INITIALIZED) {
    s = rk__cu_fail(&be->api, err, "cuDeviceGetCount");
    cu_destroy(&be->base);
    return s;
  }
  if (err != RK_CUDA_SUCCESS || count < 0) count = 0;
  if (count > 0) {
    be->devices = calloc((size_t)count, sizeof *be->devices);
    if (!be->devices) {
      cu_destroy(&be->base);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: devices");
    }
  }
  for (int i = 0; i < count; ++i) {
    s = describe(&be->api, i, &be->devices[i]);
    if (s != RK_OK) {
      cu_destroy(&be->base);
      return s;
    }
  }
  be->base.device_count = count;
  snprintf(be->base.library, sizeof be->base.library,
           "%.400s: CUDA driver %d.%d", be->api.path,
           be->api.driver_version / 1000, be->api.driver_version % 1000 / 10);
  *out = &be->base;
  return RK_OK;
}

static rk_status_t cu_device_info(const rk_backend_t *backend, int device,
                                  rk_device_info_t *out) {
  const cu_backend_t *be = (const cu_backend_t *)backend;
  *out = be->devices[device].info;
  return RK_OK;
}

/* ---- Contexts ----------------------------------------------------------- */

static rk_status_t cu_context_create(rk_backend_t *backend, int device,
                                     rk_context_t **out) {
  cu_backend_t *be = (cu_backend_t *)backend;
  const rk_cu_api_t *api = &be->api;
  cu_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: context");
  ctx->api = api;
  ctx->dev = &be->devices[device];
  CUresult err = api->cuDevicePrimaryCtxRetain(&ctx->cu, ctx->dev->dev);
  if (err != RK_CUDA_SUCCESS) {
    rk_status_t s = rk__cu_fail(api, err, "cuDevicePrimaryCtxRetain");
    free(ctx);
    return s;
  }
  err = api->cuCtxSetCurrent(ctx->cu);
  if (err == RK_CUDA_SUCCESS)
    err = api->cuStreamCreate(&ctx->stream, RK_CU_STREAM_NON_BLOCKING);
  if (err == RK_CUDA_SUCCESS) {
    err = api->cuStreamCreate(&ctx->mem_stream, RK_CU_STREAM_NON_BLOCKING);
    if (err != RK_CUDA_SUCCESS) api->cuStreamDestroy(ctx->stream);
  }
  if (err != RK_CUDA_SUCCESS) {
    rk_status_t s = rk__cu_fail(api, err, "cuStreamCreate (context streams)");
    api->cuDevicePrimaryCtxRelease(ctx->dev->dev);
    free(ctx);
    return s;
  }
  pthread_rwlock_init(&ctx->mem_lock, NULL);
  pthread_mutex_init(&ctx->defer_lock, NULL);
  pthread_mutex_init(&ctx->stage_lock, NULL);
  pthread_mutex_init(&ctx->blas_lock, NULL);
  rk__pending_init(&ctx->pending);
  *out = &ctx->base;
  return RK_OK;
}

static rk_status_t cu_context_destroy(rk_context_t *context) {
  cu_context_t *ctx = cu_ctx(context);
  const rk_cu_api_t *api = ctx->api;
  rk_status_t s = rk__pending_take(&ctx->pending);
  bool lost = __atomic_load_n(&ctx->lost, __ATOMIC_ACQUIRE);
  if (api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS && !lost) {
    CUresult err = api->cuStreamSynchronize(ctx->stream);
    if (err != RK_CUDA_SUCCESS && s == RK_OK)
      s = rk__cu_check(ctx, err, "cuStreamSynchronize (context destroy)");
  }
  rk__cu_blas_release(ctx);
  rk__cu_memory_release(ctx);
  api->cuStreamDestroy(ctx->stream);
  api->cuStreamDestroy(ctx->mem_stream);
  uint32_t stuck = __atomic_load_n(&ctx->stuck_actors, __ATOMIC_ACQUIRE);
  rk__cu_stage_release(ctx, stuck != 0);
  if (stuck) {
    rk__cu_pinned_abandon(ctx);
    /* A resident kernel that never acknowledged termination still uses the
     * context: releasing the primary context would reset it under the
     * kernel. It stays retained (the device stays busy until the process
     * exits), and the caller hears about it. */
    if (s == RK_OK)
      s = rk__fail(RK_ERR_INVALID_STATE,
                   "cuda: %u actor kernel(s) on %s never stopped; the "
                   "device stays busy until the process exits",
                   stuck, ctx->dev->info.name);
  } else {
    rk__cu_pinned_release(ctx);
    api->cuDevicePrimaryCtxRelease(ctx->dev->dev);
  }
  pthread_rwlock_destroy(&ctx->mem_lock);
  pthread_mutex_destroy(&ctx->defer_lock);
  pthread_mutex_destroy(&ctx->stage_lock);
  pthread_mutex_destroy(&ctx->blas_lock);
  rk__pending_destroy(&ctx->pending);
  free(ctx);
  return s;
}

rk_status_t rk__cu_sync_streams(cu_context_t *ctx) {
  CUresult err = ctx->api->cuStreamSynchronize(ctx->stream);
  if (err != RK_CUDA_SUCCESS)
    return rk__cu_check(ctx, err, "cuStreamSynchronize");
  pthread_mutex_lock(&ctx->base.lock);
  rk_status_t s = RK_OK;
  for (rk_stream_t *st = ctx->base.streams; st && s == RK_OK; st = st->next) {
    err = ctx->api->cuStreamSynchronize(((cu_stream_t *)st)->stream);
    if (err != RK_CUDA_SUCCESS)
      s = rk__cu_check(ctx, err, "cuStreamSynchronize");
  }
  pthread_mutex_unlock(&ctx->base.lock);
  return s;
}

static rk_status_t cu_synchronize(rk_context_t *context) {
  cu_context_t *ctx = cu_ctx(context);
  /* rk_context_synchronize waits for the rk streams first: on a lost
   * context each of them has just said so. */
  if (__atomic_load_n(&ctx->lost, __ATOMIC_ACQUIRE) &&
      __atomic_load_n(&context->streams, __ATOMIC_ACQUIRE))
    return rk__pending_take(&ctx->pending);
  rk_status_t s = rk__cu_enter(ctx);
  if (s == RK_OK) {
    CUresult err = ctx->api->cuStreamSynchronize(ctx->stream);
    if (err != RK_CUDA_SUCCESS) s = rk__cu_check(ctx, err, "synchronize");
  }
  rk_status_t pending = rk__pending_take(&ctx->pending);
  return pending != RK_OK ? pending : s;
}

const rk__backend_vtable_t rk__cuda_backend = {
    .destroy = cu_destroy,
    .kind = RK_BACKEND_CUDA,
    .name = "cuda",
    .open = cu_open,
    .device_info = cu_device_info,
    .context_create = cu_context_create,
    .context_destroy = cu_context_destroy,
    .allocate = rk__cu_allocate,
    .free = rk__cu_free,
    .blas_sgemm = rk__cu_blas_sgemm,
    .check_range = rk__cu_check_range,
    .copy = rk__cu_copy,
    .synchronize = cu_synchronize,
    .compile = rk__cu_compile,
    .module_destroy = rk__cu_module_destroy,
    .launch = rk__cu_launch,
    .stream_create = rk__cu_stream_create,
    .stream_destroy = rk__cu_stream_destroy,
    .stream_synchronize = rk__cu_stream_synchronize,
    .actor_start = rk__cu_actor_start,
    .actor_release = rk__cu_actor_release,
    .actor_polled = true,
    .mapped_alloc = rk__cu_mapped_alloc,
    .mapped_free = rk__cu_mapped_free,
};
