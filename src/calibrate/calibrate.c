/* calibrate.c - measuring this machine for the cost model. Calibration
 * sits above both the cost model (src/cost, which it feeds) and the ops
 * library (src/ops, whose ops it times); neither of those includes it.
 *
 * For every candidate (scalar, SIMD with the best ISA, each GPU device),
 * every op runs forced onto that candidate (rk/ops.h, RK_POLICY_FORCED) at
 * several sizes, and gets its own curve: the vector ops (add ... log, dot,
 * sum, min, max) at n = 16, 16 s, 16 s^2, ... up to 1M / 16M / 64M
 * elements (s = 4 for quick and default, 2 for thorough), matvec n x n
 * doubling from 16 to 256 / 2048 / 4096, matmul n^3 doubling from 8 to
 * 128 / 512 / 1024. On the SIMD candidate two more vector sizes straddle
 * the point where the ops library splits an op over two threads (2^17 - 16
 * and 2^17), so the curve steps there instead of blending across it. The
 * first op of each class (add, sum, exp) also gives the class's curve.
 * A candidate whose call takes longer than a level's limit (scalar GEMM)
 * stops growing there.
 *
 * Robustness: each size's time is the median of several timed batches,
 * all sizes of an op interleaved pass by pass, on the scalar and the SIMD
 * candidate together (equal sizes side by side, so that a slow phase of
 * the machine cannot tilt one candidate against the other); a size far from the
 * line through its neighbours is timed again with twice the batches; times are
 * then made non-decreasing in n on each side of the thread switch by
 * lowering the slower of two disagreeing sizes (see robust_times). The
 * launch latency is 90% of the fastest call (n = 1 included); each size
 * gives a rate point (working-set bytes, FLOP/s, bytes/s) from the time
 * left after the launch (and, on a GPU, after the copies), so the
 * prediction of every measured size is its (robust) measured time.
 *
 * GPU candidates run on operands already on the device (rk_ops_buffer_t),
 * so a call is launch + kernel + synchronisation; their host<->device
 * latency and bandwidth come from plain HAL copies. Thread scaling of the
 * SIMD candidate is measured with one thread and with all of them.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/sys.h"
#include "cost/cost.h"
#include "ops/ops_internal.h"
#include "rk/ops.h"

void rk_calibrate_options_init(rk_calibrate_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->level = RK_CALIBRATE_DEFAULT;
}

typedef struct plan {
  double min_batch_s; /* each timed batch lasts at least this long */
  int batches;        /* median of this many batches */
  double max_call_s;  /* stop growing sizes past a call this long */
  int vec_step;       /* vector sizes grow by this factor from 16 */
  size_t max_vec;     /* vector ops: largest n */
  size_t max_mv;      /* matvec: largest n (n x n, from 16, doubling) */
  size_t max_mm;      /* matmul: largest n (n^3, from 8, doubling) */
} plan_t;

static plan_t make_plan(rk_calibrate_level_t level) {
  plan_t p;
  switch (level) {
    case RK_CALIBRATE_QUICK:
      p = (plan_t){0.0015, 3, 0.02, 4, 1u << 20, 256, 128};
      break;
    case RK_CALIBRATE_THOROUGH:
      p = (plan_t){0.03, 9, 1.0, 2, 64u << 20, 4096, 1024};
      break;
    default:
      p = (plan_t){0.006, 5, 0.2, 4, 16u << 20, 2048, 512};
      break;
  }
  return p;
}

/* What is measured: every op. Vector ops get their own curve (and the
 * first op of each class, add / sum / exp, also its class's curve, for
 * readers that only know classes); matvec and matmul are their classes. */
static const rk_op_t kUnits[] = {
    RK_OP_ADD,  RK_OP_SUB, RK_OP_MUL,     RK_OP_SCALE,  RK_OP_AXPY,  RK_OP_FMA,
    RK_OP_RELU, RK_OP_EXP, RK_OP_SIGMOID, RK_OP_TANH,   RK_OP_LOG,   RK_OP_SUM,
    RK_OP_DOT,  RK_OP_MIN, RK_OP_MAX,     RK_OP_MATVEC, RK_OP_MATMUL};
enum { NUNITS = sizeof kUnits / sizeof kUnits[0] };

static bool is_matrix(rk_op_t op) {
  return op == RK_OP_MATVEC || op == RK_OP_MATMUL;
}
static bool is_class_rep(rk_op_t op) {
  return op == RK_OP_ADD || op == RK_OP_SUM || op == RK_OP_EXP || is_matrix(op);
}

typedef struct calib {
  const rk_calibrate_options_t *opt;
  plan_t plan;
  int step, steps;
  float *a, *b, *c, *d; /* operands, big enough for every size (d: 0.25) */
  size_t cap;           /* floats in each */
  /* GPU candidates: operands on the device (cap floats each), so that a
   * call times the launch, the kernel and the synchronisation only. */
  rk_ops_buffer_t *dev[4];
  bool resident;
} calib_t;

static void progress(calib_t *cal, const char *fmt, ...) RK__PRINTF(2, 3);
static void progress(calib_t *cal, const char *fmt, ...) {
  if (!cal->opt->progress) return;
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  double f = cal->steps > 0 ? (double)cal->step / cal->steps : 0.0;
  if (f > 1.0) f = 1.0;
  cal->opt->progress(cal->opt->user, f, what);
}

/* The op at size n (vectors: n elements; matrices: n x n (x n)). */
static rk_op_desc_t desc_for(rk_op_t op, size_t n) {
  rk_op_desc_t d;
  memset(&d, 0, sizeof d);
  d.op = op;
  d.n = n;
  if (op == RK_OP_MATVEC) d.m = n;
  if (op == RK_OP_MATMUL) d.m = d.k = n;
  d.result_on_host = true;
  return d;
}

/* One call of `op` at size n. log reads d (positive); fma's addend is d. */
static rk_status_t run_op(calib_t *cal, rk_ops_t *ops, rk_op_t op, size_t n) {
  float r;
  if (cal->resident) {
    rk_ops_buffer_t *const *dv = cal->dev;
    rk_ops_buffer_t *opnds[4];
    size_t count;
    switch (op) {
      case RK_OP_ADD:
      case RK_OP_SUB:
      case RK_OP_MUL:
      case RK_OP_MATVEC:
      case RK_OP_MATMUL:
        opnds[0] = dv[0], opnds[1] = dv[1], opnds[2] = dv[2], count = 3;
        break;
      case RK_OP_FMA:
        opnds[0] = dv[0], opnds[1] = dv[1], opnds[2] = dv[3];
        opnds[3] = dv[2], count = 4;
        break;
      case RK_OP_DOT:
        opnds[0] = dv[0], opnds[1] = dv[1], count = 2;
        break;
      case RK_OP_SUM:
      case RK_OP_MIN:
      case RK_OP_MAX:
        opnds[0] = dv[0], count = 1;
        break;
      default: /* scale, axpy, relu, exp, sigmoid, tanh, log: x, y */
        opnds[0] = op == RK_OP_LOG ? dv[3] : dv[0], opnds[1] = dv[2];
        count = 2;
        break;
    }
    rk_op_desc_t d = desc_for(op, n);
    bool red = op == RK_OP_DOT || op == RK_OP_SUM || op == RK_OP_MIN ||
               op == RK_OP_MAX;
    return rk_ops_run_resident(ops, &d, op == RK_OP_AXPY ? 1e-3f : 0.5f, opnds,
                               count, red ? &r : NULL, NULL);
  }
  switch (op) {
    case RK_OP_ADD:
      return rk_ops_add(ops, n, cal->a, cal->b, cal->c, NULL);
    case RK_OP_SUB:
      return rk_ops_sub(ops, n, cal->a, cal->b, cal->c, NULL);
    case RK_OP_MUL:
      return rk_ops_mul(ops, n, cal->a, cal->b, cal->c, NULL);
    case RK_OP_SCALE:
      return rk_ops_scale(ops, n, 0.5f, cal->a, cal->c, NULL);
    case RK_OP_AXPY:
      return rk_ops_axpy(ops, n, 1e-3f, cal->a, cal->c, NULL);
    case RK_OP_FMA:
      return rk_ops_fma(ops, n, cal->a, cal->b, cal->d, cal->c, NULL);
    case RK_OP_RELU:
      return rk_ops_relu(ops, n, cal->a, cal->c, NULL);
    case RK_OP_SIGMOID:
      return rk_ops_sigmoid(ops, n, cal->a, cal->c, NULL);
    case RK_OP_EXP:
      return rk_ops_exp(ops, n, cal->a, cal->c, NULL);
    case RK_OP_TANH:
      return rk_ops_tanh(ops, n, cal->a, cal->c, NULL);
    case RK_OP_LOG:
      return rk_ops_log(ops, n, cal->d, cal->c, NULL);
    case RK_OP_DOT:
      return rk_ops_dot(ops, n, cal->a, cal->b, &r, NULL);
    case RK_OP_SUM:
      return rk_ops_sum(ops, n, cal->a, &r, NULL);
    case RK_OP_MIN:
      return rk_ops_min(ops, n, cal->a, &r, NULL);
    case RK_OP_MAX:
      return rk_ops_max(ops, n, cal->a, &r, NULL);
    case RK_OP_MATVEC:
      return rk_ops_matvec(ops, n, n, cal->a, cal->b, cal->c, NULL);
    case RK_OP_MATMUL:
      return rk_ops_matmul(ops, n, n, n, cal->a, cal->b, cal->c, NULL);
    default:
      return rk__fail(RK_ERR_INTERNAL, "calibrate: bad op");
  }
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Seconds per call of `reps` calls. */
static rk_status_t time_batch(calib_t *cal, rk_ops_t *ops, rk_op_t op, size_t n,
                              long reps, double *out_s) {
  uint64_t t0 = rk__now_ns();
  for (long r = 0; r < reps; ++r) RK_RETURN_IF_ERROR(run_op(cal, ops, op, n));
  *out_s = (double)(rk__now_ns() - t0) * 1e-9 / (double)reps;
  return RK_OK;
}

/* Warms up (first-use work: GPU kernels compile, pages fault in) and sizes
 * a batch from one timed call, which is also returned. */
static rk_status_t size_batch(calib_t *cal, rk_ops_t *ops, rk_op_t op, size_t n,
                              long *out_reps, double *out_one) {
  RK_RETURN_IF_ERROR(run_op(cal, ops, op, n));
  double one;
  RK_RETURN_IF_ERROR(time_batch(cal, ops, op, n, 1, &one));
  long reps = one > 0 ? (long)(cal->plan.min_batch_s / one) : 1000;
  if (reps < 1) reps = 1;
  if (reps > 1000000) reps = 1000000;
  *out_reps = reps;
  *out_one = one;
  return RK_OK;
}

/* One timed size: an op's size on one candidate. */
typedef struct job {
  rk_ops_t *ops;
  size_t n;
  int group; /* the candidate's index in the calibration group */
} job_t;

enum { kMaxJobs = 2 * (RK__COST_MAX_POINTS + 1) };

/* Median seconds per call over `batches` batches, for `count` jobs at
 * once: every pass times one batch of each job, so a slow phase of the
 * machine spreads over all sizes (and every candidate of the group)
 * instead of bending one curve at one size or tilting one candidate
 * against another. Jobs come in ascending n within a group. A job whose
 * single call exceeds the plan's limit is timed once and ends its group's
 * list: the group's larger sizes are not timed (out_s 0). */
static rk_status_t time_jobs(calib_t *cal, rk_op_t op, const char *label,
                             const job_t *jobs, int count, int batches,
                             double *out_s) {
  long reps[kMaxJobs];
  double samples[kMaxJobs][32];
  int taken[kMaxJobs];
  bool ended[kMaxJobs];
  if (count > kMaxJobs) count = kMaxJobs;
  if (batches > 32) batches = 32;
  memset(ended, 0, sizeof ended);
  for (int i = 0; i < count; ++i) {
    taken[i] = 0;
    out_s[i] = 0.0;
    if (ended[jobs[i].group]) {
      cal->step += batches;
      continue;
    }
    double one;
    RK_RETURN_IF_ERROR(
        size_batch(cal, jobs[i].ops, op, jobs[i].n, &reps[i], &one));
    if (one > cal->plan.max_call_s) {
      samples[i][0] = one;
      taken[i] = -1; /* once, no passes */
      cal->step += batches;
      ended[jobs[i].group] = true; /* larger sizes would be slower still */
      continue;
    }
    RK_RETURN_IF_ERROR(
        time_batch(cal, jobs[i].ops, op, jobs[i].n, reps[i], &samples[i][0]));
    taken[i] = 1;
    ++cal->step;
  }
  for (int b = 1; b < batches; ++b) {
    progress(cal, "%s: pass %d of %d", label, b + 1, batches);
    for (int o = 0; o < count; ++o) {
      /* Candidates at one size take turns going first (the one after
       * another may find the caches, or the other CPU, as it left them). */
      int i = o;
      if (b % 2 && o + 1 < count && jobs[o + 1].n == jobs[o].n)
        i = o + 1;
      else if (b % 2 && o > 0 && jobs[o - 1].n == jobs[o].n)
        i = o - 1;
      if (taken[i] <= 0) continue;
      RK_RETURN_IF_ERROR(time_batch(cal, jobs[i].ops, op, jobs[i].n, reps[i],
                                    &samples[i][taken[i]++]));
      ++cal->step;
    }
  }
  for (int i = 0; i < count; ++i) {
    if (taken[i] == 0) continue;
    int k = taken[i] < 0 ? 1 : taken[i];
    qsort(samples[i], (size_t)k, sizeof samples[i][0], cmp_double);
    out_s[i] = samples[i][k / 2];
  }
  return RK_OK;
}

/* One size on one candidate, `batches` times. */
static rk_status_t time_one(calib_t *cal, rk_ops_t *ops, rk_op_t op,
                            const char *label, size_t n, int batches,
                            double *out_s) {
  job_t j = {ops, n, 0};
  return time_jobs(cal, op, label, &j, 1, batches, out_s);
}

/* The sizes of `op` on a target, ascending, after n = 1 (the launch probe)
 * at out[0]; returns how many (at most cap). Vector sizes: 16, 16 step,
 * ... up to max_vec; on a SIMD target also the two sizes around the point
 * where the ops library starts splitting over two threads (the last size
 * on one thread and the first on two), so the curve has the step there
 * instead of a blend across it. Matrices: doubling from 16 (matvec) or 8
 * (matmul). *out_switch is the index of the first size on two threads, or
 * 0. */
static int sizes_for(const plan_t *p, rk_op_t op, bool simd, size_t *out,
                     int cap, int *out_switch) {
  int k = 0;
  *out_switch = 0;
  out[k++] = 1;
  if (is_matrix(op)) {
    size_t max = op == RK_OP_MATVEC ? p->max_mv : p->max_mm;
    for (size_t n = op == RK_OP_MATVEC ? 16 : 8; n <= max && k < cap; n *= 2)
      out[k++] = n;
    return k;
  }
  const size_t sw = 2 * (size_t)RK__OPS_PAR_MIN_ELEMS;
  bool added = !simd || sw > p->max_vec;
  for (size_t n = 16; n <= p->max_vec && k < cap; n *= (size_t)p->vec_step) {
    if (!added && n >= sw - 16 && k + 2 < cap) {
      if (n > sw - 16) out[k++] = sw - 16;
      *out_switch = k;
      if (n > sw) out[k++] = sw;
      added = true;
    }
    out[k++] = n;
  }
  return k;
}

/* Robustness of one curve's measured times (index 0 is n = 1). Other work
 * on the machine only ever adds time, so:
 *  - a point far (> 25%) from the log-log line through its neighbours on
 *    the same side of the thread switch (the last point: from the line
 *    through the two before it) is timed again with twice the batches, and
 *    the new median kept;
 *  - then times are made non-decreasing in n on each side of the switch (a
 *    larger call cannot be faster on the same threads) by lowering a point
 *    to the smallest time of the larger sizes after it, never by raising
 *    one: where two points disagree, the faster is the one less disturbed.
 *    So no rate can dip at one size, and one slow measurement (at n = 1,
 *    say) does not spread to the sizes above it. */
static rk_status_t robust_times(calib_t *cal, rk_ops_t *ops, rk_op_t op,
                                const char *label, const size_t *ns, int count,
                                int sw, double *secs) {
  for (int i = 1; i < count; ++i) {
    if (sw && (i == sw - 1 || i == sw)) continue; /* a side's end */
    int lo = i - 1, hi = i + 1;
    if (i + 1 >= count) { /* the last point: extrapolate */
      if (i < 2 || (sw && i - 2 < sw && i - 1 >= sw)) continue;
      lo = i - 2;
      hi = i - 1;
    }
    double x0 = log((double)ns[lo]), x1 = log((double)ns[i]),
           x2 = log((double)ns[hi]);
    double y0 = log(secs[lo]), y2 = log(secs[hi]);
    double want = exp(y0 + (y2 - y0) * (x1 - x0) / (x2 - x0));
    double ratio = secs[i] / want;
    if (ratio < 1.25 && ratio > 0.8) continue;
    double again;
    char what[96];
    snprintf(what, sizeof what, "%s: n=%zu again", label, ns[i]);
    RK_RETURN_IF_ERROR(
        time_one(cal, ops, op, what, ns[i], 2 * cal->plan.batches, &again));
    if (again > 0) secs[i] = again;
  }
  for (int i = count - 2; i >= 0; --i)
    if (!(sw && i == sw - 1) && secs[i] > secs[i + 1]) secs[i] = secs[i + 1];
  return RK_OK;
}

/* Host<->device latency and bandwidth through the HAL. */
static rk_status_t measure_links(calib_t *cal, rk__cost_target_t *t) {
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  rk_devptr_t buf = 0;
  size_t big = (size_t)16 << 20;
  if (big > cal->cap * sizeof(float)) big = cal->cap * sizeof(float);
  rk_status_t s = rk_backend_open(t->target.backend, &be);
  if (s == RK_OK) s = rk_backend_create_context(be, t->target.device, &ctx);
  if (s == RK_OK) s = rk_context_allocate(ctx, big, &buf);
  for (int dir = 0; dir < 2 && s == RK_OK; ++dir) {
    double small_s = 1e30, big_s = 1e30;
    for (int rep = 0; rep < 2 * cal->plan.batches + 1 && s == RK_OK; ++rep) {
      for (int which = 0; which < 2 && s == RK_OK; ++which) {
        size_t bytes = which ? big : 64;
        uint64_t t0 = rk__now_ns();
        s = dir == 0 ? rk_context_copy_to_device(ctx, buf, cal->a, bytes)
                     : rk_context_copy_to_host(ctx, cal->c, buf, bytes);
        double e = (double)(rk__now_ns() - t0) * 1e-9;
        if (which == 0 && e < small_s) small_s = e;
        if (which == 1 && e < big_s) big_s = e;
      }
    }
    if (s != RK_OK) break;
    rk__cost_link_t *link = dir == 0 ? &t->h2d : &t->d2h;
    link->latency_s = small_s;
    double rest = big_s - small_s;
    link->bandwidth = (double)big / (rest > 1e-9 ? rest : big_s);
  }
  if (buf) rk_context_free(ctx, buf);
  rk_context_destroy(ctx);
  rk_backend_destroy(be);
  return s;
}

static double link_s(const rk__cost_link_t *l, double bytes) {
  return bytes > 0 ? l->latency_s + bytes / l->bandwidth : 0.0;
}

/* A GPU candidate's host<->device copies, and its operands on the device
 * (cal->resident) where there is room. */
static rk_status_t prepare_gpu(calib_t *cal, rk__cost_target_t *t,
                               rk_ops_t *ops) {
  progress(cal, "%s: host<->device copies", t->key);
  rk_status_t s = measure_links(cal, t);
  ++cal->step;
  /* Kernels on device-resident operands; where that is not possible
   * (too little device memory), the host-pointer ops with the measured
   * copies taken out. */
  char *saved = rk__error_save();
  cal->resident = s == RK_OK;
  for (int i = 0; i < 4 && cal->resident; ++i)
    cal->resident =
        rk_ops_buffer_create(ops, &t->target, cal->cap, &cal->dev[i]) ==
            RK_OK &&
        rk_ops_buffer_write(cal->dev[i], 0, i == 3 ? cal->d : cal->a,
                            cal->cap) == RK_OK;
  rk__error_restore(saved);
  return s;
}

static void release_gpu(calib_t *cal) {
  for (int i = 0; i < 4; ++i) {
    rk_ops_buffer_destroy(cal->dev[i]);
    cal->dev[i] = NULL;
  }
  cal->resident = false;
}

/* The curve of `op` on `t` from its robust times: the launch latency is
 * 90% of the fastest call less its copies, so that the prediction of each
 * measured size is its measured time (an engine that changes with size,
 * e.g. a BLAS only for larger GEMMs, can make n = 1 slower than n = 8). */
static void fit_curve(const calib_t *cal, rk__cost_target_t *t, rk_op_t op,
                      const size_t *ns, const double *secs, int measured) {
  const bool gpu = t->target.kind == RK_EXEC_GPU;
  double copies[RK__COST_MAX_POINTS + 1];
  for (int i = 0; i < measured; ++i) {
    rk_op_desc_t d = desc_for(op, ns[i]);
    uint64_t in, out;
    rk__op_io_bytes(&d, &in, &out);
    copies[i] = gpu && !cal->resident
                    ? link_s(&t->h2d, (double)in) + link_s(&t->d2h, (double)out)
                    : 0.0;
  }
  double fixed = 1e30;
  for (int i = 0; i < measured; ++i) {
    double f = secs[i] - copies[i];
    if (f < 0.1 * secs[i]) f = 0.1 * secs[i];
    if (f < fixed) fixed = f;
  }
  rk__cost_curve_t fresh;
  memset(&fresh, 0, sizeof fresh);
  fresh.launch_s = measured ? 0.9 * fixed : 0.0;
  fresh.measured = true;
  for (int i = 1; i < measured; ++i) {
    rk_op_desc_t d = desc_for(op, ns[i]);
    double work = secs[i] - copies[i] - fresh.launch_s;
    /* Never let the fixed costs swallow the whole call. */
    if (work < 0.05 * secs[i]) work = 0.05 * secs[i];
    double bytes = (double)rk_op_bytes(&d);
    double flops = (double)rk_op_flops(&d);
    if (fresh.count < RK__COST_MAX_POINTS && bytes > 0 && flops > 0) {
      rk__cost_point_t *pt = &fresh.points[fresh.count++];
      pt->bytes = bytes;
      pt->flop_rate = flops / work;
      pt->bandwidth = bytes / work;
    }
  }
  if (fresh.count == 0) return;
  rk__cost_class_t cls = rk__op_class(op);
  if (is_matrix(op))
    t->curves[cls] = fresh;
  else
    t->ops[op] = fresh;
  if (!is_matrix(op) && is_class_rep(op)) t->curves[cls] = fresh;
}

enum { kMaxGroup = 2 };

/* Above the thread switch the SIMD candidate runs the scalar loop
 * vectorised on every CPU, so it is not slower than the scalar candidate
 * at the same size. A single thread's memory bandwidth moves a lot
 * between moments and processes (on a 2-vCPU VM, 0.35x to 2.9x of its
 * calibrated value), so at the memory-bound sizes, where the two can
 * measure as a near tie, it decides the choice by chance; there the SIMD
 * time (index 1) is capped at 99% of the scalar time (index 0) at the same
 * size, and the smaller SIMD sizes lowered to stay non-decreasing. */
static void simd_dominates(size_t (*ns)[RK__COST_MAX_POINTS + 1],
                           double (*secs)[RK__COST_MAX_POINTS + 1],
                           const int *measured, int sw) {
  for (int i = sw; i < measured[1]; ++i)
    for (int j = 0; j < measured[0]; ++j)
      if (ns[0][j] == ns[1][i] && secs[1][i] > 0.99 * secs[0][j])
        secs[1][i] = 0.99 * secs[0][j];
  for (int i = measured[1] - 2; i >= sw; --i)
    if (secs[1][i] > secs[1][i + 1]) secs[1][i] = secs[1][i + 1];
}

/* `op` on a group of candidates (the CPU ones together, a GPU alone):
 * every size of every candidate (n = 1 is the launch probe) timed in the
 * same passes, in ascending n with the candidates' equal sizes side by
 * side, so that the ratio of two candidates at one size is measured at
 * one moment; then each candidate's times made robust and fitted. */
static rk_status_t measure_op(calib_t *cal, rk__cost_target_t *const *ts,
                              rk_ops_t *const *opses, int nt, rk_op_t op) {
  size_t ns[kMaxGroup][RK__COST_MAX_POINTS + 1];
  double secs[kMaxGroup][RK__COST_MAX_POINTS + 1];
  int planned[kMaxGroup], sw[kMaxGroup], next[kMaxGroup];
  job_t jobs[kMaxJobs];
  int at[kMaxJobs];
  int count = 0;
  char label[80];
  int len = 0;
  for (int k = 0; k < nt; ++k) {
    planned[k] = sizes_for(&cal->plan, op, ts[k]->target.kind == RK_EXEC_SIMD,
                           ns[k], RK__COST_MAX_POINTS + 1, &sw[k]);
    next[k] = 0;
    len += snprintf(label + len, sizeof label - (size_t)len, "%s%s",
                    k ? "+" : "", ts[k]->key);
    if (len >= (int)sizeof label) len = (int)sizeof label - 1;
  }
  snprintf(label + len, sizeof label - (size_t)len, " %s", rk_op_name(op));
  for (;;) { /* merge the candidates' sizes, ascending */
    int pick = -1;
    for (int k = 0; k < nt; ++k)
      if (next[k] < planned[k] &&
          (pick < 0 || ns[k][next[k]] < ns[pick][next[pick]]))
        pick = k;
    if (pick < 0 || count == kMaxJobs) break;
    jobs[count] = (job_t){opses[pick], ns[pick][next[pick]], pick};
    at[count++] = next[pick]++;
  }
  progress(cal, "%s", label);
  double out[kMaxJobs];
  RK_RETURN_IF_ERROR(
      time_jobs(cal, op, label, jobs, count, cal->plan.batches, out));
  int measured[kMaxGroup] = {0};
  for (int j = 0; j < count; ++j)
    if (out[j] > 0) {
      secs[jobs[j].group][at[j]] = out[j];
      if (at[j] + 1 > measured[jobs[j].group])
        measured[jobs[j].group] = at[j] + 1;
    }
  for (int k = 0; k < nt; ++k) {
    if (sw[k] >= measured[k]) sw[k] = 0;
    char one[80];
    snprintf(one, sizeof one, "%s %s", ts[k]->key, rk_op_name(op));
    RK_RETURN_IF_ERROR(robust_times(cal, opses[k], op, one, ns[k], measured[k],
                                    sw[k], secs[k]));
  }
  if (nt == 2 && ts[0]->target.kind == RK_EXEC_SCALAR &&
      ts[1]->target.kind == RK_EXEC_SIMD && sw[1] > 0)
    simd_dominates(ns, secs, measured, sw[1]);
  for (int k = 0; k < nt; ++k)
    fit_curve(cal, ts[k], op, ns[k], secs[k], measured[k]);
  return RK_OK;
}

/* Every op on a group of candidates measured together (see measure_op). */
static rk_status_t measure_group(calib_t *cal, rk__cost_target_t *const *ts,
                                 int nt) {
  rk_ops_t *ops[kMaxGroup] = {NULL};
  rk_status_t s = RK_OK;
  int made = 0;
  for (; made < nt && s == RK_OK; ++made) {
    rk_ops_options_t o;
    rk_ops_options_init(&o);
    o.policy = RK_POLICY_FORCED;
    o.target = ts[made]->target;
    s = rk_ops_create(&o, &ops[made]);
  }
  if (s == RK_OK && nt == 1 && ts[0]->target.kind == RK_EXEC_GPU)
    s = prepare_gpu(cal, ts[0], ops[0]);
  for (int u = 0; u < NUNITS && s == RK_OK; ++u)
    s = measure_op(cal, ts, ops, nt, kUnits[u]);
  if (s != RK_OK)
    s = rk__fail_context(s, "calibrate: %s%s%s", ts[0]->key, nt > 1 ? "+" : "",
                         nt > 1 ? ts[1]->key : "");
  release_gpu(cal);
  for (int k = 0; k < made; ++k) rk_ops_destroy(ops[k]);
  return s;
}

/* SIMD element-wise add at a large size with one thread and with all. */
static void measure_threads(calib_t *cal, rk_cost_model_t *model, char *note,
                            size_t cap) {
  note[0] = '\0';
  rk__cost_target_t *simd = NULL;
  for (size_t i = 0; i < model->machine.ntargets; ++i)
    if (model->machine.targets[i].target.kind == RK_EXEC_SIMD)
      simd = &model->machine.targets[i];
  if (!simd) return;
  size_t n = cal->cap < ((size_t)4 << 20) ? cal->cap : ((size_t)4 << 20);
  double secs[2] = {0, 0};
  int threads_all = 0;
  for (int k = 0; k < 2; ++k) {
    rk_ops_options_t o;
    rk_ops_options_init(&o);
    o.policy = RK_POLICY_FORCED;
    o.target = simd->target;
    o.threads = k == 0 ? 1 : 0;
    rk_ops_t *ops = NULL;
    if (rk_ops_create(&o, &ops) != RK_OK) return;
    rk_op_report_t r;
    if (rk_ops_add(ops, n, cal->a, cal->b, cal->c, &r) == RK_OK && k == 1)
      threads_all = r.threads;
    if (time_one(cal, ops, RK_OP_ADD, "simd: thread scaling", n,
                 cal->plan.batches, &secs[k]) != RK_OK)
      secs[k] = 0;
    rk_ops_destroy(ops);
  }
  if (threads_all > 0) model->threads = threads_all;
  if (secs[0] > 0 && secs[1] > 0)
    snprintf(note, cap,
             "thread scaling: simd add of %zu elements, 1 thread %.3g s, %d "
             "threads %.3g s (%.2fx)",
             n, secs[0], threads_all, secs[1], secs[0] / secs[1]);
}

/* Resolves and prepares the profile's path: its directory exists, and the
 * profile can be written there (a regular file or nothing, or a link to
 * one; never a directory, FIFO or device, which the rename would
 * replace). */
static rk_status_t output_path(const rk_calibrate_options_t *options,
                               rk_cost_model_t *model) {
  char *path = model->profile_path;
  size_t cap = sizeof model->profile_path;
  const char *env = getenv("RK_COST_PROFILE");
  const char *given = options->output_path && *options->output_path
                          ? options->output_path
                          : (env && *env ? env : NULL);
  if (given) {
    if (strlen(given) >= cap)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "calibrate: the output path is too long");
    memcpy(path, given, strlen(given) + 1);
  } else {
    RK_RETURN_IF_ERROR(
        rk__cost_default_path(model->machine.fingerprint, path, cap));
  }
  char dir[sizeof model->profile_path];
  memcpy(dir, path, strlen(path) + 1);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    slash[1] = '\0';
  else
    *slash = '\0';
  rk_status_t s = rk__mkdirs(dir);
  if (s != RK_OK)
    return rk__fail_context(s, "calibrate: cannot create the directory of '%s'",
                            path);
  s = rk__write_file_check(path, 0);
  if (s != RK_OK) return rk__fail_context(s, "calibrate");
  return RK_OK;
}

rk_status_t rk_cost_calibrate(const rk_calibrate_options_t *options,
                              rk_cost_model_t **out_model) {
  rk_calibrate_options_t defaults;
  rk_calibrate_options_init(&defaults);
  if (!options) options = &defaults;
  if ((unsigned)options->level > RK_CALIBRATE_THOROUGH)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "calibrate: %d is not a calibration level",
                    (int)options->level);
  calib_t cal;
  memset(&cal, 0, sizeof cal);
  cal.opt = options;
  cal.plan = make_plan(options->level);
  rk_cost_model_t *model = calloc(1, sizeof *model);
  if (!model) return rk__fail(RK_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
  rk__machine_probe(&model->machine, options->include_software);

  /* Where the profile goes, checked before a minute of measuring. */
  rk_status_t s = output_path(options, model);
  if (s != RK_OK) goto done;

  /* Operands: the largest vector, and the largest matrix squared. */
  size_t vec = cal.plan.max_vec, mv = cal.plan.max_mv;
  cal.cap = vec > mv * mv ? vec : mv * mv;
  cal.a = malloc(cal.cap * sizeof(float));
  cal.b = malloc(cal.cap * sizeof(float));
  cal.c = malloc(cal.cap * sizeof(float));
  cal.d = malloc(cal.cap * sizeof(float));
  if (!cal.a || !cal.b || !cal.c || !cal.d) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY,
                 "calibrate: cannot allocate 4 x %zu floats", cal.cap);
    goto done;
  }
  for (size_t i = 0; i < cal.cap; ++i) {
    /* Small values: exp and GEMM stay finite, no denormals; d > 0 for
     * log. */
    cal.a[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
    cal.b[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
    cal.c[i] = 0.0f;
    cal.d[i] = 0.25f;
  }

  size_t measured = 0;
  for (size_t i = 0; i < model->machine.ntargets; ++i) {
    const rk__cost_target_t *t = &model->machine.targets[i];
    if (!t->candidate) continue;
    ++measured;
    cal.steps += t->target.kind == RK_EXEC_GPU ? 1 : 0;
    for (int u = 0; u < NUNITS; ++u) {
      size_t ns[RK__COST_MAX_POINTS + 1];
      int sw;
      cal.steps +=
          sizes_for(&cal.plan, kUnits[u], t->target.kind == RK_EXEC_SIMD, ns,
                    RK__COST_MAX_POINTS + 1, &sw) *
          cal.plan.batches;
    }
  }
  cal.steps += 2 * cal.plan.batches; /* thread scaling */
  uint64_t start = rk__now_ns();
  /* The CPU candidates together, so that their ratio at each size is
   * timed at one moment; each GPU on its own (its operands live on it). */
  rk__cost_target_t *cpus[kMaxGroup];
  int ncpus = 0;
  for (size_t i = 0; i < model->machine.ntargets; ++i) {
    rk__cost_target_t *t = &model->machine.targets[i];
    if (t->candidate && t->target.kind != RK_EXEC_GPU && ncpus < kMaxGroup)
      cpus[ncpus++] = t;
  }
  if (ncpus) s = measure_group(&cal, cpus, ncpus);
  for (size_t i = 0; i < model->machine.ntargets && s == RK_OK; ++i) {
    rk__cost_target_t *t = &model->machine.targets[i];
    if (t->candidate && t->target.kind == RK_EXEC_GPU)
      s = measure_group(&cal, &t, 1);
  }
  char scaling[256] = "";
  if (s == RK_OK) {
    measure_threads(&cal, model, scaling, sizeof scaling);
    cal.step = cal.steps;
    progress(&cal, "done");
  }
  if (s != RK_OK) goto done;

  double took = (double)(rk__now_ns() - start) * 1e-9;
  time_t now = time(NULL);
  struct tm tm;
  char when[64] = "";
  if (gmtime_r(&now, &tm))
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  static const char *const kLevels[] = {"quick", "default", "thorough"};
  char comment[600];
  snprintf(comment, sizeof comment,
           "measured %s in %.1f s (%s level, %zu candidates)%s%s", when, took,
           kLevels[options->level], measured, scaling[0] ? "\n# " : "",
           scaling);

  char *text = rk__cost_profile_format(model, comment);
  if (!text) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "calibrate: out of memory");
    goto done;
  }
  s = rk__write_file_replace(model->profile_path, text, strlen(text), 0);
  free(text);
  if (s != RK_OK) {
    s = rk__fail_context(s, "calibrate");
    goto done;
  }
  model->from_profile = true;
  model->overrides = rk__cost_apply_env(model);
done:
  free(cal.a);
  free(cal.b);
  free(cal.c);
  free(cal.d);
  if (s == RK_OK && out_model)
    *out_model = model;
  else
    free(model);
  return s;
}
