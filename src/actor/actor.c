/* Actors, host side: launch, lifecycle, send/receive/call with correlation,
 * traditional mode and statistics.
 *
 * Memory. One block holds the control block, both ring headers and both
 * rings' slots (from the backend's mapped_alloc where it has one). The
 * device side (a backend worker, see hal.h) consumes the input ring and
 * produces the output ring; the host is the other end of each.
 *
 * Input. Senders go through the multi-producer stage (base/ring.h, its
 * LOCK kind), so any number of threads may send while the ring keeps one
 * producer.
 *
 * Output. One host thread at a time holds the "drain role": it moves every
 * published response either to the rk_actor_call waiting for its
 * correlation id or to the receive queue, then releases the ring slots.
 * Threads without the role wait on `epoch`, which the drainer bumps when it
 * delivers something or gives the role up. A call that finds the role free
 * takes it before publishing its request and keeps it until its answer is
 * in (call_fast): nobody else can see that response, so it needs no
 * registration. A receive takes responses straight from the ring when the
 * receive queue is empty and no call is registered (take_direct).
 *
 * Traditional mode uses no device side: the sending thread copies the
 * request to the device, launches the handler kernel, waits for it and
 * publishes the response into the output ring itself (one launch per
 * request, serialised by a lock because the handler state is shared). A
 * call takes its answer straight from the staging area instead, so it never
 * needs an output slot: responses nobody received cannot hold it up.
 *
 * Stopping. When the actor leaves ACTIVE (deactivate, terminate, FAILED)
 * wake_waiters() bumps every wake sequence a host thread may park on; each
 * waiter reads the sequence before it looks at the state, so none sleeps
 * through it (tests/model/ring.pml, -DSTOP_WAIT and -DSTOP_SEND). Senders
 * still waiting for room are refused; waiters of a TERMINATED or FAILED
 * actor drain once more and then give up with RK_ERR_INVALID_STATE.
 * Calls, traditional sends and any thread that waits are counted
 * (`waiting`) until they return, and rk_actor_destroy frees nothing before
 * they have.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor/actor_relaunch.h"
#include "actor/k2k_internal.h"
#include "base/bias.h"
#include "base/error.h"
#include "base/hlc.h"
#include "base/ring.h"
#include "base/sys.h"
#include "base/trace.h"
#include "hal/actor_loop.h"
#include "rk/codegen.h"

#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

enum {
  kLatencyWindow = 4096, /* round trips kept for the percentiles */
  kSampleEvery = 16,     /* calls timed: one in this many */
  /* Pipelined sends timed: one in this many. Each costs two clock reads and
   * the host lock, about 1 ns a message at 1 in 64 where 1 in 16 cost 4. */
  kSendSampleEvery = 64,
  kSampleTable = 256,
  kDefaultCapacity = 1024,
  kPolledParkNs = 20000,   /* see park_ns */
  kCrowdedSleepNs = 50000, /* see wait_input_space */
};

/* A pending rk_actor_call, on its caller's stack. */
typedef struct waiter {
  struct waiter *next;
  uint64_t id;
  void *response;
  size_t capacity;
  /* Where the response's details go: the caller's out_info, or `own`
   * (filled in place: a copy of a just-written struct waits for its
   * narrow stores to land). */
  rk_actor_message_t *info;
  rk_actor_message_t own;
  uint32_t done; /* atomic; set by the drainer under host_lock */
} waiter_t;

struct rk_actor {
  /* The input stage first: its fields are aligned to RK_ABI_LINE. */
  rk__ring_mp_t in_mp;

  rk_context_t *context;
  rk_module_t *module;
  rk_function_t *function;
  rk_function_t *batch_function; /* rk_batch_<handler>, relaunch only */
  rk_actor_mode_t mode;
  rk_actor_execution_t execution;
  /* A proxy for an actor in another process (actor_internal.h): nothing
   * else here is set, and every entry point forwards. */
  struct rk_remote_actor *remote;
  bool external;  /* no device side: a test drives it */
  uint32_t state; /* rk_actor_state_t; atomic */
  uint32_t in_size, out_size, state_size;
  bool has_state, has_status;
  uint64_t spin_ns;
  /* Longest a host wait parks before looking at the rings again: 1 ms
   * when the device side wakes parked hosts, short when it cannot (a GPU
   * kernel) and the host polls. */
  uint64_t park_ns;

  void *mapped; /* the block below, from mapped_alloc or aligned_alloc */
  bool mapped_by_backend;
  rk_abi_control_t *control;
  rk__actor_device_t device;
  rk__actor_worker_t *worker;
  rk__relaunch_t *relaunch;
  rk__k2k_t *k2k; /* messages to and from other actors (k2k.c) */

  uint32_t cpus;        /* allowed CPUs */
  uint32_t park_idle;   /* atomic: rk__actor_park_when_idle */
  rk__idle_slot_t idle; /* rk__actor_offer_idle_work */
  /* Threads in a call or waiting in send/receive and not returned yet
   * (atomic): destroy waits for them, and they are who competes for the
   * CPUs with the device side (may_spin), which reads the count too. A
   * line of its own. */
  _Alignas(RK_ABI_LINE) uint32_t waiting;
  _Alignas(RK_ABI_LINE) char after_waiting_unused;

  /* Why the actor is FAILED: written once before the state. */
  char fail_reason[160];

  uint64_t next_id; /* atomic; correlation ids start at 1 */
  /* Atomic. `unsent` counts the ids taken whose request did not go (also
   * in `dropped`): the sends that went are next_id - 1 - unsent, with no
   * counter written on the way. */
  uint64_t unsent, dropped;
  /* Atomic: requests handled beside the rings (rk__actor_direct), sent
   * with no id. */
  uint64_t direct;

  /* Traditional mode. */
  pthread_mutex_t trad_lock;
  rk_devptr_t d_in, d_out, d_state, d_status;
  rk_stream_t *trad_stream;  /* copies in, launch, copies out: one sync */
  unsigned char *trad_stage; /* request, status, a response slot (mapped) */
  rk__ring_end_t trad_out;   /* producer end of the output ring */
  uint32_t trad_running;     /* atomic: a request is in the handler */
  uint64_t trad_processed, trad_errors; /* atomic */
  int32_t trad_last_error;              /* atomic */

  /* The host side's fast paths: while one thread alone sends to and
   * receives from the actor, it writes the input stage and takes ids and
   * responses without a locked instruction (base/bias.h). Everyone else
   * calls shared_host() before the stage's lock, next_id's fetch-add or
   * the drain role's exchange (the take_* helpers below do). */
  rk__bias_t host_bias;

  /* Output side. */
  uint32_t drain_role;  /* atomic flag */
  rk__ring_end_t out_c; /* consumer end; only the role holder uses it */
  uint32_t epoch, epoch_waiters; /* atomic */
  pthread_mutex_t host_lock;     /* waiters, receive queue, latencies */
  waiter_t *waiters;
  uint32_t nwaiters; /* atomic; written under host_lock: calls registered */
  unsigned char *rq; /* receive queue: whole output slots */
  size_t rq_cap, rq_head, rq_count;
  /* Zero-copy receive: the thread holding a loan (the address of its
   * t_loan_key; 0 when none, atomic), and the copies a loan hands out
   * when its responses had to leave the ring first. */
  uintptr_t loan_owner;
  unsigned char *loan_buf;
  size_t loan_cap;

  /* Latency. sample_t/sample_id: send times of sampled pipelined sends. */
  uint64_t sample_t[kSampleTable], sample_id[kSampleTable]; /* atomic */
  uint64_t *lat; /* kLatencyWindow samples (a proxy has none) */
  uint64_t lat_total;

  /* Supervision (supervise.c, via the hooks at the end): activate,
   * deactivate, terminate and a restart run one at a time; the state a
   * fresh restart starts from; traditional mode's device faults. */
  pthread_mutex_t ctl_lock;
  bool quiet_relaunch;  /* rk__actor_quiet_begin took the driver's role */
  void *fresh_state;    /* state_size bytes; NULL: zeroes */
  uint64_t trad_faults; /* atomic */
  int32_t trad_last_fault, trad_inject; /* atomic */
};

/* Actors abandoned by rk_actor_destroy with a handler still running: kept
 * reachable (their worker may still use the memory) until exit. */
static pthread_mutex_t g_abandoned_lock = PTHREAD_MUTEX_INITIALIZER;
static rk_actor_t *g_abandoned[64];
static size_t g_abandoned_count;

static const char *const kStateNames[] = {
    "launched", "active", "deactivated", "terminating", "terminated", "failed",
};

const char *rk_actor_state_name(rk_actor_state_t state) {
  if ((unsigned)state < sizeof kStateNames / sizeof kStateNames[0])
    return kStateNames[state];
  return "unknown";
}

const char *rk_actor_mode_name(rk_actor_mode_t mode) {
  switch (mode) {
    case RK_ACTOR_PERSISTENT:
      return "persistent";
    case RK_ACTOR_TRADITIONAL:
      return "traditional";
  }
  return "unknown";
}

const char *rk_actor_execution_name(rk_actor_execution_t execution) {
  switch (execution) {
    case RK_ACTOR_EXEC_RESIDENT:
      return "resident";
    case RK_ACTOR_EXEC_RELAUNCH:
      return "relaunch";
    case RK_ACTOR_EXEC_PER_REQUEST:
      return "per-request";
    case RK_ACTOR_EXEC_REMOTE:
      return "remote";
  }
  return "unknown";
}

void rk_actor_options_init(rk_actor_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->mode = RK_ACTOR_PERSISTENT;
  options->grid = rk_dim3(1, 1, 1);
  options->block = rk_dim3(1, 1, 1);
  options->input_capacity = kDefaultCapacity;
  options->output_capacity = kDefaultCapacity;
  options->auto_activate = true;
  options->cpu = RK_ACTOR_CPU_ANY;
}

/* Before a shared protocol on the host side: the input stage's lock,
 * next_id's fetch-add, the drain role's exchange. Revokes the bias of
 * another thread that owns the host side (waiting, at most, for the rest
 * of its current fast send or receive); free for the owner. */
static inline void shared_host(rk_actor_t *a) { rk__bias_share(&a->host_bias); }

/* The drain role, shared: true when the caller now holds it. */
static bool take_role(rk_actor_t *a) {
  shared_host(a);
  return LOAD_RELAXED(&a->drain_role) == 0 &&
         __atomic_exchange_n(&a->drain_role, 1u, __ATOMIC_ACQUIRE) == 0;
}

/* `n` correlation ids: the first. The owner of the host side takes them
 * with a load and a store, everyone else with a fetch-add. */
static uint64_t take_ids(rk_actor_t *a, uint64_t n) {
  if (rk__bias_enter(&a->host_bias)) {
    const uint64_t id = __atomic_load_n(&a->next_id, __ATOMIC_RELAXED);
    __atomic_store_n(&a->next_id, id + n, __ATOMIC_RELAXED);
    rk__bias_leave(&a->host_bias);
    return id;
  }
  shared_host(a);
  return __atomic_fetch_add(&a->next_id, n, __ATOMIC_RELAXED);
}

/* One request into the input stage, quietly (no signal): the owner of the
 * host side without the stage's lock. RK_ERR_QUEUE_FULL when it does not
 * fit. */
static rk_status_t stage_send(rk_actor_t *a, const rk_abi_msg_t *m,
                              const void *request) {
  if (rk__bias_enter(&a->host_bias)) {
    const rk_status_t s =
        rk__ring_mp_send_alone(&a->in_mp, m, request, a->in_size, NULL, NULL);
    rk__bias_leave(&a->host_bias);
    return s;
  }
  shared_host(a);
  return rk__ring_mp_send_quiet(&a->in_mp, m, request, a->in_size, NULL);
}

static rk_actor_state_t get_state(const rk_actor_t *a) {
  return (rk_actor_state_t)LOAD_ACQUIRE(&a->state);
}

static void set_state(rk_actor_t *a, rk_actor_state_t s) {
  STORE_RELEASE(&a->state, (uint32_t)s);
}

/* A timeout whose deadline is computed when first needed, so calls that
 * never wait never read the clock for it. */
typedef struct limit {
  uint64_t timeout_ns;
  uint64_t deadline; /* 0 until computed (and for RK_TIMEOUT_INFINITE) */
} limit_t;

static limit_t limit_of(uint64_t timeout_ns, uint64_t start_ns) {
  limit_t l = {timeout_ns, 0};
  if (start_ns && timeout_ns != RK_TIMEOUT_INFINITE)
    l.deadline = start_ns + (timeout_ns ? timeout_ns : 1);
  return l;
}

static uint64_t deadline_after(uint64_t timeout_ns);

static uint64_t limit_deadline(limit_t *l) {
  if (!l->deadline && l->timeout_ns != RK_TIMEOUT_INFINITE)
    l->deadline = deadline_after(l->timeout_ns);
  return l->deadline;
}

static uint64_t deadline_after(uint64_t timeout_ns) {
  if (timeout_ns == RK_TIMEOUT_INFINITE) return 0; /* no deadline */
  uint64_t now = rk__now_ns();
  return now + (timeout_ns ? timeout_ns : 1); /* 0: expired right away */
}

static bool expired(uint64_t deadline) {
  return deadline != 0 && rk__now_ns() >= deadline;
}

/* Whether a host thread waiting on the actor may spin: the threads in
 * calls or waiting (`waiting`, this one included) and the device side's
 * thread fit on the allowed CPUs. With more, spinning takes the CPU from
 * the thread being waited for: park at once. Sends and receives that do
 * not wait are not counted: counting them would cost every message two
 * atomic operations on a shared line. */
/* A sender waiting for input space (`seq` read before it looked at the
 * state), until `slice`. With more threads waiting on the actor than
 * CPUs, it sleeps a fixed while instead of parking on the ring: the device
 * side signals space after every batch it answers, and every parked sender
 * would wake, and take a CPU from the device side and the receivers, for
 * each. A full ring drains in about the sleep; the state is looked at
 * again after it. */
static void wait_input_space(rk_actor_t *a, uint32_t seq, uint64_t slice) {
  if (LOAD_RELAXED(&a->waiting) + 1 <= a->cpus) {
    rk__ring_mp_wait_space_since(&a->in_mp, seq, slice);
    return;
  }
  const uint64_t now = rk__now_ns();
  if (slice <= now) return;
  uint64_t ns = kCrowdedSleepNs;
  if (slice - now < ns) ns = slice - now;
  struct timespec ts = {0, (long)ns};
  nanosleep(&ts, NULL);
}

static bool may_spin(rk_actor_t *a) {
  return a->spin_ns &&
         rk__actor_may_spin(LOAD_RELAXED(&a->waiting) + 1, a->cpus);
}

/* ---- Launch -------------------------------------------------------------- */

static bool pow2(uint32_t v) { return v && (v & (v - 1)) == 0; }

static rk_status_t check_options(const rk_actor_options_t *o) {
  if (o->mode != RK_ACTOR_PERSISTENT && o->mode != RK_ACTOR_TRADITIONAL)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor: unknown mode %d",
                    (int)o->mode);
  if (!pow2(o->input_capacity) || !pow2(o->output_capacity) ||
      o->input_capacity > (1u << 24) || o->output_capacity > (1u << 24))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor: capacities must be powers of two in 1..2^24 "
                    "(input %u, output %u)",
                    o->input_capacity, o->output_capacity);
  const rk_dim3_t g = o->grid, b = o->block;
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor: grid and block dimensions must be at least 1");
  if (o->initial_state_size && !o->initial_state)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor: initial_state_size without initial_state");
  if (o->cpu != RK_ACTOR_CPU_ANY) {
    int cpus[1024];
    const int n = rk__allowed_cpus(cpus, 1024);
    bool allowed = false;
    for (int i = 0; i < n && !allowed; ++i) allowed = cpus[i] == o->cpu;
    if (!allowed)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "actor: cpu %d is not a CPU this process may run on "
                      "(%d allowed%s; RK_ACTOR_CPU_ANY lets rk choose)",
                      o->cpu, n > 0 ? n : 0,
                      n > 0 ? ", see sched_getaffinity" : "");
  }
  return RK_OK;
}

/* Finds the handler and its message sizes. */
static rk_status_t describe_handler(rk_actor_t *a, const char *source,
                                    const char *handler,
                                    const rk_actor_options_t *o) {
  rk_transpile_options_t to;
  rk_transpile_options_init(&to);
  to.source_name = o->source_name;
  to.entry = handler;
  rk_entry_list_t *list = NULL;
  rk_status_t s = rk_codegen_list_entries(source, &to, &list, NULL);
  if (s != RK_OK) return rk__fail_context(s, "actor '%s'", handler);
  const rk_entry_t *e = &list->entries[0];
  if (e->kind != RK_ENTRY_HANDLER) {
    /* No handler of that name: the name is a kernel or a stencil. */
    rk__fail(RK_ERR_NOT_FOUND,
             "actor: '%s' is a %s, not an RK_HANDLER (the source has no "
             "handler of that name)",
             handler, rk_entry_kind_name(e->kind));
    rk_entry_list_destroy(list);
    return RK_ERR_NOT_FOUND;
  }
  a->has_status = e->handler_status;
  /* The handler's own parameters (not rk_status, rk_ports, rk_port<p>). */
  size_t user = 0;
  for (size_t i = 0; i < e->param_count; ++i)
    user += strncmp(e->params[i].name, "rk_", 3) != 0;
  a->in_size = (uint32_t)e->params[0].elem_size;
  a->out_size = (uint32_t)e->params[1].elem_size;
  a->has_state = user == 3;
  a->state_size = a->has_state ? (uint32_t)e->params[2].elem_size : 0;
  s = rk__k2k_create(e, a->in_size, o->input_capacity, a->mode, a->execution,
                     rk__hal_actor_polled(a->context), &a->k2k);
  rk_entry_list_destroy(list);
  if (s != RK_OK) return s;
  rk__k2k_set_owner(a->k2k, a);
  if (o->initial_state && o->initial_state_size != a->state_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor '%s': initial state is %zu bytes, the handler's "
                    "state is %u",
                    handler, o->initial_state_size, a->state_size);
  return RK_OK;
}

static rk_status_t compile_handler(rk_actor_t *a, const char *source,
                                   const char *handler,
                                   const rk_actor_options_t *o) {
  rk_compile_options_t co;
  rk_compile_options_init(&co);
  co.source_name = o->source_name;
  co.no_cache = o->no_cache;
  rk_status_t s = rk_context_compile(a->context, source, &co, &a->module);
  if (s != RK_OK) return rk__fail_context(s, "actor '%s'", handler);
  s = rk_module_get_function(a->module, handler, &a->function);
  if (s != RK_OK) return rk__fail_context(s, "actor '%s'", handler);
  if (a->execution == RK_ACTOR_EXEC_RELAUNCH) {
    char name[256];
    snprintf(name, sizeof name, "rk_batch_%s", handler);
    s = rk_module_get_function(a->module, name, &a->batch_function);
    if (s != RK_OK) return rk__fail_context(s, "actor '%s'", handler);
  }
  return RK_OK;
}

static size_t round_line(size_t n) {
  return (n + RK_ABI_LINE - 1) & ~(size_t)(RK_ABI_LINE - 1);
}

/* Control block, ring headers and slots in one block. */
static rk_status_t map_rings(rk_actor_t *a, const rk_actor_options_t *o) {
  const uint32_t in_slot = rk_abi_slot_size(a->in_size);
  const uint32_t out_slot = rk_abi_slot_size(a->out_size);
  const size_t off_in = round_line(sizeof(rk_abi_control_t));
  const size_t off_out = off_in + sizeof(rk_abi_ring_t);
  const size_t off_in_slots = off_out + sizeof(rk_abi_ring_t);
  const size_t off_out_slots = off_in_slots + round_line(rk__ring_slot_bytes(
                                                  o->input_capacity, in_slot));
  const size_t off_k2k = off_out_slots + round_line(rk__ring_slot_bytes(
                                             o->output_capacity, out_slot));
  /* A resident kernel that polls (GPU) reads its K2K wiring here. */
  const bool k2k_table = a->mode == RK_ACTOR_PERSISTENT &&
                         a->execution == RK_ACTOR_EXEC_RESIDENT &&
                         rk__hal_actor_polled(a->context);
  const size_t off_stage =
      off_k2k + (k2k_table ? round_line(sizeof(rk_abi_k2k_t)) : 0);
  /* Traditional mode stages each request, its status and a call's
   * response here: memory the device copies from and to directly where the
   * backend maps it (pinned). */
  const size_t total = off_stage + (a->mode == RK_ACTOR_TRADITIONAL
                                        ? round_line(a->in_size) + RK_ABI_LINE +
                                              round_line(out_slot)
                                        : 0);
  /* Mapped memory where the device reads the rings (a resident kernel) or
   * copies from the staging area (traditional mode); host memory for a
   * relaunch driver, which copies through the backend anyway. */
  const bool mapped = rk__hal_has_mapped_memory(a->context) &&
                      (a->execution == RK_ACTOR_EXEC_RESIDENT ||
                       (a->mode == RK_ACTOR_TRADITIONAL &&
                        (a->context->info.caps & RK_CAP_MAPPED_HOST_MEMORY)));
  if (mapped) {
    RK_RETURN_IF_ERROR(rk__hal_mapped_alloc(a->context, total, &a->mapped));
    a->mapped_by_backend = true;
  } else {
    a->mapped = aligned_alloc(RK_ABI_LINE, total);
    if (!a->mapped)
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: %zu bytes of ring memory",
                      total);
  }
  unsigned char *base = a->mapped;
  memset(base, 0, total);
  rk_abi_control_t *c = (rk_abi_control_t *)base;
  c->magic = RK_ABI_CONTROL_MAGIC;
  c->version = RK_ABI_VERSION;
  c->in_payload = a->in_size;
  c->out_payload = a->out_size;
  c->state_size = a->state_size;
  c->handler_flags = a->has_status ? RK_ABI_HANDLER_STATUS : 0;
  a->control = c;
  rk__actor_device_t *d = &a->device;
  d->function = a->function;
  d->control = c;
  d->in = (rk_abi_ring_t *)(base + off_in);
  d->out = (rk_abi_ring_t *)(base + off_out);
  d->in_slots = base + off_in_slots;
  d->out_slots = base + off_out_slots;
  if (a->mode == RK_ACTOR_TRADITIONAL) a->trad_stage = base + off_stage;
  if (k2k_table) {
    d->k2k_table = (rk_abi_k2k_t *)(base + off_k2k);
    d->k2k_mem_bytes = rk__k2k_device_bytes(a->k2k, a->out_size);
  }
  d->has_state = a->has_state;
  d->has_status = a->has_status;
  d->initial_state = o->initial_state;
  d->grid = o->grid;
  d->block = o->block;
  d->host_busy = &a->waiting;
  d->park_idle = &a->park_idle;
  d->idle = &a->idle;
  d->cpus = a->cpus;
  d->cpu = o->cpu;
  RK_RETURN_IF_ERROR(rk__ring_init(d->in, o->input_capacity, in_slot));
  RK_RETURN_IF_ERROR(rk__ring_init(d->out, o->output_capacity, out_slot));
  /* Slot marks where every producer is host code (base/ring.c): the input
   * ring always; the output ring unless a GPU kernel or an external
   * device side answers. */
  rk__ring_mark_slots(d->in);
  if (!(a->execution == RK_ACTOR_EXEC_RESIDENT &&
        (a->external || rk__hal_actor_polled(a->context))))
    rk__ring_mark_slots(d->out);
  /* LOCK, not CLAIM: with more senders than CPUs, a CLAIM producer
   * preempted between its claim and its publish holds up every producer
   * that claimed after it (they spin for their turn), while a LOCK holder
   * is preempted only inside a copy of one message. */
  rk__ring_mp_init(&a->in_mp, d->in, d->in_slots, RK__RING_MP_LOCK);
  rk__ring_attach(&a->out_c, d->out, d->out_slots, false);
  rk__ring_attach(&a->trad_out, d->out, d->out_slots, true);
  return RK_OK;
}

/* Device buffers of traditional mode. */
static rk_status_t trad_setup(rk_actor_t *a, const rk_actor_options_t *o) {
  /* A GPU backend queues a request's steps on a stream of the actor's own
   * and synchronizes once; the CPU backend's default stream runs on the
   * calling thread, which is faster than any hand-off. */
  if (!rk__hal_launch_on_caller(a->context))
    RK_RETURN_IF_ERROR(rk_context_create_stream(a->context, &a->trad_stream));
  RK_RETURN_IF_ERROR(rk_context_allocate(a->context, a->in_size, &a->d_in));
  RK_RETURN_IF_ERROR(rk_context_allocate(a->context, a->out_size, &a->d_out));
  RK_RETURN_IF_ERROR(rk_context_allocate(a->context, 4, &a->d_status));
  if (a->has_state) {
    RK_RETURN_IF_ERROR(
        rk_context_allocate(a->context, a->state_size, &a->d_state));
    void *zeros = NULL;
    const void *init = o->initial_state;
    if (!init) init = zeros = calloc(1, a->state_size);
    if (!init) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: state");
    rk_status_t s =
        rk_context_copy_to_device(a->context, a->d_state, init, a->state_size);
    free(zeros);
    RK_RETURN_IF_ERROR(s);
  }
  return RK_OK;
}

static void release(rk_actor_t *a);

/* A copy of the initial state, for a supervisor's fresh restarts. */
static rk_status_t keep_fresh_state(rk_actor_t *a,
                                    const rk_actor_options_t *o) {
  if (!o->initial_state || !a->state_size) return RK_OK;
  a->fresh_state = malloc(a->state_size);
  if (!a->fresh_state) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: state");
  memcpy(a->fresh_state, o->initial_state, a->state_size);
  return RK_OK;
}

static rk_status_t launch(rk_context_t *context, const char *source,
                          const char *handler, const rk_actor_options_t *opt,
                          bool external, rk_actor_t **out_actor) {
  if (!context || !source || !handler || !out_actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_launch: context, source, handler and out_actor are "
                    "required");
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  if (opt) o = *opt;
  RK_RETURN_IF_ERROR(check_options(&o));

  rk_actor_t *a = aligned_alloc(RK_ABI_LINE, round_line(sizeof *a));
  if (!a) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor");
  memset(a, 0, sizeof *a);
  a->lat = calloc(kLatencyWindow, sizeof *a->lat);
  if (!a->lat) {
    free(a);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor");
  }
  a->context = context;
  a->mode = o.mode;
  /* RK_ACTOR_RELAUNCH=1 emulates by relaunch even where the backend can
   * keep a handler resident (to compare the two, and to test relaunch on
   * the CPU backend). */
  long force_relaunch = 0;
  rk__env_long("RK_ACTOR_RELAUNCH", 0, 1, &force_relaunch);
  a->execution = o.mode == RK_ACTOR_TRADITIONAL ? RK_ACTOR_EXEC_PER_REQUEST
                 : external                     ? RK_ACTOR_EXEC_RESIDENT
                 : rk__hal_actor_resident(context) && !force_relaunch
                     ? RK_ACTOR_EXEC_RESIDENT
                     : RK_ACTOR_EXEC_RELAUNCH;
  a->external = external;
  a->next_id = 1;
  a->spin_ns = rk__actor_spin_ns(context->info.caps & RK_CAP_SOFTWARE);
  {
    int cpus[256];
    const int n = rk__allowed_cpus(cpus, 256);
    a->cpus = n > 0 ? (uint32_t)n : 1u;
  }
  a->park_ns = a->execution == RK_ACTOR_EXEC_RESIDENT && !external &&
                       rk__hal_actor_polled(context)
                   ? kPolledParkNs
                   : 1000000u;
  pthread_mutex_init(&a->trad_lock, NULL);
  pthread_mutex_init(&a->host_lock, NULL);
  pthread_mutex_init(&a->ctl_lock, NULL);
  set_state(a, RK_ACTOR_LAUNCHED);

  rk_status_t s = describe_handler(a, source, handler, &o);
  if (s == RK_OK) s = keep_fresh_state(a, &o);
  if (s == RK_OK) s = compile_handler(a, source, handler, &o);
  if (s == RK_OK) s = map_rings(a, &o);
  rk__bias_init(&a->host_bias);
  if (s == RK_OK) {
    rk__k2k_attach(a->k2k, a->control, a->device.in, a->device.k2k_table,
                   a->context);
    a->device.k2k = a->k2k;
  }
  if (s == RK_OK && a->mode == RK_ACTOR_TRADITIONAL) s = trad_setup(a, &o);
  if (s == RK_OK && a->execution == RK_ACTOR_EXEC_RELAUNCH) {
    rk__actor_device_t dev = a->device;
    dev.function = a->batch_function;
    s = rk__relaunch_start(context, &dev, a->spin_ns, &a->relaunch);
  } else if (s == RK_OK && a->mode == RK_ACTOR_PERSISTENT && !external) {
    s = rk__hal_actor_start(context, &a->device, &a->worker);
  }
  if (s != RK_OK) {
    release(a);
    return s;
  }
  if (o.auto_activate) {
    STORE_RELEASE(&a->control->active, 1u);
    set_state(a, RK_ACTOR_ACTIVE);
    rk__ring_kick(a->device.in);
  }
  *out_actor = a;
  return RK_OK;
}

rk_status_t rk_actor_launch(rk_context_t *context, const char *source,
                            const char *handler,
                            const rk_actor_options_t *options,
                            rk_actor_t **out_actor) {
  return launch(context, source, handler, options, false, out_actor);
}

rk_status_t rk__actor_launch_external(rk_context_t *context, const char *source,
                                      const char *handler,
                                      const rk_actor_options_t *options,
                                      rk_actor_t **out_actor,
                                      const rk__actor_device_t **out_device) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  if (options) o = *options;
  o.mode = RK_ACTOR_PERSISTENT;
  RK_RETURN_IF_ERROR(launch(context, source, handler, &o, true, out_actor));
  *out_device = &(*out_actor)->device;
  return RK_OK;
}

/* ---- Lifecycle ----------------------------------------------------------- */

static bool drain(rk_actor_t *a);
static void bump_epoch(rk_actor_t *a);

/* Nothing more will be answered: the device side confirmed it stopped, or
 * missed its deadline. */
static bool stopped_state(rk_actor_state_t s) {
  return s == RK_ACTOR_TERMINATED || s == RK_ACTOR_FAILED;
}

/* Wakes every host thread that may be parked on the actor so that it looks
 * at the state again: the drainer and terminate (the output ring's data
 * sequence), senders waiting for space (the space sequences: the input
 * ring's in persistent mode, the output ring's in traditional mode) and
 * threads waiting for the drain role (the epoch). Unconditional bumps: a
 * state change is rare, and a waiter that read a sequence before it looked
 * at the state finds it changed and does not sleep. */
static void wake_waiters(rk_actor_t *a) {
  rk__ring_kick(a->device.out);
  rk__ring_kick_space(a->device.in);
  rk__ring_kick_space(a->device.out);
  __atomic_fetch_add(&a->epoch, 1u, __ATOMIC_RELEASE);
  rk__wake_all(&a->epoch);
}

/* FAILED, because `why` (which completes "the actor failed (...)" in what
 * every waiter reports). */
static void fail(rk_actor_t *a, const char *why) {
  snprintf(a->fail_reason, sizeof a->fail_reason, "%s", why);
  set_state(a, RK_ACTOR_FAILED);
  /* Other actors' sends to it are refused from now on
   * (RK_SEND_UNCONNECTED), also while a device side that missed its stop
   * deadline still runs; a restart opens it again. */
  rk__k2k_stopped(a->k2k);
  wake_waiters(a);
}

/* RK_ERR_INVALID_STATE: `what` needs an ACTIVE actor. */
static rk_status_t not_active(const rk_actor_t *a, const char *what) {
  rk_actor_state_t st = get_state(a);
  if (st == RK_ACTOR_FAILED)
    return rk__fail(RK_ERR_INVALID_STATE, "%s: the actor failed (%s)", what,
                    a->fail_reason);
  return rk__fail(RK_ERR_INVALID_STATE, "%s: the actor is %s, not active", what,
                  rk_actor_state_name(st));
}

/* Before a thread first waits on the actor (a call or a traditional send:
 * as it starts): counted from then until it returns, so that destroy
 * frees nothing under it. */
static void count_waiting(rk_actor_t *a, bool *counted) {
  if (*counted) return;
  *counted = true;
  __atomic_fetch_add(&a->waiting, 1u, __ATOMIC_SEQ_CST);
}

/* The counted thread's last access to the actor. */
static void leave(rk_actor_t *a, bool counted) {
  if (counted) __atomic_fetch_sub(&a->waiting, 1u, __ATOMIC_RELEASE);
}

uint32_t rk__actor_waiting(const rk_actor_t *actor) {
  return __atomic_load_n(&actor->waiting, __ATOMIC_ACQUIRE);
}

/* Locks `m` before `deadline` (rk__now_ns clock; 0: no deadline): 0, or
 * ETIMEDOUT. */
static int lock_until(pthread_mutex_t *m, uint64_t deadline) {
  if (!deadline) return pthread_mutex_lock(m);
  const uint64_t now = rk__now_ns();
  if (now >= deadline) return pthread_mutex_trylock(m) == 0 ? 0 : ETIMEDOUT;
  return rk__mutex_lock_until(m, deadline); /* macOS has no timedlock */
}

static rk_status_t bad_transition(const rk_actor_t *a, const char *what) {
  return rk__fail(RK_ERR_INVALID_STATE, "actor: cannot %s an actor that is %s",
                  what, rk_actor_state_name(get_state(a)));
}

static rk_status_t actor_activate(rk_actor_t *actor) {
  rk_actor_state_t s = get_state(actor);
  if (s != RK_ACTOR_LAUNCHED && s != RK_ACTOR_DEACTIVATED)
    return bad_transition(actor, "activate");
  STORE_RELEASE(&actor->control->active, 1u);
  set_state(actor, RK_ACTOR_ACTIVE);
  rk__ring_kick(actor->device.in);
  return RK_OK;
}

static rk_status_t actor_deactivate(rk_actor_t *actor) {
  if (get_state(actor) != RK_ACTOR_ACTIVE)
    return bad_transition(actor, "deactivate");
  STORE_RELEASE(&actor->control->active, 0u);
  set_state(actor, RK_ACTOR_DEACTIVATED);
  rk__ring_kick(actor->device.in);
  /* Sends still waiting for space are refused now. */
  wake_waiters(actor);
  return RK_OK;
}

static rk_status_t actor_terminate(rk_actor_t *actor, uint64_t timeout_ns) {
  rk_actor_state_t st = get_state(actor);
  if (st == RK_ACTOR_TERMINATING || stopped_state(st))
    return bad_transition(actor, "terminate");
  set_state(actor, RK_ACTOR_TERMINATING);
  rk_abi_control_t *c = actor->control;
  STORE_RELEASE(&c->active, 0u);
  STORE_RELEASE(&c->terminate, RK_ABI_TERMINATE_DRAIN);
  wake_waiters(actor); /* sends waiting for space are refused now */
  const uint64_t deadline = deadline_after(timeout_ns);
  char why[160];
  snprintf(why, sizeof why,
           "the handler did not stop within %.3f ms of rk_actor_terminate",
           (double)timeout_ns / 1e6);
  if (actor->mode == RK_ACTOR_TRADITIONAL) {
    /* Nothing runs between requests: wait for the one running, if any. */
    if (lock_until(&actor->trad_lock, deadline) != 0) {
      fail(actor, why);
      return rk__fail(RK_ERR_TIMEOUT,
                      "actor: %s (a request was still running); the actor "
                      "is failed and can only be destroyed",
                      why);
    }
    STORE_RELEASE(&c->terminated, 1u);
    set_state(actor, RK_ACTOR_TERMINATED);
    pthread_mutex_unlock(&actor->trad_lock);
    wake_waiters(actor);
    return RK_OK;
  }
  rk__ring_kick(actor->device.in);
  /* The device side sets `terminated` and then kicks the output ring. */
  while (!LOAD_ACQUIRE(&c->terminated)) {
    if (expired(deadline)) {
      fail(actor, why);
      return rk__fail(RK_ERR_TIMEOUT,
                      "actor: %s; the actor is failed and can only be "
                      "destroyed",
                      why);
    }
    /* The device side answers every queued request before it stops, and
     * needs output slots for that: move the responses nobody has taken to
     * the receive queue (unless a waiting thread drains already). */
    if (take_role(actor)) {
      drain(actor);
      __atomic_store_n(&actor->drain_role, 0u, __ATOMIC_RELEASE);
      bump_epoch(actor);
    }
    uint64_t slice = rk__now_ns() + actor->park_ns;
    if (deadline && deadline < slice) slice = deadline;
    uint32_t seq = LOAD_ACQUIRE(&actor->device.out->data_seq);
    if (!LOAD_ACQUIRE(&c->terminated)) {
      /* Announced, then look again (terminated, and responses to move):
       * the device side's signal after publishing sees the count. */
      __atomic_fetch_add(&actor->device.out->data_waiters, 1u,
                         __ATOMIC_SEQ_CST);
      rk__ring_fence_heavy(); /* pairs with the light one in the signal */
      /* The slice may already be over (this thread was descheduled): an
       * unsigned remainder would wrap, and 0 means no timeout at all. */
      const uint64_t now = rk__now_ns();
      if (!LOAD_ACQUIRE(&c->terminated) &&
          LOAD_ACQUIRE(&actor->device.out->tail) ==
              LOAD_ACQUIRE(&actor->device.out->head) &&
          now < slice)
        rk__wait_while_equal(&actor->device.out->data_seq, seq, slice - now);
      __atomic_fetch_sub(&actor->device.out->data_waiters, 1u,
                         __ATOMIC_RELAXED);
    }
  }
  /* A resident kernel does not say it stopped to other actors: sends to
   * it answer RK_SEND_UNCONNECTED from now on (a CPU worker or relaunch
   * driver has said so already). */
  rk__k2k_stopped(actor->k2k);
  set_state(actor, RK_ACTOR_TERMINATED);
  wake_waiters(actor); /* waiters for what will never come give up */
  return RK_OK;
}

static void release(rk_actor_t *a) {
  const bool stopped = a->control && LOAD_ACQUIRE(&a->control->terminated);
  if (a->worker) rk__hal_actor_release(a->context, a->worker, stopped);
  if (a->relaunch) rk__relaunch_release(a->relaunch, stopped);
  rk__k2k_release(a->k2k);
  if (a->trad_stream) rk_stream_destroy(a->trad_stream);
  if (a->d_in) rk_context_free(a->context, a->d_in);
  if (a->d_out) rk_context_free(a->context, a->d_out);
  if (a->d_status) rk_context_free(a->context, a->d_status);
  if (a->d_state) rk_context_free(a->context, a->d_state);
  if (a->module) rk_module_destroy(a->module);
  if (a->mapped) {
    if (a->mapped_by_backend)
      rk__hal_mapped_free(a->context, a->mapped);
    else
      free(a->mapped);
  }
  free(a->rq);
  free(a->loan_buf);
  free(a->fresh_state);
  free(a->lat);
  pthread_mutex_destroy(&a->trad_lock);
  pthread_mutex_destroy(&a->host_lock);
  pthread_mutex_destroy(&a->ctl_lock);
  free(a);
}

void rk_actor_destroy(rk_actor_t *actor) {
  if (!actor) return;
  if (actor->remote) {
    rk__proxy_destroy(actor);
    return;
  }
  /* Out of its group, its links and the registry first: nothing starts
   * a restart or finds it by name from here on. The hooks before them:
   * a cluster withdraws its exports of the actor and its remote links. */
  rk__actor_destroy_hooks_run(actor);
  rk__supervise_forget(actor);
  rk__registry_forget(actor);
  if (!stopped_state(get_state(actor))) {
    char *saved = rk__error_save();
    rk_actor_terminate(actor, RK_TIMEOUT_INFINITE);
    rk__error_restore(saved);
  }
  /* Threads woken by the stop leave within microseconds: wait for them
   * (polling), unless a handler that never returned keeps the actor: a
   * device side that did not stop (its thread, the code and the rings), or
   * a traditional request still running on the thread that sent it. */
  bool stuck = (actor->worker || actor->relaunch) &&
               !LOAD_ACQUIRE(&actor->control->terminated);
  for (uint32_t n; !stuck && (n = LOAD_ACQUIRE(&actor->waiting)) != 0;) {
    stuck = LOAD_ACQUIRE(&actor->trad_running) != 0;
    if (!stuck) rk__wait_while_equal(&actor->waiting, n, 100000u);
  }
  if (stuck) {
    if (actor->worker)
      rk__hal_actor_release(actor->context, actor->worker, false);
    if (actor->relaunch) rk__relaunch_release(actor->relaunch, false);
    actor->worker = NULL;
    actor->relaunch = NULL;
    rk__module_abandon(actor->module);
    pthread_mutex_lock(&g_abandoned_lock);
    if (g_abandoned_count < sizeof g_abandoned / sizeof g_abandoned[0])
      g_abandoned[g_abandoned_count++] = actor;
    pthread_mutex_unlock(&g_abandoned_lock);
    return;
  }
  release(actor);
}

rk_actor_state_t rk_actor_state(const rk_actor_t *actor) {
  if (actor && actor->remote) return rk__proxy_state(actor);
  return actor ? get_state(actor) : RK_ACTOR_FAILED;
}

/* ---- Proxies (actor_internal.h) ------------------------------------------ */

rk_status_t rk__actor_proxy_new(struct rk_remote_actor *remote,
                                rk_actor_t **out_actor) {
  rk_actor_t *a = aligned_alloc(RK_ABI_LINE, round_line(sizeof *a));
  if (!a) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor proxy");
  memset(a, 0, sizeof *a);
  a->remote = remote;
  a->mode = RK_ACTOR_PERSISTENT;
  a->execution = RK_ACTOR_EXEC_REMOTE;
  *out_actor = a;
  return RK_OK;
}

struct rk_remote_actor *rk__actor_remote(const rk_actor_t *actor) {
  return actor ? actor->remote : NULL;
}

void rk__actor_proxy_free(rk_actor_t *actor) { free(actor); }

uint32_t *rk__actor_proxy_users(rk_actor_t *actor) { return &actor->waiting; }

/* ---- Latency ------------------------------------------------------------- */

/* Caller holds host_lock. */
static void record_latency(rk_actor_t *a, uint64_t ns) {
  a->lat[a->lat_total % kLatencyWindow] = ns;
  a->lat_total++;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* ---- Output side --------------------------------------------------------- */

/* Its address tells threads apart (rk_actor_t.loan_owner). */
static _Thread_local char t_loan_key;

static bool holds_loan(const rk_actor_t *a) {
  /* The thread-local's address only when a loan exists: it costs a call
   * into the dynamic linker in a shared library. */
  const uintptr_t owner = LOAD_RELAXED(&a->loan_owner);
  return owner != 0 && owner == (uintptr_t)&t_loan_key;
}

/* RK_ERR_INVALID_STATE for a thread that would wait for its own loan. */
static rk_status_t loan_held(const char *what) {
  return rk__fail(RK_ERR_INVALID_STATE,
                  "%s: this thread holds a loan of the actor's responses "
                  "(rk_actor_loan_release it first)",
                  what);
}

/* After giving up the drain role (having delivered something or not):
 * wakes threads waiting on the epoch, for their answers or for the role.
 * The light fence between the role's store and the count's load pairs with
 * the heavy one in wait_until between the count's increment and its look
 * at the role: either the waiter sees the role free, or this sees the
 * waiter. */
static void bump_epoch(rk_actor_t *a) {
  rk__ring_fence_light();
  if (LOAD_RELAXED(&a->epoch_waiters)) {
    __atomic_fetch_add(&a->epoch, 1u, __ATOMIC_RELEASE);
    rk__wake_all(&a->epoch);
  }
}

static rk_status_t rq_push(rk_actor_t *a, const unsigned char *slot,
                           uint32_t slot_size) {
  if (a->rq_count == a->rq_cap) {
    size_t cap = a->rq_cap ? a->rq_cap * 2 : 64;
    unsigned char *grown = malloc(cap * slot_size);
    if (!grown) return RK_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < a->rq_count; ++i)
      memcpy(grown + i * slot_size,
             a->rq + ((a->rq_head + i) % a->rq_cap) * slot_size, slot_size);
    free(a->rq);
    a->rq = grown;
    a->rq_cap = cap;
    a->rq_head = 0;
  }
  memcpy(a->rq + ((a->rq_head + a->rq_count) % a->rq_cap) * slot_size, slot,
         RK_ABI_MSG_HEADER + a->out_size);
  __atomic_fetch_add(&a->rq_count, 1u, __ATOMIC_RELAXED);
  return RK_OK;
}

static void fill_info(const rk_abi_msg_t *m, rk_actor_message_t *info) {
  info->correlation_id = m->correlation_id;
  info->timestamp = m->timestamp;
  info->size = m->size;
  switch (m->status) {
    case RK_ABI_MSG_OK:
      info->status = RK_OK;
      break;
    case RK_ABI_MSG_DEVICE_ERROR:
      info->status = m->code > 0 && m->code < RK_STATUS_COUNT_
                         ? (rk_status_t)m->code
                         : RK_ERR_INTERNAL;
      break;
    default:
      info->status = RK_ERR_HANDLER;
      break;
  }
  info->handler_code = m->code;
}

/* The host receives the first `n` published responses of `c`: the process
 * clock moves past their stamps before anyone sees them, so that a request
 * sent after one of them is stamped later (see rk/hlc.h). One update for
 * the latest stamp of the lot. */
static void observe_responses(rk__ring_end_t *c, uint64_t n) {
  uint64_t latest = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t =
        ((const rk_abi_msg_t *)rk__ring_peek(c, (uint32_t)i))->timestamp;
    if (t > latest) latest = t;
  }
  rk__hlc_host_observe(latest);
}

/* Moves every published response to its caller or the receive queue.
 * Caller holds the drain role. `own` (may be NULL) is the role holder's
 * own call, not registered: its answer is copied straight from the slot,
 * and the lock is taken only for responses to anyone else. Returns true
 * if anything moved. */
static bool drain_for(rk_actor_t *a, waiter_t *own) {
  rk__ring_end_t *c = &a->out_c;
  uint64_t n = rk__ring_available(c);
  if (n == 0) return false;
  const uint32_t slot_size = c->slot_size;
  uint64_t now = 0; /* read once, if a sampled response is here */
  uint64_t moved = 0;
  bool locked = false;
  observe_responses(c, n);
  for (; moved < n; ++moved) {
    const unsigned char *slot = rk__ring_peek(c, (uint32_t)moved);
    const rk_abi_msg_t *m = (const rk_abi_msg_t *)slot;
    if (own && m->correlation_id == own->id) {
      memcpy(own->response, slot + RK_ABI_MSG_HEADER, a->out_size);
      fill_info(m, own->info);
      own->done = 1u; /* this thread's own; nobody else reads it */
      continue;
    }
    if (!locked) {
      pthread_mutex_lock(&a->host_lock);
      locked = true;
    }
    waiter_t **pw = &a->waiters;
    while (*pw && (*pw)->id != m->correlation_id) pw = &(*pw)->next;
    if (*pw) {
      waiter_t *w = *pw;
      *pw = w->next;
      __atomic_fetch_sub(&a->nwaiters, 1u, __ATOMIC_RELAXED);
      memcpy(w->response, slot + RK_ABI_MSG_HEADER, a->out_size);
      fill_info(m, w->info);
      STORE_RELEASE(&w->done, 1u);
      continue;
    }
    if (rq_push(a, slot, slot_size) != RK_OK) break; /* retried later */
    uint64_t id = m->correlation_id, k = (id / kSendSampleEvery) % kSampleTable;
    if (id % kSendSampleEvery == 0 && LOAD_ACQUIRE(&a->sample_id[k]) == id) {
      uint64_t t = LOAD_RELAXED(&a->sample_t[k]);
      if (!now) now = rk__now_ns();
      if (now > t) record_latency(a, now - t);
    }
  }
  if (locked) pthread_mutex_unlock(&a->host_lock);
  rk__ring_release(c, (uint32_t)moved);
  rk__ring_signal_space(c->hdr);
  return moved != 0;
}

static bool drain(rk_actor_t *a) { return drain_for(a, NULL); }

typedef bool (*ready_fn)(rk_actor_t *a, void *arg);
static bool receivable(rk_actor_t *a, void *arg);

/* Waits until ready(a, arg), draining responses meanwhile. RK_OK,
 * RK_ERR_TIMEOUT, or RK_ERR_INVALID_STATE once the actor has stopped
 * (TERMINATED or FAILED) and a drain by this thread after it saw that
 * moved nothing: what is not there by then will not come. Sets no error
 * message (the caller words it). A thread that waits is counted in
 * `waiting` (see count_waiting). */
/* Looks at the output ring with a brief wait between them before a
 * call's or a receive's spin pauses (rk__cpu_relax_brief). */
enum { kBriefLooks = 64 };

static rk_status_t wait_until(rk_actor_t *a, ready_fn ready, void *arg,
                              limit_t *limit, bool *counted) {
  uint64_t spin_end = 0, deadline = 0;
  /* The first looks wait briefly between them (rk__cpu_relax_brief): a
   * receive that follows its send often has its answer within a few line
   * transfers. */
  int brief = kBriefLooks;
  for (bool first = true;; first = false) {
    if (ready(a, arg)) return RK_OK;
    if (limit->timeout_ns) count_waiting(a, counted);
    if (!first) deadline = limit_deadline(limit);
    /* The wake sequences before the state: wake_waiters() after these
     * reads changes them, so the waits below cannot sleep through a
     * stop. */
    const uint32_t e = LOAD_ACQUIRE(&a->epoch);
    const uint32_t seq = rk__ring_data_seq(a->device.out);
    const bool stopped = stopped_state(get_state(a));
    if (take_role(a)) {
      /* A receive or a lend wants responses left in the ring (taken or
       * lent from there) unless a call waits for one of them. */
      bool moved = ready == receivable && LOAD_RELAXED(&a->nwaiters) == 0
                       ? false
                       : drain(a);
      bool done = ready(a, arg);
      if (!done && !moved && !stopped && limit->timeout_ns) {
        /* Nothing yet: spin on the ring a while, then park on it. */
        uint64_t now = rk__now_ns();
        if (!spin_end) spin_end = now + a->spin_ns;
        if (now < spin_end && may_spin(a)) {
          for (; brief > 0 && !rk__ring_available(&a->out_c); --brief)
            rk__cpu_relax_brief();
          for (int i = 0; i < 256 && !rk__ring_available(&a->out_c); ++i)
            rk__cpu_relax();
        } else {
          uint64_t slice = now + a->park_ns;
          if (deadline && deadline < slice) slice = deadline;
          rk__ring_wait_data_since(a->device.out, a->out_c.own, seq, slice);
        }
      }
      __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
      bump_epoch(a); /* delivered something, or a waiter wants the role */
      /* Ready now (a response the spin saw is receivable once the role is
       * given back): no deadline to look at first. */
      if (done || ready(a, arg)) return RK_OK;
      if (stopped && !moved) return RK_ERR_INVALID_STATE;
    } else if (limit->timeout_ns) {
      /* Another thread drains: wait for it to deliver or step down (a
       * stopped actor too: this thread then drains once itself). */
      __atomic_fetch_add(&a->epoch_waiters, 1u, __ATOMIC_SEQ_CST);
      rk__ring_fence_heavy();
      /* The role again after announcing: a holder that gave it up before
       * seeing the count is seen here (bump_epoch's fence pairs). */
      if (!ready(a, arg) && LOAD_RELAXED(&a->drain_role) != 0 &&
          LOAD_ACQUIRE(&a->epoch) == e) {
        uint64_t t = 1000000u;
        if (deadline) {
          uint64_t now = rk__now_ns();
          t = deadline > now ? deadline - now : 1;
          if (t > 1000000u) t = 1000000u;
        }
        rk__wait_while_equal(&a->epoch, e, t);
      }
      __atomic_fetch_sub(&a->epoch_waiters, 1u, __ATOMIC_RELAXED);
    }
    deadline = limit_deadline(limit);
    if (expired(deadline)) return ready(a, arg) ? RK_OK : RK_ERR_TIMEOUT;
  }
}

static bool waiter_done(rk_actor_t *a, void *arg) {
  (void)a;
  return LOAD_ACQUIRE(&((waiter_t *)arg)->done) != 0;
}

static bool rq_nonempty(rk_actor_t *a, void *arg) {
  (void)arg;
  return LOAD_RELAXED(&a->rq_count) != 0;
}

/* Something a receive or a lend could take: queued responses, or
 * published ones in the ring that it may take from there itself (no call
 * waits for one of them, and nobody holds the drain role; the ring by its
 * indices: a thread without the role must not use the consumer end). A
 * wait for this leaves responses in the ring: taken from there they are
 * copied once (or lent in place), not queued first. */
static bool receivable(rk_actor_t *a, void *arg) {
  (void)arg;
  const rk_abi_ring_t *out = a->device.out;
  return LOAD_RELAXED(&a->rq_count) != 0 ||
         (LOAD_RELAXED(&a->nwaiters) == 0 &&
          LOAD_RELAXED(&a->drain_role) == 0 &&
          (int64_t)(LOAD_ACQUIRE(&out->tail) - LOAD_ACQUIRE(&out->head)) > 0);
}

/* A call waiting for input space: there may be some, or the actor left
 * ACTIVE (the caller looks which). */
static bool input_space(rk_actor_t *a, void *arg) {
  (void)arg;
  return get_state(a) != RK_ACTOR_ACTIVE || rk__ring_mp_has_space(&a->in_mp);
}

/* RK_ERR_INVALID_STATE for a waiter of a stopped actor: "<what>: the actor
 * failed (<why>)" or "<what>: the actor is terminated". */
static rk_status_t stopped_error(const rk_actor_t *a, const char *what) {
  if (get_state(a) == RK_ACTOR_FAILED)
    return rk__fail(RK_ERR_INVALID_STATE, "%s: the actor failed (%s)", what,
                    a->fail_reason);
  return rk__fail(RK_ERR_INVALID_STATE, "%s: the actor is %s", what,
                  rk_actor_state_name(get_state(a)));
}

/* ---- Send ---------------------------------------------------------------- */

static rk_status_t check_send(rk_actor_t *a, const void *request, size_t size,
                              const char *what) {
  if (!a || !request)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "%s: actor and request are required", what);
  if (size != a->in_size) {
    __atomic_fetch_add(&a->dropped, 1u, __ATOMIC_RELAXED);
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "%s: the request is %zu bytes; the handler takes %u", what,
                    size, a->in_size);
  }
  if (get_state(a) != RK_ACTOR_ACTIVE) {
    __atomic_fetch_add(&a->dropped, 1u, __ATOMIC_RELAXED);
    return not_active(a, what);
  }
  return RK_OK;
}

/* The four steps on the actor's stream with one synchronization. */
static rk_status_t trad_queue(rk_actor_t *a, const rk_arg_t *args, size_t n,
                              unsigned char *out_slot,
                              unsigned char *status_stage) {
  rk_stream_t *st = a->trad_stream;
  rk_status_t s =
      rk_stream_copy_to_device(st, a->d_in, a->trad_stage, a->in_size);
  if (s == RK_OK)
    s = rk_function_launch(a->function, a->device.grid, a->device.block, 0, st,
                           args, n);
  if (s == RK_OK)
    s = rk_stream_copy_to_host(st, out_slot + RK_ABI_MSG_HEADER, a->d_out,
                               a->out_size);
  if (s == RK_OK && a->has_status)
    s = rk_stream_copy_to_host(st, status_stage, a->d_status, 4);
  /* Whatever was queued finishes before the stage is used again. */
  char *saved = s != RK_OK ? rk__error_save() : NULL;
  rk_status_t sync = rk_stream_synchronize(st);
  if (s != RK_OK) {
    rk__error_restore(saved);
    return s;
  }
  return sync;
}

/* The same on the default stream, step by step: on the CPU backend, whose
 * default stream runs on the calling thread, this is the fast way. */
static rk_status_t trad_direct(rk_actor_t *a, const rk_arg_t *args, size_t n,
                               unsigned char *out_slot,
                               unsigned char *status_stage) {
  rk_context_t *ctx = a->context;
  RK_RETURN_IF_ERROR(
      rk_context_copy_to_device(ctx, a->d_in, a->trad_stage, a->in_size));
  RK_RETURN_IF_ERROR(rk_function_launch(a->function, a->device.grid,
                                        a->device.block, 0, NULL, args, n));
  RK_RETURN_IF_ERROR(rk_context_synchronize(ctx));
  RK_RETURN_IF_ERROR(rk_context_copy_to_host(ctx, out_slot + RK_ABI_MSG_HEADER,
                                             a->d_out, a->out_size));
  if (a->has_status)
    RK_RETURN_IF_ERROR(
        rk_context_copy_to_host(ctx, status_stage, a->d_status, 4));
  return RK_OK;
}

/* Where a traditional call's response lands: a slot of the staging area
 * (header and payload), after the request and the status. */
static unsigned char *trad_response_stage(const rk_actor_t *a) {
  return a->trad_stage + round_line(a->in_size) + RK_ABI_LINE;
}

/* Runs one request through the handler kernel and writes its response,
 * header and payload, to `out_slot`: a reserved output ring slot (send)
 * or the staging area (call). Caller holds trad_lock. The request is
 * staged first (mapped memory where the backend has it, so the device
 * copies from pinned memory); the answer is copied straight into
 * `out_slot`. */
static rk_status_t trad_run(rk_actor_t *a, const rk_abi_msg_t *req,
                            const void *payload, unsigned char *out_slot) {
  unsigned char *status_stage = a->trad_stage + round_line(a->in_size);
  memcpy(a->trad_stage, payload, a->in_size);
  rk_arg_t args[4];
  size_t n = 0;
  args[n++] = rk_arg_ptr(a->d_in);
  args[n++] = rk_arg_ptr(a->d_out);
  if (a->has_state) args[n++] = rk_arg_ptr(a->d_state);
  if (a->has_status) args[n++] = rk_arg_ptr(a->d_status);
  /* Seen by destroy: a FAILED actor whose request never returns keeps its
   * memory. No request starts once the actor stopped (trad_enter). */
  __atomic_store_n(&a->trad_running, 1u, __ATOMIC_SEQ_CST);
  const int32_t injected =
      __atomic_exchange_n(&a->trad_inject, 0, __ATOMIC_RELAXED);
  rk_status_t s =
      injected         ? rk__fail((rk_status_t)injected,
                                  "actor: a device fault injected by a test")
      : a->trad_stream ? trad_queue(a, args, n, out_slot, status_stage)
                       : trad_direct(a, args, n, out_slot, status_stage);
  __atomic_store_n(&a->trad_running, 0u, __ATOMIC_RELEASE);
  if (s != RK_OK) {
    /* A device fault (seen by a supervisor). */
    __atomic_store_n(&a->trad_last_fault, (int32_t)s, __ATOMIC_RELAXED);
    __atomic_fetch_add(&a->trad_faults, 1u, __ATOMIC_RELEASE);
    return s;
  }
  int32_t code = 0;
  if (a->has_status) memcpy(&code, status_stage, sizeof code);
  rk_abi_msg_t *m = (rk_abi_msg_t *)out_slot;
  m->correlation_id = req->correlation_id;
  m->timestamp = rk__hlc_merge(&a->control->clock, req->timestamp);
  m->type = RK_ABI_MSG_RESPONSE;
  m->size = a->out_size;
  m->status = code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK;
  m->code = code;
  if (code) {
    __atomic_fetch_add(&a->trad_errors, 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&a->trad_last_error, code, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&a->trad_processed, 1u, __ATOMIC_RELEASE);
  return RK_OK;
}

/* Takes trad_lock for one request of `what`: waits for a request running
 * on another thread up to the limit (RK_ERR_QUEUE_FULL then: nothing
 * run), in slices, so that a stop is seen (RK_ERR_INVALID_STATE) even if
 * that request never finishes. */
static rk_status_t trad_enter(rk_actor_t *a, limit_t *limit, bool *counted,
                              const char *what) {
  if (pthread_mutex_trylock(&a->trad_lock) != 0) {
    for (;;) {
      if (get_state(a) != RK_ACTOR_ACTIVE) return not_active(a, what);
      const uint64_t deadline = limit_deadline(limit);
      if (limit->timeout_ns == 0 || expired(deadline))
        return rk__fail(RK_ERR_QUEUE_FULL,
                        "%s: another request is running (traditional mode "
                        "runs one at a time)",
                        what);
      count_waiting(a, counted);
      uint64_t slice = rk__now_ns() + a->park_ns;
      if (deadline && deadline < slice) slice = deadline;
      if (lock_until(&a->trad_lock, slice) == 0) break;
    }
  }
  if (get_state(a) != RK_ACTOR_ACTIVE) {
    pthread_mutex_unlock(&a->trad_lock);
    return not_active(a, what);
  }
  return RK_OK;
}

/* A traditional send: its response goes to the output ring, so it needs a
 * slot there, and waits for one (someone receiving) up to the limit. */
static rk_status_t trad_send(rk_actor_t *a, const rk_abi_msg_t *req,
                             const void *payload, limit_t *limit,
                             bool *counted) {
  rk_abi_ring_t *out = a->device.out;
  for (;;) {
    RK_RETURN_IF_ERROR(trad_enter(a, limit, counted, "actor_send"));
    unsigned char *slot = rk__ring_reserve(&a->trad_out);
    if (slot) {
      rk_status_t s = trad_run(a, req, payload, slot);
      if (s == RK_OK) {
        rk__ring_publish(&a->trad_out, 1);
        rk__ring_signal_data(out);
      }
      pthread_mutex_unlock(&a->trad_lock);
      return s;
    }
    const uint64_t own = a->trad_out.own;
    /* Read before the state is looked at below: a stop after this read
     * changes it, and the wait returns. */
    const uint32_t seq = rk__ring_space_seq(out);
    pthread_mutex_unlock(&a->trad_lock);
    const uint64_t deadline = limit_deadline(limit);
    if (limit->timeout_ns == 0 || expired(deadline))
      return rk__fail(RK_ERR_QUEUE_FULL,
                      "actor_send: the output ring is full (%u responses "
                      "that nobody has received; rk_actor_receive takes "
                      "them, and rk_actor_call needs no slot)",
                      out->capacity);
    if (get_state(a) != RK_ACTOR_ACTIVE) return not_active(a, "actor_send");
    count_waiting(a, counted);
    uint64_t slice = rk__now_ns() + a->park_ns;
    if (deadline && deadline < slice) slice = deadline;
    rk__ring_wait_space_since(out, own, seq, slice);
  }
}

/* A traditional call: the answer comes straight back from the staging
 * area to the caller, so responses that fill the output ring unreceived
 * never hold it up. */
static rk_status_t trad_call(rk_actor_t *a, const rk_abi_msg_t *req,
                             const void *payload, void *response,
                             rk_actor_message_t *info, limit_t *limit,
                             bool *counted) {
  RK_RETURN_IF_ERROR(trad_enter(a, limit, counted, "actor_call"));
  unsigned char *slot = trad_response_stage(a);
  rk_status_t s = trad_run(a, req, payload, slot);
  if (s == RK_OK) {
    /* A receive event of the host, before the caller sees it. */
    rk__hlc_host_observe(((const rk_abi_msg_t *)slot)->timestamp);
    memcpy(response, slot + RK_ABI_MSG_HEADER, a->out_size);
    fill_info((const rk_abi_msg_t *)slot, info);
  }
  pthread_mutex_unlock(&a->trad_lock);
  return s;
}

/* Queues one request (persistent mode), waiting up to the limit for space.
 * A call (`drain_ring`) meanwhile moves the responses nobody has received
 * to the receive queue, so that a device side blocked on a full output
 * ring gets on to its request; a send leaves them there (backpressure:
 * whoever receives makes room). */
static rk_status_t enqueue(rk_actor_t *a, const rk_abi_msg_t *m,
                           const void *request, limit_t *limit, bool drain_ring,
                           bool *counted, const char *what) {
  for (bool first = true;; first = false) {
    if (!first && get_state(a) != RK_ACTOR_ACTIVE) return not_active(a, what);
    rk_status_t s = stage_send(a, m, request);
    if (s == RK_OK) rk__ring_signal_data(a->device.in);
    if (s != RK_ERR_QUEUE_FULL) return s;
    const uint64_t deadline = limit_deadline(limit);
    if (limit->timeout_ns == 0 || expired(deadline))
      return rk__fail(RK_ERR_QUEUE_FULL,
                      "%s: the input ring is full (%u requests)", what,
                      a->device.in->capacity);
    count_waiting(a, counted);
    if (drain_ring) {
      /* Back to the top in every case: the state, then the ring. */
      (void)wait_until(a, input_space, NULL, limit, counted);
      continue;
    }
    /* Read before the state is looked at: see trad_send. */
    const uint32_t seq = rk__ring_space_seq(a->device.in);
    if (get_state(a) != RK_ACTOR_ACTIVE) return not_active(a, what);
    uint64_t slice = rk__now_ns() + a->park_ns;
    if (deadline && deadline < slice) slice = deadline;
    wait_input_space(a, seq, slice);
  }
}

/* `n` requests that took ids did not go. */
static void not_sent(rk_actor_t *a, uint64_t n) {
  __atomic_fetch_add(&a->unsent, n, __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->dropped, n, __ATOMIC_RELAXED);
}

static rk_abi_msg_t request_header(rk_actor_t *a, uint64_t id) {
  rk_abi_msg_t m = {.correlation_id = id,
                    .timestamp = rk__hlc_host_tick(),
                    .type = RK_ABI_MSG_REQUEST,
                    .size = a->in_size};
  return m;
}

/* A send by the thread that owns the host side (base/bias.h): the input
 * stage without its lock and the id without a fetch-add. RK_ERR_QUEUE_FULL
 * when the thread does not own it, tracing is on, or the ring is full:
 * nothing was sent and no id used, and the caller takes the shared path. */
static inline rk_status_t send_alone(rk_actor_t *a, const void *request,
                                     uint64_t *out_id) {
  if (a->mode == RK_ACTOR_TRADITIONAL || rk__trace_on() ||
      !rk__bias_enter(&a->host_bias))
    return RK_ERR_QUEUE_FULL;
  const rk_abi_msg_t m = request_header(a, 0);
  /* Only the owner writes next_id now: this is the id the message takes. */
  const uint64_t next = LOAD_RELAXED(&a->next_id);
  const uint64_t t0 = next % kSendSampleEvery == 0 ? rk__now_ns() : 0;
  uint64_t id = 0;
  const rk_status_t s = rk__ring_mp_send_alone(&a->in_mp, &m, request,
                                               a->in_size, &a->next_id, &id);
  rk__bias_leave(&a->host_bias);
  if (s != RK_OK) return s;
  rk__ring_signal_data(a->device.in);
  if (t0) {
    /* After the publish: a response drained before this lands is simply
     * not sampled. */
    const uint64_t k = (id / kSendSampleEvery) % kSampleTable;
    __atomic_store_n(&a->sample_t[k], t0, __ATOMIC_RELAXED);
    __atomic_store_n(&a->sample_id[k], id, __ATOMIC_RELEASE);
  }
  *out_id = id;
  return RK_OK;
}

static rk_status_t send_one(rk_actor_t *a, const void *request,
                            uint64_t timeout_ns, uint64_t *out_id,
                            bool *counted) {
  uint64_t fast_id;
  if (send_alone(a, request, &fast_id) == RK_OK) {
    if (out_id) *out_id = fast_id;
    return RK_OK;
  }
  const uint64_t id = take_ids(a, 1);
  const rk_abi_msg_t m = request_header(a, id);
  if (rk__trace_on())
    rk__trace_commit(rk__trace_flow('s', "actor", "message", id));
  if (id % kSendSampleEvery == 0) {
    uint64_t k = (id / kSendSampleEvery) % kSampleTable;
    __atomic_store_n(&a->sample_t[k], rk__now_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(&a->sample_id[k], id, __ATOMIC_RELEASE);
  }
  limit_t limit = limit_of(timeout_ns, 0);
  rk_status_t s;
  if (a->mode == RK_ACTOR_TRADITIONAL) {
    /* Counted from the start: it runs the request itself. */
    count_waiting(a, counted);
    s = trad_send(a, &m, request, &limit, counted);
  } else {
    s = enqueue(a, &m, request, &limit, false, counted, "actor_send");
  }
  if (s != RK_OK) {
    not_sent(a, 1);
    return s;
  }
  if (out_id) *out_id = id;
  return RK_OK;
}

static rk_status_t actor_send(rk_actor_t *actor, const void *request,
                              size_t size, uint64_t timeout_ns,
                              uint64_t *out_correlation_id) {
  RK_RETURN_IF_ERROR(check_send(actor, request, size, "actor_send"));
  bool counted = false;
  rk_status_t s =
      send_one(actor, request, timeout_ns, out_correlation_id, &counted);
  leave(actor, counted);
  return s;
}

/* What a traced send, receive or call notes about its actor, read before
 * the call: once it returns, the actor may be destroyed. */
typedef struct traced_actor {
  char handler[64];
  const char *mode;
} traced_actor_t;

static traced_actor_t traced_actor(const rk_actor_t *a) {
  traced_actor_t t = {"", NULL};
  if (a) {
    snprintf(t.handler, sizeof t.handler, "%s", rk_function_name(a->function));
    t.mode = a->mode == RK_ACTOR_TRADITIONAL ? "traditional" : "persistent";
  }
  return t;
}

/* The arguments every traced actor call has. */
static void trace_actor_args(rk__trace_event_t *e, const traced_actor_t *t,
                             uint64_t id, rk_status_t s) {
  if (t->mode) {
    rk__trace_arg_str(e, "handler", t->handler);
    rk__trace_arg_str(e, "mode", t->mode);
  }
  if (id) rk__trace_arg_uint(e, "correlation_id", id);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
}

rk_status_t rk_actor_send(rk_actor_t *actor, const void *request, size_t size,
                          uint64_t timeout_ns, uint64_t *out_correlation_id) {
  /* The one thread that uses the actor, with room in the ring: straight
   * to send_alone, which refuses (nothing sent) whatever it does not
   * cover; everything else takes the path below, checks first. */
  if (actor && request && !actor->remote && size == actor->in_size &&
      get_state(actor) == RK_ACTOR_ACTIVE) {
    uint64_t id;
    if (send_alone(actor, request, &id) == RK_OK) {
      if (out_correlation_id) *out_correlation_id = id;
      return RK_OK;
    }
  }
  if (actor && actor->remote)
    return rk__proxy_send(actor, request, size, timeout_ns, out_correlation_id);
  if (!rk__trace_on())
    return actor_send(actor, request, size, timeout_ns, out_correlation_id);
  uint64_t id = 0;
  rk__trace_span_t span;
  const traced_actor_t t = traced_actor(actor);
  rk__trace_span_begin(&span, "actor send");
  rk_status_t s = actor_send(actor, request, size, timeout_ns, &id);
  trace_actor_args(rk__trace_span_end(&span, "actor"), &t, id, s);
  if (s == RK_OK && out_correlation_id) *out_correlation_id = id;
  return s;
}

/* ---- Receive and call ---------------------------------------------------- */

static rk_status_t check_capacity(const rk_actor_t *a, const void *response,
                                  size_t capacity) {
  if (!response || capacity < a->out_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor: the response buffer (%zu bytes) cannot hold the "
                    "handler's response (%u bytes)",
                    response ? capacity : 0, a->out_size);
  return RK_OK;
}

/* What a call or receive returns for a response that came. */
static rk_status_t response_status(const rk_actor_message_t *info) {
  if (info->status == RK_OK) return RK_OK;
  if (info->status == RK_ERR_HANDLER)
    return rk__fail(
        RK_ERR_HANDLER, "actor: the handler returned %d for request %llu",
        (int)info->handler_code, (unsigned long long)info->correlation_id);
  return rk__fail(
      info->status, "actor: the device could not run request %llu (%s)",
      (unsigned long long)info->correlation_id, rk_status_name(info->status));
}

/* How many published responses past its own a receive asks the cache
 * for. */
enum { kPrefetch = 4 };

/* How many responses a receive of up to `max` looks for when it knows of
 * none: at least a few, so that one look (which ends on a slot the device
 * side has yet to write) serves several receives. */
static uint32_t clamp_want(size_t max) {
  enum { kLookAhead = 16 };
  return max < kLookAhead   ? kLookAhead
         : max < UINT32_MAX ? (uint32_t)max
                            : UINT32_MAX;
}

/* Takes up to `max` responses straight from the output ring into `out`
 * (packed, out_size bytes each) and their details into `infos`: only when
 * this thread gets the drain role, the receive queue is empty (it holds
 * older responses) and no call is registered (a response in the ring may
 * be its answer). A call registers before its request is published, so a
 * response this thread sees in the ring (acquire) was answered after the
 * count it loads next took the registration in. Returns how many. */
static size_t take_direct(rk_actor_t *a, unsigned char *out, size_t max,
                          rk_actor_message_t *infos) {
  /* The owner of the host side holds the role by its bias: no other
   * thread takes it before revoking, which waits for this section. */
  const bool alone = rk__bias_enter(&a->host_bias);
  if (!alone && (LOAD_RELAXED(&a->rq_count) != 0 || !take_role(a))) return 0;
  rk__ring_end_t *c = &a->out_c;
  uint64_t n = LOAD_RELAXED(&a->rq_count) == 0 &&
                       (!alone || LOAD_RELAXED(&a->drain_role) == 0)
                   ? rk__ring_available_upto(c, clamp_want(max))
                   : 0;
  size_t k = 0;
  /* Round trips of sampled requests, recorded after the role is given
   * back (a section of the owner takes no lock). */
  enum { kMaxSamples = 16 };
  uint64_t lat[kMaxSamples];
  unsigned nlat = 0;
  if (n && LOAD_RELAXED(&a->nwaiters) == 0) {
    k = n < max ? (size_t)n : max;
    /* The next receive's responses, when they are already there. */
    rk__ring_prefetch(c, (uint32_t)k, kPrefetch);
    observe_responses(c, k);
    uint64_t now = 0;
    for (size_t i = 0; i < k; ++i) {
      const unsigned char *slot = rk__ring_peek(c, (uint32_t)i);
      const rk_abi_msg_t *m = (const rk_abi_msg_t *)slot;
      rk__copy_payload(out + i * a->out_size, slot + RK_ABI_MSG_HEADER,
                       a->out_size);
      fill_info(m, &infos[i]);
      const uint64_t id = m->correlation_id,
                     s = (id / kSendSampleEvery) % kSampleTable;
      if (id % kSendSampleEvery == 0 && nlat < kMaxSamples &&
          LOAD_ACQUIRE(&a->sample_id[s]) == id) {
        const uint64_t t = LOAD_RELAXED(&a->sample_t[s]);
        if (!now) now = rk__now_ns();
        if (now > t) lat[nlat++] = now - t;
      }
    }
    rk__ring_release(c, (uint32_t)k);
    rk__ring_signal_space(c->hdr);
  }
  if (alone) {
    rk__bias_leave(&a->host_bias);
  } else {
    __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
    bump_epoch(a);
  }
  if (nlat) {
    pthread_mutex_lock(&a->host_lock);
    for (unsigned i = 0; i < nlat; ++i) record_latency(a, lat[i]);
    pthread_mutex_unlock(&a->host_lock);
  }
  return k;
}

/* Records the round trip of request `id` if it was sampled (send_alone,
 * send_one), taken now. Outside any section of the owner: it locks. */
static void sample_response(rk_actor_t *a, uint64_t id) {
  const uint64_t s = (id / kSendSampleEvery) % kSampleTable;
  if (LOAD_ACQUIRE(&a->sample_id[s]) != id) return;
  const uint64_t t = LOAD_RELAXED(&a->sample_t[s]), now = rk__now_ns();
  if (now <= t) return;
  pthread_mutex_lock(&a->host_lock);
  record_latency(a, now - t);
  pthread_mutex_unlock(&a->host_lock);
}

/* take_direct for one response by the thread that owns the host side
 * (what a pipelined rk_actor_receive does per message): no role to take,
 * nothing to prefetch or loop over. False, with nothing taken, when the
 * thread is not the owner, a call waits or responses are queued (take_
 * direct's conditions), or none is published. */
static inline bool take_one_alone(rk_actor_t *a, void *response,
                                  rk_actor_message_t *info) {
  if (!rk__bias_enter(&a->host_bias)) return false;
  rk__ring_end_t *c = &a->out_c;
  /* The count of waiting calls after the ring (take_direct). */
  if (LOAD_RELAXED(&a->rq_count) != 0 || LOAD_RELAXED(&a->drain_role) != 0 ||
      !rk__ring_available_upto(c, clamp_want(1)) ||
      LOAD_RELAXED(&a->nwaiters) != 0) {
    rk__bias_leave(&a->host_bias);
    return false;
  }
  const rk_abi_msg_t *m = (const rk_abi_msg_t *)rk__ring_slot_at(c, c->own);
  rk__hlc_host_observe(m->timestamp);
  rk__copy_payload(response, (const unsigned char *)m + RK_ABI_MSG_HEADER,
                   a->out_size);
  fill_info(m, info);
  rk__ring_release(c, 1);
  rk__ring_signal_space(c->hdr);
  rk__bias_leave(&a->host_bias);
  /* The slot may be rewritten from here on: the id from the copy. */
  if (info->correlation_id % kSendSampleEvery == 0)
    sample_response(a, info->correlation_id);
  return true;
}

/* Takes up to `max` responses from the receive queue (caller holds
 * host_lock). */
static size_t rq_take(rk_actor_t *a, unsigned char *out, size_t max,
                      rk_actor_message_t *infos) {
  const uint32_t slot_size = a->device.out->slot_size;
  size_t k = 0;
  for (; k < max && a->rq_count; ++k) {
    const unsigned char *slot = a->rq + a->rq_head * slot_size;
    fill_info((const rk_abi_msg_t *)slot, &infos[k]);
    memcpy(out + k * a->out_size, slot + RK_ABI_MSG_HEADER, a->out_size);
    a->rq_head = (a->rq_head + 1) % a->rq_cap;
    __atomic_fetch_sub(&a->rq_count, 1u, __ATOMIC_RELAXED);
  }
  return k;
}

/* What a receive waits for. While one thread alone uses the host side,
 * responses it can take from the ring: one copy each. Once several do,
 * queued ones: a drain moves everything there under one take of the drain
 * role (a take per response measured 0.6x with 8 producers on 2 CPUs). */
static ready_fn receive_ready(rk_actor_t *a) {
  return __atomic_load_n(&a->host_bias.state, __ATOMIC_RELAXED) ==
                 RK__BIAS_SHARED
             ? rq_nonempty
             : receivable;
}

static rk_status_t receive(rk_actor_t *actor, void *response,
                           uint64_t timeout_ns, rk_actor_message_t *out_info,
                           bool *counted) {
  limit_t limit = limit_of(timeout_ns, 0);
  /* Filled in place: a copy of a just-written struct waits for its narrow
   * stores to land. */
  rk_actor_message_t scratch;
  rk_actor_message_t *direct = out_info ? out_info : &scratch;
  for (;;) {
    if (take_direct(actor, response, 1, direct)) return response_status(direct);
    rk_status_t s =
        wait_until(actor, receive_ready(actor), NULL, &limit, counted);
    if (s != RK_OK) {
      if (timeout_ns == 0)
        return rk__fail(RK_ERR_QUEUE_EMPTY, "actor_receive: no response");
      if (s == RK_ERR_INVALID_STATE)
        return stopped_error(
            actor, "actor_receive: no response is left and none will come");
      return rk__fail(RK_ERR_TIMEOUT,
                      "actor_receive: no response within %.3f ms",
                      (double)timeout_ns / 1e6);
    }
    pthread_mutex_lock(&actor->host_lock);
    if (actor->rq_count == 0) { /* another receiver took it */
      pthread_mutex_unlock(&actor->host_lock);
      continue;
    }
    const uint32_t slot_size = actor->device.out->slot_size;
    const unsigned char *slot = actor->rq + actor->rq_head * slot_size;
    const rk_abi_msg_t *m = (const rk_abi_msg_t *)slot;
    rk_actor_message_t info;
    fill_info(m, &info);
    if (rk__trace_on())
      rk__trace_commit(
          rk__trace_flow('f', "actor", "message", info.correlation_id));
    memcpy(response, slot + RK_ABI_MSG_HEADER, actor->out_size);
    actor->rq_head = (actor->rq_head + 1) % actor->rq_cap;
    __atomic_fetch_sub(&actor->rq_count, 1u, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&actor->host_lock);
    if (out_info) *out_info = info;
    return response_status(&info);
  }
}

static rk_status_t actor_receive(rk_actor_t *actor, void *response,
                                 size_t capacity, uint64_t timeout_ns,
                                 rk_actor_message_t *out_info) {
  if (!actor) return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor is NULL");
  RK_RETURN_IF_ERROR(check_capacity(actor, response, capacity));
  if (holds_loan(actor)) return loan_held("actor_receive");
  bool counted = false;
  rk_status_t s = receive(actor, response, timeout_ns, out_info, &counted);
  leave(actor, counted);
  return s;
}

rk_status_t rk_actor_receive(rk_actor_t *actor, void *response, size_t capacity,
                             uint64_t timeout_ns,
                             rk_actor_message_t *out_info) {
  /* A response already there, for a caller that may take it from the
   * ring: straight to take_direct (what receive tries first); anything
   * else takes the path below, checks first. */
  if (actor && response && !actor->remote && capacity >= actor->out_size &&
      !rk__trace_on() && !holds_loan(actor)) {
    rk_actor_message_t scratch;
    rk_actor_message_t *direct = out_info ? out_info : &scratch;
    if (take_one_alone(actor, response, direct) ||
        take_direct(actor, response, 1, direct))
      return response_status(direct);
  }
  if (actor && actor->remote)
    return rk__proxy_receive(actor, response, capacity, timeout_ns, out_info);
  if (!rk__trace_on())
    return actor_receive(actor, response, capacity, timeout_ns, out_info);
  rk_actor_message_t info;
  memset(&info, 0, sizeof info);
  rk__trace_span_t span;
  const traced_actor_t t = traced_actor(actor);
  rk__trace_span_begin(&span, "actor receive");
  rk_status_t s = actor_receive(actor, response, capacity, timeout_ns, &info);
  trace_actor_args(rk__trace_span_end(&span, "actor"), &t, info.correlation_id,
                   s);
  if (out_info && info.correlation_id) *out_info = info; /* one came */
  return s;
}

/* ---- Batches --------------------------------------------------------------
 */

rk_status_t rk_actor_send_batch(rk_actor_t *actor, const void *requests,
                                size_t size, size_t count, uint64_t timeout_ns,
                                size_t *out_sent, uint64_t *out_first_id) {
  if (out_sent) *out_sent = 0;
  if (!actor || (!requests && count))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_send_batch: actor and requests are required");
  if (count == 0) return RK_OK;
  if (actor->remote)
    return rk__proxy_send_batch(actor, requests, size, count, timeout_ns,
                                out_sent, out_first_id);
  RK_RETURN_IF_ERROR(check_send(actor, requests, size, "actor_send_batch"));
  if (count > UINT32_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_send_batch: %zu requests in one batch", count);
  bool counted = false;
  const unsigned char *p = requests;
  size_t sent = 0;
  rk_status_t s = RK_OK;
  uint64_t first = 0;
  if (actor->mode == RK_ACTOR_TRADITIONAL) {
    /* Each request is a launch of its own anyway. */
    for (; sent < count; ++sent) {
      uint64_t id;
      s = send_one(actor, p + sent * size, timeout_ns, &id, &counted);
      if (s != RK_OK) break;
      if (sent == 0) first = id;
    }
  } else {
    /* One id range, one clock tick, and one lock, publish and signal per
     * run of requests that fits. */
    first = take_ids(actor, (uint64_t)count);
    rk_abi_msg_t m = {.correlation_id = first,
                      .timestamp = rk__hlc_tick_n(&rk__hlc_host.value, count),
                      .type = RK_ABI_MSG_REQUEST,
                      .size = actor->in_size};
    limit_t limit = limit_of(timeout_ns, 0);
    for (bool first_try = true; sent < count; first_try = false) {
      if (!first_try && get_state(actor) != RK_ACTOR_ACTIVE) {
        s = not_active(actor, "actor_send_batch");
        break;
      }
      uint32_t n = 0;
      rk_abi_msg_t mi = m;
      mi.correlation_id += sent;
      mi.timestamp += sent;
      s = rk__ring_mp_send_batch(&actor->in_mp, &mi, p + sent * size,
                                 actor->in_size, (uint32_t)(count - sent), &n);
      sent += n;
      if (s == RK_OK) continue;
      const uint64_t deadline = limit_deadline(&limit);
      if (limit.timeout_ns == 0 || expired(deadline)) {
        s = rk__fail(RK_ERR_QUEUE_FULL,
                     "actor_send_batch: the input ring is full (%u requests); "
                     "%zu of %zu sent",
                     actor->device.in->capacity, sent, count);
        break;
      }
      count_waiting(actor, &counted);
      /* Read before the state is looked at: see trad_send. */
      const uint32_t seq = rk__ring_space_seq(actor->device.in);
      if (get_state(actor) != RK_ACTOR_ACTIVE) {
        s = not_active(actor, "actor_send_batch");
        break;
      }
      uint64_t slice = rk__now_ns() + actor->park_ns;
      if (deadline && deadline < slice) slice = deadline;
      wait_input_space(actor, seq, slice);
    }
    if (sent < count) not_sent(actor, (uint64_t)(count - sent));
  }
  leave(actor, counted);
  if (out_sent) *out_sent = sent;
  if (out_first_id && sent) *out_first_id = first;
  return sent == count ? RK_OK : s;
}

rk_status_t rk_actor_receive_batch(rk_actor_t *actor, void *responses,
                                   size_t capacity, size_t max,
                                   uint64_t timeout_ns,
                                   rk_actor_message_t *out_infos,
                                   size_t *out_count) {
  if (out_count) *out_count = 0;
  if (!actor || !out_count || !out_infos || max == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_receive_batch: actor, out_infos, out_count and a "
                    "max of at least 1 are required");
  if (actor->remote)
    return rk__proxy_receive_batch(actor, responses, capacity, max, timeout_ns,
                                   out_infos, out_count);
  if (!responses || capacity / max < actor->out_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_receive_batch: %zu bytes cannot hold %zu responses "
                    "of %u bytes",
                    responses ? capacity : 0, max, actor->out_size);
  if (holds_loan(actor)) return loan_held("actor_receive_batch");
  bool counted = false;
  unsigned char *out = responses;
  limit_t limit = limit_of(timeout_ns, 0);
  rk_status_t s = RK_OK;
  size_t got = 0;
  for (;;) {
    got = take_direct(actor, out, max, out_infos);
    if (got) break;
    s = wait_until(actor, receive_ready(actor), NULL, &limit, &counted);
    if (s != RK_OK) break;
    pthread_mutex_lock(&actor->host_lock);
    got = rq_take(actor, out, max, out_infos);
    pthread_mutex_unlock(&actor->host_lock);
    if (got) break;
  }
  leave(actor, counted);
  *out_count = got;
  if (got) return RK_OK;
  if (timeout_ns == 0)
    return rk__fail(RK_ERR_QUEUE_EMPTY, "actor_receive_batch: no response");
  if (s == RK_ERR_INVALID_STATE)
    return stopped_error(
        actor, "actor_receive_batch: no response is left and none will come");
  return rk__fail(RK_ERR_TIMEOUT,
                  "actor_receive_batch: no response within %.3f ms",
                  (double)timeout_ns / 1e6);
}

/* Caller holds host_lock. */
static void unregister(rk_actor_t *a, waiter_t *w) {
  for (waiter_t **p = &a->waiters; *p; p = &(*p)->next)
    if (*p == w) {
      *p = w->next;
      __atomic_fetch_sub(&a->nwaiters, 1u, __ATOMIC_RELAXED);
      break;
    }
}

/* Caller holds host_lock. */
static void register_waiter(rk_actor_t *a, waiter_t *w) {
  w->next = a->waiters;
  a->waiters = w;
  __atomic_fetch_add(&a->nwaiters, 1u, __ATOMIC_RELAXED);
}

/* Traditional mode: the request runs on this thread and its answer comes
 * straight back. */
static rk_status_t call_traditional(rk_actor_t *actor, const void *request,
                                    void *response, uint64_t timeout_ns,
                                    rk_actor_message_t *out_info,
                                    bool *counted) {
  const uint64_t id = take_ids(actor, 1);
  const rk_abi_msg_t m = request_header(actor, id);
  const uint64_t t0 = rk__now_ns();
  limit_t limit = limit_of(timeout_ns, t0);
  rk_actor_message_t info;
  const bool traced = rk__trace_on();
  if (traced) rk__trace_commit(rk__trace_flow('s', "actor", "message", id));
  rk_status_t s =
      trad_call(actor, &m, request, response, &info, &limit, counted);
  if (traced && s == RK_OK)
    rk__trace_commit(rk__trace_flow('f', "actor", "message", id));
  if (s != RK_OK) {
    not_sent(actor, 1);
    return s;
  }
  pthread_mutex_lock(&actor->host_lock);
  record_latency(actor, rk__now_ns() - t0);
  pthread_mutex_unlock(&actor->host_lock);
  if (out_info) *out_info = info;
  return response_status(&info);
}

static rk_status_t call_wait(rk_actor_t *actor, waiter_t *w, uint64_t t0,
                             limit_t *limit, uint64_t timeout_ns,
                             bool *counted);

/* A persistent call that finds the drain role free takes it before its
 * request is published and keeps it until its answer is in: nobody else
 * can see the response meanwhile, so the call needs no registration (no
 * lock) and copies its answer straight from the output slot. It spins
 * while spinning may pay off (may_spin); if the answer is not in by then
 * it registers (still holding the role, so the response cannot have gone
 * elsewhere), gives the role up and waits as any call (*registered).
 * RK_ERR_QUEUE_FULL when the request did not fit at once: nothing was
 * queued, and the caller takes the ordinary path. RK_OK otherwise, with
 * w->done set when the answer came. */
static rk_status_t call_fast(rk_actor_t *a, const rk_abi_msg_t *m,
                             const void *request, waiter_t *w, limit_t *limit,
                             bool *registered) {
  if (a->execution != RK_ACTOR_EXEC_RESIDENT || limit->timeout_ns == 0 ||
      !take_role(a))
    return RK_ERR_QUEUE_FULL;
  rk_status_t s = stage_send(a, m, request);
  if (s == RK_OK) rk__ring_signal_data(a->device.in);
  if (s != RK_OK) {
    __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
    bump_epoch(a);
    return RK_ERR_QUEUE_FULL;
  }
  uint64_t spin_end = 0;
  /* The first looks wait briefly between them: a call's answer often
   * comes within a few line transfers (rk__cpu_relax_brief). */
  int brief = kBriefLooks;
  for (;;) {
    if (drain_for(a, w) && !w->done) bump_epoch(a); /* others' answers */
    if (w->done || !may_spin(a)) break;
    for (; brief > 0 && !rk__ring_available(&a->out_c); --brief)
      rk__cpu_relax_brief();
    for (int i = 0; i < 256 && !rk__ring_available(&a->out_c); ++i)
      rk__cpu_relax();
    if (rk__ring_available(&a->out_c)) continue;
    /* Waiting in earnest: now the clock. */
    const uint64_t now = rk__now_ns();
    if (!spin_end) spin_end = now + a->spin_ns;
    const uint64_t deadline = limit_deadline(limit);
    if (now >= spin_end || (deadline && now >= deadline)) break;
  }
  if (!w->done) {
    pthread_mutex_lock(&a->host_lock);
    register_waiter(a, w);
    pthread_mutex_unlock(&a->host_lock);
    *registered = true;
  }
  __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
  bump_epoch(a); /* threads waiting for the role */
  return RK_OK;
}

static rk_status_t call(rk_actor_t *actor, const void *request, void *response,
                        size_t capacity, uint64_t timeout_ns,
                        rk_actor_message_t *out_info, bool *counted) {
  if (actor->mode == RK_ACTOR_TRADITIONAL)
    return call_traditional(actor, request, response, timeout_ns, out_info,
                            counted);
  waiter_t w;
  memset(&w, 0, sizeof w);
  w.response = response;
  w.capacity = capacity;
  w.info = out_info ? out_info : &w.own;
  w.id = take_ids(actor, 1);
  const rk_abi_msg_t m = request_header(actor, w.id);
  /* Latency of one call in kSampleEvery: the others read no clock unless
   * they wait. */
  const uint64_t t0 = w.id % kSampleEvery == 0 ? rk__now_ns() : 0;
  limit_t limit = limit_of(timeout_ns, t0);
  if (rk__trace_on())
    rk__trace_commit(rk__trace_flow('s', "actor", "message", w.id));
  bool registered = false;
  rk_status_t s = call_fast(actor, &m, request, &w, &limit, &registered);
  /* Not registered: the answer came on the fast path (w is this thread's
   * alone). Registered: another thread may deliver to w from now on. */
  if (s == RK_OK && !registered) {
    if (t0) {
      pthread_mutex_lock(&actor->host_lock);
      record_latency(actor, rk__now_ns() - t0);
      pthread_mutex_unlock(&actor->host_lock);
    }
    if (rk__trace_on())
      rk__trace_commit(rk__trace_flow('f', "actor", "message", w.id));
    return response_status(w.info);
  }
  if (registered) {
    /* Queued by the fast path and registered: wait as any call does. */
    return call_wait(actor, &w, t0, &limit, timeout_ns, counted);
  }
  /* Registered before the request is published, so its response cannot
   * slip into the receive queue. */
  pthread_mutex_lock(&actor->host_lock);
  register_waiter(actor, &w);
  pthread_mutex_unlock(&actor->host_lock);
  /* Relaunch with no deadline to keep: run the batch on this thread rather
   * than hand it to the driver and wait to be woken. */
  if (actor->relaunch && timeout_ns == RK_TIMEOUT_INFINITE &&
      rk__relaunch_hold(actor->relaunch)) {
    /* Holding the device side: never wait for space here, and no need to
     * wake the driver for a request this thread runs itself. */
    s = rk__ring_mp_send_quiet(&actor->in_mp, &m, request, actor->in_size,
                               NULL);
    rk__relaunch_run_held(actor->relaunch);
    if (s == RK_ERR_QUEUE_FULL)
      s = enqueue(actor, &m, request, &limit, true, counted, "actor_call");
  } else {
    s = enqueue(actor, &m, request, &limit, true, counted, "actor_call");
  }
  if (s != RK_OK) {
    pthread_mutex_lock(&actor->host_lock);
    unregister(actor, &w);
    pthread_mutex_unlock(&actor->host_lock);
    not_sent(actor, 1);
    return s;
  }
  return call_wait(actor, &w, t0, &limit, timeout_ns, counted);
}

/* A registered call whose request is queued: waits for the answer. */
static rk_status_t call_wait(rk_actor_t *actor, waiter_t *w, uint64_t t0,
                             limit_t *limit, uint64_t timeout_ns,
                             bool *counted) {
  rk_status_t s = wait_until(actor, waiter_done, w, limit, counted);
  pthread_mutex_lock(&actor->host_lock);
  if (!LOAD_ACQUIRE(&w->done)) {
    /* Timed out, or the actor stopped: unregister; a late response goes
     * to receive. */
    unregister(actor, w);
    pthread_mutex_unlock(&actor->host_lock);
    if (s == RK_ERR_INVALID_STATE) {
      char what[96];
      snprintf(what, sizeof what, "actor_call: request %llu was not answered",
               (unsigned long long)w->id);
      return stopped_error(actor, what);
    }
    return rk__fail(RK_ERR_TIMEOUT,
                    "actor_call: no response to request %llu within %.3f ms",
                    (unsigned long long)w->id, (double)timeout_ns / 1e6);
  }
  if (t0) record_latency(actor, rk__now_ns() - t0);
  pthread_mutex_unlock(&actor->host_lock);
  if (rk__trace_on())
    rk__trace_commit(rk__trace_flow('f', "actor", "message", w->id));
  return response_status(w->info);
}

static rk_status_t actor_call(rk_actor_t *actor, const void *request,
                              size_t request_size, void *response,
                              size_t capacity, uint64_t timeout_ns,
                              rk_actor_message_t *out_info);

rk_status_t rk_actor_call(rk_actor_t *actor, const void *request,
                          size_t request_size, void *response, size_t capacity,
                          uint64_t timeout_ns, rk_actor_message_t *out_info) {
  if (actor && actor->remote)
    return rk__proxy_call(actor, request, request_size, response, capacity,
                          timeout_ns, out_info);
  if (!rk__trace_on())
    return actor_call(actor, request, request_size, response, capacity,
                      timeout_ns, out_info);
  rk_actor_message_t info;
  memset(&info, 0, sizeof info);
  rk__trace_span_t span;
  const traced_actor_t t = traced_actor(actor);
  rk__trace_span_begin(&span, "actor call");
  rk_status_t s = actor_call(actor, request, request_size, response, capacity,
                             timeout_ns, &info);
  trace_actor_args(rk__trace_span_end(&span, "actor"), &t, info.correlation_id,
                   s);
  if (out_info && info.correlation_id) *out_info = info; /* one came */
  return s;
}

static rk_status_t actor_call(rk_actor_t *actor, const void *request,
                              size_t request_size, void *response,
                              size_t capacity, uint64_t timeout_ns,
                              rk_actor_message_t *out_info) {
  RK_RETURN_IF_ERROR(check_send(actor, request, request_size, "actor_call"));
  RK_RETURN_IF_ERROR(check_capacity(actor, response, capacity));
  if (actor->mode == RK_ACTOR_PERSISTENT && holds_loan(actor))
    return loan_held("actor_call");
  /* Counted from the start: a call waits (or runs the request) anyway. */
  bool counted = false;
  count_waiting(actor, &counted);
  rk_status_t s =
      call(actor, request, response, capacity, timeout_ns, out_info, &counted);
  leave(actor, counted);
  return s;
}

/* ---- Zero-copy receive ----------------------------------------------------
 */

/* Lends up to `max` responses if the drain role is free and any are
 * there: in place in the output ring when no call waits and nothing is
 * queued, else copied out of the receive queue (after a drain that gives
 * waiting calls their answers). Returns how many, holding the role when
 * any. */
static size_t lend_now(rk_actor_t *a, size_t max, rk_actor_loan_t *loan) {
  if (!take_role(a)) return 0;
  size_t k = 0;
  rk__ring_end_t *c = &a->out_c;
  if (LOAD_RELAXED(&a->nwaiters) == 0 && LOAD_RELAXED(&a->rq_count) == 0) {
    const uint64_t n = rk__ring_available_upto(c, clamp_want(max));
    k = n < max ? (size_t)n : max;
    if (k) observe_responses(c, k);
    loan->zero_copy = true;
  } else {
    (void)drain(a);
    const uint32_t slot_size = c->slot_size;
    pthread_mutex_lock(&a->host_lock);
    k = a->rq_count < max ? a->rq_count : max;
    if (k > a->loan_cap) {
      unsigned char *grown = realloc(a->loan_buf, k * slot_size);
      if (grown) {
        a->loan_buf = grown;
        a->loan_cap = k;
      } else {
        k = a->loan_cap; /* lend fewer; the rest stays queued */
      }
    }
    for (size_t i = 0; i < k; ++i) {
      memcpy(a->loan_buf + i * slot_size, a->rq + a->rq_head * slot_size,
             slot_size);
      a->rq_head = (a->rq_head + 1) % a->rq_cap;
    }
    __atomic_fetch_sub(&a->rq_count, k, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&a->host_lock);
    loan->zero_copy = false;
  }
  if (k == 0) {
    __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
    bump_epoch(a);
    return 0;
  }
  __atomic_store_n(&a->loan_owner, (uintptr_t)&t_loan_key, __ATOMIC_RELAXED);
  loan->actor = a;
  loan->count = k;
  return k;
}

rk_status_t rk_actor_receive_lend(rk_actor_t *actor, size_t max,
                                  uint64_t timeout_ns,
                                  rk_actor_loan_t *out_loan) {
  if (out_loan) memset(out_loan, 0, sizeof *out_loan);
  if (!actor || !out_loan || max == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_receive_lend: actor, out_loan and a max of at "
                    "least 1 are required");
  if (actor->remote) return rk__proxy_refuse(actor, "actor_receive_lend");
  if (holds_loan(actor)) return loan_held("actor_receive_lend");
  bool counted = false;
  limit_t limit = limit_of(timeout_ns, 0);
  rk_status_t s = RK_OK;
  size_t got = 0;
  for (;;) {
    got = lend_now(actor, max, out_loan);
    if (got) break;
    s = wait_until(actor, receivable, NULL, &limit, &counted);
    if (s != RK_OK) {
      /* One more look: the wait may have ended with something there. */
      got = lend_now(actor, max, out_loan);
      break;
    }
  }
  leave(actor, counted);
  if (got) return RK_OK;
  if (timeout_ns == 0)
    return rk__fail(RK_ERR_QUEUE_EMPTY, "actor_receive_lend: no response");
  if (s == RK_ERR_INVALID_STATE)
    return stopped_error(
        actor, "actor_receive_lend: no response is left and none will come");
  return rk__fail(RK_ERR_TIMEOUT,
                  "actor_receive_lend: no response within %.3f ms",
                  (double)timeout_ns / 1e6);
}

const void *rk_actor_loan_response(const rk_actor_loan_t *loan, size_t i,
                                   rk_actor_message_t *out_info) {
  if (!loan || !loan->actor || i >= loan->count) return NULL;
  rk_actor_t *a = loan->actor;
  const unsigned char *slot = loan->zero_copy
                                  ? rk__ring_peek(&a->out_c, (uint32_t)i)
                                  : a->loan_buf + i * a->out_c.slot_size;
  if (!slot) return NULL;
  if (out_info) fill_info((const rk_abi_msg_t *)slot, out_info);
  return slot + RK_ABI_MSG_HEADER;
}

rk_status_t rk_actor_loan_release(rk_actor_loan_t *loan) {
  if (!loan || !loan->actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_loan_release: not a loan (released already?)");
  rk_actor_t *a = loan->actor;
  if (loan->zero_copy) {
    rk__ring_release(&a->out_c, (uint32_t)loan->count);
    rk__ring_signal_space(a->out_c.hdr);
  }
  memset(loan, 0, sizeof *loan);
  __atomic_store_n(&a->loan_owner, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
  bump_epoch(a); /* threads waiting for the role */
  return RK_OK;
}

/* ---- Stats --------------------------------------------------------------- */

rk_status_t rk_actor_stats(rk_actor_t *actor, rk_actor_stats_t *out_stats) {
  if (!actor || !out_stats)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_stats: actor and out_stats are required");
  if (actor->remote) return rk__proxy_stats(actor, out_stats);
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  const rk_abi_control_t *c = actor->control;
  st.state = get_state(actor);
  st.mode = actor->mode;
  st.execution = actor->execution;
  if (actor->relaunch) {
    uint64_t requests = 0;
    int32_t last = 0;
    rk__relaunch_counts(actor->relaunch, &st.batches, &requests);
    rk__relaunch_faults(actor->relaunch, &st.device_faults, &last);
  }
  if (actor->mode == RK_ACTOR_TRADITIONAL)
    st.device_faults = LOAD_ACQUIRE(&actor->trad_faults);
  rk__supervise_stats(actor, &st);
  /* Exact once the senders have returned; while they run, a send counts
   * from when it takes its id, and a failing one may be off for a moment
   * (the two words are read apart). */
  const uint64_t ids = LOAD_RELAXED(&actor->next_id) - 1,
                 unsent = LOAD_RELAXED(&actor->unsent);
  st.sent = (ids > unsent ? ids - unsent : 0) + LOAD_RELAXED(&actor->direct);
  st.dropped_sends = LOAD_RELAXED(&actor->dropped);
  if (actor->mode == RK_ACTOR_TRADITIONAL) {
    st.processed = LOAD_ACQUIRE(&actor->trad_processed);
    st.handler_errors = LOAD_RELAXED(&actor->trad_errors);
    st.last_handler_code = LOAD_RELAXED(&actor->trad_last_error);
  } else {
    st.processed = LOAD_ACQUIRE(&c->processed);
    st.handler_errors = LOAD_RELAXED(&c->errors);
    st.last_handler_code = LOAD_RELAXED(&c->last_error);
  }
  st.input_depth = rk__ring_depth(actor->device.in);
  st.input_capacity = actor->device.in->capacity;
  st.output_capacity = actor->device.out->capacity;
  st.request_size = actor->in_size;
  st.response_size = actor->out_size;
  st.state_size = actor->state_size;
  uint64_t *copy = malloc(sizeof(uint64_t) * kLatencyWindow);
  if (!copy) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_stats");
  pthread_mutex_lock(&actor->host_lock);
  st.output_depth = rk__ring_depth(actor->device.out) + actor->rq_count;
  size_t n = actor->lat_total < kLatencyWindow ? (size_t)actor->lat_total
                                               : kLatencyWindow;
  memcpy(copy, actor->lat, n * sizeof *copy);
  pthread_mutex_unlock(&actor->host_lock);
  st.latency_samples = n;
  if (n) {
    qsort(copy, n, sizeof *copy, cmp_u64);
    st.latency_p50_ns = (double)copy[(n - 1) / 2];
    st.latency_p99_ns = (double)copy[(size_t)((double)(n - 1) * 0.99)];
  }
  free(copy);
  *out_stats = st;
  return RK_OK;
}

/* ---- Supervision hooks ----------------------------------------------------
 * What supervise.c and registry.c need from the actor (actor_internal.h). */

rk_abi_control_t *rk__actor_control(rk_actor_t *actor) {
  return actor->control;
}

/* Control requests and a restart, one at a time (ctl_lock). */
rk_status_t rk_actor_activate(rk_actor_t *actor) {
  if (!actor) return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor is NULL");
  if (actor->remote) return rk__proxy_refuse(actor, "actor_activate");
  pthread_mutex_lock(&actor->ctl_lock);
  rk_status_t s = actor_activate(actor);
  pthread_mutex_unlock(&actor->ctl_lock);
  return s;
}

rk_status_t rk_actor_deactivate(rk_actor_t *actor) {
  if (!actor) return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor is NULL");
  if (actor->remote) return rk__proxy_refuse(actor, "actor_deactivate");
  pthread_mutex_lock(&actor->ctl_lock);
  rk_status_t s = actor_deactivate(actor);
  pthread_mutex_unlock(&actor->ctl_lock);
  return s;
}

rk_status_t rk_actor_terminate(rk_actor_t *actor, uint64_t timeout_ns) {
  if (!actor) return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor is NULL");
  if (actor->remote) return rk__proxy_refuse(actor, "actor_terminate");
  pthread_mutex_lock(&actor->ctl_lock);
  rk_status_t s = actor_terminate(actor, timeout_ns);
  pthread_mutex_unlock(&actor->ctl_lock);
  return s;
}

/* Asks a persistent device side to stop now (RK_ABI_TERMINATE_NOW: the
 * queued requests stay queued) and waits up to timeout_ns for it to say
 * it stopped. Meanwhile responses nobody took are moved to the receive
 * queue, as terminate does, so a device side blocked on a full output
 * ring gets to its stop. Caller holds ctl_lock. */
static rk_status_t stop_device(rk_actor_t *a, uint64_t timeout_ns) {
  rk_abi_control_t *c = a->control;
  STORE_RELEASE(&c->terminate, RK_ABI_TERMINATE_NOW);
  rk__ring_kick(a->device.in);
  const uint64_t deadline = deadline_after(timeout_ns);
  while (!LOAD_ACQUIRE(&c->terminated)) {
    if (expired(deadline)) return RK_ERR_TIMEOUT;
    if (take_role(a)) {
      drain(a);
      __atomic_store_n(&a->drain_role, 0u, __ATOMIC_RELEASE);
      bump_epoch(a);
    }
    const struct timespec ts = {0, 50000}; /* a restart is rare */
    nanosleep(&ts, NULL);
  }
  return RK_OK;
}

/* A new device side on the same rings after stop_device. */
static rk_status_t start_device(rk_actor_t *a, bool last_known) {
  rk_abi_control_t *c = a->control;
  /* Host field; the device fields are the host's while no side runs. */
  STORE_RELEASE(&c->terminate, 0u);
  if (a->relaunch)
    return rk__relaunch_restart(a->relaunch, a->fresh_state, last_known);
  void *state = NULL;
  if (last_known && a->has_state) {
    state = malloc(a->state_size);
    if (!state) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: restart state");
    rk_status_t s =
        rk__hal_actor_read_state(a->context, a->worker, state, a->state_size);
    if (s != RK_OK) {
      free(state);
      STORE_RELEASE(&c->terminate, RK_ABI_TERMINATE_NOW);
      return s;
    }
  }
  rk__hal_actor_release(a->context, a->worker, true);
  a->worker = NULL;
  __atomic_store_n(&c->run_state, RK_ABI_RUN_STARTING, __ATOMIC_RELAXED);
  STORE_RELEASE(&c->terminated, 0u);
  a->device.initial_state = last_known ? state : a->fresh_state;
  rk_status_t s = rk__hal_actor_start(a->context, &a->device, &a->worker);
  a->device.initial_state = NULL;
  free(state);
  if (s != RK_OK) {
    /* No device side: as good as stopped for destroy. */
    a->worker = NULL;
    STORE_RELEASE(&c->terminated, 1u);
  }
  return s;
}

/* Traditional mode: waits for a request running, then resets the state. */
static rk_status_t restart_traditional(rk_actor_t *a, bool last_known,
                                       uint64_t timeout_ns) {
  if (lock_until(&a->trad_lock, deadline_after(timeout_ns)) != 0)
    return RK_ERR_TIMEOUT;
  rk_status_t s = RK_OK;
  if (!last_known && a->has_state) {
    void *zeros = NULL;
    const void *init = a->fresh_state;
    if (!init) init = zeros = calloc(1, a->state_size);
    s = init ? rk_context_copy_to_device(a->context, a->d_state, init,
                                         a->state_size)
             : rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: state");
    free(zeros);
  }
  pthread_mutex_unlock(&a->trad_lock);
  return s;
}

/* ctl_lock for the supervisor, which must not wait for ever on a control
 * request (rk_actor_terminate without a deadline on a handler that never
 * returns): false after timeout_ns; that request stops the actor anyway. */
static bool ctl_lock_for_supervisor(rk_actor_t *a, uint64_t timeout_ns) {
  return lock_until(&a->ctl_lock, deadline_after(timeout_ns)) == 0;
}

rk_status_t rk__actor_restart(rk_actor_t *a, bool last_known,
                              uint64_t stop_timeout_ns, const char *cause) {
  if (!ctl_lock_for_supervisor(a, stop_timeout_ns))
    return rk__fail(RK_ERR_INVALID_STATE,
                    "actor: a control request (terminate) is in progress");
  const rk_actor_state_t st = get_state(a);
  if (st == RK_ACTOR_TERMINATING || stopped_state(st)) {
    pthread_mutex_unlock(&a->ctl_lock);
    return rk__fail(RK_ERR_INVALID_STATE,
                    "actor: cannot restart an actor that is %s",
                    rk_actor_state_name(st));
  }
  char why[160];
  rk_status_t s;
  if (a->external) {
    s = rk__fail(RK_ERR_UNIMPLEMENTED,
                 "actor: a test-driven actor cannot be restarted");
  } else if (a->mode == RK_ACTOR_TRADITIONAL) {
    s = restart_traditional(a, last_known, stop_timeout_ns);
  } else {
    s = stop_device(a, stop_timeout_ns);
    if (s == RK_OK) s = start_device(a, last_known);
  }
  if (s == RK_ERR_TIMEOUT) {
    snprintf(why, sizeof why,
             "the handler did not stop within %.3f ms for a restart after %s",
             (double)stop_timeout_ns / 1e6, cause);
    fail(a, why);
    s = rk__fail(RK_ERR_TIMEOUT, "actor: %s", why);
  } else if (s != RK_OK) {
    char detail[96];
    snprintf(detail, sizeof detail, "%s", rk_last_error());
    snprintf(why, sizeof why, "the restart after %s failed: %s", cause, detail);
    fail(a, why);
    s = rk__fail(s, "actor: %s", why);
  } else {
    rk__k2k_restarted(a->k2k);   /* other actors' sends are taken again */
    rk__ring_kick(a->device.in); /* the queued requests, if any */
  }
  pthread_mutex_unlock(&a->ctl_lock);
  return s;
}

void rk__actor_stop_and_fail(rk_actor_t *a, uint64_t stop_timeout_ns,
                             const char *why) {
  if (!ctl_lock_for_supervisor(a, stop_timeout_ns)) return;
  const rk_actor_state_t st = get_state(a);
  if (!stopped_state(st)) {
    if (a->mode == RK_ACTOR_TRADITIONAL) {
      /* No request starts once the actor is FAILED; one running keeps
       * its memory (destroy looks at trad_running). */
      if (lock_until(&a->trad_lock, deadline_after(stop_timeout_ns)) == 0) {
        STORE_RELEASE(&a->control->terminated, 1u);
        fail(a, why);
        pthread_mutex_unlock(&a->trad_lock);
      } else {
        fail(a, why);
      }
    } else {
      /* A side that misses the deadline stays as a stuck handler does:
       * destroy leaves it its memory. */
      if (!a->external) (void)stop_device(a, stop_timeout_ns);
      fail(a, why);
    }
  }
  pthread_mutex_unlock(&a->ctl_lock);
}

void rk__actor_counts(rk_actor_t *a, rk__actor_counts_t *out) {
  memset(out, 0, sizeof *out);
  if (a->mode == RK_ACTOR_TRADITIONAL) {
    out->processed = LOAD_ACQUIRE(&a->trad_processed);
    out->handler_errors = LOAD_RELAXED(&a->trad_errors);
    out->last_handler_code = LOAD_RELAXED(&a->trad_last_error);
    out->device_faults = LOAD_ACQUIRE(&a->trad_faults);
    out->last_device_status = LOAD_RELAXED(&a->trad_last_fault);
    out->waiting = LOAD_ACQUIRE(&a->trad_running);
  } else {
    const rk_abi_control_t *c = a->control;
    out->processed = LOAD_ACQUIRE(&c->processed);
    out->handler_errors = LOAD_RELAXED(&c->errors);
    out->last_handler_code = LOAD_RELAXED(&c->last_error);
    if (a->relaunch)
      rk__relaunch_faults(a->relaunch, &out->device_faults,
                          &out->last_device_status);
    out->waiting = rk__ring_depth(a->device.in);
  }
  /* Responses nobody received fill the output ring: the device side
   * waits for room, it does not hang. */
  out->output_full = rk__ring_depth(a->device.out) >= a->device.out->capacity;
}

const char *rk__actor_fail_reason(const rk_actor_t *a) {
  return get_state(a) == RK_ACTOR_FAILED ? a->fail_reason : "";
}

bool rk__actor_can_read_state(const rk_actor_t *a) {
  if (a->external) return false;
  if (a->mode == RK_ACTOR_TRADITIONAL || a->relaunch || !a->has_state)
    return true;
  return rk__hal_actor_can_read_state(a->context);
}

rk_status_t rk__actor_inject_device_fault(rk_actor_t *a, rk_status_t status) {
  if (a->mode == RK_ACTOR_TRADITIONAL)
    __atomic_store_n(&a->trad_inject, (int32_t)status, __ATOMIC_RELAXED);
  else if (a->relaunch)
    rk__relaunch_inject_fault(a->relaunch, status);
  else
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "actor: a resident device side has no launch to fail");
  return RK_OK;
}
/* ---- For actor-to-actor messaging (k2k.c) -------------------------------- */

rk__k2k_t *rk__actor_k2k(const rk_actor_t *a) { return a->k2k; }

/* How long rk__actor_quiet_begin waits for a deactivated device side to
 * finish the message in hand. */
enum { kQuietWaitMs = 10000 };

rk_status_t rk__actor_quiet_begin(rk_actor_t *a, bool stopped_ok) {
  pthread_mutex_lock(&a->ctl_lock);
  const rk_actor_state_t st = get_state(a);
  if (st != RK_ACTOR_LAUNCHED && st != RK_ACTOR_DEACTIVATED &&
      !(stopped_ok && st == RK_ACTOR_TERMINATED)) {
    pthread_mutex_unlock(&a->ctl_lock);
    return rk__fail(RK_ERR_INVALID_STATE,
                    "'%s' is %s; deactivate it first (rk_actor_deactivate)",
                    rk__actor_handler_name(a), rk_actor_state_name(st));
  }
  /* A host thread's loop (a CPU worker, a relaunch driver): it says idle
   * (release) once it has seen `active` cleared, after the message in
   * hand and its look at the inbox; it runs no handler until `active` is
   * set again, which ctl_lock keeps from happening. */
  const uint64_t deadline = deadline_after((uint64_t)kQuietWaitMs * 1000000u);
  while ((a->worker || a->relaunch) && st == RK_ACTOR_DEACTIVATED &&
         LOAD_ACQUIRE(&a->control->run_state) == RK_ABI_RUN_ACTIVE) {
    if (expired(deadline)) {
      pthread_mutex_unlock(&a->ctl_lock);
      return rk__fail(RK_ERR_TIMEOUT,
                      "'%s' is still handling a message %d s after it was "
                      "deactivated",
                      rk__actor_handler_name(a), kQuietWaitMs / 1000);
    }
    const struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  /* A relaunch caller may run a batch of its own (rk__relaunch_hold):
   * whoever runs one holds the role, and none runs until quiet_end. A
   * terminated actor runs none, and one being destroyed may have let its
   * driver go already (release() frees it before the actor leaves the
   * receivers' senders lists, which rk_actor_connect walks). */
  a->quiet_relaunch = a->relaunch && st != RK_ACTOR_TERMINATED;
  if (a->quiet_relaunch) rk__relaunch_lock(a->relaunch);
  return RK_OK;
}

void rk__actor_quiet_end(rk_actor_t *a) {
  if (a->quiet_relaunch) rk__relaunch_unlock(a->relaunch);
  a->quiet_relaunch = false;
  pthread_mutex_unlock(&a->ctl_lock);
}
const char *rk__actor_handler_name(const rk_actor_t *a) {
  return a->function ? rk_function_name(a->function) : "?";
}
rk_actor_mode_t rk__actor_mode(const rk_actor_t *a) { return a->mode; }
void rk__actor_park_when_idle(rk_actor_t *a, bool on) {
  __atomic_store_n(&a->park_idle, on ? 1u : 0u, __ATOMIC_RELAXED);
}
bool rk__actor_offer_idle_work(rk_actor_t *a, rk__idle_work_t *work) {
  return rk__idle_slot_offer(&a->idle, work);
}
void rk__actor_withdraw_idle_work(rk_actor_t *a, rk__idle_work_t *work) {
  rk__idle_slot_withdraw(&a->idle, work);
}

bool rk__actor_direct_ok(rk_actor_t *a) {
  return a->mode == RK_ACTOR_PERSISTENT && !a->relaunch &&
         get_state(a) == RK_ACTOR_ACTIVE && rk__idle_direct_ok(a->control);
}

void rk__actor_direct(rk_actor_t *a, const rk_abi_msg_t *req,
                      rk_abi_msg_t *resp, rk_actor_message_t *out_info) {
  rk__idle_direct(req, resp);
  /* Only the worker in its turn gets here: one writer. */
  __atomic_store_n(&a->direct, LOAD_RELAXED(&a->direct) + 1, __ATOMIC_RELAXED);
  fill_info(resp, out_info);
}
