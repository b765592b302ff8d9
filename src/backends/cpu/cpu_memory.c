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
  for (size_t i = 0; i < mem->allocs.count; ++i)
    free((void *)(uintptr_t)mem->allocs.items[i].base);
  rk__alloc_table_release(&mem->allocs);
  pthread_rwlock_destroy(&mem->lock);
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
  rk_status_t s = rk__alloc_table_insert(&mem->allocs, (uintptr_t)p, bytes, 0);
  if (s != RK_OK) {
    pthread_rwlock_unlock(&mem->lock);
    free(p);
    return s;
  }
  mem->in_use += bytes;
  pthread_rwlock_unlock(&mem->lock);
  *out = (rk_devptr_t)(uintptr_t)p;
  return RK_OK;
}

rk_status_t rk__cpu_memory_free(cpu_memory_t *mem, rk_devptr_t ptr) {
  rk__alloc_t a;
  pthread_rwlock_wrlock(&mem->lock);
  rk_status_t s = rk__alloc_table_remove(&mem->allocs, ptr, &a);
  if (s == RK_OK) mem->in_use -= a.size;
  pthread_rwlock_unlock(&mem->lock);
  if (s == RK_OK) free((void *)(uintptr_t)a.base);
  return s;
}

rk_status_t rk__cpu_memory_check_locked(const cpu_memory_t *mem,
                                        rk_devptr_t ptr, size_t n) {
  return rk__alloc_table_find(&mem->allocs, ptr, n, NULL);
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
