/* Calibration end to end (quick level): progress, an atomic write that
 * replaces an old profile at the default path, and a profile that the model
 * then reads as measured. Write failures are errors, not crashes. */
#define RK_TEST_IMPLEMENTATION
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "rk/select.h"
#include "rk_test.h"

typedef struct seen {
  int calls;
  double last;
  bool backwards, out_of_range;
  char final_what[200];
} seen_t;

static void on_progress(void *user, double fraction, const char *what) {
  seen_t *s = user;
  if (fraction < s->last) s->backwards = true;
  if (fraction < 0.0 || fraction > 1.0) s->out_of_range = true;
  s->last = fraction;
  ++s->calls;
  snprintf(s->final_what, sizeof s->final_what, "%s", what);
}

static size_t count_substr(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) ++n;
  return n;
}

int main(void) {
  const char *cache = rk_test_use_temp_cache();
  unsetenv("RK_COST_PROFILE");
  unsetenv("RK_COST_SOFTWARE");

  rk_calibrate_options_t o;
  rk_calibrate_options_init(&o);
  CHECK(o.level == RK_CALIBRATE_DEFAULT, "default level %d", (int)o.level);
  o.level = (rk_calibrate_level_t)9;
  CHECK_STATUS(rk_cost_calibrate(&o, NULL), RK_ERR_INVALID_ARGUMENT);

  /* An old profile at the default place is replaced whole. */
  char path[1024];
  if (!CHECK_OK(rk_cost_profile_path(path, sizeof path)))
    return rk_test_finish("calibrate");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  CHECK_OK(rk__mkdirs(dir));
  CHECK_OK(rk__write_file_atomic(path, "old\n", 4));

  seen_t seen = {0, 0.0, false, false, ""};
  rk_calibrate_options_init(&o);
  o.level = RK_CALIBRATE_QUICK;
  o.progress = on_progress;
  o.user = &seen;
  rk_cost_model_t *fresh = NULL;
  uint64_t t0 = rk__now_ns();
  if (!CHECK_OK(rk_cost_calibrate(&o, &fresh)))
    return rk_test_finish("calibrate");
  printf("quick calibration took %.1f s\n", (double)(rk__now_ns() - t0) * 1e-9);
  CHECK(seen.calls > 10, "progress called %d times", seen.calls);
  CHECK(!seen.backwards && !seen.out_of_range, "progress not monotonic");
  CHECK(seen.last == 1.0 && strcmp(seen.final_what, "done") == 0,
        "last progress %g '%s'", seen.last, seen.final_what);

  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(fresh, &info));
  CHECK(info.from_profile && strcmp(info.profile_path, path) == 0,
        "fresh model: %d %s", info.from_profile, info.profile_path);

  char *text = NULL;
  size_t size = 0;
  if (CHECK_OK(rk__read_file(path, &text, &size))) {
    CHECK(strncmp(text, "old", 3) != 0, "the old profile is still there");
    CHECK(size > 5 && strcmp(text + size - 4, "end\n") == 0,
          "profile does not end with 'end'");
    CHECK(count_substr(text, "scalar.elementwise.rate =") >= 4,
          "too few scalar element-wise sizes:\n%s", text);
    CHECK(count_substr(text, ".matmul.rate =") >= 2, "no matmul rates");
    CHECK(strstr(text, "# measured ") != NULL, "no comment with the date");
    free(text);
  }
  /* Nothing else in the directory: the temporary file was renamed. */
  DIR *dp = opendir(dir);
  int entries = 0;
  if (CHECK(dp != NULL, "cannot list %s", dir)) {
    struct dirent *e;
    while ((e = readdir(dp)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        ++entries;
        CHECK(strstr(path, e->d_name) != NULL, "stray file %s", e->d_name);
      }
    closedir(dp);
  }
  CHECK(entries == 1, "%d files in %s", entries, dir);

  /* The default open reads it, as measured, with no warning. */
  rk_cost_model_t *m = NULL;
  char err[512] = "";
  rk_test_capture_begin();
  rk_status_t s = rk_cost_model_open(&m);
  rk_test_capture_end(NULL, err, sizeof err);
  if (CHECK_OK(s)) {
    CHECK_OK(rk_cost_model_info(m, &info));
    CHECK(info.from_profile, "default open did not read it: %s", info.note);
    CHECK(err[0] == '\0', "warning although measured: %s", err);
    /* The same predictions as the model calibrate returned. */
    rk_op_desc_t d = {.op = RK_OP_DOT, .n = 12345, .result_on_host = true};
    rk_prediction_t a[8], b[8];
    size_t ca = 0, cb = 0, ba = 0, bb = 0;
    CHECK_OK(rk_cost_model_predict(m, &d, a, 8, &ca, &ba));
    CHECK_OK(rk_cost_model_predict(fresh, &d, b, 8, &cb, &bb));
    CHECK(ca == cb && ba == bb, "different candidates");
    for (size_t i = 0; i < ca && i < cb; ++i)
      CHECK(a[i].total_s > 0 && a[i].total_s / b[i].total_s < 1.0 + 1e-5 &&
                b[i].total_s / a[i].total_s < 1.0 + 1e-5,
            "candidate %zu: %g read back, %g measured", i, a[i].total_s,
            b[i].total_s);
    rk_cost_model_destroy(m);
  }
  rk_cost_model_destroy(fresh);

  /* Writing where it cannot: an error with the path, nothing left over. */
  char bad[1100];
  snprintf(bad, sizeof bad, "%s/a-file/profile", cache);
  char blocker[1100];
  snprintf(blocker, sizeof blocker, "%s/a-file", cache);
  CHECK_OK(rk__write_file_atomic(blocker, "x", 1));
  rk_calibrate_options_init(&o);
  o.level = RK_CALIBRATE_QUICK;
  o.output_path = bad;
  s = rk_cost_calibrate(&o, NULL);
  CHECK(s != RK_OK, "writing under a file succeeded");
  CHECK_ERROR_HAS("a-file");
  (void)cache;
  return rk_test_finish("calibrate");
}
