/* The WebGPU backend: adapters as devices, contexts (one WGPUDevice each),
 * error callbacks, waiting, and the vtable. */
#include "backends/webgpu/webgpu_backend.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/sys.h"

static const char *const kBackendTypeNames[] = {
    "undefined", "null",   "WebGPU", "D3D11",   "D3D12",
    "Metal",     "Vulkan", "OpenGL", "OpenGLES"};

/* PCI (and Khronos) vendor ids; NULL when unknown. */
static const char *vendor_name(uint32_t id) {
  switch (id) {
    case 0x1002:
      return "AMD";
    case 0x10DE:
      return "NVIDIA";
    case 0x8086:
      return "Intel";
    case 0x106B:
      return "Apple";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x1010:
      return "Imagination";
    case 0x10005:
      return "Mesa";
    default:
      return NULL;
  }
}

static const char *backend_type_name(uint32_t t) {
  return t < sizeof kBackendTypeNames / sizeof kBackendTypeNames[0]
             ? kBackendTypeNames[t]
             : "unknown";
}

/* ---- Adapters ----------------------------------------------------------- */

typedef struct adapter_request {
  int done;
  WGPUAdapter adapter;
  char msg[512];
} adapter_request_t;

static void on_adapter(uint32_t status, WGPUAdapter adapter,
                       WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  adapter_request_t *r = u1;
  if (status == RK_WGPU_REQUEST_SUCCESS) r->adapter = adapter;
  rk__wgpu_str(message, r->msg, sizeof r->msg);
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* Every adapter (wgpu-native can enumerate them), or the default one. */
static size_t find_adapters(wg_backend_t *be, WGPUAdapter **out) {
  const rk__wgpu_procs_t *p = be->p;
  *out = NULL;
  if (p->wgpuInstanceEnumerateAdapters) {
    WGPUInstanceEnumerateAdapterOptions o = {NULL, RK_WGPU_BACKENDS_PRIMARY};
    size_t n = p->wgpuInstanceEnumerateAdapters(be->instance, &o, NULL);
    if (n > 0) {
      *out = calloc(n, sizeof **out);
      if (!*out) return 0;
      return p->wgpuInstanceEnumerateAdapters(be->instance, &o, *out);
    }
    return 0;
  }
  adapter_request_t r = {0, NULL, ""};
  WGPURequestAdapterOptions o;
  memset(&o, 0, sizeof o);
  o.featureLevel = RK_WGPU_FEATURE_LEVEL_CORE;
  WGPURequestAdapterCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_adapter, &r, NULL};
  p->wgpuInstanceRequestAdapter(be->instance, &o, ci);
  for (int i = 0; i < 100000 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
       ++i) {
    p->wgpuInstanceProcessEvents(be->instance);
    if (i > 100) sched_yield();
  }
  if (!r.adapter) return 0;
  *out = calloc(1, sizeof **out);
  if (!*out) return 0;
  (*out)[0] = r.adapter;
  return 1;
}

static void fill_info(wg_backend_t *be, int d) {
  const rk__wgpu_procs_t *p = be->p;
  rk_device_info_t *info = &be->infos[d];
  WGPULimits *lim = &be->limits[d];
  memset(info, 0, sizeof *info);
  memset(lim, 0, sizeof *lim);
  p->wgpuAdapterGetLimits(be->adapters[d], lim);
  WGPUAdapterInfo ai;
  memset(&ai, 0, sizeof ai);
  info->backend = RK_BACKEND_WEBGPU;
  if (p->wgpuAdapterGetInfo(be->adapters[d], &ai) == RK_WGPU_STATUS_SUCCESS) {
    char dev[100], vendor[64];
    rk__wgpu_str(ai.device, dev, sizeof dev);
    rk__wgpu_str(ai.vendor, vendor, sizeof vendor);
    snprintf(info->name, sizeof info->name, "%s (%s)",
             dev[0] ? dev : "WebGPU adapter",
             backend_type_name(ai.backendType));
    const char *known = vendor_name(ai.vendorID);
    if (known)
      snprintf(info->vendor, sizeof info->vendor, "%s", known);
    else if (vendor[0])
      snprintf(info->vendor, sizeof info->vendor, "%s", vendor);
    else
      snprintf(info->vendor, sizeof info->vendor, "0x%04x", ai.vendorID);
    snprintf(be->backend_names[d], sizeof be->backend_names[d], "%s",
             backend_type_name(ai.backendType));
    if (ai.adapterType == RK_WGPU_ADAPTER_TYPE_CPU)
      info->caps |= RK_CAP_SOFTWARE;
    p->wgpuAdapterInfoFreeMembers(ai);
  } else {
    snprintf(info->name, sizeof info->name, "WebGPU adapter %d", d);
    snprintf(info->vendor, sizeof info->vendor, "unknown");
  }
  /* WebGPU does not report compute units or memory: the largest buffer
   * stands for the memory, which is what an allocation can get. */
  info->compute_units = 0;
  info->memory_bytes = lim->maxBufferSize;
  info->max_threads_per_block = lim->maxComputeInvocationsPerWorkgroup;
  info->shared_mem_per_block = lim->maxComputeWorkgroupStorageSize;
}

/* Adapters are enumerated once per process and implementation: the
 * enumeration is slow (tens of milliseconds: Vulkan instances, Mesa's
 * layers) and the devices do not change while a process runs. Entries and
 * their adapters live until the process ends; backends share them. */
typedef struct adapter_list {
  const rk__wgpu_procs_t *p;
  struct adapter_list *next;
  size_t count;
  WGPUAdapter *adapters;
  WGPULimits *limits;
  rk_device_info_t *infos;
  char (*backend_names)[16];
} adapter_list_t;

static pthread_mutex_t g_adapters_lock = PTHREAD_MUTEX_INITIALIZER;
static adapter_list_t *g_adapter_lists;

/* Enumerates the adapters of be->instance into a new list. What the
 * implementation prints meanwhile (Mesa's Vulkan layers complain about
 * XDG_RUNTIME_DIR on headless machines) is captured into the debug log
 * (RK_LOG=debug). */
static rk_status_t enumerate(wg_backend_t *be, adapter_list_t **out) {
  adapter_list_t *l = calloc(1, sizeof *l);
  if (!l) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: adapters");
  l->p = be->p;
  rk__capture_t cap;
  rk__capture_begin(&cap);
  size_t n = find_adapters(be, &l->adapters);
  if (n > 0) {
    l->limits = calloc(n, sizeof *l->limits);
    l->infos = calloc(n, sizeof *l->infos);
    l->backend_names = calloc(n, sizeof *l->backend_names);
  }
  bool ok = n == 0 || (l->limits && l->infos && l->backend_names);
  if (ok) {
    be->adapters = l->adapters;
    be->limits = l->limits;
    be->infos = l->infos;
    be->backend_names = l->backend_names;
    for (size_t d = 0; d < n; ++d) fill_info(be, (int)d);
  }
  rk__capture_end(&cap, "webgpu", NULL, 0);
  if (!ok) {
    for (size_t d = 0; d < n; ++d)
      if (l->adapters[d]) be->p->wgpuAdapterRelease(l->adapters[d]);
    free(l->adapters);
    free(l->limits);
    free(l->infos);
    free(l->backend_names);
    free(l);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: adapters");
  }
  l->count = n;
  *out = l;
  return RK_OK;
}

static void wg_destroy(rk_backend_t *backend) {
  /* The adapters belong to the process-wide list. */
  free(backend);
}

static rk_status_t wg_open(rk_backend_t **out) {
  const rk__wgpu_procs_t *p = NULL;
  RK_RETURN_IF_ERROR(rk__wgpu_load(&p));
  wg_backend_t *be = calloc(1, sizeof *be);
  if (!be) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: opening");
  be->p = p;
  rk__capture_t cap;
  rk__capture_begin(&cap);
  be->instance = rk__wgpu_instance(p);
  char said[512];
  rk__capture_end(&cap, "webgpu", said, sizeof said);
  if (!be->instance) {
    free(be);
    return rk__fail(RK_ERR_UNAVAILABLE, "%s: wgpuCreateInstance failed%s%s",
                    p->path, said[0] ? ": " : "", said);
  }
  pthread_mutex_lock(&g_adapters_lock);
  adapter_list_t *l = g_adapter_lists;
  while (l && l->p != p) l = l->next;
  rk_status_t s = RK_OK;
  if (!l) {
    s = enumerate(be, &l);
    if (s == RK_OK) {
      l->next = g_adapter_lists;
      g_adapter_lists = l;
    }
  }
  pthread_mutex_unlock(&g_adapters_lock);
  if (s != RK_OK) {
    free(be);
    return s;
  }
  be->adapters = l->adapters;
  be->limits = l->limits;
  be->infos = l->infos;
  be->backend_names = l->backend_names;
  be->base.device_count = (int)l->count;
  if (p->version)
    snprintf(be->base.library, sizeof be->base.library,
             "wgpu-native %u.%u.%u.%u (%.900s)", p->version >> 24,
             (p->version >> 16) & 0xff, (p->version >> 8) & 0xff,
             p->version & 0xff, p->path);
  else
    snprintf(be->base.library, sizeof be->base.library, "%.900s", p->path);
  *out = &be->base;
  return RK_OK;
}

static rk_status_t wg_device_info(const rk_backend_t *backend, int device,
                                  rk_device_info_t *out) {
  *out = ((const wg_backend_t *)backend)->infos[device];
  return RK_OK;
}

/* ---- Errors ------------------------------------------------------------- */

static rk_status_t error_status(uint32_t type, rk_status_t otherwise) {
  if (type == RK_WGPU_ERROR_OUT_OF_MEMORY) return RK_ERR_OUT_OF_MEMORY;
  if (type == RK_WGPU_ERROR_INTERNAL) return RK_ERR_INTERNAL;
  return otherwise;
}

static void on_uncaptured(const WGPUDevice *device, uint32_t type,
                          WGPUStringView message, void *u1, void *u2) {
  (void)device;
  (void)u2;
  wg_context_t *ctx = u1;
  char msg[1900];
  rk__wgpu_str(message, msg, sizeof msg);
  char full[2048];
  snprintf(full, sizeof full, "webgpu: %s error: %s",
           type == RK_WGPU_ERROR_VALIDATION      ? "validation"
           : type == RK_WGPU_ERROR_OUT_OF_MEMORY ? "out-of-memory"
                                                 : "internal",
           msg);
  rk__pending_record(&ctx->pending, error_status(type, RK_ERR_LAUNCH), full);
}

static void on_lost(const WGPUDevice *device, uint32_t reason,
                    WGPUStringView message, void *u1, void *u2) {
  (void)device;
  (void)u2;
  /* Releasing the device ends it too; only a real loss is an error. */
  if (reason == RK_WGPU_LOST_DESTROYED ||
      reason == RK_WGPU_LOST_CALLBACK_CANCELLED)
    return;
  wg_context_t *ctx = u1;
  char msg[900];
  rk__wgpu_str(message, msg, sizeof msg);
  char full[sizeof ctx->lost_msg];
  snprintf(full, sizeof full, "webgpu: device lost: %s",
           msg[0] ? msg : "(no message)");
  pthread_mutex_lock(&ctx->lost_lock);
  memcpy(ctx->lost_msg, full, sizeof full);
  __atomic_store_n(&ctx->lost, true, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&ctx->lost_lock);
  rk__pending_record(&ctx->pending, RK_ERR_DEVICE_LOST, full);
}

static rk_status_t check_lost(wg_context_t *ctx) {
  if (!__atomic_load_n(&ctx->lost, __ATOMIC_ACQUIRE)) return RK_OK;
  pthread_mutex_lock(&ctx->lost_lock);
  rk_status_t s = rk__fail(RK_ERR_DEVICE_LOST, "%s", ctx->lost_msg);
  pthread_mutex_unlock(&ctx->lost_lock);
  return s;
}

rk_status_t rk__wg_wait(wg_context_t *ctx, const int *flag, bool gpu) {
  const rk__wgpu_procs_t *p = ctx->p;
  uint64_t start = rk__now_ns();
  for (unsigned i = 0; !__atomic_load_n(flag, __ATOMIC_ACQUIRE); ++i) {
    if (gpu && p->wgpuDevicePoll)
      p->wgpuDevicePoll(ctx->device, 1, NULL);
    else if (p->wgpuDevicePoll)
      p->wgpuDevicePoll(ctx->device, 0, NULL);
    p->wgpuInstanceProcessEvents(ctx->instance);
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE)) break;
    RK_RETURN_IF_ERROR(check_lost(ctx));
    if (i > 64) sched_yield();
    /* Callbacks that need no GPU work come within a few polls; give up on
     * them after a minute rather than hang. GPU work may take as long as
     * it takes. */
    if (!gpu && rk__now_ns() - start > 60ull * 1000000000ull)
      return rk__fail(RK_ERR_TIMEOUT,
                      "webgpu: the implementation did not answer within a "
                      "minute");
  }
  return RK_OK;
}

typedef struct scope_result {
  int done;
  uint32_t status, type;
  char msg[4096];
} scope_result_t;

static void on_pop(uint32_t status, uint32_t type, WGPUStringView message,
                   void *u1, void *u2) {
  (void)u2;
  scope_result_t *r = u1;
  r->status = status;
  r->type = type;
  rk__wgpu_str(message, r->msg, sizeof r->msg);
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

rk_status_t rk__wg_pop_scope(wg_context_t *ctx, rk_status_t status, char *msg,
                             size_t cap) {
  scope_result_t *r = calloc(1, sizeof *r);
  if (!r) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: error scope");
  WGPUPopErrorScopeCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_pop, r, NULL};
  ctx->p->wgpuDevicePopErrorScope(ctx->device, ci);
  rk_status_t s = rk__wg_wait(ctx, &r->done, false);
  if (s == RK_OK && r->status == RK_WGPU_STATUS_SUCCESS &&
      r->type != RK_WGPU_ERROR_NONE) {
    snprintf(msg, cap, "%s", r->msg[0] ? r->msg : "(no message)");
    s = error_status(r->type, status);
  } else if (cap) {
    msg[0] = '\0';
  }
  free(r);
  return s;
}

/* ---- Contexts ----------------------------------------------------------- */

typedef struct device_request {
  int done;
  WGPUDevice device;
  char msg[512];
} device_request_t;

static void on_device(uint32_t status, WGPUDevice device,
                      WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  device_request_t *r = u1;
  if (status == RK_WGPU_REQUEST_SUCCESS) r->device = device;
  rk__wgpu_str(message, r->msg, sizeof r->msg);
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static WGPUBuffer make_buffer(wg_context_t *ctx, uint64_t size,
                              WGPUBufferUsage usage, const char *label) {
  WGPUBufferDescriptor d;
  memset(&d, 0, sizeof d);
  d.label.data = label;
  d.label.length = RK_WGPU_STRLEN;
  d.usage = usage;
  d.size = size;
  return ctx->p->wgpuDeviceCreateBuffer(ctx->device, &d);
}

enum { kSlabBytes = 1 << 20 };

/* The loop guard's buffer, layout and bind group (wg_context_t.guard). */
static rk_status_t make_guard(wg_context_t *ctx) {
  const rk__wgpu_procs_t *p = ctx->p;
  ctx->guard_slot = ctx->align;
  ctx->guard_names = calloc(kWgGuardSlots, sizeof *ctx->guard_names);
  ctx->guard = make_buffer(
      ctx, (uint64_t)kWgGuardSlots * ctx->guard_slot,
      RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_SRC | RK_WGPU_USAGE_COPY_DST,
      "rk loop guard");
  if (!ctx->guard_names || !ctx->guard)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: no loop guard buffer");
  WGPUBindGroupLayoutEntry le;
  memset(&le, 0, sizeof le);
  le.binding = 0;
  le.visibility = RK_WGPU_STAGE_COMPUTE;
  le.buffer.type = RK_WGPU_BINDING_STORAGE;
  le.buffer.hasDynamicOffset = 1;
  le.buffer.minBindingSize = 16;
  WGPUBindGroupLayoutDescriptor ld;
  memset(&ld, 0, sizeof ld);
  ld.entryCount = 1;
  ld.entries = &le;
  ctx->guard_bgl = p->wgpuDeviceCreateBindGroupLayout(ctx->device, &ld);
  if (!ctx->guard_bgl)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: no loop guard layout");
  WGPUBindGroupEntry be;
  memset(&be, 0, sizeof be);
  be.binding = 0;
  be.buffer = ctx->guard;
  be.offset = 0;
  be.size = 16;
  WGPUBindGroupDescriptor gd;
  memset(&gd, 0, sizeof gd);
  gd.layout = ctx->guard_bgl;
  gd.entryCount = 1;
  gd.entries = &be;
  ctx->guard_group = p->wgpuDeviceCreateBindGroup(ctx->device, &gd);
  if (!ctx->guard_group)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: no loop guard bind group");
  return RK_OK;
}

static rk_status_t wg_context_destroy(rk_context_t *context);

static rk_status_t wg_context_create(rk_backend_t *backend, int device,
                                     rk_context_t **out) {
  wg_backend_t *be = (wg_backend_t *)backend;
  const rk__wgpu_procs_t *p = be->p;
  wg_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: context");
  ctx->p = p;
  ctx->instance = be->instance;
  ctx->limits = be->limits[device];
  ctx->limits.nextInChain = NULL;
  pthread_mutex_init(&ctx->lock, NULL);
  rk__pending_init(&ctx->pending);
  pthread_mutex_init(&ctx->lost_lock, NULL);

  device_request_t r = {0, NULL, ""};
  WGPUDeviceDescriptor d;
  memset(&d, 0, sizeof d);
  d.label.data = "rk";
  d.label.length = RK_WGPU_STRLEN;
  d.requiredLimits = &ctx->limits; /* everything the adapter offers */
  d.deviceLostCallbackInfo.mode = RK_WGPU_CALLBACK_MODE_ALLOW_SPONTANEOUS;
  d.deviceLostCallbackInfo.callback = on_lost;
  d.deviceLostCallbackInfo.userdata1 = ctx;
  d.uncapturedErrorCallbackInfo.callback = on_uncaptured;
  d.uncapturedErrorCallbackInfo.userdata1 = ctx;
  WGPURequestDeviceCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_device, &r, NULL};
  p->wgpuAdapterRequestDevice(be->adapters[device], &d, ci);
  for (int i = 0; i < 1000000 && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
       ++i) {
    p->wgpuInstanceProcessEvents(ctx->instance);
    if (i > 100) sched_yield();
  }
  if (!r.device) {
    pthread_mutex_destroy(&ctx->lock);
    rk__pending_destroy(&ctx->pending);
    pthread_mutex_destroy(&ctx->lost_lock);
    free(ctx);
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "webgpu: the adapter '%s' gave no device: %s",
                    be->infos[device].name, r.msg[0] ? r.msg : "no reason");
  }
  ctx->device = r.device;
  ctx->queue = p->wgpuDeviceGetQueue(ctx->device);
  ctx->align = ctx->limits.minStorageBufferOffsetAlignment;
  if (ctx->align < 16) ctx->align = 16;
  ctx->slab_size = kSlabBytes;
  ctx->slab = make_buffer(ctx, ctx->slab_size,
                          RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_DST,
                          "rk parameters");
  ctx->dummy = make_buffer(
      ctx, kNullBytes,
      RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_DST | RK_WGPU_USAGE_COPY_SRC,
      "rk null");
  ctx->dummy_ro = make_buffer(ctx, kNullBytes,
                              RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_DST,
                              "rk null (const)");
  if (!ctx->queue || !ctx->slab || !ctx->dummy || !ctx->dummy_ro) {
    wg_context_destroy(&ctx->base);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "webgpu: creating the context's queue and buffers");
  }
  /* llvmpipe (Mesa's software rasterizer behind lavapipe) ends every loop
   * of an invocation once the invocation has run 65535 iterations in all,
   * and reports nothing (see docs/webgpu.md). */
  snprintf(ctx->adapter, sizeof ctx->adapter, "%s", be->infos[device].name);
  if (strstr(be->infos[device].name, "llvmpipe")) {
    ctx->base.loop_limit = 65535;
    if (make_guard(ctx) != RK_OK) {
      char keep[1024];
      snprintf(keep, sizeof keep, "%s", rk_last_error());
      wg_context_destroy(&ctx->base);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "%s", keep);
    }
  }
  *out = &ctx->base;
  return RK_OK;
}

static rk_status_t wg_context_destroy(rk_context_t *context) {
  wg_context_t *ctx = wg_ctx(context);
  const rk__wgpu_procs_t *p = ctx->p;
  rk_status_t s = RK_OK;
  if (ctx->queue) s = rk__wg_guard_check(ctx, true);
  rk_status_t pending = rk__pending_take(&ctx->pending);
  if (pending != RK_OK) s = pending;
  rk__wg_cache_drop(ctx, 0, NULL);
  if (ctx->pass) p->wgpuComputePassEncoderRelease(ctx->pass);
  if (ctx->encoder) p->wgpuCommandEncoderRelease(ctx->encoder);
  for (size_t i = 0; i < ctx->nallocs; ++i)
    p->wgpuBufferRelease(ctx->allocs[i].buffer);
  free(ctx->allocs);
  if (ctx->slab) p->wgpuBufferRelease(ctx->slab);
  if (ctx->staging) p->wgpuBufferRelease(ctx->staging);
  if (ctx->dummy) p->wgpuBufferRelease(ctx->dummy);
  if (ctx->dummy_ro) p->wgpuBufferRelease(ctx->dummy_ro);
  if (ctx->guard_group) p->wgpuBindGroupRelease(ctx->guard_group);
  if (ctx->guard_bgl) p->wgpuBindGroupLayoutRelease(ctx->guard_bgl);
  if (ctx->guard) p->wgpuBufferRelease(ctx->guard);
  free(ctx->guard_names);
  if (ctx->queue) p->wgpuQueueRelease(ctx->queue);
  if (ctx->device) p->wgpuDeviceRelease(ctx->device);
  /* A pending error message may still be needed by the caller. */
  char keep[2048] = "";
  if (s != RK_OK) snprintf(keep, sizeof keep, "%s", rk_last_error());
  pthread_mutex_destroy(&ctx->lock);
  rk__pending_destroy(&ctx->pending);
  pthread_mutex_destroy(&ctx->lost_lock);
  free(ctx);
  if (s != RK_OK) return rk__fail(s, "%s", keep);
  return RK_OK;
}

/* ---- Memory and copies (see webgpu_memory.c) ----------------------------- */

static rk_status_t wg_allocate(rk_context_t *context, size_t bytes,
                               rk_devptr_t *out) {
  wg_context_t *ctx = wg_ctx(context);
  RK_RETURN_IF_ERROR(check_lost(ctx));
  pthread_mutex_lock(&ctx->lock);
  rk_status_t s = rk__wg_allocate(ctx, bytes, out);
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

static rk_status_t wg_free(rk_context_t *context, rk_devptr_t ptr) {
  wg_context_t *ctx = wg_ctx(context);
  pthread_mutex_lock(&ctx->lock);
  rk_status_t s = rk__wg_free(ctx, ptr);
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

static rk_status_t wg_check_range(rk_context_t *context, rk_devptr_t ptr,
                                  size_t n) {
  wg_context_t *ctx = wg_ctx(context);
  pthread_mutex_lock(&ctx->lock);
  wg_alloc_t *a;
  uint64_t off;
  rk_status_t s = rk__wg_lookup(ctx, ptr, n, &a, &off);
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

static rk_status_t wg_copy(rk_context_t *context, rk_stream_t *stream,
                           const rk__copy_t *copy) {
  if (stream) return rk__wg_stream_copy(stream, copy);
  wg_context_t *ctx = wg_ctx(context);
  RK_RETURN_IF_ERROR(check_lost(ctx));
  pthread_mutex_lock(&ctx->lock);
  rk_status_t s = rk__wg_copy(ctx, copy);
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

static rk_status_t wg_synchronize(rk_context_t *context) {
  wg_context_t *ctx = wg_ctx(context);
  rk_status_t s = rk__wg_guard_check(ctx, true);
  rk_status_t pending = rk__pending_take(&ctx->pending);
  return pending != RK_OK ? pending : s;
}

static rk_status_t wg_launch(rk_function_t *function, rk_dim3_t grid,
                             rk_dim3_t block, size_t shared_mem,
                             rk_stream_t *stream, rk__args_t *args) {
  if (stream)
    return rk__wg_stream_launch(stream, function, grid, block, shared_mem,
                                args);
  wg_context_t *ctx = wg_ctx(function->module->context);
  rk_status_t s = check_lost(ctx);
  if (s == RK_OK) {
    pthread_mutex_lock(&ctx->lock);
    s = rk__wg_launch_locked(ctx, rk__wg_function(function), grid, block,
                             shared_mem, args);
    pthread_mutex_unlock(&ctx->lock);
  }
  rk__args_free(args);
  return s;
}

const rk__backend_vtable_t rk__webgpu_backend = {
    .destroy = wg_destroy,
    .kind = RK_BACKEND_WEBGPU,
    .name = "webgpu",
    .open = wg_open,
    .device_info = wg_device_info,
    .context_create = wg_context_create,
    .context_destroy = wg_context_destroy,
    .allocate = wg_allocate,
    .free = wg_free,
    .check_range = wg_check_range,
    .copy = wg_copy,
    .synchronize = wg_synchronize,
    .compile = rk__wg_compile,
    .module_destroy = rk__wg_module_destroy,
    .launch = wg_launch,
    .stream_create = rk__wg_stream_create,
    .stream_destroy = rk__wg_stream_destroy,
    .stream_synchronize = rk__wg_stream_synchronize,
    /* No resident kernels: the actor layer relaunches handlers instead. */
    .actor_start = NULL,
    .actor_release = NULL,
    .mapped_alloc = NULL,
    .mapped_free = NULL,
};
