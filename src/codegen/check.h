/* Checker: resolves names, types every expression and enforces the rules of
 * the kernel language and of the target (ctx->caps). See ast.h for what a
 * checked tree guarantees to printers, and docs/kernel-language.md for the
 * rules themselves.
 */
#ifndef RK_CODEGEN_CHECK_H_
#define RK_CODEGEN_CHECK_H_

#include "codegen/ast.h"

/* Checks and annotates `unit` in place. The first rule broken is reported
 * through rk__cg_error() (ctx's jump). */
void rk__cg_check(cg_ctx_t *ctx, cg_unit_t *unit);

/* Constant folding over a checked expression. `ice` asks for a C integer
 * constant expression (floating values only as the direct operand of a
 * cast). Returns false when the expression is not constant. Integer results
 * are in *out_int (sign-extended for signed types), floating ones in
 * *out_float (one of them is set, by e->type). */
bool rk__cg_fold(cg_ctx_t *ctx, const cg_expr_t *e, bool ice, int64_t *out_int,
                 double *out_float);

#endif /* RK_CODEGEN_CHECK_H_ */
