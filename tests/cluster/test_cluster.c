/* rk clusters across processes on this machine, over the UCX transports
 * named by UCX_TLS (the ctest entries run it over shared memory and over
 * TCP loopback). The test process is the hub; it starts members with
 * fork+exec of itself (`--role owner|caller|join`) and checks:
 *   - remote call, send and receive: correlation, handler errors, clocks,
 *     the send window, a refused request size;
 *   - a large payload (rendezvous) both ways;
 *   - a stream of sequence-numbered messages: none lost, none duplicated,
 *     in order;
 *   - a member calling an actor the hub exports;
 *   - lookup errors: a name nobody exports, a member that never answers;
 *   - a member killed mid-stream: its actors FAILED, waiters woken within
 *     a bound, sends refused at once, nothing answered twice;
 *   - a member that left: its actors TERMINATED;
 *   - requests refused by a deactivated, then an unexported, actor;
 *   - joining refused: a failed member's name, a wrong token;
 *   - peer slots reused: a hub holding one peer at a time takes member
 *     after member, killed or leaving; handles to those gone stay
 *     stopped; a connection that never says HELLO loses its slot at the
 *     hub's deadline; members joining, called, killed and leaving in a
 *     fixed-seed order through a hub of three slots (churn).
 * Exits 77 where UCX cannot be loaded. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sys.h"
#include "cluster/cluster_internal.h"
#if RK_TEST_RAW_UCX
#include <arpa/inet.h>
#include <netinet/in.h>

#include "cluster/ucx_api.h"
#endif
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

static const char kSeqSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t lo, hi; } seq_t;\n"
    "RK_HANDLER void echo(const seq_t *in, seq_t *out) {\n"
    "  out->lo = in->lo; out->hi = in->hi + 1u;\n"
    "}\n";
typedef struct {
  uint32_t lo, hi;
} seq_t;

#define BIG_N 16384 /* 64 KiB: rendezvous on every transport */
static const char kBigSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { float v[16384]; } big_t;\n"
    "RK_HANDLER void twice(const big_t *in, big_t *out) {\n"
    "  for (int i = 0; i < 16384; ++i) out->v[i] = in->v[i] * 2.0f;\n"
    "}\n";
typedef struct {
  float v[BIG_N];
} big_t;

/* A flooder's messages: 2 KiB, copied into the receiver's shared-memory
 * FIFO element by element while the sender holds it claimed. */
static const char kSinkSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t w[512]; } blob_t;\n"
    "typedef struct { uint32_t v; } ack_t;\n"
    "RK_HANDLER void sink(const blob_t *in, ack_t *out) {\n"
    "  out->v = in->w[0] + in->w[511];\n"
    "}\n";
typedef struct {
  uint32_t w[512];
} blob_t;
typedef struct {
  uint32_t v;
} ack_t;

static rk_context_t *g_ctx;
static const char *g_self;

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

static rk_actor_t *launch(const char *src, const char *handler,
                          uint32_t capacity) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  if (capacity) o.input_capacity = o.output_capacity = capacity;
  rk_actor_t *a = NULL;
  if (rk_actor_launch(g_ctx, src, handler, &o, &a) != RK_OK) {
    printf("launch %s: %s\n", handler, rk_last_error());
    exit(1);
  }
  return a;
}

/* ---- member roles (child processes) ------------------------------------ */

/* Joins `addr` as `name`; exits 3 (printing why) when refused. */
static rk_cluster_t *member_join(const char *addr, const char *name,
                                 const char *token) {
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.connect = addr;
  o.name = name;
  o.token = token;
  o.connect_timeout_ns = 10 * SEC;
  rk_cluster_t *c;
  rk_status_t s = rk_cluster_create(&o, &c);
  if (s != RK_OK) {
    printf("join refused: %s: %s\n", rk_status_name(s), rk_last_error());
    fflush(stdout);
    exit(s == RK_ERR_UNAVAILABLE ? 3 : 4);
  }
  return c;
}

/* Exports add (window 16), seq, big; then waits until stdin closes or the
 * hub leaves, and leaves. Commands on stdin: 'd' deactivates the add
 * actor, 'a' activates it, 'u' unexports it. */
static int role_owner(const char *addr, const char *name, const char *prefix) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch(kAddSource, "add_one", 16);
  rk_actor_t *seq = launch(kSeqSource, "echo", 256);
  rk_actor_t *big = launch(kBigSource, "twice", 4);
  rk_cluster_t *c = member_join(addr, name, NULL);
  char n[128], n_add[128];
  snprintf(n, sizeof n, "%s/add", prefix);
  if (rk_cluster_export(c, add, n) != RK_OK) return 5;
  snprintf(n, sizeof n, "%s/seq", prefix);
  if (rk_cluster_export(c, seq, n) != RK_OK) return 5;
  snprintf(n, sizeof n, "%s/big", prefix);
  if (rk_cluster_export(c, big, n) != RK_OK) return 5;
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    struct pollfd p = {.fd = 0, .events = POLLIN};
    if (poll(&p, 1, 50) > 0) {
      char b[16];
      ssize_t n = read(0, b, sizeof b);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        snprintf(n_add, sizeof n_add, "%s/add", prefix);
        if (b[i] == 'd') rk_actor_deactivate(add);
        if (b[i] == 'a') rk_actor_activate(add);
        if (b[i] == 'u') rk_cluster_unexport(c, n_add);
      }
    }
    if (rk_cluster_peer_count(c) == 0) break;
  }
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  rk_actor_destroy(seq);
  rk_actor_destroy(big);
  return 0;
}

/* Looks up hub/add and calls it 2000 times: exit 0 when every answer is
 * right. */
static int role_caller(const char *addr, const char *name) {
  rk_cluster_t *c = member_join(addr, name, NULL);
  rk_remote_actor_t *h;
  if (rk_cluster_lookup(c, "hub/gone", 5 * SEC, &h) != RK_ERR_NOT_FOUND) {
    printf("an unexported name was found\n");
    return 8;
  }
  if (rk_cluster_lookup(c, "hub/add", 5 * SEC, &h) != RK_OK) {
    printf("lookup: %s\n", rk_last_error());
    return 6;
  }
  int bad = 0;
  for (int i = 0; i < 2000; ++i) {
    imsg_t q = {i}, r = {0};
    if (rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL) !=
            RK_OK ||
        r.v != i + 1)
      ++bad;
  }
  if (bad) printf("caller: %d bad answers (%s)\n", bad, rk_last_error());
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  return bad ? 7 : 0;
}

/* Looks up hub/sink and sends to it as fast as the window lets it, 32
 * messages then their 32 answers, until the hub goes (or it is killed,
 * which is what it is for). */
static int role_flooder(const char *addr, const char *name) {
  rk_cluster_t *c = member_join(addr, name, NULL);
  rk_remote_actor_t *h;
  if (rk_cluster_lookup(c, "hub/sink", 5 * SEC, &h) != RK_OK) {
    printf("lookup: %s\n", rk_last_error());
    return 6;
  }
  blob_t *b = calloc(1, sizeof *b);
  for (uint32_t i = 0; b; ++i) {
    bool ok = true;
    for (int k = 0; k < 32 && ok; ++k) {
      b->w[0] = i;
      ok = rk_remote_actor_send(h, b, sizeof *b, 10 * SEC, NULL) == RK_OK;
    }
    for (int k = 0; k < 32 && ok; ++k) {
      ack_t a;
      ok = rk_remote_actor_receive(h, &a, sizeof a, 10 * SEC, NULL) == RK_OK;
    }
    if (!ok) break;
  }
  free(b);
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  return 0;
}

#if RK_TEST_RAW_UCX
static void silent_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
  (void)arg;
  (void)ep;
  (void)status; /* the hub closing it: expected */
}

/* Connects to the hub with raw UCX and never says HELLO; goes when its
 * stdin closes. */
static int role_silent(const char *addr) {
  const rk_ucp_api_t *u;
  if (rk__ucp_api(&u) != RK_OK) return 77;
  char host[64];
  snprintf(host, sizeof host, "%s", addr);
  char *colon = strrchr(host, ':');
  if (!colon) return 9;
  *colon = '\0';
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return 9;
  ucp_config_t *cfg = NULL;
  if (u->ucp_config_read(NULL, NULL, &cfg) != UCS_OK) return 9;
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_AM;
  ucp_context_h ctx = NULL;
  ucs_status_t st =
      u->ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, cfg, &ctx);
  u->ucp_config_release(cfg);
  if (st != UCS_OK) return 9;
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = NULL;
  if (u->ucp_worker_create(ctx, &wp, &w) != UCS_OK) return 9;
  ucp_ep_params_t e;
  memset(&e, 0, sizeof e);
  e.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  e.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  e.sockaddr.addr = (const struct sockaddr *)&sa;
  e.sockaddr.addrlen = sizeof sa;
  e.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  e.err_handler.cb = silent_ep_error;
  ucp_ep_h ep = NULL;
  if (u->ucp_ep_create(w, &e, &ep) != UCS_OK) return 9;
  for (;;) {
    u->ucp_worker_progress(w);
    struct pollfd in = {.fd = 0, .events = POLLIN};
    if (poll(&in, 1, 1) > 0) {
      char b[16];
      if (read(0, b, sizeof b) <= 0) break;
    }
  }
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t r = u->ucp_ep_close_nbx(ep, &prm);
  if (UCS_PTR_IS_PTR(r)) {
    for (int i = 0;
         i < 1000 && u->ucp_request_check_status(r) == UCS_INPROGRESS; ++i)
      u->ucp_worker_progress(w);
    u->ucp_request_free(r);
  }
  u->ucp_worker_destroy(w);
  u->ucp_cleanup(ctx);
  return 0;
}
#endif

/* ---- the hub's side ---------------------------------------------------- */

typedef struct child {
  pid_t pid;
  int in; /* its stdin: closing it asks it to leave */
} child_t;

static char g_addr[128];

static child_t spawn(const char *role, const char *name, const char *prefix,
                     const char *token) {
  int fds[2];
  child_t ch = {-1, -1};
  /* Close-on-exec: only this process holds the write end, so closing it
   * ends the child's stdin even while later children live. */
  if (pipe2(fds, O_CLOEXEC) != 0) return ch;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    if (token) setenv("RK_CLUSTER_TOKEN", token, 1);
    execl(g_self, g_self, "--role", role, g_addr, name, prefix ? prefix : "-",
          (char *)NULL);
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
  uint64_t end = rk__now_ns() + seconds * SEC;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(ch->pid, &st, WNOHANG);
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

static rk_remote_actor_t *find(rk_cluster_t *c, const char *name) {
  rk_remote_actor_t *h = NULL;
  uint64_t end = rk__now_ns() + 20 * SEC;
  /* The member exports after it joined: retry until it has. */
  while (rk__now_ns() < end) {
    rk_status_t s = rk_cluster_lookup(c, name, 5 * SEC, &h);
    if (s == RK_OK) return h;
    if (s != RK_ERR_NOT_FOUND) break;
    usleep(20000);
  }
  CHECK(false, "lookup %s: %s", name, rk_last_error());
  return NULL;
}

static void test_basics(rk_cluster_t *c) {
  rk_remote_actor_t *h = find(c, "a/add");
  if (!h) return;
  size_t qs, rs;
  uint32_t window;
  const char *peer;
  rk_remote_actor_info(h, &qs, &rs, &window, &peer);
  CHECK(qs == sizeof(imsg_t) && rs == sizeof(imsg_t) && window == 16,
        "info: %zu %zu %u", qs, rs, window);
  CHECK(!strcmp(peer, "member-a"), "owner named %s", peer);
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_ACTIVE, "active");

  imsg_t q = {41}, r = {0};
  rk_actor_message_t info;
  CHECK_OK(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, &info));
  CHECK(r.v == 42 && info.status == RK_OK && info.size == sizeof r,
        "call(41) = %d, status %d size %zu", r.v, (int)info.status, info.size);
  uint64_t t0 = info.timestamp;
  CHECK(t0 != 0, "a timestamp");

  /* A handler error comes back with its code and the payload. */
  q.v = -5;
  CHECK_STATUS(
      rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, &info),
      RK_ERR_HANDLER);
  CHECK(r.v == -4 && info.handler_code == 7, "handler error: v %d code %d", r.v,
        info.handler_code);
  CHECK(info.timestamp > t0, "clock advances: %llu after %llu",
        (unsigned long long)info.timestamp, (unsigned long long)t0);

  /* Sends, then receives: ids match, in order. */
  uint64_t ids[10];
  for (int i = 0; i < 10; ++i) {
    q.v = 100 + i;
    CHECK_OK(rk_remote_actor_send(h, &q, sizeof q, SEC, &ids[i]));
  }
  for (int i = 0; i < 10; ++i) {
    CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 5 * SEC, &info));
    CHECK(r.v == 101 + i && info.correlation_id == ids[i],
          "receive %d: v %d id %llu want %llu", i, r.v,
          (unsigned long long)info.correlation_id, (unsigned long long)ids[i]);
  }
  CHECK_STATUS(rk_remote_actor_receive(h, &r, sizeof r, 0, &info),
               RK_ERR_QUEUE_EMPTY);
  CHECK_STATUS(rk_remote_actor_receive(h, &r, sizeof r, 20 * MS, &info),
               RK_ERR_TIMEOUT);

  /* A call between sends takes its own answer; the others stay. */
  q.v = 1;
  uint64_t id1;
  CHECK_OK(rk_remote_actor_send(h, &q, sizeof q, SEC, &id1));
  q.v = 500;
  CHECK_OK(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, &info));
  CHECK(r.v == 501, "call among sends: %d", r.v);
  CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 5 * SEC, &info));
  CHECK(r.v == 2 && info.correlation_id == id1, "the send's answer: %d", r.v);

  /* The window: 16 unanswered-and-unreceived requests; the 17th waits,
   * then QUEUE_FULL. */
  for (int i = 0; i < 16; ++i) {
    q.v = i;
    CHECK_OK(rk_remote_actor_send(h, &q, sizeof q, SEC, NULL));
  }
  CHECK_STATUS(rk_remote_actor_send(h, &q, sizeof q, 10 * MS, NULL),
               RK_ERR_QUEUE_FULL);
  for (int i = 0; i < 16; ++i)
    CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 5 * SEC, NULL));

  /* Wrong sizes are refused here, before anything is sent. */
  CHECK_STATUS(rk_remote_actor_send(h, &q, 3, SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_remote_actor_call(h, &q, sizeof q, &r, 2, SEC, NULL),
               RK_ERR_INVALID_ARGUMENT);
  rk_remote_actor_release(h);
}

/* Requests the remote actor refuses: deactivated there (the handle stays
 * usable), then unexported (the handle becomes TERMINATED). */
static void test_refused(rk_cluster_t *c, child_t *owner) {
  rk_remote_actor_t *h = find(c, "a/add");
  if (!h) return;
  imsg_t q = {1}, r;
  rk_status_t s = RK_OK;
  if (write(owner->in, "d", 1) != 1) return;
  for (int i = 0; i < 200 && s == RK_OK; ++i) {
    usleep(10000);
    s = rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, NULL);
  }
  CHECK(s == RK_ERR_INVALID_STATE, "deactivated there: %s (%s)",
        rk_status_name(s), rk_last_error());
  CHECK_ERROR_HAS("member-a");
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_ACTIVE, "still usable: %s",
        rk_actor_state_name(rk_remote_actor_state(h)));
  if (write(owner->in, "a", 1) != 1) return;
  for (int i = 0; i < 200 && s != RK_OK; ++i) {
    usleep(10000);
    s = rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, NULL);
  }
  CHECK(s == RK_OK && r.v == 2, "activated again: %s", rk_status_name(s));
  if (write(owner->in, "u", 1) != 1) return;
  for (int i = 0; i < 200 && s == RK_OK; ++i) {
    usleep(10000);
    s = rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 5 * SEC, NULL);
  }
  CHECK(s == RK_ERR_INVALID_STATE, "unexported: %s", rk_status_name(s));
  CHECK_ERROR_HAS("no longer exported");
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_TERMINATED, "after unexport: %s",
        rk_actor_state_name(rk_remote_actor_state(h)));
  CHECK_STATUS(rk_remote_actor_send(h, &q, sizeof q, SEC, NULL),
               RK_ERR_INVALID_STATE);
  rk_remote_actor_release(h);
}

static void test_lookup_errors(rk_cluster_t *c) {
  rk_remote_actor_t *h = NULL;
  CHECK_STATUS(rk_cluster_lookup(c, "nobody/exports/this", 5 * SEC, &h),
               RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("nobody/exports/this");
  CHECK_ERROR_HAS("member-a");
  CHECK_STATUS(rk_cluster_lookup(c, "", SEC, &h), RK_ERR_INVALID_ARGUMENT);
}

static void test_big(rk_cluster_t *c) {
  rk_remote_actor_t *h = find(c, "a/big");
  if (!h) return;
  static big_t q, r;
  for (int i = 0; i < BIG_N; ++i) q.v[i] = (float)i;
  for (int round = 0; round < 3; ++round) {
    memset(&r, 0, sizeof r);
    if (!CHECK_OK(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC,
                                       NULL)))
      break;
    int bad = 0;
    for (int i = 0; i < BIG_N; ++i) bad += r.v[i] != 2.0f * (float)i;
    CHECK(bad == 0, "%d of %d floats wrong", bad, BIG_N);
  }
  rk_remote_actor_release(h);
}

/* `n` sequence-numbered requests through the window, answered in order. */
static void test_stream(rk_cluster_t *c, uint32_t n) {
  rk_remote_actor_t *h = find(c, "a/seq");
  if (!h) return;
  uint8_t *seen = calloc(n, 1);
  uint32_t sent = 0, got = 0, dup = 0, order = 0, wrong = 0;
  uint64_t t0 = rk__now_ns();
  while (got < n) {
    while (sent < n) {
      seq_t q = {sent, 7};
      rk_status_t s = rk_remote_actor_send(h, &q, sizeof q, 0, NULL);
      if (s == RK_ERR_QUEUE_FULL) break;
      if (!CHECK_OK(s)) goto out;
      ++sent;
    }
    seq_t r;
    rk_status_t s = rk_remote_actor_receive(h, &r, sizeof r, 10 * SEC, NULL);
    if (!CHECK_OK(s)) goto out;
    if (r.lo >= n || r.hi != 8) {
      ++wrong;
    } else {
      if (seen[r.lo]) ++dup;
      seen[r.lo] = 1;
      if (r.lo != got) ++order;
    }
    ++got;
  }
out:;
  const bool got_bad = got < n; /* a send or a receive failed */
  uint32_t buffered, unanswered;
  uint64_t batches, batched;
  rk__remote_actor_sends(h, &buffered, &unanswered, &batches, &batched);
  printf("  stream: %u messages in %.3f s, %llu of them in %llu batches\n", got,
         (double)(rk__now_ns() - t0) / 1e9, (unsigned long long)batched,
         (unsigned long long)batches);
  /* Sends made while many are on their way go out together. The stream's
   * first burst makes a few batches; when the answers to its first sends
   * were taken in before many more were made (a loaded machine
   * descheduling this thread mid-burst), it made none: more bursts, until
   * one does (a handle that never buffers fails all twenty). */
  for (int burst = 0; burst < 20 && n >= 1000 && batches == 0 && !got_bad;
       ++burst) {
    uint32_t k = 0;
    for (; k < 64; ++k) {
      seq_t q = {k, 7};
      if (rk_remote_actor_send(h, &q, sizeof q, 0, NULL) != RK_OK) break;
    }
    for (uint32_t i = 0; i < k; ++i) {
      seq_t r;
      if (!CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 10 * SEC, NULL)))
        break;
    }
    rk__remote_actor_sends(h, &buffered, &unanswered, &batches, &batched);
  }
  CHECK(n < 1000 || (batches > 0 && batched >= 2 * batches),
        "a stream of %u sent %llu batches (%llu requests)", n,
        (unsigned long long)batches, (unsigned long long)batched);
  uint32_t missing = 0;
  for (uint32_t i = 0; i < n; ++i) missing += !seen[i];
  CHECK(missing == 0 && dup == 0 && wrong == 0 && order == 0,
        "stream of %u: %u missing, %u duplicated, %u wrong, %u out of order", n,
        missing, dup, wrong, order);
  free(seen);
  rk_remote_actor_release(h);
}

/* Several threads sending on one handle at once, each its own numbered
 * requests, while this thread receives: every request answered once, and
 * each thread's answered in the order it sent them (buffered or not,
 * whoever posted the buffer). */
enum { kSenders = 3, kPerSender = 3000 };
typedef struct sender_arg {
  rk_remote_actor_t *h;
  uint32_t id;
  rk_status_t status;
} sender_arg_t;

static void *send_numbered(void *arg) {
  sender_arg_t *a = arg;
  for (uint32_t i = 0; i < kPerSender; ++i) {
    seq_t q = {i, a->id * 100000u};
    a->status = rk_remote_actor_send(a->h, &q, sizeof q, 10 * SEC, NULL);
    if (a->status != RK_OK) break;
  }
  return NULL;
}

static void test_threads_send(rk_cluster_t *c) {
  rk_remote_actor_t *h = find(c, "a/seq");
  if (!h) return;
  pthread_t t[kSenders];
  sender_arg_t args[kSenders];
  for (uint32_t k = 0; k < kSenders; ++k) {
    args[k] = (sender_arg_t){h, k, RK_OK};
    pthread_create(&t[k], NULL, send_numbered, &args[k]);
  }
  uint32_t next[kSenders] = {0}, got = 0, order = 0, wrong = 0;
  for (; got < kSenders * kPerSender; ++got) {
    seq_t r;
    if (!CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 10 * SEC, NULL)))
      break;
    const uint32_t k = (r.hi - 1) / 100000u;
    if (k >= kSenders || (r.hi - 1) % 100000u != 0) {
      ++wrong;
      continue;
    }
    if (r.lo != next[k]) ++order;
    next[k] = r.lo + 1;
  }
  for (uint32_t k = 0; k < kSenders; ++k) {
    pthread_join(t[k], NULL);
    CHECK_OK(args[k].status);
  }
  uint32_t buffered, unanswered;
  uint64_t batches, batched;
  rk__remote_actor_sends(h, &buffered, &unanswered, &batches, &batched);
  printf("  %d threads sending: %u answers, %llu requests in %llu batches\n",
         kSenders, got, (unsigned long long)batched,
         (unsigned long long)batches);
  CHECK(got == kSenders * kPerSender && order == 0 && wrong == 0,
        "%u of %d answers, %u out of order, %u wrong", got,
        kSenders * kPerSender, order, wrong);
  rk_remote_actor_release(h);
}

/* Two threads receiving from one handle while this one sends: the first
 * alone for a while (answers then come out without the handle's lock, to
 * the one thread receiving), then both, the second taking over that role
 * from the first mid-stream. Every answer comes out once, and this
 * thread's sends, waiting for window room that those receives return,
 * all go. */
enum { kShared = 30000 };
typedef struct receiver_arg {
  rk_remote_actor_t *h;
  unsigned char *seen;
  _Atomic uint32_t *claimed;
  _Atomic uint32_t got;
  const _Atomic uint32_t *other_got; /* the first waits for the second */
  uint32_t dup, wrong;
  rk_status_t status;
} receiver_arg_t;

static void *receive_share(void *arg) {
  receiver_arg_t *a = arg;
  while (atomic_fetch_add(a->claimed, 1) < kShared) {
    seq_t r;
    a->status = rk_remote_actor_receive(a->h, &r, sizeof r, 10 * SEC, NULL);
    if (a->status != RK_OK) break;
    /* A third in, the first lets the second take some (up to 5 s). */
    if (a->other_got && atomic_fetch_add(&a->got, 1) + 1 == kShared / 3)
      for (int w = 0; w < 50000 && !atomic_load(a->other_got); ++w) usleep(100);
    if (!a->other_got) atomic_fetch_add(&a->got, 1);
    if (r.lo >= kShared || r.hi != 8)
      a->wrong++;
    else if (__atomic_exchange_n(&a->seen[r.lo], 1, __ATOMIC_RELAXED))
      a->dup++;
  }
  return NULL;
}

static void test_threads_receive(rk_cluster_t *c) {
  rk_remote_actor_t *h = find(c, "a/seq");
  if (!h) return;
  unsigned char *seen = calloc(kShared, 1);
  _Atomic uint32_t claimed = 0;
  receiver_arg_t args[2];
  pthread_t t[2];
  for (int k = 0; k < 2; ++k)
    args[k] = (receiver_arg_t){h, seen, &claimed, 0, NULL, 0, 0, RK_OK};
  args[0].other_got = &args[1].got;
  pthread_create(&t[0], NULL, receive_share, &args[0]);
  rk_status_t s = RK_OK;
  uint32_t sent = 0;
  for (; sent < kShared && s == RK_OK; ++sent) {
    if (sent == kShared / 3)
      pthread_create(&t[1], NULL, receive_share, &args[1]);
    seq_t q = {sent, 7};
    s = rk_remote_actor_send(h, &q, sizeof q, 10 * SEC, NULL);
  }
  if (sent <= kShared / 3) pthread_create(&t[1], NULL, receive_share, &args[1]);
  CHECK_OK(s);
  if (s != RK_OK) atomic_store(&claimed, kShared); /* no more will come */
  for (int k = 0; k < 2; ++k) pthread_join(t[k], NULL);
  uint32_t missing = 0;
  for (uint32_t i = 0; i < kShared; ++i) missing += !seen[i];
  printf("  2 threads receiving: %u and %u answers\n",
         (unsigned)atomic_load(&args[0].got),
         (unsigned)atomic_load(&args[1].got));
  for (int k = 0; k < 2; ++k) CHECK_OK(args[k].status);
  CHECK(missing == 0 && args[0].dup + args[1].dup == 0 &&
            args[0].wrong + args[1].wrong == 0,
        "%u answers missing, %u duplicated, %u wrong", missing,
        args[0].dup + args[1].dup, args[0].wrong + args[1].wrong);
  CHECK(atomic_load(&args[1].got) > 0, "the second receiver got no answer");
  free(seen);
  rk_remote_actor_release(h);
}

/* Sends left in the handle's buffer when the sender stops sending go out
 * without anyone waiting on the handle: as answers come back, the
 * thread that takes them in (here the progress thread) posts the rest. */
static void test_buffered_tail(rk_cluster_t *c) {
  rk_remote_actor_t *h = find(c, "a/seq");
  if (!h) return;
  enum { kSends = 100 };
  for (uint32_t i = 0; i < kSends; ++i) {
    seq_t q = {i, 0};
    if (!CHECK_OK(rk_remote_actor_send(h, &q, sizeof q, 10 * SEC, NULL))) break;
  }
  uint32_t buffered = 0, unanswered = 0;
  uint64_t batches, batched;
  rk__remote_actor_sends(h, &buffered, &unanswered, &batches, &batched);
  const uint32_t at_end = buffered;
  /* Nothing called on the handle meanwhile. */
  const uint64_t end = rk__now_ns() + 5 * SEC;
  while (rk__now_ns() < end) {
    rk__remote_actor_sends(h, &buffered, &unanswered, &batches, &batched);
    if (!buffered && !unanswered) break;
    usleep(2000);
  }
  printf(
      "  buffered tail: %u left in the buffer after %d sends; then %u, "
      "%u unanswered\n",
      at_end, kSends, buffered, unanswered);
  CHECK(buffered == 0 && unanswered == 0,
        "%u sends still buffered and %u unanswered 5 s after the last send",
        buffered, unanswered);
  uint32_t got = 0, order = 0;
  for (; got < kSends; ++got) {
    seq_t r;
    if (!CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 0, NULL))) break;
    if (r.lo != got) ++order;
  }
  CHECK(got == kSends && order == 0, "%u of %d answers there, %u out of order",
        got, kSends, order);
  rk_remote_actor_release(h);
}

/* A member that calls an actor the hub exports. With two CPUs or more
 * the actor's worker drives the hub's transport, and a call that finds
 * nothing of the export's in the actor is answered beside its rings in
 * the worker's turn (RK_CLUSTER_DIRECT=0: never): counted sent as any
 * other request. */
static void test_member_calls_hub(rk_cluster_t *c, rk_actor_t *hub_add) {
  rk_actor_stats_t st0, st;
  CHECK_OK(rk_actor_stats(hub_add, &st0));
  const uint64_t direct0 = rk__cluster_direct(c, "hub/add");
  child_t b = spawn("caller", "member-b", NULL, NULL);
  int code = reap(&b, 60);
  CHECK(code == 0, "the calling member exited %d", code);
  CHECK_OK(rk_actor_stats(hub_add, &st));
  const uint64_t direct = rk__cluster_direct(c, "hub/add") - direct0;
  printf("  member calls hub/add: %llu of 2000 answered beside the rings\n",
         (unsigned long long)direct);
  CHECK(st.sent - st0.sent == 2000 && st.processed - st0.processed == 2000 &&
            st.handler_errors == st0.handler_errors,
        "hub/add: sent %llu, processed %llu for 2000 calls",
        (unsigned long long)(st.sent - st0.sent),
        (unsigned long long)(st.processed - st0.processed));
  const char *off = getenv("RK_CLUSTER_DIRECT");
  int cpus[2];
  if (off && !strcmp(off, "0"))
    CHECK(direct == 0, "RK_CLUSTER_DIRECT=0, yet %llu answered beside",
          (unsigned long long)direct);
  else if (rk__allowed_cpus(cpus, 2) >= 2 && !getenv("RK_ACTOR_SPIN_US"))
    CHECK(direct > 200, "only %llu of 2000 calls answered beside the rings",
          (unsigned long long)direct);
}

typedef struct streamer {
  rk_remote_actor_t *h;
  atomic_uint answered;
  rk_status_t last;
  char message[512];
  uint64_t stopped_at;
  uint32_t dup;
} streamer_t;

static void *stream_until_failure(void *arg) {
  streamer_t *s = arg;
  uint32_t expect = 0;
  for (uint32_t i = 0;; ++i) {
    seq_t q = {i, 0}, r;
    rk_status_t st =
        rk_remote_actor_call(s->h, &q, sizeof q, &r, sizeof r, 60 * SEC, NULL);
    if (st != RK_OK) {
      s->last = st;
      snprintf(s->message, sizeof s->message, "%s", rk_last_error());
      s->stopped_at = rk__now_ns();
      return NULL;
    }
    if (r.lo != expect) s->dup++;
    expect = r.lo + 1;
    atomic_fetch_add(&s->answered, 1);
  }
}

static void test_killed_mid_stream(rk_cluster_t *c) {
  child_t v = spawn("owner", "victim", "v", NULL);
  rk_remote_actor_t *h = find(c, "v/seq");
  rk_remote_actor_t *h2 = find(c, "v/add");
  if (!h || !h2) {
    reap(&v, 1);
    return;
  }
  streamer_t s;
  memset(&s, 0, sizeof s);
  s.h = h;
  pthread_t t;
  pthread_create(&t, NULL, stream_until_failure, &s);
  while (atomic_load(&s.answered) < 200) usleep(1000);
  uint64_t killed = rk__now_ns();
  kill(v.pid, SIGKILL);
  pthread_join(t, NULL);
  double woke = (double)(s.stopped_at - killed) / 1e9;
  printf("  killed mid-stream after %u answers; the call woke after %.3f s\n",
         atomic_load(&s.answered), woke);
  CHECK(s.last == RK_ERR_INVALID_STATE, "the waiting call: %s",
        rk_status_name(s.last));
  CHECK(rk_test_contains(s.message, "victim") &&
            rk_test_contains(s.message, "failed"),
        "the message names the member and the failure: %s", s.message);
  CHECK(woke < 10.0, "woken within 10 s (%.3f s)", woke);
  CHECK(s.dup == 0, "%u answers out of sequence", s.dup);
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_FAILED, "handle FAILED");
  /* Every handle to the member fails, and sends fail at once. */
  CHECK(rk_remote_actor_state(h2) == RK_ACTOR_FAILED, "other handle: %s",
        rk_actor_state_name(rk_remote_actor_state(h2)));
  imsg_t q = {1}, r;
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(rk_remote_actor_send(h2, &q, sizeof q, 5 * SEC, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_STATUS(
      rk_remote_actor_call(h2, &q, sizeof q, &r, sizeof r, 5 * SEC, NULL),
      RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("victim");
  CHECK(rk__now_ns() - t0 < 100 * MS, "refused at once (%.3f ms)",
        (double)(rk__now_ns() - t0) / 1e6);
  seq_t sr;
  CHECK_STATUS(rk_remote_actor_receive(h, &sr, sizeof sr, 5 * SEC, NULL),
               RK_ERR_INVALID_STATE);
  rk_remote_actor_release(h);
  rk_remote_actor_release(h2);
  reap(&v, 5);

  /* The same name may not join again. */
  child_t again = spawn("owner", "victim", "v2", NULL);
  int code = reap(&again, 30);
  CHECK(code == 3, "rejoining under a failed name: exit %d (3 = refused)",
        code);
}

/* Members killed while they flood the hub with 2 KiB messages, round
 * after round (each under a new name: a failed one is burned): after each
 * kill member-a, alive, still answers the hub at once. Over shared memory
 * a sender killed between claiming an element of the receiver's FIFO and
 * marking it written would wedge that FIFO; every peer has a worker (and a
 * FIFO) of its own in the hub, so the wedge holds up nobody else. */
static void test_flooders_killed(rk_cluster_t *c, rk_actor_t *sink,
                                 uint32_t rounds) {
  rk_remote_actor_t *ha = find(c, "a/add");
  if (!ha) return;
  uint32_t wedged = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    char name[32];
    snprintf(name, sizeof name, "flood-%u", r);
    rk_actor_stats_t st0, st;
    CHECK_OK(rk_actor_stats(sink, &st0));
    child_t f = spawn("flooder", name, NULL, NULL);
    /* Killed once it has flooded for a few milliseconds (a different
     * moment each round). */
    const uint64_t end = rk__now_ns() + 20 * SEC;
    do {
      usleep(500);
      CHECK_OK(rk_actor_stats(sink, &st));
    } while (st.processed < st0.processed + 2000 && rk__now_ns() < end);
    usleep(1000 * (r % 7));
    kill(f.pid, SIGKILL);
    reap(&f, 5);
    imsg_t q = {(int)r}, a = {0};
    const uint64_t t0 = rk__now_ns();
    rk_status_t s =
        rk_remote_actor_call(ha, &q, sizeof q, &a, sizeof a, 3 * SEC, NULL);
    if (s != RK_OK || a.v != (int)r + 1) {
      wedged++;
      printf(
          "  round %u: member-a did not answer after %s was killed: %s "
          "(%s)\n",
          r, name, rk_status_name(s), rk_last_error());
    } else if (r == 0 || r + 1 == rounds) {
      printf(
          "  round %u: %s killed after %llu messages; member-a answered "
          "in %.3f ms\n",
          r, name, (unsigned long long)(st.processed - st0.processed),
          (double)(rk__now_ns() - t0) / 1e6);
    }
  }
  CHECK(wedged == 0,
        "member-a answered after every flooder's kill (%u of %u rounds "
        "without an answer)",
        wedged, rounds);
  rk_remote_actor_release(ha);
}

static void test_never_answers(rk_cluster_t *c) {
  child_t d = spawn("owner", "sleeper", "d", NULL);
  rk_remote_actor_t *h = find(c, "d/add");
  if (!h) {
    reap(&d, 1);
    return;
  }
  kill(d.pid, SIGSTOP);
  usleep(50000);
  imsg_t q = {1}, r;
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(
      rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 300 * MS, NULL),
      RK_ERR_TIMEOUT);
  double took = (double)(rk__now_ns() - t0) / 1e9;
  CHECK(took >= 0.29 && took < 3.0, "timed out after %.3f s", took);
  rk_remote_actor_t *h2 = NULL;
  CHECK_STATUS(rk_cluster_lookup(c, "d/seq", 300 * MS, &h2), RK_ERR_TIMEOUT);
  CHECK_ERROR_HAS("did not answer");
  kill(d.pid, SIGKILL);
  kill(d.pid, SIGCONT);
  uint64_t end = rk__now_ns() + 20 * SEC;
  while (rk_remote_actor_state(h) != RK_ACTOR_FAILED && rk__now_ns() < end)
    usleep(10000);
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_FAILED, "after the kill: %s",
        rk_actor_state_name(rk_remote_actor_state(h)));
  rk_remote_actor_release(h);
  reap(&d, 5);
}

static void test_left(rk_cluster_t *c) {
  child_t e = spawn("owner", "leaver", "e", NULL);
  rk_remote_actor_t *h = find(c, "e/add");
  if (!h) {
    reap(&e, 1);
    return;
  }
  int code = reap(&e, 20); /* closes its stdin: it leaves */
  CHECK(code == 0, "the leaving member exited %d", code);
  uint64_t end = rk__now_ns() + 10 * SEC;
  while (rk_remote_actor_state(h) == RK_ACTOR_ACTIVE && rk__now_ns() < end)
    usleep(10000);
  CHECK(rk_remote_actor_state(h) == RK_ACTOR_TERMINATED, "after leaving: %s",
        rk_actor_state_name(rk_remote_actor_state(h)));
  imsg_t q = {1};
  CHECK_STATUS(rk_remote_actor_send(h, &q, sizeof q, SEC, NULL),
               RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("left");
  rk_remote_actor_release(h);
}

/* Waits until rk__cluster_peers_freed(c) reaches n (10 s at most). */
static bool wait_freed(rk_cluster_t *c, uint64_t n) {
  const uint64_t end = rk__now_ns() + 10 * SEC;
  while (rk__cluster_peers_freed(c) < n && rk__now_ns() < end) usleep(5000);
  return rk__cluster_peers_freed(c) >= n;
}

/* A second hub that holds one peer at a time (RK_CLUSTER_MAX_PEERS=1):
 * members join it one after another, each once the slot of the one
 * before is freed, alternately killed and leaving. Each new member is
 * called through its slot's new id (its answers come back from it); a
 * handle to each member gone stays stopped, refused at once, after its
 * slot holds another member exporting the same names. Without slot reuse
 * the second member is refused ("too many peers"). */
static void test_slot_reuse(void) {
  setenv("RK_CLUSTER_MAX_PEERS", "1", 1);
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.listen = "127.0.0.1:0";
  o.name = "hub-one-slot";
  o.connect_timeout_ns = 2 * SEC; /* the deadline for a joiner's HELLO */
  rk_cluster_t *c = NULL;
  const bool made = CHECK_OK(rk_cluster_create(&o, &c));
  unsetenv("RK_CLUSTER_MAX_PEERS"); /* the members keep the default */
  if (!made) return;
  char saved[sizeof g_addr];
  memcpy(saved, g_addr, sizeof g_addr);
  CHECK_OK(rk_cluster_address(c, g_addr, sizeof g_addr));
  enum { kRounds = 4 };
  rk_remote_actor_t *gone[kRounds] = {NULL};
  for (int round = 0; round < kRounds; ++round) {
    char name[32];
    snprintf(name, sizeof name, "slot-%d", round);
    child_t m = spawn("owner", name, "s", NULL);
    if (!CHECK_OK(rk_cluster_wait_peers(c, 1, 30 * SEC))) {
      reap(&m, 1);
      break;
    }
    rk_remote_actor_t *h = find(c, "s/add");
    if (!h) {
      reap(&m, 1);
      break;
    }
    const char *peer = NULL;
    rk_remote_actor_info(h, NULL, NULL, NULL, &peer);
    CHECK(peer && !strcmp(peer, name), "round %d: the owner is '%s'", round,
          peer ? peer : "(none)");
    if (round == 0) {
      /* The one slot is taken: another joiner is refused, and told why. */
      child_t extra = spawn("owner", "slot-extra", "x", NULL);
      const int code = reap(&extra, 30);
      CHECK(code == 3,
            "a joiner while the slot is taken: exit %d (3 = "
            "refused)",
            code);
    }
    for (int i = 0; i < 50; ++i) {
      imsg_t q = {1000 * round + i}, r = {0};
      if (!CHECK_OK(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r,
                                         10 * SEC, NULL)) ||
          !CHECK(r.v == q.v + 1, "round %d: %d answered %d", round, q.v, r.v))
        break;
    }
    /* The handles to the members before: stopped, refused at once. */
    for (int k = 0; k < round; ++k) {
      if (!gone[k]) continue;
      const rk_actor_state_t st = rk_remote_actor_state(gone[k]);
      CHECK(st == (k % 2 ? RK_ACTOR_TERMINATED : RK_ACTOR_FAILED),
            "round %d: the handle to slot-%d is %s", round, k,
            rk_actor_state_name(st));
      imsg_t q = {7}, r;
      const uint64_t t0 = rk__now_ns();
      CHECK_STATUS(rk_remote_actor_call(gone[k], &q, sizeof q, &r, sizeof r,
                                        5 * SEC, NULL),
                   RK_ERR_INVALID_STATE);
      CHECK(rk__now_ns() - t0 < 100 * MS, "refused at once (%.3f ms)",
            (double)(rk__now_ns() - t0) / 1e6);
    }
    if (round % 2 == 0) {
      kill(m.pid, SIGKILL);
      reap(&m, 5);
    } else {
      CHECK(reap(&m, 20) == 0, "slot-%d leaves cleanly", round);
    }
    const uint64_t end = rk__now_ns() + 10 * SEC;
    while (rk_remote_actor_state(h) == RK_ACTOR_ACTIVE && rk__now_ns() < end)
      usleep(5000);
    gone[round] = h;
    CHECK(wait_freed(c, (uint64_t)round + 1), "round %d: %llu slots freed",
          round, (unsigned long long)rk__cluster_peers_freed(c));
  }
  for (int k = 0; k < kRounds; ++k)
    if (gone[k]) rk_remote_actor_release(gone[k]);
#if RK_TEST_RAW_UCX
  /* A connection that never says HELLO holds the slot until the hub's
   * connect_timeout_ns has passed, then loses it (still connected), and
   * the next member joins. Without the deadline it would hold it for
   * good. */
  const uint64_t freed = rk__cluster_peers_freed(c);
  child_t q = spawn("silent", "-", "-", NULL);
  uint64_t end = rk__now_ns() + 20 * SEC;
  while (rk__cluster_slots_held(c) == 0 && rk__now_ns() < end) usleep(2000);
  const uint64_t held = rk__now_ns();
  CHECK(rk__cluster_slots_held(c) == 1, "the silent connection takes the slot");
  CHECK(wait_freed(c, freed + 1), "the silent connection's slot freed");
  const double after = (double)(rk__now_ns() - held) / 1e9;
  printf("  a connection without HELLO lost its slot after %.3f s\n", after);
  CHECK(after >= 1.5, "not before the deadline (%.3f s)", after);
  child_t m = spawn("owner", "slot-after-silent", "s", NULL);
  if (CHECK_OK(rk_cluster_wait_peers(c, 1, 30 * SEC))) {
    rk_remote_actor_t *h = find(c, "s/add");
    imsg_t q1 = {41}, r1 = {0};
    if (h) {
      CHECK_OK(rk_remote_actor_call(h, &q1, sizeof q1, &r1, sizeof r1, 10 * SEC,
                                    NULL));
      CHECK(r1.v == 42, "after the silent connection: %d", r1.v);
      rk_remote_actor_release(h);
    }
  }
  CHECK(reap(&m, 20) == 0, "slot-after-silent leaves cleanly");
  CHECK(reap(&q, 10) == 0, "the silent connection's process exits cleanly");
#else
  printf("  (built without UCX headers: no connection without HELLO)\n");
#endif
  rk_cluster_destroy(c);
  memcpy(g_addr, saved, sizeof g_addr);
}

/* Churn: a hub holding three peers at once; members join, are called,
 * and are killed or leave, in an order a fixed-seed generator picks, so
 * that slots are freed while others are in use, and joins, failures,
 * leaves and calls overlap. Every call to a live member is answered
 * right; a joiner refused for lack of a slot (its slot's last holder not
 * yet settled) is counted, not failed. */
static void test_churn(unsigned rounds) {
  setenv("RK_CLUSTER_MAX_PEERS", "3", 1);
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.listen = "127.0.0.1:0";
  o.name = "hub-churn";
  rk_cluster_t *c = NULL;
  const bool made = CHECK_OK(rk_cluster_create(&o, &c));
  unsetenv("RK_CLUSTER_MAX_PEERS");
  if (!made) return;
  char saved[sizeof g_addr];
  memcpy(saved, g_addr, sizeof g_addr);
  CHECK_OK(rk_cluster_address(c, g_addr, sizeof g_addr));
  child_t kids[3];
  int kid_no[3] = {-1, -1, -1};
  for (int k = 0; k < 3; ++k) kids[k].pid = -1;
  uint32_t x = 0x9e3779b9u; /* xorshift32 */
  unsigned members = 0, calls = 0, refused = 0, bad = 0;
  for (unsigned r = 0; r < rounds && !bad; ++r) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    const int k = (int)(x % 3);
    if (kids[k].pid > 0) {
      if (x & 8) kill(kids[k].pid, SIGKILL); /* else it leaves (BYE) */
      reap(&kids[k], 20);
      kids[k].pid = -1;
    } else {
      char name[32], prefix[32];
      kid_no[k] = (int)members++;
      snprintf(name, sizeof name, "churn-%d", kid_no[k]);
      snprintf(prefix, sizeof prefix, "c%d", kid_no[k]);
      kids[k] = spawn("owner", name, prefix, NULL);
    }
    for (int j = 0; j < 3 && !bad; ++j) {
      if (kids[j].pid <= 0) continue;
      char n[64];
      snprintf(n, sizeof n, "c%d/add", kid_no[j]);
      rk_remote_actor_t *h = NULL;
      rk_status_t s = RK_ERR_NOT_FOUND;
      const uint64_t end = rk__now_ns() + 20 * SEC;
      while (rk__now_ns() < end) {
        /* A member just killed and not yet seen failed does not answer:
         * a short lookup, again. */
        s = rk_cluster_lookup(c, n, 300 * MS, &h);
        if (s != RK_ERR_NOT_FOUND && s != RK_ERR_UNAVAILABLE &&
            s != RK_ERR_TIMEOUT)
          break;
        int st;
        if (waitpid(kids[j].pid, &st, WNOHANG) == kids[j].pid) {
          /* Refused (exit 3): its slot's last holder not yet settled. */
          if (!CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3,
                     "churn-%d exited %d before it was found", kid_no[j],
                     WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)))
            ++bad;
          ++refused;
          close(kids[j].in);
          kids[j].pid = -1;
          break;
        }
        usleep(5000);
      }
      if (kids[j].pid <= 0) continue;
      if (!CHECK_OK(s)) {
        ++bad;
        break;
      }
      for (int i = 0; i < 20; ++i) {
        imsg_t q = {i + 1000 * kid_no[j]}, a = {0};
        if (!CHECK_OK(rk_remote_actor_call(h, &q, sizeof q, &a, sizeof a,
                                           10 * SEC, NULL)) ||
            !CHECK(a.v == q.v + 1, "churn: %d answered %d", q.v, a.v)) {
          ++bad;
          break;
        }
        ++calls;
      }
      rk_remote_actor_release(h);
    }
  }
  for (int k = 0; k < 3; ++k)
    if (kids[k].pid > 0) reap(&kids[k], 20);
  printf(
      "  churn: %u members in %u rounds, %u calls, %u refused joins, "
      "%llu slots freed\n",
      members, rounds, calls, refused,
      (unsigned long long)rk__cluster_peers_freed(c));
  CHECK(rk__cluster_peers_freed(c) + 3 >= members - refused,
        "%llu slots freed for %u members that joined",
        (unsigned long long)rk__cluster_peers_freed(c), members - refused);
  /* Refusals are the exception (a join just after a kill, before the
   * failure is seen); with slots never reused every join after the third
   * is refused. */
  CHECK(2 * refused < members, "%u of %u joins refused", refused, members);
  rk_cluster_destroy(c);
  memcpy(g_addr, saved, sizeof g_addr);
}

static void test_refusals(void) {
  child_t t = spawn("owner", "tokenless", "t", "wrong-token");
  int code = reap(&t, 30);
  CHECK(code == 3, "a wrong token: exit %d (3 = refused)", code);
}

int main(int argc, char **argv) {
  if (argc >= 6 && !strcmp(argv[1], "--role")) {
    if (!strcmp(argv[2], "owner")) return role_owner(argv[3], argv[4], argv[5]);
    if (!strcmp(argv[2], "caller")) return role_caller(argv[3], argv[4]);
    if (!strcmp(argv[2], "flooder")) return role_flooder(argv[3], argv[4]);
#if RK_TEST_RAW_UCX
    if (!strcmp(argv[2], "silent")) return role_silent(argv[3]);
#endif
    return 2;
  }
  const char *version;
  if (rk_cluster_available(&version) != RK_OK)
    RK_TEST_SKIP("%s", rk_last_error());
  static char self[4096];
  g_self = rk__executable_path(self, sizeof self) ? self : argv[0];
  const char *tls = getenv("UCX_TLS");
  printf("UCX %s, UCX_TLS=%s\n", version, tls ? tls : "(default)");
  uint32_t stream_n = 1000000, flood_rounds = 6, churn_rounds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stream")) stream_n = (uint32_t)atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--flood-rounds"))
      flood_rounds = (uint32_t)atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--churn-rounds"))
      churn_rounds = (uint32_t)atoi(argv[i + 1]);
  }
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
  printf("hub listens on %s\n", g_addr);
  rk_actor_t *hub_add = launch(kAddSource, "add_one", 0);
  CHECK_OK(rk_cluster_export(c, hub_add, "hub/add"));
  CHECK_STATUS(rk_cluster_export(c, hub_add, "hub/add"),
               RK_ERR_INVALID_ARGUMENT);
  /* One name per actor: a second export would take the first one's
   * answers. */
  CHECK_STATUS(rk_cluster_export(c, hub_add, "hub/add-again"),
               RK_ERR_INVALID_ARGUMENT);
  /* Withdrawn: gone for the calling member (role_caller looks it up). */
  rk_actor_t *gone = launch(kAddSource, "add_one", 0);
  CHECK_OK(rk_cluster_export(c, gone, "hub/gone"));
  CHECK_OK(rk_cluster_unexport(c, "hub/gone"));
  rk_actor_destroy(gone);
  CHECK_STATUS(rk_cluster_unexport(c, "hub/gone"), RK_ERR_NOT_FOUND);
  rk_actor_t *sink = launch(kSinkSource, "sink", 0);
  CHECK_OK(rk_cluster_export(c, sink, "hub/sink"));

  child_t a = spawn("owner", "member-a", "a", NULL);
  CHECK_OK(rk_cluster_wait_peers(c, 1, 30 * SEC));
  test_basics(c);
  test_lookup_errors(c);
  test_big(c);
  test_stream(c, stream_n);
  test_buffered_tail(c);
  test_threads_send(c);
  test_threads_receive(c);
  test_member_calls_hub(c, hub_add);
  test_killed_mid_stream(c);
  test_flooders_killed(c, sink, flood_rounds);
  test_never_answers(c);
  test_left(c);
  test_refusals();
  test_slot_reuse();
  test_churn(churn_rounds);
  test_refused(c, &a);
  CHECK(reap(&a, 20) == 0, "member-a exits cleanly");

  rk_cluster_destroy(c);
  rk_actor_destroy(hub_add);
  rk_actor_destroy(sink);
  return rk_test_finish("cluster");
}
