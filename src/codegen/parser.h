/* Parser of the kernel language: tokens -> the (untyped) tree of ast.h.
 *
 * Recursive descent with precedence climbing. It refuses constructs outside
 * the language as soon as it sees them (goto, labels, unions, enums,
 * function pointers, varargs, the comma operator, sizeof, dereference with
 * '*', ...), bounds nesting at CG_MAX_DEPTH, and never loops without
 * consuming a token. Name resolution and typing are the checker's job.
 */
#ifndef RK_CODEGEN_PARSER_H_
#define RK_CODEGEN_PARSER_H_

#include "codegen/ast.h"
#include "codegen/lexer.h"

/* Parses the whole token array into *out. Diagnostics jump out through
 * ctx. */
void rk__cg_parse(cg_ctx_t *ctx, const cg_tokens_t *tokens, cg_unit_t *out);

#endif /* RK_CODEGEN_PARSER_H_ */
