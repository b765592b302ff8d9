#include <rk/kernel.h>

/* Breaks the language rules: recursion, goto, a function pointer. */
static int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

RK_KERNEL void bad(int *out, int n) {
  int (*f)(int) = fact;
  if (n < 0) goto end;
  out[0] = f(n);
end:
  return;
}
