/* CPU backend: the on-disk kernel cache - hits and misses, no_cache,
 * damaged entries (garbage, truncated, bytes changed in place: rebuilt, never
 * loaded), foreign code (a shared object planted in a world-writable or
 * foreign-owned cache directory, or as an entry rk does not trust: never
 * loaded), an unusable cache directory or one that cannot be written (a
 * blocked include path, a full disk, a read-only file system: the build
 * happens in the context's private directory), the default locations
 * (RK_CACHE_DIR, XDG_CACHE_HOME, HOME), a missing compiler, and the name a
 * loaded module has in the loader's list (one a debugger can open).
 *
 * `cpu_cache CASE` runs one case by name. */
#define RK_TEST_IMPLEMENTATION
#include <ctype.h>
#include <dirent.h>
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
#if RK__LINUX
#include <link.h>
#include <sys/mount.h>
#include <sys/wait.h>
#endif
#include "base/sys.h"
#include "cpu_test_util.h"

static rk_backend_t *g_be;
static char *g_tmpdir; /* $TMPDIR at start, restored after each change */

static void restore_tmpdir(void) {
  if (g_tmpdir)
    setenv("TMPDIR", g_tmpdir, 1);
  else
    unsetenv("TMPDIR");
}

static rk_context_t *new_context(void) {
  rk_context_t *ctx = NULL;
  if (!CHECK_OK(rk_backend_create_context(g_be, 0, &ctx))) exit(1);
  return ctx;
}

/* Cache entries: <32 hex digits>.so. Other files (temporaries) are not. */
static bool is_entry_name(const char *name) {
  if (strlen(name) != 35 || strcmp(name + 32, ".so") != 0) return false;
  for (int i = 0; i < 32; ++i)
    if (!isxdigit((unsigned char)name[i])) return false;
  return true;
}

typedef struct listing {
  int entries;  /* <hash>.so */
  int includes; /* include-* directories */
  int other;    /* anything else: left-over temporaries */
  char entry[40];
} listing_t;

static listing_t list_cache(const char *dir) {
  listing_t l = {0, 0, 0, ""};
  DIR *d = opendir(dir);
  if (!d) {
    l.other = -1;
    return l;
  }
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (is_entry_name(e->d_name)) {
      l.entries++;
      snprintf(l.entry, sizeof l.entry, "%.39s", e->d_name);
    } else if (strncmp(e->d_name, "include-", 8) == 0) {
      l.includes++;
    } else {
      l.other++;
      printf("  unexpected file in the cache: %s/%s\n", dir, e->d_name);
    }
  }
  closedir(d);
  return l;
}

/* Compiles the scale kernel and checks the hit flag and the result. */
static rk_module_t *compile_expect(rk_context_t *ctx,
                                   const char *const *defines, bool no_cache,
                                   bool want_hit, int scale, const char *what) {
  rk_module_t *mod = NULL;
  if (!CHECK_OK(cpu_compile(ctx, kCpuScaleSource, "scale.c", defines, no_cache,
                            &mod)))
    return NULL;
  CHECK(rk_module_cache_hit(mod) == want_hit,
        "%s: cache_hit is %d, expected %d", what, rk_module_cache_hit(mod),
        want_hit);
  cpu_run_scale(ctx, mod, 3, scale);
  return mod;
}

/* ---- Hits and misses ---------------------------------------------------- */

static void test_hits_and_misses(void) {
  const char *base = rk_test_use_temp_cache();
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/cpu", base);
  rk_context_t *ctx = new_context();

  rk_module_t *first = compile_expect(ctx, NULL, false, false, 1, "first");
  listing_t l = list_cache(dir);
  /* kernel.h lives in the context's private directory, not in the cache. */
  CHECK(l.entries == 1 && l.includes == 0 && l.other == 0,
        "after one compile %s has %d entries, %d include dirs, %d others", dir,
        l.entries, l.includes, l.other);
  rk_module_t *second = compile_expect(ctx, NULL, false, true, 1, "second");
  CHECK(first != second, "the same module object was returned twice");
  CHECK_OK(rk_module_destroy(first));
  /* A hit module works on its own after the first one is gone. */
  cpu_run_scale(ctx, second, 5, 1);

  /* Defines are part of the key. */
  const char *d3[] = {"SCALE=3", NULL};
  const char *d4[] = {"SCALE=4", NULL};
  compile_expect(ctx, d3, false, false, 3, "SCALE=3 first");
  compile_expect(ctx, d3, false, true, 3, "SCALE=3 again");
  compile_expect(ctx, d4, false, false, 4, "SCALE=4 first");
  l = list_cache(dir);
  CHECK(l.entries == 3, "%d cache entries, expected 3", l.entries);

  /* no_cache never hits, even for source that is in the cache, and adds
   * nothing. */
  compile_expect(ctx, NULL, true, false, 1, "no_cache 1");
  compile_expect(ctx, NULL, true, false, 1, "no_cache 2");
  compile_expect(ctx, d3, true, false, 3, "no_cache SCALE=3");
  l = list_cache(dir);
  CHECK(l.entries == 3 && l.other == 0,
        "no_cache changed the cache: %d entries, %d others", l.entries,
        l.other);

  /* Another context sees the same cache. */
  rk_context_t *ctx2 = new_context();
  compile_expect(ctx2, NULL, false, true, 1, "second context");
  CHECK_OK(rk_context_destroy(ctx2));
  CHECK_OK(rk_context_destroy(ctx));
}

/* A damaged cache entry is rebuilt, not loaded or fatal. */
static void test_damaged_entry(void) {
  const char *base = rk_test_use_temp_cache();
  char dir[4200], path[4300];
  snprintf(dir, sizeof dir, "%s/cpu", base);
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "fresh cache");
  listing_t l = list_cache(dir);
  if (!CHECK(l.entries == 1, "%d entries", l.entries)) return;
  CHECK_OK(rk_context_destroy(ctx)); /* unloads the module */
  snprintf(path, sizeof path, "%s/%s", dir, l.entry);
  FILE *f = fopen(path, "wb");
  if (!CHECK(f != NULL, "cannot rewrite %s", path)) return;
  fputs("this is not a shared object\n", f);
  fclose(f);
  ctx = new_context();
  rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
  compile_expect(ctx, NULL, false, false, 1, "after damage");
  CHECK(strcmp(rk_last_error(), "sentinel message") == 0,
        "a successful compile (damaged entry rebuilt) replaced the last "
        "message with: %s",
        rk_last_error());
  compile_expect(ctx, NULL, false, true, 1, "after rebuild");
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- Damaged entries ---------------------------------------------------- */

/* Compiles the scale kernel into a fresh cache and returns the entry's path
 * (static storage; no context holds the module any more), or NULL. */
static const char *fresh_entry(void) {
  static char path[4300];
  const char *base = rk_test_use_temp_cache();
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/cpu", base);
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "fresh cache");
  CHECK_OK(rk_context_destroy(ctx));
  listing_t l = list_cache(dir);
  if (!CHECK(l.entries == 1, "%d entries in %s", l.entries, dir)) return NULL;
  snprintf(path, sizeof path, "%s/%s", dir, l.entry);
  return path;
}

/* The next compile rebuilds (no hit), runs correctly and leaves the
 * thread's message alone; the one after is a hit on the rebuilt entry. */
static void expect_rebuilt(const char *what) {
  rk_context_t *ctx = new_context();
  rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
  compile_expect(ctx, NULL, false, false, 1, what);
  CHECK(strcmp(rk_last_error(), "sentinel message") == 0,
        "%s: a successful compile replaced the last message with: %s", what,
        rk_last_error());
  compile_expect(ctx, NULL, false, true, 1, what);
  CHECK_OK(rk_context_destroy(ctx));
}

/* A truncated entry (a full disk, a killed writer) is rebuilt: mapping it
 * would fault inside the dynamic loader. */
static void test_truncated_entry(void) {
  const char *path = fresh_entry();
  if (!path) return;
  if (!CHECK(truncate(path, 4096) == 0, "cannot truncate %s", path)) return;
  expect_rebuilt("entry truncated to 4096 bytes");
  if (!CHECK(truncate(path, 0) == 0, "cannot truncate %s", path)) return;
  expect_rebuilt("empty entry");
}

/* The right size with a few bytes changed: only the checksum can tell. The
 * bytes changed are the compiler's identification comment, which the
 * dynamic loader never reads. */
static void test_changed_entry(void) {
  const char *path = fresh_entry();
  if (!path) return;
  FILE *f = fopen(path, "r+b");
  if (!CHECK(f != NULL, "cannot open %s", path)) return;
  static char data[1 << 20];
  size_t n = fread(data, 1, sizeof data, f);
  long at = -1;
  for (size_t i = 0; i + 4 <= n && at < 0; ++i)
    if (memcmp(data + i, "GCC:", 4) == 0 || memcmp(data + i, "clan", 4) == 0)
      at = (long)i + 1;
  if (at < 0) at = (long)n / 2;
  fseek(f, at, SEEK_SET);
  fputc(data[at] ^ 0x20, f);
  fclose(f);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n, "the size changed");
  expect_rebuilt("entry with a changed byte");
}

/* ---- Foreign code ------------------------------------------------------- */

static const uid_t kOtherUid = 65534; /* nobody */

/* A shared object at `path` whose constructor creates `marker`, built with
 * the system compiler; false if it cannot be built. */
static bool build_planted(const char *path, const char *marker) {
  char src[4300], cmd[9000];
  snprintf(src, sizeof src, "%s.c", path);
  FILE *f = fopen(src, "w");
  if (!f) return false;
  fprintf(f,
          "#include <fcntl.h>\n#include <unistd.h>\n"
          "__attribute__((constructor)) static void planted(void) {\n"
          "  int fd = open(\"%s\", O_WRONLY | O_CREAT, 0600);\n"
          "  if (fd >= 0) close(fd);\n}\n",
          marker);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", path, src);
  int rc = system(cmd);
  unlink(src);
  return rc == 0;
}

static size_t read_all(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Writes `data` at path with mode: bare, or (`forged`) as the entry for
 * `key` the way rk writes one (the format documented in base/cache_dir.h:
 * the payload, "rkcache1", its size as 64-bit little-endian and the 128-bit
 * FNV-1a of the key with its NUL and the payload), so that only the trust
 * rules keep it out. */
static bool plant(const char *path, const char *key, const char *data, size_t n,
                  mode_t mode, bool forged) {
  rk__hash_t h;
  rk__hash_init(&h);
  rk__hash_str(&h, key);
  rk__hash_update(&h, data, n);
  unsigned char t[32];
  memcpy(t, "rkcache1", 8);
  for (int i = 0; i < 8; ++i) t[8 + i] = (unsigned char)((uint64_t)n >> 8 * i);
  for (int i = 0; i < 16; ++i) t[16 + i] = (unsigned char)(h.h >> 8 * i);
  unlink(path);
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n &&
            (!forged || fwrite(t, 1, sizeof t, f) == sizeof t);
  /* Both always run, whatever ok says. */
  const bool closed = fclose(f) == 0;
  const bool moded = chmod(path, mode) == 0;
  return closed && ok && moded;
}

/* The scale kernel's entry name ("<hash>.so"; the same in every cache). */
static char g_entry_name[40];

static bool learn_entry_name(void) {
  if (g_entry_name[0]) return true;
  const char *path = fresh_entry();
  if (!path) return false;
  snprintf(g_entry_name, sizeof g_entry_name, "%s", strrchr(path, '/') + 1);
  return true;
}

/* The cache root `base` (with base/cpu) is one that another user could have
 * written. A shared object planted there under the scale kernel's entry
 * name, bare or as a well-formed entry, is never loaded (its constructor
 * would create `marker`); compiles still work, through the private
 * directory, never from the cache and without writing to it. */
static void check_not_loaded(const char *base, const char *planted,
                             const char *marker, uid_t owner,
                             const char *what) {
  char dir[4200], entry[4300], key[33], what2[300];
  static char image[1 << 20];
  size_t n = read_all(planted, image, sizeof image);
  if (!CHECK(n > 0, "cannot read %s", planted)) return;
  snprintf(dir, sizeof dir, "%s/cpu", base);
  snprintf(entry, sizeof entry, "%s/%s", dir, g_entry_name);
  snprintf(key, sizeof key, "%.32s", g_entry_name);
  setenv("RK_CACHE_DIR", base, 1);
  for (int forged = 0; forged < 2; ++forged) {
    snprintf(what2, sizeof what2, "%s, %s", what,
             forged ? "a well-formed entry" : "a bare shared object");
    if (!CHECK(plant(entry, key, image, n, 0644, forged), "%s: cannot plant %s",
               what2, entry))
      return;
    if (owner != geteuid() && chown(entry, owner, owner) != 0) return;
    unlink(marker);
    rk_context_t *ctx = new_context();
    rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
    compile_expect(ctx, NULL, false, false, 1, what2);
    compile_expect(ctx, NULL, false, false, 1, what2);
    CHECK(strcmp(rk_last_error(), "sentinel message") == 0,
          "%s: a successful compile replaced the last message with: %s", what2,
          rk_last_error());
    CHECK(!cpu_path_exists(marker), "%s: the planted object was loaded (%s)",
          what2, marker);
    CHECK(cpu_count_entries(dir) == 1,
          "%s: rk wrote into the cache it should not use (%d files in %s)",
          what2, cpu_count_entries(dir), dir);
    CHECK_OK(rk_context_destroy(ctx));
  }
}

static void test_planted_in_shared_dir(void) {
  if (!learn_entry_name()) return;
  const char *base = rk_test_temp_dir();
  char planted[4200], marker[4200], cache[4200], dir[4300];
  snprintf(planted, sizeof planted, "%s/planted.so", base);
  snprintf(marker, sizeof marker, "%s/planted-ran", base);
  if (!CHECK(build_planted(planted, marker), "cannot build %s", planted))
    return;

  /* A world-writable cache directory (RK_CACHE_DIR pre-created 0777). */
  snprintf(cache, sizeof cache, "%s/shared", base);
  snprintf(dir, sizeof dir, "%s/cpu", cache);
  mkdir(cache, 0700);
  mkdir(dir, 0700);
  chmod(cache, 0777);
  chmod(dir, 0777);
  check_not_loaded(cache, planted, marker, geteuid(), "0777 cache directory");
  /* Only the root level world-writable. */
  chmod(dir, 0700);
  check_not_loaded(cache, planted, marker, geteuid(),
                   "0777 cache root, 0700 cpu directory");

  /* A cache directory another user owns (only root can make one). */
  if (geteuid() == 0) {
    snprintf(cache, sizeof cache, "%s/foreign", base);
    snprintf(dir, sizeof dir, "%s/cpu", cache);
    mkdir(cache, 0755);
    mkdir(dir, 0755);
    CHECK(chown(cache, kOtherUid, kOtherUid) == 0 &&
              chown(dir, kOtherUid, kOtherUid) == 0,
          "chown");
    check_not_loaded(cache, planted, marker, kOtherUid,
                     "cache directory owned by another user");
    /* Ours at the root, another user's below. */
    CHECK(chown(cache, 0, 0) == 0, "chown");
    check_not_loaded(cache, planted, marker, kOtherUid,
                     "cpu directory owned by another user");
  } else {
    printf(
        "note: not running as root; the foreign-owner variants need chown "
        "and were not run (the 0777 ones were)\n");
  }
  restore_tmpdir();
}

/* In a cache directory rk trusts, an entry is used only when it is a
 * regular file owned by this user and not writable by group or others; a
 * refused entry is rebuilt and replaced by one that is. */
static void test_untrusted_entry(void) {
  const char *path = fresh_entry();
  if (!path) return;
  char real[4400];
  struct stat st;

  CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600,
        "entry mode %04o, expected 0600", (unsigned)(st.st_mode & 07777));
  chmod(path, 0666);
  expect_rebuilt("entry writable by others");
  CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600,
        "rebuilt entry mode %04o", (unsigned)(st.st_mode & 07777));

  if (geteuid() == 0) {
    CHECK(chown(path, kOtherUid, kOtherUid) == 0, "chown");
    expect_rebuilt("entry owned by another user");
    CHECK(stat(path, &st) == 0 && st.st_uid == geteuid(),
          "the rebuilt entry belongs to uid %lu", (unsigned long)st.st_uid);
  }

  /* A symbolic link to a good entry is not followed. */
  snprintf(real, sizeof real, "%s.real", path);
  CHECK(rename(path, real) == 0 && symlink(real, path) == 0, "symlink");
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "entry is a symbolic link");
  CHECK_OK(rk_context_destroy(ctx));
  unlink(real);

  /* A well-formed entry carrying foreign code, writable by others. */
  if (!learn_entry_name()) return;
  const char *base = rk_test_temp_dir();
  char planted[4200], marker[4200], key[33];
  static char image[1 << 20];
  snprintf(planted, sizeof planted, "%s/planted.so", base);
  snprintf(marker, sizeof marker, "%s/planted-ran", base);
  snprintf(key, sizeof key, "%.32s", g_entry_name);
  if (!CHECK(build_planted(planted, marker), "cannot build %s", planted))
    return;
  size_t n = read_all(planted, image, sizeof image);
  path = fresh_entry();
  if (!path || !CHECK(plant(path, key, image, n, 0666, true), "plant")) return;
  expect_rebuilt("planted entry writable by others");
  CHECK(!cpu_path_exists(marker), "the planted entry was loaded");
}

/* ---- A cache that cannot be written ----------------------------------- */

extern const char rk__kernel_header_text[];
extern const size_t rk__kernel_header_size;

/* A cache another rk build or user populated: include-<hash>/rk/kernel.h
 * is in the way (a directory, as though another user's). Builds happen in
 * the private directory, so they neither need nor touch it. */
static void test_blocked_include_dir(void) {
  const char *base = rk_test_use_temp_cache();
  rk__hash_t h;
  char hex[33], path[4300];
  rk__hash_init(&h);
  rk__hash_update(&h, rk__kernel_header_text, rk__kernel_header_size);
  rk__hash_hex(&h, hex);
  const char *const parts[] = {"cpu", "include-", "rk", "kernel.h", "x"};
  size_t len = (size_t)snprintf(path, sizeof path, "%s", base);
  for (int i = 0; i < 5; ++i) {
    len += (size_t)snprintf(path + len, sizeof path - len, "/%s%.16s", parts[i],
                            i == 1 ? hex : "");
    mkdir(path, 0700);
  }
  rk_context_t *ctx = new_context();
  rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
  compile_expect(ctx, NULL, false, false, 1, "include path blocked");
  compile_expect(ctx, NULL, false, true, 1, "include path blocked, again");
  CHECK(strcmp(rk_last_error(), "sentinel message") == 0, "message: %s",
        rk_last_error());
  CHECK_OK(rk_context_destroy(ctx));
}

/* A small tmpfs at dir; false (with the reason printed) when this process
 * may not mount one. */
static bool mount_small_tmpfs(const char *dir, const char *what) {
#if RK__LINUX
  mkdir(dir, 0700);
  if (mount("rk-test", dir, "tmpfs", MS_NOSUID | MS_NODEV,
            "size=96k,mode=0700") == 0)
    return true;
  printf("note: %s: not run: cannot mount a tmpfs at %s: %s\n", what, dir,
         strerror(errno));
#else
  printf("note: %s: not run: mounting a tmpfs at %s is Linux's\n", what, dir);
#endif
  return false;
}

static int remount_read_only(const char *dir) {
#if RK__LINUX
  return mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
               NULL);
#else
  (void)dir;
  errno = ENOSYS;
  return -1;
#endif
}

static void unmount(const char *dir) {
#if RK__LINUX
  umount2(dir, MNT_DETACH);
#else
  (void)dir;
#endif
}

/* A cache on a full file system: builds still work (in the private
 * directory) and leave nothing behind there; once there is room, entries
 * are written again. */
static void test_full_disk(void) {
  const char *base = rk_test_temp_dir();
  char mnt[4200], cache[4300], dir[4400], fill[4300];
  snprintf(mnt, sizeof mnt, "%s/mnt", base);
  if (!mount_small_tmpfs(mnt, "full disk")) return;
  snprintf(cache, sizeof cache, "%s/cache", mnt);
  snprintf(dir, sizeof dir, "%s/cpu", cache);
  snprintf(fill, sizeof fill, "%s/fill", mnt);
  mkdir(cache, 0700);
  mkdir(dir, 0700);
  FILE *f = fopen(fill, "wb");
  static char block[4096];
  while (f && fwrite(block, 1, sizeof block, f) == sizeof block) {
  }
  if (f) fclose(f);
  setenv("RK_CACHE_DIR", cache, 1);

  rk_context_t *ctx = new_context();
  rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
  compile_expect(ctx, NULL, false, false, 1, "full disk");
  compile_expect(ctx, NULL, false, false, 1, "full disk, again");
  CHECK(strcmp(rk_last_error(), "sentinel message") == 0, "message: %s",
        rk_last_error());
  CHECK(cpu_count_entries(dir) == 0, "%d files left in the full cache %s",
        cpu_count_entries(dir), dir);
  unlink(fill);
  compile_expect(ctx, NULL, false, false, 1, "room again");
  compile_expect(ctx, NULL, false, true, 1, "room again, a hit");
  CHECK_OK(rk_context_destroy(ctx));
  unmount(mnt);
  rk_test_use_temp_cache();
}

/* A read-only file system: the entries there still serve hits, and other
 * sources build in the private directory. */
static void test_read_only_fs(void) {
  const char *base = rk_test_temp_dir();
  char mnt[4200], cache[4300];
  snprintf(mnt, sizeof mnt, "%s/mnt", base);
  if (!mount_small_tmpfs(mnt, "read-only file system")) return;
  snprintf(cache, sizeof cache, "%s/cache", mnt);
  setenv("RK_CACHE_DIR", cache, 1);
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "before read-only");
  if (remount_read_only(mnt) != 0) {
    printf("note: read-only file system: not run: remount: %s\n",
           strerror(errno));
  } else {
    const char *d2[] = {"SCALE=2", NULL};
    rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
    compile_expect(ctx, NULL, false, true, 1, "read-only, cached");
    compile_expect(ctx, d2, false, false, 2, "read-only, not cached");
    compile_expect(ctx, d2, false, false, 2, "read-only, not cached again");
    CHECK(strcmp(rk_last_error(), "sentinel message") == 0, "message: %s",
          rk_last_error());
  }
  CHECK_OK(rk_context_destroy(ctx));
  unmount(mnt);
  rk_test_use_temp_cache();
}

/* ---- An unusable cache directory --------------------------------------- */

/* With the cache directory impossible to create, compiles still work through
 * a private temporary directory under $TMPDIR that never hits and is removed
 * with the context. */
static void check_fallback(const char *cache_dir, const char *tmpdir,
                           const char *what) {
  setenv("RK_CACHE_DIR", cache_dir, 1);
  setenv("TMPDIR", tmpdir, 1);
  rk_context_t *ctx = new_context();
  /* The fallback is silent: the compile succeeds, so the thread's last
   * message stays what it was. */
  rk__fail(RK_ERR_INTERNAL, "%s", "sentinel message");
  compile_expect(ctx, NULL, false, false, 1, what);
  CHECK(strcmp(rk_last_error(), "sentinel message") == 0,
        "%s: a successful compile replaced the last message with: %s", what,
        rk_last_error());
  compile_expect(ctx, NULL, false, false, 1, what); /* never a hit */
  CHECK(cpu_count_entries(tmpdir) == 1,
        "%s: %d entries in TMPDIR while the context lives, expected its one "
        "directory",
        what, cpu_count_entries(tmpdir));
  CHECK_OK(rk_context_destroy(ctx));
  CHECK(cpu_count_entries(tmpdir) == 0,
        "%s: the temporary cache was left behind in %s", what, tmpdir);
  restore_tmpdir();
}

static void test_unwritable_cache_dir(void) {
  const char *base = rk_test_temp_dir();
  char file[4200], cache[4300], tmpdir[4200];
  /* Under a regular file: no one can create it, not even root. */
  snprintf(file, sizeof file, "%s/afile", base);
  FILE *f = fopen(file, "w");
  if (!CHECK(f != NULL, "cannot create %s", file)) return;
  fputs("x", f);
  fclose(f);
  snprintf(cache, sizeof cache, "%s/cache", file);
  snprintf(tmpdir, sizeof tmpdir, "%s/tmp", base);
  mkdir(tmpdir, 0700);
  check_fallback(cache, tmpdir, "cache under a file");

  /* No cache and no private directory either: the error says both. */
  char missing[4300];
  snprintf(missing, sizeof missing, "%s/no/such/tmp", base);
  setenv("TMPDIR", missing, 1);
  rk_context_t *ctx = new_context();
  rk_module_t *mod = NULL;
  CHECK_STATUS(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("TMPDIR");
  CHECK_ERROR_HAS("the kernel cache is not used");
  CHECK_OK(rk_context_destroy(ctx));
  restore_tmpdir();

  /* A read-only directory: only meaningful when permissions apply. */
  if (geteuid() != 0) {
    char ro[4200];
    snprintf(ro, sizeof ro, "%s/readonly", base);
    mkdir(ro, 0700);
    snprintf(cache, sizeof cache, "%s/sub", ro);
    chmod(ro, 0500);
    check_fallback(cache, tmpdir, "cache in a read-only directory");
    chmod(ro, 0700);
  } else {
    printf(
        "note: running as root; the read-only directory variant is not "
        "meaningful and was not run (the file variant was)\n");
  }
}

/* No HOME, no XDG_CACHE_HOME, no RK_CACHE_DIR: still compiles and runs. */
static void test_no_home(void) {
  const char *base = rk_test_temp_dir();
  char tmpdir[4200];
  snprintf(tmpdir, sizeof tmpdir, "%s/tmp", base);
  mkdir(tmpdir, 0700);
  char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  unsetenv("RK_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  setenv("TMPDIR", tmpdir, 1);
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "no HOME");
  CHECK_OK(rk_context_destroy(ctx));
  CHECK(cpu_count_entries(tmpdir) == 0, "temporary cache left in %s", tmpdir);
  restore_tmpdir();
  if (home) {
    setenv("HOME", home, 1);
    free(home);
  }
}

/* ---- Default locations -------------------------------------------------- */

static void test_default_locations(void) {
  const char *base = rk_test_temp_dir();
  char xdg[4200], home[4200], rk[4200], dir[4300];
  snprintf(xdg, sizeof xdg, "%s/xdg", base);
  snprintf(home, sizeof home, "%s/home", base);
  snprintf(rk, sizeof rk, "%s/rk", base);
  char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

  /* XDG_CACHE_HOME/rk when RK_CACHE_DIR is unset. */
  unsetenv("RK_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  setenv("HOME", home, 1);
  rk_context_t *ctx = new_context();
  compile_expect(ctx, NULL, false, false, 1, "XDG first");
  compile_expect(ctx, NULL, false, true, 1, "XDG second");
  snprintf(dir, sizeof dir, "%s/rk/cpu", xdg);
  CHECK(list_cache(dir).entries == 1, "no entry in %s", dir);
  CHECK(!cpu_path_exists(home), "HOME was used although XDG_CACHE_HOME is set");

  /* ~/.cache/rk without XDG_CACHE_HOME. */
  unsetenv("XDG_CACHE_HOME");
  compile_expect(ctx, NULL, false, false, 1, "HOME first");
  snprintf(dir, sizeof dir, "%s/.cache/rk/cpu", home);
  CHECK(list_cache(dir).entries == 1, "no entry in %s", dir);

  /* RK_CACHE_DIR wins over both. */
  setenv("RK_CACHE_DIR", rk, 1);
  setenv("XDG_CACHE_HOME", xdg, 1);
  compile_expect(ctx, NULL, false, false, 1, "RK_CACHE_DIR first");
  snprintf(dir, sizeof dir, "%s/cpu", rk);
  CHECK(list_cache(dir).entries == 1, "no entry in %s", dir);
  snprintf(dir, sizeof dir, "%s/rk/cpu", xdg);
  CHECK(list_cache(dir).entries == 1,
        "XDG cache changed although RK_CACHE_DIR is set");
  CHECK_OK(rk_context_destroy(ctx));

  unsetenv("XDG_CACHE_HOME");
  if (saved_home) {
    setenv("HOME", saved_home, 1);
    free(saved_home);
  }
  rk_test_use_temp_cache();
}

/* ---- The compiler ------------------------------------------------------- */

static void test_missing_compiler(void) {
  rk_test_use_temp_cache();
  rk_context_t *ctx = new_context();
  rk_module_t *mod = NULL;
  setenv("RK_CC", "/nonexistent/rk-test-cc", 1);
  CHECK_STATUS(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("/nonexistent/rk-test-cc");
  CHECK_ERROR_HAS("RK_CC");
  CHECK(mod == NULL, "module set");
  /* A compiler that exists but fails. */
  setenv("RK_CC", "false", 1);
  CHECK_STATUS(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, false, &mod),
               RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("false");
  unsetenv("RK_CC");
  /* And back to normal. */
  compile_expect(ctx, NULL, false, false, 1, "after RK_CC is unset");
  CHECK_OK(rk_context_destroy(ctx));
}

/* ---- The loaded module's name ------------------------------------------ */

#if RK__LINUX
typedef struct proc_names {
  int n;
  char name[8][64];
} proc_names_t;

static int collect_proc_name(struct dl_phdr_info *info, size_t size,
                             void *arg) {
  (void)size;
  proc_names_t *p = arg;
  if (info->dlpi_name && strncmp(info->dlpi_name, "/proc/", 6) == 0 && p->n < 8)
    snprintf(p->name[p->n++], sizeof p->name[0], "%s", info->dlpi_name);
  return 0;
}
#endif

/* A module loaded from a memory file is listed under a name that opens the
 * same file from another process, as a debugger or profiler does when it
 * reads the list (a /proc/self name made gdb open a pipe of its own and
 * hang). The other process here is a child with no files of its own past
 * stdio. */
static void test_loaded_name(void) {
#if RK__LINUX
  rk_test_use_temp_cache();
  rk_context_t *ctx = new_context();
  rk_module_t *mod = compile_expect(ctx, NULL, true, false, 1, "fresh");
  proc_names_t names = {0, {{0}}};
  dl_iterate_phdr(collect_proc_name, &names);
  if (names.n == 0) {
    printf("  skipped: no module loaded from a memory file here\n");
  }
  for (int i = 0; i < names.n; ++i) {
    struct stat here;
    if (!CHECK(stat(names.name[i], &here) == 0, "%s: %s", names.name[i],
               strerror(errno)))
      continue;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      for (int fd = 3; fd < 1024; ++fd) close(fd);
      struct stat there;
      _exit(stat(names.name[i], &there) == 0 && there.st_ino == here.st_ino &&
                    there.st_dev == here.st_dev
                ? 0
                : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child &&
              WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the module listed as %s is not that file in another process",
          names.name[i]);
  }
  if (mod) CHECK_OK(rk_module_destroy(mod));
  CHECK_OK(rk_context_destroy(ctx));
#endif
}

/* Private directories of processes gone (killed: nothing of theirs
 * could remove them) are swept by the next process's first one: this
 * user's rk-cache-<pid>-XXXXXX directories whose pid is not running. One
 * of a running process, one in the older form (no pid) and a link are
 * left alone. The sweep is once per process: the case runs in a process
 * of its own (itself, by name). */
static const char *g_argv0;
static bool g_alone;

#if RK__LINUX
static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static void make_dir_with_file(const char *dir) {
  mkdir(dir, 0700);
  char file[4300];
  snprintf(file, sizeof file, "%s/kept", dir);
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
}
#endif

static void test_stale_private_dirs(void) {
#if RK__LINUX
  if (!g_alone) {
    pid_t child = fork();
    if (child == 0) {
      execl(g_argv0, g_argv0, "stale_private_dirs", (char *)NULL);
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "stale_private_dirs in a process of its own failed (status %d)",
          status);
    return;
  }
  const char *base = rk_test_temp_dir();
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, NULL, 0);
  char dead[4200], alive[4200], old[4200], link[4200], target[4200];
  snprintf(dead, sizeof dead, "%s/rk-cache-%ld-AbCdEf", base, (long)gone);
  snprintf(alive, sizeof alive, "%s/rk-cache-1-AbCdEf", base);
  snprintf(old, sizeof old, "%s/rk-cache-AbCdEf", base);
  snprintf(target, sizeof target, "%s/target", base);
  snprintf(link, sizeof link, "%s/rk-cache-%ld-GhIjKl", base, (long)gone);
  make_dir_with_file(dead);
  make_dir_with_file(alive);
  make_dir_with_file(old);
  make_dir_with_file(target);
  CHECK(symlink(target, link) == 0, "symlink");
  setenv("TMPDIR", base, 1);
  rk_context_t *ctx = new_context();
  rk_module_t *mod = NULL;
  /* Not cached: built in the context's private directory. */
  if (CHECK_OK(cpu_compile(ctx, kCpuScaleSource, "scale.c", NULL, true, &mod)))
    rk_module_destroy(mod);
  CHECK_OK(rk_context_destroy(ctx));
  restore_tmpdir();
  CHECK(!exists(dead), "%s (of pid %ld, gone) is still there", dead,
        (long)gone);
  CHECK(exists(alive), "%s (of pid 1) was removed", alive);
  CHECK(exists(old), "%s (no pid in its name) was removed", old);
  CHECK(exists(link) && exists(target), "a link or what it names was removed");
  /* The context's own directory went with it. */
  char mine[64];
  int n = snprintf(mine, sizeof mine, "rk-cache-%ld-", (long)getpid());
  DIR *d = opendir(base);
  int left = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;)
    left += strncmp(e->d_name, mine, (size_t)n) == 0;
  if (d) closedir(d);
  CHECK(left == 0, "%d private directories of this process left", left);
#else
  printf("note: stale_private_dirs runs on Linux only\n");
#endif
}

static const struct {
  const char *name;
  void (*run)(void);
} kCases[] = {
    {"hits_and_misses", test_hits_and_misses},
    {"damaged_entry", test_damaged_entry},
    {"truncated_entry", test_truncated_entry},
    {"changed_entry", test_changed_entry},
    {"planted_in_shared_dir", test_planted_in_shared_dir},
    {"untrusted_entry", test_untrusted_entry},
    {"blocked_include_dir", test_blocked_include_dir},
    {"full_disk", test_full_disk},
    {"read_only_fs", test_read_only_fs},
    {"unwritable_cache_dir", test_unwritable_cache_dir},
    {"no_home", test_no_home},
    {"default_locations", test_default_locations},
    {"missing_compiler", test_missing_compiler},
    {"loaded_name", test_loaded_name},
    {"stale_private_dirs", test_stale_private_dirs},
};

int main(int argc, char **argv) {
  unsetenv("RK_CC");
  g_argv0 = argv[0];
  g_alone = argc > 1;
  if (getenv("TMPDIR")) g_tmpdir = strdup(getenv("TMPDIR"));
  g_be = cpu_open();
  bool ran = false;
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], kCases[i].name) != 0) continue;
    printf("-- %s\n", kCases[i].name);
    fflush(stdout);
    kCases[i].run();
    ran = true;
  }
  CHECK(ran, "no case named %s", argc > 1 ? argv[1] : "");
  CHECK_OK(rk_backend_destroy(g_be));
  return rk_test_finish("cpu_cache");
}
