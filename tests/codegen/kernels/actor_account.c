#include <rk/kernel.h>

/* An actor that keeps an account balance and refuses overdrafts: a handler
 * with state that returns int. 0 means success; 2 (insufficient funds) and
 * 3 (unknown operation) are error codes, answered with the balance as it
 * stands. */
typedef struct {
  int op; /* 0: deposit, 1: withdraw, 2: query */
  int amount;
} account_req_t;

typedef struct {
  int balance;
  uint32_t serial;
} account_resp_t;

typedef struct {
  int balance;
  uint32_t serial; /* requests seen */
} account_state_t;

RK_HANDLER int account(const account_req_t *in, account_resp_t *out,
                       account_state_t *state) {
  int code = 0;
  if (in->op == 0) {
    state->balance += in->amount;
  } else if (in->op == 1) {
    if (in->amount > state->balance)
      code = 2;
    else
      state->balance -= in->amount;
  } else if (in->op != 2) {
    code = 3;
  }
  state->serial++;
  out->balance = state->balance;
  out->serial = state->serial;
  return code;
}
