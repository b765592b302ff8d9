/* The C output runs on the CPU backend unchanged and means what the source
 * means:
 *   - plain RK_KERNEL sources are valid C themselves, so the source and its
 *     transpiled C are both compiled by the CPU backend and run on the same
 *     inputs; every output buffer must be identical, byte for byte;
 *   - stencils and handlers (lowered by the transpiler) are checked against
 *     reference computations here; atomics against their known results.
 * Skipped (exit 77) when the CPU backend or a C compiler is missing. */
#define RK_TEST_IMPLEMENTATION
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_test_util.h"
#include "rk/rk.h"
#include "rk_test.h"

static rk_context_t *g_ctx;

/* ---- Launch plumbing ------------------------------------------------------
 */

/* One launch argument. Buffers: element type f (float), d (double),
 * i (int32), u (uint32), l (int64); fill r (random), p (1..100), z (zero),
 * c (the constant `value`), f (fraction in [0, 1)). */
typedef struct arg {
  char kind; /* i u f d U (uint64) scalar, B buffer, S struct */
  double value;
  char elem, fill;
  size_t count;
  const void *data; /* S */
  size_t size;      /* S */
} arg_t;

#define I32(v) \
  { 'i', (v), 0, 0, 0, NULL, 0 }
#define F32(v) \
  { 'f', (v), 0, 0, 0, NULL, 0 }
#define U64(v) \
  { 'U', (v), 0, 0, 0, NULL, 0 }
#define BUF(e, n, f) \
  { 'B', 0, (e), (f), (n), NULL, 0 }
#define BUFC(e, n, v) \
  { 'B', (v), (e), 'c', (n), NULL, 0 }
#define STRUCT(p) \
  { 'S', 0, 0, 0, 0, (p), sizeof *(p) }

enum { kMaxArgs = 8 };

typedef struct run {
  void *host[kMaxArgs]; /* buffer contents after the launch */
  size_t bytes[kMaxArgs];
} run_t;

static size_t elem_size(char e) { return e == 'd' || e == 'l' ? 8 : 4; }

static uint64_t g_seed;
static uint32_t rnd(void) {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_seed >> 33);
}

static void fill(void *p, const arg_t *a) {
  for (size_t i = 0; i < a->count; ++i) {
    double x = a->fill == 'r'   ? (double)(rnd() % 4001) / 1000.0 - 2.0
               : a->fill == 'f' ? (double)(rnd() % 1000) / 1000.0
               : a->fill == 'p' ? (double)(1 + rnd() % 100)
               : a->fill == 'c' ? a->value
                                : 0.0;
    switch (a->elem) {
      case 'f':
        ((float *)p)[i] = (float)x;
        break;
      case 'd':
        ((double *)p)[i] = x;
        break;
      case 'i':
        ((int32_t *)p)[i] = a->fill == 'r' ? (int32_t)rnd() % 1000 : (int32_t)x;
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

/* Compiles `source`, launches `entry` with args, returns the buffers. */
static bool launch(const char *source, const char *source_name,
                   const char *entry, rk_dim3_t grid, rk_dim3_t block,
                   const arg_t *args, int nargs, run_t *out) {
  memset(out, 0, sizeof *out);
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = source_name;
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  if (!CHECK_OK(rk_context_compile(g_ctx, source, &o, &mod))) return false;
  bool ok = CHECK_OK(rk_module_get_function(mod, entry, &fn));
  rk_arg_t a[kMaxArgs];
  rk_devptr_t dev[kMaxArgs] = {0};
  g_seed = 12345;
  for (int i = 0; ok && i < nargs; ++i) {
    switch (args[i].kind) {
      case 'i':
        a[i] = rk_arg_i32((int32_t)args[i].value);
        break;
      case 'u':
        a[i] = rk_arg_u32((uint32_t)args[i].value);
        break;
      case 'f':
        a[i] = rk_arg_f32((float)args[i].value);
        break;
      case 'd':
        a[i] = rk_arg_f64(args[i].value);
        break;
      case 'U':
        a[i] = rk_arg_u64((uint64_t)args[i].value);
        break;
      case 'S':
        a[i] = rk_arg_struct(args[i].data, args[i].size);
        break;
      case 'B': {
        size_t bytes = args[i].count * elem_size(args[i].elem);
        out->bytes[i] = bytes;
        out->host[i] = malloc(bytes);
        fill(out->host[i], &args[i]);
        ok = CHECK_OK(rk_context_allocate(g_ctx, bytes, &dev[i])) &&
             CHECK_OK(
                 rk_context_copy_to_device(g_ctx, dev[i], out->host[i], bytes));
        a[i] = rk_arg_ptr(dev[i]);
        break;
      }
    }
  }
  if (ok)
    ok = CHECK_OK(
             rk_function_launch(fn, grid, block, 0, NULL, a, (size_t)nargs)) &&
         CHECK_OK(rk_context_synchronize(g_ctx));
  for (int i = 0; i < nargs; ++i) {
    if (!dev[i]) continue;
    if (ok)
      ok = CHECK_OK(
          rk_context_copy_to_host(g_ctx, out->host[i], dev[i], out->bytes[i]));
    rk_context_free(g_ctx, dev[i]);
  }
  rk_module_destroy(mod);
  return ok;
}

static void free_run(run_t *r) {
  for (int i = 0; i < kMaxArgs; ++i) free(r->host[i]);
}

static char *transpile_c(const char *kernel) {
  char *src = cg_read_kernel(kernel);
  char *out = NULL;
  if (CHECK(src != NULL, "cannot read %s", kernel))
    CHECK_OK(cg_transpile(src, kernel, RK_TARGET_C, &out));
  free(src);
  return out;
}

/* ---- Source vs. transpiled C ----------------------------------------------
 */

typedef struct diff_case {
  const char *kernel, *entry;
  rk_dim3_t grid, block;
  arg_t args[kMaxArgs];
  int nargs;
} diff_case_t;

typedef struct sim_params {
  float dt, gx, gy, gz;
  int32_t steps;
} sim_params_t;

static const sim_params_t kSim = {0.01f, 0.0f, -9.8f, 0.5f, 7};

static void test_differential(void) {
  const diff_case_t cases[] = {
      {"saxpy",
       "saxpy",
       {4, 1, 1},
       {64, 1, 1},
       {I32(250), F32(1.5), BUF('f', 256, 'r'), BUF('f', 256, 'r')},
       4},
      {"switch_ops",
       "interpret",
       {2, 1, 1},
       {64, 1, 1},
       {I32(100), I32(12), BUF('u', 12, 'r'), BUF('f', 128, 'r'),
        BUF('f', 128, 'z')},
       5},
      {"bits",
       "bits",
       {4, 1, 1},
       {64, 1, 1},
       {I32(200), BUF('u', 256, 'r'), BUF('u', 256, 'z'), BUF('u', 256, 'z'),
        BUF('i', 256, 'z'), BUF('i', 256, 'z')},
       6},
      {"loops",
       "loops",
       {2, 1, 1},
       {64, 1, 1},
       {I32(100), BUF('i', 128, 'p'), BUF('i', 384, 'z')},
       3},
      {"math_all",
       "math_all",
       {1, 1, 1},
       {64, 1, 1},
       {I32(64), BUF('f', 64, 'r'), BUF('f', 64 * 14, 'z')},
       3},
      {"defines",
       "defines",
       {2, 1, 1},
       {64, 1, 1},
       {I32(100), BUF('f', 128, 'r'), BUF('f', 128, 'z')},
       3},
      {"structs",
       "integrate",
       {1, 1, 1},
       {64, 1, 1},
       {I32(50), STRUCT(&kSim), BUF('f', 50 * 10, 'r')},
       3},
      {"helpers",
       "blend",
       {2, 1, 1},
       {64, 1, 1},
       {I32(120), F32(0.3), BUF('f', 128, 'r'), BUF('f', 128, 'r'),
        BUF('f', 128, 'z'), BUF('i', 128, 'z')},
       6},
      {"wide_types",
       "wide_types",
       {1, 1, 1},
       {64, 1, 1},
       {I32(64), BUF('d', 64, 'r'), BUF('l', 64, 'z'), U64(987654321.0),
        BUF('d', 64, 'z')},
       5},
      {"matmul_tiled",
       "matmul_tiled",
       {3, 3, 1},
       {16, 16, 1},
       {I32(40), BUF('f', 1600, 'r'), BUF('f', 1600, 'r'), BUF('f', 1600, 'z')},
       4},
      {"reduce_sum",
       "reduce_sum",
       {4, 1, 1},
       {256, 1, 1},
       {I32(1000), BUF('f', 1024, 'r'), BUF('f', 4, 'z')},
       3},
      {"prefix_sum",
       "prefix_sum",
       {3, 1, 1},
       {256, 1, 1},
       {I32(600), BUF('i', 768, 'r'), BUF('i', 768, 'z'), BUF('i', 3, 'z')},
       4},
      {"histogram",
       "histogram",
       {4, 1, 1},
       {128, 1, 1},
       {I32(5000), BUF('f', 5000, 'f'), BUF('u', 64, 'z')},
       3},
      {"builtins_index",
       "builtins_index",
       {2, 2, 2},
       {4, 2, 2},
       {BUF('u', 128 * 15, 'z')},
       1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const diff_case_t *k = &cases[c];
    char *src = cg_read_kernel(k->kernel);
    char *gen = transpile_c(k->kernel);
    run_t a, b;
    if (src && gen &&
        launch(src, k->kernel, k->entry, k->grid, k->block, k->args, k->nargs,
               &a) &&
        launch(gen, "generated", k->entry, k->grid, k->block, k->args, k->nargs,
               &b)) {
      for (int i = 0; i < k->nargs; ++i) {
        if (!a.host[i]) continue;
        CHECK(memcmp(a.host[i], b.host[i], a.bytes[i]) == 0,
              "%s: buffer argument %d differs between the source and its C "
              "output",
              k->kernel, i);
      }
      free_run(&a);
      free_run(&b);
    }
    free(src);
    free(gen);
  }
}

/* ---- Stencils -------------------------------------------------------------
 */

static bool close_to(float a, float b) {
  return fabsf(a - b) <= 1e-5f * (1.0f + fabsf(b));
}

static void test_laplace2d(void) {
  const int nx = 37, ny = 29;
  char *gen = transpile_c("laplace2d");
  arg_t args[] = {I32(nx), I32(ny), BUF('f', nx * ny, 'r'),
                  BUFC('f', nx * ny, -7.0)};
  run_t r;
  if (gen && launch(gen, "laplace2d", "laplace2d", rk_dim3(3, 2, 1),
                    rk_dim3(16, 16, 1), args, 4, &r)) {
    const float *in = r.host[2], *out = r.host[3];
    int bad = 0;
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        int i = y * nx + x;
        bool interior = x >= 1 && x < nx - 1 && y >= 1 && y < ny - 1;
        float want = interior ? in[i - nx] + in[i + nx] + in[i + 1] +
                                    in[i - 1] - 4.0f * in[i]
                              : -7.0f;
        if (!close_to(out[i], want) && bad++ < 3)
          CHECK(false, "laplace2d at (%d,%d): %g, want %g", x, y, out[i], want);
      }
    CHECK(bad == 0, "laplace2d: %d wrong points", bad);
    free_run(&r);
  }
  free(gen);
}

typedef struct heat_params {
  float alpha, source;
} heat_params_t;

static void test_heat2d(void) {
  const int nx = 40, ny = 21;
  static const heat_params_t prm = {0.1f, 0.25f};
  char *gen = transpile_c("heat2d");
  arg_t args[] = {I32(nx),
                  I32(ny),
                  STRUCT(&prm),
                  BUF('f', nx * ny, 'r'),
                  BUF('f', nx * ny, 'f'),
                  BUFC('f', nx * ny, 3.0)};
  run_t r;
  if (gen && launch(gen, "heat2d", "heat2d", rk_dim3(3, 2, 1),
                    rk_dim3(16, 16, 1), args, 6, &r)) {
    const float *u = r.host[3], *k = r.host[4], *out = r.host[5];
    int bad = 0;
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        int i = y * nx + x;
        float want = 3.0f;
        if (x >= 1 && x < nx - 1 && y >= 1 && y < ny - 1) {
          float lap = u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] - 4 * u[i];
          float diag = u[i - nx - 1] + u[i + nx + 1] + u[i - nx + 1] +
                       u[i + nx - 1] - 4 * u[i];
          want = u[i] + prm.alpha * k[i] * (lap + 0.25f * diag) + prm.source;
        }
        if (!close_to(out[i], want) && bad++ < 3)
          CHECK(false, "heat2d at (%d,%d): %g, want %g", x, y, out[i], want);
      }
    CHECK(bad == 0, "heat2d: %d wrong points", bad);
    free_run(&r);
  }
  free(gen);
}

static void test_heat3d(void) {
  const int nx = 10, ny = 9, nz = 7;
  const float alpha = 0.125f;
  char *gen = transpile_c("heat3d");
  arg_t args[] = {I32(nx),
                  I32(ny),
                  I32(nz),
                  F32(alpha),
                  BUF('f', nx * ny * nz, 'r'),
                  BUFC('f', nx * ny * nz, 5.0)};
  run_t r;
  if (gen && launch(gen, "heat3d", "heat3d", rk_dim3(2, 2, 2), rk_dim3(8, 8, 4),
                    args, 6, &r)) {
    const float *u = r.host[4], *out = r.host[5];
    int bad = 0, s = nx * ny;
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x) {
          int i = (z * ny + y) * nx + x;
          float want = 5.0f;
          if (x >= 1 && x < nx - 1 && y >= 1 && y < ny - 1 && z >= 1 &&
              z < nz - 1) {
            float lap = u[i - nx] + u[i + nx] + u[i + 1] + u[i - 1] + u[i + s] +
                        u[i - s] - 6.0f * u[i];
            want = u[i] + alpha * lap;
          }
          if (!close_to(out[i], want) && bad++ < 3)
            CHECK(false, "heat3d at (%d,%d,%d): %g, want %g", x, y, z, out[i],
                  want);
        }
    CHECK(bad == 0, "heat3d: %d wrong points", bad);
    free_run(&r);
  }
  free(gen);
}

/* ---- Handlers -------------------------------------------------------------
 */

typedef struct counter_req {
  int32_t op;
  float value;
} counter_req_t;
typedef struct counter_resp {
  uint32_t seq;
  int32_t count;
  float sum, mean;
} counter_resp_t;
typedef struct counter_state {
  uint32_t seq;
  int32_t count;
  float sum;
} counter_state_t;

static void test_counter_actor(void) {
  char *gen = transpile_c("actor_counter");
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "actor_counter";
  rk_devptr_t in = 0, out = 0, state = 0;
  if (!gen || !CHECK_OK(rk_context_compile(g_ctx, gen, &o, &mod)) ||
      !CHECK_OK(rk_module_get_function(mod, "counter", &fn)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(counter_req_t), &in)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(counter_resp_t), &out)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(counter_state_t), &state)))
    goto done;
  CHECK(rk_function_param_count(fn) == 3, "counter takes in, out, state");
  counter_state_t s0 = {0, 0, 0.0f};
  CHECK_OK(rk_context_copy_to_device(g_ctx, state, &s0, sizeof s0));
  static const counter_req_t reqs[] = {
      {0, 2.0f}, {0, 4.0f}, {2, 0.0f}, {1, 0.0f}, {0, 1.5f}};
  static const counter_resp_t want[] = {{1, 1, 2.0f, 2.0f},
                                        {2, 2, 6.0f, 3.0f},
                                        {3, 2, 6.0f, 3.0f},
                                        {4, 0, 0.0f, 0.0f},
                                        {5, 1, 1.5f, 1.5f}};
  for (size_t m = 0; m < sizeof reqs / sizeof reqs[0]; ++m) {
    rk_arg_t args[] = {rk_arg_ptr(in), rk_arg_ptr(out), rk_arg_ptr(state)};
    counter_resp_t got;
    if (!CHECK_OK(
            rk_context_copy_to_device(g_ctx, in, &reqs[m], sizeof reqs[m])) ||
        !CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                     NULL, args, 3)) ||
        !CHECK_OK(rk_context_copy_to_host(g_ctx, &got, out, sizeof got)))
      break;
    CHECK(got.seq == want[m].seq && got.count == want[m].count &&
              got.sum == want[m].sum && got.mean == want[m].mean,
          "message %zu: seq %u count %d sum %g mean %g", m, got.seq, got.count,
          got.sum, got.mean);
  }
  /* A launch with more threads still handles the message once. */
  {
    rk_arg_t args[] = {rk_arg_ptr(in), rk_arg_ptr(out), rk_arg_ptr(state)};
    counter_resp_t got;
    CHECK_OK(rk_function_launch(fn, rk_dim3(2, 1, 1), rk_dim3(8, 1, 1), 0, NULL,
                                args, 3));
    CHECK_OK(rk_context_copy_to_host(g_ctx, &got, out, sizeof got));
    CHECK(got.seq == 6 && got.count == 2, "many threads: seq %u count %d",
          got.seq, got.count);
  }
done:
  if (in) rk_context_free(g_ctx, in);
  if (out) rk_context_free(g_ctx, out);
  if (state) rk_context_free(g_ctx, state);
  rk_module_destroy(mod);
  free(gen);
}

typedef struct echo {
  int32_t v;
  float f;
} echo_t;

static void test_echo_actor(void) {
  char *gen = transpile_c("actor_echo");
  static const echo_t req = {41, 0.5f};
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_devptr_t in = 0, out = 0;
  if (gen && CHECK_OK(rk_context_compile(g_ctx, gen, &o, &mod)) &&
      CHECK_OK(rk_module_get_function(mod, "add_one", &fn)) &&
      CHECK_OK(rk_context_allocate(g_ctx, sizeof req, &in)) &&
      CHECK_OK(rk_context_allocate(g_ctx, sizeof req, &out)) &&
      CHECK_OK(rk_context_copy_to_device(g_ctx, in, &req, sizeof req))) {
    rk_arg_t a[] = {rk_arg_ptr(in), rk_arg_ptr(out)};
    echo_t got = {0, 0};
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                                a, 2));
    CHECK_OK(rk_context_copy_to_host(g_ctx, &got, out, sizeof got));
    CHECK(got.v == 42 && got.f == 20.5f, "add_one: %d %g", got.v, got.f);
  }
  if (in) rk_context_free(g_ctx, in);
  if (out) rk_context_free(g_ctx, out);
  rk_module_destroy(mod);
  free(gen);
}

/* ---- Atomics --------------------------------------------------------------
 */

static void test_atomics(void) {
  char *gen = transpile_c("atomics_all");
  arg_t args[] = {BUF('i', 12, 'z'), BUF('u', 11, 'z'), BUF('i', 32, 'z'),
                  BUF('u', 32, 'z')};
  run_t r;
  if (!gen) return;
  if (launch(gen, "atomics_all", "atomics_all", rk_dim3(1, 1, 1),
             rk_dim3(32, 1, 1), args, 4, &r)) {
    const int32_t *gi = r.host[0];
    const uint32_t *gu = r.host[1];
    int32_t x = 0;
    uint32_t ux = 0;
    for (int t = 1; t <= 32; ++t) {
      x ^= t;
      ux ^= (uint32_t)t;
    }
    CHECK(gi[0] == 528 && gi[1] == -528, "add/sub i32: %d %d", gi[0], gi[1]);
    CHECK(gi[2] == 0 && gi[3] == 255 && gi[4] == x, "and/or/xor i32: %d %d %d",
          gi[2], gi[3], gi[4]);
    CHECK(gi[5] >= 1 && gi[5] <= 32, "exch i32: %d", gi[5]);
    CHECK(gi[6] == -32 && gi[7] == 32, "min/max i32: %d %d", gi[6], gi[7]);
    CHECK(gi[8] >= 1 && gi[8] <= 32, "cas i32: %d", gi[8]);
    CHECK(gu[0] == 528 && gu[1] == 0u - 528u, "add/sub u32: %u %u", gu[0],
          gu[1]);
    CHECK(gu[2] == 0 && gu[3] == 255 && gu[4] == ux, "and/or/xor u32: %u %u %u",
          gu[2], gu[3], gu[4]);
    CHECK(gu[6] == 0 && gu[7] == 32 && gu[8] >= 1 && gu[8] <= 32,
          "min/max/cas u32: %u %u %u", gu[6], gu[7], gu[8]);
    CHECK(gi[9] == 528 && gi[10] == 32 && gi[11] >= 1 && gi[11] <= 32,
          "shared i32: %d %d %d", gi[9], gi[10], gi[11]);
    CHECK(gu[9] == 528 && gu[10] == 0, "shared u32: %u %u", gu[9], gu[10]);
    /* exch returns the old values: with the final value they are 0 and
     * 1..32, each once. */
    const int32_t *old_i = r.host[2];
    int seen[33] = {0};
    for (int t = 0; t < 32; ++t)
      if (old_i[t] >= 0 && old_i[t] <= 32) seen[old_i[t]]++;
    if (gi[5] >= 1 && gi[5] <= 32) seen[gi[5]]++;
    int once = 0;
    for (int v = 0; v <= 32; ++v) once += seen[v] == 1;
    CHECK(once == 33, "exch i32 old values are not a permutation");
    free_run(&r);
  }
  free(gen);
}

int main(void) {
  rk_test_use_temp_cache();
  rk_backend_t *be = NULL;
  if (rk_backend_open(RK_BACKEND_CPU, &be) != RK_OK)
    RK_TEST_SKIP("no CPU backend: %s", rk_last_error());
  if (!CHECK_OK(rk_backend_create_context(be, 0, &g_ctx))) {
    rk_backend_destroy(be);
    return rk_test_finish("codegen_exec");
  }
  /* A compiler is needed to build modules. */
  rk_module_t *probe = NULL;
  rk_status_t s = rk_context_compile(
      g_ctx, "#include <rk/kernel.h>\nRK_KERNEL void k(int *o) { o[0] = 1; }\n",
      NULL, &probe);
  if (s == RK_ERR_UNAVAILABLE) {
    rk_context_destroy(g_ctx);
    rk_backend_destroy(be);
    RK_TEST_SKIP("no C compiler for the CPU backend: %s", rk_last_error());
  }
  CHECK_OK(s);
  rk_module_destroy(probe);

  test_differential();
  test_laplace2d();
  test_heat2d();
  test_heat3d();
  test_counter_actor();
  test_echo_actor();
  test_atomics();

  rk_context_destroy(g_ctx);
  rk_backend_destroy(be);
  return rk_test_finish("codegen_exec");
}
