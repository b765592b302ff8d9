/* CTS: invalid use is rejected the same way on every backend - the status,
 * a specific message in rk_last_error(), nothing changed, nothing printed,
 * nothing crashed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cts.h"

/* ---- Helpers ------------------------------------------------------------ */

/* The bytes of [p, p+n) on the device equal `want`. */
static bool device_equals(rk_context_t *ctx, rk_devptr_t p, const void *want,
                          size_t n) {
  unsigned char *back = malloc(n);
  bool ok = CHECK_OK(rk_context_copy_to_host(ctx, back, p, n)) &&
            memcmp(back, want, n) == 0;
  free(back);
  return ok;
}

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return false;
  return true;
}

/* rk_last_error() names the device pointer (in hex). */
static void check_error_names_ptr(rk_devptr_t p) {
  char hex[32];
  snprintf(hex, sizeof hex, "%llx", (unsigned long long)p);
  CHECK_ERROR_HAS(hex);
}

/* A second context on the same backend, for foreign pointers and streams. */
static rk_context_t *other_context(void) {
  rk_context_t *c = NULL;
  if (!CHECK_OK(rk_backend_create_context(cts_backend(), 0, &c))) return NULL;
  return c;
}

/* A launch that would run (nearly) forever must not happen: if the call has
 * not returned within `seconds`, report and exit instead of hanging. */
static const char *g_watch_what;
static void watchdog_fired(int sig) {
  (void)sig;
  static const char kMsg[] =
      "\nFAIL: a launch that must be rejected was accepted and is still "
      "running after 20 s:\n";
  ssize_t w = write(1, kMsg, sizeof kMsg - 1);
  w = write(1, g_watch_what, strlen(g_watch_what));
  w = write(1, "\n", 1);
  (void)w;
  /* exit, not _exit, so the temporary cache is removed; the thread that is
   * stuck runs kernel code and holds no lock that exit needs. */
  exit(1);
}
static void watchdog_arm(unsigned seconds, const char *what) {
  g_watch_what = what;
  signal(SIGALRM, watchdog_fired);
  alarm(seconds);
}
static void watchdog_disarm(void) {
  alarm(0);
  signal(SIGALRM, SIG_DFL);
}

/* ---- Copies ------------------------------------------------------------- */

void cts_error_copy_out_of_range(rk_context_t *ctx) {
  enum { kSize = 100 };
  unsigned char pattern[kSize], src[2 * kSize], dst[2 * kSize];
  for (int i = 0; i < kSize; ++i) pattern[i] = (unsigned char)(i * 3 + 1);
  memset(src, 0x77, sizeof src);
  rk_devptr_t p = cts_alloc(ctx, kSize, pattern);
  rk_devptr_t q = cts_alloc(ctx, kSize, pattern);
  rk_stream_t *st = NULL;
  if (!p || !q || !CHECK_OK(rk_context_create_stream(ctx, &st))) return;

  /* To the device: nothing copied. */
  CHECK_STATUS(rk_context_copy_to_device(ctx, p + 50, src, 51),
               RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("destination");
  CHECK_STATUS(rk_context_copy_to_device(ctx, p, src, kSize + 1),
               RK_ERR_OUT_OF_RANGE);
  CHECK(device_equals(ctx, p, pattern, kSize),
        "a rejected copy to the device changed the allocation");

  /* To the host: destination untouched. */
  memset(dst, 0x33, sizeof dst);
  CHECK_STATUS(rk_context_copy_to_host(ctx, dst, p + 1, kSize),
               RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("source");
  CHECK_STATUS(rk_context_copy_to_host(ctx, dst, p, SIZE_MAX),
               RK_ERR_OUT_OF_RANGE);
  /* ptr + n wraps around the address space. */
  CHECK_STATUS(rk_context_copy_to_host(ctx, dst, p + 10, SIZE_MAX - 5),
               RK_ERR_OUT_OF_RANGE);
  CHECK(all_bytes(dst, sizeof dst, 0x33),
        "a rejected copy to the host wrote to its destination");

  /* Device to device, source or destination too long. */
  CHECK_STATUS(rk_context_copy_device_to_device(ctx, q, p + 60, 41),
               RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("source");
  CHECK_STATUS(rk_context_copy_device_to_device(ctx, q + 99, p, 2),
               RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("destination");
  CHECK(device_equals(ctx, q, pattern, kSize),
        "a rejected device-to-device copy changed its destination");

  /* A pointer one past the end is not inside the allocation at all. */
  rk_test_clear_error();
  rk_status_t s = rk_context_copy_to_device(ctx, p + kSize, src, 1);
  CHECK(s == RK_ERR_OUT_OF_RANGE || s == RK_ERR_INVALID_ARGUMENT,
        "copy to one past the end returned %s", rk_status_name(s));
  CHECK(rk_last_error()[0] != '\0', "no message");

  /* Asynchronous copies are checked when queued. */
  CHECK_STATUS(rk_stream_copy_to_device(st, p + 50, src, 51),
               RK_ERR_OUT_OF_RANGE);
  CHECK_STATUS(rk_stream_copy_to_host(st, dst, p + 1, kSize),
               RK_ERR_OUT_OF_RANGE);
  CHECK_STATUS(rk_stream_copy_device_to_device(st, q + 1, p, kSize),
               RK_ERR_OUT_OF_RANGE);
  CHECK_OK(rk_stream_synchronize(st)); /* nothing was queued */
  CHECK(all_bytes(dst, sizeof dst, 0x33), "a rejected stream copy wrote");
  CHECK(device_equals(ctx, q, pattern, kSize),
        "a rejected stream copy changed the device");
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, p);
  rk_context_free(ctx, q);
}

void cts_error_copy_bad_pointer(rk_context_t *ctx) {
  unsigned char host[64];
  memset(host, 0x44, sizeof host);
  rk_devptr_t live = cts_alloc(ctx, 64, host);
  rk_devptr_t freed = cts_alloc(ctx, 64, NULL);
  rk_context_t *ctx2 = other_context();
  rk_devptr_t foreign = ctx2 ? cts_alloc(ctx2, 64, NULL) : 0;
  if (!live || !freed || !foreign) goto done;
  CHECK_OK(rk_context_free(ctx, freed));

  const rk_devptr_t bad[] = {
      freed, foreign, (rk_devptr_t)(uintptr_t)host, /* a random host address */
      (rk_devptr_t)(uintptr_t)&bad, 0};
  static const char *const kWhat[] = {"freed", "foreign", "host", "stack",
                                      "null"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    unsigned char dst[16];
    memset(dst, 0x55, sizeof dst);
    CHECK_STATUS(rk_context_copy_to_host(ctx, dst, bad[i], 16),
                 RK_ERR_INVALID_ARGUMENT);
    if (bad[i]) check_error_names_ptr(bad[i]);
    CHECK(all_bytes(dst, sizeof dst, 0x55), "%s: destination written",
          kWhat[i]);
    CHECK_STATUS(rk_context_copy_to_device(ctx, bad[i], host, 16),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rk_context_copy_device_to_device(ctx, live, bad[i], 16),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(rk_context_copy_device_to_device(ctx, bad[i], live, 16),
                 RK_ERR_INVALID_ARGUMENT);
  }
  CHECK(device_equals(ctx, live, host, 64), "a live allocation changed");
  /* The foreign pointer is fine in its own context. */
  CHECK_OK(rk_context_copy_to_device(ctx2, foreign, host, 64));
  /* A NULL host pointer. */
  CHECK_STATUS(rk_context_copy_to_device(ctx, live, NULL, 16),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
  CHECK_STATUS(rk_context_copy_to_host(ctx, NULL, live, 16),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
done:
  if (live) rk_context_free(ctx, live);
  if (ctx2) CHECK_OK(rk_context_destroy(ctx2));
}

void cts_error_zero_sizes(rk_context_t *ctx) {
  rk_devptr_t p = 0x1234;
  CHECK_STATUS(rk_context_allocate(ctx, 0, &p), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("0");
  CHECK(p == 0x1234, "a failed allocation wrote its output");
  unsigned char host[8] = {0};
  rk_devptr_t d = cts_alloc(ctx, 8, host);
  rk_devptr_t e = cts_alloc(ctx, 8, host);
  rk_stream_t *st = NULL;
  if (!d || !e || !CHECK_OK(rk_context_create_stream(ctx, &st))) return;
  CHECK_STATUS(rk_context_copy_to_device(ctx, d, host, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("0 bytes");
  CHECK_STATUS(rk_context_copy_to_host(ctx, host, d, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_device_to_device(ctx, e, d, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_copy_to_device(st, d, host, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_copy_to_host(st, host, d, 0), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_copy_device_to_device(st, e, d, 0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, d);
  rk_context_free(ctx, e);
}

void cts_error_absurd_allocation(rk_context_t *ctx) {
  const size_t sizes[] = {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX - 63,
                          (size_t)1 << 62};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    rk_devptr_t p = 0;
    CHECK_STATUS(rk_context_allocate(ctx, sizes[i], &p), RK_ERR_OUT_OF_MEMORY);
    char num[32];
    snprintf(num, sizeof num, "%zu", sizes[i]);
    CHECK_ERROR_HAS(num); /* the message gives the size asked for */
  }
  /* More than the device has, if that can be asked for. */
  uint64_t mem = cts_device()->memory_bytes;
  if (mem && mem < SIZE_MAX / 4) {
    rk_devptr_t p = 0;
    CHECK_STATUS(rk_context_allocate(ctx, (size_t)mem * 2, &p),
                 RK_ERR_OUT_OF_MEMORY);
  }
  /* The context is fine afterwards. */
  rk_devptr_t p = cts_alloc(ctx, 1024, NULL);
  if (p) CHECK_OK(rk_context_free(ctx, p));
}

void cts_error_bad_free(rk_context_t *ctx) {
  unsigned char host[128];
  memset(host, 0x66, sizeof host);
  rk_devptr_t p = cts_alloc(ctx, 128, host);
  rk_devptr_t q = cts_alloc(ctx, 128, NULL);
  if (!p || !q) return;
  /* Interior pointers: refused, and the allocation stays live. */
  CHECK_STATUS(rk_context_free(ctx, p + 1), RK_ERR_INVALID_ARGUMENT);
  check_error_names_ptr(p + 1);
  CHECK_STATUS(rk_context_free(ctx, p + 64), RK_ERR_INVALID_ARGUMENT);
  CHECK(device_equals(ctx, p, host, 128),
        "the allocation is not intact after a refused interior free");
  CHECK_OK(rk_context_free(ctx, p));
  /* Double free. */
  CHECK_STATUS(rk_context_free(ctx, p), RK_ERR_INVALID_ARGUMENT);
  check_error_names_ptr(p);
  CHECK_STATUS(rk_context_free(ctx, 0), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_free(ctx, (rk_devptr_t)(uintptr_t)host),
               RK_ERR_INVALID_ARGUMENT);
  /* Freeing another context's allocation. */
  rk_context_t *ctx2 = other_context();
  rk_devptr_t foreign = ctx2 ? cts_alloc(ctx2, 64, NULL) : 0;
  if (foreign) {
    CHECK_STATUS(rk_context_free(ctx, foreign), RK_ERR_INVALID_ARGUMENT);
    CHECK_OK(rk_context_free(ctx2, foreign));
  }
  if (ctx2) CHECK_OK(rk_context_destroy(ctx2));
  CHECK_OK(rk_context_free(ctx, q));
}

/* ---- Compilation -------------------------------------------------------- */

static const char kBrokenSource[] =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void broken(int *x) {\n"
    "  x[0] = undeclared_thing_xyz;\n"
    "}\n";

/* Compiles `source` with `opt`, runs its kernel `name(int *x)` on one
 * thread and returns x[0] (-1 after a counted failure). */
static int run_int_kernel(rk_context_t *ctx, const char *source,
                          const rk_compile_options_t *opt, const char *name) {
  rk_module_t *mod = NULL;
  int v = -1;
  if (!CHECK_OK(rk_context_compile(ctx, source, opt, &mod))) return v;
  rk_function_t *fn = cts_function(mod, name);
  rk_devptr_t d = cts_alloc(ctx, sizeof v, &v);
  if (fn && d) {
    rk_arg_t arg = rk_arg_ptr(d);
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                                &arg, 1));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, &v, d, sizeof v));
  }
  if (d) rk_context_free(ctx, d);
  rk_module_destroy(mod);
  return v;
}

/* Appends a sum of n ones as a balanced tree of parenthesised additions to
 * out[len...]; returns the new length. */
static int balanced_sum(char *out, int len, int n) {
  if (n == 1) {
    out[len++] = '1';
  } else {
    out[len++] = '(';
    len = balanced_sum(out, len, n / 2);
    out[len++] = '+';
    len = balanced_sum(out, len, n - n / 2);
    out[len++] = ')';
  }
  out[len] = '\0';
  return len;
}

void cts_error_compile(rk_context_t *ctx) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = "cts_broken.c";
  rk_module_t *mod = NULL;
  CHECK_STATUS(rk_context_compile(ctx, kBrokenSource, &opt, &mod),
               RK_ERR_COMPILE);
  CHECK(mod == NULL, "a failed compile set *out_module");
  CHECK_ERROR_HAS("cts_broken.c:3");       /* name and line */
  CHECK_ERROR_HAS("undeclared_thing_xyz"); /* the compiler's own text */
  CHECK_ERROR_HAS("error");

  /* Without options the default name "<source>" is used. */
  CHECK_STATUS(rk_context_compile(ctx, kBrokenSource, NULL, &mod),
               RK_ERR_COMPILE);
  CHECK_ERROR_HAS("<source>:3");

  /* A syntax error on line 4. */
  static const char kSyntax[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void syntax(int *x) {\n"
      "  int y = 1;\n"
      "  x[0] = y +;\n"
      "}\n";
  opt.source_name = "cts_syntax.c";
  CHECK_STATUS(rk_context_compile(ctx, kSyntax, &opt, &mod), RK_ERR_COMPILE);
  CHECK_ERROR_HAS("cts_syntax.c:4");

  /* Malformed defines are refused before compiling. */
  const char *bad_defines[] = {"1ABC=2", NULL};
  opt.defines = bad_defines;
  CHECK_STATUS(
      rk_context_compile(ctx, KSRC(RK_KERNEL void k(void){}), &opt, &mod),
      RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("1ABC=2");
  const char *bad_defines2[] = {"A B", NULL};
  opt.defines = bad_defines2;
  CHECK_STATUS(
      rk_context_compile(ctx, KSRC(RK_KERNEL void k(void){}), &opt, &mod),
      RK_ERR_INVALID_ARGUMENT);
  CHECK(mod == NULL, "a failed compile set *out_module");

  /* Good defines reach the source. */
  const char *defines[] = {"CTS_VALUE=41", "CTS_FLAG", NULL};
  opt.defines = defines;
  static const char kDefSource[] =
      "#include <rk/kernel.h>\n"
      "#ifndef CTS_FLAG\n#error CTS_FLAG is not defined\n#endif\n"
      "RK_KERNEL void defined(int *x) { x[0] = CTS_VALUE + 1; }\n";
  opt.source_name = "cts_defines.c";
  int v = run_int_kernel(ctx, kDefSource, &opt, "defined");
  CHECK(v == 42, "kernel built with CTS_VALUE=41 wrote %d", v);

  /* A define of any length arrives whole: a sum of 300 ones as a balanced
   * tree, (((1+1)+(1+1))+...), over 1000 characters but only nine levels
   * deep (a define cut short fails to compile or gives a smaller sum). */
  enum { kTerms = 300 };
  char long_define[16 + 4 * kTerms];
  int len = snprintf(long_define, sizeof long_define, "CTS_LONG=");
  len = balanced_sum(long_define, len, kTerms);
  const char *long_defines[] = {long_define, NULL};
  opt.defines = long_defines;
  opt.source_name = "cts_long_define.c";
  static const char kLongSource[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void long_define(int *x) { x[0] = CTS_LONG; }\n";
  v = run_int_kernel(ctx, kLongSource, &opt, "long_define");
  CHECK(v == kTerms, "a %d-character define gave %d, expected %d", len, v,
        kTerms);
}

// clang-format off
static const char kTwoKernelsSource[] = KSRC(
    RK_KERNEL void alpha(int *x) { x[0] = 1; }
    RK_KERNEL void beta(int *x) { x[0] = 2; });
// clang-format on

void cts_error_kernel_not_found(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "two.c", kTwoKernelsSource);
  if (!mod) return;
  rk_function_t *fn = NULL;
  CHECK_STATUS(rk_module_get_function(mod, "gamma", &fn), RK_ERR_NOT_FOUND);
  CHECK(fn == NULL, "a failed lookup set *out_function");
  CHECK_ERROR_HAS("gamma");
  CHECK_ERROR_HAS("alpha"); /* the message lists what exists */
  CHECK_ERROR_HAS("beta");
  CHECK_STATUS(rk_module_get_function(mod, "alph", &fn), RK_ERR_NOT_FOUND);
  CHECK_STATUS(rk_module_get_function(mod, "", &fn), RK_ERR_NOT_FOUND);
  CHECK_STATUS(rk_module_get_function(mod, "ALPHA", &fn), RK_ERR_NOT_FOUND);
  CHECK_OK(rk_module_get_function(mod, "beta", &fn));
  CHECK(fn && strcmp(rk_function_name(fn), "beta") == 0, "found '%s'",
        fn ? rk_function_name(fn) : "(null)");
}

/* ---- Launch arguments --------------------------------------------------- */

typedef struct cts_pair {
  int a;
  float b;
  double c;
} cts_pair_t;

/* The struct of the 32-bit form, for devices without 64-bit types. */
typedef struct cts_pair32 {
  int a;
  float b;
  uint32_t c;
} cts_pair32_t;

// clang-format off
static const char kTakesSource[] = KSRC(
    typedef struct cts_pair { int a; float b; double c; } cts_pair_t;
    RK_KERNEL void takes(int n, float a, int *p, cts_pair_t s) {
      if (rk_global_idx_x() == 0) p[0] = n + (int)a + s.a;
    });
static const char kTakesSource32[] = KSRC(
    typedef struct cts_pair32 { int a; float b; uint32_t c; } cts_pair32_t;
    RK_KERNEL void takes(int n, float a, int *p, cts_pair32_t s) {
      if (rk_global_idx_x() == 0) p[0] = n + (int)a + s.a;
    });
// clang-format on

/* The `takes` kernel and the host value of its struct argument {5, 0, 0}:
 * the struct holds a double where the device has 64-bit types, and an
 * unsigned in its place elsewhere (said on stdout for `case_name`). */
typedef struct takes_kernel {
  rk_function_t *fn; /* NULL after a counted failure */
  cts_pair_t s64;
  cts_pair32_t s32;
  const void *s; /* &s64 or &s32 */
  size_t s_size;
} takes_kernel_t;

static void takes_kernel_init(rk_context_t *ctx, const char *case_name,
                              takes_kernel_t *k) {
  const bool wide = cts_has_64bit();
  if (!wide) cts_not_checked(case_name, "a struct argument with a double");
  memset(k, 0, sizeof *k);
  k->s64.a = 5;
  k->s32.a = 5;
  k->s = wide ? (const void *)&k->s64 : (const void *)&k->s32;
  k->s_size = wide ? sizeof k->s64 : sizeof k->s32;
  rk_module_t *mod =
      cts_compile(ctx, "takes.c", wide ? kTakesSource : kTakesSource32);
  k->fn = cts_function(mod, "takes");
}

/* p[0] is still `want`: no rejected launch ran. */
static void check_not_run(rk_context_t *ctx, rk_devptr_t p, int want) {
  CHECK_OK(rk_context_synchronize(ctx));
  int v = -1;
  CHECK_OK(rk_context_copy_to_host(ctx, &v, p, sizeof v));
  CHECK(v == want, "a rejected launch ran (p[0] = %d, expected %d)", v, want);
}

void cts_error_launch_arguments(rk_context_t *ctx) {
  takes_kernel_t k;
  takes_kernel_init(ctx, "error_launch_arguments", &k);
  rk_function_t *fn = k.fn;
  int zero = 0;
  rk_devptr_t p = cts_alloc(ctx, sizeof zero, &zero);
  if (!fn || !p) return;
  const rk_dim3_t g = rk_dim3(1, 1, 1), b = rk_dim3(1, 1, 1);
  rk_arg_t good[] = {rk_arg_i32(10), rk_arg_f32(2.0f), rk_arg_ptr(p),
                     rk_arg_struct(k.s, k.s_size)};
  rk_arg_t args[5];

  /* Count. */
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, good, 3),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("takes");
  CHECK_ERROR_HAS("3 given");
  memcpy(args, good, sizeof good);
  args[4] = rk_arg_i32(1);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 5),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, NULL, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, NULL, 0),
               RK_ERR_INVALID_ARGUMENT);

  /* Kind: each wrong kind names the kernel and the argument's index. */
  static const struct {
    size_t index;
    const char *what;
  } kWrong[] = {{1, "i32 for f32"},
                {0, "u32 for i32"},
                {0, "f32 for i32"},
                {2, "u64 for ptr"},
                {3, "ptr for struct"}};
  rk_arg_t wrong[] = {rk_arg_i32(2), rk_arg_u32(10), rk_arg_f32(10.0f),
                      rk_arg_u64(p), rk_arg_ptr(p)};
  for (size_t i = 0; i < sizeof kWrong / sizeof kWrong[0]; ++i) {
    memcpy(args, good, sizeof good);
    args[kWrong[i].index] = wrong[i];
    if (!CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
                      RK_ERR_INVALID_ARGUMENT))
      printf("  (case: %s)\n", kWrong[i].what);
    CHECK_ERROR_HAS("takes");
    char idx[32];
    snprintf(idx, sizeof idx, "argument %zu", kWrong[i].index);
    CHECK_ERROR_HAS(idx);
  }

  /* Size: a struct of the wrong size, a scalar with a wrong size. */
  memcpy(args, good, sizeof good);
  args[3] = rk_arg_struct(k.s, k.s_size - 4);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("argument 3");
  args[3] = rk_arg_struct(k.s, k.s_size + 8);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
               RK_ERR_INVALID_ARGUMENT);
  args[3] = rk_arg_struct(NULL, k.s_size);
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("argument 3");
  memcpy(args, good, sizeof good);
  args[0].size = 8;
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("argument 0");
  args[0] = rk_arg_i32(10);
  args[0].kind = (rk_arg_kind_t)99;
  CHECK_STATUS(rk_function_launch(fn, g, b, 0, NULL, args, 4),
               RK_ERR_INVALID_ARGUMENT);

  check_not_run(ctx, p, 0);
  /* The right arguments work. */
  CHECK_OK(rk_function_launch(fn, g, b, 0, NULL, good, 4));
  check_not_run(ctx, p, 17);
  rk_context_free(ctx, p);
}

void cts_error_launch_pointer_args(rk_context_t *ctx) {
  takes_kernel_t k;
  takes_kernel_init(ctx, "error_launch_pointer_args", &k);
  rk_function_t *fn = k.fn;
  int zero = 0, host = 0;
  rk_devptr_t p = cts_alloc(ctx, 64, NULL);
  rk_devptr_t freed = cts_alloc(ctx, 64, NULL);
  rk_context_t *ctx2 = other_context();
  rk_devptr_t foreign = ctx2 ? cts_alloc(ctx2, 64, NULL) : 0;
  if (!fn || !p || !freed || !foreign) goto done;
  CHECK_OK(rk_context_copy_to_device(ctx, p, &zero, sizeof zero));
  CHECK_OK(rk_context_free(ctx, freed));
  const rk_devptr_t bad[] = {freed, foreign, (rk_devptr_t)(uintptr_t)&host};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    rk_arg_t args[] = {rk_arg_i32(10), rk_arg_f32(2.0f), rk_arg_ptr(bad[i]),
                       rk_arg_struct(k.s, k.s_size)};
    CHECK_STATUS(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                    NULL, args, 4),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("takes");
    CHECK_ERROR_HAS("argument 2");
  }
  CHECK(host == 0, "a kernel wrote through a host pointer");
  check_not_run(ctx, p, 0);
  /* A pointer inside a live allocation is fine. */
  rk_arg_t args[] = {rk_arg_i32(10), rk_arg_f32(2.0f), rk_arg_ptr(p + 8),
                     rk_arg_struct(k.s, k.s_size)};
  CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                              args, 4));
  CHECK_OK(rk_context_synchronize(ctx));
  int v = 0;
  CHECK_OK(rk_context_copy_to_host(ctx, &v, p + 8, sizeof v));
  CHECK(v == 17, "launch with an interior pointer wrote %d", v);
done:
  if (p) rk_context_free(ctx, p);
  if (ctx2) CHECK_OK(rk_context_destroy(ctx2));
}

/* ---- Launch dimensions and shared memory ------------------------------- */

// clang-format off
static const char kMarkSource[] = KSRC(
    RK_KERNEL void mark(int *p) { rk_atomic_add_i32(p, 1); });
// clang-format on

void cts_error_launch_dimensions(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "mark.c", kMarkSource);
  rk_function_t *fn = cts_function(mod, "mark");
  int zero = 0;
  rk_devptr_t p = cts_alloc(ctx, sizeof zero, &zero);
  if (!fn || !p) return;
  rk_arg_t arg = rk_arg_ptr(p);
  const rk_device_info_t *dev = cts_device();
  const uint32_t max = dev->max_threads_per_block;

  /* No dimension may be zero. */
  const rk_dim3_t one = rk_dim3(1, 1, 1);
  const rk_dim3_t zeros[] = {rk_dim3(0, 1, 1), rk_dim3(1, 0, 1),
                             rk_dim3(1, 1, 0)};
  for (int i = 0; i < 3; ++i) {
    CHECK_STATUS(rk_function_launch(fn, zeros[i], one, 0, NULL, &arg, 1),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("mark");
    CHECK_STATUS(rk_function_launch(fn, one, zeros[i], 0, NULL, &arg, 1),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("mark");
  }

  /* Blocks larger than the device allows, including products that
   * overflow 32 and 64 bits. */
  char max_text[32];
  snprintf(max_text, sizeof max_text, "%u", max);
  CHECK_STATUS(
      rk_function_launch(fn, one, rk_dim3(max + 1, 1, 1), 0, NULL, &arg, 1),
      RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("mark");
  CHECK_ERROR_HAS(max_text);
  CHECK_STATUS(
      rk_function_launch(fn, one, rk_dim3(1, max, 2), 0, NULL, &arg, 1),
      RK_ERR_INVALID_ARGUMENT);
  watchdog_arm(20, "block (65536, 65536, 1)");
  CHECK_STATUS(rk_function_launch(fn, one, rk_dim3(1u << 16, 1u << 16, 1), 0,
                                  NULL, &arg, 1),
               RK_ERR_INVALID_ARGUMENT);
  watchdog_disarm();
  watchdog_arm(20, "block (2^32-1, 2^32-1, 2^32-1)");
  CHECK_STATUS(
      rk_function_launch(fn, one, rk_dim3(UINT32_MAX, UINT32_MAX, UINT32_MAX),
                         0, NULL, &arg, 1),
      RK_ERR_INVALID_ARGUMENT);
  watchdog_disarm();

  /* Dynamic shared memory beyond the device's limit. */
  CHECK_STATUS(
      rk_function_launch(fn, one, one, (size_t)dev->shared_mem_per_block + 1,
                         NULL, &arg, 1),
      RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("mark");
  CHECK_STATUS(rk_function_launch(fn, one, one, SIZE_MAX, NULL, &arg, 1),
               RK_ERR_INVALID_ARGUMENT);
  check_not_run(ctx, p, 0);

  /* The kernel's own limit: the device's, or less (NVIDIA's OpenCL allows
   * 256 threads for this kernel on an H100); a block beyond it is refused
   * and the message names the limit. */
  const uint32_t kmax = rk_function_max_block_threads(fn);
  CHECK(kmax >= 1 && kmax <= max,
        "rk_function_max_block_threads: %u, the device allows %u", kmax, max);
  if (kmax >= 1 && kmax < max) {
    char kmax_text[32];
    snprintf(kmax_text, sizeof kmax_text, "%u", kmax);
    CHECK_STATUS(
        rk_function_launch(fn, one, rk_dim3(kmax + 1, 1, 1), 0, NULL, &arg, 1),
        RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(kmax_text);
    check_not_run(ctx, p, 0);
  }
  CHECK(rk_function_max_block_threads(NULL) == 0,
        "rk_function_max_block_threads(NULL) is not 0");

  /* The limits themselves are allowed. */
  if (kmax < 1) return;
  const uint32_t kx = kmax >= 8 ? 8 : 1;
  CHECK_OK(rk_function_launch(fn, one, rk_dim3(kmax, 1, 1),
                              (size_t)dev->shared_mem_per_block, NULL, &arg,
                              1));
  CHECK_OK(rk_function_launch(fn, rk_dim3(2, 3, 1), rk_dim3(kx, kmax / kx, 1),
                              0, NULL, &arg, 1));
  check_not_run(ctx, p, (int)(kmax + 6 * kx * (kmax / kx)));
  rk_context_free(ctx, p);
}

/* The thread count of a block must not wrap around in 64 bits either:
 * 2^31 * 2^31 * 4 = 2^64 is 0 modulo 2^64. A runtime that multiplies in
 * uint64_t accepts this block and then runs 2^64 threads; the watchdog turns
 * that hang into a failure. Last in the suite, since it ends the process when
 * it fails. */
void cts_error_launch_block_overflow(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "mark.c", kMarkSource);
  rk_function_t *fn = cts_function(mod, "mark");
  int zero = 0;
  rk_devptr_t p = cts_alloc(ctx, sizeof zero, &zero);
  if (!fn || !p) return;
  rk_arg_t arg = rk_arg_ptr(p);
  const rk_dim3_t one = rk_dim3(1, 1, 1);
  const rk_dim3_t wraps[] = {rk_dim3(1u << 31, 1u << 31, 4),
                             rk_dim3(4, 1u << 31, 1u << 31),
                             rk_dim3(1u << 22, 1u << 22, 1u << 20)};
  for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; ++i) {
    char what[160];
    snprintf(what, sizeof what,
             "[%s] case error_launch_block_overflow ... FAIL: block (%u, %u, "
             "%u) has 2^64 threads, which wraps to 0",
             rk_backend_name(cts_backend()), wraps[i].x, wraps[i].y,
             wraps[i].z);
    watchdog_arm(20, what);
    CHECK_STATUS(rk_function_launch(fn, one, wraps[i], 0, NULL, &arg, 1),
                 RK_ERR_INVALID_ARGUMENT);
    watchdog_disarm();
  }
  check_not_run(ctx, p, 0);
  rk_context_free(ctx, p);
}

/* Grids whose block or thread count does not fit in 64 bits are refused:
 * (2^31, 2^31, 4) blocks is 2^64, which wraps to 0 and would run nothing
 * while reporting success. */
void cts_error_launch_grid_overflow(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "mark.c", kMarkSource);
  rk_function_t *fn = cts_function(mod, "mark");
  int zero = 0;
  rk_devptr_t p = cts_alloc(ctx, sizeof zero, &zero);
  if (!fn || !p) return;
  rk_arg_t arg = rk_arg_ptr(p);
  const struct {
    rk_dim3_t grid, block;
  } wraps[] = {
      {rk_dim3(1u << 31, 1u << 31, 4), rk_dim3(1, 1, 1)},
      {rk_dim3(4, 1u << 31, 1u << 31), rk_dim3(1, 1, 1)},
      {rk_dim3(1u << 22, 1u << 22, 1u << 20), rk_dim3(1, 1, 1)},
      {rk_dim3(UINT32_MAX, UINT32_MAX, UINT32_MAX), rk_dim3(1, 1, 1)},
      /* 2^63 blocks of 2 threads: the blocks fit, the threads do not. */
      {rk_dim3(1u << 31, 1u << 31, 2), rk_dim3(2, 1, 1)},
  };
  for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; ++i) {
    char what[200];
    snprintf(what, sizeof what,
             "[%s] case error_launch_grid_overflow ... FAIL: grid (%u, %u, "
             "%u) with block (%u, %u, %u) does not fit in 64 bits",
             rk_backend_name(cts_backend()), wraps[i].grid.x, wraps[i].grid.y,
             wraps[i].grid.z, wraps[i].block.x, wraps[i].block.y,
             wraps[i].block.z);
    watchdog_arm(20, what);
    CHECK_STATUS(
        rk_function_launch(fn, wraps[i].grid, wraps[i].block, 0, NULL, &arg, 1),
        RK_ERR_INVALID_ARGUMENT);
    watchdog_disarm();
    CHECK_ERROR_HAS("mark");
    CHECK_ERROR_HAS("does not fit");
  }
  check_not_run(ctx, p, 0);
  rk_context_free(ctx, p);
}

/* ---- NULL arguments ----------------------------------------------------- */

void cts_error_null_arguments(rk_context_t *ctx) {
  rk_backend_t *be = cts_backend();
  rk_device_info_t info;
  CHECK_STATUS(rk_backend_open(rk_backend_kind(be), NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
  CHECK_STATUS(rk_backend_create_context(be, 0, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_backend_create_context(NULL, 0, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_backend_device_info(be, 0, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_backend_device_info(NULL, 0, &info), RK_ERR_INVALID_ARGUMENT);
  rk_backend_kind_t kind;
  CHECK_STATUS(rk_backend_kind_from_name(NULL, &kind), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_backend_kind_from_name("cpu", NULL), RK_ERR_INVALID_ARGUMENT);

  CHECK_STATUS(rk_context_allocate(ctx, 16, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
  CHECK_STATUS(rk_context_create_stream(ctx, NULL), RK_ERR_INVALID_ARGUMENT);
  const char *src = KSRC(RK_KERNEL void k(int *x) { x[0] = 1; });
  rk_module_t *mod = NULL;
  CHECK_STATUS(rk_context_compile(ctx, src, NULL, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_compile(ctx, NULL, NULL, &mod),
               RK_ERR_INVALID_ARGUMENT);
  mod = cts_compile(ctx, "k.c", src);
  rk_function_t *fn = NULL;
  CHECK_STATUS(rk_module_get_function(mod, "k", NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_module_get_function(mod, NULL, &fn), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_module_get_function(NULL, "k", &fn), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_function_param(NULL, 0, NULL, NULL), RK_ERR_INVALID_ARGUMENT);
  rk_arg_t arg = rk_arg_ptr(0);
  CHECK_STATUS(rk_function_launch(NULL, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  NULL, &arg, 1),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_synchronize(NULL), RK_ERR_INVALID_ARGUMENT);
  int h = 0;
  CHECK_STATUS(rk_stream_copy_to_device(NULL, 0, &h, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_copy_to_host(NULL, &h, 0, 4), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_stream_copy_device_to_device(NULL, 0, 0, 4),
               RK_ERR_INVALID_ARGUMENT);

  /* Queries and destroys accept NULL. */
  CHECK(!rk_module_cache_hit(NULL), "cache_hit(NULL)");
  CHECK(rk_module_function_count(NULL) == 0, "function_count(NULL)");
  CHECK(rk_function_name(NULL) != NULL, "function_name(NULL) is NULL");
  CHECK(rk_function_param_count(NULL) == 0, "param_count(NULL)");
  CHECK(rk_backend_name(NULL) != NULL, "backend_name(NULL) is NULL");
  CHECK(rk_backend_device_count(NULL) == 0, "device_count(NULL)");
  CHECK(rk_context_backend(NULL) == NULL, "context_backend(NULL)");
  CHECK(rk_context_backend(ctx) == be,
        "context_backend(ctx) is not the backend it was created from");
  CHECK_OK(rk_module_destroy(NULL));
  CHECK_OK(rk_stream_destroy(NULL));
  CHECK_OK(rk_context_destroy(NULL));
  CHECK_OK(rk_backend_destroy(NULL));
  rk_compile_options_init(NULL); /* must not crash */
}

void cts_error_null_context(rk_context_t *ctx) {
  (void)ctx;
  rk_devptr_t p = 0;
  int h = 0;
  rk_module_t *mod = NULL;
  rk_stream_t *st = NULL;
  CHECK_STATUS(rk_context_allocate(NULL, 16, &p), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
  CHECK_STATUS(rk_context_free(NULL, 0x1000), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_to_device(NULL, 0x1000, &h, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_to_host(NULL, &h, 0x1000, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_copy_device_to_device(NULL, 0x1000, 0x2000, 4),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_synchronize(NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("null");
  CHECK_STATUS(
      rk_context_compile(NULL, KSRC(RK_KERNEL void k(void){}), NULL, &mod),
      RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_context_create_stream(NULL, &st), RK_ERR_INVALID_ARGUMENT);
  CHECK(p == 0 && mod == NULL && st == NULL,
        "a call with a NULL context wrote an output");
}

/* A stream of one context cannot carry another context's work. */
void cts_error_foreign_stream(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "mark.c", kMarkSource);
  rk_function_t *fn = cts_function(mod, "mark");
  int zero = 0;
  rk_devptr_t p = cts_alloc(ctx, sizeof zero, &zero);
  rk_context_t *ctx2 = other_context();
  rk_stream_t *st2 = NULL;
  if (!fn || !p || !ctx2 || !CHECK_OK(rk_context_create_stream(ctx2, &st2)))
    goto done;
  rk_arg_t arg = rk_arg_ptr(p);
  CHECK_STATUS(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                  st2, &arg, 1),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("mark");
  CHECK_ERROR_HAS("stream");
  /* Copies on ctx2's stream check pointers against ctx2. */
  CHECK_STATUS(rk_stream_copy_to_device(st2, p, &zero, sizeof zero),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_stream_synchronize(st2));
  check_not_run(ctx, p, 0);
done:
  if (p) rk_context_free(ctx, p);
  /* Destroying ctx2 releases its stream too. */
  if (ctx2) CHECK_OK(rk_context_destroy(ctx2));
}

/* ---- Failures are reported, not printed -------------------------------- */

void cts_error_nothing_on_stderr(rk_context_t *ctx) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = "cts_quiet.c";
  rk_module_t *mod = NULL;
  rk_devptr_t p = cts_alloc(ctx, 16, NULL);
  unsigned char host[32] = {0};
  char captured[512];
  size_t out_bytes = 0;

  rk_test_capture_begin();
  rk_status_t compile = rk_context_compile(ctx, kBrokenSource, &opt, &mod);
  rk_status_t copy = rk_context_copy_to_device(ctx, p, host, sizeof host);
  rk_status_t bad_free = rk_context_free(ctx, p + 1);
  size_t err_bytes = rk_test_capture_end(&out_bytes, captured, sizeof captured);

  CHECK(compile == RK_ERR_COMPILE, "compile returned %s",
        rk_status_name(compile));
  CHECK(copy == RK_ERR_OUT_OF_RANGE, "copy returned %s", rk_status_name(copy));
  CHECK(bad_free == RK_ERR_INVALID_ARGUMENT, "free returned %s",
        rk_status_name(bad_free));
  CHECK(err_bytes == 0, "failing calls wrote %zu bytes to stderr: %s",
        err_bytes, captured);
  CHECK(out_bytes == 0, "failing calls wrote %zu bytes to stdout", out_bytes);
  if (p) rk_context_free(ctx, p);
}
