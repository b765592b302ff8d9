#include <rk/kernel.h>

/* Loop forms, break/continue, local arrays with initializers, const
 * locals, ternaries, compound assignments and casts. */
RK_KERNEL void loops(int n, const int *in, int *out) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  const int weights[5] = {1, 2, 3, 2, 1};
  float fw[3] = {0.25f, 0.5f, 0.25f};
  int grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
  int v = in[i];
  int sum = 0;
  for (int k = 0; k < 5; ++k) {
    if (k == 2) continue;
    sum += weights[k] * v;
  }
  int steps = 0;
  while (v != 1 && steps < 100) {
    v = v % 2 == 0 ? v / 2 : 3 * v + 1;
    steps++;
    if (v < 0) break;
  }
  int j = 0;
  do {
    sum -= grid[j & 1][j % 3];
    j += 1;
  } while (j < 6);
  float f = (float)sum * fw[1] + fw[0] - fw[2];
  bool odd = (sum & 1) != 0;
  sum <<= 1;
  sum ^= odd ? 1 : 0;
  sum = -(-sum);
  out[i * 3 + 0] = sum;
  out[i * 3 + 1] = steps;
  out[i * 3 + 2] = (int)f;
}
