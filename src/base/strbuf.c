#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rk__strbuf_init(rk__strbuf_t *sb) { memset(sb, 0, sizeof *sb); }

void rk__strbuf_free(rk__strbuf_t *sb) {
  free(sb->data);
  memset(sb, 0, sizeof *sb);
}

static bool reserve(rk__strbuf_t *sb, size_t extra) {
  if (sb->failed) return false;
  if (sb->len + extra + 1 <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 256;
  while (cap < sb->len + extra + 1) cap *= 2;
  char *grown = realloc(sb->data, cap);
  if (!grown) {
    sb->failed = true;
    return false;
  }
  sb->data = grown;
  sb->cap = cap;
  return true;
}

void rk__strbuf_append(rk__strbuf_t *sb, const char *s, size_t n) {
  if (!reserve(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void rk__strbuf_puts(rk__strbuf_t *sb, const char *s) {
  rk__strbuf_append(sb, s, strlen(s));
}

void rk__strbuf_printf(rk__strbuf_t *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    sb->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    rk__strbuf_append(sb, small, (size_t)n);
    return;
  }
  if (!reserve(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}
