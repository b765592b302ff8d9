/* The shared CPU worker pool (see pool.h).
 *
 * A run is a job on the pool's list. Workers and the launching thread claim
 * chunks with an atomic counter; the thread that finishes the last chunk
 * wakes the launcher if it parked. A job stays on the list until all its
 * items are done, then the launcher unlinks it and waits for the workers
 * still looking at it to leave.
 */
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/platform.h"
#include "base/sys.h"

typedef struct pool_job {
  rk__pool_fn fn;
  void *arg;
  uint64_t n, chunk;
  uint64_t next;     /* atomic: next item to claim */
  uint64_t done;     /* atomic: items finished */
  uint32_t finished; /* atomic futex word: 1 when done == n */
  uint32_t waiting;  /* atomic: the launcher is parked */
  int active;        /* atomic: workers inside this job */
  struct pool_job *next_job;
} pool_job_t;

typedef struct pool_worker {
  rk__pool_t *pool;
  pthread_t thread;
  int cpu; /* atomic; -1: not pinned */
} pool_worker_t;

struct rk__pool {
  int threads; /* the size it was acquired with */
  int refs;    /* guarded by g_registry_lock */
  rk__pool_t *next_pool;
  int nworkers;
  pool_worker_t *workers;
  pthread_mutex_t lock; /* guards jobs and stop */
  pool_job_t *jobs;
  bool stop;
  uint32_t gen;     /* atomic futex word, bumped on every new job */
  int sleepers;     /* atomic: parked workers */
  uint64_t spin_ns; /* how long an idle worker spins before parking */
  int spare_cpu;    /* the allowed CPU no worker is pinned to, or -1 */
};

/* Claims and runs chunks until none are left. */
static void work(pool_job_t *job) {
  for (;;) {
    uint64_t first =
        __atomic_fetch_add(&job->next, job->chunk, __ATOMIC_RELAXED);
    if (first >= job->n) return;
    uint64_t end = first + job->chunk;
    if (end > job->n) end = job->n;
    job->fn(job->arg, first, end);
    if (__atomic_add_fetch(&job->done, end - first, __ATOMIC_ACQ_REL) ==
        job->n) {
      __atomic_store_n(&job->finished, 1, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&job->waiting, __ATOMIC_SEQ_CST))
        rk__wake_all(&job->finished);
    }
  }
}

/* The first job with items left, and whether any other job was listed
 * with it. */
static pool_job_t *find_job(rk__pool_t *pool, bool *others) {
  pool_job_t *found = NULL;
  *others = false;
  for (pool_job_t *j = pool->jobs; j; j = j->next_job) {
    if (found) {
      *others = true;
      break;
    }
    if (__atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->n) found = j;
  }
  return found;
}

static void *worker_main(void *arg) {
  pool_worker_t *w = arg;
  rk__pool_t *pool = w->pool;
  /* A launcher may re-pin this worker (and update cpu) at any time.
   * Pinning is best effort: containers may forbid it, macOS has none. */
  int cpu = __atomic_load_n(&w->cpu, __ATOMIC_RELAXED);
  if (cpu >= 0) rk__pin_thread(pthread_self(), cpu);
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    if (pool->stop) {
      pthread_mutex_unlock(&pool->lock);
      break;
    }
    bool others;
    pool_job_t *job = find_job(pool, &others);
    if (job) __atomic_add_fetch(&job->active, 1, __ATOMIC_ACQ_REL);
    uint32_t seen = __atomic_load_n(&pool->gen, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&pool->lock);
    if (job) {
      work(job);
      __atomic_sub_fetch(&job->active, 1, __ATOMIC_RELEASE);
      /* With other jobs listed, look at the list again. Alone, wait for
       * the next generation straight away: every job listed after `seen`
       * was read bumps gen, and not taking the lock here leaves it to the
       * launcher, which takes it next to unlink this job. */
      if (others) continue;
    }
    uint64_t start = rk__now_ns();
    for (unsigned i = 1; __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE) == seen;
         ++i) {
      rk__cpu_relax();
      if ((i & 63) == 0 && rk__now_ns() - start > pool->spin_ns) break;
    }
    if (__atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE) != seen) continue;
    /* Park. Pairs with the launcher's increment of gen then load of
     * sleepers: one of the two sees the other's store (both seq_cst). */
    __atomic_add_fetch(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pool->gen, __ATOMIC_SEQ_CST) == seen)
      rk__wait_while_equal(&pool->gen, seen, 0);
    __atomic_sub_fetch(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static void pool_destroy(rk__pool_t *pool) {
  pthread_mutex_lock(&pool->lock);
  pool->stop = true;
  pthread_mutex_unlock(&pool->lock);
  __atomic_add_fetch(&pool->gen, 1, __ATOMIC_SEQ_CST);
  rk__wake_all(&pool->gen);
  for (int i = 0; i < pool->nworkers; ++i)
    pthread_join(pool->workers[i].thread, NULL);
  pthread_mutex_destroy(&pool->lock);
  free(pool->workers);
  free(pool);
}

static rk_status_t pool_create(int threads, rk__pool_t **out) {
  int cpus[1024];
  int ncpus = rk__allowed_cpus(cpus, 1024);
  long spin_us = 200, pin = 1;
  RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_SPIN_US", 0, 1000000, &spin_us));
  /* RK_CPU_PIN=0 leaves workers to the scheduler: short launches then
   * sometimes run on one CPU (docs/cpu-backend.md). */
  RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_PIN", 0, 1, &pin));
  if (!pin) ncpus = 0;
  rk__pool_t *pool = calloc(1, sizeof *pool);
  if (!pool) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu worker pool");
  pool->threads = threads;
  pool->nworkers = threads - 1;
  pool->spin_ns = (uint64_t)spin_us * 1000;
  pool->spare_cpu = threads == ncpus && threads > 1 ? cpus[0] : -1;
  pthread_mutex_init(&pool->lock, NULL);
  pool->workers = calloc((size_t)(pool->nworkers ? pool->nworkers : 1),
                         sizeof *pool->workers);
  if (!pool->workers) {
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu worker pool");
  }
  for (int i = 0; i < pool->nworkers; ++i) {
    pool_worker_t *w = &pool->workers[i];
    w->pool = pool;
    /* Worker i on the (i+1)-th allowed CPU; the launcher usually runs on
     * the first. Pin only when there is a CPU per thread. */
    w->cpu = ncpus > 0 && threads <= ncpus ? cpus[(i + 1) % ncpus] : -1;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      pool->nworkers = i;
      pool_destroy(pool);
      return rk__fail(RK_ERR_UNAVAILABLE,
                      "cpu worker pool: cannot start "
                      "worker %d",
                      i);
    }
  }
  *out = pool;
  return RK_OK;
}

/* Live pools, one per size. */
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static rk__pool_t *g_pools;

rk_status_t rk__pool_acquire(int threads, rk__pool_t **out) {
  if (threads <= 0) {
    int cpus[1024];
    long total = rk__allowed_cpus(cpus, 1024);
    if (total < 1) total = 1;
    RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_THREADS", 1, 1024, &total));
    threads = (int)total;
  }
  if (threads > 1024) threads = 1024;
  pthread_mutex_lock(&g_registry_lock);
  rk__pool_t *pool = g_pools;
  while (pool && pool->threads != threads) pool = pool->next_pool;
  rk_status_t s = RK_OK;
  if (!pool) {
    s = pool_create(threads, &pool);
    if (s == RK_OK) {
      pool->next_pool = g_pools;
      g_pools = pool;
    }
  }
  if (s == RK_OK) {
    pool->refs++;
    *out = pool;
  }
  pthread_mutex_unlock(&g_registry_lock);
  return s;
}

void rk__pool_release(rk__pool_t *pool) {
  if (!pool) return;
  pthread_mutex_lock(&g_registry_lock);
  bool last = --pool->refs == 0;
  if (last)
    for (rk__pool_t **p = &g_pools; *p; p = &(*p)->next_pool)
      if (*p == pool) {
        *p = pool->next_pool;
        break;
      }
  pthread_mutex_unlock(&g_registry_lock);
  if (last) pool_destroy(pool);
}

int rk__pool_threads(const rk__pool_t *pool) {
  return pool ? pool->nworkers + 1 : 1;
}

int rk__pool_count(void) {
  pthread_mutex_lock(&g_registry_lock);
  int n = 0;
  for (rk__pool_t *p = g_pools; p; p = p->next_pool) ++n;
  pthread_mutex_unlock(&g_registry_lock);
  return n;
}

void rk__pool_run(rk__pool_t *pool, uint64_t n, uint64_t chunk, rk__pool_fn fn,
                  void *arg) {
  if (chunk == 0) chunk = 1;
  if (n == 0) return;
  if (!pool || pool->nworkers == 0 || n <= chunk) {
    fn(arg, 0, n);
    return;
  }
  pool_job_t job;
  memset(&job, 0, sizeof job);
  job.fn = fn;
  job.arg = arg;
  job.n = n;
  job.chunk = chunk;
  pthread_mutex_lock(&pool->lock);
#if RK__LINUX
  /* The launcher-CPU rule: a pinned worker on the launcher's CPU would
   * share a core with it while the spare CPU idles (the scheduler moves
   * launchers, e.g. on a futex wake-up). Move that worker to the spare
   * CPU. */
  if (pool->spare_cpu >= 0) {
    int here = rk__current_cpu();
    if (here >= 0 && here != pool->spare_cpu) {
      for (int i = 0; i < pool->nworkers; ++i) {
        pool_worker_t *w = &pool->workers[i];
        if (__atomic_load_n(&w->cpu, __ATOMIC_RELAXED) != here) continue;
        if (rk__pin_thread(w->thread, pool->spare_cpu)) {
          __atomic_store_n(&w->cpu, pool->spare_cpu, __ATOMIC_RELAXED);
          pool->spare_cpu = here;
        }
        break;
      }
    }
  }
#endif
  pool_job_t **tail = &pool->jobs;
  while (*tail) tail = &(*tail)->next_job;
  *tail = &job;
  pthread_mutex_unlock(&pool->lock);
  __atomic_add_fetch(&pool->gen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&pool->sleepers, __ATOMIC_SEQ_CST) > 0)
    rk__wake_all(&pool->gen);
  work(&job);
  uint64_t start =
      __atomic_load_n(&job.finished, __ATOMIC_ACQUIRE) ? 0 : rk__now_ns();
  for (unsigned i = 1; !__atomic_load_n(&job.finished, __ATOMIC_ACQUIRE); ++i) {
    rk__cpu_relax();
    if ((i & 63) == 0 && rk__now_ns() - start > pool->spin_ns) {
      __atomic_store_n(&job.waiting, 1, __ATOMIC_SEQ_CST);
      while (!__atomic_load_n(&job.finished, __ATOMIC_SEQ_CST))
        rk__wait_while_equal(&job.finished, 0, 0);
      break;
    }
  }
  pthread_mutex_lock(&pool->lock);
  for (pool_job_t **p = &pool->jobs; *p; p = &(*p)->next_job) {
    if (*p == &job) {
      *p = job.next_job;
      break;
    }
  }
  pthread_mutex_unlock(&pool->lock);
  while (__atomic_load_n(&job.active, __ATOMIC_ACQUIRE) != 0) rk__cpu_relax();
}
