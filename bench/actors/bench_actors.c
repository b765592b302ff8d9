/* bench_actors - persistent actors next to the physical floor and to
 * Concurrency Kit, measured side by side in one run.
 *
 * What is measured (host thread = the main thread; "the other CPU" = a
 * second allowed CPU):
 *   (a) floor: two threads pinned to two CPUs ping-pong one cache line (the
 *       host writes an odd value, the echo thread answers with the next even
 *       one). Round-trip time, and its throughput 1/rtt.
 *   (b) ck_ring: Concurrency Kit's SPSC ring (ck_ring_*_spsc, typed 4-byte
 *       messages). Round trip: the host enqueues a request on one ring, an
 *       echo thread pinned on the other CPU dequeues it and enqueues
 *       value + 1 on a second ring, the host spins for it. Throughput: the
 *       host keeps up to W messages in flight and takes the answers.
 *       The same two over a pair of bare rk rings (base/ring.h, the rings
 *       actors use, with the echo in place of the actor), with and without
 *       the parking protocol's signals: what the rings cost, and what the
 *       actor layer adds on top.
 *   (c) rk persistent actor (CPU backend, handler add_one): round trip =
 *       rk_actor_call; throughput = rk_actor_send / rk_actor_receive with the
 *       same window W.
 *   (d) rk traditional mode (one kernel launch per request): the same two.
 *   (e) rk's multi-producer ring stage (src/base/ring.h, no actor): two
 *       producer threads send 8-byte payloads (64-byte slots) through one
 *       rk__ring_mp_t into a plain ring, one consumer takes them; messages/s
 *       for the CLAIM kind (compare-and-swap slot claims) and the LOCK kind
 *       (a short spin lock). "Streaming": the consumer drains a 1024-slot
 *       ring as the producers fill it. "Producers only": bursts into a ring
 *       that holds the whole burst, drained untimed afterwards: the stage's
 *       own cost without the consumer (which, on 2 CPUs, has to share one
 *       with a producer).
 *
 * Every answer is checked: the echo and handler results (value + 1), that
 * every request got exactly one response (counted, in order, and for rk with
 * the correlation id that rk_actor_send returned), and in (e) that each
 * producer's messages arrive complete and in order.
 *
 * Method: set up everything, run one untimed warm-up round of every
 * measurement, then R rounds; in each round every measurement runs once,
 * the starting one rotating from round to round so that slow phases of the
 * machine hit all of them alike. Before each round the host sleeps a little
 * (so other measurements' threads park) and runs a short untimed burst;
 * then it times `n` operations. The value of a round is its mean (ns per
 * round trip, or messages per second); the report gives the median over
 * rounds with p10-p90, min and max, ratios of medians, and the spread of
 * the same ratio taken round by round.
 *
 * Spinning: the floor, ck_ring and bare-ring code spins without a pause
 * instruction (the best case for them); rk's actors wait however rk waits.
 * rk is called with a 10 s timeout, as a careful caller would
 * (--infinite-timeout: RK_TIMEOUT_INFINITE).
 * With only one allowed CPU nothing is pinned and every spin loop yields;
 * the output says so, and the numbers then measure context switches.
 *
 * The exit status never depends on timing: it is non-zero only when an rk
 * call fails, a result check fails, or the command line is wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef RK_BENCH_HAVE_CK
#include <ck_ring.h>
#else
/* Why the build has no ck_ring part (set by CMakeLists.txt). */
#ifndef RK_BENCH_CK_SKIPPED
#define RK_BENCH_CK_SKIPPED "libck-dev not installed"
#endif
static const char kCkSkipped[] = RK_BENCH_CK_SKIPPED;
#endif

#include "base/platform.h"
#include "base/ring.h"
#include "base/sys.h"
#include "bench_stats.h"
#include "rk/rk.h"

static const char kActorSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

typedef struct req {
  int v;
} req_t;
typedef struct resp {
  int v;
} resp_t;

/* Waits inside the benchmark give up (and fail the run) after this. */
static const uint64_t kTimeoutNs = 10ull * 1000000000ull;
/* Values carried in messages wrap here, so value + 1 never overflows. */
#define VALUE_OF(seq) ((int)((uint64_t)(seq)&0x3fffffffu))

/* ---- Failure handling --------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_actors: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void die_rk(rk_status_t s, const char *what) {
  die("%s failed: %s: %s", what, rk_status_name(s), rk_last_error());
}

#define RK_CHECK(call)                  \
  do {                                  \
    rk_status_t s_ = (call);            \
    if (s_ != RK_OK) die_rk(s_, #call); \
  } while (0)

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) die("out of memory");
  return p;
}

static void *xaligned(size_t bytes) {
  size_t align = RK_ABI_LINE;
  bytes = (bytes + align - 1) / align * align;
  void *p = aligned_alloc(align, bytes);
  if (!p) die("out of memory");
  memset(p, 0, bytes);
  return p;
}

/* ---- CPUs, pinning, spinning -------------------------------------------- */

enum { kMaxCpus = 1024 };
static int g_cpus[kMaxCpus];
static int g_ncpus;
/* One allowed CPU: nothing is pinned and spin loops yield. */
static bool g_one_cpu;

static inline void cpu_pause(void) { rk__cpu_relax(); }

/* One step of a busy-wait in the floor and ck_ring code: nothing at all
 * (the best case) unless everything shares one CPU. */
static inline void spin_step(void) {
  if (g_one_cpu) sched_yield();
}

/* Where the system has CPU affinity (Linux) a refused pin is fatal: the
 * figures would not be what the report says. macOS has none: threads run
 * where the scheduler puts them (the report's CPU lists say "?"). */
static void pin_thread(pthread_t t, int cpu) {
  if (g_one_cpu || cpu < 0 || !RK__LINUX) return;
  if (!rk__pin_thread(t, cpu))
    die("pinning a thread to CPU %d was refused", cpu);
}

static void pin_self(int cpu) { pin_thread(pthread_self(), cpu); }

/* Back to every allowed CPU. */
static void unpin_self(void) {
  rk__pin_thread_set(pthread_self(), g_cpus, g_ncpus);
}

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg,
                         const char *name) {
  int e = pthread_create(t, NULL, fn, arg);
  if (e != 0) die("pthread_create: %s", strerror(e));
#if RK__LINUX
  pthread_setname_np(*t, name);
#else
  (void)name; /* macOS names only the calling thread */
#endif
}

/* "0-1", "0,2,5" style list of CPU ids in increasing order (for the
 * report). */
static void format_cpus(const int *ids, int n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n; ++i) {
    int c = ids[i], e = c;
    while (i + 1 < n && ids[i + 1] == e + 1) e = ids[++i];
    int w = e == c ? snprintf(out + len, cap - len, "%s%d", len ? "," : "", c)
                   : snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "",
                              c, e);
    if (w < 0 || (size_t)w >= cap - len) break;
    len += (size_t)w;
  }
}

/* ---- Threads of this process (to find the actor's worker) --------------- */

enum { kMaxTids = 256 };

/* Linux only (/proc/self/task); 0 threads elsewhere. */
static int list_tids(pid_t *out, int max) {
  if (!RK__LINUX) return 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    out[n++] = (pid_t)atol(e->d_name);
  }
  closedir(d);
  return n;
}

/* The threads that appeared since `before`: their names and CPU masks go
 * to `desc`; returns the CPU of the first one pinned to exactly one CPU,
 * or -1. */
static int describe_new_threads(const pid_t *before, int nbefore, char *desc,
                                size_t cap) {
  pid_t now[kMaxTids];
  int n = list_tids(now, kMaxTids);
  int pinned = -1;
  size_t len = 0;
  desc[0] = '\0';
  for (int i = 0; i < n; ++i) {
    bool old = false;
    for (int j = 0; j < nbefore && !old; ++j) old = now[i] == before[j];
    if (old) continue;
    char path[64], comm[32] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)now[i]);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
      fclose(f);
    }
    char cpus[128] = "?";
#if RK__LINUX
    cpu_set_t set;
    if (sched_getaffinity(now[i], sizeof set, &set) == 0) {
      int ids[CPU_SETSIZE], nids = 0;
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) ids[nids++] = c;
      format_cpus(ids, nids, cpus, sizeof cpus);
      if (nids == 1 && pinned < 0) pinned = ids[0];
    }
#endif
    int w = snprintf(desc + len, cap - len, "%s'%s' on CPUs %s",
                     len ? ", " : "", comm, cpus);
    if (w < 0 || (size_t)w >= cap - len) break;
    len += (size_t)w;
  }
  if (len == 0) snprintf(desc, cap, "no new thread");
  return pinned;
}

/* ---- Options ------------------------------------------------------------ */

typedef struct options {
  long rounds;
  long iters;          /* round trips per round (floor, ck, rk persistent) */
  long msgs;           /* messages per throughput round */
  long window;         /* W: messages in flight in the pipelined measurements */
  long cooldown;       /* ms of sleep before each round */
  unsigned only;       /* G_* groups to run */
  uint64_t rk_timeout; /* timeout_ns passed to rk's send/receive/call */
  bool quick, json;
} options_t;

/* Groups of measurements, for --only. */
enum {
  G_FLOOR = 1u << 0,
  G_CK = 1u << 1,
  G_RK = 1u << 2,
  G_TRADITIONAL = 1u << 3,
  G_MP = 1u << 4,
  G_RING = 1u << 5,
  G_PRODUCERS = 1u << 6,
  G_RK_STREAM = 1u << 7,
  G_RK_BATCH = 1u << 8,
  G_ALL = (1u << 9) - 1,
};
/* Bit g is kGroupNames[g]; "rk-call" is bit 2 alone, and "rk" all three
 * rk groups (call, stream, batch). */
static const char *const kGroupNames[] = {
    "floor", "ck",        "rk-call",   "traditional", "mp",
    "ring",  "producers", "rk-stream", "rk-batch"};

/* The rk actors: bench_t rk[]. */
enum { kRkSides = 3 };
static const char *const kRkSideNames[kRkSides] = {"persistent", "traditional",
                                                   "producers"};
static const char *const kRkSideLabels[kRkSides] = {
    "persistent", "traditional", "persistent (producer rounds)"};

/* "rk,mp" -> G_RK | G_MP; 0 when a name is unknown. */
static unsigned parse_groups(const char *text) {
  unsigned mask = 0;
  const char *p = text;
  while (*p) {
    size_t len = strcspn(p, ",");
    unsigned bit = 0;
    if (len == 2 && !strncmp(p, "rk", 2)) bit = G_RK | G_RK_STREAM | G_RK_BATCH;
    for (unsigned g = 0; g < sizeof kGroupNames / sizeof kGroupNames[0]; ++g)
      if (strlen(kGroupNames[g]) == len && !strncmp(p, kGroupNames[g], len))
        bit = 1u << g;
    if (!bit) return 0;
    mask |= bit;
    p += len;
    if (*p == ',') ++p;
  }
  return mask;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: bench_actors [--quick] [--json] [--rounds R] [--iters N] "
      "[--msgs N]\n"
      "                    [--window W] [--cooldown-ms MS] [--only "
      "LIST]\n"
      "  --rounds R       timed rounds of every measurement (30; quick: "
      "3)\n"
      "  --iters N        round trips per round (20000; quick: 200); rk "
      "traditional\n"
      "                   runs N/5\n"
      "  --msgs N         messages per throughput round (100000; quick: "
      "2000);\n"
      "                   rk traditional runs N/20, each multi-producer "
      "mode 2N\n"
      "  --window W       messages in flight when pipelined (256, at most "
      "65536)\n"
      "  --cooldown-ms MS sleep before each round so that other threads "
      "park (2)\n"
      "  --only LIST      run only these groups, comma-separated: floor, "
      "ck, ring, rk\n"
      "                   (or one of rk-call, rk-stream, rk-batch), "
      "traditional, mp,\n"
      "                   producers (for profiling one part)\n"
      "  --infinite-timeout  call rk with RK_TIMEOUT_INFINITE (default: "
      "a 10 s timeout,\n"
      "                   as a careful caller would; a hang then hangs "
      "the benchmark)\n"
      "  --quick          a short smoke run (numbers are rough)\n"
      "  --json           print one JSON object on stdout (the table goes to "
      "stderr)\n"
      "Environment: RK_ACTOR_SPIN_US (how long an actor's worker and a "
      "waiting caller\nspin before parking), RK_CPU_THREADS, "
      "RK_CPU_SPIN_US (the pool that runs\ntraditional launches), "
      "RK_CACHE_DIR.\n"
      "The exit status is non-zero only if an rk call or a result check "
      "fails,\nnever because of timing.\n");
}

static int parse_options(int argc, char **argv, options_t *o) {
  o->rounds = 30;
  o->iters = 20000;
  o->msgs = 100000;
  o->window = 256;
  o->cooldown = 2;
  o->only = G_ALL;
  o->rk_timeout = kTimeoutNs;
  o->quick = o->json = false;
  bool set_rounds = false, set_iters = false, set_msgs = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    long *target = NULL, lo = 1, hi = 100000000;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--quick")) {
      o->quick = true;
      continue;
    } else if (!strcmp(a, "--json")) {
      o->json = true;
      continue;
    } else if (!strcmp(a, "--infinite-timeout")) {
      o->rk_timeout = RK_TIMEOUT_INFINITE;
      continue;
    } else if (!strcmp(a, "--only")) {
      if (i + 1 >= argc || !(o->only = parse_groups(argv[++i]))) {
        fprintf(stderr,
                "bench_actors: --only takes a comma-separated list of "
                "floor, ck, ring, rk, traditional, mp, producers\n");
        return -1;
      }
      continue;
    } else if (!strcmp(a, "--rounds")) {
      target = &o->rounds;
      set_rounds = true;
      hi = 100000;
    } else if (!strcmp(a, "--iters")) {
      target = &o->iters;
      set_iters = true;
    } else if (!strcmp(a, "--msgs")) {
      target = &o->msgs;
      set_msgs = true;
    } else if (!strcmp(a, "--window")) {
      target = &o->window;
      hi = 65536;
    } else if (!strcmp(a, "--cooldown-ms")) {
      target = &o->cooldown;
      lo = 0;
      hi = 10000;
    } else {
      fprintf(stderr, "bench_actors: unknown option '%s'\n", a);
      usage(stderr);
      return -1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "bench_actors: %s needs a value\n", a);
      return -1;
    }
    if (rkb_parse_long(argv[++i], lo, hi, target) != 0) {
      fprintf(stderr, "bench_actors: %s needs a number from %ld to %ld\n", a,
              lo, hi);
      return -1;
    }
  }
  if (o->quick) {
    if (!set_rounds) o->rounds = 3;
    if (!set_iters) o->iters = 200;
    if (!set_msgs) o->msgs = 2000;
  }
  return 0;
}

/* The smallest power of two >= n. */
static uint32_t pow2_at_least(uint64_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/* ---- (a) and (b): the echo thread --------------------------------------- */

typedef enum echo_cmd {
  ECHO_NONE = 0,
  ECHO_FLOOR,      /* answer odd values of `line` with the next even one */
  ECHO_CK,         /* answer ck_ring requests with value + 1 */
  ECHO_RING,       /* answer requests on the bare rk rings with value + 1 */
  ECHO_RING_NOSIG, /* the same without the parking protocol's signals */
  ECHO_QUIT,
} echo_cmd_t;

#ifdef RK_BENCH_HAVE_CK
CK_RING_PROTOTYPE(msg, req)
#endif

typedef struct echo {
  pthread_t thread;
  int cpu;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  echo_cmd_t cmd; /* under mu */
  bool busy;      /* under mu: running a command */
  /* The ping-pong cache line: written by both, nothing else on it. */
  _Alignas(RK_ABI_LINE) uint64_t line;
  /* Host -> echo: leave the current command; echo -> host: spinning now. */
  _Alignas(RK_ABI_LINE) uint32_t stop;
  _Alignas(RK_ABI_LINE) uint32_t ready;
  /* The bare rk rings (base/ring.h): requests, responses. */
  rk_abi_ring_t *rk_req, *rk_resp;
  void *rk_req_slots, *rk_resp_slots;
  rk__ring_end_t host_out, host_in; /* the host's ends */
#ifdef RK_BENCH_HAVE_CK
  _Alignas(RK_ABI_LINE) ck_ring_t req_ring;
  _Alignas(RK_ABI_LINE) ck_ring_t resp_ring;
  struct req *req_buf, *resp_buf;
#endif
} echo_t;

static void echo_floor(echo_t *e) {
  for (;;) {
    uint64_t v = __atomic_load_n(&e->line, __ATOMIC_ACQUIRE);
    if (v & 1u) {
      __atomic_store_n(&e->line, v + 1, __ATOMIC_RELEASE);
    } else if (__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
      return;
    } else {
      spin_step();
    }
  }
}

#ifdef RK_BENCH_HAVE_CK
static void echo_ck(echo_t *e) {
  for (;;) {
    struct req m;
    if (ck_ring_dequeue_spsc_msg(&e->req_ring, e->req_buf, &m)) {
      m.v += 1;
      while (!ck_ring_enqueue_spsc_msg(&e->resp_ring, e->resp_buf, &m))
        spin_step();
    } else if (__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
      return;
    } else {
      spin_step();
    }
  }
}
#endif

/* The echo side of the bare rk rings: one message at a time, with the
 * parking protocol's signals (a full fence each) as an actor's worker does,
 * without its batching - or, to show what they cost, without them (then
 * nobody may ever park on these rings, and nobody does). */
static void echo_ring(echo_t *e, bool signal) {
  rk__ring_end_t in, out;
  rk__ring_attach(&in, e->rk_req, e->rk_req_slots, false);
  rk__ring_attach(&out, e->rk_resp, e->rk_resp_slots, true);
  for (;;) {
    const unsigned char *m = rk__ring_peek(&in, 0);
    if (!m) {
      if (__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) return;
      spin_step();
      continue;
    }
    unsigned char *o;
    while (!(o = rk__ring_reserve(&out))) spin_step();
    int v;
    memcpy(&v, m + RK_ABI_MSG_HEADER, sizeof v);
    ++v;
    memcpy(o + RK_ABI_MSG_HEADER, &v, sizeof v);
    rk__ring_publish(&out, 1);
    if (signal) rk__ring_signal_data(out.hdr);
    rk__ring_release(&in, 1);
    if (signal) rk__ring_signal_space(in.hdr);
  }
}

static void *echo_main(void *arg) {
  echo_t *e = arg;
  pin_self(e->cpu);
  for (;;) {
    pthread_mutex_lock(&e->mu);
    while (e->cmd == ECHO_NONE) pthread_cond_wait(&e->cv, &e->mu);
    echo_cmd_t cmd = e->cmd;
    e->cmd = ECHO_NONE;
    pthread_mutex_unlock(&e->mu);
    if (cmd == ECHO_QUIT) return NULL;
    __atomic_store_n(&e->ready, 1u, __ATOMIC_RELEASE);
    if (cmd == ECHO_FLOOR) echo_floor(e);
    if (cmd == ECHO_RING || cmd == ECHO_RING_NOSIG)
      echo_ring(e, cmd == ECHO_RING);
#ifdef RK_BENCH_HAVE_CK
    if (cmd == ECHO_CK) echo_ck(e);
#endif
    __atomic_store_n(&e->ready, 0u, __ATOMIC_RELAXED);
    pthread_mutex_lock(&e->mu);
    e->busy = false;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
  }
}

/* Starts `cmd` on the echo thread and returns once it spins. */
static void echo_begin(echo_t *e, echo_cmd_t cmd) {
  __atomic_store_n(&e->stop, 0u, __ATOMIC_RELAXED);
  pthread_mutex_lock(&e->mu);
  e->cmd = cmd;
  e->busy = true;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  uint64_t deadline = rkb_now_ns() + kTimeoutNs;
  while (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE)) {
    if (rkb_now_ns() > deadline) die("the echo thread did not start");
    sched_yield();
  }
}

/* Stops the current command and waits until the echo thread sleeps. */
static void echo_end(echo_t *e) {
  __atomic_store_n(&e->stop, 1u, __ATOMIC_RELAXED);
  pthread_mutex_lock(&e->mu);
  while (e->busy) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
}

static void echo_init(echo_t *e, int cpu, uint32_t ring_size) {
  memset(e, 0, sizeof *e);
  e->cpu = cpu;
  const uint32_t slot = rk_abi_slot_size(sizeof(req_t));
  e->rk_req = xaligned(sizeof *e->rk_req);
  e->rk_resp = xaligned(sizeof *e->rk_resp);
  e->rk_req_slots = xaligned(rk__ring_slot_bytes(ring_size, slot));
  e->rk_resp_slots = xaligned(rk__ring_slot_bytes(ring_size, slot));
  RK_CHECK(rk__ring_init(e->rk_req, ring_size, slot));
  RK_CHECK(rk__ring_init(e->rk_resp, ring_size, slot));
  /* Slot marks, as an actor's rings on the CPU backend have them. */
  rk__ring_mark_slots(e->rk_req);
  rk__ring_mark_slots(e->rk_resp);
  rk__ring_attach(&e->host_out, e->rk_req, e->rk_req_slots, true);
  rk__ring_attach(&e->host_in, e->rk_resp, e->rk_resp_slots, false);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
#ifdef RK_BENCH_HAVE_CK
  ck_ring_init(&e->req_ring, ring_size);
  ck_ring_init(&e->resp_ring, ring_size);
  e->req_buf = xaligned(ring_size * sizeof *e->req_buf);
  e->resp_buf = xaligned(ring_size * sizeof *e->resp_buf);
#else
  (void)ring_size;
#endif
  start_thread(&e->thread, echo_main, e, "rkb-echo");
}

static void echo_destroy(echo_t *e) {
  pthread_mutex_lock(&e->mu);
  e->cmd = ECHO_QUIT;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  pthread_join(e->thread, NULL);
  free(e->rk_req);
  free(e->rk_resp);
  free(e->rk_req_slots);
  free(e->rk_resp_slots);
#ifdef RK_BENCH_HAVE_CK
  free(e->req_buf);
  free(e->resp_buf);
#endif
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
}

/* (a) n round trips on the cache line; returns the elapsed ns. */
static uint64_t floor_round(echo_t *e, long n) {
  uint64_t v = __atomic_load_n(&e->line, __ATOMIC_ACQUIRE);
  if (v & 1u)
    die("floor: the line is odd between rounds (%llu)", (unsigned long long)v);
  uint64_t t0 = rkb_now_ns();
  for (long i = 0; i < n; ++i) {
    __atomic_store_n(&e->line, v + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&e->line, __ATOMIC_ACQUIRE) != v + 2) spin_step();
    v += 2;
  }
  uint64_t t1 = rkb_now_ns();
  return t1 - t0;
}

/* Host side of the bare rk rings: send one request. */
static void ring_send(echo_t *e, int v, bool signal) {
  unsigned char *s;
  while (!(s = rk__ring_reserve(&e->host_out))) spin_step();
  memcpy(s + RK_ABI_MSG_HEADER, &v, sizeof v);
  rk__ring_publish(&e->host_out, 1);
  if (signal) rk__ring_signal_data(e->host_out.hdr);
}

/* Host side of the bare rk rings: wait for the next answer and take it. */
static int ring_receive(echo_t *e, bool signal) {
  const unsigned char *m;
  while (!(m = rk__ring_peek(&e->host_in, 0))) spin_step();
  int v;
  memcpy(&v, m + RK_ABI_MSG_HEADER, sizeof v);
  rk__ring_release(&e->host_in, 1);
  if (signal) rk__ring_signal_space(e->host_in.hdr);
  return v;
}

/* (b) n round trips through the two bare rk rings, each answer checked. */
static uint64_t ring_rtt_round(echo_t *e, long n, bool signal) {
  uint64_t t0 = rkb_now_ns();
  for (long i = 0; i < n; ++i) {
    ring_send(e, VALUE_OF(i), signal);
    int r = ring_receive(e, signal);
    if (r != VALUE_OF(i) + 1)
      die("rk rings: sent %d, got back %d", VALUE_OF(i), r);
  }
  return rkb_now_ns() - t0;
}

/* (b) n messages through the bare rk rings with up to w in flight. */
static uint64_t ring_tput_round(echo_t *e, long n, long w, bool signal) {
  long sent = 0, got = 0;
  uint64_t t0 = rkb_now_ns();
  while (got < n) {
    while (sent < n && sent - got < w) ring_send(e, VALUE_OF(sent++), signal);
    int r = ring_receive(e, signal);
    if (r != VALUE_OF(got) + 1)
      die("rk rings: answer %ld is %d, expected %d", got, r, VALUE_OF(got) + 1);
    ++got;
  }
  return rkb_now_ns() - t0;
}

#ifdef RK_BENCH_HAVE_CK
/* (b) n round trips through the two ck_rings, each answer checked. */
static uint64_t ck_rtt_round(echo_t *e, long n) {
  uint64_t t0 = rkb_now_ns();
  for (long i = 0; i < n; ++i) {
    struct req q = {VALUE_OF(i)}, r;
    while (!ck_ring_enqueue_spsc_msg(&e->req_ring, e->req_buf, &q)) spin_step();
    while (!ck_ring_dequeue_spsc_msg(&e->resp_ring, e->resp_buf, &r))
      spin_step();
    if (r.v != q.v + 1) die("ck_ring: sent %d, got back %d", q.v, r.v);
  }
  return rkb_now_ns() - t0;
}

/* (b) n messages with up to w in flight; every answer counted and checked
 * (one echo thread and FIFO rings: answers come back in order). */
static uint64_t ck_tput_round(echo_t *e, long n, long w) {
  long sent = 0, got = 0;
  uint64_t t0 = rkb_now_ns();
  while (got < n) {
    while (sent < n && sent - got < w) {
      struct req q = {VALUE_OF(sent)};
      if (!ck_ring_enqueue_spsc_msg(&e->req_ring, e->req_buf, &q)) break;
      ++sent;
    }
    struct req r;
    while (!ck_ring_dequeue_spsc_msg(&e->resp_ring, e->resp_buf, &r))
      spin_step();
    if (r.v != VALUE_OF(got) + 1)
      die("ck_ring: answer %ld is %d, expected %d", got, r.v,
          VALUE_OF(got) + 1);
    ++got;
  }
  return rkb_now_ns() - t0;
}
#endif

/* ---- (c) and (d): rk actors --------------------------------------------- */

typedef struct rk_actor_side {
  rk_actor_t *actor;
  rk_actor_mode_t mode;
  int host_cpu;      /* where the host thread runs for this actor */
  int worker_cpu;    /* the actor's worker's CPU, -1: none or not pinned */
  char threads[512]; /* the threads the launch started */
  /* Correlation ids in flight, by message number & cids_mask (a power of
   * two at least the window: no division per message in the timed loops,
   * where ck_ring's loop has none either). */
  uint64_t *cids;
  uint64_t cids_mask;
  uint64_t next_value;
  uint64_t timeout; /* for send, receive and call */
} rk_actor_side_t;

static uint64_t rk_rtt_round(rk_actor_side_t *s, long n) {
  uint64_t t0 = rkb_now_ns();
  for (long i = 0; i < n; ++i) {
    req_t q = {VALUE_OF(s->next_value++)};
    resp_t r = {-1};
    rk_actor_message_t info;
    rk_status_t st =
        rk_actor_call(s->actor, &q, sizeof q, &r, sizeof r, s->timeout, &info);
    if (st != RK_OK) die_rk(st, "rk_actor_call");
    if (r.v != q.v + 1 || info.size != sizeof r || info.status != RK_OK)
      die("rk_actor_call (%s): sent %d, got %d (size %zu, status %s)",
          rk_actor_mode_name(s->mode), q.v, r.v, info.size,
          rk_status_name(info.status));
  }
  return rkb_now_ns() - t0;
}

/* n messages with up to w in flight: refill the window, then receive one
 * (waiting for it). rk_actor_receive hands out the oldest response, so
 * response k must carry request k's correlation id and value + 1. */
static uint64_t rk_tput_round(rk_actor_side_t *s, long n, long w) {
  long sent = 0, got = 0;
  uint64_t base = s->next_value;
  uint64_t t0 = rkb_now_ns();
  while (got < n) {
    while (sent < n && sent - got < w) {
      req_t q = {VALUE_OF(base + (uint64_t)sent)};
      uint64_t cid = 0;
      rk_status_t st = rk_actor_send(s->actor, &q, sizeof q, s->timeout, &cid);
      if (st != RK_OK) die_rk(st, "rk_actor_send");
      s->cids[(uint64_t)sent & s->cids_mask] = cid;
      ++sent;
    }
    resp_t r = {-1};
    rk_actor_message_t info;
    rk_status_t st =
        rk_actor_receive(s->actor, &r, sizeof r, s->timeout, &info);
    if (st != RK_OK) die_rk(st, "rk_actor_receive");
    int want = VALUE_OF(base + (uint64_t)got) + 1;
    if (r.v != want ||
        info.correlation_id != s->cids[(uint64_t)got & s->cids_mask] ||
        info.size != sizeof r || info.status != RK_OK)
      die("rk_actor_receive (%s): response %ld has value %d, correlation id "
          "%llu (expected %d, id %llu)",
          rk_actor_mode_name(s->mode), got, r.v,
          (unsigned long long)info.correlation_id, want,
          (unsigned long long)s->cids[(uint64_t)got & s->cids_mask]);
    ++got;
  }
  uint64_t dt = rkb_now_ns() - t0;
  s->next_value = base + (uint64_t)n;
  return dt;
}

/* The same with rk_actor_send_batch / rk_actor_receive_batch: batches of
 * up to kBatch requests while fewer than w are in flight, then whatever
 * responses are there (up to kBatch, waiting for the first). */
enum { kBatch = 64 };

static uint64_t rk_batch_round(rk_actor_side_t *s, long n, long w, bool lend) {
  long sent = 0, got = 0;
  uint64_t base = s->next_value;
  req_t q[kBatch];
  resp_t r[kBatch];
  rk_actor_message_t info[kBatch];
  uint64_t t0 = rkb_now_ns();
  while (got < n) {
    while (sent < n && sent - got < w) {
      long k = n - sent;
      if (k > kBatch) k = kBatch;
      if (k > w - (sent - got)) k = w - (sent - got);
      for (long i = 0; i < k; ++i)
        q[i].v = VALUE_OF(base + (uint64_t)(sent + i));
      size_t done = 0;
      uint64_t first = 0;
      rk_status_t st = rk_actor_send_batch(s->actor, q, sizeof q[0], (size_t)k,
                                           s->timeout, &done, &first);
      if (st != RK_OK) die_rk(st, "rk_actor_send_batch");
      for (long i = 0; i < k; ++i)
        s->cids[(uint64_t)(sent + i) & s->cids_mask] = first + (uint64_t)i;
      sent += k;
    }
    size_t m = 0;
    if (lend) {
      /* Zero-copy: each response read in place, then the slots given
       * back at once. */
      rk_actor_loan_t loan;
      rk_status_t st =
          rk_actor_receive_lend(s->actor, kBatch, s->timeout, &loan);
      if (st != RK_OK) die_rk(st, "rk_actor_receive_lend");
      for (size_t i = 0; i < loan.count; ++i, ++got) {
        rk_actor_message_t li;
        const resp_t *lr = rk_actor_loan_response(&loan, i, &li);
        int want = VALUE_OF(base + (uint64_t)got) + 1;
        if (!lr || lr->v != want ||
            li.correlation_id != s->cids[(uint64_t)got & s->cids_mask] ||
            li.status != RK_OK)
          die("rk_actor_receive_lend: response %ld has value %d, "
              "correlation id %llu (expected %d, id %llu)",
              got, lr ? lr->v : -1, (unsigned long long)li.correlation_id, want,
              (unsigned long long)s->cids[(uint64_t)got & s->cids_mask]);
      }
      st = rk_actor_loan_release(&loan);
      if (st != RK_OK) die_rk(st, "rk_actor_loan_release");
      continue;
    }
    rk_status_t st = rk_actor_receive_batch(s->actor, r, sizeof r, kBatch,
                                            s->timeout, info, &m);
    if (st != RK_OK) die_rk(st, "rk_actor_receive_batch");
    for (size_t i = 0; i < m; ++i, ++got) {
      int want = VALUE_OF(base + (uint64_t)got) + 1;
      if (r[i].v != want ||
          info[i].correlation_id != s->cids[(uint64_t)got & s->cids_mask] ||
          info[i].status != RK_OK)
        die("rk_actor_receive_batch: response %ld has value %d, correlation "
            "id %llu (expected %d, id %llu)",
            got, r[i].v, (unsigned long long)info[i].correlation_id, want,
            (unsigned long long)s->cids[(uint64_t)got & s->cids_mask]);
    }
  }
  uint64_t dt = rkb_now_ns() - t0;
  s->next_value = base + (uint64_t)n;
  return dt;
}

/* ---- (f) several producers into one actor --------------------------------
 *
 * P producer threads (unpinned: with more producers than CPUs the scheduler
 * decides) each send n/P requests to the persistent actor with
 * rk_actor_send; the host thread receives all n. Producer p's k-th request
 * carries (p << 26) | k, so every response names its producer and place:
 * each producer's answers must come in order, none twice, none missing. */

enum { kMaxProducers = 8 };

typedef struct producers {
  rk_actor_t *actor;
  uint64_t timeout;
  long per; /* requests per producer this step */
  int index;
} producer_arg_t;

static void *producer_main(void *arg) {
  producer_arg_t *p = arg;
  for (long k = 0; k < p->per; ++k) {
    req_t q = {(int)(((uint32_t)p->index << 26) | (uint32_t)k)};
    rk_status_t st = rk_actor_send(p->actor, &q, sizeof q, p->timeout, NULL);
    if (st != RK_OK) die_rk(st, "rk_actor_send (producers)");
  }
  return NULL;
}

static uint64_t rk_producers_round(rk_actor_side_t *s, int nprod, long n) {
  pthread_t t[kMaxProducers];
  producer_arg_t args[kMaxProducers];
  long next[kMaxProducers];
  const long per = n / nprod > 0 ? n / nprod : 1;
  uint64_t t0 = rkb_now_ns();
  for (int p = 0; p < nprod; ++p) {
    args[p] = (producer_arg_t){s->actor, s->timeout, per, p};
    next[p] = 0;
    start_thread(&t[p], producer_main, &args[p], "producer");
  }
  for (long got = 0; got < per * nprod; ++got) {
    resp_t r = {-1};
    rk_status_t st = rk_actor_receive(s->actor, &r, sizeof r, s->timeout, NULL);
    if (st != RK_OK) die_rk(st, "rk_actor_receive (producers)");
    const uint32_t v = (uint32_t)r.v - 1u;
    const uint32_t p = v >> 26, k = v & ((1u << 26) - 1u);
    if (p >= (uint32_t)nprod || k != (uint32_t)next[p])
      die("%d producers: response %ld is producer %u's request %u "
          "(expected its request %ld)",
          nprod, got, p, k, p < (uint32_t)nprod ? next[p] : -1L);
    ++next[p];
  }
  uint64_t dt = rkb_now_ns() - t0;
  for (int p = 0; p < nprod; ++p) pthread_join(t[p], NULL);
  return dt;
}

/* ---- (e) the multi-producer stage ---------------------------------------
 *
 * Two producers (pinned to two CPUs) send through one rk__ring_mp_t, in two
 * modes:
 *   streaming: a 1024-slot ring and a consumer draining it at the same
 *     time, as in an actor (with 2 CPUs the consumer shares one with a
 *     producer: it spins briefly, then parks until signalled);
 *   burst: the producers alone, into a ring large enough for a whole step
 *     (kMpBurst messages; they never find it full), then the consumer
 *     drains and checks it untimed. This isolates the stage's own cost, the
 *     contention between producers, from scheduling of the consumer.
 * In both, every message is checked: each producer's arrive complete and
 * in order. */

enum { kMpSlot = 64, kMpPayload = 8, kMpCapacity = 1024, kMpBurst = 16384 };

typedef enum mp_mode { MP_STREAM = 0, MP_BURST = 1 } mp_mode_t;

typedef struct mp_ring {
  rk_abi_ring_t *hdr;
  void *slots;
  rk__ring_mp_t mp;    /* producers' side */
  rk__ring_end_t cons; /* consumer's side */
  uint64_t full[2];    /* QUEUE_FULL answers per producer (all rounds) */
  uint64_t parks;      /* consumer parks (all rounds) */
} mp_ring_t;

typedef struct mp_bench {
  mp_ring_t ring[2][2]; /* [mp_mode_t][RK__RING_MP_CLAIM or _LOCK] */
  rk__barrier_t start, filled, end;
  pthread_t prod[2], consumer;
  int prod_cpu[2], cons_cpu;
  /* This step's (written by the host before `start`). */
  mp_mode_t mode;
  int kind;
  long msgs;
  bool quit;
  /* Burst mode: the producers meet here before they start. */
  _Alignas(RK_ABI_LINE) uint32_t rendezvous;
  _Alignas(RK_ABI_LINE) uint64_t t0, t1; /* streaming: consumer's clock */
  uint64_t p_begin[2], p_end[2];         /* burst: each producer's clock */
  char error[256];
} mp_bench_t;

typedef struct mp_producer_arg {
  mp_bench_t *b;
  int id;
} mp_producer_arg_t;

static void *mp_producer(void *arg) {
  mp_producer_arg_t *pa = arg;
  mp_bench_t *b = pa->b;
  const int id = pa->id;
  uint32_t bursts = 0;
  pin_self(b->prod_cpu[id]);
  for (;;) {
    rk__barrier_wait(&b->start);
    if (b->quit) return NULL;
    const mp_mode_t mode = b->mode;
    mp_ring_t *r = &b->ring[mode][b->kind];
    long n = id == 0 ? b->msgs / 2 : b->msgs - b->msgs / 2;
    uint64_t full = 0;
    if (mode == MP_BURST) {
      /* Both awake and spinning before either sends: a futex wake-up
       * takes longer than a burst's start should. */
      ++bursts;
      __atomic_fetch_add(&b->rendezvous, 1u, __ATOMIC_ACQ_REL);
      while (__atomic_load_n(&b->rendezvous, __ATOMIC_ACQUIRE) < 2 * bursts)
        if (g_one_cpu) sched_yield();
      b->p_begin[id] = rkb_now_ns();
    }
    for (long s = 0; s < n; ++s) {
      rk_abi_msg_t m;
      memset(&m, 0, sizeof m);
      m.correlation_id = (uint64_t)s;
      m.type = RK_ABI_MSG_REQUEST;
      uint64_t payload = ((uint64_t)id << 48) | (uint64_t)s;
      unsigned spins = 0;
      while (rk__ring_mp_send(&r->mp, &m, &payload, kMpPayload, NULL) ==
             RK_ERR_QUEUE_FULL) {
        ++full;
        if (g_one_cpu || ++spins % 64 == 0)
          sched_yield();
        else
          cpu_pause();
      }
    }
    if (mode == MP_BURST) {
      b->p_end[id] = rkb_now_ns();
      rk__barrier_wait(&b->filled);
    }
    __atomic_fetch_add(&r->full[id], full, __ATOMIC_RELAXED);
    rk__barrier_wait(&b->end);
  }
}

/* Takes and checks `msgs` messages from r (waiting for them). */
static void mp_consume(mp_bench_t *b, mp_ring_t *r, long msgs) {
  rk__ring_end_t *c = &r->cons;
  long got = 0;
  uint64_t next[2] = {0, 0}, parks = 0;
  while (got < msgs && !b->error[0]) {
    uint64_t avail = rk__ring_available(c);
    if (avail == 0) {
      /* Spin a little, then park until a producer signals. */
      for (int i = 0; i < 256 && avail == 0; ++i) {
        cpu_pause();
        avail = rk__ring_available(c);
      }
      if (avail == 0) {
        ++parks;
        uint64_t deadline = rk__now_ns() + kTimeoutNs;
        if (!rk__ring_wait_data(c->hdr, c->own, deadline) &&
            rk__now_ns() >= deadline)
          snprintf(b->error, sizeof b->error,
                   "mp consumer: no message for %.0f s after %ld",
                   (double)kTimeoutNs / 1e9, got);
        continue;
      }
    }
    for (uint64_t i = 0; i < avail; ++i) {
      const unsigned char *slot = rk__ring_peek(c, (uint32_t)i);
      rk_abi_msg_t m;
      uint64_t payload;
      memcpy(&m, slot, sizeof m);
      memcpy(&payload, slot + RK_ABI_MSG_HEADER, sizeof payload);
      unsigned id = (unsigned)(payload >> 48);
      uint64_t seq = payload & ((1ull << 48) - 1);
      if (id > 1 || m.type != RK_ABI_MSG_REQUEST || m.size != kMpPayload ||
          seq != next[id] || m.correlation_id != seq) {
        snprintf(b->error, sizeof b->error,
                 "mp consumer: message %ld is producer %u seq %llu "
                 "(expected seq %llu), type %u, size %u",
                 got + (long)i, id, (unsigned long long)seq,
                 id > 1 ? 0ull : (unsigned long long)next[id], m.type, m.size);
        break;
      }
      ++next[id];
    }
    rk__ring_release(c, (uint32_t)avail);
    rk__ring_signal_space(c->hdr);
    got += (long)avail;
  }
  if (!b->error[0] && (got != msgs || next[0] != (uint64_t)msgs / 2))
    snprintf(b->error, sizeof b->error,
             "mp consumer: got %ld messages (%llu + %llu), expected %ld", got,
             (unsigned long long)next[0], (unsigned long long)next[1], msgs);
  r->parks += parks;
}

static void *mp_consumer(void *arg) {
  mp_bench_t *b = arg;
  pin_self(b->cons_cpu);
  for (;;) {
    rk__barrier_wait(&b->start);
    if (b->quit) return NULL;
    mp_ring_t *r = &b->ring[b->mode][b->kind];
    if (b->mode == MP_BURST) {
      rk__barrier_wait(&b->filled);
      mp_consume(b, r, b->msgs);
    } else {
      b->t0 = rkb_now_ns();
      mp_consume(b, r, b->msgs);
      b->t1 = rkb_now_ns();
    }
    rk__barrier_wait(&b->end);
  }
}

static mp_producer_arg_t g_mp_args[2];

static void mp_init(mp_bench_t *b) {
  memset(b, 0, sizeof *b);
  for (int mode = 0; mode < 2; ++mode)
    for (int k = 0; k < 2; ++k) {
      mp_ring_t *r = &b->ring[mode][k];
      const uint32_t cap = mode == MP_BURST ? kMpBurst : kMpCapacity;
      r->hdr = xaligned(sizeof *r->hdr);
      r->slots = xaligned(rk__ring_slot_bytes(cap, kMpSlot));
      RK_CHECK(rk__ring_init(r->hdr, cap, kMpSlot));
      rk__ring_mp_init(&r->mp, r->hdr, r->slots,
                       k == 0 ? RK__RING_MP_CLAIM : RK__RING_MP_LOCK);
      rk__ring_attach(&r->cons, r->hdr, r->slots, false);
    }
  /* Producers on two different CPUs (their contention is the point); the
   * consumer on a third when there is one, else where the scheduler puts
   * it. */
  b->prod_cpu[0] = g_one_cpu ? -1 : g_cpus[0];
  b->prod_cpu[1] = g_one_cpu ? -1 : g_cpus[1];
  b->cons_cpu = g_ncpus >= 3 ? g_cpus[2] : -1;
  rk__barrier_init(&b->start, 4);
  rk__barrier_init(&b->filled, 3);
  rk__barrier_init(&b->end, 4);
  for (int i = 0; i < 2; ++i) {
    g_mp_args[i].b = b;
    g_mp_args[i].id = i;
    start_thread(&b->prod[i], mp_producer, &g_mp_args[i],
                 i == 0 ? "rkb-prod0" : "rkb-prod1");
  }
  start_thread(&b->consumer, mp_consumer, b, "rkb-cons");
}

/* One step: `msgs` messages in `mode` through the `kind` stage; returns
 * the timed ns (streaming: the consumer's first to last; burst: the
 * producers' first start to last end). */
static uint64_t mp_step(mp_bench_t *b, mp_mode_t mode, int kind, long msgs) {
  b->mode = mode;
  b->kind = kind;
  b->msgs = msgs;
  b->error[0] = '\0';
  rk__barrier_wait(&b->start);
  rk__barrier_wait(&b->end);
  if (b->error[0]) die("%s", b->error);
  if (mode == MP_STREAM) return b->t1 - b->t0;
  uint64_t begin =
      b->p_begin[0] < b->p_begin[1] ? b->p_begin[0] : b->p_begin[1];
  uint64_t end = b->p_end[0] > b->p_end[1] ? b->p_end[0] : b->p_end[1];
  return end - begin;
}

/* A round of `msgs` messages: one streaming step, or bursts of at most
 * kMpBurst. */
static uint64_t mp_round(mp_bench_t *b, mp_mode_t mode, int kind, long msgs) {
  if (mode == MP_STREAM) return mp_step(b, mode, kind, msgs);
  uint64_t ns = 0;
  for (long done = 0; done < msgs;) {
    long n = msgs - done < kMpBurst ? msgs - done : kMpBurst;
    ns += mp_step(b, mode, kind, n);
    done += n;
  }
  return ns;
}

static void mp_destroy(mp_bench_t *b) {
  b->quit = true;
  rk__barrier_wait(&b->start);
  for (int i = 0; i < 2; ++i) pthread_join(b->prod[i], NULL);
  pthread_join(b->consumer, NULL);
  rk__barrier_destroy(&b->start);
  rk__barrier_destroy(&b->filled);
  rk__barrier_destroy(&b->end);
  for (int mode = 0; mode < 2; ++mode)
    for (int k = 0; k < 2; ++k) {
      free(b->ring[mode][k].hdr);
      free(b->ring[mode][k].slots);
    }
}

/* ---- Series and the round loop ------------------------------------------ */

typedef enum series_id {
  S_FLOOR_RTT,
  S_FLOOR_TPUT,
  S_CK_RTT,
  S_CK_TPUT,
  S_RING_RTT,
  S_RING_TPUT,
  S_RING_NOSIG_RTT,
  S_RING_NOSIG_TPUT,
  S_RK_RTT,
  S_RK_TPUT,
  S_TR_RTT,
  S_TR_TPUT,
  S_MP_CLAIM,
  S_MP_LOCK,
  S_MP_CLAIM_BURST,
  S_MP_LOCK_BURST,
  S_RK_BATCH_TPUT,
  S_RK_LEND_TPUT,
  S_RK_2P,
  S_RK_8P,
  S_NUM
} series_id_t;

typedef struct series {
  const char *key;     /* JSON name */
  const char *label;   /* table row */
  bool rate;           /* messages/s (else ns per round trip) */
  long ops;            /* operations per round */
  const char *skipped; /* why not measured, or NULL */
  double *v;           /* per round: ns per round trip, or Mmsg/s */
  rkb_summary_t s;
} series_t;

#define SERIES(k, l, r) \
  { .key = k, .label = l, .rate = r }
static series_t g_series[S_NUM] = {
    [S_FLOOR_RTT] = SERIES("floor_rtt", "(a) floor: cache-line ping-pong", 0),
    [S_FLOOR_TPUT] = SERIES("floor_tput", "    floor throughput = 1/rtt", 1),
    [S_CK_RTT] = SERIES("ck_rtt", "(b) ck_ring SPSC round trip", 0),
    [S_CK_TPUT] = SERIES("ck_tput", "    ck_ring pipelined", 1),
    [S_RING_RTT] = SERIES("rk_ring_rtt", "    rk rings (bare) round trip", 0),
    [S_RING_TPUT] = SERIES("rk_ring_tput", "    rk rings (bare) pipelined", 1),
    [S_RING_NOSIG_RTT] = SERIES("rk_ring_nosignal_rtt",
                                "    rk rings, no signals, round trip", 0),
    [S_RING_NOSIG_TPUT] = SERIES("rk_ring_nosignal_tput",
                                 "    rk rings, no signals, pipelined", 1),
    [S_RK_RTT] = SERIES("rk_rtt", "(c) rk persistent: rk_actor_call", 0),
    [S_RK_TPUT] = SERIES("rk_tput", "    rk persistent: send/receive", 1),
    [S_TR_RTT] =
        SERIES("rk_traditional_rtt", "(d) rk traditional: rk_actor_call", 0),
    [S_TR_TPUT] =
        SERIES("rk_traditional_tput", "    rk traditional: send/receive", 1),
    [S_MP_CLAIM] = SERIES("mp_claim_tput", "(e) mp CLAIM, streaming", 1),
    [S_MP_LOCK] = SERIES("mp_lock_tput", "    mp LOCK, streaming", 1),
    [S_MP_CLAIM_BURST] =
        SERIES("mp_claim_burst_tput", "    mp CLAIM, producers only", 1),
    [S_MP_LOCK_BURST] =
        SERIES("mp_lock_burst_tput", "    mp LOCK, producers only", 1),
    [S_RK_BATCH_TPUT] =
        SERIES("rk_batch_tput", "(c) rk persistent: batch send/receive", 1),
    [S_RK_LEND_TPUT] = SERIES("rk_lend_tput",
                              "    rk persistent: batch send, lent receive", 1),
    [S_RK_2P] = SERIES("rk_2_producers_tput", "(f) rk actor, 2 producers", 1),
    [S_RK_8P] = SERIES("rk_8_producers_tput", "    rk actor, 8 producers", 1),
};
#undef SERIES

typedef enum task_id {
  T_FLOOR,
  T_CK_RTT,
  T_CK_TPUT,
  T_RING_RTT,
  T_RING_TPUT,
  T_RING_NOSIG_RTT,
  T_RING_NOSIG_TPUT,
  T_RK_RTT,
  T_RK_TPUT,
  T_TR_RTT,
  T_TR_TPUT,
  T_MP_CLAIM,
  T_MP_LOCK,
  T_MP_CLAIM_BURST,
  T_MP_LOCK_BURST,
  T_RK_BATCH_TPUT,
  T_RK_LEND_TPUT,
  T_RK_2P,
  T_RK_8P,
  T_NUM
} task_id_t;

typedef struct bench {
  const options_t *opt;
  echo_t *echo;
  mp_bench_t *mp;
  int host_cpu;
  /* persistent, traditional, and a persistent one for the multi-producer
   * rounds (kRkSides) */
  rk_actor_side_t *rk[3];
} bench_t;

static unsigned group_of(series_id_t s) {
  switch (s) {
    case S_FLOOR_RTT:
    case S_FLOOR_TPUT:
      return G_FLOOR;
    case S_CK_RTT:
    case S_CK_TPUT:
      return G_CK;
    case S_RING_RTT:
    case S_RING_TPUT:
    case S_RING_NOSIG_RTT:
    case S_RING_NOSIG_TPUT:
      return G_RING;
    case S_RK_RTT:
      return G_RK;
    case S_RK_TPUT:
      return G_RK_STREAM;
    case S_RK_BATCH_TPUT:
    case S_RK_LEND_TPUT:
      return G_RK_BATCH;
    case S_RK_2P:
    case S_RK_8P:
      return G_PRODUCERS;
    case S_TR_RTT:
    case S_TR_TPUT:
      return G_TRADITIONAL;
    default:
      return G_MP;
  }
}

/* The series a task fills (its first). */
static series_id_t task_series(task_id_t t) {
  static const series_id_t map[T_NUM] = {
      [T_FLOOR] = S_FLOOR_RTT,
      [T_CK_RTT] = S_CK_RTT,
      [T_CK_TPUT] = S_CK_TPUT,
      [T_RING_RTT] = S_RING_RTT,
      [T_RING_TPUT] = S_RING_TPUT,
      [T_RING_NOSIG_RTT] = S_RING_NOSIG_RTT,
      [T_RING_NOSIG_TPUT] = S_RING_NOSIG_TPUT,
      [T_RK_RTT] = S_RK_RTT,
      [T_RK_TPUT] = S_RK_TPUT,
      [T_TR_RTT] = S_TR_RTT,
      [T_TR_TPUT] = S_TR_TPUT,
      [T_MP_CLAIM] = S_MP_CLAIM,
      [T_MP_LOCK] = S_MP_LOCK,
      [T_MP_CLAIM_BURST] = S_MP_CLAIM_BURST,
      [T_MP_LOCK_BURST] = S_MP_LOCK_BURST,
      [T_RK_BATCH_TPUT] = S_RK_BATCH_TPUT,
      [T_RK_LEND_TPUT] = S_RK_LEND_TPUT,
      [T_RK_2P] = S_RK_2P,
      [T_RK_8P] = S_RK_8P};
  return map[t];
}

/* Runs one round of task t (a short untimed burst, then `ops` timed
 * operations) and returns the elapsed ns of the timed part. */
static uint64_t run_task(bench_t *b, task_id_t t, long ops) {
  long burst = ops / 20 > 0 ? ops / 20 : 1;
  uint64_t ns = 0;
  switch (t) {
    case T_FLOOR:
      pin_self(b->host_cpu);
      echo_begin(b->echo, ECHO_FLOOR);
      floor_round(b->echo, burst);
      ns = floor_round(b->echo, ops);
      echo_end(b->echo);
      break;
    case T_RING_RTT:
    case T_RING_NOSIG_RTT: {
      bool signal = t == T_RING_RTT;
      pin_self(b->host_cpu);
      echo_begin(b->echo, signal ? ECHO_RING : ECHO_RING_NOSIG);
      ring_rtt_round(b->echo, burst, signal);
      ns = ring_rtt_round(b->echo, ops, signal);
      echo_end(b->echo);
      break;
    }
    case T_RING_TPUT:
    case T_RING_NOSIG_TPUT: {
      bool signal = t == T_RING_TPUT;
      pin_self(b->host_cpu);
      echo_begin(b->echo, signal ? ECHO_RING : ECHO_RING_NOSIG);
      ring_tput_round(b->echo, burst, b->opt->window, signal);
      ns = ring_tput_round(b->echo, ops, b->opt->window, signal);
      echo_end(b->echo);
      break;
    }
#ifdef RK_BENCH_HAVE_CK
    case T_CK_RTT:
      pin_self(b->host_cpu);
      echo_begin(b->echo, ECHO_CK);
      ck_rtt_round(b->echo, burst);
      ns = ck_rtt_round(b->echo, ops);
      echo_end(b->echo);
      break;
    case T_CK_TPUT:
      pin_self(b->host_cpu);
      echo_begin(b->echo, ECHO_CK);
      ck_tput_round(b->echo, burst, b->opt->window);
      ns = ck_tput_round(b->echo, ops, b->opt->window);
      echo_end(b->echo);
      break;
#endif
    case T_RK_RTT:
    case T_TR_RTT: {
      rk_actor_side_t *s = b->rk[t == T_RK_RTT ? 0 : 1];
      pin_self(s->host_cpu);
      rk_rtt_round(s, burst);
      ns = rk_rtt_round(s, ops);
      break;
    }
    case T_RK_TPUT:
    case T_TR_TPUT: {
      rk_actor_side_t *s = b->rk[t == T_RK_TPUT ? 0 : 1];
      pin_self(s->host_cpu);
      rk_tput_round(s, burst, b->opt->window);
      ns = rk_tput_round(s, ops, b->opt->window);
      break;
    }
    case T_RK_BATCH_TPUT:
    case T_RK_LEND_TPUT: {
      rk_actor_side_t *s = b->rk[0];
      const bool lend = t == T_RK_LEND_TPUT;
      pin_self(s->host_cpu);
      rk_batch_round(s, burst, b->opt->window, lend);
      ns = rk_batch_round(s, ops, b->opt->window, lend);
      break;
    }
    case T_RK_2P:
    case T_RK_8P: {
      rk_actor_side_t *s = b->rk[2];
      const int np = t == T_RK_2P ? 2 : 8;
      unpin_self(); /* producers and receiver: wherever the scheduler puts
                       them */
      rk_producers_round(s, np, burst);
      ns = rk_producers_round(s, np, ops);
      break;
    }
    case T_MP_CLAIM:
    case T_MP_LOCK:
    case T_MP_CLAIM_BURST:
    case T_MP_LOCK_BURST: {
      mp_mode_t mode = t == T_MP_CLAIM || t == T_MP_LOCK ? MP_STREAM : MP_BURST;
      int kind = t == T_MP_CLAIM || t == T_MP_CLAIM_BURST ? RK__RING_MP_CLAIM
                                                          : RK__RING_MP_LOCK;
      unpin_self(); /* the host only waits at the barriers */
      ns = mp_round(b->mp, mode, kind, ops);
      break;
    }
    default:
      die("task %d is not built in", (int)t);
  }
  if (ns == 0) ns = 1;
  return ns;
}

/* ---- Other processes' CPU use (as bench/launch) ------------------------- */

typedef struct cpu_snapshot {
  bool ok;
  double busy_s, steal_s, self_s;
  uint64_t wall_ns;
} cpu_snapshot_t;

static cpu_snapshot_t cpu_snapshot(void) {
  cpu_snapshot_t c;
  memset(&c, 0, sizeof c);
  c.wall_ns = rkb_now_ns();
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
    c.self_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return c;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  if (n < 7 || hz <= 0) return c;
  c.busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)hz;
  c.steal_s = n >= 8 ? (double)v[7] / (double)hz : 0;
  c.ok = true;
  return c;
}

/* ---- Report -------------------------------------------------------------- */

static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    ++colon;
    while (*colon == ' ' || *colon == '\t') ++colon;
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, cap, "%s", colon);
    break;
  }
  fclose(f);
}

typedef struct ratio {
  const char *key, *label;
  series_id_t num, den;
  /* Target: 0 none, -1 "<= target", +1 ">= target". */
  int target_dir;
  double target;
  bool have;
  double value;         /* ratio of the medians */
  rkb_summary_t spread; /* the same ratio round by round */
} ratio_t;

#define RATIO(k, l, n, d, dir, t) \
  { .key = k, .label = l, .num = n, .den = d, .target_dir = dir, .target = t }
static ratio_t g_ratios[] = {
    RATIO("rk_rtt_over_floor", "rk round trip / floor", S_RK_RTT, S_FLOOR_RTT,
          -1, 2.0),
    RATIO("rk_tput_over_ck", "rk throughput / ck_ring throughput", S_RK_TPUT,
          S_CK_TPUT, +1, 1.0),
    RATIO("rk_batch_tput_over_ck", "rk batch throughput / ck_ring",
          S_RK_BATCH_TPUT, S_CK_TPUT, +1, 1.0),
    RATIO("rk_lend_tput_over_ck", "rk batch, lent receive / ck_ring",
          S_RK_LEND_TPUT, S_CK_TPUT, 0, 0),
    RATIO("producers_8_over_2", "rk 8 producers / 2 producers", S_RK_8P,
          S_RK_2P, +1, 0.5),
    RATIO("rk_rtt_over_ck", "rk round trip / ck_ring round trip", S_RK_RTT,
          S_CK_RTT, 0, 0),
    RATIO("rk_rtt_over_ring", "rk actor round trip / bare rk rings", S_RK_RTT,
          S_RING_RTT, 0, 0),
    RATIO("rk_tput_over_ring", "rk actor throughput / bare rk rings", S_RK_TPUT,
          S_RING_TPUT, 0, 0),
    RATIO("ring_rtt_over_ck", "bare rk rings / ck_ring, round trip", S_RING_RTT,
          S_CK_RTT, 0, 0),
    RATIO("ring_tput_over_ck", "bare rk rings / ck_ring, throughput",
          S_RING_TPUT, S_CK_TPUT, 0, 0),
    RATIO("ring_tput_signals", "bare rk rings: with / without signals",
          S_RING_TPUT, S_RING_NOSIG_TPUT, 0, 0),
    RATIO("ck_rtt_over_floor", "ck_ring round trip / floor", S_CK_RTT,
          S_FLOOR_RTT, 0, 0),
    RATIO("rk_tput_over_floor", "rk throughput / floor throughput", S_RK_TPUT,
          S_FLOOR_TPUT, 0, 0),
    RATIO("ck_tput_over_floor", "ck_ring throughput / floor throughput",
          S_CK_TPUT, S_FLOOR_TPUT, 0, 0),
    RATIO("traditional_rtt_over_rk", "traditional round trip / persistent",
          S_TR_RTT, S_RK_RTT, 0, 0),
    RATIO("rk_tput_over_traditional", "persistent throughput / traditional",
          S_RK_TPUT, S_TR_TPUT, 0, 0),
    RATIO("claim_over_lock", "mp CLAIM / LOCK, streaming", S_MP_CLAIM,
          S_MP_LOCK, 0, 0),
    RATIO("claim_over_lock_burst", "mp CLAIM / LOCK, producers only",
          S_MP_CLAIM_BURST, S_MP_LOCK_BURST, 0, 0),
};
#undef RATIO
enum { kNumRatios = sizeof g_ratios / sizeof g_ratios[0] };

static bool target_met(const ratio_t *r) {
  return r->target_dir < 0 ? r->value <= r->target : r->value >= r->target;
}

static void print_json_summary(const rkb_summary_t *s) {
  printf(
      "\"median\": %.6g, \"p10\": %.6g, \"p90\": %.6g, \"min\": %.6g, "
      "\"max\": %.6g",
      s->median, s->p10, s->p90, s->min, s->max);
}

/* JSON string of plain ASCII text (the few strings we print). */
static void print_json_string(const char *s) {
  putchar('"');
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* ---- Main --------------------------------------------------------------- */

int main(int argc, char **argv) {
  options_t opt;
  if (parse_options(argc, argv, &opt) != 0) return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);

  g_ncpus = rk__allowed_cpus(g_cpus, kMaxCpus);
  g_one_cpu = g_ncpus < 2;
  const long window = opt.window;
  const uint32_t ring_size =
      pow2_at_least((uint64_t)window * 4 > 1024 ? (uint64_t)window * 4 : 1024);

  for (int s = 0; s < S_NUM; ++s)
    g_series[s].v = xcalloc((size_t)opt.rounds, sizeof(double));
  g_series[S_FLOOR_RTT].ops = g_series[S_FLOOR_TPUT].ops = opt.iters;
  g_series[S_CK_RTT].ops = opt.iters;
  g_series[S_CK_TPUT].ops = opt.msgs;
  g_series[S_RING_RTT].ops = opt.iters;
  g_series[S_RING_TPUT].ops = opt.msgs;
  g_series[S_RING_NOSIG_RTT].ops = opt.iters;
  g_series[S_RING_NOSIG_TPUT].ops = opt.msgs;
  g_series[S_RK_RTT].ops = opt.iters;
  g_series[S_RK_TPUT].ops = opt.msgs;
  g_series[S_TR_RTT].ops = opt.iters / 5 > 0 ? opt.iters / 5 : 1;
  g_series[S_TR_TPUT].ops = opt.msgs / 20 > 0 ? opt.msgs / 20 : 1;
  g_series[S_MP_CLAIM].ops = g_series[S_MP_LOCK].ops = 2 * opt.msgs;
  g_series[S_MP_CLAIM_BURST].ops = g_series[S_MP_LOCK_BURST].ops = 2 * opt.msgs;
  g_series[S_RK_BATCH_TPUT].ops = g_series[S_RK_LEND_TPUT].ops = opt.msgs;
  g_series[S_RK_2P].ops = opt.msgs / 2 > 0 ? opt.msgs / 2 * 2 : 2;
  g_series[S_RK_8P].ops = opt.msgs / 8 > 0 ? opt.msgs / 8 * 8 : 8;
#ifndef RK_BENCH_HAVE_CK
  g_series[S_CK_RTT].skipped = g_series[S_CK_TPUT].skipped = kCkSkipped;
#endif
  /* --only: the groups not named are not run. */
  for (int s = 0; s < S_NUM; ++s)
    if (!(opt.only & group_of((series_id_t)s)) && !g_series[s].skipped)
      g_series[s].skipped = "not selected (--only)";

  /* rk first, before the main thread is pinned: threads rk starts inherit
   * its CPU mask, and rk reads the allowed CPUs from it. */
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  RK_CHECK(rk_backend_open(RK_BACKEND_CPU, &be));
  rk_device_info_t info;
  RK_CHECK(rk_backend_device_info(be, 0, &info));
  RK_CHECK(rk_backend_create_context(be, 0, &ctx));

  bench_t b;
  memset(&b, 0, sizeof b);
  b.opt = &opt;
  b.host_cpu = g_one_cpu ? -1 : g_cpus[0];

  /* The producer rounds get an actor of their own: an actor that a second
   * thread has used stays on the locked paths for good (docs/actors.md,
   * "One thread alone"), and the single-thread rounds measure the actor
   * one thread uses. */
  rk_actor_side_t rk_sides[kRkSides];
  double launch_ms[kRkSides] = {0, 0, 0};
  memset(rk_sides, 0, sizeof rk_sides);
  for (int m = 0; m < kRkSides; ++m) {
    rk_actor_side_t *s = &rk_sides[m];
    s->mode = m == 1 ? RK_ACTOR_TRADITIONAL : RK_ACTOR_PERSISTENT;
    s->timeout = opt.rk_timeout;
    size_t ncids = 1;
    while (ncids < (size_t)window) ncids *= 2;
    s->cids = xcalloc(ncids, sizeof *s->cids);
    s->cids_mask = ncids - 1;
    rk_actor_options_t o;
    rk_actor_options_init(&o);
    o.mode = s->mode;
    o.input_capacity = o.output_capacity = ring_size;
    pid_t before[kMaxTids];
    int nbefore = list_tids(before, kMaxTids);
    uint64_t t0 = rkb_now_ns();
    RK_CHECK(rk_actor_launch(ctx, kActorSource, "add_one", &o, &s->actor));
    launch_ms[m] = (double)(rkb_now_ns() - t0) / 1e6;
    /* One call first: a worker pins itself when it starts running, and it
     * has run once it answered. */
    rk_rtt_round(s, 1);
    s->worker_cpu =
        describe_new_threads(before, nbefore, s->threads, sizeof s->threads);
    /* The host runs on an allowed CPU other than the worker's. */
    s->host_cpu = b.host_cpu;
    if (!g_one_cpu && s->worker_cpu >= 0)
      for (int i = 0; i < g_ncpus; ++i)
        if (g_cpus[i] != s->worker_cpu) {
          s->host_cpu = g_cpus[i];
          break;
        }
    if (rk_actor_state(s->actor) != RK_ACTOR_ACTIVE)
      die("the %s actor is %s after launch, not active",
          rk_actor_mode_name(s->mode),
          rk_actor_state_name(rk_actor_state(s->actor)));
    b.rk[m] = s;
  }

  echo_t *echo = xaligned(sizeof *echo);
  echo_init(echo, g_one_cpu ? -1 : g_cpus[1], ring_size);
  b.echo = echo;
  mp_bench_t *mp = xaligned(sizeof *mp);
  mp_init(mp);
  b.mp = mp;

  /* The tasks this build runs. */
  task_id_t tasks[T_NUM];
  int ntasks = 0;
  for (int t = 0; t < T_NUM; ++t)
    if (!g_series[task_series((task_id_t)t)].skipped)
      tasks[ntasks++] = (task_id_t)t;

  /* Warm-up: one untimed round of each. */
  for (int k = 0; k < ntasks; ++k)
    run_task(&b, tasks[k], g_series[task_series(tasks[k])].ops);

  cpu_snapshot_t before = cpu_snapshot();
  for (long r = 0; r < opt.rounds; ++r) {
    for (int k = 0; k < ntasks; ++k) {
      task_id_t t = tasks[(k + r) % ntasks];
      series_t *s = &g_series[task_series(t)];
      sleep_ms(opt.cooldown);
      uint64_t ns = run_task(&b, t, s->ops);
      s->v[r] = s->rate ? (double)s->ops / ((double)ns / 1e9) / 1e6
                        : (double)ns / (double)s->ops;
      if (t == T_FLOOR) g_series[S_FLOOR_TPUT].v[r] = 1e3 / s->v[r];
    }
  }
  cpu_snapshot_t after = cpu_snapshot();
  unpin_self();

  for (int s = 0; s < S_NUM; ++s)
    if (!g_series[s].skipped)
      g_series[s].s = rkb_summarize(g_series[s].v, (size_t)opt.rounds);
  double *tmp = xcalloc((size_t)opt.rounds, sizeof *tmp);
  for (int i = 0; i < kNumRatios; ++i) {
    ratio_t *q = &g_ratios[i];
    const series_t *n = &g_series[q->num], *d = &g_series[q->den];
    if (n->skipped || d->skipped || d->s.median <= 0) continue;
    q->have = true;
    q->value = n->s.median / d->s.median;
    for (long r = 0; r < opt.rounds; ++r)
      tmp[r] = d->v[r] > 0 ? n->v[r] / d->v[r] : 0;
    q->spread = rkb_summarize(tmp, (size_t)opt.rounds);
  }
  free(tmp);

  /* Interference from other processes during the timed rounds. */
  double others_pct = -1, self_pct = -1, steal_pct = -1;
  if (before.ok && after.ok) {
    double wall = (double)(after.wall_ns - before.wall_ns) / 1e9;
    double capacity = wall * g_ncpus;
    double others =
        (after.busy_s - before.busy_s) - (after.self_s - before.self_s);
    if (others < 0) others = 0;
    others_pct = 100 * others / capacity;
    self_pct = 100 * (after.self_s - before.self_s) / capacity;
    steal_pct = 100 * (after.steal_s - before.steal_s) / capacity;
  }

  rk_actor_stats_t st[kRkSides];
  for (int m = 0; m < kRkSides; ++m)
    RK_CHECK(rk_actor_stats(b.rk[m]->actor, &st[m]));
  uint64_t mp_full[2], mp_parks[2];
  for (int k = 0; k < 2; ++k) {
    mp_full[k] =
        mp->ring[MP_STREAM][k].full[0] + mp->ring[MP_STREAM][k].full[1];
    mp_parks[k] = mp->ring[MP_STREAM][k].parks;
  }

  char model[256], cpus[256];
  cpu_model(model, sizeof model);
  format_cpus(g_cpus, g_ncpus, cpus, sizeof cpus);

  if (opt.json) {
    printf("{\n  \"benchmark\": \"actors\",\n  \"rk_version\": ");
    print_json_string(rk_version());
    printf(",\n  \"cpu_model\": ");
    print_json_string(model);
    printf(",\n  \"allowed_cpus\": ");
    print_json_string(cpus);
    printf(",\n  \"pinned\": %s,\n", g_one_cpu ? "false" : "true");
    printf("  \"host_cpu\": %d, \"echo_cpu\": %d,\n", b.host_cpu, echo->cpu);
    printf("  \"rounds\": %ld, \"window\": %ld, \"ring_capacity\": %u,\n",
           opt.rounds, window, ring_size);
    printf("  \"quick\": %s, \"rk_timeout_infinite\": %s,\n",
           opt.quick ? "true" : "false",
           opt.rk_timeout == RK_TIMEOUT_INFINITE ? "true" : "false");
    if (others_pct >= 0)
      printf("  \"others_cpu_pct\": %.1f, \"steal_cpu_pct\": %.1f,\n",
             others_pct, steal_pct);
    /* The headline figures, flat: medians of this run (null: not
     * measured). */
    static const struct {
      const char *key;
      series_id_t s;
      double scale; /* series unit -> field unit */
    } kFlat[] = {
        {"floor_rtt_ns", S_FLOOR_RTT, 1},
        {"ck_rtt_ns", S_CK_RTT, 1},
        {"ck_msgs_per_s", S_CK_TPUT, 1e6},
        {"rk_ring_rtt_ns", S_RING_RTT, 1},
        {"rk_ring_msgs_per_s", S_RING_TPUT, 1e6},
        {"rk_call_rtt_ns", S_RK_RTT, 1},
        {"rk_msgs_per_s", S_RK_TPUT, 1e6},
        {"rk_batch_msgs_per_s", S_RK_BATCH_TPUT, 1e6},
        {"rk_lend_msgs_per_s", S_RK_LEND_TPUT, 1e6},
        {"rk_msgs_per_s_2_producers", S_RK_2P, 1e6},
        {"rk_msgs_per_s_8_producers", S_RK_8P, 1e6},
        {"rk_traditional_call_rtt_ns", S_TR_RTT, 1},
        {"rk_traditional_msgs_per_s", S_TR_TPUT, 1e6},
    };
    for (size_t i = 0; i < sizeof kFlat / sizeof kFlat[0]; ++i) {
      const series_t *x = &g_series[kFlat[i].s];
      if (x->skipped)
        printf("  \"%s\": null,\n", kFlat[i].key);
      else
        printf("  \"%s\": %.6g,\n", kFlat[i].key, x->s.median * kFlat[i].scale);
    }
    printf("  \"series\": {\n");
    for (int s = 0; s < S_NUM; ++s) {
      const series_t *x = &g_series[s];
      printf("    \"%s\": {\"unit\": \"%s\", \"ops_per_round\": %ld, ", x->key,
             x->rate ? "Mmsg/s" : "ns", x->ops);
      if (x->skipped) {
        printf("\"skipped\": ");
        print_json_string(x->skipped);
      } else {
        print_json_summary(&x->s);
        printf(", \"rounds\": [");
        for (long r = 0; r < opt.rounds; ++r)
          printf("%s%.6g", r ? ", " : "", x->v[r]);
        printf("]");
      }
      printf("}%s\n", s + 1 < S_NUM ? "," : "");
    }
    printf("  },\n  \"ratios\": {\n");
    for (int i = 0; i < kNumRatios; ++i) {
      const ratio_t *q = &g_ratios[i];
      printf("    \"%s\": ", q->key);
      if (!q->have) {
        printf("null");
      } else {
        printf(
            "{\"value\": %.4g, \"round_median\": %.4g, "
            "\"round_p10\": %.4g, \"round_p90\": %.4g",
            q->value, q->spread.median, q->spread.p10, q->spread.p90);
        if (q->target_dir)
          printf(", \"target\": \"%s %g\", \"met\": %s",
                 q->target_dir < 0 ? "<=" : ">=", q->target,
                 target_met(q) ? "true" : "false");
        printf("}");
      }
      printf("%s\n", i + 1 < kNumRatios ? "," : "");
    }
    printf("  },\n");
    printf("  \"mp_full_answers\": {\"claim\": %llu, \"lock\": %llu},\n",
           (unsigned long long)mp_full[0], (unsigned long long)mp_full[1]);
    printf("  \"mp_consumer_parks\": {\"claim\": %llu, \"lock\": %llu}",
           (unsigned long long)mp_parks[0], (unsigned long long)mp_parks[1]);
    for (int m = 0; m < kRkSides; ++m) {
      printf(
          ",\n  \"%s_actor\": {\"launch_ms\": %.2f, \"sent\": %llu, "
          "\"processed\": %llu, \"dropped_sends\": %llu, "
          "\"handler_errors\": %llu, \"stats_latency_p50_ns\": %.0f, "
          "\"stats_latency_p99_ns\": %.0f, \"host_cpu\": %d, "
          "\"threads\": ",
          kRkSideNames[m], launch_ms[m], (unsigned long long)st[m].sent,
          (unsigned long long)st[m].processed,
          (unsigned long long)st[m].dropped_sends,
          (unsigned long long)st[m].handler_errors, st[m].latency_p50_ns,
          st[m].latency_p99_ns, b.rk[m]->host_cpu);
      print_json_string(b.rk[m]->threads);
      printf("}");
    }
    printf("\n}\n");
    fflush(stdout);
  }
  /* The table always; with --json on stderr, so that stdout holds only the
   * JSON object. */
  int saved_stdout = -1;
  if (opt.json) {
    saved_stdout = dup(STDOUT_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  {
    printf(
        "bench_actors: persistent actors vs the physical floor vs "
        "Concurrency Kit\n");
    printf("rk %s, backend %s, device \"%s\"; CPU %s\n", rk_version(),
           rk_backend_name(be), info.name, model);
    printf("allowed CPUs: %s (%d)\n", cpus, g_ncpus);
    if (g_one_cpu)
      printf(
          "only ONE CPU allowed: nothing is pinned and every spin loop "
          "yields;\nround trips measure context switches, not cache "
          "transfers\n");
    else
      printf(
          "host thread on CPU %d, echo thread (floor, ck_ring, rk rings) on "
          "CPU "
          "%d\n",
          b.host_cpu, echo->cpu);
    for (int m = 0; m < kRkSides; ++m) {
      printf("rk %s actor: launched in %.1f ms; threads it started: %s; ",
             kRkSideLabels[m], launch_ms[m], b.rk[m]->threads);
      if (b.rk[m]->host_cpu >= 0)
        printf("host on CPU %d\n", b.rk[m]->host_cpu);
      else
        printf("host unpinned\n");
    }
    if (g_one_cpu)
      printf("mp stage: producers and consumer unpinned\n");
    else if (mp->cons_cpu >= 0)
      printf("mp stage: producers on CPUs %d and %d, consumer on CPU %d\n",
             mp->prod_cpu[0], mp->prod_cpu[1], mp->cons_cpu);
    else
      printf(
          "mp stage: producers on CPUs %d and %d, consumer unpinned (3 "
          "threads on 2 CPUs:\n  it shares one, parking when the ring is "
          "empty)\n",
          mp->prod_cpu[0], mp->prod_cpu[1]);
    printf(
        "window W = %ld messages in flight; ring capacity %u "
        "(ck_ring and rk); RK_ACTOR_SPIN_US=%s\n",
        window, ring_size,
        getenv("RK_ACTOR_SPIN_US") ? getenv("RK_ACTOR_SPIN_US")
                                   : "unset (200)");
    printf("rk calls: timeout %s\n",
           opt.rk_timeout == RK_TIMEOUT_INFINITE
               ? "RK_TIMEOUT_INFINITE (--infinite-timeout)"
               : "10 s (every call computes a deadline)");
    printf(
        "rounds %ld, each measurement once per round in rotating "
        "order, %ld ms pause before each%s\n",
        opt.rounds, opt.cooldown,
        opt.quick ? "\n(--quick: smoke run, numbers are rough)" : "");
    if (others_pct >= 0) {
      printf(
          "CPU use during the timed rounds: this benchmark %.0f%%, other "
          "processes %.0f%%, stolen %.0f%%\n",
          self_pct, others_pct, steal_pct);
      if (others_pct + steal_pct > 5)
        printf(
            "warning: other processes or the hypervisor took more than "
            "5%% of the CPUs; rerun on a quiet machine\n");
    }
    printf("\n%-36s %-7s %9s %10s %10s %10s %10s %10s\n", "measurement", "unit",
           "ops/round", "median", "p10", "p90", "min", "max");
    for (int s = 0; s < S_NUM; ++s) {
      const series_t *x = &g_series[s];
      if (x->skipped) {
        printf("%-36s skipped (%s)\n", x->label, x->skipped);
        continue;
      }
      printf("%-36s %-7s %9ld %10.3f %10.3f %10.3f %10.3f %10.3f\n", x->label,
             x->rate ? "Mmsg/s" : "ns", x->ops, x->s.median, x->s.p10, x->s.p90,
             x->s.min, x->s.max);
    }
#ifndef RK_BENCH_HAVE_CK
    printf("ck_ring: skipped (%s)\n", kCkSkipped);
#endif
    printf("\n%-42s %9s   %s\n", "ratios", "of medians",
           "round by round: median (p10-p90)");
    for (int i = 0; i < kNumRatios; ++i) {
      const ratio_t *q = &g_ratios[i];
      if (!q->have) {
        printf("  %-40s %9s\n", q->label, "n/a");
        continue;
      }
      printf("  %-40s %9.3f   %.3f (%.3f-%.3f)\n", q->label, q->value,
             q->spread.median, q->spread.p10, q->spread.p90);
    }
    printf("\ntargets:\n");
    for (int i = 0; i < kNumRatios; ++i) {
      const ratio_t *q = &g_ratios[i];
      if (!q->target_dir) continue;
      if (!q->have) {
        printf("  %s %s %g: n/a (not measured)\n", q->label,
               q->target_dir < 0 ? "<=" : ">=", q->target);
        continue;
      }
      printf("  %s %s %g: %.3f  %s\n", q->label,
             q->target_dir < 0 ? "<=" : ">=", q->target, q->value,
             target_met(q) ? "PASS" : "MISS");
    }
    printf(
        "\nmulti-producer stage, lock-free CLAIM or LOCK (a winner only "
        "when the ratio stays\non one side of 1 in 80%% of the rounds):\n");
    for (int i = kNumRatios - 2; i < kNumRatios; ++i) {
      const ratio_t *q = &g_ratios[i];
      if (!q->have) continue;
      const char *verdict = q->spread.p10 > 1   ? "CLAIM is faster"
                            : q->spread.p90 < 1 ? "LOCK is faster"
                                                : "no clear winner";
      printf("  %-32s %s (CLAIM/LOCK %.3f, rounds %.3f-%.3f)\n",
             i == kNumRatios - 2 ? "streaming, with the consumer:"
                                 : "producers only:",
             verdict, q->value, q->spread.p10, q->spread.p90);
    }
    if (!g_series[S_MP_CLAIM].skipped)
      printf(
          "  streaming: producers found the ring full %llu times (CLAIM) / "
          "%llu (LOCK);\n  the consumer parked %llu / %llu times\n",
          (unsigned long long)mp_full[0], (unsigned long long)mp_full[1],
          (unsigned long long)mp_parks[0], (unsigned long long)mp_parks[1]);
    printf("\nactor stats after the run:\n");
    for (int m = 0; m < kRkSides; ++m)
      printf(
          "  %-11s sent %llu, processed %llu, dropped %llu, handler "
          "errors %llu; its own\n              latency samples: p50 %.0f ns, "
          "p99 %.0f ns (%llu samples)\n",
          kRkSideNames[m], (unsigned long long)st[m].sent,
          (unsigned long long)st[m].processed,
          (unsigned long long)st[m].dropped_sends,
          (unsigned long long)st[m].handler_errors, st[m].latency_p50_ns,
          st[m].latency_p99_ns, (unsigned long long)st[m].latency_samples);
  }
  if (saved_stdout >= 0) {
    fflush(stdout);
    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
  }

  /* Every response was checked as it came; the counters must agree. */
  for (int m = 0; m < kRkSides; ++m) {
    if (st[m].handler_errors || st[m].dropped_sends ||
        st[m].sent != st[m].processed)
      die("%s actor: sent %llu, processed %llu, dropped %llu, errors %llu",
          kRkSideNames[m], (unsigned long long)st[m].sent,
          (unsigned long long)st[m].processed,
          (unsigned long long)st[m].dropped_sends,
          (unsigned long long)st[m].handler_errors);
    RK_CHECK(rk_actor_terminate(b.rk[m]->actor, kTimeoutNs));
    rk_actor_destroy(b.rk[m]->actor);
    free(b.rk[m]->cids);
  }
  echo_destroy(echo);
  free(echo);
  mp_destroy(mp);
  free(mp);
  for (int s = 0; s < S_NUM; ++s) free(g_series[s].v);
  RK_CHECK(rk_context_destroy(ctx));
  RK_CHECK(rk_backend_destroy(be));
  return 0;
}
