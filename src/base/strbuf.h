/* A growable NUL-terminated string. Allocation failure is sticky: once an
 * append fails, `failed` is set and later appends do nothing. */
#ifndef RK_BASE_STRBUF_H_
#define RK_BASE_STRBUF_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef struct rk__strbuf {
  char *data;
  size_t len, cap;
  bool failed;
} rk__strbuf_t;

void rk__strbuf_init(rk__strbuf_t *sb);
void rk__strbuf_free(rk__strbuf_t *sb);
void rk__strbuf_append(rk__strbuf_t *sb, const char *s, size_t n);
void rk__strbuf_puts(rk__strbuf_t *sb, const char *s);
void rk__strbuf_printf(rk__strbuf_t *sb, const char *fmt, ...) RK__PRINTF(2, 3);

#endif /* RK_BASE_STRBUF_H_ */
