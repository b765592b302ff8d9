/* Internal status helpers: record the per-thread detail message and return
 * the status in one expression.
 *
 *   if (bytes == 0)
 *     return rk__fail(RK_ERR_INVALID_ARGUMENT, "allocate: size is 0");
 */
#ifndef RK_BASE_ERROR_H_
#define RK_BASE_ERROR_H_

#include <stdarg.h>
#include <stdbool.h>

#include "rk/status.h"

#if defined(__GNUC__)
#define RK__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RK__PRINTF(f, a)
#endif

/* Sets this thread's detail message (printf-style, truncated at 16 KiB with
 * a marker) and returns `status`. */
rk_status_t rk__fail(rk_status_t status, const char *fmt, ...) RK__PRINTF(2, 3);
rk_status_t rk__vfail(rk_status_t status, const char *fmt, va_list ap);

/* Prepends "prefix: " to the current message; returns `status`. Used where a
 * lower layer already explained the failure. */
rk_status_t rk__fail_context(rk_status_t status, const char *fmt, ...)
    RK__PRINTF(2, 3);

/* Around a failure the library recovers from (a backend skipped by
 * auto-selection, a cache directory replaced by a temporary one): save the
 * caller-visible message first and put it back afterwards, so that a call
 * that succeeds leaves rk_last_error() as it found it. rk__error_restore
 * frees the copy; NULL (no memory to save) restores nothing. */
char *rk__error_save(void);

/* How this librk was built: the compiler that built it ("GCC 12.2.0",
 * "clang 16.0.6"; "unknown compiler") and whether its objects were linked
 * with link-time optimisation (src/lto/). For `rk version`. */
const char *rk__build_compiler(void);
bool rk__build_lto(void);
void rk__error_restore(char *saved);

/* The same on a hot path that fails rarely: the message is kept in the
 * stash itself when it is short (no allocation), and put back only when
 * the caller says so (the recovered failure happened). */
typedef struct rk__error_stash {
  char text[256];
  char *heap; /* a longer message's copy, or NULL */
} rk__error_stash_t;
void rk__error_stash(rk__error_stash_t *stash);
void rk__error_unstash(rk__error_stash_t *stash, bool put_back);

#define RK_RETURN_IF_ERROR(expr)        \
  do {                                  \
    rk_status_t rk__s_ = (expr);        \
    if (rk__s_ != RK_OK) return rk__s_; \
  } while (0)

#endif /* RK_BASE_ERROR_H_ */
