/* The process-wide actor registry (rk/registry.h): a table of (name, actor)
 * pairs under one lock. Lookups scan it; a process names tens or hundreds
 * of actors, and a lookup is not on the message path (resolve a name once,
 * keep the handle). */
#include "rk/registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor_internal.h"
#include "base/error.h"

typedef struct entry {
  char name[RK_ACTOR_NAME_MAX + 1];
  rk_actor_t *actor;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *g_entries;
static size_t g_count, g_cap;

static bool name_char(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9'))
    return true;
  return !first && (c == '_' || c == '-' || c == '.' || c == ':' || c == '/');
}

static rk_status_t check_name(const char *what, const char *name) {
  if (!name) return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: name is NULL", what);
  const size_t n = strnlen(name, RK_ACTOR_NAME_MAX + 1);
  if (n == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: the name is empty", what);
  if (n > RK_ACTOR_NAME_MAX)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "%s: the name '%.*s...' is longer than %d bytes", what, 20,
                    name, RK_ACTOR_NAME_MAX);
  for (size_t i = 0; i < n; ++i)
    if (!name_char(name[i], i == 0))
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "%s: '%s': byte %zu (0x%02x) is not allowed (names are "
                      "letters, digits and _ - . : /, starting with a letter "
                      "or digit)",
                      what, name, i, (unsigned)(unsigned char)name[i]);
  return RK_OK;
}

/* Caller holds g_lock. */
static entry_t *by_name(const char *name) {
  for (size_t i = 0; i < g_count; ++i)
    if (strcmp(g_entries[i].name, name) == 0) return &g_entries[i];
  return NULL;
}

/* Caller holds g_lock. */
static entry_t *by_actor(const rk_actor_t *actor) {
  for (size_t i = 0; i < g_count; ++i)
    if (g_entries[i].actor == actor) return &g_entries[i];
  return NULL;
}

/* Caller holds g_lock. */
static void remove_entry(entry_t *e) {
  *e = g_entries[--g_count];
  if (g_count == 0) {
    free(g_entries);
    g_entries = NULL;
    g_cap = 0;
  }
}

rk_status_t rk_actor_register(rk_actor_t *actor, const char *name) {
  if (!actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor_register: actor is NULL");
  if (rk__actor_remote(actor)) return rk__proxy_refuse(actor, "actor_register");
  RK_RETURN_IF_ERROR(check_name("actor_register", name));
  rk_status_t s = RK_OK;
  pthread_mutex_lock(&g_lock);
  entry_t *named = by_name(name), *mine = by_actor(actor);
  if (named && named->actor == actor) {
    /* Already so: nothing to do. */
  } else if (named) {
    s = rk__fail(RK_ERR_ALREADY_EXISTS,
                 "actor_register: the name '%s' belongs to another actor",
                 name);
  } else if (mine) {
    s = rk__fail(RK_ERR_ALREADY_EXISTS,
                 "actor_register: the actor is already registered as '%s' "
                 "(one name per actor; rk_actor_unregister first)",
                 mine->name);
  } else {
    if (g_count == g_cap) {
      const size_t cap = g_cap ? g_cap * 2 : 16;
      entry_t *grown = realloc(g_entries, cap * sizeof *grown);
      if (!grown) {
        pthread_mutex_unlock(&g_lock);
        return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_register");
      }
      g_entries = grown;
      g_cap = cap;
    }
    entry_t *e = &g_entries[g_count++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->actor = actor;
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

rk_status_t rk_actor_unregister(rk_actor_t *actor) {
  if (!actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor_unregister: actor is NULL");
  if (rk__actor_remote(actor))
    return rk__proxy_refuse(actor, "actor_unregister");
  pthread_mutex_lock(&g_lock);
  entry_t *e = by_actor(actor);
  if (e) remove_entry(e);
  pthread_mutex_unlock(&g_lock);
  if (!e)
    return rk__fail(RK_ERR_NOT_FOUND,
                    "actor_unregister: the actor has no name");
  return RK_OK;
}

rk_status_t rk_actor_lookup(const char *name, rk_actor_t **out_actor) {
  if (!out_actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "actor_lookup: out_actor is NULL");
  RK_RETURN_IF_ERROR(check_name("actor_lookup", name));
  pthread_mutex_lock(&g_lock);
  const entry_t *e = by_name(name);
  rk_actor_t *a = e ? e->actor : NULL;
  pthread_mutex_unlock(&g_lock);
  if (!a)
    return rk__fail(RK_ERR_NOT_FOUND,
                    "actor_lookup: no actor is registered as '%s'", name);
  *out_actor = a;
  return RK_OK;
}

rk_status_t rk_actor_name(const rk_actor_t *actor, char *buf, size_t capacity) {
  if (!actor || !buf)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_name: actor and buf are required");
  if (rk__actor_remote(actor)) return rk__proxy_name(actor, buf, capacity);
  rk_status_t s = RK_OK;
  pthread_mutex_lock(&g_lock);
  const entry_t *e = by_actor(actor);
  if (!e)
    s = rk__fail(RK_ERR_NOT_FOUND, "actor_name: the actor has no name");
  else if (strlen(e->name) >= capacity)
    s = rk__fail(RK_ERR_OUT_OF_RANGE,
                 "actor_name: '%s' needs %zu bytes; %zu given", e->name,
                 strlen(e->name) + 1, capacity);
  else
    memcpy(buf, e->name, strlen(e->name) + 1);
  pthread_mutex_unlock(&g_lock);
  return s;
}

void rk__registry_forget(const rk_actor_t *actor) {
  pthread_mutex_lock(&g_lock);
  entry_t *e = by_actor(actor);
  if (e) remove_entry(e);
  pthread_mutex_unlock(&g_lock);
}

bool rk__registry_describe(const rk_actor_t *actor, char *buf, size_t cap) {
  pthread_mutex_lock(&g_lock);
  const entry_t *e = by_actor(actor);
  if (e)
    snprintf(buf, cap, "'%s'", e->name);
  else
    snprintf(buf, cap, "%p", (const void *)actor);
  pthread_mutex_unlock(&g_lock);
  return e != NULL;
}

/* ---- Destroy hooks --------------------------------------------------------
 * Run under a read lock, so that a hook's owner that removes it (a cluster
 * being destroyed) waits for every running call to return. */

typedef struct hook {
  rk__actor_destroy_hook_fn fn;
  void *user;
} hook_t;

static pthread_rwlock_t g_hooks_lock = PTHREAD_RWLOCK_INITIALIZER;
static hook_t *g_hooks;
static size_t g_nhooks;

rk_status_t rk__actor_destroy_hook_add(rk__actor_destroy_hook_fn fn,
                                       void *user) {
  pthread_rwlock_wrlock(&g_hooks_lock);
  hook_t *grown = realloc(g_hooks, (g_nhooks + 1) * sizeof *grown);
  if (grown) {
    g_hooks = grown;
    g_hooks[g_nhooks++] = (hook_t){fn, user};
  }
  pthread_rwlock_unlock(&g_hooks_lock);
  return grown ? RK_OK : rk__fail(RK_ERR_OUT_OF_MEMORY, "destroy hook");
}

void rk__actor_destroy_hook_remove(rk__actor_destroy_hook_fn fn, void *user) {
  pthread_rwlock_wrlock(&g_hooks_lock);
  for (size_t i = 0; i < g_nhooks; ++i)
    if (g_hooks[i].fn == fn && g_hooks[i].user == user) {
      g_hooks[i] = g_hooks[--g_nhooks];
      break;
    }
  if (g_nhooks == 0) {
    free(g_hooks);
    g_hooks = NULL;
  }
  pthread_rwlock_unlock(&g_hooks_lock);
}

void rk__actor_destroy_hooks_run(rk_actor_t *actor) {
  pthread_rwlock_rdlock(&g_hooks_lock);
  for (size_t i = 0; i < g_nhooks; ++i) g_hooks[i].fn(actor, g_hooks[i].user);
  pthread_rwlock_unlock(&g_hooks_lock);
}
