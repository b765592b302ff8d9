/* The CPU backend: device info, contexts, memory, launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/sys.h"

enum {
  kMaxThreadsPerBlock = 1024,
  kSharedPerBlock = 64 * 1024,
};

/* Copies the value of the first "key : value" line of /proc/cpuinfo. */
static bool cpuinfo_field(const char *key, char *out, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  size_t klen = strlen(key);
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') ++v;
    v[strcspn(v, "\n")] = '\0';
    if (!*v) continue;
    snprintf(out, cap, "%s", v);
    found = true;
  }
  fclose(f);
  return found;
}

static void fill_info(rk_device_info_t *info) {
  memset(info, 0, sizeof *info);
  struct utsname u;
  const char *machine = uname(&u) == 0 ? u.machine : "unknown";
  if (!cpuinfo_field("model name", info->name, sizeof info->name) &&
      !rk__cpu_brand(info->name, sizeof info->name))
    snprintf(info->name, sizeof info->name, "%s CPU", machine);
  if (!cpuinfo_field("vendor_id", info->vendor, sizeof info->vendor) &&
      !cpuinfo_field("CPU implementer", info->vendor, sizeof info->vendor))
    snprintf(info->vendor, sizeof info->vendor, "unknown");
  int cpus[1024];
  info->backend = RK_BACKEND_CPU;
  info->compute_units = (uint32_t)rk__allowed_cpus(cpus, 1024);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->memory_bytes =
      pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  info->max_threads_per_block = kMaxThreadsPerBlock;
  info->shared_mem_per_block = kSharedPerBlock;
  info->caps = RK_CAP_PERSISTENT_KERNELS | RK_CAP_MAPPED_HOST_MEMORY |
               RK_CAP_ATOMIC64 | RK_CAP_F64 | RK_CAP_INT64;
}

static rk_status_t cpu_open(rk_backend_t **out) {
  cpu_backend_t *be = calloc(1, sizeof *be);
  if (!be) return rk__fail(RK_ERR_OUT_OF_MEMORY, "opening the backend");
  fill_info(&be->info);
  be->base.device_count = 1;
  *out = &be->base;
  return RK_OK;
}

static void cpu_destroy(rk_backend_t *backend) { free(backend); }

static rk_status_t cpu_device_info(const rk_backend_t *backend, int device,
                                   rk_device_info_t *out) {
  (void)device;
  *out = ((const cpu_backend_t *)backend)->info;
  return RK_OK;
}

static rk_status_t cpu_context_create(rk_backend_t *backend, int device,
                                      rk_context_t **out) {
  (void)device;
  cpu_context_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: context");
  const cpu_backend_t *be = (const cpu_backend_t *)backend;
  rk_status_t s = rk__cpu_pool_create(0, &ctx->pool);
  if (s != RK_OK) {
    free(ctx);
    return s;
  }
  rk__cpu_memory_init(&ctx->memory, be->info.memory_bytes
                                        ? be->info.memory_bytes
                                        : (uint64_t)1 << 40);
  pthread_mutex_init(&ctx->dir_lock, NULL);
  rk__pending_init(&ctx->pending);
  *out = &ctx->base;
  return RK_OK;
}

static rk_status_t cpu_context_destroy(rk_context_t *context) {
  cpu_context_t *ctx = cpu_ctx(context);
  rk_status_t s = rk__pending_take(&ctx->pending);
  rk__cpu_pool_destroy(ctx->pool);
  rk__cpu_memory_release(&ctx->memory);
  rk__cpu_private_dir_remove(ctx);
  rk__pending_destroy(&ctx->pending);
  pthread_mutex_destroy(&ctx->dir_lock);
  free(ctx);
  return s;
}

static rk_status_t cpu_allocate(rk_context_t *context, size_t bytes,
                                rk_devptr_t *out) {
  return rk__cpu_memory_allocate(&cpu_ctx(context)->memory, bytes, out);
}

static rk_status_t cpu_free(rk_context_t *context, rk_devptr_t ptr) {
  return rk__cpu_memory_free(&cpu_ctx(context)->memory, ptr);
}

static rk_status_t cpu_check_range(rk_context_t *context, rk_devptr_t ptr,
                                   size_t n) {
  return rk__cpu_memory_check(&cpu_ctx(context)->memory, ptr, n);
}

static rk_status_t cpu_copy(rk_context_t *context, rk_stream_t *stream,
                            const rk__copy_t *copy) {
  if (stream) return rk__cpu_stream_copy(stream, copy);
  return rk__cpu_memory_copy(&cpu_ctx(context)->memory, copy);
}

static rk_status_t cpu_synchronize(rk_context_t *context) {
  return rk__pending_take(&cpu_ctx(context)->pending);
}

static rk_status_t cpu_launch(rk_function_t *function, rk_dim3_t grid,
                              rk_dim3_t block, size_t shared_mem,
                              rk_stream_t *stream, rk__args_t *args) {
  cpu_module_t *mod = (cpu_module_t *)function->module;
  size_t index = (size_t)(function - mod->base.functions);
  cpu_launch_t launch = {&mod->desc->entries[index],
                         mod->desc->uses_barrier != 0,
                         grid,
                         block,
                         shared_mem,
                         args->values};
  if (stream) return rk__cpu_stream_launch(stream, &launch, args);
  /* The default stream runs the launch now, on this thread and the pool;
   * like any asynchronous error, a failure is reported by the next
   * synchronization. */
  cpu_context_t *ctx = cpu_ctx(mod->base.context);
  rk_status_t s = rk__cpu_pool_run(ctx->pool, &launch);
  rk__args_free(args);
  if (s != RK_OK) {
    rk__fail_context(s, "launch of '%s'", function->name);
    rk__pending_record_last(&ctx->pending, s);
  }
  return RK_OK;
}

const rk__backend_vtable_t rk__cpu_backend = {
    .destroy = cpu_destroy,
    .kind = RK_BACKEND_CPU,
    .name = "cpu",
    .open = cpu_open,
    .device_info = cpu_device_info,
    .context_create = cpu_context_create,
    .context_destroy = cpu_context_destroy,
    .allocate = cpu_allocate,
    .free = cpu_free,
    .check_range = cpu_check_range,
    .copy = cpu_copy,
    .synchronize = cpu_synchronize,
    .compile = rk__cpu_compile,
    .module_destroy = rk__cpu_module_destroy,
    .launch = cpu_launch,
    .stream_create = rk__cpu_stream_create,
    .stream_destroy = rk__cpu_stream_destroy,
    .stream_synchronize = rk__cpu_stream_synchronize,
    .actor_start = rk__cpu_actor_start,
    .launch_on_caller = true,
    .actor_release = rk__cpu_actor_release,
    .actor_read_state = rk__cpu_actor_read_state,
};
