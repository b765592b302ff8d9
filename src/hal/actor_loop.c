/* The host-thread device side of persistent actors (see actor_loop.h). */
#include "hal/actor_loop.h"

#include <sched.h>
#include <stdio.h>

#include "base/hlc.h"
#include "base/sys.h"

#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Polls of the rings between two readings of the clock while spinning. */
enum { kSpinPolls = 128 };

/* How long an idle spell spins before it looks whether spinning may pay
 * (rk__actor_may_spin). */
enum { kCountAfterNs = 2000 };
/* How often a lasting idle spell looks again whether the machine has more
 * runnable threads than CPUs (a read of /proc/loadavg, a few us). */
enum { kCrowdEveryNs = 20000 };
/* The same for a loop that drives for others (idle work): it yields while
 * the machine is crowded instead of parking. */
enum { kDriverCrowdEveryNs = 100000 };

/* The run state as the host sees it, written only when it changes. */
static void set_run_state(rk_abi_control_t *c, uint32_t *cached,
                          rk_abi_run_state_t s) {
  if (*cached != (uint32_t)s) {
    *cached = (uint32_t)s;
    STORE_RELEASE(&c->run_state, (uint32_t)s);
  }
}

void rk__actor_respond(rk_abi_control_t *c, const rk_abi_msg_t *req,
                       rk_abi_msg_t *resp, int32_t code) {
  rk__actor_respond_at(c, req, resp, code, rk__hlc_physical());
}

void rk__actor_respond_at(rk_abi_control_t *c, const rk_abi_msg_t *req,
                          rk_abi_msg_t *resp, int32_t code, uint64_t phys) {
  resp->correlation_id = req->correlation_id;
  resp->timestamp = rk__hlc_merge_at(&c->clock, req->timestamp, phys);
  resp->type = RK_ABI_MSG_RESPONSE;
  resp->size = c->out_payload;
  resp->code = code;
  resp->status = code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK;
}

void rk__actor_commit(rk_abi_control_t *c, rk__ring_end_t *in,
                      rk__ring_end_t *out, uint32_t done, uint64_t errors,
                      int32_t last_error) {
  /* Counters before the responses: a host that has seen a response also
   * sees it counted. */
  if (errors) {
    __atomic_store_n(&c->last_error, last_error, __ATOMIC_RELAXED);
    __atomic_store_n(&c->errors, c->errors + errors, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&c->processed, c->processed + done, __ATOMIC_RELAXED);
  /* The requests are read by now: free their slots before publishing the
   * responses, so a host that has seen a response also sees its request
   * gone from the input depth. */
  rk__ring_release(in, done);
  rk__ring_signal_space(in->hdr);
  rk__ring_publish(out, done);
  rk__ring_signal_data(out->hdr);
}

void rk__actor_trace_handled(rk__trace_span_t *span, const char *handler,
                             const rk_abi_msg_t *const *reqs, uint32_t shown,
                             uint32_t total, uint64_t last_id, int32_t code) {
  /* The steps first, inside the slice they bind to. */
  for (uint32_t i = 0; i < shown; ++i)
    rk__trace_commit(
        rk__trace_flow('t', "actor", "message", reqs[i]->correlation_id));
  char name[80];
  snprintf(name, sizeof name, "handler %s", handler);
  span->name = name;
  rk__trace_event_t *e = rk__trace_span_end(span, "actor");
  if (total == 1 && shown == 1) {
    rk__trace_arg_uint(e, "correlation_id", reqs[0]->correlation_id);
  } else if (shown > 0) {
    rk__trace_arg_uint(e, "first_id", reqs[0]->correlation_id);
    rk__trace_arg_uint(e, "last_id", last_id);
    rk__trace_arg_uint(e, "requests", total);
  }
  rk__trace_arg_int(e, "code", code);
  rk__trace_commit(e);
}

uint64_t rk__actor_spin_ns(bool device_on_host_cpus) {
  int cpus[2];
  long spin_us = device_on_host_cpus || rk__allowed_cpus(cpus, 2) < 2 ? 0 : 200;
  rk__env_long("RK_ACTOR_SPIN_US", 0, 1000000, &spin_us);
  return (uint64_t)spin_us * 1000u;
}

/* ---- Idle work ---------------------------------------------------------- */

bool rk__idle_slot_offer(rk__idle_slot_t *slot, rk__idle_work_t *work) {
  rk__idle_work_t *none = NULL;
  return __atomic_compare_exchange_n(&slot->work, &none, work, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

void rk__idle_slot_withdraw(rk__idle_slot_t *slot, rk__idle_work_t *work) {
  if (!__atomic_compare_exchange_n(&slot->work, &work, NULL, false,
                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;
  /* Sequentially consistent on both sides: either the loop's read of
   * `work` after it set `busy` sees NULL, or this read sees `busy`. */
  while (__atomic_load_n(&slot->busy, __ATOMIC_SEQ_CST)) sched_yield();
}

/* A loop that may not spin (spin_ns 0: one CPU, or RK_ACTOR_SPIN_US=0)
 * takes no idle work: driving for others is spinning. */
static bool idle_offered(const rk__actor_loop_t *l) {
  return l->idle && l->spin_ns &&
         __atomic_load_n(&l->idle->work, __ATOMIC_RELAXED);
}

/* The loop whose idle work this thread is in a turn of (rk__idle_direct). */
static _Thread_local const rk__actor_loop_t *t_turn_loop;

bool rk__idle_direct_ok(const rk_abi_control_t *control) {
  const rk__actor_loop_t *l = t_turn_loop;
  return l && l->direct && l->control == control &&
         LOAD_ACQUIRE(&control->active) && !LOAD_ACQUIRE(&control->terminate);
}

void rk__idle_direct(const rk_abi_msg_t *req, rk_abi_msg_t *resp) {
  const rk__actor_loop_t *l = t_turn_loop;
  l->direct(l->ctx, req, resp);
}

/* One turn of the idle work, if any is on offer (`leave`: its leave
 * instead). Returns the turn's count. */
static unsigned idle_call(const rk__actor_loop_t *l, bool leave) {
  if (!idle_offered(l)) return 0;
  __atomic_store_n(&l->idle->busy, 1u, __ATOMIC_SEQ_CST);
  rk__idle_work_t *w = __atomic_load_n(&l->idle->work, __ATOMIC_SEQ_CST);
  unsigned n = 0;
  if (w) {
    if (!leave) {
      t_turn_loop = l;
      n = w->turn(w->user);
      t_turn_loop = NULL;
    } else if (w->leave) {
      w->leave(w->user);
    }
  }
  __atomic_store_n(&l->idle->busy, 0u, __ATOMIC_RELEASE);
  return n;
}

static unsigned idle_turn(const rk__actor_loop_t *l, bool *turned) {
  if (!idle_offered(l)) return 0;
  *turned = true;
  return idle_call(l, false);
}

static void idle_leave(const rk__actor_loop_t *l, bool *turned) {
  if (!*turned) return;
  *turned = false;
  (void)idle_call(l, true);
}

/* Hands up to one batch to the handler. When the output ring is full it
 * does a turn of the idle work if there is some (it may be what takes the
 * answers away), else waits up to a millisecond for space, so the control
 * block is looked at again soon. */
static void handle_some(const rk__actor_loop_t *l, rk__ring_end_t *in,
                        rk__ring_end_t *out, uint64_t avail, bool *turned) {
  uint32_t n = avail < l->batch ? (uint32_t)avail : l->batch;
  if (l->handle(l->ctx, in, out, n) != 0) return;
  if (idle_offered(l))
    (void)idle_turn(l, turned);
  else
    rk__ring_wait_space(out->hdr, out->own, rk__now_ns() + 1000000u);
}

/* Polls the input ring and the inbox up to `polls` times and handles what
 * comes at once; returns whether something came. The checks at the top
 * of the loop come on its next turn (as if it had come just before
 * them). `brief`: the first looks of an idle spell, a short wait between
 * them (rk__cpu_relax_brief); later ones pause. */
static bool spin_polls(const rk__actor_loop_t *l, rk__ring_end_t *in,
                       rk__ring_end_t *out, int polls, bool brief,
                       bool *turned) {
  for (int i = 0; i < polls; ++i) {
    const uint64_t got = rk__ring_available_upto(in, l->batch);
    if (got) {
      handle_some(l, in, out, got, turned);
      return true;
    }
    if (l->inbox && l->inbox(l->ctx, l->batch)) return true;
    if (brief)
      rk__cpu_relax_brief();
    else
      rk__cpu_relax();
  }
  return false;
}

/* Parks until a request or a kick changes the input ring's sequence from
 * `seq`. It also looks at the inbox after announcing itself: a sender
 * signals the input ring after it publishes there. */
static void park(const rk__actor_loop_t *l, rk__ring_end_t *in, uint32_t seq) {
  if (l->inbox_ready)
    rk__ring_wait_data_since_or(in->hdr, in->own, seq, 0, l->inbox_ready,
                                l->ctx);
  else
    rk__ring_wait_data_since(in->hdr, in->own, seq, 0);
}

void rk__actor_loop_run(const rk__actor_loop_t *l) {
  rk_abi_control_t *c = l->control;
  rk__ring_end_t in, out;
  rk__ring_attach(&in, l->in, l->in_slots, false);
  rk__ring_attach(&out, l->out, l->out_slots, true);
  /* A stale end walking the marks would never reach the slots others
   * published after it was last refreshed. */
  if (l->shared_consumer) in.marks = false;
  uint32_t run_state = RK_ABI_RUN_STARTING;
  uint64_t idle_since = 0;
  bool spin_ok = true, counted = false, crowded = false;
  uint64_t crowd_check = 0; /* when the machine's crowding was last read */
  bool stop_locked = false;
  bool turned = false; /* the idle work turned since the loop last parked */
  uint32_t quiet_turns = 0; /* idle turns of the idle work, counted */
  for (;;) {
    /* Read before the control block: a request the host makes after this
     * read changes the sequence, so the waits below cannot miss it. */
    const uint32_t seq = rk__ring_data_seq(in.hdr);
    const uint32_t terminate = LOAD_ACQUIRE(&c->terminate);
    /* Asked to step aside (abi/actor_abi.h; the host relaunches the
     * device side where this one left): nothing in hand, no stop to
     * report. */
    if (terminate == RK_ABI_TERMINATE_PARK) {
      idle_leave(l, &turned);
      return;
    }
    if (terminate == RK_ABI_TERMINATE_NOW) {
      /* A restart: the queued requests are the next device side's. Stop
       * holding the consumer role, so nobody takes one after `terminated`
       * says this side stopped. */
      if (l->stop_lock) {
        l->stop_lock(l->ctx);
        stop_locked = true;
      }
      break;
    }
    if (terminate) {
      /* Requests accepted before termination still get their answers. */
      uint64_t avail = rk__ring_available(&in);
      /* Then the messages from other actors that are already queued. */
      if (avail == 0 && l->inbox && l->inbox(l->ctx, l->batch)) continue;
      if (avail == 0 && l->stop_lock) {
        /* Look again holding the consumer role: whoever else consumed
         * moved the head, so start from the ring's own. */
        l->stop_lock(l->ctx);
        rk__ring_attach(&in, l->in, l->in_slots, false);
        if (l->shared_consumer) in.marks = false;
        avail = rk__ring_available(&in);
        stop_locked = avail == 0;
        if (!stop_locked) l->stop_unlock(l->ctx);
      }
      if (avail == 0) break;
      handle_some(l, &in, &out, avail, &turned);
      continue;
    }
    if (!LOAD_ACQUIRE(&c->active)) {
      idle_leave(l, &turned);
      set_run_state(c, &run_state, RK_ABI_RUN_IDLE);
      /* Wait for a kick (activate, terminate): pass the current tail so
       * queued requests do not count as news. */
      rk__ring_wait_data_since(in.hdr, LOAD_ACQUIRE(&in.hdr->tail), seq, 0);
      continue;
    }
    set_run_state(c, &run_state, RK_ABI_RUN_ACTIVE);
    uint64_t avail = rk__ring_available_upto(&in, l->batch);
    /* The host's requests, then messages from other actors: neither
     * starves the other (one batch of each per turn), and a request that
     * finds the worker idle is answered before the inbox is looked at. */
    if (avail) handle_some(l, &in, &out, avail, &turned);
    const uint32_t got = l->inbox ? l->inbox(l->ctx, l->batch) : 0;
    /* The idle work on every pass, busy or not: it may be what brings the
     * requests and takes the answers away. */
    const unsigned worked = idle_turn(l, &turned);
    if (avail || got || worked) {
      idle_since = 0;
      continue;
    }
    if (idle_offered(l)) {
      /* It drives for others (the idle work): it stays the driver until
       * spin_ns passes without activity, yielding its CPU on each turn
       * while the machine has more runnable threads than CPUs (as a
       * cluster's caller does while it drives), rather than park and
       * leave the work to a thread that must be woken for it. The clock
       * on every fourth idle turn: a reading can take as long as a turn
       * that finds nothing, and a request that comes meanwhile waits. */
      if (idle_since && (++quiet_turns & 3u) != 0) {
        if (crowded) sched_yield();
        continue;
      }
      const uint64_t now = rk__now_ns();
      if (!idle_since) {
        idle_since = now;
        crowd_check = now;
        crowded = false;
      }
      if (now - idle_since < l->spin_ns) {
        if (now - crowd_check >= kDriverCrowdEveryNs) {
          crowd_check = now;
          crowded = rk__machine_crowded();
        }
        if (crowded) sched_yield();
        continue;
      }
      idle_since = 0;
      idle_leave(l, &turned);
      park(l, &in, seq);
      continue;
    }
    uint64_t now;
    if (!idle_since) {
      spin_ok =
          !(l->park_idle && __atomic_load_n(l->park_idle, __ATOMIC_RELAXED));
      counted = !spin_ok; /* nothing to look at: it parks */
      /* A spell begins with polls, before the clock is read: in a
       * ping-pong the next request or message often comes while a
       * reading would be under way (22 ns on a VM), and is seen only
       * after it. */
      if (spin_ok && l->spin_ns &&
          spin_polls(l, &in, &out, kSpinPolls / 4, true, &turned))
        continue;
      now = rk__now_ns();
      idle_since = now;
    } else {
      now = rk__now_ns();
    }
    if (!counted && now - idle_since >= kCountAfterNs) {
      /* Looked at once per idle spell, and only in one that lasts: the
       * host writes the count on every call, and each read here pulls its
       * line away (a round trip of calls idles between every two). */
      counted = true;
      crowd_check = now;
      spin_ok =
          (!l->host_busy ||
           rk__actor_may_spin(
               __atomic_load_n(l->host_busy, __ATOMIC_RELAXED) + 1, l->cpus)) &&
          /* Threads of other processes count too (a cluster's progress
           * thread and its callers, say): spinning while the machine has
           * more runnable threads than CPUs takes a CPU from one of them. */
          !rk__machine_crowded();
    } else if (spin_ok && counted && now - crowd_check >= kCrowdEveryNs) {
      /* ... and again while the spell lasts: the others come and go. */
      crowd_check = now;
      spin_ok = !rk__machine_crowded();
    }
    if (spin_ok && now - idle_since < l->spin_ns) {
      if (spin_polls(l, &in, &out, kSpinPolls, false, &turned)) idle_since = 0;
      continue;
    }
    idle_leave(l, &turned);
    park(l, &in, seq);
    idle_since = 0;
  }
  idle_leave(l, &turned);
  set_run_state(c, &run_state, RK_ABI_RUN_STOPPED);
  STORE_RELEASE(&c->terminated, 1u);
  if (stop_locked) l->stop_unlock(l->ctx);
  /* The host waits for `terminated` on the output ring's wake sequence. */
  rk__ring_kick(out.hdr);
}
