/* Internal hooks of the actor layer, for tests that play the device side
 * themselves (to deliver responses out of order, for instance). */
#ifndef RK_ACTOR_ACTOR_INTERNAL_H_
#define RK_ACTOR_ACTOR_INTERNAL_H_

#include "hal/actor_hal.h"
#include "rk/actor.h"

/* Launches a persistent-mode actor without starting a device side: the
 * caller consumes requests from device->in and produces responses into
 * device->out following the ABI, and sets control->terminated when asked
 * to terminate. *out_device stays valid until the actor is destroyed. */
rk_status_t rk__actor_launch_external(rk_context_t *context, const char *source,
                                      const char *handler,
                                      const rk_actor_options_t *options,
                                      rk_actor_t **out_actor,
                                      const rk__actor_device_t **out_device);

/* ---- Clocks, supervision, registry (actor.c's "Supervision hooks") ---- */

/* The actor's control block (its device-side clock is control->clock):
 * for tests that move an actor's clock. */
rk_abi_control_t *rk__actor_control(rk_actor_t *actor);

#endif /* RK_ACTOR_ACTOR_INTERNAL_H_ */
