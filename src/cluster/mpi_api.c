/* Loading Open MPI at run time (mpi_api.h). */
#include "cluster/mpi_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

static rk_mpi_api_t g_api;
static rk_status_t g_status = RK_ERR_UNAVAILABLE;
static char g_why[2048];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *env = getenv("RK_MPI_LIB");
  const char *names[2];
  size_t count = 0;
  if (env && *env) {
    names[count++] = env;
  } else {
    names[count++] = "libmpi.so.40";
    names[count++] = "libmpi.so";
  }
  rk__strbuf_t tried;
  rk__strbuf_init(&tried);
  for (size_t i = 0; i < count && !g_api.handle; ++i) {
    /* RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols. */
    g_api.handle = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
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
             "MPI is not available: no MPI library could be loaded%s "
             "(tried%s); on Debian: apt-get install openmpi-bin",
             env && *env ? " from RK_MPI_LIB" : "",
             tried.data ? tried.data : " nothing");
    rk__strbuf_free(&tried);
    return;
  }
  rk__strbuf_free(&tried);
  char missing[512] = "";
  size_t used = 0;
#define RK_MPI_LOOKUP_(name, ret, params)                                \
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
  RK_MPI_SYMBOLS(RK_MPI_LOOKUP_)
#undef RK_MPI_LOOKUP_
  if (used) {
    snprintf(g_why, sizeof g_why, "%s is not a usable MPI library: it lacks %s",
             g_api.path, missing);
    return;
  }
  g_api.comm_world = dlsym(g_api.handle, "ompi_mpi_comm_world");
  g_api.byte = dlsym(g_api.handle, "ompi_mpi_byte");
  if (!g_api.comm_world || !g_api.byte) {
    snprintf(g_why, sizeof g_why,
             "%s is not Open MPI (no ompi_mpi_comm_world): rk's MPI "
             "launcher path supports Open MPI only",
             g_api.path);
    return;
  }
  g_status = RK_OK;
}

rk_status_t rk__mpi_api(const rk_mpi_api_t **out_api) {
  pthread_once(&g_once, load);
  if (g_status != RK_OK) return rk__fail(g_status, "%s", g_why);
  *out_api = &g_api;
  return RK_OK;
}
