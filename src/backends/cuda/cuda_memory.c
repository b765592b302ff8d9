/* CUDA memory: device allocations behind an allocation table, copies, and
 * pinned host memory mapped into the device (see cuda.h).
 *
 * With the stream-ordered allocator, an allocation is made on the
 * context's memory stream and waited for there (only the allocation, not
 * queued kernels), so it is ready for every stream; a free first waits for
 * the work already queued on the context's streams (which may still use
 * the memory), then hands the memory back on the memory stream without
 * synchronizing the device: a resident actor kernel never blocks either. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "base/error.h"

rk_status_t rk__cu_allocate(rk_context_t *context, size_t bytes,
                            rk_devptr_t *out) {
  cu_context_t *ctx = cu_ctx(context);
  const rk_cu_api_t *api = ctx->api;
  if (bytes > ctx->dev->info.memory_bytes)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: %zu bytes is more than the %llu bytes of %s",
                    bytes, (unsigned long long)ctx->dev->info.memory_bytes,
                    ctx->dev->info.name);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  CUdeviceptr p = 0;
  CUresult err;
  if (ctx->dev->memory_pools) {
    err = api->cuMemAllocAsync(&p, bytes, ctx->mem_stream);
    if (err == RK_CUDA_SUCCESS) err = api->cuStreamSynchronize(ctx->mem_stream);
  } else {
    err = api->cuMemAlloc(&p, bytes);
  }
  if (err != RK_CUDA_SUCCESS) {
    rk_status_t s = rk__cu_check(ctx, err, "cuMemAlloc");
    return rk__fail_context(s, "allocate: %zu bytes", bytes);
  }
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_insert(&ctx->allocs, p, bytes, 0);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK) {
    if (ctx->dev->memory_pools)
      api->cuMemFreeAsync(p, ctx->mem_stream);
    else
      api->cuMemFree(p);
    return s;
  }
  *out = p;
  return RK_OK;
}

static void release_one(cu_context_t *ctx, CUdeviceptr p) {
  if (ctx->dev->memory_pools)
    ctx->api->cuMemFreeAsync(p, ctx->mem_stream);
  else
    ctx->api->cuMemFree(p);
}

rk_status_t rk__cu_free(rk_context_t *context, rk_devptr_t ptr) {
  cu_context_t *ctx = cu_ctx(context);
  rk__alloc_t a;
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_remove(&ctx->allocs, ptr, &a);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK) return s;
  if (rk__cu_enter(ctx) != RK_OK) return RK_OK; /* lost: nothing to free */
  /* Queued work may still use the memory; its failure is reported by the
   * next synchronization, not by this free. */
  s = rk__cu_sync_streams(ctx);
  if (s != RK_OK) rk__pending_record_last(&ctx->pending, s);
  release_one(ctx, a.base);
  return RK_OK;
}

void rk__cu_memory_release(cu_context_t *ctx) {
  bool current = ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS;
  for (size_t i = 0; current && i < ctx->allocs.count; ++i)
    release_one(ctx, ctx->allocs.items[i].base);
  if (current && ctx->dev->memory_pools)
    ctx->api->cuStreamSynchronize(ctx->mem_stream);
  rk__alloc_table_release(&ctx->allocs);
}

rk_status_t rk__cu_check_range(rk_context_t *context, rk_devptr_t ptr,
                               size_t n) {
  cu_context_t *ctx = cu_ctx(context);
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_find(&ctx->allocs, ptr, n, NULL);
  pthread_rwlock_unlock(&ctx->mem_lock);
  return s;
}

/* Checks both sides and enqueues the copy on `stream`; the caller holds
 * mem_lock (read), so a concurrent free waits until it is queued. */
static rk_status_t enqueue_copy_locked(cu_context_t *ctx, CUstream stream,
                                       const rk__copy_t *c) {
  const rk_cu_api_t *api = ctx->api;
  if (c->dir != RK__COPY_TO_HOST)
    RK_RETURN_IF_ERROR(rk__alloc_table_find(&ctx->allocs, c->dst, c->n, NULL));
  if (c->dir != RK__COPY_TO_DEVICE)
    RK_RETURN_IF_ERROR(rk__alloc_table_find(&ctx->allocs, c->src, c->n, NULL));
  CUresult err = RK_CUDA_SUCCESS;
  const char *what = "";
  switch (c->dir) {
    case RK__COPY_TO_DEVICE:
      err = api->cuMemcpyHtoDAsync(c->dst, c->host, c->n, stream);
      what = "cuMemcpyHtoDAsync";
      break;
    case RK__COPY_TO_HOST:
      err = api->cuMemcpyDtoHAsync(c->host, c->src, c->n, stream);
      what = "cuMemcpyDtoHAsync";
      break;
    case RK__COPY_DEVICE_TO_DEVICE:
      err = api->cuMemcpyDtoDAsync(c->dst, c->src, c->n, stream);
      what = "cuMemcpyDtoDAsync";
      break;
  }
  return rk__cu_check(ctx, err, what);
}

rk_status_t rk__cu_copy(rk_context_t *context, rk_stream_t *stream,
                        const rk__copy_t *copy) {
  cu_context_t *ctx = cu_ctx(context);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  CUstream s_cu = stream ? ((cu_stream_t *)stream)->stream : ctx->stream;
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = enqueue_copy_locked(ctx, s_cu, copy);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK || stream) return s;
  /* A synchronous copy: done (with everything queued before it on the
   * default stream) before returning. */
  CUresult err = ctx->api->cuStreamSynchronize(ctx->stream);
  return rk__cu_check(ctx, err, "cuStreamSynchronize (copy)");
}

rk_status_t rk__cu_mapped_alloc(rk_context_t *context, size_t bytes,
                                void **out_host) {
  cu_context_t *ctx = cu_ctx(context);
  if (!(ctx->dev->info.caps & RK_CAP_MAPPED_HOST_MEMORY))
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "cuda: %s cannot map host memory (needed for actor "
                    "rings)",
                    ctx->dev->info.name);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  void *p = NULL;
  CUresult err = ctx->api->cuMemHostAlloc(
      &p, bytes, RK_CU_MEMHOSTALLOC_PORTABLE | RK_CU_MEMHOSTALLOC_DEVICEMAP);
  if (err != RK_CUDA_SUCCESS) {
    rk_status_t s = rk__cu_check(ctx, err, "cuMemHostAlloc");
    return rk__fail_context(s, "cuda: %zu bytes of pinned mapped memory",
                            bytes);
  }
  *out_host = p;
  return RK_OK;
}

void rk__cu_mapped_free(rk_context_t *context, void *host) {
  cu_context_t *ctx = cu_ctx(context);
  if (ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS)
    ctx->api->cuMemFreeHost(host);
}
