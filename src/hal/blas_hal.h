/* The vendor BLAS a backend may offer (hal.h's blas_sgemm), for the ops
 * library. */
#ifndef RK_HAL_BLAS_HAL_H_
#define RK_HAL_BLAS_HAL_H_

#include <stddef.h>

#include "rk/backend.h"

/* C = A B (row-major f32: A m x k, B k x n, C m x n, device pointers of
 * `context`) through the backend's vendor BLAS, queued on the default
 * stream; `library` (cap bytes) gets the library's name.
 * RK_ERR_UNIMPLEMENTED when the backend has no vendor BLAS,
 * RK_ERR_UNAVAILABLE with the reason when it cannot use it now: the caller
 * then runs its own kernel. */
rk_status_t rk__hal_blas_sgemm(rk_context_t *context, size_t m, size_t n,
                               size_t k, rk_devptr_t a, rk_devptr_t b,
                               rk_devptr_t c, char *library, size_t cap);

#endif /* RK_HAL_BLAS_HAL_H_ */
