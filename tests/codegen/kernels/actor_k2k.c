/* Actors that send to other actors (rk_send / rk_try_send on output
 * ports): a stage forwarding to two ports, a stateful tile that sends only
 * when it has something, and a sink that answers on a port of its own. */
#include <rk/kernel.h>

typedef struct { int v; } req_t;
typedef struct { int v; } resp_t;
typedef struct { float x; int n; } fwd_t;
typedef struct { float edge[4]; int step; } halo_t;
typedef struct { int steps; float sum; } tile_state_t;

RK_HANDLER int stage(const req_t *in, resp_t *out) {
  fwd_t m;
  m.x = (float)in->v * 0.5f;
  m.n = in->v + 1;
  int queued = rk_send(0, &m) == 0;
  if (rk_try_send(2, &m) != 0) return 7; /* full or not connected */
  out->v = queued;
  return 0;
}

RK_HANDLER void tile(const halo_t *in, resp_t *out, tile_state_t *state) {
  halo_t h;
  for (int i = 0; i < 4; ++i) h.edge[i] = in->edge[i] + state->sum;
  h.step = in->step + 1;
  state->steps++;
  state->sum += in->edge[0];
  out->v = state->steps;
  if (h.step < 8) out->v += rk_try_send(1, &h) * 100;
}

RK_HANDLER void sink(const fwd_t *in, resp_t *out) {
  req_t back = {in->n};
  out->v = in->n;
  (void)rk_send(0, &back);
}
