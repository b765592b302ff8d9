/* rk clusters: actors across processes and machines, over UCX.
 *
 * Processes form a cluster by connecting to one that listens; an actor
 * exported by name in one process can be looked up from another, and the
 * handle that comes back sends, calls and receives with the semantics of a
 * local rk_actor_t (correlation ids, timeouts, statuses, handler errors,
 * hybrid-logical-clock timestamps). The transport is UCX active messages,
 * loaded at run time: the same rk binary runs without UCX, and
 * rk_cluster_available() (or `rk cluster`) says why not.
 *
 *   // process A (listens on 127.0.0.1:13337)
 *   rk_cluster_options_t o;
 *   rk_cluster_options_init(&o);
 *   o.listen = "127.0.0.1:13337";
 *   rk_cluster_t *c;
 *   rk_cluster_create(&o, &c);
 *   rk_cluster_export(c, actor, "tile/3");
 *
 *   // process B
 *   o.connect = "127.0.0.1:13337";
 *   rk_cluster_create(&o, &c);
 *   rk_remote_actor_t *h;
 *   rk_cluster_lookup(c, "tile/3", 1000000000, &h);
 *   rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, timeout, NULL);
 *   rk_remote_actor_release(h);
 *   // or as an rk_actor_t, for rk/actor.h's own functions:
 *   rk_actor_t *a;
 *   rk_cluster_lookup_actor(c, "tile/3", 1000000000, &a);
 *   rk_actor_call(a, &q, sizeof q, &r, sizeof r, timeout, NULL);
 *   rk_actor_destroy(a);
 *   rk_cluster_destroy(c);
 *
 * Topology: the process that listens is the hub; every other process
 * connects to it, and the hub introduces each joiner to the members before
 * it, which connect to each other directly (rk_cluster_create returns
 * once that is done). A process looks names up among every process it is
 * connected to: any member finds the hub's actors and every other
 * member's.
 *
 * Failures. A member that dies or whose connection breaks is noticed by
 * UCX's per-peer error handling: every handle to its actors becomes FAILED,
 * waiting callers and receivers wake with RK_ERR_INVALID_STATE naming the
 * peer and the cause, and later sends fail at once. A member that failed may
 * not rejoin under the same name. Delivery is exactly-once while the peer
 * lives, at-most-once across a failure: nothing is ever resent.
 *
 * Security: the transport is neither authenticated nor encrypted. A cluster
 * must run on a trusted network; the optional token only keeps unrelated
 * jobs apart (see docs/cluster.md).
 *
 * Thread safety: every function may be called from any thread, except
 * rk_cluster_destroy, which must be the last call on the cluster and its
 * handles.
 */
#ifndef RK_CLUSTER_H_
#define RK_CLUSTER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/actor.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_cluster rk_cluster_t;
typedef struct rk_remote_actor rk_remote_actor_t;

typedef struct rk_cluster_options {
  /* "host:port" to listen on (port 0: any free one; see
   * rk_cluster_address). NULL: $RK_CLUSTER_LISTEN, else no listener. The
   * documented default host is 127.0.0.1; listening on another interface is
   * an explicit choice of address. */
  const char *listen;
  /* "host:port" of the hub to join. NULL: $RK_CLUSTER_CONNECT, else none. */
  const char *connect;
  /* Shared token a joining member must present (compared in constant
   * time). NULL: $RK_CLUSTER_TOKEN, else none. Sent in clear: it keeps
   * unrelated jobs apart, it does not make an untrusted network safe. */
  const char *token;
  /* This member's name, unique in the cluster (at most 63 bytes). NULL:
   * $RK_CLUSTER_NAME, else "<hostname>:<pid>". */
  const char *name;
  /* How long rk_cluster_create waits for the hub's answer (default 10 s);
   * at a hub, also how long a connection may go without its joiner's
   * HELLO before the hub closes it and frees its peer slot. */
  uint64_t connect_timeout_ns;
  /* Spin this long on the transport before sleeping when idle (default
   * $RK_CLUSTER_SPIN_US, or 100 microseconds -- 0 where one CPU is
   * allowed; 0 sleeps at once). */
  uint32_t spin_us;
  /* Form the cluster from the ranks of an MPI job instead (also
   * RK_CLUSTER_MPI=1): every rank of MPI_COMM_WORLD becomes a member
   * connected to every other, their UCX addresses exchanged with one
   * MPI_Allgather (then one MPI_Barrier); MPI is used for nothing else.
   * MPI (Open MPI) is loaded at run time; rk calls MPI_Init if nobody has
   * and MPI_Finalize in rk_cluster_destroy then. Not with listen or
   * connect. Members are named "rank<N>" unless `name` is given. */
  bool mpi;
} rk_cluster_options_t;

/* Fills in the defaults above (every pointer NULL). */
void rk_cluster_options_init(rk_cluster_options_t *options);

/* RK_OK when UCX can be loaded; otherwise RK_ERR_UNAVAILABLE with the
 * reason in rk_last_error() (the paths tried, or "built without UCX
 * headers"). *out_version (may be NULL) gets UCX's version string or
 * NULL. */
rk_status_t rk_cluster_available(const char **out_version);

/* RK_OK when the MPI launcher path can load MPI (Open MPI); otherwise
 * RK_ERR_UNAVAILABLE and why. *out_version (may be NULL) gets the MPI
 * library's version line, or NULL. */
rk_status_t rk_cluster_mpi_available(const char **out_version);

/* Creates this process's member: starts the transport and its progress
 * thread, listens if asked, and joins the hub if asked (waiting up to
 * connect_timeout_ns for it to accept). Errors: RK_ERR_UNAVAILABLE (no UCX;
 * the hub refused: bad token, a name in use or one that failed before, no
 * peer slot free (RK_CLUSTER_MAX_PEERS: peers held at once, 1 to 256,
 * default 256); nobody listening), RK_ERR_TIMEOUT (no answer),
 * RK_ERR_INVALID_ARGUMENT (a malformed address or name, a bad
 * RK_CLUSTER_MAX_PEERS). options may be NULL (the environment decides). */
rk_status_t rk_cluster_create(const rk_cluster_options_t *options,
                              rk_cluster_t **out_cluster);

/* Leaves the cluster: tells the peers (their handles to this member's
 * actors become TERMINATED), closes the connections, stops the progress
 * thread and frees every handle still held. Exported actors are not
 * terminated (they belong to the caller). NULL is ignored. */
void rk_cluster_destroy(rk_cluster_t *cluster);

/* The address this member listens on, "host:port" with the port actually
 * bound; RK_ERR_NOT_FOUND when it does not listen. */
rk_status_t rk_cluster_address(const rk_cluster_t *cluster, char *buffer,
                               size_t capacity);

/* This member's name. */
const char *rk_cluster_name(const rk_cluster_t *cluster);

/* Members this one is connected to and that have not failed or left (the
 * hub and every other member, for a member of a hub-formed cluster). */
size_t rk_cluster_peer_count(rk_cluster_t *cluster);

/* Waits up to timeout_ns until at least `count` peers are connected
 * (RK_ERR_TIMEOUT otherwise). */
rk_status_t rk_cluster_wait_peers(rk_cluster_t *cluster, size_t count,
                                  uint64_t timeout_ns);

/* Makes `actor` reachable from other members as `name` (1..127 bytes, any
 * characters but NUL; unique in this member). On top of the process's
 * registry (rk/registry.h): with actor NULL, the actor registered as
 * `name` is exported under that name; with name NULL, the actor is
 * exported under its registered name (RK_ERR_NOT_FOUND when there is no
 * such actor, or it has no name). Registering alone exports nothing: a
 * remote lookup of a name registered here but not exported is
 * RK_ERR_NOT_FOUND, its message saying so. rk_actor_destroy withdraws the
 * actor's exports first (as rk_cluster_unexport). The cluster forwards remote
 * requests into the actor's input ring and takes the responses to them
 * from its output ring: local code may still rk_actor_call the actor, but
 * rk_actor_receive on an exported actor competes with the cluster for
 * responses (a response to a local rk_actor_send may be taken and counted
 * as dropped). An actor exported while it is not active (persistent,
 * launched with auto_activate = false or deactivated) takes remote K2K
 * ports' messages (rk_cluster_connect) in its K2K inbox, through one link
 * wired as rk_actor_connect wires a sender: only when its local senders
 * are not active either and its inbox is empty; otherwise, and for an
 * actor exported while active, they go into its input ring. An actor has
 * one export at a time: each export's
 * forwarder takes the actor's responses, so a second would take the
 * first's answers. Errors: RK_ERR_INVALID_ARGUMENT (a name in use, an
 * actor exported already, bad name). */
rk_status_t rk_cluster_export(rk_cluster_t *cluster, rk_actor_t *actor,
                              const char *name);

/* Withdraws an export: later requests to it, and those taken in but not
 * yet answered (their callers wake), are answered RK_ERR_INVALID_STATE;
 * answers the actor still produces for them stay in its output ring.
 * RK_ERR_NOT_FOUND if not exported. */
rk_status_t rk_cluster_unexport(rk_cluster_t *cluster, const char *name);

/* Asks every connected peer for an actor exported as `name` and returns a
 * handle to the first that has it. Errors: RK_ERR_NOT_FOUND (every peer
 * answered that it has none; the message lists them), RK_ERR_TIMEOUT (not
 * found, and some peer did not answer within timeout_ns),
 * RK_ERR_UNAVAILABLE (no peers). The handle is the caller's: release it
 * with rk_remote_actor_release. */
rk_status_t rk_cluster_lookup(rk_cluster_t *cluster, const char *name,
                              uint64_t timeout_ns,
                              rk_remote_actor_t **out_actor);

/* The remote handle: as rk_actor_send, rk_actor_receive and rk_actor_call
 * (see rk/actor.h), with these differences. Correlation ids are the
 * handle's own. A send waits for room when the handle has `window`
 * requests outstanding (sent and not yet received: the remote actor's
 * input capacity); RK_ERR_QUEUE_FULL after timeout_ns. When the owning
 * member fails, the handle is FAILED: every waiter wakes with
 * RK_ERR_INVALID_STATE and rk_last_error() names the peer and the cause;
 * when it leaves, TERMINATED. A request the remote actor refused (not
 * ACTIVE there) is answered RK_ERR_INVALID_STATE with the remote reason.
 * Clocks: requests are stamped from the process clock (rk_hlc_host()); the
 * owner merges each request's stamp into its process clock with
 * rk_hlc_update's skew check, and a stamp too far ahead is refused
 * (RK_ERR_CLOCK_SKEW, the owner's reason). Each answer's stamp is merged
 * into this process's clock the same way before the caller sees it
 * (rk_actor_message_t.timestamp is the merged value), so a request sent
 * after an answer was received is stamped later; an answer stamped too far
 * ahead is not delivered (RK_ERR_CLOCK_SKEW). */
rk_status_t rk_remote_actor_send(rk_remote_actor_t *actor, const void *request,
                                 size_t size, uint64_t timeout_ns,
                                 uint64_t *out_correlation_id);
rk_status_t rk_remote_actor_receive(rk_remote_actor_t *actor, void *response,
                                    size_t capacity, uint64_t timeout_ns,
                                    rk_actor_message_t *out_info);
rk_status_t rk_remote_actor_call(rk_remote_actor_t *actor, const void *request,
                                 size_t request_size, void *response,
                                 size_t capacity, uint64_t timeout_ns,
                                 rk_actor_message_t *out_info);

/* ACTIVE while the owner is reachable and the actor took the last request;
 * FAILED after the owner failed; TERMINATED after it left or the remote
 * actor stopped. */
rk_actor_state_t rk_remote_actor_state(const rk_remote_actor_t *actor);

/* Request and response sizes of the remote handler, its input capacity,
 * and the owning member's name. Any out pointer may be NULL. */
void rk_remote_actor_info(const rk_remote_actor_t *actor,
                          size_t *out_request_size, size_t *out_response_size,
                          uint32_t *out_window, const char **out_peer);

/* Supervision across processes: when the remote actor FAILS -- its member
 * fails (dies, its connection breaks) or the actor itself is reported
 * FAILED -- the local actor faults with RK_ACTOR_FAULT_LINK, as if linked
 * with rk_actor_link to a local actor that failed (rk/supervisor.h): a
 * supervised one restarts under its policy, another is stopped and FAILED
 * (its reason naming the remote actor and the cause) and its own links are
 * told in turn. Within about a millisecond of the failure being noticed.
 * A member that leaves (TERMINATED) is not a failure. A handle FAILED
 * already faults the actor at once. Both ways: the remote actor's owner
 * is told of the link, and when the local actor fails for good (or this
 * process fails) the remote actor faults with RK_ACTOR_FAULT_LINK under
 * its own policy there. The link goes, on both sides, with
 * rk_cluster_unlink, rk_remote_actor_release, rk_cluster_destroy and
 * rk_actor_destroy of the local actor. Not from a
 * supervisor's on_event (it holds the supervision lock). Errors:
 * RK_ERR_ALREADY_EXISTS (linked already), RK_ERR_INVALID_ARGUMENT (NULL);
 * unlink: RK_ERR_NOT_FOUND. */
rk_status_t rk_cluster_link(rk_remote_actor_t *remote, rk_actor_t *local);
rk_status_t rk_cluster_unlink(rk_remote_actor_t *remote, rk_actor_t *local);

/* Remote K2K ports: wires output port `port` of the local actor `src`
 * (persistent, not active: launched with auto_activate = false, or
 * deactivated; see rk/actor_k2k.h) to the remote actor:
 * each message its handler sends there (rk_send / rk_try_send) is handled
 * by the remote handler exactly once while the owner lives, in the order
 * sent; its response is dropped. The port's credit is a local bridge
 * inbox of 64 messages (RK_SEND_FULL when it is full), emptied by this
 * member's progress thread while the handle has window room. On the owner
 * the messages go into the remote actor's K2K inbox with a link's credit
 * when it was exported while not active (launched, or deactivated; see
 * rk_cluster_export), its input ring otherwise:
 * a full remote inbox holds up the window, then the bridge. The handle is
 * the port's from then on: answers on it are dropped, so do not call or
 * receive on it (look the name up again for a handle of your own). When
 * the remote actor stops or its member fails, the port answers
 * RK_SEND_UNCONNECTED and what it had queued is dropped. One receiver per
 * (src, port) and handle; the message size must be the remote request
 * size. Errors as rk_actor_connect. */
rk_status_t rk_cluster_connect(rk_actor_t *src, uint32_t port,
                               rk_remote_actor_t *remote);

/* Releases the handle: answers that still come are dropped. Threads must
 * not be blocked on it. NULL is ignored. */
void rk_remote_actor_release(rk_remote_actor_t *actor);

/* The remote actor as an rk_actor_t: the same lookup as rk_cluster_lookup,
 * and the handle it finds wrapped in a proxy that the functions of
 * rk/actor.h take, so code written for local actors runs unchanged on a
 * remote one:
 *
 *   rk_actor_t *tile;
 *   rk_cluster_lookup_actor(c, "tile/3", 1000000000, &tile);
 *   rk_actor_call(tile, &q, sizeof q, &r, sizeof r, timeout, NULL);
 *   rk_actor_destroy(tile);  // releases the handle, not the remote actor
 *
 * On a proxy: rk_actor_send, rk_actor_receive, rk_actor_call,
 * rk_actor_send_batch (consecutive correlation ids, taken at once) and
 * rk_actor_receive_batch behave as the rk_remote_actor_* functions above
 * (window, statuses, clocks); rk_actor_state as rk_remote_actor_state;
 * rk_actor_stats gives the proxy's own counts (state, sent, dropped_sends,
 * output_depth: answers waiting to be received; input_capacity: the
 * window; the sizes; execution RK_ACTOR_EXEC_REMOTE, mode PERSISTENT) and
 * zeroes for what only the owner knows (processed, latency, ...);
 * rk_actor_name gives the exported name; rk_actor_link(local, proxy) is
 * rk_cluster_link and rk_actor_unlink rk_cluster_unlink;
 * rk_actor_connect(src, port, proxy) is rk_cluster_connect (the proxy is
 * the port's from then on, as the handle there); rk_actor_destroy releases
 * the handle as rk_remote_actor_release, but as for a local actor threads
 * blocked on the proxy wake first (RK_ERR_INVALID_STATE, "its proxy was
 * destroyed") and have returned before anything is freed. A proxy is one of the
 * cluster's handles: rk_cluster_destroy frees the proxies not destroyed before
 * it, so none may be used after it. Everything that only the owning process can
 * do -- activate, deactivate, terminate, supervise, register, export, the
 * remote actor's own ports, zero-copy receive
 * -- is RK_ERR_UNIMPLEMENTED, rk_last_error() naming the actor, its member and
 * what to do instead. Errors of the lookup as rk_cluster_lookup. */
rk_status_t rk_cluster_lookup_actor(rk_cluster_t *cluster, const char *name,
                                    uint64_t timeout_ns,
                                    rk_actor_t **out_actor);

/* The remote handle of a proxy from rk_cluster_lookup_actor (owned by the
 * proxy: do not release it), for what only a handle has
 * (rk_remote_actor_info); NULL for an actor of this process. */
rk_remote_actor_t *rk_actor_remote(const rk_actor_t *actor);

#ifdef __cplusplus
}
#endif

#endif /* RK_CLUSTER_H_ */
