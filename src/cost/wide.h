/* wide.h - exact unsigned integers of up to 384 bits, for products of
 * 64-bit sizes that must not wrap, rounded to a double once at the end.
 *
 *   rk__wide_t flops;
 *   rk__wide_set(&flops, m);
 *   rk__wide_mul_u64(&flops, n);
 *   rk__wide_mul_u64(&flops, k);               // m * n * k, exactly
 *   double f = rk__wide_to_double(&flops);     // one rounding
 *
 * The callers stay far below 384 bits (a product of three 64-bit sizes and
 * a small constant is under 200 bits); a product that would not fit
 * saturates to all ones.
 */
#ifndef RK_COST_WIDE_H_
#define RK_COST_WIDE_H_

#include <math.h>
#include <stdbool.h>
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

/* w rounded to the nearest double, ties to even: the value a conversion
 * from an integer type wide enough to hold w would give. For w below 2^64
 * this is exactly (double)(uint64_t)w. */
static inline double rk__wide_to_double(const rk__wide_t *w) {
  int bits = rk__wide_bits(w);
  if (bits <= 64) return (double)w->limb[0];
  /* The top 64 bits, and one "sticky" bit for anything nonzero below them:
   * the conversion of those 64 bits rounds to 53 as the whole would (bit 10
   * decides, bits 0-9 only break the tie). */
  int shift = bits - 64, limb = shift / 64, bit = shift % 64;
  uint64_t top = w->limb[limb] >> bit;
  if (bit) top |= w->limb[limb + 1] << (64 - bit);
  bool sticky = bit && (w->limb[limb] << (64 - bit)) != 0;
  for (int i = 0; i < limb && !sticky; ++i) sticky = w->limb[i] != 0;
  return ldexp((double)(top | (uint64_t)sticky), shift);
}

#endif /* RK_COST_WIDE_H_ */
