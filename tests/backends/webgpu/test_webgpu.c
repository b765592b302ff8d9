/* WebGPU backend: loading the implementation, device info, errors that come
 * back from the implementation (validation, shader compilation), pointer
 * offsets and their alignment rule, entries the WGSL target cannot express,
 * compile defines, and many small launches on the default stream and on a
 * stream.
 *
 * Skips (77) with the reason when no WebGPU library or adapter is found. */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rk/rk.h"
#include "rk_test.h"

static rk_backend_t *g_be;

static rk_function_t *function(rk_module_t *m, const char *name) {
  rk_function_t *f = NULL;
  if (!m || !CHECK_OK(rk_module_get_function(m, name, &f))) return NULL;
  return f;
}

/* A library that is not one: RK_ERR_UNAVAILABLE naming the file, and the
 * process goes on. */
static void test_bogus_library(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/libbogus_webgpu.so", rk_test_temp_dir());
  FILE *f = fopen(path, "w");
  if (!CHECK(f != NULL, "cannot create %s", path)) return;
  fputs("this is not a shared library\n", f);
  fclose(f);
  setenv("RK_WEBGPU_LIB", path, 1);
  rk_backend_t *be = NULL;
  CHECK_STATUS(rk_backend_open(RK_BACKEND_WEBGPU, &be), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("libbogus_webgpu.so");
  CHECK_ERROR_HAS("RK_WEBGPU_LIB");
  CHECK(be == NULL, "a failed open set its output");
  /* A missing file is reported the same way. */
  setenv("RK_WEBGPU_LIB", "/nonexistent/libwebgpu_missing.so", 1);
  CHECK_STATUS(rk_backend_open(RK_BACKEND_WEBGPU, &be), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("libwebgpu_missing.so");
  unsetenv("RK_WEBGPU_LIB");
  unlink(path);
}

static void test_device_info(void) {
  rk_device_info_t info;
  if (!CHECK_OK(rk_backend_device_info(g_be, 0, &info))) return;
  printf(
      "device 0: %s (vendor %s), %u threads/block, %llu bytes shared, "
      "largest buffer %llu, caps 0x%x\n",
      info.name, info.vendor, info.max_threads_per_block,
      (unsigned long long)info.shared_mem_per_block,
      (unsigned long long)info.memory_bytes, info.caps);
  CHECK(info.backend == RK_BACKEND_WEBGPU, "backend kind %d", info.backend);
  CHECK(info.name[0] != '\0', "empty device name");
  /* WebGPU's guaranteed minimums. */
  CHECK(info.max_threads_per_block >= 256, "max threads %u",
        info.max_threads_per_block);
  CHECK(info.shared_mem_per_block >= 16384, "shared %llu",
        (unsigned long long)info.shared_mem_per_block);
  CHECK(info.memory_bytes >= (256u << 20), "largest buffer %llu",
        (unsigned long long)info.memory_bytes);
  CHECK(!(info.caps & RK_CAP_PERSISTENT_KERNELS),
        "WebGPU claims persistent kernels");
  /* lavapipe/llvmpipe is a CPU adapter: software, never auto-selected. */
  if (strstr(info.name, "llvmpipe") || strstr(info.name, "SwiftShader"))
    CHECK(info.caps & RK_CAP_SOFTWARE, "a CPU adapter is not marked software");
  if (info.caps & RK_CAP_SOFTWARE) {
    const char *forced = getenv("RK_BACKEND");
    if (!forced || !*forced) {
      rk_backend_t *be = NULL;
      if (CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &be)))
        CHECK(rk_backend_kind(be) != RK_BACKEND_WEBGPU,
              "auto-selection picked a software WebGPU adapter");
      rk_backend_destroy(be);
    }
  }
}

/* WGSL refuses a constant expression that overflows when the shader module
 * is created: RK_ERR_COMPILE with the implementation's message and the
 * generated line. */
static void test_shader_error(rk_context_t *ctx) {
  static const char kSrc[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void overflow(int *p) { p[0] = 1 << 31; }\n";
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "overflow.c";
  rk_module_t *m = NULL;
  rk_test_clear_error();
  CHECK_STATUS(rk_context_compile(ctx, kSrc, &o, &m), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("overflow.c");
  CHECK_ERROR_HAS("overflow");
  CHECK_ERROR_HAS("generated WGSL line");
  CHECK(m == NULL, "a failed compile set its output");
  printf("shader error: %.300s\n", rk_last_error());
  /* A kernel-language error keeps its source location. */
  static const char kBad[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void bad(int *p) {\n"
      "  p[0] = undeclared;\n"
      "}\n";
  o.source_name = "bad.c";
  CHECK_STATUS(rk_context_compile(ctx, kBad, &o, &m), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("bad.c:3:");
}

/* More buffers than a shader stage may bind: the implementation's
 * validation refuses the bind group layout, and its message comes back. */
static void test_validation_error(rk_context_t *ctx) {
  enum { kBuffers = 64 };
  char src[4096];
  int used =
      snprintf(src, sizeof src, "#include <rk/kernel.h>\nRK_KERNEL void many(");
  for (int i = 0; i < kBuffers; ++i)
    used += snprintf(src + used, sizeof src - (size_t)used, "%sint *b%d",
                     i ? ", " : "", i);
  snprintf(src + used, sizeof src - (size_t)used, ") { b0[0] = 1; }\n");
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "many.c";
  rk_module_t *m = NULL;
  rk_test_clear_error();
  rk_status_t s = rk_context_compile(ctx, src, &o, &m);
  CHECK(s == RK_ERR_COMPILE, "a kernel with %d buffers compiled (%s)", kBuffers,
        rk_status_name(s));
  CHECK_ERROR_HAS("many");
  CHECK_ERROR_HAS("storage buffers");
  /* The implementation's own words follow rk's. */
  CHECK(strlen(rk_last_error()) > 120, "message without the detail: %s",
        rk_last_error());
  printf("validation error: %.400s\n", rk_last_error());
  if (m) rk_module_destroy(m);
  /* The context still works and has nothing pending. */
  CHECK_OK(rk_context_synchronize(ctx));
}

// clang-format off
static const char kFill[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void fill(int n, int base, int *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] = base + i;\n"
    "}\n"
    "RK_KERNEL void add(int n, int v, int *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] += v;\n"
    "}\n"
    "RK_KERNEL void shift(int n, const int *src, int *dst) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) dst[i] = src[i];\n"
    "}\n"
    "RK_KERNEL void pair(int *a, int *b) {\n"
    "  a[0] = 11;\n"
    "  b[0] = 22;\n"
    "}\n"
    "RK_KERNEL void put(int *x) {\n"
    "  x[0] = VALUE;\n"
    "}\n";
// clang-format on

static rk_module_t *fill_module(rk_context_t *ctx, const char *value) {
  char def[64];
  snprintf(def, sizeof def, "VALUE=%s", value);
  const char *defines[] = {def, NULL};
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "fill.c";
  o.defines = defines;
  rk_module_t *m = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kFill, &o, &m))) return NULL;
  return m;
}

/* Pointer arguments inside an allocation: offsets that are multiples of the
 * binding alignment work; others are refused with the rule; copies at any
 * offset work. */
static void test_offsets(rk_context_t *ctx) {
  rk_module_t *m = fill_module(ctx, "1");
  rk_function_t *fill = function(m, "fill");
  enum { kN = 1024 };
  rk_devptr_t d = 0;
  if (!fill || !CHECK_OK(rk_context_allocate(ctx, kN * sizeof(int), &d)))
    return;
  int *h = malloc(kN * sizeof *h);
  for (int i = 0; i < kN; ++i) h[i] = -1;
  CHECK_OK(rk_context_copy_to_device(ctx, d, h, kN * sizeof *h));
  /* 256 bytes (64 ints) in: aligned on every WebGPU device. */
  rk_arg_t args[] = {rk_arg_i32(100), rk_arg_i32(1000), rk_arg_ptr(d + 256)};
  CHECK_OK(rk_function_launch(fill, rk_dim3(2, 1, 1), rk_dim3(64, 1, 1), 0,
                              NULL, args, 3));
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_copy_to_host(ctx, h, d, kN * sizeof *h));
  int bad = 0;
  for (int i = 0; i < kN && bad < 3; ++i) {
    int want = i >= 64 && i < 164 ? 1000 + (i - 64) : -1;
    if (!CHECK(h[i] == want, "x[%d] = %d, expected %d", i, h[i], want)) ++bad;
  }
  /* 36 bytes in: not a binding offset WebGPU accepts (its alignment is at
   * least 32, a power of two), so rk copies the rest of the allocation in
   * and out around the launch; the ints around the range stay. */
  for (int i = 0; i < kN; ++i) h[i] = -1;
  CHECK_OK(rk_context_copy_to_device(ctx, d, h, kN * sizeof *h));
  rk_arg_t odd[] = {rk_arg_i32(3), rk_arg_i32(500), rk_arg_ptr(d + 36)};
  CHECK_OK(rk_function_launch(fill, rk_dim3(1, 1, 1), rk_dim3(64, 1, 1), 0,
                              NULL, odd, 3));
  /* Then an aligned launch on the same memory sees those values. */
  rk_function_t *add = function(m, "add");
  rk_arg_t inc[] = {rk_arg_i32(kN), rk_arg_i32(1), rk_arg_ptr(d)};
  if (add)
    CHECK_OK(rk_function_launch(add, rk_dim3(kN / 64, 1, 1), rk_dim3(64, 1, 1),
                                0, NULL, inc, 3));
  CHECK_OK(rk_context_copy_to_host(ctx, h, d, kN * sizeof *h));
  bad = 0;
  for (int i = 0; i < kN && bad < 3; ++i) {
    int want = (i >= 9 && i < 12 ? 500 + (i - 9) : -1) + 1;
    if (!CHECK(h[i] == want, "unaligned: x[%d] = %d, expected %d", i, h[i],
               want))
      ++bad;
  }
  /* Not a whole number of words: refused. */
  rk_arg_t half[] = {rk_arg_i32(1), rk_arg_i32(5), rk_arg_ptr(d + 2)};
  CHECK_STATUS(rk_function_launch(fill, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, half, 3),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("multiple of 4");
  /* A const argument sharing its allocation with a writable one reads a
   * copy taken at launch: a shifted copy within one allocation works like
   * memmove. */
  rk_function_t *shift = function(m, "shift");
  rk_arg_t sh[] = {rk_arg_i32(8), rk_arg_ptr(d), rk_arg_ptr(d + 4)};
  int before[9], after[9];
  CHECK_OK(rk_context_copy_to_host(ctx, before, d, sizeof before));
  if (shift)
    CHECK_OK(rk_function_launch(shift, rk_dim3(1, 1, 1), rk_dim3(8, 1, 1), 0,
                                NULL, sh, 3));
  CHECK_OK(rk_context_copy_to_host(ctx, after, d, sizeof after));
  CHECK(
      after[0] == before[0] && memcmp(after + 1, before, 8 * sizeof(int)) == 0,
      "shift by one: %d %d %d ... %d, expected %d %d %d ... %d", after[0],
      after[1], after[2], after[8], before[0], before[0], before[1], before[7]);
  /* Two writable arguments in one allocation: fine when both are aligned,
   * refused when one would need a copy (its write-back would overwrite the
   * other's writes). */
  rk_function_t *pair = function(m, "pair");
  rk_arg_t ok2[] = {rk_arg_ptr(d), rk_arg_ptr(d + 256)};
  if (pair)
    CHECK_OK(rk_function_launch(pair, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                NULL, ok2, 2));
  int p0 = 0, p1 = 0;
  CHECK_OK(rk_context_copy_to_host(ctx, &p0, d, 4));
  CHECK_OK(rk_context_copy_to_host(ctx, &p1, d + 256, 4));
  CHECK(p0 == 11 && p1 == 22, "pair wrote %d, %d", p0, p1);
  rk_arg_t bad2[] = {rk_arg_ptr(d), rk_arg_ptr(d + 4)};
  if (pair)
    CHECK_STATUS(rk_function_launch(pair, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                    NULL, bad2, 2),
                 RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("minStorageBufferOffsetAlignment");
  /* NULL buffers (a const and a writable one in the same launch). */
  rk_arg_t nulls[] = {rk_arg_i32(0), rk_arg_ptr(0), rk_arg_ptr(0)};
  if (shift)
    CHECK_OK(rk_function_launch(shift, rk_dim3(1, 1, 1), rk_dim3(8, 1, 1), 0,
                                NULL, nulls, 3));
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_copy_to_host(ctx, h, d, kN * sizeof *h));
  /* Copies at odd offsets and lengths keep the bytes around them. */
  unsigned char bytes[7] = {1, 2, 3, 4, 5, 6, 7}, back[16];
  CHECK_OK(rk_context_copy_to_device(ctx, d + 3, bytes, sizeof bytes));
  CHECK_OK(rk_context_copy_to_host(ctx, back, d, sizeof back));
  unsigned char want[16];
  for (int i = 0; i < 4; ++i) memcpy(want + 4 * i, &h[i], 4);
  memcpy(want + 3, bytes, sizeof bytes);
  CHECK(memcmp(back, want, sizeof want) == 0,
        "odd copy: %02x %02x %02x %02x %02x %02x %02x %02x %02x %02x %02x",
        back[0], back[1], back[2], back[3], back[4], back[5], back[6], back[7],
        back[8], back[9], back[10]);
  free(h);
  rk_context_free(ctx, d);
  rk_module_destroy(m);
}

/* A kernel the WGSL target cannot express (64-bit) is a compile error
 * naming the type and the target; defines reach the kernel. */
static void test_target_refusal_and_defines(rk_context_t *ctx) {
  static const char kWide[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void wide(int64_t v, int64_t *x) { x[0] = v; }\n";
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "wide.c";
  rk_module_t *w = NULL;
  CHECK_STATUS(rk_context_compile(ctx, kWide, &o, &w), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("wide.c:2:");
  CHECK_ERROR_HAS("wgsl");
  rk_module_t *m = fill_module(ctx, "77");
  rk_function_t *put = function(m, "put");
  if (!put) return;
  CHECK(rk_module_function_count(m) == 5, "%zu functions",
        rk_module_function_count(m));
  rk_devptr_t d = 0;
  CHECK_OK(rk_context_allocate(ctx, 64, &d));
  rk_arg_t pa = rk_arg_ptr(d);
  CHECK_OK(rk_function_launch(put, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                              &pa, 1));
  int v = 0;
  CHECK_OK(rk_context_copy_to_host(ctx, &v, d, sizeof v));
  CHECK(v == 77, "VALUE define: got %d", v);
  rk_context_free(ctx, d);
  rk_module_destroy(m);
}

/* Many small launches, each with its own by-value argument: every one must
 * see its own value (the parameter slots are not shared between launches
 * in flight). */
static void test_many_launches(rk_context_t *ctx) {
  enum { kN = 256, kLaunches = 3000 };
  rk_module_t *m = fill_module(ctx, "1");
  rk_function_t *add = function(m, "add");
  rk_devptr_t d = 0;
  rk_stream_t *st = NULL;
  if (!add || !CHECK_OK(rk_context_allocate(ctx, kN * sizeof(int), &d)) ||
      !CHECK_OK(rk_context_create_stream(ctx, &st)))
    return;
  int *h = calloc(kN, sizeof *h);
  for (int round = 0; round < 2; ++round) {
    rk_stream_t *on = round == 0 ? NULL : st;
    memset(h, 0, kN * sizeof *h);
    CHECK_OK(rk_context_copy_to_device(ctx, d, h, kN * sizeof *h));
    long long want = 0;
    for (int i = 0; i < kLaunches; ++i) {
      rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(i % 7 - 3), rk_arg_ptr(d)};
      want += i % 7 - 3;
      if (!CHECK_OK(rk_function_launch(add, rk_dim3(kN / 64, 1, 1),
                                       rk_dim3(64, 1, 1), 0, on, args, 3)))
        break;
    }
    if (on)
      CHECK_OK(rk_stream_synchronize(on));
    else
      CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, h, d, kN * sizeof *h));
    int bad = 0;
    for (int i = 0; i < kN && bad < 3; ++i)
      if (!CHECK(h[i] == want,
                 "%s: x[%d] = %d after %d launches, expected %lld",
                 on ? "stream" : "default stream", i, h[i], kLaunches, want))
        ++bad;
  }
  free(h);
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, d);
  rk_module_destroy(m);
}

/* Streams run on the device's one queue in order, after the host queued
 * them; a copy whose source was freed before it ran fails at the stream's
 * synchronization with the address, and the stream goes on working. */
static void test_stream_async_error(rk_context_t *ctx) {
  static const char kWait[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void wait_flag(int *flag, int *seen, uint32_t max_spins) {\n"
      "  uint32_t k = 0;\n"
      "  while (rk_atomic_add_i32(&flag[0], 0) == 0 && k < max_spins) ++k;\n"
      "  seen[0] = rk_atomic_add_i32(&flag[0], 0);\n"
      "}\n";
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "wait.c";
  rk_module_t *m = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kWait, &o, &m))) return;
  rk_function_t *wait = function(m, "wait_flag");
  rk_stream_t *st = NULL;
  rk_devptr_t flag = 0, seen = 0, src = 0;
  int zero = 0, one = 1, got = -1;
  unsigned char dst[256];
  memset(dst, 0x11, sizeof dst);
  CHECK_OK(rk_context_create_stream(ctx, &st));
  CHECK_OK(rk_context_allocate(ctx, 4, &flag));
  CHECK_OK(rk_context_allocate(ctx, 4, &seen));
  CHECK_OK(rk_context_allocate(ctx, sizeof dst, &src));
  if (!wait || !st || !flag || !seen || !src) return;
  CHECK_OK(rk_context_copy_to_device(ctx, flag, &zero, 4));
  rk_arg_t args[] = {rk_arg_ptr(flag), rk_arg_ptr(seen), rk_arg_u32(1u << 31)};
  CHECK_OK(rk_function_launch(wait, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, st,
                              args, 3));
  CHECK_OK(rk_stream_copy_to_host(st, dst, src, sizeof dst));
  CHECK_OK(rk_context_free(ctx, src));
  CHECK_OK(rk_context_copy_to_device(ctx, flag, &one, 4));
  char addr[32];
  snprintf(addr, sizeof addr, "%llx", (unsigned long long)src);
  CHECK_STATUS(rk_stream_synchronize(st), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS(addr);
  CHECK(dst[0] == 0x11 && dst[255] == 0x11, "a failed copy wrote its target");
  /* The launch before it ran, and saw the flag. */
  CHECK_OK(rk_context_copy_to_host(ctx, &got, seen, 4));
  CHECK(got == 1, "wait_flag saw %d", got);
  /* Reported once; the stream works afterwards. */
  CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_stream_copy_to_device(st, seen, &zero, 4));
  CHECK_OK(rk_stream_copy_to_host(st, &got, seen, 4));
  CHECK_OK(rk_stream_synchronize(st));
  CHECK(got == 0, "stream copy after the error read %d", got);
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, flag);
  rk_context_free(ctx, seen);
  rk_module_destroy(m);
}

/* A copy larger than the staging buffer's piece (64 MiB) at an odd
 * offset comes back whole. */
static void test_large_copy(rk_context_t *ctx) {
  const size_t n = ((size_t)70 << 20) + 5;
  unsigned char *h = malloc(n), *back = malloc(n);
  rk_devptr_t d = 0;
  if (!h || !back || !CHECK_OK(rk_context_allocate(ctx, n + 3, &d))) {
    free(h);
    free(back);
    return;
  }
  for (size_t i = 0; i < n; ++i) h[i] = (unsigned char)(i * 7 + (i >> 20));
  CHECK_OK(rk_context_copy_to_device(ctx, d + 3, h, n));
  memset(back, 0, n);
  CHECK_OK(rk_context_copy_to_host(ctx, back, d + 3, n));
  size_t bad = 0;
  while (bad < n && back[bad] == h[bad]) ++bad;
  CHECK(bad == n, "%zu-byte copy differs at byte %zu", n, bad);
  rk_context_free(ctx, d);
  free(h);
  free(back);
}

/* Several threads launching and copying on one context at once, each on
 * its own stream (and one on the default stream). */
typedef struct worker {
  rk_context_t *ctx;
  rk_function_t *add;
  bool use_stream;
  int result;
  rk_status_t status;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  enum { kN = 128, kLaunches = 200 };
  rk_stream_t *st = NULL;
  rk_devptr_t d = 0;
  int *h = calloc(kN, sizeof *h);
  w->status = rk_context_allocate(w->ctx, kN * sizeof *h, &d);
  if (w->status == RK_OK && w->use_stream)
    w->status = rk_context_create_stream(w->ctx, &st);
  if (w->status == RK_OK)
    w->status = st ? rk_stream_copy_to_device(st, d, h, kN * sizeof *h)
                   : rk_context_copy_to_device(w->ctx, d, h, kN * sizeof *h);
  for (int i = 0; i < kLaunches && w->status == RK_OK; ++i) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(1), rk_arg_ptr(d)};
    w->status = rk_function_launch(w->add, rk_dim3(kN / 64, 1, 1),
                                   rk_dim3(64, 1, 1), 0, st, args, 3);
  }
  if (w->status == RK_OK)
    w->status = st ? rk_stream_copy_to_host(st, h, d, kN * sizeof *h)
                   : rk_context_copy_to_host(w->ctx, h, d, kN * sizeof *h);
  if (w->status == RK_OK && st) w->status = rk_stream_synchronize(st);
  w->result = h[kN - 1];
  for (int i = 0; i < kN; ++i)
    if (h[i] != w->result) w->result = -1;
  if (st) rk_stream_destroy(st);
  if (d) rk_context_free(w->ctx, d);
  free(h);
  return NULL;
}

static void test_threads(rk_context_t *ctx) {
  enum { kThreads = 4 };
  rk_module_t *m = fill_module(ctx, "1");
  rk_function_t *add = function(m, "add");
  if (!add) return;
  pthread_t t[kThreads];
  worker_t w[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    w[i] = (worker_t){ctx, add, i != 0, 0, RK_OK};
    pthread_create(&t[i], NULL, worker_main, &w[i]);
  }
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(t[i], NULL);
    CHECK(w[i].status == RK_OK, "thread %d: %s", i,
          rk_status_name(w[i].status));
    CHECK(w[i].result == 200, "thread %d (%s): %d after 200 launches", i,
          w[i].use_stream ? "stream" : "default stream", w[i].result);
  }
  CHECK_OK(rk_context_synchronize(ctx));
  rk_module_destroy(m);
}

/* llvmpipe ends every loop of an invocation once 65535 loop iterations have
 * run in it (over all its loops and the invocations of its SIMD group) and
 * says nothing. Before the loop guard, spin(70000) came back as RK_OK with
 * x after 65535 steps. Now every launch that was cut short fails the read
 * (or synchronization) that follows it with RK_ERR_LAUNCH naming the
 * kernel; launches under the limit give the right answer; a hardware
 * adapter runs them all. */
static const char kSpinSource[] =
    "#include <rk/kernel.h>\n"
    "static uint32_t steps(uint32_t x, uint32_t n) {\n"
    "  for (uint32_t i = 0u; i < n; i++) x = x * 1664525u + 1013904223u;\n"
    "  return x;\n"
    "}\n"
    "RK_KERNEL void spin(uint32_t *out, uint32_t n, uint32_t split) {\n"
    "  uint32_t t = rk_global_idx_x();\n"
    "  uint32_t x = t;\n"
    "  if (split == 0u) {\n"
    "    x = steps(x, n);\n"
    "  } else if (split == 2u) {\n"
    "    for (uint32_t r = 0u; r < 3u; r++) x = steps(x, n / 3u);\n"
    "  } else if (t % 2u == 0u) {\n"
    "    x = steps(x, n);\n"
    "  } else {\n"
    "    uint32_t i = 0u;\n"
    "    while (i < n) { x = x * 1664525u + 1013904223u; i++; }\n"
    "  }\n"
    "  out[t] = x;\n"
    "}\n";

enum { kSpinThreads = 16 };

/* split 2 runs n / 3 steps three times (nested loops). */
static uint32_t spin_ref(uint32_t t, uint32_t n, uint32_t split) {
  uint32_t x = t;
  if (split == 2) n = n / 3u * 3u;
  for (uint32_t i = 0; i < n; ++i) x = x * 1664525u + 1013904223u;
  return x;
}

/* Launches spin(n, split) on `st` (NULL: the default stream) and reads
 * the result: the status of the read (a stream's: its synchronization)
 * and, in *out_right, whether every thread's result is right. */
static rk_status_t spin_run(rk_context_t *ctx, rk_function_t *f, rk_devptr_t d,
                            uint32_t n, uint32_t split, rk_stream_t *st,
                            bool *out_right) {
  uint32_t h[kSpinThreads];
  memset(h, 0, sizeof h);
  rk_arg_t args[] = {rk_arg_ptr(d), rk_arg_u32(n), rk_arg_u32(split)};
  rk_status_t s = rk_function_launch(
      f, (rk_dim3_t){1, 1, 1}, (rk_dim3_t){kSpinThreads, 1, 1}, 0, st, args, 3);
  if (s != RK_OK) return s;
  if (st) {
    s = rk_stream_copy_to_host(st, h, d, sizeof h);
    if (s == RK_OK) s = rk_stream_synchronize(st);
  } else {
    s = rk_context_copy_to_host(ctx, h, d, sizeof h);
  }
  *out_right = true;
  for (uint32_t t = 0; t < kSpinThreads; ++t)
    if (h[t] != spin_ref(t, n, split)) *out_right = false;
  return s;
}

/* The loop guard's error for spin. */
static void launch_error(rk_status_t s) {
  CHECK(s == RK_ERR_LAUNCH, "%s, not launch error", rk_status_name(s));
  CHECK_ERROR_HAS("kernel 'spin'");
}

static void test_loop_limit(rk_context_t *ctx) {
  rk_device_info_t info;
  if (!CHECK_OK(rk_backend_device_info(g_be, 0, &info))) return;
  const bool limited = strstr(info.name, "llvmpipe") != NULL;
  rk_module_t *m = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kSpinSource, NULL, &m))) return;
  rk_function_t *f = function(m, "spin");
  rk_devptr_t d = 0;
  if (!f || !CHECK_OK(rk_context_allocate(ctx, 4096, &d))) {
    rk_module_destroy(m);
    return;
  }
  bool right = false;
  /* Under the limit: right, no error. */
  CHECK_OK(spin_run(ctx, f, d, 60000, 0, NULL, &right));
  CHECK(right, "spin(60000) gave a wrong result");
  /* Over it: never a wrong answer with RK_OK. */
  rk_status_t s = spin_run(ctx, f, d, 70000, 0, NULL, &right);
  if (limited) {
    CHECK(s == RK_ERR_LAUNCH, "spin(70000) on %s: %s (result %s)", info.name,
          rk_status_name(s), right ? "right" : "wrong");
    CHECK_ERROR_HAS("kernel 'spin'");
    CHECK_ERROR_HAS("65535 loop iterations");
    CHECK(!right, "llvmpipe ran spin(70000) to the end");
  } else {
    CHECK_OK(s);
    CHECK(right, "spin(70000) gave a wrong result");
  }
  /* The error is reported once: the next launch is judged on its own. */
  CHECK_OK(spin_run(ctx, f, d, 60000, 0, NULL, &right));
  CHECK(right, "spin(60000) after an error gave a wrong result");
  /* Invocations of one SIMD group looping in different loops: 40000 each
   * is under the limit per invocation, but llvmpipe counts the group's. */
  s = spin_run(ctx, f, d, 40000, 1, NULL, &right);
  CHECK(s != RK_OK || right, "split spin(40000): RK_OK with a wrong result");
  if (limited) launch_error(s);
  CHECK_OK(spin_run(ctx, f, d, 20000, 1, NULL, &right));
  CHECK(right, "split spin(20000) gave a wrong result");
  /* Nested loops (a helper's loop inside the kernel's): counted together. */
  CHECK_OK(spin_run(ctx, f, d, 60000, 2, NULL, &right));
  CHECK(right, "nested spin(60000) gave a wrong result");
  s = spin_run(ctx, f, d, 90000, 2, NULL, &right);
  CHECK(s != RK_OK || right, "nested spin(90000): RK_OK with a wrong result");
  if (limited) launch_error(s);
  /* Found by a synchronization as well, and on a stream. */
  rk_arg_t args[] = {rk_arg_ptr(d), rk_arg_u32(70000), rk_arg_u32(0)};
  CHECK_OK(rk_function_launch(f, (rk_dim3_t){1, 1, 1},
                              (rk_dim3_t){kSpinThreads, 1, 1}, 0, NULL, args,
                              3));
  s = rk_context_synchronize(ctx);
  if (limited) {
    launch_error(s);
  } else {
    CHECK_OK(s);
  }
  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(ctx, &st))) {
    s = spin_run(ctx, f, d, 70000, 0, st, &right);
    CHECK(s != RK_OK || right, "spin(70000) on a stream: RK_OK, wrong result");
    if (limited) launch_error(s);
    CHECK_OK(spin_run(ctx, f, d, 100, 0, st, &right));
    CHECK(right, "spin(100) on a stream gave a wrong result");
    CHECK_OK(rk_stream_destroy(st));
  }
  /* More launches than the guard has slots before one read (the slots are
   * checked and reused), the last one cut short. */
  rk_arg_t few[] = {rk_arg_ptr(d), rk_arg_u32(100), rk_arg_u32(0)};
  for (int i = 0; i < 300; ++i)
    if (!CHECK_OK(rk_function_launch(f, (rk_dim3_t){1, 1, 1},
                                     (rk_dim3_t){kSpinThreads, 1, 1}, 0, NULL,
                                     few, 3)))
      break;
  s = spin_run(ctx, f, d, 70000, 0, NULL, &right);
  CHECK(s != RK_OK || right, "spin(70000) after 300 launches: RK_OK, wrong");
  if (limited) launch_error(s);
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_free(ctx, d));
  rk_module_destroy(m);
}

int main(void) {
  rk_test_use_temp_cache();
  test_bogus_library();
  rk_status_t s = rk_backend_open(RK_BACKEND_WEBGPU, &g_be);
  if (s != RK_OK) {
    if (rk_test_failures) return rk_test_finish("webgpu");
    RK_TEST_SKIP("no WebGPU implementation: %s", rk_last_error());
  }
  if (rk_backend_device_count(g_be) < 1) {
    rk_backend_destroy(g_be);
    if (rk_test_failures) return rk_test_finish("webgpu");
    RK_TEST_SKIP("the WebGPU implementation found no adapter");
  }
  test_device_info();
  rk_context_t *ctx = NULL;
  if (CHECK_OK(rk_backend_create_context(g_be, 0, &ctx))) {
    test_shader_error(ctx);
    test_validation_error(ctx);
    test_offsets(ctx);
    test_target_refusal_and_defines(ctx);
    test_many_launches(ctx);
    test_stream_async_error(ctx);
    test_large_copy(ctx);
    test_threads(ctx);
    test_loop_limit(ctx);
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_destroy(ctx));
  }
  CHECK_OK(rk_backend_destroy(g_be));
  return rk_test_finish("webgpu");
}
