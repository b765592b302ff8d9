/* CTS: compiling, introspecting and launching kernels; built-in indices in
 * 1D, 2D and 3D; every argument kind. */
#include <stdlib.h>
#include <string.h>

#include "cts.h"

/* ---- Compile and introspect --------------------------------------------- */

typedef struct cts_pair {
  int a;
  float b;
  double c;
} cts_pair_t;

/* The struct of the 32-bit form: no member wider than 4 bytes. */
typedef struct cts_pair32 {
  int a;
  float b;
  uint32_t c;
} cts_pair32_t;

// clang-format off
static const char kIntrospectSource[] = KSRC(
    typedef struct cts_pair { int a; float b; double c; } cts_pair_t;
    RK_KERNEL void params(int a, unsigned b, int64_t c, uint64_t d, float e,
                          double f, float *g, const int *h, cts_pair_t s) {
      if (rk_global_idx_x() == 0) g[0] = (float)a + (float)b + (float)c +
                                         (float)d + e + (float)f +
                                         (float)h[0] + (float)s.a;
    }
    RK_KERNEL void noargs(void) {});

/* The same without 64-bit types, for devices that have none. */
static const char kIntrospectSource32[] = KSRC(
    typedef struct cts_pair32 { int a; float b; uint32_t c; } cts_pair32_t;
    RK_KERNEL void params(int a, unsigned b, float e, float *g, const int *h,
                          cts_pair32_t s) {
      if (rk_global_idx_x() == 0) g[0] = (float)a + (float)b + e +
                                         (float)h[0] + (float)s.a +
                                         (float)s.c;
    }
    RK_KERNEL void noargs(void) {});
// clang-format on

typedef struct cts_param_want {
  rk_arg_kind_t kind;
  size_t size;
} cts_param_want_t;

void cts_compile_and_introspect(rk_context_t *ctx) {
  static const cts_param_want_t kWant64[] = {
      {RK_ARG_I32, 4},
      {RK_ARG_U32, 4},
      {RK_ARG_I64, 8},
      {RK_ARG_U64, 8},
      {RK_ARG_F32, 4},
      {RK_ARG_F64, 8},
      {RK_ARG_PTR, sizeof(rk_devptr_t)},
      {RK_ARG_PTR, sizeof(rk_devptr_t)},
      {RK_ARG_STRUCT, sizeof(cts_pair_t)},
  };
  static const cts_param_want_t kWant32[] = {
      {RK_ARG_I32, 4},
      {RK_ARG_U32, 4},
      {RK_ARG_F32, 4},
      {RK_ARG_PTR, sizeof(rk_devptr_t)},
      {RK_ARG_PTR, sizeof(rk_devptr_t)},
      {RK_ARG_STRUCT, sizeof(cts_pair32_t)},
  };
  const bool wide = cts_has_64bit();
  if (!wide)
    cts_not_checked("compile_and_introspect",
                    "i64, u64 and f64 parameters and a struct with a double");
  const char *source = wide ? kIntrospectSource : kIntrospectSource32;
  rk_module_t *mod = cts_compile(ctx, "introspect.c", source);
  if (!mod) return;
  CHECK(rk_module_function_count(mod) == 2,
        "module has %zu kernels, expected 2", rk_module_function_count(mod));
  rk_function_t *fn = cts_function(mod, "params");
  rk_function_t *none = cts_function(mod, "noargs");
  if (!fn || !none) return;
  CHECK(strcmp(rk_function_name(fn), "params") == 0, "name is '%s'",
        rk_function_name(fn));
  CHECK(strcmp(rk_function_name(none), "noargs") == 0, "name is '%s'",
        rk_function_name(none));
  CHECK(rk_function_param_count(none) == 0, "noargs has %zu params",
        rk_function_param_count(none));

  const cts_param_want_t *want = wide ? kWant64 : kWant32;
  size_t n = wide ? sizeof kWant64 / sizeof kWant64[0]
                  : sizeof kWant32 / sizeof kWant32[0];
  CHECK(rk_function_param_count(fn) == n, "params has %zu params, expected %zu",
        rk_function_param_count(fn), n);
  for (size_t i = 0; i < n && i < rk_function_param_count(fn); ++i) {
    rk_arg_kind_t kind = 0;
    size_t size = 0;
    if (!CHECK_OK(rk_function_param(fn, i, &kind, &size))) continue;
    CHECK(kind == want[i].kind, "param %zu is %s, expected %s", i,
          rk_arg_kind_name(kind), rk_arg_kind_name(want[i].kind));
    CHECK(size == want[i].size, "param %zu is %zu bytes, expected %zu", i, size,
          want[i].size);
  }
  /* Both out-pointers are optional. */
  CHECK_OK(rk_function_param(fn, 0, NULL, NULL));
  rk_arg_kind_t kind = RK_ARG_F64;
  size_t size = 12345;
  CHECK_STATUS(rk_function_param(fn, n, &kind, &size), RK_ERR_OUT_OF_RANGE);
  CHECK_ERROR_HAS("params");
  CHECK(kind == RK_ARG_F64 && size == 12345,
        "a failed rk_function_param wrote its outputs");
  CHECK_STATUS(rk_function_param(none, 0, &kind, &size), RK_ERR_OUT_OF_RANGE);

  /* A kernel without parameters launches with no arguments. */
  CHECK_OK(rk_function_launch(none, rk_dim3(3, 1, 1), rk_dim3(8, 1, 1), 0, NULL,
                              NULL, 0));
  CHECK_OK(rk_context_synchronize(ctx));

  /* The same source again gives an independent, working module. */
  rk_module_t *again = cts_compile(ctx, "introspect.c", source);
  CHECK(again != mod, "two compiles returned the same module");
  CHECK(rk_module_function_count(again) == 2, "second module has %zu kernels",
        rk_module_function_count(again));
  CHECK_OK(rk_module_destroy(again));
  CHECK_OK(rk_module_destroy(mod));
}

/* ---- 1D ---------------------------------------------------------------- */

// clang-format off
static const char kSaxpySource[] = KSRC(
    RK_KERNEL void saxpy(int n, float a, const float *x, float *y) {
      int i = (int)rk_global_idx_x();
      if (i < n) y[i] = a * x[i] + y[i];
    });
// clang-format on

void cts_launch_1d_saxpy(rk_context_t *ctx) {
  enum { kN = 100003, kPad = 77, kBlock = 256 };
  const float a = 1.5f;
  float *x = malloc(kN * sizeof *x), *y = malloc((kN + kPad) * sizeof *y);
  float *out = malloc((kN + kPad) * sizeof *out);
  /* Multiples of 1/8 below 2^10: every product and sum is exact in float,
   * so the result is exact with or without fused multiply-add. */
  for (int i = 0; i < kN; ++i) {
    x[i] = (float)(i % 1000) * 0.25f;
    y[i] = (float)(i % 777) * 0.5f - 100.0f;
  }
  for (int i = kN; i < kN + kPad; ++i) y[i] = -7.0f; /* sentinel */
  rk_module_t *mod = cts_compile(ctx, "saxpy.c", kSaxpySource);
  rk_function_t *fn = cts_function(mod, "saxpy");
  rk_devptr_t dx = cts_alloc(ctx, kN * sizeof *x, x);
  rk_devptr_t dy = cts_alloc(ctx, (kN + kPad) * sizeof *y, y);
  if (fn && dx && dy) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_f32(a), rk_arg_ptr(dx),
                       rk_arg_ptr(dy)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(cts_blocks(kN, kBlock), 1, 1),
                                rk_dim3(kBlock, 1, 1), 0, NULL, args, 4));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dy, (kN + kPad) * sizeof *out));
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      float want = a * x[i] + y[i];
      /* Tolerance: 1e-6 relative (the inputs make it exact in practice). */
      if (!CHECK(cts_close(out[i], want, 1e-6), "y[%d] = %.9g, expected %.9g",
                 i, out[i], want))
        ++bad;
    }
    for (int i = kN; i < kN + kPad && bad < 5; ++i)
      if (!CHECK(out[i] == -7.0f, "y[%d] past n was written (%g)", i, out[i]))
        ++bad;
  }
  if (dx) rk_context_free(ctx, dx);
  if (dy) rk_context_free(ctx, dy);
  free(x);
  free(y);
  free(out);
}

/* ---- 2D ---------------------------------------------------------------- */

// clang-format off
static const char kTransposeSource[] = KSRC(
    RK_KERNEL void transpose(int w, int h, const int *in, int *out) {
      uint32_t x = rk_global_idx_x(), y = rk_global_idx_y();
      if (x < (uint32_t)w && y < (uint32_t)h) out[x * h + y] = in[y * w + x];
    });
// clang-format on

void cts_launch_2d_transpose(rk_context_t *ctx) {
  enum { kW = 67, kH = 45 }; /* not multiples of the block */
  int *in = malloc(kW * kH * sizeof *in), *out = malloc(kW * kH * sizeof *out);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) in[y * kW + x] = y * 1000 + x;
  for (int i = 0; i < kW * kH; ++i) out[i] = -1;
  rk_module_t *mod = cts_compile(ctx, "transpose.c", kTransposeSource);
  rk_function_t *fn = cts_function(mod, "transpose");
  rk_devptr_t din = cts_alloc(ctx, kW * kH * sizeof *in, in);
  rk_devptr_t dout = cts_alloc(ctx, kW * kH * sizeof *out, out);
  if (fn && din && dout) {
    rk_arg_t args[] = {rk_arg_i32(kW), rk_arg_i32(kH), rk_arg_ptr(din),
                       rk_arg_ptr(dout)};
    rk_dim3_t block = rk_dim3(16, 8, 1);
    rk_dim3_t grid = rk_dim3(cts_blocks(kW, 16), cts_blocks(kH, 8), 1);
    CHECK_OK(rk_function_launch(fn, grid, block, 0, NULL, args, 4));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, kW * kH * sizeof *out));
    int bad = 0;
    for (int x = 0; x < kW && bad < 5; ++x)
      for (int y = 0; y < kH && bad < 5; ++y)
        if (!CHECK(out[x * kH + y] == y * 1000 + x,
                   "out[%d][%d] = %d, expected %d", x, y, out[x * kH + y],
                   y * 1000 + x))
          ++bad;
  }
  if (din) rk_context_free(ctx, din);
  if (dout) rk_context_free(ctx, dout);
  free(in);
  free(out);
}

/* ---- 3D ---------------------------------------------------------------- */

/* Each thread records all its indices and dimensions at its global (x,y,z)
 * place, 4 bits per field. */
// clang-format off
static const char kCoordsSource[] = KSRC(
    RK_KERNEL void coords(uint32_t *out) {
      uint32_t gx = rk_global_idx_x(), gy = rk_global_idx_y(),
               gz = rk_global_idx_z();
      uint32_t nx = rk_grid_dim_x() * rk_block_dim_x();
      uint32_t ny = rk_grid_dim_y() * rk_block_dim_y();
      uint32_t i = (gz * ny + gy) * nx + gx;
      out[3 * i + 0] = rk_thread_idx_x() | rk_thread_idx_y() << 4 |
                       rk_thread_idx_z() << 8 | rk_block_idx_x() << 12 |
                       rk_block_idx_y() << 16 | rk_block_idx_z() << 20;
      out[3 * i + 1] = rk_block_dim_x() | rk_block_dim_y() << 4 |
                       rk_block_dim_z() << 8 | rk_grid_dim_x() << 12 |
                       rk_grid_dim_y() << 16 | rk_grid_dim_z() << 20;
      out[3 * i + 2] = gx | gy << 8 | gz << 16;
    });
// clang-format on

static void check_coords(rk_context_t *ctx, rk_function_t *fn, rk_dim3_t grid,
                         rk_dim3_t block) {
  uint32_t nx = grid.x * block.x, ny = grid.y * block.y, nz = grid.z * block.z;
  size_t count = (size_t)nx * ny * nz * 3;
  uint32_t *out = malloc(count * sizeof *out);
  memset(out, 0xFF, count * sizeof *out);
  rk_devptr_t d = cts_alloc(ctx, count * sizeof *out, out);
  if (!d) {
    free(out);
    return;
  }
  rk_arg_t arg = rk_arg_ptr(d);
  CHECK_OK(rk_function_launch(fn, grid, block, 0, NULL, &arg, 1));
  CHECK_OK(rk_context_synchronize(ctx));
  CHECK_OK(rk_context_copy_to_host(ctx, out, d, count * sizeof *out));
  const uint32_t dims = block.x | block.y << 4 | block.z << 8 | grid.x << 12 |
                        grid.y << 16 | grid.z << 20;
  int bad = 0;
  for (uint32_t z = 0; z < nz; ++z)
    for (uint32_t y = 0; y < ny; ++y)
      for (uint32_t x = 0; x < nx && bad < 5; ++x) {
        size_t i = ((size_t)z * ny + y) * nx + x;
        uint32_t ids = x % block.x | (y % block.y) << 4 | (z % block.z) << 8 |
                       (x / block.x) << 12 | (y / block.y) << 16 |
                       (z / block.z) << 20;
        uint32_t global = x | y << 8 | z << 16;
        bool ok = out[3 * i] == ids && out[3 * i + 1] == dims &&
                  out[3 * i + 2] == global;
        if (!CHECK(ok,
                   "grid (%u,%u,%u) block (%u,%u,%u): element (%u,%u,%u) holds "
                   "ids 0x%06x dims 0x%06x global 0x%06x, expected 0x%06x "
                   "0x%06x 0x%06x",
                   grid.x, grid.y, grid.z, block.x, block.y, block.z, x, y, z,
                   out[3 * i], out[3 * i + 1], out[3 * i + 2], ids, dims,
                   global))
          ++bad;
      }
  rk_context_free(ctx, d);
  free(out);
}

void cts_launch_3d_builtins(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "coords.c", kCoordsSource);
  rk_function_t *fn = cts_function(mod, "coords");
  if (!fn) return;
  /* Every dimension differs from the others, so a swapped axis shows. */
  check_coords(ctx, fn, rk_dim3(3, 2, 4), rk_dim3(4, 3, 2));
  check_coords(ctx, fn, rk_dim3(2, 5, 1), rk_dim3(8, 1, 3));
  check_coords(ctx, fn, rk_dim3(1, 1, 7), rk_dim3(1, 6, 1));
}

/* ---- Every argument kind ------------------------------------------------ */

typedef struct cts_mixed {
  int a;
  float b;
  double c;
} cts_mixed_t;

typedef struct cts_triple {
  uint32_t x, y, z;
} cts_triple_t;

typedef struct cts_mixed32 {
  int a;
  float b;
  uint32_t c;
} cts_mixed32_t;

// clang-format off
static const char kEchoSource[] = KSRC(
    typedef struct cts_mixed { int a; float b; double c; } cts_mixed_t;
    typedef struct cts_triple { uint32_t x, y, z; } cts_triple_t;
    RK_KERNEL void echo(int a, unsigned b, int64_t c, uint64_t d, float e,
                        double f, const int *g, cts_mixed_t s, int64_t *oi,
                        cts_triple_t t, uint64_t *ou, double *od, float *of) {
      if (rk_global_idx_x() != 0) return;
      oi[0] = a;
      oi[1] = c;
      oi[2] = g[0];
      oi[3] = g[1];
      oi[4] = s.a;
      ou[0] = b;
      ou[1] = d;
      ou[2] = t.x;
      ou[3] = t.y;
      ou[4] = t.z;
      od[0] = f;
      od[1] = s.c;
      of[0] = e;
      of[1] = s.b;
    });

/* Every kind but i64, u64 and f64, for devices without 64-bit types: the
 * same values, pointer and struct arguments (a 12-byte struct mixing int,
 * float and unsigned), the same read-after-launch checks. */
static const char kEchoSource32[] = KSRC(
    typedef struct cts_mixed32 { int a; float b; uint32_t c; } cts_mixed32_t;
    typedef struct cts_triple { uint32_t x, y, z; } cts_triple_t;
    RK_KERNEL void echo(int a, unsigned b, float e, const int *g,
                        cts_mixed32_t s, int *oi, cts_triple_t t,
                        uint32_t *ou, float *of) {
      if (rk_global_idx_x() != 0) return;
      oi[0] = a;
      oi[1] = g[0];
      oi[2] = g[1];
      oi[3] = s.a;
      ou[0] = b;
      ou[1] = s.c;
      ou[2] = t.x;
      ou[3] = t.y;
      ou[4] = t.z;
      of[0] = e;
      of[1] = s.b;
    });
// clang-format on

static void all_arg_kinds_32(rk_context_t *ctx) {
  const int32_t a = -123456789;
  const uint32_t b = 0xFEDCBA98u;
  const float e = 1.1f; /* needs every mantissa bit */
  const int g[2] = {42, -42};
  cts_mixed32_t s = {-7, 2.5f, 0xC0FFEE01u};
  cts_triple_t t = {0xDEADBEEFu, 7u, 0x80000000u};

  rk_module_t *mod = cts_compile(ctx, "echo.c", kEchoSource32);
  rk_function_t *fn = cts_function(mod, "echo");
  rk_devptr_t dg = cts_alloc(ctx, sizeof g, g);
  rk_devptr_t doi = cts_alloc(ctx, 4 * sizeof(int32_t), NULL);
  rk_devptr_t dou = cts_alloc(ctx, 5 * sizeof(uint32_t), NULL);
  rk_devptr_t dof = cts_alloc(ctx, 2 * sizeof(float), NULL);
  rk_stream_t *st = NULL;
  if (fn && dg && doi && dou && dof &&
      CHECK_OK(rk_context_create_stream(ctx, &st))) {
    rk_arg_t args[] = {rk_arg_i32(a),
                       rk_arg_u32(b),
                       rk_arg_f32(e),
                       rk_arg_ptr(dg),
                       rk_arg_struct(&s, sizeof s),
                       rk_arg_ptr(doi),
                       rk_arg_struct(&t, sizeof t),
                       rk_arg_ptr(dou),
                       rk_arg_ptr(dof)};
    /* Asynchronous on a stream: struct arguments are copied at launch. */
    CHECK_OK(rk_function_launch(fn, rk_dim3(2, 1, 1), rk_dim3(32, 1, 1), 0, st,
                                args, sizeof args / sizeof args[0]));
    s.a = 999;
    s.c = 3u;
    t.y = 12345;
    CHECK_OK(rk_stream_synchronize(st));

    int32_t oi[4];
    uint32_t ou[5];
    float of[2];
    CHECK_OK(rk_context_copy_to_host(ctx, oi, doi, sizeof oi));
    CHECK_OK(rk_context_copy_to_host(ctx, ou, dou, sizeof ou));
    CHECK_OK(rk_context_copy_to_host(ctx, of, dof, sizeof of));
    /* Values pass through unchanged, so all comparisons are exact. */
    CHECK(oi[0] == a, "i32: %d", oi[0]);
    CHECK(ou[0] == b, "u32: 0x%x", ou[0]);
    CHECK(of[0] == e, "f32: %.9g", of[0]);
    CHECK(oi[1] == 42 && oi[2] == -42, "ptr: g[0..1] = %d, %d", oi[1], oi[2]);
    CHECK(oi[3] == -7, "struct .a: %d (999: read after launch)", oi[3]);
    CHECK(of[1] == 2.5f, "struct .b: %g", of[1]);
    CHECK(ou[1] == 0xC0FFEE01u, "struct .c: 0x%x (3: read after launch)",
          ou[1]);
    CHECK(ou[2] == 0xDEADBEEFu && ou[3] == 7u && ou[4] == 0x80000000u,
          "12-byte struct: %x %u %x", ou[2], ou[3], ou[4]);
    CHECK_OK(rk_stream_destroy(st));
  }
  if (dg) rk_context_free(ctx, dg);
  if (doi) rk_context_free(ctx, doi);
  if (dou) rk_context_free(ctx, dou);
  if (dof) rk_context_free(ctx, dof);
}

void cts_launch_all_arg_kinds(rk_context_t *ctx) {
  if (!cts_has_64bit()) {
    cts_not_checked("launch_all_arg_kinds",
                    "i64, u64 and f64 arguments and a struct with a double");
    all_arg_kinds_32(ctx);
    return;
  }
  const int32_t a = -123456789;
  const uint32_t b = 0xFEDCBA98u;
  const int64_t c = -0x123456789ABCLL;
  const uint64_t d = 0xF123456789ABCDEFull;
  const float e = 1.1f; /* needs every mantissa bit */
  const double f = 0.1; /* likewise, in double */
  const int g[2] = {42, -42};
  cts_mixed_t s = {-7, 2.5f, 1e-300};
  cts_triple_t t = {0xDEADBEEFu, 7u, 0x80000000u};

  rk_module_t *mod = cts_compile(ctx, "echo.c", kEchoSource);
  rk_function_t *fn = cts_function(mod, "echo");
  rk_devptr_t dg = cts_alloc(ctx, sizeof g, g);
  rk_devptr_t doi = cts_alloc(ctx, 5 * sizeof(int64_t), NULL);
  rk_devptr_t dou = cts_alloc(ctx, 5 * sizeof(uint64_t), NULL);
  rk_devptr_t dod = cts_alloc(ctx, 2 * sizeof(double), NULL);
  rk_devptr_t dof = cts_alloc(ctx, 2 * sizeof(float), NULL);
  rk_stream_t *st = NULL;
  if (!fn || !dg || !doi || !dou || !dod || !dof ||
      !CHECK_OK(rk_context_create_stream(ctx, &st)))
    return;
  rk_arg_t args[] = {rk_arg_i32(a),   rk_arg_u32(b),
                     rk_arg_i64(c),   rk_arg_u64(d),
                     rk_arg_f32(e),   rk_arg_f64(f),
                     rk_arg_ptr(dg),  rk_arg_struct(&s, sizeof s),
                     rk_arg_ptr(doi), rk_arg_struct(&t, sizeof t),
                     rk_arg_ptr(dou), rk_arg_ptr(dod),
                     rk_arg_ptr(dof)};
  /* On a stream, so the launch is asynchronous: struct arguments are copied
   * at launch, so changing them right after must not matter. */
  CHECK_OK(rk_function_launch(fn, rk_dim3(2, 1, 1), rk_dim3(32, 1, 1), 0, st,
                              args, sizeof args / sizeof args[0]));
  s.a = 999;
  s.c = 3.0;
  t.y = 12345;
  CHECK_OK(rk_stream_synchronize(st));

  int64_t oi[5];
  uint64_t ou[5];
  double od[2];
  float of[2];
  CHECK_OK(rk_context_copy_to_host(ctx, oi, doi, sizeof oi));
  CHECK_OK(rk_context_copy_to_host(ctx, ou, dou, sizeof ou));
  CHECK_OK(rk_context_copy_to_host(ctx, od, dod, sizeof od));
  CHECK_OK(rk_context_copy_to_host(ctx, of, dof, sizeof of));
  /* Values pass through unchanged, so all comparisons are exact. */
  CHECK(oi[0] == a, "i32: %lld", (long long)oi[0]);
  CHECK(ou[0] == b, "u32: 0x%llx", (unsigned long long)ou[0]);
  CHECK(oi[1] == c, "i64: %lld", (long long)oi[1]);
  CHECK(ou[1] == d, "u64: 0x%llx", (unsigned long long)ou[1]);
  CHECK(of[0] == e, "f32: %.9g", of[0]);
  CHECK(od[0] == f, "f64: %.17g", od[0]);
  CHECK(oi[2] == 42 && oi[3] == -42, "ptr: g[0..1] = %lld, %lld",
        (long long)oi[2], (long long)oi[3]);
  CHECK(oi[4] == -7, "struct .a: %lld (999: read after launch)",
        (long long)oi[4]);
  CHECK(of[1] == 2.5f, "struct .b: %g", of[1]);
  CHECK(od[1] == 1e-300, "struct .c: %g (3: read after launch)", od[1]);
  CHECK(ou[2] == 0xDEADBEEFu && ou[3] == 7u && ou[4] == 0x80000000u,
        "12-byte struct: %llx %llu %llx", (unsigned long long)ou[2],
        (unsigned long long)ou[3], (unsigned long long)ou[4]);
  CHECK_OK(rk_stream_destroy(st));
  rk_context_free(ctx, dg);
  rk_context_free(ctx, doi);
  rk_context_free(ctx, dou);
  rk_context_free(ctx, dod);
  rk_context_free(ctx, dof);
}

/* ---- Default-stream ordering ------------------------------------------- */

// clang-format off
static const char kStepSource[] = KSRC(
    RK_KERNEL void add_one(int n, int *x) {
      int i = (int)rk_global_idx_x();
      if (i < n) x[i] += 1;
    }
    RK_KERNEL void twice(int n, int *x) {
      int i = (int)rk_global_idx_x();
      if (i < n) x[i] *= 2;
    });
// clang-format on

/* Launches and copies on the NULL stream happen in the order issued, and a
 * synchronous copy sees all work queued before it without an explicit
 * synchronize. */
void cts_launch_default_stream_order(rk_context_t *ctx) {
  enum { kN = 5000, kRounds = 6 };
  int *h = malloc(kN * sizeof *h);
  for (int i = 0; i < kN; ++i) h[i] = i - 2500;
  rk_module_t *mod = cts_compile(ctx, "steps.c", kStepSource);
  rk_function_t *inc = cts_function(mod, "add_one");
  rk_function_t *dbl = cts_function(mod, "twice");
  rk_devptr_t d = cts_alloc(ctx, kN * sizeof *h, h);
  if (inc && dbl && d) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_ptr(d)};
    rk_dim3_t grid = rk_dim3(cts_blocks(kN, 128), 1, 1);
    for (int r = 0; r < kRounds; ++r) {
      CHECK_OK(
          rk_function_launch(inc, grid, rk_dim3(128, 1, 1), 0, NULL, args, 2));
      CHECK_OK(
          rk_function_launch(dbl, grid, rk_dim3(128, 1, 1), 0, NULL, args, 2));
    }
    int *out = malloc(kN * sizeof *out);
    CHECK_OK(rk_context_copy_to_host(ctx, out, d, kN * sizeof *out));
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      int want = i - 2500;
      for (int r = 0; r < kRounds; ++r) want = (want + 1) * 2;
      if (!CHECK(out[i] == want, "x[%d] = %d, expected %d", i, out[i], want))
        ++bad;
    }
    free(out);
  }
  if (d) rk_context_free(ctx, d);
  free(h);
}
