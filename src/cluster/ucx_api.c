/* Loading libucp (ucx_api.h). Built only with UCX headers. */
#if RK_HAVE_UCX

#include "cluster/ucx_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

static rk_ucp_api_t g_api;
static rk_status_t g_status = RK_ERR_UNAVAILABLE;
static char g_why[2048];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *env = getenv("RK_UCX_LIB");
  const char *names[2];
  size_t count = 0;
  if (env && *env) {
    names[count++] = env;
  } else {
    names[count++] = "libucp.so.0";
    names[count++] = "libucp.so";
  }
  rk__strbuf_t tried;
  rk__strbuf_init(&tried);
  for (size_t i = 0; i < count && !g_api.handle; ++i) {
    g_api.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (g_api.handle) {
      snprintf(g_api.path, sizeof g_api.path, "%s", names[i]);
    } else {
      const char *why = dlerror();
      rk__strbuf_printf(&tried, "%s%s: %s", tried.data ? "; " : " ", names[i],
                        why ? why : "cannot be opened");
    }
  }
  if (!g_api.handle) {
    snprintf(g_why, sizeof g_why,
             "UCX is not available: libucp could not be loaded%s (tried%s); "
             "on Debian: apt-get install libucx0",
             env && *env ? " from RK_UCX_LIB" : "",
             tried.data ? tried.data : " nothing");
    rk__strbuf_free(&tried);
    return;
  }
  rk__strbuf_free(&tried);
  char missing[1024] = "";
  size_t used = 0;
  /* dlsym on the handle also searches libucp's dependencies (libucs holds
   * ucs_status_string). The union avoids the ISO C warning about object to
   * function pointer conversion. */
#define RK_UCP_LOOKUP_(name, ret, params)                                \
  do {                                                                   \
    union {                                                              \
      void *obj;                                                         \
      ret(*fn) params;                                                   \
    } u;                                                                 \
    u.obj = dlsym(g_api.handle, #name);                                  \
    g_api.name = u.fn;                                                   \
    if (!u.obj) {                                                        \
      int w = snprintf(missing + used, sizeof missing - used, "%s%s",    \
                       used ? ", " : "", #name);                         \
      if (w > 0 && used + (size_t)w < sizeof missing) used += (size_t)w; \
    }                                                                    \
  } while (0);
  RK_UCP_SYMBOLS(RK_UCP_LOOKUP_)
#undef RK_UCP_LOOKUP_
  if (used) {
    snprintf(g_why, sizeof g_why, "%s is not a usable UCX library: it lacks %s",
             g_api.path, missing);
    return;
  }
  g_status = RK_OK;
}

rk_status_t rk__ucp_api(const rk_ucp_api_t **out_api) {
  pthread_once(&g_once, load);
  if (g_status != RK_OK) return rk__fail(g_status, "%s", g_why);
  *out_api = &g_api;
  return RK_OK;
}

rk_status_t rk__ucs_fail(ucs_status_t status, const char *what) {
  rk_status_t s;
  switch (status) {
    case UCS_ERR_NO_MEMORY:
      s = RK_ERR_OUT_OF_MEMORY;
      break;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
      s = RK_ERR_INVALID_ARGUMENT;
      break;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
      s = RK_ERR_TIMEOUT;
      break;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_BUSY:
    case UCS_ERR_NO_RESOURCE:
      s = RK_ERR_UNAVAILABLE;
      break;
    default:
      s = RK_ERR_INTERNAL;
  }
  const char *text = g_status == RK_OK ? g_api.ucs_status_string(status) : "?";
  return rk__fail(s, "%s: %s (UCX status %d)", what, text, (int)status);
}

#endif /* RK_HAVE_UCX */
