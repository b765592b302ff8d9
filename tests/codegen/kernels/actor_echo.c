#include <rk/kernel.h>

typedef struct {
  int v;
  float scale;
} echo_req_t;

typedef struct {
  int v;
  float scaled;
} echo_resp_t;

/* The smallest actor: no state, one answer per message. */
RK_HANDLER void add_one(const echo_req_t *in, echo_resp_t *out) {
  out->v = in->v + 1;
  out->scaled = (float)in->v * in->scale;
}
