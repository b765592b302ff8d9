/* Layouts shared by the host runtime and the code that runs an actor on a
 * device: the ring header, the control block and the message slot header.
 *
 * Plain C structs with fixed-width fields, no pointers and no dependencies,
 * so the same bytes can live in host-mapped memory read by a GPU. Every size
 * and offset is pinned below; a change to any of them is a new
 * RK_ABI_VERSION.
 *
 * Ownership of fields: "host" fields are written only by the host side, and
 * "device" fields only by the side that runs the handler (a CPU worker
 * thread, a persistent GPU kernel). The fields of one writer share cache
 * lines; fields of different writers never do.
 *
 *   ring memory:  [rk_abi_ring_t][slot 0][slot 1]...[slot capacity-1]
 *   slot:         [rk_abi_msg_t (32 bytes)][payload][padding to slot_size]
 */
#ifndef RK_ABI_ACTOR_ABI_H_
#define RK_ABI_ACTOR_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define RK_ABI_VERSION 2u
#define RK_ABI_RING_MAGIC 0x474e4952u    /* "RING" */
#define RK_ABI_CONTROL_MAGIC 0x4c54434bu /* "KCTL" */

/* Distance between fields of different writers. 128 bytes rather than 64:
 * x86 prefetches cache lines in adjacent pairs and Apple cores use 128-byte
 * lines, so 64 apart would still share traffic. */
#define RK_ABI_LINE 128u
/* Slots are a multiple of this many bytes. */
#define RK_ABI_SLOT_ALIGN 64u
#define RK_ABI_MSG_HEADER 32u

/* ---- Ring ----------------------------------------------------------------
 *
 * One producer and one consumer. `tail` counts slots ever published and
 * `head` slots ever consumed (free-running, never wrapped); slot i lives at
 * index i & (capacity - 1). The ring is empty when head == tail and full
 * when tail - head == capacity.
 *
 * Producer: load own tail (relaxed), the consumer's head (acquire), write
 * the slot, publish with a release store of tail + 1. Consumer: load own head
 * (relaxed), the producer's tail (acquire), read the slot, release it with a
 * release store of head + 1.
 *
 * Waiting. Either side may park instead of spinning: the consumer for data,
 * the producer for space. A parked side first raises its *_waiters count,
 * issues a full fence, re-checks the indices, and sleeps on the other side's
 * wake sequence; the other side, after publishing, fences and, if the count
 * is non-zero, increments its wake sequence and wakes it. Both fences make
 * the store-then-load pairs sequentially consistent, so a wake-up is never
 * lost (the io_uring NEED_WAKEUP idea, in both directions).
 *
 * Slot marks (RK_ABI_RING_SLOT_SEQ in `flags`, set at creation when every
 * producer of the ring writes them). A producer also stores, after the
 * slot's contents and before tail, the low 32 bits of (index + 1) into the
 * slot header's `seq` with release. A consumer may then find slot i
 * published by an acquire load of that mark (== i + 1) instead of loading
 * tail: a message then costs the consumer one cache line (the slot's), not
 * two (tail's and the slot's), and tail's line stays with the producer. A
 * mark from the previous lap reads i + 1 - capacity, never i + 1 (capacity
 * < 2^32). Consumers that ignore the flag (a GPU kernel) read tail as
 * before; tail is always published. A consumer that went by the mark may
 * release slots before tail covers them, so head can be ahead of tail for
 * a moment: depth and space checks compare as signed. */
typedef struct rk_abi_ring {
  /* Set once before either side starts. */
  uint32_t magic;
  uint32_t version;
  uint32_t capacity;  /* slots, a power of two */
  uint32_t slot_size; /* bytes, a multiple of RK_ABI_SLOT_ALIGN */
  uint32_t flags;     /* RK_ABI_RING_* */
  uint8_t pad0[RK_ABI_LINE - 20];

  /* Producer: written on every publish. */
  uint64_t tail;
  uint8_t pad1[RK_ABI_LINE - 8];

  /* Consumer: written on every release. */
  uint64_t head;
  uint8_t pad2[RK_ABI_LINE - 8];

  /* Producer, rarely: bumped to wake a parked consumer; the count of parked
   * producers (a producer waiting for space). */
  uint32_t data_seq;
  uint32_t space_waiters;
  uint8_t pad3[RK_ABI_LINE - 8];

  /* Consumer, rarely: bumped to wake a parked producer; the count of parked
   * consumers (waiting for data). */
  uint32_t space_seq;
  uint32_t data_waiters;
  uint8_t pad4[RK_ABI_LINE - 8];
} rk_abi_ring_t;

/* rk_abi_ring_t.flags: every producer marks its slots (`seq`). */
#define RK_ABI_RING_SLOT_SEQ 1u
/* rk_abi_ring_t.flags of a K2K channel: its slots hold word messages
 * (see the channels of a resident GPU kernel below). */
#define RK_ABI_RING_SLOT_WORDS 2u

_Static_assert(sizeof(rk_abi_ring_t) == 5 * RK_ABI_LINE, "ring header size");
_Static_assert(offsetof(rk_abi_ring_t, capacity) == 8, "ring capacity");
_Static_assert(offsetof(rk_abi_ring_t, slot_size) == 12, "ring slot_size");
_Static_assert(offsetof(rk_abi_ring_t, flags) == 16, "ring flags");
_Static_assert(offsetof(rk_abi_ring_t, tail) == 1 * RK_ABI_LINE, "ring tail");
_Static_assert(offsetof(rk_abi_ring_t, head) == 2 * RK_ABI_LINE, "ring head");
_Static_assert(offsetof(rk_abi_ring_t, data_seq) == 3 * RK_ABI_LINE,
               "ring data_seq");
_Static_assert(offsetof(rk_abi_ring_t, space_waiters) == 3 * RK_ABI_LINE + 4,
               "ring space_waiters");
_Static_assert(offsetof(rk_abi_ring_t, space_seq) == 4 * RK_ABI_LINE,
               "ring space_seq");
_Static_assert(offsetof(rk_abi_ring_t, data_waiters) == 4 * RK_ABI_LINE + 4,
               "ring data_waiters");

/* ---- Message slot header --------------------------------------------------
 *
 * The timestamp is a hybrid logical clock: nanoseconds since the Unix epoch
 * with the low 16 bits replaced by a logical counter. A clock is one 64-bit
 * word advanced by compare-and-swap to max(previous + 1, physical time), so
 * two ticks of one clock, concurrent or not, never return the same value,
 * and a receiver that merges a sender's stamp (max(own, received) + 1) orders
 * its reply after the request. Devices without a wall clock tick logically
 * (received + 1). Every device side merges the request's stamp into
 * control->clock before it stamps the response; the host stamps requests
 * from one process clock and merges every response into it before anyone
 * sees it (rk/hlc.h), so causality holds across actors. */
typedef enum rk_abi_msg_type {
  RK_ABI_MSG_REQUEST = 1,
  RK_ABI_MSG_RESPONSE = 2,
  /* A message from another actor (K2K): `status` holds the link's number
   * in the receiver's inbox, `code` the sender's port, `correlation_id`
   * the link's message number (1, 2, ...). */
  RK_ABI_MSG_K2K = 3,
} rk_abi_msg_type_t;

typedef enum rk_abi_msg_status {
  RK_ABI_MSG_OK = 0,
  RK_ABI_MSG_HANDLER_ERROR = 1, /* `code` holds the handler's return value */
  /* The device side could not run the handler (a failed launch or copy of
   * a relaunch batch): `code` holds the rk_status_t. */
  RK_ABI_MSG_DEVICE_ERROR = 2,
} rk_abi_msg_status_t;

typedef struct rk_abi_msg {
  uint64_t correlation_id; /* a response carries its request's id */
  uint64_t timestamp;      /* hybrid logical clock, see above */
  uint16_t type;           /* rk_abi_msg_type_t */
  uint16_t status;         /* rk_abi_msg_status_t, responses only */
  uint32_t size;           /* payload bytes */
  /* The slot's publication mark: the low 32 bits of (ring index + 1),
   * stored last, with release, by a producer of a ring whose header has
   * RK_ABI_RING_SLOT_SEQ (see the ring above). */
  uint32_t seq;
  int32_t code; /* handler return value, 0 when it has none */
} rk_abi_msg_t;

_Static_assert(sizeof(rk_abi_msg_t) == RK_ABI_MSG_HEADER, "message header");
_Static_assert(offsetof(rk_abi_msg_t, timestamp) == 8, "msg timestamp");
_Static_assert(offsetof(rk_abi_msg_t, type) == 16, "msg type");
_Static_assert(offsetof(rk_abi_msg_t, status) == 18, "msg status");
_Static_assert(offsetof(rk_abi_msg_t, size) == 20, "msg size");
_Static_assert(offsetof(rk_abi_msg_t, seq) == 24, "msg seq");
_Static_assert(offsetof(rk_abi_msg_t, code) == 28, "msg code");

/* The slot size for a payload: header plus payload, rounded up to
 * RK_ABI_SLOT_ALIGN. */
static inline uint32_t rk_abi_slot_size(uint32_t payload) {
  return (RK_ABI_MSG_HEADER + payload + RK_ABI_SLOT_ALIGN - 1) &
         ~(RK_ABI_SLOT_ALIGN - 1);
}

/* ---- Control block --------------------------------------------------------
 *
 * Requests from the host and the device's answers. Termination is a
 * handshake: the host sets `terminate` and waits (with a deadline) for the
 * device to set `terminated`; nothing is torn down under a running
 * handler. */
typedef enum rk_abi_run_state {
  RK_ABI_RUN_STARTING = 0, /* the device side has not looked yet */
  RK_ABI_RUN_IDLE = 1,     /* running, not taking messages (inactive) */
  RK_ABI_RUN_ACTIVE = 2,   /* taking messages */
  RK_ABI_RUN_STOPPED = 3,  /* left its loop; `terminated` is set */
} rk_abi_run_state_t;

typedef struct rk_abi_control {
  /* Set once. */
  uint32_t magic;
  uint32_t version;
  uint32_t in_payload;    /* request bytes */
  uint32_t out_payload;   /* response bytes */
  uint32_t state_size;    /* handler state bytes, 0 without state */
  uint32_t handler_flags; /* RK_ABI_HANDLER_* */
  uint8_t pad0[RK_ABI_LINE - 24];

  /* Host. */
  uint32_t active;    /* 1: take messages; 0: leave them queued */
  uint32_t terminate; /* RK_ABI_TERMINATE_*: how to stop */
  uint8_t pad1[RK_ABI_LINE - 8];

  /* Device. */
  uint32_t run_state;  /* rk_abi_run_state_t */
  uint32_t terminated; /* 1 once the device side has left its loop */
  uint64_t processed;  /* messages handled */
  uint64_t errors;     /* handler errors among them */
  int32_t last_error;  /* the last handler error code */
  uint32_t pad2a;
  uint64_t clock; /* the actor's hybrid logical clock */
  uint8_t pad2[RK_ABI_LINE - 40];
} rk_abi_control_t;

#define RK_ABI_HANDLER_STATUS 1u /* the handler returns a status code */

/* Values of `terminate`. DRAIN: answer every queued request, then stop
 * (rk_actor_terminate). NOW: stop after the requests in hand and leave the
 * queued ones in the ring for the next device side (a supervisor's
 * restart); a device side that cannot do that treats it as DRAIN. */
#define RK_ABI_TERMINATE_DRAIN 1u
#define RK_ABI_TERMINATE_NOW 2u
/* PARK (a resident GPU kernel only): leave the loop at the next request
 * boundary without reporting a stop (`terminated` stays 0), every claimed
 * request answered and the queued ones left in the ring; the backend
 * relaunches the kernel where it left (the CUDA backend, around driver
 * work that waits for the device to be idle, see cuda_actor.c). */
#define RK_ABI_TERMINATE_PARK 3u

/* A resident GPU kernel's scheduling words (rk_sched: device memory, 64-bit
 * words, set by the backend before each launch): the next request to
 * claim and the next to answer (both the input ring's head at launch),
 * the blocks that left their loop (0), and the kernel's copies of the
 * control block's clock, processed and errors (their values at launch),
 * which it reads there and writes both there and to the control block. */
#define RK_ABI_SCHED_CLAIM 0u
#define RK_ABI_SCHED_DONE 1u
#define RK_ABI_SCHED_EXITED 2u
#define RK_ABI_SCHED_CLOCK 4u
#define RK_ABI_SCHED_PROCESSED 5u
#define RK_ABI_SCHED_ERRORS 6u
#define RK_ABI_SCHED_WORDS 8u

_Static_assert(sizeof(rk_abi_control_t) == 3 * RK_ABI_LINE, "control size");
_Static_assert(offsetof(rk_abi_control_t, handler_flags) == 20,
               "control handler_flags");
_Static_assert(offsetof(rk_abi_control_t, active) == RK_ABI_LINE,
               "control active");
_Static_assert(offsetof(rk_abi_control_t, terminate) == RK_ABI_LINE + 4,
               "control terminate");
_Static_assert(offsetof(rk_abi_control_t, run_state) == 2 * RK_ABI_LINE,
               "control run_state");
_Static_assert(offsetof(rk_abi_control_t, processed) == 2 * RK_ABI_LINE + 8,
               "control processed");
_Static_assert(offsetof(rk_abi_control_t, errors) == 2 * RK_ABI_LINE + 16,
               "control errors");
_Static_assert(offsetof(rk_abi_control_t, last_error) == 2 * RK_ABI_LINE + 24,
               "control last_error");
_Static_assert(offsetof(rk_abi_control_t, clock) == 2 * RK_ABI_LINE + 32,
               "control clock");

/* ---- Actor-to-actor channels of a resident GPU kernel ----------------------
 *
 * A GPU kernel cannot take part in the host's multi-producer inbox (its
 * atomics on host memory are not atomic with the host's), so every link
 * into an actor that runs in a resident GPU kernel is a channel of its own:
 * a single-producer, single-consumer ring (rk_abi_chan_t, its slots right
 * after it) in pinned host memory mapped into every device. The sender's
 * side (a resident kernel, a CPU worker, a relaunch driver) is its producer
 * and the receiving kernel its consumer. Flow control is the ring itself: a
 * link's credit is capacity - (tail - head), and the receiver returns it by
 * releasing the slot (head + 1, a release store after it read the slot).
 * Same protocol as the pair channel of tests/model/k2k.pml (-DCHAN there
 * models one receiver polling several). The receiving kernel polls; nobody
 * wakes it.
 *
 * Word slots (RK_ABI_RING_SLOT_WORDS in the channel ring's `flags`): a
 * channel in device memory between two resident kernels of one GPU whose
 * payload is at most RK_ABI_K2K_WORDS_MAX bytes carries each message as
 * 8-byte words, each one half data and one half mark: word 0 and 1 the
 * stamp's low and high 32 bits, then the payload 4 bytes a word (the last
 * padded with zeros), every word's high half the low 32 bits of
 * (index + 1). A word is stored and loaded whole (single-copy atomic), so
 * a receiver that finds every word of slot i marked i + 1 has the whole
 * message, with no fence on either side: the sender stores the words with
 * no release, the receiver polls the slot's first word instead of tail
 * and reads the rest with no acquire (a mark of the previous lap reads
 * i + 1 - capacity; a slot never written, 0). Tail is stored too, with no
 * order, for whoever counts the depth. Head still frees slots with a
 * release (after a fence), as above, but the receiver may hold it back
 * while the sender's credit lasts (it publishes it when idle, every
 * RK_ABI_K2K_HEAD_BATCH messages and before it leaves). Modelled by
 * tests/model/k2k.pml -DCHAN -DWORDS.
 *
 * Each resident GPU actor has one rk_abi_k2k_t beside its control block:
 * the host writes its wiring before the actor is activated (the kernel
 * reads it once, after it first sees `active` or `terminate` with
 * acquire); the kernel writes the counters. Channel addresses are device
 * addresses of portable mapped memory (with unified addressing, the host's
 * addresses). */
#define RK_ABI_K2K_MAGIC 0x4b324b54u /* "TK2K" */
#define RK_ABI_K2K_MAX_IN 64u        /* links into one GPU actor */
#define RK_ABI_K2K_MAX_PORTS 8u      /* output ports of a handler */
#define RK_ABI_K2K_MAX_OUT 16u       /* receivers of one port */
/* Messages one port may send per handler call (credit beyond is FULL). */
#define RK_ABI_K2K_OUTBOX 256u
/* Word slots (above): the largest payload carried so, and the messages a
 * receiver may take before it publishes its head. */
#define RK_ABI_K2K_WORDS_MAX 240u
#define RK_ABI_K2K_HEAD_BATCH 64u
static inline uint32_t rk_abi_k2k_words(uint32_t payload) {
  return 2u + (payload + 3u) / 4u;
}
static inline uint32_t rk_abi_k2k_words_slot_size(uint32_t payload) {
  return (8u * rk_abi_k2k_words(payload) + RK_ABI_SLOT_ALIGN - 1) &
         ~(RK_ABI_SLOT_ALIGN - 1);
}

typedef struct rk_abi_chan {
  rk_abi_ring_t ring; /* tail: the sender; head: the receiver */
  /* Host: 1 while the receiver takes messages, 0 once it stopped (sends
   * answer RK_SEND_UNCONNECTED). */
  uint32_t open;
  uint32_t link; /* the link's number among the receiver's */
  uint8_t pad[RK_ABI_LINE - 8];
} rk_abi_chan_t;

_Static_assert(sizeof(rk_abi_chan_t) == 6 * RK_ABI_LINE, "channel size");
_Static_assert(offsetof(rk_abi_chan_t, open) == 5 * RK_ABI_LINE,
               "channel open");

typedef struct rk_abi_k2k {
  /* Host, before activation. */
  uint32_t magic;
  uint32_t version;
  uint32_t nin;    /* channels into the actor (in[0 .. nin-1]) */
  uint32_t nports; /* 1 + the highest port its handler sends to */
  uint32_t nout[RK_ABI_K2K_MAX_PORTS]; /* links of each port */
  uint8_t pad0[RK_ABI_LINE - 48];
  uint64_t in[RK_ABI_K2K_MAX_IN];                         /* rk_abi_chan_t */
  uint64_t out[RK_ABI_K2K_MAX_PORTS][RK_ABI_K2K_MAX_OUT]; /* rk_abi_chan_t */
  /* Device: the counters of rk_actor_k2k_stats. */
  uint64_t sent, refused_full, refused_unconnected;
  uint64_t received, received_errors;
  uint64_t last_sent_ts, last_received_ts;
  uint8_t pad1[RK_ABI_LINE - 56];
} rk_abi_k2k_t;

_Static_assert(offsetof(rk_abi_k2k_t, nout) == 16, "k2k nout");
_Static_assert(offsetof(rk_abi_k2k_t, in) == RK_ABI_LINE, "k2k in");
_Static_assert(offsetof(rk_abi_k2k_t, out) ==
                   RK_ABI_LINE + 8 * RK_ABI_K2K_MAX_IN,
               "k2k out");
_Static_assert(offsetof(rk_abi_k2k_t, sent) == 13 * RK_ABI_LINE, "k2k sent");
_Static_assert(sizeof(rk_abi_k2k_t) == 14 * RK_ABI_LINE, "k2k size");

/* The device memory of a resident GPU actor (rk_k2k_mem): a scratch
 * response for inbox messages (nobody receives it), then each port's buffer
 * of RK_ABI_K2K_OUTBOX messages, ports the handler never sends to taking no
 * room. Both the host (which allocates it) and the generated kernel lay it
 * out with these. The kernel keeps the ports' control words (4 uint32_t per
 * port) and its views of its channels (RK_ABI_K2K_VIEW bytes each: the
 * channels in, then RK_ABI_K2K_MAX_OUT per port) in shared memory. */
#define RK_ABI_K2K_VIEW 56u
#define RK_ABI_K2K_SCRATCH 0u
_Static_assert(RK_ABI_K2K_SCRATCH % RK_ABI_LINE == 0, "k2k scratch");
static inline uint64_t rk_abi_k2k_round(uint64_t n) {
  return (n + RK_ABI_LINE - 1) & ~(uint64_t)(RK_ABI_LINE - 1);
}
static inline uint64_t rk_abi_k2k_first_port(uint32_t out_payload) {
  return RK_ABI_K2K_SCRATCH + rk_abi_k2k_round(out_payload);
}
static inline uint64_t rk_abi_k2k_port_bytes(uint32_t msg_size) {
  return rk_abi_k2k_round((uint64_t)RK_ABI_K2K_OUTBOX * msg_size);
}

#endif /* RK_ABI_ACTOR_ABI_H_ */
