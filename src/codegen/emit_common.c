/* Pieces shared by the printers (emit_c_family.c, emit_wgsl.c): tree walks
 * that do not print, and the parts of the output that differ between
 * targets only in a spelling the caller passes in. */
#include <string.h>

#include "codegen/emit.h"

bool rk__cg_entry_selected(const cg_func_t *fn, const char *entry) {
  if (fn->kind == CG_FN_HELPER || !fn->body) return false;
  if (!entry || strcmp(fn->name, entry) == 0) return true;
  size_t n = sizeof CG_BATCH_PREFIX - 1;
  return fn->kind == CG_FN_HANDLER && strncmp(entry, CG_BATCH_PREFIX, n) == 0 &&
         strcmp(entry + n, fn->name) == 0;
}

bool rk__cg_handler_kernel_selected(const cg_func_t *fn, const char *entry) {
  return !entry || strcmp(fn->name, entry) == 0;
}

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

static void pos_field(rk__strbuf_t *out, rk_target_t target, const char *pos,
                      const char *field) {
  rk__cg_put_name(out, target, pos);
  rk__strbuf_puts(out, field);
}

void rk__cg_emit_stencil_interior(rk__strbuf_t *out, rk_target_t target,
                                  const char *pos, uint32_t dims, uint32_t halo,
                                  const char *ret) {
  static const char *const kLow[] = {".x < ", ".y < ", ".z < "};
  static const char *const kHigh[] = {".x >= ", ".y >= ", ".z >= "};
  static const char *const kN[] = {".nx - ", ".ny - ", ".nz - "};
  rk__strbuf_puts(out, "  if (");
  for (uint32_t a = 0; a < dims; ++a) {
    if (a) rk__strbuf_puts(out, " || ");
    pos_field(out, target, pos, kLow[a]);
    rk__strbuf_printf(out, "%u || ", (unsigned)halo);
    pos_field(out, target, pos, kHigh[a]);
    pos_field(out, target, pos, kN[a]);
    rk__strbuf_printf(out, "%u", (unsigned)halo);
  }
  rk__strbuf_puts(out, ret);
  rk__strbuf_puts(out, "  ");
  pos_field(out, target, pos, ".idx = ");
  if (dims == 3) {
    rk__strbuf_puts(out, "(");
    pos_field(out, target, pos, ".z * ");
    pos_field(out, target, pos, ".ny + ");
    pos_field(out, target, pos, ".y) * ");
  } else {
    pos_field(out, target, pos, ".y * ");
  }
  pos_field(out, target, pos, ".nx + ");
  pos_field(out, target, pos, ".x;\n");
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

void rk__cg_emit_int_literal(rk__strbuf_t *out, uint64_t v, cg_type_kind_t k,
                             bool hex, const char *i64_suffix,
                             const char *u64_suffix) {
  rk__strbuf_printf(out, hex ? "0x%llx" : "%llu", (unsigned long long)v);
  if (k == CG_TY_U32)
    rk__strbuf_puts(out, "u");
  else if (k == CG_TY_I64)
    rk__strbuf_puts(out, i64_suffix);
  else if (k == CG_TY_U64)
    rk__strbuf_puts(out, u64_suffix);
}

void rk__cg_emit_literal(rk__strbuf_t *out, const cg_expr_t *e,
                         const char *i64_suffix, const char *u64_suffix) {
  switch (e->kind) {
    case CG_E_INT:
      rk__cg_emit_int_literal(out, e->lit_int.value, e->type->kind,
                              e->lit_int.hex, i64_suffix, u64_suffix);
      return;
    case CG_E_FLOAT:
      rk__strbuf_puts(out, e->lit_float.text);
      if (e->type->kind == CG_TY_F32) rk__strbuf_puts(out, "f");
      return;
    case CG_E_BOOL:
      rk__strbuf_puts(out, e->lit_bool ? "true" : "false");
      return;
    default:
      return;
  }
}
