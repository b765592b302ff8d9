/* wide.h - exact unsigned integers of up to 384 bits, for comparing
 * products of 64-bit sizes and doubles without rounding or overflow.
 *
 *   rk__wide_t a;  int ea = 0;
 *   rk__wide_set(&a, flops);
 *   rk__wide_mul_double(&a, &ea, bandwidth);   // a * 2^ea == flops * bw
 *   if (rk__wide_compare_scaled(&a, ea, &b, eb) > 0) ...
 *
 * The callers stay far below 384 bits (a product of three 64-bit sizes and
 * two 53-bit mantissas is under 300 bits); a product that would not fit
 * saturates to all ones.
 */
#ifndef RK_COST_WIDE_H_
#define RK_COST_WIDE_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { RK__WIDE_LIMBS = 6 };

typedef struct rk__wide {
  uint64_t limb[RK__WIDE_LIMBS]; /* little-endian */
} rk__wide_t;

static inline void rk__wide_set(rk__wide_t *w, uint64_t v) {
  memset(w, 0, sizeof *w);
  w->limb[0] = v;
}

static inline void rk__wide_saturate(rk__wide_t *w) {
  memset(w->limb, 0xff, sizeof w->limb);
}

static inline void rk__wide_mul_u64(rk__wide_t *w, uint64_t factor) {
  unsigned __int128 carry = 0;
  for (int i = 0; i < RK__WIDE_LIMBS; ++i) {
    unsigned __int128 p = (unsigned __int128)w->limb[i] * factor + carry;
    w->limb[i] = (uint64_t)p;
    carry = p >> 64;
  }
  if (carry) rk__wide_saturate(w);
}

static inline void rk__wide_add(rk__wide_t *w, const rk__wide_t *x) {
  unsigned __int128 carry = 0;
  for (int i = 0; i < RK__WIDE_LIMBS; ++i) {
    unsigned __int128 s = (unsigned __int128)w->limb[i] + x->limb[i] + carry;
    w->limb[i] = (uint64_t)s;
    carry = s >> 64;
  }
  if (carry) rk__wide_saturate(w);
}

/* Number of significant bits (0 for zero). */
static inline int rk__wide_bits(const rk__wide_t *w) {
  for (int i = RK__WIDE_LIMBS - 1; i >= 0; --i)
    if (w->limb[i]) return i * 64 + 64 - __builtin_clzll(w->limb[i]);
  return 0;
}

/* w <<= shift, for a shift that keeps every bit (checked by the caller). */
static inline void rk__wide_shl(rk__wide_t *w, int shift) {
  if (shift <= 0) return;
  int limbs = shift / 64, bits = shift % 64;
  for (int i = RK__WIDE_LIMBS - 1; i >= 0; --i) {
    uint64_t v = 0;
    int src = i - limbs;
    if (src >= 0) {
      v = w->limb[src] << bits;
      if (bits && src > 0) v |= w->limb[src - 1] >> (64 - bits);
    }
    w->limb[i] = v;
  }
}

/* w * 2^(*exp) *= d exactly, for a positive finite double d: d is split
 * into a 53-bit integer mantissa and a power of two. */
static inline void rk__wide_mul_double(rk__wide_t *w, int *exp, double d) {
  int e = 0;
  double f = frexp(d, &e); /* d = f * 2^e, 0.5 <= f < 1 */
  uint64_t mantissa = (uint64_t)ldexp(f, 53);
  rk__wide_mul_u64(w, mantissa);
  *exp += e - 53;
}

/* Compares a * 2^ea with b * 2^eb: -1, 0 or 1. */
static inline int rk__wide_compare_scaled(const rk__wide_t *a, int ea,
                                          const rk__wide_t *b, int eb) {
  int pa = rk__wide_bits(a), pb = rk__wide_bits(b);
  if (pa == 0 || pb == 0) return (pa != 0) - (pb != 0);
  long top_a = (long)pa + ea, top_b = (long)pb + eb;
  if (top_a != top_b) return top_a > top_b ? 1 : -1;
  /* Same leading bit position: align the exponents by shifting the operand
   * with the larger exponent left; it then has exactly as many bits as the
   * other, so nothing is lost. */
  rk__wide_t x = *a, y = *b;
  if (ea > eb)
    rk__wide_shl(&x, ea - eb);
  else
    rk__wide_shl(&y, eb - ea);
  for (int i = RK__WIDE_LIMBS - 1; i >= 0; --i)
    if (x.limb[i] != y.limb[i]) return x.limb[i] > y.limb[i] ? 1 : -1;
  return 0;
}

#endif /* RK_COST_WIDE_H_ */
