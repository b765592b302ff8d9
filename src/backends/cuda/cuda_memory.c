/* CUDA memory: device allocations behind an allocation table, copies, and
 * pinned host memory mapped into the device (see cuda.h).
 *
 * With the stream-ordered allocator, an allocation is made on the
 * context's memory stream and waited for there (only the allocation, not
 * queued kernels), so it is ready for every stream; a free first waits for
 * the work already queued on the context's streams (which may still use
 * the memory), then hands the memory back on the memory stream without
 * synchronizing the device: a resident actor kernel never blocks either.
 * Stream copies to and from ordinary host memory go through pinned
 * staging blocks, so that they are asynchronous (see "Staged stream
 * copies"). */
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

/* ---- Staged stream copies -------------------------------------------------
 *
 * CUDA copies between device memory and ordinary (pageable) host memory
 * are not asynchronous: a copy to pageable memory returns only once it is
 * done, so it waits for everything queued before it on its stream (a
 * kernel waiting for the host would never end), and a copy from pageable
 * memory may wait too. rk's stream copies are asynchronous: one of up to
 * kStageMax bytes goes through a pinned block of the context. To the
 * device, the caller's bytes are copied into the block when the copy is
 * queued; to the host, the device copies into the block, and the
 * synchronization that finds the stream done (rk_stream_synchronize,
 * rk_stream_destroy, rk_context_synchronize) copies on to the caller's
 * memory -- the only way a caller learns that a stream copy finished.
 * Then the blocks are reused; they are kept until the context goes. A
 * stream with kStageDepth staged copies outstanding is synchronized
 * before it takes another. Larger copies go to the driver as they are
 * (they may return only once done). */

enum { kStageMin = 64 << 10, kStageDepth = 64 };
static const size_t kStageMax = (size_t)64 << 20;

typedef struct cu_stage {
  struct cu_stage *next;     /* in the free list or a stream's list */
  struct cu_stage *next_all; /* every block of the context */
  void *host;                /* pinned */
  size_t bytes;              /* its size: a power of two, >= kStageMin */
  void *dst;                 /* a copy to the host: the caller's memory */
  size_t n;                  /* and its size */
} cu_stage_t;

/* An idle block of at least `n` bytes, pinned now when there is none. */
static rk_status_t stage_take(cu_context_t *ctx, size_t n, cu_stage_t **out) {
  size_t bytes = kStageMin;
  while (bytes < n) bytes <<= 1;
  cu_stage_t *st = NULL;
  pthread_mutex_lock(&ctx->stage_lock);
  for (cu_stage_t **p = &ctx->stage_free; *p; p = &(*p)->next) {
    if ((*p)->bytes == bytes) {
      st = *p;
      *p = st->next;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->stage_lock);
  if (st) {
    *out = st;
    return RK_OK;
  }
  st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: staging block");
  /* Pinning host memory may wait for the device to be idle. */
  rk_status_t s = rk__cu_pause_actors(ctx, "pinning a staging block");
  if (s == RK_OK) {
    CUresult err =
        ctx->api->cuMemHostAlloc(&st->host, bytes, RK_CU_MEMHOSTALLOC_PORTABLE);
    rk__cu_resume_actors(ctx);
    if (err != RK_CUDA_SUCCESS) {
      s = rk__cu_check(ctx, err, "cuMemHostAlloc");
      s = rk__fail_context(
          s, "cuda: a %zu-byte staging block for a stream copy", bytes);
    }
  }
  if (s != RK_OK) {
    free(st);
    return s;
  }
  st->bytes = bytes;
  pthread_mutex_lock(&ctx->stage_lock);
  st->next_all = ctx->stage_all;
  ctx->stage_all = st;
  pthread_mutex_unlock(&ctx->stage_lock);
  *out = st;
  return RK_OK;
}

/* Puts the blocks of `list` (linked by next) back in the free list. */
static void stage_give(cu_context_t *ctx, cu_stage_t *list) {
  if (!list) return;
  cu_stage_t *last = list;
  while (last->next) last = last->next;
  pthread_mutex_lock(&ctx->stage_lock);
  last->next = ctx->stage_free;
  ctx->stage_free = list;
  pthread_mutex_unlock(&ctx->stage_lock);
}

rk_status_t rk__cu_stream_sync(cu_context_t *ctx, cu_stream_t *st,
                               const char *what) {
  pthread_mutex_lock(&st->sync_lock);
  pthread_mutex_lock(&ctx->stage_lock);
  cu_stage_t *list = st->staged;
  st->staged = NULL;
  st->nstaged = 0;
  pthread_mutex_unlock(&ctx->stage_lock);
  CUresult err = ctx->api->cuStreamSynchronize(st->stream);
  if (err == RK_CUDA_SUCCESS) {
    /* Oldest first, so that the last of two copies to the same memory
     * wins, as it would on the stream. */
    cu_stage_t *fifo = NULL;
    while (list) {
      cu_stage_t *b = list;
      list = b->next;
      b->next = fifo;
      fifo = b;
    }
    for (cu_stage_t *b = fifo; b; b = b->next)
      if (b->dst) memcpy(b->dst, b->host, b->n);
    stage_give(ctx, fifo);
  }
  /* After a failure the blocks stay out of use until the context goes:
   * queued copies may still write them. */
  pthread_mutex_unlock(&st->sync_lock);
  return rk__cu_check(ctx, err, what);
}

/* Queues `copy` (to or from host memory) on `st` through a staging block. */
static rk_status_t staged_copy(cu_context_t *ctx, cu_stream_t *st,
                               const rk__copy_t *copy) {
  pthread_mutex_lock(&ctx->stage_lock);
  const bool full = st->nstaged >= kStageDepth;
  pthread_mutex_unlock(&ctx->stage_lock);
  if (full)
    RK_RETURN_IF_ERROR(
        rk__cu_stream_sync(ctx, st, "cuStreamSynchronize (staged copies)"));
  cu_stage_t *b = NULL;
  RK_RETURN_IF_ERROR(stage_take(ctx, copy->n, &b));
  rk__copy_t via = *copy;
  via.host = b->host;
  const bool to_host = copy->dir == RK__COPY_TO_HOST;
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = RK_OK;
  if (!to_host) {
    /* The bounds first: nothing is copied for a copy that is refused. */
    s = rk__alloc_table_find(&ctx->allocs, copy->dst, copy->n, NULL);
    if (s == RK_OK) memcpy(b->host, copy->host, copy->n);
  }
  if (s == RK_OK) s = enqueue_copy_locked(ctx, st->stream, &via);
  pthread_rwlock_unlock(&ctx->mem_lock);
  b->dst = to_host && s == RK_OK ? copy->host : NULL;
  b->n = copy->n;
  b->next = NULL;
  if (s != RK_OK) {
    stage_give(ctx, b);
    return s;
  }
  pthread_mutex_lock(&ctx->stage_lock);
  b->next = st->staged;
  st->staged = b;
  st->nstaged++;
  pthread_mutex_unlock(&ctx->stage_lock);
  return RK_OK;
}

void rk__cu_stage_release(cu_context_t *ctx, bool abandon) {
  pthread_mutex_lock(&ctx->stage_lock);
  cu_stage_t *list = ctx->stage_all;
  ctx->stage_all = NULL;
  ctx->stage_free = NULL;
  pthread_mutex_unlock(&ctx->stage_lock);
  bool current =
      !abandon && ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS;
  while (list) {
    cu_stage_t *b = list;
    list = b->next_all;
    if (current) ctx->api->cuMemFreeHost(b->host);
    free(b);
  }
}

rk_status_t rk__cu_copy(rk_context_t *context, rk_stream_t *stream,
                        const rk__copy_t *copy) {
  cu_context_t *ctx = cu_ctx(context);
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  CUstream s_cu = stream ? ((cu_stream_t *)stream)->stream : ctx->stream;
  if (stream && copy->dir != RK__COPY_DEVICE_TO_DEVICE && copy->n <= kStageMax)
    return staged_copy(ctx, (cu_stream_t *)stream, copy);
  pthread_rwlock_rdlock(&ctx->mem_lock);
  rk_status_t s = enqueue_copy_locked(ctx, s_cu, copy);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK || stream) return s;
  /* A synchronous copy: done (with everything queued before it on the
   * default stream) before returning. */
  CUresult err = ctx->api->cuStreamSynchronize(ctx->stream);
  return rk__cu_check(ctx, err, "cuStreamSynchronize (copy)");
}

/* ---- Deferred frees and unloads ------------------------------------------ */

typedef struct cu_deferred {
  struct cu_deferred *next;
  void *host;      /* a pinned mapped block, or NULL */
  size_t bytes;    /* its size */
  CUmodule module; /* a module to unload, or NULL */
} cu_deferred_t;

static void do_deferred(cu_context_t *ctx, cu_deferred_t *list) {
  bool current = ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS;
  while (list) {
    cu_deferred_t *d = list;
    list = d->next;
    if (current && d->host) ctx->api->cuMemFreeHost(d->host);
    if (current && d->module) ctx->api->cuModuleUnload(d->module);
    free(d);
  }
}

void rk__cu_resident_begin(cu_context_t *ctx) {
  pthread_mutex_lock(&ctx->defer_lock);
  ctx->resident++;
  pthread_mutex_unlock(&ctx->defer_lock);
}

void rk__cu_resident_end(cu_context_t *ctx) {
  cu_deferred_t *list = NULL;
  pthread_mutex_lock(&ctx->defer_lock);
  if (--ctx->resident == 0) {
    list = ctx->deferred;
    ctx->deferred = NULL;
  }
  pthread_mutex_unlock(&ctx->defer_lock);
  do_deferred(ctx, list);
}

void rk__cu_deferred_flush(cu_context_t *ctx) {
  pthread_mutex_lock(&ctx->defer_lock);
  cu_deferred_t *list = ctx->deferred;
  ctx->deferred = NULL;
  pthread_mutex_unlock(&ctx->defer_lock);
  do_deferred(ctx, list);
}

/* Queues `d` when an actor kernel is resident; false (caller acts now)
 * otherwise. */
static bool defer(cu_context_t *ctx, void *host, size_t bytes,
                  CUmodule module) {
  pthread_mutex_lock(&ctx->defer_lock);
  bool later = ctx->resident > 0;
  if (later) {
    cu_deferred_t *d = malloc(sizeof *d);
    if (d) {
      *d = (cu_deferred_t){ctx->deferred, host, bytes, module};
      ctx->deferred = d;
    } else {
      later = false; /* no memory to remember it: do it now */
    }
  }
  pthread_mutex_unlock(&ctx->defer_lock);
  return later;
}

/* A deferred pinned block of exactly `bytes`, taken off the list. */
static void *reuse_pinned(cu_context_t *ctx, size_t bytes) {
  void *host = NULL;
  pthread_mutex_lock(&ctx->defer_lock);
  for (cu_deferred_t **pd = &ctx->deferred; *pd; pd = &(*pd)->next) {
    if ((*pd)->host && (*pd)->bytes == bytes) {
      cu_deferred_t *d = *pd;
      *pd = d->next;
      host = d->host;
      free(d);
      break;
    }
  }
  pthread_mutex_unlock(&ctx->defer_lock);
  return host;
}

void rk__cu_unload_module(cu_context_t *ctx, CUmodule module) {
  if (!module || defer(ctx, NULL, 0, module)) return;
  if (ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS)
    ctx->api->cuModuleUnload(module);
}

/* ---- Pinned mapped memory --------------------------------------------------
 */

/* Live pinned blocks and their sizes, so a free can be deferred and the
 * block reused by size. */
typedef struct cu_pinned {
  struct cu_pinned *next;
  void *host;
  size_t bytes;
} cu_pinned_t;

static rk_status_t pinned_track(cu_context_t *ctx, void *host, size_t bytes) {
  cu_pinned_t *p = malloc(sizeof *p);
  if (!p) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: pinned block list");
  pthread_mutex_lock(&ctx->defer_lock);
  *p = (cu_pinned_t){ctx->pinned, host, bytes};
  ctx->pinned = p;
  pthread_mutex_unlock(&ctx->defer_lock);
  return RK_OK;
}

/* Forgets `host`; its size, or 0 when it is not a live block. */
static size_t pinned_untrack(cu_context_t *ctx, void *host) {
  size_t bytes = 0;
  pthread_mutex_lock(&ctx->defer_lock);
  for (cu_pinned_t **pp = &ctx->pinned; *pp; pp = &(*pp)->next) {
    if ((*pp)->host == host) {
      cu_pinned_t *p = *pp;
      *pp = p->next;
      bytes = p->bytes;
      free(p);
      break;
    }
  }
  pthread_mutex_unlock(&ctx->defer_lock);
  return bytes;
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
  void *p = reuse_pinned(ctx, bytes);
  if (!p) {
    /* Mapping memory into every device may wait for them to be idle. */
    RK_RETURN_IF_ERROR(rk__cu_pause_actors(ctx, "pinning host memory"));
    CUresult err = ctx->api->cuMemHostAlloc(
        &p, bytes, RK_CU_MEMHOSTALLOC_PORTABLE | RK_CU_MEMHOSTALLOC_DEVICEMAP);
    rk__cu_resume_actors(ctx);
    if (err != RK_CUDA_SUCCESS) {
      rk_status_t s = rk__cu_check(ctx, err, "cuMemHostAlloc");
      return rk__fail_context(s, "cuda: %zu bytes of pinned mapped memory",
                              bytes);
    }
  }
  rk_status_t s = pinned_track(ctx, p, bytes);
  if (s != RK_OK) {
    ctx->api->cuMemFreeHost(p);
    return s;
  }
  *out_host = p;
  return RK_OK;
}

void rk__cu_mapped_free(rk_context_t *context, void *host) {
  cu_context_t *ctx = cu_ctx(context);
  size_t bytes = pinned_untrack(ctx, host);
  if (defer(ctx, host, bytes, NULL)) return;
  if (ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS)
    ctx->api->cuMemFreeHost(host);
}

void rk__cu_pinned_release(cu_context_t *ctx) {
  rk__cu_deferred_flush(ctx);
  pthread_mutex_lock(&ctx->defer_lock);
  cu_pinned_t *list = ctx->pinned;
  ctx->pinned = NULL;
  pthread_mutex_unlock(&ctx->defer_lock);
  bool current = ctx->api->cuCtxSetCurrent(ctx->cu) == RK_CUDA_SUCCESS;
  while (list) {
    cu_pinned_t *p = list;
    list = p->next;
    if (current) ctx->api->cuMemFreeHost(p->host);
    free(p);
  }
}

void rk__cu_pinned_abandon(cu_context_t *ctx) {
  pthread_mutex_lock(&ctx->defer_lock);
  cu_deferred_t *d = ctx->deferred;
  cu_pinned_t *p = ctx->pinned;
  ctx->deferred = NULL;
  ctx->pinned = NULL;
  pthread_mutex_unlock(&ctx->defer_lock);
  while (d) {
    cu_deferred_t *next = d->next;
    free(d);
    d = next;
  }
  while (p) {
    cu_pinned_t *next = p->next;
    free(p);
    p = next;
  }
}
