/* The trace recorder (rk/trace.h): start and stop and their errors, the
 * event bound and the "dropped" record, "%p" in the path, JSON escaping,
 * thread names, a failed write, writers on several threads while traces
 * start and stop (run under TSan), and a forked child that exits. The full
 * check of a known program's events is check_trace.py's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RK_TEST_IMPLEMENTATION
#include "base/platform.h"
#include "base/sys.h"
#include "rk_test.h"

static rk_backend_t *g_be;
static rk_context_t *g_ctx;

static char *read_all(const char *path) {
  char *data = NULL;
  size_t n = 0;
  if (rk__read_file(path, &data, &n) != RK_OK) return NULL;
  return data;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void some_events(int count) {
  for (int i = 0; i < count; ++i) {
    rk_devptr_t p;
    if (rk_context_allocate(g_ctx, 64, &p) == RK_OK) rk_context_free(g_ctx, p);
  }
}

/* A JSON document's outline: balanced braces and brackets outside
 * strings, and the closing of rk's object form. */
static bool looks_whole(const char *s) {
  int depth = 0;
  bool in_str = false;
  for (const char *p = s; *p; ++p) {
    if (in_str) {
      if (*p == '\\' && p[1])
        ++p;
      else if (*p == '"')
        in_str = false;
      else if ((unsigned char)*p < 0x20)
        return false;
    } else if (*p == '"') {
      in_str = true;
    } else if (*p == '{' || *p == '[') {
      ++depth;
    } else if (*p == '}' || *p == ']') {
      if (--depth < 0) return false;
    }
  }
  size_t n = strlen(s);
  return depth == 0 && !in_str && n > 3 && strcmp(s + n - 3, "}}\n") == 0;
}

static void test_errors(const char *dir) {
  CHECK_STATUS(rk_trace_stop(), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("no trace is running");
  CHECK_STATUS(rk_trace_start(NULL, NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_trace_start("", NULL), RK_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(rk_trace_start(dir, NULL), RK_ERR_INVALID_ARGUMENT);
  char path[4096];
  snprintf(path, sizeof path, "%s/no/such/dir/t.json", dir);
  rk_test_clear_error();
  CHECK(rk_trace_start(path, NULL) != RK_OK, "a path in no directory");
  CHECK(!rk_trace_active(), "a failed start left a trace running");
  rk_trace_options_t o;
  rk_trace_options_init(&o);
  o.max_events = (size_t)1 << 30;
  snprintf(path, sizeof path, "%s/big.json", dir);
  CHECK_STATUS(rk_trace_start(path, &o), RK_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("max_events");
}

static void test_round_trip(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/one.json", dir);
  if (!CHECK_OK(rk_trace_start(path, NULL))) return;
  CHECK(rk_trace_active(), "not active after start");
  CHECK_STATUS(rk_trace_start(path, NULL), RK_ERR_INVALID_STATE);
  CHECK_ERROR_HAS("already running");
  rk_trace_range_push("quote \" back \\ newline \n byte \xc3\xa9");
  some_events(3);
  rk_trace_range_pop();
  CHECK(!exists(path), "the file was written before stop");
  CHECK_OK(rk_trace_stop());
  CHECK(!rk_trace_active(), "active after stop");
  char *text = read_all(path);
  if (!CHECK(text != NULL, "no trace file %s", path)) return;
  CHECK(looks_whole(text), "not a whole JSON object:\n%s", text);
  CHECK(strstr(text, "\"name\":\"allocate\",\"cat\":\"memory\",\"ph\":\"X\""),
        "no allocate slice");
  CHECK(strstr(text,
               "\"quote \\\" back \\\\ newline \\n byte "
               "\\u00c3\\u00a9\""),
        "the range's name is not escaped:\n%.*s", (int)strlen(text), text);
  CHECK(strstr(text, "\"dropped_events\":0,"), "events were dropped");
  CHECK(strstr(text, "\"name\":\"thread_name\""), "no thread name");
  free(text);
  /* Stopped, nothing is recorded. */
  some_events(2);
  CHECK_STATUS(rk_trace_stop(), RK_ERR_INVALID_STATE);
}

static void test_bound(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/bounded.json", dir);
  rk_trace_options_t o;
  rk_trace_options_init(&o);
  o.max_events = 10;
  if (!CHECK_OK(rk_trace_start(path, &o))) return;
  some_events(100);
  CHECK_OK(rk_trace_stop());
  char *text = read_all(path);
  if (!CHECK(text != NULL, "no trace file")) return;
  CHECK(looks_whole(text), "not whole");
  CHECK(strstr(text, "\"events\":10,\"dropped_events\":191,"),
        "10 kept, 191 dropped (1 thread name + 200 slices - 10):\n%s",
        strstr(text, "\"otherData\""));
  CHECK(strstr(text, "\"name\":\"rk: 191 events dropped (trace full)\""),
        "no dropped marker");
  CHECK(strstr(text, "\"max_events\":10}"), "max_events");
  free(text);
}

static void test_pid_path(const char *dir) {
  char path[4096], want[4096];
  snprintf(path, sizeof path, "%s/p-%%p.json", dir);
  snprintf(want, sizeof want, "%s/p-%d.json", dir, (int)getpid());
  if (!CHECK_OK(rk_trace_start(path, NULL))) return;
  some_events(1);
  CHECK_OK(rk_trace_stop());
  CHECK(exists(want), "no %s", want);
}

static void test_failed_write(const char *dir) {
  char sub[2048], path[4096];
  snprintf(sub, sizeof sub, "%s/gone", dir);
  snprintf(path, sizeof path, "%s/t.json", sub);
  if (!CHECK(mkdir(sub, 0700) == 0, "mkdir")) return;
  if (!CHECK_OK(rk_trace_start(path, NULL))) return;
  some_events(1);
  rmdir(sub);
  CHECK_STATUS(rk_trace_stop(), RK_ERR_UNAVAILABLE);
  CHECK_ERROR_HAS("trace_stop");
  CHECK(!rk_trace_active(), "still active after a failed stop");
  snprintf(path, sizeof path, "%s/after.json", dir);
  CHECK_OK(rk_trace_start(path, NULL));
  CHECK_OK(rk_trace_stop());
}

/* Last: the child's exit runs every atexit handler, the removal of the
 * test's temporary directory included, so this test has its own. */
static void test_fork(void) {
  char dir[] = "/tmp/rk-trace-fork-XXXXXX";
  if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp")) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/fork.json", dir);
  if (!CHECK_OK(rk_trace_start(path, NULL))) return;
  some_events(1);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) exit(0); /* runs the atexit handlers: no write */
  int status = -1;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d",
        status);
  CHECK(!exists(path), "the forked child wrote the parent's trace");
  CHECK_OK(rk_trace_stop());
  CHECK(exists(path), "no trace after stop");
  unlink(path);
  rmdir(dir);
}

typedef struct worker {
  pthread_t thread;
  int stop;
  char name[16];
  long events;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  rk__set_thread_name(w->name);
  while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
    rk_trace_range_push("step");
    some_events(4);
    rk_trace_range_pop();
    ++w->events;
  }
  return NULL;
}

static void test_concurrent(const char *dir) {
  enum { kWorkers = 3, kTraces = 12 };
  worker_t w[kWorkers];
  memset(w, 0, sizeof w);
  for (int i = 0; i < kWorkers; ++i) {
    snprintf(w[i].name, sizeof w[i].name, "tracer-%u", (unsigned)i % 10u);
    pthread_create(&w[i].thread, NULL, work, &w[i]);
  }
  int whole = 0, named = 0;
  for (int t = 0; t < kTraces; ++t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/c%d.json", dir, t);
    rk_trace_options_t o;
    rk_trace_options_init(&o);
    o.max_events = t % 2 ? 50 : 100000; /* full traces and roomy ones */
    if (!CHECK_OK(rk_trace_start(path, &o))) break;
    usleep(2000);
    if (!CHECK_OK(rk_trace_stop())) break;
    char *text = read_all(path);
    if (text && looks_whole(text)) ++whole;
    if (text && strstr(text, "\"args\":{\"name\":\"tracer-")) ++named;
    free(text);
    unlink(path);
  }
  for (int i = 0; i < kWorkers; ++i) {
    __atomic_store_n(&w[i].stop, 1, __ATOMIC_RELEASE);
    pthread_join(w[i].thread, NULL);
  }
  CHECK(whole == kTraces, "%d of %d traces whole", whole, kTraces);
#if RK__LINUX || RK__APPLE
  CHECK(named > 0, "no trace named a worker thread");
#else
  (void)named; /* POSIX has no thread names */
#endif
  CHECK(w[0].events > 0, "the workers did nothing");
}

int main(void) {
  if (getenv("RK_TRACE")) RK_TEST_SKIP("RK_TRACE is set: a trace runs");
  const char *dir = rk_test_temp_dir();
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &g_be)) ||
      !CHECK_OK(rk_backend_create_context(g_be, 0, &g_ctx)))
    return rk_test_finish("trace_api");
  CHECK(!rk_trace_active(), "a trace runs without RK_TRACE");
  test_errors(dir);
  test_round_trip(dir);
  test_bound(dir);
  test_pid_path(dir);
  test_failed_write(dir);
  test_concurrent(dir);
  test_fork();
  rk_context_destroy(g_ctx);
  rk_backend_destroy(g_be);
  return rk_test_finish("trace_api");
}
