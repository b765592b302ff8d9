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

/* The source name diagnostics use: options->source_name, else
 * "<source>". */
const char *rk__kernel_source_name(const rk_compile_options_t *options);

/* The front half of compiling kernel-language source, the same for every
 * backend: the defines in front of `source`, one run of the front end for
 * `target` (rk_codegen_compile with `topts`, whose source_name is replaced
 * by the options' one; may be NULL), and diagnostics, per-entry refusals
 * included, against the user's own line numbers. *out is the caller's to
 * free with rk_codegen_result_free(). */
rk_status_t rk__kernel_front_end(const char *source,
                                 const rk_compile_options_t *options,
                                 rk_target_t target,
                                 const rk_transpile_options_t *topts,
                                 rk_codegen_result_t *out);

/* Line `line` (1-based) of `text` and its length, or NULL past the end. */
const char *rk__source_line(const char *text, unsigned line, int *out_len);

#endif /* RK_HAL_KERNEL_SOURCE_H_ */
