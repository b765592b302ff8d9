/* bench_cluster: a remote rk actor against raw UCX active messages over the
 * same transport, side by side in one run.
 *
 *   bench_cluster [--quick] [--json] [--rounds R] [--calls N] [--stream M]
 *                 [--window W] [--paused P] [--pause-ms MS] [--traditional]
 *
 * Two processes (this one forks before either touches UCX): the server
 * exports an rk actor (echo of an 8-byte message, CPU backend; persistent,
 * or with --traditional one whose handler runs on the thread that takes
 * the request, the server's progress thread) and also answers raw AMs; the
 * client measures, in alternating rounds,
 *   - round trip: N rk_remote_actor_call vs N raw AM ping-pongs (the server
 *     replies from its progress loop), microseconds per round trip; and N
 *     rk_actor_call on a proxy of the same actor (rk_cluster_lookup_actor),
 *     against the handle's calls: what rk/actor.h's functions add;
 *   - streaming: M requests with at most W outstanding, each answered, vs
 *     the same with raw AMs: messages per second;
 *   - beside the round trip, the raw ping-pong again between workers that
 *     also hold an endpoint to each other with peer error handling (UCX
 *     connects those over TCP, and each turn of the worker then polls
 *     TCP), as rk's members watch their peers;
 * then P calls, each after a pause of --pause-ms (3 ms): rk against a raw
 * AM ping-pong whose two sides behave as rk's waiting threads do (spin
 * 100 us after activity, then sleep on the worker's event descriptor),
 * microseconds per call (medians with p10-p90 over the calls).
 * UCX_TLS picks the transport for both (the raw endpoints are made from
 * worker addresses without peer error handling, as rk's message endpoints
 * are). Reports medians with p10-p90 over the rounds and rk / raw. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "bench_json.h"
#include "bench_stats.h"
#include "cluster/ucx_api.h"
#include "rk/rk.h"

static const char kEcho[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t lo, hi; } seq_t;\n"
    "RK_HANDLER void echo(const seq_t *in, seq_t *out) {\n"
    "  out->lo = in->lo; out->hi = in->hi + 1u;\n"
    "}\n";
typedef struct {
  uint32_t lo, hi;
} seq_t;

enum { AM_PING = 20, AM_PONG = 21, AM_HELLO = 22 };

static const rk_ucp_api_t *U;
static bool g_traditional; /* the server's actor: RK_ACTOR_TRADITIONAL */

/* ---- pipes between the two processes ---------------------------------- */

static int g_rd, g_wr;

static void put(const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(g_wr, c, n);
    if (w <= 0) exit(3);
    c += w;
    n -= (size_t)w;
  }
}
static void get(void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(g_rd, c, n);
    if (r <= 0) exit(3);
    c += r;
    n -= (size_t)r;
  }
}

/* ---- raw UCX ---------------------------------------------------------- */

typedef struct raw {
  ucp_context_h ctx;
  ucp_worker_h worker;
  ucp_ep_h ep;
  uint64_t got;   /* AMs received */
  seq_t last;     /* the last one's payload */
  int efd;        /* the worker's event descriptor */
  ucp_ep_h watch; /* NULL, or the endpoint with peer error handling */
} raw_t;

/* The raw side's spin after activity before it sleeps on the event
 * descriptor (as rk's RK_CLUSTER_SPIN_US default). */
static const uint64_t kRawSpinNs = 100000;

static ucs_status_t raw_recv(void *arg, const void *h, size_t hl, void *data,
                             size_t len, const ucp_am_recv_param_t *p) {
  (void)h;
  (void)hl;
  (void)p;
  raw_t *r = arg;
  if (len >= sizeof(seq_t)) memcpy(&r->last, data, sizeof(seq_t));
  r->got++;
  return UCS_OK;
}

static void raw_send(raw_t *r, unsigned id, const seq_t *m) {
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  ucs_status_ptr_t q =
      U->ucp_am_send_nbx(r->ep, id, NULL, 0, m, sizeof *m, &prm);
  if (UCS_PTR_IS_PTR(q)) {
    while (U->ucp_request_check_status(q) == UCS_INPROGRESS)
      U->ucp_worker_progress(r->worker);
    U->ucp_request_free(q);
  } else if (UCS_PTR_IS_ERR(q)) {
    fprintf(stderr, "raw send: %s\n", U->ucs_status_string(UCS_PTR_STATUS(q)));
    exit(4);
  }
}

static ucs_status_t raw_ignore(void *arg, const void *h, size_t hl, void *data,
                               size_t len, const ucp_am_recv_param_t *p) {
  (void)arg;
  (void)h;
  (void)hl;
  (void)data;
  (void)len;
  (void)p;
  return UCS_OK;
}

/* A raw pair; `watched`: each side also holds an endpoint to the other
 * with peer error handling (UCX then connects over TCP), as every rk
 * member's peers are watched. */
static void raw_open(raw_t *r, unsigned recv_id, bool watched) {
  ucp_config_t *cfg;
  U->ucp_config_read(NULL, NULL, &cfg);
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  if (U->ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, cfg, &r->ctx) !=
      UCS_OK)
    exit(4);
  U->ucp_config_release(cfg);
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (U->ucp_worker_create(r->ctx, &wp, &r->worker) != UCS_OK) exit(4);
  if (U->ucp_worker_get_efd(r->worker, &r->efd) != UCS_OK) exit(4);
  ucp_am_handler_param_t hp;
  memset(&hp, 0, sizeof hp);
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                  UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = recv_id;
  hp.cb = raw_recv;
  hp.arg = r;
  U->ucp_worker_set_am_recv_handler(r->worker, &hp);
  hp.id = AM_HELLO;
  hp.cb = raw_ignore;
  U->ucp_worker_set_am_recv_handler(r->worker, &hp);
  /* Addresses through the pipe, then one endpoint each way. */
  ucp_address_t *addr;
  size_t n;
  U->ucp_worker_get_address(r->worker, &addr, &n);
  put(&n, sizeof n);
  put(addr, n);
  U->ucp_worker_release_address(r->worker, addr);
  size_t m;
  get(&m, sizeof m);
  void *theirs = malloc(m);
  get(theirs, m);
  ucp_ep_params_t e;
  memset(&e, 0, sizeof e);
  e.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  e.address = theirs;
  e.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  if (U->ucp_ep_create(r->worker, &e, &r->ep) != UCS_OK) exit(4);
  r->watch = NULL;
  if (watched) {
    e.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    if (U->ucp_ep_create(r->worker, &e, &r->watch) != UCS_OK) exit(4);
    /* One message on it, so that it is connected. */
    seq_t m = {0, 0};
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    ucs_status_ptr_t q =
        U->ucp_am_send_nbx(r->watch, AM_HELLO, NULL, 0, &m, sizeof m, &prm);
    if (UCS_PTR_IS_PTR(q)) {
      while (U->ucp_request_check_status(q) == UCS_INPROGRESS)
        U->ucp_worker_progress(r->worker);
      U->ucp_request_free(q);
    }
  }
  free(theirs);
}

static void raw_close(raw_t *r) {
  ucp_ep_h eps[2] = {r->ep, r->watch};
  for (int i = 0; i < 2; ++i) {
    if (!eps[i]) continue;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t q = U->ucp_ep_close_nbx(eps[i], &prm);
    if (UCS_PTR_IS_PTR(q)) {
      while (U->ucp_request_check_status(q) == UCS_INPROGRESS)
        U->ucp_worker_progress(r->worker);
      U->ucp_request_free(q);
    }
  }
  U->ucp_worker_destroy(r->worker);
  U->ucp_cleanup(r->ctx);
}

/* Sleeps on the worker's event descriptor (and `fd`, if >= 0) for at
 * most `ms`, unless the worker has events waiting. */
static void raw_sleep(raw_t *r, int fd, int ms) {
  if (U->ucp_worker_arm(r->worker) != UCS_OK) return;
  struct pollfd p[2] = {{.fd = r->efd, .events = POLLIN},
                        {.fd = fd, .events = POLLIN}};
  (void)poll(p, fd >= 0 ? 2 : 1, ms);
}

/* ---- the server ------------------------------------------------------- */

/* Answers raw pings on r until the pipe has the next command. */
static void raw_serve(raw_t *r, uint64_t *answered) {
  for (unsigned spin = 0;; ++spin) {
    U->ucp_worker_progress(r->worker);
    while (*answered < r->got) {
      seq_t m = r->last;
      m.hi++;
      raw_send(r, AM_PONG, &m);
      (*answered)++;
    }
    if ((spin & 1023) == 0) {
      struct pollfd p = {.fd = g_rd, .events = POLLIN};
      if (poll(&p, 1, 0) > 0) return; /* the next command */
    }
  }
}

static int server(void) {
  raw_t r, rw;
  memset(&r, 0, sizeof r);
  memset(&rw, 0, sizeof rw);
  raw_open(&r, AM_PING, false);
  raw_open(&rw, AM_PING, true);
  rk_backend_t *be;
  rk_context_t *ctx;
  rk_actor_t *a;
  rk_actor_options_t ao;
  rk_actor_options_init(&ao);
  if (g_traditional) ao.mode = RK_ACTOR_TRADITIONAL;
  if (rk_backend_open(RK_BACKEND_CPU, &be) != RK_OK ||
      rk_backend_create_context(be, 0, &ctx) != RK_OK ||
      rk_actor_launch(ctx, kEcho, "echo", &ao, &a) != RK_OK) {
    fprintf(stderr, "server: %s\n", rk_last_error());
    return 1;
  }
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.listen = "127.0.0.1:0";
  o.name = "bench-server";
  rk_cluster_t *c;
  if (rk_cluster_create(&o, &c) != RK_OK ||
      rk_cluster_export(c, a, "echo") != RK_OK) {
    fprintf(stderr, "server: %s\n", rk_last_error());
    return 1;
  }
  char addr[128];
  rk_cluster_address(c, addr, sizeof addr);
  put(addr, sizeof addr);
  /* Commands: 'R' serve raw AMs until the pipe says more, 'W' the same on
   * the watched pair, 'E' as 'R' but asleep on the event descriptor after
   * 100 us without a message, 'K' idle while the client uses rk, 'Q'
   * quit. */
  uint64_t answered = 0, answered_w = 0;
  for (;;) {
    char cmd;
    get(&cmd, 1);
    if (cmd == 'Q') break;
    if (cmd == 'E') {
      uint64_t active = rkb_now_ns();
      for (;;) {
        U->ucp_worker_progress(r.worker);
        while (answered < r.got) {
          seq_t m = r.last;
          m.hi++;
          raw_send(&r, AM_PONG, &m);
          answered++;
          active = rkb_now_ns();
        }
        struct pollfd p = {.fd = g_rd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0) break; /* the next command */
        if (rkb_now_ns() - active > kRawSpinNs) raw_sleep(&r, g_rd, 100);
      }
      continue;
    }
    if (cmd == 'R') raw_serve(&r, &answered);
    if (cmd == 'W') raw_serve(&rw, &answered_w);
  }
  rk_cluster_destroy(c);
  rk_actor_destroy(a);
  rk_context_destroy(ctx);
  rk_backend_destroy(be);
  raw_close(&r);
  raw_close(&rw);
  return 0;
}

/* ---- the client ------------------------------------------------------- */

typedef struct params {
  int rounds, calls, stream, window;
  int paused, pause_ms; /* calls after a pause, and the pause */
} params_t;

static double raw_rtt(raw_t *r, int n) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < n; ++i) {
    seq_t m = {(uint32_t)i, 0};
    uint64_t want = r->got + 1;
    raw_send(r, AM_PING, &m);
    while (r->got < want) U->ucp_worker_progress(r->worker);
    if (r->last.lo != (uint32_t)i) {
      fprintf(stderr, "raw: pong %u for ping %d\n", r->last.lo, i);
      exit(5);
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / n;
}

static double raw_stream(raw_t *r, int n, int window) {
  uint64_t base = r->got;
  uint64_t t0 = rkb_now_ns();
  int sent = 0;
  while (r->got - base < (uint64_t)n) {
    while (sent < n && (uint64_t)sent - (r->got - base) < (uint64_t)window) {
      seq_t m = {(uint32_t)sent, 0};
      raw_send(r, AM_PING, &m);
      sent++;
    }
    U->ucp_worker_progress(r->worker);
  }
  return n / ((double)(rkb_now_ns() - t0) / 1e9);
}

static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* One raw ping after a pause, the client spinning 100 us and then asleep
 * on its event descriptor: microseconds until the pong. */
static double raw_paused(raw_t *r, int ms, uint32_t i) {
  pause_ms(ms);
  uint64_t t0 = rkb_now_ns();
  seq_t m = {i, 0};
  uint64_t want = r->got + 1;
  raw_send(r, AM_PING, &m);
  while (r->got < want) {
    U->ucp_worker_progress(r->worker);
    if (r->got < want && rkb_now_ns() - t0 > kRawSpinNs) raw_sleep(r, -1, 100);
  }
  if (r->last.lo != i) {
    fprintf(stderr, "raw: pong %u for ping %u\n", r->last.lo, i);
    exit(5);
  }
  return (double)(rkb_now_ns() - t0) / 1e3;
}

static double rk_paused(rk_remote_actor_t *h, int ms, uint32_t i) {
  pause_ms(ms);
  uint64_t t0 = rkb_now_ns();
  seq_t q = {i, 0}, a;
  if (rk_remote_actor_call(h, &q, sizeof q, &a, sizeof a, RK_TIMEOUT_INFINITE,
                           NULL) != RK_OK ||
      a.lo != i) {
    fprintf(stderr, "rk call: %s\n", rk_last_error());
    exit(5);
  }
  return (double)(rkb_now_ns() - t0) / 1e3;
}

static double rk_rtt(rk_remote_actor_t *h, int n) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < n; ++i) {
    seq_t q = {(uint32_t)i, 0}, a;
    if (rk_remote_actor_call(h, &q, sizeof q, &a, sizeof a, RK_TIMEOUT_INFINITE,
                             NULL) != RK_OK ||
        a.lo != (uint32_t)i) {
      fprintf(stderr, "rk call: %s\n", rk_last_error());
      exit(5);
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / n;
}

/* The same calls through rk/actor.h on a proxy (rk_cluster_lookup_actor). */
static double proxy_rtt(rk_actor_t *p, int n) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < n; ++i) {
    seq_t q = {(uint32_t)i, 0}, a;
    if (rk_actor_call(p, &q, sizeof q, &a, sizeof a, RK_TIMEOUT_INFINITE,
                      NULL) != RK_OK ||
        a.lo != (uint32_t)i) {
      fprintf(stderr, "proxy call: %s\n", rk_last_error());
      exit(5);
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / n;
}

static double rk_stream(rk_remote_actor_t *h, int n, int window) {
  uint64_t t0 = rkb_now_ns();
  int sent = 0, got = 0;
  while (got < n) {
    while (sent < n && sent - got < window) {
      seq_t q = {(uint32_t)sent, 0};
      if (rk_remote_actor_send(h, &q, sizeof q, RK_TIMEOUT_INFINITE, NULL) !=
          RK_OK)
        exit(5);
      sent++;
    }
    seq_t a;
    if (rk_remote_actor_receive(h, &a, sizeof a, RK_TIMEOUT_INFINITE, NULL) !=
            RK_OK ||
        a.lo != (uint32_t)got) {
      fprintf(stderr, "rk receive: %s\n", rk_last_error());
      exit(5);
    }
    got++;
  }
  return n / ((double)(rkb_now_ns() - t0) / 1e9);
}

static void row(const char *what, const char *unit, const double *rk,
                const double *raw, int n, bool lower_is_better,
                rkb_summary_t *out_rk, rkb_summary_t *out_raw,
                double *out_ratio) {
  rkb_summary_t a = rkb_summarize(rk, (size_t)n);
  rkb_summary_t b = rkb_summarize(raw, (size_t)n);
  double ratio = lower_is_better ? a.median / b.median : b.median / a.median;
  printf("%-22s %10.2f [%8.2f-%8.2f] %10.2f [%8.2f-%8.2f] %s   rk/raw %.2f\n",
         what, a.median, a.p10, a.p90, b.median, b.p10, b.p90, unit, ratio);
  *out_rk = a;
  *out_raw = b;
  *out_ratio = ratio;
}

static int client(params_t pr, bool json) {
  raw_t r, rw;
  memset(&r, 0, sizeof r);
  memset(&rw, 0, sizeof rw);
  raw_open(&r, AM_PONG, false);
  raw_open(&rw, AM_PONG, true);
  char addr[128];
  get(addr, sizeof addr);
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.connect = addr;
  o.name = "bench-client";
  rk_cluster_t *c;
  rk_remote_actor_t *h;
  rk_actor_t *px;
  if (rk_cluster_create(&o, &c) != RK_OK ||
      rk_cluster_lookup(c, "echo", 10000000000ull, &h) != RK_OK ||
      rk_cluster_lookup_actor(c, "echo", 10000000000ull, &px) != RK_OK) {
    fprintf(stderr, "client: %s\n", rk_last_error());
    return 1;
  }
  rkb_json_t j;
  if (json) rkb_json_begin(&j, "cluster");
  const char *tls = getenv("UCX_TLS");
  const char *version = NULL;
  rk_cluster_available(&version);
  printf(
      "bench_cluster: UCX %s, UCX_TLS=%s, %d rounds of %d calls and %d "
      "streamed messages (window %d), 8-byte messages, %s actor\n",
      version, tls ? tls : "(default)", pr.rounds, pr.calls, pr.stream,
      pr.window, g_traditional ? "traditional" : "persistent");
  double *rk_lat = calloc((size_t)pr.rounds, sizeof(double));
  double *raw_lat = calloc((size_t)pr.rounds, sizeof(double));
  double *rk_tp = calloc((size_t)pr.rounds, sizeof(double));
  double *raw_tp = calloc((size_t)pr.rounds, sizeof(double));
  double *raw_w = calloc((size_t)pr.rounds, sizeof(double));
  double *px_lat = calloc((size_t)pr.rounds, sizeof(double));
  /* One warm-up of each, then alternating rounds. */
  for (int i = -1; i < pr.rounds; ++i) {
    put("W", 1);
    double w = raw_rtt(&rw, pr.calls);
    put("R", 1);
    double a = raw_rtt(&r, pr.calls);
    double b = raw_stream(&r, pr.stream, pr.window);
    put("K", 1);
    /* The handle and the proxy in alternating order. */
    double x, z;
    if (i % 2) {
      z = proxy_rtt(px, pr.calls);
      x = rk_rtt(h, pr.calls);
    } else {
      x = rk_rtt(h, pr.calls);
      z = proxy_rtt(px, pr.calls);
    }
    double y = rk_stream(h, pr.stream, pr.window);
    if (i < 0) continue;
    px_lat[i] = z;
    raw_lat[i] = a;
    raw_tp[i] = b;
    raw_w[i] = w;
    rk_lat[i] = x;
    rk_tp[i] = y;
  }
  /* Calls after a pause, alternating in blocks of five. */
  double *rk_p = calloc((size_t)pr.paused + 1, sizeof(double));
  double *raw_p = calloc((size_t)pr.paused + 1, sizeof(double));
  for (int i = 0; i < pr.paused; i += 5) {
    put("E", 1);
    for (int k = i; k < i + 5 && k < pr.paused; ++k)
      raw_p[k] = raw_paused(&r, pr.pause_ms, (uint32_t)k);
    put("K", 1);
    for (int k = i; k < i + 5 && k < pr.paused; ++k)
      rk_p[k] = rk_paused(h, pr.pause_ms, (uint32_t)k);
  }
  put("Q", 1);
  printf("%-22s %10s %21s %10s %21s\n", "", "rk median", "[p10-p90]", "raw UCX",
         "[p10-p90]");
  rkb_summary_t s[6];
  double ratio[3];
  row("call round trip", "us", rk_lat, raw_lat, pr.rounds, true, &s[0], &s[1],
      &ratio[0]);
  row("streaming", "msg/s", rk_tp, raw_tp, pr.rounds, false, &s[2], &s[3],
      &ratio[1]);
  const rkb_summary_t spx = rkb_summarize(px_lat, (size_t)pr.rounds);
  printf(
      "%-22s %10.2f [%8.2f-%8.2f] us   (rk_actor_call on a proxy; / "
      "the handle's %.2f)\n",
      "  through rk_actor_t", spx.median, spx.p10, spx.p90,
      spx.median / s[0].median);
  const rkb_summary_t sw = rkb_summarize(raw_w, (size_t)pr.rounds);
  printf(
      "%-22s %10s %21s %10.2f [%8.2f-%8.2f] us   (raw with a watching "
      "endpoint per side, peer error handling: over TCP, as rk's)\n",
      "  raw, peers watched", "", "", sw.median, sw.p10, sw.p90);
  if (pr.paused) {
    char what[32];
    snprintf(what, sizeof what, "call after %d ms", pr.pause_ms);
    row(what, "us", rk_p, raw_p, pr.paused, true, &s[4], &s[5], &ratio[2]);
    printf(
        "(%d calls each after a pause; raw: both sides spin 100 us, then "
        "sleep on the worker's event descriptor)\n",
        pr.paused);
  }
  if (json) {
    rkb_json_str(&j, "ucx_version", version);
    rkb_json_str(&j, "ucx_tls", tls ? tls : "");
    rkb_json_str(&j, "actor_mode",
                 g_traditional ? "traditional" : "persistent");
    rkb_json_int(&j, "calls", pr.calls);
    rkb_json_int(&j, "stream", pr.stream);
    rkb_json_int(&j, "window", pr.window);
    rkb_json_summary(&j, "rk_call_us", &s[0]);
    rkb_json_summary(&j, "raw_am_pingpong_us", &s[1]);
    rkb_json_num(&j, "call_ratio", ratio[0]);
    rkb_json_summary(&j, "rk_proxy_call_us", &spx);
    rkb_json_num(&j, "proxy_call_ratio", spx.median / s[0].median);
    rkb_json_summary(&j, "raw_watched_pingpong_us", &sw);
    rkb_json_summary(&j, "rk_stream_msgs_per_s", &s[2]);
    rkb_json_summary(&j, "raw_am_stream_msgs_per_s", &s[3]);
    rkb_json_num(&j, "stream_ratio", ratio[1]);
    if (pr.paused) {
      rkb_json_int(&j, "paused_calls", pr.paused);
      rkb_json_int(&j, "pause_ms", pr.pause_ms);
      rkb_json_summary(&j, "rk_paused_call_us", &s[4]);
      rkb_json_summary(&j, "raw_paused_call_us", &s[5]);
      rkb_json_num(&j, "paused_call_ratio", ratio[2]);
    }
    rkb_json_finish(&j);
  }
  rk_remote_actor_release(h);
  rk_actor_destroy(px);
  rk_cluster_destroy(c);
  raw_close(&r);
  free(rk_lat);
  free(raw_lat);
  free(rk_tp);
  free(raw_tp);
  free(rk_p);
  free(raw_p);
  free(raw_w);
  free(px_lat);
  raw_close(&rw);
  return 0;
}

int main(int argc, char **argv) {
  params_t p = {15, 2000, 20000, 64, 30, 3};
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    long v;
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (!strcmp(argv[i], "--traditional")) {
      g_traditional = true;
    } else if (!strcmp(argv[i], "--quick")) {
      p = (params_t){3, 200, 2000, 64, 5, 3};
    } else if (i + 1 < argc && !strcmp(argv[i], "--rounds") &&
               !rkb_parse_long(argv[i + 1], 1, 1000, &v)) {
      p.rounds = (int)v;
      ++i;
    } else if (i + 1 < argc && !strcmp(argv[i], "--calls") &&
               !rkb_parse_long(argv[i + 1], 1, 10000000, &v)) {
      p.calls = (int)v;
      ++i;
    } else if (i + 1 < argc && !strcmp(argv[i], "--stream") &&
               !rkb_parse_long(argv[i + 1], 1, 100000000, &v)) {
      p.stream = (int)v;
      ++i;
    } else if (i + 1 < argc && !strcmp(argv[i], "--window") &&
               !rkb_parse_long(argv[i + 1], 1, 1024, &v)) {
      p.window = (int)v;
      ++i;
    } else if (i + 1 < argc && !strcmp(argv[i], "--paused") &&
               !rkb_parse_long(argv[i + 1], 0, 100000, &v)) {
      p.paused = (int)v;
      ++i;
    } else if (i + 1 < argc && !strcmp(argv[i], "--pause-ms") &&
               !rkb_parse_long(argv[i + 1], 1, 10000, &v)) {
      p.pause_ms = (int)v;
      ++i;
    } else {
      fprintf(stderr,
              "usage: bench_cluster [--quick] [--json] [--rounds R] "
              "[--calls N] [--stream M] [--window W (<= 1024)] "
              "[--paused P] [--pause-ms MS] [--traditional]\n");
      return 2;
    }
  }
  /* Fork before anything loads UCX: its library keeps threads and state
   * that a fork does not carry over. */
  int a[2], b[2];
  if (pipe(a) || pipe(b)) return 1;
  fflush(stdout);
  pid_t pid = fork();
  if (rk__ucp_api(&U) != RK_OK) {
    if (pid == 0) return 77;
    printf("SKIPPED: %s\n", rk_last_error());
    waitpid(pid, NULL, 0);
    return 77;
  }
  if (pid == 0) {
    g_rd = a[0];
    g_wr = b[1];
    return server();
  }
  g_rd = b[0];
  g_wr = a[1];
  int rc = client(p, json);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_cluster: the server exited %d\n", st);
    return 1;
  }
  return rc;
}
