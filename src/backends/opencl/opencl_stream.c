/* OpenCL streams: one in-order command queue per rk stream.
 *
 * rk checks a queued copy's memory again when the copy runs (the memory may
 * have been freed meanwhile), which an OpenCL command cannot do by itself.
 * So work goes straight to the queue only while that check would give the
 * same answer as at queueing time: a launch when nothing is held back, a
 * copy when the queue is also idle. Otherwise the operation waits in a host
 * list, and the stream's thread submits it once the command before it has
 * finished (for a copy, after checking its memory again). The first error
 * is kept and returned by the next synchronization; later operations still
 * run.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/opencl/opencl.h"
#include "base/error.h"
#include "base/sys.h"

typedef enum { kOpCopy, kOpLaunch } op_kind_t;

/* How long the stream's thread leaves held work to a synchronizing thread
 * before submitting it itself. */
enum { kGraceNs = 200 * 1000 };

typedef struct ocl_op {
  op_kind_t kind;
  rk__copy_t copy;
  ocl_launch_t launch;
  struct ocl_op *next;
} ocl_op_t;

typedef struct ocl_stream {
  rk_stream_t base;
  ocl_context_t *ctx;
  cl_command_queue queue;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t has_work; /* ops queued, or stop */
  pthread_cond_t idle;     /* an op was submitted (busy went false) */
  ocl_op_t *head, *tail;
  bool busy, stop;
  cl_event last;         /* the last command submitted, or NULL */
  rk__pending_t pending; /* the first error of a queued operation */
} ocl_stream_t;

static void set_last_locked(ocl_stream_t *st, cl_event ev) {
  if (!ev) return;
  if (st->last) st->ctx->api->clReleaseEvent(st->last);
  st->last = ev;
}

/* CL_COMPLETE, a command status, or a negative error. */
static cl_int event_status(const rk_cl_api_t *api, cl_event ev) {
  cl_int status = RK_CL_COMPLETE;
  cl_int err = api->clGetEventInfo(ev, RK_CL_EVENT_COMMAND_EXECUTION_STATUS,
                                   sizeof status, &status, NULL);
  return err == RK_CL_SUCCESS ? status : err;
}

static rk_status_t submit(ocl_stream_t *st, ocl_op_t *op, cl_event *ev) {
  if (op->kind == kOpCopy) {
    rk_status_t s =
        rk__ocl_enqueue_copy(st->ctx, st->queue, &op->copy, false, ev);
    return s == RK_OK ? s : rk__fail_context(s, "queued copy");
  }
  rk_status_t s = rk__ocl_enqueue_launch(st->ctx, st->queue, &op->launch, ev);
  return s == RK_OK ? s : rk__fail_context(s, "queued launch");
}

static void op_free(ocl_op_t *op) {
  if (op->kind == kOpLaunch) rk__args_free(op->launch.args);
  free(op);
}

/* Pops the first held op and submits it at once: its memory is checked
 * now, which is its run-time check because the command before it has
 * finished (the stream's thread waits for that) or because the user is
 * waiting in a synchronization of this stream and frees nothing meanwhile.
 * Called with st->lock held and the stream not busy; returns with it
 * held. */
static void run_one_locked(ocl_stream_t *st) {
  ocl_op_t *op = st->head;
  st->head = op->next;
  if (!st->head) st->tail = NULL;
  st->busy = true;
  pthread_mutex_unlock(&st->lock);
  cl_event ev = NULL;
  rk_status_t s = submit(st, op, &ev);
  op_free(op);
  pthread_mutex_lock(&st->lock);
  rk__pending_record_last(&st->pending, s);
  set_last_locked(st, ev);
  st->busy = false;
  /* Wakes a synchronizing thread: it takes over the ops still held. */
  pthread_cond_broadcast(&st->idle);
}

/* The stream's thread submits held ops when nobody synchronizes: each once
 * the last command submitted has finished. It takes nothing while it
 * waits, so a synchronizing thread can submit the ops itself meanwhile. */
static void *stream_main(void *arg) {
  ocl_stream_t *st = arg;
  const rk_cl_api_t *api = st->ctx->api;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while ((!st->head || st->busy) && !st->stop)
      pthread_cond_wait(&st->has_work, &st->lock);
    if (!st->head || st->busy) break; /* stop, and nothing to do here */
    /* A synchronizing thread usually comes soon after work is held and
     * submits it itself, sooner than a hand-over to this thread would: give
     * it kGraceNs before stepping in. */
    const uint64_t deadline = rk__now_ns() + (uint64_t)kGraceNs;
    while (st->head && !st->busy && !st->stop &&
           rk__cond_wait_until(&st->has_work, &st->lock, deadline) == 0) {
    }
    if (!st->head || st->busy) continue;
    cl_event last = st->last;
    if (!last || (st->head->kind == kOpLaunch)) {
      run_one_locked(st);
      continue;
    }
    api->clRetainEvent(last);
    pthread_mutex_unlock(&st->lock);
    cl_int err = api->clWaitForEvents(1, &last);
    pthread_mutex_lock(&st->lock);
    if (err != RK_CL_SUCCESS)
      rk__pending_record_last(
          &st->pending,
          rk__cl_fail(err, "a command before a queued copy failed"));
    /* Submit only if nothing was submitted meanwhile (else wait again). */
    if (st->last == last && st->head && !st->busy) run_one_locked(st);
    api->clReleaseEvent(last);
  }
  pthread_mutex_unlock(&st->lock);
  return NULL;
}

rk_status_t rk__ocl_stream_create(rk_context_t *context, rk_stream_t **out) {
  ocl_context_t *ctx = ocl_ctx(context);
  ocl_stream_t *st = calloc(1, sizeof *st);
  if (!st) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: stream");
  st->ctx = ctx;
  cl_int err = RK_CL_SUCCESS;
  st->queue = ctx->api->clCreateCommandQueue(ctx->cl, ctx->dev->id, 0, &err);
  if (!st->queue) {
    free(st);
    return rk__cl_fail(err, "clCreateCommandQueue (stream)");
  }
  pthread_mutex_init(&st->lock, NULL);
  rk__cond_init_monotonic(&st->has_work);
  pthread_cond_init(&st->idle, NULL);
  rk__pending_init(&st->pending);
  if (pthread_create(&st->thread, NULL, stream_main, st) != 0) {
    rk__pending_destroy(&st->pending);
    pthread_cond_destroy(&st->idle);
    pthread_cond_destroy(&st->has_work);
    pthread_mutex_destroy(&st->lock);
    ctx->api->clReleaseCommandQueue(st->queue);
    free(st);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: stream thread");
  }
  *out = &st->base;
  return RK_OK;
}

rk_status_t rk__ocl_stream_synchronize(rk_stream_t *stream) {
  ocl_stream_t *st = (ocl_stream_t *)stream;
  const rk_cl_api_t *api = st->ctx->api;
  pthread_mutex_lock(&st->lock);
  /* Submit held ops here rather than wait for the thread to wake up. */
  while (st->head || st->busy) {
    if (!st->busy)
      run_one_locked(st);
    else
      pthread_cond_wait(&st->idle, &st->lock);
  }
  cl_int err = api->clFinish(st->queue);
  if (err != RK_CL_SUCCESS)
    rk__pending_record_last(&st->pending, rk__cl_fail(err, "clFinish"));
  if (st->last) {
    cl_int status = event_status(api, st->last);
    if (status < 0)
      rk__pending_record_last(&st->pending,
                              rk__cl_fail(status, "a queued command failed"));
    api->clReleaseEvent(st->last);
    st->last = NULL;
  }
  rk_status_t s = rk__pending_take(&st->pending);
  pthread_mutex_unlock(&st->lock);
  return s;
}

rk_status_t rk__ocl_stream_destroy(rk_stream_t *stream) {
  ocl_stream_t *st = (ocl_stream_t *)stream;
  rk_status_t s = rk__ocl_stream_synchronize(stream);
  pthread_mutex_lock(&st->lock);
  st->stop = true;
  pthread_cond_signal(&st->has_work);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  if (st->last) st->ctx->api->clReleaseEvent(st->last);
  st->ctx->api->clReleaseCommandQueue(st->queue);
  rk__pending_destroy(&st->pending);
  pthread_cond_destroy(&st->idle);
  pthread_cond_destroy(&st->has_work);
  pthread_mutex_destroy(&st->lock);
  free(st);
  return s;
}

/* Submits now when allowed (see the file comment), else hands the op to the
 * stream's thread. Takes ownership of op. */
static rk_status_t queue_op(ocl_stream_t *st, ocl_op_t *op) {
  pthread_mutex_lock(&st->lock);
  bool direct = !st->head && !st->busy;
  if (direct && op->kind == kOpCopy && st->last)
    direct = event_status(st->ctx->api, st->last) == RK_CL_COMPLETE;
  if (direct) {
    cl_event ev = NULL;
    rk_status_t s = submit(st, op, &ev);
    set_last_locked(st, ev);
    pthread_mutex_unlock(&st->lock);
    op_free(op);
    return s;
  }
  op->next = NULL;
  if (st->tail)
    st->tail->next = op;
  else
    st->head = op;
  st->tail = op;
  pthread_cond_signal(&st->has_work);
  pthread_mutex_unlock(&st->lock);
  return RK_OK;
}

rk_status_t rk__ocl_stream_copy(rk_stream_t *stream, const rk__copy_t *copy) {
  ocl_op_t *op = calloc(1, sizeof *op);
  if (!op) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: queued copy");
  op->kind = kOpCopy;
  op->copy = *copy;
  return queue_op((ocl_stream_t *)stream, op);
}

rk_status_t rk__ocl_stream_launch(rk_stream_t *stream,
                                  const ocl_launch_t *launch) {
  ocl_op_t *op = calloc(1, sizeof *op);
  if (!op) {
    rk__args_free(launch->args);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: queued launch");
  }
  op->kind = kOpLaunch;
  op->launch = *launch;
  return queue_op((ocl_stream_t *)stream, op);
}
