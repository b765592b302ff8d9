/* OpenCL modules: kernel language -> the front end (OpenCL C, pointers as
 * buffer + offset) -> clBuildProgram, cached in memory per context; and
 * launches (arguments + NDRange).
 *
 * Pointer parameters. An rk device pointer may point anywhere inside an
 * allocation, but an OpenCL buffer argument starts at its buffer's origin
 * (sub-buffers would need CL_DEVICE_MEM_BASE_ADDR_ALIGN alignment). So the
 * transpiler prints each pointer launch parameter as two, `__global T
 * *rk_pb_p, ulong rk_po_p` (rk_transpile_options_t.opencl_buffer_offsets),
 * and a launch sets the buffer and the byte offset: any offset works.
 *
 * Defines and diagnostics: rk__kernel_front_end (hal/kernel_source.h).
 * */
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
  const char *name = rk__kernel_source_name(options);
  rk_transpile_options_t topt;
  rk_transpile_options_init(&topt);
  topt.opencl_buffer_offsets = true;
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_OPENCL, &topt, &r));
  const rk_entry_list_t *list = r.entries;

  ocl_module_t *m = calloc(1, sizeof *m);
  if (!m) {
    rk_codegen_result_free(&r);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "opencl: module");
  }
  m->entries = r.entries;
  r.entries = NULL; /* the module owns the list */
  bool hit = false;
  rk_status_t s = rk__ocl_get_program(ctx, r.text, name, options->no_cache,
                                      &m->program, &hit);
  rk_codegen_result_free(&r);

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
    f->dyn_shared = e->dynamic_shared;
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
    m->base.functions[i].max_threads =
        wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
  }
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
