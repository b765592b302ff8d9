/* bench_cuda: the cost rk adds on top of CUDA, side by side in one run.
 *
 * Each row is done through rk and written directly against the CUDA driver
 * API on the same device and primary context (the driver and NVRTC opened
 * with rk's own loader, backends/cuda/cuda_api.h; the raw kernels are CUDA C
 * compiled by NVRTC for the device's compute capability):
 *
 *   launch     an empty kernel launched and waited for
 *              (rk_function_launch + rk_context_synchronize;
 *               cuLaunchKernel + cuStreamSynchronize)          target <= 10 us
 *   roundtrip  64 bytes to the device and back (rk copies from ordinary
 *              memory; cuMemcpyHtoD + cuMemcpyDtoH from a pinned buffer)
 *   actor      one request through a persistent actor and its answer:
 *              rk_actor_call on a resident actor kernel; raw: a minimal
 *              persistent kernel polling a command line (sequence, value,
 *              stop) in mapped pinned memory and answering in a second
 *              line, the floor the hardware allows. The raw kernel is
 *              launched for each of its rounds and stopped after it, so
 *              it never spins during rk's rounds (rk's actor stays
 *              resident, idle, during the raw ones). Per-request p50 and
 *              p99 for both.                              target rk p50 <= 5 us
 *   inject     rk_actor_send alone (a store into the ring and its publish),
 *              averaged over a burst that fits the ring; the answers are
 *              received untimed afterwards. No raw side.
 *   msgs/s     sustained throughput with 64 requests in flight through
 *              rk_actor_send / rk_actor_receive for about a second. No raw
 *              side.
 *   trad       one request through a traditional-mode actor (a launch per
 *              request); raw: cuMemcpyHtoDAsync + cuLaunchKernel +
 *              cuMemcpyDtoHAsync + cuStreamSynchronize with pinned buffers
 *
 * Rounds of rk and raw alternate; each round times `iters` operations.
 * Printed: median and p10-p90 over the rounds' per-operation times, the
 * ratio of the medians (rk / raw) and the target where there is one; for the
 * actor row, p50 and p99 over every single request. Every answer is
 * checked; a wrong one fails the run (exit 1). Targets are reported, never
 * enforced.
 *
 *   bench_cuda [--quick] [--rounds N] [--iters N] [--json [PATH]]
 *
 * --json PATH writes the rows to PATH as JSON, one row per line, rewritten
 * as each row is done; --json alone prints the rows in microseconds as one
 * JSON object on stdout at the end (the table goes to stderr). Every wait has a
 * deadline (5 s): a side that stops answering fails its row and its later
 * rounds are skipped. A kernel that will not stop (the mailbox, or the actor
 * past its termination deadline) ends the run without releasing the device,
 * since releasing could wait for that kernel; the process's exit ends it. Exits
 * 77 (skipped) with the reason when no CUDA device can be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_api.h"
#include "bench_pair.h"
#include "rk/actor.h"
#include "rk/rk.h"

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct req { int v; } req_t;\n"
    "typedef struct resp { int v; } resp_t;\n"
    "RK_KERNEL void empty(void) {}\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

/* The raw side's kernels. The mailbox's words: 0 the command's sequence
 * number, 1 its value, 2 stop (one 64-byte line, written by the host); 8
 * the answer's sequence number, 9 its value (the next line, written by the
 * device). */
static const char kRawSource[] =
    "extern \"C\" __global__ void empty(void) {}\n"
    "extern \"C\" __global__ void add_one(const int *in, int *out) {\n"
    "  out[0] = in[0] + 1;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned long long\n"
    "ld_acquire(const unsigned long long *p) {\n"
    "  unsigned long long v;\n"
    "  asm volatile(\"ld.acquire.sys.global.u64 %0, [%1];\"\n"
    "               : \"=l\"(v) : \"l\"(p) : \"memory\");\n"
    "  return v;\n"
    "}\n"
    "static __device__ __forceinline__ void\n"
    "st_release(unsigned long long *p, unsigned long long v) {\n"
    "  asm volatile(\"st.release.sys.global.u64 [%0], %1;\"\n"
    "               :: \"l\"(p), \"l\"(v) : \"memory\");\n"
    "}\n"
    "extern \"C\" __global__ void mailbox(unsigned long long *box) {\n"
    "  volatile unsigned long long *vb = box;\n"
    "  unsigned long long last = 0;\n"
    "  for (;;) {\n"
    "    unsigned long long seq = ld_acquire(&box[0]);\n"
    "    if (seq != last) {\n"
    "      vb[9] = vb[1] + 1;\n"
    "      st_release(&box[8], seq);\n"
    "      last = seq;\n"
    "    } else if (ld_acquire(&box[2]) != 0) {\n"
    "      break;\n"
    "    }\n"
    "  }\n"
    "}\n";

static const uint64_t kWaitNs = 5000000000ull; /* any one wait: 5 s */

/* ---- The raw side ------------------------------------------------------- */

typedef struct raw {
  rk_cu_api_t api;
  const rk_nvrtc_api_t *nv;
  CUdevice dev;
  CUcontext ctx;
  bool retained;
  int cc_major, cc_minor;
  char arch[32];
  char name[128];
  CUstream stream, mb_stream;
  CUmodule mod;
  CUfunction empty, add_one, mailbox;
  CUdeviceptr buf, req, resp, box_dev;
  unsigned char *pin; /* 128 bytes pinned: 64 out, 64 in */
  int *pin_req, *pin_resp;
  uint64_t *box; /* 16 words of mapped pinned memory */
  bool mailbox_running;
} raw_t;

static bool cu_ok(const raw_t *r, CUresult err, const char *what) {
  if (err == RK_CUDA_SUCCESS) return true;
  const char *text = NULL;
  if (r->api.cuGetErrorString) r->api.cuGetErrorString(err, &text);
  printf("raw CUDA: %s: %s (%d)%s%s\n", what, rk__cu_error_name(err), err,
         text ? ": " : "", text ? text : "");
  ++rkb_failures;
  return false;
}

/* The architecture to build the raw kernels for: sm_XY (a CUBIN) when
 * this NVRTC knows the device's compute capability, else compute_XY of the
 * newest one it knows below it (PTX, which the driver finishes); false when
 * it knows none at or below the device. */
static bool raw_arch(raw_t *r, bool *out_cubin) {
  const rk_nvrtc_api_t *nv = r->nv;
  const int want = r->cc_major * 10 + r->cc_minor;
  int count = 0, archs[256];
  *out_cubin = nv->nvrtcGetCUBIN && nv->nvrtcGetCUBINSize;
  if (!nv->nvrtcGetNumSupportedArchs || !nv->nvrtcGetSupportedArchs ||
      nv->nvrtcGetNumSupportedArchs(&count) != RK_NVRTC_SUCCESS || count <= 0 ||
      count > 256 || nv->nvrtcGetSupportedArchs(archs) != RK_NVRTC_SUCCESS) {
    /* An NVRTC that cannot list its architectures: try the device's. */
    snprintf(r->arch, sizeof r->arch, "%s_%d", *out_cubin ? "sm" : "compute",
             want);
    return true;
  }
  int best = 0;
  for (int i = 0; i < count; ++i) {
    if (archs[i] == want) best = want;
    if (archs[i] < want && archs[i] > best) best = archs[i];
  }
  if (!best) {
    printf("raw CUDA: NVRTC %d.%d builds for nothing at or below sm_%d\n",
           nv->major, nv->minor, want);
    return false;
  }
  if (best != want) *out_cubin = false;
  snprintf(r->arch, sizeof r->arch, "%s_%d", *out_cubin ? "sm" : "compute",
           best);
  return true;
}

/* NVRTC: kRawSource for the device's architecture (raw_arch). */
static bool raw_compile(raw_t *r, void **out_image) {
  const rk_nvrtc_api_t *nv = r->nv;
  bool cubin = false;
  if (!raw_arch(r, &cubin)) {
    ++rkb_failures;
    return false;
  }
  char opt[64];
  snprintf(opt, sizeof opt, "--gpu-architecture=%s", r->arch);
  const char *opts[] = {opt};
  nvrtcProgram prog = NULL;
  if (nv->nvrtcCreateProgram(&prog, kRawSource, "raw.cu", 0, NULL, NULL) !=
      RK_NVRTC_SUCCESS) {
    printf("raw CUDA: nvrtcCreateProgram failed\n");
    ++rkb_failures;
    return false;
  }
  nvrtcResult res = nv->nvrtcCompileProgram(prog, 1, opts);
  if (res != RK_NVRTC_SUCCESS) {
    size_t n = 0;
    char log[4096] = "";
    if (nv->nvrtcGetProgramLogSize(prog, &n) == RK_NVRTC_SUCCESS &&
        n < sizeof log)
      nv->nvrtcGetProgramLog(prog, log);
    printf("raw CUDA: NVRTC for %s: %s\n%s\n", r->arch,
           nv->nvrtcGetErrorString(res), log);
    nv->nvrtcDestroyProgram(&prog);
    ++rkb_failures;
    return false;
  }
  size_t size = 0;
  void *image = NULL;
  nvrtcResult got = cubin ? nv->nvrtcGetCUBINSize(prog, &size)
                          : nv->nvrtcGetPTXSize(prog, &size);
  if (got == RK_NVRTC_SUCCESS && (image = malloc(size + 1)) != NULL) {
    got = cubin ? nv->nvrtcGetCUBIN(prog, image) : nv->nvrtcGetPTX(prog, image);
    ((char *)image)[size] = '\0';
  }
  nv->nvrtcDestroyProgram(&prog);
  if (got != RK_NVRTC_SUCCESS || !image) {
    free(image);
    printf(
        "raw CUDA: NVRTC built the raw kernels for %s but handed out no "
        "image\n",
        r->arch);
    ++rkb_failures;
    return false;
  }
  *out_image = image;
  return true;
}

/* Everything the raw rows need, made before any persistent kernel runs
 * (loading modules and allocating may wait for the whole context). */
static bool raw_open(raw_t *r) {
  memset(r, 0, sizeof *r);
  if (rk__cu_api_load(&r->api) != RK_OK || rk__nvrtc_api(&r->nv) != RK_OK) {
    printf("raw CUDA: %s\n", rk_last_error());
    ++rkb_failures;
    return false;
  }
  const rk_cu_api_t *a = &r->api;
  if (!cu_ok(r, a->cuDeviceGet(&r->dev, 0), "cuDeviceGet") ||
      !cu_ok(r, a->cuDevicePrimaryCtxRetain(&r->ctx, r->dev),
             "cuDevicePrimaryCtxRetain"))
    return false;
  r->retained = true;
  if (!cu_ok(r, a->cuCtxSetCurrent(r->ctx), "cuCtxSetCurrent")) return false;
  a->cuDeviceGetName(r->name, (int)sizeof r->name, r->dev);
  a->cuDeviceGetAttribute(
      &r->cc_major, RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, r->dev);
  a->cuDeviceGetAttribute(
      &r->cc_minor, RK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, r->dev);
  void *image = NULL;
  if (!raw_compile(r, &image)) return false;
  bool ok = cu_ok(r, a->cuModuleLoadData(&r->mod, image), "cuModuleLoadData");
  free(image);
  if (!ok ||
      !cu_ok(r, a->cuModuleGetFunction(&r->empty, r->mod, "empty"),
             "cuModuleGetFunction(empty)") ||
      !cu_ok(r, a->cuModuleGetFunction(&r->add_one, r->mod, "add_one"),
             "cuModuleGetFunction(add_one)") ||
      !cu_ok(r, a->cuModuleGetFunction(&r->mailbox, r->mod, "mailbox"),
             "cuModuleGetFunction(mailbox)") ||
      !cu_ok(r, a->cuStreamCreate(&r->stream, RK_CU_STREAM_NON_BLOCKING),
             "cuStreamCreate") ||
      !cu_ok(r, a->cuStreamCreate(&r->mb_stream, RK_CU_STREAM_NON_BLOCKING),
             "cuStreamCreate") ||
      !cu_ok(r, a->cuMemAlloc(&r->buf, 64), "cuMemAlloc") ||
      !cu_ok(r, a->cuMemAlloc(&r->req, 4), "cuMemAlloc") ||
      !cu_ok(r, a->cuMemAlloc(&r->resp, 4), "cuMemAlloc"))
    return false;
  void *pin = NULL, *pin_req = NULL, *pin_resp = NULL, *box = NULL;
  if (!cu_ok(r, a->cuMemHostAlloc(&pin, 128, 0), "cuMemHostAlloc"))
    return false;
  r->pin = pin;
  if (!cu_ok(r, a->cuMemHostAlloc(&pin_req, 64, 0), "cuMemHostAlloc"))
    return false;
  r->pin_req = pin_req;
  if (!cu_ok(r, a->cuMemHostAlloc(&pin_resp, 64, 0), "cuMemHostAlloc"))
    return false;
  r->pin_resp = pin_resp;
  if (!cu_ok(r,
             a->cuMemHostAlloc(
                 &box, 128,
                 RK_CU_MEMHOSTALLOC_DEVICEMAP | RK_CU_MEMHOSTALLOC_PORTABLE),
             "cuMemHostAlloc(DEVICEMAP)"))
    return false;
  r->box = box;
  memset(box, 0, 128);
  return cu_ok(r, a->cuMemHostGetDevicePointer(&r->box_dev, box, 0),
               "cuMemHostGetDevicePointer");
}

/* Set when a kernel of this process would not stop (the mailbox, or an
 * actor that missed its termination deadline). From then on nothing that
 * may wait for the whole device (frees, unloads, releasing the context) is
 * called: the results are written and the process exits, which ends the
 * kernel. */
static bool g_gpu_stuck;

/* Asks the mailbox kernel to stop and waits (up to kWaitNs) for it. */
static void raw_mailbox_stop(raw_t *r) {
  if (!r->mailbox_running) return;
  __atomic_store_n(&r->box[2], 1, __ATOMIC_RELEASE);
  uint64_t t0 = rkb_now_ns();
  CUresult err;
  while ((err = r->api.cuStreamQuery(r->mb_stream)) ==
             RK_CUDA_ERROR_NOT_READY &&
         rkb_now_ns() - t0 < kWaitNs) {
  }
  r->mailbox_running = false;
  if (err == RK_CUDA_ERROR_NOT_READY) {
    printf("raw CUDA: the mailbox kernel did not stop within %.0f s\n",
           (double)kWaitNs / 1e9);
    ++rkb_failures;
    g_gpu_stuck = true;
    return;
  }
  cu_ok(r, err, "mailbox kernel");
}

static bool raw_mailbox_start(raw_t *r) {
  if (g_gpu_stuck) return false;
  /* The kernel is not running: nothing reads the mailbox meanwhile. */
  memset(r->box, 0, 128);
  void *params[] = {&r->box_dev};
  if (!cu_ok(r,
             r->api.cuLaunchKernel(r->mailbox, 1, 1, 1, 1, 1, 1, 0,
                                   r->mb_stream, params, NULL),
             "cuLaunchKernel(mailbox)"))
    return false;
  r->mailbox_running = true;
  return true;
}

static void raw_close(raw_t *r) {
  const rk_cu_api_t *a = &r->api;
  if (!a->handle) return;
  raw_mailbox_stop(r);
  if (g_gpu_stuck) return; /* see g_gpu_stuck */
  if (r->ctx) a->cuCtxSetCurrent(r->ctx);
  if (r->stream) a->cuStreamSynchronize(r->stream);
  if (r->buf) a->cuMemFree(r->buf);
  if (r->req) a->cuMemFree(r->req);
  if (r->resp) a->cuMemFree(r->resp);
  if (r->pin) a->cuMemFreeHost(r->pin);
  if (r->pin_req) a->cuMemFreeHost(r->pin_req);
  if (r->pin_resp) a->cuMemFreeHost(r->pin_resp);
  if (r->box) a->cuMemFreeHost(r->box);
  if (r->stream) a->cuStreamDestroy(r->stream);
  if (r->mb_stream) a->cuStreamDestroy(r->mb_stream);
  if (r->mod) a->cuModuleUnload(r->mod);
  if (r->retained) a->cuDevicePrimaryCtxRelease(r->dev);
  rk__cu_api_unload(&r->api);
}

/* ---- Raw operations (microseconds per operation) ----------------------- */

static double raw_launch(void *side, int iters) {
  raw_t *r = side;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    CUresult err = r->api.cuLaunchKernel(r->empty, 1, 1, 1, 1, 1, 1, 0,
                                         r->stream, NULL, NULL);
    if (err == RK_CUDA_SUCCESS) err = r->api.cuStreamSynchronize(r->stream);
    if (!cu_ok(r, err, "launch + cuStreamSynchronize")) break;
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_roundtrip(void *side, int iters) {
  raw_t *r = side;
  unsigned char *out = r->pin, *in = r->pin + 64;
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    memset(out, i & 0xff, 64);
    CUresult err = r->api.cuMemcpyHtoD(r->buf, out, 64);
    if (err == RK_CUDA_SUCCESS) err = r->api.cuMemcpyDtoH(in, r->buf, 64);
    if (!cu_ok(r, err, "cuMemcpyHtoD + cuMemcpyDtoH")) break;
    if (in[0] != (unsigned char)(i & 0xff) || in[63] != in[0]) {
      RKB_CHECK(false, "raw round trip %d read %u", i, in[63]);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

static double raw_trad(void *side, int iters) {
  raw_t *r = side;
  void *params[] = {&r->req, &r->resp};
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    *r->pin_req = i;
    *r->pin_resp = -1;
    CUresult err = r->api.cuMemcpyHtoDAsync(r->req, r->pin_req, 4, r->stream);
    if (err == RK_CUDA_SUCCESS)
      err = r->api.cuLaunchKernel(r->add_one, 1, 1, 1, 1, 1, 1, 0, r->stream,
                                  params, NULL);
    if (err == RK_CUDA_SUCCESS)
      err = r->api.cuMemcpyDtoHAsync(r->pin_resp, r->resp, 4, r->stream);
    if (err == RK_CUDA_SUCCESS) err = r->api.cuStreamSynchronize(r->stream);
    if (!cu_ok(r, err, "copy + launch + copy + synchronize")) break;
    if (*r->pin_resp != i + 1) {
      RKB_CHECK(false, "raw request %d answered %d", i, *r->pin_resp);
      break;
    }
  }
  return (double)(rkb_now_ns() - t0) / 1e3 / iters;
}

/* ---- Per-request timing for the actor row ------------------------------ */

/* A side of the actor row: `iters` requests, each timed alone into
 * samples[] (microseconds); returns the mean. */
typedef double (*timed_fn)(void *side, int iters, double *samples);

/* Set after a request through the rk actor failed: its later rounds and
 * rows are skipped rather than each waiting kWaitNs for an actor that does
 * not answer. */
static bool g_rk_actor_failed;

static double rk_actor_timed(void *side, int iters, double *samples) {
  rk_actor_t *a = side;
  if (g_rk_actor_failed) {
    for (int i = 0; i < iters; ++i) samples[i] = 0;
    return 0;
  }
  uint64_t start = rkb_now_ns();
  for (int i = 0; i < iters; ++i) {
    int q = i * 3 + 1, v = -1;
    uint64_t t0 = rkb_now_ns();
    /* A deadline, as everywhere here: an actor that never answers fails
     * the run instead of hanging it. */
    rk_status_t st =
        rk_actor_call(a, &q, sizeof q, &v, sizeof v, kWaitNs, NULL);
    samples[i] = (double)(rkb_now_ns() - t0) / 1e3;
    if (st != RK_OK || v != q + 1) {
      RKB_CHECK(false, "rk actor call %d: %s (%s), answer %d", i,
                rk_status_name(st), rk_last_error(), v);
      for (int j = i + 1; j < iters; ++j) samples[j] = samples[i];
      g_rk_actor_failed = true;
      break;
    }
  }
  return (double)(rkb_now_ns() - start) / 1e3 / iters;
}

/* `iters` requests through the running mailbox kernel, each timed alone
 * into samples[]; false (with a failed check) at the first one not
 * answered right within kWaitNs. */
static bool raw_mailbox_requests(raw_t *r, int iters, double *samples) {
  volatile uint64_t *box = r->box;
  for (int i = 0; i < iters; ++i) {
    uint64_t seq = box[0] + 1, value = (uint64_t)i * 3 + 1;
    uint64_t t0 = rkb_now_ns();
    /* The value first; the release store of the sequence number publishes
     * it (the kernel reads the number with ld.acquire.sys). */
    box[1] = value;
    __atomic_store_n(&r->box[0], seq, __ATOMIC_RELEASE);
    bool late = false;
    for (unsigned spins = 0;
         __atomic_load_n(&r->box[8], __ATOMIC_ACQUIRE) != seq; ++spins)
      if ((spins & 4095) == 4095 && rkb_now_ns() - t0 > kWaitNs) {
        late = true;
        break;
      }
    /* Read after the acquire of the answer's sequence number, which the
     * kernel published with st.release.sys after writing the value. */
    uint64_t answer = box[9];
    samples[i] = (double)(rkb_now_ns() - t0) / 1e3;
    if (late || answer != value + 1) {
      RKB_CHECK(false, "raw mailbox request %d: %s, answer %llu", i,
                late ? "no answer in 5 s" : "wrong answer",
                (unsigned long long)answer);
      for (int j = i + 1; j < iters; ++j) samples[j] = samples[i];
      return false;
    }
  }
  return true;
}

/* Set after the mailbox kernel failed: its later rounds are skipped. */
static bool g_raw_mailbox_failed;

/* One raw round of the actor row. The mailbox kernel runs only during its
 * own rounds: it is launched, answers one untimed request (so that it is
 * running before the clock starts), answers `iters` timed ones and is
 * stopped again, so it never spins beside rk's rounds. Returns the mean. */
static double raw_mailbox_round(void *side, int iters, double *samples) {
  raw_t *r = side;
  for (int i = 0; i < iters; ++i) samples[i] = 0;
  if (g_raw_mailbox_failed || !raw_mailbox_start(r)) {
    g_raw_mailbox_failed = true;
    return 0;
  }
  double first;
  uint64_t start = 0, end = 0;
  if (raw_mailbox_requests(r, 1, &first)) {
    start = rkb_now_ns();
    if (!raw_mailbox_requests(r, iters, samples)) g_raw_mailbox_failed = true;
    end = rkb_now_ns();
  } else {
    g_raw_mailbox_failed = true;
  }
  raw_mailbox_stop(r);
  if (g_gpu_stuck) g_raw_mailbox_failed = true;
  return (double)(end - start) / 1e3 / iters;
}

/* ---- Results and printing ----------------------------------------------- */

typedef struct result {
  const char *name;
  const char *unit; /* "us" or "msgs/s" */
  bool has_raw, has_tail;
  rkb_summary_t rk, raw;                   /* over rounds */
  double rk_p50, rk_p99, raw_p50, raw_p99; /* over requests (has_tail) */
  double target;                           /* 0: none */
  const char *target_what;                 /* "median", "p50" */
  const char *note;
  int failures_before; /* rkb_failures when the row began */
  bool failed;         /* a check failed while it was measured */
} result_t;

enum { kMaxRows = 8 };
static result_t g_rows[kMaxRows];
static int g_nrows;

static result_t *add_row(const char *name, const char *unit) {
  result_t *r = &g_rows[g_nrows++];
  memset(r, 0, sizeof *r);
  r->name = name;
  r->unit = unit;
  r->target_what = "median";
  r->failures_before = rkb_failures;
  return r;
}

static void print_heading(void) {
  printf("per operation: median (p10-p90) over rounds; ratio = rk / raw\n");
  printf("%-10s %32s %32s %7s  %s\n", "operation", "rk", "raw CUDA", "ratio",
         "target (rk)");
}

static void print_row(const result_t *r) {
  char rk[64], raw[64] = "-", ratio[16] = "-", target[64] = "";
  const char *fmt = strcmp(r->unit, "us") == 0 ? "%10.2f (%8.2f-%8.2f)"
                                               : "%10.0f (%8.0f-%8.0f)";
  snprintf(rk, sizeof rk, fmt, r->rk.median, r->rk.p10, r->rk.p90);
  if (r->has_raw) {
    snprintf(raw, sizeof raw, fmt, r->raw.median, r->raw.p10, r->raw.p90);
    if (r->raw.median > 0)
      snprintf(ratio, sizeof ratio, "%7.2f", r->rk.median / r->raw.median);
  }
  if (r->failed) {
    snprintf(target, sizeof target, "FAILED (see above)");
  } else if (r->target > 0) {
    double v = r->has_tail ? r->rk_p50 : r->rk.median;
    snprintf(target, sizeof target, "%s <= %g us: %s", r->target_what,
             r->target, v <= r->target ? "met" : "MISSED");
  }
  printf("%-10s %32s %32s %7s  %s\n", r->name, rk, raw, ratio, target);
  if (r->has_tail)
    printf(
        "%-10s   per request: rk p50 %.2f p99 %.2f us; raw p50 %.2f "
        "p99 %.2f us\n",
        "", r->rk_p50, r->rk_p99, r->raw_p50, r->raw_p99);
  if (r->has_tail && r->raw_p50 > 0)
    printf(
        "%-10s   time until the GPU sees a command: about %.2f us (half the "
        "raw mailbox p50: host and GPU clocks cannot be compared directly)\n",
        "", r->raw_p50 / 2);
  if (r->note) printf("%-10s   (%s)\n", "", r->note);
}

static void write_json(const char *path, const char *device, long rounds,
                       long iters) {
  FILE *f = fopen(path, "w");
  if (!f) {
    printf("cannot write %s\n", path);
    ++rkb_failures;
    return;
  }
  fprintf(f, "{\"bench\": \"bench_cuda\", \"device\": \"");
  for (const char *p = device; *p; ++p)
    if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) fputc(*p, f);
  fprintf(f, "\", \"rounds\": %ld, \"iters\": %ld, \"failures\": %d,\n", rounds,
          iters, rkb_failures);
  fprintf(f, " \"rows\": [\n");
  for (int i = 0; i < g_nrows; ++i) {
    const result_t *r = &g_rows[i];
    fprintf(f,
            "  {\"row\": \"%s\", \"unit\": \"%s\", \"rk_median\": %.4f, "
            "\"rk_p10\": %.4f, \"rk_p90\": %.4f",
            r->name, r->unit, r->rk.median, r->rk.p10, r->rk.p90);
    if (r->has_raw)
      fprintf(f, ", \"raw_median\": %.4f, \"raw_p10\": %.4f, \"raw_p90\": %.4f",
              r->raw.median, r->raw.p10, r->raw.p90);
    if (r->has_tail)
      fprintf(f,
              ", \"rk_p50\": %.4f, \"rk_p99\": %.4f, \"raw_p50\": %.4f, "
              "\"raw_p99\": %.4f",
              r->rk_p50, r->rk_p99, r->raw_p50, r->raw_p99);
    if (r->target > 0)
      fprintf(f, ", \"target_us\": %g, \"target_of\": \"%s\"", r->target,
              r->target_what);
    if (r->failed) fprintf(f, ", \"failed\": true");
    fprintf(f, "}%s\n", i + 1 < g_nrows ? "," : "");
  }
  fprintf(f, " ]}\n");
  fclose(f);
}

/* Where --json writes, and what its heading says. */
static const char *g_json_path, *g_json_device;
static long g_json_rounds, g_json_iters;

/* Prints a finished row and rewrites the JSON file with every row so far,
 * so that a run cut short still leaves the rows it finished. */
static void finish_row(result_t *row) {
  row->failed = rkb_failures > row->failures_before;
  print_row(row);
  fflush(stdout);
  if (g_json_path)
    write_json(g_json_path, g_json_device, g_json_rounds, g_json_iters);
}

/* Warms both sides up, then alternates `rounds` rounds of `iters`. */
static void measure_pair(result_t *row, rkb_side_fn rk_op, void *rk_side,
                         rkb_side_fn raw_op, void *raw_side, long rounds,
                         long iters, double *a, double *b) {
  rk_op(rk_side, 5);
  raw_op(raw_side, 5);
  for (long k = 0; k < rounds; ++k) {
    a[k] = rk_op(rk_side, (int)iters);
    b[k] = raw_op(raw_side, (int)iters);
  }
  row->has_raw = true;
  row->rk = rkb_summarize(a, (size_t)rounds);
  row->raw = rkb_summarize(b, (size_t)rounds);
  finish_row(row);
}

static double quantile(double *v, size_t n, double q) {
  qsort(v, n, sizeof *v, rkb_cmp_double_);
  return rkb_quantile_sorted(v, n, q);
}

/* The actor row: rounds alternate; every request timed. */
static void measure_actor(result_t *row, rk_actor_t *actor, raw_t *raw,
                          long rounds, long iters, double *a, double *b) {
  size_t total = (size_t)rounds * (size_t)iters;
  double *sa = malloc(total * sizeof *sa), *sb = malloc(total * sizeof *sb);
  double warm[5];
  if (!sa || !sb) {
    free(sa);
    free(sb);
    RKB_CHECK(false, "out of memory");
    return;
  }
  rk_actor_timed(actor, 5, warm);
  raw_mailbox_round(raw, 5, warm);
  for (long k = 0; k < rounds; ++k) {
    a[k] = rk_actor_timed(actor, (int)iters, sa + (size_t)k * iters);
    b[k] = raw_mailbox_round(raw, (int)iters, sb + (size_t)k * iters);
  }
  row->has_raw = row->has_tail = true;
  row->rk = rkb_summarize(a, (size_t)rounds);
  row->raw = rkb_summarize(b, (size_t)rounds);
  row->rk_p50 = quantile(sa, total, 0.50);
  row->rk_p99 = quantile(sa, total, 0.99);
  row->raw_p50 = quantile(sb, total, 0.50);
  row->raw_p99 = quantile(sb, total, 0.99);
  free(sa);
  free(sb);
  finish_row(row);
}

/* inject: bursts of `burst` sends, each burst's mean per send; then the
 * answers, untimed and checked. */
static void measure_inject(result_t *row, rk_actor_t *actor, long rounds,
                           int burst, double *a) {
  uint64_t *ids = malloc((size_t)burst * sizeof *ids);
  if (!ids) return;
  for (long k = 0; k < rounds; ++k) {
    uint64_t t0 = rkb_now_ns();
    int sent = 0;
    for (; sent < burst; ++sent) {
      int q = sent * 5 + (int)k;
      if (rk_actor_send(actor, &q, sizeof q, kWaitNs, &ids[sent]) != RK_OK) {
        RKB_CHECK(false, "inject send %d: %s", sent, rk_last_error());
        break;
      }
    }
    a[k] = (double)(rkb_now_ns() - t0) / 1e3 / (sent ? sent : 1);
    for (int i = 0; i < sent; ++i) {
      int v = -1;
      rk_actor_message_t info;
      rk_status_t st = rk_actor_receive(actor, &v, sizeof v, kWaitNs, &info);
      if (st != RK_OK || v != i * 5 + (int)k + 1 ||
          info.correlation_id != ids[i]) {
        RKB_CHECK(false, "inject answer %d: %s, %d", i, rk_status_name(st), v);
        break;
      }
    }
  }
  free(ids);
  row->rk = rkb_summarize(a, (size_t)rounds);
  finish_row(row);
}

/* msgs/s: `window` requests kept in flight for `seconds`, split into
 * `slices` equal parts, each part's rate one sample. */
static void measure_throughput(result_t *row, rk_actor_t *actor, double seconds,
                               int slices, int window, double *a) {
  uint64_t slice_ns = (uint64_t)(seconds * 1e9 / slices);
  int sent = 0, received = 0, done = 0;
  bool ok = true;
  for (int s = 0; s < slices && ok; ++s) {
    uint64_t t0 = rkb_now_ns();
    int at_start = received;
    while (ok && rkb_now_ns() - t0 < slice_ns) {
      while (ok && sent - received < window) {
        int q = sent;
        ok = rk_actor_send(actor, &q, sizeof q, kWaitNs, NULL) == RK_OK;
        RKB_CHECK(ok, "throughput send %d: %s", sent, rk_last_error());
        if (ok) ++sent;
      }
      if (!ok) break;
      int v = -1;
      ok = rk_actor_receive(actor, &v, sizeof v, kWaitNs, NULL) == RK_OK &&
           v == received + 1;
      RKB_CHECK(ok, "throughput answer %d: %d (%s)", received, v,
                rk_last_error());
      if (ok) ++received;
    }
    a[s] = (double)(received - at_start) / ((double)(rkb_now_ns() - t0) / 1e9);
    ++done;
  }
  while (ok && received < sent) {
    int v = -1;
    ok = rk_actor_receive(actor, &v, sizeof v, kWaitNs, NULL) == RK_OK &&
         v == received + 1;
    RKB_CHECK(ok, "throughput drain %d: %d", received, v);
    ++received;
  }
  row->rk = rkb_summarize(a, (size_t)done);
  finish_row(row);
}

static rk_actor_t *actor_in(rk_context_t *ctx, rk_actor_mode_t mode, char *why,
                            size_t cap) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = mode;
  rk_actor_t *a = NULL;
  rk_status_t s = rk_actor_launch(ctx, kSource, "add_one", &o, &a);
  if (s != RK_OK) {
    snprintf(why, cap, "%s: %s", rk_status_name(s), rk_last_error());
    return NULL;
  }
  return a;
}

static void actor_done(rk_actor_t *a, rk_actor_execution_t want) {
  rk_actor_stats_t st;
  if (rk_actor_stats(a, &st) == RK_OK) {
    printf(
        "%-10s   (actor execution: %s; %llu requests; its own p50 %.2f us, "
        "p99 %.2f us)\n",
        "", rk_actor_execution_name(st.execution),
        (unsigned long long)st.processed, st.latency_p50_ns / 1e3,
        st.latency_p99_ns / 1e3);
    RKB_CHECK(st.execution == want, "actor execution %s, want %s",
              rk_actor_execution_name(st.execution),
              rk_actor_execution_name(want));
  }
  rk_status_t s = rk_actor_terminate(a, kWaitNs);
  RKB_CHECK(s == RK_OK, "actor terminate: %s", rk_last_error());
  /* A kernel that missed the deadline may still run: see g_gpu_stuck. */
  if (s != RK_OK && want == RK_ACTOR_EXEC_RESIDENT) g_gpu_stuck = true;
  rk_actor_destroy(a);
}

/* ---- Driver ------------------------------------------------------------- */

int main(int argc, char **argv) {
  long rounds = 21, iters = 300;
  const char *json = NULL;
  bool quick = false;
  /* --json PATH is ours; the rest goes to the shared parser. */
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nrest = 0;
  if (!rest) return 2;
  rest[nrest++] = argv[0];
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc &&
        argv[i + 1][0] != '-') {
      json = argv[++i];
    } else {
      if (strcmp(argv[i], "--quick") == 0) quick = true;
      rest[nrest++] = argv[i];
    }
  }
  if (rkb_pair_args(nrest, rest, 3, 20, &rounds, &iters) != 0) {
    fprintf(stderr, "       %s also takes --json PATH\n", argv[0]);
    free(rest);
    return 2;
  }
  free(rest);

  rk_backend_t *be = rkb_pair_open(RK_BACKEND_CUDA, "CUDA device",
                                   "the driver reports no device");
  if (!be) return 77;
  rk_device_info_t info;
  rkb_rk_side_t s;
  memset(&s, 0, sizeof s);
  rk_module_t *mod = NULL;
  if (rk_backend_device_info(be, 0, &info) != RK_OK ||
      rk_backend_create_context(be, 0, &s.ctx) != RK_OK ||
      rk_context_compile(s.ctx, kSource, NULL, &mod) != RK_OK ||
      rk_module_get_function(mod, "empty", &s.empty) != RK_OK ||
      rk_context_allocate(s.ctx, 64, &s.buf) != RK_OK) {
    printf("rk: %s\n", rk_last_error());
    return 1;
  }
  raw_t raw;
  if (!raw_open(&raw)) {
    raw_close(&raw);
    return 1;
  }
  if (strcmp(raw.name, info.name) != 0)
    printf("note: rk's device 0 is %s, CUDA's ordinal 0 is %s\n", info.name,
           raw.name);
  printf(
      "bench_cuda: %s (compute capability %d.%d, raw kernels for %s; driver "
      "%d, NVRTC %d.%d); %ld rounds of %ld operations\n",
      info.name, raw.cc_major, raw.cc_minor, raw.arch, raw.api.driver_version,
      raw.nv->major, raw.nv->minor, rounds, iters);
  print_heading();
  double *a = calloc((size_t)rounds + 16, sizeof *a);
  double *b = calloc((size_t)rounds + 16, sizeof *b);
  if (!a || !b) return 1;
  g_json_path = json;
  g_json_device = info.name;
  g_json_rounds = rounds;
  g_json_iters = iters;

  result_t *row = add_row("launch", "us");
  row->target = 10;
  measure_pair(row, rkb_rk_dispatch, &s, raw_launch, &raw, rounds, iters, a, b);
  row = add_row("roundtrip", "us");
  row->note =
      "raw copies from a pinned buffer (cuMemHostAlloc); rk's from "
      "the caller's ordinary memory";
  measure_pair(row, rkb_rk_roundtrip, &s, raw_roundtrip, &raw, rounds, iters, a,
               b);

  char why[1024] = "";
  rk_actor_t *actor = actor_in(s.ctx, RK_ACTOR_PERSISTENT, why, sizeof why);
  if (actor) {
    row = add_row("actor", "us");
    row->target = 5;
    row->target_what = "p50";
    row->note =
        "raw: one persistent kernel polling a mapped 64-byte command line, "
        "answering in another, launched for its own rounds only; rk's "
        "actor stays resident (idle, backing off) through them";
    measure_actor(row, actor, &raw, rounds, iters, a, b);
    if (!g_rk_actor_failed) {
      row = add_row("inject", "us");
      row->note = "rk_actor_send alone, in bursts of 512; no raw side";
      measure_inject(row, actor, rounds, 512, a);
      row = add_row("msgs/s", "msgs/s");
      row->note = "64 requests in flight through send/receive; no raw side";
      measure_throughput(row, actor, quick ? 0.1 : 1.0, 10, 64, a);
    } else {
      printf("inject, msgs/s: skipped (the persistent actor failed above)\n");
    }
    actor_done(actor, RK_ACTOR_EXEC_RESIDENT);
  } else {
    RKB_CHECK(false, "persistent actor: %s", why);
  }

  /* Nothing more is started beside a kernel that never stopped. */
  rk_actor_t *trad =
      g_gpu_stuck ? NULL
                  : actor_in(s.ctx, RK_ACTOR_TRADITIONAL, why, sizeof why);
  if (g_gpu_stuck) {
    printf("trad: skipped (a kernel of this run never stopped)\n");
  } else if (trad) {
    row = add_row("trad", "us");
    row->note =
        "raw: async copy in, launch, async copy out, synchronize; "
        "pinned buffers";
    measure_pair(row, rkb_actor_calls, trad, raw_trad, &raw, rounds, iters, a,
                 b);
    actor_done(trad, RK_ACTOR_EXEC_PER_REQUEST);
  } else {
    RKB_CHECK(false, "traditional actor: %s", why);
  }

  if (json) write_json(json, info.name, rounds, iters);
  /* --json without a path: the rows in microseconds go to stdout through
   * the shared writer. */
  rkb_pair_device(info.name);
  for (int i = 0; i < g_nrows && rkb_pair_json.nrows < RKB_PAIR_MAX_ROWS; ++i)
    if (strcmp(g_rows[i].unit, "us") == 0) {
      rkb_pair_result_t *r = &rkb_pair_json.rows[rkb_pair_json.nrows++];
      snprintf(r->name, sizeof r->name, "%s", g_rows[i].name);
      r->rk = g_rows[i].rk;
      r->raw = g_rows[i].raw;
    }
  free(a);
  free(b);
  if (g_gpu_stuck) {
    /* Releasing memory, modules or the context could wait for the kernel
     * that never stopped; the process's exit ends it instead. */
    printf(
        "a kernel of this run never stopped: exiting without releasing "
        "the device\n");
    rkb_pair_exit();
    fflush(stdout);
    _exit(1);
  }
  raw_close(&raw);
  rk_context_free(s.ctx, s.buf);
  rk_context_destroy(s.ctx);
  rk_backend_destroy(be);
  return rkb_pair_exit();
}
