/* The C output runs on the CPU backend and means what the source means.
 * The CPU backend compiles kernel-language source through the front end
 * and the C printer, so every launch here runs the transpiler's C:
 *   - every plain RK_KERNEL entry is run against a sequential scalar
 *     reference on random nonzero inputs (test_scalar_refs);
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
static size_t g_shared_mem; /* shared_mem bytes of launch()'s launches */

/* ---- Launch plumbing ------------------------------------------------------
 */

/* One launch argument. Buffers: element type f (float), d (double),
 * i (int32), u (uint32), l (int64); fill r (random), p (1..100), z (zero),
 * c (the constant `value`), f (fraction in [0, 1)), d (copied from `data`,
 * BUFD). */
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
#define BUFD(e, n, p) \
  { 'B', 0, (e), 'd', (n), (p), 0 }
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
  if (a->fill == 'd') {
    memcpy(p, a->data, a->count * elem_size(a->elem));
    return;
  }
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
    ok = CHECK_OK(rk_function_launch(fn, grid, block, g_shared_mem, NULL, a,
                                     (size_t)nargs)) &&
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

/* The corpus kernel's source, which the CPU backend builds through the
 * front end and the C printer. */
static char *transpile_c(const char *kernel) {
  char *src = cg_read_kernel(kernel);
  CHECK(src != NULL, "cannot read %s", kernel);
  return src;
}

typedef struct sim_params {
  float dt, gx, gy, gz;
  int32_t steps;
} sim_params_t;

static const sim_params_t kSim = {0.01f, 0.0f, -9.8f, 0.5f, 7};

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

/* ---- Scalar references ----------------------------------------------------
 * Every plain corpus kernel, run through its transpiled C on the CPU backend,
 * against a sequential host computation of what the kernel means (block-level
 * algorithms are simulated block by block). Inputs are random and nonzero
 * (fills r, p, f); outputs start as a sentinel, so an element the kernel fails
 * to write (or writes where it must not) shows. Integers compare exactly.
 * Floats compare with a relative tolerance: |got - want| <= tol * scale,
 * where scale is 1 + |want| for elementwise arithmetic (tol 1e-5: a few ulps
 * of float, room for contraction into fma and libm differences), and the sum
 * of the absolute values of the terms for sums whose order differs from the
 * kernel's (tree reduction, tiled matmul: tol 1e-5). Doubles use tol 1e-12. */

/* The buffers as launch() fills them before the launch (same seed, same
 * order), for kernels that update buffers in place. */
static void ref_inputs(const arg_t *args, int nargs, run_t *in) {
  memset(in, 0, sizeof *in);
  g_seed = 12345;
  for (int i = 0; i < nargs; ++i) {
    if (args[i].kind != 'B') continue;
    in->bytes[i] = args[i].count * elem_size(args[i].elem);
    in->host[i] = malloc(in->bytes[i]);
    fill(in->host[i], &args[i]);
  }
}

/* Runs `entry` of the transpiled `kernel`; *in gets the launch's inputs. */
static bool ref_run(const char *kernel, const char *entry, rk_dim3_t grid,
                    rk_dim3_t block, const arg_t *args, int nargs, run_t *in,
                    run_t *out) {
  char *gen = transpile_c(kernel);
  bool ok = gen && launch(gen, kernel, entry, grid, block, args, nargs, out);
  free(gen);
  if (ok) ref_inputs(args, nargs, in);
  return ok;
}

static void ref_done(run_t *in, run_t *out) {
  free_run(in);
  free_run(out);
}

static int g_bad; /* mismatches reported by the current check */

static void ref_i64(const char *what, size_t i, int64_t got, int64_t want) {
  if (got != want && g_bad++ < 3)
    CHECK(false, "%s[%zu]: %lld, want %lld", what, i, (long long)got,
          (long long)want);
}

static void ref_f64(const char *what, size_t i, double got, double want,
                    double tol, double scale) {
  if (!(fabs(got - want) <= tol * scale) && g_bad++ < 3)
    CHECK(false, "%s[%zu]: %.9g, want %.9g (tolerance %g)", what, i, got, want,
          tol * scale);
}

static void ref_f32(const char *what, size_t i, float got, double want) {
  ref_f64(what, i, got, want, 1e-5, 1.0 + fabs(want));
}

static void ref_begin(void) { g_bad = 0; }
static void ref_end(const char *kernel) {
  CHECK(g_bad == 0, "%s: %d elements differ from the scalar reference", kernel,
        g_bad);
}

#define SENT_F (-777.0) /* sentinel fill of output buffers */
#define SENT_I 777777.0

static void ref_saxpy(void) {
  const int n = 250;
  const float a = 1.5f;
  arg_t args[] = {I32(n), F32(a), BUF('f', 256, 'r'), BUF('f', 256, 'r')};
  run_t in, r;
  if (!ref_run("saxpy", "saxpy", rk_dim3(4, 1, 1), rk_dim3(64, 1, 1), args, 4,
               &in, &r))
    return;
  const float *x = in.host[2], *y0 = in.host[3], *y = r.host[3];
  ref_begin();
  for (int i = 0; i < 256; ++i) {
    double want = i < n ? (double)a * x[i] + y0[i] : y0[i];
    ref_f32("saxpy y", (size_t)i, y[i], want);
  }
  ref_end("saxpy");
  ref_done(&in, &r);
}

static void ref_reduce_sum(void) {
  const int n = 1000;
  arg_t args[] = {I32(n), BUF('f', 1024, 'r'), BUFC('f', 4, SENT_F)};
  run_t in, r;
  if (!ref_run("reduce_sum", "reduce_sum", rk_dim3(4, 1, 1), rk_dim3(256, 1, 1),
               args, 3, &in, &r))
    return;
  const float *x = in.host[1], *partial = r.host[2];
  ref_begin();
  for (int b = 0; b < 4; ++b) {
    double sum = 0, mag = 0;
    for (int i = b * 256; i < (b + 1) * 256 && i < n; ++i) {
      sum += x[i];
      mag += fabs(x[i]);
    }
    ref_f64("reduce_sum partial", (size_t)b, partial[b], sum, 1e-5, mag);
  }
  ref_end("reduce_sum");
  ref_done(&in, &r);
}

static void ref_matmul_tiled(void) {
  const int n = 40;
  arg_t args[] = {I32(n), BUF('f', 1600, 'r'), BUF('f', 1600, 'r'),
                  BUFC('f', 1600, SENT_F)};
  run_t in, r;
  if (!ref_run("matmul_tiled", "matmul_tiled", rk_dim3(3, 3, 1),
               rk_dim3(16, 16, 1), args, 4, &in, &r))
    return;
  const float *a = in.host[1], *b = in.host[2], *c = r.host[3];
  ref_begin();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int k = 0; k < n; ++k) {
        sum += (double)a[i * n + k] * b[k * n + j];
        mag += fabs((double)a[i * n + k] * b[k * n + j]);
      }
      ref_f64("matmul_tiled c", (size_t)(i * n + j), c[i * n + j], sum, 1e-5,
              mag);
    }
  ref_end("matmul_tiled");
  ref_done(&in, &r);
}

static void ref_prefix_sum(void) {
  const int n = 600;
  arg_t args[] = {I32(n), BUF('i', 768, 'r'), BUFC('i', 768, SENT_I),
                  BUFC('i', 3, SENT_I)};
  run_t in, r;
  if (!ref_run("prefix_sum", "prefix_sum", rk_dim3(3, 1, 1), rk_dim3(256, 1, 1),
               args, 4, &in, &r))
    return;
  const int32_t *x = in.host[1], *out = r.host[2], *sums = r.host[3];
  ref_begin();
  for (int b = 0; b < 3; ++b) {
    int64_t run = 0;
    for (int t = 0; t < 256; ++t) {
      int i = b * 256 + t;
      if (i < n) run += x[i];
      ref_i64("prefix_sum out", (size_t)i, out[i], i < n ? run : (int)SENT_I);
    }
    ref_i64("prefix_sum sums", (size_t)b, sums[b], run);
  }
  ref_end("prefix_sum");
  ref_done(&in, &r);
}

static void ref_histogram(void) {
  const int n = 5000;
  /* bins start at 1..100: the kernel adds to them */
  arg_t args[] = {I32(n), BUF('f', 5000, 'f'), BUF('u', 64, 'p')};
  run_t in, r;
  if (!ref_run("histogram", "histogram", rk_dim3(4, 1, 1), rk_dim3(128, 1, 1),
               args, 3, &in, &r))
    return;
  const float *v = in.host[1];
  const uint32_t *bins0 = in.host[2], *bins = r.host[2];
  uint32_t want[64];
  memcpy(want, bins0, sizeof want);
  for (int i = 0; i < n; ++i) {
    int b = (int)floor((double)v[i] * 64.0);
    want[b < 0 ? 0 : b > 63 ? 63 : b]++;
  }
  ref_begin();
  for (int b = 0; b < 64; ++b)
    ref_i64("histogram bins", (size_t)b, bins[b], want[b]);
  ref_end("histogram");
  ref_done(&in, &r);
}

static void ref_helpers(void) {
  const int n = 120;
  const float t = 0.3f;
  arg_t args[] = {I32(n),
                  F32(t),
                  BUF('f', 128, 'r'),
                  BUF('f', 128, 'r'),
                  BUFC('f', 128, SENT_F),
                  BUFC('i', 128, SENT_I)};
  run_t in, r;
  if (!ref_run("helpers", "blend", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1), args, 6,
               &in, &r))
    return;
  const float *a = in.host[2], *b = in.host[3], *out = r.host[4];
  const int32_t *lanes = r.host[5];
  ref_begin();
  for (int i = 0; i < 128; ++i) {
    double want = SENT_F;
    int lane = (int)SENT_I;
    if (i < n) {
      want = a[i] + (b[i] - a[i]) * (double)t + 0.5 * (a[i] - b[i]);
      want = want < -10 ? -10 : want > 10 ? 10 : want;
      lane = 2 * ((i % 64) % 32);
    }
    ref_f32("blend out", (size_t)i, out[i], want);
    ref_i64("blend lanes", (size_t)i, lanes[i], lane);
  }
  ref_end("helpers");
  ref_done(&in, &r);
}

/* Random code reaches only cases 7, 5, 6, 1, 0 and
 * default; the fixed program reaches every case, case 8 both ways (the sign
 * of acc varies with the random input) and stops at default before an op
 * that must not run. */
static const int32_t kSwitchProgram[12] = {1, 2, 8, 3, 5, 7 | (3 << 4),
                                           4, 8, 6, 0, 9, 1};

static void ref_switch_ops_run(const char *label, arg_t program) {
  const int n = 100, len = 12;
  arg_t args[] = {I32(n), I32(len), program, BUF('f', 128, 'r'),
                  BUFC('f', 128, SENT_F)};
  run_t in, r;
  if (!ref_run("switch_ops", "interpret", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1),
               args, 5, &in, &r))
    return;
  const int32_t *code = in.host[2];
  const float *x = in.host[3], *out = r.host[4];
  ref_begin();
  for (int i = 0; i < 128; ++i) {
    if (i >= n) {
      ref_f32("interpret out", (size_t)i, out[i], SENT_F);
      continue;
    }
    float acc = x[i]; /* float: repeated += 0.25f must round as the kernel */
    for (int pc = 0; pc < len; ++pc) {
      int op = code[pc], kind = op & 15;
      if (kind == 0) {
      } else if (kind == 1) {
        acc = acc + 1.0f;
      } else if (kind == 2) {
        acc = acc * 2.0f;
      } else if (kind == 3 || kind == 4) {
        acc = -acc;
      } else if (kind == 5) {
        acc = (acc + 10.0f) * 0.5f;
      } else if (kind == 6) {
        acc = acc * 0.5f;
      } else if (kind == 7) {
        for (int k = 0; k < op / 16; ++k) acc = acc + 0.25f;
      } else if (kind == 8) {
        if (acc >= 0.0f) acc = (float)sqrt(acc);
      } else {
        break; /* default ends the program */
      }
    }
    ref_f32("interpret out", (size_t)i, out[i], acc);
  }
  ref_end(label);
  ref_done(&in, &r);
}

static void ref_switch_ops(void) {
  ref_switch_ops_run("switch_ops (random code)", (arg_t)BUF('u', 12, 'r'));
  ref_switch_ops_run("switch_ops (every case)",
                     (arg_t)BUFD('i', 12, kSwitchProgram));
}

static void ref_bits(void) {
  const int n = 200;
  arg_t args[] = {I32(n),
                  BUF('u', 256, 'r'),
                  BUFC('u', 256, SENT_I),
                  BUFC('u', 256, SENT_I),
                  BUFC('i', 256, SENT_I),
                  BUFC('i', 256, SENT_I)};
  run_t in, r;
  if (!ref_run("bits", "bits", rk_dim3(4, 1, 1), rk_dim3(64, 1, 1), args, 6,
               &in, &r))
    return;
  const uint32_t *v = in.host[1], *pop = r.host[2], *rev = r.host[3];
  const int32_t *clz = r.host[4], *parity = r.host[5];
  ref_begin();
  for (int i = 0; i < 256; ++i) {
    int64_t wp = (int64_t)SENT_I, wr = (int64_t)SENT_I, wc = (int64_t)SENT_I,
            wq = (int64_t)SENT_I;
    if (i < n) {
      int ones = 0, lead = 32;
      uint32_t reversed = 0;
      for (int b = 0; b < 32; ++b)
        if (v[i] >> b & 1u) {
          ones++;
          reversed |= 1u << (31 - b);
          lead = 31 - b; /* last set bit seen is the highest */
        }
      wp = ones;
      wr = reversed;
      wc = lead;
      wq = ones % 2;
    }
    ref_i64("bits pop", (size_t)i, pop[i], wp);
    ref_i64("bits rev", (size_t)i, rev[i], wr);
    ref_i64("bits clz", (size_t)i, clz[i], wc);
    ref_i64("bits parity", (size_t)i, parity[i], wq);
  }
  ref_end("bits");
  ref_done(&in, &r);
}

static void ref_loops(void) {
  const int n = 100;
  arg_t args[] = {I32(n), BUF('i', 128, 'p'), BUFC('i', 384, SENT_I)};
  run_t in, r;
  if (!ref_run("loops", "loops", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1), args, 3,
               &in, &r))
    return;
  const int32_t *x = in.host[1], *out = r.host[2];
  ref_begin();
  for (int i = 0; i < 128; ++i) {
    int64_t w[3] = {(int64_t)SENT_I, (int64_t)SENT_I, (int64_t)SENT_I};
    if (i < n) {
      int64_t v = x[i];
      /* weights 1+2+2+1 (k == 2 skipped), minus 1+5+3+4+2+6 from grid */
      int64_t sum = 6 * v - 21;
      int64_t steps = 0;
      while (v != 1 && steps < 100) {
        v = v % 2 == 0 ? v / 2 : 3 * v + 1;
        steps++;
      }
      w[0] = 2 * sum + (sum % 2 != 0);
      w[1] = steps;
      w[2] = sum / 2; /* (int)(sum * 0.5f + 0.25f - 0.25f): truncation */
    }
    for (int k = 0; k < 3; ++k)
      ref_i64("loops out", (size_t)(i * 3 + k), out[i * 3 + k], w[k]);
  }
  ref_end("loops");
  ref_done(&in, &r);
}

static void ref_loop_exits(void) {
  const int n = 100;
  arg_t args[] = {I32(n), BUF('i', 128, 'p'), BUFC('i', 384, SENT_I),
                  BUFC('f', 128, SENT_F), BUFC('u', 128, 777.0)};
  run_t in, r;
  if (!ref_run("loop_exits", "loop_exits", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1),
               args, 5, &in, &r))
    return;
  const int32_t *x = in.host[1], *oi = r.host[2];
  const float *of = r.host[3];
  const uint32_t *ou = r.host[4];
  ref_begin();
  for (int i = 0; i < 128; ++i) {
    int64_t w[3] = {(int64_t)SENT_I, (int64_t)SENT_I, (int64_t)SENT_I};
    double f = SENT_F;
    int64_t u = 777;
    if (i < n) {
      int64_t v = x[i]; /* 1..100 */
      int64_t above = v, hi = 1, steps = 0;
      while (above <= 50) above += 3;
      while (hi <= v) hi *= 2;
      w[0] = above;
      w[1] = hi / 2 + hi; /* lo is 0 only for v = 0, not drawn */
      w[2] = v < 50 ? -1 : v > 50;
      f = v;
      do f = f * 2 + 1;
      while (f <= 1000);
      for (int64_t c = v; c != 1; steps++) c = c % 2 ? 3 * c + 1 : c / 2;
      u = steps + (v % 2 == 0 || v < 10 ? 1000 : 0);
    }
    for (int k = 0; k < 3; ++k)
      ref_i64("loop_exits out_i", (size_t)(i * 3 + k), oi[i * 3 + k], w[k]);
    ref_f64("loop_exits out_f", (size_t)i, of[i], f, 0, 1);
    ref_i64("loop_exits out_u", (size_t)i, ou[i], u);
  }
  ref_end("loop_exits");
  ref_done(&in, &r);
}

static void ref_math_all(void) {
  const int n = 64;
  arg_t args[] = {I32(n), BUF('f', 64, 'r'), BUFC('f', 64 * 14, SENT_F)};
  run_t in, r;
  if (!ref_run("math_all", "math_all", rk_dim3(1, 1, 1), rk_dim3(64, 1, 1),
               args, 3, &in, &r))
    return;
  const float *x = in.host[1], *out = r.host[2];
  ref_begin();
  for (int i = 0; i < n; ++i) {
    double v = x[i], a = fabs(v) + 1.0;
    /* in double: the kernel's float results agree to the tolerance */
    const double w[14] = {
        sqrt(a),  exp(v * 0.1f), log(a),        pow(a, 1.5),  sin(v),
        cos(v),   tan(v * 0.25), fabs(v),       fmin(v, 0.5), fmax(v, i),
        floor(v), ceil(v),       v * 2.0 + 1.0, tanh(v)};
    for (int k = 0; k < 14; ++k)
      ref_f32("math_all out", (size_t)(i * 14 + k), out[i * 14 + k], w[k]);
  }
  ref_end("math_all");
  ref_done(&in, &r);
}

static void ref_builtins_index(void) {
  arg_t args[] = {BUFC('u', 128 * 15, SENT_I)};
  run_t in, r;
  if (!ref_run("builtins_index", "builtins_index", rk_dim3(2, 2, 2),
               rk_dim3(4, 2, 2), args, 1, &in, &r))
    return;
  const uint32_t *out = r.host[0];
  ref_begin();
  for (uint32_t bz = 0; bz < 2; ++bz)
    for (uint32_t by = 0; by < 2; ++by)
      for (uint32_t bx = 0; bx < 2; ++bx)
        for (uint32_t tz = 0; tz < 2; ++tz)
          for (uint32_t ty = 0; ty < 2; ++ty)
            for (uint32_t tx = 0; tx < 4; ++tx) {
              uint32_t gx = bx * 4 + tx, gy = by * 2 + ty, gz = bz * 2 + tz;
              uint32_t t = gx + gy * 8 + gz * 8 * 4;
              const uint32_t w[15] = {tx, ty, tz, bx, by, bz, 4, 2,
                                      2,  2,  2,  2,  gx, gy, gz};
              for (uint32_t k = 0; k < 15; ++k)
                ref_i64("builtins_index out", t * 15 + k, out[t * 15 + k],
                        w[k]);
            }
  ref_end("builtins_index");
  ref_done(&in, &r);
}

typedef struct ref_particle {
  float pos[3], vel[3], mass;
  int32_t id;
  uint32_t flags[2];
} ref_particle_t;

static void ref_structs(void) {
  const int n = 50;
  arg_t args[] = {I32(n), STRUCT(&kSim), BUF('f', 50 * 10, 'r')};
  run_t in, r;
  if (!ref_run("structs", "integrate", rk_dim3(1, 1, 1), rk_dim3(64, 1, 1),
               args, 3, &in, &r))
    return;
  ref_begin();
  const float g[3] = {kSim.gx, kSim.gy, kSim.gz};
  for (int i = 0; i < n; ++i) {
    ref_particle_t p0, p;
    memcpy(&p0, (const char *)in.host[2] + i * sizeof p0, sizeof p0);
    memcpy(&p, (const char *)r.host[2] + i * sizeof p, sizeof p);
    double pos[3], vel[3];
    for (int c = 0; c < 3; ++c) {
      pos[c] = p0.pos[c];
      vel[c] = p0.vel[c];
    }
    for (int s = 0; s < kSim.steps; ++s)
      for (int c = 0; c < 3; ++c) {
        vel[c] += (double)g[c] * kSim.dt;
        pos[c] += vel[c] * kSim.dt;
      }
    for (int c = 0; c < 3; ++c) {
      ref_f32("integrate pos", (size_t)(i * 3 + c), p.pos[c], pos[c]);
      ref_f32("integrate vel", (size_t)(i * 3 + c), p.vel[c], vel[c]);
    }
    ref_i64("integrate mass bits", (size_t)i, memcmp(&p.mass, &p0.mass, 4), 0);
    ref_i64("integrate id", (size_t)i, p.id, p0.id);
    ref_i64("integrate flags[0]", (size_t)i, p.flags[0], p0.flags[0] | 1u);
    ref_i64("integrate flags[1]", (size_t)i, p.flags[1], (uint32_t)p0.id);
  }
  ref_end("structs");
  ref_done(&in, &r);
}

static void ref_defines(void) {
  const int n = 100;
  arg_t args[] = {I32(n), BUF('f', 128, 'r'), BUFC('f', 128, SENT_F)};
  run_t in, r;
  if (!ref_run("defines", "defines", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1), args,
               3, &in, &r))
    return;
  const float *x = in.host[1], *out = r.host[2];
  ref_begin();
  for (int i = 0; i < 128; ++i) {
    double want = SENT_F;
    if (i < n) {
      double s = 0;
      for (int k = 0; k < 4; ++k) {
        double v = i + k < n ? x[i + k] : 0.0;
        for (int j = 0; j < 3; ++j) v = v * 0.5 + 1.25; /* shade(v, 3) */
        s += v;
      }
      want = s * 0.5 + 1.25 + (i & 255);
    }
    ref_f32("defines out", (size_t)i, out[i], want);
  }
  ref_end("defines");
  ref_done(&in, &r);
}

static void ref_wide_types(void) {
  const int n = 64;
  const uint64_t seed = 987654321u;
  arg_t args[] = {I32(n), BUF('d', 64, 'r'), BUFC('l', 64, SENT_I),
                  U64((double)seed), BUFC('d', 64, SENT_F)};
  run_t in, r;
  if (!ref_run("wide_types", "wide_types", rk_dim3(1, 1, 1), rk_dim3(64, 1, 1),
               args, 5, &in, &r))
    return;
  const double *x = in.host[1], *out = r.host[4];
  const int64_t *acc = r.host[2];
  ref_begin();
  for (int i = 0; i < n; ++i) {
    uint64_t h = seed ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    int64_t big = (int64_t)(h % (1ull << 40)) - (1ll << 40);
    ref_i64("wide_types acc", (size_t)i, acc[i], big + (int64_t)trunc(x[i]));
    double want = x[i] / 2 + (double)big / 3.0;
    ref_f64("wide_types out", (size_t)i, out[i], want, 1e-12, 1 + fabs(want));
  }
  ref_end("wide_types");
  ref_done(&in, &r);
}

typedef struct ref_range {
  float lo, hi;
} ref_range_t;

static void ref_wgsl_lowering(void) {
  /* claim: one thread per slot wins the compare-and-swap; which one is up
   * to the scheduler, so the check is that exactly one of the candidates
   * (t < n, t % 4 == slot) saw -1, the rest saw the winner, and the slot
   * holds the winner. */
  const int n = 21, threads = 32;
  static const ref_range_t range = {0.25f, 3.5f};
  arg_t args[] = {I32(n), BUFC('i', 4, -1), BUFC('i', 32, SENT_I),
                  STRUCT(&range), BUFC('f', 32, SENT_F)};
  run_t in, r;
  if (ref_run("wgsl_lowering", "claim", rk_dim3(1, 1, 1),
              rk_dim3((unsigned)threads, 1, 1), args, 5, &in, &r)) {
    const int32_t *slots = r.host[1], *owner = r.host[2];
    const float *out = r.host[4];
    ref_begin();
    for (int s = 0; s < 4; ++s) {
      int winners = 0;
      for (int t = s; t < n; t += 4) {
        if (owner[t] == -1) {
          winners++;
          ref_i64("claim slots", (size_t)s, slots[s], t);
        } else {
          ref_i64("claim owner", (size_t)t, owner[t], slots[s]);
        }
      }
      ref_i64("claim winners of slot", (size_t)s, winners, 1);
    }
    for (int t = 0; t < threads; ++t) {
      if (t >= n) ref_i64("claim owner", (size_t)t, owner[t], -2);
      int select = t % 3;
      double width = range.hi - range.lo + (select == 0 ? 2.0 : 0.0);
      /* k = t * 0.5 truncated; u = (0 - t) >> 28 in 32 bits */
      double want = width + t / 2 + select + (t == 0 ? 0 : 15);
      ref_f32("claim out", (size_t)t, out[t], want);
    }
    ref_end("wgsl_lowering claim");
    ref_done(&in, &r);
  }
  /* scale: out *= f in place below n */
  const int m = 100;
  const float f = 1.75f;
  arg_t sargs[] = {I32(m), F32(f), BUF('f', 128, 'r')};
  if (ref_run("wgsl_lowering", "scale", rk_dim3(2, 1, 1), rk_dim3(64, 1, 1),
              sargs, 3, &in, &r)) {
    const float *x = in.host[2], *out = r.host[2];
    ref_begin();
    for (int i = 0; i < 128; ++i)
      ref_f32("scale out", (size_t)i, out[i],
              i < m ? (double)x[i] * f : (double)x[i]);
    ref_end("wgsl_lowering scale");
    ref_done(&in, &r);
  }
}

/* ---- Handlers that return int --------------------------------------------
 */

typedef struct div_req {
  int32_t a, b;
} div_req_t;
typedef struct div_resp {
  int32_t q;
} div_resp_t;

/* The scalar reference of actor_checked_div: the handler's return value
 * (1: division by zero) and the quotient it answers with. */
static int32_t ref_checked_div(const div_req_t *in, div_resp_t *out) {
  if (in->b == 0) {
    out->q = 0;
    return 1;
  }
  out->q = in->a / in->b;
  return 0;
}

/* An int handler: the kernel takes a trailing int32_t *rk_status, and
 * rk_status[0] receives what the handler returned, for b == 0 (1) and
 * b != 0 (0) alike. */
static void test_checked_div_actor(void) {
  char *gen = transpile_c("actor_checked_div");
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = "actor_checked_div";
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_devptr_t in = 0, out = 0, status = 0;
  if (!gen || !CHECK_OK(rk_context_compile(g_ctx, gen, &o, &mod)) ||
      !CHECK_OK(rk_module_get_function(mod, "checked_div", &fn)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(div_req_t), &in)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(div_resp_t), &out)) ||
      !CHECK_OK(rk_context_allocate(g_ctx, sizeof(int32_t), &status)))
    goto done;
  CHECK(rk_function_param_count(fn) == 3, "checked_div takes in, out, status");
  /* Fixed cases (both signs, zero divisors), then random ones: divisors in
   * -3..3, so about one in seven divides by zero. */
  enum { kFixed = 8, kCount = 40 };
  static const div_req_t fixed[kFixed] = {{7, 2},   {-7, 2}, {7, 0},  {0, 0},
                                          {-9, -3}, {0, 5},  {-1, 0}, {100, 1}};
  int zero_divisors = 0, launches = 0;
  g_seed = 777;
  ref_begin();
  for (int m = 0; m < kCount; ++m) {
    div_req_t req = fixed[m % kFixed];
    if (m >= kFixed) {
      req.a = (int32_t)(rnd() % 2001) - 1000;
      req.b = (int32_t)(rnd() % 7) - 3;
    }
    div_resp_t want, got = {-777};
    int32_t want_status = ref_checked_div(&req, &want);
    int32_t got_status = 777; /* sentinel: the kernel must overwrite it */
    /* More than one thread on the later messages: still handled once. */
    rk_dim3_t grid = m % 2 ? rk_dim3(2, 1, 1) : rk_dim3(1, 1, 1);
    rk_dim3_t block = m % 2 ? rk_dim3(8, 2, 1) : rk_dim3(1, 1, 1);
    rk_arg_t args[] = {rk_arg_ptr(in), rk_arg_ptr(out), rk_arg_ptr(status)};
    if (!CHECK_OK(rk_context_copy_to_device(g_ctx, in, &req, sizeof req)) ||
        !CHECK_OK(rk_context_copy_to_device(g_ctx, out, &got, sizeof got)) ||
        !CHECK_OK(rk_context_copy_to_device(g_ctx, status, &got_status,
                                            sizeof got_status)) ||
        !CHECK_OK(rk_function_launch(fn, grid, block, 0, NULL, args, 3)) ||
        !CHECK_OK(rk_context_copy_to_host(g_ctx, &got, out, sizeof got)) ||
        !CHECK_OK(rk_context_copy_to_host(g_ctx, &got_status, status,
                                          sizeof got_status)))
      break;
    launches++;
    zero_divisors += req.b == 0;
    ref_i64("checked_div status", (size_t)m, got_status, want_status);
    ref_i64("checked_div q", (size_t)m, got.q, want.q);
  }
  ref_end("checked_div");
  CHECK(launches == kCount && zero_divisors >= 3 && zero_divisors < launches,
        "checked_div: %d launches, %d with b == 0", launches, zero_divisors);
done:
  if (in) rk_context_free(g_ctx, in);
  if (out) rk_context_free(g_ctx, out);
  if (status) rk_context_free(g_ctx, status);
  rk_module_destroy(mod);
  free(gen);
}

/* An atomic on a buffer itself (`counter` for `&counter[0]`): every thread
 * draws a distinct ticket, and the counter ends at the number of threads. */
static void test_atomic_on_buffer(void) {
  static const char kSrc[] =
      "#include <rk/kernel.h>\n"
      "RK_KERNEL void tickets(int n, int *counter, int *ticket) {\n"
      "  uint32_t i = rk_global_idx_x();\n"
      "  if (i < (uint32_t)n) ticket[i] = rk_atomic_add_i32(counter, 1);\n"
      "}\n";
  char *gen = NULL;
  if (!CHECK_OK(cg_transpile(kSrc, "tickets", RK_TARGET_C, &gen))) return;
  const int n = 200;
  arg_t args[] = {I32(n), BUF('i', 1, 'z'), BUFC('i', 256, -1.0)};
  run_t r;
  if (launch(gen, "tickets", "tickets", rk_dim3(4, 1, 1), rk_dim3(64, 1, 1),
             args, 3, &r)) {
    const int32_t *counter = r.host[1], *ticket = r.host[2];
    int seen[200] = {0}, distinct = 0;
    for (int i = 0; i < n; ++i)
      if (ticket[i] >= 0 && ticket[i] < n && seen[ticket[i]]++ == 0) distinct++;
    CHECK(counter[0] == n && distinct == n && ticket[n] == -1,
          "tickets: counter %d, %d distinct tickets", counter[0], distinct);
    free_run(&r);
  }
  free(gen);
}

/* #ifdef/#ifndef/#else/#endif: only the branches taken are compiled, in
 * skipped text nothing but the nesting is read (not literals, not comment
 * marks inside them), and macros defined in a taken branch count. */
static void test_conditionals(void) {
  static const char kSrc[] =
      "#define HAVE_A 1\n"
      "#include <rk/kernel.h>\n"
      "#ifdef HAVE_A\n"
      "#define A 40\n"
      "#ifndef HAVE_B\n"
      "#define B 2\n"
      "#else\n"
      "#define B 1000\n"
      "#endif\n"
      "#else\n"
      "  \"not code /* ' #error skipped\n"
      "#define A -1\n"
      "#endif\n"
      "#ifndef B\n#error B is set above\n#endif\n"
      "RK_KERNEL void cond(int *o) { o[0] = A + B; }\n";
  char *gen = NULL;
  if (!CHECK_OK(cg_transpile(kSrc, "cond", RK_TARGET_C, &gen))) return;
  arg_t args[] = {BUF('i', 1, 'z')};
  run_t r;
  if (launch(gen, "cond", "cond", rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), args, 1,
             &r)) {
    CHECK(((int32_t *)r.host[0])[0] == 42, "conditionals: A + B = %d",
          ((int32_t *)r.host[0])[0]);
    free_run(&r);
  }
  free(gen);
}

/* ---- Batch entries --------------------------------------------------------
 */

/* Compiles `gen` and launches rk_batch_<handler> once, one thread, on the
 * messages in `in` (count of them, in_size bytes each), with the state (may
 * be NULL), then reads back out (cap messages, out_size bytes each) and
 * rk_status (cap entries). out and status start as 0x5a bytes so that
 * entries past `count` show whether the kernel wrote them. */
static bool run_batch(const char *gen, const char *handler, const void *in,
                      size_t in_size, void *out, size_t out_size, void *state,
                      size_t state_size, int32_t *status, uint32_t count,
                      uint32_t cap) {
  char entry[128];
  snprintf(entry, sizeof entry, "rk_batch_%s", handler);
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = handler;
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_devptr_t d_in = 0, d_out = 0, d_state = 0, d_status = 0;
  memset(out, 0x5a, out_size * cap);
  memset(status, 0x5a, sizeof *status * cap);
  bool ok =
      gen && CHECK_OK(rk_context_compile(g_ctx, gen, &o, &mod)) &&
      CHECK_OK(rk_module_get_function(mod, entry, &fn)) &&
      CHECK_OK(rk_context_allocate(g_ctx, in_size * cap, &d_in)) &&
      CHECK_OK(rk_context_allocate(g_ctx, out_size * cap, &d_out)) &&
      CHECK_OK(rk_context_allocate(g_ctx, sizeof *status * cap, &d_status)) &&
      CHECK_OK(rk_context_copy_to_device(g_ctx, d_in, in, in_size * cap)) &&
      CHECK_OK(rk_context_copy_to_device(g_ctx, d_out, out, out_size * cap)) &&
      CHECK_OK(rk_context_copy_to_device(g_ctx, d_status, status,
                                         sizeof *status * cap));
  if (ok && state)
    ok = CHECK_OK(rk_context_allocate(g_ctx, state_size, &d_state)) &&
         CHECK_OK(rk_context_copy_to_device(g_ctx, d_state, state, state_size));
  rk_arg_t args[5];
  size_t n = 0;
  args[n++] = rk_arg_ptr(d_in);
  args[n++] = rk_arg_ptr(d_out);
  if (state) args[n++] = rk_arg_ptr(d_state);
  args[n++] = rk_arg_ptr(d_status);
  args[n++] = rk_arg_u32(count);
  if (ok)
    ok = CHECK(rk_function_param_count(fn) == n, "%s takes %zu parameters",
               entry, n) &&
         CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                                     NULL, args, n)) &&
         CHECK_OK(rk_context_copy_to_host(g_ctx, out, d_out, out_size * cap)) &&
         CHECK_OK(rk_context_copy_to_host(g_ctx, status, d_status,
                                          sizeof *status * cap));
  if (ok && state)
    ok = CHECK_OK(rk_context_copy_to_host(g_ctx, state, d_state, state_size));
  if (d_in) rk_context_free(g_ctx, d_in);
  if (d_out) rk_context_free(g_ctx, d_out);
  if (d_state) rk_context_free(g_ctx, d_state);
  if (d_status) rk_context_free(g_ctx, d_status);
  rk_module_destroy(mod);
  return ok;
}

/* rk_batch_<handler> handles messages 0..rk_count-1 in order in one launch
 * (the state carries over from one message to the next), writes a status
 * per message, and touches nothing past rk_count. */
static void test_batch_entries(void) {
  enum { kCap = 48 };
  /* counter: order matters (seq, reset in the middle). */
  char *gen = transpile_c("actor_counter");
  counter_req_t reqs[kCap];
  counter_resp_t got[kCap], want[kCap];
  int32_t status[kCap];
  g_seed = 99;
  for (int m = 0; m < kCap; ++m) {
    reqs[m].op = m % 11 == 10 ? 1 : m % 7 == 6 ? 2 : 0;
    reqs[m].value = (float)(rnd() % 100) * 0.25f;
  }
  const uint32_t count = 37;
  counter_state_t ref = {100, 3, 1.5f}, dev = ref;
  for (uint32_t m = 0; m < count; ++m) {
    if (reqs[m].op == 0) {
      ref.count += 1;
      ref.sum += reqs[m].value;
    } else if (reqs[m].op == 1) {
      ref.count = 0;
      ref.sum = 0.0f;
    }
    ref.seq++;
    want[m].seq = ref.seq;
    want[m].count = ref.count;
    want[m].sum = ref.sum;
    want[m].mean = ref.count > 0 ? ref.sum / (float)ref.count : 0.0f;
  }
  if (run_batch(gen, "counter", reqs, sizeof *reqs, got, sizeof *got, &dev,
                sizeof dev, status, count, kCap)) {
    ref_begin();
    for (uint32_t m = 0; m < count; ++m) {
      ref_i64("batch counter seq", m, got[m].seq, want[m].seq);
      ref_i64("batch counter count", m, got[m].count, want[m].count);
      ref_f32("batch counter sum", m, got[m].sum, want[m].sum);
      ref_f32("batch counter mean", m, got[m].mean, want[m].mean);
      ref_i64("batch counter status", m, status[m], 0);
    }
    for (uint32_t m = count; m < kCap; ++m) {
      ref_i64("batch counter: untouched status", m, status[m], 0x5a5a5a5a);
      ref_i64("batch counter: untouched seq", m, got[m].seq, 0x5a5a5a5a);
    }
    ref_end("rk_batch_counter");
    CHECK(dev.seq == ref.seq && dev.count == ref.count && dev.sum == ref.sum,
          "batch counter state: seq %u count %d sum %g (want %u %d %g)",
          dev.seq, dev.count, dev.sum, ref.seq, ref.count, ref.sum);
  }
  /* rk_count 0: nothing handled. */
  counter_state_t before = dev;
  if (run_batch(gen, "counter", reqs, sizeof *reqs, got, sizeof *got, &dev,
                sizeof dev, status, 0, kCap))
    CHECK(memcmp(&dev, &before, sizeof dev) == 0 && status[0] == 0x5a5a5a5a &&
              got[0].seq == 0x5a5a5a5a,
          "rk_count 0 must handle no message");
  free(gen);

  /* checked_div: each message's own return value. */
  gen = transpile_c("actor_checked_div");
  div_req_t dreq[kCap];
  div_resp_t dgot[kCap];
  for (int m = 0; m < kCap; ++m) {
    dreq[m].a = (int32_t)(rnd() % 2001) - 1000;
    dreq[m].b = (int32_t)(rnd() % 7) - 3;
  }
  if (run_batch(gen, "checked_div", dreq, sizeof *dreq, dgot, sizeof *dgot,
                NULL, 0, status, kCap, kCap)) {
    int zeros = 0;
    ref_begin();
    for (uint32_t m = 0; m < kCap; ++m) {
      div_resp_t w;
      int32_t ws = ref_checked_div(&dreq[m], &w);
      zeros += ws != 0;
      ref_i64("batch checked_div status", m, status[m], ws);
      ref_i64("batch checked_div q", m, dgot[m].q, w.q);
    }
    ref_end("rk_batch_checked_div");
    CHECK(zeros > 0 && zeros < kCap, "%d of %d divide by zero", zeros, kCap);
  }
  free(gen);
}

/* rk_dynamic_shared(): memory of the launch's shared_mem bytes, per block. */
static void ref_dyn_shared(void) {
  /* dyn_reverse: out[base + b - 1 - t] = 2 * in[base + t] (0 where that
   * input is past n), for two block sizes. */
  static const uint32_t kBlocks[] = {64, 48};
  for (int c = 0; c < 2; ++c) {
    const uint32_t b = kBlocks[c], grid = 5;
    const int n = (int)(b * grid) - 7;
    arg_t args[] = {I32(n), BUF('f', b * grid, 'r'),
                    BUFC('f', b * grid, SENT_F)};
    run_t in, r;
    g_shared_mem = b * sizeof(float);
    if (ref_run("dyn_shared", "dyn_reverse", rk_dim3(grid, 1, 1),
                rk_dim3(b, 1, 1), args, 3, &in, &r)) {
      const float *x = in.host[1], *out = r.host[2];
      ref_begin();
      for (int j = 0; j < (int)(b * grid); ++j) {
        int base = j / (int)b * (int)b, i = base + (int)b - 1 - (j - base);
        double want = j >= n ? SENT_F : i < n ? 2.0 * x[i] : 0.0;
        ref_f32("dyn_reverse out", (size_t)j, out[j], want);
      }
      ref_end("dyn_reverse");
      ref_done(&in, &r);
    }
  }
  /* dyn_count: a histogram of in % bins through shared counters. */
  const int n = 1000, bins = 13;
  arg_t args[] = {I32(n), I32(bins), BUF('i', 1024, 'p'), BUF('i', 16, 'z')};
  run_t in, r;
  g_shared_mem = (size_t)bins * sizeof(int32_t);
  if (ref_run("dyn_shared", "dyn_count", rk_dim3(8, 1, 1), rk_dim3(128, 1, 1),
              args, 4, &in, &r)) {
    const int32_t *x = in.host[2], *counts = r.host[3];
    int32_t want[16] = {0};
    for (int i = 0; i < n; ++i) want[x[i] % bins]++;
    ref_begin();
    for (int k = 0; k < 16; ++k)
      ref_i64("dyn_count counts", (size_t)k, counts[k], want[k]);
    ref_end("dyn_count");
    ref_done(&in, &r);
  }
  g_shared_mem = 0;
}

static void test_scalar_refs(void) {
  ref_saxpy();
  ref_reduce_sum();
  ref_matmul_tiled();
  ref_prefix_sum();
  ref_histogram();
  ref_helpers();
  ref_switch_ops();
  ref_bits();
  ref_loops();
  ref_loop_exits();
  ref_math_all();
  ref_builtins_index();
  ref_structs();
  ref_defines();
  ref_wide_types();
  ref_wgsl_lowering();
  ref_dyn_shared();
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

  test_scalar_refs();
  test_laplace2d();
  test_heat2d();
  test_heat3d();
  test_counter_actor();
  test_echo_actor();
  test_checked_div_actor();
  test_batch_entries();
  test_atomics();
  test_atomic_on_buffer();
  test_conditionals();

  rk_context_destroy(g_ctx);
  rk_backend_destroy(be);
  return rk_test_finish("codegen_exec");
}
