/* compat.c - the compatibility selector: batuta's fixed thresholds,
 * deciding as batuta does.
 *
 * The rule "GPU if flops / gpu_flops > ratio * bytes / pcie_bandwidth" is
 * evaluated in IEEE doubles in batuta's order: each count converted to a
 * double, the two divisions, the product with the ratio, then the strict
 * comparison. Rounding therefore decides exact ties (exactly `ratio` times)
 * as it does in batuta: some are GPU, some SIMD.
 *
 * One difference: batuta computes the sizes of its helpers (bytes and flops
 * of select_for_matmul and select_for_vector_op) in 64-bit integers, which
 * wrap (or stop the program) for huge dimensions. Here they are computed
 * exactly (cost/wide.h) and rounded to a double once, which is the same
 * double whenever batuta's integers do not wrap.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "cost/wide.h"
#include "rk/select.h"

static const double kDefaultBandwidth = 32e9;
static const double kDefaultGpuFlops = 20e12;
static const double kDefaultRatio = 5.0;

const char *rk_compat_choice_name(rk_compat_choice_t choice) {
  switch (choice) {
    case RK_COMPAT_SCALAR:
      return "Scalar";
    case RK_COMPAT_SIMD:
      return "SIMD";
    case RK_COMPAT_GPU:
      return "GPU";
  }
  return "unknown";
}

void rk_compat_init(rk_compat_selector_t *selector) {
  if (!selector) return;
  selector->pcie_bandwidth = kDefaultBandwidth;
  selector->gpu_flops = kDefaultGpuFlops;
  selector->dispatch_ratio = kDefaultRatio;
}

static bool positive_finite(double v) { return isfinite(v) && v > 0.0; }

static rk_status_t set_value(rk_compat_selector_t *selector, double *field,
                             double value, const char *what) {
  if (!selector)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "compat selector: selector must not be NULL");
  if (!positive_finite(value))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "compat selector: %s must be a positive finite number, "
                    "got %g",
                    what, value);
  *field = value;
  return RK_OK;
}

rk_status_t rk_compat_set_pcie_bandwidth(rk_compat_selector_t *selector,
                                         double bytes_per_second) {
  return set_value(selector, selector ? &selector->pcie_bandwidth : NULL,
                   bytes_per_second, "PCIe bandwidth (bytes/s)");
}

rk_status_t rk_compat_set_gpu_flops(rk_compat_selector_t *selector,
                                    double flops_per_second) {
  return set_value(selector, selector ? &selector->gpu_flops : NULL,
                   flops_per_second, "GPU throughput (FLOP/s)");
}

rk_status_t rk_compat_set_dispatch_ratio(rk_compat_selector_t *selector,
                                         double ratio) {
  return set_value(selector, selector ? &selector->dispatch_ratio : NULL, ratio,
                   "dispatch ratio");
}

/* The selector's values; a NULL selector, or a field set directly to
 * something the setters would refuse, reads as the default. */
static void effective(const rk_compat_selector_t *s, double *bw, double *gpu,
                      double *ratio) {
  *bw = s && positive_finite(s->pcie_bandwidth) ? s->pcie_bandwidth
                                                : kDefaultBandwidth;
  *gpu = s && positive_finite(s->gpu_flops) ? s->gpu_flops : kDefaultGpuFlops;
  *ratio = s && positive_finite(s->dispatch_ratio) ? s->dispatch_ratio
                                                   : kDefaultRatio;
}

/* transfer = bytes / bw; compute = flops / gpu; GPU iff compute > ratio *
 * transfer, each operation rounded as a double. */
static rk_compat_choice_t decide(const rk_compat_selector_t *s, double bytes,
                                 double flops) {
  double bw, gpu, ratio;
  effective(s, &bw, &gpu, &ratio);
  double transfer_s = bytes / bw;
  double compute_s = flops / gpu;
  return compute_s > ratio * transfer_s ? RK_COMPAT_GPU : RK_COMPAT_SIMD;
}

rk_compat_choice_t rk_compat_select_backend(const rk_compat_selector_t *s,
                                            uint64_t bytes, uint64_t flops) {
  return decide(s, (double)bytes, (double)flops);
}

rk_compat_choice_t rk_compat_select_for_matmul(const rk_compat_selector_t *s,
                                               uint64_t m, uint64_t n,
                                               uint64_t k) {
  /* bytes = 4(mk + kn + mn), flops = 2mnk, exact (at most 132 and 194
   * bits) where batuta's 64-bit products would wrap. */
  rk__wide_t bytes, term, flops;
  rk__wide_set(&bytes, m);
  rk__wide_mul_u64(&bytes, k);
  rk__wide_set(&term, k);
  rk__wide_mul_u64(&term, n);
  rk__wide_add(&bytes, &term);
  rk__wide_set(&term, m);
  rk__wide_mul_u64(&term, n);
  rk__wide_add(&bytes, &term);
  rk__wide_mul_u64(&bytes, 4);
  rk__wide_set(&flops, m);
  rk__wide_mul_u64(&flops, n);
  rk__wide_mul_u64(&flops, k);
  rk__wide_mul_u64(&flops, 2);
  return decide(s, rk__wide_to_double(&bytes), rk__wide_to_double(&flops));
}

rk_compat_choice_t rk_compat_select_for_vector_op(const rk_compat_selector_t *s,
                                                  uint64_t n,
                                                  uint64_t ops_per_element) {
  rk__wide_t bytes, flops;
  rk__wide_set(&bytes, n);
  rk__wide_mul_u64(&bytes, 12);
  rk__wide_set(&flops, n);
  rk__wide_mul_u64(&flops, ops_per_element);
  return decide(s, rk__wide_to_double(&bytes), rk__wide_to_double(&flops));
}

rk_compat_choice_t rk_compat_select_for_elementwise(
    const rk_compat_selector_t *s, uint64_t n) {
  (void)s;
  return n > 1000000u ? RK_COMPAT_SIMD : RK_COMPAT_SCALAR;
}

rk_compat_choice_t rk_compat_select_with_moe(const rk_compat_selector_t *s,
                                             rk_complexity_t complexity,
                                             uint64_t n) {
  (void)s;
  switch (complexity) {
    case RK_COMPLEXITY_LOW:
      return n > 1000000u ? RK_COMPAT_SIMD : RK_COMPAT_SCALAR;
    case RK_COMPLEXITY_MEDIUM:
      if (n > 100000u) return RK_COMPAT_GPU;
      return n > 10000u ? RK_COMPAT_SIMD : RK_COMPAT_SCALAR;
    case RK_COMPLEXITY_HIGH:
      if (n > 10000u) return RK_COMPAT_GPU;
      return n > 1000u ? RK_COMPAT_SIMD : RK_COMPAT_SCALAR;
  }
  /* Not a complexity: the cheapest answer that never needs a GPU. */
  return RK_COMPAT_SCALAR;
}

rk_compat_choice_t rk_compat_select_for_op(const rk_compat_selector_t *s,
                                           const rk_op_desc_t *d) {
  if (!d) return RK_COMPAT_SCALAR;
  switch (d->op) {
    case RK_OP_MATMUL:
      return rk_compat_select_for_matmul(s, d->m, d->n, d->k);
    case RK_OP_DOT:
      return rk_compat_select_for_vector_op(s, d->n, 2);
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      return rk_compat_select_for_vector_op(s, d->n, 1);
    case RK_OP_MATVEC: {
      uint64_t elems;
      if (__builtin_mul_overflow(d->m, d->n, &elems)) elems = UINT64_MAX;
      return rk_compat_select_for_vector_op(s, elems, 2);
    }
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
    case RK_OP_SCALE:
    case RK_OP_AXPY:
    case RK_OP_FMA:
    case RK_OP_RELU:
    case RK_OP_SIGMOID:
    case RK_OP_EXP:
    case RK_OP_TANH:
    case RK_OP_LOG:
      return rk_compat_select_for_elementwise(s, d->n);
    default:
      return RK_COMPAT_SCALAR;
  }
}
