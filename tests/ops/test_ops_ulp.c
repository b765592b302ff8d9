/* The accuracy of exp, sigmoid, tanh and log on the scalar target and every
 * SIMD ISA this CPU has: the largest error in ulps over a dense sweep of
 * each function's range (every 2039th float, every binade alike; see
 * bench/common/ulp_sweep.h) must stay within the bounds docs/ops.md states,
 * and special inputs (NaN, infinities, zeros, the ends of the range) must
 * give the exact special results. A negative control checks that the
 * measurement does catch a result a few ulps off.
 *
 * Run twice by ctest: as is (tanh on AVX2/AVX-512 calls glibc's libmvec
 * when it loads) and with RK_VECMATH=none (rk's own tanh). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rk/ops.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"
#include "ulp_sweep.h"

enum { STRIDE = 2039 };

typedef rk_status_t (*unary_fn)(rk_ops_t *, size_t, const float *, float *,
                                rk_op_report_t *);

typedef struct fn_case {
  const char *name;
  unary_fn fn;
  double (*ref)(double);
  float lo, hi;
  double simd_bound, scalar_bound; /* max ulp; docs/ops.md */
} fn_case_t;

static const fn_case_t kCases[] = {
    {"exp", rk_ops_exp, rkb_ref_exp, -104.0f, 89.0f, 1.25, 1.0},
    {"sigmoid", rk_ops_sigmoid, rkb_ref_sigmoid, -104.0f, 89.0f, 1.75, 2.5},
    {"tanh", rk_ops_tanh, rkb_ref_tanh, -12.0f, 12.0f, 2.0, 2.5},
    {"log", rk_ops_log, rkb_ref_log, 0.0f, FLT_MAX, 1.25, 1.0},
};

static rk_ops_t *forced(rk_exec_kind_t kind, rk_isa_t isa) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target.kind = kind;
  o.target.isa = isa;
  o.threads = 1;
  o.gpu_backends = 0;
  rk_ops_t *ops = NULL;
  CHECK_OK(rk_ops_create(&o, &ops));
  return ops;
}

/* The largest error of `c` on `ops` over the sweep. */
static rkb_ulp_t sweep(rk_ops_t *ops, const fn_case_t *c) {
  static float x[RKB_SWEEP_CHUNK], y[RKB_SWEEP_CHUNK];
  rkb_ulp_t u;
  rkb_ulp_init(&u);
  rkb_sweep_t s = rkb_sweep_begin(c->lo, c->hi, STRIDE);
  size_t got;
  while ((got = rkb_sweep_next(&s, x, RKB_SWEEP_CHUNK)) > 0) {
    if (!CHECK_OK(c->fn(ops, got, x, y, NULL))) break;
    for (size_t i = 0; i < got; ++i) rkb_ulp_add(&u, x[i], y[i], c->ref(x[i]));
  }
  return u;
}

static bool same(float a, float b) {
  return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void specials(rk_ops_t *ops, const char *where) {
  const float inf = INFINITY, nan = NAN;
  float y[8];
  struct {
    unary_fn fn;
    const char *name;
    float x[8], want[8];
  } t[] = {
      {rk_ops_exp,
       "exp",
       {nan, inf, -inf, 0.0f, -0.0f, 88.8f, -104.0f, 88.72f},
       {nan, inf, 0.0f, 1.0f, 1.0f, inf, 0.0f, (float)exp(88.72f)}},
      {rk_ops_sigmoid,
       "sigmoid",
       {nan, inf, -inf, 0.0f, -0.0f, 20.0f, -104.0f, -90.0f},
       {nan, 1.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0.0f,
        (float)rkb_ref_sigmoid(-90.0)}},
      {rk_ops_tanh,
       "tanh",
       {nan, inf, -inf, 0.0f, -0.0f, 9.6f, -30.0f, 1e-30f},
       {nan, 1.0f, -1.0f, 0.0f, -0.0f, 1.0f, -1.0f, 1e-30f}},
      {rk_ops_log,
       "log",
       {nan, inf, -inf, 0.0f, -0.0f, -1.0f, 1.0f, 0x1p-149f},
       {nan, inf, nan, -inf, -inf, nan, 0.0f, (float)log(0x1p-149)}},
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; ++k) {
    if (!CHECK_OK(t[k].fn(ops, 8, t[k].x, y, NULL))) continue;
    /* NaN, infinities and zeros exactly; other values within 1 ulp. */
    for (int i = 0; i < 8; ++i) {
      float w = t[k].want[i];
      bool exact = isnan(w) || isinf(w) || w == 0.0f || isinf(t[k].x[i]);
      CHECK(exact ? same(y[i], w) : rkb_ulp_error(y[i], w) <= 1.0,
            "%s %s(%g) = %.9g, want %.9g", where, t[k].name, (double)t[k].x[i],
            (double)y[i], (double)w);
    }
  }
}

/* The measurement catches an output 3 ulps off at one point. */
static void negative_control(void) {
  rkb_ulp_t u;
  rkb_ulp_init(&u);
  float x = 1.5f;
  float good = (float)exp(1.5);
  float bad =
      nextafterf(nextafterf(nextafterf(good, INFINITY), INFINITY), INFINITY);
  rkb_ulp_add(&u, x, good, exp(1.5));
  CHECK(u.max <= 0.5, "a correctly rounded result is within 0.5 ulp");
  rkb_ulp_add(&u, x, bad, exp(1.5));
  CHECK(u.max > 2.4 && u.worst_x == x, "3 ulps off is caught (%.2f)", u.max);
  CHECK(rkb_ulp_error(INFINITY, 1e38) == INFINITY, "inf for a finite value");
  CHECK(rkb_ulp_error(1.0f, NAN) == INFINITY, "a number for a NaN");
  CHECK(rkb_sweep_count(-1.0f, 1.0f, 1) == 2u * 0x3f800000u + 2u,
        "the sweep of [-1, 1] visits every float, both zeros included");
}

int main(void) {
  negative_control();
  struct {
    rk_exec_kind_t kind;
    rk_isa_t isa;
  } targets[] = {{RK_EXEC_SCALAR, RK_ISA_NONE},
                 {RK_EXEC_SIMD, RK_ISA_AVX2},
                 {RK_EXEC_SIMD, RK_ISA_AVX512},
                 {RK_EXEC_SIMD, RK_ISA_NEON}};
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; ++t) {
    if (targets[t].kind == RK_EXEC_SIMD && !rk_isa_supported(targets[t].isa))
      continue;
    rk_ops_t *ops = forced(targets[t].kind, targets[t].isa);
    if (!ops) continue;
    const char *where = targets[t].kind == RK_EXEC_SCALAR
                            ? "scalar"
                            : rk_isa_name(targets[t].isa);
    for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
      rkb_ulp_t u = sweep(ops, &kCases[c]);
      double bound = targets[t].kind == RK_EXEC_SCALAR ? kCases[c].scalar_bound
                                                       : kCases[c].simd_bound;
      printf("%-7s %-8s max %.3f ulp at x = %.9g (%llu points; bound %.1f)\n",
             where, kCases[c].name, u.max, (double)u.worst_x,
             (unsigned long long)u.points, bound);
      CHECK(u.max <= bound, "%s %s: %.3f ulp at x = %.9g, bound %.1f", where,
            kCases[c].name, u.max, (double)u.worst_x, bound);
    }
    specials(ops, where);
    rk_ops_destroy(ops);
  }
  return rk_test_finish("ops_ulp");
}
