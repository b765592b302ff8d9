#include <rk/kernel.h>

#define TILE 16

typedef struct {
  float alpha; /* diffusivity * dt / dx^2 */
  float source;
} heat_params_t;

/* One explicit step of the heat equation with a 9-point stencil read
 * through rk_at and a second input weighted per point. */
RK_STENCIL(TILE, TILE, 1)
void heat2d(rk_grid_pos_t p, int nx, int ny, heat_params_t prm,
            const float *u, const float *k, float *u_next) {
  float lap = rk_at(u, p, -1, 0) + rk_at(u, p, 1, 0) + rk_at(u, p, 0, -1) +
              rk_at(u, p, 0, 1) - 4.0f * rk_center(u, p);
  float diag = rk_at(u, p, -1, -1) + rk_at(u, p, 1, 1) + rk_at(u, p, 1, -1) +
               rk_at(u, p, -1, 1) - 4.0f * rk_center(u, p);
  float kc = rk_center(k, p);
  u_next[p.idx] = rk_center(u, p) +
                  prm.alpha * kc * (lap + 0.25f * diag) + prm.source;
}
