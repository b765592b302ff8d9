/* The WGSL printer: entry points from the plan (lower.h): bindings,
 * signatures, stencils and handlers (emit_wgsl_internal.h). */
#include <stdio.h>
#include <string.h>

#include "codegen/emit_wgsl_internal.h"

/* The module-scope name of a handler's status buffer (lower.h), prefixed
 * with the entry's name as buffers are. */
static const char *status_string(printer_t *p, const cg_func_t *fn) {
  return rk__cg_concat(p->ctx, p->multi ? fn->name : "", p->multi ? "_" : "",
                       CG_HANDLER_STATUS_NAME);
}

/* The module-scope name of a handler's port control words (k < 0) or of
 * port k's messages, prefixed like the status buffer. */
const char *rk__cg_wgsl_port_string(printer_t *p, const cg_func_t *fn, int k) {
  char name[sizeof CG_PORT_PREFIX + 12];
  if (k < 0)
    snprintf(name, sizeof name, "%s", CG_PORTS_NAME);
  else
    snprintf(name, sizeof name, CG_PORT_PREFIX "%d", k);
  return rk__cg_concat(p->ctx, p->multi ? fn->name : "", p->multi ? "_" : "",
                       name);
}

/* A handler's ports: rk_ports (the control words) at binding `binding`,
 * then each used port's message array; and rk_send_<k>_<h>, the function
 * a send to port k calls. Returns the next binding. */
static uint32_t port_resources(printer_t *p, const cg_func_t *fn,
                               uint32_t binding) {
  const char *ports = rk__cg_wgsl_port_string(p, fn, -1);
  rk__cg_wgsl_declare(p, ports, fn->loc);
  rk__cg_wgsl_printf(p,
                     "// The output ports of %.400s: %u control words each "
                     "(credit, count,\n// refusal, refused).\n"
                     "@group(0) @binding(%u) var<storage, read_write> %s: "
                     "array<u32>;\n",
                     fn->name, (unsigned)CG_PORT_WORDS, (unsigned)binding++,
                     ports);
  for (uint32_t k = 0; k < fn->nports; ++k) {
    if (!fn->port_type[k]) continue;
    const char *port = rk__cg_wgsl_port_string(p, fn, (int)k);
    rk__cg_wgsl_declare(p, port, fn->loc);
    rk__cg_wgsl_printf(p,
                       "@group(0) @binding(%u) var<storage, read_write> %s: "
                       "array<",
                       (unsigned)binding++, port);
    rk__cg_wgsl_type(p, fn->port_type[k], false);
    puts_(p, ">;\n");
  }
  for (uint32_t k = 0; k < fn->nports; ++k) {
    if (!fn->port_type[k]) continue;
    const char *port = rk__cg_wgsl_port_string(p, fn, (int)k);
    const unsigned w = k * CG_PORT_WORDS;
    char helper[sizeof CG_SEND_PREFIX + 16];
    snprintf(helper, sizeof helper, CG_SEND_PREFIX "%u_", (unsigned)k);
    const char *hname = rk__cg_concat(p->ctx, helper, fn->name, "");
    rk__cg_wgsl_declare(p, hname, fn->loc);
    rk__cg_wgsl_printf(p, "fn %s(rk_msg: ", hname);
    rk__cg_wgsl_type(p, fn->port_type[k], false);
    rk__cg_wgsl_printf(p,
                       ") -> i32 {\n"
                       "  let rk_n = %s[%uu];\n"
                       "  if (rk_n >= %s[%uu]) {\n"
                       "    %s[%uu] += 1u;\n"
                       "    return i32(%s[%uu]);\n  }\n"
                       "  %s[rk_n] = rk_msg;\n"
                       "  %s[%uu] = rk_n + 1u;\n"
                       "  return 0;\n}\n",
                       ports, w + CG_PORT_COUNT, ports, w + CG_PORT_CREDIT,
                       ports, w + CG_PORT_REFUSED, ports, w + CG_PORT_REFUSAL,
                       port, ports, w + CG_PORT_COUNT);
  }
  return binding;
}

/* The suffix of the by-value parameter struct's names for entry `name`
 * (rk_params<suffix>_t, rk_params<suffix>). */
static const char *params_suffix(printer_t *p, const char *name) {
  if (!p->multi) return "";
  return rk__cg_concat(p->ctx, "_", name, "");
}

/* Bindings: buffers 0..k-1 in parameter order (an int handler's status
 * buffer last among them), then the by-value parameters packed into one
 * struct read from a storage buffer. */
static void resources(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  /* The function's own launch parameters: those of any of its kernels. */
  const cg_entry_plan_t *ep = &fp->entries[0];
  uint32_t binding = 0, nvalues = 0;
  puts_(p, "\n");
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (ep->params[i].kind != CG_LAUNCH_PARAM) continue;
    if (v->type->kind != CG_TY_PTR) {
      nvalues++;
      continue;
    }
    rk__cg_wgsl_declare(p, rk__cg_wgsl_resource_string(p, v), v->loc);
    rk__cg_wgsl_printf(p, "@group(0) @binding(%u) var<storage, %s> ",
                       (unsigned)binding++,
                       v->type->elem_const ? "read" : "read_write");
    rk__cg_wgsl_resource_name(p, v);
    puts_(p, ": array<");
    rk__cg_wgsl_type(p, v->type->elem, rk__cg_wgsl_is_atomic_var(p, v));
    puts_(p, ">;\n");
  }
  if (fp->handler && fp->handler->status_param) {
    const char *status = status_string(p, fn);
    rk__cg_wgsl_declare(p, status, fn->loc);
    rk__cg_wgsl_printf(
        p,
        "// What %.400s returns (0: success, else its error code), "
        "written by\n// global thread 0.\n"
        "@group(0) @binding(%u) var<storage, read_write> %s: "
        "array<i32>;\n",
        fn->name, (unsigned)binding++, status);
  }
  if (fp->handler && fp->handler->nports)
    binding = port_resources(p, fn, binding);
  if (nvalues) {
    const char *suffix = params_suffix(p, fn->name);
    const char *tname = rk__cg_concat(p->ctx, "rk_params", suffix, "_t");
    const char *vname = rk__cg_concat(p->ctx, "rk_params", suffix, "");
    rk__cg_wgsl_declare(p, tname, fn->loc);
    rk__cg_wgsl_declare(p, vname, fn->loc);
    rk__cg_wgsl_printf(
        p,
        "\n// The by-value parameters of %.200s, in order, each at the "
        "next multiple\n// of its C alignment.\nstruct %s {\n",
        fn->name, tname);
    for (uint32_t i = 0; i < ep->nparams; ++i) {
      const cg_var_t *v = ep->params[i].var;
      if (!v || v->type->kind == CG_TY_PTR) continue;
      puts_(p, "  ");
      rk__cg_wgsl_name(p, v->name);
      puts_(p, ": ");
      rk__cg_wgsl_type(p, v->type, false);
      puts_(p, ",\n");
    }
    rk__cg_wgsl_printf(p,
                       "}\n@group(0) @binding(%u) var<storage, read> %s: %s;\n",
                       (unsigned)binding, vname, tname);
  }
  if (fn->kind == CG_FN_KERNEL) rk__cg_wgsl_shared_arrays(p, fn);
  if (fn->dyn_shared) {
    /* Sized at pipeline creation by the override rk_dyn_shared_bytes. */
    const cg_var_t *v = fn->dyn_shared;
    rk__cg_wgsl_declare(p, rk__cg_wgsl_resource_string(p, v), v->loc);
    puts_(p, "var<workgroup> ");
    rk__cg_wgsl_resource_name(p, v);
    puts_(p, ": array<");
    rk__cg_wgsl_type(p, v->type->elem, rk__cg_wgsl_is_atomic_var(p, v));
    rk__cg_wgsl_printf(p, ", rk_dyn_shared_bytes / %uu>;\n",
                       (unsigned)v->type->elem->size);
  }
  /* CAS helpers for the arrays that need them, in declaration order. */
  if (!p->plan->unit->uses_cas) return;
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (rk__cg_wgsl_is_atomic_var(p, v) &&
        rk__cg_wgsl_uses_cas_stmt(fn->body, v))
      rk__cg_wgsl_cas_helper(p, v);
  }
  if (fn->dyn_shared && rk__cg_wgsl_is_atomic_var(p, fn->dyn_shared) &&
      rk__cg_wgsl_uses_cas_stmt(fn->body, fn->dyn_shared))
    rk__cg_wgsl_cas_helper(p, fn->dyn_shared);
  const cg_stmt_t *b = fn->body;
  for (uint32_t i = 0; i < b->block.n; ++i) {
    const cg_stmt_t *s = b->block.items[i];
    if (s->kind != CG_S_DECL) continue;
    for (uint32_t k = 0; k < s->decl.n; ++k) {
      const cg_var_t *v = s->decl.vars[k];
      if (v->kind == CG_VAR_SHARED && rk__cg_wgsl_is_atomic_var(p, v) &&
          rk__cg_wgsl_uses_cas_stmt(fn->body, v))
        rk__cg_wgsl_cas_helper(p, v);
    }
  }
}

static void entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  const cg_func_t *fn = ep->fn;
  bool batch = ep->form == CG_FORM_BATCH;
  if (!batch && rk__cg_target_reserves(RK_TARGET_WGSL, fn->name)) {
    if (!rk__cg_wgsl_builtin_function(fn->name) ||
        p->nshadowing == WGSL_MAX_SHADOWING)
      rk__cg_error(p->ctx, fn->loc,
                   "'%s' cannot name an entry point: WGSL reserves it (entry "
                   "points keep their names)",
                   fn->name);
    p->shadowing[p->nshadowing++] = fn;
  }
  const char *name = ep->name;
  rk__cg_wgsl_declare(p, name, fn->loc);
  rk__cg_wgsl_printf(
      p,
      "\n@compute @workgroup_size(rk_wg_x, rk_wg_y, rk_wg_z)\n"
      "fn %.400s(@builtin(local_invocation_id) rk_tid: vec3<u32>,\n"
      "    @builtin(workgroup_id) rk_bid: vec3<u32>,\n"
      "    @builtin(num_workgroups) rk_gdim: vec3<u32>) {\n",
      name);
  const char *suffix = params_suffix(p, name);
  if (batch)
    rk__cg_wgsl_printf(p,
                       "  let " CG_BATCH_COUNT_NAME
                       ": u32 = rk_params%.400s." CG_BATCH_COUNT_NAME ";\n",
                       suffix);
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (!v || v->type->kind == CG_TY_PTR) continue;
    puts_(p, v->modified ? "  var " : "  let ");
    rk__cg_wgsl_name(p, v->name);
    puts_(p, ": ");
    rk__cg_wgsl_type(p, v->type, false);
    rk__cg_wgsl_printf(p, " = rk_params%.400s.", suffix);
    rk__cg_wgsl_name(p, v->name);
    puts_(p, ";\n");
  }
  if (p->guard && ep->loops)
    puts_(p,
          "  rk_loops_begun = rk_loop_guard.zero0;\n"
          "  rk_loops_ended = rk_loop_guard.zero1;\n");
}

/* Staged cell rk_i along axis a: "rk_i % 18", "rk_i / 18 % 18". */
static void cell(printer_t *p, const cg_stencil_plan_t *s, int a) {
  rk__cg_emit_stencil_cell(p->out, s, a);
}

static void stencil_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_stencil_plan_t *s = fp->stencil;
  const cg_var_t *pos = s->pos;
  const uint32_t D = s->dims, H = s->halo;
  const uint32_t *T = s->tile;
  for (uint32_t i = 0; s->staged && i < s->ntiled; ++i) {
    const cg_var_t *b = s->tiled[i];
    const char *name = rk__cg_concat(p->ctx, CG_TILE_PREFIX,
                                     rk__cg_wgsl_resource_string(p, b), "");
    rk__cg_wgsl_declare(p, name, b->loc);
    rk__cg_wgsl_printf(p, "var<workgroup> %s: ", name);
    for (uint32_t a = 0; a < D; ++a) puts_(p, "array<");
    rk__cg_wgsl_type(p, b->type->elem, false);
    for (uint32_t a = 0; a < D; ++a)
      rk__cg_wgsl_printf(p, ", %u>", (unsigned)s->full[a]);
    puts_(p, ";\n");
  }
  entry_signature(p, &fp->entries[0]);
  puts_(p, "  var ");
  rk__cg_wgsl_name(p, pos->name);
  puts_(p, ": rk_stencil_pos_t;\n");
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    puts_(p, "  ");
    rk__cg_wgsl_name(p, pos->name);
    rk__cg_wgsl_printf(p, ".%c = ", "xyz"[a]);
    if (a >= D) {
      puts_(p, "0;\n");
    } else if (s->blocked) {
      rk__cg_wgsl_printf(p, "i32(rk_bid.%c * %uu + rk_tid.%c);\n", "xyz"[a],
                         (unsigned)T[a], "xyz"[a]);
    } else {
      puts_(p, "i32(");
      rk__cg_wgsl_index_builtin(p, CG_INDEX_GLOBAL, (int)a);
      puts_(p, ");\n");
    }
  }
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    puts_(p, "  ");
    rk__cg_wgsl_name(p, pos->name);
    rk__cg_wgsl_printf(p, ".n%c = ", "xyz"[a]);
    if (a < D)
      rk__cg_wgsl_name(p, s->extent[a]->name);
    else
      puts_(p, "1");
    puts_(p, ";\n");
  }
  if (s->staged) {
    rk__cg_wgsl_printf(p, "  // Load the %ux%u", (unsigned)T[0],
                       (unsigned)T[1]);
    if (D == 3) rk__cg_wgsl_printf(p, "x%u", (unsigned)T[2]);
    rk__cg_wgsl_printf(p, " tile and its halo of %u.\n", (unsigned)H);
    rk__cg_wgsl_guard_begin(p, "  ");
    puts_(p, "  for (var rk_i: i32 = i32(");
    if (D == 3)
      rk__cg_wgsl_printf(p, "(rk_tid.z * %uu + rk_tid.y) * %uu + rk_tid.x",
                         (unsigned)T[1], (unsigned)T[0]);
    else
      rk__cg_wgsl_printf(p, "rk_tid.y * %uu + rk_tid.x", (unsigned)T[0]);
    if (p->guard)
      rk__cg_wgsl_printf(p,
                         "); ; rk_i += %u) {\n    if (!(rk_i < %u)) {\n"
                         "      " WGSL_GUARD_EXIT "break;\n    }\n",
                         (unsigned)s->threads, (unsigned)s->cells);
    else
      rk__cg_wgsl_printf(p, "); rk_i < %u; rk_i += %u) {\n", (unsigned)s->cells,
                         (unsigned)s->threads);
    static const char *const kG[] = {"rk_gx", "rk_gy", "rk_gz"};
    for (uint32_t a = 0; a < D; ++a) {
      rk__cg_wgsl_printf(p, "    let %s: i32 = i32(rk_bid.%c * %uu) + ", kG[a],
                         "xyz"[a], (unsigned)T[a]);
      cell(p, s, (int)a);
      rk__cg_wgsl_printf(p, " - %u;\n", (unsigned)H);
    }
    puts_(p, "    let rk_in: bool = ");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " && ");
      rk__cg_wgsl_printf(p, "%s >= 0 && %s < ", kG[a], kG[a]);
      rk__cg_wgsl_name(p, s->extent[a]->name);
    }
    puts_(p, ";\n");
    for (uint32_t i = 0; i < s->ntiled; ++i) {
      const cg_var_t *b = s->tiled[i];
      puts_(p, "    " CG_TILE_PREFIX);
      rk__cg_wgsl_resource_name(p, b);
      for (int a = (int)D - 1; a >= 0; --a) {
        /* `rk_i / 18 % 18` is fine as an index */
        puts_(p, "[");
        cell(p, s, a);
        puts_(p, "]");
      }
      puts_(p, " = ");
      rk__cg_wgsl_builtin_call(p, "select");
      rk__cg_wgsl_type(p, b->type->elem, false);
      puts_(p, "(), ");
      rk__cg_wgsl_resource_name(p, b);
      puts_(p, "[");
      if (D == 3) {
        puts_(p, "(rk_gz * ");
        rk__cg_wgsl_name(p, s->extent[1]->name);
        puts_(p, " + rk_gy) * ");
      } else {
        puts_(p, "rk_gy * ");
      }
      rk__cg_wgsl_name(p, s->extent[0]->name);
      puts_(p, " + rk_gx], rk_in);\n");
    }
    puts_(p, "  }\n");
    rk__cg_wgsl_guard_check(p, "  ");
    puts_(p, "  ");
    rk__cg_wgsl_builtin_call(p, "workgroupBarrier");
    puts_(p, ");\n");
  }
  if (s->blocked) {
    /* Threads beyond the tile only helped to load it. */
    puts_(p, "  if (");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " || ");
      rk__cg_wgsl_printf(p, "rk_tid.%c >= %uu", "xyz"[a], (unsigned)T[a]);
    }
    puts_(p, ") {\n    return;\n  }\n");
  }
  /* Only interior points run the body. */
  rk__cg_emit_stencil_interior(p->out, RK_TARGET_WGSL, s,
                               ") {\n    return;\n  }\n");
  if (s->staged) {
    static const char *const kL[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (uint32_t a = 0; a < D; ++a)
      rk__cg_wgsl_printf(p, "  let %s: i32 = i32(rk_tid.%c) + %u;\n", kL[a],
                         "xyz"[a], (unsigned)H);
  }
  puts_(p, "\n");
  rk__cg_wgsl_function_body(p, fp->fn->body);
  puts_(p, "}\n");
}

/* if (global thread 0) {, the condition that opens a handler's entries. */
static void thread_zero(printer_t *p) {
  puts_(p, "  if (");
  for (int a = 0; a < CG_AXES; ++a) {
    if (a) puts_(p, " && ");
    rk__cg_wgsl_index_builtin(p, CG_INDEX_GLOBAL, a);
    puts_(p, " == 0u");
  }
  puts_(p, ") {\n");
}

/* A batch entry's bindings beyond its handler's: the status buffer (a
 * void handler's entry has none), then the struct holding rk_count. */
static void batch_resources(printer_t *p, const cg_func_plan_t *fp,
                            const cg_entry_plan_t *ep) {
  const cg_func_t *fn = fp->fn;
  uint32_t binding = fn->nparams;
  const char *name = ep->name;
  puts_(p, "\n");
  if (!fp->handler->status_param) {
    const char *status = status_string(p, fn);
    rk__cg_wgsl_declare(p, status, fn->loc);
    rk__cg_wgsl_printf(
        p,
        "// 0 for each message %.400s handled, written by the invocation "
        "of\n// %.400s that handled it.\n"
        "@group(0) @binding(%u) var<storage, read_write> %s: "
        "array<i32>;\n",
        fn->name, name, (unsigned)binding, status);
  }
  binding++;
  /* The ports' buffers come before the by-value struct. */
  if (fp->handler->nports) {
    binding++;
    for (uint32_t k = 0; k < fn->nports; ++k) binding += !!fn->port_type[k];
  }
  const char *suffix = params_suffix(p, name);
  const char *tname = rk__cg_concat(p->ctx, "rk_params", suffix, "_t");
  const char *vname = rk__cg_concat(p->ctx, "rk_params", suffix, "");
  rk__cg_wgsl_declare(p, tname, fn->loc);
  rk__cg_wgsl_declare(p, vname, fn->loc);
  rk__cg_wgsl_printf(p,
                     "// The by-value parameters of %.400s.\nstruct %s {\n"
                     "  " CG_BATCH_COUNT_NAME
                     ": u32,\n}\n"
                     "@group(0) @binding(%u) var<storage, read> %s: %s;\n",
                     name, tname, (unsigned)binding, vname, tname);
}

static void handler_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  const cg_handler_plan_t *h = fp->handler;
  /* The body as rk_handle_<name>, reading message rk_m of the module-scope
   * buffers. */
  const char *hname = h->handle_name;
  rk__cg_wgsl_declare(p, hname, fn->loc);
  const bool depth = p->guard && fn->uses_loop;
  rk__cg_wgsl_printf(
      p, "\nfn %s(rk_m: u32%s%s)%s {\n", hname,
      fn->uses_index
          ? ", rk_tid: vec3<u32>, rk_bid: vec3<u32>, rk_gdim: vec3<u32>"
          : "",
      depth ? ", rk_depth: u32" : "", h->status ? " -> i32" : "");
  p->depth_param = depth;
  if (h->status)
    rk__cg_wgsl_value_function_body(p, fn->ret, fn->body);
  else
    rk__cg_wgsl_function_body(p, fn->body);
  p->depth_param = false;
  puts_(p, "}\n");
  /* The index arguments; with the guard, the loops open at the call (none
   * in the message's own kernel, the batch's loop in a batch kernel). */
  const char *ix = fn->uses_index ? ", rk_tid, rk_bid, rk_gdim" : "";
  const char *d0 = depth ? ", 0u" : "", *d1 = depth ? ", 1u" : "";
  const char *status = status_string(p, fn);
  for (uint32_t k = 0; k < fp->nentries; ++k) {
    const cg_entry_plan_t *ep = &fp->entries[k];
    if (ep->form == CG_FORM_HANDLER) {
      /* One message per launch, handled by global thread 0. */
      entry_signature(p, ep);
      thread_zero(p);
      /* An int handler's return value goes to the caller through
       * rk_status. */
      puts_(p, "    ");
      if (h->status) rk__cg_wgsl_printf(p, "%s[0] = ", status);
      rk__cg_wgsl_printf(p, "%s(0u%s%s);\n", hname, ix, d0);
      if (!h->status && h->status_param)
        rk__cg_wgsl_printf(p, "    %s[0] = 0;\n", status);
      puts_(p, "  }\n}\n");
      continue;
    }
    batch_resources(p, fp, ep);
    entry_signature(p, ep);
    if (h->state || h->nports) {
      /* rk_count messages per launch, in order (they share the state),
       * handled by global thread 0. */
      thread_zero(p);
      rk__cg_wgsl_guard_begin(p, "    ");
      puts_(p, p->guard
                   ? "    for (var rk_m: u32 = 0u; ; rk_m++) {\n"
                     "      if (!(rk_m < " CG_BATCH_COUNT_NAME
                     ")) {\n        " WGSL_GUARD_EXIT "break;\n      }\n      "
                   : "    for (var rk_m: u32 = 0u; rk_m < " CG_BATCH_COUNT_NAME
                     "; rk_m++) {\n      ");
    } else {
      /* A stateless handler: message m is handled by the invocation of
       * global x index m (grid-stride: fewer invocations take several), so
       * a dispatch of rk_count invocations runs one message each. */
      puts_(p, "  if (");
      for (int a = 1; a < CG_AXES; ++a) {
        if (a > 1) puts_(p, " && ");
        rk__cg_wgsl_index_builtin(p, CG_INDEX_GLOBAL, a);
        puts_(p, " == 0u");
      }
      puts_(p, ") {\n");
      rk__cg_wgsl_guard_begin(p, "    ");
      puts_(p, "    for (var rk_m: u32 = ");
      rk__cg_wgsl_index_builtin(p, CG_INDEX_GLOBAL, 0);
      puts_(p, p->guard ? "; ; rk_m += "
                        : "; rk_m < " CG_BATCH_COUNT_NAME "; rk_m += ");
      rk__cg_wgsl_index_builtin(p, CG_INDEX_GRID_DIM, 0);
      puts_(p, " * ");
      rk__cg_wgsl_index_builtin(p, CG_INDEX_BLOCK_DIM, 0);
      puts_(p, p->guard ? ") {\n      if (!(rk_m < " CG_BATCH_COUNT_NAME
                          ")) {\n        " WGSL_GUARD_EXIT
                          "break;\n      }\n      "
                        : ") {\n      ");
    }
    if (h->status)
      rk__cg_wgsl_printf(p, "%s[rk_m] = %s(rk_m%s%s);\n", status, hname, ix,
                         d1);
    else
      rk__cg_wgsl_printf(p, "%s(rk_m%s%s);\n      %s[rk_m] = 0;\n", hname, ix,
                         d1, status);
    puts_(p, "    }\n");
    rk__cg_wgsl_guard_check(p, "    ");
    puts_(p, "  }\n}\n");
  }
}

void rk__cg_wgsl_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  p->depth_param = false;
  p->loop_depth = 0;
  p->fn = fn;
  p->fp = fp;
  p->entry = fn;
  p->ntemps = 0;
  memset(&p->atomic_vars, 0, sizeof p->atomic_vars);
  rk__cg_wgsl_find_atomics_stmt(p, fn->body);
  resources(p, fp);
  switch (fn->kind) {
    case CG_FN_KERNEL:
      entry_signature(p, &fp->entries[0]);
      rk__cg_wgsl_function_body(p, fn->body);
      puts_(p, "}\n");
      break;
    case CG_FN_STENCIL:
      stencil_entry(p, fp);
      break;
    case CG_FN_HANDLER:
      handler_entry(p, fp);
      break;
    default:
      break;
  }
  p->entry = NULL;
  memset(&p->atomic_vars, 0, sizeof p->atomic_vars);
}
