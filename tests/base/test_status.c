/* base: status names, and the per-thread error message (isolation between
 * threads, unchanged by successful calls, safe truncation). */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "base/error.h"
#include "base/sys.h"
#include "rk_test.h"

enum { kCapacity = 16384 }; /* the message buffer (base/status.c) */
static const char kMarker[] = "[... message truncated]";

/* ---- Status names ------------------------------------------------------- */

static void test_status_names(void) {
  static const struct {
    rk_status_t status;
    const char *text;
  } kTable[] = {
#define ROW_(name, text) {RK_##name, text},
      RK_STATUS_LIST(ROW_)
#undef ROW_
  };
  const size_t n = sizeof kTable / sizeof kTable[0];
  CHECK(n == RK_STATUS_COUNT_, "table has %zu rows, enum %d", n,
        (int)RK_STATUS_COUNT_);
  CHECK(RK_OK == 0, "RK_OK is %d", (int)RK_OK);
  for (size_t i = 0; i < n; ++i) {
    CHECK((size_t)kTable[i].status == i, "code %zu has value %d", i,
          (int)kTable[i].status);
    const char *name = rk_status_name(kTable[i].status);
    CHECK(name != NULL && name[0] != '\0', "status %zu has an empty name", i);
    if (!name) continue;
    CHECK(strcmp(name, kTable[i].text) == 0,
          "status %zu is '%s', expected '%s'", i, name, kTable[i].text);
    CHECK(strcmp(name, "unknown status") != 0, "status %zu is unknown", i);
    for (size_t j = 0; j < i; ++j)
      CHECK(strcmp(name, rk_status_name(kTable[j].status)) != 0,
            "statuses %zu and %zu share the name '%s'", j, i, name);
  }
  const int outside[] = {RK_STATUS_COUNT_, RK_STATUS_COUNT_ + 1, 1000, -1,
                         -1000};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; ++i) {
    const char *name = rk_status_name((rk_status_t)outside[i]);
    CHECK(name && strcmp(name, "unknown status") == 0,
          "status %d is '%s', expected 'unknown status'", outside[i],
          name ? name : "(null)");
  }
}

static void test_version(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", RK_VERSION_MAJOR, RK_VERSION_MINOR,
           RK_VERSION_PATCH);
  CHECK(strcmp(rk_version(), want) == 0,
        "rk_version() is '%s', headers say '%s'", rk_version(), want);
}

/* ---- Per-thread messages ------------------------------------------------ */

typedef struct thread_arg {
  const char *name; /* a bogus backend name, unique to the thread */
  rk__barrier_t *barrier;
  char initial[64];
  char final[256];
} thread_arg_t;

static void *error_thread(void *p) {
  thread_arg_t *a = p;
  snprintf(a->initial, sizeof a->initial, "%s", rk_last_error());
  rk_backend_kind_t k;
  rk_backend_kind_from_name(a->name, &k);
  /* Both threads have set their message before either reads it. */
  rk__barrier_wait(a->barrier);
  snprintf(a->final, sizeof a->final, "%s", rk_last_error());
  rk__barrier_wait(a->barrier);
  return NULL;
}

static void test_per_thread(void) {
  rk_backend_kind_t k;
  CHECK_STATUS(rk_backend_kind_from_name("main-thread-name", &k),
               RK_ERR_INVALID_ARGUMENT);
  rk__barrier_t barrier;
  rk__barrier_init(&barrier, 2);
  thread_arg_t a = {"thread-a-name", &barrier, "", ""};
  thread_arg_t b = {"thread-b-name", &barrier, "", ""};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, error_thread, &a);
  pthread_create(&tb, NULL, error_thread, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  rk__barrier_destroy(&barrier);
  CHECK(a.initial[0] == '\0', "a new thread starts with message '%s'",
        a.initial);
  CHECK(b.initial[0] == '\0', "a new thread starts with message '%s'",
        b.initial);
  CHECK(strstr(a.final, "thread-a-name") && !strstr(a.final, "thread-b-name"),
        "thread a sees '%s'", a.final);
  CHECK(strstr(b.final, "thread-b-name") && !strstr(b.final, "thread-a-name"),
        "thread b sees '%s'", b.final);
  CHECK_ERROR_HAS("main-thread-name");
  CHECK(!strstr(rk_last_error(), "thread-a-name") &&
            !strstr(rk_last_error(), "thread-b-name"),
        "the main thread's message changed: '%s'", rk_last_error());
}

/* Successful calls leave the message alone. */
static void test_success_keeps_message(void) {
  rk_backend_kind_t k;
  CHECK_STATUS(rk_backend_kind_from_name("keep-me", &k),
               RK_ERR_INVALID_ARGUMENT);
  CHECK_OK(rk_backend_kind_from_name("cpu", &k));
  rk_backend_t *be = NULL;
  CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be));
  CHECK_OK(rk_backend_destroy(be));
  CHECK_ERROR_HAS("keep-me");
}

/* ---- Truncation --------------------------------------------------------- */

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The message for an unknown backend name of `len` x's. */
static const char *bogus_name_message(size_t len) {
  char *name = malloc(len + 1);
  memset(name, 'x', len);
  name[len] = '\0';
  rk_backend_kind_t k;
  rk_backend_kind_from_name(name, &k);
  free(name);
  return rk_last_error();
}

static void test_truncation(void) {
  /* The fixed part of the message around the name. */
  size_t fixed = strlen(bogus_name_message(1)) - 1;

  /* The longest message that fits is kept whole. */
  size_t fits = kCapacity - 1 - fixed;
  const char *m = bogus_name_message(fits);
  CHECK(strlen(m) == kCapacity - 1, "message of %zu chars kept as %zu",
        (size_t)kCapacity - 1, strlen(m));
  CHECK(!strstr(m, kMarker), "a message that fits was marked truncated");
  CHECK(ends_with(m, "opencl)"), "the message lost its end");

  /* One more character: truncated, terminated, marked. */
  m = bogus_name_message(fits + 1);
  CHECK(strlen(m) < kCapacity, "message is %zu chars", strlen(m));
  CHECK(ends_with(m, kMarker), "a truncated message has no marker: ...%s",
        m + (strlen(m) > 40 ? strlen(m) - 40 : 0));
  CHECK(strncmp(m, "unknown backend 'xxx", 20) == 0, "start lost: %.40s", m);

  /* Far too long. */
  m = bogus_name_message(100000);
  CHECK(strlen(m) < kCapacity && ends_with(m, kMarker),
        "100000-char name: %zu chars", strlen(m));

  /* A context prefix added to a full message: still bounded, prefix
   * first (RK_BACKEND=<long name> goes through rk__fail_context). */
  char *env = malloc(30001);
  memset(env, 'y', 30000);
  env[30000] = '\0';
  setenv("RK_BACKEND", env, 1);
  rk_backend_t *be = NULL;
  CHECK_STATUS(rk_backend_open(RK_BACKEND_AUTO, &be), RK_ERR_INVALID_ARGUMENT);
  unsetenv("RK_BACKEND");
  free(env);
  m = rk_last_error();
  CHECK(strlen(m) < kCapacity, "prefixed message is %zu chars", strlen(m));
  CHECK(strncmp(m, "RK_BACKEND: unknown backend 'yyy", 32) == 0,
        "prefixed message starts: %.60s", m);

  /* The internal helpers directly: a prefix longer than its own buffer on
   * top of a full message. */
  char big[700];
  memset(big, 'p', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  bogus_name_message(50000);
  rk__fail_context(RK_ERR_INTERNAL, "%s", big);
  m = rk_last_error();
  CHECK(strlen(m) < kCapacity, "double-truncated message is %zu chars",
        strlen(m));
  CHECK(strncmp(m, "ppp", 3) == 0, "prefix missing: %.20s", m);
  /* Formatting that fails (an invalid wide character) still leaves a
   * message: the status name. */
  rk__fail(RK_ERR_TIMEOUT, "%ls", (const wchar_t[]){0x7fffffff, 0});
  CHECK(rk_last_error()[0] != '\0', "no message after a formatting error");
}

/* A stash puts the message back only when told to, short or long. */
static void test_stash(void) {
  rk__fail(RK_ERR_TIMEOUT, "the caller's message");
  rk__error_stash_t st;
  rk__error_stash(&st);
  rk__fail(RK_ERR_INTERNAL, "a recovered failure");
  rk__error_unstash(&st, true);
  CHECK(strcmp(rk_last_error(), "the caller's message") == 0,
        "short message put back: '%s'", rk_last_error());
  rk__error_stash(&st);
  rk__fail(RK_ERR_INTERNAL, "kept");
  rk__error_unstash(&st, false);
  CHECK(strcmp(rk_last_error(), "kept") == 0, "not put back: '%s'",
        rk_last_error());
  char long_text[1000];
  memset(long_text, 'x', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  rk__fail(RK_ERR_TIMEOUT, "%s", long_text);
  rk__error_stash(&st);
  rk__fail(RK_ERR_INTERNAL, "a recovered failure");
  rk__error_unstash(&st, true);
  CHECK(strcmp(rk_last_error(), long_text) == 0,
        "a message longer than the stash put back whole (%zu chars)",
        strlen(rk_last_error()));
  rk__error_stash(&st);
  rk__error_unstash(&st, false); /* frees the long copy */
}

int main(void) {
  test_status_names();
  test_stash();
  test_version();
  test_per_thread();
  test_success_keeps_message();
  test_truncation();
  return rk_test_finish("base_status");
}
