/* The kernel corpus on a GPU backend, against the CPU backend.
 *
 * Every corpus kernel (tests/codegen/kernels) is compiled from the same
 * kernel-language source by the backend under test and by the CPU backend,
 * launched on the same inputs, and every buffer compared afterwards:
 *   - integers exactly;
 *   - floats within |got - want| <= tol * (1 + |want|), tol 1e-4 (a few ulps
 *     of float after a handful of operations, room for fma contraction and
 *     summation order in tree reductions and tiles), and 2e-3 for math_all
 *     (WGSL and OpenCL allow several ulps, and absolute errors of 2^-11 for
 *     sin/cos, in their built-in functions); NaN equals NaN;
 *   - elements a race decides (the winner of an exchange or a compare-and-
 *     swap) are not compared; the rest of those buffers are.
 * Handlers run through their single-message entry and their batch entry
 * rk_batch_<name>. Kernels a target cannot express (wide_types on WGSL) must
 * be refused with RK_ERR_COMPILE. The batch and dynamic-shared-memory cases
 * are checked against a host reference as well, so that a bug shared by both
 * backends shows too.
 *
 * Built once per backend (RK_EXEC_BACKEND = RK_BACKEND_CUDA, _OPENCL or
 * _WEBGPU); exits 77 with the reason when that backend or the CPU
 * backend's compiler is not available. */
#define RK_TEST_IMPLEMENTATION
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test_util.h"
#include "rk/rk.h"
#include "rk_test.h"

#ifndef RK_EXEC_BACKEND
#error "define RK_EXEC_BACKEND (an rk_backend_kind_t)"
#endif

enum { kMaxArgs = 8 };

/* One launch argument. Scalars: kind i (int32), u (uint32), f (float).
 * B: a buffer of `count` elements of `elem` (f float, d double, i int32,
 * u uint32, l int64, or s: structs whose 4-byte words are typed by
 * `layout`, "iff" = int, float, float), filled per `fill`: r random,
 * f fraction in [0, 1), p 1..100, z zero, c the constant `value`, d
 * copied from `data`.
 * S: a struct by value (data, size). */
typedef struct arg {
  char kind;
  double value;
  char elem, fill;
  size_t count;
  const void *data;
  size_t size;
  const char *layout; /* s buffers */
  /* Elements not compared (a race decides them): a bit per element of the
   * first 64; all ones skips the whole buffer. */
  uint64_t skip;
} arg_t;

#define I32(v) \
  { 'i', (v), 0, 0, 0, NULL, 0, NULL, 0 }
#define U32(v) \
  { 'u', (v), 0, 0, 0, NULL, 0, NULL, 0 }
#define U64(v) \
  { 'U', (v), 0, 0, 0, NULL, 0, NULL, 0 }
#define F32(v) \
  { 'f', (v), 0, 0, 0, NULL, 0, NULL, 0 }
#define BUF(e, n, f) \
  { 'B', 0, (e), (f), (n), NULL, 0, NULL, 0 }
#define BUFC(e, n, v) \
  { 'B', (v), (e), 'c', (n), NULL, 0, NULL, 0 }
#define BUFD(e, n, p) \
  { 'B', 0, (e), 'd', (n), (p), 0, NULL, 0 }
#define BUFS(n, p, lay) \
  { 'B', 0, 's', 'd', (n), (p), 0, (lay), 0 }
#define BUFZS(n, lay) \
  { 'B', 0, 's', 'z', (n), NULL, 0, (lay), 0 }
#define BUFSKIP(e, n, f, mask) \
  { 'B', 0, (e), (f), (n), NULL, 0, NULL, (mask) }
#define STRUCT(p) \
  { 'S', 0, 0, 0, 0, (p), sizeof *(p), NULL, 0 }

typedef struct exec_case {
  const char *kernel, *entry;
  rk_dim3_t grid, block;
  size_t shared_mem;
  double tol;
  int nargs;
  arg_t args[kMaxArgs];
} exec_case_t;

typedef struct run {
  void *host[kMaxArgs];
  size_t bytes[kMaxArgs];
} run_t;

static rk_context_t *g_cpu, *g_dev;
static const char *g_dev_name;

static size_t elem_bytes(const arg_t *a) {
  switch (a->elem) {
    case 'd':
    case 'l':
      return 8;
    case 's':
      return 4 * strlen(a->layout);
    default:
      return 4;
  }
}

static uint64_t g_seed;
static uint32_t rnd(void) {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_seed >> 33);
}

static void fill(void *p, const arg_t *a) {
  size_t n = a->count;
  if (a->fill == 'd') {
    memcpy(p, a->data, n * elem_bytes(a));
    return;
  }
  if (a->fill == 'z') {
    memset(p, 0, n * elem_bytes(a));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    double x = a->fill == 'r'   ? (double)(rnd() % 4001) / 1000.0 - 2.0
               : a->fill == 'f' ? (double)(rnd() % 1000) / 1000.0
               : a->fill == 'p' ? (double)(1 + rnd() % 100)
                                : a->value;
    switch (a->elem) {
      case 'f':
        ((float *)p)[i] = (float)x;
        break;
      case 'd':
        ((double *)p)[i] = x;
        break;
      case 'i':
        ((int32_t *)p)[i] =
            a->fill == 'r' ? (int32_t)(rnd() % 2000) - 1000 : (int32_t)x;
        break;
      case 'u':
        ((uint32_t *)p)[i] = a->fill == 'r' ? rnd() : (uint32_t)x;
        break;
      case 'l':
        ((int64_t *)p)[i] = (int64_t)x;
        break;
    }
  }
}

/* Compiles `source` on ctx, launches `entry`, returns the buffers after the
 * launch. Failures are checks that fail, named after the backend. */
static bool launch(rk_context_t *ctx, const char *who, const exec_case_t *k,
                   const char *source, run_t *out) {
  memset(out, 0, sizeof *out);
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = k->kernel;
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_status_t s = rk_context_compile(ctx, source, &o, &mod);
  if (!CHECK(s == RK_OK, "%s: %s: compile: %s: %s", who, k->kernel,
             rk_status_name(s), rk_last_error()))
    return false;
  s = rk_module_get_function(mod, k->entry, &fn);
  bool ok = CHECK(s == RK_OK, "%s: %s: no entry %s: %s", who, k->kernel,
                  k->entry, rk_last_error());
  rk_arg_t a[kMaxArgs];
  rk_devptr_t dev[kMaxArgs] = {0};
  g_seed = 12345;
  for (int i = 0; ok && i < k->nargs; ++i) {
    const arg_t *x = &k->args[i];
    switch (x->kind) {
      case 'i':
        a[i] = rk_arg_i32((int32_t)x->value);
        break;
      case 'u':
        a[i] = rk_arg_u32((uint32_t)x->value);
        break;
      case 'f':
        a[i] = rk_arg_f32((float)x->value);
        break;
      case 'U':
        a[i] = rk_arg_u64((uint64_t)x->value);
        break;
      case 'S':
        a[i] = rk_arg_struct(x->data, x->size);
        break;
      case 'B': {
        size_t bytes = x->count * elem_bytes(x);
        out->bytes[i] = bytes;
        out->host[i] = malloc(bytes);
        if (!CHECK(out->host[i] != NULL, "out of memory")) {
          ok = false;
          break;
        }
        fill(out->host[i], x);
        ok = CHECK_OK(rk_context_allocate(ctx, bytes, &dev[i])) &&
             CHECK_OK(
                 rk_context_copy_to_device(ctx, dev[i], out->host[i], bytes));
        a[i] = rk_arg_ptr(dev[i]);
        break;
      }
    }
  }
  if (ok) {
    s = rk_function_launch(fn, k->grid, k->block, k->shared_mem, NULL, a,
                           (size_t)k->nargs);
    if (s == RK_OK) s = rk_context_synchronize(ctx);
    ok = CHECK(s == RK_OK, "%s: %s/%s: launch: %s: %s", who, k->kernel,
               k->entry, rk_status_name(s), rk_last_error());
  }
  for (int i = 0; i < k->nargs; ++i) {
    if (!dev[i]) continue;
    if (ok)
      ok = CHECK_OK(
          rk_context_copy_to_host(ctx, out->host[i], dev[i], out->bytes[i]));
    rk_context_free(ctx, dev[i]);
  }
  rk_module_destroy(mod);
  return ok;
}

static void free_run(run_t *r) {
  for (int i = 0; i < kMaxArgs; ++i) free(r->host[i]);
}

static bool floats_close(double got, double want, double tol) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (isinf(got) || isinf(want)) return got == want;
  return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* Compares buffer argument i of the two runs; returns the mismatches. */
static int compare(const exec_case_t *k, int i, const run_t *dev,
                   const run_t *cpu) {
  const arg_t *a = &k->args[i];
  size_t words = a->elem == 's' ? strlen(a->layout) : 1;
  int bad = 0;
  for (size_t e = 0; e < a->count; ++e) {
    if (a->skip == ~0ull || (e < 64 && (a->skip >> e & 1))) continue;
    for (size_t w = 0; w < words; ++w) {
      char t = a->elem == 's' ? a->layout[w] : a->elem;
      size_t off = e * elem_bytes(a) + w * 4;
      const unsigned char *g = (const unsigned char *)dev->host[i] + off;
      const unsigned char *c = (const unsigned char *)cpu->host[i] + off;
      bool same;
      double gv = 0, cv = 0;
      if (t == 'f') {
        float x, y;
        memcpy(&x, g, 4);
        memcpy(&y, c, 4);
        gv = x;
        cv = y;
        same = floats_close(x, y, k->tol);
      } else if (t == 'd') {
        memcpy(&gv, g, 8);
        memcpy(&cv, c, 8);
        same = floats_close(gv, cv, 1e-9);
      } else {
        size_t n = t == 'l' ? 8 : 4;
        same = memcmp(g, c, n) == 0;
        int64_t x = 0, y = 0;
        memcpy(&x, g, n);
        memcpy(&y, c, n);
        gv = (double)x;
        cv = (double)y;
      }
      if (!same && bad++ < 3)
        CHECK(false,
              "%s: %s/%s: argument %d element %zu word %zu: %.9g, cpu "
              "%.9g",
              g_dev_name, k->kernel, k->entry, i, e, w, gv, cv);
    }
  }
  return bad;
}

/* Runs one case on both backends and compares every buffer. With `want`
 * (may be NULL) the device's buffers are handed back for further checks. */
static bool run_case(const exec_case_t *k, run_t *want) {
  char *src = cg_read_kernel(k->kernel);
  if (!CHECK(src != NULL, "cannot read %s", k->kernel)) return false;
  run_t cpu, dev;
  bool ok = launch(g_cpu, "cpu", k, src, &cpu);
  if (ok && launch(g_dev, g_dev_name, k, src, &dev)) {
    int bad = 0;
    for (int i = 0; i < k->nargs; ++i)
      if (k->args[i].kind == 'B') bad += compare(k, i, &dev, &cpu);
    ok = CHECK(bad == 0, "%s: %s/%s: %d elements differ from the cpu backend",
               g_dev_name, k->kernel, k->entry, bad);
    printf("%-4s %s/%s\n", bad ? "FAIL" : "ok", k->kernel, k->entry);
    if (want && ok)
      *want = dev;
    else
      free_run(&dev);
  } else {
    ok = false;
  }
  free_run(&cpu);
  free(src);
  return ok;
}

/* ---- The cases ----------------------------------------------------------- */

typedef struct sim_params {
  float dt, gx, gy, gz;
  int32_t steps;
} sim_params_t;
typedef struct heat_params {
  float alpha, source;
} heat_params_t;
typedef struct range {
  float lo, hi;
} range_t;
typedef struct counter_req {
  int32_t op;
  float value;
} counter_req_t;
typedef struct counter_state {
  uint32_t seq;
  int32_t count;
  float sum;
} counter_state_t;
typedef struct div_req {
  int32_t a, b;
} div_req_t;
typedef struct echo_req {
  int32_t v;
  float scale;
} echo_req_t;

static const sim_params_t kSim = {0.01f, 0.0f, -9.8f, 0.5f, 7};
static const heat_params_t kHeat = {0.1f, 0.25f};
static const range_t kRange = {0.25f, 3.5f};
static const int32_t kSwitchProgram[12] = {1, 2, 8, 3, 5, 7 | (3 << 4),
                                           4, 8, 6, 0, 9, 1};
/* Longer loops (case 7), both signs through case 8, and every case; loop
 * counts stay far below 65535, where llvmpipe (a WebGPU implementation for
 * tests) stops any loop. Random code, as codegen_exec runs on the CPU, can
 * ask for 2^27 iterations. */
static const int32_t kSwitchProgram2[12] = {
    7 | (4000 << 4), 8, 3, 8, 6, 2, 5, 4, 7 | (77 << 4), 1, 0, 12};
enum { kMessages = 40 };
static counter_req_t g_counter_reqs[kMessages];
static div_req_t g_div_reqs[kMessages];
static echo_req_t g_echo_reqs[kMessages];
static const counter_state_t kState0 = {100, 3, 1.5f};

static void make_messages(void) {
  g_seed = 4242;
  for (int m = 0; m < kMessages; ++m) {
    g_counter_reqs[m].op = m % 11 == 10 ? 1 : m % 7 == 6 ? 2 : 0;
    g_counter_reqs[m].value = (float)(rnd() % 100) * 0.25f;
    g_div_reqs[m].a = (int32_t)(rnd() % 2001) - 1000;
    g_div_reqs[m].b = (int32_t)(rnd() % 7) - 3;
    g_echo_reqs[m].v = (int32_t)(rnd() % 2001) - 1000;
    g_echo_reqs[m].scale = (float)(rnd() % 64) * 0.125f;
  }
}

/* Elements of atomics_all that a race decides: the exchange and compare-
 * and-swap results (gi/gu 5, 8, 11) and every old value of an exchange. */
#define RACED ((1ull << 5) | (1ull << 8) | (1ull << 11))

static void run_all(bool f64) {
  const rk_dim3_t one = {1, 1, 1};
  // clang-format off
  const exec_case_t cases[] = {
      {"saxpy", "saxpy", {4, 1, 1}, {64, 1, 1}, 0, 1e-4, 4,
       {I32(250), F32(1.5), BUF('f', 256, 'r'), BUF('f', 256, 'r')}},
      {"switch_ops", "interpret", {2, 1, 1}, {64, 1, 1}, 0, 1e-4, 5,
       {I32(100), I32(12), BUFD('i', 12, kSwitchProgram), BUF('f', 128, 'r'),
        BUF('f', 128, 'z')}},
      {"switch_ops", "interpret", {2, 1, 1}, {64, 1, 1}, 0, 1e-4, 5,
       {I32(100), I32(12), BUFD('i', 12, kSwitchProgram2),
        BUF('f', 128, 'r'), BUF('f', 128, 'z')}},
      {"bits", "bits", {4, 1, 1}, {64, 1, 1}, 0, 0, 6,
       {I32(200), BUF('u', 256, 'r'), BUF('u', 256, 'z'), BUF('u', 256, 'z'),
        BUF('i', 256, 'z'), BUF('i', 256, 'z')}},
      {"loops", "loops", {2, 1, 1}, {64, 1, 1}, 0, 0, 3,
       {I32(100), BUF('i', 128, 'p'), BUF('i', 384, 'z')}},
      {"loop_exits", "loop_exits", {2, 1, 1}, {64, 1, 1}, 0, 0, 5,
       {I32(100), BUF('i', 128, 'p'), BUF('i', 384, 'z'), BUF('f', 128, 'z'),
        BUF('u', 128, 'z')}},
      {"math_all", "math_all", {1, 1, 1}, {64, 1, 1}, 0, 2e-3, 3,
       {I32(64), BUF('f', 64, 'r'), BUF('f', 64 * 14, 'z')}},
      {"defines", "defines", {2, 1, 1}, {64, 1, 1}, 0, 1e-4, 3,
       {I32(100), BUF('f', 128, 'r'), BUF('f', 128, 'z')}},
      {"structs", "integrate", {1, 1, 1}, {64, 1, 1}, 0, 1e-4, 3,
       {I32(50), STRUCT(&kSim), BUF('f', 50 * 10, 'r')}},
      {"helpers", "blend", {2, 1, 1}, {64, 1, 1}, 0, 1e-4, 6,
       {I32(120), F32(0.3), BUF('f', 128, 'r'), BUF('f', 128, 'r'),
        BUF('f', 128, 'z'), BUF('i', 128, 'z')}},
      {"matmul_tiled", "matmul_tiled", {3, 3, 1}, {16, 16, 1}, 0, 1e-4, 4,
       {I32(40), BUF('f', 1600, 'r'), BUF('f', 1600, 'r'),
        BUF('f', 1600, 'z')}},
      {"reduce_sum", "reduce_sum", {4, 1, 1}, {256, 1, 1}, 0, 1e-4, 3,
       {I32(1000), BUF('f', 1024, 'r'), BUF('f', 4, 'z')}},
      {"prefix_sum", "prefix_sum", {3, 1, 1}, {256, 1, 1}, 0, 0, 4,
       {I32(600), BUF('i', 768, 'r'), BUF('i', 768, 'z'), BUF('i', 3, 'z')}},
      {"histogram", "histogram", {4, 1, 1}, {128, 1, 1}, 0, 0, 3,
       {I32(5000), BUF('f', 5000, 'f'), BUF('u', 64, 'z')}},
      {"builtins_index", "builtins_index", {2, 2, 2}, {4, 2, 2}, 0, 0, 1,
       {BUF('u', 128 * 15, 'z')}},
      {"laplace2d", "laplace2d", {3, 2, 1}, {16, 16, 1}, 0, 1e-4, 4,
       {I32(37), I32(29), BUF('f', 37 * 29, 'r'), BUFC('f', 37 * 29, -7.0)}},
      {"heat2d", "heat2d", {3, 2, 1}, {16, 16, 1}, 0, 1e-4, 6,
       {I32(40), I32(21), STRUCT(&kHeat), BUF('f', 40 * 21, 'r'),
        BUF('f', 40 * 21, 'r'), BUFC('f', 40 * 21, 3.0)}},
      {"heat3d", "heat3d", {2, 2, 2}, {8, 8, 4}, 0, 1e-4, 6,
       {I32(10), I32(9), I32(7), F32(0.125), BUF('f', 630, 'r'),
        BUFC('f', 630, 5.0)}},
      {"atomics_all", "atomics_all", {1, 1, 1}, {32, 1, 1}, 0, 0, 4,
       {BUFSKIP('i', 12, 'z', RACED), BUFSKIP('u', 11, 'z', RACED),
        BUFSKIP('i', 32, 'z', ~0ull), BUFSKIP('u', 32, 'z', ~0ull)}},
      /* claim: which thread wins a slot is a race; out is not. */
      {"wgsl_lowering", "claim", {1, 1, 1}, {32, 1, 1}, 0, 1e-4, 5,
       {I32(21), BUFSKIP('i', 4, 'c', ~0ull), BUFSKIP('i', 32, 'c', ~0ull),
        STRUCT(&kRange), BUFC('f', 32, -777.0)}},
      {"wgsl_lowering", "scale", {2, 1, 1}, {64, 1, 1}, 0, 1e-4, 3,
       {I32(100), F32(1.75), BUF('f', 128, 'r')}},
      {"dyn_shared", "dyn_reverse", {5, 1, 1}, {64, 1, 1}, 64 * 4, 1e-4, 3,
       {I32(313), BUF('f', 320, 'r'), BUFC('f', 320, -777.0)}},
      {"dyn_shared", "dyn_reverse", {4, 1, 1}, {128, 1, 1}, 128 * 4, 1e-4, 3,
       {I32(500), BUF('f', 512, 'r'), BUFC('f', 512, -777.0)}},
      {"dyn_shared", "dyn_count", {8, 1, 1}, {128, 1, 1}, 13 * 4, 0, 4,
       {I32(1000), I32(13), BUF('i', 1024, 'p'), BUF('i', 16, 'z')}},
      /* Which thread draws which ticket is a race; the total is not. */
      {"whole_buffers", "tickets", {4, 1, 1}, {64, 1, 1}, 0, 0, 4,
       {I32(200), BUF('i', 1, 'z'), BUFSKIP('i', 256, 'z', ~0ull),
        BUF('f', 1, 'z')}},
      {"actor_echo", "add_one", one, one, 0, 1e-4, 2,
       {BUFS(1, g_echo_reqs, "if"), BUFZS(1, "if")}},
      {"actor_echo", "rk_batch_add_one", one, one, 0, 1e-4, 4,
       {BUFS(kMessages, g_echo_reqs, "if"), BUFZS(kMessages, "if"),
        BUFC('i', kMessages, 77), U32(kMessages - 3)}},
      {"actor_counter", "counter", one, one, 0, 1e-4, 3,
       {BUFS(1, g_counter_reqs, "if"), BUFZS(1, "uiff"),
        BUFS(1, &kState0, "uif")}},
      {"actor_counter", "rk_batch_counter", one, one, 0, 1e-4, 5,
       {BUFS(kMessages, g_counter_reqs, "if"), BUFZS(kMessages, "uiff"),
        BUFS(1, &kState0, "uif"), BUFC('i', kMessages, 77),
        U32(kMessages)}},
      {"actor_checked_div", "checked_div", one, one, 0, 0, 3,
       {BUFS(1, &g_div_reqs[3], "ii"), BUFZS(1, "i"), BUFC('i', 1, 77)}},
      {"actor_checked_div", "rk_batch_checked_div", one, one, 0, 0, 4,
       {BUFS(kMessages, g_div_reqs, "ii"), BUFZS(kMessages, "i"),
        BUFC('i', kMessages, 77), U32(kMessages)}},
      /* More threads than one: still only thread 0 works. */
      {"actor_checked_div", "rk_batch_checked_div", {2, 1, 1}, {8, 2, 1}, 0,
       0, 4,
       {BUFS(kMessages, g_div_reqs, "ii"), BUFZS(kMessages, "i"),
        BUFC('i', kMessages, 77), U32(kMessages - 1)}},
  };
  // clang-format on
  size_t n = sizeof cases / sizeof cases[0];
  int passed = 0;
  for (size_t c = 0; c < n; ++c) passed += run_case(&cases[c], NULL);

  /* wide_types: runs where the device has doubles and the language 64-bit
   * types (not WGSL); refused with RK_ERR_COMPILE or RK_ERR_UNIMPLEMENTED
   * otherwise. */
  const exec_case_t wide = {"wide_types",
                            "wide_types",
                            {1, 1, 1},
                            {64, 1, 1},
                            0,
                            1e-4,
                            5,
                            {I32(64), BUF('d', 64, 'r'), BUF('l', 64, 'z'),
                             U64(987654321.0), BUF('d', 64, 'z')}};
  if (f64 && RK_EXEC_BACKEND != RK_BACKEND_WEBGPU) {
    n++;
    passed += run_case(&wide, NULL);
  } else {
    char *src = cg_read_kernel("wide_types");
    rk_module_t *mod = NULL;
    rk_status_t s =
        src ? rk_context_compile(g_dev, src, NULL, &mod) : RK_ERR_NOT_FOUND;
    bool refused = s == RK_ERR_COMPILE || s == RK_ERR_UNIMPLEMENTED;
    CHECK(refused, "%s: wide_types: expected a refusal, got %s", g_dev_name,
          rk_status_name(s));
    const char *why = rk_last_error();
    printf("%-4s wide_types refused: %.*s\n", refused ? "ok" : "FAIL",
           (int)strcspn(why, "\n"), why);
    rk_module_destroy(mod);
    free(src);
  }
  printf("%s: %d of %zu cases match the cpu backend\n", g_dev_name, passed, n);
}

/* ---- Host references for what the GPU targets add ---------------------- */

/* rk_batch_counter and dyn_reverse on the device against the host. */
static void check_references(void) {
  const rk_dim3_t one = {1, 1, 1};
  exec_case_t batch = {
      "actor_counter",
      "rk_batch_counter",
      one,
      one,
      0,
      1e-4,
      5,
      {BUFS(kMessages, g_counter_reqs, "if"), BUFZS(kMessages, "uiff"),
       BUFS(1, &kState0, "uif"), BUFC('i', kMessages, 77), U32(kMessages - 5)}};
  run_t r;
  const uint32_t count = kMessages - 5;
  if (run_case(&batch, &r)) {
    counter_state_t st = kState0;
    int bad = 0;
    const unsigned char *out = r.host[1];
    const int32_t *status = r.host[3];
    for (uint32_t m = 0; m < kMessages; ++m) {
      struct {
        uint32_t seq;
        int32_t count;
        float sum, mean;
      } got;
      memcpy(&got, out + m * 16, 16);
      if (m >= count) {
        bad += got.seq != 0 || status[m] != 77;
        continue;
      }
      const counter_req_t *q = &g_counter_reqs[m];
      if (q->op == 0) {
        st.count += 1;
        st.sum += q->value;
      } else if (q->op == 1) {
        st.count = 0;
        st.sum = 0.0f;
      }
      st.seq++;
      float mean = st.count > 0 ? st.sum / (float)st.count : 0.0f;
      bad += got.seq != st.seq || got.count != st.count ||
             !floats_close(got.sum, st.sum, 1e-5) ||
             !floats_close(got.mean, mean, 1e-5) || status[m] != 0;
    }
    counter_state_t end;
    memcpy(&end, r.host[2], sizeof end);
    CHECK(bad == 0 && end.seq == st.seq && end.count == st.count,
          "%s: rk_batch_counter: %d messages differ from the host reference; "
          "state seq %u count %d (want %u %d)",
          g_dev_name, bad, end.seq, end.count, st.seq, st.count);
    free_run(&r);
  }
  exec_case_t dyn = {"dyn_shared",
                     "dyn_reverse",
                     {3, 1, 1},
                     {32, 1, 1},
                     32 * 4,
                     1e-4,
                     3,
                     {I32(90), BUF('f', 96, 'r'), BUFC('f', 96, -777.0)}};
  if (run_case(&dyn, &r)) {
    /* The inputs, regenerated as launch() made them. */
    float x[96];
    g_seed = 12345;
    fill(x, &dyn.args[1]);
    const float *out = r.host[2];
    int bad = 0;
    for (int j = 0; j < 96; ++j) {
      int base = j / 32 * 32, i = base + 31 - (j - base);
      double want = j >= 90 ? -777.0 : i < 90 ? 2.0 * x[i] : 0.0;
      bad += !floats_close(out[j], want, 1e-6);
    }
    CHECK(bad == 0, "%s: dyn_reverse: %d elements differ from the host",
          g_dev_name, bad);
    free_run(&r);
  }
}

int main(void) {
  rk_test_use_temp_cache();
  rk_backend_t *cpu = NULL, *dev = NULL;
  if (rk_backend_open(RK_EXEC_BACKEND, &dev) != RK_OK)
    RK_TEST_SKIP("the %s backend does not open: %s",
                 rk_backend_kind_name(RK_EXEC_BACKEND), rk_last_error());
  if (rk_backend_device_count(dev) < 1) {
    rk_backend_destroy(dev);
    RK_TEST_SKIP("the backend has no device");
  }
  if (rk_backend_open(RK_BACKEND_CPU, &cpu) != RK_OK) {
    rk_backend_destroy(dev);
    RK_TEST_SKIP("no CPU backend to compare with: %s", rk_last_error());
  }
  rk_device_info_t info;
  memset(&info, 0, sizeof info);
  CHECK_OK(rk_backend_device_info(dev, 0, &info));
  g_dev_name = rk_backend_name(dev);
  if (!CHECK_OK(rk_backend_create_context(cpu, 0, &g_cpu)) ||
      !CHECK_OK(rk_backend_create_context(dev, 0, &g_dev)))
    goto out;
  /* The CPU backend builds modules with a C compiler. */
  rk_module_t *probe = NULL;
  rk_status_t s = rk_context_compile(
      g_cpu, "#include <rk/kernel.h>\nRK_KERNEL void k(int *o) { o[0] = 1; }\n",
      NULL, &probe);
  if (s == RK_ERR_UNAVAILABLE) {
    rk_context_destroy(g_cpu);
    rk_context_destroy(g_dev);
    rk_backend_destroy(cpu);
    rk_backend_destroy(dev);
    RK_TEST_SKIP("no C compiler for the CPU backend: %s", rk_last_error());
  }
  CHECK_OK(s);
  rk_module_destroy(probe);
  printf("device: %s (%s)\n", info.name, g_dev_name);
  make_messages();
  run_all((info.caps & RK_CAP_F64) != 0);
  check_references();
out:
  if (g_cpu) rk_context_destroy(g_cpu);
  if (g_dev) rk_context_destroy(g_dev);
  rk_backend_destroy(cpu);
  rk_backend_destroy(dev);
  char name[64];
  snprintf(name, sizeof name, "codegen_exec_%s",
           rk_backend_kind_name(RK_EXEC_BACKEND));
  return rk_test_finish(name);
}
