/* Parser: expressions, by precedence climbing (parse_internal.h). */
#include <string.h>

#include "codegen/parse_internal.h"

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
      e = rk__cg_parse_new_expr(p, CG_E_NAME, t->loc);
      e->name.name = rk__cg_parse_ident_text(p, t);
      return e;
    case CG_TOK_INT:
      next(p);
      e = rk__cg_parse_new_expr(p, CG_E_INT, t->loc);
      e->lit_int.value = t->ival;
      e->lit_int.hex = t->hex;
      e->type = rk__cg_type_scalar((cg_type_kind_t)t->num_type);
      return e;
    case CG_TOK_FLOAT: {
      next(p);
      e = rk__cg_parse_new_expr(p, CG_E_FLOAT, t->loc);
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
        e = rk__cg_parse_new_expr(p, CG_E_BOOL, t->loc);
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
      rk__cg_parse_error_at_token(p, t, "an expression");
    case CG_TOK_PUNCT:
      if (t->sub == '(') {
        next(p);
        e = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')'");
        e->paren = true;
        return e;
      }
      rk__cg_parse_error_at_token(p, t, "an expression");
    default:
      rk__cg_parse_error_at_token(p, t, "an expression");
  }
}

static cg_expr_t *parse_postfix(parser_t *p) {
  cg_expr_t *e = parse_primary(p);
  for (;;) {
    const cg_token_t *t = cur(p);
    if (is_punct(t, '[')) {
      next(p);
      cg_expr_t *x = rk__cg_parse_new_expr(p, CG_E_INDEX, e->loc);
      x->index.base = e;
      x->index.index = rk__cg_parse_expr(p);
      rk__cg_parse_expect(p, ']', "']'");
      e = rk__cg_parse_grown(p, x, x->index.base, x->index.index, NULL);
    } else if (is_punct(t, '(')) {
      if (e->kind != CG_E_NAME || e->paren)
        rk__cg_error(p->ctx, t->loc,
                     "only functions can be called, by name (function "
                     "pointers are not supported)");
      next(p);
      cg_expr_t *c = rk__cg_parse_new_expr(p, CG_E_CALL, e->loc);
      c->call.name = e->name.name;
      cg_vec_t args = {0};
      unsigned h = 0;
      if (!is_punct(cur(p), ')')) {
        for (;;) {
          cg_expr_t *a = rk__cg_parse_assign(p);
          if (a->height > h) h = a->height;
          rk__cg_vec_push(p->ctx, &args, a);
          if (!accept(p, ',')) break;
        }
      }
      rk__cg_parse_expect(p, ')', "')' or ',' in the argument list");
      c->call.args = (cg_expr_t **)args.v;
      c->call.nargs = args.n;
      cg_expr_t tallest = {0};
      tallest.height = (uint16_t)h;
      e = rk__cg_parse_grown(p, c, &tallest, NULL, NULL);
    } else if (is_punct(t, '.') || is_punct(t, CG_P_ARROW)) {
      next(p);
      const cg_token_t *name = rk__cg_parse_expect_ident(p, "a field name");
      cg_expr_t *m = rk__cg_parse_new_expr(p, CG_E_MEMBER, e->loc);
      m->member.base = e;
      m->member.name = rk__cg_parse_ident_text(p, name);
      m->member.arrow = is_punct(t, CG_P_ARROW);
      e = rk__cg_parse_grown(p, m, e, NULL, NULL);
    } else if (is_punct(t, CG_P_INC) || is_punct(t, CG_P_DEC)) {
      next(p);
      cg_expr_t *x = rk__cg_parse_new_expr(p, CG_E_INCDEC, t->loc);
      x->incdec.inc = is_punct(t, CG_P_INC);
      x->incdec.prefix = false;
      x->incdec.target = e;
      e = rk__cg_parse_grown(p, x, e, NULL, NULL);
    } else {
      return e;
    }
  }
}

static cg_expr_t *parse_unary(parser_t *p) {
  const cg_token_t *t = cur(p);
  rk__cg_parse_enter(p, t->loc);
  cg_expr_t *e;
  if (is_punct(t, CG_P_INC) || is_punct(t, CG_P_DEC)) {
    next(p);
    e = rk__cg_parse_new_expr(p, CG_E_INCDEC, t->loc);
    e->incdec.inc = is_punct(t, CG_P_INC);
    e->incdec.prefix = true;
    e->incdec.target = parse_unary(p);
    e = rk__cg_parse_grown(p, e, e->incdec.target, NULL, NULL);
  } else if (is_punct(t, '-') || is_punct(t, '+') || is_punct(t, '!') ||
             is_punct(t, '~')) {
    next(p);
    e = rk__cg_parse_new_expr(p, CG_E_UNARY, t->loc);
    e->unary.op = t->sub == '-'   ? CG_OP_NEG
                  : t->sub == '+' ? CG_OP_PLUS
                  : t->sub == '!' ? CG_OP_NOT
                                  : CG_OP_BNOT;
    e->unary.operand = parse_unary(p);
    e = rk__cg_parse_grown(p, e, e->unary.operand, NULL, NULL);
  } else if (is_punct(t, '*')) {
    rk__cg_error(p->ctx, t->loc,
                 "'*' (dereference) is not supported: index the buffer "
                 "(p[i]) or use p->field");
  } else if (is_punct(t, '&')) {
    next(p);
    e = rk__cg_parse_new_expr(p, CG_E_ADDR, t->loc);
    e->addr.operand = parse_unary(p);
    e = rk__cg_parse_grown(p, e, e->addr.operand, NULL, NULL);
  } else if (is_punct(t, '(') && rk__cg_parse_starts_decl(p, ahead(p, 1))) {
    next(p);
    decl_specs_t ds;
    rk__cg_parse_decl_specs(p, &ds, false, false);
    if (!ds.has_type)
      rk__cg_parse_error_at_token(p, cur(p), "a type name in the cast");
    if (is_punct(cur(p), '*')) {
      /* Only (T *)rk_dynamic_shared() is valid (the checker says so). */
      ds.spec.is_ptr = true;
      ds.spec.ptr_loc = cur(p)->loc;
      next(p);
      if (is_punct(cur(p), '*'))
        rk__cg_error(p->ctx, cur(p)->loc,
                     "pointer casts are not supported by the kernel language");
    }
    rk__cg_parse_expect(p, ')', "')' after the cast's type");
    e = rk__cg_parse_new_expr(p, CG_E_CAST, t->loc);
    e->cast.spec = ds.spec;
    e->cast.operand = parse_unary(p);
    e = rk__cg_parse_grown(p, e, e->cast.operand, NULL, NULL);
  } else {
    e = parse_postfix(p);
  }
  rk__cg_parse_leave(p);
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
    cg_expr_t *b = rk__cg_parse_new_expr(p, CG_E_BINARY, t->loc);
    b->binary.op = op;
    b->binary.lhs = lhs;
    b->binary.rhs = rhs;
    lhs = rk__cg_parse_grown(p, b, lhs, rhs, NULL);
  }
}

cg_expr_t *rk__cg_parse_cond(parser_t *p) {
  cg_expr_t *c = parse_binary(p, 1);
  const cg_token_t *q = cur(p);
  if (!is_punct(q, '?')) return c;
  next(p);
  cg_expr_t *e = rk__cg_parse_new_expr(p, CG_E_COND, q->loc);
  e->cond.cond = c;
  e->cond.then = rk__cg_parse_expr(p);
  rk__cg_parse_expect(p, ':', "':' in the conditional expression");
  e->cond.other = rk__cg_parse_cond(p);
  return rk__cg_parse_grown(p, e, c, e->cond.then, e->cond.other);
}

cg_expr_t *rk__cg_parse_assign(parser_t *p) {
  rk__cg_parse_enter(p, cur(p)->loc);
  cg_expr_t *lhs = rk__cg_parse_cond(p);
  const cg_token_t *t = cur(p);
  bool is_assign;
  cg_op_t op = assign_op(t, &is_assign);
  if (is_assign) {
    next(p);
    cg_expr_t *e = rk__cg_parse_new_expr(p, CG_E_ASSIGN, t->loc);
    e->assign.op = op;
    e->assign.target = lhs;
    e->assign.value = rk__cg_parse_assign(p);
    lhs = rk__cg_parse_grown(p, e, lhs, e->assign.value, NULL);
  }
  rk__cg_parse_leave(p);
  return lhs;
}

cg_expr_t *rk__cg_parse_expr(parser_t *p) {
  cg_expr_t *e = rk__cg_parse_assign(p);
  if (is_punct(cur(p), ','))
    rk__cg_error(p->ctx, cur(p)->loc,
                 "the comma operator is not supported: write separate "
                 "statements");
  return e;
}
