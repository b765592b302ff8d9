/* The host side of actors against a device side played by this test, which
 * follows the ABI by hand: out-of-order responses reach their own callers,
 * uncorrelated ones stay for receive, full rings refuse sends, and the
 * termination handshake waits for the device. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/ring.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static rk_context_t *g_ctx;

typedef struct {
  rk_actor_t *actor;
  int value, result;
  rk_status_t status;
  uint64_t id;
} call_t;

static void *call_main(void *arg) {
  call_t *c = arg;
  int_msg_t q = {c->value}, r = {0};
  rk_actor_message_t info;
  c->status =
      rk_actor_call(c->actor, &q, sizeof q, &r, sizeof r, 10000000000u, &info);
  c->result = r.v;
  c->id = info.correlation_id;
  return NULL;
}

/* Answers request `req` as the device would: value * 10, code. */
static void respond(rk__ring_end_t *out, const rk_abi_msg_t *req,
                    int32_t code) {
  unsigned char *slot = rk__ring_reserve(out);
  rk_abi_msg_t *m = (rk_abi_msg_t *)slot;
  const int_msg_t *in = (const int_msg_t *)((const char *)req + 32);
  int_msg_t r = {in->v * 10};
  m->correlation_id = req->correlation_id;
  m->timestamp = req->timestamp + 1;
  m->type = RK_ABI_MSG_RESPONSE;
  m->size = sizeof r;
  m->status = code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK;
  m->code = code;
  memcpy(slot + RK_ABI_MSG_HEADER, &r, sizeof r);
  rk__ring_publish(out, 1);
  rk__ring_signal_data(out->hdr);
}

static bool wait_requests(rk__ring_end_t *in, uint64_t n) {
  uint64_t deadline = rk__now_ns() + 10000000000u;
  while (rk__ring_available(in) < n)
    if (rk__now_ns() > deadline) return false;
  return true;
}

static void test_reverse_order(void) {
  rk_actor_t *a = NULL;
  const rk__actor_device_t *dev = NULL;
  if (!CHECK_OK(rk__actor_launch_external(g_ctx, kAddOneSource, "add_one", NULL,
                                          &a, &dev)))
    return;
  rk__ring_end_t in, out;
  rk__ring_attach(&in, dev->in, dev->in_slots, false);
  rk__ring_attach(&out, dev->out, dev->out_slots, true);

  /* One uncorrelated send first, then two calls from two threads. */
  int_msg_t q = {5};
  uint64_t sent_id = 0;
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, &sent_id));
  call_t c1 = {a, 1, 0, RK_ERR_INTERNAL, 0}, c2 = {a, 2, 0, RK_ERR_INTERNAL, 0};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, call_main, &c1);
  if (!CHECK(wait_requests(&in, 2), "the first call arrives")) return;
  pthread_create(&t2, NULL, call_main, &c2);
  if (!CHECK(wait_requests(&in, 3), "the second call arrives")) return;

  /* Answer in reverse: the second call, the first call, the send. */
  const rk_abi_msg_t *r0 = rk__ring_peek(&in, 0);
  const rk_abi_msg_t *r1 = rk__ring_peek(&in, 1);
  const rk_abi_msg_t *r2 = rk__ring_peek(&in, 2);
  CHECK(r0->correlation_id == sent_id && r0->type == RK_ABI_MSG_REQUEST &&
            r0->size == sizeof(int_msg_t) && r0->timestamp != 0,
        "request header: id %llu type %u size %u",
        (unsigned long long)r0->correlation_id, r0->type, r0->size);
  CHECK(r1->timestamp > r0->timestamp && r2->timestamp > r1->timestamp,
        "request clocks increase");
  respond(&out, r2, 0);
  respond(&out, r1, 0);
  respond(&out, r0, 3);
  rk__ring_release(&in, 3);
  rk__ring_signal_space(in.hdr);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(c1.status == RK_OK && c1.result == 10, "first call: %s, %d",
        rk_status_name(c1.status), c1.result);
  CHECK(c2.status == RK_OK && c2.result == 20, "second call: %s, %d",
        rk_status_name(c2.status), c2.result);
  CHECK(c1.id != c2.id && c1.id != sent_id && c2.id != sent_id,
        "three distinct ids");
  int_msg_t r;
  rk_actor_message_t info;
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 0, &info), RK_ERR_HANDLER);
  CHECK(r.v == 50 && info.correlation_id == sent_id && info.handler_code == 3,
        "the uncorrelated response: %d, id %llu, code %d", r.v,
        (unsigned long long)info.correlation_id, info.handler_code);
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 0, NULL), RK_ERR_QUEUE_EMPTY);

  /* A call that times out leaves its late response for receive. */
  q.v = 9;
  CHECK_STATUS(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 5000000u, &info),
               RK_ERR_TIMEOUT);
  if (CHECK(wait_requests(&in, 1), "the timed-out request is queued")) {
    respond(&out, rk__ring_peek(&in, 0), 0);
    rk__ring_release(&in, 1);
  }
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, 1000000000u, &info));
  CHECK(r.v == 90, "late response %d", r.v);

  /* Termination waits for the device's answer. */
  CHECK_STATUS(rk_actor_terminate(a, 5000000u), RK_ERR_TIMEOUT);
  CHECK(rk_actor_state(a) == RK_ACTOR_FAILED, "failed after the deadline");
  CHECK_STATUS(rk_actor_terminate(a, 0), RK_ERR_INVALID_STATE);
  CHECK(__atomic_load_n(&dev->control->terminate, __ATOMIC_ACQUIRE) == 1,
        "the device was asked to stop");
  rk_actor_destroy(a);
}

static void test_queue_full(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 2;
  rk_actor_t *a = NULL;
  const rk__actor_device_t *dev = NULL;
  if (!CHECK_OK(rk__actor_launch_external(g_ctx, kAddOneSource, "add_one", &o,
                                          &a, &dev)))
    return;
  int_msg_t q = {1};
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, NULL));
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, NULL));
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_QUEUE_FULL);
  CHECK_ERROR_HAS("full");
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 10000000u, NULL),
               RK_ERR_QUEUE_FULL);
  CHECK(rk__now_ns() - t0 >= 10000000u, "the send waited for space");
  CHECK(rk__ring_depth(dev->in) == 2, "nothing overwritten: depth %llu",
        (unsigned long long)rk__ring_depth(dev->in));
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.sent == 2 && st.dropped_sends == 2 && st.input_depth == 2,
        "sent %llu dropped %llu depth %llu", (unsigned long long)st.sent,
        (unsigned long long)st.dropped_sends,
        (unsigned long long)st.input_depth);
  /* The device consumes one: a waiting send goes through. */
  rk__ring_end_t in;
  rk__ring_attach(&in, dev->in, dev->in_slots, false);
  rk__ring_release(&in, 1);
  rk__ring_signal_space(in.hdr);
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 1000000000u, NULL));
  /* The device confirms termination in time. */
  __atomic_store_n(&dev->control->terminated, 1u, __ATOMIC_RELEASE);
  CHECK_OK(rk_actor_terminate(a, 1000000000u));
  rk_actor_destroy(a);
}

typedef struct {
  rk_actor_t *actor;
  int kind; /* 0 send, 1 call, 2 receive */
  rk_status_t status;
  char error[512];
} waiter_t;

static void *waiter_main(void *arg) {
  waiter_t *w = arg;
  int_msg_t q = {7}, r;
  if (w->kind == 0)
    w->status =
        rk_actor_send(w->actor, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL);
  else if (w->kind == 1)
    w->status = rk_actor_call(w->actor, &q, sizeof q, &r, sizeof r,
                              RK_TIMEOUT_INFINITE, NULL);
  else
    w->status =
        rk_actor_receive(w->actor, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
  snprintf(w->error, sizeof w->error, "%s", rk_last_error());
  return NULL;
}

/* A device side that never answers and never stops: terminate misses its
 * deadline, the actor is FAILED, and every thread waiting on it wakes with
 * RK_ERR_INVALID_STATE: a call waiting for its answer and a receive name
 * the failure, a send waiting for space was refused when terminate began.
 * The call's late answer goes to receive. */
static void test_failure_wakes_waiters(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 2;
  rk_actor_t *a = NULL;
  const rk__actor_device_t *dev = NULL;
  if (!CHECK_OK(rk__actor_launch_external(g_ctx, kAddOneSource, "add_one", &o,
                                          &a, &dev)))
    return;
  rk__ring_end_t in, out;
  rk__ring_attach(&in, dev->in, dev->in_slots, false);
  rk__ring_attach(&out, dev->out, dev->out_slots, true);
  int_msg_t q = {1};
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, NULL));
  waiter_t w[3];
  pthread_t t[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = (waiter_t){a, i == 0 ? 1 : i == 1 ? 0 : 2, RK_ERR_INTERNAL, ""};
    pthread_create(&t[i], NULL, waiter_main, &w[i]);
    /* The call's request first (it fills the ring), then the send. */
    if (i == 0) CHECK(wait_requests(&in, 2), "the call's request arrives");
  }
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  CHECK_STATUS(rk_actor_terminate(a, 5000000u), RK_ERR_TIMEOUT);
  CHECK(rk_actor_state(a) == RK_ACTOR_FAILED, "failed");
  /* The send was not queued: terminate refused it as it started. */
  const char *names[] = {"call", "send", "receive"};
  const char *why[] = {"failed (the handler did not stop within 5.000 ms",
                       "terminating",
                       "failed (the handler did not stop within 5.000 ms"};
  for (int i = 0; i < 3; ++i) {
    pthread_join(t[i], NULL);
    CHECK(w[i].status == RK_ERR_INVALID_STATE &&
              rk_test_contains(w[i].error, why[i]),
          "the waiting %s: %s: %s", names[i], rk_status_name(w[i].status),
          w[i].error);
  }
  CHECK(rk_test_contains(w[0].error, "not answered"), "%s", w[0].error);
  /* The device answers the call after all: receive gets it. */
  respond(&out, rk__ring_peek(&in, 1), 0);
  int_msg_t r = {0};
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, 1000000000u, NULL));
  CHECK(r.v == 70, "the late answer: %d", r.v);
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 1000000000u, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("failed");
  rk_actor_destroy(a);
}

int main(void) {
  /* A waiter that is never woken fails the run instead of hanging it. */
  actor_test_watchdog_start();
  actor_test_watch("open", 60);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context(&be);
  actor_test_watch("reverse order", 60);
  test_reverse_order();
  actor_test_watch("queue full", 60);
  test_queue_full();
  actor_test_watch("a failure wakes every waiter", 60);
  test_failure_wakes_waiters();
  actor_test_watch("teardown", 60);
  CHECK_OK(rk_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("actor_device");
}
