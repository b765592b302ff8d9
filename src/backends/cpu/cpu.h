/* CPU backend internals.
 *
 * Memory is host memory tracked in an allocation table so every copy and
 * pointer argument is bounds-checked. Kernels are C compiled by the system
 * compiler into shared objects (cpu_compile.c); launches run on a pool of
 * pinned worker threads (cpu_pool.c), the launching thread helping. A module
 * that uses rk_sync_threads() runs each GPU thread of a block on a fiber
 * (cpu_fiber.c). Streams are in-order queues, each drained by its own thread
 * (cpu_stream.c); the default (NULL) stream runs work on the calling thread
 * before the call returns.
 */
#ifndef RK_BACKENDS_CPU_CPU_H_
#define RK_BACKENDS_CPU_CPU_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/pool.h"
#include "hal/alloc_table.h"
#include "hal/hal.h"
#include "hal/pending.h"
#include "rk/kernel.h"

/* ---- Memory ------------------------------------------------------------- */

typedef struct cpu_memory {
  pthread_rwlock_t lock;    /* readers: copies in flight; writer: alloc/free */
  rk__alloc_table_t allocs; /* base: the host address */
  uint64_t limit;           /* largest total allowed (physical memory) */
  uint64_t in_use;
} cpu_memory_t;

void rk__cpu_memory_init(cpu_memory_t *mem, uint64_t limit);
void rk__cpu_memory_release(cpu_memory_t *mem);
rk_status_t rk__cpu_memory_allocate(cpu_memory_t *mem, size_t bytes,
                                    rk_devptr_t *out);
rk_status_t rk__cpu_memory_free(cpu_memory_t *mem, rk_devptr_t ptr);
/* Caller holds mem->lock (read or write). */
rk_status_t rk__cpu_memory_check_locked(const cpu_memory_t *mem,
                                        rk_devptr_t ptr, size_t n);
rk_status_t rk__cpu_memory_check(cpu_memory_t *mem, rk_devptr_t ptr, size_t n);
/* Re-validates and performs a copy, holding the table so the memory cannot
 * be freed meanwhile. */
rk_status_t rk__cpu_memory_copy(cpu_memory_t *mem, const rk__copy_t *copy);

/* ---- Fibers ------------------------------------------------------------- */

typedef struct cpu_fiber cpu_fiber_t;
typedef struct cpu_fiber_set cpu_fiber_set_t;

/* Runs fn(arg, i) for i in [0, n) each on its own fiber, switching at
 * rk__cpu_fiber_yield() in round-robin order, until all have returned. */
typedef void (*cpu_fiber_fn_t)(void *arg, uint32_t index);
cpu_fiber_set_t *rk__cpu_fiber_set_create(void);
void rk__cpu_fiber_set_destroy(cpu_fiber_set_t *set);
rk_status_t rk__cpu_fiber_run(cpu_fiber_set_t *set, uint32_t n,
                              cpu_fiber_fn_t fn, void *arg);
/* Called on a fiber: lets the other fibers of the set run to their next
 * yield (or end), then returns. */
void rk__cpu_fiber_yield(cpu_fiber_set_t *set);

/* ---- Worker pool -------------------------------------------------------- */

/* The shared pool (base/pool.h), acquired per context. */
typedef rk__pool_t cpu_pool_t;

typedef struct cpu_launch {
  const rk__kentry_t *entry;
  bool fibers;
  rk_dim3_t grid, block;
  size_t shared_mem;
  void *const *args;
} cpu_launch_t;

rk_status_t rk__cpu_pool_create(int threads, cpu_pool_t **out);
void rk__cpu_pool_destroy(cpu_pool_t *pool);
int rk__cpu_pool_threads(const cpu_pool_t *pool);
/* Runs every block of the launch on the pool, the calling thread helping,
 * and returns when all are done. Errors raised by the kernel run (a barrier
 * reached in a module built without barrier support, fiber stacks that could
 * not be allocated) come back as the status. Thread-safe. */
rk_status_t rk__cpu_pool_run(cpu_pool_t *pool, const cpu_launch_t *launch);

/* ---- Objects ------------------------------------------------------------ */

typedef struct cpu_backend {
  rk_backend_t base;
  rk_device_info_t info;
} cpu_backend_t;

typedef struct cpu_context {
  rk_context_t base;
  cpu_memory_t memory;
  cpu_pool_t *pool;
  pthread_mutex_t dir_lock; /* private_dir */
  /* The context's own directory (0700, under $TMPDIR) for the compiler's
   * input and output; made on the first build, removed with the context;
   * "" until then. */
  char private_dir[4096];
  rk__pending_t pending; /* first unreported default-stream error */
} cpu_context_t;

typedef struct cpu_module {
  rk_module_t base;
  void *dl;
  int image_fd; /* the sealed memory file dl was loaded from, or -1 */
  const rk__kmodule_t *desc;
  rk__param_t *params; /* all functions' parameters, one array */
} cpu_module_t;

typedef struct cpu_stream cpu_stream_t;

static inline cpu_context_t *cpu_ctx(rk_context_t *c) {
  return (cpu_context_t *)c;
}

rk_status_t rk__cpu_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module);
void rk__cpu_module_destroy(rk_module_t *module);
/* Removes the context's private directory and what is in it. */
void rk__cpu_private_dir_remove(cpu_context_t *ctx);

/* Persistent actors (cpu_actor.c); see the vtable slots in hal.h. */
rk_status_t rk__cpu_actor_start(rk_context_t *context,
                                const rk__actor_device_t *device,
                                rk__actor_worker_t **out_worker);
void rk__cpu_actor_release(rk__actor_worker_t *worker, bool stopped);
rk_status_t rk__cpu_actor_read_state(rk__actor_worker_t *worker, void *dst,
                                     size_t size);

rk_status_t rk__cpu_stream_create(rk_context_t *context, rk_stream_t **out);
rk_status_t rk__cpu_stream_destroy(rk_stream_t *stream);
rk_status_t rk__cpu_stream_synchronize(rk_stream_t *stream);
/* Queue a copy / launch; the stream takes ownership of `args`. */
rk_status_t rk__cpu_stream_copy(rk_stream_t *stream, const rk__copy_t *copy);
rk_status_t rk__cpu_stream_launch(rk_stream_t *stream,
                                  const cpu_launch_t *launch, rk__args_t *args);

#endif /* RK_BACKENDS_CPU_CPU_H_ */
