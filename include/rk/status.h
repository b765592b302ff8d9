/* rk/status.h - status codes and per-thread error detail.
 *
 * Every rk call that can fail returns an rk_status_t; RK_OK is zero. When a
 * call fails it also stores a message for the calling thread that says what
 * failed and why (the argument that was wrong, the library that could not be
 * loaded, the compiler's output). Read it with rk_last_error():
 *
 *   rk_status_t s = rk_context_allocate(ctx, n, &p);
 *   if (s != RK_OK)
 *     fprintf(stderr, "%s: %s\n", rk_status_name(s), rk_last_error());
 */
#ifndef RK_STATUS_H_
#define RK_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum suffix, human-readable name). The order fixes the numeric values;
 * append new codes at the end. */
#define RK_STATUS_LIST(X)                     \
  X(OK, "ok")                                 \
  X(ERR_INVALID_ARGUMENT, "invalid argument") \
  X(ERR_OUT_OF_RANGE, "out of range")         \
  X(ERR_NOT_FOUND, "not found")               \
  X(ERR_UNAVAILABLE, "unavailable")           \
  X(ERR_UNIMPLEMENTED, "unimplemented")       \
  X(ERR_OUT_OF_MEMORY, "out of memory")       \
  X(ERR_COMPILE, "compile error")             \
  X(ERR_LAUNCH, "launch error")               \
  X(ERR_TIMEOUT, "timeout")                   \
  X(ERR_QUEUE_FULL, "queue full")             \
  X(ERR_QUEUE_EMPTY, "queue empty")           \
  X(ERR_INVALID_STATE, "invalid state")       \
  X(ERR_DEVICE_LOST, "device lost")           \
  X(ERR_INTERNAL, "internal error")           \
  X(ERR_HANDLER, "handler error")             \
  X(ERR_CLOCK_SKEW, "clock skew")             \
  X(ERR_ALREADY_EXISTS, "already exists")

typedef enum rk_status {
#define RK_STATUS_ENUM_(name, text) RK_##name,
  RK_STATUS_LIST(RK_STATUS_ENUM_)
#undef RK_STATUS_ENUM_
      RK_STATUS_COUNT_
} rk_status_t;

/* The human-readable name of a status ("queue full"); "unknown status" for a
 * value outside the table. Never NULL; the string is static. */
const char *rk_status_name(rk_status_t status);

/* The detail message of the last failed rk call on this thread, or "" when no
 * call on this thread has failed yet. Successful calls leave it unchanged.
 * The pointer stays valid until the next rk call on the same thread. */
const char *rk_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RK_STATUS_H_ */
