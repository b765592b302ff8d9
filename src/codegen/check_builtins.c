/* Checker: calls of built-in functions (check_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/check_internal.h"

/* ---- Built-in calls -------------------------------------------------------
 */

cg_var_t *rk__cg_check_name_var(const cg_expr_t *e) {
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
  rk__cg_check_expr(ch, x, false);
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
    char t[CG_TYPE_TEXT_MAX], alt[64];
    snprintf(alt, sizeof alt, "%s", name);
    size_t n = strlen(alt);
    if (x->type->kind == CG_TY_U32 || x->type->kind == CG_TY_I32)
      memcpy(alt + n - 3, x->type->kind == CG_TY_U32 ? "u32" : "i32", 3);
    rk__cg_error(
        ch->ctx, x->loc, "%s works on %s elements, but '%s' holds %s%s%s", name,
        want == CG_TY_U32 ? "uint32_t" : "int32_t", v->name,
        rk__cg_check_describe(x->type, t, sizeof t),
        strcmp(alt, name) ? "; use " : "", strcmp(alt, name) ? alt : "");
  }
  a0->type = rk__cg_type_ptr(ch->ctx, x->type, false);
  for (uint32_t i = 1; i < e->call.nargs; ++i)
    e->call.args[i] =
        rk__cg_check_convert(ch, rk__cg_check_expr(ch, e->call.args[i], false),
                             scalar(want), "an atomic's argument");
  e->type = scalar(want);
  if (rk__cg_bi_atomic_op(b) == CG_ATOMIC_CAS) {
    ch->unit->uses_cas = true;
    ch->unit->uses_loop = true;
    if (ch->fn) ch->fn->uses_loop = true;
  }
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
  rk__cg_check_expr(ch, buf, false);
  cg_var_t *v = buf->name.var;
  if (v->kind != CG_VAR_PARAM || v->type->kind != CG_TY_PTR)
    rk__cg_error(ch->ctx, buf->loc,
                 "the first argument of %s must be a buffer parameter of "
                 "the stencil",
                 name);
  if (!rk__cg_is_arith(v->type->elem) || v->type->elem->kind == CG_TY_BOOL) {
    char t[CG_TYPE_TEXT_MAX];
    rk__cg_error(ch->ctx, buf->loc,
                 "neighbour reads need a buffer of numbers; '%s' holds %s",
                 v->name, rk__cg_check_describe(v->type->elem, t, sizeof t));
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
  rk__cg_check_expr(ch, pos, false);
  if (pos->name.var != fn->params[0])
    rk__cg_error(ch->ctx, pos->loc,
                 "the second argument of %s must be the stencil's position "
                 "parameter '%s'",
                 name, fn->params[0]->name);
  /* Neighbour reads take (buffer, position[, dx, dy[, dz]]). */
  enum { kFirstOffset = 2 };
  int32_t d[CG_AXES] = {0, 0, 0};
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
      for (uint32_t i = kFirstOffset; i < e->call.nargs; ++i) {
        static const char *const kWhat[] = {"dx", "dy", "dz"};
        char what[64];
        snprintf(what, sizeof what, "the offset %s of %s",
                 kWhat[i - kFirstOffset], name);
        d[i - kFirstOffset] = (int32_t)rk__cg_check_fold_int(
            ch, e->call.args[i], what, -(int64_t)fn->halo, fn->halo);
      }
      break;
    default:
      break;
  }
  for (int i = 0; i < CG_AXES; ++i)
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

/* rk_send(port, &msg) / rk_try_send(port, &msg): only in a handler's own
 * body; the port a constant 0 .. CG_MAX_PORTS - 1; the message the address
 * of a local struct variable, whose type becomes the port's (every use of
 * one port sends the same type). The result is an int: 0 queued, else why
 * not (docs/kernel-language.md, "Sending to other actors"). */
static void check_send(checker_t *ch, cg_expr_t *e) {
  const char *name = rk__cg_builtin_name(e->call.builtin);
  cg_func_t *fn = ch->fn;
  if (fn->kind != CG_FN_HANDLER)
    rk__cg_error(ch->ctx, e->loc,
                 "%s can only be used in the body of an RK_HANDLER, not in "
                 "%s '%s'",
                 name, rk__cg_check_entry_word(fn->kind), fn->name);
  char what[64];
  snprintf(what, sizeof what, "the port of %s", name);
  uint32_t port = (uint32_t)rk__cg_check_fold_int(ch, e->call.args[0], what, 0,
                                                  CG_MAX_PORTS - 1);
  /* A port named by a #define: the host finds it by that name
   * (rk_actor_port). One name per port. */
  const cg_expr_t *pe = e->call.args[0];
  if (pe->kind == CG_E_NAME && pe->name.var &&
      pe->name.var->kind == CG_VAR_MACRO) {
    const char *pn = pe->name.var->name;
    const char *had = fn->port_name[port];
    if (had && strcmp(had, pn) != 0)
      rk__cg_error(ch->ctx, pe->loc,
                   "port %u of handler '%s' is named %s (line %u), not %s: "
                   "the host finds a port by its one name",
                   (unsigned)port, fn->name, had,
                   (unsigned)fn->port_name_loc[port].line, pn);
    if (!had) {
      fn->port_name[port] = pn;
      fn->port_name_loc[port] = pe->loc;
    }
  }
  cg_expr_t *a1 = e->call.args[1];
  cg_expr_t *x = a1->kind == CG_E_ADDR ? a1->addr.operand : NULL;
  if (!x || x->kind != CG_E_NAME || x->paren)
    rk__cg_error(ch->ctx, a1->loc,
                 "the message of %s must be the address of a local struct "
                 "variable: %s(%u, &msg)",
                 name, name, (unsigned)port);
  rk__cg_check_expr(ch, x, false);
  const cg_var_t *v = x->name.var;
  if (!v || v->kind != CG_VAR_LOCAL || v->type->kind != CG_TY_STRUCT) {
    char t[CG_TYPE_TEXT_MAX];
    rk__cg_error(ch->ctx, a1->loc,
                 "the message of %s must be the address of a local struct "
                 "variable; '%s' is %s%s",
                 name, x->name.name,
                 v && v->kind != CG_VAR_LOCAL ? "not a local variable: " : "",
                 v ? rk__cg_check_describe(v->type, t, sizeof t) : "unknown");
  }
  const cg_type_t *prev = fn->port_type[port];
  if (prev && prev != v->type) {
    char a[CG_TYPE_TEXT_MAX], b[CG_TYPE_TEXT_MAX];
    rk__cg_error(ch->ctx, a1->loc,
                 "port %u of handler '%s' carries %s (first used on line "
                 "%u), not %s: every message of one port has the same type",
                 (unsigned)port, fn->name,
                 rk__cg_check_describe(prev, a, sizeof a),
                 (unsigned)fn->port_loc[port].line,
                 rk__cg_check_describe(v->type, b, sizeof b));
  }
  if (!prev) {
    fn->port_type[port] = v->type;
    fn->port_loc[port] = e->loc;
    if (port + 1 > fn->nports) fn->nports = port + 1;
  }
  a1->type = rk__cg_type_ptr(ch->ctx, v->type, true);
  e->call.port = port;
  e->type = scalar(CG_TY_I32);
}

void rk__cg_check_builtin(checker_t *ch, cg_expr_t *e, bool top) {
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
                     rk__cg_check_entry_word(fn->kind), fn->name);
      fn->uses_barrier = true;
    }
    e->type = scalar(CG_TY_VOID);
  } else if (rk__cg_bi_is_atomic(b)) {
    check_atomic(ch, e);
  } else if (rk__cg_bi_is_math(b)) {
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      cg_expr_t *a = rk__cg_check_expr(ch, e->call.args[i], false);
      rk__cg_check_arith_operand(ch, a, CG_OP_NONE, false);
      e->call.args[i] = rk__cg_check_convert(ch, a, scalar(CG_TY_F32), name);
    }
    e->type = scalar(CG_TY_F32);
  } else if (rk__cg_bi_is_stencil(b)) {
    check_stencil_read(ch, e);
  } else if (rk__cg_bi_is_send(b)) {
    check_send(ch, e);
  }
}
