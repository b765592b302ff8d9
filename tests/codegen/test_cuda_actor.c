/* The persistent actor kernels of the CUDA target
 * (rk_transpile_options_t.persistent_actors):
 *   - any other target refuses the option, naming itself;
 *   - a source without handlers prints exactly as without the option; with
 *     handlers the output is the usual one plus, after each handler's
 *     entries, its rk_actor_<h>, the shared prelude coming once, before the
 *     first; options.entry keeps rk_actor_<h> with its handler only; the
 *     entry list never shows them;
 *   - the ABI offsets the CUDA text carries are the C structs' own;
 *   - golden/actor_account.persistent.cu pins the text (after an intended
 *     change: RK_UPDATE_GOLDEN=1 ctest -R codegen_cuda_actor, then review
 *     the diff);
 *   - NVRTC compiles one module holding all four handler shapes (where
 *     NVRTC is installed);
 *   - the generated kernels run on host threads, one per block, against a
 *     host side written from abi/actor_abi.h (cuda_actor_host.cc, built
 *     here with the C++ compiler): answers in order, back-pressure,
 *     counters, the clock, run states, termination.
 * No GPU is needed; the CUDA backend's tests run the kernels on one.
 */
#define RK_TEST_IMPLEMENTATION
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/actor_abi.h"
#include "base/sys.h"
#include "cg_test_util.h"
#include "gpucompile/gpucompile.h"
#include "rk/actor_k2k.h"
#include "rk_test.h"

#define PRELUDE_MARK "/* ---- Persistent actor kernels"

/* The corpus actors, one of each shape, and their handlers. */
static const char *const kActors[] = {"actor_echo", "actor_counter",
                                      "actor_checked_div", "actor_account"};
static const char *const kHandlers[] = {"add_one", "counter", "checked_div",
                                        "account"};
enum { kNumActors = 4 };

/* Actors that talk to actors, for the host-thread run's K2K scenarios
 * (cuda_actor_host.cc): relay forwards whatever it gets, a request or an
 * inbox message, on port 0; sink counts and checks each source's sequence
 * numbers (once, in order). */
static const char kK2KSource[] =
    "typedef struct { int src; int seq; int val; int pad; } k2k_msg_t;\n"
    "typedef struct { int status; int seq; } k2k_ack_t;\n"
    "typedef struct { int count; int bad; int sum; int last[4]; } "
    "k2k_sink_t;\n"
    "RK_HANDLER int relay(const k2k_msg_t *in, k2k_ack_t *out) {\n"
    "  k2k_msg_t m;\n"
    "  m.src = in->src;\n"
    "  m.seq = in->seq;\n"
    "  m.val = in->val;\n"
    "  m.pad = 0;\n"
    "  int r = rk_try_send(0, &m);\n"
    "  out->status = r;\n"
    "  out->seq = in->seq;\n"
    "  return r;\n"
    "}\n"
    "RK_HANDLER void sink(const k2k_msg_t *in, k2k_ack_t *out,\n"
    "                     k2k_sink_t *st) {\n"
    "  int s = in->src;\n"
    "  if (s < 0 || s > 3) {\n"
    "    st->bad++;\n"
    "  } else {\n"
    "    if (in->seq != st->last[s] + 1) st->bad++;\n"
    "    st->last[s] = in->seq;\n"
    "  }\n"
    "  st->count++;\n"
    "  st->sum += in->val;\n"
    "  out->status = st->count;\n"
    "  out->seq = st->bad;\n"
    "}\n";

static rk_status_t transpile(const char *src, const char *name,
                             rk_target_t target, bool persistent,
                             const char *entry, char **out) {
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  o.source_name = name;
  o.entry = entry;
  o.persistent_actors = persistent;
  return rk_transpile(src, target, &o, out);
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* Offset of the first `needle` in text, or -1. */
static long where(const char *text, const char *needle) {
  const char *p = strstr(text, needle);
  return p ? (long)(p - text) : -1;
}

/* The four corpus actors as one source. */
static char *all_actors(bool k2k) {
  size_t len = k2k ? sizeof kK2KSource : 0;
  char *parts[kNumActors];
  for (int i = 0; i < kNumActors; ++i) {
    parts[i] = cg_read_kernel(kActors[i]);
    if (!CHECK(parts[i] != NULL, "cannot read %s", kActors[i])) return NULL;
    len += strlen(parts[i]) + 1;
  }
  char *all = malloc(len + 1);
  if (all) {
    all[0] = '\0';
    for (int i = 0; i < kNumActors; ++i) {
      strcat(all, parts[i]);
      strcat(all, "\n");
    }
    if (k2k) strcat(all, kK2KSource);
  }
  for (int i = 0; i < kNumActors; ++i) free(parts[i]);
  return all;
}

/* ---- The option ---------------------------------------------------------
 */

static void test_other_targets_refuse(void) {
  char *src = cg_read_kernel("actor_echo");
  if (!CHECK(src != NULL, "cannot read actor_echo")) return;
  static const rk_target_t kOthers[] = {RK_TARGET_C, RK_TARGET_OPENCL,
                                        RK_TARGET_WGSL, RK_TARGET_MSL};
  for (size_t i = 0; i < sizeof kOthers / sizeof kOthers[0]; ++i) {
    char *text = (char *)"untouched";
    rk_transpile_options_t o;
    rk_transpile_options_init(&o);
    o.persistent_actors = true;
    rk_diagnostic_t diag;
    diag.line = 99;
    rk_status_t s = rk_transpile_ex(src, kOthers[i], &o, &text, &diag);
    const char *name = rk_target_name(kOthers[i]);
    CHECK(s == RK_ERR_INVALID_ARGUMENT && text == NULL && diag.line == 0,
          "persistent_actors for %s: %s, text %s, diag line %u", name,
          rk_status_name(s), text ? "set" : "NULL", diag.line);
    const char *msg = rk_last_error();
    char want[64];
    snprintf(want, sizeof want, "not %s", name);
    CHECK(strstr(msg, "persistent_actors") && strstr(msg, "cuda") &&
              strstr(msg, want),
          "persistent_actors for %s: message '%s' does not say it is for "
          "cuda only and name %s",
          name, msg, name);
  }
  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  CHECK(!o.persistent_actors,
        "rk_transpile_options_init: persistent_actors "
        "is on by default");
  free(src);
}

/* Corpus kernels without handlers: the option changes nothing. Kernels
 * with one handler: the usual output, with the prelude and the kernel
 * after the handler's entries. */
static void test_corpus_placement(void) {
  cg_corpus_t corpus;
  if (!cg_corpus_load(&corpus)) return;
  int plain = 0, actors = 0;
  for (int k = 0; k < corpus.count; ++k) {
    const char *name = corpus.names[k];
    char *src = cg_read_kernel(name);
    if (!src) continue;
    rk_entry_list_t *list = NULL;
    size_t handlers = 0;
    if (CHECK_OK(rk_codegen_list_entries(src, NULL, &list, NULL)))
      for (size_t i = 0; i < list->count; ++i)
        handlers += list->entries[i].kind == RK_ENTRY_HANDLER;
    char *without = NULL, *with = NULL;
    if (CHECK_OK(transpile(src, name, RK_TARGET_CUDA, false, NULL, &without)) &&
        CHECK_OK(transpile(src, name, RK_TARGET_CUDA, true, NULL, &with))) {
      if (handlers == 0) {
        CHECK(strcmp(with, without) == 0,
              "%s has no handler, yet persistent_actors changed its CUDA "
              "output",
              name);
        plain++;
      } else if (handlers == 1) {
        /* The usual output with the prelude and the kernel spliced in
         * right after the handler's entries (before what follows it). */
        const char *handler = "";
        for (size_t i = 0; i < list->count; ++i)
          if (list->entries[i].kind == RK_ENTRY_HANDLER)
            handler = list->entries[i].name;
        char kernel[160];
        snprintf(kernel, sizeof kernel, "void rk_actor_%s(", handler);
        static const char kEnd[] = "#endif\n}\n";
        const long pre = where(with, "\n" PRELUDE_MARK);
        const long at = where(with, kernel);
        const char *end = at >= 0 ? strstr(with + at, kEnd) : NULL;
        CHECK(
            pre >= 0 && at > pre && end && count_of(with, PRELUDE_MARK) == 1 &&
                count_of(with, kernel) == 1 && strlen(without) >= (size_t)pre &&
                strncmp(with, without, (size_t)pre) == 0 &&
                strcmp(end + sizeof kEnd - 1, without + pre) == 0,
            "%s: want the usual CUDA output with the prelude once, then "
            "%s...), after the handler's entries",
            name, kernel);
        actors++;
      }
    }
    rk_transpile_free(without);
    rk_transpile_free(with);
    rk_entry_list_destroy(list);
    free(src);
  }
  CHECK(plain >= 10 && actors >= kNumActors,
        "%d kernels without handlers and %d with one checked", plain, actors);
}

/* Two or more handlers: one prelude, before the first rk_actor_ kernel;
 * each rk_actor_<h> after rk_batch_<h> and before the next handler. */
static void test_module_layout(const char *text) {
  CHECK(count_of(text, PRELUDE_MARK) == 1, "the prelude is printed %d times",
        count_of(text, PRELUDE_MARK));
  long prelude = where(text, PRELUDE_MARK), last = -1;
  for (int i = 0; i < kNumActors; ++i) {
    char batch[128], actor[128], next[128];
    snprintf(batch, sizeof batch, "void rk_batch_%s(", kHandlers[i]);
    snprintf(actor, sizeof actor, "void rk_actor_%s(", kHandlers[i]);
    long b = where(text, batch), a = where(text, actor);
    long n =
        i + 1 < kNumActors
            ? (snprintf(next, sizeof next, "rk_handle_%s(", kHandlers[i + 1]),
               where(text, next))
            : (long)strlen(text);
    CHECK(count_of(text, actor) == 1 && b >= 0 && b > last && a > b &&
              a > prelude && a < n,
          "rk_actor_%s is not once, after its batch entry and before the "
          "next handler",
          kHandlers[i]);
    if (i == 0)
      CHECK(prelude > b && prelude < a,
            "the prelude is not right before the first rk_actor_ kernel");
    last = a;
  }
}

/* options.entry: the handler's name keeps its rk_actor_ kernel; its batch
 * entry's name prints as without the option. The entry list is the same
 * with and without it. */
static void test_entry_option(const char *src) {
  char *text = NULL;
  if (CHECK_OK(transpile(src, "all.c", RK_TARGET_CUDA, true, "account", &text)))
    CHECK(count_of(text, "void rk_actor_account(") == 1 &&
              count_of(text, "void rk_actor_") == 1 &&
              count_of(text, PRELUDE_MARK) == 1,
          "entry 'account': want rk_actor_account and the prelude alone");
  rk_transpile_free(text);
  char *with = NULL, *without = NULL;
  if (CHECK_OK(transpile(src, "all.c", RK_TARGET_CUDA, true, "rk_batch_account",
                         &with)) &&
      CHECK_OK(transpile(src, "all.c", RK_TARGET_CUDA, false,
                         "rk_batch_account", &without)))
    CHECK(strcmp(with, without) == 0,
          "entry 'rk_batch_account': persistent_actors changed the output");
  rk_transpile_free(with);
  rk_transpile_free(without);

  rk_transpile_options_t o;
  rk_transpile_options_init(&o);
  rk_entry_list_t *plain = NULL, *persistent = NULL;
  if (CHECK_OK(rk_codegen_list_entries(src, &o, &plain, NULL))) {
    o.persistent_actors = true;
    if (CHECK_OK(rk_codegen_list_entries(src, &o, &persistent, NULL))) {
      bool same = plain->count == persistent->count && plain->count == 8;
      for (size_t i = 0; same && i < plain->count; ++i)
        same = strcmp(plain->entries[i].name, persistent->entries[i].name) == 0;
      CHECK(same, "the entry list changes with persistent_actors (%zu vs %zu)",
            plain->count, persistent->count);
    }
  }
  rk_entry_list_destroy(plain);
  rk_entry_list_destroy(persistent);
}

/* ---- What the text says ---------------------------------------------------
 */

/* Every "static constexpr unsigned int rk_pa_X = Nu;" is the ABI's
 * value, and every value the device code needs is there. */
static void test_abi_numbers(const char *text) {
  static const struct {
    const char *name;
    size_t value;
  } kWant[] = {
      {"rk_pa_ring_capacity", offsetof(rk_abi_ring_t, capacity)},
      {"rk_pa_ring_slot_size", offsetof(rk_abi_ring_t, slot_size)},
      {"rk_pa_ring_tail", offsetof(rk_abi_ring_t, tail)},
      {"rk_pa_ring_head", offsetof(rk_abi_ring_t, head)},
      {"rk_pa_ctl_out_payload", offsetof(rk_abi_control_t, out_payload)},
      {"rk_pa_ctl_active", offsetof(rk_abi_control_t, active)},
      {"rk_pa_ctl_terminate", offsetof(rk_abi_control_t, terminate)},
      {"rk_pa_ctl_run_state", offsetof(rk_abi_control_t, run_state)},
      {"rk_pa_ctl_terminated", offsetof(rk_abi_control_t, terminated)},
      {"rk_pa_ctl_processed", offsetof(rk_abi_control_t, processed)},
      {"rk_pa_ctl_errors", offsetof(rk_abi_control_t, errors)},
      {"rk_pa_ctl_last_error", offsetof(rk_abi_control_t, last_error)},
      {"rk_pa_ctl_clock", offsetof(rk_abi_control_t, clock)},
      {"rk_pa_msg_header", RK_ABI_MSG_HEADER},
      {"rk_pa_msg_response", RK_ABI_MSG_RESPONSE},
      {"rk_pa_msg_ok", RK_ABI_MSG_OK},
      {"rk_pa_msg_handler_error", RK_ABI_MSG_HANDLER_ERROR},
      {"rk_pa_run_idle", RK_ABI_RUN_IDLE},
      {"rk_pa_run_active", RK_ABI_RUN_ACTIVE},
      {"rk_pa_run_stopped", RK_ABI_RUN_STOPPED},
      {"rk_pa_line", RK_ABI_LINE},
      {"rk_pa_msg_k2k", RK_ABI_MSG_K2K},
      {"rk_pa_send_full", RK_SEND_FULL},
      {"rk_pa_send_unconnected", RK_SEND_UNCONNECTED},
      {"rk_pa_chan_open", offsetof(rk_abi_chan_t, open)},
      {"rk_pa_chan_link", offsetof(rk_abi_chan_t, link)},
      {"rk_pa_chan_slots", sizeof(rk_abi_chan_t)},
      {"rk_pa_k2k_nin", offsetof(rk_abi_k2k_t, nin)},
      {"rk_pa_k2k_nout", offsetof(rk_abi_k2k_t, nout)},
      {"rk_pa_k2k_in", offsetof(rk_abi_k2k_t, in)},
      {"rk_pa_k2k_out", offsetof(rk_abi_k2k_t, out)},
      {"rk_pa_k2k_sent", offsetof(rk_abi_k2k_t, sent)},
      {"rk_pa_k2k_refused_full", offsetof(rk_abi_k2k_t, refused_full)},
      {"rk_pa_k2k_refused_unconnected",
       offsetof(rk_abi_k2k_t, refused_unconnected)},
      {"rk_pa_k2k_received", offsetof(rk_abi_k2k_t, received)},
      {"rk_pa_k2k_received_errors", offsetof(rk_abi_k2k_t, received_errors)},
      {"rk_pa_k2k_last_sent_ts", offsetof(rk_abi_k2k_t, last_sent_ts)},
      {"rk_pa_k2k_last_received_ts", offsetof(rk_abi_k2k_t, last_received_ts)},
      {"rk_pa_k2k_max_ports", RK_ABI_K2K_MAX_PORTS},
      {"rk_pa_k2k_max_out", RK_ABI_K2K_MAX_OUT},
      {"rk_pa_k2k_outbox", RK_ABI_K2K_OUTBOX},
      {"rk_pa_k2k_words_max", RK_ABI_K2K_WORDS_MAX},
      {"rk_pa_k2k_head_batch", RK_ABI_K2K_HEAD_BATCH},
      {"rk_pa_ring_flags", offsetof(rk_abi_ring_t, flags)},
      {"rk_pa_ring_slot_words", RK_ABI_RING_SLOT_WORDS},
      {"rk_pa_k2k_max_in", RK_ABI_K2K_MAX_IN},
      {"rk_pa_k2k_view_size", RK_ABI_K2K_VIEW},
      {"rk_pa_k2k_scratch", RK_ABI_K2K_SCRATCH},
      {"rk_pa_terminate_park", RK_ABI_TERMINATE_PARK},
      {"rk_pa_sched_clock", RK_ABI_SCHED_CLOCK},
      {"rk_pa_sched_processed", RK_ABI_SCHED_PROCESSED},
      {"rk_pa_sched_errors", RK_ABI_SCHED_ERRORS},
  };
  enum { kWantCount = sizeof kWant / sizeof kWant[0] };
  static const char kDecl[] = "static constexpr unsigned int ";
  int found = 0, total = 0;
  for (const char *p = text; (p = strstr(p, kDecl)) != NULL; ++p) {
    char name[64];
    unsigned long value = 0;
    if (!CHECK(sscanf(p + sizeof kDecl - 1, "%63[a-z_0-9] = %luu;", name,
                      &value) == 2,
               "unreadable constant: %.60s", p))
      continue;
    total++;
    bool known = false;
    for (int i = 0; i < kWantCount; ++i) {
      if (strcmp(kWant[i].name, name) != 0) continue;
      known = true;
      found++;
      CHECK(value == kWant[i].value,
            "%s = %lu in the CUDA text, %zu in the "
            "ABI",
            name, value, kWant[i].value);
    }
    CHECK(known, "constant %s is not checked against the ABI here", name);
  }
  CHECK(found == kWantCount && total == kWantCount,
        "%d of %d ABI constants found (%d printed)", found, kWantCount, total);
  char size_assert[96];
  snprintf(size_assert, sizeof size_assert,
           "static_assert(sizeof(rk_pa_msg_t) == %zu,", sizeof(rk_abi_msg_t));
  CHECK(strstr(text, size_assert) != NULL,
        "the message header's size is not pinned (%s)", size_assert);
}

static void test_golden(void) {
  char *src = cg_read_kernel("actor_account");
  char *text = NULL;
  if (!CHECK(src != NULL, "cannot read actor_account") ||
      !CHECK_OK(
          transpile(src, "actor_account.c", RK_TARGET_CUDA, true, NULL, &text)))
    goto done;
  static const char kPath[] = CG_TEST_DIR "/golden/actor_account.persistent.cu";
  const char *update = getenv("RK_UPDATE_GOLDEN");
  if (update && *update && strcmp(update, "0") != 0) {
    CHECK(cg_write_file(kPath, text), "cannot write %s", kPath);
    printf("rewrote %s\n", kPath);
    goto done;
  }
  char *want = cg_read_file(kPath);
  if (CHECK(want != NULL, "missing golden file %s", kPath)) {
    if (!CHECK(strcmp(want, text) == 0, "output differs from %s", kPath)) {
      int line = 1;
      const char *w = want, *g = text;
      for (; *w && *w == *g; ++w, ++g) line += *w == '\n';
      printf(
          "  first difference at line %d. If the change is intended, run\n"
          "  RK_UPDATE_GOLDEN=1 ctest --test-dir <build dir> -R "
          "codegen_cuda_actor\n  and review the diff.\n",
          line);
    }
  }
  free(want);
done:
  rk_transpile_free(text);
  free(src);
}

/* ---- NVRTC ---------------------------------------------------------------
 */

static void test_nvrtc(const char *text) {
  char what[512];
  if (rk_gpucompile_cuda_describe(what, sizeof what) != RK_GPUCOMPILE_OK) {
    printf("SKIPPED NVRTC compile of the four actors: %s\n", what);
    return;
  }
  static const char *const kAll[] = {"add_one", "counter", "checked_div",
                                     "account", "relay",   "sink"};
  enum { kAllCount = sizeof kAll / sizeof kAll[0] };
  const char *entries[3 * kAllCount];
  char names[3 * kAllCount][96];
  size_t n = 0;
  for (int i = 0; i < kAllCount; ++i) {
    static const char *const kPrefix[] = {"", "rk_batch_", "rk_actor_"};
    for (int p = 0; p < 3; ++p, ++n) {
      snprintf(names[n], sizeof names[n], "%s%s", kPrefix[p], kAll[i]);
      entries[n] = names[n];
    }
  }
  enum { kLogCap = 32 * 1024 };
  char *log = malloc(kLogCap);
  if (!CHECK(log != NULL, "out of memory")) return;
  int rc = rk_gpucompile_cuda_kernels(text, "all_actors.cu", entries, n, log,
                                      kLogCap);
  if (CHECK(rc == RK_GPUCOMPILE_OK,
            "NVRTC refused the actors (rc %d):\n%s\n--- the source:\n%s", rc,
            log, text))
    printf("ok    NVRTC compiled the six actors, %zu entry points (%s)\n", n,
           what);
  /* The loop's phase timing (RK_PA_PROFILE, set through RK_CUDA_DEFINES
   * on a GPU) must build too. */
  static const char kProfile[] = "#define RK_PA_PROFILE 1\n";
  char *profiled = malloc(sizeof kProfile + strlen(text));
  if (CHECK(profiled != NULL, "out of memory")) {
    memcpy(profiled, kProfile, sizeof kProfile - 1);
    memcpy(profiled + sizeof kProfile - 1, text, strlen(text) + 1);
    rc = rk_gpucompile_cuda_kernels(profiled, "all_actors_profiled.cu", entries,
                                    n, log, kLogCap);
    if (CHECK(rc == RK_GPUCOMPILE_OK,
              "NVRTC refused the actors with RK_PA_PROFILE (rc %d):\n%s", rc,
              log))
      printf("ok    NVRTC compiled them with RK_PA_PROFILE 1\n");
    free(profiled);
  }
  free(log);
}

/* ---- On host threads -------------------------------------------------------
 */

static const char *cxx(void) {
  const char *c = getenv("CXX");
  return c && *c && !strchr(c, ' ') ? c : "c++";
}

/* `text` with every `from` replaced by `to` (which must occur `want`
 * times; 0: any number); NULL, with a failed check, otherwise. */
static char *replaced(const char *text, const char *from, const char *to,
                      int want, const char *what) {
  int n = count_of(text, from);
  if (!CHECK(n > 0 && (want == 0 || n == want),
             "%s: the generated text has %d of '%s', want %d", what, n, from,
             want))
    return NULL;
  size_t lf = strlen(from), lt = strlen(to);
  char *out = malloc(strlen(text) + (size_t)n * (lt + 1) + 1);
  if (!CHECK(out != NULL, "out of memory")) return NULL;
  char *o = out;
  for (const char *p = text;;) {
    const char *q = strstr(p, from);
    if (!q) {
      strcpy(o, p);
      break;
    }
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, lt);
    o += lt;
    p = q + lf;
  }
  return out;
}

/* The negative controls' kernels (see cuda_actor_host.cc): `edited` with a
 * K2K step broken, in a namespace there, so without extern "C". */
static bool write_bug(const char *edited, const char *path, const char *from,
                      const char *to, const char *what) {
  char *broken = replaced(edited, from, to, 1, what);
  if (!broken) return false;
  char *plain = replaced(broken, "extern \"C\" ", "", 0, what);
  free(broken);
  if (!plain) return false;
  bool wrote = cg_write_file(path, plain);
  free(plain);
  return CHECK(wrote, "cannot write %s", path);
}

/* Runs the harness with `arg` (NULL: the scenarios; else a negative
 * control): true when it exits with `want_code` and, for a negative
 * control, prints `want_text`. */
static bool run_harness(const char *bin, const char *arg, int want_code,
                        const char *want_text) {
  char *run[] = {(char *)bin, (char *)arg, NULL};
  char *log = NULL;
  int code = -1;
  rk_status_t s = rk__run_process(run, &log, &code);
  bool ok = s == RK_OK && code == want_code &&
            (!want_text || (log && strstr(log, want_text)));
  if (arg)
    CHECK(ok,
          "negative control %s: exit %d, want %d with '%s' in its output "
          "(the broken protocol went unnoticed):\n%s",
          arg, code, want_code, want_text, log ? log : "");
  else
    CHECK(ok, "the generated kernels failed on host threads (exit %d):\n%s",
          code, log ? log : "");
  if (ok && !arg) printf("%s", log ? log : "");
  if (ok && arg && want_code != 0)
    printf("ok    negative control %s: the harness failed as it must\n", arg);
  else if (ok && arg)
    printf("ok    %s: the harness passed\n", arg);
  free(log);
  return ok;
}

/* Builds the host harness into `out` with the five scenario files and
 * two more -D options: 1 built, 0 the build failed (a check failed), -1 no
 * C++ compiler (skipped). */
static int build_harness(const char *const defines[5],
                         const char *const extra[3], const char *out) {
  char *build[] = {(char *)cxx(),
                   "-std=c++17",
                   "-O1",
                   "-g",
                   "-pthread",
                   "-Wall",
                   "-Wextra",
                   "-Werror",
                   "-Wno-unused-parameter",
                   "-Wno-unused-function",
                   "-Wno-unknown-pragmas", /* #pragma unroll */
                   "-I" CG_TEST_DIR "/../../src",
                   (char *)extra[0],
                   (char *)extra[1],
                   (char *)extra[2],
                   (char *)defines[0],
                   (char *)defines[1],
                   (char *)defines[2],
                   (char *)defines[3],
                   (char *)defines[4],
                   CG_TEST_DIR "/cuda_actor_host.cc",
                   "-o",
                   (char *)out,
                   NULL};
  char *log = NULL;
  int code = -1;
  rk_status_t s = rk__run_process(build, &log, &code);
  if (s != RK_OK) {
    printf("SKIPPED host-thread run: no C++ compiler (%s): %s\n", cxx(),
           rk_last_error());
    free(log);
    return -1;
  }
  bool built = CHECK(code == 0, "the host harness does not build (%s %s):\n%s",
                     extra[0], extra[1], log ? log : "");
  free(log);
  return built ? 1 : 0;
}

static void test_on_host_threads(const char *text) {
  /* The PTX helpers give way to the harness's C++ atomics. */
  const char *cut = strstr(text, "/* Shared with the host (mapped host");
  const char *resume = strstr(text, "/* A channel as its one user");
  if (!CHECK(cut && resume && cut < resume,
             "the generated prelude lacks the markers around its memory "
             "helpers"))
    return;
  const char *dir = rk_test_temp_dir();
  char cu[1024], bug1[1024], bug2[1024], bug3[1024], slow[1024], bin[1024];
  char define[1100], define1[1100], define2[1100], define3[1100], define4[1100];
  snprintf(cu, sizeof cu, "%s/actors.cu", dir);
  snprintf(bug1, sizeof bug1, "%s/bug_no_credit.cu", dir);
  snprintf(bug2, sizeof bug2, "%s/bug_publish_early.cu", dir);
  snprintf(bug3, sizeof bug3, "%s/bug_words_unchecked.cu", dir);
  snprintf(slow, sizeof slow, "%s/words_slow.cu", dir);
  snprintf(bin, sizeof bin, "%s/cuda_actor_host", dir);
  snprintf(define, sizeof define, "-DRK_ACTOR_CU=\"%s\"", cu);
  snprintf(define1, sizeof define1, "-DRK_BUG_NO_CREDIT_CU=\"%s\"", bug1);
  snprintf(define2, sizeof define2, "-DRK_BUG_PUBLISH_EARLY_CU=\"%s\"", bug2);
  snprintf(define3, sizeof define3, "-DRK_BUG_WORDS_UNCHECKED_CU=\"%s\"", bug3);
  snprintf(define4, sizeof define4, "-DRK_WORDS_SLOW_CU=\"%s\"", slow);
  size_t head = (size_t)(cut - text);
  char *edited = malloc(strlen(text) + 1);
  if (!CHECK(edited != NULL, "out of memory")) return;
  memcpy(edited, text, head);
  strcpy(edited + head, resume);
  bool wrote = CHECK(cg_write_file(cu, edited), "cannot write %s", cu);
  /* The receiver never frees an inbox slot: no credit comes back. */
  wrote = wrote && write_bug(edited, bug1,
                             "  if (heads) {\n"
                             "    for (unsigned int i = 0; i < a->nin; ++i) "
                             "{\n",
                             "  if (false) {\n"
                             "    for (unsigned int i = 0; i < a->nin; ++i) "
                             "{\n",
                             "no-credit");
  /* The sender publishes the tail before it writes the slots. */
  wrote = wrote &&
          write_bug(edited, bug2,
                    "    for (unsigned int m = 0; m < n; ++m) {\n"
                    "      unsigned char *slot = rk_pa_view_slot(v, tail + "
                    "m);\n",
                    "    if (v->dev)\n"
                    "      rk_pa_store_relaxed_dev_u64(v->chan + "
                    "rk_pa_ring_tail, tail + n);\n"
                    "    else\n"
                    "      rk_pa_store_relaxed_sys_u64(v->chan + "
                    "rk_pa_ring_tail, tail + n);\n"
                    "    rk_test_dawdle();\n"
                    "    for (unsigned int m = 0; m < n; ++m) {\n"
                    "      unsigned char *slot = rk_pa_view_slot(v, tail + "
                    "m);\n",
                    "publish-early");
  /* Word slots: the sender stores a message's first words (the ones the
   * receiver polls) and dawdles before the others, as a GPU's stores may
   * land in any order; the receiver must wait for the others' marks
   * (words-slow passes), and one that does not (words-unchecked) takes
   * stale words. */
  static const char kFirstWord[] =
      "        const unsigned char *src = buf + (unsigned long long)m * "
      "size;\n";
  static const char kDawdle[] =
      "        rk_pa_store2_relaxed_dev_u64(slot, mark | (stamp & "
      "0xffffffffull),\n"
      "                                     mark | (stamp >> 32));\n"
      "        rk_test_dawdle();\n"
      "        const unsigned char *src = buf + (unsigned long long)m * "
      "size;\n";
  wrote = wrote && write_bug(edited, slow, kFirstWord, kDawdle, "words-slow");
  char *unchecked =
      wrote
          ? replaced(edited,
                     "        while ((unsigned int)(w[i] >> 32) != mark)\n"
                     "          w[i] = rk_pa_peek_dev_u64(a->req + 8u * i);\n",
                     "        (void)mark;\n", 1, "words-unchecked")
          : NULL;
  wrote = unchecked != NULL &&
          write_bug(unchecked, bug3, kFirstWord, kDawdle, "words-unchecked");
  free(unchecked);
  free(edited);
  if (!wrote) return;

  const char *defines[] = {define, define1, define2, define3, define4};
  const char *none[] = {"-DRK_HARNESS_DEFAULTS", "-DRK_HARNESS_DEFAULTS",
                        "-DRK_HARNESS_DEFAULTS"};
  if (build_harness(defines, none, bin) != 1) return;
  run_harness(bin, NULL, 0, NULL);
  /* Negative controls: each broken protocol must fail the pipeline. */
  run_harness(bin, "no-credit", 1, "stuck");
  run_harness(bin, "publish-early", 1, "k2k-sink: count");
  run_harness(bin, "words-unchecked", 1, "k2k-sink:");
  /* Not a bug: a slow sender of word slots, waited for. */
  run_harness(bin, "words-slow", 0, "passed");
  /* The tuning macros' other paths (docs/cuda.md, "Tuning the resident
   * loop"), with every scenario: the poll that also loads `open`,
   * `open` kept for a while, and the host's words read less often while
   * messages flow for a shorter while than by default. */
  char tuned[1100];
  snprintf(tuned, sizeof tuned, "%s_tuned", bin);
  const char *tuning[] = {"-DRK_PA_PEEK_WORDS=2", "-DRK_PA_OPEN_EVERY=4096",
                          "-DRK_PA_HOST_BUSY=2048"};
  if (build_harness(defines, tuning, tuned) == 1)
    run_harness(tuned, NULL, 0, NULL);
}

int main(void) {
  test_other_targets_refuse();
  test_corpus_placement();
  char *src = all_actors(false);
  char *text = NULL;
  if (src && CHECK_OK(transpile(src, "all_actors.c", RK_TARGET_CUDA, true, NULL,
                                &text))) {
    test_module_layout(text);
    test_entry_option(src);
    test_abi_numbers(text);
  }
  rk_transpile_free(text);
  free(src);
  /* With the K2K actors: NVRTC and the host-thread run. */
  src = all_actors(true);
  text = NULL;
  if (src && CHECK_OK(transpile(src, "all_actors.c", RK_TARGET_CUDA, true, NULL,
                                &text))) {
    test_nvrtc(text);
    test_on_host_threads(text);
  }
  rk_transpile_free(text);
  free(src);
  test_golden();
  return rk_test_finish("codegen_cuda_actor");
}
