/* The compatibility selector: defaults, setters, every threshold at N-1, N
 * and N+1, with custom parameters and 64-bit extremes, and exact ties
 * decided as batuta decides them, in doubles. */
#define RK_TEST_IMPLEMENTATION
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "rk/select.h"
#include "rk_test.h"

#define SIMD RK_COMPAT_SIMD
#define GPU RK_COMPAT_GPU
#define SCALAR RK_COMPAT_SCALAR

#define CHECK_CHOICE(expr, want)                                     \
  do {                                                               \
    rk_compat_choice_t got_ = (expr);                                \
    CHECK(got_ == (want), "%s gave %s, expected %s", #expr,          \
          rk_compat_choice_name(got_), rk_compat_choice_name(want)); \
  } while (0)

static void test_defaults_and_setters(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  CHECK(s.pcie_bandwidth == 32e9, "bandwidth %g", s.pcie_bandwidth);
  CHECK(s.gpu_flops == 20e12, "gpu %g", s.gpu_flops);
  CHECK(s.dispatch_ratio == 5.0, "ratio %g", s.dispatch_ratio);

  const double bad[] = {0.0, -0.0, -1.0, NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    CHECK_STATUS(rk_compat_set_pcie_bandwidth(&s, bad[i]),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("bandwidth");
    CHECK_STATUS(rk_compat_set_gpu_flops(&s, bad[i]), RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("throughput");
    CHECK_STATUS(rk_compat_set_dispatch_ratio(&s, bad[i]),
                 RK_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("ratio");
  }
  /* Unchanged by the refused values. */
  CHECK(s.pcie_bandwidth == 32e9 && s.gpu_flops == 20e12 &&
            s.dispatch_ratio == 5.0,
        "selector changed by a refused value");
  CHECK_STATUS(rk_compat_set_pcie_bandwidth(NULL, 1.0),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_compat_set_pcie_bandwidth(&s, 1e9));
  CHECK_OK(rk_compat_set_gpu_flops(&s, 1e12));
  CHECK_OK(rk_compat_set_dispatch_ratio(&s, 0.25));
  CHECK(s.pcie_bandwidth == 1e9 && s.gpu_flops == 1e12 &&
            s.dispatch_ratio == 0.25,
        "setters did not store");
  CHECK_OK(rk_compat_set_dispatch_ratio(&s, 1e-300)); /* tiny is positive */

  CHECK(strcmp(rk_compat_choice_name(SCALAR), "Scalar") == 0, "name");
  CHECK(strcmp(rk_compat_choice_name(SIMD), "SIMD") == 0, "name");
  CHECK(strcmp(rk_compat_choice_name(GPU), "GPU") == 0, "name");
  CHECK(strcmp(rk_compat_choice_name((rk_compat_choice_t)9), "unknown") == 0,
        "name");
}

static void test_select_backend(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  /* 1e6 bytes take 1e6 / 32e9 s over PCIe; 5x that is 1.5625e-4 s, which
   * is 3,125,000,000 FLOP at 20e12 FLOP/s: exactly 5x is SIMD. */
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3125000000u), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3124999999u), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3125000001u), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3156250000u), GPU);
  /* One byte more moves the boundary up. */
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000001, 3125000001u), SIMD);
  /* Zeros: no work is never worth a GPU; work with no bytes always is. */
  CHECK_CHOICE(rk_compat_select_backend(&s, 0, 0), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 0, 1), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1, 0), SIMD);
  /* 64-bit extremes. */
  CHECK_CHOICE(rk_compat_select_backend(&s, UINT64_MAX, UINT64_MAX), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1, UINT64_MAX), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, UINT64_MAX, 1), SIMD);
  /* flops = 3125 * bytes is the boundary; near the top of 64 bits the
   * counts round to doubles first, as in batuta: this tie, and one FLOP
   * more (the same double), are GPU. */
  uint64_t bytes = UINT64_MAX / 3125;
  CHECK_CHOICE(rk_compat_select_backend(&s, bytes, bytes * 3125), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, bytes, bytes * 3125 + 1), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, bytes, bytes * 3124), SIMD);

  /* Custom parameters: bw 1e9, gpu 1e12, ratio 2 -> GPU iff flops > 2000 x
   * bytes. */
  CHECK_OK(rk_compat_set_pcie_bandwidth(&s, 1e9));
  CHECK_OK(rk_compat_set_gpu_flops(&s, 1e12));
  CHECK_OK(rk_compat_set_dispatch_ratio(&s, 2.0));
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000, 1999999), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000, 2000000), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000, 2000001), GPU);

  /* A ratio that is not a binary fraction: the double nearest 0.1 is a
   * little above 0.1, so flops = bytes / 10 is not above it. */
  CHECK_OK(rk_compat_set_pcie_bandwidth(&s, 1.0));
  CHECK_OK(rk_compat_set_gpu_flops(&s, 1.0));
  CHECK_OK(rk_compat_set_dispatch_ratio(&s, 0.1));
  CHECK_CHOICE(rk_compat_select_backend(&s, 10, 1), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 10, 2), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, 10000000000u, 1000000000u), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 10000000000u, 1000000001u), GPU);

  /* NULL reads as the defaults. */
  CHECK_CHOICE(rk_compat_select_backend(NULL, 1000000, 3125000000u), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(NULL, 1000000, 3125000001u), GPU);
  /* A field set directly to nonsense reads as its default too. */
  rk_compat_init(&s);
  s.pcie_bandwidth = -1.0;
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3125000000u), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, 1000000, 3125000001u), GPU);
}

/* batuta's rule, written out: each count converted to a double, transfer
 * and compute time divided out, then compute > ratio * transfer. */
static rk_compat_choice_t reference(double bw, double gpu, double ratio,
                                    uint64_t bytes, uint64_t flops) {
  double transfer_s = (double)bytes / bw;
  double compute_s = (double)flops / gpu;
  return compute_s > ratio * transfer_s ? GPU : SIMD;
}

static uint64_t next_random(uint64_t *state) {
  /* xorshift64*: a fixed sequence, so failures repeat. */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545f4914f6cdd1dull;
}

/* Exact ties (flops exactly `ratio` times the transfer time) fall as the
 * rounding of batuta's doubles makes them fall, GPU or SIMD. */
static void test_ties(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  /* 7 bytes take 2.1875e-10 s, 5x that is 1.09375e-9 s, which is exactly
   * 21,875 FLOP at 20e12 FLOP/s; in doubles 5 * (7 / 32e9) rounds below
   * 21875 / 20e12, so batuta picks the GPU. */
  CHECK_CHOICE(rk_compat_select_backend(&s, 7, 21875), GPU);
  CHECK_CHOICE(rk_compat_select_backend(NULL, 7, 21875), GPU);
  CHECK_CHOICE(rk_compat_select_backend(&s, 7, 21874), SIMD);
  /* The published cases of batuta's own tests. */
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 64, 64, 64), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 512, 512, 512), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 2048, 2048, 2048), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 10000, 2), SIMD);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 1000), SCALAR);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 2000000), SIMD);

  /* Random exact ties with the defaults (flops = 3125 bytes) and with
   * other parameters, and their neighbours one FLOP away. */
  static const struct {
    double bw, gpu, ratio;
    uint64_t per_byte; /* flops per byte at the tie */
  } kParams[] = {
      {32e9, 20e12, 5.0, 3125},
      {1e9, 1e12, 2.0, 2000},
      {25e9, 15e12, 4.0, 2400},
      {3e9, 7e12, 3.0, 7000},
  };
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t p = 0; p < sizeof kParams / sizeof kParams[0]; ++p) {
    CHECK_OK(rk_compat_set_pcie_bandwidth(&s, kParams[p].bw));
    CHECK_OK(rk_compat_set_gpu_flops(&s, kParams[p].gpu));
    CHECK_OK(rk_compat_set_dispatch_ratio(&s, kParams[p].ratio));
    int gpu_ties = 0, simd_ties = 0, wrong = 0;
    for (int i = 0; i < 20000; ++i) {
      /* Small and large sizes: up to 2^40 bytes, so flops stays in 64
       * bits. */
      uint64_t r = next_random(&state);
      uint64_t b = i % 2 ? 1 + r % 100000 : 1 + (r >> 24);
      for (int d = -1; d <= 1; ++d) {
        uint64_t f = b * kParams[p].per_byte + (uint64_t)(int64_t)d;
        rk_compat_choice_t want =
            reference(kParams[p].bw, kParams[p].gpu, kParams[p].ratio, b, f);
        rk_compat_choice_t got = rk_compat_select_backend(&s, b, f);
        if (got != want && wrong++ < 5)
          CHECK(false, "params %zu: %llu bytes, %llu flops: %s, batuta %s", p,
                (unsigned long long)b, (unsigned long long)f,
                rk_compat_choice_name(got), rk_compat_choice_name(want));
        if (d == 0) want == GPU ? ++gpu_ties : ++simd_ties;
      }
    }
    CHECK(wrong == 0, "params %zu: %d decisions differ from batuta's", p,
          wrong);
    printf("params %zu: of 20000 exact ties, %d GPU and %d SIMD\n", p, gpu_ties,
           simd_ties);
  }
  /* With the defaults both answers occur, so exact arithmetic (always
   * SIMD on a tie) would fail above. */
  rk_compat_init(&s);
  int gpu_ties = 0;
  for (uint64_t b = 1; b <= 1000; ++b)
    gpu_ties += rk_compat_select_backend(&s, b, 3125 * b) == GPU;
  CHECK(gpu_ties > 0 && gpu_ties < 1000, "%d of 1000 ties GPU", gpu_ties);

  /* The helpers, with sizes whose 64-bit products do not wrap: batuta's
   * own integer expressions, then the same rule. */
  int wrong = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t m = 1 + next_random(&state) % 30000;
    uint64_t n = 1 + next_random(&state) % 30000;
    uint64_t k = 1 + next_random(&state) % 30000;
    if (i % 3 == 0) n = m, k = m; /* square: ties at N = 18750 */
    uint64_t bytes = (m * k + k * n + m * n) * 4, flops = 2 * m * n * k;
    rk_compat_choice_t want = reference(32e9, 20e12, 5.0, bytes, flops);
    rk_compat_choice_t got = rk_compat_select_for_matmul(&s, m, n, k);
    if (got != want && wrong++ < 5)
      CHECK(false, "matmul %llu x %llu x %llu: %s, batuta %s",
            (unsigned long long)m, (unsigned long long)n, (unsigned long long)k,
            rk_compat_choice_name(got), rk_compat_choice_name(want));
    uint64_t len = 1 + next_random(&state) % 100000000;
    uint64_t ops = 37500 + next_random(&state) % 3 - 1; /* ties at 37500 */
    want = reference(32e9, 20e12, 5.0, len * 3 * 4, len * ops);
    got = rk_compat_select_for_vector_op(&s, len, ops);
    if (got != want && wrong++ < 5)
      CHECK(false, "vector op n=%llu ops=%llu: %s, batuta %s",
            (unsigned long long)len, (unsigned long long)ops,
            rk_compat_choice_name(got), rk_compat_choice_name(want));
  }
  CHECK(wrong == 0, "%d helper decisions differ from batuta's", wrong);
}

static void test_matmul(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 64, 64, 64), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 512, 512, 512), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 2048, 2048, 2048), SIMD);
  /* Square N: 2N^3 * 32e9 > 5 * 12N^2 * 20e12  <=>  N > 18750. */
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 18749, 18749, 18749), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 18750, 18750, 18750), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 18751, 18751, 18751), GPU);
  /* Sizes whose products overflow 64 bits: 2mnk = 2^97 would wrap to 0. */
  uint64_t big = (uint64_t)1 << 32;
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, big, big, big), GPU);
  CHECK_CHOICE(
      rk_compat_select_for_matmul(&s, UINT64_MAX, UINT64_MAX, UINT64_MAX), GPU);
  /* A long thin product: bytes ~ 8m, flops 2m. */
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, UINT64_MAX, 1, 1), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, 0, 0, 0), SIMD);
  CHECK_CHOICE(rk_compat_select_for_matmul(&s, UINT64_MAX, 0, UINT64_MAX),
               SIMD); /* no flops */
}

static void test_vector_op(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  /* n * ops * 32e9 > 5 * 12n * 20e12  <=>  ops > 37500, for any n > 0. */
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 1000, 37499), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 1000, 37500), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 1000, 37501), GPU);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, UINT64_MAX, 37500), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, UINT64_MAX, 37501), GPU);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, UINT64_MAX, UINT64_MAX), GPU);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, UINT64_MAX, 1), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 0, UINT64_MAX), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 100000000, 1), SIMD);
  /* Custom: ratio 1, bandwidth 12, gpu 1 -> GPU iff ops > 1. */
  CHECK_OK(rk_compat_set_dispatch_ratio(&s, 1.0));
  CHECK_OK(rk_compat_set_pcie_bandwidth(&s, 12.0));
  CHECK_OK(rk_compat_set_gpu_flops(&s, 1.0));
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 7, 1), SIMD);
  CHECK_CHOICE(rk_compat_select_for_vector_op(&s, 7, 2), GPU);
}

static void test_tables(void) {
  rk_compat_selector_t s;
  rk_compat_init(&s);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 0), SCALAR);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 999999), SCALAR);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 1000000), SCALAR);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 1000001), SIMD);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, UINT64_MAX), SIMD);

  struct {
    rk_complexity_t c;
    uint64_t n;
    rk_compat_choice_t want;
  } cases[] = {
      {RK_COMPLEXITY_LOW, 0, SCALAR},
      {RK_COMPLEXITY_LOW, 999999, SCALAR},
      {RK_COMPLEXITY_LOW, 1000000, SCALAR},
      {RK_COMPLEXITY_LOW, 1000001, SIMD},
      {RK_COMPLEXITY_LOW, UINT64_MAX, SIMD}, /* never GPU */
      {RK_COMPLEXITY_MEDIUM, 0, SCALAR},
      {RK_COMPLEXITY_MEDIUM, 9999, SCALAR},
      {RK_COMPLEXITY_MEDIUM, 10000, SCALAR},
      {RK_COMPLEXITY_MEDIUM, 10001, SIMD},
      {RK_COMPLEXITY_MEDIUM, 99999, SIMD},
      {RK_COMPLEXITY_MEDIUM, 100000, SIMD},
      {RK_COMPLEXITY_MEDIUM, 100001, GPU},
      {RK_COMPLEXITY_MEDIUM, UINT64_MAX, GPU},
      {RK_COMPLEXITY_HIGH, 0, SCALAR},
      {RK_COMPLEXITY_HIGH, 999, SCALAR},
      {RK_COMPLEXITY_HIGH, 1000, SCALAR},
      {RK_COMPLEXITY_HIGH, 1001, SIMD},
      {RK_COMPLEXITY_HIGH, 9999, SIMD},
      {RK_COMPLEXITY_HIGH, 10000, SIMD},
      {RK_COMPLEXITY_HIGH, 10001, GPU},
      {RK_COMPLEXITY_HIGH, UINT64_MAX, GPU},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    rk_compat_choice_t got =
        rk_compat_select_with_moe(&s, cases[i].c, cases[i].n);
    CHECK(got == cases[i].want, "moe(%d, %llu) gave %s, expected %s",
          (int)cases[i].c, (unsigned long long)cases[i].n,
          rk_compat_choice_name(got), rk_compat_choice_name(cases[i].want));
  }
  /* The table ignores the selector's parameters. */
  CHECK_OK(rk_compat_set_gpu_flops(&s, 1.0));
  CHECK_CHOICE(rk_compat_select_with_moe(&s, RK_COMPLEXITY_HIGH, 10001), GPU);
  CHECK_CHOICE(rk_compat_select_for_elementwise(&s, 1000001), SIMD);
  CHECK_CHOICE(rk_compat_select_with_moe(NULL, RK_COMPLEXITY_MEDIUM, 100001),
               GPU);
  /* Not a complexity: never a GPU. */
  CHECK_CHOICE(rk_compat_select_with_moe(&s, (rk_complexity_t)7, UINT64_MAX),
               SCALAR);
}

int main(void) {
  test_defaults_and_setters();
  test_select_backend();
  test_matmul();
  test_vector_op();
  test_tables();
  test_ties();
  return rk_test_finish("compat");
}
