/* Kernel source with defines, and diagnostics (kernel_source.h). */
#include "hal/kernel_source.h"

#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"

const char *rk__source_line(const char *text, unsigned line, int *out_len) {
  const char *p = text;
  for (unsigned l = 1; l < line && p; ++l) {
    p = strchr(p, '\n');
    if (p) ++p;
  }
  if (p && !*p && line > 1) p = NULL;
  *out_len = p ? (int)strcspn(p, "\n") : 0;
  return p;
}

/* The user's source with the defines in front, as `#define` lines. */
rk_status_t rk__source_with_defines(const char *source,
                                    const rk_compile_options_t *options,
                                    char **out, unsigned *out_lines) {
  rk__strbuf_t sb;
  rk__strbuf_init(&sb);
  unsigned lines = 0;
  if (options->defines) {
    for (const char *const *d = options->defines; *d; ++d, ++lines) {
      const char *eq = strchr(*d, '=');
      if (eq)
        rk__strbuf_printf(&sb, "#define %.*s %s\n", (int)(eq - *d), *d, eq + 1);
      else
        rk__strbuf_printf(&sb, "#define %s 1\n", *d);
    }
  }
  rk__strbuf_puts(&sb, source);
  if (sb.failed || !sb.data) {
    rk__strbuf_free(&sb);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "kernel source");
  }
  *out = sb.data;
  *out_lines = lines;
  return RK_OK;
}

/* A transpiler diagnostic against the user's own line numbers. */
rk_status_t rk__source_diag(const rk_diagnostic_t *diag, const char *source,
                            const char *name,
                            const rk_compile_options_t *options,
                            unsigned define_lines) {
  if (diag->line == 0) return rk__fail_context(RK_ERR_COMPILE, "%s", name);
  if (diag->line <= define_lines)
    return rk__fail(RK_ERR_COMPILE, "%s: define '%s': %s", name,
                    options->defines[diag->line - 1], diag->message);
  unsigned line = diag->line - define_lines;
  int len = 0;
  const char *p = rk__source_line(source, line, &len);
  char caret[512];
  unsigned col = diag->column ? diag->column - 1 : 0;
  if (col >= sizeof caret - 1) col = sizeof caret - 2;
  for (unsigned i = 0; i < col; ++i)
    caret[i] = p && (int)i < len && p[i] == '\t' ? '\t' : ' ';
  caret[col] = '^';
  caret[col + 1] = '\0';
  return rk__fail(RK_ERR_COMPILE, "%s:%u:%u: error: %s\n%.*s\n%s", name, line,
                  diag->column, diag->message, len, p ? p : "", caret);
}
