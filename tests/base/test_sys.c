/* The operating-system helpers of base/sys.h that have a Linux and a POSIX
 * (macOS) path: waiting on a word (futex, or the table of condition
 * variables), monotonic condition-variable deadlines, anonymous files,
 * close-on-exec pipes, thread ids and names, the program's name and file.
 * Built both ways: normally, and with -DRK_PORTABLE_POSIX=ON (make
 * test-portable), which runs the POSIX paths on Linux. */
#define RK_TEST_IMPLEMENTATION
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/platform.h"
#include "base/sys.h"
#include "rk_test.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- Waiting on a word ---------------------------------------------------
 */

typedef struct waiter {
  pthread_t thread;
  uint32_t word;     /* what is waited on */
  uint32_t returned; /* set when one rk__wait_while_equal returned */
} waiter_t;

/* One wait, with no loop: it must block until rk__wake_all. */
static void *wait_once(void *arg) {
  waiter_t *w = arg;
  rk__wait_while_equal(&w->word, 0, 0);
  __atomic_store_n(&w->returned, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* The wait blocks: a changed word alone does not end it (as with a futex,
 * the waker must wake), and rk__wake_all does. A wait that only slept a
 * little and returned (the fallback rk had before) fails here. */
static void test_wait_blocks_until_woken(void) {
  waiter_t w = {0};
  if (!CHECK(pthread_create(&w.thread, NULL, wait_once, &w) == 0, "thread"))
    return;
  sleep_ms(50); /* let it block */
  __atomic_store_n(&w.word, 1, __ATOMIC_SEQ_CST);
  sleep_ms(100);
  CHECK(!__atomic_load_n(&w.returned, __ATOMIC_SEQ_CST),
        "the wait returned without a wake-up (it does not block)");
  rk__wake_all(&w.word);
  for (int i = 0; i < 5000 && !__atomic_load_n(&w.returned, __ATOMIC_SEQ_CST);
       ++i)
    sleep_ms(1);
  CHECK(__atomic_load_n(&w.returned, __ATOMIC_SEQ_CST),
        "rk__wake_all did not end the wait");
  pthread_join(w.thread, NULL);
}

static void test_wait_returns_at_once_when_changed(void) {
  uint32_t word = 5;
  uint64_t t0 = rk__now_ns();
  rk__wait_while_equal(&word, 4, 0); /* not equal: no wait */
  CHECK(rk__now_ns() - t0 < 2000000000u, "waited on a word that differs");
}

static void test_wait_timeout(void) {
  uint32_t word = 0;
  uint64_t t0 = rk__now_ns();
  rk__wait_while_equal(&word, 0, 30000000u); /* 30 ms */
  uint64_t took = rk__now_ns() - t0;
  /* Spurious returns are allowed, but not here: nothing else waits or wakes
   * on this word. */
  CHECK(took >= 25000000u, "a 30 ms wait returned after %llu ns",
        (unsigned long long)took);
  CHECK(took < 5000000000u, "a 30 ms wait took %llu ns",
        (unsigned long long)took);
}

/* Two threads hand a token back and forth through two words, many times;
 * a lost wake-up hangs one of them, which the watchdog reports. Many pairs
 * at once share the buckets of the POSIX path. */
enum { kPairs = 8, kHandoffs = 2000 };

typedef struct pair {
  uint32_t turn; /* 0: ping's turn, 1: pong's */
  uint32_t done;
  pthread_t ping, pong;
} pair_t;

static void play(pair_t *p, uint32_t mine) {
  for (int i = 0; i < kHandoffs; ++i) {
    uint32_t t;
    while ((t = __atomic_load_n(&p->turn, __ATOMIC_SEQ_CST)) != mine)
      rk__wait_while_equal(&p->turn, t, 0);
    __atomic_store_n(&p->turn, mine ^ 1u, __ATOMIC_SEQ_CST);
    rk__wake_all(&p->turn);
  }
  __atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST);
}

static void *ping(void *arg) {
  play(arg, 0);
  return NULL;
}
static void *pong(void *arg) {
  play(arg, 1);
  return NULL;
}

static void test_no_lost_wakeups(void) {
  static pair_t pairs[kPairs];
  memset(pairs, 0, sizeof pairs);
  int started = 0;
  for (int i = 0; i < kPairs; ++i) {
    if (pthread_create(&pairs[i].ping, NULL, ping, &pairs[i]) != 0 ||
        pthread_create(&pairs[i].pong, NULL, pong, &pairs[i]) != 0) {
      CHECK(false, "starting pair %d", i);
      fflush(stdout);
      _exit(1); /* a lone player cannot finish */
    }
    ++started;
  }
  uint64_t deadline = rk__now_ns() + 60000000000ull; /* 60 s */
  bool all = false;
  while (!all && rk__now_ns() < deadline) {
    all = true;
    for (int i = 0; i < started; ++i)
      if (__atomic_load_n(&pairs[i].done, __ATOMIC_SEQ_CST) != 2) all = false;
    if (!all) sleep_ms(5);
  }
  if (!CHECK(all, "a hand-off hung: a wake-up was lost")) {
    fflush(stdout);
    _exit(1); /* the threads cannot be joined */
  }
  for (int i = 0; i < started; ++i) {
    pthread_join(pairs[i].ping, NULL);
    pthread_join(pairs[i].pong, NULL);
  }
}

/* ---- Condition variables with monotonic deadlines ------------------------
 */

static void test_cond_deadlines(void) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv;
  rk__cond_init_monotonic(&cv);
  pthread_mutex_lock(&mu);
  uint64_t t0 = rk__now_ns();
  CHECK(rk__cond_wait_until(&cv, &mu, t0 - 1) == ETIMEDOUT,
        "a deadline in the past times out at once");
  int rc = 0;
  while ((rc = rk__cond_wait_until(&cv, &mu, t0 + 30000000u)) == 0) {
  }
  uint64_t took = rk__now_ns() - t0;
  CHECK(rc == ETIMEDOUT, "rk__cond_wait_until gave %d", rc);
  CHECK(took >= 25000000u && took < 5000000000u,
        "a 30 ms deadline came after %llu ns", (unsigned long long)took);
  pthread_mutex_unlock(&mu);
  pthread_cond_destroy(&cv);
}

/* ---- Files and pipes -----------------------------------------------------
 */

static bool cloexec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && (flags & FD_CLOEXEC);
}

static void test_anonymous_file(void) {
  int fd = rk__anonymous_file("rk-test");
  if (!CHECK(fd >= 3, "rk__anonymous_file gave %d (%s)", fd, strerror(errno)))
    return;
  CHECK(cloexec(fd), "the anonymous file is not close-on-exec");
  CHECK(write(fd, "hello", 5) == 5, "writing the anonymous file");
  char buf[8] = "";
  CHECK(pread(fd, buf, 5, 0) == 5 && memcmp(buf, "hello", 5) == 0,
        "reading back the anonymous file");
  close(fd);

  /* With descriptor 0 closed, the file still lands above 2. */
  int saved = fcntl(0, F_DUPFD_CLOEXEC, 3);
  close(0);
  fd = rk__anonymous_file("rk-test");
  CHECK(fd >= 3, "with stdin closed, rk__anonymous_file gave %d", fd);
  if (fd >= 0) close(fd);
  if (saved >= 0) {
    dup2(saved, 0);
    close(saved);
  }
}

static void test_pipe(void) {
  int fds[2];
  if (!CHECK(rk__pipe_cloexec(fds) == 0, "rk__pipe_cloexec: %s",
             strerror(errno)))
    return;
  CHECK(cloexec(fds[0]) && cloexec(fds[1]), "the pipe is not close-on-exec");
  CHECK(write(fds[1], "x", 1) == 1, "writing the pipe");
  char c = 0;
  CHECK(read(fds[0], &c, 1) == 1 && c == 'x', "reading the pipe");
  close(fds[0]);
  close(fds[1]);
  /* A child process through the same pipe helper. */
  char *argv[] = {"sh", "-c", "echo child", NULL};
  char *out = NULL;
  int code = -1;
  if (CHECK_OK(rk__run_process(argv, &out, &code)))
    CHECK(code == 0 && out && strcmp(out, "child\n") == 0,
          "rk__run_process: exit %d, output '%s'", code, out ? out : "");
  free(out);
}

/* ---- Threads and the program ---------------------------------------------
 */

static void *thread_id_of(void *arg) {
  *(int32_t *)arg = rk__thread_id();
  return NULL;
}

static void *named_thread(void *arg) {
  rk__set_thread_name("rk-test-name");
  char name[16] = "";
#if RK__LINUX || RK__APPLE
  pthread_getname_np(pthread_self(), name, sizeof name);
#endif
  memcpy(arg, name, sizeof name);
  return NULL;
}

static void test_threads_and_program(void) {
  int32_t here = rk__thread_id(), there = 0;
  pthread_t t;
  if (CHECK(pthread_create(&t, NULL, thread_id_of, &there) == 0, "thread"))
    pthread_join(t, NULL);
  CHECK(here != 0 && there != 0 && here != there,
        "thread ids %d and %d are not two distinct ids", (int)here, (int)there);
  CHECK(rk__thread_id() == here, "the thread id changed");

  char name[16] = "?";
  if (CHECK(pthread_create(&t, NULL, named_thread, name) == 0, "thread"))
    pthread_join(t, NULL);
#if RK__LINUX || RK__APPLE
  CHECK(strcmp(name, "rk-test-name") == 0, "thread name '%s'", name);
#else
  CHECK(name[0] == '\0', "no thread names on plain POSIX, got '%s'", name);
#endif

  CHECK(strcmp(rk__program_name(), "base_sys") == 0, "program name '%s'",
        rk__program_name());
  char self[4096];
  if (rk__executable_path(self, sizeof self)) {
    const char *slash = strrchr(self, '/');
    CHECK(self[0] == '/' && slash && strcmp(slash + 1, "base_sys") == 0,
          "executable path '%s'", self);
  } else {
    CHECK(!RK__LINUX && !RK__APPLE,
          "no executable path where the system gives one");
  }
  int cpus[1024];
  CHECK(rk__allowed_cpus(cpus, 1024) >= 1, "no CPU allowed");
  int cpu = rk__current_cpu();
#if RK__LINUX
  CHECK(cpu >= 0, "sched_getcpu gave %d", cpu);
  rk__pin_thread(pthread_self(), cpus[0]); /* a hint: may be refused */
#else
  CHECK(cpu == -1, "rk__current_cpu gave %d without a way to know", cpu);
  CHECK(!rk__pin_thread(pthread_self(), 0), "pinning claimed to work");
#endif
}

/* ---- Crowding ------------------------------------------------------------
 */

#if RK__LINUX
static uint32_t g_spin_stop;

static void *spin_until_stopped(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&g_spin_stop, __ATOMIC_RELAXED)) {
  }
  return NULL;
}
#endif

/* With two more spinning threads than CPUs the machine is crowded, and
 * every look reads the count afresh (the file is opened once and read at
 * offset 0): the count rises while they spin and falls after. */
static void test_machine_crowded(void) {
#if RK__LINUX
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1 || online > 64) return;
  long idle_max = 0;
  for (int i = 0; i < 20; ++i) {
    long r = rk__machine_running();
    if (r > idle_max) idle_max = r;
  }
  pthread_t t[66];
  int started = 0;
  for (long i = 0; i < online + 2; ++i)
    started += pthread_create(&t[started], NULL, spin_until_stopped, NULL) == 0;
  sleep_ms(20);
  long busy_max = 0;
  int crowded = 0;
  for (int i = 0; i < 200 && busy_max < started; ++i) {
    long r = rk__machine_running();
    if (r > busy_max) busy_max = r;
    crowded += rk__machine_crowded();
    sleep_ms(1);
  }
  __atomic_store_n(&g_spin_stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < started; ++i) pthread_join(t[i], NULL);
  long after_min = 1L << 30;
  for (int i = 0; i < 1000 && after_min >= started; ++i) {
    long r = rk__machine_running();
    if (r >= 0 && r < after_min) after_min = r;
    sleep_ms(1);
  }
  printf(
      "runnable: up to %ld before, up to %ld while %d threads spun "
      "(crowded %d times), down to %ld after\n",
      idle_max, busy_max, started, crowded, after_min);
  CHECK(busy_max >= started && crowded > 0,
        "%d threads spinning on %ld CPUs: runnable up to %ld, crowded %d "
        "times",
        started, online, busy_max, crowded);
  /* The count is the whole machine's: where other processes kept it at
   * the spinners' number already before they started (tests run side by
   * side), the fall cannot be told from their load. */
  if (idle_max >= started)
    printf(
        "note: %ld runnable before the spinners started: the fall after "
        "is not checked\n",
        idle_max);
  else
    CHECK(after_min < started, "still %ld runnable after the %d stopped",
          after_min, started);
#else
  CHECK(rk__machine_running() == -1 && !rk__machine_crowded(),
        "a count without a way to know");
#endif
}

int main(void) {
  printf("platform paths: %s\n", RK__LINUX ? "Linux" : "POSIX");
  test_machine_crowded();
  test_wait_returns_at_once_when_changed();
  test_wait_blocks_until_woken();
  test_wait_timeout();
  test_no_lost_wakeups();
  test_cond_deadlines();
  test_anonymous_file();
  test_pipe();
  test_threads_and_program();
  return rk_test_finish("base_sys");
}
