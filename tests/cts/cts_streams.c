/* CTS: streams - asynchronous copies and launches, in-order execution,
 * synchronization, and asynchronous errors. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cts.h"

// clang-format off
static const char kStreamKernels[] = KSRC(
    RK_KERNEL void affine(int n, int mul, int add, int *x) {
      int i = (int)rk_global_idx_x();
      if (i < n) x[i] = x[i] * mul + add;
    }
    RK_KERNEL void accumulate(int n, const int *in, int *acc) {
      int i = (int)rk_global_idx_x();
      if (i < n) acc[i] += in[i];
    }
    /* A few hundred steps of an LCG per element: enough work that queued
     * operations are still pending when the host moves on. */
    RK_KERNEL void churn(int n, int iters, uint32_t *x) {
      int i = (int)rk_global_idx_x();
      if (i >= n) return;
      uint32_t v = x[i];
      for (int k = 0; k < iters; ++k) v = v * 1664525u + 1013904223u;
      x[i] = v;
    }
    /* Spins until *flag becomes non-zero (or max_spins reads), then records
     * what it saw. */
    RK_KERNEL void wait_flag(int *flag, int *seen, uint32_t max_spins) {
      uint32_t k = 0;
      while (rk_atomic_add_i32(flag, 0) == 0 && k < max_spins) ++k;
      seen[0] = rk_atomic_add_i32(flag, 0);
    });
// clang-format on

static uint32_t churn_ref(uint32_t v, int iters) {
  for (int k = 0; k < iters; ++k) v = v * 1664525u + 1013904223u;
  return v;
}

/* ---- Two independent streams ------------------------------------------- */

void cts_stream_two_streams(rk_context_t *ctx) {
  enum { kN = 30001 };
  rk_module_t *mod = cts_compile(ctx, "streams.c", kStreamKernels);
  rk_function_t *fn = cts_function(mod, "affine");
  rk_stream_t *st[2] = {NULL, NULL};
  int *in[2], *out[2];
  rk_devptr_t d[2];
  const int mul[2] = {3, -5}, add[2] = {7, 11};
  for (int s = 0; s < 2; ++s) {
    in[s] = malloc(kN * sizeof(int));
    out[s] = malloc(kN * sizeof(int));
    for (int i = 0; i < kN; ++i) in[s][i] = i * (s + 1) - 1000;
    memset(out[s], 0, kN * sizeof(int));
    d[s] = cts_alloc(ctx, kN * sizeof(int), NULL);
    CHECK_OK(rk_context_create_stream(ctx, &st[s]));
  }
  CHECK(st[0] != st[1], "two streams are the same object");
  if (fn && d[0] && d[1] && st[0] && st[1]) {
    /* Queue both streams completely before waiting on either. */
    for (int s = 0; s < 2; ++s) {
      rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(mul[s]), rk_arg_i32(add[s]),
                         rk_arg_ptr(d[s])};
      CHECK_OK(rk_stream_copy_to_device(st[s], d[s], in[s], kN * sizeof(int)));
      CHECK_OK(rk_function_launch(fn, rk_dim3(cts_blocks(kN, 256), 1, 1),
                                  rk_dim3(256, 1, 1), 0, st[s], args, 4));
      CHECK_OK(rk_stream_copy_to_host(st[s], out[s], d[s], kN * sizeof(int)));
    }
    for (int s = 1; s >= 0; --s) CHECK_OK(rk_stream_synchronize(st[s]));
    for (int s = 0; s < 2; ++s) {
      int bad = 0;
      for (int i = 0; i < kN && bad < 5; ++i) {
        int want = in[s][i] * mul[s] + add[s];
        if (!CHECK(out[s][i] == want, "stream %d: x[%d] = %d, expected %d", s,
                   i, out[s][i], want))
          ++bad;
      }
    }
  }
  for (int s = 0; s < 2; ++s) {
    CHECK_OK(rk_stream_destroy(st[s]));
    if (d[s]) rk_context_free(ctx, d[s]);
    free(in[s]);
    free(out[s]);
  }
}

/* ---- In-order execution ------------------------------------------------- */

/* Each round copies new data into one staging buffer and adds it to an
 * accumulator; a launch that ran before its copy, or a copy that ran before
 * the previous launch, changes the sum. Halfway, a device-to-device copy
 * takes a snapshot of the partial sum. */
void cts_stream_in_order(rk_context_t *ctx) {
  enum { kN = 65536, kRounds = 16 };
  rk_module_t *mod = cts_compile(ctx, "streams.c", kStreamKernels);
  rk_function_t *acc_fn = cts_function(mod, "accumulate");
  int *host[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    host[r] = malloc(kN * sizeof(int));
    for (int i = 0; i < kN; ++i) host[r][i] = (r + 1) * 1000 + i % 997;
  }
  int *acc = calloc(kN, sizeof(int)), *snap = calloc(kN, sizeof(int));
  rk_devptr_t dstage = cts_alloc(ctx, kN * sizeof(int), NULL);
  rk_devptr_t dacc = cts_alloc(ctx, kN * sizeof(int), acc);
  rk_devptr_t dsnap = cts_alloc(ctx, kN * sizeof(int), NULL);
  rk_stream_t *st = NULL;
  if (acc_fn && dstage && dacc && dsnap &&
      CHECK_OK(rk_context_create_stream(ctx, &st))) {
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_ptr(dstage), rk_arg_ptr(dacc)};
    for (int r = 0; r < kRounds; ++r) {
      CHECK_OK(rk_stream_copy_to_device(st, dstage, host[r], kN * sizeof(int)));
      CHECK_OK(rk_function_launch(acc_fn, rk_dim3(cts_blocks(kN, 256), 1, 1),
                                  rk_dim3(256, 1, 1), 0, st, args, 3));
      if (r == kRounds / 2 - 1)
        CHECK_OK(
            rk_stream_copy_device_to_device(st, dsnap, dacc, kN * sizeof(int)));
    }
    CHECK_OK(rk_stream_copy_to_host(st, acc, dacc, kN * sizeof(int)));
    CHECK_OK(rk_stream_copy_to_host(st, snap, dsnap, kN * sizeof(int)));
    CHECK_OK(rk_stream_synchronize(st));
    int bad = 0;
    for (int i = 0; i < kN && bad < 5; ++i) {
      int want = 0, want_snap = 0;
      for (int r = 0; r < kRounds; ++r) {
        want += host[r][i];
        if (r == kRounds / 2 - 1) want_snap = want;
      }
      if (!CHECK(acc[i] == want && snap[i] == want_snap,
                 "element %d: sum %d (expected %d), snapshot %d (expected %d)",
                 i, acc[i], want, snap[i], want_snap))
        ++bad;
    }
  }
  CHECK_OK(rk_stream_destroy(st));
  if (dstage) rk_context_free(ctx, dstage);
  if (dacc) rk_context_free(ctx, dacc);
  if (dsnap) rk_context_free(ctx, dsnap);
  for (int r = 0; r < kRounds; ++r) free(host[r]);
  free(acc);
  free(snap);
}

/* ---- rk_context_synchronize waits for every stream --------------------- */

void cts_stream_context_sync_covers_all(rk_context_t *ctx) {
  enum { kN = 1 << 16, kIters = 300, kStreams = 3 };
  rk_module_t *mod = cts_compile(ctx, "streams.c", kStreamKernels);
  rk_function_t *fn = cts_function(mod, "churn");
  rk_stream_t *st[kStreams] = {NULL};
  uint32_t *in = malloc(kN * sizeof *in);
  uint32_t *out[kStreams + 1];
  rk_devptr_t d[kStreams + 1] = {0};
  for (int i = 0; i < kN; ++i) in[i] = (uint32_t)i * 2654435761u;
  for (int s = 0; s <= kStreams; ++s) {
    out[s] = calloc(kN, sizeof *out[s]);
    d[s] = cts_alloc(ctx, kN * sizeof *in, NULL);
    if (s < kStreams) CHECK_OK(rk_context_create_stream(ctx, &st[s]));
  }
  bool ready = fn != NULL;
  for (int s = 0; s <= kStreams; ++s) ready = ready && d[s];
  for (int s = 0; s < kStreams; ++s) ready = ready && st[s];
  if (ready) {
    for (int s = 0; s < kStreams; ++s) {
      rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(kIters + s),
                         rk_arg_ptr(d[s])};
      CHECK_OK(rk_stream_copy_to_device(st[s], d[s], in, kN * sizeof *in));
      CHECK_OK(rk_function_launch(fn, rk_dim3(kN / 256, 1, 1),
                                  rk_dim3(256, 1, 1), 0, st[s], args, 3));
      CHECK_OK(rk_stream_copy_to_host(st[s], out[s], d[s], kN * sizeof *in));
    }
    /* And the default stream. */
    rk_arg_t args[] = {rk_arg_i32(kN), rk_arg_i32(kIters + kStreams),
                       rk_arg_ptr(d[kStreams])};
    CHECK_OK(rk_context_copy_to_device(ctx, d[kStreams], in, kN * sizeof *in));
    CHECK_OK(rk_function_launch(fn, rk_dim3(kN / 256, 1, 1), rk_dim3(256, 1, 1),
                                0, NULL, args, 3));
    CHECK_OK(rk_context_synchronize(ctx));
    CHECK_OK(rk_context_copy_to_host(ctx, out[kStreams], d[kStreams],
                                     kN * sizeof *in));
    for (int s = 0; s <= kStreams; ++s) {
      int bad = 0;
      for (int i = 0; i < kN && bad < 3; ++i) {
        uint32_t want = churn_ref(in[i], kIters + s);
        if (!CHECK(out[s][i] == want,
                   "stream %d: x[%d] = %u, expected %u (not finished at "
                   "rk_context_synchronize?)",
                   s, i, out[s][i], want))
          ++bad;
      }
    }
    /* Nothing is left for the streams' own synchronization to report. */
    for (int s = 0; s < kStreams; ++s) CHECK_OK(rk_stream_synchronize(st[s]));
  }
  for (int s = 0; s <= kStreams; ++s) {
    if (s < kStreams) CHECK_OK(rk_stream_destroy(st[s]));
    if (d[s]) rk_context_free(ctx, d[s]);
    free(out[s]);
  }
  free(in);
}

/* ---- An asynchronous error surfaces at the next synchronization -------- */

typedef enum {
  kBySyncStream,
  kBySyncContext,
  kByDestroyStream,
  kByDestroyContext
} surface_t;

/* rk_context_free on a thread of its own, for a backend whose free waits
 * for the work queued before it. */
typedef struct free_job {
  rk_context_t *ctx;
  rk_devptr_t ptr;
  rk_status_t status;
  int done; /* atomic */
} free_job_t;

static void *free_main(void *arg) {
  free_job_t *job = arg;
  job->status = rk_context_free(job->ctx, job->ptr);
  __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* CUDA's rk_context_free waits for the work already queued on the
 * context's streams, which may still use the memory (docs/api.md): there
 * a queued copy never reads freed memory, it reads the data. */
static bool free_waits_for_queued_work(void) {
  return rk_backend_kind(cts_backend()) == RK_BACKEND_CUDA;
}

/* Whether a host write to a buffer reaches a kernel that is running and
 * reading it. OpenCL leaves that undefined (a memory object used by a
 * command of one queue and written by another), and NVIDIA's OpenCL makes
 * the write wait for the kernel: there the waiting kernel gives up after a
 * bounded number of reads instead, and may never see the flag. The copy
 * behind it still runs after the free, since an OpenCL stream holds a copy
 * back until the command before it has finished. */
static bool host_reaches_running_kernel(void) {
  return rk_backend_kind(cts_backend()) != RK_BACKEND_OPENCL;
}

/* Frees `src` while a kernel waiting for `flag` holds the stream, then
 * raises the flag. Where free waits for queued work, it is still waiting
 * after 100 ms (checked), the flag is raised beside it and it returns once
 * the stream ran: the copy behind the kernel read valid memory. Returns
 * whether the free waited. */
static bool free_then_raise(rk_context_t *ctx, rk_devptr_t src,
                            rk_devptr_t flag) {
  const int one = 1;
  if (!free_waits_for_queued_work()) {
    CHECK_OK(rk_context_free(ctx, src));
    CHECK_OK(rk_context_copy_to_device(ctx, flag, &one, sizeof one));
    return false;
  }
  free_job_t job = {ctx, src, RK_OK, 0};
  pthread_t t;
  if (!CHECK(pthread_create(&t, NULL, free_main, &job) == 0,
             "pthread_create")) {
    CHECK_OK(rk_context_copy_to_device(ctx, flag, &one, sizeof one));
    CHECK_OK(rk_context_free(ctx, src));
    return true;
  }
  sleep_ms(100);
  CHECK(!__atomic_load_n(&job.done, __ATOMIC_ACQUIRE),
        "rk_context_free returned while a kernel queued before it was still "
        "running (%s): it should wait for the work that may use the memory",
        rk_status_name(job.status));
  CHECK_OK(rk_context_copy_to_device(ctx, flag, &one, sizeof one));
  pthread_join(t, NULL);
  CHECK(job.status == RK_OK, "rk_context_free after the queued work: %s (%s)",
        rk_status_name(job.status), rk_last_error());
  return true;
}

/* Makes the stream fail deterministically: a kernel that waits for a flag
 * keeps the stream busy; a copy from `src` is queued behind it (valid when
 * queued); the host frees `src` and only then raises the flag. So the copy
 * runs after the free and must fail when it runs. Returns the status of the
 * synchronization chosen by `how`. Where free waits for queued work (CUDA),
 * the copy runs before the memory goes and must deliver the data, and the
 * synchronization reports nothing. */
static void freed_source_error(rk_context_t *ctx, rk_function_t *wait_fn,
                               surface_t how) {
  enum { kBytes = 4096 };
  static const char *const kHow[] = {"rk_stream_synchronize",
                                     "rk_context_synchronize",
                                     "rk_stream_destroy", "rk_context_destroy"};
  int zero = 0, seen = -1;
  unsigned char *dst = malloc(kBytes), *data = malloc(kBytes);
  memset(dst, 0x11, kBytes);
  memset(data, 0x22, kBytes);
  rk_devptr_t flag = cts_alloc(ctx, sizeof zero, &zero);
  rk_devptr_t dseen = cts_alloc(ctx, sizeof seen, &seen);
  rk_devptr_t src = cts_alloc(ctx, kBytes, data);
  rk_stream_t *st = NULL;
  if (!flag || !dseen || !src || !CHECK_OK(rk_context_create_stream(ctx, &st)))
    goto done;
  /* Bounded where the flag may not reach the kernel: 2^20 atomic reads
   * take a fraction of a second on a GPU, some milliseconds on a CPU. */
  const uint32_t spins = host_reaches_running_kernel() ? 1u << 31 : 1u << 20;
  rk_arg_t args[] = {rk_arg_ptr(flag), rk_arg_ptr(dseen), rk_arg_u32(spins)};
  CHECK_OK(rk_function_launch(wait_fn, rk_dim3(1, 1, 1), rk_dim3(1, 1, 1), 0,
                              st, args, 3));
  CHECK_OK(rk_stream_copy_to_host(st, dst, src, kBytes));
  const bool waited = free_then_raise(ctx, src, flag);

  char addr[32];
  snprintf(addr, sizeof addr, "%llx", (unsigned long long)src);
  rk_status_t s;
  rk_test_clear_error();
  if (how == kBySyncStream)
    s = rk_stream_synchronize(st);
  else if (how == kBySyncContext)
    s = rk_context_synchronize(ctx);
  else if (how == kByDestroyStream)
    s = rk_stream_destroy(st);
  else
    s = rk_context_destroy(ctx);
  if (how == kByDestroyStream) st = NULL;
  if (waited) {
    /* The copy ran before the memory went: nothing to report, the data
     * arrived. */
    CHECK(s == RK_OK,
          "%s after a free that waited for the queued copy: %s (%s)", kHow[how],
          rk_status_name(s), rk_last_error());
    CHECK(memcmp(dst, data, kBytes) == 0,
          "the copy queued before a waiting free did not deliver its data");
    if (how == kByDestroyContext) {
      free(dst);
      free(data);
      return;
    }
    CHECK_OK(rk_context_copy_to_host(ctx, &seen, dseen, sizeof seen));
    CHECK(seen == 1, "the waiting kernel never saw the flag (%d)", seen);
    goto done;
  }
  if (how == kByDestroyContext) {
    /* The context took its stream, memory and module with it. */
    CHECK(s == RK_ERR_INVALID_ARGUMENT,
          "rk_context_destroy with an unreported stream error returned %s",
          rk_status_name(s));
    CHECK_ERROR_HAS(addr);
    free(dst);
    free(data);
    return;
  }
  if (CHECK(s == RK_ERR_INVALID_ARGUMENT,
            "%s after a queued copy from freed memory returned %s, expected "
            "invalid argument (message: %s)",
            kHow[how], rk_status_name(s), rk_last_error())) {
    /* The message names the freed pointer. */
    CHECK_ERROR_HAS(addr);
  }
  CHECK_OK(rk_context_copy_to_host(ctx, &seen, dseen, sizeof seen));
  CHECK(seen == 1 || (seen == 0 && !host_reaches_running_kernel()),
        "the waiting kernel never saw the flag (%d): the stream did not run "
        "while the host freed the memory, so the test could not order the free "
        "before the copy",
        seen);
  bool untouched = true;
  for (int i = 0; i < kBytes; ++i) untouched = untouched && dst[i] == 0x11;
  CHECK(untouched, "the failed copy wrote to its destination");
  /* The error was reported once; it is cleared now. */
  if (st) CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_context_synchronize(ctx));
  /* And the stream still works. */
  if (st) {
    CHECK_OK(rk_stream_copy_to_host(st, &seen, flag, sizeof seen));
    CHECK_OK(rk_stream_synchronize(st));
    CHECK(seen == 1, "stream copy after the error read %d", seen);
  }
done:
  CHECK_OK(rk_stream_destroy(st));
  if (flag) rk_context_free(ctx, flag);
  if (dseen) rk_context_free(ctx, dseen);
  free(dst);
  free(data);
}

void cts_stream_async_error_surfaces(rk_context_t *ctx) {
  rk_module_t *mod = cts_compile(ctx, "streams.c", kStreamKernels);
  rk_function_t *fn = cts_function(mod, "wait_flag");
  if (!fn) return;
  freed_source_error(ctx, fn, kBySyncStream);
  freed_source_error(ctx, fn, kBySyncContext);
  freed_source_error(ctx, fn, kByDestroyStream);
  /* On a context of its own, since destroying it is the point. */
  rk_context_t *ctx2 = NULL;
  if (CHECK_OK(rk_backend_create_context(cts_backend(), 0, &ctx2))) {
    rk_module_t *mod2 = cts_compile(ctx2, "streams.c", kStreamKernels);
    rk_function_t *fn2 = cts_function(mod2, "wait_flag");
    if (fn2)
      freed_source_error(ctx2, fn2, kByDestroyContext);
    else
      CHECK_OK(rk_context_destroy(ctx2));
  }
}

/* ---- Destroying finishes queued work first ---------------------------- */

/* Queues churn(x) then a copy of the result to `out` on `st`. */
static void queue_churn(rk_stream_t *st, rk_function_t *fn, rk_devptr_t d,
                        const uint32_t *in, uint32_t *out, int n, int iters) {
  rk_arg_t args[] = {rk_arg_i32(n), rk_arg_i32(iters), rk_arg_ptr(d)};
  CHECK_OK(rk_stream_copy_to_device(st, d, in, (size_t)n * sizeof *in));
  CHECK_OK(rk_function_launch(fn, rk_dim3(cts_blocks(n, 256), 1, 1),
                              rk_dim3(256, 1, 1), 0, st, args, 3));
  CHECK_OK(rk_stream_copy_to_host(st, out, d, (size_t)n * sizeof *out));
}

static void check_churn(const char *what, const uint32_t *in,
                        const uint32_t *out, int n, int iters) {
  int bad = 0;
  for (int i = 0; i < n && bad < 3; ++i)
    if (!CHECK(out[i] == churn_ref(in[i], iters), "%s: x[%d] = %u, expected %u",
               what, i, out[i], churn_ref(in[i], iters)))
      ++bad;
}

void cts_stream_destroy_finishes_work(rk_context_t *ctx) {
  enum { kN = 1 << 15, kIters = 400 };
  uint32_t *in = malloc(kN * sizeof *in), *out = malloc(kN * sizeof *out);
  for (int i = 0; i < kN; ++i) in[i] = (uint32_t)i * 40503u + 1u;

  /* rk_stream_destroy right after queueing. */
  rk_module_t *mod = cts_compile(ctx, "streams.c", kStreamKernels);
  rk_function_t *fn = cts_function(mod, "churn");
  rk_devptr_t d = cts_alloc(ctx, kN * sizeof *in, NULL);
  rk_stream_t *st = NULL;
  if (fn && d && CHECK_OK(rk_context_create_stream(ctx, &st))) {
    memset(out, 0, kN * sizeof *out);
    queue_churn(st, fn, d, in, out, kN, kIters);
    CHECK_OK(rk_stream_destroy(st));
    check_churn("rk_stream_destroy", in, out, kN, kIters);

    /* rk_module_destroy while a launch of its kernel is queued. */
    CHECK_OK(rk_context_create_stream(ctx, &st));
    memset(out, 0, kN * sizeof *out);
    queue_churn(st, fn, d, in, out, kN, kIters + 1);
    CHECK_OK(rk_module_destroy(mod));
    CHECK_OK(rk_stream_synchronize(st));
    check_churn("rk_module_destroy", in, out, kN, kIters + 1);
    CHECK_OK(rk_stream_destroy(st));
  }
  if (d) rk_context_free(ctx, d);

  /* rk_context_destroy with work queued on its streams. */
  rk_context_t *ctx2 = NULL;
  if (CHECK_OK(rk_backend_create_context(cts_backend(), 0, &ctx2))) {
    rk_module_t *mod2 = cts_compile(ctx2, "streams.c", kStreamKernels);
    rk_function_t *fn2 = cts_function(mod2, "churn");
    rk_devptr_t d2 = cts_alloc(ctx2, kN * sizeof *in, NULL);
    rk_stream_t *st2 = NULL;
    if (fn2 && d2 && CHECK_OK(rk_context_create_stream(ctx2, &st2))) {
      memset(out, 0, kN * sizeof *out);
      queue_churn(st2, fn2, d2, in, out, kN, kIters + 2);
    }
    CHECK_OK(rk_context_destroy(ctx2));
    if (st2) check_churn("rk_context_destroy", in, out, kN, kIters + 2);
  }
  free(in);
  free(out);
}

/* ---- Synchronizing with nothing queued --------------------------------- */

void cts_sync_with_nothing_queued(rk_context_t *ctx) {
  CHECK_STATUS(rk_context_synchronize(ctx), RK_OK);
  CHECK_OK(rk_context_synchronize(ctx));
  rk_stream_t *st = NULL;
  if (!CHECK_OK(rk_context_create_stream(ctx, &st))) return;
  CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_stream_synchronize(st));
  CHECK_OK(rk_context_synchronize(ctx));
  /* After real work, a second synchronization has nothing left. */
  int v = 5, back = 0;
  rk_devptr_t d = cts_alloc(ctx, sizeof v, NULL);
  if (d) {
    CHECK_OK(rk_stream_copy_to_device(st, d, &v, sizeof v));
    CHECK_OK(rk_stream_copy_to_host(st, &back, d, sizeof back));
    CHECK_OK(rk_stream_synchronize(st));
    CHECK(back == 5, "read back %d", back);
    CHECK_OK(rk_stream_synchronize(st));
    CHECK_OK(rk_context_synchronize(ctx));
    rk_context_free(ctx, d);
  }
  CHECK_OK(rk_stream_destroy(st));
  /* An empty stream destroyed without synchronizing reports nothing. */
  CHECK_OK(rk_context_create_stream(ctx, &st));
  CHECK_OK(rk_stream_destroy(st));
}
