/* rk_test.h - the tests' small assertion kit.
 *
 * One translation unit per test executable defines RK_TEST_IMPLEMENTATION
 * before including this header; it gets the failure counter and helpers.
 *
 *   #define RK_TEST_IMPLEMENTATION
 *   #include "rk_test.h"
 *
 *   int main(void) {
 *     rk_test_use_temp_cache();              // RK_CACHE_DIR=<mkdtemp dir>
 *     CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be));
 *     CHECK_STATUS(rk_context_allocate(ctx, 0, &p), RK_ERR_INVALID_ARGUMENT);
 *     CHECK_ERROR_HAS("size");               // in rk_last_error()
 *     CHECK(x == 3, "x is %d", x);
 *     return rk_test_finish("allocate");     // 0, or 1 after any failure
 *   }
 *
 * CHECK, CHECK_OK and CHECK_STATUS evaluate to true when they pass, so a
 * test can stop early: `if (!CHECK_OK(...)) return;`. Failures go to stdout
 * (never stderr, which some tests capture), with file:line.
 *
 * A test that cannot run (no such backend here) calls RK_TEST_SKIP(reason),
 * which prints the reason and exits 77; ctest counts it as skipped, never as
 * passed.
 */
#ifndef RK_TESTS_RK_TEST_H_
#define RK_TESTS_RK_TEST_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "rk/rk.h"

/* Failures so far in this executable. */
extern int rk_test_failures;

bool rk_test_check_(bool ok, const char *file, int line, const char *expr,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
bool rk_test_check_ok_(rk_status_t s, const char *file, int line,
                       const char *expr);
bool rk_test_check_status_(rk_status_t s, rk_status_t expected,
                           const char *file, int line, const char *expr);
bool rk_test_error_has_(const char *needle, const char *file, int line);
/* Empties this thread's rk_last_error(), so that a message seen afterwards
 * was written by the call under test. */
void rk_test_clear_error(void);

#define CHECK(cond, ...) \
  rk_test_check_((cond) ? true : false, __FILE__, __LINE__, #cond, __VA_ARGS__)
/* expr must return RK_OK; otherwise prints the status and rk_last_error(). */
#define CHECK_OK(expr) rk_test_check_ok_((expr), __FILE__, __LINE__, #expr)
/* expr must return `expected` and leave a non-empty rk_last_error() that it
 * wrote itself (the message is cleared before expr runs). */
#define CHECK_STATUS(expr, expected) \
  (rk_test_clear_error(),            \
   rk_test_check_status_((expr), (expected), __FILE__, __LINE__, #expr))
/* rk_last_error() contains `needle` (case-insensitively). */
#define CHECK_ERROR_HAS(needle) rk_test_error_has_((needle), __FILE__, __LINE__)

#define RK_TEST_SKIP(...) \
  do {                    \
    printf("SKIPPED: ");  \
    printf(__VA_ARGS__);  \
    printf("\n");         \
    fflush(stdout);       \
    exit(77);             \
  } while (0)

/* Prints a summary line; returns the exit code for main (0 or 1). */
int rk_test_finish(const char *name);

/* A fresh directory (mkdtemp) under $TMPDIR (or /tmp), removed with its
 * contents at exit. The returned string lives until exit. */
const char *rk_test_temp_dir(void);
/* Points RK_CACHE_DIR at a fresh temporary directory; returns it. */
const char *rk_test_use_temp_cache(void);

/* Redirects fd 1 and 2 to temporary files until rk_test_capture_end(), which
 * restores them and returns how many bytes were written to fd 2 (to fd 1 in
 * *out_stdout_bytes when not NULL); the captured stderr text is copied to
 * `text` (cap bytes, may be NULL). Not nestable. */
void rk_test_capture_begin(void);
size_t rk_test_capture_end(size_t *out_stdout_bytes, char *text, size_t cap);

/* Case-insensitive substring test. */
bool rk_test_contains(const char *haystack, const char *needle);

/* ---- Implementation ----------------------------------------------------- */
#ifdef RK_TEST_IMPLEMENTATION

#include <ctype.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

int rk_test_failures;

bool rk_test_check_(bool ok, const char *file, int line, const char *expr,
                    const char *fmt, ...) {
  if (ok) return true;
  ++rk_test_failures;
  printf("%s:%d: CHECK(%s) failed: ", file, line, expr);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  return false;
}

bool rk_test_check_ok_(rk_status_t s, const char *file, int line,
                       const char *expr) {
  if (s == RK_OK) return true;
  ++rk_test_failures;
  printf("%s:%d: %s returned %s (%d): %s\n", file, line, expr,
         rk_status_name(s), (int)s, rk_last_error());
  fflush(stdout);
  return false;
}

bool rk_test_check_status_(rk_status_t s, rk_status_t expected,
                           const char *file, int line, const char *expr) {
  if (s != expected) {
    ++rk_test_failures;
    printf("%s:%d: %s returned %s (%d), expected %s (%d); message: %s\n", file,
           line, expr, rk_status_name(s), (int)s, rk_status_name(expected),
           (int)expected, rk_last_error());
    fflush(stdout);
    return false;
  }
  if (expected != RK_OK && rk_last_error()[0] == '\0') {
    ++rk_test_failures;
    printf(
        "%s:%d: %s returned %s as expected but left no message in "
        "rk_last_error()\n",
        file, line, expr, rk_status_name(s));
    fflush(stdout);
    return false;
  }
  return true;
}

bool rk_test_contains(const char *haystack, const char *needle) {
  size_t n = strlen(needle);
  for (const char *h = haystack; *h; ++h) {
    size_t i = 0;
    while (i < n && h[i] &&
           tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
      ++i;
    if (i == n) return true;
  }
  return n == 0;
}

bool rk_test_error_has_(const char *needle, const char *file, int line) {
  if (rk_test_contains(rk_last_error(), needle)) return true;
  ++rk_test_failures;
  printf("%s:%d: rk_last_error() does not mention '%s': \"%s\"\n", file, line,
         needle, rk_last_error());
  fflush(stdout);
  return false;
}

void rk_test_clear_error(void) { rk__fail(RK_OK, "%s", ""); }

#if defined(__SANITIZE_ADDRESS__)
#define RK_TEST_LSAN_ 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RK_TEST_LSAN_ 1
#endif
#endif
#ifdef RK_TEST_LSAN_
#include <sanitizer/lsan_interface.h>
#endif

int rk_test_finish(const char *name) {
#ifdef RK_TEST_LSAN_
  /* Look for leaks now, while every thread is idle, rather than at exit,
   * when vendor libraries (PoCL, Mesa) tear their threads down: LeakSanitizer
   * can crash stopping a thread that is half gone. The check at exit is
   * then skipped. */
  __lsan_do_leak_check();
#endif
  if (rk_test_failures)
    printf("%s: %d check(s) FAILED\n", name, rk_test_failures);
  else
    printf("%s: all checks passed\n", name);
  fflush(stdout);
  return rk_test_failures ? 1 : 0;
}

/* ---- Temporary directories ---- */

enum { kRkTestMaxDirs = 32 };
static char *rk_test_dirs_[kRkTestMaxDirs];
static int rk_test_ndirs_;

static int rk_test_rm_(const char *path, const struct stat *st, int flag,
                       struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP) {
    chmod(path, 0700);
    rmdir(path);
  } else {
    unlink(path);
  }
  return 0;
}

static void rk_test_remove_dirs_(void) {
  for (int i = 0; i < rk_test_ndirs_; ++i) {
    nftw(rk_test_dirs_[i], rk_test_rm_, 16, FTW_DEPTH | FTW_PHYS);
    free(rk_test_dirs_[i]);
  }
  rk_test_ndirs_ = 0;
}

const char *rk_test_temp_dir(void) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  char buf[4096];
  snprintf(buf, sizeof buf, "%s/rk-test-XXXXXX", tmp);
  if (!mkdtemp(buf) || rk_test_ndirs_ == kRkTestMaxDirs) {
    printf("cannot create a temporary directory under %s\n", tmp);
    exit(1);
  }
  if (rk_test_ndirs_ == 0) atexit(rk_test_remove_dirs_);
  rk_test_dirs_[rk_test_ndirs_] = strdup(buf);
  return rk_test_dirs_[rk_test_ndirs_++];
}

const char *rk_test_use_temp_cache(void) {
  const char *dir = rk_test_temp_dir();
  setenv("RK_CACHE_DIR", dir, 1);
  return dir;
}

/* ---- Capturing stdout/stderr ---- */

static int rk_test_saved_fd_[3] = {-1, -1, -1};
static FILE *rk_test_capture_file_[3];

void rk_test_capture_begin(void) {
  fflush(stdout);
  fflush(stderr);
  for (int fd = 1; fd <= 2; ++fd) {
    rk_test_capture_file_[fd] = tmpfile();
    rk_test_saved_fd_[fd] = dup(fd);
    if (rk_test_capture_file_[fd]) dup2(fileno(rk_test_capture_file_[fd]), fd);
  }
}

size_t rk_test_capture_end(size_t *out_stdout_bytes, char *text, size_t cap) {
  fflush(stdout);
  fflush(stderr);
  size_t sizes[3] = {0, 0, 0};
  for (int fd = 1; fd <= 2; ++fd) {
    if (rk_test_saved_fd_[fd] >= 0) {
      dup2(rk_test_saved_fd_[fd], fd);
      close(rk_test_saved_fd_[fd]);
      rk_test_saved_fd_[fd] = -1;
    }
    FILE *f = rk_test_capture_file_[fd];
    if (!f) continue;
    struct stat st;
    if (fstat(fileno(f), &st) == 0) sizes[fd] = (size_t)st.st_size;
    if (fd == 2 && text && cap) {
      rewind(f);
      size_t n = fread(text, 1, cap - 1, f);
      text[n] = '\0';
    }
    fclose(f);
    rk_test_capture_file_[fd] = NULL;
  }
  if (out_stdout_bytes) *out_stdout_bytes = sizes[1];
  return sizes[2];
}

#endif /* RK_TEST_IMPLEMENTATION */
#endif /* RK_TESTS_RK_TEST_H_ */
