/* Helpers shared by the CPU backend tests (see cpu_test_util.h). */
#include "cpu_test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char kCpuScaleSource[] =
    "#include <rk/kernel.h>\n"
    "#ifndef SCALE\n"
    "#define SCALE 1\n"
    "#endif\n"
    "RK_KERNEL void scale(int n, int factor, int *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] = i * factor * SCALE;\n"
    "}\n";

rk_backend_t *cpu_open(void) {
  rk_backend_t *be = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be))) exit(1);
  return be;
}

rk_status_t cpu_compile(rk_context_t *ctx, const char *source,
                        const char *source_name, const char *const *defines,
                        bool no_cache, rk_module_t **out_mod) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  if (source_name) opt.source_name = source_name;
  opt.defines = defines;
  opt.no_cache = no_cache;
  *out_mod = NULL;
  return rk_context_compile(ctx, source, &opt, out_mod);
}

bool cpu_run_scale(rk_context_t *ctx, rk_module_t *mod, int factor, int scale) {
  enum { kN = 1000 };
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, "scale", &fn))) return false;
  rk_devptr_t d = 0;
  if (!CHECK_OK(rk_context_allocate(ctx, kN * sizeof(int), &d))) return false;
  rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(factor), rk_arg_ptr(d)};
  int out[kN];
  bool ok = CHECK_OK(rk_function_launch(
                fn, rk_dim3(8, 1, 1), rk_dim3(128, 1, 1), 0, NULL, args, 3)) &&
            CHECK_OK(rk_context_synchronize(ctx)) &&
            CHECK_OK(rk_context_copy_to_host(ctx, out, d, sizeof out));
  for (int i = 0; ok && i < kN; ++i)
    ok = CHECK(out[i] == i * factor * scale, "x[%d] = %d, expected %d", i,
               out[i], i * factor * scale);
  rk_context_free(ctx, d);
  return ok;
}

int cpu_count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (l >= sl && strcmp(e->d_name + l - sl, suffix) == 0) ++n;
  }
  closedir(d);
  return n;
}

int cpu_count_entries(const char *dir) { return cpu_count_files(dir, ""); }

bool cpu_path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}
