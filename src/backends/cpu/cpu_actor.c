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

#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/hlc.h"
#include "base/ring.h"
#include "base/sys.h"

enum { kBatch = 32 };

#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

struct rk__actor_worker {
  rk__actor_device_t dev;
  const rk__kentry_t *entry;
  void *state; /* the handler's state, owned here */
  pthread_t thread;
  int cpu; /* pinned CPU or -1 */
  uint64_t spin_ns;
  uint32_t abandoned; /* atomic: the worker frees itself when it stops */
};

static void worker_free(rk__actor_worker_t *w) {
  free(w->state);
  free(w);
}

/* The run state as the host sees it, written only when it changes. */
static void set_run_state(rk_abi_control_t *c, uint32_t *cached,
                          rk_abi_run_state_t s) {
  if (*cached != (uint32_t)s) {
    *cached = (uint32_t)s;
    STORE_RELEASE(&c->run_state, (uint32_t)s);
  }
}

/* Handles up to `n` published requests; returns how many. */
static uint32_t handle_batch(rk__actor_worker_t *w, rk__ring_end_t *in,
                             rk__ring_end_t *out, uint32_t n) {
  rk_abi_control_t *c = w->dev.control;
  const rk__klaunch_t kl = {{1, 1, 1}, {1, 1, 1}, NULL, NULL, NULL};
  uint32_t done = 0;
  uint64_t errors = 0;
  int32_t last_error = 0;
  for (; done < n; ++done) {
    unsigned char *dst = rk__ring_reserve_at(out, done);
    if (!dst) break; /* output full: publish what we have */
    const unsigned char *src = rk__ring_peek(in, done);
    const rk_abi_msg_t *req = (const rk_abi_msg_t *)src;
    rk_abi_msg_t *resp = (rk_abi_msg_t *)dst;
    resp->code = 0;
    /* Kernel arguments: each points at the argument's bytes, here device
     * pointers into the slots themselves (no copies). */
    void *in_p = (void *)(src + RK_ABI_MSG_HEADER);
    void *out_p = dst + RK_ABI_MSG_HEADER;
    void *state_p = w->state;
    void *status_p = &resp->code;
    void *args[4];
    unsigned k = 0;
    args[k++] = &in_p;
    args[k++] = &out_p;
    if (w->dev.has_state) args[k++] = &state_p;
    if (w->dev.has_status) args[k++] = &status_p;
    w->entry->run_blocks(&kl, 0, 1, args);
    resp->correlation_id = req->correlation_id;
    resp->timestamp = rk__hlc_merge(&c->clock, req->timestamp);
    resp->type = RK_ABI_MSG_RESPONSE;
    resp->size = c->out_payload;
    resp->status = resp->code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK;
    if (resp->code) {
      ++errors;
      last_error = resp->code;
    }
  }
  if (done == 0) return 0;
  /* Counters before the responses: a host that has seen a response also
   * sees it counted. */
  if (errors) {
    __atomic_store_n(&c->last_error, last_error, __ATOMIC_RELAXED);
    __atomic_store_n(&c->errors, c->errors + errors, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&c->processed, c->processed + done, __ATOMIC_RELAXED);
  rk__ring_publish(out, done);
  rk__ring_signal_data(out->hdr);
  rk__ring_release(in, done);
  rk__ring_signal_space(in->hdr);
  return done;
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *worker_main(void *arg) {
  rk__actor_worker_t *w = arg;
  pin(w->cpu);
  rk_abi_control_t *c = w->dev.control;
  rk__ring_end_t in, out;
  rk__ring_attach(&in, w->dev.in, w->dev.in_slots, false);
  rk__ring_attach(&out, w->dev.out, w->dev.out_slots, true);
  uint32_t run_state = RK_ABI_RUN_STARTING;
  uint64_t idle_since = 0;
  for (;;) {
    /* Read before the control block: a request the host makes after this
     * read changes the sequence, so the waits below cannot miss it. */
    const uint32_t seq = rk__ring_data_seq(in.hdr);
    if (LOAD_ACQUIRE(&c->terminate)) {
      /* Requests accepted before termination still get their answers. */
      uint64_t avail = rk__ring_available(&in);
      if (avail == 0) break;
      uint32_t n = avail < kBatch ? (uint32_t)avail : kBatch;
      if (handle_batch(w, &in, &out, n) == 0)
        rk__ring_wait_space(out.hdr, out.own, rk__now_ns() + 1000000u);
      continue;
    }
    if (!LOAD_ACQUIRE(&c->active)) {
      set_run_state(c, &run_state, RK_ABI_RUN_IDLE);
      /* Wait for a kick (activate, terminate): pass the current tail so
       * queued requests do not count as news. */
      rk__ring_wait_data_since(in.hdr, LOAD_ACQUIRE(&in.hdr->tail), seq, 0);
      continue;
    }
    set_run_state(c, &run_state, RK_ABI_RUN_ACTIVE);
    uint64_t avail = rk__ring_available(&in);
    if (avail) {
      idle_since = 0;
      uint32_t n = avail < kBatch ? (uint32_t)avail : kBatch;
      if (handle_batch(w, &in, &out, n) == 0) {
        /* Output ring full: wait for the host to drain it, looking at the
         * control block every millisecond. */
        rk__ring_wait_space(out.hdr, out.own, rk__now_ns() + 1000000u);
      }
      continue;
    }
    uint64_t now = rk__now_ns();
    if (!idle_since) idle_since = now;
    if (now - idle_since < w->spin_ns) {
      for (int i = 0; i < 128 && !rk__ring_available(&in); ++i) rk__cpu_relax();
      continue;
    }
    rk__ring_wait_data_since(in.hdr, in.own, seq, 0);
    idle_since = 0;
  }
  set_run_state(c, &run_state, RK_ABI_RUN_STOPPED);
  STORE_RELEASE(&c->terminated, 1u);
  /* The host waits for `terminated` on the output ring's wake sequence. */
  rk__ring_kick(out.hdr);
  if (__atomic_exchange_n(&w->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    pthread_detach(pthread_self());
    worker_free(w);
  }
  return NULL;
}

/* A CPU for the worker: not the caller's, spread over the allowed ones. */
static int pick_cpu(void) {
  static unsigned next;
  int cpus[1024];
  int n = rk__allowed_cpus(cpus, 1024);
  if (n < 2) return -1;
  int here = sched_getcpu();
  unsigned start = __atomic_fetch_add(&next, 1u, __ATOMIC_RELAXED);
  for (int i = 0; i < n; ++i) {
    int cpu = cpus[(start + (unsigned)i) % (unsigned)n];
    if (cpu != here) return cpu;
  }
  return -1;
}

rk_status_t rk__cpu_actor_start(rk_context_t *context,
                                const rk__actor_device_t *dev,
                                rk__actor_worker_t **out_worker) {
  (void)context;
  cpu_module_t *mod = (cpu_module_t *)dev->function->module;
  size_t index = (size_t)(dev->function - mod->base.functions);
  rk__actor_worker_t *w = calloc(1, sizeof *w);
  if (!w) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: actor worker");
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
  long spin_us = 200;
  rk__env_long("RK_ACTOR_SPIN_US", 0, 1000000, &spin_us);
  w->spin_ns = (uint64_t)spin_us * 1000u;
  w->cpu = pick_cpu();
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
   * its loop) frees the worker. */
  if (__atomic_exchange_n(&w->abandoned, 1u, __ATOMIC_ACQ_REL)) {
    pthread_join(w->thread, NULL);
    worker_free(w);
  }
}
