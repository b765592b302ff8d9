/* The recording side of rk's trace (rk/trace.h): hooks call these.
 *
 * Off, a hook costs one load and one predictable branch:
 *
 *   rk_status_t rk_context_free(rk_context_t *ctx, rk_devptr_t p) {
 *     if (!rk__trace_on()) return free_impl(ctx, p);
 *     rk__trace_span_t span;
 *     rk__trace_span_begin(&span, "free");       // also an NVTX range
 *     rk_status_t s = free_impl(ctx, p);
 *     rk__trace_event_t *e = rk__trace_span_end(&span, "memory");
 *     rk__trace_arg_status(e, s);                // e may be NULL: ignored
 *     rk__trace_commit(e);
 *     return s;
 *   }
 *
 * An event is claimed when it is complete (rk__trace_span_end,
 * rk__trace_instant, rk__trace_flow), filled with up to RK__TRACE_MAX_ARGS
 * arguments, and published by rk__trace_commit; between the two the thread
 * must not block. Every function takes NULL for the event and then does
 * nothing, so a full buffer or a trace that stopped meanwhile needs no
 * checks. Names, keys and string values are copied (truncated to fit the
 * event's 136 bytes of text); categories must be string literals.
 */
#ifndef RK_BASE_TRACE_H_
#define RK_BASE_TRACE_H_

#include <stdbool.h>
#include <stdint.h>

#include "rk/status.h"
#include "rk/trace.h"

/* Bits of rk__trace_flags. */
enum {
  RK__TRACE_RECORD = 1u << 0, /* a JSON trace is recording */
  RK__TRACE_NVTX = 1u << 1,   /* NVTX ranges are pushed */
};

/* Which of the above are on; read by every hook. */
extern uint32_t rk__trace_flags;

/* Whether any tracing is on: the one branch a hook costs when it is off. */
static inline bool rk__trace_on(void) {
  return __builtin_expect(
      __atomic_load_n(&rk__trace_flags, __ATOMIC_RELAXED) != 0, 0);
}

enum { RK__TRACE_MAX_ARGS = 8 };

typedef struct rk__trace_event rk__trace_event_t;

/* A traced operation in progress on one thread. */
typedef struct rk__trace_span {
  uint64_t t0;      /* start, rk__now_ns() */
  const char *name; /* as given to rk__trace_span_begin; must outlive it */
  bool nvtx;        /* an NVTX range was pushed */
} rk__trace_span_t;

/* Starts a span: notes the time and pushes an NVTX range named `name`. */
void rk__trace_span_begin(rk__trace_span_t *span, const char *name);
/* Ends it: pops the NVTX range and claims a complete ("X") event of
 * category `cat` spanning it, or returns NULL when nothing is recording or
 * the trace is full. */
rk__trace_event_t *rk__trace_span_end(rk__trace_span_t *span, const char *cat);

/* An instant ("i") event on the calling thread, now. */
rk__trace_event_t *rk__trace_instant(const char *cat, const char *name);

/* A flow event linking slices across threads, now: ph 's' starts flow `id`
 * (inside the sender's slice), 't' is a step, 'f' ends it (binding to the
 * slice that encloses it). */
rk__trace_event_t *rk__trace_flow(char ph, const char *cat, const char *name,
                                  uint64_t id);

/* A begin ("B") or end ("E") event of a range on the calling thread. */
rk__trace_event_t *rk__trace_begin_end(char ph, const char *cat,
                                       const char *name);

/* Arguments; each is dropped when the event has no room left. */
void rk__trace_arg_str(rk__trace_event_t *e, const char *key,
                       const char *value);
void rk__trace_arg_int(rk__trace_event_t *e, const char *key, int64_t value);
void rk__trace_arg_uint(rk__trace_event_t *e, const char *key, uint64_t value);
void rk__trace_arg_num(rk__trace_event_t *e, const char *key, double value);
void rk__trace_arg_bool(rk__trace_event_t *e, const char *key, bool value);
/* "status": "ok" or the status name; failures add "error" with
 * rk_last_error(). */
void rk__trace_arg_status(rk__trace_event_t *e, rk_status_t status);

/* Publishes the event. */
void rk__trace_commit(rk__trace_event_t *e);

#endif /* RK_BASE_TRACE_H_ */
