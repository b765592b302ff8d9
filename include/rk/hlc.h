/* rk/hlc.h - hybrid logical clocks.
 *
 * Every message rk's actors exchange carries a hybrid-logical-clock (HLC)
 * timestamp: one 64-bit word, nanoseconds since the Unix epoch with the low
 * RK_HLC_LOGICAL_BITS bits replaced by a logical counter. Timestamps order
 * events by causality: an event that may have been caused by another (a
 * request sent after a response was received) always carries a larger
 * value, and ticks of one clock never repeat.
 *
 *   rk_hlc_t c;
 *   rk_hlc_init(&c);
 *   uint64_t t = rk_hlc_now(&c);              // a local or send event
 *   uint64_t got;                             // a stamp from elsewhere
 *   if (rk_hlc_update(&c, got, &t) == RK_ERR_CLOCK_SKEW) { ... }
 *   // t > got, and every later rk_hlc_now(&c) > t
 *
 * The process clock. All host threads of a process stamp the requests they
 * send to actors from one clock, rk_hlc_host(), and every response the host
 * takes from an actor (receive, call, their batch forms, whichever backend
 * and mode) is merged into it before the caller sees it. So a request sent
 * after a response was received -- by the same thread or by any thread that
 * learned of the response through memory -- carries a later timestamp than
 * that response, whatever actor each went to. Each actor's device side
 * keeps its own clock (in its control block) and merges every request's
 * stamp into it before it stamps the response, on every backend (CPU
 * worker, relaunch driver, traditional launch, CUDA kernel). A program that
 * receives timestamps from outside rk (another process, a network peer)
 * feeds them to rk_hlc_update(rk_hlc_host(), ...) to order its later
 * requests after them.
 *
 * Bounded skew. rk_hlc_update refuses a timestamp whose physical part is
 * more than the clock's max_skew_ns ahead of this machine's wall clock
 * (RK_ERR_CLOCK_SKEW, the clock unchanged): a peer with a wrong clock would
 * otherwise drag every later timestamp into its future. Responses of local
 * actors are merged without that check: their clocks derive from this
 * process's stamps and run ahead only by their own logical ticks.
 *
 * Thread safety: every function may be called from any number of threads
 * on the same clock at once (the clock word is advanced by compare-and-
 * swap). rk_hlc_init is the exception: call it before sharing the clock.
 * On the process clock a thread takes a run of ticks with one compare-and-
 * swap and hands them out while no other thread has used the clock, so a
 * thread that sends alone writes the shared word once per run, not per
 * request; the ordering above holds the same.
 */
#ifndef RK_HLC_H_
#define RK_HLC_H_

#include <stdint.h>

#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of a timestamp that hold the logical counter. The physical part
 * has a resolution of 2^16 ns (65.536 us); a counter that passes 65535
 * within one such step carries into the physical part, so the clock runs
 * ahead of the wall clock by at most the events it counted. */
#define RK_HLC_LOGICAL_BITS 16u
#define RK_HLC_LOGICAL_MASK ((UINT64_C(1) << RK_HLC_LOGICAL_BITS) - 1u)

/* Default bound of rk_hlc_update: 500 ms ahead of the wall clock. */
#define RK_HLC_DEFAULT_MAX_SKEW_NS UINT64_C(500000000)

typedef struct rk_hlc {
  uint64_t value;       /* the last timestamp issued (atomic) */
  uint64_t max_skew_ns; /* see rk_hlc_update (atomic; rk_hlc_set_max_skew) */
} rk_hlc_t;

/* A clock at zero with the default skew bound. */
void rk_hlc_init(rk_hlc_t *clock);

/* The process clock that actor requests are stamped from and responses
 * merged into (see above). Never NULL; lives as long as the process. Its
 * skew bound starts at RK_HLC_MAX_SKEW_MS from the environment when set
 * (milliseconds), else the default. */
rk_hlc_t *rk_hlc_host(void);

/* A local or send event: a timestamp larger than every one this clock has
 * issued or merged, and at least the wall clock (rounded down to the
 * physical resolution). */
uint64_t rk_hlc_now(rk_hlc_t *clock);

/* A receive event for `received`: advances the clock past it and past
 * every earlier value, and returns the new timestamp in *out_timestamp
 * (may be NULL). RK_ERR_CLOCK_SKEW, leaving the clock as it was, when
 * received's physical part is more than max_skew_ns ahead of the wall
 * clock; RK_ERR_INVALID_ARGUMENT when clock is NULL. */
rk_status_t rk_hlc_update(rk_hlc_t *clock, uint64_t received,
                          uint64_t *out_timestamp);

/* Sets the bound rk_hlc_update checks (nanoseconds; UINT64_MAX: none). */
void rk_hlc_set_max_skew(rk_hlc_t *clock, uint64_t max_skew_ns);

/* The last timestamp issued or merged, without ticking: every later tick
 * of the clock is larger. */
uint64_t rk_hlc_peek(const rk_hlc_t *clock);

/* -1, 0 or 1 as a happened before, together with, or after b. Timestamps
 * are totally ordered by their value; equal values come from the same
 * event (ticks of one clock never repeat). */
int rk_hlc_compare(uint64_t a, uint64_t b);

/* A timestamp from its parts: physical_ns rounded down to the physical
 * resolution, plus `logical` (values above RK_HLC_LOGICAL_MASK carry into
 * the physical part, as ticks do). */
uint64_t rk_hlc_pack(uint64_t physical_ns, uint32_t logical);

/* The parts of a timestamp: *out_physical_ns (a multiple of 2^16 ns since
 * the Unix epoch) and *out_logical (0..65535). Either pointer may be NULL.
 * rk_hlc_pack(p, l) unpacks to (p rounded down, l) for l <= 65535. */
void rk_hlc_unpack(uint64_t timestamp, uint64_t *out_physical_ns,
                   uint32_t *out_logical);

#ifdef __cplusplus
}
#endif

#endif /* RK_HLC_H_ */
