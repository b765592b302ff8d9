/* Persistent actors on the CPU: one worker thread per actor, pinned to a
 * CPU other than the launching thread's, running the handler kernel of a
 * compiled module directly (one thread, one block) on each request.
 *
 * The worker spins on the input ring for RK_ACTOR_SPIN_US (default 200 µs)
 * after its last message, then parks on the ring's wake sequence; senders
 * wake it only when it has said it is parked (see base/ring.h), so a busy
 * actor makes no system calls and an idle one uses no CPU. Requests that
 * are already published are handled in batches of up to kBatch: responses
 * and released slots are published once per batch.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "actor/k2k_internal.h"
#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/hlc.h"
#include "base/sys.h"
#include "hal/actor_loop.h"

enum { kBatch = 32 };

struct rk__actor_worker {
  rk__actor_device_t dev;
  const rk__kentry_t *entry;
  void *state; /* the handler's state, owned here */
  pthread_t thread;
  int cpu; /* pinned CPU or -1 */
  uint64_t spin_ns;
  uint32_t abandoned; /* atomic: the worker frees itself when it stops */
  /* Messages to other actors: the handler's port arguments (pointers to
   * the K2K outboxes and control words); kept NULL without ports. */
  rk__k2k_t *k2k;
  uint32_t nports;
  void *port_p[1 + RK__K2K_MAX_PORTS];
  unsigned char *scratch; /* the response to an inbox message (dropped) */
  /* Physical time for the clock, read once per kPhysEvery batches: the
   * requests' and messages' stamps, merged first, carry their senders'
   * physical time in between (one process clock on the host). */
  uint64_t phys;
  uint32_t phys_age;
  /* The worker thread's kernel state in the handler's module, asked once
   * (rk__kmodule_t.state): each launch hands it over, so that the module
   * does not look its thread-local state up on every message. */
  rk__kstate_t *kstate;
};

enum { kPhysEvery = 64 };

/* The physical time a batch stamps with (see phys above). */
static uint64_t batch_phys(rk__actor_worker_t *w) {
  if (w->phys_age++ % kPhysEvery == 0) w->phys = rk__hlc_physical();
  return w->phys;
}

static void unpick_cpu(int cpu);

static void worker_free(rk__actor_worker_t *w) {
  unpick_cpu(w->cpu);
  free(w->scratch);
  free(w->state);
  free(w);
}

/* The handler's arguments: in, out[, state][, status][, rk_ports,
 * rk_port<p>...]; each points at the argument's bytes. Returns how many. */
static unsigned handler_args(rk__actor_worker_t *w, void **args, void **in_p,
                             void **out_p, void **state_p, void **status_p) {
  unsigned k = 0;
  args[k++] = in_p;
  args[k++] = out_p;
  if (w->dev.has_state) args[k++] = state_p;
  if (w->dev.has_status) args[k++] = status_p;
  if (w->nports) {
    args[k++] = &w->port_p[0];
    for (uint32_t p = 0; p < w->nports; ++p)
      if (w->port_p[1 + p]) args[k++] = &w->port_p[1 + p];
  }
  return k;
}

/* A receive event on a local copy of the clock: max(clock + 1, received +
 * 1, physical now). */
static uint64_t local_merge(uint64_t clock, uint64_t received, uint64_t phys) {
  uint64_t t = clock + 1;
  if (received + 1 > t) t = received + 1;
  return phys > t ? phys : t;
}

/* The handler once, on the messages the arguments point at: through the
 * slot wrapper (thread 0's part of the kernel, without its test of the
 * thread index) where the module has one, else as one block of one
 * thread. */
static inline void run_one(const rk__actor_worker_t *w, const rk__klaunch_t *kl,
                           void *const *args) {
  static const uint32_t kNoStride[4 + 1 + RK__K2K_MAX_PORTS];
  if (w->entry->run_slots)
    w->entry->run_slots(kl, 1, kNoStride, args);
  else
    w->entry->run_blocks(kl, 0, 1, args);
}

/* handle_batch for a handler without ports while nobody traces: the
 * module's slot wrapper runs the handler on each run of requests whose
 * slots, and their answers' slots, follow one another in both rings (one
 * call per run, the handler inlined into its loop); then the answers'
 * headers. */
static uint32_t handle_runs(rk__actor_worker_t *w, rk__ring_end_t *in,
                            rk__ring_end_t *out, uint32_t n) {
  rk_abi_control_t *c = w->dev.control;
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL, w->kstate};
  const uint64_t phys = batch_phys(w);
  uint64_t clock = __atomic_load_n(&c->clock, __ATOMIC_RELAXED);
  int32_t codes[kBatch];
  void *in_p = NULL, *out_p = NULL, *state_p = w->state, *status_p = codes;
  void *args[4 + 1 + RK__K2K_MAX_PORTS];
  uint32_t stride[4 + 1 + RK__K2K_MAX_PORTS] = {0};
  const unsigned nargs =
      handler_args(w, args, &in_p, &out_p, &state_p, &status_p);
  stride[0] = in->slot_size;
  stride[1] = out->slot_size;
  if (w->dev.has_status) stride[nargs - 1] = sizeof codes[0]; /* the last */
  uint32_t done = 0;
  uint64_t errors = 0;
  int32_t last_error = 0;
  if (n > kBatch) n = kBatch;
  while (done < n) {
    unsigned char *dst = rk__ring_reserve_at(out, done);
    if (!dst) break; /* output full: publish what we have */
    uint32_t run = n - done;
    const uint64_t in_end = in->mask + 1 - ((in->own + done) & in->mask);
    const uint64_t out_end = out->mask + 1 - ((out->own + done) & out->mask);
    if (run > in_end) run = (uint32_t)in_end;
    if (run > out_end) run = (uint32_t)out_end;
    /* Room for the whole run (a failed reserve has just loaded head). */
    if (!rk__ring_reserve_at(out, done + run - 1))
      run = (uint32_t)(out->other + out->mask + 1 - out->own - done);
    in_p = (unsigned char *)rk__ring_peek(in, done) + RK_ABI_MSG_HEADER;
    out_p = dst + RK_ABI_MSG_HEADER;
    if (w->dev.has_status) memset(codes, 0, run * sizeof codes[0]);
    w->entry->run_slots(&kl, run, stride, args);
    for (uint32_t m = 0; m < run; ++m) {
      const rk_abi_msg_t *req = rk__ring_peek(in, done + m);
      rk_abi_msg_t *resp = rk__ring_reserve_at(out, done + m);
      const int32_t code = w->dev.has_status ? codes[m] : 0;
      clock = rk__actor_respond_local(c, req, resp, code, clock, phys);
      if (code) {
        ++errors;
        last_error = code;
      }
    }
    done += run;
  }
  __atomic_store_n(&c->clock, clock, __ATOMIC_RELAXED);
  if (done) rk__actor_commit(c, in, out, done, errors, last_error);
  return done;
}

/* Runs the handler on up to `n` published requests, in place in the
 * slots; returns how many (see rk__actor_batch_fn). */
static uint32_t handle_batch(void *ctx, rk__ring_end_t *in, rk__ring_end_t *out,
                             uint32_t n) {
  rk__actor_worker_t *w = ctx;
  if (w->entry->run_slots && !w->nports && !rk__trace_on())
    return handle_runs(w, in, out, n);
  rk_abi_control_t *c = w->dev.control;
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL, w->kstate};
  uint32_t done = 0;
  uint64_t errors = 0;
  const uint64_t phys = batch_phys(w);
  /* The worker is the clock's only writer: tick a copy, store it once. */
  uint64_t clock = __atomic_load_n(&c->clock, __ATOMIC_RELAXED);
  int32_t last_error = 0;
  /* Kernel arguments: each points at the argument's bytes, here device
   * pointers into the slots themselves (no copies). Set up once: per
   * message only the slot pointers and the status change (every store in
   * the loop waits behind the one to the response slot, see the launch
   * wrapper in cpu_compile.c). */
  void *in_p = NULL, *out_p = NULL, *state_p = w->state;
  int32_t code = 0;
  void *status_p = &code;
  void *args[4 + 1 + RK__K2K_MAX_PORTS];
  handler_args(w, args, &in_p, &out_p, &state_p, &status_p);
  for (; done < n; ++done) {
    unsigned char *dst = rk__ring_reserve_at(out, done);
    if (!dst) break; /* output full: publish what we have */
    const unsigned char *src = rk__ring_peek(in, done);
    rk_abi_msg_t *resp = (rk_abi_msg_t *)dst;
    code = 0;
    in_p = (void *)(src + RK_ABI_MSG_HEADER);
    out_p = dst + RK_ABI_MSG_HEADER;
    const rk_abi_msg_t *req = (const rk_abi_msg_t *)src;
    const bool traced = rk__trace_on();
    rk__trace_span_t span;
    if (traced) rk__trace_span_begin(&span, "handler");
    /* Sends go straight into the receivers' inboxes after the call,
     * stamped after the request (merged first). */
    if (w->nports) {
      clock = local_merge(clock, req->timestamp, phys);
      rk__k2k_prepare(w->k2k, RK__K2K_OUTBOX);
    }
    run_one(w, &kl, args);
    if (w->nports) rk__k2k_deliver(w->k2k, ++clock);
    clock = rk__actor_respond_local(c, req, resp, code, clock, phys);
    if (traced)
      rk__actor_trace_handled(&span, rk_function_name(w->dev.function), &req, 1,
                              1, req->correlation_id, code);
    if (code) {
      ++errors;
      last_error = code;
    }
  }
  __atomic_store_n(&c->clock, clock, __ATOMIC_RELAXED);
  if (done) rk__actor_commit(c, in, out, done, errors, last_error);
  return done;
}

/* The handler on one request beside the rings (rk__actor_direct_fn): as
 * handle_batch does it for a batch of one, the counters as
 * rk__actor_commit keeps them. */
static void handle_direct(void *ctx, const rk_abi_msg_t *req,
                          rk_abi_msg_t *resp) {
  rk__actor_worker_t *w = ctx;
  rk_abi_control_t *c = w->dev.control;
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL, w->kstate};
  const uint64_t phys = batch_phys(w);
  uint64_t clock = __atomic_load_n(&c->clock, __ATOMIC_RELAXED);
  int32_t code = 0;
  void *in_p = (unsigned char *)(uintptr_t)req + RK_ABI_MSG_HEADER,
       *out_p = (unsigned char *)resp + RK_ABI_MSG_HEADER, *state_p = w->state,
       *status_p = &code;
  void *args[4 + 1 + RK__K2K_MAX_PORTS];
  handler_args(w, args, &in_p, &out_p, &state_p, &status_p);
  if (w->nports) {
    clock = local_merge(clock, req->timestamp, phys);
    rk__k2k_prepare(w->k2k, RK__K2K_OUTBOX);
  }
  run_one(w, &kl, args);
  if (w->nports) rk__k2k_deliver(w->k2k, ++clock);
  clock = rk__actor_respond_local(c, req, resp, code, clock, phys);
  __atomic_store_n(&c->clock, clock, __ATOMIC_RELAXED);
  if (code) {
    __atomic_store_n(&c->last_error, code, __ATOMIC_RELAXED);
    __atomic_store_n(&c->errors, c->errors + 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&c->processed, c->processed + 1, __ATOMIC_RELAXED);
}

/* handle_inbox for a handler without ports while nobody traces: the
 * messages' stamps into the clock, then the slot wrapper on each run of
 * consecutive slots, every response into the one scratch answer. */
static uint32_t inbox_runs(rk__actor_worker_t *w, uint32_t n) {
  rk_abi_control_t *c = w->dev.control;
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL, w->kstate};
  const uint64_t phys = batch_phys(w);
  uint64_t clock = __atomic_load_n(&c->clock, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < n; ++i)
    clock = local_merge(clock, rk__k2k_inbox_timestamp(w->k2k, i), phys);
  int32_t codes[kBatch];
  void *in_p = NULL, *out_p = w->scratch, *state_p = w->state,
       *status_p = codes;
  void *args[4 + 1 + RK__K2K_MAX_PORTS];
  uint32_t stride[4 + 1 + RK__K2K_MAX_PORTS] = {0};
  const unsigned nargs =
      handler_args(w, args, &in_p, &out_p, &state_p, &status_p);
  if (w->dev.has_status) stride[nargs - 1] = sizeof codes[0]; /* the last */
  uint32_t errors = 0;
  for (uint32_t done = 0; done < n;) {
    uint32_t run = rk__k2k_inbox_run(w->k2k, done, &stride[0]);
    if (run > n - done) run = n - done;
    in_p = (void *)rk__k2k_inbox_payload(w->k2k, done);
    if (w->dev.has_status) memset(codes, 0, run * sizeof codes[0]);
    w->entry->run_slots(&kl, run, stride, args);
    if (w->dev.has_status)
      for (uint32_t m = 0; m < run; ++m) errors += codes[m] != 0;
    done += run;
  }
  __atomic_store_n(&c->clock, clock, __ATOMIC_RELAXED);
  rk__k2k_inbox_release(w->k2k, n, errors);
  return n;
}

/* Messages from other actors: the handler on each, in order, its response
 * dropped (nobody asked for it). */
static uint32_t handle_inbox(void *ctx, uint32_t max) {
  rk__actor_worker_t *w = ctx;
  /* Polled in a loop while the worker spins: the inbox's consumer end,
   * then a look at its next slot, inline. */
  rk__ring_end_t *inbox = rk__k2k_inbox_end(w->k2k);
  if (!inbox) return 0;
  uint64_t avail = rk__ring_available_upto(inbox, max);
  if (avail == 0) return 0;
  const uint32_t n = avail > max ? max : (uint32_t)avail;
  if (w->entry->run_slots && !w->nports && !rk__trace_on() && n <= kBatch)
    return inbox_runs(w, n);
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL, w->kstate};
  uint32_t errors = 0;
  rk_abi_control_t *c = w->dev.control;
  const uint64_t phys = batch_phys(w);
  /* The worker is the clock's only writer: tick a copy, store it once. */
  uint64_t clock = __atomic_load_n(&c->clock, __ATOMIC_RELAXED);
  int32_t code = 0;
  void *in_p = NULL, *out_p = w->scratch, *state_p = w->state,
       *status_p = &code;
  void *args[4 + 1 + RK__K2K_MAX_PORTS];
  handler_args(w, args, &in_p, &out_p, &state_p, &status_p);
  for (uint32_t i = 0; i < n; ++i) {
    const unsigned char *slot = rk__ring_peek(inbox, i);
    /* A receive event: what the handler does next (its sends, the
     * responses to later requests) is later than the message. */
    clock = local_merge(clock, ((const rk_abi_msg_t *)slot)->timestamp, phys);
    code = 0;
    in_p = (void *)(slot + RK_ABI_MSG_HEADER);
    if (w->nports) rk__k2k_prepare(w->k2k, RK__K2K_OUTBOX);
    run_one(w, &kl, args);
    if (w->nports) rk__k2k_deliver(w->k2k, ++clock);
    errors += code != 0;
  }
  __atomic_store_n(&c->clock, clock, __ATOMIC_RELAXED);
  rk__k2k_inbox_release(w->k2k, n, errors);
  return n;
}

static bool inbox_ready(void *ctx) {
  return rk__k2k_inbox_available_upto(((rk__actor_worker_t *)ctx)->k2k,
                                      RK__K2K_OUTBOX) != 0;
}

/* Best effort: containers may forbid it, macOS has no CPU affinity. */
static void pin(int cpu) {
  if (cpu >= 0) rk__pin_thread(pthread_self(), cpu);
}

static void *worker_main(void *arg) {
  rk__actor_worker_t *w = arg;
  pin(w->cpu);
  const rk__kmodule_t *desc = ((cpu_module_t *)w->dev.function->module)->desc;
  w->kstate = desc->state ? desc->state() : NULL;
  rk__set_thread_name("rk-actor");
  const rk__actor_loop_t loop = {.control = w->dev.control,
                                 .in = w->dev.in,
                                 .out = w->dev.out,
                                 .in_slots = w->dev.in_slots,
                                 .out_slots = w->dev.out_slots,
                                 .spin_ns = w->spin_ns,
                                 .host_busy = w->dev.host_busy,
                                 .park_idle = w->dev.park_idle,
                                 .idle = w->dev.idle,
                                 .cpus = w->dev.cpus,
                                 .batch = kBatch,
                                 .handle = handle_batch,
                                 .ctx = w,
                                 .inbox = w->k2k ? handle_inbox : NULL,
                                 .inbox_ready = w->k2k ? inbox_ready : NULL,
                                 .direct = handle_direct};
  rk__actor_loop_run(&loop);
  rk__k2k_stopped(w->k2k);
  if (__atomic_exchange_n(&w->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    /* Abandoned by rk__cpu_actor_release, which held the context (the
     * handler's code is one of its modules). */
    pthread_detach(pthread_self());
    rk_context_t *ctx = w->dev.function->module->context;
    worker_free(w);
    rk__context_unhold(ctx);
  }
  return NULL;
}

/* Actor workers pinned to each CPU (CPU numbers below kPinnedMax). */
enum { kPinnedMax = 1024 };
static uint32_t g_pinned[kPinnedMax];

/* A CPU for the worker: `want` when the caller chose one (it must be
 * allowed), else one of the allowed CPUs other than the caller's, with the
 * fewest live actor workers (round robin among equals). On two CPUs every
 * worker lands on the caller's other CPU: workers that take turns there
 * hand over without waking another CPU (a halo exchange of many tiles runs
 * twice as fast as spread over both), while two actors that message each
 * other back and forth run best on CPUs of their own (rk_actor_options_t
 * cpu). */
static int pick_cpu(int want) {
  static unsigned next;
  int cpus[1024];
  int n = rk__allowed_cpus(cpus, 1024);
  if (want >= 0) {
    if (want < kPinnedMax)
      __atomic_add_fetch(&g_pinned[want], 1u, __ATOMIC_RELAXED);
    return want < kPinnedMax ? want : -1;
  }
  if (n < 2) return -1;
  int here = rk__current_cpu();
  unsigned start = __atomic_fetch_add(&next, 1u, __ATOMIC_RELAXED);
  int best = -1;
  uint32_t best_actors = 0;
  for (int i = 0; i < n; ++i) {
    int cpu = cpus[(start + (unsigned)i) % (unsigned)n];
    if (cpu == here || cpu < 0 || cpu >= kPinnedMax) continue;
    uint32_t actors = __atomic_load_n(&g_pinned[cpu], __ATOMIC_RELAXED);
    if (best < 0 || actors < best_actors) {
      best = cpu;
      best_actors = actors;
    }
  }
  if (best >= 0) __atomic_add_fetch(&g_pinned[best], 1u, __ATOMIC_RELAXED);
  return best;
}

static void unpick_cpu(int cpu) {
  if (cpu >= 0 && cpu < kPinnedMax)
    __atomic_sub_fetch(&g_pinned[cpu], 1u, __ATOMIC_RELAXED);
}

rk_status_t rk__cpu_actor_start(rk_context_t *context,
                                const rk__actor_device_t *dev,
                                rk__actor_worker_t **out_worker) {
  (void)context;
  cpu_module_t *mod = (cpu_module_t *)dev->function->module;
  size_t index = (size_t)(dev->function - mod->base.functions);
  rk__actor_worker_t *w = calloc(1, sizeof *w);
  if (!w) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: actor worker");
  w->cpu = -1; /* not counted on any CPU yet */
  w->dev = *dev;
  w->dev.initial_state = NULL;
  w->entry = &mod->desc->entries[index];
  const uint32_t state_size = dev->control->state_size;
  if (dev->has_state) {
    w->state = calloc(1, state_size ? state_size : 1);
    if (!w->state) {
      free(w);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: actor state");
    }
    if (dev->initial_state) memcpy(w->state, dev->initial_state, state_size);
  }
  w->k2k = dev->k2k;
  w->nports = rk__k2k_nports(w->k2k);
  if (w->nports) {
    w->port_p[0] = rk__k2k_ctl(w->k2k);
    for (uint32_t p = 0; p < w->nports; ++p)
      w->port_p[1 + p] = rk__k2k_outbox(w->k2k, p);
  }
  w->scratch =
      calloc(1, dev->control->out_payload ? dev->control->out_payload : 1);
  if (!w->scratch) {
    worker_free(w);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: actor scratch");
  }
  w->spin_ns = rk__actor_spin_ns(false);
  w->cpu = pick_cpu(dev->cpu);
  int err = pthread_create(&w->thread, NULL, worker_main, w);
  if (err) {
    worker_free(w);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "cpu: cannot start the actor's worker thread (%s)",
                    strerror(err));
  }
  *out_worker = w;
  return RK_OK;
}

void rk__cpu_actor_release(rk__actor_worker_t *w, bool stopped) {
  if (stopped) {
    pthread_join(w->thread, NULL);
    worker_free(w);
    return;
  }
  /* Still in a handler: whoever comes second (this or the worker leaving
   * its loop) frees the worker; until then it holds the context. */
  rk_context_t *ctx = w->dev.function->module->context;
  rk__context_hold(ctx);
  if (__atomic_exchange_n(&w->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    pthread_join(w->thread, NULL);
    worker_free(w);
    rk__context_unhold(ctx);
  }
}

rk_status_t rk__cpu_actor_read_state(rk__actor_worker_t *w, void *dst,
                                     size_t size) {
  /* The worker has left its loop (the caller saw `terminated`, after the
   * worker's last write of the state). */
  if (w->state && size) memcpy(dst, w->state, size);
  return RK_OK;
}
