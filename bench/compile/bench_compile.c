/* bench_compile - how long rk_context_compile takes on the CPU backend, for
 * a kernel compiled from scratch (cold: front end, system C compiler,
 * loading) and for one served by the disk cache (cached: front end, cache
 * lookup, validation, loading).
 *
 *   bench_compile [--rounds R] [--quick] [--json] [--kernels DIR] [FILE...]
 *
 * Kernels: saxpy.c, matmul_tiled.c, reduce_sum.c and histogram.c of the
 * transpiler corpus (tests/codegen/kernels), or the files named.
 *
 * Method: a private cache directory (RK_CACHE_DIR, under TMPDIR) is made for
 * the run and removed at the end. One untimed compile per kernel fills the
 * cache and checks that it works. Then R rounds; in each round every kernel
 * is compiled once with no_cache (cold) and once from the cache (cached),
 * and each module is destroyed after it is timed. The rounds are the outer
 * loop, so drift spreads over every kernel alike. Reported per kernel and
 * mode: the median and p10/p90 of the R samples in milliseconds, and the
 * ratio cold / cached of the medians. The exit status never depends on
 * timing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_stats.h"
#include "rk/rk.h"

enum { kMaxKernels = 32 };

typedef struct kernel {
  const char *path;
  const char *name; /* file name */
  char *source;
  double *cold, *cached; /* ms, one per round */
  rkb_summary_t s_cold, s_cached;
} kernel_t;

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t r = fread(buf + n, 1, 4096, f);
    n += r;
    if (r == 0) break;
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

/* Compiles k once; returns the time in ms, or a negative value on failure
 * (reported). */
static double compile_once(rk_context_t *ctx, const kernel_t *k, bool no_cache,
                           bool *out_hit) {
  rk_compile_options_t o;
  rk_compile_options_init(&o);
  o.source_name = k->name;
  o.no_cache = no_cache;
  rk_module_t *m = NULL;
  uint64_t t0 = rkb_now_ns();
  rk_status_t s = rk_context_compile(ctx, k->source, &o, &m);
  uint64_t t1 = rkb_now_ns();
  if (s != RK_OK) {
    fprintf(stderr, "bench_compile: %s: %s\n", k->name, rk_last_error());
    return -1.0;
  }
  if (out_hit) *out_hit = rk_module_cache_hit(m);
  rk_module_destroy(m);
  return (double)(t1 - t0) / 1e6;
}

static int usage(void) {
  fprintf(stderr,
          "usage: bench_compile [--rounds R] [--quick] [--json] "
          "[--kernels DIR] [FILE...]\n");
  return 2;
}

int main(int argc, char **argv) {
  long rounds = 9;
  bool json = false;
  const char *dir = RK_BENCH_KERNEL_DIR;
  const char *files[kMaxKernels];
  int nfiles = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      rounds = 2;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      if (rkb_parse_long(argv[++i], 1, 1000, &rounds) != 0) return usage();
    } else if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (argv[i][0] == '-') {
      return usage();
    } else if (nfiles < kMaxKernels) {
      files[nfiles++] = argv[i];
    } else {
      return usage();
    }
  }
  static const char *const kDefault[] = {"saxpy.c", "matmul_tiled.c",
                                         "reduce_sum.c", "histogram.c"};
  kernel_t kernels[kMaxKernels];
  int nk = 0;
  char paths[kMaxKernels][4096];
  if (nfiles == 0) {
    for (size_t i = 0; i < sizeof kDefault / sizeof kDefault[0]; ++i) {
      snprintf(paths[nk], sizeof paths[nk], "%s/%s", dir, kDefault[i]);
      files[nfiles++] = paths[nk++];
    }
    nk = 0;
  }
  for (int i = 0; i < nfiles; ++i) {
    kernel_t *k = &kernels[nk++];
    memset(k, 0, sizeof *k);
    k->path = files[i];
    const char *slash = strrchr(files[i], '/');
    k->name = slash ? slash + 1 : files[i];
    k->source = read_text(files[i]);
    k->cold = calloc((size_t)rounds, sizeof(double));
    k->cached = calloc((size_t)rounds, sizeof(double));
    if (!k->source || !k->cold || !k->cached) {
      fprintf(stderr, "bench_compile: cannot read '%s': %s\n", files[i],
              strerror(errno));
      return 1;
    }
  }

  /* A private cache for the run. */
  const char *tmp = getenv("TMPDIR");
  char cache[4096];
  snprintf(cache, sizeof cache, "%s/rk-bench-compile-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(cache)) {
    fprintf(stderr, "bench_compile: mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  setenv("RK_CACHE_DIR", cache, 1);

  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  int rc = 0;
  if (rk_backend_open(RK_BACKEND_CPU, &be) != RK_OK ||
      rk_backend_create_context(be, 0, &ctx) != RK_OK) {
    fprintf(stderr, "bench_compile: %s\n", rk_last_error());
    rc = 1;
    goto out;
  }
  for (int i = 0; i < nk; ++i) {
    bool hit = true;
    if (compile_once(ctx, &kernels[i], false, &hit) < 0) {
      rc = 1;
      goto out;
    }
  }
  for (long r = 0; r < rounds; ++r) {
    for (int i = 0; i < nk; ++i) {
      kernel_t *k = &kernels[i];
      bool hit = false;
      k->cold[r] = compile_once(ctx, k, true, NULL);
      k->cached[r] = compile_once(ctx, k, false, &hit);
      if (k->cold[r] < 0 || k->cached[r] < 0) {
        rc = 1;
        goto out;
      }
      if (!hit) {
        fprintf(stderr, "bench_compile: %s was not served by the cache\n",
                k->name);
        rc = 1;
        goto out;
      }
    }
  }
  for (int i = 0; i < nk; ++i) {
    kernels[i].s_cold = rkb_summarize(kernels[i].cold, (size_t)rounds);
    kernels[i].s_cached = rkb_summarize(kernels[i].cached, (size_t)rounds);
  }
  if (json) {
    printf(
        "{\"benchmark\": \"compile\", \"backend\": \"cpu\", \"rounds\": "
        "%ld, \"kernels\": [",
        rounds);
    for (int i = 0; i < nk; ++i) {
      const kernel_t *k = &kernels[i];
      printf(
          "%s\n  {\"kernel\": \"%s\", \"cold_ms\": {\"median\": %.4f, "
          "\"p10\": %.4f, \"p90\": %.4f}, \"cached_ms\": {\"median\": "
          "%.4f, \"p10\": %.4f, \"p90\": %.4f}}",
          i ? "," : "", k->name, k->s_cold.median, k->s_cold.p10, k->s_cold.p90,
          k->s_cached.median, k->s_cached.p10, k->s_cached.p90);
    }
    printf("\n]}\n");
  } else {
    printf(
        "rk_context_compile on the CPU backend, %ld rounds; ms, median "
        "(p10-p90)\n",
        rounds);
    printf("%-18s %26s %26s %10s\n", "kernel", "cold (compiler runs)",
           "cached (disk cache)", "cold/cached");
    for (int i = 0; i < nk; ++i) {
      const kernel_t *k = &kernels[i];
      printf(
          "%-18s %9.2f (%6.2f-%7.2f) %9.3f (%6.3f-%7.3f) %10.0f\n", k->name,
          k->s_cold.median, k->s_cold.p10, k->s_cold.p90, k->s_cached.median,
          k->s_cached.p10, k->s_cached.p90,
          k->s_cached.median > 0 ? k->s_cold.median / k->s_cached.median : 0.0);
    }
  }
out:
  if (ctx) rk_context_destroy(ctx);
  if (be) rk_backend_destroy(be);
  for (int i = 0; i < nk; ++i) {
    free(kernels[i].source);
    free(kernels[i].cold);
    free(kernels[i].cached);
  }
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  if (system(cmd) != 0)
    fprintf(stderr, "bench_compile: could not remove %s\n", cache);
  return rc;
}
