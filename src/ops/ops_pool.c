/* A small fork-join pool for the ops library: threads - 1 workers wait on a
 * condition variable for a generation number to change, run their part of
 * the current job, and the last one to finish signals the caller. The
 * calling thread runs part 0 itself. Jobs from several calling threads take
 * turns (run_lock). Only large operations come here (hundreds of
 * microseconds and more), so a condition variable's wake-up cost is small
 * next to the work.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/error.h"
#include "ops/ops_internal.h"

struct rk__ops_pool {
  pthread_mutex_t run_lock; /* one job at a time */
  pthread_mutex_t lock;     /* guards everything below */
  pthread_cond_t wake, done;
  int nworkers;
  pthread_t *threads;
  unsigned long gen; /* incremented per job */
  int parts;         /* parts of the current job */
  int pending;       /* workers still running the current job */
  bool stop;
  rk__ops_part_fn fn;
  void *arg;
};

typedef struct worker_arg {
  rk__ops_pool_t *pool;
  int index; /* 1-based: part `index` is this worker's */
} worker_arg_t;

static void *worker_main(void *p) {
  worker_arg_t wa = *(worker_arg_t *)p;
  free(p);
  rk__ops_pool_t *pool = wa.pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (!pool->stop && pool->gen == seen)
      pthread_cond_wait(&pool->wake, &pool->lock);
    if (pool->stop) break;
    seen = pool->gen;
    if (wa.index >= pool->parts) continue; /* not needed for this job */
    rk__ops_part_fn fn = pool->fn;
    void *arg = pool->arg;
    pthread_mutex_unlock(&pool->lock);
    fn(arg, wa.index);
    pthread_mutex_lock(&pool->lock);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

rk_status_t rk__ops_pool_create(int threads, rk__ops_pool_t **out) {
  rk__ops_pool_t *pool = calloc(1, sizeof *pool);
  if (!pool) return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: thread pool");
  pthread_mutex_init(&pool->run_lock, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  int want = threads > 1 ? threads - 1 : 0;
  pool->threads = want ? calloc((size_t)want, sizeof *pool->threads) : NULL;
  if (want && !pool->threads) {
    rk__ops_pool_destroy(pool);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "ops: thread pool");
  }
  for (int i = 0; i < want; ++i) {
    worker_arg_t *wa = malloc(sizeof *wa);
    if (!wa) break;
    wa->pool = pool;
    wa->index = i + 1;
    if (pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
      free(wa);
      break; /* run with the workers that did start */
    }
    pool->nworkers = i + 1;
  }
  *out = pool;
  return RK_OK;
}

void rk__ops_pool_destroy(rk__ops_pool_t *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->nworkers; ++i) pthread_join(pool->threads[i], NULL);
  free(pool->threads);
  pthread_cond_destroy(&pool->done);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->run_lock);
  free(pool);
}

int rk__ops_pool_threads(const rk__ops_pool_t *pool) {
  return pool ? pool->nworkers + 1 : 1;
}

void rk__ops_pool_run(rk__ops_pool_t *pool, int parts, rk__ops_part_fn fn,
                      void *arg) {
  if (parts > pool->nworkers + 1) parts = pool->nworkers + 1;
  if (parts <= 1) {
    fn(arg, 0);
    return;
  }
  pthread_mutex_lock(&pool->run_lock);
  pthread_mutex_lock(&pool->lock);
  pool->fn = fn;
  pool->arg = arg;
  pool->parts = parts;
  pool->pending = parts - 1;
  pool->gen++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  fn(arg, 0);
  pthread_mutex_lock(&pool->lock);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
  pthread_mutex_unlock(&pool->run_lock);
}
