/* The WGSL printer: statements, with ?: hoisted into an if where select()
 * cannot express it and C's switch fallthrough lowered
 * (emit_wgsl_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/emit_wgsl_internal.h"

/* ---- Statements ---------------------------------------------------------- */

static void stmt(printer_t *p, const cg_stmt_t *s);

void rk__cg_wgsl_check_size(printer_t *p, cg_loc_t loc) {
  if (p->out->len > WGSL_MAX_OUTPUT)
    rk__cg_error(p->ctx, loc,
                 "the WGSL output would be larger than %d MiB (switch "
                 "fallthrough duplicates the bodies it falls into)",
                 WGSL_MAX_OUTPUT >> 20);
}

/* Emits `var rk_tN: T; if (c) { rk_tN = a; } else { rk_tN = b; }` before
 * the statement for every ?: in e that select() cannot express. Branches
 * are hoisted inside their own arm, so they run only when C runs them. */
static void hoist(printer_t *p, const cg_expr_t *e);

static bool hoist_cb(const cg_expr_t *e, void *p) {
  hoist(p, e);
  return false;
}

/* Whether hoist(e) would declare a temporary. */
static bool hoists(const cg_expr_t *e);

static bool hoists_cb(const cg_expr_t *e, void *arg) {
  (void)arg;
  return hoists(e);
}

static bool hoists(const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_COND:
      return hoists(e->cond.cond) || rk__cg_wgsl_cond_needs_if(e) ||
             hoists(e->cond.then) || hoists(e->cond.other);
    case CG_E_BINARY:
      return hoists(e->binary.lhs) ||
             (((e->binary.op != CG_OP_LAND && e->binary.op != CG_OP_LOR) ||
               !rk__cg_wgsl_has_effects(e->binary.rhs)) &&
              hoists(e->binary.rhs));
    default:
      return rk__cg_expr_any_child(e, hoists_cb, NULL);
  }
}

static void hoist(printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_COND: {
      hoist(p, e->cond.cond);
      if (!rk__cg_wgsl_cond_needs_if(e)) {
        /* select() evaluates both branches, which have no effects: what
         * they need hoisted may run unconditionally. */
        hoist(p, e->cond.then);
        hoist(p, e->cond.other);
        return;
      }
      char name[32];
      snprintf(name, sizeof name, "rk_t%d", p->ntemps++);
      rk__cg_wgsl_printf(p, "var %s: ", name);
      rk__cg_wgsl_type(p, e->type, false);
      puts_(p, ";\n");
      indent(p);
      puts_(p, "if (");
      rk__cg_wgsl_expr(p, e->cond.cond);
      puts_(p, ") {\n");
      for (int arm = 0; arm < 2; ++arm) {
        const cg_expr_t *x = arm ? e->cond.other : e->cond.then;
        p->indent++;
        indent(p);
        hoist(p, x);
        rk__cg_wgsl_printf(p, "%s = ", name);
        rk__cg_wgsl_expr(p, x);
        puts_(p, ";\n");
        p->indent--;
        indent(p);
        puts_(p, arm ? "}\n" : "} else {\n");
      }
      indent(p);
      rk__cg_map_put(p->ctx, &p->temps, rk__cg_wgsl_ptr_key_dup(p, e),
                     rk__cg_strndup(p->ctx, name, strlen(name)));
      return;
    }
    case CG_E_BINARY:
      hoist(p, e->binary.lhs);
      /* the right operand of && and || runs conditionally: not hoisted */
      if ((e->binary.op != CG_OP_LAND && e->binary.op != CG_OP_LOR) ||
          !rk__cg_wgsl_has_effects(e->binary.rhs))
        hoist(p, e->binary.rhs);
      return;
    default:
      rk__cg_expr_any_child(e, hoist_cb, p);
      return;
  }
}

/* target = value, target op= value, ++, --, with atomicStore for atomic
 * arrays. No trailing ';'. */
static void assignment(printer_t *p, const cg_expr_t *e) {
  const cg_expr_t *target;
  const cg_expr_t *value = NULL;
  cg_op_t op;
  const cg_type_t *op_type;
  if (e->kind == CG_E_INCDEC) {
    target = e->incdec.target;
    op = e->incdec.inc ? CG_OP_ADD : CG_OP_SUB;
    op_type = target->type;
  } else {
    target = e->assign.target;
    value = e->assign.value;
    op = e->assign.op;
    op_type = e->assign.op_type ? e->assign.op_type : target->type;
  }
  const cg_type_t *tt = target->type;
  bool atomic = rk__cg_wgsl_is_atomic_var(p, rk__cg_index_root(target)) &&
                rk__cg_is_integer(tt);
  bool integer = tt->kind == CG_TY_I32 || tt->kind == CG_TY_U32;
  if (atomic) {
    rk__cg_wgsl_builtin_call(p, "atomicStore");
    puts_(p, "&");
    rk__cg_wgsl_place(p, target);
    puts_(p, ", ");
  } else if (e->kind == CG_E_INCDEC && integer) {
    rk__cg_wgsl_place(p, target);
    puts_(p, e->incdec.inc ? "++" : "--");
    return;
  } else if (op == CG_OP_NONE ||
             (op_type->kind == tt->kind && e->kind == CG_E_ASSIGN)) {
    rk__cg_wgsl_place(p, target);
    rk__cg_wgsl_printf(p,
                       " %s= ", op == CG_OP_NONE ? "" : rk__cg_op_spelling(op));
    if (op == CG_OP_SHL || op == CG_OP_SHR)
      rk__cg_wgsl_shift_amount(p, value);
    else
      rk__cg_wgsl_init_value(p, tt, value);
    return;
  } else {
    rk__cg_wgsl_place(p, target);
    puts_(p, " = ");
  }
  /* The value to store: value, or T(OP(target) op value). */
  if (op == CG_OP_NONE) {
    rk__cg_wgsl_init_value(p, tt, value);
  } else {
    bool same = op_type->kind == tt->kind;
    if (!same) {
      rk__cg_wgsl_type(p, tt, false);
      puts_(p, "(");
    }
    if (op_type->kind != tt->kind) {
      rk__cg_wgsl_type(p, op_type, false);
      puts_(p, "(");
      rk__cg_wgsl_expr(p, target);
      puts_(p, ")");
    } else {
      rk__cg_wgsl_binary_operand(p, op, target, true);
    }
    rk__cg_wgsl_printf(p, " %s ", rk__cg_op_spelling(op));
    if (value == NULL) {
      if (op_type->kind == CG_TY_F32)
        puts_(p, "1.0f");
      else
        puts_(p, op_type->kind == CG_TY_U32 ? "1u" : "1");
    } else if (op == CG_OP_SHL || op == CG_OP_SHR) {
      rk__cg_wgsl_shift_amount(p, value);
    } else {
      rk__cg_wgsl_binary_operand(p, op, value, false);
    }
    if (!same) puts_(p, ")");
  }
  if (atomic) puts_(p, ")");
}

/* An expression statement without ';'. */
static void expr_stmt(printer_t *p, const cg_expr_t *e) {
  if (e->kind == CG_E_ASSIGN || e->kind == CG_E_INCDEC) {
    assignment(p, e);
    return;
  }
  const cg_expr_t *x = e;
  while (x->kind == CG_E_CAST || x->kind == CG_E_CONVERT)
    x = x->kind == CG_E_CAST ? x->cast.operand : x->convert.operand;
  if (x->kind == CG_E_CALL) {
    cg_builtin_t b = x->call.builtin;
    if (b == CG_BI_SYNC_THREADS) {
      /* C's barrier also orders global memory within the block. */
      rk__cg_wgsl_builtin_call(p, "storageBarrier");
      puts_(p, ");\n");
      indent(p);
      rk__cg_wgsl_builtin_call(p, "workgroupBarrier");
      puts_(p, ")");
      return;
    }
    if (b == CG_BI_NONE_ || rk__cg_bi_is_atomic(b) || b == CG_BI_THREAD_FENCE) {
      rk__cg_wgsl_expr(p, x);
      return;
    }
  }
  if (x->kind == CG_E_NAME && x->name.var &&
      rk__cg_wgsl_is_resource(x->name.var)) {
    puts_(p, "_ = &"); /* (void)buffer: keeps the binding used */
    rk__cg_wgsl_resource_name(p, x->name.var);
    return;
  }
  puts_(p, "_ = ");
  rk__cg_wgsl_expr(p, x);
}

/* A local variable's declaration; `semicolon` false in a for's header. */
static void decl(printer_t *p, const cg_var_t *v, bool first, bool semicolon) {
  if (rk__cg_wgsl_is_module_var(v)) return; /* at module scope */
  if (!first) indent(p);
  if (v->init) hoist(p, v->init);
  bool let = v->is_const && v->init && v->type->kind != CG_TY_ARRAY;
  puts_(p, let ? "let " : "var ");
  rk__cg_wgsl_name(p, v->name);
  puts_(p, ": ");
  rk__cg_wgsl_type(p, v->type, false);
  if (v->init) {
    puts_(p, " = ");
    rk__cg_wgsl_init_value(p, v->type, v->init);
  }
  if (semicolon) puts_(p, ";");
}

static bool shared_only(const cg_stmt_t *s) {
  if (s->kind != CG_S_DECL) return false;
  for (uint32_t i = 0; i < s->decl.n; ++i)
    if (!rk__cg_wgsl_is_module_var(s->decl.vars[i])) return false;
  return true;
}

/* Prints the statements of a block (or one statement) as the items of a
 * { } the caller opened. */
void rk__cg_wgsl_items(printer_t *p, const cg_stmt_t *s) {
  if (s->kind == CG_S_BLOCK) {
    for (uint32_t i = 0; i < s->block.n; ++i) {
      const cg_stmt_t *x = s->block.items[i];
      if (x->kind == CG_S_EMPTY || shared_only(x)) continue;
      indent(p);
      stmt(p, s->block.items[i]);
      puts_(p, "\n");
    }
  } else if (s->kind != CG_S_EMPTY) {
    indent(p);
    stmt(p, s);
    puts_(p, "\n");
  }
}

/* " {\n ...items... }" */
static void braced(printer_t *p, const cg_stmt_t *s) {
  puts_(p, "{\n");
  p->indent++;
  rk__cg_wgsl_items(p, s);
  p->indent--;
  indent(p);
  puts_(p, "}");
}

/* Whether control never reaches the end of s. */
static bool jumps(const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BREAK:
    case CG_S_CONTINUE:
    case CG_S_RETURN:
      return true;
    case CG_S_BLOCK:
      return s->block.n && jumps(s->block.items[s->block.n - 1]);
    case CG_S_IF:
      return s->if_.other && jumps(s->if_.then) && jumps(s->if_.other);
    default:
      return false;
  }
}

static void case_value(printer_t *p, const cg_type_t *sel, int64_t v) {
  if (sel->kind == CG_TY_U32)
    rk__cg_wgsl_printf(p, "%lluu", (unsigned long long)(uint32_t)v);
  else
    rk__cg_wgsl_printf(p, "%lld", (long long)v);
}

/* C's switch as WGSL's: consecutive labels become one clause; a clause whose
 * statements can fall off their end gets the following clauses' statements
 * too (duplicated), up to one that jumps. */
static void switch_stmt(printer_t *p, const cg_stmt_t *s) {
  const cg_stmt_t *b = s->switch_.body;
  const cg_type_t *sel = s->switch_.value->type;
  puts_(p, "switch (");
  if (sel->kind != CG_TY_I32 && sel->kind != CG_TY_U32) {
    sel = rk__cg_type_scalar(CG_TY_I32);
    rk__cg_wgsl_convert(p, sel, s->switch_.value);
  } else {
    rk__cg_wgsl_expr(p, s->switch_.value);
  }
  puts_(p, ") {\n");
  p->indent++;
  bool has_default = false;
  uint32_t i = 0;
  while (i < b->block.n) {
    const cg_stmt_t *it = b->block.items[i];
    if (it->kind != CG_S_CASE && it->kind != CG_S_DEFAULT) {
      i++; /* statements before the first label never run */
      continue;
    }
    indent(p);
    puts_(p, "case ");
    bool first = true;
    while (i < b->block.n && (b->block.items[i]->kind == CG_S_CASE ||
                              b->block.items[i]->kind == CG_S_DEFAULT)) {
      const cg_stmt_t *l = b->block.items[i++];
      if (!first) puts_(p, ", ");
      first = false;
      if (l->kind == CG_S_DEFAULT) {
        puts_(p, "default");
        has_default = true;
      } else {
        case_value(p, sel, l->case_.folded);
      }
    }
    puts_(p, ": {\n");
    p->indent++;
    /* This clause's statements, then those it falls into. */
    const cg_stmt_t *last = NULL;
    for (uint32_t k = i; k < b->block.n; ++k) {
      const cg_stmt_t *x = b->block.items[k];
      if (x->kind == CG_S_CASE || x->kind == CG_S_DEFAULT) continue;
      if (last && jumps(last)) break;
      last = x;
      if (x->kind == CG_S_EMPTY) continue;
      /* A final break only leaves the clause, which WGSL does anyway. */
      bool final_break = x->kind == CG_S_BREAK;
      if (!final_break) {
        indent(p);
        stmt(p, x);
        puts_(p, "\n");
      }
      rk__cg_wgsl_check_size(p, x->loc);
    }
    p->indent--;
    indent(p);
    puts_(p, "}\n");
  }
  if (!has_default) {
    indent(p);
    puts_(p, "default: {}\n");
  }
  p->indent--;
  indent(p);
  puts_(p, "}");
}

/* Starts a guard line: indent_text, or p->indent when it is NULL. */
static void guard_indent(printer_t *p, const char *indent_text) {
  if (indent_text)
    puts_(p, indent_text);
  else
    indent(p);
}

void rk__cg_wgsl_depth(printer_t *p) {
  if (p->depth_param)
    rk__cg_wgsl_printf(p, "rk_depth + %uu", p->loop_depth);
  else
    rk__cg_wgsl_printf(p, "%uu", p->loop_depth);
}

/* The check of rk__cg_wgsl_guard_check() without its final newline. */
static void guard_check(printer_t *p, const char *indent_text) {
  if (!p->guard) return;
  guard_indent(p, indent_text);
  puts_(p, "if (rk_loops_begun != rk_loops_ended");
  if (p->depth_param || p->loop_depth) {
    puts_(p, " + ");
    rk__cg_wgsl_depth(p);
  }
  puts_(p, ") {\n");
  guard_indent(p, indent_text);
  puts_(p, "  ");
  rk__cg_wgsl_builtin_call(p, "atomicStore");
  puts_(p, "&rk_loop_guard.hit, 1u);\n");
  guard_indent(p, indent_text);
  puts_(p, "}");
}

void rk__cg_wgsl_guard_check(printer_t *p, const char *indent_text) {
  if (!p->guard) return;
  guard_check(p, indent_text);
  puts_(p, "\n");
}

void rk__cg_wgsl_guard_begin(printer_t *p, const char *indent_text) {
  if (!p->guard) return;
  guard_indent(p, indent_text);
  puts_(p, "rk_loops_begun += 1u;\n");
}

/* A loop's body, braced; with the loop guard, `cond` (may be NULL) is
 * tested first, and its exit is counted. */
static void loop_body(printer_t *p, const cg_stmt_t *body,
                      const cg_expr_t *cond) {
  puts_(p, "{\n");
  p->indent++;
  if (p->guard && cond) {
    indent(p);
    puts_(p, "if (!(");
    rk__cg_wgsl_expr(p, cond);
    puts_(p, ")) {\n");
    indent(p);
    puts_(p, "  " WGSL_GUARD_EXIT "break;\n");
    indent(p);
    puts_(p, "}\n");
  }
  const bool saved = p->break_loop;
  p->loop_depth++;
  p->break_loop = true;
  rk__cg_wgsl_items(p, body);
  p->loop_depth--;
  p->break_loop = saved;
  p->indent--;
  indent(p);
  puts_(p, "}");
}

static void stmt(printer_t *p, const cg_stmt_t *s);

/* A while, do or for loop (see stmt). */
static void loop_stmt(printer_t *p, const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_WHILE:
      if (p->guard) {
        puts_(p, "loop ");
      } else {
        puts_(p, "while (");
        rk__cg_wgsl_expr(p, s->loop.cond);
        puts_(p, ") ");
      }
      loop_body(p, s->loop.body, s->loop.cond);
      return;
    case CG_S_DO: {
      puts_(p, "loop {\n");
      p->indent++;
      const bool saved = p->break_loop;
      p->loop_depth++;
      p->break_loop = true;
      rk__cg_wgsl_items(p, s->loop.body);
      p->loop_depth--;
      p->break_loop = saved;
      indent(p);
      puts_(p, "continuing {\n");
      indent(p);
      if (p->guard) {
        /* the condition once: it may have effects */
        puts_(p, "  let rk_again: bool = ");
        rk__cg_wgsl_expr(p, s->loop.cond);
        puts_(p, ";\n");
        indent(p);
        puts_(p, "  if (!rk_again) {\n");
        indent(p);
        puts_(p, "    rk_loops_ended += 1u;\n");
        indent(p);
        puts_(p, "  }\n");
        indent(p);
        puts_(p, "  break if !rk_again;\n");
      } else {
        puts_(p, "  break if !(");
        rk__cg_wgsl_expr(p, s->loop.cond);
        puts_(p, ");\n");
      }
      indent(p);
      puts_(p, "}\n");
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    }
    default:
      break;
  }
  const cg_stmt_t *init = s->for_.init;
  bool wrap = init && (init->kind == CG_S_DECL ? init->decl.n != 1
                                               : init->kind != CG_S_EXPR);
  /* a ?: needing an if in the initialiser: declare it before */
  if (init && init->kind == CG_S_DECL && init->decl.n == 1 &&
      init->decl.vars[0]->init && hoists(init->decl.vars[0]->init))
    wrap = true;
  if (init && init->kind == CG_S_EXPR && hoists(init->expr)) wrap = true;
  if (wrap) {
    /* for (int i = 0, j = n; ...): the declarations in a block */
    puts_(p, "{\n");
    p->indent++;
    indent(p);
    stmt(p, init);
    puts_(p, "\n");
    indent(p);
  }
  puts_(p, "for (");
  if (init && !wrap) {
    if (init->kind == CG_S_DECL)
      decl(p, init->decl.vars[0], true, false);
    else
      expr_stmt(p, init->expr);
  }
  puts_(p, "; ");
  if (s->for_.cond && !p->guard) rk__cg_wgsl_expr(p, s->for_.cond);
  puts_(p, "; ");
  if (s->for_.step) expr_stmt(p, s->for_.step);
  puts_(p, ") ");
  loop_body(p, s->for_.body, s->for_.cond);
  if (wrap) {
    puts_(p, "\n");
    p->indent--;
    indent(p);
    puts_(p, "}");
  }
}

/* Prints one statement at the current position (the caller indented); no
 * trailing newline. */
static void stmt(printer_t *p, const cg_stmt_t *s) {
  rk__cg_wgsl_check_size(p, s->loc);
  switch (s->kind) {
    case CG_S_BLOCK:
      braced(p, s);
      return;
    case CG_S_DECL: {
      bool first = true;
      for (uint32_t i = 0; i < s->decl.n; ++i) {
        if (rk__cg_wgsl_is_module_var(s->decl.vars[i])) continue;
        if (!first) puts_(p, "\n");
        decl(p, s->decl.vars[i], first, true);
        first = false;
      }
      return;
    }
    case CG_S_EXPR:
      hoist(p, s->expr);
      expr_stmt(p, s->expr);
      puts_(p, ";");
      return;
    case CG_S_IF:
      hoist(p, s->if_.cond);
      for (;;) {
        puts_(p, "if (");
        rk__cg_wgsl_expr(p, s->if_.cond);
        puts_(p, ") ");
        braced(p, s->if_.then);
        if (!s->if_.other) return;
        puts_(p, " else ");
        const cg_stmt_t *o = s->if_.other;
        /* else if: only when the condition needs nothing hoisted */
        if (o->kind == CG_S_IF && !hoists(o->if_.cond)) {
          s = o;
          continue;
        }
        braced(p, o);
        return;
      }
    case CG_S_WHILE:
    case CG_S_DO:
    case CG_S_FOR:
      if (p->guard) {
        rk__cg_wgsl_guard_begin(p, "");
        indent(p);
      }
      loop_stmt(p, s);
      if (p->guard) {
        puts_(p, "\n");
        guard_check(p, NULL);
      }
      return;
    case CG_S_SWITCH: {
      hoist(p, s->switch_.value);
      const bool saved = p->break_loop;
      p->break_loop = false;
      switch_stmt(p, s);
      p->break_loop = saved;
      return;
    }
    case CG_S_CASE:
    case CG_S_DEFAULT:
      return; /* handled by switch_stmt */
    case CG_S_BREAK:
      if (p->guard && p->break_loop) puts_(p, WGSL_GUARD_EXIT);
      puts_(p, "break;");
      return;
    case CG_S_CONTINUE:
      puts_(p, "continue;");
      return;
    case CG_S_RETURN:
      if (s->expr) hoist(p, s->expr);
      /* leaving every loop around it as the program says */
      if (p->guard && p->loop_depth)
        rk__cg_wgsl_printf(p, "rk_loops_ended += %uu; ", p->loop_depth);
      if (s->expr) {
        puts_(p, "return ");
        rk__cg_wgsl_init_value(p, p->fn->ret, s->expr);
        puts_(p, ";");
      } else {
        puts_(p, "return;");
      }
      return;
    case CG_S_EMPTY:
      return;
  }
}
