/* Public API of the transpiler (rk/codegen.h): runs lexer -> parser ->
 * checker under one error exit, then a printer. */
#include "rk/codegen.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "codegen/ast.h"
#include "codegen/check.h"
#include "codegen/emit.h"
#include "codegen/lexer.h"
#include "codegen/parser.h"

static const char *const kTargetNames[RK_TARGET_COUNT_] = {
    [RK_TARGET_C] = "c",           [RK_TARGET_CUDA] = "cuda",
    [RK_TARGET_OPENCL] = "opencl", [RK_TARGET_WGSL] = "wgsl",
    [RK_TARGET_MSL] = "msl",
};

const char *rk_target_name(rk_target_t target) {
  return (unsigned)target < RK_TARGET_COUNT_ ? kTargetNames[target] : "unknown";
}

rk_status_t rk_target_from_name(const char *name, rk_target_t *out_target) {
  if (!name || !out_target)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "rk_target_from_name: NULL");
  for (int t = 0; t < RK_TARGET_COUNT_; ++t) {
    const char *a = kTargetNames[t], *b = name;
    while (*a && tolower((unsigned char)*b) == *a) a++, b++;
    if (!*a && !*b) {
      *out_target = (rk_target_t)t;
      return RK_OK;
    }
  }
  return rk__fail(RK_ERR_INVALID_ARGUMENT,
                  "unknown target '%.64s' (known: c, cuda, opencl, wgsl, msl)",
                  name);
}

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

/* What each target can express (the checker refuses the rest). */
static cg_caps_t target_caps(rk_target_t target) {
  cg_caps_t caps = {rk_target_name(target), true, true};
  if (target == RK_TARGET_MSL) caps.f64 = false;
  if (target == RK_TARGET_WGSL) caps.i64 = caps.f64 = false;
  return caps;
}

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

/* The WGSL printer can refuse a source (rk__cg_error), so it runs under
 * the same error exit as the front end. */
static rk_status_t print_wgsl(cg_ctx_t *ctx, const cg_unit_t *unit,
                              const cg_emit_options_t *eo, rk__strbuf_t *out) {
  jmp_buf jb;
  ctx->jmp = &jb;
  if (setjmp(jb) != 0) {
    ctx->jmp = NULL;
    return ctx->status;
  }
  rk__cg_emit_wgsl(ctx, unit, eo, out);
  ctx->jmp = NULL;
  return RK_OK;
}

static bool is_entry(const cg_item_t *it) {
  return it->kind == CG_ITEM_FUNC && it->fn->kind != CG_FN_HELPER &&
         it->fn->body;
}

/* RK_ERR_NOT_FOUND, listing the entries, when `entry` is not one. */
static rk_status_t find_entry(const cg_unit_t *unit, const char *entry,
                              const char *source_name) {
  if (!entry) return RK_OK;
  rk__strbuf_t names;
  rk__strbuf_init(&names);
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    if (!is_entry(&unit->items[i])) continue;
    if (strcmp(unit->items[i].fn->name, entry) == 0) {
      rk__strbuf_free(&names);
      return RK_OK;
    }
    if (names.len < 1000) {
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

rk_status_t rk_transpile_ex(const char *source, rk_target_t target,
                            const rk_transpile_options_t *options,
                            char **out_text, rk_diagnostic_t *out_diag) {
  if (out_text) *out_text = NULL;
  if (!out_text)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "transpile: out_text is NULL");
  if ((unsigned)target >= RK_TARGET_COUNT_)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "transpile: unknown target %d (known: c, cuda, opencl, "
                    "wgsl, msl)",
                    (int)target);
  cg_caps_t caps = target_caps(target);
  cg_ctx_t ctx;
  rk_status_t s = begin(&ctx, source, options, &caps, out_diag);
  if (s != RK_OK) return s;

  cg_unit_t unit;
  memset(&unit, 0, sizeof unit);
  s = front_end(&ctx, &unit);
  if (s == RK_OK)
    s = find_entry(&unit, options ? options->entry : NULL, ctx.source_name);
  if (s == RK_OK) {
    rk__strbuf_t out;
    rk__strbuf_init(&out);
    cg_emit_options_t eo = {ctx.source_name, options ? options->entry : NULL};
    if (target == RK_TARGET_WGSL)
      s = print_wgsl(&ctx, &unit, &eo, &out);
    else
      rk__cg_emit_c_family(&unit, target, &eo, &out);
    if (s != RK_OK) {
      rk__strbuf_free(&out);
    } else if (out.failed || !out.data) {
      rk__strbuf_free(&out);
      s = rk__fail(RK_ERR_OUT_OF_MEMORY, "%s: out of memory while printing",
                   ctx.source_name);
    } else {
      *out_text = out.data; /* ownership passes to the caller */
    }
  }
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

static bool wanted(const cg_item_t *it, const char *entry) {
  return is_entry(it) && (!entry || strcmp(it->fn->name, entry) == 0);
}

/* The C type of an int handler's status parameter, as listed. */
static const char kStatusType[] = "int32_t *";

/* Copies everything into one allocation: the list, the entries, the
 * parameters, then the strings. */
static rk_status_t build_list(const cg_unit_t *unit, const char *entry,
                              rk_entry_list_t **out) {
  size_t nentries = 0, nparams = 0, strings = 0;
  char type[256];
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    if (!wanted(it, entry)) continue;
    const cg_func_t *fn = it->fn;
    nentries++;
    strings += strlen(fn->name) + 1;
    for (uint32_t k = fn->kind == CG_FN_STENCIL ? 1 : 0; k < fn->nparams; ++k) {
      nparams++;
      rk__cg_type_describe(fn->params[k]->type, type, sizeof type);
      strings += strlen(fn->params[k]->name) + 1 + strlen(type) + 1;
    }
    if (rk__cg_handler_status(fn)) {
      nparams++;
      strings += sizeof CG_HANDLER_STATUS_NAME + sizeof kStatusType;
    }
  }
  size_t bytes = sizeof(rk_entry_list_t) + nentries * sizeof(rk_entry_t) +
                 nparams * sizeof(rk_entry_param_t) + strings;
  unsigned char *block = calloc(1, bytes);
  if (!block) return rk__fail(RK_ERR_OUT_OF_MEMORY, "codegen: entry list");
  rk_entry_list_t *list = (rk_entry_list_t *)block;
  rk_entry_t *entries = (rk_entry_t *)(list + 1);
  rk_entry_param_t *params = (rk_entry_param_t *)(entries + nentries);
  char *str = (char *)(params + nparams);
  list->count = nentries;
  list->entries = nentries ? entries : NULL;

  size_t e = 0, p = 0;
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    if (!wanted(it, entry)) continue;
    const cg_func_t *fn = it->fn;
    rk_entry_t *en = &entries[e++];
    size_t n = strlen(fn->name) + 1;
    memcpy(str, fn->name, n);
    en->name = str;
    str += n;
    en->kind = fn->kind == CG_FN_KERNEL    ? RK_ENTRY_KERNEL
               : fn->kind == CG_FN_STENCIL ? RK_ENTRY_STENCIL
                                           : RK_ENTRY_HANDLER;
    en->params = &params[p];
    if (fn->kind == CG_FN_STENCIL) {
      en->dims = fn->dims;
      memcpy(en->tile, fn->tile, sizeof en->tile);
      en->halo = fn->halo;
    }
    en->uses_barrier = fn->uses_barrier;
    en->shared_bytes = (size_t)fn->shared_bytes;
    for (uint32_t k = fn->kind == CG_FN_STENCIL ? 1 : 0; k < fn->nparams; ++k) {
      const cg_var_t *v = fn->params[k];
      rk_entry_param_t *ep = &params[p++];
      en->param_count++;
      n = strlen(v->name) + 1;
      memcpy(str, v->name, n);
      ep->name = str;
      str += n;
      rk__cg_type_describe(v->type, type, sizeof type);
      n = strlen(type) + 1;
      memcpy(str, type, n);
      ep->type = str;
      str += n;
      ep->kind = arg_kind(v->type);
      ep->size = v->type->size;
      if (v->type->kind == CG_TY_PTR) {
        ep->elem_size = v->type->elem->size;
        ep->read_only = v->type->elem_const;
      }
    }
    if (rk__cg_handler_status(fn)) {
      /* The kernel's trailing int32_t buffer for the handler's result. */
      rk_entry_param_t *ep = &params[p++];
      en->param_count++;
      en->handler_status = true;
      memcpy(str, CG_HANDLER_STATUS_NAME, sizeof CG_HANDLER_STATUS_NAME);
      ep->name = str;
      str += sizeof CG_HANDLER_STATUS_NAME;
      memcpy(str, kStatusType, sizeof kStatusType);
      ep->type = str;
      str += sizeof kStatusType;
      ep->kind = RK_ARG_PTR;
      ep->size = sizeof(rk_devptr_t);
      ep->elem_size = sizeof(int32_t);
      ep->read_only = false;
    }
  }
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
  cg_caps_t caps = {NULL, true, true};
  cg_ctx_t ctx;
  rk_status_t s = begin(&ctx, source, options, &caps, out_diag);
  if (s != RK_OK) return s;
  cg_unit_t unit;
  memset(&unit, 0, sizeof unit);
  const char *entry = options ? options->entry : NULL;
  s = front_end(&ctx, &unit);
  if (s == RK_OK) s = find_entry(&unit, entry, ctx.source_name);
  if (s == RK_OK) s = build_list(&unit, entry, out_list);
  if (out_diag && s == RK_ERR_COMPILE) *out_diag = ctx.diag;
  rk__cg_ctx_free(&ctx);
  return s;
}

void rk_entry_list_destroy(rk_entry_list_t *list) { free(list); }
