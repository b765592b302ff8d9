/* The transpiler never crashes, hangs or leaks on hostile input: every
 * allocation failure is reported as RK_ERR_OUT_OF_MEMORY, nesting is
 * bounded, huge flat inputs stay fast, and thousands of mutated corpus
 * sources come back with a valid status (run it under ASan/UBSan to make
 * this meaningful: the sanitizer builds of the suite do). */
#define RK_TEST_IMPLEMENTATION
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "cg_test_util.h"
#include "codegen/context.h"
#include "rk_test.h"

static bool valid_status(rk_status_t s) {
  return s == RK_OK || s == RK_ERR_COMPILE || s == RK_ERR_UNIMPLEMENTED;
}

/* Runs every target and the entry listing; checks the contract. */
static void run_all(const char *src, const char *what) {
  for (int t = 0; t < RK_TARGET_COUNT_; ++t) {
    char *out = NULL;
    rk_diagnostic_t d;
    rk_status_t s = rk_transpile_ex(src, (rk_target_t)t, NULL, &out, &d);
    CHECK(valid_status(s), "%s for %s: %s: %s", what,
          rk_target_name((rk_target_t)t), rk_status_name(s), rk_last_error());
    CHECK((s == RK_OK) == (out != NULL), "%s: text iff success", what);
    if (s == RK_OK) CHECK(strlen(out) > 0, "%s: empty output", what);
    if (s == RK_ERR_COMPILE)
      CHECK(d.line >= 1 && d.column >= 1 && d.message[0],
            "%s: compile error without a location", what);
    rk_transpile_free(out);
  }
  rk_entry_list_t *l = NULL;
  rk_status_t s = rk_codegen_list_entries(src, NULL, &l, NULL);
  CHECK(s == RK_OK || s == RK_ERR_COMPILE, "%s: list: %s", what,
        rk_status_name(s));
  rk_entry_list_destroy(l);
}

/* ---- Allocation failures --------------------------------------------------
 */

static void test_allocation_failures(void) {
  static const char *const kKernels[] = {"structs", "laplace2d", "atomics_all",
                                         "actor_counter"};
  for (size_t k = 0; k < sizeof kKernels / sizeof *kKernels; ++k) {
    char *src = cg_read_kernel(kKernels[k]);
    if (!CHECK(src != NULL, "cannot read %s", kKernels[k])) continue;
    int failures = 0;
    for (unsigned n = 1; n < 200000; ++n) {
      char *out = NULL;
      rk__cg_fail_alloc_after(n);
      rk_status_t s = cg_transpile(src, kKernels[k], RK_TARGET_MSL, &out);
      rk__cg_fail_alloc_after(0);
      rk_transpile_free(out);
      if (s == RK_OK) break;
      if (!CHECK(s == RK_ERR_OUT_OF_MEMORY, "%s: allocation %u: %s",
                 kKernels[k], n, rk_status_name(s)))
        break;
      CHECK_ERROR_HAS("out of memory");
      failures++;
    }
    CHECK(failures > 10, "%s: only %d allocation failures injected",
          kKernels[k], failures);
    /* The listing too. */
    for (unsigned n = 1; n < 200000; ++n) {
      rk_entry_list_t *l = NULL;
      rk__cg_fail_alloc_after(n);
      rk_status_t s = rk_codegen_list_entries(src, NULL, &l, NULL);
      rk__cg_fail_alloc_after(0);
      rk_entry_list_destroy(l);
      if (s == RK_OK) break;
      if (!CHECK(s == RK_ERR_OUT_OF_MEMORY, "%s list: %s", kKernels[k],
                 rk_status_name(s)))
        break;
    }
    free(src);
  }
}

/* ---- Limits ---------------------------------------------------------------
 */

/* A kernel whose body is `prefix` + n * `repeat` + `middle` + n * `close` +
 * `suffix`. */
static char *build(const char *prefix, const char *repeat, int n,
                   const char *middle, const char *close, const char *suffix) {
  size_t len = strlen(prefix) + strlen(middle) + strlen(suffix) +
               (size_t)n * (strlen(repeat) + strlen(close)) + 1;
  char *s = malloc(len);
  if (!s) return NULL;
  char *p = s;
  p += sprintf(p, "%s", prefix);
  for (int i = 0; i < n; ++i) p += sprintf(p, "%s", repeat);
  p += sprintf(p, "%s", middle);
  for (int i = 0; i < n; ++i) p += sprintf(p, "%s", close);
  sprintf(p, "%s", suffix);
  return s;
}

static void expect_compile_error(char *src, const char *fragment,
                                 const char *what) {
  if (!src) return;
  char *out = NULL;
  /* A pathological input must end in an error, not a hang; the test's
   * time limit catches a hang (speed itself is bench/transpile's job). */
  CHECK_STATUS(rk_transpile(src, RK_TARGET_C, NULL, &out), RK_ERR_COMPILE);
  CHECK_ERROR_HAS(fragment);
  run_all(src, what);
  free(src);
}

static void expect_ok(char *src, const char *what) {
  if (!src) return;
  char *out = NULL;
  if (!CHECK_OK(rk_transpile(src, RK_TARGET_CUDA, NULL, &out)))
    printf("  (while transpiling %s)\n", what);
  rk_transpile_free(out);
  free(src);
}

#define KHEAD "#include <rk/kernel.h>\nRK_KERNEL void k(int *o) {\n"

static void test_limits(void) {
  expect_compile_error(build(KHEAD "  o[0] = ", "(", 400, "1", ")", ";\n}\n"),
                       "nesting is too deep", "deep parentheses");
  expect_compile_error(build(KHEAD, "{", 400, "o[0] = 1;", "}", "}\n"),
                       "nesting is too deep", "deep blocks");
  expect_compile_error(
      build(KHEAD "  o[0] = 1", " + 1", 5000, "", "", ";\n}\n"),
      "too deeply nested", "long sum");
  expect_compile_error(build(KHEAD "  o[0] = ", "- ", 1000, "1", "", ";\n}\n"),
                       "nesting is too deep", "unary chain");
  expect_compile_error(
      build(KHEAD "  int a[1] = ", "{", 400, "1", "}", ";\n}\n"),
      "nesting is too deep", "nested initializers");
  expect_compile_error(build(KHEAD "  o[0] = o", "[0]", 5000, "", "", ";\n}\n"),
                       "too deeply nested", "long index chain");
  /* Wide but flat inputs are fine and linear. */
  expect_ok(build(KHEAD, "  o[0] += 1;\n", 40000, "", "", "}\n"),
            "40000 statements");
  expect_ok(build(KHEAD "  int x = 0;\n  switch (o[0]) {\n", "", 0, "", "",
                  "  }\n}\n"),
            "empty switch");
  {
    /* 3000 distinct case labels. */
    size_t cap = 3000 * 40 + 200;
    char *s = malloc(cap);
    if (s) {
      char *p = s + sprintf(s, KHEAD "  switch (o[0]) {\n");
      for (int i = 0; i < 3000; ++i)
        p += sprintf(p, "    case %d: o[1] = %d; break;\n", i * 7, i);
      sprintf(p, "  }\n}\n");
      expect_ok(s, "3000 cases");
    }
  }
  {
    /* A chain of 3000 helpers: the call graph walk is iterative. */
    size_t cap = 3000 * 64 + 200;
    char *s = malloc(cap);
    char *r = malloc(cap);
    if (s && r) {
      char *p = s + sprintf(s,
                            "#include <rk/kernel.h>\n"
                            "static int f0(int x) { return x; }\n");
      for (int i = 1; i < 3000; ++i)
        p += sprintf(p, "static int f%d(int x) { return f%d(x) + 1; }\n", i,
                     i - 1);
      sprintf(p, "RK_KERNEL void k(int *o) { o[0] = f2999(1); }\n");
      /* The same chain closed into a cycle through a prototype. */
      p = r + sprintf(r,
                      "#include <rk/kernel.h>\n"
                      "static int f2999(int x);\n"
                      "static int f0(int x) { return f2999(x); }\n");
      for (int i = 1; i < 3000; ++i)
        p += sprintf(p, "static int f%d(int x) { return f%d(x) + 1; }\n", i,
                     i - 1);
      expect_ok(s, "3000 chained helpers");
      expect_compile_error(r, "recursion is not supported", "3000-cycle");
    } else {
      free(s);
      free(r);
    }
  }
  {
    /* 2000 nested structs. */
    size_t cap = 2000 * 64 + 200;
    char *s = malloc(cap);
    if (s) {
      char *p = s + sprintf(s,
                            "#include <rk/kernel.h>\n"
                            "typedef struct { int v; } s0_t;\n");
      for (int i = 1; i < 2000; ++i)
        p += sprintf(p, "typedef struct { s%d_t in; int v; } s%d_t;\n", i - 1,
                     i);
      sprintf(p, "RK_KERNEL void k(s1999_t *o) { o->v = 1; }\n");
      expect_ok(s, "2000 nested structs");
    }
  }
  char name[400];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  char src[600];
  snprintf(src, sizeof src, KHEAD "  int %s = 0;\n}\n", name);
  expect_compile_error(strdup(src), "identifier is too long", "long name");
  expect_compile_error(strdup(KHEAD "  o[0] = 123456789012345678901234;\n}\n"),
                       "too large", "huge constant");
  expect_compile_error(strdup(KHEAD "  o[0] = 1 / 0 + (int)sizeof(int);\n}\n"),
                       "sizeof", "sizeof");
  expect_compile_error(strdup(KHEAD "  float a[1 / 0];\n}\n"),
                       "division by zero", "constant division by zero");
  expect_compile_error(strdup(KHEAD "  float a[1 << 40];\n}\n"),
                       "shift count out of range", "constant shift");
}

/* ---- Every byte, and mutated corpus sources ------------------------------ */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return n ? (uint32_t)(g_rng % n) : 0;
}

static void test_bytes(void) {
  for (int b = 1; b < 256; ++b) {
    char src[128];
    snprintf(src, sizeof src, KHEAD "  o[0] = 1%c;\n}\n", (char)b);
    run_all(src, "one odd byte");
    char alone[2] = {(char)b, 0};
    run_all(alone, "a lone byte");
  }
}

static const char *const kSnippets[] = {
    "{",
    "}",
    "(",
    ")",
    ";",
    ",",
    "*",
    "&",
    "[",
    "]",
    "->",
    ".",
    "?",
    ":",
    "#define X ",
    "\n#define Y (1)\n",
    "\n#",
    "rk_sync_threads();",
    "rk_atomic_add_i32(&o[0], 1)",
    "case 1:",
    "default:",
    "break;",
    "return",
    "while (1)",
    "for (;;)",
    "RK_SHARED float s[4];",
    "struct",
    "typedef",
    "static",
    "const",
    "double",
    "int64_t",
    "0x",
    "1e",
    ".5f",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "\\",
    "rk_north(in, p)",
    "p.idx",
    "->v",
    "RK_STENCIL(4, 4, 1)",
    "RK_HANDLER",
    "RK_KERNEL",
    "++",
    "--",
    "<<=",
    "2147483648",
    "-2147483648",
    "0u - 1u",
    "(float)",
    "(void)",
};

static char *mutate(const char *src) {
  size_t n = strlen(src);
  size_t cap = n + 256;
  char *m = malloc(cap);
  if (!m) return NULL;
  memcpy(m, src, n + 1);
  int edits = 1 + (int)rnd(4);
  for (int e = 0; e < edits; ++e) {
    size_t len = strlen(m);
    size_t at = len ? rnd((uint32_t)len) : 0;
    switch (rnd(5)) {
      case 0: /* replace a byte */
        if (len) m[at] = (char)(1 + rnd(255));
        break;
      case 1: { /* delete a span */
        size_t span = 1 + rnd(16);
        if (at + span > len) span = len - at;
        memmove(m + at, m + at + span, len - at - span + 1);
        break;
      }
      case 2: /* truncate */
        m[at] = '\0';
        break;
      default: { /* insert a snippet */
        const char *s = kSnippets[rnd(sizeof kSnippets / sizeof *kSnippets)];
        size_t sl = strlen(s);
        if (len + sl + 1 > cap) break;
        memmove(m + at + sl, m + at, len - at + 1);
        memcpy(m + at, s, sl);
        break;
      }
    }
  }
  return m;
}

static void test_mutations(void) {
  cg_corpus_t corpus;
  if (!cg_corpus_load(&corpus)) return;
  int accepted = 0, total = 0;
  for (int k = 0; k < corpus.count; ++k) {
    char *src = cg_read_kernel(corpus.names[k]);
    if (!src) continue;
    run_all(src, corpus.names[k]);
    for (int i = 0; i < 150; ++i) {
      char *m = mutate(src);
      if (!m) continue;
      char *out = NULL;
      if (rk_transpile(m, RK_TARGET_C, NULL, &out) == RK_OK) accepted++;
      rk_transpile_free(out);
      run_all(m, corpus.names[k]);
      total++;
      free(m);
    }
    free(src);
  }
  printf("mutations: %d of %d still valid\n", accepted, total);
  CHECK(total > 1000, "only %d mutations", total);
}

int main(void) {
  test_allocation_failures();
  test_limits();
  test_bytes();
  test_mutations();
  return rk_test_finish("codegen_robust");
}
