#include <rk/kernel.h>

/* Constructs that the WGSL printer lowers rather than respells: ?: with
 * side effects or struct operands (an if with a temporary), op= computed in
 * a wider type, unary minus on unsigned, a name WGSL reserves, compare-and-
 * swap on a buffer and on a 2D shared array, and two entry points sharing
 * parameter names (module-scope resources get the entry's prefix). */
typedef struct {
  float lo, hi;
} range_t;

static range_t widen(range_t r, float by) {
  range_t w = {r.lo - by, r.hi + by};
  return w;
}

RK_KERNEL void claim(int n, int *slots, int *owner, range_t r, float *out) {
  RK_SHARED int grid[2][4];
  int t = (int)rk_thread_idx_x();
  if (t < 8) grid[t / 4][t % 4] = -1;
  rk_sync_threads();
  int select = t % 3;
  int got = t < n ? rk_atomic_cas_i32(&slots[t % 4], -1, t) : -2;
  owner[t] = got;
  rk_atomic_cas_i32(&grid[t % 2][t % 4], -1, t);
  range_t q = select == 0 ? widen(r, 1.0f) : r;
  int k = t;
  k *= 0.5f;
  unsigned u = (unsigned)t;
  u = -u;
  u >>= 28;
  out[t] = q.hi - q.lo + (float)k + (float)select + (float)u;
}

RK_KERNEL void scale(int n, float f, float *out) {
  int i = (int)rk_global_idx_x();
  if (i < n) out[i] *= f;
}
