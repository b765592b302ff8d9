#include <rk/kernel.h>

/* One explicit step of the 3D heat equation (7-point stencil). */
RK_STENCIL3D(8, 8, 4, 1)
void heat3d(rk_grid_pos_t p, int nx, int ny, int nz, float alpha,
            const float *u, float *u_next) {
  float c = rk_center(u, p);
  float lap = rk_north(u, p) + rk_south(u, p) + rk_east(u, p) +
              rk_west(u, p) + rk_up(u, p) + rk_down(u, p) - 6.0f * c;
  u_next[p.idx] = c + alpha * lap;
}
