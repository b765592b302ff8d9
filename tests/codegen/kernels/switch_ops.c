#include <rk/kernel.h>

/* A small bytecode interpreter: one program per thread, a switch per
 * instruction, with fallthrough and default. */
RK_KERNEL void interpret(int n, int len, const int *code, const float *args,
                         float *out) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  float acc = args[i];
  for (int pc = 0; pc < len; ++pc) {
    int op = code[pc];
    switch (op & 15) {
      case 0:
        break;
      case 1:
        acc += 1.0f;
        break;
      case 2:
        acc *= 2.0f;
        break;
      case 3:
      case 4:
        acc = -acc; /* 3 and 4 share their body */
        break;
      case 5:
        acc += 10.0f;
        /* fall through */
      case 6:
        acc *= 0.5f;
        break;
      case 7: {
        for (int k = op >> 4; k > 0; --k) acc += 0.25f;
        break;
      }
      case 8:
        if (acc < 0.0f) continue;
        acc = sqrtf(acc);
        break;
      default:
        pc = len;
        break;
    }
  }
  out[i] = acc;
}
