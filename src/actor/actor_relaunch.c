/* Relaunch actors: the device side as a host thread that launches one batch
 * kernel per batch of requests (see actor_relaunch.h). */
#include "actor/actor_relaunch.h"

#include <stdlib.h>
#include <string.h>

#include "actor/k2k_internal.h"
#include "base/error.h"
#include "base/hlc.h"
#include "base/sys.h"
#include "hal/actor_loop.h"

enum { kDefaultBatch = 256, kBlock = 64 };

struct rk__relaunch {
  rk__actor_device_t dev;
  rk_context_t *context;
  rk_stream_t *stream;
  uint32_t in_size, out_size, batch;
  uint64_t spin_ns;
  rk_devptr_t d_in, d_out, d_state, d_status;
  unsigned char *h_in, *h_out; /* batch * in_size, batch * out_size */
  int32_t *h_status;           /* batch */
  uint64_t batches, requests;  /* atomic: written by the driver */
  uint64_t faults;             /* atomic: batches that failed */
  int32_t last_fault;          /* atomic: the latest one's rk_status_t */
  int32_t inject;              /* atomic: fail the next batch (tests) */
  /* Held while a batch runs: by the driver, or by a caller running its own
   * request (rk__relaunch_run_here). Whoever holds it is the consumer of
   * the input ring and the producer of the output ring. */
  pthread_mutex_t consume;
  pthread_t thread;
  bool has_thread;    /* started and not joined (a failed restart joins) */
  uint32_t abandoned; /* atomic: the driver frees itself when it stops */
  /* Messages to other actors (actor/k2k.c): the ports' control words and
   * outboxes on the device, copied back after each batch and forwarded by
   * this thread into the receivers' inboxes. */
  rk__k2k_t *k2k;
  uint32_t nports;
  rk_devptr_t d_ports, d_port[RK__K2K_MAX_PORTS];
};

static void teardown(rk__relaunch_t *r);

static void relaunch_free(rk__relaunch_t *r) {
  pthread_mutex_destroy(&r->consume);
  teardown(r);
  free(r);
}

/* Copy in, one launch, copy out, wait. */
static rk_status_t run_batch(rk__relaunch_t *r, uint32_t n) {
  const int32_t injected = __atomic_exchange_n(&r->inject, 0, __ATOMIC_RELAXED);
  if (injected)
    return rk__fail((rk_status_t)injected,
                    "actor: a device fault injected by a test");
  rk_stream_t *st = r->stream;
  RK_RETURN_IF_ERROR(
      rk_stream_copy_to_device(st, r->d_in, r->h_in, (size_t)n * r->in_size));
  rk_arg_t args[5 + 1 + RK__K2K_MAX_PORTS];
  size_t k = 0;
  args[k++] = rk_arg_ptr(r->d_in);
  args[k++] = rk_arg_ptr(r->d_out);
  if (r->dev.has_state) args[k++] = rk_arg_ptr(r->d_state);
  args[k++] = rk_arg_ptr(r->d_status);
  args[k++] = rk_arg_u32(n);
  uint32_t *ctl = NULL;
  if (r->nports) {
    /* The credits for this batch (what every receiver can still take). */
    rk__k2k_prepare(r->k2k, RK__K2K_OUTBOX);
    ctl = rk__k2k_ctl(r->k2k);
    RK_RETURN_IF_ERROR(rk_stream_copy_to_device(
        st, r->d_ports, ctl, (size_t)r->nports * RK__K2K_PORT_WORDS * 4));
    args[k++] = rk_arg_ptr(r->d_ports);
    for (uint32_t p = 0; p < r->nports; ++p)
      if (r->d_port[p]) args[k++] = rk_arg_ptr(r->d_port[p]);
  }
  /* A stateless handler's batch runs one request per thread; requests
   * sharing a state, or sending to other actors, run in order on one
   * thread. */
  rk_dim3_t grid = {1, 1, 1}, block = {1, 1, 1};
  if (!r->dev.has_state && !r->nports) {
    uint32_t b = r->context->info.max_threads_per_block;
    if (b > kBlock) b = kBlock;
    block.x = n < b ? n : b;
    grid.x = (n + block.x - 1) / block.x;
  }
  RK_RETURN_IF_ERROR(
      rk_function_launch(r->dev.function, grid, block, 0, st, args, k));
  RK_RETURN_IF_ERROR(
      rk_stream_copy_to_host(st, r->h_out, r->d_out, (size_t)n * r->out_size));
  RK_RETURN_IF_ERROR(rk_stream_copy_to_host(st, r->h_status, r->d_status,
                                            (size_t)n * sizeof(int32_t)));
  if (r->nports) {
    /* The messages sent: at most the credit of each port. */
    for (uint32_t p = 0; p < r->nports; ++p) {
      const uint32_t credit = ctl[p * RK__K2K_PORT_WORDS];
      if (r->d_port[p] && credit)
        RK_RETURN_IF_ERROR(rk_stream_copy_to_host(
            st, rk__k2k_outbox(r->k2k, p), r->d_port[p],
            (size_t)credit * rk__k2k_port_size(r->k2k, p)));
    }
    RK_RETURN_IF_ERROR(rk_stream_copy_to_host(
        st, ctl, r->d_ports, (size_t)r->nports * RK__K2K_PORT_WORDS * 4));
  }
  RK_RETURN_IF_ERROR(rk_stream_synchronize(st));
  /* Delivered before any receiver's next batch can start, stamped after
   * the batch's requests or messages (the caller merged them). */
  if (r->nports) rk__k2k_deliver(r->k2k, rk__hlc_tick(&r->dev.control->clock));
  return RK_OK;
}

/* Answers up to n requests with one launch; the caller holds `consume`
 * and `in`/`out` are current. A launch that fails answers every request of
 * its batch with the failure (status RK_ABI_MSG_DEVICE_ERROR, code = the
 * rk_status_t). */
static uint32_t run_locked(rk__relaunch_t *r, rk__ring_end_t *in,
                           rk__ring_end_t *out, uint32_t n) {
  rk_abi_control_t *c = r->dev.control;
  uint32_t k = 0;
  while (k < n && rk__ring_reserve_at(out, k)) {
    const unsigned char *src = rk__ring_peek(in, k);
    memcpy(r->h_in + (size_t)k * r->in_size, src + RK_ABI_MSG_HEADER,
           r->in_size);
    ++k;
  }
  if (k == 0) return 0;
  if (r->nports) {
    /* The batch's sends are later than its requests (their responses are
     * stamped after the launch, as every actor's are). */
    uint64_t latest = 0;
    for (uint32_t m = 0; m < k; ++m) {
      const rk_abi_msg_t *req = (const rk_abi_msg_t *)rk__ring_peek(in, m);
      if (req->timestamp > latest) latest = req->timestamp;
    }
    rk__hlc_merge(&c->clock, latest);
  }
  const bool traced = rk__trace_on();
  rk__trace_span_t span;
  if (traced) rk__trace_span_begin(&span, "handler");
  rk_status_t s = run_batch(r, k);
  if (traced) {
    const rk_abi_msg_t *reqs[64];
    uint32_t shown = k < 64 ? k : 64; /* the first 64 of a batch */
    for (uint32_t m = 0; m < shown; ++m)
      reqs[m] = (const rk_abi_msg_t *)rk__ring_peek(in, m);
    const rk_abi_msg_t *last = (const rk_abi_msg_t *)rk__ring_peek(in, k - 1);
    rk__actor_trace_handled(&span, rk_function_name(r->dev.function), reqs,
                            shown, k, last->correlation_id, (int32_t)s);
  }
  uint64_t errors = 0;
  int32_t last_error = 0;
  const uint64_t phys = rk__hlc_physical(); /* once per batch */
  for (uint32_t m = 0; m < k; ++m) {
    const rk_abi_msg_t *req = (const rk_abi_msg_t *)rk__ring_peek(in, m);
    unsigned char *dst = rk__ring_reserve_at(out, m);
    rk_abi_msg_t *resp = (rk_abi_msg_t *)dst;
    int32_t code = s == RK_OK ? r->h_status[m] : (int32_t)s;
    rk__actor_respond_at(c, req, resp, code, phys);
    if (s == RK_OK) {
      memcpy(dst + RK_ABI_MSG_HEADER, r->h_out + (size_t)m * r->out_size,
             r->out_size);
    } else {
      resp->status = RK_ABI_MSG_DEVICE_ERROR;
      memset(dst + RK_ABI_MSG_HEADER, 0, r->out_size);
    }
    if (code && s == RK_OK) { /* the handler's; a failed batch is not */
      ++errors;
      last_error = code;
    }
  }
  if (s != RK_OK) {
    /* Before the responses are published: a host that sees one of them
     * sees the fault counted. */
    __atomic_store_n(&r->last_fault, (int32_t)s, __ATOMIC_RELAXED);
    __atomic_store_n(&r->faults, r->faults + 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&r->batches, r->batches + 1, __ATOMIC_RELAXED);
  __atomic_store_n(&r->requests, r->requests + k, __ATOMIC_RELAXED);
  rk__actor_commit(c, in, out, k, errors, last_error);
  return k;
}

/* Takes the consumer role: the ends are refreshed from the ring headers,
 * since a caller may have run batches since this side last looked. The
 * input end goes by tail, never by the slot marks: the driver's end goes
 * stale while callers consume, and once they have lapped the ring the
 * slot after its stale view carries a later index's mark, so a walk of
 * the marks would find nothing there while tail says requests wait (the
 * driver spun on that, answering nothing). Going by tail, every consumer
 * of the role also keeps head behind tail. */
static uint32_t available_locked(const rk__relaunch_t *r, rk__ring_end_t *in,
                                 rk__ring_end_t *out, uint32_t n) {
  rk__ring_attach(in, r->dev.in, r->dev.in_slots, false);
  in->marks = false;
  rk__ring_attach(out, r->dev.out, r->dev.out_slots, true);
  uint64_t avail = rk__ring_available(in);
  return avail < n ? (uint32_t)avail : n;
}

/* rk__actor_batch_fn of the driver (0 also when a caller took the
 * requests first). */
static uint32_t handle_batch(void *ctx, rk__ring_end_t *in, rk__ring_end_t *out,
                             uint32_t n) {
  rk__relaunch_t *r = ctx;
  pthread_mutex_lock(&r->consume);
  n = available_locked(r, in, out, n);
  uint32_t done = n ? run_locked(r, in, out, n) : 0;
  pthread_mutex_unlock(&r->consume);
  return done;
}

/* Messages from other actors: one launch for up to `max` of them, their
 * responses dropped; a failed launch counts each as a handler error. */
static uint32_t handle_inbox(void *ctx, uint32_t max) {
  rk__relaunch_t *r = ctx;
  if (!rk__k2k_inbox_available(r->k2k)) return 0;
  pthread_mutex_lock(&r->consume);
  uint32_t n = rk__k2k_inbox_available(r->k2k);
  if (n > max) n = max;
  if (n > r->batch) n = r->batch;
  uint64_t latest = 0;
  for (uint32_t m = 0; m < n; ++m) {
    memcpy(r->h_in + (size_t)m * r->in_size, rk__k2k_inbox_payload(r->k2k, m),
           r->in_size);
    const uint64_t ts = rk__k2k_inbox_timestamp(r->k2k, m);
    if (ts > latest) latest = ts;
  }
  uint32_t errors = 0;
  if (n) {
    /* A receive event for the messages: the handler's sends and the
     * responses to later requests are later than each of them. */
    rk__hlc_merge(&r->dev.control->clock, latest);
    rk_status_t s = run_batch(r, n);
    for (uint32_t m = 0; m < n; ++m)
      errors += s != RK_OK || r->h_status[m] != 0;
    __atomic_store_n(&r->batches, r->batches + 1, __ATOMIC_RELAXED);
    rk__k2k_inbox_release(r->k2k, n, errors);
  }
  pthread_mutex_unlock(&r->consume);
  return n;
}

static bool inbox_ready(void *ctx) {
  return rk__k2k_inbox_available(((rk__relaunch_t *)ctx)->k2k) != 0;
}

bool rk__relaunch_hold(rk__relaunch_t *r) {
  if (pthread_mutex_trylock(&r->consume) != 0) return false;
  /* The driver sets `terminated` holding `consume` (stop_lock below): past
   * that, nobody runs batches any more. */
  if (__atomic_load_n(&r->dev.control->terminated, __ATOMIC_ACQUIRE)) {
    pthread_mutex_unlock(&r->consume);
    return false;
  }
  return true;
}

void rk__relaunch_lock(rk__relaunch_t *r) { pthread_mutex_lock(&r->consume); }

void rk__relaunch_unlock(rk__relaunch_t *r) {
  pthread_mutex_unlock(&r->consume);
  /* Requests that came meanwhile are the driver's. */
  if (rk__ring_depth(r->dev.in)) rk__ring_signal_data(r->dev.in);
}

void rk__relaunch_run_held(rk__relaunch_t *r) {
  rk__ring_end_t in, out;
  uint32_t n = available_locked(r, &in, &out, r->batch);
  if (n) run_locked(r, &in, &out, n);
  pthread_mutex_unlock(&r->consume);
  /* The caller's request went in without waking the driver; whatever this
   * batch left behind is the driver's again. */
  if (rk__ring_depth(r->dev.in)) rk__ring_signal_data(r->dev.in);
}

static void stop_lock(void *ctx) {
  pthread_mutex_lock(&((rk__relaunch_t *)ctx)->consume);
}

static void stop_unlock(void *ctx) {
  pthread_mutex_unlock(&((rk__relaunch_t *)ctx)->consume);
}

static void *driver_main(void *arg) {
  rk__relaunch_t *r = arg;
  rk__set_thread_name("rk-actor-relaunch");
  const rk__actor_loop_t loop = {.control = r->dev.control,
                                 .in = r->dev.in,
                                 .out = r->dev.out,
                                 .in_slots = r->dev.in_slots,
                                 .out_slots = r->dev.out_slots,
                                 .spin_ns = r->spin_ns,
                                 .host_busy = r->dev.host_busy,
                                 .park_idle = r->dev.park_idle,
                                 .idle = r->dev.idle,
                                 .cpus = r->dev.cpus,
                                 .batch = r->batch,
                                 .shared_consumer = true,
                                 .handle = handle_batch,
                                 .ctx = r,
                                 .stop_lock = stop_lock,
                                 .stop_unlock = stop_unlock,
                                 .inbox = r->k2k ? handle_inbox : NULL,
                                 .inbox_ready = r->k2k ? inbox_ready : NULL};
  rk__actor_loop_run(&loop);
  rk__k2k_stopped(r->k2k);
  if (__atomic_exchange_n(&r->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    /* Abandoned by rk__relaunch_release, which held the context. */
    pthread_detach(pthread_self());
    rk_context_t *ctx = r->context;
    relaunch_free(r);
    rk__context_unhold(ctx);
  }
  return NULL;
}

static rk_status_t setup(rk__relaunch_t *r) {
  rk_context_t *ctx = r->context;
  const size_t n = r->batch;
  r->h_in = malloc(n * r->in_size);
  r->h_out = malloc(n * r->out_size);
  r->h_status = malloc(n * sizeof(int32_t));
  if (!r->h_in || !r->h_out || !r->h_status)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: relaunch staging buffers");
  RK_RETURN_IF_ERROR(rk_context_create_stream(ctx, &r->stream));
  RK_RETURN_IF_ERROR(rk_context_allocate(ctx, n * r->in_size, &r->d_in));
  RK_RETURN_IF_ERROR(rk_context_allocate(ctx, n * r->out_size, &r->d_out));
  RK_RETURN_IF_ERROR(
      rk_context_allocate(ctx, n * sizeof(int32_t), &r->d_status));
  if (r->nports) {
    RK_RETURN_IF_ERROR(rk_context_allocate(
        ctx, (size_t)r->nports * RK__K2K_PORT_WORDS * 4, &r->d_ports));
    for (uint32_t p = 0; p < r->nports; ++p) {
      if (!rk__k2k_outbox(r->k2k, p)) continue;
      RK_RETURN_IF_ERROR(rk_context_allocate(
          ctx, (size_t)RK__K2K_OUTBOX * rk__k2k_port_size(r->k2k, p),
          &r->d_port[p]));
    }
  }
  if (r->dev.has_state) {
    const uint32_t size = r->dev.control->state_size;
    RK_RETURN_IF_ERROR(rk_context_allocate(ctx, size, &r->d_state));
    void *zeros = NULL;
    const void *init = r->dev.initial_state;
    if (!init) init = zeros = calloc(1, size);
    if (!init) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: state");
    rk_status_t s = rk_context_copy_to_device(ctx, r->d_state, init, size);
    free(zeros);
    RK_RETURN_IF_ERROR(s);
  }
  return RK_OK;
}

rk_status_t rk__relaunch_start(rk_context_t *context,
                               const rk__actor_device_t *dev, uint64_t spin_ns,
                               rk__relaunch_t **out) {
  rk__relaunch_t *r = calloc(1, sizeof *r);
  if (!r) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: relaunch driver");
  r->dev = *dev;
  r->dev.initial_state = NULL;
  r->context = context;
  r->spin_ns = spin_ns;
  pthread_mutex_init(&r->consume, NULL);
  r->in_size = dev->control->in_payload ? dev->control->in_payload : 1;
  r->out_size = dev->control->out_payload ? dev->control->out_payload : 1;
  long batch = kDefaultBatch;
  rk__env_long("RK_ACTOR_BATCH", 1, 1 << 20, &batch);
  r->batch =
      (uint32_t)batch < dev->in->capacity ? (uint32_t)batch : dev->in->capacity;
  /* On a device that cuts an invocation's loops short after a total
   * count, requests that must run in order on one invocation (a stateful
   * handler) run one per launch, so each invocation's count is one
   * handler call's own. */
  r->k2k = dev->k2k;
  r->nports = rk__k2k_nports(r->k2k);
  if (r->k2k) rk__k2k_set_forwarded(r->k2k);
  if ((dev->has_state || r->nports) && rk__hal_loop_limit(context))
    r->batch = 1;
  r->dev.initial_state = dev->initial_state;
  rk_status_t s = setup(r);
  r->dev.initial_state = NULL;
  if (s == RK_OK) {
    int err = pthread_create(&r->thread, NULL, driver_main, r);
    r->has_thread = err == 0;
    if (err)
      s = rk__fail(RK_ERR_OUT_OF_MEMORY,
                   "actor: cannot start the relaunch driver thread (%s)",
                   strerror(err));
  }
  if (s != RK_OK) {
    relaunch_free(r);
    return s;
  }
  *out = r;
  return RK_OK;
}

/* Frees what setup() made. */
static void teardown(rk__relaunch_t *r) {
  if (r->stream) rk_stream_destroy(r->stream);
  rk_devptr_t *bufs[] = {&r->d_in, &r->d_out, &r->d_state, &r->d_status,
                         &r->d_ports};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
    if (*bufs[i]) rk_context_free(r->context, *bufs[i]);
  for (uint32_t p = 0; p < RK__K2K_MAX_PORTS; ++p)
    if (r->d_port[p]) rk_context_free(r->context, r->d_port[p]);
  memset(r->d_port, 0, sizeof r->d_port);
  free(r->h_in);
  free(r->h_out);
  free(r->h_status);
  r->stream = NULL;
  r->d_in = r->d_out = r->d_state = r->d_status = r->d_ports = 0;
  r->h_in = r->h_out = NULL;
  r->h_status = NULL;
}

rk_status_t rk__relaunch_restart(rk__relaunch_t *r, const void *fresh_state,
                                 bool last_known) {
  /* The driver has left its loop (control->terminated): join it. */
  pthread_join(r->thread, NULL);
  r->has_thread = false;
  __atomic_store_n(&r->abandoned, 0u, __ATOMIC_RELAXED);
  const uint32_t size = r->dev.control->state_size;
  void *state = NULL;
  rk_status_t s = RK_OK;
  if (r->dev.has_state) {
    state = calloc(1, size ? size : 1);
    if (!state) s = rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: restart state");
    if (s == RK_OK && last_known)
      s = rk_context_copy_to_host(r->context, state, r->d_state, size);
    else if (s == RK_OK && fresh_state)
      memcpy(state, fresh_state, size);
    if (s != RK_OK)
      s = rk__fail_context(s, "actor: reading the last-known state back");
  }
  /* A new stream and new device buffers: the old ones may be what
   * failed. */
  pthread_mutex_lock(&r->consume);
  teardown(r);
  if (s == RK_OK) {
    r->dev.initial_state = state;
    s = setup(r);
    r->dev.initial_state = NULL;
  }
  if (s == RK_OK) {
    /* Under `consume`: a caller that holds the role from now on sees a
     * device side that runs. */
    __atomic_store_n(&r->dev.control->run_state, RK_ABI_RUN_STARTING,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&r->dev.control->terminated, 0u, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&r->consume);
  free(state);
  if (s != RK_OK) return s;
  const int err = pthread_create(&r->thread, NULL, driver_main, r);
  r->has_thread = err == 0;
  if (err) {
    __atomic_store_n(&r->dev.control->terminated, 1u, __ATOMIC_RELEASE);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "actor: cannot start the relaunch driver thread (%s)",
                    strerror(err));
  }
  return RK_OK;
}

void rk__relaunch_faults(const rk__relaunch_t *r, uint64_t *out_faults,
                         int32_t *out_last) {
  *out_faults = __atomic_load_n(&r->faults, __ATOMIC_ACQUIRE);
  *out_last = __atomic_load_n(&r->last_fault, __ATOMIC_RELAXED);
}

void rk__relaunch_inject_fault(rk__relaunch_t *r, rk_status_t status) {
  __atomic_store_n(&r->inject, (int32_t)status, __ATOMIC_RELAXED);
}

void rk__relaunch_release(rk__relaunch_t *r, bool stopped) {
  if (!r->has_thread) { /* a restart that failed left no driver */
    relaunch_free(r);
    return;
  }
  if (stopped) {
    pthread_join(r->thread, NULL);
    relaunch_free(r);
    return;
  }
  /* Still in a batch: whoever comes second (this or the driver leaving its
   * loop) frees it; until then the driver holds the context. */
  rk_context_t *ctx = r->context;
  rk__context_hold(ctx);
  if (__atomic_exchange_n(&r->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    pthread_join(r->thread, NULL);
    relaunch_free(r);
    rk__context_unhold(ctx);
  }
}

void rk__relaunch_counts(const rk__relaunch_t *r, uint64_t *out_batches,
                         uint64_t *out_requests) {
  *out_batches = __atomic_load_n(&r->batches, __ATOMIC_RELAXED);
  *out_requests = __atomic_load_n(&r->requests, __ATOMIC_RELAXED);
}
