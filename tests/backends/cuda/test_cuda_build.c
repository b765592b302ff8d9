/* cuda_build: the CUDA backend's module build without a GPU. Kernel-language
 * source goes through the transpiler (with the persistent actor kernels) and
 * NVRTC for a given compute capability, through the disk cache: the image
 * defines every kernel and rk_actor_<handler>, a second build is a cache
 * hit, no_cache builds again, an architecture NVRTC does not know gets PTX
 * for the newest one below it, too old a device is refused, source errors
 * point at the user's line (defines included), NVRTC errors carry the log
 * and the generated line, and the cache hands out only entries it can vouch
 * for (changed, truncated, writable by others or in a directory writable by
 * others: built again). Skips (77) without NVRTC.
 */
#define RK_TEST_IMPLEMENTATION
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cuda/cuda.h"
#include "rk_test.h"

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "typedef struct { int count; } state_t;\n"
    "RK_KERNEL void scale(int n, float a, float *x) {\n"
    "  int i = rk_global_idx_x();\n"
    "  if (i < n) x[i] = a * x[i] * SCALE;\n"
    "}\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n"
    "RK_HANDLER int counted(const req_t *in, resp_t *out, state_t *s) {\n"
    "  s->count++;\n"
    "  out->v = s->count;\n"
    "  return in->v < 0 ? 7 : 0;\n"
    "}\n";

static const char *const kDefines[] = {"SCALE=2.0f", NULL};

/* Whether `image` names kernel `name` (a CUBIN holds the names as strings,
 * PTX as ".entry name"). */
static bool has_symbol(const rk__cu_image_t *img, const char *name) {
  size_t n = strlen(name);
  const char *p = img->data;
  for (size_t i = 0; i + n <= img->size; ++i)
    if (memcmp(p + i, name, n) == 0 &&
        (i + n == img->size || p[i + n] == '\0' || p[i + n] == '(' ||
         p[i + n] == ' ' || p[i + n] == '\n'))
      return true;
  return false;
}

static void test_build(void) {
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "k.c";
  o.defines = kDefines;
  rk__cu_image_t img;
  rk_entry_list_t *list = NULL;
  char *text = NULL;
  rk_status_t s = rk__cu_build(kSource, &o, 9, 0, &img, &list, &text);
  if (!CHECK(s == RK_OK, "build: %s: %s", rk_status_name(s), rk_last_error()))
    return;
  CHECK(!img.cache_hit, "first build came from the cache");
  CHECK(!img.ptx && strcmp(img.arch, "sm_90") == 0, "arch %s ptx %d", img.arch,
        img.ptx);
  /* The module's functions: the kernel, the handlers and their batches;
   * the persistent kernels are in the image, not in the list. */
  CHECK(list->count == 5, "%zu entries", list->count);
  const char *names[] = {
      "scale",           "add_one",          "rk_batch_add_one",
      "counted",         "rk_batch_counted", "rk_actor_add_one",
      "rk_actor_counted"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    CHECK(has_symbol(&img, names[i]), "the image lacks %s", names[i]);
  CHECK(strstr(text, "#define SCALE 2.0f") != NULL,
        "the define is not in the CUDA C:\n%s", text);
  free(text);
  rk_entry_list_destroy(list);
  rk__cu_image_free(&img);

  s = rk__cu_build(kSource, &o, 9, 0, &img, &list, NULL);
  CHECK(s == RK_OK && img.cache_hit, "second build: %s, hit %d",
        rk_status_name(s), img.cache_hit);
  if (s == RK_OK) {
    rk_entry_list_destroy(list);
    rk__cu_image_free(&img);
  }
  o.no_cache = true;
  s = rk__cu_build(kSource, &o, 9, 0, &img, &list, NULL);
  CHECK(s == RK_OK && !img.cache_hit, "no_cache build: %s, hit %d",
        rk_status_name(s), img.cache_hit);
  if (s == RK_OK) {
    rk_entry_list_destroy(list);
    rk__cu_image_free(&img);
  }
}

/* A compute capability NVRTC has no real architecture for: PTX for the
 * newest virtual one below it. Too old: refused with the reason. */
static void test_arch(void) {
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.defines = kDefines;
  rk__cu_image_t img;
  rk_entry_list_t *list = NULL;
  rk_status_t s = rk__cu_build(kSource, &o, 9, 9, &img, &list, NULL);
  if (CHECK(s == RK_OK, "cc 9.9: %s", rk_last_error())) {
    CHECK(img.ptx && strncmp(img.arch, "compute_", 8) == 0, "arch %s",
          img.arch);
    CHECK(strstr(img.data, ".entry rk_actor_add_one") != NULL,
          "PTX without the persistent kernel");
    rk_entry_list_destroy(list);
    rk__cu_image_free(&img);
  }
  s = rk__cu_build(kSource, &o, 3, 0, &img, &list, NULL);
  CHECK(s == RK_ERR_UNAVAILABLE && strstr(rk_last_error(), "3.0"),
        "cc 3.0: %s: %s", rk_status_name(s), rk_last_error());
}

static void test_errors(void) {
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "bad.c";
  rk__cu_image_t img;
  rk_entry_list_t *list = NULL;
  /* A kernel-language error on the user's line 3. */
  static const char kBad[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void k(int *p) {\n"
      "  p[0] = undeclared;\n"
      "}\n";
  static const char *const defs[] = {"A=1", "B", NULL};
  o.defines = defs;
  rk_status_t s = rk__cu_build(kBad, &o, 9, 0, &img, &list, NULL);
  CHECK(s == RK_ERR_COMPILE && strstr(rk_last_error(), "bad.c:3:"),
        "transpile error: %s: %s", rk_status_name(s), rk_last_error());
  /* NVRTC's own errors: the log and the generated line it points at. */
  static const char kCuda[] =
      "extern \"C\" __global__ void k(int *p) {\n"
      "  p[0] = 1;\n"
      "  p[1] = nowhere;\n"
      "}\n";
  memset(&img, 0, sizeof img);
  s = rk__cu_build_text(kCuda, "gen.cu", 9, 0, true, &img);
  const char *e = rk_last_error();
  CHECK(s == RK_ERR_COMPILE && strstr(e, "gen.cu(3)") &&
            strstr(e, "NVRTC_ERROR_COMPILATION") &&
            strstr(e, "generated line 3:   p[1] = nowhere;"),
        "nvrtc error: %s: %s", rk_status_name(s), e);
}

/* One build of kSource with SCALE=3.0f: the image in *out (malloc'd) and
 * whether it came from the cache. */
static bool build_scale3(char **out, size_t *out_size, bool *out_hit) {
  static const char *const defs[] = {"SCALE=3.0f", NULL};
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.defines = defs;
  rk__cu_image_t img;
  rk_entry_list_t *list = NULL;
  rk_status_t s = rk__cu_build(kSource, &o, 9, 0, &img, &list, NULL);
  if (!CHECK(s == RK_OK, "build: %s", rk_last_error())) return false;
  *out = malloc(img.size);
  memcpy(*out, img.data, img.size);
  *out_size = img.size;
  *out_hit = img.cache_hit;
  rk_entry_list_destroy(list);
  rk__cu_image_free(&img);
  return true;
}

/* After `what` was done to the cache: the next build is not a hit and gives
 * the same image as the first build; the one after is a hit again when
 * `then_hit`. */
static void expect_rebuilt(const char *ref, size_t ref_size, bool then_hit,
                           const char *what) {
  char *data = NULL;
  size_t size = 0;
  bool hit = true;
  if (!build_scale3(&data, &size, &hit)) return;
  CHECK(!hit, "%s: the entry was used", what);
  CHECK(size == ref_size && memcmp(data, ref, size) == 0,
        "%s: the image differs from the first build", what);
  free(data);
  if (!build_scale3(&data, &size, &hit)) return;
  CHECK(hit == then_hit, "%s: the next build: hit %d", what, hit);
  free(data);
}

static void test_cache_checks(const char *top) {
  char base[1100], dir[1200], entry[1500] = "";
  snprintf(base, sizeof base, "%s/checks", top);
  snprintf(dir, sizeof dir, "%s/cuda", base);
  setenv("RK_CACHE_DIR", base, 1);
  char *ref = NULL;
  size_t ref_size = 0;
  bool hit = true;
  if (!build_scale3(&ref, &ref_size, &hit)) return;
  CHECK(!hit, "first build came from the cache");
  struct stat st;
  CHECK(stat(base, &st) == 0 && (st.st_mode & 0777) == 0700,
        "cache root mode %04o", (unsigned)(st.st_mode & 07777));
  char name[256] = "";
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.') snprintf(name, sizeof name, "%s", e->d_name);
  if (d) closedir(d);
  snprintf(entry, sizeof entry, "%s/%s", dir, name);
  if (!CHECK(name[0] && stat(entry, &st) == 0 && (st.st_mode & 07777) == 0600,
             "no 0600 entry in %s (%s)", dir, name)) {
    free(ref);
    return;
  }

  /* One byte changed, same size. */
  FILE *f = fopen(entry, "r+b");
  if (f) {
    fseek(f, (long)ref_size / 2, SEEK_SET);
    fputc(ref[ref_size / 2] ^ 0x40, f);
    fclose(f);
  }
  expect_rebuilt(ref, ref_size, true, "a changed byte");
  CHECK(truncate(entry, (off_t)ref_size / 2) == 0, "truncate");
  expect_rebuilt(ref, ref_size, true, "truncated");
  chmod(entry, 0666);
  expect_rebuilt(ref, ref_size, true, "entry writable by others");
  if (geteuid() == 0) {
    CHECK(chown(entry, 65534, 65534) == 0, "chown");
    expect_rebuilt(ref, ref_size, true, "entry owned by another user");
  }
  chmod(dir, 0777);
  expect_rebuilt(ref, ref_size, false, "directory writable by others");
  chmod(dir, 0700);
  chmod(base, 0777);
  expect_rebuilt(ref, ref_size, false, "cache root writable by others");
  chmod(base, 0700);
  if (geteuid() == 0) {
    CHECK(chown(dir, 65534, 65534) == 0, "chown");
    expect_rebuilt(ref, ref_size, false, "directory owned by another user");
  }
  free(ref);
  setenv("RK_CACHE_DIR", top, 1);
}

int main(void) {
  const rk_nvrtc_api_t *nv = NULL;
  if (rk__nvrtc_api(&nv) != RK_OK) RK_TEST_SKIP("%s", rk_last_error());
  char dir[] = "/tmp/rk-cuda-build-XXXXXX";
  if (!mkdtemp(dir)) RK_TEST_SKIP("no temporary directory");
  setenv("RK_CACHE_DIR", dir, 1);
  printf("NVRTC %d.%d from %s; cache %s\n", nv->major, nv->minor, nv->path,
         dir);
  test_build();
  test_arch();
  test_errors();
  test_cache_checks(dir);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("could not remove %s\n", dir);
  return rk_test_finish("cuda_build");
}
