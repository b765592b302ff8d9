/* Kernel source with defines, and diagnostics (kernel_source.h). */
#include "hal/kernel_source.h"

#include <stdlib.h>
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

const char *rk__kernel_source_name(const rk_compile_options_t *options) {
  return options && options->source_name && *options->source_name
             ? options->source_name
             : "<source>";
}

rk_status_t rk__kernel_front_end(const char *source,
                                 const rk_compile_options_t *options,
                                 rk_target_t target,
                                 const rk_transpile_options_t *topts,
                                 rk_codegen_result_t *out) {
  const char *name = rk__kernel_source_name(options);
  char *full = NULL;
  unsigned define_lines = 0;
  RK_RETURN_IF_ERROR(
      rk__source_with_defines(source, options, &full, &define_lines));
  rk_transpile_options_t t;
  if (topts)
    t = *topts;
  else
    rk_transpile_options_init(&t);
  t.source_name = name;
  rk_diagnostic_t diag;
  rk_status_t s = rk_codegen_compile(full, target, &t, out, &diag);
  free(full);
  if (s == RK_ERR_COMPILE && define_lines)
    return rk__source_diag(&diag, source, name, options, define_lines);
  if (s != RK_OK || !define_lines || !out->entry_errors) return s;
  /* Refusals of single entries, moved to the user's lines as well. */
  char *saved = rk__error_save();
  for (size_t i = 0; i < out->entries->count; ++i) {
    if (!out->entry_errors[i]) continue;
    rk__source_diag(&out->entry_diags[i], source, name, options, define_lines);
    size_t n = strlen(rk_last_error()) + 1;
    char *text = malloc(n);
    if (!text) {
      rk__error_restore(saved);
      rk_codegen_result_free(out);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "%s: kernel source", name);
    }
    memcpy(text, rk_last_error(), n);
    free(out->entry_errors[i]);
    out->entry_errors[i] = text;
    if (out->entry_diags[i].line > define_lines)
      out->entry_diags[i].line -= define_lines;
  }
  rk__error_restore(saved);
  return RK_OK;
}
