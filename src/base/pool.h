/* pool.h - the one CPU worker pool of the process, shared by the CPU
 * backend's launches and the ops library's threaded SIMD operations.
 *
 * A pool of T threads has T - 1 workers, pinned one per allowed CPU (the
 * launching thread usually runs on the first) when there is a CPU for each
 * thread. Idle workers spin RK_CPU_SPIN_US (default 200 us) for new work and
 * then park on a futex, so an idle pool costs no CPU and a busy one no
 * system calls. The launcher-CPU rule: when the launching thread finds
 * itself on a CPU that a pinned worker owns, that worker moves to the
 * spare CPU (one sched_getcpu per run, a system call only when the launcher
 * has moved).
 *
 * Pools are shared by size: rk__pool_acquire(T) returns the live pool of T
 * threads if there is one (reference counted), so a process whose CPU
 * backend and ops library both use the default size (the allowed CPUs,
 * RK_CPU_THREADS / RK_OPS_THREADS aside) has exactly one set of workers.
 *
 * A run is a range of items [0, n) claimed in chunks by the workers and the
 * calling thread, which helps and returns when all are done. Several threads
 * may run at once on one pool (their jobs share the workers). The protocol
 * is modelled in tests/model/pool.pml. */
#ifndef RK_BASE_POOL_H_
#define RK_BASE_POOL_H_

#include <stdint.h>

#include "rk/status.h"

typedef struct rk__pool rk__pool_t;

/* Runs items [first, end). Called on the pool's threads and the caller's. */
typedef void (*rk__pool_fn)(void *arg, uint64_t first, uint64_t end);

/* The shared pool of `threads` threads (>= 1; 0: RK_CPU_THREADS, else the
 * CPUs this process may run on), created on first use. */
rk_status_t rk__pool_acquire(int threads, rk__pool_t **out);
/* Drops a reference; the last one stops the workers. NULL is ignored. */
void rk__pool_release(rk__pool_t *pool);
int rk__pool_threads(const rk__pool_t *pool);
/* How many live pools there are (for tests). */
int rk__pool_count(void);
/* Runs fn over [0, n) in chunks of `chunk` (>= 1) items on the pool and
 * the calling thread; returns when all are done. n <= chunk, or a pool of
 * one thread, runs everything on the calling thread. */
void rk__pool_run(rk__pool_t *pool, uint64_t n, uint64_t chunk, rk__pool_fn fn,
                  void *arg);

#endif /* RK_BASE_POOL_H_ */
