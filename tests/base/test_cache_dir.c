/* The on-disk cache's shared rules (base/cache_dir.h): where the cache
 * lives, directories created 0700 and entries 0600 whatever the umask,
 * directories and entries refused when another user owns them or group or
 * others may write them, entries read back only when their size and
 * checksum match (and not through a symbolic link or from a FIFO), and the
 * cost model's default profile path under the same rules; and the entries'
 * checksum (rk__checksum128) changes with every bit, length and seed. */
#define RK_TEST_IMPLEMENTATION
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/sys.h"
#include "rk/select.h"
#include "rk_test.h"

static const uid_t kOtherUid = 65534; /* nobody */

static unsigned mode_of(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 07777u;
}

static void test_root(void) {
  char out[4096];
  setenv("RK_CACHE_DIR", "/a/b", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  setenv("HOME", "/h", 1);
  CHECK_OK(rk__cache_root(out, sizeof out));
  CHECK(strcmp(out, "/a/b") == 0, "%s", out);
  unsetenv("RK_CACHE_DIR");
  CHECK_OK(rk__cache_root(out, sizeof out));
  CHECK(strcmp(out, "/x/rk") == 0, "%s", out);
  unsetenv("XDG_CACHE_HOME");
  CHECK_OK(rk__cache_root(out, sizeof out));
  CHECK(strcmp(out, "/h/.cache/rk") == 0, "%s", out);
  CHECK_STATUS(rk__cache_root(out, 4), RK_ERR_OUT_OF_RANGE);
  unsetenv("HOME");
  CHECK_STATUS(rk__cache_root(out, sizeof out), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("RK_CACHE_DIR");
}

static void test_dirs(void) {
  const char *base = rk_test_temp_dir();
  char root[4200], dir[4300], out[4400];
  snprintf(root, sizeof root, "%s/new/cache", base);
  snprintf(dir, sizeof dir, "%s/cpu", root);
  setenv("RK_CACHE_DIR", root, 1);
  mode_t old = umask(0);
  CHECK_OK(rk__cache_dir("cpu", out, sizeof out));
  umask(old);
  CHECK(strcmp(out, dir) == 0, "%s", out);
  CHECK(mode_of(root) == 0700 && mode_of(dir) == 0700,
        "modes %04o %04o, expected 0700", mode_of(root), mode_of(dir));

  /* Existing directories with 0755 are fine: nobody else can write. */
  chmod(dir, 0755);
  CHECK_OK(rk__cache_dir("cpu", out, sizeof out));

  chmod(dir, 0777);
  CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("writable by group or others (mode 0777)");
  CHECK_ERROR_HAS(dir);
  chmod(dir, 0770);
  CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_UNAVAILABLE);
  chmod(dir, 0700);
  chmod(root, 01777); /* sticky does not make a shared directory private */
  CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS(root);
  char cuda[4300];
  snprintf(cuda, sizeof cuda, "%s/cuda", root);
  CHECK_STATUS(rk__cache_dir("cuda", out, sizeof out), RK_ERR_UNAVAILABLE);
  CHECK(mode_of(cuda) == 07777u, "%s was created in a refused root", cuda);
  chmod(root, 0700);
  CHECK_OK(rk__cache_dir(NULL, out, sizeof out));
  CHECK(strcmp(out, root) == 0, "%s", out);

  if (geteuid() == 0) {
    CHECK(chown(dir, kOtherUid, kOtherUid) == 0, "chown");
    CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS("belongs to uid 65534");
    CHECK(chown(dir, 0, 0) == 0, "chown");
    CHECK(chown(root, kOtherUid, kOtherUid) == 0, "chown");
    CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS("belongs to uid 65534");
    CHECK(chown(root, 0, 0) == 0, "chown");
  } else {
    printf("note: not root; the foreign-owner cases need chown\n");
  }

  /* A file where a directory should be. */
  FILE *f = fopen(cuda, "w");
  if (f) fclose(f);
  CHECK_STATUS(rk__cache_dir("cuda", out, sizeof out), RK_ERR_UNAVAILABLE);
  unsetenv("RK_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  CHECK_STATUS(rk__cache_dir("cpu", out, sizeof out), RK_ERR_NOT_FOUND);
}

static void test_entries(void) {
  const char *base = rk_test_temp_dir();
  char path[4200], other[4200];
  snprintf(path, sizeof path, "%s/k.bin", base);
  static const char kData[] = "some image bytes\0with a NUL";
  const size_t n = sizeof kData;
  mode_t old = umask(0);
  CHECK_OK(rk__cache_write(path, "k", kData, n));
  umask(old);
  CHECK(mode_of(path) == 0600, "entry mode %04o", mode_of(path));
  struct stat st;
  CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n + 32, "size %lld",
        (long long)st.st_size);

  void *data = NULL;
  size_t size = 0;
  if (CHECK_OK(rk__cache_read(path, "k", 1024, &data, &size))) {
    CHECK(size == n && memcmp(data, kData, n) == 0, "read back %zu bytes",
          size);
    CHECK(((char *)data)[size] == '\0', "no NUL after the payload");
    free(data);
  }
  /* Another key's entry (renamed), a payload above the limit. */
  CHECK_STATUS(rk__cache_read(path, "j", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("damaged");
  CHECK_STATUS(rk__cache_read(path, "k", n - 1, &data, &size),
               RK_ERR_UNAVAILABLE);
  snprintf(other, sizeof other, "%s/missing", base);
  CHECK_STATUS(rk__cache_read(other, "k", 1024, &data, &size),
               RK_ERR_NOT_FOUND);

  /* Changed, shortened and lengthened entries. */
  FILE *f = fopen(path, "r+b");
  if (f) {
    fseek(f, 3, SEEK_SET);
    fputc('X', f);
    fclose(f);
  }
  CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("damaged");
  CHECK_OK(rk__cache_write(path, "k", kData, n));
  CHECK(truncate(path, (off_t)(n + 31)) == 0, "truncate");
  CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK(truncate(path, 5) == 0, "truncate");
  CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_OK(rk__cache_write(path, "k", kData, n));
  f = fopen(path, "ab");
  if (f) {
    fputc('!', f);
    fclose(f);
  }
  CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);

  /* Writable by others, another user's, a symbolic link, a FIFO. */
  CHECK_OK(rk__cache_write(path, "k", kData, n));
  chmod(path, 0620);
  CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("writable by group or others");
  chmod(path, 0644); /* readable by others is fine */
  if (CHECK_OK(rk__cache_read(path, "k", 1024, &data, &size))) free(data);
  if (geteuid() == 0) {
    CHECK(chown(path, kOtherUid, kOtherUid) == 0, "chown");
    CHECK_STATUS(rk__cache_read(path, "k", 1024, &data, &size),
                 RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS("belongs to uid 65534");
  }
  CHECK_OK(rk__cache_write(path, "k", kData, n)); /* replaces it, ours */
  if (CHECK_OK(rk__cache_read(path, "k", 1024, &data, &size))) free(data);
  snprintf(other, sizeof other, "%s/link.bin", base);
  CHECK(symlink(path, other) == 0, "symlink");
  CHECK_STATUS(rk__cache_read(other, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("symbolic link");
  snprintf(other, sizeof other, "%s/fifo.bin", base);
  CHECK(mkfifo(other, 0600) == 0, "mkfifo");
  CHECK_STATUS(rk__cache_read(other, "k", 1024, &data, &size),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("not a regular file");

  /* A write that cannot happen leaves nothing behind. */
  snprintf(other, sizeof other, "%s/no/such/dir/k.bin", base);
  CHECK_STATUS(rk__cache_write(other, "k", kData, n), RK_ERR_UNAVAILABLE);
}

/* rk_cost_profile_path under the same rules. */
static void test_cost_profile_path(void) {
  const char *base = rk_test_temp_dir();
  char root[4200], cost[4300], path[4096];
  snprintf(root, sizeof root, "%s/cache", base);
  snprintf(cost, sizeof cost, "%s/cost", root);
  unsetenv("RK_COST_PROFILE");
  setenv("RK_CACHE_DIR", root, 1);
  /* Not created yet: the path is still given (calibrate creates it). */
  if (CHECK_OK(rk_cost_profile_path(path, sizeof path)))
    CHECK(strncmp(path, cost, strlen(cost)) == 0, "%s", path);
  mkdir(root, 0700);
  mkdir(cost, 0700);
  rk_test_clear_error();
  CHECK_OK(rk_cost_profile_path(path, sizeof path));
  CHECK(strcmp(rk_last_error(), "") == 0, "a successful call left: %s",
        rk_last_error());
  chmod(root, 0777);
  CHECK_STATUS(rk_cost_profile_path(path, sizeof path), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("cost profile");
  CHECK_ERROR_HAS("writable by group or others");
  chmod(root, 0700);
  chmod(cost, 0777);
  CHECK_STATUS(rk_cost_profile_path(path, sizeof path), RK_ERR_UNAVAILABLE);
  chmod(cost, 0700);
  if (CHECK_OK(rk_cost_profile_path(path, sizeof path))) {
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    chmod(path, 0666);
    CHECK_STATUS(rk_cost_profile_path(path, sizeof path), RK_ERR_UNAVAILABLE);
  }
  if (geteuid() == 0) {
    CHECK(chown(cost, kOtherUid, kOtherUid) == 0, "chown");
    CHECK_STATUS(rk_cost_profile_path(path, sizeof path), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS("belongs to uid 65534");
  }
}

/* Every one-bit change of a 200-byte buffer, every length from 0 to 200
 * and another seed give another checksum (all distinct from each other). */
static void test_checksum(void) {
  enum { kLen = 200, kMax = kLen * 8 + kLen + 2 };
  unsigned char buf[kLen];
  for (int i = 0; i < kLen; ++i) buf[i] = (unsigned char)(i * 37 + 11);
  static unsigned char sums[kMax][16];
  int n = 0;
  rk__checksum128(1, buf, kLen, sums[n++]);
  for (int bit = 0; bit < kLen * 8; ++bit) {
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    rk__checksum128(1, buf, kLen, sums[n++]);
    buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
  for (int len = 0; len < kLen; ++len) rk__checksum128(1, buf, len, sums[n++]);
  rk__checksum128(2, buf, kLen, sums[n++]);
  unsigned char again[16];
  rk__checksum128(1, buf, kLen, again);
  CHECK(memcmp(again, sums[0], 16) == 0, "the checksum is not repeatable");
  int same = 0;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) same += memcmp(sums[i], sums[j], 16) == 0;
  CHECK(same == 0, "%d pairs of %d checksums are equal", same, n);
}

int main(void) {
  test_checksum();
  test_root();
  test_dirs();
  test_entries();
  test_cost_profile_path();
  return rk_test_finish("base_cache_dir");
}
