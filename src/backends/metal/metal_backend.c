/* The Metal backend: devices, contexts, memory, copies and launches on the
 * default stream. See metal.h for the design. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal.h"
#include "base/error.h"
#include "base/strbuf.h"

enum { kAlign = 256 };

/* rk addresses: bit 63 and 62 set, handed out in increasing order, never
 * reused (process-wide, so a pointer of one context is never live in
 * another). */
static const uint64_t kAddressBase = (uint64_t)3 << 62;
static uint64_t g_next_address = ((uint64_t)3 << 62) + 0x10000;

static mtl_id buffer_of(const rk__alloc_t *a) {
  return (mtl_id)(uintptr_t)a->handle;
}

/* ---- Devices ------------------------------------------------------------ */

static void describe_device(const rk_objc_api_t *api, mtl_device_t *d) {
  rk_device_info_t *info = &d->info;
  memset(info, 0, sizeof *info);
  info->backend = RK_BACKEND_METAL;
  mtl_id name = rk__mtl_send(api, d->device, api->sel.name);
  snprintf(info->name, sizeof info->name, "%s", rk__mtl_utf8(api, name));
  if (!info->name[0]) snprintf(info->name, sizeof info->name, "Metal device");
  snprintf(info->vendor, sizeof info->vendor, "Apple");
  d->registry_id =
      RK_SEND(api, uint64_t, (mtl_id, mtl_sel), d->device, api->sel.registryID);
  d->unified = rk__mtl_send_bool(api, d->device, api->sel.hasUnifiedMemory);
  d->max_threads =
      rk__mtl_send_size(api, d->device, api->sel.maxThreadsPerThreadgroup);
  d->max_buffer = rk__mtl_send_ul(api, d->device, api->sel.maxBufferLength);
  info->memory_bytes = RK_SEND(api, uint64_t, (mtl_id, mtl_sel), d->device,
                               api->sel.recommendedMaxWorkingSetSize);
  unsigned long total = d->max_threads.width;
  info->max_threads_per_block = total > UINT32_MAX ? UINT32_MAX : total;
  info->shared_mem_per_block =
      rk__mtl_send_ul(api, d->device, api->sel.maxThreadgroupMemoryLength);
  /* MSL has 64-bit integers but no double; no kernel stays resident (the
   * actor layer relaunches in batches). */
  info->caps = RK_CAP_INT64;
  if (d->unified) info->caps |= RK_CAP_MAPPED_HOST_MEMORY;
  snprintf(info->arch, sizeof info->arch, "registry 0x%" PRIx64,
           d->registry_id);
}

static void release_devices(mtl_backend_t *b) {
  if (!b->devices) return;
  for (int i = 0; i < b->base.device_count; ++i)
    rk__mtl_release(b->api, b->devices[i].device);
  free(b->devices);
  b->devices = NULL;
}

static void mtl_destroy(rk_backend_t *backend) {
  mtl_backend_t *b = (mtl_backend_t *)backend;
  void *pool = rk__mtl_pool_push(b->api);
  release_devices(b);
  rk__mtl_pool_pop(b->api, pool);
  free(b);
}

static rk_status_t mtl_open(rk_backend_t **out) {
  const rk_objc_api_t *api = NULL;
  RK_RETURN_IF_ERROR(rk__mtl_api_load(&api));
  mtl_backend_t *b = calloc(1, sizeof *b);
  if (!b) return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: backend");
  b->api = api;
  void *pool = rk__mtl_pool_push(api);
  /* MTLCopyAllDevices returns a retained NSArray (the Create rule). */
  mtl_id all = api->MTLCopyAllDevices();
  unsigned long n = all ? rk__mtl_send_ul(api, all, api->sel.count) : 0;
  if (n > 64) n = 64;
  if (n) {
    b->devices = calloc(n, sizeof *b->devices);
    if (!b->devices) {
      rk__mtl_release(api, all);
      rk__mtl_pool_pop(api, pool);
      free(b);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: devices");
    }
  }
  rk__strbuf_t lib;
  rk__strbuf_init(&lib);
  rk__strbuf_printf(&lib, "Metal.framework (%s)", api->metal_path);
  for (unsigned long i = 0; i < n; ++i) {
    mtl_device_t *d = &b->devices[b->base.device_count];
    d->device = RK_SEND(api, mtl_id, (mtl_id, mtl_sel, unsigned long), all,
                        api->sel.objectAtIndex, i);
    if (!d->device) continue;
    rk__mtl_retain(api, d->device);
    describe_device(api, d);
    b->base.device_count++;
  }
  rk__mtl_release(api, all);
  rk__mtl_pool_pop(api, pool);
  snprintf(b->base.library, sizeof b->base.library, "%s",
           lib.data ? lib.data : "Metal.framework");
  rk__strbuf_free(&lib);
  *out = &b->base;
  return RK_OK;
}

static rk_status_t mtl_device_info(const rk_backend_t *backend, int device,
                                   rk_device_info_t *out) {
  const mtl_backend_t *b = (const mtl_backend_t *)backend;
  *out = b->devices[device].info;
  return RK_OK;
}

/* ---- Contexts ----------------------------------------------------------- */

static rk_status_t mtl_context_create(rk_backend_t *backend, int device,
                                      rk_context_t **out) {
  mtl_backend_t *b = (mtl_backend_t *)backend;
  mtl_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: context");
  ctx->api = b->api;
  ctx->dev = &b->devices[device];
  pthread_rwlock_init(&ctx->mem_lock, NULL);
  pthread_mutex_init(&ctx->cache_lock, NULL);
  rk_status_t s = rk__mtl_stream_new(ctx, &ctx->default_stream);
  if (s != RK_OK) {
    pthread_mutex_destroy(&ctx->cache_lock);
    pthread_rwlock_destroy(&ctx->mem_lock);
    free(ctx);
    return s;
  }
  *out = &ctx->base;
  return RK_OK;
}

static rk_status_t mtl_context_destroy(rk_context_t *context) {
  mtl_context_t *ctx = mtl_ctx(context);
  const rk_objc_api_t *api = ctx->api;
  rk_status_t s = rk__mtl_stream_free(ctx->default_stream);
  void *pool = rk__mtl_pool_push(api);
  for (size_t i = 0; i < ctx->allocs.count; ++i)
    rk__mtl_release(api, buffer_of(&ctx->allocs.items[i]));
  rk__alloc_table_release(&ctx->allocs);
  rk__mtl_cache_release(ctx);
  rk__mtl_pool_pop(api, pool);
  pthread_rwlock_destroy(&ctx->mem_lock);
  pthread_mutex_destroy(&ctx->cache_lock);
  free(ctx);
  return s;
}

static rk_status_t mtl_synchronize(rk_context_t *context) {
  return rk__mtl_stream_sync(mtl_ctx(context)->default_stream);
}

/* ---- Memory ------------------------------------------------------------- */

rk_status_t rk__mtl_resolve(mtl_context_t *ctx, rk_devptr_t ptr, size_t n,
                            mtl_id *out_buffer, size_t *out_offset) {
  pthread_rwlock_rdlock(&ctx->mem_lock);
  const rk__alloc_t *a = NULL;
  rk_status_t s = rk__alloc_table_find(&ctx->allocs, ptr, n, &a);
  if (s == RK_OK) {
    if (out_buffer) {
      *out_buffer = buffer_of(a);
      rk__mtl_retain(ctx->api, *out_buffer);
    }
    if (out_offset) *out_offset = (size_t)(ptr - a->base);
  }
  pthread_rwlock_unlock(&ctx->mem_lock);
  return s;
}

static rk_status_t mtl_allocate(rk_context_t *context, size_t bytes,
                                rk_devptr_t *out) {
  mtl_context_t *ctx = mtl_ctx(context);
  const rk_objc_api_t *api = ctx->api;
  const mtl_device_t *dev = ctx->dev;
  uint64_t limit = dev->max_buffer ? dev->max_buffer : dev->info.memory_bytes;
  if (bytes > limit || bytes > SIZE_MAX - 2 * kAlign)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: %zu bytes is more than the %llu bytes one "
                    "buffer may have on %s",
                    bytes, (unsigned long long)limit, dev->info.name);
  unsigned long options = dev->unified ? kMtlStorageShared : kMtlStoragePrivate;
  void *pool = rk__mtl_pool_push(api);
  mtl_id buffer =
      RK_SEND(api, mtl_id, (mtl_id, mtl_sel, unsigned long, unsigned long),
              dev->device, api->sel.newBufferWithLength, bytes, options);
  rk__mtl_pool_pop(api, pool);
  if (!buffer)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: newBufferWithLength:%zu failed on %s", bytes,
                    dev->info.name);
  uint64_t span = ((uint64_t)bytes + 2 * kAlign - 1) & ~(uint64_t)(kAlign - 1);
  uint64_t base = __atomic_fetch_add(&g_next_address, span, __ATOMIC_RELAXED);
  if (base < kAddressBase || base + span < base) {
    rk__mtl_release(api, buffer);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: the Metal backend's address space is used up");
  }
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_insert(&ctx->allocs, base, bytes,
                                         (uint64_t)(uintptr_t)buffer);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK) {
    rk__mtl_release(api, buffer);
    return s;
  }
  *out = base;
  return RK_OK;
}

static rk_status_t mtl_free(rk_context_t *context, rk_devptr_t ptr) {
  mtl_context_t *ctx = mtl_ctx(context);
  rk__alloc_t a;
  pthread_rwlock_wrlock(&ctx->mem_lock);
  rk_status_t s = rk__alloc_table_remove(&ctx->allocs, ptr, &a);
  pthread_rwlock_unlock(&ctx->mem_lock);
  if (s != RK_OK) return s;
  /* Command buffers retain the buffers they use: Metal deletes this one
   * once they have finished. */
  void *pool = rk__mtl_pool_push(ctx->api);
  rk__mtl_release(ctx->api, buffer_of(&a));
  rk__mtl_pool_pop(ctx->api, pool);
  return RK_OK;
}

static rk_status_t mtl_check_range(rk_context_t *context, rk_devptr_t ptr,
                                   size_t n) {
  return rk__mtl_resolve(mtl_ctx(context), ptr, n, NULL, NULL);
}

/* ---- Copies and launches ------------------------------------------------- */

static rk_status_t mtl_copy(rk_context_t *context, rk_stream_t *stream,
                            const rk__copy_t *copy) {
  if (stream) return rk__mtl_stream_copy((mtl_stream_t *)stream, copy);
  /* The default stream: after the work queued before it, done before
   * returning (errors of that work stay for the next synchronization). */
  mtl_context_t *ctx = mtl_ctx(context);
  rk__mtl_stream_drain(ctx->default_stream);
  return rk__mtl_copy_now(ctx, ctx->default_stream, copy);
}

static rk_status_t mtl_launch(rk_function_t *function, rk_dim3_t grid,
                              rk_dim3_t block, size_t shared_mem,
                              rk_stream_t *stream, rk__args_t *args) {
  mtl_context_t *ctx = mtl_ctx(function->module->context);
  mtl_launch_t launch = {function, grid, block, shared_mem, args};
  rk_status_t s = rk__mtl_check_launch(ctx, &launch);
  if (s != RK_OK) {
    rk__args_free(args);
    return s;
  }
  return rk__mtl_stream_launch(
      stream ? (mtl_stream_t *)stream : ctx->default_stream, &launch);
}

const rk__backend_vtable_t rk__metal_backend = {
    .destroy = mtl_destroy,
    .kind = RK_BACKEND_METAL,
    .name = "metal",
    .open = mtl_open,
    .device_info = mtl_device_info,
    .context_create = mtl_context_create,
    .context_destroy = mtl_context_destroy,
    .allocate = mtl_allocate,
    .free = mtl_free,
    .check_range = mtl_check_range,
    .copy = mtl_copy,
    .synchronize = mtl_synchronize,
    .compile = rk__mtl_compile,
    .module_destroy = rk__mtl_module_destroy,
    .launch = mtl_launch,
    .stream_create = rk__mtl_stream_create,
    .stream_destroy = rk__mtl_stream_destroy,
    .stream_synchronize = rk__mtl_stream_synchronize,
    /* Metal cannot keep a kernel resident safely (no forward-progress
     * guarantee, watchdog): the actor layer relaunches in batches. */
    .actor_start = NULL,
    .actor_release = NULL,
    .mapped_alloc = NULL,
    .mapped_free = NULL,
};
