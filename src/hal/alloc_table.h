/* A sorted table of a context's live device allocations, so that every
 * device pointer a caller passes can be checked (freed, foreign, past the
 * end) before a backend acts on it. Not locked: the backend holds its own
 * lock around each call.
 *
 *   rk__alloc_table_t t = {0};
 *   rk__alloc_table_insert(&t, base, bytes, handle);
 *   const rk__alloc_t *a;
 *   if (rk__alloc_table_find(&t, ptr, n, &a) == RK_OK) use(a->handle, ptr -
 * a->base); rk__alloc_table_remove(&t, base, &removed);
 *   rk__alloc_table_release(&t);
 */
#ifndef RK_HAL_ALLOC_TABLE_H_
#define RK_HAL_ALLOC_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include "rk/status.h"

typedef struct rk__alloc {
  uint64_t base;   /* the address the caller sees */
  size_t size;     /* bytes asked for */
  uint64_t handle; /* the backend's own (a cl_mem, a CUdeviceptr) */
} rk__alloc_t;

typedef struct rk__alloc_table {
  rk__alloc_t *items; /* sorted by base, non-overlapping */
  size_t count, cap;
} rk__alloc_table_t;

/* Frees the table's storage (not the allocations). */
void rk__alloc_table_release(rk__alloc_table_t *t);

/* Adds an allocation; RK_ERR_OUT_OF_MEMORY when the table cannot grow. */
rk_status_t rk__alloc_table_insert(rk__alloc_table_t *t, uint64_t base,
                                   size_t size, uint64_t handle);

/* Removes the allocation starting at `base` into *out. A pointer inside an
 * allocation, or one that is not live, is RK_ERR_INVALID_ARGUMENT with a
 * message that says which. */
rk_status_t rk__alloc_table_remove(rk__alloc_table_t *t, uint64_t base,
                                   rk__alloc_t *out);

/* The allocation holding [ptr, ptr + n) (n may be 0: ptr inside one).
 * RK_ERR_INVALID_ARGUMENT when ptr is in none, RK_ERR_OUT_OF_RANGE when
 * the range runs past its end; the message names the pointer. */
rk_status_t rk__alloc_table_find(const rk__alloc_table_t *t, uint64_t ptr,
                                 size_t n, const rk__alloc_t **out);

#endif /* RK_HAL_ALLOC_TABLE_H_ */
