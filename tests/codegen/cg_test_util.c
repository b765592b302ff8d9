#include "cg_test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk_test.h"

static int cmp_names(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

bool cg_corpus_load(cg_corpus_t *out) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(CG_TEST_DIR "/kernels");
  if (!CHECK(d != NULL, "cannot open %s/kernels", CG_TEST_DIR)) return false;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0) continue;
    if (!CHECK(out->count < CG_MAX_KERNELS && n - 2 < 64, "corpus too big"))
      break;
    memcpy(out->names[out->count], e->d_name, n - 2);
    out->names[out->count][n - 2] = '\0';
    out->count++;
  }
  closedir(d);
  qsort(out->names, (size_t)out->count, sizeof out->names[0], cmp_names);
  return true;
}

char *cg_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

bool cg_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

char *cg_read_kernel(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels/%s.c", CG_TEST_DIR, name);
  return cg_read_file(path);
}

rk_status_t cg_transpile(const char *source, const char *name,
                         rk_target_t target, char **out_text) {
  char source_name[128];
  snprintf(source_name, sizeof source_name, "%s.c", name);
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = source_name;
  return rk_transpile(source, target, &o, out_text);
}

const char *cg_target_ext(rk_target_t target) {
  switch (target) {
    case RK_TARGET_C:
      return "c";
    case RK_TARGET_CUDA:
      return "cu";
    case RK_TARGET_OPENCL:
      return "cl";
    case RK_TARGET_WGSL:
      return "wgsl";
    case RK_TARGET_MSL:
      return "metal";
    default:
      return "?";
  }
}
