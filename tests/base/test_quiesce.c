/* Quiescence (base/quiesce.h): objects retired while reader threads use
 * them in sections, freed once rk__quiesce_wait returns. Each object
 * carries a magic word the reclaimer clears just before freeing it; a
 * reader that ever sees the word cleared, or a freed object (AddressSanitizer
 * in `make test-asan`), fails. Also: nested sections, a reader that stays
 * in a section holds the reclaimer until it leaves, and a child forked
 * while another thread is inside a section can still wait (that thread
 * does not exist there). */
#define RK_TEST_IMPLEMENTATION
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/quiesce.h"
#include "base/sys.h"
#include "rk_test.h"

#define MAGIC 0x5eed5eedu

typedef struct obj {
  uint32_t magic;
  uint32_t n;
} obj_t;

static obj_t *g_cur; /* atomic: the published object */
static uint32_t g_stop, g_bad, g_started;
static uint64_t g_uses;

static void *reader(void *arg) {
  (void)arg;
  uint64_t uses = 0;
  __atomic_fetch_add(&g_started, 1u, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
    rk__quiesce_enter();
    rk__quiesce_enter(); /* nested: only the outer one counts */
    obj_t *o = __atomic_load_n(&g_cur, __ATOMIC_ACQUIRE);
    rk__quiesce_leave();
    /* Still inside the outer section: the object must stay alive. */
    for (int k = 0; k < 8; ++k)
      if (__atomic_load_n(&o->magic, __ATOMIC_RELAXED) != MAGIC)
        __atomic_store_n(&g_bad, 1u, __ATOMIC_RELAXED);
    rk__quiesce_leave();
    /* Counted as they go: the retiring thread keeps going until the
     * readers have been inside while it retired. */
    if (++uses % 64 == 0) __atomic_fetch_add(&g_uses, 64, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&g_uses, uses % 64, __ATOMIC_RELAXED);
  return NULL;
}

static void test_retire_under_readers(void) {
  enum { kReaders = 2, kRetires = 300 };
  obj_t *first = malloc(sizeof *first);
  first->magic = MAGIC;
  first->n = 0;
  __atomic_store_n(&g_cur, first, __ATOMIC_RELEASE);
  pthread_t t[kReaders];
  for (int i = 0; i < kReaders; ++i) pthread_create(&t[i], NULL, reader, NULL);
  /* On a loaded machine the readers may not have run yet: retire only
   * once they have, and go on (up to 10 s) until they have been inside
   * sections a while, so that retires and sections overlap. */
  while (__atomic_load_n(&g_started, __ATOMIC_ACQUIRE) < kReaders)
    sched_yield();
  const uint64_t give_up = rk__now_ns() + 10000000000ull;
  uint32_t retires = 0;
  for (uint32_t i = 1;
       i <= kRetires || (__atomic_load_n(&g_uses, __ATOMIC_RELAXED) < 4096 &&
                         rk__now_ns() < give_up);
       ++i) {
    retires = i;
    obj_t *next = malloc(sizeof *next);
    next->magic = MAGIC;
    next->n = i;
    obj_t *old = __atomic_exchange_n(&g_cur, next, __ATOMIC_ACQ_REL);
    rk__quiesce_wait();
    __atomic_store_n(&old->magic, 0u, __ATOMIC_RELAXED);
    free(old);
  }
  __atomic_store_n(&g_stop, 1u, __ATOMIC_RELAXED);
  for (int i = 0; i < kReaders; ++i) pthread_join(t[i], NULL);
  CHECK(!g_bad, "a reader saw an object cleared before its section ended");
  CHECK(g_uses >= 4096,
        "the readers ran while objects were retired (%llu "
        "sections, %u retires)",
        (unsigned long long)g_uses, retires);
  free(g_cur);
  g_cur = NULL;
}

/* A reader that stays inside: the wait returns only after it leaves. */
static uint32_t g_inside, g_leave;

static void *stayer(void *arg) {
  (void)arg;
  rk__quiesce_enter();
  __atomic_store_n(&g_inside, 1u, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&g_leave, __ATOMIC_ACQUIRE)) rk__cpu_relax();
  rk__quiesce_leave();
  /* Parked outside a section until the forked child has been checked. */
  while (__atomic_load_n(&g_leave, __ATOMIC_ACQUIRE) != 2) rk__cpu_relax();
  return NULL;
}

static uint32_t g_waited;

static void *waiter(void *arg) {
  (void)arg;
  rk__quiesce_wait();
  __atomic_store_n(&g_waited, 1u, __ATOMIC_RELEASE);
  return NULL;
}

static void test_wait_for_open_section(void) {
  pthread_t s, w;
  pthread_create(&s, NULL, stayer, NULL);
  while (!__atomic_load_n(&g_inside, __ATOMIC_ACQUIRE)) rk__cpu_relax();
  /* A fork while `s` is inside: the child has no such thread, and its
   * wait must not wait for it. */
  pid_t pid = fork();
  if (pid == 0) {
    rk__quiesce_wait();
    _exit(0);
  }
  int st = -1;
  const uint64_t end = rk__now_ns() + 10ull * 1000000000ull;
  pid_t r = 0;
  while ((r = waitpid(pid, &st, WNOHANG)) == 0 && rk__now_ns() < end)
    usleep(1000);
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  CHECK(r == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "a forked child's wait returns (the section's thread is not there)");
  pthread_create(&w, NULL, waiter, NULL);
  usleep(50000);
  CHECK(!__atomic_load_n(&g_waited, __ATOMIC_ACQUIRE),
        "the wait returned while a section was open");
  __atomic_store_n(&g_leave, 1u, __ATOMIC_RELEASE);
  pthread_join(w, NULL);
  CHECK(__atomic_load_n(&g_waited, __ATOMIC_ACQUIRE), "the wait returned");
  __atomic_store_n(&g_leave, 2u, __ATOMIC_RELEASE);
  pthread_join(s, NULL);
}

int main(void) {
  test_retire_under_readers();
  test_wait_for_open_section();
  return rk_test_finish("quiesce");
}
