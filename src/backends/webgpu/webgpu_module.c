/* WebGPU modules: kernel language -> WGSL (one shader module per entry
 * point), explicit bind group layouts, compute pipelines cached per
 * (workgroup size, dynamic shared bytes), and launches.
 *
 * Binding contract (docs/kernel-language.md, "WGSL"): an entry's buffer
 * parameters are bindings 0..k-1 in parameter order; its by-value
 * parameters, packed in order as the C struct of them, are one read-only
 * storage binding k, which rk binds with a dynamic offset into the
 * context's parameter slab. Workgroup size and dynamic shared bytes are
 * pipeline-overridable constants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/webgpu/webgpu_backend.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "hal/kernel_source.h"
#include "rk/codegen.h"

enum { kFlushEvery = 256 };

/* ---- Diagnostics -------------------------------------------------------- */

/* Appends "generated WGSL line N: text" for the first "wgsl:N:M" (or
 * ":N:M") location in `msg`. */
static void append_generated_line(rk__strbuf_t *sb, const char *msg,
                                  const char *wgsl) {
  const char *at = strstr(msg, "wgsl:");
  unsigned long line = 0;
  if (at) line = strtoul(at + 5, NULL, 10);
  for (const char *c = msg; !line && (c = strchr(c, ':')) != NULL; ++c) {
    char *end;
    unsigned long l = strtoul(c + 1, &end, 10);
    if (end != c + 1 && *end == ':' && end[1] >= '0' && end[1] <= '9') line = l;
  }
  if (!line) return;
  const char *p = wgsl;
  for (unsigned long i = 1; i < line && p; ++i) {
    p = strchr(p, '\n');
    if (p) ++p;
  }
  if (!p || !*p) return;
  size_t len = strcspn(p, "\n");
  rk__strbuf_printf(sb, "\ngenerated WGSL line %lu: %.*s", line, (int)len, p);
}

/* ---- Compile ------------------------------------------------------------ */

static void free_function(wg_context_t *ctx, wg_function_t *f) {
  const rk__wgpu_procs_t *p = ctx->p;
  for (size_t i = 0; i < f->npipelines; ++i)
    p->wgpuComputePipelineRelease(f->pipelines[i].pipeline);
  free(f->pipelines);
  if (f->layout) p->wgpuPipelineLayoutRelease(f->layout);
  if (f->bgl) p->wgpuBindGroupLayoutRelease(f->bgl);
  if (f->shader) p->wgpuShaderModuleRelease(f->shader);
  free(f->wgsl);
  free(f->unavailable);
}

void rk__wg_module_destroy(rk_module_t *module) {
  wg_module_t *m = (wg_module_t *)module;
  wg_context_t *ctx = wg_ctx(module->context);
  pthread_mutex_lock(&ctx->lock);
  for (size_t i = 0; i < m->base.nfunctions; ++i) {
    rk__wg_cache_drop(ctx, 0, &m->fns[i]);
    free_function(ctx, &m->fns[i]);
  }
  pthread_mutex_unlock(&ctx->lock);
  free(m->fns);
  free(m->base.functions);
  free(m->params);
  free(m->names);
  free(m);
}

/* Builds entry e's shader and layout from its WGSL program (taken over
 * by f), or records why the target cannot express it (`refusal`: the
 * module still loads, and launching the entry says why). */
static rk_status_t build_function(wg_context_t *ctx, wg_function_t *f,
                                  const rk_entry_t *e, char *wgsl,
                                  const char *refusal, const char *name) {
  const rk__wgpu_procs_t *p = ctx->p;
  if (!wgsl) {
    f->unavailable = strdup(refusal ? refusal : "refused by the WGSL target");
    return f->unavailable ? RK_OK
                          : rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: compile");
  }
  f->wgsl = wgsl;
  f->dynamic_shared = e->dynamic_shared;
  f->guarded = ctx->guard && e->loops;
  /* Entry points keep their names in WGSL (the checker refuses names the
   * target reserves). */
  snprintf(f->entry_point, sizeof f->entry_point, "%s", e->name);
  rk_status_t s;

  WGPUShaderSourceWGSL src;
  memset(&src, 0, sizeof src);
  src.chain.sType = RK_WGPU_STYPE_SHADER_SOURCE_WGSL;
  src.code.data = wgsl;
  src.code.length = RK_WGPU_STRLEN;
  WGPUShaderModuleDescriptor md;
  memset(&md, 0, sizeof md);
  md.nextInChain = &src.chain;
  md.label.data = e->name;
  md.label.length = RK_WGPU_STRLEN;
  p->wgpuDevicePushErrorScope(ctx->device, RK_WGPU_ERROR_FILTER_VALIDATION);
  f->shader = p->wgpuDeviceCreateShaderModule(ctx->device, &md);
  char *msg = malloc(4096);
  if (!msg) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: compile");
  s = rk__wg_pop_scope(ctx, RK_ERR_COMPILE, msg, 4096);
  if (s != RK_OK || !f->shader) {
    rk__strbuf_t sb;
    rk__strbuf_init(&sb);
    rk__strbuf_printf(&sb,
                      "%s: the WebGPU implementation refused the WGSL of '%s': "
                      "%s",
                      name, e->name, s != RK_OK ? msg : "no shader module");
    append_generated_line(&sb, msg, wgsl);
    s = rk__fail(s != RK_OK ? s : RK_ERR_COMPILE, "%s", sb.data);
    rk__strbuf_free(&sb);
    free(msg);
    return s;
  }
  free(msg);

  /* Explicit layout: buffers, then the parameter block. */
  size_t nparams = e->param_count;
  WGPUBindGroupLayoutEntry *le = calloc(nparams + 1, sizeof *le);
  if (!le) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: compile");
  size_t nb = 0;
  for (size_t i = 0; i < nparams; ++i) {
    const rk_entry_param_t *ep = &e->params[i];
    if (ep->kind != RK_ARG_PTR) {
      f->params_bytes += (ep->size + 3) & ~(size_t)3;
      continue;
    }
    le[nb].binding = (uint32_t)nb;
    le[nb].visibility = RK_WGPU_STAGE_COMPUTE;
    le[nb].buffer.type = ep->read_only ? RK_WGPU_BINDING_READ_ONLY_STORAGE
                                       : RK_WGPU_BINDING_STORAGE;
    if (ep->read_only && i < 64) f->read_only_mask |= 1ull << i;
    if (nb < 64) f->bind_elem[nb] = (uint32_t)ep->elem_size;
    ++nb;
  }
  f->nptrs = nb;
  size_t nentries = nb;
  if (f->params_bytes) {
    f->params_bind = (f->params_bytes + 15) & ~(uint64_t)15;
    le[nb].binding = (uint32_t)nb;
    le[nb].visibility = RK_WGPU_STAGE_COMPUTE;
    le[nb].buffer.type = RK_WGPU_BINDING_READ_ONLY_STORAGE;
    le[nb].buffer.hasDynamicOffset = 1;
    ++nentries;
  }
  WGPUBindGroupLayoutDescriptor bd;
  memset(&bd, 0, sizeof bd);
  bd.entryCount = nentries;
  bd.entries = le;
  p->wgpuDevicePushErrorScope(ctx->device, RK_WGPU_ERROR_FILTER_VALIDATION);
  f->bgl = p->wgpuDeviceCreateBindGroupLayout(ctx->device, &bd);
  free(le);
  /* A guarded kernel's loop guard is group 1 (wg_context_t.guard). */
  WGPUBindGroupLayout groups[2] = {f->bgl, ctx->guard_bgl};
  WGPUPipelineLayoutDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.bindGroupLayoutCount = f->guarded ? 2 : 1;
  pd.bindGroupLayouts = groups;
  if (f->bgl) f->layout = p->wgpuDeviceCreatePipelineLayout(ctx->device, &pd);
  char lmsg[1024];
  s = rk__wg_pop_scope(ctx, RK_ERR_COMPILE, lmsg, sizeof lmsg);
  if (s != RK_OK || !f->layout)
    return rk__fail(s != RK_OK ? s : RK_ERR_COMPILE,
                    "%s: kernel '%s' needs %zu buffer bindings the device "
                    "cannot provide (at most %u storage buffers per stage%s): "
                    "%s",
                    name, e->name, nentries + (f->guarded ? 1 : 0),
                    ctx->limits.maxStorageBuffersPerShaderStage,
                    f->guarded ? "; one is the loop guard this adapter needs "
                                 "for kernels that loop"
                               : "",
                    s != RK_OK ? lmsg : "no layout");
  return RK_OK;
}

rk_status_t rk__wg_compile(rk_context_t *context, const char *source,
                           const rk_compile_options_t *options,
                           rk_module_t **out_module) {
  wg_context_t *ctx = wg_ctx(context);
  const char *name = rk__kernel_source_name(options);
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.per_entry = true; /* one shader module and pipeline per entry point */
  o.wgsl_loop_guard = ctx->guard != NULL;
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_WGSL, &o, &r));
  const rk_entry_list_t *list = r.entries;
  rk_status_t s;
  size_t n = list->count, total = 0, names = 0;
  for (size_t i = 0; i < n; ++i) {
    total += list->entries[i].param_count;
    names += strlen(list->entries[i].name) + 1;
  }
  wg_module_t *m = calloc(1, sizeof *m);
  wg_function_t *fns = calloc(n ? n : 1, sizeof *fns);
  rk_function_t *rfns = calloc(n ? n : 1, sizeof *rfns);
  rk__param_t *params = calloc(total ? total : 1, sizeof *params);
  char *namebuf = malloc(names ? names : 1);
  if (!m || !fns || !rfns || !params || !namebuf) {
    free(m);
    free(fns);
    free(rfns);
    free(params);
    free(namebuf);
    rk_codegen_result_free(&r);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: compile");
  }
  m->fns = fns;
  m->params = params;
  m->names = namebuf;
  m->base.nfunctions = n;
  s = RK_OK;
  size_t pi = 0, available = 0;
  char *nameat = namebuf;
  pthread_mutex_lock(&ctx->lock);
  for (size_t i = 0; i < n && s == RK_OK; ++i) {
    const rk_entry_t *e = &list->entries[i];
    wg_function_t *f = &fns[i];
    size_t len = strlen(e->name) + 1;
    memcpy(nameat, e->name, len);
    f->base = &rfns[i];
    rfns[i].name = nameat;
    nameat += len;
    rfns[i].nparams = e->param_count;
    rfns[i].params = &params[pi];
    for (size_t k = 0; k < e->param_count; ++k, ++pi) {
      params[pi].kind = e->params[k].kind;
      params[pi].size = e->params[k].size;
      snprintf(params[pi].name, sizeof params[pi].name, "%s",
               e->params[k].name);
    }
    s = build_function(ctx, f, e, r.entry_texts[i], r.entry_errors[i], name);
    r.entry_texts[i] = NULL; /* taken over by f */
    if (s == RK_OK && !f->unavailable) ++available;
  }
  /* Every entry refused by the target: that is a compile error. */
  if (s == RK_OK && n > 0 && available == 0)
    s = rk__fail(RK_ERR_COMPILE, "%s", fns[0].unavailable);
  pthread_mutex_unlock(&ctx->lock);
  m->base.functions = rfns;
  rk_codegen_result_free(&r);
  if (s != RK_OK) {
    m->base.context = context;
    char keep[4096];
    snprintf(keep, sizeof keep, "%s", rk_last_error());
    pthread_mutex_lock(&ctx->lock);
    for (size_t i = 0; i < n; ++i) free_function(ctx, &fns[i]);
    pthread_mutex_unlock(&ctx->lock);
    free(fns);
    free(rfns);
    free(params);
    free(namebuf);
    free(m);
    return rk__fail(s, "%s", keep);
  }
  m->base.cache_hit = false;
  *out_module = &m->base;
  return RK_OK;
}

/* ---- Pipelines ---------------------------------------------------------- */

static rk_status_t get_pipeline(wg_context_t *ctx, wg_function_t *f,
                                rk_dim3_t block, uint32_t dyn,
                                WGPUComputePipeline *out) {
  for (size_t i = 0; i < f->npipelines; ++i) {
    wg_pipeline_t *pl = &f->pipelines[i];
    if (pl->wg[0] == block.x && pl->wg[1] == block.y && pl->wg[2] == block.z &&
        pl->dyn_shared == dyn) {
      *out = pl->pipeline;
      return RK_OK;
    }
  }
  const rk__wgpu_procs_t *p = ctx->p;
  WGPUConstantEntry c[4];
  memset(c, 0, sizeof c);
  static const char *const kNames[] = {"rk_wg_x", "rk_wg_y", "rk_wg_z",
                                       "rk_dyn_shared_bytes"};
  /* At least one element of any type: 0 would declare an empty array,
   * which pipeline creation refuses. */
  const double values[] = {block.x, block.y, block.z, dyn < 16 ? 16 : dyn};
  size_t nc = f->dynamic_shared ? 4 : 3;
  for (size_t i = 0; i < nc; ++i) {
    c[i].key.data = kNames[i];
    c[i].key.length = RK_WGPU_STRLEN;
    c[i].value = values[i];
  }
  WGPUComputePipelineDescriptor d;
  memset(&d, 0, sizeof d);
  d.label.data = f->base->name;
  d.label.length = RK_WGPU_STRLEN;
  d.layout = f->layout;
  d.compute.module = f->shader;
  d.compute.entryPoint.data = f->entry_point;
  d.compute.entryPoint.length = RK_WGPU_STRLEN;
  d.compute.constantCount = nc;
  d.compute.constants = c;
  p->wgpuDevicePushErrorScope(ctx->device, RK_WGPU_ERROR_FILTER_VALIDATION);
  WGPUComputePipeline pipe =
      p->wgpuDeviceCreateComputePipeline(ctx->device, &d);
  char *msg = malloc(4096);
  if (!msg) {
    if (pipe) p->wgpuComputePipelineRelease(pipe);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: pipeline");
  }
  rk_status_t s = rk__wg_pop_scope(ctx, RK_ERR_LAUNCH, msg, 4096);
  if (s != RK_OK || !pipe) {
    if (pipe) p->wgpuComputePipelineRelease(pipe);
    rk__strbuf_t sb;
    rk__strbuf_init(&sb);
    rk__strbuf_printf(&sb,
                      "launch of '%s': the WebGPU implementation refused the "
                      "compute pipeline for block (%u,%u,%u)%s: %s",
                      f->base->name, block.x, block.y, block.z,
                      f->dynamic_shared ? " with dynamic shared memory" : "",
                      s != RK_OK ? msg : "no pipeline");
    append_generated_line(&sb, msg, f->wgsl);
    s = rk__fail(s != RK_OK ? s : RK_ERR_LAUNCH, "%s", sb.data);
    rk__strbuf_free(&sb);
    free(msg);
    return s;
  }
  free(msg);
  wg_pipeline_t *grown =
      realloc(f->pipelines, (f->npipelines + 1) * sizeof *grown);
  if (!grown) {
    p->wgpuComputePipelineRelease(pipe);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: pipeline cache");
  }
  f->pipelines = grown;
  f->pipelines[f->npipelines++] =
      (wg_pipeline_t){{block.x, block.y, block.z}, dyn, pipe};
  *out = pipe;
  return RK_OK;
}

/* ---- Launch ------------------------------------------------------------- */

static rk_status_t check_dims(wg_context_t *ctx, const wg_function_t *f,
                              rk_dim3_t grid, rk_dim3_t block) {
  const WGPULimits *l = &ctx->limits;
  const uint32_t bmax[3] = {l->maxComputeWorkgroupSizeX,
                            l->maxComputeWorkgroupSizeY,
                            l->maxComputeWorkgroupSizeZ};
  const uint32_t b[3] = {block.x, block.y, block.z};
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  for (int i = 0; i < 3; ++i) {
    if (b[i] > bmax[i])
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': block (%u,%u,%u) is %u threads in %c; "
                      "the WebGPU device allows at most %u",
                      f->base->name, block.x, block.y, block.z, b[i], 'x' + i,
                      bmax[i]);
    if (g[i] > l->maxComputeWorkgroupsPerDimension)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': grid (%u,%u,%u) has %u blocks in %c; "
                      "the WebGPU device allows at most %u per dimension",
                      f->base->name, grid.x, grid.y, grid.z, g[i], 'x' + i,
                      l->maxComputeWorkgroupsPerDimension);
  }
  return RK_OK;
}

/* ---- Pointer arguments WebGPU cannot bind as they are ---------------------
 *
 * Two cases get a temporary buffer holding a copy of the rest of the
 * allocation, made in queue order just before the dispatch:
 *
 *  - an offset that is a multiple of 4 but not of
 *    minStorageBufferOffsetAlignment (WebGPU binds only at those); unless
 *    the parameter is `const`, the copy is written back after the dispatch,
 *    which is refused when another writable argument of the launch points
 *    into the same allocation;
 *  - a `const` argument whose allocation a writable argument of the same
 *    launch also uses: WebGPU refuses a buffer bound read-only and writable
 *    in one dispatch, so the const one reads a copy taken at launch (as if
 *    it were `restrict`).
 */

enum { kMaxShadows = 8 };

typedef struct shadow {
  size_t binding, param;
  wg_alloc_t *alloc;
  uint64_t offset, size;
  bool writeback; /* copy the kernel's writes back (not for const) */
  WGPUBuffer temp;
} shadow_t;

static rk_status_t shadow_in(wg_context_t *ctx, const wg_function_t *f,
                             shadow_t *sh, size_t n, WGPUBindGroupEntry *be,
                             size_t nb) {
  const rk__wgpu_procs_t *p = ctx->p;
  (void)nb;
  WGPUCommandEncoder enc = rk__wg_encoder(ctx);
  if (!enc) return rk__fail(RK_ERR_INTERNAL, "webgpu: no command encoder");
  rk__wg_end_pass(ctx);
  for (size_t k = 0; k < n; ++k) {
    shadow_t *x = &sh[k];
    x->size = be[x->binding].size & ~(uint64_t)3;
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.usage =
        RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_SRC | RK_WGPU_USAGE_COPY_DST;
    d.size = x->size;
    x->temp = p->wgpuDeviceCreateBuffer(ctx->device, &d);
    if (!x->temp) {
      for (size_t j = 0; j < k; ++j) p->wgpuBufferRelease(sh[j].temp);
      return rk__fail(RK_ERR_OUT_OF_MEMORY,
                      "launch of '%s': no %llu-byte buffer for argument %zu "
                      "at an unaligned offset",
                      f->base->name, (unsigned long long)x->size, x->param);
    }
    p->wgpuCommandEncoderCopyBufferToBuffer(enc, x->alloc->buffer, x->offset,
                                            x->temp, 0, x->size);
    be[x->binding].buffer = x->temp;
    be[x->binding].offset = 0;
  }
  return RK_OK;
}

static void shadow_out(wg_context_t *ctx, shadow_t *sh, size_t n) {
  const rk__wgpu_procs_t *p = ctx->p;
  rk__wg_end_pass(ctx);
  for (size_t k = 0; k < n; ++k) {
    if (sh[k].writeback)
      p->wgpuCommandEncoderCopyBufferToBuffer(ctx->encoder, sh[k].temp, 0,
                                              sh[k].alloc->buffer, sh[k].offset,
                                              sh[k].size);
    /* The recorded commands keep the buffer until they have run. */
    p->wgpuBufferRelease(sh[k].temp);
  }
}

/* Decides which bindings need a temporary buffer (see above). */
static rk_status_t plan_shadows(wg_context_t *ctx, const wg_function_t *f,
                                const WGPUBindGroupEntry *be, size_t nb,
                                const size_t *bparam, wg_alloc_t *const *balloc,
                                shadow_t *sh, size_t *out_n) {
  const uint32_t align = ctx->limits.minStorageBufferOffsetAlignment;
  size_t n = 0;
  for (size_t j = 0; j < nb; ++j) {
    wg_alloc_t *a = balloc[j];
    if (!a) continue;
    bool ro = bparam[j] < 64 && (f->read_only_mask & (1ull << bparam[j]));
    bool unaligned = align && be[j].offset % align != 0;
    bool writer_alias = false;
    for (size_t k = 0; k < nb; ++k) {
      bool kro = bparam[k] < 64 && (f->read_only_mask & (1ull << bparam[k]));
      if (k != j && balloc[k] == a && !kro) writer_alias = true;
    }
    if (!unaligned && !(ro && writer_alias)) continue;
    const char *pname = f->base->params[bparam[j]].name;
    if (unaligned && !ro && writer_alias)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': argument %zu (%s) points %llu bytes "
                      "into an allocation that another writable argument "
                      "also uses; WebGPU binds buffers only at offsets that "
                      "are multiples of %u (minStorageBufferOffsetAlignment), "
                      "and rk can stand in for that only when no other "
                      "writable argument shares the allocation",
                      f->base->name, bparam[j], pname,
                      (unsigned long long)be[j].offset, align);
    if (n == kMaxShadows)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': more than %d pointer arguments need "
                      "a copy (offsets that are not multiples of %u, or const "
                      "buffers shared with writable ones)",
                      f->base->name, kMaxShadows, align);
    sh[n].binding = j;
    sh[n].param = bparam[j];
    sh[n].alloc = a;
    sh[n].offset = be[j].offset;
    sh[n].writeback = !ro;
    sh[n].temp = NULL;
    ++n;
  }
  *out_n = n;
  return RK_OK;
}

rk_status_t rk__wg_launch_locked(wg_context_t *ctx, wg_function_t *f,
                                 rk_dim3_t grid, rk_dim3_t block,
                                 size_t shared_mem, const rk__args_t *args) {
  const rk__wgpu_procs_t *p = ctx->p;
  if (f->unavailable)
    return rk__fail(RK_ERR_COMPILE, "kernel '%s' cannot run on WebGPU: %s",
                    f->base->name, f->unavailable);
  RK_RETURN_IF_ERROR(check_dims(ctx, f, grid, block));
  WGPUComputePipeline pipe = NULL;
  RK_RETURN_IF_ERROR(get_pipeline(
      ctx, f, block, f->dynamic_shared ? (uint32_t)shared_mem : 0, &pipe));

  /* Buffers: (allocation, offset) per pointer argument. */
  WGPUBindGroupEntry stack_entries[kWgBindCacheMaxPtrs + 1];
  WGPUBindGroupEntry *be = stack_entries;
  if (f->nptrs + 1 > kWgBindCacheMaxPtrs + 1) {
    be = calloc(f->nptrs + 1, sizeof *be);
    if (!be) return rk__fail(RK_ERR_OUT_OF_MEMORY, "webgpu: launch");
  } else {
    memset(stack_entries, 0, sizeof stack_entries);
  }
  uint32_t ids[kWgBindCacheMaxPtrs];
  uint64_t offs[kWgBindCacheMaxPtrs];
  shadow_t shadow[kMaxShadows];
  size_t nshadow = 0;
  /* Per binding: its parameter and allocation (NULL for a NULL pointer);
   * the kernel language allows at most 64 parameters. */
  size_t bparam[64];
  wg_alloc_t *balloc[64];
  if (f->nptrs > 64) {
    if (be != stack_entries) free(be);
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "launch of '%s': %zu buffers",
                    f->base->name, f->nptrs);
  }
  unsigned char packed[64 * RK_ARG_STRUCT_MAX];
  size_t pbytes = 0, nb = 0;
  rk_status_t s = RK_OK;
  for (size_t i = 0; i < f->base->nparams && s == RK_OK; ++i) {
    const rk__param_t *prm = &f->base->params[i];
    if (prm->kind != RK_ARG_PTR) {
      size_t sz = (prm->size + 3) & ~(size_t)3;
      memset(packed + pbytes, 0, sz);
      memcpy(packed + pbytes, args->values[i], prm->size);
      pbytes += sz;
      continue;
    }
    rk_devptr_t ptr;
    memcpy(&ptr, args->values[i], sizeof ptr);
    bool ro = i < 64 && (f->read_only_mask & (1ull << i));
    WGPUBuffer buf = ro ? ctx->dummy_ro : ctx->dummy;
    bparam[nb] = i;
    balloc[nb] = NULL;
    uint64_t off = 0, size = kNullBytes;
    uint32_t id = 0;
    if (ptr == 0 && f->bind_elem[nb] > kNullBytes) {
      s = rk__fail(RK_ERR_INVALID_ARGUMENT,
                   "launch of '%s': argument %zu (%s) is NULL; on WebGPU a "
                   "NULL buffer argument stands for %d bytes, less than one "
                   "%u-byte element",
                   f->base->name, i, prm->name, (int)kNullBytes,
                   f->bind_elem[nb]);
      break;
    }
    if (ptr != 0) {
      wg_alloc_t *a;
      s = rk__wg_lookup(ctx, ptr, 0, &a, &off);
      if (s != RK_OK) {
        rk__fail_context(s, "launch of '%s': argument %zu (%s)", f->base->name,
                         i, prm->name);
        break;
      }
      if (off % 4 != 0) {
        s = rk__fail(RK_ERR_INVALID_ARGUMENT,
                     "launch of '%s': argument %zu (%s) points %llu bytes "
                     "into its allocation, which is not a multiple of 4 "
                     "bytes: WebGPU buffers are bound in whole words",
                     f->base->name, i, prm->name, (unsigned long long)off);
        break;
      }
      balloc[nb] = a;
      buf = a->buffer;
      /* The rest of the allocation, up to the largest binding. */
      size = a->padded - off;
      if (size > ctx->limits.maxStorageBufferBindingSize)
        size = ctx->limits.maxStorageBufferBindingSize & ~(uint64_t)3;
      /* WebGPU binds at least one whole element (and wgpu-native aborts
       * the process on a dispatch that breaks the rule). */
      if (size < f->bind_elem[nb]) {
        s = rk__fail(RK_ERR_INVALID_ARGUMENT,
                     "launch of '%s': argument %zu (%s) points %llu bytes "
                     "before the end of its allocation; WebGPU binds at "
                     "least one whole %u-byte element",
                     f->base->name, i, prm->name,
                     (unsigned long long)(a->size - off), f->bind_elem[nb]);
        break;
      }
      id = a->id;
    }
    be[nb].binding = (uint32_t)nb;
    be[nb].buffer = buf;
    be[nb].offset = off;
    be[nb].size = size;
    if (nb < kWgBindCacheMaxPtrs) {
      ids[nb] = id;
      offs[nb] = off;
    }
    ++nb;
  }
  if (s == RK_OK)
    s = plan_shadows(ctx, f, be, nb, bparam, balloc, shadow, &nshadow);
  if (s == RK_OK && nshadow > 0) s = shadow_in(ctx, f, shadow, nshadow, be, nb);
  if (s != RK_OK) {
    if (be != stack_entries) free(be);
    return s;
  }

  /* The bind group: cached per (function, buffers, offsets). */
  WGPUBindGroup group = NULL;
  bool cacheable = nb <= kWgBindCacheMaxPtrs && nshadow == 0;
  for (size_t i = 0; cacheable && i < kWgBindCacheSize && !group; ++i) {
    wg_bind_cache_entry_t *e = &ctx->cache[i];
    if (e->group && e->fn == f && e->nptrs == nb &&
        memcmp(e->ids, ids, nb * sizeof *ids) == 0 &&
        memcmp(e->offsets, offs, nb * sizeof *offs) == 0)
      group = e->group;
  }
  if (!group) {
    size_t n = nb;
    if (f->params_bytes) {
      be[n].binding = (uint32_t)n;
      be[n].buffer = ctx->slab;
      be[n].offset = 0;
      be[n].size = f->params_bind;
      ++n;
    }
    WGPUBindGroupDescriptor d;
    memset(&d, 0, sizeof d);
    d.layout = f->bgl;
    d.entryCount = n;
    d.entries = be;
    group = p->wgpuDeviceCreateBindGroup(ctx->device, &d);
    if (!group) {
      if (be != stack_entries) free(be);
      return rk__fail(RK_ERR_LAUNCH, "launch of '%s': no bind group",
                      f->base->name);
    }
    if (cacheable) {
      wg_bind_cache_entry_t *e = &ctx->cache[ctx->cache_next];
      ctx->cache_next = (ctx->cache_next + 1) % kWgBindCacheSize;
      if (e->group) p->wgpuBindGroupRelease(e->group);
      e->fn = f;
      e->group = group;
      e->nptrs = nb;
      memcpy(e->ids, ids, nb * sizeof *ids);
      memcpy(e->offsets, offs, nb * sizeof *offs);
    }
  }
  if (be != stack_entries) free(be);

  /* The parameter block: a fresh slot of the slab per launch, written
   * before the submit that carries the launch. */
  uint32_t dyn_offset = 0;
  if (f->params_bytes) {
    uint64_t slot =
        (ctx->slab_used + ctx->align - 1) & ~(uint64_t)(ctx->align - 1);
    if (slot + f->params_bind > ctx->slab_size) {
      rk_status_t fs = rk__wg_flush(ctx);
      if (fs != RK_OK) {
        if (!cacheable) p->wgpuBindGroupRelease(group);
        return fs;
      }
      slot = 0;
    }
    p->wgpuQueueWriteBuffer(ctx->queue, ctx->slab, slot, packed,
                            (pbytes + 3) & ~(size_t)3);
    ctx->slab_used = slot + f->params_bind;
    dyn_offset = (uint32_t)slot;
  }

  uint32_t guard_offset = 0;
  if (f->guarded) {
    rk_status_t gs = rk__wg_guard_slot(ctx, f, &guard_offset);
    if (gs != RK_OK) {
      if (!cacheable) p->wgpuBindGroupRelease(group);
      return gs;
    }
  }

  if (!ctx->pass) {
    WGPUCommandEncoder enc = rk__wg_encoder(ctx);
    if (enc) ctx->pass = p->wgpuCommandEncoderBeginComputePass(enc, NULL);
    if (!ctx->pass) {
      if (!cacheable) p->wgpuBindGroupRelease(group);
      return rk__fail(RK_ERR_INTERNAL, "webgpu: cannot begin a compute pass");
    }
  }
  p->wgpuComputePassEncoderSetPipeline(ctx->pass, pipe);
  p->wgpuComputePassEncoderSetBindGroup(ctx->pass, 0, group,
                                        f->params_bytes ? 1 : 0, &dyn_offset);
  if (f->guarded)
    p->wgpuComputePassEncoderSetBindGroup(ctx->pass, 1, ctx->guard_group, 1,
                                          &guard_offset);
  p->wgpuComputePassEncoderDispatchWorkgroups(ctx->pass, grid.x, grid.y,
                                              grid.z);
  if (!cacheable) p->wgpuBindGroupRelease(group);
  if (nshadow > 0) shadow_out(ctx, shadow, nshadow);
  if (++ctx->recorded >= kFlushEvery) return rk__wg_flush(ctx);
  return RK_OK;
}
