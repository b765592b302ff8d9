/* bench_transpile - how long the kernel-language transpiler takes per
 * kernel and target.
 *
 * For every kernel of the corpus (every .c file in tests/codegen/kernels, or
 * --kernels DIR) and every operation - rk_transpile() to c, cuda, opencl, wgsl
 * and msl, and rk_codegen_list_entries() - one call is parse + check + print
 * (or describe) + free of the result, from the source text in memory, as a
 * runtime would do it before handing the text to a vendor compiler.
 *
 * Method: one untimed call per pair first checks that it works (a target
 * that refuses a kernel, such as msl and double, or a printer that is not
 * written yet, is reported and left out). Then W untimed warm-up calls per
 * pair, then R rounds; in each round every (kernel, operation) pair runs
 * N calls back to back and one sample is the round's time / N. The rounds
 * are the outer loop, so slow drift (frequency, other processes) is spread
 * over every pair alike. Reported per pair: the median and the p10/p90 of
 * the R samples, in microseconds; per operation, a RESULT line
 * ("RESULT transpile target=cuda ...", "RESULT list_entries ...") with the
 * median, p10 and p90 over the kernels' medians and the slowest kernel.
 *
 * The goal is "well under a millisecond" for a typical kernel: the
 * summary prints each target's median kernel against 1 ms (--goal-us).
 *
 * Single-threaded. CPU time taken from this process by others shows as
 * wall time above CPU time, and the CPU time other processes used on the
 * other CPUs (/proc/stat) is printed; above 5% the report warns. The exit
 * status never depends on timing: it is non-zero only for a bad command line,
 * an unreadable corpus or an unexpected transpiler failure.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_json.h"
#include "bench_stats.h"
#include "rk/rk.h"

enum { kMaxKernels = 256, kNameCap = 64 };

/* The operations timed: the five targets, then the entry list. */
enum { kOpEntries = RK_TARGET_COUNT_, kNumOps };

typedef enum pair_state {
  PAIR_TIMED,     /* works: timed */
  PAIR_REFUSED,   /* RK_ERR_COMPILE: the target refuses this kernel */
  PAIR_UNWRITTEN, /* RK_ERR_UNIMPLEMENTED: no printer for the target yet */
} pair_state_t;

typedef struct pair {
  pair_state_t state;
  char note[160]; /* why it is not timed */
  size_t out_bytes;
  double *samples; /* us per call, one per round */
  rkb_summary_t s;
} pair_t;

typedef struct kernel {
  char name[kNameCap]; /* file name, "saxpy.c" */
  char *source;
  size_t bytes;
  pair_t ops[kNumOps];
} kernel_t;

typedef struct options {
  long rounds, iters, warmup, goal_us;
  const char *dir;
  bool json;
} options_t;

static const char *op_name(int op) {
  return op == kOpEntries ? "entries" : rk_target_name((rk_target_t)op);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "bench_transpile: out of memory\n");
    exit(1);
  }
  return p;
}

/* ---- The corpus --------------------------------------------------------- */

static int cmp_kernels(const void *a, const void *b) {
  return strcmp(((const kernel_t *)a)->name, ((const kernel_t *)b)->name);
}

static char *read_file(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) {
    buf[n] = '\0';
    *out_len = (size_t)n;
  }
  return buf;
}

/* Loads every .c file of DIR, sorted by name. Returns the count, or -1. */
static int load_corpus(const char *dir, kernel_t *kernels) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "bench_transpile: cannot open kernel directory %s\n", dir);
    return -1;
  }
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 3 || n >= kNameCap || strcmp(e->d_name + n - 2, ".c") != 0)
      continue;
    if (count == kMaxKernels) {
      fprintf(stderr, "bench_transpile: more than %d kernels in %s\n",
              kMaxKernels, dir);
      closedir(d);
      return -1;
    }
    memcpy(kernels[count].name, e->d_name, n + 1);
    count++;
  }
  closedir(d);
  qsort(kernels, (size_t)count, sizeof *kernels, cmp_kernels);
  for (int k = 0; k < count; ++k) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, kernels[k].name);
    kernels[k].source = read_file(path, &kernels[k].bytes);
    if (!kernels[k].source) {
      fprintf(stderr, "bench_transpile: cannot read %s\n", path);
      return -1;
    }
  }
  if (count == 0)
    fprintf(stderr, "bench_transpile: no kernels (*.c) in %s\n", dir);
  return count ? count : -1;
}

/* ---- One call ----------------------------------------------------------- */

/* One timed operation: transpile (or list) and free the result. Returns
 * the status; *out_bytes (may be NULL) gets the output's length. */
static rk_status_t run_op(const kernel_t *k, int op, size_t *out_bytes) {
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = k->name;
  if (op == kOpEntries) {
    rk_entry_list_t *list = NULL;
    rk_status_t s = rk_codegen_list_entries(k->source, &o, &list, NULL);
    if (out_bytes) *out_bytes = s == RK_OK ? list->count : 0;
    rk_entry_list_destroy(list);
    return s;
  }
  char *text = NULL;
  rk_status_t s = rk_transpile(k->source, (rk_target_t)op, &o, &text);
  if (out_bytes) *out_bytes = text ? strlen(text) : 0;
  rk_transpile_free(text);
  return s;
}

/* The untimed first call: decides whether the pair is timed. */
static void probe(kernel_t *k, int op) {
  pair_t *p = &k->ops[op];
  rk_status_t s = run_op(k, op, &p->out_bytes);
  if (s == RK_OK) {
    p->state = PAIR_TIMED;
    return;
  }
  /* The first line of the message: "file:line:col: error: ...". */
  const char *msg = rk_last_error();
  int len = (int)strcspn(msg, "\n");
  if (s == RK_ERR_COMPILE) {
    p->state = PAIR_REFUSED;
    snprintf(p->note, sizeof p->note, "refused: %.*s", len, msg);
  } else if (s == RK_ERR_UNIMPLEMENTED) {
    p->state = PAIR_UNWRITTEN;
    snprintf(p->note, sizeof p->note, "not implemented in this build");
  } else {
    fprintf(stderr, "bench_transpile: %s for %s: %s: %s\n", k->name,
            op_name(op), rk_status_name(s), rk_last_error());
    exit(1);
  }
}

/* ---- Options ------------------------------------------------------------ */

static void usage(FILE *out) {
  fprintf(out,
          "usage: bench_transpile [--rounds N] [--iters N] [--warmup N]\n"
          "                       [--goal-us US] [--kernels DIR] [--quick]\n"
          "                       [--json]\n"
          "\n"
          "Times rk_transpile() of every kernel in DIR for each target, and\n"
          "rk_codegen_list_entries(), in one thread.\n"
          "\n"
          "  --rounds N   samples per kernel and target (default 31)\n"
          "  --iters N    calls per sample (default 20)\n"
          "  --warmup N   untimed calls per kernel and target first "
          "(default 20)\n"
          "  --goal-us US the per-kernel goal to compare with (default 1000)\n"
          "  --kernels D  the corpus (default %s)\n"
          "  --quick      3 rounds of 2 calls (CI smoke test)\n"
          "  --json       one JSON object on stdout (the table goes to "
          "stderr)\n"
          "\n"
          "Prints a table (median, p10, p90 in microseconds per call, and\n"
          "the output's size) and one 'RESULT transpile target=...' line per\n"
          "target. The exit status never depends on timing.\n",
          RK_BENCH_KERNEL_DIR);
}

static int parse_options(int argc, char **argv, options_t *o) {
  o->rounds = 31;
  o->iters = 20;
  o->warmup = 20;
  o->goal_us = 1000;
  o->dir = RK_BENCH_KERNEL_DIR;
  o->json = false;
  bool quick = false, set_rounds = false, set_iters = false, set_warmup = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    long *target = NULL, lo = 1, hi = 1000000;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--quick")) {
      quick = true;
      continue;
    } else if (!strcmp(a, "--json")) {
      o->json = true;
      continue;
    } else if (!strcmp(a, "--kernels")) {
      if (i + 1 >= argc) goto missing;
      o->dir = argv[++i];
      continue;
    } else if (!strcmp(a, "--rounds")) {
      target = &o->rounds;
      set_rounds = true;
    } else if (!strcmp(a, "--iters")) {
      target = &o->iters;
      set_iters = true;
    } else if (!strcmp(a, "--warmup")) {
      target = &o->warmup;
      set_warmup = true;
      lo = 0;
    } else if (!strcmp(a, "--goal-us")) {
      target = &o->goal_us;
    } else {
      fprintf(stderr, "bench_transpile: unknown option '%s'\n", a);
      usage(stderr);
      return -1;
    }
    if (i + 1 >= argc) goto missing;
    if (rkb_parse_long(argv[++i], lo, hi, target) != 0) {
      fprintf(stderr, "bench_transpile: %s needs a number from %ld to %ld\n", a,
              lo, hi);
      return -1;
    }
    continue;
  missing:
    fprintf(stderr, "bench_transpile: %s needs a value\n", a);
    return -1;
  }
  if (quick) {
    if (!set_rounds) o->rounds = 3;
    if (!set_iters) o->iters = 2;
    if (!set_warmup) o->warmup = 1;
  }
  return 0;
}

/* ---- Main --------------------------------------------------------------- */

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Busy seconds of all CPUs together (/proc/stat: user, nice, system, irq,
 * softirq, steal), or -1 when unknown. With this process's CPU time it
 * gives what other processes took during the run: they slow this thread
 * through shared caches without taking its CPU away. */
static double all_cpus_busy_seconds(void) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  if (n < 7 || hz <= 0) return -1;
  return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + (n >= 8 ? v[7] : 0)) /
         (double)hz;
}

/* "AMD EPYC 7B13" from /proc/cpuinfo, or "unknown"; *out_vm is set when
 * the CPU flags include "hypervisor" (a virtual machine). */
static void cpu_model(char *out, size_t cap, bool *out_vm) {
  snprintf(out, cap, "unknown");
  *out_vm = false;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[4096];
  bool have_model = false, have_flags = false;
  while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
    const char *v = strchr(line, ':');
    if (!v) continue;
    if (!have_model && strncmp(line, "model name", 10) == 0) {
      snprintf(out, cap, "%.*s", (int)strcspn(v + 2, "\n"), v + 2);
      have_model = true;
    } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
      *out_vm = strstr(v, " hypervisor") != NULL;
      have_flags = true;
    }
  }
  fclose(f);
}

static void print_header(const options_t *o, int nkernels) {
  char cpu[256];
  bool vm;
  cpu_model(cpu, sizeof cpu, &vm);
  printf(
      "bench_transpile: rk_transpile and rk_codegen_list_entries per "
      "kernel\n");
  printf("rk %s, build type '%s'%s%s, CPU \"%s\", one thread\n", rk_version(),
         RK_BENCH_BUILD_TYPE, RK_BENCH_SANITIZE[0] ? ", sanitizer " : "",
         RK_BENCH_SANITIZE, cpu);
  printf("corpus: %d kernels from %s\n", nkernels, o->dir);
  printf(
      "method: %ld rounds x %ld calls per kernel and operation (after %ld "
      "warm-up calls);\n        a sample is one round's time / %ld; rounds "
      "are the outer loop\n",
      o->rounds, o->iters, o->warmup, o->iters);
  printf(
      "one call: parse + check + print + free (\"entries\": parse + check + "
      "describe + free)\n");
  if (vm)
    printf(
        "note: a virtual machine (the 'hypervisor' CPU flag): the host's "
        "load can change\nthe speed within and between runs\n");
  if (strcmp(RK_BENCH_BUILD_TYPE, "Release") != 0 || RK_BENCH_SANITIZE[0])
    printf(
        "warning: not a plain Release build; times are not "
        "representative\n");
}

/* --json: per operation the distribution of the kernels' medians and the
 * slowest kernel, and per kernel each operation's median (us per call). */
static void write_json(rkb_json_t *j, const options_t *o,
                       const kernel_t *kernels, int nk) {
  rkb_json_int(j, "rounds", o->rounds);
  rkb_json_int(j, "iters", o->iters);
  rkb_json_int(j, "goal_us", o->goal_us);
  rkb_json_str(j, "unit", "us per call");
  rkb_json_key(j, "ops");
  rkb_json_array(j);
  double *medians = xcalloc((size_t)nk, sizeof(double));
  for (int op = 0; op < kNumOps; ++op) {
    int n = 0, slowest = -1;
    for (int k = 0; k < nk; ++k) {
      const pair_t *p = &kernels[k].ops[op];
      if (p->state != PAIR_TIMED) continue;
      medians[n++] = p->s.median;
      if (slowest < 0 || p->s.median > kernels[slowest].ops[op].s.median)
        slowest = k;
    }
    rkb_json_object(j);
    rkb_json_str(j, "op", op_name(op));
    rkb_json_int(j, "kernels", n);
    if (n) {
      rkb_summary_t s = rkb_summarize(medians, (size_t)n);
      rkb_json_summary(j, "kernel_medians_us", &s);
      rkb_json_str(j, "slowest_kernel", kernels[slowest].name);
    }
    rkb_json_end_object(j);
  }
  free(medians);
  rkb_json_end_array(j);
  rkb_json_key(j, "kernels");
  rkb_json_array(j);
  for (int k = 0; k < nk; ++k) {
    rkb_json_object(j);
    rkb_json_str(j, "kernel", kernels[k].name);
    rkb_json_int(j, "bytes", (long long)kernels[k].bytes);
    rkb_json_key(j, "median_us");
    rkb_json_object(j);
    for (int op = 0; op < kNumOps; ++op) {
      const pair_t *p = &kernels[k].ops[op];
      if (p->state == PAIR_TIMED)
        rkb_json_num(j, op_name(op), p->s.median);
      else
        rkb_json_str(j, op_name(op), NULL);
    }
    rkb_json_end_object(j);
    rkb_json_end_object(j);
  }
  rkb_json_end_array(j);
  rkb_json_finish(j);
}

int main(int argc, char **argv) {
  options_t opt;
  if (parse_options(argc, argv, &opt) != 0) return 2;
  rkb_json_t json;
  if (opt.json && !rkb_json_begin(&json, "transpile")) {
    fprintf(stderr, "bench_transpile: --json: cannot duplicate stdout\n");
    return 1;
  }
  kernel_t *kernels = xcalloc(kMaxKernels, sizeof *kernels);
  int nk = load_corpus(opt.dir, kernels);
  if (nk < 0) return 1;
  print_header(&opt, nk);

  for (int k = 0; k < nk; ++k)
    for (int op = 0; op < kNumOps; ++op) {
      probe(&kernels[k], op);
      kernels[k].ops[op].samples = xcalloc((size_t)opt.rounds, sizeof(double));
    }
  for (int k = 0; k < nk; ++k)
    for (int op = 0; op < kNumOps; ++op)
      if (kernels[k].ops[op].state == PAIR_TIMED)
        for (long i = 0; i < opt.warmup; ++i) run_op(&kernels[k], op, NULL);

  double wall0 = (double)rkb_now_ns() / 1e9, cpu0 = cpu_seconds();
  double busy0 = all_cpus_busy_seconds();
  for (long r = 0; r < opt.rounds; ++r)
    for (int k = 0; k < nk; ++k)
      for (int op = 0; op < kNumOps; ++op) {
        pair_t *p = &kernels[k].ops[op];
        if (p->state != PAIR_TIMED) continue;
        uint64_t t0 = rkb_now_ns();
        for (long i = 0; i < opt.iters; ++i)
          if (run_op(&kernels[k], op, NULL) != RK_OK) {
            fprintf(stderr, "bench_transpile: %s for %s failed while timed\n",
                    kernels[k].name, op_name(op));
            return 1;
          }
        p->samples[r] = (double)(rkb_now_ns() - t0) / 1e3 / (double)opt.iters;
      }
  double wall = (double)rkb_now_ns() / 1e9 - wall0, cpu = cpu_seconds() - cpu0;
  double busy1 = all_cpus_busy_seconds();

  /* Per kernel and operation. */
  printf("\n%-18s %6s  %-8s %9s %9s %9s %10s\n", "kernel", "bytes", "op",
         "median", "p10", "p90", "out");
  printf("%-18s %6s  %-8s %9s %9s %9s %10s\n", "", "", "", "us", "us", "us",
         "bytes");
  for (int k = 0; k < nk; ++k) {
    kernel_t *kn = &kernels[k];
    for (int op = 0; op < kNumOps; ++op) {
      pair_t *p = &kn->ops[op];
      if (op == 0)
        printf("%-18s %6zu  ", kn->name, kn->bytes);
      else
        printf("%-18s %6s  ", "", "");
      if (p->state != PAIR_TIMED) {
        printf("%-8s %s\n", op_name(op), p->note);
        continue;
      }
      p->s = rkb_summarize(p->samples, (size_t)opt.rounds);
      printf("%-8s %9.1f %9.1f %9.1f", op_name(op), p->s.median, p->s.p10,
             p->s.p90);
      if (op == kOpEntries)
        printf(" %4zu entr%s\n", p->out_bytes, p->out_bytes == 1 ? "y" : "ies");
      else
        printf(" %10zu\n", p->out_bytes);
    }
  }

  /* Per operation: the distribution of the kernels' medians. */
  printf("\nper operation, over the kernels' medians (us per call):\n");
  printf("%-8s %7s %9s %9s %9s %9s\n", "op", "kernels", "median", "p10", "p90",
         "slowest");
  double *medians = xcalloc((size_t)nk, sizeof(double));
  for (int op = 0; op < kNumOps; ++op) {
    int n = 0, slowest = -1, skipped = 0;
    for (int k = 0; k < nk; ++k) {
      const pair_t *p = &kernels[k].ops[op];
      if (p->state != PAIR_TIMED) {
        skipped++;
        continue;
      }
      medians[n++] = p->s.median;
      if (slowest < 0 || p->s.median > kernels[slowest].ops[op].s.median)
        slowest = k;
    }
    /* "RESULT transpile target=cuda ..." and "RESULT list_entries ...". */
    char result[64];
    if (op == kOpEntries)
      snprintf(result, sizeof result, "list_entries");
    else
      snprintf(result, sizeof result, "transpile target=%s", op_name(op));
    if (n == 0) {
      printf("%-8s %7d  not timed: %s\n", op_name(op), 0,
             kernels[0].ops[op].note);
      printf("RESULT %s kernels=0 median_us=na\n", result);
      continue;
    }
    rkb_summary_t s = rkb_summarize(medians, (size_t)n);
    double worst = kernels[slowest].ops[op].s.median;
    printf("%-8s %7d %9.1f %9.1f %9.1f %9.1f  (%s)", op_name(op), n, s.median,
           s.p10, s.p90, worst, kernels[slowest].name);
    if (skipped) printf(", %d not timed", skipped);
    printf("\n");
    printf(
        "RESULT %s kernels=%d rounds=%ld iters=%ld median_us=%.2f "
        "p10_us=%.2f p90_us=%.2f max_us=%.2f max_kernel=%s goal_us=%ld\n",
        result, n, opt.rounds, opt.iters, s.median, s.p10, s.p90, worst,
        kernels[slowest].name, opt.goal_us);
  }
  free(medians);

  printf(
      "\nagainst the goal, a typical kernel well under %ld us (typical: the "
      "median over\nthe kernels of each kernel's median):\n",
      opt.goal_us);
  for (int op = 0; op < kOpEntries; ++op) {
    double worst = 0;
    int n = 0;
    double *m = xcalloc((size_t)nk, sizeof(double));
    for (int k = 0; k < nk; ++k) {
      const pair_t *p = &kernels[k].ops[op];
      if (p->state != PAIR_TIMED) continue;
      m[n++] = p->s.median;
      if (p->s.median > worst) worst = p->s.median;
    }
    if (n) {
      double typical = rkb_summarize(m, (size_t)n).median;
      printf(
          "  %-7s typical %7.1f us = %5.1f%% of the goal (%.0fx under); "
          "slowest kernel %7.1f us (%s)\n",
          op_name(op), typical, 100.0 * typical / (double)opt.goal_us,
          (double)opt.goal_us / typical, worst,
          worst < (double)opt.goal_us ? "under" : "OVER");
    } else {
      printf("  %-7s not timed\n", op_name(op));
    }
    free(m);
  }

  printf("\nCPU time of this process: %.1f s of %.1f s wall (%.0f%%)\n", cpu,
         wall, wall > 0 ? 100.0 * cpu / wall : 0.0);
  /* The same spread on every pair means the machine changed speed during
   * the run (on a virtual machine: the host's load), not the transpiler. */
  double *ratios = xcalloc((size_t)nk * kNumOps, sizeof(double));
  size_t nr = 0;
  for (int k = 0; k < nk; ++k)
    for (int op = 0; op < kNumOps; ++op) {
      const pair_t *p = &kernels[k].ops[op];
      if (p->state == PAIR_TIMED && p->s.median > 0)
        ratios[nr++] = p->s.p90 / p->s.median;
    }
  double spread = rkb_summarize(ratios, nr).median;
  free(ratios);
  printf("spread: p90 / median is %.2f for the typical pair\n", spread);
  if (spread > 1.25)
    printf(
        "note: every pair has a similar slow tail, so the machine's speed "
        "changed during\nthe run (on a virtual machine: the host's load); "
        "the medians are the numbers\nto read, and compare runs only on the "
        "same quiet machine\n");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (busy0 >= 0 && busy1 >= 0 && ncpu > 1 && wall > 0) {
    double others = busy1 - busy0 - cpu;
    if (others < 0) others = 0;
    printf(
        "other processes kept %.0f%% of the other %ld CPU%s busy meanwhile "
        "(/proc/stat)\n",
        100.0 * others / (wall * (double)(ncpu - 1)), ncpu - 1,
        ncpu == 2 ? "" : "s");
    if (others > 0.05 * wall * (double)(ncpu - 1))
      printf(
          "warning: other processes share the caches and memory bandwidth "
          "and may have slowed\nsome rounds; rerun on a quieter machine to "
          "compare\n");
  }
  if (wall > 0 && cpu < 0.95 * wall)
    printf(
        "warning: this process was off the CPU %.0f%% of the time (other "
        "processes?);\nthe p90 values are inflated; rerun on a quieter "
        "machine\n",
        100.0 * (1.0 - cpu / wall));

  if (opt.json) write_json(&json, &opt, kernels, nk);
  for (int k = 0; k < nk; ++k) {
    for (int op = 0; op < kNumOps; ++op) free(kernels[k].ops[op].samples);
    free(kernels[k].source);
  }
  free(kernels);
  return 0;
}
