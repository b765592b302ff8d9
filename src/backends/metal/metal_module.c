/* Metal modules: kernel language -> the front end's MSL ->
 * newLibraryWithSource:options:error: (cached in memory per context by
 * content hash), one compute pipeline per entry point; and the encoding of
 * a launch.
 *
 * Binding (docs/kernel-language.md, MSL): launch parameter i is
 * [[buffer(i)]]; a pointer is bound with setBuffer:offset:atIndex: (the
 * offset of the rk pointer inside its allocation, so a pointer may point
 * anywhere inside it), a value with setBytes:length:atIndex:; dynamic
 * shared memory is threadgroup memory 0. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/metal/metal.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "hal/kernel_source.h"

/* A pipeline made for one entry of a cached library. */
typedef struct mtl_pipeline_cache {
  char *entry;
  mtl_id pipeline; /* retained by the cache */
  struct mtl_pipeline_cache *next;
} mtl_pipeline_cache_t;

/* A library and the pipelines made from it, kept for the context's life
 * (entries are never removed before rk__mtl_cache_release). */
struct mtl_library_cache {
  char key[33];
  mtl_id library;                  /* retained by the cache */
  mtl_pipeline_cache_t *pipelines; /* under ctx->cache_lock */
  mtl_library_cache_t *next;
};

/* ---- Building ----------------------------------------------------------- */

/* The LINE of the first message line that mentions "error" and holds
 * ":LINE:COL:" (Metal's "program_source:3:17: error: ..."), or 0. */
static unsigned message_error_line(const char *log) {
  for (const char *line = log; *line;) {
    size_t len = strcspn(line, "\n");
    bool error = false;
    for (size_t i = 0; i + 5 <= len && !error; ++i)
      error = strncmp(line + i, "error", 5) == 0;
    for (size_t i = 0; error && i < len; ++i) {
      if (line[i] != ':' || !isdigit((unsigned char)line[i + 1])) continue;
      size_t j = i + 1;
      while (j < len && isdigit((unsigned char)line[j])) ++j;
      if (j + 1 < len && line[j] == ':' && isdigit((unsigned char)line[j + 1]))
        return (unsigned)strtoul(line + i + 1, NULL, 10);
    }
    line += len;
    if (*line) ++line;
  }
  return 0;
}

static rk_status_t build_failed(mtl_context_t *ctx, mtl_id error,
                                const char *text, const char *name) {
  const char *log = rk__mtl_error_text(ctx->api, error, "(no message)");
  rk__strbuf_t msg;
  rk__strbuf_init(&msg);
  rk__strbuf_printf(&msg,
                    "%s: the Metal compiler of %s rejected the generated "
                    "MSL:\n%s\n",
                    name, ctx->dev->info.name, log);
  unsigned line = message_error_line(log);
  int len = 0;
  const char *p = line ? rk__source_line(text, line, &len) : NULL;
  if (p) rk__strbuf_printf(&msg, "generated line %u: %.*s\n", line, len, p);
  rk__fail(RK_ERR_COMPILE, "%s", msg.data ? msg.data : "build failed");
  rk__strbuf_free(&msg);
  return RK_ERR_COMPILE;
}

/* A library for `text`, from the context's cache unless no_cache; the
 * caller owns the returned reference. Inside an autorelease pool. */
static rk_status_t get_library(mtl_context_t *ctx, const char *text,
                               const char *name, bool no_cache, mtl_id *out,
                               mtl_library_cache_t **out_entry, bool *out_hit) {
  const rk_objc_api_t *api = ctx->api;
  rk__hash_t h;
  char key[33];
  rk__hash_init(&h);
  rk__hash_str(&h, "metal fastMathEnabled=NO");
  rk__hash_str(&h, text);
  rk__hash_hex(&h, key);
  *out_hit = false;
  *out_entry = NULL;
  if (!no_cache) {
    pthread_mutex_lock(&ctx->cache_lock);
    for (mtl_library_cache_t *c = ctx->cache; c; c = c->next) {
      if (strcmp(c->key, key) == 0) {
        rk__mtl_retain(api, c->library);
        *out = c->library;
        *out_entry = c;
        *out_hit = true;
        pthread_mutex_unlock(&ctx->cache_lock);
        return RK_OK;
      }
    }
    pthread_mutex_unlock(&ctx->cache_lock);
  }
  mtl_id source = rk__mtl_string(api, text);
  mtl_id options = rk__mtl_send(
      api, rk__mtl_send(api, api->MTLCompileOptions, api->sel.alloc),
      api->sel.init);
  if (!source || !options) {
    rk__mtl_release(api, options);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "%s: MSL source string", name);
  }
  /* Metal compiles with fast math by default; rk's other targets do not. */
  RK_SEND(api, void, (mtl_id, mtl_sel, unsigned char), options,
          api->sel.setFastMathEnabled, 0);
  mtl_id error = NULL;
  mtl_id library = RK_SEND(
      api, mtl_id, (mtl_id, mtl_sel, mtl_id, mtl_id, mtl_id *),
      ctx->dev->device, api->sel.newLibraryWithSource, source, options, &error);
  rk__mtl_release(api, options);
  if (!library) return build_failed(ctx, error, text, name);
  if (!no_cache) {
    mtl_library_cache_t *c = calloc(1, sizeof *c);
    if (c) {
      memcpy(c->key, key, sizeof key);
      c->library = library;
      rk__mtl_retain(api, library);
      pthread_mutex_lock(&ctx->cache_lock);
      c->next = ctx->cache;
      ctx->cache = c;
      pthread_mutex_unlock(&ctx->cache_lock);
      *out_entry = c;
    }
  }
  *out = library;
  return RK_OK;
}

void rk__mtl_cache_release(mtl_context_t *ctx) {
  for (mtl_library_cache_t *c = ctx->cache, *next; c; c = next) {
    next = c->next;
    for (mtl_pipeline_cache_t *p = c->pipelines, *pn; p; p = pn) {
      pn = p->next;
      rk__mtl_release(ctx->api, p->pipeline);
      free(p->entry);
      free(p);
    }
    rk__mtl_release(ctx->api, c->library);
    free(c);
  }
  ctx->cache = NULL;
}

/* ---- Modules ------------------------------------------------------------ */

static void module_free(mtl_module_t *m, const rk_objc_api_t *api) {
  if (m->fns)
    for (size_t i = 0; i < m->base.nfunctions; ++i)
      rk__mtl_release(api, m->fns[i].pipeline);
  rk__mtl_release(api, m->library);
  rk_entry_list_destroy(m->entries);
  free(m->fns);
  free(m->params);
  free(m->base.functions);
  free(m);
}

/* The compute pipeline of entry `e` (its function from the library). */
static rk_status_t new_pipeline(mtl_context_t *ctx, mtl_module_t *m,
                                const rk_entry_t *e, const char *name,
                                mtl_function_t *f) {
  const rk_objc_api_t *api = ctx->api;
  mtl_id fname = rk__mtl_string(api, e->name);
  mtl_id function =
      fname ? RK_SEND(api, mtl_id, (mtl_id, mtl_sel, mtl_id), m->library,
                      api->sel.newFunctionWithName, fname)
            : NULL;
  if (!function)
    return rk__fail(RK_ERR_COMPILE,
                    "%s: kernel '%s' is missing from the Metal library", name,
                    e->name);
  mtl_id error = NULL;
  f->pipeline = RK_SEND(api, mtl_id, (mtl_id, mtl_sel, mtl_id, mtl_id *),
                        ctx->dev->device, api->sel.newComputePipelineState,
                        function, &error);
  rk__mtl_release(api, function);
  if (!f->pipeline)
    return rk__fail(RK_ERR_COMPILE,
                    "%s: kernel '%s': newComputePipelineStateWithFunction "
                    "failed on %s: %s",
                    name, e->name, ctx->dev->info.name,
                    rk__mtl_error_text(api, error, "(no message)"));
  return RK_OK;
}

/* Entry e's pipeline: from the library's cache entry (when the library is
 * cached), else made now and added there. */
static rk_status_t make_pipeline(mtl_context_t *ctx, mtl_module_t *m,
                                 mtl_library_cache_t *cached,
                                 const rk_entry_t *e, const char *name,
                                 mtl_function_t *f) {
  const rk_objc_api_t *api = ctx->api;
  f->pipeline = NULL;
  if (cached) {
    pthread_mutex_lock(&ctx->cache_lock);
    for (mtl_pipeline_cache_t *p = cached->pipelines; p; p = p->next)
      if (strcmp(p->entry, e->name) == 0) {
        f->pipeline = p->pipeline;
        rk__mtl_retain(api, f->pipeline);
        break;
      }
    pthread_mutex_unlock(&ctx->cache_lock);
  }
  if (!f->pipeline) {
    RK_RETURN_IF_ERROR(new_pipeline(ctx, m, e, name, f));
    mtl_pipeline_cache_t *p = cached ? calloc(1, sizeof *p) : NULL;
    if (p && (p->entry = strdup(e->name)) != NULL) {
      p->pipeline = f->pipeline;
      rk__mtl_retain(api, p->pipeline);
      pthread_mutex_lock(&ctx->cache_lock);
      p->next = cached->pipelines;
      cached->pipelines = p;
      pthread_mutex_unlock(&ctx->cache_lock);
    } else {
      free(p);
    }
  }
  f->max_threads =
      rk__mtl_send_ul(api, f->pipeline, api->sel.maxTotalThreadsPerThreadgroup);
  f->static_shared = e->shared_bytes;
  f->dyn_shared = e->dynamic_shared;
  return RK_OK;
}

rk_status_t rk__mtl_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module) {
  mtl_context_t *ctx = mtl_ctx(context);
  const rk_objc_api_t *api = ctx->api;
  const char *name = rk__kernel_source_name(options);
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_MSL, NULL, &r));
  const rk_entry_list_t *list = r.entries;
  mtl_module_t *m = calloc(1, sizeof *m);
  if (!m) {
    rk_codegen_result_free(&r);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: module");
  }
  m->entries = r.entries;
  r.entries = NULL; /* the module owns the list */
  void *pool = rk__mtl_pool_push(api);
  bool hit = false;
  mtl_library_cache_t *cached = NULL;
  rk_status_t s = get_library(ctx, r.text, name, options->no_cache, &m->library,
                              &cached, &hit);
  rk_codegen_result_free(&r);

  size_t nf = list->count, total = 0;
  for (size_t i = 0; i < nf; ++i) total += list->entries[i].param_count;
  if (s == RK_OK) {
    m->fns = calloc(nf ? nf : 1, sizeof *m->fns);
    m->params = calloc(total ? total : 1, sizeof *m->params);
    m->base.functions = calloc(nf ? nf : 1, sizeof *m->base.functions);
    if (!m->fns || !m->params || !m->base.functions)
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "metal: module");
  }
  if (s == RK_OK) m->base.nfunctions = nf;
  size_t p = 0;
  for (size_t i = 0; i < nf && s == RK_OK; ++i) {
    const rk_entry_t *e = &list->entries[i];
    rk_function_t *fn = &m->base.functions[i];
    fn->name = e->name;
    fn->nparams = e->param_count;
    fn->params = &m->params[p];
    for (size_t j = 0; j < e->param_count; ++j, ++p) {
      const rk_entry_param_t *ep = &e->params[j];
      if (ep->kind == RK_ARG_STRUCT && ep->size > RK_ARG_STRUCT_MAX) {
        s = rk__fail(RK_ERR_COMPILE,
                     "%s: kernel '%s' parameter '%s' is a %zu-byte struct; "
                     "struct arguments are limited to %d bytes",
                     name, e->name, ep->name, ep->size, RK_ARG_STRUCT_MAX);
        break;
      }
      m->params[p].kind = ep->kind;
      m->params[p].size = ep->size;
      snprintf(m->params[p].name, sizeof m->params[p].name, "%s", ep->name);
    }
    if (s == RK_OK) s = make_pipeline(ctx, m, cached, e, name, &m->fns[i]);
    if (s == RK_OK && m->fns[i].max_threads > 0)
      fn->max_threads = m->fns[i].max_threads > UINT32_MAX
                            ? UINT32_MAX
                            : (uint32_t)m->fns[i].max_threads;
  }
  if (s != RK_OK) {
    module_free(m, api);
    rk__mtl_pool_pop(api, pool);
    return s;
  }
  rk__mtl_pool_pop(api, pool);
  m->base.cache_hit = hit;
  *out_module = &m->base;
  return RK_OK;
}

void rk__mtl_module_destroy(rk_module_t *module) {
  mtl_module_t *m = (mtl_module_t *)module;
  const rk_objc_api_t *api = mtl_ctx(module->context)->api;
  void *pool = rk__mtl_pool_push(api);
  module_free(m, api);
  rk__mtl_pool_pop(api, pool);
}

/* ---- Launches ----------------------------------------------------------- */

static mtl_function_t *function_of(rk_function_t *fn) {
  mtl_module_t *m = (mtl_module_t *)fn->module;
  return &m->fns[fn - m->base.functions];
}

/* Threadgroup memory lengths are multiples of 16 bytes. */
static size_t dyn_bytes(size_t shared_mem) {
  return (shared_mem + 15) & ~(size_t)15;
}

rk_status_t rk__mtl_check_launch(mtl_context_t *ctx, const mtl_launch_t *L) {
  rk_function_t *fn = L->function;
  const mtl_function_t *f = function_of(fn);
  const mtl_device_t *dev = ctx->dev;
  const size_t threads = (size_t)L->block.x * L->block.y * L->block.z;
  if (threads > f->max_threads)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': block (%u,%u,%u) has %zu threads; this "
                    "kernel allows at most %lu on %s",
                    fn->name, L->block.x, L->block.y, L->block.z, threads,
                    f->max_threads, dev->info.name);
  const unsigned long max[3] = {dev->max_threads.width, dev->max_threads.height,
                                dev->max_threads.depth};
  const uint32_t b[3] = {L->block.x, L->block.y, L->block.z};
  for (int d = 0; d < 3; ++d)
    if (b[d] > max[d])
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': block dimension %d is %u; %s allows at "
                      "most %lu",
                      fn->name, d, b[d], dev->info.name, max[d]);
  size_t dyn = f->dyn_shared ? dyn_bytes(L->shared_mem) : 0;
  if (f->static_shared + dyn > dev->info.shared_mem_per_block)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': %zu bytes of threadgroup memory (%zu "
                    "static, %zu dynamic); %s has %llu",
                    fn->name, f->static_shared + dyn, f->static_shared, dyn,
                    dev->info.name,
                    (unsigned long long)dev->info.shared_mem_per_block);
  return RK_OK;
}

rk_status_t rk__mtl_encode_launch(mtl_context_t *ctx, mtl_id enc,
                                  const mtl_launch_t *L) {
  const rk_objc_api_t *api = ctx->api;
  rk_function_t *fn = L->function;
  const mtl_function_t *f = function_of(fn);
  RK_SEND(api, void, (mtl_id, mtl_sel, mtl_id), enc,
          api->sel.setComputePipelineState, f->pipeline);
  for (size_t i = 0; i < fn->nparams; ++i) {
    const rk__param_t *p = &fn->params[i];
    const void *value = L->args->values[i];
    if (p->kind != RK_ARG_PTR) {
      RK_SEND(api, void,
              (mtl_id, mtl_sel, const void *, unsigned long, unsigned long),
              enc, api->sel.setBytes, value, p->size, i);
      continue;
    }
    rk_devptr_t ptr;
    memcpy(&ptr, value, sizeof ptr);
    mtl_id buffer = NULL;
    size_t off = 0;
    if (ptr != 0) {
      rk_status_t s = rk__mtl_resolve(ctx, ptr, 0, &buffer, &off);
      if (s != RK_OK)
        return rk__fail_context(s, "launch of '%s': argument %zu (%s)",
                                fn->name, i, p->name);
    }
    /* A NULL pointer binds nil (the kernel must not use it). The encoder
     * keeps its own reference to a buffer. */
    RK_SEND(api, void, (mtl_id, mtl_sel, mtl_id, unsigned long, unsigned long),
            enc, api->sel.setBuffer, buffer, off, i);
    rk__mtl_release(api, buffer);
  }
  if (f->dyn_shared)
    RK_SEND(api, void, (mtl_id, mtl_sel, unsigned long, unsigned long), enc,
            api->sel.setThreadgroupMemoryLength,
            dyn_bytes(L->shared_mem ? L->shared_mem : 1), 0);
  mtl_size_t grid = {L->grid.x, L->grid.y, L->grid.z};
  mtl_size_t block = {L->block.x, L->block.y, L->block.z};
  RK_SEND(api, void, (mtl_id, mtl_sel, mtl_size_t, mtl_size_t), enc,
          api->sel.dispatchThreadgroups, grid, block);
  return RK_OK;
}
