/* profile.c - the cost profile as text: reading, writing, environment
 * overrides and where it lives.
 *
 *   # comment
 *   rk-cost-profile 1
 *   fingerprint 0123456789abcdef0123456789abcdef
 *   machine cpu=...; cpus=2; isa=avx512
 *   threads 2
 *   simd.elementwise.launch = 6.1e-08
 *   simd.elementwise.rate = 4096 3.1e+10 3.7e+11    # bytes FLOP/s bytes/s
 *   opencl0.h2d = 1.2e-05 9.8e+09                  # latency_s bytes/s
 *   end
 *
 * Reading is all or nothing: a line that does not parse, a value that is
 * not a positive finite number, points out of order, a missing "end"
 * (a truncated file) or anything after it reject the whole profile, and the
 * model keeps its defaults.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "cost/cost.h"

enum { kProfileVersion = 1 };

static bool why_set(char *why, size_t cap, const char *fmt, ...)
    RK__PRINTF(3, 4);
static bool why_set(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return false;
}

static bool parse_number(const char **p, double *out) {
  while (**p == ' ' || **p == '\t') ++*p;
  if (!**p) return false;
  char *end;
  errno = 0;
  double v = strtod(*p, &end);
  if (end == *p || errno != 0) return false;
  if (*end && *end != ' ' && *end != '\t') return false;
  *p = end;
  *out = v;
  return true;
}

static bool at_end(const char *p) {
  while (*p == ' ' || *p == '\t') ++p;
  return *p == '\0';
}

static bool good(double v) { return isfinite(v) && v > 0.0; }

static rk__cost_target_t *find_target(rk__cost_target_t *targets, size_t n,
                                      const char *key, size_t len) {
  for (size_t i = 0; i < n; ++i)
    if (strlen(targets[i].key) == len && strncmp(targets[i].key, key, len) == 0)
      return &targets[i];
  return NULL;
}

static int find_class(const char *name, size_t len) {
  for (int c = 0; c < RK__CLASS_COUNT; ++c) {
    const char *cn = rk__cost_class_name((rk__cost_class_t)c);
    if (strlen(cn) == len && strncmp(cn, name, len) == 0) return c;
  }
  return -1;
}

/* One "key = values" line into targets. */
static bool parse_entry(rk__cost_target_t *targets, size_t ntargets,
                        bool (*seen)[RK__CLASS_COUNT], char *line, char *why,
                        size_t cap) {
  char *eq = strchr(line, '=');
  if (!eq) return why_set(why, cap, "expected 'key = values'");
  char *key_end = eq;
  while (key_end > line && (key_end[-1] == ' ' || key_end[-1] == '\t'))
    --key_end;
  *key_end = '\0';
  const char *values = eq + 1;
  char *dot1 = strchr(line, '.');
  if (!dot1) return why_set(why, cap, "key '%s' has no '.'", line);
  rk__cost_target_t *t =
      find_target(targets, ntargets, line, (size_t)(dot1 - line));
  if (!t)
    return why_set(why, cap, "unknown target '%.*s'", (int)(dot1 - line), line);
  size_t ti = (size_t)(t - targets);
  const char *rest = dot1 + 1;
  if (strcmp(rest, "h2d") == 0 || strcmp(rest, "d2h") == 0) {
    if (t->target.kind != RK_EXEC_GPU)
      return why_set(why, cap, "'%s' is only for GPU targets", line);
    double lat, bw;
    if (!parse_number(&values, &lat) || !parse_number(&values, &bw) ||
        !at_end(values) || !(lat >= 0.0 && isfinite(lat)) || !good(bw))
      return why_set(why, cap,
                     "'%s' needs a latency (s, >= 0) and a bandwidth "
                     "(bytes/s, > 0)",
                     line);
    rk__cost_link_t *link = rest[0] == 'h' ? &t->h2d : &t->d2h;
    link->latency_s = lat;
    link->bandwidth = bw;
    return true;
  }
  rk__cost_curve_t *curve;
  const char *dot2;
  if (strncmp(rest, "op.", 3) == 0) {
    /* <target>.op.<op>.launch / .rate: one op's own curve (they start
     * empty, so there are no defaults to replace). */
    const char *name = rest + 3;
    dot2 = strchr(name, '.');
    if (!dot2) return why_set(why, cap, "unknown key '%s'", line);
    char opname[32];
    size_t len = (size_t)(dot2 - name);
    rk_op_t op = (rk_op_t)0;
    if (len >= sizeof opname)
      return why_set(why, cap, "unknown op in '%s'", line);
    memcpy(opname, name, len);
    opname[len] = '\0';
    char *saved = rk__error_save();
    bool known = rk_op_from_name(opname, &op) == RK_OK;
    rk__error_restore(saved);
    if (!known || op == RK_OP_MATVEC || op == RK_OP_MATMUL)
      return why_set(why, cap, "unknown op '%s' in '%s'", opname, line);
    curve = &t->ops[op];
    curve->measured = true;
  } else {
    dot2 = strchr(rest, '.');
    if (!dot2) return why_set(why, cap, "unknown key '%s'", line);
    int cls = find_class(rest, (size_t)(dot2 - rest));
    if (cls < 0)
      return why_set(why, cap, "unknown op class '%.*s'", (int)(dot2 - rest),
                     rest);
    curve = &t->curves[cls];
    if (!seen[ti][cls]) {
      /* The first line of a curve replaces the defaults. */
      seen[ti][cls] = true;
      curve->count = 0;
      curve->measured = true;
    }
  }
  const char *field = dot2 + 1;
  if (strcmp(field, "launch") == 0) {
    double v;
    if (!parse_number(&values, &v) || !at_end(values) || !(v >= 0.0) ||
        !isfinite(v))
      return why_set(why, cap, "'%s' needs seconds (>= 0)", line);
    curve->launch_s = v;
    return true;
  }
  if (strcmp(field, "rate") == 0) {
    double bytes, flops, bw;
    if (!parse_number(&values, &bytes) || !parse_number(&values, &flops) ||
        !parse_number(&values, &bw) || !at_end(values) || !good(bytes) ||
        !good(flops) || !good(bw))
      return why_set(why, cap, "'%s' needs bytes, FLOP/s and bytes/s (all > 0)",
                     line);
    if (curve->count >= RK__COST_MAX_POINTS)
      return why_set(why, cap, "'%s': more than %d points", line,
                     RK__COST_MAX_POINTS);
    if (curve->count > 0 && bytes <= curve->points[curve->count - 1].bytes)
      return why_set(why, cap, "'%s': sizes must increase", line);
    rk__cost_point_t *pt = &curve->points[curve->count++];
    pt->bytes = bytes;
    pt->flop_rate = flops;
    pt->bandwidth = bw;
    return true;
  }
  return why_set(why, cap, "unknown key '%s'", line);
}

bool rk__cost_profile_parse(rk_cost_model_t *model, const char *text, char *why,
                            size_t cap) {
  size_t ntargets = model->machine.ntargets;
  rk__cost_target_t *targets = malloc(sizeof model->machine.targets);
  bool(*seen)[RK__CLASS_COUNT] = calloc(RK__COST_MAX_TARGETS, sizeof *seen);
  char *copy = strdup(text);
  bool ok = false;
  if (!targets || !seen || !copy) {
    why_set(why, cap, "could not be read: out of memory");
    goto done;
  }
  memcpy(targets, model->machine.targets, sizeof model->machine.targets);
  int threads = 0;
  bool have_version = false, have_fingerprint = false, ended = false;
  int lineno = 0;
  /* strtok_r would skip empty lines and miss embedded NULs: split by hand. */
  char *line = copy;
  while (line) {
    char *next = strchr(line, '\n');
    if (next) *next++ = '\0';
    ++lineno;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    size_t len = strlen(line);
    while (len > 0 && isspace((unsigned char)line[len - 1])) line[--len] = 0;
    while (*line == ' ' || *line == '\t') ++line;
    if (!*line) {
      line = next;
      continue;
    }
    if (ended) {
      why_set(why, cap, "is corrupt: line %d: text after 'end'", lineno);
      goto done;
    }
    if (!have_version) {
      const char *version = NULL;
      size_t digits = 0;
      if (strncmp(line, "rk-cost-profile", 15) == 0 &&
          (line[15] == ' ' || line[15] == '\t')) {
        version = line + 16;
        while (*version == ' ' || *version == '\t') ++version;
        digits = strspn(version, "0123456789");
      }
      if (!version || digits == 0 || !at_end(version + digits)) {
        why_set(why, cap, "is corrupt: line %d: expected 'rk-cost-profile %d'",
                lineno, kProfileVersion);
        goto done;
      }
      /* Compared as text: a version of any length is reported as written,
       * never as a number that overflowed. */
      while (digits > 1 && *version == '0') ++version, --digits;
      char mine[16];
      snprintf(mine, sizeof mine, "%d", kProfileVersion);
      if (digits != strlen(mine) || strncmp(version, mine, digits) != 0) {
        why_set(why, cap,
                "is stale: format version %.*s%s, this rk reads version %d",
                digits > 40 ? 37 : (int)digits, version,
                digits > 40 ? "..." : "", kProfileVersion);
        goto done;
      }
      have_version = true;
    } else if (strncmp(line, "fingerprint", 11) == 0 &&
               (line[11] == ' ' || line[11] == '\t')) {
      const char *fp = line + 12;
      while (*fp == ' ' || *fp == '\t') ++fp;
      /* The same 32 hex digits, in either case; anything else is another
       * machine's, shown whole (up to 64 characters) so that the two
       * differ where they differ. */
      if (strcasecmp(fp, model->machine.fingerprint) != 0) {
        size_t n = strlen(fp);
        why_set(why, cap,
                "is stale: it was measured on another machine or hardware "
                "(fingerprint '%.*s%s', this machine's %s)",
                n > 64 ? 61 : (int)n, fp, n > 64 ? "..." : "",
                model->machine.fingerprint);
        goto done;
      }
      have_fingerprint = true;
    } else if (strncmp(line, "machine", 7) == 0 &&
               (line[7] == ' ' || line[7] == '\t')) {
      /* Informational. */
    } else if (strncmp(line, "threads", 7) == 0 &&
               (line[7] == ' ' || line[7] == '\t')) {
      char tail;
      if (sscanf(line + 7, "%d %c", &threads, &tail) != 1 || threads < 1 ||
          threads > 65536) {
        why_set(why, cap, "is corrupt: line %d: bad thread count", lineno);
        goto done;
      }
    } else if (strcmp(line, "end") == 0) {
      ended = true;
    } else {
      if (!have_fingerprint) {
        why_set(why, cap, "is corrupt: line %d: values before 'fingerprint'",
                lineno);
        goto done;
      }
      char detail[300];
      if (!parse_entry(targets, ntargets, seen, line, detail, sizeof detail)) {
        why_set(why, cap, "is corrupt: line %d: %s", lineno, detail);
        goto done;
      }
    }
    line = next;
  }
  if (!have_version) {
    why_set(why, cap, "is corrupt: empty or not a cost profile");
    goto done;
  }
  if (!have_fingerprint) {
    why_set(why, cap, "is corrupt: no fingerprint");
    goto done;
  }
  if (!ended) {
    why_set(why, cap, "is corrupt: truncated (no 'end' line)");
    goto done;
  }
  for (size_t i = 0; i < ntargets; ++i) {
    for (int c = 0; c < RK__CLASS_COUNT; ++c)
      if (seen[i][c] && targets[i].curves[c].count == 0) {
        why_set(why, cap, "is corrupt: %s.%s has a launch time but no rates",
                targets[i].key, rk__cost_class_name((rk__cost_class_t)c));
        goto done;
      }
    for (int o = 0; o < RK_OP_COUNT_; ++o)
      if (targets[i].ops[o].measured && targets[i].ops[o].count == 0) {
        why_set(why, cap, "is corrupt: %s.op.%s has a launch time but no rates",
                targets[i].key, rk_op_name((rk_op_t)o));
        goto done;
      }
  }
  /* Text with embedded NULs ends early; that is a truncation too, caught
   * above by the missing "end". */
  memcpy(model->machine.targets, targets, sizeof model->machine.targets);
  model->threads = threads;
  ok = true;
done:
  free(copy);
  free(seen);
  free(targets);
  return ok;
}

char *rk__cost_profile_format(const rk_cost_model_t *model,
                              const char *comment) {
  rk__strbuf_t sb;
  rk__strbuf_init(&sb);
  const rk__machine_t *m = &model->machine;
  rk__strbuf_printf(
      &sb,
      "# rk cost profile: the rates of this machine, measured by `rk "
      "calibrate`.\n"
      "# Read by the calibrated cost model (rk_cost_model_open); a profile "
      "whose\n"
      "# version or fingerprint does not match is ignored with a warning.\n"
      "# Single values can be overridden with environment variables\n"
      "# RK_COST_<TARGET>_<CLASS>_{LAUNCH,FLOPS,BANDWIDTH} and\n"
      "# RK_COST_<TARGET>_{H2D,D2H}_{LATENCY,BANDWIDTH} "
      "(see docs/cost-model.md).\n");
  if (comment) rk__strbuf_printf(&sb, "# %s\n", comment);
  rk__strbuf_printf(&sb,
                    "rk-cost-profile %d\n"
                    "fingerprint %s\n"
                    "machine %s\n",
                    kProfileVersion, m->fingerprint, m->description);
  if (model->threads > 0)
    rk__strbuf_printf(&sb, "threads %d\n", model->threads);
  rk__strbuf_printf(&sb,
                    "#\n"
                    "# <target>.<class>.launch = seconds per call\n"
                    "# <target>.op.<op>.launch, .rate = the same for one op "
                    "(used instead of its class's)\n"
                    "# <target>.<class>.rate = working-set-bytes FLOP/s "
                    "bytes/s   (one line per size)\n"
                    "# <target>.h2d, .d2h = latency-seconds bytes/s   (GPU "
                    "transfers)\n");
  for (size_t i = 0; i < m->ntargets; ++i) {
    const rk__cost_target_t *t = &m->targets[i];
    rk__strbuf_printf(
        &sb, "\n# %s: %s%s%s\n", t->key, rk_exec_kind_name(t->target.kind),
        t->target.kind == RK_EXEC_SIMD ? " " : "",
        t->target.kind == RK_EXEC_SIMD ? rk_isa_name(t->target.isa) : "");
    if (t->target.kind == RK_EXEC_GPU) {
      rk__strbuf_printf(&sb, "# device: %s%s\n", t->device_name,
                        t->software ? " (software emulation)" : "");
      if (!t->candidate) {
        /* Not measured: a reader keeps its defaults for it. */
        rk__strbuf_printf(&sb,
                          "# not measured (emulated devices are measured "
                          "with `rk calibrate --software`)\n");
        continue;
      }
      rk__strbuf_printf(&sb, "%s.h2d = %.6g %.6g\n", t->key, t->h2d.latency_s,
                        t->h2d.bandwidth);
      rk__strbuf_printf(&sb, "%s.d2h = %.6g %.6g\n", t->key, t->d2h.latency_s,
                        t->d2h.bandwidth);
    }
    for (int c = 0; c < RK__CLASS_COUNT; ++c) {
      const rk__cost_curve_t *curve = &t->curves[c];
      const char *cn = rk__cost_class_name((rk__cost_class_t)c);
      rk__strbuf_printf(&sb, "%s.%s.launch = %.6g\n", t->key, cn,
                        curve->launch_s);
      for (size_t p = 0; p < curve->count; ++p)
        rk__strbuf_printf(&sb, "%s.%s.rate = %.0f %.6g %.6g\n", t->key, cn,
                          curve->points[p].bytes, curve->points[p].flop_rate,
                          curve->points[p].bandwidth);
    }
    for (int o = 0; o < RK_OP_COUNT_; ++o) {
      const rk__cost_curve_t *curve = &t->ops[o];
      if (curve->count == 0) continue;
      const char *on = rk_op_name((rk_op_t)o);
      rk__strbuf_printf(&sb, "%s.op.%s.launch = %.6g\n", t->key, on,
                        curve->launch_s);
      for (size_t p = 0; p < curve->count; ++p)
        rk__strbuf_printf(&sb, "%s.op.%s.rate = %.0f %.6g %.6g\n", t->key, on,
                          curve->points[p].bytes, curve->points[p].flop_rate,
                          curve->points[p].bandwidth);
    }
  }
  rk__strbuf_puts(&sb, "end\n");
  if (sb.failed) {
    rk__strbuf_free(&sb);
    return NULL;
  }
  return sb.data;
}

/* ---- Environment overrides ------------------------------------------------
 */

/* RK_COST_ + key with letters upper-cased and '.' as '_'. */
static void env_name(char *out, size_t cap, const char *a, const char *b,
                     const char *c) {
  snprintf(out, cap, "RK_COST_%s_%s%s%s", a, b, c ? "_" : "", c ? c : "");
  for (char *p = out; *p; ++p) *p = (char)toupper((unsigned char)*p);
}

/* Adds a sentence to the model's env_note ("; " between sentences). */
static void env_warn(rk_cost_model_t *model, const char *fmt, ...)
    RK__PRINTF(2, 3);
static void env_warn(rk_cost_model_t *model, const char *fmt, ...) {
  size_t used = strlen(model->env_note), cap = sizeof model->env_note;
  if (used > 0 && used + 2 < cap) {
    memcpy(model->env_note + used, "; ", 3);
    used += 2;
  }
  if (used + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(model->env_note + used, cap - used, fmt, ap);
  va_end(ap);
}

/* Reads a positive (or, with allow_zero, non-negative) finite number from
 * the environment; a malformed value is ignored, with a sentence in the
 * model's env_note. */
static bool env_number(rk_cost_model_t *model, const char *name,
                       bool allow_zero, double *out) {
  const char *v = getenv(name);
  if (!v || !*v) return false;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  while (*end == ' ') ++end;
  if (end == v || *end || errno || !isfinite(x) || x < 0.0 ||
      (x == 0.0 && !allow_zero)) {
    env_warn(model, "ignoring %s='%.40s%s': not a %s finite number", name, v,
             strlen(v) > 40 ? "..." : "",
             allow_zero ? "non-negative" : "positive");
    return false;
  }
  *out = x;
  return true;
}

static const char *const kCurveFields[] = {"launch", "flops", "bandwidth"};
static const char *const kLinks[] = {"h2d", "d2h"};
static const char *const kLinkFields[] = {"latency", "bandwidth"};

/* Whether name[0..len) is an RK_COST_ variable of this model's machine. */
static bool env_known(const rk_cost_model_t *model, const char *name,
                      size_t len) {
  static const char *const kGlobal[] = {"RK_COST_PROFILE", "RK_COST_SOFTWARE"};
  char known[160];
  for (size_t g = 0; g < 2; ++g)
    if (strlen(kGlobal[g]) == len && strncmp(name, kGlobal[g], len) == 0)
      return true;
  for (size_t i = 0; i < model->machine.ntargets; ++i) {
    const rk__cost_target_t *t = &model->machine.targets[i];
    for (int c = 0; c < RK__CLASS_COUNT; ++c)
      for (int f = 0; f < 3; ++f) {
        env_name(known, sizeof known, t->key,
                 rk__cost_class_name((rk__cost_class_t)c), kCurveFields[f]);
        if (strlen(known) == len && strncmp(name, known, len) == 0) return true;
      }
    if (t->target.kind != RK_EXEC_GPU) continue;
    for (int l = 0; l < 2; ++l)
      for (int f = 0; f < 2; ++f) {
        env_name(known, sizeof known, t->key, kLinks[l], kLinkFields[f]);
        if (strlen(known) == len && strncmp(name, known, len) == 0) return true;
      }
  }
  return false;
}

extern char **environ;

/* One sentence for every RK_COST_ variable that is set but means nothing
 * here (a misspelling, a target this machine lacks), naming the known
 * ones. */
static void env_check_unknown(rk_cost_model_t *model) {
  enum { kMaxNamed = 6 };
  char names[kMaxNamed * 72] = "";
  size_t unknown = 0, used = 0;
  for (char **e = environ; e && *e; ++e) {
    if (strncmp(*e, "RK_COST_", 8) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (env_known(model, *e, len)) continue;
    if (unknown++ < kMaxNamed && used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%.*s",
                               used ? ", " : "", len > 64 ? 64 : (int)len, *e);
  }
  if (unknown == 0) return;
  char targets[RK__COST_MAX_TARGETS * 34] = "";
  size_t tused = 0;
  for (size_t i = 0; i < model->machine.ntargets && tused < sizeof targets;
       ++i) {
    tused += (size_t)snprintf(targets + tused, sizeof targets - tused, "%s%s",
                              i ? ", " : "", model->machine.targets[i].key);
  }
  for (char *p = targets; *p; ++p) *p = (char)toupper((unsigned char)*p);
  env_warn(model,
           "ignoring %s%s: %s of the cost model on this machine "
           "(known: RK_COST_PROFILE, RK_COST_SOFTWARE, "
           "RK_COST_<TARGET>_<CLASS>_{LAUNCH,FLOPS,BANDWIDTH} and, for GPU "
           "targets, RK_COST_<TARGET>_{H2D,D2H}_{LATENCY,BANDWIDTH}, where "
           "<TARGET> is one of %s and <CLASS> one of ELEMENTWISE, REDUCTION, "
           "TRANSCENDENTAL, MATVEC, MATMUL)",
           names, unknown > kMaxNamed ? ", ..." : "",
           unknown == 1 ? "not a variable" : "not variables", targets);
}

size_t rk__cost_apply_env(rk_cost_model_t *model) {
  size_t applied = 0;
  char name[160];
  double v;
  model->env_note[0] = '\0';
  for (size_t i = 0; i < model->machine.ntargets; ++i) {
    rk__cost_target_t *t = &model->machine.targets[i];
    for (int c = 0; c < RK__CLASS_COUNT; ++c) {
      rk__cost_curve_t *curve = &t->curves[c];
      const char *cn = rk__cost_class_name((rk__cost_class_t)c);
      size_t before = applied;
      env_name(name, sizeof name, t->key, cn, "launch");
      if (env_number(model, name, true, &v)) {
        curve->launch_s = v;
        ++applied;
      }
      env_name(name, sizeof name, t->key, cn, "flops");
      if (env_number(model, name, false, &v)) {
        for (size_t p = 0; p < curve->count; ++p)
          curve->points[p].flop_rate = v;
        ++applied;
      }
      env_name(name, sizeof name, t->key, cn, "bandwidth");
      if (env_number(model, name, false, &v)) {
        for (size_t p = 0; p < curve->count; ++p)
          curve->points[p].bandwidth = v;
        ++applied;
      }
      /* An override of a class describes all its ops: their own measured
       * curves give way to it. */
      if (applied != before)
        for (int o = 0; o < RK_OP_COUNT_; ++o)
          if ((int)rk__op_class((rk_op_t)o) == c) t->ops[o].count = 0;
    }
    if (t->target.kind != RK_EXEC_GPU) continue;
    for (int l = 0; l < 2; ++l) {
      rk__cost_link_t *link = l == 0 ? &t->h2d : &t->d2h;
      env_name(name, sizeof name, t->key, kLinks[l], "latency");
      if (env_number(model, name, true, &v)) {
        link->latency_s = v;
        ++applied;
      }
      env_name(name, sizeof name, t->key, kLinks[l], "bandwidth");
      if (env_number(model, name, false, &v)) {
        link->bandwidth = v;
        ++applied;
      }
    }
  }
  env_check_unknown(model);
  return applied;
}

/* ---- Where profiles live --------------------------------------------------
 */

rk_status_t rk__cost_default_path(const char *fingerprint, char *out,
                                  size_t cap) {
  char root[4096], dir[4200];
  rk_status_t s = rk__cache_root(root, sizeof root);
  if (s == RK_ERR_NOT_FOUND)
    return rk__fail(RK_ERR_UNAVAILABLE,
                    "cost profile: no cache directory (set RK_CACHE_DIR, "
                    "XDG_CACHE_HOME or HOME)");
  int n = s == RK_OK
              ? snprintf(out, cap, "%s/cost/%s.profile", root, fingerprint)
              : -1;
  if (n < 0 || (size_t)n >= cap)
    return rk__fail(RK_ERR_OUT_OF_RANGE,
                    "cost profile: the path does not fit in %zu bytes", cap);
  /* The cache's trust rule (base/cache_dir.h): a profile that another user
   * could have written is neither read nor written over. What does not
   * exist yet is created 0700 by whoever writes the profile. */
  snprintf(dir, sizeof dir, "%s/cost", root);
  const char *const levels[] = {root, dir, out};
  char *saved = rk__error_save();
  for (int i = 0; i < 3; ++i) {
    s = rk__cache_check(levels[i], i < 2);
    if (s == RK_ERR_NOT_FOUND) break;
    if (s != RK_OK) {
      free(saved);
      return rk__fail_context(s, "cost profile");
    }
  }
  rk__error_restore(saved);
  return RK_OK;
}

rk_status_t rk_cost_profile_path(char *out, size_t capacity) {
  if (!out || capacity == 0)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cost_profile_path: out must not be NULL or empty");
  const char *env = getenv("RK_COST_PROFILE");
  if (env && *env) {
    if (strlen(env) >= capacity)
      return rk__fail(RK_ERR_OUT_OF_RANGE,
                      "cost_profile_path: the path does not fit in %zu bytes",
                      capacity);
    memcpy(out, env, strlen(env) + 1);
    return RK_OK;
  }
  rk__machine_t *m = malloc(sizeof *m);
  if (!m)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cost_profile_path: out of memory");
  rk__machine_probe(m, false);
  rk_status_t s = rk__cost_default_path(m->fingerprint, out, capacity);
  free(m);
  return s;
}
