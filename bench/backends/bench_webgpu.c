/* bench_webgpu: what rk costs on top of WebGPU, side by side in one run.
 *
 * Every row runs twice on device 0 of the same implementation: through rk,
 * and written directly against webgpu.h (the library loaded by rk's own
 * loader, a WGPUDevice of its own):
 *
 *   dispatch   an empty kernel, dispatched and waited for
 *              rk:  rk_function_launch + rk_context_synchronize
 *              raw: encoder, compute pass, dispatch, submit, device poll
 *   launch/100 100 empty launches, then one wait (time per launch)
 *              rk:  100 x rk_function_launch + rk_context_synchronize
 *              raw: 100 dispatches in one compute pass, submit, device poll
 *   roundtrip  64 bytes written to a buffer and read back
 *              rk:  rk_context_copy_to_device + rk_context_copy_to_host
 *              raw: wgpuQueueWriteBuffer, copy into a map-read buffer,
 *                   submit, map, memcpy, unmap
 *   loop+read  a kernel looping 2000 times on one thread, then 4 bytes read
 *              rk:  rk_function_launch + rk_context_copy_to_host (on
 *                   llvmpipe with the loop guard: its slot read with them)
 *              raw: the same WGSL without the guard, dispatched, copied
 *                   into a map-read buffer, submit, map, read
 *   actor      one request through an actor handler and its answer back
 *              rk:  rk_actor_call on an RK_ACTOR_PERSISTENT actor (relaunch
 *                   emulation on WebGPU)
 *              raw: write the request, dispatch the handler kernel, copy the
 *                   response into a map-read buffer, map, read
 *   actor/spin0  on a software adapter (lavapipe), the actor row again with
 *              RK_ACTOR_SPIN_US=0: the relaunch thread parks at once instead
 *              of spinning on CPUs the device's own threads need
 *
 * Rounds of rk and raw alternate; each round times `iters` operations and
 * gives one time per operation. Printed: the median and p10-p90 over the
 * rounds, and the ratio of the medians (rk / raw). Every answer is checked.
 *
 *   bench_webgpu [--quick] [--rounds N] [--iters N] [--json]
 *
 * Exits 77 (skipped) with the reason when no WebGPU adapter is found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/webgpu/webgpu_backend.h"
#include "bench_pair.h"
#include "rk/actor.h"
#include "rk/codegen.h"
#include "rk/rk.h"

enum { kBatch = 100 }; /* launches per wait in the "launch/100" row */

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct req { int v; } req_t;\n"
    "typedef struct resp { int v; } resp_t;\n"
    "RK_KERNEL void empty(void) {}\n"
    "RK_KERNEL void spin(int *x) {\n"
    "  int v = x[0];\n"
    "  for (int i = 0; i < 2000; i++) v = v * 3 + 1;\n"
    "  x[0] = v;\n"
    "}\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

/* ---- The raw side: webgpu.h by hand ------------------------------------- */

typedef struct raw {
  const rk__wgpu_procs_t *p;
  WGPUInstance instance;
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  WGPUShaderModule empty_mod, handler_mod, spin_mod;
  WGPUBindGroupLayout empty_bgl, handler_bgl, spin_bgl;
  WGPUPipelineLayout empty_layout, handler_layout, spin_layout;
  WGPUComputePipeline empty, handler, spin;
  WGPUBindGroup handler_group, empty_group, spin_group;
  WGPUBuffer buf, req, resp, readback;
} raw_t;

typedef struct flag {
  int done;
  uint32_t status;
  void *object;
} flag_t;

static void on_adapter(uint32_t status, WGPUAdapter a, WGPUStringView m,
                       void *u1, void *u2) {
  (void)m;
  (void)u2;
  flag_t *f = u1;
  f->status = status;
  f->object = a;
  __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

static void on_device(uint32_t status, WGPUDevice d, WGPUStringView m, void *u1,
                      void *u2) {
  (void)m;
  (void)u2;
  flag_t *f = u1;
  f->status = status;
  f->object = d;
  __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

static void on_map(uint32_t status, WGPUStringView m, void *u1, void *u2) {
  (void)m;
  (void)u2;
  flag_t *f = u1;
  f->status = status;
  __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

/* Runs the instance's events (and polls the device) until the flag. */
static void raw_wait(raw_t *r, flag_t *f, bool gpu) {
  while (!__atomic_load_n(&f->done, __ATOMIC_ACQUIRE)) {
    if (r->device && r->p->wgpuDevicePoll)
      r->p->wgpuDevicePoll(r->device, gpu, NULL);
    r->p->wgpuInstanceProcessEvents(r->instance);
  }
}

static WGPUBuffer raw_buffer(raw_t *r, uint64_t size, WGPUBufferUsage usage) {
  WGPUBufferDescriptor d;
  memset(&d, 0, sizeof d);
  d.usage = usage;
  d.size = size;
  return r->p->wgpuDeviceCreateBuffer(r->device, &d);
}

static bool raw_pipeline(raw_t *r, const char *wgsl, const char *entry,
                         size_t nbuffers, const bool *read_only,
                         WGPUShaderModule *mod, WGPUBindGroupLayout *bgl,
                         WGPUPipelineLayout *layout,
                         WGPUComputePipeline *pipe) {
  const rk__wgpu_procs_t *p = r->p;
  WGPUShaderSourceWGSL src;
  memset(&src, 0, sizeof src);
  src.chain.sType = RK_WGPU_STYPE_SHADER_SOURCE_WGSL;
  src.code.data = wgsl;
  src.code.length = RK_WGPU_STRLEN;
  WGPUShaderModuleDescriptor md;
  memset(&md, 0, sizeof md);
  md.nextInChain = &src.chain;
  *mod = p->wgpuDeviceCreateShaderModule(r->device, &md);
  WGPUBindGroupLayoutEntry le[2];
  memset(le, 0, sizeof le);
  for (size_t i = 0; i < nbuffers; ++i) {
    le[i].binding = (uint32_t)i;
    le[i].visibility = RK_WGPU_STAGE_COMPUTE;
    le[i].buffer.type = read_only[i] ? RK_WGPU_BINDING_READ_ONLY_STORAGE
                                     : RK_WGPU_BINDING_STORAGE;
  }
  WGPUBindGroupLayoutDescriptor bd;
  memset(&bd, 0, sizeof bd);
  bd.entryCount = nbuffers;
  bd.entries = le;
  *bgl = p->wgpuDeviceCreateBindGroupLayout(r->device, &bd);
  WGPUPipelineLayoutDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.bindGroupLayoutCount = 1;
  pd.bindGroupLayouts = bgl;
  *layout = p->wgpuDeviceCreatePipelineLayout(r->device, &pd);
  WGPUConstantEntry c[3];
  memset(c, 0, sizeof c);
  static const char *const kNames[] = {"rk_wg_x", "rk_wg_y", "rk_wg_z"};
  for (int i = 0; i < 3; ++i) {
    c[i].key.data = kNames[i];
    c[i].key.length = RK_WGPU_STRLEN;
    c[i].value = 1;
  }
  WGPUComputePipelineDescriptor cd;
  memset(&cd, 0, sizeof cd);
  cd.layout = *layout;
  cd.compute.module = *mod;
  cd.compute.entryPoint.data = entry;
  cd.compute.entryPoint.length = RK_WGPU_STRLEN;
  cd.compute.constantCount = 3;
  cd.compute.constants = c;
  *pipe = p->wgpuDeviceCreateComputePipeline(r->device, &cd);
  return *mod && *bgl && *layout && *pipe;
}

static char *transpile(const char *entry) {
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.entry = entry;
  char *text = NULL;
  if (rk_transpile(kSource, RK_TARGET_WGSL, &o, &text) != RK_OK) {
    printf("raw WebGPU: transpiling %s: %s\n", entry, rk_last_error());
    return NULL;
  }
  return text;
}

static bool raw_open(raw_t *r) {
  memset(r, 0, sizeof *r);
  if (rk__wgpu_load(&r->p) != RK_OK) {
    printf("raw WebGPU: %s\n", rk_last_error());
    return false;
  }
  const rk__wgpu_procs_t *p = r->p;
  /* The library's shared instance (rk's loader keeps it for the process);
   * the device is the raw side's own. */
  r->instance = rk__wgpu_instance(p);
  if (!r->instance) return false;
  /* The same adapter rk calls device 0. */
  if (p->wgpuInstanceEnumerateAdapters) {
    WGPUInstanceEnumerateAdapterOptions o = {NULL, RK_WGPU_BACKENDS_PRIMARY};
    WGPUAdapter all[16];
    size_t n = p->wgpuInstanceEnumerateAdapters(r->instance, &o, NULL);
    if (n == 0 || n > 16) return false;
    p->wgpuInstanceEnumerateAdapters(r->instance, &o, all);
    r->adapter = all[0];
    for (size_t i = 1; i < n; ++i) p->wgpuAdapterRelease(all[i]);
  } else {
    flag_t f = {0, 0, NULL};
    WGPURequestAdapterCallbackInfo ci = {
        NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_adapter, &f, NULL};
    p->wgpuInstanceRequestAdapter(r->instance, NULL, ci);
    raw_wait(r, &f, false);
    r->adapter = f.object;
  }
  if (!r->adapter) return false;
  flag_t f = {0, 0, NULL};
  WGPURequestDeviceCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_device, &f, NULL};
  p->wgpuAdapterRequestDevice(r->adapter, NULL, ci);
  raw_wait(r, &f, false);
  r->device = f.object;
  if (!r->device) return false;
  r->queue = p->wgpuDeviceGetQueue(r->device);
  char *empty = transpile("empty"), *handler = transpile("add_one");
  char *spin = transpile("spin");
  bool ok = empty && handler && spin;
  const bool ro[2] = {true, false};
  ok = ok && raw_pipeline(r, empty, "empty", 0, ro, &r->empty_mod,
                          &r->empty_bgl, &r->empty_layout, &r->empty);
  ok = ok && raw_pipeline(r, handler, "add_one", 2, ro, &r->handler_mod,
                          &r->handler_bgl, &r->handler_layout, &r->handler);
  const bool rw[1] = {false};
  ok = ok && raw_pipeline(r, spin, "spin", 1, rw, &r->spin_mod, &r->spin_bgl,
                          &r->spin_layout, &r->spin);
  rk_transpile_free(empty);
  rk_transpile_free(handler);
  rk_transpile_free(spin);
  if (!ok) return false;
  const WGPUBufferUsage storage =
      RK_WGPU_USAGE_STORAGE | RK_WGPU_USAGE_COPY_SRC | RK_WGPU_USAGE_COPY_DST;
  r->buf = raw_buffer(r, 64, storage);
  r->req = raw_buffer(r, 16, storage);
  r->resp = raw_buffer(r, 16, storage);
  r->readback =
      raw_buffer(r, 64, RK_WGPU_USAGE_MAP_READ | RK_WGPU_USAGE_COPY_DST);
  WGPUBindGroupEntry be[2];
  memset(be, 0, sizeof be);
  be[0].binding = 0;
  be[0].buffer = r->req;
  be[0].size = 16;
  be[1].binding = 1;
  be[1].buffer = r->resp;
  be[1].size = 16;
  WGPUBindGroupDescriptor bd;
  memset(&bd, 0, sizeof bd);
  bd.layout = r->handler_bgl;
  bd.entryCount = 2;
  bd.entries = be;
  r->handler_group = p->wgpuDeviceCreateBindGroup(r->device, &bd);
  bd.layout = r->empty_bgl;
  bd.entryCount = 0;
  r->empty_group = p->wgpuDeviceCreateBindGroup(r->device, &bd);
  be[0].buffer = r->buf;
  be[0].size = 64;
  bd.layout = r->spin_bgl;
  bd.entryCount = 1;
  r->spin_group = p->wgpuDeviceCreateBindGroup(r->device, &bd);
  return r->buf && r->req && r->resp && r->readback && r->handler_group &&
         r->empty_group && r->spin_group;
}

static void raw_close(raw_t *r) {
  const rk__wgpu_procs_t *p = r->p;
  if (!p) return;
#define REL(fn, x) \
  if (x) p->fn(x)
  REL(wgpuBindGroupRelease, r->handler_group);
  REL(wgpuBindGroupRelease, r->empty_group);
  REL(wgpuBindGroupRelease, r->spin_group);
  REL(wgpuComputePipelineRelease, r->spin);
  REL(wgpuPipelineLayoutRelease, r->spin_layout);
  REL(wgpuBindGroupLayoutRelease, r->spin_bgl);
  REL(wgpuShaderModuleRelease, r->spin_mod);
  REL(wgpuBufferRelease, r->buf);
  REL(wgpuBufferRelease, r->req);
  REL(wgpuBufferRelease, r->resp);
  REL(wgpuBufferRelease, r->readback);
  REL(wgpuComputePipelineRelease, r->empty);
  REL(wgpuComputePipelineRelease, r->handler);
  REL(wgpuPipelineLayoutRelease, r->empty_layout);
  REL(wgpuPipelineLayoutRelease, r->handler_layout);
  REL(wgpuBindGroupLayoutRelease, r->empty_bgl);
  REL(wgpuBindGroupLayoutRelease, r->handler_bgl);
  REL(wgpuShaderModuleRelease, r->empty_mod);
  REL(wgpuShaderModuleRelease, r->handler_mod);
  REL(wgpuQueueRelease, r->queue);
  REL(wgpuDeviceRelease, r->device);
  REL(wgpuAdapterRelease, r->adapter);
#undef REL
}

/* Records a dispatch of `pipe` (and, with `from`, a copy of 4 or 64 bytes
 * into the readback buffer), submits it and waits. */
static void raw_submit(raw_t *r, WGPUComputePipeline pipe, WGPUBindGroup group,
                       WGPUBuffer from, uint64_t bytes) {
  const rk__wgpu_procs_t *p = r->p;
  WGPUCommandEncoder enc = p->wgpuDeviceCreateCommandEncoder(r->device, NULL);
  if (pipe) {
    WGPUComputePassEncoder pass =
        p->wgpuCommandEncoderBeginComputePass(enc, NULL);
    p->wgpuComputePassEncoderSetPipeline(pass, pipe);
    p->wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
    p->wgpuComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
    p->wgpuComputePassEncoderEnd(pass);
    p->wgpuComputePassEncoderRelease(pass);
  }
  if (from)
    p->wgpuCommandEncoderCopyBufferToBuffer(enc, from, 0, r->readback, 0,
                                            bytes);
  WGPUCommandBuffer cb = p->wgpuCommandEncoderFinish(enc, NULL);
  p->wgpuQueueSubmit(r->queue, 1, &cb);
  p->wgpuCommandBufferRelease(cb);
  p->wgpuCommandEncoderRelease(enc);
}

/* Maps the readback buffer and copies `bytes` out. */
static void raw_read(raw_t *r, void *dst, size_t bytes) {
  const rk__wgpu_procs_t *p = r->p;
  flag_t f = {0, 0, NULL};
  WGPUBufferMapCallbackInfo ci = {
      NULL, RK_WGPU_CALLBACK_MODE_ALLOW_PROCESS_EVENTS, on_map, &f, NULL};
  p->wgpuBufferMapAsync(r->readback, RK_WGPU_MAP_READ, 0, 64, ci);
  raw_wait(r, &f, true);
  const void *src = p->wgpuBufferGetConstMappedRange(r->readback, 0, 64);
  if (src) memcpy(dst, src, bytes);
  p->wgpuBufferUnmap(r->readback);
}

static double raw_dispatch(void *side, int iters) {
  raw_t *r = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    raw_submit(r, r->empty, r->empty_group, NULL, 0);
    if (r->p->wgpuDevicePoll) r->p->wgpuDevicePoll(r->device, 1, NULL);
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* 100 dispatches recorded in one compute pass, one submit, one wait. */
static double raw_batch(void *side, int iters) {
  raw_t *r = side;
  const rk__wgpu_procs_t *p = r->p;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    WGPUCommandEncoder enc = p->wgpuDeviceCreateCommandEncoder(r->device, NULL);
    WGPUComputePassEncoder pass =
        p->wgpuCommandEncoderBeginComputePass(enc, NULL);
    for (int k = 0; k < kBatch; ++k) {
      p->wgpuComputePassEncoderSetPipeline(pass, r->empty);
      p->wgpuComputePassEncoderSetBindGroup(pass, 0, r->empty_group, 0, NULL);
      p->wgpuComputePassEncoderDispatchWorkgroups(pass, 1, 1, 1);
    }
    p->wgpuComputePassEncoderEnd(pass);
    p->wgpuComputePassEncoderRelease(pass);
    WGPUCommandBuffer cb = p->wgpuCommandEncoderFinish(enc, NULL);
    p->wgpuQueueSubmit(r->queue, 1, &cb);
    p->wgpuCommandBufferRelease(cb);
    p->wgpuCommandEncoderRelease(enc);
    if (p->wgpuDevicePoll) p->wgpuDevicePoll(r->device, 1, NULL);
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters / kBatch;
}

static double raw_roundtrip(void *side, int iters) {
  raw_t *r = side;
  unsigned char out[64], in[64];
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, sizeof out);
    r->p->wgpuQueueWriteBuffer(r->queue, r->buf, 0, out, sizeof out);
    raw_submit(r, NULL, NULL, r->buf, 64);
    raw_read(r, in, sizeof in);
    if (in[0] != (unsigned char)(i & 0xff) || in[63] != in[0]) {
      RKB_CHECK(false, "raw round trip %d read %u", i, in[63]);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_actor_rt(void *side, int iters) {
  raw_t *r = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q[4] = {i, 0, 0, 0}, a = -1;
    r->p->wgpuQueueWriteBuffer(r->queue, r->req, 0, q, sizeof q);
    raw_submit(r, r->handler, r->handler_group, r->resp, 4);
    raw_read(r, &a, sizeof a);
    if (a != i + 1) {
      RKB_CHECK(false, "raw actor round trip %d answered %d", i, a);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* spin (2000 loop iterations on one thread), then 4 bytes read back. */
static double raw_spin(void *side, int iters) {
  raw_t *r = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int v = 0;
    raw_submit(r, r->spin, r->spin_group, r->buf, 4);
    raw_read(r, &v, sizeof v);
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* ---- The rk side -------------------------------------------------------- */

static rk_function_t *g_spin;

static double side_rk_spin(void *side, int iters) {
  rkb_rk_side_t *s = side;
  rk_arg_t arg = rk_arg_ptr(s->buf);
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int v = 0;
    rk_status_t st = rk_function_launch(g_spin, rk_dim3(1, 1, 1),
                                        rk_dim3(1, 1, 1), 0, NULL, &arg, 1);
    if (st == RK_OK) st = rk_context_copy_to_host(s->ctx, &v, s->buf, sizeof v);
    if (st != RK_OK) {
      RKB_CHECK(false, "rk spin %d: %s", i, rk_last_error());
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double side_rk_batch(void *side, int iters) {
  rkb_rk_side_t *s = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    rk_status_t st = RK_OK;
    for (int k = 0; k < kBatch && st == RK_OK; ++k)
      st = rk_function_launch(s->empty, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                              NULL, NULL, 0);
    if (st == RK_OK) st = rk_context_synchronize(s->ctx);
    if (st != RK_OK) {
      RKB_CHECK(false, "rk batch %d: %s", i, rk_last_error());
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters / kBatch;
}

/* ---- Driver ------------------------------------------------------------- */

int main(int argc, char **argv) {
  long rounds = 15, iters = 200;
  if (rkb_pair_args(argc, argv, 3, 20, &rounds, &iters) != 0) return 2;
  rk_backend_t *be = rkb_pair_open(RK_BACKEND_WEBGPU, "WebGPU adapter",
                                   "the implementation found none");
  if (!be) return 77;
  rk_device_info_t info;
  rk_backend_device_info(be, 0, &info);
  rkb_rk_side_t s;
  memset(&s, 0, sizeof s);
  rk_module_t *mod = NULL;
  if (rk_backend_create_context(be, 0, &s.ctx) != RK_OK ||
      rk_context_compile(s.ctx, kSource, NULL, &mod) != RK_OK ||
      rk_module_get_function(mod, "empty", &s.empty) != RK_OK ||
      rk_module_get_function(mod, "spin", &g_spin) != RK_OK ||
      rk_context_allocate(s.ctx, 64, &s.buf) != RK_OK) {
    printf("rk: %s\n", rk_last_error());
    return 1;
  }
  raw_t raw;
  if (!raw_open(&raw)) {
    printf("raw WebGPU: setting up the device and pipelines failed\n");
    return 1;
  }
  printf("bench_webgpu: %s (%s); %ld rounds of %ld operations\n", info.name,
         ((const rk__wgpu_procs_t *)raw.p)->path, rounds, iters);
  rkb_pair_device(info.name);
  rkb_pair_table("raw webgpu.h");
  double *a = calloc((size_t)rounds, sizeof *a);
  double *b = calloc((size_t)rounds, sizeof *b);
  rkb_pair_measure("dispatch", rkb_rk_dispatch, &s, raw_dispatch, &raw, rounds,
                   iters, a, b);
  long batch_iters = iters / 10 > 0 ? iters / 10 : 1;
  rkb_pair_measure("launch/100", side_rk_batch, &s, raw_batch, &raw, rounds,
                   batch_iters, a, b);
  rkb_pair_measure("roundtrip", rkb_rk_roundtrip, &s, raw_roundtrip, &raw,
                   rounds, iters, a, b);
  rkb_pair_measure("loop+read", side_rk_spin, &s, raw_spin, &raw, rounds, iters,
                   a, b);
  /* The actor starts only now, so that its thread is not around while the
   * rows above are measured. */
  char actor_why[512] = "";
  rk_actor_t *actor = rkb_persistent_actor(s.ctx, kSource, "add_one", actor_why,
                                           sizeof actor_why);
  if (actor) {
    rkb_pair_measure("actor", rkb_actor_calls, actor, raw_actor_rt, &raw,
                     rounds, iters, a, b);
    rkb_actor_note(actor);
    rk_actor_terminate(actor, 5000000000ull);
    rk_actor_destroy(actor);
    /* On a software adapter the device's threads share the CPU with the
     * relaunch thread's spinning (RK_ACTOR_SPIN_US): the same row with the
     * spin off shows what that costs. */
    if ((info.caps & RK_CAP_SOFTWARE) && !getenv("RK_ACTOR_SPIN_US")) {
      setenv("RK_ACTOR_SPIN_US", "0", 1);
      actor = rkb_persistent_actor(s.ctx, kSource, "add_one", actor_why,
                                   sizeof actor_why);
      if (actor) {
        rkb_pair_measure("actor/spin0", rkb_actor_calls, actor, raw_actor_rt,
                         &raw, rounds, iters, a, b);
        rk_actor_terminate(actor, 5000000000ull);
        rk_actor_destroy(actor);
      }
      unsetenv("RK_ACTOR_SPIN_US");
    }
  } else {
    printf("%-10s not available: %s\n", "actor", actor_why);
  }
  free(a);
  free(b);
  raw_close(&raw);
  rk_module_destroy(mod);
  rk_context_free(s.ctx, s.buf);
  RKB_CHECK(rk_context_destroy(s.ctx) == RK_OK, "context destroy: %s",
            rk_last_error());
  rk_backend_destroy(be);
  return rkb_pair_exit();
}
