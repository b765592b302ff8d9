/* rk's trace: a bounded in-memory event buffer written as Chrome
 * trace-event JSON (rk/trace.h for the user's side, base/trace.h for the
 * hooks').
 *
 * Events live in chunks of kChunkEvents, allocated when first reached; a
 * writer claims a slot with one atomic increment of `next`, fills it and
 * leaves. Stopping clears the RECORD flag and then waits until no writer is
 * inside (the `writers` count, raised before a writer looks at the flag), so
 * every claimed slot is complete before it is read and freed.
 */
#include "base/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "base/nvtx.h"
#include "base/platform.h"
#include "base/strbuf.h"
#include "base/sys.h"
#include "rk/rk.h"

uint32_t rk__trace_flags;

enum {
  kText = 136,           /* name, keys and string values, NUL-separated */
  kChunkEvents = 4096,   /* events per allocation (1 MiB) */
  kDefaultMax = 1 << 18, /* 262144 events, 64 MiB at most */
};

typedef enum arg_kind {
  ARG_STR = 1,
  ARG_INT,
  ARG_UINT,
  ARG_NUM,
  ARG_BOOL,
} arg_kind_t;

struct rk__trace_event {
  uint64_t ts_ns;
  uint64_t dur_ns;
  uint64_t id; /* flow id */
  int32_t tid;
  char ph; /* 0: never written */
  uint8_t nargs;
  uint8_t text_used;
  uint8_t pad;
  const char *cat;
  uint8_t key_at[RK__TRACE_MAX_ARGS]; /* offsets into text */
  uint8_t kind[RK__TRACE_MAX_ARGS];
  union {
    int64_t i;
    uint64_t u;
    double d;
    uint64_t at; /* ARG_STR: offset of the value in text */
  } val[RK__TRACE_MAX_ARGS];
  char text[kText];
};
_Static_assert(sizeof(struct rk__trace_event) == 256,
               "trace events are 256 bytes");
_Static_assert(kText <= 255, "text offsets are bytes");

static struct {
  pthread_mutex_t lock; /* start and stop */
  bool recording;       /* under lock */
  bool atexit_done;     /* under lock */
  char path[4096];
  pid_t pid;
  size_t cap;                 /* most events */
  rk__trace_event_t **chunks; /* cap / kChunkEvents rounded up; atomic */
  size_t nchunks;
  uint64_t next;    /* atomic: slots claimed */
  uint64_t dropped; /* atomic */
  uint32_t writers; /* atomic: writers inside */
  uint32_t session; /* atomic: bumped by every start */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int32_t tl_tid;
static _Thread_local uint32_t tl_session; /* the session that named us */

static int32_t thread_id(void) {
  if (tl_tid == 0) tl_tid = rk__thread_id();
  return tl_tid;
}

/* ---- Writing events ----------------------------------------------------- */

static void leave(void) { __atomic_sub_fetch(&g.writers, 1, __ATOMIC_RELEASE); }

/* Enters as a writer; false (not entered) when nothing is recording. */
static bool enter(void) {
  /* Raised before the flag is read, both sequentially consistent: either
   * stop() sees this writer and waits, or this writer sees the flag clear
   * (the store-then-load handshake of a Dekker lock). */
  __atomic_add_fetch(&g.writers, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&rk__trace_flags, __ATOMIC_SEQ_CST) & RK__TRACE_RECORD)
    return true;
  leave();
  return false;
}

/* The slot of claim `i`, allocating its chunk; NULL when out of memory. */
static rk__trace_event_t *slot(uint64_t i) {
  size_t c = (size_t)(i / kChunkEvents);
  rk__trace_event_t *chunk = __atomic_load_n(&g.chunks[c], __ATOMIC_ACQUIRE);
  if (!chunk) {
    rk__trace_event_t *fresh = calloc(kChunkEvents, sizeof *fresh);
    if (!fresh) return NULL;
    rk__trace_event_t *expected = NULL;
    /* Release: the zeroed chunk is visible before its pointer. */
    if (__atomic_compare_exchange_n(&g.chunks[c], &expected, fresh, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      chunk = fresh;
    } else {
      free(fresh);
      chunk = expected;
    }
  }
  return &chunk[i % kChunkEvents];
}

/* Claims a slot (the caller has entered); NULL when the trace is full. */
static rk__trace_event_t *claim(void) {
  uint64_t i = __atomic_fetch_add(&g.next, 1, __ATOMIC_RELAXED);
  rk__trace_event_t *e = i < g.cap ? slot(i) : NULL;
  if (!e) __atomic_add_fetch(&g.dropped, 1, __ATOMIC_RELAXED);
  return e;
}

/* Copies s (truncated) into e's text; its offset, or -1 without room. */
static int put_text(rk__trace_event_t *e, const char *s) {
  size_t room = kText - e->text_used;
  if (room < 2) return -1;
  size_t n = strlen(s);
  if (n > room - 1) n = room - 1;
  int at = e->text_used;
  memcpy(e->text + at, s, n);
  e->text[at + n] = '\0';
  e->text_used = (uint8_t)(e->text_used + n + 1);
  return at;
}

static rk__trace_event_t *new_event(char ph, const char *cat, const char *name,
                                    uint64_t ts_ns, uint64_t dur_ns,
                                    uint64_t id);

/* The first event of a thread in a session names the thread. */
static void name_thread(void) {
  uint32_t session = __atomic_load_n(&g.session, __ATOMIC_RELAXED);
  if (tl_session == session) return;
  tl_session = session;
  char name[16] = "";
#if RK__LINUX || RK__APPLE
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0) name[0] = 0;
#endif
  if (!name[0]) snprintf(name, sizeof name, "thread %d", (int)thread_id());
  rk__trace_event_t *e = new_event('M', "__metadata", "thread_name", 0, 0, 0);
  rk__trace_arg_str(e, "name", name);
  rk__trace_commit(e);
}

/* Enters, claims and fills the fixed fields; NULL when not recording or
 * full. The caller commits (which leaves). */
static rk__trace_event_t *new_event(char ph, const char *cat, const char *name,
                                    uint64_t ts_ns, uint64_t dur_ns,
                                    uint64_t id) {
  if (!enter()) return NULL;
  if (ph != 'M') name_thread();
  rk__trace_event_t *e = claim();
  if (!e) {
    leave();
    return NULL;
  }
  e->ts_ns = ts_ns;
  e->dur_ns = dur_ns;
  e->id = id;
  e->tid = thread_id();
  e->cat = cat;
  e->nargs = 0;
  e->text_used = 0;
  put_text(e, name ? name : "");
  /* Written last: a slot with ph 0 was claimed but never filled. */
  e->ph = ph;
  return e;
}

void rk__trace_commit(rk__trace_event_t *e) {
  if (e) leave();
}

void rk__trace_span_begin(rk__trace_span_t *span, const char *name) {
  span->name = name;
  span->nvtx =
      __atomic_load_n(&rk__trace_flags, __ATOMIC_RELAXED) & RK__TRACE_NVTX;
  if (span->nvtx) rk__nvtx_push(name);
  span->t0 = rk__now_ns();
}

rk__trace_event_t *rk__trace_span_end(rk__trace_span_t *span, const char *cat) {
  uint64_t t1 = rk__now_ns();
  if (span->nvtx) rk__nvtx_pop();
  return new_event('X', cat, span->name, span->t0, t1 - span->t0, 0);
}

rk__trace_event_t *rk__trace_instant(const char *cat, const char *name) {
  if (__atomic_load_n(&rk__trace_flags, __ATOMIC_RELAXED) & RK__TRACE_NVTX)
    rk__nvtx_mark(name);
  return new_event('i', cat, name, rk__now_ns(), 0, 0);
}

rk__trace_event_t *rk__trace_flow(char ph, const char *cat, const char *name,
                                  uint64_t id) {
  return new_event(ph, cat, name, rk__now_ns(), 0, id);
}

rk__trace_event_t *rk__trace_begin_end(char ph, const char *cat,
                                       const char *name) {
  return new_event(ph, cat, name, rk__now_ns(), 0, 0);
}

/* Adds an argument slot with key `key`; its index, or -1 without room. */
static int add_arg(rk__trace_event_t *e, const char *key, arg_kind_t kind) {
  if (!e || e->nargs >= RK__TRACE_MAX_ARGS) return -1;
  int at = put_text(e, key);
  if (at < 0) return -1;
  int i = e->nargs++;
  e->key_at[i] = (uint8_t)at;
  e->kind[i] = (uint8_t)kind;
  return i;
}

void rk__trace_arg_str(rk__trace_event_t *e, const char *key,
                       const char *value) {
  uint8_t used = e ? e->text_used : 0;
  int i = add_arg(e, key, ARG_STR);
  if (i < 0) return;
  int at = put_text(e, value ? value : "");
  if (at < 0) { /* no room for the value: drop the key too */
    e->nargs--;
    e->text_used = used;
    return;
  }
  e->val[i].at = (uint64_t)at;
}

void rk__trace_arg_int(rk__trace_event_t *e, const char *key, int64_t value) {
  int i = add_arg(e, key, ARG_INT);
  if (i >= 0) e->val[i].i = value;
}

void rk__trace_arg_uint(rk__trace_event_t *e, const char *key, uint64_t value) {
  int i = add_arg(e, key, ARG_UINT);
  if (i >= 0) e->val[i].u = value;
}

void rk__trace_arg_num(rk__trace_event_t *e, const char *key, double value) {
  int i = add_arg(e, key, ARG_NUM);
  if (i >= 0) e->val[i].d = value;
}

void rk__trace_arg_bool(rk__trace_event_t *e, const char *key, bool value) {
  int i = add_arg(e, key, ARG_BOOL);
  if (i >= 0) e->val[i].u = value;
}

void rk__trace_arg_status(rk__trace_event_t *e, rk_status_t status) {
  if (!e) return;
  rk__trace_arg_str(e, "status",
                    status == RK_OK ? "ok" : rk_status_name(status));
  if (status != RK_OK) rk__trace_arg_str(e, "error", rk_last_error());
}

/* ---- The user's ranges -------------------------------------------------- */

void rk_trace_range_push(const char *name) {
  if (!rk__trace_on()) return;
  if (!name) name = "";
  if (__atomic_load_n(&rk__trace_flags, __ATOMIC_RELAXED) & RK__TRACE_NVTX)
    rk__nvtx_push(name);
  rk__trace_commit(rk__trace_begin_end('B', "user", name));
}

void rk_trace_range_pop(void) {
  if (!rk__trace_on()) return;
  if (__atomic_load_n(&rk__trace_flags, __ATOMIC_RELAXED) & RK__TRACE_NVTX)
    rk__nvtx_pop();
  rk__trace_commit(rk__trace_begin_end('E', "user", NULL));
}

/* ---- Writing the file --------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped, and
 * bytes outside ASCII as \u00XX, so any input gives valid JSON. */
static void put_json_string(rk__strbuf_t *sb, const char *s) {
  rk__strbuf_puts(sb, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    if (*p == '"' || *p == '\\') {
      char esc[3] = {'\\', (char)*p, '\0'};
      rk__strbuf_puts(sb, esc);
    } else if (*p == '\n') {
      rk__strbuf_puts(sb, "\\n");
    } else if (*p < 0x20 || *p >= 0x7f) {
      rk__strbuf_printf(sb, "\\u%04x", (unsigned)*p);
    } else {
      rk__strbuf_append(sb, (const char *)p, 1);
    }
  }
  rk__strbuf_puts(sb, "\"");
}

static void put_json_number(rk__strbuf_t *sb, double v) {
  if (isfinite(v))
    rk__strbuf_printf(sb, "%.9g", v);
  else
    rk__strbuf_puts(sb, "null");
}

/* Microseconds with nanosecond digits, as trace viewers read "ts". */
static void put_us(rk__strbuf_t *sb, uint64_t ns) {
  rk__strbuf_printf(sb, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_event(rk__strbuf_t *sb, const rk__trace_event_t *e, int pid) {
  char ph[2] = {e->ph, '\0'};
  rk__strbuf_puts(sb, "{\"name\":");
  put_json_string(sb, e->text);
  if (e->ph != 'M') {
    rk__strbuf_puts(sb, ",\"cat\":");
    put_json_string(sb, e->cat ? e->cat : "rk");
  }
  rk__strbuf_printf(sb, ",\"ph\":\"%s\",\"pid\":%d,\"tid\":%d", ph, pid,
                    (int)e->tid);
  if (e->ph != 'M') {
    rk__strbuf_puts(sb, ",\"ts\":");
    put_us(sb, e->ts_ns);
  }
  if (e->ph == 'X') {
    rk__strbuf_puts(sb, ",\"dur\":");
    put_us(sb, e->dur_ns);
  }
  if (e->ph == 'i') rk__strbuf_puts(sb, ",\"s\":\"t\"");
  if (e->ph == 's' || e->ph == 't' || e->ph == 'f')
    rk__strbuf_printf(sb, ",\"id\":%" PRIu64, e->id);
  if (e->ph == 'f') rk__strbuf_puts(sb, ",\"bp\":\"e\"");
  if (e->nargs) {
    rk__strbuf_puts(sb, ",\"args\":{");
    for (int i = 0; i < e->nargs; ++i) {
      if (i) rk__strbuf_puts(sb, ",");
      put_json_string(sb, e->text + e->key_at[i]);
      rk__strbuf_puts(sb, ":");
      switch ((arg_kind_t)e->kind[i]) {
        case ARG_STR:
          put_json_string(sb, e->text + e->val[i].at);
          break;
        case ARG_INT:
          rk__strbuf_printf(sb, "%" PRId64, e->val[i].i);
          break;
        case ARG_UINT:
          rk__strbuf_printf(sb, "%" PRIu64, e->val[i].u);
          break;
        case ARG_NUM:
          put_json_number(sb, e->val[i].d);
          break;
        case ARG_BOOL:
          rk__strbuf_puts(sb, e->val[i].u ? "true" : "false");
          break;
      }
    }
    rk__strbuf_puts(sb, "}");
  }
  rk__strbuf_puts(sb, "}");
}

/* The whole trace as JSON (the object form, with the events in
 * "traceEvents" and rk's totals in "otherData"). */
static void format_trace(rk__strbuf_t *sb, uint64_t kept, uint64_t dropped) {
  int pid = (int)g.pid;
  rk__strbuf_puts(sb, "{\"traceEvents\":[\n");
  rk__strbuf_printf(sb,
                    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                    "\"tid\":%d,\"args\":{\"name\":",
                    pid, pid);
  put_json_string(sb, rk__program_name());
  rk__strbuf_puts(sb, "}}");
  uint64_t last_ts = 0, written = 0;
  for (uint64_t i = 0; i < kept; ++i) {
    const rk__trace_event_t *chunk = g.chunks[i / kChunkEvents];
    if (!chunk) continue;
    const rk__trace_event_t *e = &chunk[i % kChunkEvents];
    if (!e->ph) continue;
    rk__strbuf_puts(sb, ",\n");
    put_event(sb, e, pid);
    ++written;
    uint64_t end = e->ts_ns + e->dur_ns;
    if (end > last_ts) last_ts = end;
  }
  if (dropped) {
    /* Visible on the timeline too, at the end of what was kept. */
    rk__strbuf_printf(sb,
                      ",\n{\"name\":\"rk: %" PRIu64
                      " events dropped (trace full)\",\"cat\":\"rk\","
                      "\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":%d,"
                      "\"ts\":",
                      dropped, pid, pid);
    put_us(sb, last_ts);
    rk__strbuf_printf(sb, ",\"args\":{\"dropped\":%" PRIu64 "}}", dropped);
  }
  rk__strbuf_printf(sb,
                    "\n],\n\"displayTimeUnit\":\"ns\",\n"
                    "\"otherData\":{\"producer\":\"rk %s\",\"events\":%" PRIu64
                    ",\"dropped_events\":%" PRIu64 ",\"max_events\":%zu}}\n",
                    rk_version(), written, dropped, g.cap);
}

/* ---- Start and stop ----------------------------------------------------- */

void rk_trace_options_init(rk_trace_options_t *options) {
  if (options) memset(options, 0, sizeof *options);
}

/* `path` with "%p" replaced by the process id, into out[0..cap). */
static bool expand_path(const char *path, char *out, size_t cap) {
  size_t used = 0;
  for (const char *p = path; *p; ++p) {
    char pidbuf[24];
    const char *piece = p;
    size_t n = 1;
    if (p[0] == '%' && p[1] == 'p') {
      n = (size_t)snprintf(pidbuf, sizeof pidbuf, "%d", (int)getpid());
      piece = pidbuf;
      ++p;
    }
    if (used + n >= cap) return false;
    memcpy(out + used, piece, n);
    used += n;
  }
  out[used] = '\0';
  return true;
}

static void stop_at_exit(void);

rk_status_t rk_trace_start(const char *path,
                           const rk_trace_options_t *options) {
  if (!path || !*path)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "trace_start: path must not be NULL or empty");
  size_t cap = options ? options->max_events : 0;
  if (cap == 0) {
    long v = kDefaultMax;
    RK_RETURN_IF_ERROR(rk__env_long("RK_TRACE_MAX_EVENTS", 1, 1L << 26, &v));
    cap = (size_t)v;
  }
  if (cap > (size_t)1 << 26)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "trace_start: max_events %zu is over the limit of %zu", cap,
                    (size_t)1 << 26);
  char full[sizeof g.path];
  if (!expand_path(path, full, sizeof full))
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "trace_start: path is too long");
  RK_RETURN_IF_ERROR(rk__write_file_check(full, RK__WRITE_SPECIAL_IN_PLACE));

  pthread_mutex_lock(&g.lock);
  if (g.recording) {
    pthread_mutex_unlock(&g.lock);
    return rk__fail(RK_ERR_INVALID_STATE,
                    "trace_start: a trace to '%s' is already running", g.path);
  }
  size_t nchunks = (cap + kChunkEvents - 1) / kChunkEvents;
  rk__trace_event_t **chunks = calloc(nchunks, sizeof *chunks);
  if (!chunks) {
    pthread_mutex_unlock(&g.lock);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "trace_start: %zu chunk pointers",
                    nchunks);
  }
  memcpy(g.path, full, strlen(full) + 1);
  g.pid = getpid();
  g.cap = cap;
  g.chunks = chunks;
  g.nchunks = nchunks;
  __atomic_store_n(&g.next, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g.dropped, 0, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g.session, 1, __ATOMIC_RELAXED);
  g.recording = true;
  if (!g.atexit_done) {
    g.atexit_done = true;
    atexit(stop_at_exit);
  }
  /* Sequentially consistent, pairing with enter(): a writer that sees the
   * flag also sees the buffer set up above. */
  __atomic_or_fetch(&rk__trace_flags, RK__TRACE_RECORD, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&g.lock);
  return RK_OK;
}

rk_status_t rk_trace_stop(void) {
  pthread_mutex_lock(&g.lock);
  if (!g.recording) {
    pthread_mutex_unlock(&g.lock);
    return rk__fail(RK_ERR_INVALID_STATE, "trace_stop: no trace is running");
  }
  __atomic_and_fetch(&rk__trace_flags, ~(uint32_t)RK__TRACE_RECORD,
                     __ATOMIC_SEQ_CST);
  /* Writers fill one event and leave; none blocks inside. */
  while (__atomic_load_n(&g.writers, __ATOMIC_ACQUIRE) != 0) sched_yield();
  g.recording = false;

  uint64_t claimed = __atomic_load_n(&g.next, __ATOMIC_RELAXED);
  uint64_t kept = claimed < g.cap ? claimed : g.cap;
  uint64_t dropped = __atomic_load_n(&g.dropped, __ATOMIC_RELAXED);
  rk__strbuf_t sb;
  rk__strbuf_init(&sb);
  format_trace(&sb, kept, dropped);
  for (size_t c = 0; c < g.nchunks; ++c) free(g.chunks[c]);
  free(g.chunks);
  g.chunks = NULL;
  g.nchunks = 0;
  rk_status_t s = RK_OK;
  if (sb.failed)
    s = rk__fail(RK_ERR_OUT_OF_MEMORY,
                 "trace_stop: formatting %" PRIu64 " events", kept);
  else
    s = rk__write_file_replace(g.path, sb.data, sb.len,
                               RK__WRITE_SPECIAL_IN_PLACE);
  rk__strbuf_free(&sb);
  pthread_mutex_unlock(&g.lock);
  if (s != RK_OK) return rk__fail_context(s, "trace_stop");
  return RK_OK;
}

bool rk_trace_active(void) {
  return __atomic_load_n(&rk__trace_flags, __ATOMIC_ACQUIRE) & RK__TRACE_RECORD;
}

/* At exit, the process that started the trace writes it (a forked child
 * that exits does not). */
static void stop_at_exit(void) {
  if (!rk_trace_active() || getpid() != g.pid) return;
  if (rk_trace_stop() != RK_OK)
    rk__log(RK__LOG_WARN, "RK_TRACE: %s", rk_last_error());
}

/* ---- From the environment, when the library loads ----------------------- */

/* RK_NVTX: "0" off, "1" on; unset, on when a tool is attached. */
static void nvtx_from_env(void) {
  const char *v = getenv("RK_NVTX");
  bool want =
      v && *v ? strcmp(v, "0") != 0 : getenv("NVTX_INJECTION64_PATH") != NULL;
  if (!want) return;
  char why[512];
  if (rk__nvtx_load(why, sizeof why))
    __atomic_or_fetch(&rk__trace_flags, RK__TRACE_NVTX, __ATOMIC_SEQ_CST);
  else if (v && *v)
    rk__log(RK__LOG_WARN, "RK_NVTX=%s: no NVTX library: %s", v, why);
}

__attribute__((constructor)) static void trace_from_env(void) {
  nvtx_from_env();
  const char *path = getenv("RK_TRACE");
  if (!path || !*path) return;
  char *saved = rk__error_save();
  if (rk_trace_start(path, NULL) != RK_OK)
    rk__log(RK__LOG_WARN, "RK_TRACE=%s: %s", path, rk_last_error());
  rk__error_restore(saved);
}
