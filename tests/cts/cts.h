/* The conformance suite (CTS): one set of cases that every backend must pass
 * unchanged. cts_main.c opens each backend kind that is available, creates a
 * fresh context on device 0 for every case and runs the case on it.
 *
 * A case is `void cts_<name>(rk_context_t *ctx)`: it compiles its kernels
 * from kernel-language source, runs them, and compares the results with a
 * scalar host reference (exactly for integer work; within a relative
 * tolerance stated at the comparison for float work). Failures are counted
 * with the CHECK macros of rk_test.h.
 *
 * Adding a case: write the function in the file of its area and add one line
 * to CTS_CASES below.
 *
 * Running: `cts [WORD...] [-WORD...]` runs the cases whose names contain a
 * WORD and none of the -WORDs; RK_CTS_BACKENDS=cpu,opencl limits the
 * backends; a case still running after RK_CTS_CASE_LIMIT seconds (120)
 * ends the run, naming it.
 */
#ifndef RK_TESTS_CTS_CTS_H_
#define RK_TESTS_CTS_CTS_H_

#include <stdbool.h>
#include <stdint.h>

#include "rk/rk.h"
#include "rk_test.h"

/* X(name): one conformance case, run in this order. */
#define CTS_CASES(X)                \
  /* cts_memory.c */                \
  X(memory_alloc_free)              \
  X(memory_copy_round_trip)         \
  X(memory_copy_offsets_exact)      \
  /* cts_kernels.c */               \
  X(compile_and_introspect)         \
  X(launch_1d_saxpy)                \
  X(launch_2d_transpose)            \
  X(launch_3d_builtins)             \
  X(launch_all_arg_kinds)           \
  X(launch_default_stream_order)    \
  /* cts_shared.c */                \
  X(shared_block_reduction)         \
  X(shared_reversal_needs_barrier)  \
  X(shared_tile_transpose_2d)       \
  X(shared_dynamic)                 \
  /* cts_atomics.c */               \
  X(atomic_histogram)               \
  X(atomic_shared_histogram)        \
  X(atomic_contention)              \
  X(atomic_min_max)                 \
  X(atomic_tickets)                 \
  /* cts_front_end.c */             \
  X(front_end_stencils)             \
  X(front_end_handler)              \
  X(front_end_conditionals)         \
  X(error_front_end_refusals)       \
  /* cts_streams.c */               \
  X(stream_two_streams)             \
  X(stream_in_order)                \
  X(stream_context_sync_covers_all) \
  X(stream_async_error_surfaces)    \
  X(stream_destroy_finishes_work)   \
  X(sync_with_nothing_queued)       \
  /* cts_errors.c */                \
  X(error_copy_out_of_range)        \
  X(error_copy_bad_pointer)         \
  X(error_zero_sizes)               \
  X(error_absurd_allocation)        \
  X(error_bad_free)                 \
  X(error_compile)                  \
  X(error_kernel_not_found)         \
  X(error_launch_arguments)         \
  X(error_launch_pointer_args)      \
  X(error_launch_dimensions)        \
  X(error_launch_grid_overflow)     \
  X(error_null_arguments)           \
  X(error_null_context)             \
  X(error_foreign_stream)           \
  X(error_nothing_on_stderr)        \
  X(error_launch_block_overflow) /* last: exits on failure */

#define CTS_DECLARE_(name) void cts_##name(rk_context_t *ctx);
CTS_CASES(CTS_DECLARE_)
#undef CTS_DECLARE_

/* Kernel-language source from C tokens: KSRC(RK_KERNEL void f(...) {...})
 * becomes "#include <rk/kernel.h>\n" followed by the tokens on one line.
 * (Preprocessor directives cannot appear inside; sources that need them are
 * written as plain strings.) */
#define KSRC(...) "#include <rk/kernel.h>\n" #__VA_ARGS__ "\n"

/* The device the cases run on (device 0 of the backend under test). */
const rk_device_info_t *cts_device(void);
rk_backend_t *cts_backend(void);

/* True when kernels on the device have 64-bit integers and doubles
 * (RK_CAP_INT64 and RK_CAP_F64). Cases that pass such values run in full
 * there; elsewhere they run a 32-bit form with every other check and say
 * what was left out with cts_not_checked(). */
bool cts_has_64bit(void);
/* Prints "[backend] case_name: what not checked: <why>", `why` naming the
 * 64-bit capabilities the device lacks. */
void cts_not_checked(const char *case_name, const char *what);

/* Compiles `source` (diagnostics named `source_name`); NULL after a counted
 * failure. */
rk_module_t *cts_compile(rk_context_t *ctx, const char *source_name,
                         const char *source);
/* The kernel `name` of `mod`; NULL after a counted failure (or if mod is
 * NULL). */
rk_function_t *cts_function(rk_module_t *mod, const char *name);
/* Allocates and fills from `host` (when not NULL); 0 after a counted
 * failure. */
rk_devptr_t cts_alloc(rk_context_t *ctx, size_t bytes, const void *host);

/* Deterministic pseudo-random numbers (a 32-bit LCG). */
uint32_t cts_rand(uint32_t *state);

/* |got - want| <= rel * max(1, |want|). */
bool cts_close(double got, double want, double rel);

/* Number of blocks of `block` threads covering n. */
static inline uint32_t cts_blocks(uint64_t n, uint32_t block) {
  return (uint32_t)((n + block - 1) / block);
}

#endif /* RK_TESTS_CTS_CTS_H_ */
