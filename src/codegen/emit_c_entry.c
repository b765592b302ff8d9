/* The C-family printer: the kernels of the plan (lower.h), their
 * signatures, stencil prologues and handler wrappers (emit_c_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/emit_c_internal.h"

static const char *kIndexParams =
    "uint3 rk_tid [[thread_position_in_threadgroup]],\n"
    "    uint3 rk_bid [[threadgroup_position_in_grid]],\n"
    "    uint3 rk_bdim [[threads_per_threadgroup]],\n"
    "    uint3 rk_gdim [[threadgroups_per_grid]]";

/* The int32_t status buffer of an int handler's kernel and of every batch
 * entry (lower.h). */
static void status_decl(printer_t *p) {
  rk__cg_c_printf(p, "%s%s *" CG_HANDLER_STATUS_NAME, p->t->global_space,
                  p->t->types[CG_TY_I32]);
}

/* The element type of a port launch parameter: port p's message type, or
 * uint32_t for rk_ports (p < 0). */
static void port_elem(printer_t *p, const cg_launch_param_t *lp) {
  if (lp->kind == CG_LAUNCH_PORTS)
    puts_(p, p->t->types[CG_TY_U32]);
  else
    rk__cg_c_type_name(p, p->fn->port_type[lp->port]);
}

/* The name of a port launch parameter, in buf. */
static const char *port_name(const cg_launch_param_t *lp,
                             char buf[sizeof CG_PORT_PREFIX + 12]) {
  if (lp->kind == CG_LAUNCH_PORTS) return CG_PORTS_NAME;
  snprintf(buf, sizeof CG_PORT_PREFIX + 12, CG_PORT_PREFIX "%u",
           (unsigned)lp->port);
  return buf;
}

/* rk_ports or rk_port<p> as a parameter; with buffer offsets (OpenCL) the
 * buffer and its offset, and `prologue` the declaration at the offset. */
static void port_decl(printer_t *p, const cg_launch_param_t *lp, bool offsets,
                      bool prologue) {
  char buf[sizeof CG_PORT_PREFIX + 12];
  const char *name = port_name(lp, buf);
  if (prologue) {
    rk__cg_c_printf(p, " %s", p->t->global_space);
    port_elem(p, lp);
    rk__cg_c_printf(p, " *%s = (%s", name, p->t->global_space);
    port_elem(p, lp);
    rk__cg_c_printf(p, " *)((%suchar *)rk_pb_%s + rk_po_%s);",
                    p->t->global_space, name, name);
    return;
  }
  puts_(p, p->t->global_space);
  port_elem(p, lp);
  if (offsets)
    rk__cg_c_printf(p, " *rk_pb_%s, ulong rk_po_%s", name, name);
  else
    rk__cg_c_printf(p, " *%s", name);
}

/* With buffer offsets (OpenCL), pointer launch parameter `name` of element
 * type `elem` (printed by the callback) is declared as the buffer
 * `rk_pb_<name>` and the byte offset `ulong rk_po_<name>`; the prologue
 * (printed on the line of the body's brace, so line numbers stay put)
 * declares `name` itself at that offset. */
typedef void (*elem_printer_fn)(printer_t *p, const cg_var_t *v);

static void elem_of_var(printer_t *p, const cg_var_t *v) {
  if (v->type->elem_const) puts_(p, "const ");
  rk__cg_c_type_name(p, v->type->elem);
}

static void elem_i32(printer_t *p, const cg_var_t *v) {
  (void)v;
  puts_(p, p->t->types[CG_TY_I32]);
}

static void offset_param_decl(printer_t *p, const cg_var_t *v,
                              elem_printer_fn elem, const char *name) {
  puts_(p, p->t->global_space);
  elem(p, v);
  rk__cg_c_printf(p, " *rk_pb_%s, ulong rk_po_%s", name, name);
}

static void offset_prologue(printer_t *p, const cg_var_t *v,
                            elem_printer_fn elem, const char *name) {
  puts_(p, " ");
  puts_(p, p->t->global_space);
  elem(p, v);
  puts_(p, " *");
  if (v && v->is_const) puts_(p, "const ");
  if (v && v->is_restrict && p->t->restrict_kw)
    rk__cg_c_printf(p, "%s ", p->t->restrict_kw);
  rk__cg_c_printf(p, "%s = (%s", name, p->t->global_space);
  elem(p, v);
  rk__cg_c_printf(p, " *)((%suchar *)rk_pb_%s + rk_po_%s);", p->t->global_space,
                  name, name);
}

/* The printed name of pointer parameter v, in buf. */
typedef char param_name_t[sizeof CG_RENAME_PREFIX + CG_MAX_IDENT];

static const char *param_name(printer_t *p, const cg_var_t *v,
                              param_name_t buf) {
  snprintf(
      buf, sizeof(param_name_t), "%s%s",
      rk__cg_target_reserves(p->t->target, v->name) ? CG_RENAME_PREFIX : "",
      v->name);
  return buf;
}

/* Launch parameter i of kernel ep; i == ep->nparams is OpenCL's hidden
 * __local buffer for rk_dynamic_shared(). */
static void launch_param_decl(printer_t *p, const cg_entry_plan_t *ep,
                              uint32_t i) {
  param_name_t buf;
  if (i == ep->nparams) {
    /* A 16-byte element: a local-memory argument is placed at the
     * alignment of what it points to, and the area is used as any type. */
    puts_(p, "__local uint4 *rk_dyn_shared");
    return;
  }
  const cg_launch_param_t *lp = &ep->params[i];
  switch (lp->kind) {
    case CG_LAUNCH_PARAM:
      if (p->buffer_offsets && lp->var->type->kind == CG_TY_PTR)
        offset_param_decl(p, lp->var, elem_of_var, param_name(p, lp->var, buf));
      else
        rk__cg_c_param_decl(p, lp->var);
      return;
    case CG_LAUNCH_STATUS:
      if (p->buffer_offsets)
        offset_param_decl(p, NULL, elem_i32, CG_HANDLER_STATUS_NAME);
      else
        status_decl(p);
      return;
    case CG_LAUNCH_COUNT:
      rk__cg_c_printf(p, "%s " CG_BATCH_COUNT_NAME, p->t->types[CG_TY_U32]);
      return;
    case CG_LAUNCH_PORTS:
    case CG_LAUNCH_PORT:
      port_decl(p, lp, p->buffer_offsets, false);
      return;
  }
}

/* MSL: the launch parameters at [[buffer(i)]], one per line, then the
 * thread indices; by-value parameters the kernel assigns are copied. */
static void msl_entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  rk__cg_c_printf(p, "%s %s(", p->t->kernel_decl, ep->name);
  uint32_t slot = 0;
  for (; slot < ep->nparams; ++slot) {
    const cg_launch_param_t *lp = &ep->params[slot];
    const cg_var_t *v = lp->var;
    puts_(p, slot ? ",\n    " : "\n    ");
    if (lp->kind == CG_LAUNCH_STATUS) {
      status_decl(p);
    } else if (lp->kind == CG_LAUNCH_COUNT) {
      rk__cg_c_printf(p, "constant %s &" CG_BATCH_COUNT_NAME,
                      p->t->types[CG_TY_U32]);
    } else if (lp->kind == CG_LAUNCH_PORTS || lp->kind == CG_LAUNCH_PORT) {
      port_decl(p, lp, false, false);
    } else if (v->type->kind == CG_TY_PTR) {
      rk__cg_c_pointer_decl(p, v);
    } else {
      puts_(p, "constant ");
      rk__cg_c_type_name(p, v->type);
      puts_(p, " &");
      if (v->modified) puts_(p, "rk_arg_");
      rk__cg_c_name(p, v->name);
    }
    rk__cg_c_printf(p, " [[buffer(%u)]]", (unsigned)slot);
  }
  puts_(p, slot ? ",\n    " : "\n    ");
  if (ep->dyn_shared)
    puts_(p, "threadgroup uchar *rk_dyn_shared [[threadgroup(0)]],\n    ");
  rk__cg_c_printf(p, "%s) {\n", kIndexParams);
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (!v || v->type->kind == CG_TY_PTR || !v->modified) continue;
    puts_(p, "  ");
    rk__cg_c_type_name(p, v->type);
    puts_(p, " ");
    rk__cg_c_name(p, v->name);
    puts_(p, " = rk_arg_");
    rk__cg_c_name(p, v->name);
    puts_(p, ";\n");
  }
}

/* The signature of kernel ep, up to and including the opening brace and
 * the line's end, then what the body needs before its statements. */
static void entry_signature_as(printer_t *p, const cg_entry_plan_t *ep,
                               const char *decl, const char *name);

static void entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  if (p->t->const_ref_params) {
    msl_entry_signature(p, ep);
    return;
  }
  entry_signature_as(p, ep, p->t->kernel_decl, ep->name);
}

/* The signature of entry ep under another declaration and name (not for
 * MSL). */
static void entry_signature_as(printer_t *p, const cg_entry_plan_t *ep,
                               const char *decl, const char *name) {
  /* OpenCL: the dynamic shared memory is a hidden parameter after the
   * listed ones (set with clSetKernelArg(k, nparams, bytes, NULL)). */
  const char *dyn = ep->dyn_shared ? p->t->dyn_style : NULL;
  uint32_t end = ep->nparams;
  if (dyn && strcmp(dyn, "param") == 0) end++;
  /* One line if it fits in 80 columns, else one parameter per line. */
  rk__strbuf_t line;
  rk__strbuf_init(&line);
  printer_t q = *p;
  q.out = &line;
  rk__cg_c_printf(&q, "%s %s(", decl, name);
  for (uint32_t i = 0; i < end; ++i) {
    if (i) puts_(&q, ", ");
    launch_param_decl(&q, ep, i);
  }
  if (end == 0 && !p->t->cxx) puts_(&q, "void");
  puts_(&q, ") {");
  if (line.failed) {
    p->out->failed = true;
  } else if (line.len > CG_LINE_WIDTH && end > 1) {
    rk__cg_c_printf(p, "%s %s(", decl, name);
    for (uint32_t i = 0; i < end; ++i) {
      puts_(p, i ? ",\n    " : "\n    ");
      launch_param_decl(p, ep, i);
    }
    puts_(p, ") {");
  } else {
    rk__strbuf_append(p->out, line.data, line.len);
  }
  rk__strbuf_free(&line);
  if (p->buffer_offsets) {
    param_name_t buf;
    for (uint32_t i = 0; i < ep->nparams; ++i) {
      const cg_launch_param_t *lp = &ep->params[i];
      if (lp->kind == CG_LAUNCH_STATUS)
        offset_prologue(p, NULL, elem_i32, CG_HANDLER_STATUS_NAME);
      else if (lp->kind == CG_LAUNCH_PORTS || lp->kind == CG_LAUNCH_PORT)
        port_decl(p, lp, true, true);
      else if (lp->kind == CG_LAUNCH_PARAM && lp->var->type->kind == CG_TY_PTR)
        offset_prologue(p, lp->var, elem_of_var, param_name(p, lp->var, buf));
    }
  }
  puts_(p, "\n");
  if (dyn && strcmp(dyn, "extern") == 0)
    puts_(p,
          "  extern __shared__ __align__(16) unsigned char "
          "rk_dyn_shared[];\n");
}

/* A helper's signature; `name` (NULL: the function's own, spelled for the
 * target) is the name printed. */
static void helper_signature(printer_t *p, const cg_func_t *fn,
                             const char *name) {
  puts_(p, "static ");
  if (fn->is_inline) puts_(p, "inline ");
  if (*p->t->helper_decl) rk__cg_c_printf(p, "%s ", p->t->helper_decl);
  rk__cg_c_type_name(p, fn->ret);
  puts_(p, " ");
  if (name)
    puts_(p, name);
  else
    rk__cg_c_name(p, fn->name);
  puts_(p, "(");
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    if (i) puts_(p, ", ");
    rk__cg_c_param_decl(p, fn->params[i]);
  }
  if (fn->kind == CG_FN_HANDLER && fn->nports) {
    /* rk_handle_<h>: the ports its sends write. */
    cg_launch_param_t lp = {.kind = CG_LAUNCH_PORTS};
    puts_(p, ", ");
    port_decl(p, &lp, false, false);
    for (uint32_t k = 0; k < fn->nports; ++k) {
      if (!fn->port_type[k]) continue;
      lp.kind = CG_LAUNCH_PORT;
      lp.port = k;
      puts_(p, ", ");
      port_decl(p, &lp, false, false);
    }
  }
  const cg_func_t *def = fn->def ? fn->def : fn;
  if (p->t->index_params && def->uses_index)
    rk__cg_c_printf(
        p, "%suint3 rk_tid, uint3 rk_bid, uint3 rk_bdim, uint3 rk_gdim",
        fn->nparams ? ", " : "");
  if (fn->nparams == 0 && !(p->t->index_params && def->uses_index) &&
      !p->t->cxx)
    puts_(p, "void");
  puts_(p, ")");
}

static void function_body(printer_t *p, const cg_stmt_t *b) {
  p->indent = 1;
  rk__cg_c_block_items(p, b);
  p->indent = 0;
}

/* An index built-in in generated code. */
static void idx(printer_t *p, cg_index_kind_t kind, int axis) {
  rk__cg_c_index_builtin(p, kind, axis, PREC_UNARY);
}

/* Staged cell rk_i along axis a: "rk_i % 18", "rk_i / 18 % 18". */
static void cell(printer_t *p, const cg_stencil_plan_t *s, int a) {
  rk__cg_emit_stencil_cell(p->out, s, a);
}

static void stencil_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  const cg_stencil_plan_t *s = fp->stencil;
  const cg_var_t *pos = s->pos;
  const uint32_t D = s->dims, H = s->halo;
  const uint32_t *T = s->tile;

  entry_signature(p, &fp->entries[0]);
  for (uint32_t i = 0; s->staged && i < s->ntiled; ++i) {
    const cg_var_t *b = s->tiled[i];
    rk__cg_c_printf(p, "  %s", p->t->shared_decl);
    rk__cg_c_type_name(p, b->type->elem);
    puts_(p, " " CG_TILE_PREFIX);
    rk__cg_c_name(p, b->name);
    for (int a = (int)D - 1; a >= 0; --a)
      rk__cg_c_printf(p, "[%u]", s->full[a]);
    puts_(p, ";\n");
  }
  /* The position: global coordinates, the domain, the linear index. */
  puts_(p, "  rk_stencil_pos_t ");
  rk__cg_c_name(p, pos->name);
  puts_(p, ";\n");
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    rk__cg_c_printf(p, "  ");
    rk__cg_c_name(p, pos->name);
    rk__cg_c_printf(p, ".%c = ", "xyz"[a]);
    if (a >= D) {
      puts_(p, "0;\n");
      continue;
    }
    if (s->blocked) {
      puts_(p, "(int)(");
      idx(p, CG_INDEX_BLOCK, (int)a);
      rk__cg_c_printf(p, " * %uu + ", (unsigned)T[a]);
      idx(p, CG_INDEX_THREAD, (int)a);
      puts_(p, ");\n");
    } else {
      puts_(p, "(int)");
      idx(p, CG_INDEX_GLOBAL, (int)a);
      puts_(p, ";\n");
    }
  }
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    rk__cg_c_printf(p, "  ");
    rk__cg_c_name(p, pos->name);
    rk__cg_c_printf(p, ".n%c = ", "xyz"[a]);
    if (a < D)
      rk__cg_c_name(p, s->extent[a]->name);
    else
      puts_(p, "1");
    puts_(p, ";\n");
  }

  if (s->staged) {
    /* Every thread of the block loads part of the tile plus halo of each
     * buffer read through neighbour functions; outside the domain the tile
     * holds 0 (never read: the body runs for interior points only). */
    rk__cg_c_printf(p, "  /* Load the %ux%u", (unsigned)T[0], (unsigned)T[1]);
    if (D == 3) rk__cg_c_printf(p, "x%u", (unsigned)T[2]);
    rk__cg_c_printf(p, " tile and its halo of %u. */\n", (unsigned)H);
    puts_(p, "  for (int rk_i = (int)(");
    if (D == 3) {
      puts_(p, "(");
      idx(p, CG_INDEX_THREAD, 2);
      rk__cg_c_printf(p, " * %uu + ", (unsigned)T[1]);
      idx(p, CG_INDEX_THREAD, 1);
      rk__cg_c_printf(p, ") * %uu + ", (unsigned)T[0]);
    } else {
      idx(p, CG_INDEX_THREAD, 1);
      rk__cg_c_printf(p, " * %uu + ", (unsigned)T[0]);
    }
    idx(p, CG_INDEX_THREAD, 0);
    rk__cg_c_printf(p, "); rk_i < %u; rk_i += %u) {\n", (unsigned)s->cells,
                    (unsigned)s->threads);
    static const char *const kG[] = {"rk_gx", "rk_gy", "rk_gz"};
    for (uint32_t a = 0; a < D; ++a) {
      rk__cg_c_printf(p, "    int %s = (int)(", kG[a]);
      idx(p, CG_INDEX_BLOCK, (int)a);
      rk__cg_c_printf(p, " * %uu) + ", (unsigned)T[a]);
      cell(p, s, (int)a);
      rk__cg_c_printf(p, " - %u;\n", (unsigned)H);
    }
    puts_(p, "    bool rk_in = ");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " && ");
      rk__cg_c_printf(p, "%s >= 0 && %s < ", kG[a], kG[a]);
      rk__cg_c_name(p, s->extent[a]->name);
    }
    puts_(p, ";\n");
    for (uint32_t i = 0; i < s->ntiled; ++i) {
      const cg_var_t *b = s->tiled[i];
      puts_(p, "    " CG_TILE_PREFIX);
      rk__cg_c_name(p, b->name);
      for (int a = (int)D - 1; a >= 0; --a) {
        puts_(p, "[");
        cell(p, s, a);
        puts_(p, "]");
      }
      puts_(p, " = rk_in ? ");
      rk__cg_c_name(p, b->name);
      puts_(p, "[");
      if (D == 3) {
        puts_(p, "(rk_gz * ");
        rk__cg_c_name(p, s->extent[1]->name);
        puts_(p, " + rk_gy) * ");
      } else {
        puts_(p, "rk_gy * ");
      }
      rk__cg_c_name(p, s->extent[0]->name);
      puts_(p, " + rk_gx] : (");
      rk__cg_c_type_name(p, b->type->elem);
      puts_(p, ")0;\n");
    }
    puts_(p, "  }\n  ");
    puts_(p, p->t->sync);
    puts_(p, ";\n");
  }
  if (s->blocked) {
    /* Threads beyond the tile (a block larger than the tile) only helped
     * to load it. */
    puts_(p, "  if (");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " || ");
      idx(p, CG_INDEX_THREAD, (int)a);
      rk__cg_c_printf(p, " >= %uu", (unsigned)T[a]);
    }
    puts_(p, ") return;\n");
  }
  /* Only interior points run the body. */
  rk__cg_emit_stencil_interior(p->out, p->t->target, s, ") return;\n");
  if (s->staged) {
    static const char *const kL[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (uint32_t a = 0; a < D; ++a) {
      rk__cg_c_printf(p, "  const int %s = (int)", kL[a]);
      idx(p, CG_INDEX_THREAD, (int)a);
      rk__cg_c_printf(p, " + %u;\n", (unsigned)H);
    }
  }
  puts_(p, "\n");
  function_body(p, fn->body);
  puts_(p, "}\n");
}

/* if (global thread 0), the condition that opens a handler's kernels. */
static void thread_zero(printer_t *p) {
  puts_(p, "  if (");
  for (int a = 0; a < CG_AXES; ++a) {
    if (a) puts_(p, " && ");
    idx(p, CG_INDEX_GLOBAL, a);
    puts_(p, " == 0");
  }
  puts_(p, ")");
}

/* The threads of global y and z index 0 (a stateless batch spreads its
 * messages over global x). */
static void thread_first_row(printer_t *p) {
  puts_(p, "  if (");
  for (int a = 1; a < CG_AXES; ++a) {
    if (a > 1) puts_(p, " && ");
    idx(p, CG_INDEX_GLOBAL, a);
    puts_(p, " == 0");
  }
  puts_(p, ")");
}

/* rk_handle_<name>(args) with message index `m` (NULL: the buffers as
 * they are, i.e. message 0). The state is always the one element. */
static void handler_call(printer_t *p, const cg_func_plan_t *fp,
                         const char *m) {
  const cg_func_t *fn = fp->fn;
  const cg_handler_plan_t *h = fp->handler;
  puts_(p, h->handle_name);
  puts_(p, "(");
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    bool message = m && (v == h->in || v == h->out);
    if (i) puts_(p, ", ");
    if (message) puts_(p, "&");
    rk__cg_c_name(p, v->name);
    if (message) rk__cg_c_printf(p, "[%s]", m);
  }
  if (fn->nports) {
    puts_(p, ", " CG_PORTS_NAME);
    for (uint32_t k = 0; k < fn->nports; ++k)
      if (fn->port_type[k]) rk__cg_c_printf(p, ", " CG_PORT_PREFIX "%u", k);
  }
  if (p->t->index_params && fn->uses_index)
    rk__cg_c_printf(p, "%srk_tid, rk_bid, rk_bdim, rk_gdim",
                    fn->nparams ? ", " : "");
  puts_(p, ")");
}

/* The name of type t as the target spells it, printed into `buf` (which
 * the caller frees). */
static const char *type_text(const printer_t *p, const cg_type_t *t,
                             rk__strbuf_t *buf) {
  printer_t q = *p;
  q.out = buf;
  rk__cg_c_type_name(&q, t);
  if (buf->failed || !buf->data) {
    p->out->failed = true;
    return "";
  }
  return buf->data;
}

/* The handler's persistent actor kernel (CUDA), after the prelude the
 * first time. */
static void actor_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_handler_plan_t *h = fp->handler;
  if (!p->actor_prelude) {
    rk__cg_emit_cuda_actor_prelude(p->out);
    p->actor_prelude = true;
  }
  rk__strbuf_t types[CG_HANDLER_MAX_PARAMS];
  for (int i = 0; i < CG_HANDLER_MAX_PARAMS; ++i) rk__strbuf_init(&types[i]);
  cg_actor_desc_t d = {
      .name = fp->fn->name, .handle = h->handle_name, .status = h->status};
  d.in_type = type_text(p, h->in->type->elem, &types[CG_HANDLER_IN]);
  d.out_type = type_text(p, h->out->type->elem, &types[CG_HANDLER_OUT]);
  if (h->state)
    d.state_type = type_text(p, h->state->type->elem, &types[CG_HANDLER_STATE]);
  rk__strbuf_t port_types[CG_MAX_PORTS];
  d.nports = h->nports;
  for (uint32_t k = 0; k < CG_MAX_PORTS; ++k) {
    rk__strbuf_init(&port_types[k]);
    if (k < h->nports && h->port_type[k])
      d.port_types[k] = type_text(p, h->port_type[k], &port_types[k]);
  }
  rk__cg_emit_cuda_actor_kernel(p->out, &d);
  for (int i = 0; i < CG_HANDLER_MAX_PARAMS; ++i) rk__strbuf_free(&types[i]);
  for (uint32_t k = 0; k < CG_MAX_PORTS; ++k) rk__strbuf_free(&port_types[k]);
}

/* One function per port the handler sends to, rk_send_<p>_<h>: queues a
 * copy of the message if the port's credit allows (0), else returns the
 * refusal the host left in the port's control words. */
static void send_helpers(printer_t *p, const cg_func_t *fn) {
  const char *u32 = p->t->types[CG_TY_U32], *i32 = p->t->types[CG_TY_I32];
  for (uint32_t k = 0; k < fn->nports; ++k) {
    if (!fn->port_type[k]) continue;
    const unsigned w = k * CG_PORT_WORDS;
    puts_(p, "static inline ");
    if (*p->t->helper_decl) rk__cg_c_printf(p, "%s ", p->t->helper_decl);
    rk__cg_c_printf(p, "%s " CG_SEND_PREFIX "%u_%s(%s%s *rk_ports, %s", i32, k,
                    fn->name, p->t->global_space, u32, p->t->global_space);
    rk__cg_c_type_name(p, fn->port_type[k]);
    puts_(p, " *rk_port, ");
    rk__cg_c_type_name(p, fn->port_type[k]);
    rk__cg_c_printf(p,
                    " rk_msg) {\n"
                    "  %s rk_n = rk_ports[%uu];\n"
                    "  if (rk_n >= rk_ports[%uu]) {\n"
                    "    rk_ports[%uu] += 1u;\n"
                    "    return (%s)rk_ports[%uu];\n"
                    "  }\n"
                    "  rk_port[rk_n] = rk_msg;\n"
                    "  rk_ports[%uu] = rk_n + 1u;\n"
                    "  return 0;\n}\n\n",
                    u32, w + CG_PORT_COUNT, w + CG_PORT_CREDIT,
                    w + CG_PORT_REFUSED, i32, w + CG_PORT_REFUSAL,
                    w + CG_PORT_COUNT);
  }
}

/* The launch parameters' names, comma-separated: the arguments of a call
 * that passes an entry's parameters on. */
static void entry_args(printer_t *p, const cg_entry_plan_t *ep) {
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_launch_param_t *lp = &ep->params[i];
    if (i) puts_(p, ", ");
    switch (lp->kind) {
      case CG_LAUNCH_PARAM:
        rk__cg_c_name(p, lp->var->name);
        break;
      case CG_LAUNCH_STATUS:
        puts_(p, CG_HANDLER_STATUS_NAME);
        break;
      case CG_LAUNCH_COUNT:
        puts_(p, CG_BATCH_COUNT_NAME);
        break;
      case CG_LAUNCH_PORTS:
      case CG_LAUNCH_PORT: {
        char buf[sizeof CG_PORT_PREFIX + 12];
        puts_(p, port_name(lp, buf));
        break;
      }
    }
  }
}

/* What global thread 0 of a handler's kernel does, after the test that
 * opens it: the handler's call, and its status where the kernel has one. */
static void handler_thread0_body(printer_t *p, const cg_func_plan_t *fp,
                                 const char *indent) {
  const cg_handler_plan_t *h = fp->handler;
  puts_(p, indent);
  if (h->status) puts_(p, CG_HANDLER_STATUS_NAME "[0] = ");
  handler_call(p, fp, NULL);
  puts_(p, ";\n");
  if (!h->status && h->status_param)
    /* A void handler with ports: rk_status is bound, 0 is written. */
    rk__cg_c_printf(p, "%s" CG_HANDLER_STATUS_NAME "[0] = 0;\n", indent);
}

static void handler_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_handler_plan_t *h = fp->handler;
  send_helpers(p, fp->fn);
  /* The body, callable by ring templates as rk_handle_<name>. */
  helper_signature(p, fp->fn, h->handle_name);
  puts_(p, " {\n");
  function_body(p, fp->fn->body);
  puts_(p, "}\n\n");
  for (uint32_t k = 0; k < fp->nentries; ++k) {
    const cg_entry_plan_t *ep = &fp->entries[k];
    if (ep->form == CG_FORM_HANDLER && p->t->target == RK_TARGET_C) {
      /* C: thread 0's part as a function of its own (rk/codegen.h,
       * RK_CODEGEN_C_THREAD0_PREFIX), which the CPU module's wrappers
       * call without the test (its reads of the thread-local launch state
       * cost a call into the dynamic linker per message there). */
      char name[sizeof RK_CODEGEN_C_THREAD0_PREFIX + CG_MAX_IDENT];
      snprintf(name, sizeof name, RK_CODEGEN_C_THREAD0_PREFIX "%s", ep->name);
      entry_signature_as(p, ep, "static inline void", name);
      handler_thread0_body(p, fp, "  ");
      puts_(p, "}\n\n");
      entry_signature(p, ep);
      thread_zero(p);
      rk__cg_c_printf(p, "\n    %s(", name);
      entry_args(p, ep);
      puts_(p, ");\n}\n\n");
      continue;
    }
    entry_signature(p, ep);
    if (ep->form == CG_FORM_HANDLER || h->state || h->nports)
      thread_zero(p);
    else
      thread_first_row(p);
    if (ep->form == CG_FORM_HANDLER) {
      /* One message per launch, handled by global thread 0; an int
       * handler's return value goes to the caller through rk_status. */
      if (!h->status && h->status_param) {
        /* A void handler with ports: rk_status is bound, 0 is written. */
        puts_(p, " {\n    ");
        handler_call(p, fp, NULL);
        puts_(p, ";\n    " CG_HANDLER_STATUS_NAME "[0] = 0;\n  }\n}\n\n");
        continue;
      }
      puts_(p, "\n    ");
      if (h->status) puts_(p, CG_HANDLER_STATUS_NAME "[0] = ");
      handler_call(p, fp, NULL);
      puts_(p, ";\n}\n\n");
      continue;
    }
    if (h->state || h->nports) {
      /* rk_count messages per launch, in order (they share the state),
       * handled by global thread 0. */
      rk__cg_c_printf(p,
                      " {\n    for (%s rk_m = 0; rk_m < " CG_BATCH_COUNT_NAME
                      "; ++rk_m) {\n      ",
                      p->t->types[CG_TY_U32]);
    } else {
      /* A stateless handler: message m is handled by the thread of global
       * x index m (grid-stride: fewer threads take several), so a launch
       * of rk_count threads runs one message per thread. */
      rk__cg_c_printf(p, " {\n    for (%s rk_m = ", p->t->types[CG_TY_U32]);
      idx(p, CG_INDEX_GLOBAL, 0);
      puts_(p, "; rk_m < " CG_BATCH_COUNT_NAME "; rk_m += ");
      idx(p, CG_INDEX_GRID_DIM, 0);
      puts_(p, " * ");
      idx(p, CG_INDEX_BLOCK_DIM, 0);
      puts_(p, ") {\n      ");
    }
    if (h->status) {
      puts_(p, CG_HANDLER_STATUS_NAME "[rk_m] = ");
      handler_call(p, fp, "rk_m");
      puts_(p, ";\n");
    } else {
      handler_call(p, fp, "rk_m");
      puts_(p, ";\n      " CG_HANDLER_STATUS_NAME "[rk_m] = 0;\n");
    }
    puts_(p, "    }\n  }\n}\n");
  }
  if (h->actor) actor_entry(p, fp);
}

void rk__cg_c_function(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  p->fn = fn;
  p->fp = fp;
  if (fn->kind != CG_FN_HELPER && !fp->selected) return;
  puts_(p, "\n");
  switch (fn->kind) {
    case CG_FN_HELPER:
      helper_signature(p, fn, NULL);
      if (!fn->body) {
        puts_(p, ";\n");
        return;
      }
      puts_(p, " {\n");
      function_body(p, fn->body);
      puts_(p, "}\n");
      return;
    case CG_FN_KERNEL:
      entry_signature(p, &fp->entries[0]);
      function_body(p, fn->body);
      puts_(p, "}\n");
      return;
    case CG_FN_STENCIL:
      stencil_entry(p, fp);
      return;
    case CG_FN_HANDLER:
      handler_entry(p, fp);
      return;
  }
}
