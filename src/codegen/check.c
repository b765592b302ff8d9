/* Checker of the kernel language (check.h). */
#include "codegen/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/targets.h"

/* A name in scope. Shadowed bindings of the same name chain through prev;
 * leaving a scope restores them. */
typedef struct binding {
  const char *name;
  cg_var_t *var;   /* a variable, parameter, constant or macro */
  cg_func_t *fn;   /* a function: its first declaration */
  cg_struct_t *st; /* a typedef name */
  uint32_t depth;  /* scope depth it was declared at */
  struct binding *prev;
} binding_t;

typedef struct checker {
  cg_ctx_t *ctx;
  cg_unit_t *unit;
  cg_map_t names;       /* name -> innermost binding_t* */
  cg_map_t tags;        /* struct tag -> cg_struct_t* */
  cg_map_t funcs;       /* every function name in the file -> cg_func_t* */
  cg_vec_t stack;       /* binding_t* in declaration order */
  cg_vec_t marks;       /* stack sizes at scope entries (as uintptr_t) */
  uint32_t depth;       /* current scope depth (0 = file) */
  cg_func_t *fn;        /* function being checked (its definition) */
  uint32_t block_depth; /* 1 = the function body's own block */
  int loops, breakables;
  const cg_var_t *binding_dynshared; /* the fn's rk_dynamic_shared() pointer */
} checker_t;

/* ---- Small helpers --------------------------------------------------------
 */

static const cg_type_t *scalar(cg_type_kind_t k) {
  return rk__cg_type_scalar(k);
}

/* Whether e is `(T *)rk_dynamic_shared()`, as written. */
static bool is_dynamic_shared_init(const cg_expr_t *e) {
  if (!e || e->kind != CG_E_CAST || !e->cast.spec.is_ptr) return false;
  const cg_expr_t *c = e->cast.operand;
  return c->kind == CG_E_CALL && c->call.nargs == 0 &&
         rk__cg_builtin_lookup(c->call.name) == CG_BI_DYNAMIC_SHARED;
}

static const char *describe(const cg_type_t *t, char *buf, size_t cap) {
  rk__cg_type_describe(t, buf, cap);
  return buf;
}

static const char *fn_kind_name(cg_func_kind_t k) {
  switch (k) {
    case CG_FN_KERNEL:
      return "RK_KERNEL";
    case CG_FN_STENCIL:
      return "RK_STENCIL";
    case CG_FN_HANDLER:
      return "RK_HANDLER";
    default:
      return "helper";
  }
}

static const char *entry_word(cg_func_kind_t k) {
  switch (k) {
    case CG_FN_KERNEL:
      return "kernel";
    case CG_FN_STENCIL:
      return "stencil";
    case CG_FN_HANDLER:
      return "handler";
    default:
      return "helper function";
  }
}

/* Refuses a scalar the target cannot express, and notes what printers must
 * know (OpenCL's fp64 pragma). */
static void require_type(checker_t *ch, const cg_type_t *t, cg_loc_t loc,
                         const cg_expr_t *literal) {
  t = rk__cg_type_base(t);
  if (t->kind == CG_TY_PTR) t = rk__cg_type_base(t->elem);
  if (t->kind == CG_TY_F64) {
    ch->unit->uses_f64 = true;
    if (!ch->ctx->caps.f64) {
      if (literal && literal->kind == CG_E_FLOAT)
        rk__cg_refuse(ch->ctx, loc,
                      "double is not supported by target %s (the constant "
                      "%s is a double; write %sf)",
                      ch->ctx->caps.target_name, literal->lit_float.text,
                      literal->lit_float.text);
      else
        rk__cg_refuse(ch->ctx, loc, "double is not supported by target %s",
                      ch->ctx->caps.target_name);
    }
  }
  if ((t->kind == CG_TY_I64 || t->kind == CG_TY_U64) && !ch->ctx->caps.i64)
    rk__cg_refuse(ch->ctx, loc,
                  "64-bit integers (%s) are not supported by target %s",
                  t->kind == CG_TY_I64 ? "int64_t" : "uint64_t",
                  ch->ctx->caps.target_name);
}

/* ---- Scopes ---------------------------------------------------------------
 */

static void push_scope(checker_t *ch) {
  rk__cg_vec_push(ch->ctx, &ch->marks, (void *)(uintptr_t)ch->stack.n);
  ch->depth++;
}

static void pop_scope(checker_t *ch) {
  uint32_t mark = (uint32_t)(uintptr_t)ch->marks.v[--ch->marks.n];
  while (ch->stack.n > mark) {
    binding_t *b = ch->stack.v[--ch->stack.n];
    rk__cg_map_put(ch->ctx, &ch->names, b->name, b->prev);
  }
  ch->depth--;
}

static binding_t *lookup(checker_t *ch, const char *name) {
  return rk__cg_map_get(&ch->names, name);
}

/* Refuses names the language reserves. */
static void check_user_name(checker_t *ch, const char *name, cg_loc_t loc) {
  if (strncmp(name, "rk_", 3) == 0 || strncmp(name, "RK_", 3) == 0)
    rk__cg_error(ch->ctx, loc,
                 "'%s': names starting with rk_ or RK_ are reserved for the "
                 "kernel language",
                 name);
  if (name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z')))
    rk__cg_error(ch->ctx, loc, "'%s' is a reserved identifier in C", name);
  if (rk__cg_builtin_lookup(name) != CG_BI_NONE_)
    rk__cg_error(ch->ctx, loc, "'%s' is the name of a built-in function", name);
}

static binding_t *declare(checker_t *ch, const char *name, cg_loc_t loc) {
  check_user_name(ch, name, loc);
  binding_t *old = lookup(ch, name);
  if (old) {
    if (old->var && old->var->kind == CG_VAR_MACRO)
      rk__cg_error(ch->ctx, loc,
                   "'%s' is a macro (#define on line %u): macros cannot be "
                   "redeclared",
                   name, (unsigned)old->var->loc.line);
    if (old->st)
      rk__cg_error(ch->ctx, loc, "'%s' is already a type name (line %u)", name,
                   (unsigned)old->st->loc.line);
    if (old->depth == ch->depth)
      rk__cg_error(ch->ctx, loc, "'%s' is already declared on line %u", name,
                   (unsigned)(old->var  ? old->var->loc.line
                              : old->fn ? old->fn->loc.line
                                        : 0));
  }
  binding_t *b = rk__cg_alloc(ch->ctx, sizeof *b);
  b->name = name;
  b->depth = ch->depth;
  b->prev = old;
  rk__cg_map_put(ch->ctx, &ch->names, name, b);
  rk__cg_vec_push(ch->ctx, &ch->stack, b);
  return b;
}

/* ---- Constant folding -----------------------------------------------------
 */

typedef struct cval {
  bool is_float;
  int64_t i; /* integers: the value in its type, sign-extended if signed */
  double f;
} cval_t;

static int64_t wrap_int(cg_type_kind_t k, uint64_t v) {
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
  v->i = wrap_int(to, (uint64_t)v->i);
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
  out->i = wrap_int(k, r);
  return true;
}

static bool fold(cg_ctx_t *ctx, const cg_expr_t *e, bool ice, cval_t *out) {
  memset(out, 0, sizeof *out);
  switch (e->kind) {
    case CG_E_INT:
      out->i = wrap_int(e->type->kind, e->lit_int.value);
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
            out->i = wrap_int(e->type->kind, 0 - (uint64_t)a.i);
          }
          return true;
        case CG_OP_BNOT:
          out->i = wrap_int(e->type->kind, ~(uint64_t)a.i);
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

/* ---- Types of declarations ------------------------------------------------
 */

static cg_expr_t *check_expr(checker_t *ch, cg_expr_t *e, bool top);

/* An integer constant expression that must lie in [lo, hi]. */
static int64_t fold_int(checker_t *ch, cg_expr_t *e, const char *what,
                        int64_t lo, int64_t hi) {
  check_expr(ch, e, false);
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

static const cg_type_t *resolve_base(checker_t *ch, const cg_typespec_t *spec) {
  if (spec->base != CG_TY_STRUCT) {
    const cg_type_t *t = scalar((cg_type_kind_t)spec->base);
    require_type(ch, t, spec->loc, NULL);
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
static const cg_type_t *apply_dims(checker_t *ch, const cg_type_t *elem,
                                   cg_expr_t **dims, uint32_t ndims) {
  const cg_type_t *t = elem;
  for (uint32_t i = ndims; i-- > 0;) {
    int64_t n = fold_int(ch, dims[i], "the array size", 1, CG_MAX_OBJECT);
    t = rk__cg_type_array(ch->ctx, t, (uint32_t)n);
    if (t->size > CG_MAX_OBJECT)
      rk__cg_error(ch->ctx, dims[i]->loc, "the array is too large");
  }
  return t;
}

/* ---- Structs --------------------------------------------------------------
 */

static void check_struct(checker_t *ch, cg_struct_t *st) {
  if (st->tag) {
    check_user_name(ch, st->tag, st->loc);
    if (rk__cg_map_get(&ch->tags, st->tag))
      rk__cg_error(ch->ctx, st->loc, "struct '%s' is already defined", st->tag);
  }
  uint64_t offset = 0;
  uint32_t align = 1;
  for (uint32_t i = 0; i < st->nfields; ++i) {
    cg_field_t *f = &st->fields[i];
    check_user_name(ch, f->name, f->loc);
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(st->fields[j].name, f->name) == 0)
        rk__cg_error(ch->ctx, f->loc, "duplicate field '%s'", f->name);
    const cg_type_t *base = resolve_base(ch, &f->spec);
    if (base->kind == CG_TY_VOID || base->kind == CG_TY_POS)
      rk__cg_error(ch->ctx, f->spec.loc, "a field cannot have type %s",
                   base->kind == CG_TY_VOID ? "void" : "rk_grid_pos_t");
    if (base->kind == CG_TY_BOOL)
      rk__cg_error(ch->ctx, f->spec.loc,
                   "bool fields are not supported: bool's size and layout "
                   "differ between targets (use int or uint32_t)");
    f->type = apply_dims(ch, base, f->dims, f->ndims);
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
    binding_t *b = declare(ch, st->typedef_name, st->loc);
    b->st = st;
  }
}

/* ---- Conversions ----------------------------------------------------------
 */

static cg_type_kind_t promote_kind(cg_type_kind_t k) {
  return k == CG_TY_BOOL ? CG_TY_I32 : k;
}

/* C's usual arithmetic conversions over the language's types. */
static const cg_type_t *common_type(const cg_type_t *a, const cg_type_t *b) {
  cg_type_kind_t x = promote_kind(a->kind), y = promote_kind(b->kind);
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

static const char *value_noun(const cg_expr_t *e) {
  return e->kind == CG_E_NAME ? e->name.name : "expression";
}

/* Refuses values that are not first-class (arrays, buffers, positions,
 * void). */
static cg_expr_t *rvalue(checker_t *ch, cg_expr_t *e) {
  switch (e->type->kind) {
    case CG_TY_ARRAY:
      rk__cg_error(ch->ctx, e->loc,
                   "array '%s' cannot be used as a value; use its elements",
                   value_noun(e));
    case CG_TY_PTR:
      rk__cg_error(ch->ctx, e->loc,
                   "buffer '%s' can only be indexed (%s[i]) or used with "
                   "'->': pointer arithmetic, copies and comparisons are not "
                   "supported",
                   value_noun(e), value_noun(e));
    case CG_TY_POS:
      rk__cg_error(ch->ctx, e->loc,
                   "the stencil position '%s' can only be used through its "
                   "fields (%s.x) and in neighbour reads",
                   value_noun(e), value_noun(e));
    case CG_TY_VOID:
      rk__cg_error(ch->ctx, e->loc, "a void value cannot be used");
    default:
      return e;
  }
}

/* Converts an rvalue to `to` as assignment does in C. */
static cg_expr_t *convert(checker_t *ch, cg_expr_t *e, const cg_type_t *to,
                          const char *context) {
  rvalue(ch, e);
  if (e->type == to) return e;
  char a[256], b[256];
  if (to->kind == CG_TY_STRUCT || e->type->kind == CG_TY_STRUCT ||
      !rk__cg_is_arith(to))
    rk__cg_error(ch->ctx, e->loc, "cannot convert %s to %s in %s",
                 describe(e->type, a, sizeof a), describe(to, b, sizeof b),
                 context);
  if (e->type->kind == to->kind) return e;
  return wrap_convert(ch, e, to);
}

static cg_expr_t *to_bool(checker_t *ch, cg_expr_t *e, const char *context) {
  if (e->type->kind == CG_TY_PTR && e->kind == CG_E_NAME && e->name.var &&
      (e->name.var->kind == CG_VAR_PARAM ||
       e->name.var->kind == CG_VAR_DYNSHARED))
    /* `if (buf)`: the buffer is not NULL (always true in WGSL). */
    return wrap_convert(ch, e, scalar(CG_TY_BOOL));
  rvalue(ch, e);
  if (!rk__cg_is_arith(e->type)) {
    char a[256];
    rk__cg_error(ch->ctx, e->loc, "%s needs a scalar value, not %s", context,
                 describe(e->type, a, sizeof a));
  }
  return convert(ch, e, scalar(CG_TY_BOOL), context);
}

static cg_expr_t *arith_operand(checker_t *ch, cg_expr_t *e, cg_op_t op,
                                bool integer_only) {
  char a[256];
  if (e->type->kind == CG_TY_PTR) {
    if (op == CG_OP_ADD || op == CG_OP_SUB)
      rk__cg_error(ch->ctx, e->loc,
                   "pointer arithmetic is not supported: index the buffer "
                   "instead (%s[i + 1])",
                   value_noun(e));
    if (op >= CG_OP_LT && op <= CG_OP_NE)
      rk__cg_error(ch->ctx, e->loc, "comparison of pointers is not supported");
  }
  rvalue(ch, e);
  if (!rk__cg_is_arith(e->type) ||
      (integer_only && !rk__cg_is_integer(e->type)))
    rk__cg_error(ch->ctx, e->loc, "invalid operand of '%s': %s",
                 rk__cg_op_spelling(op), describe(e->type, a, sizeof a));
  return e;
}

/* ---- Lvalues --------------------------------------------------------------
 */

/* Checks that `e` may be assigned and notes the variable as modified. */
static void check_assignable(checker_t *ch, cg_expr_t *e, const char *what) {
  char a[256];
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
        buffer = value_noun(x->index.base);
        break;
      }
      x = x->index.base;
    } else if (x->kind == CG_E_MEMBER) {
      if (x->member.arrow) {
        through_buffer = true;
        const_buffer = x->member.base->type->elem_const;
        buffer = value_noun(x->member.base);
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
                   describe(e->type, a, sizeof a));
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

/* ---- Built-in calls -------------------------------------------------------
 */

static cg_var_t *name_var(const cg_expr_t *e) {
  while (e->kind == CG_E_CONVERT) e = e->convert.operand;
  return e->kind == CG_E_NAME ? e->name.var : NULL;
}

static void check_atomic(checker_t *ch, cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  cg_expr_t *a0 = e->call.args[0];
  const char *name = rk__cg_builtin_name(b);
  if (a0->kind == CG_E_NAME && !a0->paren) {
    /* A buffer itself, rk_atomic_add_i32(counter, 1), is its element 0:
     * rewritten to &counter[0] for every printer. */
    binding_t *bd = lookup(ch, a0->name.name);
    const cg_var_t *v = bd ? bd->var : NULL;
    if (v && ((v->kind == CG_VAR_PARAM && v->type->kind == CG_TY_PTR) ||
              v->kind == CG_VAR_DYNSHARED)) {
      cg_expr_t *zero = rk__cg_alloc(ch->ctx, sizeof *zero);
      zero->kind = CG_E_INT;
      zero->type = scalar(CG_TY_I32);
      zero->loc = a0->loc;
      zero->height = 1;
      cg_expr_t *index = rk__cg_alloc(ch->ctx, sizeof *index);
      index->kind = CG_E_INDEX;
      index->loc = a0->loc;
      index->height = (uint16_t)(a0->height + 1);
      index->index.base = a0;
      index->index.index = zero;
      cg_expr_t *addr = rk__cg_alloc(ch->ctx, sizeof *addr);
      addr->kind = CG_E_ADDR;
      addr->loc = a0->loc;
      addr->height = (uint16_t)(index->height + 1);
      addr->addr.operand = index;
      e->call.args[0] = a0 = addr;
    }
  }
  if (a0->kind != CG_E_ADDR)
    rk__cg_error(ch->ctx, a0->loc,
                 "the first argument of %s must be the address of a buffer "
                 "or shared-array element: &buf[i]",
                 name);
  cg_expr_t *x = a0->addr.operand;
  if (x->kind != CG_E_INDEX)
    rk__cg_error(ch->ctx, x->loc,
                 "%s needs &buf[i] or &shared[i]: '&' may only take the "
                 "address of an element of a buffer parameter or of an "
                 "RK_SHARED array",
                 name);
  check_expr(ch, x, false);
  const cg_expr_t *root = x;
  while (root->kind == CG_E_INDEX) root = root->index.base;
  cg_var_t *v = root->kind == CG_E_NAME ? root->name.var : NULL;
  bool ok = v && ((v->kind == CG_VAR_PARAM && v->type->kind == CG_TY_PTR) ||
                  v->kind == CG_VAR_SHARED || v->kind == CG_VAR_DYNSHARED);
  if (!ok || root->paren)
    rk__cg_error(ch->ctx, x->loc,
                 "%s needs &buf[i] or &shared[i]: the element must belong "
                 "to a buffer parameter or an RK_SHARED array",
                 name);
  if (v->kind == CG_VAR_PARAM && v->type->elem_const)
    rk__cg_error(ch->ctx, x->loc,
                 "%s on read-only buffer '%s' (declared "
                 "const)",
                 name, v->name);
  cg_type_kind_t want = rk__cg_bi_atomic_unsigned(b) ? CG_TY_U32 : CG_TY_I32;
  if (x->type->kind != want) {
    char t[256], alt[64];
    snprintf(alt, sizeof alt, "%s", name);
    size_t n = strlen(alt);
    if (x->type->kind == CG_TY_U32 || x->type->kind == CG_TY_I32)
      memcpy(alt + n - 3, x->type->kind == CG_TY_U32 ? "u32" : "i32", 3);
    rk__cg_error(
        ch->ctx, x->loc, "%s works on %s elements, but '%s' holds %s%s%s", name,
        want == CG_TY_U32 ? "uint32_t" : "int32_t", v->name,
        describe(x->type, t, sizeof t), strcmp(alt, name) ? "; use " : "",
        strcmp(alt, name) ? alt : "");
  }
  a0->type = rk__cg_type_ptr(ch->ctx, x->type, false);
  for (uint32_t i = 1; i < e->call.nargs; ++i)
    e->call.args[i] = convert(ch, check_expr(ch, e->call.args[i], false),
                              scalar(want), "an atomic's argument");
  e->type = scalar(want);
  ch->unit->uses_cas |= rk__cg_bi_atomic_op(b) == CG_ATOMIC_CAS;
}

static void check_stencil_read(checker_t *ch, cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  const char *name = rk__cg_builtin_name(b);
  cg_func_t *fn = ch->fn;
  if (fn->kind != CG_FN_STENCIL)
    rk__cg_error(ch->ctx, e->loc,
                 "%s can only be used in the body of an RK_STENCIL function",
                 name);
  if ((b == CG_BI_UP || b == CG_BI_DOWN || b == CG_BI_AT3) && fn->dims != 3)
    rk__cg_error(ch->ctx, e->loc,
                 "%s is only available in 3D stencils (RK_STENCIL3D)", name);
  if (b == CG_BI_AT && fn->dims == 3)
    rk__cg_error(ch->ctx, e->loc,
                 "in a 3D stencil use rk_at3(buf, p, dx, dy, dz)");
  cg_expr_t *buf = e->call.args[0];
  cg_expr_t *pos = e->call.args[1];
  if (buf->kind != CG_E_NAME || buf->paren)
    rk__cg_error(ch->ctx, buf->loc,
                 "the first argument of %s must be a buffer parameter of "
                 "the stencil",
                 name);
  check_expr(ch, buf, false);
  cg_var_t *v = buf->name.var;
  if (v->kind != CG_VAR_PARAM || v->type->kind != CG_TY_PTR)
    rk__cg_error(ch->ctx, buf->loc,
                 "the first argument of %s must be a buffer parameter of "
                 "the stencil",
                 name);
  if (!rk__cg_is_arith(v->type->elem) || v->type->elem->kind == CG_TY_BOOL) {
    char t[256];
    rk__cg_error(ch->ctx, buf->loc,
                 "neighbour reads need a buffer of numbers; '%s' holds %s",
                 v->name, describe(v->type->elem, t, sizeof t));
  }
  if (!v->type->elem_const)
    rk__cg_error(ch->ctx, buf->loc,
                 "buffer '%s' is read through %s, so it must be declared "
                 "const (a stencil must not update the buffers whose "
                 "neighbours it reads)",
                 v->name, name);
  if (pos->kind != CG_E_NAME || pos->paren)
    rk__cg_error(ch->ctx, pos->loc,
                 "the second argument of %s must be the stencil's position "
                 "parameter",
                 name);
  check_expr(ch, pos, false);
  if (pos->name.var != fn->params[0])
    rk__cg_error(ch->ctx, pos->loc,
                 "the second argument of %s must be the stencil's position "
                 "parameter '%s'",
                 name, fn->params[0]->name);
  int32_t d[3] = {0, 0, 0};
  switch (b) {
    case CG_BI_NORTH:
      d[1] = -1;
      break;
    case CG_BI_SOUTH:
      d[1] = 1;
      break;
    case CG_BI_WEST:
      d[0] = -1;
      break;
    case CG_BI_EAST:
      d[0] = 1;
      break;
    case CG_BI_DOWN:
      d[2] = -1;
      break;
    case CG_BI_UP:
      d[2] = 1;
      break;
    case CG_BI_AT:
    case CG_BI_AT3:
      for (uint32_t i = 2; i < e->call.nargs; ++i) {
        static const char *const kWhat[] = {"dx", "dy", "dz"};
        char what[64];
        snprintf(what, sizeof what, "the offset %s of %s", kWhat[i - 2], name);
        d[i - 2] = (int32_t)fold_int(ch, e->call.args[i], what,
                                     -(int64_t)fn->halo, fn->halo);
      }
      break;
    default:
      break;
  }
  for (int i = 0; i < 3; ++i)
    if (d[i] > (int32_t)fn->halo || d[i] < -(int32_t)fn->halo)
      rk__cg_error(ch->ctx, e->loc,
                   "%s reads outside the halo: stencil '%s' has halo %u", name,
                   fn->name, (unsigned)fn->halo);
  e->call.buffer = v;
  e->call.dx = d[0];
  e->call.dy = d[1];
  e->call.dz = d[2];
  e->type = v->type->elem;
  if (!v->tiled) {
    v->tiled = true;
    rk__cg_vec_push(ch->ctx, &fn->tiled, v);
  }
}

static void check_builtin(checker_t *ch, cg_expr_t *e, bool top) {
  cg_builtin_t b = e->call.builtin;
  const char *name = rk__cg_builtin_name(b);
  int want = rk__cg_builtin_nargs(b);
  cg_func_t *fn = ch->fn;
  if (b == CG_BI_DYNAMIC_SHARED)
    rk__cg_error(ch->ctx, e->loc,
                 "rk_dynamic_shared() is supported only as the initializer "
                 "of a pointer variable declared on its own in an RK_KERNEL: "
                 "`float *sh = (float *)rk_dynamic_shared();`, then sh[i]");
  if ((int)e->call.nargs != want)
    rk__cg_error(ch->ctx, e->loc, "%s expects %d argument%s, got %u", name,
                 want, want == 1 ? "" : "s", (unsigned)e->call.nargs);
  if (rk__cg_bi_is_index(b)) {
    fn->uses_index = true;
    e->type = scalar(CG_TY_U32);
  } else if (b == CG_BI_SYNC_THREADS || b == CG_BI_THREAD_FENCE) {
    if (!top)
      rk__cg_error(ch->ctx, e->loc, "%s() must be a statement of its own",
                   name);
    if (b == CG_BI_SYNC_THREADS) {
      if (fn->kind == CG_FN_STENCIL || fn->kind == CG_FN_HANDLER)
        rk__cg_error(ch->ctx, e->loc,
                     "rk_sync_threads() is not allowed in %s '%s' (its body "
                     "does not run on every thread of the block)",
                     entry_word(fn->kind), fn->name);
      fn->uses_barrier = true;
    }
    e->type = scalar(CG_TY_VOID);
  } else if (rk__cg_bi_is_atomic(b)) {
    check_atomic(ch, e);
  } else if (rk__cg_bi_is_math(b)) {
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      cg_expr_t *a = check_expr(ch, e->call.args[i], false);
      arith_operand(ch, a, CG_OP_NONE, false);
      e->call.args[i] = convert(ch, a, scalar(CG_TY_F32), name);
    }
    e->type = scalar(CG_TY_F32);
  } else if (rk__cg_bi_is_stencil(b)) {
    check_stencil_read(ch, e);
  }
}

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
      check_builtin(ch, e, top);
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
                 entry_word(callee->kind), name);
  if (e->call.nargs != callee->nparams)
    rk__cg_error(ch->ctx, e->loc, "'%s' expects %u argument%s, got %u", name,
                 (unsigned)callee->nparams, callee->nparams == 1 ? "" : "s",
                 (unsigned)e->call.nargs);
  for (uint32_t i = 0; i < e->call.nargs; ++i) {
    cg_expr_t *a = check_expr(ch, e->call.args[i], false);
    if (a->type->kind == CG_TY_PTR)
      rk__cg_error(ch->ctx, a->loc,
                   "helper functions take values only: pass an element "
                   "(%s[i]), not the buffer",
                   value_noun(a));
    char what[300];
    snprintf(what, sizeof what, "argument %u of '%s'", (unsigned)i + 1, name);
    e->call.args[i] = convert(ch, a, callee->params[i]->type, what);
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
  char t[256];
  if (e->member.arrow) {
    if (base->kind != CG_E_NAME || base->paren)
      rk__cg_error(ch->ctx, e->loc,
                   "'->' is only allowed on a buffer parameter (p->field "
                   "means p[0].field)");
    check_expr(ch, base, false);
    if (base->type->kind != CG_TY_PTR)
      rk__cg_error(ch->ctx, e->loc,
                   "'->' needs a buffer parameter, but '%s' is %s",
                   base->name.name, describe(base->type, t, sizeof t));
    if (base->type->elem->kind != CG_TY_STRUCT)
      rk__cg_error(ch->ctx, e->loc,
                   "'->' needs a buffer of structs, but '%s' holds %s",
                   base->name.name, describe(base->type->elem, t, sizeof t));
  } else {
    check_expr(ch, base, false);
    if (base->type->kind == CG_TY_PTR)
      rk__cg_error(ch->ctx, e->loc, "'%s' is a buffer: use %s->%s or %s[i].%s",
                   value_noun(base), value_noun(base), e->member.name,
                   value_noun(base), e->member.name);
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
                 e->member.name, describe(st, t, sizeof t));
  for (uint32_t i = 0; i < st->st->nfields; ++i)
    if (strcmp(st->st->fields[i].name, e->member.name) == 0) {
      e->member.field = &st->st->fields[i];
      e->type = e->member.field->type;
      return;
    }
  rk__cg_error(ch->ctx, e->loc, "%s has no field '%s'",
               describe(st, t, sizeof t), e->member.name);
}

static void check_binary(checker_t *ch, cg_expr_t *e) {
  cg_op_t op = e->binary.op;
  cg_expr_t *l = check_expr(ch, e->binary.lhs, false);
  cg_expr_t *r = check_expr(ch, e->binary.rhs, false);
  if (op == CG_OP_LAND || op == CG_OP_LOR) {
    e->binary.lhs = to_bool(ch, l, "'&&' and '||'");
    e->binary.rhs = to_bool(ch, r, "'&&' and '||'");
    e->binary.op_type = scalar(CG_TY_BOOL);
    e->type = scalar(CG_TY_BOOL);
    return;
  }
  bool integer_only = op == CG_OP_MOD || op == CG_OP_SHL || op == CG_OP_SHR ||
                      op == CG_OP_BAND || op == CG_OP_BOR || op == CG_OP_BXOR;
  arith_operand(ch, l, op, integer_only);
  arith_operand(ch, r, op, integer_only);
  if (op == CG_OP_SHL || op == CG_OP_SHR) {
    const cg_type_t *lt = scalar(promote_kind(l->type->kind));
    e->binary.lhs = convert(ch, l, lt, "a shift");
    e->binary.rhs =
        convert(ch, r, scalar(promote_kind(r->type->kind)), "a shift");
    e->binary.op_type = lt;
    e->type = lt;
    return;
  }
  const cg_type_t *ct = common_type(l->type, r->type);
  e->binary.lhs = convert(ch, l, ct, "an arithmetic operation");
  e->binary.rhs = convert(ch, r, ct, "an arithmetic operation");
  e->binary.op_type = ct;
  e->type = op >= CG_OP_LT && op <= CG_OP_NE ? scalar(CG_TY_BOOL) : ct;
}

static void check_assign(checker_t *ch, cg_expr_t *e) {
  cg_expr_t *t = check_expr(ch, e->assign.target, false);
  check_assignable(ch, t, "the assignment");
  cg_expr_t *v = check_expr(ch, e->assign.value, false);
  cg_op_t op = e->assign.op;
  if (op == CG_OP_NONE) {
    if (v->kind == CG_E_INIT_LIST)
      rk__cg_error(ch->ctx, v->loc,
                   "initializer lists are only allowed in declarations");
    e->assign.value = convert(ch, v, t->type, "the assignment");
    e->type = t->type;
    return;
  }
  bool integer_only = op == CG_OP_MOD || op == CG_OP_SHL || op == CG_OP_SHR ||
                      op == CG_OP_BAND || op == CG_OP_BOR || op == CG_OP_BXOR;
  arith_operand(ch, t, op, integer_only);
  arith_operand(ch, v, op, integer_only);
  const cg_type_t *ot;
  if (op == CG_OP_SHL || op == CG_OP_SHR) {
    ot = scalar(promote_kind(t->type->kind));
    e->assign.value =
        convert(ch, v, scalar(promote_kind(v->type->kind)), "a shift");
  } else {
    ot = common_type(t->type, v->type);
    e->assign.value = convert(ch, v, ot, "the assignment");
  }
  e->assign.op_type = ot;
  e->type = t->type;
}

static cg_expr_t *check_expr(checker_t *ch, cg_expr_t *e, bool top) {
  char a[256], b[256];
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
      cg_expr_t *x = check_expr(ch, e->unary.operand, false);
      if (e->unary.op == CG_OP_NOT) {
        e->unary.operand = to_bool(ch, x, "'!'");
        e->type = scalar(CG_TY_BOOL);
      } else {
        arith_operand(ch, x, e->unary.op, e->unary.op == CG_OP_BNOT);
        const cg_type_t *pt = scalar(promote_kind(x->type->kind));
        e->unary.operand = convert(ch, x, pt, "a unary operation");
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
      cg_expr_t *t = check_expr(ch, e->incdec.target, false);
      check_assignable(ch, t, e->incdec.inc ? "'++'" : "'--'");
      if (!rk__cg_is_arith(t->type) || t->type->kind == CG_TY_BOOL)
        rk__cg_error(ch->ctx, e->loc, "'%s' needs a number, not %s",
                     e->incdec.inc ? "++" : "--",
                     describe(t->type, a, sizeof a));
      e->type = t->type;
      break;
    }
    case CG_E_COND: {
      e->cond.cond = to_bool(ch, check_expr(ch, e->cond.cond, false), "'?:'");
      cg_expr_t *x = rvalue(ch, check_expr(ch, e->cond.then, false));
      cg_expr_t *y = rvalue(ch, check_expr(ch, e->cond.other, false));
      if (rk__cg_is_arith(x->type) && rk__cg_is_arith(y->type)) {
        const cg_type_t *ct =
            x->type->kind == CG_TY_BOOL && y->type->kind == CG_TY_BOOL
                ? scalar(CG_TY_BOOL)
                : common_type(x->type, y->type);
        e->cond.then = convert(ch, x, ct, "'?:'");
        e->cond.other = convert(ch, y, ct, "'?:'");
        e->type = ct;
      } else if (x->type == y->type && x->type->kind == CG_TY_STRUCT) {
        e->type = x->type;
      } else {
        rk__cg_error(
            ch->ctx, e->loc, "incompatible operands of '?:' (%s and %s)",
            describe(x->type, a, sizeof a), describe(y->type, b, sizeof b));
      }
      break;
    }
    case CG_E_CAST: {
      if (is_dynamic_shared_init(e))
        rk__cg_error(ch->ctx, e->loc,
                     "(T *)rk_dynamic_shared() can only initialize a pointer "
                     "variable declared on its own: `float *sh = (float "
                     "*)rk_dynamic_shared();`, then sh[i]");
      if (e->cast.spec.is_ptr)
        rk__cg_error(ch->ctx, e->cast.spec.ptr_loc,
                     "pointer casts are not supported by the kernel language "
                     "(except `(T *)rk_dynamic_shared()` initializing a "
                     "pointer variable)");
      const cg_type_t *to = resolve_base(ch, &e->cast.spec);
      cg_expr_t *x = check_expr(ch, e->cast.operand, false);
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
                     describe(to, a, sizeof a));
      arith_operand(ch, x, CG_OP_NONE, false);
      e->type = to;
      break;
    }
    case CG_E_INDEX: {
      cg_expr_t *base = check_expr(ch, e->index.base, false);
      if (base->type->kind != CG_TY_ARRAY && base->type->kind != CG_TY_PTR)
        rk__cg_error(ch->ctx, e->loc,
                     "only arrays and buffers can be indexed, not %s",
                     describe(base->type, a, sizeof a));
      cg_var_t *v = name_var(base);
      if (base->type->kind == CG_TY_PTR && ch->fn->kind == CG_FN_HANDLER && v &&
          v->kind == CG_VAR_PARAM)
        rk__cg_error(ch->ctx, e->loc,
                     "handler parameter '%s' points to one message: use "
                     "%s->field",
                     v->name, v->name);
      cg_expr_t *i = rvalue(ch, check_expr(ch, e->index.index, false));
      if (!rk__cg_is_integer(i->type))
        rk__cg_error(ch->ctx, i->loc,
                     "an array index must be an integer, "
                     "not %s",
                     describe(i->type, a, sizeof a));
      e->index.index =
          convert(ch, i, scalar(promote_kind(i->type->kind)), "an index");
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
  require_type(ch, e->type, e->loc, e);
  return e;
}

/* ---- Declarations ---------------------------------------------------------
 */

static cg_expr_t *check_init(checker_t *ch, cg_expr_t *init, const cg_type_t *t,
                             const char *name) {
  char a[256];
  if (init->kind != CG_E_INIT_LIST) {
    if (t->kind == CG_TY_ARRAY)
      rk__cg_error(ch->ctx, init->loc,
                   "array '%s' must be initialized with { ... }", name);
    return convert(ch, check_expr(ch, init, false), t, "the initializer");
  }
  init->type = t;
  if (t->kind == CG_TY_ARRAY) {
    if (init->init.n > t->count)
      rk__cg_error(ch->ctx, init->init.elems[t->count]->loc,
                   "too many initializers for '%s' (%u elements)", name,
                   (unsigned)t->count);
    for (uint32_t i = 0; i < init->init.n; ++i) {
      cg_expr_t *x = init->init.elems[i];
      if ((t->elem->kind == CG_TY_ARRAY || t->elem->kind == CG_TY_STRUCT) &&
          x->kind != CG_E_INIT_LIST)
        rk__cg_error(ch->ctx, x->loc,
                     "each element of '%s' needs its own { ... }", name);
      init->init.elems[i] = check_init(ch, x, t->elem, name);
    }
    return init;
  }
  if (t->kind == CG_TY_STRUCT) {
    const cg_struct_t *st = t->st;
    if (init->init.n > st->nfields)
      rk__cg_error(ch->ctx, init->init.elems[st->nfields]->loc,
                   "too many initializers for %s", describe(t, a, sizeof a));
    for (uint32_t i = 0; i < init->init.n; ++i) {
      cg_expr_t *x = init->init.elems[i];
      const cg_type_t *ft = st->fields[i].type;
      if ((ft->kind == CG_TY_ARRAY || ft->kind == CG_TY_STRUCT) &&
          x->kind != CG_E_INIT_LIST)
        rk__cg_error(ch->ctx, x->loc, "field '%s' needs its own { ... }",
                     st->fields[i].name);
      init->init.elems[i] = check_init(ch, x, ft, name);
    }
    return init;
  }
  rk__cg_error(ch->ctx, init->loc,
               "braces around the scalar initializer of '%s' are not "
               "supported",
               name);
}

/* `T *p = (T *)rk_dynamic_shared();`: p becomes a CG_VAR_DYNSHARED. */
static void check_dynamic_shared(checker_t *ch, cg_var_t *v,
                                 const cg_type_t *base, uint32_t ndecl) {
  char a[256], b[256];
  cg_func_t *fn = ch->fn;
  if (fn->kind != CG_FN_KERNEL)
    rk__cg_error(ch->ctx, v->init->loc,
                 "rk_dynamic_shared() is only available in RK_KERNEL "
                 "functions, not in %s '%s'",
                 entry_word(fn->kind), fn->name);
  if (ch->binding_dynshared)
    rk__cg_error(ch->ctx, v->loc,
                 "a kernel can hold rk_dynamic_shared() in one pointer only "
                 "(the first is '%s'); index that one",
                 ch->binding_dynshared->name);
  if (ndecl != 1)
    rk__cg_error(ch->ctx, v->loc,
                 "declare the rk_dynamic_shared() pointer '%s' on its own "
                 "(one variable in the declaration)",
                 v->name);
  if (v->ndims)
    rk__cg_error(ch->ctx, v->loc,
                 "'%s' must be a plain pointer: T *%s = (T "
                 "*)rk_dynamic_shared();",
                 v->name, v->name);
  if (!rk__cg_is_arith(base) || base->kind == CG_TY_BOOL)
    rk__cg_error(ch->ctx, v->spec.loc,
                 "dynamic shared memory holds int, unsigned, float (or 64-bit "
                 "integers and double where the target has them), not %s",
                 describe(base, a, sizeof a));
  cg_expr_t *cast = v->init;
  const cg_type_t *to = resolve_base(ch, &cast->cast.spec);
  if (to != base || cast->cast.spec.base_const != v->spec.base_const)
    rk__cg_error(
        ch->ctx, cast->loc,
        "the cast must give the variable's own type: (%s%s *), not "
        "(%s%s *)",
        v->spec.base_const ? "const " : "", describe(base, a, sizeof a),
        cast->cast.spec.base_const ? "const " : "", describe(to, b, sizeof b));
  v->kind = CG_VAR_DYNSHARED;
  v->type = rk__cg_type_ptr(ch->ctx, base, v->spec.base_const);
  v->is_const = v->spec.ptr_const;
  v->is_restrict = false;
  cast->type = v->type;
  cg_expr_t *call = cast->cast.operand;
  call->call.builtin = CG_BI_DYNAMIC_SHARED;
  call->type = v->type;
  fn->uses_dynamic_shared = true;
  fn->dyn_shared = v;
  ch->binding_dynshared = v;
  binding_t *bd = declare(ch, v->name, v->loc);
  bd->var = v;
}

static void check_local(checker_t *ch, cg_var_t *v, uint32_t ndecl) {
  char a[256];
  cg_func_t *fn = ch->fn;
  const cg_type_t *base = resolve_base(ch, &v->spec);
  if (v->spec.is_ptr && v->kind == CG_VAR_LOCAL &&
      is_dynamic_shared_init(v->init)) {
    check_dynamic_shared(ch, v, base, ndecl);
    return;
  }
  if (v->spec.is_ptr)
    rk__cg_error(ch->ctx, v->spec.ptr_loc,
                 "pointer-typed local variables are not supported: index "
                 "the buffer directly (x[k + i] instead of `const float "
                 "*row = x + k`)");
  if (base->kind == CG_TY_VOID)
    rk__cg_error(ch->ctx, v->loc, "variable '%s' cannot have type void",
                 v->name);
  if (base->kind == CG_TY_POS)
    rk__cg_error(ch->ctx, v->loc,
                 "rk_grid_pos_t can only be the first parameter of an "
                 "RK_STENCIL function");
  v->type = apply_dims(ch, base, v->dims, v->ndims);
  v->is_const = v->spec.base_const;
  if (v->kind == CG_VAR_SHARED) {
    if (fn->kind != CG_FN_KERNEL)
      rk__cg_error(ch->ctx, v->loc,
                   "RK_SHARED arrays are only allowed in RK_KERNEL "
                   "functions, not in %s '%s'",
                   entry_word(fn->kind), fn->name);
    if (ch->block_depth != 1)
      rk__cg_error(ch->ctx, v->loc,
                   "declare RK_SHARED arrays in the outermost block of the "
                   "kernel (OpenCL and Metal need them at kernel scope)");
    if (v->type->kind != CG_TY_ARRAY)
      rk__cg_error(ch->ctx, v->loc,
                   "RK_SHARED declares an array: RK_SHARED %s %s[N];",
                   describe(base, a, sizeof a), v->name);
    if (v->init)
      rk__cg_error(ch->ctx, v->init->loc,
                   "RK_SHARED arrays cannot be initialized; fill them in "
                   "the kernel, then call rk_sync_threads()");
    if (v->is_const)
      rk__cg_error(ch->ctx, v->loc, "RK_SHARED arrays cannot be const");
    fn->shared_bytes += v->type->size;
  }
  binding_t *b = declare(ch, v->name, v->loc);
  b->var = v;
  if (v->init) {
    v->init = check_init(ch, v->init, v->type, v->name);
  } else if (v->is_const) {
    rk__cg_error(ch->ctx, v->loc, "const variable '%s' needs an initializer",
                 v->name);
  }
}

/* ---- Statements -----------------------------------------------------------
 */

static void check_stmt(checker_t *ch, cg_stmt_t *s);

static void check_body_stmt(checker_t *ch, cg_stmt_t *s, const char *of) {
  if (s->kind == CG_S_DECL)
    rk__cg_error(ch->ctx, s->loc,
                 "a declaration cannot be the body of %s; use a block { ... }",
                 of);
  check_stmt(ch, s);
}

static void check_expr_stmt(checker_t *ch, cg_expr_t *e) {
  check_expr(ch, e, true);
  if (e->kind == CG_E_ASSIGN || e->kind == CG_E_INCDEC || e->kind == CG_E_CALL)
    return;
  if (e->kind == CG_E_CAST && e->type->kind == CG_TY_VOID) return;
  rk__cg_error(ch->ctx, e->loc,
               "this expression has no effect: a statement must be an "
               "assignment, '++'/'--', a call or a cast to void");
}

typedef struct case_entry {
  int64_t value;
  const cg_stmt_t *stmt;
} case_entry_t;

static int cmp_case(const void *a, const void *b) {
  const case_entry_t *x = a, *y = b;
  return x->value < y->value ? -1 : x->value > y->value;
}

static void check_switch(checker_t *ch, cg_stmt_t *s) {
  char a[256];
  cg_expr_t *v = rvalue(ch, check_expr(ch, s->switch_.value, false));
  if (!rk__cg_is_integer(v->type))
    rk__cg_error(ch->ctx, v->loc, "switch needs an integer value, not %s",
                 describe(v->type, a, sizeof a));
  const cg_type_t *st = scalar(promote_kind(v->type->kind));
  s->switch_.value = convert(ch, v, st, "a switch");
  cg_stmt_t *body = s->switch_.body;
  push_scope(ch);
  ch->block_depth++;
  ch->breakables++;
  uint32_t ncases = 0;
  const cg_stmt_t *dflt = NULL;
  for (uint32_t i = 0; i < body->block.n; ++i)
    ncases += body->block.items[i]->kind == CG_S_CASE;
  case_entry_t *cases =
      rk__cg_alloc(ch->ctx, (size_t)(ncases ? ncases : 1) * sizeof *cases);
  uint32_t k = 0;
  for (uint32_t i = 0; i < body->block.n; ++i) {
    cg_stmt_t *item = body->block.items[i];
    if (item->kind == CG_S_CASE || item->kind == CG_S_DEFAULT) {
      if (i + 1 == body->block.n)
        rk__cg_error(ch->ctx, item->loc,
                     "a case label must be followed by a statement (add "
                     "'break;')");
      if (item->kind == CG_S_DEFAULT) {
        if (dflt)
          rk__cg_error(ch->ctx, item->loc,
                       "a switch may have one default label (the first is "
                       "on line %u)",
                       (unsigned)dflt->loc.line);
        dflt = item;
        continue;
      }
      int64_t val =
          fold_int(ch, item->case_.value, "a case value", INT64_MIN, INT64_MAX);
      uint64_t bits = (uint64_t)val;
      item->case_.folded = wrap_int(st->kind, bits);
      item->case_.value = convert(ch, item->case_.value, st, "a case value");
      cases[k].value = item->case_.folded;
      cases[k].stmt = item;
      k++;
      continue;
    }
    if (item->kind == CG_S_DECL)
      rk__cg_error(ch->ctx, item->loc,
                   "declarations directly inside a switch body are not "
                   "supported (C++ targets refuse jumps past them); put the "
                   "case's statements in a block { ... }");
    check_stmt(ch, item);
  }
  qsort(cases, k, sizeof *cases, cmp_case);
  for (uint32_t i = 1; i < k; ++i)
    if (cases[i].value == cases[i - 1].value) {
      const cg_stmt_t *later =
          cases[i].stmt->loc.offset > cases[i - 1].stmt->loc.offset
              ? cases[i].stmt
              : cases[i - 1].stmt;
      rk__cg_error(ch->ctx, later->loc, "duplicate case value %lld",
                   (long long)cases[i].value);
    }
  ch->breakables--;
  ch->block_depth--;
  pop_scope(ch);
}

static void check_block_items(checker_t *ch, cg_stmt_t *s) {
  for (uint32_t i = 0; i < s->block.n; ++i) check_stmt(ch, s->block.items[i]);
}

static void check_stmt(checker_t *ch, cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BLOCK:
      push_scope(ch);
      ch->block_depth++;
      check_block_items(ch, s);
      ch->block_depth--;
      pop_scope(ch);
      return;
    case CG_S_DECL:
      for (uint32_t i = 0; i < s->decl.n; ++i)
        check_local(ch, s->decl.vars[i], s->decl.n);
      return;
    case CG_S_EXPR:
      check_expr_stmt(ch, s->expr);
      return;
    case CG_S_IF:
      s->if_.cond = to_bool(ch, check_expr(ch, s->if_.cond, false), "'if'");
      check_body_stmt(ch, s->if_.then, "'if'");
      if (s->if_.other) check_body_stmt(ch, s->if_.other, "'else'");
      return;
    case CG_S_WHILE:
    case CG_S_DO:
      s->loop.cond = to_bool(ch, check_expr(ch, s->loop.cond, false),
                             s->kind == CG_S_WHILE ? "'while'" : "'do'");
      ch->loops++;
      ch->breakables++;
      check_body_stmt(ch, s->loop.body,
                      s->kind == CG_S_WHILE ? "'while'" : "'do'");
      ch->loops--;
      ch->breakables--;
      return;
    case CG_S_FOR:
      push_scope(ch);
      ch->block_depth++;
      if (s->for_.init) check_stmt(ch, s->for_.init);
      if (s->for_.cond)
        s->for_.cond =
            to_bool(ch, check_expr(ch, s->for_.cond, false), "'for'");
      if (s->for_.step) {
        cg_expr_t *st = s->for_.step;
        check_expr(ch, st, true);
        if (st->kind != CG_E_ASSIGN && st->kind != CG_E_INCDEC &&
            st->kind != CG_E_CALL)
          rk__cg_error(ch->ctx, st->loc,
                       "the step of a for loop must be an assignment, "
                       "'++'/'--' or a call");
      }
      ch->loops++;
      ch->breakables++;
      check_body_stmt(ch, s->for_.body, "'for'");
      ch->loops--;
      ch->breakables--;
      ch->block_depth--;
      pop_scope(ch);
      return;
    case CG_S_SWITCH:
      check_switch(ch, s);
      return;
    case CG_S_CASE:
    case CG_S_DEFAULT:
      rk__cg_error(ch->ctx, s->loc,
                   "'%s' labels are only allowed directly inside a switch "
                   "body",
                   s->kind == CG_S_CASE ? "case" : "default");
    case CG_S_BREAK:
      if (!ch->breakables)
        rk__cg_error(ch->ctx, s->loc, "'break' outside a loop or switch");
      return;
    case CG_S_CONTINUE:
      if (!ch->loops)
        rk__cg_error(ch->ctx, s->loc, "'continue' outside a loop");
      return;
    case CG_S_RETURN: {
      cg_func_t *fn = ch->fn;
      if (fn->ret->kind == CG_TY_VOID) {
        if (s->expr)
          rk__cg_error(ch->ctx, s->expr->loc,
                       "'%s' returns void, so 'return' takes no value",
                       fn->name);
      } else {
        if (!s->expr)
          rk__cg_error(ch->ctx, s->loc, "'%s' must return a value", fn->name);
        s->expr = convert(ch, check_expr(ch, s->expr, false), fn->ret,
                          "the return value");
      }
      return;
    }
    case CG_S_EMPTY:
      return;
  }
}

/* ---- Functions ------------------------------------------------------------
 */

static void check_entry_param(checker_t *ch, cg_func_t *fn, cg_var_t *v) {
  char a[256];
  const cg_type_t *t = v->type;
  if (t->kind == CG_TY_POS)
    rk__cg_error(ch->ctx, v->spec.loc,
                 "rk_grid_pos_t can only be the first parameter of an "
                 "RK_STENCIL function");
  if (t->kind == CG_TY_BOOL)
    rk__cg_error(ch->ctx, v->spec.loc,
                 "bool parameters are not supported in entry points: bool's "
                 "size differs between targets (use int)");
  if (t->kind == CG_TY_STRUCT && t->size > CG_MAX_STRUCT_ARG)
    rk__cg_error(ch->ctx, v->spec.loc,
                 "parameter '%s' of %s '%s' is a %u-byte struct; structs "
                 "passed by value are limited to %d bytes (pass a pointer)",
                 v->name, entry_word(fn->kind), fn->name, (unsigned)t->size,
                 CG_MAX_STRUCT_ARG);
  if (t->kind == CG_TY_PTR) {
    const cg_type_t *e = t->elem;
    if (e->kind == CG_TY_VOID)
      rk__cg_error(ch->ctx, v->spec.loc,
                   "void buffers are not supported: give the element type "
                   "(float *x)");
    if (e->kind == CG_TY_BOOL)
      rk__cg_error(ch->ctx, v->spec.loc,
                   "bool buffers are not supported: bool's size differs "
                   "between targets (use int or uint32_t)");
    if (e->kind == CG_TY_POS)
      rk__cg_error(ch->ctx, v->spec.loc, "invalid buffer type %s",
                   describe(t, a, sizeof a));
  }
}

static void resolve_param(checker_t *ch, cg_func_t *fn, cg_var_t *v) {
  const cg_type_t *base = resolve_base(ch, &v->spec);
  if (base->kind == CG_TY_VOID && !v->spec.is_ptr)
    rk__cg_error(ch->ctx, v->loc, "parameter '%s' cannot have type void",
                 v->name);
  if (v->spec.is_ptr) {
    if (fn->kind == CG_FN_HELPER)
      rk__cg_error(ch->ctx, v->spec.ptr_loc,
                   "helper functions take and return values only: parameter "
                   "'%s' is a pointer (only entry points take buffers)",
                   v->name);
    v->type = rk__cg_type_ptr(ch->ctx, base, v->spec.base_const);
    v->is_const = v->spec.ptr_const;
    v->is_restrict = v->spec.is_restrict;
  } else {
    if (base->kind == CG_TY_POS &&
        !(fn->kind == CG_FN_STENCIL && v->index == 0))
      rk__cg_error(ch->ctx, v->spec.loc,
                   "rk_grid_pos_t can only be the first parameter of an "
                   "RK_STENCIL function");
    v->type = base;
    v->is_const = v->spec.base_const || base->kind == CG_TY_POS;
  }
}

static bool same_signature(const cg_func_t *a, const cg_func_t *b) {
  if (a->kind != b->kind || a->ret != b->ret || a->nparams != b->nparams)
    return false;
  for (uint32_t i = 0; i < a->nparams; ++i) {
    const cg_type_t *x = a->params[i]->type, *y = b->params[i]->type;
    if (x->kind != y->kind) return false;
    if (x->kind == CG_TY_PTR) {
      if (x->elem != y->elem || x->elem_const != y->elem_const) return false;
    } else if (x != y) {
      return false;
    }
  }
  return true;
}

static void check_stencil_header(checker_t *ch, cg_func_t *fn) {
  char what[64];
  uint64_t threads = 1;
  for (uint32_t i = 0; i < fn->dims; ++i) {
    snprintf(what, sizeof what, "the stencil's tile_%c", "xyz"[i]);
    fn->tile[i] = (uint32_t)fold_int(ch, fn->tile_exprs[i], what, 1, 1024);
    threads *= fn->tile[i];
  }
  if (fn->dims == 2) fn->tile[2] = 1;
  fn->halo = (uint32_t)fold_int(ch, fn->halo_expr, "the stencil's halo", 0, 16);
  if (threads > 1024)
    rk__cg_error(ch->ctx, fn->tile_exprs[0]->loc,
                 "the tile of stencil '%s' has %llu threads; a block may "
                 "have at most 1024",
                 fn->name, (unsigned long long)threads);
  uint32_t need = 1 + fn->dims;
  if (fn->nparams < need || fn->params[0]->type->kind != CG_TY_POS)
    rk__cg_error(ch->ctx, fn->loc,
                 "a stencil's parameters start with (rk_grid_pos_t p, int "
                 "nx, int ny%s): the position and the domain size",
                 fn->dims == 3 ? ", int nz" : "");
  for (uint32_t i = 1; i < need; ++i)
    if (fn->params[i]->type->kind != CG_TY_I32)
      rk__cg_error(ch->ctx, fn->params[i]->loc,
                   "parameter %u of stencil '%s' must be 'int %s', the "
                   "domain's size along %c",
                   (unsigned)i + 1, fn->name,
                   i == 1   ? "nx"
                   : i == 2 ? "ny"
                            : "nz",
                   "xyz"[i - 1]);
}

static void check_function(checker_t *ch, cg_func_t *fn) {
  char a[256];
  /* Return type. */
  const cg_type_t *ret = resolve_base(ch, &fn->ret_spec);
  if (fn->ret_spec.is_ptr)
    rk__cg_error(ch->ctx, fn->ret_spec.ptr_loc,
                 "functions cannot return pointers (helpers take and return "
                 "values only)");
  if (ret->kind == CG_TY_POS)
    rk__cg_error(ch->ctx, fn->ret_spec.loc,
                 "functions cannot return rk_grid_pos_t");
  if (fn->kind == CG_FN_HANDLER) {
    /* void: always succeeds; int: 0 or an error code for the caller. */
    if (ret->kind != CG_TY_VOID && ret->kind != CG_TY_I32)
      rk__cg_error(ch->ctx, fn->ret_spec.loc,
                   "an RK_HANDLER returns void or int (0 for success, "
                   "anything else an error code for the caller), not %s",
                   describe(ret, a, sizeof a));
  } else if (fn->kind != CG_FN_HELPER && ret->kind != CG_TY_VOID) {
    rk__cg_error(ch->ctx, fn->ret_spec.loc, "an %s function must return void",
                 fn_kind_name(fn->kind));
  }
  if (fn->kind != CG_FN_HELPER && fn->is_inline)
    rk__cg_error(ch->ctx, fn->loc, "entry points cannot be inline");
  fn->ret = ret;

  for (uint32_t i = 0; i < fn->nparams; ++i) {
    resolve_param(ch, fn, fn->params[i]);
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(fn->params[i]->name, fn->params[j]->name) == 0)
        rk__cg_error(ch->ctx, fn->params[i]->loc, "duplicate parameter '%s'",
                     fn->params[i]->name);
  }
  switch (fn->kind) {
    case CG_FN_KERNEL:
      for (uint32_t i = 0; i < fn->nparams; ++i)
        check_entry_param(ch, fn, fn->params[i]);
      break;
    case CG_FN_STENCIL:
      check_stencil_header(ch, fn);
      for (uint32_t i = 1; i < fn->nparams; ++i)
        check_entry_param(ch, fn, fn->params[i]);
      break;
    case CG_FN_HANDLER:
      if (fn->nparams < 2 || fn->nparams > 3)
        rk__cg_error(ch->ctx, fn->loc,
                     "an RK_HANDLER takes (const IN *in, OUT *out) or "
                     "(const IN *in, OUT *out, STATE *state)");
      for (uint32_t i = 0; i < fn->nparams; ++i) {
        cg_var_t *v = fn->params[i];
        if (v->type->kind != CG_TY_PTR || v->type->elem->kind != CG_TY_STRUCT)
          rk__cg_error(ch->ctx, v->spec.loc,
                       "handler parameter '%s' must be a pointer to a "
                       "struct (the message%s), not %s",
                       v->name, i == 2 ? " state" : "",
                       describe(v->type, a, sizeof a));
        if (i == 0 && !v->type->elem_const)
          rk__cg_error(ch->ctx, v->spec.loc,
                       "the input message must be read-only: const %s *%s",
                       describe(v->type->elem, a, sizeof a), v->name);
        if (i > 0 && v->type->elem_const)
          rk__cg_error(ch->ctx, v->spec.loc,
                       "handler parameter '%s' is written by the handler; "
                       "it cannot be const",
                       v->name);
      }
      break;
    default:
      for (uint32_t i = 0; i < fn->nparams; ++i)
        if (fn->params[i]->type->kind == CG_TY_POS)
          rk__cg_error(ch->ctx, fn->params[i]->spec.loc,
                       "rk_grid_pos_t can only be the first parameter of an "
                       "RK_STENCIL function");
      break;
  }

  /* The name: a new function, or a prototype's definition. */
  binding_t *b = lookup(ch, fn->name);
  if (b && b->fn) {
    cg_func_t *first = b->fn;
    if (!same_signature(first, fn))
      rk__cg_error(ch->ctx, fn->loc,
                   "'%s' does not match its earlier declaration on line %u",
                   fn->name, (unsigned)first->loc.line);
    if (fn->body && first->def)
      rk__cg_error(ch->ctx, fn->loc, "'%s' is already defined on line %u",
                   fn->name, (unsigned)first->def->loc.line);
    if (fn->body) first->def = fn;
    fn->def = fn->body ? fn : NULL;
  } else {
    if (fn->kind != CG_FN_HELPER) {
      const char *target = rk__cg_reserved_by(fn->name);
      if (target)
        rk__cg_error(ch->ctx, fn->loc,
                     "'%s' cannot name an entry point: target %s reserves "
                     "it",
                     fn->name, target);
      if (!fn->body)
        rk__cg_error(ch->ctx, fn->loc,
                     "entry points cannot be declared without a body");
    }
    b = declare(ch, fn->name, fn->loc);
    b->fn = fn;
    fn->def = fn->body ? fn : NULL;
  }
  if (!fn->body) return;

  ch->fn = fn;
  ch->binding_dynshared = NULL;
  push_scope(ch);
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    binding_t *pb = declare(ch, fn->params[i]->name, fn->params[i]->loc);
    pb->var = fn->params[i];
  }
  ch->block_depth = 1;
  ch->loops = ch->breakables = 0;
  check_block_items(ch, fn->body);
  pop_scope(ch);
  ch->fn = NULL;

  if (fn->kind == CG_FN_STENCIL) {
    uint64_t cells = 1;
    for (uint32_t d = 0; d < fn->dims; ++d) cells *= fn->tile[d] + 2 * fn->halo;
    for (uint32_t i = 0; i < fn->tiled.n; ++i)
      fn->shared_bytes +=
          cells * ((const cg_var_t *)fn->tiled.v[i])->type->elem->size;
  }
}

/* ---- Call graph -----------------------------------------------------------
 */

/* Depth-first over definitions, iteratively (a chain of thousands of helpers
 * must not overflow the stack): refuses cycles and propagates uses_index and
 * uses_barrier from callees to callers in post-order. */
static void analyze_calls(checker_t *ch) {
  cg_unit_t *u = ch->unit;
  typedef struct frame {
    cg_func_t *fn;
    uint32_t next;
  } frame_t;
  uint32_t nfuncs = 0;
  for (uint32_t i = 0; i < u->nitems; ++i)
    nfuncs += u->items[i].kind == CG_ITEM_FUNC;
  frame_t *stack =
      rk__cg_alloc(ch->ctx, (size_t)(nfuncs ? nfuncs : 1) * sizeof *stack);
  for (uint32_t i = 0; i < u->nitems; ++i) {
    if (u->items[i].kind != CG_ITEM_FUNC) continue;
    cg_func_t *root = u->items[i].fn;
    if (!root->body || root->visit) continue;
    uint32_t sp = 0;
    stack[sp].fn = root;
    stack[sp].next = 0;
    sp++;
    root->visit = 1;
    while (sp) {
      frame_t *f = &stack[sp - 1];
      if (f->next < f->fn->calls.n) {
        cg_call_edge_t *edge = f->fn->calls.v[f->next++];
        cg_func_t *callee = edge->callee->def;
        if (callee->visit == 1) {
          char chain[512];
          size_t n = 0;
          uint32_t from = 0;
          while (stack[from].fn != callee) from++;
          for (uint32_t k = from; k < sp && n < sizeof chain - 80; ++k)
            n += (size_t)snprintf(chain + n, sizeof chain - n, "%s -> ",
                                  stack[k].fn->name);
          snprintf(chain + n, sizeof chain - n, "%s", callee->name);
          rk__cg_error(ch->ctx, edge->loc,
                       "recursion is not supported (%s): GPU targets have "
                       "no call stack",
                       chain);
        }
        if (callee->visit == 0) {
          callee->visit = 1;
          stack[sp].fn = callee;
          stack[sp].next = 0;
          sp++;
        }
        continue;
      }
      /* Post-order: every callee is done. */
      cg_func_t *fn = f->fn;
      for (uint32_t k = 0; k < fn->calls.n; ++k) {
        cg_call_edge_t *edge = fn->calls.v[k];
        cg_func_t *callee = edge->callee->def;
        fn->uses_index |= callee->uses_index;
        if (callee->uses_barrier &&
            (fn->kind == CG_FN_STENCIL || fn->kind == CG_FN_HANDLER))
          rk__cg_error(ch->ctx, edge->loc,
                       "'%s' calls rk_sync_threads(), which is not allowed "
                       "in %s '%s' (its body does not run on every thread of "
                       "the block)",
                       callee->name, entry_word(fn->kind), fn->name);
        fn->uses_barrier |= callee->uses_barrier;
      }
      fn->visit = 2;
      sp--;
    }
  }
}

void rk__cg_check(cg_ctx_t *ctx, cg_unit_t *unit) {
  checker_t ch;
  memset(&ch, 0, sizeof ch);
  ch.ctx = ctx;
  ch.unit = unit;
  for (uint32_t i = 0; i < unit->nitems; ++i)
    if (unit->items[i].kind == CG_ITEM_FUNC &&
        !rk__cg_map_get(&ch.funcs, unit->items[i].fn->name))
      rk__cg_map_put(ctx, &ch.funcs, unit->items[i].fn->name,
                     unit->items[i].fn);

  for (uint32_t i = 0; i < unit->nitems; ++i) {
    cg_item_t *it = &unit->items[i];
    switch (it->kind) {
      case CG_ITEM_STRUCT:
        check_struct(&ch, it->st);
        break;
      case CG_ITEM_MACRO: {
        cg_var_t *v = it->var;
        /* A macro body is checked where it is defined (names in it must
         * already exist) in a pseudo-function context: no calls. */
        cg_func_t scratch;
        memset(&scratch, 0, sizeof scratch);
        scratch.name = v->name;
        ch.fn = &scratch;
        check_expr(&ch, v->init, false);
        ch.fn = NULL;
        if (scratch.calls.n || scratch.uses_index ||
            !rk__cg_is_arith(v->init->type) ||
            !rk__cg_fold(ctx, v->init, false, NULL, NULL))
          rk__cg_error(ctx, v->init->loc,
                       "the value of #define %s must be a constant "
                       "expression",
                       v->name);
        v->type = v->init->type;
        v->is_const = true;
        binding_t *b = declare(&ch, v->name, v->loc);
        b->var = v;
        break;
      }
      case CG_ITEM_CONST: {
        cg_var_t *v = it->var;
        const cg_type_t *t = resolve_base(&ch, &v->spec);
        if (!rk__cg_is_arith(t))
          rk__cg_error(ctx, v->spec.loc,
                       "file-scope constants must be scalars (bool, "
                       "integers, float, double)");
        v->type = t;
        v->is_const = true;
        cg_func_t scratch;
        memset(&scratch, 0, sizeof scratch);
        scratch.name = v->name;
        ch.fn = &scratch;
        v->init = convert(&ch, check_expr(&ch, v->init, false), t,
                          "the constant's value");
        ch.fn = NULL;
        if (scratch.calls.n || scratch.uses_index ||
            !rk__cg_fold(ctx, v->init, false, NULL, NULL))
          rk__cg_error(ctx, v->init->loc,
                       "the value of constant '%s' must be a constant "
                       "expression",
                       v->name);
        binding_t *b = declare(&ch, v->name, v->loc);
        b->var = v;
        break;
      }
      case CG_ITEM_FUNC:
        check_function(&ch, it->fn);
        if (it->fn->kind == CG_FN_STENCIL) unit->has_stencil = true;
        break;
    }
  }
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    cg_item_t *it = &unit->items[i];
    if (it->kind == CG_ITEM_FUNC && !it->fn->body) {
      binding_t *b = lookup(&ch, it->fn->name);
      if (!b || !b->fn || !b->fn->def)
        rk__cg_error(ctx, it->fn->loc,
                     "function '%s' is declared but never defined",
                     it->fn->name);
    }
  }
  analyze_calls(&ch);
}
