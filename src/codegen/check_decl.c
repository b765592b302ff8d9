/* Checker: functions, their signatures and bodies (check_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/check_internal.h"
#include "codegen/targets.h"

/* ---- Functions ------------------------------------------------------------
 */

static void check_entry_param(checker_t *ch, cg_func_t *fn, cg_var_t *v) {
  char a[CG_TYPE_TEXT_MAX];
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
                 v->name, rk__cg_check_entry_word(fn->kind), fn->name,
                 (unsigned)t->size, CG_MAX_STRUCT_ARG);
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
                   rk__cg_check_describe(t, a, sizeof a));
  }
}

static void resolve_param(checker_t *ch, cg_func_t *fn, cg_var_t *v) {
  const cg_type_t *base = rk__cg_check_resolve_base(ch, &v->spec);
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
    fn->tile[i] = (uint32_t)rk__cg_check_fold_int(ch, fn->tile_exprs[i], what,
                                                  1, CG_MAX_TILE_THREADS);
    threads *= fn->tile[i];
  }
  if (fn->dims == 2) fn->tile[2] = 1;
  fn->halo = (uint32_t)rk__cg_check_fold_int(
      ch, fn->halo_expr, "the stencil's halo", 0, CG_MAX_HALO);
  if (threads > CG_MAX_TILE_THREADS)
    rk__cg_error(ch->ctx, fn->tile_exprs[0]->loc,
                 "the tile of stencil '%s' has %llu threads; a block may "
                 "have at most %d",
                 fn->name, (unsigned long long)threads, CG_MAX_TILE_THREADS);
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

void rk__cg_check_function(checker_t *ch, cg_func_t *fn) {
  char a[CG_TYPE_TEXT_MAX];
  /* Return type. */
  const cg_type_t *ret = rk__cg_check_resolve_base(ch, &fn->ret_spec);
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
                   rk__cg_check_describe(ret, a, sizeof a));
  } else if (fn->kind != CG_FN_HELPER && ret->kind != CG_TY_VOID) {
    rk__cg_error(ch->ctx, fn->ret_spec.loc, "an %s function must return void",
                 rk__cg_check_fn_kind_name(fn->kind));
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
      if (fn->nparams < CG_HANDLER_STATE || fn->nparams > CG_HANDLER_MAX_PARAMS)
        rk__cg_error(ch->ctx, fn->loc,
                     "an RK_HANDLER takes (const IN *in, OUT *out) or "
                     "(const IN *in, OUT *out, STATE *state)");
      for (uint32_t i = 0; i < fn->nparams; ++i) {
        cg_var_t *v = fn->params[i];
        if (v->type->kind != CG_TY_PTR || v->type->elem->kind != CG_TY_STRUCT)
          rk__cg_error(ch->ctx, v->spec.loc,
                       "handler parameter '%s' must be a pointer to a "
                       "struct (the message%s), not %s",
                       v->name, i == CG_HANDLER_STATE ? " state" : "",
                       rk__cg_check_describe(v->type, a, sizeof a));
        if (i == CG_HANDLER_IN && !v->type->elem_const)
          rk__cg_error(ch->ctx, v->spec.loc,
                       "the input message must be read-only: const %s *%s",
                       rk__cg_check_describe(v->type->elem, a, sizeof a),
                       v->name);
        if (i != CG_HANDLER_IN && v->type->elem_const)
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
    b = rk__cg_check_declare(ch, fn->name, fn->loc);
    b->fn = fn;
    fn->def = fn->body ? fn : NULL;
  }
  if (!fn->body) return;

  ch->fn = fn;
  ch->binding_dynshared = NULL;
  rk__cg_check_push_scope(ch);
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    binding_t *pb =
        rk__cg_check_declare(ch, fn->params[i]->name, fn->params[i]->loc);
    pb->var = fn->params[i];
  }
  ch->block_depth = 1;
  ch->loops = ch->breakables = 0;
  rk__cg_check_block_items(ch, fn->body);
  rk__cg_check_pop_scope(ch);
  ch->fn = NULL;

  if (fn->kind == CG_FN_STENCIL) {
    uint64_t cells = 1;
    for (uint32_t d = 0; d < fn->dims; ++d) cells *= fn->tile[d] + 2 * fn->halo;
    for (uint32_t i = 0; i < fn->tiled.n; ++i)
      fn->shared_bytes +=
          cells * ((const cg_var_t *)fn->tiled.v[i])->type->elem->size;
  }
}
