/* The README's first program, meant to be linked with `cc -static`: in a
 * statically linked program rk_backend_open must refuse, saying why,
 * instead of crashing at the first launch (kernels and vendor libraries are
 * loaded with dlopen, which needs the shared C library). Exits 0 when it
 * refused as expected, 1 otherwise. */
#include <rk/rk.h>
#include <stdio.h>
#include <string.h>

static const char *kSource =
    "#include <rk/kernel.h>\n"
    "RK_KERNEL void scale(int n, float a, float *x) {\n"
    "  int i = (int)rk_global_idx_x();\n"
    "  if (i < n) x[i] *= a;\n"
    "}\n";

int main(void) {
  rk_backend_t *be;
  rk_status_t s = rk_backend_open(RK_BACKEND_AUTO, &be);
  if (s == RK_ERR_UNAVAILABLE && strstr(rk_last_error(), "linked statically")) {
    printf("refused as expected: %s\n", rk_last_error());
    return 0;
  }
  if (s != RK_OK) {
    fprintf(stderr, "unexpected failure: %s\n", rk_last_error());
    return 1;
  }
  /* Not refused: what the program would do next. */
  enum { N = 256 };
  float host[N];
  for (int i = 0; i < N; ++i) host[i] = (float)i;
  rk_context_t *ctx;
  rk_module_t *mod;
  rk_function_t *fn;
  rk_devptr_t x;
  if (rk_backend_create_context(be, 0, &ctx) == RK_OK &&
      rk_context_compile(ctx, kSource, NULL, &mod) == RK_OK &&
      rk_module_get_function(mod, "scale", &fn) == RK_OK &&
      rk_context_allocate(ctx, sizeof host, &x) == RK_OK) {
    rk_arg_t args[] = {rk_arg_i32(N), rk_arg_f32(2.0f), rk_arg_ptr(x)};
    rk_context_copy_to_device(ctx, x, host, sizeof host);
    rk_function_launch(fn, rk_dim3(1, 1, 1), rk_dim3(N, 1, 1), 0, NULL, args,
                       3);
    rk_context_synchronize(ctx);
  }
  fprintf(stderr, "a statically linked program opened %s\n",
          rk_backend_name(be));
  return 1;
}
