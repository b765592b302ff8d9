/* rk's log and the capture of vendor libraries' stderr (see log.h). */
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/sys.h"

rk__log_level_t rk__log_level(void) {
  const char *v = getenv("RK_LOG");
  if (!v || !*v || strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0)
    return RK__LOG_OFF;
  if (strcmp(v, "1") == 0 || strcasecmp(v, "debug") == 0) return RK__LOG_DEBUG;
  return RK__LOG_WARN;
}

/* Writes all of buf[0..n) to descriptor 2, retrying short writes. */
static void write_stderr(const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(2, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    buf += w;
    n -= (size_t)w;
  }
}

void rk__log(rk__log_level_t level, const char *fmt, ...) {
  if (level == RK__LOG_OFF || rk__log_level() < level) return;
  char line[2048];
  int n = snprintf(line, sizeof line,
                   "rk: %s: ", level == RK__LOG_WARN ? "warning" : "debug");
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  /* stdio's stderr may hold the program's own unflushed text. */
  fflush(stderr);
  write_stderr(line, len);
}

/* ---- Capture ------------------------------------------------------------ */

static pthread_mutex_t g_capture_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int g_capture_depth;

void rk__capture_begin(rk__capture_t *c) {
  c->saved = -1;
  c->file = -1;
  c->outer = g_capture_depth++ == 0;
  if (!c->outer) return;
  pthread_mutex_lock(&g_capture_lock);
  /* Never descriptor 0-2, should 2 (or 0, 1) be closed. */
  int file = rk__anonymous_file("rk-vendor-output");
  if (file < 0) return; /* no capture: output goes where it went */
  fflush(stderr);
  int saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (saved < 0 && errno != EBADF) {
    close(file);
    return;
  }
  if (dup2(file, 2) < 0) {
    if (saved >= 0) close(saved);
    close(file);
    return;
  }
  c->saved = saved;
  c->file = file;
}

/* Logs each line of text[0..n) at debug level, prefixed with `who`. */
static void log_lines(const char *who, const char *text, size_t n) {
  while (n > 0) {
    const char *nl = memchr(text, '\n', n);
    size_t len = nl ? (size_t)(nl - text) : n;
    if (len > 0)
      rk__log(RK__LOG_DEBUG, "%s: %.*s", who, len > 1900 ? 1900 : (int)len,
              text);
    size_t step = nl ? len + 1 : len;
    text += step;
    n -= step;
  }
}

size_t rk__capture_end(rk__capture_t *c, const char *who, char *out,
                       size_t cap) {
  if (out && cap) out[0] = '\0';
  --g_capture_depth;
  if (!c->outer) return 0;
  if (c->file < 0) {
    pthread_mutex_unlock(&g_capture_lock);
    return 0;
  }
  fflush(stderr);
  if (c->saved >= 0) {
    dup2(c->saved, 2);
    close(c->saved);
  } else {
    close(2); /* it was closed before */
  }
  off_t size = lseek(c->file, 0, SEEK_END);
  char text[8192];
  size_t n = 0;
  if (size > 0) {
    size_t want = (size_t)size < sizeof text ? (size_t)size : sizeof text;
    while (n < want) {
      /* The room left in `text` bounds the read (fortified pread checks). */
      ssize_t r = pread(c->file, text + n, sizeof text - n, (off_t)n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      n += (size_t)r;
    }
  }
  close(c->file);
  c->file = c->saved = -1;
  pthread_mutex_unlock(&g_capture_lock);

  log_lines(who, text, n);
  if (out && cap) {
    size_t keep = n;
    while (keep > 0 && (text[keep - 1] == '\n' || text[keep - 1] == '\r'))
      --keep;
    if (keep >= cap) keep = cap - 1;
    memcpy(out, text, keep);
    out[keep] = '\0';
  }
  return size > 0 ? (size_t)size : 0;
}
