/* Loading the OpenCL ICD loader and naming its errors (cl_api.h). */
#include "backends/opencl/cl_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

const char *rk__cl_error_name(cl_int err) {
  switch (err) {
#define RK_CL_NAME_(name, value, status) \
  case value:                            \
    return #name;
    RK_CL_ERRORS(RK_CL_NAME_)
#undef RK_CL_NAME_
  }
  return "an unknown OpenCL error";
}

rk_status_t rk__cl_error_status(cl_int err) {
  switch (err) {
#define RK_CL_STATUS_(name, value, status) \
  case value:                              \
    return status;
    RK_CL_ERRORS(RK_CL_STATUS_)
#undef RK_CL_STATUS_
  }
  return RK_ERR_INTERNAL;
}

rk_status_t rk__cl_fail(cl_int err, const char *what) {
  rk_status_t s = rk__cl_error_status(err);
  if (s == RK_OK) s = RK_ERR_INTERNAL;
  return rk__fail(s, "opencl: %s: %s (%d)", what, rk__cl_error_name(err),
                  (int)err);
}

rk_status_t rk__cl_api_load(rk_cl_api_t *api) {
  memset(api, 0, sizeof *api);
  const char *env = getenv("RK_OPENCL_LIB");
  const char *const defaults[] = {"libOpenCL.so.1", "libOpenCL.so"};
  const char *names[2];
  size_t count = 0;
  if (env && *env) {
    names[count++] = env;
  } else {
    names[count++] = defaults[0];
    names[count++] = defaults[1];
  }
  rk__strbuf_t tried;
  rk__strbuf_init(&tried);
  for (size_t i = 0; i < count && !api->handle; ++i) {
    api->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (api->handle) {
      snprintf(api->path, sizeof api->path, "%s", names[i]);
    } else {
      const char *why = dlerror();
      rk__strbuf_printf(&tried, "\n  %s: %s", names[i],
                        why ? why : "cannot be opened");
    }
  }
  if (!api->handle) {
    rk__fail(RK_ERR_UNAVAILABLE,
             "no OpenCL ICD loader could be loaded%s (tried%s)",
             env && *env ? " from RK_OPENCL_LIB" : "",
             tried.data ? tried.data : " nothing");
    rk__strbuf_free(&tried);
    return RK_ERR_UNAVAILABLE;
  }
  rk__strbuf_free(&tried);

  char missing[1024] = "";
  size_t used = 0;
  /* dlsym returns void *; going through a union of object and function
   * pointer avoids the ISO C warning about converting between them. */
#define RK_CL_LOOKUP_(name, ret, params, required)                       \
  do {                                                                   \
    union {                                                              \
      void *obj;                                                         \
      ret(*fn) params;                                                   \
    } u;                                                                 \
    u.obj = dlsym(api->handle, #name);                                   \
    api->name = u.fn;                                                    \
    if (!u.obj && (required)) {                                          \
      int w = snprintf(missing + used, sizeof missing - used, "%s%s",    \
                       used ? ", " : "", #name);                         \
      if (w > 0 && used + (size_t)w < sizeof missing) used += (size_t)w; \
    }                                                                    \
  } while (0);
#define RK_CL_REQUIRED_(name, ret, params) RK_CL_LOOKUP_(name, ret, params, 1)
#define RK_CL_OPTIONAL_(name, ret, params) RK_CL_LOOKUP_(name, ret, params, 0)
  RK_CL_SYMBOLS(RK_CL_REQUIRED_, RK_CL_OPTIONAL_)
#undef RK_CL_REQUIRED_
#undef RK_CL_OPTIONAL_
#undef RK_CL_LOOKUP_
  if (used) {
    rk__fail(RK_ERR_UNAVAILABLE,
             "%s is not a usable OpenCL 1.2 library: it lacks %s", api->path,
             missing);
    rk__cl_api_unload(api);
    return RK_ERR_UNAVAILABLE;
  }
  return RK_OK;
}

/* The loader is never closed: ICD loaders and the drivers they load (PoCL
 * among them) keep threads and atexit handlers that must stay mapped, and
 * dlopen counts references, so opening again costs nothing. */
void rk__cl_api_unload(rk_cl_api_t *api) { memset(api, 0, sizeof *api); }
