/* The WGSL printer: expressions (emit_wgsl_internal.h). */
#include "codegen/emit_wgsl_internal.h"

/* ---- Expressions --------------------------------------------------------- */

/* Whether evaluating e may do more than compute a value: atomics, and
 * helpers that reach a barrier. Helpers cannot write memory otherwise. */
static bool has_effects_cb(const cg_expr_t *e, void *arg) {
  (void)arg;
  switch (e->kind) {
    case CG_E_CALL:
      if (rk__cg_bi_is_atomic(e->call.builtin) ||
          rk__cg_bi_is_send(e->call.builtin) ||
          e->call.builtin == CG_BI_SYNC_THREADS ||
          e->call.builtin == CG_BI_THREAD_FENCE)
        return true;
      if (e->call.builtin == CG_BI_NONE_ && e->call.callee &&
          e->call.callee->def && e->call.callee->def->uses_barrier)
        return true;
      return rk__cg_expr_any_child(e, has_effects_cb, NULL);
    case CG_E_ASSIGN:
    case CG_E_INCDEC:
      return true;
    default:
      return rk__cg_expr_any_child(e, has_effects_cb, NULL);
  }
}

bool rk__cg_wgsl_has_effects(const cg_expr_t *e) {
  return has_effects_cb(e, NULL);
}

/* A ?: that select() cannot express: non-scalar, or a branch with side
 * effects (select evaluates both). */
bool rk__cg_wgsl_cond_needs_if(const cg_expr_t *e) {
  cg_type_kind_t k = e->type->kind;
  bool scalar = k >= CG_TY_BOOL && k <= CG_TY_F64;
  return !scalar || rk__cg_wgsl_has_effects(e->cond.then) ||
         rk__cg_wgsl_has_effects(e->cond.other);
}

static void int_literal(printer_t *p, uint64_t v, cg_type_kind_t k, bool hex) {
  rk__cg_emit_int_literal(p->out, v, k, hex, "", "");
}

/* Binary operator classes for WGSL's grammar, which forbids mixing some
 * operators without parentheses (a & b | c, a << b + c, a < b == c). */
typedef enum op_class {
  OC_MUL,
  OC_ADD,
  OC_SHIFT,
  OC_AND,
  OC_OR,
  OC_XOR,
  OC_REL,
  OC_LAND,
  OC_LOR,
} op_class_t;

static op_class_t op_class(cg_op_t op) {
  switch (op) {
    case CG_OP_MUL:
    case CG_OP_DIV:
    case CG_OP_MOD:
      return OC_MUL;
    case CG_OP_ADD:
    case CG_OP_SUB:
      return OC_ADD;
    case CG_OP_SHL:
    case CG_OP_SHR:
      return OC_SHIFT;
    case CG_OP_BAND:
      return OC_AND;
    case CG_OP_BOR:
      return OC_OR;
    case CG_OP_BXOR:
      return OC_XOR;
    case CG_OP_LAND:
      return OC_LAND;
    case CG_OP_LOR:
      return OC_LOR;
    default:
      return OC_REL;
  }
}

/* Whether a binary child needs parentheses under a binary parent. */
static bool child_needs_paren(cg_op_t parent, const cg_expr_t *child,
                              bool lhs) {
  if (child->kind != CG_E_BINARY) return false;
  if (child->paren) return true;
  op_class_t pc = op_class(parent), cc = op_class(child->binary.op);
  switch (pc) {
    case OC_MUL:
      return !(cc == OC_MUL && lhs);
    case OC_ADD:
      return !(cc == OC_MUL || (cc == OC_ADD && lhs));
    case OC_SHIFT:
      return true;
    case OC_AND:
    case OC_OR:
    case OC_XOR:
    case OC_LAND:
    case OC_LOR:
      return !(cc == pc && lhs) && !(pc >= OC_LAND && cc == OC_REL);
    case OC_REL:
      return !(cc == OC_MUL || cc == OC_ADD || cc == OC_SHIFT);
  }
  return true;
}

/* An operand that must be a unary expression (of a unary operator, or the
 * base of [] and .). */
static void unary_operand(printer_t *p, const cg_expr_t *e) {
  bool paren = e->kind == CG_E_BINARY || e->kind == CG_E_UNARY;
  if (paren) puts_(p, "(");
  rk__cg_wgsl_expr(p, e);
  if (paren) puts_(p, ")");
}

/* The shift amount: WGSL wants u32. */
void rk__cg_wgsl_shift_amount(printer_t *p, const cg_expr_t *e) {
  const cg_expr_t *x = rk__cg_skip_converts(e);
  if (x->kind == CG_E_INT && rk__cg_is_integer(x->type) &&
      x->lit_int.value <= INT32_MAX) {
    int_literal(p, x->lit_int.value, CG_TY_U32, x->lit_int.hex);
    return;
  }
  if (e->type->kind == CG_TY_U32) {
    unary_operand(p, e);
    return;
  }
  puts_(p, "u32(");
  rk__cg_wgsl_expr(p, e);
  puts_(p, ")");
}

void rk__cg_wgsl_binary_operand(printer_t *p, cg_op_t op, const cg_expr_t *e,
                                bool lhs) {
  bool paren = child_needs_paren(op, e, lhs);
  if (paren) puts_(p, "(");
  rk__cg_wgsl_expr(p, e);
  if (paren) puts_(p, ")");
}

static void binary(printer_t *p, cg_op_t op, const cg_expr_t *lhs,
                   const cg_expr_t *rhs) {
  rk__cg_wgsl_binary_operand(p, op, lhs, true);
  rk__cg_wgsl_printf(p, " %s ", rk__cg_op_spelling(op));
  if (op == CG_OP_SHL || op == CG_OP_SHR)
    rk__cg_wgsl_shift_amount(p, rhs);
  else
    rk__cg_wgsl_binary_operand(p, op, rhs, false);
}

/* An implicit or explicit conversion to `to`: T(x), or a literal already
 * in the new type. */
void rk__cg_wgsl_convert(printer_t *p, const cg_type_t *to,
                         const cg_expr_t *x) {
  cg_type_kind_t k = to->kind;
  if (x->type->kind == CG_TY_PTR) {
    puts_(p, "true"); /* a buffer as a condition: bindings are never NULL */
    return;
  }
  if (x->type->kind == k && x->kind != CG_E_BINARY && x->kind != CG_E_UNARY) {
    rk__cg_wgsl_expr(p, x);
    return;
  }
  if (x->kind == CG_E_INT && x->lit_int.value < CG_F32_EXACT_INT) {
    uint64_t v = x->lit_int.value;
    if (k == CG_TY_U32 || k == CG_TY_I32) {
      int_literal(p, v, k, x->lit_int.hex);
      return;
    }
    if (k == CG_TY_F32) {
      rk__cg_wgsl_printf(p, "%llu.0f", (unsigned long long)v);
      return;
    }
  }
  rk__cg_wgsl_type(p, to, false);
  puts_(p, "(");
  rk__cg_wgsl_expr(p, x);
  puts_(p, ")");
}

void rk__cg_wgsl_index_builtin(printer_t *p, cg_index_kind_t kind, int axis) {
  char c = "xyz"[axis];
  switch (kind) {
    case CG_INDEX_THREAD:
      rk__cg_wgsl_printf(p, "rk_tid.%c", c);
      return;
    case CG_INDEX_BLOCK:
      rk__cg_wgsl_printf(p, "rk_bid.%c", c);
      return;
    case CG_INDEX_BLOCK_DIM:
      rk__cg_wgsl_printf(p, "rk_wg_%c", c);
      return;
    case CG_INDEX_GRID_DIM:
      rk__cg_wgsl_printf(p, "rk_gdim.%c", c);
      return;
    default: /* CG_INDEX_GLOBAL */
      rk__cg_wgsl_printf(p, "(rk_bid.%c * rk_wg_%c + rk_tid.%c)", c, c, c);
      return;
  }
}

/* An lvalue or element as a reference, without atomicLoad. */
void rk__cg_wgsl_place(printer_t *p, const cg_expr_t *e) {
  e = rk__cg_skip_converts(e);
  if (e->kind == CG_E_INDEX) {
    rk__cg_wgsl_place(p, e->index.base);
    puts_(p, "[");
    rk__cg_wgsl_expr(p, e->index.index);
    puts_(p, "]");
    return;
  }
  rk__cg_wgsl_expr(p, e);
}

static const char *const kAtomicFns[] = {
    "atomicAdd",      "atomicSub", "atomicAnd", "atomicOr",      "atomicXor",
    "atomicExchange", "atomicMin", "atomicMax", WGSL_CAS_PREFIX,
};

static void atomic_call(printer_t *p, const cg_expr_t *e) {
  cg_atomic_op_t op = rk__cg_bi_atomic_op(e->call.builtin);
  const cg_expr_t *target = e->call.args[0]->addr.operand;
  if (op == CG_ATOMIC_CAS) {
    /* rk_cas_<array>(indices..., expected, desired) */
    const cg_var_t *root = rk__cg_index_root(target);
    puts_(p, WGSL_CAS_PREFIX);
    if (root) rk__cg_wgsl_resource_name(p, root);
    puts_(p, "(");
    const cg_expr_t *chain[CG_MAX_DIMS + 1]; /* a buffer's arrays too */
    int n = 0;
    for (const cg_expr_t *x = rk__cg_skip_converts(target);
         x->kind == CG_E_INDEX && n < CG_MAX_DIMS + 1;
         x = rk__cg_skip_converts(x->index.base))
      chain[n++] = x;
    for (int i = n - 1; i >= 0; --i) {
      rk__cg_wgsl_convert(p, rk__cg_type_scalar(CG_TY_U32),
                          chain[i]->index.index);
      puts_(p, ", ");
    }
    rk__cg_wgsl_expr(p, e->call.args[1]);
    puts_(p, ", ");
    rk__cg_wgsl_expr(p, e->call.args[2]);
    if (p->guard) {
      puts_(p, ", ");
      rk__cg_wgsl_depth(p);
    }
    puts_(p, ")");
    return;
  }
  rk__cg_wgsl_builtin_call(p, kAtomicFns[op]);
  puts_(p, "&");
  rk__cg_wgsl_place(p, target);
  puts_(p, ", ");
  rk__cg_wgsl_expr(p, e->call.args[1]);
  puts_(p, ")");
}

static const char *const kMath[] = {
    "sqrt", "exp", "log", "pow",   "sin",  "cos", "tan",
    "abs",  "min", "max", "floor", "ceil", "fma", "tanh",
};

/* A neighbour read from the tile in workgroup memory (as the C-family GPU
 * targets do). */
static void stencil_read(printer_t *p, const cg_expr_t *e) {
  int d[CG_AXES] = {e->call.dx, e->call.dy, e->call.dz};
  puts_(p, CG_TILE_PREFIX);
  rk__cg_wgsl_resource_name(p, e->call.buffer);
  static const char *const kLocal[] = {"rk_lx", "rk_ly", "rk_lz"};
  for (int axis = (int)p->fp->stencil->dims - 1; axis >= 0; --axis) {
    rk__cg_wgsl_printf(p, "[%s", kLocal[axis]);
    if (d[axis] > 0) rk__cg_wgsl_printf(p, " + %d", d[axis]);
    if (d[axis] < 0) rk__cg_wgsl_printf(p, " - %d", -d[axis]);
    puts_(p, "]");
  }
}

static void call(printer_t *p, const cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  if (b == CG_BI_NONE_) {
    const cg_func_t *callee = e->call.callee->def;
    rk__cg_wgsl_name(p, callee->name);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      rk__cg_wgsl_expr(p, e->call.args[i]);
    }
    if (callee->uses_index)
      rk__cg_wgsl_printf(p, "%srk_tid, rk_bid, rk_gdim",
                         e->call.nargs ? ", " : "");
    if (p->guard && callee->uses_loop) {
      if (e->call.nargs || callee->uses_index) puts_(p, ", ");
      rk__cg_wgsl_depth(p);
    }
    puts_(p, ")");
  } else if (rk__cg_bi_is_index(b)) {
    rk__cg_wgsl_index_builtin(p, rk__cg_bi_index_kind(b), rk__cg_bi_axis(b));
  } else if (b == CG_BI_SYNC_THREADS) {
    rk__cg_wgsl_builtin_call(p, "workgroupBarrier");
    puts_(p, ")");
  } else if (b == CG_BI_THREAD_FENCE) {
    rk__cg_wgsl_builtin_call(p, "storageBarrier");
    puts_(p, ")");
  } else if (rk__cg_bi_is_atomic(b)) {
    atomic_call(p, e);
  } else if (rk__cg_bi_is_math(b)) {
    rk__cg_wgsl_builtin_call(p, kMath[b - CG_BI_SQRTF]);
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      rk__cg_wgsl_expr(p, e->call.args[i]);
    }
    puts_(p, ")");
  } else if (rk__cg_bi_is_stencil(b)) {
    stencil_read(p, e);
  } else if (rk__cg_bi_is_send(b)) {
    /* rk_send_<p>_<h>(msg): the message by value. */
    rk__cg_wgsl_printf(p, CG_SEND_PREFIX "%u_%s(", (unsigned)e->call.port,
                       p->fn->name);
    rk__cg_wgsl_expr(p, e->call.args[1]->addr.operand);
    puts_(p, ")");
  } else {
    puts_(p, "0"); /* rk_dynamic_shared: refused by the checker */
  }
}

/* A value of type t from an initialiser: constructors for { } lists, the
 * zero value T() for missing elements. */
void rk__cg_wgsl_init_value(printer_t *p, const cg_type_t *t,
                            const cg_expr_t *e) {
  if (e->kind != CG_E_INIT_LIST) {
    rk__cg_wgsl_expr(p, e);
    return;
  }
  rk__cg_wgsl_type(p, t, false);
  puts_(p, "(");
  uint32_t n = t->kind == CG_TY_ARRAY    ? t->count
               : t->kind == CG_TY_STRUCT ? t->st->nfields
                                         : 1;
  for (uint32_t i = 0; i < n; ++i) {
    const cg_type_t *et = t->kind == CG_TY_ARRAY    ? t->elem
                          : t->kind == CG_TY_STRUCT ? t->st->fields[i].type
                                                    : t;
    if (i) puts_(p, ", ");
    if (i < e->init.n) {
      rk__cg_wgsl_init_value(p, et, e->init.elems[i]);
    } else {
      rk__cg_wgsl_type(p, et, false);
      puts_(p, "()");
    }
    if (p->out->len > WGSL_MAX_OUTPUT)
      rk__cg_error(p->ctx, e->loc, "the WGSL output would be too large");
  }
  puts_(p, ")");
}

/* Whether e names a message buffer (in, out) of the handler being printed:
 * rk_handle_<name> reads message rk_m of them (the state is one element). */
static bool handler_message(const printer_t *p, const cg_expr_t *e) {
  e = rk__cg_skip_converts(e);
  if (!p->fp || !p->fp->handler || e->kind != CG_E_NAME) return false;
  return e->name.var == p->fp->handler->in ||
         e->name.var == p->fp->handler->out;
}

void rk__cg_wgsl_expr(printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
      rk__cg_emit_literal(p->out, e, "", "");
      return;
    case CG_E_NAME: {
      const cg_var_t *v = e->name.var;
      if (v && rk__cg_wgsl_is_resource(v)) {
        if (rk__cg_wgsl_is_atomic_var(p, v) && rk__cg_is_integer(e->type)) {
          rk__cg_wgsl_builtin_call(p, "atomicLoad");
          puts_(p, "&");
          rk__cg_wgsl_resource_name(p, v);
          puts_(p, ")");
        } else {
          rk__cg_wgsl_resource_name(p, v);
        }
      } else {
        rk__cg_wgsl_name(p, e->name.name);
      }
      return;
    }
    case CG_E_UNARY: {
      const cg_expr_t *x = e->unary.operand;
      switch (e->unary.op) {
        case CG_OP_PLUS:
          unary_operand(p, x);
          return;
        case CG_OP_NEG:
          if (e->type->kind == CG_TY_U32) {
            puts_(p, "(0u - ");
            rk__cg_wgsl_binary_operand(p, CG_OP_SUB, x, false);
            puts_(p, ")");
            return;
          }
          puts_(p, "-");
          break;
        default:
          puts_(p, rk__cg_op_spelling(e->unary.op));
          break;
      }
      unary_operand(p, x);
      return;
    }
    case CG_E_BINARY:
      binary(p, e->binary.op, e->binary.lhs, e->binary.rhs);
      return;
    case CG_E_COND: {
      char key[WGSL_PTR_KEY];
      const char *t =
          p->temps.count
              ? rk__cg_map_get(&p->temps, rk__cg_wgsl_ptr_key(key, e))
              : NULL;
      if (t) {
        puts_(p, t);
        return;
      }
      if (rk__cg_wgsl_cond_needs_if(e))
        rk__cg_error(p->ctx, e->loc,
                     "this ?: cannot be expressed in WGSL here: its branches "
                     "have side effects or are not scalars, so it becomes an "
                     "if with a temporary, which is not possible inside a "
                     "loop condition or step, the right operand of && or "
                     "||, or a branch of another ?: (use if/else)");
      rk__cg_wgsl_builtin_call(p, "select");
      rk__cg_wgsl_expr(p, e->cond.other);
      puts_(p, ", ");
      rk__cg_wgsl_expr(p, e->cond.then);
      puts_(p, ", ");
      rk__cg_wgsl_expr(p, e->cond.cond);
      puts_(p, ")");
      return;
    }
    case CG_E_CAST:
    case CG_E_CONVERT: {
      const cg_expr_t *x =
          e->kind == CG_E_CAST ? e->cast.operand : e->convert.operand;
      if (e->type->kind == CG_TY_VOID) {
        rk__cg_wgsl_expr(p, x);
        return;
      }
      rk__cg_wgsl_convert(p, e->type, x);
      return;
    }
    case CG_E_INDEX: {
      const cg_var_t *root = rk__cg_index_root(e);
      bool load =
          rk__cg_wgsl_is_atomic_var(p, root) && rk__cg_is_integer(e->type);
      if (load) {
        rk__cg_wgsl_builtin_call(p, "atomicLoad");
        puts_(p, "&");
      }
      unary_operand(p, e->index.base);
      puts_(p, "[");
      rk__cg_wgsl_expr(p, e->index.index);
      puts_(p, "]");
      if (load) puts_(p, ")");
      return;
    }
    case CG_E_MEMBER:
      unary_operand(p, e->member.base);
      if (e->member.arrow)
        puts_(p, handler_message(p, e->member.base) ? "[rk_m]" : "[0]");
      puts_(p, ".");
      if (e->member.field)
        rk__cg_wgsl_name(p, e->member.name);
      else
        puts_(p, e->member.name); /* rk_grid_pos_t fields */
      return;
    case CG_E_CALL:
      call(p, e);
      return;
    case CG_E_ADDR:
      puts_(p, "&");
      rk__cg_wgsl_place(p, e->addr.operand);
      return;
    case CG_E_INIT_LIST:
      rk__cg_wgsl_init_value(p, e->type, e);
      return;
    case CG_E_ASSIGN:
    case CG_E_INCDEC:
      /* statements only (checked); printed by assignment() */
      return;
  }
}
