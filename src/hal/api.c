/* Public backend API: validation, ownership lists, selection, dispatch. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/platform.h"
#if RK__LINUX
#include <link.h>
#endif
#include "base/strbuf.h"
#include "base/trace.h"
#include "hal/blas_hal.h"
#include "hal/hal.h"

static const char *const kKindNames[RK_BACKEND_KIND_COUNT_] = {
    "auto", "cpu", "cuda", "metal", "webgpu", "opencl"};

/* RK_BACKEND_AUTO tries these in order. */
static const rk_backend_kind_t kAutoOrder[] = {
    RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL,
    RK_BACKEND_CPU};

const char *rk_backend_kind_name(rk_backend_kind_t kind) {
  if ((unsigned)kind >= RK_BACKEND_KIND_COUNT_) return "unknown";
  return kKindNames[kind];
}

rk_status_t rk_backend_kind_from_name(const char *name,
                                      rk_backend_kind_t *out_kind) {
  if (!name || !out_kind)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "backend_kind_from_name: name and out_kind must not be "
                    "NULL");
  for (int k = 0; k < RK_BACKEND_KIND_COUNT_; ++k) {
    if (strcasecmp(name, kKindNames[k]) == 0) {
      *out_kind = (rk_backend_kind_t)k;
      return RK_OK;
    }
  }
  return rk__fail(RK_ERR_INVALID_ARGUMENT,
                  "unknown backend '%s' (known: auto, cpu, cuda, metal, "
                  "webgpu, opencl)",
                  name);
}

static const rk__backend_vtable_t *find_vtable(rk_backend_kind_t kind) {
  size_t n;
  const rk__backend_vtable_t *const *reg = rk__backend_registry(&n);
  for (size_t i = 0; i < n; ++i)
    if (reg[i]->kind == kind) return reg[i];
  return NULL;
}

bool rk_backend_kind_built_in(rk_backend_kind_t kind) {
  return kind != RK_BACKEND_AUTO && find_vtable(kind) != NULL;
}

static rk_status_t open_kind(rk_backend_kind_t kind, rk_backend_t **out) {
  const rk__backend_vtable_t *vt = find_vtable(kind);
  if (!vt)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "%s: this build of rk has no %s backend",
                    rk_backend_kind_name(kind), rk_backend_kind_name(kind));
  rk_backend_t *be = NULL;
  rk_status_t s = vt->open(&be);
  if (s != RK_OK) return rk__fail_context(s, "%s", vt->name);
  be->vt = vt;
  be->live_contexts = 0;
  *out = be;
  return RK_OK;
}

/* Whether `be` has a device that auto-selection may pick. */
static bool has_native_device(const rk_backend_t *be) {
  for (int d = 0; d < be->device_count; ++d) {
    rk_device_info_t info;
    if (be->vt->device_info(be, d, &info) == RK_OK &&
        !(info.caps & RK_CAP_SOFTWARE))
      return true;
  }
  return false;
}

#if RK__LINUX
/* Whether the main program has no program interpreter (PT_INTERP): it was
 * linked statically (cc -static). */
static int main_program_interp(struct dl_phdr_info *info, size_t size,
                               void *data) {
  (void)size;
  bool *dynamic = data;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_INTERP) *dynamic = true;
  return 1; /* the first object is the main program: stop there */
}

static bool statically_linked(void) {
  bool dynamic = false;
  dl_iterate_phdr(main_program_interp, &dynamic);
  return !dynamic;
}
#else
/* macOS links no program statically (there is no static libSystem); other
 * systems are not asked. */
static bool statically_linked(void) { return false; }
#endif

static rk_status_t backend_open(rk_backend_kind_t kind,
                                rk_backend_t **out_backend) {
  if (!out_backend)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "backend_open: out_backend must not be NULL");
  if ((unsigned)kind >= RK_BACKEND_KIND_COUNT_)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "backend_open: kind %d is not a backend kind", (int)kind);
  /* Every backend loads code with dlopen (the CPU backend its compiled
   * kernels, the others their vendor libraries), and that code needs the
   * shared C library, which a static program does not have: it would
   * crash at the first launch. */
  if (statically_linked())
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "backend_open: this program is linked statically (cc "
                    "-static), and rk's backends load code with dlopen, "
                    "which needs the shared C library; link librk.a into a "
                    "dynamically linked program instead (cc app.c "
                    "/path/to/librk.a -lpthread -ldl -lm)");
  if (kind != RK_BACKEND_AUTO) return open_kind(kind, out_backend);

  const char *env = getenv("RK_BACKEND");
  if (env && *env) {
    rk_backend_kind_t forced = RK_BACKEND_AUTO;
    rk_status_t s = rk_backend_kind_from_name(env, &forced);
    if (s != RK_OK) return rk__fail_context(s, "RK_BACKEND");
    if (forced != RK_BACKEND_AUTO) {
      s = open_kind(forced, out_backend);
      if (s != RK_OK) return rk__fail_context(s, "RK_BACKEND=%s", env);
      return RK_OK;
    }
  }
  char reasons[2048] = "";
  size_t used = 0;
  /* Skipping absent backends is not a failure of this call. */
  char *saved = rk__error_save();
  for (size_t i = 0; i < sizeof kAutoOrder / sizeof kAutoOrder[0]; ++i) {
    rk_backend_t *be = NULL;
    rk_status_t s = open_kind(kAutoOrder[i], &be);
    if (s == RK_OK && has_native_device(be)) {
      rk__error_restore(saved);
      *out_backend = be;
      return RK_OK;
    }
    const char *why =
        s == RK_OK ? "no usable non-software device" : rk_last_error();
    int w = snprintf(reasons + used, sizeof reasons - used, "\n  %s: %s",
                     rk_backend_kind_name(kAutoOrder[i]), why);
    if (w > 0 && used + (size_t)w < sizeof reasons) used += (size_t)w;
    if (be) rk_backend_destroy(be);
  }
  free(saved);
  return rk__fail(RK_ERR_UNAVAILABLE, "no backend has a usable device:%s",
                  reasons);
}

rk_status_t rk_backend_open(rk_backend_kind_t kind,
                            rk_backend_t **out_backend) {
  if (!rk__trace_on()) return backend_open(kind, out_backend);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "open backend");
  rk_status_t s = backend_open(kind, out_backend);
  rk__trace_event_t *e = rk__trace_span_end(&span, "backend");
  rk__trace_arg_str(e, "asked", rk_backend_kind_name(kind));
  if (s == RK_OK) rk__trace_arg_str(e, "backend", (*out_backend)->vt->name);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

rk_status_t rk_backend_destroy(rk_backend_t *backend) {
  if (!backend) return RK_OK;
  int live = __atomic_load_n(&backend->live_contexts, __ATOMIC_ACQUIRE);
  if (live != 0)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "backend_destroy: %s backend still has %d context(s); "
                    "destroy them first",
                    backend->vt->name, live);
  backend->vt->destroy(backend);
  return RK_OK;
}

rk_backend_kind_t rk_backend_kind(const rk_backend_t *backend) {
  return backend ? backend->vt->kind : RK_BACKEND_AUTO;
}

const char *rk_backend_name(const rk_backend_t *backend) {
  return backend ? backend->vt->name : "none";
}

const char *rk_backend_library(const rk_backend_t *backend) {
  return backend ? backend->library : "";
}

int rk_backend_device_count(const rk_backend_t *backend) {
  return backend ? backend->device_count : 0;
}

static rk_status_t check_device(const rk_backend_t *backend, int device,
                                const char *what) {
  if (!backend)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: backend is NULL", what);
  if (device < 0 || device >= backend->device_count)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%s: device %d does not exist (%s has %d device%s)", what,
                    device, backend->vt->name, backend->device_count,
                    backend->device_count == 1 ? "" : "s");
  return RK_OK;
}

rk_status_t rk_backend_device_info(const rk_backend_t *backend, int device,
                                   rk_device_info_t *out_info) {
  RK_RETURN_IF_ERROR(check_device(backend, device, "backend_device_info"));
  if (!out_info)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "backend_device_info: out_info is NULL");
  return backend->vt->device_info(backend, device, out_info);
}

static rk_status_t create_context(rk_backend_t *backend, int device,
                                  rk_context_t **out_context) {
  RK_RETURN_IF_ERROR(check_device(backend, device, "backend_create_context"));
  if (!out_context)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "backend_create_context: out_context is NULL");
  rk_device_info_t info;
  RK_RETURN_IF_ERROR(backend->vt->device_info(backend, device, &info));
  rk_context_t *ctx = NULL;
  RK_RETURN_IF_ERROR(backend->vt->context_create(backend, device, &ctx));
  ctx->vt = backend->vt;
  ctx->backend = backend;
  ctx->device = device;
  ctx->info = info;
  ctx->modules = NULL;
  ctx->streams = NULL;
  pthread_mutex_init(&ctx->lock, NULL);
  __atomic_add_fetch(&backend->live_contexts, 1, __ATOMIC_ACQ_REL);
  *out_context = ctx;
  return RK_OK;
}

rk_status_t rk_backend_create_context(rk_backend_t *backend, int device,
                                      rk_context_t **out_context) {
  if (!rk__trace_on()) return create_context(backend, device, out_context);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "create context");
  rk_status_t s = create_context(backend, device, out_context);
  rk__trace_event_t *e = rk__trace_span_end(&span, "backend");
  if (backend) rk__trace_arg_str(e, "backend", backend->vt->name);
  rk__trace_arg_int(e, "device", device);
  if (s == RK_OK)
    rk__trace_arg_str(e, "device_name", (*out_context)->info.name);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

/* ---- Contexts ----------------------------------------------------------- */

#define CHECK_CTX(ctx, what)                                              \
  do {                                                                    \
    if (!(ctx))                                                           \
      return rk__fail(RK_ERR_INVALID_ARGUMENT, what ": context is NULL"); \
  } while (0)

void rk__context_hold(rk_context_t *context) {
  __atomic_add_fetch(&context->holds, 1u, __ATOMIC_ACQ_REL);
}

void rk__context_unhold(rk_context_t *context) {
  __atomic_sub_fetch(&context->holds, 1u, __ATOMIC_ACQ_REL);
}

rk_status_t rk_context_destroy(rk_context_t *context) {
  if (!context) return RK_OK;
  const uint32_t holds = __atomic_load_n(&context->holds, __ATOMIC_ACQUIRE);
  if (holds)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "context_destroy: %u destroyed actor(s) of this context "
                    "still run a handler that has not returned; the context "
                    "(their code, streams and buffers) stays until they do",
                    holds);
  rk_status_t first = RK_OK;
  char first_msg[1024] = "";
  /* Streams first (they finish queued work that may use modules). */
  while (context->streams) {
    rk_status_t s = rk_stream_destroy(context->streams);
    if (s != RK_OK && first == RK_OK) {
      first = s;
      snprintf(first_msg, sizeof first_msg, "%s", rk_last_error());
    }
  }
  while (context->modules) rk_module_destroy(context->modules);
  rk_backend_t *backend = context->backend;
  pthread_mutex_destroy(&context->lock);
  rk_status_t s = context->vt->context_destroy(context);
  if (s != RK_OK && first == RK_OK) {
    first = s;
    snprintf(first_msg, sizeof first_msg, "%s", rk_last_error());
  }
  __atomic_sub_fetch(&backend->live_contexts, 1, __ATOMIC_ACQ_REL);
  if (first != RK_OK) return rk__fail(first, "%s", first_msg);
  return RK_OK;
}

rk_backend_t *rk_context_backend(const rk_context_t *context) {
  return context ? context->backend : NULL;
}

static rk_status_t context_allocate(rk_context_t *context, size_t bytes,
                                    rk_devptr_t *out_ptr) {
  CHECK_CTX(context, "context_allocate");
  if (!out_ptr)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "context_allocate: out_ptr is NULL");
  if (bytes == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "context_allocate: size is 0 bytes");
  return context->vt->allocate(context, bytes, out_ptr);
}

rk_status_t rk_context_allocate(rk_context_t *context, size_t bytes,
                                rk_devptr_t *out_ptr) {
  if (!rk__trace_on()) return context_allocate(context, bytes, out_ptr);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "allocate");
  rk_status_t s = context_allocate(context, bytes, out_ptr);
  rk__trace_event_t *e = rk__trace_span_end(&span, "memory");
  rk__trace_arg_uint(e, "bytes", bytes);
  if (s == RK_OK) rk__trace_arg_uint(e, "ptr", *out_ptr);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

static rk_status_t context_free(rk_context_t *context, rk_devptr_t ptr) {
  CHECK_CTX(context, "context_free");
  return context->vt->free(context, ptr);
}

rk_status_t rk_context_free(rk_context_t *context, rk_devptr_t ptr) {
  if (!rk__trace_on()) return context_free(context, ptr);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "free");
  rk_status_t s = context_free(context, ptr);
  rk__trace_event_t *e = rk__trace_span_end(&span, "memory");
  rk__trace_arg_uint(e, "ptr", ptr);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

/* Validates a copy before it is run or queued. */
static rk_status_t check_copy(rk_context_t *context, const rk__copy_t *c,
                              const char *what) {
  if (c->n == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: size is 0 bytes", what);
  if (c->dir != RK__COPY_DEVICE_TO_DEVICE && !c->host)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL", what);
  if (c->dir != RK__COPY_TO_HOST) {
    rk_status_t s = context->vt->check_range(context, c->dst, c->n);
    if (s != RK_OK) return rk__fail_context(s, "%s: destination", what);
  }
  if (c->dir != RK__COPY_TO_DEVICE) {
    rk_status_t s = context->vt->check_range(context, c->src, c->n);
    if (s != RK_OK) return rk__fail_context(s, "%s: source", what);
  }
  return RK_OK;
}

static const char *const kCopyNames[] = {
    [RK__COPY_TO_DEVICE] = "copy to device",
    [RK__COPY_TO_HOST] = "copy to host",
    [RK__COPY_DEVICE_TO_DEVICE] = "copy device to device",
};

static rk_status_t copy_checked(rk_context_t *context, rk_stream_t *stream,
                                const rk__copy_t *c, const char *what) {
  RK_RETURN_IF_ERROR(check_copy(context, c, what));
  return context->vt->copy(context, stream, c);
}

/* "stream": 0 for the default stream, else the stream's id. */
static void trace_stream(rk__trace_event_t *e, const rk_stream_t *stream) {
  rk__trace_arg_uint(e, "stream", stream ? stream->id : 0);
}

static rk_status_t do_copy(rk_context_t *context, rk_stream_t *stream,
                           rk__copy_t c, const char *what) {
  if (!rk__trace_on()) return copy_checked(context, stream, &c, what);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, kCopyNames[c.dir]);
  rk_status_t s = copy_checked(context, stream, &c, what);
  rk__trace_event_t *e = rk__trace_span_end(&span, "copy");
  rk__trace_arg_uint(e, "bytes", c.n);
  trace_stream(e, stream);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

rk_status_t rk_context_copy_to_device(rk_context_t *context, rk_devptr_t dst,
                                      const void *src, size_t n) {
  CHECK_CTX(context, "context_copy_to_device");
  rk__copy_t c = {RK__COPY_TO_DEVICE, (void *)src, dst, 0, n};
  return do_copy(context, NULL, c, "context_copy_to_device");
}

rk_status_t rk_context_copy_to_host(rk_context_t *context, void *dst,
                                    rk_devptr_t src, size_t n) {
  CHECK_CTX(context, "context_copy_to_host");
  rk__copy_t c = {RK__COPY_TO_HOST, dst, 0, src, n};
  return do_copy(context, NULL, c, "context_copy_to_host");
}

rk_status_t rk_context_copy_device_to_device(rk_context_t *context,
                                             rk_devptr_t dst, rk_devptr_t src,
                                             size_t n) {
  CHECK_CTX(context, "context_copy_device_to_device");
  rk__copy_t c = {RK__COPY_DEVICE_TO_DEVICE, NULL, dst, src, n};
  return do_copy(context, NULL, c, "context_copy_device_to_device");
}

/* Adds one failure to a synchronization's report. All errors are kept:
 * the status is the first one's, the message lists every one. */
static void note_error(rk_status_t s, rk_status_t *first, int *count,
                       rk__strbuf_t *msg) {
  if (s == RK_OK) return;
  if (*first == RK_OK) *first = s;
  if (++*count > 1) rk__strbuf_puts(msg, "\n");
  rk__strbuf_puts(msg, rk_last_error());
}

static rk_status_t context_synchronize(rk_context_t *context) {
  CHECK_CTX(context, "context_synchronize");
  rk_status_t first = RK_OK;
  int count = 0;
  rk__strbuf_t msg;
  rk__strbuf_init(&msg);
  pthread_mutex_lock(&context->lock);
  for (rk_stream_t *st = context->streams; st; st = st->next)
    note_error(context->vt->stream_synchronize(st), &first, &count, &msg);
  pthread_mutex_unlock(&context->lock);
  note_error(context->vt->synchronize(context), &first, &count, &msg);
  if (count > 0) {
    if (count == 1)
      rk__fail(first, "%s", msg.data ? msg.data : rk_status_name(first));
    else
      rk__fail(first, "%d asynchronous errors:\n%s", count,
               msg.data ? msg.data : "");
  }
  rk__strbuf_free(&msg);
  return first;
}

rk_status_t rk__hal_blas_sgemm(rk_context_t *context, size_t m, size_t n,
                               size_t k, rk_devptr_t a, rk_devptr_t b,
                               rk_devptr_t c, char *library, size_t cap) {
  if (!context->vt->blas_sgemm)
    return rk__fail(RK_ERR_UNIMPLEMENTED, "the %s backend has no vendor BLAS",
                    context->vt->name);
  return context->vt->blas_sgemm(context, m, n, k, a, b, c, library, cap);
}

rk_status_t rk_context_synchronize(rk_context_t *context) {
  if (!rk__trace_on()) return context_synchronize(context);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "synchronize context");
  rk_status_t s = context_synchronize(context);
  rk__trace_event_t *e = rk__trace_span_end(&span, "sync");
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

/* ---- Modules and functions --------------------------------------------- */

void rk_compile_options_init(rk_compile_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->source_name = "<source>";
}

static rk_status_t context_compile(rk_context_t *context, const char *source,
                                   const rk_compile_options_t *options,
                                   rk_module_t **out_module) {
  CHECK_CTX(context, "context_compile");
  if (!source || !out_module)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "context_compile: source and out_module must not be "
                    "NULL");
  rk_compile_options_t defaults;
  rk_compile_options_init(&defaults);
  if (!options) options = &defaults;
  if (options->defines) {
    for (const char *const *d = options->defines; *d; ++d) {
      const char *p = *d;
      if (!(isalpha((unsigned char)*p) || *p == '_'))
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "context_compile: define '%s' is not NAME or "
                        "NAME=VALUE",
                        *d);
      while (isalnum((unsigned char)*p) || *p == '_') ++p;
      if (*p != '\0' && *p != '=')
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "context_compile: define '%s' is not NAME or "
                        "NAME=VALUE",
                        *d);
    }
  }
  rk_module_t *mod = NULL;
  RK_RETURN_IF_ERROR(context->vt->compile(context, source, options, &mod));
  mod->context = context;
  for (size_t i = 0; i < mod->nfunctions; ++i) mod->functions[i].module = mod;
  pthread_mutex_lock(&context->lock);
  mod->next = context->modules;
  context->modules = mod;
  pthread_mutex_unlock(&context->lock);
  *out_module = mod;
  return RK_OK;
}

rk_status_t rk_context_compile(rk_context_t *context, const char *source,
                               const rk_compile_options_t *options,
                               rk_module_t **out_module) {
  if (!rk__trace_on())
    return context_compile(context, source, options, out_module);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "compile");
  rk_status_t s = context_compile(context, source, options, out_module);
  rk__trace_event_t *e = rk__trace_span_end(&span, "compile");
  rk__trace_arg_str(
      e, "source",
      options && options->source_name ? options->source_name : "<source>");
  if (context) rk__trace_arg_str(e, "backend", context->vt->name);
  if (s == RK_OK) {
    rk__trace_arg_bool(e, "cache_hit", (*out_module)->cache_hit);
    rk__trace_arg_uint(e, "kernels", (*out_module)->nfunctions);
  }
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

rk_status_t rk_module_destroy(rk_module_t *module) {
  if (!module) return RK_OK;
  rk_context_t *ctx = module->context;
  pthread_mutex_lock(&ctx->lock);
  bool found = false;
  for (rk_module_t **p = &ctx->modules; *p; p = &(*p)->next) {
    if (*p == module) {
      *p = module->next;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (!found)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "module_destroy: module is not live");
  /* Queued launches may still use the module's code. */
  rk_status_t s = rk_context_synchronize(ctx);
  ctx->vt->module_destroy(module);
  return s;
}

void rk__module_abandon(rk_module_t *module) {
  rk_context_t *ctx = module->context;
  pthread_mutex_lock(&ctx->lock);
  for (rk_module_t **p = &ctx->modules; *p; p = &(*p)->next) {
    if (*p == module) {
      *p = module->next;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  module->next = NULL;
}

bool rk_module_cache_hit(const rk_module_t *module) {
  return module && module->cache_hit;
}

size_t rk_module_function_count(const rk_module_t *module) {
  return module ? module->nfunctions : 0;
}

rk_status_t rk_module_get_function(rk_module_t *module, const char *name,
                                   rk_function_t **out_function) {
  if (!module || !name || !out_function)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "module_get_function: module, name and out_function must "
                    "not be NULL");
  for (size_t i = 0; i < module->nfunctions; ++i) {
    if (strcmp(module->functions[i].name, name) == 0) {
      *out_function = &module->functions[i];
      return RK_OK;
    }
  }
  char names[1024] = "";
  size_t used = 0;
  for (size_t i = 0; i < module->nfunctions; ++i) {
    int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                     module->functions[i].name);
    if (w > 0 && used + (size_t)w < sizeof names) used += (size_t)w;
  }
  return rk__fail(RK_ERR_NOT_FOUND,
                  "module has no kernel named '%s' (it has: %s)", name,
                  module->nfunctions ? names : "no kernels");
}

const char *rk_function_name(const rk_function_t *function) {
  return function ? function->name : "";
}

uint32_t rk_function_max_block_threads(const rk_function_t *function) {
  if (!function) return 0;
  const uint32_t dev = function->module->context->info.max_threads_per_block;
  return function->max_threads && function->max_threads < dev
             ? function->max_threads
             : dev;
}

size_t rk_function_param_count(const rk_function_t *function) {
  return function ? function->nparams : 0;
}

rk_status_t rk_function_param(const rk_function_t *function, size_t index,
                              rk_arg_kind_t *out_kind, size_t *out_size) {
  if (!function)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "function_param: function is "
                    "NULL");
  if (index >= function->nparams)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "function_param: kernel '%s' has %zu parameter(s); "
                    "index %zu is past the end",
                    function->name, function->nparams, index);
  if (out_kind) *out_kind = function->params[index].kind;
  if (out_size) *out_size = function->params[index].size;
  return RK_OK;
}

const char *rk_arg_kind_name(rk_arg_kind_t kind) {
  switch (kind) {
    case RK_ARG_I32:
      return "i32";
    case RK_ARG_U32:
      return "u32";
    case RK_ARG_I64:
      return "i64";
    case RK_ARG_U64:
      return "u64";
    case RK_ARG_F32:
      return "f32";
    case RK_ARG_F64:
      return "f64";
    case RK_ARG_PTR:
      return "ptr";
    case RK_ARG_STRUCT:
      return "struct";
  }
  return "unknown";
}

void rk__args_free(rk__args_t *args) { free(args); }

static void describe_params(const rk_function_t *fn, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < fn->nparams; ++i) {
    int w = snprintf(buf + used, cap - used, "%s%s %s", i ? ", " : "",
                     rk_arg_kind_name(fn->params[i].kind), fn->params[i].name);
    if (w < 0 || used + (size_t)w >= cap) break;
    used += (size_t)w;
  }
}

/* Checks args against the parameters and packs them. */
static rk_status_t pack_args(rk_function_t *fn, const rk_arg_t *args,
                             size_t nargs, rk__args_t **out) {
  if (nargs != fn->nparams) {
    char sig[512];
    describe_params(fn, sig, sizeof sig);
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "kernel '%s' takes %zu argument(s) (%s); %zu given",
                    fn->name, fn->nparams, sig, nargs);
  }
  if (nargs > 0 && !args)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "kernel '%s': args is NULL but %zu are expected", fn->name,
                    nargs);
  size_t total = 0;
  for (size_t i = 0; i < nargs; ++i) {
    const rk__param_t *p = &fn->params[i];
    if (args[i].kind != p->kind)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "kernel '%s' argument %zu (%s) is %s; %s given", fn->name,
                      i, p->name, rk_arg_kind_name(p->kind),
                      rk_arg_kind_name(args[i].kind));
    if (args[i].size != p->size)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "kernel '%s' argument %zu (%s) is %zu bytes; %zu given",
                      fn->name, i, p->name, p->size, args[i].size);
    if (p->kind == RK_ARG_STRUCT && !args[i].value.data)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "kernel '%s' argument %zu (%s): struct data is NULL",
                      fn->name, i, p->name);
    if (p->kind == RK_ARG_PTR && args[i].value.ptr != 0) {
      rk_context_t *ctx = fn->module->context;
      rk_status_t s = ctx->vt->check_range(ctx, args[i].value.ptr, 0);
      if (s != RK_OK)
        return rk__fail_context(s, "kernel '%s' argument %zu (%s)", fn->name, i,
                                p->name);
    }
    total += (p->size + 15) & ~(size_t)15;
  }
  /* One allocation: the header, the pointer array, then the values. */
  size_t head = sizeof(rk__args_t) + nargs * sizeof(void *);
  head = (head + 15) & ~(size_t)15;
  rk__args_t *a = malloc(head + total);
  if (!a) return rk__fail(RK_ERR_OUT_OF_MEMORY, "launch: packing arguments");
  a->count = nargs;
  a->values = (void **)(a + 1);
  a->storage = (unsigned char *)a + head;
  size_t off = 0;
  for (size_t i = 0; i < nargs; ++i) {
    a->values[i] = a->storage + off;
    const void *src = args[i].kind == RK_ARG_STRUCT
                          ? args[i].value.data
                          : (const void *)&args[i].value;
    memcpy(a->values[i], src, args[i].size);
    off += (args[i].size + 15) & ~(size_t)15;
  }
  *out = a;
  return RK_OK;
}

static rk_status_t function_launch(rk_function_t *function, rk_dim3_t grid,
                                   rk_dim3_t block, size_t shared_mem,
                                   rk_stream_t *stream, const rk_arg_t *args,
                                   size_t nargs) {
  if (!function)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "launch: function is NULL");
  rk_context_t *ctx = function->module->context;
  if (stream && stream->context != ctx)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': the stream belongs to another context",
                    function->name);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 ||
      block.y == 0 || block.z == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': grid (%u,%u,%u) and block (%u,%u,%u) "
                    "must have no zero dimension",
                    function->name, grid.x, grid.y, grid.z, block.x, block.y,
                    block.z);
  /* Each factor is at most 2^32-1, so the product of two cannot wrap; a
   * block over the limit in one dimension is rejected before the third. */
  uint64_t threads = (uint64_t)block.x * block.y;
  if (threads <= ctx->info.max_threads_per_block) threads *= block.z;
  if (threads > ctx->info.max_threads_per_block)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': block (%u,%u,%u) has %llu threads; the "
                    "device allows at most %u",
                    function->name, block.x, block.y, block.z,
                    (unsigned long long)threads,
                    ctx->info.max_threads_per_block);
  /* The block count, and the thread count over the whole grid, must fit in
   * 64 bits: (2^31, 2^31, 4) would otherwise wrap to 0 blocks and run
   * nothing. Each factor is below 2^32, so the first product cannot wrap. */
  uint64_t blocks = (uint64_t)grid.x * grid.y, grid_threads = 0;
  bool blocks_wrap = __builtin_mul_overflow(blocks, (uint64_t)grid.z, &blocks);
  if (blocks_wrap || __builtin_mul_overflow(blocks, threads, &grid_threads))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': grid (%u,%u,%u) with block (%u,%u,%u) "
                    "has more than 2^64-1 %s; the count does not fit",
                    function->name, grid.x, grid.y, grid.z, block.x, block.y,
                    block.z, blocks_wrap ? "blocks" : "threads");
  if (shared_mem > ctx->info.shared_mem_per_block)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "launch of '%s': %zu bytes of dynamic shared memory "
                    "requested; the device allows at most %llu",
                    function->name, shared_mem,
                    (unsigned long long)ctx->info.shared_mem_per_block);
  rk__args_t *packed = NULL;
  RK_RETURN_IF_ERROR(pack_args(function, args, nargs, &packed));
  return ctx->vt->launch(function, grid, block, shared_mem, stream, packed);
}

rk_status_t rk_function_launch(rk_function_t *function, rk_dim3_t grid,
                               rk_dim3_t block, size_t shared_mem,
                               rk_stream_t *stream, const rk_arg_t *args,
                               size_t nargs) {
  if (!rk__trace_on())
    return function_launch(function, grid, block, shared_mem, stream, args,
                           nargs);
  char name[80];
  snprintf(name, sizeof name, "launch %s", function ? function->name : "?");
  rk__trace_span_t span;
  rk__trace_span_begin(&span, name);
  rk_status_t s =
      function_launch(function, grid, block, shared_mem, stream, args, nargs);
  rk__trace_event_t *e = rk__trace_span_end(&span, "launch");
  char dims[96];
  snprintf(dims, sizeof dims, "%u,%u,%u", grid.x, grid.y, grid.z);
  rk__trace_arg_str(e, "kernel", function ? function->name : "");
  rk__trace_arg_str(e, "grid", dims);
  snprintf(dims, sizeof dims, "%u,%u,%u", block.x, block.y, block.z);
  rk__trace_arg_str(e, "block", dims);
  if (shared_mem) rk__trace_arg_uint(e, "shared_mem", shared_mem);
  trace_stream(e, stream);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

/* ---- Streams ------------------------------------------------------------ */

rk_status_t rk_context_create_stream(rk_context_t *context,
                                     rk_stream_t **out_stream) {
  CHECK_CTX(context, "context_create_stream");
  if (!out_stream)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "context_create_stream: out_stream is NULL");
  rk_stream_t *st = NULL;
  RK_RETURN_IF_ERROR(context->vt->stream_create(context, &st));
  static uint32_t next_stream_id;
  st->context = context;
  st->id = __atomic_add_fetch(&next_stream_id, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&context->lock);
  st->next = context->streams;
  context->streams = st;
  pthread_mutex_unlock(&context->lock);
  *out_stream = st;
  return RK_OK;
}

rk_status_t rk_stream_destroy(rk_stream_t *stream) {
  if (!stream) return RK_OK;
  rk_context_t *ctx = stream->context;
  pthread_mutex_lock(&ctx->lock);
  bool found = false;
  for (rk_stream_t **p = &ctx->streams; *p; p = &(*p)->next) {
    if (*p == stream) {
      *p = stream->next;
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (!found)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "stream_destroy: stream is not live");
  return ctx->vt->stream_destroy(stream);
}

static rk_status_t stream_synchronize(rk_stream_t *stream) {
  if (!stream)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "stream_synchronize: stream is NULL (use "
                    "rk_context_synchronize for the default stream)");
  return stream->context->vt->stream_synchronize(stream);
}

rk_status_t rk_stream_synchronize(rk_stream_t *stream) {
  if (!rk__trace_on()) return stream_synchronize(stream);
  rk__trace_span_t span;
  rk__trace_span_begin(&span, "synchronize stream");
  rk_status_t s = stream_synchronize(stream);
  rk__trace_event_t *e = rk__trace_span_end(&span, "sync");
  trace_stream(e, stream);
  rk__trace_arg_status(e, s);
  rk__trace_commit(e);
  return s;
}

#define CHECK_STREAM(st, what)                                           \
  do {                                                                   \
    if (!(st))                                                           \
      return rk__fail(RK_ERR_INVALID_ARGUMENT, what ": stream is NULL"); \
  } while (0)

rk_status_t rk_stream_copy_to_device(rk_stream_t *stream, rk_devptr_t dst,
                                     const void *src, size_t n) {
  CHECK_STREAM(stream, "stream_copy_to_device");
  rk__copy_t c = {RK__COPY_TO_DEVICE, (void *)src, dst, 0, n};
  return do_copy(stream->context, stream, c, "stream_copy_to_device");
}

rk_status_t rk_stream_copy_to_host(rk_stream_t *stream, void *dst,
                                   rk_devptr_t src, size_t n) {
  CHECK_STREAM(stream, "stream_copy_to_host");
  rk__copy_t c = {RK__COPY_TO_HOST, dst, 0, src, n};
  return do_copy(stream->context, stream, c, "stream_copy_to_host");
}

rk_status_t rk_stream_copy_device_to_device(rk_stream_t *stream,
                                            rk_devptr_t dst, rk_devptr_t src,
                                            size_t n) {
  CHECK_STREAM(stream, "stream_copy_device_to_device");
  rk__copy_t c = {RK__COPY_DEVICE_TO_DEVICE, NULL, dst, src, n};
  return do_copy(stream->context, stream, c, "stream_copy_device_to_device");
}
