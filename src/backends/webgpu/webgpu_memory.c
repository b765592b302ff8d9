/* WebGPU device memory: one buffer per allocation, and copies.
 *
 * A device pointer is
 *
 *   bits 63..60  0xB (so host addresses and other backends' pointers never
 *                look like one)
 *   bits 59..36  the allocation's id (process-wide, never reused until the
 *                24-bit counter wraps)
 *   bits 35..0   the byte offset in the allocation
 *
 * so allocations are at most 64 GiB (and at most the device's maxBufferSize)
 * and `ptr + k` is an offset into the same allocation, as rk promises.
 *
 * Buffers are padded to a multiple of 256 bytes: WebGPU copies and writes
 * move whole 4-byte words, and unaligned copies are widened to words (the
 * bytes around the range are read first and written back unchanged).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/webgpu/webgpu_backend.h"
#include "base/error.h"

#define TAG_SHIFT 60
#define TAG 0xBull
#define ID_SHIFT 36
#define ID_MASK 0xFFFFFFull
#define OFFSET_MASK ((1ull << ID_SHIFT) - 1)

static uint32_t g_next_id = 1;

static uint32_t next_id(void) {
  for (;;) {
    uint32_t id =
        __atomic_fetch_add(&g_next_id, 1, __ATOMIC_RELAXED) & (uint32_t)ID_MASK;
    if (id != 0) return id;
  }
}

static rk_devptr_t encode(uint32_t id, uint64_t offset) {
  return (TAG << TAG_SHIFT) | ((uint64_t)id << ID_SHIFT) | offset;
}

/* Index of the allocation with `id`, or -1. */
static ptrdiff_t find(const wg_context_t *ctx, uint32_t id) {
  size_t lo = 0, hi = ctx->nallocs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ctx->allocs[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < ctx->nallocs && ctx->allocs[lo].id == id ? (ptrdiff_t)lo : -1;
}

rk_status_t rk__wg_allocate(wg_context_t *ctx, size_t bytes, rk_devptr_t *out) {
  uint64_t max = ctx->limits.maxBufferSize;
  if (max > OFFSET_MASK + 1) max = OFFSET_MASK + 1;
  if ((uint64_t)bytes > max - 256)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "webgpu: cannot allocate %zu bytes: the device's largest "
                    "buffer is %llu bytes",
                    bytes, (unsigned long long)ctx->limits.maxBufferSize);
  if (ctx->nallocs == ctx->cap) {
    size_t cap = ctx->cap ? ctx->cap * 2 : 64;
    wg_alloc_t *a = realloc(ctx->allocs, cap * sizeof *a);
    if (!a) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: allocation table");
    ctx->allocs = a;
    ctx->cap = cap;
  }
  uint64_t padded = ((uint64_t)bytes + 255) & ~(uint64_t)255;
  char label[64];
  uint32_t id = next_id();
  snprintf(label, sizeof label, "rk allocation %u", id);
  WGPUBufferDescriptor d;
  memset(&d, 0, sizeof d);
  d.label.data = label;
  d.label.length = RK_WGPU_STRLEN;
  d.usage =
      RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_SRC | RK_WGPU_USAGE_COPY_DST;
  d.size = padded;
  ctx->p->wgpuDevicePushErrorScope(ctx->device,
                                   RK_WGPU_ERROR_FILTER_OUT_OF_MEMORY);
  WGPUBuffer buf = ctx->p->wgpuDeviceCreateBuffer(ctx->device, &d);
  char msg[1024];
  rk_status_t s = rk__wg_pop_scope(ctx, RK_ERR_OUT_OF_MEMORY, msg, sizeof msg);
  if (s != RK_OK || !buf) {
    if (buf) ctx->p->wgpuBufferRelease(buf);
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "webgpu: cannot allocate %zu bytes: %s", bytes,
                    s != RK_OK ? msg : "wgpuDeviceCreateBuffer failed");
  }
  /* Ids only grow (until the counter wraps), so this is nearly always an
   * append. */
  size_t at = ctx->nallocs;
  while (at > 0 && ctx->allocs[at - 1].id > id) --at;
  memmove(&ctx->allocs[at + 1], &ctx->allocs[at],
          (ctx->nallocs - at) * sizeof *ctx->allocs);
  ctx->allocs[at] = (wg_alloc_t){id, buf, bytes, padded};
  ctx->nallocs++;
  *out = encode(id, 0);
  return RK_OK;
}

static rk_status_t not_live(rk_devptr_t ptr) {
  return rk__fail(RK_ERR_INVALID_ARGUMENT,
                  "device pointer 0x%llx is not inside a live allocation of "
                  "this context (freed, foreign or never allocated)",
                  (unsigned long long)ptr);
}

rk_status_t rk__wg_lookup(wg_context_t *ctx, rk_devptr_t ptr, size_t n,
                          wg_alloc_t **out_alloc, uint64_t *out_offset) {
  if ((ptr >> TAG_SHIFT) != TAG) return not_live(ptr);
  ptrdiff_t i = find(ctx, (uint32_t)((ptr >> ID_SHIFT) & ID_MASK));
  if (i < 0) return not_live(ptr);
  wg_alloc_t *a = &ctx->allocs[i];
  uint64_t offset = ptr & OFFSET_MASK;
  if (offset >= a->size) return not_live(ptr);
  if ((uint64_t)n > a->size - offset)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%zu bytes at offset %llu run past the end of the "
                    "%llu-byte allocation at 0x%llx",
                    n, (unsigned long long)offset, (unsigned long long)a->size,
                    (unsigned long long)encode(a->id, 0));
  *out_alloc = a;
  *out_offset = offset;
  return RK_OK;
}

rk_status_t rk__wg_free(wg_context_t *ctx, rk_devptr_t ptr) {
  ptrdiff_t i = (ptr >> TAG_SHIFT) == TAG
                    ? find(ctx, (uint32_t)((ptr >> ID_SHIFT) & ID_MASK))
                    : -1;
  if (i < 0 || (ptr & OFFSET_MASK) != 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "free: 0x%llx is not the start of a live allocation of "
                    "this context",
                    (unsigned long long)ptr);
  wg_alloc_t a = ctx->allocs[i];
  rk__wg_cache_drop(ctx, a.id, NULL);
  /* Release, not destroy: work already recorded or submitted that uses the
   * buffer keeps it alive until it has run. */
  ctx->p->wgpuBufferRelease(a.buffer);
  memmove(&ctx->allocs[i], &ctx->allocs[i + 1],
          (ctx->nallocs - (size_t)i - 1) * sizeof *ctx->allocs);
  ctx->nallocs--;
  return RK_OK;
}

/* ---- Encoder ------------------------------------------------------------ */

void rk__wg_end_pass(wg_context_t *ctx) {
  if (!ctx->pass) return;
  ctx->p->wgpuComputePassEncoderEnd(ctx->pass);
  ctx->p->wgpuComputePassEncoderRelease(ctx->pass);
  ctx->pass = NULL;
}

WGPUCommandEncoder rk__wg_encoder(wg_context_t *ctx) {
  if (!ctx->encoder)
    ctx->encoder = ctx->p->wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
  return ctx->encoder;
}

rk_status_t rk__wg_flush(wg_context_t *ctx) {
  if (!ctx->encoder) return RK_OK;
  rk__wg_end_pass(ctx);
  WGPUCommandBuffer cb = ctx->p->wgpuCommandEncoderFinish(ctx->encoder, NULL);
  ctx->p->wgpuCommandEncoderRelease(ctx->encoder);
  ctx->encoder = NULL;
  ctx->recorded = 0;
  ctx->slab_used = 0; /* later parameter writes land after this submit */
  if (!cb)
    return rk__fail(RK_ERR_INTERNAL, "webgpu: wgpuCommandEncoderFinish failed");
  ctx->p->wgpuQueueSubmit(ctx->queue, 1, &cb);
  ctx->p->wgpuCommandBufferRelease(cb);
  return RK_OK;
}

/* ---- Copies ------------------------------------------------------------- */

typedef struct map_result {
  int done;
  uint32_t status;
  char msg[512];
} map_result_t;

static void on_map(uint32_t status, WGPUStringView message, void *u1,
                   void *u2) {
  (void)u2;
  map_result_t *r = u1;
  r->status = status;
  rk__wgpu_str(message, r->msg, sizeof r->msg);
  __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* ---- The loop guard (wg_context_t.guard) ----------------------------------
 */

rk_status_t rk__wg_guard_slot(wg_context_t *ctx, const wg_function_t *f,
                              uint32_t *out_offset) {
  if (ctx->guard_used == kWgGuardSlots)
    RK_RETURN_IF_ERROR(rk__wg_read_many(ctx, 0, NULL));
  size_t slot = ctx->guard_used++;
  snprintf(ctx->guard_names[slot], kWgGuardName, "%s", f->base->name);
  *out_offset = (uint32_t)(slot * ctx->guard_slot);
  return RK_OK;
}

rk_status_t rk__wg_guard_check(wg_context_t *ctx, bool or_wait) {
  pthread_mutex_lock(&ctx->lock);
  if (ctx->guard_used == 0) {
    pthread_mutex_unlock(&ctx->lock);
    return or_wait ? rk__wg_wait_idle(ctx) : RK_OK;
  }
  rk_status_t s = rk__wg_read_many(ctx, 0, NULL);
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

/* The guard's slots as read (`words`: guard_used slots of guard_slot
 * bytes): RK_ERR_LAUNCH naming the first kernel whose slot is set, after
 * clearing the slots; every slot is free again either way. */
static rk_status_t guard_verdict(wg_context_t *ctx,
                                 const unsigned char *words) {
  size_t used = ctx->guard_used, hits = 0, first = 0;
  ctx->guard_used = 0;
  for (size_t i = 0; i < used; ++i) {
    uint32_t hit;
    memcpy(&hit, words + i * ctx->guard_slot, sizeof hit);
    if (hit && hits++ == 0) first = i;
  }
  if (!hits) return RK_OK;
  size_t bytes = used * ctx->guard_slot;
  void *zeros = calloc(1, bytes);
  if (zeros) {
    ctx->p->wgpuQueueWriteBuffer(ctx->queue, ctx->guard, 0, zeros, bytes);
    free(zeros);
  }
  char more[64] = "";
  if (hits > 1)
    snprintf(more, sizeof more, " (and %zu later launches)", hits - 1);
  return rk__fail(
      RK_ERR_LAUNCH,
      "kernel '%s'%s: the WebGPU adapter '%s' ended a loop of the kernel "
      "early, so its results are wrong: this adapter ends every loop of an "
      "invocation once 65535 loop iterations have run in it (counted over "
      "all its loops, and over the invocations that run beside it in one "
      "SIMD group), and reports nothing. Keep each invocation's loops under "
      "that (split the work over more threads or launches), or use the "
      "OpenCL or CPU backend (docs/webgpu.md)%s",
      ctx->guard_names[first], more, ctx->adapter,
      zeros ? "" : "; the guard could not be cleared");
}

/* Reads several ranges into host memory with one submit and one map: each
 * range is copied (widened to whole words) into its own part of the staging
 * buffer, and so are the loop guard's slots in use, which are checked
 * (guard_verdict) after the data is copied out. */
rk_status_t rk__wg_read_many(wg_context_t *ctx, size_t count,
                             const rk__wg_read_t *reads) {
  const rk__wgpu_procs_t *p = ctx->p;
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t a0 = reads[i].offset & ~(uint64_t)3;
    uint64_t a1 = (reads[i].offset + reads[i].n + 3) & ~(uint64_t)3;
    total += (a1 - a0 + 7) & ~(uint64_t)7;
  }
  const uint64_t guard_bytes = (uint64_t)ctx->guard_used * ctx->guard_slot;
  if (guard_bytes && count && total > RK__WG_STAGING_MAX) {
    /* A large read: the guard on its own, so staging stays small. */
    RK_RETURN_IF_ERROR(rk__wg_read_many(ctx, 0, NULL));
    return rk__wg_read_many(ctx, count, reads);
  }
  const uint64_t data_total = total;
  total += guard_bytes;
  if (total == 0) return RK_OK;
  if (total > ctx->staging_size) {
    uint64_t size = 1 << 16;
    while (size < total) size *= 2;
    if (ctx->staging) p->wgpuBufferRelease(ctx->staging);
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label.data = "rk staging";
    d.label.length = RK_WGPU_STRLEN;
    d.usage = RK_WGPU_USAGE_MAP_READ | RK_WGPU_USAGE_COPY_DST;
    d.size = size;
    ctx->staging = p->wgpuDeviceCreateBuffer(ctx->device, &d);
    ctx->staging_size = ctx->staging ? size : 0;
    if (!ctx->staging)
      return rk__fail(RK_ERR_OUT_OF_MEMORY,
                      "webgpu: no staging buffer of %llu bytes",
                      (unsigned long long)size);
  }
  rk__wg_end_pass(ctx);
  WGPUCommandEncoder enc = rk__wg_encoder(ctx);
  if (!enc) return rk__fail(RK_ERR_INTERNAL, "webgpu: no command encoder");
  uint64_t at = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t a0 = reads[i].offset & ~(uint64_t)3;
    uint64_t a1 = (reads[i].offset + reads[i].n + 3) & ~(uint64_t)3;
    p->wgpuCommandEncoderCopyBufferToBuffer(enc, reads[i].buffer, a0,
                                            ctx->staging, at, a1 - a0);
    at += (a1 - a0 + 7) & ~(uint64_t)7;
  }
  if (guard_bytes)
    p->wgpuCommandEncoderCopyBufferToBuffer(enc, ctx->guard, 0, ctx->staging,
                                            data_total, guard_bytes);
  RK_RETURN_IF_ERROR(rk__wg_flush(ctx));
  map_result_t r;
  memset(&r, 0, sizeof r);
  WGPUBufferMapCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_map, &r, NULL};
  p->wgpuBufferMapAsync(ctx->staging, RK_WGPU_MAP_READ, 0, (size_t)total, ci);
  RK_RETURN_IF_ERROR(rk__wg_wait(ctx, &r.done, true));
  if (r.status != RK_WGPU_REQUEST_SUCCESS)
    return rk__fail(RK_ERR_INTERNAL, "webgpu: mapping the staging buffer: %s",
                    r.msg[0] ? r.msg : "failed");
  const unsigned char *src =
      p->wgpuBufferGetConstMappedRange(ctx->staging, 0, (size_t)total);
  at = 0;
  for (size_t i = 0; src && i < count; ++i) {
    uint64_t a0 = reads[i].offset & ~(uint64_t)3;
    uint64_t a1 = (reads[i].offset + reads[i].n + 3) & ~(uint64_t)3;
    memcpy(reads[i].dst, src + at + (reads[i].offset - a0), reads[i].n);
    at += (a1 - a0 + 7) & ~(uint64_t)7;
  }
  rk_status_t s = RK_OK;
  if (src && guard_bytes) s = guard_verdict(ctx, src + data_total);
  p->wgpuBufferUnmap(ctx->staging);
  if (!src)
    return rk__fail(RK_ERR_INTERNAL,
                    "webgpu: the staging buffer has no "
                    "mapped range");
  return s;
}

/* One range, in pieces of at most RK__WG_STAGING_MAX bytes. */
static rk_status_t read_words(wg_context_t *ctx, void *dst, WGPUBuffer buf,
                              uint64_t offset, size_t n) {
  for (size_t done = 0; done < n;) {
    size_t piece = n - done;
    if (piece > RK__WG_STAGING_MAX) piece = RK__WG_STAGING_MAX;
    rk__wg_read_t r = {(unsigned char *)dst + done, buf, offset + done, piece};
    RK_RETURN_IF_ERROR(rk__wg_read_many(ctx, 1, &r));
    done += piece;
  }
  return RK_OK;
}

static rk_status_t write_bytes(wg_context_t *ctx, WGPUBuffer buf,
                               uint64_t offset, const void *src, size_t n) {
  /* Launches recorded before this write must run before it. */
  RK_RETURN_IF_ERROR(rk__wg_flush(ctx));
  if (offset % 4 == 0 && n % 4 == 0) {
    ctx->p->wgpuQueueWriteBuffer(ctx->queue, buf, offset, src, n);
    return RK_OK;
  }
  uint64_t a0 = offset & ~(uint64_t)3;
  uint64_t a1 = (offset + n + 3) & ~(uint64_t)3;
  size_t len = (size_t)(a1 - a0);
  unsigned char *tmp = malloc(len);
  if (!tmp)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: copy of %zu bytes", n);
  rk_status_t s = RK_OK;
  if (len <= 8) {
    s = read_words(ctx, tmp, buf, a0, len);
  } else {
    if (offset != a0) s = read_words(ctx, tmp, buf, a0, 4);
    if (s == RK_OK && offset + n != a1)
      s = read_words(ctx, tmp + len - 4, buf, a1 - 4, 4);
  }
  if (s == RK_OK) {
    memcpy(tmp + (offset - a0), src, n);
    ctx->p->wgpuQueueWriteBuffer(ctx->queue, buf, a0, tmp, len);
  }
  free(tmp);
  return s;
}

rk_status_t rk__wg_copy(wg_context_t *ctx, const rk__copy_t *c) {
  wg_alloc_t *da = NULL, *sa = NULL;
  uint64_t doff = 0, soff = 0;
  if (c->dir != RK__COPY_TO_HOST)
    RK_RETURN_IF_ERROR(rk__wg_lookup(ctx, c->dst, c->n, &da, &doff));
  if (c->dir != RK__COPY_TO_DEVICE)
    RK_RETURN_IF_ERROR(rk__wg_lookup(ctx, c->src, c->n, &sa, &soff));
  switch (c->dir) {
    case RK__COPY_TO_DEVICE:
      return write_bytes(ctx, da->buffer, doff, c->host, c->n);
    case RK__COPY_TO_HOST:
      return read_words(ctx, c->host, sa->buffer, soff, c->n);
    case RK__COPY_DEVICE_TO_DEVICE:
      break;
  }
  if (da != sa && doff % 4 == 0 && soff % 4 == 0 && c->n % 4 == 0) {
    rk__wg_end_pass(ctx);
    WGPUCommandEncoder enc = rk__wg_encoder(ctx);
    if (!enc) return rk__fail(RK_ERR_INTERNAL, "webgpu: no command encoder");
    ctx->p->wgpuCommandEncoderCopyBufferToBuffer(enc, sa->buffer, soff,
                                                 da->buffer, doff, c->n);
    ctx->recorded++;
    return RK_OK;
  }
  /* Within one buffer (WebGPU refuses that copy) or not word-aligned:
   * through the host. The handles are kept, since the table may move. */
  WGPUBuffer sbuf = sa->buffer, dbuf = da->buffer;
  unsigned char *tmp = malloc(c->n);
  if (!tmp)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: copy of %zu bytes", c->n);
  rk_status_t s = read_words(ctx, tmp, sbuf, soff, c->n);
  if (s == RK_OK) s = write_bytes(ctx, dbuf, doff, tmp, c->n);
  free(tmp);
  return s;
}

/* ---- Bind group cache --------------------------------------------------- */

void rk__wg_cache_drop(wg_context_t *ctx, uint32_t id,
                       const wg_function_t *fn) {
  for (size_t i = 0; i < kWgBindCacheSize; ++i) {
    wg_bind_cache_entry_t *e = &ctx->cache[i];
    if (!e->group) continue;
    bool drop = id == 0 && fn == NULL;
    if (fn && e->fn == fn) drop = true;
    for (size_t k = 0; id && k < e->nptrs && !drop; ++k)
      if (e->ids[k] == id) drop = true;
    if (drop) {
      ctx->p->wgpuBindGroupRelease(e->group);
      memset(e, 0, sizeof *e);
    }
  }
}
