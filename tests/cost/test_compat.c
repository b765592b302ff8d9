/* The compatibility selector: defaults, setters, and every threshold at
 * N-1, N and N+1, with custom parameters and 64-bit extremes. */
#define RK_TEST_IMPLEMENTATION
#include <math.h>
#include <stdint.h>

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
  /* flops = 3125 * bytes is the boundary at any size, up to the top. */
  uint64_t bytes = UINT64_MAX / 3125;
  CHECK_CHOICE(rk_compat_select_backend(&s, bytes, bytes * 3125), SIMD);
  CHECK_CHOICE(rk_compat_select_backend(&s, bytes, bytes * 3125 + 1), GPU);

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
  return rk_test_finish("compat");
}
