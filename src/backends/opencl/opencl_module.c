/* OpenCL modules: kernel language -> OpenCL C (rk_transpile) -> rewritten
 * pointer parameters -> clBuildProgram, cached in memory per context; and
 * launches (arguments + NDRange).
 *
 * Pointer parameters. An rk device pointer may point anywhere inside an
 * allocation, but an OpenCL buffer argument starts at its buffer's origin
 * (sub-buffers would need CL_DEVICE_MEM_BASE_ADDR_ALIGN alignment). So each
 * generated `__global T *p` parameter becomes two, `__global T *rk_pb_p,
 * ulong rk_po_p`, and the kernel body starts with
 * `__global T *p = (__global T *)((__global uchar *)rk_pb_p + rk_po_p);`
 * (on the same line as the brace, so line numbers stay those of the
 * transpiler's output). Any byte offset works.
 *
 * Defines. The transpiler accepts `#define NAME <constant>`, so the compile
 * options' defines are prepended as such lines; diagnostics are moved back
 * to the user's line numbers.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "hal/kernel_source.h"

struct ocl_program_cache {
  char key[33];
  cl_program program;
  ocl_program_cache_t *next;
};

static const char kBuildOptions[] = "-cl-std=CL1.2";

/* ---- Rewriting pointer parameters -------------------------------------- */

static const char *skip_space(const char *p, const char *end) {
  while (p < end && isspace((unsigned char)*p)) ++p;
  return p;
}

/* Splits "TYPE NAME" (trimmed, in [b, e)) at the trailing identifier. */
static bool split_param(const char *b, const char *e, const char **name) {
  while (e > b && isspace((unsigned char)e[-1])) --e;
  const char *n = e;
  while (n > b && (isalnum((unsigned char)n[-1]) || n[-1] == '_')) --n;
  if (n == e || n == b) return false;
  *name = n;
  return true;
}

static const char *find_kernel(const char *text, const char *name) {
  static const char kPrefix[] = "__kernel void ";
  size_t nlen = strlen(name);
  for (const char *p = strstr(text, kPrefix); p; p = strstr(p + 1, kPrefix)) {
    const char *n = p + sizeof kPrefix - 1;
    if (strncmp(n, name, nlen) == 0 && n[nlen] == '(') return n + nlen;
  }
  return NULL;
}

rk_status_t rk__ocl_rewrite_offsets(const char *text,
                                    const rk_entry_list_t *entries,
                                    char **out_text, bool *dyn) {
  /* Where each entry's kernel is: `open` at its '(', `close` at the ')'
   * that matches it, `brace` just after the body's '{'. Rewritten in text
   * order. */
  typedef struct {
    size_t entry;
    const char *open, *close, *brace;
  } site_t;
  size_t n = entries->count;
  site_t *sites = calloc(n ? n : 1, sizeof *sites);
  if (!sites) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: rewrite");
  for (size_t i = 0; i < n; ++i) {
    const rk_entry_t *e = &entries->entries[i];
    dyn[i] = false;
    const char *open = find_kernel(text, e->name);
    if (!open) {
      free(sites);
      return rk__fail(RK_ERR_INTERNAL,
                      "opencl: the generated OpenCL C has no kernel '%s'",
                      e->name);
    }
    int depth = 0;
    const char *p = open;
    for (; *p; ++p) {
      if (*p == '(') ++depth;
      if (*p == ')' && --depth == 0) break;
    }
    const char *brace = *p ? strchr(p, '{') : NULL;
    if (!brace) {
      free(sites);
      return rk__fail(RK_ERR_INTERNAL,
                      "opencl: cannot read the parameters of generated "
                      "kernel '%s'",
                      e->name);
    }
    sites[i].entry = i;
    sites[i].open = open;
    sites[i].close = p;
    sites[i].brace = brace + 1;
  }
  /* Sort by position (insertion sort; few entries). */
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && sites[j].open < sites[j - 1].open; --j) {
      site_t t = sites[j];
      sites[j] = sites[j - 1];
      sites[j - 1] = t;
    }

  rk__strbuf_t out, prologue;
  rk__strbuf_init(&out);
  rk__strbuf_init(&prologue);
  const char *copied = text;
  rk_status_t s = RK_OK;
  for (size_t k = 0; k < n && s == RK_OK; ++k) {
    const site_t *site = &sites[k];
    const rk_entry_t *e = &entries->entries[site->entry];
    rk__strbuf_append(&out, copied, (size_t)(site->open + 1 - copied));
    rk__strbuf_free(&prologue);
    rk__strbuf_init(&prologue);
    /* Walk the comma-separated parameters. */
    const char *b = site->open + 1;
    size_t index = 0;
    const char *first = skip_space(b, site->close);
    bool empty = first == site->close ||
                 (site->close - first == 4 && strncmp(first, "void", 4) == 0);
    while (!empty && b <= site->close) {
      const char *c = b;
      while (c < site->close && *c != ',') ++c;
      const char *name = NULL;
      if (!split_param(b, c, &name)) {
        s = rk__fail(RK_ERR_INTERNAL,
                     "opencl: cannot read parameter %zu of generated kernel "
                     "'%s'",
                     index, e->name);
        break;
      }
      const char *name_end = name;
      while (isalnum((unsigned char)*name_end) || *name_end == '_') ++name_end;
      size_t nlen = (size_t)(name_end - name);
      if (index > 0) rk__strbuf_puts(&out, ",");
      if (index < e->param_count && e->params[index].kind == RK_ARG_PTR) {
        /* Type text: from the first non-space to the name. */
        const char *tb = skip_space(b, name);
        size_t tlen = (size_t)(name - tb);
        while (tlen > 0 && isspace((unsigned char)tb[tlen - 1])) --tlen;
        /* Leading white space (newlines) kept, so lines stay put. */
        rk__strbuf_append(&out, b, (size_t)(tb - b));
        rk__strbuf_printf(&out, "%.*s rk_pb_%.*s, ulong rk_po_%.*s", (int)tlen,
                          tb, (int)nlen, name, (int)nlen, name);
        rk__strbuf_append(&out, name_end, (size_t)(c - name_end));
        rk__strbuf_printf(&prologue,
                          " %.*s %.*s = (%.*s)((__global uchar *)rk_pb_%.*s "
                          "+ rk_po_%.*s);",
                          (int)tlen, tb, (int)nlen, name, (int)tlen, tb,
                          (int)nlen, name, (int)nlen, name);
      } else if (index == e->param_count && nlen == 13 &&
                 strncmp(name, "rk_dyn_shared", 13) == 0) {
        dyn[site->entry] = true;
        rk__strbuf_append(&out, b, (size_t)(c - b));
      } else if (index < e->param_count) {
        rk__strbuf_append(&out, b, (size_t)(c - b));
      } else {
        s = rk__fail(RK_ERR_INTERNAL,
                     "opencl: generated kernel '%s' has more parameters than "
                     "its entry lists (%zu)",
                     e->name, e->param_count);
        break;
      }
      ++index;
      b = c + 1;
      if (c == site->close) break;
    }
    if (s == RK_OK && (empty ? 0 : index) < e->param_count)
      s = rk__fail(RK_ERR_INTERNAL,
                   "opencl: generated kernel '%s' has %zu parameters; its "
                   "entry lists %zu",
                   e->name, empty ? (size_t)0 : index, e->param_count);
    if (s == RK_OK && dyn[site->entry] != e->dynamic_shared)
      s = rk__fail(RK_ERR_INTERNAL,
                   "opencl: generated kernel '%s' %s the hidden "
                   "rk_dyn_shared parameter, but its entry says it %s "
                   "rk_dynamic_shared()",
                   e->name, dyn[site->entry] ? "has" : "lacks",
                   e->dynamic_shared ? "uses" : "does not use");
    if (s != RK_OK) break;
    if (empty)
      rk__strbuf_append(&out, site->open + 1,
                        (size_t)(site->close - site->open - 1));
    /* From ')' through '{', then the prologue on the brace's line. */
    rk__strbuf_append(&out, site->close, (size_t)(site->brace - site->close));
    if (prologue.data) rk__strbuf_puts(&out, prologue.data);
    copied = site->brace;
  }
  if (s == RK_OK) rk__strbuf_puts(&out, copied);
  free(sites);
  rk__strbuf_free(&prologue);
  if (s == RK_OK && out.failed)
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: rewrite");
  if (s != RK_OK) {
    rk__strbuf_free(&out);
    return s;
  }
  *out_text = out.data;
  return RK_OK;
}

/* ---- Transpiling ------------------------------------------------------- */

/* ---- Building ----------------------------------------------------------- */

/* The LINE of the first log line that mentions "error" and holds
 * ":LINE:COL:" (clang's "file:3:17: error: ..." or PoCL's "error:
 * file:3:17: ..."), or 0. */
static unsigned log_error_line(const char *log) {
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

static rk_status_t build_failed(ocl_context_t *ctx, cl_program program,
                                cl_int err, const char *text,
                                const char *name) {
  const rk_cl_api_t *api = ctx->api;
  size_t size = 0;
  char *log = NULL;
  if (api->clGetProgramBuildInfo(program, ctx->dev->id, RK_CL_PROGRAM_BUILD_LOG,
                                 0, NULL, &size) == RK_CL_SUCCESS &&
      size > 0 && (log = malloc(size + 1)) != NULL) {
    if (api->clGetProgramBuildInfo(program, ctx->dev->id,
                                   RK_CL_PROGRAM_BUILD_LOG, size, log,
                                   NULL) != RK_CL_SUCCESS)
      log[0] = '\0';
    log[size] = '\0';
  }
  rk__strbuf_t msg;
  rk__strbuf_init(&msg);
  rk__strbuf_printf(&msg,
                    "%s: the OpenCL compiler of %s (%s) rejected the "
                    "generated OpenCL C: %s (%d)\n%s",
                    name, ctx->dev->info.name, ctx->dev->platform_name,
                    rk__cl_error_name(err), (int)err,
                    log && log[0] ? log : "(no build log)\n");
  unsigned line = log ? log_error_line(log) : 0;
  if (line) {
    const char *p = text;
    for (unsigned l = 1; l < line && p; ++l) {
      p = strchr(p, '\n');
      if (p) ++p;
    }
    if (p)
      rk__strbuf_printf(&msg, "generated line %u: %.*s\n", line,
                        (int)strcspn(p, "\n"), p);
  }
  rk__fail(RK_ERR_COMPILE, "%s", msg.data ? msg.data : "build failed");
  rk__strbuf_free(&msg);
  free(log);
  return RK_ERR_COMPILE;
}

rk_status_t rk__ocl_get_program(ocl_context_t *ctx, const char *text,
                                const char *name, bool no_cache,
                                cl_program *out, bool *out_hit) {
  const rk_cl_api_t *api = ctx->api;
  rk__hash_t h;
  char key[33];
  rk__hash_init(&h);
  rk__hash_str(&h, kBuildOptions);
  rk__hash_str(&h, text);
  rk__hash_hex(&h, key);
  *out_hit = false;
  if (!no_cache) {
    pthread_mutex_lock(&ctx->cache_lock);
    for (ocl_program_cache_t *c = ctx->cache; c; c = c->next) {
      if (strcmp(c->key, key) == 0) {
        api->clRetainProgram(c->program);
        *out = c->program;
        *out_hit = true;
        pthread_mutex_unlock(&ctx->cache_lock);
        return RK_OK;
      }
    }
    pthread_mutex_unlock(&ctx->cache_lock);
  }
  cl_int err = RK_CL_SUCCESS;
  size_t len = strlen(text);
  cl_program program =
      api->clCreateProgramWithSource(ctx->cl, 1, &text, &len, &err);
  if (!program) return rk__cl_fail(err, "clCreateProgramWithSource");
  err =
      api->clBuildProgram(program, 1, &ctx->dev->id, kBuildOptions, NULL, NULL);
  if (err != RK_CL_SUCCESS) {
    rk_status_t s = build_failed(ctx, program, err, text, name);
    api->clReleaseProgram(program);
    return s;
  }
  if (!no_cache) {
    ocl_program_cache_t *c = calloc(1, sizeof *c);
    if (c) {
      memcpy(c->key, key, sizeof key);
      c->program = program;
      api->clRetainProgram(program);
      pthread_mutex_lock(&ctx->cache_lock);
      c->next = ctx->cache;
      ctx->cache = c;
      pthread_mutex_unlock(&ctx->cache_lock);
    }
  }
  *out = program;
  return RK_OK;
}

void rk__ocl_cache_release(ocl_context_t *ctx) {
  for (ocl_program_cache_t *c = ctx->cache, *next; c; c = next) {
    next = c->next;
    ctx->api->clReleaseProgram(c->program);
    free(c);
  }
  ctx->cache = NULL;
}

/* ---- Modules ------------------------------------------------------------ */

static void module_free(ocl_module_t *m, const rk_cl_api_t *api) {
  if (m->fns) {
    for (size_t i = 0; i < m->base.nfunctions; ++i) {
      if (m->fns[i].kernel) api->clReleaseKernel(m->fns[i].kernel);
      pthread_mutex_destroy(&m->fns[i].lock);
      free(m->fns[i].cl_index);
    }
  }
  if (m->program) api->clReleaseProgram(m->program);
  rk_entry_list_destroy(m->entries);
  free(m->fns);
  free(m->params);
  free(m->base.functions);
  free(m);
}

rk_status_t rk__ocl_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module) {
  ocl_context_t *ctx = ocl_ctx(context);
  const rk_cl_api_t *api = ctx->api;
  const char *name = options->source_name && *options->source_name
                         ? options->source_name
                         : "<source>";
  char *full = NULL, *text = NULL, *rewritten = NULL;
  unsigned define_lines = 0;
  RK_RETURN_IF_ERROR(
      rk__source_with_defines(source, options, &full, &define_lines));

  rk_transpile_options_t topt;
  rk_transpile_options_init(&topt);
  topt.source_name = name;
  rk_diagnostic_t diag;
  rk_entry_list_t *list = NULL;
  rk_status_t s = rk_transpile_ex(full, RK_TARGET_OPENCL, &topt, &text, &diag);
  if (s == RK_ERR_COMPILE && define_lines)
    s = rk__source_diag(&diag, source, name, options, define_lines);
  if (s == RK_OK) s = rk_codegen_list_entries(full, &topt, &list, &diag);
  free(full);
  if (s != RK_OK) {
    rk_transpile_free(text);
    return s;
  }

  ocl_module_t *m = calloc(1, sizeof *m);
  bool *dyn = calloc(list->count ? list->count : 1, sizeof *dyn);
  if (!m || !dyn) {
    free(m);
    free(dyn);
    rk_transpile_free(text);
    rk_entry_list_destroy(list);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: module");
  }
  m->entries = list;
  s = rk__ocl_rewrite_offsets(text, list, &rewritten, dyn);
  rk_transpile_free(text);
  bool hit = false;
  if (s == RK_OK)
    s = rk__ocl_get_program(ctx, rewritten, name, options->no_cache,
                            &m->program, &hit);
  free(rewritten);

  size_t nf = list->count, total = 0;
  for (size_t i = 0; i < nf; ++i) total += list->entries[i].param_count;
  if (s == RK_OK) {
    m->fns = calloc(nf ? nf : 1, sizeof *m->fns);
    m->params = calloc(total ? total : 1, sizeof *m->params);
    m->base.functions = calloc(nf ? nf : 1, sizeof *m->base.functions);
    if (!m->fns || !m->params || !m->base.functions)
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: module");
  }
  if (s == RK_OK) {
    m->base.nfunctions = nf;
    for (size_t i = 0; i < nf; ++i) pthread_mutex_init(&m->fns[i].lock, NULL);
  }
  size_t p = 0;
  for (size_t i = 0; i < nf && s == RK_OK; ++i) {
    const rk_entry_t *e = &list->entries[i];
    ocl_function_t *f = &m->fns[i];
    rk_function_t *fn = &m->base.functions[i];
    fn->name = e->name;
    fn->nparams = e->param_count;
    fn->params = &m->params[p];
    f->cl_index =
        calloc(e->param_count ? e->param_count : 1, sizeof *f->cl_index);
    if (!f->cl_index) {
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: module");
      break;
    }
    cl_uint idx = 0;
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
      f->cl_index[j] = idx;
      idx += ep->kind == RK_ARG_PTR ? 2 : 1;
    }
    if (s != RK_OK) break;
    f->dyn_shared = dyn[i];
    f->dyn_index = idx;
    cl_int err = RK_CL_SUCCESS;
    f->kernel = api->clCreateKernel(m->program, e->name, &err);
    if (!f->kernel) {
      rk__cl_fail(err, "clCreateKernel");
      s = rk__fail_context(rk__cl_error_status(err), "%s: kernel '%s'", name,
                           e->name);
      break;
    }
    size_t wg = 0;
    if (api->clGetKernelWorkGroupInfo(f->kernel, ctx->dev->id,
                                      RK_CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                                      &wg, NULL) != RK_CL_SUCCESS)
      wg = ctx->dev->info.max_threads_per_block;
    f->max_work_group = wg;
  }
  free(dyn);
  if (s != RK_OK) {
    module_free(m, api);
    return s;
  }
  m->base.cache_hit = hit;
  *out_module = &m->base;
  return RK_OK;
}

void rk__ocl_module_destroy(rk_module_t *module) {
  ocl_module_t *m = (ocl_module_t *)module;
  module_free(m, ocl_ctx(module->context)->api);
}

/* ---- Launches ----------------------------------------------------------- */

static rk_status_t set_args_locked(ocl_context_t *ctx, rk_function_t *fn,
                                   ocl_function_t *f, const ocl_launch_t *L) {
  const rk_cl_api_t *api = ctx->api;
  for (size_t i = 0; i < fn->nparams; ++i) {
    const rk__param_t *p = &fn->params[i];
    const void *value = L->args->values[i];
    cl_int err;
    if (p->kind == RK_ARG_PTR) {
      rk_devptr_t ptr;
      memcpy(&ptr, value, sizeof ptr);
      cl_mem mem = NULL;
      size_t off = 0;
      if (ptr != 0) {
        rk_status_t s = rk__ocl_resolve_locked(ctx, ptr, 0, &mem, &off);
        if (s != RK_OK)
          return rk__fail_context(s, "launch of '%s': argument %zu (%s)",
                                  fn->name, i, p->name);
      }
      cl_ulong off64 = off;
      err = api->clSetKernelArg(f->kernel, f->cl_index[i], sizeof mem, &mem);
      if (err == RK_CL_SUCCESS)
        err = api->clSetKernelArg(f->kernel, f->cl_index[i] + 1, sizeof off64,
                                  &off64);
    } else {
      err = api->clSetKernelArg(f->kernel, f->cl_index[i], p->size, value);
    }
    if (err != RK_CL_SUCCESS) {
      rk__cl_fail(err, "clSetKernelArg");
      return rk__fail_context(rk__cl_error_status(err),
                              "launch of '%s': argument %zu (%s)", fn->name, i,
                              p->name);
    }
  }
  if (f->dyn_shared) {
    size_t bytes = L->shared_mem ? L->shared_mem : 1;
    cl_int err = api->clSetKernelArg(f->kernel, f->dyn_index, bytes, NULL);
    if (err != RK_CL_SUCCESS) {
      rk__cl_fail(err, "clSetKernelArg");
      return rk__fail_context(rk__cl_error_status(err),
                              "launch of '%s': %zu bytes of dynamic shared "
                              "memory",
                              fn->name, L->shared_mem);
    }
  }
  return RK_OK;
}

rk_status_t rk__ocl_enqueue_launch(ocl_context_t *ctx, cl_command_queue queue,
                                   const ocl_launch_t *L, cl_event *out_event) {
  rk_function_t *fn = L->function;
  ocl_module_t *m = (ocl_module_t *)fn->module;
  ocl_function_t *f = &m->fns[fn - m->base.functions];
  const size_t threads = (size_t)L->block.x * L->block.y * L->block.z;
  if (threads > f->max_work_group)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': block (%u,%u,%u) has %zu threads; this "
                    "kernel allows at most %zu on %s",
                    fn->name, L->block.x, L->block.y, L->block.z, threads,
                    f->max_work_group, ctx->dev->info.name);
  const uint32_t b[3] = {L->block.x, L->block.y, L->block.z};
  for (int d = 0; d < 3; ++d)
    if (b[d] > ctx->dev->max_item[d])
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "launch of '%s': block dimension %d is %u; %s allows at "
                      "most %zu",
                      fn->name, d, b[d], ctx->dev->info.name,
                      ctx->dev->max_item[d]);
  size_t local[3] = {L->block.x, L->block.y, L->block.z};
  size_t global[3] = {(size_t)L->grid.x * L->block.x,
                      (size_t)L->grid.y * L->block.y,
                      (size_t)L->grid.z * L->block.z};
  /* The memory lock keeps resolved buffers alive until the command holds
   * its own references; the function's lock keeps its arguments. */
  pthread_rwlock_rdlock(&ctx->mem_lock);
  pthread_mutex_lock(&f->lock);
  rk_status_t s = set_args_locked(ctx, fn, f, L);
  if (s == RK_OK) {
    cl_int err = ctx->api->clEnqueueNDRangeKernel(
        queue, f->kernel, 3, NULL, global, local, 0, NULL, out_event);
    if (err != RK_CL_SUCCESS) {
      rk__cl_fail(err, "clEnqueueNDRangeKernel");
      s = rk__fail_context(rk__cl_error_status(err),
                           "launch of '%s' (grid %u,%u,%u, block %u,%u,%u)",
                           fn->name, L->grid.x, L->grid.y, L->grid.z,
                           L->block.x, L->block.y, L->block.z);
    }
  }
  pthread_mutex_unlock(&f->lock);
  pthread_rwlock_unlock(&ctx->mem_lock);
  return s;
}
