/* Checker: expressions (check_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/check_internal.h"

/* ---- Expressions ----------------------------------------------------------
 */

static void check_name(checker_t *ch, cg_expr_t *e) {
  binding_t *b = lookup(ch, e->name.name);
  if (!b) {
    if (rk__cg_builtin_lookup(e->name.name) != CG_BI_NONE_)
      rk__cg_error(ch->ctx, e->loc,
                   "built-in '%s' must be called (function pointers are not "
                   "supported)",
                   e->name.name);
    rk__cg_error(ch->ctx, e->loc, "use of undeclared identifier '%s'",
                 e->name.name);
  }
  if (b->fn)
    rk__cg_error(ch->ctx, e->loc,
                 "function '%s' can only be called (function pointers are "
                 "not supported)",
                 e->name.name);
  if (b->st)
    rk__cg_error(ch->ctx, e->loc, "'%s' is a type, not a value", e->name.name);
  e->name.var = b->var;
  e->type = b->var->type;
}

static void check_call(checker_t *ch, cg_expr_t *e, bool top) {
  const char *name = e->call.name;
  binding_t *b = lookup(ch, name);
  if (!b) {
    e->call.builtin = rk__cg_builtin_lookup(name);
    if (e->call.builtin != CG_BI_NONE_) {
      rk__cg_check_builtin(ch, e, top);
      return;
    }
    cg_func_t *later = rk__cg_map_get(&ch->funcs, name);
    if (later)
      rk__cg_error(ch->ctx, e->loc,
                   "call to '%s' before its declaration (line %u): declare "
                   "or define it first",
                   name, (unsigned)later->loc.line);
    rk__cg_error(ch->ctx, e->loc, "call to unknown function '%s'", name);
  }
  if (!b->fn) rk__cg_error(ch->ctx, e->loc, "'%s' is not a function", name);
  cg_func_t *callee = b->fn;
  if (callee->kind != CG_FN_HELPER)
    rk__cg_error(ch->ctx, e->loc,
                 "%s '%s' cannot be called: entry points are launched by the "
                 "host",
                 rk__cg_check_entry_word(callee->kind), name);
  if (e->call.nargs != callee->nparams)
    rk__cg_error(ch->ctx, e->loc, "'%s' expects %u argument%s, got %u", name,
                 (unsigned)callee->nparams, callee->nparams == 1 ? "" : "s",
                 (unsigned)e->call.nargs);
  for (uint32_t i = 0; i < e->call.nargs; ++i) {
    cg_expr_t *a = rk__cg_check_expr(ch, e->call.args[i], false);
    if (a->type->kind == CG_TY_PTR)
      rk__cg_error(ch->ctx, a->loc,
                   "helper functions take values only: pass an element "
                   "(%s[i]), not the buffer",
                   rk__cg_check_value_noun(a));
    char what[300];
    snprintf(what, sizeof what, "argument %u of '%s'", (unsigned)i + 1, name);
    e->call.args[i] =
        rk__cg_check_convert(ch, a, callee->params[i]->type, what);
  }
  e->call.callee = callee;
  e->type = callee->ret;
  cg_call_edge_t *edge = rk__cg_alloc(ch->ctx, sizeof *edge);
  edge->callee = callee;
  edge->loc = e->loc;
  rk__cg_vec_push(ch->ctx, &ch->fn->calls, edge);
}

static void check_member(checker_t *ch, cg_expr_t *e) {
  cg_expr_t *base = e->member.base;
  char t[CG_TYPE_TEXT_MAX];
  if (e->member.arrow) {
    if (base->kind != CG_E_NAME || base->paren)
      rk__cg_error(ch->ctx, e->loc,
                   "'->' is only allowed on a buffer parameter (p->field "
                   "means p[0].field)");
    rk__cg_check_expr(ch, base, false);
    if (base->type->kind != CG_TY_PTR)
      rk__cg_error(
          ch->ctx, e->loc, "'->' needs a buffer parameter, but '%s' is %s",
          base->name.name, rk__cg_check_describe(base->type, t, sizeof t));
    if (base->type->elem->kind != CG_TY_STRUCT)
      rk__cg_error(ch->ctx, e->loc,
                   "'->' needs a buffer of structs, but '%s' holds %s",
                   base->name.name,
                   rk__cg_check_describe(base->type->elem, t, sizeof t));
  } else {
    rk__cg_check_expr(ch, base, false);
    if (base->type->kind == CG_TY_PTR)
      rk__cg_error(ch->ctx, e->loc, "'%s' is a buffer: use %s->%s or %s[i].%s",
                   rk__cg_check_value_noun(base), rk__cg_check_value_noun(base),
                   e->member.name, rk__cg_check_value_noun(base),
                   e->member.name);
  }
  const cg_type_t *st = e->member.arrow ? base->type->elem : base->type;
  if (st->kind == CG_TY_POS) {
    static const char *const kFields[] = {"x",  "y",  "z", "idx",
                                          "nx", "ny", "nz"};
    for (size_t i = 0; i < sizeof kFields / sizeof kFields[0]; ++i)
      if (strcmp(kFields[i], e->member.name) == 0) {
        e->type = scalar(CG_TY_I32);
        return;
      }
    rk__cg_error(ch->ctx, e->loc,
                 "rk_grid_pos_t has no field '%s' (it has x, y, z, idx, nx, "
                 "ny, nz)",
                 e->member.name);
  }
  if (st->kind != CG_TY_STRUCT)
    rk__cg_error(ch->ctx, e->loc, "member access '.%s' on a value of type %s",
                 e->member.name, rk__cg_check_describe(st, t, sizeof t));
  for (uint32_t i = 0; i < st->st->nfields; ++i)
    if (strcmp(st->st->fields[i].name, e->member.name) == 0) {
      e->member.field = &st->st->fields[i];
      e->type = e->member.field->type;
      return;
    }
  rk__cg_error(ch->ctx, e->loc, "%s has no field '%s'",
               rk__cg_check_describe(st, t, sizeof t), e->member.name);
}

static void check_binary(checker_t *ch, cg_expr_t *e) {
  cg_op_t op = e->binary.op;
  cg_expr_t *l = rk__cg_check_expr(ch, e->binary.lhs, false);
  cg_expr_t *r = rk__cg_check_expr(ch, e->binary.rhs, false);
  if (op == CG_OP_LAND || op == CG_OP_LOR) {
    e->binary.lhs = rk__cg_check_to_bool(ch, l, "'&&' and '||'");
    e->binary.rhs = rk__cg_check_to_bool(ch, r, "'&&' and '||'");
    e->binary.op_type = scalar(CG_TY_BOOL);
    e->type = scalar(CG_TY_BOOL);
    return;
  }
  bool integer_only = op == CG_OP_MOD || op == CG_OP_SHL || op == CG_OP_SHR ||
                      op == CG_OP_BAND || op == CG_OP_BOR || op == CG_OP_BXOR;
  rk__cg_check_arith_operand(ch, l, op, integer_only);
  rk__cg_check_arith_operand(ch, r, op, integer_only);
  if (op == CG_OP_SHL || op == CG_OP_SHR) {
    const cg_type_t *lt = scalar(rk__cg_check_promote_kind(l->type->kind));
    e->binary.lhs = rk__cg_check_convert(ch, l, lt, "a shift");
    e->binary.rhs = rk__cg_check_convert(
        ch, r, scalar(rk__cg_check_promote_kind(r->type->kind)), "a shift");
    e->binary.op_type = lt;
    e->type = lt;
    return;
  }
  const cg_type_t *ct = rk__cg_check_common_type(l->type, r->type);
  e->binary.lhs = rk__cg_check_convert(ch, l, ct, "an arithmetic operation");
  e->binary.rhs = rk__cg_check_convert(ch, r, ct, "an arithmetic operation");
  e->binary.op_type = ct;
  e->type = op >= CG_OP_LT && op <= CG_OP_NE ? scalar(CG_TY_BOOL) : ct;
}

static void check_assign(checker_t *ch, cg_expr_t *e) {
  cg_expr_t *t = rk__cg_check_expr(ch, e->assign.target, false);
  rk__cg_check_assignable(ch, t, "the assignment");
  cg_expr_t *v = rk__cg_check_expr(ch, e->assign.value, false);
  cg_op_t op = e->assign.op;
  if (op == CG_OP_NONE) {
    if (v->kind == CG_E_INIT_LIST)
      rk__cg_error(ch->ctx, v->loc,
                   "initializer lists are only allowed in declarations");
    e->assign.value = rk__cg_check_convert(ch, v, t->type, "the assignment");
    e->type = t->type;
    return;
  }
  bool integer_only = op == CG_OP_MOD || op == CG_OP_SHL || op == CG_OP_SHR ||
                      op == CG_OP_BAND || op == CG_OP_BOR || op == CG_OP_BXOR;
  rk__cg_check_arith_operand(ch, t, op, integer_only);
  rk__cg_check_arith_operand(ch, v, op, integer_only);
  const cg_type_t *ot;
  if (op == CG_OP_SHL || op == CG_OP_SHR) {
    ot = scalar(rk__cg_check_promote_kind(t->type->kind));
    e->assign.value = rk__cg_check_convert(
        ch, v, scalar(rk__cg_check_promote_kind(v->type->kind)), "a shift");
  } else {
    ot = rk__cg_check_common_type(t->type, v->type);
    e->assign.value = rk__cg_check_convert(ch, v, ot, "the assignment");
  }
  e->assign.op_type = ot;
  e->type = t->type;
}

cg_expr_t *rk__cg_check_expr(checker_t *ch, cg_expr_t *e, bool top) {
  char a[CG_TYPE_TEXT_MAX], b[CG_TYPE_TEXT_MAX];
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
      break; /* typed by the parser */
    case CG_E_BOOL:
      e->type = scalar(CG_TY_BOOL);
      break;
    case CG_E_NAME:
      check_name(ch, e);
      break;
    case CG_E_UNARY: {
      cg_expr_t *x = rk__cg_check_expr(ch, e->unary.operand, false);
      if (e->unary.op == CG_OP_NOT) {
        e->unary.operand = rk__cg_check_to_bool(ch, x, "'!'");
        e->type = scalar(CG_TY_BOOL);
      } else {
        rk__cg_check_arith_operand(ch, x, e->unary.op,
                                   e->unary.op == CG_OP_BNOT);
        const cg_type_t *pt = scalar(rk__cg_check_promote_kind(x->type->kind));
        e->unary.operand = rk__cg_check_convert(ch, x, pt, "a unary operation");
        e->type = pt;
      }
      break;
    }
    case CG_E_BINARY:
      check_binary(ch, e);
      break;
    case CG_E_ASSIGN:
      if (!top)
        rk__cg_error(ch->ctx, e->loc,
                     "assignment inside an expression is not supported; "
                     "write it as a statement of its own");
      check_assign(ch, e);
      break;
    case CG_E_INCDEC: {
      if (!top)
        rk__cg_error(ch->ctx, e->loc,
                     "'%s' inside an expression is not supported; write it "
                     "as a statement of its own",
                     e->incdec.inc ? "++" : "--");
      cg_expr_t *t = rk__cg_check_expr(ch, e->incdec.target, false);
      rk__cg_check_assignable(ch, t, e->incdec.inc ? "'++'" : "'--'");
      if (!rk__cg_is_arith(t->type) || t->type->kind == CG_TY_BOOL)
        rk__cg_error(ch->ctx, e->loc, "'%s' needs a number, not %s",
                     e->incdec.inc ? "++" : "--",
                     rk__cg_check_describe(t->type, a, sizeof a));
      e->type = t->type;
      break;
    }
    case CG_E_COND: {
      e->cond.cond = rk__cg_check_to_bool(
          ch, rk__cg_check_expr(ch, e->cond.cond, false), "'?:'");
      cg_expr_t *x =
          rk__cg_check_rvalue(ch, rk__cg_check_expr(ch, e->cond.then, false));
      cg_expr_t *y =
          rk__cg_check_rvalue(ch, rk__cg_check_expr(ch, e->cond.other, false));
      if (rk__cg_is_arith(x->type) && rk__cg_is_arith(y->type)) {
        const cg_type_t *ct =
            x->type->kind == CG_TY_BOOL && y->type->kind == CG_TY_BOOL
                ? scalar(CG_TY_BOOL)
                : rk__cg_check_common_type(x->type, y->type);
        e->cond.then = rk__cg_check_convert(ch, x, ct, "'?:'");
        e->cond.other = rk__cg_check_convert(ch, y, ct, "'?:'");
        e->type = ct;
      } else if (x->type == y->type && x->type->kind == CG_TY_STRUCT) {
        e->type = x->type;
      } else {
        rk__cg_error(ch->ctx, e->loc,
                     "incompatible operands of '?:' (%s and %s)",
                     rk__cg_check_describe(x->type, a, sizeof a),
                     rk__cg_check_describe(y->type, b, sizeof b));
      }
      break;
    }
    case CG_E_CAST: {
      if (rk__cg_check_is_dynamic_shared_init(e))
        rk__cg_error(ch->ctx, e->loc,
                     "(T *)rk_dynamic_shared() can only initialize a pointer "
                     "variable declared on its own: `float *sh = (float "
                     "*)rk_dynamic_shared();`, then sh[i]");
      if (e->cast.spec.is_ptr)
        rk__cg_error(ch->ctx, e->cast.spec.ptr_loc,
                     "pointer casts are not supported by the kernel language "
                     "(except `(T *)rk_dynamic_shared()` initializing a "
                     "pointer variable)");
      const cg_type_t *to = rk__cg_check_resolve_base(ch, &e->cast.spec);
      cg_expr_t *x = rk__cg_check_expr(ch, e->cast.operand, false);
      if (to->kind == CG_TY_VOID) {
        if (!top)
          rk__cg_error(ch->ctx, e->loc,
                       "a cast to void must be a statement of its own");
        e->type = to;
        break;
      }
      if (!rk__cg_is_arith(to))
        rk__cg_error(ch->ctx, e->loc,
                     "casts to %s are not supported (only between scalar "
                     "types)",
                     rk__cg_check_describe(to, a, sizeof a));
      rk__cg_check_arith_operand(ch, x, CG_OP_NONE, false);
      e->type = to;
      break;
    }
    case CG_E_INDEX: {
      cg_expr_t *base = rk__cg_check_expr(ch, e->index.base, false);
      if (base->type->kind != CG_TY_ARRAY && base->type->kind != CG_TY_PTR)
        rk__cg_error(ch->ctx, e->loc,
                     "only arrays and buffers can be indexed, not %s",
                     rk__cg_check_describe(base->type, a, sizeof a));
      cg_var_t *v = rk__cg_check_name_var(base);
      if (base->type->kind == CG_TY_PTR && ch->fn->kind == CG_FN_HANDLER && v &&
          v->kind == CG_VAR_PARAM)
        rk__cg_error(ch->ctx, e->loc,
                     "handler parameter '%s' points to one message: use "
                     "%s->field",
                     v->name, v->name);
      cg_expr_t *i =
          rk__cg_check_rvalue(ch, rk__cg_check_expr(ch, e->index.index, false));
      if (!rk__cg_is_integer(i->type))
        rk__cg_error(ch->ctx, i->loc,
                     "an array index must be an integer, "
                     "not %s",
                     rk__cg_check_describe(i->type, a, sizeof a));
      e->index.index = rk__cg_check_convert(
          ch, i, scalar(rk__cg_check_promote_kind(i->type->kind)), "an index");
      e->type = base->type->elem;
      break;
    }
    case CG_E_MEMBER:
      check_member(ch, e);
      break;
    case CG_E_CALL:
      check_call(ch, e, top);
      if (e->type->kind == CG_TY_VOID && !top)
        rk__cg_error(ch->ctx, e->loc,
                     "'%s' returns void; its result cannot be used",
                     e->call.name);
      break;
    case CG_E_ADDR:
      rk__cg_error(ch->ctx, e->loc,
                   "'&' is only allowed on an element passed as the first "
                   "argument of an atomic (rk_atomic_add_i32(&buf[i], v))");
    case CG_E_INIT_LIST:
      rk__cg_error(ch->ctx, e->loc,
                   "initializer lists are only allowed in declarations");
    case CG_E_CONVERT:
      break;
  }
  rk__cg_check_require_type(ch, e->type, e->loc, e);
  return e;
}
