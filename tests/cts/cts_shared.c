/* CTS: block-shared memory and rk_sync_threads(). Each kernel here gives a
 * wrong answer if barriers are not honoured (a thread reads a shared slot
 * that another thread of its block writes before the barrier). */
#include <stdlib.h>
#include <string.h>

#include "cts.h"

/* ---- Tree reduction ----------------------------------------------------- */

// clang-format off
static const char kReduceSource[] = KSRC(
    RK_KERNEL void block_sum(int n, const int *in, int *out) {
      RK_SHARED int sh[256];
      uint32_t t = rk_thread_idx_x();
      uint32_t i = rk_global_idx_x();
      sh[t] = i < (uint32_t)n ? in[i] : 0;
      rk_sync_threads();
      for (uint32_t s = rk_block_dim_x() / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        rk_sync_threads();
      }
      if (t == 0) out[rk_block_idx_x()] = sh[0];
    });
// clang-format on

void cts_shared_block_reduction(rk_context_t *ctx) {
  enum { kBlock = 256, kBlocks = 300, kN = kBlocks * kBlock - 100 };
  int *in = malloc(kN * sizeof *in), sums[kBlocks];
  uint32_t seed = 1;
  for (int i = 0; i < kN; ++i) in[i] = (int)(cts_rand(&seed) % 2001) - 1000;
  rk_module_t *mod = cts_compile(ctx, "reduce.c", kReduceSource);
  rk_function_t *fn = cts_function(mod, "block_sum");
  rk_devptr_t din = cts_alloc(ctx, kN * sizeof *in, in);
  rk_devptr_t dout = cts_alloc(ctx, sizeof sums, NULL);
  if (fn && din && dout) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_ptr(din), rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(kBlocks, 1, 1),
                                rk_dim3(kBlock, 1, 1), 0, NULL, args, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, sums, dout, sizeof sums));
    int bad = 0;
    for (int b = 0; b < kBlocks && bad < 5; ++b) {
      int want = 0;
      for (int i = b * kBlock; i < (b + 1) * kBlock && i < kN; ++i)
        want += in[i];
      if (!CHECK(sums[b] == want, "block %d sum %d, expected %d", b, sums[b],
                 want))
        ++bad;
    }
  }
  if (din) rk_context_free(ctx, din);
  if (dout) rk_context_free(ctx, dout);
  free(in);
}

/* ---- Reversal through shared memory ------------------------------------ */

// clang-format off
static const char kReverseSource[] = KSRC(
    RK_KERNEL void reverse(const int *in, int *out) {
      RK_SHARED int sh[128];
      uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();
      uint32_t base = rk_block_idx_x() * b;
      sh[t] = in[base + t];
      rk_sync_threads();
      out[base + t] = sh[b - 1 - t];
    });
// clang-format on

void cts_shared_reversal_needs_barrier(rk_context_t *ctx) {
  enum { kBlock = 128, kBlocks = 50, kN = kBlock * kBlocks };
  int *in = malloc(kN * sizeof *in), *out = malloc(kN * sizeof *out);
  for (int i = 0; i < kN; ++i) in[i] = i * 7 + 3;
  rk_module_t *mod = cts_compile(ctx, "reverse.c", kReverseSource);
  rk_function_t *fn = cts_function(mod, "reverse");
  rk_devptr_t din = cts_alloc(ctx, kN * sizeof *in, in);
  rk_devptr_t dout = cts_alloc(ctx, kN * sizeof *out, NULL);
  if (fn && din && dout) {
    rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(kBlocks, 1, 1),
                                rk_dim3(kBlock, 1, 1), 0, NULL, args, 2));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, kN * sizeof *out));
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      int b = i / kBlock, t = i % kBlock;
      int want = in[b * kBlock + kBlock - 1 - t];
      if (!CHECK(out[i] == want,
                 "out[%d] = %d, expected %d (barrier not honoured?)", i, out[i],
                 want))
        ++bad;
    }
  }
  if (din) rk_context_free(ctx, din);
  if (dout) rk_context_free(ctx, dout);
  free(in);
  free(out);
}

/* ---- 2D shared tile transpose ------------------------------------------ */

// clang-format off
static const char kTileSource[] = KSRC(
    RK_KERNEL void tile_transpose(int w, int h, const float *in, float *out) {
      RK_SHARED float tile[16][17];
      uint32_t tx = rk_thread_idx_x(), ty = rk_thread_idx_y();
      uint32_t x = rk_block_idx_x() * 16 + tx, y = rk_block_idx_y() * 16 + ty;
      if (x < (uint32_t)w && y < (uint32_t)h) tile[ty][tx] = in[y * w + x];
      rk_sync_threads();
      uint32_t ox = rk_block_idx_y() * 16 + tx;
      uint32_t oy = rk_block_idx_x() * 16 + ty;
      if (ox < (uint32_t)h && oy < (uint32_t)w) out[oy * h + ox] = tile[tx][ty];
    });
// clang-format on

void cts_shared_tile_transpose_2d(rk_context_t *ctx) {
  enum { kW = 50, kH = 35 };
  float *in = malloc(kW * kH * sizeof *in),
        *out = malloc(kW * kH * sizeof *out);
  for (int i = 0; i < kW * kH; ++i) in[i] = (float)(i * 3 + 1);
  for (int i = 0; i < kW * kH; ++i) out[i] = -1.0f;
  rk_module_t *mod = cts_compile(ctx, "tile.c", kTileSource);
  rk_function_t *fn = cts_function(mod, "tile_transpose");
  rk_devptr_t din = cts_alloc(ctx, kW * kH * sizeof *in, in);
  rk_devptr_t dout = cts_alloc(ctx, kW * kH * sizeof *out, out);
  if (fn && din && dout) {
    rk_arg_t args[] = {rk_arg_i32(kW), rk_arg_i32(kH), rk_arg_ptr(din),
                       rk_arg_ptr(dout)};
    CHECK_OK(rk_function_launch(
        fn, rk_dim3(cts_blocks(kW, 16), cts_blocks(kH, 16), 1),
        rk_dim3(16, 16, 1), 0, NULL, args, 4));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, kW * kH * sizeof *out));
    int bad = 0;
    /* Integers below 2^24: exact in float. */
    for (int x = 0; x < kW && bad < 5; ++x)
      for (int y = 0; y < kH && bad < 5; ++y)
        if (!CHECK(out[x * kH + y] == in[y * kW + x],
                   "out[%d][%d] = %g, expected %g", x, y, out[x * kH + y],
                   in[y * kW + x]))
          ++bad;
  }
  if (din) rk_context_free(ctx, din);
  if (dout) rk_context_free(ctx, dout);
  free(in);
  free(out);
}

/* ---- Dynamic shared memory --------------------------------------------- */

/* Two arrays of blockDim ints in the dynamic area: the first reverses the
 * block's input, the second rotates it by one. */
// clang-format off
static const char kDynSource[] = KSRC(
    RK_KERNEL void dyn_shuffle(const int *in, int *rev, int *rot) {
      int *sh = (int *)rk_dynamic_shared();
      uint32_t t = rk_thread_idx_x(), b = rk_block_dim_x();
      uint32_t base = rk_block_idx_x() * b;
      sh[t] = in[base + t];
      sh[b + t] = in[base + t] * 3;
      rk_sync_threads();
      rev[base + t] = sh[b - 1 - t];
      rot[base + t] = sh[b + (t + 1) % b];
    });
// clang-format on

/* Runs and checks one launch of `blocks` blocks of `block` threads. */
static void dyn_case(rk_context_t *ctx, rk_function_t *fn, uint32_t block,
                     uint32_t blocks) {
  size_t n = (size_t)block * blocks;
  int *in = malloc(n * sizeof *in), *rev = malloc(n * sizeof *rev);
  int *rot = malloc(n * sizeof *rot);
  for (size_t i = 0; i < n; ++i) in[i] = (int)(i * 13 + block);
  rk_devptr_t din = cts_alloc(ctx, n * sizeof *in, in);
  rk_devptr_t drev = cts_alloc(ctx, n * sizeof *rev, NULL);
  rk_devptr_t drot = cts_alloc(ctx, n * sizeof *rot, NULL);
  if (din && drev && drot) {
    rk_arg_t args[] = {rk_arg_ptr(din), rk_arg_ptr(drev), rk_arg_ptr(drot)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(blocks, 1, 1), rk_dim3(block, 1, 1),
                                2 * block * sizeof(int), NULL, args, 3));
  }
  if (din && drev && drot) {
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, rev, drev, n * sizeof *rev));
    CHECK_OK(rk_context_copy_to_host(ctx, rot, drot, n * sizeof *rot));
    int bad = 0;
    for (size_t i = 0; i < n && bad < 5; ++i) {
      size_t b = i / block, t = i % block;
      int want_rev = in[b * block + block - 1 - t];
      int want_rot = in[b * block + (t + 1) % block] * 3;
      if (!CHECK(rev[i] == want_rev && rot[i] == want_rot,
                 "block %u: element %zu = %d/%d, expected %d/%d", block, i,
                 rev[i], rot[i], want_rev, want_rot))
        ++bad;
    }
  }
  if (din) rk_context_free(ctx, din);
  if (drev) rk_context_free(ctx, drev);
  if (drot) rk_context_free(ctx, drot);
  free(in);
  free(rev);
  free(rot);
}

void cts_shared_dynamic(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "dynshared.c", kDynSource);
  rk_function_t *fn = cts_function(mod, "dyn_shuffle");
  if (!fn) return;
  /* The largest block up to 1024 the kernel allows (NVIDIA's OpenCL allows
   * 256 threads for this one on an H100). */
  const uint32_t kmax = rk_function_max_block_threads(fn);
  const uint32_t big = kmax < 1024 ? kmax : 1024;
  dyn_case(ctx, fn, big < 200 ? big : 200, 40); /* not a power of two */
  dyn_case(ctx, fn, big < 64 ? big : 64,
           7); /* a smaller area after a larger one */
  dyn_case(ctx, fn, big, 3);
}
