/* Actors that send to actors (K2K): wiring a handler's output ports to
 * other actors' inboxes.
 *
 * A handler sends with rk_send(port, &msg) / rk_try_send(port, &msg) (see
 * docs/kernel-language.md, "Sending to other actors"). The host wires each
 * port before the actors involved are activated (or while they are
 * deactivated, see rk_actor_connect):
 *
 *   rk_actor_options_t o;
 *   rk_actor_options_init(&o);
 *   o.auto_activate = false;            // wire first, then activate
 *   rk_actor_launch(ctx, src, "stage", &o, &a);
 *   rk_actor_launch(ctx, src, "sink", &o, &b);
 *   rk_actor_connect(a, 0, b);          // a's port 0 -> b's inbox
 *   rk_actor_activate(b);
 *   rk_actor_activate(a);
 *
 * One port may go to several actors (fan-out: each gets a copy) and one
 * actor may receive from several ports and actors (fan-in: one inbox,
 * written by all of them). A message sent by a handler is handled by the
 * receiver's handler exactly once, in the order sent per (sender,
 * receiver) pair; its response is not kept (nobody asked for it). A full
 * channel is a result the sending handler sees (RK_SEND_FULL), never a drop
 * and never a wait. See docs/actors.md, "Actors that talk to actors".
 */
#ifndef RK_ACTOR_K2K_H_
#define RK_ACTOR_K2K_H_

#include <stdint.h>

#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_actor rk_actor_t;

/* What rk_send / rk_try_send return in a handler. */
enum {
  RK_SEND_QUEUED = 0,      /* the message will be handled */
  RK_SEND_FULL = 1,        /* no room in the channel now; nothing queued */
  RK_SEND_UNCONNECTED = 2, /* no actor on this port, or it has stopped */
};

/* Wires output port `port` of `src`'s handler to `dst`'s inbox; connecting
 * one port to several actors sends each a copy. Both actors must be
 * persistent and not active: not yet activated (launch with
 * auto_activate = false), or deactivated (rk_actor_deactivate). Every
 * link into dst's inbox has a share of it, which a new link shrinks: the
 * actors already sending to dst must not be active either (terminated
 * ones may be), and dst's inbox must be empty. The call holds them all
 * quiet, waiting up to 10 s until deactivated handlers have finished the
 * message in hand. The port must be one the handler sends to, and its
 * message type must have the size of dst's request. Errors (nothing
 * changes): RK_ERR_INVALID_ARGUMENT (NULL, a port the handler never sends
 * to, a size mismatch, the same link twice, another port of src already
 * wired to dst (one link per sender and receiver keeps their messages in
 * order), more senders than dst's inbox has slots), RK_ERR_INVALID_STATE
 * (either actor active, or stopped; traditional mode; a sender of dst
 * active; messages in dst's inbox; dst exported to a cluster and activated
 * before), RK_ERR_TIMEOUT (a deactivated handler still running),
 * RK_ERR_UNIMPLEMENTED (a pair with an actor resident on a GPU, once either
 * has been activated, or a GPU kernel that has run sending to dst).
 * Actors of different contexts may be connected: the messages go through
 * host memory (pinned and mapped for a receiver resident on a GPU, where
 * each link gets a channel of dst's input capacity; from a sender resident
 * on a GPU to any other receiver, a host thread forwards them). */
rk_status_t rk_actor_connect(rk_actor_t *src, uint32_t port, rk_actor_t *dst);

/* Removes the link from output port `port` of `src` to `dst` that
 * rk_actor_connect made. src must not be active: not yet activated, or
 * deactivated (the call waits, up to 10 s, until its handler has finished
 * the message in hand); dst may be in any state. From then on the port's
 * sends skip dst (a port left without links answers RK_SEND_UNCONNECTED);
 * messages already in dst's inbox are still handled, and its inbox keeps
 * the link's share until the next rk_actor_connect into dst gives it back
 * (not while a cluster or a GPU kernel sends to dst). Errors (nothing changes):
 * RK_ERR_INVALID_ARGUMENT (NULL, a port the handler never sends to),
 * RK_ERR_NOT_FOUND (no such link), RK_ERR_INVALID_STATE (src active or stopped,
 * traditional mode), RK_ERR_TIMEOUT (src's handler still running),
 * RK_ERR_UNIMPLEMENTED (either actor resident on a GPU). */
rk_status_t rk_actor_disconnect(rk_actor_t *src, uint32_t port,
                                rk_actor_t *dst);

/* The number of `actor`'s output port called `name`: the #define its
 * handler passes to rk_send / rk_try_send for it (`#define LEFT 1` ...
 * `rk_send(LEFT, &m)`: "LEFT" is port 1). A port
 * has one name; one only ever given as a number has none.
 * RK_ERR_NOT_FOUND (naming the ports that have names) when none is called
 * that; RK_ERR_INVALID_ARGUMENT for NULL arguments. */
rk_status_t rk_actor_port(const rk_actor_t *actor, const char *name,
                          uint32_t *out_port);

/* How messages between actors travel. */
typedef enum rk_k2k_path {
  RK_K2K_NONE = 0, /* not connected */
  /* Written by the sending side straight into the receiver's inbox in
   * memory both address (CPU backend: both workers; resident CUDA
   * kernels and senders into them: channels in mapped host memory). */
  RK_K2K_DIRECT,
  /* Collected from the device after each batch launch and written into the
   * receiver's inbox by the host (relaunch backends, or a mix), or moved
   * there by the host's forwarding thread (a resident GPU sender to a
   * receiver on the host). */
  RK_K2K_HOST_FORWARDED,
} rk_k2k_path_t;

/* "none", "direct", "host-forwarded"; "unknown" otherwise. */
const char *rk_k2k_path_name(rk_k2k_path_t path);

typedef struct rk_actor_k2k_stats {
  rk_k2k_path_t path;    /* of its outgoing links; else of its incoming */
  uint32_t ports;        /* output ports its handler sends to */
  uint32_t links_out;    /* (port, receiver) links wired */
  uint32_t senders_in;   /* (sender, port) links into its inbox */
  uint64_t sent;         /* messages queued by its handler (each copy) */
  uint64_t refused_full; /* sends answered RK_SEND_FULL */
  uint64_t refused_unconnected; /* sends answered RK_SEND_UNCONNECTED */
  uint64_t received;            /* inbox messages its handler handled */
  uint64_t received_errors;     /* of those, handler errors */
  /* Queued by its handler for a receiver destroyed before they reached
   * its inbox. */
  uint64_t undelivered;
  uint64_t inbox_depth, inbox_capacity;
  /* Hybrid-logical-clock stamps (rk/hlc.h) of the last message its handler
   * sent and of the last inbox message it handled; 0: none yet. */
  uint64_t last_sent_timestamp, last_received_timestamp;
} rk_actor_k2k_stats_t;

/* A snapshot of the actor's K2K counters. A sender's counts are stored
 * after its messages are queued, so a receiver may have taken a message
 * that its sender's `sent` does not count yet; a snapshot that counts a
 * message has its stamp (or a later one) in last_sent_timestamp. */
rk_status_t rk_actor_k2k_stats(rk_actor_t *actor,
                               rk_actor_k2k_stats_t *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* RK_ACTOR_K2K_H_ */
