/* rk/registry.h - actors addressed by name.
 *
 *   rk_actor_register(tile, "halo/tile-3-4");
 *   rk_actor_t *a;
 *   if (rk_actor_lookup("halo/tile-3-4", &a) == RK_OK) rk_actor_send(a, ...);
 *
 * One registry per process: a name means the same actor to every thread and
 * every context of the process (names are how ports, tools and clusters
 * address actors: rk_cluster_export(c, NULL, name) in rk/cluster.h makes a
 * registered actor reachable from other processes; registering alone
 * does not).
 * An actor has at most one name; a name belongs to at most one actor.
 * rk_actor_destroy unregisters the actor.
 *
 * Names: 1 to RK_ACTOR_NAME_MAX bytes of letters, digits and "_ - . : /",
 * starting with a letter or a digit. Anything else is
 * RK_ERR_INVALID_ARGUMENT, with the reason.
 *
 * Thread safety: all functions may be called from any thread at once. The
 * registry does not keep actors alive: a pointer that rk_actor_lookup
 * returned is as valid as the actor, and using it after another thread
 * destroyed the actor is a use after free, as for any handle.
 */
#ifndef RK_REGISTRY_H_
#define RK_REGISTRY_H_

#include <stddef.h>

#include "rk/actor.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RK_ACTOR_NAME_MAX 63

/* Gives `actor` the name `name` (copied). RK_OK also when the actor already
 * has this very name. RK_ERR_ALREADY_EXISTS when the name belongs to
 * another actor, or this actor already has another name (unregister it
 * first); RK_ERR_INVALID_ARGUMENT for a NULL actor or a bad name. */
rk_status_t rk_actor_register(rk_actor_t *actor, const char *name);

/* Takes the actor's name away. RK_ERR_NOT_FOUND when it has none. */
rk_status_t rk_actor_unregister(rk_actor_t *actor);

/* The actor registered as `name`. RK_ERR_NOT_FOUND ("no actor is
 * registered as 'x'"), RK_ERR_INVALID_ARGUMENT for a bad name or a NULL
 * out_actor. *out_actor is set only on success. */
rk_status_t rk_actor_lookup(const char *name, rk_actor_t **out_actor);

/* Copies the actor's name, NUL-terminated, into `buf` (`capacity` bytes;
 * RK_ACTOR_NAME_MAX + 1 always suffice). RK_ERR_NOT_FOUND when it has none,
 * RK_ERR_OUT_OF_RANGE when `capacity` is too small. */
rk_status_t rk_actor_name(const rk_actor_t *actor, char *buf, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* RK_REGISTRY_H_ */
