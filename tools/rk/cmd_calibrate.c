/* cmd_calibrate.c - `rk calibrate`: measures this machine for the cost
 * model and writes its profile (see rk_cost_calibrate in rk/select.h).
 *
 *   rk calibrate              # under a minute; progress on stderr
 *   rk calibrate --quick      # about 10 s
 *   rk calibrate --output my.profile --json
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rk/rk.h"
#include "rk/select.h"
#include "tool.h"

enum { kMaxCandidates = 16 };

static void help(FILE *out) {
  fputs(
      "Usage: rk calibrate [--quick | --thorough] [--output FILE] "
      "[--software]\n"
      "                    [--json]\n"
      "\n"
      "Measures this machine for rk's cost model: every candidate (scalar\n"
      "code, SIMD with the best instruction set, each GPU device) runs each\n"
      "class of operation (element-wise, reduction, transcendental, matvec,\n"
      "matmul) at several sizes, plus the launch latency, thread scaling,\n"
      "and for GPUs the host<->device latency and bandwidth. The rates go\n"
      "to a text profile that the calibrated cost model (the ops library's\n"
      "default policy) and 'rk select' read. Progress goes to stderr.\n"
      "\n"
      "The profile is written atomically to <cache>/cost/<fingerprint>."
      "profile,\n"
      "where <cache> is $RK_CACHE_DIR, else $XDG_CACHE_HOME/rk, else\n"
      "~/.cache/rk, and the fingerprint names this CPU, its core count, its\n"
      "ISA and the GPU devices; $RK_COST_PROFILE names another file.\n"
      "\n"
      "Options:\n"
      "  --quick        fewer sizes and repetitions (about 10 s)\n"
      "  --thorough     more sizes (up to 2^26 elements) and repetitions\n"
      "  --output FILE  write the profile to FILE instead (a symbolic link\n"
      "                 is followed and kept; a dangling link, directory,\n"
      "                 FIFO or device is refused before measuring)\n"
      "  --software     also measure emulated GPU devices (PoCL's CPU\n"
      "                 device, lavapipe) and make them candidates\n"
      "  --json         print the summary as one JSON object\n"
      "\n"
      "Example:\n"
      "  rk calibrate --quick && rk select matmul 512x512x512\n"
      "\n"
      "Exit status: 0 success, 1 failure, 2 usage error.\n",
      out);
}

typedef struct progress_state {
  bool tty;
  char last[64]; /* the candidate and class last reported (not a tty) */
} progress_state_t;

static void on_progress(void *user, double fraction, const char *what) {
  progress_state_t *st = user;
  if (st->tty) {
    fprintf(stderr, "\r\033[K[%3.0f%%] %s", fraction * 100.0, what);
    if (strcmp(what, "done") == 0) fputc('\n', stderr);
    fflush(stderr);
    return;
  }
  /* A log: one line per candidate and op class. */
  size_t key = strcspn(what, ":");
  if (strlen(st->last) == key && strncmp(st->last, what, key) == 0) return;
  snprintf(st->last, sizeof st->last, "%.*s", (int)key, what);
  fprintf(stderr, "rk calibrate: [%3.0f%%] %s\n", fraction * 100.0, what);
}

/* Representative operations for the summary. */
static const struct {
  rk_op_t op;
  uint64_t m, n, k;
} kSummary[] = {
    {RK_OP_ADD, 0, 1000, 0},          {RK_OP_ADD, 0, 1000000, 0},
    {RK_OP_DOT, 0, 1000000, 0},       {RK_OP_EXP, 0, 1000000, 0},
    {RK_OP_MATVEC, 1024, 1024, 0},    {RK_OP_MATMUL, 64, 64, 64},
    {RK_OP_MATMUL, 1024, 1024, 1024},
};
enum { kSummaryCount = sizeof kSummary / sizeof kSummary[0] };

static void target_text(char *out, size_t cap, const rk_exec_target_t *t) {
  if (t->kind == RK_EXEC_SIMD)
    snprintf(out, cap, "simd (%s)", rk_isa_name(t->isa));
  else if (t->kind == RK_EXEC_GPU)
    snprintf(out, cap, "gpu %s:%d", rk_backend_kind_name(t->backend),
             t->device);
  else
    snprintf(out, cap, "%s", rk_exec_kind_name(t->kind));
}

static void size_text(char *out, size_t cap, rk_op_t op, uint64_t m, uint64_t n,
                      uint64_t k) {
  if (op == RK_OP_MATMUL)
    snprintf(out, cap, "%s %llux%llux%llu", rk_op_name(op),
             (unsigned long long)m, (unsigned long long)n,
             (unsigned long long)k);
  else if (op == RK_OP_MATVEC)
    snprintf(out, cap, "%s %llux%llu", rk_op_name(op), (unsigned long long)m,
             (unsigned long long)n);
  else
    snprintf(out, cap, "%s n=%llu", rk_op_name(op), (unsigned long long)n);
}

static int summarize(rk_cost_model_t *model, double seconds, bool json) {
  rk_cost_model_info_t info;
  if (rk_cost_model_info(model, &info) != RK_OK) {
    fprintf(stderr, "rk calibrate: %s\n", rk_last_error());
    return TOOL_EXIT_FAILURE;
  }
  if (json) {
    printf("{\"profile\":");
    tool_json_string(stdout, info.profile_path);
    printf(",\"seconds\":");
    tool_json_number(stdout, seconds);
    printf(",\"fingerprint\":\"%s\",\"machine\":", info.fingerprint);
    tool_json_string(stdout, info.machine);
    printf(",\"candidates\":%zu,\"predictions\":[", info.candidate_count);
  } else {
    printf("profile     %s\n", info.profile_path);
    printf("machine     %s\n", info.machine);
    printf("took        %.1f s, %zu candidate%s\n\n", seconds,
           info.candidate_count, info.candidate_count == 1 ? "" : "s");
    printf(
        "Predicted times with the new profile (inputs and result on the "
        "host):\n");
  }
  for (int s = 0; s < kSummaryCount; ++s) {
    rk_op_desc_t d;
    memset(&d, 0, sizeof d);
    d.op = kSummary[s].op;
    d.m = kSummary[s].m;
    d.n = kSummary[s].n;
    d.k = kSummary[s].k;
    d.result_on_host = true;
    rk_prediction_t p[kMaxCandidates];
    size_t count = 0, best = 0;
    if (rk_cost_model_predict(model, &d, p, kMaxCandidates, &count, &best) !=
        RK_OK)
      continue;
    char what[64], name[64];
    size_text(what, sizeof what, d.op, d.m, d.n, d.k);
    if (json) {
      printf("%s{\"op\":", s ? "," : "");
      tool_json_string(stdout, what);
      printf(",\"times\":{");
      for (size_t i = 0; i < count; ++i) {
        target_text(name, sizeof name, &p[i].target);
        printf("%s", i ? "," : "");
        tool_json_string(stdout, name);
        printf(":");
        tool_json_number(stdout, p[i].total_s);
      }
      target_text(name, sizeof name, &p[best].target);
      printf("},\"choice\":");
      tool_json_string(stdout, name);
      printf("}");
    } else {
      printf("  %-22s", what);
      for (size_t i = 0; i < count; ++i) {
        target_text(name, sizeof name, &p[i].target);
        char t[32];
        tool_time_text(t, sizeof t, p[i].total_s);
        printf(" %s %s%s", name, t, i == best ? "*" : "");
        if (i + 1 < count) printf(",");
      }
      printf("\n");
    }
  }
  if (json)
    printf("]}\n");
  else
    printf("(* the model's choice)\n");
  return TOOL_EXIT_OK;
}

static int run(int argc, char **argv) {
  rk_calibrate_options_t o;
  rk_calibrate_options_init(&o);
  bool json = false, quick = false, thorough = false;
  for (int i = 1; i < argc; ++i) {
    const char *v = NULL;
    if (tool_is_help(argv[i])) {
      help(stdout);
      return TOOL_EXIT_OK;
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (strcmp(argv[i], "--thorough") == 0) {
      thorough = true;
    } else if (strcmp(argv[i], "--software") == 0) {
      o.include_software = true;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (tool_match_option(argc, argv, &i, "--output", &v) ||
               tool_match_option(argc, argv, &i, "-o", &v)) {
      if (!v || !*v)
        return tool_usage_error("calibrate", "--output needs a file name");
      o.output_path = v;
    } else if (argv[i][0] == '-') {
      return tool_usage_error("calibrate", "unknown option '%s'", argv[i]);
    } else {
      return tool_usage_error("calibrate", "unexpected argument '%s'", argv[i]);
    }
  }
  if (quick && thorough)
    return tool_usage_error("calibrate",
                            "--quick and --thorough exclude each other");
  o.level = quick      ? RK_CALIBRATE_QUICK
            : thorough ? RK_CALIBRATE_THOROUGH
                       : RK_CALIBRATE_DEFAULT;
  progress_state_t st = {isatty(2) != 0, ""};
  o.progress = on_progress;
  o.user = &st;
  double t0 = tool_now_seconds();
  rk_cost_model_t *model = NULL;
  if (rk_cost_calibrate(&o, &model) != RK_OK) {
    if (st.tty) fputc('\n', stderr);
    fprintf(stderr, "rk calibrate: %s\n", rk_last_error());
    return TOOL_EXIT_FAILURE;
  }
  rk_cost_model_info_t info;
  if (rk_cost_model_info(model, &info) == RK_OK && info.env_note[0])
    fprintf(stderr, "rk calibrate: warning: %s\n", info.env_note);
  int rc = summarize(model, tool_now_seconds() - t0, json);
  rk_cost_model_destroy(model);
  return rc;
}

const tool_command_t tool_cmd_calibrate = {
    "calibrate", "measure this machine for the cost model", run, help};
