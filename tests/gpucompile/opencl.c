/* OpenCL C through the installed OpenCL platform, loaded with dlopen
 * (gpucompile.h).
 *
 * The ICD loader (libOpenCL.so.1) dispatches to the vendors listed in
 * /etc/OpenCL/vendors; on a machine without a GPU, PoCL's CPU device
 * compiles OpenCL C with the same front end (Clang) as most GPU stacks,
 * which is what these checks need. The few OpenCL types, constants and
 * functions used are declared here from the OpenCL 1.2 specification, so
 * no OpenCL headers are needed to build.
 */
#include <dlfcn.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"
#include "gpucompile.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef intptr_t cl_context_properties;
typedef struct rk_gc_cl_platform *cl_platform_id;
typedef struct rk_gc_cl_device *cl_device_id;
typedef struct rk_gc_cl_context *cl_context;
typedef struct rk_gc_cl_program *cl_program;
typedef struct rk_gc_cl_kernel *cl_kernel;
typedef void (*cl_context_notify_fn)(const char *, const void *, size_t,
                                     void *);
typedef void (*cl_program_notify_fn)(cl_program, void *);

#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902
#define CL_DEVICE_TYPE_GPU (1u << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_DEVICE_NAME 0x102B
#define CL_DEVICE_VERSION 0x102F
#define CL_CONTEXT_PLATFORM 0x1084
#define CL_PROGRAM_KERNEL_NAMES 0x1168
#define CL_PROGRAM_BUILD_LOG 0x1183

/* The error codes worth naming in a log; one table gives the names. */
#define RK_GC_CL_ERRORS(X)              \
  X(CL_SUCCESS, 0)                      \
  X(CL_DEVICE_NOT_FOUND, -1)            \
  X(CL_DEVICE_NOT_AVAILABLE, -2)        \
  X(CL_COMPILER_NOT_AVAILABLE, -3)      \
  X(CL_OUT_OF_RESOURCES, -5)            \
  X(CL_OUT_OF_HOST_MEMORY, -6)          \
  X(CL_BUILD_PROGRAM_FAILURE, -11)      \
  X(CL_INVALID_VALUE, -30)              \
  X(CL_INVALID_PLATFORM, -32)           \
  X(CL_INVALID_DEVICE, -33)             \
  X(CL_INVALID_CONTEXT, -34)            \
  X(CL_INVALID_BINARY, -42)             \
  X(CL_INVALID_BUILD_OPTIONS, -43)      \
  X(CL_INVALID_PROGRAM, -44)            \
  X(CL_INVALID_PROGRAM_EXECUTABLE, -45) \
  X(CL_INVALID_KERNEL_NAME, -46)        \
  X(CL_INVALID_KERNEL_DEFINITION, -47)  \
  X(CL_INVALID_OPERATION, -59)          \
  X(CL_PLATFORM_NOT_FOUND_KHR, -1001)

enum {
#define RK_GC_ENUM_(name, value) name = value,
  RK_GC_CL_ERRORS(RK_GC_ENUM_)
#undef RK_GC_ENUM_
};

static const char *cl_error_name(cl_int err) {
  switch (err) {
#define RK_GC_CASE_(name, value) \
  case value:                    \
    return #name;
    RK_GC_CL_ERRORS(RK_GC_CASE_)
#undef RK_GC_CASE_
  }
  return "an OpenCL error";
}

/* Every OpenCL function used, all from OpenCL 1.0-1.2; one list, expanded
 * into the table's fields and into its lookups. */
#define RK_GC_CL_SYMBOLS(REQUIRED)                                             \
  REQUIRED(clGetPlatformIDs, cl_int,                                           \
           (cl_uint num_entries, cl_platform_id * platforms,                   \
            cl_uint * num_platforms))                                          \
  REQUIRED(clGetPlatformInfo, cl_int,                                          \
           (cl_platform_id platform, cl_platform_info param, size_t size,      \
            void *value, size_t *size_ret))                                    \
  REQUIRED(clGetDeviceIDs, cl_int,                                             \
           (cl_platform_id platform, cl_device_type type, cl_uint num_entries, \
            cl_device_id * devices, cl_uint * num_devices))                    \
  REQUIRED(clGetDeviceInfo, cl_int,                                            \
           (cl_device_id device, cl_device_info param, size_t size,            \
            void *value, size_t *size_ret))                                    \
  REQUIRED(clCreateContext, cl_context,                                        \
           (const cl_context_properties *properties, cl_uint num_devices,      \
            const cl_device_id *devices, cl_context_notify_fn notify,          \
            void *user_data, cl_int *errcode_ret))                             \
  REQUIRED(clReleaseContext, cl_int, (cl_context context))                     \
  REQUIRED(clCreateProgramWithSource, cl_program,                              \
           (cl_context context, cl_uint count, const char **strings,           \
            const size_t *lengths, cl_int *errcode_ret))                       \
  REQUIRED(                                                                    \
      clBuildProgram, cl_int,                                                  \
      (cl_program program, cl_uint num_devices, const cl_device_id *devices,   \
       const char *options, cl_program_notify_fn notify, void *user_data))     \
  REQUIRED(                                                                    \
      clGetProgramBuildInfo, cl_int,                                           \
      (cl_program program, cl_device_id device, cl_program_build_info param,   \
       size_t size, void *value, size_t *size_ret))                            \
  REQUIRED(clGetProgramInfo, cl_int,                                           \
           (cl_program program, cl_program_info param, size_t size,            \
            void *value, size_t *size_ret))                                    \
  REQUIRED(clReleaseProgram, cl_int, (cl_program program))                     \
  REQUIRED(clCreateKernel, cl_kernel,                                          \
           (cl_program program, const char *name, cl_int *errcode_ret))        \
  REQUIRED(clReleaseKernel, cl_int, (cl_kernel kernel))

typedef struct cl_api {
  rk__gc_library_t lib;
  int available;
  char reason[4096]; /* when not available */
  cl_platform_id platform;
  cl_device_id device;
  char description[2048]; /* "<platform> / <device> (<version>), <path>" */
#define RK_GC_FIELD_(name, ret, params) ret(*name) params;
  RK_GC_CL_SYMBOLS(RK_GC_FIELD_)
#undef RK_GC_FIELD_
} cl_api_t;

static const char *const kOpenclNames[] = {"libOpenCL.so.1", "libOpenCL.so",
                                           NULL};
static const char kBuildOptions[] = "-cl-std=CL1.2";

static cl_api_t g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ---- PoCL's cache directory ---------------------------------------------- */

static char g_pocl_cache[512];

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

static void remove_pocl_cache(void) {
  nftw(g_pocl_cache, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* PoCL keeps compiled kernels under $POCL_CACHE_DIR, by default in
 * ~/.cache/pocl: give it a private temporary directory unless the user
 * chose one. Done before the ICD loader first loads PoCL. */
static void use_temp_pocl_cache(void) {
  const char *set = getenv("POCL_CACHE_DIR");
  if (set != NULL && set[0] != '\0') return;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_pocl_cache, sizeof g_pocl_cache, "%s/rk-gpucompile-pocl.XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(g_pocl_cache) == NULL) return; /* PoCL's default, then */
  setenv("POCL_CACHE_DIR", g_pocl_cache, 1);
  atexit(remove_pocl_cache);
}

/* ---- Loading and choosing a device --------------------------------------- */

static void info_string(cl_api_t *api, cl_platform_id platform,
                        cl_device_id device, cl_uint param, char *out,
                        size_t cap) {
  size_t got = 0;
  cl_int err = device ? api->clGetDeviceInfo(device, param, cap, out, &got)
                      : api->clGetPlatformInfo(platform, param, cap, out, &got);
  if (err != CL_SUCCESS) snprintf(out, cap, "?");
  out[cap - 1] = '\0';
}

/* The first GPU of any platform, else the first device of any type. */
static void choose_device(cl_api_t *api) {
  cl_uint count = 0;
  cl_int err = api->clGetPlatformIDs(0, NULL, &count);
  if (err != CL_SUCCESS || count == 0) {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "OpenCL: no platform (%s loaded, clGetPlatformIDs: %s; "
                      "no vendor driver in /etc/OpenCL/vendors?)",
                      api->lib.path, cl_error_name(err));
    return;
  }
  cl_platform_id platforms[16];
  if (count > 16) count = 16;
  err = api->clGetPlatformIDs(count, platforms, NULL);
  if (err != CL_SUCCESS) {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "OpenCL: clGetPlatformIDs: %s", cl_error_name(err));
    return;
  }
  const cl_device_type kTypes[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
  for (size_t t = 0; t < 2 && api->device == NULL; t++) {
    for (cl_uint p = 0; p < count && api->device == NULL; p++) {
      cl_device_id device = NULL;
      cl_uint n = 0;
      if (api->clGetDeviceIDs(platforms[p], kTypes[t], 1, &device, &n) ==
              CL_SUCCESS &&
          n > 0) {
        api->platform = platforms[p];
        api->device = device;
      }
    }
  }
  if (api->device == NULL) {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "OpenCL: %u platform(s) but no device (%s)",
                      (unsigned)count, api->lib.path);
    return;
  }
  char platform[256], device[256], version[256];
  info_string(api, api->platform, NULL, CL_PLATFORM_NAME, platform,
              sizeof platform);
  info_string(api, NULL, api->device, CL_DEVICE_NAME, device, sizeof device);
  info_string(api, NULL, api->device, CL_DEVICE_VERSION, version,
              sizeof version);
  snprintf(api->description, sizeof api->description, "%s / %s (%s), %s",
           platform, device, version, api->lib.path);
  api->available = 1;
}

static void load(void) {
  cl_api_t *api = &g_api;
  use_temp_pocl_cache();
  rk__gc_library_open(&api->lib, "OpenCL ICD loader", "RK_GPUCOMPILE_OPENCL",
                      kOpenclNames);
  if (api->lib.handle == NULL) {
    rk__gc_log_printf(api->reason, sizeof api->reason, "%s", api->lib.error);
    return;
  }
  char missing[2048] = "";
#define RK_GC_REQUIRED_(name, ret, params)                                    \
  api->name = (ret(*) params)rk__gc_library_symbol(&api->lib, #name, missing, \
                                                   sizeof missing);
  RK_GC_CL_SYMBOLS(RK_GC_REQUIRED_)
#undef RK_GC_REQUIRED_
  if (missing[0] != '\0') {
    rk__gc_log_printf(api->reason, sizeof api->reason,
                      "OpenCL: %s lacks required functions:%s", api->lib.path,
                      missing);
    return;
  }
  choose_device(api);
}

static cl_api_t *api_or_reason(char *log, size_t log_cap) {
  pthread_once(&g_once, load);
  if (g_api.available) return &g_api;
  rk__gc_log_printf(log, log_cap, "%s", g_api.reason);
  return NULL;
}

/* ---- Building ------------------------------------------------------------ */

/* Replaces `log` with the program's build log (may be empty). */
static void copy_build_log(cl_api_t *api, cl_program prog, char *log,
                           size_t log_cap) {
  size_t size = 0;
  rk__gc_log_printf(log, log_cap, "%s", "");
  if (api->clGetProgramBuildInfo(prog, api->device, CL_PROGRAM_BUILD_LOG, 0,
                                 NULL, &size) != CL_SUCCESS ||
      size <= 1)
    return;
  char *text = malloc(size);
  if (text == NULL) return;
  if (api->clGetProgramBuildInfo(prog, api->device, CL_PROGRAM_BUILD_LOG, size,
                                 text, NULL) == CL_SUCCESS) {
    text[size - 1] = '\0';
    rk__gc_log_printf(log, log_cap, "%s", text);
  }
  free(text);
}

/* Checks that each of names[0..n) is a kernel of the built program. */
static int check_kernels(cl_api_t *api, cl_program prog,
                         const char *const *names, size_t n, char *log,
                         size_t log_cap) {
  size_t missing = 0;
  for (size_t i = 0; i < n; i++) {
    cl_int err = CL_INVALID_KERNEL_NAME;
    cl_kernel kernel =
        names[i] ? api->clCreateKernel(prog, names[i], &err) : NULL;
    if (kernel != NULL) {
      api->clReleaseKernel(kernel);
      continue;
    }
    rk__gc_log_append(log, log_cap, "%sno kernel named \"%s\" (%s)",
                      log_cap && log[0] ? "\n" : "",
                      names[i] ? names[i] : "(null)", cl_error_name(err));
    missing++;
  }
  if (missing == 0) return RK_GPUCOMPILE_OK;
  char kernels[4096];
  if (api->clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof kernels,
                            kernels, NULL) == CL_SUCCESS) {
    kernels[sizeof kernels - 1] = '\0';
    rk__gc_log_append(log, log_cap, "\nkernels in the program: %s",
                      kernels[0] ? kernels : "none");
  }
  return RK_GPUCOMPILE_FAILED;
}

static int build(const char *source, const char *const *names, size_t n,
                 char *log, size_t log_cap) {
  cl_api_t *api = api_or_reason(log, log_cap);
  if (api == NULL) return RK_GPUCOMPILE_UNAVAILABLE;
  if (source == NULL) {
    rk__gc_log_printf(log, log_cap, "rk_gpucompile_opencl: source is NULL");
    return RK_GPUCOMPILE_FAILED;
  }
  int rc = RK_GPUCOMPILE_FAILED;
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, (cl_context_properties)api->platform, 0};
  cl_context context =
      api->clCreateContext(props, 1, &api->device, NULL, NULL, &err);
  if (context == NULL) {
    rk__gc_log_printf(log, log_cap, "OpenCL: clCreateContext (%s): %s",
                      api->description, cl_error_name(err));
    return RK_GPUCOMPILE_UNAVAILABLE;
  }
  cl_program prog =
      api->clCreateProgramWithSource(context, 1, &source, NULL, &err);
  if (prog == NULL) {
    rk__gc_log_printf(log, log_cap, "clCreateProgramWithSource: %s",
                      cl_error_name(err));
    goto release_context;
  }
  err = api->clBuildProgram(prog, 1, &api->device, kBuildOptions, NULL, NULL);
  copy_build_log(api, prog, log, log_cap);
  if (err == CL_COMPILER_NOT_AVAILABLE) {
    rk__gc_log_append(log, log_cap, "%sOpenCL: %s has no compiler",
                      log_cap && log[0] ? "\n" : "", api->description);
    rc = RK_GPUCOMPILE_UNAVAILABLE;
    goto release_program;
  }
  if (err != CL_SUCCESS) {
    if (err != CL_BUILD_PROGRAM_FAILURE || log_cap == 0 || log[0] == '\0')
      rk__gc_log_append(log, log_cap, "%sclBuildProgram(\"%s\"): %s (%d)",
                        log_cap && log[0] ? "\n" : "", kBuildOptions,
                        cl_error_name(err), (int)err);
    goto release_program;
  }
  rc = check_kernels(api, prog, names, n, log, log_cap);
release_program:
  api->clReleaseProgram(prog);
release_context:
  api->clReleaseContext(context);
  return rc;
}

int rk_gpucompile_opencl(const char *source, char *log, size_t log_cap) {
  return build(source, NULL, 0, log, log_cap);
}

int rk_gpucompile_opencl_kernels(const char *source, const char *const *names,
                                 size_t n, char *log, size_t log_cap) {
  return build(source, names, n, log, log_cap);
}

int rk_gpucompile_opencl_describe(char *out, size_t cap) {
  cl_api_t *api = api_or_reason(out, cap);
  if (api == NULL) return RK_GPUCOMPILE_UNAVAILABLE;
  rk__gc_log_printf(out, cap, "%s", api->description);
  return RK_GPUCOMPILE_OK;
}
