/* Hybrid logical clocks. */
#include "base/hlc.h"

#include <stdbool.h>
#include <time.h>

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
