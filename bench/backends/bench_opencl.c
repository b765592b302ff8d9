/* bench_opencl: the cost rk adds on top of OpenCL, side by side in one run.
 *
 * Each row is done twice on the same device, through rk and written directly
 * against OpenCL (the ICD loader opened with the same dlopen table rk uses):
 *
 *   dispatch   an empty kernel launched and waited for
 *              (rk_function_launch + rk_context_synchronize;
 *               clEnqueueNDRangeKernel + clFinish)
 *   roundtrip  64 bytes written to the device and read back
 *              (rk_context_copy_to_device + _to_host;
 *               blocking clEnqueueWriteBuffer + clEnqueueReadBuffer)
 *   step       the relaunch actor's step by hand on an rk stream: copy a
 *              4-byte request in, launch, copy the answer out, synchronize
 *              (raw: the same as the actor row's raw side)
 *   actor      one request through an actor and its answer back: rk_actor_call
 *              on a persistent-mode actor (emulated by relaunch on OpenCL);
 *              raw: write the request buffer, enqueue the handler kernel,
 *              read the response, wait
 *
 * Rounds of rk and raw alternate; each round times `iters` operations and
 * yields one per-operation time. Printed: median and p10-p90 over rounds,
 * and the ratio of the medians (rk / raw). Every answer is checked.
 *
 *   bench_opencl [--quick] [--rounds N] [--iters N]
 *
 * Exits 77 (skipped) with the reason when no OpenCL device can be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "bench_stats.h"
#include "rk/actor.h"
#include "rk/rk.h"

static int g_failures;

#define BENCH_CHECK(cond, ...)              \
  do {                                      \
    if (!(cond)) {                          \
      printf("CHECK FAILED (%s): ", #cond); \
      printf(__VA_ARGS__);                  \
      printf("\n");                         \
      ++g_failures;                         \
    }                                       \
  } while (0)

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct req { int v; } req_t;\n"
    "typedef struct resp { int v; } resp_t;\n"
    "RK_KERNEL void empty(void) {}\n"
    "RK_KERNEL void bump(const int *in, int *out) { out[0] = in[0] + 1; }\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

/* The same kernels written by hand in OpenCL C. */
static const char kRawSource[] =
    "typedef struct req { int v; } req_t;\n"
    "typedef struct resp { int v; } resp_t;\n"
    "__kernel void empty(void) {}\n"
    "__kernel void add_one(__global const req_t *in, __global resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

typedef struct raw {
  rk_cl_api_t api;
  cl_context ctx;
  cl_command_queue queue;
  cl_program program;
  cl_kernel empty, add_one;
  cl_mem buf, req, resp;
} raw_t;

static bool raw_ok(cl_int err, const char *what) {
  if (err == RK_CL_SUCCESS) return true;
  printf("raw OpenCL: %s: %s (%d)\n", what, rk__cl_error_name(err), (int)err);
  ++g_failures;
  return false;
}

static bool raw_open(raw_t *r, cl_platform_id platform, cl_device_id dev) {
  memset(r, 0, sizeof *r);
  if (rk__cl_api_load(&r->api) != RK_OK) {
    printf("raw OpenCL: %s\n", rk_last_error());
    return false;
  }
  const rk_cl_api_t *a = &r->api;
  cl_int err = 0;
  cl_context_properties props[] = {0x1084, (cl_context_properties)platform, 0};
  r->ctx = a->clCreateContext(props, 1, &dev, NULL, NULL, &err);
  if (!raw_ok(err, "clCreateContext")) return false;
  r->queue = a->clCreateCommandQueue(r->ctx, dev, 0, &err);
  if (!raw_ok(err, "clCreateCommandQueue")) return false;
  const char *src = kRawSource;
  size_t len = strlen(src);
  r->program = a->clCreateProgramWithSource(r->ctx, 1, &src, &len, &err);
  if (!raw_ok(err, "clCreateProgramWithSource")) return false;
  if (!raw_ok(
          a->clBuildProgram(r->program, 1, &dev, "-cl-std=CL1.2", NULL, NULL),
          "clBuildProgram"))
    return false;
  r->empty = a->clCreateKernel(r->program, "empty", &err);
  if (!raw_ok(err, "clCreateKernel")) return false;
  r->add_one = a->clCreateKernel(r->program, "add_one", &err);
  if (!raw_ok(err, "clCreateKernel")) return false;
  r->buf = a->clCreateBuffer(r->ctx, RK_CL_MEM_READ_WRITE, 64, NULL, &err);
  if (!raw_ok(err, "clCreateBuffer")) return false;
  r->req = a->clCreateBuffer(r->ctx, RK_CL_MEM_READ_WRITE, 4, NULL, &err);
  if (!raw_ok(err, "clCreateBuffer")) return false;
  r->resp = a->clCreateBuffer(r->ctx, RK_CL_MEM_READ_WRITE, 4, NULL, &err);
  if (!raw_ok(err, "clCreateBuffer")) return false;
  return raw_ok(a->clSetKernelArg(r->add_one, 0, sizeof r->req, &r->req),
                "clSetKernelArg") &&
         raw_ok(a->clSetKernelArg(r->add_one, 1, sizeof r->resp, &r->resp),
                "clSetKernelArg");
}

static void raw_close(raw_t *r) {
  const rk_cl_api_t *a = &r->api;
  if (!a->handle) return;
  if (r->buf) a->clReleaseMemObject(r->buf);
  if (r->req) a->clReleaseMemObject(r->req);
  if (r->resp) a->clReleaseMemObject(r->resp);
  if (r->empty) a->clReleaseKernel(r->empty);
  if (r->add_one) a->clReleaseKernel(r->add_one);
  if (r->program) a->clReleaseProgram(r->program);
  if (r->queue) a->clReleaseCommandQueue(r->queue);
  if (r->ctx) a->clReleaseContext(r->ctx);
  rk__cl_api_unload(&r->api);
}

/* ---- One timed round of each operation (microseconds per op) ------------ */

typedef struct rkside {
  rk_context_t *ctx;
  rk_function_t *empty, *bump;
  rk_devptr_t buf, req, resp;
  rk_stream_t *stream;
  rk_actor_t *actor;
} rkside_t;

static double rk_dispatch(rkside_t *s, int iters) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    rk_function_launch(s->empty, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0, NULL,
                       NULL, 0);
    if (rk_context_synchronize(s->ctx) != RK_OK) {
      BENCH_CHECK(false, "rk dispatch: %s", rk_last_error());
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_dispatch(raw_t *r, int iters) {
  const size_t one = 1;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    r->api.clEnqueueNDRangeKernel(r->queue, r->empty, 1, NULL, &one, &one, 0,
                                  NULL, NULL);
    if (!raw_ok(r->api.clFinish(r->queue), "clFinish")) break;
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double rk_roundtrip(rkside_t *s, int iters) {
  unsigned char out[64], in[64];
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, sizeof out);
    rk_context_copy_to_device(s->ctx, s->buf, out, sizeof out);
    rk_context_copy_to_host(s->ctx, in, s->buf, sizeof in);
    if (in[63] != (unsigned char)(i & 0xff)) {
      BENCH_CHECK(false, "rk round trip %d read %u", i, in[63]);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_roundtrip(raw_t *r, int iters) {
  unsigned char out[64], in[64];
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, sizeof out);
    r->api.clEnqueueWriteBuffer(r->queue, r->buf, RK_CL_TRUE, 0, sizeof out,
                                out, 0, NULL, NULL);
    r->api.clEnqueueReadBuffer(r->queue, r->buf, RK_CL_TRUE, 0, sizeof in, in,
                               0, NULL, NULL);
    if (in[63] != (unsigned char)(i & 0xff)) {
      BENCH_CHECK(false, "raw round trip %d read %u", i, in[63]);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* The relaunch actor's step by hand on a stream: copy in, launch, copy
 * out, synchronize. */
static double rk_stream_step(rkside_t *s, int iters) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q = i, a = -1;
    rk_arg_t args[] = {rk_arg_ptr(s->req), rk_arg_ptr(s->resp)};
    rk_stream_copy_to_device(s->stream, s->req, &q, sizeof q);
    rk_function_launch(s->bump, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                       s->stream, args, 2);
    rk_stream_copy_to_host(s->stream, &a, s->resp, sizeof a);
    rk_status_t st = rk_stream_synchronize(s->stream);
    if (st != RK_OK || a != i + 1) {
      BENCH_CHECK(false, "rk stream step %d: %s, answer %d", i,
                  rk_status_name(st), a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double rk_actor_rt(rkside_t *s, int iters) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q = i, a = -1;
    rk_status_t st = rk_actor_call(s->actor, &q, sizeof q, &a, sizeof a,
                                   RK_TIMEOUT_INFINITE, NULL);
    if (st != RK_OK || a != i + 1) {
      BENCH_CHECK(false, "rk actor call %d: %s, answer %d", i,
                  rk_status_name(st), a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_actor_rt(raw_t *r, int iters) {
  const size_t one = 1;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q = i, a = -1;
    r->api.clEnqueueWriteBuffer(r->queue, r->req, RK_CL_FALSE, 0, sizeof q, &q,
                                0, NULL, NULL);
    r->api.clEnqueueNDRangeKernel(r->queue, r->add_one, 1, NULL, &one, &one, 0,
                                  NULL, NULL);
    r->api.clEnqueueReadBuffer(r->queue, r->resp, RK_CL_TRUE, 0, sizeof a, &a,
                               0, NULL, NULL);
    if (a != i + 1) {
      BENCH_CHECK(false, "raw actor round trip %d answered %d", i, a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* ---- Driver ------------------------------------------------------------- */

static void row(const char *name, const double *rk, const double *raw,
                int rounds) {
  rkb_summary_t a = rkb_summarize(rk, (size_t)rounds);
  rkb_summary_t b = rkb_summarize(raw, (size_t)rounds);
  printf("%-10s %10.2f (%8.2f-%8.2f) %10.2f (%8.2f-%8.2f) %7.2f\n", name,
         a.median, a.p10, a.p90, b.median, b.p10, b.p90,
         b.median > 0 ? a.median / b.median : 0.0);
}

int main(int argc, char **argv) {
  long rounds = 21, iters = 300;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      rounds = 5;
      iters = 30;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1, 10000, &rounds) == 0) {
      ++i;
    } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1, 10000000, &iters) == 0) {
      ++i;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--rounds N] [--iters N]\n",
              argv[0]);
      return 2;
    }
  }
  rk_backend_t *be = NULL;
  if (rk_backend_open(RK_BACKEND_OPENCL, &be) != RK_OK ||
      rk_backend_device_count(be) == 0) {
    printf("SKIPPED: no OpenCL device: %s\n",
           be ? "the platform has no device" : rk_last_error());
    rk_backend_destroy(be);
    return 77;
  }
  const ocl_device_t *dev = &((ocl_backend_t *)be)->devices[0];
  rkside_t s;
  memset(&s, 0, sizeof s);
  rk_module_t *mod = NULL;
  if (rk_backend_create_context(be, 0, &s.ctx) != RK_OK ||
      rk_context_compile(s.ctx, kSource, NULL, &mod) != RK_OK ||
      rk_module_get_function(mod, "empty", &s.empty) != RK_OK ||
      rk_module_get_function(mod, "bump", &s.bump) != RK_OK ||
      rk_context_allocate(s.ctx, 64, &s.buf) != RK_OK ||
      rk_context_allocate(s.ctx, 4, &s.req) != RK_OK ||
      rk_context_allocate(s.ctx, 4, &s.resp) != RK_OK ||
      rk_context_create_stream(s.ctx, &s.stream) != RK_OK) {
    printf("rk: %s\n", rk_last_error());
    return 1;
  }
  raw_t raw;
  if (!raw_open(&raw, dev->platform, dev->id)) return 1;

  rk_actor_options_t ao;
  rk_actor_options_init(&ao);
  ao.mode = RK_ACTOR_PERSISTENT;
  char actor_why[512] = "";
  rk_status_t as = rk_actor_launch(s.ctx, kSource, "add_one", &ao, &s.actor);
  if (as != RK_OK) {
    snprintf(actor_why, sizeof actor_why, "%s: %s", rk_status_name(as),
             rk_last_error());
    s.actor = NULL;
  }

  printf("bench_opencl: %s (%s, %s); %ld rounds of %ld operations\n",
         dev->info.name, dev->platform_name, dev->version, rounds, iters);
  printf("microseconds per operation: median (p10-p90); ratio = rk / raw\n");
  printf("%-10s %32s %32s %7s\n", "operation", "rk", "raw OpenCL", "ratio");
  double *a = calloc((size_t)rounds, sizeof *a);
  double *b = calloc((size_t)rounds, sizeof *b);
  /* One warm-up of each, then alternating rounds. */
  rk_dispatch(&s, 5);
  raw_dispatch(&raw, 5);
  for (long r = 0; r < rounds; ++r) {
    a[r] = rk_dispatch(&s, (int)iters);
    b[r] = raw_dispatch(&raw, (int)iters);
  }
  row("dispatch", a, b, (int)rounds);
  rk_roundtrip(&s, 5);
  raw_roundtrip(&raw, 5);
  for (long r = 0; r < rounds; ++r) {
    a[r] = rk_roundtrip(&s, (int)iters);
    b[r] = raw_roundtrip(&raw, (int)iters);
  }
  row("roundtrip", a, b, (int)rounds);
  rk_stream_step(&s, 5);
  for (long r = 0; r < rounds; ++r) {
    a[r] = rk_stream_step(&s, (int)iters);
    b[r] = raw_actor_rt(&raw, (int)iters);
  }
  row("step", a, b, (int)rounds);
  if (s.actor) {
    rk_actor_rt(&s, 5);
    raw_actor_rt(&raw, 5);
    for (long r = 0; r < rounds; ++r) {
      a[r] = rk_actor_rt(&s, (int)iters);
      b[r] = raw_actor_rt(&raw, (int)iters);
    }
    row("actor", a, b, (int)rounds);
    rk_actor_stats_t st;
    if (rk_actor_stats(s.actor, &st) == RK_OK)
      printf(
          "           (actor execution: %s, %llu batches for %llu "
          "requests)\n",
          st.execution == RK_ACTOR_EXEC_RELAUNCH   ? "relaunch"
          : st.execution == RK_ACTOR_EXEC_RESIDENT ? "resident"
                                                   : "per request",
          (unsigned long long)st.batches, (unsigned long long)st.processed);
    BENCH_CHECK(rk_actor_terminate(s.actor, 5000000000ull) == RK_OK,
                "actor terminate: %s", rk_last_error());
    rk_actor_destroy(s.actor);
  } else {
    printf("%-10s not available: %s\n", "actor", actor_why);
  }
  free(a);
  free(b);
  raw_close(&raw);
  rk_stream_destroy(s.stream);
  rk_context_free(s.ctx, s.buf);
  rk_context_free(s.ctx, s.req);
  rk_context_free(s.ctx, s.resp);
  rk_context_destroy(s.ctx);
  rk_backend_destroy(be);
  if (g_failures) printf("%d check(s) FAILED\n", g_failures);
  return g_failures ? 1 : 0;
}
