/* The OpenCL API as the OpenCL backend uses it, loaded at run time.
 *
 * The ICD loader (libOpenCL.so.1, then libOpenCL.so; $RK_OPENCL_LIB
 * replaces both) is opened with dlopen and its entry points are looked up
 * through one X-macro list, RK_CL_SYMBOLS, expanded into the fields of
 * rk_cl_api_t and into the lookups. The few types and constants needed are
 * declared here from the OpenCL 1.2 specification, so no OpenCL headers are
 * needed to build.
 *
 *   rk_cl_api_t api;
 *   if (rk__cl_api_load(&api) != RK_OK) ... // rk_last_error(): paths tried
 *   api.clGetPlatformIDs(...);
 *   rk__cl_api_unload(&api);
 *
 * The library stays loaded once opened (see rk__cl_api_unload).
 * Every cl_int error code maps to an rk status in one table (RK_CL_ERRORS),
 * which also gives its name for messages ("CL_INVALID_KERNEL_ARGS").
 */
#ifndef RK_BACKENDS_OPENCL_CL_API_H_
#define RK_BACKENDS_OPENCL_CL_API_H_

#include <stddef.h>
#include <stdint.h>

#include "rk/status.h"

/* ---- Types (OpenCL 1.2, cl.h / cl_platform.h) --------------------------- */

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint32_t cl_bool;
typedef uint64_t cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_device_fp_config;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_kernel_work_group_info;
typedef cl_uint cl_event_info;
typedef intptr_t cl_context_properties;
typedef struct rk_cl_platform *cl_platform_id;
typedef struct rk_cl_device *cl_device_id;
typedef struct rk_cl_context *cl_context;
typedef struct rk_cl_queue *cl_command_queue;
typedef struct rk_cl_mem *cl_mem;
typedef struct rk_cl_program *cl_program;
typedef struct rk_cl_kernel *cl_kernel;
typedef struct rk_cl_event *cl_event;

typedef void (*cl_context_notify_fn)(const char *errinfo, const void *info,
                                     size_t cb, void *user);
typedef void (*cl_program_notify_fn)(cl_program program, void *user);

/* ---- Constants ---------------------------------------------------------- */

#define RK_CL_TRUE 1u
#define RK_CL_FALSE 0u

#define RK_CL_PLATFORM_VERSION 0x0901
#define RK_CL_PLATFORM_NAME 0x0902
#define RK_CL_PLATFORM_VENDOR 0x0903

#define RK_CL_DEVICE_TYPE_CPU (1u << 1)
#define RK_CL_DEVICE_TYPE_GPU (1u << 2)
#define RK_CL_DEVICE_TYPE_ACCELERATOR (1u << 3)
#define RK_CL_DEVICE_TYPE_ALL 0xFFFFFFFFu

#define RK_CL_DEVICE_TYPE 0x1000
#define RK_CL_DEVICE_PROFILE 0x102E
#define RK_CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define RK_CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define RK_CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define RK_CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define RK_CL_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019
#define RK_CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define RK_CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define RK_CL_DEVICE_AVAILABLE 0x1027
#define RK_CL_DEVICE_NAME 0x102B
#define RK_CL_DEVICE_VENDOR 0x102C
#define RK_CL_DEVICE_VERSION 0x102F
#define RK_CL_DEVICE_EXTENSIONS 0x1030
#define RK_CL_DEVICE_DOUBLE_FP_CONFIG 0x1032

#define RK_CL_CONTEXT_PLATFORM 0x1084

#define RK_CL_MEM_READ_WRITE (1u << 0)

#define RK_CL_PROGRAM_BUILD_LOG 0x1183
#define RK_CL_KERNEL_WORK_GROUP_SIZE 0x11B0
#define RK_CL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3
#define RK_CL_COMPLETE 0x0

/* ---- Error codes: name, value, rk status -------------------------------- */

#define RK_CL_ERRORS(X)                                               \
  X(CL_SUCCESS, 0, RK_OK)                                             \
  X(CL_DEVICE_NOT_FOUND, -1, RK_ERR_UNAVAILABLE)                      \
  X(CL_DEVICE_NOT_AVAILABLE, -2, RK_ERR_UNAVAILABLE)                  \
  X(CL_COMPILER_NOT_AVAILABLE, -3, RK_ERR_UNAVAILABLE)                \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4, RK_ERR_OUT_OF_MEMORY)       \
  X(CL_OUT_OF_RESOURCES, -5, RK_ERR_OUT_OF_MEMORY)                    \
  X(CL_OUT_OF_HOST_MEMORY, -6, RK_ERR_OUT_OF_MEMORY)                  \
  X(CL_PROFILING_INFO_NOT_AVAILABLE, -7, RK_ERR_UNAVAILABLE)          \
  X(CL_MEM_COPY_OVERLAP, -8, RK_ERR_INVALID_ARGUMENT)                 \
  X(CL_IMAGE_FORMAT_MISMATCH, -9, RK_ERR_INVALID_ARGUMENT)            \
  X(CL_IMAGE_FORMAT_NOT_SUPPORTED, -10, RK_ERR_UNIMPLEMENTED)         \
  X(CL_BUILD_PROGRAM_FAILURE, -11, RK_ERR_COMPILE)                    \
  X(CL_MAP_FAILURE, -12, RK_ERR_INTERNAL)                             \
  X(CL_MISALIGNED_SUB_BUFFER_OFFSET, -13, RK_ERR_INVALID_ARGUMENT)    \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, -14, RK_ERR_LAUNCH) \
  X(CL_COMPILE_PROGRAM_FAILURE, -15, RK_ERR_COMPILE)                  \
  X(CL_LINKER_NOT_AVAILABLE, -16, RK_ERR_UNAVAILABLE)                 \
  X(CL_LINK_PROGRAM_FAILURE, -17, RK_ERR_COMPILE)                     \
  X(CL_DEVICE_PARTITION_FAILED, -18, RK_ERR_UNAVAILABLE)              \
  X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, -19, RK_ERR_UNAVAILABLE)        \
  X(CL_INVALID_VALUE, -30, RK_ERR_INVALID_ARGUMENT)                   \
  X(CL_INVALID_DEVICE_TYPE, -31, RK_ERR_INVALID_ARGUMENT)             \
  X(CL_INVALID_PLATFORM, -32, RK_ERR_INTERNAL)                        \
  X(CL_INVALID_DEVICE, -33, RK_ERR_INTERNAL)                          \
  X(CL_INVALID_CONTEXT, -34, RK_ERR_INTERNAL)                         \
  X(CL_INVALID_QUEUE_PROPERTIES, -35, RK_ERR_UNIMPLEMENTED)           \
  X(CL_INVALID_COMMAND_QUEUE, -36, RK_ERR_INTERNAL)                   \
  X(CL_INVALID_HOST_PTR, -37, RK_ERR_INVALID_ARGUMENT)                \
  X(CL_INVALID_MEM_OBJECT, -38, RK_ERR_INVALID_ARGUMENT)              \
  X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, -39, RK_ERR_INVALID_ARGUMENT) \
  X(CL_INVALID_IMAGE_SIZE, -40, RK_ERR_INVALID_ARGUMENT)              \
  X(CL_INVALID_SAMPLER, -41, RK_ERR_INVALID_ARGUMENT)                 \
  X(CL_INVALID_BINARY, -42, RK_ERR_COMPILE)                           \
  X(CL_INVALID_BUILD_OPTIONS, -43, RK_ERR_COMPILE)                    \
  X(CL_INVALID_PROGRAM, -44, RK_ERR_COMPILE)                          \
  X(CL_INVALID_PROGRAM_EXECUTABLE, -45, RK_ERR_COMPILE)               \
  X(CL_INVALID_KERNEL_NAME, -46, RK_ERR_NOT_FOUND)                    \
  X(CL_INVALID_KERNEL_DEFINITION, -47, RK_ERR_COMPILE)                \
  X(CL_INVALID_KERNEL, -48, RK_ERR_INTERNAL)                          \
  X(CL_INVALID_ARG_INDEX, -49, RK_ERR_INVALID_ARGUMENT)               \
  X(CL_INVALID_ARG_VALUE, -50, RK_ERR_INVALID_ARGUMENT)               \
  X(CL_INVALID_ARG_SIZE, -51, RK_ERR_INVALID_ARGUMENT)                \
  X(CL_INVALID_KERNEL_ARGS, -52, RK_ERR_LAUNCH)                       \
  X(CL_INVALID_WORK_DIMENSION, -53, RK_ERR_LAUNCH)                    \
  X(CL_INVALID_WORK_GROUP_SIZE, -54, RK_ERR_LAUNCH)                   \
  X(CL_INVALID_WORK_ITEM_SIZE, -55, RK_ERR_LAUNCH)                    \
  X(CL_INVALID_GLOBAL_OFFSET, -56, RK_ERR_LAUNCH)                     \
  X(CL_INVALID_EVENT_WAIT_LIST, -57, RK_ERR_INTERNAL)                 \
  X(CL_INVALID_EVENT, -58, RK_ERR_INTERNAL)                           \
  X(CL_INVALID_OPERATION, -59, RK_ERR_INVALID_STATE)                  \
  X(CL_INVALID_GL_OBJECT, -60, RK_ERR_INVALID_ARGUMENT)               \
  X(CL_INVALID_BUFFER_SIZE, -61, RK_ERR_OUT_OF_MEMORY)                \
  X(CL_INVALID_MIP_LEVEL, -62, RK_ERR_INVALID_ARGUMENT)               \
  X(CL_INVALID_GLOBAL_WORK_SIZE, -63, RK_ERR_LAUNCH)                  \
  X(CL_INVALID_PROPERTY, -64, RK_ERR_INVALID_ARGUMENT)                \
  X(CL_INVALID_IMAGE_DESCRIPTOR, -65, RK_ERR_INVALID_ARGUMENT)        \
  X(CL_INVALID_COMPILER_OPTIONS, -66, RK_ERR_COMPILE)                 \
  X(CL_INVALID_LINKER_OPTIONS, -67, RK_ERR_COMPILE)                   \
  X(CL_INVALID_DEVICE_PARTITION_COUNT, -68, RK_ERR_INVALID_ARGUMENT)  \
  X(CL_INVALID_PIPE_SIZE, -69, RK_ERR_INVALID_ARGUMENT)               \
  X(CL_INVALID_DEVICE_QUEUE, -70, RK_ERR_INTERNAL)                    \
  X(CL_INVALID_SPEC_ID, -71, RK_ERR_INVALID_ARGUMENT)                 \
  X(CL_MAX_SIZE_RESTRICTION_EXCEEDED, -72, RK_ERR_OUT_OF_MEMORY)      \
  X(CL_PLATFORM_NOT_FOUND_KHR, -1001, RK_ERR_UNAVAILABLE)

enum {
#define RK_CL_ENUM_(name, value, status) RK_##name = value,
  RK_CL_ERRORS(RK_CL_ENUM_)
#undef RK_CL_ENUM_
};

/* "CL_INVALID_KERNEL_ARGS"; "an unknown OpenCL error" for codes outside the
 * table. Never NULL. */
const char *rk__cl_error_name(cl_int err);
/* The rk status for a cl error (RK_ERR_INTERNAL for unknown codes). */
rk_status_t rk__cl_error_status(cl_int err);
/* rk__fail with the mapped status and "<what>: <CL name> (<code>)". */
rk_status_t rk__cl_fail(cl_int err, const char *what);

/* ---- Entry points ------------------------------------------------------- */

/* R(name, return type, parameters) for required symbols, O(...) for
 * optional ones (NULL when the loader lacks them). */
#define RK_CL_SYMBOLS(R, O)                                                  \
  R(clGetPlatformIDs, cl_int,                                                \
    (cl_uint num_entries, cl_platform_id * platforms, cl_uint * num))        \
  R(clGetPlatformInfo, cl_int,                                               \
    (cl_platform_id platform, cl_platform_info param, size_t size,           \
     void *value, size_t *size_ret))                                         \
  R(clGetDeviceIDs, cl_int,                                                  \
    (cl_platform_id platform, cl_device_type type, cl_uint num_entries,      \
     cl_device_id * devices, cl_uint * num))                                 \
  R(clGetDeviceInfo, cl_int,                                                 \
    (cl_device_id device, cl_device_info param, size_t size, void *value,    \
     size_t *size_ret))                                                      \
  R(clCreateContext, cl_context,                                             \
    (const cl_context_properties *props, cl_uint num_devices,                \
     const cl_device_id *devices, cl_context_notify_fn notify, void *user,   \
     cl_int *err))                                                           \
  R(clReleaseContext, cl_int, (cl_context context))                          \
  R(clCreateCommandQueue, cl_command_queue,                                  \
    (cl_context context, cl_device_id device,                                \
     cl_command_queue_properties props, cl_int * err))                       \
  R(clReleaseCommandQueue, cl_int, (cl_command_queue queue))                 \
  R(clFlush, cl_int, (cl_command_queue queue))                               \
  R(clFinish, cl_int, (cl_command_queue queue))                              \
  R(clCreateBuffer, cl_mem,                                                  \
    (cl_context context, cl_mem_flags flags, size_t size, void *host,        \
     cl_int *err))                                                           \
  R(clReleaseMemObject, cl_int, (cl_mem mem))                                \
  R(clEnqueueReadBuffer, cl_int,                                             \
    (cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset, \
     size_t size, void *ptr, cl_uint nwait, const cl_event *wait,            \
     cl_event *event))                                                       \
  R(clEnqueueWriteBuffer, cl_int,                                            \
    (cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset, \
     size_t size, const void *ptr, cl_uint nwait, const cl_event *wait,      \
     cl_event *event))                                                       \
  R(clEnqueueCopyBuffer, cl_int,                                             \
    (cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,      \
     size_t dst_offset, size_t size, cl_uint nwait, const cl_event *wait,    \
     cl_event *event))                                                       \
  R(clCreateProgramWithSource, cl_program,                                   \
    (cl_context context, cl_uint count, const char **strings,                \
     const size_t *lengths, cl_int *err))                                    \
  R(clBuildProgram, cl_int,                                                  \
    (cl_program program, cl_uint num_devices, const cl_device_id *devices,   \
     const char *options, cl_program_notify_fn notify, void *user))          \
  R(clGetProgramBuildInfo, cl_int,                                           \
    (cl_program program, cl_device_id device, cl_program_build_info param,   \
     size_t size, void *value, size_t *size_ret))                            \
  R(clRetainProgram, cl_int, (cl_program program))                           \
  R(clReleaseProgram, cl_int, (cl_program program))                          \
  R(clCreateKernel, cl_kernel,                                               \
    (cl_program program, const char *name, cl_int *err))                     \
  R(clReleaseKernel, cl_int, (cl_kernel kernel))                             \
  R(clSetKernelArg, cl_int,                                                  \
    (cl_kernel kernel, cl_uint index, size_t size, const void *value))       \
  R(clGetKernelWorkGroupInfo, cl_int,                                        \
    (cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param, \
     size_t size, void *value, size_t *size_ret))                            \
  R(clEnqueueNDRangeKernel, cl_int,                                          \
    (cl_command_queue queue, cl_kernel kernel, cl_uint dims,                 \
     const size_t *offset, const size_t *global, const size_t *local,        \
     cl_uint nwait, const cl_event *wait, cl_event *event))                  \
  R(clWaitForEvents, cl_int, (cl_uint n, const cl_event *events))            \
  R(clGetEventInfo, cl_int,                                                  \
    (cl_event event, cl_event_info param, size_t size, void *value,          \
     size_t *size_ret))                                                      \
  R(clRetainEvent, cl_int, (cl_event event))                                 \
  R(clReleaseEvent, cl_int, (cl_event event))                                \
  O(clUnloadPlatformCompiler, cl_int, (cl_platform_id platform))

typedef struct rk_cl_api {
  void *handle;
  char path[256]; /* the library that was opened */
#define RK_CL_FIELD_(name, ret, params) ret(*name) params;
  RK_CL_SYMBOLS(RK_CL_FIELD_, RK_CL_FIELD_)
#undef RK_CL_FIELD_
} rk_cl_api_t;

/* Opens the ICD loader and looks up every symbol. RK_ERR_UNAVAILABLE with
 * every path tried and its dlerror(), or the missing required symbols. */
rk_status_t rk__cl_api_load(rk_cl_api_t *api);
void rk__cl_api_unload(rk_cl_api_t *api);

#endif /* RK_BACKENDS_OPENCL_CL_API_H_ */
