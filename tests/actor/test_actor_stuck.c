/* A handler that never returns: terminate reaches its deadline and reports
 * a timeout, the actor is failed, and the process stays usable (a new actor
 * on the same context works; the context is not destroyed under the stuck
 * handler, with a status that says so). Its own
 * executable, because the stuck worker keeps one CPU busy until exit. */
#include "actor_test_util.h"
#include "base/sys.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static const char kStuckSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } m_t;\n"
    "RK_HANDLER void stuck(const m_t *in, m_t *out) {\n"
    "  out->v = in->v;\n"
    "  while (1) {\n"
    "  }\n"
    "}\n";

int main(void) {
  rk_backend_t *be = NULL;
  rk_context_t *ctx = actor_test_context(&be);
  rk_actor_t *a = NULL;
  if (!CHECK_OK(rk_actor_launch(ctx, kStuckSource, "stuck", NULL, &a)))
    return rk_test_finish("actor_stuck");
  int_msg_t q = {1}, r;
  CHECK_STATUS(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 20000000u, NULL),
               RK_ERR_TIMEOUT);
  uint64_t t0 = rk__now_ns();
  CHECK_STATUS(rk_actor_terminate(a, 50000000u), RK_ERR_TIMEOUT);
  uint64_t waited = rk__now_ns() - t0;
  CHECK(waited >= 50000000u && waited < 2000000000u,
        "terminate waited %.1f ms for a 50 ms deadline", (double)waited / 1e6);
  CHECK(rk_actor_state(a) == RK_ACTOR_FAILED, "state %s",
        rk_actor_state_name(rk_actor_state(a)));
  CHECK_STATUS(rk_actor_terminate(a, 0), RK_ERR_INVALID_STATE);
  CHECK_STATUS(rk_actor_send(a, &q, sizeof q, 0, NULL), RK_ERR_INVALID_STATE);
  rk_actor_stats_t st;
  CHECK_OK(rk_actor_stats(a, &st));
  CHECK(st.state == RK_ACTOR_FAILED && st.processed == 0 && st.sent == 1,
        "stats: %s processed %llu sent %llu", rk_actor_state_name(st.state),
        (unsigned long long)st.processed, (unsigned long long)st.sent);
  rk_actor_destroy(a); /* returns: the worker keeps its memory */

  /* The process is still usable: another actor on the same context. */
  rk_actor_t *b = NULL;
  if (CHECK_OK(rk_actor_launch(ctx, kAddOneSource, "add_one", NULL, &b))) {
    q.v = 41;
    CHECK_OK(rk_actor_call(b, &q, sizeof q, &r, sizeof r, 5000000000u, NULL));
    CHECK(r.v == 42, "the new actor answers %d", r.v);
    CHECK_OK(rk_actor_terminate(b, 5000000000u));
    rk_actor_destroy(b);
  }
  /* The stuck handler's code and rings belong to the context: it is
   * not destroyed under it, and says why; nor is its backend. */
  CHECK_STATUS(rk_context_destroy(ctx), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("has not returned");
  CHECK_STATUS(rk_backend_destroy(be), RK_ERR_INVALID_STATE);
  return rk_test_finish("actor_stuck");
}
