/* op.c - what each operation costs in bytes and floating-point operations,
 * and which class of rates in a cost profile describes it.
 *
 * Counting (f32 operands, 4 bytes each; every count saturates at
 * UINT64_MAX):
 *   add, sub, mul     in 8n  out 4n   flops n
 *   scale             in 4n  out 4n   flops n
 *   axpy              in 8n  out 4n   flops 2n
 *   fma               in 12n out 4n   flops 2n
 *   dot               in 8n  out 4    flops 2n
 *   sum, min, max     in 4n  out 4    flops n
 *   relu              in 4n  out 4n   flops n
 *   exp               in 4n  out 4n   flops 10n  (exp counted as 10)
 *   sigmoid           in 4n  out 4n   flops 12n  (exp, add, divide)
 *   tanh              in 4n  out 4n   flops 14n  (expm1, add, divide)
 *   log               in 4n  out 4n   flops 10n  (log counted as 10)
 *   matvec (m x n)    in 4(mn + n)  out 4m    flops 2mn
 *   matmul (mk, kn)   in 4(mk + kn) out 4mn   flops 2mnk
 */
#include <stdint.h>
#include <strings.h>

#include "base/error.h"
#include "cost/cost.h"

static const char *const kOpNames[] = {
#define RK_OP_NAME_(name, text) text,
    RK_OP_LIST(RK_OP_NAME_)
#undef RK_OP_NAME_
};

const char *rk_op_name(rk_op_t op) {
  if ((unsigned)op >= RK_OP_COUNT_) return "unknown";
  return kOpNames[op];
}

rk_status_t rk_op_from_name(const char *name, rk_op_t *out_op) {
  if (!name || !out_op)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "op_from_name: name and out_op must not be NULL");
  for (int i = 0; i < RK_OP_COUNT_; ++i)
    if (strcasecmp(name, kOpNames[i]) == 0) {
      *out_op = (rk_op_t)i;
      return RK_OK;
    }
  return rk__fail(RK_ERR_NOT_FOUND,
                  "unknown operation '%s' (known: add, sub, mul, scale, axpy, "
                  "fma, dot, sum, min, max, relu, sigmoid, exp, matvec, "
                  "matmul, tanh, log)",
                  name);
}

uint64_t rk__sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t rk__sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

rk__cost_class_t rk__op_class(rk_op_t op) {
  switch (op) {
    case RK_OP_DOT:
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      return RK__CLASS_REDUCTION;
    case RK_OP_SIGMOID:
    case RK_OP_EXP:
    case RK_OP_TANH:
    case RK_OP_LOG:
      return RK__CLASS_TRANSCENDENTAL;
    case RK_OP_MATVEC:
      return RK__CLASS_MATVEC;
    case RK_OP_MATMUL:
      return RK__CLASS_MATMUL;
    default:
      return RK__CLASS_ELEMENTWISE;
  }
}

void rk__op_io_bytes(const rk_op_desc_t *d, uint64_t *out_in,
                     uint64_t *out_out) {
  uint64_t n = d->n, in = 0, out = 0;
  switch (d->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
    case RK_OP_AXPY:
      in = rk__sat_mul(n, 8);
      out = rk__sat_mul(n, 4);
      break;
    case RK_OP_FMA:
      in = rk__sat_mul(n, 12);
      out = rk__sat_mul(n, 4);
      break;
    case RK_OP_SCALE:
    case RK_OP_RELU:
    case RK_OP_EXP:
    case RK_OP_SIGMOID:
    case RK_OP_TANH:
    case RK_OP_LOG:
      in = rk__sat_mul(n, 4);
      out = in;
      break;
    case RK_OP_DOT:
      in = rk__sat_mul(n, 8);
      out = 4;
      break;
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
      in = rk__sat_mul(n, 4);
      out = 4;
      break;
    case RK_OP_MATVEC:
      in = rk__sat_mul(rk__sat_add(rk__sat_mul(d->m, n), n), 4);
      out = rk__sat_mul(d->m, 4);
      break;
    case RK_OP_MATMUL:
      in = rk__sat_mul(
          rk__sat_add(rk__sat_mul(d->m, d->k), rk__sat_mul(d->k, n)), 4);
      out = rk__sat_mul(rk__sat_mul(d->m, n), 4);
      break;
    default:
      break;
  }
  *out_in = in;
  *out_out = out;
}

uint64_t rk_op_bytes(const rk_op_desc_t *desc) {
  if (!desc) return 0;
  uint64_t in, out;
  rk__op_io_bytes(desc, &in, &out);
  return rk__sat_add(in, out);
}

uint64_t rk_op_flops(const rk_op_desc_t *desc) {
  if (!desc) return 0;
  uint64_t n = desc->n;
  switch (desc->op) {
    case RK_OP_ADD:
    case RK_OP_SUB:
    case RK_OP_MUL:
    case RK_OP_SCALE:
    case RK_OP_SUM:
    case RK_OP_MIN:
    case RK_OP_MAX:
    case RK_OP_RELU:
      return n;
    case RK_OP_AXPY:
    case RK_OP_FMA:
    case RK_OP_DOT:
      return rk__sat_mul(n, 2);
    case RK_OP_EXP:
    case RK_OP_LOG:
      return rk__sat_mul(n, 10);
    case RK_OP_TANH:
      return rk__sat_mul(n, 14);
    case RK_OP_SIGMOID:
      return rk__sat_mul(n, 12);
    case RK_OP_MATVEC:
      return rk__sat_mul(rk__sat_mul(desc->m, n), 2);
    case RK_OP_MATMUL:
      return rk__sat_mul(rk__sat_mul(rk__sat_mul(desc->m, n), desc->k), 2);
    default:
      return 0;
  }
}
