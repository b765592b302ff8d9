/* probe_shm_wedge - does a process killed while it sends UCX active
 * messages over shared memory stall the receiver? (docs/cluster.md,
 * "Failures".)
 *
 *   UCX_TLS=shm probe_shm_wedge [--rounds N] [--size BYTES] [--per-sender]
 *
 * Three processes over raw UCX (no rk): R receives; C sends R a one-byte
 * message every 200 us; S streams BYTES-byte messages to R as fast as it
 * can. Each round forks a new S, lets it stream for 1-21 ms and kills it
 * with SIGKILL; then C's messages must still reach R within 5 s. A round
 * where none does is a wedge: R's receive path stopped for everyone.
 *
 * --per-sender: R receives C and the streamers on two workers of one
 * context (each worker has a shared-memory FIFO of its own), the repair
 * docs/cluster.md names. Then a wedge can stop only the streamers' worker:
 * the probe counts the rounds after which the new streamer's messages no
 * longer arrived, and C's pings must get through in every round.
 *
 * Prints one line and exits 0 when no round wedged, 1 when one did (the
 * probe stops there), 77 when UCX cannot be loaded. The outcome is a
 * matter of chance (the kill must land inside a send), so this is a probe
 * to run by hand, not a test. Seen on the 2-CPU test VM (UCX 1.13.1,
 * 2026-11-26, other jobs loading both CPUs): with UCX_TLS=shm three runs
 * of 40 rounds wedged in rounds 12, 12 and 2; with UCX_TLS=tcp two runs
 * of 40 rounds never did. With --per-sender (UCX_TLS=shm, same VM, later
 * that day): four runs of 40 rounds, the pings never stopped, while the
 * streamers' worker wedged in each (2 to 39 later streamers got nothing
 * through); without it three runs wedged in rounds 1, 20 and 1.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "cluster/ucx_api.h"
#include "rk/rk.h"

enum { kAmId = 7, kPingByte = 'C', kAddrMax = 4096 };

/* Shared by the processes (an anonymous shared mapping made before the
 * forks). */
typedef struct {
  uint64_t pings, streamed; /* atomic: what R received */
  uint32_t stop;            /* atomic */
  uint64_t addr_len;        /* atomic: R's worker address, once written */
  unsigned char addr[kAddrMax];
  /* --per-sender: the address of R's worker for the streamers. */
  uint64_t addr2_len;
  unsigned char addr2[kAddrMax];
} shared_t;

static shared_t *g_sh;
static const rk_ucp_api_t *U;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t load(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static ucs_status_t on_message(void *arg, const void *header, size_t header_len,
                               void *data, size_t len,
                               const ucp_am_recv_param_t *param) {
  (void)arg;
  (void)header;
  (void)header_len;
  (void)param;
  const bool ping = len >= 1 && ((const unsigned char *)data)[0] == kPingByte;
  __atomic_add_fetch(ping ? &g_sh->pings : &g_sh->streamed, 1u,
                     __ATOMIC_RELEASE);
  return UCS_OK;
}

static void open_worker(ucp_context_h *ctx, ucp_worker_h *worker) {
  ucp_config_t *cfg;
  if (U->ucp_config_read(NULL, NULL, &cfg) != UCS_OK) _exit(4);
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_AM;
  ucs_status_t s =
      U->ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, cfg, ctx);
  U->ucp_config_release(cfg);
  if (s != UCS_OK) _exit(4);
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (U->ucp_worker_create(*ctx, &wp, worker) != UCS_OK) _exit(4);
}

/* To R's worker for pings, or (stream) R's worker for the streamers. */
static ucp_ep_h connect_to_r(ucp_worker_h worker, bool stream) {
  ucp_ep_params_t ep;
  memset(&ep, 0, sizeof ep);
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep.address = (const ucp_address_t *)(stream && g_sh->addr2_len ? g_sh->addr2
                                                                 : g_sh->addr);
  ucp_ep_h e;
  if (U->ucp_ep_create(worker, &ep, &e) != UCS_OK) _exit(5);
  return e;
}

static void send_one(ucp_worker_h worker, ucp_ep_h ep, const void *buf,
                     size_t n) {
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  void *q = U->ucp_am_send_nbx(ep, kAmId, NULL, 0, buf, n, &prm);
  if (UCS_PTR_IS_ERR(q)) _exit(6);
  if (q) {
    while (U->ucp_request_check_status(q) == UCS_INPROGRESS)
      U->ucp_worker_progress(worker);
    U->ucp_request_free(q);
  }
  U->ucp_worker_progress(worker);
}

/* Sets the handler on a worker of R and publishes its address. */
static void publish_worker(ucp_worker_h worker, unsigned char *to,
                           uint64_t *len) {
  ucp_am_handler_param_t hp;
  memset(&hp, 0, sizeof hp);
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  hp.id = kAmId;
  hp.cb = on_message;
  if (U->ucp_worker_set_am_recv_handler(worker, &hp) != UCS_OK) _exit(4);
  ucp_address_t *addr;
  size_t n;
  if (U->ucp_worker_get_address(worker, &addr, &n) != UCS_OK || n > kAddrMax)
    _exit(4);
  memcpy(to, addr, n);
  __atomic_store_n(len, (uint64_t)n, __ATOMIC_RELEASE);
}

static void run_receiver(bool per_sender) {
  ucp_context_h ctx;
  ucp_worker_h worker, worker2 = NULL;
  open_worker(&ctx, &worker);
  if (per_sender) {
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof wp);
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (U->ucp_worker_create(ctx, &wp, &worker2) != UCS_OK) _exit(4);
    publish_worker(worker2, g_sh->addr2, &g_sh->addr2_len);
  }
  publish_worker(worker, g_sh->addr, &g_sh->addr_len);
  while (!__atomic_load_n(&g_sh->stop, __ATOMIC_ACQUIRE)) {
    U->ucp_worker_progress(worker);
    if (worker2) U->ucp_worker_progress(worker2);
  }
  _exit(0);
}

static void run_pinger(void) {
  ucp_context_h ctx;
  ucp_worker_h worker;
  open_worker(&ctx, &worker);
  ucp_ep_h ep = connect_to_r(worker, false);
  const unsigned char m = kPingByte;
  while (!__atomic_load_n(&g_sh->stop, __ATOMIC_ACQUIRE)) {
    send_one(worker, ep, &m, 1);
    const uint64_t until = now_ns() + 200000u;
    while (now_ns() < until) U->ucp_worker_progress(worker);
  }
  _exit(0);
}

static void run_streamer(size_t size) {
  ucp_context_h ctx;
  ucp_worker_h worker;
  open_worker(&ctx, &worker);
  ucp_ep_h ep = connect_to_r(worker, true);
  unsigned char *m = calloc(1, size);
  if (!m) _exit(7);
  m[0] = 'S';
  for (;;) send_one(worker, ep, m, size);
}

int main(int argc, char **argv) {
  int rounds = 40;
  size_t size = 1024;
  bool per_sender = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      size = (size_t)atol(argv[++i]);
    } else if (strcmp(argv[i], "--per-sender") == 0) {
      per_sender = true;
    } else {
      fprintf(stderr,
              "usage: UCX_TLS=shm %s [--rounds N] [--size BYTES] "
              "[--per-sender]\n",
              argv[0]);
      return 2;
    }
  }
  if (rounds < 1 || size < 1 || size > (1u << 20)) {
    fprintf(stderr, "probe_shm_wedge: rounds >= 1, 1 <= size <= 1 MiB\n");
    return 2;
  }
  if (rk__ucp_api(&U) != RK_OK) {
    printf("SKIPPED: %s\n", rk_last_error());
    return 77;
  }
  g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_sh == MAP_FAILED) return 3;
  memset(g_sh, 0, sizeof *g_sh);
  const pid_t r = fork();
  if (r == 0) run_receiver(per_sender);
  while (!load(&g_sh->addr_len)) usleep(1000);
  const pid_t c = fork();
  if (c == 0) run_pinger();
  srand(12345);
  int wedged_at = -1;
  int stream_stalled = 0;  /* rounds whose streamer got nothing through */
  uint64_t after_kill = 0; /* pings received in the 5 s after the kill */
  for (int i = 0; i < rounds && wedged_at < 0; ++i) {
    const pid_t s = fork();
    if (s == 0) run_streamer(size);
    /* Once it streams, 1-21 ms more, then the kill. */
    const uint64_t streamed = load(&g_sh->streamed);
    uint64_t t0 = now_ns();
    while (load(&g_sh->streamed) == streamed && now_ns() - t0 < 2000000000u)
      usleep(100);
    if (load(&g_sh->streamed) == streamed) ++stream_stalled;
    usleep(1000 + (useconds_t)(rand() % 20000));
    kill(s, SIGKILL);
    waitpid(s, NULL, 0);
    const uint64_t pings = load(&g_sh->pings);
    t0 = now_ns();
    while (load(&g_sh->pings) < pings + 20 && now_ns() - t0 < 5000000000u)
      usleep(200);
    after_kill = load(&g_sh->pings) - pings;
    if (after_kill < 20) wedged_at = i;
  }
  const char *tls = getenv("UCX_TLS");
  if (wedged_at >= 0)
    printf(
        "WEDGED in round %d of %d (UCX_TLS=%s, %zu-byte messages): the "
        "receiver took %llu pings in 5 s after the kill\n",
        wedged_at + 1, rounds, tls ? tls : "(unset)", size,
        (unsigned long long)after_kill);
  else
    printf(
        "no wedge in %d rounds (UCX_TLS=%s, %zu-byte messages%s; %llu "
        "pings, %llu streamed messages received; %d rounds whose streamer "
        "got nothing through in 2 s)\n",
        rounds, tls ? tls : "(unset)", size,
        per_sender ? ", a worker per sender" : "",
        (unsigned long long)load(&g_sh->pings),
        (unsigned long long)load(&g_sh->streamed), stream_stalled);
  __atomic_store_n(&g_sh->stop, 1u, __ATOMIC_RELEASE);
  kill(c, SIGKILL);
  kill(r, SIGKILL);
  waitpid(c, NULL, 0);
  waitpid(r, NULL, 0);
  return wedged_at >= 0 ? 1 : 0;
}
