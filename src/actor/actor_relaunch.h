/* Persistent actors on backends that cannot keep a kernel resident (WebGPU,
 * OpenCL, Metal): a host thread follows the input ring like a resident
 * kernel would and, for each batch of requests it finds, copies them to the
 * device, launches the handler's batch kernel (rk_batch_<handler>, which
 * runs the handler on every request of the batch in order) once, and copies
 * the responses back into the output ring. Only the public HAL API is used.
 */
#ifndef RK_ACTOR_ACTOR_RELAUNCH_H_
#define RK_ACTOR_ACTOR_RELAUNCH_H_

#include "hal/actor_hal.h"

typedef struct rk__relaunch rk__relaunch_t;

/* Starts the driver for `device` (its function is the batch kernel:
 * in, out[, state], status, count). Device buffers for up to
 * min(input capacity, RK_ACTOR_BATCH (default 256)) requests are allocated
 * here, and the state is copied to the device. The driver spins `spin_ns`
 * after its last request before it parks. */
rk_status_t rk__relaunch_start(rk_context_t *context,
                               const rk__actor_device_t *device,
                               uint64_t spin_ns, rk__relaunch_t **out);

/* Joins and frees a driver whose loop has stopped (control->terminated
 * seen), or, when `stopped` is false, leaves it to free itself when its
 * current launch returns. */
void rk__relaunch_release(rk__relaunch_t *r, bool stopped);

/* A caller that will wait for its own response can run its batch itself
 * and save the two thread hand-offs: rk__relaunch_hold() takes the role of
 * the device side if the driver is not running a batch and has not
 * stopped (false otherwise: nobody consumes requests once `terminated` is
 * set); then, after sending (without waking the driver:
 * rk__ring_mp_send_quiet), rk__relaunch_run_held() runs the waiting requests
 * (one batch), gives the role back and wakes the driver if requests are left.
 */
bool rk__relaunch_hold(rk__relaunch_t *r);
/* Waits for the role of the device side and keeps it (no batch runs) until
 * rk__relaunch_unlock: for rewiring a deactivated actor. */
void rk__relaunch_lock(rk__relaunch_t *r);
void rk__relaunch_unlock(rk__relaunch_t *r);
void rk__relaunch_run_held(rk__relaunch_t *r);

/* Restarts a driver whose loop has stopped (control->terminated, after
 * RK_ABI_TERMINATE_NOW): joins its thread, replaces its stream and device
 * buffers, sets the state -- read back from the old buffer when
 * `last_known`, else `fresh_state` (NULL: zeroes) -- clears `terminated`
 * and starts a new driver thread on the same rings. On an error the
 * driver stays stopped. */
rk_status_t rk__relaunch_restart(rk__relaunch_t *r, const void *fresh_state,
                                 bool last_known);

/* Batches that failed (launch or copy) and the latest one's status. */
void rk__relaunch_faults(const rk__relaunch_t *r, uint64_t *out_faults,
                         int32_t *out_last);

/* Tests: the next batch fails with `status` without running. */
void rk__relaunch_inject_fault(rk__relaunch_t *r, rk_status_t status);

/* Batches launched and requests per batch so far. */
void rk__relaunch_counts(const rk__relaunch_t *r, uint64_t *out_batches,
                         uint64_t *out_requests);

#endif /* RK_ACTOR_ACTOR_RELAUNCH_H_ */
