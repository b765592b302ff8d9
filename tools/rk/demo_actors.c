/* demo_actors.c - `rk demo`: one actor, launched in persistent and in
 * traditional mode on the same backend, measured side by side.
 *
 * The actor is a small simulated body driven by commands, as an
 * interactive tool would drive it: set a force, advance a time step, query
 * the position. Every measurement goes through the public actor API, and
 * both modes must end in the state the host computes for the same command
 * sequence, or the demo fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rk/rk.h"
#include "tool.h"

const char tool_demo_body_source[] =
    "#include <rk/kernel.h>\n"
    "\n"
    "typedef struct { int op; float value; } cmd_t; /* 0 force 1 step 2 "
    "query */\n"
    "typedef struct { float x; float v; uint32_t steps; uint32_t pad; } "
    "reply_t;\n"
    "typedef struct { float x; float v; float force; uint32_t steps; } "
    "body_t;\n"
    "\n"
    "RK_HANDLER int body(const cmd_t *in, reply_t *out, body_t *s) {\n"
    "  if (in->op == 0) {\n"
    "    s->force = in->value;\n"
    "  } else if (in->op == 1) {\n"
    "    s->v += s->force * in->value;\n"
    "    s->x += s->v * in->value;\n"
    "    s->steps += 1u;\n"
    "  } else if (in->op != 2) {\n"
    "    return 1; /* unknown command */\n"
    "  }\n"
    "  out->x = s->x;\n"
    "  out->v = s->v;\n"
    "  out->steps = s->steps;\n"
    "  out->pad = 0u;\n"
    "  return 0;\n"
    "}\n";

typedef struct {
  int op;
  float value;
} cmd_t;
typedef struct {
  float x, v;
  uint32_t steps, pad;
} reply_t;
typedef struct {
  float x, v, force;
  uint32_t steps;
} body_t;

/* The host's model of the handler, to check both modes. */
static void host_apply(body_t *s, const cmd_t *c) {
  if (c->op == 0) {
    s->force = c->value;
  } else if (c->op == 1) {
    s->v += s->force * c->value;
    s->x += s->v * c->value;
    s->steps += 1u;
  }
}

typedef struct {
  double p10, p50, p90, p99;
} spread_t;

typedef struct {
  rk_actor_mode_t mode;
  spread_t inject_us; /* rk_actor_send returning */
  spread_t step_us;   /* rk_actor_call: send -> handled -> response seen */
  spread_t mixed_ms;  /* 300 operations: 2 commands per query */
  double msgs_per_s;  /* pipelined, 256 in flight: median over runs */
  double msgs_min, msgs_max;         /* the slowest and fastest run */
  double stats_p50_us, stats_p99_us; /* the actor's own call latencies */
  uint64_t processed;
  bool state_ok;
} mode_result_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static spread_t spread_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  spread_t s = {v[n / 10], v[n / 2], v[(n * 9) / 10], v[(n * 99) / 100]};
  return s;
}

static bool ok(rk_status_t s, const char *what) {
  if (s == RK_OK) return true;
  fprintf(stderr, "rk demo: %s: %s: %s\n", what, rk_status_name(s),
          rk_last_error());
  return false;
}

/* Receives `n` responses (responses to sends). */
static bool drain(rk_actor_t *a, int n) {
  for (int i = 0; i < n; ++i) {
    reply_t r;
    if (!ok(rk_actor_receive(a, &r, sizeof r, 10000000000u, NULL),
            "receiving a response"))
      return false;
  }
  return true;
}

typedef struct {
  int samples;   /* per latency measurement */
  int mixed;     /* repetitions of the 300-operation workload */
  int pipelined; /* messages in each throughput run */
  int runs;      /* throughput runs */
} demo_sizes_t;

enum { kMaxRuns = 16 };

static bool measure(rk_context_t *ctx, rk_actor_mode_t mode,
                    const demo_sizes_t *z, mode_result_t *out) {
  memset(out, 0, sizeof *out);
  out->mode = mode;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.mode = mode;
  o.source_name = "body.c";
  rk_actor_t *a = NULL;
  if (!ok(rk_actor_launch(ctx, tool_demo_body_source, "body", &o, &a),
          "launching the actor"))
    return false;
  body_t model = {0, 0, 0, 0};
  bool good = true;
  const int n = z->samples;
  double *t = malloc(sizeof(double) * (size_t)(n > z->mixed ? n : z->mixed));
  if (!t) {
    rk_actor_destroy(a);
    return false;
  }

  /* Inject: a command's send alone. Responses are collected untimed. */
  for (int i = 0; i < n && good; ++i) {
    cmd_t c = {0, (float)(i % 7) - 3.0f};
    double t0 = tool_now_seconds();
    good = ok(rk_actor_send(a, &c, sizeof c, RK_TIMEOUT_INFINITE, NULL),
              "sending a command");
    t[i] = (tool_now_seconds() - t0) * 1e6;
    host_apply(&model, &c);
    if (good && i % 64 == 63) good = drain(a, 64);
  }
  if (good) good = drain(a, n % 64);
  if (good) out->inject_us = spread_of(t, n);

  /* Single compute step: one call, answer seen. */
  for (int i = 0; i < n && good; ++i) {
    cmd_t c = {1, 0.001f};
    reply_t r;
    double t0 = tool_now_seconds();
    good = ok(rk_actor_call(a, &c, sizeof c, &r, sizeof r, 10000000000u, NULL),
              "calling the actor");
    t[i] = (tool_now_seconds() - t0) * 1e6;
    host_apply(&model, &c);
  }
  if (good) out->step_us = spread_of(t, n);

  /* Mixed: 300 operations, a force and a step sent, then a query called;
   * the window closes when every response is in. */
  for (int m = 0; m < z->mixed && good; ++m) {
    double t0 = tool_now_seconds();
    int pending = 0;
    for (int i = 0; i < 300 && good; ++i) {
      cmd_t c = {i % 3, i % 3 == 0 ? 0.5f : 0.002f};
      if (i % 3 == 2) {
        reply_t r;
        good =
            ok(rk_actor_call(a, &c, sizeof c, &r, sizeof r, 10000000000u, NULL),
               "calling the actor");
      } else {
        good = ok(rk_actor_send(a, &c, sizeof c, RK_TIMEOUT_INFINITE, NULL),
                  "sending a command");
        ++pending;
      }
      host_apply(&model, &c);
    }
    if (good) good = drain(a, pending);
    t[m] = (tool_now_seconds() - t0) * 1e3;
  }
  if (good) out->mixed_ms = spread_of(t, z->mixed);

  rk_actor_stats_t st;
  if (good && ok(rk_actor_stats(a, &st), "reading stats")) {
    out->stats_p50_us = st.latency_p50_ns / 1e3;
    out->stats_p99_us = st.latency_p99_ns / 1e3;
  }

  /* Throughput: queries pipelined, up to 256 in flight; several runs,
   * so that the spread shows. */
  const int window = 256;
  double rates[kMaxRuns];
  for (int run = 0; run < z->runs && good; ++run) {
    double t0 = tool_now_seconds();
    int sent = 0, received = 0;
    while (good && received < z->pipelined) {
      while (good && sent < z->pipelined && sent - received < window) {
        cmd_t c = {2, 0};
        good = ok(rk_actor_send(a, &c, sizeof c, RK_TIMEOUT_INFINITE, NULL),
                  "sending a query");
        ++sent;
      }
      if (good) good = drain(a, 1);
      ++received;
    }
    rates[run] = z->pipelined / (tool_now_seconds() - t0);
  }
  if (good) {
    spread_t r = spread_of(rates, z->runs);
    out->msgs_per_s = r.p50;
    out->msgs_min = rates[0];
    out->msgs_max = rates[z->runs - 1];
  }

  /* The actor's state must be the host's. */
  cmd_t q = {2, 0};
  reply_t r;
  if (good &&
      ok(rk_actor_call(a, &q, sizeof q, &r, sizeof r, 10000000000u, NULL),
         "querying the final state")) {
    out->state_ok = r.steps == model.steps &&
                    fabsf(r.x - model.x) <= 1e-3f * (1.0f + fabsf(model.x)) &&
                    fabsf(r.v - model.v) <= 1e-3f * (1.0f + fabsf(model.v));
    if (!out->state_ok)
      fprintf(stderr,
              "rk demo: %s actor state differs from the host's: steps %u/%u "
              "x %g/%g v %g/%g\n",
              rk_actor_mode_name(mode), r.steps, model.steps, (double)r.x,
              (double)model.x, (double)r.v, (double)model.v);
  }
  if (good && ok(rk_actor_stats(a, &st), "reading stats"))
    out->processed = st.processed;
  if (good) good = ok(rk_actor_terminate(a, 5000000000u), "terminating");
  rk_actor_destroy(a);
  free(t);
  return good && out->state_ok;
}

/* One row: each mode's median with its spread, and how many times faster
 * persistent mode is (always that way round: above 1 persistent wins). */
static void print_row(const char *what, const char *unit, const spread_t *t,
                      const spread_t *p, bool spread) {
  const double speedup = p->p50 > 0 ? t->p50 / p->p50 : 0.0;
  char ts[48] = "", ps[48] = "";
  if (spread) {
    snprintf(ts, sizeof ts, " (%.3f-%.3f)", t->p10, t->p90);
    snprintf(ps, sizeof ps, " (%.3f-%.3f)", p->p10, p->p90);
  }
  printf("  %-26s %9.3f %-2s%-18s %9.3f %-2s%-18s %7.2fx%s\n", what, t->p50,
         unit, ts, p->p50, unit, ps, speedup,
         speedup < 1 ? "  persistent is slower here" : "");
}

static void print_table(const mode_result_t *t, const mode_result_t *p) {
  printf("  %-26s %-30s %-30s %s\n", "operation: median (p10-p90)",
         "traditional", "persistent", "speed-up");
  print_row("inject a command", "us", &t->inject_us, &p->inject_us, true);
  print_row("single compute step", "us", &t->step_us, &p->step_us, true);
  print_row("mixed workload, 300 ops", "ms", &t->mixed_ms, &p->mixed_ms, true);
  const spread_t t99 = {0, t->step_us.p99, 0, 0},
                 p99 = {0, p->step_us.p99, 0, 0};
  print_row("round trip p99", "us", &t99, &p99, false);
  const double speedup =
      t->msgs_per_s > 0 ? p->msgs_per_s / t->msgs_per_s : 0.0;
  printf("  %-26s %9.0f    (%.0f-%.0f) %9.0f    (%.0f-%.0f) %7.2fx%s\n",
         "messages per second", t->msgs_per_s, t->msgs_min, t->msgs_max,
         p->msgs_per_s, p->msgs_min, p->msgs_max, speedup,
         speedup < 1 ? "  persistent is slower here" : "");
}

static void json_spread(FILE *f, const char *name, const spread_t *s) {
  fprintf(f, "\"%s\":{\"p10\":%.4f,\"p50\":%.4f,\"p90\":%.4f,\"p99\":%.4f}",
          name, s->p10, s->p50, s->p90, s->p99);
}

static void json_mode(FILE *f, const mode_result_t *m) {
  fprintf(f, "{\"mode\":\"%s\",", rk_actor_mode_name(m->mode));
  json_spread(f, "inject_us", &m->inject_us);
  fputc(',', f);
  json_spread(f, "step_us", &m->step_us);
  fputc(',', f);
  json_spread(f, "mixed_300_ms", &m->mixed_ms);
  fprintf(f,
          ",\"messages_per_second\":%.0f,\"messages_per_second_min\":%.0f,"
          "\"messages_per_second_max\":%.0f,\"processed\":%llu,"
          "\"state_matches_host\":%s}",
          m->msgs_per_s, m->msgs_min, m->msgs_max,
          (unsigned long long)m->processed, m->state_ok ? "true" : "false");
}

static const char kGuide[] =
    "Which mode:\n"
    "  persistent   the handler stays resident and polls its ring: a command\n"
    "               is a memory store, the answer comes without a launch.\n"
    "               For command-heavy work - interactive tools and parameter\n"
    "               tuning, game physics driven by input, real-time GUIs at\n"
    "               60 FPS - where each command's latency matters. Costs a\n"
    "               worker (CPU) or a resident kernel (GPU) while active.\n"
    "  traditional  one launch per command, nothing resident. For batches:\n"
    "               many steps or matrix work per launch, where the launch\n"
    "               cost is amortised and the device runs at full width.\n";

int tool_demo_actors(rk_backend_t *be, bool json, bool quick) {
  rk_device_info_t info;
  if (!ok(rk_backend_device_info(be, 0, &info), "reading device 0"))
    return TOOL_EXIT_FAILURE;
  rk_context_t *ctx = NULL;
  if (!ok(rk_backend_create_context(be, 0, &ctx), "creating a context"))
    return TOOL_EXIT_FAILURE;
  demo_sizes_t z = quick ? (demo_sizes_t){200, 5, 2000, 3}
                         : (demo_sizes_t){2000, 21, 40000, 7};
  if (!json) {
    printf("backend   %s\n", rk_backend_name(be));
    printf("device    %s\n", info.name);
    printf(
        "actor     body.c: RK_HANDLER int body(const cmd_t *, reply_t *, "
        "body_t *)\n");
    printf("persistent mode here: %s\n\n",
           info.caps & RK_CAP_PERSISTENT_KERNELS && !getenv("RK_ACTOR_RELAUNCH")
               ? "resident (the handler stays on the device)"
               : "relaunch (one launch per batch of waiting commands; this "
                 "device cannot keep a kernel resident)");
    fflush(stdout);
  }
  mode_result_t trad, pers;
  bool good = measure(ctx, RK_ACTOR_TRADITIONAL, &z, &trad) &&
              measure(ctx, RK_ACTOR_PERSISTENT, &z, &pers);
  if (!ok(rk_context_destroy(ctx), "releasing the context")) good = false;
  if (!good) return TOOL_EXIT_FAILURE;
  if (json) {
    printf("{\"backend\":");
    tool_json_string(stdout, rk_backend_name(be));
    printf(",\"device\":");
    tool_json_string(stdout, info.name);
    printf(
        ",\"samples\":%d,\"mixed_runs\":%d,\"throughput_runs\":%d,"
        "\"modes\":[",
        z.samples, z.mixed, z.runs);
    json_mode(stdout, &trad);
    putchar(',');
    json_mode(stdout, &pers);
    printf("]}\n");
    return TOOL_EXIT_OK;
  }
  print_table(&trad, &pers);
  printf(
      "\n  Medians with p10-p90 of %d samples per latency and of %d runs of "
      "the\n  mixed workload; messages per second: the median of %d runs of "
      "%d\n  pipelined messages (256 in flight), with the slowest and "
      "fastest run.\n  speed-up: how many times faster persistent mode is "
      "on each row\n  (traditional time / persistent time; persistent "
      "messages/s /\n  traditional messages/s). Both actors ended in the "
      "state the host\n  computed for the same commands.\n\n",
      z.samples, z.mixed, z.runs, z.pipelined);
  fputs(kGuide, stdout);
  return TOOL_EXIT_OK;
}
