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

/* For actor-to-actor messaging (k2k.c): the actor's K2K state, its
 * handler's name and its mode. */
struct rk__k2k *rk__actor_k2k(const rk_actor_t *actor);
const char *rk__actor_handler_name(const rk_actor_t *actor);
rk_actor_mode_t rk__actor_mode(const rk_actor_t *actor);

#endif /* RK_ACTOR_ACTOR_INTERNAL_H_ */
