/* Actor-to-actor messaging (K2K): the runtime side of rk_send.
 *
 * Every persistent actor has an rk__k2k_t (created with its handler's
 * description). As a SENDER it owns its handler's output ports: per port
 * the message size, an outbox the handler's sends write (the port buffer
 * rk_port<p> of the generated kernel) and the links to the receivers. As a
 * RECEIVER it owns an inbox: a ring of src/abi/actor_abi.h, allocated at
 * the first rk_actor_connect to it, written by every sender wired to it
 * through the multi-producer stage (LOCK kind) and read by its own device
 * side, which runs the handler on each message and keeps no response.
 *
 * An actor resident on a GPU (`polled`) has no inbox ring: every link
 * into it is a channel of its own (abi/actor_abi.h, rk_abi_chan_t), a
 * single-producer ring in mapped host memory that its kernel polls, named
 * in its K2K table; its kernel sends into the channels of its own links
 * itself and counts in the table. Host senders (CPU workers, relaunch
 * drivers) write such a channel in rk__k2k_deliver. A GPU sender's link
 * to any other receiver is a channel too (in the sender's context), which
 * a process-wide forwarding thread empties into the receiver's inbox.
 *
 * Flow control is by credit (tests/model/k2k.pml): a link (sender port ->
 * receiver) may have at most quota = capacity / (links into the inbox) of
 * its messages in the inbox. Before its handler runs, the sending side
 * calls rk__k2k_prepare(), which sets each port's credit to what every
 * link of the port can still take; a send beyond it returns RK_SEND_FULL
 * to the handler. After the handler, rk__k2k_deliver() copies the sent
 * messages into the inboxes -- they always fit -- and wakes the receivers:
 * a bump of the receiver's input-ring wake sequence (its device side
 * parks there), and a wake-up only when it said it sleeps.
 *
 * Threads: prepare/deliver by the actor's device side (its CPU worker or
 * relaunch driver, or a caller holding the relaunch consumer role); the
 * inbox functions by the receiver's device side; connect and stats by any
 * host thread, connect while both actors and the receiver's other senders
 * are held quiet (not active, no handler running; k2k.c, connect_held).
 */
#ifndef RK_ACTOR_K2K_INTERNAL_H_
#define RK_ACTOR_K2K_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/actor_abi.h"
#include "base/ring.h"
#include "rk/actor.h"
#include "rk/actor_k2k.h"
#include "rk/backend.h"
#include "rk/codegen.h"

typedef struct rk__k2k rk__k2k_t;

enum {
  RK__K2K_MAX_PORTS = 8, /* CG_MAX_PORTS */
  RK__K2K_PORT_WORDS = 4,
  /* Messages one port may send per handler call (resident) and per batch
   * launch (relaunch); more are RK_SEND_FULL. */
  RK__K2K_OUTBOX = RK_ABI_K2K_OUTBOX,
};

/* The header type of an inbox message (rk_abi_msg_t.type). Its status is
 * the link's index in the inbox, its code the sender's port, its
 * correlation id the link's message number (1, 2, ...). */
#define RK__ABI_MSG_K2K ((uint32_t)RK_ABI_MSG_K2K)

/* From the handler's entry (its rk_port<p> parameters): the ports and
 * their message sizes. `in_size` and `inbox_capacity` are the actor's
 * request size and input capacity (the inbox, or each channel into a GPU
 * actor, gets the same). A handler with ports in traditional mode is
 * refused here (RK_ERR_UNIMPLEMENTED). `polled`: a resident device side
 * that is a GPU kernel (it sends and receives through channels). */
rk_status_t rk__k2k_create(const rk_entry_t *entry, uint32_t in_size,
                           uint32_t inbox_capacity, rk_actor_mode_t mode,
                           rk_actor_execution_t execution, bool polled,
                           rk__k2k_t **out);
/* The actor's control block and input ring (where its device side parks),
 * once they exist; for a resident GPU kernel also its K2K table (in the
 * actor's mapped block; NULL otherwise) and its context, where the
 * channels into it are allocated. */
void rk__k2k_attach(rk__k2k_t *k, rk_abi_control_t *control,
                    rk_abi_ring_t *in_ring, rk_abi_k2k_t *table,
                    rk_context_t *context);
/* The device memory a resident GPU kernel needs for its ports and inbox
 * scratch (abi/actor_abi.h's rk_k2k_mem layout). */
size_t rk__k2k_device_bytes(const rk__k2k_t *k, uint32_t out_size);
/* The actor is going away (its device side has stopped): sends to it
 * answer RK_SEND_UNCONNECTED from now on, its own links are dropped, and
 * the memory lives until every sender wired to it is released too. */
void rk__k2k_release(rk__k2k_t *k);

/* The actor's device side has left its loop (after answering what was
 * queued, the inbox included): sends to it answer RK_SEND_UNCONNECTED from
 * now on. Messages a sender queued just before stay in the inbox
 * (rk_actor_k2k_stats' inbox_depth). */
void rk__k2k_stopped(rk__k2k_t *k);
/* A new device side runs (a supervisor's restart after a stop): sends to
 * the actor are taken again. */
void rk__k2k_restarted(rk__k2k_t *k);

/* ---- Sending side -------------------------------------------------------- */

/* 1 + the highest port the handler sends to; 0: none. */
uint32_t rk__k2k_nports(const rk__k2k_t *k);
/* The port control words (RK__K2K_PORT_WORDS per port: credit, count,
 * refusal) and port p's outbox (NULL for a port the handler never uses),
 * as the handler's rk_ports and rk_port<p> arguments. */
uint32_t *rk__k2k_ctl(rk__k2k_t *k);
void *rk__k2k_outbox(rk__k2k_t *k, uint32_t port);
uint32_t rk__k2k_port_size(const rk__k2k_t *k, uint32_t port);
/* Sets every port's credit (at most `max`), count 0 and refusal. */
void rk__k2k_prepare(rk__k2k_t *k, uint32_t max);
/* Copies the messages the handler queued (the counts in the control
 * words) into the receivers' inboxes, in order, and wakes them. `stamp`
 * is the send event's timestamp: a tick of the sender's clock taken after
 * the stamps of the messages that triggered the sends were merged into it
 * (every message of one handler call, or of one relaunch batch, carries
 * it). */
void rk__k2k_deliver(rk__k2k_t *k, uint64_t stamp);
/* The relaunch driver forwards (a host hop): for the stats. */
void rk__k2k_set_forwarded(rk__k2k_t *k);

/* ---- Receiving side ------------------------------------------------------ */

/* The inbox's consumer end (NULL until the first link into the actor),
 * for a device side that polls it with the ring's inline functions
 * (base/ring.h): what it takes it gives back with rk__k2k_inbox_release. */
rk__ring_end_t *rk__k2k_inbox_end(rk__k2k_t *k);
/* Messages waiting in the inbox (0 without one). */
uint32_t rk__k2k_inbox_available(rk__k2k_t *k);
/* The same, looking for newly published messages only when none are known
 * (then for up to `want`; see rk__ring_available_upto): for a worker that
 * polls its inbox, so that it does not read the slot a sender is
 * writing while it still has messages to handle. */
uint32_t rk__k2k_inbox_available_upto(rk__k2k_t *k, uint32_t want);
/* Message i (< available) of the inbox: its timestamp, which the
 * receiver merges into its clock before its handler runs on it. */
uint64_t rk__k2k_inbox_timestamp(rk__k2k_t *k, uint32_t i);
/* Message i (< available) of the inbox: its payload. */
const void *rk__k2k_inbox_payload(rk__k2k_t *k, uint32_t i);
/* How many slots from message i's on lie one after another in memory
 * before the inbox's ring wraps (published or not); *stride gets the
 * distance between two of them in bytes. */
uint32_t rk__k2k_inbox_run(const rk__k2k_t *k, uint32_t i, uint32_t *stride);
/* The first n messages were handled (`errors` of them failed): frees their
 * slots, then gives each link its credit back. */
void rk__k2k_inbox_release(rk__k2k_t *k, uint32_t n, uint32_t errors);

/* ---- Host ---------------------------------------------------------------- */

/* The actor whose K2K state k is (rk_actor_connect holds the senders of
 * a receiver quiet through it). */
void rk__k2k_set_owner(rk__k2k_t *k, rk_actor_t *owner);
void rk__k2k_stats(const rk__k2k_t *k, rk_actor_k2k_stats_t *out);

/* ---- Bridges (the cluster's remote ports) -------------------------------- */

/* A receiver with an inbox and no actor: messages of `in_size` bytes of any
 * type (the remote end checks the size); `capacity` a power of two. Its
 * owner consumes the inbox (rk__k2k_inbox_*) from a host thread and
 * releases it with rk__k2k_release. No wake-up: the owner polls. */
rk_status_t rk__k2k_bridge_create(uint32_t in_size, uint32_t capacity,
                                  rk__k2k_t **out);
/* Wires port `port` of `src` (persistent, launched or deactivated: held
 * quiet meanwhile) to it; `same` (nsame) are the other bridges to the same
 * remote actor, which src may not send to already (one link per sender
 * and receiver). */
rk_status_t rk__k2k_bridge_connect(rk_actor_t *src, uint32_t port,
                                   rk__k2k_t *bridge, const char *dst_name,
                                   rk__k2k_t *const *same, uint32_t nsame);

/* ---- Ingress (the cluster's remote ports, arriving) ---------------------- */

/* A sender with no actor: one port wired to `dst`'s inbox (persistent,
 * launched or deactivated, its other senders not active and its inbox
 * empty, as for rk_actor_connect), so that messages from remote
 * ports reach dst's handler through its K2K inbox with a link's credit,
 * exactly as a local port's. Fed by one host thread at a time (the
 * cluster, under its export's lock); released with rk__k2k_release. */
rk_status_t rk__k2k_ingress_create(rk_actor_t *dst, rk__k2k_t **out);
/* One message into dst's inbox, stamped `stamp`, if the link has credit:
 * 1, else 0 (*out_gone: dst's device side has stopped, or dst is going
 * away; else the inbox is full for this link). */
uint32_t rk__k2k_ingress_send(rk__k2k_t *k, const void *msg, uint64_t stamp,
                              bool *out_gone);

#endif /* RK_ACTOR_K2K_INTERNAL_H_ */
