/* Internal hooks of the cluster layer, for its tests. */
#ifndef RK_CLUSTER_CLUSTER_INTERNAL_H_
#define RK_CLUSTER_CLUSTER_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "rk/cluster.h"

/* Responses the export `name`'s forwarder took from the actor that no
 * remote request was waiting for (answers to local sends). */
uint64_t rk__cluster_dropped_local(rk_cluster_t *cluster, const char *name);

/* Requests to the export `name` answered beside its actor's rings, in a
 * turn of the actor's worker (RK_CLUSTER_DIRECT). */
uint64_t rk__cluster_direct(rk_cluster_t *cluster, const char *name);

/* Peer slots freed so far: peers gone whose worker, endpoints and slot
 * the progress thread has freed for the next peer. */
uint64_t rk__cluster_peers_freed(rk_cluster_t *cluster);
/* Peer slots in use now: peers in any state, up or gone, whose slot is
 * not yet free. */
uint32_t rk__cluster_slots_held(rk_cluster_t *cluster);

/* A port's handle (rk_cluster_connect): the answers that returned window
 * room to it, and for how many of its messages in all (several per
 * answer when the owner admitted them in one turn). */
void rk__remote_actor_credits(rk_remote_actor_t *actor, uint64_t *out_answers,
                              uint64_t *out_credited);

/* A remote handle's sends: requests in its buffer now, requests posted
 * and not yet answered, and the REQS it posted (several requests in one
 * message) with how many requests they carried. */
void rk__remote_actor_sends(rk_remote_actor_t *actor, uint32_t *out_buffered,
                            uint32_t *out_unanswered, uint64_t *out_batches,
                            uint64_t *out_batched);

/* For proxies (rk_cluster_lookup_actor, cluster/proxy.c). A batch of
 * `count` requests with consecutive correlation ids from *out_first_id
 * (taken at once), posted in order; *out_sent: how many went. */
rk_status_t rk__remote_actor_send_batch(rk_remote_actor_t *actor,
                                        const void *requests, size_t size,
                                        size_t count, uint64_t timeout_ns,
                                        size_t *out_sent,
                                        uint64_t *out_first_id);
/* Requests posted, sends refused or failed, answers waiting to be
 * received. */
void rk__remote_actor_counts(rk_remote_actor_t *actor, uint64_t *out_sent,
                             uint64_t *out_dropped, uint64_t *out_waiting);
/* The name the remote actor is exported as. */
const char *rk__remote_actor_name(const rk_remote_actor_t *actor);
/* The proxy that wraps the handle: rk_cluster_destroy frees it with the
 * handle. */
void rk__remote_actor_set_proxy(rk_remote_actor_t *actor, rk_actor_t *proxy);
/* The handle stops (TERMINATED because `cause`, unless it stopped
 * already): threads blocked on it wake with RK_ERR_INVALID_STATE, later
 * sends are refused. */
void rk__remote_actor_close(rk_remote_actor_t *actor, const char *cause);

/* An MPI cluster: MPI_Barrier over its ranks (for tests); RK_ERR_
 * INVALID_STATE when the cluster was not formed by MPI. */
rk_status_t rk__cluster_barrier(rk_cluster_t *cluster);

#endif /* RK_CLUSTER_CLUSTER_INTERNAL_H_ */
