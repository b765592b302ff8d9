/* Loading the Objective-C runtime and Metal.framework at run time, and the
 * few message shapes used everywhere (metal.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal.h"
#include "base/error.h"
#include "base/strbuf.h"

static const char kObjcPath[] = "/usr/lib/libobjc.A.dylib";
static const char kMetalPath[] =
    "/System/Library/Frameworks/Metal.framework/Metal";
/* NSString lives in Foundation (Metal loads it too; opened explicitly so
 * that the class exists whatever Metal links). Optional. */
static const char kFoundationPath[] =
    "/System/Library/Frameworks/Foundation.framework/Foundation";

static rk_objc_api_t g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static rk_status_t g_status;
static char g_error[2048];

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

/* dlsym in the library, then in everything loaded (libSystem's block
 * runtime on macOS). */
static void *find(void *handle, const char *name) {
  void *p = dlsym(handle, name);
  return p ? p : dlsym(RTLD_DEFAULT, name);
}

static void load_once(void) {
  rk_objc_api_t *a = &g_api;
  const char *objc = env_or("RK_METAL_OBJC_LIB", kObjcPath);
  const char *metal = env_or("RK_METAL_LIB", kMetalPath);
  snprintf(a->objc_path, sizeof a->objc_path, "%s", objc);
  snprintf(a->metal_path, sizeof a->metal_path, "%s", metal);
  rk__strbuf_t why;
  rk__strbuf_init(&why);
  a->objc_handle = dlopen(objc, RTLD_NOW | RTLD_LOCAL);
  if (!a->objc_handle) {
    const char *e = dlerror();
    rk__strbuf_printf(&why, "\n  %s", e ? e : objc);
  }
  a->metal_handle = dlopen(metal, RTLD_NOW | RTLD_LOCAL);
  if (!a->metal_handle) {
    const char *e = dlerror();
    rk__strbuf_printf(&why, "\n  %s", e ? e : metal);
  }
  if (!a->objc_handle || !a->metal_handle) {
    snprintf(g_error, sizeof g_error,
             "Metal.framework and the Objective-C runtime could not be "
             "loaded (Metal exists on macOS only; tried:%s)",
             why.data ? why.data : "");
    rk__strbuf_free(&why);
    g_status = RK_ERR_UNAVAILABLE;
    return;
  }
  rk__strbuf_free(&why);
  if (strcmp(metal, kMetalPath) == 0)
    (void)dlopen(kFoundationPath, RTLD_NOW | RTLD_LOCAL);

  const char *missing = NULL;
#define NEED_(field, handle, name)         \
  do {                                     \
    void *sym_ = find(handle, name);       \
    memcpy(&a->field, &sym_, sizeof sym_); \
    if (!sym_ && !missing) missing = name; \
  } while (0)
  NEED_(objc_getClass, a->objc_handle, "objc_getClass");
  NEED_(sel_registerName, a->objc_handle, "sel_registerName");
  NEED_(objc_msgSend, a->objc_handle, "objc_msgSend");
  NEED_(objc_autoreleasePoolPush, a->objc_handle, "objc_autoreleasePoolPush");
  NEED_(objc_autoreleasePoolPop, a->objc_handle, "objc_autoreleasePoolPop");
  NEED_(MTLCopyAllDevices, a->metal_handle, "MTLCopyAllDevices");
  NEED_(stack_block_isa, a->objc_handle, "_NSConcreteStackBlock");
#if defined(__x86_64__)
  NEED_(objc_msgSend_stret, a->objc_handle, "objc_msgSend_stret");
#endif
#undef NEED_
  if (!missing) {
    a->NSString = a->objc_getClass("NSString");
    a->MTLCompileOptions = a->objc_getClass("MTLCompileOptions");
    if (!a->NSString) missing = "class NSString";
    if (!a->MTLCompileOptions) missing = "class MTLCompileOptions";
  }
  if (missing) {
    snprintf(g_error, sizeof g_error,
             "%s is missing from %s / %s (not the Objective-C runtime "
             "and Metal.framework rk expects)",
             missing, objc, metal);
    g_status = RK_ERR_UNAVAILABLE;
    return;
  }
#define RK_MTL_SEL_LOAD_(field, name) a->sel.field = a->sel_registerName(name);
  RK_MTL_SELECTORS(RK_MTL_SEL_LOAD_)
#undef RK_MTL_SEL_LOAD_
  g_status = RK_OK;
}

rk_status_t rk__mtl_api_load(const rk_objc_api_t **out) {
  pthread_once(&g_once, load_once);
  if (g_status != RK_OK) return rk__fail(g_status, "%s", g_error);
  *out = &g_api;
  return RK_OK;
}

mtl_id rk__mtl_send(const rk_objc_api_t *api, mtl_id obj, mtl_sel sel) {
  return RK_SEND(api, mtl_id, (mtl_id, mtl_sel), obj, sel);
}

unsigned long rk__mtl_send_ul(const rk_objc_api_t *api, mtl_id obj,
                              mtl_sel sel) {
  return RK_SEND(api, unsigned long, (mtl_id, mtl_sel), obj, sel);
}

bool rk__mtl_send_bool(const rk_objc_api_t *api, mtl_id obj, mtl_sel sel) {
  /* BOOL is a signed char on x86-64 and a bool on arm64: either way the
   * low byte holds it. */
  return RK_SEND(api, unsigned char, (mtl_id, mtl_sel), obj, sel) != 0;
}

mtl_size_t rk__mtl_send_size(const rk_objc_api_t *api, mtl_id obj,
                             mtl_sel sel) {
#if defined(__x86_64__)
  /* A 24-byte struct comes back in memory: objc_msgSend_stret, with the
   * result's address first. */
  mtl_size_t out;
  ((void (*)(mtl_size_t *, mtl_id, mtl_sel))api->objc_msgSend_stret)(&out, obj,
                                                                     sel);
  return out;
#else
  /* arm64: objc_msgSend returns structs of any size (x8 holds the
   * address of a large one). */
  return RK_SEND(api, mtl_size_t, (mtl_id, mtl_sel), obj, sel);
#endif
}

void rk__mtl_release(const rk_objc_api_t *api, mtl_id obj) {
  if (obj) RK_SEND(api, void, (mtl_id, mtl_sel), obj, api->sel.release);
}

void rk__mtl_retain(const rk_objc_api_t *api, mtl_id obj) {
  if (obj) (void)RK_SEND(api, mtl_id, (mtl_id, mtl_sel), obj, api->sel.retain);
}

mtl_id rk__mtl_string(const rk_objc_api_t *api, const char *s) {
  return RK_SEND(api, mtl_id, (mtl_id, mtl_sel, const char *), api->NSString,
                 api->sel.stringWithUTF8String, s);
}

const char *rk__mtl_utf8(const rk_objc_api_t *api, mtl_id string) {
  if (!string) return "";
  const char *s = RK_SEND(api, const char *, (mtl_id, mtl_sel), string,
                          api->sel.UTF8String);
  return s ? s : "";
}

const char *rk__mtl_error_text(const rk_objc_api_t *api, mtl_id error,
                               const char *fallback) {
  if (!error) return fallback;
  mtl_id desc = rk__mtl_send(api, error, api->sel.localizedDescription);
  const char *s = rk__mtl_utf8(api, desc);
  return *s ? s : fallback;
}
