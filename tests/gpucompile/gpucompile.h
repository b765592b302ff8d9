/* gpucompile.h - does generated GPU source really compile? A test helper.
 *
 * Compiles CUDA C++ with NVRTC and OpenCL C with the installed OpenCL
 * platform (PoCL's CPU device will do), loading both at run time with
 * dlopen: nothing here needs a vendor SDK to build, and a test that uses it
 * skips (exit 77) where the library is absent.
 *
 *   char log[8192];
 *   int rc = rk_gpucompile_cuda(text, "saxpy.cu", log, sizeof log);
 *   if (rc == RK_GPUCOMPILE_UNAVAILABLE) RK_TEST_SKIP("%s", log);
 *   CHECK(rc == RK_GPUCOMPILE_OK, "NVRTC refused saxpy.cu:\n%s", log);
 *
 *   const char *names[] = {"saxpy"};
 *   rc = rk_gpucompile_opencl_kernels(cl_text, names, 1, log, sizeof log);
 *
 * Every function returns RK_GPUCOMPILE_OK (0) when the source compiled,
 * RK_GPUCOMPILE_FAILED (1) when it did not (or a requested kernel is
 * missing) and RK_GPUCOMPILE_UNAVAILABLE (77, automake's "skipped") when the
 * compiler is not there. `log` (may be NULL when log_cap is 0) receives the
 * compiler's log on success and failure (warnings, errors) or, when
 * unavailable, the reason and every library path tried; it is always
 * NUL-terminated and truncated to log_cap.
 *
 * Libraries tried, in order (a colon-separated list in the environment
 * variable replaces them):
 *   NVRTC   RK_GPUCOMPILE_NVRTC   libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so
 *   OpenCL  RK_GPUCOMPILE_OPENCL  libOpenCL.so.1, libOpenCL.so
 * A library is loaded on first use and stays loaded until exit; the
 * variables are read once, then.
 *
 * OpenCL uses the first GPU of any platform, else the first device of any
 * type. PoCL writes compiled kernels into a cache directory: when
 * POCL_CACHE_DIR is not set, the first OpenCL call points it at a fresh
 * temporary directory that is removed at exit, so tests never touch $HOME.
 *
 * Thread safety: every function may be called from several threads at once.
 */
#ifndef RK_TESTS_GPUCOMPILE_GPUCOMPILE_H_
#define RK_TESTS_GPUCOMPILE_GPUCOMPILE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  RK_GPUCOMPILE_OK = 0,
  RK_GPUCOMPILE_FAILED = 1,
  RK_GPUCOMPILE_UNAVAILABLE = 77,
};

/* ---- CUDA (NVRTC) -------------------------------------------------------- */

/* Compiles CUDA C++ `source` to PTX for a real architecture (compute_80,
 * or the oldest one this NVRTC supports if it lacks that; see
 * rk_gpucompile_cuda_arch()). No headers are available, as for NVRTC
 * itself: the source may use built-ins only (threadIdx, __syncthreads,
 * atomicAdd, ...). `name` is the file name shown in the log; NULL means
 * "source.cu". */
int rk_gpucompile_cuda(const char *source, const char *name, char *log,
                       size_t log_cap);

/* As rk_gpucompile_cuda(), then checks that the PTX defines each of the
 * `n` kernels in `names` as an entry point under exactly that name (so they
 * must be extern "C"). A missing one is RK_GPUCOMPILE_FAILED and the log
 * says which, and lists the entry points found. */
int rk_gpucompile_cuda_kernels(const char *source, const char *name,
                               const char *const *names, size_t n, char *log,
                               size_t log_cap);

/* Writes "NVRTC <major>.<minor> (<library path>), --gpu-architecture=..."
 * into `out`; returns 0, or 77 with the reason as for the compile calls. */
int rk_gpucompile_cuda_describe(char *out, size_t cap);

/* ---- OpenCL C ------------------------------------------------------------ */

/* Builds OpenCL C `source` with "-cl-std=CL1.2" for the device chosen
 * above. */
int rk_gpucompile_opencl(const char *source, char *log, size_t log_cap);

/* As rk_gpucompile_opencl(), then creates a kernel object for each of the
 * `n` kernels in `names`. A missing one is RK_GPUCOMPILE_FAILED and the log
 * says which, and lists the kernels the program has. */
int rk_gpucompile_opencl_kernels(const char *source, const char *const *names,
                                 size_t n, char *log, size_t log_cap);

/* Writes "<platform> / <device> (<device version>), <library path>" into
 * `out`; returns 0, or 77 with the reason. */
int rk_gpucompile_opencl_describe(char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* RK_TESTS_GPUCOMPILE_GPUCOMPILE_H_ */
