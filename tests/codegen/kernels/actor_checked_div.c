#include <rk/kernel.h>

/* An actor that divides, reporting division by zero as an error: a handler
 * that returns int. 0 means success; anything else is an error code that
 * the runtime passes to the caller (the kernel stores it in rk_status[0]). */
typedef struct {
  int a;
  int b;
} div_req_t;

typedef struct {
  int q;
} div_resp_t;

RK_HANDLER int checked_div(const div_req_t *in, div_resp_t *out) {
  if (in->b == 0) {
    out->q = 0;
    return 1; /* division by zero */
  }
  out->q = in->a / in->b;
  return 0;
}
