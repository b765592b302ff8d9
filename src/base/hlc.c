/* Hybrid logical clocks. */
#include "base/hlc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "base/error.h"
#include "base/sys.h"

static uint64_t advance(uint64_t *clock, uint64_t floor) {
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t next = old + 1 > floor ? old + 1 : floor;
    /* Relaxed: the clock orders events by value, not memory. */
    if (__atomic_compare_exchange_n(clock, &old, next, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return next;
  }
}

uint64_t rk__hlc_tick(uint64_t *clock) {
  return advance(clock, rk__hlc_physical());
}

uint64_t rk__hlc_tick_n(uint64_t *clock, uint64_t n) {
  const uint64_t phys = rk__hlc_physical();
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  for (;;) {
    const uint64_t first = old + 1 > phys ? old + 1 : phys;
    /* Relaxed: the clock orders events by value, not memory. */
    if (__atomic_compare_exchange_n(clock, &old, first + n - 1, true,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return first;
  }
}

uint64_t rk__hlc_merge(uint64_t *clock, uint64_t received) {
  return rk__hlc_merge_at(clock, received, rk__hlc_physical());
}

uint64_t rk__hlc_merge_at(uint64_t *clock, uint64_t received, uint64_t phys) {
  return advance(clock, received + 1 > phys ? received + 1 : phys);
}

uint64_t rk__hlc_merge_n(uint64_t *clock, uint64_t received, uint64_t phys,
                         uint64_t n) {
  const uint64_t floor = received + 1 > phys ? received + 1 : phys;
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  for (;;) {
    const uint64_t first = old + 1 > floor ? old + 1 : floor;
    /* Relaxed: the clock orders events by value, not memory. */
    if (__atomic_compare_exchange_n(clock, &old, first + n - 1, true,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return first;
  }
}

/* ---- The host clock's runs (hlc.h) -------------------------------------- */

rk_hlc_t rk__hlc_host = {0, RK_HLC_DEFAULT_MAX_SKEW_NS};

_Thread_local rk__hlc_run_t rk__hlc_host_run RK__TLS_FAST;

uint64_t rk__hlc_host_tick_slow(uint64_t phys) {
  uint64_t *clock = &rk__hlc_host.value;
  rk__hlc_run_t *r = &rk__hlc_host_run;
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  for (;;) {
    const uint64_t first = old + 1 > phys ? old + 1 : phys;
    const uint64_t end = first + RK__HLC_HOST_RUN - 1;
    /* Relaxed, as every clock write: values order events, not memory. */
    if (__atomic_compare_exchange_n(clock, &old, end, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      r->next = first + 1;
      r->end = end;
      return first;
    }
  }
}

void rk__hlc_host_observe_slow(uint64_t received) {
  uint64_t *clock = &rk__hlc_host.value;
  rk__hlc_run_t *r = &rk__hlc_host_run;
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  if (old == r->end && r->end) {
    /* The run is ours and nobody else's is valid: skip past the stamp. */
    if (received < r->next) return;
    if (received < r->end) {
      r->next = received + 1;
      return;
    }
  } else if (received + RK__HLC_HOST_RUN <= old) {
    /* Every tick of the valid run, if there is one, is later. */
    return;
  }
  /* Move the word (past its old value, so that every run ends), to at
   * least the stamp. */
  r->end = 0;
  for (;;) {
    const uint64_t next = old + 1 > received ? old + 1 : received;
    if (__atomic_compare_exchange_n(clock, &old, next, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return;
  }
}

/* ---- Public API (rk/hlc.h) ---------------------------------------------- */

static void host_skew_from_env(void) {
  long ms = -1;
  if (rk__env_long("RK_HLC_MAX_SKEW_MS", 0, 1000000000L, &ms) == RK_OK &&
      ms >= 0)
    rk_hlc_set_max_skew(&rk__hlc_host, (uint64_t)ms * 1000000u);
}

void rk_hlc_init(rk_hlc_t *clock) {
  if (!clock) return;
  clock->value = 0;
  clock->max_skew_ns = RK_HLC_DEFAULT_MAX_SKEW_NS;
}

rk_hlc_t *rk_hlc_host(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, host_skew_from_env);
  return &rk__hlc_host;
}

uint64_t rk_hlc_now(rk_hlc_t *clock) {
  if (clock == &rk__hlc_host) return rk__hlc_host_tick();
  return clock ? rk__hlc_tick(&clock->value) : rk__hlc_physical();
}

rk_status_t rk_hlc_update(rk_hlc_t *clock, uint64_t received,
                          uint64_t *out_timestamp) {
  if (!clock)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "hlc_update: clock is NULL");
  return rk__hlc_update_at(clock, received, rk__hlc_physical(), out_timestamp);
}

rk_status_t rk__hlc_update_at(rk_hlc_t *clock, uint64_t received, uint64_t phys,
                              uint64_t *out_timestamp) {
  const uint64_t skew = __atomic_load_n(&clock->max_skew_ns, __ATOMIC_RELAXED);
  const uint64_t received_phys = received & ~(uint64_t)RK_HLC_LOGICAL_MASK;
  if (rk__hlc_too_far(clock, received, phys))
    return rk__fail(RK_ERR_CLOCK_SKEW,
                    "hlc_update: the timestamp is %.3f ms ahead of this "
                    "machine's clock; at most %.3f ms is accepted "
                    "(rk_hlc_set_max_skew, RK_HLC_MAX_SKEW_MS)",
                    (double)(received_phys - phys) / 1e6, (double)skew / 1e6);
  const uint64_t t = rk__hlc_merge_at(&clock->value, received, phys);
  if (out_timestamp) *out_timestamp = t;
  return RK_OK;
}

void rk_hlc_set_max_skew(rk_hlc_t *clock, uint64_t max_skew_ns) {
  if (clock)
    __atomic_store_n(&clock->max_skew_ns, max_skew_ns, __ATOMIC_RELAXED);
}

uint64_t rk_hlc_peek(const rk_hlc_t *clock) {
  if (!clock) return 0;
  const uint64_t v = __atomic_load_n(&clock->value, __ATOMIC_RELAXED);
  /* The process clock's word may end a run whose ticks are not handed out
   * yet: close it, so that every later tick is larger than what this
   * returns. */
  if (clock == &rk__hlc_host) rk__hlc_host_observe(v);
  return v;
}

int rk_hlc_compare(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

uint64_t rk_hlc_pack(uint64_t physical_ns, uint32_t logical) {
  return (physical_ns & ~(uint64_t)RK_HLC_LOGICAL_MASK) + logical;
}

void rk_hlc_unpack(uint64_t timestamp, uint64_t *out_physical_ns,
                   uint32_t *out_logical) {
  if (out_physical_ns)
    *out_physical_ns = timestamp & ~(uint64_t)RK_HLC_LOGICAL_MASK;
  if (out_logical) *out_logical = (uint32_t)(timestamp & RK_HLC_LOGICAL_MASK);
}
