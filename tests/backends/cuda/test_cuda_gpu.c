/* The CUDA backend on a real device, through the public API: device
 * information, memory and copies (at offsets, out of range, after free),
 * compile errors (NVRTC's log and the generated line) and the disk cache,
 * dynamic shared memory up to the reported limit, launch errors, streams
 * (ordering, several at once), thousands of small launches and launches
 * from several threads.
 *
 *   cuda_gpu [--backend NAME]
 *
 * Exits 77 with the reason when the CUDA backend does not open, has no
 * device or cannot compile kernels (no NVRTC). `--backend cpu` runs the checks
 * that are not about CUDA itself on the CPU backend, so the test's own logic
 * runs on machines without a GPU. A watchdog fails the run naming the case when
 * a case stalls, rather than hanging until ctest's timeout.
 *
 * Persistent actors on CUDA are tested by tests/actor (actor_cuda,
 * actor_cuda_blocks); the build path without a GPU by cuda_build.
 */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"
#include "rk_test.h"

static rk_backend_kind_t g_kind = RK_BACKEND_CUDA;
static rk_device_info_t g_info;

static bool on_cuda(void) { return g_kind == RK_BACKEND_CUDA; }

/* ---- Watchdog ----------------------------------------------------------- */

static pthread_mutex_t g_dog_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_dog_case = "start-up";
static uint64_t g_dog_deadline_ns;

/* Names the case now running and gives it `seconds` to finish. */
static void watch(const char *name, unsigned seconds) {
  pthread_mutex_lock(&g_dog_mu);
  g_dog_case = name;
  g_dog_deadline_ns = rk__now_ns() + (uint64_t)seconds * 1000000000ull;
  pthread_mutex_unlock(&g_dog_mu);
  printf("case %s\n", name);
  fflush(stdout);
}

static void *watchdog_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&g_dog_mu);
    bool late = g_dog_deadline_ns && rk__now_ns() > g_dog_deadline_ns;
    const char *name = g_dog_case;
    pthread_mutex_unlock(&g_dog_mu);
    if (late) {
      printf(
          "FAILED: case %s did not finish in time; %d earlier check(s) "
          "failed\n",
          name, rk_test_failures);
      fflush(stdout);
      _exit(1);
    }
  }
  return NULL;
}

/* ---- Kernels ------------------------------------------------------------ */

static const char kKernels[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void add(int n, int k, const int *a, int *b) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) b[i] = a[i] + k;\n"
    "}\n"
    "RK_KERNEL void bump(int *c) { rk_atomic_add_i32(&c[0], 1); }\n"
    "RK_KERNEL void empty(void) {}\n";

/* ---- Opening ------------------------------------------------------------ */

/* Opening the backend directly and through RK_BACKEND agree; a failure is
 * RK_ERR_UNAVAILABLE with a reason that names the backend (and, through
 * RK_BACKEND, the variable). Returns the open backend or NULL. */
static rk_backend_t *open_backend(rk_status_t *out_status, char *why,
                                  size_t cap) {
  const char *kname = rk_backend_kind_name(g_kind);
  rk_backend_t *be = NULL;
  rk_test_clear_error();
  rk_status_t s = rk_backend_open(g_kind, &be);
  snprintf(why, cap, "%s", rk_last_error());
  *out_status = s;
  if (s != RK_OK) {
    CHECK(s == RK_ERR_UNAVAILABLE, "opening %s: %s (want UNAVAILABLE): %s",
          kname, rk_status_name(s), why);
    CHECK(rk_test_contains(why, kname), "the reason does not name %s: %s",
          kname, why);
    CHECK(be == NULL, "a failed open set *out_backend");
  }
  /* RK_BACKEND=<name> with RK_BACKEND_AUTO: the same backend or the same
   * failure, never a silent fallback. */
  char *saved = getenv("RK_BACKEND") ? strdup(getenv("RK_BACKEND")) : NULL;
  setenv("RK_BACKEND", kname, 1);
  rk_backend_t *forced = NULL;
  rk_test_clear_error();
  rk_status_t fs = rk_backend_open(RK_BACKEND_AUTO, &forced);
  if (s == RK_OK) {
    if (CHECK_OK(fs))
      CHECK(rk_backend_kind(forced) == g_kind, "RK_BACKEND=%s opened %s", kname,
            rk_backend_name(forced));
    rk_backend_destroy(forced);
  } else {
    CHECK(fs == RK_ERR_UNAVAILABLE && forced == NULL,
          "RK_BACKEND=%s where it does not open: %s", kname,
          rk_status_name(fs));
    char want[64];
    snprintf(want, sizeof want, "RK_BACKEND=%s", kname);
    CHECK_ERROR_HAS(want);
  }
  if (saved) {
    setenv("RK_BACKEND", saved, 1);
    free(saved);
  } else {
    unsetenv("RK_BACKEND");
  }
  return be;
}

/* ---- Device information ------------------------------------------------- */

static void test_device_info(rk_backend_t *be) {
  int n = rk_backend_device_count(be);
  CHECK(n >= 1, "%d devices", n);
  for (int d = 0; d < n; ++d) {
    rk_device_info_t info;
    if (!CHECK_OK(rk_backend_device_info(be, d, &info))) continue;
    printf(
        "device %d: %s (%s), %u SMs, %llu MiB, %u threads/block, %llu bytes "
        "shared/block, caps 0x%x\n",
        d, info.name, info.vendor, info.compute_units,
        (unsigned long long)(info.memory_bytes >> 20),
        info.max_threads_per_block,
        (unsigned long long)info.shared_mem_per_block, info.caps);
    CHECK(info.backend == RK_BACKEND_CUDA, "backend %d", (int)info.backend);
    CHECK(info.name[0] != '\0', "device %d has no name", d);
    CHECK(rk_test_contains(info.vendor, "nvidia"), "vendor '%s'", info.vendor);
    CHECK(info.compute_units >= 1, "no multiprocessors");
    CHECK(info.memory_bytes >= (64ull << 20), "%llu bytes of memory",
          (unsigned long long)info.memory_bytes);
    CHECK(info.max_threads_per_block >= 1024, "%u threads per block",
          info.max_threads_per_block);
    CHECK(info.shared_mem_per_block >= 48 * 1024,
          "%llu bytes of shared memory per block (every CUDA device since "
          "compute capability 2.0 has 48 KiB)",
          (unsigned long long)info.shared_mem_per_block);
    const uint32_t need = RK_CAP_PERSISTENT_KERNELS | RK_CAP_MAPPED_HOST_MEMORY;
    CHECK((info.caps & need) == need,
          "caps 0x%x lack persistent kernels or mapped host memory", info.caps);
    CHECK(!(info.caps & RK_CAP_SOFTWARE), "a CUDA device marked software");
  }
  rk_device_info_t info;
  CHECK_STATUS(rk_backend_device_info(be, n, &info), RK_ERR_OUT_OF_RANGE);
  /* A CUDA device comes first in automatic selection. */
  if (!getenv("RK_BACKEND")) {
    rk_backend_t *autob = NULL;
    if (CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &autob))) {
      CHECK(rk_backend_kind(autob) == RK_BACKEND_CUDA,
            "auto-selection chose %s over a CUDA device",
            rk_backend_name(autob));
      CHECK_OK(rk_backend_destroy(autob));
    }
  }
}

/* ---- Memory ------------------------------------------------------------- */

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return false;
  return true;
}

static void test_memory(rk_context_t *ctx) {
  static const size_t kSizes[] = {1, 63, 64, 4096, 1u << 20, 256u << 20};
  rk_devptr_t p[sizeof kSizes / sizeof kSizes[0]] = {0};
  for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
    if (!CHECK_OK(rk_context_allocate(ctx, kSizes[i], &p[i]))) continue;
    CHECK(p[i] != 0 && p[i] % 64 == 0, "%zu bytes at 0x%llx (want 64-aligned)",
          kSizes[i], (unsigned long long)p[i]);
    for (size_t j = 0; j < i; ++j)
      CHECK(p[j] != p[i], "two live allocations share 0x%llx",
            (unsigned long long)p[i]);
  }
  /* The last bytes of the largest allocation are usable. */
  rk_devptr_t big = p[sizeof kSizes / sizeof kSizes[0] - 1];
  if (big) {
    unsigned char out[64], in[64];
    for (int i = 0; i < 64; ++i) out[i] = (unsigned char)(i * 3 + 1);
    memset(in, 0, sizeof in);
    CHECK_OK(rk_context_copy_to_device(ctx, big + (256u << 20) - 64, out, 64));
    CHECK_OK(rk_context_copy_to_host(ctx, in, big + (256u << 20) - 64, 64));
    CHECK(memcmp(in, out, 64) == 0, "the end of 256 MiB read back wrong");
  }
  rk_devptr_t q = 0;
  CHECK_STATUS(rk_context_allocate(ctx, 0, &q), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_allocate(ctx, (size_t)1 << 50, &q),
               RK_ERR_OUT_OF_MEMORY);
  CHECK_STATUS(rk_context_allocate(ctx, SIZE_MAX - 63, &q),
               RK_ERR_OUT_OF_MEMORY);
  CHECK(q == 0, "a failed allocation set *out_ptr");
  /* Frees: only the start of a live allocation, once. */
  if (p[3]) {
    CHECK_STATUS(rk_context_free(ctx, p[3] + 64), RK_ERR_INVALID_ARGUMENT);
    CHECK_OK(rk_context_free(ctx, p[3]));
    CHECK_STATUS(rk_context_free(ctx, p[3]), RK_ERR_INVALID_ARGUMENT);
    p[3] = 0;
  }
  CHECK_STATUS(rk_context_free(ctx, 0), RK_ERR_INVALID_ARGUMENT);
  for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i)
    if (p[i]) CHECK_OK(rk_context_free(ctx, p[i]));
}

/* Copies at offsets inside an allocation, device to device, and every
 * refused copy leaving both sides untouched. */
static void test_copies(rk_context_t *ctx) {
  enum { kBytes = 8192 };
  unsigned char *host = malloc(kBytes), *back = malloc(kBytes);
  rk_devptr_t a = 0, b = 0, gone = 0;
  if (!host || !back || !CHECK_OK(rk_context_allocate(ctx, kBytes, &a)) ||
      !CHECK_OK(rk_context_allocate(ctx, kBytes, &b)) ||
      !CHECK_OK(rk_context_allocate(ctx, 256, &gone)))
    goto out;
  for (int i = 0; i < kBytes; ++i) host[i] = (unsigned char)(i * 7 + 1);
  CHECK_OK(rk_context_copy_to_device(ctx, a, host, kBytes));
  memset(back, 0xEE, kBytes);
  CHECK_OK(rk_context_copy_to_device(ctx, b, back, kBytes));
  /* Odd offsets and lengths both ways. */
  static const size_t kCases[][3] = {/* dst off, src off, n */
                                     {0, 0, 1},
                                     {1, 3, 5},
                                     {100, 4000, 77},
                                     {8191, 0, 1},
                                     {4096, 4096, 4096}};
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
    size_t doff = kCases[c][0], soff = kCases[c][1], n = kCases[c][2];
    unsigned char got[4096];
    memset(got, 0, sizeof got);
    CHECK_OK(rk_context_copy_to_host(ctx, got, a + soff, n));
    CHECK(memcmp(got, host + soff, n) == 0, "read of %zu at %zu wrong", n,
          soff);
    CHECK_OK(rk_context_copy_device_to_device(ctx, b + doff, a + soff, n));
  }
  /* b now holds, per case, a's bytes at the destination offsets (later
   * cases over earlier ones) and 0xEE elsewhere. */
  unsigned char *want = malloc(kBytes);
  if (want) {
    memset(want, 0xEE, kBytes);
    for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c)
      memcpy(want + kCases[c][0], host + kCases[c][1], kCases[c][2]);
    CHECK_OK(rk_context_copy_to_host(ctx, back, b, kBytes));
    CHECK(memcmp(back, want, kBytes) == 0,
          "device-to-device copies at offsets wrong");
    free(want);
  }

  /* Refused: past the end, spanning two allocations, n == 0, freed. */
  unsigned char probe[64];
  memset(probe, 0x5A, sizeof probe);
  rk_status_t s = rk_context_copy_to_host(ctx, probe, a + kBytes - 8, 16);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "read past the end: %s", rk_status_name(s));
  CHECK(all_bytes(probe, sizeof probe, 0x5A), "a refused read wrote");
  s = rk_context_copy_to_device(ctx, a + kBytes - 8, probe, 16);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "write past the end: %s", rk_status_name(s));
  s = rk_context_copy_device_to_device(ctx, b, a + kBytes - 4, 8);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "device copy from past the end: %s", rk_status_name(s));
  s = rk_context_copy_device_to_device(ctx, b + kBytes - 4, a, 8);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "device copy to past the end: %s", rk_status_name(s));
  CHECK_STATUS(rk_context_copy_to_host(ctx, probe, a, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_context_copy_to_host(ctx, probe, a + kBytes - 64, 64));
  CHECK(memcmp(probe, host + kBytes - 64, 64) == 0,
        "a refused write changed device memory");

  CHECK_OK(rk_context_free(ctx, gone));
  memset(probe, 0x5A, sizeof probe);
  s = rk_context_copy_to_host(ctx, probe, gone, 64);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_OUT_OF_RANGE,
        "read from freed memory: %s", rk_status_name(s));
  CHECK(all_bytes(probe, sizeof probe, 0x5A), "a read of freed memory wrote");
  s = rk_context_copy_to_device(ctx, gone, probe, 64);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_OUT_OF_RANGE,
        "write to freed memory: %s", rk_status_name(s));
  s = rk_context_copy_device_to_device(ctx, a, gone, 64);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_OUT_OF_RANGE,
        "device copy from freed memory: %s", rk_status_name(s));
  CHECK_OK(rk_context_copy_to_host(ctx, back, a, kBytes));
  CHECK(memcmp(back, host, kBytes) == 0,
        "a refused device copy changed its destination");
  s = rk_context_copy_to_host(ctx, probe, 0x1000, 64);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_OUT_OF_RANGE,
        "read from an address never allocated: %s", rk_status_name(s));
out:
  if (a) rk_context_free(ctx, a);
  if (b) rk_context_free(ctx, b);
  free(host);
  free(back);
}

/* ---- Compiling ---------------------------------------------------------- */

static void test_compile(rk_context_t *ctx) {
  /* Kernel-language errors point at the user's line, defines or not. */
  static const char kSource[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void k(int *x) {\n"
      "  x[0] = undeclared_thing + N;\n"
      "}\n";
  const char *defines[] = {"N=3", "FLAG", NULL};
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = "lines.c";
  opt.defines = defines;
  rk_module_t *mod = NULL;
  CHECK_STATUS(rk_context_compile(ctx, kSource, &opt, &mod), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("lines.c:3:");
  CHECK_ERROR_HAS("undeclared_thing");
  CHECK(mod == NULL, "a failed compile returned a module");

  if (on_cuda()) {
    /* Valid C (the constant becomes infinity) that the CUDA compiler
     * refuses: the error comes from NVRTC, with its log and the generated
     * line it points at. */
    static const char kNvrtcBad[] =
        "#include <rk/kernel.h>\n"
        "RK_KERNEL void k(float *x) {\n"
        "  float f = 1e39f;\n"
        "  x[0] = f;\n"
        "}\n";
    opt.source_name = "nvrtc_error.c";
    opt.defines = NULL;
    CHECK_STATUS(rk_context_compile(ctx, kNvrtcBad, &opt, &mod),
                 RK_ERR_COMPILE);
    if (!rk_test_contains(rk_last_error(), "nvrtc") &&
        rk_test_contains(rk_last_error(), "nvrtc_error.c:3")) {
      printf(
          "note: the transpiler now refuses the out-of-range constant "
          "itself; NVRTC's error path is covered by cuda_build\n");
    } else {
      CHECK_ERROR_HAS("NVRTC");
      CHECK_ERROR_HAS("out of range"); /* NVRTC's log */
      CHECK_ERROR_HAS("generated line");
      CHECK_ERROR_HAS("1e39f");
    }
    /* More static shared memory than a block may have: refused when the
     * module is built, never at launch. */
    static const char kTooShared[] =
        "#include <rk/kernel.h>\n"
        "RK_KERNEL void k(int *x) {\n"
        "  RK_SHARED int big[65536];\n"
        "  big[rk_thread_idx_x()] = 1;\n"
        "  rk_sync_threads();\n"
        "  x[0] = big[0];\n"
        "}\n";
    opt.source_name = "too_shared.c";
    CHECK_STATUS(rk_context_compile(ctx, kTooShared, &opt, &mod),
                 RK_ERR_COMPILE);
    printf("256 KiB of static shared memory: %s\n", rk_last_error());
  }

  /* Defines reach the kernel; the second compile of a text is a disk-cache
   * hit (this process's RK_CACHE_DIR starts empty), unless no_cache. */
  static const char kGood[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void k(int *x) { x[0] = N * 2 + 17; }\n";
  rk_compile_options_init(&opt);
  opt.source_name = "cached.c";
  opt.defines = defines;
  rk_module_t *a = NULL, *b = NULL, *c = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kGood, &opt, &a))) return;
  CHECK(!rk_module_cache_hit(a), "the first compile was a cache hit");
  if (CHECK_OK(rk_context_compile(ctx, kGood, &opt, &b)))
    CHECK(rk_module_cache_hit(b), "the second compile was not a cache hit");
  opt.no_cache = true;
  if (CHECK_OK(rk_context_compile(ctx, kGood, &opt, &c)))
    CHECK(!rk_module_cache_hit(c), "a no_cache compile was a cache hit");
  rk_module_t *mods[3] = {a, b, c};
  rk_devptr_t d = 0;
  if (CHECK_OK(rk_context_allocate(ctx, sizeof(int), &d))) {
    for (int m = 0; m < 3; ++m) {
      rk_function_t *fn = NULL;
      int v = 0;
      if (!mods[m] || !CHECK_OK(rk_module_get_function(mods[m], "k", &fn)))
        continue;
      rk_arg_t arg = rk_arg_ptr(d);
      CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, &arg, 1));
      CHECK_OK(rk_context_copy_to_host(ctx, &v, d, sizeof v));
      CHECK(v == 23, "module %d (N=3) wrote %d", m, v);
    }
    rk_context_free(ctx, d);
  }
  for (int m = 0; m < 3; ++m) rk_module_destroy(mods[m]);
}

/* ---- Shared memory ------------------------------------------------------ */

static const char kSharedKernels[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void rev(const int *in, int *out) {\n"
    "  int *sh = (int *)rk_dynamic_shared();\n"
    "  uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();\n"
    "  uint32_t base = rk_block_idx_x() * b;\n"
    "  sh[t] = in[base + t];\n"
    "  rk_sync_threads();\n"
    "  out[base + t] = sh[b - 1 - t];\n"
    "}\n"
    "RK_KERNEL void fill(int n, uint32_t *out) {\n"
    "  uint32_t *sh = (uint32_t *)rk_dynamic_shared();\n"
    "  for (int j = (int)rk_thread_idx_x(); j < n; j += "
    "(int)rk_block_dim_x())\n"
    "    sh[j] = (uint32_t)j * 2654435761u + rk_block_idx_x();\n"
    "  rk_sync_threads();\n"
    "  if (rk_thread_idx_x() == 0u) {\n"
    "    uint32_t sum = 0u;\n"
    "    for (int j = 0; j < n; ++j) sum = sum * 31u + sh[j];\n"
    "    out[rk_block_idx_x()] = sum;\n"
    "  }\n"
    "}\n";

/* rk_dynamic_shared(): each block reverses its part through it, for block
 * sizes up to 1024; and every byte of the reported per-block limit can be
 * written and read back. */
static void test_dynamic_shared(rk_context_t *ctx) {
  rk_module_t *mod = NULL;
  rk_function_t *rev = NULL, *fill = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kSharedKernels, NULL, &mod)) ||
      !CHECK_OK(rk_module_get_function(mod, "rev", &rev)) ||
      !CHECK_OK(rk_module_get_function(mod, "fill", &fill)))
    return;
  static const uint32_t kBlocks[] = {1, 7, 32, 256, 1024};
  for (size_t c = 0; c < sizeof kBlocks / sizeof kBlocks[0]; ++c) {
    uint32_t b = kBlocks[c], blocks = 5, n = b * blocks;
    if (b > g_info.max_threads_per_block) continue;
    int *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    rk_devptr_t din = 0, dout = 0;
    for (uint32_t i = 0; in && i < n; ++i) in[i] = (int)(i * 3 + c);
    if (in && out && CHECK_OK(rk_context_allocate(ctx, n * sizeof *in, &din)) &&
        CHECK_OK(rk_context_allocate(ctx, n * sizeof *out, &dout)) &&
        CHECK_OK(rk_context_copy_to_device(ctx, din, in, n * sizeof *in))) {
      rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout)};
      CHECK_OK(rk_function_launch(rev, rk_dim3(blocks, 1, 1), rk_dim3(b, 1, 1),
                                  b * sizeof(int), NULL, args, 2));
      CHECK_OK(rk_context_copy_to_host(ctx, out, dout, n * sizeof *out));
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t blk = i / b, t = i % b;
        if (!CHECK(out[i] == in[blk * b + b - 1 - t],
                   "block size %u: out[%u] = %d, expected %d", b, i, out[i],
                   in[blk * b + b - 1 - t]))
          break;
      }
    }
    if (din) rk_context_free(ctx, din);
    if (dout) rk_context_free(ctx, dout);
    free(in);
    free(out);
  }
  /* The whole reported limit (capped at 1 MiB for CPU-like devices). */
  uint64_t bytes = g_info.shared_mem_per_block;
  if (bytes > (1u << 20)) bytes = 1u << 20;
  int n = (int)(bytes / 4);
  rk_devptr_t dsum = 0;
  if (n > 0 &&
      CHECK_OK(rk_context_allocate(ctx, 2 * sizeof(uint32_t), &dsum))) {
    rk_arg_t args[] = {rk_arg_i32(n), rk_arg_ptr(dsum)};
    uint32_t got[2] = {0, 0};
    CHECK_OK(rk_function_launch(fill, rk_dim3(2, 1, 1), rk_dim3(256, 1, 1),
                                (size_t)n * 4, NULL, args, 2));
    CHECK_OK(rk_context_copy_to_host(ctx, got, dsum, sizeof got));
    for (uint32_t blk = 0; blk < 2; ++blk) {
      uint32_t sum = 0;
      for (int j = 0; j < n; ++j)
        sum = sum * 31u + ((uint32_t)j * 2654435761u + blk);
      CHECK(got[blk] == sum,
            "%llu bytes of dynamic shared memory, block %u: "
            "sum 0x%x, expected 0x%x",
            (unsigned long long)bytes, blk, got[blk], sum);
    }
    rk_context_free(ctx, dsum);
  }
  rk_module_destroy(mod);
}

/* ---- Launch errors ------------------------------------------------------ */

/* Bad launches are refused (at the launch or, for what only the driver
 * knows, at the next synchronization) and the context goes on working. */
static void test_launch_errors(rk_context_t *ctx, rk_module_t *mod) {
  rk_function_t *add = NULL;
  rk_devptr_t a = 0, b = 0;
  if (!CHECK_OK(rk_module_get_function(mod, "add", &add)) ||
      !CHECK_OK(rk_context_allocate(ctx, 4096, &a)) ||
      !CHECK_OK(rk_context_allocate(ctx, 4096, &b)))
    return;
  /* Pointers into no live allocation: one never allocated, one freed (a
   * pointer just past an allocation may lie inside the next one). */
  rk_devptr_t gone = 0;
  if (CHECK_OK(rk_context_allocate(ctx, 256, &gone))) {
    CHECK_OK(rk_context_free(ctx, gone));
    rk_arg_t freed[] = {rk_arg_i32(1), rk_arg_i32(1), rk_arg_ptr(gone),
                        rk_arg_ptr(b)};
    CHECK_STATUS(rk_function_launch(add, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                    NULL, freed, 4),
                 RK_ERR_INVALID_ARGUMENT);
  }
  rk_arg_t nowhere[] = {rk_arg_i32(1), rk_arg_i32(1), rk_arg_ptr(a),
                        rk_arg_ptr(0x1000)};
  CHECK_STATUS(rk_function_launch(add, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, nowhere, 4),
               RK_ERR_INVALID_ARGUMENT);
  rk_arg_t wrong_kind[] = {rk_arg_f32(1.0f), rk_arg_i32(1), rk_arg_ptr(a),
                           rk_arg_ptr(b)};
  CHECK_STATUS(rk_function_launch(add, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, wrong_kind, 4),
               RK_ERR_INVALID_ARGUMENT);
  rk_arg_t args[] = {rk_arg_i32(16), rk_arg_i32(5), rk_arg_ptr(a),
                     rk_arg_ptr(b)};
  CHECK_STATUS(rk_function_launch(add, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, args, 3),
               RK_ERR_INVALID_ARGUMENT);
  /* A block larger than the device allows. */
  rk_test_clear_error();
  uint32_t too_many = g_info.max_threads_per_block * 2;
  rk_status_t s = rk_function_launch(add, rk_dim3(1, 1, 1),
                                     rk_dim3(too_many, 1, 1), 0, NULL, args, 4);
  if (s == RK_OK) s = rk_context_synchronize(ctx);
  CHECK(s == RK_ERR_INVALID_ARGUMENT || s == RK_ERR_LAUNCH,
        "a block of %u threads: %s", too_many, rk_status_name(s));
  CHECK(rk_last_error()[0] != '\0', "no message for the refused block");
  /* Nothing is left pending, and the context still runs kernels. */
  CHECK_OK(rk_context_synchronize(ctx));
  int host[16], out[16];
  for (int i = 0; i < 16; ++i) host[i] = i * i;
  CHECK_OK(rk_context_copy_to_device(ctx, a, host, sizeof host));
  CHECK_OK(rk_function_launch(add, rk_dim3(1, 1, 1), rk_dim3(16, 1, 1), 0, NULL,
                              args, 4));
  CHECK_OK(rk_context_copy_to_host(ctx, out, b, sizeof out));
  for (int i = 0; i < 16; ++i)
    if (!CHECK(out[i] == host[i] + 5, "after the errors: out[%d] = %d", i,
               out[i]))
      break;
  rk_context_free(ctx, a);
  rk_context_free(ctx, b);
}

/* ---- Streams ------------------------------------------------------------ */

/* On one stream, launches and copies interleaved stay in order; several
 * streams run copy-in / kernel / kernel / copy-out chains at once; a
 * refused stream copy leaves its destination alone. */
static void test_streams(rk_context_t *ctx, rk_module_t *mod) {
  rk_function_t *bump = NULL, *add = NULL;
  rk_devptr_t c = 0;
  rk_stream_t *st = NULL;
  int zero = 0;
  if (!CHECK_OK(rk_module_get_function(mod, "bump", &bump)) ||
      !CHECK_OK(rk_module_get_function(mod, "add", &add)) ||
      !CHECK_OK(rk_context_allocate(ctx, sizeof zero, &c)) ||
      !CHECK_OK(rk_context_create_stream(ctx, &st)))
    return;
  CHECK_OK(rk_stream_copy_to_device(st, c, &zero, sizeof zero));
  rk_arg_t arg = rk_arg_ptr(c);
  int seen[64];
  for (int i = 0; i < 64; ++i) {
    CHECK_OK(rk_function_launch(bump, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, st,
                                &arg, 1));
    CHECK_OK(rk_stream_copy_to_host(st, &seen[i], c, sizeof seen[i]));
  }
  CHECK_OK(rk_stream_synchronize(st));
  for (int i = 0; i < 64; ++i)
    if (!CHECK(seen[i] == i + 1, "copy %d after launch %d saw %d", i, i,
               seen[i]))
      break;
  int probe[4] = {7, 7, 7, 7};
  rk_status_t s = rk_stream_copy_to_host(st, probe, c, sizeof probe);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "stream read past the end: %s", rk_status_name(s));
  CHECK_OK(rk_stream_synchronize(st));
  CHECK(probe[0] == 7 && probe[3] == 7, "a refused stream copy wrote");
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, c);

  enum { kStreams = 4, kN = 1 << 16 };
  rk_stream_t *sts[kStreams] = {0};
  rk_devptr_t da[kStreams] = {0}, db[kStreams] = {0};
  int *in[kStreams] = {0}, *out[kStreams] = {0};
  bool ready = true;
  for (int k = 0; k < kStreams && ready; ++k) {
    in[k] = malloc(kN * sizeof(int));
    out[k] = malloc(kN * sizeof(int));
    ready = in[k] && out[k] &&
            CHECK_OK(rk_context_create_stream(ctx, &sts[k])) &&
            CHECK_OK(rk_context_allocate(ctx, kN * sizeof(int), &da[k])) &&
            CHECK_OK(rk_context_allocate(ctx, kN * sizeof(int), &db[k]));
    for (int i = 0; ready && i < kN; ++i) {
      in[k][i] = i * (k + 1);
      out[k][i] = -1;
    }
  }
  if (ready) {
    for (int k = 0; k < kStreams; ++k) {
      rk_arg_t ab[] = {rk_arg_i32(kN), rk_arg_i32(k + 1), rk_arg_ptr(da[k]),
                       rk_arg_ptr(db[k])};
      rk_arg_t ba[] = {rk_arg_i32(kN), rk_arg_i32(100 * (k + 1)),
                       rk_arg_ptr(db[k]), rk_arg_ptr(da[k])};
      rk_dim3_t grid = rk_dim3(kN / 256, 1, 1), block = rk_dim3(256, 1, 1);
      CHECK_OK(rk_stream_copy_to_device(sts[k], da[k], in[k], kN * 4));
      CHECK_OK(rk_function_launch(add, grid, block, 0, sts[k], ab, 4));
      CHECK_OK(rk_function_launch(add, grid, block, 0, sts[k], ba, 4));
      CHECK_OK(rk_stream_copy_to_host(sts[k], out[k], da[k], kN * 4));
    }
    for (int k = kStreams - 1; k >= 0; --k) {
      CHECK_OK(rk_stream_synchronize(sts[k]));
      int bad = 0;
      for (int i = 0; i < kN; ++i) bad += out[k][i] != in[k][i] + 101 * (k + 1);
      CHECK(bad == 0, "stream %d: %d of %d values wrong", k, bad, (int)kN);
    }
  }
  for (int k = 0; k < kStreams; ++k) {
    if (sts[k]) CHECK_OK(rk_stream_destroy(sts[k]));
    if (da[k]) rk_context_free(ctx, da[k]);
    if (db[k]) rk_context_free(ctx, db[k]);
    free(in[k]);
    free(out[k]);
  }
}

/* 3000 tiny launches, alternating the default stream and a stream, then
 * one synchronization: every one ran. */
static void test_many_launches(rk_context_t *ctx, rk_module_t *mod) {
  enum { kLaunches = 3000 };
  rk_function_t *fn = NULL;
  rk_devptr_t c = 0;
  rk_stream_t *st = NULL;
  int zero = 0, count = -1;
  if (!CHECK_OK(rk_module_get_function(mod, "bump", &fn)) ||
      !CHECK_OK(rk_context_allocate(ctx, sizeof zero, &c)) ||
      !CHECK_OK(rk_context_create_stream(ctx, &st)))
    return;
  CHECK_OK(rk_context_copy_to_device(ctx, c, &zero, sizeof zero));
  rk_arg_t arg = rk_arg_ptr(c);
  uint64_t t0 = rk__now_ns();
  for (int i = 0; i < kLaunches; ++i)
    if (!CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(2, 1, 1), 0,
                                     (i & 1) ? st : NULL, &arg, 1)))
      break;
  CHECK_OK(rk_context_synchronize(ctx));
  printf("%d launches and one synchronization: %.1f us per launch\n", kLaunches,
         (double)(rk__now_ns() - t0) / 1e3 / kLaunches);
  CHECK_OK(rk_context_copy_to_host(ctx, &count, c, sizeof count));
  CHECK(count == 2 * kLaunches, "%d increments, expected %d", count,
        2 * kLaunches);
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, c);
}

/* Four threads launching at once, two on the default stream and two on
 * streams of their own, each with its own counter. */
typedef struct launcher {
  rk_function_t *fn;
  rk_devptr_t counter;
  rk_stream_t *stream; /* NULL: the default stream */
  int launches;
  rk_status_t status;
  char why[256];
} launcher_t;

static void *launch_many(void *arg) {
  launcher_t *l = arg;
  rk_arg_t a = rk_arg_ptr(l->counter);
  for (int i = 0; i < l->launches && l->status == RK_OK; ++i)
    l->status = rk_function_launch(l->fn, rk_dim3(2, 1, 1), rk_dim3(3, 1, 1), 0,
                                   l->stream, &a, 1);
  if (l->status == RK_OK && l->stream)
    l->status = rk_stream_synchronize(l->stream);
  if (l->status != RK_OK)
    snprintf(l->why, sizeof l->why, "%s", rk_last_error());
  return NULL;
}

static void test_threads(rk_context_t *ctx, rk_module_t *mod) {
  enum { kThreads = 4, kLaunches = 500 };
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, "bump", &fn))) return;
  launcher_t l[kThreads];
  pthread_t t[kThreads];
  int zero = 0;
  memset(l, 0, sizeof l);
  for (int i = 0; i < kThreads; ++i) {
    l[i].fn = fn;
    l[i].launches = kLaunches;
    CHECK_OK(rk_context_allocate(ctx, sizeof zero, &l[i].counter));
    CHECK_OK(rk_context_copy_to_device(ctx, l[i].counter, &zero, sizeof zero));
    if (i >= 2) CHECK_OK(rk_context_create_stream(ctx, &l[i].stream));
  }
  for (int i = 0; i < kThreads; ++i)
    pthread_create(&t[i], NULL, launch_many, &l[i]);
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  CHECK_OK(rk_context_synchronize(ctx));
  for (int i = 0; i < kThreads; ++i) {
    int count = -1;
    CHECK(l[i].status == RK_OK, "thread %d: %s: %s", i,
          rk_status_name(l[i].status), l[i].why);
    CHECK_OK(rk_context_copy_to_host(ctx, &count, l[i].counter, sizeof count));
    CHECK(count == 6 * kLaunches, "thread %d's counter is %d, expected %d", i,
          count, 6 * kLaunches);
    rk_context_free(ctx, l[i].counter);
    if (l[i].stream) CHECK_OK(rk_stream_destroy(l[i].stream));
  }
}

/* ---- Driver ------------------------------------------------------------- */

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      if (rk_backend_kind_from_name(argv[++i], &g_kind) != RK_OK ||
          g_kind == RK_BACKEND_AUTO) {
        printf("FAILED: %s is not a backend\n", argv[i]);
        return 1;
      }
    } else {
      printf("usage: cuda_gpu [--backend NAME]\n");
      return 1;
    }
  }
  /* A private, empty kernel cache, before anything opens. */
  rk_test_use_temp_cache();
  pthread_t dog;
  pthread_create(&dog, NULL, watchdog_main, NULL);
  pthread_detach(dog);

  watch("open", 60);
  char why[2048];
  rk_status_t s = RK_OK;
  rk_backend_t *be = open_backend(&s, why, sizeof why);
  if (!be) {
    if (rk_test_failures) return rk_test_finish("cuda_gpu");
    RK_TEST_SKIP("the %s backend does not open here: %s",
                 rk_backend_kind_name(g_kind), why);
  }
  if (rk_backend_device_count(be) == 0) {
    rk_backend_destroy(be);
    if (rk_test_failures) return rk_test_finish("cuda_gpu");
    RK_TEST_SKIP("the %s backend has no device here",
                 rk_backend_kind_name(g_kind));
  }
  if (!CHECK_OK(rk_backend_device_info(be, 0, &g_info)))
    return rk_test_finish("cuda_gpu");
  if (on_cuda()) {
    watch("device info", 60);
    test_device_info(be);
  }
  rk_context_t *ctx = NULL;
  if (CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    watch("memory", 60);
    test_memory(ctx);
    watch("copies", 60);
    test_copies(ctx);
    /* Every later case compiles kernels. A driver without NVRTC beside it
     * can run none of them: say that once instead of failing each case. */
    watch("kernel compiler", 60);
    rk_module_t *probe = NULL;
    rk_status_t ps = rk_context_compile(ctx, kKernels, NULL, &probe);
    if (ps == RK_ERR_UNAVAILABLE) {
      printf("the kernel compiler is unavailable: %s\n", rk_last_error());
      CHECK_OK(rk_context_destroy(ctx));
      CHECK_OK(rk_backend_destroy(be));
      if (rk_test_failures) return rk_test_finish("cuda_gpu");
      RK_TEST_SKIP(
          "the %s backend opens but cannot compile kernels here (for CUDA: "
          "no NVRTC; set RK_NVRTC_LIB)",
          rk_backend_kind_name(g_kind));
    }
    CHECK_OK(ps);
    rk_module_destroy(probe);
    watch("compile", 120);
    test_compile(ctx);
    watch("dynamic shared memory", 60);
    test_dynamic_shared(ctx);
    rk_compile_options_t opt;
    rk_compile_options_init(&opt);
    opt.source_name = "cuda_gpu_kernels.c";
    rk_module_t *mod = NULL;
    watch("kernels", 120);
    if (CHECK_OK(rk_context_compile(ctx, kKernels, &opt, &mod))) {
      watch("launch errors", 60);
      test_launch_errors(ctx, mod);
      watch("streams", 60);
      test_streams(ctx, mod);
      watch("3000 launches", 60);
      test_many_launches(ctx, mod);
      watch("threads", 60);
      test_threads(ctx, mod);
    }
    watch("teardown", 60);
    CHECK_OK(rk_context_destroy(ctx));
  }
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("cuda_gpu");
}
