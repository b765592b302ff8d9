/* The cluster's messages on the wire: UCX active-message ids and the
 * plain layouts they carry. Members of one cluster run the same rk build on
 * machines of one byte order; HELLO carries a magic and a version, and a
 * mismatch is refused with a message rather than misread.
 *
 * Control messages (HELLO, WELCOME, LOOKUP, LOOKUP_REPLY, BYE) carry their
 * struct as the payload and no header. REQ and RESP carry their struct as
 * the active message's header and the actor payload as its data, which UCX
 * sends eagerly or, when large, by rendezvous. REQS and RESPS carry
 * several REQs or RESPs to one member in one active message: a
 * rk_wire_batch_t as the header, the records as the data.
 *
 * Every message after HELLO names its sender by `from`: the index the
 * receiver gave the sender (told in HELLO and WELCOME), so the receiver
 * finds the peer without a lookup by endpoint. */
#ifndef RK_CLUSTER_WIRE_H_
#define RK_CLUSTER_WIRE_H_

#include <stdint.h>

#define RK_WIRE_MAGIC 0x726b636cu /* "rkcl" */
#define RK_WIRE_VERSION 6u
#define RK_WIRE_NAME_MAX 64
#define RK_WIRE_ACTOR_NAME_MAX 128
#define RK_WIRE_TOKEN_MAX 128
#define RK_WIRE_TEXT_MAX 256
#define RK_WIRE_REGISTERED_ONLY 1u

enum {
  RK_AM_HELLO = 1,
  RK_AM_WELCOME,
  RK_AM_LOOKUP,
  RK_AM_LOOKUP_REPLY,
  RK_AM_REQ,
  RK_AM_RESP,
  RK_AM_BYE,
  RK_AM_INTRO,      /* member -> member: rk_wire_hello_t + worker address */
  RK_AM_INTRO_ACK,  /* member -> member: rk_wire_welcome_t */
  RK_AM_LINK,       /* rk_cluster_link: tell the owner (rk_wire_link_t) */
  RK_AM_UNLINK,     /* ... the link is gone */
  RK_AM_LINK_FAULT, /* ... the linked local actor failed */
  RK_AM_REQS,       /* several REQs of one handle: rk_wire_batch_t */
  RK_AM_RESPS,      /* several RESPs to one member: rk_wire_batch_t */
  RK_AM_COUNT
};

/* Each member gives each peer the address of a UCP worker it keeps for
 * that peer alone: HELLO and INTRO are followed by it (address_size
 * bytes) and then by the sender's public address (public_size bytes: its
 * control worker's, which watches peers); WELCOME and INTRO_ACK by the
 * answering side's worker for the sender. Each side opens its messages'
 * endpoint from its own worker for the peer to the peer's worker for it,
 * so a peer's messages never share a worker (nor its shared-memory
 * receive FIFO) with another peer's. An endpoint made from a worker
 * address may use every transport UCX has between the two (shared memory
 * on one machine); one made from a socket address, in UCX 1.13, only
 * network ones. The endpoint the handshake came on (or one made from the
 * public address) stays open on the control workers to notice the peer's
 * failure. */
#define RK_WIRE_ADDRESS_MAX 8192

/* joining member -> hub */
typedef struct rk_wire_hello {
  uint32_t magic, version;
  uint32_t hub_index; /* the joiner's index for the hub: WELCOME's `from` */
  uint32_t token_size;
  uint32_t address_size; /* the sender's worker for the receiver */
  uint32_t public_size;  /* the sender's control worker */
  char name[RK_WIRE_NAME_MAX];
  char token[RK_WIRE_TOKEN_MAX];
} rk_wire_hello_t;

/* hub -> joining member: accepted (status 0) or refused (rk status, why).
 * Followed by the hub's worker for the joiner (address_size bytes), then
 * by `members` cards: the other members the hub has welcomed (UP, or being
 * welcomed), each a rk_wire_card_t and its public address. The joiner
 * introduces itself to each (INTRO, a rk_wire_hello_t whose hub_index is
 * the joiner's index for that member, sent over an endpoint to the public
 * address); each answers INTRO_ACK (a rk_wire_welcome_t with its worker
 * for the joiner and no cards). So every pair of
 * members of a hub-formed cluster is connected directly: of two members,
 * the one the hub welcomed second introduces itself to the first. */
typedef struct rk_wire_welcome {
  uint32_t from;       /* the joiner's index for the hub */
  uint32_t your_index; /* the hub's index for the joiner */
  int32_t status;      /* rk_status_t */
  uint32_t address_size;
  uint32_t members; /* cards after the address */
  uint32_t reserved;
  char name[RK_WIRE_NAME_MAX]; /* the hub's name */
  char text[RK_WIRE_TEXT_MAX];
} rk_wire_welcome_t;

typedef struct rk_wire_card {
  char name[RK_WIRE_NAME_MAX];
  uint32_t address_size;
  uint32_t reserved;
} rk_wire_card_t;

typedef struct rk_wire_lookup {
  uint32_t from;
  uint32_t reserved;
  uint64_t lookup_id;
  char name[RK_WIRE_ACTOR_NAME_MAX];
} rk_wire_lookup_t;

typedef struct rk_wire_lookup_reply {
  uint32_t from;
  int32_t status; /* RK_OK or RK_ERR_NOT_FOUND */
  uint64_t lookup_id;
  uint64_t export_id;
  uint64_t request_size, response_size;
  uint32_t window;
  uint32_t state; /* rk_actor_state_t when found; when not found,
                   * RK_WIRE_REGISTERED_ONLY when the name is registered
                   * there (rk_actor_register) but not exported */
  char text[RK_WIRE_TEXT_MAX];
} rk_wire_lookup_reply_t;

typedef struct rk_wire_req {
  uint32_t from;
  uint32_t handle;     /* the requester's handle slot */
  uint64_t handle_gen; /* ... and its generation */
  uint64_t export_id;  /* slot and generation of the owner's export */
  uint64_t request_id; /* the handle's correlation id */
  uint64_t timestamp;  /* the requester's clock at the send */
  uint32_t flags;      /* RK_WIRE_REQ_NO_DATA */
  uint32_t reserved;
} rk_wire_req_t;

/* A remote port's message (rk_cluster_connect): the answer goes back
 * without its payload (nobody keeps it; it only returns window room). */
#define RK_WIRE_REQ_NO_DATA 1u

typedef struct rk_wire_resp {
  uint32_t from;
  uint32_t handle;
  uint64_t handle_gen;
  uint64_t request_id;
  uint64_t timestamp; /* the owner's clock at the answer */
  int32_t status;     /* RK_OK, RK_ERR_HANDLER, or why it was refused */
  int32_t handler_code;
  uint32_t state;     /* the remote actor's state, on a refusal */
  uint32_t text_size; /* a refusal's reason follows in the data */
  /* Remote ports' messages admitted: how many of the sender's messages on
   * this handle the answer returns window room for (request_id is the
   * latest's). 0 on every other answer, which answers one request. */
  uint32_t credits;
  uint32_t data_size; /* in a RESPS record: the payload's bytes */
} rk_wire_resp_t;

/* REQS / RESPS: `count` records of `stride` bytes each, one after the
 * other in the data. A REQS record is a rk_wire_req_t and its request
 * (`size` bytes: every record of one REQS is for the same handle, so of
 * one size); a RESPS record a rk_wire_resp_t and its payload (data_size
 * bytes of the rest; `size` 0). Senders pad records to 8 bytes; readers
 * copy them out. */
typedef struct rk_wire_batch {
  uint32_t from;
  uint32_t count;
  uint32_t stride;
  uint32_t size;
} rk_wire_batch_t;

/* rk_cluster_link(h, local) on the requester: the owner of h's actor
 * remembers (from, link_id) -> its export; LINK_FAULT says the local actor
 * failed (text: why), UNLINK that the link is gone. A requester that fails
 * counts as a failure of every local actor it linked. */
typedef struct rk_wire_link {
  uint32_t from;
  uint32_t reserved;
  uint64_t export_id;
  uint64_t link_id; /* the requester's: unique among its links */
  char local[RK_WIRE_ACTOR_NAME_MAX]; /* the local actor, in words */
  char text[RK_WIRE_TEXT_MAX];
} rk_wire_link_t;

typedef struct rk_wire_bye {
  uint32_t from;
  uint32_t reserved;
} rk_wire_bye_t;

#endif /* RK_CLUSTER_WIRE_H_ */
