/* bench_ops - the ops library measured against the machine in one run.
 *
 *   bench_ops [--quick] [--n ELEMENTS] [--rounds R] [--json]
 *             [--gpu-gemm-only]
 *
 * 1. Memory bandwidth, STREAM-style: copy (c = a) and triad (a = b + s c)
 *    in plain C on 1 and T threads, then each memory-bound op through rk on
 *    its best SIMD target with the same thread count, as GB/s (STREAM's
 *    counting: bytes each array moves once) and as a percentage of triad.
 * 2. SIMD against scalar: every op forced onto scalar and onto each ISA this
 *    CPU has, on one thread, in cache (4096 elements) and out of cache; the
 *    ratio to scalar.
 * 3. GEMM: rk_ops_matmul forced to the best SIMD target (which calls the
 *    CBLAS library rk loaded) against calling that library's cblas_sgemm
 *    directly, and rk's own blocked GEMM.
 * 4. GEMM on CUDA (when it opens) on resident operands: the vendor's BLAS
 *    (cuBLAS) against rk's own tiled kernel; --gpu-gemm-only runs this
 *    section alone.
 *
 * Each figure is the median of R rounds with p10-p90 in brackets; variants
 * that are compared run interleaved within each round. Results are checked
 * against a reference before timing, so a wrong kernel fails the run.
 * T is RK_OPS_THREADS or the CPUs this process may use.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "bench_json.h"
#include "bench_stats.h"
#include "rk/ops.h"

static size_t g_n = 1u << 24; /* 64 MiB per array: well past any cache */
static int g_rounds = 11;
static bool g_quick = false;
static bool g_gpu_gemm_only = false; /* section 4 alone */
static int g_threads = 1;
static int g_failures = 0;
static rkb_json_t g_json_state;
static rkb_json_t *g_json; /* --json: the results, section by section */

static float *alloc_floats(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "bench_ops: out of memory\n");
    exit(1);
  }
  return p;
}

static void fill(float *p, size_t n, float lo, float hi) {
  uint64_t s = 0x243F6A8885A308D3ull ^ (uint64_t)(uintptr_t)p;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    p[i] = lo + (hi - lo) * (float)((s >> 40) / 16777216.0);
  }
}

static void print_summary(const char *label, rkb_summary_t s,
                          const char *unit) {
  printf("  %-34s %10.2f %s  [%.2f - %.2f]\n", label, s.median, unit, s.p10,
         s.p90);
}

/* ---- STREAM ------------------------------------------------------------- */

typedef struct stream_part {
  float *a, *b, *c;
  size_t lo, hi;
  int kind; /* 0 copy, 1 triad */
} stream_part_t;

static void *stream_worker(void *p) {
  stream_part_t *s = p;
  if (s->kind == 0) {
    memcpy(s->c + s->lo, s->a + s->lo, (s->hi - s->lo) * sizeof(float));
  } else {
    const float q = 3.0f;
    float *a = s->a, *b = s->b, *c = s->c;
    for (size_t i = s->lo; i < s->hi; ++i) a[i] = b[i] + q * c[i];
  }
  return NULL;
}

/* Seconds for one copy or triad over n on `threads` threads. */
static double stream_once(int kind, int threads, float *a, float *b, float *c,
                          size_t n) {
  pthread_t t[64];
  stream_part_t parts[64];
  if (threads > 64) threads = 64;
  uint64_t t0 = rkb_now_ns();
  size_t chunk = (n + (size_t)threads - 1) / (size_t)threads;
  for (int i = 0; i < threads; ++i) {
    size_t lo = (size_t)i * chunk, hi = lo + chunk < n ? lo + chunk : n;
    parts[i] = (stream_part_t){a, b, c, lo < n ? lo : n, hi, kind};
    if (i > 0) pthread_create(&t[i], NULL, stream_worker, &parts[i]);
  }
  stream_worker(&parts[0]);
  for (int i = 1; i < threads; ++i) pthread_join(t[i], NULL);
  return (double)(rkb_now_ns() - t0) * 1e-9;
}

/* ---- Ops as uniform calls ----------------------------------------------- */

typedef struct bufs {
  float *a, *b, *c, *o;
  float result;
} bufs_t;

typedef struct op_case {
  const char *name;
  int arrays; /* arrays moved once (STREAM counting) */
  rk_status_t (*run)(rk_ops_t *, size_t, bufs_t *, rk_op_report_t *);
} op_case_t;

#define RUN_FN(fname, call)                                    \
  static rk_status_t fname(rk_ops_t *ops, size_t n, bufs_t *b, \
                           rk_op_report_t *r) {                \
    return call;                                               \
  }
RUN_FN(run_add, rk_ops_add(ops, n, b->a, b->b, b->o, r))
RUN_FN(run_sub, rk_ops_sub(ops, n, b->a, b->b, b->o, r))
RUN_FN(run_mul, rk_ops_mul(ops, n, b->a, b->b, b->o, r))
RUN_FN(run_scale, rk_ops_scale(ops, n, 1.5f, b->a, b->o, r))
RUN_FN(run_axpy, rk_ops_axpy(ops, n, 1e-3f, b->a, b->o, r))
RUN_FN(run_fma, rk_ops_fma(ops, n, b->a, b->b, b->c, b->o, r))
RUN_FN(run_relu, rk_ops_relu(ops, n, b->a, b->o, r))
RUN_FN(run_sigmoid, rk_ops_sigmoid(ops, n, b->a, b->o, r))
RUN_FN(run_exp, rk_ops_exp(ops, n, b->a, b->o, r))
RUN_FN(run_dot, rk_ops_dot(ops, n, b->a, b->b, &b->result, r))
RUN_FN(run_sum, rk_ops_sum(ops, n, b->a, &b->result, r))
RUN_FN(run_min, rk_ops_min(ops, n, b->a, &b->result, r))
RUN_FN(run_max, rk_ops_max(ops, n, b->a, &b->result, r))

static const op_case_t kOps[] = {
    {"add", 3, run_add},     {"sub", 3, run_sub},         {"mul", 3, run_mul},
    {"scale", 2, run_scale}, {"axpy", 3, run_axpy},       {"fma", 4, run_fma},
    {"relu", 2, run_relu},   {"sigmoid", 2, run_sigmoid}, {"exp", 2, run_exp},
    {"dot", 2, run_dot},     {"sum", 1, run_sum},         {"min", 1, run_min},
    {"max", 1, run_max},
};
enum { NOPS = sizeof kOps / sizeof kOps[0] };

static rk_ops_t *forced(rk_exec_kind_t kind, rk_isa_t isa, int threads,
                        bool blas) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target = (rk_exec_target_t){kind, isa, RK_BACKEND_AUTO, 0};
  o.threads = threads;
  o.use_blas = blas;
  rk_ops_t *ops = NULL;
  if (rk_ops_create(&o, &ops) != RK_OK) {
    fprintf(stderr, "bench_ops: %s\n", rk_last_error());
    exit(1);
  }
  return ops;
}

static double time_op(const op_case_t *c, rk_ops_t *ops, size_t n, bufs_t *b,
                      int iters) {
  uint64_t t0 = rkb_now_ns();
  for (int i = 0; i < iters; ++i)
    if (c->run(ops, n, b, NULL) != RK_OK) {
      fprintf(stderr, "bench_ops: %s: %s\n", c->name, rk_last_error());
      exit(1);
    }
  return (double)(rkb_now_ns() - t0) * 1e-9 / iters;
}

/* ---- 1: bandwidth ------------------------------------------------------- */

static void bench_bandwidth(void) {
  size_t n = g_n;
  bufs_t b;
  b.a = alloc_floats(n);
  b.b = alloc_floats(n);
  b.c = alloc_floats(n);
  b.o = alloc_floats(n);
  fill(b.a, n, -1, 1);
  fill(b.b, n, -1, 1);
  fill(b.c, n, -1, 1);
  memset(b.o, 0, n * sizeof(float));
  int tcounts[2] = {1, g_threads};
  int nt = g_threads > 1 ? 2 : 1;
  rk_isa_t isa = rk_isa_best();
  rk_exec_kind_t kind = isa == RK_ISA_NONE ? RK_EXEC_SCALAR : RK_EXEC_SIMD;
  if (g_json) {
    rkb_json_key(g_json, "bandwidth");
    rkb_json_object(g_json);
    rkb_json_int(g_json, "n", (long long)n);
    rkb_json_str(g_json, "target",
                 isa == RK_ISA_NONE ? "scalar" : rk_isa_name(isa));
    rkb_json_str(g_json, "unit", "GB/s, each array counted once");
    rkb_json_key(g_json, "by_threads");
    rkb_json_array(g_json);
  }
  printf("\n== 1. bandwidth: n = %zu floats (%.0f MiB per array), %s ==\n", n,
         n * 4.0 / 1048576, isa == RK_ISA_NONE ? "scalar" : rk_isa_name(isa));
  printf(
      "   GB/s counting each array once; %% of triad at the same thread "
      "count\n");
  for (int ti = 0; ti < nt; ++ti) {
    int th = tcounts[ti];
    rk_ops_t *ops = forced(kind, isa, th, true);
    double *copy = calloc((size_t)g_rounds, sizeof(double));
    double *triad = calloc((size_t)g_rounds, sizeof(double));
    double *opbw = calloc((size_t)g_rounds * NOPS, sizeof(double));
    /* warm up (pages, pool) */
    stream_once(1, th, b.a, b.b, b.c, n);
    for (int o = 0; o < NOPS; ++o) time_op(&kOps[o], ops, n, &b, 1);
    for (int r = 0; r < g_rounds; ++r) {
      copy[r] = 2.0 * n * 4 / stream_once(0, th, b.a, b.b, b.c, n) * 1e-9;
      triad[r] = 3.0 * n * 4 / stream_once(1, th, b.a, b.b, b.c, n) * 1e-9;
      for (int o = 0; o < NOPS; ++o) {
        /* keep axpy's y bounded */
        double s = time_op(&kOps[o], ops, n, &b, 1);
        opbw[o * g_rounds + r] = kOps[o].arrays * (double)n * 4 / s * 1e-9;
      }
    }
    rkb_summary_t ct = rkb_summarize(copy, (size_t)g_rounds);
    rkb_summary_t tr = rkb_summarize(triad, (size_t)g_rounds);
    printf(" threads = %d\n", th);
    print_summary("STREAM copy (memcpy)", ct, "GB/s");
    print_summary("STREAM triad (C loop)", tr, "GB/s");
    if (g_json) {
      rkb_json_object(g_json);
      rkb_json_int(g_json, "threads", th);
      rkb_json_summary(g_json, "copy", &ct);
      rkb_json_summary(g_json, "triad", &tr);
      rkb_json_key(g_json, "ops");
      rkb_json_array(g_json);
    }
    for (int o = 0; o < NOPS; ++o) {
      rkb_summary_t s = rkb_summarize(opbw + o * g_rounds, (size_t)g_rounds);
      char label[64];
      snprintf(label, sizeof label, "%s (%d arrays)", kOps[o].name,
               kOps[o].arrays);
      printf("  %-34s %10.2f GB/s  [%.2f - %.2f]  %5.1f%% of triad\n", label,
             s.median, s.p10, s.p90, 100.0 * s.median / tr.median);
      if (g_json) {
        rkb_json_object(g_json);
        rkb_json_str(g_json, "op", kOps[o].name);
        rkb_json_int(g_json, "arrays", kOps[o].arrays);
        rkb_json_summary(g_json, "gbs", &s);
        rkb_json_num(g_json, "pct_of_triad", 100.0 * s.median / tr.median);
        rkb_json_end_object(g_json);
      }
    }
    if (g_json) {
      rkb_json_end_array(g_json);
      rkb_json_end_object(g_json);
    }
    free(copy);
    free(triad);
    free(opbw);
    rk_ops_destroy(ops);
  }
  if (g_json) {
    rkb_json_end_array(g_json);
    rkb_json_end_object(g_json);
  }
  free(b.a);
  free(b.b);
  free(b.c);
  free(b.o);
}

/* ---- 2: SIMD vs scalar -------------------------------------------------- */

static void bench_simd(size_t n) {
  bufs_t b;
  b.a = alloc_floats(n);
  b.b = alloc_floats(n);
  b.c = alloc_floats(n);
  b.o = alloc_floats(n);
  fill(b.a, n, -1, 1);
  fill(b.b, n, -1, 1);
  fill(b.c, n, -1, 1);
  memset(b.o, 0, n * sizeof(float));
  rk_ops_t *eng[4];
  const char *names[4];
  int ne = 0;
  eng[ne] = forced(RK_EXEC_SCALAR, RK_ISA_NONE, 1, true);
  names[ne++] = "scalar";
  static const rk_isa_t isas[] = {RK_ISA_AVX2, RK_ISA_AVX512, RK_ISA_NEON};
  for (int i = 0; i < 3; ++i)
    if (rk_isa_supported(isas[i])) {
      eng[ne] = forced(RK_EXEC_SIMD, isas[i], 1, true);
      names[ne++] = rk_isa_name(isas[i]);
    }
  /* enough calls per sample for ~1 ms */
  int iters = n < 100000 ? (int)(2000000 / n) + 1 : 1;
  printf(
      "\n== 2. SIMD vs scalar, one thread: n = %zu, %d call(s) per sample "
      "==\n",
      n, iters);
  printf("  %-9s", "op");
  for (int e = 0; e < ne; ++e) printf(" %21s", names[e]);
  printf("   (ns per element, median [p10-p90]; x = speed-up over scalar)\n");
  double *t = calloc((size_t)g_rounds * ne, sizeof(double));
  if (g_json) {
    rkb_json_object(g_json);
    rkb_json_int(g_json, "n", (long long)n);
    rkb_json_str(g_json, "unit", "ns per element, one thread");
    rkb_json_key(g_json, "ops");
    rkb_json_array(g_json);
  }
  for (int o = 0; o < NOPS; ++o) {
    for (int e = 0; e < ne; ++e) time_op(&kOps[o], eng[e], n, &b, 1);
    for (int r = 0; r < g_rounds; ++r)
      for (int e = 0; e < ne; ++e)
        t[e * g_rounds + r] =
            time_op(&kOps[o], eng[e], n, &b, iters) * 1e9 / (double)n;
    printf("  %-9s", kOps[o].name);
    if (g_json) {
      rkb_json_object(g_json);
      rkb_json_str(g_json, "op", kOps[o].name);
    }
    double base = 0;
    for (int e = 0; e < ne; ++e) {
      rkb_summary_t s = rkb_summarize(t + e * g_rounds, (size_t)g_rounds);
      if (g_json) rkb_json_summary(g_json, names[e], &s);
      if (e == 0) base = s.median;
      char cell[64];
      if (e == 0)
        snprintf(cell, sizeof cell, "%.3f [%.3f-%.3f]", s.median, s.p10, s.p90);
      else
        snprintf(cell, sizeof cell, "%.3f %5.1fx", s.median, base / s.median);
      printf(" %21s", cell);
    }
    printf("\n");
    if (g_json) rkb_json_end_object(g_json);
  }
  if (g_json) {
    rkb_json_end_array(g_json);
    rkb_json_end_object(g_json);
  }
  free(t);
  for (int e = 0; e < ne; ++e) rk_ops_destroy(eng[e]);
  free(b.a);
  free(b.b);
  free(b.c);
  free(b.o);
}

/* ---- 3: GEMM ------------------------------------------------------------ */

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);

static void bench_gemm(void) {
  const char *lib = rk_ops_blas_name();
  rk_isa_t isa = rk_isa_best();
  printf("\n== 3. GEMM (C = A B, square, f32): rk vs cblas_sgemm direct ==\n");
  if (isa == RK_ISA_NONE) {
    printf("  no SIMD ISA: skipped\n");
    return;
  }
  sgemm_fn sgemm = NULL;
  if (lib) {
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (dl) *(void **)&sgemm = dlsym(dl, "cblas_sgemm");
  }
  printf("  BLAS: %s; rk's own GEMM on %s with %d thread(s)\n",
         lib ? lib : "none found (only rk's own GEMM is measured)",
         rk_isa_name(isa), g_threads);
  rk_ops_t *with_blas = forced(RK_EXEC_SIMD, isa, g_threads, true);
  rk_ops_t *own = forced(RK_EXEC_SIMD, isa, g_threads, false);
  static const size_t sizes_full[] = {64, 256, 1024};
  static const size_t sizes_quick[] = {64, 128};
  const size_t *sizes = g_quick ? sizes_quick : sizes_full;
  int nsizes = g_quick ? 2 : 3;
  if (g_json) {
    rkb_json_key(g_json, "gemm");
    rkb_json_object(g_json);
    rkb_json_str(g_json, "blas", lib);
    rkb_json_str(g_json, "unit", "GFLOP/s (from the median time)");
    rkb_json_key(g_json, "sizes");
    rkb_json_array(g_json);
  }
  printf("  %-6s %24s %24s %20s %24s\n", "n", "cblas direct GFLOP/s",
         "rk matmul GFLOP/s", "rk overhead", "rk own GEMM GFLOP/s");
  for (int si = 0; si < nsizes; ++si) {
    size_t n = sizes[si];
    float *a = alloc_floats(n * n), *b = alloc_floats(n * n),
          *c = alloc_floats(n * n), *c2 = alloc_floats(n * n);
    fill(a, n * n, -1, 1);
    fill(b, n * n, -1, 1);
    rk_op_report_t rep;
    /* correctness first: rk (both engines) against each other */
    if (rk_ops_matmul(with_blas, n, n, n, a, b, c, &rep) != RK_OK ||
        rk_ops_matmul(own, n, n, n, a, b, c2, NULL) != RK_OK) {
      fprintf(stderr, "bench_ops: matmul: %s\n", rk_last_error());
      exit(1);
    }
    for (size_t i = 0; i < n * n; ++i)
      if (fabsf(c[i] - c2[i]) > (float)(n + 20) * FLT_EPSILON * (float)n) {
        fprintf(stderr, "bench_ops: GEMM engines disagree at %zu\n", i);
        g_failures++;
        break;
      }
    double flops = 2.0 * n * n * n;
    int iters = (int)(1e8 / flops) + 1;
    int rounds = g_rounds < 21 ? 21 : g_rounds;
    double *td = calloc((size_t)rounds, sizeof(double));
    double *tr = calloc((size_t)rounds, sizeof(double));
    double *to = calloc((size_t)rounds, sizeof(double));
    double *ratio = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; ++r) {
      /* direct and through rk back to back, so both see the same machine;
       * the overhead is the median of the per-round ratios */
      /* one untimed call before each batch: the BLAS library's threads may
       * have gone to sleep during the previous batch */
      if (sgemm) {
        sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)n, (int)n,
              (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c2, (int)n);
        uint64_t t0 = rkb_now_ns();
        for (int i = 0; i < iters; ++i)
          sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)n, (int)n,
                (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c2, (int)n);
        td[r] = (double)(rkb_now_ns() - t0) * 1e-9 / iters;
      }
      rk_ops_matmul(with_blas, n, n, n, a, b, c, NULL);
      uint64_t t1 = rkb_now_ns();
      for (int i = 0; i < iters; ++i)
        rk_ops_matmul(with_blas, n, n, n, a, b, c, NULL);
      tr[r] = (double)(rkb_now_ns() - t1) * 1e-9 / iters;
      if (sgemm) ratio[r] = 100.0 * (tr[r] - td[r]) / td[r];
      rk_ops_matmul(own, n, n, n, a, b, c, NULL);
      uint64_t t2 = rkb_now_ns();
      for (int i = 0; i < iters; ++i)
        rk_ops_matmul(own, n, n, n, a, b, c, NULL);
      to[r] = (double)(rkb_now_ns() - t2) * 1e-9 / iters;
    }
    rkb_summary_t sd = rkb_summarize(td, (size_t)rounds);
    rkb_summary_t sr = rkb_summarize(tr, (size_t)rounds);
    rkb_summary_t so = rkb_summarize(to, (size_t)rounds);
    rkb_summary_t sov = rkb_summarize(ratio, (size_t)rounds);
    char cd[64] = "-", cr[64], co[64], ov[48] = "-";
    if (sgemm) {
      snprintf(cd, sizeof cd, "%.1f [%.1f-%.1f]", flops / sd.median * 1e-9,
               flops / sd.p90 * 1e-9, flops / sd.p10 * 1e-9);
      snprintf(ov, sizeof ov, "%+.1f%% [%+.1f,%+.1f]", sov.median, sov.p10,
               sov.p90);
    }
    snprintf(cr, sizeof cr, "%.1f [%.1f-%.1f]", flops / sr.median * 1e-9,
             flops / sr.p90 * 1e-9, flops / sr.p10 * 1e-9);
    snprintf(co, sizeof co, "%.1f [%.1f-%.1f]", flops / so.median * 1e-9,
             flops / so.p90 * 1e-9, flops / so.p10 * 1e-9);
    printf("  %-6zu %24s %24s %20s %24s\n", n, cd, cr, ov, co);
    printf("         (rk ran: %s)\n", rep.engine);
    if (g_json) {
      rkb_json_object(g_json);
      rkb_json_int(g_json, "n", (long long)n);
      rkb_json_num(g_json, "cblas_gflops",
                   sgemm ? flops / sd.median * 1e-9 : NAN);
      rkb_json_num(g_json, "rk_gflops", flops / sr.median * 1e-9);
      rkb_json_num(g_json, "rk_own_gflops", flops / so.median * 1e-9);
      if (sgemm) rkb_json_summary(g_json, "rk_overhead_pct", &sov);
      rkb_json_str(g_json, "rk_engine", rep.engine);
      rkb_json_end_object(g_json);
    }
    free(td);
    free(tr);
    free(to);
    free(ratio);
    free(a);
    free(b);
    free(c);
    free(c2);
  }
  if (g_json) {
    rkb_json_end_array(g_json);
    rkb_json_end_object(g_json);
  }
  rk_ops_destroy(with_blas);
  rk_ops_destroy(own);
}

/* ---- 4: GEMM on the GPU: the vendor's BLAS against rk's kernel --------- */

/* C = A B on resident buffers of the CUDA target, through a handle with
 * use_blas (cuBLAS where it loads) and one without (rk's tiled kernel),
 * interleaved within each round. Checked first: every element written
 * (the output poisoned with NaN before), both engines within
 * (k + 20) eps sum|a b| of a double reference at 256 sampled elements. */
static rk_ops_t *forced_gpu(bool blas) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target = (rk_exec_target_t){RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_CUDA, 0};
  o.use_blas = blas;
  rk_ops_t *ops = NULL;
  return rk_ops_create(&o, &ops) == RK_OK ? ops : NULL;
}

static bool gemm_gpu_check(const float *a, const float *b, const float *c,
                           size_t n, const char *what) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n * n; ++i)
    if (c[i] != c[i]) {
      fprintf(stderr, "bench_ops: GPU GEMM (%s) n=%zu left element %zu\n", what,
              n, i);
      return false;
    }
  for (int t = 0; t < 256; ++t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const size_t i = (size_t)(s >> 33) % n, j = (size_t)(s >> 11) % n;
    double ref = 0, mag = 0;
    for (size_t p = 0; p < n; ++p) {
      ref += (double)a[i * n + p] * b[p * n + j];
      mag += fabs((double)a[i * n + p] * b[p * n + j]);
    }
    if (fabs(c[i * n + j] - ref) > (double)(n + 20) * FLT_EPSILON * mag) {
      fprintf(stderr,
              "bench_ops: GPU GEMM (%s) n=%zu: C[%zu][%zu] = %g, want %g\n",
              what, n, i, j, c[i * n + j], ref);
      return false;
    }
  }
  return true;
}

static void bench_gemm_gpu(void) {
  printf(
      "\n== 4. GEMM on CUDA (C = A B, square, f32, operands resident): "
      "vendor BLAS vs rk's kernel ==\n");
  /* The vendor's GEMM at every size (by default rk keeps matmuls under
   * 512^3 multiply-adds on its own kernel). */
  setenv("RK_OPS_GPU_BLAS_MIN", "0", 1);
  rk_ops_t *vendor = forced_gpu(true), *own = forced_gpu(false);
  rk_exec_target_t t = {RK_EXEC_GPU, RK_ISA_NONE, RK_BACKEND_CUDA, 0};
  static const size_t sizes_full[] = {256, 1024, 4096};
  static const size_t sizes_quick[] = {256, 1024};
  const size_t *sizes = g_quick ? sizes_quick : sizes_full;
  const int nsizes = g_quick ? 2 : 3;
  const size_t nmax = sizes[nsizes - 1];
  rk_ops_buffer_t *bv[3] = {NULL, NULL, NULL}, *bo[3] = {NULL, NULL, NULL};
  bool ok = vendor && own;
  for (int i = 0; i < 3 && ok; ++i)
    ok = rk_ops_buffer_create(vendor, &t, nmax * nmax, &bv[i]) == RK_OK &&
         rk_ops_buffer_create(own, &t, nmax * nmax, &bo[i]) == RK_OK;
  if (!ok) {
    printf("  skipped: %s\n", rk_last_error());
    if (g_json) {
      rkb_json_key(g_json, "gemm_gpu");
      rkb_json_object(g_json);
      rkb_json_str(g_json, "skipped", rk_last_error());
      rkb_json_end_object(g_json);
    }
    for (int i = 0; i < 3; ++i) {
      rk_ops_buffer_destroy(bv[i]);
      rk_ops_buffer_destroy(bo[i]);
    }
    rk_ops_destroy(vendor);
    rk_ops_destroy(own);
    return;
  }
  if (g_json) {
    rkb_json_key(g_json, "gemm_gpu");
    rkb_json_object(g_json);
    rkb_json_str(g_json, "unit", "GFLOP/s (from the median time)");
    rkb_json_key(g_json, "sizes");
    rkb_json_array(g_json);
  }
  printf("  %-6s %26s %26s %10s   %s\n", "n", "vendor BLAS GFLOP/s",
         "rk kernel GFLOP/s", "ratio", "engines");
  float *a = alloc_floats(nmax * nmax), *b = alloc_floats(nmax * nmax),
        *c = alloc_floats(nmax * nmax);
  for (int si = 0; si < nsizes; ++si) {
    const size_t n = sizes[si];
    fill(a, n * n, -1, 1);
    fill(b, n * n, -1, 1);
    rk_op_desc_t d = {.op = RK_OP_MATMUL, .m = n, .n = n, .k = n};
    rk_op_report_t rv, ro;
    rk_ops_t *hs[2] = {vendor, own};
    rk_ops_buffer_t **bs[2] = {bv, bo};
    rk_op_report_t *rs[2] = {&rv, &ro};
    for (int e = 0; e < 2; ++e) {
      for (size_t i = 0; i < n * n; ++i) c[i] = NAN;
      if (rk_ops_buffer_write(bs[e][0], 0, a, n * n) != RK_OK ||
          rk_ops_buffer_write(bs[e][1], 0, b, n * n) != RK_OK ||
          rk_ops_buffer_write(bs[e][2], 0, c, n * n) != RK_OK ||
          rk_ops_run_resident(hs[e], &d, 0.0f, bs[e], 3, NULL, rs[e]) !=
              RK_OK ||
          rk_ops_buffer_read(bs[e][2], 0, c, n * n) != RK_OK) {
        fprintf(stderr, "bench_ops: GPU GEMM: %s\n", rk_last_error());
        exit(1);
      }
      if (!gemm_gpu_check(a, b, c, n, rs[e]->engine)) g_failures++;
    }
    const double flops = 2.0 * n * n * n;
    const int iters = (int)(2e11 / flops) + 1;
    const int rounds = g_rounds < 7 ? 7 : g_rounds;
    double tv[1000], to[1000], ratio[1000];
    for (int r = 0; r < rounds; ++r) {
      double *dst[2] = {tv, to};
      for (int e = 0; e < 2; ++e) {
        rk_ops_run_resident(hs[e], &d, 0.0f, bs[e], 3, NULL, NULL);
        const uint64_t t0 = rkb_now_ns();
        for (int i = 0; i < iters; ++i)
          rk_ops_run_resident(hs[e], &d, 0.0f, bs[e], 3, NULL, NULL);
        dst[e][r] = (double)(rkb_now_ns() - t0) * 1e-9 / iters;
      }
      ratio[r] = to[r] / tv[r];
    }
    const rkb_summary_t sv = rkb_summarize(tv, (size_t)rounds);
    const rkb_summary_t so = rkb_summarize(to, (size_t)rounds);
    const rkb_summary_t sr = rkb_summarize(ratio, (size_t)rounds);
    char cv[64], co[64];
    snprintf(cv, sizeof cv, "%.0f [%.0f-%.0f]", flops / sv.median * 1e-9,
             flops / sv.p90 * 1e-9, flops / sv.p10 * 1e-9);
    snprintf(co, sizeof co, "%.0f [%.0f-%.0f]", flops / so.median * 1e-9,
             flops / so.p90 * 1e-9, flops / so.p10 * 1e-9);
    printf("  %-6zu %26s %26s %9.2fx   %s / %s\n", n, cv, co, sr.median,
           rv.engine, ro.engine);
    if (rv.note[0]) printf("         (%s)\n", rv.note);
    if (g_json) {
      rkb_json_object(g_json);
      rkb_json_int(g_json, "n", (long long)n);
      rkb_json_num(g_json, "vendor_gflops", flops / sv.median * 1e-9);
      rkb_json_num(g_json, "rk_kernel_gflops", flops / so.median * 1e-9);
      rkb_json_summary(g_json, "speedup", &sr);
      rkb_json_str(g_json, "vendor_engine", rv.engine);
      rkb_json_str(g_json, "note", rv.note);
      rkb_json_end_object(g_json);
    }
  }
  if (g_json) {
    rkb_json_end_array(g_json);
    rkb_json_end_object(g_json);
  }
  free(a);
  free(b);
  free(c);
  for (int i = 0; i < 3; ++i) {
    rk_ops_buffer_destroy(bv[i]);
    rk_ops_buffer_destroy(bo[i]);
  }
  rk_ops_destroy(vendor);
  rk_ops_destroy(own);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    long v;
    if (strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
      g_n = 1u << 20;
      g_rounds = 3;
    } else if (strcmp(argv[i], "--json") == 0) {
      g_json = &g_json_state;
    } else if (strcmp(argv[i], "--gpu-gemm-only") == 0) {
      g_gpu_gemm_only = true;
    } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1024, 1L << 30, &v) == 0) {
      g_n = (size_t)v;
      ++i;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[i + 1], 1, 1000, &v) == 0) {
      g_rounds = (int)v;
      ++i;
    } else {
      fprintf(stderr,
              "usage: bench_ops [--quick] [--n ELEMENTS] "
              "[--rounds R] [--json] [--gpu-gemm-only]\n");
      return 2;
    }
  }
  long th = 0;
  const char *env = getenv("RK_OPS_THREADS");
  if (env && rkb_parse_long(env, 1, 1024, &th) == 0)
    g_threads = (int)th;
  else {
    int ids[1024];
    g_threads = rk__allowed_cpus(ids, 1024);
  }
  if (g_json && !rkb_json_begin(g_json, "ops")) {
    fprintf(stderr, "bench_ops: --json: cannot duplicate stdout\n");
    return 1;
  }
  printf("bench_ops: best ISA %s, BLAS %s, T = %d thread(s), %d rounds\n",
         rk_isa_name(rk_isa_best()),
         rk_ops_blas_name() ? rk_ops_blas_name() : "none", g_threads, g_rounds);
  if (g_json) {
    rkb_json_str(g_json, "best_isa", rk_isa_name(rk_isa_best()));
    rkb_json_int(g_json, "threads", g_threads);
    rkb_json_int(g_json, "rounds", g_rounds);
    rkb_json_bool(g_json, "quick", g_quick);
  }
  if (!g_gpu_gemm_only) {
    bench_bandwidth();
    if (g_json) {
      rkb_json_key(g_json, "simd");
      rkb_json_array(g_json);
    }
    bench_simd(4096);
    bench_simd(g_quick ? 1u << 18 : 1u << 22);
    if (g_json) rkb_json_end_array(g_json);
    bench_gemm();
  }
  bench_gemm_gpu();
  if (g_json) rkb_json_finish(g_json);
  if (g_failures) {
    printf("bench_ops: %d check(s) FAILED\n", g_failures);
    return 1;
  }
  return 0;
}
