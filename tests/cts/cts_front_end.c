/* CTS: one kernel front end for every backend. Stencils and handlers
 * compiled with rk_context_compile run everywhere and match a scalar
 * reference; #ifdef branches choose the same kernels everywhere; and what
 * the kernel language does not have is refused everywhere with the same
 * file:line:col message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

/* ---- Stencils ----------------------------------------------------------- */

// clang-format off
static const char kStencilSource[] = KSRC(
    RK_STENCIL(8, 4, 1)
    void blur2d(rk_grid_pos_t p, int nx, int ny, const float *u, float *v) {
      v[p.idx] = 0.5f * rk_center(u, p) +
                 0.125f * (rk_north(u, p) + rk_south(u, p) + rk_east(u, p) +
                           rk_west(u, p));
    }
    RK_STENCIL3D(4, 4, 2, 1)
    void blur3d(rk_grid_pos_t p, int nx, int ny, int nz, const float *u,
                float *v) {
      v[p.idx] = 0.4f * rk_center(u, p) +
                 0.1f * (rk_north(u, p) + rk_south(u, p) + rk_east(u, p) +
                         rk_west(u, p) + rk_up(u, p) + rk_down(u, p));
    });
// clang-format on

/* The reference of blur2d/blur3d at an interior point of u (nz = 1: 2D). */
static float blur_ref(const float *u, int nx, int ny, int nz, int x, int y,
                      int z) {
  int i = (z * ny + y) * nx + x;
  if (nz == 1)
    return 0.5f * u[i] + 0.125f * (u[i - nx] + u[i + nx] + u[i + 1] + u[i - 1]);
  int plane = nx * ny;
  return 0.4f * u[i] + 0.1f * (u[i - nx] + u[i + nx] + u[i + 1] + u[i - 1] +
                               u[i + plane] + u[i - plane]);
}

/* Runs `fn` over an nx*ny*nz domain (nz = 1: the 2D stencil) and checks
 * every interior point against the reference and every halo point left
 * untouched. */
static void run_blur(rk_context_t *ctx, rk_function_t *fn, int nx, int ny,
                     int nz, const uint32_t tile[3]) {
  const size_t n = (size_t)nx * ny * nz;
  float *u = malloc(n * sizeof *u), *v = malloc(n * sizeof *v);
  uint32_t seed = 7;
  for (size_t i = 0; i < n; ++i) u[i] = (float)(cts_rand(&seed) % 1000) / 8;
  for (size_t i = 0; i < n; ++i) v[i] = -1.0f;
  rk_devptr_t du = cts_alloc(ctx, n * sizeof *u, u);
  rk_devptr_t dv = cts_alloc(ctx, n * sizeof *v, v);
  if (du && dv) {
    rk_arg_t args[5];
    size_t nargs = 0;
    args[nargs++] = rk_arg_i32(nx);
    args[nargs++] = rk_arg_i32(ny);
    if (nz > 1) args[nargs++] = rk_arg_i32(nz);
    args[nargs++] = rk_arg_ptr(du);
    args[nargs++] = rk_arg_ptr(dv);
    rk_dim3_t block = rk_dim3(tile[0], tile[1], tile[2]);
    rk_dim3_t grid = rk_dim3(cts_blocks((uint64_t)nx, tile[0]),
                             cts_blocks((uint64_t)ny, tile[1]),
                             cts_blocks((uint64_t)nz, tile[2]));
    CHECK_OK(rk_function_launch(fn, grid, block, 0, NULL, args, nargs));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, v, dv, n * sizeof *v));
    int bad = 0;
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx && bad < 5; ++x) {
          bool interior = x > 0 && x < nx - 1 && y > 0 && y < ny - 1 &&
                          (nz == 1 || (z > 0 && z < nz - 1));
          float got = v[((size_t)z * ny + y) * nx + x];
          float want = interior ? blur_ref(u, nx, ny, nz, x, y, z) : -1.0f;
          if (!CHECK(cts_close(got, want, 1e-5),
                     "%dD stencil at (%d,%d,%d): %g, expected %g",
                     nz > 1 ? 3 : 2, x, y, z, got, want))
            ++bad;
        }
  }
  if (du) rk_context_free(ctx, du);
  if (dv) rk_context_free(ctx, dv);
  free(u);
  free(v);
}

void cts_front_end_stencils(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "blur.c", kStencilSource);
  rk_function_t *f2 = cts_function(mod, "blur2d");
  rk_function_t *f3 = cts_function(mod, "blur3d");
  if (!f2 || !f3) return;
  /* The launch parameters omit the position: (nx, ny[, nz], u, v). */
  CHECK(rk_function_param_count(f2) == 4, "blur2d has %zu parameters",
        rk_function_param_count(f2));
  CHECK(rk_function_param_count(f3) == 5, "blur3d has %zu parameters",
        rk_function_param_count(f3));
  /* Domains that are not multiples of the tiles. */
  run_blur(ctx, f2, 37, 21, 1, (const uint32_t[3]){8, 4, 1});
  run_blur(ctx, f3, 11, 9, 7, (const uint32_t[3]){4, 4, 2});
}

/* ---- Handlers ----------------------------------------------------------- */

// clang-format off
static const char kHandlerSource[] = KSRC(
    typedef struct { int v; float f; } cts_msg_t;
    RK_HANDLER int twice(const cts_msg_t *in, cts_msg_t *out) {
      out->v = in->v * 2 + 1;
      out->f = in->f * 0.5f;
      return in->v < 0 ? 7 : 0;
    });
// clang-format on

typedef struct {
  int v;
  float f;
} cts_msg_t;

/* A handler's single-message kernel and its batch entry, compiled with
 * rk_context_compile and launched directly. */
void cts_front_end_handler(rk_context_t *ctx) {
  enum { kN = 37 };
  cts_msg_t in[kN], out[kN];
  int32_t status[kN];
  for (int i = 0; i < kN; ++i) {
    in[i].v = i - 3;
    in[i].f = (float)i;
  }
  memset(out, 0, sizeof out);
  memset(status, 0xff, sizeof status);
  rk_module_t *mod = cts_compile(ctx, "twice.c", kHandlerSource);
  rk_function_t *one = cts_function(mod, "twice");
  rk_function_t *batch = cts_function(mod, "rk_batch_twice");
  rk_devptr_t din = cts_alloc(ctx, sizeof in, in);
  rk_devptr_t dout = cts_alloc(ctx, sizeof out, out);
  rk_devptr_t dst = cts_alloc(ctx, sizeof status, status);
  if (one && batch && din && dout && dst) {
    rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout), rk_arg_ptr(dst),
                       rk_arg_u32(kN)};
    const rk_dim3_t single = rk_dim3(1, 1, 1);
    CHECK_OK(rk_function_launch(batch, single, single, 0, NULL, args, 4));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, sizeof out));
    CHECK_OK(rk_context_copy_to_host(ctx, status, dst, sizeof status));
    for (int i = 0; i < kN; ++i) {
      CHECK(out[i].v == in[i].v * 2 + 1 && out[i].f == in[i].f * 0.5f,
            "batch message %d: (%d, %g)", i, out[i].v, out[i].f);
      CHECK(status[i] == (in[i].v < 0 ? 7 : 0), "batch status %d: %d", i,
            (int)status[i]);
    }
    /* The single-message kernel: (in, out, rk_status) at message 0. */
    cts_msg_t m = {-5, 3.0f}, r = {0, 0};
    CHECK_OK(rk_context_copy_to_device(ctx, din, &m, sizeof m));
    CHECK_OK(rk_function_launch(one, single, single, 0, NULL, args, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, &r, dout, sizeof r));
    CHECK_OK(rk_context_copy_to_host(ctx, status, dst, sizeof(int32_t)));
    CHECK(r.v == -9 && r.f == 1.5f && status[0] == 7,
          "single message: (%d, %g), status %d", r.v, r.f, (int)status[0]);
  }
  if (din) rk_context_free(ctx, din);
  if (dout) rk_context_free(ctx, dout);
  if (dst) rk_context_free(ctx, dst);
}

/* ---- Conditional compilation -------------------------------------------- */

static const char kBranchSource[] =
    "#include <rk/kernel.h>\n"
    "#ifdef CTS_FIRST\n"
    "RK_KERNEL void which(int *x) { x[0] = 1; }\n"
    "#else\n"
    "RK_KERNEL void which(int *x) { x[0] = 2; }\n"
    "#endif\n"
    "#ifdef CTS_NEVER_DEFINED\n"
    "RK_KERNEL void ghost(int *x) { x[0] = undefined_symbol; }\n"
    "#endif\n";

static int run_which(rk_context_t *ctx, const char *const *defines) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = "branches.c";
  opt.defines = defines;
  rk_module_t *mod = NULL;
  if (!CHECK_OK(rk_context_compile(ctx, kBranchSource, &opt, &mod))) return -1;
  CHECK(rk_module_function_count(mod) == 1, "%zu kernels, expected 1",
        rk_module_function_count(mod));
  rk_function_t *fn = NULL;
  CHECK_STATUS(rk_module_get_function(mod, "ghost", &fn), RK_ERR_NOT_FOUND);
  int v = 0;
  rk_devptr_t d = cts_alloc(ctx, sizeof v, &v);
  if (d && CHECK_OK(rk_module_get_function(mod, "which", &fn))) {
    rk_arg_t arg = rk_arg_ptr(d);
    CHECK_OK(rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                                &arg, 1));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, &v, d, sizeof v));
  }
  if (d) rk_context_free(ctx, d);
  rk_module_destroy(mod);
  return v;
}

/* A kernel defined in both branches is the one of the branch taken; one in
 * a branch not taken does not exist (twice: the second compile may come
 * from a cache, which must hold a working module). */
void cts_front_end_conditionals(rk_context_t *ctx) {
  const char *first[] = {"CTS_FIRST", NULL};
  for (int round = 0; round < 2; ++round) {
    int v = run_which(ctx, NULL);
    CHECK(v == 2, "without CTS_FIRST the kernel wrote %d, expected 2", v);
    v = run_which(ctx, first);
    CHECK(v == 1, "with CTS_FIRST the kernel wrote %d, expected 1", v);
  }
}

/* ---- Refusals ----------------------------------------------------------- */

typedef struct refusal {
  const char *source;
  const char *where; /* "name:line:col" */
  const char *says;  /* part of the message */
} refusal_t;

static const refusal_t kRefusals[] = {
    {"#include <rk/kernel.h>\n"
     "static int down(int n) { return n > 0 ? down(n - 1) : 0; }\n"
     "RK_KERNEL void k(int *x) { x[0] = down(3); }\n",
     "refused.c:2:", "recursion is not supported"},
    {"#include <rk/kernel.h>\n"
     "__attribute__((constructor)) static void at_load(void) {}\n"
     "RK_KERNEL void k(int *x) { x[0] = 1; }\n",
     "refused.c:2:1:", "'__attribute__' is not part of the kernel language"},
    {"#include <rk/kernel.h>\n"
     "RK_KERNEL void k(int *x) { __asm__(\"nop\"); x[0] = 1; }\n",
     "refused.c:2:28:", "'__asm__' is not part of the kernel language"},
    {"#include <rk/kernel.h>\n"
     "#include \"/etc/passwd\"\n"
     "RK_KERNEL void k(int *x) { x[0] = 1; }\n",
     "refused.c:2:10:", "may only include <rk/kernel.h>"},
    {"#include <rk/kernel.h>\n"
     "#include <stdio.h>\n"
     "RK_KERNEL void k(int *x) { x[0] = 1; }\n",
     "refused.c:2:10:", "may only include <rk/kernel.h>"},
    {"#include <rk/kernel.h>\n"
     "#pragma omp parallel\n"
     "RK_KERNEL void k(int *x) { x[0] = 1; }\n",
     "refused.c:2:", "#pragma omp is not supported"},
    {"#include <rk/kernel.h>\n"
     "#define TWICE(v) ((v) * 2)\n"
     "RK_KERNEL void k(int *x) { x[0] = TWICE(3); }\n",
     "refused.c:2:9:", "function-like macro 'TWICE'"},
};

/* What the kernel language does not have is refused on every backend, with
 * the same location and message, before any vendor compiler sees it; an
 * include of a readable file never shows the file's contents. */
void cts_error_front_end_refusals(rk_context_t *ctx) {
  rk_compile_options_t opt;
  rk_compile_options_init(&opt);
  opt.source_name = "refused.c";
  for (size_t i = 0; i < sizeof kRefusals / sizeof kRefusals[0]; ++i) {
    const refusal_t *r = &kRefusals[i];
    rk_module_t *mod = NULL;
    CHECK_STATUS(rk_context_compile(ctx, r->source, &opt, &mod),
                 RK_ERR_COMPILE);
    CHECK(mod == NULL, "refusal %zu gave a module", i);
    CHECK_ERROR_HAS(r->where);
    CHECK_ERROR_HAS(r->says);
    CHECK(strstr(rk_last_error(), "root:") == NULL,
          "the message shows an included file: %s", rk_last_error());
  }
}
