/* The backend interface behind the public API.
 *
 * Each backend provides one `static const rk__backend_vtable_t` and is listed
 * once in hal/backends.def. Backend objects embed the base structs below as
 * their first member. The public functions in hal/api.c validate what can be
 * checked generically (NULLs, argument count and kinds, launch dimensions)
 * and keep ownership lists, then dispatch here.
 */
#ifndef RK_HAL_HAL_H_
#define RK_HAL_HAL_H_

#include <pthread.h>

#include "abi/actor_abi.h"
#include "rk/backend.h"

typedef struct rk__backend_vtable rk__backend_vtable_t;

struct rk_backend {
  const rk__backend_vtable_t *vt;
  int device_count;
  int live_contexts; /* atomic */
  /* The vendor library and its versions, set by `open` ("" if none); see
   * rk_backend_library. */
  char library[1024];
};

struct rk_context {
  const rk__backend_vtable_t *vt;
  rk_backend_t *backend;
  int device;
  rk_device_info_t info;
  /* Loop iterations one invocation may run in total before the device
   * stops its loops without saying so (Mesa's llvmpipe: 65535); 0 where
   * no such limit is known. Set by the backend. */
  uint32_t loop_limit;
  pthread_mutex_t lock; /* guards the lists below */
  rk_module_t *modules;
  rk_stream_t *streams;
  /* Atomic: device sides of destroyed actors still running a handler on
   * this context (rk__context_hold); rk_context_destroy refuses while any
   * is left, since their code, streams and buffers belong to it. */
  uint32_t holds;
};

/* A thread that outlives its actor (a handler that has not returned by the
 * time the actor is destroyed) keeps the context alive until it leaves. */
void rk__context_hold(rk_context_t *context);
void rk__context_unhold(rk_context_t *context);

/* A kernel parameter as declared in the source. */
typedef struct rk__param {
  rk_arg_kind_t kind;
  size_t size;
  char name[64];
} rk__param_t;

struct rk_function {
  rk_module_t *module;
  const char *name;
  size_t nparams;
  const rk__param_t *params;
  /* The most threads a block of this kernel may have (its registers or the
   * driver may allow fewer than the device); 0: the device's limit. Set by
   * the backend. */
  uint32_t max_threads;
};

struct rk_module {
  rk_context_t *context;
  rk_module_t *next;
  size_t nfunctions;
  rk_function_t *functions; /* owned by the backend's module */
  bool cache_hit;
};

struct rk_stream {
  rk_context_t *context;
  rk_stream_t *next;
  uint32_t id; /* 1, 2, ... in creation order, per process (traces) */
};

/* Launch arguments checked against the function's parameters and copied
 * into one heap block (header, pointers, values): values[i] points at
 * argument i's bytes. */
typedef struct rk__args {
  size_t count;
  void **values;
  unsigned char *storage;
} rk__args_t;

typedef enum rk__copy_dir {
  RK__COPY_TO_DEVICE,
  RK__COPY_TO_HOST,
  RK__COPY_DEVICE_TO_DEVICE,
} rk__copy_dir_t;

typedef struct rk__copy {
  rk__copy_dir_t dir;
  void *host;           /* source (TO_DEVICE) or destination (TO_HOST) */
  rk_devptr_t dst, src; /* device side(s) */
  size_t n;
} rk__copy_t;

/* The device side of a persistent actor as the actor layer hands it to a
 * backend: the handler kernel, the rings and control block (in memory the
 * device can reach, see mapped_alloc) and the initial state. */
typedef struct rk__actor_device {
  rk_function_t *function; /* (in, out[, state][, int32_t *status]) */
  rk_abi_control_t *control;
  rk_abi_ring_t *in, *out;
  void *in_slots, *out_slots;
  bool has_state, has_status;
  const void *initial_state; /* state_size bytes (control->state_size) */
  rk_dim3_t grid, block;
  /* For a device side that is a host thread: the host threads in calls or
   * waiting on the actor (atomic; NULL: unknown) and the CPUs allowed. It
   * spins only while they and itself fit on the CPUs (rk__actor_may_spin). */
  const uint32_t *host_busy;
  uint32_t cpus;
  /* The CPU to pin that thread to, or RK_ACTOR_CPU_ANY (the backend's
   * choice). */
  int cpu;
  /* Nonzero (atomic; NULL: never): park as soon as the input ring is empty
   * instead of spinning (rk__actor_park_when_idle). */
  const uint32_t *park_idle;
  /* Idle work on offer to a device side that is a host thread
   * (rk__actor_offer_idle_work; hal/actor_loop.h); NULL: none. */
  struct rk__idle_slot *idle;
  /* Messages to and from other actors (actor/k2k_internal.h); NULL for an
   * actor that has none yet. */
  struct rk__k2k *k2k;
  /* A resident kernel that polls (GPU): its K2K wiring and counters, in
   * the same mapped block as `control` (abi/actor_abi.h's rk_abi_k2k_t),
   * and the bytes of device memory its ports and inbox scratch need
   * (rk_k2k_mem). NULL and 0 otherwise. */
  rk_abi_k2k_t *k2k_table;
  size_t k2k_mem_bytes;
} rk__actor_device_t;

/* A backend's resident actor (its worker thread or persistent kernel). */
typedef struct rk__actor_worker rk__actor_worker_t;

struct rk__backend_vtable {
  /* Releases a backend opened by `open`. */
  void (*destroy)(rk_backend_t *backend);
  rk_backend_kind_t kind;
  const char *name;
  /* Loads the backend's libraries and finds devices. RK_ERR_UNAVAILABLE with
   * the reason when it cannot. A backend with no devices may still open
   * (device_count 0). */
  rk_status_t (*open)(rk_backend_t **out_backend);
  rk_status_t (*device_info)(const rk_backend_t *backend, int device,
                             rk_device_info_t *out_info);
  /* Allocates the backend's context; api.c fills in the base fields. */
  rk_status_t (*context_create)(rk_backend_t *backend, int device,
                                rk_context_t **out_context);
  /* Streams and modules are already destroyed when this is called. Returns
   * the first unreported asynchronous error. */
  rk_status_t (*context_destroy)(rk_context_t *context);
  rk_status_t (*allocate)(rk_context_t *context, size_t bytes,
                          rk_devptr_t *out_ptr);
  rk_status_t (*free)(rk_context_t *context, rk_devptr_t ptr);
  /* Checks that [ptr, ptr+n) lies in one live allocation (n may be 0: ptr
   * inside an allocation). */
  rk_status_t (*check_range)(rk_context_t *context, rk_devptr_t ptr, size_t n);
  /* A copy on `stream` (NULL: the default stream, done before returning). */
  rk_status_t (*copy)(rk_context_t *context, rk_stream_t *stream,
                      const rk__copy_t *copy);
  rk_status_t (*synchronize)(rk_context_t *context);
  /* Builds a module; sets functions/nfunctions and cache_hit. */
  rk_status_t (*compile)(rk_context_t *context, const char *source,
                         const rk_compile_options_t *options,
                         rk_module_t **out_module);
  void (*module_destroy)(rk_module_t *module);
  /* Takes ownership of `args` (release with rk__args_free). */
  rk_status_t (*launch)(rk_function_t *function, rk_dim3_t grid,
                        rk_dim3_t block, size_t shared_mem, rk_stream_t *stream,
                        rk__args_t *args);
  rk_status_t (*stream_create)(rk_context_t *context, rk_stream_t **out);
  /* Finishes queued work first; returns the stream's unreported error. */
  rk_status_t (*stream_destroy)(rk_stream_t *stream);
  rk_status_t (*stream_synchronize)(rk_stream_t *stream);
  /* Optional (NULL: none): C = A B with the vendor's BLAS (row-major f32;
   * A m x k, B k x n, C m x n, each at most INT_MAX elements), queued on
   * the default stream. RK_ERR_UNAVAILABLE, with the reason, when the
   * library cannot run it now: the caller runs its own kernel. `library`
   * (cap bytes) gets the library's name. */
  rk_status_t (*blas_sgemm)(rk_context_t *context, size_t m, size_t n, size_t k,
                            rk_devptr_t a, rk_devptr_t b, rk_devptr_t c,
                            char *library, size_t cap);

  /* ---- Persistent actors (optional: NULL when the backend cannot keep a
   * handler resident; the actor layer then refuses persistent mode). */
  /* Starts the device side, which runs until control->terminate is set and
   * then sets control->terminated. The descriptor's memory outlives the
   * worker; the backend keeps its own copy of the state. */
  rk_status_t (*actor_start)(rk_context_t *context,
                             const rk__actor_device_t *device,
                             rk__actor_worker_t **out_worker);
  /* Releases a worker. `stopped`: control->terminated was seen, so the
   * worker is joined and freed. Otherwise (a handler that never returned)
   * the worker is abandoned: it frees its own resources if it ever stops,
   * and the caller must keep the descriptor's memory and the module. */
  void (*actor_release)(rk__actor_worker_t *worker, bool stopped);
  /* Optional (NULL: cannot): copies the handler state of a worker whose
   * device side has stopped (control->terminated) into `dst` (`size`
   * bytes, control->state_size), for a supervisor's restart with the
   * last-known state. */
  rk_status_t (*actor_read_state)(rk__actor_worker_t *worker, void *dst,
                                  size_t size);
  /* Optional: memory for rings and control blocks that both the host and
   * the device address directly (pinned and mapped). NULL: ordinary host
   * memory, for backends whose devices read it as is. */
  /* True when the device side cannot wake a parked host thread (a GPU
   * kernel): host waits on a resident actor then poll its rings. */
  bool actor_polled;
  /* True when a launch on the default stream runs on the calling thread
   * before rk_function_launch returns (the CPU backend). */
  bool launch_on_caller;
  rk_status_t (*mapped_alloc)(rk_context_t *context, size_t bytes,
                              void **out_host);
  void (*mapped_free)(rk_context_t *context, void *host);
};

/* Unlinks a module from its context without unloading it, for code that
 * must stay mapped after the context is gone (an abandoned actor's
 * handler). The module is never destroyed afterwards. */
void rk__module_abandon(rk_module_t *module);

void rk__args_free(rk__args_t *args);

/* The registered backends in auto-selection order. */
const rk__backend_vtable_t *const *rk__backend_registry(size_t *out_count);

#endif /* RK_HAL_HAL_H_ */
