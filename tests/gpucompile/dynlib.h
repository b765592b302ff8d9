/* dynlib.h - shared by the NVRTC and OpenCL halves of gpucompile: loading
 * the first library of a list with dlopen, and writing into the caller's
 * log buffer.
 *
 *   rk__gc_library_t lib;
 *   rk__gc_library_open(&lib, "RK_GPUCOMPILE_NVRTC", kNvrtcNames);
 *   if (!lib.handle) puts(lib.error);  // "NVRTC not found; tried: ..."
 *
 * A library is opened once per process and never closed (see gpucompile.h);
 * the callers keep it in a static behind pthread_once.
 */
#ifndef RK_TESTS_GPUCOMPILE_DYNLIB_H_
#define RK_TESTS_GPUCOMPILE_DYNLIB_H_

#include <stdarg.h>
#include <stddef.h>

typedef struct rk__gc_library {
  void *handle;     /* from dlopen; NULL when none of the names opened */
  char path[512];   /* the name that opened */
  char error[2048]; /* why not: every name tried and dlerror() for each */
} rk__gc_library_t;

/* Tries each name of the NULL-terminated `defaults` (or, when the
 * environment variable `env_var` is set and non-empty, each entry of its
 * colon-separated list instead) with dlopen(RTLD_NOW | RTLD_LOCAL). `what`
 * names the library in the error ("NVRTC"). */
void rk__gc_library_open(rk__gc_library_t *lib, const char *what,
                         const char *env_var, const char *const *defaults);

/* Looks `symbol` up in lib; on failure appends "<symbol>: <dlerror>" to
 * `missing` (capacity cap) and returns NULL. */
void *rk__gc_library_symbol(rk__gc_library_t *lib, const char *symbol,
                            char *missing, size_t cap);

/* Writes into log (capacity cap, may be 0): printf replaces, append adds.
 * Always NUL-terminated when cap > 0; truncation is silent. */
void rk__gc_log_printf(char *log, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rk__gc_log_append(char *log, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RK_TESTS_GPUCOMPILE_DYNLIB_H_ */
