/* The CUDA persistent actor kernels that rk_transpile() generates
 * (persistent_actors) run on host threads, one per block, against a host
 * side written from abi/actor_abi.h: the protocol's logic (claims, answers
 * in request order, back-pressure, counters, the clock, run states,
 * termination) checked without a GPU.
 *
 * Built and run by test_cuda_actor.c with the C++ compiler:
 *   c++ -std=c++17 -pthread -I src -DRK_ACTOR_CU='"actors.cu"' this.cc
 * where actors.cu is the CUDA output of the four corpus actors (add_one,
 * counter, checked_div, account) with its PTX memory helpers cut out; they
 * are defined below with the C++ atomics of the same meaning, and so are
 * the few CUDA built-ins the kernels use. The host's memory model is
 * stronger than a GPU's, so this says nothing about fences (NVRTC compiles
 * the real thing, and the CUDA tests run it on a device); it does catch a
 * wrong claim, a lost or reordered answer, a miscounted error, a hang.
 *
 * Prints one line per scenario and exits 0 when every check passed, 1
 * otherwise; a scenario stuck for 20 seconds fails the run at once.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <thread>
#include <vector>

/* The ABI header is C11; its assertions hold the same in C++. */
#define _Static_assert static_assert
#include "abi/actor_abi.h"

#ifndef RK_ACTOR_CU
#error "define RK_ACTOR_CU as the quoted path of the generated CUDA file"
#endif

/* ---- CUDA as the generated code sees it ---------------------------------
 */

struct host_dim3 {
  unsigned int x, y, z;
};
static thread_local host_dim3 threadIdx, blockIdx;
static host_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};

#define __device__
#define __global__
/* A block is a thread here: its shared memory is thread-local. */
#define __shared__ thread_local
#define __launch_bounds__(threads)

/* Short waits spin; the longer ones give the CPU away (this machine may
 * have fewer cores than there are "blocks"). */
static void __nanosleep(unsigned int ns) {
  if (ns >= 256) sched_yield();
}
static unsigned long long atomicCAS(unsigned long long *p,
                                    unsigned long long expected,
                                    unsigned long long desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return expected;
}
static unsigned long long atomicAdd(unsigned long long *p,
                                    unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* The helpers cut from the generated file: acquire loads and release
 * stores, at system scope (the host's memory) and GPU scope (rk_sched). */
static unsigned long long rk_pa_load_sys_u64(const unsigned char *p) {
  return __atomic_load_n((const unsigned long long *)p, __ATOMIC_ACQUIRE);
}
static unsigned int rk_pa_load_sys_u32(const unsigned char *p) {
  return __atomic_load_n((const unsigned int *)p, __ATOMIC_ACQUIRE);
}
static void rk_pa_store_sys_u32(unsigned char *p, unsigned int v) {
  __atomic_store_n((unsigned int *)p, v, __ATOMIC_RELEASE);
}
static void rk_pa_store_sys_u64(unsigned char *p, unsigned long long v) {
  __atomic_store_n((unsigned long long *)p, v, __ATOMIC_RELEASE);
}
static void rk_pa_store_relaxed_sys_u64(unsigned char *p,
                                        unsigned long long v) {
  __atomic_store_n((unsigned long long *)p, v, __ATOMIC_RELAXED);
}
static void rk_pa_load2_sys_u64(const unsigned char *p, const unsigned char *q,
                                unsigned long long *a, unsigned long long *b) {
  *a = __atomic_load_n((const unsigned long long *)p, __ATOMIC_RELAXED);
  *b = __atomic_load_n((const unsigned long long *)q, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
}
static unsigned long long rk_pa_load_dev_u64(const unsigned char *p) {
  return __atomic_load_n((const unsigned long long *)p, __ATOMIC_ACQUIRE);
}
static void rk_pa_store_dev_u64(unsigned char *p, unsigned long long v) {
  __atomic_store_n((unsigned long long *)p, v, __ATOMIC_RELEASE);
}
static void rk_pa_store2_relaxed_dev_u64(unsigned char *p,
                                         unsigned long long x,
                                         unsigned long long y) {
  __atomic_store_n((unsigned long long *)p, x, __ATOMIC_RELAXED);
  __atomic_store_n((unsigned long long *)p + 1, y, __ATOMIC_RELAXED);
}
static void rk_pa_peek2_dev_u64(const unsigned char *p, unsigned long long *x,
                                unsigned long long *y) {
  *x = __atomic_load_n((const unsigned long long *)p, __ATOMIC_RELAXED);
  *y = __atomic_load_n((const unsigned long long *)p + 1, __ATOMIC_RELAXED);
}
static void rk_pa_store_relaxed_dev_u64(unsigned char *p,
                                        unsigned long long v) {
  __atomic_store_n((unsigned long long *)p, v, __ATOMIC_RELAXED);
}
static void rk_pa_load2_dev_u64(const unsigned char *p, const unsigned char *q,
                                unsigned long long *a, unsigned long long *b) {
  *a = rk_pa_load_dev_u64(p);
  *b = rk_pa_load_dev_u64(q);
}
static unsigned long long rk_pa_peek_dev_u64(const unsigned char *p) {
  return __atomic_load_n((const unsigned long long *)p, __ATOMIC_RELAXED);
}
static unsigned long long rk_pa_peek_sys_u64(const unsigned char *p) {
  return __atomic_load_n((const unsigned long long *)p, __ATOMIC_RELAXED);
}
static void rk_pa_fence_dev(void) { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
static void rk_pa_fence_sys(void) { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
/* The SM's cycle counter: nanoseconds here. */
static unsigned long long rk_pa_cycles(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull +
         (unsigned long long)ts.tv_nsec;
}
static unsigned long long rk_pa_load_gpu(const unsigned long long *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static void rk_pa_store_gpu(unsigned long long *p, unsigned long long v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#include RK_ACTOR_CU

/* The negative controls: the same kernels with the K2K protocol broken on
 * purpose (test_cuda_actor.c edits the text), each in a namespace of its
 * own. RK_BUG_NO_CREDIT_CU: the receiver never releases an inbox slot, so
 * the sender's credit never comes back. RK_BUG_PUBLISH_EARLY_CU: the
 * sender publishes a channel's tail before it writes the slots (and
 * dawdles in between, rk_test_dawdle). RK_BUG_WORDS_UNCHECKED_CU: the
 * receiver of word slots takes a message once its first word is marked,
 * without waiting for the others' marks, and the sender dawdles after the
 * first word. RK_WORDS_SLOW_CU: the sender's dawdle alone (not a bug: the
 * receiver waits for every word). */
/* Long enough that the other side polls meanwhile even on a loaded
 * 2-CPU machine (200 us let words-unchecked go unnoticed there). */
static void rk_test_dawdle() { usleep(1000); }
#ifdef RK_BUG_NO_CREDIT_CU
namespace bug_no_credit {
#include RK_BUG_NO_CREDIT_CU
}
#endif
#ifdef RK_BUG_PUBLISH_EARLY_CU
namespace bug_publish_early {
#include RK_BUG_PUBLISH_EARLY_CU
}
#endif
#ifdef RK_BUG_WORDS_UNCHECKED_CU
namespace bug_words_unchecked {
#include RK_BUG_WORDS_UNCHECKED_CU
}
#endif
#ifdef RK_WORDS_SLOW_CU
namespace words_slow {
#include RK_WORDS_SLOW_CU
}
#endif

/* ---- Checks -------------------------------------------------------------
 */

static int g_failures;

static void fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(const char *file, int line, const char *fmt, ...) {
  if (g_failures++ >= 20) return;
  printf("FAIL %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

#define EXPECT(cond, ...) \
  ((cond) ? true : (fail(__FILE__, __LINE__, __VA_ARGS__), false))

static double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- The host side of one actor -----------------------------------------
 */

typedef void kernel_fn(unsigned char *, unsigned char *, unsigned char *,
                       unsigned char *, unsigned char *, unsigned char *,
                       unsigned long long *, unsigned char *, unsigned char *);

enum { kKmemBytes = 64 * 1024 }; /* rk_k2k_mem: words, scratch, buffers */

struct host_actor {
  const char *name = nullptr;
  rk_abi_control_t *control = nullptr;
  rk_abi_ring_t *in = nullptr, *out = nullptr;
  unsigned char *in_slots = nullptr, *out_slots = nullptr, *state = nullptr;
  unsigned long long *sched = nullptr;
  rk_abi_k2k_t *k2k = nullptr; /* the K2K wiring and counters */
  unsigned char *kmem = nullptr;
  std::vector<rk_abi_chan_t *> chans; /* channels into it (it frees them) */
  bool exact_clock = true; /* false for K2K: sends and inbox tick it too */
  unsigned int blocks = 0;
  kernel_fn *kernel = nullptr;
  std::vector<std::thread> threads;
  std::vector<uint64_t> stamps; /* request timestamps by correlation id */
  uint64_t next_id = 0;         /* the last id sent */
  uint64_t received = 0;        /* responses taken */
  uint64_t clock = 0;           /* what the actor's clock must read */
  uint64_t errors = 0;          /* handler errors answered */
  int32_t last_error = 0;
  double started = 0;
  int failures_before = 0; /* g_failures when the scenario began */
};

/* The scheduling words before a launch, as the backend sets them: claim
 * and publish from `head`, no block out, and the kernel's copies of the
 * control block's clock and counters. */
static void set_sched(host_actor *a, unsigned long long head) {
  const rk_abi_control_t *c = a->control;
  const unsigned long long words[8] = {head,         head,         0, 0,
                                       c->clock,     c->processed,
                                       c->errors,    0};
  memcpy(a->sched, words, sizeof words);
}

static void *zalloc(size_t n) {
  n = (n + RK_ABI_LINE - 1) / RK_ABI_LINE * RK_ABI_LINE;
  void *p = aligned_alloc(RK_ABI_LINE, n ? n : RK_ABI_LINE);
  if (!p) {
    printf("FAIL: out of memory\n");
    exit(1);
  }
  memset(p, 0, n);
  return p;
}

static void ring_init(rk_abi_ring_t *r, uint32_t capacity, uint32_t payload) {
  r->magic = RK_ABI_RING_MAGIC;
  r->version = RK_ABI_VERSION;
  r->capacity = capacity;
  r->slot_size = rk_abi_slot_size(payload);
}

static uint32_t load32(const uint32_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static uint64_t load64(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Fails the run at once (the kernel threads cannot be joined) with the
 * actor's indices, once `what` has taken more than 20 seconds. */
static double g_watchdog_s = 20.0; /* shorter for the negative controls */

static void watchdog(const host_actor *a, double since, const char *what) {
  if (now_s() - since < g_watchdog_s) return;
  printf(
      "FAIL %s: stuck %s: in head %llu tail %llu, out head %llu tail %llu, "
      "claimed %llu published %llu exited %llu, run_state %u\n",
      a->name, what, (unsigned long long)load64(&a->in->head),
      (unsigned long long)load64(&a->in->tail),
      (unsigned long long)load64(&a->out->head),
      (unsigned long long)load64(&a->out->tail), a->sched[0], a->sched[1],
      a->sched[2], load32(&a->control->run_state));
  fflush(stdout);
  _exit(1);
}

static void wait_run_state(const host_actor *a, uint32_t want) {
  double since = now_s();
  while (load32(&a->control->run_state) != want) {
    watchdog(a, since, "waiting for a run state");
    sched_yield();
  }
}

/* Starts `kernel` with `blocks` blocks of one thread (the kernel's own
 * threads 1.. only leave, which one more thread checks first). */
/* One thread per block, each running the kernel as thread (0, 0, 0). */
static void launch_blocks(host_actor *a) {
  kernel_fn *kernel = a->kernel;
  unsigned char *ctl = (unsigned char *)a->control;
  unsigned char *in = (unsigned char *)a->in, *out = (unsigned char *)a->out;
  unsigned char *in_slots = a->in_slots, *out_slots = a->out_slots;
  unsigned char *state = a->state;
  unsigned long long *sched = a->sched;
  unsigned char *k2k = (unsigned char *)a->k2k, *kmem = a->kmem;
  gridDim = {a->blocks, 1, 1};
  for (unsigned int b = 0; b < a->blocks; ++b)
    a->threads.emplace_back([=] {
      blockIdx = {b, 0, 0};
      threadIdx = {0, 0, 0};
      kernel(ctl, in, out, in_slots, out_slots, state, sched, k2k, kmem);
    });
}

static void actor_start(host_actor *a, const char *name, kernel_fn *kernel,
                        unsigned int blocks, uint32_t in_capacity,
                        uint32_t out_capacity, uint32_t in_payload,
                        uint32_t out_payload, uint32_t state_size,
                        bool active) {
  a->name = name;
  a->failures_before = g_failures;
  a->control = (rk_abi_control_t *)zalloc(sizeof *a->control);
  a->control->magic = RK_ABI_CONTROL_MAGIC;
  a->control->version = RK_ABI_VERSION;
  a->control->in_payload = in_payload;
  a->control->out_payload = out_payload;
  a->control->state_size = state_size;
  a->control->active = active ? 1u : 0u;
  /* A clock that already ran: the device must continue it. */
  a->control->clock = 5000;
  a->clock = 5000;
  a->in = (rk_abi_ring_t *)zalloc(sizeof *a->in);
  a->out = (rk_abi_ring_t *)zalloc(sizeof *a->out);
  ring_init(a->in, in_capacity, in_payload);
  ring_init(a->out, out_capacity, out_payload);
  a->in_slots = (unsigned char *)zalloc((size_t)in_capacity *
                                        rk_abi_slot_size(in_payload));
  a->out_slots = (unsigned char *)zalloc((size_t)out_capacity *
                                         rk_abi_slot_size(out_payload));
  a->state = state_size ? (unsigned char *)zalloc(state_size) : nullptr;
  a->sched = (unsigned long long *)zalloc(8 * sizeof *a->sched);
  set_sched(a, 0);
  a->k2k = (rk_abi_k2k_t *)zalloc(sizeof *a->k2k);
  a->k2k->magic = RK_ABI_K2K_MAGIC;
  a->k2k->version = RK_ABI_VERSION;
  a->kmem = (unsigned char *)zalloc(kKmemBytes);
  a->blocks = blocks;
  a->kernel = kernel;
  a->stamps.assign(1, 0);
  gridDim = {blocks, 1, 1};
  unsigned char *ctl = (unsigned char *)a->control;
  unsigned char *in = (unsigned char *)a->in, *out = (unsigned char *)a->out;
  unsigned char *in_slots = a->in_slots, *out_slots = a->out_slots;
  unsigned char *state = a->state;
  unsigned long long *sched = a->sched;
  unsigned char *k2k = (unsigned char *)a->k2k, *kmem = a->kmem;
  std::thread other([=] {
    blockIdx = {0, 0, 0};
    threadIdx = {1, 0, 0};
    kernel(ctl, in, out, in_slots, out_slots, state, sched, k2k, kmem);
  });
  other.join();
  EXPECT(load32(&a->control->run_state) == RK_ABI_RUN_STARTING,
         "%s: thread 1 of a block touched the control block", name);
  launch_blocks(a);
  a->started = now_s();
  wait_run_state(a, active ? RK_ABI_RUN_ACTIVE : RK_ABI_RUN_IDLE);
}

/* Publishes one request; false when the input ring is full. Timestamps
 * jump ahead of the actor's clock now and then, so both branches of its
 * max() are taken. */
static bool try_send(host_actor *a, const void *payload, uint32_t n) {
  uint64_t tail = a->in->tail;
  if (tail - load64(&a->in->head) == a->in->capacity) return false;
  unsigned char *slot =
      a->in_slots + (tail & (a->in->capacity - 1)) * a->in->slot_size;
  uint64_t id = ++a->next_id;
  uint64_t stamp = id % 3 == 0 ? 5000 + id * 10 : id % 7;
  a->stamps.push_back(stamp);
  rk_abi_msg_t m = {id, stamp, RK_ABI_MSG_REQUEST, 0, n, 0, 0};
  memcpy(slot, &m, sizeof m);
  memcpy(slot + RK_ABI_MSG_HEADER, payload, n);
  __atomic_store_n(&a->in->tail, tail + 1, __ATOMIC_RELEASE);
  return true;
}

/* Takes one response and checks its header against the request it
 * answers and the handler's `code` (from `expected_code`, called with the
 * payload); false when the output ring is empty. */
template <typename Resp, typename Code>
static bool try_receive(host_actor *a, Resp *payload, Code expected_code) {
  uint64_t head = a->out->head;
  if (load64(&a->out->tail) == head) return false;
  const unsigned char *slot =
      a->out_slots + (head & (a->out->capacity - 1)) * a->out->slot_size;
  rk_abi_msg_t m;
  memcpy(&m, slot, sizeof m);
  memcpy(payload, slot + RK_ABI_MSG_HEADER, sizeof *payload);
  __atomic_store_n(&a->out->head, head + 1, __ATOMIC_RELEASE);
  uint64_t id = ++a->received;
  int32_t code = expected_code(id, *payload);
  uint64_t stamp = id < a->stamps.size() ? a->stamps[id] : 0;
  uint64_t clock = a->clock + 1 > stamp + 1 ? a->clock + 1 : stamp + 1;
  a->clock = clock;
  if (code) {
    a->errors++;
    a->last_error = code;
  }
  EXPECT(m.correlation_id == id, "%s: response %llu answers request %llu",
         a->name, (unsigned long long)id, (unsigned long long)m.correlation_id);
  EXPECT(m.type == RK_ABI_MSG_RESPONSE && m.size == sizeof *payload,
         "%s: response %llu: type %u size %u", a->name, (unsigned long long)id,
         m.type, m.size);
  EXPECT(m.code == code &&
             m.status == (code ? RK_ABI_MSG_HANDLER_ERROR : RK_ABI_MSG_OK),
         "%s: response %llu: status %u code %d, want code %d", a->name,
         (unsigned long long)id, m.status, m.code, code);
  if (a->exact_clock)
    EXPECT(m.timestamp == clock,
           "%s: response %llu: timestamp %llu, want %llu (request %llu)",
           a->name, (unsigned long long)id, (unsigned long long)m.timestamp,
           (unsigned long long)clock, (unsigned long long)stamp);
  else /* later than its request, and than every earlier answer */
    EXPECT(m.timestamp > stamp && m.timestamp >= clock,
           "%s: response %llu: timestamp %llu, request %llu, want at least "
           "%llu",
           a->name, (unsigned long long)id, (unsigned long long)m.timestamp,
           (unsigned long long)stamp, (unsigned long long)clock);
  if (!a->exact_clock) a->clock = m.timestamp;
  /* A response seen is counted (the counters are published first). */
  EXPECT(load64(&a->control->processed) >= id,
         "%s: response %llu seen, processed %llu", a->name,
         (unsigned long long)id,
         (unsigned long long)load64(&a->control->processed));
  return true;
}

/* Sends `n` requests made by make(i), i the request's place in the run
 * (its id - 1), and takes as many answers, keeping both rings busy;
 * check(id, resp) returns the expected code and checks the payload. */
template <typename Req, typename Resp, typename Make, typename Check>
static void exchange(host_actor *a, int n, Make make, Check check) {
  int sent = 0, got = 0;
  double since = now_s();
  while (got < n) {
    if (sent < n) {
      /* By the request's place in the whole run (its id - 1). */
      Req r = make((int)a->next_id);
      if (try_send(a, &r, sizeof r)) sent++;
    }
    Resp resp;
    if (try_receive(a, &resp, check)) got++;
    watchdog(a, since, "exchanging messages");
  }
}

/* Parks the kernel as the CUDA backend does around a module load
 * (RK_ABI_TERMINATE_PARK), with `queued` more requests made by make()
 * sent first and left in the ring: every block leaves at a request
 * boundary without reporting a stop, every claimed request answered (the
 * answers taken meanwhile are checked with `check`); then relaunches it
 * as the backend does, the scheduling words set from the input ring's
 * head. Returns how many requests were still queued at the park. */
template <typename Req, typename Resp, typename Make, typename Check>
static uint64_t actor_park_relaunch(host_actor *a, int queued, Make make,
                                    Check check) {
  for (int i = 0; i < queued;) {
    Req r = make((int)a->next_id);
    if (try_send(a, &r, sizeof r)) {
      ++i;
    } else {
      Resp resp;
      try_receive(a, &resp, check);
    }
  }
  __atomic_store_n(&a->control->terminate, RK_ABI_TERMINATE_PARK,
                   __ATOMIC_RELEASE);
  double since = now_s();
  while (__atomic_load_n(&a->sched[2], __ATOMIC_ACQUIRE) != a->blocks) {
    Resp resp;
    try_receive(a, &resp, check);
    watchdog(a, since, "parking");
  }
  for (std::thread &t : a->threads) t.join();
  a->threads.clear();
  const uint64_t head = load64(&a->in->head);
  const uint64_t left = a->in->tail - head;
  EXPECT(!load32(&a->control->terminated) &&
             load32(&a->control->run_state) != RK_ABI_RUN_STOPPED,
         "%s: a park reported a stop (terminated %u, run_state %u)", a->name,
         load32(&a->control->terminated), load32(&a->control->run_state));
  EXPECT(a->sched[0] == head && a->sched[1] == head &&
             load64(&a->out->tail) == head,
         "%s: parked with claimed %llu published %llu, in head %llu, out "
         "tail %llu",
         a->name, a->sched[0], a->sched[1], (unsigned long long)head,
         (unsigned long long)load64(&a->out->tail));
  set_sched(a, head);
  __atomic_store_n(&a->control->terminate, 0u, __ATOMIC_RELEASE);
  launch_blocks(a);
  return left;
}

/* Asks the actor to terminate; waits for it to say so, taking the
 * answers still due (checked with `check`), then checks every counter. */
template <typename Resp, typename Check>
static void actor_stop(host_actor *a, Check check) {
  __atomic_store_n(&a->control->terminate, 1u, __ATOMIC_RELEASE);
  double since = now_s();
  while (!load32(&a->control->terminated) || a->received < a->next_id) {
    Resp resp;
    try_receive(a, &resp, check);
    watchdog(a, since, "terminating");
  }
  for (std::thread &t : a->threads) t.join();
  const uint64_t n = a->next_id;
  EXPECT(load32(&a->control->run_state) == RK_ABI_RUN_STOPPED,
         "%s: run_state %u after termination", a->name,
         load32(&a->control->run_state));
  EXPECT(a->received == n, "%s: %llu answers for %llu requests", a->name,
         (unsigned long long)a->received, (unsigned long long)n);
  EXPECT(a->control->processed == n && a->control->errors == a->errors,
         "%s: processed %llu errors %llu, want %llu and %llu", a->name,
         (unsigned long long)a->control->processed,
         (unsigned long long)a->control->errors, (unsigned long long)n,
         (unsigned long long)a->errors);
  EXPECT(a->control->last_error == a->last_error, "%s: last_error %d, want %d",
         a->name, a->control->last_error, a->last_error);
  EXPECT(a->exact_clock ? a->control->clock == a->clock
                        : a->control->clock >= a->clock,
         "%s: clock %llu, want %s%llu", a->name,
         (unsigned long long)a->control->clock, a->exact_clock ? "" : ">= ",
         (unsigned long long)a->clock);
  EXPECT(a->in->head == n && a->out->tail == n,
         "%s: in head %llu out tail %llu for %llu requests", a->name,
         (unsigned long long)a->in->head, (unsigned long long)a->out->tail,
         (unsigned long long)n);
  EXPECT(a->sched[0] == n && a->sched[1] == n && a->sched[2] == a->blocks,
         "%s: rk_sched claimed %llu published %llu exited %llu", a->name,
         a->sched[0], a->sched[1], a->sched[2]);
  printf("%-5s %-12s %u blocks, %llu requests, %llu handler errors, %.2f s\n",
         g_failures > a->failures_before ? "FAIL" : "ok", a->name, a->blocks,
         (unsigned long long)n, (unsigned long long)a->errors,
         now_s() - a->started);
  /* Everything stays until actor_free: a scenario reads the state, the
   * control block, the K2K table and the channels after the stop. */
}

static void actor_free(host_actor *a) {
  free(a->control);
  free(a->in);
  free(a->out);
  free(a->in_slots);
  free(a->out_slots);
  free(a->state);
  free(a->sched);
  for (rk_abi_chan_t *c : a->chans) free(c);
  a->chans.clear();
  free(a->k2k);
  free(a->kmem);
  a->control = nullptr;
  a->in = a->out = nullptr;
  a->in_slots = a->out_slots = a->state = nullptr;
  a->sched = nullptr;
  a->k2k = nullptr;
  a->kmem = nullptr;
}

/* ---- Scenarios ----------------------------------------------------------
 */

enum { kMessages = 3000 };

/* No state, void: blocks run the handler side by side, answers stay in
 * order. */
static void run_echo() {
  host_actor a;
  actor_start(&a, "add_one", rk_actor_add_one, 4, 8, 8, sizeof(echo_req_t),
              sizeof(echo_resp_t), 0, true);
  auto make = [](int i) {
    echo_req_t r = {i * 7 - 1000, 0.5f + (float)(i % 5)};
    return r;
  };
  auto check = [&](uint64_t id, const echo_resp_t &p) {
    echo_req_t r = make((int)id - 1);
    EXPECT(p.v == r.v + 1 && p.scaled == (float)r.v * r.scale,
           "add_one: response %llu: v %d scaled %g, want %d %g",
           (unsigned long long)id, p.v, p.scaled, r.v + 1,
           (float)r.v * r.scale);
    return 0;
  };
  exchange<echo_req_t, echo_resp_t>(&a, kMessages / 2, make, check);
  /* Parked with requests queued (as around a module load), relaunched:
   * the rest are answered once each, in order. */
  const uint64_t left =
      actor_park_relaunch<echo_req_t, echo_resp_t>(&a, 6, make, check);
  exchange<echo_req_t, echo_resp_t>(&a, kMessages / 2, make, check);
  actor_stop<echo_resp_t>(&a, check);
  printf("      add_one parked with %llu requests queued, relaunched\n",
         (unsigned long long)left);
  actor_free(&a);
}

/* State, void: every message sees what the previous one left. */
static void run_counter(unsigned int blocks) {
  host_actor a;
  actor_start(&a, blocks == 1 ? "counter/1" : "counter", rk_actor_counter,
              blocks, 16, 8, sizeof(counter_req_t),
              sizeof(counter_resp_t), sizeof(counter_state_t), true);
  struct {
    uint32_t seq;
    int count;
    float sum;
  } model = {0, 0, 0.0f};
  auto make = [](int i) {
    counter_req_t r = {i % 11 == 10   ? 1
                       : i % 13 == 12 ? 2
                                      : 0,
                       (float)(i % 9) * 0.25f};
    return r;
  };
  auto check = [&](uint64_t id, const counter_resp_t &p) {
    counter_req_t r = make((int)id - 1);
    if (r.op == 0) {
      model.count += 1;
      model.sum += r.value;
    } else if (r.op == 1) {
      model.count = 0;
      model.sum = 0.0f;
    }
    model.seq++;
    float mean = model.count > 0 ? model.sum / (float)model.count : 0.0f;
    EXPECT(p.seq == model.seq && p.count == model.count && p.sum == model.sum &&
               p.mean == mean,
           "counter: response %llu: seq %u count %d sum %g mean %g, want %u "
           "%d %g %g",
           (unsigned long long)id, p.seq, p.count, p.sum, p.mean, model.seq,
           model.count, model.sum, mean);
    return 0;
  };
  exchange<counter_req_t, counter_resp_t>(&a, kMessages / 2, make, check);
  /* The state and the order carry across a park and a relaunch. */
  actor_park_relaunch<counter_req_t, counter_resp_t>(&a, 12, make, check);
  exchange<counter_req_t, counter_resp_t>(&a, kMessages / 2, make, check);
  actor_stop<counter_resp_t>(&a, check);
  actor_free(&a);
}

/* No state, int: error codes reach the header and the counters. */
static void run_checked_div() {
  host_actor a;
  actor_start(&a, "checked_div", rk_actor_checked_div, 3, 8, 4,
              sizeof(div_req_t), sizeof(div_resp_t), 0, true);
  auto make = [](int i) {
    div_req_t r = {i * 31 - 777, i % 6 == 0 ? 0 : i % 17 - 8};
    return r;
  };
  auto check = [&](uint64_t id, const div_resp_t &p) {
    div_req_t r = make((int)id - 1);
    int code = r.b == 0 ? 1 : 0;
    int q = r.b == 0 ? 0 : r.a / r.b;
    EXPECT(p.q == q, "checked_div: response %llu: q %d, want %d",
           (unsigned long long)id, p.q, q);
    return code;
  };
  exchange<div_req_t, div_resp_t>(&a, kMessages, make, check);
  actor_stop<div_resp_t>(&a, check);
  actor_free(&a);
}

/* State, int: the balance never goes negative; refusals are errors. */
static void run_account() {
  host_actor a;
  actor_start(&a, "account", rk_actor_account, 4, 8, 8, sizeof(account_req_t),
              sizeof(account_resp_t), sizeof(account_state_t), true);
  int balance = 0;
  uint32_t serial = 0;
  auto make = [](int i) {
    account_req_t r = {i % 5 == 4 ? 3 : i % 3, (i * 37) % 101};
    return r;
  };
  auto check = [&](uint64_t id, const account_resp_t &p) {
    account_req_t r = make((int)id - 1);
    int code = 0;
    if (r.op == 0)
      balance += r.amount;
    else if (r.op == 1 && r.amount > balance)
      code = 2;
    else if (r.op == 1)
      balance -= r.amount;
    else if (r.op != 2)
      code = 3;
    serial++;
    EXPECT(p.balance == balance && p.serial == serial,
           "account: response %llu: balance %d serial %u, want %d %u",
           (unsigned long long)id, p.balance, p.serial, balance, serial);
    return code;
  };
  exchange<account_req_t, account_resp_t>(&a, kMessages, make, check);
  actor_stop<account_resp_t>(&a, check);
  actor_free(&a);
}

/* Inactive: requests stay queued (run_state IDLE) until activation;
 * termination while inactive answers what is queued. */
static void run_inactive() {
  host_actor a;
  actor_start(&a, "inactive", rk_actor_add_one, 2, 8, 8, sizeof(echo_req_t),
              sizeof(echo_resp_t), 0, false);
  auto check = [&](uint64_t id, const echo_resp_t &p) {
    EXPECT(p.v == (int)id + 1, "inactive: response %llu: v %d, want %d",
           (unsigned long long)id, p.v, (int)id + 1);
    return 0;
  };
  for (int i = 1; i <= 5; ++i) {
    echo_req_t r = {i, 1.0f};
    EXPECT(try_send(&a, &r, sizeof r), "inactive: send %d", i);
  }
  usleep(20000);
  EXPECT(load64(&a.out->tail) == 0 && load64(&a.in->head) == 0,
         "inactive: an inactive actor answered (out tail %llu)",
         (unsigned long long)load64(&a.out->tail));
  __atomic_store_n(&a.control->active, 1u, __ATOMIC_RELEASE);
  double since = now_s();
  while (a.received < 5) {
    echo_resp_t p;
    try_receive(&a, &p, check);
    watchdog(&a, since, "answering after activation");
  }
  /* Block 0 writes run_state; another block may have answered them all. */
  wait_run_state(&a, RK_ABI_RUN_ACTIVE);
  __atomic_store_n(&a.control->active, 0u, __ATOMIC_RELEASE);
  wait_run_state(&a, RK_ABI_RUN_IDLE);
  for (int i = 6; i <= 8; ++i) {
    echo_req_t r = {i, 1.0f};
    EXPECT(try_send(&a, &r, sizeof r), "inactive: send %d", i);
  }
  actor_stop<echo_resp_t>(&a, check);
  actor_free(&a);
}

/* Termination with more queued than the output ring holds: the device
 * waits for room, and reports termination only after the last answer. */
static void run_backpressure() {
  host_actor a;
  actor_start(&a, "backpressure", rk_actor_add_one, 3, 16, 4,
              sizeof(echo_req_t), sizeof(echo_resp_t), 0, true);
  auto check = [&](uint64_t id, const echo_resp_t &p) {
    EXPECT(p.v == (int)id + 1, "backpressure: response %llu: v %d",
           (unsigned long long)id, p.v);
    return 0;
  };
  for (int i = 1; i <= 16; ++i) {
    echo_req_t r = {i, 1.0f};
    EXPECT(try_send(&a, &r, sizeof r), "backpressure: send %d", i);
  }
  __atomic_store_n(&a.control->terminate, 1u, __ATOMIC_RELEASE);
  double since = now_s();
  while (load64(&a.out->tail) < 4) watchdog(&a, since, "filling the output");
  usleep(20000);
  EXPECT(load64(&a.out->tail) == 4 && !load32(&a.control->terminated),
         "backpressure: out tail %llu (want 4: the ring is full), "
         "terminated %u",
         (unsigned long long)load64(&a.out->tail),
         load32(&a.control->terminated));
  actor_stop<echo_resp_t>(&a, check);
  actor_free(&a);
}


/* ---- Actors that talk to actors (K2K) -------------------------------------
 *
 * The handlers of test_cuda_actor.c's kK2KSource: relay (forwards every
 * message it gets, a request or an inbox message, on port 0 with
 * rk_try_send and answers the send's result) and sink (a state that
 * counts the messages and checks that each source's sequence numbers come
 * once and in order). The host side wires them as rk_actor_connect does:
 * one channel per link, in the receiver's list and the sender port's. */

struct kernels {
  kernel_fn *relay, *sink;
};

/* Every K2K actor runs kK2KBlocks blocks (gridDim is one for all "kernels"
 * here): 2, where the second must leave once the actor is wired, then 1,
 * where the kernel keeps its scheduling words in registers. */
static unsigned int kK2KBlocks = 2;

static void k2k_start(host_actor *a, const char *name, kernel_fn *k,
                      bool sink) {
  actor_start(a, name, k, kK2KBlocks, 8, 8, sizeof(k2k_msg_t),
              sizeof(k2k_ack_t), sink ? sizeof(k2k_sink_t) : 0, false);
  a->exact_clock = false;
}

/* Channels are made in turn in the host's memory, in device memory (bit
 * 0 of their table entries: the kernels use their GPU-scope helpers on
 * it) with word slots (RK_ABI_RING_SLOT_WORDS), and in device memory with
 * header-and-payload slots, so that every kind runs, also side by side
 * into one receiver. */
static int g_chan_kind = -1; /* >= 0: every channel of that kind */
static rk_abi_chan_t *k2k_connect(host_actor *src, uint32_t port,
                                  host_actor *dst, uint32_t capacity) {
  static unsigned made;
  const unsigned kind = g_chan_kind >= 0 ? (unsigned)g_chan_kind : made++ % 3u;
  const uint64_t dev = kind != 0u;
  const bool words = kind == 1u;
  const uint32_t slot = words ? rk_abi_k2k_words_slot_size(sizeof(k2k_msg_t))
                              : rk_abi_slot_size(sizeof(k2k_msg_t));
  rk_abi_chan_t *ch =
      (rk_abi_chan_t *)zalloc(sizeof *ch + (size_t)capacity * slot);
  ring_init(&ch->ring, capacity, sizeof(k2k_msg_t));
  ch->ring.slot_size = slot;
  if (words) ch->ring.flags |= RK_ABI_RING_SLOT_WORDS;
  ch->open = 1;
  ch->link = dst->k2k->nin;
  dst->k2k->in[dst->k2k->nin++] = (uint64_t)(uintptr_t)ch | dev;
  src->k2k->out[port][src->k2k->nout[port]++] = (uint64_t)(uintptr_t)ch | dev;
  if (src->k2k->nports < port + 1) src->k2k->nports = port + 1;
  dst->chans.push_back(ch);
  return ch;
}

static void activate(host_actor *a) {
  __atomic_store_n(&a->control->active, 1u, __ATOMIC_RELEASE);
}

/* Answers of a relay: the header's code is the send's result, which the
 * payload repeats (a FULL send is a handler error). */
static auto relay_check(k2k_ack_t *last) {
  return [last](uint64_t, const k2k_ack_t &p) {
    *last = p;
    return p.status;
  };
}

/* Sends `m` to relay `a` until it is queued on port 0 (retrying while the
 * channel is full); returns how many times it was full. */
static int relay_until_queued(host_actor *a, k2k_msg_t m) {
  int full = 0;
  double since = now_s();
  k2k_ack_t ack = {-1, -1};
  for (;;) {
    while (!try_send(a, &m, sizeof m)) watchdog(a, since, "sending to relay");
    k2k_ack_t p;
    while (!try_receive(a, &p, relay_check(&ack)))
      watchdog(a, since, "waiting for relay");
    EXPECT(ack.seq == m.seq, "%s: answer for seq %d, sent %d", a->name,
           ack.seq, m.seq);
    if (ack.status == 0) return full;
    EXPECT(ack.status == 1, "%s: send status %d, want queued or full",
           a->name, ack.status);
    full++;
    sched_yield();
  }
}

static const k2k_sink_t *sink_state(const host_actor *a) {
  return (const k2k_sink_t *)a->state;
}

/* The sink got `n` messages from each source in `srcs` (exactly once, in
 * order), summing `sum`. */
static void check_sink(const host_actor *b, std::vector<int> srcs, int n,
                       long long sum) {
  const k2k_sink_t *st = sink_state(b);
  EXPECT(st->count == n * (int)srcs.size() && st->bad == 0 && st->sum == sum,
         "%s: count %d bad %d sum %d, want %d 0 %lld", b->name, st->count,
         st->bad, st->sum, n * (int)srcs.size(), sum);
  for (int s : srcs)
    EXPECT(st->last[s] == n, "%s: last from source %d is %d, want %d",
           b->name, s, st->last[s], n);
  EXPECT(b->k2k->received == (uint64_t)st->count &&
             b->k2k->received_errors == 0,
         "%s: K2K received %llu (errors %llu), the handler saw %d", b->name,
         (unsigned long long)b->k2k->received,
         (unsigned long long)b->k2k->received_errors, st->count);
  for (rk_abi_chan_t *c : b->chans)
    EXPECT(c->ring.head == c->ring.tail,
           "%s: a channel left with head %llu tail %llu", b->name,
           (unsigned long long)c->ring.head, (unsigned long long)c->ring.tail);
}

static void stop_relay(host_actor *a) {
  k2k_ack_t ack;
  actor_stop<k2k_ack_t>(a, relay_check(&ack));
}
static void stop_sink(host_actor *b) {
  actor_stop<k2k_ack_t>(b, [](uint64_t, const k2k_ack_t &) { return 0; });
}

/* A -> B over a channel of 4: every message once, in order, the sender
 * told FULL when B lags and retrying; stamps: B's last message is A's
 * last send, and B's clock is past it. */
static void run_k2k_pipeline(const kernels &k, int n) {
  host_actor a, b;
  k2k_start(&a, "k2k-relay", k.relay, false);
  k2k_start(&b, "k2k-sink", k.sink, true);
  rk_abi_chan_t *ch = k2k_connect(&a, 0, &b, 4);
  activate(&b);
  activate(&a);
  int full = 0;
  long long sum = 0;
  auto no_request = [](int) { return k2k_msg_t{0, 0, 0, 0}; };
  k2k_ack_t last;
  for (int i = 1; i <= n; ++i) {
    k2k_msg_t m = {1, i, i * 3, 0};
    sum += m.val;
    full += relay_until_queued(&a, m);
    /* Each parked and relaunched once on the way (as around a module
     * load): the receiver with messages in its channel, then the sender;
     * both take their channels' indices up where they left them. */
    if (i == n / 3)
      actor_park_relaunch<k2k_msg_t, k2k_ack_t>(
          &b, 0, no_request, [](uint64_t, const k2k_ack_t &) { return 0; });
    if (i == 2 * n / 3)
      actor_park_relaunch<k2k_msg_t, k2k_ack_t>(&a, 0, no_request,
                                                relay_check(&last));
  }
  stop_relay(&a);
  stop_sink(&b);
  check_sink(&b, {1}, n, sum);
  EXPECT(a.k2k->sent == (uint64_t)n && a.k2k->refused_full == (uint64_t)full &&
             a.k2k->refused_unconnected == 0,
         "pipeline: sent %llu full %llu unconnected %llu, want %d %d 0",
         (unsigned long long)a.k2k->sent,
         (unsigned long long)a.k2k->refused_full,
         (unsigned long long)a.k2k->refused_unconnected, n, full);
  EXPECT(ch->ring.tail == (uint64_t)n, "pipeline: channel tail %llu",
         (unsigned long long)ch->ring.tail);
  EXPECT(b.k2k->last_received_ts == a.k2k->last_sent_ts &&
             a.k2k->last_sent_ts != 0 &&
             b.control->clock > b.k2k->last_received_ts,
         "pipeline: last sent %llu, last received %llu, receiver clock %llu",
         (unsigned long long)a.k2k->last_sent_ts,
         (unsigned long long)b.k2k->last_received_ts,
         (unsigned long long)b.control->clock);
  printf("%-5s k2k pipeline A -> B: %d messages, %d full and retried\n",
         g_failures ? "FAIL" : "ok", n, full);
  actor_free(&a);
  actor_free(&b);
}

/* Fan-in: three relays into one sink over channels of 2; the host keeps
 * one request in flight per relay and resends what was full. */
static void run_k2k_fan_in(const kernels &k, int n) {
  host_actor a[3], b;
  static const char *const kNames[3] = {"k2k-relay1", "k2k-relay2",
                                        "k2k-relay3"};
  for (int i = 0; i < 3; ++i) k2k_start(&a[i], kNames[i], k.relay, false);
  k2k_start(&b, "k2k-fan-in", k.sink, true);
  for (int i = 0; i < 3; ++i) k2k_connect(&a[i], 0, &b, 2);
  activate(&b);
  for (int i = 0; i < 3; ++i) activate(&a[i]);
  int seq[3] = {1, 1, 1}, full = 0;
  bool waiting[3] = {false, false, false};
  long long sum = 0;
  double since = now_s();
  while (seq[0] <= n || seq[1] <= n || seq[2] <= n) {
    for (int i = 0; i < 3; ++i) {
      if (seq[i] > n) continue;
      k2k_msg_t m = {i + 1, seq[i], (i + 1) * 1000 + seq[i], 0};
      if (!waiting[i]) waiting[i] = try_send(&a[i], &m, sizeof m);
      k2k_ack_t ack = {-1, -1}, p;
      if (waiting[i] && try_receive(&a[i], &p, relay_check(&ack))) {
        waiting[i] = false;
        EXPECT(ack.seq == seq[i], "fan-in: answer for %d, sent %d", ack.seq,
               seq[i]);
        if (ack.status == 0) {
          sum += m.val;
          seq[i]++;
        } else {
          full++;
        }
      }
      watchdog(&a[i], since, "fan-in");
    }
  }
  for (int i = 0; i < 3; ++i) stop_relay(&a[i]);
  stop_sink(&b);
  check_sink(&b, {1, 2, 3}, n, sum);
  uint64_t sent = 0, refused = 0;
  for (int i = 0; i < 3; ++i) {
    sent += a[i].k2k->sent;
    refused += a[i].k2k->refused_full;
  }
  EXPECT(sent == 3ull * n && refused == (uint64_t)full,
         "fan-in: sent %llu refused %llu, want %d %d",
         (unsigned long long)sent, (unsigned long long)refused, 3 * n, full);
  printf("%-5s k2k fan-in 3 -> 1: %d messages each, %d full and retried\n",
         g_failures ? "FAIL" : "ok", n, full);
  for (int i = 0; i < 3; ++i) actor_free(&a[i]);
  actor_free(&b);
}

/* A full channel: the receiver is not active yet, so the sender's fifth
 * message (channel of 4) is answered FULL, nothing overwritten; once the
 * receiver runs, the channel drains and the same sends are queued. */
static void run_k2k_full(const kernels &k) {
  host_actor a, b;
  k2k_start(&a, "k2k-full-relay", k.relay, false);
  k2k_start(&b, "k2k-full-sink", k.sink, true);
  rk_abi_chan_t *ch = k2k_connect(&a, 0, &b, 4);
  activate(&a);
  long long sum = 0;
  k2k_ack_t ack = {-1, -1}, p;
  double since = now_s();
  for (int i = 1; i <= 6; ++i) {
    k2k_msg_t m = {2, i, i, 0};
    EXPECT(try_send(&a, &m, sizeof m), "full: send %d", i);
    while (!try_receive(&a, &p, relay_check(&ack))) watchdog(&a, since, "full");
    EXPECT(ack.status == (i <= 4 ? 0 : 1), "full: send %d answered %d", i,
           ack.status);
    if (i <= 4) sum += i;
  }
  EXPECT(ch->ring.tail == 4 && ch->ring.head == 0 && a.k2k->sent == 4 &&
             a.k2k->refused_full == 2 && sink_state(&b)->count == 0,
         "full: tail %llu head %llu sent %llu full %llu, sink count %d",
         (unsigned long long)ch->ring.tail, (unsigned long long)ch->ring.head,
         (unsigned long long)a.k2k->sent,
         (unsigned long long)a.k2k->refused_full, sink_state(&b)->count);
  activate(&b);
  while (load64(&ch->ring.head) < 4) watchdog(&b, since, "draining");
  for (int i = 5; i <= 6; ++i) {
    k2k_msg_t m = {2, i, i, 0};
    sum += i;
    EXPECT(relay_until_queued(&a, m) == 0,
           "full: send %d still full after the drain", i);
  }
  stop_relay(&a);
  stop_sink(&b);
  check_sink(&b, {2}, 6, sum);
  printf("%-5s k2k full channel: FULL at 5 and 6, queued after the drain\n",
         g_failures ? "FAIL" : "ok");
  actor_free(&a);
  actor_free(&b);
}

/* A -> B -> C: B relays inbox messages (its handler runs on them and its
 * sends go on), C's channel big enough that B never finds it full. */
static void run_k2k_chain(const kernels &k, int n) {
  host_actor a, b, c;
  k2k_start(&a, "k2k-chain-a", k.relay, false);
  k2k_start(&b, "k2k-chain-b", k.relay, false);
  k2k_start(&c, "k2k-chain-c", k.sink, true);
  k2k_connect(&a, 0, &b, 4);
  k2k_connect(&b, 0, &c, 512);
  activate(&c);
  activate(&b);
  activate(&a);
  long long sum = 0;
  for (int i = 1; i <= n; ++i) {
    k2k_msg_t m = {3, i, 7 * i, 0};
    sum += m.val;
    relay_until_queued(&a, m);
  }
  stop_relay(&a);
  stop_relay(&b);
  stop_sink(&c);
  check_sink(&c, {3}, n, sum);
  EXPECT(b.k2k->received == (uint64_t)n && b.k2k->sent == (uint64_t)n &&
             b.k2k->refused_full == 0 && b.control->processed == 0,
         "chain: B received %llu sent %llu full %llu processed %llu",
         (unsigned long long)b.k2k->received, (unsigned long long)b.k2k->sent,
         (unsigned long long)b.k2k->refused_full,
         (unsigned long long)b.control->processed);
  printf("%-5s k2k chain A -> B -> C: %d messages\n",
         g_failures ? "FAIL" : "ok", n);
  actor_free(&a);
  actor_free(&b);
  actor_free(&c);
}

static void run_k2k(const kernels &k) {
  run_k2k_pipeline(k, 600);
  for (g_chan_kind = 0; g_chan_kind < 3; ++g_chan_kind)
    run_k2k_pipeline(k, 200); /* each kind of channel alone */
  g_chan_kind = -1;
  run_k2k_fan_in(k, 300);
  run_k2k_full(k);
  run_k2k_chain(k, 300);
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  alarm(240); /* a hang the watchdogs miss still ends the run */
  const char *bug = argc > 1 ? argv[1] : "";
#ifdef RK_BUG_NO_CREDIT_CU
  if (strcmp(bug, "no-credit") == 0) {
    g_watchdog_s = 3.0;
    run_k2k_pipeline({bug_no_credit::rk_actor_relay, bug_no_credit::rk_actor_sink}, 200);
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
  }
#endif
#ifdef RK_BUG_PUBLISH_EARLY_CU
  if (strcmp(bug, "publish-early") == 0) {
    g_watchdog_s = 10.0;
    run_k2k_pipeline({bug_publish_early::rk_actor_relay, bug_publish_early::rk_actor_sink}, 200);
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
  }
#endif
#ifdef RK_BUG_WORDS_UNCHECKED_CU
  if (strcmp(bug, "words-unchecked") == 0) {
    g_watchdog_s = 10.0;
    g_chan_kind = 1;
    run_k2k_pipeline({bug_words_unchecked::rk_actor_relay, bug_words_unchecked::rk_actor_sink}, 100);
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
  }
#endif
#ifdef RK_WORDS_SLOW_CU
  if (strcmp(bug, "words-slow") == 0) {
    g_watchdog_s = 10.0;
    g_chan_kind = 1;
    run_k2k_pipeline({words_slow::rk_actor_relay, words_slow::rk_actor_sink}, 100);
    printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
  }
#endif
  if (*bug) {
    printf("FAIL: unknown negative control '%s'\n", bug);
    return 2;
  }
  run_echo();
  run_counter(4);
  run_counter(1); /* one block: the words of rk_sched in registers */
  run_checked_div();
  run_account();
  run_inactive();
  run_backpressure();
  run_k2k({rk_actor_relay, rk_actor_sink});
  kK2KBlocks = 1;
  run_k2k({rk_actor_relay, rk_actor_sink});
  printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
