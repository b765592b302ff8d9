/* The CUDA backend end to end through the public API, on the fake driver's
 * host-memory device (fake_cuda.c with RK_FAKE_CUDA_DEVICES=1), so that the
 * backend's device paths run on machines without a GPU:
 *
 *   1. the device as the backend describes it, and auto-selection;
 *   2. contexts and streams retain and release what they create;
 *   3. memory: copies really move bytes (device memory is host memory
 *      here), bad pointers are refused before the driver sees them, and a
 *      destroyed context frees what it still owns (with and without the
 *      stream-ordered allocator);
 *   4. driver errors injected into the fake come back as rk statuses, and a
 *      sticky error loses the context until it is destroyed;
 *   5. modules: a real NVRTC build (CUBIN, and PTX for an architecture
 *      NVRTC does not know) loaded by the fake, the disk cache, errors;
 *   6. launches: what the driver receives (kernel, geometry, argument
 *      bytes), and what is refused before it;
 *   7. actors: a persistent kernel's launch and the memory it is given, a
 *      grid too large to be co-resident, a kernel that never stops; with a
 *      launch hook playing the device, calls answered in persistent and
 *      traditional mode and a clean termination; actors that talk to
 *      actors: K2K tables and channels wired, a CPU sender writing a
 *      resident receiver's channel (FULL when it is full), a resident
 *      sender's messages forwarded to a CPU actor.
 *
 *   cuda_fake [--no-pools]    --no-pools: a device without the
 *                             stream-ordered allocator throughout
 *
 * The fake counts what the backend holds (contexts retained, allocations,
 * streams, modules) and every call it had to refuse as invalid
 * ("bad_calls", which must stay 0); the test reads the counters through
 * dlsym on the fake. Cases that compile need NVRTC: without it they are
 * skipped and, when everything else passed, the test exits 77 with the
 * reason.
 *
 * The device side of an actor is played (case 7) with the host-thread
 * actor loop of hal/actor_loop.h and the ring layout of abi/actor_abi.h:
 * the fake hands the test the parameters the backend launched the kernel
 * with, and the test serves the rings at those addresses.
 */
#define RK_TEST_IMPLEMENTATION
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/actor_abi.h"
#include "base/ring.h"
#include "base/sys.h"
#include "hal/actor_loop.h"
#include "rk_test.h"

#ifndef RK_FAKE_CUDA_PATH
#error "RK_FAKE_CUDA_PATH must name the fake driver (tests/backends/cuda)"
#endif

/* ---- The fake ----------------------------------------------------------- */

typedef void (*launch_hook_t)(const char *name, void **params, int nparams,
                              void *user);

static struct {
  void *handle;
  int (*stats)(const char *what);
  const char *(*last_launch)(void);
  void (*set_hook)(launch_hook_t hook, void *user);
  void *(*launch_stream)(void);
  void (*set_stream_busy)(void *stream, int busy);
} g_fake;

static bool g_pools = true;
/* Why the cases that compile did not run ("" when they did). */
static char g_no_nvrtc[1024];

static void open_fake(void) {
  /* The same file rk opens, so both see one library and one state. */
  g_fake.handle = dlopen(RK_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!g_fake.handle) {
    printf("cannot open the fake driver: %s\n", dlerror());
    exit(1);
  }
  *(void **)&g_fake.stats = dlsym(g_fake.handle, "rk_fake_cuda_stats");
  *(void **)&g_fake.last_launch =
      dlsym(g_fake.handle, "rk_fake_cuda_last_launch");
  *(void **)&g_fake.set_hook =
      dlsym(g_fake.handle, "rk_fake_cuda_set_launch_hook");
  *(void **)&g_fake.launch_stream =
      dlsym(g_fake.handle, "rk_fake_cuda_launch_stream");
  *(void **)&g_fake.set_stream_busy =
      dlsym(g_fake.handle, "rk_fake_cuda_set_stream_busy");
  if (!g_fake.stats || !g_fake.last_launch || !g_fake.set_hook ||
      !g_fake.launch_stream || !g_fake.set_stream_busy) {
    printf("the fake driver lacks its test exports\n");
    exit(1);
  }
}

static int stat_of(const char *what) {
  int v = g_fake.stats(what);
  if (v < 0) {
    printf("the fake has no counter \"%s\"\n", what);
    exit(1);
  }
  return v;
}

/* A snapshot of the fake's counters. */
typedef struct counts {
  int retained, allocs, host_allocs, streams, modules, launches, copies, calls,
      bad_calls, leaked;
} counts_t;

static counts_t counts(void) {
  counts_t c = {stat_of("retained"),         stat_of("allocs_live"),
                stat_of("host_allocs_live"), stat_of("streams_live"),
                stat_of("modules_live"),     stat_of("launches"),
                stat_of("copies"),           stat_of("calls"),
                stat_of("bad_calls"),        stat_of("leaked_at_reset")};
  return c;
}

/* Everything the backend holds in the driver is back where it was, and the
 * driver never had to refuse a call. */
#define CHECK_BALANCED(before)                                              \
  do {                                                                      \
    counts_t now_ = counts();                                               \
    CHECK(now_.retained == (before).retained &&                             \
              now_.allocs == (before).allocs &&                             \
              now_.host_allocs == (before).host_allocs &&                   \
              now_.streams == (before).streams &&                           \
              now_.modules == (before).modules,                             \
          "driver objects: retained %d->%d, allocations %d->%d, host "      \
          "allocations %d->%d, streams %d->%d, modules %d->%d",             \
          (before).retained, now_.retained, (before).allocs, now_.allocs,   \
          (before).host_allocs, now_.host_allocs, (before).streams,         \
          now_.streams, (before).modules, now_.modules);                    \
    CHECK(now_.leaked == (before).leaked,                                   \
          "%d object(s) were still owned by the context when it was reset", \
          now_.leaked - (before).leaked);                                   \
    CHECK(now_.bad_calls == (before).bad_calls,                             \
          "the fake refused %d invalid call(s)",                            \
          now_.bad_calls - (before).bad_calls);                             \
  } while (0)

/* The latest launch's field `key` ("shared", "p0", ...), or false. */
static bool launch_u64(const char *key, uint64_t *out) {
  const char *rec = g_fake.last_launch();
  char pat[32];
  snprintf(pat, sizeof pat, " %s=", key);
  const char *p = strstr(rec, pat);
  if (!p) return false;
  *out = strtoull(p + strlen(pat), NULL, 0);
  return true;
}

static bool launch_dim(const char *key, rk_dim3_t *out) {
  const char *rec = g_fake.last_launch();
  char pat[32];
  snprintf(pat, sizeof pat, " %s=", key);
  const char *p = strstr(rec, pat);
  return p &&
         sscanf(p + strlen(pat), "%u,%u,%u", &out->x, &out->y, &out->z) == 3;
}

static bool launch_is(const char *name) {
  const char *rec = g_fake.last_launch();
  size_t n = strlen(name);
  return strncmp(rec, "name=", 5) == 0 && strncmp(rec + 5, name, n) == 0 &&
         rec[5 + n] == ' ';
}

/* The latest launch was `name` with this geometry and these parameter
 * values (their first 8 bytes). */
static void check_launch(const char *name, rk_dim3_t grid, rk_dim3_t block,
                         uint64_t shared, size_t nparams,
                         const uint64_t *values) {
  const char *rec = g_fake.last_launch();
  CHECK(launch_is(name), "the last launch is not %s: %s", name, rec);
  rk_dim3_t g = {0, 0, 0}, b = {0, 0, 0};
  uint64_t sh = 99, np = 99;
  CHECK(
      launch_dim("grid", &g) && g.x == grid.x && g.y == grid.y && g.z == grid.z,
      "grid: %s", rec);
  CHECK(launch_dim("block", &b) && b.x == block.x && b.y == block.y &&
            b.z == block.z,
        "block: %s", rec);
  CHECK(launch_u64("shared", &sh) && sh == shared, "shared: %s", rec);
  CHECK(launch_u64("nparams", &np) && np == nparams, "nparams: %s", rec);
  for (size_t i = 0; values && i < nparams; ++i) {
    char key[24];
    snprintf(key, sizeof key, "p%zu", i);
    uint64_t v = 0;
    const bool found = launch_u64(key, &v);
    CHECK(found && v == values[i], "parameter %zu is 0x%llx, want 0x%llx: %s",
          i, (unsigned long long)v, (unsigned long long)values[i], rec);
  }
}

/* The fake's answer to one entry point, until fail_none(). */
static void fail(const char *spec) { setenv("RK_FAKE_CUDA_FAIL", spec, 1); }
static void fail_none(void) { unsetenv("RK_FAKE_CUDA_FAIL"); }

static const char *alloc_entry(void) {
  return g_pools ? "cuMemAllocAsync" : "cuMemAlloc";
}

/* ---- Sources ------------------------------------------------------------ */

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "typedef struct { int count; } state_t;\n"
    "typedef struct { int a; float b; } pair_t;\n"
    "RK_KERNEL void scale(int n, float a, float *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] = a * x[i];\n"
    "}\n"
    "RK_KERNEL void take(pair_t p, long long w, double d, int *out) {\n"
    "  out[0] = p.a + (int)p.b + (int)w + (int)d;\n"
    "}\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n"
    "RK_HANDLER int counted(const req_t *in, resp_t *out, state_t *s) {\n"
    "  s->count++;\n"
    "  out->v = s->count;\n"
    "  return in->v < 0 ? 7 : 0;\n"
    "}\n";

/* `q` is undeclared on line 4. */
static const char kBadSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void k(int *p) {\n"
    "  p[0] = 1;\n"
    "  p[0] = q;\n"
    "}\n";

/* A handler that sends (rk_send) and one that could receive. */
static const char kK2KSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER int fwd(const req_t *in, resp_t *out) {\n"
    "  req_t m;\n"
    "  m.v = in->v;\n"
    "  out->v = rk_send(0, &m);\n"
    "  return 0;\n"
    "}\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

/* ---- Helpers ------------------------------------------------------------ */

static rk_backend_t *open_cuda(void) {
  rk_backend_t *be = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CUDA, &be))) return NULL;
  if (!CHECK(rk_backend_device_count(be) == 1, "%d devices",
             rk_backend_device_count(be))) {
    rk_backend_destroy(be);
    return NULL;
  }
  return be;
}

static rk_context_t *create_context(rk_backend_t *be) {
  rk_context_t *ctx = NULL;
  if (!CHECK_OK(rk_backend_create_context(be, 0, &ctx))) return NULL;
  return ctx;
}

static void *host_of(rk_devptr_t p) { return (void *)(uintptr_t)p; }

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed + i * 7u);
}

/* Compiles kSource; NULL with g_no_nvrtc set when NVRTC is missing. */
static rk_module_t *compile(rk_context_t *ctx, const char *name) {
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = name;
  rk_module_t *mod = NULL;
  rk_test_clear_error();
  rk_status_t s = rk_context_compile(ctx, kSource, &o, &mod);
  if (s == RK_ERR_UNAVAILABLE && rk_test_contains(rk_last_error(), "NVRTC")) {
    snprintf(g_no_nvrtc, sizeof g_no_nvrtc, "%s", rk_last_error());
    return NULL;
  }
  if (!CHECK_OK(s)) return NULL;
  return mod;
}

/* ---- 1. The device ------------------------------------------------------ */

static void test_device(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  CHECK(rk_backend_kind(be) == RK_BACKEND_CUDA, "kind %d",
        (int)rk_backend_kind(be));
  rk_device_info_t info;
  if (CHECK_OK(rk_backend_device_info(be, 0, &info))) {
    CHECK(strcmp(info.name, "rk fake GPU") == 0, "name \"%s\"", info.name);
    CHECK(strcmp(info.vendor, "NVIDIA") == 0, "vendor \"%s\"", info.vendor);
    CHECK(info.backend == RK_BACKEND_CUDA, "backend %d", (int)info.backend);
    CHECK(info.compute_units == 132, "compute_units %u", info.compute_units);
    CHECK(info.memory_bytes == 1ull << 30, "memory_bytes %llu",
          (unsigned long long)info.memory_bytes);
    CHECK(info.max_threads_per_block == 1024, "max_threads_per_block %u",
          info.max_threads_per_block);
    CHECK(info.shared_mem_per_block == 48 * 1024, "shared_mem_per_block %llu",
          (unsigned long long)info.shared_mem_per_block);
    const uint32_t want = RK_CAP_PERSISTENT_KERNELS |
                          RK_CAP_MAPPED_HOST_MEMORY |
                          RK_CAP_COOPERATIVE_LAUNCH | RK_CAP_ATOMIC64 |
                          RK_CAP_F64 | RK_CAP_INT64 | RK_CAP_MANAGED_CONCURRENT;
    CHECK((info.caps & want) == want, "caps 0x%x lack 0x%x", info.caps,
          want & ~info.caps);
    CHECK(strcmp(info.arch, "sm_90") == 0, "arch '%s'", info.arch);
    CHECK(!(info.caps & RK_CAP_SOFTWARE), "caps 0x%x say software", info.caps);
  }
  CHECK_STATUS(rk_backend_device_info(be, 1, &info), RK_ERR_OUT_OF_RANGE);
  rk_context_t *ctx = NULL;
  CHECK_STATUS(rk_backend_create_context(be, 1, &ctx), RK_ERR_OUT_OF_RANGE);
  CHECK_OK(rk_backend_destroy(be));

  /* Auto-selection takes CUDA first when it has a device. */
  unsetenv("RK_BACKEND");
  be = NULL;
  if (CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &be)))
    CHECK(rk_backend_kind(be) == RK_BACKEND_CUDA, "auto picked %s",
          rk_backend_name(be));
  rk_backend_destroy(be);

  /* Without mapped host memory, or below compute capability 7.0, there are
   * no persistent kernels. */
  static const struct {
    const char *attrs;
    uint32_t absent;
  } kCases[] = {
      {"19:0", RK_CAP_MAPPED_HOST_MEMORY | RK_CAP_PERSISTENT_KERNELS},
      {"41:0", RK_CAP_MAPPED_HOST_MEMORY | RK_CAP_PERSISTENT_KERNELS},
      {"75:6", RK_CAP_PERSISTENT_KERNELS},
      {"95:0", RK_CAP_COOPERATIVE_LAUNCH},
  };
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    setenv("RK_FAKE_CUDA_ATTR", kCases[i].attrs, 1);
    be = open_cuda();
    if (be && CHECK_OK(rk_backend_device_info(be, 0, &info)))
      CHECK(!(info.caps & kCases[i].absent) && (info.caps & RK_CAP_ATOMIC64),
            "attributes %s: caps 0x%x", kCases[i].attrs, info.caps);
    rk_backend_destroy(be);
  }
  unsetenv("RK_FAKE_CUDA_ATTR");

  /* The fake without devices: the backend opens with none. */
  setenv("RK_FAKE_CUDA_DEVICES", "0", 1);
  be = NULL;
  if (CHECK_OK(rk_backend_open(RK_BACKEND_CUDA, &be))) {
    CHECK(rk_backend_device_count(be) == 0, "%d devices",
          rk_backend_device_count(be));
    CHECK_STATUS(rk_backend_create_context(be, 0, &ctx), RK_ERR_OUT_OF_RANGE);
    rk_backend_destroy(be);
  }
  setenv("RK_FAKE_CUDA_DEVICES", "1", 1);
}

/* ---- 2. Contexts and streams -------------------------------------------- */

typedef struct thread_job {
  rk_context_t *ctx;
  rk_status_t status;
  char error[512];
  int value;
} thread_job_t;

/* Memory work from a thread on which no context was ever current. */
static void *other_thread(void *arg) {
  thread_job_t *job = arg;
  rk_devptr_t p = 0;
  int v = 1234, back = 0;
  job->status = rk_context_allocate(job->ctx, sizeof v, &p);
  if (job->status == RK_OK)
    job->status = rk_context_copy_to_device(job->ctx, p, &v, sizeof v);
  if (job->status == RK_OK)
    job->status = rk_context_copy_to_host(job->ctx, &back, p, sizeof back);
  if (job->status == RK_OK) job->status = rk_context_free(job->ctx, p);
  if (job->status == RK_OK) job->status = rk_context_synchronize(job->ctx);
  snprintf(job->error, sizeof job->error, "%s", rk_last_error());
  job->value = back;
  return NULL;
}

static void test_contexts(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  const int resets = stat_of("resets");
  rk_context_t *a = create_context(be);
  if (!a) {
    rk_backend_destroy(be);
    return;
  }
  CHECK(stat_of("retained") == before.retained + 1, "retained %d after one",
        stat_of("retained"));
  /* The default stream and the memory stream. */
  const int streams = stat_of("streams_live");
  CHECK(streams == before.streams + 2, "%d streams for a context",
        streams - before.streams);
  rk_context_t *b = create_context(be);
  CHECK(stat_of("retained") == before.retained + 2, "retained %d after two",
        stat_of("retained"));
  CHECK_OK(rk_context_destroy(b));
  CHECK(stat_of("retained") == before.retained + 1,
        "retained %d after one "
        "of two was destroyed",
        stat_of("retained"));

  rk_stream_t *s1 = NULL, *s2 = NULL;
  CHECK_OK(rk_context_create_stream(a, &s1));
  CHECK_OK(rk_context_create_stream(a, &s2));
  CHECK(stat_of("streams_live") == streams + 2, "%d streams with two more",
        stat_of("streams_live"));
  CHECK_OK(rk_stream_synchronize(s1));
  CHECK_OK(rk_stream_destroy(s1));
  CHECK(stat_of("streams_live") == streams + 1, "%d streams after a destroy",
        stat_of("streams_live"));
  CHECK_OK(rk_context_synchronize(a));

  /* A thread with no current context: the backend makes it current. */
  thread_job_t job = {a, RK_ERR_INTERNAL, "", 0};
  pthread_t t;
  pthread_create(&t, NULL, other_thread, &job);
  pthread_join(t, NULL);
  CHECK(job.status == RK_OK && job.value == 1234,
        "from another thread: %s (%s), value %d", rk_status_name(job.status),
        job.error, job.value);

  /* A backend with a live context stays. */
  CHECK_STATUS(rk_backend_destroy(be), RK_ERR_INVALID_STATE);
  /* s2 is still open: destroying the context destroys it. */
  CHECK_OK(rk_context_destroy(a));
  CHECK_BALANCED(before);
  if (before.retained == 0)
    CHECK(stat_of("resets") == resets + 1,
          "the primary context was not "
          "released to 0 (%d resets)",
          stat_of("resets") - resets);
  CHECK_OK(rk_backend_destroy(be));
}

/* ---- 3. Memory ---------------------------------------------------------- */

static void test_memory_once(void) {
  printf("memory, %s\n",
         g_pools ? "stream-ordered allocator" : "cuMemAlloc/cuMemFree");
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  enum { kSize = 4096 };
  rk_devptr_t a = 0, b = 0, c = 0;
  CHECK_OK(rk_context_allocate(ctx, kSize, &a));
  CHECK_OK(rk_context_allocate(ctx, kSize, &b));
  CHECK_OK(rk_context_allocate(ctx, 100, &c));
  CHECK(a && b && c && a % 64 == 0 && b % 64 == 0 && c % 64 == 0,
        "allocations 0x%llx 0x%llx 0x%llx", (unsigned long long)a,
        (unsigned long long)b, (unsigned long long)c);
  CHECK(stat_of("allocs_live") == before.allocs + 3, "%d allocations live",
        stat_of("allocs_live") - before.allocs);

  unsigned char src[512], dst[512];
  fill(src, sizeof src, 1);
  /* Synchronous copies at offsets: the bytes land in the device memory
   * (host memory here) and come back. */
  int copies = stat_of("copies");
  if (CHECK_OK(rk_context_copy_to_device(ctx, a + 100, src, 256)))
    CHECK(memcmp(host_of(a + 100), src, 256) == 0, "to device at +100");
  memset(dst, 0, sizeof dst);
  if (CHECK_OK(rk_context_copy_to_host(ctx, dst, a + 100, 256)))
    CHECK(memcmp(dst, src, 256) == 0, "to host from +100");
  if (CHECK_OK(rk_context_copy_device_to_device(ctx, b + 8, a + 100, 256)))
    CHECK(memcmp(host_of(b + 8), src, 256) == 0, "device to device");
  /* The last byte of an allocation. */
  CHECK_OK(rk_context_copy_to_device(ctx, c + 99, src, 1));
  CHECK(stat_of("copies") == copies + 4, "%d driver copies for 4",
        stat_of("copies") - copies);

  /* Stream copies, done once the stream is synchronized. */
  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(ctx, &st))) {
    unsigned char src2[512];
    fill(src2, sizeof src2, 99);
    memset(dst, 0, sizeof dst);
    /* To and from ordinary host memory through a pinned staging block
     * (a driver's copy to pageable memory would wait for the stream): the
     * data reaches the caller's memory at the synchronization, and the
     * block is made once and reused. */
    const int pinned = stat_of("host_allocs_live");
    for (int round = 0; round < 2; ++round) {
      CHECK_OK(rk_stream_copy_to_device(st, b + 1024, src2, sizeof src2));
      CHECK_OK(rk_stream_copy_device_to_device(st, a + 2048, b + 1024, 512));
      CHECK_OK(rk_stream_copy_to_host(st, dst, a + 2048, sizeof dst));
      CHECK(round == 1 || dst[0] == 0,
            "a staged copy wrote the caller's memory before the "
            "synchronization");
      if (CHECK_OK(rk_stream_synchronize(st)))
        CHECK(memcmp(dst, src2, sizeof dst) == 0, "stream copies");
      if (round == 0) src2[0] ^= 0xffu;
    }
    /* One block for each of the two staged copies outstanding at once. */
    CHECK(stat_of("host_allocs_live") == pinned + 2,
          "%d staging blocks for two copies at a time",
          stat_of("host_allocs_live") - pinned);
    /* More copies outstanding than a stream stages at once (64), the
     * last two to the same memory: every one arrives, the later wins. */
    enum { kMany = 70 };
    static unsigned char many[kMany][16];
    memset(many, 0, sizeof many);
    for (int i = 0; i < kMany; ++i)
      CHECK_OK(rk_stream_copy_to_host(st, many[i < kMany - 1 ? i : i - 1],
                                      b + 1024 + (size_t)i, 16));
    CHECK_OK(rk_context_synchronize(ctx));
    int wrong = 0;
    for (int i = 0; i < kMany - 1; ++i)
      wrong += memcmp(many[i], src2 + (i < kMany - 2 ? i : i + 1), 16) != 0;
    CHECK(wrong == 0, "%d of %d staged copies to the host wrong", wrong,
          kMany - 1);
    /* Out of range on a stream: refused when queued. */
    copies = stat_of("copies");
    CHECK_STATUS(rk_stream_copy_to_device(st, a + kSize - 8, src2, 16),
                 RK_ERR_OUT_OF_RANGE);
    CHECK(stat_of("copies") == copies,
          "a refused stream copy reached the "
          "driver");
    CHECK_OK(rk_stream_destroy(st));
  }

  /* Refused before the driver sees them. */
  copies = stat_of("copies");
  memcpy(dst, src, sizeof dst);
  CHECK_STATUS(rk_context_copy_to_device(ctx, a + kSize - 100, src, 200),
               RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("run past the end");
  CHECK_STATUS(rk_context_copy_to_host(ctx, dst, c + 50, 51),
               RK_ERR_OUT_OF_RANGE);
  CHECK_STATUS(rk_context_copy_device_to_device(ctx, a, b + 1, kSize),
               RK_ERR_OUT_OF_RANGE);
  CHECK_STATUS(rk_context_copy_to_host(ctx, dst, a - 1, 1),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_to_device(ctx, 0x10, src, 1),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_to_device(ctx, a, src, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK(memcmp(dst, src, sizeof dst) == 0, "a refused copy wrote the host");

  /* Interior and foreign pointers are not freed. */
  const int allocs = stat_of("allocs_live");
  CHECK_STATUS(rk_context_free(ctx, a + 64), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("inside an allocation");
  CHECK(stat_of("allocs_live") == allocs, "an interior free freed");
  /* Freed: gone from the driver, and refused afterwards. */
  CHECK_OK(rk_context_free(ctx, b));
  CHECK(stat_of("allocs_live") == allocs - 1, "free left %d allocations",
        stat_of("allocs_live"));
  CHECK_STATUS(rk_context_copy_to_device(ctx, b, src, 16),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_free(ctx, b), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("not a live allocation");
  CHECK(stat_of("copies") == copies, "%d refused copies reached the driver",
        stat_of("copies") - copies);

  /* Sizes the device cannot have are refused without asking it. */
  const int calls = stat_of("calls");
  rk_devptr_t huge = 0;
  CHECK_STATUS(rk_context_allocate(ctx, (size_t)1 << 40, &huge),
               RK_ERR_OUT_OF_MEMORY);
  CHECK_STATUS(rk_context_allocate(ctx, 0, &huge), RK_ERR_INVALID_ARGUMENT);
  CHECK(stat_of("calls") == calls, "the driver was asked");

  /* a and c are still live: the context frees them. */
  CHECK_OK(rk_context_destroy(ctx));
  CHECK_BALANCED(before);
  CHECK_OK(rk_backend_destroy(be));
}

static void test_memory(void) {
  const bool pools = g_pools;
  for (int round = 0; round < 2; ++round) {
    g_pools = round == 0 ? pools : !pools;
    setenv("RK_FAKE_CUDA_POOLS", g_pools ? "1" : "0", 1);
    test_memory_once();
  }
  g_pools = pools;
  setenv("RK_FAKE_CUDA_POOLS", g_pools ? "1" : "0", 1);
}

/* ---- 4. Driver errors --------------------------------------------------- */

/* Every entry point on a lost context answers RK_ERR_DEVICE_LOST without
 * calling the driver. */
static void check_lost(rk_context_t *ctx, rk_devptr_t live) {
  const int calls = stat_of("calls");
  rk_devptr_t p = 0;
  int v = 1;
  rk_stream_t *st = NULL;
  rk_module_t *mod = NULL;
  CHECK_STATUS(rk_context_allocate(ctx, 64, &p), RK_ERR_DEVICE_LOST);
  CHECK_ERROR_HAS("lost");
  CHECK_ERROR_HAS("destroy it");
  CHECK_STATUS(rk_context_copy_to_device(ctx, live, &v, sizeof v),
               RK_ERR_DEVICE_LOST);
  CHECK_STATUS(rk_context_copy_to_host(ctx, &v, live, sizeof v),
               RK_ERR_DEVICE_LOST);
  CHECK_STATUS(rk_context_synchronize(ctx), RK_ERR_DEVICE_LOST);
  CHECK_ERROR_HAS("destroy it");
  CHECK_STATUS(rk_context_create_stream(ctx, &st), RK_ERR_DEVICE_LOST);
  CHECK_STATUS(rk_context_compile(ctx, kSource, NULL, &mod),
               RK_ERR_DEVICE_LOST);
  CHECK(stat_of("calls") == calls, "%d driver call(s) on a lost context",
        stat_of("calls") - calls);
}

static void test_errors_once(void) {
  printf("errors, %s\n",
         g_pools ? "stream-ordered allocator" : "cuMemAlloc/cuMemFree");
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  rk_devptr_t p = 0;
  CHECK_OK(rk_context_allocate(ctx, 256, &p));

  /* Out of device memory. */
  char spec[64];
  snprintf(spec, sizeof spec, "%s:2", alloc_entry());
  fail(spec);
  const int allocs = stat_of("allocs_live");
  rk_devptr_t q = 0;
  CHECK_STATUS(rk_context_allocate(ctx, 64, &q), RK_ERR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("CUDA_ERROR_OUT_OF_MEMORY");
  CHECK_ERROR_HAS("64 bytes");
  CHECK(q == 0, "a failed allocation set the pointer");
  CHECK(stat_of("allocs_live") == allocs, "a failed allocation allocated");
  fail_none();
  if (CHECK_OK(rk_context_allocate(ctx, 64, &q)))
    CHECK_OK(rk_context_free(ctx, q));

  /* A copy the driver refuses. */
  int v = 7;
  fail("cuMemcpyHtoDAsync:1");
  CHECK_STATUS(rk_context_copy_to_device(ctx, p, &v, sizeof v),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("CUDA_ERROR_INVALID_VALUE");
  CHECK_ERROR_HAS("cuMemcpyHtoDAsync");
  fail_none();
  CHECK_OK(rk_context_copy_to_device(ctx, p, &v, sizeof v));

  /* Pinned memory for actor rings that the driver cannot give. */
  rk_actor_t *actor = NULL;
  fail("cuMemHostAlloc:2");
  rk_status_t s = rk_actor_launch(ctx, kSource, "add_one", NULL, &actor);
  fail_none();
  if (s != RK_ERR_UNAVAILABLE) {
    CHECK(s == RK_ERR_OUT_OF_MEMORY,
          "actor launch without pinned memory: "
          "%s: %s",
          rk_status_name(s), rk_last_error());
    CHECK_ERROR_HAS("pinned");
    CHECK(actor == NULL, "a failed launch set the actor");
  }

  /* A fault: the context is lost, and says so, until it is destroyed. */
  fail("cuStreamSynchronize:700");
  CHECK_STATUS(rk_context_synchronize(ctx), RK_ERR_DEVICE_LOST);
  CHECK_ERROR_HAS("CUDA_ERROR_ILLEGAL_ADDRESS");
  fail_none();
  CHECK(stat_of("sticky") == 700, "the fake's context is not faulted");
  check_lost(ctx, p);
  /* Freeing on a lost context is allowed (there is nothing left to free). */
  CHECK_OK(rk_context_free(ctx, p));
  CHECK_OK(rk_context_destroy(ctx));
  CHECK(stat_of("retained") == before.retained,
        "a lost context was not released");
  if (before.retained == 0)
    CHECK(stat_of("sticky") == 0, "the fake's context was not reset");

  /* A new context works. */
  ctx = create_context(be);
  if (ctx) {
    int back = 0;
    v = 42;
    if (CHECK_OK(rk_context_allocate(ctx, sizeof v, &p)) &&
        CHECK_OK(rk_context_copy_to_device(ctx, p, &v, sizeof v)) &&
        CHECK_OK(rk_context_copy_to_host(ctx, &back, p, sizeof back)))
      CHECK(back == 42, "read back %d", back);
    CHECK_OK(rk_context_destroy(ctx));
  }
  const counts_t after = counts();
  CHECK(after.bad_calls == before.bad_calls, "%d invalid driver calls",
        after.bad_calls - before.bad_calls);
  CHECK(after.retained == before.retained, "retained %d -> %d", before.retained,
        after.retained);
  CHECK_OK(rk_backend_destroy(be));
}

static void test_errors(void) {
  const bool pools = g_pools;
  for (int round = 0; round < 2; ++round) {
    g_pools = round == 0 ? pools : !pools;
    setenv("RK_FAKE_CUDA_POOLS", g_pools ? "1" : "0", 1);
    test_errors_once();
  }
  g_pools = pools;
  setenv("RK_FAKE_CUDA_POOLS", g_pools ? "1" : "0", 1);
}

/* ---- 5. Modules --------------------------------------------------------- */

static void check_params(rk_module_t *mod, const char *name, size_t n,
                         const rk_arg_kind_t *kinds, const size_t *sizes) {
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, name, &fn))) return;
  CHECK(strcmp(rk_function_name(fn), name) == 0, "name %s",
        rk_function_name(fn));
  CHECK(rk_function_param_count(fn) == n, "%s: %zu parameters", name,
        rk_function_param_count(fn));
  for (size_t i = 0; i < n && i < rk_function_param_count(fn); ++i) {
    rk_arg_kind_t k = 0;
    size_t size = 0;
    CHECK_OK(rk_function_param(fn, i, &k, &size));
    CHECK(k == kinds[i] && size == sizes[i], "%s parameter %zu: %s, %zu bytes",
          name, i, rk_arg_kind_name(k), size);
  }
}

static void test_modules(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  rk_module_t *m1 = compile(ctx, "kernels.c");
  if (!m1) {
    rk_context_destroy(ctx);
    rk_backend_destroy(be);
    return;
  }
  CHECK(!rk_module_cache_hit(m1), "the first build was a cache hit");
  CHECK(stat_of("modules_live") == before.modules + 1, "%d modules loaded",
        stat_of("modules_live") - before.modules);
  const rk_arg_kind_t k_scale[] = {RK_ARG_I32, RK_ARG_F32, RK_ARG_PTR};
  const size_t s_scale[] = {4, 4, 8};
  check_params(m1, "scale", 3, k_scale, s_scale);
  const rk_arg_kind_t k_take[] = {RK_ARG_STRUCT, RK_ARG_I64, RK_ARG_F64,
                                  RK_ARG_PTR};
  const size_t s_take[] = {8, 8, 8, 8};
  check_params(m1, "take", 4, k_take, s_take);
  /* A handler is a kernel too (traditional actors launch it). */
  const rk_arg_kind_t k_handler[] = {RK_ARG_PTR, RK_ARG_PTR};
  const size_t s_handler[] = {8, 8};
  check_params(m1, "add_one", 2, k_handler, s_handler);
  rk_function_t *fn = NULL;
  CHECK_STATUS(rk_module_get_function(m1, "nope", &fn), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("scale");

  /* The second build of the same source comes from the disk cache. */
  rk_module_t *m2 = compile(ctx, "kernels.c");
  if (m2) {
    CHECK(rk_module_cache_hit(m2), "the second build was not a cache hit");
    CHECK_OK(rk_module_destroy(m2));
  }
  CHECK(stat_of("modules_live") == before.modules + 1, "%d modules loaded",
        stat_of("modules_live") - before.modules);

  /* A transpiler error names the user's line. */
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "bad.c";
  rk_module_t *bad = NULL;
  CHECK_STATUS(rk_context_compile(ctx, kBadSource, &o, &bad), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("bad.c:4:");
  CHECK_ERROR_HAS("'q'");

  /* The driver refusing the image, or a kernel in it: nothing is left
   * loaded. */
  fail("cuModuleLoadData:200");
  CHECK_STATUS(rk_context_compile(ctx, kSource, NULL, &bad), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("CUDA_ERROR_INVALID_IMAGE");
  CHECK_ERROR_HAS("CUBIN");
  fail("cuModuleGetFunction:500");
  CHECK_STATUS(rk_context_compile(ctx, kSource, NULL, &bad), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("CUDA_ERROR_NOT_FOUND");
  fail_none();
  CHECK(stat_of("modules_live") == before.modules + 1,
        "a failed compile left %d modules loaded",
        stat_of("modules_live") - before.modules - 1);

  CHECK_OK(rk_module_destroy(m1));
  CHECK(stat_of("modules_live") == before.modules, "destroy left %d modules",
        stat_of("modules_live") - before.modules);
  CHECK_OK(rk_context_destroy(ctx));
  CHECK_BALANCED(before);
  CHECK_OK(rk_backend_destroy(be));

  /* Compute capability 9.9, which NVRTC does not know: PTX for the newest
   * architecture below it, which the fake reads as text. */
  setenv("RK_FAKE_CUDA_ATTR", "76:9", 1);
  be = open_cuda();
  unsetenv("RK_FAKE_CUDA_ATTR");
  if (!be) return;
  ctx = create_context(be);
  rk_module_t *ptx = ctx ? compile(ctx, "ptx.c") : NULL;
  if (ptx) {
    check_params(ptx, "scale", 3, k_scale, s_scale);
    check_params(ptx, "take", 4, k_take, s_take);
    rk_devptr_t x = 0;
    if (CHECK_OK(rk_context_allocate(ctx, 64, &x)) &&
        CHECK_OK(rk_module_get_function(ptx, "scale", &fn))) {
      rk_arg_t args[] = {rk_arg_i32(16), rk_arg_f32(0.5f), rk_arg_ptr(x)};
      if (CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(16, 1, 1),
                                      0, NULL, args, 3))) {
        const uint64_t want[] = {16, 0x3f000000u, x};
        check_launch("scale", rk_dim3(1, 1, 1), rk_dim3(16, 1, 1), 0, 3, want);
      }
    }
  }
  rk_context_destroy(ctx);
  rk_backend_destroy(be);
}

/* ---- 6. Launches -------------------------------------------------------- */

static void test_launch(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  rk_module_t *mod = ctx ? compile(ctx, "kernels.c") : NULL;
  rk_function_t *scale = NULL, *take = NULL;
  rk_devptr_t x = 0, y = 0;
  if (!mod || !CHECK_OK(rk_module_get_function(mod, "scale", &scale)) ||
      !CHECK_OK(rk_module_get_function(mod, "take", &take)) ||
      !CHECK_OK(rk_context_allocate(ctx, 4000, &x)) ||
      !CHECK_OK(rk_context_allocate(ctx, 64, &y))) {
    rk_context_destroy(ctx);
    rk_backend_destroy(be);
    return;
  }
  int launches = stat_of("launches");
  rk_arg_t args[] = {rk_arg_i32(1000), rk_arg_f32(2.0f), rk_arg_ptr(x)};
  if (CHECK_OK(rk_function_launch(scale, rk_dim3(4, 1, 1), rk_dim3(256, 1, 1),
                                  0, NULL, args, 3))) {
    const uint64_t want[] = {1000, 0x40000000u, x};
    check_launch("scale", rk_dim3(4, 1, 1), rk_dim3(256, 1, 1), 0, 3, want);
  }
  CHECK_OK(rk_context_synchronize(ctx));

  /* Three dimensions, dynamic shared memory, a stream, a pointer inside an
   * allocation. */
  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(ctx, &st))) {
    rk_arg_t a2[] = {rk_arg_i32(-5), rk_arg_f32(-1.5f), rk_arg_ptr(x + 400)};
    if (CHECK_OK(rk_function_launch(scale, rk_dim3(2, 3, 4), rk_dim3(8, 4, 2),
                                    1024, st, a2, 3))) {
      const uint64_t want[] = {0xfffffffbu, 0xbfc00000u, x + 400};
      check_launch("scale", rk_dim3(2, 3, 4), rk_dim3(8, 4, 2), 1024, 3, want);
    }
    CHECK_OK(rk_stream_synchronize(st));
    CHECK_OK(rk_stream_destroy(st));
  }

  /* A struct, a 64-bit integer and a double by value. */
  struct {
    int32_t a;
    float b;
  } pair = {3, 4.0f};
  rk_arg_t a3[] = {rk_arg_struct(&pair, sizeof pair), rk_arg_i64(-2),
                   rk_arg_f64(1.0), rk_arg_ptr(y)};
  if (CHECK_OK(rk_function_launch(take, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, a3, 4))) {
    const uint64_t want[] = {0x4080000000000003ull, 0xfffffffffffffffeull,
                             0x3ff0000000000000ull, y};
    check_launch("take", rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, 4, want);
  }
  CHECK(stat_of("launches") == launches + 3, "%d launches for 3",
        stat_of("launches") - launches);

  /* Refused before the driver sees them. */
  launches = stat_of("launches");
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1025, 1, 1),
                                  0, NULL, args, 3),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("1024");
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 65), 0,
                                  NULL, args, 3),
               RK_ERR_LAUNCH);
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 65536, 1), rk_dim3(1, 1, 1),
                                  0, NULL, args, 3),
               RK_ERR_LAUNCH);
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1),
                                  48 * 1024 + 1, NULL, args, 3),
               RK_ERR_INVALID_ARGUMENT);
  rk_arg_t wrong[] = {rk_arg_f32(1.0f), rk_arg_f32(2.0f), rk_arg_ptr(x)};
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, wrong, 3),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, args, 2),
               RK_ERR_INVALID_ARGUMENT);
  rk_devptr_t gone = 0;
  if (CHECK_OK(rk_context_allocate(ctx, 64, &gone)) &&
      CHECK_OK(rk_context_free(ctx, gone))) {
    rk_arg_t freed[] = {rk_arg_i32(1), rk_arg_f32(1.0f), rk_arg_ptr(gone)};
    CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1),
                                    0, NULL, freed, 3),
                 RK_ERR_INVALID_ARGUMENT);
  }
  CHECK(stat_of("launches") == launches,
        "%d refused launches reached the "
        "driver",
        stat_of("launches") - launches);

  /* A kernel whose registers allow fewer threads than the device. */
  setenv("RK_FAKE_CUDA_FUNC_ATTR", "0:256", 1);
  rk_module_t *narrow = compile(ctx, "kernels.c");
  unsetenv("RK_FAKE_CUDA_FUNC_ATTR");
  rk_function_t *nscale = NULL;
  if (narrow && CHECK_OK(rk_module_get_function(narrow, "scale", &nscale))) {
    CHECK_STATUS(rk_function_launch(nscale, rk_dim3(1, 1, 1),
                                    rk_dim3(512, 1, 1), 0, NULL, args, 3),
                 RK_ERR_LAUNCH);
    CHECK_ERROR_HAS("at most 256");
    CHECK(stat_of("launches") == launches, "the driver saw the launch");
    CHECK_OK(rk_function_launch(nscale, rk_dim3(1, 1, 1), rk_dim3(256, 1, 1), 0,
                                NULL, args, 3));
    CHECK_OK(rk_module_destroy(narrow));
  }

  /* A kernel that faults: the context is lost until destroyed. */
  fail("cuLaunchKernel:700");
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, args, 3),
               RK_ERR_DEVICE_LOST);
  CHECK_ERROR_HAS("CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK_ERROR_HAS("scale");
  fail_none();
  launches = stat_of("launches");
  const int calls = stat_of("calls");
  CHECK_STATUS(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, args, 3),
               RK_ERR_DEVICE_LOST);
  CHECK_ERROR_HAS("destroy it");
  CHECK(stat_of("launches") == launches && stat_of("calls") == calls,
        "a launch on a lost context reached the driver");
  check_lost(ctx, x);
  CHECK_OK(rk_context_destroy(ctx));
  CHECK(stat_of("retained") == before.retained, "retained %d",
        stat_of("retained"));

  /* And a new context launches again. */
  ctx = create_context(be);
  mod = ctx ? compile(ctx, "kernels.c") : NULL;
  if (mod && CHECK_OK(rk_module_get_function(mod, "scale", &scale)) &&
      CHECK_OK(rk_context_allocate(ctx, 64, &x))) {
    rk_arg_t a4[] = {rk_arg_i32(1), rk_arg_f32(1.0f), rk_arg_ptr(x)};
    CHECK_OK(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                NULL, a4, 3));
    CHECK_OK(rk_context_synchronize(ctx));
  }
  rk_context_destroy(ctx);
  CHECK(stat_of("bad_calls") == before.bad_calls, "%d invalid driver calls",
        stat_of("bad_calls") - before.bad_calls);
  CHECK(stat_of("retained") == before.retained, "retained %d",
        stat_of("retained"));
  CHECK_OK(rk_backend_destroy(be));
}

/* ---- 7. Actors ---------------------------------------------------------- */

typedef struct {
  int32_t v;
} msg_t;
typedef struct {
  int32_t count;
} state_t;

/* The launch hook playing the device: the handler add_one as a kernel of
 * its own (traditional mode: in and out are device pointers), and the
 * persistent kernel rk_actor_add_one as a thread serving the rings at the
 * addresses it was launched with. */
typedef struct device_play {
  bool started;
  pthread_t thread;
  rk_abi_control_t *control;
  rk__actor_loop_t loop;
  int handled;  /* traditional launches answered */
  void *stream; /* the persistent kernel's, busy while it runs */
  int launches; /* of the persistent kernel: 1, then one per relaunch */
  /* A kernel that does not step aside when asked to park: it waits until
   * the request is withdrawn and goes on. */
  bool stubborn; /* atomic */
  /* Keep the stream of a launch of `scale` busy (a user's kernel that
   * runs on) until the test releases `held`. */
  bool hold_plain;
  void *held;
  /* After answering this many requests the played kernel stalls until
   * the host asks it to stop or park (once; 0: never). */
  int stall_after;
  int answered;         /* requests the persistent kernel answered */
  int stalled;          /* atomic: it is stalling now */
  uint64_t queued_park; /* requests left in the ring by the last park */
} device_play_t;

static uint64_t param_u64(void **params, int i) {
  uint64_t v;
  memcpy(&v, params[i], sizeof v);
  return v;
}

static uint32_t play_batch(void *ctx, rk__ring_end_t *in, rk__ring_end_t *out,
                           uint32_t n) {
  device_play_t *d = ctx;
  uint32_t done = 0;
  for (; done < n; ++done) {
    unsigned char *dst = rk__ring_reserve_at(out, done);
    if (!dst) break;
    const unsigned char *src = rk__ring_peek(in, done);
    if (d->stall_after && d->answered == d->stall_after) {
      __atomic_store_n(&d->stalled, 1, __ATOMIC_RELEASE);
      while (!__atomic_load_n(&d->control->terminate, __ATOMIC_ACQUIRE))
        usleep(100);
      d->stall_after = 0;
      break;
    }
    msg_t m;
    memcpy(&m, src + RK_ABI_MSG_HEADER, sizeof m);
    m.v += 1;
    d->answered++;
    memcpy(dst + RK_ABI_MSG_HEADER, &m, sizeof m);
    rk__actor_respond(d->control, (const rk_abi_msg_t *)src,
                      (rk_abi_msg_t *)dst, 0);
  }
  if (done) rk__actor_commit(d->control, in, out, done, 0, 0);
  return done;
}

static void *play_main(void *arg) {
  device_play_t *d = arg;
  for (;;) {
    rk__actor_loop_run(&d->loop);
    if (__atomic_load_n(&d->control->terminate, __ATOMIC_ACQUIRE) ==
        RK_ABI_TERMINATE_PARK)
      d->queued_park = __atomic_load_n(&d->loop.in->tail, __ATOMIC_ACQUIRE) -
                       __atomic_load_n(&d->loop.in->head, __ATOMIC_ACQUIRE);
    if (!__atomic_load_n(&d->stubborn, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&d->control->terminate, __ATOMIC_ACQUIRE) !=
            RK_ABI_TERMINATE_PARK)
      break;
    while (__atomic_load_n(&d->control->terminate, __ATOMIC_ACQUIRE) ==
           RK_ABI_TERMINATE_PARK)
      usleep(100);
  }
  /* The kernel ended: its stream is idle. */
  g_fake.set_stream_busy(d->stream, 0);
  return NULL;
}

static void play_hook(const char *name, void **params, int nparams,
                      void *user) {
  device_play_t *d = user;
  if (strcmp(name, "add_one") == 0 && nparams == 2) {
    const msg_t *in = host_of(param_u64(params, 0));
    msg_t *out = host_of(param_u64(params, 1));
    out->v = in->v + 1;
    d->handled++;
  } else if (strcmp(name, "scale") == 0 && d->hold_plain) {
    d->held = g_fake.launch_stream();
    g_fake.set_stream_busy(d->held, 1);
  } else if (strcmp(name, "rk_actor_add_one") == 0 && nparams == 9 &&
             (!d->started || d->control == host_of(param_u64(params, 0)))) {
    /* The first launch, or a relaunch after a park (the last one's thread
     * has ended). */
    if (d->started) pthread_join(d->thread, NULL);
    d->launches++;
    d->stream = g_fake.launch_stream();
    g_fake.set_stream_busy(d->stream, 1);
    d->control = host_of(param_u64(params, 0));
    d->loop.control = d->control;
    d->loop.in = host_of(param_u64(params, 1));
    d->loop.out = host_of(param_u64(params, 2));
    d->loop.in_slots = host_of(param_u64(params, 3));
    d->loop.out_slots = host_of(param_u64(params, 4));
    d->loop.spin_ns = 0;
    d->loop.batch = 16;
    d->loop.handle = play_batch;
    d->loop.ctx = d;
    d->started = pthread_create(&d->thread, NULL, play_main, d) == 0;
  }
}

/* What the backend gave the persistent kernel: the control block and both
 * rings in pinned memory (device addresses are host addresses here), the
 * state initialised, the scheduling words zeroed but for the kernel's
 * copies of the control block's clock and counters. */
static void check_actor_params(bool has_state, int32_t initial) {
  const char *rec = g_fake.last_launch();
  uint64_t p[7] = {0};
  for (int i = 0; i < 7; ++i) {
    char key[24];
    snprintf(key, sizeof key, "p%d", i);
    if (!CHECK(launch_u64(key, &p[i]), "no %s: %s", key, rec)) return;
  }
  CHECK(p[0] != 0 && p[0] < p[1] && p[1] < p[2] && p[2] < p[3] && p[3] < p[4],
        "ring addresses out of order: %s", rec);
  const rk_abi_control_t *c = host_of(p[0]);
  CHECK(c->magic == RK_ABI_CONTROL_MAGIC && c->version == RK_ABI_VERSION,
        "p0 is not a control block: magic 0x%x", c->magic);
  CHECK(c->in_payload == sizeof(msg_t) && c->out_payload == sizeof(msg_t),
        "payloads %u, %u", c->in_payload, c->out_payload);
  const rk_abi_ring_t *in = host_of(p[1]), *out = host_of(p[2]);
  CHECK(in->magic == RK_ABI_RING_MAGIC && in->capacity == 1024 &&
            out->magic == RK_ABI_RING_MAGIC && out->capacity == 1024,
        "rings: magic 0x%x/0x%x, capacity %u/%u", in->magic, out->magic,
        in->capacity, out->capacity);
  CHECK(p[3] >= p[2] + sizeof(rk_abi_ring_t) &&
            p[4] >= p[3] + (uint64_t)in->capacity * in->slot_size,
        "slots overlap the headers: %s", rec);
  CHECK(p[6] != 0 && p[6] % 8 == 0, "scheduling words at 0x%llx",
        (unsigned long long)p[6]);
  /* The K2K table after the slots, in the same mapped block; the ports'
   * device memory after the state, 128-byte aligned from the scheduling
   * words. */
  uint64_t k2k = 0, kmem = 0;
  if (CHECK(launch_u64("p7", &k2k) && launch_u64("p8", &kmem),
            "no K2K parameters: %s", rec)) {
    const rk_abi_k2k_t *t = host_of(k2k);
    CHECK(k2k >= p[4] + (uint64_t)out->capacity * out->slot_size &&
              t->magic == RK_ABI_K2K_MAGIC && t->nin == 0 && t->nports == 0,
          "p7 is not an empty K2K table after the slots: %s", rec);
    CHECK(kmem > p[6] && (kmem - p[6]) % RK_ABI_LINE == 0 &&
              kmem >= p[6] + 64 + (has_state ? sizeof(state_t) : 0),
          "rk_k2k_mem at 0x%llx, scheduling words at 0x%llx",
          (unsigned long long)kmem, (unsigned long long)p[6]);
  }
  const uint64_t *sched = host_of(p[6]);
  CHECK(sched[0] == 0 && sched[1] == 0 && sched[2] == 0 && sched[3] == 0 &&
            sched[7] == 0,
        "scheduling words not zeroed");
  CHECK(
      sched[4] == c->clock && sched[5] == c->processed && sched[6] == c->errors,
      "the kernel's clock and counters %llu %llu %llu, the control "
      "block's %llu %llu %llu",
      (unsigned long long)sched[4], (unsigned long long)sched[5],
      (unsigned long long)sched[6], (unsigned long long)c->clock,
      (unsigned long long)c->processed, (unsigned long long)c->errors);
  if (has_state) {
    CHECK(p[5] == p[6] + 64, "state at 0x%llx, scheduling words at 0x%llx",
          (unsigned long long)p[5], (unsigned long long)p[6]);
    const state_t *st = host_of(p[5]);
    CHECK(st->count == initial, "initial state %d", st->count);
  } else {
    CHECK(p[5] == 0, "a state pointer without state: %s", rec);
  }
}

/* Waits up to 5 s for *p to reach `want`. */
static void wait_u64(const uint64_t *p, uint64_t want) {
  const uint64_t until = rk__now_ns() + 5000000000ull;
  while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want && rk__now_ns() < until)
    usleep(100);
  CHECK(__atomic_load_n(p, __ATOMIC_ACQUIRE) >= want, "waited for %llu: %llu",
        (unsigned long long)want,
        (unsigned long long)__atomic_load_n(p, __ATOMIC_ACQUIRE));
}

/* The K2K table the last launch passed (parameter 7; NULL: none). */
static const rk_abi_k2k_t *launched_k2k(void) {
  uint64_t p7 = 0, p8 = 0;
  if (!CHECK(launch_u64("p7", &p7) && launch_u64("p8", &p8),
             "no K2K parameters: %s", g_fake.last_launch()))
    return NULL;
  const rk_abi_k2k_t *t = host_of(p7);
  CHECK(t && t->magic == RK_ABI_K2K_MAGIC && t->version == RK_ABI_VERSION &&
            p8 != 0,
        "p7 is not a K2K table, or no rk_k2k_mem: %s", g_fake.last_launch());
  return t;
}

/* Actors that talk to actors with resident CUDA kernels: a sending handler
 * launches resident, its kernel given a K2K table (ports) and device
 * memory for its port buffers; links into a resident kernel are channels
 * named in its table (and, from a resident sender, in the sender's). A CPU
 * sender writes a resident receiver's channel itself: the message lands in
 * the mapped slot with its header, and a full channel answers
 * RK_SEND_FULL in the handler. A resident sender to a CPU actor writes a
 * channel that the forwarding thread moves into the CPU actor's inbox
 * (played here: the kernels never run, so none takes a message). */
static void check_k2k_wiring(rk_context_t *ctx) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  o.source_name = "k2k.c";
  rk_actor_t *snd = NULL, *rcv = NULL, *cpu_snd = NULL, *cpu_rcv = NULL;
  const rk_abi_k2k_t *snd_t = NULL, *rcv_t = NULL;
  if (CHECK_OK(rk_actor_launch(ctx, kK2KSource, "fwd", &o, &snd))) {
    snd_t = launched_k2k();
    if (snd_t)
      CHECK(snd_t->nports == 1 && snd_t->nin == 0 && snd_t->nout[0] == 0,
            "sender's table: %u ports, %u in, %u out", snd_t->nports,
            snd_t->nin, snd_t->nout[0]);
  }
  o.input_capacity = 2; /* the channels into rcv: 2 slots each */
  if (CHECK_OK(rk_actor_launch(ctx, kK2KSource, "add_one", &o, &rcv)))
    rcv_t = launched_k2k();
  o.input_capacity = 64;
  rk_backend_t *cbe = NULL;
  rk_context_t *cctx = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &cbe))) return;
  if (snd && rcv && snd_t && rcv_t &&
      CHECK_OK(rk_backend_create_context(cbe, 0, &cctx)) &&
      CHECK_OK(rk_actor_launch(cctx, kK2KSource, "fwd", &o, &cpu_snd)) &&
      (o.input_capacity = 4,
       CHECK_OK(rk_actor_launch(cctx, kK2KSource, "add_one", &o, &cpu_rcv)))) {
    /* Resident sender -> CPU actor: a channel the kernel writes, which the
     * forwarding thread empties into the CPU actor's inbox. */
    CHECK_OK(rk_actor_connect(snd, 0, cpu_rcv));
    CHECK(snd_t->nout[0] == 1 && snd_t->out[0][0] != 0,
          "the forwarded link is not in the sender's table");
    /* Resident -> resident and CPU -> resident: one channel each. */
    CHECK_OK(rk_actor_connect(snd, 0, rcv));
    CHECK_OK(rk_actor_connect(cpu_snd, 0, rcv));
    /* And to cpu_rcv: its inbox of 4 has two links, 2 slots each. */
    CHECK_OK(rk_actor_connect(cpu_snd, 0, cpu_rcv));
    CHECK(rcv_t->nin == 2 && snd_t->nout[0] == 2 &&
              snd_t->out[0][1] == rcv_t->in[0] && rcv_t->in[0] != 0 &&
              rcv_t->in[1] != 0 && rcv_t->in[1] != rcv_t->in[0],
          "tables: receiver %u channels, sender %u links", (unsigned)rcv_t->nin,
          (unsigned)snd_t->nout[0]);
    /* Between the two resident kernels of this context: a channel in
     * device memory (bit 0 of the entries), its header written by a copy;
     * from the CPU sender and to the CPU actor: mapped memory. */
    const rk_abi_chan_t *dch = host_of(rcv_t->in[0] & ~1ull);
    CHECK((rcv_t->in[0] & 1u) == 1u && (rcv_t->in[1] & 1u) == 0u &&
              (snd_t->out[0][0] & 1u) == 0u,
          "channel kinds: resident->resident %s, CPU->resident %s, "
          "resident->CPU %s",
          rcv_t->in[0] & 1u ? "device" : "mapped",
          rcv_t->in[1] & 1u ? "device" : "mapped",
          snd_t->out[0][0] & 1u ? "device" : "mapped");
    CHECK(dch->ring.capacity == 2 && dch->ring.head == 0 &&
              dch->ring.tail == 0 && dch->open == 1 && dch->link == 0,
          "the device channel's header: capacity %u, head %llu, tail %llu, "
          "open %u, link %u",
          dch->ring.capacity, (unsigned long long)dch->ring.head,
          (unsigned long long)dch->ring.tail, dch->open, dch->link);
    rk_actor_k2k_stats_t st;
    if (CHECK_OK(rk_actor_k2k_stats(rcv, &st)))
      CHECK(st.senders_in == 2 && st.inbox_capacity == 4 &&
                st.inbox_depth == 0 && st.path == RK_K2K_DIRECT,
            "receiver: %u senders, inbox %llu of %llu, path %s", st.senders_in,
            (unsigned long long)st.inbox_depth,
            (unsigned long long)st.inbox_capacity, rk_k2k_path_name(st.path));
    if (CHECK_OK(rk_actor_k2k_stats(snd, &st)))
      CHECK(st.path == RK_K2K_HOST_FORWARDED && st.links_out == 2,
            "resident sender: path %s, %u links", rk_k2k_path_name(st.path),
            st.links_out);
    /* The CPU sender fills its channel (2 slots): the third is FULL. */
    rk_abi_chan_t *ch = host_of(rcv_t->in[1]);
    CHECK_OK(rk_actor_activate(cpu_snd));
    for (int i = 0; i < 3; ++i) {
      msg_t q = {40 + i}, r = {-1};
      if (CHECK_OK(rk_actor_call(cpu_snd, &q, sizeof q, &r, sizeof r,
                                 RK_TIMEOUT_INFINITE, NULL)))
        CHECK(r.v == (i < 2 ? RK_SEND_QUEUED : RK_SEND_FULL),
              "CPU sender, message %d: rk_send answered %d", i, r.v);
    }
    const unsigned char *slot = (const unsigned char *)(ch + 1);
    rk_abi_msg_t h;
    msg_t m;
    memcpy(&h, slot + ch->ring.slot_size, sizeof h);
    memcpy(&m, slot + ch->ring.slot_size + RK_ABI_MSG_HEADER, sizeof m);
    CHECK(ch->open == 1 && ch->ring.tail == 2 && ch->ring.head == 0 &&
              h.type == RK_ABI_MSG_K2K && h.correlation_id == 2 &&
              h.size == sizeof m && h.status == 1 && m.v == 41 &&
              h.timestamp != 0,
          "the CPU sender's channel: open %u, tail %llu, second message type "
          "%u id %llu link %u v %d",
          ch->open, (unsigned long long)ch->ring.tail, h.type,
          (unsigned long long)h.correlation_id, h.status, m.v);
    if (CHECK_OK(rk_actor_k2k_stats(cpu_snd, &st)))
      CHECK(st.sent == 4 && st.refused_full == 1 && st.path == RK_K2K_DIRECT,
            "CPU sender: sent %llu, full %llu, path %s",
            (unsigned long long)st.sent, (unsigned long long)st.refused_full,
            rk_k2k_path_name(st.path));
    /* Playing the sending kernel: 4 messages into the forwarded channel
     * (slots, then the tail with release). cpu_rcv is not active yet and
     * holds cpu_snd's 2: the forwarder moves 2 (its link's share of the
     * inbox) and frees their channel slots, and keeps the other 2 in the
     * channel until the inbox gives the link credit back; active, cpu_rcv
     * handles all 6. */
    rk_abi_chan_t *fw = host_of(snd_t->out[0][0]);
    CHECK(fw->ring.capacity == 4, "forwarded channel of %u slots",
          fw->ring.capacity);
    for (int i = 0; i < 4; ++i) {
      unsigned char *sl = (unsigned char *)(fw + 1) + i * fw->ring.slot_size;
      const rk_abi_msg_t hd = {.correlation_id = (uint64_t)i + 1,
                               .timestamp = 1000 + (uint64_t)i,
                               .type = RK_ABI_MSG_K2K,
                               .size = sizeof(msg_t),
                               .status = fw->link,
                               .code = 0};
      const msg_t md = {70 + i};
      memcpy(sl, &hd, sizeof hd);
      memcpy(sl + RK_ABI_MSG_HEADER, &md, sizeof md);
    }
    __atomic_store_n(&fw->ring.tail, 4, __ATOMIC_RELEASE);
    wait_u64(&fw->ring.head, 2);
    usleep(2000); /* the forwarder looks again: no credit, nothing moves */
    if (CHECK_OK(rk_actor_k2k_stats(cpu_rcv, &st)))
      CHECK(__atomic_load_n(&fw->ring.head, __ATOMIC_ACQUIRE) == 2 &&
                st.inbox_depth == 4 && st.received == 0,
            "forwarded into a full inbox: channel head %llu (want 2), inbox "
            "%llu (want 4), received %llu",
            (unsigned long long)fw->ring.head,
            (unsigned long long)st.inbox_depth,
            (unsigned long long)st.received);
    CHECK_OK(rk_actor_activate(cpu_rcv));
    wait_u64(&fw->ring.head, 4);
    const uint64_t until = rk__now_ns() + 5000000000ull;
    while (rk__now_ns() < until && CHECK_OK(rk_actor_k2k_stats(cpu_rcv, &st)) &&
           st.received < 6)
      usleep(100);
    if (CHECK_OK(rk_actor_k2k_stats(cpu_rcv, &st)))
      CHECK(st.received == 6 && st.received_errors == 0 &&
                __atomic_load_n(&fw->ring.head, __ATOMIC_ACQUIRE) == 4 &&
                st.last_received_timestamp == 1003,
            "forwarded: the CPU actor took %llu of 6 (stamp %llu), channel "
            "head %llu",
            (unsigned long long)st.received,
            (unsigned long long)st.last_received_timestamp,
            (unsigned long long)fw->ring.head);
  }
  /* Like every kernel here, they never stop. */
  if (snd) {
    CHECK_STATUS(rk_actor_terminate(snd, 20 * 1000 * 1000), RK_ERR_TIMEOUT);
    rk_actor_destroy(snd);
  }
  if (rcv) {
    CHECK_STATUS(rk_actor_terminate(rcv, 20 * 1000 * 1000), RK_ERR_TIMEOUT);
    rk_actor_destroy(rcv);
  }
  if (cpu_snd) {
    CHECK_OK(rk_actor_terminate(cpu_snd, 1000 * 1000 * 1000));
    rk_actor_destroy(cpu_snd);
  }
  if (cpu_rcv) {
    CHECK_OK(rk_actor_terminate(cpu_rcv, 1000 * 1000 * 1000));
    rk_actor_destroy(cpu_rcv);
  }
  if (cctx) CHECK_OK(rk_context_destroy(cctx));
  CHECK_OK(rk_backend_destroy(cbe));
}

static void test_actor_resident(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  /* With state and an initial value. */
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  const state_t initial = {5};
  o.initial_state = &initial;
  o.initial_state_size = sizeof initial;
  o.source_name = "actors.c";
  rk_actor_t *a = NULL;
  int launches = stat_of("launches");
  rk_status_t s = rk_actor_launch(ctx, kSource, "counted", &o, &a);
  if (s == RK_ERR_UNAVAILABLE && rk_test_contains(rk_last_error(), "NVRTC")) {
    snprintf(g_no_nvrtc, sizeof g_no_nvrtc, "%s", rk_last_error());
    rk_context_destroy(ctx);
    rk_backend_destroy(be);
    return;
  }
  if (CHECK_OK(s)) {
    CHECK(stat_of("launches") == launches + 1, "%d launches",
          stat_of("launches") - launches);
    check_launch("rk_actor_counted", rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, 9,
                 NULL);
    check_actor_params(true, 5);
    rk_actor_stats_t st;
    if (CHECK_OK(rk_actor_stats(a, &st)))
      CHECK(st.execution == RK_ACTOR_EXEC_RESIDENT &&
                st.state == RK_ACTOR_ACTIVE && st.state_size == 4,
            "execution %s, state %s", rk_actor_execution_name(st.execution),
            rk_actor_state_name(st.state));
    /* A kernel that is not running never stops. */
    CHECK_STATUS(rk_actor_terminate(a, 20 * 1000 * 1000), RK_ERR_TIMEOUT);
    CHECK(rk_actor_state(a) == RK_ACTOR_FAILED, "state %s",
          rk_actor_state_name(rk_actor_state(a)));
    rk_actor_destroy(a);
  }

  /* Larger grids: co-resident or refused before launch, leaving nothing
   * behind. Only thread 0 of a block serves, so every block is launched
   * with one thread whatever shape was asked for (132 SMs x 32 blocks). */
  rk_actor_options_init(&o);
  o.grid = rk_dim3(264, 1, 1);
  o.block = rk_dim3(1024, 1, 1);
  a = NULL;
  if (CHECK_OK(rk_actor_launch(ctx, kSource, "add_one", &o, &a))) {
    check_launch("rk_actor_add_one", o.grid, rk_dim3(1, 1, 1), 0, 9, NULL);
    check_actor_params(false, 0);
    CHECK_STATUS(rk_actor_terminate(a, 1000 * 1000), RK_ERR_TIMEOUT);
    rk_actor_destroy(a);
  }
  const counts_t mid2 = counts();
  o.grid = rk_dim3(1u << 20, 1, 1);
  o.block = rk_dim3(1, 1, 1);
  a = NULL;
  CHECK_STATUS(rk_actor_launch(ctx, kSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("co-resident");
  CHECK(a == NULL, "a refused launch set the actor");
  o.grid = rk_dim3(132 * 32 + 1, 1, 1);
  o.block = rk_dim3(1024, 1, 1);
  CHECK_STATUS(rk_actor_launch(ctx, kSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("co-resident");
  /* Few enough blocks and threads, but more than a block may have in z. */
  o.grid = rk_dim3(1, 1, 1);
  o.block = rk_dim3(1, 1, 128);
  CHECK_STATUS(rk_actor_launch(ctx, kSource, "add_one", &o, &a),
               RK_ERR_INVALID_ARGUMENT);
  /* The stuck kernels count as resident: the refused actors' modules and
   * ring memory wait for none to be (unloading or freeing pinned memory
   * may wait for the whole context), and one pinned block serves every
   * refused actor of the same size. Device memory and streams are back. */
  {
    counts_t now = counts();
    CHECK(now.retained == mid2.retained && now.allocs == mid2.allocs &&
              now.streams == mid2.streams &&
              now.host_allocs == mid2.host_allocs + 1 &&
              now.modules == mid2.modules + 3,
          "driver objects: retained %d->%d, allocations %d->%d, host "
          "allocations %d->%d, streams %d->%d, modules %d->%d",
          mid2.retained, now.retained, mid2.allocs, now.allocs,
          mid2.host_allocs, now.host_allocs, mid2.streams, now.streams,
          mid2.modules, now.modules);
  }
  CHECK(stat_of("launches") == mid2.launches, "a refused grid was launched");
  check_k2k_wiring(ctx);

  /* The stuck kernels keep the context: destroying it says so, and the
   * primary context stays retained. */
  CHECK_STATUS(rk_context_destroy(ctx), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("never stopped");
  CHECK(stat_of("retained") == before.retained + 1,
        "retained %d after destroying a context with stuck kernels",
        stat_of("retained"));
  CHECK(stat_of("bad_calls") == before.bad_calls, "%d invalid driver calls",
        stat_of("bad_calls") - before.bad_calls);
  CHECK_OK(rk_backend_destroy(be));
}

/* Two played actors: plays[0] serves the first persistent kernel
 * launched, plays[1] the second. */
static void play_two_hook(const char *name, void **params, int nparams,
                          void *user) {
  device_play_t *plays = user;
  /* A relaunch goes to the play it was: the same control block. */
  const bool first =
      !plays[0].started ||
      (nparams == 9 && plays[0].control == host_of(param_u64(params, 0)));
  play_hook(name, params, nparams, first ? &plays[0] : &plays[1]);
}

/* How long the CUDA backend waits for resident kernels to step aside
 * (cuda_actor.c). */
extern uint64_t rk__cu_pause_timeout_ns;

/* Loading a module waits on a GPU until no kernel runs: beside a resident
 * actor the backend parks the kernel, loads, and relaunches it where it
 * stopped. Requests queued meanwhile are answered once each, in order; no
 * module is loaded and no memory pinned while a played kernel runs; a
 * kernel that does not step aside makes the load fail in time instead of
 * hanging; and the fake's detector counts a load beside a kernel rk does
 * not know (a user's kernel that runs on), so the checks can fail. */
static void test_actor_pause(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  device_play_t play;
  memset(&play, 0, sizeof play);
  g_fake.set_hook(play_hook, &play);
  const int busy_before = stat_of("busy_loads");
  rk_actor_t *a = NULL;
  rk_module_t *mod = NULL;
  if (!CHECK_OK(rk_actor_launch(ctx, kSource, "add_one", NULL, &a))) a = NULL;
  if (a && CHECK(play.started && play.launches == 1,
                 "the persistent kernel was not launched")) {
    msg_t q = {1}, r = {0};
    if (CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r,
                               5ull * 1000 * 1000 * 1000, NULL)))
      CHECK(r.v == 2, "answer %d", r.v);
    /* Requests the kernel stops answering after 5 (it stalls until asked
     * to park), then a module built: it parks between two requests, the
     * rest stay queued through the park and are answered after it, once
     * each and in order. */
    enum { kQueued = 40, kBefore = 5 };
    play.stall_after = play.answered + kBefore;
    uint64_t ids[kQueued];
    for (int i = 0; i < kQueued; ++i) {
      msg_t m = {100 + i};
      CHECK_OK(
          rk_actor_send(a, &m, sizeof m, 5ull * 1000 * 1000 * 1000, &ids[i]));
    }
    /* The kernel has answered kBefore of them and stalls. */
    for (int i = 0;
         i < 50000 && !__atomic_load_n(&play.stalled, __ATOMIC_ACQUIRE); ++i)
      usleep(100);
    CHECK(__atomic_load_n(&play.stalled, __ATOMIC_ACQUIRE),
          "the played kernel did not answer %d requests in 5 s", (int)kBefore);
    if (CHECK_OK(rk_context_compile(ctx, kSource, NULL, &mod))) {
      CHECK(play.launches == 2,
            "the kernel was launched %d times around a module load (1 "
            "relaunch expected)",
            play.launches);
      CHECK(stat_of("busy_loads") == busy_before,
            "a module was loaded while the actor kernel ran");
      CHECK(play.queued_park == kQueued - kBefore,
            "%llu of %d requests were queued when the kernel parked, want "
            "%d",
            (unsigned long long)play.queued_park, (int)kQueued,
            (int)(kQueued - kBefore));
    }
    printf(
        "note: a module loaded beside a resident actor: %llu of %d "
        "requests queued at the park, kernel launched %d times\n",
        (unsigned long long)play.queued_park, (int)kQueued, play.launches);
    for (int i = 0; i < kQueued; ++i) {
      msg_t m = {0};
      rk_actor_message_t info;
      if (!CHECK_OK(rk_actor_receive(a, &m, sizeof m, 5ull * 1000 * 1000 * 1000,
                                     &info)))
        break;
      CHECK(info.correlation_id == ids[i] && m.v == 101 + i,
            "answer %d: id %llu (want %llu), value %d", i,
            (unsigned long long)info.correlation_id, (unsigned long long)ids[i],
            m.v);
    }
    rk_actor_stats_t st;
    if (CHECK_OK(rk_actor_stats(a, &st)))
      CHECK(st.processed == 1 + kQueued, "processed %llu",
            (unsigned long long)st.processed);

    /* A kernel that does not step aside: the load fails after the
     * pause's limit, saying which actor, and the actor goes on. */
    const uint64_t limit = rk__cu_pause_timeout_ns;
    rk__cu_pause_timeout_ns = 200000000ull; /* 0.2 s */
    __atomic_store_n(&play.stubborn, true, __ATOMIC_RELEASE);
    rk_module_t *late = NULL;
    rk_status_t s = rk_context_compile(ctx, kSource, NULL, &late);
    CHECK(s == RK_ERR_TIMEOUT && late == NULL,
          "a load beside a kernel that does not step aside: %s",
          rk_status_name(s));
    CHECK_ERROR_HAS("add_one");
    if (late) rk_module_destroy(late);
    __atomic_store_n(&play.stubborn, false, __ATOMIC_RELEASE);
    rk__cu_pause_timeout_ns = limit;
    q.v = 7;
    if (CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r,
                               5ull * 1000 * 1000 * 1000, NULL)))
      CHECK(r.v == 8, "answer after a refused load: %d", r.v);
    CHECK(play.launches == 2, "the stubborn kernel was relaunched (%d)",
          play.launches);
    CHECK(stat_of("busy_loads") == busy_before,
          "a module was loaded while the actor kernel ran");

    CHECK_OK(rk_actor_terminate(a, 5ull * 1000 * 1000 * 1000));
    pthread_join(play.thread, NULL);
  }
  if (a) rk_actor_destroy(a);

  /* Negative control: a kernel rk does not know runs on (the user's own):
   * rk has nothing to park, and the fake counts the load beside it. */
  rk_function_t *scale = NULL;
  rk_devptr_t x = 0;
  rk_stream_t *st = NULL;
  if (mod && CHECK_OK(rk_module_get_function(mod, "scale", &scale)) &&
      CHECK_OK(rk_context_allocate(ctx, 64 * sizeof(float), &x)) &&
      CHECK_OK(rk_context_create_stream(ctx, &st))) {
    play.hold_plain = true;
    rk_arg_t args[] = {rk_arg_i32(64), rk_arg_f32(2.0f), rk_arg_ptr(x)};
    CHECK_OK(rk_function_launch(scale, rk_dim3(1, 1, 1), rk_dim3(64, 1, 1), 0,
                                st, args, 3));
    rk_module_t *beside = NULL;
    CHECK_OK(rk_context_compile(ctx, kSource, NULL, &beside));
    CHECK(stat_of("busy_loads") == busy_before + 1,
          "the fake did not see a module loaded beside a running kernel "
          "(%d -> %d): its check cannot fail",
          busy_before, stat_of("busy_loads"));
    /* The kernel ends (destroying the module waits for it). */
    g_fake.set_stream_busy(play.held, 0);
    play.hold_plain = false;
    if (beside) CHECK_OK(rk_module_destroy(beside));
    CHECK_OK(rk_stream_synchronize(st));
  }
  if (st) CHECK_OK(rk_stream_destroy(st));
  if (x) CHECK_OK(rk_context_free(ctx, x));
  if (mod) CHECK_OK(rk_module_destroy(mod));
  g_fake.set_hook(NULL, NULL);
  CHECK_OK(rk_context_destroy(ctx));
  CHECK_OK(rk_backend_destroy(be));
}

/* An actor destroyed while another is resident: unloading its module and
 * freeing its pinned rings may wait for the whole context on a GPU, so
 * both wait until no actor kernel is resident; then they are done. */
static void test_actor_deferred(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  device_play_t plays[2];
  memset(plays, 0, sizeof plays);
  g_fake.set_hook(play_two_hook, plays);
  const counts_t before = counts();
  rk_actor_t *a[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i)
    if (!CHECK_OK(rk_actor_launch(ctx, kSource, "add_one", NULL, &a[i])))
      a[i] = NULL;
  if (a[0] && a[1] &&
      CHECK(plays[0].started && plays[1].started,
            "the persistent kernels were not launched")) {
    const counts_t both = counts();
    CHECK(both.modules == before.modules + 2 &&
              both.host_allocs == before.host_allocs + 2,
          "modules %d->%d, host allocations %d->%d", before.modules,
          both.modules, before.host_allocs, both.host_allocs);
    CHECK_OK(rk_actor_terminate(a[0], 5ull * 1000 * 1000 * 1000));
    pthread_join(plays[0].thread, NULL);
    rk_actor_destroy(a[0]);
    a[0] = NULL;
    counts_t now = counts();
    CHECK(now.modules == both.modules && now.host_allocs == both.host_allocs,
          "with an actor resident: modules %d->%d, host allocations %d->%d",
          both.modules, now.modules, both.host_allocs, now.host_allocs);
    msg_t q = {7}, r = {0};
    if (CHECK_OK(rk_actor_call(a[1], &q, sizeof q, &r, sizeof r,
                               5ull * 1000 * 1000 * 1000, NULL)))
      CHECK(r.v == 8, "answer %d", r.v);
    CHECK_OK(rk_actor_terminate(a[1], 5ull * 1000 * 1000 * 1000));
    pthread_join(plays[1].thread, NULL);
    rk_actor_destroy(a[1]);
    a[1] = NULL;
    now = counts();
    CHECK(
        now.modules == before.modules && now.host_allocs == before.host_allocs,
        "after the last actor: modules %d->%d, host allocations %d->%d",
        before.modules, now.modules, before.host_allocs, now.host_allocs);
  }
  for (int i = 0; i < 2; ++i) {
    if (!a[i]) continue;
    rk_actor_terminate(a[i], 1000 * 1000);
    rk_actor_destroy(a[i]);
  }
  g_fake.set_hook(NULL, NULL);
  rk_status_t s = rk_context_destroy(ctx);
  CHECK(s == RK_OK || s == RK_ERR_INVALID_STATE, "destroy: %s",
        rk_status_name(s));
  CHECK_OK(rk_backend_destroy(be));
}

/* Persistent and traditional actors answered by the played device. */
static void test_actor_played(void) {
  rk_backend_t *be = open_cuda();
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  if (!ctx) {
    rk_backend_destroy(be);
    return;
  }
  device_play_t play;
  memset(&play, 0, sizeof play);
  g_fake.set_hook(play_hook, &play);

  rk_actor_t *a = NULL;
  rk_status_t s = rk_actor_launch(ctx, kSource, "add_one", NULL, &a);
  if (s == RK_ERR_UNAVAILABLE && rk_test_contains(rk_last_error(), "NVRTC")) {
    snprintf(g_no_nvrtc, sizeof g_no_nvrtc, "%s", rk_last_error());
  } else if (CHECK_OK(s)) {
    CHECK(play.started, "the persistent kernel was not launched: %s",
          g_fake.last_launch());
    for (int i = 0; i < 3 && play.started; ++i) {
      msg_t q = {41 + i}, r = {0};
      rk_actor_message_t info;
      if (CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r,
                                 5ull * 1000 * 1000 * 1000, &info)))
        CHECK(r.v == 42 + i && info.status == RK_OK, "answer %d", r.v);
    }
    rk_actor_stats_t st;
    if (CHECK_OK(rk_actor_stats(a, &st)))
      CHECK(st.processed == (play.started ? 3u : 0u) &&
                st.execution == RK_ACTOR_EXEC_RESIDENT,
            "processed %llu", (unsigned long long)st.processed);
    if (play.started) {
      CHECK_OK(rk_actor_terminate(a, 5ull * 1000 * 1000 * 1000));
      CHECK(rk_actor_state(a) == RK_ACTOR_TERMINATED, "state %s",
            rk_actor_state_name(rk_actor_state(a)));
      pthread_join(play.thread, NULL);
    }
    rk_actor_destroy(a);

    /* Traditional: each call copies in, launches the handler, copies out. */
    rk_actor_options_t o;
    rk_actor_options_init(&o);
    o.mode = RK_ACTOR_TRADITIONAL;
    a = NULL;
    if (CHECK_OK(rk_actor_launch(ctx, kSource, "add_one", &o, &a))) {
      const int launches = stat_of("launches");
      const int copies = stat_of("copies");
      msg_t q = {99}, r = {0};
      rk_actor_message_t info;
      if (CHECK_OK(rk_actor_call(a, &q, sizeof q, &r, sizeof r,
                                 5ull * 1000 * 1000 * 1000, &info)))
        CHECK(r.v == 100 && info.status == RK_OK, "answer %d", r.v);
      CHECK(play.handled == 1, "the handler kernel ran %d times", play.handled);
      CHECK(stat_of("launches") == launches + 1 &&
                stat_of("copies") == copies + 2,
            "%d launches and %d copies for one call",
            stat_of("launches") - launches, stat_of("copies") - copies);
      check_launch("add_one", rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, 2, NULL);
      rk_actor_stats_t st;
      if (CHECK_OK(rk_actor_stats(a, &st)))
        CHECK(st.execution == RK_ACTOR_EXEC_PER_REQUEST && st.processed == 1,
              "execution %s, processed %llu",
              rk_actor_execution_name(st.execution),
              (unsigned long long)st.processed);
      CHECK_OK(rk_actor_terminate(a, 1000 * 1000 * 1000));
      rk_actor_destroy(a);
    }
  }
  g_fake.set_hook(NULL, NULL);
  /* Everything stopped: the context releases all of it. */
  CHECK_OK(rk_context_destroy(ctx));
  CHECK_BALANCED(before);
  CHECK_OK(rk_backend_destroy(be));
}

/* A device that cannot map host memory has no resident actors: persistent
 * mode is emulated by relaunch, traditional mode works as anywhere, and
 * both leave nothing behind. */
static void test_actor_unmapped(void) {
  setenv("RK_FAKE_CUDA_ATTR", "19:0", 1);
  rk_backend_t *be = open_cuda();
  unsetenv("RK_FAKE_CUDA_ATTR");
  if (!be) return;
  const counts_t before = counts();
  rk_context_t *ctx = create_context(be);
  for (int mode = 0; ctx && mode < 2; ++mode) {
    rk_actor_options_t o;
    rk_actor_options_init(&o);
    o.mode = mode ? RK_ACTOR_TRADITIONAL : RK_ACTOR_PERSISTENT;
    rk_actor_t *a = NULL;
    rk_test_clear_error();
    rk_status_t s = rk_actor_launch(ctx, kSource, "add_one", &o, &a);
    printf("note: %s actor without mapped host memory: %s%s%s\n",
           rk_actor_mode_name(o.mode), rk_status_name(s), s ? ": " : "",
           s ? rk_last_error() : "");
    if (s == RK_OK) {
      /* Without mapped memory there is no resident kernel: a persistent
       * actor is emulated by relaunch, and both modes stop cleanly. */
      rk_actor_stats_t st;
      if (CHECK_OK(rk_actor_stats(a, &st)))
        CHECK(st.execution ==
                  (mode ? RK_ACTOR_EXEC_PER_REQUEST : RK_ACTOR_EXEC_RELAUNCH),
              "%s actor runs as %s", rk_actor_mode_name(o.mode),
              rk_actor_execution_name(st.execution));
      CHECK_OK(rk_actor_terminate(a, 10ull * 1000 * 1000 * 1000));
      rk_actor_destroy(a);
    } else {
      CHECK(a == NULL, "a failed launch set the actor");
      CHECK(s != RK_ERR_INTERNAL, "internal error: %s", rk_last_error());
    }
  }
  if (ctx) {
    rk_status_t s = rk_context_destroy(ctx);
    CHECK(s == RK_OK || s == RK_ERR_INVALID_STATE, "destroy: %s",
          rk_status_name(s));
    if (s == RK_OK) CHECK_BALANCED(before);
  }
  CHECK_OK(rk_backend_destroy(be));
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--no-pools") == 0) {
    g_pools = false;
  } else if (argc > 1) {
    printf("usage: cuda_fake [--no-pools]\n");
    return 2;
  }
  /* A case that hangs fails the run rather than ctest's timeout. */
  alarm(120);
  open_fake();
  setenv("RK_CUDA_LIB", RK_FAKE_CUDA_PATH, 1);
  setenv("RK_FAKE_CUDA_DEVICES", "1", 1);
  setenv("RK_FAKE_CUDA_POOLS", g_pools ? "1" : "0", 1);
  unsetenv("RK_FAKE_CUDA_FAIL");
  unsetenv("RK_FAKE_CUDA_ATTR");
  unsetenv("RK_FAKE_CUDA_FUNC_ATTR");
  unsetenv("RK_BACKEND");
  rk_test_use_temp_cache();

  printf("case 1: device\n");
  test_device();
  printf("case 2: contexts\n");
  test_contexts();
  printf("case 3: memory\n");
  test_memory();
  printf("case 4: errors\n");
  test_errors();
  printf("case 5: modules\n");
  test_modules();
  if (!g_no_nvrtc[0]) {
    printf("case 6: launches\n");
    test_launch();
    printf("case 7: actors\n");
    test_actor_played();
    test_actor_pause();
    test_actor_deferred();
    test_actor_unmapped();
    /* Last: its stuck kernels keep the primary context retained. */
    test_actor_resident();
  }
  const char *name = g_pools ? "cuda_fake" : "cuda_fake --no-pools";
  if (g_no_nvrtc[0] && rk_test_failures == 0)
    RK_TEST_SKIP("%s: the cases that compile need NVRTC: %s", name, g_no_nvrtc);
  return rk_test_finish(name);
}
