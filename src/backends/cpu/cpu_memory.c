/* CPU device memory: aligned host allocations in a sorted table, so that
 * every device pointer can be checked (freed, foreign, out of bounds). */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"

enum { kAlign = 64 };

void rk__cpu_memory_init(cpu_memory_t *mem, uint64_t limit) {
  memset(mem, 0, sizeof *mem);
  pthread_rwlock_init(&mem->lock, NULL);
  mem->limit = limit;
}

void rk__cpu_memory_release(cpu_memory_t *mem) {
  for (size_t i = 0; i < mem->count; ++i) free((void *)mem->allocs[i].base);
  free(mem->allocs);
  pthread_rwlock_destroy(&mem->lock);
}

/* Index of the first allocation with base > p. */
static size_t upper_bound(const cpu_memory_t *mem, uintptr_t p) {
  size_t lo = 0, hi = mem->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (mem->allocs[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

rk_status_t rk__cpu_memory_allocate(cpu_memory_t *mem, size_t bytes,
                                    rk_devptr_t *out) {
  if (bytes > mem->limit || bytes > SIZE_MAX - kAlign)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: %zu bytes is more than the device's %llu "
                    "bytes of memory",
                    bytes, (unsigned long long)mem->limit);
  size_t rounded = (bytes + kAlign - 1) & ~(size_t)(kAlign - 1);
  void *p = aligned_alloc(kAlign, rounded);
  if (!p)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "allocate: the system refused %zu bytes", bytes);
  pthread_rwlock_wrlock(&mem->lock);
  if (mem->count == mem->cap) {
    size_t cap = mem->cap ? mem->cap * 2 : 64;
    cpu_alloc_t *grown = realloc(mem->allocs, cap * sizeof *grown);
    if (!grown) {
      pthread_rwlock_unlock(&mem->lock);
      free(p);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "allocate: allocation table");
    }
    mem->allocs = grown;
    mem->cap = cap;
  }
  size_t at = upper_bound(mem, (uintptr_t)p);
  memmove(&mem->allocs[at + 1], &mem->allocs[at],
          (mem->count - at) * sizeof *mem->allocs);
  mem->allocs[at].base = (uintptr_t)p;
  mem->allocs[at].size = bytes;
  mem->count++;
  mem->in_use += bytes;
  pthread_rwlock_unlock(&mem->lock);
  *out = (rk_devptr_t)(uintptr_t)p;
  return RK_OK;
}

rk_status_t rk__cpu_memory_free(cpu_memory_t *mem, rk_devptr_t ptr) {
  pthread_rwlock_wrlock(&mem->lock);
  size_t at = upper_bound(mem, (uintptr_t)ptr);
  if (at == 0 || mem->allocs[at - 1].base != (uintptr_t)ptr) {
    bool inside = at > 0 && (uintptr_t)ptr - mem->allocs[at - 1].base <
                                mem->allocs[at - 1].size;
    pthread_rwlock_unlock(&mem->lock);
    if (inside)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "free: 0x%llx points inside an allocation, not at its "
                      "start",
                      (unsigned long long)ptr);
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "free: 0x%llx is not a live allocation of this context "
                    "(already freed, or from another context)",
                    (unsigned long long)ptr);
  }
  void *p = (void *)mem->allocs[at - 1].base;
  mem->in_use -= mem->allocs[at - 1].size;
  memmove(&mem->allocs[at - 1], &mem->allocs[at],
          (mem->count - at) * sizeof *mem->allocs);
  mem->count--;
  pthread_rwlock_unlock(&mem->lock);
  free(p);
  return RK_OK;
}

rk_status_t rk__cpu_memory_check_locked(const cpu_memory_t *mem,
                                        rk_devptr_t ptr, size_t n) {
  size_t at = upper_bound(mem, (uintptr_t)ptr);
  const cpu_alloc_t *a = at ? &mem->allocs[at - 1] : NULL;
  if (!a || (uintptr_t)ptr - a->base >= a->size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "device pointer 0x%llx is not inside a live allocation "
                    "of this context (freed, foreign or never allocated)",
                    (unsigned long long)ptr);
  size_t offset = (uintptr_t)ptr - a->base;
  if (n > a->size - offset)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "%zu bytes at offset %zu run past the end of the "
                    "%zu-byte allocation at 0x%llx",
                    n, offset, a->size, (unsigned long long)a->base);
  return RK_OK;
}

rk_status_t rk__cpu_memory_check(cpu_memory_t *mem, rk_devptr_t ptr, size_t n) {
  pthread_rwlock_rdlock(&mem->lock);
  rk_status_t s = rk__cpu_memory_check_locked(mem, ptr, n);
  pthread_rwlock_unlock(&mem->lock);
  return s;
}

rk_status_t rk__cpu_memory_copy(cpu_memory_t *mem, const rk__copy_t *c) {
  pthread_rwlock_rdlock(&mem->lock);
  rk_status_t s = RK_OK;
  if (c->dir != RK__COPY_TO_HOST)
    s = rk__cpu_memory_check_locked(mem, c->dst, c->n);
  if (s == RK_OK && c->dir != RK__COPY_TO_DEVICE)
    s = rk__cpu_memory_check_locked(mem, c->src, c->n);
  if (s == RK_OK) {
    switch (c->dir) {
      case RK__COPY_TO_DEVICE:
        memcpy((void *)(uintptr_t)c->dst, c->host, c->n);
        break;
      case RK__COPY_TO_HOST:
        memcpy(c->host, (const void *)(uintptr_t)c->src, c->n);
        break;
      case RK__COPY_DEVICE_TO_DEVICE:
        memmove((void *)(uintptr_t)c->dst, (const void *)(uintptr_t)c->src,
                c->n);
        break;
    }
  }
  pthread_rwlock_unlock(&mem->lock);
  return s;
}
