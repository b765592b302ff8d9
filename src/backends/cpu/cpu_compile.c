/* CPU kernel compilation: kernel-language source -> the front end every
 * backend shares (rk__kernel_front_end, target C) -> launch wrappers ->
 * system C compiler -> shared object, cached on disk.
 *
 * The C the front end prints is compiled as one translation unit together
 * with a generated wrapper per entry point it lists (kernels, stencils,
 * handlers and their batch entries): run_blocks loops over blocks and
 * threads calling the entry (which the compiler can inline), run_thread
 * runs one thread for the fiber path. A table `rk__module` describes the
 * entries and their parameters (sizes from sizeof, so struct arguments are
 * checked too). Nothing but checked kernel language reaches the compiler.
 *
 * The shared object is cached as <cache>/cpu/<hash>.so, where the hash covers
 * the compiler's identity, the flags, the embedded kernel.h, the CPU model
 * (for -march=native) and the full text (the defines are part of it). The cache
 * directory is $RK_CACHE_DIR, else $XDG_CACHE_HOME/rk, else ~/.cache/rk; if it
 * cannot be created or written, a private temporary directory is used for the
 * life of the context.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "hal/kernel_source.h"

extern const char rk__kernel_header_text[];
extern const size_t rk__kernel_header_size;

static const char *const kFlags[] = {
    "-std=c11",          "-O3",
    "-march=native",     "-fPIC",
    "-shared",           "-fno-math-errno",
    "-DRK_CPU_MODULE=1", "-fdiagnostics-color=never",
};

enum { kMaxCcWords = 16 };

/* ---- Wrapper generation ------------------------------------------------- */

static void emit_param_loads(rk__strbuf_t *sb, const rk_entry_t *k) {
  for (size_t i = 0; i < k->param_count; ++i)
    rk__strbuf_printf(sb, "  %s rk__p%zu = *(%s *)rk__a[%zu];\n",
                      k->params[i].type, i, k->params[i].type, i);
}

static void emit_call(rk__strbuf_t *sb, const rk_entry_t *k) {
  rk__strbuf_printf(sb, "%s(", k->name);
  for (size_t i = 0; i < k->param_count; ++i)
    rk__strbuf_printf(sb, "%srk__p%zu", i ? ", " : "", i);
  rk__strbuf_puts(sb, ");\n");
}

/* The launch wrappers and the module table of every entry point, from the
 * front end's description of them. */
static void emit_wrappers(rk__strbuf_t *sb, const rk_entry_list_t *list) {
  bool uses_barrier = false;
  rk__strbuf_puts(sb, "\n#line 1 \"<rk cpu wrapper>\"\n");
  for (size_t n = 0; n < list->count; ++n) {
    const rk_entry_t *k = &list->entries[n];
    uses_barrier |= k->uses_barrier;
    rk__strbuf_printf(
        sb,
        "static void rk__blocks_%s(const rk__klaunch_t *rk__L, uint64_t "
        "rk__first, uint64_t rk__end, void *const *rk__a) {\n",
        k->name);
    emit_param_loads(sb, k);
    rk__strbuf_puts(
        sb,
        "  (void)rk__a;\n"
        "  for (int i = 0; i < 3; ++i) {\n"
        "    rk__k.bdim[i] = rk__L->block[i];\n"
        "    rk__k.gdim[i] = rk__L->grid[i];\n"
        "  }\n"
        "  rk__k.dyn_shared = rk__L->dyn_shared;\n"
        "  rk__k.barrier = rk__L->barrier;\n"
        "  rk__k.sched = rk__L->sched;\n"
        "  const uint64_t gx = rk__L->grid[0], gy = rk__L->grid[1];\n"
        "  const uint32_t bx = rk__L->block[0], by = rk__L->block[1],\n"
        "                 bz = rk__L->block[2];\n"
        "  for (uint64_t b = rk__first; b < rk__end; ++b) {\n"
        "    rk__k.bid[0] = (uint32_t)(b % gx);\n"
        "    rk__k.bid[1] = (uint32_t)((b / gx) % gy);\n"
        "    rk__k.bid[2] = (uint32_t)(b / (gx * gy));\n"
        "    for (uint32_t z = 0; z < bz; ++z) {\n"
        "      rk__k.tid[2] = z;\n"
        "      for (uint32_t y = 0; y < by; ++y) {\n"
        "        rk__k.tid[1] = y;\n"
        "        for (uint32_t x = 0; x < bx; ++x) {\n"
        "          rk__k.tid[0] = x;\n"
        "          ");
    emit_call(sb, k);
    rk__strbuf_puts(sb, "        }\n      }\n    }\n  }\n}\n");

    rk__strbuf_printf(
        sb,
        "static void rk__thread_%s(const rk__klaunch_t *rk__L, const "
        "uint32_t rk__bid[3], const uint32_t rk__tid[3], void *const "
        "*rk__a) {\n",
        k->name);
    emit_param_loads(sb, k);
    rk__strbuf_puts(sb,
                    "  (void)rk__a;\n"
                    "  for (int i = 0; i < 3; ++i) {\n"
                    "    rk__k.tid[i] = rk__tid[i];\n"
                    "    rk__k.bid[i] = rk__bid[i];\n"
                    "    rk__k.bdim[i] = rk__L->block[i];\n"
                    "    rk__k.gdim[i] = rk__L->grid[i];\n"
                    "  }\n"
                    "  rk__k.dyn_shared = rk__L->dyn_shared;\n"
                    "  rk__k.barrier = rk__L->barrier;\n"
                    "  rk__k.sched = rk__L->sched;\n  ");
    emit_call(sb, k);
    rk__strbuf_puts(sb, "}\n");

    if (k->param_count) {
      rk__strbuf_printf(sb, "static const rk__kparam_t rk__params_%s[] = {\n",
                        k->name);
      for (size_t i = 0; i < k->param_count; ++i)
        rk__strbuf_printf(sb, "  {\"%s\", %d, (uint32_t)sizeof(%s)},\n",
                          k->params[i].name, (int)k->params[i].kind,
                          k->params[i].type);
      rk__strbuf_puts(sb, "};\n");
    }
  }
  rk__strbuf_printf(sb, "static const rk__kentry_t rk__entries[%zu] = {\n",
                    list->count ? list->count : 1);
  for (size_t n = 0; n < list->count; ++n) {
    const rk_entry_t *k = &list->entries[n];
    if (k->param_count)
      rk__strbuf_printf(sb,
                        "  {\"%s\", %zu, rk__params_%s, rk__blocks_%s, "
                        "rk__thread_%s},\n",
                        k->name, k->param_count, k->name, k->name, k->name);
    else
      rk__strbuf_printf(sb, "  {\"%s\", 0, 0, rk__blocks_%s, rk__thread_%s},\n",
                        k->name, k->name, k->name);
  }
  if (list->count == 0) rk__strbuf_puts(sb, "  {0, 0, 0, 0, 0},\n");
  rk__strbuf_printf(sb,
                    "};\n"
                    "__attribute__((visibility(\"default\"))) const "
                    "rk__kmodule_t rk__module = {RK__CPU_ABI_MAGIC, "
                    "RK__CPU_ABI_VERSION, %d, %zu, rk__entries};\n",
                    uses_barrier ? 1 : 0, list->count);
}

/* ---- Compiler and cache directory -------------------------------------- */

enum { kPathMax = 4096 };

/* snprintf for paths: RK_ERR_INVALID_ARGUMENT instead of truncation. */
static rk_status_t pathf(char *out, const char *fmt, ...) RK__PRINTF(2, 3);
static rk_status_t pathf(char *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, kPathMax, fmt, ap);
  va_end(ap);
  if (n < 0 || n >= kPathMax)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cpu: path too long: %s", out);
  return RK_OK;
}

typedef struct compiler {
  char spec[512]; /* as given: "cc", "ccache gcc" */
  char *words[kMaxCcWords];
  int nwords;
  char storage[512];
} compiler_t;

static rk_status_t find_compiler(compiler_t *cc) {
  const char *spec = getenv("RK_CC");
  if (!spec || !*spec) spec = getenv("CC");
  if (!spec || !*spec) spec = "cc";
  snprintf(cc->spec, sizeof cc->spec, "%s", spec);
  snprintf(cc->storage, sizeof cc->storage, "%s", spec);
  cc->nwords = 0;
  for (char *save = NULL, *w = strtok_r(cc->storage, " \t", &save); w;
       w = strtok_r(NULL, " \t", &save)) {
    if (cc->nwords == kMaxCcWords)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "compiler command '%s' has too many words", spec);
    cc->words[cc->nwords++] = w;
  }
  if (cc->nwords == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "compiler command is empty");
  return RK_OK;
}

/* The first line of `cc --version`, remembered per compiler command. */
static pthread_mutex_t g_version_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_version_spec[512];
static char g_version[512];

static rk_status_t compiler_version(const compiler_t *cc, char *out,
                                    size_t cap) {
  pthread_mutex_lock(&g_version_lock);
  if (strcmp(g_version_spec, cc->spec) == 0 && g_version[0]) {
    snprintf(out, cap, "%s", g_version);
    pthread_mutex_unlock(&g_version_lock);
    return RK_OK;
  }
  pthread_mutex_unlock(&g_version_lock);
  char *argv[kMaxCcWords + 2];
  for (int i = 0; i < cc->nwords; ++i) argv[i] = cc->words[i];
  argv[cc->nwords] = "--version";
  argv[cc->nwords + 1] = NULL;
  char *output = NULL;
  int exit_code = 0;
  rk_status_t s = rk__run_process(argv, &output, &exit_code);
  if (s != RK_OK)
    return rk__fail_context(s,
                            "cpu: no C compiler (set RK_CC or CC, or install "
                            "gcc or clang)");
  if (exit_code != 0) {
    rk__fail(RK_ERR_UNAVAILABLE, "cpu: '%s --version' failed: %s", cc->spec,
             output);
    free(output);
    return RK_ERR_UNAVAILABLE;
  }
  output[strcspn(output, "\n")] = '\0';
  snprintf(out, cap, "%s", output);
  free(output);
  pthread_mutex_lock(&g_version_lock);
  snprintf(g_version_spec, sizeof g_version_spec, "%s", cc->spec);
  snprintf(g_version, sizeof g_version, "%s", out);
  pthread_mutex_unlock(&g_version_lock);
  return RK_OK;
}

static bool dir_writable(const char *dir) {
  return rk__mkdirs(dir) == RK_OK && access(dir, W_OK | X_OK) == 0;
}

/* Chooses the cache directory; *out_ephemeral when it is the context's
 * private temporary directory. */
static rk_status_t cache_dir(cpu_context_t *ctx, char *out,
                             bool *out_ephemeral) {
  char base[kPathMax] = "";
  const char *env = getenv("RK_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  if (env && *env)
    snprintf(base, sizeof base, "%s", env);
  else if (xdg && *xdg)
    snprintf(base, sizeof base, "%s/rk", xdg);
  else if (home && *home)
    snprintf(base, sizeof base, "%s/.cache/rk", home);
  if (base[0]) {
    char *saved = rk__error_save();
    if (pathf(out, "%s/cpu", base) == RK_OK && dir_writable(out)) {
      rk__error_restore(saved);
      *out_ephemeral = false;
      return RK_OK;
    }
    /* Not an error: the temporary directory below takes over. */
    rk__error_restore(saved);
  }
  pthread_mutex_lock(&ctx->cache_lock);
  if (!ctx->tmp_cache[0]) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(ctx->tmp_cache, sizeof ctx->tmp_cache, "%s/rk-cache-XXXXXX", tmp);
    if (!mkdtemp(ctx->tmp_cache)) {
      int e = errno;
      ctx->tmp_cache[0] = '\0';
      pthread_mutex_unlock(&ctx->cache_lock);
      return rk__fail(RK_ERR_UNAVAILABLE,
                      "cpu: the kernel cache '%s' is not writable and no "
                      "temporary directory could be made in '%s': %s",
                      base, tmp, strerror(e));
    }
  }
  memcpy(out, ctx->tmp_cache, sizeof ctx->tmp_cache);
  pthread_mutex_unlock(&ctx->cache_lock);
  *out_ephemeral = true;
  return RK_OK;
}

/* Writes kernel.h under dir (once) and returns the -I directory. */
static rk_status_t install_header(const char *dir, bool ephemeral,
                                  const char *header_hash, char *out) {
  if (ephemeral)
    RK_RETURN_IF_ERROR(pathf(out, "%s/include", dir));
  else
    RK_RETURN_IF_ERROR(pathf(out, "%s/include-%.16s", dir, header_hash));
  char rkdir[kPathMax], path[kPathMax];
  RK_RETURN_IF_ERROR(pathf(rkdir, "%s/rk", out));
  RK_RETURN_IF_ERROR(pathf(path, "%s/kernel.h", rkdir));
  struct stat st;
  if (stat(path, &st) == 0 && (size_t)st.st_size == rk__kernel_header_size)
    return RK_OK;
  RK_RETURN_IF_ERROR(rk__mkdirs(rkdir));
  return rk__write_file_atomic(path, rk__kernel_header_text,
                               rk__kernel_header_size);
}

/* ---- Loading ------------------------------------------------------------ */

static rk_status_t load(const char *path, size_t nentries, void **out_dl,
                        const rk__kmodule_t **out_desc) {
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return rk__fail(RK_ERR_COMPILE, "cpu: cannot load '%s': %s", path,
                    dlerror());
  const rk__kmodule_t *desc = dlsym(dl, "rk__module");
  if (!desc || desc->magic != RK__CPU_ABI_MAGIC ||
      desc->version != RK__CPU_ABI_VERSION || desc->nentries != nentries) {
    dlclose(dl);
    return rk__fail(RK_ERR_COMPILE,
                    "cpu: '%s' is not a module of this rk version", path);
  }
  *out_dl = dl;
  *out_desc = desc;
  return RK_OK;
}

static rk_status_t run_compiler(const compiler_t *cc, const char *include_dir,
                                const char *c_path, const char *so_path,
                                const char *source_name) {
  char *argv[kMaxCcWords + 64];
  int argc = 0;
  for (int i = 0; i < cc->nwords; ++i) argv[argc++] = cc->words[i];
  for (size_t i = 0; i < sizeof kFlags / sizeof kFlags[0]; ++i)
    argv[argc++] = (char *)kFlags[i];
  char inc[kPathMax];
  RK_RETURN_IF_ERROR(pathf(inc, "-I%s", include_dir));
  argv[argc++] = inc;
  argv[argc++] = "-o";
  argv[argc++] = (char *)so_path;
  argv[argc++] = (char *)c_path;
  argv[argc++] = "-lm";
  argv[argc] = NULL;
  char *output = NULL;
  int exit_code = 0;
  RK_RETURN_IF_ERROR(rk__run_process(argv, &output, &exit_code));
  if (exit_code != 0) {
    /* The compiler names the temporary file; say the source's name. */
    rk__strbuf_t log;
    rk__strbuf_init(&log);
    size_t plen = strlen(c_path);
    for (const char *o = output; *o;) {
      const char *hit = strstr(o, c_path);
      if (!hit) {
        rk__strbuf_puts(&log, o);
        break;
      }
      rk__strbuf_append(&log, o, (size_t)(hit - o));
      rk__strbuf_puts(&log, source_name);
      o = hit + plen;
    }
    rk__fail(RK_ERR_COMPILE, "%s: the C compiler (%s) failed with exit %d:\n%s",
             source_name, cc->spec, exit_code,
             log.failed || !log.data ? output : log.data);
    rk__strbuf_free(&log);
    free(output);
    unlink(so_path);
    return RK_ERR_COMPILE;
  }
  free(output);
  return RK_OK;
}

static rk_status_t make_module(void *dl, const rk__kmodule_t *desc,
                               bool cache_hit, rk_module_t **out) {
  size_t total = 0;
  for (size_t i = 0; i < desc->nentries; ++i) total += desc->entries[i].nparams;
  cpu_module_t *m = calloc(1, sizeof *m);
  rk_function_t *fns = calloc(desc->nentries ? desc->nentries : 1, sizeof *fns);
  rk__param_t *params = calloc(total ? total : 1, sizeof *params);
  if (!m || !fns || !params) {
    free(m);
    free(fns);
    free(params);
    dlclose(dl);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: module");
  }
  size_t p = 0;
  for (size_t i = 0; i < desc->nentries; ++i) {
    const rk__kentry_t *e = &desc->entries[i];
    fns[i].name = e->name;
    fns[i].nparams = e->nparams;
    fns[i].params = &params[p];
    for (uint32_t j = 0; j < e->nparams; ++j, ++p) {
      params[p].kind = (rk_arg_kind_t)e->params[j].kind;
      params[p].size = e->params[j].size;
      snprintf(params[p].name, sizeof params[p].name, "%s", e->params[j].name);
    }
  }
  m->dl = dl;
  m->desc = desc;
  m->params = params;
  m->base.functions = fns;
  m->base.nfunctions = desc->nentries;
  m->base.cache_hit = cache_hit;
  *out = &m->base;
  return RK_OK;
}

/* Struct arguments larger than RK_ARG_STRUCT_MAX are refused at load. */
static rk_status_t check_struct_sizes(const rk__kmodule_t *desc) {
  for (uint32_t i = 0; i < desc->nentries; ++i)
    for (uint32_t j = 0; j < desc->entries[i].nparams; ++j)
      if (desc->entries[i].params[j].kind == RK_ARG_STRUCT &&
          desc->entries[i].params[j].size > RK_ARG_STRUCT_MAX)
        return rk__fail(RK_ERR_COMPILE,
                        "kernel '%s' parameter '%s' is a %u-byte struct; "
                        "struct arguments are limited to %d bytes",
                        desc->entries[i].name, desc->entries[i].params[j].name,
                        desc->entries[i].params[j].size, RK_ARG_STRUCT_MAX);
  return RK_OK;
}

rk_status_t rk__cpu_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module) {
  cpu_context_t *ctx = cpu_ctx(context);
  const char *name = rk__kernel_source_name(options);
  /* The front end every backend shares; the C it prints, then the launch
   * wrappers of the entries it lists, is what the system compiler builds. */
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_C, NULL, &r));
  const size_t nentries = r.entries->count;
  rk__strbuf_t text;
  rk__strbuf_init(&text);
  rk__strbuf_puts(&text, r.text);
  emit_wrappers(&text, r.entries);
  rk_codegen_result_free(&r);

  compiler_t cc;
  char version[512], dir[kPathMax], include_dir[kPathMax];
  bool ephemeral = false;
  rk_status_t s =
      text.failed ? rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: wrapper") : RK_OK;
  if (s == RK_OK) s = find_compiler(&cc);
  if (s == RK_OK) s = compiler_version(&cc, version, sizeof version);
  if (s == RK_OK) s = cache_dir(ctx, dir, &ephemeral);

  rk__hash_t h;
  char header_hex[33], key[33];
  rk__hash_init(&h);
  rk__hash_update(&h, rk__kernel_header_text, rk__kernel_header_size);
  rk__hash_hex(&h, header_hex);
  if (s == RK_OK) s = install_header(dir, ephemeral, header_hex, include_dir);
  if (s != RK_OK) {
    rk__strbuf_free(&text);
    return s;
  }
  rk__hash_str(&h, cc.spec); /* extra words such as "-include x.h" */
  rk__hash_str(&h, version);
  for (size_t i = 0; i < sizeof kFlags / sizeof kFlags[0]; ++i)
    rk__hash_str(&h, kFlags[i]);
  rk__hash_str(&h, context->info.name);
  rk__hash_str(&h, text.data);
  rk__hash_hex(&h, key);

  char so_path[kPathMax];
  if (s == RK_OK) s = pathf(so_path, "%s/%s.so", dir, key);
  if (s != RK_OK) {
    rk__strbuf_free(&text);
    return s;
  }
  void *dl = NULL;
  const rk__kmodule_t *desc = NULL;
  bool hit = false;
  if (!options->no_cache && !ephemeral && access(so_path, R_OK) == 0) {
    /* A damaged cache entry is rebuilt, not reported. */
    char *saved = rk__error_save();
    hit = load(so_path, nentries, &dl, &desc) == RK_OK;
    rk__error_restore(saved);
  }

  if (!hit) {
    static unsigned long counter;
    unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    char c_path[kPathMax], tmp_so[kPathMax];
    s = pathf(c_path, "%s/%s-%ld-%lu.c", dir, key, (long)getpid(), n);
    if (s == RK_OK)
      s = pathf(tmp_so, "%s/%s-%ld-%lu.so", dir, key, (long)getpid(), n);
    if (s == RK_OK) s = rk__write_file_atomic(c_path, text.data, text.len);
    if (s == RK_OK) {
      s = run_compiler(&cc, include_dir, c_path, tmp_so, name);
      unlink(c_path);
    }
    if (s == RK_OK) {
      bool keep = !options->no_cache && !ephemeral;
      const char *final_path = tmp_so;
      if (keep && rename(tmp_so, so_path) == 0) final_path = so_path;
      s = load(final_path, nentries, &dl, &desc);
      if (!keep || final_path == tmp_so) unlink(tmp_so);
    }
  }
  rk__strbuf_free(&text);
  if (s == RK_OK) s = check_struct_sizes(desc);
  if (s != RK_OK) {
    if (dl) dlclose(dl);
    return s;
  }
  return make_module(dl, desc, hit, out_module);
}

void rk__cpu_module_destroy(rk_module_t *module) {
  cpu_module_t *m = (cpu_module_t *)module;
  dlclose(m->dl);
  free(m->params);
  free(m->base.functions);
  free(m);
}
