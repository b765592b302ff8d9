/* Checker: declared types, struct layouts, C's conversions and lvalues
 * (check_internal.h). */
#include <string.h>

#include "codegen/check_internal.h"

/* ---- Types of declarations ------------------------------------------------
 */

/* An integer constant expression that must lie in [lo, hi]. */
int64_t rk__cg_check_fold_int(checker_t *ch, cg_expr_t *e, const char *what,
                              int64_t lo, int64_t hi) {
  rk__cg_check_expr(ch, e, false);
  if (!rk__cg_is_integer(e->type))
    rk__cg_error(ch->ctx, e->loc, "%s must be an integer", what);
  int64_t v;
  if (!rk__cg_fold(ch->ctx, e, true, &v, NULL)) {
    const cg_expr_t *x = e;
    while (x->kind == CG_E_CONVERT) x = x->convert.operand;
    if (x->kind == CG_E_NAME && x->name.var &&
        x->name.var->kind == CG_VAR_CONST)
      rk__cg_error(ch->ctx, e->loc,
                   "%s must be an integer constant expression; '%s' is a "
                   "static const variable, which C does not treat as a "
                   "constant (use #define %s <value>)",
                   what, x->name.var->name, x->name.var->name);
    rk__cg_error(ch->ctx, e->loc, "%s must be an integer constant expression",
                 what);
  }
  if (e->type->kind == CG_TY_U64 && v < 0 && lo >= 0)
    rk__cg_error(ch->ctx, e->loc, "%s is out of range", what);
  if (v < lo || v > hi)
    rk__cg_error(ch->ctx, e->loc,
                 "%s is %lld; it must be between %lld and "
                 "%lld",
                 what, (long long)v, (long long)lo, (long long)hi);
  return v;
}

const cg_type_t *rk__cg_check_resolve_base(checker_t *ch,
                                           const cg_typespec_t *spec) {
  if (spec->base != CG_TY_STRUCT) {
    const cg_type_t *t = scalar((cg_type_kind_t)spec->base);
    rk__cg_check_require_type(ch, t, spec->loc, NULL);
    return t;
  }
  cg_struct_t *st = NULL;
  if (spec->struct_tag) {
    st = rk__cg_map_get(&ch->tags, spec->struct_name);
    if (!st)
      rk__cg_error(ch->ctx, spec->loc,
                   "unknown type 'struct %s' (structs must be defined "
                   "before use)",
                   spec->struct_name);
  } else {
    binding_t *b = lookup(ch, spec->struct_name);
    if (!b || !b->st)
      rk__cg_error(ch->ctx, spec->loc, "unknown type name '%s'",
                   spec->struct_name);
    st = b->st;
  }
  return &st->type;
}

/* Applies array dimensions (outermost first) to elem. */
const cg_type_t *rk__cg_check_apply_dims(checker_t *ch, const cg_type_t *elem,
                                         cg_expr_t **dims, uint32_t ndims) {
  const cg_type_t *t = elem;
  for (uint32_t i = ndims; i-- > 0;) {
    int64_t n =
        rk__cg_check_fold_int(ch, dims[i], "the array size", 1, CG_MAX_OBJECT);
    t = rk__cg_type_array(ch->ctx, t, (uint32_t)n);
    if (t->size > CG_MAX_OBJECT)
      rk__cg_error(ch->ctx, dims[i]->loc, "the array is too large");
  }
  return t;
}

/* ---- Structs --------------------------------------------------------------
 */

void rk__cg_check_struct(checker_t *ch, cg_struct_t *st) {
  if (st->tag) {
    rk__cg_check_user_name(ch, st->tag, st->loc);
    if (rk__cg_map_get(&ch->tags, st->tag))
      rk__cg_error(ch->ctx, st->loc, "struct '%s' is already defined", st->tag);
  }
  uint64_t offset = 0;
  uint32_t align = 1;
  for (uint32_t i = 0; i < st->nfields; ++i) {
    cg_field_t *f = &st->fields[i];
    rk__cg_check_user_name(ch, f->name, f->loc);
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(st->fields[j].name, f->name) == 0)
        rk__cg_error(ch->ctx, f->loc, "duplicate field '%s'", f->name);
    const cg_type_t *base = rk__cg_check_resolve_base(ch, &f->spec);
    if (base->kind == CG_TY_VOID || base->kind == CG_TY_POS)
      rk__cg_error(ch->ctx, f->spec.loc, "a field cannot have type %s",
                   base->kind == CG_TY_VOID ? "void" : "rk_grid_pos_t");
    if (base->kind == CG_TY_BOOL)
      rk__cg_error(ch->ctx, f->spec.loc,
                   "bool fields are not supported: bool's size and layout "
                   "differ between targets (use int or uint32_t)");
    f->type = rk__cg_check_apply_dims(ch, base, f->dims, f->ndims);
    uint64_t a = f->type->align;
    offset = (offset + a - 1) / a * a;
    f->offset = (uint32_t)offset;
    offset += f->type->size;
    if (offset > CG_MAX_OBJECT)
      rk__cg_error(ch->ctx, f->loc, "struct is too large");
    if (f->type->align > align) align = f->type->align;
  }
  st->align = align;
  st->size = (uint32_t)((offset + align - 1) / align * align);
  st->type.kind = CG_TY_STRUCT;
  st->type.size = st->size;
  st->type.align = st->align;
  st->type.st = st;
  if (st->tag) rk__cg_map_put(ch->ctx, &ch->tags, st->tag, st);
  if (st->typedef_name) {
    binding_t *b = rk__cg_check_declare(ch, st->typedef_name, st->loc);
    b->st = st;
  }
}

/* ---- Conversions ----------------------------------------------------------
 */

cg_type_kind_t rk__cg_check_promote_kind(cg_type_kind_t k) {
  return k == CG_TY_BOOL ? CG_TY_I32 : k;
}

/* C's usual arithmetic conversions over the language's types. */
const cg_type_t *rk__cg_check_common_type(const cg_type_t *a,
                                          const cg_type_t *b) {
  cg_type_kind_t x = rk__cg_check_promote_kind(a->kind),
                 y = rk__cg_check_promote_kind(b->kind);
  if (x == CG_TY_F64 || y == CG_TY_F64) return scalar(CG_TY_F64);
  if (x == CG_TY_F32 || y == CG_TY_F32) return scalar(CG_TY_F32);
  if (x == y) return scalar(x);
  bool sx = x == CG_TY_I32 || x == CG_TY_I64;
  bool sy = y == CG_TY_I32 || y == CG_TY_I64;
  int rx = x == CG_TY_I64 || x == CG_TY_U64 ? 2 : 1;
  int ry = y == CG_TY_I64 || y == CG_TY_U64 ? 2 : 1;
  if (sx == sy) return scalar(rx >= ry ? x : y);
  cg_type_kind_t u = sx ? y : x, s = sx ? x : y;
  int ru = sx ? ry : rx, rs = sx ? rx : ry;
  if (ru >= rs) return scalar(u);
  return scalar(s); /* a 64-bit signed type holds every 32-bit unsigned */
}

static cg_expr_t *wrap_convert(checker_t *ch, cg_expr_t *e,
                               const cg_type_t *to) {
  cg_expr_t *c = rk__cg_alloc(ch->ctx, sizeof *c);
  c->kind = CG_E_CONVERT;
  c->loc = e->loc;
  c->type = to;
  c->height = (uint16_t)(e->height + 1);
  c->convert.operand = e;
  return c;
}

const char *rk__cg_check_value_noun(const cg_expr_t *e) {
  return e->kind == CG_E_NAME ? e->name.name : "expression";
}

/* Refuses values that are not first-class (arrays, buffers, positions,
 * void). */
cg_expr_t *rk__cg_check_rvalue(checker_t *ch, cg_expr_t *e) {
  switch (e->type->kind) {
    case CG_TY_ARRAY:
      rk__cg_error(ch->ctx, e->loc,
                   "array '%s' cannot be used as a value; use its elements",
                   rk__cg_check_value_noun(e));
    case CG_TY_PTR:
      rk__cg_error(ch->ctx, e->loc,
                   "buffer '%s' can only be indexed (%s[i]) or used with "
                   "'->': pointer arithmetic, copies and comparisons are not "
                   "supported",
                   rk__cg_check_value_noun(e), rk__cg_check_value_noun(e));
    case CG_TY_POS:
      rk__cg_error(ch->ctx, e->loc,
                   "the stencil position '%s' can only be used through its "
                   "fields (%s.x) and in neighbour reads",
                   rk__cg_check_value_noun(e), rk__cg_check_value_noun(e));
    case CG_TY_VOID:
      rk__cg_error(ch->ctx, e->loc, "a void value cannot be used");
    default:
      return e;
  }
}

/* Converts an rvalue to `to` as assignment does in C. */
cg_expr_t *rk__cg_check_convert(checker_t *ch, cg_expr_t *e,
                                const cg_type_t *to, const char *context) {
  rk__cg_check_rvalue(ch, e);
  if (e->type == to) return e;
  char a[CG_TYPE_TEXT_MAX], b[CG_TYPE_TEXT_MAX];
  if (to->kind == CG_TY_STRUCT || e->type->kind == CG_TY_STRUCT ||
      !rk__cg_is_arith(to))
    rk__cg_error(ch->ctx, e->loc, "cannot convert %s to %s in %s",
                 rk__cg_check_describe(e->type, a, sizeof a),
                 rk__cg_check_describe(to, b, sizeof b), context);
  if (e->type->kind == to->kind) return e;
  return wrap_convert(ch, e, to);
}

cg_expr_t *rk__cg_check_to_bool(checker_t *ch, cg_expr_t *e,
                                const char *context) {
  if (e->type->kind == CG_TY_PTR && e->kind == CG_E_NAME && e->name.var &&
      (e->name.var->kind == CG_VAR_PARAM ||
       e->name.var->kind == CG_VAR_DYNSHARED))
    /* `if (buf)`: the buffer is not NULL (always true in WGSL). */
    return wrap_convert(ch, e, scalar(CG_TY_BOOL));
  rk__cg_check_rvalue(ch, e);
  if (!rk__cg_is_arith(e->type)) {
    char a[CG_TYPE_TEXT_MAX];
    rk__cg_error(ch->ctx, e->loc, "%s needs a scalar value, not %s", context,
                 rk__cg_check_describe(e->type, a, sizeof a));
  }
  return rk__cg_check_convert(ch, e, scalar(CG_TY_BOOL), context);
}

cg_expr_t *rk__cg_check_arith_operand(checker_t *ch, cg_expr_t *e, cg_op_t op,
                                      bool integer_only) {
  char a[CG_TYPE_TEXT_MAX];
  if (e->type->kind == CG_TY_PTR) {
    if (op == CG_OP_ADD || op == CG_OP_SUB)
      rk__cg_error(ch->ctx, e->loc,
                   "pointer arithmetic is not supported: index the buffer "
                   "instead (%s[i + 1])",
                   rk__cg_check_value_noun(e));
    if (op >= CG_OP_LT && op <= CG_OP_NE)
      rk__cg_error(ch->ctx, e->loc, "comparison of pointers is not supported");
  }
  rk__cg_check_rvalue(ch, e);
  if (!rk__cg_is_arith(e->type) ||
      (integer_only && !rk__cg_is_integer(e->type)))
    rk__cg_error(ch->ctx, e->loc, "invalid operand of '%s': %s",
                 rk__cg_op_spelling(op),
                 rk__cg_check_describe(e->type, a, sizeof a));
  return e;
}

/* ---- Lvalues --------------------------------------------------------------
 */

/* Checks that `e` may be assigned and notes the variable as modified. */
void rk__cg_check_assignable(checker_t *ch, cg_expr_t *e, const char *what) {
  char a[CG_TYPE_TEXT_MAX];
  const cg_expr_t *x = e;
  bool through_buffer = false, const_buffer = false;
  const char *buffer = NULL;
  if (x->paren ||
      (x->kind != CG_E_NAME && x->kind != CG_E_INDEX && x->kind != CG_E_MEMBER))
    rk__cg_error(ch->ctx, e->loc, "the target of %s is not assignable", what);
  if (e->type->kind == CG_TY_ARRAY)
    rk__cg_error(ch->ctx, e->loc,
                 "arrays cannot be assigned as a whole; assign their "
                 "elements");
  if (e->type->kind == CG_TY_PTR)
    rk__cg_error(ch->ctx, e->loc,
                 "buffer parameters cannot be reassigned (pointer "
                 "arithmetic is not supported)");
  for (;;) {
    if (x->kind == CG_E_INDEX) {
      const cg_type_t *bt = x->index.base->type;
      if (bt->kind == CG_TY_PTR) {
        through_buffer = true;
        const_buffer = bt->elem_const;
        buffer = rk__cg_check_value_noun(x->index.base);
        break;
      }
      x = x->index.base;
    } else if (x->kind == CG_E_MEMBER) {
      if (x->member.arrow) {
        through_buffer = true;
        const_buffer = x->member.base->type->elem_const;
        buffer = rk__cg_check_value_noun(x->member.base);
        break;
      }
      if (x->member.base->type->kind == CG_TY_POS)
        rk__cg_error(ch->ctx, e->loc, "the stencil position is read-only");
      x = x->member.base;
    } else if (x->kind == CG_E_NAME) {
      break;
    } else {
      rk__cg_error(ch->ctx, e->loc, "the target of %s is not assignable", what);
    }
  }
  if (through_buffer) {
    if (const_buffer)
      rk__cg_error(ch->ctx, e->loc,
                   "buffer '%s' is read-only (declared const %s *)", buffer,
                   rk__cg_check_describe(e->type, a, sizeof a));
    return;
  }
  cg_var_t *v = x->name.var;
  if (v->kind == CG_VAR_MACRO)
    rk__cg_error(ch->ctx, e->loc, "cannot assign to macro '%s'", v->name);
  if (v->kind == CG_VAR_CONST || v->is_const)
    rk__cg_error(ch->ctx, e->loc, "cannot assign to const '%s'", v->name);
  if (v->type->kind == CG_TY_POS)
    rk__cg_error(ch->ctx, e->loc, "the stencil position is read-only");
  v->modified = true;
}
