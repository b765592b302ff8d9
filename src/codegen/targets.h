/* Per-target facts: what each target (rk_target_t) can express and how it
 * runs what the language lowers (cg_caps_t), and which names its language
 * reserves. The checker refuses by the capabilities, the lowering
 * (lower.h) follows them, and the printers ask here how a user name is
 * spelled; no printer keeps a table of its own target's facts.
 *
 *   cg_caps_t caps = rk__cg_target_caps(RK_TARGET_MSL);   // caps.f64 false
 *   rk__cg_put_name(out, RK_TARGET_OPENCL, "min");          // "rk_u_min"
 */
#ifndef RK_CODEGEN_TARGETS_H_
#define RK_CODEGEN_TARGETS_H_

#include <stdbool.h>

#include "base/strbuf.h"
#include "codegen/context.h"
#include "rk/codegen.h"

/* What a target's output calls a user name that the target reserves (an
 * OpenCL built-in like `min`, an MSL keyword like `kernel`): the name
 * after this prefix. User names cannot start with rk_, so renamed names
 * never collide with them. */
#define CG_RENAME_PREFIX "rk_u_"

/* What `target` can express and how it runs stencils. */
cg_caps_t rk__cg_target_caps(rk_target_t target);

/* The capabilities of no particular target (everything expressible, no
 * staging): for describing a source without printing it. */
cg_caps_t rk__cg_any_target_caps(void);

/* Whether `target` reserves `name` (a keyword, type or built-in function
 * of its language); such names are renamed in its output. */
bool rk__cg_target_reserves(rk_target_t target, const char *name);

/* The name of the first of C, CUDA, OpenCL and MSL that reserves `name`,
 * or NULL. Entry-point names must not be reserved there (the runtime looks
 * them up); WGSL decides for itself (rk__cg_wgsl_builtin_function). */
const char *rk__cg_reserved_by(const char *name);

/* Whether `name` is one of WGSL's built-in functions, which a module-scope
 * declaration may shadow: a WGSL entry point can keep such a name where
 * the output does not call the built-in itself. */
bool rk__cg_wgsl_builtin_function(const char *name);

/* Appends `name` as `target` spells it (CG_RENAME_PREFIX<name> when the
 * target reserves it). */
void rk__cg_put_name(rk__strbuf_t *out, rk_target_t target, const char *name);

/* The same spelling as a string in ctx's arena. */
const char *rk__cg_spelled_name(cg_ctx_t *ctx, rk_target_t target,
                                const char *name);

#endif /* RK_CODEGEN_TARGETS_H_ */
