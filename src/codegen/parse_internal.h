/* What the parts of the parser (parser.h) share: its state, token
 * helpers, node construction and the entry points of each part.
 *
 *   parse.c       errors, nodes, file scope (rk__cg_parse)
 *   parse_decl.c  declaration specifiers, declarators, structs, locals
 *   parse_expr.c  expressions (precedence climbing)
 *   parse_stmt.c  statements and blocks
 */
#ifndef RK_CODEGEN_PARSE_INTERNAL_H_
#define RK_CODEGEN_PARSE_INTERNAL_H_

#include "codegen/parser.h"

typedef struct parser {
  cg_ctx_t *ctx;
  const cg_token_t *toks;
  uint32_t n, pos;
  int depth;
  cg_map_t typedefs; /* names declared by `typedef struct ... name;` */
  cg_vec_t items;    /* cg_item_t* */
} parser_t;

/* What a declaration's specifiers said, beyond the type. */
typedef struct decl_specs {
  cg_typespec_t spec;
  bool has_type;
  bool is_static, is_inline, is_typedef, is_shared;
  cg_func_kind_t entry;
  cg_loc_t entry_loc;
  cg_expr_t *entry_args[CG_AXES + 1]; /* a stencil's tiles, then halo */
  uint32_t nentry_args;
  cg_struct_t *defined; /* a struct body appeared in the specifiers */
} decl_specs_t;

/* ---- Tokens ----------------------------------------------------------------
 */

static inline const cg_token_t *cur(const parser_t *p) {
  return &p->toks[p->pos];
}

static inline const cg_token_t *ahead(const parser_t *p, uint32_t k) {
  uint32_t i = p->pos + k;
  return &p->toks[i < p->n ? i : p->n - 1];
}

static inline const cg_token_t *next(parser_t *p) {
  const cg_token_t *t = &p->toks[p->pos];
  if (t->kind != CG_TOK_EOF) p->pos++;
  return t;
}

static inline bool is_punct(const cg_token_t *t, int c) {
  return t->kind == CG_TOK_PUNCT && t->sub == c;
}

static inline bool is_kw(const cg_token_t *t, cg_kw_t kw) {
  return t->kind == CG_TOK_KEYWORD && t->sub == kw;
}

static inline bool accept(parser_t *p, int c) {
  if (!is_punct(cur(p), c)) return false;
  next(p);
  return true;
}

/* ---- parse.c ---------------------------------------------------------------
 */

/* "expected <expected>, found <t>" at t (or why a #define is out of
 * place). */
_Noreturn void rk__cg_parse_error_at_token(parser_t *p, const cg_token_t *t,
                                           const char *expected);

/* Consumes punctuator c, or refuses with "expected <expected>". */
const cg_token_t *rk__cg_parse_expect(parser_t *p, int c, const char *expected);

/* The identifier t as a string in the arena. */
const char *rk__cg_parse_ident_text(parser_t *p, const cg_token_t *t);

/* Consumes an identifier (a keyword is refused by name). */
const cg_token_t *rk__cg_parse_expect_ident(parser_t *p, const char *expected);

/* One level deeper / back: nesting is bounded by CG_MAX_DEPTH. */
void rk__cg_parse_enter(parser_t *p, cg_loc_t loc);
void rk__cg_parse_leave(parser_t *p);

/* New nodes at loc, zeroed (expressions of height 1). */
cg_expr_t *rk__cg_parse_new_expr(parser_t *p, cg_expr_kind_t kind,
                                 cg_loc_t loc);

/* Sets e's height from its children and refuses trees deeper than the
 * limit (long left-associative chains like a+b+c+... grow the tree without
 * growing the parser's recursion). */
cg_expr_t *rk__cg_parse_grown(parser_t *p, cg_expr_t *e, const cg_expr_t *a,
                              const cg_expr_t *b, const cg_expr_t *c);

cg_stmt_t *rk__cg_parse_new_stmt(parser_t *p, cg_stmt_kind_t kind,
                                 cg_loc_t loc);

/* Appends a file-scope item (a cg_struct_t, cg_func_t or cg_var_t). */
void rk__cg_parse_push_item(parser_t *p, cg_item_kind_t kind, void *what);

/* ---- parse_decl.c ----------------------------------------------------------
 */

/* Whether identifier t names a struct typedef seen so far. */
bool rk__cg_parse_is_type_name(const parser_t *p, const cg_token_t *t);

/* Whether t can start a declaration (a type, qualifier or storage class,
 * including the ones refused later with a message). */
bool rk__cg_parse_starts_decl(const parser_t *p, const cg_token_t *t);

/* Parses specifiers and qualifiers. `file_scope` allows storage classes,
 * entry-point markers and struct definitions. */
void rk__cg_parse_decl_specs(parser_t *p, decl_specs_t *ds, bool file_scope,
                             bool in_function);

/* Parses `[*[const|restrict]] name [dims]` into var-like parts. Returns the
 * name token. */
const cg_token_t *rk__cg_parse_declarator(parser_t *p, cg_typespec_t *spec,
                                          cg_vec_t *dims, const char *what);

/* A declaration statement (after its specifiers): declarators, optional
 * initialisers, ';'. */
cg_stmt_t *rk__cg_parse_local_decl(parser_t *p);

/* ---- parse_expr.c ----------------------------------------------------------
 */

/* A conditional expression (no assignment): case values. */
cg_expr_t *rk__cg_parse_cond(parser_t *p);
/* An assignment expression: arguments, initialisers, array sizes. */
cg_expr_t *rk__cg_parse_assign(parser_t *p);
/* A full expression; the comma operator is refused. */
cg_expr_t *rk__cg_parse_expr(parser_t *p);

/* ---- parse_stmt.c ----------------------------------------------------------
 */

/* One statement; a block from its '{' to its '}'. */
cg_stmt_t *rk__cg_parse_stmt(parser_t *p);
cg_stmt_t *rk__cg_parse_block(parser_t *p);

#endif /* RK_CODEGEN_PARSE_INTERNAL_H_ */
