/* The CPU worker pool: one pinned worker per allowed core (less the one the
 * launching thread uses), spinning briefly for new work and then parking on
 * a futex, so an idle pool costs no CPU and a busy one no system calls.
 *
 * A launch is a job on the pool's list. Workers and the launching thread
 * claim chunks of blocks with an atomic counter; the thread that finishes the
 * last block wakes the launcher if it parked. A job stays on the list until
 * all its blocks are done, then the launcher unlinks it and waits for the
 * workers still looking at it to leave.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/sys.h"

typedef struct cpu_job {
  const cpu_launch_t *launch;
  uint64_t nblocks, chunk;
  uint64_t next;     /* atomic: next block to claim */
  uint64_t done;     /* atomic: blocks finished */
  uint32_t finished; /* atomic futex word: 1 when done == nblocks */
  uint32_t waiting;  /* atomic: the launcher is parked */
  int active;        /* atomic: workers inside this job */
  int failed;        /* atomic: 1 once error/msg are set */
  rk_status_t error;
  char msg[512];
  struct cpu_job *next_job;
} cpu_job_t;

/* What a thread needs to run blocks: fibers and dynamic shared memory. */
typedef struct cpu_runner {
  cpu_fiber_set_t *fibers;
  void *shared;
  size_t shared_cap;
} cpu_runner_t;

typedef struct cpu_worker {
  cpu_pool_t *pool;
  pthread_t thread;
  int cpu; /* atomic; -1: not pinned */
  cpu_runner_t runner;
} cpu_worker_t;

struct cpu_pool {
  int nworkers;
  cpu_worker_t *workers;
  pthread_mutex_t lock; /* guards jobs and stop */
  cpu_job_t *jobs;
  bool stop;
  uint32_t gen;     /* atomic futex word, bumped on every new job */
  int sleepers;     /* atomic: parked workers */
  uint64_t spin_ns; /* how long an idle worker spins before parking */
  int spare_cpu;    /* the allowed CPU no worker is pinned to, or -1 */
};

static void job_fail(cpu_job_t *job, rk_status_t s, const char *msg) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&job->failed, &expected, 1, 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    job->error = s;
    snprintf(job->msg, sizeof job->msg, "%s", msg);
  }
}

/* Barrier hook for modules compiled without barrier support: the kernel
 * reached rk_sync_threads() anyway (e.g. through a macro from a header). */
static void barrier_unsupported(void *sched) {
  job_fail((cpu_job_t *)sched, RK_ERR_LAUNCH,
           "kernel reached rk_sync_threads() but its module was built "
           "without barrier support (the call was not visible in the "
           "module's source)");
}

static void barrier_fiber(void *sched) {
  rk__cpu_fiber_yield((cpu_fiber_set_t *)sched);
}

typedef struct fiber_block {
  const cpu_launch_t *launch;
  const rk__klaunch_t *kl;
  uint32_t bid[3];
} fiber_block_t;

static void run_fiber_thread(void *arg, uint32_t index) {
  const fiber_block_t *fb = arg;
  const rk_dim3_t b = fb->launch->block;
  uint32_t tid[3] = {index % b.x, (index / b.x) % b.y, index / (b.x * b.y)};
  fb->launch->entry->run_thread(fb->kl, fb->bid, tid, fb->launch->args);
}

static void run_blocks(cpu_job_t *job, cpu_runner_t *r, uint64_t first,
                       uint64_t end) {
  const cpu_launch_t *L = job->launch;
  if (L->shared_mem > r->shared_cap) {
    void *grown = realloc(r->shared, L->shared_mem);
    if (!grown) {
      job_fail(job, RK_ERR_OUT_OF_MEMORY,
               "cpu: cannot allocate dynamic shared memory");
      return;
    }
    r->shared = grown;
    r->shared_cap = L->shared_mem;
  }
  rk__klaunch_t kl = {{L->grid.x, L->grid.y, L->grid.z},
                      {L->block.x, L->block.y, L->block.z},
                      r->shared,
                      NULL,
                      NULL};
  uint32_t threads = L->block.x * L->block.y * L->block.z;
  if (!L->fibers || threads == 1) {
    /* With one thread per block a barrier has nothing to wait for. */
    if (!L->fibers && threads > 1) {
      kl.barrier = barrier_unsupported;
      kl.sched = job;
    }
    L->entry->run_blocks(&kl, first, end, L->args);
    return;
  }
  if (!r->fibers && !(r->fibers = rk__cpu_fiber_set_create())) {
    job_fail(job, RK_ERR_OUT_OF_MEMORY, "cpu: cannot allocate fibers");
    return;
  }
  kl.barrier = barrier_fiber;
  kl.sched = r->fibers;
  fiber_block_t fb = {L, &kl, {0, 0, 0}};
  for (uint64_t b = first; b < end; ++b) {
    fb.bid[0] = (uint32_t)(b % L->grid.x);
    fb.bid[1] = (uint32_t)((b / L->grid.x) % L->grid.y);
    fb.bid[2] = (uint32_t)(b / ((uint64_t)L->grid.x * L->grid.y));
    if (rk__cpu_fiber_run(r->fibers, threads, run_fiber_thread, &fb) != RK_OK) {
      job_fail(job, RK_ERR_OUT_OF_MEMORY, rk_last_error());
      return;
    }
  }
}

/* Claims and runs chunks until none are left. */
static void work(cpu_job_t *job, cpu_runner_t *r) {
  for (;;) {
    uint64_t first =
        __atomic_fetch_add(&job->next, job->chunk, __ATOMIC_RELAXED);
    if (first >= job->nblocks) return;
    uint64_t end = first + job->chunk;
    if (end > job->nblocks) end = job->nblocks;
    run_blocks(job, r, first, end);
    uint64_t n = end - first;
    if (__atomic_add_fetch(&job->done, n, __ATOMIC_ACQ_REL) == job->nblocks) {
      __atomic_store_n(&job->finished, 1, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&job->waiting, __ATOMIC_SEQ_CST))
        rk__wake_all(&job->finished);
    }
  }
}

static cpu_job_t *find_job(cpu_pool_t *pool) {
  for (cpu_job_t *j = pool->jobs; j; j = j->next_job)
    if (__atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->nblocks) return j;
  return NULL;
}

static void *worker_main(void *arg) {
  cpu_worker_t *w = arg;
  cpu_pool_t *pool = w->pool;
#if defined(__linux__)
  /* A launcher may re-pin this worker (and update cpu) at any time. */
  int cpu = __atomic_load_n(&w->cpu, __ATOMIC_RELAXED);
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* Pinning is best effort: containers may forbid it. */
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
#endif
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    if (pool->stop) {
      pthread_mutex_unlock(&pool->lock);
      break;
    }
    cpu_job_t *job = find_job(pool);
    if (job) __atomic_add_fetch(&job->active, 1, __ATOMIC_ACQ_REL);
    uint32_t seen = __atomic_load_n(&pool->gen, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&pool->lock);
    if (job) {
      work(job, &w->runner);
      __atomic_sub_fetch(&job->active, 1, __ATOMIC_RELEASE);
      continue;
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

static void runner_release(cpu_runner_t *r) {
  rk__cpu_fiber_set_destroy(r->fibers);
  free(r->shared);
  memset(r, 0, sizeof *r);
}

/* Launching threads keep their own runner, released when the thread ends. */
static pthread_key_t g_runner_key;
static pthread_once_t g_runner_once = PTHREAD_ONCE_INIT;

static void runner_key_destroy(void *p) {
  runner_release(p);
  free(p);
}

static void runner_key_init(void) {
  pthread_key_create(&g_runner_key, runner_key_destroy);
}

static cpu_runner_t *caller_runner(void) {
  pthread_once(&g_runner_once, runner_key_init);
  cpu_runner_t *r = pthread_getspecific(g_runner_key);
  if (!r && (r = calloc(1, sizeof *r))) pthread_setspecific(g_runner_key, r);
  return r;
}

rk_status_t rk__cpu_pool_create(int threads, cpu_pool_t **out) {
  int cpus[1024];
  int ncpus = rk__allowed_cpus(cpus, 1024);
  long total = threads > 0 ? threads : ncpus, spin_us = 200;
  RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_THREADS", 1, 1024, &total));
  RK_RETURN_IF_ERROR(rk__env_long("RK_CPU_SPIN_US", 0, 1000000, &spin_us));
  threads = (int)total;
  cpu_pool_t *pool = calloc(1, sizeof *pool);
  if (!pool) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: worker pool");
  pool->nworkers = threads - 1;
  pool->spin_ns = (uint64_t)spin_us * 1000;
  pool->spare_cpu = threads == ncpus && threads > 1 ? cpus[0] : -1;
  pthread_mutex_init(&pool->lock, NULL);
  pool->workers = calloc((size_t)(pool->nworkers ? pool->nworkers : 1),
                         sizeof *pool->workers);
  if (!pool->workers) {
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: worker pool");
  }
  for (int i = 0; i < pool->nworkers; ++i) {
    cpu_worker_t *w = &pool->workers[i];
    w->pool = pool;
    /* Worker i on the (i+1)-th allowed CPU; the launcher usually runs on
     * the first. Pin only when there is a CPU per thread. */
    w->cpu = threads <= ncpus ? cpus[(i + 1) % ncpus] : -1;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      pool->nworkers = i;
      rk__cpu_pool_destroy(pool);
      return rk__fail(RK_ERR_UNAVAILABLE, "cpu: cannot start worker %d", i);
    }
  }
  *out = pool;
  return RK_OK;
}

void rk__cpu_pool_destroy(cpu_pool_t *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = true;
  pthread_mutex_unlock(&pool->lock);
  __atomic_add_fetch(&pool->gen, 1, __ATOMIC_SEQ_CST);
  rk__wake_all(&pool->gen);
  for (int i = 0; i < pool->nworkers; ++i) {
    pthread_join(pool->workers[i].thread, NULL);
    runner_release(&pool->workers[i].runner);
  }
  pthread_mutex_destroy(&pool->lock);
  free(pool->workers);
  free(pool);
}

int rk__cpu_pool_threads(const cpu_pool_t *pool) { return pool->nworkers + 1; }

rk_status_t rk__cpu_pool_run(cpu_pool_t *pool, const cpu_launch_t *launch) {
  cpu_runner_t *r = caller_runner();
  if (!r) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: launch state");
  cpu_job_t job;
  memset(&job, 0, sizeof job);
  job.launch = launch;
  job.nblocks = (uint64_t)launch->grid.x * launch->grid.y * launch->grid.z;
  /* Several chunks per thread balance uneven blocks; fiber blocks are
   * heavy enough to hand out one at a time. */
  uint64_t parts = (uint64_t)(pool->nworkers + 1) * 8;
  job.chunk = launch->fibers ? 1 : (job.nblocks + parts - 1) / parts;
  if (job.chunk == 0) job.chunk = 1;

  bool shared = pool->nworkers > 0 && job.nblocks > job.chunk;
  if (shared) {
    pthread_mutex_lock(&pool->lock);
#if defined(__linux__)
    /* A pinned worker on the launcher's CPU would share a core with it while
     * the spare CPU idles (the scheduler moves launchers, e.g. on a futex
     * wake-up). Move that worker to the spare CPU: one sched_getcpu per
     * launch, a system call only when the launcher has moved. */
    if (pool->spare_cpu >= 0) {
      int here = sched_getcpu();
      if (here >= 0 && here != pool->spare_cpu) {
        for (int i = 0; i < pool->nworkers; ++i) {
          cpu_worker_t *w = &pool->workers[i];
          if (__atomic_load_n(&w->cpu, __ATOMIC_RELAXED) != here) continue;
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(pool->spare_cpu, &set);
          if (pthread_setaffinity_np(w->thread, sizeof set, &set) == 0) {
            __atomic_store_n(&w->cpu, pool->spare_cpu, __ATOMIC_RELAXED);
            pool->spare_cpu = here;
          }
          break;
        }
      }
    }
#endif
    cpu_job_t **tail = &pool->jobs;
    while (*tail) tail = &(*tail)->next_job;
    *tail = &job;
    pthread_mutex_unlock(&pool->lock);
    __atomic_add_fetch(&pool->gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pool->sleepers, __ATOMIC_SEQ_CST) > 0)
      rk__wake_all(&pool->gen);
  }
  work(&job, r);
  if (shared) {
    uint64_t start =
        __atomic_load_n(&job.finished, __ATOMIC_ACQUIRE) ? 0 : rk__now_ns();
    for (unsigned i = 1; !__atomic_load_n(&job.finished, __ATOMIC_ACQUIRE);
         ++i) {
      rk__cpu_relax();
      if ((i & 63) == 0 && rk__now_ns() - start > pool->spin_ns) {
        __atomic_store_n(&job.waiting, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&job.finished, __ATOMIC_SEQ_CST))
          rk__wait_while_equal(&job.finished, 0, 0);
        break;
      }
    }
    pthread_mutex_lock(&pool->lock);
    for (cpu_job_t **p = &pool->jobs; *p; p = &(*p)->next_job) {
      if (*p == &job) {
        *p = job.next_job;
        break;
      }
    }
    pthread_mutex_unlock(&pool->lock);
    while (__atomic_load_n(&job.active, __ATOMIC_ACQUIRE) != 0) rk__cpu_relax();
  }
  if (__atomic_load_n(&job.failed, __ATOMIC_ACQUIRE))
    return rk__fail(job.error, "%s", job.msg);
  return RK_OK;
}
