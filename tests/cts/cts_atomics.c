/* CTS: 32-bit atomics on global and block-shared memory, from many blocks
 * at once. All results are integers, compared exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

enum { kBins = 64 };

/* Skewed input: half the values land in bin 0, so many threads contend. */
static int *histogram_input(int n) {
  int *in = malloc((size_t)n * sizeof *in);
  uint32_t seed = 12345;
  for (int i = 0; i < n; ++i) {
    uint32_t r = cts_rand(&seed);
    in[i] = (r & 1) ? 0 : (int)((r >> 1) % kBins);
  }
  return in;
}

/* Launches `kernel`(n, in, hist) over a grid-stride loop and compares the
 * histogram with the host's. */
static void run_histogram(rk_context_t *ctx, rk_function_t *fn, int n,
                          const int *in) {
  int hist[kBins], want[kBins];
  memset(hist, 0, sizeof hist);
  memset(want, 0, sizeof want);
  for (int i = 0; i < n; ++i) want[in[i]]++;
  rk_devptr_t din = cts_alloc(ctx, (size_t)n * sizeof *in, in);
  rk_devptr_t dh = cts_alloc(ctx, sizeof hist, hist);
  if (din && dh) {
    rk_arg_t args[] = {rk_arg_i32(n), rk_arg_ptr(din), rk_arg_ptr(dh)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(96, 1, 1), rk_dim3(128, 1, 1), 0,
                                NULL, args, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, hist, dh, sizeof hist));
    for (int b = 0; b < kBins; ++b)
      CHECK(hist[b] == want[b], "%s: bin %d = %d, expected %d",
            rk_function_name(fn), b, hist[b], want[b]);
  }
  if (din) rk_context_free(ctx, din);
  if (dh) rk_context_free(ctx, dh);
}

// clang-format off
static const char kHistogramSource[] = KSRC(
    RK_KERNEL void histogram(int n, const int *in, int *hist) {
      uint32_t stride = rk_grid_dim_x() * rk_block_dim_x();
      for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += stride)
        rk_atomic_add_i32(&hist[in[i]], 1);
    }
    RK_KERNEL void shared_histogram(int n, const int *in, int *hist) {
      RK_SHARED int local[64];
      uint32_t t = rk_thread_idx_x(), bd = rk_block_dim_x();
      for (uint32_t b = t; b < 64; b += bd) local[b] = 0;
      rk_sync_threads();
      uint32_t stride = rk_grid_dim_x() * bd;
      for (uint32_t i = rk_global_idx_x(); i < (uint32_t)n; i += stride)
        rk_atomic_add_i32(&local[in[i]], 1);
      rk_sync_threads();
      for (uint32_t b = t; b < 64; b += bd)
        if (local[b]) rk_atomic_add_i32(&hist[b], local[b]);
    });
// clang-format on

void cts_atomic_histogram(rk_context_t *ctx) {
  enum { kN = 1 << 18 };
  int *in = histogram_input(kN);
  rk_module_t *mod = cts_compile(ctx, "histogram.c", kHistogramSource);
  rk_function_t *fn = cts_function(mod, "histogram");
  if (fn) run_histogram(ctx, fn, kN, in);
  free(in);
}

void cts_atomic_shared_histogram(rk_context_t *ctx) {
  enum { kN = (1 << 18) + 17 };
  int *in = histogram_input(kN);
  rk_module_t *mod = cts_compile(ctx, "histogram.c", kHistogramSource);
  rk_function_t *fn = cts_function(mod, "shared_histogram");
  if (fn) run_histogram(ctx, fn, kN, in);
  free(in);
}

/* ---- Heavy contention on one address ----------------------------------- */

/* Every thread adds to the same two counters many times, so blocks running
 * at the same time on different cores or SMs collide constantly; a lost
 * update shows in the totals. */
// clang-format off
static const char kHammerSource[] = KSRC(
    RK_KERNEL void hammer(int iters, int *counter, uint32_t *down) {
      for (int k = 0; k < iters; ++k) {
        rk_atomic_add_i32(counter, 1);
        rk_atomic_sub_u32(down, 3u);
      }
    });
// clang-format on

void cts_atomic_contention(rk_context_t *ctx) {
  enum { kBlocks = 64, kThreads = 128, kIters = 300 };
  int counter = 0;
  uint32_t down = 0xFFFFFFFFu;
  rk_module_t *mod = cts_compile(ctx, "hammer.c", kHammerSource);
  rk_function_t *fn = cts_function(mod, "hammer");
  rk_devptr_t dc = cts_alloc(ctx, sizeof counter, &counter);
  rk_devptr_t dd = cts_alloc(ctx, sizeof down, &down);
  if (fn && dc && dd) {
    rk_arg_t args[] = {rk_arg_i32(kIters), rk_arg_ptr(dc), rk_arg_ptr(dd)};
    for (int round = 0; round < 3; ++round)
      CHECK_OK(rk_function_launch(fn, rk_dim3(kBlocks, 1, 1),
                                  rk_dim3(kThreads, 1, 1), 0, NULL, args, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, &counter, dc, sizeof counter));
    CHECK_OK(rk_context_copy_to_host(ctx, &down, dd, sizeof down));
    const int total = 3 * kBlocks * kThreads * kIters;
    CHECK(counter == total, "counter %d, expected %d (%d updates lost)",
          counter, total, total - counter);
    CHECK(down == 0xFFFFFFFFu - 3u * (uint32_t)total, "down %u, expected %u",
          down, 0xFFFFFFFFu - 3u * (uint32_t)total);
  }
  if (dc) rk_context_free(ctx, dc);
  if (dd) rk_context_free(ctx, dd);
}

/* ---- Min and max -------------------------------------------------------- */

// clang-format off
static const char kMinMaxSource[] = KSRC(
    RK_KERNEL void minmax(int n, const int *in, const uint32_t *uin, int *out,
                          uint32_t *uout) {
      uint32_t i = rk_global_idx_x();
      if (i < (uint32_t)n) {
        rk_atomic_min_i32(&out[0], in[i]);
        rk_atomic_max_i32(&out[1], in[i]);
        rk_atomic_min_u32(&uout[0], uin[i]);
        rk_atomic_max_u32(&uout[1], uin[i]);
      }
    });
// clang-format on

void cts_atomic_min_max(rk_context_t *ctx) {
  enum { kN = 200000 };
  int *in = malloc(kN * sizeof *in);
  uint32_t *uin = malloc(kN * sizeof *uin);
  uint32_t seed = 99;
  int want[2] = {INT32_MAX, INT32_MIN};
  uint32_t uwant[2] = {UINT32_MAX, 0};
  for (int i = 0; i < kN; ++i) {
    /* Both signs, and unsigned values above 2^31 (a signed comparison
     * would pick the wrong ones). */
    in[i] = (int)(cts_rand(&seed) % 2000001) - 1000000;
    uin[i] = cts_rand(&seed) * 256u + 7u;
    if (in[i] < want[0]) want[0] = in[i];
    if (in[i] > want[1]) want[1] = in[i];
    if (uin[i] < uwant[0]) uwant[0] = uin[i];
    if (uin[i] > uwant[1]) uwant[1] = uin[i];
  }
  int out[2] = {INT32_MAX, INT32_MIN};
  uint32_t uout[2] = {UINT32_MAX, 0};
  rk_module_t *mod = cts_compile(ctx, "minmax.c", kMinMaxSource);
  rk_function_t *fn = cts_function(mod, "minmax");
  rk_devptr_t din = cts_alloc(ctx, kN * sizeof *in, in);
  rk_devptr_t duin = cts_alloc(ctx, kN * sizeof *uin, uin);
  rk_devptr_t dout = cts_alloc(ctx, sizeof out, out);
  rk_devptr_t duout = cts_alloc(ctx, sizeof uout, uout);
  if (fn && din && duin && dout && duout) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_ptr(din), rk_arg_ptr(duin),
                       rk_arg_ptr(dout), rk_arg_ptr(duout)};
    CHECK_OK(rk_function_launch(fn, rk_dim3(cts_blocks(kN, 256), 1, 1),
                                rk_dim3(256, 1, 1), 0, NULL, args, 5));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out, dout, sizeof out));
    CHECK_OK(rk_context_copy_to_host(ctx, uout, duout, sizeof uout));
    CHECK(out[0] == want[0], "min_i32 %d, expected %d", out[0], want[0]);
    CHECK(out[1] == want[1], "max_i32 %d, expected %d", out[1], want[1]);
    CHECK(uout[0] == uwant[0], "min_u32 %u, expected %u", uout[0], uwant[0]);
    CHECK(uout[1] == uwant[1], "max_u32 %u, expected %u", uout[1], uwant[1]);
  }
  if (din) rk_context_free(ctx, din);
  if (duin) rk_context_free(ctx, duin);
  if (dout) rk_context_free(ctx, dout);
  if (duout) rk_context_free(ctx, duout);
  free(in);
  free(uin);
}

/* ---- Returned old values, and the other operations --------------------- */

// clang-format off
static const char kTicketSource[] = KSRC(
    RK_KERNEL void tickets(int n, int *counter, int *ticket) {
      uint32_t i = rk_global_idx_x();
      if (i < (uint32_t)n) ticket[i] = rk_atomic_add_i32(counter, 1);
    }
    /* bits[0] |= bit, bits[1] &= ~bit, bits[2] ^= bit, bits[3] -= 1,
     * bits[4] += 3 through a compare-and-swap loop, bits[5] = i (exchange;
     * the returned old values are summed into bits[6]). */
    RK_KERNEL void bitops(int n, uint32_t *bits) {
      uint32_t i = rk_global_idx_x();
      if (i >= (uint32_t)n) return;
      uint32_t bit = 1u << (i % 32);
      rk_atomic_or_u32(&bits[0], bit);
      rk_atomic_and_u32(&bits[1], ~bit);
      rk_atomic_xor_u32(&bits[2], bit);
      rk_atomic_sub_u32(&bits[3], 1u);
      uint32_t old = bits[4];
      uint32_t seen = rk_atomic_cas_u32(&bits[4], old, old + 3u);
      while (seen != old) {
        old = seen;
        seen = rk_atomic_cas_u32(&bits[4], old, old + 3u);
      }
      uint32_t prev = rk_atomic_exch_u32(&bits[5], i + 1u);
      rk_atomic_add_u32(&bits[6], prev);
    });
// clang-format on

void cts_atomic_tickets(rk_context_t *ctx) {
  enum { kN = 32 * 1000 + 5 };
  int *ticket = malloc(kN * sizeof *ticket);
  int counter = 0;
  rk_module_t *mod = cts_compile(ctx, "tickets.c", kTicketSource);
  rk_function_t *fn = cts_function(mod, "tickets");
  rk_function_t *ops = cts_function(mod, "bitops");
  rk_devptr_t dc = cts_alloc(ctx, sizeof counter, &counter);
  rk_devptr_t dt = cts_alloc(ctx, kN * sizeof *ticket, NULL);
  uint32_t bits[7] = {0, 0xFFFFFFFFu, 0, 1000000u, 5u, 0u, 0u};
  rk_devptr_t db = cts_alloc(ctx, sizeof bits, bits);
  if (fn && ops && dc && dt && db) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_ptr(dc), rk_arg_ptr(dt)};
    rk_dim3_t grid = rk_dim3(cts_blocks(kN, 128), 1, 1);
    CHECK_OK(
        rk_function_launch(fn, grid, rk_dim3(128, 1, 1), 0, NULL, args, 3));
    rk_arg_t bargs[] = {rk_arg_i32(kN), rk_arg_ptr(db)};
    CHECK_OK(
        rk_function_launch(ops, grid, rk_dim3(128, 1, 1), 0, NULL, bargs, 2));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, &counter, dc, sizeof counter));
    CHECK_OK(rk_context_copy_to_host(ctx, ticket, dt, kN * sizeof *ticket));
    CHECK_OK(rk_context_copy_to_host(ctx, bits, db, sizeof bits));
    CHECK(counter == kN, "counter = %d, expected %d", counter, kN);
    /* The returned old values are a permutation of 0..n-1. */
    char *seen = calloc(kN, 1);
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      bool ok = ticket[i] >= 0 && ticket[i] < kN && !seen[ticket[i]];
      if (!CHECK(ok, "ticket[%d] = %d is out of range or duplicated", i,
                 ticket[i]))
        ++bad;
      else
        seen[ticket[i]] = 1;
    }
    free(seen);
    /* kN = 32*1000 + 5: bits 0..4 are toggled 1001 times, the rest 1000. */
    CHECK(bits[0] == 0xFFFFFFFFu, "or: 0x%08x", bits[0]);
    CHECK(bits[1] == 0, "and: 0x%08x", bits[1]);
    CHECK(bits[2] == 0x1Fu, "xor: 0x%08x, expected 0x0000001f", bits[2]);
    CHECK(bits[3] == 1000000u - kN, "sub: %u, expected %u", bits[3],
          1000000u - kN);
    CHECK(bits[4] == 5u + 3u * kN, "cas loop: %u, expected %u", bits[4],
          5u + 3u * kN);
    /* Exchange: the values 0 (initial) and 1..n pass through bits[5] once
     * each, so the final value plus all returned old values is their sum. */
    uint32_t total = (uint32_t)((uint64_t)kN * (kN + 1) / 2);
    CHECK(bits[5] >= 1 && bits[5] <= kN, "exch final value %u", bits[5]);
    CHECK(bits[5] + bits[6] == total, "exch: final %u + returned %u != %u",
          bits[5], bits[6], total);
  }
  if (dc) rk_context_free(ctx, dc);
  if (dt) rk_context_free(ctx, dt);
  if (db) rk_context_free(ctx, db);
  free(ticket);
}
