/* The calibrated cost model: operation accounting, profiles (missing,
 * stale, corrupt, truncated, garbage), environment overrides and the terms
 * of a prediction (with a synthetic GPU candidate for the transfer terms). */
#define RK_TEST_IMPLEMENTATION
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "cost/cost.h"
#include "rk/select.h"
#include "rk_test.h"

static bool near(double a, double b) {
  return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)) + 1e-15;
}

static void test_ops(void) {
  for (int i = 0; i < RK_OP_COUNT_; ++i) {
    rk_op_t op;
    CHECK_OK(rk_op_from_name(rk_op_name((rk_op_t)i), &op));
    CHECK(op == (rk_op_t)i, "round trip of %s", rk_op_name((rk_op_t)i));
  }
  rk_op_t op;
  CHECK_OK(rk_op_from_name("MatMul", &op));
  CHECK(op == RK_OP_MATMUL, "case-insensitive");
  CHECK_STATUS(rk_op_from_name("gemm", &op), RK_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("gemm");
  CHECK_STATUS(rk_op_from_name(NULL, &op), RK_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(rk_op_name(RK_OP_COUNT_), "unknown") == 0, "unknown op name");

  rk_op_desc_t d = {.op = RK_OP_ADD, .n = 1000};
  CHECK(rk_op_bytes(&d) == 12000 && rk_op_flops(&d) == 1000, "add");
  d.op = RK_OP_AXPY;
  CHECK(rk_op_bytes(&d) == 12000 && rk_op_flops(&d) == 2000, "axpy");
  d.op = RK_OP_DOT;
  CHECK(rk_op_bytes(&d) == 8004 && rk_op_flops(&d) == 2000, "dot");
  d.op = RK_OP_SUM;
  CHECK(rk_op_bytes(&d) == 4004 && rk_op_flops(&d) == 1000, "sum");
  d.op = RK_OP_FMA;
  CHECK(rk_op_bytes(&d) == 16000 && rk_op_flops(&d) == 2000, "fma");
  rk_op_desc_t mm = {.op = RK_OP_MATMUL, .m = 2, .n = 3, .k = 4};
  CHECK(rk_op_bytes(&mm) == 4u * (8 + 12 + 6), "matmul bytes %llu",
        (unsigned long long)rk_op_bytes(&mm));
  CHECK(rk_op_flops(&mm) == 48, "matmul flops");
  rk_op_desc_t mv = {.op = RK_OP_MATVEC, .m = 5, .n = 7};
  CHECK(rk_op_bytes(&mv) == 4u * (35 + 7 + 5), "matvec bytes");
  CHECK(rk_op_flops(&mv) == 70, "matvec flops");
  /* Saturation, never wrapping. */
  mm.m = mm.n = mm.k = (uint64_t)1 << 32;
  CHECK(rk_op_flops(&mm) == UINT64_MAX, "matmul flops saturate");
  CHECK(rk_op_bytes(&mm) == UINT64_MAX, "matmul bytes saturate");
  d.op = RK_OP_SIGMOID;
  d.n = UINT64_MAX / 2;
  CHECK(rk_op_flops(&d) == UINT64_MAX && rk_op_bytes(&d) == UINT64_MAX,
        "sigmoid saturates");
  CHECK(rk_op_bytes(NULL) == 0 && rk_op_flops(NULL) == 0, "NULL desc");
}

static rk_cost_model_t *open_quiet(const char *path) {
  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.profile_path = path;
  o.quiet = true;
  rk_cost_model_t *m = NULL;
  if (!CHECK_OK(rk_cost_model_open_with(&o, &m))) return NULL;
  return m;
}

static void write_text(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    CHECK(false, "cannot write %s", path);
    return;
  }
  fwrite(text, 1, n, f);
  fclose(f);
}

/* Opens `text` as a profile; returns whether it was accepted, and the
 * note. */
static bool accepts(const char *dir, const char *text, size_t n, char *note,
                    size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/p.profile", dir);
  write_text(path, text, n);
  rk_cost_model_t *m = open_quiet(path);
  if (!m) return false;
  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(m, &info));
  if (note) snprintf(note, cap, "%s", info.note);
  bool ok = info.from_profile;
  CHECK(ok == (info.note[0] == '\0'), "note '%s' with from_profile %d",
        info.note, ok);
  rk_cost_model_destroy(m);
  return ok;
}

static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) return NULL;
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  if (!out) return NULL;
  size_t head = (size_t)(at - text);
  memcpy(out, text, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

static void test_profiles(const char *dir) {
  /* No profile: defaults, a note, and still predictions. */
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  rk_cost_model_t *m = open_quiet(missing);
  if (!m) return;
  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(m, &info));
  CHECK(!info.from_profile, "no profile, yet from_profile");
  CHECK(rk_test_contains(info.note, "no profile"), "note: %s", info.note);
  CHECK(strlen(info.fingerprint) == 32, "fingerprint '%s'", info.fingerprint);
  CHECK(rk_test_contains(info.machine, "cpus="), "machine '%s'", info.machine);
  CHECK(info.candidate_count >= 1, "no candidates");

  /* The model's own text reads back. */
  char *text = NULL;
  char fingerprint[33];
  snprintf(fingerprint, sizeof fingerprint, "%s", info.fingerprint);
  if (!CHECK_OK(rk_cost_model_format(m, &text))) return;
  rk_cost_model_destroy(m); /* info's strings go with it */
  char note[1700];
  CHECK(accepts(dir, text, strlen(text), note, sizeof note),
        "own text refused: %s", note);

  /* Stale: another machine's fingerprint, another version. */
  char fp_line[64];
  snprintf(fp_line, sizeof fp_line, "fingerprint %s", fingerprint);
  char *stale =
      replace(text, fp_line, "fingerprint 00000000000000000000000000000000");
  if (CHECK(stale != NULL, "no fingerprint line")) {
    CHECK(!accepts(dir, stale, strlen(stale), note, sizeof note),
          "stale fingerprint accepted");
    CHECK(rk_test_contains(note, "stale"), "note: %s", note);
    free(stale);
  }
  char *v2 = replace(text, "rk-cost-profile 1", "rk-cost-profile 2");
  if (CHECK(v2 != NULL, "no version line")) {
    CHECK(!accepts(dir, v2, strlen(v2), note, sizeof note), "v2 accepted");
    CHECK(rk_test_contains(note, "version 2"), "note: %s", note);
    free(v2);
  }

  /* Every truncation is refused (the "end" line is missing) and never
   * crashes; only the whole text (with or without its last newline) is
   * accepted. */
  size_t len = strlen(text);
  size_t refused = 0;
  for (size_t cut = 0; cut + 1 < len; cut += (cut < 64 ? 1 : 7)) {
    if (accepts(dir, text, cut, NULL, 0)) {
      CHECK(false, "truncated at %zu of %zu accepted", cut, len);
      break;
    }
    ++refused;
  }
  CHECK(refused > 10, "truncations tried: %zu", refused);
  CHECK(accepts(dir, text, len - 1, NULL, 0), "no final newline refused");

  /* Corruptions, each refused with a line number. */
  const char *const edits[][2] = {
      {"simd.elementwise.launch = ", "simd.elementwise.launch = -"},
      {"scalar.elementwise.rate = ", "scalar.elementwise.rate = nan "},
      {"scalar.reduction.rate = ", "scalar.reduction.rate = 1 2 "},
      {"scalar.matmul.launch = ", "scalar.matmul.launch = inf #"},
      {"scalar.matvec.launch", "scalar.matvec.lunch"},
      {"scalar.matvec.launch", "warp0.matvec.launch"},
      {"scalar.matvec.launch", "scalar.gemm.launch"},
      {"scalar.matvec.launch =", "scalar.matvec.launch"},
      {"end\n", "end\nscalar.matmul.launch = 1\n"},
      {"scalar.elementwise.rate = 1048576",
       "scalar.elementwise.rate = 1048576 1 1\nscalar.elementwise.rate = "
       "1024"},
      {"scalar.elementwise.launch = ",
       "scalar.h2d = 1 1\nscalar.elementwise.launch = "},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; ++i) {
    char *bad = replace(text, edits[i][0], edits[i][1]);
    if (!bad) continue; /* e.g. no h2d line on a CPU-only machine */
    CHECK(!accepts(dir, bad, strlen(bad), note, sizeof note),
          "edit %zu ('%s') accepted", i, edits[i][1]);
    CHECK(rk_test_contains(note, "corrupt"), "edit %zu note: %s", i, note);
    free(bad);
  }
  /* Garbage: binary, NULs, an enormous line, an empty file. */
  char garbage[4096];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof garbage; ++i) {
    x = x * 1103515245u + 12345u;
    garbage[i] = (char)(x >> 16);
  }
  CHECK(!accepts(dir, garbage, sizeof garbage, note, sizeof note),
        "garbage accepted");
  CHECK(!accepts(dir, "", 0, note, sizeof note), "empty accepted");
  /* Not a regular file: a directory, a device that never ends. */
  const char *const odd[] = {dir, "/dev/zero"};
  for (size_t i = 0; i < 2; ++i) {
    rk_cost_model_t *om = open_quiet(odd[i]);
    if (!om) continue;
    CHECK_OK(rk_cost_model_info(om, &info));
    CHECK(!info.from_profile && rk_test_contains(info.note, "regular file"),
          "%s: note %s", odd[i], info.note);
    rk_cost_model_destroy(om);
  }
  char *nul = malloc(len + 1);
  if (nul) {
    memcpy(nul, text, len);
    nul[len / 2] = '\0'; /* the rest (and "end") is hidden behind it */
    CHECK(!accepts(dir, nul, len, note, sizeof note), "NUL accepted");
    free(nul);
  }
  size_t huge = 1 << 20;
  char *line = malloc(huge + 1);
  if (line) {
    memset(line, 'z', huge);
    line[huge] = '\0';
    CHECK(!accepts(dir, line, huge, note, sizeof note), "huge line accepted");
    free(line);
  }

  /* An edited value is used: a slow SIMD launch makes tiny ops scalar. */
  char *slow = replace(
      text, "simd.elementwise.launch = ", "simd.elementwise.launch = 1 #");
  if (slow) {
    char path[512];
    snprintf(path, sizeof path, "%s/slow.profile", dir);
    write_text(path, slow, strlen(slow));
    m = open_quiet(path);
    if (m) {
      rk_op_desc_t d = {.op = RK_OP_ADD, .n = 16, .result_on_host = true};
      rk_prediction_t p[RK__COST_MAX_TARGETS];
      size_t count = 0, best = 0;
      CHECK_OK(
          rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
      CHECK(count >= 2 && p[1].target.kind == RK_EXEC_SIMD &&
                near(p[1].launch_s, 1.0),
            "simd launch %g", count >= 2 ? p[1].launch_s : -1.0);
      CHECK(p[best].target.kind == RK_EXEC_SCALAR, "best is %s",
            rk_exec_kind_name(p[best].target.kind));
      rk_cost_model_destroy(m);
    }
    free(slow);
  }
  free(text);
}

static void test_env(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  setenv("RK_COST_SCALAR_ELEMENTWISE_LAUNCH", "0.25", 1);
  setenv("RK_COST_SCALAR_ELEMENTWISE_BANDWIDTH", "1000", 1);
  setenv("RK_COST_SCALAR_REDUCTION_FLOPS", "not-a-number", 1);
  rk_test_capture_begin();
  rk_cost_model_t *m = open_quiet(missing);
  char err[1024] = "";
  rk_test_capture_end(NULL, err, sizeof err);
  unsetenv("RK_COST_SCALAR_ELEMENTWISE_LAUNCH");
  unsetenv("RK_COST_SCALAR_ELEMENTWISE_BANDWIDTH");
  unsetenv("RK_COST_SCALAR_REDUCTION_FLOPS");
  if (!m) return;
  /* A quiet model prints nothing; the warning is in its info. */
  CHECK(err[0] == '\0', "a quiet model printed '%s'", err);
  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(m, &info));
  CHECK(rk_test_contains(info.env_note, "RK_COST_SCALAR_REDUCTION_FLOPS") &&
            rk_test_contains(info.env_note, "not-a-number"),
        "bad value not reported: '%s'", info.env_note);
  CHECK(info.env_overrides == 2, "overrides %zu", info.env_overrides);
  rk_op_desc_t d = {.op = RK_OP_SCALE, .n = 1000, .result_on_host = true};
  rk_prediction_t p[RK__COST_MAX_TARGETS];
  size_t count = 0, best = 0;
  CHECK_OK(
      rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
  CHECK(p[0].target.kind == RK_EXEC_SCALAR, "first candidate is scalar");
  CHECK(near(p[0].launch_s, 0.25), "launch %g", p[0].launch_s);
  /* 8000 bytes at 1000 B/s. */
  CHECK(near(p[0].compute_s, 8.0), "compute %g", p[0].compute_s);
  rk_cost_model_destroy(m);

  /* RK_COST_PROFILE names the file, for the model and for the path. */
  setenv("RK_COST_PROFILE", missing, 1);
  char path[1024];
  CHECK_OK(rk_cost_profile_path(path, sizeof path));
  CHECK(strcmp(path, missing) == 0, "path %s", path);
  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.quiet = true;
  CHECK_OK(rk_cost_model_open_with(&o, &m));
  CHECK_OK(rk_cost_model_info(m, &info));
  CHECK(strcmp(info.profile_path, missing) == 0, "model path %s",
        info.profile_path);
  rk_cost_model_destroy(m);
  CHECK_STATUS(rk_cost_profile_path(path, 4), RK_ERR_OUT_OF_RANGE);
  unsetenv("RK_COST_PROFILE");

  /* Default: under RK_CACHE_DIR, named by the fingerprint. */
  CHECK_OK(rk_cost_profile_path(path, sizeof path));
  CHECK(strncmp(path, getenv("RK_CACHE_DIR"), strlen(getenv("RK_CACHE_DIR"))) ==
                0 &&
            strstr(path, "/cost/") && strstr(path, ".profile"),
        "default path %s", path);
}

/* An RK_COST_ variable that means nothing here (a misspelling, a target
 * this machine lacks) is ignored, recorded in env_note naming it and the
 * known variables, and logged once per process with RK_LOG=warn (never
 * for a quiet model). */
static void test_unknown_env(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  setenv("RK_COST_FOO", "1", 1);
  setenv("RK_COST_SIMD_MATMUL_FLOP", "1e9", 1); /* FLOPS misspelt */
  setenv("RK_COST_NOSUCHGPU0_MATMUL_FLOPS", "1e9", 1);
  setenv("RK_COST_SIMD_MATMUL_FLOPS", "1e9", 1); /* known: applied */
  rk_cost_model_t *q = open_quiet(missing);
  if (q) {
    rk_cost_model_info_t info;
    CHECK_OK(rk_cost_model_info(q, &info));
    const char *note = info.env_note;
    CHECK(rk_test_contains(note, "RK_COST_FOO") &&
              rk_test_contains(note, "RK_COST_SIMD_MATMUL_FLOP,") &&
              rk_test_contains(note, "RK_COST_NOSUCHGPU0_MATMUL_FLOPS"),
          "unknown variables not named: '%s'", note);
    CHECK(!rk_test_contains(note, "RK_COST_SIMD_MATMUL_FLOPS,") &&
              !rk_test_contains(note, "RK_COST_SIMD_MATMUL_FLOPS:"),
          "a known variable called unknown: '%s'", note);
    CHECK(rk_test_contains(note, "RK_COST_PROFILE") &&
              rk_test_contains(note, "RK_COST_SOFTWARE") &&
              rk_test_contains(note, "{LAUNCH,FLOPS,BANDWIDTH}") &&
              rk_test_contains(note, "SCALAR") &&
              rk_test_contains(note, "ELEMENTWISE"),
          "the known variables are not named: '%s'", note);
    CHECK(info.env_overrides >= 1, "the known variable was not applied");
    rk_cost_model_destroy(q);
  }
  /* Not quiet: nothing printed; with RK_LOG=warn logged once however many
   * models open. */
  char err[8192] = "";
  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.profile_path = missing;
  rk_cost_model_t *z = NULL;
  rk_test_capture_begin();
  rk_status_t sz = rk_cost_model_open_with(&o, &z);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK_OK(sz);
  CHECK(err[0] == '\0', "rk_cost_model_open printed '%s'", err);
  rk_cost_model_destroy(z);
  setenv("RK_LOG", "warn", 1);
  rk_test_capture_begin();
  rk_cost_model_t *a = NULL, *b = NULL;
  rk_status_t sa = rk_cost_model_open_with(&o, &a);
  rk_status_t sb = rk_cost_model_open_with(&o, &b);
  rk_test_capture_end(NULL, err, sizeof err);
  unsetenv("RK_LOG");
  unsetenv("RK_COST_FOO");
  unsetenv("RK_COST_SIMD_MATMUL_FLOP");
  unsetenv("RK_COST_NOSUCHGPU0_MATMUL_FLOPS");
  unsetenv("RK_COST_SIMD_MATMUL_FLOPS");
  CHECK_OK(sa);
  CHECK_OK(sb);
  const char *first = strstr(err, "RK_COST_FOO");
  CHECK(first != NULL, "no warning about RK_COST_FOO: '%s'", err);
  CHECK(first && !strstr(first + 1, "RK_COST_FOO"), "warned twice: '%s'", err);
  rk_cost_model_destroy(a);
  rk_cost_model_destroy(b);
  /* Without unknown variables, nothing is recorded. */
  rk_cost_model_t *c = open_quiet(missing);
  if (c) {
    rk_cost_model_info_t info;
    CHECK_OK(rk_cost_model_info(c, &info));
    CHECK(info.env_note[0] == '\0', "note without variables: '%s'",
          info.env_note);
    rk_cost_model_destroy(c);
  }
}

/* The reasons a profile is stale name what differs: the profile's
 * fingerprint beside this machine's, a version too large for an int as
 * written. */
static void test_stale_messages(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  rk_cost_model_t *m = open_quiet(missing);
  if (!m) return;
  char *text = NULL;
  rk_cost_model_info_t info;
  CHECK_OK(rk_cost_model_info(m, &info));
  char mine[33];
  snprintf(mine, sizeof mine, "%s", info.fingerprint);
  CHECK_OK(rk_cost_model_format(m, &text));
  rk_cost_model_destroy(m);
  if (!text) return;
  char from[64], to[80];
  snprintf(from, sizeof from, "fingerprint %s", mine);
  /* This machine's fingerprint with one more digit: another machine's. */
  snprintf(to, sizeof to, "fingerprint %s7", mine);
  char *longer = replace(text, from, to);
  char note[1700];
  if (CHECK(longer != NULL, "no fingerprint line")) {
    CHECK(!accepts(dir, longer, strlen(longer), note, sizeof note),
          "a longer fingerprint accepted");
    /* "... (fingerprint 'X', this machine's Y)": X and Y must differ. */
    const char *x = strstr(note, "fingerprint '");
    const char *y = strstr(note, "this machine's ");
    if (CHECK(x && y, "note: %s", note)) {
      x += strlen("fingerprint '");
      y += strlen("this machine's ");
      size_t xn = strcspn(x, "'"), yn = strcspn(y, ")");
      CHECK(xn != yn || strncmp(x, y, xn) != 0,
            "the two fingerprints are the same: %s", note);
      CHECK(xn == 33 && strncmp(x, mine, 32) == 0 && x[32] == '7',
            "the profile's fingerprint is not shown whole: %s", note);
      CHECK(yn == 32 && strncmp(y, mine, 32) == 0, "this machine's: %s", note);
    }
    free(longer);
  }
  /* The same digits in capitals are the same fingerprint. */
  for (char *p = to + 12; *p; ++p)
    if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
  to[12 + 32] = '\0';
  char *upper = replace(text, from, to);
  if (upper) {
    CHECK(accepts(dir, upper, strlen(upper), note, sizeof note),
          "capital hex digits refused: %s", note);
    free(upper);
  }
  /* Versions: one too large for any integer type, and leading zeros. */
  char *huge = replace(text, "rk-cost-profile 1",
                       "rk-cost-profile 99999999999999999999");
  if (CHECK(huge != NULL, "no version line")) {
    CHECK(!accepts(dir, huge, strlen(huge), note, sizeof note),
          "huge version accepted");
    CHECK(rk_test_contains(note, "stale: format version 99999999999999999999,"),
          "note: %s", note);
    /* Not read into an integer that overflowed (the note's path is a
     * temporary directory's, which may itself contain "-1"). */
    CHECK(!rk_test_contains(note, "version -1"), "note: %s", note);
    free(huge);
  }
  char *neg = replace(text, "rk-cost-profile 1", "rk-cost-profile -1");
  if (neg) {
    CHECK(!accepts(dir, neg, strlen(neg), note, sizeof note), "-1 accepted");
    CHECK(rk_test_contains(note, "corrupt"), "note: %s", note);
    free(neg);
  }
  char *zeros = replace(text, "rk-cost-profile 1", "rk-cost-profile 0001");
  if (zeros) {
    CHECK(accepts(dir, zeros, strlen(zeros), note, sizeof note),
          "0001 refused: %s", note);
    free(zeros);
  }
  free(text);
}

/* The library prints nothing: a model on default rates says so in its
 * info. RK_LOG=warn logs the note, once per process. */
static void test_warning_once(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  setenv("RK_COST_PROFILE", missing, 1);
  unsetenv("RK_LOG");
  char err[2048] = "";
  rk_test_capture_begin();
  rk_cost_model_t *a = NULL;
  rk_status_t sa = rk_cost_model_open(&a);
  rk_test_capture_end(NULL, err, sizeof err);
  CHECK_OK(sa);
  CHECK(err[0] == '\0', "rk_cost_model_open printed '%s'", err);
  if (a) {
    rk_cost_model_info_t info;
    CHECK_OK(rk_cost_model_info(a, &info));
    CHECK(!info.from_profile && rk_test_contains(info.note, "no profile"),
          "note: '%s'", info.note);
  }

  setenv("RK_LOG", "warn", 1);
  rk_cost_model_t *b = NULL, *c = NULL;
  rk_test_capture_begin();
  rk_status_t sb = rk_cost_model_open(&b);
  rk_status_t sc = rk_cost_model_open(&c);
  rk_test_capture_end(NULL, err, sizeof err);
  unsetenv("RK_LOG");
  unsetenv("RK_COST_PROFILE");
  CHECK_OK(sb);
  CHECK_OK(sc);
  const char *first = strstr(err, "warning");
  CHECK(first != NULL, "RK_LOG=warn: no warning: '%s'", err);
  CHECK(first && !strstr(first + 1, "warning"), "logged twice: '%s'", err);
  CHECK(rk_test_contains(err, "rk calibrate"), "warning: '%s'", err);
  rk_cost_model_destroy(a);
  rk_cost_model_destroy(b);
  rk_cost_model_destroy(c);
}

static void test_interpolation(void) {
  rk__cost_curve_t c;
  memset(&c, 0, sizeof c);
  c.count = 2;
  c.points[0] = (rk__cost_point_t){1000, 1e9, 1e10};
  c.points[1] = (rk__cost_point_t){100000, 1e11, 1e8};
  double f, b;
  rk__cost_curve_rates(&c, 10000, &f, &b); /* halfway in log size */
  CHECK(near(f, 1e10) && near(b, 1e9), "mid %g %g", f, b);
  rk__cost_curve_rates(&c, 10, &f, &b);
  CHECK(f == 1e9 && b == 1e10, "below %g %g", f, b);
  rk__cost_curve_rates(&c, 1e12, &f, &b);
  CHECK(f == 1e11 && b == 1e8, "above %g %g", f, b);
}

/* A synthetic GPU candidate: the transfer and read-back terms. */
static void test_gpu_terms(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  rk_cost_model_t *m = open_quiet(missing);
  if (!m) return;
  rk__machine_t *mach = &m->machine;
  /* Keep only CPU targets, then add "cuda0". */
  size_t cpu = 0;
  for (size_t i = 0; i < mach->ntargets; ++i)
    if (mach->targets[i].target.kind != RK_EXEC_GPU)
      mach->targets[cpu++] = mach->targets[i];
  mach->ntargets = cpu + 1;
  rk__cost_target_t *g = &mach->targets[cpu];
  memset(g, 0, sizeof *g);
  snprintf(g->key, sizeof g->key, "cuda0");
  g->target.kind = RK_EXEC_GPU;
  g->target.backend = RK_BACKEND_CUDA;
  g->candidate = true;
  rk__cost_target_defaults(g);
  g->h2d = (rk__cost_link_t){1e-5, 1e10};
  g->d2h = (rk__cost_link_t){2e-5, 5e9};
  for (int c = 0; c < RK__CLASS_COUNT; ++c) {
    g->curves[c].launch_s = 3e-6;
    g->curves[c].count = 1;
    g->curves[c].points[0] = (rk__cost_point_t){1 << 20, 1e12, 1e11};
  }
  rk_prediction_t p[RK__COST_MAX_TARGETS];
  size_t count = 0, best = 0;
  rk_op_desc_t d = {.op = RK_OP_ADD, .n = 1 << 24, .result_on_host = true};
  CHECK_OK(
      rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
  if (!CHECK(count == cpu + 1, "count %zu", count)) goto done;
  rk_prediction_t *gp = &p[cpu];
  double n = (double)(1 << 24);
  CHECK(gp->target.kind == RK_EXEC_GPU, "last is the GPU");
  CHECK(near(gp->transfer_s, 1e-5 + 8 * n / 1e10), "h2d %g", gp->transfer_s);
  CHECK(near(gp->readback_s, 2e-5 + 4 * n / 5e9), "d2h %g", gp->readback_s);
  CHECK(near(gp->compute_s, 12 * n / 1e11), "compute %g", gp->compute_s);
  CHECK(near(gp->launch_s, 3e-6), "launch %g", gp->launch_s);
  CHECK(near(gp->total_s,
             gp->launch_s + gp->transfer_s + gp->compute_s + gp->readback_s),
        "total is the sum");
  CHECK(p[0].transfer_s == 0 && p[0].readback_s == 0, "scalar has no copies");
  for (size_t i = 0; i < count; ++i)
    CHECK(p[best].total_s <= p[i].total_s, "best is not the minimum");

  /* Inputs on the device: no upload for the GPU; the CPU must download. */
  d.inputs = RK_RESIDENT_DEVICE;
  CHECK_OK(
      rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
  CHECK(p[cpu].transfer_s == 0, "resident GPU upload %g", p[cpu].transfer_s);
  CHECK(near(p[0].transfer_s, 2e-5 + 8 * n / 5e9), "cpu download %g",
        p[0].transfer_s);
  CHECK(p[best].target.kind == RK_EXEC_GPU, "resident data stays on GPU");
  /* ... and when the result stays there too, the CPU puts it back. */
  d.result_on_host = false;
  CHECK_OK(
      rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
  CHECK(p[cpu].readback_s == 0, "no read-back wanted");
  CHECK(near(p[0].readback_s, 1e-5 + 4 * n / 1e10), "cpu upload %g",
        p[0].readback_s);
  /* A tiny op stays on the CPU: the GPU's fixed costs dominate. */
  d = (rk_op_desc_t){.op = RK_OP_ADD, .n = 16, .result_on_host = true};
  CHECK_OK(
      rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
  CHECK(p[best].target.kind != RK_EXEC_GPU, "tiny op on the GPU");
  /* Capacity 1 keeps the first candidate only. */
  CHECK_OK(rk_cost_model_predict(m, &d, p, 1, &count, &best));
  CHECK(count == 1 && best == 0, "capacity 1: %zu %zu", count, best);
  /* Argument errors. */
  CHECK_STATUS(rk_cost_model_predict(m, &d, p, 0, &count, &best),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_cost_model_predict(NULL, &d, p, 4, &count, &best),
               RK_ERR_INVALID_ARGUMENT);
  d.op = RK_OP_COUNT_;
  CHECK_STATUS(rk_cost_model_predict(m, &d, p, 4, &count, &best),
               RK_ERR_INVALID_ARGUMENT);
  d.op = RK_OP_ADD;
  d.inputs = (rk_residency_t)5;
  CHECK_STATUS(rk_cost_model_predict(m, &d, p, 4, &count, &best),
               RK_ERR_INVALID_ARGUMENT);
done:
  rk_cost_model_destroy(m);
}

/* n = 0, and sizes whose byte counts saturate, still predict finitely. */
static void test_extremes(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none.profile", dir);
  rk_cost_model_t *m = open_quiet(missing);
  if (!m) return;
  rk_prediction_t p[RK__COST_MAX_TARGETS];
  size_t count = 0, best = 0;
  for (int op = 0; op < RK_OP_COUNT_; ++op) {
    rk_op_desc_t d = {.op = (rk_op_t)op, .result_on_host = true};
    CHECK_OK(
        rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
    /* Nothing to compute; a reduction still stores its one result. */
    CHECK(p[best].compute_s < 1e-6, "%s n=0 compute %g", rk_op_name(d.op),
          p[best].compute_s);
    d.m = d.n = d.k = UINT64_MAX;
    CHECK_OK(
        rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
    CHECK(isfinite(p[best].total_s) && p[best].total_s > 0, "%s huge: %g",
          rk_op_name(d.op), p[best].total_s);
  }
  rk_cost_model_destroy(m);
}

/* Per-op curves (`<target>.op.<op>.*`): an op with its own curve is
 * predicted from it, others from their class; a class override replaces the
 * op curves of its class; op lines are checked like class lines. */
static void test_op_curves(const char *dir) {
  char missing[512];
  snprintf(missing, sizeof missing, "%s/none2.profile", dir);
  rk_cost_model_t *m = open_quiet(missing);
  if (!m) return;
  char *text = NULL;
  if (!CHECK_OK(rk_cost_model_format(m, &text))) return;
  rk_cost_model_destroy(m);
  CHECK(!rk_test_contains(text, "\nscalar.op.") &&
            !rk_test_contains(text, "\nsimd.op."),
        "defaults have no op curves");
  /* scale gets a slow SIMD curve of its own: 1 ms launch. */
  char *with =
      replace(text, "end\n",
              "simd.op.scale.launch = 1e-3\nsimd.op.scale.rate = 1024 1e9 "
              "1e10\nend\n");
  if (!CHECK(with != NULL, "no end line")) return;
  char path[512];
  snprintf(path, sizeof path, "%s/ops.profile", dir);
  write_text(path, with, strlen(with));
  m = open_quiet(path);
  if (m) {
    rk_prediction_t p[RK__COST_MAX_TARGETS];
    size_t count = 0, best = 0;
    rk_op_desc_t d = {.op = RK_OP_SCALE, .n = 64, .result_on_host = true};
    CHECK_OK(
        rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
    CHECK(count >= 2 && near(p[1].launch_s, 1e-3),
          "scale uses its own curve (launch %g)",
          count >= 2 ? p[1].launch_s : -1.0);
    /* Negative control: add, same class, keeps the class curve. */
    d.op = RK_OP_ADD;
    CHECK_OK(
        rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
    CHECK(count >= 2 && p[1].launch_s < 1e-4, "add keeps its class (%g)",
          count >= 2 ? p[1].launch_s : -1.0);
    /* It reads back through the model's own formatter. */
    char *again = NULL;
    if (CHECK_OK(rk_cost_model_format(m, &again)))
      CHECK(rk_test_contains(again, "simd.op.scale.launch = 0.001"),
            "op curve written back");
    free(again);
    rk_cost_model_destroy(m);
  }
  /* A class override replaces the op curves of that class. */
  setenv("RK_COST_PROFILE", path, 1);
  setenv("RK_COST_SIMD_ELEMENTWISE_LAUNCH", "2e-3", 1);
  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.quiet = true;
  if (CHECK_OK(rk_cost_model_open_with(&o, &m))) {
    rk_prediction_t p[RK__COST_MAX_TARGETS];
    size_t count = 0, best = 0;
    rk_op_desc_t d = {.op = RK_OP_SCALE, .n = 64, .result_on_host = true};
    CHECK_OK(
        rk_cost_model_predict(m, &d, p, RK__COST_MAX_TARGETS, &count, &best));
    CHECK(count >= 2 && near(p[1].launch_s, 2e-3),
          "the override wins over scale's own curve (%g)",
          count >= 2 ? p[1].launch_s : -1.0);
    rk_cost_model_destroy(m);
  }
  unsetenv("RK_COST_SIMD_ELEMENTWISE_LAUNCH");
  unsetenv("RK_COST_PROFILE");
  /* Corrupt op lines. */
  const char *const edits[][2] = {
      {"simd.op.scale.rate = 1024 1e9 1e10\n", ""}, /* launch, no rates */
      {"simd.op.scale.launch", "simd.op.scal.launch"},
      {"simd.op.scale.launch", "simd.op.matmul.launch"},
      {"simd.op.scale.rate = 1024", "simd.op.scale.rate = -1"},
  };
  char note[1700];
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; ++i) {
    char *bad = replace(with, edits[i][0], edits[i][1]);
    if (!CHECK(bad != NULL, "edit %zu applies", i)) continue;
    CHECK(!accepts(dir, bad, strlen(bad), note, sizeof note),
          "op edit %zu accepted", i);
    CHECK(rk_test_contains(note, "corrupt"), "op edit %zu note: %s", i, note);
    free(bad);
  }
  free(with);
  free(text);
}

int main(void) {
  rk_test_use_temp_cache();
  unsetenv("RK_COST_PROFILE");
  unsetenv("RK_COST_SOFTWARE");
  const char *dir = rk_test_temp_dir();
  test_ops();
  test_interpolation();
  test_profiles(dir);
  test_op_curves(dir);
  test_env(dir);
  test_gpu_terms(dir);
  test_extremes(dir);
  test_stale_messages(dir);
  test_warning_once(dir); /* before any other model that warns */
  test_unknown_env(dir);
  return rk_test_finish("cost_model");
}
