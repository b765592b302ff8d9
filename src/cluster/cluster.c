/* rk clusters over UCX active messages (rk/cluster.h, docs/cluster.md).
 *
 * Workers. A member has a control worker (the listener, the endpoints
 * that watch peers; joins and introductions come in on it) and, for each
 * peer, a worker that carries that peer's messages both ways and no
 * other's: over shared memory each UCP worker has one receive FIFO, and a
 * sender killed between claiming an element and marking it written
 * wedges that FIFO for every sender, so it must be the dead peer's alone
 * (docs/cluster.md, "Failures"). It also keeps the watching endpoints'
 * network polling (a system call per turn) off the message workers. All
 * are in multi-thread mode: a progress thread turns them (spinning for
 * spin_us after activity, then sleeping on an epoll set of their event
 * descriptors), user threads send directly and, while they wait for an
 * answer, turn them themselves for spin_us (the control worker at most
 * once a millisecond: ctrl_due) so that an answer that comes quickly is
 * handled on the waiting thread.
 *
 * Requests (owner side). The REQ callback writes the payload straight into
 * the exported actor's input ring with rk_actor_send (timeout 0); a full
 * ring queues it behind, in order, until there is room. While requests are
 * in exported actors, the progress thread also takes the actors' responses
 * (rk_actor_receive_batch, without waiting), matches each to the request it
 * answers (a FIFO of routes, in the order the actor took them) and sends it
 * back as RESP. An exported actor whose device side is a host thread (a
 * CPU worker) does that work itself while it would spin (drive_turn, as
 * idle work: hal/actor_loop.h), and the progress thread stands aside: a
 * request then reaches the worker, and its answer leaves, with no other
 * thread woken or spinning.
 *
 * Answers (requester side). The RESP callback finds the handle by slot and
 * generation, merges the timestamp into the handle's clock, and copies the
 * payload into the buffer of the call waiting for it, or queues it for
 * rk_remote_actor_receive.
 *
 * Messages the callbacks must send (WELCOME, LOOKUP_REPLY, refusals) go
 * through an outbox that whoever drives the worker empties after
 * ucp_worker_progress returns: UCX's callbacks may not drive the worker.
 *
 * Members. The hub's WELCOME carries a card (name, worker address) for
 * every member welcomed before; the joiner introduces itself to each
 * (INTRO / INTRO_ACK, a HELLO / WELCOME without the socket), so every pair
 * of members is connected directly (tests/model/cluster.pml, MESH).
 *
 * Links. rk_cluster_link tells the owner (LINK); a local actor's failure
 * reaches the cluster through the supervisor's failure hook, queued, and
 * tell_links sends LINK_FAULT after the worker's turn; the owner faults
 * its actor (rk__supervise_link_fault) there too, for a LINK_FAULT or a
 * linking peer that failed.
 */
#include "rk/cluster.h"

#include "rk/registry.h"

#if RK_HAVE_UCX

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "actor/actor_internal.h"
#include "actor/k2k_internal.h"
#include "base/bias.h"
#include "base/error.h"
#include "base/hlc.h"
#include "base/log.h"
#include "base/quiesce.h"
#include "base/ring.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "cluster/cluster_internal.h"
#include "cluster/mpi_api.h"
#include "cluster/ucx_api.h"
#include "cluster/wire.h"

/* Peers at once: a slot of c->peers each. A slot is reused once its
 * peer has gone and its worker is freed ("Peer slots" below). */
#define MAX_PEERS 256
#define MAX_EXPORTS 1024
#define FORWARD_BATCH 64
/* Requests answered beside the actor's rings (direct_in) that one turn of
 * its worker keeps before it runs them, and the largest request or
 * response it keeps (the lane's buffers hold DIRECT_MAX requests, a
 * response and an answer). */
#define DIRECT_MAX 8
#define DIRECT_BYTES_MAX 4096
/* The most bytes of records in one REQS or RESPS (rk_wire_batch_t): well
 * within an eager send over shared memory and TCP. */
#define BATCH_BYTES 4096
/* Answers up to this size are copied out under the handle's lock and
 * their blocks reused (rk_remote_actor_t's aroom). */
#define ANSWER_POOL_MAX 4096
/* The most requests a handle puts in one REQS, and how many must be on
 * their way before it buffers sends (rk_remote_actor_t). */
#define BATCH_MAX 32
#define COALESCE_AT 16
/* The most requests of a REQS admitted into an actor at once. */
#define GATHER_MAX 64
#define TEXT_MAX RK_WIRE_TEXT_MAX
#define RESP_PACKED 0x100u

/* What a rendezvous receive carries. */
enum { RX_REQ, RX_RESP, RX_WELCOME, RX_REQS, RX_RESPS };

typedef enum peer_state {
  P_FREE = 0,
  P_ACCEPTED,   /* hub: connection accepted, no HELLO yet */
  P_WELCOMING,  /* hub: accepted; UP once WELCOME is on its way */
  P_CONNECTING, /* joiner: HELLO sent, no WELCOME yet */
  P_JOINING,    /* joiner: welcomed, its messages' endpoint not yet open:
                 * its messages are taken, none are sent to it */
  P_UP,
  P_REFUSED,
  P_FAILED,
  P_LEFT,
} peer_state_t;

/* A worker's callbacks' argument: the cluster, and the worker a message
 * came in on (a rendezvous receive is made on it). */
typedef struct rx {
  rk_cluster_t *c;
  ucp_worker_h w;
} rx_t;

typedef struct peer {
  rk_cluster_t *c;
  _Atomic int state; /* peer_state_t */
  ucp_ep_h boot;     /* on the control worker: watches the peer */
  ucp_ep_h ep;       /* on the peer's worker: carries the messages */
  /* The worker that carries this peer's messages both ways and no other
   * peer's (see "Workers" above), its address as given to this peer
   * alone, and its callbacks' argument (rx.w: NULL until made). Kept
   * until the cluster goes. */
  rx_t rx;
  ucp_address_t *waddr;
  size_t waddr_size;
  int wefd;
  bool quiet;     /* FAILED, LEFT or REFUSED: its worker is no longer turned */
  uint32_t index; /* in c->peers */
  /* Who the slot holds: index + MAX_PEERS * (times the slot was reused);
   * the peer's `from` in what it sends us, and what every record of it
   * (handles, routes, links, lookups) keeps. Atomic: read without c->mu
   * where a record is checked against the slot (peer_from, post). */
  uint32_t id;
  uint32_t remote; /* the id the peer gave us: our `from` to it */
  /* Slot bookkeeping (c->mu): listed in c->wpeers (once per slot); its
   * worker and endpoints being freed (reclaim_peers); free for the next
   * peer_new. */
  bool listed, reclaiming, free_slot;
  uint64_t down_at;     /* when reclaim_peers first saw it gone (c->mu) */
  uint64_t accepted_at; /* hub: the connection's (P_ACCEPTED; c->mu) */
  bool is_hub;
  char name[RK_WIRE_NAME_MAX];
  char cause[TEXT_MAX];
  rk_status_t refusal; /* P_REFUSED: the hub's status */
  /* Its endpoint broke and it has not failed yet (see peer_broken; under
   * c->mu): when, the worker's turns since, and why. */
  uint64_t broken_at;
  uint32_t broken_polls;
  char broken_cause[TEXT_MAX];
  /* Hub: the joiner's worker address, for the members welcomed after it
   * (WELCOME's cards). */
  unsigned char *addr;
  uint32_t addr_size;
} peer_t;

typedef struct route {
  uint64_t local_id; /* rk_actor_send's correlation id */
  uint32_t peer, handle;
  uint64_t handle_gen, request_id;
  bool done;
  bool no_data; /* RK_WIRE_REQ_NO_DATA */
} route_t;

typedef struct pending_req {
  struct pending_req *next;
  rk_wire_req_t h;
  size_t size;
  unsigned char data[];
} pending_req_t;

/* Window room owed to one sender's handle (see export_t). */
typedef struct credit {
  uint32_t from; /* the sender's index in c->peers */
  uint32_t handle;
  uint64_t handle_gen;
  uint64_t request_id; /* the latest message's */
  uint64_t stamp;      /* its admission stamp */
  uint32_t n;
} credit_t;
#define CREDIT_SENDERS 8

typedef struct export_ {
  rk_cluster_t *c;
  uint64_t id; /* slot | generation << 16 */
  char name[RK_WIRE_ACTOR_NAME_MAX];
  rk_actor_t *actor;
  size_t request_size, response_size;
  uint32_t window;
  pthread_mutex_t mu;
  /* Routes of requests in the actor, in the order it took them. */
  route_t *routes;
  size_t route_head, route_count, route_cap; /* ring of route_cap (2^k) */
  pending_req_t *pending, *pending_tail;
  /* Exported before it was activated: remote ports' messages go into the
   * actor's K2K inbox through this link (NULL: into its input ring). Those
   * waiting for the link's credit, in order. */
  rk__k2k_t *ingress;
  pending_req_t *ipending, *ipending_tail;
  /* Out of c->exports (under mu; see req_export). */
  bool unlisted;
  /* Window room owed to remote ports' senders for messages admitted into
   * `ingress`, one entry per sender's handle (under mu): returned in one
   * answer per entry at the end of the export's turn (forward_once), or
   * at once when an entry reaches credit_every. */
  credit_t credits[CREDIT_SENDERS];
  uint32_t ncredits, credit_every;
  unsigned char *buf; /* FORWARD_BATCH responses */
  /* Records of the answers of a turn (forward_once): bcap bytes, one per
   * response; in buf's block. `batching`: runs of them go as RESPS. */
  unsigned char *bbuf;
  size_t bcap;
  bool batching;
  /* A run of a REQS's requests, packed for rk_actor_send_batch
   * (GATHER_MAX of them; NULL: one at a time). In buf's block. */
  unsigned char *gather;
  _Atomic uint64_t forwarded, dropped_local;
  _Atomic uint64_t direct; /* requests answered by direct_run */
  /* Offered to the actor's worker (drive_turn): while idle it drives the
   * worker, counted in the cluster's drivers while `driving`. One export
   * of an actor holds the offer (`offered`, under c->mu). */
  rk__idle_work_t idle;
  atomic_bool driving;
  bool offered;
  /* Requests answered beside the actor's rings in a turn of its worker
   * (direct_in, direct_run): up to DIRECT_MAX request slots (dreq, dslot
   * bytes each) with their answers' headers (dhead) and members (dpid),
   * a response slot (dresp) and an answer record (dans). The worker's
   * own; in buf's block (NULL: the cluster takes no such lane). */
  unsigned char *dreq, *dresp, *dans;
  size_t dslot;
  uint32_t ndirect;
  uint32_t dpid[DIRECT_MAX];
  rk_wire_resp_t dhead[DIRECT_MAX];
  /* Answers forward_once has taken the routes of and not yet posted
   * (atomic; raised under mu): a request is answered beside the rings
   * only when none are, so that its answer follows theirs. */
  uint32_t posting;
} export_t;

typedef struct waiter {
  struct waiter *next;
  uint64_t id;
  void *buffer;
  size_t capacity;
  bool done;
  rk_status_t status;
  rk_actor_message_t info;
  char text[TEXT_MAX];
} waiter_t;

typedef struct answer {
  struct answer *next;
  bool pooled; /* a block of the handle's answer room (rk_remote_actor_t) */
  rk_status_t status;
  rk_actor_message_t info;
  size_t size;
  unsigned char data[]; /* payload, or a refusal's text */
} answer_t;

struct rk_remote_actor {
  rk_cluster_t *c;
  uint32_t slot;
  uint64_t gen;
  uint32_t peer; /* the owner's peer id (peer_t.id) */
  char peer_name[RK_WIRE_NAME_MAX];
  uint64_t export_id;
  size_t request_size, response_size;
  uint32_t window;
  /* The handle's fields (those marked, and the lists); held briefly, never
   * across a wait or a post (rk__short_lock_t: a stream takes it twice per
   * request). A thread asleep for an answer or room waits on `wake`, which
   * a change it waits for moves (wake_handle). */
  rk__short_lock_t mu;
  uint32_t wake; /* atomic */
  uint64_t next_id;
  /* Sent and not yet received, less `rtaken - rfolded` (fold_taken). */
  uint32_t outstanding;
  /* Threads asleep on `wake` (changed under mu; read without it by a
   * receive that returned window room, see rk_remote_actor_receive). */
  uint32_t sleepers;
  _Atomic int state; /* rk_actor_state_t */
  char cause[TEXT_MAX];
  waiter_t *waiters;
  answer_t *rq, *rq_tail;
  char name[RK_WIRE_ACTOR_NAME_MAX]; /* the remote actor's export name */
  bool discard; /* a port's bridge sends on it: answers are dropped */
  /* A port's handle: answers that returned window room, and for how many
   * messages (under mu). */
  uint64_t credit_answers, credited;
  /* Requests posted, and sends refused or failed (under mu). */
  uint64_t sent, dropped;
  /* The rk_actor_t that wraps it (rk_cluster_lookup_actor), freed with it
   * by rk_cluster_destroy. */
  rk_actor_t *proxy;
  /* Sends that go out together (REQS, see out_flush): while `coalesce_at`
   * or more requests are on their way or in the remote actor
   * (`unanswered`, under mu), a send is added to `obuf` (nbuf records of
   * `stride` bytes, bmax at most) rather than posted alone. The buffer
   * goes when full, when fewer are unanswered, when anyone waits on the
   * handle, and at release. bmax < 2: every send goes at once. Posts of
   * the handle's requests are made under send_mu, buffered ones first,
   * so a thread's requests leave in the order it sent them; `flushing`
   * counts posts of taken-out buffers not yet made. */
  pthread_mutex_t send_mu;
  uint32_t unanswered, coalesce_at, bmax, nbuf;
  size_t stride;
  unsigned char *obuf, *fbuf; /* swapped at each post; bufs holds both */
  unsigned char *bufs;
  _Atomic uint32_t flushing;
  /* A pump is to flush it (c->flush_any): changed under mu, read without
   * it by a receive without it. */
  bool flush_due;
  uint64_t batches, batched; /* REQS posted, and their requests (mu) */
  /* Answers waiting in rq are blocks of `aroom` bytes of room, kept for
   * reuse (spare, under mu) once received: receives copy them out under
   * mu. aroom 0 (large responses): each answer its own allocation. */
  size_t aroom;
  answer_t *spare;
  uint32_t nspare;
  uint32_t nrq;  /* answers in rq (mu) */
  uint32_t pins; /* under c->mu: a pump flushing it; release waits */
  /* Receives without mu. The receiving role (`rbias`, base/bias.h) is the
   * first receiving thread's while it is the only one; a second revokes it
   * for good, and from then on receivers hold mu for what the role
   * guards: `cq`, the answers its holder moved out of rq (under mu) to take
   * one by one without it, and `cfree`, the blocks it is done with, given
   * back to `spare` when it next holds mu. `rtaken` counts the answers
   * taken without mu, each a request's window room: whoever holds mu adds
   * the new ones to `outstanding` (fold_taken). `ncq`: cq's length, for
   * the counts. */
  rk__bias_t rbias;
  answer_t *cq, *cfree;
  uint32_t ncfree;
  uint32_t rtaken;  /* atomic; written by the role's holder */
  uint32_t rfolded; /* mu */
  uint32_t ncq;     /* atomic; written by the role's holder */
};

/* Under h->mu: the window room that receives without mu returned. */
static void fold_taken(rk_remote_actor_t *h) {
  const uint32_t t = __atomic_load_n(&h->rtaken, __ATOMIC_ACQUIRE);
  h->outstanding -= t - h->rfolded;
  h->rfolded = t;
}

/* rk_cluster_connect: a local actor's port wired to a remote actor. The
 * port's messages go into the bridge's inbox (the K2K layer's credit); the
 * progress thread takes them out while the handle has window room and
 * sends each as a request whose answer is dropped. */
#define MAX_BRIDGES 64
#define BRIDGE_CAPACITY 64
typedef struct bridge {
  rk_remote_actor_t *h;
  rk__k2k_t *k;
} bridge_t;

/* rk_cluster_link: a local actor told when the remote one FAILS, and the
 * remote one's owner told (LINK_FAULT) when the local one fails. */
typedef struct rlink {
  rk_remote_actor_t *h;
  rk_actor_t *local;
  uint64_t id; /* the owner knows the link by (our index, id) */
} rlink_t;

/* The owner's side of a requester's rk_cluster_link: its exported actor
 * faults (RK_ACTOR_FAULT_LINK) when the requester's local actor fails
 * (LINK_FAULT) or the requester itself fails. */
typedef struct inlink {
  uint32_t peer;
  uint64_t link_id, export_id;
  rk_actor_t *actor;
  bool fault; /* LINK_FAULT came: `why` says */
  char local[RK_WIRE_ACTOR_NAME_MAX];
  char why[TEXT_MAX];
} inlink_t;

/* A local actor that failed for good (rk__actor_failed_hook), for
 * tell_links to pass on to the owners of the remote actors it is linked
 * to. */
typedef struct failed_local {
  struct failed_local *next;
  rk_actor_t *actor;
  char why[TEXT_MAX];
} failed_local_t;

/* A link message to send once no lock is held. */
typedef struct link_msg {
  uint32_t peer;
  unsigned id;
  rk_wire_link_t m;
} link_msg_t;

typedef struct lookup {
  struct lookup *next;
  uint64_t id;
  bool asked[MAX_PEERS];
  uint32_t waiting; /* asked and not yet answered */
  bool found;
  uint32_t peer;
  rk_wire_lookup_reply_t reply;
  char note[TEXT_MAX]; /* a peer that has the name registered, not exported */
} lookup_t;

typedef struct outmsg {
  struct outmsg *next;
  uint32_t peer;
  unsigned id;
  bool in; /* a WELCOME or INTRO_ACK received, to take in (inbox_push) */
  size_t size;
  unsigned char data[];
} outmsg_t;

struct rk_cluster {
  const rk_ucp_api_t *u;
  ucp_context_h context;
  /* The control worker: the listener and the endpoints that watch peers
   * (HELLO and INTRO come in on it); its address is the member's public
   * one (the hub's cards, MPI's exchange). Each peer's messages go over a
   * worker of their own (peer_t.rx.w), listed in wpeers for whoever
   * turns them (append-only; nw published with release). */
  ucp_worker_h worker;
  rx_t rx;
  ucp_listener_h listener;
  int efd; /* an epoll set of every worker's event descriptor */
  ucp_address_t *waddr;
  size_t waddr_size;
  peer_t *wpeers[MAX_PEERS];
  _Atomic uint32_t nw;
  char name[RK_WIRE_NAME_MAX];
  char token[RK_WIRE_TOKEN_MAX];
  size_t token_size;
  char address[128];
  uint32_t spin_us;
  /* Requests answered beside an exported actor's rings when its worker
   * delivers them (direct_in); RK_CLUSTER_DIRECT=0 turns it off. */
  bool direct;

  pthread_mutex_t mu; /* peers' fields, lists, tables below */
  pthread_cond_t cv;
  peer_t peers[MAX_PEERS];
  uint32_t peer_count; /* slots used */
  char (*failed_names)[RK_WIRE_NAME_MAX];
  size_t failed_count;
  export_t *exports[MAX_EXPORTS];
  uint64_t export_gen;
  rk_remote_actor_t **handles;
  uint32_t handle_cap;
  uint64_t handle_gen;
  lookup_t *lookups;
  uint64_t next_lookup;
  /* A joiner: the members the hub's WELCOME named (cards), for join() to
   * introduce itself to. */
  unsigned char *intro;
  size_t intro_size;
  uint32_t intro_count;

  pthread_mutex_t out_mu, drain_mu;
  outmsg_t *out_head, *out_tail;
  atomic_bool out_any;
  atomic_bool broken_any; /* a peer_broken peer waits for fail_broken */

  /* Exports, for the progress thread; requests in them not yet answered
   * (taken in or queued), over all exports. */
  pthread_mutex_t exports_mu;
  export_t *export_list[MAX_EXPORTS];
  uint32_t export_count;
  _Atomic uint64_t in_flight;
  /* Credit entries owed over all exports (export_t credits): the
   * progress loop turns the exports while there are some. */
  _Atomic uint32_t credits_due;
  /* A handle's buffered sends are due (flush_due): the next pump posts
   * them. */
  atomic_bool flush_any;
  bridge_t bridges[MAX_BRIDGES]; /* exports_mu */
  _Atomic uint32_t nbridges;
  /* Threads driving the worker (user threads while they wait, exported
   * actors' workers while idle): the progress thread stands aside
   * meanwhile, asleep on aside_seq (atomic), which a driver that gives up
   * driving bumps and wakes. */
  _Atomic uint32_t drivers;
  /* A peer has gone: the progress thread frees its worker, endpoints and
   * slot (reclaim_peers). */
  atomic_bool reclaim_due;
  uint64_t peers_freed; /* slots freed (c->mu) */
  uint32_t max_peers;   /* slots used at most: RK_CLUSTER_MAX_PEERS */
  /* A hub: how long a connection may go without its HELLO (the options'
   * connect_timeout_ns) before it is closed and its slot freed. */
  uint64_t hello_timeout_ns;
  uint32_t aside_seq;
  /* Turns of the worker, by anyone (pump, drive_turn): a progress thread
   * standing aside takes a turn itself when a millisecond passes without
   * one (a driver that stopped turning: a long handler, a stopped or
   * abandoned worker). */
  _Atomic uint64_t turns;
  /* When a driver last turned the control worker (rk__now_ns; ctrl_due). */
  _Atomic uint64_t ctrl_at;
  /* User threads asleep waiting for an answer (hwait), which only the
   * progress thread will bring: it does not linger aside meanwhile. */
  _Atomic uint32_t sleepers;
  /* User threads asleep on the worker's event descriptor (hwait, as
   * drivers): whoever hands them an answer signals the worker. */
  _Atomic uint32_t efd_sleepers;

  pthread_t progress;
  atomic_bool stop;

  bool hooked; /* on_actor_destroy is registered */
  /* Links (rk_cluster_link). links_mu is taken with no other cluster lock
   * held, and is held while the supervisor is told (rk__supervise_link_fault
   * takes the supervision lock): so a linked actor is not destroyed meanwhile
   * (on_actor_destroy takes links_mu), and no cluster lock is ever held
   * under the supervision lock's waiters' feet (on_event may send). */
  pthread_mutex_t links_mu;
  rlink_t *links;
  uint32_t nlinks, caplinks;
  uint64_t next_link_id;
  inlink_t *inlinks; /* links_mu */
  uint32_t ninlinks, capinlinks;
  /* Local actors that failed (the failure hook; failq_mu, a leaf). */
  pthread_mutex_t failq_mu;
  failed_local_t *failq;
  bool failed_hooked;
  /* A handle may have FAILED: tell_links is due after the worker's turn
   * (never from inside UCX's callbacks, which hold the worker). */
  atomic_bool links_due;

  /* The MPI launcher path: the library, whether rk initialized MPI (and
   * finalizes it), this rank. */
  const rk_mpi_api_t *mpi;
  bool mpi_owned;
  int rank;
};

/* ---- small helpers ------------------------------------------------------ */

static uint64_t deadline_at(uint64_t now, uint64_t timeout_ns) {
  return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

static uint64_t deadline_after(uint64_t timeout_ns) {
  return deadline_at(rk__now_ns(), timeout_ns);
}

/* A timeout whose deadline is read from the clock only when a wait needs
 * it (a send with credit, a receive with an answer there, read no clock). */
typedef struct wait_limit {
  uint64_t timeout_ns;
  uint64_t deadline; /* 0: not yet */
} wait_limit_t;

static wait_limit_t limit_lazy(uint64_t timeout_ns) {
  wait_limit_t l = {timeout_ns, 0};
  return l;
}

static void cond_init(pthread_cond_t *cv) { rk__cond_init_monotonic(cv); }

/* Waits on cv until deadline, at most cap_ns at a time. */
static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                            uint64_t deadline, uint64_t cap_ns) {
  uint64_t now = rk__now_ns();
  uint64_t wait = deadline > now ? deadline - now : 0;
  if (wait > cap_ns) wait = cap_ns;
  rk__cond_wait_until(cv, mu, now + wait);
}

static void copy_name(char *dst, size_t cap, const char *src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* "host:port", "[v6]:port" -> sockaddr. */
static rk_status_t parse_address(const char *text, struct sockaddr_storage *out,
                                 socklen_t *out_len) {
  char host[256];
  const char *colon = strrchr(text, ':');
  if (!colon || colon == text || !colon[1])
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: address '%s' is not host:port", text);
  size_t hn = (size_t)(colon - text);
  const char *h = text;
  if (text[0] == '[' && colon[-1] == ']') {
    h = text + 1;
    hn -= 2;
  }
  if (hn >= sizeof host)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cluster: host too long in '%s'",
                    text);
  memcpy(host, h, hn);
  host[hn] = '\0';
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cluster: bad port in '%s'", text);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int e = getaddrinfo(host, colon + 1, &hints, &res);
  if (e != 0 || !res)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cluster: cannot resolve '%s': %s",
                    host, gai_strerror(e));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *out_len = res->ai_addrlen;
  freeaddrinfo(res);
  return RK_OK;
}

static void format_address(const struct sockaddr_storage *sa, char *buf,
                           size_t cap) {
  char host[64] = "?", port[8] = "?"; /* INET6_ADDRSTRLEN is 46 */
  getnameinfo((const struct sockaddr *)sa,
              sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                        : sizeof(struct sockaddr_in),
              host, sizeof host, port, sizeof port,
              NI_NUMERICHOST | NI_NUMERICSERV);
  if (sa->ss_family == AF_INET6)
    snprintf(buf, cap, "[%s]:%s", host, port);
  else
    snprintf(buf, cap, "%s:%s", host, port);
}

/* ---- sending ------------------------------------------------------------ */

/* UCX's functions, for callbacks that get no cluster (set by the first
 * rk_cluster_create, before any send; the same table for every cluster:
 * atomic, as other clusters' threads read it). */
static const rk_ucp_api_t *g_ucp;
static const rk_ucp_api_t *ucp_fns(void) {
  return __atomic_load_n(&g_ucp, __ATOMIC_ACQUIRE);
}

static void peer_down(rk_cluster_t *c, peer_t *p, peer_state_t to,
                      const char *cause);

/* A broken endpoint is not yet a failure. A member that leaves says BYE on
 * its message endpoint and then closes, and the error of the endpoint
 * that watches it (another transport: the socket the connection was made
 * on) can be seen before the BYE is taken from the message transport. So
 * the peer is marked broken, and fails (FAILED in every handle, waiters
 * woken, links told) once the worker has been driven kBrokenPolls times
 * and kBrokenGraceNs have passed, unless its BYE came meanwhile (then it
 * left). A failure is noticed that much later: about 20 ms. */
enum { kBrokenPolls = 16 };
#define BROKEN_GRACE_NS 20000000ull

/* `id`: the peer that broke (a slot reused since holds another). */
static void peer_broken(rk_cluster_t *c, peer_t *p, uint32_t id,
                        const char *cause) {
  pthread_mutex_lock(&c->mu);
  int st = atomic_load(&p->state);
  if (p->id == id && st != P_FAILED && st != P_LEFT && st != P_REFUSED &&
      st != P_FREE && !p->broken_at) {
    copy_name(p->broken_cause, sizeof p->broken_cause, cause);
    p->broken_at = rk__now_ns();
    p->broken_polls = 0;
    atomic_store(&c->broken_any, true);
  }
  pthread_mutex_unlock(&c->mu);
}

/* After a turn of the worker: fails the broken peers whose grace is over
 * (see peer_broken). */
static void fail_broken(rk_cluster_t *c) {
  if (!atomic_load_explicit(&c->broken_any, memory_order_acquire)) return;
  for (;;) {
    char cause[TEXT_MAX];
    peer_t *due = NULL;
    bool waiting = false;
    const uint64_t now = rk__now_ns();
    pthread_mutex_lock(&c->mu);
    for (uint32_t i = 0; i < c->peer_count && !due; ++i) {
      peer_t *p = &c->peers[i];
      if (!p->broken_at) continue;
      int st = atomic_load(&p->state);
      if (st == P_FAILED || st == P_LEFT || st == P_REFUSED || st == P_FREE) {
        p->broken_at = 0; /* it left (its BYE came) or is done with */
        continue;
      }
      if (++p->broken_polls >= kBrokenPolls &&
          now - p->broken_at >= BROKEN_GRACE_NS) {
        copy_name(cause, sizeof cause, p->broken_cause);
        p->broken_at = 0;
        due = p;
      } else {
        waiting = true;
      }
    }
    if (!due && !waiting) atomic_store(&c->broken_any, false);
    pthread_mutex_unlock(&c->mu);
    if (!due) return;
    peer_down(c, due, P_FAILED, cause);
  }
}

/* Drives the worker until broken peer p has left or failed (see
 * peer_broken), for at most four times the grace. Never with h->mu or
 * c->mu held. */
static unsigned pump(rk_cluster_t *c);
static void settle(rk_cluster_t *c, peer_t *p) {
  const uint64_t until = rk__now_ns() + 4 * BROKEN_GRACE_NS;
  for (;;) {
    pthread_mutex_lock(&c->mu);
    const bool pending = p->broken_at != 0;
    pthread_mutex_unlock(&c->mu);
    if (!pending || rk__now_ns() >= until) return;
    pump(c);
  }
}

/* A send that failed because the peer is gone breaks the peer (whichever
 * endpoint notices first): it fails shortly (peer_broken), and later
 * sends fail fast, waiters wake. */
static void check_send_status(peer_t *p, uint32_t id, ucs_status_t st) {
  if (st == UCS_ERR_ENDPOINT_TIMEOUT || st == UCS_ERR_CONNECTION_RESET ||
      st == UCS_ERR_UNREACHABLE || st == UCS_ERR_NOT_CONNECTED ||
      st == UCS_ERR_IO_ERROR || UCS_IS_LINK_ERROR(st) ||
      UCS_IS_ENDPOINT_ERROR(st)) {
    char cause[TEXT_MAX];
    snprintf(cause, sizeof cause, "a send to it failed (UCX: %s)",
             ucp_fns()->ucs_status_string(st));
    peer_broken(p->c, p, id, cause);
  }
}

static rk_status_t send_failed(peer_t *p, uint32_t id, ucs_status_t st) {
  check_send_status(p, id, st);
  return rk__ucs_fail(st, "cluster: send");
}

typedef struct send_copy {
  peer_t *p;
  uint32_t id; /* p->id when sent */
  size_t cap;  /* bytes of data */
  unsigned char data[];
} send_copy_t;

static void send_done(void *request, ucs_status_t status, void *user) {
  send_copy_t *copy = user;
  if (status != UCS_OK) check_send_status(copy->p, copy->id, status);
  free(copy);
  ucp_fns()->ucp_request_free(request); /* nobody else keeps it */
}

/* This thread's copy buffer for sends that UCX completes at once (a
 * copying send does while the transport has room): kept for the next
 * one rather than freed (up to BOX_KEEP_MAX bytes; freed at the
 * thread's exit through box_key). A send that UCX completes later owns
 * its buffer (send_done frees it). */
#define BOX_KEEP_MAX 16384
static _Thread_local send_copy_t *t_box;
static pthread_key_t box_key;
static pthread_once_t box_once = PTHREAD_ONCE_INIT;

static void box_key_make(void) { (void)pthread_key_create(&box_key, free); }

static void box_keep(send_copy_t *box) {
  pthread_once(&box_once, box_key_make);
  free(t_box);
  t_box = box;
  (void)pthread_setspecific(box_key, box);
}

static send_copy_t *take_box(size_t size) {
  if (t_box && t_box->cap >= size) return t_box;
  send_copy_t *box = malloc(sizeof *box + size);
  if (!box) return NULL;
  box->cap = size;
  if (size <= BOX_KEEP_MAX) box_keep(box);
  return box;
}

/* After the send: a box UCX is done with goes back (kept or freed); one
 * it still uses is its own. */
static void give_box(send_copy_t *box, bool done) {
  if (box != t_box) {
    if (done) free(box);
  } else if (!done) {
    t_box = NULL;
    (void)pthread_setspecific(box_key, NULL);
  }
}

/* Messages up to this many bytes go as UCX's short sends, which complete
 * at once from the caller's buffers; longer ones are copied first. */
#define SHORT_SEND_MAX 256

/* The slot of peer id `id` (it may hold another peer by now). */
#define PEER_SLOT(id) ((id) % MAX_PEERS)

static rk_status_t post_on(rk_cluster_t *c, peer_t *p, uint32_t pid,
                           ucp_ep_h ep, unsigned id, const void *header,
                           size_t header_size, const void *data, size_t size,
                           bool reply);

/* Sends one active message to peer `pid` (an id: peer_t.id), or fails
 * (RK_ERR_UNAVAILABLE) when that peer's endpoint is gone - freed with its
 * slot, which may hold another peer by now. The endpoint is looked at and
 * used inside a quiescence section (base/quiesce.h): reclaim_peers frees
 * it only once every section that could have seen it has ended. */
static rk_status_t post(rk_cluster_t *c, uint32_t pid, unsigned id,
                        const void *header, size_t header_size,
                        const void *data, size_t size, bool reply) {
  peer_t *p = &c->peers[PEER_SLOT(pid)];
  rk__quiesce_enter();
  ucp_ep_h ep = __atomic_load_n(&p->ep, __ATOMIC_ACQUIRE);
  rk_status_t s;
  if (!ep || __atomic_load_n(&p->id, __ATOMIC_RELAXED) != pid)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cluster: send: the member is gone");
  else
    s = post_on(c, p, pid, ep, id, header, header_size, data, size, reply);
  rk__quiesce_leave();
  return s;
}

/* post, inside its section: p's endpoint `ep`. Tries an immediate send
 * from the caller's buffers first; if UCX cannot complete it at once,
 * copies header and data and lets the send finish in the background. */
static rk_status_t post_on(rk_cluster_t *c, peer_t *p, uint32_t pid,
                           ucp_ep_h ep, unsigned id, const void *header,
                           size_t header_size, const void *data, size_t size,
                           bool reply) {
  ucp_request_param_t prm;
  ucs_status_ptr_t r;
  if (header_size + size <= SHORT_SEND_MAX) {
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask =
        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    prm.flags = reply ? UCP_AM_SEND_FLAG_REPLY : 0;
    r = c->u->ucp_am_send_nbx(ep, id, header, header_size, data, size, &prm);
    if (r == NULL) return RK_OK;
    ucs_status_t st = UCS_PTR_STATUS(r);
    if (UCS_PTR_IS_PTR(r)) { /* should not happen with FORCE_IMM_CMPL */
      ucp_worker_h pw = __atomic_load_n(&p->rx.w, __ATOMIC_ACQUIRE);
      ucp_worker_h w = ep == p->boot || !pw ? c->worker : pw;
      while (c->u->ucp_request_check_status(r) == UCS_INPROGRESS)
        c->u->ucp_worker_progress(w);
      st = c->u->ucp_request_check_status(r);
      c->u->ucp_request_free(r);
      return st == UCS_OK ? RK_OK : send_failed(p, pid, st);
    }
    if (st != UCS_ERR_NO_RESOURCE) return send_failed(p, pid, st);
  }
  send_copy_t *box = take_box(header_size + size + 1);
  if (!box) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: send buffer");
  box->p = p;
  box->id = pid;
  unsigned char *copy = box->data;
  if (header_size) memcpy(copy, header, header_size);
  if (size) memcpy(copy + header_size, data, size);
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                     UCP_OP_ATTR_FIELD_USER_DATA;
  prm.flags = reply ? UCP_AM_SEND_FLAG_REPLY : 0;
  prm.cb.send = send_done;
  prm.user_data = box;
  r = c->u->ucp_am_send_nbx(ep, id, header_size ? copy : NULL, header_size,
                            copy + header_size, size, &prm);
  if (r == NULL || UCS_PTR_IS_ERR(r)) {
    give_box(box, true);
    return r == NULL ? RK_OK : send_failed(p, pid, UCS_PTR_STATUS(r));
  }
  give_box(box, false);
  return RK_OK; /* send_done frees */
}

static bool stopped(const rk_remote_actor_t *h);

/* ---- sends that go out together (REQS) --------------------------------- */

/* A handle's send buffers (two: one fills while the other is posted):
 * records of a rk_wire_req_t and its request padded to 8 bytes, as many
 * as fit BATCH_BYTES and a quarter of the window, BATCH_MAX at most;
 * sends are buffered while COALESCE_AT (or the buffer's size, if less)
 * are unanswered. None (every send at once) for a window under 8 or
 * requests too large for two records. */
static void out_buffers(rk_remote_actor_t *h) {
  h->stride = sizeof(rk_wire_req_t) + ((h->request_size + 7) & ~(size_t)7);
  size_t n = BATCH_BYTES / h->stride;
  if (n > h->window / 4) n = h->window / 4;
  if (n > BATCH_MAX) n = BATCH_MAX;
  if (n < 2) return;
  h->bufs = h->obuf = malloc(2 * n * h->stride);
  if (!h->obuf) return; /* every send at once */
  h->fbuf = h->obuf + n * h->stride;
  h->bmax = (uint32_t)n;
  h->coalesce_at = h->bmax < COALESCE_AT ? h->bmax : COALESCE_AT;
}

/* Posts n records: a REQS, or one alone as a REQ. */
static rk_status_t post_records(rk_remote_actor_t *h, uint32_t from,
                                const unsigned char *buf, uint32_t n) {
  rk_cluster_t *c = h->c;
  if (n == 1)
    return post(c, h->peer, RK_AM_REQ, buf, sizeof(rk_wire_req_t),
                buf + sizeof(rk_wire_req_t), h->request_size, false);
  rk_wire_batch_t b = {.from = from,
                       .count = n,
                       .stride = (uint32_t)h->stride,
                       .size = (uint32_t)h->request_size};
  return post(c, h->peer, RK_AM_REQS, &b, sizeof b, buf, n * h->stride, false);
}

/* Posts what h has buffered, with send_mu held and mu not. A stopped
 * handle's buffered requests are dropped (they would not be answered:
 * at most once). A failed post is the peer's failure, which stops the
 * handle; the caller's error message is kept. */
static void out_flush_locked(rk_remote_actor_t *h) {
  rk__short_lock(&h->mu);
  const uint32_t n = h->nbuf;
  unsigned char *buf = h->obuf;
  __atomic_store_n(&h->flush_due, false, __ATOMIC_RELAXED);
  if (!n || stopped(h)) {
    h->nbuf = 0;
    rk__short_unlock(&h->mu);
    return;
  }
  h->obuf = h->fbuf;
  h->fbuf = buf;
  h->nbuf = 0;
  h->unanswered += n;
  if (n > 1) {
    h->batches++;
    h->batched += n;
  }
  const uint32_t from = h->c->peers[PEER_SLOT(h->peer)].remote;
  atomic_fetch_add(&h->flushing, 1);
  rk__short_unlock(&h->mu);
  rk__error_stash_t stash;
  rk__error_stash(&stash);
  const bool failed = post_records(h, from, buf, n) != RK_OK;
  if (failed) {
    rk__short_lock(&h->mu);
    h->unanswered = h->unanswered > n ? h->unanswered - n : 0;
    rk__short_unlock(&h->mu);
  }
  rk__error_unstash(&stash, failed);
  atomic_fetch_sub(&h->flushing, 1);
}

static void out_flush(rk_remote_actor_t *h) {
  if (!h->bmax) return;
  pthread_mutex_lock(&h->send_mu);
  out_flush_locked(h);
  pthread_mutex_unlock(&h->send_mu);
}

/* Under h->mu: an answer came (k requests answered); the buffer is due
 * when fewer than coalesce_at are left on their way. */
static void out_answered(rk_cluster_t *c, rk_remote_actor_t *h, uint32_t k) {
  h->unanswered = h->unanswered > k ? h->unanswered - k : 0;
  if (h->nbuf && h->unanswered < h->coalesce_at && !h->flush_due) {
    __atomic_store_n(&h->flush_due, true, __ATOMIC_RELAXED);
    atomic_store(&c->flush_any, true);
  }
}

/* Flushes the handles whose buffers are due (every handle with a buffer
 * when `all`), from a pump or at destroy. Each is pinned meanwhile
 * (rk_remote_actor_release waits). */
static unsigned flush_handles(rk_cluster_t *c, bool all) {
  if (!all && (!atomic_load_explicit(&c->flush_any, memory_order_relaxed) ||
               !atomic_exchange(&c->flush_any, false)))
    return 0;
  enum { kAtOnce = 32 };
  rk_remote_actor_t *due[kAtOnce];
  uint32_t n = 0;
  bool more = false;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < c->handle_cap && !more; ++i) {
    rk_remote_actor_t *h = c->handles[i];
    if (!h || !h->bmax) continue;
    rk__short_lock(&h->mu);
    const bool d = h->nbuf && (all || h->flush_due);
    rk__short_unlock(&h->mu);
    if (!d) continue;
    if (n == kAtOnce) {
      more = true;
    } else {
      h->pins++;
      due[n++] = h;
    }
  }
  pthread_mutex_unlock(&c->mu);
  if (more) atomic_store(&c->flush_any, true);
  for (uint32_t i = 0; i < n; ++i) out_flush(due[i]);
  if (n) {
    pthread_mutex_lock(&c->mu);
    for (uint32_t i = 0; i < n; ++i) due[i]->pins--;
    pthread_mutex_unlock(&c->mu);
  }
  return n;
}

static void queue_push(rk_cluster_t *c, uint32_t peer, unsigned id,
                       const void *data, size_t size, bool in) {
  outmsg_t *m = malloc(sizeof *m + size);
  if (!m) return;
  m->next = NULL;
  m->peer = peer;
  m->id = id;
  m->in = in;
  m->size = size;
  memcpy(m->data, data, size);
  pthread_mutex_lock(&c->out_mu);
  if (c->out_tail)
    c->out_tail->next = m;
  else
    c->out_head = m;
  c->out_tail = m;
  atomic_store(&c->out_any, true);
  pthread_mutex_unlock(&c->out_mu);
}

/* From a callback: queue a message for the thread driving the worker. */
static void outbox_push(rk_cluster_t *c, uint32_t peer, unsigned id,
                        const void *data, size_t size) {
  queue_push(c, peer, id, data, size, false);
}

/* From a callback on a peer's worker: a WELCOME or INTRO_ACK, taken in
 * (the messages' endpoint opened on that worker) by the thread driving
 * it once the worker's turn is over. Opening an endpoint from inside the
 * worker's own callback lets UCX's TCP transport merge the new connection
 * with the one whose event is being handled, under the handler's feet. */
static void inbox_push(rk_cluster_t *c, unsigned id, const void *data,
                       size_t size) {
  queue_push(c, UINT32_MAX, id, data, size, true);
}

static void welcome_in(rk_cluster_t *c, const void *data, size_t len);
static void intro_ack_in(rk_cluster_t *c, const void *data, size_t len);

static void outbox_take(rk_cluster_t *c, outmsg_t *m);

/* One thread at a time takes the outbox, in order (what it pushed last
 * goes after what it pushed first, a WELCOME's endpoint before the replies
 * behind it); a thread that finds another at it leaves it to that one,
 * which looks again before it stops, or to the next turn. */
static void outbox_drain(rk_cluster_t *c) {
  if (!atomic_load_explicit(&c->out_any, memory_order_acquire)) return;
  if (pthread_mutex_trylock(&c->drain_mu) != 0) return;
  while (atomic_load_explicit(&c->out_any, memory_order_acquire)) {
    pthread_mutex_lock(&c->out_mu);
    outmsg_t *m = c->out_head;
    c->out_head = c->out_tail = NULL;
    atomic_store(&c->out_any, false);
    pthread_mutex_unlock(&c->out_mu);
    outbox_take(c, m);
  }
  pthread_mutex_unlock(&c->drain_mu);
}

static void outbox_take(rk_cluster_t *c, outmsg_t *m) {
  while (m) {
    outmsg_t *next = m->next;
    if (m->in) {
      if (m->id == RK_AM_WELCOME)
        welcome_in(c, m->data, m->size);
      else
        intro_ack_in(c, m->data, m->size);
      free(m);
      m = next;
      continue;
    }
    peer_t *p = &c->peers[PEER_SLOT(m->peer)];
    int st = atomic_load(&p->state);
    /* RESP_PACKED: a RESP whose header leads the data. */
    size_t hs = (m->id & RESP_PACKED) ? sizeof(rk_wire_resp_t) : 0;
    const bool same = __atomic_load_n(&p->id, __ATOMIC_RELAXED) == m->peer;
    if (same && st != P_FAILED && st != P_LEFT && st != P_FREE) {
      char *saved = rk__error_save();
      (void)post(c, m->peer, m->id & ~RESP_PACKED, hs ? m->data : NULL, hs,
                 m->data + hs, m->size - hs, false);
      rk__error_restore(saved);
    }
    if (same && st == P_WELCOMING &&
        (m->id == RK_AM_WELCOME || m->id == RK_AM_INTRO_ACK)) {
      pthread_mutex_lock(&c->mu);
      int expected = P_WELCOMING;
      atomic_compare_exchange_strong(&p->state, &expected, P_UP);
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
    }
    free(m);
    m = next;
  }
}

static void tell_links(rk_cluster_t *c);

/* Marks tell_links due and wakes the progress thread to do it. */
static void links_due(rk_cluster_t *c) {
  atomic_store(&c->links_due, true);
  c->u->ucp_worker_signal(c->worker);
}

/* How often a driver (a waiting caller, an exported actor's worker) turns
 * the control worker: it looks once in kCtrlEvery of its turns, and turns
 * it when CTRL_GAP_NS have passed since a driver last did. The control
 * worker carries joins and introductions and watches peers over the
 * network: its endpoints are over TCP, and each of its turns polls every
 * TCP interface it uses (an epoll_wait each: loopback and the network
 * device). The peers' workers poll no TCP unless their messages go over
 * it (UCX turns an interface on only for the endpoints that use it). A
 * count of turns alone would bound nothing: an idle driver's turn takes
 * ~100 ns, so 128 of them made tens of thousands of control turns a
 * second per spinning thread. The progress thread turns it every time. */
enum { kCtrlEvery = 128 };
#define CTRL_GAP_NS 1000000ull

/* A turn counted, and its number: a load and a store, not a locked
 * read-modify-write (a turn's cost, where a turn that finds nothing takes
 * ~100 ns). Two threads turning at once may count one: the counter's
 * readers ask only whether anyone turned (progress_main) and pick a turn
 * now and then (ctrl_due). */
static uint64_t count_turn(rk_cluster_t *c) {
  const uint64_t t = atomic_load_explicit(&c->turns, memory_order_relaxed);
  atomic_store_explicit(&c->turns, t + 1, memory_order_relaxed);
  return t;
}

/* Whether a driver's turn `t` turns the control worker too. */
static bool ctrl_due(rk_cluster_t *c, uint64_t t) {
  if (t % kCtrlEvery) return false;
  const uint64_t now = rk__now_ns();
  uint64_t at = atomic_load_explicit(&c->ctrl_at, memory_order_relaxed);
  return now - at >= CTRL_GAP_NS &&
         atomic_compare_exchange_strong_explicit(
             &c->ctrl_at, &at, now, memory_order_relaxed, memory_order_relaxed);
}

/* One turn of every peer's worker (not those of peers gone), and of the
 * control worker when `ctrl`. Inside a quiescence section: a peer's
 * worker is freed (reclaim_peers) only once no turn can still use it. */
static unsigned turn_workers(rk_cluster_t *c, bool ctrl) {
  unsigned n = 0;
  if (ctrl) n += c->u->ucp_worker_progress(c->worker);
  rk__quiesce_enter();
  const uint32_t nw = atomic_load_explicit(&c->nw, memory_order_acquire);
  for (uint32_t i = 0; i < nw; ++i) {
    const peer_t *p = c->wpeers[i];
    ucp_worker_h w = __atomic_load_n(&p->rx.w, __ATOMIC_ACQUIRE);
    if (w && !__atomic_load_n(&p->quiet, __ATOMIC_RELAXED))
      n += c->u->ucp_worker_progress(w);
  }
  rk__quiesce_leave();
  return n;
}

/* Arms every worker turned for a sleep on c->efd: false when one has
 * events waiting (turn them first). */
static bool arm_workers(rk_cluster_t *c) {
  if (c->u->ucp_worker_arm(c->worker) != UCS_OK) return false;
  bool armed = true;
  rk__quiesce_enter();
  const uint32_t nw = atomic_load_explicit(&c->nw, memory_order_acquire);
  for (uint32_t i = 0; i < nw && armed; ++i) {
    const peer_t *p = c->wpeers[i];
    ucp_worker_h w = __atomic_load_n(&p->rx.w, __ATOMIC_ACQUIRE);
    if (w && !__atomic_load_n(&p->quiet, __ATOMIC_RELAXED) &&
        c->u->ucp_worker_arm(w) != UCS_OK)
      armed = false;
  }
  rk__quiesce_leave();
  return armed;
}

/* One turn of the workers from any thread; a driver's (`driver`) turns
 * the control worker when it is due (ctrl_due). */
static unsigned pump_as(rk_cluster_t *c, bool driver) {
  const uint64_t t = count_turn(c);
  unsigned n = turn_workers(c, !driver || ctrl_due(c, t));
  n += flush_handles(c, false);
  outbox_drain(c);
  fail_broken(c);
  if (atomic_load_explicit(&c->links_due, memory_order_relaxed) &&
      atomic_exchange(&c->links_due, false)) {
    tell_links(c);
    n++;
  }
  return n;
}

static unsigned pump(rk_cluster_t *c) { return pump_as(c, false); }

/* ---- handles: failure and refusal -------------------------------------- */

static rk_remote_actor_t *handle_at(rk_cluster_t *c, uint32_t slot,
                                    uint64_t gen) {
  if (slot >= c->handle_cap) return NULL;
  rk_remote_actor_t *h = c->handles[slot];
  return h && h->gen == gen ? h : NULL;
}

/* Called with no cluster lock held, after handles may have become
 * FAILED: each local actor linked to a FAILED handle faults
 * (RK_ACTOR_FAULT_LINK; the supervision thread restarts or fails it), and
 * the link goes. A handle's cause is written before its state. */
/* Sends collected link messages (no lock held) and frees them. */
static void post_link_msgs(rk_cluster_t *c, link_msg_t *msgs, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const peer_t *p = &c->peers[PEER_SLOT(msgs[i].peer)];
    if (atomic_load(&p->state) != P_UP) continue;
    char *saved = rk__error_save();
    (void)post(c, msgs[i].peer, msgs[i].id, NULL, 0, &msgs[i].m,
               sizeof msgs[i].m, false);
    rk__error_restore(saved);
  }
  free(msgs);
}

/* Called with links_mu held: the message telling h's owner about link l. */
static bool link_msg_add(rk_cluster_t *c, link_msg_t **msgs, uint32_t *n,
                         const rlink_t *l, unsigned id, const char *text) {
  link_msg_t *grown = realloc(*msgs, (*n + 1) * sizeof *grown);
  if (!grown) return false;
  *msgs = grown;
  link_msg_t *m = &grown[(*n)++];
  memset(m, 0, sizeof *m);
  m->peer = l->h->peer;
  m->id = id;
  m->m.from = c->peers[PEER_SLOT(l->h->peer)].remote;
  m->m.export_id = l->h->export_id;
  m->m.link_id = l->id;
  if (!rk__registry_describe(l->local, m->m.local, sizeof m->m.local))
    snprintf(m->m.local, sizeof m->m.local, "%p", (void *)l->local);
  copy_name(m->m.text, sizeof m->m.text, text ? text : "");
  return true;
}

/* Called with links_mu held: whether `actor` still has remote links. */
static bool has_links(const rk_cluster_t *c, const rk_actor_t *actor) {
  for (uint32_t i = 0; i < c->nlinks; ++i)
    if (c->links[i].local == actor) return true;
  return false;
}

static void tell_links(rk_cluster_t *c) {
  /* Local actors that failed: their links' owners are told (LINK_FAULT),
   * and the links go. */
  pthread_mutex_lock(&c->failq_mu);
  failed_local_t *f = c->failq;
  c->failq = NULL;
  pthread_mutex_unlock(&c->failq_mu);
  link_msg_t *msgs = NULL;
  uint32_t nmsgs = 0;
  pthread_mutex_lock(&c->links_mu);
  while (f) {
    failed_local_t *next = f->next;
    for (uint32_t i = 0; i < c->nlinks;) {
      if (c->links[i].local != f->actor) {
        ++i;
        continue;
      }
      (void)link_msg_add(c, &msgs, &nmsgs, &c->links[i], RK_AM_LINK_FAULT,
                         f->why);
      c->links[i] = c->links[--c->nlinks];
    }
    free(f);
    f = next;
  }
  /* Owner side: links from a requester that failed, or whose local actor
   * failed, fault the exported actor; links from one that left go. */
  for (uint32_t i = 0; i < c->ninlinks;) {
    inlink_t *l = &c->inlinks[i];
    const peer_t *p = &c->peers[PEER_SLOT(l->peer)];
    /* A slot is freed only once no link refers to its peer
     * (reclaim_peers): p is the linking peer. */
    const int ps = atomic_load(&p->state);
    char why[TEXT_MAX + RK_WIRE_ACTOR_NAME_MAX + 2 * RK_WIRE_NAME_MAX + 64];
    if (l->fault) {
      snprintf(why, sizeof why, "linked actor %s on member '%s' failed (%s)",
               l->local, p->name, l->why);
    } else if (ps == P_FAILED) {
      snprintf(why, sizeof why,
               "linked actor %s on member '%s' failed (member '%s' failed: "
               "%.200s)",
               l->local, p->name, p->name, p->cause);
    } else if (ps != P_UP) {
      c->inlinks[i] = c->inlinks[--c->ninlinks]; /* left: not a failure */
      continue;
    } else {
      ++i;
      continue;
    }
    (void)rk__supervise_link_fault(l->actor, why);
    c->inlinks[i] = c->inlinks[--c->ninlinks];
  }
  pthread_mutex_unlock(&c->links_mu);
  post_link_msgs(c, msgs, nmsgs);
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->nlinks;) {
    rk_remote_actor_t *h = c->links[i].h;
    if (atomic_load(&h->state) != RK_ACTOR_FAILED) {
      ++i;
      continue;
    }
    char why[TEXT_MAX + RK_WIRE_ACTOR_NAME_MAX + 32];
    rk__short_lock(&h->mu);
    snprintf(why, sizeof why, "remote actor '%s' failed (%.200s)", h->name,
             h->cause);
    rk__short_unlock(&h->mu);
    (void)rk__supervise_link_fault(c->links[i].local, why);
    c->links[i] = c->links[--c->nlinks];
  }
  pthread_mutex_unlock(&c->links_mu);
}

/* Wakes the threads waiting on h (called with h->mu held): those asleep
 * on its condition variable, and those asleep on the worker's event
 * descriptor (hwait). */
static void wake_handle(rk_cluster_t *c, rk_remote_actor_t *h) {
  if (h->sleepers) {
    __atomic_fetch_add(&h->wake, 1u, __ATOMIC_RELEASE);
    rk__wake_all(&h->wake);
  }
  if (atomic_load_explicit(&c->efd_sleepers, memory_order_relaxed))
    c->u->ucp_worker_signal(c->worker);
}

/* Called with c->mu held: every handle to peer `id` stops. */
static void stop_handles_of(rk_cluster_t *c, uint32_t id,
                            rk_actor_state_t state, const char *cause) {
  for (uint32_t i = 0; i < c->handle_cap; ++i) {
    rk_remote_actor_t *h = c->handles[i];
    if (!h || h->peer != id) continue;
    rk__short_lock(&h->mu);
    int s = atomic_load(&h->state);
    if (s != RK_ACTOR_FAILED && s != RK_ACTOR_TERMINATED) {
      copy_name(h->cause, sizeof h->cause, cause);
      atomic_store(&h->state, (int)state);
    }
    wake_handle(c, h);
    rk__short_unlock(&h->mu);
  }
}

/* Called with c->mu held: lookups waiting on peer `index` stop waiting. */
static void release_lookups_of(rk_cluster_t *c, uint32_t index) {
  for (lookup_t *l = c->lookups; l; l = l->next) {
    if (l->asked[index]) {
      l->asked[index] = false;
      l->waiting--;
    }
  }
}

static void peer_down(rk_cluster_t *c, peer_t *p, peer_state_t to,
                      const char *cause) {
  pthread_mutex_lock(&c->mu);
  int st = atomic_load(&p->state);
  if (st == P_FAILED || st == P_LEFT || st == P_REFUSED || st == P_FREE) {
    pthread_mutex_unlock(&c->mu);
    return;
  }
  copy_name(p->cause, sizeof p->cause, cause);
  atomic_store(&p->state, (int)to);
  /* A failed peer's worker is turned no more (one that left is, for its
   * endpoints to close): a sender killed mid-message may have
   * left its shared-memory FIFO wedged (docs/cluster.md, "Failures"),
   * which now holds up nobody else's messages, and a broken connection's
   * descriptor would keep c->efd awake. */
  if (to == P_FAILED && p->rx.w && !p->quiet) {
    __atomic_store_n(&p->quiet, true, __ATOMIC_RELAXED);
    (void)epoll_ctl(c->efd, EPOLL_CTL_DEL, p->wefd, NULL);
  }
  if (to == P_FAILED && st == P_UP && !p->is_hub) {
    char(*grown)[RK_WIRE_NAME_MAX] = realloc(
        c->failed_names, (c->failed_count + 1) * sizeof *c->failed_names);
    if (grown) {
      c->failed_names = grown;
      copy_name(c->failed_names[c->failed_count++], RK_WIRE_NAME_MAX, p->name);
    }
  }
  char why[TEXT_MAX + 96];
  snprintf(why, sizeof why, "member '%s' %s: %s", p->name,
           to == P_LEFT ? "left the cluster" : "failed", cause);
  stop_handles_of(c, p->id,
                  to == P_LEFT ? RK_ACTOR_TERMINATED : RK_ACTOR_FAILED, why);
  release_lookups_of(c, p->index);
  pthread_cond_broadcast(&c->cv);
  atomic_store(&c->reclaim_due, true);
  pthread_mutex_unlock(&c->mu);
  links_due(c); /* failed: links told; left: its links dropped; freed */
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
  peer_t *p = arg;
  rk_cluster_t *c = p->c;
  /* The watching endpoint of the peer the slot holds now (or one whose
   * error comes before it is stored), not one closed with an earlier peer
   * of the slot (UCX calls no error handler for an endpoint once closed;
   * this looks all the same). */
  pthread_mutex_lock(&c->mu);
  const bool mine = p->boot == ep || !p->boot;
  const uint32_t id = p->id;
  const bool hub = p->is_hub;
  pthread_mutex_unlock(&c->mu);
  if (!mine) return;
  char cause[TEXT_MAX];
  if (status == UCS_ERR_REJECTED && hub)
    snprintf(cause, sizeof cause,
             "the hub refused the connection (UCX: %s): it holds as many "
             "peers as it may (256, or its RK_CLUSTER_MAX_PEERS)",
             c->u->ucs_status_string(status));
  else
    snprintf(cause, sizeof cause, "its connection broke (UCX: %s)",
             c->u->ucs_status_string(status));
  peer_broken(c, p, id, cause);
}

/* ---- peers ------------------------------------------------------------- */

/* Called with c->mu held: a slot for a new peer, one freed by a peer gone
 * (reclaim_peers) first. Its state is P_FREE until the caller sets it. */
static peer_t *peer_new(rk_cluster_t *c) {
  peer_t *p = NULL;
  for (uint32_t i = 0; i < c->peer_count && !p; ++i)
    if (c->peers[i].free_slot) p = &c->peers[i];
  if (!p) {
    if (c->peer_count >= c->max_peers) return NULL;
    p = &c->peers[c->peer_count];
    p->index = c->peer_count++;
    __atomic_store_n(&p->id, p->index, __ATOMIC_RELAXED);
  }
  p->free_slot = false;
  memset(p->name, 0, sizeof p->name);
  p->c = c;
  __atomic_store_n(&p->ep, NULL, __ATOMIC_RELAXED);
  p->boot = NULL;
  p->remote = UINT32_MAX;
  p->is_hub = false;
  p->cause[0] = '\0';
  p->refusal = RK_OK;
  p->broken_at = 0;
  p->broken_polls = 0;
  p->down_at = 0;
  __atomic_store_n(&p->quiet, false, __ATOMIC_RELAXED);
  p->addr = NULL;
  p->addr_size = 0;
  return p;
}

static ucp_ep_params_t ep_params(peer_t *p) {
  ucp_ep_params_t e;
  memset(&e, 0, sizeof e);
  e.field_mask =
      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  e.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  e.err_handler.cb = on_ep_error;
  e.err_handler.arg = p;
  return e;
}

static void on_conn(ucp_conn_request_h req, void *arg) {
  rk_cluster_t *c = arg;
  pthread_mutex_lock(&c->mu);
  peer_t *p = peer_new(c);
  if (!p) {
    const uint32_t most = c->max_peers;
    pthread_mutex_unlock(&c->mu);
    rk__log(RK__LOG_WARN,
            "cluster '%s': a connection refused: it holds %u peers, its most "
            "(RK_CLUSTER_MAX_PEERS; the slot of a peer gone is freed soon "
            "after it goes)",
            c->name, most);
    c->u->ucp_listener_reject(c->listener, req);
    return;
  }
  snprintf(p->name, sizeof p->name, "(joining #%u)", p->index);
  pthread_mutex_unlock(&c->mu);
  /* UCX is never called with c->mu held: its callbacks, which run under
   * the worker's lock, take c->mu. (Callbacks run one at a time, so the
   * HELLO cannot come before this one has returned.) */
  ucp_ep_params_t e = ep_params(p);
  e.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  e.conn_request = req;
  ucp_ep_h ep = NULL;
  ucs_status_t st = c->u->ucp_ep_create(c->worker, &e, &ep);
  pthread_mutex_lock(&c->mu);
  p->boot = p->ep = st == UCS_OK ? ep : NULL;
  atomic_store(&p->state, st == UCS_OK ? P_ACCEPTED : P_REFUSED);
  /* Refused, its slot is freed; accepted, it is if no HELLO comes within
   * hello_timeout_ns (reclaim_peers). */
  p->accepted_at = rk__now_ns();
  atomic_store(&c->reclaim_due, true);
  pthread_mutex_unlock(&c->mu);
}

static rk_status_t set_handlers(rk_cluster_t *c, ucp_worker_h w, rx_t *rx);

static ucs_status_t make_worker(rk_cluster_t *c, ucp_worker_h *out) {
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  return c->u->ucp_worker_create(c->context, &wp, out);
}

/* Makes p's own worker (never with c->mu held): the cluster's handlers,
 * its event descriptor in c->efd's set, its address for p; then lists it
 * for the turns. False, with *why set, when it cannot be made or its
 * address is too long to send (the handshake with p fails then). */
static bool peer_worker(rk_cluster_t *c, peer_t *p, const char **why) {
  ucp_worker_h w = NULL;
  ucs_status_t st = make_worker(c, &w);
  *why = NULL;
  if (st != UCS_OK) {
    *why = c->u->ucs_status_string(st);
    return false;
  }
  p->rx.c = c;
  char *saved = rk__error_save();
  rk_status_t s = set_handlers(c, w, &p->rx);
  rk__error_restore(saved);
  int efd = -1;
  if (s == RK_OK && c->u->ucp_worker_get_efd(w, &efd) != UCS_OK) efd = -1;
  ucp_address_t *a = NULL;
  size_t an = 0;
  if (s == RK_OK && c->u->ucp_worker_get_address(w, &a, &an) != UCS_OK)
    a = NULL;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
  if (s != RK_OK || !a || an > RK_WIRE_ADDRESS_MAX || efd < 0 ||
      epoll_ctl(c->efd, EPOLL_CTL_ADD, efd, &ev) != 0) {
    *why = s != RK_OK ? "its handlers could not be set"
           : !a       ? "no worker address"
           : efd < 0  ? "no event descriptor"
           : an > RK_WIRE_ADDRESS_MAX
               ? "its worker address is too long to send"
               : "its event descriptor could not be watched";
    if (a) c->u->ucp_worker_release_address(w, a);
    c->u->ucp_worker_destroy(w);
    return false;
  }
  pthread_mutex_lock(&c->mu);
  p->waddr = a;
  p->waddr_size = an;
  p->wefd = efd;
  __atomic_store_n(&p->rx.w, w, __ATOMIC_RELEASE);
  if (!p->listed) {
    /* A reused slot is listed already (its worker gone meanwhile). */
    p->listed = true;
    const uint32_t n = atomic_load_explicit(&c->nw, memory_order_relaxed);
    c->wpeers[n] = p;
    atomic_store_explicit(&c->nw, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&c->mu);
  return true;
}

/* The messages' endpoint, on worker w, to a worker address (never with
 * c->mu held): false when it cannot be made. */
static bool open_data_ep(rk_cluster_t *c, ucp_worker_h w, const void *addr,
                         size_t size, ucp_ep_h *out) {
  *out = NULL;
  if (!size || !w) return false;
  /* Without peer error handling, so that UCX may pick shared memory (its
   * shared-memory transports cannot detect a peer's death, and UCX 1.13
   * leaves them out of endpoints that ask for it). The first endpoint,
   * with peer error handling, watches the peer for both. */
  ucp_ep_params_t e;
  memset(&e, 0, sizeof e);
  e.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  e.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  e.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  e.address = (const ucp_address_t *)addr;
  return c->u->ucp_ep_create(w, &e, out) == UCS_OK;
}

/* A joiner's peer that has not yet answered, or whose answer is being
 * taken in. */
static bool joining(peer_t *p) {
  const int st = atomic_load(&p->state);
  return st == P_CONNECTING || st == P_JOINING;
}

/* The peer a message came from, while its messages are taken. */
static peer_t *peer_from(rk_cluster_t *c, uint32_t from) {
  peer_t *p = &c->peers[PEER_SLOT(from)];
  if (__atomic_load_n(&p->id, __ATOMIC_RELAXED) != from) return NULL;
  const int st = atomic_load(&p->state);
  return st == P_UP || st == P_JOINING ? p : NULL;
}

/* Called with c->mu held: the peer of id `id` in whatever state, or NULL
 * (never given, or its slot freed since). */
static peer_t *peer_by_id(rk_cluster_t *c, uint32_t id) {
  peer_t *p = &c->peers[PEER_SLOT(id)];
  return PEER_SLOT(id) < c->peer_count && p->id == id ? p : NULL;
}

static bool const_time_equal(const char *a, size_t an, const char *b,
                             size_t bn) {
  unsigned char diff = (unsigned char)(an != bn);
  size_t n = an < bn ? an : bn;
  for (size_t i = 0; i < n; ++i) diff |= (unsigned char)(a[i] ^ b[i]);
  return diff == 0;
}

/* Called with c->mu held: whether a joiner (HELLO) or a member
 * introducing itself (INTRO) may join; w's status and text say. */
static void vet(rk_cluster_t *c, const rk_wire_hello_t *hp,
                rk_wire_welcome_t *wp) {
  rk_wire_hello_t h = *hp;
  rk_wire_welcome_t w = *wp;
  w.status = RK_OK;
  if (h.magic != RK_WIRE_MAGIC || h.version != RK_WIRE_VERSION) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text,
             "wire version %u is not %u, that of '%.63s' (another rk "
             "build?)",
             h.version, RK_WIRE_VERSION, c->name);
  } else if (h.token_size > RK_WIRE_TOKEN_MAX ||
             !const_time_equal(h.token, h.token_size, c->token,
                               c->token_size)) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text,
             "the cluster token does not match (RK_CLUSTER_TOKEN)");
  } else {
    for (size_t i = 0; i < c->failed_count && w.status == RK_OK; ++i)
      if (!strcmp(c->failed_names[i], h.name)) {
        w.status = RK_ERR_UNAVAILABLE;
        snprintf(w.text, sizeof w.text,
                 "member '%.63s' failed earlier and may not rejoin: its "
                 "actors are FAILED in every member; join under a new name",
                 h.name);
      }
    for (uint32_t i = 0; i < c->peer_count && w.status == RK_OK; ++i)
      if ((atomic_load(&c->peers[i].state) == P_UP ||
           atomic_load(&c->peers[i].state) == P_WELCOMING) &&
          !strcmp(c->peers[i].name, h.name)) {
        w.status = RK_ERR_UNAVAILABLE;
        snprintf(w.text, sizeof w.text,
                 "the name '%.63s' is in use by a live member", h.name);
      }
    if (!strcmp(h.name, c->name) && w.status == RK_OK) {
      w.status = RK_ERR_UNAVAILABLE;
      snprintf(w.text, sizeof w.text,
               "the name '%.63s' is the own name of '%.63s'", h.name, c->name);
    }
  }
  *wp = w;
}

static ucs_status_t on_hello(void *arg, const void *header, size_t hlen,
                             void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return UCS_OK;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
      len < sizeof(rk_wire_hello_t))
    return UCS_OK;
  rk_wire_hello_t h;
  memcpy(&h, data, sizeof h);
  h.name[RK_WIRE_NAME_MAX - 1] = '\0';
  if (h.address_size > len - sizeof h ||
      h.public_size > len - sizeof h - h.address_size)
    h.address_size = h.public_size = 0;
  const unsigned char *their_address = (const unsigned char *)data + sizeof h;
  const unsigned char *their_public = their_address + h.address_size;
  pthread_mutex_lock(&c->mu);
  peer_t *p = NULL;
  for (uint32_t i = 0; i < c->peer_count; ++i)
    if (c->peers[i].boot == param->reply_ep &&
        atomic_load(&c->peers[i].state) == P_ACCEPTED)
      p = &c->peers[i];
  if (!p) {
    pthread_mutex_unlock(&c->mu);
    return UCS_OK;
  }
  rk_wire_welcome_t w;
  memset(&w, 0, sizeof w);
  w.from = h.hub_index;
  w.your_index = p->id;
  copy_name(w.name, sizeof w.name, c->name);
  vet(c, &h, &w);
  copy_name(p->name, sizeof p->name, h.name);
  pthread_mutex_unlock(&c->mu);
  ucp_ep_h data_ep = NULL;
  const char *why = NULL;
  if (w.status == RK_OK && !peer_worker(c, p, &why)) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text, "the hub cannot make a worker for it: %s",
             why);
  }
  if (w.status == RK_OK &&
      !open_data_ep(c, p->rx.w, their_address, h.address_size, &data_ep)) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text,
             "the hub cannot reach the joiner's worker address");
  }
  /* Its public address, for the members welcomed after it (cards). */
  unsigned char *addr = NULL;
  if (w.status == RK_OK && h.public_size) {
    addr = malloc(h.public_size);
    if (addr) memcpy(addr, their_public, h.public_size);
  }
  pthread_mutex_lock(&c->mu);
  if (data_ep) p->ep = data_ep;
  /* The cards: every other member welcomed so far, UP or being welcomed
   * (HELLOs are handled one at a time, so of two members the second
   * always finds the first here). */
  size_t cards = 0;
  uint32_t members = 0;
  if (w.status == RK_OK) {
    /* UP when the WELCOME has been posted (outbox_drain): nothing else
     * may reach the joiner before it. */
    p->remote = h.hub_index;
    p->addr = addr;
    p->addr_size = addr ? h.public_size : 0;
    atomic_store(&p->state, P_WELCOMING);
    for (uint32_t i = 0; i < c->peer_count; ++i) {
      const peer_t *q = &c->peers[i];
      const int qs = atomic_load(&q->state);
      if (q == p || q->is_hub || !q->addr || (qs != P_UP && qs != P_WELCOMING))
        continue;
      cards += sizeof(rk_wire_card_t) + q->addr_size;
      members++;
    }
  } else {
    atomic_store(&p->state, P_REFUSED);
    atomic_store(&c->reclaim_due, true); /* refused: its slot is freed */
    free(addr);
  }
  const size_t hub_address = w.status == RK_OK ? p->waddr_size : 0;
  const size_t n = sizeof w + hub_address + cards;
  unsigned char *msg = malloc(n);
  if (msg) {
    w.address_size = (uint32_t)hub_address;
    w.members = members;
    memcpy(msg, &w, sizeof w);
    if (hub_address) memcpy(msg + sizeof w, p->waddr, hub_address);
    size_t off = sizeof w + hub_address;
    for (uint32_t i = 0; members && i < c->peer_count; ++i) {
      const peer_t *q = &c->peers[i];
      const int qs = atomic_load(&q->state);
      if (q == p || q->is_hub || !q->addr || (qs != P_UP && qs != P_WELCOMING))
        continue;
      rk_wire_card_t card;
      memset(&card, 0, sizeof card);
      copy_name(card.name, sizeof card.name, q->name);
      card.address_size = q->addr_size;
      memcpy(msg + off, &card, sizeof card);
      memcpy(msg + off + sizeof card, q->addr, q->addr_size);
      off += sizeof card + q->addr_size;
    }
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (msg) {
    outbox_push(c, __atomic_load_n(&p->id, __ATOMIC_RELAXED), RK_AM_WELCOME,
                msg, n);
    free(msg);
  }
  return UCS_OK;
}

/* A member introducing itself (it joined after us; the hub gave it our
 * worker address): as a HELLO, but the endpoints are made from its worker
 * address here, and the answer is INTRO_ACK. */
static ucs_status_t on_intro(void *arg, const void *header, size_t hlen,
                             void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
      len < sizeof(rk_wire_hello_t))
    return UCS_OK;
  rk_wire_hello_t h;
  memcpy(&h, data, sizeof h);
  h.name[RK_WIRE_NAME_MAX - 1] = '\0';
  if (h.address_size > len - sizeof h ||
      h.public_size > len - sizeof h - h.address_size)
    return UCS_OK;
  if (!h.address_size || !h.public_size)
    return UCS_OK; /* nothing to answer on */
  const unsigned char *their_address = (const unsigned char *)data + sizeof h;
  const unsigned char *their_public = their_address + h.address_size;
  rk_wire_welcome_t w;
  memset(&w, 0, sizeof w);
  w.from = h.hub_index;
  copy_name(w.name, sizeof w.name, c->name);
  pthread_mutex_lock(&c->mu);
  vet(c, &h, &w);
  peer_t *p = peer_new(c);
  if (p) {
    copy_name(p->name, sizeof p->name, h.name);
    atomic_store(&p->state, P_ACCEPTED);
  }
  pthread_mutex_unlock(&c->mu);
  if (!p) return UCS_OK;
  /* The watching endpoint between the control workers; the messages'
   * between its worker for this member and this member's for it. */
  ucp_ep_params_t e = ep_params(p);
  e.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  e.address = (const ucp_address_t *)their_public;
  ucp_ep_h watch = NULL, data_ep = NULL;
  const char *why = NULL;
  ucs_status_t st = c->u->ucp_ep_create(c->worker, &e, &watch);
  const bool made =
      st == UCS_OK && w.status == RK_OK && peer_worker(c, p, &why);
  if (made &&
      !open_data_ep(c, p->rx.w, their_address, h.address_size, &data_ep))
    data_ep = NULL;
  if (w.status == RK_OK && (st != UCS_OK || !data_ep)) {
    w.status = RK_ERR_UNAVAILABLE;
    if (why)
      snprintf(w.text, sizeof w.text, "'%.63s' cannot make a worker for it: %s",
               c->name, why);
    else
      snprintf(w.text, sizeof w.text, "'%.63s' cannot reach its worker address",
               c->name);
  }
  const size_t address = w.status == RK_OK ? p->waddr_size : 0;
  unsigned char *msg = malloc(sizeof w + address);
  pthread_mutex_lock(&c->mu);
  p->boot = st == UCS_OK ? watch : NULL;
  p->ep = data_ep ? data_ep : p->boot;
  w.your_index = p->id;
  if (w.status == RK_OK) {
    /* UP once the INTRO_ACK is posted, as a joiner once its WELCOME is. */
    p->remote = h.hub_index;
    atomic_store(&p->state, P_WELCOMING);
  } else {
    atomic_store(&p->state, P_REFUSED);
    atomic_store(&c->reclaim_due, true); /* refused: its slot is freed */
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (p->ep && msg) {
    w.address_size = (uint32_t)address;
    memcpy(msg, &w, sizeof w);
    if (address) memcpy(msg + sizeof w, p->waddr, address);
    outbox_push(c, __atomic_load_n(&p->id, __ATOMIC_RELAXED), RK_AM_INTRO_ACK,
                msg, sizeof w + address);
  }
  free(msg);
  return UCS_OK;
}

/* In the callback that brings a WELCOME (from the hub) or an INTRO_ACK
 * (from a member) accepting this member: the peer is JOINING at once, so
 * that what it sends after it on the same endpoint is taken, while
 * welcome_in / intro_ack_in open the messages' endpoint once the worker's
 * turn is over (inbox_push). Nothing is sent to a JOINING peer: a reply
 * goes through the outbox, behind the endpoint's opening; user threads
 * wait for UP. */
static void welcomed(rk_cluster_t *c, const void *data, size_t len, bool hub) {
  rk_wire_welcome_t w;
  if (len < sizeof w) return;
  memcpy(&w, data, sizeof w);
  if (w.status != RK_OK) return;
  pthread_mutex_lock(&c->mu);
  peer_t *p = peer_by_id(c, w.from);
  if (p && p->is_hub == hub && atomic_load(&p->state) == P_CONNECTING) {
    p->remote = w.your_index; /* our `from` in what we answer */
    atomic_store(&p->state, P_JOINING);
  }
  pthread_mutex_unlock(&c->mu);
}

static ucs_status_t on_intro_ack(void *arg, const void *header, size_t hlen,
                                 void *data, size_t len,
                                 const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
      len < sizeof(rk_wire_welcome_t))
    return UCS_OK;
  welcomed(c, data, len, false);
  inbox_push(c, RK_AM_INTRO_ACK, data, len);
  return UCS_OK;
}

static void intro_ack_in(rk_cluster_t *c, const void *data, size_t len) {
  rk_wire_welcome_t w;
  memcpy(&w, data, sizeof w);
  w.name[RK_WIRE_NAME_MAX - 1] = '\0';
  w.text[TEXT_MAX - 1] = '\0';
  if (w.address_size > len - sizeof w) w.address_size = 0;
  pthread_mutex_lock(&c->mu);
  peer_t *p = peer_by_id(c, w.from);
  const int ps = p ? atomic_load(&p->state) : P_FREE;
  const bool asked = p && !p->is_hub && (ps == P_CONNECTING || ps == P_JOINING);
  pthread_mutex_unlock(&c->mu);
  if (!asked) return;
  /* The messages' endpoint: from this member's worker for it to its
   * worker for this member. */
  ucp_ep_h data_ep = NULL;
  if (w.status == RK_OK &&
      !open_data_ep(c, p->rx.w, (const unsigned char *)data + sizeof w,
                    w.address_size, &data_ep)) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text, "its worker address cannot be reached");
  }
  pthread_mutex_lock(&c->mu);
  const int now = atomic_load(&p->state);
  if (now == P_CONNECTING || now == P_JOINING) {
    if (data_ep) p->ep = data_ep;
    if (w.status == RK_OK) {
      p->remote = w.your_index;
      atomic_store(&p->state, P_UP);
    } else {
      p->refusal = (rk_status_t)w.status;
      copy_name(p->cause, sizeof p->cause, w.text);
      atomic_store(&p->state, P_REFUSED);
    }
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
}

static void welcome_in(rk_cluster_t *c, const void *data, size_t len) {
  if (len < sizeof(rk_wire_welcome_t)) return;
  rk_wire_welcome_t w;
  memcpy(&w, data, sizeof w);
  w.name[RK_WIRE_NAME_MAX - 1] = '\0';
  w.text[TEXT_MAX - 1] = '\0';
  if (w.address_size > len - sizeof w) w.address_size = 0;
  pthread_mutex_lock(&c->mu);
  peer_t *p = peer_by_id(c, w.from);
  const int ps = p ? atomic_load(&p->state) : P_FREE;
  pthread_mutex_unlock(&c->mu);
  if (!p || !p->is_hub || (ps != P_CONNECTING && ps != P_JOINING)) return;
  /* The other members, for join() to introduce itself to. */
  const size_t cards_at = sizeof w + w.address_size;
  unsigned char *cards = NULL;
  if (w.status == RK_OK && w.members && len > cards_at) {
    cards = malloc(len - cards_at);
    if (cards)
      memcpy(cards, (const unsigned char *)data + cards_at, len - cards_at);
  }
  ucp_ep_h data_ep = NULL;
  if (w.status == RK_OK &&
      !open_data_ep(c, p->rx.w, (const unsigned char *)data + sizeof w,
                    w.address_size, &data_ep)) {
    w.status = RK_ERR_UNAVAILABLE;
    snprintf(w.text, sizeof w.text, "cannot reach the hub's worker address");
  }
  pthread_mutex_lock(&c->mu);
  const int now = atomic_load(&p->state);
  if (now == P_CONNECTING || now == P_JOINING) {
    copy_name(p->name, sizeof p->name, w.name);
    if (data_ep) p->ep = data_ep;
    if (w.status == RK_OK) {
      free(c->intro);
      c->intro = cards;
      c->intro_size = cards ? len - cards_at : 0;
      c->intro_count = cards ? w.members : 0;
      cards = NULL;
      p->remote = w.your_index;
      atomic_store(&p->state, P_UP);
    } else {
      p->refusal = (rk_status_t)w.status;
      copy_name(p->cause, sizeof p->cause, w.text);
      atomic_store(&p->state, P_REFUSED);
    }
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  free(cards);
}

static ucs_status_t rndv_start(const rx_t *rx, int kind, const void *hdr,
                               size_t hsize, void *desc, size_t size);

static ucs_status_t on_welcome(void *arg, const void *header, size_t hlen,
                               void *data, size_t len,
                               const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  /* Many members' cards may make it large: rendezvous. */
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
    return rndv_start(arg, RX_WELCOME, NULL, 0, data, len);
  welcomed(c, data, len, true);
  inbox_push(c, RK_AM_WELCOME, data, len);
  return UCS_OK;
}

static ucs_status_t on_bye(void *arg, const void *header, size_t hlen,
                           void *data, size_t len,
                           const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  (void)param;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_bye_t b;
  if (len < sizeof b) return UCS_OK;
  memcpy(&b, data, sizeof b);
  peer_t *p = peer_from(c, b.from);
  if (p) peer_down(c, p, P_LEFT, "it destroyed its cluster");
  return UCS_OK;
}

/* ---- exports: requests in, answers out --------------------------------- */

static export_t *export_by_id(rk_cluster_t *c, uint64_t id) {
  uint32_t slot = (uint32_t)(id & 0xffffu);
  if (slot >= MAX_EXPORTS) return NULL;
  export_t *e = c->exports[slot];
  return e && e->id == id ? e : NULL;
}

/* A refusal answer for request h, through the outbox. */
static void refuse(rk_cluster_t *c, const rk_wire_req_t *h, rk_status_t s,
                   rk_actor_state_t state, const char *text) {
  peer_t *p = peer_from(c, h->from);
  if (!p) return;
  size_t tn = strnlen(text, TEXT_MAX - 1);
  struct {
    rk_wire_resp_t r;
    char text[TEXT_MAX];
  } m;
  memset(&m, 0, sizeof m);
  m.r.from = p->remote;
  m.r.handle = h->handle;
  m.r.handle_gen = h->handle_gen;
  m.r.request_id = h->request_id;
  m.r.timestamp = rk__hlc_host_tick();
  m.r.status = (int32_t)s;
  m.r.state = (uint32_t)state;
  m.r.text_size = (uint32_t)tn;
  memcpy(m.text, text, tn);
  /* Through the outbox always: refusals are decided under locks that
   * UCX's must not be taken under. */
  outbox_push(c, h->from, RK_AM_RESP | RESP_PACKED, &m, sizeof m.r + tn);
}

/* Called with e->mu held. */
/* Route i of e's ring (0: the oldest); route_cap is a power of two. */
static route_t *route_at(const export_t *e, size_t i) {
  return &e->routes[(e->route_head + i) & (e->route_cap - 1)];
}

static bool route_push(export_t *e, uint64_t local_id, const rk_wire_req_t *h) {
  if (e->route_count == e->route_cap) {
    size_t cap = e->route_cap ? e->route_cap * 2 : 64;
    route_t *r = malloc(cap * sizeof *r);
    if (!r) return false;
    for (size_t i = 0; i < e->route_count; ++i) r[i] = *route_at(e, i);
    free(e->routes);
    e->routes = r;
    e->route_head = 0;
    e->route_cap = cap;
  }
  route_t *r = route_at(e, e->route_count++);
  r->local_id = local_id;
  r->peer = h->from;
  r->handle = h->handle;
  r->handle_gen = h->handle_gen;
  r->request_id = h->request_id;
  r->done = false;
  r->no_data = (h->flags & RK_WIRE_REQ_NO_DATA) != 0;
  return true;
}

/* Called with e->mu held: takes the route of local_id, if any (the caller
 * takes it out of c->in_flight). */
static bool route_take(export_t *e, uint64_t local_id, route_t *out) {
  bool found = false;
  for (size_t i = 0; i < e->route_count; ++i) {
    route_t *r = route_at(e, i);
    if (!r->done && r->local_id == local_id) {
      *out = *r;
      r->done = true;
      found = true;
      break;
    }
  }
  while (e->route_count && e->routes[e->route_head].done) {
    e->route_head = (e->route_head + 1) & (e->route_cap - 1);
    e->route_count--;
  }
  return found;
}

/* Called with e->mu held: one request into the actor's input ring. Returns
 * false when the ring is full (nothing done). */
static bool admit(export_t *e, const rk_wire_req_t *h, const void *data,
                  size_t size) {
  rk_cluster_t *c = e->c;
  if (size != e->request_size) {
    char t[TEXT_MAX];
    snprintf(t, sizeof t, "request of %zu bytes; '%s' takes %zu", size, e->name,
             e->request_size);
    refuse(c, h, RK_ERR_INVALID_ARGUMENT, rk_actor_state(e->actor), t);
    return true;
  }
  uint64_t local_id;
  rk_status_t s = rk_actor_send(e->actor, data, size, 0, &local_id);
  if (s == RK_OK) {
    if (route_push(e, local_id, h))
      atomic_fetch_add(&c->in_flight, 1);
    else
      e->dropped_local++;
    return true;
  }
  if (s == RK_ERR_QUEUE_FULL) return false;
  char t[TEXT_MAX];
  snprintf(t, sizeof t, "on member '%s': %s", c->name, rk_last_error());
  refuse(c, h, s, rk_actor_state(e->actor), t);
  return true;
}

/* The answer that returns a credit entry's window room: through the
 * outbox (`queued`: under e->mu, or in a worker's callback) or posted at
 * once (no lock held). */
static void credit_post(rk_cluster_t *c, const credit_t *kp, bool queued) {
  const credit_t k = *kp;
  peer_t *p = peer_from(c, k.from);
  if (!p) return; /* the sender is gone */
  rk_wire_resp_t m;
  memset(&m, 0, sizeof m);
  m.from = p->remote;
  m.handle = k.handle;
  m.handle_gen = k.handle_gen;
  m.request_id = k.request_id;
  m.timestamp = k.stamp;
  m.status = RK_OK;
  m.credits = k.n;
  if (queued)
    outbox_push(c, k.from, RK_AM_RESP | RESP_PACKED, &m, sizeof m);
  else
    (void)post(c, k.from, RK_AM_RESP, &m, sizeof m, NULL, 0, false);
}

/* Called with e->mu held: entry i answered through the outbox, and gone. */
static void credit_send(export_t *e, uint32_t i) {
  const credit_t k = e->credits[i];
  e->credits[i] = e->credits[--e->ncredits];
  atomic_fetch_sub(&e->c->credits_due, 1);
  credit_post(e->c, &k, true);
}

/* Called with e->mu held: one more admitted message of h's sender owes
 * window room. */
static void credit_owe(export_t *e, const rk_wire_req_t *h, uint64_t stamp) {
  uint32_t i = 0;
  while (i < e->ncredits &&
         !(e->credits[i].from == h->from && e->credits[i].handle == h->handle &&
           e->credits[i].handle_gen == h->handle_gen))
    ++i;
  if (i == e->ncredits) {
    if (e->ncredits == CREDIT_SENDERS) credit_send(e, 0); /* make room */
    i = e->ncredits++;
    e->credits[i] = (credit_t){h->from, h->handle, h->handle_gen, 0, 0, 0};
    atomic_fetch_add(&e->c->credits_due, 1);
  }
  credit_t *k = &e->credits[i];
  k->request_id = h->request_id;
  k->stamp = stamp;
  if (++k->n >= e->credit_every) credit_send(e, i);
}

/* Called with e->mu held: a remote port's message into the actor's K2K
 * inbox, answered (empty: it returns window room) once it is in. Returns
 * false when the link has no credit now (nothing done). */
static bool ingress_admit(export_t *e, const rk_wire_req_t *h, const void *data,
                          size_t size) {
  rk_cluster_t *c = e->c;
  if (size != e->request_size) {
    char t[TEXT_MAX];
    snprintf(t, sizeof t, "message of %zu bytes; '%s' takes %zu", size, e->name,
             e->request_size);
    refuse(c, h, RK_ERR_INVALID_ARGUMENT, rk_actor_state(e->actor), t);
    return true;
  }
  bool gone = false;
  const uint64_t stamp = rk__hlc_host_tick();
  if (rk__k2k_ingress_send(e->ingress, data, stamp, &gone)) {
    credit_owe(e, h, stamp);
    return true;
  }
  if (gone) {
    char t[TEXT_MAX];
    snprintf(t, sizeof t,
             "on member '%s': '%s' takes no messages from ports (it has "
             "stopped)",
             c->name, e->name);
    refuse(c, h, RK_ERR_INVALID_STATE, rk_actor_state(e->actor), t);
    return true;
  }
  return false;
}

static void queue_req(pending_req_t **head, pending_req_t **tail,
                      _Atomic uint64_t *in_flight, const rk_wire_req_t *h,
                      const void *data, size_t size) {
  pending_req_t *q = malloc(sizeof *q + size);
  if (!q) return;
  q->next = NULL;
  q->h = *h;
  q->size = size;
  memcpy(q->data, data, size);
  atomic_fetch_add(in_flight, 1);
  if (*tail)
    (*tail)->next = q;
  else
    *head = q;
  *tail = q;
}

/* A RESPS record: the answer and its payload, 8-byte aligned. */
static size_t resp_record(const export_t *e) {
  return sizeof(rk_wire_resp_t) + ((e->response_size + 7) & ~(size_t)7);
}

/* The export whose actor's worker this thread is, in a turn of it
 * (drive_turn): withdraw_drive waits for the turn to end, so the export
 * outlives the turn. */
static _Thread_local export_t *t_turn_export;

/* A request answered beside the actor's rings, called with e->mu held
 * from a turn of the workers inside a turn of the actor's worker
 * (drive_turn): the request is kept, and once the workers' turn is over
 * (no UCX lock or export lock held) the handler runs on it there and then
 * and its answer is posted (direct_run) - instead of the request going
 * through the input ring, the worker's next pass, the output ring and
 * forward_once. The worker is between two batches of its handler in that
 * turn, so the request is handled after every one it took before, and
 * before every one it takes after the turn (those a full keep sends
 * through the ring). Only for a request with nothing of this export's
 * before it in the actor, queued for it, or answered and not yet posted
 * (so its answer follows those of its sender's earlier requests), with no
 * refusal waiting in the outbox, a request alone (a REQ, not a port's
 * message) and nobody tracing (a traced request is followed through the
 * rings). `stamp`: the request's receipt on the process clock, the stamp
 * the actor merges. False: nothing done. */
static bool direct_in(rk_cluster_t *c, export_t *e, const rk_wire_req_t *h,
                      const void *data, size_t size, uint64_t stamp) {
  if (t_turn_export != e || !e->dreq || e->ndirect == DIRECT_MAX ||
      e->pending || e->route_count || (h->flags & RK_WIRE_REQ_NO_DATA) ||
      size != e->request_size ||
      __atomic_load_n(&e->posting, __ATOMIC_ACQUIRE) ||
      atomic_load_explicit(&c->out_any, memory_order_acquire) ||
      rk__trace_on() || (!e->ndirect && !rk__actor_direct_ok(e->actor)))
    return false;
  const peer_t *p = peer_from(c, h->from);
  if (!p) return false;
  const uint32_t k = e->ndirect++;
  rk_abi_msg_t *req = (rk_abi_msg_t *)(void *)(e->dreq + k * e->dslot);
  memset(req, 0, RK_ABI_MSG_HEADER);
  req->correlation_id = h->request_id;
  req->timestamp = stamp;
  req->type = RK_ABI_MSG_REQUEST;
  req->size = (uint32_t)size;
  memcpy((unsigned char *)req + RK_ABI_MSG_HEADER, data, size);
  rk_wire_resp_t *m = &e->dhead[k];
  memset(m, 0, sizeof *m);
  m->from = p->remote;
  m->handle = h->handle;
  m->handle_gen = h->handle_gen;
  m->request_id = h->request_id;
  e->dpid[k] = h->from;
  return true;
}

/* The requests direct_in kept in this turn: the handler on each, in
 * order, and its answer out (no lock held). */
static void direct_run(export_t *e) {
  const uint64_t phys = rk__hlc_physical();
  rk_wire_resp_t *m = (rk_wire_resp_t *)(void *)e->dans;
  rk_abi_msg_t *resp = (rk_abi_msg_t *)(void *)e->dresp;
  for (uint32_t k = 0; k < e->ndirect; ++k) {
    rk_actor_message_t info;
    rk__actor_direct(e->actor,
                     (const rk_abi_msg_t *)(void *)(e->dreq + k * e->dslot),
                     resp, &info);
    *m = e->dhead[k];
    /* The answer's receipt on the process clock, as forward_once's. */
    m->timestamp = rk__hlc_merge_at(&rk__hlc_host.value, info.timestamp, phys);
    m->status = (int32_t)info.status;
    m->handler_code = info.handler_code;
    m->data_size = (uint32_t)info.size;
    memcpy(m + 1, e->dresp + RK_ABI_MSG_HEADER, info.size);
    (void)post(e->c, e->dpid[k], RK_AM_RESP, m, sizeof *m, m + 1, m->data_size,
               false);
  }
  e->forwarded += e->ndirect;
  e->direct += e->ndirect;
  e->ndirect = 0;
}

/* A request for export e, with e->mu held: into the actor (or queued
 * for it, in order). `phys`: the physical time of the clock's merge. */
static void req_in(rk_cluster_t *c, export_t *e, const rk_wire_req_t *h,
                   const void *data, size_t size, uint64_t phys) {
  /* The request's stamp into this process's clock (with the skew check):
   * the actor's copy of it is stamped after it. */
  uint64_t stamp = 0;
  if (rk__hlc_update_at(rk_hlc_host(), h->timestamp, phys, &stamp) ==
      RK_ERR_CLOCK_SKEW) {
    char t[TEXT_MAX];
    snprintf(t, sizeof t, "on member '%s': %s", c->name, rk_last_error());
    refuse(c, h, RK_ERR_CLOCK_SKEW, rk_actor_state(e->actor), t);
    return;
  }
  if (e->ingress && (h->flags & RK_WIRE_REQ_NO_DATA)) {
    /* A remote port's message: into the K2K inbox, in order. */
    if (e->ipending || !ingress_admit(e, h, data, size))
      queue_req(&e->ipending, &e->ipending_tail, &c->in_flight, h, data, size);
  } else if (direct_in(c, e, h, data, size, stamp)) {
    /* answered */
  } else if (e->pending || !admit(e, h, data, size)) {
    queue_req(&e->pending, &e->pending_tail, &c->in_flight, h, data, size);
  }
}

/* The export a request is for, locked; NULL (refused) when it is gone. A
 * request for the export whose turn this is (the common case: its worker
 * drives the transport) finds it without the cluster's lock. */
static export_t *req_export(rk_cluster_t *c, const rk_wire_req_t *h) {
  export_t *own = t_turn_export;
  if (own && own->c == c && own->id == h->export_id) {
    pthread_mutex_lock(&own->mu);
    if (!own->unlisted) return own;
    pthread_mutex_unlock(&own->mu);
  }
  pthread_mutex_lock(&c->mu);
  export_t *e = export_by_id(c, h->export_id);
  if (e) pthread_mutex_lock(&e->mu);
  pthread_mutex_unlock(&c->mu);
  if (!e)
    refuse(c, h, RK_ERR_INVALID_STATE, RK_ACTOR_TERMINATED,
           "the actor is no longer exported");
  return e;
}

static void deliver_req(rk_cluster_t *c, const rk_wire_req_t *h,
                        const void *data, size_t size) {
  if (!peer_from(c, h->from)) return;
  export_t *e = req_export(c, h);
  if (!e) return;
  req_in(c, e, h, data, size, rk__hlc_physical());
  pthread_mutex_unlock(&e->mu);
}

typedef struct rndv_rx {
  rk_cluster_t *c;
  int kind; /* RX_* */
  union {
    rk_wire_req_t req;
    rk_wire_resp_t resp;
    rk_wire_batch_t batch;
  } h;
  size_t size;
  unsigned char data[];
} rndv_rx_t;

static void deliver_resp(rk_cluster_t *c, const rk_wire_resp_t *r,
                         const void *data, size_t size);
static void deliver_reqs(rk_cluster_t *c, const rk_wire_batch_t *b,
                         const unsigned char *data, size_t size);
static void deliver_resps(rk_cluster_t *c, const rk_wire_batch_t *b,
                          const unsigned char *data, size_t size);

static void rndv_done(void *request, ucs_status_t status, size_t length,
                      void *user) {
  (void)length;
  rndv_rx_t *x = user;
  if (status == UCS_OK) {
    if (x->kind == RX_REQ)
      deliver_req(x->c, &x->h.req, x->data, x->size);
    else if (x->kind == RX_RESP)
      deliver_resp(x->c, &x->h.resp, x->data, x->size);
    else if (x->kind == RX_REQS)
      deliver_reqs(x->c, &x->h.batch, x->data, x->size);
    else if (x->kind == RX_RESPS)
      deliver_resps(x->c, &x->h.batch, x->data, x->size);
    else {
      welcomed(x->c, x->data, x->size, true);
      inbox_push(x->c, RK_AM_WELCOME, x->data, x->size);
    }
  }
  x->c->u->ucp_request_free(request);
  free(x);
}

/* Starts the rendezvous receive of a large payload; delivers on arrival. */
static ucs_status_t rndv_start(const rx_t *rx, int kind, const void *hdr,
                               size_t hsize, void *desc, size_t size) {
  rk_cluster_t *c = rx->c;
  rndv_rx_t *x = malloc(sizeof *x + size);
  if (!x) return UCS_ERR_NO_MEMORY;
  x->c = c;
  x->kind = kind;
  if (hsize) memcpy(&x->h, hdr, hsize);
  x->size = size;
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  prm.cb.recv_am = rndv_done;
  prm.user_data = x;
  ucs_status_ptr_t r =
      c->u->ucp_am_recv_data_nbx(rx->w, desc, x->data, size, &prm);
  if (UCS_PTR_IS_ERR(r)) {
    free(x);
    return UCS_OK; /* UCP owns the descriptor */
  }
  return UCS_INPROGRESS;
}

static ucs_status_t on_req(void *arg, const void *header, size_t hlen,
                           void *data, size_t len,
                           const ucp_am_recv_param_t *param) {
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_req_t h;
  if (hlen < sizeof h) return UCS_OK;
  memcpy(&h, header, sizeof h);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
    return rndv_start(arg, RX_REQ, &h, sizeof h, data, len);
  deliver_req(c, &h, data, len);
  return UCS_OK;
}

/* Answers to one member, records first .. first + n - 1 of e->bbuf: a
 * RESPS, or one alone as a plain RESP. */
typedef struct resp_run {
  peer_t *p;
  uint32_t pid; /* p's id when the answers were routed */
  uint32_t first, n;
  uint32_t src; /* the first's response in e->buf */
} resp_run_t;

/* A record in e->bbuf: the RESPS record, or without batching the answer
 * alone (its payload stays in e->buf). */
static size_t resp_stride(const export_t *e) {
  return e->batching ? resp_record(e) : sizeof(rk_wire_resp_t);
}

static void resp_run_post(export_t *e, const resp_run_t *run) {
  const size_t stride = resp_stride(e);
  const unsigned char *rec = e->bbuf + run->first * stride;
  if (run->n == 1) {
    const rk_wire_resp_t *m = (const rk_wire_resp_t *)(const void *)rec;
    const void *payload =
        e->batching ? (const void *)(m + 1)
                    : (const void *)(e->buf + run->src * e->response_size);
    (void)post(e->c, run->pid, RK_AM_RESP, m, sizeof *m, payload, m->data_size,
               false);
    return;
  }
  rk_wire_batch_t h = {.from = run->p->remote,
                       .count = run->n,
                       .stride = (uint32_t)stride,
                       .size = 0};
  (void)post(e->c, run->pid, RK_AM_RESPS, &h, sizeof h, rec, run->n * stride,
             false);
}

/* One export's turn in the progress loop: answers out, then queued
 * requests in while the ring takes them. Returns how much it did. */
static unsigned forward_once(export_t *e) {
  rk_cluster_t *c = e->c;
  rk_actor_message_t info[FORWARD_BATCH];
  size_t got = 0;
  unsigned did = 0;
  (void)rk_actor_receive_batch(e->actor, e->buf,
                               FORWARD_BATCH * e->response_size, FORWARD_BATCH,
                               0, info, &got);
  /* Under one lock: each answer's route and stamp, and its record
   * written in place (e->bbuf); then the sends, a RESPS for each run of
   * records to one member. */
  resp_run_t runs[FORWARD_BATCH];
  uint32_t nruns = 0;
  if (got) {
    const size_t stride = resp_stride(e);
    /* The answers' stamps: `got` receive events on the process clock at
     * once, each later than every response of the batch. */
    uint64_t latest = 0;
    for (size_t i = 0; i < got; ++i)
      if (info[i].timestamp > latest) latest = info[i].timestamp;
    const uint64_t stamp = rk__hlc_merge_n(&rk__hlc_host.value, latest,
                                           rk__hlc_physical(), (uint64_t)got);
    uint32_t n = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < got; ++i) {
      route_t r = {0};
      if (!route_take(e, info[i].correlation_id, &r)) {
        e->dropped_local++; /* not ours: no route */
        continue;
      }
      did++;
      peer_t *p = peer_from(c, r.peer);
      if (!p) continue; /* the requester is gone: at-most-once */
      rk_wire_resp_t *m = (rk_wire_resp_t *)(void *)(e->bbuf + n * stride);
      memset(m, 0, sizeof *m);
      m->from = p->remote;
      m->handle = r.handle;
      m->handle_gen = r.handle_gen;
      m->request_id = r.request_id;
      m->timestamp = stamp + i;
      m->status = (int32_t)info[i].status;
      m->handler_code = info[i].handler_code;
      m->data_size = r.no_data ? 0 : (uint32_t)info[i].size;
      if (m->data_size && e->batching)
        memcpy(m + 1, e->buf + i * e->response_size, m->data_size);
      resp_run_t *run = nruns ? &runs[nruns - 1] : NULL;
      if (!run || run->p != p || (run->n + 1) * stride > BATCH_BYTES ||
          !e->batching) {
        run = &runs[nruns++];
        run->p = p;
        run->pid = r.peer;
        run->first = n;
        run->src = (uint32_t)i;
        run->n = 0;
      }
      run->n++;
      n++;
    }
    if (n) __atomic_fetch_add(&e->posting, 1u, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&e->mu);
    if (did) atomic_fetch_sub(&c->in_flight, did);
  }
  for (uint32_t i = 0; i < nruns; ++i) {
    resp_run_post(e, &runs[i]);
    e->forwarded += runs[i].n;
  }
  if (nruns) __atomic_fetch_sub(&e->posting, 1u, __ATOMIC_RELEASE);
  pthread_mutex_lock(&e->mu);
  while (e->pending) {
    pending_req_t *q = e->pending;
    if (!peer_from(c, q->h.from)) {
      /* dropped: its requester failed */
    } else if (!admit(e, &q->h, q->data, q->size)) {
      break;
    }
    e->pending = q->next;
    if (!e->pending) e->pending_tail = NULL;
    atomic_fetch_sub(&c->in_flight, 1);
    free(q);
    did++;
  }
  while (e->ipending) {
    pending_req_t *q = e->ipending;
    if (!peer_from(c, q->h.from)) {
      /* dropped: its sender failed */
    } else if (!ingress_admit(e, &q->h, q->data, q->size)) {
      break;
    }
    e->ipending = q->next;
    if (!e->ipending) e->ipending_tail = NULL;
    atomic_fetch_sub(&c->in_flight, 1);
    free(q);
    did++;
  }
  /* What this turn (and the callbacks before it) admitted: one answer per
   * sender, posted once the lock is given back (UCX's locks are not taken
   * under an export's). */
  credit_t owed[CREDIT_SENDERS];
  const uint32_t nowed = e->ncredits;
  memcpy(owed, e->credits, nowed * sizeof owed[0]);
  e->ncredits = 0;
  if (nowed) atomic_fetch_sub(&c->credits_due, nowed);
  pthread_mutex_unlock(&e->mu);
  for (uint32_t i = 0; i < nowed; ++i) credit_post(c, &owed[i], false);
  return did + nowed;
}

static rk_status_t post_request(rk_remote_actor_t *h, const void *request,
                                size_t size, wait_limit_t *limit,
                                uint64_t fixed_id, uint64_t *out_id,
                                waiter_t *w);
static bool stopped(const rk_remote_actor_t *h);
static void drop_bridges(rk_cluster_t *c, const rk_remote_actor_t *h);

/* One bridge's turn: its port's messages out while the window has room.
 * Called with exports_mu held. */
static unsigned bridge_once(bridge_t *b) {
  rk_remote_actor_t *h = b->h;
  const uint32_t n = rk__k2k_inbox_available(b->k);
  uint32_t sent = 0;
  bool dead = false;
  while (sent < n) {
    rk__short_lock(&h->mu);
    dead = stopped(h);
    fold_taken(h);
    const bool room = !dead && h->outstanding < h->window;
    rk__short_unlock(&h->mu);
    if (!room) break;
    char *saved = rk__error_save();
    wait_limit_t now = limit_lazy(0);
    const rk_status_t s = post_request(h, rk__k2k_inbox_payload(b->k, sent),
                                       h->request_size, &now, 0, NULL, NULL);
    rk__error_restore(saved);
    if (s != RK_OK) break;
    sent++;
  }
  if (sent) rk__k2k_inbox_release(b->k, sent, 0);
  if (dead) {
    /* The remote actor is gone: later sends answer RK_SEND_UNCONNECTED,
     * and what the port queued is dropped (counted as failed). */
    rk__k2k_stopped(b->k);
    const uint32_t left = rk__k2k_inbox_available(b->k);
    if (left) rk__k2k_inbox_release(b->k, left, left);
  }
  return sent;
}

static unsigned forward_all(rk_cluster_t *c) {
  if (!atomic_load_explicit(&c->in_flight, memory_order_relaxed) &&
      !atomic_load_explicit(&c->nbridges, memory_order_relaxed) &&
      !atomic_load_explicit(&c->credits_due, memory_order_relaxed))
    return 0;
  unsigned did = 0;
  pthread_mutex_lock(&c->exports_mu);
  for (uint32_t i = 0; i < c->export_count; ++i)
    did += forward_once(c->export_list[i]);
  for (uint32_t i = 0; i < atomic_load(&c->nbridges); ++i)
    did += bridge_once(&c->bridges[i]);
  pthread_mutex_unlock(&c->exports_mu);
  return did;
}

/* ---- lookups ----------------------------------------------------------- */

static ucs_status_t on_lookup(void *arg, const void *header, size_t hlen,
                              void *data, size_t len,
                              const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_lookup_t q;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len < sizeof q)
    return UCS_OK;
  memcpy(&q, data, sizeof q);
  q.name[RK_WIRE_ACTOR_NAME_MAX - 1] = '\0';
  peer_t *p = peer_from(c, q.from);
  if (!p) return UCS_OK;
  rk_wire_lookup_reply_t r;
  memset(&r, 0, sizeof r);
  r.from = p->remote;
  r.lookup_id = q.lookup_id;
  r.status = RK_ERR_NOT_FOUND;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i) {
    export_t *e = c->exports[i];
    if (e && !strcmp(e->name, q.name)) {
      r.status = RK_OK;
      r.export_id = e->id;
      r.request_size = e->request_size;
      r.response_size = e->response_size;
      r.window = e->window;
      r.state = (uint32_t)rk_actor_state(e->actor);
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
  rk_actor_t *registered = NULL;
  if (r.status != RK_OK) {
    char *saved = rk__error_save();
    const bool named = rk_actor_lookup(q.name, &registered) == RK_OK;
    rk__error_restore(saved);
    if (named) r.state = RK_WIRE_REGISTERED_ONLY;
    if (named)
      snprintf(r.text, sizeof r.text,
               "'%s' has an actor registered as '%s' but does not export it",
               c->name, q.name);
    else
      snprintf(r.text, sizeof r.text, "'%s' has no actor exported as '%s'",
               c->name, q.name);
  }
  outbox_push(c, q.from, RK_AM_LOOKUP_REPLY, &r, sizeof r);
  return UCS_OK;
}

static ucs_status_t on_lookup_reply(void *arg, const void *header, size_t hlen,
                                    void *data, size_t len,
                                    const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_lookup_reply_t r;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len < sizeof r)
    return UCS_OK;
  memcpy(&r, data, sizeof r);
  r.text[TEXT_MAX - 1] = '\0';
  if (!peer_from(c, r.from)) return UCS_OK;
  pthread_mutex_lock(&c->mu);
  for (lookup_t *l = c->lookups; l; l = l->next) {
    if (l->id != r.lookup_id || !l->asked[PEER_SLOT(r.from)]) continue;
    l->asked[PEER_SLOT(r.from)] = false;
    l->waiting--;
    if (r.status != RK_OK && r.state == RK_WIRE_REGISTERED_ONLY && !l->note[0])
      copy_name(l->note, sizeof l->note, r.text);
    if (r.status == RK_OK && !l->found) {
      l->found = true;
      l->peer = r.from;
      l->reply = r;
    }
    pthread_cond_broadcast(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  return UCS_OK;
}

/* ---- answers in -------------------------------------------------------- */

/* An answer for h, with h->mu held: to its caller, into its receive
 * queue, or counted (a port's, or too late). Its stamp merged into the
 * process clock already (`stamp`), or here (0) at the physical time
 * `phys`. True when h FAILED with it (tell_links due). */
static bool answer_in(rk_cluster_t *c, rk_remote_actor_t *h,
                      const rk_wire_resp_t *r, const void *data, size_t size,
                      uint64_t phys, uint64_t stamp) {
  /* Stopping is sticky: a call that returned "not answered" saw the handle
   * stopped, so an answer that finds the handle stopped and no waiter may
   * be that call's and is not delivered to rk_remote_actor_receive. */
  const bool was_stopped = stopped(h);
  out_answered(c, h, r->credits ? r->credits : 1u);
  rk_status_t s = (rk_status_t)r->status;
  rk_actor_message_t info;
  info.correlation_id = r->request_id;
  /* The answer's stamp into this process's clock, with the skew check: a
   * request sent after this answer is received is stamped later. An answer
   * from too far in the future is not delivered (RK_ERR_CLOCK_SKEW). */
  char skew[TEXT_MAX];
  if (stamp) {
    info.timestamp = stamp; /* merged for a batch (deliver_resps) */
  } else if (rk__hlc_update_at(rk_hlc_host(), r->timestamp, phys,
                               &info.timestamp) == RK_ERR_CLOCK_SKEW) {
    snprintf(skew, sizeof skew,
             "by this member: the answer from '%s' is stamped too far "
             "ahead (%s)",
             h->peer_name, rk_last_error());
    info.timestamp = rk__hlc_host_tick();
    s = RK_ERR_CLOCK_SKEW;
    data = skew;
    size = strlen(skew);
  }
  bool answered = s == RK_OK || s == RK_ERR_HANDLER;
  info.size = answered ? size : 0;
  info.status = s;
  info.handler_code = r->handler_code;
  if (!answered &&
      (r->state == RK_ACTOR_TERMINATED || r->state == RK_ACTOR_FAILED)) {
    int cur = atomic_load(&h->state);
    if (cur != RK_ACTOR_FAILED && cur != RK_ACTOR_TERMINATED) {
      snprintf(h->cause, sizeof h->cause, "the remote actor is %s",
               rk_actor_state_name((rk_actor_state_t)r->state));
      atomic_store(&h->state, (int)r->state);
    }
  }
  waiter_t *w = h->waiters;
  while (w && w->id != r->request_id) w = w->next;
  if (w) {
    w->status = s;
    w->info = info;
    if (answered) {
      memcpy(w->buffer, data, size < w->capacity ? size : w->capacity);
    } else {
      size_t n = size < TEXT_MAX - 1 ? size : TEXT_MAX - 1;
      memcpy(w->text, data, n);
      w->text[n] = '\0';
    }
    w->done = true;
  } else if (h->discard || was_stopped) {
    /* A port's messages (r->credits of them, or one), or an answer too
     * late to be anyone's. */
    const uint32_t k = r->credits ? r->credits : 1u;
    fold_taken(h);
    h->outstanding = h->outstanding > k ? h->outstanding - k : 0;
    if (h->discard) {
      h->credit_answers++;
      h->credited += k;
    }
  } else {
    const bool pooled = size <= h->aroom;
    answer_t *a = pooled ? h->spare : NULL;
    if (a) {
      h->spare = a->next;
      h->nspare--;
    } else {
      a = malloc(sizeof *a + (pooled ? h->aroom : size) + 1);
    }
    if (a) {
      a->next = NULL;
      a->pooled = pooled;
      a->status = s;
      a->info = info;
      a->size = size;
      memcpy(a->data, data, size);
      a->data[size] = '\0';
      if (h->rq_tail)
        h->rq_tail->next = a;
      else
        h->rq = a;
      h->rq_tail = a;
      h->nrq++;
    }
  }
  return !answered && atomic_load(&h->state) == RK_ACTOR_FAILED;
}

/* The handle an answer is for, locked (NULL: gone, or not the sender's). */
/* The handle this thread waits on while it turns the workers (hwait): its
 * answers, delivered by that turn, find it without the cluster's lock (a
 * handle in use is not released meanwhile: rk_remote_actor_release). */
static _Thread_local rk_remote_actor_t *t_waiting_on;

static rk_remote_actor_t *answer_handle(rk_cluster_t *c,
                                        const rk_wire_resp_t *r) {
  rk_remote_actor_t *mine = t_waiting_on;
  if (mine && mine->c == c && mine->slot == r->handle &&
      mine->gen == r->handle_gen && mine->peer == r->from) {
    rk__short_lock(&mine->mu);
    return mine;
  }
  pthread_mutex_lock(&c->mu);
  rk_remote_actor_t *h = handle_at(c, r->handle, r->handle_gen);
  if (h && h->peer == r->from)
    rk__short_lock(&h->mu);
  else
    h = NULL;
  pthread_mutex_unlock(&c->mu);
  return h;
}

static void deliver_resp(rk_cluster_t *c, const rk_wire_resp_t *r,
                         const void *data, size_t size) {
  rk_remote_actor_t *h = answer_handle(c, r);
  if (!h) return;
  const bool due = answer_in(c, h, r, data, size, rk__hlc_physical(), 0);
  wake_handle(c, h);
  rk__short_unlock(&h->mu);
  if (due) links_due(c);
}

static ucs_status_t on_resp(void *arg, const void *header, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param) {
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_resp_t r;
  if (hlen < sizeof r) return UCS_OK;
  memcpy(&r, header, sizeof r);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
    return rndv_start(arg, RX_RESP, &r, sizeof r, data, len);
  deliver_resp(c, &r, data, len);
  return UCS_OK;
}

/* A batch's records are all there and each at least its header: a
 * malformed batch is dropped whole. */
static bool batch_ok(const rk_wire_batch_t *b, size_t header, size_t size) {
  return b->count && b->stride >= header &&
         (uint64_t)b->count * b->stride <= size;
}

/* Whether a REQS record can join a run into e's input ring (admit_run):
 * a request of the handler's size, for the ring (not a remote port's
 * message for the K2K inbox), with nothing queued before it, stamped
 * within the skew the process clock accepts. */
static bool runs_in(const export_t *e, const rk_wire_req_t *h, size_t size,
                    uint64_t phys) {
  if (!e->gather || e->pending || size != e->request_size) return false;
  if (e->ingress && (h->flags & RK_WIRE_REQ_NO_DATA)) return false;
  return !rk__hlc_too_far(&rk__hlc_host, h->timestamp, phys);
}

/* n requests into e's input ring at once (rk_actor_send_batch), with
 * e->mu held: their payloads gathered in e->gather, their headers in hs.
 * Those the ring has no room for are queued, in order; a refusal of the
 * actor's is each one's answer. */
static void admit_run(rk_cluster_t *c, export_t *e, const rk_wire_req_t *hs,
                      uint32_t n, uint64_t latest, uint64_t phys) {
  (void)rk__hlc_update_at(&rk__hlc_host, latest, phys, NULL);
  size_t sent = 0;
  uint64_t first = 0;
  const rk_status_t s = rk_actor_send_batch(
      e->actor, e->gather, e->request_size, n, 0, &sent, &first);
  uint64_t routed = 0;
  for (size_t k = 0; k < sent; ++k) {
    if (route_push(e, first + k, &hs[k]))
      routed++;
    else
      e->dropped_local++;
  }
  if (routed) atomic_fetch_add(&c->in_flight, routed);
  if (sent == n) return;
  char t[TEXT_MAX];
  if (s != RK_ERR_QUEUE_FULL)
    snprintf(t, sizeof t, "on member '%s': %s", c->name, rk_last_error());
  for (size_t k = sent; k < n; ++k) {
    const unsigned char *payload = e->gather + k * e->request_size;
    if (s == RK_ERR_QUEUE_FULL)
      queue_req(&e->pending, &e->pending_tail, &c->in_flight, &hs[k], payload,
                e->request_size);
    else
      refuse(c, &hs[k], s, rk_actor_state(e->actor), t);
  }
}

/* A REQS (one handle's requests): one reading of the clock, the export's
 * lock once, and runs of requests into the actor's ring at once. */
static void deliver_reqs(rk_cluster_t *c, const rk_wire_batch_t *b,
                         const unsigned char *data, size_t size) {
  if (!batch_ok(b, sizeof(rk_wire_req_t), size) || !peer_from(c, b->from))
    return;
  const uint64_t phys = rk__hlc_physical();
  const size_t psize = b->size;
  if (psize > b->stride - sizeof(rk_wire_req_t)) return;
  rk_wire_req_t hs[GATHER_MAX];
  uint32_t n = 0;
  uint64_t latest = 0;
  export_t *e = NULL;
  for (uint32_t i = 0; i < b->count; ++i) {
    const unsigned char *rec = data + (size_t)i * b->stride;
    rk_wire_req_t h;
    memcpy(&h, rec, sizeof h);
    if (h.from != b->from) continue;
    if (!e || e->id != h.export_id) {
      if (n) admit_run(c, e, hs, n, latest, phys);
      n = 0;
      if (e) pthread_mutex_unlock(&e->mu);
      e = req_export(c, &h);
      if (!e) continue;
    }
    if (runs_in(e, &h, psize, phys)) {
      memcpy(e->gather + n * psize, rec + sizeof h, psize);
      hs[n++] = h;
      if (h.timestamp > latest) latest = h.timestamp;
      if (n == GATHER_MAX) {
        admit_run(c, e, hs, n, latest, phys);
        n = 0;
      }
      continue;
    }
    if (n) admit_run(c, e, hs, n, latest, phys);
    n = 0;
    req_in(c, e, &h, rec + sizeof h, psize, phys);
  }
  if (n) admit_run(c, e, hs, n, latest, phys);
  if (e) pthread_mutex_unlock(&e->mu);
}

/* A RESPS: one reading of the clock, and each handle's lock once for a
 * run of its answers. */
static void deliver_resps(rk_cluster_t *c, const rk_wire_batch_t *b,
                          const unsigned char *data, size_t size) {
  if (!batch_ok(b, sizeof(rk_wire_resp_t), size)) return;
  const uint64_t phys = rk__hlc_physical();
  /* The stamps within the clock's skew merged at once: consecutive
   * values, each later than all of them. */
  uint64_t latest = 0, merged = 0, stamp = 0;
  for (uint32_t i = 0; i < b->count; ++i) {
    uint64_t t;
    memcpy(&t,
           data + (size_t)i * b->stride + offsetof(rk_wire_resp_t, timestamp),
           sizeof t);
    if (!rk__hlc_too_far(&rk__hlc_host, t, phys)) {
      merged++;
      if (t > latest) latest = t;
    }
  }
  if (merged)
    stamp = rk__hlc_merge_n(&rk__hlc_host.value, latest, phys, merged);
  rk_remote_actor_t *h = NULL;
  bool due = false;
  for (uint32_t i = 0; i < b->count; ++i) {
    const unsigned char *rec = data + (size_t)i * b->stride;
    rk_wire_resp_t r;
    memcpy(&r, rec, sizeof r);
    const bool mine = !rk__hlc_too_far(&rk__hlc_host, r.timestamp, phys);
    const uint64_t at = mine ? stamp++ : 0; /* 0: refused in answer_in */
    if (r.data_size > b->stride - sizeof r) continue;
    if (!h || h->slot != r.handle || h->gen != r.handle_gen ||
        h->peer != r.from) {
      if (h) {
        wake_handle(c, h);
        rk__short_unlock(&h->mu);
      }
      h = answer_handle(c, &r);
      if (!h) continue;
    }
    due |= answer_in(c, h, &r, rec + sizeof r, r.data_size, phys, at);
  }
  if (h) {
    wake_handle(c, h);
    rk__short_unlock(&h->mu);
  }
  if (due) links_due(c);
}

static ucs_status_t on_batch(void *arg, const void *header, size_t hlen,
                             void *data, size_t len,
                             const ucp_am_recv_param_t *param, int kind) {
  rk_wire_batch_t b;
  if (hlen < sizeof b) return UCS_OK;
  memcpy(&b, header, sizeof b);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
    return rndv_start(arg, kind, &b, sizeof b, data, len);
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  if (kind == RX_REQS)
    deliver_reqs(c, &b, data, len);
  else
    deliver_resps(c, &b, data, len);
  return UCS_OK;
}

static ucs_status_t on_reqs(void *arg, const void *header, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param) {
  return on_batch(arg, header, hlen, data, len, param, RX_REQS);
}

static ucs_status_t on_resps(void *arg, const void *header, size_t hlen,
                             void *data, size_t len,
                             const ucp_am_recv_param_t *param) {
  return on_batch(arg, header, hlen, data, len, param, RX_RESPS);
}

/* ---- links across processes (owner side) ------------------------------ */

static bool link_in(const void *data, size_t len,
                    const ucp_am_recv_param_t *param, rk_wire_link_t *m) {
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len < sizeof *m)
    return false;
  memcpy(m, data, sizeof *m);
  m->local[RK_WIRE_ACTOR_NAME_MAX - 1] = '\0';
  m->text[TEXT_MAX - 1] = '\0';
  return true;
}

static ucs_status_t on_link(void *arg, const void *header, size_t hlen,
                            void *data, size_t len,
                            const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_link_t m;
  if (!link_in(data, len, param, &m) || !peer_from(c, m.from)) return UCS_OK;
  /* c->mu then links_mu: an export withdrawn (rk_actor_destroy) after this
   * finds the link and drops it. */
  pthread_mutex_lock(&c->mu);
  export_t *e = export_by_id(c, m.export_id);
  if (e) {
    pthread_mutex_lock(&c->links_mu);
    if (c->ninlinks == c->capinlinks) {
      const uint32_t cap = c->capinlinks ? c->capinlinks * 2 : 8;
      inlink_t *grown = realloc(c->inlinks, cap * sizeof *grown);
      if (grown) {
        c->inlinks = grown;
        c->capinlinks = cap;
      }
    }
    if (c->ninlinks < c->capinlinks) {
      inlink_t *l = &c->inlinks[c->ninlinks++];
      memset(l, 0, sizeof *l);
      l->peer = m.from;
      l->link_id = m.link_id;
      l->export_id = m.export_id;
      l->actor = e->actor;
      copy_name(l->local, sizeof l->local, m.local);
    }
    pthread_mutex_unlock(&c->links_mu);
  }
  pthread_mutex_unlock(&c->mu);
  return UCS_OK;
}

static ucs_status_t on_unlink(void *arg, const void *header, size_t hlen,
                              void *data, size_t len,
                              const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_link_t m;
  if (!link_in(data, len, param, &m)) return UCS_OK;
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->ninlinks; ++i)
    if (c->inlinks[i].peer == m.from && c->inlinks[i].link_id == m.link_id) {
      c->inlinks[i] = c->inlinks[--c->ninlinks];
      break;
    }
  pthread_mutex_unlock(&c->links_mu);
  return UCS_OK;
}

static ucs_status_t on_link_fault(void *arg, const void *header, size_t hlen,
                                  void *data, size_t len,
                                  const ucp_am_recv_param_t *param) {
  (void)header;
  (void)hlen;
  rk_cluster_t *c = ((const rx_t *)arg)->c;
  rk_wire_link_t m;
  if (!link_in(data, len, param, &m) || !peer_from(c, m.from)) return UCS_OK;
  bool any = false;
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->ninlinks; ++i)
    if (c->inlinks[i].peer == m.from && c->inlinks[i].link_id == m.link_id) {
      c->inlinks[i].fault = true;
      copy_name(c->inlinks[i].why, sizeof c->inlinks[i].why, m.text);
      any = true;
    }
  pthread_mutex_unlock(&c->links_mu);
  /* The supervisor is told after the worker's turn (tell_links). */
  if (any) links_due(c);
  return UCS_OK;
}

/* rk__actor_failed_hook: runs under the supervision lock, so it only
 * queues the actor for tell_links. */
static void on_local_failed(rk_actor_t *actor, const char *why, void *user) {
  rk_cluster_t *c = user;
  failed_local_t *f = malloc(sizeof *f);
  if (!f) return;
  f->actor = actor;
  copy_name(f->why, sizeof f->why, why ? why : "");
  pthread_mutex_lock(&c->failq_mu);
  f->next = c->failq;
  c->failq = f;
  pthread_mutex_unlock(&c->failq_mu);
  links_due(c);
}

/* ---- exported actors' workers drive the worker ------------------------- */

static void wake_aside(rk_cluster_t *c) {
  __atomic_fetch_add(&c->aside_seq, 1u, __ATOMIC_RELEASE);
  rk__wake_all(&c->aside_seq);
}

/* An idle turn of an exported actor's worker (rk__idle_work_t): every
 * export's answers, the worker's progress and the outbox, as a driver
 * (the progress thread stands aside). Not tell_links: it may fault or
 * restart actors through their supervisors, this one included, which
 * cannot be done from its own worker; the progress thread does that,
 * woken for it. */
static unsigned drive_turn(void *user) {
  export_t *e = user;
  rk_cluster_t *c = e->c;
  t_turn_export = e;
  /* Only this thread sets `driving`, and nobody clears it during a turn
   * (a withdrawal waits for the turn to end): a plain look first, no
   * locked instruction per turn. */
  if (!atomic_load_explicit(&e->driving, memory_order_relaxed) &&
      !atomic_exchange(&e->driving, true))
    atomic_fetch_add(&c->drivers, 1);
  const uint64_t t = count_turn(c);
  /* Answers first: the loop has just run the handler, and the answer
   * should not wait for a turn of the workers (a system call per turn
   * where UCX polls a TCP interface). */
  unsigned n = forward_all(c);
  n += turn_workers(c, ctrl_due(c, t));
  if (e->ndirect) direct_run(e);
  n += flush_handles(c, false);
  outbox_drain(c);
  fail_broken(c);
  /* Requests delivered by a turn of the workers inside the sends above,
   * if any. */
  if (e->ndirect) direct_run(e);
  if (atomic_load_explicit(&c->links_due, memory_order_relaxed)) wake_aside(c);
  t_turn_export = NULL;
  return n;
}

/* The worker stops turning (it parks or stops), or the export goes: the
 * progress thread takes over now. */
static void drive_leave(void *user) {
  export_t *e = user;
  if (atomic_exchange(&e->driving, false)) {
    atomic_fetch_sub(&e->c->drivers, 1);
    wake_aside(e->c);
  }
}

/* Called with c->mu held: offers e's turns to its actor's worker, unless
 * the actor has work on offer already (another export of it, here or in
 * another cluster). */
static void offer_drive(export_t *e) {
  e->idle.turn = drive_turn;
  e->idle.leave = drive_leave;
  e->idle.user = e;
  e->offered = rk__actor_offer_idle_work(e->actor, &e->idle);
}

/* e, taken out of c->exports: once it returns, the actor's worker does no
 * more turns for e, and another export of the actor here, if any, takes
 * the offer over. Never with a cluster lock held: a turn in progress takes
 * them. */
static void withdraw_drive(rk_cluster_t *c, export_t *e) {
  pthread_mutex_lock(&c->mu);
  const bool offered = e->offered;
  e->offered = false;
  pthread_mutex_unlock(&c->mu);
  if (!offered) return;
  rk__actor_withdraw_idle_work(e->actor, &e->idle);
  drive_leave(e);
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i) {
    export_t *o = c->exports[i];
    if (o && o->actor == e->actor && !o->offered) {
      offer_drive(o);
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
}

/* ---- peer slots ---------------------------------------------------------
 *
 * A peer that has gone (FAILED, LEFT, or refused at the door) keeps its
 * slot until the progress thread frees it. Under c->mu its worker is taken
 * off the turns (quiet, out of c->efd) and its endpoint off the sends (ep
 * NULL); then every quiescence section that may still use them ends
 * (rk__quiesce_wait: turns of the workers, posts; base/quiesce.h); then
 * the endpoints are closed (forced) and the worker destroyed, and the slot
 * is free for the next peer under a new id (index + MAX_PEERS more). What
 * still names the old peer - a handle, a route, a credit entry, a message
 * in the outbox - no longer matches the slot (peer_from, post), and what
 * the old peer may still send carries an id nobody has. A slot is freed
 * once no link from its peer is left (tell_links takes those off first)
 * and its failure is settled (broken_at); a refused one RECLAIM_GRACE_NS
 * after the refusal, whose reason (in the outbox) has gone out by then. */
enum { kReclaimAtOnce = 16 };
#define RECLAIM_GRACE_NS 200000000ull

/* Called with links_mu held: whether a link from peer `id` is left. */
static bool linked_from(const rk_cluster_t *c, uint32_t id) {
  for (uint32_t i = 0; i < c->ninlinks; ++i)
    if (c->inlinks[i].peer == id) return true;
  return false;
}

/* Closes endpoints (forced), turning `w` and the control worker until
 * they are closed or half a second has passed. */
static void close_forced(rk_cluster_t *c, ucp_worker_h w, ucp_ep_h *eps,
                         uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = c->u->ucp_ep_close_nbx(eps[i], &prm);
    if (!UCS_PTR_IS_PTR(r)) continue;
    const uint64_t deadline = deadline_after(500000000);
    while (c->u->ucp_request_check_status(r) == UCS_INPROGRESS &&
           rk__now_ns() < deadline) {
      if (w) c->u->ucp_worker_progress(w);
      c->u->ucp_worker_progress(c->worker);
    }
    c->u->ucp_request_free(r);
  }
}

/* The progress thread, holding no lock: frees the workers, endpoints and
 * slots of peers gone (see above). */
static void reclaim_peers(rk_cluster_t *c) {
  if (!atomic_load_explicit(&c->reclaim_due, memory_order_relaxed) ||
      !atomic_exchange(&c->reclaim_due, false))
    return;
  peer_t *gone[kReclaimAtOnce];
  ucp_ep_h eps[kReclaimAtOnce][2];
  uint32_t neps[kReclaimAtOnce];
  uint32_t n = 0;
  bool later = false;
  const uint64_t now = rk__now_ns();
  pthread_mutex_lock(&c->mu);
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->peer_count; ++i) {
    peer_t *p = &c->peers[i];
    int st = atomic_load(&p->state);
    if (st == P_ACCEPTED) {
      /* A connection that has not said HELLO: refused once its time is up
       * (a late HELLO finds no ACCEPTED peer and is dropped). */
      if (now - p->accepted_at < c->hello_timeout_ns) {
        later = true;
        continue;
      }
      snprintf(p->cause, sizeof p->cause, "no HELLO within %.3f s",
               (double)c->hello_timeout_ns / 1e9);
      atomic_store(&p->state, P_REFUSED);
      st = P_REFUSED;
    }
    if ((st != P_FAILED && st != P_LEFT && st != P_REFUSED) || p->reclaiming ||
        p->free_slot)
      continue;
    if (!p->down_at) p->down_at = now;
    if ((st == P_REFUSED && now - p->down_at < RECLAIM_GRACE_NS) ||
        p->broken_at || linked_from(c, p->id) || n == kReclaimAtOnce) {
      later = true;
      continue;
    }
    p->reclaiming = true;
    if (p->rx.w && !p->quiet && p->wefd >= 0)
      (void)epoll_ctl(c->efd, EPOLL_CTL_DEL, p->wefd, NULL);
    __atomic_store_n(&p->quiet, true, __ATOMIC_RELAXED);
    ucp_ep_h ep = p->ep, boot = p->boot;
    __atomic_store_n(&p->ep, NULL, __ATOMIC_RELEASE);
    p->boot = NULL;
    neps[n] = 0;
    if (ep) eps[n][neps[n]++] = ep;
    if (boot && boot != ep) eps[n][neps[n]++] = boot;
    gone[n++] = p;
  }
  pthread_mutex_unlock(&c->links_mu);
  pthread_mutex_unlock(&c->mu);
  if (n) {
    /* Nobody turns these workers or sends on these endpoints any more. */
    rk__quiesce_wait();
    for (uint32_t i = 0; i < n; ++i) {
      peer_t *p = gone[i];
      close_forced(c, p->rx.w, eps[i], neps[i]);
      if (p->rx.w) {
        if (p->waddr) c->u->ucp_worker_release_address(p->rx.w, p->waddr);
        c->u->ucp_worker_destroy(p->rx.w);
      }
    }
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&c->links_mu);
    for (uint32_t i = 0; i < n; ++i) {
      peer_t *p = gone[i];
      __atomic_store_n(&p->rx.w, NULL, __ATOMIC_RELEASE);
      p->waddr = NULL;
      p->waddr_size = 0;
      p->wefd = -1;
      p->reclaiming = false;
      /* A link that came in while the worker was last turned: once
       * tell_links has taken it off (its peer is down), a later pass
       * frees the slot. */
      if (linked_from(c, p->id)) {
        later = true;
        continue;
      }
      free(p->addr);
      p->addr = NULL;
      p->addr_size = 0;
      uint32_t id = p->id + MAX_PEERS;
      if (id == UINT32_MAX) id += MAX_PEERS; /* UINT32_MAX: no peer */
      __atomic_store_n(&p->id, id, __ATOMIC_RELAXED);
      atomic_store(&p->state, P_FREE);
      p->free_slot = true;
      c->peers_freed++;
    }
    pthread_mutex_unlock(&c->links_mu);
    pthread_mutex_unlock(&c->mu);
  }
  if (later) atomic_store(&c->reclaim_due, true);
}

/* ---- the progress thread ----------------------------------------------- */

/* Drives the worker and the exports. Spins for spin_us after the last
 * activity; then, when no request is in an actor, sleeps on the worker's
 * event fd; while requests are in actors, whose answers signal no fd, it
 * naps, from 20 us growing to 1 ms, between looks. It stands aside while a
 * user thread drives the worker itself (waiting for an answer), and does
 * not spin again until it has done some work of its own. */
/* How long the progress thread stays aside after it last saw a driver, in
 * a process that exports nothing: a caller between two calls is likely to
 * drive again, and a worker armed meanwhile would wake this thread on that
 * caller's very answer (a context switch onto a CPU the caller or the
 * owner needs, per call). It looks at the worker every millisecond. */
#define ASIDE_LINGER_NS 10000000ull
#define ASIDE_NAP_NS 1000000ull

/* Drives the worker and the exports. Spins for spin_us after the last
 * activity, then sleeps on the worker's event descriptor; stands aside
 * while user threads drive (see hwait). */
static void *progress_main(void *arg) {
  rk_cluster_t *c = arg;
  uint64_t idle_since = rk__now_ns();
  uint64_t aside_since = 0; /* when a driver was last seen */
  uint64_t nap_ns = 20000;
  bool aside = false;
  while (!atomic_load(&c->stop)) {
    reclaim_peers(c);
    if (atomic_load_explicit(&c->drivers, memory_order_relaxed)) {
      /* What an actor's worker leaves to this thread (drive_turn). */
      if (atomic_load_explicit(&c->links_due, memory_order_relaxed) &&
          atomic_exchange(&c->links_due, false))
        tell_links(c);
      /* Asleep until the driver gives up or a millisecond passes; then,
       * if nobody turned the worker meanwhile (a driver that stopped
       * turning), a turn of its own. */
      const uint64_t turns =
          atomic_load_explicit(&c->turns, memory_order_relaxed);
      const uint32_t seq = __atomic_load_n(&c->aside_seq, __ATOMIC_ACQUIRE);
      if (atomic_load(&c->drivers) && !atomic_load(&c->stop))
        rk__wait_while_equal(&c->aside_seq, seq, ASIDE_NAP_NS);
      if (atomic_load(&c->drivers) &&
          atomic_load_explicit(&c->turns, memory_order_relaxed) == turns) {
        pump(c);
        forward_all(c);
      }
      aside = true;
      aside_since = rk__now_ns();
      continue;
    }
    /* After standing aside it neither turns the worker nor spins for a
     * while: the user thread that drove it is likely to again (a caller
     * between two calls, a stream between two waits), and a progress
     * thread turning the worker beside it would take the CPU it needs and
     * UCX's lock from under it. */
    if (aside && rk__now_ns() - aside_since < ASIDE_LINGER_NS &&
        __atomic_load_n(&c->export_count, __ATOMIC_RELAXED) == 0 &&
        !atomic_load(&c->nbridges) && !atomic_load(&c->sleepers)) {
      const uint64_t turns =
          atomic_load_explicit(&c->turns, memory_order_relaxed);
      const uint32_t seq = __atomic_load_n(&c->aside_seq, __ATOMIC_ACQUIRE);
      if (!atomic_load(&c->drivers) && !atomic_load(&c->stop))
        rk__wait_while_equal(&c->aside_seq, seq, ASIDE_NAP_NS);
      /* Nobody turned it for a millisecond: a turn of its own. */
      if (!atomic_load(&c->drivers) &&
          atomic_load_explicit(&c->turns, memory_order_relaxed) == turns) {
        pump(c);
        forward_all(c);
      }
      continue;
    }
    unsigned did = pump(c) + forward_all(c);
    if (did) {
      idle_since = rk__now_ns();
      nap_ns = 20000;
      aside = false;
      continue;
    }
    if (!aside && rk__now_ns() - idle_since < (uint64_t)c->spin_us * 1000u)
      continue;
    if (atomic_load(&c->in_flight) || atomic_load(&c->nbridges) ||
        atomic_load(&c->broken_any) || atomic_load(&c->reclaim_due) ||
        c->efd < 0) {
      struct timespec ts = {0, (long)nap_ns};
      nanosleep(&ts, NULL);
      if (nap_ns < 1000000) nap_ns *= 2;
      continue;
    }
    if (!arm_workers(c)) continue;
    if (atomic_load(&c->out_any) || atomic_load(&c->in_flight) ||
        atomic_load(&c->links_due) || atomic_load(&c->broken_any) ||
        atomic_load(&c->flush_any))
      continue;
    struct pollfd pfd = {.fd = c->efd, .events = POLLIN};
    (void)poll(&pfd, 1, 100);
    idle_since = rk__now_ns();
  }
  return NULL;
}

/* ---- create / destroy -------------------------------------------------- */

void rk_cluster_options_init(rk_cluster_options_t *o) {
  memset(o, 0, sizeof *o);
  o->connect_timeout_ns = 10000000000ull;
  o->spin_us = UINT32_MAX; /* environment or default */
}

rk_status_t rk_cluster_available(const char **out_version) {
  const rk_ucp_api_t *u;
  if (out_version) *out_version = NULL;
  RK_RETURN_IF_ERROR(rk__ucp_api(&u));
  if (out_version) *out_version = u->ucp_get_version_string();
  return RK_OK;
}

static const char *opt_or_env(const char *v, const char *env) {
  if (v) return v;
  const char *e = getenv(env);
  return e && *e ? e : NULL;
}

static rk_status_t set_handlers(rk_cluster_t *c, ucp_worker_h w, rx_t *rx) {
  static const struct {
    unsigned id;
    ucp_am_recv_callback_t cb;
  } table[] = {
      {RK_AM_HELLO, on_hello},
      {RK_AM_WELCOME, on_welcome},
      {RK_AM_LOOKUP, on_lookup},
      {RK_AM_LOOKUP_REPLY, on_lookup_reply},
      {RK_AM_REQ, on_req},
      {RK_AM_RESP, on_resp},
      {RK_AM_BYE, on_bye},
      {RK_AM_INTRO, on_intro},
      {RK_AM_INTRO_ACK, on_intro_ack},
      {RK_AM_LINK, on_link},
      {RK_AM_UNLINK, on_unlink},
      {RK_AM_LINK_FAULT, on_link_fault},
      {RK_AM_REQS, on_reqs},
      {RK_AM_RESPS, on_resps},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    ucp_am_handler_param_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.id = table[i].id;
    p.cb = table[i].cb;
    p.arg = rx;
    ucs_status_t st = c->u->ucp_worker_set_am_recv_handler(w, &p);
    if (st != UCS_OK) return rk__ucs_fail(st, "cluster: set AM handler");
  }
  return RK_OK;
}

static rk_status_t start_listener(rk_cluster_t *c, const char *addr) {
  struct sockaddr_storage sa;
  socklen_t len;
  RK_RETURN_IF_ERROR(parse_address(addr, &sa, &len));
  ucp_listener_params_t lp;
  memset(&lp, 0, sizeof lp);
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                  UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = (const struct sockaddr *)&sa;
  lp.sockaddr.addrlen = len;
  lp.conn_handler.cb = on_conn;
  lp.conn_handler.arg = c;
  ucs_status_t st = c->u->ucp_listener_create(c->worker, &lp, &c->listener);
  if (st != UCS_OK) {
    char what[200];
    snprintf(what, sizeof what, "cluster: cannot listen on %s", addr);
    return rk__ucs_fail(st, what);
  }
  ucp_listener_attr_t la;
  memset(&la, 0, sizeof la);
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = c->u->ucp_listener_query(c->listener, &la);
  if (st == UCS_OK)
    format_address(&la.sockaddr, c->address, sizeof c->address);
  else
    copy_name(c->address, sizeof c->address, addr);
  return RK_OK;
}

/* HELLO or INTRO to p in msg (room for the header and both addresses):
 * h, this member's worker for p, its public address; returns the size. */
static size_t hello_pack(const rk_cluster_t *c, const peer_t *p,
                         rk_wire_hello_t *h, unsigned char *msg) {
  h->address_size = (uint32_t)p->waddr_size;
  h->public_size = (uint32_t)c->waddr_size;
  memcpy(msg, h, sizeof *h);
  memcpy(msg + sizeof *h, p->waddr, p->waddr_size);
  memcpy(msg + sizeof *h + p->waddr_size, c->waddr, c->waddr_size);
  return sizeof *h + p->waddr_size + c->waddr_size;
}

/* A joiner, welcomed: introduces itself to every member the hub's WELCOME
 * named (two endpoints to its worker address, as to the hub, then INTRO)
 * and waits until each has answered, failed or the deadline passed. A
 * member that cannot be reached is FAILED here (its name says why in
 * lookups); the join itself stands. */
static void introduce(rk_cluster_t *c, uint64_t deadline) {
  pthread_mutex_lock(&c->mu);
  unsigned char *list = c->intro;
  const size_t size = c->intro_size;
  const uint32_t count = c->intro_count;
  c->intro = NULL;
  c->intro_size = 0;
  c->intro_count = 0;
  pthread_mutex_unlock(&c->mu);
  if (!list) return;
  uint32_t asked[MAX_PEERS];
  uint32_t nasked = 0;
  size_t off = 0;
  unsigned char *msg =
      malloc(sizeof(rk_wire_hello_t) + RK_WIRE_ADDRESS_MAX + c->waddr_size);
  for (uint32_t i = 0; msg && i < count; ++i) {
    rk_wire_card_t card;
    if (size - off < sizeof card) break;
    memcpy(&card, list + off, sizeof card);
    off += sizeof card;
    if (card.address_size > size - off) break;
    const unsigned char *address = list + off;
    off += card.address_size;
    card.name[RK_WIRE_NAME_MAX - 1] = '\0';
    if (!card.address_size || !strcmp(card.name, c->name)) continue;
    pthread_mutex_lock(&c->mu);
    peer_t *p = peer_new(c);
    if (p) {
      copy_name(p->name, sizeof p->name, card.name);
      atomic_store(&p->state, P_CONNECTING);
    }
    pthread_mutex_unlock(&c->mu);
    if (!p) break;
    /* The INTRO goes over the watching endpoint (to its public address);
     * the messages' endpoint is opened when its INTRO_ACK names its
     * worker for this member. */
    ucp_ep_params_t e = ep_params(p);
    e.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    e.address = (const ucp_address_t *)address;
    ucp_ep_h watch = NULL;
    const char *why = NULL;
    ucs_status_t st = c->u->ucp_ep_create(c->worker, &e, &watch);
    const bool made = st == UCS_OK && peer_worker(c, p, &why);
    pthread_mutex_lock(&c->mu);
    p->boot = p->ep = watch;
    pthread_mutex_unlock(&c->mu);
    if (!made) {
      char cause[TEXT_MAX];
      if (why)
        snprintf(cause, sizeof cause, "no worker could be made for it: %s",
                 why);
      else
        snprintf(cause, sizeof cause,
                 "its address (from the hub) cannot be reached (UCX: %s)",
                 c->u->ucs_status_string(st));
      peer_down(c, p, P_FAILED, cause);
      continue;
    }
    rk_wire_hello_t h;
    memset(&h, 0, sizeof h);
    h.magic = RK_WIRE_MAGIC;
    h.version = RK_WIRE_VERSION;
    h.hub_index = p->id;
    h.token_size = (uint32_t)c->token_size;
    memcpy(h.token, c->token, c->token_size);
    copy_name(h.name, sizeof h.name, c->name);
    const size_t n = hello_pack(c, p, &h, msg);
    char *saved = rk__error_save();
    const rk_status_t ps = post(c, p->id, RK_AM_INTRO, NULL, 0, msg, n, false);
    rk__error_restore(saved);
    if (ps != RK_OK) {
      peer_down(c, p, P_FAILED, "the introduction could not be sent");
      continue;
    }
    asked[nasked++] = p->id;
  }
  free(msg);
  free(list);
  pthread_mutex_lock(&c->mu);
  for (;;) {
    uint32_t waiting = 0;
    for (uint32_t i = 0; i < nasked; ++i) {
      peer_t *p = &c->peers[PEER_SLOT(asked[i])];
      waiting += p->id == asked[i] && joining(p);
    }
    if (!waiting || rk__now_ns() >= deadline) break;
    cond_wait_until(&c->cv, &c->mu, deadline, 100000000);
  }
  pthread_mutex_unlock(&c->mu);
  for (uint32_t i = 0; i < nasked; ++i) {
    peer_t *p = &c->peers[PEER_SLOT(asked[i])];
    /* peer_down does nothing to a peer that is not joining (a slot freed
     * since holds a peer that is not CONNECTING or JOINING either). */
    if (joining(p) && __atomic_load_n(&p->id, __ATOMIC_RELAXED) == asked[i])
      peer_down(c, p, P_FAILED, "it did not answer this member's introduction");
  }
}

static rk_status_t join(rk_cluster_t *c, const char *addr, uint64_t timeout) {
  struct sockaddr_storage sa;
  socklen_t len;
  RK_RETURN_IF_ERROR(parse_address(addr, &sa, &len));
  pthread_mutex_lock(&c->mu);
  peer_t *p = peer_new(c);
  if (!p) {
    pthread_mutex_unlock(&c->mu);
    return rk__fail(RK_ERR_OUT_OF_RANGE, "cluster: too many peers");
  }
  p->is_hub = true;
  snprintf(p->name, sizeof p->name, "hub at %.50s", addr);
  atomic_store(&p->state, P_CONNECTING);
  ucp_ep_params_t e = ep_params(p);
  e.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  e.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  e.sockaddr.addr = (const struct sockaddr *)&sa;
  e.sockaddr.addrlen = len;
  pthread_mutex_unlock(&c->mu);
  const char *why = NULL;
  if (!peer_worker(c, p, &why)) {
    atomic_store(&p->state, P_FAILED);
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cluster: cannot make a UCX worker for the hub: %s", why);
  }
  ucp_ep_h ep = NULL;
  ucs_status_t st = c->u->ucp_ep_create(c->worker, &e, &ep);
  pthread_mutex_lock(&c->mu);
  p->ep = p->boot = st == UCS_OK ? ep : NULL;
  pthread_mutex_unlock(&c->mu);
  if (st != UCS_OK) {
    atomic_store(&p->state, P_FAILED);
    char what[200];
    snprintf(what, sizeof what, "cluster: cannot connect to %s", addr);
    return rk__ucs_fail(st, what);
  }
  rk_wire_hello_t h;
  memset(&h, 0, sizeof h);
  h.magic = RK_WIRE_MAGIC;
  h.version = RK_WIRE_VERSION;
  h.hub_index = p->id;
  h.token_size = (uint32_t)c->token_size;
  memcpy(h.token, c->token, c->token_size);
  copy_name(h.name, sizeof h.name, c->name);
  unsigned char *msg = malloc(sizeof h + p->waddr_size + c->waddr_size);
  if (!msg) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: join");
  const size_t n = hello_pack(c, p, &h, msg);
  rk_status_t ps = post(c, p->id, RK_AM_HELLO, NULL, 0, msg, n, true);
  free(msg);
  RK_RETURN_IF_ERROR(ps);
  uint64_t deadline = deadline_after(timeout);
  pthread_mutex_lock(&c->mu);
  while (joining(p) && rk__now_ns() < deadline)
    cond_wait_until(&c->cv, &c->mu, deadline, 100000000);
  int s = atomic_load(&p->state);
  rk_status_t out = RK_OK;
  if (s == P_CONNECTING || s == P_JOINING) {
    out = rk__fail(RK_ERR_TIMEOUT,
                   "cluster: no answer from %s within %.3f s (nobody "
                   "listening, or a firewall?)",
                   addr, (double)timeout / 1e9);
    atomic_store(&p->state, P_FAILED);
  } else if (s == P_REFUSED) {
    out = rk__fail(p->refusal, "cluster: %s refused '%s': %s", addr, c->name,
                   p->cause);
  } else if (s != P_UP) {
    out = rk__fail(RK_ERR_UNAVAILABLE, "cluster: cannot join %s: %s", addr,
                   p->cause);
  }
  pthread_mutex_unlock(&c->mu);
  if (out == RK_OK) introduce(c, deadline);
  return out;
}

/* The MPI launcher path: a worker for every other rank; one MPI_Allgather
 * of every rank's public address and one MPI_Alltoall of each rank's
 * worker for each other; then two endpoints to every other rank (one
 * between the control workers watching it with peer error handling, one
 * between the two ranks' workers for each other carrying the messages, as
 * for a joiner), then one MPI_Barrier so that no rank sends before every
 * rank can take it. Peer slot r is rank r, the own slot unused. */
typedef struct mpi_address {
  uint32_t size, reserved;
  unsigned char address[RK_WIRE_ADDRESS_MAX];
} mpi_address_t;

typedef struct mpi_card {
  uint32_t magic, version, rank, address_size;
  char name[RK_WIRE_NAME_MAX];
  unsigned char address[RK_WIRE_ADDRESS_MAX];
} mpi_card_t;

static rk_status_t mpi_join(rk_cluster_t *c, bool named) {
  const rk_mpi_api_t *m;
  RK_RETURN_IF_ERROR(rk__mpi_api(&m));
  c->mpi = m;
  int inited = 0;
  m->MPI_Initialized(&inited);
  if (!inited) {
    if (m->MPI_Init(NULL, NULL) != 0)
      return rk__fail(RK_ERR_UNAVAILABLE, "cluster: MPI_Init failed");
    c->mpi_owned = true;
  }
  int rank = 0, size = 0;
  m->MPI_Comm_rank(m->comm_world, &rank);
  m->MPI_Comm_size(m->comm_world, &size);
  if (size < 1 || size > MAX_PEERS)
    return rk__fail(RK_ERR_OUT_OF_RANGE, "cluster: %d MPI ranks (at most %d)",
                    size, MAX_PEERS);
  if (c->waddr_size == 0)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cluster: this UCX worker's address is too long to send");
  c->rank = rank;
  if (!named) snprintf(c->name, sizeof c->name, "rank%d", rank);
  mpi_card_t *all = calloc((size_t)size, sizeof *all);
  mpi_card_t *me = calloc(1, sizeof *me);
  if (!all || !me) {
    free(all);
    free(me);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: MPI join");
  }
  me->magic = RK_WIRE_MAGIC;
  me->version = RK_WIRE_VERSION;
  me->rank = (uint32_t)rank;
  me->address_size = (uint32_t)c->waddr_size;
  copy_name(me->name, sizeof me->name, c->name);
  memcpy(me->address, c->waddr, c->waddr_size);
  rk_status_t s = RK_OK;
  if (m->MPI_Allgather(me, (int)sizeof *me, m->byte, all, (int)sizeof *me,
                       m->byte, m->comm_world) != 0)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cluster: MPI_Allgather failed");
  for (int r = 0; s == RK_OK && r < size; ++r)
    if (all[r].magic != RK_WIRE_MAGIC || all[r].version != RK_WIRE_VERSION)
      s = rk__fail(RK_ERR_UNAVAILABLE,
                   "cluster: rank %d runs another rk build (wire version %u)",
                   r, all[r].version);
  if (s == RK_OK) {
    pthread_mutex_lock(&c->mu);
    for (int r = 0; r < size; ++r) {
      peer_t *p = &c->peers[r];
      p->c = c;
      p->index = (uint32_t)r;
      p->id = (uint32_t)r; /* ranks: slots never reused */
      p->remote = (uint32_t)rank;
      p->ep = p->boot = NULL;
      all[r].name[RK_WIRE_NAME_MAX - 1] = '\0';
      copy_name(p->name, sizeof p->name, all[r].name);
    }
    c->peer_count = (uint32_t)size;
    pthread_mutex_unlock(&c->mu);
  }
  /* Each rank's worker for each other rank: block r of `mine` goes to
   * rank r, block r of `theirs` is rank r's worker for this one. Every
   * rank takes part even when its own workers failed (an empty block). */
  mpi_address_t *mine = NULL, *theirs = NULL;
  if (s == RK_OK) {
    mine = calloc((size_t)size, sizeof *mine);
    theirs = calloc((size_t)size, sizeof *theirs);
    if (!mine || !theirs)
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: MPI join");
  }
  const char *why = NULL;
  for (int r = 0; s == RK_OK && r < size; ++r) {
    peer_t *p = &c->peers[r];
    if (r == rank || (!why && !peer_worker(c, p, &why))) continue;
    mine[r].size = (uint32_t)p->waddr_size;
    memcpy(mine[r].address, p->waddr, p->waddr_size);
  }
  if (s == RK_OK &&
      m->MPI_Alltoall(mine, (int)sizeof *mine, m->byte, theirs,
                      (int)sizeof *theirs, m->byte, m->comm_world) != 0)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cluster: MPI_Alltoall failed");
  if (s == RK_OK && why)
    s = rk__fail(RK_ERR_UNAVAILABLE,
                 "cluster: cannot make a UCX worker for every rank: %s", why);
  for (int r = 0; s == RK_OK && r < size; ++r) {
    if (r == rank) continue;
    peer_t *p = &c->peers[r];
    ucp_ep_params_t e = ep_params(p);
    e.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    e.address = (const ucp_address_t *)all[r].address;
    ucp_ep_h watch = NULL, data = NULL;
    ucs_status_t st = c->u->ucp_ep_create(c->worker, &e, &watch);
    if (st == UCS_OK &&
        (theirs[r].size > RK_WIRE_ADDRESS_MAX ||
         !open_data_ep(c, p->rx.w, theirs[r].address, theirs[r].size, &data)))
      st = UCS_ERR_UNREACHABLE;
    pthread_mutex_lock(&c->mu);
    p->boot = watch;
    p->ep = data ? data : watch;
    if (st == UCS_OK) atomic_store(&p->state, P_UP);
    pthread_mutex_unlock(&c->mu);
    if (st != UCS_OK) {
      char what[96];
      snprintf(what, sizeof what, "cluster: cannot reach rank %d", r);
      s = rk__ucs_fail(st, what);
    }
  }
  free(all);
  free(me);
  free(mine);
  free(theirs);
  if (s == RK_OK && m->MPI_Barrier(m->comm_world) != 0)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cluster: MPI_Barrier failed");
  return s;
}

rk_status_t rk_cluster_mpi_available(const char **out_version) {
  static char version[256];
  const rk_mpi_api_t *m;
  if (out_version) *out_version = NULL;
  RK_RETURN_IF_ERROR(rk__mpi_api(&m));
  int n = (int)sizeof version;
  /* MPI_Get_library_version may be called before MPI_Init. */
  if (m->MPI_Get_library_version(version, &n) == 0 && out_version) {
    char *nl = strchr(version, '\n');
    if (nl) *nl = '\0';
    char *comma = strchr(version, ',');
    if (comma) *comma = '\0';
    *out_version = version;
  }
  return RK_OK;
}

/* A turn of every worker, those of peers gone included (their endpoints
 * close too). */
static void close_turn(rk_cluster_t *c) {
  c->u->ucp_worker_progress(c->worker);
  const uint32_t nw = atomic_load_explicit(&c->nw, memory_order_acquire);
  for (uint32_t i = 0; i < nw; ++i)
    if (c->wpeers[i]->rx.w) c->u->ucp_worker_progress(c->wpeers[i]->rx.w);
}

static void close_eps(rk_cluster_t *c) {
  void *reqs[2 * MAX_PEERS];
  size_t n = 0;
  for (uint32_t i = 0; i < c->peer_count; ++i) {
    peer_t *p = &c->peers[i];
    int st = atomic_load(&p->state);
    ucp_ep_h eps[2] = {p->ep, p->boot == p->ep ? NULL : p->boot};
    for (int k = 0; k < 2; ++k) {
      if (!eps[k]) continue;
      ucp_request_param_t prm;
      memset(&prm, 0, sizeof prm);
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = st == P_UP ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t r = c->u->ucp_ep_close_nbx(eps[k], &prm);
      if (UCS_PTR_IS_PTR(r) && n < 2 * MAX_PEERS) reqs[n++] = r;
    }
    p->ep = p->boot = NULL;
  }
  uint64_t deadline = deadline_after(500000000);
  for (size_t i = 0; i < n; ++i) {
    while (c->u->ucp_request_check_status(reqs[i]) == UCS_INPROGRESS &&
           rk__now_ns() < deadline)
      close_turn(c);
    /* Released either way: one still closing completes (or is dropped)
     * with its worker, which asserts that none is left unreleased. */
    c->u->ucp_request_free(reqs[i]);
  }
}

static void free_export(rk_cluster_t *c, export_t *e) {
  pending_req_t *lists[2] = {e->pending, e->ipending};
  for (int k = 0; k < 2; ++k) {
    pending_req_t *q = lists[k];
    while (q) {
      pending_req_t *next = q->next;
      free(q);
      q = next;
      atomic_fetch_sub(&c->in_flight, 1);
    }
  }
  rk__k2k_release(e->ingress);
  atomic_fetch_sub(&c->credits_due, e->ncredits); /* owed to nobody now */
  for (size_t i = 0; i < e->route_count; ++i)
    if (!route_at(e, i)->done) atomic_fetch_sub(&c->in_flight, 1);
  free(e->routes);
  free(e->buf);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

/* Takes e out of the progress thread's list. */
static void unlist_export(rk_cluster_t *c, export_t *e) {
  pthread_mutex_lock(&c->exports_mu);
  for (uint32_t i = 0; i < c->export_count; ++i)
    if (c->export_list[i] == e) {
      c->export_list[i] = c->export_list[c->export_count - 1];
      /* Atomic: the progress thread looks at the count without the lock. */
      __atomic_store_n(&c->export_count, c->export_count - 1, __ATOMIC_RELAXED);
      break;
    }
  pthread_mutex_unlock(&c->exports_mu);
}

static void free_handle(rk_remote_actor_t *h) {
  for (answer_t *a = h->rq; a;) {
    answer_t *next = a->next;
    free(a);
    a = next;
  }
  answer_t *lists[] = {h->spare, h->cq, h->cfree};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; ++i)
    for (answer_t *a = lists[i]; a;) {
      answer_t *next = a->next;
      free(a);
      a = next;
    }
  pthread_mutex_destroy(&h->send_mu);
  free(h->bufs);
  free(h);
}

/* rk_actor_destroy's hook: the actor's exports are withdrawn (as by
 * rk_cluster_unexport) and its remote links dropped, before it is freed. */
static void on_actor_destroy(rk_actor_t *actor, void *user) {
  rk_cluster_t *c = user;
  for (;;) {
    char name[RK_WIRE_ACTOR_NAME_MAX] = "";
    pthread_mutex_lock(&c->mu);
    for (uint32_t i = 0; i < MAX_EXPORTS && !name[0]; ++i)
      if (c->exports[i] && c->exports[i]->actor == actor)
        copy_name(name, sizeof name, c->exports[i]->name);
    pthread_mutex_unlock(&c->mu);
    if (!name[0]) break;
    char *saved = rk__error_save();
    (void)rk_cluster_unexport(c, name);
    rk__error_restore(saved);
  }
  link_msg_t *msgs = NULL;
  uint32_t nmsgs = 0;
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->nlinks;)
    if (c->links[i].local == actor) {
      (void)link_msg_add(c, &msgs, &nmsgs, &c->links[i], RK_AM_UNLINK, NULL);
      c->links[i] = c->links[--c->nlinks];
    } else {
      ++i;
    }
  for (uint32_t i = 0; i < c->ninlinks;)
    if (c->inlinks[i].actor == actor)
      c->inlinks[i] = c->inlinks[--c->ninlinks];
    else
      ++i;
  pthread_mutex_unlock(&c->links_mu);
  pthread_mutex_lock(&c->failq_mu);
  for (failed_local_t **pp = &c->failq; *pp;) {
    failed_local_t *f = *pp;
    if (f->actor == actor) {
      *pp = f->next;
      free(f);
    } else {
      pp = &f->next;
    }
  }
  pthread_mutex_unlock(&c->failq_mu);
  post_link_msgs(c, msgs, nmsgs);
}

void rk_cluster_destroy(rk_cluster_t *c) {
  if (!c) return;
  if (c->hooked) rk__actor_destroy_hook_remove(on_actor_destroy, c);
  if (c->failed_hooked) rk__actor_failed_hook_remove(on_local_failed, c);
  if (c->worker) {
    (void)flush_handles(c, true); /* what was sent goes */
    /* Goodbye to every live peer: their handles become TERMINATED. */
    pthread_mutex_lock(&c->mu);
    uint32_t peers = c->peer_count;
    pthread_mutex_unlock(&c->mu);
    for (uint32_t i = 0; i < peers; ++i) {
      peer_t *p = &c->peers[i];
      if (atomic_load(&p->state) != P_UP) continue;
      rk_wire_bye_t b = {.from = p->remote, .reserved = 0};
      (void)post(c, __atomic_load_n(&p->id, __ATOMIC_RELAXED), RK_AM_BYE, NULL,
                 0, &b, sizeof b, false);
    }
  }
  /* The exports' workers stop driving before the worker goes. */
  export_t *gone[MAX_EXPORTS];
  pthread_mutex_lock(&c->mu);
  memcpy(gone, c->exports, sizeof gone);
  memset(c->exports, 0, sizeof c->exports);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i)
    if (gone[i]) {
      pthread_mutex_lock(&gone[i]->mu);
      gone[i]->unlisted = true;
      pthread_mutex_unlock(&gone[i]->mu);
    }
  pthread_mutex_unlock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i)
    if (gone[i]) withdraw_drive(c, gone[i]);
  pthread_mutex_lock(&c->mu);
  memcpy(c->exports, gone, sizeof gone); /* freed below */
  pthread_mutex_unlock(&c->mu);
  if (c->progress) {
    atomic_store(&c->stop, true);
    wake_aside(c);
    c->u->ucp_worker_signal(c->worker);
    pthread_join(c->progress, NULL);
  }
  drop_bridges(c, NULL);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i)
    if (c->exports[i]) {
      free_export(c, c->exports[i]);
      c->exports[i] = NULL;
    }
  if (c->worker) {
    outbox_drain(c);
    close_eps(c);
  }
  for (uint32_t i = 0; i < c->handle_cap; ++i)
    if (c->handles[i]) {
      if (c->handles[i]->proxy) rk__actor_proxy_free(c->handles[i]->proxy);
      free_handle(c->handles[i]);
    }
  free(c->handles);
  if (c->listener) c->u->ucp_listener_destroy(c->listener);
  if (c->worker) {
    outmsg_t *m = c->out_head;
    while (m) {
      outmsg_t *next = m->next;
      free(m);
      m = next;
    }
    const uint32_t nw = atomic_load(&c->nw);
    for (uint32_t i = 0; i < nw; ++i) {
      peer_t *p = c->wpeers[i];
      if (!p->rx.w) continue; /* freed with its peer (reclaim_peers) */
      c->u->ucp_worker_release_address(p->rx.w, p->waddr);
      c->u->ucp_worker_destroy(p->rx.w);
      p->rx.w = NULL;
    }
    if (c->waddr) c->u->ucp_worker_release_address(c->worker, c->waddr);
    c->u->ucp_worker_destroy(c->worker);
  }
  if (c->efd >= 0) close(c->efd);
  if (c->context) c->u->ucp_cleanup(c->context);
  if (c->mpi_owned) {
    int done = 0;
    c->mpi->MPI_Finalized(&done);
    if (!done) c->mpi->MPI_Finalize();
  }
  for (uint32_t i = 0; i < c->peer_count; ++i) free(c->peers[i].addr);
  free(c->intro);
  free(c->failed_names);
  free(c->links);
  free(c->inlinks);
  while (c->failq) {
    failed_local_t *next = c->failq->next;
    free(c->failq);
    c->failq = next;
  }
  pthread_mutex_destroy(&c->failq_mu);
  pthread_mutex_destroy(&c->links_mu);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->out_mu);
  pthread_mutex_destroy(&c->drain_mu);
  pthread_mutex_destroy(&c->exports_mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

rk_status_t rk_cluster_create(const rk_cluster_options_t *options,
                              rk_cluster_t **out) {
  rk_cluster_options_t o;
  if (options)
    o = *options;
  else
    rk_cluster_options_init(&o);
  const rk_ucp_api_t *u;
  RK_RETURN_IF_ERROR(rk__ucp_api(&u));
  const rk_ucp_api_t *none = NULL;
  (void)__atomic_compare_exchange_n(&g_ucp, &none, u, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
  const char *listen_at = opt_or_env(o.listen, "RK_CLUSTER_LISTEN");
  const char *connect_to = opt_or_env(o.connect, "RK_CLUSTER_CONNECT");
  const char *token = opt_or_env(o.token, "RK_CLUSTER_TOKEN");
  const char *name = opt_or_env(o.name, "RK_CLUSTER_NAME");
  const char *mpi_env = getenv("RK_CLUSTER_MPI");
  bool use_mpi = o.mpi || (mpi_env && !strcmp(mpi_env, "1"));
  if (use_mpi && (listen_at || connect_to))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: an MPI cluster neither listens nor connects "
                    "(unset RK_CLUSTER_LISTEN / RK_CLUSTER_CONNECT)");
  if (name && (!*name || strlen(name) >= RK_WIRE_NAME_MAX))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: a member name has 1 to %d bytes",
                    RK_WIRE_NAME_MAX - 1);
  if (token && strlen(token) > RK_WIRE_TOKEN_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: the token has at most %d bytes",
                    RK_WIRE_TOKEN_MAX);
  long max_peers = MAX_PEERS;
  RK_RETURN_IF_ERROR(
      rk__env_long("RK_CLUSTER_MAX_PEERS", 1, MAX_PEERS, &max_peers));
  rk_cluster_t *c = calloc(1, sizeof *c);
  if (!c) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: create");
  c->u = u;
  c->efd = -1;
  c->max_peers = (uint32_t)max_peers;
  c->hello_timeout_ns =
      o.connect_timeout_ns ? o.connect_timeout_ns : 10000000000ull;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->out_mu, NULL);
  pthread_mutex_init(&c->drain_mu, NULL);
  pthread_mutex_init(&c->exports_mu, NULL);
  pthread_mutex_init(&c->links_mu, NULL);
  pthread_mutex_init(&c->failq_mu, NULL);
  cond_init(&c->cv);
  if (name) {
    copy_name(c->name, sizeof c->name, name);
  } else {
    char host[40] = "host";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    snprintf(c->name, sizeof c->name, "%s:%ld", host, (long)getpid());
  }
  if (token) {
    c->token_size = strlen(token);
    memcpy(c->token, token, c->token_size);
  }
  c->spin_us = o.spin_us;
  if (c->spin_us == UINT32_MAX) {
    /* Spinning on one CPU only keeps the thread being waited for off it:
     * there a wait sleeps on the worker's event descriptor at once. */
    int cpus[2];
    const char *e = getenv("RK_CLUSTER_SPIN_US");
    c->spin_us = e && *e ? (uint32_t)strtoul(e, NULL, 10)
                 : rk__allowed_cpus(cpus, 2) < 2 ? 0
                                                 : 100;
  }
  const char *direct_env = getenv("RK_CLUSTER_DIRECT");
  c->direct = !(direct_env && strcmp(direct_env, "0") == 0);
  c->handle_cap = 64;
  c->handles = calloc(c->handle_cap, sizeof *c->handles);
  rk_status_t s = c->handles ? RK_OK : RK_ERR_OUT_OF_MEMORY;

  ucp_config_t *config = NULL;
  ucs_status_t st = UCS_OK;
  if (s == RK_OK) {
    st = u->ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) s = rk__ucs_fail(st, "cluster: read UCX configuration");
  }
  if (s == RK_OK) {
    ucp_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    p.mt_workers_shared = 1;
    st = u->ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, config,
                             &c->context);
    u->ucp_config_release(config);
    if (st != UCS_OK) s = rk__ucs_fail(st, "cluster: UCX init");
  }
  if (s == RK_OK) {
    st = make_worker(c, &c->worker);
    if (st != UCS_OK) s = rk__ucs_fail(st, "cluster: UCX worker");
  }
  if (s == RK_OK) {
    ucp_worker_attr_t wa;
    memset(&wa, 0, sizeof wa);
    wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    st = u->ucp_worker_query(c->worker, &wa);
    if (st == UCS_OK && wa.thread_mode != UCS_THREAD_MODE_MULTI)
      s = rk__fail(RK_ERR_UNAVAILABLE,
                   "cluster: this UCX build has no multi-thread support "
                   "(configure UCX with --enable-mt)");
  }
  int ctrl_efd = -1;
  if (s == RK_OK) {
    st = u->ucp_worker_get_efd(c->worker, &ctrl_efd);
    if (st != UCS_OK) s = rk__ucs_fail(st, "cluster: UCX event fd");
  }
  if (s == RK_OK) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    c->efd = epoll_create1(EPOLL_CLOEXEC);
    if (c->efd < 0 || epoll_ctl(c->efd, EPOLL_CTL_ADD, ctrl_efd, &ev) != 0)
      s = rk__fail(RK_ERR_UNAVAILABLE, "cluster: epoll: %s", strerror(errno));
  }
  if (s == RK_OK) {
    st = u->ucp_worker_get_address(c->worker, &c->waddr, &c->waddr_size);
    if (st != UCS_OK)
      s = rk__ucs_fail(st, "cluster: UCX worker address");
    else if (c->waddr_size > RK_WIRE_ADDRESS_MAX)
      c->waddr_size = 0; /* too long to send: one endpoint per peer */
  }
  if (s == RK_OK) {
    c->rx.c = c;
    c->rx.w = c->worker;
    s = set_handlers(c, c->worker, &c->rx);
  }
  if (s == RK_OK) {
    s = rk__actor_destroy_hook_add(on_actor_destroy, c);
    c->hooked = s == RK_OK;
  }
  if (s == RK_OK) {
    s = rk__actor_failed_hook_add(on_local_failed, c);
    c->failed_hooked = s == RK_OK;
  }
  if (s == RK_OK && listen_at) s = start_listener(c, listen_at);
  if (s == RK_OK && pthread_create(&c->progress, NULL, progress_main, c) != 0)
    s = rk__fail(RK_ERR_INTERNAL, "cluster: cannot start the progress thread");
  if (s == RK_OK && use_mpi) s = mpi_join(c, name != NULL);
  if (s == RK_OK && connect_to)
    s = join(c, connect_to,
             o.connect_timeout_ns ? o.connect_timeout_ns : 10000000000ull);
  if (s != RK_OK) {
    char *saved = rk__error_save();
    rk_cluster_destroy(c);
    rk__error_restore(saved);
    return s;
  }
  *out = c;
  return RK_OK;
}

rk_status_t rk_cluster_address(const rk_cluster_t *c, char *buffer,
                               size_t capacity) {
  if (!c->listener)
    return rk__fail(RK_ERR_NOT_FOUND, "cluster: '%s' does not listen", c->name);
  snprintf(buffer, capacity, "%s", c->address);
  return RK_OK;
}

const char *rk_cluster_name(const rk_cluster_t *c) { return c->name; }

size_t rk_cluster_peer_count(rk_cluster_t *c) {
  size_t n = 0;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < c->peer_count; ++i)
    n += atomic_load(&c->peers[i].state) == P_UP;
  pthread_mutex_unlock(&c->mu);
  return n;
}

rk_status_t rk_cluster_wait_peers(rk_cluster_t *c, size_t count,
                                  uint64_t timeout_ns) {
  uint64_t deadline = deadline_after(timeout_ns);
  for (;;) {
    size_t n = rk_cluster_peer_count(c);
    if (n >= count) return RK_OK;
    if (rk__now_ns() >= deadline)
      return rk__fail(RK_ERR_TIMEOUT, "cluster: %zu of %zu peers joined", n,
                      count);
    pthread_mutex_lock(&c->mu);
    cond_wait_until(&c->cv, &c->mu, deadline, 50000000);
    pthread_mutex_unlock(&c->mu);
  }
}

/* ---- export ------------------------------------------------------------ */

rk_status_t rk_cluster_export(rk_cluster_t *c, rk_actor_t *actor,
                              const char *name) {
  /* On top of the registry: no actor means the one registered as `name`,
   * no name the actor's registered one. */
  char registered[RK_ACTOR_NAME_MAX + 1];
  if (rk__actor_remote(actor)) return rk__proxy_refuse(actor, "cluster_export");
  if (c && !actor && name) {
    if (rk_actor_lookup(name, &actor) != RK_OK)
      return rk__fail(RK_ERR_NOT_FOUND, "cluster: export: %s", rk_last_error());
  } else if (c && actor && !name) {
    if (rk_actor_name(actor, registered, sizeof registered) != RK_OK)
      return rk__fail(RK_ERR_NOT_FOUND,
                      "cluster: export without a name needs an actor "
                      "registered by name (rk_actor_register)");
    name = registered;
  }
  if (!c || !actor || !name || !*name || strlen(name) >= RK_WIRE_ACTOR_NAME_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: export needs an actor and a name of 1 to %d "
                    "bytes",
                    RK_WIRE_ACTOR_NAME_MAX - 1);
  rk_actor_stats_t st;
  RK_RETURN_IF_ERROR(rk_actor_stats(actor, &st));
  export_t *e = calloc(1, sizeof *e);
  if (!e) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: export");
  e->c = c;
  copy_name(e->name, sizeof e->name, name);
  e->actor = actor;
  e->request_size = st.request_size;
  e->response_size = st.response_size;
  e->window = (uint32_t)st.input_capacity;
  /* A sender waits for room once its window is full: return it in
   * quarters (at most 32 messages an answer), and what is left at the end
   * of each turn. */
  e->credit_every = e->window / 4 < 1    ? 1
                    : e->window / 4 > 32 ? 32
                                         : e->window / 4;
  /* The received responses, then their records (e->bbuf, in the same
   * block: freed with buf): RESPS of up to BATCH_BYTES when two records
   * fit, else one record each. */
  const size_t fsize = (FORWARD_BATCH * e->response_size + 8) & ~(size_t)7;
  e->batching = 2 * resp_record(e) <= BATCH_BYTES;
  e->bcap = FORWARD_BATCH * resp_stride(e);
  const size_t gsize =
      2 * (sizeof(rk_wire_req_t) + e->request_size) <= BATCH_BYTES
          ? GATHER_MAX * e->request_size
          : 0;
  /* The lane beside the rings (direct_in), for messages of up to
   * DIRECT_BYTES_MAX: its slots and its answer, 8-byte aligned. */
  const size_t dreq = rk_abi_slot_size((uint32_t)e->request_size),
               dresp = rk_abi_slot_size((uint32_t)e->response_size);
  const size_t dsize = c->direct && e->request_size <= DIRECT_BYTES_MAX &&
                               e->response_size <= DIRECT_BYTES_MAX
                           ? DIRECT_MAX * dreq + dresp + resp_record(e)
                           : 0;
  const size_t gat = fsize + e->bcap;
  const size_t dat = (gat + gsize + 7) & ~(size_t)7;
  e->buf = malloc(dat + dsize);
  if (e->buf) e->bbuf = e->buf + fsize;
  if (e->buf && gsize) e->gather = e->buf + gat;
  if (e->buf && dsize) {
    e->dslot = dreq;
    e->dreq = e->buf + dat;
    e->dresp = e->dreq + DIRECT_MAX * dreq;
    e->dans = e->dresp + dresp;
  }
  if (!e->buf) {
    free(e);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: export");
  }
  /* Not yet activated: remote ports get a link into its K2K inbox (as
   * rk_actor_connect, which wires actors before activation). An actor
   * that cannot take one (traditional, a resident GPU kernel, an inbox
   * with no room for another sender) takes them in its input ring. */
  bool taken = false;
  char other[RK_WIRE_ACTOR_NAME_MAX] = "";
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS && !taken; ++i) {
    taken = c->exports[i] && !strcmp(c->exports[i]->name, name);
    if (c->exports[i] && c->exports[i]->actor == actor && !other[0])
      copy_name(other, sizeof other, c->exports[i]->name);
  }
  pthread_mutex_unlock(&c->mu);
  if (!taken && other[0]) {
    /* Each export's forwarder takes the actor's responses and answers the
     * requests it routed: a second would take the first's answers and
     * drop them. */
    free(e->buf);
    free(e);
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster: this actor is already exported as '%s' (one "
                    "name per actor; rk_cluster_unexport it first)",
                    other);
  }
  /* Remote ports' messages into its K2K inbox: a new sender there, wired
   * as rk_actor_connect wires one (the actor not active, nor its other
   * senders, and its inbox empty); otherwise into its input ring. */
  const rk_actor_state_t ast = rk_actor_state(actor);
  if (!taken && (ast == RK_ACTOR_LAUNCHED || ast == RK_ACTOR_DEACTIVATED) &&
      rk__actor_mode(actor) == RK_ACTOR_PERSISTENT) {
    char *saved = rk__error_save();
    if (rk__k2k_ingress_create(actor, &e->ingress) != RK_OK) e->ingress = NULL;
    rk__error_restore(saved);
  }
  pthread_mutex_init(&e->mu, NULL);
  pthread_mutex_lock(&c->mu);
  uint32_t slot = MAX_EXPORTS;
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i) {
    if (c->exports[i] &&
        (!strcmp(c->exports[i]->name, name) || c->exports[i]->actor == actor)) {
      pthread_mutex_unlock(&c->mu);
      pthread_mutex_destroy(&e->mu);
      rk__k2k_release(e->ingress);
      free(e->buf);
      free(e);
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "cluster: '%s' is already exported by '%s'", name,
                      c->name);
    }
    if (!c->exports[i] && slot == MAX_EXPORTS) slot = i;
  }
  if (slot == MAX_EXPORTS) {
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_destroy(&e->mu);
    rk__k2k_release(e->ingress);
    free(e->buf);
    free(e);
    return rk__fail(RK_ERR_OUT_OF_RANGE, "cluster: more than %d exports",
                    MAX_EXPORTS);
  }
  e->id = slot | (++c->export_gen << 16);
  c->exports[slot] = e;
  pthread_mutex_unlock(&c->mu);
  /* Lock order: exports_mu, the worker's lock, c->mu, an export's or a
   * handle's mu. */
  pthread_mutex_lock(&c->exports_mu);
  c->export_list[c->export_count] = e;
  __atomic_store_n(&c->export_count, c->export_count + 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&c->exports_mu);
  /* Its requests come through the progress thread, which spins after each
   * one: a worker spinning beside it on the same CPUs only delays both --
   * unless the worker drives the transport itself while idle (a CPU
   * worker takes the offer; then it spins, and the progress thread stands
   * aside). */
  rk__actor_park_when_idle(actor, true);
  pthread_mutex_lock(&c->mu);
  if (c->exports[slot] == e) offer_drive(e);
  pthread_mutex_unlock(&c->mu);
  return RK_OK;
}

rk_status_t rk_cluster_unexport(rk_cluster_t *c, const char *name) {
  pthread_mutex_lock(&c->mu);
  export_t *e = NULL;
  for (uint32_t i = 0; i < MAX_EXPORTS && !e; ++i)
    if (c->exports[i] && !strcmp(c->exports[i]->name, name)) {
      e = c->exports[i];
      c->exports[i] = NULL;
      pthread_mutex_lock(&e->mu);
      e->unlisted = true;
      pthread_mutex_unlock(&e->mu);
    }
  pthread_mutex_unlock(&c->mu);
  if (!e)
    return rk__fail(RK_ERR_NOT_FOUND, "cluster: nothing is exported as '%s'",
                    name);
  withdraw_drive(c, e);
  unlist_export(c, e);
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->ninlinks;)
    if (c->inlinks[i].export_id == e->id)
      c->inlinks[i] = c->inlinks[--c->ninlinks];
    else
      ++i;
  pthread_mutex_unlock(&c->links_mu);
  /* Requests taken in and not answered: their callers hear it now. */
  pthread_mutex_lock(&e->mu);
  for (size_t i = 0; i < e->route_count; ++i) {
    route_t *r = route_at(e, i);
    if (r->done) continue;
    rk_wire_req_t h = {.from = r->peer,
                       .handle = r->handle,
                       .handle_gen = r->handle_gen,
                       .request_id = r->request_id};
    refuse(c, &h, RK_ERR_INVALID_STATE, RK_ACTOR_TERMINATED,
           "the actor was unexported before it answered");
  }
  for (pending_req_t *q = e->pending; q; q = q->next)
    refuse(c, &q->h, RK_ERR_INVALID_STATE, RK_ACTOR_TERMINATED,
           "the actor was unexported before it took the request");
  for (pending_req_t *q = e->ipending; q; q = q->next)
    refuse(c, &q->h, RK_ERR_INVALID_STATE, RK_ACTOR_TERMINATED,
           "the actor was unexported before it took the message");
  pthread_mutex_unlock(&e->mu);
  rk__actor_park_when_idle(e->actor, false);
  free_export(c, e);
  return RK_OK;
}

/* ---- lookup ------------------------------------------------------------ */

rk_status_t rk_cluster_lookup(rk_cluster_t *c, const char *name,
                              uint64_t timeout_ns, rk_remote_actor_t **out) {
  if (!name || !*name || strlen(name) >= RK_WIRE_ACTOR_NAME_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cluster: bad actor name");
  lookup_t *l = calloc(1, sizeof *l);
  if (!l) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: lookup");
  rk_wire_lookup_t q;
  memset(&q, 0, sizeof q);
  copy_name(q.name, sizeof q.name, name);
  pthread_mutex_lock(&c->mu);
  l->id = ++c->next_lookup;
  q.lookup_id = l->id;
  /* Who is asked, kept here: a peer that fails meanwhile is struck off
   * l->asked (release_lookups_of, under c->mu) while the questions go. */
  uint32_t to[MAX_PEERS], from[MAX_PEERS];
  uint32_t asked = 0;
  for (uint32_t i = 0; i < c->peer_count; ++i)
    if (atomic_load(&c->peers[i].state) == P_UP) {
      l->asked[i] = true;
      from[asked] = c->peers[i].remote;
      to[asked++] = c->peers[i].id;
    }
  l->waiting = asked;
  l->next = c->lookups;
  c->lookups = l;
  pthread_mutex_unlock(&c->mu);
  rk_status_t s = RK_OK;
  if (!asked)
    s = rk__fail(RK_ERR_UNAVAILABLE,
                 "cluster: '%s' has no peers to look '%s' up in", c->name,
                 name);
  for (uint32_t k = 0; s == RK_OK && k < asked; ++k) {
    q.from = from[k];
    char *saved = rk__error_save();
    (void)post(c, to[k], RK_AM_LOOKUP, NULL, 0, &q, sizeof q, false);
    rk__error_restore(saved);
  }
  uint64_t deadline = deadline_after(timeout_ns);
  pthread_mutex_lock(&c->mu);
  while (s == RK_OK && !l->found && l->waiting && rk__now_ns() < deadline)
    cond_wait_until(&c->cv, &c->mu, deadline, 50000000);
  lookup_t **pp = &c->lookups;
  while (*pp != l) pp = &(*pp)->next;
  *pp = l->next;
  rk_remote_actor_t *h = NULL;
  if (s == RK_OK && l->found) {
    /* Aligned for rbias's lines. */
    const size_t hsize = (sizeof *h + _Alignof(rk_remote_actor_t) - 1) &
                         ~(_Alignof(rk_remote_actor_t) - 1);
    h = aligned_alloc(_Alignof(rk_remote_actor_t), hsize);
    if (h) {
      memset(h, 0, hsize);
      rk__bias_init(&h->rbias);
    }
    uint32_t slot = c->handle_cap;
    for (uint32_t i = 0; h && i < c->handle_cap; ++i)
      if (!c->handles[i]) {
        slot = i;
        break;
      }
    if (h && slot == c->handle_cap) {
      rk_remote_actor_t **g =
          realloc(c->handles, 2 * c->handle_cap * sizeof *g);
      if (g) {
        memset(g + c->handle_cap, 0, c->handle_cap * sizeof *g);
        c->handles = g;
        c->handle_cap *= 2;
      } else {
        free(h);
        h = NULL;
      }
    }
    if (!h) {
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster: lookup");
    } else {
      h->c = c;
      h->slot = slot;
      h->gen = ++c->handle_gen;
      h->peer = l->peer;
      const peer_t *owner = peer_by_id(c, l->peer);
      copy_name(h->peer_name, sizeof h->peer_name,
                owner ? owner->name : "(gone)");
      h->export_id = l->reply.export_id;
      h->request_size = l->reply.request_size;
      h->response_size = l->reply.response_size;
      h->window = l->reply.window ? l->reply.window : 1;
      copy_name(h->name, sizeof h->name, name);
      out_buffers(h);
      /* Room for an answer (a refusal's longer reason is allocated). */
      h->aroom = h->response_size > ANSWER_POOL_MAX
                     ? 0
                     : (h->response_size + 7) & ~(size_t)7;
      pthread_mutex_init(&h->send_mu, NULL);
      h->state = RK_ACTOR_ACTIVE;
      c->handles[slot] = h;
    }
  } else if (s == RK_OK && l->waiting) {
    s = rk__fail(RK_ERR_TIMEOUT,
                 "cluster: lookup of '%s': %u of %u peers did not answer "
                 "within %.3f s",
                 name, l->waiting, asked, (double)timeout_ns / 1e9);
  } else if (s == RK_OK) {
    rk__strbuf_t names;
    rk__strbuf_init(&names);
    for (uint32_t i = 0; i < c->peer_count; ++i)
      if (atomic_load(&c->peers[i].state) == P_UP)
        rk__strbuf_printf(&names, "%s'%s'", names.data ? ", " : "",
                          c->peers[i].name);
    s = rk__fail(RK_ERR_NOT_FOUND,
                 "cluster: no peer exports an actor named '%s' (asked: %s)%s%s",
                 name, names.data ? names.data : "none left",
                 l->note[0] ? "; " : "", l->note);
    rk__strbuf_free(&names);
  }
  pthread_mutex_unlock(&c->mu);
  free(l);
  if (s == RK_OK) *out = h;
  return s;
}

/* ---- remote handles ---------------------------------------------------- */

/* The handle's state: its own once stopped, else its owner's. A member
 * that fails or leaves stops every handle to its actors at one instant
 * (its peer state), before peer_down has visited each. */
static rk_actor_state_t state_of(const rk_remote_actor_t *h,
                                 const char **out_cause) {
  int s = atomic_load(&h->state);
  if (s == RK_ACTOR_FAILED || s == RK_ACTOR_TERMINATED) {
    if (out_cause) *out_cause = h->cause;
    return (rk_actor_state_t)s;
  }
  const peer_t *p = &h->c->peers[PEER_SLOT(h->peer)];
  if (__atomic_load_n(&p->id, __ATOMIC_RELAXED) != h->peer) {
    /* Its slot freed since: the peer stopped every handle to it before
     * (peer_down), so this one's own state says. */
    if (out_cause) *out_cause = h->cause;
    s = atomic_load(&h->state);
    return s == RK_ACTOR_TERMINATED ? RK_ACTOR_TERMINATED : RK_ACTOR_FAILED;
  }
  int ps = atomic_load(&p->state);
  if (ps == P_FAILED || ps == P_LEFT) {
    if (out_cause) *out_cause = p->cause;
    return ps == P_FAILED ? RK_ACTOR_FAILED : RK_ACTOR_TERMINATED;
  }
  return (rk_actor_state_t)s;
}

static bool stopped(const rk_remote_actor_t *h) {
  rk_actor_state_t s = state_of(h, NULL);
  return s == RK_ACTOR_FAILED || s == RK_ACTOR_TERMINATED;
}

static rk_status_t stopped_error(rk_remote_actor_t *h, const char *what) {
  const char *cause = "";
  rk_actor_state_t s = state_of(h, &cause);
  const peer_t *p = &h->c->peers[PEER_SLOT(h->peer)];
  if (cause == p->cause)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "remote actor: %s: member '%s' %s: %s (%s)", what, p->name,
                    s == RK_ACTOR_FAILED ? "failed" : "left the cluster", cause,
                    rk_actor_state_name(s));
  return rk__fail(RK_ERR_INVALID_STATE, "remote actor: %s: %s (%s)", what,
                  cause, rk_actor_state_name(s));
}

typedef bool (*ready_fn)(rk_remote_actor_t *h, void *arg);

/* Called with h->mu held; returns with it held. RK_OK when ready(), else
 * RK_ERR_TIMEOUT at the deadline or RK_ERR_INVALID_STATE (unless
 * ignore_stop) when the handle stops. Spins driving the worker first. */
/* How long a wait drives the worker before it looks whether the machine
 * is crowded (a remote call to a traditional actor is answered within
 * it over TCP loopback). */
#define HWAIT_CROWD_AFTER_NS 20000ull

/* The longest a waiting caller sleeps on the worker's event descriptor
 * before it looks again (a wake-up it was not sent costs at most this). */
#define HWAIT_POLL_CAP_NS 1000000ull

/* One sleep of a waiting caller on the worker's event descriptor (armed
 * first; nothing to sleep for when UCX has work waiting or the cluster has
 * sends or faults to handle), then a turn of the worker. Never with a lock
 * held. */
static void sleep_on_worker(rk_cluster_t *c, uint64_t deadline) {
  if (arm_workers(c) && !atomic_load(&c->out_any) &&
      !atomic_load(&c->links_due) && !atomic_load(&c->broken_any)) {
    /* poll's milliseconds: within the last one before the deadline it
     * does not sleep (the caller drives until then). */
    const uint64_t now = rk__now_ns();
    if (deadline > now && deadline - now >= HWAIT_POLL_CAP_NS) {
      struct pollfd pfd = {.fd = c->efd, .events = POLLIN};
      (void)poll(&pfd, 1, (int)(HWAIT_POLL_CAP_NS / 1000000u));
    }
  }
  pump(c);
  forward_all(c);
}

/* A waiting caller that shares a CPU with the thread that answers it
 * (both spinning: the owner's actor worker, say) gets each answer only
 * when the scheduler switches between them, a few hundred microseconds,
 * until it moves one of them to an idle CPU, which on a 2-CPU VM has
 * taken up to 40 ms. So a thread whose waits keep taking over
 * HWAIT_LATE_NS while the machine is not crowded moves itself off its
 * CPU (at most once per HWAIT_MOVE_EVERY_NS). */
#define HWAIT_LATE_NS 50000ull
#define HWAIT_LATE_WAITS 3
#define HWAIT_MOVE_EVERY_NS 10000000ull

static void late_answer(uint64_t waited, int crowded) {
  static _Thread_local uint32_t late;
  static _Thread_local uint64_t moved_at;
  if (waited < HWAIT_LATE_NS || crowded == 1) {
    late = 0;
    return;
  }
  if (++late < HWAIT_LATE_WAITS) return;
  late = 0;
  const uint64_t now = rk__now_ns();
  if (moved_at && now - moved_at < HWAIT_MOVE_EVERY_NS) return;
  if (rk__machine_crowded()) return;
  moved_at = now;
  (void)rk__move_off_cpu();
}

static bool has_credit(rk_remote_actor_t *h, void *arg);
static rk_status_t hwait(rk_remote_actor_t *h, ready_fn ready, void *arg,
                         wait_limit_t *limit) {
  rk_cluster_t *c = h->c;
  if (ready(h, arg)) return RK_OK;
  if (h->nbuf) {
    /* Nobody waits on requests of its own still in the buffer. */
    rk__short_unlock(&h->mu);
    out_flush(h);
    rk__short_lock(&h->mu);
    if (ready(h, arg)) return RK_OK;
  }
  const uint64_t start = rk__now_ns();
  if (!limit->deadline) limit->deadline = deadline_at(start, limit->timeout_ns);
  const uint64_t deadline = limit->deadline;
  const uint64_t spin_end = start + (uint64_t)c->spin_us * 1000u;
  atomic_fetch_add(&c->drivers, 1);
  /* An answer that takes long (a persistent actor's worker on the owner's
   * side must get a CPU) on a machine with more runnable threads than
   * CPUs: the caller then yields as it drives, rather than hold its CPU
   * for the whole spin. Looked at once per wait. */
  int crowded = -1;
  uint64_t now = start;
  rk_remote_actor_t *const waiting_before = t_waiting_on;
  t_waiting_on = h;
  for (unsigned k = 1; c->spin_us && !ready(h, arg) && !stopped(h); ++k) {
    /* The clock every fourth turn (the first turns go by `start`): an
     * idle turn of the workers takes less than a reading of it on some
     * machines. */
    if ((k & 3) == 0 && (now = rk__now_ns()) >= spin_end) break;
    if (now >= deadline) break;
    rk__short_unlock(&h->mu);
    pump_as(c, true);
    forward_all(c);
    if (crowded < 0 && now - start >= HWAIT_CROWD_AFTER_NS)
      crowded = rk__machine_crowded();
    if (crowded == 1) sched_yield();

    rk__short_lock(&h->mu);
  }
  /* Then asleep on the worker's event descriptor, still a driver: the
   * answer's arrival wakes this thread itself, not the progress thread
   * that would then have to wake it. Not while requests are in this
   * process's exported actors or bridges wait (their answers and messages
   * signal no descriptor: the progress thread looks after them). */
  bool slept = false;
  if (c->efd >= 0 && !ready(h, arg) && !stopped(h) && rk__now_ns() < deadline) {
    atomic_fetch_add(&c->efd_sleepers, 1);
    /* Window room comes back without mu too (a receive without it): such
     * a receive stores its count, then reads efd_sleepers behind a light
     * fence; this thread counts itself, then reads the count behind the
     * heavy one (base/ring.h). */
    if (ready == has_credit) rk__ring_fence_heavy();
    while (!ready(h, arg) && !stopped(h) && rk__now_ns() < deadline &&
           !atomic_load(&c->in_flight) && !atomic_load(&c->nbridges)) {
      rk__short_unlock(&h->mu);
      sleep_on_worker(c, deadline);
      slept = true;
      rk__short_lock(&h->mu);
    }
    atomic_fetch_sub(&c->efd_sleepers, 1);
  }
  t_waiting_on = waiting_before;
  /* Giving up driving without the answer: the progress thread takes over
   * now, not at its next look, and does not linger aside while this
   * thread sleeps (counted before it stops driving). */
  const bool answered = ready(h, arg);
  if (!answered) atomic_fetch_add(&c->sleepers, 1);
  atomic_fetch_sub(&c->drivers, 1);
  if (answered) {
    /* Answered while spinning: the last reading (at most three turns
     * old) tells a late answer (HWAIT_LATE_NS) well enough. */
    late_answer((slept ? rk__now_ns() : now) - start, crowded);
    return RK_OK;
  }
  wake_aside(c);
  rk_status_t s;
  for (;;) {
    if (ready(h, arg)) {
      s = RK_OK;
      break;
    }
    if (stopped(h)) {
      s = RK_ERR_INVALID_STATE;
      break;
    }
    if (rk__now_ns() >= deadline) {
      s = RK_ERR_TIMEOUT;
      break;
    }
    /* Read under mu: a change made after the release moves it, and its
     * maker, under mu, sees this thread counted. */
    const uint32_t seq = __atomic_load_n(&h->wake, __ATOMIC_RELAXED);
    __atomic_store_n(&h->sleepers, h->sleepers + 1, __ATOMIC_RELAXED);
    rk__short_unlock(&h->mu);
    bool came = false;
    if (ready == has_credit) {
      /* Counted, then a look again behind the heavy fence (as above). */
      rk__ring_fence_heavy();
      rk__short_lock(&h->mu);
      came = ready(h, arg);
      rk__short_unlock(&h->mu);
    }
    const uint64_t now = rk__now_ns();
    if (!came && now < deadline)
      rk__wait_while_equal(
          &h->wake, seq,
          deadline - now < 100000000u ? deadline - now : 100000000u);
    rk__short_lock(&h->mu);
    __atomic_store_n(&h->sleepers, h->sleepers - 1, __ATOMIC_RELAXED);
  }
  atomic_fetch_sub(&c->sleepers, 1);
  return s;
}

static bool has_credit(rk_remote_actor_t *h, void *arg) {
  (void)arg;
  fold_taken(h);
  return h->outstanding < h->window;
}

/* One request on the handle, waiting for window room up to the limit.
 * Its correlation id is fixed_id when not 0 (one of a batch's, taken
 * before), else the handle's next. */
static rk_status_t post_request(rk_remote_actor_t *h, const void *request,
                                size_t size, wait_limit_t *limit,
                                uint64_t fixed_id, uint64_t *out_id,
                                waiter_t *w) {
  rk_cluster_t *c = h->c;
  if (size != h->request_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "remote actor: request of %zu bytes; the handler takes "
                    "%zu",
                    size, h->request_size);
  rk__short_lock(&h->mu);
  if (stopped(h)) {
    rk_status_t s = stopped_error(h, "send refused");
    h->dropped++;
    rk__short_unlock(&h->mu);
    return s;
  }
  rk_status_t s = hwait(h, has_credit, NULL, limit);
  if (s != RK_OK) {
    if (s == RK_ERR_TIMEOUT)
      s = rk__fail(RK_ERR_QUEUE_FULL,
                   "remote actor: %u requests outstanding (its window) and "
                   "none answered and received in time",
                   h->window);
    else
      s = stopped_error(h, "send refused");
    h->dropped++;
    rk__short_unlock(&h->mu);
    return s;
  }
  const uint64_t id = fixed_id ? fixed_id : ++h->next_id;
  h->outstanding++;
  h->sent++; /* taken back if the post fails */
  if (w) {
    w->id = id;
    w->next = h->waiters;
    h->waiters = w;
  }
  /* A full buffer (another thread's send filled it and is posting it)
   * takes nothing more: this one goes after it, below. */
  const bool buffer = !w && h->bmax && h->nbuf < h->bmax &&
                      (h->nbuf || h->unanswered >= h->coalesce_at);
  /* A buffered request's header is written in place (8-byte aligned). */
  rk_wire_req_t mine;
  rk_wire_req_t *rp =
      buffer ? (rk_wire_req_t *)(void *)(h->obuf + h->nbuf * h->stride) : &mine;
  rp->from = c->peers[PEER_SLOT(h->peer)].remote;
  rp->handle = h->slot;
  rp->handle_gen = h->gen;
  rp->export_id = h->export_id;
  rp->request_id = id;
  rp->timestamp = rk__hlc_host_tick();
  rp->flags = h->discard ? RK_WIRE_REQ_NO_DATA : 0u;
  rp->reserved = 0;
  if (buffer) {
    /* Enough on their way: this one waits in the buffer for others. */
    memcpy(rp + 1, request, size);
    h->nbuf++;
    const bool go = h->nbuf >= h->bmax || h->unanswered < h->coalesce_at;
    rk__short_unlock(&h->mu);
    if (go) out_flush(h);
    if (out_id) *out_id = id;
    return RK_OK;
  }
  /* Buffered requests (or a buffer being posted) go first. */
  const bool behind = h->nbuf || atomic_load(&h->flushing);
  h->unanswered++;
  rk__short_unlock(&h->mu);
  if (behind) {
    pthread_mutex_lock(&h->send_mu);
    out_flush_locked(h);
  }
  s = post(c, h->peer, RK_AM_REQ, &mine, sizeof mine, request, size, false);
  if (behind) pthread_mutex_unlock(&h->send_mu);
  if (s != RK_OK) {
    /* A send that failed broke the peer: its fate (left or failed) is
     * known within the grace, and the caller is told that, not the
     * transport's error. */
    settle(c, &c->peers[PEER_SLOT(h->peer)]);
    rk__short_lock(&h->mu);
    h->outstanding--;
    if (h->unanswered) h->unanswered--;
    if (w) {
      waiter_t **pp = &h->waiters;
      while (*pp != w) pp = &(*pp)->next;
      *pp = w->next;
    }
    if (stopped(h)) s = stopped_error(h, "send refused");
    h->sent--;
    h->dropped++;
    rk__short_unlock(&h->mu);
    return s;
  }
  if (out_id) *out_id = id;
  return RK_OK;
}

rk_status_t rk_remote_actor_send(rk_remote_actor_t *h, const void *request,
                                 size_t size, uint64_t timeout_ns,
                                 uint64_t *out_id) {
  wait_limit_t limit = limit_lazy(timeout_ns);
  return post_request(h, request, size, &limit, 0, out_id, NULL);
}

static rk_status_t answer_status(rk_status_t s, const rk_actor_message_t *info,
                                 const char *text) {
  if (s == RK_OK) return RK_OK;
  if (s == RK_ERR_HANDLER)
    return rk__fail(RK_ERR_HANDLER,
                    "remote actor: the handler returned %d for request %llu",
                    (int)info->handler_code,
                    (unsigned long long)info->correlation_id);
  return rk__fail(s, "remote actor: request %llu was refused %s",
                  (unsigned long long)info->correlation_id, text);
}

/* Under mu, by the receiving role's holder (see rk_remote_actor_t). */
static bool has_answer(rk_remote_actor_t *h, void *arg) {
  (void)arg;
  return h->cq != NULL || h->rq != NULL;
}

/* Under mu, by the receiving role's holder: the blocks it is done with
 * back to spare, and when cq is empty rq's answers into it. */
static void take_in(rk_remote_actor_t *h) {
  while (h->cfree) {
    answer_t *a = h->cfree;
    h->cfree = a->next;
    if (h->nspare < h->window) {
      a->next = h->spare;
      h->spare = a;
      h->nspare++;
    } else {
      free(a); /* a small block: the allocator's thread cache */
    }
  }
  h->ncfree = 0;
  if (!h->cq && h->rq) {
    h->cq = h->rq;
    __atomic_store_n(&h->ncq, h->nrq, __ATOMIC_RELAXED);
    h->rq = h->rq_tail = NULL;
    h->nrq = 0;
  }
}

/* The common receive without mu: an answer of the handle's answer room,
 * OK, in cq, taken by the receiving role's owner. False (nothing done)
 * otherwise. */
static bool receive_alone(rk_remote_actor_t *h, void *response, size_t capacity,
                          rk_actor_message_t *out_info) {
  if (!rk__bias_enter(&h->rbias)) {
    rk__bias_share(&h->rbias); /* the shared path from now on */
    return false;
  }
  answer_t *a = h->cq;
  if (!a || !a->pooled || a->status != RK_OK) {
    rk__bias_leave(&h->rbias);
    return false;
  }
  h->cq = a->next;
  __atomic_store_n(&h->ncq, h->ncq - 1, __ATOMIC_RELAXED);
  if (out_info) *out_info = a->info;
  memcpy(response, a->data, a->size < capacity ? a->size : capacity);
  /* Back to spare at the next take_in; no more than spare keeps. */
  answer_t *spent = a;
  if (h->ncfree < h->window) {
    a->next = h->cfree;
    h->cfree = a;
    h->ncfree++;
    spent = NULL;
  }
  /* Its window room, folded into outstanding by whoever next holds mu. */
  __atomic_store_n(&h->rtaken, h->rtaken + 1, __ATOMIC_RELEASE);
  rk__bias_leave(&h->rbias);
  free(spent);
  /* A sender asleep for window room counted itself, then looked at
   * rtaken behind the heavy fence (hwait): either it sees this answer's
   * room or this sees it. */
  rk__ring_fence_light();
  rk_cluster_t *c = h->c;
  if (__atomic_load_n(&h->sleepers, __ATOMIC_RELAXED) ||
      atomic_load_explicit(&c->efd_sleepers, memory_order_relaxed)) {
    rk__short_lock(&h->mu);
    wake_handle(c, h);
    rk__short_unlock(&h->mu);
  }
  /* Fewer are on their way than make buffering pay: what is buffered
   * goes (out_answered set it due). */
  if (__atomic_load_n(&h->flush_due, __ATOMIC_RELAXED)) out_flush(h);
  return true;
}

rk_status_t rk_remote_actor_receive(rk_remote_actor_t *h, void *response,
                                    size_t capacity, uint64_t timeout_ns,
                                    rk_actor_message_t *out_info) {
  if (capacity < h->response_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "remote actor: capacity %zu is less than the response "
                    "size %zu",
                    capacity, h->response_size);
  if (receive_alone(h, response, capacity, out_info)) return RK_OK;
  if (timeout_ns == 0) pump(h->c); /* never with h->mu held */
  rk__short_lock(&h->mu);
  take_in(h);
  rk_status_t s;
  if (timeout_ns == 0) {
    s = has_answer(h, NULL)
            ? RK_OK
            : (stopped(h) ? RK_ERR_INVALID_STATE : RK_ERR_QUEUE_EMPTY);
  } else {
    wait_limit_t limit = limit_lazy(timeout_ns);
    s = hwait(h, has_answer, NULL, &limit);
  }
  if (s != RK_OK) {
    if (s == RK_ERR_INVALID_STATE)
      s = stopped_error(h, "no response is left and none will come");
    else if (s == RK_ERR_QUEUE_EMPTY)
      s = rk__fail(s, "remote actor: no response waiting");
    else
      s = rk__fail(s, "remote actor: no response within %.3f ms",
                   (double)timeout_ns / 1e6);
    rk__short_unlock(&h->mu);
    return s;
  }
  take_in(h);
  answer_t *a = h->cq;
  h->cq = a->next;
  __atomic_store_n(&h->ncq, h->ncq - 1, __ATOMIC_RELAXED);
  h->outstanding--;
  wake_handle(h->c, h);
  const bool go = h->nbuf && h->unanswered < h->coalesce_at;
  if (a->pooled && a->status == RK_OK) {
    /* Small: copied out here, and the block kept. */
    if (out_info) *out_info = a->info;
    memcpy(response, a->data, a->size < capacity ? a->size : capacity);
    if (h->nspare < h->window) {
      a->next = h->spare;
      h->spare = a;
      h->nspare++;
      a = NULL;
    }
    rk__short_unlock(&h->mu);
    free(a);
    if (go) out_flush(h);
    return RK_OK;
  }
  rk__short_unlock(&h->mu);
  if (go) out_flush(h);
  if (out_info) *out_info = a->info;
  if (a->status == RK_OK) {
    memcpy(response, a->data, a->size < capacity ? a->size : capacity);
    free(a);
    return RK_OK;
  }
  const bool answered = a->status == RK_ERR_HANDLER;
  if (answered)
    memcpy(response, a->data, a->size < capacity ? a->size : capacity);
  char text[TEXT_MAX];
  copy_name(text, sizeof text, answered ? "" : (const char *)a->data);
  rk_actor_message_t info = a->info;
  free(a);
  return answer_status(info.status, &info, text);
}

static bool waiter_done(rk_remote_actor_t *h, void *arg) {
  (void)h;
  return ((waiter_t *)arg)->done;
}

rk_status_t rk_remote_actor_call(rk_remote_actor_t *h, const void *request,
                                 size_t request_size, void *response,
                                 size_t capacity, uint64_t timeout_ns,
                                 rk_actor_message_t *out_info) {
  if (capacity < h->response_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "remote actor: capacity %zu is less than the response "
                    "size %zu",
                    capacity, h->response_size);
  /* One limit for the send's wait and the answer's, from the first wait
   * (no clock read before the request leaves: a send with window room
   * does not wait, and its time then is the post's, well under a
   * microsecond). */
  wait_limit_t limit = limit_lazy(timeout_ns);
  /* Field by field: the refusal's text (TEXT_MAX bytes) is written only
   * with a refusal (answer_in), and read only then (answer_status). */
  waiter_t w;
  w.next = NULL;
  w.id = 0;
  w.buffer = response;
  w.capacity = capacity;
  w.done = false;
  w.status = RK_OK;
  memset(&w.info, 0, sizeof w.info);
  w.text[0] = '\0';
  RK_RETURN_IF_ERROR(
      post_request(h, request, request_size, &limit, 0, NULL, &w));
  rk__short_lock(&h->mu);
  rk_status_t s = hwait(h, waiter_done, &w, &limit);
  waiter_t **pp = &h->waiters;
  while (*pp != &w) pp = &(*pp)->next;
  *pp = w.next;
  if (s == RK_OK) {
    h->outstanding--;
    wake_handle(h->c, h);
  }
  rk__short_unlock(&h->mu);
  if (s == RK_ERR_INVALID_STATE) {
    char what[64];
    snprintf(what, sizeof what, "request %llu was not answered",
             (unsigned long long)w.id);
    return stopped_error(h, what);
  }
  if (s == RK_ERR_TIMEOUT)
    return rk__fail(RK_ERR_TIMEOUT,
                    "remote actor: no answer to request %llu within %.3f ms "
                    "(a late one goes to rk_remote_actor_receive)",
                    (unsigned long long)w.id, (double)timeout_ns / 1e6);
  if (out_info) *out_info = w.info;
  return answer_status(w.status, &w.info, w.text);
}

rk_actor_state_t rk_remote_actor_state(const rk_remote_actor_t *h) {
  return state_of(h, NULL);
}

void rk_remote_actor_info(const rk_remote_actor_t *h, size_t *out_request_size,
                          size_t *out_response_size, uint32_t *out_window,
                          const char **out_peer) {
  if (out_request_size) *out_request_size = h->request_size;
  if (out_response_size) *out_response_size = h->response_size;
  if (out_window) *out_window = h->window;
  if (out_peer) *out_peer = h->peer_name;
}

rk_status_t rk_cluster_link(rk_remote_actor_t *h, rk_actor_t *local) {
  if (!h || !local)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster_link: a remote handle and a local actor are "
                    "required");
  if (rk__actor_remote(local)) return rk__proxy_refuse(local, "cluster_link");
  rk_cluster_t *c = h->c;
  rk_status_t s = RK_OK;
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->nlinks && s == RK_OK; ++i)
    if (c->links[i].h == h && c->links[i].local == local)
      s = rk__fail(RK_ERR_ALREADY_EXISTS, "cluster_link: linked already");
  if (s == RK_OK && c->nlinks == c->caplinks) {
    const uint32_t cap = c->caplinks ? c->caplinks * 2 : 8;
    rlink_t *grown = realloc(c->links, cap * sizeof *grown);
    if (grown) {
      c->links = grown;
      c->caplinks = cap;
    } else {
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "cluster_link");
    }
  }
  link_msg_t *msgs = NULL;
  uint32_t nmsgs = 0;
  if (s == RK_OK) {
    c->links[c->nlinks] = (rlink_t){h, local, ++c->next_link_id};
    /* The owner is told, so that this actor's failure reaches it. */
    (void)link_msg_add(c, &msgs, &nmsgs, &c->links[c->nlinks], RK_AM_LINK,
                       NULL);
    c->nlinks++;
  }
  pthread_mutex_unlock(&c->links_mu);
  if (s == RK_OK) s = rk__supervise_watch(local, true);
  if (s == RK_OK && !stopped(h))
    post_link_msgs(c, msgs, nmsgs);
  else
    free(msgs);
  /* The local actor FAILED already: the owner is told at once (its
   * failure hook has run before the link). */
  if (s == RK_OK && rk_actor_state(local) == RK_ACTOR_FAILED)
    on_local_failed(local, rk__actor_fail_reason(local), c);
  /* The remote one FAILED already: told at once. */
  if (s == RK_OK) tell_links(c);
  return s;
}

rk_status_t rk_cluster_unlink(rk_remote_actor_t *h, rk_actor_t *local) {
  if (!h || !local)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster_unlink: a remote handle and a local actor are "
                    "required");
  rk_cluster_t *c = h->c;
  bool was = false, more = false;
  link_msg_t *msgs = NULL;
  uint32_t nmsgs = 0;
  pthread_mutex_lock(&c->links_mu);
  for (uint32_t i = 0; i < c->nlinks && !was; ++i)
    if (c->links[i].h == h && c->links[i].local == local) {
      (void)link_msg_add(c, &msgs, &nmsgs, &c->links[i], RK_AM_UNLINK, NULL);
      c->links[i] = c->links[--c->nlinks];
      was = true;
    }
  more = has_links(c, local);
  pthread_mutex_unlock(&c->links_mu);
  post_link_msgs(c, msgs, nmsgs);
  if (was && !more) (void)rk__supervise_watch(local, false);
  return was ? RK_OK : rk__fail(RK_ERR_NOT_FOUND, "cluster_unlink: not linked");
}

rk_status_t rk_cluster_connect(rk_actor_t *src, uint32_t port,
                               rk_remote_actor_t *h) {
  if (!src || !h)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster_connect: a local actor and a remote handle are "
                    "required");
  if (rk__actor_remote(src)) return rk__proxy_refuse(src, "cluster_connect");
  rk_cluster_t *c = h->c;
  rk__k2k_t *k = NULL;
  RK_RETURN_IF_ERROR(
      rk__k2k_bridge_create((uint32_t)h->request_size, BRIDGE_CAPACITY, &k));
  pthread_mutex_lock(&c->exports_mu);
  rk_status_t s = RK_OK;
  if (atomic_load(&c->nbridges) == MAX_BRIDGES)
    s = rk__fail(RK_ERR_OUT_OF_RANGE,
                 "cluster_connect: more than %d remote "
                 "ports",
                 MAX_BRIDGES);
  if (s == RK_OK) {
    rk__k2k_t *same[MAX_BRIDGES];
    uint32_t nsame = 0;
    for (uint32_t i = 0; i < atomic_load(&c->nbridges); ++i)
      if (c->bridges[i].h->peer == h->peer &&
          c->bridges[i].h->export_id == h->export_id)
        same[nsame++] = c->bridges[i].k; /* the same remote actor */
    s = rk__k2k_bridge_connect(src, port, k, h->name, same, nsame);
  }
  if (s == RK_OK) {
    rk__short_lock(&h->mu);
    h->discard = true;
    rk__short_unlock(&h->mu);
    c->bridges[atomic_load(&c->nbridges)] = (bridge_t){h, k};
    atomic_fetch_add(&c->nbridges, 1);
  }
  pthread_mutex_unlock(&c->exports_mu);
  if (s != RK_OK) rk__k2k_release(k);
  return s;
}

/* Takes the bridges of handle h (all when h is NULL) away. */
static void drop_bridges(rk_cluster_t *c, const rk_remote_actor_t *h) {
  pthread_mutex_lock(&c->exports_mu);
  for (uint32_t i = 0; i < atomic_load(&c->nbridges);) {
    if (h && c->bridges[i].h != h) {
      ++i;
      continue;
    }
    rk__k2k_release(c->bridges[i].k);
    const uint32_t last = atomic_load(&c->nbridges) - 1;
    c->bridges[i] = c->bridges[last];
    atomic_store(&c->nbridges, last);
  }
  pthread_mutex_unlock(&c->exports_mu);
}

void rk_remote_actor_release(rk_remote_actor_t *h) {
  if (!h) return;
  rk_cluster_t *c = h->c;
  drop_bridges(c, h);
  out_flush(h); /* what was sent goes */
  link_msg_t *msgs = NULL;
  uint32_t nmsgs = 0, nunwatch = 0;
  pthread_mutex_lock(&c->links_mu);
  rk_actor_t **unwatch = c->nlinks ? malloc(c->nlinks * sizeof *unwatch) : NULL;
  for (uint32_t i = 0; i < c->nlinks;)
    if (c->links[i].h == h) {
      (void)link_msg_add(c, &msgs, &nmsgs, &c->links[i], RK_AM_UNLINK, NULL);
      rk_actor_t *local = c->links[i].local;
      c->links[i] = c->links[--c->nlinks];
      /* No remote link left: not watched for the cluster any more. */
      if (unwatch && !has_links(c, local)) unwatch[nunwatch++] = local;
    } else {
      ++i;
    }
  pthread_mutex_unlock(&c->links_mu);
  post_link_msgs(c, msgs, nmsgs);
  for (uint32_t i = 0; i < nunwatch; ++i)
    (void)rk__supervise_watch(unwatch[i], false);
  free(unwatch);
  pthread_mutex_lock(&c->mu);
  c->handles[h->slot] = NULL;
  while (h->pins) { /* a pump posting its buffer */
    pthread_mutex_unlock(&c->mu);
    sched_yield();
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  /* An answer being delivered to it found it before: let it finish. */
  rk__short_lock(&h->mu);
  rk__short_unlock(&h->mu);
  free_handle(h);
}

/* ---- for proxies (cluster_internal.h) ---------------------------------- */

rk_status_t rk__remote_actor_send_batch(rk_remote_actor_t *h,
                                        const void *requests, size_t size,
                                        size_t count, uint64_t timeout_ns,
                                        size_t *out_sent,
                                        uint64_t *out_first_id) {
  *out_sent = 0;
  if (size != h->request_size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "remote actor: requests of %zu bytes; the handler takes "
                    "%zu",
                    size, h->request_size);
  /* The batch's ids first, all at once: consecutive whatever other
   * threads send meanwhile. */
  rk__short_lock(&h->mu);
  const uint64_t first = h->next_id + 1;
  h->next_id += count;
  rk__short_unlock(&h->mu);
  if (out_first_id) *out_first_id = first;
  /* One deadline for the whole batch, from its first wait. */
  wait_limit_t limit = limit_lazy(timeout_ns);
  const unsigned char *p = requests;
  for (size_t i = 0; i < count; ++i) {
    const rk_status_t s =
        post_request(h, p + i * size, size, &limit, first + i, NULL, NULL);
    if (s != RK_OK) {
      /* The ids left over were never sent: counted as dropped (the one
       * that failed is already). */
      rk__short_lock(&h->mu);
      h->dropped += count - i - 1;
      rk__short_unlock(&h->mu);
      return s;
    }
    *out_sent = i + 1;
  }
  return RK_OK;
}

void rk__remote_actor_counts(rk_remote_actor_t *h, uint64_t *out_sent,
                             uint64_t *out_dropped, uint64_t *out_waiting) {
  rk__short_lock(&h->mu);
  *out_sent = h->sent;
  *out_dropped = h->dropped;
  *out_waiting = h->nrq + __atomic_load_n(&h->ncq, __ATOMIC_RELAXED);
  rk__short_unlock(&h->mu);
}

const char *rk__remote_actor_name(const rk_remote_actor_t *h) {
  return h->name;
}

void rk__remote_actor_set_proxy(rk_remote_actor_t *h, rk_actor_t *proxy) {
  h->proxy = proxy;
}

void rk__remote_actor_close(rk_remote_actor_t *h, const char *cause) {
  rk__short_lock(&h->mu);
  const int s = atomic_load(&h->state);
  if (s != RK_ACTOR_FAILED && s != RK_ACTOR_TERMINATED) {
    copy_name(h->cause, sizeof h->cause, cause);
    atomic_store(&h->state, (int)RK_ACTOR_TERMINATED);
  }
  wake_handle(h->c, h);
  rk__short_unlock(&h->mu);
}

/* ---- test hooks (cluster_internal.h) ----------------------------------- */

uint64_t rk__cluster_peers_freed(rk_cluster_t *c) {
  pthread_mutex_lock(&c->mu);
  const uint64_t n = c->peers_freed;
  pthread_mutex_unlock(&c->mu);
  return n;
}

uint32_t rk__cluster_slots_held(rk_cluster_t *c) {
  uint32_t n = 0;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < c->peer_count; ++i) n += !c->peers[i].free_slot;
  pthread_mutex_unlock(&c->mu);
  return n;
}

uint64_t rk__cluster_dropped_local(rk_cluster_t *c, const char *name) {
  uint64_t n = 0;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i)
    if (c->exports[i] && !strcmp(c->exports[i]->name, name))
      n = c->exports[i]->dropped_local;
  pthread_mutex_unlock(&c->mu);
  return n;
}

uint64_t rk__cluster_direct(rk_cluster_t *c, const char *name) {
  uint64_t n = 0;
  pthread_mutex_lock(&c->mu);
  for (uint32_t i = 0; i < MAX_EXPORTS; ++i)
    if (c->exports[i] && !strcmp(c->exports[i]->name, name))
      n = c->exports[i]->direct;
  pthread_mutex_unlock(&c->mu);
  return n;
}

void rk__remote_actor_credits(rk_remote_actor_t *h, uint64_t *out_answers,
                              uint64_t *out_credited) {
  rk__short_lock(&h->mu);
  *out_answers = h->credit_answers;
  *out_credited = h->credited;
  rk__short_unlock(&h->mu);
}

void rk__remote_actor_sends(rk_remote_actor_t *h, uint32_t *out_buffered,
                            uint32_t *out_unanswered, uint64_t *out_batches,
                            uint64_t *out_batched) {
  rk__short_lock(&h->mu);
  *out_buffered = h->nbuf;
  *out_unanswered = h->unanswered;
  *out_batches = h->batches;
  *out_batched = h->batched;
  rk__short_unlock(&h->mu);
}

rk_status_t rk__cluster_barrier(rk_cluster_t *c) {
  if (!c->mpi)
    return rk__fail(RK_ERR_INVALID_STATE, "cluster: not formed by MPI");
  return c->mpi->MPI_Barrier(c->mpi->comm_world) == 0
             ? RK_OK
             : rk__fail(RK_ERR_UNAVAILABLE, "cluster: MPI_Barrier failed");
}

#endif /* RK_HAVE_UCX */
