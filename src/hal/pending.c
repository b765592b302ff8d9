/* Pending asynchronous errors (see pending.h). */
#include "hal/pending.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

void rk__pending_init(rk__pending_t *pending) {
  pthread_mutex_init(&pending->lock, NULL);
  pending->status = RK_OK;
  pending->msg[0] = '\0';
}

void rk__pending_destroy(rk__pending_t *pending) {
  pthread_mutex_destroy(&pending->lock);
}

void rk__pending_record(rk__pending_t *pending, rk_status_t status,
                        const char *msg) {
  if (status == RK_OK) return;
  pthread_mutex_lock(&pending->lock);
  if (pending->status == RK_OK) {
    snprintf(pending->msg, sizeof pending->msg, "%s", msg);
    /* Pairs with the unlocked check in rk__pending_take. */
    __atomic_store_n(&pending->status, status, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&pending->lock);
}

void rk__pending_record_last(rk__pending_t *pending, rk_status_t status) {
  rk__pending_record(pending, status, rk_last_error());
}

rk_status_t rk__pending_take(rk__pending_t *pending) {
  /* The common case, nothing pending, takes no lock. */
  if (__atomic_load_n(&pending->status, __ATOMIC_ACQUIRE) == RK_OK)
    return RK_OK;
  pthread_mutex_lock(&pending->lock);
  rk_status_t s = pending->status;
  if (s != RK_OK) rk__fail(s, "%s", pending->msg);
  __atomic_store_n(&pending->status, RK_OK, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&pending->lock);
  return s;
}
