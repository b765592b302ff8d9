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
 * target. User names cannot start with rk_, so generated names (rk_tid,
 * rk_tile_in, rk_handle_f, rk_u_min) never collide with them.
 */
#ifndef RK_CODEGEN_EMIT_H_
#define RK_CODEGEN_EMIT_H_

#include "base/strbuf.h"
#include "codegen/ast.h"
#include "rk/codegen.h"

typedef struct cg_emit_options {
  const char *source_name; /* for the header comment */
  const char *entry;       /* only this entry point; NULL = all */
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

/* Whether WGSL reserves `name` (keywords, reserved words, predeclared
 * types and functions); rk__cg_target_reserves(RK_TARGET_WGSL, name). */
bool rk__cg_wgsl_reserves(const char *name);

/* Whether `target` reserves `name` (a keyword, type or built-in function
 * of its language); such names are renamed in its output. */
bool rk__cg_target_reserves(rk_target_t target, const char *name);

/* The name of the first target that reserves `name`, or NULL. Entry-point
 * names must not be reserved anywhere (the runtime looks them up). */
const char *rk__cg_reserved_by(const char *name);

#endif /* RK_CODEGEN_EMIT_H_ */
