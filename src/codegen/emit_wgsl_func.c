/* The WGSL printer: function bodies, helper functions, the arrays atomics
 * touch and their compare-and-swap helpers (emit_wgsl_internal.h). */
#include <string.h>

#include "codegen/emit_wgsl_internal.h"

static void params_list(printer_t *p, const cg_func_t *fn) {
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (i) puts_(p, ", ");
    if (v->modified) puts_(p, "rk_arg_");
    rk__cg_wgsl_name(p, v->name);
    puts_(p, ": ");
    rk__cg_wgsl_type(p, v->type, false);
  }
  if (fn->uses_index)
    rk__cg_wgsl_printf(
        p, "%srk_tid: vec3<u32>, rk_bid: vec3<u32>, rk_gdim: vec3<u32>",
        fn->nparams ? ", " : "");
  if (p->guard && fn->uses_loop)
    puts_(p,
          fn->nparams || fn->uses_index ? ", rk_depth: u32" : "rk_depth: u32");
}

/* Modified parameters are copied into variables (WGSL parameters are
 * immutable). */
static void param_copies(printer_t *p, const cg_func_t *fn) {
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (!v->modified) continue;
    puts_(p, "  var ");
    rk__cg_wgsl_name(p, v->name);
    puts_(p, ": ");
    rk__cg_wgsl_type(p, v->type, false);
    puts_(p, " = rk_arg_");
    rk__cg_wgsl_name(p, v->name);
    puts_(p, ";\n");
  }
}

void rk__cg_wgsl_function_body(printer_t *p, const cg_stmt_t *b) {
  p->indent = 1;
  p->loop_depth = 0;
  p->break_loop = false;
  rk__cg_wgsl_items(p, b);
  p->indent = 0;
}

/* Whether every path through s ends in a return, as WGSL's validators see
 * it: an if/else counts when both branches do, a loop never does (naga
 * does not prove even `loop { }` without a break endless, and a `while
 * (true)` has a break for its condition), nor does a switch. */
static bool ends_in_return(const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_RETURN:
      return true;
    case CG_S_BLOCK:
      return s->block.n && ends_in_return(s->block.items[s->block.n - 1]);
    case CG_S_IF:
      return s->if_.other && ends_in_return(s->if_.then) &&
             ends_in_return(s->if_.other);
    default:
      return false;
  }
}

/* The body of a function returning `ret` (not void), and a final return of
 * the zero value where control might reach the end as far as WGSL can
 * tell. WGSL requires one; C allows a function whose only returns are in
 * an endless loop (`while (true) { ... return x; }`), and leaves falling
 * off the end undefined when the caller uses the value. */
void rk__cg_wgsl_value_function_body(printer_t *p, const cg_type_t *ret,
                                     const cg_stmt_t *b) {
  rk__cg_wgsl_function_body(p, b);
  if (ends_in_return(b)) return;
  puts_(p, "  return ");
  rk__cg_wgsl_type(p, ret, false);
  puts_(p, "(); // WGSL requires a return at the end\n");
}

void rk__cg_wgsl_helper(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  if (!fn->body) return; /* WGSL needs no prototypes */
  p->fn = fn;
  p->fp = fp;
  p->ntemps = 0;
  p->depth_param = p->guard && fn->uses_loop;
  rk__cg_wgsl_declare(p, rk__cg_wgsl_spelled(p, fn->name), fn->loc);
  puts_(p, "\nfn ");
  rk__cg_wgsl_name(p, fn->name);
  puts_(p, "(");
  params_list(p, fn);
  puts_(p, ")");
  if (fn->ret->kind != CG_TY_VOID) {
    puts_(p, " -> ");
    rk__cg_wgsl_type(p, fn->ret, false);
  }
  puts_(p, " {\n");
  param_copies(p, fn);
  if (fn->ret->kind != CG_TY_VOID)
    rk__cg_wgsl_value_function_body(p, fn->ret, fn->body);
  else
    rk__cg_wgsl_function_body(p, fn->body);
  puts_(p, "}\n");
}

/* Records in p->atomic_vars the arrays that atomics in e work on. */
static bool find_atomics_expr(const cg_expr_t *e, void *arg) {
  printer_t *p = arg;
  if (e->kind == CG_E_CALL && rk__cg_bi_is_atomic(e->call.builtin) &&
      e->call.nargs > 0 && e->call.args[0]->kind == CG_E_ADDR) {
    const cg_var_t *root = rk__cg_index_root(e->call.args[0]->addr.operand);
    if (root)
      rk__cg_map_put(p->ctx, &p->atomic_vars, rk__cg_wgsl_ptr_key_dup(p, root),
                     (void *)root);
  }
  rk__cg_expr_any_child(e, find_atomics_expr, p);
  return false;
}

void rk__cg_wgsl_find_atomics_stmt(printer_t *p, const cg_stmt_t *s) {
  rk__cg_stmt_any_expr(s, find_atomics_expr, p);
}

/* Shared arrays declared in the outermost block of a kernel. */
void rk__cg_wgsl_shared_arrays(printer_t *p, const cg_func_t *fn) {
  const cg_stmt_t *b = fn->body;
  for (uint32_t i = 0; i < b->block.n; ++i) {
    const cg_stmt_t *s = b->block.items[i];
    if (s->kind != CG_S_DECL) continue;
    for (uint32_t k = 0; k < s->decl.n; ++k) {
      const cg_var_t *v = s->decl.vars[k];
      if (v->kind != CG_VAR_SHARED) continue;
      rk__cg_wgsl_declare(p, rk__cg_wgsl_resource_string(p, v), v->loc);
      puts_(p, "var<workgroup> ");
      rk__cg_wgsl_resource_name(p, v);
      puts_(p, ": ");
      rk__cg_wgsl_type(p, v->type, rk__cg_wgsl_is_atomic_var(p, v));
      puts_(p, ";\n");
    }
  }
}

/* rk_cas_<array>: a strong compare-and-swap on one atomic array (WGSL
 * cannot pass pointers to storage or workgroup memory to functions). */
void rk__cg_wgsl_cas_helper(printer_t *p, const cg_var_t *v) {
  const cg_type_t *t = v->type->kind == CG_TY_PTR ? v->type->elem : v->type;
  const cg_type_t *base = rk__cg_type_base(t);
  int dims = v->type->kind == CG_TY_PTR ? 1 : 0;
  for (const cg_type_t *x = t; x->kind == CG_TY_ARRAY; x = x->elem) dims++;
  const char *fname = rk__cg_concat(p->ctx, WGSL_CAS_PREFIX,
                                    rk__cg_wgsl_resource_string(p, v), "");
  rk__cg_wgsl_declare(p, fname, v->loc);
  rk__cg_wgsl_printf(
      p,
      "\n// Compare-and-swap on %s returning the old value: retries the "
      "weak\n// exchange until it succeeds or sees another value.\n",
      "an element");
  rk__cg_wgsl_printf(p, "fn %.400s(", fname);
  for (int i = 0; i < dims; ++i) rk__cg_wgsl_printf(p, "i%d: u32, ", i);
  puts_(p, "expected: ");
  rk__cg_wgsl_type(p, base, false);
  puts_(p, ", desired: ");
  rk__cg_wgsl_type(p, base, false);
  if (p->guard) puts_(p, ", rk_depth: u32");
  puts_(p, ") -> ");
  rk__cg_wgsl_type(p, base, false);
  puts_(p, " {\n  var old: ");
  rk__cg_wgsl_type(p, base, false);
  puts_(p, ";\n");
  rk__cg_wgsl_guard_begin(p, "  ");
  const bool depth_param = p->depth_param;
  const uint32_t loop_depth = p->loop_depth;
  p->depth_param = true;
  p->loop_depth = 0;
  puts_(p, "  loop {\n    let r = ");
  rk__cg_wgsl_builtin_call(p, "atomicCompareExchangeWeak");
  puts_(p, "&");
  rk__cg_wgsl_resource_name(p, v);
  for (int i = 0; i < dims; ++i) rk__cg_wgsl_printf(p, "[i%d]", i);
  puts_(p,
        ", expected, desired);\n"
        "    old = r.old_value;\n"
        "    if (r.exchanged || old != expected) {\n      ");
  if (p->guard) puts_(p, WGSL_GUARD_EXIT);
  puts_(p,
        "break;\n"
        "    }\n"
        "  }\n");
  rk__cg_wgsl_guard_check(p, "  ");
  p->depth_param = depth_param;
  p->loop_depth = loop_depth;
  puts_(p,
        "  return old;\n"
        "}\n");
}

/* Whether e holds a compare-and-swap on array v (arg). */
static bool uses_cas_on(const cg_expr_t *e, void *arg) {
  const cg_var_t *v = arg;
  switch (e->kind) {
    case CG_E_CALL:
      if (rk__cg_bi_is_atomic(e->call.builtin) &&
          rk__cg_bi_atomic_op(e->call.builtin) == CG_ATOMIC_CAS &&
          e->call.nargs && e->call.args[0]->kind == CG_E_ADDR &&
          rk__cg_index_root(e->call.args[0]->addr.operand) == v)
        return true;
      return rk__cg_expr_any_child(e, uses_cas_on, arg);
    case CG_E_INCDEC:
    case CG_E_ADDR:
    case CG_E_INIT_LIST:
      return false; /* not looked into */
    default:
      return rk__cg_expr_any_child(e, uses_cas_on, arg);
  }
}

bool rk__cg_wgsl_uses_cas_stmt(const cg_stmt_t *s, const cg_var_t *v) {
  return rk__cg_stmt_any_expr(s, uses_cas_on, (void *)v);
}
