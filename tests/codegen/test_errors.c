/* Diagnostics and the public API of the transpiler: every invalid source is
 * refused with RK_ERR_COMPILE, the right message, and the line and column
 * (structured in rk_diagnostic_t and as "name:line:col: error:" with the
 * source line and a caret in rk_last_error()); entry-point listings; API
 * argument checks. */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test_util.h"
#include "rk_test.h"

typedef struct error_case {
  const char *name;
  rk_target_t target;
  const char *source;
  int line;           /* expected line */
  const char *marker; /* the column is where this text starts on the line */
  const char *message;
} error_case_t;

#define K "#include <rk/kernel.h>\n"

static const error_case_t kCases[] = {
    {"direct recursion", RK_TARGET_C,
     K "static int f(int x) { return x > 0 ? f(x - 1) : 0; }\n"
       "RK_KERNEL void k(int *o) { o[0] = f(3); }\n",
     2, "f(x - 1)", "recursion is not supported (f -> f)"},
    {"mutual recursion", RK_TARGET_C,
     K "static int g(int x);\n"
       "static int f(int x) { return g(x); }\n"
       "static int g(int x) { return f(x) + 1; }\n"
       "RK_KERNEL void k(int *o) { o[0] = f(1); }\n",
     4, "f(x)", "recursion is not supported (f -> g -> f)"},
    {"function pointer", RK_TARGET_C,
     K "RK_KERNEL void k(int *o, void (*cb)(int)) { o[0] = 1; }\n", 2, "(*cb)",
     "function pointers"},
    {"pointer arithmetic", RK_TARGET_C,
     K "RK_KERNEL void k(const float *x, float *y) {\n"
       "  y[0] = (x + 1)[0];\n}\n",
     3, "x + 1", "pointer arithmetic is not supported"},
    {"dereference", RK_TARGET_C,
     K "RK_KERNEL void k(const float *x, float *y) { y[0] = *x; }\n", 2,
     "*x; }", "'*' (dereference) is not supported"},
    {"address-of outside atomics", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = (&o[1])[0]; }\n", 2, "&o[1]",
     "'&' is only allowed on an element passed as the first argument of an "
     "atomic"},
    {"goto", RK_TARGET_C, K "RK_KERNEL void k(int *o) {\n  goto end;\n}\n", 3,
     "goto", "goto is not supported"},
    {"label", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\nagain:\n  o[0] = 1;\n}\n", 3, "again",
     "labels are not supported"},
    {"varargs", RK_TARGET_C, K "static int f(int n, ...) { return n; }\n", 2,
     "...", "variadic functions ('...') are not supported"},
    {"allocation", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = (int)malloc(4); }\n", 2, "malloc",
     "call to unknown function 'malloc'"},
    {"string literal", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { printf(\"hi\"); }\n", 2, "\"hi\"",
     "string literals are not supported"},
    {"character literal", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = 'a'; }\n", 2, "'a'",
     "character literals are not supported"},
    {"double on msl", RK_TARGET_MSL,
     K "RK_KERNEL void k(int n, double *o) { o[0] = 1.0; }\n", 2, "double",
     "double is not supported by target msl"},
    {"double literal on msl", RK_TARGET_MSL,
     K "RK_KERNEL void k(float *o) { o[0] = o[1] * 0.5; }\n", 2, "0.5",
     "the constant 0.5 is a double; write 0.5f"},
    {"int64 on wgsl", RK_TARGET_WGSL,
     K "RK_KERNEL void k(int64_t *o) { o[0] = 1; }\n", 2, "int64_t",
     "64-bit integers (int64_t) are not supported by target wgsl"},
    {"union", RK_TARGET_C, K "union u { int a; float b; };\n", 2, "union",
     "unions are not supported"},
    {"enum", RK_TARGET_C, K "enum color { RED, GREEN };\n", 2, "enum",
     "enums are not supported"},
    {"undeclared name", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = y; }\n", 2, "y;",
     "use of undeclared identifier 'y'"},
    {"unknown function", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = frobnicate(1); }\n", 2, "frobnicate",
     "call to unknown function 'frobnicate'"},
    {"built-in argument count", RK_TARGET_C,
     K "RK_KERNEL void k(float *o) { o[0] = sqrtf(1.0f, 2.0f); }\n", 2, "sqrtf",
     "sqrtf expects 1 argument, got 2"},
    {"helper argument count", RK_TARGET_C,
     K "static int h(int a) { return a; }\n"
       "RK_KERNEL void k(int *o) { o[0] = h(1, 2); }\n",
     3, "h(1", "'h' expects 1 argument, got 2"},
    {"assignment to const", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  const int c = 1;\n  c = 2;\n}\n", 4,
     "c = 2", "cannot assign to const 'c'"},
    {"write to read-only buffer", RK_TARGET_C,
     K "RK_KERNEL void k(const float *x) { x[0] = 1.0f; }\n", 2, "x[0]",
     "buffer 'x' is read-only"},
    {"break outside loop", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  break;\n}\n", 3, "break",
     "'break' outside a loop or switch"},
    {"continue in switch only", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  switch (o[0]) {\n    case 1:\n"
       "      continue;\n  }\n}\n",
     5, "continue", "'continue' outside a loop"},
    {"non-constant array size", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  int n = 4;\n  float a[n];\n}\n", 4, "n]",
     "the array size must be an integer constant expression"},
    {"static const array size", RK_TARGET_C,
     K "static const int N = 4;\nRK_KERNEL void k(int *o) { float a[N]; }\n", 3,
     "N]",
     "'N' is a static const variable, which C does not treat as a "
     "constant"},
    {"shared array outside a kernel", RK_TARGET_C,
     K "static void h(void) { RK_SHARED float s[4]; }\n", 2, "s[4]",
     "RK_SHARED arrays are only allowed in RK_KERNEL functions"},
    {"shared array in a nested block", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { if (o[0]) { RK_SHARED int s[4]; } }\n", 2,
     "s[4]", "declare RK_SHARED arrays in the outermost block"},
    {"pointer in a struct", RK_TARGET_C,
     K "typedef struct { float *p; } s_t;\n", 2, "*p",
     "pointers are not allowed in structs"},
    {"pointer-typed local", RK_TARGET_C,
     K "RK_KERNEL void k(const float *x) { const float *row = x + 1; }\n", 2,
     "*row", "pointer-typed local variables are not supported"},
    {"unsupported directive", RK_TARGET_C, K "#undef FOO\n", 2, "undef",
     "preprocessor directive '#undef' is not supported"},
    {"other include", RK_TARGET_C, "#include <stdio.h>\n", 1, "<stdio.h>",
     "#include <stdio.h> is not supported"},
    {"unparenthesized define", RK_TARGET_C, K "#define N 2 + 1\n", 2, "2 + 1",
     "must be a single constant or be parenthesized"},
    {"stencil read outside the halo", RK_TARGET_C,
     K "RK_STENCIL(16, 16, 1)\n"
       "void s(rk_grid_pos_t p, int nx, int ny, const float *a, float *b) {\n"
       "  b[p.idx] = rk_at(a, p, 2, 0);\n}\n",
     4, "2, 0", "the offset dx of rk_at is 2; it must be between -1 and 1"},
    {"barrier in a stencil", RK_TARGET_C,
     K "RK_STENCIL(16, 16, 1)\n"
       "void s(rk_grid_pos_t p, int nx, int ny, float *b) {\n"
       "  rk_sync_threads();\n}\n",
     4, "rk_sync_threads", "rk_sync_threads() is not allowed in stencil 's'"},
    {"stencil writes a buffer it reads", RK_TARGET_C,
     K "RK_STENCIL(8, 8, 1)\n"
       "void s(rk_grid_pos_t p, int nx, int ny, float *a) {\n"
       "  a[p.idx] = rk_north(a, p);\n}\n",
     4, "a, p", "so it must be declared const"},
    {"handler input not const", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(m_t *in, m_t *out) { out->v = in->v; }\n",
     3, "m_t *in", "the input message must be read-only"},
    {"handler returning float", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER float h(const m_t *in, m_t *out) { return 1.0f; }\n",
     3, "float h", "an RK_HANDLER returns void or int"},
    {"kernel returning int", RK_TARGET_C,
     K "RK_KERNEL int k(int *o) { return 0; }\n", 2, "int k",
     "an RK_KERNEL function must return void"},
    {"int handler without a return value", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER int h(const m_t *in, m_t *out) {\n"
       "  if (in->v == 0) return;\n  return 0;\n}\n",
     4, "return;", "'h' must return a value"},
    {"rk_send outside a handler", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_KERNEL void k(int *o) {\n  m_t m = {1};\n"
       "  o[0] = rk_send(0, &m);\n}\n",
     5, "rk_send", "rk_send can only be used in the body of an RK_HANDLER"},
    {"rk_send in a helper", RK_TARGET_WGSL,
     K "typedef struct { int v; } m_t;\n"
       "static int f(int v) { m_t m = {v}; return rk_try_send(1, &m); }\n",
     3, "rk_try_send",
     "rk_try_send can only be used in the body of an RK_HANDLER, not in "
     "helper function 'f'"},
    {"rk_send port out of range", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  m_t m = {1};\n  rk_send(8, &m);\n}\n",
     5, "8,", "the port of rk_send"},
    {"rk_send port not constant", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  m_t m = {1};\n  rk_send(in->v, &m);\n}\n",
     5, "in->v", "the port of rk_send"},
    {"rk_send message not a local", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  rk_send(0, in);\n}\n",
     4, "in)", "the address of a local struct variable: rk_send(0, &msg)"},
    {"rk_send message a scalar", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  int x = 1;\n  rk_send(0, &x);\n}\n",
     5, "&x", "'x' is int"},
    {"rk_send two names for one port", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "#define LEFT 1\n"
       "#define WEST 1\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  m_t a = {1};\n  rk_send(LEFT, &a);\n  rk_send(WEST, &a);\n}\n",
     8, "WEST,",
     "port 1 of handler 'h' is named LEFT (line 7), not WEST: the host "
     "finds a port by its one name"},
    {"rk_send two types on one port", RK_TARGET_OPENCL,
     K "typedef struct { int v; } m_t;\n"
       "typedef struct { float f; } n_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  m_t a = {1};\n  n_t b = {2.0f};\n"
       "  rk_send(3, &a);\n  rk_try_send(3, &b);\n}\n",
     8, "&b",
     "port 3 of handler 'h' carries m_t (first used on line 7), "
     "not n_t"},
    {"handler parameter named rk_status", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER int h(const m_t *in, m_t *rk_status) { return 0; }\n",
     3, "rk_status)",
     "'rk_status': names starting with rk_ or RK_ are reserved"},
    {"assignment inside an expression", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = (o[1] = 2); }\n", 2, "= 2)",
     "assignment inside an expression is not supported"},
    {"comma operator", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  int i = 0, j = 0;\n"
       "  for (; i < 4; i++, j++) o[i] = j;\n}\n",
     4, ", j++", "the comma operator is not supported"},
    {"duplicate case", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  switch (o[0]) {\n    case 1: break;\n"
       "    case 1: break;\n  }\n}\n",
     5, "case", "duplicate case value 1"},
    {"reserved entry name", RK_TARGET_C,
     K "RK_KERNEL void min(int *o) { o[0] = 0; }\n", 2, "min",
     "'min' cannot name an entry point: target c reserves it"},
    {"dynamic shared memory as a statement", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { rk_dynamic_shared(); }\n", 2,
     "rk_dynamic_shared", "supported only as the initializer of a pointer"},
    {"dynamic shared memory cast in an expression", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = ((int *)rk_dynamic_shared())[0]; "
       "}\n",
     2, "(int *)rk", "can only initialize a pointer variable"},
    {"dynamic shared memory in a handler", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_HANDLER void h(const m_t *in, m_t *out) {\n"
       "  int *s = (int *)rk_dynamic_shared();\n}\n",
     4, "(int *)", "only available in RK_KERNEL functions, not in handler"},
    {"two dynamic shared pointers", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n"
       "  int *a = (int *)rk_dynamic_shared();\n"
       "  float *b = (float *)rk_dynamic_shared();\n}\n",
     4, "b =", "in one pointer only (the first is 'a')"},
    {"dynamic shared pointer among other declarators", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n"
       "  int x = 1, *a = (int *)rk_dynamic_shared();\n}\n",
     3, "a =", "declare the rk_dynamic_shared() pointer 'a' on its own"},
    {"dynamic shared cast to another type", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n"
       "  int *a = (float *)rk_dynamic_shared();\n}\n",
     3, "(float", "the cast must give the variable's own type"},
    {"dynamic shared of structs", RK_TARGET_C,
     K "typedef struct { int v; } m_t;\n"
       "RK_KERNEL void k(int *o) {\n"
       "  m_t *a = (m_t *)rk_dynamic_shared();\n}\n",
     4, "m_t *a", "dynamic shared memory holds int, unsigned, float"},
    {"dynamic shared pointer arithmetic", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n"
       "  int *a = (int *)rk_dynamic_shared();\n"
       "  o[0] = (a + 1)[0];\n}\n",
     4, "a + 1", "pointer arithmetic is not supported"},
    {"dynamic shared double in WGSL", RK_TARGET_WGSL,
     K "RK_KERNEL void k(int *o) {\n"
       "  double *a = (double *)rk_dynamic_shared();\n}\n",
     3, "double *a", "double is not supported by target wgsl"},
    {"#if", RK_TARGET_C, K "#if 1\n#endif\n", 2, "if 1",
     "#if is not supported: the kernel language's conditionals are #ifdef"},
    {"#ifdef without #endif", RK_TARGET_C,
     K "#ifdef A\nRK_KERNEL void k(int *o) { o[0] = 1; }\n", 2, "ifdef",
     "this #ifdef/#ifndef has no #endif"},
    {"#endif alone", RK_TARGET_C, K "#endif\n", 2, "endif",
     "#endif without #ifdef or #ifndef"},
    {"two #else", RK_TARGET_C, K "#ifndef A\n#else\n#else\n#endif\n", 4, "else",
     "a second #else for the #if on line 2"},
    {"#error", RK_TARGET_C, K "#ifndef N\n#error N must be defined\n#endif\n",
     3, "error", "#error N must be defined"},
    {"#ifdef without a name", RK_TARGET_C, K "#ifdef 3\n#endif\n", 2, "3",
     "expected a macro name after #ifdef"},
    {"pointer to pointer cast", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n"
       "  int *a = (int **)rk_dynamic_shared();\n}\n",
     3, "*)rk", "pointer casts are not supported"},
    {"atomic on the wrong element type", RK_TARGET_C,
     K "RK_KERNEL void k(uint32_t *u) { rk_atomic_add_i32(&u[0], 1); }\n", 2,
     "u[0]",
     "works on int32_t elements, but 'u' holds unsigned int; use "
     "rk_atomic_add_u32"},
    {"atomic on a local", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  int v = 0;\n"
       "  rk_atomic_add_i32(&v, 1);\n}\n",
     4, "v, 1", "needs &buf[i] or &shared[i]"},
    {"long", RK_TARGET_C, K "RK_KERNEL void k(long *o) { o[0] = 0; }\n", 2,
     "long", "'long' is not supported"},
    {"bool kernel parameter", RK_TARGET_C,
     K "RK_KERNEL void k(bool b, int *o) { o[0] = b; }\n", 2, "bool",
     "bool parameters are not supported in entry points"},
    {"pointer parameter of a helper", RK_TARGET_C,
     K "static float h(const float *x) { return x[0]; }\n", 2, "*x",
     "helper functions take and return values only"},
    {"call before declaration", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { o[0] = later(); }\n"
       "static int later(void) { return 1; }\n",
     2, "later", "call to 'later' before its declaration (line 3)"},
    {"unterminated comment", RK_TARGET_C, K "/* never closed\n", 2, "/*",
     "unterminated comment"},
    {"no effect", RK_TARGET_C, K "RK_KERNEL void k(int *o) { o[0] + 1; }\n", 2,
     "+ 1", "this expression has no effect"},
    {"declaration in a switch body", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) {\n  switch (o[0]) {\n    case 0:\n"
       "      int x = 1;\n      o[1] = x;\n  }\n}\n",
     5, "int x", "declarations directly inside a switch body"},
    {"mutable global", RK_TARGET_C, K "int counter = 0;\n", 2, "counter",
     "mutable global variables are not supported"},
    {"missing return value", RK_TARGET_C,
     K "static int h(int a) { if (a) return; return 1; }\n", 2, "return;",
     "'h' must return a value"},
    {"double on wgsl", RK_TARGET_WGSL,
     K "RK_KERNEL void k(double *o) { o[0] = 1.0; }\n", 2, "double",
     "double is not supported by target wgsl"},
    {"entry name reserved by wgsl", RK_TARGET_WGSL,
     K "RK_KERNEL void filter(int *o) { o[0] = 1; }\n", 2, "filter",
     "'filter' cannot name an entry point: WGSL reserves it"},
    {"wgsl module-scope clash", RK_TARGET_WGSL,
     K "static int x(int a) { return a; }\n"
       "RK_KERNEL void k(int *x) { x[0] = 1; }\n",
     3, "x)", "'x' would be declared twice at WGSL module scope"},
    {"wgsl ?: with effects in a loop condition", RK_TARGET_WGSL,
     K "RK_KERNEL void k(int *o) {\n"
       "  while ((o[2] > 0 ? rk_atomic_add_i32(&o[1], 1) : 0) < 5) {\n"
       "  }\n}\n",
     3, "? rk_atomic", "this ?: cannot be expressed in WGSL here"},
    {"increment inside an expression", RK_TARGET_C,
     K "RK_KERNEL void k(int *o) { int i = 0; o[i++] = 1; }\n", 2, "++",
     "'++' inside an expression is not supported"},
};

static int column_of(const char *source, int line, const char *marker) {
  const char *s = source;
  for (int l = 1; l < line && s; ++l) {
    s = strchr(s, '\n');
    if (s) s++;
  }
  if (!s) return -1;
  size_t len = strcspn(s, "\n");
  for (size_t i = 0; i + strlen(marker) <= len; ++i)
    if (strncmp(s + i, marker, strlen(marker)) == 0) return (int)i + 1;
  return -1;
}

static void test_error_cases(void) {
  size_t n = sizeof kCases / sizeof kCases[0];
  CHECK(n >= 20, "only %zu error cases", n);
  for (size_t i = 0; i < n; ++i) {
    const error_case_t *c = &kCases[i];
    int col = column_of(c->source, c->line, c->marker);
    if (!CHECK(col > 0, "%s: marker '%s' not on line %d", c->name, c->marker,
               c->line))
      continue;
    rk_transpile_options_t o;
    rk_transpile_options_init(&o);
    o.source_name = "case.c";
    rk_diagnostic_t d;
    char *out = NULL;
    rk_test_clear_error();
    rk_status_t s = rk_transpile_ex(c->source, c->target, &o, &out, &d);
    if (!CHECK(s == RK_ERR_COMPILE, "%s: got %s (%s)", c->name,
               rk_status_name(s), rk_last_error())) {
      rk_transpile_free(out);
      continue;
    }
    CHECK(out == NULL, "%s: out_text set on failure", c->name);
    CHECK((int)d.line == c->line && (int)d.column == col,
          "%s: diagnostic at %u:%u, expected %d:%d (%s)", c->name,
          (unsigned)d.line, (unsigned)d.column, c->line, col, d.message);
    CHECK(strstr(d.message, c->message) != NULL,
          "%s: message \"%s\" lacks \"%s\"", c->name, d.message, c->message);
    CHECK(strcmp(d.source_name, "case.c") == 0, "%s: source name '%s'", c->name,
          d.source_name);
    /* The text form: location, message, the line, and a caret under the
     * column. */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "case.c:%d:%d: error: ", c->line, col);
    const char *e = rk_last_error();
    CHECK(strncmp(e, prefix, strlen(prefix)) == 0, "%s: message '%s'", c->name,
          e);
    const char *line2 = strchr(e, '\n');
    const char *line3 = line2 ? strchr(line2 + 1, '\n') : NULL;
    if (CHECK(line3 != NULL, "%s: no source line and caret", c->name)) {
      const char *caret = line3 + 1;
      CHECK((int)strlen(caret) == col && caret[col - 1] == '^',
            "%s: caret line '%s' for column %d", c->name, caret, col);
    }
    /* The same diagnostic comes from the entry listing. */
    if (c->target == RK_TARGET_C) {
      rk_entry_list_t *list = NULL;
      rk_diagnostic_t d2;
      CHECK_STATUS(rk_codegen_list_entries(c->source, &o, &list, &d2),
                   RK_ERR_COMPILE);
      CHECK(list == NULL && d2.line == d.line && d2.column == d.column,
            "%s: list_entries diagnostic %u:%u", c->name, (unsigned)d2.line,
            (unsigned)d2.column);
    }
  }
}

/* ---- Entry listings -------------------------------------------------------
 */

static const rk_entry_t *find(const rk_entry_list_t *l, const char *name) {
  for (size_t i = 0; i < l->count; ++i)
    if (strcmp(l->entries[i].name, name) == 0) return &l->entries[i];
  return NULL;
}

/* A parameter of a listed entry, compared field by field. */
static bool param_is(const rk_entry_param_t *p, const char *name,
                     const char *type, rk_arg_kind_t kind, size_t size,
                     size_t elem_size, bool read_only) {
  return strcmp(p->name, name) == 0 && strcmp(p->type, type) == 0 &&
         p->kind == kind && p->size == size && p->elem_size == elem_size &&
         p->read_only == read_only;
}

/* Every handler is listed followed by its batch entry rk_batch_<name>:
 * (in, out[, state], int32_t *rk_status, uint32_t rk_count). */
static void test_batch_entries(void) {
  rk_entry_list_t *l = NULL;
  char *src = cg_read_kernel("actor_counter");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    CHECK(l->count == 2 && strcmp(l->entries[0].name, "counter") == 0 &&
              l->entries[0].batch_of == NULL,
          "counter then its batch: %zu entries", l->count);
    const rk_entry_t *b = l->count == 2 ? &l->entries[1] : NULL;
    if (CHECK(b && strcmp(b->name, "rk_batch_counter") == 0, "no batch")) {
      CHECK(b->kind == RK_ENTRY_KERNEL && b->batch_of &&
                strcmp(b->batch_of, "counter") == 0 && !b->handler_status &&
                !b->dynamic_shared && !b->uses_barrier && b->param_count == 5,
            "rk_batch_counter: kind %d of %s params %zu", (int)b->kind,
            b->batch_of ? b->batch_of : "(null)", b->param_count);
      if (b->param_count == 5) {
        CHECK(param_is(&b->params[0], "in", "const counter_req_t *", RK_ARG_PTR,
                       8, 8, true) &&
                  param_is(&b->params[1], "out", "counter_resp_t *", RK_ARG_PTR,
                           8, 16, false) &&
                  param_is(&b->params[2], "state", "counter_state_t *",
                           RK_ARG_PTR, 8, 12, false) &&
                  param_is(&b->params[3], "rk_status", "int32_t *", RK_ARG_PTR,
                           8, 4, false) &&
                  param_is(&b->params[4], "rk_count", "uint32_t", RK_ARG_U32, 4,
                           0, false),
              "rk_batch_counter params: %s %s / %s %s", b->params[3].name,
              b->params[3].type, b->params[4].name, b->params[4].type);
      }
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  src = cg_read_kernel("actor_checked_div");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *b = find(l, "rk_batch_checked_div");
    if (CHECK(b != NULL && b->param_count == 4, "rk_batch_checked_div")) {
      CHECK(param_is(&b->params[2], "rk_status", "int32_t *", RK_ARG_PTR, 8, 4,
                     false) &&
                param_is(&b->params[3], "rk_count", "uint32_t", RK_ARG_U32, 4,
                         0, false) &&
                !b->handler_status,
            "int handler batch: status then count");
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  /* options.entry = the handler (as the actor layer asks): both entries in
   * every output; = its batch entry: that one alone. The list holds exactly
   * the one named. */
  const char *two = K
      "typedef struct { int v; } m_t;\n"
      "RK_KERNEL void k(int *o) { o[0] = 1; }\n"
      "RK_HANDLER void h(const m_t *in, m_t *out) { out->v = in->v; }\n"
      "RK_HANDLER int g(const m_t *in, m_t *out) { return in->v; }\n";
  static const char *const kSelect[] = {"h", "rk_batch_h"};
  for (int i = 0; i < 2; ++i) {
    rk_transpile_options_t o;
    rk_transpile_options_init(&o);
    o.entry = kSelect[i];
    if (CHECK_OK(rk_codegen_list_entries(two, &o, &l, NULL))) {
      CHECK(l->count == 1 && strcmp(l->entries[0].name, o.entry) == 0 &&
                (i == 0) == (l->entries[0].batch_of == NULL),
            "entry %s lists exactly that entry (%zu entries)", o.entry,
            l->count);
      rk_entry_list_destroy(l);
    }
    for (int t = 0; t < RK_TARGET_COUNT_; ++t) {
      char *out = NULL;
      if (!CHECK_OK(rk_transpile(two, (rk_target_t)t, &o, &out))) continue;
      CHECK(strstr(out, "rk_batch_h(") && !strstr(out, "rk_batch_g") &&
                !strstr(out, " k(") && (i == 0) == (strstr(out, " h(") != NULL),
            "%s, entry %s: %s only:\n%s", rk_target_name((rk_target_t)t),
            o.entry, i == 0 ? "h and rk_batch_h" : "rk_batch_h", out);
      rk_transpile_free(out);
    }
  }
  /* rk_dynamic_shared() marks its kernel; the memory is no parameter. */
  src = cg_read_kernel("dyn_shared");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *r = find(l, "dyn_reverse"), *c = find(l, "dyn_count");
    CHECK(r && c && r->dynamic_shared && c->dynamic_shared &&
              r->param_count == 3 && c->param_count == 4 &&
              r->shared_bytes == 0 && r->uses_barrier,
          "dyn_shared entries");
    rk_entry_list_destroy(l);
  }
  free(src);
  src = cg_read_kernel("saxpy");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    CHECK(l->count == 1 && !l->entries[0].dynamic_shared &&
              !l->entries[0].batch_of,
          "saxpy: no dynamic shared memory, no batch");
    rk_entry_list_destroy(l);
  }
  free(src);

  /* An entry point may shadow a WGSL built-in function the output does not
   * call (transpose); keywords and types stay refused. */
  {
    char *out = NULL;
    const char *tr = K
        "RK_KERNEL void transpose(int w, const int *in, int *out) {\n"
        "  uint32_t x = rk_global_idx_x();\n"
        "  if (x < (uint32_t)w) out[x] = in[w - 1 - (int)x];\n}\n";
    if (CHECK_OK(rk_transpile(tr, RK_TARGET_WGSL, NULL, &out))) {
      CHECK(strstr(out, "\nfn transpose(@builtin") != NULL,
            "WGSL entry transpose:\n%s", out);
      rk_transpile_free(out);
    }
    CHECK_STATUS(rk_transpile(K "RK_KERNEL void loop(int *o) { o[0] = 1; }\n",
                              RK_TARGET_WGSL, NULL, &out),
                 RK_ERR_COMPILE);
    CHECK_ERROR_HAS("WGSL reserves it");
  }

  /* A batch entry's name is not a handler's. */
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.entry = "rk_batch_k";
  CHECK_STATUS(rk_codegen_list_entries(two, &o, &l, NULL), RK_ERR_NOT_FOUND);
  o.entry = "rk_batch_";
  CHECK_STATUS(rk_codegen_list_entries(two, &o, &l, NULL), RK_ERR_NOT_FOUND);
  /* Generated names cannot collide with the user's: rk_ is reserved. */
  CHECK_STATUS(rk_codegen_list_entries(
                   K "RK_KERNEL void rk_batch_h(int *o) {}\n", NULL, &l, NULL),
               RK_ERR_COMPILE);
  CHECK_ERROR_HAS("reserved");
}

static void test_entries(void) {
  char *src = cg_read_kernel("saxpy");
  rk_entry_list_t *l = NULL;
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    CHECK(l->count == 1, "saxpy: %zu entries", l->count);
    const rk_entry_t *e = find(l, "saxpy");
    if (CHECK(e != NULL, "no saxpy")) {
      CHECK(e->kind == RK_ENTRY_KERNEL && e->param_count == 4,
            "saxpy: kind %d, %zu params", (int)e->kind, e->param_count);
      static const rk_arg_kind_t kinds[] = {RK_ARG_I32, RK_ARG_F32, RK_ARG_PTR,
                                            RK_ARG_PTR};
      static const size_t sizes[] = {4, 4, 8, 8};
      static const char *const names[] = {"n", "a", "x", "y"};
      for (size_t i = 0; i < 4 && i < e->param_count; ++i) {
        const rk_entry_param_t *p = &e->params[i];
        CHECK(p->kind == kinds[i] && p->size == sizes[i] &&
                  strcmp(p->name, names[i]) == 0,
              "saxpy param %zu: %s %s kind %d size %zu", i, p->type, p->name,
              (int)p->kind, p->size);
      }
      CHECK(e->params[2].read_only && e->params[2].elem_size == 4 &&
                strcmp(e->params[2].type, "const float *") == 0,
            "saxpy x: %s", e->params[2].type);
      CHECK(!e->params[3].read_only, "saxpy y is writable");
      CHECK(!e->uses_barrier && e->shared_bytes == 0, "saxpy: no sharing");
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  src = cg_read_kernel("heat3d");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *e = find(l, "heat3d");
    if (CHECK(e != NULL, "no heat3d")) {
      CHECK(e->kind == RK_ENTRY_STENCIL && e->dims == 3 && e->tile[0] == 8 &&
                e->tile[1] == 8 && e->tile[2] == 4 && e->halo == 1,
            "heat3d: dims %u tile %ux%ux%u halo %u", e->dims, e->tile[0],
            e->tile[1], e->tile[2], e->halo);
      /* nx, ny, nz, alpha, u, u_next: the position is not a launch arg. */
      CHECK(e->param_count == 6 && strcmp(e->params[0].name, "nx") == 0,
            "heat3d: %zu params", e->param_count);
      CHECK(e->shared_bytes == 10 * 10 * 6 * 4, "heat3d tile bytes %zu",
            e->shared_bytes);
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  src = cg_read_kernel("actor_counter");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *e = find(l, "counter");
    if (CHECK(e != NULL, "no counter")) {
      CHECK(e->kind == RK_ENTRY_HANDLER && e->param_count == 3 &&
                !e->handler_status,
            "counter: kind %d status %d", (int)e->kind, (int)e->handler_status);
      CHECK(e->params[0].elem_size == 8 && e->params[0].read_only &&
                e->params[1].elem_size == 16 && e->params[2].elem_size == 12,
            "counter message sizes %zu %zu %zu", e->params[0].elem_size,
            e->params[1].elem_size, e->params[2].elem_size);
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  src = cg_read_kernel("actor_checked_div");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *e = find(l, "checked_div");
    if (CHECK(e != NULL, "no checked_div")) {
      /* in, out, then the kernel's trailing status buffer. */
      CHECK(e->kind == RK_ENTRY_HANDLER && e->handler_status &&
                e->param_count == 3,
            "checked_div: kind %d status %d params %zu", (int)e->kind,
            (int)e->handler_status, e->param_count);
      if (e->param_count == 3) {
        const rk_entry_param_t *st = &e->params[2];
        CHECK(strcmp(st->name, "rk_status") == 0 &&
                  strcmp(st->type, "int32_t *") == 0 &&
                  st->kind == RK_ARG_PTR && st->size == 8 &&
                  st->elem_size == 4 && !st->read_only,
              "rk_status: %s %s kind %d size %zu elem %zu ro %d", st->name,
              st->type, (int)st->kind, st->size, st->elem_size,
              (int)st->read_only);
        CHECK(e->params[0].elem_size == 8 && e->params[0].read_only &&
                  e->params[1].elem_size == 4,
              "checked_div message sizes %zu %zu", e->params[0].elem_size,
              e->params[1].elem_size);
      }
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  test_batch_entries();

  src = cg_read_kernel("structs");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    const rk_entry_t *e = find(l, "integrate");
    if (CHECK(e != NULL && e->param_count == 3, "no integrate")) {
      CHECK(e->params[1].kind == RK_ARG_STRUCT && e->params[1].size == 20 &&
                strcmp(e->params[1].type, "sim_params_t") == 0,
            "integrate prm: %s %zu", e->params[1].type, e->params[1].size);
      CHECK(e->params[2].elem_size == 40, "particle_t is %zu bytes",
            e->params[2].elem_size);
    }
    rk_entry_list_destroy(l);
  }
  free(src);

  src = cg_read_kernel("reduce_sum");
  if (src && CHECK_OK(rk_codegen_list_entries(src, NULL, &l, NULL))) {
    CHECK(l->count == 1 && l->entries[0].uses_barrier &&
              l->entries[0].shared_bytes == 256 * 4,
          "reduce_sum: barrier %d shared %zu", l->entries[0].uses_barrier,
          l->entries[0].shared_bytes);
    rk_entry_list_destroy(l);
  }
  free(src);

  /* A helper that synchronizes makes its kernel use the barrier. */
  const char *indirect = K
      "static void step(void) { rk_sync_threads(); }\n"
      "RK_KERNEL void a(int *o) { step(); }\n"
      "RK_KERNEL void b(int *o) { o[0] = 1; }\n";
  if (CHECK_OK(rk_codegen_list_entries(indirect, NULL, &l, NULL))) {
    CHECK(l->count == 2 && find(l, "a")->uses_barrier &&
              !find(l, "b")->uses_barrier,
          "barrier through a helper");
    rk_entry_list_destroy(l);
  }
}

/* ---- API ------------------------------------------------------------------
 */

static void test_api(void) {
  for (int t = 0; t < RK_TARGET_COUNT_; ++t) {
    rk_target_t back;
    CHECK_OK(rk_target_from_name(rk_target_name((rk_target_t)t), &back));
    CHECK(back == (rk_target_t)t, "round trip of %s", rk_target_name(t));
  }
  rk_target_t t;
  CHECK_OK(rk_target_from_name("OpenCL", &t));
  CHECK(t == RK_TARGET_OPENCL, "case-insensitive names");
  CHECK_STATUS(rk_target_from_name("hlsl", &t), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("known: c, cuda, opencl, wgsl, msl");
  CHECK(strcmp(rk_target_name((rk_target_t)99), "unknown") == 0, "unknown");
  CHECK(strcmp(rk_entry_kind_name(RK_ENTRY_STENCIL), "stencil") == 0,
        "entry kind names");

  const char *src = K
      "RK_KERNEL void one(int *o) { o[0] = 1; }\n"
      "RK_KERNEL void two(int *o) { o[0] = 2; }\n";
  char *out = NULL;
  CHECK_STATUS(rk_transpile(NULL, RK_TARGET_C, NULL, &out),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_transpile(src, RK_TARGET_C, NULL, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_transpile(src, (rk_target_t)42, NULL, &out),
               RK_ERR_INVALID_ARGUMENT);
  /* WGSL: several entry points prefix their module-scope resources. */
  if (CHECK_OK(rk_transpile(src, RK_TARGET_WGSL, NULL, &out))) {
    CHECK(strstr(out, "var<storage, read_write> one_o: array<i32>;") &&
              strstr(out, "var<storage, read_write> two_o: array<i32>;"),
          "WGSL resources of two entries");
    rk_transpile_free(out);
  }
  /* ... and so do int handlers' status buffers, bound after the messages. */
  const char *handlers = K
      "typedef struct { int v; } m_t;\n"
      "RK_HANDLER int h1(const m_t *in, m_t *out) { return in->v; }\n"
      "RK_HANDLER int h2(const m_t *in, m_t *out, m_t *s) { return 0; }\n";
  if (CHECK_OK(rk_transpile(handlers, RK_TARGET_WGSL, NULL, &out))) {
    CHECK(strstr(out,
                 "@binding(2) var<storage, read_write> h1_rk_status: "
                 "array<i32>;") &&
              strstr(out,
                     "@binding(3) var<storage, read_write> h2_rk_status: "
                     "array<i32>;") &&
              strstr(out, "h1_rk_status[0] = rk_handle_h1(0u);") &&
              strstr(out, "fn rk_handle_h2(rk_m: u32) -> i32 {") &&
              strstr(out,
                     "@binding(3) var<storage, read> rk_params_rk_batch_h1: "
                     "rk_params_rk_batch_h1_t;") &&
              strstr(out, "h2_rk_status[rk_m] = rk_handle_h2(rk_m);"),
          "WGSL status buffers of two handlers:\n%s", out);
    rk_transpile_free(out);
  }

  /* NULL options: defaults. */
  if (CHECK_OK(rk_transpile(src, RK_TARGET_CUDA, NULL, &out))) {
    CHECK(strstr(out, "<source>") != NULL, "default source name");
    CHECK(strstr(out, "void one(") && strstr(out, "void two("), "all entries");
    rk_transpile_free(out);
  }
  /* One entry. */
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.entry = "two";
  if (CHECK_OK(rk_transpile(src, RK_TARGET_OPENCL, &o, &out))) {
    CHECK(!strstr(out, "void one(") && strstr(out, "void two("),
          "only entry 'two'");
    rk_transpile_free(out);
  }
  rk_entry_list_t *l = NULL;
  if (CHECK_OK(rk_codegen_list_entries(src, &o, &l, NULL))) {
    CHECK(l->count == 1 && strcmp(l->entries[0].name, "two") == 0,
          "entry filter in lists");
    rk_entry_list_destroy(l);
  }
  o.entry = "three";
  rk_diagnostic_t d;
  CHECK_STATUS(rk_transpile_ex(src, RK_TARGET_C, &o, &out, &d),
               RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("it has: one, two");
  CHECK(d.line == 0, "no diagnostic location for NOT_FOUND");
  CHECK_STATUS(rk_codegen_list_entries(src, &o, &l, NULL), RK_ERR_NOT_FOUND);
  CHECK(l == NULL, "no list on failure");
  CHECK_STATUS(rk_codegen_list_entries(src, NULL, NULL, NULL),
               RK_ERR_INVALID_ARGUMENT);
  rk_entry_list_destroy(NULL);
  rk_transpile_free(NULL);

  /* The preprocessor lines the language accepts. */
  const char *pp =
      "#pragma once\n#include \"rk/kernel.h\"\n"
      "  #  include <rk/kernel.h>  // again\n"
      "#define N (4 * \\\n  2)\n"
      "RK_KERNEL void k(int *o) { o[0] = N; }\n";
  if (CHECK_OK(rk_transpile(pp, RK_TARGET_C, NULL, &out))) {
    CHECK(strstr(out, "#define N (4 * 2)") != NULL, "define kept: %s", out);
    rk_transpile_free(out);
  }

  /* An empty source is valid and has no entries. */
  if (CHECK_OK(rk_codegen_list_entries("", NULL, &l, NULL))) {
    CHECK(l->count == 0 && l->entries == NULL, "empty source");
    rk_entry_list_destroy(l);
  }

  /* Too large. */
  size_t big = (1u << 20) + 16;
  char *huge = malloc(big + 1);
  if (huge) {
    memset(huge, ' ', big);
    huge[big] = '\0';
    CHECK_STATUS(rk_transpile(huge, RK_TARGET_C, NULL, &out),
                 RK_ERR_OUT_OF_RANGE);
    CHECK_ERROR_HAS("larger than");
    free(huge);
  }
}

int main(void) {
  test_error_cases();
  test_entries();
  test_api();
  return rk_test_finish("codegen_errors");
}
