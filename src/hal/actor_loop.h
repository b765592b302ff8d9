/* The device side of a persistent actor when it is a host thread: the CPU
 * backend's worker, and the relaunch driver of backends that cannot keep a
 * kernel resident (actor/actor_relaunch.c).
 *
 * rk__actor_loop_run() follows the control block (active, terminate) and the
 * input ring: it spins for `spin_ns` after the last request, then parks on
 * the ring's wake sequence (see base/ring.h); while requests are published
 * it hands them to `handle` in batches of up to `batch`. On terminate
 * (RK_ABI_TERMINATE_DRAIN) it answers the requests already queued, sets
 * control->terminated and kicks the output ring, and returns; on
 * RK_ABI_TERMINATE_NOW (a restart) it does the same without answering
 * what is still queued.
 */
#ifndef RK_HAL_ACTOR_LOOP_H_
#define RK_HAL_ACTOR_LOOP_H_

#include <stdbool.h>
#include <stdint.h>

#include "abi/actor_abi.h"
#include "base/ring.h"
#include "base/trace.h"

/* Answers up to `n` (>= 1) published requests of `in` into `out` and
 * commits them (rk__actor_commit); returns how many, 0 when the output ring
 * has no space. */
typedef uint32_t (*rk__actor_batch_fn)(void *ctx, rk__ring_end_t *in,
                                       rk__ring_end_t *out, uint32_t n);

/* Work a host-thread device side does in place of spinning while it
 * waits: a cluster drives its transport from the worker of an actor it
 * exports (cluster/cluster.c), so that the requests reach the worker and
 * its answers leave without a second spinning thread. `turn` runs once per
 * turn of the loop while the actor is active and returns how much it did
 * (nonzero counts as activity: the spin goes on); `leave` runs once when
 * the loop stops turning (it parks or stops) after at least one turn. */
typedef struct rk__idle_work {
  unsigned (*turn)(void *user);
  void (*leave)(void *user);
  void *user;
} rk__idle_work_t;

/* Where an actor offers its device side idle work, one at a time. The
 * loop sets `busy`, then reads `work` (both sequentially consistent) and
 * clears `busy` after the call; a withdrawal takes `work` away, then waits
 * while `busy` is set, so once it returns no call of the work runs or
 * starts. */
typedef struct rk__idle_slot {
  rk__idle_work_t *work; /* atomic */
  uint32_t busy;         /* atomic */
} rk__idle_slot_t;

/* Offers `work`; false (nothing done) when other work is on offer. */
bool rk__idle_slot_offer(rk__idle_slot_t *slot, rk__idle_work_t *work);
/* Withdraws `work` if it is on offer and waits for a running call of it to
 * return. Never call it from inside the work. */
void rk__idle_slot_withdraw(rk__idle_slot_t *slot, rk__idle_work_t *work);

/* Runs the handler on one request beside the rings, as `handle` would in
 * a batch of one: `req` a request slot (header and payload, 8-byte
 * aligned), `resp` room for a response slot, whose header it fills
 * (rk__actor_respond); the request counted processed (and failed, for a
 * nonzero code) in the control block. */
typedef void (*rk__actor_direct_fn)(void *ctx, const rk_abi_msg_t *req,
                                    rk_abi_msg_t *resp);

typedef struct rk__actor_loop {
  rk_abi_control_t *control;
  rk_abi_ring_t *in, *out;
  void *in_slots, *out_slots;
  uint64_t spin_ns; /* spin this long after the last request, then park */
  /* Optional (NULL: always spin spin_ns): host threads in calls or waiting
   * on the actor; the loop spins only while they and it fit on `cpus`. */
  const uint32_t *host_busy;
  /* Nonzero (atomic; may be NULL): no spinning, park when idle. */
  const uint32_t *park_idle;
  uint32_t cpus;
  uint32_t batch; /* most requests per call of handle */
  /* Other threads consume the input ring too (a relaunch caller running
   * its own batch): this side's end can be stale, so it looks at tail,
   * not at the slot marks, and `handle` refreshes the end from the
   * header. */
  bool shared_consumer;
  rk__actor_batch_fn handle;
  void *ctx;
  /* Optional (NULL: none), for a device side whose consumer role others
   * may take (relaunch: a caller runs a batch itself): held from the last
   * look at the input ring on terminate to the store of `terminated`, so
   * that nobody consumes requests after the device side said it stopped. */
  void (*stop_lock)(void *ctx);
  void (*stop_unlock)(void *ctx);
  /* Optional (NULL: none): messages from other actors (actor/k2k.c), in an
   * inbox beside the input ring. `inbox` handles up to `max` of them and
   * returns how many; `inbox_ready` says whether any wait. Senders signal
   * the input ring after they publish (rk__ring_signal_data), and a parked
   * loop looks at the inbox after announcing itself
   * (rk__ring_wait_data_since_or), so it wakes for them too. */
  uint32_t (*inbox)(void *ctx, uint32_t max);
  bool (*inbox_ready)(void *ctx);
  /* Optional (NULL: none): idle work on offer. While there is some, the
   * loop does a turn of it on every pass while active, instead of the
   * bare spin, even when `park_idle` is set, and parks as usual once
   * `spin_ns` passes without activity (its own or the work's). With
   * `spin_ns` 0 it takes none. */
  rk__idle_slot_t *idle;
  /* Optional (NULL: none): the handler on one request beside the rings,
   * for the idle work (rk__idle_direct). */
  rk__actor_direct_fn direct;
} rk__actor_loop_t;

void rk__actor_loop_run(const rk__actor_loop_t *loop);

/* From inside a turn of idle work only: whether the loop whose turn it is
 * has control block `control` and a `direct`, and its actor is active and
 * not asked to stop. If so, rk__idle_direct may run that loop's handler
 * on requests until the turn ends: the loop is between two batches then,
 * on this thread, and still says it is running (the host, which waits for
 * the loop to say idle after it deactivates the actor or asks it to stop,
 * counts them as the messages in hand). */
bool rk__idle_direct_ok(const rk_abi_control_t *control);
/* In that turn: the handler on one request now (rk__actor_direct_fn),
 * after every request the loop handled before the turn and before every
 * one it takes after it. */
void rk__idle_direct(const rk_abi_msg_t *req, rk_abi_msg_t *resp);

/* Fills the header of the response to `req`; `code` is the handler's
 * return value (0: success). */
void rk__actor_respond(rk_abi_control_t *control, const rk_abi_msg_t *req,
                       rk_abi_msg_t *resp, int32_t code);
/* The same with the physical time read once for a batch
 * (rk__hlc_physical). */
void rk__actor_respond_at(rk_abi_control_t *control, const rk_abi_msg_t *req,
                          rk_abi_msg_t *resp, int32_t code, uint64_t phys);
/* The same for a device side that is the clock's only writer while it
 * answers a batch: it ticks a copy (`clock`, loaded from control->clock
 * before the batch, stored back after it), with no atomic operation per
 * response. Returns the response's stamp, the copy's new value. */
static inline uint64_t rk__actor_respond_local(const rk_abi_control_t *control,
                                               const rk_abi_msg_t *req,
                                               rk_abi_msg_t *resp, int32_t code,
                                               uint64_t clock, uint64_t phys) {
  /* A receive event: max(previous + 1, received + 1, physical now). */
  uint64_t t = clock + 1;
  if (req->timestamp + 1 > t) t = req->timestamp + 1;
  if (phys > t) t = phys;
  /* Field by field (a copy of a header built on the stack measured 18%
   * slower: its wide loads wait for the narrow stores before them). The
   * mark is left to the ring's publish. */
  resp->correlation_id = req->correlation_id;
  resp->timestamp = t;
  resp->type = RK_ABI_MSG_RESPONSE;
  resp->size = control->out_payload;
  resp->code = code;
  resp->status = code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK;
  return t;
}

/* After `done` responses are written at the first `done` reserved slots of
 * `out`: updates the control block's counters (errors and last_error for
 * the `errors` responses that failed), releases the requests (which must
 * have been read), then publishes the responses. */
void rk__actor_commit(rk_abi_control_t *control, rk__ring_end_t *in,
                      rk__ring_end_t *out, uint32_t done, uint64_t errors,
                      int32_t last_error);

/* Traces the handler's run on `total` requests that began with `span`
 * (rk__trace_span_begin, any name): a slice "handler <handler>" on this
 * thread with the correlation ids (one request: "correlation_id"; a batch:
 * "first_id", "last_id", "requests") and `code` (the handler's, or the
 * batch launch's status), and a flow step joining each request of
 * reqs[0..shown) from its send to its reply. Call only when
 * rk__trace_on(). */
void rk__actor_trace_handled(rk__trace_span_t *span, const char *handler,
                             const rk_abi_msg_t *const *reqs, uint32_t shown,
                             uint32_t total, uint64_t last_id, int32_t code);

/* How long an actor side spins before it parks, in nanoseconds:
 * RK_ACTOR_SPIN_US when set, else 200 µs -- or 0 when spinning would take
 * the CPU from the work being waited for: fewer than two CPUs allowed, or
 * `device_on_host_cpus` (a software device such as lavapipe or PoCL's CPU
 * device, whose kernels run on the same CPUs). */
uint64_t rk__actor_spin_ns(bool device_on_host_cpus);

/* Whether spinning can pay off: `threads` runnable threads that would spin
 * or work for one actor fit on `cpus` CPUs. With more, a spinner takes the
 * CPU from the thread it waits for: park at once instead. */
static inline bool rk__actor_may_spin(uint32_t threads, uint32_t cpus) {
  return threads <= cpus;
}

#endif /* RK_HAL_ACTOR_LOOP_H_ */
