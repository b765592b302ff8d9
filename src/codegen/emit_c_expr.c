/* The C-family printer: names, types and expressions (emit_c_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "codegen/emit_c_internal.h"

void rk__cg_c_printf(printer_t *p, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    p->out->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    rk__strbuf_append(p->out, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    p->out->failed = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  rk__strbuf_append(p->out, big, (size_t)n);
  free(big);
}

/* A user name as the target must spell it. */
void rk__cg_c_name(printer_t *p, const char *name) {
  rk__cg_put_name(p->out, p->t->target, name);
}

void rk__cg_c_struct_name(printer_t *p, const cg_struct_t *st) {
  if (st->typedef_name) {
    rk__cg_c_name(p, st->typedef_name);
  } else {
    puts_(p, "struct ");
    rk__cg_c_name(p, st->tag);
  }
}

/* The base type of t (arrays stripped): "float", "msg_t". */
void rk__cg_c_type_name(printer_t *p, const cg_type_t *t) {
  t = rk__cg_type_base(t);
  if (t->kind == CG_TY_STRUCT)
    rk__cg_c_struct_name(p, t->st);
  else if (t->kind == CG_TY_POS)
    puts_(p, "rk_stencil_pos_t");
  else
    puts_(p, p->t->types[t->kind]);
}

/* Whether lvalue e is in MSL's thread memory: a local, a helper's
 * parameter or an entry's by-value parameter that the kernel copies to a
 * local (it assigns to it), or a field or element of one. */
static bool in_thread_memory(const printer_t *p, const cg_expr_t *e) {
  for (;;) {
    if (e->kind == CG_E_MEMBER && !e->member.arrow)
      e = e->member.base;
    else if (e->kind == CG_E_INDEX)
      e = e->index.base;
    else
      break;
  }
  if (e->kind != CG_E_NAME || !e->name.var) return false;
  const cg_var_t *v = e->name.var;
  if (v->kind == CG_VAR_LOCAL) return true;
  return v->kind == CG_VAR_PARAM && v->type->kind != CG_TY_PTR && p->fn &&
         (p->fn->kind == CG_FN_HELPER || v->modified);
}

/* An operand of ?: (see struct_cond_copies). Calls and nested ?: are
 * values already, and thread memory needs no copy. */
static void cond_operand(printer_t *p, const cg_expr_t *e, int min_prec) {
  if (p->t->struct_cond_copies && e->type && e->type->kind == CG_TY_STRUCT &&
      e->kind != CG_E_CALL && e->kind != CG_E_COND && !in_thread_memory(p, e)) {
    puts_(p, "(");
    rk__cg_c_type_name(p, e->type);
    puts_(p, ")");
    min_prec = PREC_UNARY;
  }
  rk__cg_c_expr(p, e, min_prec);
}

/* ---- Expressions ----------------------------------------------------------
 */

static void int_literal(printer_t *p, uint64_t v, cg_type_kind_t k, bool hex) {
  rk__cg_emit_int_literal(p->out, v, k, hex, p->t->i64_suffix,
                          p->t->u64_suffix);
}

/* An implicit conversion spelled out: `(float)x`, or for a small integer
 * literal the literal in the new type (`1u`, `2.0f`). */
static void explicit_convert(printer_t *p, const cg_expr_t *e, int min_prec) {
  const cg_expr_t *x = e->convert.operand;
  cg_type_kind_t to = e->type->kind;
  if (x->kind == CG_E_INT && !x->paren && x->lit_int.value < CG_F32_EXACT_INT) {
    uint64_t v = x->lit_int.value;
    if (to == CG_TY_U32 || to == CG_TY_I32 || to == CG_TY_I64 ||
        to == CG_TY_U64) {
      int_literal(p, v, to, x->lit_int.hex);
      return;
    }
    if (to == CG_TY_F32 || to == CG_TY_F64) {
      rk__cg_c_printf(p, "%llu.0%s", (unsigned long long)v,
                      to == CG_TY_F32 ? "f" : "");
      return;
    }
  }
  if (min_prec > PREC_UNARY) puts_(p, "(");
  puts_(p, "(");
  rk__cg_c_type_name(p, e->type);
  puts_(p, ")");
  rk__cg_c_expr(p, x, PREC_UNARY);
  if (min_prec > PREC_UNARY) puts_(p, ")");
}

/* An argument of a built-in: conversions explicit where overloads would
 * otherwise pick another type. */
static void builtin_arg(printer_t *p, const cg_expr_t *e) {
  if (p->t->explicit_builtin_casts && e->kind == CG_E_CONVERT)
    explicit_convert(p, e, PREC_ASSIGN);
  else
    rk__cg_c_expr(p, e, PREC_ASSIGN);
}

void rk__cg_c_index_builtin(printer_t *p, cg_index_kind_t kind, int axis,
                            int min_prec) {
  bool wrap = p->t->index_is_cast && min_prec > PREC_UNARY;
  if (wrap) puts_(p, "(");
  for (const char *s = p->t->index_fmt[kind]; *s; ++s) {
    char c = *s == '$' ? "xyz"[axis] : *s == '#' ? (char)('0' + axis) : *s;
    rk__strbuf_append(p->out, &c, 1);
  }
  if (wrap) puts_(p, ")");
}

static void atomic_call(printer_t *p, const cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  cg_atomic_op_t op = rk__cg_bi_atomic_op(b);
  const cg_expr_t *addr = e->call.args[0];
  const cg_var_t *root = rk__cg_index_root(addr->addr.operand);
  const char *space =
      root && (root->kind == CG_VAR_SHARED || root->kind == CG_VAR_DYNSHARED)
          ? "threadgroup"
          : "device";
  if (p->t->atomic_style == ATOMIC_C) {
    puts_(p, rk__cg_builtin_name(b));
  } else {
    puts_(p, p->t->atomics[op]);
    /* Metal's CAS helpers are per address space (rk_atomic_cas_device). */
    if (p->t->atomic_style == ATOMIC_MSL && op == CG_ATOMIC_CAS)
      rk__cg_c_printf(p, "_%s", space);
  }
  puts_(p, "(");
  if (p->t->atomic_style == ATOMIC_MSL)
    rk__cg_c_printf(
        p, "(%s metal::%s *)", space,
        rk__cg_bi_atomic_unsigned(b) ? "atomic_uint" : "atomic_int");
  puts_(p, "&");
  rk__cg_c_expr(p, addr->addr.operand, PREC_UNARY);
  for (uint32_t i = 1; i < e->call.nargs; ++i) {
    puts_(p, ", ");
    builtin_arg(p, e->call.args[i]);
  }
  if (p->t->atomic_style == ATOMIC_MSL && op != CG_ATOMIC_CAS)
    puts_(p, ", metal::memory_order_relaxed");
  puts_(p, ")");
}

/* A neighbour read: from the tile in block-shared memory on GPU targets,
 * from the buffer in C. */
static void stencil_read(printer_t *p, const cg_expr_t *e) {
  const cg_stencil_plan_t *s = p->fp->stencil;
  const cg_var_t *buf = e->call.buffer;
  const char *pos = s->pos->name;
  int d[CG_AXES] = {e->call.dx, e->call.dy, e->call.dz};
  if (s->staged) {
    puts_(p, CG_TILE_PREFIX);
    rk__cg_c_name(p, buf->name);
    static const char *const kLocal[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (int axis = (int)s->dims - 1; axis >= 0; --axis) {
      rk__cg_c_printf(p, "[%s", kLocal[axis]);
      if (d[axis] > 0) rk__cg_c_printf(p, " + %d", d[axis]);
      if (d[axis] < 0) rk__cg_c_printf(p, " - %d", -d[axis]);
      puts_(p, "]");
    }
    return;
  }
  rk__cg_c_name(p, buf->name);
  puts_(p, "[");
  rk__cg_c_name(p, pos);
  puts_(p, ".idx");
  /* idx + dz*nx*ny + dy*nx + dx */
  static const char *const kStride[] = {NULL, ".nx", ".nx * "};
  for (int axis = CG_AXES - 1; axis >= 0; --axis) {
    int v = d[axis];
    if (!v) continue;
    puts_(p, v < 0 ? " - " : " + ");
    int m = v < 0 ? -v : v;
    if (axis == 0) {
      rk__cg_c_printf(p, "%d", m);
      continue;
    }
    if (m != 1) rk__cg_c_printf(p, "%d * ", m);
    rk__cg_c_name(p, pos);
    if (axis == 1) {
      puts_(p, kStride[1]);
    } else {
      puts_(p, kStride[2]);
      rk__cg_c_name(p, pos);
      puts_(p, ".ny");
    }
  }
  puts_(p, "]");
}

static void call(printer_t *p, const cg_expr_t *e, int min_prec) {
  cg_builtin_t b = e->call.builtin;
  if (b == CG_BI_NONE_) {
    const cg_func_t *callee = e->call.callee->def;
    rk__cg_c_name(p, callee->name);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      rk__cg_c_expr(p, e->call.args[i], PREC_ASSIGN);
    }
    if (p->t->index_params && callee->uses_index)
      rk__cg_c_printf(p, "%srk_tid, rk_bid, rk_bdim, rk_gdim",
                      e->call.nargs ? ", " : "");
    puts_(p, ")");
    return;
  }
  if (rk__cg_bi_is_index(b)) {
    rk__cg_c_index_builtin(p, rk__cg_bi_index_kind(b), rk__cg_bi_axis(b),
                           min_prec);
  } else if (b == CG_BI_SYNC_THREADS) {
    puts_(p, p->t->sync);
  } else if (b == CG_BI_THREAD_FENCE) {
    puts_(p, p->t->fence);
  } else if (rk__cg_bi_is_atomic(b)) {
    atomic_call(p, e);
  } else if (rk__cg_bi_is_math(b)) {
    puts_(p, p->t->math[b - CG_BI_SQRTF]);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      builtin_arg(p, e->call.args[i]);
    }
    puts_(p, ")");
  } else if (rk__cg_bi_is_stencil(b)) {
    stencil_read(p, e);
  } else if (rk__cg_bi_is_send(b)) {
    /* rk_send_<p>_<h>(rk_ports, rk_port<p>, msg): the message by value. */
    unsigned port = e->call.port;
    rk__cg_c_printf(
        p, CG_SEND_PREFIX "%u_%s(" CG_PORTS_NAME ", " CG_PORT_PREFIX "%u, ",
        port, p->fn->name, port);
    rk__cg_c_expr(p, e->call.args[1]->addr.operand, PREC_ASSIGN);
    puts_(p, ")");
  }
}

static int prec_of(const printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
    case CG_E_NAME:
    case CG_E_INIT_LIST:
      return PREC_PRIMARY;
    case CG_E_CALL:
      return rk__cg_bi_is_index(e->call.builtin) && p->t->index_is_cast
                 ? PREC_UNARY
                 : PREC_POSTFIX;
    case CG_E_INDEX:
    case CG_E_MEMBER:
      return PREC_POSTFIX;
    case CG_E_INCDEC:
      return e->incdec.prefix ? PREC_UNARY : PREC_POSTFIX;
    case CG_E_UNARY:
    case CG_E_CAST:
    case CG_E_ADDR:
      return PREC_UNARY;
    case CG_E_BINARY:
      return PREC_BINARY0 + rk__cg_op_precedence(e->binary.op);
    case CG_E_COND:
      return PREC_COND;
    case CG_E_ASSIGN:
      return PREC_ASSIGN;
    case CG_E_CONVERT:
      return prec_of(p, e->convert.operand);
  }
  return PREC_PRIMARY;
}

void rk__cg_c_expr(printer_t *p, const cg_expr_t *e, int min_prec) {
  if (e->kind == CG_E_CONVERT) {
    rk__cg_c_expr(p, e->convert.operand, min_prec);
    return;
  }
  int prec = prec_of(p, e);
  bool paren = e->paren || prec < min_prec;
  if (e->kind == CG_E_CALL && rk__cg_bi_is_index(e->call.builtin))
    paren = e->paren; /* index_builtin() handles precedence itself */
  if (paren) puts_(p, "(");
  int inner = paren ? PREC_ASSIGN : min_prec;
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
      rk__cg_emit_literal(p->out, e, p->t->i64_suffix, p->t->u64_suffix);
      break;
    case CG_E_NAME:
      rk__cg_c_name(p, e->name.name);
      break;
    case CG_E_UNARY: {
      puts_(p, rk__cg_op_spelling(e->unary.op));
      const cg_expr_t *x = rk__cg_skip_converts(e->unary.operand);
      /* "- -x" must not become "--x". */
      bool sep = (e->unary.op == CG_OP_NEG || e->unary.op == CG_OP_PLUS) &&
                 !x->paren &&
                 ((x->kind == CG_E_UNARY &&
                   (x->unary.op == CG_OP_NEG || x->unary.op == CG_OP_PLUS)) ||
                  (x->kind == CG_E_INCDEC && x->incdec.prefix));
      rk__cg_c_expr(p, e->unary.operand, sep ? PREC_PRIMARY : PREC_UNARY);
      break;
    }
    case CG_E_BINARY: {
      int bp = PREC_BINARY0 + rk__cg_op_precedence(e->binary.op);
      rk__cg_c_expr(p, e->binary.lhs, bp);
      rk__cg_c_printf(p, " %s ", rk__cg_op_spelling(e->binary.op));
      rk__cg_c_expr(p, e->binary.rhs, bp + 1);
      break;
    }
    case CG_E_ASSIGN:
      rk__cg_c_expr(p, e->assign.target, PREC_UNARY);
      rk__cg_c_printf(
          p, " %s%s ",
          e->assign.op == CG_OP_NONE ? "" : rk__cg_op_spelling(e->assign.op),
          "=");
      rk__cg_c_expr(p, e->assign.value, PREC_ASSIGN);
      break;
    case CG_E_INCDEC:
      if (e->incdec.prefix) puts_(p, e->incdec.inc ? "++" : "--");
      rk__cg_c_expr(p, e->incdec.target, PREC_POSTFIX);
      if (!e->incdec.prefix) puts_(p, e->incdec.inc ? "++" : "--");
      break;
    case CG_E_COND:
      rk__cg_c_expr(p, e->cond.cond, PREC_COND + 1);
      puts_(p, " ? ");
      cond_operand(p, e->cond.then, PREC_ASSIGN);
      puts_(p, " : ");
      cond_operand(p, e->cond.other, PREC_COND);
      break;
    case CG_E_CAST:
      puts_(p, "(");
      rk__cg_c_type_name(p, e->type);
      puts_(p, ")");
      rk__cg_c_expr(p, e->cast.operand, PREC_UNARY);
      break;
    case CG_E_INDEX:
      rk__cg_c_expr(p, e->index.base, PREC_POSTFIX);
      puts_(p, "[");
      rk__cg_c_expr(p, e->index.index, PREC_ASSIGN);
      puts_(p, "]");
      break;
    case CG_E_MEMBER:
      rk__cg_c_expr(p, e->member.base, PREC_POSTFIX);
      puts_(p, e->member.arrow ? "->" : ".");
      if (e->member.field)
        rk__cg_c_name(p, e->member.name);
      else
        puts_(p, e->member.name); /* rk_grid_pos_t fields */
      break;
    case CG_E_CALL:
      call(p, e, inner);
      break;
    case CG_E_ADDR:
      puts_(p, "&");
      rk__cg_c_expr(p, e->addr.operand, PREC_UNARY);
      break;
    case CG_E_INIT_LIST:
      puts_(p, "{");
      for (uint32_t i = 0; i < e->init.n; ++i) {
        if (i) puts_(p, ", ");
        const cg_expr_t *x = e->init.elems[i];
        /* C++ refuses narrowing in braces; spell conversions of anything
         * but a literal (and float -> integer always). */
        if (p->t->cxx && x->kind == CG_E_CONVERT) {
          const cg_expr_t *o = rk__cg_skip_converts(x);
          bool literal =
              o->kind == CG_E_INT || o->kind == CG_E_FLOAT ||
              o->kind == CG_E_BOOL ||
              (o->kind == CG_E_UNARY && o->unary.op == CG_OP_NEG &&
               (rk__cg_skip_converts(o->unary.operand)->kind == CG_E_INT ||
                rk__cg_skip_converts(o->unary.operand)->kind == CG_E_FLOAT));
          bool to_int = rk__cg_is_integer(x->type) && rk__cg_is_float(o->type);
          if (!literal || to_int) {
            explicit_convert(p, x, PREC_ASSIGN);
            continue;
          }
        }
        rk__cg_c_expr(p, x, PREC_ASSIGN);
      }
      puts_(p, "}");
      break;
    case CG_E_CONVERT:
      break;
  }
  if (paren) puts_(p, ")");
}
