/* Loading the first library of a list, and the log helpers (dynlib.h). */
#include "dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void vappend(char *buf, size_t cap, const char *fmt, va_list ap) {
  if (cap == 0) return;
  size_t used = strnlen(buf, cap - 1);
  buf[used] = '\0';
  vsnprintf(buf + used, cap - used, fmt, ap);
}

void rk__gc_log_printf(char *log, size_t cap, const char *fmt, ...) {
  if (cap == 0) return;
  log[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vappend(log, cap, fmt, ap);
  va_end(ap);
}

void rk__gc_log_append(char *log, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vappend(log, cap, fmt, ap);
  va_end(ap);
}

/* Tries one name; on failure records it in lib->error. */
static int try_open(rk__gc_library_t *lib, const char *name, size_t len) {
  char path[sizeof lib->path];
  if (len == 0) return 0;
  if (len >= sizeof path) {
    rk__gc_log_append(lib->error, sizeof lib->error, "\n  %.*s: name too long",
                      (int)len, name);
    return 0;
  }
  memcpy(path, name, len);
  path[len] = '\0';
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    /* dlerror() usually starts with the path already. */
    const char *why = dlerror();
    if (why != NULL && strncmp(why, path, len) == 0)
      rk__gc_log_append(lib->error, sizeof lib->error, "\n  %s", why);
    else
      rk__gc_log_append(lib->error, sizeof lib->error, "\n  %s: %s", path,
                        why ? why : "dlopen failed");
    return 0;
  }
  lib->handle = handle;
  memcpy(lib->path, path, len + 1);
  return 1;
}

void rk__gc_library_open(rk__gc_library_t *lib, const char *what,
                         const char *env_var, const char *const *defaults) {
  memset(lib, 0, sizeof *lib);
  const char *list = getenv(env_var);
  if (list != NULL && list[0] != '\0') {
    rk__gc_log_printf(lib->error, sizeof lib->error,
                      "%s not found; tried (from %s):", what, env_var);
    for (const char *p = list;;) {
      const char *end = strchr(p, ':');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      if (try_open(lib, p, len)) return;
      if (end == NULL) break;
      p = end + 1;
    }
  } else {
    rk__gc_log_printf(lib->error, sizeof lib->error,
                      "%s not found; tried:", what);
    for (size_t i = 0; defaults[i] != NULL; i++) {
      if (try_open(lib, defaults[i], strlen(defaults[i]))) return;
    }
  }
}

void *rk__gc_library_symbol(rk__gc_library_t *lib, const char *symbol,
                            char *missing, size_t cap) {
  dlerror();
  void *p = dlsym(lib->handle, symbol);
  if (p == NULL) {
    const char *why = dlerror();
    /* dlerror() says "<library>: undefined symbol: <symbol>". */
    if (why != NULL && strstr(why, symbol) != NULL)
      rk__gc_log_append(missing, cap, "\n  %s", why);
    else
      rk__gc_log_append(missing, cap, "\n  %s: %s", symbol,
                        why ? why : "not found");
  }
  return p;
}
