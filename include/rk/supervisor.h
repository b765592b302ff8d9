/* rk/supervisor.h - supervision: restarting actors that fail, and telling
 * the others when one is gone for good.
 *
 *   rk_supervisor_options_t o;
 *   rk_supervisor_options_init(&o);          // one-for-one, 3 in 5 s, fresh
 *   o.strategy = RK_SUPERVISE_ONE_FOR_ALL;
 *   rk_supervisor_t *sup;
 *   rk_supervisor_create(&o, &sup);
 *   rk_supervisor_add(sup, producer);
 *   rk_supervisor_add(sup, consumer);
 *   ...
 *   rk_supervisor_destroy(sup);              // before the actors go
 *
 * or, for one actor, rk_actor_supervise(actor, &o).
 *
 * Faults. A supervised actor faults when
 *   - its handler fails (RK_ACTOR_FAULT_HANDLER): an `int` handler returned
 *     non-zero. That is the only way a handler reports failure (see
 *     rk/actor.h); under the default policy (RK_HANDLER_FAULT_NONZERO) a
 *     supervised actor treats it as a crash whose state may be damaged.
 *     The response still reaches its caller with RK_ERR_HANDLER and the
 *     code. Handlers whose non-zero returns are ordinary answers (a
 *     division by zero refused) use RK_HANDLER_FAULT_NEVER;
 *   - its device side cannot run a request (RK_ACTOR_FAULT_DEVICE): a
 *     relaunch batch or a traditional launch or copy failed (the requests
 *     of that batch were answered with the failure's status);
 *   - it hangs (RK_ACTOR_FAULT_DEADLINE): requests are waiting and none
 *     finished for `hang_timeout_ns` (off by default), or the device side
 *     did not stop within `stop_timeout_ns` when asked to for a restart, or
 *     rk_actor_terminate's deadline passed (the actor is FAILED);
 *   - an actor linked to it failed for good (RK_ACTOR_FAULT_LINK), or, in
 *     a one-for-all group, another member faulted (RK_ACTOR_FAULT_GROUP).
 * Faults are noticed by one supervision thread per process that looks at
 * every supervised or linked actor about once a millisecond (counters in
 * the control block, no message traffic); faults noticed in one look count
 * as one.
 *
 * Restart. The supervisor stops the device side at once (requests it holds
 * -- the rest of a batch -- are answered by the old incarnation; requests
 * still queued stay queued), starts a new one (CPU worker thread, relaunch
 * driver with a new stream and device buffers; traditional mode: the state
 * only) with the state the policy says -- the actor's initial state
 * (RK_RESTART_FRESH) or the state the old one left (RK_RESTART_LAST_KNOWN,
 * including the faulting request's changes) -- and the new incarnation
 * answers the queued requests. The handle, the rings, correlation ids and
 * the clock stay; callers keep waiting and get their answers. The actor
 * stays ACTIVE (or DEACTIVATED) throughout; rk_actor_stats counts restarts
 * by cause.
 *
 * Giving up. More than max_restarts restarts within window_ns (counted per
 * actor one-for-one, per group one-for-all), a restart that fails, or a
 * hang that does not end: the actor is stopped and FAILED. Every thread
 * waiting on it wakes with RK_ERR_INVALID_STATE and rk_last_error() names
 * the cause ("request 12 was not answered: the actor failed (restarted 3
 * times within 5000.000 ms; the last fault: the handler returned 7)"). In a
 * one-for-all group every member fails. Each linked actor then faults
 * (RK_ACTOR_FAULT_LINK): supervised ones restart under their own policy,
 * others are stopped and FAILED naming the actor that failed. on_event
 * hears of every restart and failure.
 *
 * Not restartable in place: an actor whose handler never returns. A thread
 * cannot be stopped inside a handler, so such an actor is FAILED (its
 * waiters woken, its links told), not restarted. Resident CUDA actors
 * restart with fresh state only (their state is not read back), and a
 * CUDA kernel asked to stop answers what is queued first.
 *
 * Thread safety: all functions may be called from any thread, except that
 * on_event runs on the supervision thread and must not call
 * rk_supervisor_*, rk_actor_supervise, rk_actor_link/unlink,
 * rk_cluster_link/unlink or rk_actor_destroy (it may send, receive, read
 * stats, remote actors' included). activate,
 * deactivate and terminate wait for a restart in progress to finish.
 * rk_actor_destroy removes the actor from its group and its links first.
 */
#ifndef RK_SUPERVISOR_H_
#define RK_SUPERVISOR_H_

#include <stdint.h>

#include "rk/actor.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_supervisor rk_supervisor_t;

typedef enum rk_supervisor_strategy {
  RK_SUPERVISE_ONE_FOR_ONE = 0, /* restart only the actor that faulted */
  RK_SUPERVISE_ONE_FOR_ALL = 1, /* restart every member of the group */
} rk_supervisor_strategy_t;

typedef enum rk_restart_state {
  RK_RESTART_FRESH = 0,      /* options.initial_state (or zeroes) again */
  RK_RESTART_LAST_KNOWN = 1, /* the state the old device side left */
} rk_restart_state_t;

typedef enum rk_handler_faults {
  RK_HANDLER_FAULT_NONZERO = 0, /* a non-zero return is a fault */
  RK_HANDLER_FAULT_NEVER = 1,   /* returns are answers, never faults */
} rk_handler_faults_t;

typedef enum rk_supervisor_event_kind {
  RK_SUPERVISOR_RESTARTED = 0, /* the actor runs again */
  RK_SUPERVISOR_FAILED = 1,    /* the actor is FAILED for good */
} rk_supervisor_event_kind_t;

typedef struct rk_supervisor_event {
  rk_supervisor_event_kind_t kind;
  rk_actor_t *actor;
  rk_actor_fault_t cause;
  int32_t code;       /* the handler's code or the device's rk_status_t */
  const char *detail; /* what happened, in words; valid during the call */
} rk_supervisor_event_t;

typedef void (*rk_supervisor_event_fn)(const rk_supervisor_event_t *event,
                                       void *user);

typedef struct rk_supervisor_options {
  rk_supervisor_strategy_t strategy;  /* default one-for-one */
  uint32_t max_restarts;              /* in window_ns; default 3; 0: none */
  uint64_t window_ns;                 /* default 5 s */
  rk_restart_state_t restart_state;   /* default fresh */
  rk_handler_faults_t handler_faults; /* default non-zero */
  /* How long a restart waits for the device side to stop (default 1 s);
   * past it the actor is FAILED. */
  uint64_t stop_timeout_ns;
  /* An ACTIVE actor with requests waiting that finished none for this
   * long, while its output ring had room: a hang (default 0: not
   * checked). Set it above the longest a request may take. */
  uint64_t hang_timeout_ns;
  rk_supervisor_event_fn on_event; /* may be NULL */
  void *user;
} rk_supervisor_options_t;

/* Fills in the defaults above. */
void rk_supervisor_options_init(rk_supervisor_options_t *options);

/* A group with `options` (NULL: defaults), empty. RK_ERR_INVALID_ARGUMENT
 * for an unknown strategy, restart state or fault policy, or a zero
 * window or stop timeout. */
rk_status_t rk_supervisor_create(const rk_supervisor_options_t *options,
                                 rk_supervisor_t **out_supervisor);

/* Supervises `actor` from now on (faults before this are not counted).
 * RK_ERR_ALREADY_EXISTS when it is supervised already (by any group);
 * RK_ERR_INVALID_STATE when it is TERMINATING, TERMINATED or FAILED;
 * RK_ERR_UNIMPLEMENTED for RK_RESTART_LAST_KNOWN where the backend cannot
 * read a resident actor's state back (CUDA). */
rk_status_t rk_supervisor_add(rk_supervisor_t *supervisor, rk_actor_t *actor);

/* Stops supervising `actor` (it keeps running). Waits for a restart of it
 * in progress. RK_ERR_NOT_FOUND when it is not in this group. */
rk_status_t rk_supervisor_remove(rk_supervisor_t *supervisor,
                                 rk_actor_t *actor);

/* Removes every member (they keep running) and frees the group. NULL is
 * ignored. */
void rk_supervisor_destroy(rk_supervisor_t *supervisor);

/* A group of one owned by the actor (freed with it): the actor restarts
 * under `options` (NULL: defaults). Errors as rk_supervisor_create and
 * rk_supervisor_add. */
rk_status_t rk_actor_supervise(rk_actor_t *actor,
                               const rk_supervisor_options_t *options);

/* Links two actors both ways: when either fails for good, the other
 * faults with RK_ACTOR_FAULT_LINK. RK_ERR_ALREADY_EXISTS when linked
 * already; RK_ERR_INVALID_ARGUMENT for NULL or a == b. */
rk_status_t rk_actor_link(rk_actor_t *a, rk_actor_t *b);
/* RK_ERR_NOT_FOUND when they are not linked. */
rk_status_t rk_actor_unlink(rk_actor_t *a, rk_actor_t *b);

#ifdef __cplusplus
}
#endif

#endif /* RK_SUPERVISOR_H_ */
