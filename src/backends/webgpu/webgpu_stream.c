/* WebGPU streams. A device has one queue, so a stream is an ordered list of
 * operations kept on the host and submitted, in order, to that queue at the
 * stream's next synchronization (or once kFlushOps are waiting). Pointers
 * are validated when an operation is queued and again when it is
 * submitted; a failure then becomes the stream's error, reported by its
 * next synchronization, and the operation is skipped. */
#include <stdlib.h>
#include <string.h>

#include "backends/webgpu/webgpu_backend.h"
#include "base/error.h"

enum { kFlushOps = 64 };

typedef struct wg_op {
  bool is_launch;
  rk__copy_t copy;
  rk_function_t *fn;
  rk_dim3_t grid, block;
  size_t shared_mem;
  rk__args_t *args;
} wg_op_t;

typedef struct wg_stream {
  rk_stream_t base;
  pthread_mutex_t lock; /* the list below and the error */
  wg_op_t *ops;
  size_t count, cap;
  rk__pending_t pending; /* the first error of a submitted operation */
} wg_stream_t;

rk_status_t rk__wg_stream_create(rk_context_t *context, rk_stream_t **out) {
  (void)context;
  wg_stream_t *st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: stream");
  pthread_mutex_init(&st->lock, NULL);
  rk__pending_init(&st->pending);
  *out = &st->base;
  return RK_OK;
}

enum { kMaxReadRun = 16 };

/* How many operations from `at` on are copies to the host whose source
 * ranges are valid now (at most kMaxReadRun). */
static size_t read_run(wg_context_t *ctx, wg_stream_t *st, size_t at) {
  size_t n = 0, bytes = 0;
  while (at + n < st->count && n < kMaxReadRun) {
    const wg_op_t *op = &st->ops[at + n];
    wg_alloc_t *a;
    uint64_t off;
    if (op->is_launch || op->copy.dir != RK__COPY_TO_HOST) break;
    bytes += op->copy.n;
    if (bytes > RK__WG_STAGING_MAX) break;
    char *saved = rk__error_save();
    rk_status_t s = rk__wg_lookup(ctx, op->copy.src, op->copy.n, &a, &off);
    rk__error_restore(saved);
    if (s != RK_OK) break;
    ++n;
  }
  return n;
}

static rk_status_t read_together(wg_context_t *ctx, wg_stream_t *st, size_t at,
                                 size_t n) {
  rk__wg_read_t reads[kMaxReadRun];
  for (size_t k = 0; k < n; ++k) {
    const wg_op_t *op = &st->ops[at + k];
    wg_alloc_t *a = NULL;
    uint64_t off = 0;
    RK_RETURN_IF_ERROR(rk__wg_lookup(ctx, op->copy.src, op->copy.n, &a, &off));
    reads[k] = (rk__wg_read_t){op->copy.host, a->buffer, off, op->copy.n};
  }
  rk_status_t s = rk__wg_read_many(ctx, n, reads);
  if (s != RK_OK) rk__fail_context(s, "stream copy");
  return s;
}

/* Submits the queued operations in order. Caller holds st->lock. */
static void submit_ops(wg_stream_t *st) {
  if (st->count == 0) return;
  wg_context_t *ctx = wg_ctx(st->base.context);
  pthread_mutex_lock(&ctx->lock);
  for (size_t i = 0; i < st->count; ++i) {
    wg_op_t *op = &st->ops[i];
    rk_status_t s;
    size_t run = read_run(ctx, st, i);
    if (run > 1) {
      /* Consecutive copies to the host: one submit, one wait. */
      s = read_together(ctx, st, i, run);
      rk__pending_record_last(&st->pending, s);
      i += run - 1;
      continue;
    }
    if (op->is_launch) {
      s = rk__wg_launch_locked(ctx, rk__wg_function(op->fn), op->grid,
                               op->block, op->shared_mem, op->args);
      rk__args_free(op->args);
    } else {
      s = rk__wg_copy(ctx, &op->copy);
      if (s != RK_OK) rk__fail_context(s, "stream copy");
    }
    rk__pending_record_last(&st->pending, s);
  }
  rk_status_t s = rk__wg_flush(ctx);
  pthread_mutex_unlock(&ctx->lock);
  rk__pending_record_last(&st->pending, s);
  st->count = 0;
}

static rk_status_t push(wg_stream_t *st, const wg_op_t *op) {
  pthread_mutex_lock(&st->lock);
  if (st->count == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    wg_op_t *ops = realloc(st->ops, cap * sizeof *ops);
    if (!ops) {
      pthread_mutex_unlock(&st->lock);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: stream queue");
    }
    st->ops = ops;
    st->cap = cap;
  }
  st->ops[st->count++] = *op;
  if (st->count >= kFlushOps) submit_ops(st);
  pthread_mutex_unlock(&st->lock);
  return RK_OK;
}

rk_status_t rk__wg_stream_copy(rk_stream_t *stream, const rk__copy_t *copy) {
  wg_op_t op;
  memset(&op, 0, sizeof op);
  op.copy = *copy;
  return push((wg_stream_t *)stream, &op);
}

rk_status_t rk__wg_stream_launch(rk_stream_t *stream, rk_function_t *fn,
                                 rk_dim3_t grid, rk_dim3_t block,
                                 size_t shared_mem, rk__args_t *args) {
  wg_op_t op;
  memset(&op, 0, sizeof op);
  op.is_launch = true;
  op.fn = fn;
  op.grid = grid;
  op.block = block;
  op.shared_mem = shared_mem;
  op.args = args;
  rk_status_t s = push((wg_stream_t *)stream, &op);
  if (s != RK_OK) rk__args_free(args);
  return s;
}

typedef struct done_flag {
  int done;
} done_flag_t;

static void on_done(uint32_t status, WGPUStringView message, void *u1,
                    void *u2) {
  (void)status;
  (void)message;
  (void)u2;
  __atomic_store_n(&((done_flag_t *)u1)->done, 1, __ATOMIC_RELEASE);
}

rk_status_t rk__wg_wait_idle(wg_context_t *ctx) {
  pthread_mutex_lock(&ctx->lock);
  rk_status_t s = rk__wg_flush(ctx);
  pthread_mutex_unlock(&ctx->lock);
  if (s != RK_OK) return s;
  if (ctx->p->wgpuDevicePoll) {
    /* Blocks until everything submitted so far has run. */
    ctx->p->wgpuDevicePoll(ctx->device, 1, NULL);
    return RK_OK;
  }
  done_flag_t *f = calloc(1, sizeof *f);
  if (!f) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: synchronize");
  WGPUQueueWorkDoneCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_done, f, NULL};
  ctx->p->wgpuQueueOnSubmittedWorkDone(ctx->queue, ci);
  s = rk__wg_wait(ctx, &f->done, true);
  if (s == RK_OK) free(f); /* otherwise the callback may still come */
  return s;
}

rk_status_t rk__wg_stream_synchronize(rk_stream_t *stream) {
  wg_stream_t *st = (wg_stream_t *)stream;
  pthread_mutex_lock(&st->lock);
  submit_ops(st);
  pthread_mutex_unlock(&st->lock);
  rk_status_t s = rk__wg_guard_check(wg_ctx(stream->context), true);
  pthread_mutex_lock(&st->lock);
  rk_status_t error = rk__pending_take(&st->pending);
  if (error != RK_OK) s = error;
  pthread_mutex_unlock(&st->lock);
  return s;
}

rk_status_t rk__wg_stream_destroy(rk_stream_t *stream) {
  wg_stream_t *st = (wg_stream_t *)stream;
  rk_status_t s = rk__wg_stream_synchronize(stream);
  rk__pending_destroy(&st->pending);
  pthread_mutex_destroy(&st->lock);
  free(st->ops);
  free(st);
  return s;
}
