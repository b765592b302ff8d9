/* What the actor layer needs from a context beyond the public API: whether
 * and how a handler can stay resident, memory both sides address, and the
 * resident worker's lifetime. The actor layer uses only these (never the
 * backend vtable), so a backend's actor support is this one surface. */
#ifndef RK_HAL_ACTOR_HAL_H_
#define RK_HAL_ACTOR_HAL_H_

#include <stdbool.h>
#include <stddef.h>

#include "hal/hal.h"

/* The context's device can keep a handler resident (a worker thread or a
 * persistent kernel): RK_CAP_PERSISTENT_KERNELS and a backend that starts
 * one. */
bool rk__hal_actor_resident(const rk_context_t *context);

/* The resident side cannot wake a parked host thread (a GPU kernel): host
 * waits on it poll the rings. */
bool rk__hal_actor_polled(const rk_context_t *context);

/* Launches on the default stream run on the calling thread before the
 * launch returns (the CPU backend), so a traditional step needs no stream
 * of its own. */
bool rk__hal_launch_on_caller(const rk_context_t *context);

/* Loop iterations one invocation may run in all before the device cuts
 * its loops short without an error (rk_context_t.loop_limit); 0: none. */
uint32_t rk__hal_loop_limit(const rk_context_t *context);

/* Memory both the host and the device address (pinned and mapped) exists
 * on this context; without it rings live in ordinary host memory. */
bool rk__hal_has_mapped_memory(const rk_context_t *context);
rk_status_t rk__hal_mapped_alloc(rk_context_t *context, size_t bytes,
                                 void **out_host);
void rk__hal_mapped_free(rk_context_t *context, void *host);

/* Starts and releases the resident side (see the vtable's actor_start and
 * actor_release for the contract). */
rk_status_t rk__hal_actor_start(rk_context_t *context,
                                const rk__actor_device_t *device,
                                rk__actor_worker_t **out_worker);
void rk__hal_actor_release(rk_context_t *context, rk__actor_worker_t *worker,
                           bool stopped);

/* Whether the backend can read a stopped resident actor's state back, and
 * the read (see the vtable's actor_read_state). */
bool rk__hal_actor_can_read_state(const rk_context_t *context);
rk_status_t rk__hal_actor_read_state(rk_context_t *context,
                                     rk__actor_worker_t *worker, void *dst,
                                     size_t size);

#endif /* RK_HAL_ACTOR_HAL_H_ */
