/* Lock-free rings over caller-provided memory, the host side of the protocol
 * described in abi/actor_abi.h.
 *
 * An rk__ring_end_t is one side's view of a ring: the producer's or the
 * consumer's. It caches its own index (it is the only writer) and the last
 * value it saw of the other side's, so a side touches the other's cache line
 * only when its cached view says the ring is full (producer) or empty
 * (consumer).
 *
 *   rk__ring_init(hdr, capacity, slot_size);        // once, before use
 *   rk__ring_end_t p, c;
 *   rk__ring_attach(&p, hdr, slots, true);
 *   rk__ring_attach(&c, hdr, slots, false);
 *   void *s = rk__ring_reserve(&p);                 // producer thread
 *   if (s) { fill(s); rk__ring_publish(&p, 1); rk__ring_signal_data(&p); }
 *   const void *m = rk__ring_peek(&c, 0);           // consumer thread
 *   if (m) { use(m); rk__ring_release(&c, 1); rk__ring_signal_space(&c); }
 *
 * Several threads may produce into one ring through an rk__ring_mp_t, the
 * multi-producer stage: it serialises producers on the host so the ring
 * itself keeps exactly one producer at a time.
 */
#ifndef RK_BASE_RING_H_
#define RK_BASE_RING_H_

#include <stdbool.h>
#include <stdint.h>

#include "abi/actor_abi.h"
#include "base/sys.h"
#include "rk/status.h"

typedef struct rk__ring_end {
  rk_abi_ring_t *hdr;
  unsigned char *slots;
  uint64_t mask;
  uint32_t slot_size;
  uint64_t own; /* tail (producer) or head (consumer), as last published */
  /* Producer: head as last loaded. Consumer: how far slots are known to
   * be published (tail as last loaded, or past the last marked slot). */
  uint64_t other;
  bool marks; /* the ring has RK_ABI_RING_SLOT_SEQ */
} rk__ring_end_t;

/* Bytes of slot memory for a ring. */
static inline uint64_t rk__ring_slot_bytes(uint32_t capacity,
                                           uint32_t slot_size) {
  return (uint64_t)capacity * slot_size;
}

/* Writes a fresh header: empty, counters zero. capacity must be a power of
 * two (1 .. 2^30) and slot_size a non-zero multiple of RK_ABI_SLOT_ALIGN;
 * RK_ERR_INVALID_ARGUMENT otherwise. Not thread-safe: call before either side
 * starts. */
rk_status_t rk__ring_init(rk_abi_ring_t *hdr, uint32_t capacity,
                          uint32_t slot_size);

/* Declares that every producer of the ring marks its slots (actor_abi.h:
 * slot marks), so consumers may look for published slots there rather than
 * at tail. Only for rings whose producers all go through this file; call it
 * after rk__ring_init, before either side attaches. */
void rk__ring_mark_slots(rk_abi_ring_t *hdr);

/* Attaches the producer's or the consumer's view to an initialised ring.
 * `slots` holds capacity * slot_size bytes. */
void rk__ring_attach(rk__ring_end_t *end, rk_abi_ring_t *hdr, void *slots,
                     bool producer);

/* Occupied slots as seen now (both sides may call it; approximate while the
 * other side runs). */
uint64_t rk__ring_depth(const rk_abi_ring_t *hdr);

/* ---- Producer ------------------------------------------------------------ */

/* The i-th free slot after the ones already reserved-and-published, or NULL
 * when fewer than i + 1 are free. Reserving does not change the ring. */
static inline void *rk__ring_reserve_at(rk__ring_end_t *p, uint32_t i);
static inline void *rk__ring_reserve(rk__ring_end_t *p) {
  return rk__ring_reserve_at(p, 0);
}
/* Makes the next n reserved (and written) slots visible to the consumer. */
static inline void rk__ring_publish(rk__ring_end_t *p, uint32_t n);
/* After publishing: wakes a consumer parked in rk__ring_wait_data. Cheap
 * when none is parked (a fence and a load). */
void rk__ring_signal_data(rk_abi_ring_t *hdr);

/* ---- Consumer ------------------------------------------------------------ */

/* Published slots not yet released. */
static inline uint64_t rk__ring_available(rk__ring_end_t *c);
/* The same, looking for newly published slots only when none are known
 * (then for up to `want`): a consumer that is behind takes what it knows
 * without reading the slot the producer writes next, whose line a read
 * would take away from it. Fewer than `want` may be known while more are
 * published. */
static inline uint64_t rk__ring_available_upto(rk__ring_end_t *c,
                                               uint32_t want);
/* The i-th published slot not yet released, or NULL when there are fewer
 * than i + 1. */
static inline const void *rk__ring_peek(rk__ring_end_t *c, uint32_t i);
/* Asks the cache for the i-th to (i + n - 1)-th published slots not yet
 * released (those known published only: a slot the producer may still
 * write is left alone), so that their lines are on their way while the
 * consumer works on the ones before. */
void rk__ring_prefetch(const rk__ring_end_t *c, uint32_t i, uint32_t n);
/* Gives the next n peeked slots back to the producer. */
static inline void rk__ring_release(rk__ring_end_t *c, uint32_t n);
/* After releasing: wakes a producer parked in rk__ring_wait_space. */
void rk__ring_signal_space(rk_abi_ring_t *hdr);

/* ---- Waiting ---------------------------------------------------------------
 *
 * Parks the calling thread until the ring has data (resp. space), the other
 * side signals for another reason (the host bumps data_seq to deliver a
 * control request), or the absolute deadline (rk__now_ns clock; 0 = none)
 * passes. Returns true when the condition held on return; callers loop.
 * `head` is the consumer's own index (data means tail != head), `own_tail`
 * the producer's (space means own_tail - head < capacity). */
bool rk__ring_wait_data(rk_abi_ring_t *hdr, uint64_t head,
                        uint64_t deadline_ns);
bool rk__ring_wait_space(rk_abi_ring_t *hdr, uint64_t own_tail,
                         uint64_t deadline_ns);
/* The consumer's side of control requests: read the sequence with
 * rk__ring_data_seq *before* looking at the control block, then wait with
 * rk__ring_wait_data_since, which also returns on any kick after that read
 * (a kick between the look and the wait is never lost). */
uint32_t rk__ring_data_seq(const rk_abi_ring_t *hdr);
bool rk__ring_wait_data_since(rk_abi_ring_t *hdr, uint64_t head, uint32_t seq,
                              uint64_t deadline_ns);
/* The same for a consumer with a second source whose producers signal this
 * ring with rk__ring_signal_data after they publish there (an actor's K2K
 * inbox): `also(arg)` is looked at with the ring, after the waiter count is
 * raised, so such a signal is never missed either. */
bool rk__ring_wait_data_since_or(rk_abi_ring_t *hdr, uint64_t head,
                                 uint32_t seq, uint64_t deadline_ns,
                                 bool (*also)(void *), void *arg);
/* Wakes whoever waits for data without publishing anything (a control
 * request for the consumer to look at). */
void rk__ring_kick(rk_abi_ring_t *hdr);
/* The producer's side of the same: a waiter for space that must also see
 * some other change (the actor stopping) reads rk__ring_space_seq before
 * it looks at that change, then waits with rk__ring_wait_space_since; a
 * rk__ring_kick_space after the read is never lost. */
uint32_t rk__ring_space_seq(const rk_abi_ring_t *hdr);
bool rk__ring_wait_space_since(rk_abi_ring_t *hdr, uint64_t own_tail,
                               uint32_t seq, uint64_t deadline_ns);
void rk__ring_kick_space(rk_abi_ring_t *hdr);

/* The two halves of a store-then-load handshake between a side that
 * signals often and one that parks rarely (used by the rings and by the
 * actor layer's own waiters): light is a compiler barrier where the kernel
 * can impose the heavy half (membarrier), a full fence otherwise. */
void rk__ring_fence_light(void);
void rk__ring_fence_heavy(void);
/* Chooses, once per process, how the halves fence; before either is used
 * (rk__ring_init and rk__bias_init call it). */
void rk__ring_fences_init(void);

/* ---- Multi-producer stage ------------------------------------------------ */

typedef enum rk__ring_mp_kind {
  /* Producers claim slot numbers with a compare-and-swap, write their slots
   * in parallel and publish in claim order. */
  RK__RING_MP_CLAIM,
  /* Producers take a short spin lock around reserve, write and publish. */
  RK__RING_MP_LOCK,
} rk__ring_mp_kind_t;

typedef struct rk__ring_mp {
  rk__ring_end_t end; /* the one producer view */
  rk__ring_mp_kind_t kind;
  /* CLAIM: the next slot number to hand out; LOCK: the lock word. */
  _Alignas(RK_ABI_LINE) uint64_t claim;
  uint32_t lock;
  /* The consumer's head as last loaded by any producer. */
  _Alignas(RK_ABI_LINE) uint64_t head_cache;
} rk__ring_mp_t;

void rk__ring_mp_init(rk__ring_mp_t *mp, rk_abi_ring_t *hdr, void *slots,
                      rk__ring_mp_kind_t kind);

/* Writes one message (header fields from `msg`, then `size` payload bytes)
 * into the next slot and publishes it, or returns RK_ERR_QUEUE_FULL with
 * nothing written. Thread-safe among producers of this stage; signals a
 * parked consumer. On success *out_tail is the ring tail after publishing. */
rk_status_t rk__ring_mp_send(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                             const void *payload, uint32_t size,
                             uint64_t *out_tail);

/* rk__ring_mp_send without waking a parked consumer: for a sender that
 * consumes the message itself right after (and signals if it leaves any
 * published message behind). */
rk_status_t rk__ring_mp_send_quiet(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                   const void *payload, uint32_t size,
                                   uint64_t *out_tail);

/* rk__ring_mp_send_quiet for a LOCK stage whose caller has it to itself
 * (the biased owner of the role that guards it, base/bias.h): the same
 * without the lock. With `next_id` the slot's correlation id is taken
 * from it (relaxed load and store; the caller's role keeps other writers
 * out) only when the message fits, so a full ring uses no id; without,
 * msg's id is kept. *out_id (may be NULL) gets the id sent. */
static inline rk_status_t rk__ring_mp_send_alone(
    rk__ring_mp_t *mp, const rk_abi_msg_t *msg, const void *payload,
    uint32_t size, uint64_t *next_id, uint64_t *out_id);

/* Writes up to `count` messages into consecutive slots and publishes them
 * at once (one release of tail, one signal): message i takes the header
 * `msg` with correlation_id and timestamp advanced by i, and the `size`
 * payload bytes at payloads + i * size. *out_sent gets how many fitted (0
 * .. count, in order); RK_ERR_QUEUE_FULL when none did. Thread-safe among
 * producers of this stage; the messages of one batch are adjacent in the
 * ring. */
rk_status_t rk__ring_mp_send_batch(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                   const void *payloads, uint32_t size,
                                   uint32_t count, uint32_t *out_sent);

/* Parks until the ring may have space for the stage's next message or the
 * deadline passes (then the caller retries rk__ring_mp_send). */
void rk__ring_mp_wait_space(rk__ring_mp_t *mp, uint64_t deadline_ns);
/* The same, also returning on any rk__ring_kick_space after `seq` was read
 * with rk__ring_space_seq. */
void rk__ring_mp_wait_space_since(rk__ring_mp_t *mp, uint32_t seq,
                                  uint64_t deadline_ns);
/* Whether the stage's next message may fit now (a hint: other producers
 * may take the space first). */
bool rk__ring_mp_has_space(const rk__ring_mp_t *mp);

/* ---- The hot paths, inline ------------------------------------------------
 *
 * Called once or more per message on both sides of every ring (an actor's
 * worker polls with them): inline here, so that a poll is a few loads and
 * a compare rather than a chain of calls. */

static inline unsigned char *rk__ring_slot_at(const rk__ring_end_t *e,
                                              uint64_t i) {
  return e->slots + (size_t)(i & e->mask) * e->slot_size;
}

/* The producer's mark on slot i, after the slot's contents (release). */
static inline void rk__ring_mark(const rk__ring_end_t *e, uint64_t i) {
  __atomic_store_n(&((rk_abi_msg_t *)rk__ring_slot_at(e, i))->seq,
                   (uint32_t)(i + 1u), __ATOMIC_RELEASE);
}

/* Whether slot i (own <= i < own + capacity) is published, by its mark.
 * Acquire: the producer's slot writes happen-before our reads. */
static inline bool rk__ring_marked(const rk__ring_end_t *e, uint64_t i) {
  return __atomic_load_n(&((const rk_abi_msg_t *)rk__ring_slot_at(e, i))->seq,
                         __ATOMIC_ACQUIRE) == (uint32_t)(i + 1u);
}

/* Consumer: brings `other` up to date, at least up to `want` slots past
 * own if that many are published. With marks it walks the marked slots
 * after `other` (each one's line is the one the consumer reads next
 * anyway) and never touches tail's line; without, it loads tail. */
static inline void rk__ring_refresh(rk__ring_end_t *c, uint64_t want) {
  if (!c->marks) {
    c->other = __atomic_load_n(&c->hdr->tail, __ATOMIC_ACQUIRE);
    return;
  }
  uint64_t end = c->own + want;
  if (end - c->own > c->mask + 1) end = c->own + c->mask + 1;
  while (c->other != end && rk__ring_marked(c, c->other)) ++c->other;
}

static inline void *rk__ring_reserve_at(rk__ring_end_t *p, uint32_t i) {
  uint64_t want = p->own + i;
  uint64_t cap = p->mask + 1;
  if (want - p->other >= cap) {
    /* Acquire: the consumer has finished reading the slots it released, so
     * they may be overwritten now. */
    p->other = __atomic_load_n(&p->hdr->head, __ATOMIC_ACQUIRE);
    if (want - p->other >= cap) return NULL;
  }
  return rk__ring_slot_at(p, want);
}

static inline void rk__ring_publish(rk__ring_end_t *p, uint32_t n) {
  if (p->marks)
    for (uint32_t i = 0; i < n; ++i) rk__ring_mark(p, p->own + i);
  p->own += n;
  /* Release: the slot contents are visible before the new tail is. */
  __atomic_store_n(&p->hdr->tail, p->own, __ATOMIC_RELEASE);
}

static inline uint64_t rk__ring_available(rk__ring_end_t *c) {
  /* Acquire (tail or the marks): the producer's slot writes happen-before
   * our reads. */
  rk__ring_refresh(c, c->mask + 1);
  return c->other - c->own;
}

static inline uint64_t rk__ring_available_upto(rk__ring_end_t *c,
                                               uint32_t want) {
  if (c->other == c->own) rk__ring_refresh(c, want ? want : 1);
  return c->other - c->own;
}

static inline const void *rk__ring_peek(rk__ring_end_t *c, uint32_t i) {
  if (c->other - c->own <= i) {
    rk__ring_refresh(c, (uint64_t)i + 1);
    if (c->other - c->own <= i) return NULL;
  }
  return rk__ring_slot_at(c, c->own + i);
}

static inline void rk__ring_release(rk__ring_end_t *c, uint32_t n) {
  c->own += n;
  /* Release: our reads of the slots complete before the producer may reuse
   * them. */
  __atomic_store_n(&c->hdr->head, c->own, __ATOMIC_RELEASE);
}

/* A message into a slot: the header fields from `msg` (its mark left to
 * the publish), then `size` payload bytes. */
static inline void rk__ring_write_msg(unsigned char *slot,
                                      const rk_abi_msg_t *msg,
                                      const void *payload, uint32_t size) {
  rk_abi_msg_t *h = (rk_abi_msg_t *)slot;
  h->correlation_id = msg->correlation_id;
  h->timestamp = msg->timestamp;
  h->type = msg->type;
  h->status = msg->status;
  h->size = size;
  h->code = msg->code;
  rk__copy_payload(slot + RK_ABI_MSG_HEADER, payload, size);
}
/* Inline: the biased owner of an actor's host side sends every request
 * through it. */
static inline rk_status_t rk__ring_mp_send_alone(
    rk__ring_mp_t *mp, const rk_abi_msg_t *msg, const void *payload,
    uint32_t size, uint64_t *next_id, uint64_t *out_id) {
  rk__ring_end_t *p = &mp->end;
  unsigned char *slot = (unsigned char *)rk__ring_reserve(p);
  if (!slot) return RK_ERR_QUEUE_FULL;
  rk_abi_msg_t m = *msg;
  if (next_id) {
    m.correlation_id = __atomic_load_n(next_id, __ATOMIC_RELAXED);
    __atomic_store_n(next_id, m.correlation_id + 1, __ATOMIC_RELAXED);
  }
  rk__ring_write_msg(slot, &m, payload, size);
  rk__ring_publish(p, 1);
  if (out_id) *out_id = m.correlation_id;
  return RK_OK;
}
#endif /* RK_BASE_RING_H_ */
