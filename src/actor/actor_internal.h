/* Internal hooks of the actor layer, for tests that play the device side
 * themselves (to deliver responses out of order, for instance). */
#ifndef RK_ACTOR_ACTOR_INTERNAL_H_
#define RK_ACTOR_ACTOR_INTERNAL_H_

#include "hal/actor_hal.h"
#include "hal/actor_loop.h"
#include "rk/actor.h"

/* Launches a persistent-mode actor without starting a device side: the
 * caller consumes requests from device->in and produces responses into
 * device->out following the ABI, and sets control->terminated when asked
 * to terminate. *out_device stays valid until the actor is destroyed. */
rk_status_t rk__actor_launch_external(rk_context_t *context, const char *source,
                                      const char *handler,
                                      const rk_actor_options_t *options,
                                      rk_actor_t **out_actor,
                                      const rk__actor_device_t **out_device);

/* ---- Clocks, supervision, registry (actor.c's "Supervision hooks") ---- */

/* The actor's control block (its device-side clock is control->clock):
 * for tests that move an actor's clock. */
rk_abi_control_t *rk__actor_control(rk_actor_t *actor);

/* What the supervisor watches: counters that only grow. `waiting`:
 * requests queued and not yet answered (traditional: one running);
 * `output_full`: the output ring is full (the device side waits for a
 * receiver, it does not hang). */
typedef struct rk__actor_counts {
  uint64_t processed, handler_errors, device_faults, waiting;
  int32_t last_handler_code, last_device_status;
  bool output_full;
} rk__actor_counts_t;
void rk__actor_counts(rk_actor_t *actor, rk__actor_counts_t *out);

/* Restarts the device side (see rk/supervisor.h): stops it now, leaving
 * the queued requests queued, and starts a new one with the fresh or the
 * last-known state. On a miss of stop_timeout_ns (RK_ERR_TIMEOUT) or any
 * other error the actor is FAILED, its reason naming `cause` (which
 * completes "... after <cause>"). RK_ERR_INVALID_STATE, nothing done, for
 * an actor that is terminating or stopped, or busy with a control request
 * for longer than stop_timeout_ns. Serialized with activate, deactivate
 * and terminate. */
rk_status_t rk__actor_restart(rk_actor_t *actor, bool last_known,
                              uint64_t stop_timeout_ns, const char *cause);

/* Stops the device side (waiting up to stop_timeout_ns) and makes the
 * actor FAILED because `why`; waiters wake naming it. Nothing for an
 * actor already TERMINATED or FAILED, or one whose control request
 * (terminate) holds it for longer than stop_timeout_ns: that stops it. */
void rk__actor_stop_and_fail(rk_actor_t *actor, uint64_t stop_timeout_ns,
                             const char *why);

/* Why a FAILED actor failed ("" otherwise). */
const char *rk__actor_fail_reason(const rk_actor_t *actor);

/* Whether a restart can start from the last-known state. */
bool rk__actor_can_read_state(const rk_actor_t *actor);

/* Tests: the actor's next launch or copy fails with `status` (relaunch
 * and traditional; RK_ERR_UNIMPLEMENTED for a resident device side). */
rk_status_t rk__actor_inject_device_fault(rk_actor_t *actor,
                                          rk_status_t status);

/* supervise.c and registry.c: called first by rk_actor_destroy. */
void rk__supervise_forget(rk_actor_t *actor);
void rk__registry_forget(const rk_actor_t *actor);
/* registry.c: process-wide hooks rk_actor_destroy calls first, before the
 * actor leaves its links, group and name (the cluster layer withdraws its
 * exports and remote links there). A hook runs on the destroying thread and
 * must not add or remove hooks; rk__actor_destroy_hook_remove waits for
 * running hooks to return. */
typedef void (*rk__actor_destroy_hook_fn)(rk_actor_t *actor, void *user);
rk_status_t rk__actor_destroy_hook_add(rk__actor_destroy_hook_fn fn,
                                       void *user);
void rk__actor_destroy_hook_remove(rk__actor_destroy_hook_fn fn, void *user);
void rk__actor_destroy_hooks_run(rk_actor_t *actor);
/* supervise.c: `actor` faults with RK_ACTOR_FAULT_LINK because `why` (a
 * linked actor in another process failed): a supervised actor restarts
 * under its policy; another is stopped and FAILED, and its own links are
 * told. Done by the supervision thread within about a millisecond. */
rk_status_t rk__supervise_link_fault(rk_actor_t *actor, const char *why);
/* supervise.c: `actor`'s failure for good is wanted (on) or no longer
 * (off): the supervision thread watches it, as a linked one, so that an
 * actor FAILED by any cause (a missed termination deadline, a link, a
 * supervisor giving up) reaches the failure hooks. */
rk_status_t rk__supervise_watch(rk_actor_t *actor, bool on);
/* supervise.c: process-wide hooks told when a supervised, linked or
 * watched actor fails for good (`why` its reason). They run on the thread
 * that decided it (usually the supervision thread) under the supervision
 * lock: a hook must only note it and return (take no lock that is held
 * while supervision functions are called). Removing a hook waits for a
 * running one. */
typedef void (*rk__actor_failed_hook_fn)(rk_actor_t *actor, const char *why,
                                         void *user);
rk_status_t rk__actor_failed_hook_add(rk__actor_failed_hook_fn fn, void *user);
void rk__actor_failed_hook_remove(rk__actor_failed_hook_fn fn, void *user);
/* supervise.c: the supervision fields of rk_actor_stats. */
void rk__supervise_stats(const rk_actor_t *actor, rk_actor_stats_t *stats);
/* registry.c: "'name'" or the address, into buf. */
bool rk__registry_describe(const rk_actor_t *actor, char *buf, size_t cap);

/* Threads counted as waiting on the actor (in a call, or blocked in a send
 * or receive): tests wait for it before destroying under them. */
uint32_t rk__actor_waiting(const rk_actor_t *actor);
/* For actor-to-actor messaging (k2k.c): the actor's K2K state, its
 * handler's name and its mode. */
struct rk__k2k *rk__actor_k2k(const rk_actor_t *actor);
const char *rk__actor_handler_name(const rk_actor_t *actor);
rk_actor_mode_t rk__actor_mode(const rk_actor_t *actor);
/* Wiring (k2k.c): holds the actor LAUNCHED or DEACTIVATED (or, with
 * `stopped_ok`, TERMINATED), its device side running no handler (a
 * deactivated host thread waited for until it has finished the message in
 * hand, a relaunch driver's role taken), until rk__actor_quiet_end.
 * RK_ERR_INVALID_STATE in any other state, RK_ERR_TIMEOUT when a handler
 * does not finish. Not for an actor resident on a GPU that has run. */
rk_status_t rk__actor_quiet_begin(rk_actor_t *actor, bool stopped_ok);
void rk__actor_quiet_end(rk_actor_t *actor);
/* The device side (a host thread) parks as soon as its input ring is
 * empty instead of spinning: for an actor whose requests arrive through a
 * thread that spins itself (a cluster's progress thread), where a spinning
 * worker only takes a CPU from it. */
void rk__actor_park_when_idle(rk_actor_t *actor, bool on);

/* Offers `work` to the actor's device side, which does it if it is a host
 * thread (a CPU worker, a relaunch driver; a resident GPU kernel never
 * does): see hal/actor_loop.h. False when other work is on offer. */
bool rk__actor_offer_idle_work(rk_actor_t *actor, rk__idle_work_t *work);
/* Withdraws `work` if it is on offer; returns once no call of it runs.
 * Never from inside the work. */
void rk__actor_withdraw_idle_work(rk_actor_t *actor, rk__idle_work_t *work);
/* From inside a turn of the work offered above, on the actor's worker:
 * whether the actor is an active persistent one whose device side can run
 * its handler beside the rings (a CPU worker; rk__idle_direct_ok). If so,
 * rk__actor_direct may be called until the turn ends. */
bool rk__actor_direct_ok(rk_actor_t *actor);
/* In that turn: the handler on one request now, beside the rings
 * (rk__idle_direct; `req` and `resp` request and response slots, 8-byte
 * aligned; out_info as rk_actor_receive fills it for the response),
 * counted sent. It is handled after every request the worker took before
 * the turn: a caller that wants it after requests it sent through the
 * ring must see those answered first. */
void rk__actor_direct(rk_actor_t *actor, const rk_abi_msg_t *req,
                      rk_abi_msg_t *resp, rk_actor_message_t *out_info);

/* ---- Proxies: remote actors as rk_actor_t (rk_cluster_lookup_actor) ----
 *
 * A proxy is an rk_actor_t that stands for a remote handle (rk/cluster.h)
 * and owns it: every public entry point that takes an rk_actor_t asks
 * rk__actor_remote first and, for a proxy, forwards to cluster/proxy.c
 * (which maps the call onto the remote handle or refuses it with a
 * reason). A proxy has none of an actor's own state. */
struct rk_remote_actor;
rk_status_t rk__actor_proxy_new(struct rk_remote_actor *remote,
                                rk_actor_t **out_actor);
/* The remote handle of a proxy; NULL for an actor of this process (and
 * for NULL). */
struct rk_remote_actor *rk__actor_remote(const rk_actor_t *actor);
/* Frees the proxy itself (its handle is released by the caller). */
void rk__actor_proxy_free(rk_actor_t *actor);
/* Threads inside the proxy's entry points (atomic): its destroy waits for
 * them to leave. */
uint32_t *rk__actor_proxy_users(rk_actor_t *actor);

/* cluster/proxy.c: the proxy's side of each entry point. */
rk_status_t rk__proxy_refuse(const rk_actor_t *actor, const char *what);
rk_status_t rk__proxy_send(rk_actor_t *actor, const void *request, size_t size,
                           uint64_t timeout_ns, uint64_t *out_correlation_id);
rk_status_t rk__proxy_receive(rk_actor_t *actor, void *response,
                              size_t capacity, uint64_t timeout_ns,
                              rk_actor_message_t *out_info);
rk_status_t rk__proxy_call(rk_actor_t *actor, const void *request,
                           size_t request_size, void *response, size_t capacity,
                           uint64_t timeout_ns, rk_actor_message_t *out_info);
rk_status_t rk__proxy_send_batch(rk_actor_t *actor, const void *requests,
                                 size_t size, size_t count, uint64_t timeout_ns,
                                 size_t *out_sent, uint64_t *out_first_id);
rk_status_t rk__proxy_receive_batch(rk_actor_t *actor, void *responses,
                                    size_t capacity, size_t max,
                                    uint64_t timeout_ns,
                                    rk_actor_message_t *out_infos,
                                    size_t *out_count);
rk_actor_state_t rk__proxy_state(const rk_actor_t *actor);
rk_status_t rk__proxy_stats(rk_actor_t *actor, rk_actor_stats_t *out_stats);
rk_status_t rk__proxy_name(const rk_actor_t *actor, char *buf, size_t capacity);
void rk__proxy_destroy(rk_actor_t *actor);

#endif /* RK_ACTOR_ACTOR_INTERNAL_H_ */
