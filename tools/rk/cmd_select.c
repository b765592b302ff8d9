/* cmd_select.c - `rk select OP SIZES`: what the calibrated cost model
 * predicts for every candidate, term by term, which one it picks, and what
 * the compatibility selector would pick.
 *
 *   rk select add 1000000
 *   rk select matmul 512x512x512 --resident device --json
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "rk/select.h"
#include "tool.h"

enum { kMaxCandidates = 16 };

static void help(FILE *out) {
  fputs(
      "Usage: rk select OP SIZES [--resident host|device] [--result "
      "host|device]\n"
      "                 [--profile FILE] [--software] [--json]\n"
      "\n"
      "Shows where rk would run one operation: the calibrated cost model's\n"
      "predicted time for every candidate (scalar, SIMD, each GPU device),\n"
      "split into launch, transfer, compute and read-back, the candidate it\n"
      "chooses, and what the compatibility selector would choose.\n"
      "\n"
      "OP: add sub mul scale axpy fma dot sum min max relu sigmoid exp tanh "
      "log\n"
      "    matvec matmul\n"
      "SIZES: element-wise ops and reductions take n ('1000000' or\n"
      "    'n=1000000'); matvec takes m,n (an m x n matrix; one number is\n"
      "    square); matmul takes m,n,k ((m x k) times (k x n)), written\n"
      "    '512,512,512', '512x512x512' or 'm=512,n=256,k=64'; one number\n"
      "    is a cube.\n"
      "\n"
      "Options:\n"
      "  --resident host|device  where the inputs are (default host)\n"
      "  --result host|device    where the caller wants the result (default\n"
      "                          host)\n"
      "  --profile FILE          read this profile instead of this machine's\n"
      "  --software              count emulated GPU devices (PoCL's CPU\n"
      "                          device, lavapipe) as candidates\n"
      "  --json                  one JSON object instead of text\n"
      "\n"
      "Example:\n"
      "  rk select axpy n=4096\n"
      "  rk select matmul 1024x1024x1024 --resident device\n"
      "\n"
      "Without a profile (run 'rk calibrate') the model uses default rates\n"
      "and says so.\n"
      "\n"
      "Exit status: 0 success, 1 failure, 2 usage error.\n",
      out);
}

/* A whole decimal number. */
static bool parse_u64(const char *s, size_t len, uint64_t *out) {
  if (len == 0 || len > 20) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

/* Fills d->m, n, k from "SIZES" (parts separated by ',' or 'x', each
 * "VALUE" or "NAME=VALUE"). Returns false with a message in why. */
static bool parse_sizes(const char *text, rk_op_desc_t *d, char *why,
                        size_t cap) {
  uint64_t pos[3];
  int npos = 0;
  bool named[3] = {false, false, false};
  uint64_t named_v[3] = {0, 0, 0};
  const char *p = text;
  if (!*p) {
    snprintf(why, cap, "empty SIZES");
    return false;
  }
  while (*p) {
    size_t len = strcspn(p, ",x");
    const char *eq = memchr(p, '=', len);
    if (eq) {
      size_t nlen = (size_t)(eq - p);
      int idx = nlen == 1 && p[0] == 'm'   ? 0
                : nlen == 1 && p[0] == 'n' ? 1
                : nlen == 1 && p[0] == 'k' ? 2
                                           : -1;
      uint64_t v;
      if (idx < 0) {
        snprintf(why, cap, "unknown size '%.*s' (m, n or k)", (int)nlen, p);
        return false;
      }
      if (!parse_u64(eq + 1, len - nlen - 1, &v)) {
        snprintf(why, cap, "'%.*s' is not a whole number", (int)len, p);
        return false;
      }
      named[idx] = true;
      named_v[idx] = v;
    } else {
      uint64_t v;
      if (!parse_u64(p, len, &v)) {
        snprintf(why, cap, "'%.*s' is not a whole number", (int)len, p);
        return false;
      }
      if (npos == 3) {
        snprintf(why, cap, "more than three sizes");
        return false;
      }
      pos[npos++] = v;
    }
    p += len;
    if (*p) {
      ++p;
      if (!*p) {
        snprintf(why, cap, "SIZES ends with a separator");
        return false;
      }
    }
  }
  if (npos > 0 && (named[0] || named[1] || named[2])) {
    snprintf(why, cap, "mix of named (n=...) and plain sizes");
    return false;
  }
  d->m = d->n = d->k = 0;
  switch (d->op) {
    case RK_OP_MATMUL:
      if (npos == 1) {
        d->m = d->n = d->k = pos[0];
      } else if (npos == 3) {
        d->m = pos[0];
        d->n = pos[1];
        d->k = pos[2];
      } else if (npos == 0 && named[0] && named[1] && named[2]) {
        d->m = named_v[0];
        d->n = named_v[1];
        d->k = named_v[2];
      } else {
        snprintf(why, cap, "matmul takes m,n,k (or one number for a cube)");
        return false;
      }
      return true;
    case RK_OP_MATVEC:
      if (npos == 1) {
        d->m = d->n = pos[0];
      } else if (npos == 2) {
        d->m = pos[0];
        d->n = pos[1];
      } else if (npos == 0 && named[0] && named[1] && !named[2]) {
        d->m = named_v[0];
        d->n = named_v[1];
      } else {
        snprintf(why, cap, "matvec takes m,n (or one number for a square)");
        return false;
      }
      return true;
    default:
      if (npos == 1) {
        d->n = pos[0];
      } else if (npos == 0 && named[1] && !named[0] && !named[2]) {
        d->n = named_v[1];
      } else {
        snprintf(why, cap, "%s takes one size, n", rk_op_name(d->op));
        return false;
      }
      return true;
  }
}

static void target_text(char *out, size_t cap, const rk_exec_target_t *t) {
  switch (t->kind) {
    case RK_EXEC_SIMD:
      snprintf(out, cap, "simd (%s)", rk_isa_name(t->isa));
      break;
    case RK_EXEC_GPU:
      snprintf(out, cap, "gpu %s:%d", rk_backend_kind_name(t->backend),
               t->device);
      break;
    default:
      snprintf(out, cap, "%s", rk_exec_kind_name(t->kind));
  }
}

/* The target the compat answer maps to here (as the ops library runs it). */
static const char *compat_runs_on(rk_compat_choice_t c,
                                  const rk_prediction_t *p, size_t count) {
  rk_exec_kind_t want = c == RK_COMPAT_GPU    ? RK_EXEC_GPU
                        : c == RK_COMPAT_SIMD ? RK_EXEC_SIMD
                                              : RK_EXEC_SCALAR;
  for (size_t i = 0; i < count; ++i)
    if (p[i].target.kind == want) return NULL; /* present */
  return c == RK_COMPAT_GPU ? "no GPU candidate here: the ops library runs "
                              "it on SIMD"
                            : "no SIMD here: the ops library runs it scalar";
}

static void print_json(const rk_op_desc_t *d, const rk_cost_model_info_t *info,
                       const rk_prediction_t *p, size_t count, size_t best,
                       rk_compat_choice_t compat, const char *compat_note) {
  char name[64];
  printf("{\"op\":\"%s\",\"m\":%" PRIu64 ",\"n\":%" PRIu64 ",\"k\":%" PRIu64
         ",\"bytes\":%" PRIu64 ",\"flops\":%" PRIu64
         ",\"inputs\":\"%s\",\"result\":\"%s\",",
         rk_op_name(d->op), d->m, d->n, d->k, rk_op_bytes(d), rk_op_flops(d),
         d->inputs == RK_RESIDENT_DEVICE ? "device" : "host",
         d->result_on_host ? "host" : "device");
  printf("\"profile\":{\"path\":");
  tool_json_string(stdout, info->profile_path);
  printf(",\"measured\":%s,\"note\":", info->from_profile ? "true" : "false");
  tool_json_string(stdout, info->note);
  printf(",\"env_overrides\":%zu,\"env_note\":", info->env_overrides);
  tool_json_string(stdout, info->env_note);
  printf("},\"candidates\":[");
  for (size_t i = 0; i < count; ++i) {
    target_text(name, sizeof name, &p[i].target);
    printf("%s{\"target\":", i ? "," : "");
    tool_json_string(stdout, name);
    printf(",\"kind\":\"%s\",\"measured\":%s",
           rk_exec_kind_name(p[i].target.kind),
           p[i].measured ? "true" : "false");
    if (p[i].target.kind == RK_EXEC_SIMD)
      printf(",\"isa\":\"%s\"", rk_isa_name(p[i].target.isa));
    if (p[i].target.kind == RK_EXEC_GPU)
      printf(",\"backend\":\"%s\",\"device\":%d",
             rk_backend_kind_name(p[i].target.backend), p[i].target.device);
    /* Non-finite times (overflow) are null. */
    const struct {
      const char *key;
      double v;
    } terms[] = {{"total_s", p[i].total_s},
                 {"launch_s", p[i].launch_s},
                 {"transfer_s", p[i].transfer_s},
                 {"compute_s", p[i].compute_s},
                 {"readback_s", p[i].readback_s}};
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; ++t) {
      printf(",\"%s\":", terms[t].key);
      tool_json_number(stdout, terms[t].v);
    }
    printf("}");
  }
  target_text(name, sizeof name, &p[best].target);
  printf("],\"choice\":");
  tool_json_string(stdout, name);
  printf(",\"compat\":{\"choice\":\"%s\",\"note\":",
         rk_compat_choice_name(compat));
  tool_json_string(stdout, compat_note ? compat_note : "");
  printf("}}\n");
}

static void print_text(const rk_op_desc_t *d, const rk_cost_model_info_t *info,
                       const rk_prediction_t *p, size_t count, size_t best,
                       rk_compat_choice_t compat, const char *compat_note) {
  printf("operation   %s", rk_op_name(d->op));
  if (d->op == RK_OP_MATMUL)
    printf(" m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64, d->m, d->n, d->k);
  else if (d->op == RK_OP_MATVEC)
    printf(" m=%" PRIu64 " n=%" PRIu64, d->m, d->n);
  else
    printf(" n=%" PRIu64, d->n);
  printf(" (inputs on the %s, result wanted on the %s)\n",
         d->inputs == RK_RESIDENT_DEVICE ? "device" : "host",
         d->result_on_host ? "host" : "device");
  printf("work        %" PRIu64 " bytes, %" PRIu64 " flops\n", rk_op_bytes(d),
         rk_op_flops(d));
  if (info->from_profile)
    printf("profile     %s\n", info->profile_path);
  else
    printf("profile     none: default rates (%s)\n", info->note);
  if (info->env_overrides)
    printf("            %zu value%s from RK_COST_* variables\n",
           info->env_overrides, info->env_overrides == 1 ? "" : "s");
  printf("\n%-18s %11s %11s %11s %11s %11s  %s\n", "candidate", "total",
         "launch", "transfer", "compute", "read-back", "rates");
  char name[64], t[5][32];
  for (size_t i = 0; i < count; ++i) {
    target_text(name, sizeof name, &p[i].target);
    tool_time_text(t[0], sizeof t[0], p[i].total_s);
    tool_time_text(t[1], sizeof t[1], p[i].launch_s);
    tool_time_text(t[2], sizeof t[2], p[i].transfer_s);
    tool_time_text(t[3], sizeof t[3], p[i].compute_s);
    tool_time_text(t[4], sizeof t[4], p[i].readback_s);
    printf("%-18s %11s %11s %11s %11s %11s  %s%s\n", name, t[0], t[1], t[2],
           t[3], t[4], p[i].measured ? "measured" : "default",
           i != best       ? ""
           : p[i].measured ? "  <- chosen"
                           : "   <- chosen");
  }
  for (size_t i = 0; i < count; ++i)
    if (!p[i].measured) {
      printf(
          "(default: rk's guess for this kind of device, not a measurement; "
          "run 'rk calibrate')\n");
      break;
    }
  target_text(name, sizeof name, &p[best].target);
  printf("\nchoice: %s", name);
  /* How much the choice saves over the runner-up. */
  double chosen = p[best].total_s, second = INFINITY;
  for (size_t i = 0; i < count; ++i)
    if (i != best && p[i].total_s < second) second = p[i].total_s;
  if (!isfinite(chosen))
    printf(
        " (every candidate's predicted time overflows: the first is "
        "chosen)");
  else if (count > 1 && !isfinite(second))
    printf(" (the other candidates' predicted times overflow)");
  else if (count > 1 && chosen > 0 && isfinite(second / chosen))
    printf(" (%.2fx faster than the next candidate)", second / chosen);
  printf("\ncompat selector: %s", rk_compat_choice_name(compat));
  if (compat_note) printf(" (%s)", compat_note);
  printf("\n");
}

/* 0 host, 1 device, -1 neither (or missing). */
static int place(const char *v) {
  if (v && strcmp(v, "host") == 0) return 0;
  if (v && strcmp(v, "device") == 0) return 1;
  return -1;
}

static int run(int argc, char **argv) {
  const char *op_name = NULL, *sizes = NULL, *profile = NULL;
  bool json = false, software = false;
  rk_op_desc_t d;
  memset(&d, 0, sizeof d);
  d.result_on_host = true;
  for (int i = 1; i < argc; ++i) {
    const char *v = NULL;
    if (tool_is_help(argv[i])) {
      help(stdout);
      return TOOL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--software") == 0) {
      software = true;
    } else if (tool_match_option(argc, argv, &i, "--resident", &v)) {
      int where = place(v);
      if (where < 0)
        return tool_usage_error("select",
                                "--resident needs host or device%s%s%s",
                                v ? ", not '" : "", v ? v : "", v ? "'" : "");
      d.inputs = where ? RK_RESIDENT_DEVICE : RK_RESIDENT_HOST;
    } else if (tool_match_option(argc, argv, &i, "--result", &v)) {
      int where = place(v);
      if (where < 0)
        return tool_usage_error("select", "--result needs host or device%s%s%s",
                                v ? ", not '" : "", v ? v : "", v ? "'" : "");
      d.result_on_host = where == 0;
    } else if (tool_match_option(argc, argv, &i, "--profile", &v)) {
      if (!v) return tool_usage_error("select", "--profile needs a file name");
      profile = v;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return tool_usage_error("select", "unknown option '%s'", argv[i]);
    } else if (!op_name) {
      op_name = argv[i];
    } else if (!sizes) {
      sizes = argv[i];
    } else {
      return tool_usage_error("select", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!op_name) return tool_usage_error("select", "no OP");
  if (rk_op_from_name(op_name, &d.op) != RK_OK)
    return tool_usage_error("select", "%s", rk_last_error());
  if (!sizes) return tool_usage_error("select", "no SIZES for %s", op_name);
  char why[160];
  if (!parse_sizes(sizes, &d, why, sizeof why))
    return tool_usage_error("select", "SIZES '%s': %s", sizes, why);

  rk_cost_model_options_t o;
  rk_cost_model_options_init(&o);
  o.profile_path = profile;
  o.include_software = software;
  o.quiet = true; /* the output says where the rates come from */
  rk_cost_model_t *model = NULL;
  if (rk_cost_model_open_with(&o, &model) != RK_OK) {
    fprintf(stderr, "rk select: %s\n", rk_last_error());
    return TOOL_EXIT_FAILURE;
  }
  rk_cost_model_info_t info;
  rk_prediction_t p[kMaxCandidates];
  size_t count = 0, best = 0;
  if (rk_cost_model_info(model, &info) != RK_OK ||
      rk_cost_model_predict(model, &d, p, kMaxCandidates, &count, &best) !=
          RK_OK ||
      count == 0) {
    fprintf(stderr, "rk select: %s\n",
            count == 0 ? "no candidates" : rk_last_error());
    rk_cost_model_destroy(model);
    return TOOL_EXIT_FAILURE;
  }
  /* The model was opened quiet: its warnings are shown here, once. */
  if (info.env_note[0])
    fprintf(stderr, "rk select: warning: %s\n", info.env_note);
  rk_compat_selector_t compat;
  rk_compat_init(&compat);
  rk_compat_choice_t c = rk_compat_select_for_op(&compat, &d);
  const char *note = compat_runs_on(c, p, count);
  if (json)
    print_json(&d, &info, p, count, best, c, note);
  else
    print_text(&d, &info, p, count, best, c, note);
  rk_cost_model_destroy(model);
  return TOOL_EXIT_OK;
}

const tool_command_t tool_cmd_select = {
    "select", "show where an operation would run, and why", run, help};
