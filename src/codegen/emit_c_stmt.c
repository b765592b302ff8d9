/* The C-family printer: declarations and statements (emit_c_internal.h). */
#include "codegen/emit_c_internal.h"

/* ---- Declarations ---------------------------------------------------------
 */

void rk__cg_c_dims(printer_t *p, cg_expr_t *const *d, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    puts_(p, "[");
    rk__cg_c_expr(p, d[i], PREC_ASSIGN);
    puts_(p, "]");
  }
}

/* `const float *restrict x` with the target's address space. */
void rk__cg_c_pointer_decl(printer_t *p, const cg_var_t *v) {
  puts_(p, p->t->global_space);
  if (v->type->elem_const) puts_(p, "const ");
  rk__cg_c_type_name(p, v->type->elem);
  puts_(p, " *");
  if (v->is_const) puts_(p, "const ");
  if (v->is_restrict && p->t->restrict_kw)
    rk__cg_c_printf(p, "%s ", p->t->restrict_kw);
  rk__cg_c_name(p, v->name);
}

static void value_decl(printer_t *p, const cg_var_t *v) {
  if (v->is_const) puts_(p, "const ");
  rk__cg_c_type_name(p, v->type);
  puts_(p, " ");
  rk__cg_c_name(p, v->name);
  rk__cg_c_dims(p, v->dims, v->ndims);
}

void rk__cg_c_param_decl(printer_t *p, const cg_var_t *v) {
  if (v->type->kind == CG_TY_PTR)
    rk__cg_c_pointer_decl(p, v);
  else
    value_decl(p, v);
}

/* ---- Statements -----------------------------------------------------------
 */

static void stmt(printer_t *p, const cg_stmt_t *s);

/* `T *p = (T *)rk_dynamic_shared()` in the target's spelling (the
 * checker makes it a declaration of its own). */
static void dyn_shared_decl(printer_t *p, const cg_var_t *v) {
  const char *space = p->t->dyn_space ? p->t->dyn_space : "";
  const char *c = v->type->elem_const ? "const " : "";
  rk__cg_c_printf(p, "%s%s", space, c);
  rk__cg_c_type_name(p, v->type->elem);
  puts_(p, " *");
  if (v->is_const) puts_(p, "const ");
  rk__cg_c_name(p, v->name);
  rk__cg_c_printf(p, " = (%s%s", space, c);
  rk__cg_c_type_name(p, v->type->elem);
  puts_(p, p->t->dyn_space ? " *)rk_dyn_shared" : " *)rk_dynamic_shared()");
}

static void decl_inline(printer_t *p, const cg_stmt_t *s) {
  if (s->decl.n == 1 && s->decl.vars[0]->kind == CG_VAR_DYNSHARED) {
    dyn_shared_decl(p, s->decl.vars[0]);
    return;
  }
  for (uint32_t i = 0; i < s->decl.n; ++i) {
    const cg_var_t *v = s->decl.vars[i];
    if (i == 0) {
      if (v->kind == CG_VAR_SHARED) puts_(p, p->t->shared_decl);
      if (v->is_const) puts_(p, "const ");
      rk__cg_c_type_name(p, v->type);
      puts_(p, " ");
    } else {
      puts_(p, ", ");
    }
    rk__cg_c_name(p, v->name);
    rk__cg_c_dims(p, v->dims, v->ndims);
    if (v->init) {
      puts_(p, " = ");
      rk__cg_c_expr(p, v->init, PREC_ASSIGN);
    }
  }
}

/* A statement as the body of if/else/loops: a block stays on the header's
 * line, anything else goes on its own indented line. */
static void body(printer_t *p, const cg_stmt_t *s) {
  if (s->kind == CG_S_BLOCK) {
    puts_(p, " ");
    stmt(p, s);
  } else {
    puts_(p, "\n");
    p->indent++;
    indent(p);
    stmt(p, s);
    p->indent--;
  }
}

void rk__cg_c_block_items(printer_t *p, const cg_stmt_t *s) {
  for (uint32_t i = 0; i < s->block.n; ++i) {
    indent(p);
    stmt(p, s->block.items[i]);
    puts_(p, "\n");
  }
}

/* Prints one statement at the current position (the caller indented);
 * no trailing newline. */
static void stmt(printer_t *p, const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BLOCK:
      puts_(p, "{\n");
      p->indent++;
      rk__cg_c_block_items(p, s);
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    case CG_S_DECL:
      decl_inline(p, s);
      puts_(p, ";");
      return;
    case CG_S_EXPR:
      rk__cg_c_expr(p, s->expr, PREC_ASSIGN);
      puts_(p, ";");
      return;
    case CG_S_IF:
      puts_(p, "if (");
      rk__cg_c_expr(p, s->if_.cond, PREC_ASSIGN);
      puts_(p, ")");
      body(p, s->if_.then);
      if (s->if_.other) {
        if (s->if_.then->kind == CG_S_BLOCK) {
          puts_(p, " else");
        } else {
          puts_(p, "\n");
          indent(p);
          puts_(p, "else");
        }
        if (s->if_.other->kind == CG_S_IF) {
          puts_(p, " ");
          stmt(p, s->if_.other);
        } else {
          body(p, s->if_.other);
        }
      }
      return;
    case CG_S_WHILE:
      puts_(p, "while (");
      rk__cg_c_expr(p, s->loop.cond, PREC_ASSIGN);
      puts_(p, ")");
      body(p, s->loop.body);
      return;
    case CG_S_DO:
      puts_(p, "do");
      body(p, s->loop.body);
      if (s->loop.body->kind == CG_S_BLOCK) {
        puts_(p, " while (");
      } else {
        puts_(p, "\n");
        indent(p);
        puts_(p, "while (");
      }
      rk__cg_c_expr(p, s->loop.cond, PREC_ASSIGN);
      puts_(p, ");");
      return;
    case CG_S_FOR:
      puts_(p, "for (");
      if (s->for_.init) {
        if (s->for_.init->kind == CG_S_DECL)
          decl_inline(p, s->for_.init);
        else
          rk__cg_c_expr(p, s->for_.init->expr, PREC_ASSIGN);
      }
      puts_(p, ";");
      if (s->for_.cond) {
        puts_(p, " ");
        rk__cg_c_expr(p, s->for_.cond, PREC_ASSIGN);
      }
      puts_(p, ";");
      if (s->for_.step) {
        puts_(p, " ");
        rk__cg_c_expr(p, s->for_.step, PREC_ASSIGN);
      }
      puts_(p, ")");
      body(p, s->for_.body);
      return;
    case CG_S_SWITCH: {
      puts_(p, "switch (");
      rk__cg_c_expr(p, s->switch_.value, PREC_ASSIGN);
      puts_(p, ") {\n");
      const cg_stmt_t *b = s->switch_.body;
      p->indent++;
      for (uint32_t i = 0; i < b->block.n; ++i) {
        const cg_stmt_t *item = b->block.items[i];
        bool label = item->kind == CG_S_CASE || item->kind == CG_S_DEFAULT;
        if (!label) p->indent++;
        indent(p);
        stmt(p, item);
        puts_(p, "\n");
        if (!label) p->indent--;
      }
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    }
    case CG_S_CASE:
      puts_(p, "case ");
      rk__cg_c_expr(p, s->case_.value, PREC_COND);
      puts_(p, ":");
      return;
    case CG_S_DEFAULT:
      puts_(p, "default:");
      return;
    case CG_S_BREAK:
      puts_(p, "break;");
      return;
    case CG_S_CONTINUE:
      puts_(p, "continue;");
      return;
    case CG_S_RETURN:
      puts_(p, "return");
      if (s->expr) {
        puts_(p, " ");
        rk__cg_c_expr(p, s->expr, PREC_ASSIGN);
      }
      puts_(p, ";");
      return;
    case CG_S_EMPTY:
      puts_(p, ";");
      return;
  }
}
