/* RK_KERNEL declaration scanner (see cpu_scan.h). */
#include "backends/cpu/cpu_scan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

typedef enum { kTokEnd, kTokIdent, kTokNumber, kTokPunct } tok_kind_t;

typedef struct tok {
  tok_kind_t kind;
  const char *p;
  size_t len;
  int line, col;
} tok_t;

typedef struct lexer {
  const char *src, *p;
  int line;
  const char *line_start;
  bool at_line_start;     /* only white space since the last newline */
  bool directive_barrier; /* a directive mentions rk_sync_threads */
} lexer_t;

static bool is_ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* Whether [p, end) contains the identifier `word` (not part of a longer
 * identifier). */
static bool contains_ident(const char *p, const char *end, const char *word) {
  size_t n = strlen(word);
  for (const char *q = p; q + n <= end; ++q)
    if (memcmp(q, word, n) == 0 && (q == p || !is_ident_char(q[-1])) &&
        (q + n == end || !is_ident_char(q[n])))
      return true;
  return false;
}

static void advance(lexer_t *lx) {
  if (*lx->p == '\n') {
    lx->line++;
    lx->line_start = lx->p + 1;
    lx->at_line_start = true;
  }
  lx->p++;
}

/* Skips white space, comments, preprocessor lines and literals. */
static void skip_trivia(lexer_t *lx) {
  for (;;) {
    char c = *lx->p;
    if (c == '\0') return;
    if (isspace((unsigned char)c)) {
      advance(lx);
    } else if (c == '/' && lx->p[1] == '/') {
      while (*lx->p && *lx->p != '\n') advance(lx);
    } else if (c == '/' && lx->p[1] == '*') {
      advance(lx);
      advance(lx);
      while (*lx->p && !(*lx->p == '*' && lx->p[1] == '/')) advance(lx);
      if (*lx->p) {
        advance(lx);
        advance(lx);
      }
    } else if (c == '#' && lx->at_line_start) {
      /* A macro may hide a barrier: #define SYNC() rk_sync_threads() */
      const char *start = lx->p;
      while (*lx->p && *lx->p != '\n') {
        if (*lx->p == '\\' && lx->p[1] == '\n') advance(lx);
        advance(lx);
      }
      if (contains_ident(start, lx->p, "rk_sync_threads"))
        lx->directive_barrier = true;
    } else if (c == '"' || c == '\'') {
      advance(lx);
      while (*lx->p && *lx->p != c && *lx->p != '\n') {
        if (*lx->p == '\\' && lx->p[1]) advance(lx);
        advance(lx);
      }
      if (*lx->p == c) advance(lx);
      lx->at_line_start = false;
    } else {
      return;
    }
  }
}

static tok_t next_token(lexer_t *lx) {
  skip_trivia(lx);
  tok_t t = {kTokEnd, lx->p, 0, lx->line, (int)(lx->p - lx->line_start) + 1};
  char c = *lx->p;
  if (c == '\0') return t;
  lx->at_line_start = false;
  if (isalpha((unsigned char)c) || c == '_') {
    t.kind = kTokIdent;
    while (is_ident_char(*lx->p)) advance(lx);
  } else if (isdigit((unsigned char)c)) {
    t.kind = kTokNumber;
    while (isalnum((unsigned char)*lx->p) || *lx->p == '.') advance(lx);
  } else {
    t.kind = kTokPunct;
    if (c == '.' && lx->p[1] == '.' && lx->p[2] == '.') {
      advance(lx);
      advance(lx);
    }
    advance(lx);
  }
  t.len = (size_t)(lx->p - t.p);
  return t;
}

static bool tok_is(const tok_t *t, const char *s) {
  return t->len == strlen(s) && memcmp(t->p, s, t->len) == 0;
}

/* "name:line:col: error: msg" followed by the source line and a caret. */
static rk_status_t diag(const char *src, const char *name, const tok_t *at,
                        const char *fmt, ...) RK__PRINTF(4, 5);
static rk_status_t diag(const char *src, const char *name, const tok_t *at,
                        const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *ls = at->p;
  while (ls > src && ls[-1] != '\n') --ls;
  size_t ll = strcspn(ls, "\n");
  if (ll > 300) ll = 300;
  char caret[320];
  size_t ci = 0;
  for (const char *q = ls; q < at->p && ci < sizeof caret - 2; ++q)
    caret[ci++] = *q == '\t' ? '\t' : ' ';
  caret[ci++] = '^';
  caret[ci] = '\0';
  return rk__fail(RK_ERR_COMPILE, "%s:%d:%d: error: %s\n%.*s\n%s", name,
                  at->line, at->col, msg, (int)ll, ls, caret);
}

static bool is_qualifier(const tok_t *t) {
  return tok_is(t, "const") || tok_is(t, "volatile") || tok_is(t, "restrict") ||
         tok_is(t, "__restrict") || tok_is(t, "__restrict__");
}

static const struct {
  const char *spelling;
  rk_arg_kind_t kind;
} kScalarTypes[] = {
    {"int", RK_ARG_I32},
    {"signed", RK_ARG_I32},
    {"signed int", RK_ARG_I32},
    {"int32_t", RK_ARG_I32},
    {"unsigned", RK_ARG_U32},
    {"unsigned int", RK_ARG_U32},
    {"uint32_t", RK_ARG_U32},
    {"long", RK_ARG_I64},
    {"long int", RK_ARG_I64},
    {"long long", RK_ARG_I64},
    {"long long int", RK_ARG_I64},
    {"int64_t", RK_ARG_I64},
    {"unsigned long", RK_ARG_U64},
    {"unsigned long int", RK_ARG_U64},
    {"unsigned long long", RK_ARG_U64},
    {"unsigned long long int", RK_ARG_U64},
    {"uint64_t", RK_ARG_U64},
    {"size_t", RK_ARG_U64},
    {"float", RK_ARG_F32},
    {"double", RK_ARG_F64},
};

/* Types that are neither a supported scalar nor a struct. */
static const char *const kRefused[] = {
    "char",           "short",         "bool",
    "_Bool",          "long double",   "int8_t",
    "uint8_t",        "int16_t",       "uint16_t",
    "void",           "unsigned char", "signed char",
    "unsigned short", "short int",     "unsigned short int"};

static rk_status_t parse_param(const char *src, const char *name,
                               const tok_t *toks, size_t n, const char *kernel,
                               cpu_sig_param_t *out) {
  const tok_t *last = &toks[n - 1];
  for (size_t i = 0; i < n; ++i) {
    if (tok_is(&toks[i], "..."))
      return diag(src, name, &toks[i],
                  "kernel '%s' is variadic; kernels take a fixed parameter "
                  "list",
                  kernel);
    if (tok_is(&toks[i], "[") || tok_is(&toks[i], "("))
      return diag(src, name, &toks[i],
                  "array and function-pointer parameters are not supported "
                  "in kernel '%s'; pass a pointer",
                  kernel);
  }
  if (last->kind != kTokIdent || n < 2 || is_qualifier(last))
    return diag(src, name, last,
                "every parameter of kernel '%s' needs a type and a name",
                kernel);
  if (last->len >= sizeof out->name)
    return diag(src, name, last, "parameter name is too long");
  memcpy(out->name, last->p, last->len);
  out->name[last->len] = '\0';

  rk__strbuf_t type, base;
  rk__strbuf_init(&type);
  rk__strbuf_init(&base);
  int stars = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (type.len) rk__strbuf_puts(&type, " ");
    rk__strbuf_append(&type, toks[i].p, toks[i].len);
    if (tok_is(&toks[i], "*")) {
      ++stars;
    } else if (!is_qualifier(&toks[i]) && stars == 0) {
      if (base.len) rk__strbuf_puts(&base, " ");
      rk__strbuf_append(&base, toks[i].p, toks[i].len);
    }
  }
  rk_status_t s = RK_OK;
  if (type.failed || base.failed) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "scanning kernel parameters");
  } else if (type.len >= sizeof out->type) {
    s = diag(src, name, &toks[0], "parameter type is too long");
  } else if (stars > 1) {
    s = diag(src, name, last,
             "parameter '%s' of kernel '%s' is a pointer to a pointer; "
             "kernels take pointers to data only",
             out->name, kernel);
  } else if (!base.data) {
    s = diag(src, name, &toks[0], "parameter '%s' has no type", out->name);
  } else {
    memcpy(out->type, type.data, type.len + 1);
    if (stars == 1) {
      out->kind = RK_ARG_PTR;
    } else {
      out->kind = RK_ARG_STRUCT; /* a typedef name or struct X */
      for (size_t i = 0; i < sizeof kScalarTypes / sizeof kScalarTypes[0]; ++i)
        if (strcmp(base.data, kScalarTypes[i].spelling) == 0)
          out->kind = kScalarTypes[i].kind;
      for (size_t i = 0; i < sizeof kRefused / sizeof kRefused[0]; ++i)
        if (strcmp(base.data, kRefused[i]) == 0)
          s = diag(src, name, &toks[0],
                   "parameter '%s' of kernel '%s' has type '%s', which "
                   "cannot be passed to a kernel (use int, unsigned, "
                   "int64_t, uint64_t, float, double, a pointer or a struct)",
                   out->name, kernel, base.data);
      if (strncmp(base.data, "union", 5) == 0 ||
          strncmp(base.data, "enum", 4) == 0)
        s = diag(src, name, &toks[0],
                 "parameter '%s' of kernel '%s': unions and enums cannot be "
                 "passed to a kernel",
                 out->name, kernel);
    }
  }
  rk__strbuf_free(&type);
  rk__strbuf_free(&base);
  return s;
}

/* Parses "( params )" after the kernel name; lx is just past the '('. */
static rk_status_t parse_params(const char *src, const char *name, lexer_t *lx,
                                cpu_sig_t *sig, const tok_t *open) {
  tok_t toks[128];
  size_t n = 0;
  int depth = 0;
  sig->nparams = 0;
  for (;;) {
    tok_t t = next_token(lx);
    if (t.kind == kTokEnd)
      return diag(src, name, open, "unterminated parameter list of kernel '%s'",
                  sig->name);
    bool close = tok_is(&t, ")") && depth == 0;
    if ((tok_is(&t, ",") && depth == 0) || close) {
      if (n == 0 && close && sig->nparams == 0) return RK_OK; /* () */
      if (n == 1 && close && sig->nparams == 0 && tok_is(&toks[0], "void"))
        return RK_OK; /* (void) */
      if (n == 0) return diag(src, name, &t, "empty parameter");
      if (sig->nparams == kScanMaxParams)
        return diag(src, name, &t, "kernel '%s' has more than %d parameters",
                    sig->name, kScanMaxParams);
      RK_RETURN_IF_ERROR(parse_param(src, name, toks, n, sig->name,
                                     &sig->params[sig->nparams]));
      sig->nparams++;
      n = 0;
      if (close) return RK_OK;
      continue;
    }
    if (tok_is(&t, "(") || tok_is(&t, "[")) ++depth;
    if (tok_is(&t, ")") || tok_is(&t, "]")) --depth;
    if (n == sizeof toks / sizeof toks[0])
      return diag(src, name, &t, "parameter declaration is too long");
    toks[n++] = t;
  }
}

rk_status_t rk__cpu_scan(const char *source, const char *source_name,
                         cpu_scan_t *out) {
  memset(out, 0, sizeof *out);
  lexer_t lx = {source, source, 1, source, true, false};
  size_t cap = 0;
  rk_status_t s = RK_OK;
  for (;;) {
    tok_t t = next_token(&lx);
    if (t.kind == kTokEnd) break;
    if (t.kind != kTokIdent) continue;
    if (tok_is(&t, "rk_sync_threads")) out->uses_barrier = true;
    if (!tok_is(&t, "RK_KERNEL")) continue;
    tok_t ret = next_token(&lx);
    if (!tok_is(&ret, "void")) {
      s = diag(source, source_name, &ret,
               "an RK_KERNEL function must return void");
      break;
    }
    tok_t id = next_token(&lx);
    if (id.kind != kTokIdent || id.len >= sizeof out->kernels->name) {
      s = diag(source, source_name, &id, "expected the kernel's name");
      break;
    }
    tok_t open = next_token(&lx);
    if (!tok_is(&open, "(")) {
      s = diag(source, source_name, &open,
               "expected '(' after the kernel's name");
      break;
    }
    cpu_sig_t sig;
    memcpy(sig.name, id.p, id.len);
    sig.name[id.len] = '\0';
    s = parse_params(source, source_name, &lx, &sig, &open);
    if (s != RK_OK) break;
    tok_t after = next_token(&lx);
    if (tok_is(&after, ";")) continue; /* a prototype */
    if (!tok_is(&after, "{")) {
      s = diag(source, source_name, &after, "expected the body of kernel '%s'",
               sig.name);
      break;
    }
    bool duplicate = false;
    for (size_t i = 0; i < out->count; ++i)
      duplicate |= strcmp(out->kernels[i].name, sig.name) == 0;
    if (duplicate) {
      s = diag(source, source_name, &id, "kernel '%s' is defined twice",
               sig.name);
      break;
    }
    if (out->count == cap) {
      cap = cap ? cap * 2 : 4;
      cpu_sig_t *grown = realloc(out->kernels, cap * sizeof *grown);
      if (!grown) {
        s = rk__fail(RK_ERR_OUT_OF_MEMORY, "scanning kernels");
        break;
      }
      out->kernels = grown;
    }
    out->kernels[out->count++] = sig;
  }
  out->uses_barrier |= lx.directive_barrier;
  if (s != RK_OK) rk__cpu_scan_free(out);
  return s;
}

void rk__cpu_scan_free(cpu_scan_t *scan) {
  free(scan->kernels);
  memset(scan, 0, sizeof *scan);
}
