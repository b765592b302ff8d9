/* The ops library's GPU kernels as kernel-language source (ops_gpu.c), for
 * tests that transpile them for every GPU target and compile the result
 * with the vendors' compilers (tests/codegen/test_gpu_compile.c). */
#ifndef RK_OPS_OPS_GPU_SOURCE_H_
#define RK_OPS_OPS_GPU_SOURCE_H_

/* The NUL-terminated source that rk__ops_gpu_create() compiles; static
 * storage, never NULL. */
const char *rk__ops_gpu_source(void);

#endif /* RK_OPS_OPS_GPU_SOURCE_H_ */
