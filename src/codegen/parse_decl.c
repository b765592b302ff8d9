/* Parser: declaration specifiers, declarators, struct bodies and local
 * declarations (parse_internal.h). */
#include <string.h>

#include "codegen/parse_internal.h"

/* ---- Declaration specifiers ---------------------------------------------- */

bool rk__cg_parse_is_type_name(const parser_t *p, const cg_token_t *t) {
  if (t->kind != CG_TOK_IDENT) return false;
  char name[CG_MAX_IDENT + 1];
  memcpy(name, t->text, t->len);
  name[t->len] = '\0';
  return rk__cg_map_get(&p->typedefs, name) != NULL;
}

/* Whether t can start a declaration (a type, qualifier or storage class,
 * including the ones refused later with a message). */
bool rk__cg_parse_starts_decl(const parser_t *p, const cg_token_t *t) {
  if (t->kind == CG_TOK_IDENT) return rk__cg_parse_is_type_name(p, t);
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
void rk__cg_parse_decl_specs(parser_t *p, decl_specs_t *ds, bool file_scope,
                             bool in_function) {
  memset(ds, 0, sizeof *ds);
  type_words_t w;
  memset(&w, 0, sizeof w);
  ds->spec.loc = cur(p)->loc;
  for (;;) {
    const cg_token_t *t = cur(p);
    if (t->kind == CG_TOK_IDENT) {
      if (ds->has_type || w.any || !rk__cg_parse_is_type_name(p, t)) break;
      next(p);
      note_word(&w, t);
      w.n_other++;
      ds->spec.base = CG_TY_STRUCT;
      ds->spec.struct_name = rk__cg_parse_ident_text(p, t);
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
          /* A tile size per dimension, then the halo. */
          bool flat = t->sub == CG_KW_RK_STENCIL;
          uint32_t want = (flat ? 2 : CG_AXES) + 1;
          rk__cg_parse_expect(
              p, '(',
              flat ? "'(' after RK_STENCIL (tile_x, tile_y, halo)"
                   : "'(' after RK_STENCIL3D (tile_x, tile_y, "
                     "tile_z, halo)");
          for (uint32_t i = 0; i < want; ++i) {
            if (i)
              rk__cg_parse_expect(p, ',',
                                  "',' between the stencil's arguments");
            ds->entry_args[i] = rk__cg_parse_assign(p);
          }
          if (!is_punct(cur(p), ')'))
            rk__cg_error(p->ctx, cur(p)->loc, "%s takes %u arguments: %s",
                         rk__cg_kw_spelling(t->sub), want,
                         flat ? "(tile_x, tile_y, halo)"
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
          st->tag = tag ? rk__cg_parse_ident_text(p, tag) : NULL;
          parse_struct_body(p, st);
          ds->defined = st;
          ds->spec.struct_name = st->tag;
          rk__cg_parse_push_item(p, CG_ITEM_STRUCT, st);
        } else {
          if (!tag)
            rk__cg_parse_error_at_token(p, cur(p), "a struct name or '{'");
          ds->spec.struct_name = rk__cg_parse_ident_text(p, tag);
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

/* Parses `[*[const|restrict]] name [dims]` into var-like parts. Returns the
 * name token. */
const cg_token_t *rk__cg_parse_declarator(parser_t *p, cg_typespec_t *spec,
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
  const cg_token_t *name = rk__cg_parse_expect_ident(p, what);
  while (is_punct(cur(p), '[')) {
    const cg_token_t *open = next(p);
    if (is_punct(cur(p), ']'))
      rk__cg_error(p->ctx, cur(p)->loc,
                   "an array needs a constant size between the brackets");
    if (dims->n == CG_MAX_DIMS)
      rk__cg_error(p->ctx, open->loc,
                   "arrays of more than %d dimensions are not supported",
                   CG_MAX_DIMS);
    cg_expr_t *d = rk__cg_parse_assign(p);
    rk__cg_parse_expect(p, ']', "']' after the array size");
    rk__cg_vec_push(p->ctx, dims, d);
  }
  return name;
}

static void parse_struct_body(parser_t *p, cg_struct_t *st) {
  rk__cg_parse_expect(p, '{', "'{'");
  cg_vec_t fields = {0};
  while (!is_punct(cur(p), '}')) {
    if (cur(p)->kind == CG_TOK_EOF)
      rk__cg_parse_error_at_token(p, cur(p), "'}' to close the struct");
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
    rk__cg_parse_decl_specs(p, &ds, false, false);
    if (!ds.has_type) rk__cg_parse_error_at_token(p, cur(p), "a field type");
    for (;;) {
      cg_field_t *f = rk__cg_alloc(p->ctx, sizeof *f);
      f->spec = ds.spec;
      cg_vec_t dims = {0};
      const cg_token_t *name =
          rk__cg_parse_declarator(p, &f->spec, &dims, "a field name");
      if (f->spec.is_ptr)
        rk__cg_error(p->ctx, f->spec.ptr_loc,
                     "pointers are not allowed in structs: a struct must "
                     "have the same layout on the host and every device");
      if (is_punct(cur(p), ':'))
        rk__cg_error(p->ctx, cur(p)->loc, "bit-fields are not supported");
      f->name = rk__cg_parse_ident_text(p, name);
      f->loc = name->loc;
      f->dims = (cg_expr_t **)dims.v;
      f->ndims = dims.n;
      if (fields.n == CG_MAX_FIELDS)
        rk__cg_error(p->ctx, name->loc, "a struct may have at most %d fields",
                     CG_MAX_FIELDS);
      rk__cg_vec_push(p->ctx, &fields, f);
      if (!accept(p, ',')) break;
    }
    rk__cg_parse_expect(p, ';', "';' after the field");
  }
  next(p); /* '}' */
  if (fields.n == 0)
    rk__cg_error(p->ctx, st->loc, "a struct needs at least one field");
  st->fields = rk__cg_alloc(p->ctx, (size_t)fields.n * sizeof *st->fields);
  for (uint32_t i = 0; i < fields.n; ++i)
    st->fields[i] = *(cg_field_t *)fields.v[i];
  st->nfields = fields.n;
}

/* ---- Declarations in functions ------------------------------------------- */

static cg_expr_t *parse_initializer(parser_t *p) {
  const cg_token_t *t = cur(p);
  if (!is_punct(t, '{')) return rk__cg_parse_assign(p);
  rk__cg_parse_enter(p, t->loc);
  next(p);
  cg_expr_t *e = rk__cg_parse_new_expr(p, CG_E_INIT_LIST, t->loc);
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
  rk__cg_parse_expect(p, '}', "'}' or ',' in the initializer list");
  e->init.elems = (cg_expr_t **)elems.v;
  e->init.n = elems.n;
  cg_expr_t tallest = {0};
  tallest.height = (uint16_t)h;
  rk__cg_parse_leave(p);
  return rk__cg_parse_grown(p, e, &tallest, NULL, NULL);
}

/* A declaration statement (after its specifiers): declarators, optional
 * initialisers, ';'. */
cg_stmt_t *rk__cg_parse_local_decl(parser_t *p) {
  const cg_token_t *start = cur(p);
  decl_specs_t ds;
  rk__cg_parse_decl_specs(p, &ds, false, true);
  if (!ds.has_type) rk__cg_parse_error_at_token(p, cur(p), "a type");
  cg_stmt_t *s = rk__cg_parse_new_stmt(p, CG_S_DECL, start->loc);
  cg_vec_t vars = {0};
  for (;;) {
    cg_var_t *v = rk__cg_alloc(p->ctx, sizeof *v);
    v->spec = ds.spec;
    v->kind = ds.is_shared ? CG_VAR_SHARED : CG_VAR_LOCAL;
    cg_vec_t dims = {0};
    const cg_token_t *name =
        rk__cg_parse_declarator(p, &v->spec, &dims, "a variable name");
    v->name = rk__cg_parse_ident_text(p, name);
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
  rk__cg_parse_expect(p, ';', "';' after the declaration");
  s->decl.vars = (cg_var_t **)vars.v;
  s->decl.n = vars.n;
  return s;
}
