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
 *   bench_opencl [--quick] [--rounds N] [--iters N] [--json]
 *
 * Exits 77 (skipped) with the reason when no OpenCL device can be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl.h"
#include "bench_pair.h"
#include "rk/actor.h"
#include "rk/rk.h"

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
  ++rkb_failures;
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
  rkb_rk_side_t base; /* ctx, empty, buf */
  rk_function_t *bump;
  rk_devptr_t req, resp;
  rk_stream_t *stream;
} rkside_t;

static double raw_dispatch(void *side, int iters) {
  raw_t *r = side;
  const size_t one = 1;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    r->api.clEnqueueNDRangeKernel(r->queue, r->empty, 1, NULL, &one, &one, 0,
                                  NULL, NULL);
    if (!raw_ok(r->api.clFinish(r->queue), "clFinish")) break;
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_roundtrip(void *side, int iters) {
  raw_t *r = side;
  unsigned char out[64], in[64];
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, sizeof out);
    r->api.clEnqueueWriteBuffer(r->queue, r->buf, RK_CL_TRUE, 0, sizeof out,
                                out, 0, NULL, NULL);
    r->api.clEnqueueReadBuffer(r->queue, r->buf, RK_CL_TRUE, 0, sizeof in, in,
                               0, NULL, NULL);
    if (in[63] != (unsigned char)(i & 0xff)) {
      RKB_CHECK(false, "raw round trip %d read %u", i, in[63]);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* The relaunch actor's step by hand on a stream: copy in, launch, copy
 * out, synchronize. */
static double rk_stream_step(void *side, int iters) {
  rkside_t *s = side;
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
      RKB_CHECK(false, "rk stream step %d: %s, answer %d", i,
                rk_status_name(st), a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_actor_rt(void *side, int iters) {
  raw_t *r = side;
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
      RKB_CHECK(false, "raw actor round trip %d answered %d", i, a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* ---- Driver ------------------------------------------------------------- */

int main(int argc, char **argv) {
  long rounds = 21, iters = 300;
  if (rkb_pair_args(argc, argv, 5, 30, &rounds, &iters) != 0) return 2;
  rk_backend_t *be = rkb_pair_open(RK_BACKEND_OPENCL, "OpenCL device",
                                   "the platform has no device");
  if (!be) return 77;
  const ocl_device_t *dev = &((ocl_backend_t *)be)->devices[0];
  rkside_t s;
  memset(&s, 0, sizeof s);
  rk_module_t *mod = NULL;
  if (rk_backend_create_context(be, 0, &s.base.ctx) != RK_OK ||
      rk_context_compile(s.base.ctx, kSource, NULL, &mod) != RK_OK ||
      rk_module_get_function(mod, "empty", &s.base.empty) != RK_OK ||
      rk_module_get_function(mod, "bump", &s.bump) != RK_OK ||
      rk_context_allocate(s.base.ctx, 64, &s.base.buf) != RK_OK ||
      rk_context_allocate(s.base.ctx, 4, &s.req) != RK_OK ||
      rk_context_allocate(s.base.ctx, 4, &s.resp) != RK_OK ||
      rk_context_create_stream(s.base.ctx, &s.stream) != RK_OK) {
    printf("rk: %s\n", rk_last_error());
    return 1;
  }
  raw_t raw;
  if (!raw_open(&raw, dev->platform, dev->id)) return 1;

  char actor_why[512] = "";
  rk_actor_t *actor = rkb_persistent_actor(s.base.ctx, kSource, "add_one",
                                           actor_why, sizeof actor_why);

  printf("bench_opencl: %s (%s, %s); %ld rounds of %ld operations\n",
         dev->info.name, dev->platform_name, dev->version, rounds, iters);
  rkb_pair_device(dev->info.name);
  rkb_pair_table("raw OpenCL");
  double *a = calloc((size_t)rounds, sizeof *a);
  double *b = calloc((size_t)rounds, sizeof *b);
  rkb_pair_measure("dispatch", rkb_rk_dispatch, &s.base, raw_dispatch, &raw,
                   rounds, iters, a, b);
  rkb_pair_measure("roundtrip", rkb_rk_roundtrip, &s.base, raw_roundtrip, &raw,
                   rounds, iters, a, b);
  rkb_pair_measure("step", rk_stream_step, &s, raw_actor_rt, &raw, rounds,
                   iters, a, b);
  if (actor) {
    rkb_pair_measure("actor", rkb_actor_calls, actor, raw_actor_rt, &raw,
                     rounds, iters, a, b);
    rkb_actor_note(actor);
    RKB_CHECK(rk_actor_terminate(actor, 5000000000ull) == RK_OK,
              "actor terminate: %s", rk_last_error());
    rk_actor_destroy(actor);
  } else {
    printf("%-10s not available: %s\n", "actor", actor_why);
  }
  free(a);
  free(b);
  raw_close(&raw);
  rk_stream_destroy(s.stream);
  rk_context_free(s.base.ctx, s.base.buf);
  rk_context_free(s.base.ctx, s.req);
  rk_context_free(s.base.ctx, s.resp);
  rk_context_destroy(s.base.ctx);
  rk_backend_destroy(be);
  return rkb_pair_exit();
}
