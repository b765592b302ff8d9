/* Kernel-language source as the GPU backends compile it: the compile
 * options' defines in front of the user's text, and diagnostics reported
 * against the user's own line numbers. */
#ifndef RK_HAL_KERNEL_SOURCE_H_
#define RK_HAL_KERNEL_SOURCE_H_

#include "rk/backend.h"
#include "rk/codegen.h"

/* The user's source with each define in front as a `#define` line
 * ("N=V" -> "#define N V", "N" -> "#define N 1"). *out is malloc'd;
 * *out_lines is the number of lines added. */
rk_status_t rk__source_with_defines(const char *source,
                                    const rk_compile_options_t *options,
                                    char **out, unsigned *out_lines);

/* RK_ERR_COMPILE with a transpiler diagnostic of the text built by
 * rk__source_with_defines: "name:LINE:COL: error: ..." with the user's
 * line and a caret, or the define it points at. */
rk_status_t rk__source_diag(const rk_diagnostic_t *diag, const char *source,
                            const char *name,
                            const rk_compile_options_t *options,
                            unsigned define_lines);

/* Line `line` (1-based) of `text` and its length, or NULL past the end. */
const char *rk__source_line(const char *text, unsigned line, int *out_len);

#endif /* RK_HAL_KERNEL_SOURCE_H_ */
