/* CTS: device memory - allocation, alignment, copies with offsets. */
#include <stdlib.h>
#include <string.h>

#include "cts.h"

static unsigned char pattern_byte(size_t i, unsigned seed) {
  return (unsigned char)((i * 131u + seed * 17u + (i >> 8)) & 0xff);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(i, seed);
}

/* Index of the first byte of p[0..n) that is not the pattern, or n. */
static size_t pattern_mismatch(const unsigned char *p, size_t n,
                               unsigned seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern_byte(i, seed)) return i;
  return n;
}

static size_t first_not(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return i;
  return n;
}

void cts_memory_alloc_free(rk_context_t *ctx) {
  static const size_t kSizes[] = {1, 3, 63, 64, 65, 1000, 4097, 1u << 20};
  enum { kN = sizeof kSizes / sizeof kSizes[0] };
  rk_devptr_t ptrs[kN] = {0};
  for (int i = 0; i < kN; ++i) {
    if (!CHECK_OK(rk_context_allocate(ctx, kSizes[i], &ptrs[i]))) return;
    CHECK(ptrs[i] != 0, "allocation of %zu bytes returned 0", kSizes[i]);
    CHECK(ptrs[i] % 64 == 0,
          "allocation of %zu bytes at 0x%llx is not 64-byte aligned", kSizes[i],
          (unsigned long long)ptrs[i]);
  }
  /* Live allocations never overlap. */
  for (int i = 0; i < kN; ++i)
    for (int j = i + 1; j < kN; ++j)
      CHECK(ptrs[i] + kSizes[i] <= ptrs[j] || ptrs[j] + kSizes[j] <= ptrs[i],
            "allocations %d and %d overlap", i, j);
  /* Each holds its own bytes. */
  for (int i = 0; i < kN; ++i) {
    unsigned char *h = malloc(kSizes[i]);
    fill_pattern(h, kSizes[i], (unsigned)i);
    CHECK_OK(rk_context_copy_to_device(ctx, ptrs[i], h, kSizes[i]));
    free(h);
  }
  for (int i = 0; i < kN; ++i) {
    unsigned char *h = malloc(kSizes[i]);
    memset(h, 0, kSizes[i]);
    CHECK_OK(rk_context_copy_to_host(ctx, h, ptrs[i], kSizes[i]));
    size_t bad = pattern_mismatch(h, kSizes[i], (unsigned)i);
    CHECK(bad == kSizes[i], "allocation %d (%zu bytes) differs at byte %zu", i,
          kSizes[i], bad);
    free(h);
  }
  /* Free in an order different from allocation; then the memory is gone. */
  for (int i = kN - 1; i >= 0; i -= 2) CHECK_OK(rk_context_free(ctx, ptrs[i]));
  for (int i = kN - 2; i >= 0; i -= 2) CHECK_OK(rk_context_free(ctx, ptrs[i]));
  rk_devptr_t again = 0;
  CHECK_OK(rk_context_allocate(ctx, 128, &again));
  CHECK_OK(rk_context_free(ctx, again));
}

/* host -> A+oa -> B+ob -> host for one size; B's bytes around the copied
 * range must be untouched. */
static void round_trip(rk_context_t *ctx, size_t n, size_t oa, size_t ob) {
  const size_t slack = 16;
  size_t asize = oa + n + slack, bsize = ob + n + slack;
  unsigned char *src = malloc(n), *back = malloc(bsize);
  unsigned char *fill = malloc(bsize);
  memset(fill, 0xEE, bsize);
  fill_pattern(src, n, (unsigned)n);
  rk_devptr_t a = cts_alloc(ctx, asize, NULL);
  rk_devptr_t b = cts_alloc(ctx, bsize, fill);
  if (a && b) {
    CHECK_OK(rk_context_copy_to_device(ctx, a + oa, src, n));
    CHECK_OK(rk_context_copy_device_to_device(ctx, b + ob, a + oa, n));
    memset(back, 0, bsize);
    CHECK_OK(rk_context_copy_to_host(ctx, back, b, bsize));
    size_t bad = first_not(back, ob, 0xEE);
    CHECK(bad == ob, "n=%zu: byte %zu before the copied range changed", n, bad);
    bad = pattern_mismatch(back + ob, n, (unsigned)n);
    CHECK(bad == n,
          "n=%zu (offsets %zu, %zu): byte %zu differs after the round trip", n,
          oa, ob, bad);
    bad = first_not(back + ob + n, slack, 0xEE);
    CHECK(bad == slack, "n=%zu: byte %zu after the copied range changed", n,
          bad);
    /* Reading A at its offset directly gives the same bytes. */
    memset(back, 0, n);
    CHECK_OK(rk_context_copy_to_host(ctx, back, a + oa, n));
    bad = pattern_mismatch(back, n, (unsigned)n);
    CHECK(bad == n, "n=%zu: direct read differs at byte %zu", n, bad);
  }
  if (a) CHECK_OK(rk_context_free(ctx, a));
  if (b) CHECK_OK(rk_context_free(ctx, b));
  free(src);
  free(back);
  free(fill);
}

void cts_memory_copy_round_trip(rk_context_t *ctx) {
  static const size_t kSizes[] = {1, 2, 7, 64, 255, 4096 + 13, (1u << 20) + 3};
  for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
    round_trip(ctx, kSizes[i], 0, 0);
    round_trip(ctx, kSizes[i], 5, 3);  /* odd offsets */
    round_trip(ctx, kSizes[i], 64, 1); /* aligned source, odd destination */
  }
}

/* Copies that touch the last byte of an allocation are in range. */
void cts_memory_copy_offsets_exact(rk_context_t *ctx) {
  enum { kSize = 100 };
  unsigned char host[kSize], back[kSize];
  fill_pattern(host, kSize, 7);
  rk_devptr_t p = cts_alloc(ctx, kSize, NULL);
  if (!p) return;
  CHECK_OK(rk_context_copy_to_device(ctx, p, host, kSize));
  unsigned char last = 0x5A;
  CHECK_OK(rk_context_copy_to_device(ctx, p + kSize - 1, &last, 1));
  memset(back, 0, sizeof back);
  CHECK_OK(rk_context_copy_to_host(ctx, back, p + 37, kSize - 37));
  CHECK(memcmp(back, host + 37, kSize - 38) == 0,
        "bytes 37..98 read back differ");
  CHECK(back[kSize - 38] == 0x5A, "last byte is 0x%02x, expected 0x5a",
        back[kSize - 38]);
  /* Device to device inside one allocation (disjoint ranges). */
  CHECK_OK(rk_context_copy_device_to_device(ctx, p, p + 50, 50));
  CHECK_OK(rk_context_copy_to_host(ctx, back, p, kSize));
  CHECK(memcmp(back, host + 50, 49) == 0 && back[49] == 0x5A &&
            memcmp(back + 50, host + 50, 49) == 0,
        "device-to-device copy within one allocation gave wrong bytes");
  CHECK_OK(rk_context_free(ctx, p));
}
