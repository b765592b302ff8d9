/* rk/kernel.h - the kernel language as seen by a C compiler.
 *
 * Kernel sources are plain C11 that include this header:
 *
 *   #include <rk/kernel.h>
 *
 *   RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {
 *     int i = (int)rk_global_idx_x();
 *     if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *
 * On the CPU backend the runtime compiles the source with the system C
 * compiler and runs every block on a worker thread, every thread of a block
 * in turn. rk_sync_threads() is a real barrier there: a module that uses it
 * runs each thread of a block on its own fiber, switching at every barrier,
 * so data exchanged through RK_SHARED arrays across a barrier arrives as on a
 * GPU. docs/kernel-language.md and docs/cpu-backend.md describe the details.
 *
 * Everything named rk__* below is the private contract between a compiled CPU
 * module and the runtime; do not use it in kernels.
 */
#ifndef RK_KERNEL_H_
#define RK_KERNEL_H_

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Private CPU module ABI -------------------------------------------- */

#define RK__CPU_ABI_MAGIC 0x4b52504bu /* "KPRK" */
#define RK__CPU_ABI_VERSION 3u

/* Per-thread execution state of a kernel on the CPU. */
typedef struct rk__kstate {
  uint32_t tid[3];              /* thread index within the block */
  uint32_t bid[3];              /* block index within the grid */
  uint32_t bdim[3];             /* block dimensions */
  uint32_t gdim[3];             /* grid dimensions */
  void *dyn_shared;             /* dynamic block-shared memory */
  void (*barrier)(void *sched); /* NULL outside a runtime launch */
  void *sched;
} rk__kstate_t;

/* What a launch hands to a module: dimensions and the worker's barrier
 * hook and shared memory. */
typedef struct rk__klaunch {
  uint32_t grid[3];
  uint32_t block[3];
  void *dyn_shared;
  void (*barrier)(void *sched);
  void *sched;
  /* The calling thread's own kernel state (rk__kmodule_t.state, asked on
   * that thread), or NULL: a wrapper then looks it up (a call into the
   * dynamic linker for a thread-local variable of a loaded module). */
  rk__kstate_t *state;
} rk__klaunch_t;

typedef struct rk__kparam {
  const char *name;
  uint32_t kind; /* rk_arg_kind_t */
  uint32_t size;
} rk__kparam_t;

typedef struct rk__kentry {
  const char *name;
  uint32_t nparams;
  const rk__kparam_t *params;
  /* Runs blocks [first, end) (linear block ids), every thread in turn; for
   * modules without barriers. */
  void (*run_blocks)(const rk__klaunch_t *launch, uint64_t first, uint64_t end,
                     void *const *args);
  /* Runs one thread of one block up to its end; called on a fiber. */
  void (*run_thread)(const rk__klaunch_t *launch, const uint32_t bid[3],
                     const uint32_t tid[3], void *const *args);
  /* Handlers without barriers (NULL otherwise): runs the entry n times as
   * one thread of one block, pointer argument i advanced by stride[i]
   * bytes from one run to the next (an actor's messages in place). */
  void (*run_slots)(const rk__klaunch_t *launch, uint64_t n,
                    const uint32_t *stride, void *const *args);
} rk__kentry_t;

typedef struct rk__kmodule {
  uint32_t magic;   /* RK__CPU_ABI_MAGIC */
  uint32_t version; /* RK__CPU_ABI_VERSION */
  uint32_t uses_barrier;
  uint32_t nentries;
  const rk__kentry_t *entries;
  /* The calling thread's kernel state in this module: a thread that runs
   * the module's entries over and over (an actor's worker) asks once and
   * hands it back in each launch (rk__klaunch_t.state). */
  rk__kstate_t *(*state)(void);
} rk__kmodule_t;

#if defined(__GNUC__) || defined(__clang__)
#define RK__UNUSED __attribute__((unused))
#else
#define RK__UNUSED
#endif

static _Thread_local rk__kstate_t rk__k RK__UNUSED;

/* ---- Entry points and storage ------------------------------------------ */

#ifdef RK_CPU_MODULE
#define RK_KERNEL static
#else
#define RK_KERNEL
#endif

/* A block-shared array: RK_SHARED float tile[256]; (inside a kernel). */
#define RK_SHARED static _Thread_local

/* ---- Built-ins ---------------------------------------------------------- */

static inline RK__UNUSED uint32_t rk_thread_idx_x(void) { return rk__k.tid[0]; }
static inline RK__UNUSED uint32_t rk_thread_idx_y(void) { return rk__k.tid[1]; }
static inline RK__UNUSED uint32_t rk_thread_idx_z(void) { return rk__k.tid[2]; }
static inline RK__UNUSED uint32_t rk_block_idx_x(void) { return rk__k.bid[0]; }
static inline RK__UNUSED uint32_t rk_block_idx_y(void) { return rk__k.bid[1]; }
static inline RK__UNUSED uint32_t rk_block_idx_z(void) { return rk__k.bid[2]; }
static inline RK__UNUSED uint32_t rk_block_dim_x(void) { return rk__k.bdim[0]; }
static inline RK__UNUSED uint32_t rk_block_dim_y(void) { return rk__k.bdim[1]; }
static inline RK__UNUSED uint32_t rk_block_dim_z(void) { return rk__k.bdim[2]; }
static inline RK__UNUSED uint32_t rk_grid_dim_x(void) { return rk__k.gdim[0]; }
static inline RK__UNUSED uint32_t rk_grid_dim_y(void) { return rk__k.gdim[1]; }
static inline RK__UNUSED uint32_t rk_grid_dim_z(void) { return rk__k.gdim[2]; }

/* block index * block dimension + thread index, per axis. */
static inline RK__UNUSED uint32_t rk_global_idx_x(void) {
  return rk__k.bid[0] * rk__k.bdim[0] + rk__k.tid[0];
}
static inline RK__UNUSED uint32_t rk_global_idx_y(void) {
  return rk__k.bid[1] * rk__k.bdim[1] + rk__k.tid[1];
}
static inline RK__UNUSED uint32_t rk_global_idx_z(void) {
  return rk__k.bid[2] * rk__k.bdim[2] + rk__k.tid[2];
}

/* Dynamic block-shared memory (the launch's shared_mem bytes). */
static inline RK__UNUSED void *rk_dynamic_shared(void) {
  return rk__k.dyn_shared;
}

/* Block-wide barrier: every thread of the block reaches it before any
 * continues; block-shared and global writes before it are visible after. */
static inline RK__UNUSED void rk_sync_threads(void) {
  if (rk__k.barrier) {
    /* Other threads of the block run on this OS thread while this one waits
     * and overwrite the shared state; keep this thread's index. */
    uint32_t t0 = rk__k.tid[0], t1 = rk__k.tid[1], t2 = rk__k.tid[2];
    rk__k.barrier(rk__k.sched);
    rk__k.tid[0] = t0;
    rk__k.tid[1] = t1;
    rk__k.tid[2] = t2;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Orders this thread's memory accesses as seen by all other threads. */
static inline RK__UNUSED void rk_thread_fence(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* 32-bit atomics on global or block-shared memory; each returns the old
 * value. */
#define RK__ATOMIC_OPS(T, S)                                                  \
  static inline RK__UNUSED T rk_atomic_add_##S(T *p, T v) {                   \
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_sub_##S(T *p, T v) {                   \
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_and_##S(T *p, T v) {                   \
    return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_or_##S(T *p, T v) {                    \
    return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);                         \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_xor_##S(T *p, T v) {                   \
    return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_exch_##S(T *p, T v) {                  \
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);                       \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_cas_##S(T *p, T expected, T desired) { \
    __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_RELAXED,   \
                                __ATOMIC_RELAXED);                            \
    return expected;                                                          \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_min_##S(T *p, T v) {                   \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                             \
    while (v < old && !__atomic_compare_exchange_n(                           \
                          p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                       \
    return old;                                                               \
  }                                                                           \
  static inline RK__UNUSED T rk_atomic_max_##S(T *p, T v) {                   \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                             \
    while (v > old && !__atomic_compare_exchange_n(                           \
                          p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                       \
    return old;                                                               \
  }

RK__ATOMIC_OPS(int32_t, i32)
RK__ATOMIC_OPS(uint32_t, u32)
#undef RK__ATOMIC_OPS

/* ---- Stencils and actor handlers ---------------------------------------- */

/* The position of a stencil point, passed by value as a stencil's first
 * parameter: global coordinates, the linear index of the point
 * (idx = (z * ny + y) * nx + x) and the domain size (nz is 1 in 2D). */
typedef struct rk_grid_pos {
  int x, y, z;
  int idx;
  int nx, ny, nz;
} rk_grid_pos_t;

/* Entry-point markers. The transpiler turns a stencil into a kernel over
 * the interior points and a handler into a kernel that handles one message;
 * compiled directly as C they are plain functions (static in a CPU module,
 * like RK_KERNEL). */
#ifdef RK_CPU_MODULE
#define RK__ENTRY static RK__UNUSED
#else
#define RK__ENTRY
#endif
#define RK_STENCIL(tile_x, tile_y, halo) RK__ENTRY
#define RK_STENCIL3D(tile_x, tile_y, tile_z, halo) RK__ENTRY
#define RK_HANDLER RK__ENTRY

/* Neighbour reads of a stencil buffer (row-major, x fastest): north is
 * y - 1, south y + 1, west x - 1, east x + 1, down z - 1, up z + 1. */
#define rk_center(buf, p) ((buf)[(p).idx])
#define rk_west(buf, p) ((buf)[(p).idx - 1])
#define rk_east(buf, p) ((buf)[(p).idx + 1])
#define rk_north(buf, p) ((buf)[(p).idx - (p).nx])
#define rk_south(buf, p) ((buf)[(p).idx + (p).nx])
#define rk_down(buf, p) ((buf)[(p).idx - (p).nx * (p).ny])
#define rk_up(buf, p) ((buf)[(p).idx + (p).nx * (p).ny])
#define rk_at(buf, p, dx, dy) ((buf)[(p).idx + (dy) * (p).nx + (dx)])
#define rk_at3(buf, p, dx, dy, dz) \
  ((buf)[(p).idx + ((dz) * (p).ny + (dy)) * (p).nx + (dx)])

/* Sending to other actors from a handler: rk_send(port, &msg) and
 * rk_try_send(port, &msg) return 0 when the message was queued, 1 when the
 * port's channel has no room for it (nothing is queued; the handler decides
 * what to do), 2 when the port is not connected. The transpiler turns them
 * into writes to the handler's port buffers (docs/kernel-language.md,
 * "Sending to other actors"); a source compiled directly as C has no ports,
 * so there every send answers 2. */
#define rk_send(port, msg) ((void)(port), (void)(msg), 2)
#define rk_try_send(port, msg) ((void)(port), (void)(msg), 2)

#endif /* RK_KERNEL_H_ */
