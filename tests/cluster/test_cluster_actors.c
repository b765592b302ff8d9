/* Remote actors and the rest of the actor layer, across processes on this
 * machine (UCX_TLS=tcp): the test process is the hub and starts members with
 * fork+exec of itself (`--role clock|skew|names|victim`). It checks:
 *   - clocks: a remote request's stamp is merged into the owning process's
 *     clock and an answer's into the caller's, so that a message sent after
 *     a remote answer was received carries a later stamp (both ways); a
 *     stamp too far in the future is refused with RK_ERR_CLOCK_SKEW, a
 *     request by its owner and an answer by its caller, clocks unchanged;
 *   - names: exporting an actor by its registered name (and a registered
 *     actor under its own name); a name registered but not exported is not
 *     found remotely, and says so; destroying an exported actor withdraws
 *     the export (in the member and in the hub);
 *   - supervision: local actors linked to a remote handle (rk_cluster_link)
 *     when the member that owns it is killed mid-stream: an unsupervised one
 *     is FAILED naming the member, its own local link too, a supervised one
 *     restarts and answers again, an unlinked one is untouched, and one
 *     linked after the failure fails at once; a member that leaves is not a
 *     failure.
 * Exits 77 where UCX cannot be loaded. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actor/actor_internal.h"
#include "base/sys.h"
#include "cluster/cluster_internal.h"
#include "rk/actor_k2k.h"
#include "rk/cluster.h"
#include "rk/hlc.h"
#include "rk/registry.h"
#include "rk/supervisor.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

#define SEC 1000000000ull
#define MS 1000000ull

static const char kAddSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } imsg_t;\n"
    "RK_HANDLER int add_one(const imsg_t *in, imsg_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "  return in->v < 0 ? 7 : 0;\n"
    "}\n";
typedef struct {
  int v;
} imsg_t;

/* K2K: a stage passes tokens on through port 0; a sink counts them and
 * checks their order (a token from source 7 asks for the totals). */
static const char kK2kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t src, seq; int v; } tok_t;\n"
    "typedef struct { int r; int count, disorder, sum; } ack_t;\n"
    "typedef struct { int count, disorder, sum; uint32_t last[8]; } sink_t;\n"
    "RK_HANDLER int stage(const tok_t *in, ack_t *out) {\n"
    "  tok_t t;\n"
    "  t.src = in->src;\n"
    "  t.seq = in->seq;\n"
    "  t.v = in->v + 1;\n"
    "  int r = rk_send(0, &t);\n"
    "  out->r = r;\n"
    "  out->count = 0;\n"
    "  out->disorder = 0;\n"
    "  out->sum = 0;\n"
    "  return 0;\n"
    "}\n"
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
    "}\n";
typedef struct {
  uint32_t src, seq;
  int v;
} tok_t;
typedef struct {
  int r;
  int count, disorder, sum;
} ack_t;

static rk_context_t *g_ctx;
static const char *g_self;
static char g_addr[128];

static rk_context_t *cpu_context(void) {
  rk_backend_t *be;
  rk_context_t *ctx;
  if (rk_backend_open(RK_BACKEND_CPU, &be) != RK_OK ||
      rk_backend_create_context(be, 0, &ctx) != RK_OK) {
    printf("CPU backend: %s\n", rk_last_error());
    exit(1);
  }
  return ctx;
}

static rk_actor_t *launch(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  rk_actor_t *a = NULL;
  if (rk_actor_launch(g_ctx, kAddSource, "add_one", &o, &a) != RK_OK) {
    printf("launch: %s\n", rk_last_error());
    exit(1);
  }
  return a;
}

/* The wall clock as a timestamp, `ahead_ns` later. */
static uint64_t wall_plus(uint64_t ahead_ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return rk_hlc_pack(
      (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec + ahead_ns, 0);
}

static rk_cluster_t *member_join(const char *addr, const char *name) {
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.connect = addr;
  o.name = name;
  o.connect_timeout_ns = 10 * SEC;
  rk_cluster_t *c;
  if (rk_cluster_create(&o, &c) != RK_OK) {
    printf("join: %s\n", rk_last_error());
    exit(3);
  }
  return c;
}

static rk_remote_actor_t *find(rk_cluster_t *c, const char *name) {
  rk_remote_actor_t *h = NULL;
  const uint64_t end = rk__now_ns() + 20 * SEC;
  while (rk__now_ns() < end) {
    const rk_status_t s = rk_cluster_lookup(c, name, 5 * SEC, &h);
    if (s == RK_OK) return h;
    /* The member joins, then exports: retry until it has. */
    if (s != RK_ERR_NOT_FOUND && s != RK_ERR_UNAVAILABLE) break;
    usleep(20000);
  }
  printf("lookup %s: %s\n", name, rk_last_error());
  return NULL;
}

/* Waits until stdin closes (or the hub leaves), calling `on` per byte. */
static void serve(rk_cluster_t *c, void (*on)(char, void *), void *user) {
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    struct pollfd p = {.fd = 0, .events = POLLIN};
    if (poll(&p, 1, 20) > 0) {
      char b[16];
      const ssize_t n = read(0, b, sizeof b);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i)
        if (on) on(b[i], user);
    }
    if (rk_cluster_peer_count(c) == 0) break;
  }
}

#define EXPECT(cond, code, ...)           \
  do {                                    \
    if (!(cond)) {                        \
      printf("member: " __VA_ARGS__);     \
      printf(" (%s)\n", rk_last_error()); \
      fflush(stdout);                     \
      return code;                        \
    }                                     \
  } while (0)

/* ---- member roles ------------------------------------------------------- */

/* The hub's clock runs 2 s ahead (it accepts up to 60 s): an answer from it
 * moves this process's clock past its stamp, so that a later request to a
 * local actor is stamped later; then this clock jumps 20 s ahead and a
 * request carries that to the hub (which checks its own clock after). */
static int role_clock(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_hlc_set_max_skew(rk_hlc_host(), 60 * SEC);
  rk_actor_t *local = launch();
  rk_cluster_t *c = member_join(addr, name);
  rk_remote_actor_t *h = find(c, "hub/add");
  EXPECT(h, 10, "no hub/add");
  imsg_t q = {41}, r = {0};
  rk_actor_message_t info;
  EXPECT(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, &info) ==
                 RK_OK &&
             r.v == 42,
         11, "remote call");
  const uint64_t R = info.timestamp;
  EXPECT(R > wall_plus(SEC), 12, "the answer's stamp is not the hub's clock");
  EXPECT(rk_hlc_peek(rk_hlc_host()) >= R, 13,
         "the process clock did not take the answer's stamp");
  EXPECT(rk_actor_call(local, &q, sizeof q, &r, sizeof r, 10 * SEC, &info) ==
             RK_OK,
         14, "local call");
  EXPECT(info.timestamp > R, 15,
         "a local request after the remote answer is stamped earlier "
         "(%llu <= %llu)",
         (unsigned long long)info.timestamp, (unsigned long long)R);
  EXPECT(rk_hlc_update(rk_hlc_host(), wall_plus(20 * SEC), NULL) == RK_OK, 16,
         "clock jump");
  EXPECT(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, &info) ==
             RK_OK,
         17, "remote call after the jump");
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  rk_actor_destroy(local);
  return 0;
}

/* The hub's clock is 20 s ahead and its bound back to 500 ms. With this
 * process's default bound the hub's answer is refused (the clock
 * unchanged); with a bound of 60 s and a clock 40 s ahead, the hub refuses
 * the request. */
static int role_skew(const char *addr, const char *name) {
  rk_cluster_t *c = member_join(addr, name);
  rk_remote_actor_t *h = find(c, "hub/add");
  EXPECT(h, 10, "no hub/add");
  imsg_t q = {1}, r = {0};
  const uint64_t before = rk_hlc_peek(rk_hlc_host());
  rk_status_t s =
      rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL);
  EXPECT(s == RK_ERR_CLOCK_SKEW, 20, "an answer 20 s ahead: %s",
         rk_status_name(s));
  EXPECT(strstr(rk_last_error(), "too far ahead"), 21, "the reason");
  EXPECT(rk_hlc_peek(rk_hlc_host()) < wall_plus(SEC) &&
             rk_hlc_peek(rk_hlc_host()) >= before,
         22, "the clock moved towards a refused stamp");
  rk_hlc_set_max_skew(rk_hlc_host(), 60 * SEC);
  EXPECT(rk_hlc_update(rk_hlc_host(), wall_plus(40 * SEC), NULL) == RK_OK, 23,
         "clock jump");
  s = rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL);
  EXPECT(s == RK_ERR_CLOCK_SKEW, 24, "a request 40 s ahead: %s",
         rk_status_name(s));
  EXPECT(strstr(rk_last_error(), "on member 'hub'"), 25, "the owner's reason");
  EXPECT(rk_remote_actor_state(h) == RK_ACTOR_ACTIVE, 26, "the handle stays");
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  return 0;
}

static void names_cmd(char b, void *user) {
  rk_actor_t **doomed = user;
  if (b == 'x' && *doomed) {
    rk_actor_destroy(*doomed); /* exported: the export goes with it */
    *doomed = NULL;
  }
}

/* Exports by registered name; 'x' destroys reg/doomed. */
static int role_names(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch(), *hidden = launch(), *doomed = launch(),
             *unnamed = launch();
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_actor_register(add, "reg/add") == RK_OK, 30, "register");
  EXPECT(rk_actor_register(hidden, "reg/hidden") == RK_OK, 30, "register");
  EXPECT(rk_actor_register(doomed, "reg/doomed") == RK_OK, 30, "register");
  EXPECT(rk_cluster_export(c, NULL, "reg/add") == RK_OK, 31,
         "export by registered name");
  EXPECT(rk_cluster_export(c, doomed, NULL) == RK_OK, 32,
         "export under the registered name");
  EXPECT(rk_cluster_export(c, NULL, "reg/none") == RK_ERR_NOT_FOUND, 33,
         "export of a name nobody registered");
  EXPECT(rk_cluster_export(c, unnamed, NULL) == RK_ERR_NOT_FOUND, 34,
         "export of an unnamed actor without a name");
  serve(c, names_cmd, &doomed);
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  rk_actor_destroy(hidden);
  rk_actor_destroy(doomed);
  rk_actor_destroy(unnamed);
  return 0;
}

typedef struct sink_box {
  rk_cluster_t *c;
  rk_actor_t *sink;
  rk_actor_t *flag; /* exported as remote/sink-inbox-ok when it holds */
} sink_box_t;

/* 'k': the remote port's messages came through the sink's K2K inbox (one
 * sender wired in: the cluster's link; every token received there): says
 * so by exporting another actor as remote/sink-inbox-ok (the sink itself
 * cannot be exported twice). */
static void sink_cmd(char b, void *user) {
  sink_box_t *box = user;
  rk_actor_k2k_stats_t ks;
  if (b != 'k' || rk_actor_k2k_stats(box->sink, &ks) != RK_OK) return;
  printf(
      "  sink: K2K inbox: %u sender(s) in, %llu received, %llu queued of "
      "%llu\n",
      ks.senders_in, (unsigned long long)ks.received,
      (unsigned long long)ks.inbox_depth,
      (unsigned long long)ks.inbox_capacity);
  fflush(stdout);
  if (ks.senders_in == 1 && ks.received == 2000 && ks.received_errors == 0)
    (void)rk_cluster_export(box->c, box->flag, "remote/sink-inbox-ok");
}

static int role_sink(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false; /* exported first: remote ports reach its inbox */
  rk_actor_t *sink = NULL;
  EXPECT(rk_actor_launch(g_ctx, kK2kSource, "sink", &o, &sink) == RK_OK, 50,
         "launch sink");
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, sink, "remote/sink") == RK_OK, 51, "export");
  /* One name per actor: a second export would take the first one's
   * answers. */
  EXPECT(rk_cluster_export(c, sink, "remote/sink-again") ==
             RK_ERR_INVALID_ARGUMENT,
         53, "a second export of the sink is refused");
  EXPECT(rk_actor_activate(sink) == RK_OK, 52, "activate");
  sink_box_t box = {c, sink, launch()};
  serve(c, sink_cmd, &box);
  rk_cluster_destroy(c);
  rk_actor_destroy(sink);
  rk_actor_destroy(box.flag);
  return 0;
}

typedef struct proxy_box {
  rk_cluster_t *c;
  rk_actor_t *sink, *flag;
  uint64_t n; /* digits read so far */
} proxy_box_t;

/* "<n>k": exactly n messages came through the sink's K2K inbox, from one
 * sender (the cluster's link): says so by exporting px/inbox-ok. */
static void proxy_cmd(char b, void *user) {
  proxy_box_t *box = user;
  if (b >= '0' && b <= '9') {
    box->n = box->n * 10 + (uint64_t)(b - '0');
    return;
  }
  rk_actor_k2k_stats_t ks;
  if (b == 'k' && rk_actor_k2k_stats(box->sink, &ks) == RK_OK) {
    printf(
        "  px/sink: K2K inbox: %u sender(s) in, %llu received (%llu "
        "expected)\n",
        ks.senders_in, (unsigned long long)ks.received,
        (unsigned long long)box->n);
    fflush(stdout);
    if (ks.senders_in == 1 && ks.received == box->n && ks.received_errors == 0)
      (void)rk_cluster_export(box->c, box->flag, "px/inbox-ok");
  }
  box->n = 0;
}

/* Exports an add_one as px/add and a K2K sink as px/sink, the sink after
 * it ran and was deactivated (remote ports still reach its inbox), for the
 * proxies. */
static int role_proxy(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch();
  rk_actor_t *sink = NULL;
  EXPECT(rk_actor_launch(g_ctx, kK2kSource, "sink", NULL, &sink) == RK_OK, 60,
         "launch sink");
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, add, "px/add") == RK_OK, 61, "export add");
  EXPECT(rk_actor_deactivate(sink) == RK_OK, 62, "deactivate sink");
  EXPECT(rk_cluster_export(c, sink, "px/sink") == RK_OK, 63, "export sink");
  EXPECT(rk_actor_activate(sink) == RK_OK, 64, "activate sink");
  proxy_box_t box = {c, sink, launch(), 0};
  serve(c, proxy_cmd, &box);
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  rk_actor_destroy(sink);
  rk_actor_destroy(box.flag);
  return 0;
}

static int role_victim(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch();
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, add, "victim/add") == RK_OK, 40, "export");
  serve(c, NULL, NULL);
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  return 0;
}

/* A persistent actor whose handler spins for about in->v milliseconds,
 * and a traditional one (its handler runs on whichever thread turns the
 * member's worker), both exported. */
static const char kSpinSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } imsg_t;\n"
    "RK_HANDLER void spin(const imsg_t *in, imsg_t *out) {\n"
    "  uint32_t x = (uint32_t)in->v;\n"
    "  for (int i = 0; i < in->v * 1000000; ++i) x = x * 1664525u + "
    "1013904223u;\n"
    "  out->v = (int)(x & 0xffffu) + 1;\n"
    "}\n";

static int role_slow(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_t *spin = NULL, *add = NULL;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  EXPECT(rk_actor_launch(g_ctx, kSpinSource, "spin", &o, &spin) == RK_OK, 60,
         "launch spin");
  o.mode = RK_ACTOR_TRADITIONAL;
  EXPECT(rk_actor_launch(g_ctx, kAddSource, "add_one", &o, &add) == RK_OK, 61,
         "launch add");
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, spin, "slow/spin") == RK_OK &&
             rk_cluster_export(c, add, "slow/add") == RK_OK,
         62, "exports");
  serve(c, NULL, NULL);
  rk_cluster_destroy(c);
  rk_actor_destroy(spin);
  rk_actor_destroy(add);
  return 0;
}

/* An exported add_one under a supervisor that restarts it on every
 * handler error (fresh; up to 100 in a window). Exits 0 once stdin
 * closes if the actor restarted and every request the hub sent was
 * handled: `sent` and `processed` agree. */
static int role_restart(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch();
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  so.max_restarts = 100;
  EXPECT(rk_actor_supervise(add, &so) == RK_OK, 70, "supervise");
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, add, "restart/add") == RK_OK, 71, "export");
  serve(c, NULL, NULL);
  rk_actor_stats_t st;
  EXPECT(rk_actor_stats(add, &st) == RK_OK, 72, "stats");
  printf(
      "  restart/add: %llu restarts, sent %llu, processed %llu, %llu "
      "handler errors; %llu requests answered beside the rings\n",
      (unsigned long long)st.restarts, (unsigned long long)st.sent,
      (unsigned long long)st.processed, (unsigned long long)st.handler_errors,
      (unsigned long long)rk__cluster_direct(c, "restart/add"));
  fflush(stdout);
  EXPECT(st.restarts > 0, 73, "no restart");
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  return 0;
}

/* A stage whose port 0 goes to a local sink, both exported: the hub's
 * calls to the stage run its handler, and its sends, in the worker's turn
 * beside the rings (with two CPUs or more). Exits 0 once stdin closes if
 * some did (RK_CLUSTER_DIRECT=0: none). */
static int role_stage(const char *addr, const char *name) {
  g_ctx = cpu_context();
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  rk_actor_t *stage = NULL, *sink = NULL;
  EXPECT(rk_actor_launch(g_ctx, kK2kSource, "stage", &o, &stage) == RK_OK &&
             rk_actor_launch(g_ctx, kK2kSource, "sink", &o, &sink) == RK_OK,
         80, "launch");
  EXPECT(rk_actor_connect(stage, 0, sink) == RK_OK &&
             rk_actor_activate(sink) == RK_OK &&
             rk_actor_activate(stage) == RK_OK,
         81, "wire");
  rk_cluster_t *c = member_join(addr, name);
  EXPECT(rk_cluster_export(c, stage, "k2k/stage") == RK_OK &&
             rk_cluster_export(c, sink, "k2k/sink") == RK_OK,
         82, "export");
  serve(c, NULL, NULL);
  const uint64_t direct = rk__cluster_direct(c, "k2k/stage");
  printf("  k2k/stage: %llu calls answered beside the rings\n",
         (unsigned long long)direct);
  fflush(stdout);
  const char *off = getenv("RK_CLUSTER_DIRECT");
  int cpus[2];
  if (off && !strcmp(off, "0")) {
    EXPECT(direct == 0, 83, "RK_CLUSTER_DIRECT=0, yet some beside");
  } else if (rk__allowed_cpus(cpus, 2) >= 2 && !getenv("RK_ACTOR_SPIN_US")) {
    EXPECT(direct > 0, 84, "no call answered beside the rings");
  }
  rk_cluster_destroy(c);
  rk_actor_destroy(stage);
  rk_actor_destroy(sink);
  return 0;
}

/* ---- the hub's side ------------------------------------------------------ */

typedef struct child {
  pid_t pid;
  int in;
} child_t;

static child_t spawn(const char *role, const char *name) {
  int fds[2];
  child_t ch = {-1, -1};
  if (pipe(fds) != 0) return ch;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    execl(g_self, g_self, "--role", role, g_addr, name, (char *)NULL);
    _exit(127);
  }
  close(fds[0]);
  ch.pid = pid;
  ch.in = fds[1];
  return ch;
}

static int reap(child_t *ch, unsigned seconds) {
  if (ch->in >= 0) close(ch->in);
  ch->in = -1;
  const uint64_t end = rk__now_ns() + seconds * SEC;
  int st = 0;
  for (;;) {
    const pid_t r = waitpid(ch->pid, &st, WNOHANG);
    if (r == ch->pid) break;
    if (rk__now_ns() > end) {
      kill(ch->pid, SIGKILL);
      waitpid(ch->pid, &st, 0);
      return -1;
    }
    usleep(10000);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_clocks(void) {
  /* This process 2 s ahead: the member sees it in the answer. */
  rk_hlc_set_max_skew(rk_hlc_host(), 60 * SEC);
  CHECK_OK(rk_hlc_update(rk_hlc_host(), wall_plus(2 * SEC), NULL));
  child_t m = spawn("clock", "clock");
  int code = reap(&m, 60);
  CHECK(code == 0, "the clock member: exit %d", code);
  /* Its request, 20 s ahead, moved this process's clock. */
  CHECK(rk_hlc_peek(rk_hlc_host()) > wall_plus(15 * SEC),
        "the owner's clock took the request's stamp");
  rk_hlc_set_max_skew(rk_hlc_host(), RK_HLC_DEFAULT_MAX_SKEW_NS);
  m = spawn("skew", "skew");
  code = reap(&m, 60);
  CHECK(code == 0, "the skew member: exit %d", code);
  CHECK(rk_hlc_peek(rk_hlc_host()) < wall_plus(30 * SEC),
        "a refused request left the owner's clock alone");
}

static void test_names(rk_cluster_t *c) {
  /* Locally: an exported actor destroyed is unexported. */
  rk_actor_t *tmp = launch();
  CHECK_OK(rk_actor_register(tmp, "hub/tmp"));
  CHECK_OK(rk_cluster_export(c, tmp, NULL));
  CHECK_STATUS(rk_cluster_export(c, NULL, "hub/tmp"),
               RK_ERR_INVALID_ARGUMENT); /* exported already */
  rk_actor_destroy(tmp);
  CHECK_STATUS(rk_cluster_unexport(c, "hub/tmp"), RK_ERR_NOT_FOUND);

  child_t m = spawn("names", "names");
  rk_remote_actor_t *add = find(c, "reg/add");
  rk_remote_actor_t *doomed = find(c, "reg/doomed");
  CHECK(add && doomed, "exported by registered name");
  if (!add || !doomed) {
    reap(&m, 5);
    return;
  }
  imsg_t q = {5}, r = {0};
  CHECK_OK(
      rk_remote_actor_call(add, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL));
  CHECK(r.v == 6, "reg/add answers %d", r.v);
  rk_remote_actor_t *h = NULL;
  CHECK_STATUS(rk_cluster_lookup(c, "reg/hidden", 5 * SEC, &h),
               RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("registered as 'reg/hidden' but does not export it");
  CHECK_OK(
      rk_remote_actor_call(doomed, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL));
  /* Destroyed in the member: the export goes with it. */
  CHECK(write(m.in, "x", 1) == 1, "command");
  rk_status_t s = RK_OK;
  const uint64_t end = rk__now_ns() + 10 * SEC;
  while (rk__now_ns() < end) {
    s = rk_cluster_lookup(c, "reg/doomed", 5 * SEC, &h);
    if (s != RK_OK) break;
    rk_remote_actor_release(h);
    usleep(10000);
  }
  CHECK(s == RK_ERR_NOT_FOUND, "reg/doomed after its destruction: %s",
        rk_status_name(s));
  CHECK_STATUS(
      rk_remote_actor_call(doomed, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL),
      RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("no longer exported");
  /* A link to a member that leaves: not a failure. */
  rk_actor_t *quiet = launch();
  CHECK_OK(rk_cluster_link(add, quiet));
  CHECK_STATUS(rk_cluster_link(add, quiet), RK_ERR_ALREADY_EXISTS);
  const int code = reap(&m, 20);
  CHECK(code == 0, "the names member: exit %d", code);
  usleep(50000);
  CHECK(rk_remote_actor_state(add) == RK_ACTOR_TERMINATED, "left: %s",
        rk_actor_state_name(rk_remote_actor_state(add)));
  CHECK(rk_actor_state(quiet) == RK_ACTOR_ACTIVE,
        "linked to a member that left: %s",
        rk_actor_state_name(rk_actor_state(quiet)));
  rk_remote_actor_release(add);
  rk_remote_actor_release(doomed);
  rk_actor_destroy(quiet);
}

typedef struct streamer {
  rk_remote_actor_t *h;
  _Atomic uint32_t answered;
  _Atomic int last; /* rk_status_t */
} streamer_t;

static void *stream(void *arg) {
  streamer_t *s = arg;
  for (int i = 0;; ++i) {
    imsg_t q = {i & 0xffff}, r;
    const rk_status_t st =
        rk_remote_actor_call(s->h, &q, sizeof q, &r, sizeof r, 30 * SEC, NULL);
    if (st != RK_OK) {
      s->last = st;
      return NULL;
    }
    atomic_fetch_add(&s->answered, 1);
  }
}

static bool wait_state(rk_actor_t *a, rk_actor_state_t want) {
  const uint64_t end = rk__now_ns() + 5 * SEC;
  while (rk_actor_state(a) != want && rk__now_ns() < end) usleep(1000);
  return rk_actor_state(a) == want;
}

static void test_supervision(rk_cluster_t *c) {
  child_t v = spawn("victim", "victim");
  rk_remote_actor_t *h = find(c, "victim/add");
  CHECK(h != NULL, "victim/add");
  if (!h) {
    reap(&v, 5);
    return;
  }
  rk_actor_t *plain = launch(), *chained = launch(), *sup = launch(),
             *bystander = launch(), *late = launch();
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  CHECK_OK(rk_actor_supervise(sup, &so));
  CHECK_OK(rk_cluster_link(h, plain));
  CHECK_OK(rk_cluster_link(h, sup));
  CHECK_OK(rk_actor_link(plain, chained));
  CHECK_OK(rk_cluster_link(h, late));
  CHECK_OK(rk_cluster_unlink(h, late));
  CHECK_STATUS(rk_cluster_unlink(h, late), RK_ERR_NOT_FOUND);

  streamer_t s;
  memset(&s, 0, sizeof s);
  s.h = h;
  pthread_t t;
  pthread_create(&t, NULL, stream, &s);
  while (atomic_load(&s.answered) < 100 && s.last == RK_OK) usleep(1000);
  const uint64_t killed = rk__now_ns();
  kill(v.pid, SIGKILL);
  pthread_join(t, NULL);
  CHECK(s.last == RK_ERR_INVALID_STATE, "the stream: %s",
        rk_status_name((rk_status_t)s.last));
  CHECK(wait_state(plain, RK_ACTOR_FAILED), "linked, unsupervised: %s",
        rk_actor_state_name(rk_actor_state(plain)));
  printf("  killed after %u answers; the linked actor FAILED after %.3f s\n",
         atomic_load(&s.answered), (double)(rk__now_ns() - killed) / 1e9);
  imsg_t q = {1}, r = {0};
  CHECK_STATUS(rk_actor_call(plain, &q, sizeof q, &r, sizeof r, SEC, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("victim/add");
  CHECK_ERROR_HAS("victim");
  CHECK(wait_state(chained, RK_ACTOR_FAILED), "its local link: %s",
        rk_actor_state_name(rk_actor_state(chained)));
  /* The supervised one restarted and answers. */
  rk_actor_stats_t st;
  uint64_t end = rk__now_ns() + 5 * SEC;
  do {
    CHECK_OK(rk_actor_stats(sup, &st));
    if (st.restarts_by_cause[RK_ACTOR_FAULT_LINK] > 0) break;
    usleep(1000);
  } while (rk__now_ns() < end);
  CHECK(st.restarts_by_cause[RK_ACTOR_FAULT_LINK] == 1,
        "supervised: %llu restarts for the link",
        (unsigned long long)st.restarts_by_cause[RK_ACTOR_FAULT_LINK]);
  CHECK(rk_actor_state(sup) == RK_ACTOR_ACTIVE, "supervised: %s",
        rk_actor_state_name(rk_actor_state(sup)));
  CHECK_OK(rk_actor_call(sup, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL));
  CHECK(r.v == 2, "supervised answers %d", r.v);
  /* Unlinked ones are untouched; a link to a FAILED handle fails at once. */
  CHECK(rk_actor_state(bystander) == RK_ACTOR_ACTIVE, "bystander: %s",
        rk_actor_state_name(rk_actor_state(bystander)));
  CHECK(rk_actor_state(late) == RK_ACTOR_ACTIVE, "unlinked: %s",
        rk_actor_state_name(rk_actor_state(late)));
  CHECK_OK(rk_actor_stats(bystander, &st));
  CHECK(st.restarts == 0, "bystander restarts");
  CHECK_OK(rk_cluster_link(h, late));
  CHECK(wait_state(late, RK_ACTOR_FAILED), "linked after the failure: %s",
        rk_actor_state_name(rk_actor_state(late)));
  rk_remote_actor_release(h);
  reap(&v, 5);
  rk_actor_destroy(plain);
  rk_actor_destroy(chained);
  rk_actor_destroy(sup);
  rk_actor_destroy(bystander);
  rk_actor_destroy(late);
}

/* A local stage's port 0 wired to a sink in another process. */
static void test_remote_port(rk_cluster_t *c) {
  child_t m = spawn("sink", "sinker");
  rk_remote_actor_t *port = find(c, "remote/sink");
  rk_remote_actor_t *ask = find(c, "remote/sink");
  CHECK(port && ask, "remote/sink");
  if (!port || !ask) {
    reap(&m, 5);
    return;
  }
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  rk_actor_t *stage = NULL;
  if (!CHECK_OK(rk_actor_launch(g_ctx, kK2kSource, "stage", &o, &stage))) {
    reap(&m, 5);
    return;
  }
  CHECK_STATUS(rk_cluster_connect(stage, 3, port), RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_cluster_connect(stage, 0, port));
  /* One link per sender and receiver: the same remote actor through
   * another handle is the same receiver. */
  CHECK_STATUS(rk_cluster_connect(stage, 0, ask), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("port 0 of 'stage' is already connected to 'remote/sink'");
  CHECK_OK(rk_actor_activate(stage));
  CHECK_STATUS(rk_cluster_connect(stage, 0, ask), RK_ERR_INVALID_STATE);
  enum { N = 2000 };
  int full = 0, bad = 0, sum = 0;
  const uint64_t give_up = rk__now_ns() + 20 * SEC;
  for (uint32_t i = 1; i <= N && rk__now_ns() < give_up; ++i) {
    tok_t q = {1, i, (int)i};
    ack_t r = {.r = 1};
    while (rk__now_ns() < give_up) {
      if (rk_actor_call(stage, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL) !=
          RK_OK) {
        bad++;
        break;
      }
      if (r.r != 1) break; /* RK_SEND_FULL: try again */
      full++;
      usleep(100);
    }
    if (r.r != 0) bad++;
    sum += (int)i + 1;
  }
  CHECK(bad == 0, "%d sends not queued", bad);
  ack_t r = {0};
  const uint64_t end = rk__now_ns() + 10 * SEC;
  do {
    tok_t q = {7, 0, 0};
    if (!CHECK_OK(rk_remote_actor_call(ask, &q, sizeof q, &r, sizeof r,
                                       10 * SEC, NULL)))
      break;
    if (r.count >= N) break;
    usleep(1000);
  } while (rk__now_ns() < end);
  printf(
      "  remote port: %d messages handled in the other process (%d sends "
      "found the port full)\n",
      r.count, full);
  CHECK(r.count == N, "the remote sink handled %d of %d", r.count, N);
  CHECK(r.disorder == 0, "%d out of order", r.disorder);
  CHECK(r.sum == sum, "sum %d, expected %d", r.sum, sum);
  rk_actor_k2k_stats_t ks;
  CHECK_OK(rk_actor_k2k_stats(stage, &ks));
  CHECK(ks.sent == N && ks.links_out == 1, "stage stats: sent %llu, links %u",
        (unsigned long long)ks.sent, ks.links_out);
  /* They reached the sink's K2K inbox (its input ring took only `ask`). */
  CHECK(write(m.in, "k", 1) == 1, "command");
  rk_remote_actor_t *ok = find(c, "remote/sink-inbox-ok");
  CHECK(ok != NULL, "the tokens came through the sink's K2K inbox");
  rk_remote_actor_release(ok);
  /* A burst: pipelined sends to the stage, so that its port's messages
   * reach the other process back to back (sender 2, so that the gaps of
   * the sends that found the port full are not counted as disorder). The
   * owner returns their window room in fewer answers than messages, and
   * for each message exactly once. */
  enum { B = 4000, W = 64 };
  int queued = 0, burst_bad = 0;
  {
    int in_flight = 0;
    for (uint32_t i = 1;
         (i <= B || in_flight) && rk__now_ns() < give_up + 30 * SEC;) {
      if (i <= B && in_flight < W) {
        tok_t q = {2, i, 0};
        if (rk_actor_send(stage, &q, sizeof q, 10 * SEC, NULL) != RK_OK)
          burst_bad++;
        else
          in_flight++;
        ++i;
        continue;
      }
      ack_t a;
      if (rk_actor_receive(stage, &a, sizeof a, 10 * SEC, NULL) != RK_OK) {
        burst_bad++;
        break;
      }
      in_flight--;
      queued += a.r == 0;
    }
  }
  CHECK(burst_bad == 0 && queued > 0, "burst: %d failed, %d queued", burst_bad,
        queued);
  const uint64_t end_burst = rk__now_ns() + 20 * SEC;
  do {
    tok_t q = {7, 0, 0};
    if (!CHECK_OK(rk_remote_actor_call(ask, &q, sizeof q, &r, sizeof r,
                                       10 * SEC, NULL)))
      break;
    if (r.count >= N + queued) break;
    usleep(1000);
  } while (rk__now_ns() < end_burst);
  if (!CHECK(r.count == N + queued, "the remote sink handled %d of %d", r.count,
             N + queued))
    CHECK(write(m.in, "k", 1) == 1, "command"); /* its K2K counts */
  uint64_t answers = 0, credited = 0;
  do {
    rk__remote_actor_credits(port, &answers, &credited);
    if (credited >= (uint64_t)(N + queued)) break;
    usleep(1000);
  } while (rk__now_ns() < end_burst);
  printf(
      "  remote port: window room for %llu messages came back in %llu "
      "answers (%d of them in a burst of %d)\n",
      (unsigned long long)credited, (unsigned long long)answers, queued, B);
  CHECK(credited == (uint64_t)(N + queued),
        "window room returned for %llu of %d messages",
        (unsigned long long)credited, N + queued);
  CHECK(answers < credited, "%llu answers for %llu messages: none batched",
        (unsigned long long)answers, (unsigned long long)credited);
  /* The member killed: the port answers RK_SEND_UNCONNECTED. */
  kill(m.pid, SIGKILL);
  int unconnected = 0;
  const uint64_t end2 = rk__now_ns() + 10 * SEC;
  for (uint32_t i = N + 1; !unconnected && rk__now_ns() < end2; ++i) {
    tok_t q = {1, i, 0};
    ack_t a;
    if (rk_actor_call(stage, &q, sizeof q, &a, sizeof a, 10 * SEC, NULL) ==
            RK_OK &&
        a.r == 2)
      unconnected = 1;
    else
      usleep(1000);
  }
  CHECK(unconnected, "the port is unconnected once the member is gone");
  rk_actor_destroy(stage);
  rk_remote_actor_release(port);
  rk_remote_actor_release(ask);
  reap(&m, 5);
}

/* A persistent exported actor's worker drives its member's transport;
 * while its handler runs for long it turns nothing, and the member's
 * progress thread must take over: a call to another actor of that member
 * is answered while the long one still runs. */
static void test_long_handler(rk_cluster_t *c) {
  child_t m = spawn("slow", "slow");
  rk_remote_actor_t *spin = find(c, "slow/spin");
  rk_remote_actor_t *add = find(c, "slow/add");
  CHECK(spin && add, "slow/spin and slow/add");
  if (spin && add) {
    /* Warm: both answer (the spin's module compiled). */
    imsg_t q = {1}, r = {0};
    CHECK_OK(
        rk_remote_actor_call(spin, &q, sizeof q, &r, sizeof r, 30 * SEC, NULL));
    q.v = 1;
    CHECK_OK(
        rk_remote_actor_call(add, &q, sizeof q, &r, sizeof r, 30 * SEC, NULL));
    /* About 600 ms of spinning, then a call to the other actor. */
    q.v = 600;
    CHECK_OK(rk_remote_actor_send(spin, &q, sizeof q, 5 * SEC, NULL));
    usleep(30000);
    q.v = 41;
    const uint64_t t0 = rk__now_ns();
    CHECK_OK(
        rk_remote_actor_call(add, &q, sizeof q, &r, sizeof r, 30 * SEC, NULL));
    const uint64_t took = rk__now_ns() - t0;
    CHECK(r.v == 42, "slow/add answered %d", r.v);
    imsg_t late;
    const rk_status_t s =
        rk_remote_actor_receive(spin, &late, sizeof late, 0, NULL);
    printf("  a call beside a 600 ms handler: answered in %.1f ms\n",
           (double)took / 1e6);
    CHECK(s == RK_ERR_QUEUE_EMPTY,
          "the call (%.1f ms) was answered only after the long handler "
          "(receive: %s)",
          (double)took / 1e6, rk_status_name(s));
    CHECK_OK(rk_remote_actor_receive(spin, &late, sizeof late, 30 * SEC, NULL));
  }
  rk_remote_actor_release(spin);
  rk_remote_actor_release(add);
  reap(&m, 10);
}

/* Calls to an exported actor that its supervisor restarts on each handler
 * error (every 25th request fails, then a pause the supervisor's look
 * falls in), one at a time and in windows of eight sends (the sixth
 * fails): every request answered exactly once, the failing ones with
 * RK_ERR_HANDLER and the handler's code, the others right, whether its
 * worker answered them beside the rings or through them, before, during
 * or after a restart. */
static void test_restart_under_calls(rk_cluster_t *c) {
  child_t m = spawn("restart", "restart");
  rk_remote_actor_t *h = find(c, "restart/add");
  CHECK(h != NULL, "restart/add");
  int bad = 0, failed = 0;
  if (h) {
    for (int i = 1; i <= 400; ++i) {
      const int v = i % 25 == 0 ? -i : i;
      imsg_t q = {v}, r = {0};
      rk_actor_message_t info;
      const rk_status_t s =
          rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, &info);
      if (v < 0 && s == RK_ERR_HANDLER && info.handler_code == 7 &&
          r.v == v + 1)
        ++failed;
      else if (v < 0 || s != RK_OK || r.v != v + 1)
        ++bad;
      /* The supervisor looks every millisecond: the calls after a failing
       * one meet its restart. */
      if (v < 0) usleep(1500);
    }
    /* Windows of sends, then their answers in order. */
    for (int round = 0; round < 20; ++round) {
      uint64_t ids[8];
      for (int k = 0; k < 8; ++k) {
        const int v = k == 5 ? -(round * 8 + k + 1) : round * 8 + k + 1;
        imsg_t q = {v};
        if (rk_remote_actor_send(h, &q, sizeof q, 10 * SEC, &ids[k]) != RK_OK)
          ++bad;
      }
      for (int k = 0; k < 8; ++k) {
        const int v = k == 5 ? -(round * 8 + k + 1) : round * 8 + k + 1;
        imsg_t r = {0};
        rk_actor_message_t info;
        const rk_status_t s =
            rk_remote_actor_receive(h, &r, sizeof r, 10 * SEC, &info);
        if (info.correlation_id != ids[k] || r.v != v + 1 ||
            s != (v < 0 ? RK_ERR_HANDLER : RK_OK))
          ++bad;
        else if (v < 0)
          ++failed;
      }
      usleep(1500);
    }
  }
  CHECK(bad == 0 && failed == 16 + 20,
        "calls and sends beside restarts: %d wrong, %d handler errors "
        "(expected 36)",
        bad, failed);
  rk_remote_actor_release(h);
  CHECK(reap(&m, 20) == 0, "the restarting member exits cleanly");
}

/* Remote calls to a stage whose handler sends each token on to a sink of
 * its member (K2K): every token reaches the sink once and in order, the
 * stage's sends seeing RK_SEND_FULL only as a result (that token sent
 * again), whether the stage's handler ran beside its rings or not. */
static void test_remote_stage(rk_cluster_t *c) {
  child_t m = spawn("stage", "stage");
  rk_remote_actor_t *st = find(c, "k2k/stage");
  rk_remote_actor_t *sk = find(c, "k2k/sink");
  CHECK(st && sk, "k2k/stage and k2k/sink");
  enum { kTokens = 1000 };
  int bad = 0, full = 0, sum = 0;
  ack_t a = {0};
  if (st && sk) {
    for (uint32_t i = 1; i <= kTokens && bad == 0;) {
      tok_t q = {1, i, (int)i};
      if (rk_remote_actor_call(st, &q, sizeof q, &a, sizeof a, 10 * SEC,
                               NULL) != RK_OK) {
        ++bad;
      } else if (a.r == 1) {
        ++full; /* RK_SEND_FULL: nothing queued, the same token again */
        usleep(100);
      } else if (a.r != 0) {
        ++bad;
      } else {
        sum += (int)i + 1;
        ++i;
      }
    }
    /* The totals, once the sink has taken what is in its inbox. */
    const uint64_t end = rk__now_ns() + 10 * SEC;
    do {
      tok_t q = {7, 0, 0};
      if (rk_remote_actor_call(sk, &q, sizeof q, &a, sizeof a, 10 * SEC,
                               NULL) != RK_OK)
        ++bad;
      if (a.count >= kTokens) break;
      usleep(1000);
    } while (rk__now_ns() < end && bad == 0);
  }
  printf(
      "  remote stage: %d tokens through its port (%d sends found it "
      "full); the sink counted %d, %d out of order\n",
      kTokens, full, a.count, a.disorder);
  CHECK(bad == 0 && a.count == kTokens && a.disorder == 0 && a.sum == sum,
        "remote stage: %d failed calls, the sink counted %d of %d (%d out of "
        "order, sum %d of %d)",
        bad, a.count, kTokens, a.disorder, a.sum, sum);
  rk_remote_actor_release(st);
  rk_remote_actor_release(sk);
  CHECK(reap(&m, 20) == 0, "the stage's member exits cleanly");
}

/* rk_cluster_lookup_actor, retried while the member joins and exports. */
static rk_actor_t *find_actor(rk_cluster_t *c, const char *name) {
  rk_actor_t *a = NULL;
  const uint64_t end = rk__now_ns() + 20 * SEC;
  while (rk__now_ns() < end) {
    const rk_status_t s = rk_cluster_lookup_actor(c, name, 5 * SEC, &a);
    if (s == RK_OK) return a;
    if (s != RK_ERR_NOT_FOUND && s != RK_ERR_UNAVAILABLE) break;
    usleep(20000);
  }
  printf("lookup %s: %s\n", name, rk_last_error());
  return NULL;
}

/* What only the owner may do is refused on a proxy, naming the actor and
 * its member. */
#define CHECK_REFUSED(call)                                      \
  do {                                                           \
    CHECK_STATUS((call), RK_ERR_UNIMPLEMENTED);                  \
    CHECK_ERROR_HAS("'px/add' is a remote actor (member 'px')"); \
  } while (0)

enum { kOtherSends = 200 };
typedef struct sender {
  rk_actor_t *a;
  int failed;
} sender_t;

/* Plain sends on a proxy from a thread of its own (values 5000 on). */
static void *send_some(void *arg) {
  sender_t *s = arg;
  for (int i = 0; i < kOtherSends; ++i) {
    imsg_t q = {5000 + i};
    if (rk_actor_send(s->a, &q, sizeof q, 10 * SEC, NULL) != RK_OK) ++s->failed;
  }
  return NULL;
}

typedef struct blocked {
  rk_actor_t *a;
  rk_status_t s;
  char error[256];
  uint64_t took_ns;
} blocked_t;

/* A receive with nothing to receive, until the proxy goes. */
static void *receive_blocked(void *arg) {
  blocked_t *b = arg;
  imsg_t r;
  const uint64_t t0 = rk__now_ns();
  b->s = rk_actor_receive(b->a, &r, sizeof r, 30 * SEC, NULL);
  b->took_ns = rk__now_ns() - t0;
  snprintf(b->error, sizeof b->error, "%s", rk_last_error());
  return NULL;
}

/* The remote actor through rk/actor.h's own functions: a proxy. */
static void test_proxy(rk_cluster_t *c) {
  rk_actor_t *none = (rk_actor_t *)&none;
  CHECK_STATUS(rk_cluster_lookup_actor(c, "px/add", SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);
  child_t m = spawn("proxy", "px");
  rk_actor_t *add = find_actor(c, "px/add");
  CHECK(add != NULL, "px/add as an rk_actor_t");
  if (!add) {
    reap(&m, 5);
    return;
  }
  CHECK_STATUS(rk_cluster_lookup_actor(c, "px/none", 5 * SEC, &none),
               RK_ERR_NOT_FOUND);
  CHECK(none == (rk_actor_t *)&none, "a failed lookup leaves out_actor");
  CHECK(rk_actor_remote(add) != NULL, "a proxy has a remote handle");
  rk_actor_t *local = launch();
  CHECK(rk_actor_remote(local) == NULL, "a local actor has none");
  CHECK(rk_actor_state(add) == RK_ACTOR_ACTIVE, "state %s",
        rk_actor_state_name(rk_actor_state(add)));

  /* Calls: answers, handler errors, bad sizes. */
  imsg_t q = {5}, r = {0};
  rk_actor_message_t info;
  CHECK_OK(rk_actor_call(add, &q, sizeof q, &r, sizeof r, 10 * SEC, &info));
  CHECK(r.v == 6 && info.correlation_id != 0 && info.status == RK_OK,
        "call: %d, id %llu", r.v, (unsigned long long)info.correlation_id);
  q.v = -3;
  CHECK_STATUS(rk_actor_call(add, &q, sizeof q, &r, sizeof r, 10 * SEC, &info),
               RK_ERR_HANDLER);
  CHECK(r.v == -2 && info.handler_code == 7, "handler error: %d, code %d", r.v,
        (int)info.handler_code);
  CHECK_STATUS(rk_actor_call(add, &q, 2, &r, sizeof r, SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_call(add, &q, sizeof q, &r, 2, SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_actor_send(add, NULL, sizeof q, SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);

  /* Sends and receives, in order, each answer with its id. */
  uint64_t ids[16];
  for (int i = 0; i < 10; ++i) {
    q.v = 100 + i;
    CHECK_OK(rk_actor_send(add, &q, sizeof q, 10 * SEC, &ids[i]));
  }
  for (int i = 0; i < 10; ++i) {
    CHECK_OK(rk_actor_receive(add, &r, sizeof r, 10 * SEC, &info));
    CHECK(r.v == 101 + i && info.correlation_id == ids[i],
          "receive %d: %d, id %llu (sent %llu)", i, r.v,
          (unsigned long long)info.correlation_id, (unsigned long long)ids[i]);
  }
  CHECK_STATUS(rk_actor_receive(add, &r, sizeof r, 0, NULL),
               RK_ERR_QUEUE_EMPTY);

  /* Batches: consecutive ids, every answer once, in order. */
  enum { kN = 40 };
  imsg_t qs[kN], rs[64];
  rk_actor_message_t infos[64];
  for (int i = 0; i < kN; ++i) qs[i].v = 1000 + i;
  size_t sent = 0;
  uint64_t first = 0;
  CHECK_OK(
      rk_actor_send_batch(add, qs, sizeof qs[0], kN, 10 * SEC, &sent, &first));
  CHECK(sent == kN && first != 0, "send_batch: %zu sent, first id %llu", sent,
        (unsigned long long)first);
  int got = 0, wrong = 0;
  while (got < kN) {
    size_t n = 0;
    if (!CHECK_OK(rk_actor_receive_batch(add, rs, sizeof rs, 64, 10 * SEC,
                                         infos, &n)))
      break;
    for (size_t i = 0; i < n; ++i, ++got)
      if (rs[i].v != 1001 + got ||
          infos[i].correlation_id != first + (uint64_t)got ||
          infos[i].status != RK_OK)
        ++wrong;
  }
  CHECK(got == kN && wrong == 0, "receive_batch: %d answers, %d wrong", got,
        wrong);

  /* A batch while another thread sends on the same proxy: its ids are
   * still consecutive, and every answer comes once. */
  sender_t other = {add, 0};
  pthread_t t;
  pthread_create(&t, NULL, send_some, &other);
  for (int i = 0; i < kN; ++i) qs[i].v = 3000 + i;
  CHECK_OK(
      rk_actor_send_batch(add, qs, sizeof qs[0], kN, 10 * SEC, &sent, &first));
  pthread_join(t, NULL);
  CHECK(other.failed == 0, "the other thread's sends: %d failed", other.failed);
  int batch = 0, others = 0;
  wrong = 0;
  while (batch + others < kN + kOtherSends) {
    size_t k = 0;
    if (!CHECK_OK(rk_actor_receive_batch(add, rs, sizeof rs, 64, 10 * SEC,
                                         infos, &k)))
      break;
    for (size_t i = 0; i < k; ++i) {
      const uint64_t id = infos[i].correlation_id;
      if (rs[i].v > 3000 && rs[i].v <= 3000 + kN) {
        /* One of the batch's: its id is first + its place. */
        if (id != first + (uint64_t)(rs[i].v - 3001)) ++wrong;
        ++batch;
      } else {
        if (id >= first && id < first + kN) ++wrong;
        ++others;
      }
    }
  }
  CHECK(batch == kN && others == kOtherSends && wrong == 0,
        "a batch beside another sender: %d of its answers, %d others, %d "
        "with a wrong id",
        batch, others, wrong);

  /* Stats: the proxy's own counts. */
  rk_actor_stats_t st;
  q.v = -3; /* the handler fails them */
  for (int i = 0; i < 3; ++i)
    CHECK_OK(rk_actor_send(add, &q, sizeof q, 10 * SEC, NULL));
  const uint64_t end = rk__now_ns() + 10 * SEC;
  do {
    CHECK_OK(rk_actor_stats(add, &st));
  } while (st.output_depth < 3 && rk__now_ns() < end && usleep(1000) == 0);
  CHECK(st.execution == RK_ACTOR_EXEC_REMOTE && st.state == RK_ACTOR_ACTIVE,
        "stats: %s, %s", rk_actor_execution_name(st.execution),
        rk_actor_state_name(st.state));
  CHECK(st.sent == 2 + 10 + 2 * kN + kOtherSends + 3 && st.output_depth == 3 &&
            st.request_size == sizeof(imsg_t) &&
            st.response_size == sizeof(imsg_t) && st.input_capacity > 0,
        "stats: sent %llu, %llu waiting, sizes %zu/%zu, window %llu",
        (unsigned long long)st.sent, (unsigned long long)st.output_depth,
        st.request_size, st.response_size,
        (unsigned long long)st.input_capacity);
  size_t n = 0;
  CHECK_OK(rk_actor_receive_batch(add, rs, sizeof rs, 64, 10 * SEC, infos, &n));
  CHECK(n == 3 && infos[0].status == RK_ERR_HANDLER &&
            infos[2].handler_code == 7 && rs[2].v == -2,
        "three waiting, handler errors in their details: %zu, %s", n,
        rk_status_name(infos[0].status));

  /* Its name is the exported one. */
  char name[64];
  CHECK_OK(rk_actor_name(add, name, sizeof name));
  CHECK(strcmp(name, "px/add") == 0, "name %s", name);
  CHECK_STATUS(rk_actor_name(add, name, 3), RK_ERR_OUT_OF_RANGE);

  /* The owner's business. */
  rk_actor_loan_t loan;
  rk_actor_k2k_stats_t ks;
  uint32_t port;
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  CHECK_REFUSED(rk_actor_activate(add));
  CHECK_ERROR_HAS("only its own process changes its state");
  CHECK_REFUSED(rk_actor_deactivate(add));
  CHECK_REFUSED(rk_actor_terminate(add, SEC));
  CHECK_REFUSED(rk_actor_receive_lend(add, 4, SEC, &loan));
  CHECK_ERROR_HAS("rk_actor_receive_batch");
  CHECK_REFUSED(rk_actor_register(add, "px/local-name"));
  CHECK_REFUSED(rk_actor_unregister(add));
  CHECK_REFUSED(rk_actor_supervise(add, &so));
  CHECK_REFUSED(rk_actor_port(add, "NEXT", &port));
  CHECK_REFUSED(rk_actor_k2k_stats(add, &ks));
  CHECK_REFUSED(rk_actor_connect(add, 0, local));
  CHECK_REFUSED(rk_actor_disconnect(local, 0, add));
  CHECK_REFUSED(rk_cluster_export(c, add, "px/again"));
  CHECK_REFUSED(rk_cluster_link(rk_actor_remote(add), add));
  CHECK(rk_actor_state(add) == RK_ACTOR_ACTIVE, "still active: %s",
        rk_actor_state_name(rk_actor_state(add)));

  /* A local port wired to the remote sink: rk_actor_connect. */
  rk_actor_t *stage = NULL;
  CHECK_OK(rk_actor_launch(g_ctx, kK2kSource, "stage", NULL, &stage));
  rk_actor_t *sinkport = find_actor(c, "px/sink");
  rk_actor_t *sinkq = find_actor(c, "px/sink");
  CHECK(sinkport && sinkq, "px/sink twice");
  enum { kTokens = 200 };
  if (stage && sinkport && sinkq) {
    /* Wired as a local port is: while the sender is not active. */
    CHECK_STATUS(rk_actor_connect(stage, 0, sinkport), RK_ERR_INVALID_STATE);
    CHECK_ERROR_HAS("deactivate it first");
    CHECK_OK(rk_actor_deactivate(stage));
    CHECK_OK(rk_actor_connect(stage, 0, sinkport));
    CHECK_OK(rk_actor_activate(stage));
    int sum = 0, refused = 0;
    for (uint32_t i = 1; i <= kTokens; ++i) {
      tok_t t = {1, i, (int)i};
      ack_t a;
      if (!CHECK_OK(
              rk_actor_call(stage, &t, sizeof t, &a, sizeof a, 10 * SEC, NULL)))
        break;
      /* RK_SEND_FULL when the port's bridge is full: that token is not
       * sent (and the sink sees a gap in the sequence). */
      if (a.r != 0) {
        ++refused;
        usleep(1000);
      } else {
        sum += (int)i + 1;
      }
    }
    /* Every token the port took arrives once, in order. */
    tok_t ask = {7, 0, 0};
    ack_t a = {0, 0, 0, 0};
    const uint64_t until = rk__now_ns() + 10 * SEC;
    do {
      CHECK_OK(
          rk_actor_call(sinkq, &ask, sizeof ask, &a, sizeof a, 10 * SEC, NULL));
    } while (a.count < kTokens - refused && rk__now_ns() < until &&
             usleep(2000) == 0);
    printf(
        "  through the proxy's port: %d tokens arrived of %d (%d "
        "refused as full)\n",
        a.count, kTokens, refused);
    CHECK(a.count == kTokens - refused && a.sum == sum,
          "the sink took %d tokens (sum %d, expected %d)", a.count, a.sum, sum);
    /* A refused token leaves a gap, which the sink counts as disorder. */
    CHECK(a.disorder <= refused, "%d out of order", a.disorder);
    /* Exported after it ran (deactivated meanwhile), the sink took them
     * in its K2K inbox, not its input ring. */
    char cmd[32];
    const int len = snprintf(cmd, sizeof cmd, "%dk", a.count);
    CHECK(write(m.in, cmd, (size_t)len) == len, "command");
    rk_actor_t *ok = find_actor(c, "px/inbox-ok");
    CHECK(ok != NULL, "the port's messages came through px/sink's K2K inbox");
    rk_actor_destroy(ok);
  }
  rk_actor_destroy(stage);

  /* Destroyed while a thread waits on it: the thread wakes with
   * RK_ERR_INVALID_STATE, and the proxy is freed after it has left (as a
   * local actor's destroy does; ASan checks the order). */
  blocked_t b = {find_actor(c, "px/add"), RK_OK, "", 0};
  CHECK(b.a != NULL, "a third proxy");
  if (b.a) {
    pthread_t bt;
    pthread_create(&bt, NULL, receive_blocked, &b);
    /* In the proxy's receive (counted) before it is destroyed: a thread
     * that comes to a proxy after its destroy began uses freed memory, as
     * with a local actor. */
    while (rk__actor_waiting(b.a) == 0) usleep(1000);
    usleep(20000);
    rk_actor_destroy(b.a);
    pthread_join(bt, NULL);
    CHECK(b.s == RK_ERR_INVALID_STATE && strstr(b.error, "proxy was destroyed"),
          "a receive blocked on a destroyed proxy: %s (%s)",
          rk_status_name(b.s), b.error);
    CHECK(b.took_ns < 10 * SEC, "it woke after %.3f s", b.took_ns / 1e9);
  }

  /* Links through the proxy: the member killed, the linked local actor
   * fails; calls on the proxy fail at once. */
  CHECK_OK(rk_actor_link(local, add));
  CHECK_STATUS(rk_actor_link(add, local), RK_ERR_ALREADY_EXISTS);
  CHECK_OK(rk_actor_unlink(add, local));
  CHECK_STATUS(rk_actor_unlink(local, add), RK_ERR_NOT_FOUND);
  CHECK_OK(rk_actor_link(add, local));
  kill(m.pid, SIGKILL);
  CHECK(wait_state(add, RK_ACTOR_FAILED),
        "the proxy after its member died: "
        "%s",
        rk_actor_state_name(rk_actor_state(add)));
  CHECK(wait_state(local, RK_ACTOR_FAILED), "linked to it: %s",
        rk_actor_state_name(rk_actor_state(local)));
  q.v = 1;
  CHECK_STATUS(rk_actor_call(add, &q, sizeof q, &r, sizeof r, SEC, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("px");
  reap(&m, 5);
  rk_actor_destroy(add);
  rk_actor_destroy(sinkport);
  /* sinkq is left to rk_cluster_destroy, which frees the proxies of its
   * handles (a leak under LeakSanitizer otherwise). */
  rk_actor_destroy(local);
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "--role")) {
    if (!strcmp(argv[2], "slow")) return role_slow(argv[3], argv[4]);
    if (!strcmp(argv[2], "clock")) return role_clock(argv[3], argv[4]);
    if (!strcmp(argv[2], "skew")) return role_skew(argv[3], argv[4]);
    if (!strcmp(argv[2], "names")) return role_names(argv[3], argv[4]);
    if (!strcmp(argv[2], "victim")) return role_victim(argv[3], argv[4]);
    if (!strcmp(argv[2], "sink")) return role_sink(argv[3], argv[4]);
    if (!strcmp(argv[2], "proxy")) return role_proxy(argv[3], argv[4]);
    if (!strcmp(argv[2], "restart")) return role_restart(argv[3], argv[4]);
    if (!strcmp(argv[2], "stage")) return role_stage(argv[3], argv[4]);
    return 2;
  }
  const char *version;
  if (rk_cluster_available(&version) != RK_OK)
    RK_TEST_SKIP("%s", rk_last_error());
  static char self[4096];
  g_self = rk__executable_path(self, sizeof self) ? self : argv[0];
  rk_test_use_temp_cache(); /* inherited by the members: one compile each */
  g_ctx = cpu_context();
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.listen = "127.0.0.1:0";
  o.name = "hub";
  o.token = "";
  setenv("RK_CLUSTER_TOKEN", "", 1);
  rk_cluster_t *c;
  if (!CHECK_OK(rk_cluster_create(&o, &c))) return rk_test_finish("cluster");
  CHECK_OK(rk_cluster_address(c, g_addr, sizeof g_addr));
  rk_actor_t *add = launch();
  CHECK_OK(rk_cluster_export(c, add, "hub/add"));
  test_names(c);
  test_supervision(c);
  test_remote_port(c);
  test_long_handler(c);
  test_restart_under_calls(c);
  test_remote_stage(c);
  test_proxy(c);
  test_clocks(); /* last: it moves this process's clock ahead */
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  return rk_test_finish("cluster_actors");
}
