/* kernel_h_additions.h - what <rk/kernel.h> still lacks for stencil and
 * handler sources to be valid C.
 *
 * The block between the markers below is meant to be appended to
 * include/rk/kernel.h (before its closing #endif); until then the codegen
 * tests compile the corpus with `-include` of this file, which is how they
 * prove that every kernel source is valid C11. The transpiler's C output
 * does not depend on any of it (it lowers stencils and handlers itself).
 */
#include <rk/kernel.h>

#ifndef RK_GRID_POS_DEFINED_
#define RK_GRID_POS_DEFINED_
/* ---- BEGIN kernel.h addition ------------------------------------------ */

/* ---- Stencils and actor handlers ---------------------------------------- */

/* The position of a stencil point, passed by value as a stencil's first
 * parameter: global coordinates, the linear index of the point
 * (idx = (z * ny + y) * nx + x) and the domain size (nz is 1 in 2D). */
typedef struct rk_grid_pos {
  int x, y, z;
  int idx;
  int nx, ny, nz;
} rk_grid_pos_t;

/* Entry-point markers. The transpiler turns a stencil into a kernel over
 * the interior points and a handler into a kernel that handles one message;
 * compiled directly as C they are plain functions (static in a CPU module,
 * like RK_KERNEL). */
#ifdef RK_CPU_MODULE
#define RK__ENTRY static RK__UNUSED
#else
#define RK__ENTRY
#endif
#define RK_STENCIL(tile_x, tile_y, halo) RK__ENTRY
#define RK_STENCIL3D(tile_x, tile_y, tile_z, halo) RK__ENTRY
#define RK_HANDLER RK__ENTRY

/* Neighbour reads of a stencil buffer (row-major, x fastest): north is
 * y - 1, south y + 1, west x - 1, east x + 1, down z - 1, up z + 1. */
#define rk_center(buf, p) ((buf)[(p).idx])
#define rk_west(buf, p) ((buf)[(p).idx - 1])
#define rk_east(buf, p) ((buf)[(p).idx + 1])
#define rk_north(buf, p) ((buf)[(p).idx - (p).nx])
#define rk_south(buf, p) ((buf)[(p).idx + (p).nx])
#define rk_down(buf, p) ((buf)[(p).idx - (p).nx * (p).ny])
#define rk_up(buf, p) ((buf)[(p).idx + (p).nx * (p).ny])
#define rk_at(buf, p, dx, dy) ((buf)[(p).idx + (dy) * (p).nx + (dx)])
#define rk_at3(buf, p, dx, dy, dz) \
  ((buf)[(p).idx + ((dz) * (p).ny + (dy)) * (p).nx + (dx)])

/* ---- END kernel.h addition -------------------------------------------- */
#endif
