/* Types, operators and built-ins of the typed tree (ast.h). */
#include "codegen/ast.h"

#include <stdio.h>
#include <string.h>

static const cg_type_t kScalars[CG_TY_COUNT_] = {
    [CG_TY_VOID] = {CG_TY_VOID, 0, 1, NULL, 0, false, NULL},
    [CG_TY_BOOL] = {CG_TY_BOOL, 1, 1, NULL, 0, false, NULL},
    [CG_TY_I32] = {CG_TY_I32, 4, 4, NULL, 0, false, NULL},
    [CG_TY_U32] = {CG_TY_U32, 4, 4, NULL, 0, false, NULL},
    [CG_TY_I64] = {CG_TY_I64, 8, 8, NULL, 0, false, NULL},
    [CG_TY_U64] = {CG_TY_U64, 8, 8, NULL, 0, false, NULL},
    [CG_TY_F32] = {CG_TY_F32, 4, 4, NULL, 0, false, NULL},
    [CG_TY_F64] = {CG_TY_F64, 8, 8, NULL, 0, false, NULL},
    /* x, y, z, idx, nx, ny, nz: seven ints. */
    [CG_TY_POS] = {CG_TY_POS, 28, 4, NULL, 0, false, NULL},
};

const cg_type_t *rk__cg_type_scalar(cg_type_kind_t kind) {
  return &kScalars[kind];
}

const cg_type_t *rk__cg_type_array(cg_ctx_t *ctx, const cg_type_t *elem,
                                   uint32_t count) {
  cg_type_t *t = rk__cg_alloc(ctx, sizeof *t);
  t->kind = CG_TY_ARRAY;
  t->elem = elem;
  t->count = count;
  uint64_t size = (uint64_t)elem->size * count;
  t->size = size > CG_MAX_OBJECT ? CG_MAX_OBJECT + 1u : (uint32_t)size;
  t->align = elem->align;
  return t;
}

const cg_type_t *rk__cg_type_ptr(cg_ctx_t *ctx, const cg_type_t *elem,
                                 bool elem_const) {
  cg_type_t *t = rk__cg_alloc(ctx, sizeof *t);
  t->kind = CG_TY_PTR;
  t->elem = elem;
  t->elem_const = elem_const;
  t->size = 8; /* an rk_devptr_t launch argument */
  t->align = 8;
  return t;
}

const cg_type_t *rk__cg_type_base(const cg_type_t *t) {
  while (t->kind == CG_TY_ARRAY) t = t->elem;
  return t;
}

static const char *const kScalarNames[CG_TY_COUNT_] = {
    [CG_TY_VOID] = "void",         [CG_TY_BOOL] = "bool",
    [CG_TY_I32] = "int",           [CG_TY_U32] = "unsigned int",
    [CG_TY_I64] = "long long",     [CG_TY_U64] = "unsigned long long",
    [CG_TY_F32] = "float",         [CG_TY_F64] = "double",
    [CG_TY_POS] = "rk_grid_pos_t",
};

void rk__cg_struct_c_name(const cg_struct_t *st, char *buf, size_t cap) {
  if (st->typedef_name)
    snprintf(buf, cap, "%s", st->typedef_name);
  else
    snprintf(buf, cap, "struct %s", st->tag ? st->tag : "?");
}

void rk__cg_type_describe(const cg_type_t *t, char *buf, size_t cap) {
  char inner[CG_TYPE_TEXT_MAX];
  switch (t->kind) {
    case CG_TY_STRUCT:
      rk__cg_struct_c_name(t->st, buf, cap);
      return;
    case CG_TY_ARRAY: {
      rk__cg_type_describe(rk__cg_type_base(t), inner, sizeof inner);
      size_t n = (size_t)snprintf(buf, cap, "%s", inner);
      for (const cg_type_t *a = t; a->kind == CG_TY_ARRAY && n < cap;
           a = a->elem)
        n += (size_t)snprintf(buf + n, cap - n, "[%u]", a->count);
      return;
    }
    case CG_TY_PTR:
      rk__cg_type_describe(t->elem, inner, sizeof inner);
      snprintf(buf, cap, "%s%s *", t->elem_const ? "const " : "", inner);
      return;
    default:
      snprintf(buf, cap, "%s", kScalarNames[t->kind]);
      return;
  }
}

/* ---- Operators ----------------------------------------------------------- */

static const struct {
  const char *text;
  int prec;
} kOps[CG_OP_COUNT_] = {
    [CG_OP_NONE] = {"=", 0}, [CG_OP_ADD] = {"+", 9},  [CG_OP_SUB] = {"-", 9},
    [CG_OP_MUL] = {"*", 10}, [CG_OP_DIV] = {"/", 10}, [CG_OP_MOD] = {"%", 10},
    [CG_OP_SHL] = {"<<", 8}, [CG_OP_SHR] = {">>", 8}, [CG_OP_BAND] = {"&", 5},
    [CG_OP_BOR] = {"|", 3},  [CG_OP_BXOR] = {"^", 4}, [CG_OP_LT] = {"<", 7},
    [CG_OP_GT] = {">", 7},   [CG_OP_LE] = {"<=", 7},  [CG_OP_GE] = {">=", 7},
    [CG_OP_EQ] = {"==", 6},  [CG_OP_NE] = {"!=", 6},  [CG_OP_LAND] = {"&&", 2},
    [CG_OP_LOR] = {"||", 1}, [CG_OP_NEG] = {"-", 0},  [CG_OP_PLUS] = {"+", 0},
    [CG_OP_NOT] = {"!", 0},  [CG_OP_BNOT] = {"~", 0},
};

const char *rk__cg_op_spelling(cg_op_t op) {
  return op < CG_OP_COUNT_ ? kOps[op].text : "?";
}

int rk__cg_op_precedence(cg_op_t op) {
  return op < CG_OP_COUNT_ ? kOps[op].prec : 0;
}

/* ---- Built-ins ----------------------------------------------------------- */

static const struct {
  const char *name;
  int nargs;
} kBuiltins[CG_BI_COUNT_] = {[CG_BI_NONE_] = {"", 0},
#define CG_BI_ROW_(e, text, n) [CG_BI_##e] = {text, n},
                             CG_BUILTINS(CG_BI_ROW_)
#undef CG_BI_ROW_
};

cg_builtin_t rk__cg_builtin_lookup(const char *name) {
  /* Every built-in starts with "rk_" or ends in 'f'; a cheap filter keeps
   * the linear scan off ordinary identifiers. */
  size_t n = strlen(name);
  if (strncmp(name, "rk_", 3) != 0 && (n == 0 || name[n - 1] != 'f'))
    return CG_BI_NONE_;
  for (int b = 1; b < CG_BI_COUNT_; ++b)
    if (strcmp(kBuiltins[b].name, name) == 0) return (cg_builtin_t)b;
  return CG_BI_NONE_;
}

const char *rk__cg_builtin_name(cg_builtin_t b) {
  return b < CG_BI_COUNT_ ? kBuiltins[b].name : "?";
}

int rk__cg_builtin_nargs(cg_builtin_t b) {
  return b < CG_BI_COUNT_ ? kBuiltins[b].nargs : 0;
}

/* ---- Walks --------------------------------------------------------------- */

bool rk__cg_expr_any_child(const cg_expr_t *e, cg_expr_pred_t f, void *arg) {
  switch (e->kind) {
    case CG_E_UNARY:
      return f(e->unary.operand, arg);
    case CG_E_BINARY:
      return f(e->binary.lhs, arg) || f(e->binary.rhs, arg);
    case CG_E_ASSIGN:
      return f(e->assign.target, arg) || f(e->assign.value, arg);
    case CG_E_INCDEC:
      return f(e->incdec.target, arg);
    case CG_E_COND:
      return f(e->cond.cond, arg) || f(e->cond.then, arg) ||
             f(e->cond.other, arg);
    case CG_E_CAST:
      return f(e->cast.operand, arg);
    case CG_E_CONVERT:
      return f(e->convert.operand, arg);
    case CG_E_INDEX:
      return f(e->index.base, arg) || f(e->index.index, arg);
    case CG_E_MEMBER:
      return f(e->member.base, arg);
    case CG_E_ADDR:
      return f(e->addr.operand, arg);
    case CG_E_CALL:
      for (uint32_t i = 0; i < e->call.nargs; ++i)
        if (f(e->call.args[i], arg)) return true;
      return false;
    case CG_E_INIT_LIST:
      for (uint32_t i = 0; i < e->init.n; ++i)
        if (f(e->init.elems[i], arg)) return true;
      return false;
    default:
      return false;
  }
}

bool rk__cg_stmt_any_expr(const cg_stmt_t *s, cg_expr_pred_t f, void *arg) {
  if (!s) return false;
  switch (s->kind) {
    case CG_S_BLOCK:
      for (uint32_t i = 0; i < s->block.n; ++i)
        if (rk__cg_stmt_any_expr(s->block.items[i], f, arg)) return true;
      return false;
    case CG_S_DECL:
      for (uint32_t i = 0; i < s->decl.n; ++i)
        if (s->decl.vars[i]->init && f(s->decl.vars[i]->init, arg)) return true;
      return false;
    case CG_S_EXPR:
    case CG_S_RETURN:
      return s->expr && f(s->expr, arg);
    case CG_S_IF:
      return f(s->if_.cond, arg) || rk__cg_stmt_any_expr(s->if_.then, f, arg) ||
             rk__cg_stmt_any_expr(s->if_.other, f, arg);
    case CG_S_WHILE:
    case CG_S_DO:
      return f(s->loop.cond, arg) || rk__cg_stmt_any_expr(s->loop.body, f, arg);
    case CG_S_FOR:
      return rk__cg_stmt_any_expr(s->for_.init, f, arg) ||
             (s->for_.cond && f(s->for_.cond, arg)) ||
             (s->for_.step && f(s->for_.step, arg)) ||
             rk__cg_stmt_any_expr(s->for_.body, f, arg);
    case CG_S_SWITCH:
      return f(s->switch_.value, arg) ||
             rk__cg_stmt_any_expr(s->switch_.body, f, arg);
    default:
      return false;
  }
}

const cg_expr_t *rk__cg_skip_converts(const cg_expr_t *e) {
  while (e->kind == CG_E_CONVERT) e = e->convert.operand;
  return e;
}

const cg_var_t *rk__cg_index_root(const cg_expr_t *e) {
  e = rk__cg_skip_converts(e);
  while (e->kind == CG_E_INDEX) e = rk__cg_skip_converts(e->index.base);
  return e->kind == CG_E_NAME ? e->name.var : NULL;
}
