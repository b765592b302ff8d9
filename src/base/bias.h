/* A role biased towards one thread: the first thread that asks owns it and
 * runs its sections without a locked instruction (a store, a compiler
 * barrier and a load on each entry) for as long as it is the only thread
 * that asks. The first other thread revokes the bias for good: it waits
 * for the owner to leave the section it may be in, and from then on
 * everyone, the old owner included, takes the shared path (locks, atomic
 * read-modify-writes) the caller had all along.
 *
 *   if (rk__bias_enter(&b)) {        // the owner, biased: alone
 *     ...plain loads and stores of what the role protects...
 *     rk__bias_leave(&b);
 *   } else {
 *     rk__bias_share(&b);            // revokes if needed; then shared
 *     ...the shared protocol...
 *   }
 *
 * The handshake is the asymmetric one of the rings (base/ring.c): the
 * owner's store of `busy` and load of `state` are ordered by a compiler
 * barrier where the revoker can impose a barrier on every CPU (membarrier),
 * by full fences otherwise. Modelled in tests/model/bias.pml. Sections of
 * the owner must not block: a revoker waits for them. */
#ifndef RK_BASE_BIAS_H_
#define RK_BASE_BIAS_H_

#include <stdbool.h>
#include <stdint.h>

#include "abi/actor_abi.h"
#include "base/ring.h"
#include "base/sys.h"

typedef struct rk__bias {
  uint32_t state;  /* atomic: rk__bias_state_t */
  uintptr_t owner; /* the owner's token, written before state = BIASED */
  /* Written by the owner only (1 inside a section), read by a revoker: a
   * line of its own, so that entering never pulls a line others read. */
  _Alignas(RK_ABI_LINE) uint32_t busy;
  _Alignas(RK_ABI_LINE) char after_busy_unused;
} rk__bias_t;

typedef enum rk__bias_state {
  RK__BIAS_NONE,     /* nobody asked yet */
  RK__BIAS_CLAIMING, /* the first thread is writing its token */
  RK__BIAS_BIASED,   /* the owner may enter */
  RK__BIAS_REVOKING, /* a revoker waits for the owner to leave */
  RK__BIAS_SHARED,   /* for good: everyone takes the shared path */
} rk__bias_state_t;

/* Also chooses, once per process, how the two halves of the handshake
 * fence (rk__ring_fences_init). */
void rk__bias_init(rk__bias_t *b);

/* True when the calling thread owns the role and entered a section (leave
 * it with rk__bias_leave); false otherwise, with nothing entered. The
 * first caller becomes the owner. */
bool rk__bias_enter_slow(rk__bias_t *b);

/* This thread's token: the address of a thread-local byte (bias.c). */
extern _Thread_local char rk__bias_token_byte RK__TLS_FAST;
static inline uintptr_t rk__bias_token(void) {
  return (uintptr_t)&rk__bias_token_byte;
}

static inline bool rk__bias_enter(rk__bias_t *b) {
  const uint32_t s = __atomic_load_n(&b->state, __ATOMIC_RELAXED);
  /* Once shared, for good: no section, and no store to `busy`. */
  if (s == RK__BIAS_SHARED) return false;
  if (s != RK__BIAS_BIASED ||
      __atomic_load_n(&b->owner, __ATOMIC_RELAXED) != rk__bias_token())
    return rk__bias_enter_slow(b); /* claims, or refuses */
  /* The owner, inline: its half of the handshake as rk__bias_enter_slow
   * does it (busy before state). */
  __atomic_store_n(&b->busy, 1u, __ATOMIC_RELAXED);
  rk__ring_fence_light();
  if (__atomic_load_n(&b->state, __ATOMIC_RELAXED) == RK__BIAS_BIASED)
    return true;
  __atomic_store_n(&b->busy, 0u, __ATOMIC_RELEASE);
  return false;
}
static inline void rk__bias_leave(rk__bias_t *b) {
  /* Release: what the section wrote, before a revoker that sees 0. */
  __atomic_store_n(&b->busy, 0u, __ATOMIC_RELEASE);
}

/* Before a thread takes the shared path: returns once no owner can be in
 * a section, now or later (revoking the bias if another thread owns it;
 * the owner itself, outside its sections, needs no revocation and gets
 * none). */
void rk__bias_share_slow(rk__bias_t *b);
static inline void rk__bias_share(rk__bias_t *b) {
  if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != RK__BIAS_SHARED)
    rk__bias_share_slow(b);
}

#endif /* RK_BASE_BIAS_H_ */
