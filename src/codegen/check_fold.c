/* Checker: constant folding (rk__cg_fold, check.h). */
#include <math.h>
#include <string.h>

#include "codegen/check_internal.h"

/* ---- Constant folding -----------------------------------------------------
 */

typedef struct cval {
  bool is_float;
  int64_t i; /* integers: the value in its type, sign-extended if signed */
  double f;
} cval_t;

int64_t rk__cg_check_wrap_int(cg_type_kind_t k, uint64_t v) {
  switch (k) {
    case CG_TY_BOOL:
      return v != 0;
    case CG_TY_I32: {
      uint32_t u = (uint32_t)v;
      return u <= INT32_MAX ? (int64_t)u : (int64_t)u - ((int64_t)1 << 32);
    }
    case CG_TY_U32:
      return (int64_t)(v & 0xffffffffu);
    default:
      return (int64_t)v; /* 64-bit: the bits as they are */
  }
}

static bool is_unsigned_kind(cg_type_kind_t k) {
  return k == CG_TY_U32 || k == CG_TY_U64 || k == CG_TY_BOOL;
}

/* Converts a constant to type kind `to`; false if C leaves it undefined
 * (a float outside the integer's range). */
static bool fold_convert(cval_t *v, cg_type_kind_t from, cg_type_kind_t to) {
  bool to_float = to == CG_TY_F32 || to == CG_TY_F64;
  if (v->is_float) {
    if (to_float) {
      v->f = to == CG_TY_F32 ? (double)(float)v->f : v->f;
      return true;
    }
    if (to == CG_TY_BOOL) {
      v->i = v->f != 0;
      v->is_float = false;
      return true;
    }
    double t = trunc(v->f);
    if (isnan(t)) return false;
    double lo = to == CG_TY_I32   ? -2147483648.0
                : to == CG_TY_I64 ? -9223372036854775808.0
                                  : 0.0;
    double hi = to == CG_TY_I32   ? 2147483647.0
                : to == CG_TY_U32 ? 4294967295.0
                : to == CG_TY_I64 ? 9223372036854775807.0
                                  : 18446744073709551615.0;
    if (t < lo || t > hi || (to == CG_TY_I64 && t >= 9223372036854775807.0) ||
        (to == CG_TY_U64 && t >= 18446744073709551615.0))
      return false;
    v->i = to == CG_TY_U64 ? (int64_t)(uint64_t)t : (int64_t)t;
    v->is_float = false;
    return true;
  }
  if (to_float) {
    double d = is_unsigned_kind(from) && from != CG_TY_BOOL
                   ? (double)(uint64_t)v->i
                   : (double)v->i;
    v->f = to == CG_TY_F32 ? (double)(float)d : d;
    v->is_float = true;
    return true;
  }
  v->i = rk__cg_check_wrap_int(to, (uint64_t)v->i);
  return true;
}

static bool is_float_literal_value(const cg_expr_t *e) {
  while (e->kind == CG_E_UNARY &&
         (e->unary.op == CG_OP_NEG || e->unary.op == CG_OP_PLUS))
    e = e->unary.operand;
  if (e->kind == CG_E_FLOAT) return true;
  if (e->kind == CG_E_NAME && e->name.var && e->name.var->kind == CG_VAR_MACRO)
    return is_float_literal_value(e->name.var->init);
  return false;
}

static bool fold(cg_ctx_t *ctx, const cg_expr_t *e, bool ice, cval_t *out);

static bool fold_binary(cg_ctx_t *ctx, const cg_expr_t *e, bool ice,
                        cval_t *out) {
  cval_t a, b;
  if (!fold(ctx, e->binary.lhs, ice, &a) || !fold(ctx, e->binary.rhs, ice, &b))
    return false;
  cg_op_t op = e->binary.op;
  cg_type_kind_t k =
      e->binary.op_type ? e->binary.op_type->kind : e->type->kind;
  memset(out, 0, sizeof *out);
  if (op == CG_OP_LAND || op == CG_OP_LOR) {
    out->i = op == CG_OP_LAND ? (a.i && b.i) : (a.i || b.i);
    return true;
  }
  if (a.is_float) {
    double x = a.f, y = b.f, r = 0;
    switch (op) {
      case CG_OP_ADD:
        r = x + y;
        break;
      case CG_OP_SUB:
        r = x - y;
        break;
      case CG_OP_MUL:
        r = x * y;
        break;
      case CG_OP_DIV:
        r = x / y;
        break;
      case CG_OP_LT:
        out->i = x < y;
        return true;
      case CG_OP_GT:
        out->i = x > y;
        return true;
      case CG_OP_LE:
        out->i = x <= y;
        return true;
      case CG_OP_GE:
        out->i = x >= y;
        return true;
      case CG_OP_EQ:
        out->i = x == y;
        return true;
      case CG_OP_NE:
        out->i = x != y;
        return true;
      default:
        return false;
    }
    out->is_float = true;
    out->f = k == CG_TY_F32 ? (double)(float)r : r;
    return true;
  }
  bool uns = is_unsigned_kind(k);
  uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i, r = 0;
  unsigned width = k == CG_TY_I64 || k == CG_TY_U64 ? 64 : 32;
  switch (op) {
    case CG_OP_ADD:
      r = x + y;
      break;
    case CG_OP_SUB:
      r = x - y;
      break;
    case CG_OP_MUL:
      r = x * y;
      break;
    case CG_OP_DIV:
    case CG_OP_MOD:
      if (y == 0)
        rk__cg_error(ctx, e->loc, "division by zero in a constant expression");
      if (uns) {
        uint64_t ux = width == 32 ? (x & 0xffffffffu) : x;
        uint64_t uy = width == 32 ? (y & 0xffffffffu) : y;
        r = op == CG_OP_DIV ? ux / uy : ux % uy;
      } else {
        int64_t sx = a.i, sy = b.i;
        int64_t min = width == 32 ? INT32_MIN : INT64_MIN;
        if (sx == min && sy == -1)
          rk__cg_error(ctx, e->loc, "overflow in a constant expression");
        r = (uint64_t)(op == CG_OP_DIV ? sx / sy : sx % sy);
      }
      break;
    case CG_OP_SHL:
    case CG_OP_SHR: {
      cg_type_kind_t rk = e->binary.rhs->type->kind;
      bool neg = !is_unsigned_kind(rk) && b.i < 0;
      if (neg || (uint64_t)b.i >= width)
        rk__cg_error(ctx, e->loc,
                     "shift count out of range in a constant expression");
      unsigned s = (unsigned)b.i;
      if (op == CG_OP_SHL) {
        r = x << s;
      } else if (uns) {
        r = (width == 32 ? (x & 0xffffffffu) : x) >> s;
      } else {
        r = a.i < 0 ? ~(~x >> s) : x >> s;
      }
      break;
    }
    case CG_OP_BAND:
      r = x & y;
      break;
    case CG_OP_BOR:
      r = x | y;
      break;
    case CG_OP_BXOR:
      r = x ^ y;
      break;
    case CG_OP_LT:
    case CG_OP_GT:
    case CG_OP_LE:
    case CG_OP_GE:
    case CG_OP_EQ:
    case CG_OP_NE: {
      int c;
      if (uns) {
        uint64_t ux = width == 32 ? (x & 0xffffffffu) : x;
        uint64_t uy = width == 32 ? (y & 0xffffffffu) : y;
        c = ux < uy ? -1 : ux > uy;
      } else {
        c = a.i < b.i ? -1 : a.i > b.i;
      }
      out->i = op == CG_OP_LT   ? c < 0
               : op == CG_OP_GT ? c > 0
               : op == CG_OP_LE ? c <= 0
               : op == CG_OP_GE ? c >= 0
               : op == CG_OP_EQ ? c == 0
                                : c != 0;
      return true;
    }
    default:
      return false;
  }
  out->i = rk__cg_check_wrap_int(k, r);
  return true;
}

static bool fold(cg_ctx_t *ctx, const cg_expr_t *e, bool ice, cval_t *out) {
  memset(out, 0, sizeof *out);
  switch (e->kind) {
    case CG_E_INT:
      out->i = rk__cg_check_wrap_int(e->type->kind, e->lit_int.value);
      return true;
    case CG_E_FLOAT:
      if (ice) return false;
      out->is_float = true;
      out->f = e->type->kind == CG_TY_F32 ? (double)(float)e->lit_float.value
                                          : e->lit_float.value;
      return true;
    case CG_E_BOOL:
      out->i = e->lit_bool;
      return true;
    case CG_E_NAME:
      if (!e->name.var || e->name.var->kind != CG_VAR_MACRO) return false;
      return fold(ctx, e->name.var->init, ice, out);
    case CG_E_CONVERT:
    case CG_E_CAST: {
      const cg_expr_t *x =
          e->kind == CG_E_CAST ? e->cast.operand : e->convert.operand;
      bool allow_float = e->kind == CG_E_CAST && is_float_literal_value(x);
      if (!fold(ctx, x, ice && !allow_float, out)) return false;
      if (e->type->kind == CG_TY_VOID) return false;
      if (ice && rk__cg_is_float(e->type)) return false;
      return fold_convert(out, x->type->kind, e->type->kind);
    }
    case CG_E_UNARY: {
      cval_t a;
      if (!fold(ctx, e->unary.operand, ice, &a)) return false;
      switch (e->unary.op) {
        case CG_OP_PLUS:
          *out = a;
          return true;
        case CG_OP_NEG:
          if (a.is_float) {
            out->is_float = true;
            out->f = -a.f;
          } else {
            out->i = rk__cg_check_wrap_int(e->type->kind, 0 - (uint64_t)a.i);
          }
          return true;
        case CG_OP_BNOT:
          out->i = rk__cg_check_wrap_int(e->type->kind, ~(uint64_t)a.i);
          return true;
        case CG_OP_NOT:
          out->i = !a.i;
          return true;
        default:
          return false;
      }
    }
    case CG_E_BINARY:
      return fold_binary(ctx, e, ice, out);
    case CG_E_COND: {
      cval_t c;
      if (!fold(ctx, e->cond.cond, ice, &c)) return false;
      return fold(ctx, c.i ? e->cond.then : e->cond.other, ice, out);
    }
    default:
      return false;
  }
}

bool rk__cg_fold(cg_ctx_t *ctx, const cg_expr_t *e, bool ice, int64_t *out_int,
                 double *out_float) {
  cval_t v;
  if (!fold(ctx, e, ice, &v)) return false;
  if (out_int) *out_int = v.is_float ? 0 : v.i;
  if (out_float) *out_float = v.is_float ? v.f : (double)v.i;
  return true;
}
