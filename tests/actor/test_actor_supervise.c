/* Supervision and the registry: faults injected into real actors -- a
 * handler that returns non-zero, a device side whose launch fails
 * (relaunch and traditional), a handler that hangs -- restart them with the
 * fresh or the last-known state within the budget, and past it the actor
 * is FAILED and every waiter and linked actor hears why. One-for-one and
 * one-for-all groups, links, the statistics, bad arguments; the named
 * registry.
 *
 *   actor_supervise [--backend NAME] [--relaunch]
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/sys.h"
#include "hal/actor_hal.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static rk_context_t *g_ctx;
/* How long a restart may wait for the device side to stop, except where
 * that deadline is what is tested: generous, for loaded machines. */
static const uint64_t kStop = UINT64_C(10000000000);
static bool g_resident; /* persistent actors run resident on this run */

/* op 0: total += v, answer the total; op 1: damage the state and fail
 * with code 5; op 2: spin v rounds of 32768 steps (a slow or hung
 * handler), answer the total. */
typedef struct {
  int op, v;
} sreq_t;
typedef struct {
  int total, x;
} sresp_t;
typedef struct {
  int total;
} sstate_t;
static const char kCounterSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int op; int v; } req_t;\n"
    "typedef struct { int total; int x; } resp_t;\n"
    "typedef struct { int total; } state_t;\n"
    "RK_HANDLER int counter(const req_t *in, resp_t *out, state_t *s) {\n"
    "  out->x = 0;\n"
    "  if (in->op == 1) {\n"
    "    s->total = -1000;\n"
    "    out->total = s->total;\n"
    "    return 5;\n"
    "  }\n"
    "  if (in->op == 2) {\n"
    "    uint32_t x = (uint32_t)in->v;\n"
    "    for (int r = 0; r < in->v; r++) {\n"
    "      for (uint32_t i = 0u; i < 32768u; i++) {\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "      }\n"
    "    }\n"
    "    out->x = (int)(x & 1u);\n"
    "    out->total = s->total;\n"
    "    return 0;\n"
    "  }\n"
    "  s->total += in->v;\n"
    "  out->total = s->total;\n"
    "  return 0;\n"
    "}\n";

static rk_actor_t *launch(rk_actor_mode_t mode, int initial) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = mode;
  sstate_t st = {initial};
  o.initial_state = &st;
  o.initial_state_size = sizeof st;
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, kCounterSource, "counter", &o, &a)))
    return NULL;
  return a;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* call(op, v): the status, the answer in *total. */
static rk_status_t call(rk_actor_t *a, int op, int v, int *total) {
  sreq_t q = {op, v};
  sresp_t r = {0, 0};
  rk_status_t s =
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
  if (total) *total = r.total;
  return s;
}

static rk_actor_stats_t stats(rk_actor_t *a) {
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  CHECK_OK(rk_actor_stats(a, &st));
  return st;
}

/* Waits up to 10 s for `restarts` restarts; false (and a failed check)
 * when they did not come. */
static bool wait_restarts(rk_actor_t *a, uint64_t restarts) {
  for (int i = 0; i < 10000; ++i) {
    rk_actor_stats_t st = stats(a);
    if (st.restarts >= restarts) return true;
    sleep_ms(1);
  }
  char why[256] = "";
  if (rk_actor_state(a) == RK_ACTOR_FAILED) {
    sresp_t r;
    (void)rk_actor_receive(a, &r, sizeof r, 0, NULL);
    rk_actor_receive(a, &r, sizeof r, 1000000u, NULL);
    snprintf(why, sizeof why, "%s", rk_last_error());
  }
  return CHECK(false, "no restart %llu within 10 s (%llu so far), %s %s",
               (unsigned long long)restarts,
               (unsigned long long)stats(a).restarts,
               rk_actor_state_name(rk_actor_state(a)), why);
}

static bool wait_state(rk_actor_t *a, rk_actor_state_t want) {
  for (int i = 0; i < 10000 && rk_actor_state(a) != want; ++i) sleep_ms(1);
  return CHECK(rk_actor_state(a) == want, "state %s, want %s",
               rk_actor_state_name(rk_actor_state(a)),
               rk_actor_state_name(want));
}

/* A receive on its own thread: what it returned and its message. */
typedef struct {
  rk_actor_t *a;
  rk_status_t status;
  char error[512];
  uint32_t done; /* atomic */
  pthread_t thread;
} waiter_t;

static void *waiter_main(void *arg) {
  waiter_t *w = arg;
  sresp_t r;
  w->status = rk_actor_receive(w->a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
  snprintf(w->error, sizeof w->error, "%s", rk_last_error());
  __atomic_store_n(&w->done, 1u, __ATOMIC_RELEASE);
  return NULL;
}

static void waiter_start(waiter_t *w, rk_actor_t *a) {
  memset(w, 0, sizeof *w);
  w->a = a;
  w->status = RK_ERR_INTERNAL;
  pthread_create(&w->thread, NULL, waiter_main, w);
}

/* Events seen by on_event. */
typedef struct {
  pthread_mutex_t lock;
  int restarted, failed;
  rk_actor_fault_t last_cause;
} events_t;

static void on_event(const rk_supervisor_event_t *e, void *user) {
  events_t *ev = user;
  pthread_mutex_lock(&ev->lock);
  if (e->kind == RK_SUPERVISOR_RESTARTED) ev->restarted++;
  if (e->kind == RK_SUPERVISOR_FAILED) ev->failed++;
  ev->last_cause = e->cause;
  pthread_mutex_unlock(&ev->lock);
}

/* ---- Handler faults ------------------------------------------------------ */

/* A fault restarts the actor with its initial state (fresh) or with the
 * state it left (last-known); max_restarts faults in the window are
 * restarts, one more fails it, and a waiting receive wakes naming the
 * cause. */
static void test_handler_fault(rk_actor_mode_t mode,
                               rk_restart_state_t restart) {
  printf("  handler fault, %s, %s\n", rk_actor_mode_name(mode),
         restart == RK_RESTART_FRESH ? "fresh" : "last-known");
  rk_actor_t *a = launch(mode, 100);
  if (!a) return;
  events_t ev;
  memset(&ev, 0, sizeof ev);
  pthread_mutex_init(&ev.lock, NULL);
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.max_restarts = 2;
  o.window_ns = UINT64_C(60000000000);
  o.restart_state = restart;
  o.on_event = on_event;
  o.user = &ev;
  CHECK_OK(rk_actor_supervise(a, &o));
  CHECK(stats(a).supervised, "supervised");
  int total = 0;
  CHECK_OK(call(a, 0, 5, &total));
  CHECK(total == 105, "100 + 5 = %d", total);
  /* The fault: its answer still comes, with the handler's code. */
  rk_actor_message_t info;
  sreq_t q = {1, 0};
  sresp_t r;
  CHECK_STATUS(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info),
      RK_ERR_HANDLER);
  CHECK(info.handler_code == 5, "code %d", info.handler_code);
  if (!wait_restarts(a, 1)) {
    rk_actor_destroy(a);
    return;
  }
  CHECK(rk_actor_state(a) == RK_ACTOR_ACTIVE, "active after a restart");
  CHECK_OK(call(a, 0, 1, &total));
  const int want = restart == RK_RESTART_FRESH ? 101 : -999;
  CHECK(total == want, "after the restart: total %d, want %d", total, want);
  rk_actor_stats_t st = stats(a);
  CHECK(st.restarts == 1 && st.restarts_by_cause[RK_ACTOR_FAULT_HANDLER] == 1 &&
            st.last_fault == RK_ACTOR_FAULT_HANDLER && st.last_fault_code == 5,
        "stats: %llu restarts, %llu by handler, last %s code %d",
        (unsigned long long)st.restarts,
        (unsigned long long)st.restarts_by_cause[RK_ACTOR_FAULT_HANDLER],
        rk_actor_fault_name(st.last_fault), st.last_fault_code);
  /* The second fault: still within the budget. */
  CHECK_STATUS(call(a, 1, 0, NULL), RK_ERR_HANDLER);
  wait_restarts(a, 2);
  CHECK_OK(call(a, 0, 2, &total));
  CHECK(total == (restart == RK_RESTART_FRESH ? 102 : -998),
        "after the second restart: %d", total);
  /* The third: past the budget. A receive waiting meanwhile wakes with
   * the cause. */
  waiter_t w;
  waiter_start(&w, a);
  sleep_ms(20);
  CHECK_STATUS(call(a, 1, 0, NULL), RK_ERR_HANDLER);
  wait_state(a, RK_ACTOR_FAILED);
  pthread_join(w.thread, NULL);
  CHECK(w.status == RK_ERR_INVALID_STATE &&
            rk_test_contains(w.error, "restarted 2 times") &&
            rk_test_contains(w.error, "handler returned 5"),
        "the waiting receive returned %s: %s", rk_status_name(w.status),
        w.error);
  CHECK_STATUS(call(a, 0, 1, NULL), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("restarted 2 times");
  st = stats(a);
  CHECK(st.restarts == 2 && st.state == RK_ACTOR_FAILED, "%llu restarts, %s",
        (unsigned long long)st.restarts, rk_actor_state_name(st.state));
  /* The event comes right after the state changes. */
  for (int i = 0; i < 1000; ++i) {
    pthread_mutex_lock(&ev.lock);
    const bool seen = ev.failed != 0;
    pthread_mutex_unlock(&ev.lock);
    if (seen) break;
    sleep_ms(1);
  }
  pthread_mutex_lock(&ev.lock);
  CHECK(ev.restarted == 2 && ev.failed == 1 &&
            ev.last_cause == RK_ACTOR_FAULT_HANDLER,
        "events: %d restarted, %d failed", ev.restarted, ev.failed);
  pthread_mutex_unlock(&ev.lock);
  rk_actor_destroy(a);
  pthread_mutex_destroy(&ev.lock);
}

/* Negative control: RK_HANDLER_FAULT_NEVER keeps the actor as it is. */
static void test_handler_fault_never(rk_actor_mode_t mode) {
  printf("  handler faults off, %s\n", rk_actor_mode_name(mode));
  rk_actor_t *a = launch(mode, 100);
  if (!a) return;
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.handler_faults = RK_HANDLER_FAULT_NEVER;
  CHECK_OK(rk_actor_supervise(a, &o));
  CHECK_STATUS(call(a, 1, 0, NULL), RK_ERR_HANDLER);
  sleep_ms(50); /* many looks of the supervision thread */
  int total = 0;
  CHECK_OK(call(a, 0, 1, &total));
  CHECK(total == -999 && stats(a).restarts == 0,
        "no restart: total %d, %llu restarts", total,
        (unsigned long long)stats(a).restarts);
  rk_actor_destroy(a);
}

/* ---- Device faults ------------------------------------------------------- */

/* A launch that fails (injected): the requests of that batch are answered
 * with the failure, the supervisor restarts the device side (a new stream
 * and buffers on relaunch), and the next request works. */
static void test_device_fault(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(mode, 100);
  if (!a) return;
  if (mode == RK_ACTOR_PERSISTENT && g_resident) {
    CHECK_STATUS(rk__actor_inject_device_fault(a, RK_ERR_DEVICE_LOST),
                 RK_ERR_UNIMPLEMENTED);
    printf("  device fault, %s: none on a resident CPU worker\n",
           rk_actor_mode_name(mode));
    rk_actor_destroy(a);
    return;
  }
  printf("  device fault, %s\n", rk_actor_mode_name(mode));
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.restart_state = RK_RESTART_LAST_KNOWN;
  CHECK_OK(rk_actor_supervise(a, &o));
  int total = 0;
  CHECK_OK(call(a, 0, 7, &total));
  CHECK_OK(rk__actor_inject_device_fault(a, RK_ERR_DEVICE_LOST));
  CHECK_STATUS(call(a, 0, 1, NULL), RK_ERR_DEVICE_LOST);
  if (!wait_restarts(a, 1)) {
    rk_actor_destroy(a);
    return;
  }
  CHECK_OK(call(a, 0, 1, &total));
  CHECK(total == 108, "last-known state across a device restart: %d", total);
  rk_actor_stats_t st = stats(a);
  CHECK(st.restarts_by_cause[RK_ACTOR_FAULT_DEVICE] == 1 &&
            st.device_faults == 1 && st.last_fault == RK_ACTOR_FAULT_DEVICE &&
            st.last_fault_code == RK_ERR_DEVICE_LOST && st.handler_errors == 0,
        "stats: %llu device restarts, %llu device faults, last %s %d, "
        "%llu handler errors",
        (unsigned long long)st.restarts_by_cause[RK_ACTOR_FAULT_DEVICE],
        (unsigned long long)st.device_faults,
        rk_actor_fault_name(st.last_fault), st.last_fault_code,
        (unsigned long long)st.handler_errors);
  rk_actor_destroy(a);
}

/* ---- Groups and links ---------------------------------------------------- */

/* One-for-all: a fault of one member restarts every member (fresh). */
static void test_one_for_all(rk_actor_mode_t mode) {
  printf("  one-for-all, %s\n", rk_actor_mode_name(mode));
  rk_actor_t *x = launch(mode, 10), *y = launch(mode, 20);
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.strategy = RK_SUPERVISE_ONE_FOR_ALL;
  rk_supervisor_t *sup = NULL;
  if (!x || !y || !CHECK_OK(rk_supervisor_create(&o, &sup))) {
    rk_actor_destroy(x);
    rk_actor_destroy(y);
    return;
  }
  CHECK_OK(rk_supervisor_add(sup, x));
  CHECK_OK(rk_supervisor_add(sup, y));
  int tx = 0, ty = 0;
  CHECK_OK(call(x, 0, 1, &tx));
  CHECK_OK(call(y, 0, 2, &ty));
  CHECK_STATUS(call(x, 1, 0, NULL), RK_ERR_HANDLER);
  wait_restarts(x, 1);
  wait_restarts(y, 1);
  CHECK_OK(call(x, 0, 1, &tx));
  CHECK_OK(call(y, 0, 2, &ty));
  CHECK(tx == 11 && ty == 22, "both fresh: %d %d", tx, ty);
  const rk_actor_stats_t sx = stats(x), sy = stats(y);
  CHECK(sx.restarts_by_cause[RK_ACTOR_FAULT_HANDLER] == 1 &&
            sy.restarts_by_cause[RK_ACTOR_FAULT_GROUP] == 1 && sy.restarts == 1,
        "causes: x by handler %llu, y by group %llu",
        (unsigned long long)sx.restarts_by_cause[RK_ACTOR_FAULT_HANDLER],
        (unsigned long long)sy.restarts_by_cause[RK_ACTOR_FAULT_GROUP]);
  /* Negative control, one-for-one: only the faulting actor restarts. */
  CHECK_OK(rk_supervisor_remove(sup, y));
  CHECK(!stats(y).supervised, "removed");
  CHECK_STATUS(call(x, 1, 0, NULL), RK_ERR_HANDLER);
  wait_restarts(x, 2);
  sleep_ms(20);
  CHECK(stats(y).restarts == 1, "a removed member is left alone");
  rk_supervisor_destroy(sup);
  rk_actor_destroy(x);
  rk_actor_destroy(y);

  /* The group's budget: one restart, then the next fault of any member
   * fails every member. */
  x = launch(mode, 10);
  y = launch(mode, 20);
  o.max_restarts = 1;
  if (!x || !y || !CHECK_OK(rk_supervisor_create(&o, &sup))) {
    rk_actor_destroy(x);
    rk_actor_destroy(y);
    return;
  }
  CHECK_OK(rk_supervisor_add(sup, x));
  CHECK_OK(rk_supervisor_add(sup, y));
  CHECK_STATUS(call(x, 1, 0, NULL), RK_ERR_HANDLER);
  wait_restarts(y, 1);
  CHECK_STATUS(call(y, 1, 0, NULL), RK_ERR_HANDLER);
  wait_state(x, RK_ACTOR_FAILED);
  wait_state(y, RK_ACTOR_FAILED);
  CHECK_STATUS(call(x, 0, 1, NULL), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("restarted 1 times");
  rk_supervisor_destroy(sup);
  rk_actor_destroy(x);
  rk_actor_destroy(y);
}

/* A (supervised, no restarts allowed) is linked to B (unsupervised) and C
 * (supervised): A's fault fails A; B is stopped and FAILED naming A (its
 * waiting receive wakes), C restarts with cause "link". */
static void test_links(rk_actor_mode_t mode) {
  printf("  links, %s\n", rk_actor_mode_name(mode));
  rk_actor_t *a = launch(mode, 0), *b = launch(mode, 0), *c = launch(mode, 0);
  if (!a || !b || !c) {
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    rk_actor_destroy(c);
    return;
  }
  CHECK_OK(rk_actor_register(a, "links/a"));
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.max_restarts = 0;
  CHECK_OK(rk_actor_supervise(a, &o));
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  CHECK_OK(rk_actor_supervise(c, &o));
  CHECK_OK(rk_actor_link(a, b));
  CHECK_OK(rk_actor_link(c, a));
  CHECK_STATUS(rk_actor_link(b, a), RK_ERR_ALREADY_EXISTS);
  waiter_t w;
  waiter_start(&w, b);
  sleep_ms(20);
  CHECK_STATUS(call(a, 1, 0, NULL), RK_ERR_HANDLER);
  wait_state(a, RK_ACTOR_FAILED);
  wait_state(b, RK_ACTOR_FAILED);
  pthread_join(w.thread, NULL);
  CHECK(w.status == RK_ERR_INVALID_STATE &&
            rk_test_contains(w.error, "linked actor 'links/a' failed"),
        "B's waiting receive returned %s: %s", rk_status_name(w.status),
        w.error);
  wait_restarts(c, 1);
  const rk_actor_stats_t sc = stats(c);
  CHECK(sc.restarts_by_cause[RK_ACTOR_FAULT_LINK] == 1 &&
            rk_actor_state(c) == RK_ACTOR_ACTIVE,
        "C restarted for the link: %llu, %s",
        (unsigned long long)sc.restarts_by_cause[RK_ACTOR_FAULT_LINK],
        rk_actor_state_name(rk_actor_state(c)));
  int total = -1;
  CHECK_OK(call(c, 0, 3, &total));
  CHECK(total == 3, "C answers after its restart: %d", total);
  rk_actor_destroy(a);
  rk_actor_destroy(b);
  rk_actor_destroy(c);
}

/* ---- Hangs --------------------------------------------------------------- */

/* Rounds of the slow op that take about `ms` here; 0 when the device cuts
 * long loops short. */
static int slow_rounds(rk_actor_t *a, unsigned ms) {
  for (int n = 8;; n *= 2) {
    const uint64_t t0 = rk__now_ns();
    if (!CHECK_OK(call(a, 2, n, NULL))) return 0;
    const uint64_t t = rk__now_ns() - t0;
    if (t >= 100000000u) {
      /* The fastest of three: a load spike while measuring would make the
       * request far shorter than asked for. */
      uint64_t best = t;
      for (int k = 0; k < 2; ++k) {
        const uint64_t t1 = rk__now_ns();
        if (!CHECK_OK(call(a, 2, n, NULL))) return 0;
        const uint64_t tk = rk__now_ns() - t1;
        if (tk < best) best = tk;
      }
      double rounds = (double)n * ms * 1e6 / (double)best;
      return rounds > 65535.0 ? 0 : (int)rounds;
    }
    if (n >= 65535 / 2) return 0;
  }
}

typedef struct {
  rk_actor_t *a;
  sreq_t q;
  rk_status_t status;
  pthread_t thread;
} sender_t;

static void *sender_main(void *arg) {
  sender_t *s = arg;
  s->status =
      rk_actor_send(s->a, &s->q, sizeof s->q, RK_TIMEOUT_INFINITE, NULL);
  return NULL;
}

/* A call on its own thread, with what it returned and its message. */
typedef struct {
  rk_actor_t *a;
  rk_status_t status;
  char error[512];
  pthread_t thread;
} caller_t;

static void *caller_main(void *arg) {
  caller_t *c = arg;
  c->status = call(c->a, 0, 1, NULL);
  snprintf(c->error, sizeof c->error, "%s", rk_last_error());
  return NULL;
}

/* A handler that does not finish: with hang_timeout_ns the supervisor
 * notices, cannot stop it within stop_timeout_ns, and fails the actor: a
 * waiting receive and a call queued behind the request wake naming the
 * deadline, and a linked actor fails. */
static void test_hang(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(mode, 0), *b = launch(mode, 0);
  if (!a || !b) {
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  const int rounds = rk__hal_loop_limit(g_ctx) ? 0 : slow_rounds(a, 2000);
  if (!rounds) {
    printf("  hang, %s: skipped, this device cuts long loops short\n",
           rk_actor_mode_name(mode));
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  printf("  hang, %s\n", rk_actor_mode_name(mode));
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.hang_timeout_ns = 200000000u;
  o.stop_timeout_ns = 100000000u;
  CHECK_OK(rk_actor_supervise(a, &o));
  CHECK_OK(rk_actor_link(a, b));
  waiter_t w;
  waiter_start(&w, a);
  /* On its own thread: a traditional send runs the request itself. */
  sender_t snd = {a, {2, rounds}, RK_ERR_INTERNAL, 0};
  pthread_create(&snd.thread, NULL, sender_main, &snd);
  const uint64_t t0 = rk__now_ns();
  /* A call behind the slow request (traditional: waiting for its turn). */
  sleep_ms(50);
  caller_t cl;
  memset(&cl, 0, sizeof cl);
  cl.a = a;
  cl.status = RK_ERR_INTERNAL;
  pthread_create(&cl.thread, NULL, caller_main, &cl);
  /* FAILED, unless the slow request was answered first (a device that
   * ran it faster than measured): then there was no hang to see. */
  while (rk_actor_state(a) != RK_ACTOR_FAILED &&
         rk__now_ns() - t0 < 10000000000u) {
    if (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) && w.status == RK_OK) break;
    sleep_ms(1);
  }
  const double ms = (double)(rk__now_ns() - t0) / 1e6;
  pthread_join(w.thread, NULL);
  pthread_join(cl.thread, NULL);
  if (w.status == RK_OK) {
    printf("    skipped: the slow request was answered after %.0f ms\n", ms);
  } else {
    CHECK(rk_actor_state(a) == RK_ACTOR_FAILED && ms < 1800.0,
          "%s %.0f ms after the slow request (2 s)",
          rk_actor_state_name(rk_actor_state(a)), ms);
    CHECK(w.status == RK_ERR_INVALID_STATE &&
              rk_test_contains(w.error, "did not stop within"),
          "the waiting receive returned %s: %s", rk_status_name(w.status),
          w.error);
    CHECK(cl.status == RK_ERR_INVALID_STATE &&
              rk_test_contains(cl.error, "the actor failed") &&
              rk_test_contains(cl.error, "did not stop within"),
          "the waiting call returned %s: %s", rk_status_name(cl.status),
          cl.error);
    wait_state(b, RK_ACTOR_FAILED);
    const rk_actor_stats_t st = stats(a);
    CHECK(st.last_fault == RK_ACTOR_FAULT_DEADLINE && st.restarts == 0,
          "last fault %s, %llu restarts", rk_actor_fault_name(st.last_fault),
          (unsigned long long)st.restarts);
  }
  pthread_join(snd.thread, NULL);
  CHECK(snd.status == RK_OK || snd.status == RK_ERR_INVALID_STATE,
        "the slow send: %s", rk_status_name(snd.status));
  rk_actor_destroy(a);
  rk_actor_destroy(b);
}

/* An actor (not supervised) whose handler misses rk_actor_terminate's
 * deadline is FAILED; the actor linked to it is stopped and FAILED too,
 * and a receive waiting on that one wakes naming both. */
static void test_terminate_deadline_link(void) {
  rk_actor_t *a = launch(RK_ACTOR_PERSISTENT, 0);
  rk_actor_t *b = launch(RK_ACTOR_PERSISTENT, 0);
  if (!a || !b) {
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  const int rounds = rk__hal_loop_limit(g_ctx) ? 0 : slow_rounds(a, 1000);
  if (!rounds) {
    printf(
        "  terminate deadline: skipped, this device cuts long loops "
        "short\n");
    rk_actor_destroy(a);
    rk_actor_destroy(b);
    return;
  }
  printf("  terminate deadline and a link\n");
  CHECK_OK(rk_actor_register(b, "deadline/b"));
  CHECK_OK(rk_actor_register(a, "deadline/a"));
  CHECK_OK(rk_actor_link(a, b));
  waiter_t w;
  waiter_start(&w, b);
  sreq_t q = {2, rounds};
  CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL));
  sleep_ms(100); /* the slow request has started */
  const rk_status_t s = rk_actor_terminate(a, 50000000u);
  if (s == RK_OK) {
    printf("    skipped: the slow request finished within the deadline\n");
  } else {
    CHECK(s == RK_ERR_TIMEOUT && rk_actor_state(a) == RK_ACTOR_FAILED,
          "terminate: %s, %s", rk_status_name(s),
          rk_actor_state_name(rk_actor_state(a)));
    wait_state(b, RK_ACTOR_FAILED);
    pthread_join(w.thread, NULL);
    CHECK(w.status == RK_ERR_INVALID_STATE &&
              rk_test_contains(w.error, "linked actor 'deadline/a' failed") &&
              rk_test_contains(w.error, "rk_actor_terminate"),
          "B's waiting receive returned %s: %s", rk_status_name(w.status),
          w.error);
    CHECK(stats(a).last_fault == RK_ACTOR_FAULT_DEADLINE &&
              stats(b).last_fault == RK_ACTOR_FAULT_LINK,
          "faults: %s, %s", rk_actor_fault_name(stats(a).last_fault),
          rk_actor_fault_name(stats(b).last_fault));
  }
  rk_actor_destroy(b);
  if (s == RK_OK) pthread_join(w.thread, NULL);
  rk_actor_destroy(a);
}

/* ---- Errors -------------------------------------------------------------- */

static void test_errors(void) {
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  rk_supervisor_t *sup = NULL;
  o.strategy = (rk_supervisor_strategy_t)7;
  CHECK_STATUS(rk_supervisor_create(&o, &sup), RK_ERR_INVALID_ARGUMENT);
  rk_supervisor_options_init(&o);
  o.stop_timeout_ns = kStop;
  o.window_ns = 0;
  CHECK_STATUS(rk_supervisor_create(&o, &sup), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_supervisor_create(NULL, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_supervisor_create(NULL, &sup));
  rk_actor_t *a = launch(RK_ACTOR_PERSISTENT, 0);
  rk_actor_t *b = launch(RK_ACTOR_PERSISTENT, 0);
  if (!a || !b) return;
  CHECK_OK(rk_supervisor_add(sup, a));
  CHECK_STATUS(rk_supervisor_add(sup, a), RK_ERR_ALREADY_EXISTS);
  CHECK_STATUS(rk_actor_supervise(a, NULL), RK_ERR_ALREADY_EXISTS);
  CHECK_STATUS(rk_supervisor_remove(sup, b), RK_ERR_NOT_FOUND);
  CHECK_STATUS(rk_actor_link(a, a), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_unlink(a, b), RK_ERR_NOT_FOUND);
  CHECK_OK(rk_actor_link(a, b));
  CHECK_OK(rk_actor_unlink(b, a));
  CHECK_OK(rk_actor_terminate(b, RK_TIMEOUT_INFINITE));
  CHECK_STATUS(rk_supervisor_add(sup, b), RK_ERR_INVALID_STATE);
  CHECK(strcmp(rk_actor_fault_name(RK_ACTOR_FAULT_LINK), "link") == 0 &&
            strcmp(rk_actor_fault_name((rk_actor_fault_t)99), "unknown") == 0,
        "fault names");
  /* An actor destroyed while supervised leaves the group. */
  rk_actor_destroy(a);
  rk_actor_destroy(b);
  rk_supervisor_destroy(sup);
  /* A terminated supervised actor is not restarted. */
  a = launch(RK_ACTOR_PERSISTENT, 0);
  if (!a) return;
  CHECK_OK(rk_actor_supervise(a, NULL));
  CHECK_OK(rk_actor_terminate(a, RK_TIMEOUT_INFINITE));
  sleep_ms(20);
  CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED && stats(a).restarts == 0,
        "terminated stays terminated");
  rk_actor_destroy(a);
}

/* ---- Registry ------------------------------------------------------------ */

static void *lookup_main(void *arg) {
  const char *name = arg;
  for (int i = 0; i < 2000; ++i) {
    rk_actor_t *found = NULL;
    (void)rk_actor_lookup(name, &found);
  }
  return NULL;
}

static void test_registry(void) {
  rk_actor_t *a = launch(RK_ACTOR_PERSISTENT, 0);
  rk_actor_t *b = launch(RK_ACTOR_PERSISTENT, 0);
  if (!a || !b) return;
  rk_actor_t *found = NULL;
  CHECK_STATUS(rk_actor_lookup("tile-1", &found), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("no actor is registered as 'tile-1'");
  CHECK_OK(rk_actor_register(a, "tile-1"));
  CHECK_OK(rk_actor_register(a, "tile-1")); /* the same again */
  CHECK_OK(rk_actor_lookup("tile-1", &found));
  CHECK(found == a, "lookup finds the actor");
  CHECK_STATUS(rk_actor_register(b, "tile-1"), RK_ERR_ALREADY_EXISTS);
  CHECK_ERROR_HAS("belongs to another actor");
  CHECK_STATUS(rk_actor_register(a, "tile-2"), RK_ERR_ALREADY_EXISTS);
  CHECK_ERROR_HAS("already registered as 'tile-1'");
  const char *bad[] = {"",
                       "-lead",
                       "a b",
                       "tab\t",
                       "é",
                       ("0123456789012345678901234567890123456789012345678901"
                        "234567890123")};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    CHECK_STATUS(rk_actor_register(b, bad[i]), RK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rk_actor_lookup(bad[i], &found), RK_ERR_INVALID_ARGUMENT);
  }
  CHECK_STATUS(rk_actor_register(NULL, "x"), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_register(b, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_actor_register(b, "halo/tile_3.4:east"));
  char name[RK_ACTOR_NAME_MAX + 1];
  CHECK_OK(rk_actor_name(b, name, sizeof name));
  CHECK(strcmp(name, "halo/tile_3.4:east") == 0, "name %s", name);
  CHECK_STATUS(rk_actor_name(b, name, 4), RK_ERR_OUT_OF_RANGE);
  /* Lookups from other threads while names come and go. */
  pthread_t t[2];
  for (int i = 0; i < 2; ++i)
    pthread_create(&t[i], NULL, lookup_main, (void *)"tile-1");
  for (int i = 0; i < 200; ++i) {
    CHECK_OK(rk_actor_unregister(a));
    CHECK_OK(rk_actor_register(a, "tile-1"));
  }
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  CHECK_OK(rk_actor_unregister(a));
  CHECK_STATUS(rk_actor_unregister(a), RK_ERR_NOT_FOUND);
  CHECK_STATUS(rk_actor_name(a, name, sizeof name), RK_ERR_NOT_FOUND);
  /* Destroy unregisters: the name is free again. */
  rk_actor_destroy(b);
  CHECK_STATUS(rk_actor_lookup("halo/tile_3.4:east", &found), RK_ERR_NOT_FOUND);
  CHECK_OK(rk_actor_register(a, "halo/tile_3.4:east"));
  rk_actor_destroy(a);
  CHECK_STATUS(rk_actor_lookup("halo/tile_3.4:east", &found), RK_ERR_NOT_FOUND);
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
      printf("usage: actor_supervise [--backend NAME] [--relaunch]\n");
      return 1;
    }
  }
  actor_test_watchdog_start();
  actor_test_watch("open", 120);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context_on(kind, &be);
  rk_device_info_t info;
  CHECK_OK(rk_backend_device_info(be, 0, &info));
  g_resident =
      (info.caps & RK_CAP_PERSISTENT_KERNELS) && !getenv("RK_ACTOR_RELAUNCH");
  printf("backend %s, persistent actors: %s\n", rk_backend_name(be),
         g_resident ? "resident" : "relaunch");
  actor_test_watch("registry", 60);
  test_registry();
  actor_test_watch("errors", 60);
  test_errors();
  const rk_actor_mode_t modes[] = {RK_ACTOR_PERSISTENT, RK_ACTOR_TRADITIONAL};
  for (int m = 0; m < 2; ++m) {
    actor_test_watch("handler fault", 60);
    test_handler_fault(modes[m], RK_RESTART_FRESH);
    test_handler_fault(modes[m], RK_RESTART_LAST_KNOWN);
    test_handler_fault_never(modes[m]);
    actor_test_watch("device fault", 60);
    test_device_fault(modes[m]);
    actor_test_watch("one for all", 60);
    test_one_for_all(modes[m]);
    actor_test_watch("links", 60);
    test_links(modes[m]);
    actor_test_watch("hang", 120);
    test_hang(modes[m]);
  }
  actor_test_watch("terminate deadline", 120);
  test_terminate_deadline_link();
  /* The slow handler of the deadline case may still run. */
  actor_test_watch("context destroy", 120);
  CHECK_OK(actor_test_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("actor_supervise");
}
