/* The rings under load: 10^7 sequence-numbered messages through one
 * producer/consumer pair (every number exactly once, in order, with both
 * sides parking and waking), the multi-producer stage in both kinds with
 * each producer's order kept, and the hybrid logical clock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/hlc.h"
#include "base/ring.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
enum { kMessages = 1000000 }; /* sanitizers run ~10-50x slower */
#else
enum { kMessages = 10000000 };
#endif

typedef struct {
  rk_abi_ring_t *hdr;
  unsigned char *slots;
  uint64_t count;
  uint64_t errors;
  uint64_t parks;
} side_t;

/* Producer: publishes in bursts of random length, parking when full. */
static void *producer_main(void *arg) {
  side_t *s = arg;
  rk__ring_end_t p;
  rk__ring_attach(&p, s->hdr, s->slots, true);
  uint64_t seq = 0, rng = 88172645463325252u, spins = 0;
  while (seq < s->count) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    uint32_t burst = 1 + (uint32_t)(rng % 16), n = 0;
    for (; n < burst && seq + n < s->count; ++n) {
      unsigned char *slot = rk__ring_reserve_at(&p, n);
      if (!slot) break;
      uint64_t v = seq + n;
      memcpy(slot + RK_ABI_MSG_HEADER, &v, sizeof v);
      memcpy(slot + 56, &v, sizeof v); /* both ends of the payload */
    }
    if (n == 0) {
      /* Spin a little, then park: both paths run many times. */
      if (++spins % 64) {
        rk__cpu_relax();
        continue;
      }
      s->parks++;
      rk__ring_wait_space(s->hdr, p.own, 0);
      continue;
    }
    rk__ring_publish(&p, n);
    rk__ring_signal_data(s->hdr);
    seq += n;
  }
  return NULL;
}

static void test_spsc_order(bool marks) {
  const uint32_t cap = 64, slot = 64;
  rk_abi_ring_t *hdr = aligned_alloc(RK_ABI_LINE, sizeof *hdr);
  unsigned char *slots = aligned_alloc(RK_ABI_LINE, cap * slot);
  CHECK_OK(rk__ring_init(hdr, cap, slot));
  if (marks) rk__ring_mark_slots(hdr);
  side_t s = {hdr, slots, kMessages, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, producer_main, &s);
  rk__ring_end_t c;
  rk__ring_attach(&c, hdr, slots, false);
  uint64_t expect = 0, bad = 0, parks = 0, max_depth = 0, spins = 0;
  while (expect < kMessages) {
    uint64_t n = rk__ring_available(&c);
    if (n == 0) {
      if (++spins % 64) {
        rk__cpu_relax();
        continue;
      }
      parks++;
      rk__ring_wait_data(hdr, c.own, 0);
      continue;
    }
    if (n > max_depth) max_depth = n;
    for (uint64_t i = 0; i < n; ++i) {
      const unsigned char *m = rk__ring_peek(&c, (uint32_t)i);
      uint64_t a, b;
      memcpy(&a, m + RK_ABI_MSG_HEADER, sizeof a);
      memcpy(&b, m + 56, sizeof b);
      if (a != expect || b != expect) {
        if (bad++ < 5)
          printf("  message %llu: got %llu/%llu\n", (unsigned long long)expect,
                 (unsigned long long)a, (unsigned long long)b);
      }
      ++expect;
    }
    rk__ring_release(&c, (uint32_t)n);
    rk__ring_signal_space(hdr);
  }
  pthread_join(th, NULL);
  CHECK(bad == 0, "%llu of %d messages out of order or torn",
        (unsigned long long)bad, kMessages);
  CHECK(max_depth <= cap, "never more than the capacity: %llu",
        (unsigned long long)max_depth);
  CHECK(rk__ring_depth(hdr) == 0 && hdr->tail == (uint64_t)kMessages,
        "all consumed: tail %llu", (unsigned long long)hdr->tail);
  printf("  %s: %d messages; consumer parked %llu times, producer %llu\n",
         marks ? "marked slots" : "tail only", kMessages,
         (unsigned long long)parks, (unsigned long long)s.parks);
  free(hdr);
  free(slots);
}

/* ---- Multi-producer stage ------------------------------------------------ */

enum { kProducers = 4, kPerProducer = 100000 };

typedef struct {
  rk__ring_mp_t *mp;
  uint32_t id;
  uint64_t full;
} mp_producer_t;

static void *mp_main(void *arg) {
  mp_producer_t *p = arg;
  for (uint32_t i = 0; i < kPerProducer; ++i) {
    uint32_t payload[2] = {p->id, i};
    rk_abi_msg_t m = {
        ((uint64_t)p->id << 32) | i, 0, RK_ABI_MSG_REQUEST, 0, 8, 0, 0};
    while (rk__ring_mp_send(p->mp, &m, payload, 8, NULL) == RK_ERR_QUEUE_FULL) {
      p->full++;
      rk__ring_mp_wait_space(p->mp, rk__now_ns() + 1000000u);
    }
  }
  return NULL;
}

static void test_mp(rk__ring_mp_kind_t kind, const char *name, bool marks) {
  const uint32_t cap = 32, slot = 64;
  rk_abi_ring_t *hdr = aligned_alloc(RK_ABI_LINE, sizeof *hdr);
  unsigned char *slots = aligned_alloc(RK_ABI_LINE, cap * slot);
  rk__ring_mp_t *mp = aligned_alloc(RK_ABI_LINE, sizeof *mp);
  CHECK_OK(rk__ring_init(hdr, cap, slot));
  if (marks) rk__ring_mark_slots(hdr);
  rk__ring_mp_init(mp, hdr, slots, kind);
  mp_producer_t ps[kProducers];
  pthread_t th[kProducers];
  for (uint32_t i = 0; i < kProducers; ++i) {
    ps[i] = (mp_producer_t){mp, i, 0};
    pthread_create(&th[i], NULL, mp_main, &ps[i]);
  }
  rk__ring_end_t c;
  rk__ring_attach(&c, hdr, slots, false);
  uint32_t next[kProducers] = {0};
  uint64_t got = 0, bad = 0;
  while (got < (uint64_t)kProducers * kPerProducer) {
    uint64_t n = rk__ring_available(&c);
    if (n == 0) {
      rk__ring_wait_data(hdr, c.own, rk__now_ns() + 1000000u);
      continue;
    }
    for (uint64_t i = 0; i < n; ++i) {
      const unsigned char *s = rk__ring_peek(&c, (uint32_t)i);
      const rk_abi_msg_t *m = (const rk_abi_msg_t *)s;
      uint32_t pl[2];
      memcpy(pl, s + RK_ABI_MSG_HEADER, sizeof pl);
      uint32_t id = (uint32_t)(m->correlation_id >> 32);
      uint32_t seq = (uint32_t)m->correlation_id;
      if (id >= kProducers || pl[0] != id || pl[1] != seq || seq != next[id] ||
          m->size != 8) {
        if (bad++ < 5)
          printf("  %s: producer %u seq %u payload %u/%u (expected seq %u)\n",
                 name, id, seq, pl[0], pl[1], id < kProducers ? next[id] : 0);
      } else {
        next[id]++;
      }
    }
    got += n;
    rk__ring_release(&c, (uint32_t)n);
    rk__ring_signal_space(hdr);
  }
  uint64_t full = 0;
  for (uint32_t i = 0; i < kProducers; ++i) {
    pthread_join(th[i], NULL);
    full += ps[i].full;
  }
  CHECK(bad == 0, "%s: %llu messages lost, duplicated or reordered", name,
        (unsigned long long)bad);
  for (uint32_t i = 0; i < kProducers; ++i)
    CHECK(next[i] == kPerProducer, "%s: producer %u delivered %u", name, i,
          next[i]);
  printf("  %s: %d x %d messages, ring full %llu times\n", name, kProducers,
         kPerProducer, (unsigned long long)full);
  free(mp);
  free(hdr);
  free(slots);
}

static void test_init_errors(void) {
  rk_abi_ring_t *hdr = aligned_alloc(RK_ABI_LINE, sizeof *hdr);
  CHECK_STATUS(rk__ring_init(hdr, 3, 64), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk__ring_init(hdr, 0, 64), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk__ring_init(hdr, 4, 48), RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk__ring_init(hdr, 1, 64));
  CHECK(hdr->magic == RK_ABI_RING_MAGIC && hdr->version == RK_ABI_VERSION,
        "header stamped");
  CHECK(rk_abi_slot_size(0) == 64 && rk_abi_slot_size(32) == 64 &&
            rk_abi_slot_size(33) == 128,
        "slot sizes round to 64 bytes with the header");
  /* A ring of one: full after one, never overwritten. */
  unsigned char slot[64];
  rk__ring_end_t p, c;
  rk__ring_attach(&p, hdr, slot, true);
  rk__ring_attach(&c, hdr, slot, false);
  CHECK(rk__ring_peek(&c, 0) == NULL, "empty");
  CHECK(rk__ring_reserve(&p) != NULL, "one free slot");
  rk__ring_publish(&p, 1);
  CHECK(rk__ring_reserve(&p) == NULL, "full after one");
  CHECK(!rk__ring_wait_space(hdr, p.own, rk__now_ns() + 1000000u),
        "a wait for space times out");
  CHECK(rk__ring_peek(&c, 0) != NULL && rk__ring_peek(&c, 1) == NULL,
        "one message");
  rk__ring_release(&c, 1);
  CHECK(rk__ring_reserve(&p) != NULL, "free again");
  CHECK(!rk__ring_wait_data(hdr, c.own, rk__now_ns() + 1000000u),
        "a wait for data times out");
  free(hdr);
}

/* Slot marks: a marked slot is seen before tail covers it, an unmarked
 * consumer still goes by tail, a mark from the previous lap is not taken,
 * and a consumer ahead of tail neither sees data nor a negative depth. */
static void test_marks(void) {
  enum { kCap = 4, kSlot = 64 };
  rk_abi_ring_t *hdr = aligned_alloc(RK_ABI_LINE, sizeof *hdr);
  unsigned char *slots = aligned_alloc(RK_ABI_LINE, kCap * kSlot);
  memset(slots, 0, kCap * kSlot);
  CHECK_OK(rk__ring_init(hdr, kCap, kSlot));
  rk__ring_end_t plain;
  rk__ring_attach(&plain, hdr, slots, false); /* before the flag */
  rk__ring_mark_slots(hdr);
  CHECK(hdr->flags == RK_ABI_RING_SLOT_SEQ, "the flag is in the header");
  rk__ring_end_t p, c;
  rk__ring_attach(&p, hdr, slots, true);
  rk__ring_attach(&c, hdr, slots, false);
  CHECK(p.marks && c.marks && !plain.marks, "ends read the flag at attach");
  /* A whole lap through the ring: marks and tail both published. */
  for (uint32_t i = 0; i < kCap; ++i) {
    unsigned char *m = rk__ring_reserve(&p);
    CHECK(m != NULL, "slot %u free", i);
    memcpy(m + RK_ABI_MSG_HEADER, &i, sizeof i);
    rk__ring_publish(&p, 1);
    CHECK(((rk_abi_msg_t *)m)->seq == i + 1, "slot %u marked %u", i,
          ((rk_abi_msg_t *)m)->seq);
  }
  CHECK(hdr->tail == kCap, "tail published too");
  CHECK(rk__ring_available(&c) == kCap, "a full ring by its marks");
  rk__ring_release(&c, kCap);
  CHECK(rk__ring_peek(&c, 0) == NULL,
        "the previous lap's mark (1) is not taken for index %u (5)", kCap);
  /* A producer between its mark and its tail store: the slot is written
   * and marked, tail not yet moved. */
  unsigned char *m = rk__ring_reserve(&p);
  uint32_t v = 77;
  memcpy(m + RK_ABI_MSG_HEADER, &v, sizeof v);
  ((rk_abi_msg_t *)m)->seq = kCap + 1;
  const unsigned char *got = rk__ring_peek(&c, 0);
  CHECK(got == m, "the marked consumer takes the slot before tail moves");
  rk__ring_release(&c, 1);
  CHECK(hdr->head == kCap + 1 && hdr->tail == kCap,
        "head is ahead of tail: %llu, %llu", (unsigned long long)hdr->head,
        (unsigned long long)hdr->tail);
  CHECK(rk__ring_depth(hdr) == 0, "no negative depth");
  CHECK(!rk__ring_wait_data(hdr, c.own, rk__now_ns() + 1000000u),
        "no data seen while head is ahead of tail");
  rk__ring_end_t late;
  rk__ring_attach(&late, hdr, slots, false);
  CHECK(late.other == late.own && rk__ring_peek(&late, 0) == NULL,
        "a consumer attached now starts at head, with nothing published");
  /* An unmarked consumer goes by tail only: it saw the lap through tail
   * and does not take the marked slot tail does not cover. */
  CHECK(rk__ring_available(&plain) == kCap, "tail-only view: %u", kCap);
  rk__ring_release(&plain, kCap);
  CHECK(rk__ring_peek(&plain, 0) == NULL,
        "tail-only: the slot marked ahead of tail is not taken");
  /* The producer's tail store catches up. */
  p.own++;
  __atomic_store_n(&hdr->tail, p.own, __ATOMIC_RELEASE);
  CHECK(rk__ring_peek(&plain, 0) == m, "tail-only: taken once tail moves");
  CHECK(rk__ring_peek(&c, 0) == NULL, "the marked consumer took it once");
  free(hdr);
  free(slots);
}

/* ---- Marks across 2^32 ---------------------------------------------------
 *
 * A slot's mark is the low 32 bits of its index + 1, so index 2^32 - 1 is
 * marked 0. A producer that stored a header with seq 0 before the payload
 * would make that slot look published to a consumer going by marks while
 * the payload is still the previous lap's. Each trial starts an empty
 * ring two slots before 2^32 (every slot holding its previous lap's mark,
 * as a running ring does) and sends four messages through the
 * multi-producer stage while a consumer polls; the payload must always be
 * the message's own. */

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
enum { kWrapCap = 4, kWrapTrials = 4000, kWrapMsgs = 4 };
#else
enum { kWrapCap = 4, kWrapTrials = 20000, kWrapMsgs = 4 };
#endif
/* A long payload (its copy is a wide window), the index at its end, which
 * is copied last. */
enum { kWrapPayload = 960, kWrapSlot = 1024 };

typedef struct {
  rk_abi_ring_t *hdr;
  unsigned char *slots;
  rk__ring_mp_t *mp;
  uint64_t start;
  uint32_t trial; /* atomic: the trial the producer may run */
  uint32_t ready; /* atomic: the trial the consumer has set up */
  uint32_t done;  /* atomic: the trial whose sends have all returned */
} wrap_t;

static void *wrap_producer(void *arg) {
  wrap_t *w = arg;
  for (uint32_t t = 1; t <= kWrapTrials; ++t) {
    while (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) != t) rk__cpu_relax();
    rk__ring_mp_init(w->mp, w->hdr, w->slots, RK__RING_MP_LOCK);
    for (uint64_t i = 0; i < kWrapMsgs; ++i) {
      const uint64_t index = w->start + i;
      uint64_t payload[kWrapPayload / 8] = {0};
      payload[kWrapPayload / 8 - 1] = index;
      rk_abi_msg_t m = {.correlation_id = index, .type = RK_ABI_MSG_REQUEST};
      while (rk__ring_mp_send_quiet(w->mp, &m, payload, sizeof payload, NULL) !=
             RK_OK)
        rk__cpu_relax();
    }
    __atomic_store_n(&w->done, t, __ATOMIC_RELEASE);
  }
  return NULL;
}

static void test_mark_wrap(void) {
  enum { kSlot = kWrapSlot, kLast = RK_ABI_MSG_HEADER + kWrapPayload - 8 };
  wrap_t w = {0};
  w.hdr = aligned_alloc(RK_ABI_LINE, sizeof *w.hdr);
  w.slots = aligned_alloc(RK_ABI_LINE, kWrapCap * kSlot);
  w.mp = aligned_alloc(RK_ABI_LINE, sizeof *w.mp);
  w.start = (UINT64_C(1) << 32) - 2;
  pthread_t th;
  pthread_create(&th, NULL, wrap_producer, &w);
  uint64_t bad = 0, seen_wrap = 0;
  for (uint32_t t = 1; t <= kWrapTrials; ++t) {
    CHECK_OK(rk__ring_init(w.hdr, kWrapCap, kSlot));
    rk__ring_mark_slots(w.hdr);
    w.hdr->head = w.hdr->tail = w.start;
    for (uint64_t i = 0; i < kWrapCap; ++i) {
      /* The slot of index start + i last held index start + i - cap. */
      const uint64_t prev = w.start + i - kWrapCap;
      unsigned char *slot = w.slots + ((w.start + i) % kWrapCap) * kSlot;
      memset(slot, 0, kSlot);
      ((rk_abi_msg_t *)slot)->seq = (uint32_t)(prev + 1);
      memcpy(slot + kLast, &prev, sizeof prev);
    }
    rk__ring_end_t c;
    rk__ring_attach(&c, w.hdr, w.slots, false);
    __atomic_store_n(&w.ready, t, __ATOMIC_RELEASE);
    for (uint64_t i = 0; i < kWrapMsgs; ++i) {
      const unsigned char *s;
      while (!(s = rk__ring_peek(&c, 0))) {
      }
      uint64_t v;
      memcpy(&v, s + kLast, sizeof v);
      if (v != w.start + i && bad++ < 3)
        printf("  trial %u: index %llu carried %llu\n", t,
               (unsigned long long)(w.start + i), (unsigned long long)v);
      seen_wrap += (uint32_t)(w.start + i + 1) == 0;
      rk__ring_release(&c, 1);
    }
    /* The producer's last stores (tail, the stage) before the next set-up. */
    while (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) != t) rk__cpu_relax();
  }
  pthread_join(th, NULL);
  CHECK(seen_wrap == kWrapTrials, "every trial took index 2^32 - 1");
  CHECK(bad == 0,
        "%llu messages read before their payload was in (the mark of index "
        "2^32 - 1 stored early)",
        (unsigned long long)bad);
  free(w.mp);
  free(w.hdr);
  free(w.slots);
}

/* ---- Hybrid logical clock ------------------------------------------------ */

enum { kTickers = 4, kTicks = 50000 };
static uint64_t g_clock;
static uint64_t g_ticks[kTickers][kTicks];

static void *tick_main(void *arg) {
  uint64_t *out = arg;
  for (int i = 0; i < kTicks; ++i) out[i] = rk__hlc_tick(&g_clock);
  return NULL;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static void test_hlc(void) {
  pthread_t th[kTickers];
  for (int i = 0; i < kTickers; ++i)
    pthread_create(&th[i], NULL, tick_main, g_ticks[i]);
  for (int i = 0; i < kTickers; ++i) pthread_join(th[i], NULL);
  int decreasing = 0;
  for (int t = 0; t < kTickers; ++t)
    for (int i = 1; i < kTicks; ++i)
      if (g_ticks[t][i] <= g_ticks[t][i - 1]) decreasing++;
  CHECK(decreasing == 0, "%d ticks did not increase within a thread",
        decreasing);
  uint64_t *all = malloc(sizeof(uint64_t) * kTickers * kTicks);
  memcpy(all, g_ticks, sizeof g_ticks);
  qsort(all, (size_t)kTickers * kTicks, sizeof *all, cmp_u64);
  int dups = 0;
  for (size_t i = 1; i < (size_t)kTickers * kTicks; ++i)
    if (all[i] == all[i - 1]) dups++;
  CHECK(dups == 0, "%d concurrent ticks produced the same value", dups);
  free(all);
  uint64_t phys = rk__hlc_physical();
  CHECK(g_clock >= phys - 60000000000u, "the clock follows physical time");
  /* Merging a stamp from the future orders the reply after it. */
  uint64_t local = 0, remote = phys + 1000000000000u;
  uint64_t r = rk__hlc_merge(&local, remote);
  CHECK(r > remote, "merge: %llu after %llu", (unsigned long long)r,
        (unsigned long long)remote);
  CHECK(rk__hlc_tick(&local) > r, "ticks after a merge keep increasing");
  /* Several receive events at once: consecutive values after the latest
   * stamp and after the clock, and the clock at the last of them. */
  const uint64_t before = local;
  const uint64_t first = rk__hlc_merge_n(&local, remote + 5, phys, 8);
  CHECK(first > remote + 5 && first > before && local == first + 7,
        "merge_n: first %llu after %llu and %llu, clock %llu",
        (unsigned long long)first, (unsigned long long)(remote + 5),
        (unsigned long long)before, (unsigned long long)local);
  uint64_t quiet = 0;
  const uint64_t now = rk__hlc_physical();
  CHECK(rk__hlc_merge_n(&quiet, 0, now, 3) == now && quiet == now + 2,
        "merge_n of old stamps follows physical time");
  /* The skew check that rk_hlc_update makes. */
  rk_hlc_t clock;
  rk_hlc_init(&clock);
  rk_hlc_set_max_skew(&clock, 1000000u);
  CHECK(!rk__hlc_too_far(&clock, now + 500000u, now) &&
            rk__hlc_too_far(&clock, now + 2000000u, now) &&
            !rk__hlc_too_far(&clock, now - 5000000000u, now),
        "too_far: only stamps more than max_skew_ns ahead");
  CHECK(
      rk__hlc_update_at(&clock, now + 2000000u, now, NULL) == RK_ERR_CLOCK_SKEW,
      "update_at refuses what too_far calls too far");
}

int main(void) {
  test_init_errors();
  test_marks();
  test_spsc_order(false);
  test_spsc_order(true);
  test_mp(RK__RING_MP_CLAIM, "claim", false);
  test_mp(RK__RING_MP_LOCK, "lock", false);
  test_mp(RK__RING_MP_CLAIM, "claim, marked slots", true);
  test_mp(RK__RING_MP_LOCK, "lock, marked slots", true);
  test_mark_wrap();
  test_hlc();
  return rk_test_finish("ring");
}
