#include <rk/kernel.h>

#define TILE 8
typedef struct {
  int op;
  float v;
} msg_t;
typedef struct {
  float sum;
} state_t;

static float avg4(float a, float b, float c, float d) {
  return 0.25f * (a + b + c + d);
}

RK_STENCIL(TILE, TILE, 1)
void jacobi(rk_grid_pos_t p, int nx, int ny, const float *u, float *out) {
  out[p.idx] =
      avg4(rk_west(u, p), rk_east(u, p), rk_north(u, p), rk_south(u, p));
}

RK_STENCIL3D(4, 4, 4, 1)
void smooth3(rk_grid_pos_t p, int nx, int ny, int nz, const double *u,
             double *out) {
  out[p.idx] = (rk_up(u, p) + rk_down(u, p) + rk_at3(u, p, 1, 0, 0)) / 3.0;
}

RK_HANDLER void acc(const msg_t *in, msg_t *out, state_t *s) {
  switch (in->op) {
    case 0:
      s->sum += in->v;
      break;
    default:
      s->sum = 0.0f;
      break;
  }
  out->op = in->op;
  out->v = s->sum;
}
