/* rk/actor.h - persistent actor kernels ("ring kernels").
 *
 * An actor is a handler written once in the kernel language
 *
 *   typedef struct { int v; } req_t;
 *   typedef struct { int v; } resp_t;
 *   RK_HANDLER void add_one(const req_t *in, resp_t *out) { out->v = in->v+1; }
 *
 * launched once and fed through lock-free rings: the host writes requests
 * into an input ring, the device side runs the handler on each and writes a
 * response, with the request's correlation id, into an output ring.
 *
 *   rk_actor_options_t o;
 *   rk_actor_options_init(&o);                 // persistent, auto-activated
 *   rk_actor_t *a;
 *   rk_actor_launch(ctx, source, "add_one", &o, &a);
 *   req_t q = {41}; resp_t r;
 *   rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
 *   rk_actor_terminate(a, 1000000000);          // 1 s deadline
 *   rk_actor_destroy(a);
 *
 * Modes. RK_ACTOR_PERSISTENT keeps the handler resident: on the CPU backend a
 * pinned worker thread per actor that spins briefly on the input ring, then
 * parks until a sender wakes it. Backends that cannot keep a kernel resident
 * (WebGPU, OpenCL, Metal) emulate it by relaunch: a host thread follows the
 * input ring the same way and runs each batch of waiting requests with one
 * launch of the handler's batch kernel (rk_actor_stats says which:
 * `execution`). RK_ACTOR_TRADITIONAL runs the same handler with one kernel
 * launch per request (copy in, launch, wait, copy out), performed by the
 * sending thread, one request at a time, for comparison; a call's answer
 * comes straight back to its caller, a send's goes to the output ring.
 *
 * States: LAUNCHED -> ACTIVE <-> DEACTIVATED -> TERMINATING -> TERMINATED,
 * and FAILED when termination missed its deadline or the device side was
 * lost. Any other transition, and sending to an actor that is not ACTIVE,
 * returns RK_ERR_INVALID_STATE and changes nothing.
 *
 * Stopping. Nothing waits on an actor past its stop. A send or call still
 * waiting for room (or, traditional, for its turn) when the actor leaves
 * ACTIVE is refused with RK_ERR_INVALID_STATE. Once the actor is TERMINATED
 * or FAILED, a receive with nothing left and a call whose answer has not
 * come return RK_ERR_INVALID_STATE at once (waiters are woken); for FAILED
 * rk_last_error() names the cause ("the actor failed (the handler did not
 * stop within 50.000 ms of rk_actor_terminate)"). A call that gives up this
 * way leaves a late answer for rk_actor_receive.
 *
 * Handlers that return int report an error with a non-zero value: the
 * response still comes back (with status RK_ERR_HANDLER and the code), the
 * error count rises, and the actor keeps running -- unless it is supervised
 * (rk/supervisor.h), where by default a non-zero return is a fault that
 * restarts it.
 *
 * Around actors: rk/hlc.h (the timestamps every message carries, causal
 * across actors), rk/supervisor.h (restart policies, groups, links) and
 * rk/registry.h (actors by name).
 *
 * Thread safety: send, receive, call (and their batch forms), state and
 * stats may be called from
 * any number of threads at once. activate, deactivate, terminate and
 * destroy are for one controlling thread. destroy may find threads in
 * call, or blocked in send or receive: they wake (the actor stops) and
 * destroy frees nothing before they have returned. A call that starts
 * while destroy runs, or a send or receive that has not blocked yet, is a
 * use after free.
 */
#ifndef RK_ACTOR_H_
#define RK_ACTOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/backend.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_actor rk_actor_t;

/* Timeouts are in nanoseconds: 0 tries once without waiting, this waits
 * as long as it takes. */
#define RK_TIMEOUT_INFINITE UINT64_MAX

typedef enum rk_actor_mode {
  RK_ACTOR_PERSISTENT = 0,
  RK_ACTOR_TRADITIONAL = 1,
} rk_actor_mode_t;

typedef enum rk_actor_state {
  RK_ACTOR_LAUNCHED = 0,
  RK_ACTOR_ACTIVE,
  RK_ACTOR_DEACTIVATED,
  RK_ACTOR_TERMINATING,
  RK_ACTOR_TERMINATED,
  RK_ACTOR_FAILED,
} rk_actor_state_t;

typedef struct rk_actor_options {
  rk_actor_mode_t mode;
  /* Launch geometry of the handler kernel (default 1x1x1 and 1x1x1). The
   * handler runs once per message whatever the geometry; larger shapes only
   * matter to backends that spread the polling over blocks. */
  rk_dim3_t grid, block;
  /* Ring capacities in messages: powers of two, default 1024 each. */
  uint32_t input_capacity, output_capacity;
  /* Start ACTIVE (default true); otherwise LAUNCHED until activated. */
  bool auto_activate;
  /* Initial handler state, copied at launch (NULL: zeroes). Must be exactly
   * the state struct's size when given. */
  const void *initial_state;
  size_t initial_state_size;
  /* Name of the source in diagnostics (default "<source>"). */
  const char *source_name;
  /* Bypass the backend's compiled-module cache. */
  bool no_cache;
  /* CPU backend, persistent actors: the CPU the actor's worker thread is
   * pinned to, one this process may run on (RK_ACTOR_CPU_ANY, the default:
   * rk picks one other than the launching thread's, the least used). Two
   * actors that message each other back and forth run fastest on CPUs of
   * their own; many actors that take turns, on a CPU they share. Other
   * backends and traditional actors have no worker thread and ignore it. */
  int cpu;
} rk_actor_options_t;

#define RK_ACTOR_CPU_ANY (-1)

/* Fills in the defaults above. */
void rk_actor_options_init(rk_actor_options_t *options);

/* What came with a message besides its payload. */
typedef struct rk_actor_message {
  uint64_t correlation_id; /* the id rk_actor_send returned for the request */
  uint64_t timestamp;      /* hybrid logical clock of the response */
  size_t size;             /* payload bytes */
  rk_status_t status;      /* RK_OK or RK_ERR_HANDLER */
  int32_t handler_code;    /* the handler's return value (0 for void ones) */
} rk_actor_message_t;

/* How an actor's handler runs (rk_actor_stats_t.execution). */
typedef enum rk_actor_execution {
  RK_ACTOR_EXEC_RESIDENT = 0, /* persistent: a resident device side */
  RK_ACTOR_EXEC_RELAUNCH,     /* persistent, emulated: one launch per batch */
  RK_ACTOR_EXEC_PER_REQUEST,  /* traditional: one launch per request */
  RK_ACTOR_EXEC_REMOTE,       /* in another process: a proxy (rk/cluster.h,
                               * rk_cluster_lookup_actor) */
} rk_actor_execution_t;

/* "resident", "relaunch", "per-request", "remote"; "unknown" otherwise. */
const char *rk_actor_execution_name(rk_actor_execution_t execution);

/* Why a supervised actor restarted or failed (rk/supervisor.h). */
typedef enum rk_actor_fault {
  RK_ACTOR_FAULT_NONE = 0,
  RK_ACTOR_FAULT_HANDLER,  /* the handler returned non-zero */
  RK_ACTOR_FAULT_DEVICE,   /* the device side could not run a request */
  RK_ACTOR_FAULT_DEADLINE, /* a hang, or a stop that missed its deadline */
  RK_ACTOR_FAULT_GROUP,    /* one-for-all: another member faulted */
  RK_ACTOR_FAULT_LINK,     /* an actor linked to it failed for good */
  RK_ACTOR_FAULT_COUNT_
} rk_actor_fault_t;

/* "none", "handler", "device", "deadline", "group", "link"; "unknown". */
const char *rk_actor_fault_name(rk_actor_fault_t fault);

typedef struct rk_actor_stats {
  rk_actor_state_t state;
  rk_actor_mode_t mode;
  /* Requests accepted by send/call. Exact once those calls have returned;
   * a send still waiting for room counts from the moment it began. */
  uint64_t sent;
  uint64_t processed;        /* requests the handler has finished */
  uint64_t handler_errors;   /* of those, how many returned non-zero */
  int32_t last_handler_code; /* the latest non-zero return, 0 if none */
  uint64_t dropped_sends;    /* send/call refused: queue full or bad state */
  uint64_t input_depth;      /* requests waiting for the handler */
  uint64_t output_depth;     /* responses waiting for receive/call */
  uint64_t input_capacity, output_capacity;
  /* Send-to-response latency over the last 4096 samples (one rk_actor_call
   * in 16, and one pipelined send in 64), nanoseconds; 0 when none yet. */
  uint64_t latency_samples;
  double latency_p50_ns, latency_p99_ns;
  size_t request_size, response_size, state_size;
  rk_actor_execution_t execution;
  uint64_t batches; /* relaunch: batch launches so far; 0 otherwise */
  /* Supervision (rk/supervisor.h); zeroes when never supervised. */
  bool supervised;   /* in a supervisor group now */
  uint64_t restarts; /* all causes */
  uint64_t restarts_by_cause[RK_ACTOR_FAULT_COUNT_]; /* indexed by cause */
  rk_actor_fault_t last_fault; /* the latest fault noticed (NONE: none) */
  int32_t last_fault_code;     /* its handler code or device status */
  uint64_t device_faults;      /* failed launches or copies: relaunch batches,
                                * traditional requests */
} rk_actor_stats_t;

/* Compiles `source` for the context's backend, finds the RK_HANDLER named
 * `handler`, allocates its rings, state and control block and starts it.
 * Errors: RK_ERR_COMPILE (diagnostics in rk_last_error), RK_ERR_NOT_FOUND
 * (no RK_HANDLER of that name, also when the name is an RK_KERNEL or a
 * stencil: "'k' is a kernel, not an RK_HANDLER"), RK_ERR_INVALID_ARGUMENT (bad
 * options, capacities that are not powers of two, an initial state of the wrong
 * size), RK_ERR_NOT_FOUND also when a relaunch backend's module lacks the
 * handler's batch kernel.
 * options may be NULL (defaults). *out_actor is set only on success. */
rk_status_t rk_actor_launch(rk_context_t *context, const char *source,
                            const char *handler,
                            const rk_actor_options_t *options,
                            rk_actor_t **out_actor);

/* LAUNCHED or DEACTIVATED -> ACTIVE: the handler takes messages (queued ones
 * first). */
rk_status_t rk_actor_activate(rk_actor_t *actor);
/* ACTIVE -> DEACTIVATED: sends are refused; messages already queued stay
 * queued (the one in hand finishes). */
rk_status_t rk_actor_deactivate(rk_actor_t *actor);

/* Queues one request of exactly the handler's request size. On success
 * *out_correlation_id (may be NULL) identifies the response. When the input
 * ring is full, waits up to timeout_ns for space, then RK_ERR_QUEUE_FULL
 * (nothing queued; counted as a dropped send). Responses nobody receives
 * stay where they are, so they hold up sends: in persistent mode by filling
 * the output ring and then the input ring behind it; in traditional mode,
 * where the send runs the request itself, the response needs an output
 * slot, and a full output ring gives RK_ERR_QUEUE_FULL ("the output ring is
 * full") after the timeout -- as does a request of another thread that
 * keeps running (one runs at a time). RK_ERR_INVALID_STATE unless ACTIVE,
 * also when the actor leaves ACTIVE while the send waits. */
rk_status_t rk_actor_send(rk_actor_t *actor, const void *request, size_t size,
                          uint64_t timeout_ns, uint64_t *out_correlation_id);

/* Takes the oldest response not claimed by a pending rk_actor_call, waiting
 * up to timeout_ns (RK_ERR_TIMEOUT when none came; RK_ERR_QUEUE_EMPTY with
 * timeout 0). `capacity` must hold the response size. Returns RK_OK or, for
 * a response whose handler failed, RK_ERR_HANDLER with the payload still
 * copied; out_info (may be NULL) gets the details. Works in any state while
 * responses remain; when none is left of a TERMINATED or FAILED actor, none
 * will come: RK_ERR_INVALID_STATE at once (also for a receive waiting when
 * the actor stops), naming the state and a failure's cause. */
rk_status_t rk_actor_receive(rk_actor_t *actor, void *response, size_t capacity,
                             uint64_t timeout_ns, rk_actor_message_t *out_info);

/* Batches: a pipelined producer pays the lock, the fences and the wake-up
 * once per batch instead of once per message.
 *
 * rk_actor_send_batch queues `count` requests of `size` bytes each (the
 * handler's request size), packed back to back in `requests`, in order:
 * their correlation ids are *out_first_id, *out_first_id + 1, ... (either
 * out pointer may be NULL). In persistent mode each run of requests that
 * fits is written and published at once; when the input ring is full it
 * waits up to timeout_ns for space for the rest. RK_OK when all were
 * queued; otherwise the error rk_actor_send would give (RK_ERR_QUEUE_FULL,
 * RK_ERR_INVALID_STATE) with *out_sent telling how many of the first ones
 * were queued (those will be answered; the rest count as dropped sends).
 * Traditional mode runs them one by one, as rk_actor_send would. The
 * caller keeps ownership of `requests`; it is not used after the return. */
rk_status_t rk_actor_send_batch(rk_actor_t *actor, const void *requests,
                                size_t size, size_t count, uint64_t timeout_ns,
                                size_t *out_sent, uint64_t *out_first_id);

/* Takes up to `max` of the oldest responses not claimed by a pending
 * rk_actor_call, waiting up to timeout_ns for the first (then takes what
 * is there without waiting for more). Response i goes to `responses` +
 * i * the response size (`capacity` bytes must hold `max` of them) and
 * its details to out_infos[i] (`max` entries, required: a response whose
 * handler failed says so only there, status RK_ERR_HANDLER). *out_count
 * gets how many. Returns RK_OK when at least one was taken; otherwise as
 * rk_actor_receive (RK_ERR_QUEUE_EMPTY with timeout 0, RK_ERR_TIMEOUT,
 * RK_ERR_INVALID_STATE). Thread-safe; responses taken by one batch are
 * consecutive in the order the actor answered. */
rk_status_t rk_actor_receive_batch(rk_actor_t *actor, void *responses,
                                   size_t capacity, size_t max,
                                   uint64_t timeout_ns,
                                   rk_actor_message_t *out_infos,
                                   size_t *out_count);

/* Zero-copy receive: responses lent in place, in the output ring.
 *
 *   rk_actor_loan_t loan;
 *   if (rk_actor_receive_lend(a, 64, timeout, &loan) == RK_OK) {
 *     for (size_t i = 0; i < loan.count; ++i) {
 *       rk_actor_message_t info;
 *       const resp_t *r = rk_actor_loan_response(&loan, i, &info);
 *       use(r, &info);
 *     }
 *     rk_actor_loan_release(&loan);
 *   }
 *
 * rk_actor_receive_lend waits up to timeout_ns for the first response (then
 * takes what is there, up to `max`, without waiting) and lends them:
 * loan.count of the oldest responses not claimed by a pending
 * rk_actor_call, consecutive in the order the actor answered. Returns RK_OK
 * with count >= 1, else as rk_actor_receive (RK_ERR_QUEUE_EMPTY with timeout
 * 0, RK_ERR_TIMEOUT, RK_ERR_INVALID_STATE). loan.zero_copy says whether they
 * are the output ring's own slots (when no call waits on the actor and no
 * response was queued by another receive path) or copies in the actor's
 * loan buffer.
 *
 * Ownership: the pointers from rk_actor_loan_response are valid until
 * rk_actor_loan_release, read-only, and never after. While a loan is held
 * its slots are not free, and it holds the actor's output side: other
 * threads' calls and receives wait until it is released (their answers stay
 * in the ring), and a device side that fills the output ring waits too.
 * Keep loans short; one loan per actor at a time. The lending thread's own
 * rk_actor_call, rk_actor_receive, rk_actor_receive_batch and
 * rk_actor_receive_lend on that actor return RK_ERR_INVALID_STATE (they
 * would wait for the loan itself); its sends may wait for input space
 * behind a device side that waits for the output ring, so send with a
 * timeout while holding one. Release from any thread, exactly once
 * (a second release is RK_ERR_INVALID_ARGUMENT); release before
 * rk_actor_destroy. */
typedef struct rk_actor_loan {
  size_t count;      /* responses lent */
  bool zero_copy;    /* in place in the output ring (else copies) */
  rk_actor_t *actor; /* the lender; NULL once released */
} rk_actor_loan_t;

rk_status_t rk_actor_receive_lend(rk_actor_t *actor, size_t max,
                                  uint64_t timeout_ns,
                                  rk_actor_loan_t *out_loan);
/* Response i (< loan->count) of a loan and, when out_info is not NULL, its
 * details; NULL for a bad index or a released loan. */
const void *rk_actor_loan_response(const rk_actor_loan_t *loan, size_t i,
                                   rk_actor_message_t *out_info);
rk_status_t rk_actor_loan_release(rk_actor_loan_t *loan);

/* Sends a request and waits up to timeout_ns (for space and then for the
 * answer) for the response with its correlation id; responses to other
 * requests that arrive meanwhile go to their own callers or stay for
 * rk_actor_receive. Its own answer is never stuck behind responses nobody
 * received: in persistent mode the call moves them to the receive queue
 * while it waits (for space too); in traditional mode the answer comes
 * straight back and needs no output slot. On RK_ERR_TIMEOUT after the
 * request was queued, its response, when it comes, is left for
 * rk_actor_receive. RK_ERR_INVALID_STATE when the actor leaves ACTIVE
 * before the request is queued (traditional: before its turn), or stops
 * (TERMINATED, FAILED) before the answer came: rk_last_error() names the
 * request and the cause, and a late answer goes to rk_actor_receive.
 * RK_ERR_QUEUE_FULL as rk_actor_send. Otherwise returns as
 * rk_actor_receive. */
rk_status_t rk_actor_call(rk_actor_t *actor, const void *request,
                          size_t request_size, void *response, size_t capacity,
                          uint64_t timeout_ns, rk_actor_message_t *out_info);

/* Stops accepting requests (sends and calls still waiting for room or for
 * their turn are refused), lets the device side answer the ones already
 * queued (also those left by deactivate) -- moving responses nobody has
 * received to the receive queue, so that a full output ring does not stop
 * it -- and waits up to timeout_ns for it to confirm that it stopped:
 * RK_OK (TERMINATED) or RK_ERR_TIMEOUT (FAILED: the handler did not return
 * in time; the actor can only be destroyed, and other actors and the
 * context stay usable). Traditional mode waits up to timeout_ns for the
 * request running, if any. The deadline holds whatever other threads do.
 * Responses already produced can still be received; threads waiting for
 * anything else wake (see "Stopping" above). */
rk_status_t rk_actor_terminate(rk_actor_t *actor, uint64_t timeout_ns);

/* Releases the actor. An actor still running is terminated first (waiting
 * as long as it takes) unless it is FAILED: then a handler that never
 * returns keeps its thread (traditional mode: the thread that ran the
 * request), code and memory until the process exits, and nothing else is
 * affected. Threads blocked on the actor wake with RK_ERR_INVALID_STATE;
 * destroy frees nothing before they have returned. NULL is ignored. */
void rk_actor_destroy(rk_actor_t *actor);

rk_actor_state_t rk_actor_state(const rk_actor_t *actor);
/* "launched", "active", ... */
const char *rk_actor_state_name(rk_actor_state_t state);
const char *rk_actor_mode_name(rk_actor_mode_t mode);

/* A snapshot; counters are read without stopping the actor. */
rk_status_t rk_actor_stats(rk_actor_t *actor, rk_actor_stats_t *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* RK_ACTOR_H_ */
