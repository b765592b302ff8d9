/* rk/cluster.h where rk was built without UCX's headers: every entry point
 * says so. (With the headers, cluster.c; UCX itself is loaded at run
 * time.) */
#include "rk/cluster.h"

#if !RK_HAVE_UCX

#include <string.h>

#include "base/error.h"
#include "cluster/cluster_internal.h"

static rk_status_t unavailable(void) {
  return rk__fail(RK_ERR_UNAVAILABLE,
                  "cluster: rk was built without UCX headers (install "
                  "libucx-dev and rebuild)");
}

void rk_cluster_options_init(rk_cluster_options_t *o) {
  memset(o, 0, sizeof *o);
  o->connect_timeout_ns = 10000000000ull;
  o->spin_us = UINT32_MAX;
}
rk_status_t rk_cluster_available(const char **out_version) {
  if (out_version) *out_version = NULL;
  return unavailable();
}
rk_status_t rk_cluster_create(const rk_cluster_options_t *o,
                              rk_cluster_t **out) {
  (void)o;
  (void)out;
  return unavailable();
}
void rk_cluster_destroy(rk_cluster_t *c) { (void)c; }
rk_status_t rk_cluster_address(const rk_cluster_t *c, char *b, size_t n) {
  (void)c;
  (void)b;
  (void)n;
  return unavailable();
}
const char *rk_cluster_name(const rk_cluster_t *c) {
  (void)c;
  return "";
}
size_t rk_cluster_peer_count(rk_cluster_t *c) {
  (void)c;
  return 0;
}
rk_status_t rk_cluster_wait_peers(rk_cluster_t *c, size_t n, uint64_t t) {
  (void)c;
  (void)n;
  (void)t;
  return unavailable();
}
rk_status_t rk_cluster_export(rk_cluster_t *c, rk_actor_t *a, const char *n) {
  (void)c;
  (void)a;
  (void)n;
  return unavailable();
}
rk_status_t rk_cluster_unexport(rk_cluster_t *c, const char *n) {
  (void)c;
  (void)n;
  return unavailable();
}
rk_status_t rk_cluster_lookup(rk_cluster_t *c, const char *n, uint64_t t,
                              rk_remote_actor_t **out) {
  (void)c;
  (void)n;
  (void)t;
  (void)out;
  return unavailable();
}
rk_status_t rk_remote_actor_send(rk_remote_actor_t *a, const void *r, size_t n,
                                 uint64_t t, uint64_t *id) {
  (void)a;
  (void)r;
  (void)n;
  (void)t;
  (void)id;
  return unavailable();
}
rk_status_t rk_remote_actor_receive(rk_remote_actor_t *a, void *r, size_t n,
                                    uint64_t t, rk_actor_message_t *i) {
  (void)a;
  (void)r;
  (void)n;
  (void)t;
  (void)i;
  return unavailable();
}
rk_status_t rk_remote_actor_call(rk_remote_actor_t *a, const void *q, size_t qn,
                                 void *r, size_t rn, uint64_t t,
                                 rk_actor_message_t *i) {
  (void)a;
  (void)q;
  (void)qn;
  (void)r;
  (void)rn;
  (void)t;
  (void)i;
  return unavailable();
}
rk_actor_state_t rk_remote_actor_state(const rk_remote_actor_t *a) {
  (void)a;
  return RK_ACTOR_FAILED;
}
void rk_remote_actor_info(const rk_remote_actor_t *a, size_t *q, size_t *r,
                          uint32_t *w, const char **p) {
  (void)a;
  if (q) *q = 0;
  if (r) *r = 0;
  if (w) *w = 0;
  if (p) *p = "";
}
void rk_remote_actor_release(rk_remote_actor_t *a) { (void)a; }
rk_status_t rk_cluster_link(rk_remote_actor_t *r, rk_actor_t *a) {
  (void)r;
  (void)a;
  return unavailable();
}
rk_status_t rk_cluster_connect(rk_actor_t *a, uint32_t p,
                               rk_remote_actor_t *r) {
  (void)a;
  (void)p;
  (void)r;
  return unavailable();
}
rk_status_t rk_cluster_unlink(rk_remote_actor_t *r, rk_actor_t *a) {
  (void)r;
  (void)a;
  return unavailable();
}
uint64_t rk__cluster_peers_freed(rk_cluster_t *c) {
  (void)c;
  return 0;
}
uint32_t rk__cluster_slots_held(rk_cluster_t *c) {
  (void)c;
  return 0;
}
uint64_t rk__cluster_dropped_local(rk_cluster_t *c, const char *n) {
  (void)c;
  (void)n;
  return 0;
}
uint64_t rk__cluster_direct(rk_cluster_t *c, const char *n) {
  (void)c;
  (void)n;
  return 0;
}

void rk__remote_actor_credits(rk_remote_actor_t *r, uint64_t *out_answers,
                              uint64_t *out_credited) {
  (void)r;
  *out_answers = *out_credited = 0;
}

void rk__remote_actor_sends(rk_remote_actor_t *r, uint32_t *out_buffered,
                            uint32_t *out_unanswered, uint64_t *out_batches,
                            uint64_t *out_batched) {
  (void)r;
  *out_buffered = *out_unanswered = 0;
  *out_batches = *out_batched = 0;
}

rk_status_t rk__remote_actor_send_batch(rk_remote_actor_t *a, const void *q,
                                        size_t n, size_t k, uint64_t t,
                                        size_t *out_sent, uint64_t *out_first) {
  (void)a;
  (void)q;
  (void)n;
  (void)k;
  (void)t;
  *out_sent = 0;
  if (out_first) *out_first = 0;
  return unavailable();
}

void rk__remote_actor_counts(rk_remote_actor_t *a, uint64_t *out_sent,
                             uint64_t *out_dropped, uint64_t *out_waiting) {
  (void)a;
  *out_sent = *out_dropped = *out_waiting = 0;
}

const char *rk__remote_actor_name(const rk_remote_actor_t *a) {
  (void)a;
  return "";
}

void rk__remote_actor_set_proxy(rk_remote_actor_t *a, rk_actor_t *p) {
  (void)a;
  (void)p;
}

void rk__remote_actor_close(rk_remote_actor_t *a, const char *cause) {
  (void)a;
  (void)cause;
}

rk_status_t rk_cluster_mpi_available(const char **out_version) {
  if (out_version) *out_version = NULL;
  return unavailable();
}
rk_status_t rk__cluster_barrier(rk_cluster_t *c) {
  (void)c;
  return unavailable();
}

#endif /* !RK_HAVE_UCX */
