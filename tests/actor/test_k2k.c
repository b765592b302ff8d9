/* Actors that send to actors (K2K): pipelines, fan-in, fan-out, a full
 * channel, an unconnected port, the wiring errors, causal timestamps
 * across a hop, and a receiver its supervisor restarted; on the CPU backend
 * (resident: direct channels), with --relaunch, on OpenCL and WebGPU
 * (relaunch: host-forwarded), and on CUDA resident (the persistent kernels
 * write and poll their channels) or by relaunch. Every message must be
 * handled exactly once and in order per (sender, receiver) pair. */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor_test_util.h"
#include "base/sys.h"
#include "rk/hlc.h"
#include "rk/supervisor.h"
#include "rk_test.h"

/* A token: which source it came from, its number there, a value each stage
 * adds one to. */
typedef struct {
  uint32_t src, seq;
  int v;
} tok_t;

/* A stage's answer to the host: what its send returned. The sink's answer to
 * a query: how many tokens it saw, how many out of order, their sum. */
typedef struct {
  int r;
  int count, disorder, sum;
} ack_t;

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t src, seq; int v; } tok_t;\n"
    "typedef struct { int r; int count, disorder, sum; } ack_t;\n"
    "typedef struct { int count, disorder, sum; uint32_t last[8]; } sink_t;\n"
    "\n"
    "#define NEXT 0\n"
    "#define SIDE 1\n"
    "\n"
    "/* Adds one and passes the token on; returns what the send said. */\n"
    "RK_HANDLER int stage(const tok_t *in, ack_t *out) {\n"
    "  tok_t t;\n"
    "  t.src = in->src;\n"
    "  t.seq = in->seq;\n"
    "  t.v = in->v + 1;\n"
    "  int r = rk_send(NEXT, &t);\n"
    "  out->r = r;\n"
    "  out->count = 0;\n"
    "  out->disorder = 0;\n"
    "  out->sum = 0;\n"
    "  return r;\n"
    "}\n"
    "\n"
    "/* The same with rk_try_send, to two ports. */\n"
    "RK_HANDLER int split(const tok_t *in, ack_t *out) {\n"
    "  tok_t t;\n"
    "  t.src = in->src;\n"
    "  t.seq = in->seq;\n"
    "  t.v = in->v + 1;\n"
    "  int a = rk_try_send(0, &t);\n"
    "  int b = rk_try_send(SIDE, &t);\n"
    "  out->r = a * 10 + b;\n"
    "  out->count = 0;\n"
    "  out->disorder = 0;\n"
    "  out->sum = 0;\n"
    "  return 0;\n"
    "}\n"
    "\n"
    "/* Counts tokens and checks their order per source; a token from source\n"
    " * 7 is the host asking for the totals. */\n"
    "RK_HANDLER void sink(const tok_t *in, ack_t *out, sink_t *s) {\n"
    "  out->r = 0;\n"
    "  if (in->src != 7u) {\n"
    "    if (in->seq != s->last[in->src] + 1u) s->disorder++;\n"
    "    s->last[in->src] = in->seq;\n"
    "    s->count++;\n"
    "    s->sum += in->v;\n"
    "  }\n"
    "  out->count = s->count;\n"
    "  out->disorder = s->disorder;\n"
    "  out->sum = s->sum;\n"
    "}\n"
    "\n"
    "/* Counts tokens; source 7 asks for the count, source 9 fails (a\n"
    " * fault for its supervisor). */\n"
    "RK_HANDLER int fragile(const tok_t *in, ack_t *out, sink_t *s) {\n"
    "  if (in->src == 9u) return 3;\n"
    "  if (in->src != 7u) s->count++;\n"
    "  out->r = 0;\n"
    "  out->count = s->count;\n"
    "  out->disorder = 0;\n"
    "  out->sum = 0;\n"
    "  return 0;\n"
    "}\n"
    "\n"
    "/* Takes an ack_t: a receiver of the wrong type. */\n"
    "RK_HANDLER void acks(const ack_t *in, ack_t *out) { out->r = in->r; }\n";

static rk_context_t *g_ctx;
/* Resident on CUDA: every link into an actor is a channel of its own. */
static bool g_gpu_channels;

static rk_actor_k2k_stats_t k2k_stats(rk_actor_t *a);
static bool wait_received(rk_actor_t *b, uint64_t n);

static rk_actor_t *launch(const char *handler, uint32_t capacity) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  o.input_capacity = capacity;
  o.output_capacity = capacity;
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, kSource, handler, &o, &a))) exit(1);
  return a;
}

/* The sink's totals (a call the sink answers from its state). */
static ack_t query(rk_actor_t *sink) {
  tok_t q = {7, 0, 0};
  ack_t r;
  memset(&r, 0, sizeof r);
  CHECK_OK(rk_actor_call(sink, &q, sizeof q, &r, sizeof r, RK_TIMEOUT_INFINITE,
                         NULL));
  return r;
}

/* Waits (up to 20 s) until the sink has seen `count` tokens. */
static ack_t wait_count(rk_actor_t *sink, int count) {
  uint64_t until = rk__now_ns() + 20000000000ull;
  ack_t r = query(sink);
  while (r.count < count && rk__now_ns() < until) {
    {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
    r = query(sink);
  }
  return r;
}

/* Sends tokens src/1..n with v = seq to `a` and checks each answer's r. */
static void feed(rk_actor_t *a, uint32_t src, int n, int want_r) {
  for (int i = 1; i <= n; ++i) {
    tok_t t = {src, (uint32_t)i, i};
    CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
  }
  int bad = 0;
  for (int i = 1; i <= n; ++i) {
    ack_t r;
    rk_actor_message_t info;
    rk_status_t s =
        rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, &info);
    if ((s != RK_OK && s != RK_ERR_HANDLER) || r.r != want_r) bad++;
  }
  CHECK(bad == 0, "%d of %d answers were not %d", bad, n, want_r);
}

static void stop(rk_actor_t *a) {
  CHECK_OK(rk_actor_terminate(a, 10000000000ull));
  rk_actor_destroy(a);
}

static void test_pipeline(void) {
  enum { kN = 300 };
  rk_actor_t *a = launch("stage", 1024), *b = launch("stage", 1024);
  rk_actor_t *s = launch("sink", 1024);
  CHECK_OK(rk_actor_connect(a, 0, b));
  CHECK_OK(rk_actor_connect(b, 0, s));
  CHECK_OK(rk_actor_activate(s));
  CHECK_OK(rk_actor_activate(b));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, kN, RK_SEND_QUEUED);
  ack_t r = wait_count(s, kN);
  /* v = seq + 2 after two stages. */
  CHECK(r.count == kN && r.disorder == 0 && r.sum == kN * (kN + 1) / 2 + 2 * kN,
        "pipeline: count %d (want %d), disorder %d, sum %d (want %d)", r.count,
        kN, r.disorder, r.sum, kN * (kN + 1) / 2 + 2 * kN);
  /* b counts a message received after it has passed it on: wait. */
  wait_received(b, kN);
  rk_actor_k2k_stats_t st;
  CHECK_OK(rk_actor_k2k_stats(b, &st));
  CHECK(st.received == kN && st.sent == kN && st.received_errors == 0 &&
            st.refused_full == 0 && st.links_out == 1 && st.senders_in == 1,
        "stage b: received %llu sent %llu errors %llu full %llu",
        (unsigned long long)st.received, (unsigned long long)st.sent,
        (unsigned long long)st.received_errors,
        (unsigned long long)st.refused_full);
  printf("  pipeline of 3: %d tokens, path %s\n", r.count,
         rk_k2k_path_name(st.path));
  stop(a);
  stop(b);
  stop(s);
}

/* Bursts of 1..4 tokens into inboxes of 8 slots: a receiver without
 * ports takes them several at a time, in runs that stop where its ring
 * wraps (at a different place in each round; 15 wraps). The sink checks their
 * order and sum; `fragile` fails every token of source 9, and each failure is
 * counted once. Bursts of at most half the inbox: the last burst's credit
 * may still be on its way back when the next one goes. */
static void test_small_inbox(void) {
  rk_actor_t *a = launch("stage", 64), *s = launch("sink", 8);
  rk_actor_t *b = launch("stage", 64), *f = launch("fragile", 8);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_OK(rk_actor_connect(b, 0, f));
  rk_actor_t *all[] = {s, f, a, b};
  for (int i = 0; i < 4; ++i) CHECK_OK(rk_actor_activate(all[i]));
  int total = 0, fails = 0, bad = 0;
  for (int round = 0; round < 48 && bad == 0; ++round) {
    const int k = 1 + round % 4;
    for (int i = 1; i <= k; ++i) {
      tok_t t = {0, (uint32_t)(total + i), total + i};
      tok_t u = {(total + i) % 3 == 0 ? 9u : 0u, 0, 0};
      CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
      CHECK_OK(rk_actor_send(b, &u, sizeof u, RK_TIMEOUT_INFINITE, NULL));
      fails += u.src == 9u;
    }
    for (int i = 0; i < 2 * k; ++i) {
      ack_t r;
      rk_status_t st = rk_actor_receive(i % 2 ? b : a, &r, sizeof r,
                                        RK_TIMEOUT_INFINITE, NULL);
      if (st != RK_OK || r.r != RK_SEND_QUEUED) bad++;
    }
    total += k;
    if (wait_count(s, total).count != total || !wait_received(f, total)) bad++;
  }
  const ack_t r = query(s);
  const int sum = total * (total + 1) / 2 + total; /* v + 1 from the stage */
  CHECK(bad == 0 && total == 120 && r.count == total && r.disorder == 0 &&
            r.sum == sum,
        "small inbox: %d bad rounds; count %d of %d, disorder %d, sum %d "
        "(want %d)",
        bad, r.count, total, r.disorder, r.sum, sum);
  rk_actor_k2k_stats_t st = k2k_stats(f);
  CHECK(st.received == (uint64_t)total && st.received_errors == (uint64_t)fails,
        "fragile: received %llu of %d, errors %llu (want %d)",
        (unsigned long long)st.received, total,
        (unsigned long long)st.received_errors, fails);
  for (int i = 0; i < 4; ++i) stop(all[3 - i]);
}

/* Ports named by a #define are found by that name; a port given only as
 * a number has none, and a handler without ports names nothing. */
static void test_port_names(void) {
  rk_actor_t *a = launch("stage", 64), *x = launch("split", 64);
  rk_actor_t *s = launch("sink", 64);
  uint32_t p = 99;
  CHECK_OK(rk_actor_port(a, "NEXT", &p));
  CHECK(p == 0, "stage: NEXT is port %u", p);
  p = 99;
  CHECK_OK(rk_actor_port(x, "SIDE", &p));
  CHECK(p == 1, "split: SIDE is port %u", p);
  CHECK_STATUS(rk_actor_port(x, "NEXT", &p), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("no port named 'NEXT'");
  CHECK_ERROR_HAS("SIDE = 1");
  CHECK_STATUS(rk_actor_port(s, "NEXT", &p), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("none is named");
  CHECK_STATUS(rk_actor_port(a, NULL, &p), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_port(a, "NEXT", NULL), RK_ERR_INVALID_ARGUMENT);
  /* The name wires the port. */
  CHECK_OK(rk_actor_port(x, "SIDE", &p));
  CHECK_OK(rk_actor_connect(x, p, s));
  rk_actor_t *all[] = {s, a, x};
  for (int i = 0; i < 3; ++i) stop(all[i]);
}

static void test_fan_in(void) {
  enum { kN = 200, kSenders = 3 };
  rk_actor_t *src[kSenders];
  rk_actor_t *s = launch("sink", 1024);
  for (int i = 0; i < kSenders; ++i) {
    src[i] = launch("stage", 1024);
    CHECK_OK(rk_actor_connect(src[i], 0, s));
  }
  CHECK_OK(rk_actor_activate(s));
  for (int i = 0; i < kSenders; ++i) CHECK_OK(rk_actor_activate(src[i]));
  for (int i = 0; i < kSenders; ++i) feed(src[i], (uint32_t)i, kN, 0);
  ack_t r = wait_count(s, kSenders * kN);
  CHECK(r.count == kSenders * kN && r.disorder == 0 &&
            r.sum == kSenders * (kN * (kN + 1) / 2 + kN),
        "fan-in: count %d, disorder %d, sum %d", r.count, r.disorder, r.sum);
  rk_actor_k2k_stats_t st;
  CHECK_OK(rk_actor_k2k_stats(s, &st));
  CHECK(st.senders_in == kSenders && st.received == (uint64_t)kSenders * kN,
        "fan-in: senders %u, received %llu", st.senders_in,
        (unsigned long long)st.received);
  printf("  fan-in of %d: %d tokens in order per sender\n", kSenders, r.count);
  for (int i = 0; i < kSenders; ++i) stop(src[i]);
  stop(s);
}

static void test_fan_out(void) {
  enum { kN = 200 };
  rk_actor_t *a = launch("split", 1024);
  rk_actor_t *s[3] = {launch("sink", 1024), launch("sink", 1024),
                      launch("sink", 1024)};
  CHECK_OK(rk_actor_connect(a, 0, s[0]));
  CHECK_OK(rk_actor_connect(a, 0, s[1])); /* port 0 to two actors */
  CHECK_OK(rk_actor_connect(a, 1, s[2]));
  for (int i = 0; i < 3; ++i) CHECK_OK(rk_actor_activate(s[i]));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, kN, 0);
  for (int i = 0; i < 3; ++i) {
    ack_t r = wait_count(s[i], kN);
    CHECK(r.count == kN && r.disorder == 0 && r.sum == kN * (kN + 1) / 2 + kN,
          "fan-out sink %d: count %d, disorder %d, sum %d", i, r.count,
          r.disorder, r.sum);
  }
  rk_actor_k2k_stats_t st;
  CHECK_OK(rk_actor_k2k_stats(a, &st));
  CHECK(st.sent == 3u * kN && st.links_out == 3 && st.ports == 2,
        "fan-out: sent %llu links %u ports %u", (unsigned long long)st.sent,
        st.links_out, st.ports);
  printf("  fan-out to 3: each got %d\n", kN);
  stop(a);
  for (int i = 0; i < 3; ++i) stop(s[i]);
}

/* The sink is not active: its inbox (8 slots) fills, then every send is
 * RK_SEND_FULL -- nothing dropped silently, nothing waits. Activated, it
 * gets exactly the 8. */
static void test_full(void) {
  enum { kCap = 8, kN = 20 };
  rk_actor_t *a = launch("stage", 64), *s = launch("sink", kCap);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_OK(rk_actor_activate(a));
  int queued = 0, full = 0, other = 0;
  for (int i = 1; i <= kN; ++i) {
    tok_t t = {0, (uint32_t)i, i};
    ack_t r;
    rk_status_t st =
        rk_actor_call(a, &t, sizeof t, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
    if (st != RK_OK && st != RK_ERR_HANDLER) other++;
    if (r.r == RK_SEND_QUEUED)
      queued++;
    else if (r.r == RK_SEND_FULL)
      full++;
    else
      other++;
  }
  CHECK(queued == kCap && full == kN - kCap && other == 0,
        "full channel: %d queued (want %d), %d full, %d other", queued, kCap,
        full, other);
  rk_actor_k2k_stats_t st;
  CHECK_OK(rk_actor_k2k_stats(a, &st));
  CHECK(st.refused_full == (uint64_t)(kN - kCap) && st.sent == kCap,
        "full channel stats: refused %llu sent %llu",
        (unsigned long long)st.refused_full, (unsigned long long)st.sent);
  CHECK_OK(rk_actor_k2k_stats(s, &st));
  CHECK(st.inbox_depth == kCap && st.inbox_capacity == kCap,
        "inbox depth %llu of %llu", (unsigned long long)st.inbox_depth,
        (unsigned long long)st.inbox_capacity);
  CHECK_OK(rk_actor_activate(s));
  ack_t r = wait_count(s, kCap);
  CHECK(r.count == kCap && r.disorder == 0 &&
            r.sum == kCap * (kCap + 1) / 2 + kCap,
        "after the full channel: count %d, disorder %d, sum %d", r.count,
        r.disorder, r.sum);
  /* Credit came back: sends queue again. */
  tok_t t = {0, kCap + 1, 0};
  ack_t back;
  CHECK_OK(rk_actor_call(a, &t, sizeof t, &back, sizeof back,
                         RK_TIMEOUT_INFINITE, NULL));
  CHECK(back.r == RK_SEND_QUEUED, "after draining: send said %d", back.r);
  printf("  full channel: %d queued, %d refused, then drained\n", queued, full);
  stop(a);
  stop(s);
}

static void test_unconnected_and_errors(void) {
  rk_actor_t *a = launch("stage", 16), *s = launch("sink", 16);
  rk_actor_t *k = launch("acks", 16);
  CHECK_STATUS(rk_actor_connect(a, 1, s), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("never sends to port 1");
  CHECK_STATUS(rk_actor_connect(a, 0, k), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("sends tok_t (12 bytes), but 'acks' takes ack_t");
  CHECK_STATUS(rk_actor_connect(s, 0, a), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("'sink' never sends to port 0");
  CHECK_STATUS(rk_actor_connect(NULL, 0, a), RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_STATUS(rk_actor_connect(a, 0, s), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("already connected");
  /* One link per (sender, receiver): a second port of one sender into the
   * same receiver is refused (two links would not keep the pair's order). */
  rk_actor_t *x = launch("split", 16);
  CHECK_OK(rk_actor_connect(x, 1, s));
  CHECK_STATUS(rk_actor_connect(x, 0, s), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("'split' already sends to 'sink' on port 1");
  stop(x);
  CHECK_OK(rk_actor_activate(s));
  rk_actor_t *b = launch("stage", 16);
  CHECK_STATUS(rk_actor_connect(b, 0, s), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("connect actors before activating them");
  /* b's port is not connected: its send says so. */
  CHECK_OK(rk_actor_activate(b));
  tok_t t = {0, 1, 1};
  ack_t r;
  CHECK_STATUS(
      rk_actor_call(b, &t, sizeof t, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL),
      RK_ERR_HANDLER);
  CHECK(r.r == RK_SEND_UNCONNECTED, "unconnected port: send said %d", r.r);
  rk_actor_k2k_stats_t st;
  CHECK_OK(rk_actor_k2k_stats(b, &st));
  CHECK(st.refused_unconnected == 1 && st.path == RK_K2K_NONE,
        "unconnected: refused %llu, path %s",
        (unsigned long long)st.refused_unconnected, rk_k2k_path_name(st.path));
  /* A sink with one inbox slot cannot take a second sender; a resident
   * CUDA sink gives each link a channel of its own, of that size. */
  rk_actor_t *tiny = launch("sink", 1), *c = launch("stage", 16);
  CHECK_OK(rk_actor_connect(c, 0, tiny));
  if (g_gpu_channels) {
    CHECK_OK(rk_actor_connect(a, 0, tiny));
    CHECK(k2k_stats(tiny).inbox_capacity == 2,
          "two channels of one slot: inbox capacity %llu",
          (unsigned long long)k2k_stats(tiny).inbox_capacity);
  } else {
    CHECK_STATUS(rk_actor_connect(a, 0, tiny), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("too few for 2 senders");
  }
  /* Traditional mode cannot run a handler that sends. */
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = RK_ACTOR_TRADITIONAL;
  rk_actor_t *tr = NULL;
  CHECK_STATUS(rk_actor_launch(g_ctx, kSource, "stage", &o, &tr),
               RK_ERR_UNIMPLEMENTED);
  CHECK_ERROR_HAS("needs persistent mode");
  /* A traditional receiver cannot be wired either. */
  rk_actor_t *trs = NULL;
  CHECK_OK(rk_actor_launch(g_ctx, kSource, "sink", &o, &trs));
  rk_actor_t *d = launch("stage", 16);
  CHECK_STATUS(rk_actor_connect(d, 0, trs), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("traditional mode");
  rk_actor_destroy(trs);
  rk_actor_t *all[] = {a, s, k, b, tiny, c, d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    rk_actor_destroy(all[i]);
  printf("  wiring errors and an unconnected port\n");
}

/* Wiring a running system: a sender deactivated while requests are queued
 * gets a second receiver (fan-out) once the message in hand is done; the
 * new receiver sees the tail of the stream, the old one all of it, each in
 * order and exactly once. A receiver that has run takes a first sender.
 * Refused: an active actor, a new sender into a receiver whose sender is
 * active (its share would change under it), and one whose inbox still
 * holds messages of a removed link. Unwiring: the port's later sends reach the
 * links left, and none left is RK_SEND_UNCONNECTED. Resident CUDA kernels read
 * their wiring once: refused there. */
static void test_wiring_running(void) {
  enum { kN = 1000 };
  rk_actor_t *a = launch("stage", 1024), *s1 = launch("sink", 1024);
  rk_actor_t *s2 = launch("sink", 1024);
  CHECK_OK(rk_actor_connect(a, 0, s1));
  CHECK_OK(rk_actor_activate(s1));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, 5, RK_SEND_QUEUED);
  CHECK_STATUS(rk_actor_connect(a, 0, s2), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("is active");
  /* kN requests queued; deactivated while the worker takes them. */
  for (int i = 1; i <= kN; ++i) {
    tok_t t = {1, (uint32_t)i, i};
    CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
  }
  CHECK_OK(rk_actor_deactivate(a));
  if (g_gpu_channels) {
    CHECK_STATUS(rk_actor_connect(a, 0, s2), RK_ERR_UNIMPLEMENTED);
    CHECK_ERROR_HAS("resident on a GPU");
    CHECK_STATUS(rk_actor_disconnect(a, 0, s1), RK_ERR_UNIMPLEMENTED);
    CHECK_ERROR_HAS("resident on a GPU");
    CHECK_OK(rk_actor_activate(a));
  } else {
    CHECK_OK(rk_actor_connect(a, 0, s2));
    CHECK_OK(rk_actor_activate(s2));
    CHECK_OK(rk_actor_activate(a));
  }
  int bad = 0;
  for (int i = 1; i <= kN; ++i) {
    ack_t r;
    const rk_status_t st =
        rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
    if (st != RK_OK || r.r != RK_SEND_QUEUED) bad++;
  }
  CHECK(bad == 0, "%d of %d answers were not RK_SEND_QUEUED", bad, kN);
  ack_t r1 = wait_count(s1, 5 + kN);
  CHECK(r1.count == 5 + kN && r1.disorder == 0 &&
            r1.sum == 5 * 6 / 2 + 5 + kN * (kN + 1) / 2 + kN,
        "the first receiver: count %d (want %d), disorder %d, sum %d", r1.count,
        5 + kN, r1.disorder, r1.sum);
  if (!g_gpu_channels) {
    /* Tokens handled after the wiring, the stream's last c. */
    const uint64_t c = k2k_stats(a).sent - (uint64_t)(5 + kN);
    ack_t r2 = wait_count(s2, (int)c);
    long want_sum = 0;
    for (long q = kN - (long)c + 1; q <= kN; ++q) want_sum += q + 1;
    /* (c is 0 when the worker took all kN before it saw the
     * deactivation: the new receiver then gets none of them.) */
    CHECK((uint64_t)r2.count == c &&
              r2.disorder == (c && c < (uint64_t)kN ? 1 : 0) &&
              r2.sum == want_sum,
          "the new receiver: %d tokens (the sender sent %llu to it), "
          "disorder %d, sum %d (want %ld)",
          r2.count, (unsigned long long)c, r2.disorder, r2.sum, want_sum);
    printf(
        "  wired while running: the new receiver got the last %llu of "
        "%d\n",
        (unsigned long long)c, kN);
    /* A second sender into s2 changes a's share of its inbox: not while a
     * runs (test_fan_in_running wires one once a is deactivated too). */
    rk_actor_t *b = launch("stage", 1024);
    CHECK_OK(rk_actor_deactivate(s2));
    CHECK_STATUS(rk_actor_connect(b, 0, s2), RK_ERR_INVALID_STATE);
    CHECK_ERROR_HAS("takes messages from 'stage', which is active");
    /* A receiver that has run, with no sender yet, takes a first one. */
    rk_actor_t *s3 = launch("sink", 1024);
    CHECK_OK(rk_actor_activate(s3));
    CHECK(query(s3).count == 0, "s3 has seen tokens");
    CHECK_OK(rk_actor_deactivate(s3));
    CHECK_OK(rk_actor_connect(b, 0, s3));
    CHECK_OK(rk_actor_activate(s3));
    CHECK_OK(rk_actor_activate(b));
    feed(b, 2, 50, RK_SEND_QUEUED);
    ack_t r3 = wait_count(s3, 50);
    CHECK(r3.count == 50 && r3.disorder == 0 && r3.sum == 50 * 51 / 2 + 50,
          "the receiver wired after it ran: count %d, disorder %d, sum %d",
          r3.count, r3.disorder, r3.sum);
    CHECK_OK(rk_actor_activate(s2));
    /* Unwiring: without s1, only s2 gets what a sends next. */
    CHECK_STATUS(rk_actor_disconnect(a, 0, s1), RK_ERR_INVALID_STATE);
    CHECK_ERROR_HAS("deactivate it first");
    CHECK_OK(rk_actor_deactivate(a));
    CHECK_OK(rk_actor_disconnect(a, 0, s1));
    CHECK_STATUS(rk_actor_disconnect(a, 0, s1), RK_ERR_NOT_FOUND);
    CHECK_ERROR_HAS("port 0 of 'stage' is not connected to 'sink'");
    CHECK_STATUS(rk_actor_disconnect(a, 1, s2), RK_ERR_INVALID_ARGUMENT);
    CHECK_OK(rk_actor_activate(a));
    feed(a, 3, 50, RK_SEND_QUEUED);
    const int n2 = (int)c + 50;
    ack_t u = wait_count(s2, n2);
    CHECK(u.count == n2 && query(s1).count == 5 + kN,
          "after unwiring s1: s2 has %d (want %d), s1 %d (want %d)", u.count,
          n2, query(s1).count, 5 + kN);
    /* The last link gone: sends answer RK_SEND_UNCONNECTED. */
    CHECK_OK(rk_actor_deactivate(a));
    CHECK_OK(rk_actor_disconnect(a, 0, s2));
    CHECK_OK(rk_actor_activate(a));
    feed(a, 4, 3, RK_SEND_UNCONNECTED);
    /* Messages a removed link left in an inbox: no new sender until they
     * are taken. */
    CHECK_OK(rk_actor_deactivate(a));
    CHECK_OK(rk_actor_deactivate(s2));
    CHECK_OK(rk_actor_connect(a, 0, s2));
    CHECK_OK(rk_actor_activate(a));
    feed(a, 5, 10, RK_SEND_QUEUED);
    CHECK_OK(rk_actor_deactivate(a));
    CHECK_OK(rk_actor_disconnect(a, 0, s2));
    CHECK_OK(rk_actor_deactivate(b));
    CHECK_STATUS(rk_actor_connect(b, 0, s2), RK_ERR_INVALID_STATE);
    CHECK_ERROR_HAS("'sink' has 10 messages in its inbox");
    CHECK_OK(rk_actor_activate(s2));
    u = wait_count(s2, n2 + 10);
    long sum2 = want_sum;
    for (long q = 1; q <= 50; ++q) sum2 += q + 1;
    for (long q = 1; q <= 10; ++q) sum2 += q + 1;
    CHECK(u.count == n2 + 10 && u.sum == sum2 &&
              u.disorder == (c && c < (uint64_t)kN ? 1 : 0),
          "s2 after the removed link's messages: count %d (want %d), sum %d "
          "(want %ld), disorder %d",
          u.count, n2 + 10, u.sum, sum2, u.disorder);
    CHECK_OK(rk_actor_deactivate(s2));
    CHECK_OK(rk_actor_connect(b, 0, s2));
    CHECK_OK(rk_actor_activate(s2));
    CHECK_OK(rk_actor_activate(b));
    printf("  unwired: the port's sends go to the links left\n");
    stop(b);
    stop(s3);
  }
  stop(a);
  stop(s1);
  stop(s2);
}

/* Fan-in into a receiver that has senders, once all of them are held
 * quiet: a sender that ran, deactivated with requests queued, and its
 * receiver get a second sender; both streams arrive whole, in order,
 * once each. Refused meanwhile: the receiver or a sender of it active
 * (also before the receiver's first activation: a sender already running
 * into it), and messages left in its inbox. A terminated sender need not
 * be held; a destroyed one leaves the receiver's senders. */
static void test_fan_in_running(void) {
  enum { kN = 300 };
  rk_actor_t *a = launch("stage", 1024), *s = launch("sink", 1024);
  rk_actor_t *b = launch("stage", 1024);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_OK(rk_actor_activate(s));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, 20, RK_SEND_QUEUED);
  CHECK_STATUS(rk_actor_connect(b, 0, s), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("'sink' is active");
  CHECK(wait_count(s, 20).count == 20, "s has not seen a's first 20");
  CHECK_OK(rk_actor_deactivate(s));
  CHECK_STATUS(rk_actor_connect(b, 0, s), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("takes messages from 'stage', which is active");
  /* a runs on into the quiet s (its inbox fills), then stops with requests
   * still queued: s's leftover messages refuse the new sender. */
  for (int i = 1; i <= kN; ++i) {
    tok_t t = {1, (uint32_t)i, i};
    CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
  }
  /* Until a message waits in s's inbox (s, deactivated, may still take
   * one that came while it was finishing its last batch). */
  const uint64_t until = rk__now_ns() + 20000000000ull;
  while (k2k_stats(s).inbox_depth == 0 && rk__now_ns() < until) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  CHECK_OK(rk_actor_deactivate(a));
  CHECK_STATUS(rk_actor_connect(b, 0, s), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("in its inbox; a new sender is wired into an empty one");
  /* That refusal held a quiet: what it has sent stays. */
  const uint64_t sent_a = k2k_stats(a).sent;
  CHECK_OK(rk_actor_activate(s));
  CHECK(wait_count(s, (int)sent_a).count == (int)sent_a,
        "s has not taken a's %llu", (unsigned long long)sent_a);
  CHECK_OK(rk_actor_deactivate(s));
  CHECK_OK(rk_actor_connect(b, 0, s));
  CHECK(k2k_stats(s).senders_in == 2, "s has %u senders (want 2)",
        k2k_stats(s).senders_in);
  CHECK_OK(rk_actor_activate(s));
  CHECK_OK(rk_actor_activate(b));
  CHECK_OK(rk_actor_activate(a));
  feed(b, 2, 50, RK_SEND_QUEUED);
  int bad = 0;
  for (int i = 1; i <= kN; ++i) {
    ack_t r;
    const rk_status_t st =
        rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL);
    if (st != RK_OK || r.r != RK_SEND_QUEUED) bad++;
  }
  CHECK(bad == 0, "%d of a's %d answers were not RK_SEND_QUEUED", bad, kN);
  const int total = 20 + kN + 50;
  const ack_t r = wait_count(s, total);
  const int sum = 20 * 21 / 2 + 20 + kN * (kN + 1) / 2 + kN + 50 * 51 / 2 + 50;
  CHECK(r.count == total && r.disorder == 0 && r.sum == sum,
        "fan-in wired while running: count %d (want %d), disorder %d, sum %d "
        "(want %d)",
        r.count, total, r.disorder, r.sum, sum);
  printf(
      "  a second sender wired into a running receiver: %d tokens (%llu "
      "of a's before the wiring)\n",
      r.count, (unsigned long long)sent_a);
  /* Before the receiver's first activation: a sender already running into
   * it has its share fixed too. */
  rk_actor_t *c = launch("stage", 64), *t = launch("sink", 64);
  rk_actor_t *d = launch("stage", 64), *e = launch("stage", 64);
  CHECK_OK(rk_actor_connect(c, 0, t));
  CHECK_OK(rk_actor_activate(c));
  feed(c, 0, 3, RK_SEND_QUEUED);
  CHECK_STATUS(rk_actor_connect(d, 0, t), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("takes messages from 'stage', which is active");
  CHECK_OK(rk_actor_deactivate(c));
  CHECK_STATUS(rk_actor_connect(d, 0, t), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("'sink' has 3 messages in its inbox");
  CHECK_OK(rk_actor_activate(t));
  CHECK(wait_count(t, 3).count == 3, "t has not taken c's 3");
  CHECK_OK(rk_actor_deactivate(t));
  /* A terminated sender sends no more: not held. */
  CHECK_OK(rk_actor_terminate(c, 10000000000ull));
  CHECK_OK(rk_actor_connect(d, 0, t));
  CHECK(k2k_stats(t).senders_in == 2, "t has %u senders (want 2)",
        k2k_stats(t).senders_in);
  rk_actor_destroy(c);
  CHECK(k2k_stats(t).senders_in == 1,
        "t has %u senders after one was destroyed (want 1)",
        k2k_stats(t).senders_in);
  CHECK_OK(rk_actor_connect(e, 0, t));
  CHECK_OK(rk_actor_activate(t));
  CHECK_OK(rk_actor_activate(d));
  CHECK_OK(rk_actor_activate(e));
  feed(d, 2, 20, RK_SEND_QUEUED);
  feed(e, 3, 20, RK_SEND_QUEUED);
  const ack_t rt = wait_count(t, 43);
  CHECK(rt.count == 43 && rt.disorder == 0 &&
            rt.sum == 3 * 4 / 2 + 3 + 2 * (20 * 21 / 2 + 20),
        "t: count %d (want 43), disorder %d, sum %d", rt.count, rt.disorder,
        rt.sum);
  printf("  senders held quiet, terminated and destroyed ones let go\n");
  /* Shares of removed links come back: an inbox of two slots takes two
   * new senders after its first one was unwired. */
  rk_actor_t *tiny = launch("sink", 2), *x = launch("stage", 16);
  rk_actor_t *y = launch("stage", 16), *z = launch("stage", 16);
  CHECK_OK(rk_actor_connect(x, 0, tiny));
  CHECK_OK(rk_actor_activate(tiny));
  CHECK_OK(rk_actor_activate(x));
  feed(x, 0, 2, RK_SEND_QUEUED);
  CHECK(wait_count(tiny, 2).count == 2, "tiny has not taken x's 2");
  CHECK_OK(rk_actor_deactivate(x));
  CHECK_OK(rk_actor_disconnect(x, 0, tiny));
  CHECK_OK(rk_actor_deactivate(tiny));
  CHECK_OK(rk_actor_connect(y, 0, tiny));
  CHECK_OK(rk_actor_connect(z, 0, tiny));
  CHECK_OK(rk_actor_activate(tiny));
  CHECK_OK(rk_actor_activate(y));
  CHECK_OK(rk_actor_activate(z));
  int got_y = 0, got_z = 0;
  for (uint32_t i = 1; i <= 20; ++i) {
    tok_t ty = {2, i, 1}, tz = {3, i, 1};
    ack_t r1, r2;
    const uint64_t before = (uint64_t)query(tiny).count;
    CHECK_OK(rk_actor_call(y, &ty, sizeof ty, &r1, sizeof r1,
                           RK_TIMEOUT_INFINITE, NULL));
    CHECK_OK(rk_actor_call(z, &tz, sizeof tz, &r2, sizeof r2,
                           RK_TIMEOUT_INFINITE, NULL));
    got_y += r1.r == RK_SEND_QUEUED;
    got_z += r2.r == RK_SEND_QUEUED;
    wait_count(tiny, (int)before + (r1.r == RK_SEND_QUEUED) +
                         (r2.r == RK_SEND_QUEUED));
  }
  const ack_t rn = query(tiny);
  CHECK(got_y == 20 && got_z == 20 && rn.count == 42 && rn.disorder == 0,
        "two senders into an inbox of two after an unwiring: %d and %d of 20 "
        "queued, count %d (want 42), disorder %d",
        got_y, got_z, rn.count, rn.disorder);
  printf("  an unwired link's share taken by a new sender\n");
  stop(x);
  stop(y);
  stop(z);
  stop(tiny);
  stop(a);
  stop(b);
  stop(s);
  stop(d);
  stop(e);
  stop(t);
}

/* Wiring into a receiver while another thread destroys its senders: a
 * connect holds every sender of the receiver, and one being destroyed
 * leaves the receiver's senders only when the connect is done with it.
 * Each connect succeeds or is refused with a reason (a sender caught
 * terminating); nothing is used after it is freed (the sanitizer runs
 * check that), and the senders left count exactly. */
enum { kDoomed = 4 };
typedef struct {
  rk_actor_t *s[kDoomed];
  int done; /* atomic */
} doomed_t;

static void *destroy_all(void *arg) {
  doomed_t *d = arg;
  for (int i = 0; i < kDoomed; ++i) rk_actor_destroy(d->s[i]);
  __atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void test_wiring_while_destroying(void) {
  rk_actor_t *t = launch("sink", 64), *x[kDoomed];
  doomed_t d = {{0}, 0};
  for (int i = 0; i < kDoomed; ++i) {
    d.s[i] = launch("stage", 16);
    x[i] = launch("stage", 16);
    CHECK_OK(rk_actor_connect(d.s[i], 0, t));
  }
  pthread_t th;
  if (pthread_create(&th, NULL, destroy_all, &d) != 0) {
    CHECK(false, "pthread_create failed");
    return;
  }
  /* Wiring and unwiring over and over while the senders go. */
  int rounds = 0, refused = 0;
  while (!__atomic_load_n(&d.done, __ATOMIC_ACQUIRE)) {
    rk_actor_t *a = x[rounds % kDoomed];
    const rk_status_t st = rk_actor_connect(a, 0, t);
    if (st == RK_OK) {
      CHECK_OK(rk_actor_disconnect(a, 0, t));
    } else {
      refused++;
      const char *why = rk_last_error();
      CHECK(st == RK_ERR_INVALID_STATE &&
                (strstr(why, "which is terminating") ||
                 strstr(why, "is terminating; deactivate it first")),
            "connect while a sender goes: %s (%s)", rk_status_name(st), why);
    }
    rounds++;
  }
  pthread_join(th, NULL);
  CHECK(k2k_stats(t).senders_in == 0, "t has %u senders after they went",
        k2k_stats(t).senders_in);
  for (int i = 0; i < kDoomed; ++i) CHECK_OK(rk_actor_connect(x[i], 0, t));
  CHECK_OK(rk_actor_activate(t));
  for (int i = 0; i < kDoomed; ++i) {
    CHECK_OK(rk_actor_activate(x[i]));
    feed(x[i], (uint32_t)i, 5, RK_SEND_QUEUED);
  }
  const ack_t r = wait_count(t, 5 * kDoomed);
  CHECK(r.count == 5 * kDoomed && r.disorder == 0, "t: count %d (want %d)",
        r.count, 5 * kDoomed);
  printf(
      "  wired while its senders were destroyed: %d connects, %d "
      "refused\n",
      rounds, refused);
  for (int i = 0; i < kDoomed; ++i) stop(x[i]);
  stop(t);
}

/* A receiver destroyed before its sender: the sender's later sends answer
 * RK_SEND_UNCONNECTED (nothing written to freed memory). */
static void test_receiver_gone(void) {
  rk_actor_t *a = launch("stage", 16), *s = launch("sink", 16);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_OK(rk_actor_activate(s));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, 4, RK_SEND_QUEUED);
  ack_t r = wait_count(s, 4);
  CHECK(r.count == 4, "before: %d", r.count);
  stop(s);
  tok_t t = {0, 5, 5};
  ack_t back;
  CHECK_STATUS(rk_actor_call(a, &t, sizeof t, &back, sizeof back,
                             RK_TIMEOUT_INFINITE, NULL),
               RK_ERR_HANDLER);
  CHECK(back.r == RK_SEND_UNCONNECTED, "after the receiver went: %d", back.r);
  stop(a);
  printf("  receiver destroyed first\n");
}

/* A sender on a CPU context of its own (resident) into a receiver on the
 * test's context: the inbox is host memory, so links across contexts (and
 * backends) work. */
static void test_across_contexts(void) {
  enum { kN = 100 };
  rk_backend_t *cbe = NULL;
  rk_context_t *cctx = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &cbe)) ||
      !CHECK_OK(rk_backend_create_context(cbe, 0, &cctx)))
    return;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  rk_actor_t *a = NULL;
  CHECK_OK(rk_actor_launch(cctx, kSource, "stage", &o, &a));
  rk_actor_t *s = launch("sink", 1024);
  CHECK_OK(rk_actor_connect(a, 0, s));
  CHECK_OK(rk_actor_activate(s));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, kN, RK_SEND_QUEUED);
  ack_t r = wait_count(s, kN);
  CHECK(r.count == kN && r.disorder == 0 && r.sum == kN * (kN + 1) / 2 + kN,
        "across contexts: count %d, disorder %d, sum %d", r.count, r.disorder,
        r.sum);
  printf("  across contexts (cpu -> this backend): %d tokens\n", r.count);
  stop(a);
  stop(s);
  /* And back: a sender here into a sink on the CPU context (from a
   * resident CUDA kernel: host-forwarded). */
  rk_actor_t *b = launch("stage", 64), *cs = NULL;
  o.input_capacity = 16; /* the forwarder waits for the inbox's credit */
  CHECK_OK(rk_actor_launch(cctx, kSource, "sink", &o, &cs));
  if (cs) {
    CHECK_OK(rk_actor_connect(b, 0, cs));
    CHECK_OK(rk_actor_activate(cs));
    CHECK_OK(rk_actor_activate(b));
    feed(b, 0, 12, RK_SEND_QUEUED);
    r = wait_count(cs, 12);
    CHECK(r.count == 12 && r.disorder == 0 && r.sum == 12 * 13 / 2 + 12,
          "back across contexts: count %d, disorder %d, sum %d", r.count,
          r.disorder, r.sum);
    printf("  across contexts (this backend -> cpu): %d tokens, path %s\n",
           r.count, rk_k2k_path_name(k2k_stats(b).path));
    stop(b);
    stop(cs);
  }
  CHECK_OK(rk_context_destroy(cctx));
  CHECK_OK(rk_backend_destroy(cbe));
}

static rk_actor_k2k_stats_t k2k_stats(rk_actor_t *a) {
  rk_actor_k2k_stats_t st;
  memset(&st, 0, sizeof st);
  CHECK_OK(rk_actor_k2k_stats(a, &st));
  return st;
}

/* Waits (up to 20 s) until `b`'s handler has taken `n` inbox messages; it
 * asks b nothing, so the host's clock learns nothing from it. */
static bool wait_received(rk_actor_t *b, uint64_t n) {
  uint64_t until = rk__now_ns() + 20000000000ull;
  while (k2k_stats(b).received < n) {
    if (rk__now_ns() > until) {
      CHECK(false, "the receiver took %llu of %llu messages in 20 s",
            (unsigned long long)k2k_stats(b).received, (unsigned long long)n);
      return false;
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return true;
}

/* The sender's stats count its n-th message (it stores them after the
 * receiver may already have taken it). */
static bool wait_sent(rk_actor_t *a, uint64_t n) {
  uint64_t until = rk__now_ns() + 20000000000ull;
  while (k2k_stats(a).sent < n) {
    if (rk__now_ns() > until) {
      CHECK(false, "the sender counted %llu of %llu messages in 20 s",
            (unsigned long long)k2k_stats(a).sent, (unsigned long long)n);
      return false;
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return true;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Causality across a hop A -> K2K -> B: A's message is later than the
 * request that made A send it and earlier than A's response to it; B,
 * once it took the message, answers every later request after it -- also
 * when A's clock runs 2 s ahead and the host has heard nothing from A. */
static void test_clock(void) {
  rk_actor_t *a = launch("stage", 16), *b = launch("sink", 16);
  CHECK_OK(rk_actor_connect(a, 0, b));
  CHECK_OK(rk_actor_activate(b));
  CHECK_OK(rk_actor_activate(a));

  /* A fresh sender: its clock is behind the host's. */
  const uint64_t before = rk_hlc_peek(rk_hlc_host());
  tok_t t = {0, 1, 1};
  CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
  if (!wait_received(b, 1) || !wait_sent(a, 1)) return;
  rk_actor_k2k_stats_t sa = k2k_stats(a), sb = k2k_stats(b);
  CHECK(sa.last_sent_timestamp > before,
        "A's message (%llu) is later than the request that made A send it "
        "(after %llu)",
        (unsigned long long)sa.last_sent_timestamp, (unsigned long long)before);
  CHECK(sb.last_received_timestamp == sa.last_sent_timestamp,
        "B took the stamp A sent: %llu, %llu",
        (unsigned long long)sb.last_received_timestamp,
        (unsigned long long)sa.last_sent_timestamp);
  ack_t back;
  rk_actor_message_t info;
  CHECK_OK(rk_actor_receive(a, &back, sizeof back, RK_TIMEOUT_INFINITE, &info));
  CHECK(info.timestamp > sa.last_sent_timestamp,
        "A's response (%llu) is later than its message (%llu)",
        (unsigned long long)info.timestamp,
        (unsigned long long)sa.last_sent_timestamp);

  /* A's clock 2 s ahead (a peer or device with a fast clock): only the
   * message can tell B. */
  const uint64_t ahead = rk_hlc_pack(wall_ns() + 2000000000u, 0);
  /* Set while A is inactive. A resident CUDA kernel keeps its clock in
   * device memory and reads the control block's when it starts: loading a
   * module parks resident kernels and starts them again where they left. */
  CHECK_OK(rk_actor_deactivate(a));
  __atomic_store_n(&rk__actor_control(a)->clock, ahead, __ATOMIC_RELAXED);
  rk_module_t *mod = NULL;
  CHECK_OK(rk_context_compile(
      g_ctx,
      "#include <rk/kernel.h>\nRK_KERNEL void nop(int *x) { x[0] = 1; }\n",
      NULL, &mod));
  if (mod) CHECK_OK(rk_module_destroy(mod));
  CHECK_OK(rk_actor_activate(a));
  t.seq = 2;
  CHECK_OK(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL));
  if (!wait_received(b, 2) || !wait_sent(a, 2)) return;
  sa = k2k_stats(a);
  CHECK(sa.last_sent_timestamp > ahead,
        "A's message (%llu) is later than A's clock (%llu)",
        (unsigned long long)sa.last_sent_timestamp, (unsigned long long)ahead);
  /* The control: the host has not seen A's clock, so only B's merge of
   * the message can order B's next answer after it. */
  CHECK(rk_hlc_peek(rk_hlc_host()) < ahead,
        "the host's clock is still behind A's");
  tok_t q = {7, 0, 0};
  CHECK_OK(rk_actor_call(b, &q, sizeof q, &back, sizeof back,
                         RK_TIMEOUT_INFINITE, &info));
  CHECK(back.count == 2, "B counted %d tokens", back.count);
  CHECK(info.timestamp > sa.last_sent_timestamp,
        "B's answer to a later request (%llu) is later than the message it "
        "took before (%llu)",
        (unsigned long long)info.timestamp,
        (unsigned long long)sa.last_sent_timestamp);
  CHECK_OK(rk_actor_receive(a, &back, sizeof back, RK_TIMEOUT_INFINITE, &info));
  CHECK(info.timestamp > sa.last_sent_timestamp,
        "A's second response is later than its message");
  printf("  clock: a message 2 s ahead orders the receiver's next answer\n");
  stop(a);
  stop(b);
}

/* A receiver restarted by its supervisor (fresh state) takes the sender's
 * messages again: rk__actor_restart reopens its inbox. */
static void test_supervised_receiver(void) {
  rk_actor_t *a = launch("stage", 16), *f = launch("fragile", 16);
  CHECK_OK(rk_actor_connect(a, 0, f));
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  so.stop_timeout_ns = 10000000000ull;
  CHECK_OK(rk_actor_supervise(f, &so));
  CHECK_OK(rk_actor_activate(f));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, 3, RK_SEND_QUEUED);
  ack_t r = wait_count(f, 3);
  CHECK(r.count == 3, "before the fault: %d", r.count);
  tok_t bad = {9, 0, 0};
  ack_t back;
  CHECK_STATUS(rk_actor_call(f, &bad, sizeof bad, &back, sizeof back,
                             RK_TIMEOUT_INFINITE, NULL),
               RK_ERR_HANDLER);
  uint64_t until = rk__now_ns() + 10000000000ull;
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  while (rk_actor_stats(f, &st) == RK_OK && st.restarts < 1 &&
         rk__now_ns() < until) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  CHECK(st.restarts == 1, "the supervisor restarted the receiver: %llu",
        (unsigned long long)st.restarts);
  /* Fresh state: the count starts again, from the sender's messages. */
  feed(a, 0, 4, RK_SEND_QUEUED);
  r = wait_count(f, 4);
  rk_actor_k2k_stats_t sa = k2k_stats(a);
  CHECK(r.count == 4 && sa.refused_unconnected == 0,
        "after the restart: count %d (want 4), %llu sends refused", r.count,
        (unsigned long long)sa.refused_unconnected);
  printf("  a restarted receiver takes messages again: %d\n", r.count);
  stop(a);
  stop(f);
}

/* A receiver that FAILS (supervised, no restart allowed): sends to it are
 * refused from then on (RK_SEND_UNCONNECTED), as to one that stopped. */
static void test_failed_receiver(void) {
  rk_actor_t *a = launch("stage", 16), *f = launch("fragile", 16);
  CHECK_OK(rk_actor_connect(a, 0, f));
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  so.stop_timeout_ns = 10000000000ull;
  so.max_restarts = 0;
  CHECK_OK(rk_actor_supervise(f, &so));
  CHECK_OK(rk_actor_activate(f));
  CHECK_OK(rk_actor_activate(a));
  feed(a, 0, 2, RK_SEND_QUEUED);
  ack_t r = wait_count(f, 2);
  CHECK(r.count == 2, "before the fault: %d", r.count);
  tok_t bad = {9, 0, 0};
  ack_t back;
  CHECK_STATUS(rk_actor_call(f, &bad, sizeof bad, &back, sizeof back,
                             RK_TIMEOUT_INFINITE, NULL),
               RK_ERR_HANDLER);
  const uint64_t until = rk__now_ns() + 10000000000ull;
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  while (rk_actor_stats(f, &st) == RK_OK && st.state != RK_ACTOR_FAILED &&
         rk__now_ns() < until) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  CHECK(st.state == RK_ACTOR_FAILED, "the receiver is %s, not failed",
        rk_actor_state_name(st.state));
  feed(a, 0, 3, RK_SEND_UNCONNECTED);
  const rk_actor_k2k_stats_t sa = k2k_stats(a);
  CHECK(sa.refused_unconnected == 3, "%llu sends refused as unconnected",
        (unsigned long long)sa.refused_unconnected);
  printf("  a failed receiver refuses: %llu\n",
         (unsigned long long)sa.refused_unconnected);
  stop(a);
  rk_actor_destroy(f);
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
      printf("usage: actor_k2k [--backend NAME] [--relaunch]\n");
      return 1;
    }
  }
  actor_test_watchdog_start();
  actor_test_watch("open", 120);
  rk_backend_t *be = NULL;
  g_ctx = actor_test_context_on(kind, &be);
  printf("backend %s\n", rk_backend_name(be));
  g_gpu_channels =
      strcmp(rk_backend_name(be), "cuda") == 0 && !getenv("RK_ACTOR_RELAUNCH");
  actor_test_watch("pipeline", 60);
  test_pipeline();
  /* Receivers without ports take runs of messages in place (resident CPU
   * workers) or copy them out (relaunch). */
  if (strcmp(rk_backend_name(be), "cpu") == 0) {
    actor_test_watch("small inbox", 120);
    test_small_inbox();
  }
  actor_test_watch("port names", 60);
  test_port_names();
  actor_test_watch("fan-in", 60);
  test_fan_in();
  actor_test_watch("fan-out", 60);
  test_fan_out();
  actor_test_watch("full channel", 60);
  test_full();
  actor_test_watch("errors", 60);
  test_unconnected_and_errors();
  actor_test_watch("wiring a running system", 60);
  test_wiring_running();
  if (!g_gpu_channels) {
    /* A resident CUDA receiver gives each link a channel of its own, and
     * its kernel reads its wiring once (test_wiring_running). */
    actor_test_watch("fan-in into a running receiver", 60);
    test_fan_in_running();
    actor_test_watch("wiring while senders go", 60);
    test_wiring_while_destroying();
  }
  actor_test_watch("receiver gone", 60);
  test_receiver_gone();
  actor_test_watch("clock", 60);
  test_clock();
  actor_test_watch("supervised receiver", 60);
  test_supervised_receiver();
  actor_test_watch("failed receiver", 60);
  test_failed_receiver();
  actor_test_watch("across contexts", 60);
  test_across_contexts();
  actor_test_watch("done", 60);
  rk_context_destroy(g_ctx);
  rk_backend_destroy(be);
  return rk_test_finish("actor_k2k");
}
