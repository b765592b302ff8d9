/* CUDA C++ through NVRTC, loaded with dlopen (gpucompile.h).
 *
 * The few NVRTC types and functions used are declared here, from the NVRTC
 * API reference, so no CUDA toolkit is needed to build: nvrtcResult is an
 * int-sized enum, nvrtcProgram an opaque pointer. NVRTC compiles without a
 * GPU or a driver, so this works on any machine with the toolkit's
 * libnvrtc.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"
#include "gpucompile.h"

typedef int nvrtcResult; /* NVRTC_SUCCESS = 0 */
typedef struct rk_gc_nvrtc_program *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 };

/* Every NVRTC function used: REQUIRED ones must resolve for NVRTC to count
 * as available; OPTIONAL ones may be NULL (older releases lack them). One
 * list, expanded into the table's fields and into its lookups. */
#define RK_GC_NVRTC_SYMBOLS(REQUIRED, OPTIONAL)                              \
  REQUIRED(nvrtcGetErrorString, const char *, (nvrtcResult result))          \
  REQUIRED(nvrtcVersion, nvrtcResult, (int *major, int *minor))              \
  REQUIRED(nvrtcCreateProgram, nvrtcResult,                                  \
           (nvrtcProgram * prog, const char *src, const char *name,          \
            int num_headers, const char *const *headers,                     \
            const char *const *include_names))                               \
  REQUIRED(nvrtcCompileProgram, nvrtcResult,                                 \
           (nvrtcProgram prog, int num_options, const char *const *options)) \
  REQUIRED(nvrtcGetProgramLogSize, nvrtcResult,                              \
           (nvrtcProgram prog, size_t * size))                               \
  REQUIRED(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram prog, char *log))  \
  REQUIRED(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram prog, size_t * size)) \
  REQUIRED(nvrtcGetPTX, nvrtcResult, (nvrtcProgram prog, char *ptx))         \
  REQUIRED(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram * prog))          \
  OPTIONAL(nvrtcGetNumSupportedArchs, nvrtcResult, (int *count))             \
  OPTIONAL(nvrtcGetSupportedArchs, nvrtcResult, (int *archs))

typedef struct nvrtc_api {
  rk__gc_library_t lib;
  int available;        /* every REQUIRED symbol resolved */
  char reason[4096];    /* when not available */
  int major, minor;     /* nvrtcVersion() */
  char arch_option[64]; /* "--gpu-architecture=compute_80" */
#define RK_GC_FIELD_(name, ret, params) ret(*name) params;
  RK_GC_NVRTC_SYMBOLS(RK_GC_FIELD_, RK_GC_FIELD_)
#undef RK_GC_FIELD_
} nvrtc_api_t;

static const char *const kNvrtcNames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                          "libnvrtc.so", NULL};
/* compute_80 (Ampere) is supported by NVRTC 11.1 through 13; CUDA 13
 * dropped everything before compute_75. */
enum { kPreferredArch = 80 };

static nvrtc_api_t g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Picks kPreferredArch when this NVRTC lists it (or cannot list), else the
 * oldest architecture it supports. */
static int choose_arch(nvrtc_api_t *api) {
  int count = 0;
  if (!api->nvrtcGetNumSupportedArchs || !api->nvrtcGetSupportedArchs ||
      api->nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return kPreferredArch;
  int *archs = calloc((size_t)count, sizeof *archs);
  if (archs == NULL) return kPreferredArch;
  int chosen = kPreferredArch;
  if (api->nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS) {
    int oldest = archs[0], found = 0;
    for (int i = 0; i < count; i++) {
      if (archs[i] == kPreferredArch) found = 1;
      if (archs[i] < oldest) oldest = archs[i];
    }
    if (!found) chosen = oldest;
  }
  free(archs);
  return chosen;
}

static void load(void) {
  nvrtc_api_t *api = &g_api;
  rk__gc_library_open(&api->lib, "NVRTC", "RK_GPUCOMPILE_NVRTC", kNvrtcNames);
  if (api->lib.handle == NULL) {
    rk__gc_log_printf(api->reason, sizeof api->reason, "%s", api->lib.error);
    return;
  }
  char missing[2048] = "";
#define RK_GC_REQUIRED_(name, ret, params)                                    \
  api->name = (ret(*) params)rk__gc_library_symbol(&api->lib, #name, missing, \
                                                   sizeof missing);
#define RK_GC_OPTIONAL_(name, ret, params) \
  api->name = (ret(*) params)dlsym(api->lib.handle, #name);
  RK_GC_NVRTC_SYMBOLS(RK_GC_REQUIRED_, RK_GC_OPTIONAL_)
#undef RK_GC_REQUIRED_
#undef RK_GC_OPTIONAL_
  if (missing[0] != '\0') {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "NVRTC: %s lacks required functions:%s", api->lib.path,
                      missing);
    return;
  }
  if (api->nvrtcVersion(&api->major, &api->minor) != NVRTC_SUCCESS) {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "NVRTC: nvrtcVersion failed in %s", api->lib.path);
    return;
  }
  snprintf(api->arch_option, sizeof api->arch_option,
           "--gpu-architecture=compute_%d", choose_arch(api));
  api->available = 1;
}

static nvrtc_api_t *api_or_reason(char *log, size_t log_cap) {
  pthread_once(&g_once, load);
  if (g_api.available) return &g_api;
  rk__gc_log_printf(log, log_cap, "%s", g_api.reason);
  return NULL;
}

/* Copies the program log into `log` (replacing it). */
static void copy_program_log(nvrtc_api_t *api, nvrtcProgram prog, char *log,
                             size_t log_cap) {
  size_t size = 0;
  rk__gc_log_printf(log, log_cap, "%s", "");
  if (api->nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1)
    return;
  char *text = malloc(size);
  if (text == NULL) return;
  if (api->nvrtcGetProgramLog(prog, text) == NVRTC_SUCCESS) {
    text[size - 1] = '\0';
    rk__gc_log_printf(log, log_cap, "%s", text);
  }
  free(text);
}

/* Compiles; on success and when out_ptx is not NULL, *out_ptx is the PTX
 * (malloc'd, NUL-terminated). */
static int compile(nvrtc_api_t *api, const char *source, const char *name,
                   char **out_ptx, char *log, size_t log_cap) {
  nvrtcProgram prog = NULL;
  nvrtcResult r;
  int rc = RK_GPUCOMPILE_FAILED;
  if (source == NULL) {
    rk__gc_log_printf(log, log_cap, "rk_gpucompile_cuda: source is NULL");
    return RK_GPUCOMPILE_FAILED;
  }
  r = api->nvrtcCreateProgram(&prog, source, name ? name : "source.cu", 0, NULL,
                              NULL);
  if (r != NVRTC_SUCCESS) {
    rk__gc_log_printf(log, log_cap, "nvrtcCreateProgram: %s",
                      api->nvrtcGetErrorString(r));
    return RK_GPUCOMPILE_FAILED;
  }
  const char *options[] = {api->arch_option};
  r = api->nvrtcCompileProgram(prog, 1, options);
  copy_program_log(api, prog, log, log_cap);
  if (r != NVRTC_SUCCESS) {
    /* NVRTC_ERROR_COMPILATION comes with the program log; anything else
     * (an option this NVRTC refuses, no memory) is explained here. */
    if (r != NVRTC_ERROR_COMPILATION || log_cap == 0 || log[0] == '\0')
      rk__gc_log_append(log, log_cap, "%snvrtcCompileProgram(%s): %s",
                        log_cap && log[0] ? "\n" : "", api->arch_option,
                        api->nvrtcGetErrorString(r));
    goto done;
  }
  size_t ptx_size = 0;
  r = api->nvrtcGetPTXSize(prog, &ptx_size);
  if (r != NVRTC_SUCCESS || ptx_size <= 1) {
    rk__gc_log_append(log, log_cap, "\nnvrtcGetPTXSize: %s (size %zu)",
                      api->nvrtcGetErrorString(r), ptx_size);
    goto done;
  }
  if (out_ptx != NULL) {
    char *ptx = malloc(ptx_size);
    if (ptx == NULL) {
      rk__gc_log_append(log, log_cap, "\nout of memory for %zu bytes of PTX",
                        ptx_size);
      goto done;
    }
    r = api->nvrtcGetPTX(prog, ptx);
    if (r != NVRTC_SUCCESS) {
      free(ptx);
      rk__gc_log_append(log, log_cap, "\nnvrtcGetPTX: %s",
                        api->nvrtcGetErrorString(r));
      goto done;
    }
    ptx[ptx_size - 1] = '\0';
    *out_ptx = ptx;
  }
  rc = RK_GPUCOMPILE_OK;
done:
  api->nvrtcDestroyProgram(&prog);
  return rc;
}

int rk_gpucompile_cuda(const char *source, const char *name, char *log,
                       size_t log_cap) {
  nvrtc_api_t *api = api_or_reason(log, log_cap);
  if (api == NULL) return RK_GPUCOMPILE_UNAVAILABLE;
  return compile(api, source, name, NULL, log, log_cap);
}

static int is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* Calls fn(name, len, arg) for each `.entry <name>` of the PTX, stopping
 * when it returns nonzero; returns that value (0 when none did). */
static int for_each_entry(const char *ptx,
                          int (*fn)(const char *, size_t, void *), void *arg) {
  static const char kEntry[] = ".entry";
  for (const char *p = strstr(ptx, kEntry); p != NULL; p = strstr(p, kEntry)) {
    p += sizeof kEntry - 1;
    if (*p != ' ' && *p != '\t') continue;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = 0;
    while (is_ident_char(p[len])) len++;
    if (len == 0) continue;
    int stop = fn(p, len, arg);
    if (stop) return stop;
    p += len;
  }
  return 0;
}

static int entry_is(const char *entry, size_t len, void *arg) {
  const char *want = arg;
  return strlen(want) == len && memcmp(entry, want, len) == 0;
}

typedef struct entry_list {
  char *log;
  size_t cap;
  int count;
} entry_list_t;

static int list_entry(const char *entry, size_t len, void *arg) {
  entry_list_t *list = arg;
  rk__gc_log_append(list->log, list->cap, "%s%.*s", list->count ? ", " : "",
                    (int)len, entry);
  list->count++;
  return 0;
}

int rk_gpucompile_cuda_kernels(const char *source, const char *name,
                               const char *const *names, size_t n, char *log,
                               size_t log_cap) {
  nvrtc_api_t *api = api_or_reason(log, log_cap);
  if (api == NULL) return RK_GPUCOMPILE_UNAVAILABLE;
  char *ptx = NULL;
  int rc = compile(api, source, name, &ptx, log, log_cap);
  if (rc != RK_GPUCOMPILE_OK) return rc;
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    if (names[i] != NULL && for_each_entry(ptx, entry_is, (void *)names[i]))
      continue;
    rk__gc_log_append(log, log_cap, "%sno kernel entry point named \"%s\"",
                      log_cap && log[0] ? "\n" : "",
                      names[i] ? names[i] : "(null)");
    missing++;
  }
  if (missing > 0) {
    entry_list_t list = {log, log_cap, 0};
    rk__gc_log_append(log, log_cap, "\nentry points in the PTX: ");
    for_each_entry(ptx, list_entry, &list);
    if (list.count == 0) rk__gc_log_append(log, log_cap, "none");
    rc = RK_GPUCOMPILE_FAILED;
  }
  free(ptx);
  return rc;
}

int rk_gpucompile_cuda_describe(char *out, size_t cap) {
  nvrtc_api_t *api = api_or_reason(out, cap);
  if (api == NULL) return RK_GPUCOMPILE_UNAVAILABLE;
  rk__gc_log_printf(out, cap, "NVRTC %d.%d (%s), %s", api->major, api->minor,
                    api->lib.path, api->arch_option);
  return RK_GPUCOMPILE_OK;
}
