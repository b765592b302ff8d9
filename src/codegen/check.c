/* Checker of the kernel language (check.h): helpers, scopes, the call
 * graph and the pass over the unit. */
#include <stdio.h>
#include <string.h>

#include "codegen/check_internal.h"

/* ---- Small helpers --------------------------------------------------------
 */

/* Whether e is `(T *)rk_dynamic_shared()`, as written. */
bool rk__cg_check_is_dynamic_shared_init(const cg_expr_t *e) {
  if (!e || e->kind != CG_E_CAST || !e->cast.spec.is_ptr) return false;
  const cg_expr_t *c = e->cast.operand;
  return c->kind == CG_E_CALL && c->call.nargs == 0 &&
         rk__cg_builtin_lookup(c->call.name) == CG_BI_DYNAMIC_SHARED;
}

const char *rk__cg_check_describe(const cg_type_t *t, char *buf, size_t cap) {
  rk__cg_type_describe(t, buf, cap);
  return buf;
}

const char *rk__cg_check_fn_kind_name(cg_func_kind_t k) {
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

const char *rk__cg_check_entry_word(cg_func_kind_t k) {
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
void rk__cg_check_require_type(checker_t *ch, const cg_type_t *t, cg_loc_t loc,
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

void rk__cg_check_push_scope(checker_t *ch) {
  rk__cg_vec_push(ch->ctx, &ch->marks, (void *)(uintptr_t)ch->stack.n);
  ch->depth++;
}

void rk__cg_check_pop_scope(checker_t *ch) {
  uint32_t mark = (uint32_t)(uintptr_t)ch->marks.v[--ch->marks.n];
  while (ch->stack.n > mark) {
    binding_t *b = ch->stack.v[--ch->stack.n];
    rk__cg_map_put(ch->ctx, &ch->names, b->name, b->prev);
  }
  ch->depth--;
}

/* Refuses names the language reserves. */
void rk__cg_check_user_name(checker_t *ch, const char *name, cg_loc_t loc) {
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

binding_t *rk__cg_check_declare(checker_t *ch, const char *name, cg_loc_t loc) {
  rk__cg_check_user_name(ch, name, loc);
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

/* ---- Call graph -----------------------------------------------------------
 */

/* Depth-first over definitions, iteratively (a chain of thousands of helpers
 * must not overflow the stack): refuses cycles and propagates uses_index,
 * uses_barrier and uses_loop from callees to callers in post-order. */
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
    if (!root->body || root->visit != CG_VISIT_NONE) continue;
    uint32_t sp = 0;
    stack[sp].fn = root;
    stack[sp].next = 0;
    sp++;
    root->visit = CG_VISIT_ACTIVE;
    while (sp) {
      frame_t *f = &stack[sp - 1];
      if (f->next < f->fn->calls.n) {
        cg_call_edge_t *edge = f->fn->calls.v[f->next++];
        cg_func_t *callee = edge->callee->def;
        if (callee->visit == CG_VISIT_ACTIVE) {
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
        if (callee->visit == CG_VISIT_NONE) {
          callee->visit = CG_VISIT_ACTIVE;
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
                       callee->name, rk__cg_check_entry_word(fn->kind),
                       fn->name);
        fn->uses_barrier |= callee->uses_barrier;
        fn->uses_loop |= callee->uses_loop;
      }
      fn->visit = CG_VISIT_DONE;
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
        rk__cg_check_struct(&ch, it->st);
        break;
      case CG_ITEM_MACRO: {
        cg_var_t *v = it->var;
        /* A macro body is checked where it is defined (names in it must
         * already exist) in a pseudo-function context: no calls. */
        cg_func_t scratch;
        memset(&scratch, 0, sizeof scratch);
        scratch.name = v->name;
        ch.fn = &scratch;
        rk__cg_check_expr(&ch, v->init, false);
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
        binding_t *b = rk__cg_check_declare(&ch, v->name, v->loc);
        b->var = v;
        break;
      }
      case CG_ITEM_CONST: {
        cg_var_t *v = it->var;
        const cg_type_t *t = rk__cg_check_resolve_base(&ch, &v->spec);
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
        v->init =
            rk__cg_check_convert(&ch, rk__cg_check_expr(&ch, v->init, false), t,
                                 "the constant's value");
        ch.fn = NULL;
        if (scratch.calls.n || scratch.uses_index ||
            !rk__cg_fold(ctx, v->init, false, NULL, NULL))
          rk__cg_error(ctx, v->init->loc,
                       "the value of constant '%s' must be a constant "
                       "expression",
                       v->name);
        binding_t *b = rk__cg_check_declare(&ch, v->name, v->loc);
        b->var = v;
        break;
      }
      case CG_ITEM_FUNC:
        rk__cg_check_function(&ch, it->fn);
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
