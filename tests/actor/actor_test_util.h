/* Handlers and helpers shared by the actor tests. */
#ifndef RK_TESTS_ACTOR_ACTOR_TEST_UTIL_H_
#define RK_TESTS_ACTOR_ACTOR_TEST_UTIL_H_

#include <stdint.h>

#include "rk/rk.h"

typedef struct {
  int v;
} int_msg_t;

/* add_one: out->v = in->v + 1. */
extern const char kAddOneSource[];

/* tagged echo: {producer, seq} in, {producer, seq, count} out, where count
 * is the handler's running message count (its state). */
typedef struct {
  uint32_t producer, seq;
} tag_req_t;
typedef struct {
  uint32_t producer, seq, count, pad;
} tag_resp_t;
extern const char kTagSource[];

/* checked_div: {a, b} -> {q}; returns 7 when b == 0 (q = 0). */
typedef struct {
  int a, b;
} div_req_t;
extern const char kDivSource[];

/* A CPU context for the tests, or exit with a failure. */
rk_context_t *actor_test_context(rk_backend_t **out_backend);
/* A context on device 0 of `kind`; exits 77 (skipped, with the reason) when
 * that backend does not open or has no device, 1 when the CPU backend
 * fails. */
rk_context_t *actor_test_context_on(rk_backend_kind_t kind,
                                    rk_backend_t **out_backend);

/* Destroys `ctx`, first waiting (the watchdog bounds it) while a
 * destroyed actor's handler still runs on it (rk_context_destroy refuses
 * with RK_ERR_INVALID_STATE until then); RK_OK or the failure. */
rk_status_t actor_test_context_destroy(rk_context_t *ctx);

/* A watchdog for tests whose device side might never answer: once
 * started, a thread fails the run (exit 1, naming the case) when the case
 * named last by actor_test_watch has not finished in its time, first
 * printing every thread's stack where gdb is installed. */
void actor_test_watchdog_start(void);
/* Names the case about to run (printed) and gives it `seconds`. */
void actor_test_watch(const char *name, unsigned seconds);

#endif /* RK_TESTS_ACTOR_ACTOR_TEST_UTIL_H_ */
