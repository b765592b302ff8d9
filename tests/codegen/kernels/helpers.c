#include <rk/kernel.h>

typedef struct {
  float x, y;
} vec2_t;

static inline float clampf(float v, float lo, float hi) {
  return fminf(fmaxf(v, lo), hi);
}

static float lerp(float a, float b, float t) { return a + (b - a) * t; }

static vec2_t vec2(float x, float y) {
  vec2_t v = {x, y};
  return v;
}

static float dot2(vec2_t a, vec2_t b) { return a.x * b.x + a.y * b.y; }

/* A helper that uses the thread index: on Metal it receives the indices
 * from the kernel. */
static int lane(void) { return (int)(rk_thread_idx_x() & 31u); }

static int twice_lane(void) { return 2 * lane(); }

RK_KERNEL void blend(int n, float t, const float *a, const float *b,
                     float *out, int *lanes) {
  int i = (int)rk_global_idx_x();
  if (i >= n) return;
  vec2_t p = vec2(a[i], b[i]);
  vec2_t q = vec2(1.0f, -1.0f);
  out[i] = clampf(lerp(a[i], b[i], t) + 0.5f * dot2(p, q), -10.0f, 10.0f);
  lanes[i] = twice_lane();
}
