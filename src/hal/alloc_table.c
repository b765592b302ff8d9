/* The allocation table (alloc_table.h). */
#include "hal/alloc_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

void rk__alloc_table_release(rk__alloc_table_t *t) {
  free(t->items);
  memset(t, 0, sizeof *t);
}

/* Index of the first allocation with base > p. */
static size_t upper_bound(const rk__alloc_table_t *t, uint64_t p) {
  size_t lo = 0, hi = t->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->items[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

rk_status_t rk__alloc_table_insert(rk__alloc_table_t *t, uint64_t base,
                                   size_t size, uint64_t handle) {
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    rk__alloc_t *grown = realloc(t->items, cap * sizeof *grown);
    if (!grown)
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "allocate: allocation table");
    t->items = grown;
    t->cap = cap;
  }
  size_t at = upper_bound(t, base);
  memmove(&t->items[at + 1], &t->items[at], (t->count - at) * sizeof *t->items);
  t->items[at] = (rk__alloc_t){base, size, handle};
  t->count++;
  return RK_OK;
}

rk_status_t rk__alloc_table_remove(rk__alloc_table_t *t, uint64_t base,
                                   rk__alloc_t *out) {
  size_t at = upper_bound(t, base);
  if (at == 0 || t->items[at - 1].base != base) {
    bool inside =
        at > 0 && base - t->items[at - 1].base < t->items[at - 1].size;
    if (inside)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "free: 0x%llx points inside an allocation, not at its "
                      "start",
                      (unsigned long long)base);
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "free: 0x%llx is not a live allocation of this context "
                    "(already freed, or from another context)",
                    (unsigned long long)base);
  }
  *out = t->items[at - 1];
  memmove(&t->items[at - 1], &t->items[at], (t->count - at) * sizeof *t->items);
  t->count--;
  return RK_OK;
}

rk_status_t rk__alloc_table_find(const rk__alloc_table_t *t, uint64_t ptr,
                                 size_t n, const rk__alloc_t **out) {
  size_t at = upper_bound(t, ptr);
  const rk__alloc_t *a = at ? &t->items[at - 1] : NULL;
  if (!a || ptr - a->base >= a->size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "device pointer 0x%llx is not inside a live allocation "
                    "of this context (freed, foreign or never allocated)",
                    (unsigned long long)ptr);
  size_t offset = (size_t)(ptr - a->base);
  if (n > a->size - offset)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%zu bytes at offset %zu run past the end of the "
                    "%zu-byte allocation at 0x%llx",
                    n, offset, a->size, (unsigned long long)a->base);
  if (out) *out = a;
  return RK_OK;
}
