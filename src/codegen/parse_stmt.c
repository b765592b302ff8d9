/* Parser: statements and blocks (parse_internal.h). */
#include <string.h>

#include "codegen/parse_internal.h"

/* ---- Statements ---------------------------------------------------------- */

static cg_stmt_t *parse_expr_stmt(parser_t *p) {
  const cg_token_t *t = cur(p);
  cg_stmt_t *s = rk__cg_parse_new_stmt(p, CG_S_EXPR, t->loc);
  s->expr = rk__cg_parse_expr(p);
  rk__cg_parse_expect(p, ';', "';' after the expression");
  return s;
}

cg_stmt_t *rk__cg_parse_stmt(parser_t *p) {
  const cg_token_t *t = cur(p);
  rk__cg_parse_enter(p, t->loc);
  cg_stmt_t *s = NULL;
  if (t->kind == CG_TOK_DEFINE)
    rk__cg_parse_error_at_token(p, t, "a statement");
  if (is_punct(t, '{')) {
    s = rk__cg_parse_block(p);
  } else if (is_punct(t, ';')) {
    next(p);
    s = rk__cg_parse_new_stmt(p, CG_S_EMPTY, t->loc);
  } else if (t->kind == CG_TOK_IDENT && is_punct(ahead(p, 1), ':') &&
             !rk__cg_parse_is_type_name(p, t)) {
    rk__cg_error(p->ctx, t->loc,
                 "labels are not supported by the kernel language (there "
                 "is no goto)");
  } else if (t->kind == CG_TOK_KEYWORD) {
    switch (t->sub) {
      case CG_KW_IF:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_IF, t->loc);
        rk__cg_parse_expect(p, '(', "'(' after 'if'");
        s->if_.cond = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')' after the condition");
        s->if_.then = rk__cg_parse_stmt(p);
        if (is_kw(cur(p), CG_KW_ELSE)) {
          next(p);
          s->if_.other = rk__cg_parse_stmt(p);
        }
        break;
      case CG_KW_WHILE:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_WHILE, t->loc);
        rk__cg_parse_expect(p, '(', "'(' after 'while'");
        s->loop.cond = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')' after the condition");
        s->loop.body = rk__cg_parse_stmt(p);
        break;
      case CG_KW_DO:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_DO, t->loc);
        s->loop.body = rk__cg_parse_stmt(p);
        if (!is_kw(cur(p), CG_KW_WHILE))
          rk__cg_parse_error_at_token(p, cur(p),
                                      "'while' after the body of 'do'");
        next(p);
        rk__cg_parse_expect(p, '(', "'(' after 'while'");
        s->loop.cond = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')' after the condition");
        rk__cg_parse_expect(p, ';', "';' after 'do ... while (...)'");
        break;
      case CG_KW_FOR:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_FOR, t->loc);
        rk__cg_parse_expect(p, '(', "'(' after 'for'");
        if (accept(p, ';')) {
          s->for_.init = NULL;
        } else if (rk__cg_parse_starts_decl(p, cur(p))) {
          s->for_.init = rk__cg_parse_local_decl(p);
        } else {
          s->for_.init = parse_expr_stmt(p);
        }
        if (!is_punct(cur(p), ';')) s->for_.cond = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ';', "';' after the loop condition");
        if (!is_punct(cur(p), ')')) s->for_.step = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')' after the loop step");
        s->for_.body = rk__cg_parse_stmt(p);
        break;
      case CG_KW_SWITCH:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_SWITCH, t->loc);
        rk__cg_parse_expect(p, '(', "'(' after 'switch'");
        s->switch_.value = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ')', "')' after the switch value");
        if (!is_punct(cur(p), '{'))
          rk__cg_error(p->ctx, cur(p)->loc,
                       "the body of a switch must be a block { ... }");
        s->switch_.body = rk__cg_parse_stmt(p);
        break;
      case CG_KW_CASE:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_CASE, t->loc);
        s->case_.value = rk__cg_parse_cond(p);
        if (is_punct(cur(p), CG_P_ELLIPSIS))
          rk__cg_error(p->ctx, cur(p)->loc, "case ranges are not standard C11");
        rk__cg_parse_expect(p, ':', "':' after the case value");
        break;
      case CG_KW_DEFAULT:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_DEFAULT, t->loc);
        rk__cg_parse_expect(p, ':', "':' after 'default'");
        break;
      case CG_KW_BREAK:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_BREAK, t->loc);
        rk__cg_parse_expect(p, ';', "';' after 'break'");
        break;
      case CG_KW_CONTINUE:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_CONTINUE, t->loc);
        rk__cg_parse_expect(p, ';', "';' after 'continue'");
        break;
      case CG_KW_RETURN:
        next(p);
        s = rk__cg_parse_new_stmt(p, CG_S_RETURN, t->loc);
        if (!is_punct(cur(p), ';')) s->expr = rk__cg_parse_expr(p);
        rk__cg_parse_expect(p, ';', "';' after the return value");
        break;
      case CG_KW_GOTO:
        rk__cg_error(p->ctx, t->loc,
                     "goto is not supported by the kernel language: use "
                     "loops, break and continue");
      case CG_KW_ELSE:
        rk__cg_error(p->ctx, t->loc, "'else' without a matching 'if'");
      default:
        if (rk__cg_parse_starts_decl(p, t)) s = rk__cg_parse_local_decl(p);
        break;
    }
    if (!s) s = parse_expr_stmt(p);
  } else if (rk__cg_parse_starts_decl(p, t)) {
    s = rk__cg_parse_local_decl(p);
  } else {
    s = parse_expr_stmt(p);
  }
  rk__cg_parse_leave(p);
  return s;
}

cg_stmt_t *rk__cg_parse_block(parser_t *p) {
  const cg_token_t *open = rk__cg_parse_expect(p, '{', "'{'");
  cg_stmt_t *s = rk__cg_parse_new_stmt(p, CG_S_BLOCK, open->loc);
  cg_vec_t items = {0};
  while (!is_punct(cur(p), '}')) {
    if (cur(p)->kind == CG_TOK_EOF)
      rk__cg_error(p->ctx, open->loc, "this '{' is never closed");
    rk__cg_vec_push(p->ctx, &items, rk__cg_parse_stmt(p));
  }
  next(p);
  s->block.items = (cg_stmt_t **)items.v;
  s->block.n = items.n;
  return s;
}
