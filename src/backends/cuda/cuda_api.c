/* Loading the CUDA driver and NVRTC, and naming their errors (cuda_api.h).
 *
 *   rk_cu_api_t api;
 *   if (rk__cu_api_load(&api) != RK_OK) return ...;  // rk_last_error() says
 * why int n = 0; CUresult r = api.cuDeviceGetCount(&n); if (r) return
 * rk__cu_fail(&api, r, "cuDeviceGetCount");
 *   ...
 *   rk__cu_api_unload(&api);
 */
#include "backends/cuda/cuda_api.h"

#include <dlfcn.h>

#include "base/platform.h"
#if RK__LINUX
#include <link.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

/* ---- Error tables ------------------------------------------------------- */

const char *rk__cu_error_name(CUresult err) {
  switch (err) {
#define RK_CU_NAME_(name, value, status) \
  case value:                            \
    return #name;
    RK_CU_ERRORS(RK_CU_NAME_)
#undef RK_CU_NAME_
  }
  return "an unknown CUDA error";
}

rk_status_t rk__cu_error_status(CUresult err) {
  switch (err) {
#define RK_CU_STATUS_(name, value, status) \
  case value:                              \
    return status;
    RK_CU_ERRORS(RK_CU_STATUS_)
#undef RK_CU_STATUS_
  }
  return RK_ERR_INTERNAL;
}

const char *rk__nvrtc_error_name(nvrtcResult err) {
  switch (err) {
#define RK_NVRTC_NAME_(name, value, status) \
  case value:                               \
    return #name;
    RK_NVRTC_ERRORS(RK_NVRTC_NAME_)
#undef RK_NVRTC_NAME_
  }
  return "an unknown NVRTC error";
}

rk_status_t rk__nvrtc_error_status(nvrtcResult err) {
  switch (err) {
#define RK_NVRTC_STATUS_(name, value, status) \
  case value:                                 \
    return status;
    RK_NVRTC_ERRORS(RK_NVRTC_STATUS_)
#undef RK_NVRTC_STATUS_
  }
  return RK_ERR_INTERNAL;
}

/* The driver's description of err, or NULL when the driver is not loaded or
 * does not know the code (it then answers CUDA_ERROR_INVALID_VALUE). */
static const char *cu_error_text(const rk_cu_api_t *api, CUresult err) {
  if (!api || !api->cuGetErrorString) return NULL;
  const char *text = NULL;
  if (api->cuGetErrorString(err, &text) != RK_CUDA_SUCCESS) return NULL;
  return text;
}

/* rk__cu_fail with the status chosen by the caller. */
static rk_status_t cu_fail_as(rk_status_t status, const rk_cu_api_t *api,
                              CUresult err, const char *what) {
  const char *text = cu_error_text(api, err);
  const char *name = rk__cu_error_name(err);
  /* A code newer than rk's table: the driver knows its name. */
  const char *driver_name = NULL;
  if (strncmp(name, "CUDA_", 5) != 0 && api && api->cuGetErrorName &&
      api->cuGetErrorName(err, &driver_name) == RK_CUDA_SUCCESS && driver_name)
    name = driver_name;
  return rk__fail(status, "cuda: %s: %s (%d)%s%s", what, name, (int)err,
                  text ? ": " : "", text ? text : "");
}

rk_status_t rk__cu_fail(const rk_cu_api_t *api, CUresult err,
                        const char *what) {
  rk_status_t s = rk__cu_error_status(err);
  /* Called for CUDA_SUCCESS, the caller has found a failure the driver did
   * not report; it is still a failure. */
  if (s == RK_OK) s = RK_ERR_INTERNAL;
  return cu_fail_as(s, api, err, what);
}

rk_status_t rk__nvrtc_fail(const rk_nvrtc_api_t *api, nvrtcResult err,
                           const char *what) {
  rk_status_t s = rk__nvrtc_error_status(err);
  if (s == RK_OK) s = RK_ERR_INTERNAL;
  const char *text =
      api && api->nvrtcGetErrorString ? api->nvrtcGetErrorString(err) : NULL;
  return rk__fail(s, "cuda: %s: %s (%d)%s%s", what, rk__nvrtc_error_name(err),
                  (int)err, text ? ": " : "", text ? text : "");
}

/* ---- Opening libraries -------------------------------------------------- */

void *rk__cu_open_first(const char *const *names, size_t count, char *path,
                        size_t path_cap, rk__strbuf_t *tried) {
  for (size_t i = 0; i < count; ++i) {
    dlerror();
    void *handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      const char *found = names[i];
#if RK__LINUX
      struct link_map *map = NULL;
      if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
          map->l_name[0])
        found = map->l_name;
#endif
      snprintf(path, path_cap, "%s", found);
      return handle;
    }
    const char *why = dlerror();
    if (!why) why = "cannot be opened";
    if (tried->len) rk__strbuf_puts(tried, "; ");
    /* dlerror() usually begins with the name already. */
    size_t n = strlen(names[i]);
    if (strncmp(why, names[i], n) == 0 && why[n] == ':')
      rk__strbuf_puts(tried, why);
    else
      rk__strbuf_printf(tried, "%s: %s", names[i], why);
  }
  return NULL;
}

size_t rk__cu_library_names(const char *var, const char *const *defaults,
                            size_t ndefaults, const char **names) {
  const char *env = getenv(var);
  if (env && *env) {
    names[0] = env;
    return 1;
  }
  for (size_t i = 0; i < ndefaults; ++i) names[i] = defaults[i];
  return ndefaults;
}

/* Appends name to a ", "-separated list of missing entry points. */
static void note_missing(rk__strbuf_t *missing, const char *name) {
  if (missing->len) rk__strbuf_puts(missing, ", ");
  rk__strbuf_puts(missing, name);
}

/* ---- The driver --------------------------------------------------------- */

/* cuGetProcAddress_v2 (CUDA 12.0 and later) and cuGetProcAddress, the
 * form drivers 11.3 to 11.8 export. */
typedef CUresult (*cu_get_proc_v2_fn)(const char *symbol, void **pfn,
                                      int cuda_version, uint64_t flags,
                                      int *symbol_status);
typedef CUresult (*cu_get_proc_v1_fn)(const char *symbol, void **pfn,
                                      int cuda_version, uint64_t flags);

typedef struct cu_resolver {
  cu_get_proc_v2_fn v2;
  cu_get_proc_v1_fn v1;
} cu_resolver_t;

static CUresult cu_resolve(const cu_resolver_t *r, const char *name,
                           void **out) {
  *out = NULL;
  if (r->v2) {
    int symbol_status = 0;
    return r->v2(name, out, RK_CUDA_API_VERSION, RK_CU_GET_PROC_ADDRESS_DEFAULT,
                 &symbol_status);
  }
  return r->v1(name, out, RK_CUDA_API_VERSION, RK_CU_GET_PROC_ADDRESS_DEFAULT);
}

static rk_status_t cu_stub_failure(const rk_cu_api_t *api) {
  return rk__fail(RK_ERR_UNAVAILABLE,
                  "the library at %s is the CUDA toolkit's stub libcuda "
                  "(a link-time placeholder), not a driver: no NVIDIA driver "
                  "is installed (set RK_CUDA_LIB to the driver library)",
                  api->path);
}

rk_status_t rk__cu_api_load(rk_cu_api_t *api) {
  memset(api, 0, sizeof *api);
  static const char *const kDefaults[] = {"libcuda.so.1", "libcuda.so"};
  const char *names[2];
  size_t count = rk__cu_library_names("RK_CUDA_LIB", kDefaults, 2, names);

  rk__strbuf_t text;
  rk__strbuf_init(&text);
  api->handle =
      rk__cu_open_first(names, count, api->path, sizeof api->path, &text);
  if (!api->handle) {
    rk__fail(RK_ERR_UNAVAILABLE,
             "no NVIDIA driver: %s (set RK_CUDA_LIB to the driver "
             "library)",
             text.data ? text.data : "out of memory");
    rk__strbuf_free(&text);
    return RK_ERR_UNAVAILABLE;
  }

  rk_status_t status = RK_OK;
  /* dlsym returns an object pointer; the union turns it into a function
   * pointer without the ISO C warning about converting between the two. */
  union {
    void *obj;
    cu_get_proc_v2_fn v2;
    cu_get_proc_v1_fn v1;
  } proc;
  cu_resolver_t resolver = {NULL, NULL};
  if ((proc.obj = dlsym(api->handle, "cuGetProcAddress_v2")) != NULL) {
    resolver.v2 = proc.v2;
  } else if ((proc.obj = dlsym(api->handle, "cuGetProcAddress")) != NULL) {
    resolver.v1 = proc.v1;
  } else {
    status =
        rk__fail(RK_ERR_UNAVAILABLE,
                 "%s is not a CUDA driver (no cuGetProcAddress)", api->path);
    goto fail;
  }

  /* Every entry point at the ABI of RK_CUDA_API_VERSION. The toolkit's stub
   * answers the first lookup with CUDA_ERROR_STUB_LIBRARY. */
#define RK_CU_RESOLVE_(name, required, ret, params)         \
  if (status == RK_OK) {                                    \
    union {                                                 \
      void *obj;                                            \
      ret(*fn) params;                                      \
    } u;                                                    \
    CUresult r = cu_resolve(&resolver, #name, &u.obj);      \
    if (r == RK_CUDA_ERROR_STUB_LIBRARY) {                  \
      status = cu_stub_failure(api);                        \
    } else {                                                \
      if (r != RK_CUDA_SUCCESS) u.obj = NULL;               \
      api->name = u.fn;                                     \
      if (!u.obj && (required)) note_missing(&text, #name); \
    }                                                       \
  }
  RK_CU_SYMBOLS(RK_CU_RESOLVE_)
#undef RK_CU_RESOLVE_
  if (status != RK_OK) goto fail;
  if (text.len) {
    status = rk__fail(RK_ERR_UNAVAILABLE,
                      "%s lacks %s (driver too old? rk needs the CUDA "
                      "12.0 driver API)",
                      api->path, text.data);
    goto fail;
  }

  const char *call = "cuDriverGetVersion";
  CUresult r = api->cuDriverGetVersion(&api->driver_version);
  if (r == RK_CUDA_SUCCESS) {
    call = "cuInit";
    r = api->cuInit(0);
  }
  if (r == RK_CUDA_ERROR_STUB_LIBRARY) {
    status = cu_stub_failure(api);
    goto fail;
  }
  /* No device is not a failure: the caller finds 0 devices. */
  if (r != RK_CUDA_SUCCESS && r != RK_CUDA_ERROR_NO_DEVICE) {
    char what[640];
    snprintf(what, sizeof what, "%s on %s", call, api->path);
    status = cu_fail_as(RK_ERR_UNAVAILABLE, api, r, what);
    goto fail;
  }
  rk__strbuf_free(&text);
  return RK_OK;

fail:
  rk__strbuf_free(&text);
  rk__cu_api_unload(api);
  return status;
}

void rk__cu_api_unload(rk_cu_api_t *api) {
  if (api->handle) dlclose(api->handle);
  memset(api, 0, sizeof *api);
}

/* ---- NVRTC -------------------------------------------------------------- */

/* Loaded once per process and never closed: modules compiled with it may be
 * in use until exit, and closing buys nothing. The outcome, message
 * included, lives in static storage so that every caller sees the same
 * answer and nothing is left on the heap. */
static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;
static rk_nvrtc_api_t g_nvrtc;
static rk_status_t g_nvrtc_status;
static char g_nvrtc_message[2048];

static void nvrtc_failed(const char *fmt, ...) RK__PRINTF(1, 2);
static void nvrtc_failed(const char *fmt, ...) {
  g_nvrtc_status = RK_ERR_UNAVAILABLE;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_nvrtc_message, sizeof g_nvrtc_message, fmt, ap);
  va_end(ap);
}

static void nvrtc_load_once(void) {
  static const char *const kDefaults[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                          "libnvrtc.so"};
  const char *names[3];
  size_t count = rk__cu_library_names("RK_NVRTC_LIB", kDefaults, 3, names);
  rk_nvrtc_api_t *api = &g_nvrtc;

  rk__strbuf_t text;
  rk__strbuf_init(&text);
  api->handle =
      rk__cu_open_first(names, count, api->path, sizeof api->path, &text);
  if (!api->handle) {
    nvrtc_failed(
        "cuda: NVRTC not found: %s (set RK_NVRTC_LIB to the NVRTC library)",
        text.data ? text.data : "out of memory");
    rk__strbuf_free(&text);
    return;
  }

#define RK_NVRTC_RESOLVE_(name, required, ret, params)    \
  {                                                       \
    union {                                               \
      void *obj;                                          \
      ret(*fn) params;                                    \
    } u;                                                  \
    u.obj = dlsym(api->handle, #name);                    \
    api->name = u.fn;                                     \
    if (!u.obj && (required)) note_missing(&text, #name); \
  }
  RK_NVRTC_SYMBOLS(RK_NVRTC_RESOLVE_)
#undef RK_NVRTC_RESOLVE_

  if (text.len) {
    nvrtc_failed("cuda: %s is not a usable NVRTC: it lacks %s", api->path,
                 text.data);
  } else if (api->nvrtcVersion(&api->major, &api->minor) != RK_NVRTC_SUCCESS) {
    nvrtc_failed("cuda: %s is not a usable NVRTC: nvrtcVersion failed",
                 api->path);
  }
  rk__strbuf_free(&text);
  if (g_nvrtc_status != RK_OK) {
    /* Nothing was handed out; a library that does not work is let go. */
    dlclose(api->handle);
    memset(api, 0, sizeof *api);
  }
}

rk_status_t rk__nvrtc_api(const rk_nvrtc_api_t **out_api) {
  pthread_once(&g_nvrtc_once, nvrtc_load_once);
  if (g_nvrtc_status != RK_OK) {
    *out_api = NULL;
    return rk__fail(g_nvrtc_status, "%s", g_nvrtc_message);
  }
  *out_api = &g_nvrtc;
  return RK_OK;
}
