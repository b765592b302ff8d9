/* Quiescence (see quiesce.h). */
#include "base/quiesce.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

_Thread_local rk__quiesce_rec_t *rk__quiesce_self RK__TLS_FAST;

static rk__quiesce_rec_t *g_recs; /* atomic head; records are only added */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* At a thread's exit: its record is free for the next thread (its
 * sequence is even: no section is open). */
static void release_rec(void *arg) {
  rk__quiesce_rec_t *r = arg;
  __atomic_store_n(&r->in_use, 0u, __ATOMIC_RELEASE);
}

/* fork(): the child has only the forking thread, so every other record
 * is free there, its section (if one was open) over. */
static void fork_prepare(void) { pthread_mutex_lock(&g_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&g_mu); }
static void fork_child(void) {
  pthread_mutex_init(&g_mu, NULL);
  for (rk__quiesce_rec_t *r = g_recs; r; r = r->next) {
    if (r == rk__quiesce_self) continue;
    r->in_use = 0;
    r->seq += r->seq & 1u;
    r->depth = 0;
  }
}

static void make_key(void) {
  rk__ring_fences_init();
  (void)pthread_key_create(&g_key, release_rec);
  (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

rk__quiesce_rec_t *rk__quiesce_register(void) {
  pthread_once(&g_once, make_key);
  rk__quiesce_rec_t *r = NULL;
  pthread_mutex_lock(&g_mu);
  for (rk__quiesce_rec_t *q = g_recs; q; q = q->next) {
    uint32_t free_ = 0;
    if (__atomic_compare_exchange_n(&q->in_use, &free_, 1u, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      r = q;
      break;
    }
  }
  if (!r) {
    /* A line of its own: its owner stores the sequence on every section. */
    r = aligned_alloc(64, 64);
    if (!r) abort(); /* 64 bytes, once per thread */
    r->seq = 0;
    r->in_use = 1;
    r->next = g_recs;
    __atomic_store_n(&g_recs, r, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_mu);
  r->depth = 0;
  rk__quiesce_self = r;
  (void)pthread_setspecific(g_key, r);
  return r;
}

void rk__quiesce_wait(void) {
  pthread_once(&g_once, make_key);
  rk__ring_fence_heavy();
  rk__quiesce_rec_t *self = rk__quiesce_self;
  for (rk__quiesce_rec_t *r = __atomic_load_n(&g_recs, __ATOMIC_ACQUIRE); r;
       r = r->next) {
    if (r == self) continue;
    const uint64_t s = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
    if (!(s & 1u)) continue;
    /* A section is open: it ends within a turn of a worker or a send. */
    for (unsigned k = 0; __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == s; ++k) {
      if (k < 64)
        rk__cpu_relax();
      else
        sched_yield();
    }
  }
}
