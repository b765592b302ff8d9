/* replay.c - runs fuzz_transpile.c's LLVMFuzzerTestOneInput over files, as a
 * plain program of the regular build (no libFuzzer, any compiler).
 *
 *   fuzz_replay DIR...     every regular file of each DIR, sorted; files
 *                          named README* or starting with '.' are skipped
 *   fuzz_replay            the directories built in (RK_FUZZ_DIRS: the
 *                          source tree's tests/fuzz/regressions and corpus)
 *
 * A crash, a sanitizer report or a broken contract ends the run; otherwise
 * it prints how many inputs ran from each directory and exits 0, also when
 * there were none (an empty regressions/ is the normal state).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the whole file; NULL on failure (with a message). */
static uint8_t *read_file(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return NULL;
  }
  uint8_t *data = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *bigger = realloc(data, cap);
      if (bigger == NULL) {
        free(data);
        fclose(f);
        return NULL;
      }
      data = bigger;
    }
    size_t n = fread(data + size, 1, cap - size, f);
    size += n;
    if (n == 0) break;
  }
  fclose(f);
  *out_size = size;
  return data;
}

/* Replays every input of dir; returns how many, or -1 on an I/O error. */
static long replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **bigger = realloc(names, cap * sizeof *names);
      if (bigger == NULL) break;
      names = bigger;
    }
    names[count] = strdup(e->d_name);
    if (names[count] != NULL) count++;
  }
  closedir(d);
  if (count > 0) qsort(names, count, sizeof *names, cmp_names);
  long ran = 0;
  for (size_t i = 0; i < count; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    free(names[i]);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    size_t size = 0;
    uint8_t *data = read_file(path, &size);
    if (data == NULL) {
      ran = -1;
      continue;
    }
    /* Printed first, so a crash is attributed to its input. */
    printf("  %s (%zu bytes)\n", path, size);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    if (ran >= 0) ran++;
  }
  free(names);
  return ran;
}

int main(int argc, char **argv) {
#ifdef RK_FUZZ_DIRS
  static const char *const kDefaultDirs[] = {RK_FUZZ_DIRS};
#else
  static const char *const kDefaultDirs[] = {NULL};
#endif
  const char *const *dirs = (const char *const *)argv + 1;
  int ndirs = argc - 1;
  if (ndirs == 0) {
    dirs = kDefaultDirs;
    ndirs = (int)(sizeof kDefaultDirs / sizeof kDefaultDirs[0]);
  }
  if (ndirs == 0 || dirs[0] == NULL) {
    fprintf(stderr, "usage: %s DIR...\n", argv[0]);
    return 2;
  }
  int rc = 0;
  long total = 0;
  for (int i = 0; i < ndirs; i++) {
    long ran = replay_dir(dirs[i]);
    if (ran < 0) {
      rc = 1;
      continue;
    }
    printf("replayed %ld input(s) from %s\n", ran, dirs[i]);
    total += ran;
  }
  printf("replayed %ld input(s) in all, no crash%s\n", total,
         rc ? "; some could not be read (above)" : "");
  return rc;
}
