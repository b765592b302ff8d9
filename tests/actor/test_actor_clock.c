/* Hybrid logical clocks: the public API (rk/hlc.h), and causality across
 * actors -- a request sent after a response was received carries a later
 * timestamp than that response, so the next actor's response is later too
 * -- on every receive path (call, its fast path, receive, receive_batch,
 * traditional mode, relaunch), across host threads, and with an actor
 * whose clock runs far ahead.
 *
 *   actor_clock [--backend NAME] [--relaunch]
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/hlc.h"
#include "base/sys.h"
#include "rk/hlc.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static rk_context_t *g_ctx;

static rk_actor_t *launch(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = mode;
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, kAddOneSource, "add_one", &o, &a)))
    return NULL;
  return a;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- The API ------------------------------------------------------------ */

static void test_api(void) {
  rk_hlc_t c;
  rk_hlc_init(&c);
  CHECK(rk_hlc_peek(&c) == 0, "a new clock is at 0");
  const uint64_t t1 = rk_hlc_now(&c), t2 = rk_hlc_now(&c);
  CHECK(t2 > t1, "ticks increase: %llu then %llu", (unsigned long long)t1,
        (unsigned long long)t2);
  uint64_t phys;
  uint32_t logical;
  rk_hlc_unpack(t1, &phys, &logical);
  const uint64_t wall = wall_ns();
  CHECK(phys <= wall && wall - phys < 1000000000u,
        "the physical part (%llu) is the wall clock (%llu)",
        (unsigned long long)phys, (unsigned long long)wall);
  CHECK(phys % (UINT64_C(1) << RK_HLC_LOGICAL_BITS) == 0,
        "the physical part has no logical bits");

  /* pack / unpack round trip; a carry past the logical bits. */
  const uint64_t p = UINT64_C(1700000000123456789);
  const uint64_t packed = rk_hlc_pack(p, 77);
  rk_hlc_unpack(packed, &phys, &logical);
  CHECK(phys == (p & ~RK_HLC_LOGICAL_MASK) && logical == 77,
        "unpack(pack(p, 77)) = (%llu, %u)", (unsigned long long)phys, logical);
  CHECK(rk_hlc_pack(p, 65536) == rk_hlc_pack(p + 65536, 0),
        "a logical value past 65535 carries into the physical part");

  /* compare */
  CHECK(rk_hlc_compare(t1, t2) == -1 && rk_hlc_compare(t2, t1) == 1 &&
            rk_hlc_compare(t1, t1) == 0,
        "compare orders by value");

  /* update: a stamp ahead (within the bound) moves the clock past it. */
  const uint64_t ahead = rk_hlc_pack(wall + 100000000u, 5); /* +100 ms */
  uint64_t t3 = 0;
  CHECK_OK(rk_hlc_update(&c, ahead, &t3));
  CHECK(t3 > ahead, "update returns a stamp past the received one");
  CHECK(rk_hlc_now(&c) > t3, "and the next tick is later still");
  /* An older stamp still advances the clock (a receive is an event). */
  uint64_t t4 = 0;
  CHECK_OK(rk_hlc_update(&c, t1, &t4));
  CHECK(t4 > t3, "update with an old stamp still ticks");

  /* Bounded skew: 10 s ahead is refused, the clock unchanged. */
  const uint64_t before = rk_hlc_peek(&c);
  const uint64_t far = rk_hlc_pack(wall + 10000000000u, 0);
  CHECK_STATUS(rk_hlc_update(&c, far, NULL), RK_ERR_CLOCK_SKEW);
  CHECK_ERROR_HAS("ahead of this machine's clock");
  CHECK(rk_hlc_peek(&c) == before, "a refused stamp leaves the clock alone");
  /* Negative control: a wider bound accepts it. */
  rk_hlc_set_max_skew(&c, 20000000000u);
  CHECK_OK(rk_hlc_update(&c, far, &t4));
  CHECK(t4 > far, "accepted under a 20 s bound");
  /* A tighter bound refuses what the default accepts. */
  rk_hlc_t d;
  rk_hlc_init(&d);
  rk_hlc_set_max_skew(&d, 10000000u); /* 10 ms */
  CHECK_STATUS(rk_hlc_update(&d, ahead, NULL), RK_ERR_CLOCK_SKEW);
  CHECK_STATUS(rk_hlc_update(NULL, ahead, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK(rk_hlc_host() != NULL && rk_hlc_host() == rk_hlc_host(),
        "one process clock");
  CHECK_STATUS(rk_hlc_update(rk_hlc_host(), far, NULL), RK_ERR_CLOCK_SKEW);
}

/* Concurrent ticks and updates of one clock never return the same value. */
enum { kThreads = 4, kTicks = 20000 };
static rk_hlc_t g_shared;
static uint64_t g_seen[kThreads][kTicks];

static rk_hlc_t *g_ticked; /* the clock the tickers tick */

static void *ticker(void *arg) {
  const size_t k = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < kTicks; ++i) {
    if (i % 3 == 2)
      rk_hlc_update(g_ticked, g_seen[k][i - 1], &g_seen[k][i]);
    else
      g_seen[k][i] = rk_hlc_now(g_ticked);
  }
  return NULL;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* On a clock of the caller's, and on the process clock, whose threads
 * take runs of ticks (base/hlc.h). */
static void test_concurrent_ticks(rk_hlc_t *clock) {
  if (clock == &g_shared) rk_hlc_init(&g_shared);
  g_ticked = clock;
  pthread_t t[kThreads];
  for (size_t k = 0; k < kThreads; ++k)
    pthread_create(&t[k], NULL, ticker, (void *)(uintptr_t)k);
  for (size_t k = 0; k < kThreads; ++k) pthread_join(t[k], NULL);
  bool increasing = true;
  for (size_t k = 0; k < kThreads; ++k)
    for (size_t i = 1; i < kTicks; ++i)
      increasing = increasing && g_seen[k][i] > g_seen[k][i - 1];
  CHECK(increasing, "each thread's stamps increase");
  qsort(g_seen, kThreads * kTicks, sizeof(uint64_t), cmp_u64);
  size_t dups = 0;
  const uint64_t *all = &g_seen[0][0];
  for (size_t i = 1; i < kThreads * kTicks; ++i) dups += all[i] == all[i - 1];
  CHECK(dups == 0, "%zu duplicate stamps among %d", dups, kThreads * kTicks);
}

/* ---- The process clock's runs, step by step ----------------------------
 *
 * Two threads take turns (each step runs on the thread named, the other
 * waiting), so that one of them holds a run of ticks while the other
 * observes or ticks; what one hands the other goes through a mutex, as
 * memory a program shares would. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  void (*step)(uint64_t *); /* for the helper thread; NULL when done */
  uint64_t *arg;
  bool quit;
} helper_t;
static helper_t g_helper;

static void *helper_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_helper.lock);
  for (;;) {
    while (!g_helper.step && !g_helper.quit)
      pthread_cond_wait(&g_helper.cond, &g_helper.lock);
    if (g_helper.quit) break;
    g_helper.step(g_helper.arg);
    g_helper.step = NULL;
    pthread_cond_broadcast(&g_helper.cond);
  }
  pthread_mutex_unlock(&g_helper.lock);
  return NULL;
}

/* Runs step(arg) on the helper thread and waits for it. */
static void on_helper(void (*step)(uint64_t *), uint64_t *arg) {
  pthread_mutex_lock(&g_helper.lock);
  g_helper.step = step;
  g_helper.arg = arg;
  pthread_cond_broadcast(&g_helper.cond);
  while (g_helper.step) pthread_cond_wait(&g_helper.cond, &g_helper.lock);
  pthread_mutex_unlock(&g_helper.lock);
}

static void step_tick(uint64_t *t) { *t = rk__hlc_host_tick(); }
static void step_observe(uint64_t *t) { rk__hlc_host_observe(*t); }

static void test_host_runs(void) {
  pthread_mutex_init(&g_helper.lock, NULL);
  pthread_cond_init(&g_helper.cond, NULL);
  pthread_t helper;
  pthread_create(&helper, NULL, helper_main, NULL);
  int late = 0;
  for (int round = 0; round < 50; ++round) {
    /* The helper holds a run; this thread observes a stamp inside it and
     * hands the stamp over: the helper's next tick must pass it. */
    uint64_t th = 0;
    on_helper(step_tick, &th);
    uint64_t inside = th + 1 + (uint64_t)round % (RK__HLC_HOST_RUN - 2);
    rk__hlc_host_observe(inside);
    uint64_t next = 0;
    on_helper(step_tick, &next);
    late += next <= inside;
    /* The same with this thread holding the run and the helper observing. */
    uint64_t mine = rk__hlc_host_tick();
    uint64_t seen = mine + 1 + (uint64_t)round % (RK__HLC_HOST_RUN - 2);
    on_helper(step_observe, &seen);
    late += rk__hlc_host_tick() <= seen;
    /* Ticks handed over: each thread's next is later than the other's. */
    uint64_t a = rk__hlc_host_tick(), b = 0;
    on_helper(step_tick, &b);
    late += b <= a;
    late += rk__hlc_host_tick() <= b;
    /* A holder that observes inside, at the end of, and past its run. */
    const uint64_t t1 = rk__hlc_host_tick();
    rk__hlc_host_observe(t1 + 10);
    const uint64_t t2 = rk__hlc_host_tick();
    late += t2 <= t1 + 10;
    rk__hlc_host_observe(t2 + RK__HLC_HOST_RUN);
    const uint64_t t3 = rk__hlc_host_tick();
    late += t3 <= t2 + RK__HLC_HOST_RUN;
    /* A stamp long past: no tick goes back to it either. */
    rk__hlc_host_observe(t3 - 2 * RK__HLC_HOST_RUN);
    late += rk__hlc_host_tick() <= t3;
  }
  CHECK(late == 0,
        "%d ticks of the process clock were not later than a stamp their "
        "thread had learned of",
        late);
  pthread_mutex_lock(&g_helper.lock);
  g_helper.quit = true;
  pthread_cond_broadcast(&g_helper.cond);
  pthread_mutex_unlock(&g_helper.lock);
  pthread_join(helper, NULL);
  pthread_mutex_destroy(&g_helper.lock);
  pthread_cond_destroy(&g_helper.cond);
}

/* ---- Causality across actors -------------------------------------------- */

typedef enum { VIA_CALL, VIA_RECEIVE, VIA_BATCH } via_t;
static const char *const kViaNames[] = {"call", "send+receive",
                                        "send_batch+receive_batch"};

/* One request to `a` by way of `via`; the response's timestamp. */
static uint64_t exchange(rk_actor_t *a, via_t via, int v) {
  int_msg_t q = {v}, r = {0};
  rk_actor_message_t info;
  memset(&info, 0, sizeof info);
  switch (via) {
    case VIA_CALL:
      CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                             &info));
      break;
    case VIA_RECEIVE:
      CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL));
      CHECK_OK(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, &info));
      break;
    case VIA_BATCH: {
      int_msg_t qs[2] = {{v}, {v}}, rs[2];
      rk_actor_message_t infos[2];
      size_t sent = 0, got = 0, total = 0;
      CHECK_OK(rk_actor_send_batch(a, qs, sizeof qs[0], 2, RK_TIMEOUT_INFINITE,
                                   &sent, NULL));
      while (total < 2) {
        if (!CHECK_OK(rk_actor_receive_batch(a, rs, sizeof rs, 2 - total,
                                             RK_TIMEOUT_INFINITE, infos, &got)))
          break;
        for (size_t i = 0; i < got; ++i)
          if (infos[i].timestamp > info.timestamp) info = infos[i];
        r = rs[got - 1];
        total += got;
      }
      break;
    }
  }
  CHECK(r.v == v + 1, "answer %d to %d", r.v, v);
  return info.timestamp;
}

/* Alternates between A and B: every response is later than the one
 * received before it, from either actor. */
static void test_alternating(rk_actor_mode_t mode, via_t via) {
  rk_actor_t *a = launch(mode), *b = launch(mode);
  if (!a || !b) {
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  const int rounds = 300;
  int late = 0;
  uint64_t last = exchange(a, via, 0);
  for (int i = 1; i < rounds; ++i) {
    const uint64_t t = exchange(i % 2 ? b : a, via, i);
    late += t <= last;
    last = t;
  }
  CHECK(late == 0,
        "%s, %s: %d of %d responses were not later than the response "
        "received before their request was sent",
        rk_actor_mode_name(mode), kViaNames[via], late, rounds - 1);
  rk_actor_destroy(a);
  rk_actor_destroy(b);
}

/* A's clock runs 2 s ahead (as a device or peer with a fast clock would):
 * B, whose clock is at the wall clock, must still answer the request sent
 * after A's response with a later stamp -- the host carries A's time to B,
 * and B merges the request's stamp before it stamps its response. */
static void test_chain_ahead(rk_actor_mode_t mode, via_t via) {
  rk_actor_t *a = launch(mode), *b = launch(mode);
  if (!a || !b) {
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  const uint64_t ahead = rk_hlc_pack(wall_ns() + 2000000000u, 0);
  __atomic_store_n(&rk__actor_control(a)->clock, ahead, __ATOMIC_RELAXED);
  const uint64_t ta = exchange(a, via, 1);
  CHECK(ta > ahead, "A answers past its own clock");
  const uint64_t tb = exchange(b, via, 2);
  CHECK(tb > ta,
        "%s, %s: B's response (%llu) is not later than A's (%llu), "
        "received before B's request was sent",
        rk_actor_mode_name(mode), kViaNames[via], (unsigned long long)tb,
        (unsigned long long)ta);
  /* And back: A again after B. */
  const uint64_t ta2 = exchange(a, via, 3);
  CHECK(ta2 > tb, "A's next response is later than B's");
  rk_actor_destroy(a);
  rk_actor_destroy(b);
}

/* Across threads: one thread takes A's response and hands its stamp over
 * through memory; another then calls B. */
typedef struct {
  rk_actor_t *a, *b;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t stamp; /* A's response, 0 until there */
  int late;
} relay_t;

static void *relay_first(void *arg) {
  relay_t *r = arg;
  const uint64_t t = exchange(r->a, VIA_CALL, 10);
  pthread_mutex_lock(&r->lock);
  r->stamp = t;
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->lock);
  return NULL;
}

static void *relay_second(void *arg) {
  relay_t *r = arg;
  pthread_mutex_lock(&r->lock);
  while (!r->stamp) pthread_cond_wait(&r->cond, &r->lock);
  const uint64_t ta = r->stamp;
  pthread_mutex_unlock(&r->lock);
  const uint64_t tb = exchange(r->b, VIA_CALL, 20);
  r->late = tb <= ta;
  return NULL;
}

static void test_across_threads(rk_actor_mode_t mode) {
  relay_t r;
  memset(&r, 0, sizeof r);
  r.a = launch(mode);
  r.b = launch(mode);
  if (!r.a || !r.b) {
    rk_actor_destroy(r.a);
    rk_actor_destroy(r.b);
    return;
  }
  pthread_mutex_init(&r.lock, NULL);
  pthread_cond_init(&r.cond, NULL);
  int late = 0;
  for (int i = 0; i < 3; ++i) {
    /* Ahead each time, so B's own clock cannot pass A's by chance. */
    const uint64_t ahead = rk_hlc_pack(wall_ns() + 1000000000u * (i + 1), 0);
    __atomic_store_n(&rk__actor_control(r.a)->clock, ahead, __ATOMIC_RELAXED);
    r.stamp = 0;
    pthread_t t1, t2;
    pthread_create(&t2, NULL, relay_second, &r);
    pthread_create(&t1, NULL, relay_first, &r);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    late += r.late;
  }
  CHECK(late == 0,
        "%s: %d of 3 responses of B were not later than A's response "
        "that another thread received before B's request was sent",
        rk_actor_mode_name(mode), late);
  pthread_mutex_destroy(&r.lock);
  pthread_cond_destroy(&r.cond);
  rk_actor_destroy(r.a);
  rk_actor_destroy(r.b);
}

/* A timestamp from outside rk, merged into the process clock, orders
 * every later request after it. */
static void test_external_stamp(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(mode);
  if (!a) return;
  const uint64_t peer = rk_hlc_pack(wall_ns() + 200000000u, 9); /* +200 ms */
  CHECK_OK(rk_hlc_update(rk_hlc_host(), peer, NULL));
  const uint64_t t = exchange(a, VIA_CALL, 5);
  CHECK(t > peer, "%s: a response after an external stamp is later",
        rk_actor_mode_name(mode));
  rk_actor_destroy(a);
}

int main(int argc, char **argv) {
  rk_backend_kind_t kind = RK_BACKEND_CPU;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      if (rk_backend_kind_from_name(argv[++i], &kind) != RK_OK) {
        printf("FAILED: unknown backend %s\n", argv[i]);
        return 1;
      }
    } else if (strcmp(argv[i], "--relaunch") == 0) {
      setenv("RK_ACTOR_RELAUNCH", "1", 1);
    } else {
      printf("usage: actor_clock [--backend NAME] [--relaunch]\n");
      return 1;
    }
  }
  actor_test_watchdog_start();
  actor_test_watch("api", 60);
  test_api();
  actor_test_watch("concurrent ticks", 60);
  test_concurrent_ticks(&g_shared);
  test_concurrent_ticks(rk_hlc_host());
  actor_test_watch("process clock runs", 60);
  test_host_runs();
  actor_test_watch("open", 120);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context_on(kind, &be);
  const rk_actor_mode_t modes[] = {RK_ACTOR_PERSISTENT, RK_ACTOR_TRADITIONAL};
  for (int m = 0; m < 2; ++m) {
    printf("mode %s\n", rk_actor_mode_name(modes[m]));
    for (int v = VIA_CALL; v <= VIA_BATCH; ++v) {
      actor_test_watch("alternating", 120);
      test_alternating(modes[m], (via_t)v);
      actor_test_watch("chain ahead", 60);
      test_chain_ahead(modes[m], (via_t)v);
    }
    actor_test_watch("across threads", 60);
    test_across_threads(modes[m]);
    actor_test_watch("external stamp", 60);
    test_external_stamp(modes[m]);
  }
  CHECK_OK(rk_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("actor_clock");
}
