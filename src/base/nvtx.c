/* NVTX ranges through a library loaded at run time (see nvtx.h). */
#include "base/nvtx.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NVTX v2 C API's signatures (nvToolsExt.h), declared here. */
typedef int (*rk__nvtx_push_fn_t)(const char *message);
typedef int (*rk__nvtx_pop_fn_t)(void);
typedef void (*rk__nvtx_mark_fn_t)(const char *message);

static struct {
  pthread_once_t once;
  bool loaded;
  rk__nvtx_push_fn_t push;
  rk__nvtx_pop_fn_t pop;
  rk__nvtx_mark_fn_t mark;
  char why[512];
} g_nvtx = {PTHREAD_ONCE_INIT, false, NULL, NULL, NULL, ""};

static void load_once(void) {
  static const char *const kDefaults[] = {"libnvToolsExt.so.1",
                                          "libnvToolsExt.so"};
  const char *env = getenv("RK_NVTX_LIB");
  const char *names[2];
  size_t count = 0;
  if (env && *env) {
    names[count++] = env;
  } else {
    names[count++] = kDefaults[0];
    names[count++] = kDefaults[1];
  }
  size_t used = 0;
  for (size_t i = 0; i < count; ++i) {
    void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
      const char *err = dlerror();
      int w = snprintf(g_nvtx.why + used, sizeof g_nvtx.why - used, "%s%s",
                       used ? "; " : "", err ? err : names[i]);
      if (w > 0 && used + (size_t)w < sizeof g_nvtx.why) used += (size_t)w;
      continue;
    }
    /* dlsym returns void *; the NVTX library's entry points are functions
     * of the declared types (POSIX allows the conversion). */
    void *push = dlsym(dl, "nvtxRangePushA");
    void *pop = dlsym(dl, "nvtxRangePop");
    void *mark = dlsym(dl, "nvtxMarkA");
    if (!push || !pop || !mark) {
      int w = snprintf(g_nvtx.why + used, sizeof g_nvtx.why - used,
                       "%s%s lacks nvtxRangePushA, nvtxRangePop or nvtxMarkA",
                       used ? "; " : "", names[i]);
      if (w > 0 && used + (size_t)w < sizeof g_nvtx.why) used += (size_t)w;
      dlclose(dl);
      continue;
    }
    memcpy(&g_nvtx.push, &push, sizeof push);
    memcpy(&g_nvtx.pop, &pop, sizeof pop);
    memcpy(&g_nvtx.mark, &mark, sizeof mark);
    g_nvtx.why[0] = '\0';
    /* Published by pthread_once: every reader calls rk__nvtx_load. */
    g_nvtx.loaded = true;
    return; /* the library stays loaded for the life of the process */
  }
}

bool rk__nvtx_load(char *why, size_t cap) {
  pthread_once(&g_nvtx.once, load_once);
  if (!g_nvtx.loaded && why && cap) snprintf(why, cap, "%s", g_nvtx.why);
  return g_nvtx.loaded;
}

/* pthread_once again, cheap once done, orders the reads below after the
 * load on whichever thread ran it. */
void rk__nvtx_push(const char *name) {
  if (rk__nvtx_load(NULL, 0)) g_nvtx.push(name);
}

void rk__nvtx_pop(void) {
  if (rk__nvtx_load(NULL, 0)) g_nvtx.pop();
}

void rk__nvtx_mark(const char *name) {
  if (rk__nvtx_load(NULL, 0)) g_nvtx.mark(name);
}
