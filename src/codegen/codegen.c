/* Public API of the transpiler (rk/codegen.h): runs lexer -> parser ->
 * checker under one error exit, then the lowering (lower.h) and a
 * printer (emit.h). */
#include "rk/codegen.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "codegen/ast.h"
#include "codegen/check.h"
#include "codegen/emit.h"
#include "codegen/lexer.h"
#include "codegen/lower.h"
#include "codegen/parser.h"
#include "codegen/targets.h"

const char *rk_entry_kind_name(rk_entry_kind_t kind) {
  switch (kind) {
    case RK_ENTRY_KERNEL:
      return "kernel";
    case RK_ENTRY_STENCIL:
      return "stencil";
    case RK_ENTRY_HANDLER:
      return "handler";
  }
  return "unknown";
}

void rk_transpile_options_init(rk_transpile_options_t *options) {
  if (options) memset(options, 0, sizeof *options);
}

void rk_transpile_free(char *text) { free(text); }

/* Lexes, parses and checks ctx->source into *unit. On failure the status
 * and message are already recorded (rk_last_error(), ctx->diag). */
static rk_status_t front_end(cg_ctx_t *ctx, cg_unit_t *unit) {
  jmp_buf jb;
  ctx->jmp = &jb;
  if (setjmp(jb) != 0) {
    ctx->jmp = NULL;
    return ctx->status;
  }
  cg_tokens_t tokens;
  rk__cg_lex(ctx, &tokens);
  rk__cg_parse(ctx, &tokens, unit);
  rk__cg_check(ctx, unit);
  ctx->jmp = NULL;
  return RK_OK;
}

/* Lowers `unit` for the selection `entry` into *plan, under an error exit
 * of its own (lowering fails only for memory). */
static rk_status_t lower_unit(cg_ctx_t *ctx, const cg_unit_t *unit,
                              const char *entry, cg_plan_t *plan) {
  jmp_buf jb;
  ctx->jmp = &jb;
  if (setjmp(jb) != 0) {
    ctx->jmp = NULL;
    return ctx->status;
  }
  rk__cg_lower(ctx, unit, entry, false, plan);
  ctx->jmp = NULL;
  return RK_OK;
}

/* Lowers and prints `unit` (every entry point, or the one `entry` names)
 * into *out_text. The WGSL printer can refuse a source (rk__cg_error), so
 * printing runs under the same error exit as the front end. */
static rk_status_t print_unit(cg_ctx_t *ctx, const cg_unit_t *unit,
                              rk_target_t target,
                              const rk_transpile_options_t *options,
                              const char *entry, char **out_text) {
  rk__strbuf_t out;
  rk__strbuf_init(&out);
  cg_emit_options_t eo = {ctx->source_name,
                          options && options->opencl_buffer_offsets,
                          options && options->wgsl_loop_guard};
  jmp_buf jb;
  ctx->jmp = &jb;
  if (setjmp(jb) != 0) {
    ctx->jmp = NULL;
    rk__strbuf_free(&out);
    return ctx->status;
  }
  cg_plan_t plan;
  rk__cg_lower(ctx, unit, entry, options && options->persistent_actors, &plan);
  if (target == RK_TARGET_WGSL)
    rk__cg_emit_wgsl(ctx, &plan, &eo, &out);
  else
    rk__cg_emit_c_family(&plan, target, &eo, &out);
  ctx->jmp = NULL;
  if (out.failed || !out.data) {
    rk__strbuf_free(&out);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "%s: out of memory while printing",
                    ctx->source_name);
  }
  *out_text = out.data; /* ownership passes to the caller */
  return RK_OK;
}

static bool is_entry(const cg_item_t *it) {
  return it->kind == CG_ITEM_FUNC && it->fn->kind != CG_FN_HELPER &&
         it->fn->body;
}

/* The list of entry names in find_entry's message stops at this length. */
enum { kMaxNamesListed = 1000 };

/* RK_ERR_NOT_FOUND, listing the entries, when `entry` is not one. */
static rk_status_t find_entry(const cg_unit_t *unit, const char *entry,
                              const char *source_name) {
  if (!entry) return RK_OK;
  rk__strbuf_t names;
  rk__strbuf_init(&names);
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    if (!is_entry(&unit->items[i])) continue;
    if (rk__cg_entry_selected(unit->items[i].fn, entry)) {
      rk__strbuf_free(&names);
      return RK_OK;
    }
    if (names.len < kMaxNamesListed) {
      if (names.len) rk__strbuf_puts(&names, ", ");
      rk__strbuf_puts(&names, unit->items[i].fn->name);
    }
  }
  rk_status_t s = rk__fail(
      RK_ERR_NOT_FOUND, "%s has no entry point '%.128s' (it has: %s)",
      source_name, entry, names.data && !names.failed ? names.data : "none");
  rk__strbuf_free(&names);
  return s;
}

/* Starts a compilation: argument checks and the source size limit. */
static rk_status_t begin(cg_ctx_t *ctx, const char *source,
                         const rk_transpile_options_t *options,
                         const cg_caps_t *caps, rk_diagnostic_t *out_diag) {
  const char *name = options ? options->source_name : NULL;
  rk__cg_ctx_init(ctx, source ? source : "", 0, name, caps);
  if (out_diag) *out_diag = ctx->diag;
  if (!source)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "transpile: source is NULL");
  size_t len = strnlen(source, (size_t)CG_MAX_SOURCE + 1);
  if (len > CG_MAX_SOURCE)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%s: the kernel source is larger than the transpiler's "
                    "limit of %d bytes",
                    ctx->source_name, CG_MAX_SOURCE);
  ctx->source_len = len;
  return RK_OK;
}

/* Refuses a target or an option combination that cannot be printed. */
static rk_status_t check_target(rk_target_t target,
                                const rk_transpile_options_t *options,
                                rk_diagnostic_t *out_diag) {
  if (out_diag) memset(out_diag, 0, sizeof *out_diag);
  if ((unsigned)target >= RK_TARGET_COUNT_)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "transpile: unknown target %d (known: c, cuda, opencl, "
                    "wgsl, msl)",
                    (int)target);
  if (options && options->persistent_actors && target != RK_TARGET_CUDA)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "transpile: persistent_actors is for target cuda only, "
                    "not %s (persistent actor kernels are CUDA kernels)",
                    rk_target_name(target));
  if (options && options->opencl_buffer_offsets && target != RK_TARGET_OPENCL)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "transpile: opencl_buffer_offsets is for target opencl "
                    "only, not %s",
                    rk_target_name(target));
  if (options && options->wgsl_loop_guard && target != RK_TARGET_WGSL)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "transpile: wgsl_loop_guard is for target wgsl only, not "
                    "%s",
                    rk_target_name(target));
  return RK_OK;
}

rk_status_t rk_transpile_ex(const char *source, rk_target_t target,
                            const rk_transpile_options_t *options,
                            char **out_text, rk_diagnostic_t *out_diag) {
  if (out_text) *out_text = NULL;
  if (!out_text)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "transpile: out_text is NULL");
  rk_status_t s = check_target(target, options, out_diag);
  if (s != RK_OK) return s;
  cg_caps_t caps = rk__cg_target_caps(target);
  cg_ctx_t ctx;
  s = begin(&ctx, source, options, &caps, out_diag);
  if (s != RK_OK) return s;

  cg_unit_t unit;
  memset(&unit, 0, sizeof unit);
  s = front_end(&ctx, &unit);
  if (s == RK_OK)
    s = find_entry(&unit, options ? options->entry : NULL, ctx.source_name);
  if (s == RK_OK)
    s = print_unit(&ctx, &unit, target, options,
                   options ? options->entry : NULL, out_text);
  if (out_diag && s == RK_ERR_COMPILE) *out_diag = ctx.diag;
  rk__cg_ctx_free(&ctx);
  return s;
}

rk_status_t rk_transpile(const char *source, rk_target_t target,
                         const rk_transpile_options_t *options,
                         char **out_text) {
  return rk_transpile_ex(source, target, options, out_text, NULL);
}

/* ---- Entry lists ----------------------------------------------------------
 */

static rk_arg_kind_t arg_kind(const cg_type_t *t) {
  switch (t->kind) {
    case CG_TY_I32:
      return RK_ARG_I32;
    case CG_TY_U32:
      return RK_ARG_U32;
    case CG_TY_I64:
      return RK_ARG_I64;
    case CG_TY_U64:
      return RK_ARG_U64;
    case CG_TY_F32:
      return RK_ARG_F32;
    case CG_TY_F64:
      return RK_ARG_F64;
    case CG_TY_PTR:
      return RK_ARG_PTR;
    default:
      return RK_ARG_STRUCT;
  }
}

/* The C types of the status buffer and message count of handlers' and
 * batch entries' kernels, as listed. */
static const char kStatusType[] = "int32_t *";
static const char kCountType[] = "uint32_t";
static const char kPortsType[] = "uint32_t *";

/* Fills a list allocated by build_list: a bump allocator over the block. */
typedef struct list_writer {
  rk_entry_t *entries;
  rk_entry_param_t *params;
  char *str;
  size_t e, p;     /* entries and params written */
  size_t nstrings; /* string bytes needed (counting pass) */
  size_t nparams;  /* params needed (counting pass) */
  size_t nentries; /* entries needed (counting pass) */
  bool counting;
} list_writer_t;

/* Copies s into the block. */
static const char *put_string(list_writer_t *w, const char *s) {
  size_t n = strlen(s) + 1;
  if (w->counting) {
    w->nstrings += n;
    return NULL;
  }
  char *d = w->str;
  memcpy(d, s, n);
  w->str += n;
  return d;
}

static void put_param(list_writer_t *w, rk_entry_t *en, const char *name,
                      const char *type, rk_arg_kind_t kind, size_t size,
                      size_t elem_size, bool read_only) {
  if (w->counting) {
    w->nparams++;
    put_string(w, name);
    put_string(w, type);
    return;
  }
  rk_entry_param_t *ep = &w->params[w->p++];
  en->param_count++;
  ep->name = put_string(w, name);
  ep->type = put_string(w, type);
  ep->kind = kind;
  ep->size = size;
  ep->elem_size = elem_size;
  ep->read_only = read_only;
}

/* One kernel of the output, as listed. */
static void put_entry(list_writer_t *w, const cg_entry_plan_t *ep) {
  const cg_func_t *fn = ep->fn;
  rk_entry_t scratch;
  memset(&scratch, 0, sizeof scratch);
  rk_entry_t *en = w->counting ? &scratch : &w->entries[w->e++];
  if (w->counting) w->nentries++;
  char type[CG_TYPE_TEXT_MAX];
  en->name = put_string(w, ep->name);
  if (ep->form == CG_FORM_BATCH) {
    en->batch_of = put_string(w, fn->name);
    en->kind = RK_ENTRY_KERNEL;
  } else {
    en->kind = fn->kind == CG_FN_KERNEL    ? RK_ENTRY_KERNEL
               : fn->kind == CG_FN_STENCIL ? RK_ENTRY_STENCIL
                                           : RK_ENTRY_HANDLER;
  }
  if (!w->counting) en->params = &w->params[w->p];
  if (fn->kind == CG_FN_STENCIL) {
    en->dims = fn->dims;
    memcpy(en->tile, fn->tile, sizeof en->tile);
    en->halo = fn->halo;
  }
  en->uses_barrier = fn->uses_barrier;
  en->shared_bytes = (size_t)fn->shared_bytes;
  en->dynamic_shared = fn->uses_dynamic_shared;
  en->loops = ep->loops;
  for (uint32_t k = 0; k < ep->nparams; ++k) {
    const cg_var_t *v = ep->params[k].var;
    switch (ep->params[k].kind) {
      case CG_LAUNCH_PARAM: {
        rk__cg_type_describe(v->type, type, sizeof type);
        bool ptr = v->type->kind == CG_TY_PTR;
        put_param(w, en, v->name, type, arg_kind(v->type), v->type->size,
                  ptr ? v->type->elem->size : 0, ptr && v->type->elem_const);
        break;
      }
      case CG_LAUNCH_STATUS:
        /* The kernel's int32_t buffer for the handler's results. */
        en->handler_status = ep->form != CG_FORM_BATCH;
        put_param(w, en, CG_HANDLER_STATUS_NAME, kStatusType, RK_ARG_PTR,
                  sizeof(rk_devptr_t), sizeof(int32_t), false);
        break;
      case CG_LAUNCH_COUNT:
        put_param(w, en, CG_BATCH_COUNT_NAME, kCountType, RK_ARG_U32,
                  sizeof(uint32_t), 0, false);
        break;
      case CG_LAUNCH_PORTS:
        /* The output ports' control words (src/abi/k2k_abi.h). */
        put_param(w, en, CG_PORTS_NAME, kPortsType, RK_ARG_PTR,
                  sizeof(rk_devptr_t), sizeof(uint32_t), false);
        break;
      case CG_LAUNCH_PORT: {
        /* Port p's messages, as many as its credit. */
        const cg_type_t *t = fn->port_type[ep->params[k].port];
        char name[sizeof CG_PORT_PREFIX + 12];
        snprintf(name, sizeof name, CG_PORT_PREFIX "%u",
                 (unsigned)ep->params[k].port);
        rk__cg_type_describe(t, type, sizeof type);
        size_t n = strlen(type);
        if (n + 2 < sizeof type) memcpy(type + n, " *", 3);
        put_param(w, en, name, type, RK_ARG_PTR, sizeof(rk_devptr_t), t->size,
                  false);
        const char *pn = fn->port_name[ep->params[k].port];
        if (pn) {
          const char *copy = put_string(w, pn);
          if (!w->counting) w->params[w->p - 1].port_name = copy;
        }
        break;
      }
    }
  }
}

/* The listing: every kernel the selection lists (a selection naming a
 * handler lists only it, though its batch entry is printed too). */
static void put_entries(list_writer_t *w, const cg_plan_t *plan) {
  for (uint32_t i = 0; i < plan->unit->nitems; ++i) {
    const cg_func_plan_t *fp = &plan->funcs[i];
    for (uint32_t k = 0; k < fp->nentries; ++k)
      if (fp->entries[k].listed) put_entry(w, &fp->entries[k]);
  }
}

/* Copies everything into one allocation: the list, the entries, the
 * parameters, then the strings. */
static rk_status_t build_list(cg_ctx_t *ctx, const cg_unit_t *unit,
                              const char *entry, rk_entry_list_t **out) {
  cg_plan_t plan;
  rk_status_t s = lower_unit(ctx, unit, entry, &plan);
  if (s != RK_OK) return s;
  list_writer_t w;
  memset(&w, 0, sizeof w);
  w.counting = true;
  put_entries(&w, &plan);
  size_t nentries = w.nentries, nparams = w.nparams;
  size_t bytes = sizeof(rk_entry_list_t) + nentries * sizeof(rk_entry_t) +
                 nparams * sizeof(rk_entry_param_t) + w.nstrings;
  unsigned char *block = calloc(1, bytes);
  if (!block) return rk__fail(RK_ERR_OUT_OF_MEMORY, "codegen: entry list");
  rk_entry_list_t *list = (rk_entry_list_t *)block;
  memset(&w, 0, sizeof w);
  w.entries = (rk_entry_t *)(list + 1);
  w.params = (rk_entry_param_t *)(w.entries + nentries);
  w.str = (char *)(w.params + nparams);
  list->count = nentries;
  list->entries = nentries ? w.entries : NULL;
  put_entries(&w, &plan);
  *out = list;
  return RK_OK;
}

rk_status_t rk_codegen_list_entries(const char *source,
                                    const rk_transpile_options_t *options,
                                    rk_entry_list_t **out_list,
                                    rk_diagnostic_t *out_diag) {
  if (out_list) *out_list = NULL;
  if (!out_list)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "rk_codegen_list_entries: out_list is NULL");
  cg_caps_t caps = rk__cg_any_target_caps();
  cg_ctx_t ctx;
  rk_status_t s = begin(&ctx, source, options, &caps, out_diag);
  if (s != RK_OK) return s;
  cg_unit_t unit;
  memset(&unit, 0, sizeof unit);
  const char *entry = options ? options->entry : NULL;
  s = front_end(&ctx, &unit);
  if (s == RK_OK) s = find_entry(&unit, entry, ctx.source_name);
  if (s == RK_OK) s = build_list(&ctx, &unit, entry, out_list);
  if (out_diag && s == RK_ERR_COMPILE) *out_diag = ctx.diag;
  rk__cg_ctx_free(&ctx);
  return s;
}

void rk_entry_list_destroy(rk_entry_list_t *list) { free(list); }

/* ---- One compilation ------------------------------------------------------
 */

void rk_codegen_result_free(rk_codegen_result_t *result) {
  if (!result) return;
  size_t n = result->entries ? result->entries->count : 0;
  for (size_t i = 0; i < n; ++i) {
    if (result->entry_texts) free(result->entry_texts[i]);
    if (result->entry_errors) free(result->entry_errors[i]);
  }
  free(result->entry_texts);
  free(result->entry_errors);
  free(result->entry_diags);
  free(result->text);
  rk_entry_list_destroy(result->entries);
  memset(result, 0, sizeof *result);
}

static char *dup_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* With per_entry: each listed entry printed alone, or the reason it
 * cannot be. */
static rk_status_t print_entries(cg_ctx_t *ctx, const cg_unit_t *unit,
                                 rk_target_t target,
                                 const rk_transpile_options_t *options,
                                 rk_codegen_result_t *r) {
  size_t n = r->entries->count;
  r->entry_texts = calloc(n ? n : 1, sizeof *r->entry_texts);
  r->entry_errors = calloc(n ? n : 1, sizeof *r->entry_errors);
  r->entry_diags = calloc(n ? n : 1, sizeof *r->entry_diags);
  if (!r->entry_texts || !r->entry_errors || !r->entry_diags)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "codegen: entry programs");
  for (size_t i = 0; i < n; ++i) {
    if (ctx->refusal) {
      r->entry_diags[i] = ctx->refusal_diag;
      r->entry_errors[i] = dup_text(ctx->refusal);
      if (!r->entry_errors[i])
        return rk__fail(RK_ERR_OUT_OF_MEMORY, "codegen: entry programs");
      continue;
    }
    char *saved = rk__error_save();
    rk_status_t s = print_unit(ctx, unit, target, options,
                               r->entries->entries[i].name, &r->entry_texts[i]);
    if (s == RK_ERR_COMPILE) {
      /* This entry alone is refused by the printer. */
      r->entry_diags[i] = ctx->diag;
      r->entry_errors[i] = dup_text(rk_last_error());
      rk__error_restore(saved);
      if (!r->entry_errors[i])
        return rk__fail(RK_ERR_OUT_OF_MEMORY, "codegen: entry programs");
      continue;
    }
    rk__error_restore(saved);
    if (s != RK_OK) return s;
  }
  return RK_OK;
}

rk_status_t rk_codegen_compile(const char *source, rk_target_t target,
                               const rk_transpile_options_t *options,
                               rk_codegen_result_t *out_result,
                               rk_diagnostic_t *out_diag) {
  if (out_result) memset(out_result, 0, sizeof *out_result);
  if (!out_result)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "rk_codegen_compile: out_result is NULL");
  rk_status_t s = check_target(target, options, out_diag);
  if (s != RK_OK) return s;
  const bool per_entry = options && options->per_entry;
  cg_caps_t caps = rk__cg_target_caps(target);
  cg_ctx_t ctx;
  s = begin(&ctx, source, options, &caps, out_diag);
  if (s != RK_OK) return s;
  ctx.defer_refusal = per_entry;

  cg_unit_t unit;
  memset(&unit, 0, sizeof unit);
  const char *entry = options ? options->entry : NULL;
  rk_codegen_result_t r;
  memset(&r, 0, sizeof r);
  s = front_end(&ctx, &unit);
  if (s == RK_OK) s = find_entry(&unit, entry, ctx.source_name);
  if (s == RK_OK) s = build_list(&ctx, &unit, entry, &r.entries);
  if (s == RK_OK && per_entry)
    s = print_entries(&ctx, &unit, target, options, &r);
  else if (s == RK_OK)
    s = print_unit(&ctx, &unit, target, options, entry, &r.text);
  if (out_diag && s == RK_ERR_COMPILE) *out_diag = ctx.diag;
  rk__cg_ctx_free(&ctx);
  if (s != RK_OK) {
    rk_codegen_result_free(&r);
    return s;
  }
  *out_result = r;
  return RK_OK;
}
