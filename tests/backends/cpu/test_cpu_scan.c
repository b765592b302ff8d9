/* CPU backend: kernel declarations the runtime cannot launch are refused
 * before the C compiler runs, with "name:line:col: error: ...", the source
 * line and a caret under the culprit; declarations it can launch are read
 * correctly. */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_test_util.h"

static rk_context_t *g_ctx;

/* `line` (1-based) of `src`, without its newline, into out. */
static void source_line(const char *src, int line, char *out, size_t cap) {
  for (int l = 1; l < line && src; ++l) {
    src = strchr(src, '\n');
    if (src) ++src;
  }
  size_t n = src ? strcspn(src, "\n") : 0;
  if (n >= cap) n = cap - 1;
  memcpy(out, src ? src : "", n);
  out[n] = '\0';
}

/* Compiling `src` fails with RK_ERR_COMPILE at (line, column of the first
 * `token` on that line), the message contains `words`, and nothing is
 * printed. */
static void expect_decl_error(const char *what, const char *src, int line,
                              const char *token, const char *words) {
  char text[512], head[256], caret[512];
  source_line(src, line, text, sizeof text);
  const char *at = strstr(text, token);
  if (!CHECK(at != NULL, "%s: test bug: '%s' is not on line %d", what, token,
             line))
    return;
  int col = (int)(at - text) + 1;
  snprintf(head, sizeof head, "%s.c:%d:%d: error: ", what, line, col);
  /* The caret line: the line's tabs kept, everything else a space. */
  size_t i = 0;
  for (; i < (size_t)(col - 1); ++i) caret[i] = text[i] == '\t' ? '\t' : ' ';
  caret[i++] = '^';
  caret[i] = '\0';

  char name[64];
  snprintf(name, sizeof name, "%s.c", what);
  rk_module_t *mod = NULL;
  char captured[256];
  size_t out_bytes = 0;
  rk_test_capture_begin();
  rk_test_clear_error();
  rk_status_t s = cpu_compile(g_ctx, src, name, NULL, true, &mod);
  size_t err_bytes = rk_test_capture_end(&out_bytes, captured, sizeof captured);
  if (!CHECK(s == RK_ERR_COMPILE,
             "%s: status %s, expected compile error (message: %s)", what,
             rk_status_name(s), rk_last_error()))
    return;
  CHECK(mod == NULL, "%s: module set", what);
  CHECK(err_bytes == 0 && out_bytes == 0, "%s: printed %zu+%zu bytes: %s", what,
        out_bytes, err_bytes, captured);

  /* Exactly three lines: diagnostic, source line, caret. */
  const char *msg = rk_last_error();
  const char *nl1 = strchr(msg, '\n');
  const char *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
  if (!CHECK(nl1 && nl2, "%s: not three lines: '%s'", what, msg)) return;
  CHECK(strncmp(msg, head, strlen(head)) == 0,
        "%s: message starts '%.*s', expected '%s'", what, (int)(nl1 - msg), msg,
        head);
  CHECK(strlen(text) == (size_t)(nl2 - nl1 - 1) &&
            strncmp(nl1 + 1, text, strlen(text)) == 0,
        "%s: second line is '%.*s', expected '%s'", what, (int)(nl2 - nl1 - 1),
        nl1 + 1, text);
  CHECK(strcmp(nl2 + 1, caret) == 0, "%s: caret line is '%s', expected '%s'",
        what, nl2 + 1, caret);
  CHECK(rk_test_contains(msg, words), "%s: message lacks '%s': %s", what, words,
        msg);
}

static void test_refused_declarations(void) {
  expect_decl_error("varargs",
                    "#include <rk/kernel.h>\n"
                    "\n"
                    "RK_KERNEL void vk(int n, ...) { (void)n; }\n",
                    3, "...", "variadic");
  expect_decl_error("ptrptr",
                    "#include <rk/kernel.h>\n"
                    "// a comment line\n"
                    "RK_KERNEL void pp(int n,\n"
                    "                  float **data) { (void)n; }\n",
                    4, "data", "pointer to a pointer");
  expect_decl_error("short_param",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void sk(short s) { (void)s; }\n",
                    2, "short", "short");
  expect_decl_error("nonvoid",
                    "#include <rk/kernel.h>\n"
                    "/* several\n"
                    "   lines */\n"
                    "RK_KERNEL int nv(int *x) { return x[0]; }\n",
                    4, "int nv", "void");
  expect_decl_error("tabs",
                    "#include <rk/kernel.h>\n"
                    "\tRK_KERNEL void tk(\tunsigned char c) { (void)c; }\n",
                    2, "unsigned", "unsigned char");
  expect_decl_error("bool_param",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void bk(int n, bool flag) { (void)n; }\n",
                    2, "bool", "bool");
  expect_decl_error("array_param",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void ak(int a[4]) { (void)a; }\n",
                    2, "[", "pointer");
  expect_decl_error("fnptr_param",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void fk(void (*f)(void)) { (void)f; }\n",
                    2, "(*", "pointer");
  expect_decl_error("enum_param",
                    "#include <rk/kernel.h>\n"
                    "enum color { RED };\n"
                    "RK_KERNEL void ek(enum color c) { (void)c; }\n",
                    3, "enum color c", "enum");
  expect_decl_error("duplicate",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void dup(int *x) { x[0] = 1; }\n"
                    "RK_KERNEL void dup(int *x) { x[0] = 2; }\n",
                    3, "dup", "twice");
  expect_decl_error("unnamed",
                    "#include <rk/kernel.h>\n"
                    "RK_KERNEL void un(int) { }\n",
                    2, "int)", "name");
}

/* Declarations the scanner must accept and classify. */
static void test_accepted_declarations(void) {
  static const char kSource[] =
      "#include <rk/kernel.h>\n"
      "// RK_KERNEL int not_a_kernel(short s);\n"
      "/* RK_KERNEL void hidden(char c) {} */\n"
      "static const char *text = \"RK_KERNEL int in_a_string(\";\n"
      "typedef struct vec3 { float x, y, z; } vec3_t;\n"
      "struct pair { int a, b; };\n"
      "RK_KERNEL void proto(size_t n, float *out);\n"
      "RK_KERNEL void proto(size_t n, float *out) {\n"
      "  if (rk_global_idx_x() < n && text) out[0] = 1.0f;\n"
      "}\n"
      "RK_KERNEL void kinds(const float *restrict a, volatile int *b,\n"
      "                     unsigned long long c, long d, uint32_t e,\n"
      "                     vec3_t v, struct pair p, double f, signed g,\n"
      "                     unsigned h, int64_t i, uint64_t j) {\n"
      "  (void)a; (void)b; (void)c; (void)d; (void)e; (void)v; (void)p;\n"
      "  (void)f; (void)g; (void)h; (void)i; (void)j;\n"
      "}\n"
      "RK_KERNEL void none(void) {}\n";
  rk_module_t *mod = NULL;
  if (!CHECK_OK(cpu_compile(g_ctx, kSource, "accepted.c", NULL, true, &mod)))
    return;
  CHECK(rk_module_function_count(mod) == 3,
        "%zu kernels, expected 3 (comments, strings and prototypes are not "
        "kernels)",
        rk_module_function_count(mod));
  rk_function_t *fn = NULL;
  CHECK_STATUS(rk_module_get_function(mod, "not_a_kernel", &fn),
               RK_ERR_NOT_FOUND);
  CHECK_STATUS(rk_module_get_function(mod, "hidden", &fn), RK_ERR_NOT_FOUND);
  if (!CHECK_OK(rk_module_get_function(mod, "kinds", &fn))) return;
  static const struct {
    rk_arg_kind_t kind;
    size_t size;
  } kWant[] = {{RK_ARG_PTR, 8},    {RK_ARG_PTR, 8}, {RK_ARG_U64, 8},
               {RK_ARG_I64, 8},    {RK_ARG_U32, 4}, {RK_ARG_STRUCT, 12},
               {RK_ARG_STRUCT, 8}, {RK_ARG_F64, 8}, {RK_ARG_I32, 4},
               {RK_ARG_U32, 4},    {RK_ARG_I64, 8}, {RK_ARG_U64, 8}};
  size_t n = sizeof kWant / sizeof kWant[0];
  CHECK(rk_function_param_count(fn) == n, "kinds has %zu params",
        rk_function_param_count(fn));
  for (size_t i = 0; i < n && i < rk_function_param_count(fn); ++i) {
    rk_arg_kind_t kind;
    size_t size;
    CHECK_OK(rk_function_param(fn, i, &kind, &size));
    CHECK(kind == kWant[i].kind && size == kWant[i].size,
          "param %zu: %s/%zu, expected %s/%zu", i, rk_arg_kind_name(kind), size,
          rk_arg_kind_name(kWant[i].kind), kWant[i].size);
  }
  if (CHECK_OK(rk_module_get_function(mod, "proto", &fn)))
    CHECK(rk_function_param_count(fn) == 2, "proto has %zu params",
          rk_function_param_count(fn));
  rk_module_destroy(mod);

  /* A struct larger than RK_ARG_STRUCT_MAX is refused. */
  static const char kBig[] =
      "#include <rk/kernel.h>\n"
      "typedef struct big { char bytes[300]; } big_t;\n"
      "RK_KERNEL void takes_big(big_t b) { (void)b; }\n";
  CHECK_STATUS(cpu_compile(g_ctx, kBig, "big.c", NULL, true, &mod),
               RK_ERR_COMPILE);
  CHECK_ERROR_HAS("takes_big");
  CHECK_ERROR_HAS("256");
}

/* Diagnostics of the C compiler itself name the source and its own line
 * numbers, not the generated file the runtime handed to the compiler. */
static void test_compiler_diagnostics(const char *cache) {
  static const char kSource[] =
      "#include <rk/kernel.h>\n"
      "\n"
      "RK_KERNEL void bad(int *x) {\n"
      "  x[0] = not_declared_anywhere;\n"
      "}\n";
  rk_module_t *mod = NULL;
  CHECK_STATUS(cpu_compile(g_ctx, kSource, "diag.c", NULL, true, &mod),
               RK_ERR_COMPILE);
  CHECK_ERROR_HAS("diag.c:4:");
  CHECK_ERROR_HAS("not_declared_anywhere");
  CHECK(!strstr(rk_last_error(), cache),
        "the message shows the cache directory (%s): %s", cache,
        rk_last_error());
  CHECK(!strstr(rk_last_error(), "<rk cpu wrapper>"),
        "the message blames the generated wrapper: %s", rk_last_error());
}

int main(void) {
  const char *cache = rk_test_use_temp_cache();
  rk_backend_t *be = cpu_open();
  if (!CHECK_OK(rk_backend_create_context(be, 0, &g_ctx))) return 1;
  test_refused_declarations();
  test_accepted_declarations();
  test_compiler_diagnostics(cache);
  CHECK_OK(rk_context_destroy(g_ctx));
  CHECK_OK(rk_backend_destroy(be));
  return rk_test_finish("cpu_scan");
}
