#include "actor_test_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "rk_test.h"

const char kAddOneSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

const char kTagSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t producer; uint32_t seq; } req_t;\n"
    "typedef struct { uint32_t producer; uint32_t seq; uint32_t count;\n"
    "                 uint32_t pad; } resp_t;\n"
    "typedef struct { uint32_t count; } state_t;\n"
    "RK_HANDLER void tag(const req_t *in, resp_t *out, state_t *s) {\n"
    "  s->count += 1u;\n"
    "  out->producer = in->producer;\n"
    "  out->seq = in->seq;\n"
    "  out->count = s->count;\n"
    "  out->pad = 0u;\n"
    "}\n";

const char kDivSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int a; int b; } req_t;\n"
    "typedef struct { int q; } resp_t;\n"
    "RK_HANDLER int checked_div(const req_t *in, resp_t *out) {\n"
    "  if (in->b == 0) {\n"
    "    out->q = 0;\n"
    "    return 7;\n"
    "  }\n"
    "  out->q = in->a / in->b;\n"
    "  return 0;\n"
    "}\n";

rk_context_t *actor_test_context(rk_backend_t **out_backend) {
  return actor_test_context_on(RK_BACKEND_CPU, out_backend);
}

rk_context_t *actor_test_context_on(rk_backend_kind_t kind,
                                    rk_backend_t **out_backend) {
  rk_test_use_temp_cache();
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  if (rk_backend_open(kind, &be) != RK_OK) {
    if (kind == RK_BACKEND_CPU) {
      printf("FAILED: no CPU backend: %s\n", rk_last_error());
      exit(1);
    }
    printf("skipped: the %s backend does not open here: %s\n",
           rk_backend_kind_name(kind), rk_last_error());
    exit(77);
  }
  if (rk_backend_device_count(be) == 0) {
    printf("skipped: the %s backend has no device here\n",
           rk_backend_kind_name(kind));
    exit(kind == RK_BACKEND_CPU ? 1 : 77);
  }
  if (rk_backend_create_context(be, 0, &ctx) != RK_OK) {
    printf("FAILED: no %s context: %s\n", rk_backend_kind_name(kind),
           rk_last_error());
    exit(1);
  }
  *out_backend = be;
  return ctx;
}
