/* Finding and loading a webgpu.h implementation at run time. */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/webgpu/webgpu_api.h"
#include "base/error.h"
#include "base/strbuf.h"

/* The wgpu-native major version whose webgpu.h webgpu_api.h follows. */
enum { kWgpuNativeMajor = 29 };

typedef void (*rk_wgpu_proc_t)(void);
typedef rk_wgpu_proc_t (*rk_wgpu_get_proc_t)(WGPUStringView name);

const char *rk__wgpu_str(WGPUStringView s, char *buf, size_t cap) {
  if (cap == 0) return buf;
  if (!s.data) {
    buf[0] = '\0';
    return buf;
  }
  size_t n = s.length == RK_WGPU_STRLEN ? strlen(s.data) : s.length;
  if (n >= cap) n = cap - 1;
  memcpy(buf, s.data, n);
  buf[n] = '\0';
  return buf;
}

/* Resolves every symbol; on a missing required one, fails naming it. */
static rk_status_t resolve(rk__wgpu_procs_t *p, const char *path) {
  rk_wgpu_get_proc_t gpa = NULL;
  void *sym = dlsym(p->dl, "wgpuGetProcAddress");
  /* wgpu-native exports wgpuGetProcAddress but aborts the process in it
   * ("not implemented"); it is recognised by its wgpuGetVersion and its
   * entry points are taken from the symbol table. */
  if (dlsym(p->dl, "wgpuGetVersion")) sym = NULL;
  memcpy(&gpa, &sym, sizeof gpa);
  void *addr;
#define RK_WGPU_LOOKUP_(name, required)                                   \
  addr = NULL;                                                            \
  if (gpa) {                                                              \
    WGPUStringView v = {#name, sizeof #name - 1};                         \
    rk_wgpu_proc_t f = gpa(v);                                            \
    memcpy(&addr, &f, sizeof addr);                                       \
  }                                                                       \
  if (!addr) addr = dlsym(p->dl, #name);                                  \
  if (!addr && (required))                                                \
    return rk__fail(RK_ERR_UNAVAILABLE,                                   \
                    "%s has no %s: not a webgpu.h implementation of the " \
                    "version rk expects",                                 \
                    path, #name);                                         \
  memcpy(&p->name, &addr, sizeof addr);
#define RK_WGPU_REQ_(name, ret, params) RK_WGPU_LOOKUP_(name, 1)
#define RK_WGPU_OPT_(name, ret, params) RK_WGPU_LOOKUP_(name, 0)
  RK_WGPU_SYMBOLS(RK_WGPU_REQ_, RK_WGPU_OPT_)
#undef RK_WGPU_REQ_
#undef RK_WGPU_OPT_
#undef RK_WGPU_LOOKUP_
  return RK_OK;
}

/* Opens and checks one candidate; on failure appends why to `tried`. */
static rk_status_t try_path(rk__wgpu_procs_t *p, const char *path,
                            rk__strbuf_t *tried) {
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    rk__strbuf_printf(tried, "\n  %s: %s", path, e ? e : "cannot be loaded");
    return RK_ERR_UNAVAILABLE;
  }
  memset(p, 0, sizeof *p);
  p->dl = dl;
  snprintf(p->path, sizeof p->path, "%s", path);
  rk_status_t s = resolve(p, path);
  if (s == RK_OK && p->wgpuGetVersion) {
    /* wgpu-native: (major << 24 | minor << 16 | patch << 8 | build). The
     * struct layouts change between majors, so only the one webgpu_api.h
     * follows is used. */
    p->version = p->wgpuGetVersion();
    unsigned major = p->version >= 65536 ? p->version >> 24 : 0;
    const char *skip = getenv("RK_WEBGPU_SKIP_VERSION_CHECK");
    if (major != kWgpuNativeMajor && !(skip && strcmp(skip, "1") == 0))
      s = rk__fail(RK_ERR_UNAVAILABLE,
                   "%s is wgpu-native %u.%u.%u; rk needs wgpu-native %d.x, "
                   "whose webgpu.h it is built for (scripts/deps.sh "
                   "installs one; RK_WEBGPU_SKIP_VERSION_CHECK=1 tries this "
                   "one anyway)",
                   path, major, (p->version >> 16) & 0xff,
                   (p->version >> 8) & 0xff, kWgpuNativeMajor);
  }
  if (s != RK_OK) {
    rk__strbuf_printf(tried, "\n  %s: %s", path, rk_last_error());
    dlclose(dl);
    memset(p, 0, sizeof *p);
    return s;
  }
  return RK_OK;
}

/* wgpu-native inside rk's Python environment (scripts/deps.sh). */
static rk_status_t try_venv(rk__wgpu_procs_t *p, rk__strbuf_t *tried) {
  char venv[2048];
  const char *env = getenv("RK_WGPU_VENV");
  const char *xdg = getenv("XDG_DATA_HOME");
  const char *home = getenv("HOME");
  if (env && *env)
    snprintf(venv, sizeof venv, "%s", env);
  else if (xdg && *xdg)
    snprintf(venv, sizeof venv, "%s/rk/wgpu-venv", xdg);
  else if (home && *home)
    snprintf(venv, sizeof venv, "%s/.local/share/rk/wgpu-venv", home);
  else
    return RK_ERR_UNAVAILABLE;
  char pattern[2200];
  snprintf(pattern, sizeof pattern,
           "%s/lib/python3*/site-packages/wgpu/resources/"
           "libwgpu_native-release.so",
           venv);
  glob_t g;
  rk_status_t s = RK_ERR_UNAVAILABLE;
  if (glob(pattern, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && s != RK_OK; ++i)
      s = try_path(p, g.gl_pathv[i], tried);
    globfree(&g);
  } else {
    rk__strbuf_printf(tried, "\n  %s: no such file", pattern);
  }
  return s;
}

static rk_status_t load_uncached(rk__wgpu_procs_t *out, const char *lib) {
  rk__strbuf_t tried;
  rk__strbuf_init(&tried);
  rk_status_t s = RK_ERR_UNAVAILABLE;
  if (lib && *lib) {
    s = try_path(out, lib, &tried);
  } else {
    s = try_venv(out, &tried);
    static const char *const kSystem[] = {"libwgpu_native.so",
                                          "libwebgpu_dawn.so"};
    for (size_t i = 0; s != RK_OK && i < sizeof kSystem / sizeof kSystem[0];
         ++i)
      s = try_path(out, kSystem[i], &tried);
  }
  if (s != RK_OK)
    s = rk__fail(RK_ERR_UNAVAILABLE,
                 "no WebGPU implementation could be loaded%s; tried:%s",
                 lib && *lib ? " (RK_WEBGPU_LIB is set)" : "",
                 tried.data ? tried.data : " nothing");
  rk__strbuf_free(&tried);
  return s;
}

/* Loaded libraries stay loaded for the life of the process (Rust and C++
 * implementations do not all survive dlclose); one per distinct
 * RK_WEBGPU_LIB value. */
typedef struct loaded_lib {
  rk__wgpu_procs_t procs; /* first: rk__wgpu_instance finds the entry */
  struct loaded_lib *next;
  char key[1024];
  WGPUInstance instance;
} loaded_lib_t;

static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_lib_t *g_loaded;

rk_status_t rk__wgpu_load(const rk__wgpu_procs_t **out_procs) {
  const char *lib = getenv("RK_WEBGPU_LIB");
  char key[1024];
  snprintf(key, sizeof key, "%s", lib ? lib : "");
  pthread_mutex_lock(&g_load_lock);
  for (loaded_lib_t *l = g_loaded; l; l = l->next) {
    if (strcmp(l->key, key) == 0) {
      *out_procs = &l->procs;
      pthread_mutex_unlock(&g_load_lock);
      return RK_OK;
    }
  }
  loaded_lib_t *l = calloc(1, sizeof *l);
  rk_status_t s = l ? load_uncached(&l->procs, lib)
                    : rk__fail(RK_ERR_OUT_OF_MEMORY, "loading WebGPU");
  if (s == RK_OK) {
    snprintf(l->key, sizeof l->key, "%s", key);
    l->next = g_loaded;
    g_loaded = l;
    if (l->procs.wgpuSetLogLevel) l->procs.wgpuSetLogLevel(RK_WGPU_LOG_OFF);
    *out_procs = &l->procs;
  } else {
    free(l);
  }
  pthread_mutex_unlock(&g_load_lock);
  return s;
}

WGPUInstance rk__wgpu_instance(const rk__wgpu_procs_t *procs) {
  loaded_lib_t *l = (loaded_lib_t *)(uintptr_t)procs;
  pthread_mutex_lock(&g_load_lock);
  if (!l->instance && procs->wgpuGetVersion) {
    /* wgpu-native: compute needs no OpenGL, and starting its EGL backend
     * is slow and noisy; ask for Vulkan, Metal and D3D12 only. */
    WGPUInstanceExtras extras;
    memset(&extras, 0, sizeof extras);
    extras.chain.sType = RK_WGPU_STYPE_INSTANCE_EXTRAS;
    extras.backends = RK_WGPU_BACKENDS_PRIMARY;
    WGPUInstanceDescriptor d;
    memset(&d, 0, sizeof d);
    d.nextInChain = &extras.chain;
    l->instance = procs->wgpuCreateInstance(&d);
  }
  if (!l->instance) l->instance = procs->wgpuCreateInstance(NULL);
  WGPUInstance inst = l->instance;
  pthread_mutex_unlock(&g_load_lock);
  return inst;
}
