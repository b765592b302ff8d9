/* Checker: local declarations and statements (check_internal.h). */
#include <stdlib.h>

#include "codegen/check_internal.h"

/* ---- Declarations ---------------------------------------------------------
 */

static cg_expr_t *check_init(checker_t *ch, cg_expr_t *init, const cg_type_t *t,
                             const char *name) {
  char a[CG_TYPE_TEXT_MAX];
  if (init->kind != CG_E_INIT_LIST) {
    if (t->kind == CG_TY_ARRAY)
      rk__cg_error(ch->ctx, init->loc,
                   "array '%s' must be initialized with { ... }", name);
    return rk__cg_check_convert(ch, rk__cg_check_expr(ch, init, false), t,
                                "the initializer");
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
                   "too many initializers for %s",
                   rk__cg_check_describe(t, a, sizeof a));
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
  char a[CG_TYPE_TEXT_MAX], b[CG_TYPE_TEXT_MAX];
  cg_func_t *fn = ch->fn;
  if (fn->kind != CG_FN_KERNEL)
    rk__cg_error(ch->ctx, v->init->loc,
                 "rk_dynamic_shared() is only available in RK_KERNEL "
                 "functions, not in %s '%s'",
                 rk__cg_check_entry_word(fn->kind), fn->name);
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
                 rk__cg_check_describe(base, a, sizeof a));
  cg_expr_t *cast = v->init;
  const cg_type_t *to = rk__cg_check_resolve_base(ch, &cast->cast.spec);
  if (to != base || cast->cast.spec.base_const != v->spec.base_const)
    rk__cg_error(ch->ctx, cast->loc,
                 "the cast must give the variable's own type: (%s%s *), not "
                 "(%s%s *)",
                 v->spec.base_const ? "const " : "",
                 rk__cg_check_describe(base, a, sizeof a),
                 cast->cast.spec.base_const ? "const " : "",
                 rk__cg_check_describe(to, b, sizeof b));
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
  binding_t *bd = rk__cg_check_declare(ch, v->name, v->loc);
  bd->var = v;
}

static void check_local(checker_t *ch, cg_var_t *v, uint32_t ndecl) {
  char a[CG_TYPE_TEXT_MAX];
  cg_func_t *fn = ch->fn;
  const cg_type_t *base = rk__cg_check_resolve_base(ch, &v->spec);
  if (v->spec.is_ptr && v->kind == CG_VAR_LOCAL &&
      rk__cg_check_is_dynamic_shared_init(v->init)) {
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
  v->type = rk__cg_check_apply_dims(ch, base, v->dims, v->ndims);
  v->is_const = v->spec.base_const;
  if (v->kind == CG_VAR_SHARED) {
    if (fn->kind != CG_FN_KERNEL)
      rk__cg_error(ch->ctx, v->loc,
                   "RK_SHARED arrays are only allowed in RK_KERNEL "
                   "functions, not in %s '%s'",
                   rk__cg_check_entry_word(fn->kind), fn->name);
    if (ch->block_depth != 1)
      rk__cg_error(ch->ctx, v->loc,
                   "declare RK_SHARED arrays in the outermost block of the "
                   "kernel (OpenCL and Metal need them at kernel scope)");
    if (v->type->kind != CG_TY_ARRAY)
      rk__cg_error(ch->ctx, v->loc,
                   "RK_SHARED declares an array: RK_SHARED %s %s[N];",
                   rk__cg_check_describe(base, a, sizeof a), v->name);
    if (v->init)
      rk__cg_error(ch->ctx, v->init->loc,
                   "RK_SHARED arrays cannot be initialized; fill them in "
                   "the kernel, then call rk_sync_threads()");
    if (v->is_const)
      rk__cg_error(ch->ctx, v->loc, "RK_SHARED arrays cannot be const");
    fn->shared_bytes += v->type->size;
  }
  binding_t *b = rk__cg_check_declare(ch, v->name, v->loc);
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
  rk__cg_check_expr(ch, e, true);
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
  char a[CG_TYPE_TEXT_MAX];
  cg_expr_t *v =
      rk__cg_check_rvalue(ch, rk__cg_check_expr(ch, s->switch_.value, false));
  if (!rk__cg_is_integer(v->type))
    rk__cg_error(ch->ctx, v->loc, "switch needs an integer value, not %s",
                 rk__cg_check_describe(v->type, a, sizeof a));
  const cg_type_t *st = scalar(rk__cg_check_promote_kind(v->type->kind));
  s->switch_.value = rk__cg_check_convert(ch, v, st, "a switch");
  cg_stmt_t *body = s->switch_.body;
  rk__cg_check_push_scope(ch);
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
      int64_t val = rk__cg_check_fold_int(ch, item->case_.value, "a case value",
                                          INT64_MIN, INT64_MAX);
      uint64_t bits = (uint64_t)val;
      item->case_.folded = rk__cg_check_wrap_int(st->kind, bits);
      item->case_.value =
          rk__cg_check_convert(ch, item->case_.value, st, "a case value");
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
  rk__cg_check_pop_scope(ch);
}

void rk__cg_check_block_items(checker_t *ch, cg_stmt_t *s) {
  for (uint32_t i = 0; i < s->block.n; ++i) check_stmt(ch, s->block.items[i]);
}

static void check_stmt(checker_t *ch, cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BLOCK:
      rk__cg_check_push_scope(ch);
      ch->block_depth++;
      rk__cg_check_block_items(ch, s);
      ch->block_depth--;
      rk__cg_check_pop_scope(ch);
      return;
    case CG_S_DECL:
      for (uint32_t i = 0; i < s->decl.n; ++i)
        check_local(ch, s->decl.vars[i], s->decl.n);
      return;
    case CG_S_EXPR:
      check_expr_stmt(ch, s->expr);
      return;
    case CG_S_IF:
      s->if_.cond = rk__cg_check_to_bool(
          ch, rk__cg_check_expr(ch, s->if_.cond, false), "'if'");
      check_body_stmt(ch, s->if_.then, "'if'");
      if (s->if_.other) check_body_stmt(ch, s->if_.other, "'else'");
      return;
    case CG_S_WHILE:
    case CG_S_DO:
      ch->fn->uses_loop = ch->unit->uses_loop = true;
      s->loop.cond =
          rk__cg_check_to_bool(ch, rk__cg_check_expr(ch, s->loop.cond, false),
                               s->kind == CG_S_WHILE ? "'while'" : "'do'");
      ch->loops++;
      ch->breakables++;
      check_body_stmt(ch, s->loop.body,
                      s->kind == CG_S_WHILE ? "'while'" : "'do'");
      ch->loops--;
      ch->breakables--;
      return;
    case CG_S_FOR:
      ch->fn->uses_loop = ch->unit->uses_loop = true;
      rk__cg_check_push_scope(ch);
      ch->block_depth++;
      if (s->for_.init) check_stmt(ch, s->for_.init);
      if (s->for_.cond)
        s->for_.cond = rk__cg_check_to_bool(
            ch, rk__cg_check_expr(ch, s->for_.cond, false), "'for'");
      if (s->for_.step) {
        cg_expr_t *st = s->for_.step;
        rk__cg_check_expr(ch, st, true);
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
      rk__cg_check_pop_scope(ch);
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
        s->expr =
            rk__cg_check_convert(ch, rk__cg_check_expr(ch, s->expr, false),
                                 fn->ret, "the return value");
      }
      return;
    }
    case CG_S_EMPTY:
      return;
  }
}
