/* The CUDA driver and NVRTC loader (backends/cuda/cuda_api.h), no GPU
 * needed: a missing driver, the toolkit's stub libcuda, a fake driver
 * (fake_cuda.c) with entry points hidden and cuInit failing on demand, the
 * error tables, and a real NVRTC compile where NVRTC is installed.
 *
 *   cuda_loader                              every case
 *   cuda_loader --expect-nvrtc-unavailable   run with RK_NVRTC_LIB naming a
 *                                            missing file
 */
#define RK_TEST_IMPLEMENTATION
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_api.h"
#include "rk_test.h"

/* Whether every byte of *api is zero, as a failed load must leave it. */
static bool zeroed(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; ++i)
    if (b[i]) return false;
  return true;
}

/* Loads with RK_CUDA_LIB=lib and the fake's knobs as given (NULL: unset);
 * the api is unloaded again unless out_api is given. */
static rk_status_t load_with(const char *lib, const char *hide,
                             const char *init, rk_cu_api_t *out_api) {
  setenv("RK_CUDA_LIB", lib, 1);
  if (hide)
    setenv("RK_FAKE_CUDA_HIDE", hide, 1);
  else
    unsetenv("RK_FAKE_CUDA_HIDE");
  if (init)
    setenv("RK_FAKE_CUDA_INIT", init, 1);
  else
    unsetenv("RK_FAKE_CUDA_INIT");
  rk_cu_api_t local;
  rk_cu_api_t *api = out_api ? out_api : &local;
  memset(api, 0xab, sizeof *api); /* the loader must not rely on zeroes */
  rk_status_t s = rk__cu_api_load(api);
  if (s != RK_OK)
    CHECK(zeroed(api, sizeof *api), "a failed load left *api non-zero");
  else if (!out_api)
    rk__cu_api_unload(api);
  return s;
}

/* ---- 1. No driver -------------------------------------------------------- */

static void test_missing_driver(void) {
  CHECK_STATUS(load_with("/nonexistent/libcuda.so.1", NULL, NULL, NULL),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("no NVIDIA driver: /nonexistent/libcuda.so.1: ");
  CHECK_ERROR_HAS("No such file");
  CHECK_ERROR_HAS("(set RK_CUDA_LIB to the driver library)");

  /* Something that is not a driver at all. */
  CHECK_STATUS(load_with("libm.so.6", NULL, NULL, NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("libm.so.6");
  CHECK_ERROR_HAS("not a CUDA driver (no cuGetProcAddress)");

  /* The default names, each with dlopen's reason, where no driver is
   * installed (with one, they load). */
  unsetenv("RK_CUDA_LIB");
  rk_cu_api_t api;
  rk_test_clear_error();
  rk_status_t s = rk__cu_api_load(&api);
  if (s == RK_OK) {
    printf("note: a CUDA driver is installed (%s, version %d)\n", api.path,
           api.driver_version);
    CHECK(api.driver_version >= 11030, "driver_version %d", api.driver_version);
#define CHECK_REAL_(name, required, ret, params) \
  CHECK(!(required) || api.name != NULL, "%s not resolved", #name);
    RK_CU_SYMBOLS(CHECK_REAL_)
#undef CHECK_REAL_
    int count = -1;
    CUresult r = api.cuDeviceGetCount(&count);
    printf("note: cuDeviceGetCount: %s, %d device(s)\n", rk__cu_error_name(r),
           count);
    rk__cu_api_unload(&api);
    CHECK(zeroed(&api, sizeof api), "unload left *api non-zero");
  } else if (rk_test_contains(rk_last_error(), "no NVIDIA driver")) {
    CHECK(s == RK_ERR_UNAVAILABLE, "status %s", rk_status_name(s));
    CHECK_ERROR_HAS("libcuda.so.1: ");
    CHECK_ERROR_HAS("; libcuda.so: ");
  } else {
    /* A libcuda.so that is the toolkit's stub on the library path. */
    CHECK(s == RK_ERR_UNAVAILABLE, "status %s", rk_status_name(s));
    printf("note: default driver names: %s\n", rk_last_error());
  }
}

/* ---- 2. The toolkit's stub libcuda -------------------------------------- */

static void test_toolkit_stub(void) {
  char path[4096] = "";
  const char *fixed[] = {"/usr/local/cuda/lib64/stubs/libcuda.so",
                         "/usr/local/cuda/lib/stubs/libcuda.so"};
  for (size_t i = 0; i < 2 && !path[0]; ++i)
    if (access(fixed[i], R_OK) == 0)
      snprintf(path, sizeof path, "%s", fixed[i]);
  glob_t g;
  if (!path[0] &&
      glob("/usr/local/cuda*/lib*/stubs/libcuda.so", 0, NULL, &g) == 0) {
    if (g.gl_pathc) snprintf(path, sizeof path, "%s", g.gl_pathv[0]);
    globfree(&g);
  }
  if (!path[0]) {
    printf("SKIPPED (stub case): no /usr/local/cuda*/lib*/stubs/libcuda.so\n");
    return;
  }
  CHECK_STATUS(load_with(path, NULL, NULL, NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("stub libcuda");
  CHECK_ERROR_HAS("not a driver: no NVIDIA driver is installed");
  CHECK_ERROR_HAS("stubs/libcuda.so");
}

/* ---- 3. The fake driver ------------------------------------------------- */

static void test_fake_driver(void) {
  const char *fake = RK_FAKE_CUDA_PATH;
  rk_cu_api_t api;
  if (!CHECK_OK(load_with(fake, NULL, NULL, &api))) return;
  CHECK(api.driver_version == RK_FAKE_CUDA_DRIVER_VERSION, "driver_version %d",
        api.driver_version);
  CHECK(strstr(api.path, "rk_fake_cuda") != NULL && api.path[0] == '/',
        "path \"%s\"", api.path);
#define CHECK_RESOLVED_(name, required, ret, params) \
  CHECK(api.name != NULL, "%s not resolved", #name);
  RK_CU_SYMBOLS(CHECK_RESOLVED_)
#undef CHECK_RESOLVED_
  int count = -1;
  CHECK(api.cuDeviceGetCount(&count) == RK_CUDA_SUCCESS && count == 0,
        "cuDeviceGetCount: %d devices", count);
  /* The fake's stubs answer CUDA_ERROR_NOT_SUPPORTED, with its text. */
  CUdeviceptr p = 0;
  CUresult r = api.cuMemAlloc(&p, 64);
  CHECK(r == RK_CUDA_ERROR_NOT_SUPPORTED, "cuMemAlloc returned %d", r);
  CHECK_STATUS(rk__cu_fail(&api, r, "cuMemAlloc(64)"), RK_ERR_UNIMPLEMENTED);
  CHECK(strcmp(rk_last_error(),
               "cuda: cuMemAlloc(64): CUDA_ERROR_NOT_SUPPORTED (801): the "
               "fake driver's text for CUDA_ERROR_NOT_SUPPORTED") == 0,
        "message \"%s\"", rk_last_error());
  /* A code the driver does not know: no text. */
  CHECK_STATUS(rk__cu_fail(&api, 4242, "x"), RK_ERR_INTERNAL);
  CHECK(strcmp(rk_last_error(), "cuda: x: an unknown CUDA error (4242)") == 0,
        "message \"%s\"", rk_last_error());
  /* A second load shares the library; each unload drops one reference. */
  rk_cu_api_t second;
  if (CHECK_OK(load_with(fake, NULL, NULL, &second))) {
    rk__cu_api_unload(&second);
    count = -1;
    CHECK(api.cuDeviceGetCount(&count) == RK_CUDA_SUCCESS && count == 0,
          "after the second unload: %d devices", count);
  }
  rk__cu_api_unload(&api);
  CHECK(zeroed(&api, sizeof api), "unload left *api non-zero");

  /* A missing required entry point fails the load, naming it. */
  CHECK_STATUS(load_with(fake, "cuMemAlloc", NULL, NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("rk_fake_cuda");
  CHECK_ERROR_HAS(
      " lacks cuMemAlloc (driver too old? rk needs the CUDA 12.0 driver API)");
  CHECK_STATUS(load_with(fake, "cuStreamQuery,cuInit", NULL, NULL),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("lacks cuInit, cuStreamQuery (");

  /* A missing optional one leaves its pointer NULL. */
  if (CHECK_OK(load_with(fake, "cuLaunchCooperativeKernel,cuMemGetInfo", NULL,
                         &api))) {
    CHECK(api.cuLaunchCooperativeKernel == NULL && api.cuMemGetInfo == NULL,
          "hidden optional entry points resolved");
    CHECK(api.cuLaunchKernel != NULL, "cuLaunchKernel not resolved");
    rk__cu_api_unload(&api);
  }

  /* cuInit: no device is not a failure; anything else is, with the code. */
  CHECK_OK(load_with(fake, NULL, "100", NULL));
  CHECK_STATUS(load_with(fake, NULL, "999", NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("cuda: cuInit on /");
  CHECK_ERROR_HAS(
      ": CUDA_ERROR_UNKNOWN (999): the fake driver's text for "
      "CUDA_ERROR_UNKNOWN");
  /* Whatever cuInit says, a driver that cannot start is unavailable. */
  CHECK_STATUS(load_with(fake, NULL, "2", NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("CUDA_ERROR_OUT_OF_MEMORY (2)");
  CHECK_STATUS(load_with(fake, NULL, "34", NULL), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("stub libcuda");
  CHECK_ERROR_HAS("rk_fake_cuda");

  /* The 4-argument cuGetProcAddress of drivers 11.3 to 11.8. */
  if (CHECK_OK(load_with(RK_FAKE_CUDA_V1_PATH, NULL, NULL, &api))) {
    CHECK(api.driver_version == RK_FAKE_CUDA_DRIVER_VERSION,
          "driver_version %d", api.driver_version);
    CHECK(api.cuEventElapsedTime != NULL, "cuEventElapsedTime not resolved");
    rk__cu_api_unload(&api);
  }
  CHECK_STATUS(load_with(RK_FAKE_CUDA_V1_PATH, "cuModuleLoadData", NULL, NULL),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("lacks cuModuleLoadData");

  unsetenv("RK_CUDA_LIB");
  unsetenv("RK_FAKE_CUDA_HIDE");
  unsetenv("RK_FAKE_CUDA_INIT");
}

/* ---- 4. Error tables ----------------------------------------------------- */

static void test_error_tables(void) {
  int entries = 0;
#define CHECK_CU_(name, value, status)                                \
  ++entries;                                                          \
  CHECK(strcmp(rk__cu_error_name(value), #name) == 0 &&               \
            strncmp(#name, "CUDA_", 5) == 0,                          \
        "%d is named %s", value, rk__cu_error_name(value));           \
  CHECK(rk__cu_error_status(value) == status, "%s maps to %s", #name, \
        rk_status_name(rk__cu_error_status(value)));
  RK_CU_ERRORS(CHECK_CU_)
#undef CHECK_CU_
#define CHECK_NVRTC_(name, value, status)                                \
  ++entries;                                                             \
  CHECK(strcmp(rk__nvrtc_error_name(value), #name) == 0 &&               \
            strncmp(#name, "NVRTC_", 6) == 0,                            \
        "%d is named %s", value, rk__nvrtc_error_name(value));           \
  CHECK(rk__nvrtc_error_status(value) == status, "%s maps to %s", #name, \
        rk_status_name(rk__nvrtc_error_status(value)));
  RK_NVRTC_ERRORS(CHECK_NVRTC_)
#undef CHECK_NVRTC_
  CHECK(entries > 60, "only %d table entries", entries);

  CHECK(strcmp(rk__cu_error_name(123456), "an unknown CUDA error") == 0,
        "unknown CUresult named %s", rk__cu_error_name(123456));
  CHECK(rk__cu_error_status(123456) == RK_ERR_INTERNAL, "unknown CUresult");
  CHECK(strcmp(rk__nvrtc_error_name(-1), "an unknown NVRTC error") == 0,
        "unknown nvrtcResult named %s", rk__nvrtc_error_name(-1));
  CHECK(rk__nvrtc_error_status(-1) == RK_ERR_INTERNAL, "unknown nvrtcResult");

  /* Without a loaded driver: name and code, no text, no crash. */
  CHECK_STATUS(rk__cu_fail(NULL, RK_CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemcpyDtoH"),
               RK_ERR_DEVICE_LOST);
  CHECK(strcmp(rk_last_error(),
               "cuda: cuMemcpyDtoH: CUDA_ERROR_ILLEGAL_ADDRESS (700)") == 0,
        "message \"%s\"", rk_last_error());
  rk_cu_api_t empty;
  memset(&empty, 0, sizeof empty);
  CHECK_STATUS(rk__cu_fail(&empty, RK_CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"),
               RK_ERR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)");
  /* CUDA_SUCCESS handed to rk__cu_fail is still a failure. */
  CHECK_STATUS(rk__cu_fail(NULL, RK_CUDA_SUCCESS, "odd"), RK_ERR_INTERNAL);
  CHECK_ERROR_HAS("CUDA_SUCCESS (0)");

  CHECK_STATUS(rk__nvrtc_fail(NULL, RK_NVRTC_ERROR_COMPILATION, "k.cu"),
               RK_ERR_COMPILE);
  CHECK(strcmp(rk_last_error(), "cuda: k.cu: NVRTC_ERROR_COMPILATION (6)") == 0,
        "message \"%s\"", rk_last_error());
  CHECK_STATUS(rk__nvrtc_fail(NULL, 99, "k.cu"), RK_ERR_INTERNAL);
  CHECK_ERROR_HAS("an unknown NVRTC error (99)");
}

/* ---- 5. NVRTC ------------------------------------------------------------ */

static void *nvrtc_thread(void *arg) {
  const rk_nvrtc_api_t **out = arg;
  if (rk__nvrtc_api(out) != RK_OK) *out = NULL;
  return NULL;
}

/* The oldest virtual architecture from compute_70 on that this NVRTC
 * supports: compute_70 for NVRTC 12, compute_75 for 13, which dropped
 * everything older. */
static void arch_option(const rk_nvrtc_api_t *nv, char *option, size_t cap) {
  int arch = 0, count = 0, archs[128];
  if (nv->nvrtcGetNumSupportedArchs && nv->nvrtcGetSupportedArchs &&
      nv->nvrtcGetNumSupportedArchs(&count) == RK_NVRTC_SUCCESS && count > 0 &&
      count <= 128 && nv->nvrtcGetSupportedArchs(archs) == RK_NVRTC_SUCCESS) {
    for (int i = 0; i < count; ++i)
      if (archs[i] >= 70 && (arch == 0 || archs[i] < arch)) arch = archs[i];
  }
  if (arch == 0) arch = 75;
  snprintf(option, cap, "--gpu-architecture=compute_%d", arch);
}

/* Compiles src; on success returns the PTX (malloc'd), else NULL with the
 * result in *out_result and the log in log. */
static char *compile(const rk_nvrtc_api_t *nv, const char *src,
                     const char *name, nvrtcResult *out_result, char *log,
                     size_t log_cap) {
  nvrtcProgram prog = NULL;
  char *ptx = NULL;
  log[0] = '\0';
  *out_result = nv->nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
  if (*out_result != RK_NVRTC_SUCCESS) return NULL;
  char option[64];
  arch_option(nv, option, sizeof option);
  const char *opts[] = {option};
  *out_result = nv->nvrtcCompileProgram(prog, 1, opts);
  size_t size = 0;
  if (nv->nvrtcGetProgramLogSize(prog, &size) == RK_NVRTC_SUCCESS &&
      size <= log_cap)
    nv->nvrtcGetProgramLog(prog, log);
  if (*out_result == RK_NVRTC_SUCCESS &&
      nv->nvrtcGetPTXSize(prog, &size) == RK_NVRTC_SUCCESS &&
      (ptx = malloc(size + 1)) != NULL) {
    ptx[size] = '\0';
    if (nv->nvrtcGetPTX(prog, ptx) != RK_NVRTC_SUCCESS) {
      free(ptx);
      ptx = NULL;
    }
  }
  nv->nvrtcDestroyProgram(&prog);
  return ptx;
}

static void test_nvrtc(void) {
  /* First use from several threads at once: one load, one answer. */
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  const rk_nvrtc_api_t *seen[kThreads];
  for (int i = 0; i < kThreads; ++i)
    pthread_create(&threads[i], NULL, nvrtc_thread, &seen[i]);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);

  const rk_nvrtc_api_t *nv = NULL;
  rk_status_t s = rk__nvrtc_api(&nv);
  if (s != RK_OK) {
    CHECK(s == RK_ERR_UNAVAILABLE && nv == NULL, "status %s",
          rk_status_name(s));
    CHECK_ERROR_HAS("NVRTC not found");
    printf("SKIPPED (NVRTC case): %s\n", rk_last_error());
    return;
  }
  for (int i = 0; i < kThreads; ++i)
    CHECK(seen[i] == nv, "thread %d saw %p, not %p", i, (const void *)seen[i],
          (const void *)nv);
  printf("note: NVRTC %d.%d from %s\n", nv->major, nv->minor, nv->path);
  CHECK(nv->major >= 12, "NVRTC %d.%d", nv->major, nv->minor);
  CHECK(nv->handle != NULL && nv->path[0] != '\0', "no handle or path");
#define CHECK_NVRTC_SYM_(name, required, ret, params) \
  CHECK(!(required) || nv->name != NULL, "%s not resolved", #name);
  RK_NVRTC_SYMBOLS(CHECK_NVRTC_SYM_)
#undef CHECK_NVRTC_SYM_

  char log[8192];
  nvrtcResult r;
  char *ptx =
      compile(nv, "extern \"C\" __global__ void k(int *p) { *p = 1; }\n",
              "k.cu", &r, log, sizeof log);
  CHECK(r == RK_NVRTC_SUCCESS && ptx != NULL, "k.cu: %s, log:\n%s",
        rk__nvrtc_error_name(r), log);
  if (ptx) CHECK(strstr(ptx, ".entry k(") != NULL, "PTX:\n%s", ptx);
  free(ptx);

  /* `q` is undeclared on line 2. */
  ptx = compile(nv,
                "extern \"C\" __global__ void k(int *p) {\n"
                "  *p = q;\n"
                "}\n",
                "broken.cu", &r, log, sizeof log);
  CHECK(ptx == NULL && r == RK_NVRTC_ERROR_COMPILATION, "broken.cu: %s",
        rk__nvrtc_error_name(r));
  free(ptx);
  CHECK(strstr(log, "broken.cu(2)") != NULL && strstr(log, "\"q\"") != NULL,
        "the log does not place the error:\n%s", log);
  CHECK_STATUS(rk__nvrtc_fail(nv, r, "broken.cu"), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("cuda: broken.cu: NVRTC_ERROR_COMPILATION (6): ");

  const rk_nvrtc_api_t *again = NULL;
  CHECK(rk__nvrtc_api(&again) == RK_OK && again == nv, "second call differs");
}

/* Run with RK_NVRTC_LIB naming a file that does not exist. */
static int expect_nvrtc_unavailable(void) {
  const char *lib = getenv("RK_NVRTC_LIB");
  if (!CHECK(lib && *lib, "RK_NVRTC_LIB is not set"))
    return rk_test_finish("cuda_loader --expect-nvrtc-unavailable");
  char first[1024] = "";
  for (int round = 0; round < 2; ++round) {
    const rk_nvrtc_api_t *nv = (const rk_nvrtc_api_t *)&first;
    CHECK_STATUS(rk__nvrtc_api(&nv), RK_ERR_UNAVAILABLE);
    CHECK(nv == NULL, "out_api not cleared");
    CHECK_ERROR_HAS("cuda: NVRTC not found: ");
    CHECK_ERROR_HAS(lib);
    CHECK_ERROR_HAS("(set RK_NVRTC_LIB");
    if (round == 0)
      snprintf(first, sizeof first, "%s", rk_last_error());
    else
      CHECK(strcmp(first, rk_last_error()) == 0,
            "the second answer differs:\n  %s\n  %s", first, rk_last_error());
  }
  return rk_test_finish("cuda_loader --expect-nvrtc-unavailable");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--expect-nvrtc-unavailable") == 0)
    return expect_nvrtc_unavailable();
  test_missing_driver();
  test_toolkit_stub();
  test_fake_driver();
  test_error_tables();
  test_nvrtc();
  return rk_test_finish("cuda_loader");
}
