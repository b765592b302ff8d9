/* Hybrid logical clocks (see abi/actor_abi.h for the packing): one 64-bit
 * word per clock, nanoseconds since the Unix epoch with the low 16 bits used
 * as a logical counter. Ticks are compare-and-swap loops, so concurrent
 * ticks of one clock return distinct, increasing values. */
#ifndef RK_BASE_HLC_H_
#define RK_BASE_HLC_H_

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/sys.h"
#include "rk/hlc.h"

#define RK__HLC_LOGICAL_BITS RK_HLC_LOGICAL_BITS

/* The process clock (rk_hlc_host()): host threads stamp the requests they
 * send to actors from rk__hlc_host.value and merge every response they
 * take into it (rk__hlc_observe). */
extern rk_hlc_t rk__hlc_host;

/* Physical time in clock units: realtime nanoseconds, logical bits
 * cleared. Inline: a send stamps every request with it. */
static inline uint64_t rk__hlc_physical(void) {
  struct timespec ts;
#ifdef CLOCK_REALTIME_COARSE
  /* The coarse clock (a few ms of resolution) costs a few nanoseconds; the
   * logical counter orders events within one reading. */
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
#else
  clock_gettime(CLOCK_REALTIME, &ts);
#endif
  const uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return ns & ~((UINT64_C(1) << RK__HLC_LOGICAL_BITS) - 1);
}

/* A local or send event: max(previous + 1, physical now). */
uint64_t rk__hlc_tick(uint64_t *clock);

/* `n` (>= 1) send events at once: returns the first of n consecutive
 * values, each as rk__hlc_tick would have given it. */
uint64_t rk__hlc_tick_n(uint64_t *clock, uint64_t n);

/* A receive event: max(previous + 1, received + 1, physical now). */
uint64_t rk__hlc_merge(uint64_t *clock, uint64_t received);

/* The same with the physical time `phys` (rk__hlc_physical) read by the
 * caller: a batch of receive events reads the clock once. */
uint64_t rk__hlc_merge_at(uint64_t *clock, uint64_t received, uint64_t phys);

/* `n` (>= 1) receive events at once, `received` the latest stamp among
 * them: returns the first of n consecutive values, each later than
 * `received` and than the clock before. */
uint64_t rk__hlc_merge_n(uint64_t *clock, uint64_t received, uint64_t phys,
                         uint64_t n);
/* Whether rk_hlc_update would refuse `received` at physical time `phys`
 * (more than the clock's max_skew_ns ahead). */
static inline bool rk__hlc_too_far(const rk_hlc_t *clock, uint64_t received,
                                   uint64_t phys) {
  const uint64_t skew = __atomic_load_n(&clock->max_skew_ns, __ATOMIC_RELAXED);
  const uint64_t at = received & ~(uint64_t)RK_HLC_LOGICAL_MASK;
  return skew != UINT64_MAX && at > phys && at - phys > skew;
}
/* rk_hlc_update with the physical time `phys` (rk__hlc_physical) read by
 * the caller, once for a batch of receive events; clock not NULL. */
rk_status_t rk__hlc_update_at(rk_hlc_t *clock, uint64_t received, uint64_t phys,
                              uint64_t *out_timestamp);
/* The host clock's tick and observe (rk__hlc_host.value), without a write
 * to the shared word on most calls. A thread reserves a run of
 * RK__HLC_HOST_RUN ticks at once (the clock word jumps to the run's last
 * value) and hands them out while the word still holds that value: nobody
 * else has ticked or merged since, so nothing anyone has seen is later
 * than the run. Any other event on the clock moves the word, and a thread
 * that learns of that event reads the moved word (read coherence on one
 * location) and reserves afresh. An observe leaves the word alone when it
 * cannot matter: the stamp is below every tick of the run the word ends
 * (at least RK__HLC_HOST_RUN below it), or this thread holds that run and
 * skips its own ticks past the stamp. */
enum { RK__HLC_HOST_RUN = 64 };

/* This thread's run of the host clock: the next tick to hand out and the
 * run's last value, valid while the clock word equals `end` (the word only
 * grows, so once it has moved past `end` it never comes back); end 0: no
 * run. */
typedef struct rk__hlc_run {
  uint64_t next, end;
} rk__hlc_run_t;
extern _Thread_local rk__hlc_run_t rk__hlc_host_run RK__TLS_FAST;

/* The paths below when the run does not cover the event. */
uint64_t rk__hlc_host_tick_slow(uint64_t phys);
void rk__hlc_host_observe_slow(uint64_t received);

/* Inline: every request a host thread sends takes a tick, and every
 * response it takes is observed; on the run they are a few loads. */
static inline uint64_t rk__hlc_host_tick(void) {
  const uint64_t phys = rk__hlc_physical();
  rk__hlc_run_t *r = &rk__hlc_host_run;
  const uint64_t old = __atomic_load_n(&rk__hlc_host.value, __ATOMIC_RELAXED);
  if (r->end && old == r->end && r->next <= r->end && r->next >= phys)
    return r->next++;
  return rk__hlc_host_tick_slow(phys);
}

static inline void rk__hlc_host_observe(uint64_t received) {
  const rk__hlc_run_t *r = &rk__hlc_host_run;
  /* The run is ours and nobody else's is valid, and the stamp is below
   * its next tick: nothing to do. */
  if (received < r->next && r->end &&
      __atomic_load_n(&rk__hlc_host.value, __ATOMIC_RELAXED) == r->end)
    return;
  rk__hlc_host_observe_slow(received);
}

/* Raises the clock to at least `received`, so that its next tick is
 * later: what the host does with a response (a receive event whose own
 * stamp nobody sees). A relaxed load and no write when the clock is
 * already there. */
static inline void rk__hlc_observe(uint64_t *clock, uint64_t received) {
  uint64_t old = __atomic_load_n(clock, __ATOMIC_RELAXED);
  /* Relaxed: the clock orders events by value, not memory; a thread that
   * learns of the response through memory reads this word after it (read
   * coherence on the one location). */
  while (old < received &&
         !__atomic_compare_exchange_n(clock, &old, received, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

#endif /* RK_BASE_HLC_H_ */
