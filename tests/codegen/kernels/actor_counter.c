#include <rk/kernel.h>

/* An actor that keeps a running sum and count, answering each request with
 * the new totals. */
typedef struct {
  int op; /* 0: add, 1: reset, 2: query */
  float value;
} counter_req_t;

typedef struct {
  uint32_t seq;
  int count;
  float sum;
  float mean;
} counter_resp_t;

typedef struct {
  uint32_t seq;
  int count;
  float sum;
} counter_state_t;

RK_HANDLER void counter(const counter_req_t *in, counter_resp_t *out,
                        counter_state_t *state) {
  switch (in->op) {
    case 0:
      state->count += 1;
      state->sum += in->value;
      break;
    case 1:
      state->count = 0;
      state->sum = 0.0f;
      break;
    default:
      break;
  }
  state->seq++;
  out->seq = state->seq;
  out->count = state->count;
  out->sum = state->sum;
  out->mean = state->count > 0 ? state->sum / (float)state->count : 0.0f;
}
