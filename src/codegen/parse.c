/* Parser of the kernel language (parser.h): errors, node construction
 * and file scope. */
#include <string.h>

#include "codegen/parse_internal.h"

_Noreturn void rk__cg_parse_error_at_token(parser_t *p, const cg_token_t *t,
                                           const char *expected) {
  char what[96];
  rk__cg_token_describe(t, what, sizeof what);
  if (t->kind == CG_TOK_DEFINE)
    rk__cg_error(p->ctx, t->loc,
                 "#define is only supported at file scope, outside "
                 "functions and declarations");
  rk__cg_error(p->ctx, t->loc, "expected %s, found %s", expected, what);
}

const cg_token_t *rk__cg_parse_expect(parser_t *p, int c,
                                      const char *expected) {
  if (!is_punct(cur(p), c)) rk__cg_parse_error_at_token(p, cur(p), expected);
  return next(p);
}

const char *rk__cg_parse_ident_text(parser_t *p, const cg_token_t *t) {
  return rk__cg_strndup(p->ctx, t->text, t->len);
}

const cg_token_t *rk__cg_parse_expect_ident(parser_t *p, const char *expected) {
  const cg_token_t *t = cur(p);
  if (t->kind == CG_TOK_KEYWORD)
    rk__cg_error(p->ctx, t->loc, "expected %s, found the keyword '%s'",
                 expected, rk__cg_kw_spelling(t->sub));
  if (t->kind != CG_TOK_IDENT) rk__cg_parse_error_at_token(p, t, expected);
  return next(p);
}

void rk__cg_parse_enter(parser_t *p, cg_loc_t loc) {
  if (++p->depth > CG_MAX_DEPTH)
    rk__cg_error(p->ctx, loc, "nesting is too deep (more than %d levels)",
                 CG_MAX_DEPTH);
}

void rk__cg_parse_leave(parser_t *p) { p->depth--; }

/* ---- Node construction --------------------------------------------------- */

cg_expr_t *rk__cg_parse_new_expr(parser_t *p, cg_expr_kind_t kind,
                                 cg_loc_t loc) {
  cg_expr_t *e = rk__cg_alloc(p->ctx, sizeof *e);
  e->kind = kind;
  e->loc = loc;
  e->height = 1;
  return e;
}

/* Sets e's height from its children and refuses trees deeper than the
 * limit (long left-associative chains like a+b+c+... grow the tree without
 * growing the parser's recursion). */
cg_expr_t *rk__cg_parse_grown(parser_t *p, cg_expr_t *e, const cg_expr_t *a,
                              const cg_expr_t *b, const cg_expr_t *c) {
  unsigned h = 0;
  if (a && a->height > h) h = a->height;
  if (b && b->height > h) h = b->height;
  if (c && c->height > h) h = c->height;
  if (h + 1 > CG_MAX_DEPTH)
    rk__cg_error(p->ctx, e->loc,
                 "expression is too deeply nested (more than %d levels)",
                 CG_MAX_DEPTH);
  e->height = (uint16_t)(h + 1);
  return e;
}

cg_stmt_t *rk__cg_parse_new_stmt(parser_t *p, cg_stmt_kind_t kind,
                                 cg_loc_t loc) {
  cg_stmt_t *s = rk__cg_alloc(p->ctx, sizeof *s);
  s->kind = kind;
  s->loc = loc;
  return s;
}

void rk__cg_parse_push_item(parser_t *p, cg_item_kind_t kind, void *what) {
  cg_item_t *it = rk__cg_alloc(p->ctx, sizeof *it);
  it->kind = kind;
  if (kind == CG_ITEM_STRUCT)
    it->st = what;
  else if (kind == CG_ITEM_FUNC)
    it->fn = what;
  else
    it->var = what;
  rk__cg_vec_push(p->ctx, &p->items, it);
}

/* ---- File scope ---------------------------------------------------------- */

/* Where an expression starts in the source (its leftmost token). */
static cg_loc_t expr_start(const cg_expr_t *e) {
  for (;;) {
    if (e->paren) return e->loc;
    switch (e->kind) {
      case CG_E_BINARY:
        e = e->binary.lhs;
        break;
      case CG_E_ASSIGN:
        e = e->assign.target;
        break;
      case CG_E_COND:
        e = e->cond.cond;
        break;
      case CG_E_INDEX:
        e = e->index.base;
        break;
      case CG_E_MEMBER:
        e = e->member.base;
        break;
      case CG_E_INCDEC:
        if (e->incdec.prefix) return e->loc;
        e = e->incdec.target;
        break;
      default:
        return e->loc;
    }
  }
}

static void parse_define(parser_t *p) {
  const cg_token_t *t = next(p);
  cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
  v->kind = CG_VAR_MACRO;
  v->name = rk__cg_parse_ident_text(p, t);
  v->loc = t->loc;
  if (cur(p)->kind == CG_TOK_DEFINE_END)
    rk__cg_error(p->ctx, t->loc,
                 "#define %s has no value: only constants can be defined "
                 "(#define NAME <constant>)",
                 v->name);
  v->init = rk__cg_parse_expr(p);
  if (cur(p)->kind != CG_TOK_DEFINE_END) {
    char what[96];
    rk__cg_token_describe(cur(p), what, sizeof what);
    rk__cg_error(p->ctx, cur(p)->loc,
                 "unexpected %s in #define %s: the value must be one "
                 "constant expression",
                 what, v->name);
  }
  next(p);
  /* C substitutes the text: `#define N 2 + 1` then `N * 2` is 4, not 6.
   * Only values whose meaning cannot change with their surroundings are
   * accepted. */
  const cg_expr_t *e = v->init;
  while (!e->paren && e->kind == CG_E_UNARY) e = e->unary.operand;
  if (!e->paren && e->kind != CG_E_INT && e->kind != CG_E_FLOAT &&
      e->kind != CG_E_BOOL && e->kind != CG_E_NAME)
    rk__cg_error(p->ctx, expr_start(v->init),
                 "the value of #define %s must be a single constant or be "
                 "parenthesized, e.g. #define %s (a + b): macros are "
                 "substituted as text",
                 v->name, v->name);
  rk__cg_parse_push_item(p, CG_ITEM_MACRO, v);
}

static void parse_params(parser_t *p, cg_func_t *fn) {
  const cg_token_t *open = rk__cg_parse_expect(p, '(', "'('");
  cg_vec_t params = {0};
  if (is_kw(cur(p), CG_KW_VOID) && is_punct(ahead(p, 1), ')')) {
    next(p);
  } else if (!is_punct(cur(p), ')')) {
    for (;;) {
      if (is_punct(cur(p), CG_P_ELLIPSIS))
        rk__cg_error(p->ctx, cur(p)->loc,
                     "variadic functions ('...') are not supported by the "
                     "kernel language");
      decl_specs_t ds;
      rk__cg_parse_decl_specs(p, &ds, false, false);
      if (!ds.has_type)
        rk__cg_parse_error_at_token(p, cur(p), "a parameter type");
      cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
      v->spec = ds.spec;
      v->kind = CG_VAR_PARAM;
      cg_vec_t dims = {0};
      const cg_token_t *name =
          rk__cg_parse_declarator(p, &v->spec, &dims, "a parameter name");
      if (dims.n)
        rk__cg_error(p->ctx, name->loc,
                     "array parameters are not supported: helpers take "
                     "values, entry points take pointers");
      v->name = rk__cg_parse_ident_text(p, name);
      v->loc = name->loc;
      v->index = params.n;
      if (params.n == CG_MAX_PARAMS)
        rk__cg_error(p->ctx, name->loc,
                     "a function may have at most %d parameters",
                     CG_MAX_PARAMS);
      rk__cg_vec_push(p->ctx, &params, v);
      if (!accept(p, ',')) break;
    }
  }
  if (!is_punct(cur(p), ')'))
    rk__cg_parse_error_at_token(p, cur(p), "')' or ',' in the parameter list");
  next(p);
  (void)open;
  fn->params = (cg_var_t **)params.v;
  fn->nparams = params.n;
}

static void parse_file_item(parser_t *p) {
  const cg_token_t *start = cur(p);
  if (start->kind == CG_TOK_DEFINE) {
    parse_define(p);
    return;
  }
  if (accept(p, ';')) return;
  decl_specs_t ds;
  rk__cg_parse_decl_specs(p, &ds, true, false);
  if (!ds.has_type) {
    if (start->kind == CG_TOK_IDENT && is_punct(ahead(p, 1), '('))
      rk__cg_error(p->ctx, start->loc,
                   "function '%.*s' needs a return type (C11 has no "
                   "implicit int)",
                   (int)start->len, start->text);
    rk__cg_parse_error_at_token(p, cur(p), "a declaration");
  }

  if (ds.is_typedef) {
    if (!ds.defined)
      rk__cg_error(p->ctx, start->loc,
                   "typedef is only supported for struct definitions "
                   "(typedef struct { ... } name_t;)");
    if (ds.entry || ds.is_static || ds.is_inline || ds.spec.base_const)
      rk__cg_error(p->ctx, start->loc, "unexpected specifiers on a typedef");
    const cg_token_t *name = rk__cg_parse_expect_ident(p, "the typedef's name");
    if (ds.defined->typedef_name)
      rk__cg_error(p->ctx, name->loc, "a struct may have one typedef name");
    ds.defined->typedef_name = rk__cg_parse_ident_text(p, name);
    if (rk__cg_map_get(&p->typedefs, ds.defined->typedef_name))
      rk__cg_error(p->ctx, name->loc, "typedef '%s' is already defined",
                   ds.defined->typedef_name);
    rk__cg_map_put(p->ctx, &p->typedefs, ds.defined->typedef_name, ds.defined);
    if (is_punct(cur(p), ','))
      rk__cg_error(p->ctx, cur(p)->loc, "a struct may have one typedef name");
    rk__cg_parse_expect(p, ';', "';' after the typedef");
    return;
  }
  if (ds.defined && accept(p, ';')) {
    if (ds.entry || ds.is_static || ds.is_inline || ds.spec.base_const)
      rk__cg_error(p->ctx, start->loc,
                   "unexpected specifiers on a struct definition");
    if (!ds.defined->tag)
      rk__cg_error(p->ctx, ds.defined->loc,
                   "an anonymous struct needs a typedef name");
    return;
  }
  if (ds.spec.struct_tag && !ds.defined && is_punct(cur(p), ';'))
    rk__cg_error(p->ctx, start->loc,
                 "forward declarations of structs are not supported: define "
                 "the struct before its first use");

  cg_typespec_t spec = ds.spec;
  cg_vec_t dims = {0};
  const cg_token_t *name = rk__cg_parse_declarator(p, &spec, &dims, "a name");
  if (is_punct(cur(p), '(')) {
    if (dims.n)
      rk__cg_error(p->ctx, name->loc, "functions cannot return arrays");
    if (ds.defined)
      rk__cg_error(p->ctx, ds.defined->loc,
                   "define the struct separately, before the function");
    cg_func_t *fn = rk__cg_alloc(p->ctx, sizeof *fn);
    fn->name = rk__cg_parse_ident_text(p, name);
    fn->loc = name->loc;
    fn->kind = ds.entry;
    fn->is_static = ds.is_static;
    fn->is_inline = ds.is_inline;
    fn->ret_spec = spec;
    if (ds.entry == CG_FN_STENCIL) {
      fn->dims = ds.nentry_args - 1; /* tiles, then the halo */
      for (uint32_t i = 0; i + 1 < ds.nentry_args; ++i)
        fn->tile_exprs[i] = ds.entry_args[i];
      fn->halo_expr = ds.entry_args[ds.nentry_args - 1];
    }
    parse_params(p, fn);
    if (accept(p, ';')) {
      fn->body = NULL; /* a prototype */
    } else {
      if (!is_punct(cur(p), '{'))
        rk__cg_parse_error_at_token(p, cur(p),
                                    "'{' or ';' after the parameter list");
      fn->body = rk__cg_parse_block(p);
    }
    rk__cg_parse_push_item(p, CG_ITEM_FUNC, fn);
    return;
  }

  /* File-scope variables: only constants. */
  if (ds.entry)
    rk__cg_error(p->ctx, ds.entry_loc, "%s must be followed by a function",
                 ds.entry == CG_FN_KERNEL    ? "RK_KERNEL"
                 : ds.entry == CG_FN_HANDLER ? "RK_HANDLER"
                                             : "RK_STENCIL");
  for (;;) {
    cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
    v->kind = CG_VAR_CONST;
    v->spec = spec;
    v->name = rk__cg_parse_ident_text(p, name);
    v->loc = name->loc;
    v->dims = (cg_expr_t **)dims.v;
    v->ndims = dims.n;
    if (!spec.base_const || spec.is_ptr)
      rk__cg_error(p->ctx, name->loc,
                   "mutable global variables are not supported (threads "
                   "cannot share them on every target); constants are "
                   "written `static const T %s = value;`",
                   v->name);
    if (dims.n)
      rk__cg_error(p->ctx, name->loc,
                   "constant arrays at file scope are not supported; "
                   "declare the array inside the function");
    if (!accept(p, '='))
      rk__cg_error(p->ctx, cur(p)->loc, "constant '%s' needs a value", v->name);
    if (is_punct(cur(p), '{'))
      rk__cg_error(p->ctx, cur(p)->loc, "file-scope constants must be scalars");
    v->init = rk__cg_parse_assign(p);
    rk__cg_parse_push_item(p, CG_ITEM_CONST, v);
    if (!accept(p, ',')) break;
    spec = ds.spec;
    dims.n = 0;
    dims.v = NULL;
    dims.cap = 0;
    name = rk__cg_parse_declarator(p, &spec, &dims, "a name");
  }
  rk__cg_parse_expect(p, ';', "';' after the declaration");
}

void rk__cg_parse(cg_ctx_t *ctx, const cg_tokens_t *tokens, cg_unit_t *out) {
  parser_t p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.toks = tokens->v;
  p.n = tokens->n;
  while (cur(&p)->kind != CG_TOK_EOF) parse_file_item(&p);
  out->nitems = p.items.n;
  out->items = rk__cg_alloc(
      ctx, (size_t)(p.items.n ? p.items.n : 1) * sizeof *out->items);
  for (uint32_t i = 0; i < p.items.n; ++i)
    out->items[i] = *(cg_item_t *)p.items.v[i];
}
