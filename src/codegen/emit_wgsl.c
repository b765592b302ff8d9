/* The WGSL printer: WebGPU Shading Language from the checked tree (emit.h).
 *
 * WGSL is not C, so this is a sibling of the C-family printer rather than a
 * row of its table. What it does differently (docs/kernel-language.md,
 * "WGSL", is the user-facing description):
 *
 *   - Resources live at module scope. Buffer parameters of an entry point
 *     are `var<storage, read|read_write>` runtime-sized arrays at
 *     @group(0) @binding(0..k-1) in parameter order; all by-value
 *     parameters are packed, in order, into one struct (rk_params_t) read
 *     from a `var<storage, read>` at the next binding, and copied into
 *     locals of the same names at entry. RK_SHARED arrays and stencil tiles
 *     are `var<workgroup>`. A module with several entry points prefixes
 *     these names with the entry's (`saxpy_x`); any clash of module-scope
 *     names is refused.
 *   - The workgroup size is pipeline-overridable: `override rk_wg_x`,
 *     rk_wg_y, rk_wg_z, set by the backend (pipeline constants by those
 *     names) from the launch's block size; rk_block_dim_*() reads them.
 *   - Thread indices are entry parameters (rk_tid, rk_bid, rk_gdim) that,
 *     as in MSL, are passed on to helpers that use index built-ins; this
 *     keeps them visible to WGSL's uniformity analysis (a var<private>
 *     would not be).
 *   - Every conversion is spelled (`f32(i)`), shift amounts are u32, ?: is
 *     select() when its branches are side-effect free scalars and an if
 *     with a temporary otherwise, C's switch fallthrough is lowered by
 *     duplicating the bodies fallen into, do/while is loop/continuing. A
 *     function returning a value whose end WGSL cannot rule out (C's
 *     `while (true) { ... return x; }` with nothing after the loop) ends in
 *     `return T();`, a value no program that C defines uses.
 *   - Elements that an atomic touches make their whole buffer or shared
 *     array atomic<i32>/atomic<u32>; every other access to it goes through
 *     atomicLoad/atomicStore. Compare-and-swap is a helper per array that
 *     retries atomicCompareExchangeWeak until it succeeds or sees another
 *     value (strong, as on the other targets).
 *   - Stencils and handlers are printed from the same plan as on the
 *     C-family GPU targets (lower.h); an int handler's rk_status buffer is
 *     bound after its message buffers. rk_handle_<name> takes the message index
 * rk_m and reads in[rk_m] / out[rk_m] (the state is element 0): the handler's
 * entry passes 0u, its batch entry rk_batch_<name> runs rk_count
 *     messages (stateless: one per invocation of global x index m,
 *     grid-stride; with state: in order on invocation 0). Both entries share
 * the module-scope buffers (bindings 0..k-1, rk_status at k); the batch entry
 * adds rk_status (for a void handler) and a struct holding rk_count at k + 1.
 *
 * Refusals are compile errors with a location (rk__cg_error), raised while
 * printing: codegen.c runs this printer under the compilation's error exit.
 * An entry point may keep the name of a WGSL built-in function it shadows
 * only if the output never calls that built-in: every built-in call goes
 * through builtin_call(), which notes it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/emit_wgsl_internal.h"

/* Bytes of one formatted piece: every format here is short. */
enum { kMaxFormatted = 512 };

void rk__cg_wgsl_printf(printer_t *p, const char *fmt, ...) {
  char small[kMaxFormatted];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof small) {
    p->out->failed = true; /* every format here is short */
    return;
  }
  rk__strbuf_append(p->out, small, (size_t)n);
}

/* `name(`: a call of WGSL built-in function `name`, noted as called. */
void rk__cg_wgsl_builtin_call(printer_t *p, const char *name) {
  rk__cg_map_put(p->ctx, &p->called, name, (void *)"");
  puts_(p, name);
  puts_(p, "(");
}

/* A user name as WGSL must spell it. */
void rk__cg_wgsl_name(printer_t *p, const char *name) {
  rk__cg_put_name(p->out, RK_TARGET_WGSL, name);
}

const char *rk__cg_wgsl_spelled(printer_t *p, const char *name) {
  return rk__cg_spelled_name(p->ctx, RK_TARGET_WGSL, name);
}

/* Map keys for nodes: their address as text (in buf, WGSL_PTR_KEY
 * bytes). */
const char *rk__cg_wgsl_ptr_key(char *buf, const void *ptr) {
  snprintf(buf, WGSL_PTR_KEY, "%p", ptr);
  return buf;
}

const char *rk__cg_wgsl_ptr_key_dup(printer_t *p, const void *ptr) {
  char buf[WGSL_PTR_KEY];
  rk__cg_wgsl_ptr_key(buf, ptr);
  return rk__cg_strndup(p->ctx, buf, strlen(buf));
}

/* Registers a module-scope name; a second declaration is refused. */
void rk__cg_wgsl_declare(printer_t *p, const char *name, cg_loc_t loc) {
  if (rk__cg_map_get(&p->module_names, name))
    rk__cg_error(p->ctx, loc,
                 "'%s' would be declared twice at WGSL module scope (buffers "
                 "and shared arrays are module-scope variables there, beside "
                 "functions, structs and constants): rename one, or "
                 "transpile one entry point at a time (options.entry)",
                 name);
  rk__cg_map_put(p->ctx, &p->module_names, name, (void *)"");
}

/* The module-scope name of a buffer parameter or shared array of the
 * current entry; an rk_dynamic_shared() pointer names the workgroup array
 * rk_dyn_shared. */
const char *rk__cg_wgsl_resource_string(printer_t *p, const cg_var_t *v) {
  const char *own = v->kind == CG_VAR_DYNSHARED ? "rk_dyn_shared" : v->name;
  if (!(p->multi && p->entry))
    return v->kind == CG_VAR_DYNSHARED ? own : rk__cg_wgsl_spelled(p, own);
  size_t a = strlen(p->entry->name), b = strlen(own);
  char *s = rk__cg_alloc(p->ctx, a + b + 2);
  memcpy(s, p->entry->name, a);
  s[a] = '_';
  memcpy(s + a + 1, own, b + 1);
  return s;
}

void rk__cg_wgsl_resource_name(printer_t *p, const cg_var_t *v) {
  puts_(p, rk__cg_wgsl_resource_string(p, v));
}

/* Variables that live at module scope: shared arrays and the dynamic shared
 * memory (their declaration statements print nothing in the body). */
bool rk__cg_wgsl_is_module_var(const cg_var_t *v) {
  return v->kind == CG_VAR_SHARED || v->kind == CG_VAR_DYNSHARED;
}

bool rk__cg_wgsl_is_resource(const cg_var_t *v) {
  return (v->kind == CG_VAR_PARAM && v->type->kind == CG_TY_PTR) ||
         rk__cg_wgsl_is_module_var(v);
}

bool rk__cg_wgsl_is_atomic_var(printer_t *p, const cg_var_t *v) {
  char key[WGSL_PTR_KEY];
  return v && p->atomic_vars.count &&
         rk__cg_map_get(&p->atomic_vars, rk__cg_wgsl_ptr_key(key, v)) != NULL;
}

static void struct_name(printer_t *p, const cg_struct_t *st) {
  rk__cg_wgsl_name(p, st->typedef_name ? st->typedef_name : st->tag);
}

static const char *const kScalar[] = {
    [CG_TY_VOID] = "void", [CG_TY_BOOL] = "bool", [CG_TY_I32] = "i32",
    [CG_TY_U32] = "u32",   [CG_TY_I64] = "i64",   [CG_TY_U64] = "u64",
    [CG_TY_F32] = "f32",   [CG_TY_F64] = "f64",
};

/* A type: "f32", "array<array<i32, 3>, 2>", "particle_t"; atomic wraps the
 * innermost element in atomic<>. */
void rk__cg_wgsl_type(printer_t *p, const cg_type_t *t, bool atomic) {
  switch (t->kind) {
    case CG_TY_ARRAY:
      puts_(p, "array<");
      rk__cg_wgsl_type(p, t->elem, atomic);
      rk__cg_wgsl_printf(p, ", %u>", (unsigned)t->count);
      return;
    case CG_TY_STRUCT:
      struct_name(p, t->st);
      return;
    case CG_TY_POS:
      puts_(p, "rk_stencil_pos_t");
      return;
    case CG_TY_PTR:
      rk__cg_wgsl_type(p, t->elem, atomic);
      return;
    default:
      if (atomic) puts_(p, "atomic<");
      puts_(p, t->kind <= CG_TY_F64 ? kScalar[t->kind] : "void");
      if (atomic) puts_(p, ">");
      return;
  }
}

/* ---- Module-scope items -------------------------------------------------- */

static uint32_t wgsl_align(const cg_type_t *t);
static uint32_t wgsl_size(const cg_type_t *t);

/* WGSL's layout of host-shareable types (storage address space). */
static uint32_t wgsl_align(const cg_type_t *t) {
  switch (t->kind) {
    case CG_TY_ARRAY:
      return wgsl_align(t->elem);
    case CG_TY_STRUCT: {
      uint32_t a = 1;
      for (uint32_t i = 0; i < t->st->nfields; ++i) {
        uint32_t f = wgsl_align(t->st->fields[i].type);
        if (f > a) a = f;
      }
      return a;
    }
    case CG_TY_I64:
    case CG_TY_U64:
    case CG_TY_F64:
      return 8;
    default:
      return 4;
  }
}

static uint32_t round_up(uint32_t v, uint32_t a) {
  return a ? (v + a - 1) / a * a : v;
}

static uint32_t wgsl_size(const cg_type_t *t) {
  switch (t->kind) {
    case CG_TY_ARRAY: {
      uint64_t stride = round_up(wgsl_size(t->elem), wgsl_align(t->elem));
      uint64_t n = stride * t->count;
      return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    case CG_TY_STRUCT: {
      uint32_t off = 0;
      for (uint32_t i = 0; i < t->st->nfields; ++i) {
        const cg_type_t *f = t->st->fields[i].type;
        off = round_up(off, wgsl_align(f)) + wgsl_size(f);
      }
      return round_up(off, wgsl_align(t));
    }
    case CG_TY_I64:
    case CG_TY_U64:
    case CG_TY_F64:
      return 8;
    default:
      return 4;
  }
}

static void struct_def(printer_t *p, const cg_struct_t *st) {
  rk__cg_wgsl_declare(
      p, rk__cg_wgsl_spelled(p, st->typedef_name ? st->typedef_name : st->tag),
      st->loc);
  /* The layout the checker computed with C's rules must be WGSL's too, or
   * host and device would disagree about the bytes of a buffer. */
  uint32_t off = 0;
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    off = round_up(off, wgsl_align(f->type));
    if (off != f->offset || f->type->kind == CG_TY_BOOL)
      rk__cg_error(p->ctx, f->loc,
                   "field '%s' is at byte %u in C but would be at byte %u in "
                   "a WGSL storage buffer: the layouts cannot match",
                   f->name, (unsigned)f->offset, (unsigned)off);
    off += wgsl_size(f->type);
  }
  if (wgsl_size(&st->type) != st->size || wgsl_align(&st->type) != st->align)
    rk__cg_error(p->ctx, st->loc,
                 "this struct is %u bytes (alignment %u) in C but %u bytes "
                 "(alignment %u) in WGSL: the layouts cannot match",
                 (unsigned)st->size, (unsigned)st->align,
                 (unsigned)wgsl_size(&st->type),
                 (unsigned)wgsl_align(&st->type));
  rk__cg_wgsl_printf(p, "\n// %u bytes, the C layout: ", (unsigned)st->size);
  puts_(p, st->typedef_name ? st->typedef_name : "struct ");
  if (!st->typedef_name) puts_(p, st->tag);
  puts_(p, "\nstruct ");
  struct_name(p, st);
  puts_(p, " {\n");
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    puts_(p, "  ");
    rk__cg_wgsl_name(p, f->name);
    puts_(p, ": ");
    rk__cg_wgsl_type(p, f->type, false);
    puts_(p, ",\n");
  }
  puts_(p, "}\n");
}

static void header_comment(printer_t *p, const char *source_name) {
  puts_(p,
        "// Generated by rk for target wgsl (WebGPU Shading Language) "
        "from\n//   ");
  for (const char *s = source_name; *s && s - source_name < CG_HEADER_NAME_MAX;
       ++s) {
    char c = *s;
    if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
    rk__strbuf_append(p->out, &c, 1);
  }
  puts_(
      p,
      "\n// Do not edit: change the kernel source and transpile again.\n"
      "//\n"
      "// Bindings (group 0) per entry point: its buffer parameters at 0..k-1 "
      "in\n// parameter order, then, if it has by-value parameters, the "
      "struct of them\n// (rk_params_t; rk_params_<entry>_t with several "
      "entries) at k. Set the\n// pipeline constants rk_wg_x, rk_wg_y, "
      "rk_wg_z to the launch's block size.\n");
}

/* The loop guard's declarations (rk_transpile_options_t.wgsl_loop_guard),
 * when some function of the output loops. */
static void loop_guard(printer_t *p) {
  bool loops = p->plan->unit->uses_loop;
  for (uint32_t i = 0; i < p->plan->unit->nitems && !loops; ++i)
    for (uint32_t k = 0; k < p->plan->funcs[i].nentries; ++k)
      loops |= p->plan->funcs[i].entries[k].loops;
  if (!loops) return;
  static const char *const kNames[] = {"rk_loop_guard_t", "rk_loop_guard",
                                       "rk_loops_begun", "rk_loops_ended"};
  for (int i = 0; i < 4; ++i) {
    cg_loc_t loc = {1, 1, 0};
    rk__cg_wgsl_declare(p, kNames[i], loc);
  }
  puts_(p,
        "\n// The loop guard: every loop counts in rk_loops_begun that it "
        "starts and in\n// rk_loops_ended that it ends as the program says. "
        "Right after a loop they\n// differ only when the implementation "
        "cut a loop short; then hit is set.\n// Bind {0, 0, 0, 0} (the zeros "
        "seed the counts, so no compiler can\n// prove them equal).\n"
        "struct rk_loop_guard_t {\n"
        "  hit: atomic<u32>,\n  zero0: u32,\n  zero1: u32,\n  pad: u32,\n}\n"
        "@group(1) @binding(0) var<storage, read_write> rk_loop_guard: "
        "rk_loop_guard_t;\n"
        "var<private> rk_loops_begun: u32;\n"
        "var<private> rk_loops_ended: u32;\n");
  p->guard = true;
}

void rk__cg_emit_wgsl(cg_ctx_t *ctx, const cg_plan_t *plan,
                      const cg_emit_options_t *options, rk__strbuf_t *out) {
  const cg_unit_t *unit = plan->unit;
  printer_t p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.plan = plan;
  p.out = out;
  p.multi = plan->nselected > 1;
  header_comment(&p, options->source_name ? options->source_name : "<source>");
  if (plan->nselected) {
    static const char *const kWg[] = {"rk_wg_x", "rk_wg_y", "rk_wg_z"};
    static const char *const kDefault[] = {"64u", "1u", "1u"};
    puts_(&p, "\n");
    for (int a = 0; a < 3; ++a) {
      cg_loc_t loc = {1, 1, 0};
      rk__cg_wgsl_declare(&p, kWg[a], loc);
      rk__cg_wgsl_printf(&p, "override %s: u32 = %s;\n", kWg[a], kDefault[a]);
    }
  }
  if (plan->dyn_shared) {
    cg_loc_t loc = {1, 1, 0};
    rk__cg_wgsl_declare(&p, "rk_dyn_shared_bytes", loc);
    puts_(&p,
          "\n// Bytes of the dynamic workgroup memory (rk_dynamic_shared()): "
          "set the\n// pipeline constant rk_dyn_shared_bytes to the launch's "
          "shared_mem, a\n// multiple of the element size, at least one "
          "element.\n"
          "override rk_dyn_shared_bytes: u32 = 16u;\n");
  }
  if (options->loop_guard) loop_guard(&p);
  if (unit->has_stencil) {
    cg_loc_t loc = {1, 1, 0};
    rk__cg_wgsl_declare(&p, "rk_stencil_pos_t", loc);
    puts_(&p,
          "\n// The position of a stencil point: global coordinates, the "
          "linear index\n// idx = (z * ny + y) * nx + x and the domain size.\n"
          "struct rk_stencil_pos_t {\n"
          "  x: i32,\n  y: i32,\n  z: i32,\n  idx: i32,\n"
          "  nx: i32,\n  ny: i32,\n  nz: i32,\n}\n");
  }
  bool after_consts = true;
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    switch (it->kind) {
      case CG_ITEM_STRUCT:
        struct_def(&p, it->st);
        after_consts = true;
        break;
      case CG_ITEM_MACRO:
      case CG_ITEM_CONST: {
        const cg_var_t *v = it->var;
        rk__cg_wgsl_declare(&p, rk__cg_wgsl_spelled(&p, v->name), v->loc);
        if (after_consts) puts_(&p, "\n");
        after_consts = false;
        puts_(&p, "const ");
        rk__cg_wgsl_name(&p, v->name);
        cg_type_kind_t k = v->type->kind;
        if (k != CG_TY_I64 && k != CG_TY_U64 && k != CG_TY_F64) {
          puts_(&p, ": "); /* else abstract: only valid while unused */
          rk__cg_wgsl_type(&p, v->type, false);
        }
        puts_(&p, " = ");
        p.fn = NULL;
        p.fp = NULL;
        rk__cg_wgsl_expr(&p, v->init);
        puts_(&p, ";\n");
        break;
      }
      case CG_ITEM_FUNC:
        after_consts = true;
        if (it->fn->kind == CG_FN_HELPER)
          rk__cg_wgsl_helper(&p, &plan->funcs[i]);
        else if (plan->funcs[i].selected)
          rk__cg_wgsl_entry(&p, &plan->funcs[i]);
        break;
    }
    rk__cg_wgsl_check_size(&p, (cg_loc_t){1, 1, 0});
  }
  /* An entry point that shadows a built-in the output calls. */
  for (int i = 0; i < p.nshadowing && !out->failed; ++i) {
    const char *name = p.shadowing[i]->name;
    if (rk__cg_map_get(&p.called, name))
      rk__cg_error(ctx, p.shadowing[i]->loc,
                   "'%s' cannot name an entry point here: the WGSL output "
                   "calls WGSL's built-in %s(), which the entry point's "
                   "name would hide",
                   name, name);
  }
}
