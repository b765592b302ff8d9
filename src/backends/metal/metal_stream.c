/* Metal streams: an MTLCommandQueue and a host list of held operations.
 *
 * On an idle stream (nothing held, nothing running) a launch is encoded and
 * committed at once on the caller's thread; its completion handler counts
 * it done (`inflight`). A copy with nothing before it (not even a command
 * buffer in flight) runs at once too. Anything else is held and run in
 * order, one step at a time, by the stream's thread or by a thread
 * synchronizing the stream (which saves a hand-over): a run of held
 * launches goes into one command buffer, committed and waited for; a held
 * copy runs once every command buffer before it has finished, and checks
 * its memory then (it may have been freed since it was queued). Errors of
 * queued work (a command buffer that failed, a copy of freed memory) are
 * kept and returned by the next synchronization; later operations still
 * run. tests/model/metal_stream.pml model-checks this protocol.
 *
 * The completion handler is a block literal laid out by hand after the
 * Apple block ABI (metal.h): isa _NSConcreteStackBlock, a descriptor with
 * its size and type signature, and two captured plain values. Metal copies
 * it (Block_copy) when it is added and calls it on its own thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal.h"
#include "base/error.h"

enum { kMaxLaunchesPerCommandBuffer = 64 };

typedef enum { kOpCopy, kOpLaunch } op_kind_t;

typedef struct mtl_op {
  op_kind_t kind;
  rk__copy_t copy;
  mtl_launch_t launch;
  struct mtl_op *next;
} mtl_op_t;

/* One command buffer waited for by one thread. */
typedef struct mtl_wait {
  bool done;
  bool record; /* the handler records a failure in the stream's pending */
} mtl_wait_t;

struct mtl_stream {
  rk_stream_t base; /* first: public streams are rk_stream_t */
  mtl_context_t *ctx;
  mtl_id queue; /* id<MTLCommandQueue> */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* ops queued, a step finished, a handler ran, stop */
  mtl_op_t *head, *tail;
  bool busy, stop;
  /* Command buffers committed by rk__mtl_stream_launch on the caller's
   * thread whose handler has not run yet. */
  unsigned inflight;
  unsigned syncing;      /* threads in rk__mtl_stream_drain */
  rk__pending_t pending; /* the first error of queued work */
};

/* ---- Command buffers and their completion handler ------------------------ */

/* "v16@?0@8": returns void; the block itself and one object. */
static const mtl_block_descriptor_t kHandlerDescriptor = {
    0, sizeof(mtl_completion_block_t), "v16@?0@8"};

/* Runs on Metal's thread once the command buffer has finished. */
/* Runs on Metal's thread once the command buffer has finished. `wait` is
 * the waiting thread's, or NULL for a command buffer nobody waits for
 * (counted in st->inflight). */
static void completed(mtl_completion_block_t *block, mtl_id cb) {
  mtl_stream_t *st = block->stream;
  mtl_wait_t *w = block->wait;
  const rk_objc_api_t *api = st->ctx->api;
  void *pool = rk__mtl_pool_push(api);
  unsigned long status = rk__mtl_send_ul(api, cb, api->sel.status);
  if (status == kMtlCommandBufferStatusError && (!w || w->record)) {
    mtl_id error = rk__mtl_send(api, cb, api->sel.error);
    long code =
        error ? RK_SEND(api, long, (mtl_id, mtl_sel), error, api->sel.code) : 0;
    char msg[1024];
    snprintf(msg, sizeof msg, "metal: a command buffer failed on %s: %s (%ld)",
             st->ctx->dev->info.name,
             rk__mtl_error_text(api, error, "no message"), code);
    rk__pending_record(&st->pending, RK_ERR_LAUNCH, msg);
  }
  rk__mtl_pool_pop(api, pool);
  pthread_mutex_lock(&st->lock);
  if (w)
    w->done = true;
  else
    st->inflight--;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

/* Adds the completion handler (a block literal on this stack, which
 * Metal copies) and commits `cb`. */
static void commit(mtl_stream_t *st, mtl_id cb, mtl_wait_t *w) {
  const rk_objc_api_t *api = st->ctx->api;
  mtl_completion_block_t block = {
      .isa = api->stack_block_isa,
      .flags = kMtlBlockHasSignature,
      .reserved = 0,
      .invoke = completed,
      .descriptor = &kHandlerDescriptor,
      .stream = st,
      .wait = w,
  };
  RK_SEND(api, void, (mtl_id, mtl_sel, void *), cb,
          api->sel.addCompletedHandler, &block);
  RK_SEND(api, void, (mtl_id, mtl_sel), cb, api->sel.commit);
}

/* Commits `cb` and waits for its handler. Returns the command buffer's
 * final status. Inside an autorelease pool. */
static unsigned long commit_and_wait(mtl_stream_t *st, mtl_id cb, bool record) {
  const rk_objc_api_t *api = st->ctx->api;
  mtl_wait_t w = {false, record};
  commit(st, cb, &w);
  pthread_mutex_lock(&st->lock);
  while (!w.done) pthread_cond_wait(&st->cond, &st->lock);
  pthread_mutex_unlock(&st->lock);
  return rk__mtl_send_ul(api, cb, api->sel.status);
}

static rk_status_t cb_failed(mtl_stream_t *st, mtl_id cb, const char *what) {
  const rk_objc_api_t *api = st->ctx->api;
  mtl_id error = rk__mtl_send(api, cb, api->sel.error);
  return rk__fail(RK_ERR_LAUNCH, "metal: %s failed on %s: %s", what,
                  st->ctx->dev->info.name,
                  rk__mtl_error_text(api, error, "no message"));
}

/* ---- Copies ---------------------------------------------------------------
 */

/* A blit of n bytes between buffers, committed and waited for. */
static rk_status_t blit(mtl_stream_t *st, mtl_id src, size_t soff, mtl_id dst,
                        size_t doff, size_t n) {
  const rk_objc_api_t *api = st->ctx->api;
  mtl_id cb = rk__mtl_send(api, st->queue, api->sel.commandBuffer);
  mtl_id enc = cb ? rk__mtl_send(api, cb, api->sel.blitCommandEncoder) : NULL;
  if (!enc) return rk__fail(RK_ERR_INTERNAL, "metal: no blit encoder");
  RK_SEND(api, void,
          (mtl_id, mtl_sel, mtl_id, unsigned long, mtl_id, unsigned long,
           unsigned long),
          enc, api->sel.copyBuffer, src, soff, dst, doff, n);
  RK_SEND(api, void, (mtl_id, mtl_sel), enc, api->sel.endEncoding);
  if (commit_and_wait(st, cb, false) != kMtlCommandBufferStatusCompleted)
    return cb_failed(st, cb, "a blit");
  return RK_OK;
}

static mtl_id shared_buffer(mtl_context_t *ctx, const void *bytes, size_t n) {
  const rk_objc_api_t *api = ctx->api;
  if (bytes)
    return RK_SEND(
        api, mtl_id,
        (mtl_id, mtl_sel, const void *, unsigned long, unsigned long),
        ctx->dev->device, api->sel.newBufferWithBytes, bytes, n,
        kMtlStorageShared);
  return RK_SEND(api, mtl_id, (mtl_id, mtl_sel, unsigned long, unsigned long),
                 ctx->dev->device, api->sel.newBufferWithLength, n,
                 kMtlStorageShared);
}

static unsigned char *contents(const rk_objc_api_t *api, mtl_id buffer) {
  return RK_SEND(api, void *, (mtl_id, mtl_sel), buffer, api->sel.contents);
}

static rk_status_t copy_buffers(mtl_context_t *ctx, mtl_stream_t *st,
                                const rk__copy_t *c, mtl_id dst, size_t doff,
                                mtl_id src, size_t soff) {
  const rk_objc_api_t *api = ctx->api;
  if (ctx->dev->unified) {
    /* Shared storage: the host sees the buffers' memory as it is. */
    switch (c->dir) {
      case RK__COPY_TO_DEVICE:
        memcpy(contents(api, dst) + doff, c->host, c->n);
        break;
      case RK__COPY_TO_HOST:
        memcpy(c->host, contents(api, src) + soff, c->n);
        break;
      case RK__COPY_DEVICE_TO_DEVICE:
        memmove(contents(api, dst) + doff, contents(api, src) + soff, c->n);
        break;
    }
    return RK_OK;
  }
  /* Private storage: blits through shared staging buffers. */
  rk_status_t s = RK_OK;
  mtl_id staging = NULL;
  switch (c->dir) {
    case RK__COPY_TO_DEVICE:
      staging = shared_buffer(ctx, c->host, c->n);
      s = staging ? blit(st, staging, 0, dst, doff, c->n)
                  : rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: staging buffer");
      break;
    case RK__COPY_TO_HOST:
      staging = shared_buffer(ctx, NULL, c->n);
      s = staging ? blit(st, src, soff, staging, 0, c->n)
                  : rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: staging buffer");
      if (s == RK_OK) memcpy(c->host, contents(api, staging), c->n);
      break;
    case RK__COPY_DEVICE_TO_DEVICE:
      if (dst == src && doff < soff + c->n && soff < doff + c->n) {
        /* Overlapping ranges of one buffer: through a temporary one. */
        staging = RK_SEND(api, mtl_id,
                          (mtl_id, mtl_sel, unsigned long, unsigned long),
                          ctx->dev->device, api->sel.newBufferWithLength, c->n,
                          kMtlStoragePrivate);
        s = staging ? blit(st, src, soff, staging, 0, c->n)
                    : rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: staging buffer");
        if (s == RK_OK) s = blit(st, staging, 0, dst, doff, c->n);
      } else {
        s = blit(st, src, soff, dst, doff, c->n);
      }
      break;
  }
  rk__mtl_release(api, staging);
  return s;
}

rk_status_t rk__mtl_copy_now(mtl_context_t *ctx, mtl_stream_t *st,
                             const rk__copy_t *c) {
  if (c->n == 0) return RK_OK;
  const rk_objc_api_t *api = ctx->api;
  mtl_id dst = NULL, src = NULL;
  size_t doff = 0, soff = 0;
  rk_status_t s = RK_OK;
  if (c->dir != RK__COPY_TO_HOST) {
    s = rk__mtl_resolve(ctx, c->dst, c->n, &dst, &doff);
    if (s != RK_OK) return rk__fail_context(s, "destination");
  }
  if (c->dir != RK__COPY_TO_DEVICE) {
    s = rk__mtl_resolve(ctx, c->src, c->n, &src, &soff);
    if (s != RK_OK) {
      rk__mtl_release(api, dst);
      return rk__fail_context(s, "source");
    }
  }
  void *pool = rk__mtl_pool_push(api);
  s = copy_buffers(ctx, st, c, dst, doff, src, soff);
  rk__mtl_release(api, dst);
  rk__mtl_release(api, src);
  rk__mtl_pool_pop(api, pool);
  return s;
}

/* ---- The stream's thread ---------------------------------------------------
 */

static void op_free(mtl_op_t *op) {
  if (op->kind == kOpLaunch) rk__args_free(op->launch.args);
  free(op);
}

/* Encodes launches `ops` (a list) into one command buffer and waits for
 * it. */
static void run_launches(mtl_stream_t *st, mtl_op_t *ops) {
  mtl_context_t *ctx = st->ctx;
  const rk_objc_api_t *api = ctx->api;
  mtl_id cb = rk__mtl_send(api, st->queue, api->sel.commandBuffer);
  mtl_id enc =
      cb ? rk__mtl_send(api, cb, api->sel.computeCommandEncoder) : NULL;
  if (!enc) {
    rk__pending_record_last(
        &st->pending,
        rk__fail(RK_ERR_INTERNAL, "metal: no compute command encoder"));
    return;
  }
  for (mtl_op_t *op = ops; op; op = op->next) {
    rk_status_t s = rk__mtl_encode_launch(ctx, enc, &op->launch);
    if (s != RK_OK)
      rk__pending_record_last(&st->pending,
                              rk__fail_context(s, "queued launch"));
  }
  RK_SEND(api, void, (mtl_id, mtl_sel), enc, api->sel.endEncoding);
  commit_and_wait(st, cb, true);
}

static void run_ops(mtl_stream_t *st, mtl_op_t *ops) {
  const rk_objc_api_t *api = st->ctx->api;
  void *pool = rk__mtl_pool_push(api);
  if (ops->kind == kOpLaunch) {
    run_launches(st, ops);
  } else {
    rk_status_t s = rk__mtl_copy_now(st->ctx, st, &ops->copy);
    if (s != RK_OK)
      rk__pending_record_last(&st->pending, rk__fail_context(s, "queued copy"));
  }
  rk__mtl_pool_pop(api, pool);
  while (ops) {
    mtl_op_t *next = ops->next;
    op_free(ops);
    ops = next;
  }
}

/* Takes the next step off the list (one copy, or a run of launches) and
 * marks the stream busy. Caller holds st->lock; st->head is set. */
static mtl_op_t *take_step_locked(mtl_stream_t *st) {
  mtl_op_t *first = st->head, *last = first;
  if (first->kind == kOpLaunch) {
    int n = 1;
    while (last->next && last->next->kind == kOpLaunch &&
           n < kMaxLaunchesPerCommandBuffer) {
      last = last->next;
      ++n;
    }
  }
  st->head = last->next;
  if (!st->head) st->tail = NULL;
  last->next = NULL;
  st->busy = true;
  return first;
}

/* Runs a step from take_step_locked. Called and returns with st->lock
 * held; both callers take a step only once st->inflight is 0 (the command
 * buffers committed before it have finished), under the same hold of the
 * lock (tests/model/metal_stream.pml). */
static void run_step_locked(mtl_stream_t *st, mtl_op_t *ops) {
  pthread_mutex_unlock(&st->lock);
  run_ops(st, ops);
  pthread_mutex_lock(&st->lock);
  st->busy = false;
  pthread_cond_broadcast(&st->cond);
}

/* The stream's thread runs held work when nobody synchronizes; a thread
 * waiting in a synchronization runs it itself (one hand-over less). */
static void *stream_main(void *arg) {
  mtl_stream_t *st = arg;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while ((!st->head || st->busy || st->inflight || st->syncing) && !st->stop)
      pthread_cond_wait(&st->cond, &st->lock);
    if (st->stop && !st->head) break;
    if (!st->head || st->busy || st->inflight || st->syncing) continue;
    run_step_locked(st, take_step_locked(st));
  }
  pthread_mutex_unlock(&st->lock);
  return NULL;
}

static rk_status_t enqueue(mtl_stream_t *st, mtl_op_t *op) {
  pthread_mutex_lock(&st->lock);
  if (st->tail)
    st->tail->next = op;
  else
    st->head = op;
  st->tail = op;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return RK_OK;
}

rk_status_t rk__mtl_stream_copy(mtl_stream_t *st, const rk__copy_t *copy) {
  /* Nothing before it: the copy runs now, on this thread. */
  pthread_mutex_lock(&st->lock);
  if (!st->head && !st->busy && !st->inflight) {
    st->busy = true;
    pthread_mutex_unlock(&st->lock);
    rk_status_t s = rk__mtl_copy_now(st->ctx, st, copy);
    pthread_mutex_lock(&st->lock);
    st->busy = false;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
    return s;
  }
  pthread_mutex_unlock(&st->lock);
  mtl_op_t *op = calloc(1, sizeof *op);
  if (!op) return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: queued copy");
  op->kind = kOpCopy;
  op->copy = *copy;
  return enqueue(st, op);
}

/* A launch on an idle stream: encoded and committed on the caller's
 * thread, with nothing to wait for (its handler counts it done). */
static rk_status_t launch_now(mtl_stream_t *st, const mtl_launch_t *L) {
  mtl_context_t *ctx = st->ctx;
  const rk_objc_api_t *api = ctx->api;
  void *pool = rk__mtl_pool_push(api);
  rk_status_t s = RK_OK;
  mtl_id cb = rk__mtl_send(api, st->queue, api->sel.commandBuffer);
  mtl_id enc =
      cb ? rk__mtl_send(api, cb, api->sel.computeCommandEncoder) : NULL;
  if (!enc) {
    s = rk__fail(RK_ERR_INTERNAL, "metal: no compute command encoder");
    pthread_mutex_lock(&st->lock);
    st->inflight--;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->lock);
  } else {
    s = rk__mtl_encode_launch(ctx, enc, L);
    RK_SEND(api, void, (mtl_id, mtl_sel), enc, api->sel.endEncoding);
    commit(st, cb, NULL);
  }
  rk__mtl_pool_pop(api, pool);
  rk__args_free(L->args);
  return s;
}

rk_status_t rk__mtl_stream_launch(mtl_stream_t *st, const mtl_launch_t *L) {
  pthread_mutex_lock(&st->lock);
  bool idle = !st->head && !st->busy;
  if (idle) st->inflight++;
  pthread_mutex_unlock(&st->lock);
  if (idle) return launch_now(st, L);
  mtl_op_t *op = calloc(1, sizeof *op);
  if (!op) {
    rk__args_free(L->args);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: queued launch");
  }
  op->kind = kOpLaunch;
  op->launch = *L;
  return enqueue(st, op);
}

void rk__mtl_stream_drain(mtl_stream_t *st) {
  pthread_mutex_lock(&st->lock);
  st->syncing++;
  while (st->head || st->busy || st->inflight) {
    if (st->head && !st->busy && !st->inflight)
      run_step_locked(st, take_step_locked(st));
    else
      pthread_cond_wait(&st->cond, &st->lock);
  }
  st->syncing--;
  /* Work queued meanwhile by another thread is the stream thread's. */
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

rk_status_t rk__mtl_stream_sync(mtl_stream_t *st) {
  rk__mtl_stream_drain(st);
  return rk__pending_take(&st->pending);
}

rk_status_t rk__mtl_stream_new(mtl_context_t *ctx, mtl_stream_t **out) {
  const rk_objc_api_t *api = ctx->api;
  mtl_stream_t *st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: stream");
  st->ctx = ctx;
  void *pool = rk__mtl_pool_push(api);
  st->queue = rk__mtl_send(api, ctx->dev->device, api->sel.newCommandQueue);
  rk__mtl_pool_pop(api, pool);
  if (!st->queue) {
    free(st);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: newCommandQueue failed on %s",
                    ctx->dev->info.name);
  }
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->cond, NULL);
  rk__pending_init(&st->pending);
  if (pthread_create(&st->thread, NULL, stream_main, st) != 0) {
    rk__pending_destroy(&st->pending);
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->lock);
    rk__mtl_release(api, st->queue);
    free(st);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: stream thread");
  }
  *out = st;
  return RK_OK;
}

rk_status_t rk__mtl_stream_free(mtl_stream_t *st) {
  rk_status_t s = rk__mtl_stream_sync(st);
  pthread_mutex_lock(&st->lock);
  st->stop = true;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  const rk_objc_api_t *api = st->ctx->api;
  void *pool = rk__mtl_pool_push(api);
  rk__mtl_release(api, st->queue);
  rk__mtl_pool_pop(api, pool);
  rk__pending_destroy(&st->pending);
  pthread_cond_destroy(&st->cond);
  pthread_mutex_destroy(&st->lock);
  free(st);
  return s;
}

rk_status_t rk__mtl_stream_create(rk_context_t *context, rk_stream_t **out) {
  mtl_stream_t *st = NULL;
  RK_RETURN_IF_ERROR(rk__mtl_stream_new(mtl_ctx(context), &st));
  *out = &st->base;
  return RK_OK;
}

rk_status_t rk__mtl_stream_destroy(rk_stream_t *stream) {
  return rk__mtl_stream_free((mtl_stream_t *)stream);
}

rk_status_t rk__mtl_stream_synchronize(rk_stream_t *stream) {
  return rk__mtl_stream_sync((mtl_stream_t *)stream);
}
