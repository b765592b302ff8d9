/* OpenCL backend: loading the ICD loader (and failing to), the error table,
 * build errors with the generated line, device information, pointer
 * arguments at offsets, pointers printed as buffer + offset, many small
 * launches, and a queued copy whose memory is freed before it runs.
 *
 * Runs on whatever OpenCL platform is installed (PoCL's CPU device in CI);
 * exits 77 with the reason when there is none. */
#define RK_TEST_IMPLEMENTATION
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/opencl/opencl.h"
#include "rk_test.h"

/* ---- Loader ------------------------------------------------------------- */

static void test_loader_failures(void) {
  rk_backend_t *be = NULL;
  setenv("RK_OPENCL_LIB", "/nonexistent/rk-test/libOpenCL.so.1", 1);
  CHECK_STATUS(rk_backend_open(RK_BACKEND_OPENCL, &be), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("/nonexistent/rk-test/libOpenCL.so.1");
  CHECK_ERROR_HAS("RK_OPENCL_LIB");
  CHECK(be == NULL, "a failed open set *out_backend");

  /* A library that loads but is not OpenCL names what it lacks. */
  setenv("RK_OPENCL_LIB", "libm.so.6", 1);
  CHECK_STATUS(rk_backend_open(RK_BACKEND_OPENCL, &be), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("clGetPlatformIDs");
  CHECK(be == NULL, "a failed open set *out_backend");

  /* An explicit RK_BACKEND=opencl that cannot open is an error, never a
   * silent fallback to another backend. */
  setenv("RK_OPENCL_LIB", "/nonexistent/rk-test/libOpenCL.so.1", 1);
  setenv("RK_BACKEND", "opencl", 1);
  CHECK_STATUS(rk_backend_open(RK_BACKEND_AUTO, &be), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("RK_BACKEND=opencl");
  unsetenv("RK_BACKEND");
  unsetenv("RK_OPENCL_LIB");
}

/* A loader without drivers: RK_ERR_UNAVAILABLE saying there is no
 * platform. In a child process, since ICD loaders read their vendor list
 * once per process. */
static void test_no_platform(void) {
  char empty[4096];
  snprintf(empty, sizeof empty, "%s/no-vendors", rk_test_temp_dir());
  if (mkdir(empty, 0700) != 0) {
    CHECK(false, "mkdir %s failed", empty);
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("OCL_ICD_VENDORS", empty, 1);
    rk_backend_t *be = NULL;
    rk_status_t s = rk_backend_open(RK_BACKEND_OPENCL, &be);
    if (s == RK_ERR_UNAVAILABLE &&
        strstr(rk_last_error(), "no OpenCL platform"))
      _exit(0);
    if (s == RK_ERR_UNAVAILABLE && strstr(rk_last_error(), "ICD loader"))
      _exit(3); /* no loader here at all: nothing to check */
    printf("  without drivers: %s: %s\n", rk_status_name(s), rk_last_error());
    fflush(stdout);
    _exit(1);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/waitpid failed");
  CHECK(WIFEXITED(status) &&
            (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3),
        "opening OpenCL with no drivers registered did not report a missing "
        "platform (status 0x%x)",
        status);
}

/* ---- Error table -------------------------------------------------------- */

static void test_error_table(void) {
  static const struct {
    cl_int code;
    const char *name;
    rk_status_t status;
  } kCases[] = {
      {-52, "CL_INVALID_KERNEL_ARGS", RK_ERR_LAUNCH},
      {-11, "CL_BUILD_PROGRAM_FAILURE", RK_ERR_COMPILE},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE", RK_ERR_OUT_OF_MEMORY},
      {-54, "CL_INVALID_WORK_GROUP_SIZE", RK_ERR_LAUNCH},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR", RK_ERR_UNAVAILABLE},
      {-30, "CL_INVALID_VALUE", RK_ERR_INVALID_ARGUMENT},
      {0, "CL_SUCCESS", RK_OK},
  };
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    CHECK(strcmp(rk__cl_error_name(kCases[i].code), kCases[i].name) == 0,
          "code %d is named %s, expected %s", (int)kCases[i].code,
          rk__cl_error_name(kCases[i].code), kCases[i].name);
    CHECK(rk__cl_error_status(kCases[i].code) == kCases[i].status,
          "code %d maps to %s", (int)kCases[i].code,
          rk_status_name(rk__cl_error_status(kCases[i].code)));
  }
  CHECK(rk__cl_error_status(-9999) == RK_ERR_INTERNAL, "unknown code");
  CHECK(strstr(rk__cl_error_name(-9999), "unknown") != NULL, "unknown name");
  /* Every name in the table is distinct and starts with CL_. */
  for (cl_int c = -80; c <= 0; ++c) {
    const char *n = rk__cl_error_name(c);
    if (strstr(n, "unknown")) continue;
    CHECK(strncmp(n, "CL_", 3) == 0, "code %d named %s", (int)c, n);
    for (cl_int d = c + 1; d <= 0; ++d)
      CHECK(strcmp(n, rk__cl_error_name(d)) != 0, "codes %d and %d share %s",
            (int)c, (int)d, n);
  }
  rk_test_clear_error();
  CHECK(rk__cl_fail(-52, "clEnqueueNDRangeKernel") == RK_ERR_LAUNCH,
        "rk__cl_fail status");
  CHECK_ERROR_HAS("CL_INVALID_KERNEL_ARGS");
  CHECK_ERROR_HAS("clEnqueueNDRangeKernel");
}

/* ---- Pointer parameters as buffer + offset ----------------------------- */

static int count_lines(const char *text) {
  int n = 0;
  for (const char *p = text; *p; ++p) n += *p == '\n';
  return n;
}

/* The OpenCL C the backend compiles splits every pointer launch parameter
 * (the handler's status buffer too) into a buffer and an offset, keeps
 * every line where the plain output has it (diagnostics name generated
 * lines), and the option exists for OpenCL only. Running at offsets is
 * tested on the device below. */
static void test_buffer_offsets(void) {
  static const char kSource[] =
      "#include <rk/kernel.h>\n"
      "typedef struct { int v; } msg_t;\n"
      "RK_KERNEL void f(int n, const float *x, float *restrict y) {\n"
      "  float *t = (float *)rk_dynamic_shared();\n"
      "  t[0] = x[0];\n"
      "  if (n > 0) y[0] = t[0];\n"
      "}\n"
      "RK_HANDLER int h(const msg_t *in, msg_t *out) {\n"
      "  out->v = in->v;\n"
      "  return 0;\n"
      "}\n";
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  char *plain = NULL, *split = NULL;
  if (!CHECK_OK(rk_transpile(kSource, RK_TARGET_OPENCL, &o, &plain))) return;
  o.opencl_buffer_offsets = true;
  if (!CHECK_OK(rk_transpile(kSource, RK_TARGET_OPENCL, &o, &split))) {
    free(plain);
    return;
  }
  CHECK(count_lines(plain) == count_lines(split), "%d lines became %d:\n%s",
        count_lines(plain), count_lines(split), split);
  static const char *const kWant[] = {
      "__global const float *rk_pb_x, ulong rk_po_x",
      "__global float *rk_pb_y, ulong rk_po_y",
      "__local uint4 *rk_dyn_shared",
      ("__global float *restrict y = (__global float *)((__global uchar "
       "*)rk_pb_y + rk_po_y);"),
      "rk_pb_rk_status, ulong rk_po_rk_status",
  };
  for (size_t i = 0; i < sizeof kWant / sizeof kWant[0]; ++i)
    CHECK(strstr(split, kWant[i]) != NULL, "no '%s' in:\n%s", kWant[i], split);
  free(plain);
  free(split);
  char *text = NULL;
  CHECK_STATUS(rk_transpile(kSource, RK_TARGET_CUDA, &o, &text),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("opencl_buffer_offsets");
  CHECK(text == NULL, "text returned with an error");
}

/* ---- On a device -------------------------------------------------------- */

static void test_device_info(rk_backend_t *be) {
  int n = rk_backend_device_count(be);
  CHECK(n >= 1, "%d devices", n);
  bool all_software = true;
  for (int d = 0; d < n; ++d) {
    rk_device_info_t info;
    if (!CHECK_OK(rk_backend_device_info(be, d, &info))) continue;
    const ocl_device_t *dev = &((ocl_backend_t *)be)->devices[d];
    printf(
        "device %d: %s (%s, %s), %u units, %llu bytes, %u threads/block, "
        "%llu shared, caps 0x%x\n",
        d, info.name, info.vendor, dev->platform_name, info.compute_units,
        (unsigned long long)info.memory_bytes, info.max_threads_per_block,
        (unsigned long long)info.shared_mem_per_block, info.caps);
    CHECK(info.backend == RK_BACKEND_OPENCL, "backend %d", (int)info.backend);
    CHECK(info.name[0] != '\0', "device %d has no name", d);
    CHECK(info.max_threads_per_block >= 1, "max threads 0");
    CHECK(info.memory_bytes > 0, "no memory");
    CHECK(info.shared_mem_per_block >= 1024,
          "%llu bytes of local memory (OpenCL guarantees 32 KiB on GPUs)",
          (unsigned long long)info.shared_mem_per_block);
    CHECK(info.compute_units >= 1, "no compute units");
    bool cpu = (dev->type & RK_CL_DEVICE_TYPE_CPU) != 0;
    bool emulated = cpu || strstr(info.name, "llvmpipe") ||
                    strstr(info.name, "lavapipe") ||
                    strstr(info.name, "SwiftShader");
    CHECK(emulated == ((info.caps & RK_CAP_SOFTWARE) != 0),
          "device %d: CPU type %d, emulated %d, but software flag %d", d, cpu,
          emulated, (info.caps & RK_CAP_SOFTWARE) != 0);
    CHECK(!(info.caps & RK_CAP_PERSISTENT_KERNELS),
          "OpenCL claims resident kernels");
    if (d > 0)
      CHECK(!(dev[-1].type & RK_CL_DEVICE_TYPE_CPU) || cpu,
            "a CPU device is listed before a non-CPU one");
    all_software = all_software && emulated;
  }
  CHECK_STATUS(rk_backend_device_info(be, n, NULL), RK_ERR_OUT_OF_RANGE);
  /* Automatic selection never takes a software device over the CPU
   * backend. */
  if (all_software && !getenv("RK_BACKEND")) {
    rk_backend_t *autob = NULL;
    if (CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &autob))) {
      CHECK(rk_backend_kind(autob) != RK_BACKEND_OPENCL,
            "auto-selection chose OpenCL with only software devices");
      CHECK_OK(rk_backend_destroy(autob));
    }
  }
}

static void test_build_error(rk_context_t *ctx) {
  static const char kBad[] =
      "__kernel void k(__global int *x) {\n"
      "  int fine = 1;\n"
      "  x[0] = fine + no_such_identifier_qq;\n"
      "}\n";
  cl_program prog = NULL;
  bool hit = false;
  CHECK_STATUS(
      rk__ocl_get_program(ocl_ctx(ctx), kBad, "bad.cl", true, &prog, &hit),
      RK_ERR_COMPILE);
  CHECK(prog == NULL, "a failed build returned a program");
  CHECK_ERROR_HAS("bad.cl");
  CHECK_ERROR_HAS("CL_BUILD_PROGRAM_FAILURE");
  CHECK_ERROR_HAS("no_such_identifier_qq"); /* the build log */
  CHECK_ERROR_HAS("generated line 3:");     /* the offending line */

  /* Transpiler errors point at the user's line even with defines in
   * front. */
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

  /* Defines reach the kernel; a second compile of the same text is a cache
   * hit, unless no_cache. */
  static const char kGood[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void k(int *x) { x[0] = N * 2; }\n";
  rk_module_t *a = NULL, *b = NULL, *c = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kGood, &opt, &a))) return;
  CHECK(!rk_module_cache_hit(a), "first compile was a cache hit");
  if (CHECK_OK(rk_context_compile(ctx, kGood, &opt, &b)))
    CHECK(rk_module_cache_hit(b), "second compile was not a cache hit");
  opt.no_cache = true;
  if (CHECK_OK(rk_context_compile(ctx, kGood, &opt, &c)))
    CHECK(!rk_module_cache_hit(c), "no_cache compile was a cache hit");
  rk_function_t *fn = NULL;
  rk_devptr_t d = 0;
  int v = 0;
  if (b && CHECK_OK(rk_module_get_function(b, "k", &fn)) &&
      CHECK_OK(rk_context_allocate(ctx, sizeof v, &d))) {
    rk_arg_t arg = rk_arg_ptr(d);
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                                &arg, 1));
    CHECK_OK(rk_context_copy_to_host(ctx, &v, d, sizeof v));
    CHECK(v == 6, "kernel built with N=3 wrote %d", v);
    rk_context_free(ctx, d);
  }
  rk_module_destroy(a);
  rk_module_destroy(b);
  rk_module_destroy(c);
}

static const char kKernels[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void add(int n, int k, const int *a, int *b) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) b[i] = a[i] + k;\n"
    "}\n"
    "RK_KERNEL void bump(int *c) { rk_atomic_add_i32(&c[0], 1); }\n"
    "RK_KERNEL void wait_flag(int *flag, int *seen, uint32_t max_spins) {\n"
    "  uint32_t k = 0;\n"
    "  while (rk_atomic_add_i32(&flag[0], 0) == 0 && k < max_spins) ++k;\n"
    "  seen[0] = rk_atomic_add_i32(&flag[0], 0);\n"
    "}\n";

/* Pointer arguments anywhere inside an allocation (element-aligned, but
 * not aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN). */
static void test_offsets(rk_context_t *ctx, rk_module_t *mod) {
  enum { kN = 300, kBytes = 8192 };
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, "add", &fn))) return;
  rk_devptr_t a = 0, b = 0;
  if (!CHECK_OK(rk_context_allocate(ctx, kBytes, &a)) ||
      !CHECK_OK(rk_context_allocate(ctx, kBytes, &b)))
    return;
  static const size_t kOffsets[][2] = {
      {0, 0}, {4, 0}, {0, 12}, {36, 260}, {1028, 4}, {4100, 2048}, {8, 7000}};
  int host[kBytes / 4], back[kBytes / 4];
  for (size_t c = 0; c < sizeof kOffsets / sizeof kOffsets[0]; ++c) {
    size_t oa = kOffsets[c][0], ob = kOffsets[c][1];
    int n = kN;
    if (ob + (size_t)n * 4 > kBytes) n = (int)((kBytes - ob) / 4);
    for (int i = 0; i < kBytes / 4; ++i) host[i] = i * 7 + (int)c;
    CHECK_OK(rk_context_copy_to_device(ctx, a, host, kBytes));
    memset(back, 0xAB, sizeof back);
    CHECK_OK(rk_context_copy_to_device(ctx, b, back, kBytes));
    rk_arg_t args[] = {rk_arg_i32(n), rk_arg_i32(1000), rk_arg_ptr(a + oa),
                       rk_arg_ptr(b + ob)};
    CHECK_OK(rk_function_launch(fn, rk_dim3((uint32_t)(n + 63) / 64, 1, 1),
                                rk_dim3(64, 1, 1), 0, NULL, args, 4));
    CHECK_OK(rk_context_copy_to_host(ctx, back, b, kBytes));
    int bad = 0;
    for (int i = 0; i < kBytes / 4 && bad < 3; ++i) {
      size_t byte = (size_t)i * 4;
      int want;
      if (byte >= ob && byte < ob + (size_t)n * 4)
        want = host[(oa + byte - ob) / 4] + 1000;
      else
        memset(&want, 0xAB, sizeof want);
      if (!CHECK(back[i] == want, "offsets %zu/%zu: b[%d] = %d, expected %d",
                 oa, ob, i, back[i], want))
        ++bad;
    }
  }
  /* The offset is checked against the allocation. */
  rk_arg_t past[] = {rk_arg_i32(1), rk_arg_i32(1), rk_arg_ptr(a + kBytes + 8),
                     rk_arg_ptr(b)};
  rk_test_clear_error();
  rk_status_t s = rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                     NULL, past, 4);
  CHECK(s == RK_ERR_INVALID_ARGUMENT, "pointer past the end: %s",
        rk_status_name(s));
  rk_context_free(ctx, a);
  rk_context_free(ctx, b);
}

/* rk_dynamic_shared(): the hidden __local parameter gets shared_mem bytes;
 * each block reverses its part through it. */
static void test_dynamic_shared(rk_context_t *ctx) {
  static const char kDyn[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void rev(const int *in, int *out) {\n"
      "  int *sh = (int *)rk_dynamic_shared();\n"
      "  uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();\n"
      "  uint32_t base = rk_block_idx_x() * b;\n"
      "  sh[t] = in[base + t];\n"
      "  rk_sync_threads();\n"
      "  out[base + t] = sh[b - 1 - t];\n"
      "}\n";
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kDyn, NULL, &mod)) ||
      !CHECK_OK(rk_module_get_function(mod, "rev", &fn)))
    return;
  ocl_module_t *m = (ocl_module_t *)mod;
  CHECK(m->fns[0].dyn_shared && m->fns[0].dyn_index == 4,
        "hidden parameter: %d at %u (expected at 4: two buffers + offsets)",
        m->fns[0].dyn_shared, m->fns[0].dyn_index);
  static const uint32_t kBlocks[] = {1, 7, 64, 250};
  for (size_t c = 0; c < sizeof kBlocks / sizeof kBlocks[0]; ++c) {
    uint32_t b = kBlocks[c], blocks = 5, n = b * blocks;
    int *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    for (uint32_t i = 0; i < n; ++i) in[i] = (int)(i * 3 + c);
    rk_devptr_t din = 0, dout = 0;
    if (CHECK_OK(rk_context_allocate(ctx, n * sizeof *in, &din)) &&
        CHECK_OK(rk_context_allocate(ctx, n * sizeof *out, &dout)) &&
        CHECK_OK(rk_context_copy_to_device(ctx, din, in, n * sizeof *in))) {
      rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout)};
      CHECK_OK(rk_function_launch(fn, rk_dim3(blocks, 1, 1), rk_dim3(b, 1, 1),
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
  rk_module_destroy(mod);
}

/* Every kernel of the transpiler's corpus (kernels, stencils, handlers and
 * their batch entries, structs, shared memory) builds through the backend,
 * pointers as buffer + offset, with one function per listed entry. */
static void test_corpus(rk_context_t *ctx) {
#ifdef RK_CORPUS_DIR
  DIR *dir = opendir(RK_CORPUS_DIR);
  if (!CHECK(dir != NULL, "cannot open %s", RK_CORPUS_DIR)) return;
  int built = 0;
  for (struct dirent *de; (de = readdir(dir)) != NULL;) {
    size_t len = strlen(de->d_name);
    if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", RK_CORPUS_DIR, de->d_name);
    FILE *f = fopen(path, "rb");
    if (!CHECK(f != NULL, "cannot read %s", path)) continue;
    char *text = calloc(1, 1 << 20);
    size_t got = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    (void)got;
    rk_entry_list_t *list = NULL;
    rk_compile_options_t opt;
    rk_compile_options_init(&opt);
    opt.source_name = de->d_name;
    rk_module_t *mod = NULL;
    if (text && CHECK_OK(rk_codegen_list_entries(text, NULL, &list, NULL)) &&
        CHECK_OK(rk_context_compile(ctx, text, &opt, &mod))) {
      CHECK(rk_module_function_count(mod) == list->count,
            "%s: %zu functions for %zu entries", de->d_name,
            rk_module_function_count(mod), list->count);
      ++built;
      rk_module_destroy(mod);
    }
    rk_entry_list_destroy(list);
    free(text);
  }
  closedir(dir);
  printf("corpus: %d kernel sources built\n", built);
  CHECK(built >= 10, "only %d corpus kernels built", built);
#else
  (void)ctx;
#endif
}

/* Thousands of tiny launches on the default stream and on a stream, all
 * counted. */
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
  for (int i = 0; i < kLaunches; ++i)
    if (!CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(2, 1, 1), 0,
                                     (i & 1) ? st : NULL, &arg, 1)))
      break;
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_copy_to_host(ctx, &count, c, sizeof count));
  CHECK(count == 2 * kLaunches, "%d increments, expected %d", count,
        2 * kLaunches);
  /* On a stream, copies and launches interleaved stay in order. */
  int seen[64];
  for (int i = 0; i < 64; ++i) {
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, st,
                                &arg, 1));
    CHECK_OK(rk_stream_copy_to_host(st, &seen[i], c, sizeof seen[i]));
  }
  CHECK_OK(rk_stream_synchronize(st));
  for (int i = 0; i < 64; ++i)
    if (!CHECK(seen[i] == 2 * kLaunches + i + 1, "read %d saw %d, expected %d",
               i, seen[i], 2 * kLaunches + i + 1))
      break;
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, c);
}

/* Launches of one function from several threads at once: arguments are
 * set and enqueued as one step. */
typedef struct launcher {
  rk_function_t *fn;
  rk_devptr_t counter;
  rk_stream_t *stream; /* NULL: the default stream */
  int launches;
  rk_status_t status;
} launcher_t;

static void *launch_many(void *arg) {
  launcher_t *l = arg;
  rk_arg_t a = rk_arg_ptr(l->counter);
  for (int i = 0; i < l->launches && l->status == RK_OK; ++i)
    l->status = rk_function_launch(l->fn, rk_dim3(1, 1, 1), rk_dim3(3, 1, 1), 0,
                                   l->stream, &a, 1);
  return NULL;
}

static void test_threads(rk_context_t *ctx, rk_module_t *mod) {
  enum { kThreads = 3, kLaunches = 400 };
  rk_function_t *fn = NULL;
  rk_devptr_t c[kThreads] = {0};
  int zero = 0;
  if (!CHECK_OK(rk_module_get_function(mod, "bump", &fn))) return;
  launcher_t l[kThreads];
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    CHECK_OK(rk_context_allocate(ctx, sizeof zero, &c[i]));
    CHECK_OK(rk_context_copy_to_device(ctx, c[i], &zero, sizeof zero));
    l[i] = (launcher_t){fn, c[i], NULL, kLaunches, RK_OK};
    if (i == kThreads - 1)
      CHECK_OK(rk_context_create_stream(ctx, &l[i].stream));
  }
  for (int i = 0; i < kThreads; ++i)
    pthread_create(&t[i], NULL, launch_many, &l[i]);
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  CHECK_OK(rk_context_synchronize(ctx));
  for (int i = 0; i < kThreads; ++i) {
    int count = -1;
    CHECK(l[i].status == RK_OK, "thread %d: %s", i,
          rk_status_name(l[i].status));
    CHECK_OK(rk_context_copy_to_host(ctx, &count, c[i], sizeof count));
    CHECK(count == 3 * kLaunches, "thread %d's counter is %d, expected %d", i,
          count, 3 * kLaunches);
    rk_context_free(ctx, c[i]);
  }
  CHECK_OK(rk_stream_destroy(l[kThreads - 1].stream));
}

/* A copy queued behind a running kernel, from memory freed before the copy
 * runs: the copy fails when it runs, the error surfaces at the stream's
 * synchronization, the destination is untouched, the stream still works. */
static void test_freed_before_run(rk_context_t *ctx, rk_module_t *mod) {
  enum { kBytes = 4096 };
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, "wait_flag", &fn))) return;
  int zero = 0, one = 1, seen = -1;
  unsigned char *dst = malloc(kBytes);
  memset(dst, 0x11, kBytes);
  rk_devptr_t flag = 0, dseen = 0, src = 0;
  rk_stream_t *st = NULL;
  if (!CHECK_OK(rk_context_allocate(ctx, sizeof zero, &flag)) ||
      !CHECK_OK(rk_context_allocate(ctx, sizeof seen, &dseen)) ||
      !CHECK_OK(rk_context_allocate(ctx, kBytes, &src)) ||
      !CHECK_OK(rk_context_create_stream(ctx, &st))) {
    free(dst);
    return;
  }
  CHECK_OK(rk_context_copy_to_device(ctx, flag, &zero, sizeof zero));
  CHECK_OK(rk_context_copy_to_device(ctx, dseen, &seen, sizeof seen));
  rk_arg_t args[] = {rk_arg_ptr(flag), rk_arg_ptr(dseen), rk_arg_u32(1u << 30)};
  CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, st,
                              args, 3));
  CHECK_OK(rk_stream_copy_to_host(st, dst, src, kBytes));
  CHECK_OK(rk_context_free(ctx, src));
  CHECK_OK(rk_context_copy_to_device(ctx, flag, &one, sizeof one));
  char addr[32];
  snprintf(addr, sizeof addr, "%llx", (unsigned long long)src);
  CHECK_STATUS(rk_stream_synchronize(st), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS(addr);
  CHECK_OK(rk_context_copy_to_host(ctx, &seen, dseen, sizeof seen));
  CHECK(seen == 1, "the waiting kernel saw %d (streams did not overlap)", seen);
  bool untouched = true;
  for (int i = 0; i < kBytes; ++i) untouched = untouched && dst[i] == 0x11;
  CHECK(untouched, "the failed copy wrote to its destination");
  CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_stream_copy_to_host(st, &seen, flag, sizeof seen));
  CHECK_OK(rk_stream_synchronize(st));
  CHECK(seen == 1, "stream copy after the error read %d", seen);
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, flag);
  rk_context_free(ctx, dseen);
  free(dst);
}

int main(void) {
  rk_test_use_temp_cache();
  /* PoCL keeps its kernel cache under $POCL_CACHE_DIR: a temporary one. */
  if (!getenv("POCL_CACHE_DIR"))
    setenv("POCL_CACHE_DIR", rk_test_temp_dir(), 1);
  test_error_table();
  test_buffer_offsets();
  test_loader_failures();
  test_no_platform();

  rk_backend_t *be = NULL;
  rk_status_t s = rk_backend_open(RK_BACKEND_OPENCL, &be);
  if (s == RK_ERR_UNAVAILABLE) {
    if (rk_test_failures) return rk_test_finish("opencl");
    RK_TEST_SKIP("no OpenCL platform here: %s", rk_last_error());
  }
  if (!CHECK_OK(s)) return rk_test_finish("opencl");
  if (rk_backend_device_count(be) == 0) {
    rk_backend_destroy(be);
    if (rk_test_failures) return rk_test_finish("opencl");
    RK_TEST_SKIP("the OpenCL platform has no device");
  }
  test_device_info(be);
  rk_context_t *ctx = NULL;
  if (CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    test_build_error(ctx);
    rk_compile_options_t opt;
    rk_compile_options_init(&opt);
    opt.source_name = "opencl_test.c";
    rk_module_t *mod = NULL;
    if (CHECK_OK(rk_context_compile(ctx, kKernels, &opt, &mod))) {
      test_offsets(ctx, mod);
      test_dynamic_shared(ctx);
      test_corpus(ctx);
      test_many_launches(ctx, mod);
      test_threads(ctx, mod);
      test_freed_before_run(ctx, mod);
    }
    CHECK_OK(rk_context_destroy(ctx));
  }
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("opencl");
}
