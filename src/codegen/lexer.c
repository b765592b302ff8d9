/* Lexer and mini-preprocessor of the kernel language (lexer.h). */
#include "codegen/lexer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/ast.h"

static const struct {
  const char *text;
  uint8_t len;
} kKeywords[CG_KW_COUNT_] = {[CG_KW_NONE_] = {"", 0},
#define CG_KW_ROW_(name, text) [CG_KW_##name] = {text, sizeof text - 1},
                             CG_KEYWORDS(CG_KW_ROW_)
#undef CG_KW_ROW_
};

const char *rk__cg_kw_spelling(int kw) {
  return kw > 0 && kw < CG_KW_COUNT_ ? kKeywords[kw].text : "?";
}

static const char *const kPuncts[] = {
    "->", "++", "--", "<<", ">>", "<=",  ">=",  "==", "!=", "&&", "||",
    "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=", "...",
};

void rk__cg_token_describe(const cg_token_t *t, char *buf, size_t cap) {
  switch (t->kind) {
    case CG_TOK_EOF:
      snprintf(buf, cap, "end of file");
      return;
    case CG_TOK_DEFINE_END:
      snprintf(buf, cap, "end of line");
      return;
    case CG_TOK_DEFINE:
      snprintf(buf, cap, "#define");
      return;
    case CG_TOK_PUNCT:
      if (t->sub < CG_P_FIRST_)
        snprintf(buf, cap, "'%c'", (char)t->sub);
      else
        snprintf(buf, cap, "'%s'", kPuncts[t->sub - CG_P_FIRST_]);
      return;
    default: {
      unsigned len = t->len > 64 ? 64 : t->len;
      snprintf(buf, cap, "'%.*s'", (int)len, t->text);
      return;
    }
  }
}

/* ---- Scanner state ------------------------------------------------------- */

typedef struct lexer {
  cg_ctx_t *ctx;
  const char *src;
  size_t pos, len;
  uint32_t line;
  size_t line_start;
  bool at_line_start; /* only white space since the last newline */
  bool in_directive;  /* newlines end the current #define */
  cg_token_t *toks;
  uint32_t n, cap;
  /* #ifdef/#ifndef nesting: per level, whether the enclosing text is
   * compiled, whether the current branch is, and whether #else was seen. */
  struct {
    bool outer, taken, in_else;
    cg_loc_t loc;
  } conds[CG_MAX_CONDS];
  uint32_t nconds;
  cg_map_t macros; /* names #defined so far (in compiled text) -> "" */
} lexer_t;

/* Whether the text at the current position is compiled (not inside a
 * false #ifdef/#ifndef branch). */
static bool active(const lexer_t *lx) {
  if (!lx->nconds) return true;
  const uint32_t k = lx->nconds - 1;
  return lx->conds[k].outer &&
         (lx->conds[k].in_else ? !lx->conds[k].taken : lx->conds[k].taken);
}

static cg_loc_t here(const lexer_t *lx) {
  cg_loc_t loc = {lx->line, (uint32_t)(lx->pos - lx->line_start) + 1,
                  (uint32_t)lx->pos};
  return loc;
}

static char peek(const lexer_t *lx, size_t ahead) {
  return lx->pos + ahead < lx->len ? lx->src[lx->pos + ahead] : '\0';
}

static void advance(lexer_t *lx) {
  if (lx->src[lx->pos] == '\n') {
    lx->line++;
    lx->line_start = lx->pos + 1;
    lx->at_line_start = true;
  }
  lx->pos++;
}

static cg_token_t *push(lexer_t *lx, cg_tok_kind_t kind, cg_loc_t loc) {
  if (lx->n == lx->cap) {
    uint32_t cap = lx->cap ? lx->cap * 2 : 1024;
    cg_token_t *grown = rk__cg_alloc(lx->ctx, (size_t)cap * sizeof *grown);
    if (lx->n) memcpy(grown, lx->toks, (size_t)lx->n * sizeof *grown);
    lx->toks = grown;
    lx->cap = cap;
  }
  cg_token_t *t = &lx->toks[lx->n++];
  memset(t, 0, sizeof *t);
  t->kind = (uint8_t)kind;
  t->loc = loc;
  t->text = lx->src + loc.offset;
  return t;
}

static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Skips spaces and comments. In a directive it stops at the newline that
 * ends it (a backslash-newline continues the directive). */
static void skip_trivia(lexer_t *lx) {
  while (lx->pos < lx->len) {
    char c = lx->src[lx->pos];
    if (c == '\n' && lx->in_directive) return;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
        c == '\v') {
      advance(lx);
    } else if (c == '\\' && lx->in_directive &&
               (peek(lx, 1) == '\n' ||
                (peek(lx, 1) == '\r' && peek(lx, 2) == '\n'))) {
      advance(lx);
      if (lx->src[lx->pos] == '\r') advance(lx);
      advance(lx);
      lx->at_line_start = false;
    } else if (c == '/' && peek(lx, 1) == '/') {
      while (lx->pos < lx->len && lx->src[lx->pos] != '\n') advance(lx);
    } else if (c == '/' && peek(lx, 1) == '*') {
      cg_loc_t start = here(lx);
      bool was_line_start = lx->at_line_start;
      advance(lx);
      advance(lx);
      while (lx->pos < lx->len &&
             !(lx->src[lx->pos] == '*' && peek(lx, 1) == '/'))
        advance(lx);
      if (lx->pos >= lx->len)
        rk__cg_error(lx->ctx, start, "unterminated comment");
      advance(lx);
      advance(lx);
      /* A comment is white space: a '#' after it may still start a
       * directive if only white space preceded the comment. */
      lx->at_line_start = was_line_start && lx->at_line_start;
    } else {
      return;
    }
  }
}

/* ---- Numbers ------------------------------------------------------------- */

/* Characters of a numeric constant (far more than any value needs). */
enum { kMaxNumber = 100 };

static void lex_number(lexer_t *lx) {
  cg_loc_t loc = here(lx);
  size_t start = lx->pos;
  /* A preprocessing number: digits, letters, '.', and e+ e- p+ p-. */
  while (lx->pos < lx->len) {
    char c = lx->src[lx->pos];
    if ((c == '+' || c == '-') && lx->pos > start &&
        (lx->src[lx->pos - 1] == 'e' || lx->src[lx->pos - 1] == 'E' ||
         lx->src[lx->pos - 1] == 'p' || lx->src[lx->pos - 1] == 'P')) {
      advance(lx);
    } else if (is_ident_char(c) || c == '.') {
      advance(lx);
    } else {
      break;
    }
  }
  size_t len = lx->pos - start;
  const char *s = lx->src + start;
  if (len > kMaxNumber) rk__cg_error(lx->ctx, loc, "number is too long");
  char buf[104];
  memcpy(buf, s, len);
  buf[len] = '\0';

  bool hex = len > 1 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
  bool is_float = false;
  for (size_t i = 0; i < len; ++i) {
    char c = buf[i];
    if (c == '.' || (!hex && (c == 'e' || c == 'E')) ||
        (hex && (c == 'p' || c == 'P')))
      is_float = true;
  }

  if (is_float) {
    if (hex)
      rk__cg_error(lx->ctx, loc,
                   "hexadecimal floating constant '%s' is not supported; "
                   "write it in decimal",
                   buf);
    size_t body = len;
    uint8_t type = CG_TY_F64;
    if (buf[len - 1] == 'f' || buf[len - 1] == 'F') {
      type = CG_TY_F32;
      body--;
    } else if (buf[len - 1] == 'l' || buf[len - 1] == 'L') {
      rk__cg_error(lx->ctx, loc,
                   "long double constant '%s' is not supported by the "
                   "kernel language",
                   buf);
    }
    buf[body] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (body == 0 || end != buf + body)
      rk__cg_error(lx->ctx, loc, "invalid floating constant '%.*s'", (int)len,
                   s);
    cg_token_t *t = push(lx, CG_TOK_FLOAT, loc);
    t->len = (uint32_t)len;
    t->fval = v;
    t->num_type = type;
    return;
  }

  /* Integer: digits, then a suffix of u/U and ll/LL in either order. */
  size_t i = 0;
  int base = 10;
  if (hex) {
    base = 16;
    i = 2;
  } else if (buf[0] == '0' && len > 1) {
    base = 8;
    i = 1;
    if (buf[1] == 'b' || buf[1] == 'B')
      rk__cg_error(lx->ctx, loc,
                   "binary constant '%s' is not standard C11; write it in "
                   "hexadecimal",
                   buf);
  }
  uint64_t value = 0;
  bool overflow = false;
  size_t digits = 0;
  for (; i < len; ++i) {
    char c = buf[i];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      break;
    if (d >= base)
      rk__cg_error(lx->ctx, loc, "invalid digit '%c' in octal constant '%s'", c,
                   buf);
    if (value > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) overflow = true;
    value = value * (uint64_t)base + (uint64_t)d;
    digits++;
  }
  if (base == 16 && digits == 0)
    rk__cg_error(lx->ctx, loc, "invalid hexadecimal constant '%s'", buf);
  bool u = false, ll = false;
  const char *suffix = buf + i;
  for (size_t k = i; k < len;) {
    if ((buf[k] == 'u' || buf[k] == 'U') && !u) {
      u = true;
      k++;
    } else if ((buf[k] == 'l' && k + 1 < len && buf[k + 1] == 'l') ||
               (buf[k] == 'L' && k + 1 < len && buf[k + 1] == 'L')) {
      if (ll) break;
      ll = true;
      k += 2;
    } else if (buf[k] == 'l' || buf[k] == 'L') {
      rk__cg_error(lx->ctx, loc,
                   "the suffix of '%s' makes a 'long', whose size differs "
                   "between platforms; use 'll' (long long) or none",
                   buf);
    } else {
      rk__cg_error(lx->ctx, loc, "invalid suffix '%s' on integer constant",
                   suffix);
    }
  }
  if (overflow)
    rk__cg_error(lx->ctx, loc, "integer constant '%s' is too large", buf);

  /* The type C gives the constant (C11 6.4.4.1), among the language's. */
  uint8_t type;
  bool decimal = base == 10;
  if (u) {
    type = ll || value > UINT32_MAX ? CG_TY_U64 : CG_TY_U32;
  } else if (ll) {
    if (value <= INT64_MAX)
      type = CG_TY_I64;
    else if (!decimal)
      type = CG_TY_U64;
    else
      rk__cg_error(lx->ctx, loc, "integer constant '%s' is too large", buf);
  } else if (value <= INT32_MAX) {
    type = CG_TY_I32;
  } else if (!decimal && value <= UINT32_MAX) {
    type = CG_TY_U32;
  } else if (value <= INT64_MAX) {
    type = CG_TY_I64;
  } else if (!decimal) {
    type = CG_TY_U64;
  } else {
    rk__cg_error(lx->ctx, loc,
                 "integer constant '%s' is too large for any signed type; "
                 "add a 'u' suffix",
                 buf);
  }
  cg_token_t *t = push(lx, CG_TOK_INT, loc);
  t->len = (uint32_t)len;
  t->ival = value;
  t->num_type = type;
  t->hex = hex;
}

/* ---- Punctuators --------------------------------------------------------- */

static void lex_punct(lexer_t *lx) {
  cg_loc_t loc = here(lx);
  /* The longest multi-character punctuator that matches ("<<=" over
   * "<<"). */
  int best = -1;
  size_t best_len = 0;
  for (size_t p = 0; p < sizeof kPuncts / sizeof kPuncts[0]; ++p) {
    size_t n = strlen(kPuncts[p]);
    if (n > best_len && lx->pos + n <= lx->len &&
        memcmp(lx->src + lx->pos, kPuncts[p], n) == 0) {
      best = (int)p;
      best_len = n;
    }
  }
  if (best >= 0) {
    cg_token_t *t = push(lx, CG_TOK_PUNCT, loc);
    t->sub = (uint16_t)(CG_P_FIRST_ + best);
    t->len = (uint32_t)best_len;
    for (size_t k = 0; k < best_len; ++k) advance(lx);
    return;
  }
  char c = lx->src[lx->pos];
  if (strchr("+-*/%<>=!&|^~?:;,.()[]{}", c)) {
    cg_token_t *t = push(lx, CG_TOK_PUNCT, loc);
    t->sub = (uint16_t)(unsigned char)c;
    t->len = 1;
    advance(lx);
    return;
  }
  if (c == '"')
    rk__cg_error(lx->ctx, loc,
                 "string literals are not supported by the kernel language "
                 "(GPU targets have no strings)");
  if (c == '\'')
    rk__cg_error(lx->ctx, loc,
                 "character literals are not supported by the kernel "
                 "language; write the character code as an integer");
  if (c == '#')
    rk__cg_error(lx->ctx, loc,
                 "'#' is only allowed at the start of a line, for a "
                 "directive");
  if ((unsigned char)c >= 32 && (unsigned char)c < 127)
    rk__cg_error(lx->ctx, loc, "unexpected character '%c'", c);
  rk__cg_error(lx->ctx, loc, "unexpected byte 0x%02x", (unsigned char)c);
}

/* ---- Identifiers --------------------------------------------------------- */

/* Compiler extensions that would let a source do what no target can (run
 * code at load time, reach the host's assembler): refused by name. */
static const struct {
  const char *name, *what;
} kExtensions[] = {
    {"__attribute__", "attributes"}, {"__attribute", "attributes"},
    {"__declspec", "attributes"},    {"asm", "inline assembly"},
    {"__asm__", "inline assembly"},  {"__asm", "inline assembly"},
    {"_Pragma", "pragmas"},          {"__pragma", "pragmas"},
};

static void lex_ident(lexer_t *lx) {
  cg_loc_t loc = here(lx);
  size_t start = lx->pos;
  while (lx->pos < lx->len && is_ident_char(lx->src[lx->pos])) advance(lx);
  size_t len = lx->pos - start;
  if (len > CG_MAX_IDENT) rk__cg_error(lx->ctx, loc, "identifier is too long");
  const char *s = lx->src + start;
  for (size_t k = 0; k < sizeof kExtensions / sizeof kExtensions[0]; ++k)
    if (strlen(kExtensions[k].name) == len &&
        memcmp(kExtensions[k].name, s, len) == 0)
      rk__cg_error(lx->ctx, loc,
                   "'%s' is not part of the kernel language (%s: no GPU "
                   "target has them, and a kernel compiles the same way for "
                   "every backend)",
                   kExtensions[k].name, kExtensions[k].what);
  cg_token_t *t = push(lx, CG_TOK_IDENT, loc);
  t->len = (uint32_t)len;
  for (int k = 1; k < CG_KW_COUNT_; ++k) {
    if (kKeywords[k].len == len && kKeywords[k].text[0] == s[0] &&
        memcmp(kKeywords[k].text, s, len) == 0) {
      t->kind = CG_TOK_KEYWORD;
      t->sub = (uint16_t)k;
      return;
    }
  }
}

/* ---- Directives ---------------------------------------------------------- */

static bool rest_of_line_blank(lexer_t *lx) {
  lx->in_directive = true;
  skip_trivia(lx);
  lx->in_directive = false;
  return lx->pos >= lx->len || lx->src[lx->pos] == '\n';
}

/* The macro name after #ifdef/#ifndef (the rest of the line must be
 * blank). */
static const char *cond_name(lexer_t *lx, const char *directive) {
  lx->in_directive = true;
  skip_trivia(lx);
  lx->in_directive = false;
  cg_loc_t loc = here(lx);
  size_t start = lx->pos;
  while (lx->pos < lx->len && is_ident_char(lx->src[lx->pos])) lx->pos++;
  if (lx->pos == start || !is_ident_start(lx->src[start]))
    rk__cg_error(lx->ctx, loc, "expected a macro name after #%s", directive);
  if (lx->pos - start > CG_MAX_IDENT)
    rk__cg_error(lx->ctx, loc, "macro name is too long");
  const char *name = rk__cg_strndup(lx->ctx, lx->src + start, lx->pos - start);
  if (!rest_of_line_blank(lx))
    rk__cg_error(lx->ctx, here(lx), "unexpected text after #%s %s", directive,
                 name);
  return name;
}

/* #ifdef, #ifndef, #else, #endif and #error; false if `name` is none of
 * them. They are processed in skipped text too (for the nesting). */
static bool lex_conditional(lexer_t *lx, const char *name, size_t n,
                            cg_loc_t loc) {
  bool ifdef = n == 5 && memcmp(name, "ifdef", 5) == 0;
  bool ifndef = n == 6 && memcmp(name, "ifndef", 6) == 0;
  if (ifdef || ifndef) {
    bool outer = active(lx);
    const char *macro = cond_name(lx, ifdef ? "ifdef" : "ifndef");
    if (lx->nconds == CG_MAX_CONDS)
      rk__cg_error(lx->ctx, loc, "#ifdef/#ifndef nested deeper than %d",
                   CG_MAX_CONDS);
    bool defined = rk__cg_map_get(&lx->macros, macro) != NULL;
    lx->conds[lx->nconds].outer = outer;
    lx->conds[lx->nconds].taken = defined == ifdef;
    lx->conds[lx->nconds].in_else = false;
    lx->conds[lx->nconds].loc = loc;
    lx->nconds++;
    return true;
  }
  bool is_else = n == 4 && memcmp(name, "else", 4) == 0;
  bool is_endif = n == 5 && memcmp(name, "endif", 5) == 0;
  if (is_else || is_endif) {
    if (!lx->nconds)
      rk__cg_error(lx->ctx, loc, "#%s without #ifdef or #ifndef",
                   is_else ? "else" : "endif");
    if (!rest_of_line_blank(lx))
      rk__cg_error(lx->ctx, here(lx), "unexpected text after #%s",
                   is_else ? "else" : "endif");
    if (is_endif) {
      lx->nconds--;
    } else {
      if (lx->conds[lx->nconds - 1].in_else)
        rk__cg_error(lx->ctx, loc, "a second #else for the #if on line %u",
                     (unsigned)lx->conds[lx->nconds - 1].loc.line);
      lx->conds[lx->nconds - 1].in_else = true;
    }
    return true;
  }
  if (n == 5 && memcmp(name, "error", 5) == 0) {
    size_t start = lx->pos;
    while (lx->pos < lx->len && lx->src[lx->pos] != '\n') lx->pos++;
    if (active(lx)) {
      size_t len = lx->pos - start;
      while (len && (lx->src[start] == ' ' || lx->src[start] == '\t'))
        start++, len--;
      rk__cg_error(lx->ctx, loc, "#error %.*s", (int)(len > 200 ? 200 : len),
                   lx->src + start);
    }
    return true;
  }
  if ((n == 2 && memcmp(name, "if", 2) == 0) ||
      (n == 4 && memcmp(name, "elif", 4) == 0))
    rk__cg_error(lx->ctx, loc,
                 "#%.*s is not supported: the kernel language's conditionals "
                 "are #ifdef NAME, #ifndef NAME, #else and #endif",
                 (int)n, name);
  return false;
}

static void lex_directive(lexer_t *lx) {
  advance(lx); /* '#' */
  lx->at_line_start = false;
  lx->in_directive = true;
  skip_trivia(lx);
  lx->in_directive = false;
  if (lx->pos >= lx->len || lx->src[lx->pos] == '\n') return; /* "#" */
  cg_loc_t name_loc = here(lx);
  size_t start = lx->pos;
  while (lx->pos < lx->len && is_ident_char(lx->src[lx->pos])) lx->pos++;
  size_t n = lx->pos - start;
  const char *name = lx->src + start;
  if (n == 0)
    rk__cg_error(lx->ctx, name_loc, "expected a directive name after '#'");
  if (lex_conditional(lx, name, n, name_loc)) return;
  if (!active(lx)) { /* other directives in skipped text are not read */
    while (lx->pos < lx->len && lx->src[lx->pos] != '\n') lx->pos++;
    return;
  }

  if (n == 7 && memcmp(name, "include", 7) == 0) {
    lx->in_directive = true;
    skip_trivia(lx);
    lx->in_directive = false;
    cg_loc_t arg = here(lx);
    static const char *const kOk[] = {"<rk/kernel.h>", "\"rk/kernel.h\""};
    for (int k = 0; k < 2; ++k) {
      size_t m = strlen(kOk[k]);
      if (lx->pos + m <= lx->len && memcmp(lx->src + lx->pos, kOk[k], m) == 0) {
        lx->pos += m;
        if (!rest_of_line_blank(lx))
          rk__cg_error(lx->ctx, here(lx), "unexpected text after #include %s",
                       kOk[k]);
        return;
      }
    }
    size_t end = lx->pos;
    while (end < lx->len && lx->src[end] != '\n' && end - lx->pos < 80) end++;
    rk__cg_error(lx->ctx, arg,
                 "#include %.*s is not supported: a kernel source may only "
                 "include <rk/kernel.h>",
                 (int)(end - lx->pos), lx->src + lx->pos);
  }
  if (n == 6 && memcmp(name, "pragma", 6) == 0) {
    lx->in_directive = true;
    skip_trivia(lx);
    lx->in_directive = false;
    cg_loc_t arg = here(lx);
    if (lx->pos + 4 <= lx->len && memcmp(lx->src + lx->pos, "once", 4) == 0 &&
        !(lx->pos + 4 < lx->len && is_ident_char(lx->src[lx->pos + 4]))) {
      lx->pos += 4;
      if (!rest_of_line_blank(lx))
        rk__cg_error(lx->ctx, here(lx), "unexpected text after #pragma once");
      return;
    }
    size_t end = lx->pos;
    while (end < lx->len && is_ident_char(lx->src[end]) && end - lx->pos < 64)
      end++;
    rk__cg_error(lx->ctx, arg,
                 "#pragma %.*s is not supported: the kernel language accepts "
                 "only #pragma once",
                 (int)(end - lx->pos), lx->src + lx->pos);
  }
  if (n == 6 && memcmp(name, "define", 6) == 0) {
    lx->in_directive = true;
    skip_trivia(lx);
    cg_loc_t mloc = here(lx);
    if (lx->pos >= lx->len || !is_ident_start(lx->src[lx->pos]))
      rk__cg_error(lx->ctx, mloc, "expected a macro name after #define");
    size_t ms = lx->pos;
    while (lx->pos < lx->len && is_ident_char(lx->src[lx->pos])) lx->pos++;
    if (lx->pos - ms > CG_MAX_IDENT)
      rk__cg_error(lx->ctx, mloc, "macro name is too long");
    if (lx->pos < lx->len && lx->src[lx->pos] == '(')
      rk__cg_error(lx->ctx, mloc,
                   "function-like macro '%.*s' is not supported: only "
                   "#define NAME <constant> is (write a helper function)",
                   (int)(lx->pos - ms), lx->src + ms);
    cg_token_t *t = push(lx, CG_TOK_DEFINE, mloc);
    t->len = (uint32_t)(lx->pos - ms);
    rk__cg_map_put(lx->ctx, &lx->macros,
                   rk__cg_strndup(lx->ctx, lx->src + ms, lx->pos - ms),
                   (void *)"");
    for (;;) {
      skip_trivia(lx);
      if (lx->pos >= lx->len || lx->src[lx->pos] == '\n') break;
      char c = lx->src[lx->pos];
      if (is_ident_start(c))
        lex_ident(lx);
      else if (is_digit(c) || (c == '.' && is_digit(peek(lx, 1))))
        lex_number(lx);
      else
        lex_punct(lx);
    }
    lx->in_directive = false;
    push(lx, CG_TOK_DEFINE_END, here(lx));
    return;
  }
  rk__cg_error(lx->ctx, name_loc,
               "preprocessor directive '#%.*s' is not supported: the kernel "
               "language accepts only #include <rk/kernel.h>, #pragma once, "
               "#define NAME <constant>, #ifdef, #ifndef, #else, #endif and "
               "#error",
               (int)(n > 32 ? 32 : n), name);
}

void rk__cg_lex(cg_ctx_t *ctx, cg_tokens_t *out) {
  lexer_t lx;
  memset(&lx, 0, sizeof lx);
  lx.ctx = ctx;
  lx.src = ctx->source;
  lx.len = ctx->source_len;
  lx.line = 1;
  lx.at_line_start = true;
  for (;;) {
    skip_trivia(&lx);
    if (lx.pos >= lx.len) break;
    char c = lx.src[lx.pos];
    if (c == '#' && lx.at_line_start) {
      lex_directive(&lx);
      continue;
    }
    if (!active(&lx)) {
      /* Skipped text: to the end of the line, comments included (a
       * directive may follow a comment that ends on its line). */
      lx.at_line_start = false;
      while (lx.pos < lx.len && lx.src[lx.pos] != '\n') {
        char q = lx.src[lx.pos];
        if (q == '"' || q == '\'') { /* a literal hides comment marks */
          advance(&lx);
          while (lx.pos < lx.len && lx.src[lx.pos] != q &&
                 lx.src[lx.pos] != '\n') {
            if (lx.src[lx.pos] == '\\' && peek(&lx, 1) != '\n') advance(&lx);
            advance(&lx);
          }
          if (lx.pos < lx.len && lx.src[lx.pos] == q) advance(&lx);
          continue;
        }
        if (lx.src[lx.pos] == '/' &&
            (peek(&lx, 1) == '*' || peek(&lx, 1) == '/')) {
          skip_trivia(&lx);
          if (lx.at_line_start) break;
          continue;
        }
        advance(&lx);
      }
      continue;
    }
    lx.at_line_start = false;
    if (is_ident_start(c))
      lex_ident(&lx);
    else if (is_digit(c) || (c == '.' && is_digit(peek(&lx, 1))))
      lex_number(&lx);
    else
      lex_punct(&lx);
  }
  if (lx.nconds)
    rk__cg_error(ctx, lx.conds[lx.nconds - 1].loc,
                 "this #ifdef/#ifndef has no #endif");
  push(&lx, CG_TOK_EOF, here(&lx));
  out->v = lx.toks;
  out->n = lx.n;
}
