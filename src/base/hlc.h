/* Hybrid logical clocks (see abi/actor_abi.h for the packing): one 64-bit
 * word per clock, nanoseconds since the Unix epoch with the low 16 bits used
 * as a logical counter. Ticks are compare-and-swap loops, so concurrent
 * ticks of one clock return distinct, increasing values. */
#ifndef RK_BASE_HLC_H_
#define RK_BASE_HLC_H_

#include <stdint.h>

#define RK__HLC_LOGICAL_BITS 16u

/* Physical time in clock units: realtime nanoseconds, logical bits
 * cleared. */
uint64_t rk__hlc_physical(void);

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

#endif /* RK_BASE_HLC_H_ */
