/* Actors end to end on the CPU backend, in both modes: call/send/receive
 * with correlation ids, FIFO order, handler state and errors, every state
 * transition and error path, many producers into one actor. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/platform.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static rk_context_t *g_ctx;

static rk_actor_t *launch(const char *src, const char *handler,
                          rk_actor_mode_t mode,
                          const rk_actor_options_t *base) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  if (base) o = *base;
  o.mode = mode;
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, src, handler, &o, &a))) return NULL;
  return a;
}

/* call(41) answers 42; a sent request's response carries its id. */
static void test_add_one(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
  if (!a) return;
  CHECK(rk_actor_state(a) == RK_ACTOR_ACTIVE, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  int_msg_t q = {41}, r = {0};
  rk_actor_message_t info;
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info));
  CHECK(r.v == 42, "call(41) gave %d", r.v);
  CHECK(info.status == RK_OK && info.handler_code == 0 &&
            info.size == sizeof r && info.correlation_id != 0,
        "info: status %d code %d size %zu id %llu", (int)info.status,
        info.handler_code, info.size, (unsigned long long)info.correlation_id);

  uint64_t id = 0;
  q.v = 99;
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, &id));
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, &info));
  CHECK(r.v == 100 && info.correlation_id == id,
        "send(99): got %d with id %llu, sent id %llu", r.v,
        (unsigned long long)info.correlation_id, (unsigned long long)id);
  CHECK(info.timestamp != 0, "the response has a timestamp");
  CHECK_OK(rk_actor_terminate(a, RK_TIMEOUT_INFINITE));
  CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED, "terminated");
  rk_actor_destroy(a);
}

#if RK__LINUX
/* The CPU a thread of this process may run on, when exactly one; else -1. */
static int only_cpu_of(pid_t tid) {
  cpu_set_t set;
  if (sched_getaffinity(tid, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
    return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

/* The rk-actor threads started since `before` (at most one expected). */
static pid_t new_actor_thread(const pid_t *before, int nbefore) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  pid_t found = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t tid = (pid_t)atol(e->d_name);
    bool old = false;
    for (int j = 0; j < nbefore && !old; ++j) old = before[j] == tid;
    if (old) continue;
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
      fclose(f);
    }
    if (strcmp(comm, "rk-actor") == 0) found = tid;
  }
  closedir(d);
  return found;
}

/* rk_actor_options_t.cpu: the worker runs pinned there, even on the
 * launching thread's CPU (which rk's own choice avoids); a CPU the process
 * may not use is refused. */
static void test_placement(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  CHECK(o.cpu == RK_ACTOR_CPU_ANY, "default cpu %d", o.cpu);
  o.cpu = 1 << 20;
  rk_actor_t *a = NULL;
  CHECK_STATUS(rk_actor_launch(g_ctx, kAddOneSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("not a CPU this process may run on");
  int cpus[64];
  if (rk__allowed_cpus(cpus, 64) < 2) {
    printf("  placement: one CPU allowed, nothing to place\n");
    return;
  }
  pid_t before[512];
  int nbefore = 0;
  DIR *d = opendir("/proc/self/task");
  if (!CHECK(d != NULL, "cannot list threads")) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && nbefore < 512)
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
      before[nbefore++] = (pid_t)atol(e->d_name);
  closedir(d);
  o.cpu = rk__current_cpu();
  if (o.cpu < 0) return;
  a = launch(kAddOneSource, "add_one", RK_ACTOR_PERSISTENT, &o);
  if (!a) return;
  int_msg_t q = {1}, r = {0};
  /* The worker pins itself when it starts; it has once it answered. */
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL));
  pid_t tid = new_actor_thread(before, nbefore);
  if (CHECK(tid != 0, "no rk-actor thread appeared"))
    CHECK(only_cpu_of(tid) == o.cpu, "the worker runs on CPU %d, asked %d",
          only_cpu_of(tid), o.cpu);
  CHECK_OK(rk_actor_terminate(a, RK_TIMEOUT_INFINITE));
  rk_actor_destroy(a);
}
#endif

/* 1000 pipelined sends: 1000 responses in FIFO order, processed == 1000. */
static void test_pipelined(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
  if (!a) return;
  enum { kN = 1000 };
  static uint64_t ids[kN];
  int bad = 0;
  for (int i = 0; i < kN; ++i) {
    int_msg_t q = {i * 3};
    if (rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, &ids[i]) != RK_OK)
      ++bad;
  }
  CHECK(bad == 0, "%d sends failed: %s", bad, rk_last_error());
  for (int i = 0; i < kN; ++i) {
    int_msg_t r;
    rk_actor_message_t info;
    if (rk_actor_receive(a, &r, sizeof r, 5000000000u, &info) != RK_OK ||
        r.v != i * 3 + 1 || info.correlation_id != ids[i]) {
      ++bad;
      if (bad < 5)
        printf("  response %d: v %d id %llu (want %d, %llu)\n", i, r.v,
               (unsigned long long)info.correlation_id, i * 3 + 1,
               (unsigned long long)ids[i]);
    }
  }
  CHECK(bad == 0, "%d responses out of order or wrong", bad);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.processed == kN && st.sent == kN && st.dropped_sends == 0,
        "processed %llu sent %llu dropped %llu",
        (unsigned long long)st.processed, (unsigned long long)st.sent,
        (unsigned long long)st.dropped_sends);
  CHECK(st.input_depth == 0 && st.output_depth == 0, "depths %llu %llu",
        (unsigned long long)st.input_depth,
        (unsigned long long)st.output_depth);
  CHECK(st.latency_samples > 0 && st.latency_p50_ns > 0 &&
            st.latency_p50_ns <= st.latency_p99_ns,
        "latency samples %llu p50 %.0f p99 %.0f",
        (unsigned long long)st.latency_samples, st.latency_p50_ns,
        st.latency_p99_ns);
  rk_actor_destroy(a); /* terminates first */
}

/* The thread that alone sends and receives owns the host side and takes
 * the fast paths (base/bias.h); a second thread that starts calling while
 * the first streams revokes that, at a moment the rounds vary. Every
 * stream response must come back in order with its own id, every call
 * must get its own answer, and the counts must add up. */
typedef struct {
  rk_actor_t *actor;
  int calls, failures;
  uint32_t start; /* atomic: the streamer's go-ahead */
} late_caller_t;

static void *late_caller_main(void *arg) {
  late_caller_t *c = arg;
  while (!__atomic_load_n(&c->start, __ATOMIC_ACQUIRE)) sched_yield();
  for (int i = 0; i < c->calls; ++i) {
    int_msg_t q = {1000000 + i}, r = {0};
    if (rk_actor_call(c->actor, &q, sizeof q, &r, sizeof r, 5000000000u,
                      NULL) != RK_OK ||
        r.v != q.v + 1)
      c->failures++;
  }
  return NULL;
}

static void test_owner_then_shared(rk_actor_mode_t mode) {
  enum { kN = 6000, kWindow = 64, kCalls = 300 };
  static uint64_t ids[kN];
  int bad = 0, failed = 0, caller_failures = 0;
  for (int round = 0; round < 4 && !bad && !failed; ++round) {
    rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
    if (!a) return;
    late_caller_t c = {a, kCalls, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, late_caller_main, &c);
    const int go = 500 + round * 1500; /* when the caller starts */
    int sent = 0, got = 0;
    while (got < kN && !failed) {
      while (sent < kN && sent - got < kWindow) {
        int_msg_t q = {sent * 3};
        if (rk_actor_send(a, &q, sizeof q, 5000000000u, &ids[sent]) != RK_OK) {
          failed = 1;
          break;
        }
        if (++sent == go) __atomic_store_n(&c.start, 1u, __ATOMIC_RELEASE);
      }
      int_msg_t r;
      rk_actor_message_t info;
      if (failed ||
          rk_actor_receive(a, &r, sizeof r, 5000000000u, &info) != RK_OK) {
        failed = 1;
        printf("  round %d: stream %d of %d: %s\n", round, got, kN,
               rk_last_error());
        break;
      }
      if (r.v != got * 3 + 1 || info.correlation_id != ids[got]) {
        if (bad++ < 5)
          printf("  round %d, response %d: v %d id %llu (want %d, %llu)\n",
                 round, got, r.v, (unsigned long long)info.correlation_id,
                 got * 3 + 1, (unsigned long long)ids[got]);
      }
      ++got;
    }
    __atomic_store_n(&c.start, 1u, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    caller_failures += c.failures;
    for (int i = 1; i < sent; ++i)
      if (ids[i] == ids[i - 1] && bad++ < 5)
        printf("  round %d: sends %d and %d share id %llu\n", round, i - 1, i,
               (unsigned long long)ids[i]);
    rk_actor_stats_t st;
    CHECK_OK(rk_actor_stats(a, &st));
    CHECK(failed || (st.sent == kN + kCalls && st.processed == kN + kCalls),
          "%s, round %d: sent %llu processed %llu (want %d)",
          rk_actor_mode_name(mode), round, (unsigned long long)st.sent,
          (unsigned long long)st.processed, kN + kCalls);
    rk_actor_destroy(a);
  }
  CHECK(!failed && bad == 0 && caller_failures == 0,
        "%s: %s; %d stream responses wrong; %d calls failed",
        rk_actor_mode_name(mode), failed ? "the stream failed" : "streamed",
        bad, caller_failures);
}

/* Responses that a call does not claim stay for receive. */
static void test_uncorrelated_stay(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
  if (!a) return;
  int_msg_t q = {10}, r = {0};
  uint64_t id = 0;
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, &id));
  q.v = 20;
  rk_actor_message_t info;
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info));
  CHECK(r.v == 21 && info.correlation_id != id, "call got %d", r.v);
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, 0, &info));
  CHECK(r.v == 11 && info.correlation_id == id, "receive got %d", r.v);
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 0, NULL), RK_ERR_QUEUE_EMPTY);
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 20000000u, NULL),
               RK_ERR_TIMEOUT);
  CHECK(rk__now_ns() - t0 >= 20000000u, "the timeout was waited out");
  rk_actor_destroy(a);
}

/* Handler state persists across messages and starts from initial_state. */
static void test_state(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  uint32_t start = 100;
  o.initial_state = &start;
  o.initial_state_size = sizeof start;
  rk_actor_t *a = launch(kTagSource, "tag", mode, &o);
  if (!a) return;
  for (uint32_t i = 0; i < 5; ++i) {
    tag_req_t q = {7, i};
    tag_resp_t r;
    memset(&r, 0, sizeof r);
    CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                           NULL));
    CHECK(r.producer == 7 && r.seq == i && r.count == 101 + i,
          "message %u: producer %u seq %u count %u", i, r.producer, r.seq,
          r.count);
  }
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.state_size == 4 && st.request_size == 8 && st.response_size == 16,
        "sizes %zu %zu %zu", st.state_size, st.request_size, st.response_size);
  rk_actor_destroy(a);
}

/* A handler error comes back to its caller; the actor keeps running. */
static void test_handler_error(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kDivSource, "checked_div", mode, NULL);
  if (!a) return;
  div_req_t q = {10, 0};
  int_msg_t r = {-1};
  rk_actor_message_t info;
  CHECK_STATUS(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info),
      RK_ERR_HANDLER);
  CHECK_ERROR_HAS("returned 7");
  CHECK(info.status == RK_ERR_HANDLER && info.handler_code == 7 && r.v == 0,
        "status %d code %d q %d", (int)info.status, info.handler_code, r.v);
  q.b = 3;
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info));
  CHECK(r.v == 3 && info.handler_code == 0, "10/3 gave %d", r.v);
  /* Through receive as well. */
  q.b = 0;
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, NULL));
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, &info),
               RK_ERR_HANDLER);
  CHECK(info.handler_code == 7, "code %d", info.handler_code);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(
      st.processed == 3 && st.handler_errors == 2 && st.last_handler_code == 7,
      "processed %llu errors %llu last %d", (unsigned long long)st.processed,
      (unsigned long long)st.handler_errors, st.last_handler_code);
  rk_actor_destroy(a);
}

/* Every illegal transition; sends refused unless ACTIVE. */
static void test_transitions(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  int_msg_t q = {1}, r;
  CHECK(rk_actor_state(a) == RK_ACTOR_LAUNCHED, "launched");
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("launched");
  CHECK_STATUS(rk_actor_deactivate(a), RK_ERR_INVALID_STATE);
  CHECK_OK(rk_actor_activate(a));
  CHECK_STATUS(rk_actor_activate(a), RK_ERR_INVALID_STATE);
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL));
  CHECK(r.v == 2, "active call gave %d", r.v);
  CHECK_OK(rk_actor_deactivate(a));
  CHECK(rk_actor_state(a) == RK_ACTOR_DEACTIVATED, "deactivated");
  CHECK_STATUS(rk_actor_deactivate(a), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 0, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_OK(rk_actor_activate(a));
  q.v = 5;
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL));
  CHECK(r.v == 6, "reactivated call gave %d", r.v);
  /* A response produced before termination can still be received. */
  CHECK_OK(rk_actor_send(a, &q, sizeof q, 0, NULL));
  CHECK_OK(rk_actor_terminate(a, 5000000000u));
  CHECK_STATUS(rk_actor_terminate(a, 0), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_activate(a), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_deactivate(a), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("terminated");
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL));
  CHECK(r.v == 6, "the last response survives termination: %d", r.v);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.dropped_sends == 4, "dropped sends %llu",
        (unsigned long long)st.dropped_sends);
  rk_actor_destroy(a);

  /* A terminated-while-launched actor. */
  a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  CHECK_OK(rk_actor_terminate(a, RK_TIMEOUT_INFINITE));
  CHECK_STATUS(rk_actor_activate(a), RK_ERR_INVALID_STATE);
  rk_actor_destroy(a);
}

/* Bad arguments: nothing launched, nothing sent. */
static void test_bad_arguments(void) {
  rk_actor_t *a = NULL;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  CHECK_STATUS(rk_actor_launch(NULL, kAddOneSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_launch(g_ctx, kAddOneSource, "missing", &o, &a),
               RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("missing");
  const char *kernel =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void k(int *x) { x[0] = 1; }\n";
  CHECK_STATUS(rk_actor_launch(g_ctx, kernel, "k", &o, &a), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("'k' is a kernel, not an RK_HANDLER");
  const char *broken =
      "#include <rk/kernel.h>\n"
      "typedef struct { int v; } m_t;\n"
      "RK_HANDLER void h(const m_t *in, m_t *out) { out->v = in->w; }\n";
  o.source_name = "broken.c";
  CHECK_STATUS(rk_actor_launch(g_ctx, broken, "h", &o, &a), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("broken.c:3");
  rk_actor_options_init(&o);
  o.input_capacity = 1000;
  CHECK_STATUS(rk_actor_launch(g_ctx, kAddOneSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("power");
  rk_actor_options_init(&o);
  uint64_t wrong = 0;
  o.initial_state = &wrong;
  o.initial_state_size = sizeof wrong;
  CHECK_STATUS(rk_actor_launch(g_ctx, kTagSource, "tag", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("state");
  rk_actor_options_init(&o);
  o.mode = (rk_actor_mode_t)7;
  CHECK_STATUS(rk_actor_launch(g_ctx, kAddOneSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK(a == NULL, "no actor came out of failed launches");

  a = launch(kAddOneSource, "add_one", RK_ACTOR_PERSISTENT, NULL);
  if (!a) return;
  int_msg_t q = {1}, r;
  uint64_t big[4] = {0};
  CHECK_STATUS(rk_actor_send(a, big, sizeof big, 0, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("4");
  CHECK_STATUS(rk_actor_send(a, NULL, sizeof q, 0, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_call(a, &q, sizeof q, &r, 2, 0, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_receive(a, &r, 2, 0, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_stats(a, NULL), RK_ERR_INVALID_ARGUMENT);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.sent == 0 && st.processed == 0, "nothing was sent");
  rk_actor_destroy(a);
  rk_actor_destroy(NULL);
  CHECK(
      strcmp(rk_actor_state_name(RK_ACTOR_FAILED), "failed") == 0 &&
          strcmp(rk_actor_mode_name(RK_ACTOR_TRADITIONAL), "traditional") == 0,
      "names");
}

/* 4 producers x N messages into one actor; a consumer thread checks that
 * every message comes back once and each producer's order is kept. */
enum { kProducers = 4 };
/* Messages per producer: 100000 on the CPU backend, fewer where every
 * batch or request is a real launch through a driver. */
static uint32_t kPerProducer = 100000;

typedef struct {
  rk_actor_t *actor;
  uint32_t id;
  int failures;
} producer_t;

static void *producer_main(void *arg) {
  producer_t *p = arg;
  for (uint32_t i = 0; i < kPerProducer; ++i) {
    tag_req_t q = {p->id, i};
    if (rk_actor_send(p->actor, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL) !=
        RK_OK)
      p->failures++;
  }
  return NULL;
}

static void test_many_producers(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 256;
  o.output_capacity = 256;
  rk_actor_t *a = launch(kTagSource, "tag", mode, &o);
  if (!a) return;
  producer_t ps[kProducers];
  pthread_t th[kProducers];
  for (uint32_t i = 0; i < kProducers; ++i) {
    ps[i] = (producer_t){a, i, 0};
    pthread_create(&th[i], NULL, producer_main, &ps[i]);
  }
  uint32_t next[kProducers] = {0};
  int bad = 0, failed = 0;
  for (uint32_t n = 0; n < kProducers * kPerProducer; ++n) {
    tag_resp_t r;
    if (rk_actor_receive(a, &r, sizeof r, 10000000000u, NULL) != RK_OK) {
      failed = 1;
      printf("  receive %u failed: %s\n", n, rk_last_error());
      break;
    }
    if (r.producer >= kProducers || r.seq != next[r.producer] ||
        r.count != n + 1) {
      if (bad++ < 5)
        printf("  response %u: producer %u seq %u count %u\n", n, r.producer,
               r.seq, r.count);
    } else {
      next[r.producer]++;
    }
  }
  int send_failures = 0;
  for (uint32_t i = 0; i < kProducers; ++i) {
    pthread_join(th[i], NULL);
    send_failures += ps[i].failures;
  }
  CHECK(!failed && bad == 0 && send_failures == 0,
        "%s: %d out of order, %d failed sends", rk_actor_mode_name(mode), bad,
        send_failures);
  for (uint32_t i = 0; i < kProducers; ++i)
    CHECK(next[i] == kPerProducer, "producer %u: %u of %u came back", i,
          next[i], (unsigned)kPerProducer);
  rk_actor_destroy(a);
}

/* Several threads calling at once each get their own answer. */
typedef struct {
  rk_actor_t *actor;
  int base, failures;
} caller_t;

static void *caller_main(void *arg) {
  caller_t *c = arg;
  for (int i = 0; i < 2000; ++i) {
    int_msg_t q = {c->base + i}, r = {0};
    if (rk_actor_call(c->actor, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                      NULL) != RK_OK ||
        r.v != q.v + 1)
      c->failures++;
  }
  return NULL;
}

static void test_concurrent_calls(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
  if (!a) return;
  enum { kCallers = 3 };
  caller_t cs[kCallers];
  pthread_t th[kCallers];
  for (int i = 0; i < kCallers; ++i) {
    cs[i] = (caller_t){a, i * 1000000, 0};
    pthread_create(&th[i], NULL, caller_main, &cs[i]);
  }
  int failures = 0;
  for (int i = 0; i < kCallers; ++i) {
    pthread_join(th[i], NULL);
    failures += cs[i].failures;
  }
  CHECK(failures == 0, "%s: %d calls got a wrong answer",
        rk_actor_mode_name(mode), failures);
  rk_actor_destroy(a);
}

/* ---- Stuck rings and failures ------------------------------------------- */

/* One send, call or receive on its own thread, for operations that block:
 * what it returned, its error text and when. */
typedef enum { OP_SEND, OP_CALL, OP_RECEIVE } op_kind_t;

typedef struct {
  rk_actor_t *actor;
  op_kind_t kind;
  unsigned char request[16], response[16];
  size_t request_size;
  uint64_t timeout_ns;
  rk_status_t status;
  rk_actor_message_t info;
  char error[512];
  uint64_t done_ns; /* atomic; 0 while it runs */
  pthread_t thread;
} op_t;

static void *op_main(void *arg) {
  op_t *op = arg;
  memset(&op->info, 0, sizeof op->info);
  switch (op->kind) {
    case OP_SEND:
      op->status = rk_actor_send(op->actor, op->request, op->request_size,
                                 op->timeout_ns, NULL);
      break;
    case OP_CALL:
      op->status =
          rk_actor_call(op->actor, op->request, op->request_size, op->response,
                        sizeof op->response, op->timeout_ns, &op->info);
      break;
    case OP_RECEIVE:
      op->status =
          rk_actor_receive(op->actor, op->response, sizeof op->response,
                           op->timeout_ns, &op->info);
      break;
  }
  snprintf(op->error, sizeof op->error, "%s",
           op->status == RK_OK ? "" : rk_last_error());
  __atomic_store_n(&op->done_ns, rk__now_ns(), __ATOMIC_RELEASE);
  return NULL;
}

/* Starts `kind` on its own thread, with `timeout_ns`. */
static void op_start_for(op_t *op, rk_actor_t *a, op_kind_t kind,
                         const void *request, size_t request_size,
                         uint64_t timeout_ns) {
  memset(op, 0, sizeof *op);
  op->actor = a;
  op->kind = kind;
  op->timeout_ns = timeout_ns;
  op->status = RK_ERR_INTERNAL;
  if (request) memcpy(op->request, request, request_size);
  op->request_size = request_size;
  pthread_create(&op->thread, NULL, op_main, op);
}

/* The same with RK_TIMEOUT_INFINITE. */
static void op_start(op_t *op, rk_actor_t *a, op_kind_t kind,
                     const void *request, size_t request_size) {
  op_start_for(op, a, kind, request, request_size, RK_TIMEOUT_INFINITE);
}

static bool op_done(const op_t *op) {
  return __atomic_load_n(&op->done_ns, __ATOMIC_ACQUIRE) != 0;
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits (the watchdog bounds it) until the stats satisfy `want`. */
static rk_actor_stats_t wait_stats(rk_actor_t *a,
                                   bool (*want)(const rk_actor_stats_t *,
                                                uint64_t),
                                   uint64_t arg) {
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  while (rk_actor_stats(a, &st) == RK_OK && !want(&st, arg)) sleep_ms(1);
  return st;
}

static bool output_at(const rk_actor_stats_t *st, uint64_t n) {
  return st->output_depth >= n;
}

static bool input_at(const rk_actor_stats_t *st, uint64_t n) {
  return st->input_depth >= n;
}

static bool processed_at(const rk_actor_stats_t *st, uint64_t n) {
  return st->processed >= n;
}

/* Fills the output ring (and, persistent, the input ring behind it) with
 * requests v = 0, 1, ... that nobody receives, so that the next send
 * cannot go through; returns how many were sent. */
static int fill_rings(rk_actor_t *a, rk_actor_mode_t mode, uint32_t in_cap,
                      uint32_t out_cap) {
  int sent = 0;
  for (uint32_t i = 0; i < out_cap; ++i) {
    int_msg_t q = {sent};
    if (CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL)))
      ++sent;
  }
  wait_stats(a, output_at, out_cap);
  if (mode == RK_ACTOR_PERSISTENT) {
    /* The device side cannot answer these: no output slot is free. */
    for (uint32_t i = 0; i < in_cap; ++i) {
      int_msg_t q = {sent};
      if (CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL)))
        ++sent;
    }
    wait_stats(a, input_at, in_cap);
  }
  int_msg_t q = {-1};
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_QUEUE_FULL);
  return sent;
}

/* Receives the responses of requests v = 0 .. n-1 in order. */
static void receive_in_order(rk_actor_t *a, int n) {
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int_msg_t r = {-1};
    if (rk_actor_receive(a, &r, sizeof r, 5000000000u, NULL) != RK_OK ||
        r.v != i + 1) {
      if (bad++ < 3)
        printf("  response %d: %d (%s)\n", i, r.v, rk_last_error());
    }
  }
  CHECK(bad == 0, "%d of %d queued responses missing or wrong", bad, n);
}

/* A call on an actor whose output ring is full of responses nobody has
 * received gets its own answer (its response is never stuck behind them);
 * the queued responses stay, in order, for receive. */
static void test_call_past_full_output(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 4;
  o.output_capacity = 4;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  int sent = fill_rings(a, mode, 4, 4);
  if (mode == RK_ACTOR_TRADITIONAL) {
    /* A send needs an output slot: refused, naming the full output ring. */
    int_msg_t q = {-1};
    CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_QUEUE_FULL);
    CHECK_ERROR_HAS("output ring");
    uint64_t t0 = rk__now_ns();
    CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 10000000u, NULL),
                 RK_ERR_QUEUE_FULL);
    CHECK(rk__now_ns() - t0 >= 10000000u, "the send waited for a slot");
  }
  for (int i = 0; i < 3; ++i) {
    int_msg_t q = {100 + i}, r = {0};
    rk_actor_message_t info;
    CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                           &info));
    CHECK(r.v == 101 + i && info.status == RK_OK && info.correlation_id != 0,
          "call %d past the full output ring gave %d", 100 + i, r.v);
  }
  receive_in_order(a, sent);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.processed == (uint64_t)sent + 3 && st.output_depth == 0,
        "processed %llu output depth %llu", (unsigned long long)st.processed,
        (unsigned long long)st.output_depth);
  uint64_t t0 = rk__now_ns();
  CHECK_OK(rk_actor_terminate(a, 1000000000u));
  CHECK(rk__now_ns() - t0 < 1000000000u, "terminate kept its deadline");
  rk_actor_destroy(a);
}

/* A send blocked on full rings does not keep terminate from its deadline:
 * terminate takes the responses that fill the output ring (they stay for
 * receive), the device side answers what was queued, the blocked send
 * wakes refused, and the actor is TERMINATED. */
static void test_terminate_past_blocked_send(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 2;
  o.output_capacity = 2;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  int sent = fill_rings(a, mode, 2, 2);
  int_msg_t q = {99};
  op_t s;
  op_start(&s, a, OP_SEND, &q, sizeof q);
  sleep_ms(200); /* the thread is waiting, even on a loaded machine */
  CHECK(!op_done(&s), "the send blocks on the full rings");
  uint64_t t0 = rk__now_ns();
  CHECK_OK(rk_actor_terminate(a, 2000000000u));
  uint64_t t1 = rk__now_ns();
  CHECK(t1 - t0 < 2000000000u, "terminate took %.1f ms",
        (double)(t1 - t0) / 1e6);
  CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  pthread_join(s.thread, NULL);
  CHECK(
      s.status == RK_ERR_INVALID_STATE && rk_test_contains(s.error, "terminat"),
      "the blocked send returned %s: %s", rk_status_name(s.status), s.error);
  receive_in_order(a, sent);
  int_msg_t r;
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 0, NULL), RK_ERR_QUEUE_EMPTY);
  t0 = rk__now_ns();
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("terminated");
  CHECK(rk__now_ns() - t0 < 1000000000u,
        "a receive on a terminated, drained actor returns at once");
  rk_actor_destroy(a);
}

/* slow: n rounds of 32768 steps of a linear congruential generator (the
 * time it takes is what the test wants), then answers v + 1. Two loops:
 * llvmpipe ends any one loop after 65535 iterations. */
typedef struct {
  uint32_t n, v;
} slow_req_t;
typedef struct {
  uint32_t v, x;
} slow_resp_t;
static const char kSlowSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t n; uint32_t v; } req_t;\n"
    "typedef struct { uint32_t v; uint32_t x; } resp_t;\n"
    "RK_HANDLER void slow(const req_t *in, resp_t *out) {\n"
    "  uint32_t x = in->v;\n"
    "  for (uint32_t r = 0u; r < in->n; r++) {\n"
    "    for (uint32_t i = 0u; i < 32768u; i++) {\n"
    "      x = x * 1664525u + 1013904223u;\n"
    "    }\n"
    "  }\n"
    "  out->v = in->v + 1u;\n"
    "  out->x = x;\n"
    "}\n";

/* Rounds of `slow` that take about `ms` milliseconds here (at most 65535;
 * 0 when the device runs no handler that long); *calls counts the calls
 * made to find out. */
static uint32_t slow_rounds(rk_actor_t *a, unsigned ms, uint64_t *calls) {
  for (uint32_t n = 4;; n *= 2) {
    slow_req_t q = {n, 0};
    slow_resp_t r;
    uint64_t t0 = rk__now_ns();
    rk_status_t s =
        rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
    if (s == RK_ERR_LAUNCH) {
      /* llvmpipe (WebGPU on lavapipe) ends long loops, and rk says so. */
      printf("  skipped: %u rounds of the slow handler: %s\n", n,
             rk_status_name(s));
      return 0;
    }
    if (!CHECK_OK(s)) return 0;
    ++*calls;
    uint64_t t = rk__now_ns() - t0;
    if (t >= 40000000u) {
      /* The fastest of three: a loaded machine only ever makes a sample
       * slower, and too few rounds would end the request too soon. */
      for (int k = 0; k < 2; ++k) {
        t0 = rk__now_ns();
        if (!CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r,
                                    RK_TIMEOUT_INFINITE, NULL)))
          return 0;
        ++*calls;
        const uint64_t tk = rk__now_ns() - t0;
        if (tk < t) t = tk;
      }
      double rounds = (double)n * ms * 1e6 / (double)t;
      if (rounds > 65535.0) rounds = 65535.0;
      printf("  slow handler: %u rounds took %.1f ms; %u for %u ms\n", n,
             (double)t / 1e6, (uint32_t)rounds, ms);
      return (uint32_t)rounds;
    }
    if (n >= 65535u / 2) {
      /* llvmpipe (WebGPU on lavapipe) also ends nested loops early. */
      printf(
          "  skipped: %u rounds of the slow handler took only %.1f ms: "
          "this device cuts long loops short\n",
          n, (double)t / 1e6);
      return 0;
    }
  }
}

/* A handler that does not return before the termination deadline: the
 * actor is FAILED, and every thread waiting on it wakes at once with
 * RK_ERR_INVALID_STATE naming the failure -- a call waiting for its answer,
 * a receive -- instead of waiting for the handler (traditional mode: a
 * call waiting for its turn is refused as soon as terminate starts).
 * Responses the device side produces later still reach receive. */
static void test_failure_wakes_waiters(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kSlowSource, "slow", mode, NULL);
  if (!a) return;
  uint64_t calls = 0;
  uint32_t rounds = slow_rounds(a, 5000, &calls);
  if (!rounds) {
    rk_actor_destroy(a);
    return;
  }
  /* A: the slow request (traditional: run by A's own thread). */
  slow_req_t qa = {rounds, 1}, qb = {0, 2};
  op_t opa, opb, opc;
  for (;;) {
    op_start(&opa, a, OP_SEND, &qa, sizeof qa);
    /* Long enough for A's thread to have started its request even on a
     * loaded machine (B must come after it); far shorter than the
     * request. */
    sleep_ms(500);
    if (!op_done(&opa)) break;
    /* Done already: the rounds were measured on a busier machine than
     * this one now. Take its answer and ask for longer. */
    pthread_join(opa.thread, NULL);
    slow_resp_t r;
    if (!CHECK_OK(opa.status) ||
        !CHECK_OK(
            rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL))) {
      rk_actor_destroy(a);
      return;
    }
    ++calls;
    if (qa.n == 65535u) {
      printf(
          "  skipped: the slow handler's longest request took under "
          "500 ms\n");
      rk_actor_destroy(a);
      return;
    }
    qa.n = qa.n > 65535u / 4 ? 65535u : qa.n * 4;
    printf("  the slow request ended within 500 ms; again with %u rounds\n",
           qa.n);
  }
  /* B: a call behind it; C: a receive with nothing to receive. B waits
   * with a deadline under relaunch, where a call without one that finds
   * the slow request not yet taken by the driver runs it on its own thread
   * (it is then the device, not a waiter). */
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  op_start_for(&opb, a, OP_CALL, &qb, sizeof qb,
               st.execution == RK_ACTOR_EXEC_RELAUNCH ? 60000000000u
                                                      : RK_TIMEOUT_INFINITE);
  op_start(&opc, a, OP_RECEIVE, NULL, 0);
  sleep_ms(200);
  CHECK(!op_done(&opb) && !op_done(&opc), "B and C wait");
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(rk_actor_terminate(a, 50000000u), RK_ERR_TIMEOUT);
  const uint64_t t1 = rk__now_ns();
  CHECK(t1 - t0 < 1000000000u, "terminate took %.1f ms for a 50 ms deadline",
        (double)(t1 - t0) / 1e6);
  CHECK(rk_actor_state(a) == RK_ACTOR_FAILED, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  pthread_join(opb.thread, NULL);
  pthread_join(opc.thread, NULL);
  op_t *woken[] = {&opb, &opc};
  const char *names[] = {"call", "receive"};
  /* Traditional mode: B's request had not started (it waited for its
   * turn), so terminate refused it right away, as it refuses new sends. */
  const char *why[] = {
      mode == RK_ACTOR_TRADITIONAL ? "terminating" : "did not stop within",
      "did not stop within"};
  for (int i = 0; i < 2; ++i) {
    const op_t *op = woken[i];
    const double after_ms = ((double)op->done_ns - (double)t1) / 1e6;
    CHECK(op->status == RK_ERR_INVALID_STATE &&
              rk_test_contains(op->error, why[i]) && op->done_ns >= t0 &&
              after_ms < 1000.0,
          "the waiting %s returned %s %.1f ms after the failure: %s", names[i],
          rk_status_name(op->status), after_ms, op->error);
  }
  if (mode == RK_ACTOR_PERSISTENT)
    CHECK(rk_test_contains(opb.error, "failed") &&
              rk_test_contains(opb.error, "not answered"),
          "the call names the failure: %s", opb.error);
  /* The slow request finishes in the end; its response (and, persistent,
   * the abandoned call's) goes to receive. */
  pthread_join(opa.thread, NULL);
  CHECK_OK(opa.status);
  const uint64_t late = mode == RK_ACTOR_TRADITIONAL ? 1 : 2;
  wait_stats(a, processed_at, calls + late);
  slow_resp_t r = {0, 0};
  CHECK_OK(rk_actor_receive(a, &r, sizeof r, 0, NULL));
  CHECK(r.v == 2, "the slow request's late response: %u", r.v);
  if (late == 2) {
    CHECK_OK(rk_actor_receive(a, &r, sizeof r, 0, NULL));
    CHECK(r.v == 3, "the abandoned call's late response: %u", r.v);
  }
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 0, NULL), RK_ERR_QUEUE_EMPTY);
  CHECK_STATUS(rk_actor_receive(a, &r, sizeof r, 10000000u, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("failed");
  rk_actor_destroy(a);
}

/* Destroying an actor while threads wait on it: they wake (terminated,
 * nothing more will come) and destroy waits for them to leave before it
 * frees anything. */
static void test_destroy_wakes_waiters(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 2;
  o.output_capacity = 2;
  /* Two receives with nothing to receive. */
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  op_t rc[2];
  op_start(&rc[0], a, OP_RECEIVE, NULL, 0);
  op_start(&rc[1], a, OP_RECEIVE, NULL, 0);
  /* Both threads inside receive, waiting (the watchdog bounds this):
   * destroying under a receive not yet started would be the caller's use
   * after free. */
  while (rk__actor_waiting(a) < 2) sleep_ms(1);
  CHECK(!op_done(&rc[0]) && !op_done(&rc[1]), "the receives wait");
  rk_actor_destroy(a);
  for (int i = 0; i < 2; ++i) {
    pthread_join(rc[i].thread, NULL);
    CHECK(rc[i].status == RK_ERR_INVALID_STATE &&
              rk_test_contains(rc[i].error, "terminated"),
          "a receive waiting on a destroyed actor returned %s: %s",
          rk_status_name(rc[i].status), rc[i].error);
  }
  /* A send waiting for space. */
  a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  fill_rings(a, mode, 2, 2);
  int_msg_t q = {99};
  op_t sd;
  op_start(&sd, a, OP_SEND, &q, sizeof q);
  while (rk__actor_waiting(a) < 1) sleep_ms(1); /* inside send, waiting */
  CHECK(!op_done(&sd), "the send waits for space");
  rk_actor_destroy(a);
  pthread_join(sd.thread, NULL);
  CHECK(sd.status == RK_ERR_INVALID_STATE,
        "a send waiting on a destroyed actor returned %s: %s",
        rk_status_name(sd.status), sd.error);
}

/* The execution the stats report for `mode` on this run. */
static void test_execution(rk_actor_mode_t mode, rk_actor_execution_t want) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, NULL);
  if (!a) return;
  int_msg_t q = {1}, r = {0};
  for (int i = 0; i < 3; ++i)
    CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                           NULL));
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.execution == want, "%s: execution %s, want %s",
        rk_actor_mode_name(mode), rk_actor_execution_name(st.execution),
        rk_actor_execution_name(want));
  if (want == RK_ACTOR_EXEC_RELAUNCH)
    CHECK(st.batches >= 1 && st.batches <= 3, "%llu batches for 3 calls",
          (unsigned long long)st.batches);
  else
    CHECK(st.batches == 0, "no batches outside relaunch");
  rk_actor_destroy(a);
}

/* actor [--backend NAME] [--relaunch]: the suite on that backend (default
 * cpu); --relaunch sets RK_ACTOR_RELAUNCH=1 so persistent actors run as
 * relaunch batches even where the backend keeps them resident. */
/* Handlers whose every call loops 600 times, stateless and with a state,
 * fed 300 pipelined requests: every answer must be right. A device that
 * cuts an invocation's loops short after a total count (llvmpipe: 65535)
 * gave wrong answers with RK_OK once a relaunch batch ran more than about
 * 108 such requests on one invocation. */
static const char kLoopSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t v; } lq_t;\n"
    "typedef struct { uint32_t x; uint32_t seen; } lr_t;\n"
    "typedef struct { uint32_t seen; } ls_t;\n"
    "RK_HANDLER void spin600(const lq_t *in, lr_t *out) {\n"
    "  uint32_t x = in->v;\n"
    "  for (uint32_t i = 0u; i < 600u; i++) x = x * 1664525u + 1013904223u;\n"
    "  out->x = x;\n"
    "  out->seen = 0u;\n"
    "}\n"
    "RK_HANDLER void spin600s(const lq_t *in, lr_t *out, ls_t *s) {\n"
    "  uint32_t x = in->v;\n"
    "  for (uint32_t i = 0u; i < 600u; i++) x = x * 1664525u + 1013904223u;\n"
    "  s->seen += 1u;\n"
    "  out->x = x;\n"
    "  out->seen = s->seen;\n"
    "}\n"
    "RK_HANDLER void spin_n(const lq_t *in, lr_t *out) {\n"
    "  uint32_t x = 1u;\n"
    "  for (uint32_t i = 0u; i < in->v; i++) x = x * 1664525u + 1013904223u;\n"
    "  out->x = x;\n"
    "  out->seen = 0u;\n"
    "}\n";

/* One handler call that loops n times: the right answer, or (a device
 * that ends long loops early: llvmpipe past 65535) an error, never a wrong
 * answer with RK_OK. Returns the call's status. */
static rk_status_t call_spin_n(rk_actor_t *a, uint32_t n) {
  uint32_t q = n;
  struct {
    uint32_t x, seen;
  } r = {0, 0};
  rk_actor_message_t info;
  memset(&info, 0, sizeof info);
  rk_status_t s =
      rk_actor_call(a, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE, &info);
  uint32_t x = 1u;
  for (uint32_t i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;
  CHECK(s != RK_OK || r.x == x, "spin_n(%u): RK_OK with x %u, expected %u", n,
        r.x, x);
  return s;
}

/* A handler call that loops more than llvmpipe allows: an error naming
 * it; a call under the limit: the right answer. */
static void test_handler_loop_limit(rk_actor_mode_t mode) {
  rk_actor_t *a = launch(kLoopSource, "spin_n", mode, NULL);
  if (!a) return;
  rk_device_info_t info;
  bool limited = false;
  if (CHECK_OK(rk_backend_device_info(rk_context_backend(g_ctx), 0, &info)))
    limited = strstr(info.name, "llvmpipe") != NULL;
  CHECK_OK(call_spin_n(a, 60000));
  rk_status_t s = call_spin_n(a, 70000);
  if (limited)
    CHECK(s == RK_ERR_LAUNCH, "spin_n(70000) on %s: %s", info.name,
          rk_status_name(s));
  else
    CHECK_OK(s);
  CHECK_OK(call_spin_n(a, 1000));
  rk_actor_destroy(a);
}

static void test_long_loops(rk_actor_mode_t mode) {
  enum { kN = 300 };
  const char *handlers[] = {"spin600", "spin600s"};
  for (int h = 0; h < 2; ++h) {
    rk_actor_options_t o;
    rk_actor_options_init(&o);
    o.input_capacity = 512;
    o.output_capacity = 512;
    rk_actor_t *a = launch(kLoopSource, handlers[h], mode, &o);
    if (!a) return;
    for (uint32_t i = 0; i < kN; ++i) {
      uint32_t q = i * 7u + 1u;
      if (!CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL)))
        break;
    }
    int bad = 0;
    for (uint32_t i = 0; i < kN; ++i) {
      struct {
        uint32_t x, seen;
      } r = {0, 0};
      if (!CHECK_OK(
              rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL)))
        break;
      uint32_t x = i * 7u + 1u;
      for (int k = 0; k < 600; ++k) x = x * 1664525u + 1013904223u;
      uint32_t seen = h == 1 ? i + 1 : 0;
      if (bad < 3 && !CHECK(r.x == x && r.seen == seen,
                            "%s request %u: x %u (expected %u), seen %u "
                            "(expected %u)",
                            handlers[h], i, r.x, x, r.seen, seen))
        ++bad;
    }
    rk_actor_destroy(a);
  }
}

/* Batches: consecutive ids, FIFO order, responses split across batch and
 * single receives, a call in between, a full ring filled only partly with
 * timeout 0, a handler's error reported per response, bad arguments. */
static void test_batches(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = o.output_capacity = 64;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  enum { kN = 48 };
  int_msg_t q[kN], r[kN];
  rk_actor_message_t info[kN];
  for (int i = 0; i < kN; ++i) q[i].v = 1000 + i;
  size_t sent = 0;
  uint64_t first = 0;
  CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], kN, RK_TIMEOUT_INFINITE,
                               &sent, &first));
  CHECK(sent == kN && first != 0, "sent %zu, first id %llu", sent,
        (unsigned long long)first);
  /* A call between: its answer is its own, the batch's stay queued. */
  int_msg_t cq = {7}, cr = {0};
  CHECK_OK(rk_actor_call(a, &cq, sizeof cq, &cr, sizeof cr, RK_TIMEOUT_INFINITE,
                         NULL));
  CHECK(cr.v == 8, "call between batches gave %d", cr.v);
  int got = 0, bad = 0;
  int_msg_t one;
  rk_actor_message_t one_info;
  CHECK_OK(
      rk_actor_receive(a, &one, sizeof one, RK_TIMEOUT_INFINITE, &one_info));
  if (one.v != 1001 || one_info.correlation_id != first) ++bad;
  got = 1;
  while (got < kN) {
    size_t n = 0;
    const size_t want = (size_t)(kN - got) < 10 ? (size_t)(kN - got) : 10;
    if (!CHECK_OK(rk_actor_receive_batch(a, r, sizeof r, want,
                                         RK_TIMEOUT_INFINITE, info, &n)))
      break;
    CHECK(n >= 1 && n <= want, "receive_batch took %zu of %zu", n, want);
    for (size_t i = 0; i < n; ++i, ++got)
      if (r[i].v != 1000 + got + 1 || info[i].status != RK_OK ||
          info[i].correlation_id != first + (uint64_t)got ||
          info[i].size != sizeof r[0])
        ++bad;
  }
  CHECK(bad == 0 && got == kN, "%d of %d responses out of order or wrong", bad,
        got);
  size_t n = 99;
  CHECK_STATUS(rk_actor_receive_batch(a, r, sizeof r, kN, 0, info, &n),
               RK_ERR_QUEUE_EMPTY);
  CHECK(n == 0, "nothing taken: %zu", n);
  /* Arguments. */
  CHECK_STATUS(rk_actor_send_batch(a, q, 3, 2, 0, &sent, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_receive_batch(a, r, sizeof r[0], 2, 0, info, &n),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_receive_batch(a, r, sizeof r, 2, 0, NULL, &n),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], 0, 0, &sent, NULL));
  CHECK(sent == 0, "empty batch");
  if (mode == RK_ACTOR_PERSISTENT) {
    /* Full: deactivate so nothing is consumed, then 100 into 64 slots. */
    CHECK_OK(rk_actor_deactivate(a));
    CHECK_STATUS(rk_actor_send_batch(a, q, sizeof q[0], 2, 0, &sent, NULL),
                 RK_ERR_INVALID_STATE);
    CHECK_OK(rk_actor_activate(a));
    static int_msg_t big[100];
    for (int i = 0; i < 100; ++i) big[i].v = i;
    /* The worker takes some meanwhile; at least a ring's worth fits, and
     * whatever fitted comes back in order. */
    rk_status_t st =
        rk_actor_send_batch(a, big, sizeof big[0], 100, 0, &sent, &first);
    CHECK(st == RK_OK || (st == RK_ERR_QUEUE_FULL && sent >= 1 && sent < 100),
          "partial batch: %s, sent %zu", rk_status_name(st), sent);
    int k = 0;
    bad = 0;
    while ((size_t)k < sent) {
      if (!CHECK_OK(rk_actor_receive_batch(a, r, sizeof r, kN,
                                           RK_TIMEOUT_INFINITE, info, &n)))
        break;
      for (size_t i = 0; i < n; ++i, ++k)
        if (r[i].v != k + 1 || info[i].correlation_id != first + (uint64_t)k)
          ++bad;
    }
    CHECK(bad == 0, "%d of the partial batch's responses wrong", bad);
  }
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.sent == st.processed || mode == RK_ACTOR_PERSISTENT,
        "sent %llu processed %llu", (unsigned long long)st.sent,
        (unsigned long long)st.processed);
  rk_actor_destroy(a);

  /* A handler's error shows in that response's info only. */
  a = launch(kDivSource, "checked_div", mode, NULL);
  if (!a) return;
  div_req_t dq[3] = {{10, 2}, {10, 0}, {9, 3}};
  CHECK_OK(rk_actor_send_batch(a, dq, sizeof dq[0], 3, RK_TIMEOUT_INFINITE,
                               &sent, NULL));
  got = 0;
  while (got < 3) {
    if (!CHECK_OK(rk_actor_receive_batch(a, r + got, sizeof r[0] * 3, 3,
                                         RK_TIMEOUT_INFINITE, info + got, &n)))
      break;
    got += (int)n;
  }
  CHECK(got == 3 && r[0].v == 5 && info[0].status == RK_OK &&
            info[1].status == RK_ERR_HANDLER && info[1].handler_code == 7 &&
            r[2].v == 3 && info[2].status == RK_OK,
        "batch with a handler error: %d %d %d, statuses %d %d %d", r[0].v,
        r[1].v, r[2].v, (int)info[0].status, (int)info[1].status,
        (int)info[2].status);
  rk_actor_destroy(a);
}

/* Zero-copy receive: responses lent in place and released; in order and
 * exactly once across lends, receives and calls; a loan's rules enforced. */
typedef struct {
  rk_actor_t *a;
  int_msg_t r;
  rk_status_t st;
} loan_call_t;

static void *loan_call_main(void *arg) {
  loan_call_t *c = arg;
  int_msg_t q = {500};
  c->st = rk_actor_call(c->a, &q, sizeof q, &c->r, sizeof c->r,
                        RK_TIMEOUT_INFINITE, NULL);
  return NULL;
}

/* Requests handled several at a time in place (the CPU worker's runs):
 * batches of 1..8, each published at once, into an input ring of 8 slots
 * and an output ring of 4, answers taken only once the whole batch is in,
 * so that runs stop at the rings' ends (at different points in the two)
 * and at the output's room. A stateful
 * int handler: each answer carries its request, the running count and,
 * for every fifth request, the handler's error code. */
static const char kRunSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; uint32_t n; } resp_t;\n"
    "typedef struct { uint32_t n; } state_t;\n"
    "RK_HANDLER int doubled(const req_t *in, resp_t *out, state_t *s) {\n"
    "  s->n += 1u;\n"
    "  out->n = s->n;\n"
    "  if (in->v % 5 == 3) {\n"
    "    out->v = -1;\n"
    "    return 9;\n"
    "  }\n"
    "  out->v = 2 * in->v;\n"
    "  return 0;\n"
    "}\n";

static void test_runs(rk_actor_mode_t mode) {
  typedef struct {
    int v;
  } run_req_t;
  typedef struct {
    int v;
    uint32_t n;
  } run_resp_t;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 8;
  o.output_capacity = 4;
  rk_actor_t *a = launch(kRunSource, "doubled", mode, &o);
  if (!a) return;
  int next = 0, bad = 0;
  uint32_t seen = 0;
  for (int round = 0; round < 60 && bad == 0; ++round) {
    /* Traditional: the send runs each request, whose answer needs room. */
    const int k = 1 + round % (mode == RK_ACTOR_PERSISTENT ? 8 : 4);
    run_req_t q[8];
    for (int i = 0; i < k; ++i) q[i].v = next + i;
    size_t sent = 0;
    CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], (size_t)k,
                                 RK_TIMEOUT_INFINITE, &sent, NULL));
    for (size_t i = 0; i < sent; ++i) {
      run_resp_t r = {0, 0};
      rk_actor_message_t info;
      const rk_status_t s =
          rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, &info);
      const int v = next + (int)i;
      const bool fails = v % 5 == 3;
      ++seen;
      if (s != (fails ? RK_ERR_HANDLER : RK_OK) || r.n != seen ||
          r.v != (fails ? -1 : 2 * v) || info.handler_code != (fails ? 9 : 0)) {
        printf("  request %d: status %s, v %d, n %u (want %u), code %d\n", v,
               rk_status_name(s), r.v, r.n, seen, info.handler_code);
        ++bad;
      }
    }
    next += (int)sent;
  }
  CHECK(bad == 0 && next > 140, "%d wrong answers of %d", bad, next);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.processed == (uint64_t)next &&
            st.handler_errors == (uint64_t)((next + 1) / 5) &&
            st.last_handler_code == 9,
        "processed %llu errors %llu last %d", (unsigned long long)st.processed,
        (unsigned long long)st.handler_errors, st.last_handler_code);
  rk_actor_destroy(a);
}

/* A relaunch caller without a deadline that finds the driver idle runs the
 * batch itself, so the driver's view of the input ring goes stale; after
 * more than a lap of such calls, a sent request is still the driver's to
 * answer (it once spun on its stale view and never took it). The answers
 * are the same in every mode. */
static void test_callers_lap_the_driver(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = 8;
  o.output_capacity = 8;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  int bad = 0;
  for (int round = 0; round < 3; ++round) {
    for (int step = 0; step < 2; ++step) {
      /* Sent: the driver answers (the second time, past the laps). */
      int_msg_t q = {1000 * round + step}, r = {0};
      CHECK_OK(rk_actor_send(a, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL));
      const rk_status_t s =
          rk_actor_receive(a, &r, sizeof r, 5000000000ull, NULL);
      if (s != RK_OK || r.v != q.v + 1) {
        printf("  round %d: the sent request: %s, %d\n", round,
               rk_status_name(s), r.v);
        ++bad;
      }
      if (step == 1) break;
      /* The driver goes idle: then 20 calls, each run by this thread. */
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      for (int i = 0; i < 20; ++i) {
        int_msg_t c = {i}, cr = {0};
        if (rk_actor_call(a, &c, sizeof c, &cr, sizeof cr, RK_TIMEOUT_INFINITE,
                          NULL) != RK_OK ||
            cr.v != i + 1)
          ++bad;
      }
    }
  }
  CHECK(bad == 0, "%d wrong or missing answers", bad);
  CHECK_OK(rk_actor_terminate(a, RK_TIMEOUT_INFINITE));
  rk_actor_destroy(a);
}

static void test_loans(rk_actor_mode_t mode) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.input_capacity = o.output_capacity = 64;
  rk_actor_t *a = launch(kAddOneSource, "add_one", mode, &o);
  if (!a) return;
  enum { kN = 40 };
  int_msg_t q[kN];
  for (int i = 0; i < kN; ++i) q[i].v = 2000 + i;
  size_t sent = 0;
  uint64_t first = 0;
  CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], kN, RK_TIMEOUT_INFINITE,
                               &sent, &first));
  int got = 0, bad = 0, lends = 0, in_place = 0;
  while (got < kN) {
    rk_actor_loan_t loan;
    const size_t want = (size_t)(kN - got) < 7 ? (size_t)(kN - got) : 7;
    if (!CHECK_OK(rk_actor_receive_lend(a, want, RK_TIMEOUT_INFINITE, &loan)))
      break;
    ++lends;
    in_place += loan.zero_copy;
    CHECK(loan.count >= 1 && loan.count <= want, "lent %zu of %zu", loan.count,
          want);
    if (got == 0) {
      /* Rules while a loan is held, by this thread. */
      int_msg_t one;
      CHECK_STATUS(rk_actor_receive(a, &one, sizeof one, 0, NULL),
                   RK_ERR_INVALID_STATE);
      rk_actor_loan_t again;
      CHECK_STATUS(rk_actor_receive_lend(a, 1, 0, &again),
                   RK_ERR_INVALID_STATE);
      if (mode == RK_ACTOR_PERSISTENT)
        CHECK_STATUS(
            rk_actor_call(a, &one, sizeof one, &one, sizeof one, 0, NULL),
            RK_ERR_INVALID_STATE);
      CHECK(rk_actor_loan_response(&loan, loan.count, NULL) == NULL,
            "no response past the loan");
    }
    for (size_t i = 0; i < loan.count; ++i, ++got) {
      rk_actor_message_t info;
      const int_msg_t *r = rk_actor_loan_response(&loan, i, &info);
      if (!r || r->v != 2000 + got + 1 || info.status != RK_OK ||
          info.correlation_id != first + (uint64_t)got)
        ++bad;
    }
    CHECK_OK(rk_actor_loan_release(&loan));
    CHECK_STATUS(rk_actor_loan_release(&loan), RK_ERR_INVALID_ARGUMENT);
  }
  CHECK(bad == 0 && got == kN, "%d of %d lent responses out of order or wrong",
        bad, got);
  CHECK(in_place == lends, "nothing else waited: all %d lends in place (%d)",
        lends, in_place);
  rk_actor_loan_t loan;
  CHECK_STATUS(rk_actor_receive_lend(a, 4, 0, &loan), RK_ERR_QUEUE_EMPTY);
  CHECK(loan.count == 0 && loan.actor == NULL, "an empty loan");
  CHECK_STATUS(rk_actor_receive_lend(a, 0, 0, &loan), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_receive_lend(NULL, 1, 0, &loan),
               RK_ERR_INVALID_ARGUMENT);

  if (mode == RK_ACTOR_PERSISTENT) {
    /* A call from another thread while a loan is held waits for the
     * release, then gets its own answer; the lent ones are not its. */
    CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], 3, RK_TIMEOUT_INFINITE,
                                 &sent, &first));
    int_msg_t first_r;
    do {
      if (!CHECK_OK(rk_actor_receive_lend(a, 3, RK_TIMEOUT_INFINITE, &loan)))
        break;
    } while (0);
    const size_t lent = loan.count;
    first_r = *(const int_msg_t *)rk_actor_loan_response(&loan, 0, NULL);
    loan_call_t c = {a, {0}, RK_ERR_INTERNAL};
    pthread_t th;
    pthread_create(&th, NULL, loan_call_main, &c);
    struct timespec ts = {0, 20000000}; /* the call queues meanwhile */
    nanosleep(&ts, NULL);
    CHECK(first_r.v == 2001, "first lent response %d", first_r.v);
    CHECK_OK(rk_actor_loan_release(&loan));
    pthread_join(th, NULL);
    CHECK(c.st == RK_OK && c.r.v == 501, "the call's own answer: %s, %d",
          rk_status_name(c.st), c.r.v);
    /* The rest of the three, then nothing: each exactly once. */
    int rest = 0;
    while (lent + (size_t)rest < 3) {
      if (!CHECK_OK(rk_actor_receive_lend(a, 3, RK_TIMEOUT_INFINITE, &loan)))
        break;
      for (size_t i = 0; i < loan.count; ++i) {
        const int_msg_t *r = rk_actor_loan_response(&loan, i, NULL);
        CHECK(r && r->v == 2001 + (int)lent + rest, "rest %d: %d", rest,
              r ? r->v : -1);
        ++rest;
      }
      CHECK_OK(rk_actor_loan_release(&loan));
    }
    CHECK_STATUS(rk_actor_receive_lend(a, 4, 0, &loan), RK_ERR_QUEUE_EMPTY);
  }
  /* Queued by another receive path first (a call's drain put the sends'
   * answers in the receive queue): lent as copies, in order. */
  CHECK_OK(rk_actor_send_batch(a, q, sizeof q[0], 5, RK_TIMEOUT_INFINITE, &sent,
                               &first));
  int_msg_t cq = {9}, cr = {0};
  CHECK_OK(rk_actor_call(a, &cq, sizeof cq, &cr, sizeof cr, RK_TIMEOUT_INFINITE,
                         NULL));
  CHECK(cr.v == 10, "call between: %d", cr.v);
  got = 0;
  bad = 0;
  while (got < 5) {
    if (!CHECK_OK(rk_actor_receive_lend(a, 5, RK_TIMEOUT_INFINITE, &loan)))
      break;
    for (size_t i = 0; i < loan.count; ++i, ++got) {
      const int_msg_t *r = rk_actor_loan_response(&loan, i, NULL);
      if (!r || r->v != 2001 + got) ++bad;
    }
    CHECK_OK(rk_actor_loan_release(&loan));
  }
  CHECK(bad == 0 && got == 5, "%d of the queued responses wrong", bad);
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
      printf("usage: actor [--backend NAME] [--relaunch]\n");
      return 1;
    }
  }
  /* Every wait below is unbounded: on a device whose side never answers
   * the watchdog names the case instead of the run hanging. */
  actor_test_watchdog_start();
  actor_test_watch("open", 120);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context_on(kind, &be);
  if (kind != RK_BACKEND_CPU) kPerProducer = 2000;
  rk_device_info_t info;
  CHECK_OK(rk_backend_device_info(be, 0, &info));
  const bool resident =
      (info.caps & RK_CAP_PERSISTENT_KERNELS) && !getenv("RK_ACTOR_RELAUNCH");
  printf("backend %s (%s), persistent actors: %s\n", rk_backend_name(be),
         info.name, resident ? "resident" : "relaunch");
  const rk_actor_mode_t modes[] = {RK_ACTOR_PERSISTENT, RK_ACTOR_TRADITIONAL};
  for (int m = 0; m < 2; ++m) {
    printf("mode %s\n", rk_actor_mode_name(modes[m]));
    actor_test_watch("execution", 60);
    test_execution(modes[m], modes[m] == RK_ACTOR_TRADITIONAL
                                 ? RK_ACTOR_EXEC_PER_REQUEST
                             : resident ? RK_ACTOR_EXEC_RESIDENT
                                        : RK_ACTOR_EXEC_RELAUNCH);
    actor_test_watch("add_one", 60);
    test_add_one(modes[m]);
    actor_test_watch("pipelined", 60);
    test_pipelined(modes[m]);
    actor_test_watch("loans", 60);
    test_loans(modes[m]);
    actor_test_watch("uncorrelated responses stay", 60);
    test_uncorrelated_stay(modes[m]);
    actor_test_watch("state", 60);
    test_state(modes[m]);
    actor_test_watch("handler error", 60);
    test_handler_error(modes[m]);
    actor_test_watch("transitions", 60);
    test_transitions(modes[m]);
    actor_test_watch("concurrent calls", 60);
    test_concurrent_calls(modes[m]);
    actor_test_watch("many producers", 120);
    test_many_producers(modes[m]);
    actor_test_watch("one owner, then shared", 120);
    test_owner_then_shared(modes[m]);
    actor_test_watch("call past a full output ring", 60);
    test_call_past_full_output(modes[m]);
    actor_test_watch("terminate past a blocked send", 60);
    test_terminate_past_blocked_send(modes[m]);
    actor_test_watch("a failure wakes every waiter", 60);
    test_failure_wakes_waiters(modes[m]);
    actor_test_watch("destroy wakes the waiters", 60);
    test_destroy_wakes_waiters(modes[m]);
    actor_test_watch("batches", 60);
    test_batches(modes[m]);
    actor_test_watch("runs of requests in place", 60);
    test_runs(modes[m]);
    actor_test_watch("callers lap the driver", 60);
    test_callers_lap_the_driver(modes[m]);
    actor_test_watch("handlers with long loops", 120);
    test_long_loops(modes[m]);
    test_handler_loop_limit(modes[m]);
  }
  actor_test_watch("bad arguments and teardown", 60);
  test_bad_arguments();
#if RK__LINUX
  if (kind == RK_BACKEND_CPU && resident) {
    actor_test_watch("placement", 60);
    test_placement();
  }
#endif
  CHECK_OK(rk_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("actor");
}
