#include "actor_test_util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/platform.h"
#include "base/sys.h"
#include "rk_test.h"
#if RK__LINUX
#include <sys/prctl.h>
#endif

const char kAddOneSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } req_t;\n"
    "typedef struct { int v; } resp_t;\n"
    "RK_HANDLER void add_one(const req_t *in, resp_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "}\n";

const char kTagSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t producer; uint32_t seq; } req_t;\n"
    "typedef struct { uint32_t producer; uint32_t seq; uint32_t count;\n"
    "                 uint32_t pad; } resp_t;\n"
    "typedef struct { uint32_t count; } state_t;\n"
    "RK_HANDLER void tag(const req_t *in, resp_t *out, state_t *s) {\n"
    "  s->count += 1u;\n"
    "  out->producer = in->producer;\n"
    "  out->seq = in->seq;\n"
    "  out->count = s->count;\n"
    "  out->pad = 0u;\n"
    "}\n";

const char kDivSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int a; int b; } req_t;\n"
    "typedef struct { int q; } resp_t;\n"
    "RK_HANDLER int checked_div(const req_t *in, resp_t *out) {\n"
    "  if (in->b == 0) {\n"
    "    out->q = 0;\n"
    "    return 7;\n"
    "  }\n"
    "  out->q = in->a / in->b;\n"
    "  return 0;\n"
    "}\n";

rk_status_t actor_test_context_destroy(rk_context_t *ctx) {
  for (;;) {
    rk_status_t s = rk_context_destroy(ctx);
    if (s != RK_ERR_INVALID_STATE) return s;
    const struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
  }
}

rk_context_t *actor_test_context(rk_backend_t **out_backend) {
  return actor_test_context_on(RK_BACKEND_CPU, out_backend);
}

rk_context_t *actor_test_context_on(rk_backend_kind_t kind,
                                    rk_backend_t **out_backend) {
  rk_test_use_temp_cache();
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  if (rk_backend_open(kind, &be) != RK_OK) {
    if (kind == RK_BACKEND_CPU) {
      printf("FAILED: no CPU backend: %s\n", rk_last_error());
      exit(1);
    }
    printf("skipped: the %s backend does not open here: %s\n",
           rk_backend_kind_name(kind), rk_last_error());
    exit(77);
  }
  if (rk_backend_device_count(be) == 0) {
    printf("skipped: the %s backend has no device here\n",
           rk_backend_kind_name(kind));
    exit(kind == RK_BACKEND_CPU ? 1 : 77);
  }
  if (rk_backend_create_context(be, 0, &ctx) != RK_OK) {
    printf("FAILED: no %s context: %s\n", rk_backend_kind_name(kind),
           rk_last_error());
    exit(1);
  }
  *out_backend = be;
  return ctx;
}

/* ---- Watchdog ----------------------------------------------------------- */

static pthread_mutex_t g_dog_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_dog_case = "start-up";
static uint64_t g_dog_deadline_ns;

void actor_test_watch(const char *name, unsigned seconds) {
  pthread_mutex_lock(&g_dog_mu);
  g_dog_case = name;
  g_dog_deadline_ns = rk__now_ns() + (uint64_t)seconds * 1000000000ull;
  pthread_mutex_unlock(&g_dog_mu);
  printf("case %s\n", name);
  fflush(stdout);
}

/* Every thread's stack, printed by gdb where it is installed, so that the
 * log of a run that hung says where each thread was. Best effort;
 * RK_TEST_NO_GDB=1 skips it. */
static void dump_threads(void) {
#if RK__LINUX
  if (getenv("RK_TEST_NO_GDB") ||
      system("command -v gdb > /dev/null 2>&1") != 0)
    return;
  /* Where Yama allows tracing descendants only, allow gdb (our child). */
  (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  char cmd[200];
  snprintf(cmd, sizeof cmd,
           "timeout 60 gdb -p %d -batch -ex 'thread apply all bt' "
           "</dev/null 2>&1",
           (int)getpid());
  printf("every thread's stack (gdb):\n");
  fflush(stdout);
  if (system(cmd) != 0) printf("(gdb could not print them)\n");
  fflush(stdout);
#endif
}

static void *watchdog_main(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&g_dog_mu);
    bool late = g_dog_deadline_ns && rk__now_ns() > g_dog_deadline_ns;
    const char *name = g_dog_case;
    pthread_mutex_unlock(&g_dog_mu);
    if (late) {
      printf(
          "FAILED: case %s did not finish in time (a device side that "
          "never answers?); %d earlier check(s) failed\n",
          name, rk_test_failures);
      fflush(stdout);
      dump_threads();
      _exit(1);
    }
  }
  return NULL;
}

void actor_test_watchdog_start(void) {
  pthread_t dog;
  if (pthread_create(&dog, NULL, watchdog_main, NULL) == 0) pthread_detach(dog);
}
