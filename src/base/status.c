/* Status names and the per-thread detail message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "rk/rk.h"

enum { kErrorCapacity = 16384 };

static _Thread_local char tls_error[kErrorCapacity];

static const char *const kStatusNames[] = {
#define RK_STATUS_NAME_(name, text) text,
    RK_STATUS_LIST(RK_STATUS_NAME_)
#undef RK_STATUS_NAME_
};

const char *rk_status_name(rk_status_t status) {
  if ((unsigned)status >= sizeof kStatusNames / sizeof kStatusNames[0])
    return "unknown status";
  return kStatusNames[status];
}

const char *rk_last_error(void) { return tls_error; }

const char *rk_version(void) { return "0.1.0"; }

const char *rk__build_compiler(void) {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown compiler";
#endif
}

bool rk__build_lto(void) {
#ifdef RK_BUILD_LTO
  return true;
#else
  return false;
#endif
}

static void mark_truncated(int n) {
  if (n >= kErrorCapacity) {
    static const char kMark[] = "\n[... message truncated]";
    memcpy(tls_error + kErrorCapacity - sizeof kMark, kMark, sizeof kMark);
  }
}

rk_status_t rk__vfail(rk_status_t status, const char *fmt, va_list ap) {
  int n = vsnprintf(tls_error, kErrorCapacity, fmt, ap);
  if (n < 0) snprintf(tls_error, kErrorCapacity, "%s", rk_status_name(status));
  mark_truncated(n);
  return status;
}

rk_status_t rk__fail(rk_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rk__vfail(status, fmt, ap);
  va_end(ap);
  return status;
}

rk_status_t rk__fail_context(rk_status_t status, const char *fmt, ...) {
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t plen = strlen(prefix);
  size_t old = strnlen(tls_error, kErrorCapacity - 1);
  if (plen + 2 + old >= kErrorCapacity) old = kErrorCapacity - plen - 3;
  memmove(tls_error + plen + 2, tls_error, old);
  memcpy(tls_error, prefix, plen);
  tls_error[plen] = ':';
  tls_error[plen + 1] = ' ';
  tls_error[plen + 2 + old] = '\0';
  return status;
}

char *rk__error_save(void) { return strdup(tls_error); }

void rk__error_restore(char *saved) {
  if (!saved) return;
  snprintf(tls_error, kErrorCapacity, "%s", saved);
  free(saved);
}

void rk__error_stash(rk__error_stash_t *stash) {
  const size_t n = strnlen(tls_error, sizeof stash->text);
  stash->heap = NULL;
  if (n < sizeof stash->text)
    memcpy(stash->text, tls_error, n + 1);
  else
    stash->heap = rk__error_save();
}

void rk__error_unstash(rk__error_stash_t *stash, bool put_back) {
  if (stash->heap) {
    if (put_back)
      rk__error_restore(stash->heap);
    else
      free(stash->heap);
  } else if (put_back) {
    memcpy(tls_error, stash->text, strlen(stash->text) + 1);
  }
}
