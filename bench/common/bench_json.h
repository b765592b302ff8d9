/* bench_json.h - `--json` for the benchmarks in bench/: one JSON object on
 * stdout instead of the table, which goes to stderr meanwhile (so a long
 * run still shows its progress, and `make report` can keep both).
 * Header-only.
 *
 *   rkb_json_t j;
 *   if (json) rkb_json_begin(&j, "launch");    // stdout now writes to stderr
 *   ... the benchmark, printing its table as always ...
 *   if (json) {
 *     rkb_json_key(&j, "configs");
 *     rkb_json_array(&j);
 *       rkb_json_object(&j);
 *         rkb_json_str(&j, "name", "grid=2,block=1");
 *         rkb_json_summary(&j, "rk_us", &s);    // median, p10, p90, ...
 *       rkb_json_end_object(&j);
 *     rkb_json_end_array(&j);
 *     rkb_json_finish(&j);                      // closes and restores stdout
 *   }
 *
 * rkb_json_begin writes "benchmark", "rk_version", "date" (UTC) and
 * "cpu_model"; every number goes through rkb_json_num, which writes null
 * for NaN and infinities, so the output is always valid JSON. */
#ifndef RK_BENCH_JSON_H_
#define RK_BENCH_JSON_H_

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "rk/rk.h"

enum { RKB_JSON_MAX_DEPTH = 16 };

typedef struct rkb_json {
  FILE *out;                      /* the real stdout */
  int depth;                      /* open objects and arrays */
  bool first[RKB_JSON_MAX_DEPTH]; /* nothing written at this level yet */
  bool after_key;                 /* a key was written, its value not */
} rkb_json_t;

/* A JSON string: quotes, backslashes and control characters escaped,
 * bytes outside ASCII as \u00XX. */
static inline void rkb_json_put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* The separator before a value or key at the current level. */
static inline void rkb_json_sep_(rkb_json_t *j) {
  if (j->after_key) {
    j->after_key = false;
    return;
  }
  if (j->depth > 0 && !j->first[j->depth]) fputc(',', j->out);
  if (j->depth > 0) fprintf(j->out, "\n%*s", 2 * j->depth, "");
  j->first[j->depth] = false;
}

/* A key inside an object; the next call writes its value. */
static inline void rkb_json_key(rkb_json_t *j, const char *key) {
  rkb_json_sep_(j);
  rkb_json_put_string(j->out, key);
  fputs(": ", j->out);
  j->after_key = true;
}

static inline void rkb_json_open_(rkb_json_t *j, char c) {
  rkb_json_sep_(j);
  fputc(c, j->out);
  if (j->depth + 1 < RKB_JSON_MAX_DEPTH) ++j->depth;
  j->first[j->depth] = true;
}

/* Opens an object or an array as the next value; rkb_json_end_object and
 * rkb_json_end_array close the innermost. */
static inline void rkb_json_object(rkb_json_t *j) { rkb_json_open_(j, '{'); }
static inline void rkb_json_array(rkb_json_t *j) { rkb_json_open_(j, '['); }

static inline void rkb_json_close_(rkb_json_t *j, char c) {
  bool empty = j->first[j->depth];
  if (j->depth > 0) --j->depth;
  if (!empty) fprintf(j->out, "\n%*s", 2 * j->depth, "");
  fputc(c, j->out);
}
static inline void rkb_json_end_object(rkb_json_t *j) {
  rkb_json_close_(j, '}');
}
static inline void rkb_json_end_array(rkb_json_t *j) {
  rkb_json_close_(j, ']');
}

/* Values: with key != NULL as "key": value inside an object, with NULL as
 * an element of an array. */
static inline void rkb_json_num(rkb_json_t *j, const char *key, double v) {
  if (key) rkb_json_key(j, key);
  rkb_json_sep_(j);
  if (isfinite(v))
    fprintf(j->out, "%.6g", v);
  else
    fputs("null", j->out);
}

static inline void rkb_json_int(rkb_json_t *j, const char *key, long long v) {
  if (key) rkb_json_key(j, key);
  rkb_json_sep_(j);
  fprintf(j->out, "%lld", v);
}

static inline void rkb_json_bool(rkb_json_t *j, const char *key, bool v) {
  if (key) rkb_json_key(j, key);
  rkb_json_sep_(j);
  fputs(v ? "true" : "false", j->out);
}

static inline void rkb_json_str(rkb_json_t *j, const char *key, const char *v) {
  if (key) rkb_json_key(j, key);
  rkb_json_sep_(j);
  if (v)
    rkb_json_put_string(j->out, v);
  else
    fputs("null", j->out);
}

/* {"n": ..., "median": ..., "p10": ..., "p90": ..., "min": ..., "max": ...,
 * "mean": ...} */
static inline void rkb_json_summary(rkb_json_t *j, const char *key,
                                    const rkb_summary_t *s) {
  if (key) rkb_json_key(j, key);
  rkb_json_object(j);
  rkb_json_int(j, "n", (long long)s->n);
  rkb_json_num(j, "median", s->median);
  rkb_json_num(j, "p10", s->p10);
  rkb_json_num(j, "p90", s->p90);
  rkb_json_num(j, "min", s->min);
  rkb_json_num(j, "max", s->max);
  rkb_json_num(j, "mean", s->mean);
  rkb_json_end_object(j);
}

/* An array of n numbers. */
static inline void rkb_json_nums(rkb_json_t *j, const char *key,
                                 const double *v, size_t n) {
  if (key) rkb_json_key(j, key);
  rkb_json_array(j);
  for (size_t i = 0; i < n; ++i) rkb_json_num(j, NULL, v[i]);
  rkb_json_end_array(j);
}

/* The first "model name" of /proc/cpuinfo, or "unknown". */
static inline void rkb_cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    ++v;
    while (*v == ' ' || *v == '\t') ++v;
    snprintf(out, cap, "%s", v);
    out[strcspn(out, "\n")] = '\0';
    break;
  }
  fclose(f);
}

/* Points stdout at stderr (the table goes there) and opens the JSON object
 * on the real stdout with the common fields. Returns false, with stdout
 * unchanged, when descriptor 1 cannot be duplicated. */
static inline bool rkb_json_begin(rkb_json_t *j, const char *benchmark) {
  memset(j, 0, sizeof *j);
  fflush(stdout);
  int fd = dup(1);
  if (fd < 0) return false;
  j->out = fdopen(fd, "w");
  if (!j->out || dup2(2, 1) < 0) {
    if (j->out)
      fclose(j->out);
    else
      close(fd);
    j->out = NULL;
    return false;
  }
  rkb_json_object(j);
  rkb_json_str(j, "benchmark", benchmark);
  rkb_json_str(j, "rk_version", rk_version());
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  rkb_json_str(j, "date", when);
  char model[256];
  rkb_cpu_model(model, sizeof model);
  rkb_json_str(j, "cpu_model", model);
  rkb_json_int(j, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
  return true;
}

/* Closes the top-level object (everything opened inside it must be closed)
 * and the JSON stream, and points stdout back at where it was. */
static inline void rkb_json_finish(rkb_json_t *j) {
  if (!j->out) return;
  rkb_json_end_object(j);
  fputc('\n', j->out);
  fflush(stdout);
  fflush(j->out);
  dup2(fileno(j->out), 1);
  fclose(j->out);
  j->out = NULL;
}

#endif /* RK_BENCH_JSON_H_ */
