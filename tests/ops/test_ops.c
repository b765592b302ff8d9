/* The ops library against a double-precision reference, on every target
 * that exists here, with the tolerances docs/ops.md states:
 *
 *   add, sub, mul, scale, relu, min, max   exact (GPU: 1 ulp)
 *   axpy, fma                              2 eps (|a x| + |y|)
 *   exp                                    4 eps |y| (GPU: (4 + 2|x|) eps)
 *   sigmoid                                8 eps |y| (GPU: (8 + 2|x|) eps)
 *   tanh                                   4 eps |y| (GPU: 8 eps |y| + 2^-21)
 *   log                                    4 eps |y| (GPU: + 2^-21)
 *   dot, sum                               eps (C sum|terms| + |result|),
 *                                          C = 260 on the CPU, n/16384 + 4
 *                                          on a GPU
 *   matvec, matmul (per element)           (len + 20) eps sum|a_i b_i|
 *
 * On WebGPU, WGSL's rules apply: subnormal results may be flushed to zero and
 * NaN inputs to min/max may be ignored.
 * plus 1e-37 absolute for results in the subnormal range.
 */
#define RK_TEST_IMPLEMENTATION
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/actor.h"
#include "rk/backend.h"
#include "rk/ops.h"
#include "rk_test.h"

/* Libraries stay loaded in this test: dlclose() here, which the static
 * librk's calls resolve to, does nothing. A vendor library a GPU backend
 * tries and unloads (a wgpu-native of another version, a Vulkan or OpenCL
 * driver) then keeps its name in leak reports, and the suppressions at the
 * end of this file, for leaks inside those libraries, apply. */
int dlclose(void *handle);
int dlclose(void *handle) {
  (void)handle;
  return 0;
}

static void ops_destroy(rk_ops_t *ops) { rk_ops_destroy(ops); }

typedef struct target_case {
  rk_exec_target_t t;
  char name[48];
  rk_ops_t *ops;
  bool blas; /* use_blas (on a CUDA target: cuBLAS for matmul) */
} target_case_t;

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand(float lo, float hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return lo + (hi - lo) * (float)((g_rng >> 40) / (double)(1ull << 24));
}

/* n floats at an odd element offset from a 64-byte boundary, so SIMD code
 * sees unaligned pointers. */
typedef struct buf {
  float *base, *p;
} buf_t;
static buf_t buf_new(size_t n, size_t offset) {
  buf_t b;
  b.base =
      aligned_alloc(64, ((n + offset) * sizeof(float) + 63) / 64 * 64 + 64);
  b.p = b.base + offset;
  return b;
}
static void fill(float *p, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; ++i) p[i] = frand(lo, hi);
}

static bool is_gpu(const target_case_t *tc) {
  return tc->t.kind == RK_EXEC_GPU;
}

static bool close_to(double got, double ref, double tol) {
  if (isnan(ref)) return isnan(got);
  if (isinf(ref)) return got == ref;
  return fabs(got - ref) <= tol;
}

/* ---- Element-wise and reductions on one target and size ---------------- */

static void check_vector_ops(target_case_t *tc, size_t n, size_t off) {
  rk_ops_t *ops = tc->ops;
  const double eps = FLT_EPSILON;
  buf_t A = buf_new(n, off), B = buf_new(n, off + 2), C = buf_new(n, off + 1),
        O = buf_new(n, off + 3);
  float *a = A.p, *b = B.p, *c = C.p, *o = O.p;
  fill(a, n, -1.0f, 1.0f);
  fill(b, n, -1.0f, 1.0f);
  fill(c, n, -1.0f, 1.0f);
  rk_op_report_t r;
  int bad;
  double ulp_tol = is_gpu(tc) ? eps : 0.0;

#define EW_CHECK(call, ref_expr, tol_expr)                                     \
  do {                                                                         \
    if (!CHECK_OK(call)) break;                                                \
    CHECK(r.target.kind == tc->t.kind && r.target.isa == tc->t.isa &&          \
              r.target.backend == tc->t.backend && r.engine[0],                \
          "%s: report says %s/%s engine '%s'", tc->name,                       \
          rk_exec_kind_name(r.target.kind), rk_isa_name(r.target.isa),         \
          r.engine);                                                           \
    bad = -1;                                                                  \
    for (size_t i = 0; i < n && bad < 0; ++i) {                                \
      double ref = (ref_expr), tol = (tol_expr);                               \
      if (!close_to(o[i], ref, tol)) bad = (int)i;                             \
    }                                                                          \
    CHECK(bad < 0, "%s %s n=%zu off=%zu: element %d", tc->name, #call, n, off, \
          bad);                                                                \
  } while (0)

  EW_CHECK(rk_ops_add(ops, n, a, b, o, &r), (float)(a[i] + b[i]),
           ulp_tol * fabs(ref));
  EW_CHECK(rk_ops_sub(ops, n, a, b, o, &r), (float)(a[i] - b[i]),
           ulp_tol * fabs(ref));
  EW_CHECK(rk_ops_mul(ops, n, a, b, o, &r), (float)(a[i] * b[i]),
           ulp_tol * fabs(ref));
  EW_CHECK(rk_ops_scale(ops, n, 1.5f, a, o, &r), (float)(1.5f * a[i]),
           ulp_tol * fabs(ref));
  EW_CHECK(rk_ops_relu(ops, n, a, o, &r), a[i] > 0 ? a[i] : 0.0,
           ulp_tol * fabs(ref));
  EW_CHECK(rk_ops_fma(ops, n, a, b, c, o, &r), (double)a[i] * b[i] + c[i],
           2 * eps * (fabs((double)a[i] * b[i]) + fabs(c[i])) + 1e-37);
  /* axpy in place: o starts as a copy of c. */
  memcpy(o, c, n * sizeof(float));
  EW_CHECK(rk_ops_axpy(ops, n, -0.75f, a, o, &r), -0.75 * a[i] + c[i],
           2 * eps * (fabs(0.75 * a[i]) + fabs(c[i])) + 1e-37);
  /* exp and sigmoid over a wide range. */
  fill(a, n, -30.0f, 30.0f);
  EW_CHECK(rk_ops_exp(ops, n, a, o, &r), exp((double)a[i]),
           ((is_gpu(tc) ? 2 * fabs(a[i]) : 0) + 4) * eps * fabs(ref) + 1e-37);
  EW_CHECK(rk_ops_sigmoid(ops, n, a, o, &r), 1.0 / (1.0 + exp(-(double)a[i])),
           ((is_gpu(tc) ? 2 * fabs(a[i]) : 0) + 8) * eps * fabs(ref) + 1e-37);
  /* tanh over [-10, 10], log over (0, 1e6]. GPU: the backend's tanhf/logf
   * (WGSL allows an absolute error of 2^-21 near 1, so that is added). */
  fill(a, n, -10.0f, 10.0f);
  EW_CHECK(
      rk_ops_tanh(ops, n, a, o, &r), tanh((double)a[i]),
      (is_gpu(tc) ? 8 : 4) * eps * fabs(ref) + (is_gpu(tc) ? 0x1p-21 : 1e-37));
  for (size_t i = 0; i < n; ++i) a[i] = expf(frand(-80.0f, 14.0f));
  EW_CHECK(rk_ops_log(ops, n, a, o, &r), log((double)a[i]),
           4 * eps * fabs(ref) + (is_gpu(tc) ? 0x1p-21 : 1e-37));
  /* in place: out == input */
  fill(a, n, -1.0f, 1.0f);
  memcpy(o, a, n * sizeof(float));
  if (CHECK_OK(rk_ops_add(ops, n, o, o, o, &r))) {
    bad = -1;
    for (size_t i = 0; i < n && bad < 0; ++i)
      if (o[i] != (float)(a[i] + a[i])) bad = (int)i;
    CHECK(bad < 0, "%s in-place add n=%zu: element %d", tc->name, n, bad);
  }

  /* Reductions. */
  double cfac = is_gpu(tc) ? (double)n / 16384.0 + 4 : 260.0;
  double dref = 0, dabs = 0, sref = 0, sabs = 0;
  double mn = INFINITY, mx = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    dref += (double)a[i] * b[i];
    dabs += fabs((double)a[i] * b[i]);
    sref += a[i];
    sabs += fabs(a[i]);
    if (a[i] < mn) mn = a[i];
    if (a[i] > mx) mx = a[i];
  }
  float v = -1;
  if (CHECK_OK(rk_ops_dot(ops, n, a, b, &v, &r)))
    CHECK(close_to(v, dref, eps * (cfac * dabs + fabs(dref))),
          "%s dot n=%zu: %.9g vs %.9g", tc->name, n, v, dref);
  if (CHECK_OK(rk_ops_sum(ops, n, a, &v, &r)))
    CHECK(close_to(v, sref, eps * (cfac * sabs + fabs(sref))),
          "%s sum n=%zu: %.9g vs %.9g", tc->name, n, v, sref);
  if (CHECK_OK(rk_ops_min(ops, n, a, &v, &r)))
    CHECK(v == (float)mn, "%s min n=%zu: %g vs %g", tc->name, n, v, mn);
  if (CHECK_OK(rk_ops_max(ops, n, a, &v, &r)))
    CHECK(v == (float)mx, "%s max n=%zu: %g vs %g", tc->name, n, v, mx);
  /* A NaN anywhere makes min and max NaN. WGSL lets an implementation
   * assume there are no NaNs (and it folds `v != v` away), so WebGPU is
   * excused. */
  if (n > 0 && tc->t.backend != RK_BACKEND_WEBGPU) {
    size_t at = n / 2;
    float saved = a[at];
    a[at] = NAN;
    if (CHECK_OK(rk_ops_min(ops, n, a, &v, &r)))
      CHECK(isnan(v), "%s min with NaN n=%zu: %g", tc->name, n, v);
    if (CHECK_OK(rk_ops_max(ops, n, a, &v, &r)))
      CHECK(isnan(v), "%s max with NaN n=%zu: %g", tc->name, n, v);
    a[at] = saved;
  }
  free(A.base);
  free(B.base);
  free(C.base);
  free(O.base);
}

/* exp at the edges of float's range, against libm. */
static void check_exp_edges(target_case_t *tc) {
  static const float xs[] = {
      -110.0f, -104.0f, -103.5f, -100.0f, -87.5f,   -87.0f,    -20.0f,
      -1e-3f,  0.0f,    -0.0f,   1e-7f,   0.5f,     1.0f,      10.0f,
      88.0f,   88.7f,   88.8f,   100.0f,  INFINITY, -INFINITY, NAN};
  enum { N = sizeof xs / sizeof xs[0] };
  float y[N];
  rk_op_report_t r;
  if (!CHECK_OK(rk_ops_exp(tc->ops, N, xs, y, &r))) return;
  for (int i = 0; i < N; ++i) {
    double ref = exp((double)xs[i]);
    if (ref > FLT_MAX) ref = INFINITY;
    double tol = ((is_gpu(tc) ? 2 * fabs(xs[i]) : 0) + 4) * FLT_EPSILON * ref;
    /* subnormal results: 2^-149 absolute (one subnormal step); WGSL may
     * flush them to zero. */
    if (ref < FLT_MIN)
      tol =
          tc->t.backend == RK_BACKEND_WEBGPU ? FLT_MIN : 2.0 * 1.401298464e-45;
    CHECK(close_to(y[i], ref, tol), "%s exp(%g) = %g, want %g", tc->name, xs[i],
          y[i], ref);
  }
}

/* ---- Matrices ----------------------------------------------------------- */

static void check_matrix_ops(target_case_t *tc, size_t m, size_t n, size_t k) {
  const double eps = FLT_EPSILON;
  buf_t A = buf_new(m * k + m * n, 1), B = buf_new(k * n + n, 3),
        C = buf_new(m * n + m, 5);
  fill(A.p, m * k + m * n, -1, 1);
  fill(B.p, k * n + n, -1, 1);
  rk_op_report_t r;
  /* matmul */
  if (CHECK_OK(rk_ops_matmul(tc->ops, m, n, k, A.p, B.p, C.p, &r))) {
    CHECK(r.target.kind == tc->t.kind && r.engine[0], "%s matmul report",
          tc->name);
    if (is_gpu(tc) && k > 0) {
      /* A vendor BLAS only on CUDA, only when allowed; when it did not
       * run there, the report says why. */
      const bool cuda = tc->t.backend == RK_BACKEND_CUDA;
      const bool vendor = strncmp(r.engine, "blas:", 5) == 0;
      CHECK(cuda && tc->blas ? vendor || strstr(r.note, "GEMM kernel ran")
                             : !vendor && !strstr(r.note, "GEMM"),
            "%s matmul: engine '%s', note '%s'", tc->name, r.engine, r.note);
      if (cuda && tc->blas && m == 33)
        printf("  %s matmul: engine %s%s%s\n", tc->name, r.engine,
               r.note[0] ? ", " : "", r.note);
    }
    int bad = -1;
    for (size_t i = 0; i < m && bad < 0; ++i)
      for (size_t j = 0; j < n && bad < 0; ++j) {
        double ref = 0, abs_sum = 0;
        for (size_t p = 0; p < k; ++p) {
          double t = (double)A.p[i * k + p] * B.p[p * n + j];
          ref += t;
          abs_sum += fabs(t);
        }
        if (!close_to(C.p[i * n + j], ref, (k + 20) * eps * abs_sum + 1e-37))
          bad = (int)(i * n + j);
      }
    CHECK(bad < 0, "%s matmul %zux%zux%zu: element %d (%s)", tc->name, m, n, k,
          bad, r.engine);
  }
  /* matvec: A is m x n here */
  if (CHECK_OK(rk_ops_matvec(tc->ops, m, n, A.p, B.p, C.p, &r))) {
    int bad = -1;
    for (size_t i = 0; i < m && bad < 0; ++i) {
      double ref = 0, abs_sum = 0;
      for (size_t j = 0; j < n; ++j) {
        double t = (double)A.p[i * n + j] * B.p[j];
        ref += t;
        abs_sum += fabs(t);
      }
      if (!close_to(C.p[i], ref, (n + 20) * eps * abs_sum + 1e-37))
        bad = (int)i;
    }
    CHECK(bad < 0, "%s matvec %zux%zu: row %d (%s)", tc->name, m, n, bad,
          r.engine);
  }
  free(A.base);
  free(B.base);
  free(C.base);
}

/* ---- Targets ------------------------------------------------------------ */

static int g_ntargets;
static target_case_t g_targets[16];

static void add_target(rk_exec_target_t t, const char *name, bool blas) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target = t;
  o.use_blas = blas;
  rk_ops_t *ops = NULL;
  if (!CHECK_OK(rk_ops_create(&o, &ops))) return;
  if (t.kind == RK_EXEC_GPU) {
    /* A GPU target opens its backend on first use. */
    float x = 1, y = 0;
    rk_status_t s = rk_ops_exp(ops, 1, &x, &y, NULL);
    if (s != RK_OK) {
      printf("note: target %s not tested here: %s\n", name, rk_last_error());
      ops_destroy(ops);
      return;
    }
  }
  target_case_t *tc = &g_targets[g_ntargets++];
  tc->t = t;
  snprintf(tc->name, sizeof tc->name, "%s", name);
  tc->ops = ops;
  tc->blas = blas;
  printf("target %s\n", name);
}

static void collect_targets(void) {
  rk_exec_target_t scalar = {RK_EXEC_SCALAR, RK_ISA_NONE, RK_BACKEND_AUTO, 0};
  add_target(scalar, "scalar", true);
  static const rk_isa_t isas[] = {RK_ISA_AVX2, RK_ISA_AVX512, RK_ISA_NEON};
  for (size_t i = 0; i < 3; ++i) {
    if (!rk_isa_supported(isas[i])) continue;
    rk_exec_target_t t = {RK_EXEC_SIMD, isas[i], RK_BACKEND_AUTO, 0};
    char name[32];
    snprintf(name, sizeof name, "simd/%s", rk_isa_name(isas[i]));
    add_target(t, name, true);
  }
  static const rk_backend_kind_t gpus[] = {
      RK_BACKEND_CPU, RK_BACKEND_CUDA, RK_BACKEND_WEBGPU, RK_BACKEND_OPENCL};
  /* RK_OPS_TEST_BACKENDS=cpu,opencl limits the GPU backends tried. */
  const char *only = getenv("RK_OPS_TEST_BACKENDS");
  for (size_t i = 0; i < 4; ++i) {
    if (only && !strstr(only, rk_backend_kind_name(gpus[i]))) {
      printf("note: gpu/%s not tried (RK_OPS_TEST_BACKENDS=%s)\n",
             rk_backend_kind_name(gpus[i]), only);
      continue;
    }
    rk_exec_target_t t = {RK_EXEC_GPU, RK_ISA_NONE, gpus[i], 0};
    char name[32];
    snprintf(name, sizeof name, "gpu/%s", rk_backend_kind_name(gpus[i]));
    add_target(t, name, true);
    /* CUDA's matmul goes to cuBLAS where it loads: rk's kernel too. */
    if (gpus[i] == RK_BACKEND_CUDA)
      add_target(t, "gpu/cuda (no cuBLAS)", false);
  }
}

/* ---- cuBLAS beside a resident actor kernel -------------------------------
 *
 * cuBLAS loads its kernels on first use, and a module load waits until no
 * kernel runs: while a resident actor kernel runs, a CUDA matmul must not
 * call it (it would never return) but run rk's kernel, say so in the
 * report's note, and be right. */
static const char kAddOne[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int32_t v; } int_msg_t;\n"
    "RK_HANDLER void add_one(const int_msg_t *in, int_msg_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

static void check_blas_beside_actor(target_case_t *tc) {
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  rk_actor_t *actor = NULL;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CUDA, &be))) return;
  if (CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    rk_actor_options_t o;
    rk_actor_options_init(&o);
    o.mode = RK_ACTOR_PERSISTENT;
    if (CHECK_OK(rk_actor_launch(ctx, kAddOne, "add_one", &o, &actor))) {
      int32_t q = 41, r = 0;
      CHECK_OK(rk_actor_call(actor, &q, sizeof q, &r, sizeof r,
                             RK_TIMEOUT_INFINITE, NULL));
      CHECK(r == 42, "the actor answered %d", r);
      enum { N = 96 };
      static float a[N * N], b[N * N], c[N * N];
      fill(a, N * N, -1, 1);
      fill(b, N * N, -1, 1);
      for (size_t i = 0; i < N * N; ++i) c[i] = NAN;
      rk_op_report_t rep;
      if (CHECK_OK(rk_ops_matmul(tc->ops, N, N, N, a, b, c, &rep))) {
        CHECK(strncmp(rep.engine, "blas:", 5) != 0 &&
                  strstr(rep.note, "resident actor"),
              "matmul beside a resident actor: engine '%s', note '%s'",
              rep.engine, rep.note);
        int bad = -1;
        for (size_t i = 0; i < N && bad < 0; ++i)
          for (size_t j = 0; j < N && bad < 0; ++j) {
            double ref = 0, mag = 0;
            for (size_t p = 0; p < N; ++p) {
              ref += (double)a[i * N + p] * b[p * N + j];
              mag += fabs((double)a[i * N + p] * b[p * N + j]);
            }
            if (!close_to(c[i * N + j], ref, (N + 20) * FLT_EPSILON * mag))
              bad = (int)(i * N + j);
          }
        CHECK(bad < 0, "matmul beside a resident actor: element %d", bad);
        printf("  beside a resident actor: engine %s (%s)\n", rep.engine,
               rep.note);
      }
      q = 1;
      CHECK_OK(rk_actor_call(actor, &q, sizeof q, &r, sizeof r,
                             RK_TIMEOUT_INFINITE, NULL));
      CHECK(r == 2, "the actor answered %d after the matmul", r);
      rk_actor_destroy(actor);
    }
    CHECK_OK(rk_context_destroy(ctx));
  }
  CHECK_OK(rk_backend_destroy(be));
}

/* ---- Device-resident operands ------------------------------------------- */

static void check_resident(target_case_t *tc, target_case_t *other) {
  const double eps = FLT_EPSILON;
  size_t n = 1003, m = 37, k = 29;
  rk_ops_t *ops = tc->ops;
  rk_ops_buffer_t *x = NULL, *y = NULL, *o = NULL, *big = NULL;
  if (!CHECK_OK(rk_ops_buffer_create(ops, &tc->t, n, &x)) ||
      !CHECK_OK(rk_ops_buffer_create(ops, &tc->t, n, &y)) ||
      !CHECK_OK(rk_ops_buffer_create(ops, &tc->t, n, &o)) ||
      !CHECK_OK(rk_ops_buffer_create(ops, &tc->t, m * n, &big)))
    goto done;
  CHECK(rk_ops_buffer_length(x) == n, "length");
  float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy),
        *ho = malloc(m * n * sizeof *ho), *hb = malloc(m * n * sizeof *hb);
  fill(hx, n, -1, 1);
  fill(hy, n, -1, 1);
  fill(hb, m * n, -1, 1);
  CHECK_OK(rk_ops_buffer_write(x, 0, hx, n));
  CHECK_OK(rk_ops_buffer_write(y, 0, hy, n));
  CHECK_OK(rk_ops_buffer_write(big, 0, hb, m * n));
  rk_op_report_t r;
  rk_op_desc_t d;
  memset(&d, 0, sizeof d);

  /* add: o = x + y, result stays on the device */
  d.op = RK_OP_ADD;
  d.n = n;
  rk_ops_buffer_t *add_ops[] = {x, y, o};
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0, add_ops, 3, NULL, &r)) &&
      CHECK_OK(rk_ops_buffer_read(o, 0, ho, n))) {
    int bad = -1;
    for (size_t i = 0; i < n && bad < 0; ++i)
      if (!close_to(ho[i], (float)(hx[i] + hy[i]), eps * fabs(ho[i])))
        bad = (int)i;
    CHECK(bad < 0, "%s resident add: element %d", tc->name, bad);
    CHECK(r.target.kind == RK_EXEC_GPU && r.target.backend == tc->t.backend,
          "resident report target");
  }
  /* axpy in place: y = 2x + y */
  d.op = RK_OP_AXPY;
  rk_ops_buffer_t *axpy_ops[] = {x, y};
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 2.0f, axpy_ops, 2, NULL, &r)) &&
      CHECK_OK(rk_ops_buffer_read(y, 0, ho, n))) {
    int bad = -1;
    for (size_t i = 0; i < n && bad < 0; ++i) {
      double ref = 2.0 * hx[i] + hy[i];
      if (!close_to(ho[i], ref, 2 * eps * (fabs(2.0 * hx[i]) + fabs(hy[i]))))
        bad = (int)i;
    }
    CHECK(bad < 0, "%s resident axpy: element %d", tc->name, bad);
  }
  /* sum of x, on the host */
  d.op = RK_OP_SUM;
  rk_ops_buffer_t *sum_ops[] = {x};
  float v = 0;
  double ref = 0, abs_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    ref += hx[i];
    abs_sum += fabs(hx[i]);
  }
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0, sum_ops, 1, &v, &r)))
    CHECK(close_to(v, ref, eps * (8 * abs_sum + fabs(ref))),
          "%s resident sum %g vs %g", tc->name, v, ref);
  /* matvec: o[m] = big[m x n] x */
  d.op = RK_OP_MATVEC;
  d.m = m;
  rk_ops_buffer_t *mv_ops[] = {big, x, o};
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0, mv_ops, 3, NULL, &r)) &&
      CHECK_OK(rk_ops_buffer_read(o, 0, ho, m))) {
    int bad = -1;
    for (size_t i = 0; i < m && bad < 0; ++i) {
      double rr = 0, aa = 0;
      for (size_t j = 0; j < n; ++j) {
        rr += (double)hb[i * n + j] * hx[j];
        aa += fabs((double)hb[i * n + j] * hx[j]);
      }
      if (!close_to(ho[i], rr, (n + 20) * eps * aa)) bad = (int)i;
    }
    CHECK(bad < 0, "%s resident matvec: row %d", tc->name, bad);
  }
  /* matmul: o[m x 1] = big[m x k] x[k x 1] */
  d.op = RK_OP_MATMUL;
  d.m = m;
  d.n = 1;
  d.k = k;
  rk_ops_buffer_t *mm_ops[] = {big, x, o};
  if (CHECK_OK(rk_ops_run_resident(ops, &d, 0, mm_ops, 3, NULL, &r)) &&
      CHECK_OK(rk_ops_buffer_read(o, 0, ho, m))) {
    int bad = -1;
    for (size_t i = 0; i < m && bad < 0; ++i) {
      double rr = 0, aa = 0;
      for (size_t p = 0; p < k; ++p) {
        rr += (double)hb[i * k + p] * hx[p];
        aa += fabs((double)hb[i * k + p] * hx[p]);
      }
      if (!close_to(ho[i], rr, (k + 20) * eps * aa)) bad = (int)i;
    }
    CHECK(bad < 0, "%s resident matmul: row %d", tc->name, bad);
  }
  /* errors */
  d.op = RK_OP_ADD;
  d.m = d.k = 0;
  d.n = n;
  CHECK_STATUS(rk_ops_run_resident(ops, &d, 0, add_ops, 2, NULL, &r),
               RK_ERR_INVALID_ARGUMENT);
  d.n = n + 1;
  CHECK_STATUS(rk_ops_run_resident(ops, &d, 0, add_ops, 3, NULL, &r),
               RK_ERR_OUT_OF_RANGE);
  d.op = RK_OP_MATVEC;
  d.m = 2;
  d.n = 2;
  rk_ops_buffer_t *alias_ops[] = {big, x, x};
  CHECK_STATUS(rk_ops_run_resident(ops, &d, 0, alias_ops, 3, NULL, &r),
               RK_ERR_INVALID_ARGUMENT);
  d.op = RK_OP_SUM;
  CHECK_STATUS(rk_ops_run_resident(ops, &d, 0, sum_ops, 1, NULL, &r),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_buffer_read(x, n - 1, ho, 2), RK_ERR_OUT_OF_RANGE);
  CHECK_STATUS(rk_ops_buffer_write(x, SIZE_MAX, hx, 2), RK_ERR_OUT_OF_RANGE);
  CHECK_OK(rk_ops_buffer_write(x, n, hx, 0));
  if (other) {
    rk_ops_buffer_t *z = NULL;
    if (CHECK_OK(rk_ops_buffer_create(other->ops, &other->t, n, &z))) {
      d.op = RK_OP_ADD;
      d.n = n;
      rk_ops_buffer_t *mixed[] = {x, z, o};
      CHECK_STATUS(rk_ops_run_resident(ops, &d, 0, mixed, 3, NULL, &r),
                   RK_ERR_INVALID_ARGUMENT);
      CHECK_ERROR_HAS("different targets");
      rk_ops_buffer_destroy(z);
    }
  }
  free(hx);
  free(hy);
  free(ho);
  free(hb);
done:
  rk_ops_buffer_destroy(x);
  rk_ops_buffer_destroy(y);
  rk_ops_buffer_destroy(o);
  rk_ops_buffer_destroy(big);
}

static void check_resident_errors(void) {
  rk_ops_t *ops;
  if (!CHECK_OK(rk_ops_create(NULL, &ops))) return;
  rk_ops_buffer_t *b = NULL;
  rk_exec_target_t simd = {RK_EXEC_SIMD, rk_isa_best(), RK_BACKEND_AUTO, 0};
  CHECK_STATUS(rk_ops_buffer_create(ops, &simd, 4, &b),
               RK_ERR_INVALID_ARGUMENT);
  rk_exec_target_t cpu = {RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_CPU, 0};
  CHECK_STATUS(rk_ops_buffer_create(ops, &cpu, 0, &b), RK_ERR_INVALID_ARGUMENT);
  CHECK(rk_ops_buffer_length(NULL) == 0, "length of NULL");
  rk_ops_buffer_destroy(NULL);
  ops_destroy(ops);
}

/* ---- Errors and policies ------------------------------------------------ */

static void check_errors(rk_ops_t *ops) {
  float x[8] = {0}, y[8] = {0}, v;
  CHECK_STATUS(rk_ops_add(NULL, 4, x, y, y, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_add(ops, 4, NULL, y, y, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("NULL");
  CHECK_STATUS(rk_ops_add(ops, 4, x, y, NULL, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_sum(ops, 4, x, NULL, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("out_result");
  /* NULL is fine when nothing is read */
  CHECK_OK(rk_ops_add(ops, 0, NULL, NULL, NULL, NULL));
  /* partial overlap of output and input */
  CHECK_STATUS(rk_ops_add(ops, 4, x, y, x + 1, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("overlaps");
  /* sizes that overflow */
  CHECK_STATUS(rk_ops_sum(ops, SIZE_MAX / 2, x, &v, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_matmul(ops, SIZE_MAX / 4, 8, SIZE_MAX / 4, x, y, x, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("matmul");
  CHECK_STATUS(rk_ops_matvec(ops, 1u << 20, SIZE_MAX / 1024, x, y, y, NULL),
               RK_ERR_INVALID_ARGUMENT);
  /* C may not overlap A or B, not even exactly */
  CHECK_STATUS(rk_ops_matmul(ops, 2, 2, 2, x, y, x, NULL),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_ops_matvec(ops, 2, 2, x, y, y, NULL),
               RK_ERR_INVALID_ARGUMENT);

  /* Empty inputs. */
  v = 5;
  CHECK(rk_ops_sum(ops, 0, NULL, &v, NULL) == RK_OK && v == 0.0f, "sum of 0");
  CHECK(rk_ops_dot(ops, 0, NULL, NULL, &v, NULL) == RK_OK && v == 0.0f,
        "dot of 0");
  CHECK(rk_ops_min(ops, 0, NULL, &v, NULL) == RK_OK && isinf(v) && v > 0,
        "min of 0 is +inf");
  CHECK(rk_ops_max(ops, 0, NULL, &v, NULL) == RK_OK && isinf(v) && v < 0,
        "max of 0 is -inf");
  y[0] = y[1] = 7;
  CHECK(rk_ops_matvec(ops, 2, 0, NULL, NULL, y, NULL) == RK_OK && y[0] == 0 &&
            y[1] == 0,
        "matvec with n = 0 gives zeros");
  y[0] = y[3] = 7;
  CHECK(rk_ops_matmul(ops, 2, 2, 0, NULL, NULL, y, NULL) == RK_OK &&
            y[0] == 0 && y[3] == 0,
        "matmul with k = 0 gives zeros");
}

static void check_forced_errors(void) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  rk_ops_t *ops = NULL;
  /* An ISA this CPU lacks (or rk lacks) is UNAVAILABLE, never SIGILL. */
  rk_isa_t missing = RK_ISA_NONE;
  static const rk_isa_t isas[] = {RK_ISA_AVX2, RK_ISA_AVX512, RK_ISA_NEON};
  for (size_t i = 0; i < 3; ++i)
    if (!rk_isa_supported(isas[i])) missing = isas[i];
  if (missing != RK_ISA_NONE) {
    o.target = (rk_exec_target_t){RK_EXEC_SIMD, missing, RK_BACKEND_AUTO, 0};
    CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS(rk_isa_name(missing));
  }
  o.target = (rk_exec_target_t){RK_EXEC_SIMD, RK_ISA_NONE, RK_BACKEND_AUTO, 0};
  CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_INVALID_ARGUMENT);
  o.target = (rk_exec_target_t){RK_EXEC_SIMD, (rk_isa_t)42, RK_BACKEND_AUTO, 0};
  CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_INVALID_ARGUMENT);
  o.target = (rk_exec_target_t){RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_AUTO, 0};
  CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_INVALID_ARGUMENT);
  /* A GPU backend that cannot open here: the op fails and says why. Metal
   * exists only on Apple systems. */
#if !defined(__APPLE__)
  o.target = (rk_exec_target_t){RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_METAL, 0};
  if (CHECK_OK(rk_ops_create(&o, &ops))) {
    float x = 1, y;
    rk_status_t s = rk_ops_exp(ops, 1, &x, &y, NULL);
    CHECK(s != RK_OK, "forced metal ran");
    CHECK_ERROR_HAS("metal");
    ops_destroy(ops);
  }
#endif
  /* A device that does not exist. */
  o.target = (rk_exec_target_t){RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_CPU, 7};
  if (CHECK_OK(rk_ops_create(&o, &ops))) {
    float x = 1, y;
    CHECK_STATUS(rk_ops_exp(ops, 1, &x, &y, NULL), RK_ERR_UNAVAILABLE);
    CHECK_ERROR_HAS("device 7");
    ops_destroy(ops);
  }
  o.threads = -1;
  o.target.device = 0;
  CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_INVALID_ARGUMENT);
}

static void check_compat(void) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_COMPAT;
  rk_ops_t *ops;
  if (!CHECK_OK(rk_ops_create(&o, &ops))) return;
  size_t n = 1000001;
  float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
  rk_op_report_t r;
  /* element-wise: SIMD above 1,000,000 elements, scalar at and below */
  if (CHECK_OK(rk_ops_relu(ops, n, x, y, &r))) {
    rk_exec_kind_t want =
        rk_isa_best() == RK_ISA_NONE ? RK_EXEC_SCALAR : RK_EXEC_SIMD;
    CHECK(r.target.kind == want && r.target.isa == rk_isa_best(),
          "compat relu n=1000001 ran %s/%s", rk_exec_kind_name(r.target.kind),
          rk_isa_name(r.target.isa));
    CHECK(r.policy == RK_POLICY_COMPAT, "policy in report");
    CHECK(!r.has_prediction, "compat has no prediction");
    CHECK(r.wall_s > 0, "wall time measured");
  }
  if (CHECK_OK(rk_ops_relu(ops, n - 1, x, y, &r)))
    CHECK(r.target.kind == RK_EXEC_SCALAR && strcmp(r.engine, "scalar") == 0,
          "compat relu n=1000000 ran %s (%s)", rk_exec_kind_name(r.target.kind),
          r.engine);
  ops_destroy(ops);

  /* A selector that sends everything to the GPU, with no GPU allowed: runs
   * SIMD and says so. */
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_COMPAT;
  o.gpu_backends = 0;
  CHECK_OK(rk_compat_set_dispatch_ratio(&o.compat, 1e-9));
  if (CHECK_OK(rk_ops_create(&o, &ops))) {
    float v;
    if (CHECK_OK(rk_ops_dot(ops, 1000, x, y, &v, &r))) {
      CHECK(r.chosen.kind == RK_EXEC_GPU, "compat chose %s",
            rk_exec_kind_name(r.chosen.kind));
      CHECK(r.target.kind != RK_EXEC_GPU, "ran on a GPU that was not allowed");
      CHECK(strstr(r.note, "no GPU") != NULL, "note: '%s'", r.note);
    }
    ops_destroy(ops);
  }
  free(x);
  free(y);
}

static void check_calibrated(void) {
  rk_ops_t *ops;
  if (!CHECK_OK(rk_ops_create(NULL, &ops))) return;
  rk_cost_model_t *model;
  if (!CHECK_OK(rk_cost_model_open(&model))) {
    ops_destroy(ops);
    return;
  }
  static const size_t sizes[] = {10, 100000, 10000000};
  for (size_t s = 0; s < 3; ++s) {
    size_t n = sizes[s];
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    rk_op_report_t r;
    if (CHECK_OK(rk_ops_axpy(ops, n, 2.0f, x, y, &r))) {
      rk_op_desc_t d = {RK_OP_AXPY, 0, n, 0, RK_RESIDENT_HOST, true};
      rk_prediction_t p[32];
      size_t count = 0, best = 0;
      CHECK_OK(rk_cost_model_predict(model, &d, p, 32, &count, &best));
      CHECK(r.policy == RK_POLICY_CALIBRATED && r.has_prediction,
            "calibrated report");
      /* The model's best runs unless it is a GPU that is absent here. */
      if (count > 0 && p[best].target.kind != RK_EXEC_GPU) {
        CHECK(r.target.kind == p[best].target.kind &&
                  r.target.isa == p[best].target.isa,
              "n=%zu: model chose %s/%s, ran %s/%s", n,
              rk_exec_kind_name(p[best].target.kind),
              rk_isa_name(p[best].target.isa), rk_exec_kind_name(r.target.kind),
              rk_isa_name(r.target.isa));
        CHECK(r.predicted_s == p[best].total_s, "prediction %g vs %g",
              r.predicted_s, p[best].total_s);
      }
    }
    free(x);
    free(y);
  }
  rk_cost_model_destroy(model);
  /* Switching to forced and back keeps the handle working. */
  rk_exec_target_t t = {RK_EXEC_SCALAR, RK_ISA_NONE, RK_BACKEND_AUTO, 0};
  float x = 2, y = 0;
  rk_op_report_t r;
  if (CHECK_OK(rk_ops_set_policy(ops, RK_POLICY_FORCED, &t)) &&
      CHECK_OK(rk_ops_exp(ops, 1, &x, &y, &r)))
    CHECK(r.policy == RK_POLICY_FORCED && r.target.kind == RK_EXEC_SCALAR,
          "forced after set_policy");
  CHECK_STATUS(rk_ops_set_policy(ops, RK_POLICY_FORCED, NULL),
               RK_ERR_INVALID_ARGUMENT);
  ops_destroy(ops);
}

static void check_names(void) {
  CHECK(strcmp(rk_exec_kind_name(RK_EXEC_SIMD), "simd") == 0, "kind name");
  CHECK(strcmp(rk_exec_kind_name((rk_exec_kind_t)9), "unknown") == 0,
        "unknown kind");
  CHECK(strcmp(rk_isa_name(RK_ISA_AVX512), "avx512") == 0, "isa name");
  CHECK(strcmp(rk_isa_name((rk_isa_t)9), "unknown") == 0, "unknown isa");
  CHECK(rk_isa_supported(RK_ISA_NONE), "scalar always supported");
  CHECK(rk_isa_supported(rk_isa_best()), "best is supported");
  CHECK(!rk_isa_supported((rk_isa_t)9), "unknown isa unsupported");
  CHECK(strcmp(rk_policy_name(RK_POLICY_FORCED), "forced") == 0, "policy");
#if defined(__x86_64__)
  CHECK(!rk_isa_supported(RK_ISA_NEON), "no NEON on x86");
  if (__builtin_cpu_supports("avx512f"))
    CHECK(rk_isa_best() == RK_ISA_AVX512, "best is avx512 here");
#endif
  printf("best ISA: %s; BLAS: %s\n", rk_isa_name(rk_isa_best()),
         rk_ops_blas_name() ? rk_ops_blas_name() : "none");
}

/* Two threads on one handle at once, large enough for the pool. */
typedef struct thr_arg {
  rk_ops_t *ops;
  size_t n;
  float *x;
  double sum;
  rk_status_t s;
} thr_arg_t;
static void *thr_main(void *p) {
  thr_arg_t *a = p;
  float v = 0;
  for (int i = 0; i < 20 && a->s == RK_OK; ++i)
    a->s = rk_ops_sum(a->ops, a->n, a->x, &v, NULL);
  a->sum = v;
  return NULL;
}
#include <pthread.h>
static void check_threads(void) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target =
      (rk_exec_target_t){RK_EXEC_SIMD, rk_isa_best(), RK_BACKEND_AUTO, 0};
  if (o.target.isa == RK_ISA_NONE) o.target.kind = RK_EXEC_SCALAR;
  o.threads = 3;
  rk_ops_t *ops;
  if (!CHECK_OK(rk_ops_create(&o, &ops))) return;
  size_t n = 1 << 20;
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; ++i) x[i] = (float)(i % 7);
  double ref = 0;
  for (size_t i = 0; i < n; ++i) ref += x[i];
  rk_op_report_t r;
  float v;
  if (CHECK_OK(rk_ops_sum(ops, n, x, &v, &r))) {
    CHECK(v == (float)ref, "threaded sum %g vs %g", v, ref);
    if (o.target.kind == RK_EXEC_SIMD)
      CHECK(r.threads == 3, "threads in report: %d", r.threads);
  }
  thr_arg_t a[2] = {{ops, n, x, 0, RK_OK}, {ops, n, x, 0, RK_OK}};
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, thr_main, &a[i]);
  for (int i = 0; i < 2; ++i) {
    pthread_join(t[i], NULL);
    CHECK(a[i].s == RK_OK && a[i].sum == (float)ref, "concurrent sum %d: %s %g",
          i, rk_status_name(a[i].s), a[i].sum);
  }
  ops_destroy(ops);
  free(x);
  /* RK_OPS_THREADS is checked. */
  setenv("RK_OPS_THREADS", "zero", 1);
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_COMPAT;
  CHECK_STATUS(rk_ops_create(&o, &ops), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("RK_OPS_THREADS");
  unsetenv("RK_OPS_THREADS");
}

int main(int argc, char **argv) {
  rk_test_use_temp_cache();
  bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  /* Every CUDA matmul of a handle that allows it through cuBLAS, however
   * small (by default, from 512^3 multiply-adds). */
  setenv("RK_OPS_GPU_BLAS_MIN", "0", 1);
  check_names();
  collect_targets();
  static const size_t sizes[] = {0,  1,   2,    3,     7,      31,
                                 33, 100, 1000, 65537, 1000003};
  size_t nsizes = sizeof sizes / sizeof sizes[0] - (quick ? 2 : 0);
  for (int t = 0; t < g_ntargets; ++t) {
    for (size_t s = 0; s < nsizes; ++s)
      for (size_t off = 0; off < 2; ++off)
        check_vector_ops(&g_targets[t], sizes[s], off * 3 + 1);
    check_exp_edges(&g_targets[t]);
    static const size_t mm[][3] = {{1, 1, 1},    {2, 3, 7},     {7, 2, 3},
                                   {31, 7, 3},   {33, 65, 67},  {100, 129, 33},
                                   {5, 1000, 9}, {130, 70, 300}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; ++i)
      check_matrix_ops(&g_targets[t], mm[i][0], mm[i][1], mm[i][2]);
    check_errors(g_targets[t].ops);
  }
  for (int t = 0; t < g_ntargets; ++t) {
    if (!is_gpu(&g_targets[t])) continue;
    target_case_t *other = NULL;
    for (int u = 0; u < g_ntargets; ++u)
      if (u != t && is_gpu(&g_targets[u])) other = &g_targets[u];
    check_resident(&g_targets[t], other);
  }
  for (int t = 0; t < g_ntargets; ++t)
    if (g_targets[t].t.kind == RK_EXEC_GPU &&
        g_targets[t].t.backend == RK_BACKEND_CUDA && g_targets[t].blas)
      check_blas_beside_actor(&g_targets[t]);
  check_resident_errors();
  check_forced_errors();
  check_compat();
  check_calibrated();
  check_threads();
  for (int t = 0; t < g_ntargets; ++t) ops_destroy(g_targets[t].ops);
  return rk_test_finish("ops");
}

/* Leaks inside vendor libraries the GPU backends and BLAS load (wgpu-native,
 * Vulkan drivers, PoCL and its LLVM, OpenBLAS's thread set-up) are theirs,
 * not rk's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libwgpu_native\n"
         "leak:libvulkan\n"
         "leak:libpocl\n"
         "leak:libLLVM\n"
         "leak:libopenblas\n"
         "leak:libcublas\n";
}
