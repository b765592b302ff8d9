#include <rk/kernel.h>

/* Five-point Laplacian of a 2D field on the interior points. */
RK_STENCIL(16, 16, 1)
void laplace2d(rk_grid_pos_t p, int nx, int ny, const float *in, float *out) {
  out[p.idx] = rk_north(in, p) + rk_south(in, p) + rk_east(in, p) +
               rk_west(in, p) - 4.0f * rk_center(in, p);
}
