/* The CUDA driver API and NVRTC as rk uses them, loaded at run time.
 *
 * No CUDA header is needed to build rk: the few types, constants and entry
 * points used are declared here, with the values of the CUDA 12/13 headers.
 * The same binary runs on machines with and without a driver.
 *
 * Driver. libcuda.so.1, then libcuda.so (or $RK_CUDA_LIB alone) is opened
 * with dlopen; cuGetProcAddress_v2 (cuGetProcAddress on drivers before 12.0)
 * comes from dlsym and every other entry point from cuGetProcAddress at
 * RK_CUDA_API_VERSION, so rk gets the ABI it was written for whatever newer
 * driver is installed. The toolkit's stub libcuda (which answers every call
 * with CUDA_ERROR_STUB_LIBRARY) is recognised and reported as "no driver".
 *
 * NVRTC. libnvrtc.so.13, .so.12, then libnvrtc.so (or $RK_NVRTC_LIB alone),
 * entry points from dlsym. Loaded separately from the driver: NVRTC works
 * without a GPU (rk's tests compile every generated CUDA source with it),
 * and a driver without NVRTC still runs prebuilt modules.
 *
 * Each table entry is X(name, required): a missing required symbol fails
 * the load naming it; a missing optional one leaves its pointer NULL.
 */
#ifndef RK_BACKENDS_CUDA_CUDA_API_H_
#define RK_BACKENDS_CUDA_CUDA_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/status.h"

/* The driver API version whose entry points rk asks for (CUDA 12.0). */
#define RK_CUDA_API_VERSION 12000

/* ---- Types ----------------------------------------------------------------
 */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;

typedef int nvrtcResult;
typedef struct rk_nvrtc_program_st *nvrtcProgram;

/* ---- Constants ------------------------------------------------------------
 */

enum {
  RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  RK_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  RK_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  RK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  RK_CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  RK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  RK_CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
  RK_CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
  RK_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  RK_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  RK_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  RK_CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
  RK_CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
  RK_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  RK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

enum {
  RK_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  RK_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  RK_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  RK_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

#define RK_CU_MEMHOSTALLOC_PORTABLE 0x01u
#define RK_CU_MEMHOSTALLOC_DEVICEMAP 0x02u
#define RK_CU_STREAM_NON_BLOCKING 0x1u
#define RK_CU_EVENT_DEFAULT 0x0u
#define RK_CU_EVENT_DISABLE_TIMING 0x2u
#define RK_CU_GET_PROC_ADDRESS_DEFAULT 0u

/* ---- Driver errors: name, value, rk status ------------------------------- */

#define RK_CU_ERRORS(X)                                                   \
  X(CUDA_SUCCESS, 0, RK_OK)                                               \
  X(CUDA_ERROR_INVALID_VALUE, 1, RK_ERR_INVALID_ARGUMENT)                 \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2, RK_ERR_OUT_OF_MEMORY)                    \
  X(CUDA_ERROR_NOT_INITIALIZED, 3, RK_ERR_UNAVAILABLE)                    \
  X(CUDA_ERROR_DEINITIALIZED, 4, RK_ERR_UNAVAILABLE)                      \
  X(CUDA_ERROR_PROFILER_DISABLED, 5, RK_ERR_UNAVAILABLE)                  \
  X(CUDA_ERROR_STUB_LIBRARY, 34, RK_ERR_UNAVAILABLE)                      \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36, RK_ERR_UNAVAILABLE)        \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46, RK_ERR_UNAVAILABLE)                \
  X(CUDA_ERROR_NO_DEVICE, 100, RK_ERR_UNAVAILABLE)                        \
  X(CUDA_ERROR_INVALID_DEVICE, 101, RK_ERR_INVALID_ARGUMENT)              \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102, RK_ERR_UNAVAILABLE)              \
  X(CUDA_ERROR_INVALID_IMAGE, 200, RK_ERR_COMPILE)                        \
  X(CUDA_ERROR_INVALID_CONTEXT, 201, RK_ERR_INVALID_STATE)                \
  X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, 202, RK_ERR_INVALID_STATE)        \
  X(CUDA_ERROR_MAP_FAILED, 205, RK_ERR_OUT_OF_MEMORY)                     \
  X(CUDA_ERROR_UNMAP_FAILED, 206, RK_ERR_INTERNAL)                        \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209, RK_ERR_COMPILE)                    \
  X(CUDA_ERROR_ECC_UNCORRECTABLE, 214, RK_ERR_DEVICE_LOST)                \
  X(CUDA_ERROR_UNSUPPORTED_LIMIT, 215, RK_ERR_UNIMPLEMENTED)              \
  X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, 216, RK_ERR_INVALID_STATE)         \
  X(CUDA_ERROR_INVALID_PTX, 218, RK_ERR_COMPILE)                          \
  X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220, RK_ERR_DEVICE_LOST)             \
  X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221, RK_ERR_UNAVAILABLE)           \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222, RK_ERR_COMPILE)              \
  X(CUDA_ERROR_JIT_COMPILATION_DISABLED, 223, RK_ERR_UNAVAILABLE)         \
  X(CUDA_ERROR_INVALID_SOURCE, 300, RK_ERR_COMPILE)                       \
  X(CUDA_ERROR_FILE_NOT_FOUND, 301, RK_ERR_NOT_FOUND)                     \
  X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, 302, RK_ERR_NOT_FOUND)     \
  X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, 303, RK_ERR_INTERNAL)           \
  X(CUDA_ERROR_OPERATING_SYSTEM, 304, RK_ERR_INTERNAL)                    \
  X(CUDA_ERROR_INVALID_HANDLE, 400, RK_ERR_INVALID_ARGUMENT)              \
  X(CUDA_ERROR_ILLEGAL_STATE, 401, RK_ERR_INVALID_STATE)                  \
  X(CUDA_ERROR_NOT_FOUND, 500, RK_ERR_NOT_FOUND)                          \
  X(CUDA_ERROR_NOT_READY, 600, RK_ERR_TIMEOUT)                            \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700, RK_ERR_DEVICE_LOST)                  \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701, RK_ERR_LAUNCH)               \
  X(CUDA_ERROR_LAUNCH_TIMEOUT, 702, RK_ERR_DEVICE_LOST)                   \
  X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708, RK_ERR_INVALID_STATE)         \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709, RK_ERR_INVALID_STATE)           \
  X(CUDA_ERROR_ASSERT, 710, RK_ERR_DEVICE_LOST)                           \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712, RK_ERR_INVALID_STATE) \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713, RK_ERR_INVALID_STATE)     \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714, RK_ERR_DEVICE_LOST)             \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715, RK_ERR_DEVICE_LOST)              \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716, RK_ERR_DEVICE_LOST)               \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717, RK_ERR_DEVICE_LOST)            \
  X(CUDA_ERROR_INVALID_PC, 718, RK_ERR_DEVICE_LOST)                       \
  X(CUDA_ERROR_LAUNCH_FAILED, 719, RK_ERR_DEVICE_LOST)                    \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720, RK_ERR_LAUNCH)          \
  X(CUDA_ERROR_NOT_PERMITTED, 800, RK_ERR_INVALID_STATE)                  \
  X(CUDA_ERROR_NOT_SUPPORTED, 801, RK_ERR_UNIMPLEMENTED)                  \
  X(CUDA_ERROR_SYSTEM_NOT_READY, 802, RK_ERR_UNAVAILABLE)                 \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803, RK_ERR_UNAVAILABLE)           \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804, RK_ERR_UNAVAILABLE)   \
  X(CUDA_ERROR_TIMEOUT, 909, RK_ERR_TIMEOUT)                              \
  X(CUDA_ERROR_UNKNOWN, 999, RK_ERR_INTERNAL)

enum {
#define RK_CU_ENUM_(name, value, status) RK_##name = value,
  RK_CU_ERRORS(RK_CU_ENUM_)
#undef RK_CU_ENUM_
};

/* ---- NVRTC errors -------------------------------------------------------- */

#define RK_NVRTC_ERRORS(X)                                                 \
  X(NVRTC_SUCCESS, 0, RK_OK)                                               \
  X(NVRTC_ERROR_OUT_OF_MEMORY, 1, RK_ERR_OUT_OF_MEMORY)                    \
  X(NVRTC_ERROR_PROGRAM_CREATION_FAILURE, 2, RK_ERR_INTERNAL)              \
  X(NVRTC_ERROR_INVALID_INPUT, 3, RK_ERR_INVALID_ARGUMENT)                 \
  X(NVRTC_ERROR_INVALID_PROGRAM, 4, RK_ERR_INTERNAL)                       \
  X(NVRTC_ERROR_INVALID_OPTION, 5, RK_ERR_COMPILE)                         \
  X(NVRTC_ERROR_COMPILATION, 6, RK_ERR_COMPILE)                            \
  X(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, 7, RK_ERR_COMPILE)              \
  X(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION, 8, RK_ERR_INTERNAL) \
  X(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION, 9, RK_ERR_INTERNAL)   \
  X(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID, 10, RK_ERR_INTERNAL)            \
  X(NVRTC_ERROR_INTERNAL_ERROR, 11, RK_ERR_INTERNAL)                       \
  X(NVRTC_ERROR_TIME_FILE_WRITE_FAILED, 12, RK_ERR_INTERNAL)               \
  X(NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED, 13, RK_ERR_INTERNAL)              \
  X(NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED, 14, RK_ERR_OUT_OF_MEMORY)       \
  X(NVRTC_ERROR_PCH_CREATE, 15, RK_ERR_INTERNAL)                           \
  X(NVRTC_ERROR_CANCELLED, 16, RK_ERR_INTERNAL)                            \
  X(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED, 17, RK_ERR_INTERNAL)

enum {
#define RK_NVRTC_ENUM_(name, value, status) RK_##name = value,
  RK_NVRTC_ERRORS(RK_NVRTC_ENUM_)
#undef RK_NVRTC_ENUM_
};

/* ---- Entry points -------------------------------------------------------- */

/* Driver entry points: X(name, required, return type, parameters). The
 * names are the base names cuGetProcAddress takes (no _v2 suffixes). */
#define RK_CU_SYMBOLS(X)                                                       \
  X(cuInit, true, CUresult, (unsigned int flags))                              \
  X(cuDriverGetVersion, true, CUresult, (int *version))                        \
  X(cuGetErrorName, true, CUresult, (CUresult err, const char **name))         \
  X(cuGetErrorString, true, CUresult, (CUresult err, const char **text))       \
  X(cuDeviceGetCount, true, CUresult, (int *count))                            \
  X(cuDeviceGet, true, CUresult, (CUdevice * dev, int ordinal))                \
  X(cuDeviceGetName, true, CUresult, (char *name, int len, CUdevice dev))      \
  X(cuDeviceGetAttribute, true, CUresult,                                      \
    (int *value, CUdevice_attribute attr, CUdevice dev))                       \
  X(cuDeviceTotalMem, true, CUresult, (size_t * bytes, CUdevice dev))          \
  X(cuDevicePrimaryCtxRetain, true, CUresult, (CUcontext * ctx, CUdevice dev)) \
  X(cuDevicePrimaryCtxRelease, true, CUresult, (CUdevice dev))                 \
  X(cuCtxSetCurrent, true, CUresult, (CUcontext ctx))                          \
  X(cuCtxGetCurrent, true, CUresult, (CUcontext * ctx))                        \
  X(cuCtxSynchronize, true, CUresult, (void))                                  \
  X(cuMemAlloc, true, CUresult, (CUdeviceptr * ptr, size_t bytes))             \
  X(cuMemFree, true, CUresult, (CUdeviceptr ptr))                              \
  X(cuMemAllocAsync, false, CUresult,                                          \
    (CUdeviceptr * ptr, size_t bytes, CUstream stream))                        \
  X(cuMemFreeAsync, false, CUresult, (CUdeviceptr ptr, CUstream stream))       \
  X(cuMemGetInfo, false, CUresult, (size_t * free_bytes, size_t * total))      \
  X(cuMemHostAlloc, true, CUresult,                                            \
    (void **ptr, size_t bytes, unsigned int flags))                            \
  X(cuMemFreeHost, true, CUresult, (void *ptr))                                \
  X(cuMemHostGetDevicePointer, true, CUresult,                                 \
    (CUdeviceptr * dptr, void *host, unsigned int flags))                      \
  X(cuMemcpyHtoD, true, CUresult,                                              \
    (CUdeviceptr dst, const void *src, size_t bytes))                          \
  X(cuMemcpyDtoH, true, CUresult, (void *dst, CUdeviceptr src, size_t bytes))  \
  X(cuMemcpyDtoD, true, CUresult,                                              \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes))                          \
  X(cuMemcpyHtoDAsync, true, CUresult,                                         \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))         \
  X(cuMemcpyDtoHAsync, true, CUresult,                                         \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))               \
  X(cuMemcpyDtoDAsync, true, CUresult,                                         \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemsetD8Async, true, CUresult,                                           \
    (CUdeviceptr dst, unsigned char value, size_t n, CUstream stream))         \
  X(cuModuleLoadData, true, CUresult, (CUmodule * mod, const void *image))     \
  X(cuModuleUnload, true, CUresult, (CUmodule mod))                            \
  X(cuModuleGetFunction, true, CUresult,                                       \
    (CUfunction * fn, CUmodule mod, const char *name))                         \
  X(cuFuncGetAttribute, true, CUresult,                                        \
    (int *value, CUfunction_attribute attr, CUfunction fn))                    \
  X(cuFuncSetAttribute, true, CUresult,                                        \
    (CUfunction fn, CUfunction_attribute attr, int value))                     \
  X(cuLaunchKernel, true, CUresult,                                            \
    (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,         \
     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,   \
     CUstream stream, void **params, void **extra))                            \
  X(cuLaunchCooperativeKernel, false, CUresult,                                \
    (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,         \
     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,   \
     CUstream stream, void **params))                                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, true, CUresult,               \
    (int *blocks, CUfunction fn, int block_size, size_t dynamic_shared))       \
  X(cuStreamCreate, true, CUresult, (CUstream * stream, unsigned int flags))   \
  X(cuStreamDestroy, true, CUresult, (CUstream stream))                        \
  X(cuStreamSynchronize, true, CUresult, (CUstream stream))                    \
  X(cuStreamQuery, true, CUresult, (CUstream stream))                          \
  X(cuStreamWaitEvent, true, CUresult,                                         \
    (CUstream stream, CUevent event, unsigned int flags))                      \
  X(cuEventCreate, true, CUresult, (CUevent * event, unsigned int flags))      \
  X(cuEventDestroy, true, CUresult, (CUevent event))                           \
  X(cuEventRecord, true, CUresult, (CUevent event, CUstream stream))           \
  X(cuEventQuery, true, CUresult, (CUevent event))                             \
  X(cuEventSynchronize, true, CUresult, (CUevent event))                       \
  X(cuEventElapsedTime, true, CUresult, (float *ms, CUevent start, CUevent end))

/* NVRTC entry points: X(name, required, return type, parameters). */
#define RK_NVRTC_SYMBOLS(X)                                                    \
  X(nvrtcVersion, true, nvrtcResult, (int *major, int *minor))                 \
  X(nvrtcGetErrorString, true, const char *, (nvrtcResult result))             \
  X(nvrtcCreateProgram, true, nvrtcResult,                                     \
    (nvrtcProgram * prog, const char *src, const char *name, int nheaders,     \
     const char *const *headers, const char *const *include_names))            \
  X(nvrtcDestroyProgram, true, nvrtcResult, (nvrtcProgram * prog))             \
  X(nvrtcCompileProgram, true, nvrtcResult,                                    \
    (nvrtcProgram prog, int nopts, const char *const *opts))                   \
  X(nvrtcGetProgramLogSize, true, nvrtcResult,                                 \
    (nvrtcProgram prog, size_t * size))                                        \
  X(nvrtcGetProgramLog, true, nvrtcResult, (nvrtcProgram prog, char *log))     \
  X(nvrtcGetPTXSize, true, nvrtcResult, (nvrtcProgram prog, size_t * size))    \
  X(nvrtcGetPTX, true, nvrtcResult, (nvrtcProgram prog, char *ptx))            \
  X(nvrtcGetCUBINSize, false, nvrtcResult, (nvrtcProgram prog, size_t * size)) \
  X(nvrtcGetCUBIN, false, nvrtcResult, (nvrtcProgram prog, char *cubin))       \
  X(nvrtcGetNumSupportedArchs, false, nvrtcResult, (int *count))               \
  X(nvrtcGetSupportedArchs, false, nvrtcResult, (int *archs))

/* ---- Loaded libraries ---------------------------------------------------- */

typedef struct rk_cu_api {
  void *handle;
  char path[512];     /* the library opened */
  int driver_version; /* cuDriverGetVersion: 12040 is 12.4 */
#define RK_CU_FIELD_(name, required, ret, params) ret(*name) params;
  RK_CU_SYMBOLS(RK_CU_FIELD_)
#undef RK_CU_FIELD_
} rk_cu_api_t;

typedef struct rk_nvrtc_api {
  void *handle;
  char path[512];
  int major, minor; /* nvrtcVersion */
#define RK_NVRTC_FIELD_(name, required, ret, params) ret(*name) params;
  RK_NVRTC_SYMBOLS(RK_NVRTC_FIELD_)
#undef RK_NVRTC_FIELD_
} rk_nvrtc_api_t;

/* Opens the driver, resolves its entry points and calls cuInit(0). On
 * failure returns RK_ERR_UNAVAILABLE with the reason (the paths tried and
 * what dlopen said; "the CUDA toolkit's stub libcuda ..., not a driver";
 * the missing required entry point; cuInit's error) and leaves *api
 * zeroed. CUDA_ERROR_NO_DEVICE from cuInit is not a failure: the api is
 * loaded and the caller finds 0 devices. The environment is read on every
 * call. Each api belongs to its caller; separate apis may be loaded from
 * several threads at once. */
rk_status_t rk__cu_api_load(rk_cu_api_t *api);
/* Closes the library and zeroes *api (a zeroed api is fine); nothing
 * obtained through it may be used afterwards. */
void rk__cu_api_unload(rk_cu_api_t *api);

/* The process-wide NVRTC, loaded on first use (thread-safe). On failure
 * RK_ERR_UNAVAILABLE naming the paths tried; the same answer every call. */
rk_status_t rk__nvrtc_api(const rk_nvrtc_api_t **out_api);

/* "CUDA_ERROR_ILLEGAL_ADDRESS"; "an unknown CUDA error" outside the table.
 * Never NULL. */
const char *rk__cu_error_name(CUresult err);
rk_status_t rk__cu_error_status(CUresult err);
/* rk__fail with the mapped status and "cuda: <what>: <name> (<code>): <the
 * driver's text>" (the text when the driver is loaded and knows it). */
rk_status_t rk__cu_fail(const rk_cu_api_t *api, CUresult err, const char *what);

const char *rk__nvrtc_error_name(nvrtcResult err);
rk_status_t rk__nvrtc_error_status(nvrtcResult err);
rk_status_t rk__nvrtc_fail(const rk_nvrtc_api_t *api, nvrtcResult err,
                           const char *what);

/* Opening vendor libraries (the driver, NVRTC, cuBLAS). */
struct rk__strbuf;
/* dlopen's first success among names[0..count), its full path (as the
 * dynamic linker found it) in path. On failure returns NULL and appends
 * "<name>: <why>" for each name to `tried`, separated by "; ". */
void *rk__cu_open_first(const char *const *names, size_t count, char *path,
                        size_t path_cap, struct rk__strbuf *tried);
/* The library names to try into `names`: $<var> alone when set, else the
 * `ndefaults` defaults. Returns how many. */
size_t rk__cu_library_names(const char *var, const char *const *defaults,
                            size_t ndefaults, const char **names);

#endif /* RK_BACKENDS_CUDA_CUDA_API_H_ */
