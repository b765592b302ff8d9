/* Remote actors as rk_actor_t (rk_cluster_lookup_actor, rk/cluster.h).
 *
 * A proxy is an rk_actor_t that owns a remote handle. The actor layer's
 * entry points ask rk__actor_remote first and send a proxy here: send,
 * receive, call and their batches go to the handle; state, stats and
 * name come from it; a link (rk_actor_link) or a port (rk_actor_connect)
 * to it goes through the cluster; destroy releases the handle. What only
 * the owning process can do (activate, supervise, wire the remote actor's
 * own ports...) is refused with RK_ERR_UNIMPLEMENTED, naming the actor,
 * its member and what to do instead.
 *
 * Built with or without UCX: without it no lookup succeeds, so no proxy
 * exists.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "actor/actor_internal.h"
#include "base/error.h"
#include "base/sys.h"
#include "cluster/cluster_internal.h"
#include "rk/cluster.h"

static rk_remote_actor_t *handle(const rk_actor_t *a) {
  return rk__actor_remote(a);
}

/* Every entry point that may block is counted while it runs (rk_actor_t's
 * `waiting`), so that destroy frees nothing under a thread still in it. */
static void enter(rk_actor_t *a) {
  __atomic_fetch_add(rk__actor_proxy_users(a), 1u, __ATOMIC_SEQ_CST);
}
static rk_status_t leave(rk_actor_t *a, rk_status_t s) {
  __atomic_fetch_sub(rk__actor_proxy_users(a), 1u, __ATOMIC_RELEASE);
  return s;
}

rk_status_t rk_cluster_lookup_actor(rk_cluster_t *cluster, const char *name,
                                    uint64_t timeout_ns,
                                    rk_actor_t **out_actor) {
  if (!out_actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cluster_lookup_actor: out_actor is NULL");
  rk_remote_actor_t *h = NULL;
  RK_RETURN_IF_ERROR(rk_cluster_lookup(cluster, name, timeout_ns, &h));
  rk_actor_t *a = NULL;
  const rk_status_t s = rk__actor_proxy_new(h, &a);
  if (s != RK_OK) {
    rk_remote_actor_release(h);
    return s;
  }
  rk__remote_actor_set_proxy(h, a);
  *out_actor = a;
  return RK_OK;
}

rk_remote_actor_t *rk_actor_remote(const rk_actor_t *actor) {
  return rk__actor_remote(actor);
}

/* What to do instead, per refused entry point. */
static const char *instead(const char *what) {
  static const struct {
    const char *what, *why;
  } k[] = {
      {"actor_activate", "only its own process changes its state"},
      {"actor_deactivate", "only its own process changes its state"},
      {"actor_terminate",
       "only its own process changes its state (rk_actor_destroy releases "
       "this proxy)"},
      {"actor_receive_lend",
       "its responses arrive as copies in this process: use "
       "rk_actor_receive_batch"},
      {"actor_register", "its name is the one it is exported as"},
      {"actor_unregister", "its name is the one it is exported as"},
      {"supervisor_add",
       "it is supervised in its own process (rk_actor_link ties a local "
       "actor to it)"},
      {"actor_supervise",
       "it is supervised in its own process (rk_actor_link ties a local "
       "actor to it)"},
      {"actor_link", "two remote actors are linked in their own processes"},
      {"actor_port", "its ports are its own process's"},
      {"actor_k2k_stats", "its K2K counters are its own process's"},
      {"actor_connect", "its own ports are wired in its own process"},
      {"cluster_connect", "its own ports are wired in its own process"},
      {"actor_disconnect",
       "a port wired to a remote actor stays wired while the proxy lives "
       "(rk_actor_destroy of the proxy unwires it)"},
      {"cluster_export", "its own process exports it"},
      {"cluster_link",
       "link a local actor to it with rk_actor_link or to its handle with "
       "rk_cluster_link"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (strcmp(k[i].what, what) == 0) return k[i].why;
  return "not for a remote actor";
}

rk_status_t rk__proxy_refuse(const rk_actor_t *actor, const char *what) {
  const char *peer = "";
  rk_remote_actor_info(handle(actor), NULL, NULL, NULL, &peer);
  return rk__fail(RK_ERR_UNIMPLEMENTED,
                  "%s: '%s' is a remote actor (member '%s'): %s", what,
                  rk__remote_actor_name(handle(actor)), peer, instead(what));
}

rk_status_t rk__proxy_send(rk_actor_t *actor, const void *request, size_t size,
                           uint64_t timeout_ns, uint64_t *out_correlation_id) {
  if (!request)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_send: actor and request are required");
  enter(actor);
  return leave(actor, rk_remote_actor_send(handle(actor), request, size,
                                           timeout_ns, out_correlation_id));
}

rk_status_t rk__proxy_receive(rk_actor_t *actor, void *response,
                              size_t capacity, uint64_t timeout_ns,
                              rk_actor_message_t *out_info) {
  if (!response)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_receive: the response buffer is NULL");
  enter(actor);
  return leave(actor, rk_remote_actor_receive(handle(actor), response, capacity,
                                              timeout_ns, out_info));
}

rk_status_t rk__proxy_call(rk_actor_t *actor, const void *request,
                           size_t request_size, void *response, size_t capacity,
                           uint64_t timeout_ns, rk_actor_message_t *out_info) {
  if (!request || !response)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_call: actor, request and response are required");
  enter(actor);
  return leave(actor,
               rk_remote_actor_call(handle(actor), request, request_size,
                                    response, capacity, timeout_ns, out_info));
}

rk_status_t rk__proxy_send_batch(rk_actor_t *actor, const void *requests,
                                 size_t size, size_t count, uint64_t timeout_ns,
                                 size_t *out_sent, uint64_t *out_first_id) {
  size_t sent = 0;
  enter(actor);
  const rk_status_t s = rk__remote_actor_send_batch(
      handle(actor), requests, size, count, timeout_ns, &sent, out_first_id);
  if (out_sent) *out_sent = sent;
  return leave(actor, s);
}

/* One receive into `response`: true when an answer was taken (whatever
 * its status, which *info carries), false when none was (*s says why). */
static bool take_one(rk_remote_actor_t *h, void *response, size_t capacity,
                     uint64_t timeout_ns, rk_actor_message_t *info,
                     rk_status_t *s) {
  memset(info, 0, sizeof *info);
  *s = rk_remote_actor_receive(h, response, capacity, timeout_ns, info);
  /* Correlation ids start at 1: an answer fills it in, a wait that ends
   * without one leaves it 0. */
  return *s == RK_OK || info->correlation_id != 0;
}

rk_status_t rk__proxy_receive_batch(rk_actor_t *actor, void *responses,
                                    size_t capacity, size_t max,
                                    uint64_t timeout_ns,
                                    rk_actor_message_t *out_infos,
                                    size_t *out_count) {
  rk_remote_actor_t *h = handle(actor);
  size_t rsize = 0;
  rk_remote_actor_info(h, NULL, &rsize, NULL, NULL);
  if (!responses || capacity / max < rsize)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_receive_batch: %zu bytes cannot hold %zu responses "
                    "of %zu bytes",
                    responses ? capacity : 0, max, rsize);
  unsigned char *out = responses;
  rk_status_t s;
  enter(actor);
  /* The first waits; the rest are what is there already. */
  if (!take_one(h, out, rsize, timeout_ns, &out_infos[0], &s))
    return leave(actor, s);
  size_t n = 1;
  while (n < max && take_one(h, out + n * rsize, rsize, 0, &out_infos[n], &s))
    ++n;
  *out_count = n;
  return leave(actor, RK_OK);
}

rk_actor_state_t rk__proxy_state(const rk_actor_t *actor) {
  return rk_remote_actor_state(handle(actor));
}

rk_status_t rk__proxy_stats(rk_actor_t *actor, rk_actor_stats_t *out_stats) {
  rk_remote_actor_t *h = handle(actor);
  rk_actor_stats_t st;
  memset(&st, 0, sizeof st);
  st.state = rk_remote_actor_state(h);
  st.mode = RK_ACTOR_PERSISTENT;
  st.execution = RK_ACTOR_EXEC_REMOTE;
  uint32_t window = 0;
  rk_remote_actor_info(h, &st.request_size, &st.response_size, &window, NULL);
  st.input_capacity = window;
  uint64_t waiting = 0;
  rk__remote_actor_counts(h, &st.sent, &st.dropped_sends, &waiting);
  st.output_depth = waiting;
  *out_stats = st;
  return RK_OK;
}

rk_status_t rk__proxy_name(const rk_actor_t *actor, char *buf,
                           size_t capacity) {
  const char *name = rk__remote_actor_name(handle(actor));
  const size_t n = strlen(name);
  if (n >= capacity)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "actor_name: '%s' needs %zu bytes; %zu given", name, n + 1,
                    capacity);
  memcpy(buf, name, n + 1);
  return RK_OK;
}

void rk__proxy_destroy(rk_actor_t *actor) {
  /* As rk_actor_destroy of a local actor: threads blocked on it wake
   * (RK_ERR_INVALID_STATE) and have left before anything is freed. */
  rk_remote_actor_t *h = handle(actor);
  rk__remote_actor_close(h, "its proxy was destroyed");
  const uint32_t *users = rk__actor_proxy_users(actor);
  for (unsigned k = 0; __atomic_load_n(users, __ATOMIC_ACQUIRE) != 0; ++k) {
    if (k % 64 == 63)
      sched_yield();
    else
      rk__cpu_relax();
  }
  rk_remote_actor_release(h);
  rk__actor_proxy_free(actor);
}
