/* Lowering of stencils and handlers into the kernels of the output
 * (lower.h). */
#include "codegen/lower.h"

#include <string.h>

bool rk__cg_entry_selected(const cg_func_t *fn, const char *entry) {
  if (fn->kind == CG_FN_HELPER || !fn->body) return false;
  if (!entry || strcmp(fn->name, entry) == 0) return true;
  size_t n = sizeof CG_BATCH_PREFIX - 1;
  return fn->kind == CG_FN_HANDLER && strncmp(entry, CG_BATCH_PREFIX, n) == 0 &&
         strcmp(entry + n, fn->name) == 0;
}

enum {
  kMaxKernels = 2, /* a function becomes: a handler's own and batch */
  /* launch parameters beyond the source's: rk_status, rk_count, rk_ports
   * and one buffer per port */
  kMaxExtraParams = 3 + CG_MAX_PORTS,
};

/* ---- Stencils ---------------------------------------------------------- */

static cg_stencil_plan_t *lower_stencil(cg_ctx_t *ctx, const cg_func_t *fn) {
  cg_stencil_plan_t *s = rk__cg_alloc(ctx, sizeof *s);
  const uint32_t D = fn->dims, H = fn->halo;
  s->dims = D;
  s->halo = H;
  s->pos = fn->params[0];
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    s->tile[a] = a < D ? fn->tile[a] : 1;
    s->extent[a] = a < D ? fn->params[1 + a] : NULL;
    s->full[a] = a < D ? fn->tile[a] + 2 * H : 1;
  }
  s->tiled = (const cg_var_t *const *)fn->tiled.v;
  s->ntiled = fn->tiled.n;
  s->blocked = ctx->caps.staged_stencils;
  s->staged = s->blocked && s->ntiled > 0;
  s->cells = s->full[0] * s->full[1] * s->full[2];
  s->threads = s->tile[0] * s->tile[1] * s->tile[2];
  /* Cell i of the staged tile, x fastest: x = i % fx, y = i / fx (% fy in
   * 3D), z = i / (fx * fy). */
  s->cell_mod[0] = s->full[0];
  s->cell_div[1] = s->full[0];
  if (D == 3) {
    s->cell_mod[1] = s->full[1];
    s->cell_div[2] = s->full[0] * s->full[1];
  }
  return s;
}

/* ---- Handlers ---------------------------------------------------------- */

static cg_handler_plan_t *lower_handler(cg_ctx_t *ctx, const cg_func_t *fn,
                                        bool actor) {
  cg_handler_plan_t *h = rk__cg_alloc(ctx, sizeof *h);
  h->handle_name = rk__cg_concat(ctx, CG_HANDLE_PREFIX, fn->name, "");
  h->in = fn->params[CG_HANDLER_IN];
  h->out = fn->params[CG_HANDLER_OUT];
  h->state =
      fn->nparams > CG_HANDLER_STATE ? fn->params[CG_HANDLER_STATE] : NULL;
  h->status = rk__cg_handler_status(fn);
  h->actor = actor;
  h->nports = fn->nports;
  h->port_type = fn->port_type;
  h->status_param = h->status || h->nports;
  return h;
}

/* ---- Kernels ----------------------------------------------------------- */

/* The kernel of fn in form `form`: its launch parameters are fn's own (a
 * stencil's position left out), then rk_status for an int handler's
 * kernel and every batch kernel, then a batch kernel's rk_count. */
static void lower_entry(cg_ctx_t *ctx, cg_entry_plan_t *ep, const cg_func_t *fn,
                        cg_entry_form_t form, const char *entry) {
  ep->fn = fn;
  ep->form = form;
  bool batch = form == CG_FORM_BATCH;
  ep->name =
      batch ? rk__cg_concat(ctx, CG_BATCH_PREFIX, fn->name, "") : fn->name;
  uint32_t first = form == CG_FORM_STENCIL ? 1 : 0;
  cg_launch_param_t *params = rk__cg_alloc(
      ctx, (size_t)(fn->nparams - first + kMaxExtraParams) * sizeof *params);
  uint32_t n = 0;
  for (uint32_t i = first; i < fn->nparams; ++i) {
    params[n].kind = CG_LAUNCH_PARAM;
    params[n++].var = fn->params[i];
  }
  bool ports = (form == CG_FORM_HANDLER || batch) && fn->nports > 0;
  if (batch ||
      (form == CG_FORM_HANDLER && (rk__cg_handler_status(fn) || ports))) {
    params[n++].kind = CG_LAUNCH_STATUS;
    ep->has_status = true;
  }
  if (batch) params[n++].kind = CG_LAUNCH_COUNT;
  if (ports) {
    params[n++].kind = CG_LAUNCH_PORTS;
    for (uint32_t p = 0; p < fn->nports; ++p) {
      if (!fn->port_type[p]) continue;
      params[n].kind = CG_LAUNCH_PORT;
      params[n++].port = p;
    }
  }
  ep->params = params;
  ep->nparams = n;
  ep->dyn_shared = fn->uses_dynamic_shared && !batch;
  /* A selection naming a handler lists only it, though both kernels are
   * printed. */
  ep->listed = !batch || !entry || strcmp(entry, fn->name) != 0;
  ep->loops = fn->uses_loop || batch;
}

static void lower_func(cg_ctx_t *ctx, cg_func_plan_t *fp, const cg_func_t *fn,
                       const char *entry, bool persistent_actors) {
  fp->fn = fn;
  fp->selected = rk__cg_entry_selected(fn, entry);
  if (!fp->selected) return;
  fp->entries = rk__cg_alloc(ctx, kMaxKernels * sizeof *fp->entries);
  switch (fn->kind) {
    case CG_FN_KERNEL:
      lower_entry(ctx, &fp->entries[fp->nentries++], fn, CG_FORM_KERNEL, entry);
      return;
    case CG_FN_STENCIL:
      fp->stencil = lower_stencil(ctx, fn);
      lower_entry(ctx, &fp->entries[fp->nentries++], fn, CG_FORM_STENCIL,
                  entry);
      fp->entries[0].loops |= fp->stencil->staged;
      return;
    case CG_FN_HANDLER: {
      /* Its own kernel, unless the selection names the batch entry. */
      bool single = !entry || strcmp(fn->name, entry) == 0;
      fp->handler = lower_handler(ctx, fn, persistent_actors && single);
      if (single)
        lower_entry(ctx, &fp->entries[fp->nentries++], fn, CG_FORM_HANDLER,
                    entry);
      lower_entry(ctx, &fp->entries[fp->nentries++], fn, CG_FORM_BATCH, entry);
      return;
    }
    default:
      return;
  }
}

void rk__cg_lower(cg_ctx_t *ctx, const cg_unit_t *unit, const char *entry,
                  bool persistent_actors, cg_plan_t *out) {
  memset(out, 0, sizeof *out);
  out->unit = unit;
  out->funcs = rk__cg_alloc(
      ctx, (size_t)(unit->nitems ? unit->nitems : 1) * sizeof *out->funcs);
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    if (unit->items[i].kind != CG_ITEM_FUNC) continue;
    cg_func_plan_t *fp = &out->funcs[i];
    lower_func(ctx, fp, unit->items[i].fn, entry, persistent_actors);
    if (!fp->selected) continue;
    out->nselected++;
    out->dyn_shared |= fp->fn->uses_dynamic_shared;
  }
}
