/* Parser of the kernel language (parser.h). */
#include "codegen/parser.h"

#include <string.h>

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
  cg_expr_t *entry_args[4];
  uint32_t nentry_args;
  cg_struct_t *defined; /* a struct body appeared in the specifiers */
} decl_specs_t;

/* ---- Tokens -------------------------------------------------------------- */

static const cg_token_t *cur(const parser_t *p) { return &p->toks[p->pos]; }

static const cg_token_t *ahead(const parser_t *p, uint32_t k) {
  uint32_t i = p->pos + k;
  return &p->toks[i < p->n ? i : p->n - 1];
}

static const cg_token_t *next(parser_t *p) {
  const cg_token_t *t = &p->toks[p->pos];
  if (t->kind != CG_TOK_EOF) p->pos++;
  return t;
}

static bool is_punct(const cg_token_t *t, int c) {
  return t->kind == CG_TOK_PUNCT && t->sub == c;
}

static bool is_kw(const cg_token_t *t, cg_kw_t kw) {
  return t->kind == CG_TOK_KEYWORD && t->sub == kw;
}

static bool accept(parser_t *p, int c) {
  if (!is_punct(cur(p), c)) return false;
  next(p);
  return true;
}

static _Noreturn void error_at_token(parser_t *p, const cg_token_t *t,
                                     const char *expected) {
  char what[96];
  rk__cg_token_describe(t, what, sizeof what);
  if (t->kind == CG_TOK_DEFINE)
    rk__cg_error(p->ctx, t->loc,
                 "#define is only supported at file scope, outside "
                 "functions and declarations");
  rk__cg_error(p->ctx, t->loc, "expected %s, found %s", expected, what);
}

static const cg_token_t *expect(parser_t *p, int c, const char *expected) {
  if (!is_punct(cur(p), c)) error_at_token(p, cur(p), expected);
  return next(p);
}

static const char *ident_text(parser_t *p, const cg_token_t *t) {
  return rk__cg_strndup(p->ctx, t->text, t->len);
}

static const cg_token_t *expect_ident(parser_t *p, const char *expected) {
  const cg_token_t *t = cur(p);
  if (t->kind == CG_TOK_KEYWORD)
    rk__cg_error(p->ctx, t->loc, "expected %s, found the keyword '%s'",
                 expected, rk__cg_kw_spelling(t->sub));
  if (t->kind != CG_TOK_IDENT) error_at_token(p, t, expected);
  return next(p);
}

static void enter(parser_t *p, cg_loc_t loc) {
  if (++p->depth > CG_MAX_DEPTH)
    rk__cg_error(p->ctx, loc, "nesting is too deep (more than %d levels)",
                 CG_MAX_DEPTH);
}

static void leave(parser_t *p) { p->depth--; }

/* ---- Node construction --------------------------------------------------- */

static cg_expr_t *new_expr(parser_t *p, cg_expr_kind_t kind, cg_loc_t loc) {
  cg_expr_t *e = rk__cg_alloc(p->ctx, sizeof *e);
  e->kind = kind;
  e->loc = loc;
  e->height = 1;
  return e;
}

/* Sets e's height from its children and refuses trees deeper than the
 * limit (long left-associative chains like a+b+c+... grow the tree without
 * growing the parser's recursion). */
static cg_expr_t *grown(parser_t *p, cg_expr_t *e, const cg_expr_t *a,
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

static cg_stmt_t *new_stmt(parser_t *p, cg_stmt_kind_t kind, cg_loc_t loc) {
  cg_stmt_t *s = rk__cg_alloc(p->ctx, sizeof *s);
  s->kind = kind;
  s->loc = loc;
  return s;
}

static void push_item(parser_t *p, cg_item_kind_t kind, void *what) {
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

/* ---- Declaration specifiers ---------------------------------------------- */

static bool is_type_name(const parser_t *p, const cg_token_t *t) {
  if (t->kind != CG_TOK_IDENT) return false;
  char name[256];
  memcpy(name, t->text, t->len);
  name[t->len] = '\0';
  return rk__cg_map_get(&p->typedefs, name) != NULL;
}

/* Whether t can start a declaration (a type, qualifier or storage class,
 * including the ones refused later with a message). */
static bool starts_decl(const parser_t *p, const cg_token_t *t) {
  if (t->kind == CG_TOK_IDENT) return is_type_name(p, t);
  if (t->kind != CG_TOK_KEYWORD) return false;
  switch (t->sub) {
    case CG_KW_IF:
    case CG_KW_ELSE:
    case CG_KW_FOR:
    case CG_KW_WHILE:
    case CG_KW_DO:
    case CG_KW_SWITCH:
    case CG_KW_CASE:
    case CG_KW_DEFAULT:
    case CG_KW_BREAK:
    case CG_KW_CONTINUE:
    case CG_KW_RETURN:
    case CG_KW_GOTO:
    case CG_KW_SIZEOF:
    case CG_KW_TRUE:
    case CG_KW_FALSE:
    case CG_KW_ALIGNOF:
    case CG_KW_GENERIC:
    case CG_KW_ASM:
      return false;
    default:
      return true;
  }
}

static cg_expr_t *parse_assign(parser_t *p);
static cg_expr_t *parse_expr(parser_t *p);
static cg_stmt_t *parse_block(parser_t *p);
static cg_stmt_t *parse_stmt(parser_t *p);

static void parse_struct_body(parser_t *p, cg_struct_t *st);

/* Words of a base type, counted so that "unsigned long long int" and
 * "int unsigned" both resolve. */
typedef struct type_words {
  int n_unsigned, n_signed, n_int, n_long, n_other;
  cg_loc_t first;
  bool any;
} type_words_t;

static void note_word(type_words_t *w, const cg_token_t *t) {
  if (!w->any) w->first = t->loc;
  w->any = true;
}

static _Noreturn void unsupported_type(parser_t *p, cg_loc_t loc,
                                       const char *name, const char *why) {
  rk__cg_error(p->ctx, loc,
               "type '%s' is not supported by the kernel language%s%s "
               "(use bool, int, unsigned, int32_t, uint32_t, int64_t, "
               "uint64_t, float, double or a struct)",
               name, why ? ": " : "", why ? why : "");
}

static void set_base(parser_t *p, type_words_t *w, decl_specs_t *ds,
                     const cg_token_t *t, cg_type_kind_t kind) {
  if (w->n_other || w->n_int || w->n_unsigned || w->n_signed || w->n_long)
    rk__cg_error(p->ctx, t->loc, "invalid combination of type specifiers");
  note_word(w, t);
  w->n_other++;
  ds->spec.base = (uint8_t)kind;
  ds->has_type = true;
}

/* Parses specifiers and qualifiers. `file_scope` allows storage classes,
 * entry-point markers and struct definitions. */
static void parse_decl_specs(parser_t *p, decl_specs_t *ds, bool file_scope,
                             bool in_function) {
  memset(ds, 0, sizeof *ds);
  type_words_t w;
  memset(&w, 0, sizeof w);
  ds->spec.loc = cur(p)->loc;
  for (;;) {
    const cg_token_t *t = cur(p);
    if (t->kind == CG_TOK_IDENT) {
      if (ds->has_type || w.any || !is_type_name(p, t)) break;
      next(p);
      note_word(&w, t);
      w.n_other++;
      ds->spec.base = CG_TY_STRUCT;
      ds->spec.struct_name = ident_text(p, t);
      ds->has_type = true;
      continue;
    }
    if (t->kind != CG_TOK_KEYWORD) break;
    switch (t->sub) {
      case CG_KW_CONST:
        next(p);
        ds->spec.base_const = true;
        continue;
      case CG_KW_VOLATILE:
        rk__cg_error(p->ctx, t->loc,
                     "'volatile' is not supported: use atomics or "
                     "rk_thread_fence() to order memory accesses");
      case CG_KW_RESTRICT:
        rk__cg_error(p->ctx, t->loc,
                     "'restrict' applies only to pointers (write T "
                     "*restrict p)");
      case CG_KW_ATOMIC:
        rk__cg_error(p->ctx, t->loc,
                     "'_Atomic' is not supported: use the rk_atomic_* "
                     "built-ins");
      case CG_KW_STATIC:
        if (in_function)
          rk__cg_error(p->ctx, t->loc,
                       "static local variables are not supported: GPU "
                       "threads have no per-function persistent storage");
        next(p);
        ds->is_static = true;
        continue;
      case CG_KW_INLINE:
        if (!file_scope)
          rk__cg_error(p->ctx, t->loc, "'inline' is only allowed on functions");
        next(p);
        ds->is_inline = true;
        continue;
      case CG_KW_EXTERN:
        rk__cg_error(p->ctx, t->loc,
                     "'extern' is not supported: a kernel source is one "
                     "translation unit");
      case CG_KW_REGISTER:
      case CG_KW_AUTO:
      case CG_KW_THREAD_LOCAL:
      case CG_KW_ALIGNAS:
      case CG_KW_NORETURN:
      case CG_KW_COMPLEX:
      case CG_KW_IMAGINARY:
        rk__cg_error(p->ctx, t->loc,
                     "'%s' is not supported by the kernel "
                     "language",
                     rk__cg_kw_spelling(t->sub));
      case CG_KW_STATIC_ASSERT:
        rk__cg_error(p->ctx, t->loc,
                     "_Static_assert is not supported in kernel sources (the "
                     "transpiler emits layout assertions itself)");
      case CG_KW_TYPEDEF:
        if (!file_scope)
          rk__cg_error(p->ctx, t->loc,
                       "typedef is only supported at file scope, for struct "
                       "definitions");
        next(p);
        ds->is_typedef = true;
        continue;
      case CG_KW_RK_SHARED:
        if (!in_function)
          rk__cg_error(p->ctx, t->loc,
                       "RK_SHARED arrays are only allowed inside RK_KERNEL "
                       "functions");
        next(p);
        ds->is_shared = true;
        continue;
      case CG_KW_RK_KERNEL:
      case CG_KW_RK_STENCIL:
      case CG_KW_RK_STENCIL3D:
      case CG_KW_RK_HANDLER: {
        if (!file_scope)
          rk__cg_error(p->ctx, t->loc,
                       "%s is only allowed on a function at "
                       "file scope",
                       rk__cg_kw_spelling(t->sub));
        if (ds->entry)
          rk__cg_error(p->ctx, t->loc,
                       "only one entry-point marker is "
                       "allowed per function");
        next(p);
        ds->entry_loc = t->loc;
        if (t->sub == CG_KW_RK_KERNEL) {
          ds->entry = CG_FN_KERNEL;
        } else if (t->sub == CG_KW_RK_HANDLER) {
          ds->entry = CG_FN_HANDLER;
        } else {
          ds->entry = CG_FN_STENCIL;
          uint32_t want = t->sub == CG_KW_RK_STENCIL ? 3 : 4;
          expect(p, '(',
                 t->sub == CG_KW_RK_STENCIL
                     ? "'(' after RK_STENCIL (tile_x, tile_y, halo)"
                     : "'(' after RK_STENCIL3D (tile_x, tile_y, "
                       "tile_z, halo)");
          for (uint32_t i = 0; i < want; ++i) {
            if (i) expect(p, ',', "',' between the stencil's arguments");
            ds->entry_args[i] = parse_assign(p);
          }
          if (!is_punct(cur(p), ')'))
            rk__cg_error(p->ctx, cur(p)->loc, "%s takes %u arguments: %s",
                         rk__cg_kw_spelling(t->sub), want,
                         want == 3 ? "(tile_x, tile_y, halo)"
                                   : "(tile_x, tile_y, tile_z, halo)");
          next(p);
          ds->nentry_args = want;
        }
        continue;
      }
      case CG_KW_UNION:
        rk__cg_error(p->ctx, t->loc,
                     "unions are not supported: their layout cannot be "
                     "expressed on every target (use a struct)");
      case CG_KW_ENUM:
        rk__cg_error(p->ctx, t->loc,
                     "enums are not supported: use #define NAME <value> or "
                     "static const int constants");
      case CG_KW_STRUCT: {
        if (ds->has_type || w.any)
          rk__cg_error(p->ctx, t->loc,
                       "invalid combination of type "
                       "specifiers");
        next(p);
        note_word(&w, t);
        w.n_other++;
        ds->has_type = true;
        ds->spec.base = CG_TY_STRUCT;
        ds->spec.struct_tag = true;
        const cg_token_t *tag = NULL;
        if (cur(p)->kind == CG_TOK_IDENT) tag = next(p);
        if (is_punct(cur(p), '{')) {
          if (!file_scope || in_function)
            rk__cg_error(p->ctx, t->loc,
                         "struct definitions are only allowed at file scope");
          cg_struct_t *st = rk__cg_alloc(p->ctx, sizeof *st);
          st->loc = tag ? tag->loc : t->loc;
          st->tag = tag ? ident_text(p, tag) : NULL;
          parse_struct_body(p, st);
          ds->defined = st;
          ds->spec.struct_name = st->tag;
          push_item(p, CG_ITEM_STRUCT, st);
        } else {
          if (!tag) error_at_token(p, cur(p), "a struct name or '{'");
          ds->spec.struct_name = ident_text(p, tag);
        }
        continue;
      }
      case CG_KW_VOID:
        set_base(p, &w, ds, next(p), CG_TY_VOID);
        continue;
      case CG_KW_BOOL:
      case CG_KW_UBOOL:
        set_base(p, &w, ds, next(p), CG_TY_BOOL);
        continue;
      case CG_KW_FLOAT:
        set_base(p, &w, ds, next(p), CG_TY_F32);
        continue;
      case CG_KW_DOUBLE:
        if (w.n_long)
          rk__cg_error(p->ctx, t->loc,
                       "long double is not supported by the "
                       "kernel language");
        set_base(p, &w, ds, next(p), CG_TY_F64);
        continue;
      case CG_KW_INT32:
        set_base(p, &w, ds, next(p), CG_TY_I32);
        continue;
      case CG_KW_UINT32:
        set_base(p, &w, ds, next(p), CG_TY_U32);
        continue;
      case CG_KW_INT64:
        set_base(p, &w, ds, next(p), CG_TY_I64);
        continue;
      case CG_KW_UINT64:
        set_base(p, &w, ds, next(p), CG_TY_U64);
        continue;
      case CG_KW_RK_GRID_POS:
        set_base(p, &w, ds, next(p), CG_TY_POS);
        continue;
      case CG_KW_INT:
      case CG_KW_UNSIGNED:
      case CG_KW_SIGNED:
      case CG_KW_LONG:
        if (w.n_other)
          rk__cg_error(p->ctx, t->loc,
                       "invalid combination of type "
                       "specifiers");
        note_word(&w, t);
        next(p);
        if (t->sub == CG_KW_INT) w.n_int++;
        if (t->sub == CG_KW_UNSIGNED) w.n_unsigned++;
        if (t->sub == CG_KW_SIGNED) w.n_signed++;
        if (t->sub == CG_KW_LONG) w.n_long++;
        ds->has_type = true;
        continue;
      case CG_KW_SHORT:
      case CG_KW_CHAR:
        unsupported_type(p, t->loc, rk__cg_kw_spelling(t->sub),
                         "GPU targets disagree on small integer types");
      case CG_KW_SIZE_T:
      case CG_KW_PTRDIFF:
      case CG_KW_INTPTR:
      case CG_KW_UINTPTR:
        unsupported_type(p, t->loc, rk__cg_kw_spelling(t->sub),
                         "its size differs between targets");
      case CG_KW_INT8:
      case CG_KW_UINT8:
      case CG_KW_INT16:
      case CG_KW_UINT16:
        unsupported_type(p, t->loc, rk__cg_kw_spelling(t->sub),
                         "not every target has 8- and 16-bit integers");
      default:
        break;
    }
    break;
  }
  if (w.n_int || w.n_unsigned || w.n_signed || w.n_long) {
    if (w.n_int > 1 || w.n_unsigned + w.n_signed > 1 || w.n_long > 2)
      rk__cg_error(p->ctx, w.first, "invalid combination of type specifiers");
    if (w.n_long == 1)
      rk__cg_error(p->ctx, w.first,
                   "'long' is not supported: its size differs between "
                   "platforms (use int64_t or long long)");
    if (w.n_long == 2)
      ds->spec.base = w.n_unsigned ? CG_TY_U64 : CG_TY_I64;
    else
      ds->spec.base = w.n_unsigned ? CG_TY_U32 : CG_TY_I32;
  }
  if (ds->has_type) ds->spec.loc = w.first;
}

/* ---- Declarators --------------------------------------------------------- */

enum { kMaxDims = 8 };

/* Parses `[*[const|restrict]] name [dims]` into var-like parts. Returns the
 * name token. */
static const cg_token_t *parse_declarator(parser_t *p, cg_typespec_t *spec,
                                          cg_vec_t *dims, const char *what) {
  while (is_punct(cur(p), '*')) {
    const cg_token_t *star = next(p);
    if (spec->is_ptr)
      rk__cg_error(p->ctx, star->loc, "pointers to pointers are not supported");
    spec->is_ptr = true;
    spec->ptr_loc = star->loc;
    for (;;) {
      if (is_kw(cur(p), CG_KW_CONST)) {
        next(p);
        spec->ptr_const = true;
      } else if (is_kw(cur(p), CG_KW_RESTRICT)) {
        next(p);
        spec->is_restrict = true;
      } else if (is_kw(cur(p), CG_KW_VOLATILE)) {
        rk__cg_error(p->ctx, cur(p)->loc,
                     "'volatile' is not supported: use atomics or "
                     "rk_thread_fence() to order memory accesses");
      } else {
        break;
      }
    }
  }
  if (is_punct(cur(p), '('))
    rk__cg_error(p->ctx, cur(p)->loc,
                 "function pointers (and parenthesized declarators) are not "
                 "supported by the kernel language");
  const cg_token_t *name = expect_ident(p, what);
  while (is_punct(cur(p), '[')) {
    const cg_token_t *open = next(p);
    if (is_punct(cur(p), ']'))
      rk__cg_error(p->ctx, cur(p)->loc,
                   "an array needs a constant size between the brackets");
    if (dims->n == kMaxDims)
      rk__cg_error(p->ctx, open->loc,
                   "arrays of more than %d dimensions are not supported",
                   kMaxDims);
    cg_expr_t *d = parse_assign(p);
    expect(p, ']', "']' after the array size");
    rk__cg_vec_push(p->ctx, dims, d);
  }
  return name;
}

static void parse_struct_body(parser_t *p, cg_struct_t *st) {
  expect(p, '{', "'{'");
  cg_vec_t fields = {0};
  while (!is_punct(cur(p), '}')) {
    if (cur(p)->kind == CG_TOK_EOF)
      error_at_token(p, cur(p), "'}' to close the struct");
    decl_specs_t ds;
    const cg_token_t *start = cur(p);
    if (is_kw(start, CG_KW_STRUCT) && is_punct(ahead(p, 1), '{'))
      rk__cg_error(p->ctx, start->loc,
                   "define nested structs separately, at file scope, before "
                   "the struct that uses them");
    if (is_kw(start, CG_KW_STRUCT) && ahead(p, 1)->kind == CG_TOK_IDENT &&
        is_punct(ahead(p, 2), '{'))
      rk__cg_error(p->ctx, start->loc,
                   "define nested structs separately, at file scope, before "
                   "the struct that uses them");
    parse_decl_specs(p, &ds, false, false);
    if (!ds.has_type) error_at_token(p, cur(p), "a field type");
    for (;;) {
      cg_field_t *f = rk__cg_alloc(p->ctx, sizeof *f);
      f->spec = ds.spec;
      cg_vec_t dims = {0};
      const cg_token_t *name =
          parse_declarator(p, &f->spec, &dims, "a field name");
      if (f->spec.is_ptr)
        rk__cg_error(p->ctx, f->spec.ptr_loc,
                     "pointers are not allowed in structs: a struct must "
                     "have the same layout on the host and every device");
      if (is_punct(cur(p), ':'))
        rk__cg_error(p->ctx, cur(p)->loc, "bit-fields are not supported");
      f->name = ident_text(p, name);
      f->loc = name->loc;
      f->dims = (cg_expr_t **)dims.v;
      f->ndims = dims.n;
      if (fields.n == CG_MAX_FIELDS)
        rk__cg_error(p->ctx, name->loc, "a struct may have at most %d fields",
                     CG_MAX_FIELDS);
      rk__cg_vec_push(p->ctx, &fields, f);
      if (!accept(p, ',')) break;
    }
    expect(p, ';', "';' after the field");
  }
  next(p); /* '}' */
  if (fields.n == 0)
    rk__cg_error(p->ctx, st->loc, "a struct needs at least one field");
  st->fields = rk__cg_alloc(p->ctx, (size_t)fields.n * sizeof *st->fields);
  for (uint32_t i = 0; i < fields.n; ++i)
    st->fields[i] = *(cg_field_t *)fields.v[i];
  st->nfields = fields.n;
}

/* ---- Expressions --------------------------------------------------------- */

static cg_op_t binary_op(const cg_token_t *t) {
  if (t->kind != CG_TOK_PUNCT) return CG_OP_NONE;
  switch (t->sub) {
    case '+':
      return CG_OP_ADD;
    case '-':
      return CG_OP_SUB;
    case '*':
      return CG_OP_MUL;
    case '/':
      return CG_OP_DIV;
    case '%':
      return CG_OP_MOD;
    case CG_P_SHL:
      return CG_OP_SHL;
    case CG_P_SHR:
      return CG_OP_SHR;
    case '&':
      return CG_OP_BAND;
    case '|':
      return CG_OP_BOR;
    case '^':
      return CG_OP_BXOR;
    case '<':
      return CG_OP_LT;
    case '>':
      return CG_OP_GT;
    case CG_P_LE:
      return CG_OP_LE;
    case CG_P_GE:
      return CG_OP_GE;
    case CG_P_EQ:
      return CG_OP_EQ;
    case CG_P_NE:
      return CG_OP_NE;
    case CG_P_ANDAND:
      return CG_OP_LAND;
    case CG_P_OROR:
      return CG_OP_LOR;
    default:
      return CG_OP_NONE;
  }
}

/* '=' gives CG_OP_NONE with *is_assign set; op= gives the operator. */
static cg_op_t assign_op(const cg_token_t *t, bool *is_assign) {
  *is_assign = false;
  if (t->kind != CG_TOK_PUNCT) return CG_OP_NONE;
  *is_assign = true;
  switch (t->sub) {
    case '=':
      return CG_OP_NONE;
    case CG_P_ADD_ASSIGN:
      return CG_OP_ADD;
    case CG_P_SUB_ASSIGN:
      return CG_OP_SUB;
    case CG_P_MUL_ASSIGN:
      return CG_OP_MUL;
    case CG_P_DIV_ASSIGN:
      return CG_OP_DIV;
    case CG_P_MOD_ASSIGN:
      return CG_OP_MOD;
    case CG_P_SHL_ASSIGN:
      return CG_OP_SHL;
    case CG_P_SHR_ASSIGN:
      return CG_OP_SHR;
    case CG_P_AND_ASSIGN:
      return CG_OP_BAND;
    case CG_P_OR_ASSIGN:
      return CG_OP_BOR;
    case CG_P_XOR_ASSIGN:
      return CG_OP_BXOR;
    default:
      *is_assign = false;
      return CG_OP_NONE;
  }
}

static cg_expr_t *parse_unary(parser_t *p);

static cg_expr_t *parse_primary(parser_t *p) {
  const cg_token_t *t = cur(p);
  cg_expr_t *e;
  switch (t->kind) {
    case CG_TOK_IDENT:
      next(p);
      e = new_expr(p, CG_E_NAME, t->loc);
      e->name.name = ident_text(p, t);
      return e;
    case CG_TOK_INT:
      next(p);
      e = new_expr(p, CG_E_INT, t->loc);
      e->lit_int.value = t->ival;
      e->lit_int.hex = t->hex;
      e->type = rk__cg_type_scalar((cg_type_kind_t)t->num_type);
      return e;
    case CG_TOK_FLOAT: {
      next(p);
      e = new_expr(p, CG_E_FLOAT, t->loc);
      e->lit_float.value = t->fval;
      uint32_t len = t->len;
      if (t->num_type == CG_TY_F32) len--; /* drop the f suffix */
      e->lit_float.text = rk__cg_strndup(p->ctx, t->text, len);
      e->type = rk__cg_type_scalar((cg_type_kind_t)t->num_type);
      return e;
    }
    case CG_TOK_KEYWORD:
      if (t->sub == CG_KW_TRUE || t->sub == CG_KW_FALSE) {
        next(p);
        e = new_expr(p, CG_E_BOOL, t->loc);
        e->lit_bool = t->sub == CG_KW_TRUE;
        return e;
      }
      if (t->sub == CG_KW_SIZEOF || t->sub == CG_KW_ALIGNOF)
        rk__cg_error(p->ctx, t->loc,
                     "'%s' is not supported by the kernel language",
                     rk__cg_kw_spelling(t->sub));
      if (t->sub == CG_KW_GENERIC || t->sub == CG_KW_ASM)
        rk__cg_error(p->ctx, t->loc,
                     "'%s' is not supported by the kernel language",
                     rk__cg_kw_spelling(t->sub));
      error_at_token(p, t, "an expression");
    case CG_TOK_PUNCT:
      if (t->sub == '(') {
        next(p);
        e = parse_expr(p);
        expect(p, ')', "')'");
        e->paren = true;
        return e;
      }
      error_at_token(p, t, "an expression");
    default:
      error_at_token(p, t, "an expression");
  }
}

static cg_expr_t *parse_postfix(parser_t *p) {
  cg_expr_t *e = parse_primary(p);
  for (;;) {
    const cg_token_t *t = cur(p);
    if (is_punct(t, '[')) {
      next(p);
      cg_expr_t *x = new_expr(p, CG_E_INDEX, e->loc);
      x->index.base = e;
      x->index.index = parse_expr(p);
      expect(p, ']', "']'");
      e = grown(p, x, x->index.base, x->index.index, NULL);
    } else if (is_punct(t, '(')) {
      if (e->kind != CG_E_NAME || e->paren)
        rk__cg_error(p->ctx, t->loc,
                     "only functions can be called, by name (function "
                     "pointers are not supported)");
      next(p);
      cg_expr_t *c = new_expr(p, CG_E_CALL, e->loc);
      c->call.name = e->name.name;
      cg_vec_t args = {0};
      unsigned h = 0;
      if (!is_punct(cur(p), ')')) {
        for (;;) {
          cg_expr_t *a = parse_assign(p);
          if (a->height > h) h = a->height;
          rk__cg_vec_push(p->ctx, &args, a);
          if (!accept(p, ',')) break;
        }
      }
      expect(p, ')', "')' or ',' in the argument list");
      c->call.args = (cg_expr_t **)args.v;
      c->call.nargs = args.n;
      cg_expr_t tallest = {0};
      tallest.height = (uint16_t)h;
      e = grown(p, c, &tallest, NULL, NULL);
    } else if (is_punct(t, '.') || is_punct(t, CG_P_ARROW)) {
      next(p);
      const cg_token_t *name = expect_ident(p, "a field name");
      cg_expr_t *m = new_expr(p, CG_E_MEMBER, e->loc);
      m->member.base = e;
      m->member.name = ident_text(p, name);
      m->member.arrow = is_punct(t, CG_P_ARROW);
      e = grown(p, m, e, NULL, NULL);
    } else if (is_punct(t, CG_P_INC) || is_punct(t, CG_P_DEC)) {
      next(p);
      cg_expr_t *x = new_expr(p, CG_E_INCDEC, t->loc);
      x->incdec.inc = is_punct(t, CG_P_INC);
      x->incdec.prefix = false;
      x->incdec.target = e;
      e = grown(p, x, e, NULL, NULL);
    } else {
      return e;
    }
  }
}

static cg_expr_t *parse_unary(parser_t *p) {
  const cg_token_t *t = cur(p);
  enter(p, t->loc);
  cg_expr_t *e;
  if (is_punct(t, CG_P_INC) || is_punct(t, CG_P_DEC)) {
    next(p);
    e = new_expr(p, CG_E_INCDEC, t->loc);
    e->incdec.inc = is_punct(t, CG_P_INC);
    e->incdec.prefix = true;
    e->incdec.target = parse_unary(p);
    e = grown(p, e, e->incdec.target, NULL, NULL);
  } else if (is_punct(t, '-') || is_punct(t, '+') || is_punct(t, '!') ||
             is_punct(t, '~')) {
    next(p);
    e = new_expr(p, CG_E_UNARY, t->loc);
    e->unary.op = t->sub == '-'   ? CG_OP_NEG
                  : t->sub == '+' ? CG_OP_PLUS
                  : t->sub == '!' ? CG_OP_NOT
                                  : CG_OP_BNOT;
    e->unary.operand = parse_unary(p);
    e = grown(p, e, e->unary.operand, NULL, NULL);
  } else if (is_punct(t, '*')) {
    rk__cg_error(p->ctx, t->loc,
                 "'*' (dereference) is not supported: index the buffer "
                 "(p[i]) or use p->field");
  } else if (is_punct(t, '&')) {
    next(p);
    e = new_expr(p, CG_E_ADDR, t->loc);
    e->addr.operand = parse_unary(p);
    e = grown(p, e, e->addr.operand, NULL, NULL);
  } else if (is_punct(t, '(') && starts_decl(p, ahead(p, 1))) {
    next(p);
    decl_specs_t ds;
    parse_decl_specs(p, &ds, false, false);
    if (!ds.has_type) error_at_token(p, cur(p), "a type name in the cast");
    if (is_punct(cur(p), '*')) {
      /* Only (T *)rk_dynamic_shared() is valid (the checker says so). */
      ds.spec.is_ptr = true;
      ds.spec.ptr_loc = cur(p)->loc;
      next(p);
      if (is_punct(cur(p), '*'))
        rk__cg_error(p->ctx, cur(p)->loc,
                     "pointer casts are not supported by the kernel language");
    }
    expect(p, ')', "')' after the cast's type");
    e = new_expr(p, CG_E_CAST, t->loc);
    e->cast.spec = ds.spec;
    e->cast.operand = parse_unary(p);
    e = grown(p, e, e->cast.operand, NULL, NULL);
  } else {
    e = parse_postfix(p);
  }
  leave(p);
  return e;
}

static cg_expr_t *parse_binary(parser_t *p, int min_prec) {
  cg_expr_t *lhs = parse_unary(p);
  for (;;) {
    const cg_token_t *t = cur(p);
    cg_op_t op = binary_op(t);
    if (op == CG_OP_NONE) return lhs;
    int prec = rk__cg_op_precedence(op);
    if (prec < min_prec) return lhs;
    next(p);
    cg_expr_t *rhs = parse_binary(p, prec + 1);
    cg_expr_t *b = new_expr(p, CG_E_BINARY, t->loc);
    b->binary.op = op;
    b->binary.lhs = lhs;
    b->binary.rhs = rhs;
    lhs = grown(p, b, lhs, rhs, NULL);
  }
}

static cg_expr_t *parse_cond(parser_t *p) {
  cg_expr_t *c = parse_binary(p, 1);
  const cg_token_t *q = cur(p);
  if (!is_punct(q, '?')) return c;
  next(p);
  cg_expr_t *e = new_expr(p, CG_E_COND, q->loc);
  e->cond.cond = c;
  e->cond.then = parse_expr(p);
  expect(p, ':', "':' in the conditional expression");
  e->cond.other = parse_cond(p);
  return grown(p, e, c, e->cond.then, e->cond.other);
}

static cg_expr_t *parse_assign(parser_t *p) {
  enter(p, cur(p)->loc);
  cg_expr_t *lhs = parse_cond(p);
  const cg_token_t *t = cur(p);
  bool is_assign;
  cg_op_t op = assign_op(t, &is_assign);
  if (is_assign) {
    next(p);
    cg_expr_t *e = new_expr(p, CG_E_ASSIGN, t->loc);
    e->assign.op = op;
    e->assign.target = lhs;
    e->assign.value = parse_assign(p);
    lhs = grown(p, e, lhs, e->assign.value, NULL);
  }
  leave(p);
  return lhs;
}

static cg_expr_t *parse_expr(parser_t *p) {
  cg_expr_t *e = parse_assign(p);
  if (is_punct(cur(p), ','))
    rk__cg_error(p->ctx, cur(p)->loc,
                 "the comma operator is not supported: write separate "
                 "statements");
  return e;
}

/* ---- Declarations in functions ------------------------------------------- */

static cg_expr_t *parse_initializer(parser_t *p) {
  const cg_token_t *t = cur(p);
  if (!is_punct(t, '{')) return parse_assign(p);
  enter(p, t->loc);
  next(p);
  cg_expr_t *e = new_expr(p, CG_E_INIT_LIST, t->loc);
  cg_vec_t elems = {0};
  unsigned h = 0;
  if (is_punct(cur(p), '}'))
    rk__cg_error(p->ctx, cur(p)->loc,
                 "empty initializer lists are not C11; write { 0 }");
  for (;;) {
    if (is_punct(cur(p), '.') || is_punct(cur(p), '['))
      rk__cg_error(p->ctx, cur(p)->loc,
                   "designated initializers are not supported");
    cg_expr_t *x = parse_initializer(p);
    if (x->height > h) h = x->height;
    rk__cg_vec_push(p->ctx, &elems, x);
    if (!accept(p, ',')) break;
    if (is_punct(cur(p), '}')) break; /* trailing comma */
  }
  expect(p, '}', "'}' or ',' in the initializer list");
  e->init.elems = (cg_expr_t **)elems.v;
  e->init.n = elems.n;
  cg_expr_t tallest = {0};
  tallest.height = (uint16_t)h;
  leave(p);
  return grown(p, e, &tallest, NULL, NULL);
}

/* A declaration statement (after its specifiers): declarators, optional
 * initialisers, ';'. */
static cg_stmt_t *parse_local_decl(parser_t *p) {
  const cg_token_t *start = cur(p);
  decl_specs_t ds;
  parse_decl_specs(p, &ds, false, true);
  if (!ds.has_type) error_at_token(p, cur(p), "a type");
  cg_stmt_t *s = new_stmt(p, CG_S_DECL, start->loc);
  cg_vec_t vars = {0};
  for (;;) {
    cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
    v->spec = ds.spec;
    v->kind = ds.is_shared ? CG_VAR_SHARED : CG_VAR_LOCAL;
    cg_vec_t dims = {0};
    const cg_token_t *name =
        parse_declarator(p, &v->spec, &dims, "a variable name");
    v->name = ident_text(p, name);
    v->loc = name->loc;
    v->dims = (cg_expr_t **)dims.v;
    v->ndims = dims.n;
    if (is_punct(cur(p), '(')) {
      rk__cg_error(p->ctx, cur(p)->loc,
                   "functions cannot be declared inside functions");
    }
    if (accept(p, '=')) v->init = parse_initializer(p);
    rk__cg_vec_push(p->ctx, &vars, v);
    if (!accept(p, ',')) break;
  }
  expect(p, ';', "';' after the declaration");
  s->decl.vars = (cg_var_t **)vars.v;
  s->decl.n = vars.n;
  return s;
}

/* ---- Statements ---------------------------------------------------------- */

static cg_stmt_t *parse_expr_stmt(parser_t *p) {
  const cg_token_t *t = cur(p);
  cg_stmt_t *s = new_stmt(p, CG_S_EXPR, t->loc);
  s->expr = parse_expr(p);
  expect(p, ';', "';' after the expression");
  return s;
}

static cg_stmt_t *parse_stmt(parser_t *p) {
  const cg_token_t *t = cur(p);
  enter(p, t->loc);
  cg_stmt_t *s = NULL;
  if (t->kind == CG_TOK_DEFINE) error_at_token(p, t, "a statement");
  if (is_punct(t, '{')) {
    s = parse_block(p);
  } else if (is_punct(t, ';')) {
    next(p);
    s = new_stmt(p, CG_S_EMPTY, t->loc);
  } else if (t->kind == CG_TOK_IDENT && is_punct(ahead(p, 1), ':') &&
             !is_type_name(p, t)) {
    rk__cg_error(p->ctx, t->loc,
                 "labels are not supported by the kernel language (there "
                 "is no goto)");
  } else if (t->kind == CG_TOK_KEYWORD) {
    switch (t->sub) {
      case CG_KW_IF:
        next(p);
        s = new_stmt(p, CG_S_IF, t->loc);
        expect(p, '(', "'(' after 'if'");
        s->if_.cond = parse_expr(p);
        expect(p, ')', "')' after the condition");
        s->if_.then = parse_stmt(p);
        if (is_kw(cur(p), CG_KW_ELSE)) {
          next(p);
          s->if_.other = parse_stmt(p);
        }
        break;
      case CG_KW_WHILE:
        next(p);
        s = new_stmt(p, CG_S_WHILE, t->loc);
        expect(p, '(', "'(' after 'while'");
        s->loop.cond = parse_expr(p);
        expect(p, ')', "')' after the condition");
        s->loop.body = parse_stmt(p);
        break;
      case CG_KW_DO:
        next(p);
        s = new_stmt(p, CG_S_DO, t->loc);
        s->loop.body = parse_stmt(p);
        if (!is_kw(cur(p), CG_KW_WHILE))
          error_at_token(p, cur(p), "'while' after the body of 'do'");
        next(p);
        expect(p, '(', "'(' after 'while'");
        s->loop.cond = parse_expr(p);
        expect(p, ')', "')' after the condition");
        expect(p, ';', "';' after 'do ... while (...)'");
        break;
      case CG_KW_FOR:
        next(p);
        s = new_stmt(p, CG_S_FOR, t->loc);
        expect(p, '(', "'(' after 'for'");
        if (accept(p, ';')) {
          s->for_.init = NULL;
        } else if (starts_decl(p, cur(p))) {
          s->for_.init = parse_local_decl(p);
        } else {
          s->for_.init = parse_expr_stmt(p);
        }
        if (!is_punct(cur(p), ';')) s->for_.cond = parse_expr(p);
        expect(p, ';', "';' after the loop condition");
        if (!is_punct(cur(p), ')')) s->for_.step = parse_expr(p);
        expect(p, ')', "')' after the loop step");
        s->for_.body = parse_stmt(p);
        break;
      case CG_KW_SWITCH:
        next(p);
        s = new_stmt(p, CG_S_SWITCH, t->loc);
        expect(p, '(', "'(' after 'switch'");
        s->switch_.value = parse_expr(p);
        expect(p, ')', "')' after the switch value");
        if (!is_punct(cur(p), '{'))
          rk__cg_error(p->ctx, cur(p)->loc,
                       "the body of a switch must be a block { ... }");
        s->switch_.body = parse_stmt(p);
        break;
      case CG_KW_CASE:
        next(p);
        s = new_stmt(p, CG_S_CASE, t->loc);
        s->case_.value = parse_cond(p);
        if (is_punct(cur(p), CG_P_ELLIPSIS))
          rk__cg_error(p->ctx, cur(p)->loc, "case ranges are not standard C11");
        expect(p, ':', "':' after the case value");
        break;
      case CG_KW_DEFAULT:
        next(p);
        s = new_stmt(p, CG_S_DEFAULT, t->loc);
        expect(p, ':', "':' after 'default'");
        break;
      case CG_KW_BREAK:
        next(p);
        s = new_stmt(p, CG_S_BREAK, t->loc);
        expect(p, ';', "';' after 'break'");
        break;
      case CG_KW_CONTINUE:
        next(p);
        s = new_stmt(p, CG_S_CONTINUE, t->loc);
        expect(p, ';', "';' after 'continue'");
        break;
      case CG_KW_RETURN:
        next(p);
        s = new_stmt(p, CG_S_RETURN, t->loc);
        if (!is_punct(cur(p), ';')) s->expr = parse_expr(p);
        expect(p, ';', "';' after the return value");
        break;
      case CG_KW_GOTO:
        rk__cg_error(p->ctx, t->loc,
                     "goto is not supported by the kernel language: use "
                     "loops, break and continue");
      case CG_KW_ELSE:
        rk__cg_error(p->ctx, t->loc, "'else' without a matching 'if'");
      default:
        if (starts_decl(p, t)) s = parse_local_decl(p);
        break;
    }
    if (!s) s = parse_expr_stmt(p);
  } else if (starts_decl(p, t)) {
    s = parse_local_decl(p);
  } else {
    s = parse_expr_stmt(p);
  }
  leave(p);
  return s;
}

static cg_stmt_t *parse_block(parser_t *p) {
  const cg_token_t *open = expect(p, '{', "'{'");
  cg_stmt_t *s = new_stmt(p, CG_S_BLOCK, open->loc);
  cg_vec_t items = {0};
  while (!is_punct(cur(p), '}')) {
    if (cur(p)->kind == CG_TOK_EOF)
      rk__cg_error(p->ctx, open->loc, "this '{' is never closed");
    rk__cg_vec_push(p->ctx, &items, parse_stmt(p));
  }
  next(p);
  s->block.items = (cg_stmt_t **)items.v;
  s->block.n = items.n;
  return s;
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
  v->name = ident_text(p, t);
  v->loc = t->loc;
  if (cur(p)->kind == CG_TOK_DEFINE_END)
    rk__cg_error(p->ctx, t->loc,
                 "#define %s has no value: only constants can be defined "
                 "(#define NAME <constant>)",
                 v->name);
  v->init = parse_expr(p);
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
  push_item(p, CG_ITEM_MACRO, v);
}

static void parse_params(parser_t *p, cg_func_t *fn) {
  const cg_token_t *open = expect(p, '(', "'('");
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
      parse_decl_specs(p, &ds, false, false);
      if (!ds.has_type) error_at_token(p, cur(p), "a parameter type");
      cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
      v->spec = ds.spec;
      v->kind = CG_VAR_PARAM;
      cg_vec_t dims = {0};
      const cg_token_t *name =
          parse_declarator(p, &v->spec, &dims, "a parameter name");
      if (dims.n)
        rk__cg_error(p->ctx, name->loc,
                     "array parameters are not supported: helpers take "
                     "values, entry points take pointers");
      v->name = ident_text(p, name);
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
    error_at_token(p, cur(p), "')' or ',' in the parameter list");
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
  parse_decl_specs(p, &ds, true, false);
  if (!ds.has_type) {
    if (start->kind == CG_TOK_IDENT && is_punct(ahead(p, 1), '('))
      rk__cg_error(p->ctx, start->loc,
                   "function '%.*s' needs a return type (C11 has no "
                   "implicit int)",
                   (int)start->len, start->text);
    error_at_token(p, cur(p), "a declaration");
  }

  if (ds.is_typedef) {
    if (!ds.defined)
      rk__cg_error(p->ctx, start->loc,
                   "typedef is only supported for struct definitions "
                   "(typedef struct { ... } name_t;)");
    if (ds.entry || ds.is_static || ds.is_inline || ds.spec.base_const)
      rk__cg_error(p->ctx, start->loc, "unexpected specifiers on a typedef");
    const cg_token_t *name = expect_ident(p, "the typedef's name");
    if (ds.defined->typedef_name)
      rk__cg_error(p->ctx, name->loc, "a struct may have one typedef name");
    ds.defined->typedef_name = ident_text(p, name);
    if (rk__cg_map_get(&p->typedefs, ds.defined->typedef_name))
      rk__cg_error(p->ctx, name->loc, "typedef '%s' is already defined",
                   ds.defined->typedef_name);
    rk__cg_map_put(p->ctx, &p->typedefs, ds.defined->typedef_name, ds.defined);
    if (is_punct(cur(p), ','))
      rk__cg_error(p->ctx, cur(p)->loc, "a struct may have one typedef name");
    expect(p, ';', "';' after the typedef");
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
  const cg_token_t *name = parse_declarator(p, &spec, &dims, "a name");
  if (is_punct(cur(p), '(')) {
    if (dims.n)
      rk__cg_error(p->ctx, name->loc, "functions cannot return arrays");
    if (ds.defined)
      rk__cg_error(p->ctx, ds.defined->loc,
                   "define the struct separately, before the function");
    cg_func_t *fn = rk__cg_alloc(p->ctx, sizeof *fn);
    fn->name = ident_text(p, name);
    fn->loc = name->loc;
    fn->kind = ds.entry;
    fn->is_static = ds.is_static;
    fn->is_inline = ds.is_inline;
    fn->ret_spec = spec;
    if (ds.entry == CG_FN_STENCIL) {
      fn->dims = ds.nentry_args == 4 ? 3 : 2;
      for (uint32_t i = 0; i + 1 < ds.nentry_args; ++i)
        fn->tile_exprs[i] = ds.entry_args[i];
      fn->halo_expr = ds.entry_args[ds.nentry_args - 1];
    }
    parse_params(p, fn);
    if (accept(p, ';')) {
      fn->body = NULL; /* a prototype */
    } else {
      if (!is_punct(cur(p), '{'))
        error_at_token(p, cur(p), "'{' or ';' after the parameter list");
      fn->body = parse_block(p);
    }
    push_item(p, CG_ITEM_FUNC, fn);
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
    v->name = ident_text(p, name);
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
    v->init = parse_assign(p);
    push_item(p, CG_ITEM_CONST, v);
    if (!accept(p, ',')) break;
    spec = ds.spec;
    dims.n = 0;
    dims.v = NULL;
    dims.cap = 0;
    name = parse_declarator(p, &spec, &dims, "a name");
  }
  expect(p, ';', "';' after the declaration");
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
