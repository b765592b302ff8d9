/* Printers: a lowered, checked tree (lower.h, ast.h) -> program text for
 * one target.
 *
 * What stencils and handlers become is decided once, by the lowering
 * (lower.c): the printers print that plan and the tree, and decide only
 * how the target spells it. One printer serves the C family (C, CUDA C,
 * OpenCL C, MSL): it walks the tree once and asks a small per-target table
 * (emit_c_targets.c) how to spell what differs: qualifiers and
 * address spaces, scalar type names, built-ins, atomics, barriers,
 * entry-point decoration, layout assertions, and MSL's thread indices as
 * entry parameters. WGSL is different enough to have its own small
 * printer (emit_wgsl.c) over the same tree and plan; it may refuse a
 * source (module-scope name clashes, layouts WGSL cannot match), so it
 * takes the compilation context and must run under its error exit
 * (context.h).
 *
 * Names: a user identifier that a target reserves (an OpenCL built-in like
 * `min`, an MSL keyword like `kernel`) is printed as rk_u_<name> in that
 * target (targets.h). User names cannot start with rk_, so generated names
 * (rk_tid, rk_tile_in, rk_handle_f, rk_u_min) never collide with them.
 *
 * No printer reads back what it has printed.
 */
#ifndef RK_CODEGEN_EMIT_H_
#define RK_CODEGEN_EMIT_H_

#include "base/strbuf.h"
#include "codegen/ast.h"
#include "codegen/lower.h"
#include "codegen/targets.h"
#include "rk/codegen.h"

typedef struct cg_emit_options {
  const char *source_name; /* for the header comment */
  bool buffer_offsets;     /* OpenCL: pointers as buffer + byte offset */
  bool loop_guard;         /* WGSL: rk_transpile_options_t.wgsl_loop_guard */
} cg_emit_options_t;

/* Prints the unit of `plan` (lowered for `target`: lower.h) for target C,
 * CUDA, OpenCL or MSL into out (appending; allocation failure is sticky in
 * out->failed). */
void rk__cg_emit_c_family(const cg_plan_t *plan, rk_target_t target,
                          const cg_emit_options_t *options, rk__strbuf_t *out);

/* Prints the unit of `plan` (lowered for WGSL) as WGSL into out
 * (appending; allocation failure is sticky in out->failed). Refusals go
 * through rk__cg_error(ctx, ...): call it with ctx->jmp set. */
void rk__cg_emit_wgsl(cg_ctx_t *ctx, const cg_plan_t *plan,
                      const cg_emit_options_t *options, rk__strbuf_t *out);

/* ---- Persistent actor kernels (CUDA, emit_cuda_actor.c) ----------------
 *
 * With persistent_actors, the CUDA output gets, after each printed
 * handler's other entries, a kernel CG_ACTOR_PREFIX<h> that serves the
 * actor's rings while resident (docs/kernel-language.md, "Persistent actor
 * kernel (CUDA)"); the device functions they share come once, before the
 * first of them. */
#define CG_ACTOR_PREFIX "rk_actor_"

/* What a handler's persistent kernel needs: names as the target spells
 * them. */
typedef struct cg_actor_desc {
  const char *name;       /* the handler */
  const char *handle;     /* the function holding its body (lower.h) */
  const char *in_type;    /* the request type ("echo_req_t") */
  const char *out_type;   /* the response type */
  const char *state_type; /* the state type; NULL without state */
  bool status;            /* the handler returns int */
  /* Output ports (rk_send): 1 + the highest port, and each port's message
   * type (NULL for a port the handler never sends to). */
  uint32_t nports;
  const char *port_types[CG_MAX_PORTS];
} cg_actor_desc_t;

/* The shared device functions and ABI constants (once per module). */
void rk__cg_emit_cuda_actor_prelude(rk__strbuf_t *out);

/* CG_ACTOR_PREFIX<name>: the handler's persistent kernel. */
void rk__cg_emit_cuda_actor_kernel(rk__strbuf_t *out, const cg_actor_desc_t *d);

/* The start of a stencil entry's body after its tile is staged: the
 * interior check on the position (its name spelled for `target`), closed
 * by `ret` (") return;\n" in C), then the assignment of pos.idx, the flat
 * index of the point. */
void rk__cg_emit_stencil_interior(rk__strbuf_t *out, rk_target_t target,
                                  const cg_stencil_plan_t *s, const char *ret);

/* The coordinate along `axis` of cell rk_i of a staged stencil tile:
 * "rk_i % 18", "rk_i / 18 % 18", "rk_i / 324" (lower.h). */
void rk__cg_emit_stencil_cell(rk__strbuf_t *out, const cg_stencil_plan_t *s,
                              int axis);

/* Limits of what printers print. */
enum {
  CG_LINE_WIDTH = 80, /* a signature longer than this is one line per param */
  CG_F32_EXACT_INT = 1 << 24, /* integers below it are exactly floats */
  CG_HEADER_NAME_MAX = 200,   /* bytes of the source's name in a header */
};

/* An integer literal of type k in decimal or hex: u32 gets "u", i64 and
 * u64 the suffixes given (may be ""). */
void rk__cg_emit_int_literal(rk__strbuf_t *out, uint64_t v, cg_type_kind_t k,
                             bool hex, const char *i64_suffix,
                             const char *u64_suffix);

/* A literal expression (CG_E_INT, CG_E_FLOAT, CG_E_BOOL) as written, with
 * the integer suffixes of rk__cg_emit_int_literal(). */
void rk__cg_emit_literal(rk__strbuf_t *out, const cg_expr_t *e,
                         const char *i64_suffix, const char *u64_suffix);

#endif /* RK_CODEGEN_EMIT_H_ */
