/* bench_regret - how close the calibrated cost model and the compatibility
 * selector come to the fastest candidate, measured side by side in one run.
 *
 * For every cell of a grid (operation x size x where the inputs are), every
 * candidate the cost model offers (scalar, SIMD with the best ISA, each GPU
 * device) runs the operation forced onto it (rk/ops.h, RK_POLICY_FORCED).
 * Each cell is measured in R rounds; in a round every candidate runs once,
 * the starting one rotating, as a batch of calls long enough to time (the
 * batch mean is the round's value). The median over rounds is the
 * candidate's time, reported with its p10-p90 spread.
 *
 * Regret of a policy in a cell = median time of the candidate it picks /
 * median time of the fastest candidate. The calibrated model picks the
 * minimum of rk_cost_model_predict; the compatibility selector picks
 * through rk_compat_select_for_op (GPU without a GPU candidate runs SIMD,
 * as the ops library does). The summary gives, per policy, the geometric
 * mean and the worst regret, and lists the worst cells.
 *
 * The model reads this machine's profile (rk calibrate); with none, the
 * benchmark calibrates first (quick level with --quick) and says so.
 * --profile FILE reads another one.
 *
 * Where the inputs are: every cell has them on the host and wants the
 * result there. With a GPU candidate, the grid is repeated (up to 2^22
 * elements, matvec 2048^2, matmul 512^3) with the inputs already on the
 * device (rk_ops_buffer_t, written before timing): a GPU candidate runs on
 * its own buffers (rk_ops_run_resident) and reads the result back; a CPU
 * candidate first downloads the inputs from the first GPU candidate's
 * buffers, as the model assumes.
 *
 * --curves measures a grid between the two, fine enough in size to draw
 * each operation's predicted and measured times per candidate and where
 * they cross (make report); --json writes every cell as JSON.
 *
 * The exit status never depends on timing: it is non-zero only when an rk
 * call fails or the command line is wrong.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_json.h"
#include "bench_stats.h"
#include "rk/ops.h"
#include "rk/select.h"

enum { kMaxCand = 16, kMaxRounds = 15, kMaxCells = 512 };

#define RK_RETURN_IF_ERROR_BENCH(expr) \
  do {                                 \
    rk_status_t s_ = (expr);           \
    if (s_ != RK_OK) return s_;        \
  } while (0)

typedef struct cell {
  rk_op_desc_t desc;
  size_t ncand;
  double median[kMaxCand], p10[kMaxCand], p90[kMaxCand];
  size_t fastest, model_pick, compat_pick;
  double model_regret, compat_regret;
  double predicted[kMaxCand];
} cell_t;

typedef struct bench {
  bool quick, curves;
  int rounds;
  double min_batch_s;
  rk_cost_model_t *model;
  rk_prediction_t cand[kMaxCand]; /* the candidates (targets) */
  size_t ncand;
  rk_ops_t *ops[kMaxCand];
  float *a, *b, *c, *d;
  size_t cap;
  cell_t cells[kMaxCells];
  size_t ncells;
  /* Device-resident cells: each GPU candidate's operand buffers, and the
   * candidate whose device holds the inputs for the CPU candidates. */
  rk_ops_buffer_t *buf[kMaxCand][4];
  size_t home;
  bool have_gpu;
} bench_t;

static void target_text(char *out, size_t cap, const rk_exec_target_t *t) {
  if (t->kind == RK_EXEC_SIMD)
    snprintf(out, cap, "simd/%s", rk_isa_name(t->isa));
  else if (t->kind == RK_EXEC_GPU)
    snprintf(out, cap, "%s:%d", rk_backend_kind_name(t->backend), t->device);
  else
    snprintf(out, cap, "%s", rk_exec_kind_name(t->kind));
}

static void cell_text(char *out, size_t cap, const rk_op_desc_t *d) {
  const char *where = d->inputs == RK_RESIDENT_DEVICE ? " (dev)" : "";
  if (d->op == RK_OP_MATMUL)
    snprintf(out, cap, "%s %llu^3%s", rk_op_name(d->op),
             (unsigned long long)d->n, where);
  else if (d->op == RK_OP_MATVEC)
    snprintf(out, cap, "%s %llu^2%s", rk_op_name(d->op),
             (unsigned long long)d->n, where);
  else
    snprintf(out, cap, "%s %llu%s", rk_op_name(d->op), (unsigned long long)d->n,
             where);
}

static rk_status_t run_op(bench_t *b, rk_ops_t *ops, const rk_op_desc_t *d) {
  size_t n = (size_t)d->n, m = (size_t)d->m, k = (size_t)d->k;
  float r;
  switch (d->op) {
    case RK_OP_ADD:
      return rk_ops_add(ops, n, b->a, b->b, b->c, NULL);
    case RK_OP_SUB:
      return rk_ops_sub(ops, n, b->a, b->b, b->c, NULL);
    case RK_OP_MUL:
      return rk_ops_mul(ops, n, b->a, b->b, b->c, NULL);
    case RK_OP_SCALE:
      return rk_ops_scale(ops, n, 0.5f, b->a, b->c, NULL);
    case RK_OP_AXPY:
      /* y stays bounded: alternate signs over calls do not matter for
       * timing, and 1e-3 keeps the values small. */
      return rk_ops_axpy(ops, n, 1e-3f, b->a, b->c, NULL);
    case RK_OP_FMA:
      return rk_ops_fma(ops, n, b->a, b->b, b->d, b->c, NULL);
    case RK_OP_RELU:
      return rk_ops_relu(ops, n, b->a, b->c, NULL);
    case RK_OP_SIGMOID:
      return rk_ops_sigmoid(ops, n, b->a, b->c, NULL);
    case RK_OP_EXP:
      return rk_ops_exp(ops, n, b->a, b->c, NULL);
    case RK_OP_TANH:
      return rk_ops_tanh(ops, n, b->a, b->c, NULL);
    case RK_OP_LOG: /* on positive inputs (d is 0.25) */
      return rk_ops_log(ops, n, b->d, b->c, NULL);
    case RK_OP_DOT:
      return rk_ops_dot(ops, n, b->a, b->b, &r, NULL);
    case RK_OP_SUM:
      return rk_ops_sum(ops, n, b->a, &r, NULL);
    case RK_OP_MIN:
      return rk_ops_min(ops, n, b->a, &r, NULL);
    case RK_OP_MAX:
      return rk_ops_max(ops, n, b->a, &r, NULL);
    case RK_OP_MATVEC:
      return rk_ops_matvec(ops, m, n, b->a, b->b, b->c, NULL);
    case RK_OP_MATMUL:
      return rk_ops_matmul(ops, m, n, k, b->a, b->b, b->c, NULL);
    default:
      return RK_ERR_INVALID_ARGUMENT;
  }
}

static bool fail(const char *what) {
  fprintf(stderr, "bench_regret: %s: %s\n", what, rk_last_error());
  return false;
}

/* The operands of an op in rk_ops_run_resident's order: their element
 * counts, which one is the result (-1: a reduction's scalar) and how many
 * of the first ones are inputs. */
typedef struct layout {
  size_t count, elems[4];
  int out;
  size_t inputs;
} layout_t;

static layout_t layout_of(const rk_op_desc_t *d) {
  size_t n = (size_t)d->n, m = (size_t)d->m, k = (size_t)d->k;
  layout_t l = {0, {0, 0, 0, 0}, -1, 0};
  switch (d->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
      l = (layout_t){3, {n, n, n, 0}, 2, 2};
      break;
    case RK_OP_SCALE:
    case RK_OP_RELU:
    case RK_OP_SIGMOID:
    case RK_OP_EXP:
    case RK_OP_TANH:
    case RK_OP_LOG:
      l = (layout_t){2, {n, n, 0, 0}, 1, 1};
      break;
    case RK_OP_AXPY: /* y is read and written */
      l = (layout_t){2, {n, n, 0, 0}, 1, 2};
      break;
    case RK_OP_FMA:
      l = (layout_t){4, {n, n, n, n}, 3, 3};
      break;
    case RK_OP_DOT:
      l = (layout_t){2, {n, n, 0, 0}, -1, 2};
      break;
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      l = (layout_t){1, {n, 0, 0, 0}, -1, 1};
      break;
    case RK_OP_MATVEC:
      l = (layout_t){3, {m * n, n, m, 0}, 2, 2};
      break;
    case RK_OP_MATMUL:
      l = (layout_t){3, {m * k, k * n, m * n, 0}, 2, 2};
      break;
    default:
      break;
  }
  return l;
}

/* Host arrays that take input i of a downloaded operand list (run_op's
 * operands: a, b, d as inputs, c as output; axpy's y is c). */
static float *host_input(bench_t *b, const rk_op_desc_t *d, size_t i) {
  if (d->op == RK_OP_AXPY) return i == 0 ? b->a : b->c;
  return i == 0 ? b->a : i == 1 ? b->b : b->d;
}

/* One call of candidate c in cell d, as the cell's residency has it:
 * inputs on the host: the host-pointer op; on the device: a GPU candidate
 * runs on its buffers and reads the result back, a CPU candidate first
 * downloads the inputs from the home GPU's buffers. */
static rk_status_t run_candidate(bench_t *b, size_t c, const rk_op_desc_t *d) {
  if (d->inputs == RK_RESIDENT_HOST) return run_op(b, b->ops[c], d);
  layout_t l = layout_of(d);
  if (b->cand[c].target.kind == RK_EXEC_GPU) {
    float r;
    rk_status_t s = rk_ops_run_resident(b->ops[c], d, 0.5f, b->buf[c], l.count,
                                        l.out < 0 ? &r : NULL, NULL);
    if (s == RK_OK && l.out >= 0 && d->result_on_host)
      s = rk_ops_buffer_read(b->buf[c][l.out], 0, b->c, l.elems[l.out]);
    return s;
  }
  for (size_t i = 0; i < l.inputs; ++i)
    RK_RETURN_IF_ERROR_BENCH(rk_ops_buffer_read(
        b->buf[b->home][i], 0, host_input(b, d, i), l.elems[i]));
  return run_op(b, b->ops[c], d);
}

/* Creates every GPU candidate's operand buffers for cell d, filled from
 * the host arrays (untimed). */
static bool setup_buffers(bench_t *b, const rk_op_desc_t *d) {
  layout_t l = layout_of(d);
  for (size_t c = 0; c < b->ncand; ++c) {
    if (b->cand[c].target.kind != RK_EXEC_GPU) continue;
    for (size_t i = 0; i < l.count; ++i) {
      size_t n = l.elems[i] ? l.elems[i] : 1;
      if (rk_ops_buffer_create(b->ops[c], &b->cand[c].target, n,
                               &b->buf[c][i]) != RK_OK ||
          rk_ops_buffer_write(b->buf[c][i], 0, d->op == RK_OP_LOG ? b->d : b->a,
                              n) != RK_OK)
        return fail("device operands");
    }
  }
  return true;
}

static void free_buffers(bench_t *b) {
  for (size_t c = 0; c < b->ncand; ++c)
    for (int i = 0; i < 4; ++i) {
      rk_ops_buffer_destroy(b->buf[c][i]);
      b->buf[c][i] = NULL;
    }
}

/* Seconds per call of one batch; *reps is sized on first use. */
static bool time_batch(bench_t *b, size_t c, const rk_op_desc_t *d, long *reps,
                       double *out_s) {
  if (*reps == 0) {
    /* Warm-up call, then one timed call to size the batch. */
    if (run_candidate(b, c, d) != RK_OK) return fail("warm-up");
    uint64_t t0 = rkb_now_ns();
    if (run_candidate(b, c, d) != RK_OK) return fail("sizing call");
    double one = (double)(rkb_now_ns() - t0) * 1e-9;
    *reps = one > 0 ? (long)(b->min_batch_s / one) : 1000;
    if (*reps < 1) *reps = 1;
    if (*reps > 100000) *reps = 100000;
  }
  uint64_t t0 = rkb_now_ns();
  for (long r = 0; r < *reps; ++r)
    if (run_candidate(b, c, d) != RK_OK) return fail("op");
  *out_s = (double)(rkb_now_ns() - t0) * 1e-9 / (double)*reps;
  return true;
}

static size_t compat_pick(const bench_t *b, const rk_op_desc_t *d) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  rk_compat_choice_t ch = rk_compat_select_for_op(&s, d);
  rk_exec_kind_t want = ch == RK_COMPAT_GPU    ? RK_EXEC_GPU
                        : ch == RK_COMPAT_SIMD ? RK_EXEC_SIMD
                                               : RK_EXEC_SCALAR;
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i = 0; i < b->ncand; ++i)
      if (b->cand[i].target.kind == want) return i;
    /* GPU absent: SIMD; SIMD absent: scalar (as the ops library runs). */
    want = want == RK_EXEC_GPU ? RK_EXEC_SIMD : RK_EXEC_SCALAR;
  }
  return 0;
}

static bool measure_cell_on(bench_t *b, const rk_op_desc_t *d) {
  if (b->ncells == kMaxCells) return true;
  cell_t *cell = &b->cells[b->ncells];
  memset(cell, 0, sizeof *cell);
  cell->desc = *d;
  rk_prediction_t p[kMaxCand];
  size_t count = 0, best = 0;
  if (rk_cost_model_predict(b->model, d, p, kMaxCand, &count, &best) != RK_OK)
    return fail("predict");
  if (count != b->ncand) {
    fprintf(stderr, "bench_regret: the candidates changed\n");
    return false;
  }
  cell->ncand = count;
  for (size_t i = 0; i < count; ++i) cell->predicted[i] = p[i].total_s;
  cell->model_pick = best;
  cell->compat_pick = compat_pick(b, d);

  double samples[kMaxCand][kMaxRounds];
  long reps[kMaxCand] = {0};
  int rounds = b->rounds;
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < count; ++j) {
      size_t c = (j + (size_t)r) % count; /* rotate the starting one */
      if (!time_batch(b, c, d, &reps[c], &samples[c][r])) return false;
    }
    /* A cell with a very slow candidate (scalar GEMM at 2048) keeps the
     * rounds it has after three. */
    if (r == 2) {
      double slowest = 0;
      for (size_t c = 0; c < count; ++c)
        if (samples[c][r] * (double)reps[c] > slowest)
          slowest = samples[c][r] * (double)reps[c];
      if (slowest > 1.0) rounds = 3;
    }
  }
  cell->fastest = 0;
  for (size_t c = 0; c < count; ++c) {
    rkb_summary_t s = rkb_summarize(samples[c], (size_t)rounds);
    cell->median[c] = s.median;
    cell->p10[c] = s.p10;
    cell->p90[c] = s.p90;
    if (s.median < cell->median[cell->fastest]) cell->fastest = c;
  }
  double best_t = cell->median[cell->fastest];
  cell->model_regret = cell->median[cell->model_pick] / best_t;
  cell->compat_regret = cell->median[cell->compat_pick] / best_t;
  ++b->ncells;
  return true;
}

static bool measure_cell(bench_t *b, const rk_op_desc_t *d) {
  if (d->inputs == RK_RESIDENT_HOST) return measure_cell_on(b, d);
  bool ok = setup_buffers(b, d) && measure_cell_on(b, d);
  free_buffers(b);
  return ok;
}

static void print_cell(const bench_t *b, const cell_t *cell) {
  char name[64], what[64];
  cell_text(what, sizeof what, &cell->desc);
  printf("%-20s", what);
  for (size_t c = 0; c < cell->ncand; ++c) {
    double med = cell->median[c];
    double scale = med < 1e-3 ? 1e6 : 1e3;
    const char *unit = med < 1e-3 ? "us" : "ms";
    char t[64];
    snprintf(t, sizeof t, "%.3g %s (%.3g-%.3g)%s", med * scale, unit,
             cell->p10[c] * scale, cell->p90[c] * scale,
             c == cell->fastest ? "*" : "");
    printf(" %-30s", t);
  }
  target_text(name, sizeof name, &b->cand[cell->model_pick].target);
  printf(" %-11s %5.2f", name, cell->model_regret);
  target_text(name, sizeof name, &b->cand[cell->compat_pick].target);
  printf("  %-11s %5.2f\n", name, cell->compat_regret);
}

static int cmp_regret_model(const void *x, const void *y) {
  double a = (*(const cell_t *const *)x)->model_regret;
  double c = (*(const cell_t *const *)y)->model_regret;
  return (a < c) - (a > c);
}
static int cmp_regret_compat(const void *x, const void *y) {
  double a = (*(const cell_t *const *)x)->compat_regret;
  double c = (*(const cell_t *const *)y)->compat_regret;
  return (a < c) - (a > c);
}

static void summary(bench_t *b) {
  double log_m = 0, log_c = 0, worst_m = 0, worst_c = 0;
  size_t within_m = 0, within_c = 0;
  for (size_t i = 0; i < b->ncells; ++i) {
    const cell_t *cell = &b->cells[i];
    log_m += log(cell->model_regret);
    log_c += log(cell->compat_regret);
    if (cell->model_regret > worst_m) worst_m = cell->model_regret;
    if (cell->compat_regret > worst_c) worst_c = cell->compat_regret;
    within_m += cell->model_regret <= 1.05;
    within_c += cell->compat_regret <= 1.05;
  }
  double n = (double)b->ncells;
  double geo_m = exp(log_m / n), geo_c = exp(log_c / n);
  printf(
      "\nRegret = time of the chosen candidate / time of the fastest "
      "(medians), over %zu cells:\n\n",
      b->ncells);
  printf("%-22s %14s %10s %18s\n", "policy", "geomean", "worst",
         "cells within 5%");
  printf("%-22s %14.3f %10.2f %11zu of %zu\n", "calibrated (model)", geo_m,
         worst_m, within_m, b->ncells);
  printf("%-22s %14.3f %10.2f %11zu of %zu\n", "compat (thresholds)", geo_c,
         worst_c, within_c, b->ncells);
  printf("\ncalibrated vs compat: geomean %.3fx lower, worst %.2fx lower\n",
         geo_c / geo_m, worst_c / worst_m);
  printf(
      "targets: calibrated geomean <= 1.05: %s; worst <= 1.5: %s; better "
      "than compat: %s\n",
      geo_m <= 1.05 ? "met" : "MISSED", worst_m <= 1.5 ? "met" : "MISSED",
      geo_m < geo_c    ? "yes"
      : geo_m == geo_c ? "equal"
                       : "NO");

  const cell_t *sorted[kMaxCells];
  for (size_t i = 0; i < b->ncells; ++i) sorted[i] = &b->cells[i];
  for (int pol = 0; pol < 2; ++pol) {
    qsort(sorted, b->ncells, sizeof sorted[0],
          pol == 0 ? cmp_regret_model : cmp_regret_compat);
    printf("\nWorst cells, %s:\n", pol == 0 ? "calibrated" : "compat");
    for (size_t i = 0; i < b->ncells && i < 5; ++i) {
      const cell_t *cell = sorted[i];
      double r = pol == 0 ? cell->model_regret : cell->compat_regret;
      size_t pick = pol == 0 ? cell->model_pick : cell->compat_pick;
      if (r <= 1.0) break;
      char what[64], picked[32], fast[32];
      cell_text(what, sizeof what, &cell->desc);
      target_text(picked, sizeof picked, &b->cand[pick].target);
      target_text(fast, sizeof fast, &b->cand[cell->fastest].target);
      printf("  %-22s %5.2fx: chose %s (%.3g us), fastest %s (%.3g us)", what,
             r, picked, cell->median[pick] * 1e6, fast,
             cell->median[cell->fastest] * 1e6);
      if (pol == 0)
        printf("; predicted %.3g vs %.3g us", cell->predicted[pick] * 1e6,
               cell->predicted[cell->fastest] * 1e6);
      printf("\n");
    }
  }
}

static double geomean_regret(const bench_t *b, bool model) {
  double sum = 0;
  for (size_t i = 0; i < b->ncells; ++i)
    sum += log(model ? b->cells[i].model_regret : b->cells[i].compat_regret);
  return b->ncells ? exp(sum / (double)b->ncells) : NAN;
}

/* --json: the candidates, every cell (each candidate's predicted and
 * measured time, in seconds per call, and both policies' picks and
 * regrets) and the summary. */
static void write_json(rkb_json_t *j, const bench_t *b,
                       const rk_cost_model_info_t *info) {
  char name[64];
  rkb_json_str(j, "grid", b->quick ? "quick" : b->curves ? "curves" : "full");
  rkb_json_int(j, "rounds", b->rounds);
  rkb_json_str(j, "machine", info->machine);
  rkb_json_bool(j, "from_profile", info->from_profile);
  rkb_json_str(j, "blas", rk_ops_blas_name());
  rkb_json_str(j, "unit", "seconds per call");
  rkb_json_key(j, "candidates");
  rkb_json_array(j);
  for (size_t c = 0; c < b->ncand; ++c) {
    target_text(name, sizeof name, &b->cand[c].target);
    rkb_json_str(j, NULL, name);
  }
  rkb_json_end_array(j);
  rkb_json_key(j, "cells");
  rkb_json_array(j);
  for (size_t i = 0; i < b->ncells; ++i) {
    const cell_t *cell = &b->cells[i];
    rkb_json_object(j);
    rkb_json_str(j, "op", rk_op_name(cell->desc.op));
    rkb_json_int(j, "n", (long long)cell->desc.n);
    rkb_json_int(j, "m", (long long)cell->desc.m);
    rkb_json_int(j, "k", (long long)cell->desc.k);
    rkb_json_str(j, "inputs",
                 cell->desc.inputs == RK_RESIDENT_DEVICE ? "device" : "host");
    rkb_json_nums(j, "predicted", cell->predicted, cell->ncand);
    rkb_json_nums(j, "median", cell->median, cell->ncand);
    rkb_json_nums(j, "p10", cell->p10, cell->ncand);
    rkb_json_nums(j, "p90", cell->p90, cell->ncand);
    rkb_json_int(j, "fastest", (long long)cell->fastest);
    rkb_json_int(j, "model_pick", (long long)cell->model_pick);
    rkb_json_int(j, "compat_pick", (long long)cell->compat_pick);
    rkb_json_num(j, "model_regret", cell->model_regret);
    rkb_json_num(j, "compat_regret", cell->compat_regret);
    rkb_json_end_object(j);
  }
  rkb_json_end_array(j);
  rkb_json_key(j, "summary");
  rkb_json_object(j);
  double worst_m = 0, worst_c = 0;
  for (size_t i = 0; i < b->ncells; ++i) {
    if (b->cells[i].model_regret > worst_m) worst_m = b->cells[i].model_regret;
    if (b->cells[i].compat_regret > worst_c)
      worst_c = b->cells[i].compat_regret;
  }
  rkb_json_num(j, "calibrated_geomean", geomean_regret(b, true));
  rkb_json_num(j, "calibrated_worst", worst_m);
  rkb_json_num(j, "compat_geomean", geomean_regret(b, false));
  rkb_json_num(j, "compat_worst", worst_c);
  rkb_json_end_object(j);
  rkb_json_finish(j);
}

static void usage(FILE *out) {
  fputs(
      "Usage: bench_regret [--quick | --curves] [--profile FILE] [--rounds R] "
      "[--software]\n"
      "                    [--json]\n"
      "  --quick         a small grid and fewer rounds (smoke test)\n"
      "  --curves        5 ops at 10 sizes each, 3 rounds: each op's "
      "crossover (make report)\n"
      "  --profile FILE  the cost profile to use (default: this machine's; "
      "calibrated first if missing)\n"
      "  --rounds R      measurement rounds per cell, 3 to 15 (default 7, "
      "quick 3)\n"
      "  --software      count emulated GPU devices as candidates\n"
      "  --json          one JSON object on stdout (the table goes to "
      "stderr)\n",
      out);
}

int main(int argc, char **argv) {
  static bench_t b;
  const char *profile = NULL;
  bool software = false, json = false;
  long rounds = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      b.quick = true;
    } else if (strcmp(argv[i], "--curves") == 0) {
      b.curves = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--software") == 0) {
      software = true;
    } else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      profile = argv[++i];
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      if (rkb_parse_long(argv[++i], 3, kMaxRounds, &rounds) != 0) {
        fprintf(stderr, "bench_regret: --rounds takes 3 to %d\n", kMaxRounds);
        return 2;
      }
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "bench_regret: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (b.quick && b.curves) {
    fprintf(stderr, "bench_regret: --quick and --curves are two grids\n");
    return 2;
  }
  rkb_json_t jw;
  if (json && !rkb_json_begin(&jw, "regret")) {
    fprintf(stderr, "bench_regret: --json: cannot duplicate stdout\n");
    return 1;
  }
  bool small = b.quick || b.curves;
  b.rounds = rounds ? (int)rounds : (small ? 3 : 7);
  b.min_batch_s = small ? 0.001 : 0.005;

  rk_cost_model_options_t mo;
  rk_cost_model_options_init(&mo);
  mo.profile_path = profile;
  mo.include_software = software;
  mo.quiet = true;
  if (rk_cost_model_open_with(&mo, &b.model) != RK_OK)
    return fail("opening the cost model"), 1;
  rk_cost_model_info_t info;
  rk_cost_model_info(b.model, &info);
  if (!info.from_profile) {
    if (profile) {
      fprintf(stderr, "bench_regret: --profile %s: %s\n", profile, info.note);
      return 1;
    }
    printf("No profile for this machine (%s): calibrating first (%s).\n",
           info.note, small ? "quick" : "default level");
    fflush(stdout);
    rk_cost_model_destroy(b.model);
    b.model = NULL;
    rk_calibrate_options_t co;
    rk_calibrate_options_init(&co);
    co.level = small ? RK_CALIBRATE_QUICK : RK_CALIBRATE_DEFAULT;
    co.include_software = software;
    if (rk_cost_calibrate(&co, NULL) != RK_OK) return fail("calibrating"), 1;
    if (rk_cost_model_open_with(&mo, &b.model) != RK_OK)
      return fail("opening the cost model"), 1;
    rk_cost_model_info(b.model, &info);
  }
  printf("bench_regret: %s\nmachine  %s\nprofile  %s%s\nBLAS     %s\n\n",
         b.quick    ? "quick grid"
         : b.curves ? "curves grid"
                    : "full grid",
         info.machine, info.profile_path,
         info.from_profile ? "" : " (NOT READ: defaults)",
         rk_ops_blas_name() ? rk_ops_blas_name() : "none (rk's own GEMM)");

  /* The candidates, from one prediction. */
  rk_op_desc_t probe = {.op = RK_OP_ADD, .n = 1, .result_on_host = true};
  size_t best;
  if (rk_cost_model_predict(b.model, &probe, b.cand, kMaxCand, &b.ncand,
                            &best) != RK_OK)
    return fail("predict"), 1;
  for (size_t c = 0; c < b.ncand; ++c) {
    rk_ops_options_t o;
    rk_ops_options_init(&o);
    o.policy = RK_POLICY_FORCED;
    o.target = b.cand[c].target;
    if (rk_ops_create(&o, &b.ops[c]) != RK_OK)
      return fail("creating a forced ops handle"), 1;
    if (b.cand[c].target.kind == RK_EXEC_GPU && !b.have_gpu) {
      b.have_gpu = true;
      b.home = c;
    }
  }

  /* Operands: 2^26 floats each (the largest vector and the 8192^2 matvec
   * matrix; matmul 2048 needs 2^22). Quick: 2^20. */
  b.cap = b.quick    ? (size_t)1 << 20
          : b.curves ? (size_t)1 << 22
                     : (size_t)1 << 26;
  b.a = malloc(b.cap * sizeof(float));
  b.b = malloc(b.cap * sizeof(float));
  b.c = malloc(b.cap * sizeof(float));
  b.d = malloc(b.cap * sizeof(float));
  if (!b.a || !b.b || !b.c || !b.d) {
    fprintf(stderr, "bench_regret: out of memory for 4 x %zu floats\n", b.cap);
    return 1;
  }
  for (size_t i = 0; i < b.cap; ++i) {
    b.a[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
    b.b[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
    b.c[i] = 0.0f;
    b.d[i] = 0.25f;
  }

  static const rk_op_t kFullVec[] = {
      RK_OP_ADD,     RK_OP_SCALE, RK_OP_AXPY, RK_OP_FMA, RK_OP_RELU, RK_OP_EXP,
      RK_OP_SIGMOID, RK_OP_TANH,  RK_OP_LOG,  RK_OP_DOT, RK_OP_SUM,  RK_OP_MAX};
  static const rk_op_t kQuickVec[] = {RK_OP_ADD, RK_OP_EXP, RK_OP_DOT};
  static const rk_op_t kCurveVec[] = {RK_OP_ADD, RK_OP_SCALE, RK_OP_EXP,
                                      RK_OP_DOT, RK_OP_SUM};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
  const rk_op_t *vec_ops = b.quick    ? kQuickVec
                           : b.curves ? kCurveVec
                                      : kFullVec;
  size_t nvec = b.quick    ? COUNT_OF(kQuickVec)
                : b.curves ? COUNT_OF(kCurveVec)
                           : COUNT_OF(kFullVec);
  static const uint64_t kFullN[] = {16,      64,      256,     1024,
                                    4096,    16384,   65536,   262144,
                                    1 << 20, 1 << 22, 1 << 24, 1 << 26};
  static const uint64_t kQuickN[] = {16, 4096, 1 << 20};
  static const uint64_t kCurveN[] = {16,    64,    256,    1024,    4096,
                                     16384, 65536, 262144, 1 << 20, 1 << 22};
  const uint64_t *ns = b.quick ? kQuickN : b.curves ? kCurveN : kFullN;
  size_t nn = b.quick    ? COUNT_OF(kQuickN)
              : b.curves ? COUNT_OF(kCurveN)
                         : COUNT_OF(kFullN);
  static const uint64_t kFullMv[] = {16, 64, 256, 1024, 4096, 8192};
  static const uint64_t kQuickMv[] = {16, 256};
  static const uint64_t kCurveMv[] = {16, 64, 256, 1024};
  static const uint64_t kFullMm[] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  static const uint64_t kQuickMm[] = {8, 64, 256};
  static const uint64_t kCurveMm[] = {8, 16, 32, 64, 128, 256};

  char header[256] = "";
  size_t used = 0;
  for (size_t c = 0; c < b.ncand; ++c) {
    char name[32];
    target_text(name, sizeof name, &b.cand[c].target);
    used +=
        (size_t)snprintf(header + used, sizeof header - used, " %-30s", name);
  }
  printf("%-20s%s %-17s  %s\n", "cell", header, "model    regret",
         "compat   regret");
  printf("(medians per call with p10-p90; * fastest)\n");

  /* Inputs on the device only with a GPU candidate to hold them; those
   * cells stop at 2^22 elements, matvec 2048^2 and matmul 512^3 (device
   * memory of emulated devices is small). */
  for (int place = 0; place < (b.have_gpu ? 2 : 1); ++place) {
    rk_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.inputs = place ? RK_RESIDENT_DEVICE : RK_RESIDENT_HOST;
    d.result_on_host = true;
    uint64_t max_n = place ? (uint64_t)1 << 22 : UINT64_MAX;
    uint64_t max_mv = place ? 2048 : UINT64_MAX;
    uint64_t max_mm = place ? 512 : UINT64_MAX;
    for (size_t o = 0; o < nvec; ++o)
      for (size_t i = 0; i < nn && ns[i] <= max_n; ++i) {
        d.op = vec_ops[o];
        d.m = d.k = 0;
        d.n = ns[i];
        if (!measure_cell(&b, &d)) return 1;
        print_cell(&b, &b.cells[b.ncells - 1]);
        fflush(stdout);
      }
    const uint64_t *mv = b.quick ? kQuickMv : b.curves ? kCurveMv : kFullMv;
    size_t nmv = b.quick    ? COUNT_OF(kQuickMv)
                 : b.curves ? COUNT_OF(kCurveMv)
                            : COUNT_OF(kFullMv);
    for (size_t i = 0; i < nmv && mv[i] <= max_mv; ++i) {
      d.op = RK_OP_MATVEC;
      d.m = d.n = mv[i];
      d.k = 0;
      if (!measure_cell(&b, &d)) return 1;
      print_cell(&b, &b.cells[b.ncells - 1]);
      fflush(stdout);
    }
    const uint64_t *mm = b.quick ? kQuickMm : b.curves ? kCurveMm : kFullMm;
    size_t nmm = b.quick    ? COUNT_OF(kQuickMm)
                 : b.curves ? COUNT_OF(kCurveMm)
                            : COUNT_OF(kFullMm);
    for (size_t i = 0; i < nmm && mm[i] <= max_mm; ++i) {
      d.op = RK_OP_MATMUL;
      d.m = d.n = d.k = mm[i];
      if (!measure_cell(&b, &d)) return 1;
      print_cell(&b, &b.cells[b.ncells - 1]);
      fflush(stdout);
    }
  }
  if (!b.have_gpu)
    printf(
        "(no GPU candidate here: every cell has its inputs on the host; "
        "--software counts emulated devices)\n");
  summary(&b);
  if (json) write_json(&jw, &b, &info);

  for (size_t c = 0; c < b.ncand; ++c) rk_ops_destroy(b.ops[c]);
  rk_cost_model_destroy(b.model);
  free(b.a);
  free(b.b);
  free(b.c);
  free(b.d);
  return 0;
}
