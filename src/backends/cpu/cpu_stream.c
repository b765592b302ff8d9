/* CPU streams: an in-order queue of copies and launches drained by a thread
 * of its own, so the caller returns at once. The first error raised by a
 * queued operation is kept and returned by the next synchronization; later
 * operations still run (as on CUDA, where a failed copy does not cancel the
 * queue). */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"

typedef enum { kOpCopy, kOpLaunch } op_kind_t;

typedef struct cpu_op {
  op_kind_t kind;
  rk__copy_t copy;
  cpu_launch_t launch;
  rk__args_t *args;
  struct cpu_op *next;
} cpu_op_t;

struct cpu_stream {
  rk_stream_t base;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t has_work; /* signalled when ops are queued or on stop */
  pthread_cond_t idle;     /* signalled when the queue drains */
  cpu_op_t *head, *tail;
  bool busy, stop;
  rk__pending_t pending; /* the first error of a queued operation */
};

static void op_free(cpu_op_t *op) {
  rk__args_free(op->args);
  free(op);
}

static rk_status_t run_op(cpu_stream_t *st, cpu_op_t *op) {
  cpu_context_t *ctx = cpu_ctx(st->base.context);
  if (op->kind == kOpCopy) {
    rk_status_t s = rk__cpu_memory_copy(&ctx->memory, &op->copy);
    return s == RK_OK ? s : rk__fail_context(s, "queued copy");
  }
  rk_status_t s = rk__cpu_pool_run(ctx->pool, &op->launch);
  return s == RK_OK ? s
                    : rk__fail_context(s, "queued launch of '%s'",
                                       op->launch.entry->name);
}

static void *stream_main(void *arg) {
  cpu_stream_t *st = arg;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while (!st->head && !st->stop) pthread_cond_wait(&st->has_work, &st->lock);
    if (!st->head) break; /* stop requested and nothing left */
    cpu_op_t *op = st->head;
    st->head = op->next;
    if (!st->head) st->tail = NULL;
    st->busy = true;
    pthread_mutex_unlock(&st->lock);
    rk__pending_record_last(&st->pending, run_op(st, op));
    op_free(op);
    pthread_mutex_lock(&st->lock);
    st->busy = false;
    if (!st->head) pthread_cond_broadcast(&st->idle);
  }
  pthread_mutex_unlock(&st->lock);
  return NULL;
}

rk_status_t rk__cpu_stream_create(rk_context_t *context, rk_stream_t **out) {
  (void)context;
  cpu_stream_t *st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: stream");
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->has_work, NULL);
  pthread_cond_init(&st->idle, NULL);
  rk__pending_init(&st->pending);
  if (pthread_create(&st->thread, NULL, stream_main, st) != 0) {
    rk__pending_destroy(&st->pending);
    pthread_cond_destroy(&st->idle);
    pthread_cond_destroy(&st->has_work);
    pthread_mutex_destroy(&st->lock);
    free(st);
    return rk__fail(RK_ERR_UNAVAILABLE, "cpu: cannot start a stream thread");
  }
  *out = &st->base;
  return RK_OK;
}

rk_status_t rk__cpu_stream_synchronize(rk_stream_t *stream) {
  cpu_stream_t *st = (cpu_stream_t *)stream;
  pthread_mutex_lock(&st->lock);
  while (st->head || st->busy) pthread_cond_wait(&st->idle, &st->lock);
  rk_status_t s = rk__pending_take(&st->pending);
  pthread_mutex_unlock(&st->lock);
  return s;
}

rk_status_t rk__cpu_stream_destroy(rk_stream_t *stream) {
  cpu_stream_t *st = (cpu_stream_t *)stream;
  pthread_mutex_lock(&st->lock);
  st->stop = true;
  pthread_cond_signal(&st->has_work);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  rk_status_t s = rk__pending_take(&st->pending);
  rk__pending_destroy(&st->pending);
  pthread_cond_destroy(&st->idle);
  pthread_cond_destroy(&st->has_work);
  pthread_mutex_destroy(&st->lock);
  free(st);
  return s;
}

static rk_status_t enqueue(cpu_stream_t *st, cpu_op_t *op) {
  pthread_mutex_lock(&st->lock);
  if (st->tail)
    st->tail->next = op;
  else
    st->head = op;
  st->tail = op;
  pthread_cond_signal(&st->has_work);
  pthread_mutex_unlock(&st->lock);
  return RK_OK;
}

rk_status_t rk__cpu_stream_copy(rk_stream_t *stream, const rk__copy_t *copy) {
  cpu_op_t *op = calloc(1, sizeof *op);
  if (!op) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: queueing a copy");
  op->kind = kOpCopy;
  op->copy = *copy;
  return enqueue((cpu_stream_t *)stream, op);
}

rk_status_t rk__cpu_stream_launch(rk_stream_t *stream,
                                  const cpu_launch_t *launch,
                                  rk__args_t *args) {
  cpu_op_t *op = calloc(1, sizeof *op);
  if (!op) {
    rk__args_free(args);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: queueing a launch");
  }
  op->kind = kOpLaunch;
  op->launch = *launch;
  op->launch.args = args->values;
  op->args = args;
  return enqueue((cpu_stream_t *)stream, op);
}
