/* The on-disk cache's location, trust rules and checked entries (see
 * cache_dir.h). POSIX. */
#include "base/cache_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/platform.h"
#include "base/sys.h"

enum { kTrailerSize = 32, kChecksumSize = 16 };
/* "rkcache2": the checksum is rk__checksum128 (entries of format 1, with
 * an FNV-1a checksum, read as damaged and are rebuilt). */
static const char kMagic[8] = {'r', 'k', 'c', 'a', 'c', 'h', 'e', '2'};

rk_status_t rk__cache_root(char *out, size_t cap) {
  const char *env = getenv("RK_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (env && *env)
    n = snprintf(out, cap, "%s", env);
  else if (xdg && *xdg)
    n = snprintf(out, cap, "%s/rk", xdg);
  else if (home && *home)
    n = snprintf(out, cap, "%s/.cache/rk", home);
  else
    return rk__fail(RK_ERR_NOT_FOUND,
                    "no cache directory: none of RK_CACHE_DIR, "
                    "XDG_CACHE_HOME and HOME is set");
  if (n < 0 || (size_t)n >= cap)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "the cache directory's path does not fit in %zu bytes",
                    cap);
  return RK_OK;
}

/* The trust rule applied to what stat or fstat returned for path. */
static rk_status_t check_stat(const char *path, const struct stat *st,
                              bool want_dir) {
  if (want_dir && !S_ISDIR(st->st_mode))
    return rk__fail(RK_ERR_UNAVAILABLE, "cache: '%s' is not a directory", path);
  if (!want_dir && !S_ISREG(st->st_mode))
    return rk__fail(RK_ERR_UNAVAILABLE, "cache: '%s' is not a regular file",
                    path);
  uid_t me = geteuid();
  if (st->st_uid != me)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cache: '%s' belongs to uid %lu, not to this user (uid "
                    "%lu); it is not used",
                    path, (unsigned long)st->st_uid, (unsigned long)me);
  if (st->st_mode & (S_IWGRP | S_IWOTH))
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cache: '%s' is writable by group or others (mode %04o); "
                    "it is not used",
                    path, (unsigned)(st->st_mode & 07777));
  return RK_OK;
}

rk_status_t rk__cache_check(const char *path, bool want_dir) {
  struct stat st;
  if (stat(path, &st) != 0) {
    int e = errno;
    return rk__fail(e == ENOENT ? RK_ERR_NOT_FOUND : RK_ERR_UNAVAILABLE,
                    "cache: '%s': %s", path, strerror(e));
  }
  return check_stat(path, &st, want_dir);
}

rk_status_t rk__cache_dir(const char *sub, char *out, size_t cap) {
  char root[4096];
  RK_RETURN_IF_ERROR(rk__cache_root(root, sizeof root));
  int n = sub && *sub ? snprintf(out, cap, "%s/%s", root, sub)
                      : snprintf(out, cap, "%s", root);
  if (n < 0 || (size_t)n >= cap)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "the cache directory's path does not fit in %zu bytes",
                    cap);
  /* The root is checked before anything is made inside it. Directories
   * that exist are only checked (the usual case: one stat each). */
  rk_status_t s = rk__cache_check(root, true);
  if (s == RK_ERR_NOT_FOUND) {
    if (rk__mkdirs(root) != RK_OK)
      return rk__fail_context(RK_ERR_UNAVAILABLE, "cache");
    s = rk__cache_check(root, true);
  }
  if (s != RK_OK) return s;
  if (!sub || !*sub) return RK_OK;
  s = rk__cache_check(out, true);
  if (s != RK_ERR_NOT_FOUND) return s;
  if (mkdir(out, 0700) != 0 && errno != EEXIST)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cache: cannot create directory '%s': %s", out,
                    strerror(errno));
  return rk__cache_check(out, true);
}

/* The entry's checksum, seeded with its key: an entry copied under another
 * key does not check. */
static void checksum(const char *key, const void *data, size_t size,
                     unsigned char out[kChecksumSize]) {
  rk__hash_t h;
  rk__hash_init(&h);
  rk__hash_str(&h, key);
  rk__checksum128((uint64_t)h.h ^ (uint64_t)(h.h >> 64), data, size, out);
}

static void make_trailer(const char *key, const void *data, size_t size,
                         unsigned char out[kTrailerSize]) {
  memcpy(out, kMagic, sizeof kMagic);
  for (int i = 0; i < 8; ++i)
    out[8 + i] = (unsigned char)((uint64_t)size >> (8 * i));
  checksum(key, data, size, out + 16);
}

rk_status_t rk__cache_read(const char *path, const char *key, size_t max_size,
                           void **out_data, size_t *out_size) {
  /* O_NONBLOCK: a FIFO planted in place of an entry must not block the
   * open; fstat then refuses it. */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT)
      return rk__fail(RK_ERR_NOT_FOUND, "cache: no entry '%s'", path);
    if (e == ELOOP)
      return rk__fail(RK_ERR_UNAVAILABLE,
                      "cache: '%s' is a symbolic link; it is not used", path);
    return rk__fail(RK_ERR_UNAVAILABLE, "cache: cannot open '%s': %s", path,
                    strerror(e));
  }
  struct stat st;
  rk_status_t s = RK_OK;
  if (fstat(fd, &st) != 0)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cache: '%s': %s", path, strerror(errno));
  if (s == RK_OK) s = check_stat(path, &st, false);
  if (s == RK_OK && (st.st_size < kTrailerSize ||
                     (uint64_t)st.st_size - kTrailerSize > (uint64_t)max_size))
    s = rk__fail(RK_ERR_UNAVAILABLE,
                 "cache: '%s' is damaged: %lld bytes is not the size of an "
                 "entry",
                 path, (long long)st.st_size);
  if (s != RK_OK) {
    close(fd);
    return s;
  }
  size_t total = (size_t)st.st_size, got = 0;
  unsigned char *data = malloc(total + 1);
  if (!data) {
    close(fd);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cache: %zu bytes for '%s'", total,
                    path);
  }
  while (got < total) {
    ssize_t r = read(fd, data + got, total - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  size_t size = total - kTrailerSize;
  unsigned char want[kTrailerSize];
  if (got == total) make_trailer(key, data, size, want);
  if (got != total || memcmp(data + size, want, kTrailerSize) != 0) {
    free(data);
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cache: '%s' is damaged: its size or checksum does not "
                    "match what was written",
                    path);
  }
  data[size] = '\0';
  *out_data = data;
  *out_size = size;
  return RK_OK;
}

static bool write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

rk_status_t rk__cache_write(const char *path, const char *key, const void *data,
                            size_t size) {
  char tmp[4200];
  int len =
      snprintf(tmp, sizeof tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid());
  if (len < 0 || (size_t)len >= sizeof tmp)
    return rk__fail(RK_ERR_OUT_OF_RANGE, "cache: path too long: %s", path);
#if RK__LINUX || RK__APPLE
  int fd = mkostemp(tmp, O_CLOEXEC);
#else
  int fd = mkstemp(tmp); /* POSIX before 2024 has no mkostemp */
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
  if (fd < 0)
    return rk__fail(RK_ERR_UNAVAILABLE, "cache: cannot create '%s': %s", tmp,
                    strerror(errno));
  unsigned char trailer[kTrailerSize];
  make_trailer(key, data, size, trailer);
  bool ok = fchmod(fd, 0600) == 0 && write_all(fd, data, size) &&
            write_all(fd, trailer, sizeof trailer);
  int e = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    unlink(tmp);
    return rk__fail(RK_ERR_UNAVAILABLE, "cache: cannot write '%s': %s", path,
                    strerror(e));
  }
  return RK_OK;
}
