/* CUDA modules: kernel language -> CUDA C -> NVRTC -> cuModuleLoadData,
 * with the built images cached on disk; and launches (see cuda.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "base/cache_dir.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "hal/kernel_source.h"

/* Bumped when what rk asks NVRTC for changes in a way the key misses. */
static const char kCacheFormat[] = "rk-cuda-image-1";
/* NVRTC options besides the architecture. The generated code is C++17-
 * clean and needs no headers. */
static const char *const kOptions[] = {"--std=c++17"};

/* ---- The disk cache ------------------------------------------------------ */

/* Images above this size are neither cached nor read from the cache. */
static const size_t kMaxCachedImage = (size_t)1 << 30;

/* ---- NVRTC --------------------------------------------------------------- */

/* The line NVRTC's first error points at ("name(12): error: ..."), or 0. */
static unsigned log_error_line(const char *log) {
  for (const char *p = strstr(log, "): error"); p;
       p = strstr(p + 1, "): error")) {
    const char *q = p;
    while (q > log && q[-1] >= '0' && q[-1] <= '9') --q;
    if (q < p && q > log && q[-1] == '(') return (unsigned)strtoul(q, NULL, 10);
  }
  return 0;
}

static rk_status_t compile_failed(const rk_nvrtc_api_t *nv, nvrtcProgram prog,
                                  nvrtcResult err, const char *text,
                                  const char *name, const char *arch) {
  size_t size = 0;
  char *log = NULL;
  if (nv->nvrtcGetProgramLogSize(prog, &size) == RK_NVRTC_SUCCESS && size > 0 &&
      (log = malloc(size + 1)) != NULL) {
    if (nv->nvrtcGetProgramLog(prog, log) != RK_NVRTC_SUCCESS) log[0] = '\0';
    log[size] = '\0';
  }
  rk__strbuf_t msg;
  rk__strbuf_init(&msg);
  rk__strbuf_printf(&msg,
                    "%s: NVRTC %d.%d (%s) rejected the generated CUDA C: %s "
                    "(%d)\n%s",
                    name, nv->major, nv->minor, arch, rk__nvrtc_error_name(err),
                    (int)err, log && log[0] ? log : "(no compile log)\n");
  unsigned line = log ? log_error_line(log) : 0;
  int len = 0;
  const char *p = line ? rk__source_line(text, line, &len) : NULL;
  if (p) rk__strbuf_printf(&msg, "generated line %u: %.*s\n", line, len, p);
  rk_status_t s = rk__nvrtc_error_status(err);
  if (s == RK_OK) s = RK_ERR_INTERNAL;
  rk__fail(s, "%s", msg.data ? msg.data : "NVRTC failed");
  rk__strbuf_free(&msg);
  free(log);
  return s;
}

/* The architecture option for compute capability major.minor: the real
 * architecture (a CUBIN) when this NVRTC knows it, else the newest virtual
 * one not above it (PTX, finished by the driver). */
static rk_status_t pick_arch(const rk_nvrtc_api_t *nv, int major, int minor,
                             char *arch, size_t cap, bool *out_ptx) {
  const int want = major * 10 + minor;
  *out_ptx = false;
  int count = 0;
  if (!nv->nvrtcGetNumSupportedArchs || !nv->nvrtcGetSupportedArchs ||
      nv->nvrtcGetNumSupportedArchs(&count) != RK_NVRTC_SUCCESS || count <= 0 ||
      count > 256) {
    snprintf(arch, cap, "sm_%d", want);
    return RK_OK;
  }
  int archs[256];
  if (nv->nvrtcGetSupportedArchs(archs) != RK_NVRTC_SUCCESS) {
    snprintf(arch, cap, "sm_%d", want);
    return RK_OK;
  }
  int best = 0;
  for (int i = 0; i < count; ++i) {
    if (archs[i] == want) {
      snprintf(arch, cap, "sm_%d", want);
      return RK_OK;
    }
    if (archs[i] < want && archs[i] > best) best = archs[i];
  }
  if (!best)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cuda: NVRTC %d.%d cannot build for compute capability "
                    "%d.%d (its oldest architecture is sm_%d)",
                    nv->major, nv->minor, major, minor, archs[0]);
  snprintf(arch, cap, "compute_%d", best);
  *out_ptx = true;
  return RK_OK;
}

static rk_status_t nvrtc_build(const rk_nvrtc_api_t *nv, const char *text,
                               const char *name, const char *arch, bool ptx,
                               rk__cu_image_t *img) {
  nvrtcProgram prog = NULL;
  nvrtcResult err = nv->nvrtcCreateProgram(&prog, text, name, 0, NULL, NULL);
  if (err != RK_NVRTC_SUCCESS)
    return rk__nvrtc_fail(nv, err, "nvrtcCreateProgram");
  char arch_opt[64];
  snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
  const char *opts[1 + sizeof kOptions / sizeof kOptions[0]];
  int nopts = 0;
  opts[nopts++] = arch_opt;
  for (size_t i = 0; i < sizeof kOptions / sizeof kOptions[0]; ++i)
    opts[nopts++] = kOptions[i];
  err = nv->nvrtcCompileProgram(prog, nopts, opts);
  if (err != RK_NVRTC_SUCCESS) {
    rk_status_t s = compile_failed(nv, prog, err, text, name, arch);
    nv->nvrtcDestroyProgram(&prog);
    return s;
  }
  size_t size = 0;
  if (!ptx && nv->nvrtcGetCUBINSize && nv->nvrtcGetCUBIN)
    err = nv->nvrtcGetCUBINSize(prog, &size);
  else
    err = nv->nvrtcGetPTXSize(prog, &size), ptx = true;
  char *data = NULL;
  if (err == RK_NVRTC_SUCCESS) {
    data = malloc(size + 1);
    if (!data) {
      nv->nvrtcDestroyProgram(&prog);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: %zu-byte image", size);
    }
    err = ptx ? nv->nvrtcGetPTX(prog, data) : nv->nvrtcGetCUBIN(prog, data);
    data[size] = '\0';
  }
  nv->nvrtcDestroyProgram(&prog);
  if (err != RK_NVRTC_SUCCESS) {
    free(data);
    return rk__nvrtc_fail(nv, err, ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
  }
  img->data = data;
  img->size = size;
  img->ptx = ptx;
  return RK_OK;
}

void rk__cu_image_free(rk__cu_image_t *image) {
  free(image->data);
  memset(image, 0, sizeof *image);
}

rk_status_t rk__cu_build_text(const char *text, const char *name, int cc_major,
                              int cc_minor, bool no_cache,
                              rk__cu_image_t *img) {
  const rk_nvrtc_api_t *nv = NULL;
  RK_RETURN_IF_ERROR(rk__nvrtc_api(&nv));
  bool ptx = false;
  RK_RETURN_IF_ERROR(
      pick_arch(nv, cc_major, cc_minor, img->arch, sizeof img->arch, &ptx));
  if (!nv->nvrtcGetCUBIN) ptx = true;

  /* <cache>/cuda/<key>.cubin (or .ptx): used only where rk trusts the
   * directory and the entry's size and checksum match (base/cache_dir.h);
   * anything else is built again. */
  char dir[1024], path[1200] = "", key[33] = "";
  char *saved = rk__error_save();
  if (!no_cache && rk__cache_dir("cuda", dir, sizeof dir) == RK_OK) {
    rk__hash_t h;
    char version[32];
    snprintf(version, sizeof version, "%d.%d", nv->major, nv->minor);
    rk__hash_init(&h);
    rk__hash_str(&h, kCacheFormat);
    rk__hash_str(&h, version);
    rk__hash_str(&h, img->arch);
    for (size_t i = 0; i < sizeof kOptions / sizeof kOptions[0]; ++i)
      rk__hash_str(&h, kOptions[i]);
    rk__hash_str(&h, text);
    rk__hash_hex(&h, key);
    int n = snprintf(path, sizeof path, "%s/%s.%s", dir, key,
                     ptx ? "ptx" : "cubin");
    if (n < 0 || (size_t)n >= sizeof path) path[0] = '\0';
    void *data = NULL;
    size_t size = 0;
    if (path[0] &&
        rk__cache_read(path, key, kMaxCachedImage, &data, &size) == RK_OK &&
        size > 0) {
      rk__error_restore(saved);
      img->data = data;
      img->size = size;
      img->ptx = ptx;
      img->cache_hit = true;
      return RK_OK;
    }
    free(data);
  }
  rk__error_restore(saved);
  RK_RETURN_IF_ERROR(nvrtc_build(nv, text, name, img->arch, ptx, img));
  if (path[0]) {
    /* A cache that cannot be written only costs the next build. */
    saved = rk__error_save();
    if (img->size <= kMaxCachedImage)
      rk__cache_write(path, key, img->data, img->size);
    rk__error_restore(saved);
  }
  return RK_OK;
}

/* RK_CUDA_DEFINES ("NAME=VALUE NAME ..."): macros defined before the
 * generated CUDA C, for tuning the resident actor loop (docs/cuda.md).
 * Each becomes a #define line at the top of the text, so the kernel cache
 * keeps images built with different values apart. */
static bool define_char(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (!first && c >= '0' && c <= '9');
}

static rk_status_t with_defines(const char *text, char **out) {
  *out = NULL;
  const char *env = getenv("RK_CUDA_DEFINES");
  if (!env || !env[0]) return RK_OK;
  rk__strbuf_t b;
  rk__strbuf_init(&b);
  for (const char *p = env; *p;) {
    while (*p == ' ' || *p == ',') ++p;
    if (!*p) break;
    const char *name = p;
    while (define_char(*p, p == name)) ++p;
    size_t nlen = (size_t)(p - name);
    const char *value = "1";
    size_t vlen = 1;
    if (*p == '=') {
      value = ++p;
      while (define_char(*p, false)) ++p;
      vlen = (size_t)(p - value);
    }
    if (nlen == 0 || vlen == 0 || (*p && *p != ' ' && *p != ',')) {
      rk__strbuf_free(&b);
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "cuda: RK_CUDA_DEFINES=\"%s\": expected NAME or "
                      "NAME=VALUE (letters, digits, _) separated by spaces",
                      env);
    }
    rk__strbuf_printf(&b, "#define %.*s %.*s\n", (int)nlen, name, (int)vlen,
                      value);
  }
  rk__strbuf_puts(&b, text);
  if (b.failed || !b.data) {
    rk__strbuf_free(&b);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: RK_CUDA_DEFINES");
  }
  *out = b.data;
  return RK_OK;
}

rk_status_t rk__cu_build(const char *source,
                         const rk_compile_options_t *options, int cc_major,
                         int cc_minor, rk__cu_image_t *out_image,
                         rk_entry_list_t **out_entries, char **out_text) {
  memset(out_image, 0, sizeof *out_image);
  const char *name = rk__kernel_source_name(options);
  rk_transpile_options_t topt;
  rk_transpile_options_init(&topt);
  topt.persistent_actors = true;
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_CUDA, &topt, &r));
  char *defined = NULL;
  rk_status_t s = with_defines(r.text, &defined);
  if (s == RK_OK && defined) {
    free(r.text);
    r.text = defined;
  }
  if (s == RK_OK)
    s = rk__cu_build_text(r.text, name, cc_major, cc_minor, options->no_cache,
                          out_image);
  if (s != RK_OK) {
    rk_codegen_result_free(&r);
    return s;
  }
  *out_entries = r.entries;
  r.entries = NULL;
  if (out_text) {
    *out_text = r.text;
    r.text = NULL;
  }
  rk_codegen_result_free(&r);
  return RK_OK;
}

/* ---- Modules ------------------------------------------------------------- */

static void module_free(cu_module_t *m, cu_context_t *ctx) {
  rk__cu_unload_module(ctx, m->module);
  rk_entry_list_destroy(m->entries);
  free(m->fns);
  free(m->params);
  free(m->base.functions);
  free(m);
}

static rk_status_t load_functions(cu_context_t *ctx, cu_module_t *m,
                                  const char *name) {
  const rk_cu_api_t *api = ctx->api;
  const rk_entry_list_t *list = m->entries;
  size_t nf = list->count, total = 0;
  for (size_t i = 0; i < nf; ++i) total += list->entries[i].param_count;
  m->fns = calloc(nf ? nf : 1, sizeof *m->fns);
  m->params = calloc(total ? total : 1, sizeof *m->params);
  m->base.functions = calloc(nf ? nf : 1, sizeof *m->base.functions);
  if (!m->fns || !m->params || !m->base.functions)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: module");
  size_t p = 0;
  for (size_t i = 0; i < nf; ++i) {
    const rk_entry_t *e = &list->entries[i];
    rk_function_t *fn = &m->base.functions[i];
    fn->name = e->name;
    fn->nparams = e->param_count;
    fn->params = &m->params[p];
    for (size_t j = 0; j < e->param_count; ++j, ++p) {
      const rk_entry_param_t *ep = &e->params[j];
      if (ep->kind == RK_ARG_STRUCT && ep->size > RK_ARG_STRUCT_MAX)
        return rk__fail(RK_ERR_COMPILE,
                        "%s: kernel '%s' parameter '%s' is a %zu-byte struct; "
                        "struct arguments are limited to %d bytes",
                        name, e->name, ep->name, ep->size, RK_ARG_STRUCT_MAX);
      m->params[p].kind = ep->kind;
      m->params[p].size = ep->size;
      snprintf(m->params[p].name, sizeof m->params[p].name, "%s", ep->name);
    }
    cu_function_t *f = &m->fns[i];
    CUresult err = api->cuModuleGetFunction(&f->fn, m->module, e->name);
    if (err != RK_CUDA_SUCCESS) {
      rk_status_t s = rk__cu_check(ctx, err, "cuModuleGetFunction");
      return rk__fail_context(s, "%s: kernel '%s'", name, e->name);
    }
    if (api->cuFuncGetAttribute(&f->max_threads,
                                RK_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                f->fn) != RK_CUDA_SUCCESS)
      f->max_threads = (int)ctx->dev->info.max_threads_per_block;
    if (f->max_threads > 0) fn->max_threads = (uint32_t)f->max_threads;
    if (api->cuFuncGetAttribute(&f->static_shared,
                                RK_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                f->fn) != RK_CUDA_SUCCESS)
      f->static_shared = 0;
  }
  m->base.nfunctions = nf;
  return RK_OK;
}

rk_status_t rk__cu_compile(rk_context_t *context, const char *source,
                           const rk_compile_options_t *options,
                           rk_module_t **out_module) {
  cu_context_t *ctx = cu_ctx(context);
  const char *name = options->source_name && *options->source_name
                         ? options->source_name
                         : "<source>";
  RK_RETURN_IF_ERROR(rk__cu_enter(ctx));
  rk__cu_image_t img;
  rk_entry_list_t *list = NULL;
  RK_RETURN_IF_ERROR(rk__cu_build(source, options, ctx->dev->cc_major,
                                  ctx->dev->cc_minor, &img, &list, NULL));
  cu_module_t *m = calloc(1, sizeof *m);
  if (!m) {
    rk__cu_image_free(&img);
    rk_entry_list_destroy(list);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cuda: module");
  }
  m->entries = list;
  /* Loading code waits for an idle device: resident actor kernels step
   * aside meanwhile. */
  rk_status_t s = rk__cu_pause_actors(ctx, "loading a module");
  if (s != RK_OK) {
    rk__cu_image_free(&img);
    module_free(m, ctx);
    return rk__fail_context(s, "%s", name);
  }
  CUresult err = ctx->api->cuModuleLoadData(&m->module, img.data);
  if (err != RK_CUDA_SUCCESS) {
    m->module = NULL;
    s = rk__cu_check(ctx, err, "cuModuleLoadData");
    s = rk__fail_context(s, "%s: loading the %s image for %s", name,
                         img.ptx ? "PTX" : "CUBIN", img.arch);
  }
  bool hit = img.cache_hit;
  rk__cu_image_free(&img);
  if (s == RK_OK) s = load_functions(ctx, m, name);
  rk__cu_resume_actors(ctx);
  if (s != RK_OK) {
    module_free(m, ctx);
    return s;
  }
  m->base.cache_hit = hit;
  *out_module = &m->base;
  return RK_OK;
}

void rk__cu_module_destroy(rk_module_t *module) {
  cu_module_t *m = (cu_module_t *)module;
  cu_context_t *ctx = cu_ctx(module->context);
  /* Work queued with the module's kernels finishes first. */
  if (rk__cu_enter(ctx) == RK_OK) {
    rk_status_t s = rk__cu_sync_streams(ctx);
    if (s != RK_OK) rk__pending_record_last(&ctx->pending, s);
  }
  module_free(m, ctx);
}

/* ---- Launches ------------------------------------------------------------ */

rk_status_t rk__cu_check_geometry(const cu_context_t *ctx, rk_status_t status,
                                  const char *what, const char *name,
                                  rk_dim3_t grid, rk_dim3_t block) {
  const cu_device_t *d = ctx->dev;
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  const uint32_t b[3] = {block.x, block.y, block.z};
  for (int i = 0; i < 3; ++i) {
    if (g[i] > d->max_grid[i] || b[i] > d->max_block[i])
      return rk__fail(status,
                      "%s of '%s': grid (%u, %u, %u) of blocks (%u, %u, %u) "
                      "exceeds what %s allows: grid (%u, %u, %u), block (%u, "
                      "%u, %u)",
                      what, name, grid.x, grid.y, grid.z, block.x, block.y,
                      block.z, d->info.name, d->max_grid[0], d->max_grid[1],
                      d->max_grid[2], d->max_block[0], d->max_block[1],
                      d->max_block[2]);
  }
  return RK_OK;
}

rk_status_t rk__cu_launch(rk_function_t *function, rk_dim3_t grid,
                          rk_dim3_t block, size_t shared_mem,
                          rk_stream_t *stream, rk__args_t *args) {
  cu_module_t *m = (cu_module_t *)function->module;
  cu_context_t *ctx = cu_ctx(function->module->context);
  const cu_function_t *f = &m->fns[function - m->base.functions];
  const cu_device_t *d = ctx->dev;
  rk_status_t s = rk__cu_check_geometry(ctx, RK_ERR_LAUNCH, "launch",
                                        function->name, grid, block);
  const uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (s == RK_OK && threads > (uint64_t)f->max_threads)
    s = rk__fail(RK_ERR_LAUNCH,
                 "launch of '%s': %llu threads per block; this kernel can "
                 "run at most %d per block on %s (its register use)",
                 function->name, (unsigned long long)threads, f->max_threads,
                 d->info.name);
  if (s == RK_OK &&
      (uint64_t)f->static_shared + shared_mem > d->info.shared_mem_per_block)
    s = rk__fail(RK_ERR_LAUNCH,
                 "launch of '%s': %d bytes of static and %zu of dynamic "
                 "shared memory exceed the %llu bytes a block has on %s",
                 function->name, f->static_shared, shared_mem,
                 (unsigned long long)d->info.shared_mem_per_block,
                 d->info.name);
  if (s == RK_OK) s = rk__cu_enter(ctx);
  if (s == RK_OK) {
    CUstream st = stream ? ((cu_stream_t *)stream)->stream : ctx->stream;
    /* Each value is the argument's bytes: device pointers are CUdeviceptr
     * values, as the generated kernel's pointer parameters expect. */
    CUresult err = ctx->api->cuLaunchKernel(
        f->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
        (unsigned)shared_mem, st, args->values, NULL);
    if (err != RK_CUDA_SUCCESS) {
      s = rk__cu_check(ctx, err, "cuLaunchKernel");
      s = rk__fail_context(s, "launch of '%s'", function->name);
    }
  }
  rk__args_free(args);
  return s;
}
