/* rk/codegen.h - the kernel-language transpiler: one C source, many targets.
 *
 * A kernel source (C11 with #include <rk/kernel.h>, see
 * docs/kernel-language.md) is parsed once into a typed tree, checked against
 * the language rules and the target's limits, and printed for one target:
 *
 *   char *cuda = NULL;
 *   rk_transpile_options_t o;
 *   rk_transpile_options_init(&o);
 *   o.source_name = "saxpy.c";
 *   if (rk_transpile(source, RK_TARGET_CUDA, &o, &cuda) != RK_OK)
 *     fprintf(stderr, "%s\n", rk_last_error()); // saxpy.c:3:7: error: ...
 *   ...
 *   rk_transpile_free(cuda);
 *
 * rk_codegen_list_entries() describes the entry points (kernels, stencils,
 * actor handlers) and their launch parameters, so a runtime can check launch
 * arguments without compiling anything.
 *
 * Thread safety: every function here may be called from several threads at
 * once; nothing is shared between calls. Errors: RK_ERR_COMPILE for a source
 * that is not valid kernel language, with the diagnostic in rk_last_error()
 * ("name:line:col: error: what and why", the source line and a caret) and,
 * structured, in an rk_diagnostic_t where the call takes one.
 */
#ifndef RK_CODEGEN_H_
#define RK_CODEGEN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rk/backend.h"
#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output languages. The WGSL output's binding layout and pipeline
 * constants are described in docs/kernel-language.md ("WGSL"). */
typedef enum rk_target {
  RK_TARGET_C = 0,  /* C11 for the CPU backend (includes <rk/kernel.h>) */
  RK_TARGET_CUDA,   /* CUDA C++ for NVRTC (extern "C" __global__ kernels) */
  RK_TARGET_OPENCL, /* OpenCL C 1.2 */
  RK_TARGET_WGSL,   /* WebGPU Shading Language */
  RK_TARGET_MSL,    /* Metal Shading Language */
  RK_TARGET_COUNT_
} rk_target_t;

/* "c", "cuda", "opencl", "wgsl", "msl"; "unknown" for anything else. Never
 * NULL; the string is static. */
const char *rk_target_name(rk_target_t target);

/* Parses a target name as above (case-insensitive). An unknown name is
 * RK_ERR_INVALID_ARGUMENT and the message lists the known ones;
 * *out_target is set only on success. */
rk_status_t rk_target_from_name(const char *name, rk_target_t *out_target);

typedef struct rk_transpile_options {
  /* Name used in diagnostics and in the output's header comment
   * ("saxpy.c"); NULL or "" means "<source>". Not retained. */
  const char *source_name;
  /* Only this entry point (kernel, stencil or handler); NULL means all of
   * them. Structs, constants and helper functions are always kept. A
   * handler's name selects the handler and its batch entry (rk_batch_<name>,
   * see rk_entry_t) in rk_transpile(); the batch entry's name selects it
   * alone (with the handler's body, rk_handle_<name>). In
   * rk_codegen_list_entries() the list holds exactly the entry named. A
   * name that is not an entry point is RK_ERR_NOT_FOUND. */
  const char *entry;
  /* RK_TARGET_CUDA only: also emit, for every handler h whose own kernel is
   * printed, the persistent actor kernel rk_actor_<h> that keeps h resident
   * on the device, serving the rings of src/abi/actor_abi.h (parameters and
   * protocol in docs/kernel-language.md, "Persistent actor kernel (CUDA)";
   * sm_70 or newer). Any other target is RK_ERR_INVALID_ARGUMENT, naming
   * it. rk_codegen_list_entries() ignores it: the rk_actor_ kernels have a
   * fixed signature and are never listed. */
  bool persistent_actors;
  /* RK_TARGET_OPENCL only: every pointer launch parameter p (the handler
   * kernels' rk_status included) is passed as a buffer and a byte offset,
   * `__global T *rk_pb_p, ulong rk_po_p`, and the body starts, on the line
   * of its brace, with `__global T *p = (__global T *)((__global uchar *)
   * rk_pb_p + rk_po_p);`, so a device pointer may point anywhere inside its
   * buffer (what the OpenCL backend compiles). Any other target is
   * RK_ERR_INVALID_ARGUMENT. */
  bool opencl_buffer_offsets;
  /* rk_codegen_compile() only: one program per entry point (for targets
   * whose pipelines are built one entry point at a time, such as WGSL),
   * and what the target cannot express refuses only the programs, not the
   * compilation (see rk_codegen_result_t). Ignored elsewhere. */
  bool per_entry;
  /* RK_TARGET_WGSL only: detect loops that the implementation ends early
   * (Mesa's llvmpipe ends every loop of an invocation once 65,535 loop
   * iterations have run in it; see docs/webgpu.md). Every loop counts, in
   * private variables, the loops it starts and those that end as the
   * program says (condition false, break, return); right after a loop a
   * mismatch means the implementation cut it short, and the kernel stores
   * 1 into the `hit` word of the loop guard, a read_write storage buffer at
   * @group(1) @binding(0) holding four u32 words {hit, 0, 0, 0} (the zeros
   * seed the counters, so that no compiler can prove them equal). Only
   * programs whose entries loop (rk_entry_t.loops) declare the guard. Any
   * other target is RK_ERR_INVALID_ARGUMENT. */
  bool wgsl_loop_guard;
} rk_transpile_options_t;

/* Sets the defaults: no source name, all entries, no persistent actor
 * kernels, no buffer offsets, one program, no loop guard. */
void rk_transpile_options_init(rk_transpile_options_t *options);

/* Where and why a source was refused. Filled by the calls that take one when
 * they return RK_ERR_COMPILE; zeroed (line 0) on any other outcome. */
typedef struct rk_diagnostic {
  char source_name[256]; /* as in the options, truncated */
  uint32_t line;         /* 1-based; 0 when there is no diagnostic */
  uint32_t column;       /* 1-based, in bytes (a tab counts as one) */
  char message[1024];    /* "what and why", without location or caret */
} rk_diagnostic_t;

/* Transpiles `source` (NUL-terminated kernel language, at most 1 MiB) for
 * `target`. On success *out_text is the program text, NUL-terminated,
 * allocated with malloc: release it with rk_transpile_free() (or free()).
 * `options` may be NULL for the defaults. On failure *out_text is NULL and:
 *   RK_ERR_COMPILE        the source breaks a language or target rule;
 *                         rk_last_error() holds "name:line:col: error: ...",
 *                         the source line and a caret;
 *   RK_ERR_NOT_FOUND      options->entry names no entry point;
 *   RK_ERR_INVALID_ARGUMENT  NULL source or out_text, unknown target, or
 *                         persistent_actors for a target other than CUDA;
 *   RK_ERR_OUT_OF_MEMORY  an allocation failed.
 * Never crashes, hangs or exits on any input. */
rk_status_t rk_transpile(const char *source, rk_target_t target,
                         const rk_transpile_options_t *options,
                         char **out_text);

/* rk_transpile() that also fills *out_diag (may be NULL) with the location
 * and message of a compile error, so callers need not parse the text. */
rk_status_t rk_transpile_ex(const char *source, rk_target_t target,
                            const rk_transpile_options_t *options,
                            char **out_text, rk_diagnostic_t *out_diag);

/* Releases text returned by rk_transpile(). NULL is accepted. */
void rk_transpile_free(char *text);

/* ---- Entry points -------------------------------------------------------- */

typedef enum rk_entry_kind {
  RK_ENTRY_KERNEL = 1, /* RK_KERNEL void f(params) */
  RK_ENTRY_STENCIL,    /* RK_STENCIL(tx, ty, halo) / RK_STENCIL3D(...) */
  /* RK_HANDLER void f(const IN *in, OUT *out[, S *s]), or the same
   * returning int (0: success, else an error code; see handler_status). */
  RK_ENTRY_HANDLER,
} rk_entry_kind_t;

/* One launch parameter of an entry point, in launch order. */
typedef struct rk_entry_param {
  const char *name; /* as declared */
  const char *type; /* as C spells it: "const float *", "int", "msg_t" */
  rk_arg_kind_t kind;
  /* Bytes of the launch argument: 4 or 8 for scalars, sizeof(rk_devptr_t)
   * (8) for pointers, the C size of a struct passed by value. */
  size_t size;
  /* Pointers: bytes of one element (the pointee; for handlers the message
   * or state size); 0 otherwise. */
  size_t elem_size;
  bool read_only; /* a pointer declared `const T *` */
  /* A handler's output port parameter (rk_port<N>): the name the source
   * gives the port where rk_send or rk_try_send names it with a #define
   * (rk_actor_port finds the port by it). NULL for a
   * port only ever given as a number, and for every other parameter. */
  const char *port_name;
} rk_entry_param_t;

typedef struct rk_entry {
  const char *name;
  rk_entry_kind_t kind;
  /* Launch parameters. For a stencil these omit the leading rk_grid_pos_t
   * and start with the domain size (int nx, int ny[, int nz]). For an int
   * handler the last one is rk_status (see handler_status). */
  size_t param_count;
  const rk_entry_param_t *params;
  /* Stencils: 2 or 3 dimensions, the tile (threads per block in x, y, z; z
   * is 1 in 2D) and the halo width. Launch them with block = tile and
   * grid = ceil(domain / tile). Zero for other entries. */
  uint32_t dims;
  uint32_t tile[3];
  uint32_t halo;
  /* rk_sync_threads() is reached from this entry. */
  bool uses_barrier;
  /* Bytes of static block-shared memory on GPU targets: RK_SHARED arrays
   * plus, for stencils, the tiles (with halo) of the buffers they read
   * through neighbour functions. */
  size_t shared_bytes;
  /* Handlers: the kernel takes a trailing int32_t *rk_status receiving the
   * handler's return value (an RK_HANDLER declared to return int; 0 means
   * success, anything else is the handler's error code). It is the last of
   * params: kind RK_ARG_PTR, type "int32_t *", elem_size 4, not read-only.
   * false for void handlers and other entries. */
  bool handler_status;
  /* The batch entry of handler `batch_of` (its name), NULL for every other
   * entry. Each RK_HANDLER h is listed followed by its batch entry
   * "rk_batch_<h>": an RK_ENTRY_KERNEL that runs h on a packed array of
   * messages in one launch. A stateless handler's message m is handled by
   * the thread of global x index m, grid-stride (threads of global y or z
   * index > 0 do nothing): launch rk_count threads for one message each, or
   * fewer (one thread runs them all, in order). A handler with a state runs
   * the messages in order on global thread 0; launch one thread. Its params
   * are, in this order: the handler's message buffers (const IN *in, OUT *out:
   * rk_count elements each), the state (S *state, one element) if h has one,
   * int32_t *rk_status (rk_count elements: message m's return value, 0 for a
   * void handler) and uint32_t rk_count (by value). handler_status is false for
   * it. */
  const char *batch_of;
  /* The entry uses rk_dynamic_shared(): block-shared memory whose size is
   * the launch's shared_mem bytes (see docs/kernel-language.md for what
   * each target needs from the backend: on OpenCL a hidden trailing
   * __local parameter, on WGSL the pipeline constant rk_dyn_shared_bytes). */
  bool dynamic_shared;
  /* The entry may loop: a for, while or do (or a compare-and-swap, which
   * WGSL retries in a loop) is reached from it, or its lowering loops (a
   * batch entry over its messages, a stencil staging its tile). With
   * wgsl_loop_guard, exactly these entries' WGSL uses the loop guard. */
  bool loops;
} rk_entry_t;

/* Target C: every handler entry h (RK_ENTRY_HANDLER) comes with
 *   static inline void rk_thread0_h(<h's launch parameters>)
 * printed before it: what global thread 0 of h's kernel does (h itself
 * calls it after testing that it is global thread 0). The CPU backend's
 * wrappers, which run a handler as the one thread of one block, call it
 * directly. */
#define RK_CODEGEN_C_THREAD0_PREFIX "rk_thread0_"

/* The entry points of a source, in source order. One allocation: release
 * it with rk_entry_list_destroy(). */
typedef struct rk_entry_list {
  size_t count;
  const rk_entry_t *entries;
} rk_entry_list_t;

/* Checks `source` (target-independent rules: 64-bit types and double are
 * allowed) and describes its entry points; options->entry (if set) keeps
 * only that one. *out_list is set only on success. Errors as for
 * rk_transpile(); out_diag may be NULL. */
rk_status_t rk_codegen_list_entries(const char *source,
                                    const rk_transpile_options_t *options,
                                    rk_entry_list_t **out_list,
                                    rk_diagnostic_t *out_diag);

/* Releases a list from rk_codegen_list_entries(). NULL is accepted. */
void rk_entry_list_destroy(rk_entry_list_t *list);

/* "kernel", "stencil", "handler"; "unknown" otherwise. */
const char *rk_entry_kind_name(rk_entry_kind_t kind);

/* ---- One compilation: the program and its entry points ----------------- */

/* What rk_codegen_compile() returns: the text rk_transpile() prints and the
 * list rk_codegen_list_entries() gives, from one run of the front end. */
typedef struct rk_codegen_result {
  /* The program holding every selected entry point, NUL-terminated; NULL
   * with options->per_entry. */
  char *text;
  /* The selected entry points, in source order (each handler followed by
   * its batch entry), as rk_codegen_list_entries() lists them. */
  rk_entry_list_t *entries;
  /* With options->per_entry, NULL otherwise: for entries->entries[i],
   * entry_texts[i] is the program holding that entry point alone, or NULL
   * when the target cannot express it (a 64-bit type on WGSL, say); then
   * entry_errors[i] says why, as "name:line:col: error: ..." with the source
   * line and a caret. */
  char **entry_texts;
  char **entry_errors;
  rk_diagnostic_t *entry_diags; /* the same refusals, structured */
} rk_codegen_result_t;

/* Runs the front end once on `source` for `target` and prints the program
 * and describes its entry points (options as for rk_transpile(); with
 * options->per_entry, one program per entry point). On success *out_result
 * owns everything in it: release it with rk_codegen_result_free(). On
 * failure *out_result is zeroed; errors as for rk_transpile() (with
 * per_entry, a construct the target cannot express is not a failure: the
 * entries that need it carry the refusal). out_diag may be NULL. */
rk_status_t rk_codegen_compile(const char *source, rk_target_t target,
                               const rk_transpile_options_t *options,
                               rk_codegen_result_t *out_result,
                               rk_diagnostic_t *out_diag);

/* Releases what a result owns and zeroes it. NULL is accepted. */
void rk_codegen_result_free(rk_codegen_result_t *result);

#ifdef __cplusplus
}
#endif

#endif /* RK_CODEGEN_H_ */
