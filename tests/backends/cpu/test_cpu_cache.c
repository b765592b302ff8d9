/* CPU backend: the on-disk kernel cache - hits and misses, no_cache, a
 * damaged entry, an unusable cache directory (private temporary fallback),
 * the default locations (RK_CACHE_DIR, XDG_CACHE_HOME, HOME) and a missing
 * compiler. */
#define RK_TEST_IMPLEMENTATION
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
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
  CHECK(l.entries == 1 && l.includes == 1 && l.other == 0,
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

int main(void) {
  unsetenv("RK_CC");
  if (getenv("TMPDIR")) g_tmpdir = strdup(getenv("TMPDIR"));
  g_be = cpu_open();
  test_hits_and_misses();
  test_damaged_entry();
  test_unwritable_cache_dir();
  test_no_home();
  test_default_locations();
  test_missing_compiler();
  CHECK_OK(rk_backend_destroy(g_be));
  return rk_test_finish("cpu_cache");
}
