/* HAL: backend selection and its overrides, kind names, backend lifetime,
 * device info and device indices. */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "rk_test.h"

static const rk_backend_kind_t kGpuKinds[] = {
    RK_BACKEND_CUDA, RK_BACKEND_METAL, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL};

/* Whether this build of librk has a backend of `kind` at all. */
static bool built_in(rk_backend_kind_t kind) {
  size_t n = 0;
  const rk__backend_vtable_t *const *reg = rk__backend_registry(&n);
  for (size_t i = 0; i < n; ++i)
    if (reg[i]->kind == kind) return true;
  return false;
}

static bool only_cpu_built(void) {
  for (size_t i = 0; i < sizeof kGpuKinds / sizeof kGpuKinds[0]; ++i)
    if (built_in(kGpuKinds[i])) return false;
  return built_in(RK_BACKEND_CPU);
}

/* Opens with RK_BACKEND set to `env` (unset when NULL); returns the status
 * and the kind opened (RK_BACKEND_AUTO when none). */
static rk_status_t open_auto_with_env(const char *env,
                                      rk_backend_kind_t *out_kind) {
  if (env)
    setenv("RK_BACKEND", env, 1);
  else
    unsetenv("RK_BACKEND");
  rk_backend_t *be = NULL;
  rk_test_clear_error();
  rk_status_t s = rk_backend_open(RK_BACKEND_AUTO, &be);
  *out_kind = be ? rk_backend_kind(be) : RK_BACKEND_AUTO;
  if (s != RK_OK)
    CHECK(be == NULL, "RK_BACKEND=%s: a failed open set *out_backend",
          env ? env : "(unset)");
  if (be) CHECK_OK(rk_backend_destroy(be));
  unsetenv("RK_BACKEND");
  return s;
}

/* ---- Selection ---------------------------------------------------------- */

static void test_auto_selection(void) {
  rk_backend_kind_t kind;
  CHECK_OK(open_auto_with_env(NULL, &kind));
  if (only_cpu_built())
    CHECK(kind == RK_BACKEND_CPU, "auto picked %s in a CPU-only build",
          rk_backend_kind_name(kind));
  /* Whatever is built: auto picks the first kind, in the documented order,
   * that opens with a device that is not a software emulation. */
  static const rk_backend_kind_t kOrder[] = {RK_BACKEND_CUDA, RK_BACKEND_METAL,
                                             RK_BACKEND_WEBGPU,
                                             RK_BACKEND_OPENCL, RK_BACKEND_CPU};
  rk_backend_kind_t expected = RK_BACKEND_AUTO;
  for (size_t i = 0; i < 5 && expected == RK_BACKEND_AUTO; ++i) {
    rk_backend_t *be = NULL;
    if (rk_backend_open(kOrder[i], &be) != RK_OK) continue;
    for (int d = 0; d < rk_backend_device_count(be); ++d) {
      rk_device_info_t info;
      if (rk_backend_device_info(be, d, &info) == RK_OK &&
          !(info.caps & RK_CAP_SOFTWARE))
        expected = kOrder[i];
    }
    CHECK_OK(rk_backend_destroy(be));
  }
  CHECK(kind == expected, "auto picked %s, expected %s",
        rk_backend_kind_name(kind), rk_backend_kind_name(expected));
  /* RK_BACKEND empty or "auto" means no override. */
  rk_backend_kind_t k2;
  CHECK_OK(open_auto_with_env("", &k2));
  CHECK(k2 == kind, "RK_BACKEND='' picked %s", rk_backend_kind_name(k2));
  CHECK_OK(open_auto_with_env("auto", &k2));
  CHECK(k2 == kind, "RK_BACKEND=auto picked %s", rk_backend_kind_name(k2));
}

/* A successful open leaves the thread's last message alone, even when
 * auto-selection tried (and failed to open) other backends first. */
static void test_success_keeps_message(void) {
  rk_backend_kind_t k;
  CHECK_STATUS(rk_backend_kind_from_name("sentinel-name", &k),
               RK_ERR_INVALID_ARGUMENT);
  rk_backend_t *be = NULL;
  unsetenv("RK_BACKEND");
  CHECK_OK(rk_backend_open(RK_BACKEND_AUTO, &be));
  CHECK_OK(rk_backend_destroy(be));
  CHECK(strstr(rk_last_error(), "sentinel-name") != NULL,
        "a successful rk_backend_open(RK_BACKEND_AUTO) replaced the last error "
        "message with: %s",
        rk_last_error());
}

static void test_env_override(void) {
  rk_backend_kind_t kind;
  CHECK_OK(open_auto_with_env("cpu", &kind));
  CHECK(kind == RK_BACKEND_CPU, "RK_BACKEND=cpu opened %s",
        rk_backend_kind_name(kind));
  CHECK_OK(open_auto_with_env("CPU", &kind));
  CHECK(kind == RK_BACKEND_CPU, "RK_BACKEND=CPU opened %s",
        rk_backend_kind_name(kind));

  /* A named backend that is absent is an error, never a fallback. */
  for (size_t i = 0; i < sizeof kGpuKinds / sizeof kGpuKinds[0]; ++i) {
    const char *name = rk_backend_kind_name(kGpuKinds[i]);
    if (built_in(kGpuKinds[i])) {
      printf("note: %s is built in; RK_BACKEND=%s not checked for absence\n",
             name, name);
      continue;
    }
    rk_status_t s = open_auto_with_env(name, &kind);
    CHECK(s == RK_ERR_UNAVAILABLE, "RK_BACKEND=%s returned %s (opened %s)",
          name, rk_status_name(s), rk_backend_kind_name(kind));
    CHECK_ERROR_HAS(name);
    CHECK_ERROR_HAS("RK_BACKEND");
  }

  rk_status_t s = open_auto_with_env("bogus", &kind);
  CHECK(s == RK_ERR_INVALID_ARGUMENT, "RK_BACKEND=bogus returned %s",
        rk_status_name(s));
  CHECK_ERROR_HAS("bogus");
  static const char *const kKnown[] = {"cpu", "cuda", "metal", "webgpu",
                                       "opencl"};
  for (size_t i = 0; i < 5; ++i) CHECK_ERROR_HAS(kKnown[i]);

  /* An explicit kind ignores RK_BACKEND. */
  setenv("RK_BACKEND", "bogus", 1);
  rk_backend_t *be = NULL;
  CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be));
  CHECK(be && rk_backend_kind(be) == RK_BACKEND_CPU, "explicit cpu");
  CHECK_OK(rk_backend_destroy(be));
  unsetenv("RK_BACKEND");
}

static void test_explicit_kinds(void) {
  for (size_t i = 0; i < sizeof kGpuKinds / sizeof kGpuKinds[0]; ++i) {
    if (built_in(kGpuKinds[i])) continue;
    rk_backend_t *be = (rk_backend_t *)0x1;
    CHECK_STATUS(rk_backend_open(kGpuKinds[i], &be), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS(rk_backend_kind_name(kGpuKinds[i]));
    CHECK(be == (rk_backend_t *)0x1, "%s: a failed open set *out_backend",
          rk_backend_kind_name(kGpuKinds[i]));
  }
  rk_backend_t *be = NULL;
  CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be));
  CHECK(be && rk_backend_kind(be) == RK_BACKEND_CPU, "cpu kind");
  CHECK(be && strcmp(rk_backend_name(be), "cpu") == 0, "cpu name '%s'",
        be ? rk_backend_name(be) : "");
  CHECK_OK(rk_backend_destroy(be));
  CHECK_STATUS(rk_backend_open((rk_backend_kind_t)99, &be),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("99");
  CHECK_STATUS(rk_backend_open(RK_BACKEND_KIND_COUNT_, &be),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_backend_open((rk_backend_kind_t)-1, &be),
               RK_ERR_INVALID_ARGUMENT);
}

/* ---- What a build has, what a backend loaded ---------------------------- */

/* rk_backend_kind_built_in agrees with the registry; rk_backend_library
 * names the vendor library of every backend that has one. */
static void test_built_in_and_library(void) {
  CHECK(!rk_backend_kind_built_in(RK_BACKEND_AUTO), "auto is built in");
  CHECK(!rk_backend_kind_built_in((rk_backend_kind_t)99), "kind 99");
  for (int k = RK_BACKEND_CPU; k < RK_BACKEND_KIND_COUNT_; ++k)
    CHECK(rk_backend_kind_built_in((rk_backend_kind_t)k) ==
              built_in((rk_backend_kind_t)k),
          "%s: built_in disagrees with the registry",
          rk_backend_kind_name((rk_backend_kind_t)k));
  CHECK(strcmp(rk_backend_library(NULL), "") == 0, "library of NULL");
  rk_backend_t *be = NULL;
  if (CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be))) {
    CHECK(strcmp(rk_backend_library(be), "") == 0, "cpu library '%s'",
          rk_backend_library(be));
    CHECK_OK(rk_backend_destroy(be));
  }
  for (size_t i = 0; i < sizeof kGpuKinds / sizeof kGpuKinds[0]; ++i) {
    be = NULL;
    if (rk_backend_open(kGpuKinds[i], &be) != RK_OK) continue;
    const char *lib = rk_backend_library(be);
    CHECK(strstr(lib, ".so") || strstr(lib, ".dylib") || strstr(lib, ".dll"),
          "%s: library '%s' names no library file",
          rk_backend_kind_name(kGpuKinds[i]), lib);
    CHECK_OK(rk_backend_destroy(be));
  }
}

/* ---- Kind names --------------------------------------------------------- */

static void test_kind_names(void) {
  static const char *const kNames[] = {"auto",  "cpu",    "cuda",
                                       "metal", "webgpu", "opencl"};
  for (int k = 0; k < RK_BACKEND_KIND_COUNT_; ++k) {
    const char *name = rk_backend_kind_name((rk_backend_kind_t)k);
    CHECK(strcmp(name, kNames[k]) == 0, "kind %d is '%s', expected '%s'", k,
          name, kNames[k]);
    rk_backend_kind_t back = (rk_backend_kind_t)-1;
    CHECK_OK(rk_backend_kind_from_name(name, &back));
    CHECK(back == (rk_backend_kind_t)k, "'%s' parsed as %d", name, (int)back);
    /* Case-insensitive. */
    char upper[16], mixed[16];
    size_t n = strlen(name);
    for (size_t i = 0; i <= n; ++i) {
      upper[i] =
          (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
      mixed[i] = (char)(i % 2 ? upper[i] : name[i]);
    }
    back = (rk_backend_kind_t)-1;
    CHECK_OK(rk_backend_kind_from_name(upper, &back));
    CHECK(back == (rk_backend_kind_t)k, "'%s' parsed as %d", upper, (int)back);
    back = (rk_backend_kind_t)-1;
    CHECK_OK(rk_backend_kind_from_name(mixed, &back));
    CHECK(back == (rk_backend_kind_t)k, "'%s' parsed as %d", mixed, (int)back);
  }
  CHECK(strcmp(rk_backend_kind_name((rk_backend_kind_t)42), "unknown") == 0,
        "kind 42 is '%s'", rk_backend_kind_name((rk_backend_kind_t)42));
  CHECK(strcmp(rk_backend_kind_name((rk_backend_kind_t)-1), "unknown") == 0,
        "kind -1 is '%s'", rk_backend_kind_name((rk_backend_kind_t)-1));

  static const char *const kBad[] = {"",     "cpux", "cp",
                                     " cpu", "cpu ", "vulkan"};
  for (size_t i = 0; i < sizeof kBad / sizeof kBad[0]; ++i) {
    rk_backend_kind_t k = RK_BACKEND_OPENCL;
    CHECK_STATUS(rk_backend_kind_from_name(kBad[i], &k),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK(k == RK_BACKEND_OPENCL, "'%s': a failed parse wrote its output",
          kBad[i]);
    CHECK_ERROR_HAS("webgpu"); /* lists the known names */
  }
}

/* ---- Backend lifetime --------------------------------------------------- */

static void test_destroy_with_live_context(void) {
  rk_backend_t *be = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be))) return;
  rk_context_t *a = NULL, *b = NULL;
  CHECK_OK(rk_backend_create_context(be, 0, &a));
  CHECK_OK(rk_backend_create_context(be, 0, &b));
  CHECK_STATUS(rk_backend_destroy(be), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("2 context");
  CHECK_OK(rk_context_destroy(a));
  CHECK_STATUS(rk_backend_destroy(be), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("1 context");
  /* The backend is still usable after the refused destroy. */
  rk_device_info_t info;
  CHECK_OK(rk_backend_device_info(be, 0, &info));
  rk_devptr_t p = 0;
  CHECK_OK(rk_context_allocate(b, 64, &p));
  CHECK(rk_context_backend(b) == be, "context's backend");
  CHECK_OK(rk_context_destroy(b));
  CHECK_OK(rk_backend_destroy(be));
}

/* Two backends of the same kind are independent objects. */
static void test_two_backends(void) {
  rk_backend_t *x = NULL, *y = NULL;
  CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &x));
  CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &y));
  CHECK(x && y && x != y, "two opens returned the same object");
  rk_context_t *cx = NULL;
  CHECK_OK(rk_backend_create_context(x, 0, &cx));
  CHECK_OK(rk_backend_destroy(y)); /* y has no contexts */
  CHECK_STATUS(rk_backend_destroy(x), RK_ERR_INVALID_STATE);
  CHECK_OK(rk_context_destroy(cx));
  CHECK_OK(rk_backend_destroy(x));
}

/* ---- Devices ------------------------------------------------------------ */

static void test_device_info(void) {
  rk_backend_t *be = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be))) return;
  CHECK(rk_backend_device_count(be) == 1, "cpu has %d devices",
        rk_backend_device_count(be));
  rk_device_info_t info;
  memset(&info, 0, sizeof info);
  if (CHECK_OK(rk_backend_device_info(be, 0, &info))) {
    CHECK(info.name[0] != '\0', "empty device name");
    CHECK(strnlen(info.name, sizeof info.name) < sizeof info.name,
          "name not terminated");
    CHECK(info.vendor[0] != '\0', "empty vendor");
    CHECK(info.backend == RK_BACKEND_CPU, "backend %d", (int)info.backend);
    CHECK(info.compute_units >= 1, "compute_units %u", info.compute_units);
    CHECK(info.memory_bytes > 0, "memory_bytes 0");
    CHECK(info.max_threads_per_block == 1024, "max_threads_per_block %u",
          info.max_threads_per_block);
    CHECK(info.shared_mem_per_block >= 16 * 1024, "shared_mem_per_block %llu",
          (unsigned long long)info.shared_mem_per_block);
    CHECK(info.caps & RK_CAP_F64, "caps 0x%x lack RK_CAP_F64", info.caps);
    CHECK(info.caps & RK_CAP_INT64, "caps 0x%x lack RK_CAP_INT64", info.caps);
    CHECK(!(info.caps & RK_CAP_SOFTWARE),
          "the native CPU backend is marked as a software emulation");
    printf("cpu device: %s / %s, %u units, %llu bytes\n", info.name,
           info.vendor, info.compute_units,
           (unsigned long long)info.memory_bytes);
  }
  const int bad[] = {-1, 1, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    rk_device_info_t other;
    CHECK_STATUS(rk_backend_device_info(be, bad[i], &other),
                 RK_ERR_OUT_OF_RANGE);
    char num[16];
    snprintf(num, sizeof num, "%d", bad[i]);
    CHECK_ERROR_HAS(num);
    rk_context_t *ctx = (rk_context_t *)0x1;
    CHECK_STATUS(rk_backend_create_context(be, bad[i], &ctx),
                 RK_ERR_OUT_OF_RANGE);
    CHECK(ctx == (rk_context_t *)0x1, "failed create_context wrote output");
  }
  CHECK_OK(rk_backend_destroy(be));
}

int main(void) {
  rk_test_use_temp_cache();
  unsetenv("RK_BACKEND");
  test_auto_selection();
  test_env_override();
  test_success_keeps_message();
  test_explicit_kinds();
  test_built_in_and_library();
  test_kind_names();
  test_destroy_with_live_context();
  test_two_backends();
  test_device_info();
  return rk_test_finish("hal");
}
