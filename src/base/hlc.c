/* Hybrid logical clocks. */
#include "base/hlc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "base/error.h"
#include "base/sys.h"

uint64_t rk__hlc_physical(void) {
  struct timespec ts;
#ifdef CLOCK_REALTIME_COARSE
  /* The coarse clock (a few ms of resolution) costs a few nanoseconds; the
   * logical counter orders events within one reading. */
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
#else
  clock_gettime(CLOCK_REALTIME, &ts);
#endif
  uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return ns & ~((UINT64_C(1) << RK__HLC_LOGICAL_BITS) - 1);
}

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

/* ---- Public API (rk/hlc.h) ---------------------------------------------- */

rk_hlc_t rk__hlc_host = {0, RK_HLC_DEFAULT_MAX_SKEW_NS};

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
  return clock ? rk__hlc_tick(&clock->value) : rk__hlc_physical();
}

rk_status_t rk_hlc_update(rk_hlc_t *clock, uint64_t received,
                          uint64_t *out_timestamp) {
  if (!clock)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "hlc_update: clock is NULL");
  const uint64_t phys = rk__hlc_physical();
  const uint64_t skew = __atomic_load_n(&clock->max_skew_ns, __ATOMIC_RELAXED);
  const uint64_t received_phys = received & ~(uint64_t)RK_HLC_LOGICAL_MASK;
  if (skew != UINT64_MAX && received_phys > phys && received_phys - phys > skew)
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
  return clock ? __atomic_load_n(&clock->value, __ATOMIC_RELAXED) : 0;
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
