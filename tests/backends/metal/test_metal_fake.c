/* The Metal backend on the fake Objective-C runtime and Metal of
 * fake_metal.c (no Mac needed): devices and their info, no device, shared
 * memory (memcpy) and private memory (blits), MSL compiled and run,
 * dispatch sizes and threadgroup memory, compile errors with the compiler's
 * message and the generated line, pipelines made once per entry, a failed
 * command buffer reported at the next synchronization (default stream and
 * a stream), autorelease pools balanced and every object released.
 *
 *   metal_fake                with RK_METAL_OBJC_LIB and RK_METAL_LIB naming
 *                             the fake (ctest sets them; skips otherwise)
 *   metal_fake --unavailable  without them, off macOS: the backend says why
 *                             it is unavailable
 */
#define RK_TEST_IMPLEMENTATION
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "rk_test.h"

#define KSRC(...) "#include <rk/kernel.h>\n" #__VA_ARGS__ "\n"

/* The fake's controls (fake_metal.c). */
static void (*set_devices)(int n, int unified);
static void (*fail_next_compile)(const char *message);
static void (*fail_next_command_buffer)(const char *message);
static long (*count)(const char *selector);
static long (*live_objects)(void);
static void (*pools)(long *pushes, long *pops);
static void (*last_dispatch)(unsigned long out[7]);

static bool load_controls(void) {
  const char *path = getenv("RK_METAL_LIB");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (!h && path) h = dlopen(path, RTLD_NOW);
  if (!h) return false;
#define SYM_(var, name) *(void **)&var = dlsym(h, name)
  SYM_(set_devices, "fake_metal_set_devices");
  SYM_(fail_next_compile, "fake_metal_fail_next_compile");
  SYM_(fail_next_command_buffer, "fake_metal_fail_next_command_buffer");
  SYM_(count, "fake_metal_count");
  SYM_(live_objects, "fake_metal_live_objects");
  SYM_(pools, "fake_metal_pools");
  SYM_(last_dispatch, "fake_metal_last_dispatch");
#undef SYM_
  return set_devices && fail_next_compile && fail_next_command_buffer &&
         count && live_objects && pools && last_dispatch;
}

// clang-format off
static const char *kSource = KSRC(
    RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {
      int i = (int)rk_global_idx_x();
      if (i < n) y[i] = a * x[i] + y[i];
    }
    RK_KERNEL void reverse(int n, int *v) {
      int *tile = (int *)rk_dynamic_shared();
      int t = (int)rk_thread_idx_x();
      if (t < n) tile[t] = v[t];
      rk_sync_threads();
      if (t < n) v[t] = tile[n - 1 - t];
    });
// clang-format on

static rk_backend_t *open_metal(void) {
  rk_backend_t *be = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_METAL, &be))) return NULL;
  return be;
}

static void check_devices(void) {
  rk_backend_t *be = open_metal();
  if (!be) return;
  CHECK(rk_backend_device_count(be) == 1, "device count %d",
        rk_backend_device_count(be));
  rk_device_info_t info;
  if (CHECK_OK(rk_backend_device_info(be, 0, &info))) {
    CHECK(strcmp(info.name, "Fake Apple GPU 0") == 0, "name '%s'", info.name);
    CHECK(strcmp(info.vendor, "Apple") == 0, "vendor '%s'", info.vendor);
    CHECK(info.backend == RK_BACKEND_METAL, "backend %d", (int)info.backend);
    /* maxThreadsPerThreadgroup is an MTLSize: a struct return. */
    CHECK(info.max_threads_per_block == 1024, "max threads %u",
          info.max_threads_per_block);
    CHECK(info.shared_mem_per_block == 32768, "threadgroup memory %llu",
          (unsigned long long)info.shared_mem_per_block);
    CHECK(info.memory_bytes == (uint64_t)1 << 30, "working set %llu",
          (unsigned long long)info.memory_bytes);
    CHECK(strstr(info.arch, "registry 0x100000400") != NULL, "arch '%s'",
          info.arch);
    CHECK(info.caps & RK_CAP_MAPPED_HOST_MEMORY, "unified memory not seen");
    CHECK(!(info.caps & RK_CAP_PERSISTENT_KERNELS),
          "Metal must not claim resident kernels");
    CHECK(!(info.caps & RK_CAP_F64), "MSL has no double");
  }
  CHECK(strstr(rk_backend_library(be), "Metal.framework") != NULL,
        "library '%s'", rk_backend_library(be));
  CHECK_OK(rk_backend_destroy(be));

  /* Auto-selection: CUDA first, then Metal (before WebGPU, OpenCL, CPU). */
  unsetenv("RK_BACKEND");
  rk_backend_t *cuda = NULL, *any = NULL;
  bool has_cuda = rk_backend_open(RK_BACKEND_CUDA, &cuda) == RK_OK &&
                  rk_backend_device_count(cuda) > 0;
  if (cuda) rk_backend_destroy(cuda);
  if (CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &any))) {
    rk_backend_kind_t want = has_cuda ? RK_BACKEND_CUDA : RK_BACKEND_METAL;
    CHECK(rk_backend_kind(any) == want, "auto chose %s, expected %s",
          rk_backend_name(any), rk_backend_kind_name(want));
    CHECK_OK(rk_backend_destroy(any));
  }

  /* No device: the backend opens with none, and AUTO passes over it. */
  set_devices(0, 1);
  be = open_metal();
  if (be) {
    CHECK(rk_backend_device_count(be) == 0, "device count %d with none",
          rk_backend_device_count(be));
    rk_context_t *ctx = NULL;
    CHECK(rk_backend_create_context(be, 0, &ctx) != RK_OK,
          "a context on a missing device");
    CHECK_OK(rk_backend_destroy(be));
  }
  set_devices(1, 1);
}

/* saxpy and the barrier kernel on `ctx`; `unified` says which copy path
 * the backend must take. */
static void run_kernels(rk_context_t *ctx, bool unified) {
  enum { N = 200 };
  float x[N], y[N], want[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = (float)(3 * i);
    want[i] = 2.0f * x[i] + y[i];
  }
  long blits = count(
      "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:"
      "size:");
  long contents = count("contents");
  rk_devptr_t dx = 0, dy = 0, dv = 0;
  CHECK_OK(rk_context_allocate(ctx, sizeof x, &dx));
  CHECK_OK(rk_context_allocate(ctx, sizeof y, &dy));
  CHECK_OK(rk_context_copy_to_device(ctx, dx, x, sizeof x));
  CHECK_OK(rk_context_copy_to_device(ctx, dy, y, sizeof y));
  rk_module_t *mod = NULL;
  long pipelines = count("newComputePipelineStateWithFunction:error:");
  if (!CHECK_OK(rk_context_compile(ctx, kSource, NULL, &mod))) return;
  CHECK(count("newComputePipelineStateWithFunction:error:") - pipelines == 2,
        "one pipeline per entry expected, %ld made",
        count("newComputePipelineStateWithFunction:error:") - pipelines);
  CHECK(count("(fast math off)") > 0, "fast math was left on");
  /* The same source again: the context's library and its pipelines. */
  long libraries = count("newLibraryWithSource:options:error:");
  pipelines = count("newComputePipelineStateWithFunction:error:");
  rk_module_t *again = NULL;
  if (CHECK_OK(rk_context_compile(ctx, kSource, NULL, &again))) {
    CHECK(rk_module_cache_hit(again), "the second compile missed the cache");
    CHECK(count("newLibraryWithSource:options:error:") == libraries &&
              count("newComputePipelineStateWithFunction:error:") == pipelines,
          "the second compile built a library or pipelines again");
    CHECK_OK(rk_module_destroy(again));
  }
  rk_function_t *saxpy = NULL, *reverse = NULL;
  CHECK_OK(rk_module_get_function(mod, "saxpy", &saxpy));
  CHECK_OK(rk_module_get_function(mod, "reverse", &reverse));
  rk_arg_t args[] = {rk_arg_i32(N), rk_arg_f32(2.0f), rk_arg_ptr(dx),
                     rk_arg_ptr(dy)};
  CHECK_OK(rk_function_launch(saxpy, rk_dim3(4, 1, 1), rk_dim3(64, 1, 1), 0,
                              NULL, args, 4));
  CHECK_OK(rk_context_synchronize(ctx));
  unsigned long d[7];
  last_dispatch(d);
  CHECK(d[0] == 4 && d[1] == 1 && d[2] == 1 && d[3] == 64 && d[4] == 1 &&
            d[5] == 1,
        "dispatch grid (%lu,%lu,%lu) threadgroup (%lu,%lu,%lu)", d[0], d[1],
        d[2], d[3], d[4], d[5]);
  float got[N];
  CHECK_OK(rk_context_copy_to_host(ctx, got, dy, sizeof got));
  int bad = 0;
  for (int i = 0; i < N && bad < 3; ++i)
    if (!CHECK(got[i] == want[i], "saxpy y[%d] = %g, expected %g", i,
               (double)got[i], (double)want[i]))
      ++bad;
  /* Pipelines are made once per entry, not per launch. */
  pipelines = count("newComputePipelineStateWithFunction:error:");
  CHECK_OK(rk_function_launch(saxpy, rk_dim3(4, 1, 1), rk_dim3(64, 1, 1), 0,
                              NULL, args, 4));
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK(count("newComputePipelineStateWithFunction:error:") == pipelines,
        "a launch made a pipeline");

  /* Threadgroup memory from the launch, rounded up to 16; a barrier. */
  int v[50], vr[50];
  for (int i = 0; i < 50; ++i) v[i] = i * 7;
  CHECK_OK(rk_context_allocate(ctx, sizeof v, &dv));
  CHECK_OK(rk_context_copy_to_device(ctx, dv, v, sizeof v));
  rk_arg_t rargs[] = {rk_arg_i32(50), rk_arg_ptr(dv)};
  CHECK_OK(rk_function_launch(reverse, rk_dim3(1, 1, 1), rk_dim3(64, 1, 1),
                              50 * sizeof(int), NULL, rargs, 2));
  CHECK_OK(rk_context_copy_to_host(ctx, vr, dv, sizeof vr));
  CHECK_OK(rk_context_synchronize(ctx));
  last_dispatch(d);
  CHECK(d[6] == 208, "threadgroup memory length %lu, expected 208", d[6]);
  for (int i = 0; i < 50; ++i)
    if (!CHECK(vr[i] == v[49 - i], "reverse v[%d] = %d", i, vr[i])) break;

  long new_blits = count(
                       "copyFromBuffer:sourceOffset:toBuffer:"
                       "destinationOffset:size:") -
                   blits;
  if (unified) {
    CHECK(new_blits == 0, "unified memory copied with %ld blits", new_blits);
    CHECK(count("contents") > contents, "unified memory not copied by memcpy");
  } else {
    CHECK(new_blits >= 5, "private memory copied with %ld blits", new_blits);
  }
  CHECK_OK(rk_module_destroy(mod));
  CHECK_OK(rk_context_free(ctx, dx));
  CHECK_OK(rk_context_free(ctx, dy));
  CHECK_OK(rk_context_free(ctx, dv));
}

static void check_errors(rk_context_t *ctx) {
  /* The compiler's message and the generated line it points at. */
  fail_next_compile(
      "program_source:3:5: error: use of undeclared identifier 'oops'");
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.no_cache = true;
  o.source_name = "errors.c";
  rk_module_t *mod = NULL;
  rk_status_t s = rk_context_compile(ctx, kSource, &o, &mod);
  CHECK(s == RK_ERR_COMPILE, "injected compile error gave %s",
        rk_status_name(s));
  CHECK_ERROR_HAS("use of undeclared identifier 'oops'");
  CHECK_ERROR_HAS("errors.c");
  /* Line 3 of rk's MSL is the end of its header comment. */
  CHECK_ERROR_HAS("generated line 3:  * Do not edit");
  if (mod) rk_module_destroy(mod);

  /* A failed command buffer surfaces at the next synchronization, once. */
  if (!CHECK_OK(rk_context_compile(ctx, kSource, NULL, &mod))) return;
  rk_function_t *fn = NULL;
  CHECK_OK(rk_module_get_function(mod, "saxpy", &fn));
  rk_devptr_t d = 0;
  CHECK_OK(rk_context_allocate(ctx, 64 * sizeof(float), &d));
  rk_arg_t args[] = {rk_arg_i32(64), rk_arg_f32(1.0f), rk_arg_ptr(d),
                     rk_arg_ptr(d)};
  fail_next_command_buffer("Caused GPU Timeout Error (fake)");
  CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(64, 1, 1), 0, NULL,
                              args, 4));
  s = rk_context_synchronize(ctx);
  CHECK(s == RK_ERR_LAUNCH, "failed command buffer: synchronize gave %s",
        rk_status_name(s));
  CHECK_ERROR_HAS("Caused GPU Timeout Error (fake)");
  CHECK_OK(rk_context_synchronize(ctx));

  rk_stream_t *st = NULL;
  if (CHECK_OK(rk_context_create_stream(ctx, &st))) {
    fail_next_command_buffer("Internal Error (fake)");
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(64, 1, 1), 0, st,
                                args, 4));
    s = rk_stream_synchronize(st);
    CHECK(s == RK_ERR_LAUNCH, "stream: synchronize gave %s", rk_status_name(s));
    CHECK_ERROR_HAS("Internal Error (fake)");
    CHECK_OK(rk_stream_synchronize(st));
    CHECK_OK(rk_stream_destroy(st));
  }
  /* A block too large for the pipeline is refused at launch. */
  s = rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1024, 2, 1), 0, NULL,
                         args, 4);
  CHECK(s == RK_ERR_INVALID_ARGUMENT, "2048 threads: %s", rk_status_name(s));
  CHECK_OK(rk_context_free(ctx, d));
  CHECK_OK(rk_module_destroy(mod));
}

static void run_on(bool unified) {
  set_devices(1, unified);
  rk_backend_t *be = open_metal();
  rk_context_t *ctx = NULL;
  if (be && CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    rk_device_info_t info;
    rk_backend_device_info(be, 0, &info);
    CHECK(!!(info.caps & RK_CAP_MAPPED_HOST_MEMORY) == unified,
          "unified memory flag wrong");
    run_kernels(ctx, unified);
    if (unified) check_errors(ctx);
    CHECK_OK(rk_context_destroy(ctx));
  }
  if (be) CHECK_OK(rk_backend_destroy(be));
  set_devices(1, 1);
}

static int expect_unavailable(void) {
  rk_backend_t *be = NULL;
  rk_status_t s = rk_backend_open(RK_BACKEND_METAL, &be);
  if (s == RK_OK) {
    rk_backend_destroy(be);
    RK_TEST_SKIP("Metal opens here (a Mac): nothing to check");
  }
  CHECK(s == RK_ERR_UNAVAILABLE, "open gave %s", rk_status_name(s));
  CHECK_ERROR_HAS("macOS");
  CHECK_ERROR_HAS("Metal.framework/Metal");
  CHECK_ERROR_HAS("libobjc");
  return rk_test_finish("metal_unavailable");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--unavailable") == 0)
    return expect_unavailable();
  rk_test_use_temp_cache();
  if (!load_controls()) RK_TEST_SKIP("RK_METAL_LIB does not name the fake");
  check_devices();
  run_on(true);
  run_on(false);
  /* Everything the backend made is released, in balanced pools. */
  long pushes = 0, pops = 0;
  pools(&pushes, &pops);
  CHECK(pushes > 0 && pushes == pops,
        "autorelease pools: %ld pushed, %ld "
        "popped",
        pushes, pops);
  CHECK(live_objects() == 0, "%ld Objective-C objects left alive",
        live_objects());
  return rk_test_finish("metal_fake");
}
