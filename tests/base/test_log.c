/* rk's log (RK_LOG) and the capture of what vendor libraries print: a
 * capture keeps text written to descriptor 2 off the terminal, hands it
 * back, logs it only with RK_LOG=debug, nests, and restores descriptor 2 as
 * it was, closed included. */
#define RK_TEST_IMPLEMENTATION
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "rk_test.h"

/* Text a vendor library might print, through stdio and through write(2). */
static void vendor_prints(const char *what) {
  fprintf(stderr, "error: %s via stdio\n", what);
  if (write(2, "raw line\n", 9) != 9) return;
}

static void test_capture_keeps_quiet(void) {
  unsetenv("RK_LOG");
  char err[1024] = "", said[256] = "x";
  rk_test_capture_begin();
  rk__capture_t cap;
  rk__capture_begin(&cap);
  vendor_prints("XDG_RUNTIME_DIR");
  size_t n = rk__capture_end(&cap, "vendor", said, sizeof said);
  fprintf(stderr, "after\n");
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK(strcmp(err, "after\n") == 0, "stderr got '%s'", err);
  CHECK(strcmp(said, "error: XDG_RUNTIME_DIR via stdio\nraw line") == 0,
        "captured '%s'", said);
  CHECK(n == strlen("error: XDG_RUNTIME_DIR via stdio\nraw line\n"),
        "%zu bytes", n);
}

static void test_debug_log_relays(void) {
  setenv("RK_LOG", "debug", 1);
  char err[1024] = "";
  rk_test_capture_begin();
  rk__capture_t cap;
  rk__capture_begin(&cap);
  vendor_prints("noise");
  rk__capture_end(&cap, "webgpu", NULL, 0);
  rk_test_capture_end(NULL, err, sizeof err);
  unsetenv("RK_LOG");
  CHECK(strcmp(err,
               "rk: debug: webgpu: error: noise via stdio\n"
               "rk: debug: webgpu: raw line\n") == 0,
        "stderr got '%s'", err);
}

static void test_levels(void) {
  static const struct {
    const char *value;
    rk__log_level_t level;
  } kCases[] = {{NULL, RK__LOG_OFF},    {"", RK__LOG_OFF},
                {"0", RK__LOG_OFF},     {"off", RK__LOG_OFF},
                {"warn", RK__LOG_WARN}, {"loud", RK__LOG_WARN},
                {"1", RK__LOG_DEBUG},   {"DEBUG", RK__LOG_DEBUG}};
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    if (kCases[i].value)
      setenv("RK_LOG", kCases[i].value, 1);
    else
      unsetenv("RK_LOG");
    CHECK(rk__log_level() == kCases[i].level, "RK_LOG=%s: level %d",
          kCases[i].value ? kCases[i].value : "(unset)", (int)rk__log_level());
  }
  /* Warnings appear at warn and debug, debug lines at debug only. */
  char err[512];
  setenv("RK_LOG", "warn", 1);
  rk_test_capture_begin();
  rk__log(RK__LOG_WARN, "w%d", 1);
  rk__log(RK__LOG_DEBUG, "d%d", 1);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK(strcmp(err, "rk: warning: w1\n") == 0, "warn level: '%s'", err);
  unsetenv("RK_LOG");
  rk_test_capture_begin();
  rk__log(RK__LOG_WARN, "w%d", 2);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK(err[0] == '\0', "unset RK_LOG logged '%s'", err);
}

static void test_nesting(void) {
  char err[512] = "", outer[256], inner[256] = "x";
  rk_test_capture_begin();
  rk__capture_t a, b;
  rk__capture_begin(&a);
  fprintf(stderr, "one\n");
  rk__capture_begin(&b);
  fprintf(stderr, "two\n");
  rk__capture_end(&b, "inner", inner, sizeof inner);
  fprintf(stderr, "three\n");
  rk__capture_end(&a, "outer", outer, sizeof outer);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK(err[0] == '\0', "stderr got '%s'", err);
  CHECK(inner[0] == '\0', "the inner capture kept '%s'", inner);
  CHECK(strcmp(outer, "one\ntwo\nthree") == 0, "outer '%s'", outer);
}

/* A program that closed descriptor 2 finds it closed again. */
static void test_closed_stderr(void) {
  int keep = dup(2);
  if (!CHECK(keep >= 0, "dup")) return;
  close(2);
  rk__capture_t cap;
  char said[64];
  rk__capture_begin(&cap);
  fprintf(stderr, "lost\n");
  rk__capture_end(&cap, "vendor", said, sizeof said);
  bool closed = fcntl(2, F_GETFD) < 0;
  dup2(keep, 2);
  close(keep);
  CHECK(closed, "descriptor 2 open after the capture");
  CHECK(strcmp(said, "lost") == 0, "captured '%s'", said);
}

int main(void) {
  test_capture_keeps_quiet();
  test_debug_log_relays();
  test_levels();
  test_nesting();
  test_closed_stderr();
  return rk_test_finish("base_log");
}
