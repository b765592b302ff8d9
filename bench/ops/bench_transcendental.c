/* bench_transcendental - rk's exp, sigmoid, tanh and log against the vector
 * math libraries of this machine, in one run: speed and accuracy.
 *
 *   bench_transcendental [--quick] [--rounds R] [--stride S] [--json]
 *
 * Candidates, each on one thread:
 *   rk        rk_ops_exp/sigmoid/tanh/log forced onto each SIMD ISA this CPU
 *             has (the public call, dispatch included), and onto scalar
 *             (glibc's expf/tanhf/logf one element at a time); run with
 *             RK_VECMATH=none, so these rows are rk's own kernels (by
 *             default rk's AVX2/AVX-512 tanh is the libmvec row)
 *   SLEEF     libsleef.so.3 (Debian libsleef3), loaded with dlopen:
 *             Sleef_<f>f8_u10avx2 / f16_u10avx512f, and the 3.5-ulp
 *             variants where SLEEF has them (tanh, log)
 *   libmvec   glibc's vector math library libmvec.so.1, loaded with dlopen:
 *             _ZGVdN8v_<f>f (AVX2) and _ZGVeN16v_<f>f (AVX-512)
 * A library that does not load, or an ISA the CPU lacks, is left out and
 * said so. Neither library has a sigmoid: theirs is 1 / (1 + exp(-x)) with
 * their exp, in the same ISA.
 *
 * Speed: ns per element on N = 65,536 floats (in and out arrays fit in L2),
 * inputs uniform in the function's usual range; median of R rounds with
 * p10-p90, candidates interleaved in each round.
 * Accuracy: the largest error in ulps (bench/common/ulp_sweep.h) over every
 * S-th float of the function's range (every binade alike) against a double
 * reference, all candidates on the same points.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_json.h"
#include "bench_stats.h"
#include "rk/ops.h"
#include "ulp_sweep.h"

enum { N = 65536, MAX_IMPL = 16 };

typedef enum fn_id { F_EXP, F_SIGMOID, F_TANH, F_LOG, F_COUNT } fn_id_t;

typedef struct fn_info {
  const char *name;
  float time_lo, time_hi; /* inputs for timing */
  int time_log;           /* timing inputs log-uniform in [lo, hi] */
  float sweep_lo, sweep_hi;
  double (*ref)(double);
} fn_info_t;

static const fn_info_t kFns[F_COUNT] = {
    {"exp", -80.0f, 80.0f, 0, -103.97208f, 88.72283f, rkb_ref_exp},
    {"sigmoid", -20.0f, 20.0f, 0, -103.0f, 88.0f, rkb_ref_sigmoid},
    {"tanh", -5.0f, 5.0f, 0, -10.0f, 10.0f, rkb_ref_tanh},
    {"log", 1e-6f, 1e6f, 1, 0.0f, FLT_MAX, rkb_ref_log},
};

/* ---- Library calls ------------------------------------------------------- */

typedef float v8 __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));
typedef v8 (*fn8_t)(v8);
typedef v16 (*fn16_t)(v16);

typedef struct impl impl_t;
typedef void (*run_fn)(const impl_t *im, size_t n, const float *x, float *y);

struct impl {
  char name[48];
  const char *isa;
  run_fn run;
  void *fn;      /* a library's vector function */
  int sigmoid;   /* compose 1 / (1 + fn(-x)) */
  rk_ops_t *ops; /* rk: a forced handle */
  fn_id_t f;
  double ns[64]; /* per round */
  rkb_ulp_t ulp;
};

typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v16i __attribute__((vector_size(64)));

/* A library's sigmoid, composed as rk's is: e = exp(-|x|), then 1 / (1 + e)
 * for x >= 0 and e / (1 + e) below (no overflow, subnormal results kept). */
__attribute__((target("avx2,fma"))) static inline v8 sig8(v8 v, fn8_t f) {
  v8 e = f((v8)((v8i)v | (int32_t)0x80000000));
  v8i neg = v < 0.0f;
  v8 num = (v8)((neg & (v8i)e) | (~neg & (v8i)(e * 0.0f + 1.0f)));
  return num / (1.0f + e);
}
__attribute__((target("avx512f"))) static inline v16 sig16(v16 v, fn16_t f) {
  v16 e = f((v16)((v16i)v | (int32_t)0x80000000));
  v16i neg = v < 0.0f;
  v16 num = (v16)((neg & (v16i)e) | (~neg & (v16i)(e * 0.0f + 1.0f)));
  return num / (1.0f + e);
}

__attribute__((target("avx2,fma"))) static void run8(const impl_t *im, size_t n,
                                                     const float *x, float *y) {
  fn8_t f = (fn8_t)im->fn;
  size_t i = 0;
  if (im->sigmoid) {
    for (; i + 8 <= n; i += 8) {
      v8 v, r;
      memcpy(&v, x + i, sizeof v);
      r = sig8(v, f);
      memcpy(y + i, &r, sizeof r);
    }
  } else {
    for (; i + 8 <= n; i += 8) {
      v8 v, r;
      memcpy(&v, x + i, sizeof v);
      r = f(v);
      memcpy(y + i, &r, sizeof r);
    }
  }
  if (i < n) {
    float tx[8] = {0}, ty[8];
    memcpy(tx, x + i, (n - i) * sizeof(float));
    v8 v, r;
    memcpy(&v, tx, sizeof v);
    r = im->sigmoid ? sig8(v, f) : f(v);
    memcpy(ty, &r, sizeof r);
    memcpy(y + i, ty, (n - i) * sizeof(float));
  }
}

__attribute__((target("avx512f"))) static void run16(const impl_t *im, size_t n,
                                                     const float *x, float *y) {
  fn16_t f = (fn16_t)im->fn;
  size_t i = 0;
  if (im->sigmoid) {
    for (; i + 16 <= n; i += 16) {
      v16 v, r;
      memcpy(&v, x + i, sizeof v);
      r = sig16(v, f);
      memcpy(y + i, &r, sizeof r);
    }
  } else {
    for (; i + 16 <= n; i += 16) {
      v16 v, r;
      memcpy(&v, x + i, sizeof v);
      r = f(v);
      memcpy(y + i, &r, sizeof r);
    }
  }
  if (i < n) {
    float tx[16] = {0}, ty[16];
    memcpy(tx, x + i, (n - i) * sizeof(float));
    v16 v, r;
    memcpy(&v, tx, sizeof v);
    r = im->sigmoid ? sig16(v, f) : f(v);
    memcpy(ty, &r, sizeof r);
    memcpy(y + i, ty, (n - i) * sizeof(float));
  }
}

static void run_rk(const impl_t *im, size_t n, const float *x, float *y) {
  rk_status_t s = RK_OK;
  switch (im->f) {
    case F_EXP:
      s = rk_ops_exp(im->ops, n, x, y, NULL);
      break;
    case F_SIGMOID:
      s = rk_ops_sigmoid(im->ops, n, x, y, NULL);
      break;
    case F_TANH:
      s = rk_ops_tanh(im->ops, n, x, y, NULL);
      break;
    default:
      s = rk_ops_log(im->ops, n, x, y, NULL);
      break;
  }
  if (s != RK_OK) {
    fprintf(stderr, "bench_transcendental: %s: %s\n", im->name,
            rk_last_error());
    exit(1);
  }
}

/* ---- Candidates -----------------------------------------------------------
 */

static impl_t g_impl[MAX_IMPL];
static int g_nimpl;
static rk_ops_t *g_ops[3]; /* scalar, avx2, avx512 */

static impl_t *add_impl(const char *name, const char *isa, run_fn run,
                        fn_id_t f) {
  impl_t *im = &g_impl[g_nimpl++];
  memset(im, 0, sizeof *im);
  snprintf(im->name, sizeof im->name, "%s", name);
  im->isa = isa;
  im->run = run;
  im->f = f;
  rkb_ulp_init(&im->ulp);
  return im;
}

static rk_ops_t *forced(rk_exec_kind_t kind, rk_isa_t isa) {
  rk_ops_options_t o;
  rk_ops_options_init(&o);
  o.policy = RK_POLICY_FORCED;
  o.target.kind = kind;
  o.target.isa = isa;
  o.threads = 1;
  o.gpu_backends = 0;
  rk_ops_t *ops = NULL;
  if (rk_ops_create(&o, &ops) != RK_OK) return NULL;
  return ops;
}

static void *g_sleef, *g_mvec;

static void lib_impl(void *lib, const char *lib_name, const char *sym,
                     const char *isa, fn_id_t f, int width) {
  if (!lib) return;
  void *fn = dlsym(lib, sym);
  if (!fn) {
    fprintf(stderr, "  (%s has no %s: left out)\n", lib_name, sym);
    return;
  }
  char name[48];
  snprintf(name, sizeof name, "%s", lib_name);
  const char *u35 = strstr(sym, "_u35");
  if (u35) snprintf(name, sizeof name, "%s u35", lib_name);
  impl_t *im = add_impl(name, isa, width == 8 ? run8 : run16, f);
  im->fn = fn;
  im->sigmoid = 0;
}

/* The candidates for one function. Sigmoid reuses the libraries' exp. */
static void candidates(fn_id_t f, bool avx2, bool avx512) {
  g_nimpl = 0;
  static const char *const kIsaNames[3] = {"scalar", "avx2", "avx512"};
  for (int i = 0; i < 3; ++i)
    if (g_ops[i]) {
      impl_t *im = add_impl(i == 0 ? "glibc libm (rk scalar)" : "rk",
                            kIsaNames[i], run_rk, f);
      im->ops = g_ops[i];
    }
  const char *base = f == F_SIGMOID ? "exp" : kFns[f].name;
  char sym[64];
  for (int w = 0; w < 2; ++w) {
    bool on = w == 0 ? avx2 : avx512;
    if (!on) continue;
    const char *isa = w == 0 ? "avx2" : "avx512";
    int width = w == 0 ? 8 : 16;
    const char *sleef_isa = w == 0 ? "avx2" : "avx512f";
    int first = g_nimpl;
    snprintf(sym, sizeof sym, "Sleef_%sf%d_u10%s", base, width, sleef_isa);
    lib_impl(g_sleef, "SLEEF", sym, isa, f, width);
    if (f == F_TANH || f == F_LOG) {
      snprintf(sym, sizeof sym, "Sleef_%sf%d_u35%s", base, width, sleef_isa);
      lib_impl(g_sleef, "SLEEF", sym, isa, f, width);
    }
    snprintf(sym, sizeof sym, "_ZGV%cN%dv_%sf", w == 0 ? 'd' : 'e', width,
             base);
    lib_impl(g_mvec, "libmvec", sym, isa, f, width);
    if (f == F_SIGMOID)
      for (int i = first; i < g_nimpl; ++i) g_impl[i].sigmoid = 1;
  }
}

/* ---- Measurement ----------------------------------------------------------
 */

static void fill_inputs(const fn_info_t *fi, float *x) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < N; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double u = (double)(s >> 11) / 9007199254740992.0;
    x[i] = fi->time_log
               ? (float)exp(log(fi->time_lo) +
                            u * (log(fi->time_hi) - log(fi->time_lo)))
               : (float)(fi->time_lo + u * (fi->time_hi - fi->time_lo));
  }
}

static void time_all(const fn_info_t *fi, int rounds, float *x, float *y) {
  fill_inputs(fi, x);
  /* Calls per sample: about 2 ms of the slowest candidate. */
  int reps[MAX_IMPL];
  for (int i = 0; i < g_nimpl; ++i) {
    g_impl[i].run(&g_impl[i], N, x, y); /* warm up */
    uint64_t t0 = rkb_now_ns();
    g_impl[i].run(&g_impl[i], N, x, y);
    double one = (double)(rkb_now_ns() - t0);
    reps[i] = (int)(2e6 / (one > 1 ? one : 1)) + 1;
  }
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < g_nimpl; ++i) {
      uint64_t t0 = rkb_now_ns();
      for (int k = 0; k < reps[i]; ++k) g_impl[i].run(&g_impl[i], N, x, y);
      g_impl[i].ns[r] =
          (double)(rkb_now_ns() - t0) / ((double)reps[i] * (double)N);
    }
}

static void sweep_all(const fn_info_t *fi, uint32_t stride) {
  static float x[RKB_SWEEP_CHUNK], y[RKB_SWEEP_CHUNK];
  static double ref[RKB_SWEEP_CHUNK];
  rkb_sweep_t s = rkb_sweep_begin(fi->sweep_lo, fi->sweep_hi, stride);
  size_t got;
  while ((got = rkb_sweep_next(&s, x, RKB_SWEEP_CHUNK)) > 0) {
    for (size_t i = 0; i < got; ++i) ref[i] = fi->ref((double)x[i]);
    for (int k = 0; k < g_nimpl; ++k) {
      g_impl[k].run(&g_impl[k], got, x, y);
      for (size_t i = 0; i < got; ++i)
        rkb_ulp_add(&g_impl[k].ulp, x[i], y[i], ref[i]);
    }
  }
}

int main(int argc, char **argv) {
  int rounds = 11;
  long stride = 61;
  bool quick = false, json = false;
  for (int i = 1; i < argc; ++i) {
    long v;
    if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
      rounds = 3;
      stride = 65521;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[++i], 1, 64, &v) == 0) {
      rounds = (int)v;
    } else if (strcmp(argv[i], "--stride") == 0 && i + 1 < argc &&
               rkb_parse_long(argv[++i], 1, 1L << 30, &v) == 0) {
      stride = v;
    } else {
      fprintf(stderr,
              "usage: bench_transcendental [--quick] [--rounds R] "
              "[--stride S] [--json]\n");
      return 2;
    }
  }
  /* The rk rows are rk's own kernels: with libmvec loaded, rk's AVX2 and
   * AVX-512 tanh would be the libmvec row (docs/ops.md says why). */
  setenv("RK_VECMATH", "none", 1);
  rkb_json_t js;
  if (json) rkb_json_begin(&js, "transcendental");
  bool avx2 = rk_isa_supported(RK_ISA_AVX2);
  bool avx512 = rk_isa_supported(RK_ISA_AVX512);
  g_ops[0] = forced(RK_EXEC_SCALAR, RK_ISA_NONE);
  g_ops[1] = avx2 ? forced(RK_EXEC_SIMD, RK_ISA_AVX2) : NULL;
  g_ops[2] = avx512 ? forced(RK_EXEC_SIMD, RK_ISA_AVX512) : NULL;
  g_sleef = dlopen("libsleef.so.3", RTLD_NOW | RTLD_LOCAL);
  g_mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  printf("bench_transcendental: N = %d floats, %d rounds, sweep stride %ld%s\n",
         N, rounds, stride, quick ? " (quick)" : "");
  printf("  AVX2 %s, AVX-512 %s; SLEEF %s; libmvec %s\n", avx2 ? "yes" : "no",
         avx512 ? "yes" : "no",
         g_sleef ? "libsleef.so.3" : "not found (Debian libsleef3)",
         g_mvec ? "libmvec.so.1" : "not found");
  if (json) {
    rkb_json_int(&js, "n", N);
    rkb_json_int(&js, "rounds", rounds);
    rkb_json_int(&js, "stride", stride);
    rkb_json_bool(&js, "sleef", g_sleef != NULL);
    rkb_json_bool(&js, "libmvec", g_mvec != NULL);
    rkb_json_key(&js, "results");
    rkb_json_array(&js);
  }
  static float x[N], y[N];
  int failures = 0;
  for (int f = 0; f < F_COUNT; ++f) {
    const fn_info_t *fi = &kFns[f];
    candidates((fn_id_t)f, avx2, avx512);
    time_all(fi, rounds, x, y);
    sweep_all(fi, (uint32_t)stride);
    printf(
        "\n%s: timing on [%g, %g]%s; accuracy over every %ld-th float of "
        "[%g, %g] (%llu points)\n",
        fi->name, fi->time_lo, fi->time_hi,
        fi->time_log ? " (log-uniform)" : "", stride, fi->sweep_lo,
        fi->sweep_hi,
        (unsigned long long)rkb_sweep_count(fi->sweep_lo, fi->sweep_hi,
                                            (uint32_t)stride));
    printf("  %-24s %-7s %22s %10s %14s\n", "implementation", "ISA",
           "ns/element [p10-p90]", "max ulp", "at x");
    for (int i = 0; i < g_nimpl; ++i) {
      impl_t *im = &g_impl[i];
      rkb_summary_t s = rkb_summarize(im->ns, (size_t)rounds);
      printf("  %-24s %-7s %7.3f [%5.3f-%5.3f] %10.2f %14.7g\n", im->name,
             im->isa, s.median, s.p10, s.p90, im->ulp.max,
             (double)im->ulp.worst_x);
      if (im->run == run_rk && !(im->ulp.max < 1e6)) {
        fprintf(stderr, "bench_transcendental: %s %s %s is wrong at x = %g\n",
                im->name, im->isa, fi->name, (double)im->ulp.worst_x);
        ++failures;
      }
      if (json) {
        rkb_json_object(&js);
        rkb_json_str(&js, "function", fi->name);
        rkb_json_str(&js, "implementation", im->name);
        rkb_json_str(&js, "isa", im->isa);
        rkb_json_summary(&js, "ns_per_element", &s);
        rkb_json_num(&js, "max_ulp", im->ulp.max);
        rkb_json_num(&js, "worst_x", im->ulp.worst_x);
        rkb_json_int(&js, "points", (long long)im->ulp.points);
        rkb_json_end_object(&js);
      }
    }
  }
  if (json) {
    rkb_json_end_array(&js);
    rkb_json_finish(&js);
  }
  for (int i = 0; i < 3; ++i) rk_ops_destroy(g_ops[i]);
  if (g_sleef) dlclose(g_sleef);
  if (g_mvec) dlclose(g_mvec);
  return failures ? 1 : 0;
}
