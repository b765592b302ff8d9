/* Helpers that return a value only from inside a loop that never ends by
 * its condition: while (true), while (1), for (;;) and do { } while
 * (true), with nothing after the loop. C accepts them; WGSL requires a
 * return at the end of such a function, which its output adds (never
 * reached). A helper ending in if/else returns, or in a switch whose every
 * clause returns, completes the set. */
#include <rk/kernel.h>

typedef struct {
  int lo;
  int hi;
} span_t;

/* The first of x, x + 3, x + 6, ... above t. */
static int first_above(int x, int t) {
  int i = 0;
  while (true) {
    if (x + i > t) return x + i;
    i += 3;
  }
}

/* x -> 2x + 1 until it exceeds limit. */
static float grow(float x, float limit) {
  for (;;) {
    x = x * 2.0f + 1.0f;
    if (x > limit) return x;
  }
}

/* Steps of the Collatz map from n (at least 1) down to 1. */
static uint32_t collatz_steps(uint32_t n) {
  uint32_t k = 0u;
  do {
    if (n == 1u) return k;
    n = (n & 1u) != 0u ? 3u * n + 1u : n / 2u;
    k++;
  } while (true);
}

/* The power-of-two interval [lo, hi) holding v (v at least 1). */
static span_t bracket(int v) {
  span_t s = {0, 1};
  while (1) {
    if (s.hi > v) return s;
    s.lo = s.hi;
    s.hi *= 2;
  }
}

static int sign(int v) {
  if (v < 0)
    return -1;
  else if (v > 0)
    return 1;
  else
    return 0;
}

static bool small_or_even(uint32_t v) {
  switch (v % 2u) {
    case 0u:
      return true;
    default:
      return v < 10u;
  }
}

/* One thread per input v (1..100 expected): out_i[3i..3i+2] = first_above,
 * the bracket's lo + hi and sign(v - 50); out_f[i] = grow; out_u[i] =
 * collatz_steps + 1000 if small_or_even. */
RK_KERNEL void loop_exits(int n, const int *in, int *out_i, float *out_f,
                          uint32_t *out_u) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  int v = in[i];
  span_t s = bracket(v);
  out_i[3 * i] = first_above(v, 50);
  out_i[3 * i + 1] = s.lo + s.hi;
  out_i[3 * i + 2] = sign(v - 50);
  out_f[i] = grow((float)v, 1000.0f);
  out_u[i] = collatz_steps((uint32_t)v) +
             (small_or_even((uint32_t)v) ? 1000u : 0u);
}
