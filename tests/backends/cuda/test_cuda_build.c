/* cuda_build: the CUDA backend's module build without a GPU. Kernel-language
 * source goes through the transpiler (with the persistent actor kernels) and
 * NVRTC for a given compute capability, through the disk cache: the image
 * defines every kernel and rk_actor_<handler>, a second build is a cache
 * hit, no_cache builds again, an architecture NVRTC does not know gets PTX
 * for the newest one below it, too old a device is refused, source errors
 * point at the user's line (defines included), NVRTC errors carry the log
 * and the generated line. Skips (77) without NVRTC.
 */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("could not remove %s\n", dir);
  return rk_test_finish("cuda_build");
}
