/* A role biased towards one thread (see bias.h). */
#include "base/bias.h"

#include <sched.h>
#include <string.h>

#include "base/ring.h"
#include "base/sys.h"

#define LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* A thread's token (bias.h): the address of a thread-local byte, distinct
 * among live threads. A thread that reuses a dead owner's address
 * inherits the role, which nobody else can be using. */
_Thread_local char rk__bias_token_byte RK__TLS_FAST;
static uintptr_t token(void) { return rk__bias_token(); }

void rk__bias_init(rk__bias_t *b) {
  rk__ring_fences_init();
  memset(b, 0, sizeof *b);
}

/* NONE -> the caller owns it. False when another thread got there first. */
static bool claim(rk__bias_t *b) {
  uint32_t none = RK__BIAS_NONE;
  if (!__atomic_compare_exchange_n(&b->state, &none, RK__BIAS_CLAIMING, false,
                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return false;
  __atomic_store_n(&b->owner, token(), __ATOMIC_RELAXED);
  /* Release: the owner's token before the state that lets it enter. */
  STORE_RELEASE(&b->state, (uint32_t)RK__BIAS_BIASED);
  return true;
}

bool rk__bias_enter_slow(rk__bias_t *b) {
  if (LOAD_RELAXED(&b->owner) != token() &&
      (LOAD_RELAXED(&b->state) != RK__BIAS_NONE || !claim(b)))
    return false;
  __atomic_store_n(&b->busy, 1u, __ATOMIC_RELAXED);
  /* The owner's half of the handshake: busy before state (see
   * rk__bias_share: either this load sees the revocation, or the revoker
   * sees busy and waits). */
  rk__ring_fence_light();
  if (LOAD_RELAXED(&b->state) == RK__BIAS_BIASED) return true;
  STORE_RELEASE(&b->busy, 0u);
  return false;
}

void rk__bias_share_slow(rk__bias_t *b) {
  for (unsigned spins = 0;; ++spins) {
    uint32_t s = LOAD_ACQUIRE(&b->state);
    if (s == RK__BIAS_SHARED) return;
    if (s == RK__BIAS_NONE) {
      if (claim(b)) return; /* the owner, outside a section: nothing to do */
      continue;
    }
    if (s == RK__BIAS_BIASED) {
      if (LOAD_RELAXED(&b->owner) == token()) return;
      if (__atomic_compare_exchange_n(&b->state, &s, RK__BIAS_REVOKING, false,
                                      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        /* The revoker's half: after this, an owner that enters sees the
         * revocation, and one already in has its busy visible. */
        rk__ring_fence_heavy();
        for (unsigned w = 0; LOAD_ACQUIRE(&b->busy); ++w) {
          if (w % 64 == 63)
            sched_yield();
          else
            rk__cpu_relax();
        }
        STORE_RELEASE(&b->state, (uint32_t)RK__BIAS_SHARED);
        return;
      }
      continue;
    }
    /* CLAIMING or REVOKING: another thread is in the middle. */
    if (spins % 64 == 63)
      sched_yield();
    else
      rk__cpu_relax();
  }
}
