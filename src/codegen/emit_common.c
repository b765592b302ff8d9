/* Pieces shared by the printers (emit_c_family.c, emit_wgsl.c): the parts
 * of the output that differ between targets only in a spelling the caller
 * passes in. */
#include <string.h>

#include "codegen/emit.h"

static void pos_field(rk__strbuf_t *out, rk_target_t target, const char *pos,
                      const char *field) {
  rk__cg_put_name(out, target, pos);
  rk__strbuf_puts(out, field);
}

void rk__cg_emit_stencil_interior(rk__strbuf_t *out, rk_target_t target,
                                  const cg_stencil_plan_t *s, const char *ret) {
  const char *pos = s->pos->name;
  const uint32_t dims = s->dims, halo = s->halo;
  static const char *const kLow[] = {".x < ", ".y < ", ".z < "};
  static const char *const kHigh[] = {".x >= ", ".y >= ", ".z >= "};
  static const char *const kN[] = {".nx - ", ".ny - ", ".nz - "};
  rk__strbuf_puts(out, "  if (");
  for (uint32_t a = 0; a < dims; ++a) {
    if (a) rk__strbuf_puts(out, " || ");
    pos_field(out, target, pos, kLow[a]);
    rk__strbuf_printf(out, "%u || ", (unsigned)halo);
    pos_field(out, target, pos, kHigh[a]);
    pos_field(out, target, pos, kN[a]);
    rk__strbuf_printf(out, "%u", (unsigned)halo);
  }
  rk__strbuf_puts(out, ret);
  rk__strbuf_puts(out, "  ");
  pos_field(out, target, pos, ".idx = ");
  if (dims == 3) {
    rk__strbuf_puts(out, "(");
    pos_field(out, target, pos, ".z * ");
    pos_field(out, target, pos, ".ny + ");
    pos_field(out, target, pos, ".y) * ");
  } else {
    pos_field(out, target, pos, ".y * ");
  }
  pos_field(out, target, pos, ".nx + ");
  pos_field(out, target, pos, ".x;\n");
}

void rk__cg_emit_stencil_cell(rk__strbuf_t *out, const cg_stencil_plan_t *s,
                              int axis) {
  rk__strbuf_puts(out, "rk_i");
  if (s->cell_div[axis])
    rk__strbuf_printf(out, " / %u", (unsigned)s->cell_div[axis]);
  if (s->cell_mod[axis])
    rk__strbuf_printf(out, " %% %u", (unsigned)s->cell_mod[axis]);
}

void rk__cg_emit_int_literal(rk__strbuf_t *out, uint64_t v, cg_type_kind_t k,
                             bool hex, const char *i64_suffix,
                             const char *u64_suffix) {
  rk__strbuf_printf(out, hex ? "0x%llx" : "%llu", (unsigned long long)v);
  if (k == CG_TY_U32)
    rk__strbuf_puts(out, "u");
  else if (k == CG_TY_I64)
    rk__strbuf_puts(out, i64_suffix);
  else if (k == CG_TY_U64)
    rk__strbuf_puts(out, u64_suffix);
}

void rk__cg_emit_literal(rk__strbuf_t *out, const cg_expr_t *e,
                         const char *i64_suffix, const char *u64_suffix) {
  switch (e->kind) {
    case CG_E_INT:
      rk__cg_emit_int_literal(out, e->lit_int.value, e->type->kind,
                              e->lit_int.hex, i64_suffix, u64_suffix);
      return;
    case CG_E_FLOAT:
      rk__strbuf_puts(out, e->lit_float.text);
      if (e->type->kind == CG_TY_F32) rk__strbuf_puts(out, "f");
      return;
    case CG_E_BOOL:
      rk__strbuf_puts(out, e->lit_bool ? "true" : "false");
      return;
    default:
      return;
  }
}
