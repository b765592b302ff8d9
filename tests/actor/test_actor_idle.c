/* Idle work offered to a persistent actor's worker (hal/actor_loop.h): the
 * worker turns it while idle, stops (with one leave) when it parks, turns
 * again once a request wakes it, keeps spinning while the work reports
 * activity, turns it when its output ring is full (the work may be what
 * takes the answers), and once the work is withdrawn never calls it again.
 * One offer at a time. Run on the CPU backend's worker and, with
 * --relaunch, on the relaunch driver. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static const uint64_t kSec = 1000000000ull;

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / kSec), (long)(ns % kSec)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

typedef struct counter_work {
  rk__idle_work_t work;
  uint64_t turns, leaves; /* atomic */
  uint32_t in_call;       /* atomic */
  uint64_t busy_until;    /* atomic: turns report activity until then */
  /* Optional: the actor whose answers a turn takes (a forwarder's job). */
  rk_actor_t *drain;
  int got[64];
  uint32_t ngot; /* atomic */
} counter_work_t;

static unsigned count_turn(void *user) {
  counter_work_t *w = user;
  __atomic_store_n(&w->in_call, 1u, __ATOMIC_RELAXED);
  __atomic_fetch_add(&w->turns, 1u, __ATOMIC_RELAXED);
  unsigned did =
      rk__now_ns() < __atomic_load_n(&w->busy_until, __ATOMIC_RELAXED);
  if (w->drain) {
    int_msg_t r;
    rk_actor_message_t info;
    while (w->ngot < 64 &&
           rk_actor_receive(w->drain, &r, sizeof r, 0, &info) == RK_OK) {
      w->got[w->ngot] = r.v;
      __atomic_store_n(&w->ngot, w->ngot + 1, __ATOMIC_RELEASE);
      did = 1;
    }
  }
  __atomic_store_n(&w->in_call, 0u, __ATOMIC_RELAXED);
  return did;
}

static void count_leave(void *user) {
  counter_work_t *w = user;
  __atomic_fetch_add(&w->leaves, 1u, __ATOMIC_RELAXED);
}

static void work_init(counter_work_t *w) {
  memset(w, 0, sizeof *w);
  w->work.turn = count_turn;
  w->work.leave = count_leave;
  w->work.user = w;
}

static uint64_t turns(counter_work_t *w) {
  return __atomic_load_n(&w->turns, __ATOMIC_RELAXED);
}
static uint64_t leaves(counter_work_t *w) {
  return __atomic_load_n(&w->leaves, __ATOMIC_RELAXED);
}

/* Waits up to `ms` for cond(w). */
static bool wait_for(bool (*cond)(counter_work_t *), counter_work_t *w,
                     int ms) {
  for (int i = 0; i < ms; ++i) {
    if (cond(w)) return true;
    sleep_ns(1000000u);
  }
  return cond(w);
}
static bool has_turned(counter_work_t *w) { return turns(w) > 0; }
static bool has_left(counter_work_t *w) { return leaves(w) > 0; }

/* Turns stop once it parks: none in 30 ms. */
static bool settled(counter_work_t *w) {
  uint64_t t = turns(w);
  sleep_ns(30000000u);
  return turns(w) == t;
}

static void test_turns_and_parks(rk_context_t *ctx) {
  actor_test_watch("idle work: turns while idle, leaves when it parks", 60);
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(ctx, kAddOneSource, "add_one", NULL, &a)))
    return;
  counter_work_t w, other;
  work_init(&w);
  work_init(&other);
  /* An actor that parks when idle still turns offered work. */
  rk__actor_park_when_idle(a, true);
  CHECK(rk__actor_offer_idle_work(a, &w.work), "offer");
  CHECK(!rk__actor_offer_idle_work(a, &other.work),
        "a second offer is refused while one is on offer");
  int_msg_t q = {1}, r = {0};
  CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL));
  CHECK(r.v == 2, "answer %d", r.v);
  CHECK(wait_for(has_turned, &w, 2000), "the worker turned the idle work");
  /* RK_ACTOR_SPIN_US (set by main) passes without activity: it parks,
   * leaving once, and turns no more. */
  CHECK(wait_for(has_left, &w, 2000), "the worker left the work to park");
  CHECK(settled(&w), "no turns while parked (%llu)",
        (unsigned long long)turns(&w));
  const uint64_t left = leaves(&w), turned = turns(&w);
  CHECK(left == 1, "%llu leaves for one park", (unsigned long long)left);
  /* A request wakes it: it turns again, then parks again. */
  q.v = 10;
  CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL));
  CHECK(r.v == 11, "answer %d", r.v);
  CHECK(turns(&w) > turned || wait_for(has_turned, &w, 100),
        "turns again after a request");
  for (int i = 0; i < 2000 && leaves(&w) == left; ++i) sleep_ns(1000000u);
  CHECK(leaves(&w) == left + 1, "left again (%llu leaves)",
        (unsigned long long)leaves(&w));
  /* Activity reported by the work keeps it turning past the spin time. */
  CHECK(settled(&w), "parked");
  const uint64_t before = leaves(&w);
  __atomic_store_n(&w.busy_until, rk__now_ns() + 60000000u, __ATOMIC_RELAXED);
  q.v = 20;
  CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL));
  sleep_ns(40000000u);
  CHECK(leaves(&w) == before, "it did not park while the work was busy");
  for (int i = 0; i < 2000 && leaves(&w) == before; ++i) sleep_ns(1000000u);
  CHECK(leaves(&w) == before + 1, "parked once the work went quiet");
  /* Withdrawn: no call runs once that returns, and none starts. */
  q.v = 30;
  CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL));
  rk__actor_withdraw_idle_work(a, &w.work);
  CHECK(__atomic_load_n(&w.in_call, __ATOMIC_RELAXED) == 0,
        "no call in progress after the withdrawal");
  const uint64_t final_turns = turns(&w);
  for (int i = 0; i < 20; ++i) {
    q.v = i;
    CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL));
  }
  sleep_ns(10000000u);
  CHECK(turns(&w) == final_turns, "%llu turns after the withdrawal",
        (unsigned long long)(turns(&w) - final_turns));
  /* Withdrawing work that is not on offer changes nothing; then the slot
   * takes another offer. */
  rk__actor_withdraw_idle_work(a, &other.work);
  CHECK(rk__actor_offer_idle_work(a, &other.work), "offer after withdrawal");
  CHECK(wait_for(has_turned, &other, 2000) ||
            (rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5 * kSec, NULL) ==
                 RK_OK &&
             wait_for(has_turned, &other, 2000)),
        "the new work turns");
  CHECK_OK(rk_actor_terminate(a, 5 * kSec));
  /* Stopped: the last turn was followed by a leave. */
  CHECK(leaves(&other) >= 1, "a stopped worker left the work");
  rk__actor_withdraw_idle_work(a, &other.work);
  rk_actor_destroy(a);
}

static bool got_all(counter_work_t *w) {
  return __atomic_load_n(&w->ngot, __ATOMIC_ACQUIRE) == 48;
}

/* The output ring holds 4 answers; 48 requests go in and nobody else
 * receives: the worker, finding the ring full, turns the work, which takes
 * the answers away, and every request is answered, in order. */
static void test_turns_when_full(rk_context_t *ctx) {
  actor_test_watch("idle work: turned when the output ring is full", 60);
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 64;
  o.output_capacity = 4;
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(ctx, kAddOneSource, "add_one", &o, &a))) return;
  counter_work_t w;
  work_init(&w);
  w.drain = a;
  CHECK(rk__actor_offer_idle_work(a, &w.work), "offer");
  for (int i = 0; i < 48; ++i) {
    int_msg_t q = {100 + i};
    CHECK_OK(rk_actor_send(a, &q, sizeof q, 5 * kSec, NULL));
  }
  CHECK(wait_for(got_all, &w, 5000), "%u of 48 answers taken by the turns",
        __atomic_load_n(&w.ngot, __ATOMIC_ACQUIRE));
  int bad = 0;
  for (uint32_t i = 0; i < w.ngot; ++i) bad += w.got[i] != 101 + (int)i;
  CHECK(bad == 0, "%d answers out of order or wrong", bad);
  rk__actor_withdraw_idle_work(a, &w.work);
  CHECK_OK(rk_actor_terminate(a, 5 * kSec));
  rk_actor_destroy(a);
}

int main(int argc, char **argv) {
  bool relaunch = argc > 1 && !strcmp(argv[1], "--relaunch");
  /* A short spin, so that the worker parks within the test's waits. */
  setenv("RK_ACTOR_SPIN_US", "5000", 1);
  if (relaunch) setenv("RK_ACTOR_RELAUNCH", "1", 1);
  actor_test_watchdog_start();
  rk_backend_t *be = NULL;
  rk_context_t *ctx = actor_test_context(&be);
  test_turns_and_parks(ctx);
  test_turns_when_full(ctx);
  CHECK_OK(actor_test_context_destroy(ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish(relaunch ? "actor_idle --relaunch" : "actor_idle");
}
