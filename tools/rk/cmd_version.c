/* cmd_version.c - `rk version [--json]` (also `rk --version`): the command's
 * and the library's version, the backends built in, and the vendor
 * libraries each one finds here with the versions they report.
 *
 *   rk 0.1.0 (librk 0.1.0)
 *   librk     built by GCC 12.2.0, link-time optimised
 *   backends built in: cpu, cuda, metal, webgpu, opencl
 *   cpu       cc: gcc (Debian 12.2.0-14) 12.2.0
 *   webgpu    wgpu-native 29.0.0.0 (/.../libwgpu_native-release.so)
 *   opencl    libOpenCL.so.1: OpenCL 3.0 PoCL 3.1 ...
 *   cuda      not found: no NVIDIA driver: libcuda.so.1: ...
 *   ops BLAS  cpu: libopenblas.so.0; cuda: /usr/.../libcublas.so.13
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "base/error.h"
#include "base/sys.h"
#include "rk/rk.h"
#include "tool.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* The version of the headers this command was compiled with. */
#define TOOL_VERSION          \
  STRINGIFY(RK_VERSION_MAJOR) \
  "." STRINGIFY(RK_VERSION_MINOR) "." STRINGIFY(RK_VERSION_PATCH)

static const rk_backend_kind_t kKinds[] = {RK_BACKEND_CPU, RK_BACKEND_CUDA,
                                           RK_BACKEND_METAL, RK_BACKEND_WEBGPU,
                                           RK_BACKEND_OPENCL};
enum { kKindCount = sizeof kKinds / sizeof kKinds[0] };

static void help(FILE *out) {
  fputs(
      "Usage: rk version [--json]\n"
      "       rk --version\n"
      "\n"
      "Shows the version of this command and of the rk library (and how\n"
      "the library was built: its compiler, link-time optimisation), the\n"
      "backends built into this rk, and for each one what it finds on this\n"
      "machine: the vendor library it loads and the version that library\n"
      "reports (the CPU backend: the C compiler it runs), or why it finds\n"
      "none; and the BLAS the ops library's matmul uses on the CPU (a CBLAS,\n"
      "RK_BLAS_LIB) and on CUDA (cuBLAS, RK_CUBLAS_LIB, loaded on first use).\n"
      "\n"
      "Options:\n"
      "  --json   one JSON object: {\"rk\", \"library\", \"build\": "
      "{\"compiler\",\n"
      "           \"lto\"}, \"backends\": [{\"name\",\n"
      "           \"built_in\", \"found\", \"library\", \"reason\"}],\n"
      "           \"ops_blas\", \"cublas\"}  (null: none, rk's own GEMM)\n"
      "\n"
      "Example:\n"
      "  rk version\n"
      "\n"
      "Exit status: 0 success, 2 usage error.\n",
      out);
}

/* What one backend finds here. */
typedef struct found {
  bool built_in, found;
  char library[1100]; /* the vendor library and its version */
  char reason[1024];  /* why not found */
} found_t;

/* The first line of `<compiler> --version`, the compiler being the CPU
 * backend's: $RK_CC, else $CC, else cc, split at blanks as the backend
 * splits it. */
static void compiler_version(char *out, size_t cap) {
  const char *spec = getenv("RK_CC");
  if (!spec || !*spec) spec = getenv("CC");
  if (!spec || !*spec) spec = "cc";
  char words[512];
  snprintf(words, sizeof words, "%s", spec);
  char *argv[18];
  int n = 0;
  for (char *save = NULL, *w = strtok_r(words, " \t", &save); w && n < 16;
       w = strtok_r(NULL, " \t", &save))
    argv[n++] = w;
  if (n == 0) {
    snprintf(out, cap, "no C compiler (RK_CC is blank)");
    return;
  }
  argv[n++] = "--version";
  argv[n] = NULL;
  char *output = NULL;
  int code = 0;
  if (rk__run_process(argv, &output, &code) != RK_OK || code != 0) {
    snprintf(out, cap, "%s: no C compiler runs (set RK_CC or CC)", spec);
  } else {
    output[strcspn(output, "\n")] = '\0';
    snprintf(out, cap, "%s: %s", spec, output);
  }
  free(output);
}

static void find(rk_backend_kind_t kind, found_t *f) {
  memset(f, 0, sizeof *f);
  f->built_in = rk_backend_kind_built_in(kind);
  if (!f->built_in) {
    snprintf(f->reason, sizeof f->reason, "not in this build of rk");
    return;
  }
  rk_backend_t *be = NULL;
  if (rk_backend_open(kind, &be) != RK_OK) {
    snprintf(f->reason, sizeof f->reason, "%s", rk_last_error());
    return;
  }
  f->found = true;
  if (kind == RK_BACKEND_CPU)
    compiler_version(f->library, sizeof f->library);
  else
    snprintf(f->library, sizeof f->library, "%s", rk_backend_library(be));
  rk_backend_destroy(be);
}

/* Reasons start with the backend's name ("cuda: ..."). */
static const char *without_name(const char *reason, const char *name) {
  size_t len = strlen(name);
  if (strncmp(reason, name, len) == 0 && strncmp(reason + len, ": ", 2) == 0)
    return reason + len + 2;
  return reason;
}

static void print_text(const found_t *f) {
  printf("rk %s (librk %s)\n", TOOL_VERSION, rk_version());
  printf("%-9s built by %s, %s\n", "librk", rk__build_compiler(),
         rk__build_lto() ? "link-time optimised"
                         : "without link-time optimisation");
  printf("backends built in:");
  bool any = false;
  for (int i = 0; i < kKindCount; ++i)
    if (f[i].built_in) {
      printf("%s %s", any ? "," : "", rk_backend_kind_name(kKinds[i]));
      any = true;
    }
  any = false;
  for (int i = 0; i < kKindCount; ++i)
    if (!f[i].built_in) {
      printf("%s%s", any ? ", " : " (not ", rk_backend_kind_name(kKinds[i]));
      any = true;
    }
  printf("%s\n", any ? ")" : "");
  for (int i = 0; i < kKindCount; ++i) {
    if (!f[i].built_in) continue;
    const char *name = rk_backend_kind_name(kKinds[i]);
    if (f[i].found) {
      printf("%-9s %s\n", name, f[i].library[0] ? f[i].library : "found");
    } else {
      /* Only the first line of a long reason: rk devices has it whole. */
      const char *why = without_name(f[i].reason, name);
      printf("%-9s not found: %.*s\n", name, (int)strcspn(why, "\n"), why);
    }
  }
  const char *blas = rk_ops_blas_name();
  char cublas[1100];
  const bool have = rk__cu_blas_find(cublas, sizeof cublas);
  printf("%-9s cpu: %s; cuda: %s%.*s%s\n", "ops BLAS",
         blas ? blas : "none (rk's own GEMM)", have ? "" : "none (",
         (int)strcspn(cublas, "\n"), cublas, have ? "" : ")");
}

static void print_json(const found_t *f) {
  printf("{\"rk\":\"%s\",\"library\":", TOOL_VERSION);
  tool_json_string(stdout, rk_version());
  printf(",\"build\":{\"compiler\":");
  tool_json_string(stdout, rk__build_compiler());
  printf(",\"lto\":%s}", rk__build_lto() ? "true" : "false");
  printf(",\"backends\":[");
  for (int i = 0; i < kKindCount; ++i) {
    printf("%s{\"name\":\"%s\",\"built_in\":%s,\"found\":%s,\"library\":",
           i ? "," : "", rk_backend_kind_name(kKinds[i]),
           f[i].built_in ? "true" : "false", f[i].found ? "true" : "false");
    tool_json_string(stdout, f[i].found ? f[i].library : NULL);
    printf(",\"reason\":");
    tool_json_string(stdout, f[i].found ? NULL : f[i].reason);
    printf("}");
  }
  char cublas[1100];
  const bool have = rk__cu_blas_find(cublas, sizeof cublas);
  printf("],\"ops_blas\":");
  tool_json_string(stdout, rk_ops_blas_name());
  printf(",\"cublas\":");
  tool_json_string(stdout, have ? cublas : NULL);
  printf("}\n");
}

/* Also `rk --version`: main.c passes argv from "--version" on. */
static int run(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (tool_is_help(argv[i])) {
      help(stdout);
      return TOOL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      bool command = strcmp(argv[0], "version") == 0;
      return tool_usage_error(command ? "version" : NULL,
                              "%s takes no arguments but --json, got '%s'",
                              argv[0], argv[i]);
    }
  }
  found_t f[kKindCount];
  for (int i = 0; i < kKindCount; ++i) find(kKinds[i], &f[i]);
  if (json)
    print_json(f);
  else
    print_text(f);
  return TOOL_EXIT_OK;
}

const tool_command_t tool_cmd_version = {
    "version", "show versions: rk, its backends and the vendor libraries", run,
    help};
