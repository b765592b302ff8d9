/* cmd_cache.c - `rk cache [info|list|clear] [--json]`: where rk's on-disk
 * cache is, what it holds and how large it is, and clearing it.
 *
 *   rk cache                 # where, and the size of each part
 *   rk cache list --json     # every entry
 *   rk cache clear cpu       # compiled CPU kernels only
 *
 * The cache root is the library's (src/base/cache_dir.h: $RK_CACHE_DIR,
 * else $XDG_CACHE_HOME/rk, else ~/.cache/rk). rk keeps its entries in one
 * directory per part (kParts). The walk never follows a symbolic link, and
 * clear removes only what lies inside a part's directory, and only when the
 * directory passes the library's trust rule (owned by this user, not
 * writable by others): RK_CACHE_DIR pointing at a home directory does not
 * put the home directory's other files at risk.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "rk/rk.h"
#include "tool.h"

/* The parts of the cache, each a directory under the root. */
static const struct {
  const char *name;
  const char *what;
} kParts[] = {
    {"cpu", "compiled CPU kernels and the kernel header they include"},
    {"cuda", "CUDA kernels built by NVRTC"},
    {"cost", "cost model profiles written by rk calibrate"},
};
enum { kPartCount = sizeof kParts / sizeof kParts[0], kMaxDepth = 8 };

static void help(FILE *out) {
  fputs(
      "Usage: rk cache [info] [--json]\n"
      "       rk cache list [--json]\n"
      "       rk cache clear [PART...]\n"
      "\n"
      "rk keeps what is slow to make on disk: compiled kernels, so a\n"
      "program's second run does not compile again, and the cost model's\n"
      "profile. This command shows where that cache is and what it holds,\n"
      "and clears it.\n"
      "\n"
      "Subcommands:\n"
      "  info    (the default) the cache directory, why it is that one, and\n"
      "          the size of each part\n"
      "  list    every entry: part, path under the cache, size, time\n"
      "  clear   removes the entries of the PARTs named (default: all of\n"
      "          them). Only what lies inside a part's directory is\n"
      "          removed, and only when this user owns the directory\n"
      "\n"
      "Parts:\n"
      "  cpu     compiled CPU kernels and the kernel header they include\n"
      "  cuda    CUDA kernels built by NVRTC\n"
      "  cost    cost model profiles written by rk calibrate (clearing\n"
      "          them means calibrating again)\n"
      "\n"
      "Options:\n"
      "  --json  one JSON object instead of text (info and list)\n"
      "\n"
      "Where: $RK_CACHE_DIR, else $XDG_CACHE_HOME/rk, else ~/.cache/rk.\n"
      "Nothing needs clearing for correctness: rk checks every entry before\n"
      "using it and rebuilds what is damaged.\n"
      "\n"
      "Example:\n"
      "  rk cache\n"
      "  rk cache clear cpu\n"
      "\n"
      "Exit status: 0 success, 1 failure, 2 usage error.\n",
      out);
}

/* ---- Walking ------------------------------------------------------------ */

typedef struct entry {
  char path[4096]; /* under the root: "cpu/ab12.so" */
  long long size;
  time_t mtime;
} entry_t;

typedef struct tally {
  long long bytes;
  long files;
} tally_t;

/* Calls fn for every regular file under dir (symbolic links are neither
 * followed nor counted), `rel` being dir's path under the root. */
static void walk(const char *dir, const char *rel, int depth,
                 void (*fn)(void *user, const entry_t *e), void *user) {
  if (depth > kMaxDepth) return;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char path[4096];
    entry_t e;
    if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >=
            (int)sizeof path ||
        snprintf(e.path, sizeof e.path, "%s/%s", rel, de->d_name) >=
            (int)sizeof e.path)
      continue;
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(path, e.path, depth + 1, fn, user);
    } else if (S_ISREG(st.st_mode)) {
      e.size = (long long)st.st_size;
      e.mtime = st.st_mtime;
      fn(user, &e);
    }
  }
  closedir(d);
}

static void count(void *user, const entry_t *e) {
  tally_t *t = user;
  t->bytes += e->size;
  t->files += 1;
}

static void size_text(char *out, size_t cap, long long bytes) {
  if (bytes < 1024)
    snprintf(out, cap, "%lld bytes", bytes);
  else if (bytes < 1024 * 1024)
    snprintf(out, cap, "%.1f KiB", (double)bytes / 1024.0);
  else if (bytes < 1024LL * 1024 * 1024)
    snprintf(out, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024));
  else
    snprintf(out, cap, "%.2f GiB", (double)bytes / (1024.0 * 1024 * 1024));
}

/* Where the root comes from. */
static const char *root_source(void) {
  const char *env = getenv("RK_CACHE_DIR");
  if (env && *env) return "RK_CACHE_DIR";
  env = getenv("XDG_CACHE_HOME");
  if (env && *env) return "XDG_CACHE_HOME";
  return "HOME";
}

/* The root into out; prints why not and returns false when there is none. */
static bool find_root(char *out, size_t cap) {
  if (rk__cache_root(out, cap) == RK_OK) return true;
  fprintf(stderr, "rk cache: %s\n", rk_last_error());
  return false;
}

/* ---- info --------------------------------------------------------------- */

static int run_info(bool json) {
  char root[4096];
  if (!find_root(root, sizeof root)) return TOOL_EXIT_FAILURE;
  rk_status_t trusted = rk__cache_check(root, true);
  bool exists = trusted != RK_ERR_NOT_FOUND;
  char trust[1024] = "";
  if (exists && trusted != RK_OK)
    snprintf(trust, sizeof trust, "%s", rk_last_error());
  tally_t parts[kPartCount], all = {0, 0};
  for (int i = 0; i < kPartCount; ++i) {
    char dir[4200];
    parts[i] = (tally_t){0, 0};
    snprintf(dir, sizeof dir, "%s/%s", root, kParts[i].name);
    walk(dir, kParts[i].name, 0, count, &parts[i]);
    all.bytes += parts[i].bytes;
    all.files += parts[i].files;
  }
  if (json) {
    printf("{\"path\":");
    tool_json_string(stdout, root);
    printf(",\"from\":\"%s\",\"exists\":%s,\"refused\":", root_source(),
           exists ? "true" : "false");
    tool_json_string(stdout, trust[0] ? trust : NULL);
    printf(",\"bytes\":%lld,\"files\":%ld,\"parts\":[", all.bytes, all.files);
    for (int i = 0; i < kPartCount; ++i)
      printf("%s{\"name\":\"%s\",\"bytes\":%lld,\"files\":%ld}", i ? "," : "",
             kParts[i].name, parts[i].bytes, parts[i].files);
    printf("]}\n");
    return TOOL_EXIT_OK;
  }
  printf("cache     %s (from %s)%s\n", root, root_source(),
         exists ? "" : ", does not exist yet");
  if (trust[0]) printf("          refused: %s\n", trust);
  char size[64];
  size_text(size, sizeof size, all.bytes);
  printf("size      %s in %ld file%s\n", size, all.files,
         all.files == 1 ? "" : "s");
  for (int i = 0; i < kPartCount; ++i) {
    size_text(size, sizeof size, parts[i].bytes);
    printf("  %-6s  %10s, %ld file%s: %s\n", kParts[i].name, size,
           parts[i].files, parts[i].files == 1 ? "" : "s", kParts[i].what);
  }
  return TOOL_EXIT_OK;
}

/* ---- list --------------------------------------------------------------- */

typedef struct lister {
  bool json;
  long n;
} lister_t;

static void print_entry(void *user, const entry_t *e) {
  lister_t *l = user;
  char when[32] = "";
  struct tm tm;
  if (localtime_r(&e->mtime, &tm))
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
  if (l->json) {
    printf("%s{\"path\":", l->n ? "," : "");
    tool_json_string(stdout, e->path);
    printf(",\"bytes\":%lld,\"mtime\":%lld}", e->size, (long long)e->mtime);
  } else {
    char size[64];
    size_text(size, sizeof size, e->size);
    printf("%-48s %12s  %s\n", e->path, size, when);
  }
  l->n += 1;
}

static int run_list(bool json) {
  char root[4096];
  if (!find_root(root, sizeof root)) return TOOL_EXIT_FAILURE;
  lister_t l = {json, 0};
  if (json) {
    printf("{\"path\":");
    tool_json_string(stdout, root);
    printf(",\"entries\":[");
  }
  for (int i = 0; i < kPartCount; ++i) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, kParts[i].name);
    walk(dir, kParts[i].name, 0, print_entry, &l);
  }
  if (json)
    printf("]}\n");
  else if (l.n == 0)
    printf("%s holds no entries\n", root);
  return TOOL_EXIT_OK;
}

/* ---- clear -------------------------------------------------------------- */

/* Removes everything inside dir, depth first, never following a link (a
 * link is removed, not what it points to). Counts files and bytes removed;
 * returns false after printing the first failure. */
static bool remove_inside(const char *dir, int depth, tally_t *removed) {
  if (depth > kMaxDepth) {
    fprintf(stderr, "rk cache: '%s' is nested too deeply; left as it is\n",
            dir);
    return false;
  }
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return true;
    fprintf(stderr, "rk cache: cannot read '%s': %s\n", dir, strerror(errno));
    return false;
  }
  bool ok = true;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >=
        (int)sizeof path)
      continue;
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (!remove_inside(path, depth + 1, removed)) ok = false;
      if (ok && rmdir(path) != 0) {
        fprintf(stderr, "rk cache: cannot remove '%s': %s\n", path,
                strerror(errno));
        ok = false;
      }
    } else if (unlink(path) == 0) {
      if (S_ISREG(st.st_mode)) {
        removed->files += 1;
        removed->bytes += (long long)st.st_size;
      }
    } else {
      fprintf(stderr, "rk cache: cannot remove '%s': %s\n", path,
              strerror(errno));
      ok = false;
    }
    if (!ok) break;
  }
  closedir(d);
  return ok;
}

static int run_clear(int argc, char **argv) {
  bool chosen[kPartCount] = {false};
  bool any = false;
  for (int i = 0; i < argc; ++i) {
    int p = -1;
    for (int k = 0; k < kPartCount; ++k)
      if (strcmp(argv[i], kParts[k].name) == 0) p = k;
    if (p < 0)
      return tool_usage_error("cache",
                              "clear: unknown part '%s' (known: cpu, cuda, "
                              "cost)",
                              argv[i]);
    chosen[p] = any = true;
  }
  char root[4096];
  if (!find_root(root, sizeof root)) return TOOL_EXIT_FAILURE;
  int rc = TOOL_EXIT_OK;
  for (int i = 0; i < kPartCount; ++i) {
    if (any && !chosen[i]) continue;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, kParts[i].name);
    rk_status_t s = rk__cache_check(dir, true);
    if (s == RK_ERR_NOT_FOUND) {
      printf("%-5s nothing to clear\n", kParts[i].name);
      continue;
    }
    if (s != RK_OK) {
      fprintf(stderr, "rk cache: not clearing %s: %s\n", kParts[i].name,
              rk_last_error());
      rc = TOOL_EXIT_FAILURE;
      continue;
    }
    tally_t removed = {0, 0};
    if (!remove_inside(dir, 0, &removed)) rc = TOOL_EXIT_FAILURE;
    char size[64];
    size_text(size, sizeof size, removed.bytes);
    printf("%-5s removed %ld file%s, %s\n", kParts[i].name, removed.files,
           removed.files == 1 ? "" : "s", size);
  }
  return rc;
}

/* ---- Command ------------------------------------------------------------ */

static int run(int argc, char **argv) {
  const char *sub = "info";
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    sub = argv[1];
    first = 2;
  }
  bool json = false;
  int nargs = 0;
  char **args = argv + first;
  for (int i = first; i < argc; ++i) {
    if (tool_is_help(argv[i])) {
      help(stdout);
      return TOOL_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (argv[i][0] == '-') {
      return tool_usage_error("cache", "unknown option '%s'", argv[i]);
    } else {
      args[nargs++] = argv[i];
    }
  }
  if (strcmp(sub, "clear") == 0) {
    if (json) return tool_usage_error("cache", "--json is for info and list");
    return run_clear(nargs, args);
  }
  if (nargs > 0)
    return tool_usage_error("cache", "unexpected argument '%s'", args[0]);
  if (strcmp(sub, "info") == 0) return run_info(json);
  if (strcmp(sub, "list") == 0) return run_list(json);
  return tool_usage_error("cache",
                          "unknown subcommand '%s' (info, list or clear)", sub);
}

const tool_command_t tool_cmd_cache = {
    "cache", "show where rk's cache is, what it holds, and clear it", run,
    help};
