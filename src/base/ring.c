/* Single-producer/single-consumer rings and the multi-producer stage. The
 * protocol (and the Promela model that checks it) is described in
 * abi/actor_abi.h and tests/model/. */
#include "base/ring.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "base/platform.h"
#if RK__LINUX
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "base/error.h"
#include "base/sys.h"

#define LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- Asymmetric fences ----------------------------------------------------
 *
 * The parking handshake needs a full fence on both sides (see signal() and
 * park()). Signalling happens on every publish, parking only when a side is
 * about to sleep, so on Linux the cost is moved to the parking side: it asks
 * the kernel (membarrier, private expedited) to run a full barrier on every
 * CPU running one of our threads, and the signalling side then only needs to
 * keep the compiler from reordering its store and load. Where membarrier is
 * missing (or under TSan, which does not model it) both sides fence. */
static int g_asymmetric; /* 1 when membarrier is registered */
static pthread_once_t g_asymmetric_once = PTHREAD_ONCE_INIT;

static void asymmetric_init(void) {
#if RK__LINUX && defined(SYS_membarrier) && !defined(RK__TSAN)
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
              0) == 0)
    g_asymmetric = 1;
#endif
}

/* The signalling side's half. */
static inline void fence_light(void) {
  if (g_asymmetric)
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  else
    rk__fence_seq_cst();
}

/* The parking side's half. */
static void fence_heavy(void) {
#if RK__LINUX && defined(SYS_membarrier)
  if (g_asymmetric &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return;
#endif
  rk__fence_seq_cst();
}

void rk__ring_fence_light(void) { fence_light(); }
void rk__ring_fence_heavy(void) { fence_heavy(); }
void rk__ring_fences_init(void) {
  pthread_once(&g_asymmetric_once, asymmetric_init);
}

rk_status_t rk__ring_init(rk_abi_ring_t *hdr, uint32_t capacity,
                          uint32_t slot_size) {
  /* Before any ring exists, so both sides of every handshake agree. */
  pthread_once(&g_asymmetric_once, asymmetric_init);
  if (capacity == 0 || (capacity & (capacity - 1)) != 0 ||
      capacity > (1u << 30))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ring capacity %u is not a power of two in 1..2^30",
                    capacity);
  if (slot_size == 0 || slot_size % RK_ABI_SLOT_ALIGN != 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "ring slot size %u is not a multiple of %u", slot_size,
                    RK_ABI_SLOT_ALIGN);
  memset(hdr, 0, sizeof *hdr);
  hdr->magic = RK_ABI_RING_MAGIC;
  hdr->version = RK_ABI_VERSION;
  hdr->capacity = capacity;
  hdr->slot_size = slot_size;
  return RK_OK;
}

void rk__ring_mark_slots(rk_abi_ring_t *hdr) {
  hdr->flags |= RK_ABI_RING_SLOT_SEQ;
}

void rk__ring_attach(rk__ring_end_t *end, rk_abi_ring_t *hdr, void *slots,
                     bool producer) {
  end->hdr = hdr;
  end->slots = slots;
  end->mask = hdr->capacity - 1u;
  end->slot_size = hdr->slot_size;
  end->marks = (hdr->flags & RK_ABI_RING_SLOT_SEQ) != 0;
  /* Acquire: a side attached while the other runs starts from a view whose
   * slots are complete. */
  uint64_t tail = LOAD_ACQUIRE(&hdr->tail), head = LOAD_ACQUIRE(&hdr->head);
  end->own = producer ? tail : head;
  /* A consumer that went by the slot marks may have released slots that
   * tail does not cover yet: nothing is known published beyond head. */
  end->other = producer ? head : (int64_t)(tail - head) > 0 ? tail : head;
}

uint64_t rk__ring_depth(const rk_abi_ring_t *hdr) {
  uint64_t head = LOAD_ACQUIRE(&hdr->head);
  uint64_t tail = LOAD_ACQUIRE(&hdr->tail);
  return (int64_t)(tail - head) > 0 ? tail - head : 0;
}

/* ---- Producer and consumer (the rest inline in ring.h) ------------------- */

/* The signalling half of the parking protocol: our index store, a full
 * fence, then the waiter count. Paired with the fence in park() so that
 * either we see the waiter or the waiter sees our index. */
static void signal(uint32_t *seq, const uint32_t *waiters) {
  fence_light();
  if (LOAD_RELAXED(waiters) != 0) {
    __atomic_fetch_add(seq, 1u, __ATOMIC_RELEASE);
    rk__wake_all(seq);
  }
}

void rk__ring_signal_data(rk_abi_ring_t *hdr) {
  signal(&hdr->data_seq, &hdr->data_waiters);
}

void rk__ring_kick(rk_abi_ring_t *hdr) {
  __atomic_fetch_add(&hdr->data_seq, 1u, __ATOMIC_RELEASE);
  rk__wake_all(&hdr->data_seq);
}

void rk__ring_prefetch(const rk__ring_end_t *c, uint32_t i, uint32_t n) {
  const uint64_t known = c->other - c->own;
  for (uint64_t k = i; k < (uint64_t)i + n && k < known; ++k)
    __builtin_prefetch(rk__ring_slot_at(c, c->own + k), 0, 3);
}

void rk__ring_signal_space(rk_abi_ring_t *hdr) {
  signal(&hdr->space_seq, &hdr->space_waiters);
}

/* ---- Waiting ------------------------------------------------------------- */

/* Signed: a consumer that went by the slot marks may be ahead of tail. */
static bool has_data(const rk_abi_ring_t *hdr, uint64_t head) {
  return (int64_t)(LOAD_ACQUIRE(&hdr->tail) - head) > 0;
}

/* Signed: a multi-producer's `tail` may be a claim that the consumer's head
 * has already passed (it is then behind, not far ahead). */
static bool has_space(const rk_abi_ring_t *hdr, uint64_t tail) {
  return (int64_t)(tail - LOAD_ACQUIRE(&hdr->head)) < (int64_t)hdr->capacity;
}

/* Parks until `ready` or a change of *seq from `s`, a value the caller read
 * before it last looked at the condition (and at whatever else a change of
 * *seq announces): a signal after that read changes *seq, and the futex wait
 * then returns at once. */
/* `also` (may be NULL): a second thing to wait for, whose producers
 * signal this ring (an actor's K2K inbox); looked at with the ring. */
static bool park(const rk_abi_ring_t *hdr, uint64_t index, uint32_t *seq,
                 uint32_t s, uint32_t *waiters,
                 bool (*ready)(const rk_abi_ring_t *, uint64_t),
                 uint64_t deadline_ns, bool (*also)(void *), void *arg) {
  __atomic_fetch_add(waiters, 1u, __ATOMIC_SEQ_CST);
  /* Pairs with the fence in signal(): our count before their index, or
   * their index before our check. */
  fence_heavy();
  bool ok = ready(hdr, index) || (also && also(arg));
  if (!ok && LOAD_ACQUIRE(seq) == s) {
    uint64_t timeout = 0;
    bool wait = true;
    if (deadline_ns) {
      uint64_t now = rk__now_ns();
      if (now >= deadline_ns)
        wait = false;
      else
        timeout = deadline_ns - now;
    }
    if (wait) rk__wait_while_equal(seq, s, timeout);
    ok = ready(hdr, index) || (also && also(arg));
  }
  __atomic_fetch_sub(waiters, 1u, __ATOMIC_RELAXED);
  return ok;
}

uint32_t rk__ring_data_seq(const rk_abi_ring_t *hdr) {
  return LOAD_ACQUIRE(&hdr->data_seq);
}

bool rk__ring_wait_data(rk_abi_ring_t *hdr, uint64_t head,
                        uint64_t deadline_ns) {
  return park(hdr, head, &hdr->data_seq, LOAD_ACQUIRE(&hdr->data_seq),
              &hdr->data_waiters, has_data, deadline_ns, NULL, NULL);
}

bool rk__ring_wait_data_since(rk_abi_ring_t *hdr, uint64_t head, uint32_t seq,
                              uint64_t deadline_ns) {
  return park(hdr, head, &hdr->data_seq, seq, &hdr->data_waiters, has_data,
              deadline_ns, NULL, NULL);
}

bool rk__ring_wait_data_since_or(rk_abi_ring_t *hdr, uint64_t head,
                                 uint32_t seq, uint64_t deadline_ns,
                                 bool (*also)(void *), void *arg) {
  return park(hdr, head, &hdr->data_seq, seq, &hdr->data_waiters, has_data,
              deadline_ns, also, arg);
}

bool rk__ring_wait_space(rk_abi_ring_t *hdr, uint64_t own_tail,
                         uint64_t deadline_ns) {
  return park(hdr, own_tail, &hdr->space_seq, LOAD_ACQUIRE(&hdr->space_seq),
              &hdr->space_waiters, has_space, deadline_ns, NULL, NULL);
}

uint32_t rk__ring_space_seq(const rk_abi_ring_t *hdr) {
  return LOAD_ACQUIRE(&hdr->space_seq);
}

bool rk__ring_wait_space_since(rk_abi_ring_t *hdr, uint64_t own_tail,
                               uint32_t seq, uint64_t deadline_ns) {
  return park(hdr, own_tail, &hdr->space_seq, seq, &hdr->space_waiters,
              has_space, deadline_ns, NULL, NULL);
}

void rk__ring_kick_space(rk_abi_ring_t *hdr) {
  __atomic_fetch_add(&hdr->space_seq, 1u, __ATOMIC_RELEASE);
  rk__wake_all(&hdr->space_seq);
}

/* ---- Multi-producer stage ------------------------------------------------ */

void rk__ring_mp_init(rk__ring_mp_t *mp, rk_abi_ring_t *hdr, void *slots,
                      rk__ring_mp_kind_t kind) {
  memset(mp, 0, sizeof *mp);
  rk__ring_attach(&mp->end, hdr, slots, true);
  mp->claim = mp->end.own;
  mp->head_cache = mp->end.other;
  mp->kind = kind;
}

/* The header field by field, its mark left alone: a copy of the caller's
 * whole header would also store the caller's `seq` (0), which is the mark
 * of every index 2^32 k - 1, so that slot would look published to a
 * consumer going by marks before its payload is in. (Field by field also
 * spares the copy's wide loads a wait for the caller's narrow stores.) */
/* The lock word: 0 free, 1 held, 2 held and maybe slept on. Holders only
 * copy messages, so spin a little first; then sleep on the word rather
 * than spin or yield, so that a preempted holder and the consumer get
 * the CPUs when producers outnumber them. */
static void mp_lock(rk__ring_mp_t *mp) {
  for (unsigned spins = 0; spins < 64; ++spins) {
    uint32_t free_word = 0;
    if (LOAD_RELAXED(&mp->lock) == 0 &&
        __atomic_compare_exchange_n(&mp->lock, &free_word, 1u, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return;
    rk__cpu_relax();
  }
  /* 2 from here on: whoever unlocks wakes the sleepers. */
  while (__atomic_exchange_n(&mp->lock, 2u, __ATOMIC_ACQUIRE) != 0)
    rk__wait_while_equal(&mp->lock, 2u, 1000000u);
}

static void mp_unlock(rk__ring_mp_t *mp) {
  /* Release: the slot writes and the publish happen before the next
   * holder's. */
  if (__atomic_exchange_n(&mp->lock, 0u, __ATOMIC_RELEASE) == 2u)
    rk__wake_all(&mp->lock);
}

static rk_status_t mp_send_lock(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                const void *payload, uint32_t size,
                                uint64_t *out_tail) {
  mp_lock(mp);
  rk__ring_end_t *p = &mp->end;
  unsigned char *slot = rk__ring_reserve(p);
  rk_status_t st = RK_ERR_QUEUE_FULL;
  if (slot) {
    rk__ring_write_msg(slot, msg, payload, size);
    rk__ring_publish(p, 1);
    *out_tail = p->own;
    st = RK_OK;
  }
  mp_unlock(mp);
  return st;
}

static rk_status_t mp_send_claim(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                 const void *payload, uint32_t size,
                                 uint64_t *out_tail) {
  rk__ring_end_t *p = &mp->end;
  rk_abi_ring_t *hdr = p->hdr;
  const uint64_t cap = p->mask + 1;
  uint64_t mine = LOAD_RELAXED(&mp->claim);
  for (;;) {
    /* Acquire/release on the cache too: the producer that refreshed it
     * passes on what it learned from the consumer's head. */
    uint64_t head = LOAD_ACQUIRE(&mp->head_cache);
    /* Signed: another producer may have refreshed the cache past our stale
     * claim, which is then behind the head, not a full ring. */
    if ((int64_t)(mine - head) >= (int64_t)cap) {
      /* Acquire: slots the consumer released are free to overwrite. */
      head = LOAD_ACQUIRE(&hdr->head);
      STORE_RELEASE(&mp->head_cache, head);
      if ((int64_t)(mine - head) >= (int64_t)cap) return RK_ERR_QUEUE_FULL;
    }
    /* Relaxed is enough: the slot number only has to be unique; ordering
     * with the consumer comes from the tail publication below. */
    if (__atomic_compare_exchange_n(&mp->claim, &mine, mine + 1, true,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      break;
  }
  rk__ring_write_msg(p->slots + (size_t)(mine & p->mask) * p->slot_size, msg,
                     payload, size);
  /* A marking consumer may take it now, before tail covers it. */
  if (p->marks) rk__ring_mark(p, mine);
  /* Publish in claim order: wait for the producers that claimed earlier
   * slots. Acquire pairs with their release so that our release of tail
   * also covers their slot writes (the consumer sees one chain). */
  for (unsigned spins = 0; LOAD_ACQUIRE(&hdr->tail) != mine; ++spins) {
    if (spins % 64 == 63)
      sched_yield();
    else
      rk__cpu_relax();
  }
  STORE_RELEASE(&hdr->tail, mine + 1);
  *out_tail = mine + 1;
  return RK_OK;
}

rk_status_t rk__ring_mp_send_batch(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                   const void *payloads, uint32_t size,
                                   uint32_t count, uint32_t *out_sent) {
  *out_sent = 0;
  if (count == 0) return RK_OK;
  if (mp->kind != RK__RING_MP_LOCK) {
    /* CLAIM: one message at a time (each publishes in claim order). */
    uint32_t n = 0;
    for (; n < count; ++n) {
      rk_abi_msg_t m = *msg;
      m.correlation_id += n;
      m.timestamp += n;
      uint64_t tail;
      if (rk__ring_mp_send_quiet(
              mp, &m, (const unsigned char *)payloads + (size_t)n * size, size,
              &tail) != RK_OK)
        break;
    }
    *out_sent = n;
    if (n) rk__ring_signal_data(mp->end.hdr);
    return n ? RK_OK : RK_ERR_QUEUE_FULL;
  }
  mp_lock(mp);
  rk__ring_end_t *p = &mp->end;
  uint32_t n = 0;
  for (; n < count; ++n) {
    unsigned char *slot = rk__ring_reserve_at(p, n);
    if (!slot) break;
    rk__ring_write_msg(
        slot, msg, (const unsigned char *)payloads + (size_t)n * size, size);
    rk_abi_msg_t *m = (rk_abi_msg_t *)slot;
    m->correlation_id = msg->correlation_id + n;
    m->timestamp = msg->timestamp + n;
  }
  if (n) rk__ring_publish(p, n);
  mp_unlock(mp);
  *out_sent = n;
  if (n == 0) return RK_ERR_QUEUE_FULL;
  rk__ring_signal_data(p->hdr);
  return RK_OK;
}

rk_status_t rk__ring_mp_send_quiet(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                                   const void *payload, uint32_t size,
                                   uint64_t *out_tail) {
  uint64_t tail = 0;
  rk_status_t st = mp->kind == RK__RING_MP_LOCK
                       ? mp_send_lock(mp, msg, payload, size, &tail)
                       : mp_send_claim(mp, msg, payload, size, &tail);
  if (out_tail) *out_tail = tail;
  return st;
}

rk_status_t rk__ring_mp_send(rk__ring_mp_t *mp, const rk_abi_msg_t *msg,
                             const void *payload, uint32_t size,
                             uint64_t *out_tail) {
  rk_status_t st = rk__ring_mp_send_quiet(mp, msg, payload, size, out_tail);
  if (st == RK_OK) rk__ring_signal_data(mp->end.hdr);
  return st;
}

/* The index the stage's next message would take: a fresh load of the
 * claim counter (CLAIM) or of tail (LOCK). */
static uint64_t mp_next(const rk__ring_mp_t *mp) {
  return mp->kind == RK__RING_MP_LOCK ? LOAD_ACQUIRE(&mp->end.hdr->tail)
                                      : LOAD_RELAXED(&mp->claim);
}

void rk__ring_mp_wait_space(rk__ring_mp_t *mp, uint64_t deadline_ns) {
  rk__ring_wait_space(mp->end.hdr, mp_next(mp), deadline_ns);
}

void rk__ring_mp_wait_space_since(rk__ring_mp_t *mp, uint32_t seq,
                                  uint64_t deadline_ns) {
  rk__ring_wait_space_since(mp->end.hdr, mp_next(mp), seq, deadline_ns);
}

bool rk__ring_mp_has_space(const rk__ring_mp_t *mp) {
  return has_space(mp->end.hdr, mp_next(mp));
}
