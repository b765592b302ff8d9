/* Quiescence: freeing what other threads may still be using, without a
 * lock or a locked instruction on their side.
 *
 * A thread that reads a pointer to something another thread may free
 * (a cluster peer's UCP worker, say) does so inside a section:
 *
 *   rk__quiesce_enter();
 *   ucp_worker_h w = __atomic_load_n(&p->w, __ATOMIC_ACQUIRE);
 *   if (w) use(w);
 *   rk__quiesce_leave();
 *
 * and the thread that frees it first unpublishes it (stores NULL where
 * sections look), then calls rk__quiesce_wait, which returns once every
 * section that could have seen the old value has ended; then it frees.
 *
 * Each thread has a record with a sequence number, odd inside a section:
 * entering stores it (a plain store) and leaving stores it again (a
 * release store), and sections nest. rk__quiesce_wait pairs its heavy
 * fence (membarrier where the kernel has it) with the section's light one
 * (base/ring.h), so either the section's load comes after the
 * unpublishing store or the waiter sees its odd sequence; for each odd
 * one it waits until the number moves (that section ended; a later one
 * sees the new value). Records live as long as the process; a thread's
 * goes back to a free list when it exits, and in a forked child every
 * other thread's is free (those threads are not there). Modelled in
 * tests/model/quiesce.pml; tests/base/test_quiesce.c frees objects under
 * reader threads.
 */
#ifndef RK_BASE_QUIESCE_H_
#define RK_BASE_QUIESCE_H_

#include <stdint.h>

#include "base/ring.h"
#include "base/sys.h"

typedef struct rk__quiesce_rec {
  uint64_t seq;    /* atomic; written by the owner only: odd inside */
  uint32_t depth;  /* the owner's nesting */
  uint32_t in_use; /* atomic: a thread owns it */
  struct rk__quiesce_rec *next; /* the list of every record, never freed */
} rk__quiesce_rec_t;

extern _Thread_local rk__quiesce_rec_t *rk__quiesce_self RK__TLS_FAST;

/* This thread's record, made or taken from the free list on first use. */
rk__quiesce_rec_t *rk__quiesce_register(void);

static inline void rk__quiesce_enter(void) {
  rk__quiesce_rec_t *r = rk__quiesce_self;
  if (!r) r = rk__quiesce_register();
  if (r->depth++ == 0) {
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELAXED);
    rk__ring_fence_light();
  }
}

static inline void rk__quiesce_leave(void) {
  rk__quiesce_rec_t *r = rk__quiesce_self;
  if (--r->depth == 0) __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
}

/* After unpublishing: returns once every section that began before it
 * was called has ended. Never from inside a section of this thread (its
 * own is skipped: it would wait for itself), never holding a lock that a
 * section may wait for. */
void rk__quiesce_wait(void);

#endif /* RK_BASE_QUIESCE_H_ */
