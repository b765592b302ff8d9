/* Printers: a checked tree (ast.h) -> program text for one target.
 *
 * One printer serves the C family (C, CUDA C, OpenCL C, MSL): it walks the
 * tree once and asks a small per-target table (emit_c_family.c, `kTargets`)
 * how to spell what differs: qualifiers and address spaces, scalar type
 * names, built-ins, atomics, barriers, entry-point decoration, layout
 * assertions. The few things a table cannot say (MSL's thread indices as
 * entry parameters, the stencil tile loader of GPU targets) are flags of the
 * same table. WGSL is different enough to have its own small printer
 * (emit_wgsl.c) over the same tree; it may refuse a source (module-scope
 * name clashes, layouts WGSL cannot match), so it takes the compilation
 * context and must run under its error exit (context.h).
 *
 * Names: a user identifier that a target reserves (an OpenCL built-in like
 * `min`, an MSL keyword like `kernel`) is printed as rk_u_<name> in that
 * target (targets.h). User names cannot start with rk_, so generated names
 * (rk_tid, rk_tile_in, rk_handle_f, rk_u_min) never collide with them.
 */
#ifndef RK_CODEGEN_EMIT_H_
#define RK_CODEGEN_EMIT_H_

#include "base/strbuf.h"
#include "codegen/ast.h"
#include "codegen/targets.h"
#include "rk/codegen.h"

typedef struct cg_emit_options {
  const char *source_name; /* for the header comment */
  const char *entry;       /* only this entry point; NULL = all */
  bool persistent_actors;  /* CUDA: rk_actor_<h> per printed handler */
  bool buffer_offsets;     /* OpenCL: pointers as buffer + byte offset */
} cg_emit_options_t;

/* Prints `unit` for target C, CUDA, OpenCL or MSL into out (appending;
 * allocation failure is sticky in out->failed). */
void rk__cg_emit_c_family(const cg_unit_t *unit, rk_target_t target,
                          const cg_emit_options_t *options, rk__strbuf_t *out);

/* Prints `unit` as WGSL into out (appending; allocation failure is sticky
 * in out->failed). Refusals go through rk__cg_error(ctx, ...): call it with
 * ctx->jmp set. */
void rk__cg_emit_wgsl(cg_ctx_t *ctx, const cg_unit_t *unit,
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
  const char *name;       /* the handler; its body is rk_handle_<name> */
  const char *in_type;    /* the request type ("echo_req_t") */
  const char *out_type;   /* the response type */
  const char *state_type; /* the state type; NULL without state */
  bool status;            /* the handler returns int */
} cg_actor_desc_t;

/* The shared device functions and ABI constants (once per module). */
void rk__cg_emit_cuda_actor_prelude(rk__strbuf_t *out);

/* CG_ACTOR_PREFIX<name>: the handler's persistent kernel. */
void rk__cg_emit_cuda_actor_kernel(rk__strbuf_t *out, const cg_actor_desc_t *d);

/* Whether options.entry `entry` selects function fn: NULL selects every
 * entry point; a handler is selected by its own name and by the name of its
 * batch entry (CG_BATCH_PREFIX<name>), and always comes with both. */
bool rk__cg_entry_selected(const cg_func_t *fn, const char *entry);

/* Whether a handler's own kernel is printed under options.entry `entry`:
 * always, except when `entry` names its batch entry, which then comes
 * alone (its first and only entry point). */
bool rk__cg_handler_kernel_selected(const cg_func_t *fn, const char *entry);

/* A predicate over expressions, with the caller's state. */
typedef bool (*cg_expr_pred_t)(const cg_expr_t *e, void *arg);

/* f on each direct sub-expression of e, in source order; true as soon as
 * one call returns true (the rest are not visited). */
bool rk__cg_expr_any_child(const cg_expr_t *e, cg_expr_pred_t f, void *arg);

/* f on each expression that statements below s (s included, may be NULL)
 * hold directly (initialisers, conditions, steps, values), in source
 * order; true as soon as one call returns true. f is not applied to the
 * sub-expressions itself: it recurses with rk__cg_expr_any_child. */
bool rk__cg_stmt_any_expr(const cg_stmt_t *s, cg_expr_pred_t f, void *arg);

/* The start of a stencil entry's body after its tile is loaded: the
 * interior check on position `pos` (spelled for `target`) with halo
 * `halo` in `dims` axes, closed by `ret` (") return;\n" in C), then the
 * assignment of pos.idx, the flat index of the point. */
void rk__cg_emit_stencil_interior(rk__strbuf_t *out, rk_target_t target,
                                  const char *pos, uint32_t dims, uint32_t halo,
                                  const char *ret);

/* e without the implicit conversions around it. */
const cg_expr_t *rk__cg_skip_converts(const cg_expr_t *e);

/* The root variable of an indexing chain (a[i][j] -> a), or NULL. */
const cg_var_t *rk__cg_index_root(const cg_expr_t *e);

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
