/* CPU kernel compilation: kernel-language source -> the front end every
 * backend shares (rk__kernel_front_end, target C) -> launch wrappers ->
 * system C compiler -> shared object, cached on disk.
 *
 * The C the front end prints is compiled as one translation unit together
 * with a generated wrapper per entry point it lists (kernels, stencils,
 * handlers and their batch entries): run_blocks loops over blocks and
 * threads calling the entry (which the compiler can inline), run_thread
 * runs one thread for the fiber path, and for a handler run_slots runs it
 * on a run of messages in place (an actor's worker). A table `rk__module`
 * describes the entries and their parameters (sizes from sizeof, so struct
 * arguments are checked too). Nothing but checked kernel language reaches the
 * compiler.
 *
 * The compiler always runs in the context's private directory (0700 under
 * $TMPDIR, removed with the context), so nothing about the cache directory
 * can make a build fail. The shared object is then cached as
 * <cache>/cpu/<hash>.so (base/cache_dir.h: the directory's location and
 * trust rules, the entry's size and checksum), where the hash covers the
 * compiler's identity, the flags, the embedded kernel.h, the transpiler
 * itself (rk__codegen_id), the CPU model (for -march=native), the defines
 * and the source: a hit needs no front-end run, since the same front end
 * accepted the same source before. A cache directory that
 * is refused or cannot be written, and an entry that is missing, damaged or
 * refused, only mean a build. Modules, hits included, are loaded from a
 * private copy of the bytes that were checked (load_image), never mapped
 * from the cache.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cpu/cpu.h"
#include "base/cache_dir.h"
#include "base/error.h"
#include "base/platform.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "hal/kernel_source.h"

extern const char rk__kernel_header_text[];
extern const size_t rk__kernel_header_size;
extern const char rk__codegen_id[];

/* Apple's clang names the host CPU with -mcpu=native on arm64 (older
 * releases refuse -march=native there). */
#if RK__APPLE && defined(__aarch64__)
#define RK_CPU_NATIVE_FLAG "-mcpu=native"
#else
#define RK_CPU_NATIVE_FLAG "-march=native"
#endif

static const char *const kFlags[] = {
    "-std=c11",          "-O3",
    RK_CPU_NATIVE_FLAG,  "-fPIC",
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

/* A handler without barriers gets a wrapper that runs it on a run of
 * messages in place (an actor's worker on its ring slots). */
static bool has_slots(const rk_entry_t *k) {
  return k->kind == RK_ENTRY_HANDLER && !k->uses_barrier;
}

/* rk__slots_<name>: the entry n times on thread 0 of block 0, pointer
 * argument i advanced by stride[i] bytes each time (an actor's messages
 * and their answers in consecutive ring slots). One call for a run of
 * messages, the handler inlined into the loop: per message no indirect
 * call, no saved registers and no thread state stored, whose stores
 * would queue behind the ones to the answer's slot (its line in the
 * sender's cache) and stall the worker. */
static void emit_slots(rk__strbuf_t *sb, const rk_entry_t *k) {
  rk__strbuf_printf(sb,
                    "static void rk__slots_%s(const rk__klaunch_t *rk__L, "
                    "uint64_t rk__n, const uint32_t *rk__stride, void *const "
                    "*rk__a) {\n",
                    k->name);
  emit_param_loads(sb, k);
  rk__strbuf_puts(
      sb,
      "  (void)rk__a;\n"
      "  (void)rk__stride;\n"
      "  rk__kstate_t *rk__s = rk__L->state ? rk__L->state : &rk__k;\n"
      "#if defined(__GNUC__)\n"
      "  __asm__(\"\" : \"+r\"(rk__s));\n"
      "#endif\n"
      "  for (int i = 0; i < 3; ++i) {\n"
      "    RK__PUT(rk__s->bdim[i], 1u);\n"
      "    RK__PUT(rk__s->gdim[i], 1u);\n"
      "    RK__PUT(rk__s->bid[i], 0u);\n"
      "    RK__PUT(rk__s->tid[i], 0u);\n"
      "  }\n"
      "  RK__PUT(rk__s->dyn_shared, rk__L->dyn_shared);\n"
      "  RK__PUT(rk__s->barrier, rk__L->barrier);\n"
      "  RK__PUT(rk__s->sched, rk__L->sched);\n"
      "  for (uint64_t rk__m = 0; rk__m < rk__n; ++rk__m) {\n"
      "    ");
  /* Thread 0's part of the handler's kernel (rk/codegen.h): the wrapper
   * runs it as that thread, so the kernel's test of its thread index,
   * which reads the thread-local state, is left out. */
  rk__strbuf_printf(sb, RK_CODEGEN_C_THREAD0_PREFIX "%s(", k->name);
  for (size_t i = 0; i < k->param_count; ++i) {
    if (i) rk__strbuf_puts(sb, ", ");
    if (k->params[i].kind == RK_ARG_PTR)
      rk__strbuf_printf(sb,
                        "(%s)((uintptr_t)rk__p%zu + rk__m * rk__stride[%zu])",
                        k->params[i].type, i, i);
    else
      rk__strbuf_printf(sb, "rk__p%zu", i);
  }
  rk__strbuf_puts(sb, ");\n  }\n}\n");
}

/* The launch wrappers and the module table of every entry point, from the
 * front end's description of them. */
static void emit_wrappers(rk__strbuf_t *sb, const rk_entry_list_t *list) {
  bool uses_barrier = false;
  rk__strbuf_puts(sb,
                  "\n#line 1 \"<rk cpu wrapper>\"\n"
                  "#define RK__PUT(lv, v)  \\\n"
                  "  do {                \\\n"
                  "    if ((lv) != (v))  \\\n"
                  "      (lv) = (v);     \\\n"
                  "  } while (0)\n");
  for (size_t n = 0; n < list->count; ++n) {
    const rk_entry_t *k = &list->entries[n];
    uses_barrier |= k->uses_barrier;
    rk__strbuf_printf(
        sb,
        "static void rk__blocks_%s(const rk__klaunch_t *rk__L, uint64_t "
        "rk__first, uint64_t rk__end, void *const *rk__a) {\n",
        k->name);
    emit_param_loads(sb, k);
    /* The thread-local state's address once (in a shared module every
     * access may look it up again; the empty asm keeps the compiler from
     * doing so), and the block index carried from block to block:
     * divisions only for a call that starts past block 0 (an actor's
     * handler runs block 0 once per message). The state is stored only
     * where it changes: on an actor's worker, which runs the same launch
     * for every message, the stores would otherwise queue behind the store
     * to the response slot, whose line is in the sender's cache, and
     * stall the loop. */
    rk__strbuf_puts(
        sb,
        "  (void)rk__a;\n"
        "  rk__kstate_t *rk__s = rk__L->state ? rk__L->state : &rk__k;\n"
        "#if defined(__GNUC__)\n"
        "  __asm__(\"\" : \"+r\"(rk__s)); /* kept, not looked up again */\n"
        "#endif\n"
        "  for (int i = 0; i < 3; ++i) {\n"
        "    RK__PUT(rk__s->bdim[i], rk__L->block[i]);\n"
        "    RK__PUT(rk__s->gdim[i], rk__L->grid[i]);\n"
        "  }\n"
        "  RK__PUT(rk__s->dyn_shared, rk__L->dyn_shared);\n"
        "  RK__PUT(rk__s->barrier, rk__L->barrier);\n"
        "  RK__PUT(rk__s->sched, rk__L->sched);\n"
        "  const uint64_t gx = rk__L->grid[0], gy = rk__L->grid[1];\n"
        "  const uint32_t bx = rk__L->block[0], by = rk__L->block[1],\n"
        "                 bz = rk__L->block[2];\n"
        "  uint64_t cx = 0, cy = 0, cz = 0;\n"
        "  if (rk__first) {\n"
        "    cx = rk__first % gx;\n"
        "    cy = (rk__first / gx) % gy;\n"
        "    cz = rk__first / (gx * gy);\n"
        "  }\n"
        "  for (uint64_t b = rk__first; b < rk__end; ++b) {\n"
        "    RK__PUT(rk__s->bid[0], (uint32_t)cx);\n"
        "    RK__PUT(rk__s->bid[1], (uint32_t)cy);\n"
        "    RK__PUT(rk__s->bid[2], (uint32_t)cz);\n"
        "    for (uint32_t z = 0; z < bz; ++z) {\n"
        "      RK__PUT(rk__s->tid[2], z);\n"
        "      for (uint32_t y = 0; y < by; ++y) {\n"
        "        RK__PUT(rk__s->tid[1], y);\n"
        "        for (uint32_t x = 0; x < bx; ++x) {\n"
        "          rk__s->tid[0] = x;\n"
        "          ");
    emit_call(sb, k);
    rk__strbuf_puts(sb,
                    "        }\n      }\n    }\n"
                    "    if (++cx == gx) {\n"
                    "      cx = 0;\n"
                    "      if (++cy == gy) {\n"
                    "        cy = 0;\n"
                    "        ++cz;\n"
                    "      }\n"
                    "    }\n"
                    "  }\n}\n");

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
    if (has_slots(k)) emit_slots(sb, k);

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
                        "rk__thread_%s, ",
                        k->name, k->param_count, k->name, k->name, k->name);
    else
      rk__strbuf_printf(sb, "  {\"%s\", 0, 0, rk__blocks_%s, rk__thread_%s, ",
                        k->name, k->name, k->name);
    if (has_slots(k))
      rk__strbuf_printf(sb, "rk__slots_%s},\n", k->name);
    else
      rk__strbuf_puts(sb, "0},\n");
  }
  if (list->count == 0) rk__strbuf_puts(sb, "  {0, 0, 0, 0, 0, 0},\n");
  rk__strbuf_printf(sb,
                    "};\n"
                    "static rk__kstate_t *rk__state(void) { return &rk__k; }\n"
                    "__attribute__((visibility(\"default\"))) const "
                    "rk__kmodule_t rk__module = {RK__CPU_ABI_MAGIC, "
                    "RK__CPU_ABI_VERSION, %d, %zu, rk__entries, rk__state};\n",
                    uses_barrier ? 1 : 0, list->count);
}

/* ---- Compiler and private directory ------------------------------------ */

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

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  remove(path);
  return 0;
}

/* Private directories are named rk-cache-<pid>-XXXXXX. A process that ends
 * without destroying its contexts (killed, crashed, exit() on an error
 * path) leaves its directory behind; the first private directory a process
 * makes sweeps those of processes gone: this user's own directories (not
 * links) under $TMPDIR (or /tmp) whose pid is not running. A pid reused since
 * is taken for its process's and left alone. */
static void sweep_once(void) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  DIR *d = opendir(tmp);
  if (!d) return;
  const uid_t uid = getuid();
  const pid_t self = getpid();
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end = NULL;
    if (strncmp(e->d_name, "rk-cache-", 9) != 0) continue;
    errno = 0;
    const long pid = strtol(e->d_name + 9, &end, 10);
    if (errno || end == e->d_name + 9 || *end != '-' || strlen(end) != 7 ||
        pid <= 0 || pid == (long)self)
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive */
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", tmp, e->d_name);
    if (n < 0 || (size_t)n >= sizeof path) continue;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
      continue;
    nftw(path, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  }
  closedir(d);
}

/* The context's private directory (see cpu_context_t), made on first use. */
static rk_status_t private_dir(cpu_context_t *ctx, char *out) {
  pthread_mutex_lock(&ctx->dir_lock);
  if (!ctx->private_dir[0]) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    static pthread_once_t swept = PTHREAD_ONCE_INIT;
    pthread_once(&swept, sweep_once);
    char dir[sizeof ctx->private_dir];
    int n = snprintf(dir, sizeof dir, "%s/rk-cache-%ld-XXXXXX", tmp,
                     (long)getpid());
    if (n < 0 || (size_t)n >= sizeof dir || !mkdtemp(dir)) {
      int e = n < 0 || (size_t)n >= sizeof dir ? ENAMETOOLONG : errno;
      pthread_mutex_unlock(&ctx->dir_lock);
      return rk__fail(RK_ERR_UNAVAILABLE,
                      "cpu: no private directory for the compiler's files "
                      "could be made in '%s' (set TMPDIR): %s",
                      tmp, strerror(e));
    }
    memcpy(ctx->private_dir, dir, sizeof dir);
  }
  memcpy(out, ctx->private_dir, sizeof ctx->private_dir);
  pthread_mutex_unlock(&ctx->dir_lock);
  return RK_OK;
}

void rk__cpu_private_dir_remove(cpu_context_t *ctx) {
  if (ctx->private_dir[0])
    nftw(ctx->private_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
  ctx->private_dir[0] = '\0';
}

/* Writes kernel.h under the private directory dir (once) and returns the -I
 * directory. */
static rk_status_t install_header(const char *dir, char *out) {
  RK_RETURN_IF_ERROR(pathf(out, "%s/include", dir));
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

/* Loaded modules are at most this large (a cache entry above it is
 * refused). */
static const size_t kMaxImage = (size_t)1 << 30;

/* The name a memory file is loaded by, which becomes the module's name in
 * the loader's list: /proc/PID/fd/N, which names the file from any
 * process. A debugger or profiler reads that list and opens each name in
 * its own process, where /proc/self/fd/N is one of its own files (gdb hung
 * attaching, opening a pipe of its own). */
static void fd_name(int fd, char out[48]) {
  snprintf(out, 48, "/proc/%ld/fd/%d", (long)getpid(), fd);
}

#if RK__LINUX && defined(MFD_ALLOW_SEALING)
/* Set once /proc/PID/fd/N has been seen to name this process's file N
 * (procfs is mounted there); then later copies skip that check. */
static int g_proc_fd_works;

/* The image in a sealed memory file: once sealed, no process can write,
 * shrink or grow it, so what the loader maps is exactly `data`. -1 when
 * memory files or /proc/PID/fd are not available here. */
static int sealed_copy(const void *data, size_t size) {
  int fd = memfd_create("rk-cpu-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  const char *p = data;
  size_t left = size;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= (size_t)w;
  }
  char name[48];
  fd_name(fd, name);
  struct stat a, b;
  if (left != 0 ||
      fcntl(fd, F_ADD_SEALS,
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    close(fd);
    return -1;
  }
  if (!__atomic_load_n(&g_proc_fd_works, __ATOMIC_RELAXED)) {
    if (fstat(fd, &a) != 0 || stat(name, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
      close(fd);
      return -1;
    }
    __atomic_store_n(&g_proc_fd_works, 1, __ATOMIC_RELAXED);
  }
  return fd;
}
#else
static int sealed_copy(const void *data, size_t size) {
  (void)data;
  (void)size;
  return -1;
}
#endif

/* dlclose, then the memory file. While the dynamic loader still holds the
 * object (dlclose does not always unload), its file number keeps naming it:
 * the file stays open so that the number is not reused for another module,
 * which the loader would take for this one. */
static void unload(void *dl, int fd) {
  dlclose(dl);
  if (fd < 0) return;
  char name[48];
  fd_name(fd, name);
  void *still = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
  if (still) {
    dlclose(still);
    return;
  }
  dlerror();
  close(fd);
}

/* Loads the shared object `data` (from the cache or the compiler; nentries:
 * the entries it must have, SIZE_MAX for a cache hit, whose bytes were
 * checked against their checksum) from a
 * private copy: a sealed memory file where possible (see sealed_copy), else a
 * new file in the context's private directory, removed once loaded. Nothing
 * is mapped from the cache directory, so a damaged or replaced entry there
 * cannot change a loaded module. *out_fd is the memory file or -1. */
static rk_status_t load_image(cpu_context_t *ctx, const void *data, size_t size,
                              size_t nentries, const char *source_name,
                              void **out_dl, const rk__kmodule_t **out_desc,
                              int *out_fd) {
  static unsigned long counter;
  char path[kPathMax];
  int fd = sealed_copy(data, size);
  if (fd >= 0) {
    fd_name(fd, path);
  } else {
    char dir[kPathMax];
    RK_RETURN_IF_ERROR(private_dir(ctx, dir));
    unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    RK_RETURN_IF_ERROR(pathf(path, "%s/load-%lu.so", dir, n));
    int w =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w < 0)
      return rk__fail(RK_ERR_UNAVAILABLE, "cpu: cannot create '%s': %s", path,
                      strerror(errno));
    const char *p = data;
    size_t left = size;
    while (left > 0) {
      ssize_t r = write(w, p, left);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      p += r;
      left -= (size_t)r;
    }
    int e = errno;
    if (close(w) != 0 && left == 0) {
      e = errno;
      left = 1;
    }
    if (left != 0) {
      unlink(path);
      return rk__fail(RK_ERR_UNAVAILABLE, "cpu: cannot write '%s': %s", path,
                      strerror(e));
    }
  }
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (fd < 0) unlink(path);
  if (!dl) {
    rk__fail(RK_ERR_COMPILE, "%s: cannot load the compiled module: %s",
             source_name, dlerror());
    if (fd >= 0) close(fd);
    return RK_ERR_COMPILE;
  }
  const rk__kmodule_t *desc = dlsym(dl, "rk__module");
  if (!desc || desc->magic != RK__CPU_ABI_MAGIC ||
      desc->version != RK__CPU_ABI_VERSION ||
      (nentries != SIZE_MAX && desc->nentries != nentries)) {
    unload(dl, fd);
    return rk__fail(RK_ERR_COMPILE,
                    "%s: the compiled module is not a module of this rk "
                    "version",
                    source_name);
  }
  *out_dl = dl;
  *out_desc = desc;
  *out_fd = fd;
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

static rk_status_t make_module(void *dl, int fd, const rk__kmodule_t *desc,
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
    unload(dl, fd);
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
  m->image_fd = fd;
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

/* Runs the compiler on `text` in the context's private directory and reads
 * the shared object it wrote into *out_image (malloc'd). */
static rk_status_t build_image(cpu_context_t *ctx, const compiler_t *cc,
                               const char *name, const char *key,
                               const rk__strbuf_t *text, char **out_image,
                               size_t *out_size) {
  static unsigned long counter;
  unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char dir[kPathMax], include_dir[kPathMax], c_path[kPathMax], so[kPathMax];
  RK_RETURN_IF_ERROR(private_dir(ctx, dir));
  RK_RETURN_IF_ERROR(install_header(dir, include_dir));
  RK_RETURN_IF_ERROR(pathf(c_path, "%s/%s-%lu.c", dir, key, n));
  RK_RETURN_IF_ERROR(pathf(so, "%s/%s-%lu.so", dir, key, n));
  RK_RETURN_IF_ERROR(rk__write_file_atomic(c_path, text->data, text->len));
  rk_status_t s = run_compiler(cc, include_dir, c_path, so, name);
  unlink(c_path);
  if (s != RK_OK) return s;
  s = rk__read_file(so, out_image, out_size);
  unlink(so);
  if (s == RK_OK && *out_size > kMaxImage) {
    free(*out_image);
    s = rk__fail(RK_ERR_COMPILE, "%s: the compiled module has %zu bytes", name,
                 *out_size);
  }
  return s;
}

/* Front end, wrappers, compiler: the module's image, built in the private
 * directory; *out_nentries is the number of entry points it has. */
static rk_status_t build(cpu_context_t *ctx, const compiler_t *cc,
                         const char *source,
                         const rk_compile_options_t *options, const char *name,
                         const char *key, char **out_image, size_t *out_size,
                         size_t *out_nentries) {
  rk_codegen_result_t r;
  RK_RETURN_IF_ERROR(
      rk__kernel_front_end(source, options, RK_TARGET_C, NULL, &r));
  *out_nentries = r.entries->count;
  rk__strbuf_t text;
  rk__strbuf_init(&text);
  rk__strbuf_puts(&text, r.text);
  emit_wrappers(&text, r.entries);
  rk_codegen_result_free(&r);
  rk_status_t s =
      text.failed ? rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: wrapper") : RK_OK;
  if (s == RK_OK)
    s = build_image(ctx, cc, name, key, &text, out_image, out_size);
  rk__strbuf_free(&text);
  return s;
}

/* The start of every cache key: the kernel header and the transpiler's id,
 * the same for the life of the process, hashed once. */
static pthread_once_t g_key_prefix_once = PTHREAD_ONCE_INIT;
static rk__hash_t g_key_prefix;

static void key_prefix_init(void) {
  rk__hash_init(&g_key_prefix);
  rk__hash_update(&g_key_prefix, rk__kernel_header_text,
                  rk__kernel_header_size);
  rk__hash_str(&g_key_prefix, rk__codegen_id);
}

rk_status_t rk__cpu_compile(rk_context_t *context, const char *source,
                            const rk_compile_options_t *options,
                            rk_module_t **out_module) {
  cpu_context_t *ctx = cpu_ctx(context);
  const char *name = rk__kernel_source_name(options);
  compiler_t cc;
  char version[512];
  RK_RETURN_IF_ERROR(find_compiler(&cc));
  RK_RETURN_IF_ERROR(compiler_version(&cc, version, sizeof version));

  /* The key: everything the image depends on, the source and defines as
   * given (the front end and printers are named by rk__codegen_id). */
  rk__hash_t h;
  char key[33];
  pthread_once(&g_key_prefix_once, key_prefix_init);
  h = g_key_prefix;          /* the kernel header and the codegen id */
  rk__hash_str(&h, cc.spec); /* extra words such as "-include x.h" */
  rk__hash_str(&h, version);
  for (size_t i = 0; i < sizeof kFlags / sizeof kFlags[0]; ++i)
    rk__hash_str(&h, kFlags[i]);
  rk__hash_str(&h, context->info.name);
  if (options->defines)
    for (const char *const *d = options->defines; *d; ++d) rk__hash_str(&h, *d);
  rk__hash_str(&h, "\n-- source --\n");
  rk__hash_str(&h, source);
  rk__hash_hex(&h, key);

  /* The cache entry, when there is a cache directory rk may use. Neither a
   * refused directory nor a missing, damaged or refused entry is an error:
   * the module is built in the private directory instead. */
  char cache[kPathMax], entry[kPathMax] = "", refused[512] = "";
  void *dl = NULL;
  const rk__kmodule_t *desc = NULL;
  int fd = -1;
  bool hit = false;
  if (!options->no_cache) {
    char *saved = rk__error_save();
    if (rk__cache_dir("cpu", cache, sizeof cache) != RK_OK ||
        pathf(entry, "%s/%s.so", cache, key) != RK_OK) {
      snprintf(refused, sizeof refused, "%s", rk_last_error());
      entry[0] = '\0';
    }
    void *image = NULL;
    size_t size = 0;
    if (entry[0] &&
        rk__cache_read(entry, key, kMaxImage, &image, &size) == RK_OK) {
      hit = load_image(ctx, image, size, SIZE_MAX, name, &dl, &desc, &fd) ==
            RK_OK;
      free(image);
    }
    rk__error_restore(saved);
  }

  rk_status_t s = RK_OK;
  if (!hit) {
    char *image = NULL;
    size_t size = 0, nentries = 0;
    s = build(ctx, &cc, source, options, name, key, &image, &size, &nentries);
    if (s != RK_OK && s != RK_ERR_COMPILE && refused[0]) {
      /* Both the cache and the private directory failed: say both. */
      char why[1024];
      snprintf(why, sizeof why, "%s", rk_last_error());
      rk__fail(s, "%s (and the kernel cache is not used: %s)", why, refused);
    }
    if (s == RK_OK && entry[0]) {
      /* A cache that cannot be written (full, read-only) only costs the
       * next build. */
      char *saved = rk__error_save();
      rk__cache_write(entry, key, image, size);
      rk__error_restore(saved);
    }
    if (s == RK_OK)
      s = load_image(ctx, image, size, nentries, name, &dl, &desc, &fd);
    free(image);
  }
  if (s == RK_OK) s = check_struct_sizes(desc);
  if (s == RK_OK)
    s = make_module(dl, fd, desc, hit, out_module);
  else if (dl)
    unload(dl, fd);
  return s;
}

void rk__cpu_module_destroy(rk_module_t *module) {
  cpu_module_t *m = (cpu_module_t *)module;
  unload(m->dl, m->image_fd);
  free(m->params);
  free(m->base.functions);
  free(m);
}
