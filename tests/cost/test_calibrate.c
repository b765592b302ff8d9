/* Calibration end to end (quick level): progress, an atomic write that
 * replaces an old profile at the default path, and a profile that the model
 * then reads as measured. Write failures are errors, not crashes. The
 * output file rules (rk__write_file_replace): a symbolic link is followed
 * and kept; a dangling link, a directory, a FIFO or a device is refused
 * before anything is measured, and left as it was. */
#define RK_TEST_IMPLEMENTATION
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/sysmacros.h> /* makedev; macOS has it in sys/types.h */
#endif
#include <unistd.h>

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

/* Number of entries in `dir` (temporary files left behind show up). */
static int count_entries(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ++n;
  closedir(dp);
  return n;
}

static bool file_is(const char *path, const char *want) {
  char *text = NULL;
  if (rk__read_file(path, &text, NULL) != RK_OK) return false;
  bool same = strcmp(text, want) == 0;
  free(text);
  return same;
}

/* The writer itself, on every kind of thing at the path. */
static void test_write_rules(const char *base) {
  char dir[600], a[700], b[700], c[700];
  snprintf(dir, sizeof dir, "%s/write-rules", base);
  if (!CHECK_OK(rk__mkdirs(dir))) return;
  umask(022);

  /* New file: 0666 less the umask, or 0600 private. */
  snprintf(a, sizeof a, "%s/new", dir);
  CHECK_OK(rk__write_file_replace(a, "one\n", 4, 0));
  struct stat st;
  CHECK(stat(a, &st) == 0 && (st.st_mode & 07777) == 0644, "new mode %o",
        (unsigned)(st.st_mode & 07777));
  snprintf(b, sizeof b, "%s/private", dir);
  CHECK_OK(rk__write_file_atomic(b, "p\n", 2));
  CHECK(stat(b, &st) == 0 && (st.st_mode & 07777) == 0600, "private mode %o",
        (unsigned)(st.st_mode & 07777));
  /* An existing file keeps its mode. */
  CHECK(chmod(a, 0640) == 0, "chmod");
  CHECK_OK(rk__write_file_replace(a, "two\n", 4, 0));
  CHECK(file_is(a, "two\n"), "not replaced");
  CHECK(stat(a, &st) == 0 && (st.st_mode & 07777) == 0640, "mode now %o",
        (unsigned)(st.st_mode & 07777));

  /* A link: the target is written, the link stays. */
  snprintf(b, sizeof b, "%s/link", dir);
  CHECK(symlink("new", b) == 0, "symlink");
  CHECK_OK(rk__write_file_replace(b, "three\n", 6, 0));
  struct stat lst;
  CHECK(lstat(b, &lst) == 0 && S_ISLNK(lst.st_mode), "the link was replaced");
  CHECK(file_is(a, "three\n"), "the target was not written");
  CHECK(stat(a, &st) == 0 && (st.st_mode & 07777) == 0640, "target mode now %o",
        (unsigned)(st.st_mode & 07777));

  /* A dangling link: refused, nothing created, the link kept. */
  snprintf(c, sizeof c, "%s/dangling", dir);
  CHECK(symlink("absent/file", c) == 0, "symlink");
  CHECK_STATUS(rk__write_file_replace(c, "x", 1, 0), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("does not exist");
  CHECK(lstat(c, &lst) == 0 && S_ISLNK(lst.st_mode), "dangling link replaced");
  CHECK_STATUS(rk__write_file_check(c, 0), RK_ERR_INVALID_ARGUMENT);

  /* A directory: refused with either flag. */
  CHECK_STATUS(rk__write_file_replace(dir, "x", 1, RK__WRITE_SPECIAL_IN_PLACE),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("is a directory");

  /* A FIFO: refused, and left a FIFO; written in place when asked. */
  snprintf(b, sizeof b, "%s/fifo", dir);
  if (CHECK(mkfifo(b, 0600) == 0, "mkfifo: %s", strerror(errno))) {
    CHECK_STATUS(rk__write_file_replace(b, "x", 1, 0), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("FIFO");
    CHECK(lstat(b, &lst) == 0 && S_ISFIFO(lst.st_mode), "FIFO replaced");
    int reader = open(b, O_RDONLY | O_NONBLOCK);
    if (CHECK(reader >= 0, "open the FIFO: %s", strerror(errno))) {
      CHECK_OK(
          rk__write_file_replace(b, "piped", 5, RK__WRITE_SPECIAL_IN_PLACE));
      char got[8] = "";
      CHECK(read(reader, got, sizeof got) == 5 && memcmp(got, "piped", 5) == 0,
            "read '%s' from the FIFO", got);
      close(reader);
    }
    CHECK(lstat(b, &lst) == 0 && S_ISFIFO(lst.st_mode), "FIFO replaced");
  }
  /* A character device like /dev/null, made here (only root may): refused,
   * or written in place when asked. (Never the real /dev/null: a writer
   * that renamed over it would replace it for the whole machine.) */
  snprintf(b, sizeof b, "%s/null-device", dir);
  int entries = 5;
  if (mknod(b, S_IFCHR | 0666, makedev(1, 3)) == 0) {
    ++entries;
    CHECK_STATUS(rk__write_file_replace(b, "x", 1, 0), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("character device");
    CHECK_OK(rk__write_file_replace(b, "x", 1, RK__WRITE_SPECIAL_IN_PLACE));
    CHECK(lstat(b, &lst) == 0 && S_ISCHR(lst.st_mode), "device replaced");
  } else {
    printf("note: no device node test (mknod: %s)\n", strerror(errno));
  }
  /* Nothing left behind: new, private, link, dangling, fifo, (device). */
  CHECK(count_entries(dir) == entries, "%d entries in %s", count_entries(dir),
        dir);
}

/* rk_cost_calibrate refuses a bad output path before measuring anything. */
static void test_refused_outputs(const char *base) {
  char dir[600], path[700];
  snprintf(dir, sizeof dir, "%s/refused", base);
  if (!CHECK_OK(rk__mkdirs(dir))) return;
  seen_t seen = {0, 0.0, false, false, ""};
  rk_calibrate_options_t o;
  rk_calibrate_options_init(&o);
  o.level = RK_CALIBRATE_QUICK;
  o.progress = on_progress;
  o.user = &seen;
  o.output_path = path;
  struct stat st;

  snprintf(path, sizeof path, "%s/fifo", dir);
  if (CHECK(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno))) {
    CHECK_STATUS(rk_cost_calibrate(&o, NULL), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("it is a FIFO");
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "FIFO replaced");
  }
  snprintf(path, sizeof path, "%s/directory", dir);
  CHECK_OK(rk__mkdirs(path));
  CHECK_STATUS(rk_cost_calibrate(&o, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("it is a directory");
  CHECK(lstat(path, &st) == 0 && S_ISDIR(st.st_mode), "directory replaced");

  snprintf(path, sizeof path, "%s/dangling", dir);
  CHECK(symlink("no-such.profile", path) == 0, "symlink");
  CHECK_STATUS(rk_cost_calibrate(&o, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("does not exist");
  CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "link replaced");

  /* A device node like /dev/full (only root may make one). */
  snprintf(path, sizeof path, "%s/null-device", dir);
  if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0) {
    CHECK_STATUS(rk_cost_calibrate(&o, NULL), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("it is a character device");
    CHECK(lstat(path, &st) == 0 && S_ISCHR(st.st_mode), "device replaced");
  } else {
    printf("note: no device node test (mknod: %s)\n", strerror(errno));
  }
  CHECK(seen.calls == 0, "measuring started %d times before a refusal",
        seen.calls);
}

int main(void) {
  const char *cache = rk_test_use_temp_cache();
  unsetenv("RK_COST_PROFILE");
  unsetenv("RK_COST_SOFTWARE");

  test_write_rules(rk_test_temp_dir());
  test_refused_outputs(rk_test_temp_dir());

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

  /* Above the thread switch SIMD is never predicted slower than scalar
   * at a measured size (a near tie there is the one-thread bandwidth's
   * noise). */
  static const rk_op_t kVec[] = {RK_OP_ADD,  RK_OP_SCALE, RK_OP_AXPY,
                                 RK_OP_RELU, RK_OP_SUM,   RK_OP_DOT};
  for (size_t v = 0; v < sizeof kVec / sizeof kVec[0]; ++v)
    for (size_t n = (size_t)1 << 18; n <= ((size_t)1 << 20); n *= 4) {
      rk_op_desc_t d = {.op = kVec[v], .n = n, .result_on_host = true};
      rk_prediction_t p[8];
      size_t count = 0, best = 0, sc = 8, sd = 8;
      if (!CHECK_OK(rk_cost_model_predict(fresh, &d, p, 8, &count, &best)))
        break;
      for (size_t i = 0; i < count; ++i) {
        if (p[i].target.kind == RK_EXEC_SCALAR) sc = i;
        if (p[i].target.kind == RK_EXEC_SIMD) sd = i;
      }
      if (sc < count && sd < count)
        CHECK(p[sd].total_s < p[sc].total_s,
              "%s n=%zu: simd predicted %g s, scalar %g s", rk_op_name(kVec[v]),
              n, p[sd].total_s, p[sc].total_s);
    }

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

  /* RK_COST_PROFILE naming a link: the link's target gets the profile, the
   * link stays, and the model reads it through the link. */
  char target[1100], link[1100];
  snprintf(target, sizeof target, "%s/real.profile", cache);
  snprintf(link, sizeof link, "%s/link.profile", cache);
  CHECK_OK(rk__write_file_atomic(target, "old\n", 4));
  CHECK(symlink("real.profile", link) == 0, "symlink");
  setenv("RK_COST_PROFILE", link, 1);
  rk_calibrate_options_init(&o);
  o.level = RK_CALIBRATE_QUICK;
  if (CHECK_OK(rk_cost_calibrate(&o, NULL))) {
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode),
          "the link was replaced by a file");
    CHECK(!file_is(target, "old\n"), "the link's target was not written");
    rk_cost_model_options_t mo;
    rk_cost_model_options_init(&mo);
    mo.quiet = true;
    if (CHECK_OK(rk_cost_model_open_with(&mo, &m))) {
      CHECK_OK(rk_cost_model_info(m, &info));
      CHECK(info.from_profile && strcmp(info.profile_path, link) == 0,
            "not read through the link: %s", info.note);
      rk_cost_model_destroy(m);
    }
  }
  unsetenv("RK_COST_PROFILE");

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
