/* CTS driver: runs every case of CTS_CASES on device 0 of every backend kind
 * that opens here, each case on a fresh context.
 *
 *   cts                 all cases on all available backends
 *   cts shared atomic   only cases whose name contains one of the words
 *   cts -overflow       all cases but those whose name contains "overflow"
 *
 * With RK_CTS_32BIT=1 in the environment, cases that pass 64-bit values run
 * their 32-bit form on every device (as on devices without 64-bit types).
 * RK_CTS_BACKENDS=name[,name...] runs only those backend kinds (the Metal
 * backend on the tests' fake device, say: cts_metal_fake).
 */
#define RK_TEST_IMPLEMENTATION
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cts.h"

typedef struct cts_case {
  const char *name;
  void (*run)(rk_context_t *ctx);
} cts_case_t;

static const cts_case_t kCases[] = {
#define CTS_ENTRY_(name) {#name, cts_##name},
    CTS_CASES(CTS_ENTRY_)
#undef CTS_ENTRY_
};

static const rk_backend_kind_t kKinds[] = {RK_BACKEND_CPU, RK_BACKEND_CUDA,
                                           RK_BACKEND_METAL, RK_BACKEND_WEBGPU,
                                           RK_BACKEND_OPENCL};

static rk_backend_t *g_backend;
static rk_device_info_t g_device;

const rk_device_info_t *cts_device(void) { return &g_device; }
rk_backend_t *cts_backend(void) { return g_backend; }

/* ---- Helpers used by the cases ----------------------------------------- */

rk_module_t *cts_compile(rk_context_t *ctx, const char *source_name,
                         const char *source) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = source_name;
  rk_module_t *mod = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, source, &opt, &mod))) return NULL;
  return mod;
}

rk_function_t *cts_function(rk_module_t *mod, const char *name) {
  if (!mod) return NULL;
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_module_get_function(mod, name, &fn))) return NULL;
  return fn;
}

rk_devptr_t cts_alloc(rk_context_t *ctx, size_t bytes, const void *host) {
  rk_devptr_t p = 0;
  if (!CHECK_OK(rk_context_allocate(ctx, bytes, &p))) return 0;
  if (host && !CHECK_OK(rk_context_copy_to_device(ctx, p, host, bytes)))
    return 0;
  return p;
}

static bool forced_32bit(void) {
  const char *v = getenv("RK_CTS_32BIT");
  return v && strcmp(v, "1") == 0;
}

bool cts_has_64bit(void) {
  const uint32_t need = RK_CAP_INT64 | RK_CAP_F64;
  return (g_device.caps & need) == need && !forced_32bit();
}

void cts_not_checked(const char *case_name, const char *what) {
  bool no_int64 = !(g_device.caps & RK_CAP_INT64);
  bool no_f64 = !(g_device.caps & RK_CAP_F64);
  const char *why = no_int64 && no_f64 ? "the device has no 64-bit types"
                    : no_int64         ? "the device has no 64-bit integers"
                    : no_f64           ? "the device has no double"
                                       : "RK_CTS_32BIT=1 is set";
  printf("[%s] %s: %s not checked: %s\n", rk_backend_name(g_backend), case_name,
         what, why);
}

uint32_t cts_rand(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

bool cts_close(double got, double want, double rel) {
  double scale = want < 0 ? -want : want;
  if (scale < 1) scale = 1;
  double diff = got - want;
  if (diff < 0) diff = -diff;
  return diff <= rel * scale;
}

/* ---- Driver ------------------------------------------------------------- */

/* A case that does not finish within RK_CTS_CASE_LIMIT seconds (120 by
 * default) ends the run with its name, instead of a silent hang until
 * ctest's timeout: a driver that blocks where rk expects it not to (a
 * stream copy that waits for a kernel, say) is named. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t done_cv;
  bool done;
  const char *backend, *name;
  long limit_s;
} watchdog_t;

static void *watchdog_main(void *arg) {
  watchdog_t *w = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += w->limit_s;
  pthread_mutex_lock(&w->lock);
  int rc = 0;
  while (!w->done && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&w->done_cv, &w->lock, &until);
  const bool hung = !w->done;
  pthread_mutex_unlock(&w->lock);
  if (hung) {
    printf(
        "[%s] case %s ... HUNG: not finished after %ld s "
        "(RK_CTS_CASE_LIMIT); the run stops here\n",
        w->backend, w->name, w->limit_s);
    fflush(stdout);
    _exit(1);
  }
  return NULL;
}

static long case_limit_s(void) {
  const char *v = getenv("RK_CTS_CASE_LIMIT");
  long n = v && *v ? strtol(v, NULL, 10) : 0;
  return n > 0 ? n : 120;
}

/* Words select cases whose names contain them; "-word" excludes them. */
static bool selected(const char *name, int argc, char **argv) {
  bool any_include = false, included = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      if (strstr(name, argv[i] + 1)) return false;
    } else {
      any_include = true;
      included = included || strstr(name, argv[i]) != NULL;
    }
  }
  return !any_include || included;
}

/* Runs the cases on device 0 of `be`; returns how many cases failed. */
static int run_backend(rk_backend_t *be, int argc, char **argv) {
  const char *bname = rk_backend_name(be);
  g_backend = be;
  if (!CHECK_OK(rk_backend_device_info(be, 0, &g_device))) return 1;
  printf(
      "[%s] device 0: %s (%s), %u compute units, %u threads/block, %llu bytes "
      "shared/block\n",
      bname, g_device.name, g_device.vendor, g_device.compute_units,
      g_device.max_threads_per_block,
      (unsigned long long)g_device.shared_mem_per_block);
  int failed_cases = 0;
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    if (!selected(kCases[i].name, argc, argv)) continue;
    int before = rk_test_failures;
    watchdog_t dog = {PTHREAD_MUTEX_INITIALIZER,
                      PTHREAD_COND_INITIALIZER,
                      false,
                      bname,
                      kCases[i].name,
                      case_limit_s()};
    pthread_t dog_thread;
    const bool watched =
        pthread_create(&dog_thread, NULL, watchdog_main, &dog) == 0;
    rk_context_t *ctx = NULL;
    if (CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
      kCases[i].run(ctx);
      /* A case leaves no unreported asynchronous error behind. */
      CHECK_OK(rk_context_synchronize(ctx));
      CHECK_OK(rk_context_destroy(ctx));
    }
    if (watched) {
      pthread_mutex_lock(&dog.lock);
      dog.done = true;
      pthread_cond_signal(&dog.done_cv);
      pthread_mutex_unlock(&dog.lock);
      pthread_join(dog_thread, NULL);
    }
    bool ok = rk_test_failures == before;
    printf("[%s] case %s ... %s\n", bname, kCases[i].name, ok ? "ok" : "FAIL");
    fflush(stdout);
    if (!ok) ++failed_cases;
  }
  g_backend = NULL;
  return failed_cases;
}

/* Whether `name` is one of the comma-separated names in `list`. */
static bool name_listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len;
    if (*p) ++p;
  }
  return false;
}

int main(int argc, char **argv) {
  rk_test_use_temp_cache();
  int ran = 0, failed_cases = 0;
  char skipped[4096] = "";
  size_t used = 0;
  const char *only = getenv("RK_CTS_BACKENDS");
  for (size_t k = 0; k < sizeof kKinds / sizeof kKinds[0]; ++k) {
    const char *kname = rk_backend_kind_name(kKinds[k]);
    if (only && *only && !name_listed(only, kname)) continue;
    rk_backend_t *be = NULL;
    rk_status_t s = rk_backend_open(kKinds[k], &be);
    char why[1024] = "";
    if (s != RK_OK) {
      snprintf(why, sizeof why, "%s: %s", rk_status_name(s), rk_last_error());
      /* The CPU backend is always built in and always opens. */
      CHECK(kKinds[k] != RK_BACKEND_CPU, "the cpu backend did not open: %s",
            why);
    } else if (rk_backend_device_count(be) < 1) {
      snprintf(why, sizeof why, "no devices");
      CHECK(kKinds[k] != RK_BACKEND_CPU, "the cpu backend has no device");
    } else {
      failed_cases += run_backend(be, argc, argv);
      ++ran;
    }
    if (be) CHECK_OK(rk_backend_destroy(be));
    if (why[0]) {
      printf("[%s] skipped: %s\n", kname, why);
      int w = snprintf(skipped + used, sizeof skipped - used, "  %s: %s\n",
                       kname, why);
      if (w > 0 && used + (size_t)w < sizeof skipped) used += (size_t)w;
    }
  }
  printf("\nbackends run: %d; skipped:\n%s", ran, used ? skipped : "  none\n");
  if (failed_cases) printf("%d case(s) FAILED\n", failed_cases);
  if (ran == 0 && rk_test_failures == 0)
    RK_TEST_SKIP("no backend with a device could be opened");
  return rk_test_finish("cts");
}
