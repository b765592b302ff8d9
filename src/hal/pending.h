/* A pending asynchronous error: the first failure of work that ran after
 * its call returned (a default-stream launch, a queued copy, an
 * implementation callback), kept with its message until the next
 * synchronization reports it.
 *
 *   rk__pending_t pending;
 *   rk__pending_init(&pending);
 *   ...on any thread, when queued work fails:
 *   rk__pending_record_last(&pending, s);
 *   ...in the synchronization:
 *   return rk__pending_take(&pending);
 *   ...
 *   rk__pending_destroy(&pending);
 *
 * Thread-safe; the lock is a leaf (it may be taken under any other lock,
 * and inside implementation callbacks).
 */
#ifndef RK_HAL_PENDING_H_
#define RK_HAL_PENDING_H_

#include <pthread.h>

#include "rk/status.h"

typedef struct rk__pending {
  pthread_mutex_t lock;
  rk_status_t status; /* the first unreported error; RK_OK when none */
  char msg[2048];     /* its detail message */
} rk__pending_t;

void rk__pending_init(rk__pending_t *pending);
void rk__pending_destroy(rk__pending_t *pending);

/* Keeps `status` and a copy of `msg` unless an error is already pending
 * (the first one wins). RK_OK records nothing. */
void rk__pending_record(rk__pending_t *pending, rk_status_t status,
                        const char *msg);
/* The same with this thread's rk_last_error() as the message. */
void rk__pending_record_last(rk__pending_t *pending, rk_status_t status);

/* Returns the pending error and clears it; when there is one, its message
 * becomes this thread's rk_last_error(). RK_OK (message untouched) when
 * none is pending. */
rk_status_t rk__pending_take(rk__pending_t *pending);

#endif /* RK_HAL_PENDING_H_ */
