/* bench_k2k - messages between two actors (K2K, rk_send) on the CPU backend
 * (or --backend NAME: e.g. cuda, resident kernels) next to the physical
 * floor of the host, measured side by side in one run.
 *
 *   (a) floor: two threads pinned to two CPUs ping-pong one cache line; the
 *       one-way transfer is half the round trip. On CUDA also the device's
 *       floor: two single-thread kernels pass a counter through one word
 *       of device memory (section a'; RK_BENCH_K2K_DEVICE_FLOOR=1
 *       measures it on another backend whose streams run at once, the
 *       CPU's say).
 *   (a'') bare rings: the same hop without rk's runtime: two threads pinned
 *       as the actors are pass a token through two of rk's rings
 *       (base/ring.h: 64-byte slots with marks, a message header and the
 *       token written per hop, a pause after each look that finds
 *       nothing, as an actor's worker looks). What a hop costs in the
 *       rings alone; a K2K hop over it is rk's own work per hop.
 *   (b) K2K hop: actors A and B, A's port 0 wired to B and B's to A. The
 *       host gives A one token with H hops to go; each handler passes it on
 *       with one hop less. The time until the H-th hop is handled, over H,
 *       is one one-way hop: handler, send, the receiver seeing it. The host
 *       watches the receivers' K2K counters (relaxed loads), not the rings.
 *   (c) K2K throughput: the host sends A requests of 64 messages each; A's
 *       handler sends them to B with rk_try_send (stopping at the first
 *       RK_SEND_FULL), B's handler takes them. Messages per second over
 *       the messages B handled; the FULL answers are counted, not retried.
 *
 * Each pair's two workers get CPUs of their own (rk_actor_options_t cpu:
 * A on the first allowed CPU, B on the second); RK_BENCH_K2K_PLACE=rk
 * leaves the choice to rk (on two CPUs it puts both on the launcher's
 * other CPU) and RK_BENCH_K2K_SCHEDULER=1 to the scheduler. They spin
 * RK_ACTOR_SPIN_US (200 us unless set) before they park.
 *
 * Every hop and message is checked (B's count and A's answers). Method as
 * in bench_actors: an untimed warm-up round, then R rounds in each of
 * which every measurement runs once; medians with p10-p90 over rounds.
 * --json: one object on stdout (the table goes to stderr). The exit status
 * never depends on timing. Targets (docs/benchmarks.md): a hop within 2x of
 * the one-way cache-line transfer (CPU backend); on CUDA, a hop under 1 us.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/ring.h"
#include "base/sys.h"
#include "bench_json.h"
#include "bench_stats.h"
#include "rk/rk.h"

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int left; int n; } tok_t;\n"
    "typedef struct { int sent; } ack_t;\n"
    "RK_HANDLER void hop(const tok_t *in, ack_t *out) {\n"
    "  out->sent = 0;\n"
    "  if (in->left > 0) {\n"
    "    tok_t t;\n"
    "    t.left = in->left - 1;\n"
    "    t.n = 0;\n"
    "    out->sent = rk_send(0, &t) == 0;\n"
    "  }\n"
    "}\n"
    "RK_HANDLER void burst(const tok_t *in, ack_t *out) {\n"
    "  tok_t t;\n"
    "  t.left = 0;\n"
    "  t.n = 0;\n"
    "  int sent = 0;\n"
    "  for (int i = 0; i < in->n; ++i) {\n"
    "    t.n = i;\n"
    "    if (rk_try_send(0, &t) != 0) break;\n"
    "    sent += 1;\n"
    "  }\n"
    "  out->sent = sent;\n"
    "}\n";

typedef struct {
  int left, n;
} tok_t;
typedef struct {
  int sent;
} ack_t;

enum { kBurst = 64, kWindow = 256, kMaxRounds = 101 };

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_k2k: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(1);
}

static void check(rk_status_t s, const char *what) {
  if (s != RK_OK) die("%s: %s: %s", what, rk_status_name(s), rk_last_error());
}

/* ---- (a) The floor: a cache line ping-ponged between two CPUs ----------- */

typedef struct {
  _Alignas(128) uint64_t line; /* atomic */
  _Alignas(128) uint32_t stop; /* atomic */
  int cpu;
} floor_t;

/* The host thread's CPUs at start. Pinning is best effort (macOS has no
 * CPU affinity). */
static int g_all[1024], g_nall;

static void unpin(void) { rk__pin_thread_set(pthread_self(), g_all, g_nall); }

static void pin(int cpu) {
  if (cpu >= 0) rk__pin_thread(pthread_self(), cpu);
}

static void *floor_echo(void *arg) {
  floor_t *f = arg;
  pin(f->cpu);
  uint64_t seen = 0;
  while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
    uint64_t v = __atomic_load_n(&f->line, __ATOMIC_ACQUIRE);
    if (v != seen && (v & 1)) {
      seen = v + 1;
      __atomic_store_n(&f->line, seen, __ATOMIC_RELEASE);
    }
  }
  return NULL;
}

/* ns per one-way transfer over n round trips; the echo thread runs only
 * for this round (it would take a CPU from the actors otherwise). */
static double floor_round(floor_t *f, long n, int host_cpu) {
  pthread_t echo;
  pin(host_cpu);
  __atomic_store_n(&f->stop, 0u, __ATOMIC_RELAXED); /* before the thread */
  if (pthread_create(&echo, NULL, floor_echo, f) != 0)
    die("cannot start the echo thread");
  uint64_t v = __atomic_load_n(&f->line, __ATOMIC_ACQUIRE);
  /* Untimed: until the echo thread answers. */
  __atomic_store_n(&f->line, v + 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&f->line, __ATOMIC_ACQUIRE) != v + 2) {
  }
  v += 2;
  const uint64_t t0 = rkb_now_ns();
  for (long i = 0; i < n; ++i) {
    __atomic_store_n(&f->line, v + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&f->line, __ATOMIC_ACQUIRE) != v + 2) {
    }
    v += 2;
  }
  const double ns = (double)(rkb_now_ns() - t0) / (double)n / 2.0;
  __atomic_store_n(&f->stop, 1u, __ATOMIC_RELEASE);
  pthread_join(echo, NULL);
  unpin();
  return ns;
}

/* ---- (a'') Bare rings: a hop through two of rk's rings ------------------- */

enum { kBareCapacity = 256 };

typedef struct bare_ring {
  rk_abi_ring_t *hdr;
  unsigned char *slots;
} bare_ring_t;

typedef struct {
  bare_ring_t ring[2]; /* [0]: to the echo side, [1]: back */
  int cpu;             /* the echo side's */
  long hops;
} bare_t;

static void *xaligned(size_t n) {
  void *p = aligned_alloc(128, (n + 127) & ~(size_t)127);
  if (!p) die("out of memory");
  memset(p, 0, n);
  return p;
}

static void bare_open(bare_t *b, int cpu) {
  memset(b, 0, sizeof *b);
  b->cpu = cpu;
  const uint32_t slot = rk_abi_slot_size(sizeof(tok_t));
  for (int i = 0; i < 2; ++i) {
    b->ring[i].hdr = xaligned(sizeof(rk_abi_ring_t));
    b->ring[i].slots = xaligned(rk__ring_slot_bytes(kBareCapacity, slot));
  }
}

static void bare_close(bare_t *b) {
  for (int i = 0; i < 2; ++i) {
    free(b->ring[i].hdr);
    free(b->ring[i].slots);
  }
}

/* One side of the exchange: takes tokens from `in`, sends each on with one
 * hop less to `out`, until it sends or takes the last (0). A message is
 * written as K2K writes one: the header's fields, the token, the mark. */
static void bare_side(rk__ring_end_t *in, rk__ring_end_t *out, long first) {
  uint64_t seq = 0;
  if (first >= 0) {
    tok_t t = {(int)first, 0};
    unsigned char *sl = rk__ring_reserve(out);
    const rk_abi_msg_t h = {.correlation_id = ++seq, .size = sizeof t};
    memcpy(sl, &h, sizeof h);
    memcpy(sl + RK_ABI_MSG_HEADER, &t, sizeof t);
    rk__ring_publish(out, 1);
  }
  for (;;) {
    while (!rk__ring_available_upto(in, 1)) rk__cpu_relax();
    const unsigned char *m = rk__ring_peek(in, 0);
    tok_t t;
    memcpy(&t, m + RK_ABI_MSG_HEADER, sizeof t);
    const uint64_t stamp = ((const rk_abi_msg_t *)m)->timestamp;
    rk__ring_release(in, 1);
    if (t.left <= 0) return;
    unsigned char *sl = rk__ring_reserve(out);
    if (!sl) die("bare rings: a ring is full");
    const rk_abi_msg_t h = {
        .correlation_id = ++seq, .timestamp = stamp + 1, .size = sizeof t};
    t.left -= 1;
    memcpy(sl, &h, sizeof h);
    memcpy(sl + RK_ABI_MSG_HEADER, &t, sizeof t);
    rk__ring_publish(out, 1);
    if (t.left == 0) return;
  }
}

static void *bare_echo(void *arg) {
  bare_t *b = arg;
  pin(b->cpu);
  rk__ring_end_t in, out;
  rk__ring_attach(&in, b->ring[0].hdr, b->ring[0].slots, false);
  rk__ring_attach(&out, b->ring[1].hdr, b->ring[1].slots, true);
  bare_side(&in, &out, -1);
  return NULL;
}

/* ns per one-way hop over `hops` (even) hops; the echo thread runs only for
 * this round. */
static double bare_round(bare_t *b, long hops, int host_cpu) {
  const uint32_t slot = rk_abi_slot_size(sizeof(tok_t));
  for (int i = 0; i < 2; ++i) {
    if (rk__ring_init(b->ring[i].hdr, kBareCapacity, slot) != RK_OK)
      die("bare rings: %s", rk_last_error());
    rk__ring_mark_slots(b->ring[i].hdr);
    memset(b->ring[i].slots, 0, rk__ring_slot_bytes(kBareCapacity, slot));
  }
  pin(host_cpu);
  rk__ring_end_t in, out;
  rk__ring_attach(&out, b->ring[0].hdr, b->ring[0].slots, true);
  rk__ring_attach(&in, b->ring[1].hdr, b->ring[1].slots, false);
  pthread_t echo;
  if (pthread_create(&echo, NULL, bare_echo, b) != 0)
    die("cannot start the echo thread");
  /* Tokens hops-1 .. 0, one hop each: the last (0) comes back here. */
  const uint64_t t0 = rkb_now_ns();
  bare_side(&in, &out, hops - 1);
  const double ns = (double)(rkb_now_ns() - t0) / (double)hops;
  pthread_join(echo, NULL);
  unpin();
  return ns;
}

/* ---- (a') On CUDA, the device's floor: two kernels passing a counter -----
 *
 * Two single-thread kernels on two streams, resident at once: one stores k
 * in word 0 and waits for k in word 1, the other waits for k in word 0 and
 * answers it in word 1 (atomics at device scope, through L2), n times. The
 * time of the whole exchange over 2n is one one-way transfer between two
 * SMs: what a K2K hop costs at least. A side that waits 2^22 polls for its
 * partner gives up and sets word 2 (the round then fails, nothing hangs). */
static const char kFloorSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void pingpong(int32_t *w, int32_t role, int32_t n) {\n"
    "  for (int32_t k = 1; k <= n; ++k) {\n"
    "    int32_t spins = 0;\n"
    "    if (role == 0) rk_atomic_exch_i32(&w[0], k);\n"
    "    while (rk_atomic_add_i32(&w[role == 0 ? 1 : 0], 0) != k) {\n"
    "      spins += 1;\n"
    "      if ((spins & 1023) == 0 &&\n"
    "          (spins > (1 << 22) || rk_atomic_add_i32(&w[2], 0) != 0)) {\n"
    "        rk_atomic_exch_i32(&w[2], 1);\n"
    "        return;\n"
    "      }\n"
    "    }\n"
    "    if (role == 1) rk_atomic_exch_i32(&w[1], k);\n"
    "  }\n"
    "}\n";

typedef struct {
  rk_context_t *ctx;
  rk_module_t *mod;
  rk_function_t *fn;
  rk_stream_t *st[2];
  rk_devptr_t w;
} dev_floor_t;

static void dev_floor_open(dev_floor_t *d, rk_context_t *ctx) {
  memset(d, 0, sizeof *d);
  d->ctx = ctx;
  check(rk_context_compile(ctx, kFloorSource, NULL, &d->mod),
        "compiling the floor kernel");
  check(rk_module_get_function(d->mod, "pingpong", &d->fn), "pingpong");
  for (int i = 0; i < 2; ++i)
    check(rk_context_create_stream(ctx, &d->st[i]), "a stream");
  check(rk_context_allocate(ctx, 64, &d->w), "the floor's words");
}

static void dev_floor_close(dev_floor_t *d) {
  for (int i = 0; i < 2; ++i) check(rk_stream_destroy(d->st[i]), "a stream");
  check(rk_context_free(d->ctx, d->w), "the floor's words");
  check(rk_module_destroy(d->mod), "the floor's module");
}

/* ns per one-way transfer over n exchanges. */
static double dev_floor_round(dev_floor_t *d, long n) {
  int32_t words[16] = {0};
  check(rk_context_copy_to_device(d->ctx, d->w, words, sizeof words),
        "clearing the floor's words");
  const uint64_t t0 = rkb_now_ns();
  for (int role = 1; role >= 0; --role) {
    rk_arg_t args[] = {rk_arg_ptr(d->w), rk_arg_i32(role),
                       rk_arg_i32((int32_t)n)};
    check(rk_function_launch(d->fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                             d->st[role], args, 3),
          "launching the floor kernel");
  }
  for (int i = 0; i < 2; ++i)
    check(rk_stream_synchronize(d->st[i]), "the floor kernels");
  const uint64_t t1 = rkb_now_ns();
  check(rk_context_copy_to_host(d->ctx, words, d->w, sizeof words),
        "reading the floor's words");
  if (words[2] != 0 || words[0] != (int32_t)n || words[1] != (int32_t)n)
    die("the floor kernels did not finish their exchange (%d, %d of %ld%s)",
        words[0], words[1], n,
        words[2] ? "; a side gave up waiting for the other" : "");
  return (double)(t1 - t0) / (double)n / 2.0;
}

/* ---- (b), (c) Actors ------------------------------------------------------
 */

static rk_actor_t *launch(rk_context_t *ctx, const char *handler, int cpu) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.cpu = cpu;
  o.auto_activate = false;
  o.input_capacity = 1024;
  o.output_capacity = 1024;
  rk_actor_t *a = NULL;
  check(rk_actor_launch(ctx, kSource, handler, &o, &a), "launching an actor");
  return a;
}

static uint64_t received(rk_actor_t *a) {
  rk_actor_k2k_stats_t st;
  check(rk_actor_k2k_stats(a, &st), "K2K stats");
  return st.received;
}

/* ns per one-way hop over `hops` hops between a and b. The host must not
 * take a CPU from A or B while they pass the token (each of its wake-ups
 * stalls the hop in flight on that CPU by a context switch), so it sleeps
 * through most of the round in one go, for 80% of the time the hops took
 * in the fastest round so far (*expect_ns, updated: a round cannot end
 * before that sleep unless it is 20% faster than any before), and only
 * then looks every 20 us. */
static double hop_round(rk_actor_t *a, rk_actor_t *b, long hops,
                        double *expect_ns) {
  const uint64_t before = received(a) + received(b);
  tok_t t = {(int)hops, 0};
  const uint64_t t0 = rkb_now_ns();
  check(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL), "inject");
  const double first = *expect_ns * 0.8 * (double)hops;
  if (first >= 1e3) {
    struct timespec ts = {(time_t)(first / 1e9), (long)fmod(first, 1e9)};
    nanosleep(&ts, NULL);
  }
  while (received(a) + received(b) - before < (uint64_t)hops) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  const uint64_t t1 = rkb_now_ns();
  ack_t r;
  check(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL),
        "the injection's answer");
  if (r.sent != 1) die("the first hop was not queued (%d)", r.sent);
  const double ns = (double)(t1 - t0) / (double)hops;
  if (*expect_ns == 0 || ns < *expect_ns) *expect_ns = ns;
  return ns;
}

/* Messages per second from a to b, `msgs` asked for; *refused gets the
 * messages A could not queue (RK_SEND_FULL). */
static double tput_round(rk_actor_t *a, rk_actor_t *b, long msgs,
                         uint64_t *refused) {
  const long reqs = (msgs + kBurst - 1) / kBurst;
  const uint64_t before = received(b);
  tok_t t = {0, kBurst};
  const uint64_t t0 = rkb_now_ns();
  /* At most kWindow requests in flight: answers nobody takes would fill
   * A's output ring and then hold up the sends. */
  uint64_t queued = 0;
  long sent = 0, answered = 0;
  while (answered < reqs) {
    while (sent < reqs && sent - answered < kWindow) {
      check(rk_actor_send(a, &t, sizeof t, RK_TIMEOUT_INFINITE, NULL), "burst");
      sent++;
    }
    ack_t r;
    check(rk_actor_receive(a, &r, sizeof r, RK_TIMEOUT_INFINITE, NULL),
          "a burst's answer");
    queued += (uint64_t)r.sent;
    answered++;
  }
  while (received(b) - before < queued) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  const uint64_t t1 = rkb_now_ns();
  *refused += (uint64_t)reqs * kBurst - queued;
  if (received(b) - before != queued)
    die("B handled %llu messages, A queued %llu",
        (unsigned long long)(received(b) - before), (unsigned long long)queued);
  return (double)queued * 1e9 / (double)(t1 - t0);
}

int main(int argc, char **argv) {
  bool json = false, quick = false;
  rk_backend_kind_t kind = RK_BACKEND_CPU;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc &&
             rk_backend_kind_from_name(argv[i + 1], &kind) == RK_OK)
      ++i;
    else {
      fprintf(stderr, "usage: bench_k2k [--backend NAME] [--quick] [--json]\n");
      return 2;
    }
  }
  rkb_json_t j;
  if (json) rkb_json_begin(&j, "k2k");
  const int rounds = quick ? 5 : 11;
  const long floor_n = quick ? 5000 : 20000;
  const long hops = quick ? 5000 : 100000;
  const long msgs = quick ? 20000 : 100000;

  int cpus[2];
  const int ncpus = rk__allowed_cpus(cpus, 2);
  g_nall = rk__allowed_cpus(g_all, 1024);
  floor_t fl;
  memset(&fl, 0, sizeof fl);
  fl.cpu = ncpus >= 2 ? cpus[1] : -1;
  const int host_cpu = ncpus >= 2 ? cpus[0] : -1;
  /* rk pins each worker to a CPU other than its launcher's, which on two
   * CPUs puts both ends of a pair on the same one (docs/benchmarks.md).
   * With RK_BENCH_K2K_SCHEDULER set the actors are launched from a thread
   * pinned to one CPU, so rk leaves the workers to the scheduler; the
   * spin (RK_ACTOR_SPIN_US, 200 us unless set) is then what rk would use
   * with the CPUs the bench has. */
  setenv("RK_ACTOR_SPIN_US",
         getenv("RK_ACTOR_SPIN_US") ? getenv("RK_ACTOR_SPIN_US") : "200", 1);

  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  check(rk_backend_open(kind, &be), "opening the backend");
  check(rk_backend_create_context(be, 0, &ctx), "creating a context");
  const char *place = getenv("RK_BENCH_K2K_PLACE");
  const bool by_scheduler = getenv("RK_BENCH_K2K_SCHEDULER") != NULL;
  const bool by_rk = by_scheduler || (place && strcmp(place, "rk") == 0);
  const int cpu_a = !by_rk && ncpus >= 2 ? cpus[0] : RK_ACTOR_CPU_ANY;
  const int cpu_b = !by_rk && ncpus >= 2 ? cpus[1] : RK_ACTOR_CPU_ANY;
  if (by_scheduler) pin(host_cpu);
  /* On CUDA, the device's floor too (compiled before the actors start:
   * a module load parks resident kernels). */
  const bool dev_floor =
      kind == RK_BACKEND_CUDA || getenv("RK_BENCH_K2K_DEVICE_FLOOR") != NULL;
  dev_floor_t df;
  if (dev_floor) dev_floor_open(&df, ctx);
  rk_actor_t *a = launch(ctx, "hop", cpu_a), *b = launch(ctx, "hop", cpu_b);
  rk_actor_t *ta = launch(ctx, "burst", cpu_a), *tb = launch(ctx, "hop", cpu_b);
  unpin();
  check(rk_actor_connect(a, 0, b), "connect a -> b");
  check(rk_actor_connect(b, 0, a), "connect b -> a");
  check(rk_actor_connect(ta, 0, tb), "connect burst -> sink");
  rk_actor_t *all[] = {a, b, ta, tb};
  for (int i = 0; i < 4; ++i) check(rk_actor_activate(all[i]), "activate");
  rk_actor_k2k_stats_t st;
  check(rk_actor_k2k_stats(a, &st), "K2K stats");
  const char *path = rk_k2k_path_name(st.path);

  double fl_ns[kMaxRounds], hop_ns[kMaxRounds], tput[kMaxRounds];
  double dfl_ns[kMaxRounds], bare_ns[kMaxRounds];
  bare_t bare;
  bare_open(&bare, ncpus >= 2 ? cpus[1] : -1);
  uint64_t refused = 0;
  /* Warm-up, untimed. */
  floor_round(&fl, floor_n / 10, host_cpu);
  bare_round(&bare, hops / 10, host_cpu);
  if (dev_floor) dev_floor_round(&df, floor_n / 10);
  double expect_ns = 0; /* the first round looks every 20 us */
  hop_round(a, b, hops / 10, &expect_ns);
  tput_round(ta, tb, msgs / 10, &refused);
  refused = 0;
  for (int r = 0; r < rounds; ++r) {
    /* Rotate the order, so slow phases of the machine hit all alike. */
    for (int k = 0; k < 3; ++k) {
      switch ((r + k) % 3) {
        case 0:
          fl_ns[r] = floor_round(&fl, floor_n, host_cpu);
          bare_ns[r] = bare_round(&bare, hops, host_cpu);
          if (dev_floor) dfl_ns[r] = dev_floor_round(&df, floor_n);
          break;
        case 1:
          hop_ns[r] = hop_round(a, b, hops, &expect_ns);
          break;
        default:
          tput[r] = tput_round(ta, tb, msgs, &refused);
          break;
      }
    }
  }
  for (int i = 0; i < 4; ++i) {
    check(rk_actor_terminate(all[i], 10000000000ull), "terminate");
    rk_actor_destroy(all[i]);
  }
  if (dev_floor) dev_floor_close(&df);
  bare_close(&bare);
  check(rk_context_destroy(ctx), "releasing the context");
  char backend_name[32];
  snprintf(backend_name, sizeof backend_name, "%s", rk_backend_name(be));
  check(rk_backend_destroy(be), "releasing the backend");

  const rkb_summary_t sf = rkb_summarize(fl_ns, (size_t)rounds);
  const rkb_summary_t sh = rkb_summarize(hop_ns, (size_t)rounds);
  const rkb_summary_t sb = rkb_summarize(bare_ns, (size_t)rounds);
  const rkb_summary_t stp = rkb_summarize(tput, (size_t)rounds);
  const double ratio = sh.median / sf.median;
  const rkb_summary_t sdf =
      dev_floor ? rkb_summarize(dfl_ns, (size_t)rounds) : (rkb_summary_t){0};
  const char *backend = backend_name;
  const char *placement = by_scheduler ? "the scheduler"
                          : by_rk      ? "rk"
                          : ncpus >= 2 ? "one CPU each"
                                       : "nothing pinned";
  printf(
      "bench_k2k: %s backend, %d CPUs allowed, workers placed by %s, %d "
      "rounds, path %s\n",
      backend, ncpus, placement, rounds, path);
  if (kind != RK_BACKEND_CPU)
    printf(
        "  (the floor is the host's; the 2x target is the CPU "
        "backend's)\n");
  printf("  %-34s %10.1f ns  (p10 %.1f, p90 %.1f)\n",
         "cache line, one way (floor)", sf.median, sf.p10, sf.p90);
  printf("  %-34s %10.1f ns  (p10 %.1f, p90 %.1f)\n", "bare rings hop, one way",
         sb.median, sb.p10, sb.p90);
  printf("  %-34s %10.1f ns  (p10 %.1f, p90 %.1f)\n", "K2K hop, one way",
         sh.median, sh.p10, sh.p90);
  if (kind == RK_BACKEND_CPU)
    printf("  %-34s %10.2f x   (rk's own work per hop: %.1f ns)\n",
           "hop / bare rings hop", sh.median / sb.median,
           sh.median - sb.median);
  printf("  %-34s %10.2f x   (target: within 2x)  %s\n", "hop / floor", ratio,
         ratio <= 2.0 ? "met" : "NOT met");
  if (dev_floor) {
    printf("  %-34s %10.1f ns  (p10 %.1f, p90 %.1f)\n",
           "device word, one way (floor)", sdf.median, sdf.p10, sdf.p90);
    printf("  %-34s %10.2f x", "hop / device floor", sh.median / sdf.median);
    if (kind == RK_BACKEND_CUDA)
      printf("   (target: hop under 1000 ns)  %s",
             sh.median < 1000.0 ? "met" : "NOT met");
    printf("\n");
  }
  printf("  %-34s %10.0f /s  (p10 %.0f, p90 %.0f)\n", "K2K messages, A -> B",
         stp.median, stp.p10, stp.p90);
  printf("  %-34s %10llu\n", "sends answered RK_SEND_FULL",
         (unsigned long long)refused);
  if (json) {
    rkb_json_str(&j, "backend", backend);
    rkb_json_str(&j, "path", path);
    rkb_json_str(&j, "placement", placement);
    rkb_json_int(&j, "cpus", ncpus);
    rkb_json_int(&j, "rounds", rounds);
    rkb_json_summary(&j, "floor_one_way_ns", &sf);
    rkb_json_summary(&j, "bare_hop_one_way_ns", &sb);
    rkb_json_summary(&j, "hop_one_way_ns", &sh);
    rkb_json_num(&j, "hop_over_floor", ratio);
    if (kind == RK_BACKEND_CPU)
      rkb_json_num(&j, "hop_over_bare_hop", sh.median / sb.median);
    rkb_json_bool(&j, "target_within_2x_met", ratio <= 2.0);
    if (dev_floor) {
      rkb_json_summary(&j, "device_floor_one_way_ns", &sdf);
      rkb_json_num(&j, "hop_over_device_floor", sh.median / sdf.median);
      if (kind == RK_BACKEND_CUDA)
        rkb_json_bool(&j, "target_under_1us_met", sh.median < 1000.0);
    }
    rkb_json_summary(&j, "messages_per_s", &stp);
    rkb_json_int(&j, "refused_full", (long long)refused);
    rkb_json_finish(&j);
  }
  return 0;
}
