#include <rk/kernel.h>

/* Integer bit manipulation with loops and masks. */
static uint32_t popcount32(uint32_t v) {
  v = v - ((v >> 1) & 0x55555555u);
  v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
  v = (v + (v >> 4)) & 0x0F0F0F0Fu;
  return (v * 0x01010101u) >> 24;
}

static uint32_t reverse32(uint32_t v) {
  uint32_t r = 0u;
  for (int b = 0; b < 32; ++b) {
    r = (r << 1) | (v & 1u);
    v >>= 1;
  }
  return r;
}

static int leading_zeros(uint32_t v) {
  if (v == 0u) return 32;
  int n = 0;
  while ((v & 0x80000000u) == 0u) {
    v <<= 1;
    n++;
  }
  return n;
}

RK_KERNEL void bits(int n, const uint32_t *in, uint32_t *pop, uint32_t *rev,
                    int *clz, int *parity) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  uint32_t v = in[i];
  pop[i] = popcount32(v);
  rev[i] = reverse32(v);
  clz[i] = leading_zeros(v);
  uint32_t x = v ^ (v >> 16);
  x ^= x >> 8;
  x ^= x >> 4;
  x &= 0xfu;
  parity[i] = (int)((0x6996u >> x) & 1u);
}
