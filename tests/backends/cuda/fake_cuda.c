/* A fake CUDA driver library, for testing rk's CUDA backend without a GPU.
 *
 * Built as a shared library and named by RK_CUDA_LIB:
 *
 *   RK_CUDA_LIB=.../librk_fake_cuda.so test_cuda_loader
 *   RK_CUDA_LIB=.../librk_fake_cuda.so RK_FAKE_CUDA_DEVICES=1 test_cuda_fake
 *
 * Its only driver export is cuGetProcAddress_v2 (cuGetProcAddress, the
 * 4-argument form of drivers 11.3 to 11.8, when built with
 * RK_FAKE_CUDA_V1), which hands out every entry point of RK_CU_SYMBOLS.
 *
 * Without RK_FAKE_CUDA_DEVICES=1 the fake only loads: cuInit,
 * cuDriverGetVersion (RK_FAKE_CUDA_DRIVER_VERSION), cuGetErrorName,
 * cuGetErrorString and cuDeviceGetCount (0 devices) work, and every other
 * entry point answers CUDA_ERROR_NOT_SUPPORTED.
 *
 * With RK_FAKE_CUDA_DEVICES=1 it has one device, "rk fake GPU", with an
 * H100's attributes, whose memory is host memory: a device pointer is the
 * host address of its bytes, so copies move real data and a test can look
 * at device memory directly. Work is done when it is queued (a copy copies,
 * a memset sets), so streams and events are bookkeeping and synchronizing
 * always succeeds. Kernels do not run: a launch is checked (function,
 * stream, geometry, parameters), recorded and handed to the launch hook
 * when one is set. The fake is strict where a driver would fail or fault:
 * a device pointer outside every live allocation, a handle that is not
 * live, a call without a current context, a launch larger than the device
 * allows; each such refusal is counted ("bad_calls"), so a test can see
 * that the backend never made one.
 *
 *   - One primary context, retained and released by count. When the count
 *     drops to 0 the context is reset: whatever it still owned is freed
 *     (counted in "leaked_at_reset") and a sticky error is cleared.
 *   - A sticky error (700 illegal address and the others after which CUDA
 *     refuses every further call), returned by an injected failure, makes
 *     every later call that needs the context return it until that reset.
 *   - Modules: cuModuleLoadData takes a CUBIN (ELF, as NVRTC builds it) or
 *     PTX text and keeps a copy. A CUBIN's kernel NAME is its section
 *     .text.NAME, with the parameter sizes from the KPARAM_INFO records of
 *     .nv.info.NAME; a PTX kernel is its ".entry NAME(...)" with the sizes
 *     of its .param list. A launch reads exactly those bytes of each
 *     parameter (so a backend that passes too few is caught by ASan).
 *
 * Environment, read on each call:
 *   RK_FAKE_CUDA_HIDE=cuMemAlloc[,name...]  lookups of these names fail with
 *                                          CUDA_ERROR_NOT_FOUND (status 1)
 *   RK_FAKE_CUDA_INIT=<code>               cuInit returns <code>
 *   RK_FAKE_CUDA_DEVICES=1                 one device, as above
 *   RK_FAKE_CUDA_POOLS=0                   no stream-ordered allocator: the
 *                                          attribute is 0 and cuMemAllocAsync
 *                                          and cuMemFreeAsync answer
 *                                          CUDA_ERROR_NOT_SUPPORTED
 *   RK_FAKE_CUDA_ATTR=<attr>:<value>[,...] device attribute overrides
 *   RK_FAKE_CUDA_FUNC_ATTR=<attr>:<value>  function attribute overrides
 *   RK_FAKE_CUDA_FAIL=<name>:<code>[,...]  entry point <name> returns <code>
 *                                          (a sticky code also makes the
 *                                          context sticky, as on a GPU)
 *
 * For tests (dlopen the same file and dlsym these):
 *   int rk_fake_cuda_stats(const char *what)   a counter, -1 if unknown:
 *       "retained", "allocs_live", "host_allocs_live", "streams_live",
 *       "events_live", "modules_live", "launches", "copies", "memsets",
 *       "calls", "bad_calls", "leaked_at_reset", "sticky", "resets"
 *   const char *rk_fake_cuda_last_launch(void)  the latest launch, as
 *       "name=K grid=X,Y,Z block=X,Y,Z shared=N cooperative=0|1 nparams=N
 *        p0=0x... p1=0x..." (each value the first 8 bytes of the parameter,
 *       little-endian, zero-extended); "" before the first. The string is
 *       the calling thread's copy.
 *   void rk_fake_cuda_set_launch_hook(hook, user)  hook(name, params,
 *       nparams, user) is called by each successful launch, on the
 *       launching thread, without the fake's lock held (NULL: none).
 *   CUstream rk_fake_cuda_launch_stream(void)  inside the hook: the
 *       launch's stream.
 *   void rk_fake_cuda_set_stream_busy(stream, busy)  a kernel the test
 *       plays runs on `stream` while busy: cuStreamQuery answers
 *       CUDA_ERROR_NOT_READY and cuStreamSynchronize waits. Loading a
 *       module or pinning host memory meanwhile (which a GPU does only
 *       once no kernel runs) counts in the stat "busy_loads".
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <elf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cuda_api.h"

#ifndef RK_FAKE_CUDA_DRIVER_VERSION
#error "RK_FAKE_CUDA_DRIVER_VERSION must be defined (tests/backends/cuda)"
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))

/* cuGetProcAddress_v2's symbolStatus values. */
enum { kFoundSymbol = 0, kSymbolNotFound = 1 };

/* The device. */
enum {
  kTotalMem = 1 << 30,
  kSharedPerBlock = 48 * 1024,
  kSharedOptin = 227 * 1024,
  kMaxThreadsPerBlock = 1024,
  kMaxThreadsPerSm = 2048,
  kMaxBlocksPerSm = 32,
  kSms = 132,
  kAllocAlign = 256,
  kMaxParams = 64,
};
static const char kDeviceName[] = "rk fake GPU";

static int g_initialized; /* atomic: cuInit succeeded */

/* ---- Environment -------------------------------------------------------- */

/* Whether `name` is in the comma-separated list in variable `var`; with
 * `out_value`, entries are NAME:VALUE and the value is returned there. */
static bool listed(const char *var, const char *name, long *out_value) {
  const char *list = getenv(var);
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > n && strncmp(p, name, n) == 0 && out_value && p[n] == ':') {
      *out_value = strtol(p + n + 1, NULL, 0);
      return true;
    }
    if (len == n && strncmp(p, name, n) == 0 && !out_value) return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

static bool devices_on(void) {
  const char *env = getenv("RK_FAKE_CUDA_DEVICES");
  return env && strcmp(env, "1") == 0;
}

static bool pools_on(void) {
  const char *env = getenv("RK_FAKE_CUDA_POOLS");
  return !(env && strcmp(env, "0") == 0);
}

/* ---- State -------------------------------------------------------------- */

/* Device or pinned host memory; both are plain host memory here. */
typedef struct fake_alloc {
  struct fake_alloc *next;
  uintptr_t base;
  size_t size;
  bool host; /* cuMemHostAlloc */
} fake_alloc_t;

struct CUctx_st {
  int retained;
  CUresult sticky; /* RK_CUDA_SUCCESS, or the error every call now gets */
};

struct CUstream_st {
  struct CUstream_st *next;
  unsigned int flags;
  int busy; /* a test's played kernel runs on it (set_stream_busy) */
};

struct CUevent_st {
  struct CUevent_st *next;
  bool recorded;
};

struct CUfunc_st {
  struct CUfunc_st *next;
  struct CUmod_st *module;
  char name[256];
  int nparams;
  uint16_t param_size[kMaxParams];
  int max_dynamic_shared;
};

struct CUmod_st {
  struct CUmod_st *next;
  unsigned char *image;
  size_t size;
  bool ptx;
  struct CUfunc_st *functions;
};

/* Everything below is guarded by g_lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st g_ctx;
static fake_alloc_t *g_allocs;
static size_t g_used; /* device bytes allocated */
static struct CUstream_st *g_streams;
static struct CUevent_st *g_events;
static struct CUmod_st *g_modules;
static char g_last_launch[4096];
static void (*g_hook)(const char *, void **, int, void *);
static void *g_hook_user;

static struct {
  int launches, copies, memsets, calls, bad_calls, leaked_at_reset, resets;
  int busy_loads; /* module loads or pinnings while a stream was busy */
} g_count;

/* The stream of the launch whose hook runs on this thread. */
static _Thread_local CUstream t_launch_stream;

/* Driver work that waits for an idle device on a GPU (the caller holds
 * g_lock): counted when a stream is busy, where a GPU would never return. */
static void note_idle_wait_locked(void) {
  for (const struct CUstream_st *s = g_streams; s; s = s->next)
    if (s->busy) {
      g_count.busy_loads++;
      return;
    }
}

/* The context current on this thread (cuCtxSetCurrent). */
static _Thread_local struct CUctx_st *t_current;

static int count_allocs(bool host) {
  int n = 0;
  for (const fake_alloc_t *a = g_allocs; a; a = a->next) n += a->host == host;
  return n;
}

static void free_module(struct CUmod_st *m) {
  while (m->functions) {
    struct CUfunc_st *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  free(m->image);
  free(m);
}

/* The primary context's last release: the device is reset and everything
 * the context still owned is freed. */
static void reset_locked(void) {
  int leaked = 0;
  while (g_allocs) {
    fake_alloc_t *a = g_allocs;
    g_allocs = a->next;
    free((void *)a->base);
    free(a);
    ++leaked;
  }
  g_used = 0;
  while (g_streams) {
    struct CUstream_st *s = g_streams;
    g_streams = s->next;
    free(s);
    ++leaked;
  }
  while (g_events) {
    struct CUevent_st *e = g_events;
    g_events = e->next;
    free(e);
    ++leaked;
  }
  while (g_modules) {
    struct CUmod_st *m = g_modules;
    g_modules = m->next;
    free_module(m);
    ++leaked;
  }
  g_count.leaked_at_reset += leaked;
  g_count.resets++;
  g_ctx.sticky = RK_CUDA_SUCCESS;
}

/* ---- Entering an entry point -------------------------------------------- */

/* Errors after which a real context refuses every further call. */
static bool sticky_code(CUresult r) {
  switch (r) {
    case RK_CUDA_ERROR_ILLEGAL_ADDRESS:
    case RK_CUDA_ERROR_LAUNCH_TIMEOUT:
    case RK_CUDA_ERROR_ASSERT:
    case RK_CUDA_ERROR_HARDWARE_STACK_ERROR:
    case RK_CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case RK_CUDA_ERROR_MISALIGNED_ADDRESS:
    case RK_CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case RK_CUDA_ERROR_INVALID_PC:
    case RK_CUDA_ERROR_LAUNCH_FAILED:
    case RK_CUDA_ERROR_ECC_UNCORRECTABLE:
    case RK_CUDA_ERROR_NVLINK_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

/* A refusal of something a correct caller never passes. */
static CUresult bad(CUresult r) {
  g_count.bad_calls++;
  return r;
}

enum { kNoContext = 0, kNeedsContext = 1 };

/* The start of every device-mode entry point, with g_lock held: the
 * device mode, an injected failure, then (for calls that work on the
 * context) a current context and no sticky error. */
static CUresult enter_locked(const char *name, int needs_context) {
  g_count.calls++;
  long code = 0;
  if (listed("RK_FAKE_CUDA_FAIL", name, &code) && code != 0) {
    if (sticky_code((CUresult)code) && g_ctx.retained > 0)
      g_ctx.sticky = (CUresult)code;
    return (CUresult)code;
  }
  if (needs_context) {
    if (t_current != &g_ctx || g_ctx.retained == 0)
      return bad(RK_CUDA_ERROR_INVALID_CONTEXT);
    if (g_ctx.sticky != RK_CUDA_SUCCESS) return g_ctx.sticky;
  }
  return RK_CUDA_SUCCESS;
}

/* Opens an entry point: returns from it with CUDA_ERROR_NOT_SUPPORTED when
 * there are no devices, else takes g_lock and returns what enter_locked
 * refuses. Every path out after it goes through LEAVE. */
#define ENTER(name, needs_context)                          \
  if (!devices_on()) return RK_CUDA_ERROR_NOT_SUPPORTED;    \
  pthread_mutex_lock(&g_lock);                              \
  {                                                         \
    CUresult enter_r_ = enter_locked(#name, needs_context); \
    if (enter_r_ != RK_CUDA_SUCCESS) LEAVE(enter_r_);       \
  }                                                         \
  do {                                                      \
  } while (0)
#define LEAVE(r)                   \
  do {                             \
    CUresult leave_r_ = (r);       \
    pthread_mutex_unlock(&g_lock); \
    return leave_r_;               \
  } while (0)

/* ---- Lookups ------------------------------------------------------------ */

/* The allocation holding [p, p + n), or NULL. */
static fake_alloc_t *find_range(uintptr_t p, size_t n) {
  for (fake_alloc_t *a = g_allocs; a; a = a->next)
    if (p >= a->base && p - a->base < a->size && n <= a->size - (p - a->base))
      return a;
  return NULL;
}

static fake_alloc_t **find_base(uintptr_t p, bool host) {
  for (fake_alloc_t **a = &g_allocs; *a; a = &(*a)->next)
    if ((*a)->base == p && (*a)->host == host) return a;
  return NULL;
}

/* Streams: NULL (the legacy default stream) or a live one. */
static bool stream_ok(CUstream s) {
  if (!s) return true;
  for (struct CUstream_st *p = g_streams; p; p = p->next)
    if (p == s) return true;
  return false;
}

static bool event_ok(CUevent e) {
  for (struct CUevent_st *p = g_events; p; p = p->next)
    if (p == e) return true;
  return false;
}

static bool function_ok(CUfunction f) {
  for (struct CUmod_st *m = g_modules; m; m = m->next)
    for (struct CUfunc_st *p = m->functions; p; p = p->next)
      if (p == f) return true;
  return false;
}

static int device_attribute(int attr) {
  switch (attr) {
    case RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return kMaxThreadsPerBlock;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return kSharedPerBlock;
    case RK_CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return 1980000; /* kHz */
    case RK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return kSms;
    case RK_CU_DEVICE_ATTRIBUTE_INTEGRATED:
      return 0;
    case RK_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      return 1;
    case RK_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return 0x19;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return kMaxThreadsPerSm;
    case RK_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      return 1;
    case RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case RK_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      return 1;
    case RK_CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      return 1;
    case RK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return kSharedOptin;
    case RK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      return pools_on() ? 1 : 0;
    default:
      return -1;
  }
}

/* A device attribute with RK_FAKE_CUDA_ATTR applied; -1 when unknown. */
static int attribute(int attr) {
  char key[16];
  snprintf(key, sizeof key, "%d", attr);
  long v;
  if (listed("RK_FAKE_CUDA_ATTR", key, &v)) return (int)v;
  return device_attribute(attr);
}

/* ---- Images ------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

/* The size of a 64-bit little-endian ELF image from its headers; 0 when it
 * is not one. */
static size_t elf_size(const unsigned char *img) {
  Elf64_Ehdr eh;
  memcpy(&eh, img, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shoff > (1u << 28) || eh.e_shnum > 4096)
    return 0;
  size_t end = eh.e_shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, img + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NOBITS) continue;
    if (sh.sh_offset > (1u << 28) || sh.sh_size > (1u << 28)) return 0;
    if (sh.sh_offset + sh.sh_size > end) end = sh.sh_offset + sh.sh_size;
  }
  return end;
}

/* The section of a CUBIN named `name`: its bytes and size, or NULL. */
static const unsigned char *elf_section(const struct CUmod_st *m,
                                        const char *name, size_t *out_size) {
  Elf64_Ehdr eh;
  memcpy(&eh, m->image, sizeof eh);
  if (eh.e_shstrndx >= eh.e_shnum) return NULL;
  Elf64_Shdr strtab;
  memcpy(&strtab, m->image + eh.e_shoff + eh.e_shstrndx * sizeof strtab,
         sizeof strtab);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, m->image + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_name >= strtab.sh_size) continue;
    const char *s = (const char *)m->image + strtab.sh_offset + sh.sh_name;
    size_t room = strtab.sh_size - sh.sh_name;
    if (strnlen(s, room) < room && strcmp(s, name) == 0) {
      *out_size = sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size;
      return m->image + sh.sh_offset;
    }
  }
  return NULL;
}

/* Finds kernel f->name in a CUBIN and reads its parameter sizes from the
 * EIATTR_KPARAM_INFO records of .nv.info.<name>: format 0x04 (sized
 * value), attribute 0x17, 12 bytes: index, ordinal (u16), offset (u16),
 * then a word whose top 14 bits are the size. */
static bool cubin_function(const struct CUmod_st *m, struct CUfunc_st *f) {
  char section[300];
  size_t size = 0;
  snprintf(section, sizeof section, ".text.%s", f->name);
  if (!elf_section(m, section, &size)) return false;
  snprintf(section, sizeof section, ".nv.info.%s", f->name);
  const unsigned char *info = elf_section(m, section, &size);
  f->nparams = 0;
  for (size_t at = 0; info && at + 4 <= size;) {
    const unsigned format = info[at], attr = info[at + 1];
    size_t len = format == 0x04 ? rd16(info + at + 2) : 0;
    const unsigned char *data = info + at + 4;
    at += 4 + len;
    if (format != 0x04 || attr != 0x17 || len < 12 || at > size) continue;
    const unsigned ordinal = rd16(data + 4);
    if (ordinal >= kMaxParams) continue;
    f->param_size[ordinal] = (uint16_t)(rd32(data + 8) >> 18);
    if ((int)ordinal + 1 > f->nparams) f->nparams = (int)ordinal + 1;
  }
  return true;
}

/* Finds ".entry NAME(" in PTX and sizes its ".param .TYPE name[N]" list. */
static bool ptx_function(const struct CUmod_st *m, struct CUfunc_st *f) {
  const char *text = (const char *)m->image;
  const size_t n = strlen(f->name);
  const char *p = text;
  while ((p = strstr(p, ".entry ")) != NULL) {
    p += 7;
    while (*p == ' ') ++p;
    if (strncmp(p, f->name, n) == 0 &&
        (p[n] == '(' || p[n] == ' ' || p[n] == '\n' || p[n] == '\r'))
      break;
  }
  if (!p) return false;
  p += n;
  const char *end = strchr(p, ')');
  f->nparams = 0;
  while (end && (p = strstr(p, ".param")) != NULL && p < end &&
         f->nparams < kMaxParams) {
    p += 6;
    /* ".param [.align N] .TYPE name[COUNT]" */
    const char *type = strstr(p, " .");
    while (type && type < end && strncmp(type, " .align", 7) == 0)
      type = strstr(type + 7, " .");
    if (!type || type >= end) break;
    type += 2;
    while (*type && (*type < '0' || *type > '9')) ++type;
    char *after = NULL;
    unsigned bits = (unsigned)strtoul(type, &after, 10);
    p = after;
    unsigned count = 1;
    const char *comma = strchr(p, ',');
    const char *bracket = strchr(p, '[');
    if (bracket && bracket < end && (!comma || bracket < comma))
      count = (unsigned)strtoul(bracket + 1, NULL, 10);
    f->param_size[f->nparams++] = (uint16_t)(bits / 8 * count);
  }
  return true;
}

/* ---- Loading and errors (work without devices) -------------------------- */

static CUresult fake_cuInit(unsigned int flags) {
  if (flags != 0) return RK_CUDA_ERROR_INVALID_VALUE;
  const char *env = getenv("RK_FAKE_CUDA_INIT");
  CUresult r = env && *env ? (CUresult)strtol(env, NULL, 0) : RK_CUDA_SUCCESS;
  __atomic_store_n(&g_initialized, r == RK_CUDA_SUCCESS, __ATOMIC_RELEASE);
  return r;
}

/* Like the driver, this one works before cuInit. */
static CUresult fake_cuDriverGetVersion(int *version) {
  if (!version) return RK_CUDA_ERROR_INVALID_VALUE;
  *version = RK_FAKE_CUDA_DRIVER_VERSION;
  return RK_CUDA_SUCCESS;
}

static CUresult fake_cuGetErrorName(CUresult err, const char **name) {
  if (!name) return RK_CUDA_ERROR_INVALID_VALUE;
  switch (err) {
#define FAKE_NAME_(name_, value, status) \
  case value:                            \
    *name = #name_;                      \
    return RK_CUDA_SUCCESS;
    RK_CU_ERRORS(FAKE_NAME_)
#undef FAKE_NAME_
  }
  *name = NULL;
  return RK_CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorString(CUresult err, const char **text) {
  if (!text) return RK_CUDA_ERROR_INVALID_VALUE;
  switch (err) {
#define FAKE_TEXT_(name_, value, status)          \
  case value:                                     \
    *text = "the fake driver's text for " #name_; \
    return RK_CUDA_SUCCESS;
    RK_CU_ERRORS(FAKE_TEXT_)
#undef FAKE_TEXT_
  }
  *text = NULL;
  return RK_CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuDeviceGetCount(int *count) {
  if (!count) return RK_CUDA_ERROR_INVALID_VALUE;
  if (!__atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE))
    return RK_CUDA_ERROR_NOT_INITIALIZED;
  if (!devices_on()) {
    *count = 0;
    return RK_CUDA_SUCCESS;
  }
  pthread_mutex_lock(&g_lock);
  CUresult r = enter_locked("cuDeviceGetCount", kNoContext);
  if (r == RK_CUDA_SUCCESS) *count = 1;
  LEAVE(r);
}

/* ---- Devices ------------------------------------------------------------ */

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal) {
  ENTER(cuDeviceGet, kNoContext);
  if (!dev) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (ordinal != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  *dev = 0;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
  ENTER(cuDeviceGetName, kNoContext);
  if (!name || len <= 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (dev != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  snprintf(name, (size_t)len, "%s", kDeviceName);
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute attr,
                                          CUdevice dev) {
  ENTER(cuDeviceGetAttribute, kNoContext);
  if (!value) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (dev != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  int v = attribute(attr);
  if (v < 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  *value = v;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  ENTER(cuDeviceTotalMem, kNoContext);
  if (!bytes) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (dev != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  *bytes = kTotalMem;
  LEAVE(RK_CUDA_SUCCESS);
}

/* ---- Contexts ----------------------------------------------------------- */

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRetain, kNoContext);
  if (!ctx) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (dev != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  g_ctx.retained++;
  *ctx = &g_ctx;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRelease, kNoContext);
  if (dev != 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_DEVICE));
  if (g_ctx.retained == 0) LEAVE(bad(RK_CUDA_ERROR_INVALID_CONTEXT));
  if (--g_ctx.retained == 0) reset_locked();
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  ENTER(cuCtxSetCurrent, kNoContext);
  if (ctx && (ctx != &g_ctx || g_ctx.retained == 0))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_CONTEXT));
  t_current = ctx;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuCtxGetCurrent(CUcontext *ctx) {
  ENTER(cuCtxGetCurrent, kNoContext);
  if (!ctx) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  *ctx = t_current;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuCtxSynchronize(void) {
  ENTER(cuCtxSynchronize, kNeedsContext);
  LEAVE(RK_CUDA_SUCCESS);
}

/* ---- Memory ------------------------------------------------------------- */

static CUresult alloc_locked(uintptr_t *out, size_t bytes, bool host) {
  if (!out || bytes == 0) return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (!host && bytes > kTotalMem - g_used) return RK_CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (bytes + kAllocAlign - 1) & ~(size_t)(kAllocAlign - 1);
  fake_alloc_t *a = calloc(1, sizeof *a);
  void *p = a ? aligned_alloc(kAllocAlign, rounded) : NULL;
  if (!p) {
    free(a);
    return RK_CUDA_ERROR_OUT_OF_MEMORY;
  }
  /* Fresh device memory is not zeroed on a GPU either. */
  memset(p, host ? 0 : 0xa5, rounded);
  a->base = (uintptr_t)p;
  a->size = bytes;
  a->host = host;
  a->next = g_allocs;
  g_allocs = a;
  if (!host) g_used += bytes;
  *out = a->base;
  return RK_CUDA_SUCCESS;
}

static CUresult free_locked(uintptr_t p, bool host) {
  fake_alloc_t **link = find_base(p, host);
  if (!link) return bad(RK_CUDA_ERROR_INVALID_VALUE);
  fake_alloc_t *a = *link;
  *link = a->next;
  if (!host) g_used -= a->size;
  free((void *)a->base);
  free(a);
  return RK_CUDA_SUCCESS;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  ENTER(cuMemAlloc, kNeedsContext);
  if (!ptr) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  uintptr_t p = 0;
  CUresult r = alloc_locked(&p, bytes, false);
  if (r == RK_CUDA_SUCCESS) *ptr = (CUdeviceptr)p;
  LEAVE(r);
}

static CUresult fake_cuMemFree(CUdeviceptr ptr) {
  ENTER(cuMemFree, kNeedsContext);
  LEAVE(free_locked((uintptr_t)ptr, false));
}

static CUresult fake_cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes,
                                     CUstream stream) {
  ENTER(cuMemAllocAsync, kNeedsContext);
  if (!pools_on()) LEAVE(bad(RK_CUDA_ERROR_NOT_SUPPORTED));
  if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  if (!ptr) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  uintptr_t p = 0;
  CUresult r = alloc_locked(&p, bytes, false);
  if (r == RK_CUDA_SUCCESS) *ptr = (CUdeviceptr)p;
  LEAVE(r);
}

static CUresult fake_cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  ENTER(cuMemFreeAsync, kNeedsContext);
  if (!pools_on()) LEAVE(bad(RK_CUDA_ERROR_NOT_SUPPORTED));
  if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  LEAVE(free_locked((uintptr_t)ptr, false));
}

static CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total) {
  ENTER(cuMemGetInfo, kNeedsContext);
  if (!free_bytes || !total) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  *free_bytes = kTotalMem - g_used;
  *total = kTotalMem;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuMemHostAlloc(void **ptr, size_t bytes,
                                    unsigned int flags) {
  ENTER(cuMemHostAlloc, kNeedsContext);
  if (!ptr || (flags & ~0x7u)) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  note_idle_wait_locked();
  uintptr_t p = 0;
  CUresult r = alloc_locked(&p, bytes, true);
  if (r == RK_CUDA_SUCCESS) *ptr = (void *)p;
  LEAVE(r);
}

static CUresult fake_cuMemFreeHost(void *ptr) {
  ENTER(cuMemFreeHost, kNeedsContext);
  LEAVE(free_locked((uintptr_t)ptr, true));
}

static CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *host,
                                               unsigned int flags) {
  ENTER(cuMemHostGetDevicePointer, kNeedsContext);
  const fake_alloc_t *a = find_range((uintptr_t)host, 1);
  if (!dptr || flags != 0 || !a || !a->host)
    LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  *dptr = (CUdeviceptr)(uintptr_t)host; /* unified addressing */
  LEAVE(RK_CUDA_SUCCESS);
}

/* Where a copy's device side(s) must lie: inside one live allocation
 * (device memory, or pinned host memory through its device address). */
static CUresult copy_locked(void *dst, const void *src, size_t n,
                            bool dst_device, bool src_device, CUstream stream) {
  if (!stream_ok(stream)) return bad(RK_CUDA_ERROR_INVALID_HANDLE);
  if (n == 0) return RK_CUDA_SUCCESS;
  if (!dst || !src) return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (dst_device && !find_range((uintptr_t)dst, n))
    return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (src_device && !find_range((uintptr_t)src, n))
    return bad(RK_CUDA_ERROR_INVALID_VALUE);
  memmove(dst, src, n);
  g_count.copies++;
  return RK_CUDA_SUCCESS;
}

#define DEV(p) ((void *)(uintptr_t)(p))

static CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src,
                                  size_t bytes) {
  ENTER(cuMemcpyHtoD, kNeedsContext);
  LEAVE(copy_locked(DEV(dst), src, bytes, true, false, NULL));
}

static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  ENTER(cuMemcpyDtoH, kNeedsContext);
  LEAVE(copy_locked(dst, DEV(src), bytes, false, true, NULL));
}

static CUresult fake_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src,
                                  size_t bytes) {
  ENTER(cuMemcpyDtoD, kNeedsContext);
  LEAVE(copy_locked(DEV(dst), DEV(src), bytes, true, true, NULL));
}

static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                       size_t bytes, CUstream stream) {
  ENTER(cuMemcpyHtoDAsync, kNeedsContext);
  LEAVE(copy_locked(DEV(dst), src, bytes, true, false, stream));
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                       CUstream stream) {
  ENTER(cuMemcpyDtoHAsync, kNeedsContext);
  LEAVE(copy_locked(dst, DEV(src), bytes, false, true, stream));
}

static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
                                       size_t bytes, CUstream stream) {
  ENTER(cuMemcpyDtoDAsync, kNeedsContext);
  LEAVE(copy_locked(DEV(dst), DEV(src), bytes, true, true, stream));
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                     size_t n, CUstream stream) {
  ENTER(cuMemsetD8Async, kNeedsContext);
  if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  if (n && !find_range((uintptr_t)dst, n))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (n) memset(DEV(dst), value, n);
  g_count.memsets++;
  LEAVE(RK_CUDA_SUCCESS);
}

/* ---- Modules and functions ---------------------------------------------- */

static CUresult fake_cuModuleLoadData(CUmodule *mod, const void *image) {
  ENTER(cuModuleLoadData, kNeedsContext);
  if (!mod || !image) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  note_idle_wait_locked();
  const unsigned char *img = image;
  size_t size = 0;
  bool ptx = false;
  if (memcmp(img, ELFMAG, SELFMAG) == 0) {
    size = elf_size(img);
  } else if (strstr((const char *)img, ".entry") != NULL) {
    size = strlen((const char *)img) + 1;
    ptx = true;
  }
  if (size == 0) LEAVE(RK_CUDA_ERROR_INVALID_IMAGE);
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (m) m->image = malloc(size);
  if (!m || !m->image) {
    free(m);
    LEAVE(RK_CUDA_ERROR_OUT_OF_MEMORY);
  }
  memcpy(m->image, img, size);
  m->size = size;
  m->ptx = ptx;
  m->next = g_modules;
  g_modules = m;
  *mod = m;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuModuleUnload(CUmodule mod) {
  ENTER(cuModuleUnload, kNeedsContext);
  for (struct CUmod_st **p = &g_modules; *p; p = &(*p)->next) {
    if (*p == mod) {
      *p = mod->next;
      free_module(mod);
      LEAVE(RK_CUDA_SUCCESS);
    }
  }
  LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
}

static CUresult fake_cuModuleGetFunction(CUfunction *fn, CUmodule mod,
                                         const char *name) {
  ENTER(cuModuleGetFunction, kNeedsContext);
  struct CUmod_st *m = g_modules;
  while (m && m != mod) m = m->next;
  if (!m) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  if (!fn || !name || strlen(name) >= sizeof m->functions->name)
    LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  for (struct CUfunc_st *f = m->functions; f; f = f->next) {
    if (strcmp(f->name, name) == 0) {
      *fn = f;
      LEAVE(RK_CUDA_SUCCESS);
    }
  }
  struct CUfunc_st *f = calloc(1, sizeof *f);
  if (!f) LEAVE(RK_CUDA_ERROR_OUT_OF_MEMORY);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->module = m;
  f->max_dynamic_shared = kSharedPerBlock;
  if (!(m->ptx ? ptx_function(m, f) : cubin_function(m, f))) {
    free(f);
    LEAVE(RK_CUDA_ERROR_NOT_FOUND);
  }
  f->next = m->functions;
  m->functions = f;
  *fn = f;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuFuncGetAttribute(int *value, CUfunction_attribute attr,
                                        CUfunction fn) {
  ENTER(cuFuncGetAttribute, kNoContext);
  if (!value) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (!function_ok(fn)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  char key[16];
  snprintf(key, sizeof key, "%d", attr);
  long v;
  if (listed("RK_FAKE_CUDA_FUNC_ATTR", key, &v)) {
    *value = (int)v;
    LEAVE(RK_CUDA_SUCCESS);
  }
  switch (attr) {
    case RK_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = kMaxThreadsPerBlock;
      break;
    case RK_CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 32;
      break;
    case RK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = fn->max_dynamic_shared;
      break;
    default:
      /* Shared, const and local sizes, versions, cache mode: 0. */
      if (attr < 0 || attr > 16) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
      *value = 0;
      break;
  }
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuFuncSetAttribute(CUfunction fn,
                                        CUfunction_attribute attr, int value) {
  ENTER(cuFuncSetAttribute, kNoContext);
  if (!function_ok(fn)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  if (attr == RK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > kSharedOptin)
      LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
    fn->max_dynamic_shared = value;
  }
  LEAVE(RK_CUDA_SUCCESS);
}

/* Blocks of `block_size` threads resident on one SM: limited by the SM's
 * threads and its block slots. */
static int occupancy(int block_size) {
  int n = block_size > 0 ? kMaxThreadsPerSm / block_size : 0;
  return n > kMaxBlocksPerSm ? kMaxBlocksPerSm : n < 1 ? 1 : n;
}

static CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *blocks, CUfunction fn, int block_size, size_t dynamic_shared) {
  ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor, kNoContext);
  if (!blocks || block_size <= 0 || block_size > kMaxThreadsPerBlock ||
      dynamic_shared > kSharedOptin)
    LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (!function_ok(fn)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  *blocks = occupancy(block_size);
  LEAVE(RK_CUDA_SUCCESS);
}

/* Checks and records a launch; the caller then runs the hook. */
static CUresult launch_locked(CUfunction fn, const unsigned g[3],
                              const unsigned b[3], unsigned shared,
                              CUstream stream, void **params, void **extra,
                              bool cooperative) {
  if (!function_ok(fn) || !stream_ok(stream))
    return bad(RK_CUDA_ERROR_INVALID_HANDLE);
  const unsigned max_g[3] = {2147483647u, 65535u, 65535u};
  const unsigned max_b[3] = {1024u, 1024u, 64u};
  for (int i = 0; i < 3; ++i)
    if (g[i] == 0 || b[i] == 0 || g[i] > max_g[i] || b[i] > max_b[i])
      return bad(RK_CUDA_ERROR_INVALID_VALUE);
  const uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
  if (threads > kMaxThreadsPerBlock) return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (shared > (unsigned)fn->max_dynamic_shared)
    return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (extra || (fn->nparams > 0 && !params))
    return bad(RK_CUDA_ERROR_INVALID_VALUE);
  if (cooperative &&
      (uint64_t)g[0] * g[1] * g[2] > (uint64_t)occupancy((int)threads) * kSms)
    return bad(RK_CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  int used =
      snprintf(g_last_launch, sizeof g_last_launch,
               "name=%s grid=%u,%u,%u block=%u,%u,%u shared=%u cooperative=%d "
               "nparams=%d",
               fn->name, g[0], g[1], g[2], b[0], b[1], b[2], shared,
               cooperative ? 1 : 0, fn->nparams);
  for (int i = 0; i < fn->nparams; ++i) {
    /* Every byte of the parameter is read, as the driver copies it. */
    unsigned char bytes[4096] = {0};
    size_t size =
        fn->param_size[i] < sizeof bytes ? fn->param_size[i] : sizeof bytes;
    if (size) memcpy(bytes, params[i], size);
    uint64_t v = 0;
    for (size_t k = 0; k < 8 && k < size; ++k) v |= (uint64_t)bytes[k] << 8 * k;
    if (used > 0 && (size_t)used < sizeof g_last_launch)
      used +=
          snprintf(g_last_launch + used, sizeof g_last_launch - (size_t)used,
                   " p%d=0x%016llx", i, (unsigned long long)v);
  }
  g_count.launches++;
  return RK_CUDA_SUCCESS;
}

static CUresult launch(const char *entry, CUfunction fn, unsigned gx,
                       unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared, CUstream stream,
                       void **params, void **extra, bool cooperative) {
  if (!devices_on()) return RK_CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&g_lock);
  CUresult r = enter_locked(entry, kNeedsContext);
  const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  if (r == RK_CUDA_SUCCESS)
    r = launch_locked(fn, g, b, shared, stream, params, extra, cooperative);
  void (*hook)(const char *, void **, int, void *) = g_hook;
  void *user = g_hook_user;
  char name[sizeof fn->name];
  int nparams = 0;
  if (r == RK_CUDA_SUCCESS) {
    snprintf(name, sizeof name, "%s", fn->name);
    nparams = fn->nparams;
  }
  pthread_mutex_unlock(&g_lock);
  if (r == RK_CUDA_SUCCESS && hook) {
    t_launch_stream = stream;
    hook(name, params, nparams, user);
    t_launch_stream = NULL;
  }
  return r;
}

static CUresult fake_cuLaunchKernel(CUfunction fn, unsigned int gx,
                                    unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared,
                                    CUstream stream, void **params,
                                    void **extra) {
  return launch("cuLaunchKernel", fn, gx, gy, gz, bx, by, bz, shared, stream,
                params, extra, false);
}

static CUresult fake_cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx,
                                               unsigned int gy, unsigned int gz,
                                               unsigned int bx, unsigned int by,
                                               unsigned int bz,
                                               unsigned int shared,
                                               CUstream stream, void **params) {
  return launch("cuLaunchCooperativeKernel", fn, gx, gy, gz, bx, by, bz, shared,
                stream, params, NULL, true);
}

/* ---- Streams and events ------------------------------------------------- */

static CUresult fake_cuStreamCreate(CUstream *stream, unsigned int flags) {
  ENTER(cuStreamCreate, kNeedsContext);
  if (!stream || (flags & ~RK_CU_STREAM_NON_BLOCKING))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) LEAVE(RK_CUDA_ERROR_OUT_OF_MEMORY);
  s->flags = flags;
  s->next = g_streams;
  g_streams = s;
  *stream = s;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuStreamDestroy(CUstream stream) {
  ENTER(cuStreamDestroy, kNeedsContext);
  for (struct CUstream_st **p = &g_streams; *p; p = &(*p)->next) {
    if (*p == stream) {
      *p = stream->next;
      free(stream);
      LEAVE(RK_CUDA_SUCCESS);
    }
  }
  LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
}

static CUresult fake_cuStreamSynchronize(CUstream stream) {
  ENTER(cuStreamSynchronize, kNeedsContext);
  if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  /* A played kernel: until it ends. */
  while (stream && stream->busy) {
    pthread_mutex_unlock(&g_lock);
    const struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&g_lock);
    if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  }
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuStreamQuery(CUstream stream) {
  ENTER(cuStreamQuery, kNeedsContext);
  if (!stream_ok(stream)) LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  LEAVE(stream && stream->busy ? RK_CUDA_ERROR_NOT_READY : RK_CUDA_SUCCESS);
}

static CUresult fake_cuStreamWaitEvent(CUstream stream, CUevent event,
                                       unsigned int flags) {
  ENTER(cuStreamWaitEvent, kNeedsContext);
  if (!stream_ok(stream) || !event_ok(event))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  LEAVE(flags == 0 ? RK_CUDA_SUCCESS : bad(RK_CUDA_ERROR_INVALID_VALUE));
}

static CUresult fake_cuEventCreate(CUevent *event, unsigned int flags) {
  ENTER(cuEventCreate, kNeedsContext);
  if (!event || (flags & ~0xfu)) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) LEAVE(RK_CUDA_ERROR_OUT_OF_MEMORY);
  e->next = g_events;
  g_events = e;
  *event = e;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuEventDestroy(CUevent event) {
  ENTER(cuEventDestroy, kNeedsContext);
  for (struct CUevent_st **p = &g_events; *p; p = &(*p)->next) {
    if (*p == event) {
      *p = event->next;
      free(event);
      LEAVE(RK_CUDA_SUCCESS);
    }
  }
  LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
}

static CUresult fake_cuEventRecord(CUevent event, CUstream stream) {
  ENTER(cuEventRecord, kNeedsContext);
  if (!event_ok(event) || !stream_ok(stream))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  event->recorded = true;
  LEAVE(RK_CUDA_SUCCESS);
}

static CUresult fake_cuEventQuery(CUevent event) {
  ENTER(cuEventQuery, kNeedsContext);
  LEAVE(event_ok(event) ? RK_CUDA_SUCCESS : bad(RK_CUDA_ERROR_INVALID_HANDLE));
}

static CUresult fake_cuEventSynchronize(CUevent event) {
  ENTER(cuEventSynchronize, kNeedsContext);
  LEAVE(event_ok(event) ? RK_CUDA_SUCCESS : bad(RK_CUDA_ERROR_INVALID_HANDLE));
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  ENTER(cuEventElapsedTime, kNeedsContext);
  if (!ms) LEAVE(bad(RK_CUDA_ERROR_INVALID_VALUE));
  if (!event_ok(start) || !event_ok(end))
    LEAVE(bad(RK_CUDA_ERROR_INVALID_HANDLE));
  if (!start->recorded || !end->recorded) LEAVE(RK_CUDA_ERROR_NOT_READY);
  *ms = 0.001f; /* work is done when queued */
  LEAVE(RK_CUDA_SUCCESS);
}

/* The entry points, with their types checked against rk's table. */
static const rk_cu_api_t kWorking = {
#define FAKE_ENTRY_(name, required, ret, params) .name = fake_##name,
    RK_CU_SYMBOLS(FAKE_ENTRY_)
#undef FAKE_ENTRY_
};

/* ---- For tests ---------------------------------------------------------- */

FAKE_EXPORT int rk_fake_cuda_stats(const char *what);
FAKE_EXPORT int rk_fake_cuda_stats(const char *what) {
  if (!what) return -1;
  pthread_mutex_lock(&g_lock);
  int v = -1;
  int streams = 0, events = 0, modules = 0;
  for (const struct CUstream_st *s = g_streams; s; s = s->next) ++streams;
  for (const struct CUevent_st *e = g_events; e; e = e->next) ++events;
  for (const struct CUmod_st *m = g_modules; m; m = m->next) ++modules;
  if (strcmp(what, "retained") == 0) v = g_ctx.retained;
  if (strcmp(what, "allocs_live") == 0) v = count_allocs(false);
  if (strcmp(what, "host_allocs_live") == 0) v = count_allocs(true);
  if (strcmp(what, "streams_live") == 0) v = streams;
  if (strcmp(what, "events_live") == 0) v = events;
  if (strcmp(what, "modules_live") == 0) v = modules;
  if (strcmp(what, "launches") == 0) v = g_count.launches;
  if (strcmp(what, "copies") == 0) v = g_count.copies;
  if (strcmp(what, "memsets") == 0) v = g_count.memsets;
  if (strcmp(what, "calls") == 0) v = g_count.calls;
  if (strcmp(what, "bad_calls") == 0) v = g_count.bad_calls;
  if (strcmp(what, "leaked_at_reset") == 0) v = g_count.leaked_at_reset;
  if (strcmp(what, "resets") == 0) v = g_count.resets;
  if (strcmp(what, "sticky") == 0) v = g_ctx.sticky;
  if (strcmp(what, "busy_loads") == 0) v = g_count.busy_loads;
  pthread_mutex_unlock(&g_lock);
  return v;
}

FAKE_EXPORT const char *rk_fake_cuda_last_launch(void);
FAKE_EXPORT const char *rk_fake_cuda_last_launch(void) {
  static _Thread_local char copy[sizeof g_last_launch];
  pthread_mutex_lock(&g_lock);
  memcpy(copy, g_last_launch, sizeof copy);
  pthread_mutex_unlock(&g_lock);
  return copy;
}

FAKE_EXPORT void rk_fake_cuda_set_launch_hook(
    void (*hook)(const char *name, void **params, int nparams, void *user),
    void *user);
FAKE_EXPORT void rk_fake_cuda_set_launch_hook(
    void (*hook)(const char *name, void **params, int nparams, void *user),
    void *user) {
  pthread_mutex_lock(&g_lock);
  g_hook = hook;
  g_hook_user = user;
  pthread_mutex_unlock(&g_lock);
}

/* The stream of the launch whose hook is running (NULL elsewhere). */
FAKE_EXPORT CUstream rk_fake_cuda_launch_stream(void);
FAKE_EXPORT CUstream rk_fake_cuda_launch_stream(void) {
  return t_launch_stream;
}

FAKE_EXPORT void rk_fake_cuda_set_stream_busy(CUstream stream, int busy);
FAKE_EXPORT void rk_fake_cuda_set_stream_busy(CUstream stream, int busy) {
  pthread_mutex_lock(&g_lock);
  if (stream_ok(stream) && stream) stream->busy = busy;
  pthread_mutex_unlock(&g_lock);
}

/* ---- Lookup ------------------------------------------------------------- */

static CUresult lookup(const char *symbol, void **pfn, int cuda_version,
                       uint64_t flags, int *symbol_status) {
  if (!symbol || !pfn) return RK_CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (symbol_status) *symbol_status = kSymbolNotFound;
  /* rk asks for the CUDA 12.0 ABI with the default flags; anything else is
   * a loader bug the tests should see. */
  if (cuda_version < RK_CUDA_API_VERSION ||
      flags != RK_CU_GET_PROC_ADDRESS_DEFAULT)
    return RK_CUDA_ERROR_INVALID_VALUE;
  if (listed("RK_FAKE_CUDA_HIDE", symbol, NULL)) return RK_CUDA_ERROR_NOT_FOUND;
#define FAKE_LOOKUP_(name, required, ret, params)     \
  if (strcmp(symbol, #name) == 0) {                   \
    union {                                           \
      ret(*fn) params;                                \
      void *obj;                                      \
    } u;                                              \
    u.fn = kWorking.name;                             \
    *pfn = u.obj;                                     \
    if (symbol_status) *symbol_status = kFoundSymbol; \
    return RK_CUDA_SUCCESS;                           \
  }
  RK_CU_SYMBOLS(FAKE_LOOKUP_)
#undef FAKE_LOOKUP_
  return RK_CUDA_ERROR_NOT_FOUND;
}

#ifdef RK_FAKE_CUDA_V1
FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                      int cuda_version, uint64_t flags);
FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                      int cuda_version, uint64_t flags) {
  return lookup(symbol, pfn, cuda_version, flags, NULL);
}
#else
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                         int cuda_version, uint64_t flags,
                                         int *symbol_status);
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                         int cuda_version, uint64_t flags,
                                         int *symbol_status) {
  return lookup(symbol, pfn, cuda_version, flags, symbol_status);
}
#endif
