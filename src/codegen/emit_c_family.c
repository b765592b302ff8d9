/* The C-family printer: C, CUDA C++, OpenCL C 1.2 and MSL from one walk of
 * the checked tree, parameterised by a per-target table (emit_c_targets.c,
 * emit.h).
 *
 * It prints the kernels the lowering planned (lower.h):
 *   - a stencil's kernel: the position as a local struct rk_stencil_pos_t,
 *     on GPU targets the staging loop that copies the tile plus halo of
 *     every buffer read through neighbour functions into block-shared
 *     memory, then the interior check; neighbour reads come from the tile
 *     on GPU targets and from global memory in C;
 *   - a handler's rk_handle_<name> (its body), its one-message kernel and
 *     its batch kernel (one message per thread of global x index m for a
 *     stateless handler, all in order on global thread 0 with a state), and
 *     with persistent_actors
 *     (CUDA) rk_actor_<name> (emit_cuda_actor.c prints it and the prelude
 *     it shares).
 * What the target's language needs besides:
 *   - MSL has no global thread indices: kernels receive them as parameters
 *     (rk_tid, rk_bid, rk_bdim, rk_gdim) and pass them on to helpers that
 *     use index built-ins, directly or through their callees.
 *   - MSL atomics cast the element's address to device/threadgroup
 *     atomic_int/atomic_uint; compare-and-swap goes through a small helper
 *     that turns the weak exchange into a strong one.
 *   - MSL: a struct operand of ?: in device, constant or threadgroup memory
 *     is cast to its struct type, a copy in thread memory, since the
 *     address space of an lvalue is part of its type.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/emit_c_internal.h"

/* ---- File-scope items -----------------------------------------------------
 */

typedef enum layout_what {
  LAYOUT_SIZE,
  LAYOUT_ALIGN,
  LAYOUT_OFFSET
} layout_what_t;

/* One assertion of the layout: sizeof, alignof or offsetof == value. */
static void layout_assert(printer_t *p, const cg_struct_t *st,
                          layout_what_t what, const char *field,
                          uint32_t value) {
  switch (p->t->asserts) {
    case ASSERT_C11:
      puts_(p, "_Static_assert(");
      break;
    case ASSERT_CXX:
      puts_(p, "static_assert(");
      break;
    case ASSERT_TYPEDEF:
      rk__cg_c_printf(p, "typedef char rk_layout_check_%d[(", p->nasserts++);
      break;
  }
  puts_(p, what == LAYOUT_SIZE    ? "sizeof("
           : what == LAYOUT_ALIGN ? p->t->alignof_name
                                  : p->t->offsetof_name);
  if (what != LAYOUT_SIZE) puts_(p, "(");
  rk__cg_c_struct_name(p, st);
  if (what == LAYOUT_OFFSET) {
    puts_(p, ", ");
    rk__cg_c_name(p, field);
  }
  rk__cg_c_printf(p, ") == %u", (unsigned)value);
  if (p->t->asserts == ASSERT_TYPEDEF) {
    puts_(p, ") ? 1 : -1];\n");
    return;
  }
  puts_(p, ", \"rk layout of ");
  puts_(p, st->typedef_name ? st->typedef_name : st->tag);
  if (field) rk__cg_c_printf(p, ".%s", field);
  puts_(p, "\");\n");
}

static void struct_def(printer_t *p, const cg_struct_t *st) {
  if (st->typedef_name) puts_(p, "typedef ");
  puts_(p, "struct ");
  if (st->tag) {
    rk__cg_c_name(p, st->tag);
    puts_(p, " ");
  }
  puts_(p, "{\n");
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    puts_(p, "  ");
    rk__cg_c_type_name(p, f->type);
    puts_(p, " ");
    rk__cg_c_name(p, f->name);
    rk__cg_c_dims(p, f->dims, f->ndims);
    puts_(p, ";\n");
  }
  puts_(p, "}");
  if (st->typedef_name) {
    puts_(p, " ");
    rk__cg_c_name(p, st->typedef_name);
  }
  puts_(p, ";\n");
  /* The layout the checker computed with C's rules; every target must
   * agree, or the host and the device would disagree about the bytes.
   * Without offsetof (NVRTC has none unless host headers are given), the
   * offsets follow from the asserted sizes and alignments. */
  layout_assert(p, st, LAYOUT_SIZE, NULL, st->size);
  layout_assert(p, st, LAYOUT_ALIGN, NULL, st->align);
  if (p->t->offsetof_name)
    for (uint32_t i = 0; i < st->nfields; ++i)
      layout_assert(p, st, LAYOUT_OFFSET, st->fields[i].name,
                    st->fields[i].offset);
}

/* ---- Prelude --------------------------------------------------------------
 */

/* rk_atomic_cas_* for Metal: a strong compare-and-swap that returns the old
 * value, for each address space and element type. */
static void msl_cas_helpers(printer_t *p) {
  static const char *const kSpaces[] = {"device", "threadgroup"};
  static const char *const kTypes[][2] = {{"atomic_int", "int"},
                                          {"atomic_uint", "uint"}};
  puts_(p,
        "\n/* rk_atomic_cas_*: compare-and-swap returning the old value. Metal "
        "has only\n * the weak exchange, which may fail spuriously: retry "
        "until it succeeds or\n * sees another value. */\n");
  for (size_t s = 0; s < sizeof kSpaces / sizeof kSpaces[0]; ++s)
    for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t)
      rk__cg_c_printf(
          p,
          "static inline %s rk_atomic_cas_%s(%s metal::%s *p, %s expected,\n"
          "    %s desired) {\n"
          "  %s old = expected;\n"
          "  while (!metal::atomic_compare_exchange_weak_explicit(\n"
          "             p, &old, desired, metal::memory_order_relaxed,\n"
          "             metal::memory_order_relaxed) &&\n"
          "         old == expected) {\n"
          "  }\n"
          "  return old;\n"
          "}\n",
          kTypes[t][1], kSpaces[s], kSpaces[s], kTypes[t][0], kTypes[t][1],
          kTypes[t][1], kTypes[t][1]);
}

static void header_comment(printer_t *p, const char *source_name) {
  rk__cg_c_printf(p, "/* Generated by rk for target %s (%s) from\n *   ",
                  p->t->name, p->t->language);
  /* The name goes into a comment: keep it printable and unable to close
   * the comment. */
  for (const char *s = source_name; *s && s - source_name < CG_HEADER_NAME_MAX;
       ++s) {
    char c = *s;
    if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
    if (c == '/' && s > source_name && s[-1] == '*') c = '?';
    rk__strbuf_append(p->out, &c, 1);
  }
  puts_(p,
        "\n * Do not edit: change the kernel source and transpile again. */\n");
}

static void prelude(printer_t *p) {
  switch (p->t->target) {
    case RK_TARGET_C:
      puts_(p, "#include <rk/kernel.h>\n");
      break;
    case RK_TARGET_OPENCL:
      if (p->plan->unit->uses_f64)
        puts_(p, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
      break;
    case RK_TARGET_MSL:
      puts_(p, "#include <metal_stdlib>\n");
      if (p->plan->unit->uses_cas) msl_cas_helpers(p);
      break;
    default:
      break;
  }
  if (p->plan->unit->has_stencil)
    puts_(p,
          "\n/* The position of a stencil point: global coordinates, the "
          "linear index\n * idx = (z * ny + y) * nx + x and the domain size. "
          "*/\n"
          "typedef struct rk_stencil_pos {\n"
          "  int x, y, z, idx, nx, ny, nz;\n"
          "} rk_stencil_pos_t;\n");
}

void rk__cg_emit_c_family(const cg_plan_t *plan, rk_target_t target,
                          const cg_emit_options_t *options, rk__strbuf_t *out) {
  const cg_unit_t *unit = plan->unit;
  printer_t p;
  memset(&p, 0, sizeof p);
  p.t = &rk__cg_c_targets[target];
  p.plan = plan;
  p.out = out;
  p.buffer_offsets = options->buffer_offsets && target == RK_TARGET_OPENCL;
  header_comment(&p, options->source_name ? options->source_name : "<source>");
  prelude(&p);
  bool after_defines = true;
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    switch (it->kind) {
      case CG_ITEM_STRUCT:
        puts_(&p, "\n");
        struct_def(&p, it->st);
        after_defines = true;
        break;
      case CG_ITEM_MACRO:
      case CG_ITEM_CONST: {
        if (after_defines) puts_(&p, "\n");
        after_defines = false;
        const cg_var_t *v = it->var;
        if (it->kind == CG_ITEM_MACRO) {
          puts_(&p, "#define ");
          rk__cg_c_name(&p, v->name);
          puts_(&p, " ");
        } else {
          rk__cg_c_printf(&p, "%s ", p.t->const_decl);
          rk__cg_c_type_name(&p, v->type);
          puts_(&p, " ");
          rk__cg_c_name(&p, v->name);
          puts_(&p, " = ");
        }
        rk__cg_c_expr(&p, v->init, PREC_ASSIGN);
        puts_(&p, it->kind == CG_ITEM_MACRO ? "\n" : ";\n");
        break;
      }
      case CG_ITEM_FUNC:
        rk__cg_c_function(&p, &plan->funcs[i]);
        after_defines = true;
        break;
    }
  }
}
