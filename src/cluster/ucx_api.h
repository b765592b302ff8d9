/* The UCP API as the cluster layer uses it, loaded at run time.
 *
 * UCX's headers are needed to build (Debian libucx-dev: the types, flags
 * and inline helpers come from <ucp/api/ucp.h>), its libraries are not:
 * libucp.so.0 ($RK_UCX_LIB replaces it) is opened with dlopen the first
 * time a cluster is created or rk_cluster_available() is asked, and its
 * entry points are looked up through one X-macro list, RK_UCP_SYMBOLS,
 * expanded into the fields of rk_ucp_api_t and into the lookups. The same
 * rk binary therefore runs where UCX is not installed, and says why.
 *
 *   const rk_ucp_api_t *u;
 *   if (rk__ucp_api(&u) != RK_OK) ... // rk_last_error(): paths tried
 *   u->ucp_worker_progress(worker);
 *
 * The library, once loaded, stays loaded for the life of the process.
 */
#ifndef RK_CLUSTER_UCX_API_H_
#define RK_CLUSTER_UCX_API_H_

#include <stdio.h>
#include <ucp/api/ucp.h>

#include "rk/status.h"

/* X(name, return type, parameters). Every one is required. */
#define RK_UCP_SYMBOLS(X)                                                      \
  X(ucp_init_version, ucs_status_t,                                            \
    (unsigned, unsigned, const ucp_params_t *, const ucp_config_t *,           \
     ucp_context_h *))                                                         \
  X(ucp_cleanup, void, (ucp_context_h))                                        \
  X(ucp_config_read, ucs_status_t,                                             \
    (const char *, const char *, ucp_config_t **))                             \
  X(ucp_config_release, void, (ucp_config_t *))                                \
  X(ucp_get_version_string, const char *, (void))                              \
  X(ucp_worker_create, ucs_status_t,                                           \
    (ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *))              \
  X(ucp_worker_destroy, void, (ucp_worker_h))                                  \
  X(ucp_worker_query, ucs_status_t, (ucp_worker_h, ucp_worker_attr_t *))       \
  X(ucp_worker_progress, unsigned, (ucp_worker_h))                             \
  X(ucp_worker_get_efd, ucs_status_t, (ucp_worker_h, int *))                   \
  X(ucp_worker_arm, ucs_status_t, (ucp_worker_h))                              \
  X(ucp_worker_signal, ucs_status_t, (ucp_worker_h))                           \
  X(ucp_worker_get_address, ucs_status_t,                                      \
    (ucp_worker_h, ucp_address_t **, size_t *))                                \
  X(ucp_worker_release_address, void, (ucp_worker_h, ucp_address_t *))         \
  X(ucp_worker_set_am_recv_handler, ucs_status_t,                              \
    (ucp_worker_h, const ucp_am_handler_param_t *))                            \
  X(ucp_listener_create, ucs_status_t,                                         \
    (ucp_worker_h, const ucp_listener_params_t *, ucp_listener_h *))           \
  X(ucp_listener_destroy, void, (ucp_listener_h))                              \
  X(ucp_listener_query, ucs_status_t, (ucp_listener_h, ucp_listener_attr_t *)) \
  X(ucp_listener_reject, ucs_status_t, (ucp_listener_h, ucp_conn_request_h))   \
  X(ucp_conn_request_query, ucs_status_t,                                      \
    (ucp_conn_request_h, ucp_conn_request_attr_t *))                           \
  X(ucp_ep_create, ucs_status_t,                                               \
    (ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *))                       \
  X(ucp_ep_close_nbx, ucs_status_ptr_t,                                        \
    (ucp_ep_h, const ucp_request_param_t *))                                   \
  X(ucp_am_send_nbx, ucs_status_ptr_t,                                         \
    (ucp_ep_h, unsigned, const void *, size_t, const void *, size_t,           \
     const ucp_request_param_t *))                                             \
  X(ucp_am_recv_data_nbx, ucs_status_ptr_t,                                    \
    (ucp_worker_h, void *, void *, size_t, const ucp_request_param_t *))       \
  X(ucp_am_data_release, void, (ucp_worker_h, void *))                         \
  X(ucp_request_check_status, ucs_status_t, (void *))                          \
  X(ucp_request_free, void, (void *))                                          \
  X(ucs_status_string, const char *, (ucs_status_t))

typedef struct rk_ucp_api {
  void *handle;
  char path[256];
#define RK_UCP_FIELD_(name, ret, params) ret(*name) params;
  RK_UCP_SYMBOLS(RK_UCP_FIELD_)
#undef RK_UCP_FIELD_
} rk_ucp_api_t;

/* Loads libucp once (thread-safe) and returns the table. RK_ERR_UNAVAILABLE
 * with every path tried, or the symbols missing, in rk_last_error(); the
 * same answer every time after the first. */
rk_status_t rk__ucp_api(const rk_ucp_api_t **out_api);

/* An rk status for a UCX one, with "what: <UCX's text>" as the detail. */
rk_status_t rk__ucs_fail(ucs_status_t status, const char *what);

#endif /* RK_CLUSTER_UCX_API_H_ */
