/* The actor layer's view of a context (actor_hal.h). */
#include "hal/actor_hal.h"

#include "base/error.h"

bool rk__hal_actor_resident(const rk_context_t *context) {
  return context->vt->actor_start &&
         (context->info.caps & RK_CAP_PERSISTENT_KERNELS);
}

bool rk__hal_actor_polled(const rk_context_t *context) {
  return context->vt->actor_polled;
}

bool rk__hal_launch_on_caller(const rk_context_t *context) {
  return context->vt->launch_on_caller;
}

uint32_t rk__hal_loop_limit(const rk_context_t *context) {
  return context->loop_limit;
}

bool rk__hal_has_mapped_memory(const rk_context_t *context) {
  return context->vt->mapped_alloc != NULL;
}

rk_status_t rk__hal_mapped_alloc(rk_context_t *context, size_t bytes,
                                 void **out_host) {
  if (!context->vt->mapped_alloc)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "%s: no memory mapped for both host and device",
                    context->info.name);
  return context->vt->mapped_alloc(context, bytes, out_host);
}

void rk__hal_mapped_free(rk_context_t *context, void *host) {
  if (context->vt->mapped_free) context->vt->mapped_free(context, host);
}

rk_status_t rk__hal_actor_start(rk_context_t *context,
                                const rk__actor_device_t *device,
                                rk__actor_worker_t **out_worker) {
  if (!context->vt->actor_start)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "%s: this backend cannot keep a handler resident",
                    context->info.name);
  return context->vt->actor_start(context, device, out_worker);
}

void rk__hal_actor_release(rk_context_t *context, rk__actor_worker_t *worker,
                           bool stopped) {
  context->vt->actor_release(worker, stopped);
}

bool rk__hal_actor_can_read_state(const rk_context_t *context) {
  return context->vt->actor_read_state != NULL;
}

rk_status_t rk__hal_actor_read_state(rk_context_t *context,
                                     rk__actor_worker_t *worker, void *dst,
                                     size_t size) {
  if (!context->vt->actor_read_state)
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "%s: a resident actor's state cannot be read back",
                    context->vt->name);
  return context->vt->actor_read_state(worker, dst, size);
}
