/* Launches on the process's shared CPU worker pool (base/pool.c, which the
 * ops library uses too): the grid's blocks are the pool's items, each
 * thread running them with its own fibers and dynamic shared memory. The
 * pinning, spinning, parking and launcher-CPU rule live in base/pool.c.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/sys.h"

/* One launch on the shared pool: the blocks are the pool's items. */
typedef struct cpu_job {
  const cpu_launch_t *launch;
  int failed; /* atomic: 1 once error/msg are set */
  rk_status_t error;
  char msg[512];
} cpu_job_t;

/* What a thread needs to run blocks: fibers and dynamic shared memory. Every
 * thread that runs blocks (pool workers and launching threads alike) keeps
 * its own, released when the thread ends. */
typedef struct cpu_runner {
  cpu_fiber_set_t *fibers;
  void *shared;
  size_t shared_cap;
} cpu_runner_t;

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
                      NULL,
                      /* A pool thread runs any module's blocks: the
                       * module looks its state up. */
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

static void runner_release(cpu_runner_t *r) {
  rk__cpu_fiber_set_destroy(r->fibers);
  free(r->shared);
  memset(r, 0, sizeof *r);
}

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

/* Items [first, end) of the pool run: blocks of the launch. */
static void run_chunk(void *arg, uint64_t first, uint64_t end) {
  cpu_job_t *job = arg;
  cpu_runner_t *r = caller_runner();
  if (!r) {
    job_fail(job, RK_ERR_OUT_OF_MEMORY, "cpu: launch state");
    return;
  }
  run_blocks(job, r, first, end);
}

rk_status_t rk__cpu_pool_create(int threads, cpu_pool_t **out) {
  return rk__pool_acquire(threads, out);
}

void rk__cpu_pool_destroy(cpu_pool_t *pool) { rk__pool_release(pool); }

int rk__cpu_pool_threads(const cpu_pool_t *pool) {
  return rk__pool_threads(pool);
}

rk_status_t rk__cpu_pool_run(cpu_pool_t *pool, const cpu_launch_t *launch) {
  cpu_job_t job;
  memset(&job, 0, sizeof job);
  job.launch = launch;
  uint64_t nblocks = (uint64_t)launch->grid.x * launch->grid.y * launch->grid.z;
  /* Several chunks per thread balance uneven blocks; fiber blocks are
   * heavy enough to hand out one at a time. */
  uint64_t parts = (uint64_t)rk__pool_threads(pool) * 8;
  uint64_t chunk = launch->fibers ? 1 : (nblocks + parts - 1) / parts;
  rk__pool_run(pool, nblocks, chunk ? chunk : 1, run_chunk, &job);
  if (__atomic_load_n(&job.failed, __ATOMIC_ACQUIRE))
    return rk__fail(job.error, "%s", job.msg);
  return RK_OK;
}
