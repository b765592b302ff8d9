/* Persistent actors on CUDA: the resident kernel under every launch shape
 * users pick, and its lifecycle.
 *
 *   - first, one request through a one-thread actor: when even that is
 *     not answered (or the actor does not stop), nothing else is run;
 *   - block sizes 1, 32, 128 and 1024 with grids of 1 and 4 blocks: 2000
 *     pipelined requests, each answered exactly once, with its correlation
 *     id and the right value, in request order;
 *   - a stateful handler on 4 blocks sees the messages one at a time, in
 *     order (its running count comes back as 1..N);
 *   - handler errors reach the caller and are counted;
 *   - deactivate keeps queued requests queued, activate runs them;
 *   - terminate with a deadline answers what was queued first;
 *   - a grid that cannot be co-resident is refused at launch, saying so,
 *     and the context stays usable;
 *   - traditional mode answers the same requests;
 *   - beside a resident actor kernel: launches, copies, allocations,
 *     streams and rk_context_synchronize never wait for it; a module can
 *     be built and destroyed; a second actor can run, stop and be
 *     destroyed while the first goes on. These run last, one case each,
 *     since they depend most on what the driver does beside a kernel that
 *     never ends.
 *
 *   actor_cuda_blocks [--backend NAME]
 *
 * Exits 77 with the reason when the CUDA backend does not open or has no
 * device. `--backend cpu` runs the same checks, minus those only CUDA can
 * answer, on the CPU backend, so that the test's own logic runs on machines
 * without a GPU. A watchdog ends the run with a failure naming the case when
 * a case stalls (a device side that never answers), instead of hanging
 * until ctest's timeout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actor_test_util.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static rk_context_t *g_ctx;
static rk_backend_kind_t g_kind = RK_BACKEND_CUDA;
static rk_device_info_t g_info;
/* What rk_actor_stats must report for a persistent actor here. */
static rk_actor_execution_t g_persistent_exec = RK_ACTOR_EXEC_RESIDENT;

/* 10 s: generous for any one wait. */
static const uint64_t kTimeoutNs = 10000000000ull;

/* ---- Handlers ----------------------------------------------------------- */

/* A handler that takes a while: `spin` steps of a linear congruential
 * generator seeded with the request's value, so that requests pile up in
 * the ring while the device works, and the host can check the result. */
static const char kSlowSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; uint32_t spin; } slow_req_t;\n"
    "typedef struct { int v; uint32_t acc; } slow_resp_t;\n"
    "RK_HANDLER void slow_add(const slow_req_t *in, slow_resp_t *out) {\n"
    "  uint32_t acc = (uint32_t)in->v;\n"
    "  for (uint32_t k = 0u; k < in->spin; ++k)\n"
    "    acc = acc * 1664525u + 1013904223u;\n"
    "  out->v = in->v + 1;\n"
    "  out->acc = acc;\n"
    "}\n";

typedef struct {
  int32_t v;
  uint32_t spin;
} slow_req_t;
typedef struct {
  int32_t v;
  uint32_t acc;
} slow_resp_t;

static uint32_t slow_expected(int32_t v, uint32_t spin) {
  uint32_t acc = (uint32_t)v;
  for (uint32_t k = 0; k < spin; ++k) acc = acc * 1664525u + 1013904223u;
  return acc;
}

/* Steps per slow request: about 50-100 us on one GPU thread or one CPU
 * core, so a few hundred requests keep the actor busy for tens of ms. */
enum { kSlowSpin = 50000 };

/* A small kernel to show the context still works. */
static const char kAddKernel[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void add_k(int n, int k, const int *a, int *b) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) b[i] = a[i] + k;\n"
    "}\n";

/* ---- Helpers ------------------------------------------------------------ */

static rk_actor_t *launch(const char *src, const char *handler,
                          const rk_actor_options_t *o) {
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, src, handler, o, &a))) return NULL;
  return a;
}

/* Everything a receiving thread took: payloads, infos and statuses, in the
 * order they came. */
typedef struct receiver {
  rk_actor_t *actor;
  size_t want, size;
  unsigned char *payloads;
  rk_actor_message_t *infos;
  rk_status_t *statuses;
  size_t got;
  rk_status_t failure; /* other than RK_OK / RK_ERR_HANDLER */
  char why[512];
} receiver_t;

static void *receive_main(void *arg) {
  receiver_t *r = arg;
  while (r->got < __atomic_load_n(&r->want, __ATOMIC_ACQUIRE)) {
    rk_status_t s = rk_actor_receive(r->actor, r->payloads + r->got * r->size,
                                     r->size, kTimeoutNs, &r->infos[r->got]);
    if (s != RK_OK && s != RK_ERR_HANDLER) {
      r->failure = s;
      snprintf(r->why, sizeof r->why, "%s", rk_last_error());
      break;
    }
    r->statuses[r->got++] = s;
  }
  return NULL;
}

static bool receiver_init(receiver_t *r, rk_actor_t *a, size_t want,
                          size_t size) {
  memset(r, 0, sizeof *r);
  r->actor = a;
  r->want = want;
  r->size = size;
  r->payloads = calloc(want, size);
  r->infos = calloc(want, sizeof *r->infos);
  r->statuses = calloc(want, sizeof *r->statuses);
  return CHECK(r->payloads && r->infos && r->statuses, "out of memory");
}

static void receiver_free(receiver_t *r) {
  free(r->payloads);
  free(r->infos);
  free(r->statuses);
}

/* Sends `n` requests of `size` bytes from `reqs` while a second thread
 * receives the answers into *r; ids[i] gets request i's correlation id.
 * Returns whether every send and receive succeeded. */
static bool exchange(rk_actor_t *a, const void *reqs, size_t size, size_t n,
                     uint64_t *ids, receiver_t *r) {
  pthread_t th;
  if (!CHECK(pthread_create(&th, NULL, receive_main, r) == 0, "pthread_create"))
    return false;
  size_t sent = 0;
  rk_status_t s = RK_OK;
  for (; sent < n; ++sent) {
    s = rk_actor_send(a, (const unsigned char *)reqs + sent * size, size,
                      kTimeoutNs, &ids[sent]);
    if (s != RK_OK) break;
  }
  CHECK(sent == n, "send %zu of %zu: %s: %s", sent, n, rk_status_name(s),
        rk_last_error());
  /* The receiver stops after what was sent. */
  if (sent < n) __atomic_store_n(&r->want, sent, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  CHECK(r->failure == RK_OK, "receive %zu of %zu: %s: %s", r->got, r->want,
        rk_status_name(r->failure), r->why);
  return sent == n && r->failure == RK_OK && r->got == n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The n correlation ids are distinct and non-zero. */
static bool ids_distinct(const uint64_t *ids, size_t n) {
  uint64_t *s = malloc(n * sizeof *s);
  if (!s) return false;
  memcpy(s, ids, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_u64);
  bool ok = n == 0 || s[0] != 0;
  for (size_t i = 1; i < n && ok; ++i) ok = s[i] != s[i - 1];
  free(s);
  return ok;
}

static bool stats_of(rk_actor_t *a, rk_actor_stats_t *st) {
  memset(st, 0, sizeof *st);
  return CHECK_OK(rk_actor_stats(a, st));
}

static void terminate_ok(rk_actor_t *a, const char *what) {
  rk_status_t s = rk_actor_terminate(a, 5000000000ull);
  CHECK(s == RK_OK, "%s: terminate: %s: %s", what, rk_status_name(s),
        rk_last_error());
  CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED,
        "%s: state %s after terminate", what,
        rk_actor_state_name(rk_actor_state(a)));
}

/* ---- First request ------------------------------------------------------ */

/* One request through the simplest actor (one block of one thread), then
 * terminate. False when it was not answered right or the actor did not
 * stop: the device side does not work here at all, and every later case
 * would only wait out its timeouts. */
static bool test_first_request(void) {
  rk_actor_t *a = launch(kAddOneSource, "add_one", NULL);
  if (!a) return false;
  int_msg_t q = {20}, r = {0};
  uint64_t t0 = rk__now_ns();
  bool ok =
      CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, kTimeoutNs, NULL));
  ok = CHECK(!ok || r.v == 21, "call(20) gave %d", r.v) && ok;
  if (ok)
    printf("  first answer after %.1f us\n", (double)(rk__now_ns() - t0) / 1e3);
  rk_status_t s = rk_actor_terminate(a, 5000000000ull);
  ok = CHECK(s == RK_OK, "first actor: terminate: %s: %s", rk_status_name(s),
             rk_last_error()) &&
       ok;
  rk_actor_destroy(a);
  return ok;
}

/* ---- Block sizes and grids ---------------------------------------------- */

/* 2000 requests with distinct values through add_one on grid x block;
 * each is answered exactly once, in order, with v + 1 and its own id. */
static void test_shape(uint32_t block, uint32_t grid) {
  enum { kN = 2000 };
  char what[64];
  snprintf(what, sizeof what, "block %u grid %u", block, grid);
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.block = rk_dim3(block, 1, 1);
  o.grid = rk_dim3(grid, 1, 1);
  rk_actor_t *a = launch(kAddOneSource, "add_one", &o);
  if (!a) {
    printf("  (%s did not launch)\n", what);
    return;
  }
  static int_msg_t reqs[kN];
  static uint64_t ids[kN];
  static bool seen[kN];
  for (int i = 0; i < kN; ++i) {
    reqs[i].v = i * 7 + 3;
    seen[i] = false;
  }
  receiver_t r;
  if (receiver_init(&r, a, kN, sizeof(int_msg_t)) &&
      exchange(a, reqs, sizeof reqs[0], kN, ids, &r)) {
    int wrong = 0, twice = 0, out_of_order = 0;
    for (size_t k = 0; k < r.got; ++k) {
      int_msg_t resp;
      memcpy(&resp, r.payloads + k * sizeof resp, sizeof resp);
      int v = resp.v - 1;
      int i = (v - 3) / 7;
      bool valid = r.statuses[k] == RK_OK && v >= 3 && (v - 3) % 7 == 0 &&
                   i < kN && r.infos[k].correlation_id == ids[i] &&
                   r.infos[k].size == sizeof resp;
      if (!valid) {
        if (wrong++ < 5)
          printf("  %s: response %zu: v %d id %llu status %s\n", what, k,
                 resp.v, (unsigned long long)r.infos[k].correlation_id,
                 rk_status_name(r.statuses[k]));
        continue;
      }
      if (seen[i]) ++twice;
      seen[i] = true;
      if ((size_t)i != k) ++out_of_order;
    }
    int missing = 0;
    for (int i = 0; i < kN; ++i) missing += !seen[i];
    CHECK(wrong == 0 && twice == 0 && missing == 0,
          "%s: %d wrong, %d answered twice, %d never answered", what, wrong,
          twice, missing);
    CHECK(out_of_order == 0, "%s: %d responses out of request order", what,
          out_of_order);
    CHECK(ids_distinct(ids, kN), "%s: correlation ids repeat", what);
  }
  receiver_free(&r);
  rk_actor_stats_t st;
  if (stats_of(a, &st)) {
    CHECK(st.sent == kN && st.processed == kN && st.handler_errors == 0 &&
              st.dropped_sends == 0,
          "%s: sent %llu processed %llu errors %llu dropped %llu", what,
          (unsigned long long)st.sent, (unsigned long long)st.processed,
          (unsigned long long)st.handler_errors,
          (unsigned long long)st.dropped_sends);
    CHECK(st.execution == g_persistent_exec, "%s: execution %s, want %s", what,
          rk_actor_execution_name(st.execution),
          rk_actor_execution_name(g_persistent_exec));
  }
  /* A call still works after the burst. */
  int_msg_t q = {-5}, resp = {0};
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &resp, sizeof resp, kTimeoutNs, NULL));
  CHECK(resp.v == -4, "%s: call(-5) gave %d", what, resp.v);
  terminate_ok(a, what);
  rk_actor_destroy(a);
}

/* A stateful handler on 4 blocks: one message at a time, in order. */
static void test_stateful(uint32_t block, uint32_t grid) {
  enum { kN = 2000 };
  char what[64];
  snprintf(what, sizeof what, "stateful, block %u grid %u", block, grid);
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.block = rk_dim3(block, 1, 1);
  o.grid = rk_dim3(grid, 1, 1);
  rk_actor_t *a = launch(kTagSource, "tag", &o);
  if (!a) return;
  static tag_req_t reqs[kN];
  static uint64_t ids[kN];
  for (uint32_t i = 0; i < kN; ++i) reqs[i] = (tag_req_t){9, i};
  receiver_t r;
  if (receiver_init(&r, a, kN, sizeof(tag_resp_t)) &&
      exchange(a, reqs, sizeof reqs[0], kN, ids, &r)) {
    int bad = 0;
    uint32_t last = 0;
    for (size_t k = 0; k < r.got; ++k) {
      tag_resp_t t;
      memcpy(&t, r.payloads + k * sizeof t, sizeof t);
      last = t.count;
      if (t.producer != 9 || t.seq != k || t.count != k + 1 ||
          r.infos[k].correlation_id != ids[k]) {
        if (bad++ < 5)
          printf("  %s: response %zu: producer %u seq %u count %u\n", what, k,
                 t.producer, t.seq, t.count);
      }
    }
    CHECK(bad == 0, "%s: %d responses out of order or with a wrong count", what,
          bad);
    CHECK(last == kN, "%s: the state's count ended at %u, want %u", what, last,
          (unsigned)kN);
  }
  receiver_free(&r);
  /* The state lives on: one more message sees count N + 1. */
  tag_req_t q = {9, kN};
  tag_resp_t t;
  memset(&t, 0, sizeof t);
  CHECK_OK(rk_actor_call(a, &q, sizeof q, &t, sizeof t, kTimeoutNs, NULL));
  CHECK(t.count == kN + 1, "%s: message N+1 saw count %u", what, t.count);
  terminate_ok(a, what);
  rk_actor_destroy(a);
}

/* ---- Handler errors ----------------------------------------------------- */

static void test_handler_errors(void) {
  enum { kN = 1000 };
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.block = rk_dim3(32, 1, 1);
  o.grid = rk_dim3(4, 1, 1);
  rk_actor_t *a = launch(kDivSource, "checked_div", &o);
  if (!a) return;
  static div_req_t reqs[kN];
  static uint64_t ids[kN];
  int want_errors = 0;
  for (int i = 0; i < kN; ++i) {
    reqs[i].a = i * 3 + 1;
    reqs[i].b = i % 5 == 0 ? 0 : i % 7 + 1;
    want_errors += reqs[i].b == 0;
  }
  receiver_t r;
  if (receiver_init(&r, a, kN, sizeof(int_msg_t)) &&
      exchange(a, reqs, sizeof reqs[0], kN, ids, &r)) {
    int bad = 0;
    for (size_t k = 0; k < r.got; ++k) {
      int_msg_t q;
      memcpy(&q, r.payloads + k * sizeof q, sizeof q);
      const div_req_t *in = &reqs[k];
      bool ok = r.infos[k].correlation_id == ids[k];
      if (in->b == 0)
        ok = ok && r.statuses[k] == RK_ERR_HANDLER &&
             r.infos[k].status == RK_ERR_HANDLER &&
             r.infos[k].handler_code == 7 && q.v == 0;
      else
        ok = ok && r.statuses[k] == RK_OK && r.infos[k].status == RK_OK &&
             r.infos[k].handler_code == 0 && q.v == in->a / in->b;
      if (!ok && bad++ < 5)
        printf("  response %zu (%d / %d): %s, code %d, q %d\n", k, in->a, in->b,
               rk_status_name(r.statuses[k]), r.infos[k].handler_code, q.v);
    }
    CHECK(bad == 0, "%d handler results wrong", bad);
  }
  receiver_free(&r);
  /* Through call: the error and its code reach the caller. */
  div_req_t q = {10, 0};
  int_msg_t resp = {-1};
  rk_actor_message_t info;
  memset(&info, 0, sizeof info);
  CHECK_STATUS(
      rk_actor_call(a, &q, sizeof q, &resp, sizeof resp, kTimeoutNs, &info),
      RK_ERR_HANDLER);
  CHECK_ERROR_HAS("returned 7");
  CHECK(info.status == RK_ERR_HANDLER && info.handler_code == 7,
        "call: status %s code %d", rk_status_name(info.status),
        info.handler_code);
  q.b = 5;
  CHECK_OK(
      rk_actor_call(a, &q, sizeof q, &resp, sizeof resp, kTimeoutNs, &info));
  CHECK(resp.v == 2 && info.handler_code == 0, "10 / 5 gave %d", resp.v);
  rk_actor_stats_t st;
  if (stats_of(a, &st))
    CHECK(st.processed == kN + 2 &&
              st.handler_errors == (uint64_t)want_errors + 1 &&
              st.last_handler_code == 7,
          "processed %llu errors %llu (want %d) last code %d",
          (unsigned long long)st.processed,
          (unsigned long long)st.handler_errors, want_errors + 1,
          st.last_handler_code);
  CHECK(rk_actor_state(a) == RK_ACTOR_ACTIVE, "errors stopped the actor: %s",
        rk_actor_state_name(rk_actor_state(a)));
  terminate_ok(a, "handler errors");
  rk_actor_destroy(a);
}

/* ---- Lifecycle ---------------------------------------------------------- */

/* Checks n slow responses (received in any order of arrival) against the
 * requests: each answered once with its id, v + 1 and the generator's
 * value. */
static void check_slow(const char *what, const slow_req_t *reqs,
                       const uint64_t *ids, size_t n, const slow_resp_t *resps,
                       const rk_actor_message_t *infos) {
  bool *seen = calloc(n, sizeof *seen);
  if (!CHECK(seen != NULL, "out of memory")) return;
  int bad = 0;
  for (size_t k = 0; k < n; ++k) {
    size_t i = 0;
    while (i < n && ids[i] != infos[k].correlation_id) ++i;
    bool ok = i < n && !seen[i] && resps[k].v == reqs[i].v + 1 &&
              resps[k].acc == slow_expected(reqs[i].v, reqs[i].spin);
    if (ok)
      seen[i] = true;
    else if (bad++ < 5)
      printf("  %s: response %zu: id %llu v %d acc %u\n", what, k,
             (unsigned long long)infos[k].correlation_id, resps[k].v,
             resps[k].acc);
  }
  CHECK(bad == 0, "%s: %d responses wrong or repeated", what, bad);
  free(seen);
}

/* Requests queued when the actor is deactivated stay queued (nothing more
 * is processed) and are answered after activation. */
static void test_deactivate_keeps_queue(void) {
  enum { kN = 400 };
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.block = rk_dim3(32, 1, 1);
  o.grid = rk_dim3(4, 1, 1);
  rk_actor_t *a = launch(kSlowSource, "slow_add", &o);
  if (!a) return;
  static slow_req_t reqs[kN];
  static uint64_t ids[kN];
  static slow_resp_t resps[kN];
  static rk_actor_message_t infos[kN];
  int sent = 0;
  for (; sent < kN; ++sent) {
    reqs[sent] = (slow_req_t){sent * 11 + 5, kSlowSpin};
    if (!CHECK_OK(rk_actor_send(a, &reqs[sent], sizeof reqs[sent], kTimeoutNs,
                                &ids[sent])))
      break;
  }
  CHECK_OK(rk_actor_deactivate(a));
  CHECK(rk_actor_state(a) == RK_ACTOR_DEACTIVATED, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  slow_req_t extra = {1, 1};
  CHECK_STATUS(rk_actor_send(a, &extra, sizeof extra, 0, NULL),
               RK_ERR_INVALID_STATE);
  /* Requests in hand finish; then nothing moves. */
  struct timespec settle = {0, 50000000}, hold = {0, 200000000};
  nanosleep(&settle, NULL);
  rk_actor_stats_t st1, st2;
  if (stats_of(a, &st1)) {
    nanosleep(&hold, NULL);
    if (stats_of(a, &st2)) {
      CHECK(st1.processed == st2.processed,
            "a deactivated actor went on processing: %llu then %llu",
            (unsigned long long)st1.processed,
            (unsigned long long)st2.processed);
      CHECK(st2.processed + st2.input_depth == (uint64_t)sent,
            "processed %llu + queued %llu != sent %d",
            (unsigned long long)st2.processed,
            (unsigned long long)st2.input_depth, sent);
      if (st2.processed == (uint64_t)sent)
        printf(
            "  note: all %d requests were answered before deactivate took "
            "effect; nothing stayed queued to check\n",
            sent);
      else
        printf("  %llu of %d requests stayed queued while deactivated\n",
               (unsigned long long)(sent - (int)st2.processed), sent);
    }
  }
  CHECK_OK(rk_actor_activate(a));
  int got = 0;
  for (; got < sent; ++got) {
    if (!CHECK_OK(rk_actor_receive(a, &resps[got], sizeof resps[got],
                                   kTimeoutNs, &infos[got])))
      break;
  }
  if (got == sent)
    check_slow("deactivate/activate", reqs, ids, (size_t)sent, resps, infos);
  slow_resp_t none;
  CHECK_STATUS(rk_actor_receive(a, &none, sizeof none, 0, NULL),
               RK_ERR_QUEUE_EMPTY);
  terminate_ok(a, "deactivate/activate");
  rk_actor_destroy(a);
}

/* terminate with a deadline answers the queued requests first. */
static void test_terminate_drains(void) {
  enum { kN = 200 };
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.block = rk_dim3(128, 1, 1);
  o.grid = rk_dim3(4, 1, 1);
  rk_actor_t *a = launch(kSlowSource, "slow_add", &o);
  if (!a) return;
  static slow_req_t reqs[kN];
  static uint64_t ids[kN];
  static slow_resp_t resps[kN];
  static rk_actor_message_t infos[kN];
  int sent = 0;
  for (; sent < kN; ++sent) {
    reqs[sent] = (slow_req_t){sent * 13 - 50, kSlowSpin};
    if (!CHECK_OK(rk_actor_send(a, &reqs[sent], sizeof reqs[sent], kTimeoutNs,
                                &ids[sent])))
      break;
  }
  rk_actor_stats_t st;
  if (stats_of(a, &st) && st.processed == (uint64_t)sent)
    printf("  note: all requests were answered before terminate\n");
  uint64_t t0 = rk__now_ns();
  CHECK_OK(rk_actor_terminate(a, kTimeoutNs));
  printf("  terminate took %.1f ms\n", (double)(rk__now_ns() - t0) / 1e6);
  CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  if (stats_of(a, &st))
    CHECK(st.processed == (uint64_t)sent,
          "terminate left requests unanswered: %llu of %d processed",
          (unsigned long long)st.processed, sent);
  slow_req_t extra = {1, 1};
  CHECK_STATUS(rk_actor_send(a, &extra, sizeof extra, 0, NULL),
               RK_ERR_INVALID_STATE);
  int got = 0;
  for (; got < sent; ++got)
    if (!CHECK_OK(rk_actor_receive(a, &resps[got], sizeof resps[got],
                                   1000000000ull, &infos[got])))
      break;
  if (got == sent)
    check_slow("terminate", reqs, ids, (size_t)sent, resps, infos);
  rk_actor_destroy(a);
}

/* ---- The context around a resident actor -------------------------------- */

/* A module with add_k, and two buffers for it. */
typedef struct small_kernel {
  rk_module_t *mod;
  rk_function_t *fn;
  rk_devptr_t da, db;
} small_kernel_t;

enum { kSmallN = 1000 };

static bool small_kernel_init(small_kernel_t *k) {
  memset(k, 0, sizeof *k);
  return CHECK_OK(rk_context_compile(g_ctx, kAddKernel, NULL, &k->mod)) &&
         CHECK_OK(rk_module_get_function(k->mod, "add_k", &k->fn)) &&
         CHECK_OK(rk_context_allocate(g_ctx, kSmallN * sizeof(int), &k->da)) &&
         CHECK_OK(rk_context_allocate(g_ctx, kSmallN * sizeof(int), &k->db));
}

static void small_kernel_free(small_kernel_t *k) {
  if (k->da) CHECK_OK(rk_context_free(g_ctx, k->da));
  if (k->db) CHECK_OK(rk_context_free(g_ctx, k->db));
  if (k->mod) CHECK_OK(rk_module_destroy(k->mod));
  memset(k, 0, sizeof *k);
}

/* Runs add_k on kSmallN ints (copy in, launch, synchronize, copy out) and
 * checks b = a + k. */
static void small_kernel_run(const small_kernel_t *k, int add,
                             const char *what) {
  int a[kSmallN], b[kSmallN];
  for (int i = 0; i < kSmallN; ++i) a[i] = i * 5 - 7;
  memset(b, 0, sizeof b);
  if (!CHECK_OK(rk_context_copy_to_device(g_ctx, k->da, a, sizeof a))) return;
  rk_arg_t args[] = {rk_arg_i32(kSmallN), rk_arg_i32(add), rk_arg_ptr(k->da),
                     rk_arg_ptr(k->db)};
  CHECK_OK(rk_function_launch(k->fn, rk_dim3((kSmallN + 127) / 128, 1, 1),
                              rk_dim3(128, 1, 1), 0, NULL, args, 4));
  CHECK_OK(rk_context_synchronize(g_ctx));
  CHECK_OK(rk_context_copy_to_host(g_ctx, b, k->db, sizeof b));
  int bad = 0;
  for (int i = 0; i < kSmallN; ++i) bad += b[i] != a[i] + add;
  CHECK(bad == 0, "%s: %d of %d results wrong", what, bad, (int)kSmallN);
}

/* Compiles add_k, runs it once and destroys it again. */
static void check_small_kernel(const char *what) {
  small_kernel_t k;
  if (small_kernel_init(&k)) small_kernel_run(&k, 1234, what);
  small_kernel_free(&k);
}

/* One call through add_one: in + 1 comes back. */
static void call_add_one(rk_actor_t *a, int v, const char *what) {
  int_msg_t q = {v}, r = {0};
  if (CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r, kTimeoutNs, NULL)))
    CHECK(r.v == v + 1, "%s: call(%d) gave %d", what, v, r.v);
}

/* While an actor is resident, launches, copies, allocations, frees,
 * streams and rk_context_synchronize go on: none of them may wait for the
 * resident kernel, which never finishes on its own. The module is built
 * before the actor starts and destroyed after it stopped, so this case
 * needs nothing of the driver but what an application does between
 * requests. */
static void test_context_beside_actor(void) {
  small_kernel_t k;
  if (!small_kernel_init(&k)) {
    small_kernel_free(&k);
    return;
  }
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.grid = rk_dim3(4, 1, 1);
  o.block = rk_dim3(32, 1, 1);
  rk_actor_t *a = launch(kAddOneSource, "add_one", &o);
  if (!a) {
    small_kernel_free(&k);
    return;
  }
  call_add_one(a, 1, "beside");
  small_kernel_run(&k, 1234, "a launch beside a resident actor");
  rk_devptr_t extra = 0;
  if (CHECK_OK(rk_context_allocate(g_ctx, 1u << 20, &extra)))
    CHECK_OK(rk_context_free(g_ctx, extra));
  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(g_ctx, &st))) {
    int v = 77, back = 0;
    CHECK_OK(rk_stream_copy_to_device(st, k.da, &v, sizeof v));
    CHECK_OK(rk_stream_copy_to_host(st, &back, k.da, sizeof back));
    CHECK_OK(rk_stream_synchronize(st));
    CHECK(back == 77, "a stream copy beside a resident actor read %d", back);
    CHECK_OK(rk_stream_destroy(st));
  }
  CHECK_OK(rk_context_synchronize(g_ctx));
  call_add_one(a, 41, "beside, after the kernel");
  terminate_ok(a, "beside");
  rk_actor_destroy(a);
  small_kernel_free(&k);
}

/* A module built, used and destroyed while an actor is resident (loading
 * and unloading code beside a running kernel). */
static void test_module_beside_actor(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.grid = rk_dim3(2, 1, 1);
  o.block = rk_dim3(32, 1, 1);
  rk_actor_t *a = launch(kAddOneSource, "add_one", &o);
  if (!a) return;
  call_add_one(a, 5, "module beside");
  check_small_kernel("a module built and destroyed beside a resident actor");
  call_add_one(a, 6, "module beside, after the module");
  terminate_ok(a, "module beside");
  rk_actor_destroy(a);
}

/* Two resident actors at once, each answering its own requests; the
 * second is stopped and destroyed while the first stays resident, and the
 * first goes on answering. */
static void test_two_actors(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.grid = rk_dim3(2, 1, 1);
  o.block = rk_dim3(32, 1, 1);
  rk_actor_t *a = launch(kAddOneSource, "add_one", &o);
  if (!a) return;
  rk_actor_t *b = launch(kTagSource, "tag", NULL);
  if (b) {
    for (uint32_t i = 0; i < 50; ++i) {
      tag_req_t tq = {3, i};
      tag_resp_t tr;
      memset(&tr, 0, sizeof tr);
      int_msg_t aq = {(int)i}, ar = {0};
      CHECK_OK(
          rk_actor_call(b, &tq, sizeof tq, &tr, sizeof tr, kTimeoutNs, NULL));
      CHECK_OK(
          rk_actor_call(a, &aq, sizeof aq, &ar, sizeof ar, kTimeoutNs, NULL));
      if (!CHECK(tr.count == i + 1 && ar.v == (int)i + 1,
                 "two actors, step %u: count %u, v %d", i, tr.count, ar.v))
        break;
    }
    terminate_ok(b, "second actor");
    actor_test_watch("two actors: destroying one beside the other", 30);
    rk_actor_destroy(b);
    actor_test_watch("two actors: the first after the second left", 60);
  }
  call_add_one(a, 99, "the first actor after the second left");
  terminate_ok(a, "first actor");
  rk_actor_destroy(a);
}

/* A grid larger than the device can hold at once is refused at launch
 * (a persistent kernel whose blocks wait for each other would hang), the
 * message says why, and the context goes on working. A grid of one block
 * per multiprocessor fits. */
static void test_co_resident(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.grid = rk_dim3(1u << 20, 1, 1);
  o.block = rk_dim3(128, 1, 1);
  rk_actor_t *a = NULL;
  rk_test_clear_error();
  rk_status_t s = rk_actor_launch(g_ctx, kAddOneSource, "add_one", &o, &a);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_LAUNCH,
        "a grid of 2^20 blocks: %s (want INVALID_ARGUMENT or LAUNCH): %s",
        rk_status_name(s), rk_last_error());
  if (s != RK_OK) CHECK_ERROR_HAS("co-resident");
  CHECK(a == NULL, "a refused launch returned an actor");
  if (a) {
    rk_actor_terminate(a, 1000000000ull);
    rk_actor_destroy(a);
  }
  check_small_kernel("after the refused grid");

  rk_actor_options_init(&o);
  o.grid = rk_dim3(g_info.compute_units, 1, 1);
  o.block = rk_dim3(128, 1, 1);
  a = launch(kAddOneSource, "add_one", &o);
  if (!a) {
    printf("  (a grid of %u blocks, one per multiprocessor, was refused)\n",
           g_info.compute_units);
    return;
  }
  for (int i = 0; i < 100; ++i) {
    int_msg_t q = {i}, r = {0};
    if (!CHECK_OK(
            rk_actor_call(a, &q, sizeof q, &r, sizeof r, kTimeoutNs, NULL)) ||
        !CHECK(r.v == i + 1, "grid %u: call(%d) gave %d", g_info.compute_units,
               i, r.v))
      break;
  }
  terminate_ok(a, "one block per multiprocessor");
  rk_actor_destroy(a);
}

/* ---- Traditional mode --------------------------------------------------- */

static void test_traditional(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = RK_ACTOR_TRADITIONAL;
  rk_actor_t *a = launch(kAddOneSource, "add_one", &o);
  if (a) {
    int bad = 0;
    for (int i = 0; i < 300; ++i) {
      int_msg_t q = {i * 3 - 100}, r = {0};
      if (rk_actor_call(a, &q, sizeof q, &r, sizeof r, kTimeoutNs, NULL) !=
              RK_OK ||
          r.v != q.v + 1)
        if (bad++ < 3) printf("  call %d: %d: %s\n", i, r.v, rk_last_error());
    }
    CHECK(bad == 0, "traditional: %d calls wrong", bad);
    enum { kN = 500 };
    static int_msg_t reqs[kN];
    static uint64_t ids[kN];
    for (int i = 0; i < kN; ++i) reqs[i].v = i * 2 + 1;
    receiver_t r;
    if (receiver_init(&r, a, kN, sizeof(int_msg_t)) &&
        exchange(a, reqs, sizeof reqs[0], kN, ids, &r)) {
      bad = 0;
      for (size_t k = 0; k < r.got; ++k) {
        int_msg_t m;
        memcpy(&m, r.payloads + k * sizeof m, sizeof m);
        bad += m.v != reqs[k].v + 1 || r.infos[k].correlation_id != ids[k];
      }
      CHECK(bad == 0, "traditional: %d pipelined answers wrong", bad);
    }
    receiver_free(&r);
    rk_actor_stats_t st;
    if (stats_of(a, &st))
      CHECK(
          st.execution == RK_ACTOR_EXEC_PER_REQUEST && st.processed == 300 + kN,
          "traditional: execution %s, processed %llu",
          rk_actor_execution_name(st.execution),
          (unsigned long long)st.processed);
    terminate_ok(a, "traditional");
    rk_actor_destroy(a);
  }
  /* State across launches, in order. */
  a = launch(kTagSource, "tag", &o);
  if (!a) return;
  for (uint32_t i = 0; i < 200; ++i) {
    tag_req_t q = {4, i};
    tag_resp_t t;
    memset(&t, 0, sizeof t);
    if (!CHECK_OK(
            rk_actor_call(a, &q, sizeof q, &t, sizeof t, kTimeoutNs, NULL)) ||
        !CHECK(t.count == i + 1 && t.seq == i,
               "traditional state: message %u saw count %u", i, t.count))
      break;
  }
  terminate_ok(a, "traditional state");
  rk_actor_destroy(a);
}

/* ---- Driver ------------------------------------------------------------- */

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      if (rk_backend_kind_from_name(argv[++i], &g_kind) != RK_OK ||
          g_kind == RK_BACKEND_AUTO) {
        printf("FAILED: %s is not a backend\n", argv[i]);
        return 1;
      }
    } else {
      printf("usage: actor_cuda_blocks [--backend NAME]\n");
      return 1;
    }
  }
  /* The watchdog runs from the start: opening the driver is watched too. */
  actor_test_watchdog_start();
  actor_test_watch("open", 120);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context_on(g_kind, &be); /* exits 77 if absent */
  CHECK_OK(rk_backend_device_info(be, 0, &g_info));
  const bool resident = (g_info.caps & RK_CAP_PERSISTENT_KERNELS) != 0 &&
                        !getenv("RK_ACTOR_RELAUNCH");
  g_persistent_exec =
      resident ? RK_ACTOR_EXEC_RESIDENT : RK_ACTOR_EXEC_RELAUNCH;
  printf("backend %s: %s, %u compute units; persistent actors: %s\n",
         rk_backend_name(be), g_info.name, g_info.compute_units,
         rk_actor_execution_name(g_persistent_exec));
  if (g_kind == RK_BACKEND_CUDA)
    CHECK(g_persistent_exec == RK_ACTOR_EXEC_RESIDENT,
          "CUDA device %s does not keep actors resident (caps 0x%x)",
          g_info.name, g_info.caps);

  actor_test_watch("first request", 60);
  if (!test_first_request()) {
    /* The context is left as it is: a kernel that never stopped may still
     * use it, and the process's exit ends that kernel. */
    printf(
        "FAILED: the first request through a resident actor was not "
        "answered, or the actor did not stop; the other cases are not run\n");
    return rk_test_finish("actor_cuda_blocks");
  }

  static const uint32_t kBlocks[] = {1, 32, 128, 1024};
  static const uint32_t kGrids[] = {1, 4};
  for (size_t b = 0; b < sizeof kBlocks / sizeof kBlocks[0]; ++b)
    for (size_t g = 0; g < sizeof kGrids / sizeof kGrids[0]; ++g) {
      char name[64];
      snprintf(name, sizeof name, "shape block %u grid %u", kBlocks[b],
               kGrids[g]);
      actor_test_watch(name, 60);
      test_shape(kBlocks[b], kGrids[g]);
    }
  actor_test_watch("stateful block 32 grid 4", 60);
  test_stateful(32, 4);
  actor_test_watch("stateful block 1024 grid 4", 60);
  test_stateful(1024, 4);
  actor_test_watch("handler errors", 60);
  test_handler_errors();
  actor_test_watch("deactivate keeps the queue", 60);
  test_deactivate_keeps_queue();
  actor_test_watch("terminate drains", 60);
  test_terminate_drains();
  if (g_kind == RK_BACKEND_CUDA) {
    actor_test_watch("co-resident grid", 60);
    test_co_resident();
  }
  actor_test_watch("traditional", 60);
  test_traditional();
  /* Last, each its own case: what a resident kernel asks of the driver
   * beside it (work queued and waited for; code loaded and unloaded; a
   * second resident kernel started and stopped). Should one of them wait
   * for the resident kernel, the watchdog names it, after every other
   * case has run. */
  actor_test_watch("context beside a resident actor", 60);
  test_context_beside_actor();
  actor_test_watch("module built beside a resident actor", 60);
  test_module_beside_actor();
  actor_test_watch("two resident actors", 60);
  test_two_actors();
  actor_test_watch("teardown", 60);
  CHECK_OK(rk_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("actor_cuda_blocks");
}
