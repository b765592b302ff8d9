/* Members of a hub-formed cluster reach each other's actors directly, and
 * links across processes work both ways. The test process is the hub; it
 * starts two members with fork+exec of itself (`--role first|second`),
 * talks to them over their stdin and stdout, and checks:
 *   - mesh: 'second' joins after 'first' and finds first/add at once (no
 *     retry: rk_cluster_create returns once it is connected to every
 *     member the hub named), calls it, and counts both peers; 'first' then
 *     finds second/add (the other direction) and calls it;
 *   - failure between members: 'first' is killed while 'second' streams
 *     calls to first/add: the waiting call wakes naming 'first', the
 *     handle is FAILED, a local actor of 'second' linked to it is FAILED,
 *     and first/add is no longer found; the hub's handle is FAILED too;
 *   - links told to the remote side: the hub links a local actor to
 *     second/sup (supervised there) and second/plain (not); when the local
 *     actor fails, second/sup restarts once (RK_ACTOR_FAULT_LINK) and
 *     answers, second/plain is FAILED naming the hub's actor; local actors
 *     whose links to second/add were undone (rk_cluster_unlink, and
 *     rk_remote_actor_release) fail too and leave it alone; linking
 *     second/sup again to the FAILED local actor restarts it again at once;
 *     'first' linked
 *     its own actor to second/victim, so killing 'first' fails
 *     second/victim (and not second/add, whose links 'first' undid);
 *   - a slot reused between members: 'second' holds two peers at most
 *     (RK_CLUSTER_MAX_PEERS=2: the hub and 'first'); once 'first' has
 *     failed and its slot is free, 'third' joins, introduces itself to
 *     'second' in that slot, and 'second' calls third/add.
 * Exits 77 where UCX cannot be loaded. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"
#include "cluster/cluster_internal.h"
#include "rk/cluster.h"
#include "rk/registry.h"
#include "rk/supervisor.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

#define SEC 1000000000ull
#define MS 1000000ull

static const char kAddSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { int v; } imsg_t;\n"
    "RK_HANDLER int add_one(const imsg_t *in, imsg_t *out) {\n"
    "  out->v = in->v + 1;\n"
    "  return in->v < 0 ? 7 : 0;\n"
    "}\n";
typedef struct {
  int v;
} imsg_t;

static rk_context_t *g_ctx;
static const char *g_self;
static char g_addr[128];

static rk_context_t *cpu_context(void) {
  rk_backend_t *be;
  rk_context_t *ctx;
  if (rk_backend_open(RK_BACKEND_CPU, &be) != RK_OK ||
      rk_backend_create_context(be, 0, &ctx) != RK_OK) {
    printf("CPU backend: %s\n", rk_last_error());
    exit(1);
  }
  return ctx;
}

static rk_actor_t *launch(void) {
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  rk_actor_t *a = NULL;
  if (rk_actor_launch(g_ctx, kAddSource, "add_one", &o, &a) != RK_OK) {
    printf("launch: %s\n", rk_last_error());
    exit(1);
  }
  return a;
}

static rk_cluster_t *member_join(const char *addr, const char *name) {
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.connect = addr;
  o.name = name;
  o.connect_timeout_ns = 10 * SEC;
  rk_cluster_t *c;
  if (rk_cluster_create(&o, &c) != RK_OK) {
    printf("join: %s\n", rk_last_error());
    exit(3);
  }
  return c;
}

static void say(const char *line) {
  printf("%s\n", line);
  fflush(stdout);
}

/* The next command byte on stdin; 0 when it closed. */
static char command(void) {
  char b;
  return read(0, &b, 1) == 1 ? b : 0;
}

static bool wait_state(rk_actor_t *a, rk_actor_state_t want) {
  const uint64_t end = rk__now_ns() + 5 * SEC;
  while (rk_actor_state(a) != want && rk__now_ns() < end) usleep(1000);
  return rk_actor_state(a) == want;
}

#define EXPECT(cond, code, ...)           \
  do {                                    \
    if (!(cond)) {                        \
      printf("member: " __VA_ARGS__);     \
      printf(" (%s)\n", rk_last_error()); \
      fflush(stdout);                     \
      return code;                        \
    }                                     \
  } while (0)

/* ---- member roles ------------------------------------------------------- */

/* Exports first/add; on 'c' finds second/add (it joined later), calls it,
 * and links a local actor to second/victim; then waits to be killed. */
static int role_first(const char *addr) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch(), *mine = launch(), *undone = launch(),
             *dropped = launch();
  rk_cluster_t *c = member_join(addr, "first");
  EXPECT(rk_cluster_export(c, add, "first/add") == RK_OK, 10, "export");
  say("ready");
  EXPECT(command() == 'c', 11, "command");
  rk_remote_actor_t *h = NULL, *victim = NULL;
  EXPECT(rk_cluster_lookup(c, "second/add", 5 * SEC, &h) == RK_OK, 12,
         "second/add from first");
  const char *peer = NULL;
  rk_remote_actor_info(h, NULL, NULL, NULL, &peer);
  EXPECT(!strcmp(peer, "second"), 13, "second/add belongs to '%s'", peer);
  imsg_t q = {9}, r = {0};
  EXPECT(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL) ==
                 RK_OK &&
             r.v == 10,
         14, "call second/add");
  EXPECT(rk_cluster_lookup(c, "second/victim", 5 * SEC, &victim) == RK_OK, 15,
         "second/victim");
  EXPECT(rk_cluster_link(victim, mine) == RK_OK, 16, "link");
  /* Links undone before this process is killed: second/add stays. */
  rk_remote_actor_t *h2 = NULL;
  EXPECT(rk_cluster_link(h, undone) == RK_OK &&
             rk_cluster_unlink(h, undone) == RK_OK,
         17, "link, unlink");
  EXPECT(rk_cluster_lookup(c, "second/add", 5 * SEC, &h2) == RK_OK &&
             rk_cluster_link(h2, dropped) == RK_OK,
         18, "link");
  rk_remote_actor_release(h2);
  say("called");
  while (command()) {
  }
  rk_remote_actor_release(victim);
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  rk_actor_destroy(mine);
  rk_actor_destroy(undone);
  rk_actor_destroy(dropped);
  return 0;
}

/* Exports third/add; goes when its stdin closes. */
static int role_third(const char *addr) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch();
  rk_cluster_t *c = member_join(addr, "third");
  EXPECT(rk_cluster_export(c, add, "third/add") == RK_OK, 50, "export");
  say("ready");
  while (command()) {
  }
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  return 0;
}

typedef struct streamer {
  rk_remote_actor_t *h;
  _Atomic uint32_t answered;
  _Atomic int last; /* rk_status_t */
  char message[512];
} streamer_t;

static void *stream(void *arg) {
  streamer_t *s = arg;
  for (int i = 0;; ++i) {
    imsg_t q = {i & 0xffff}, r;
    const rk_status_t st =
        rk_remote_actor_call(s->h, &q, sizeof q, &r, sizeof r, 30 * SEC, NULL);
    if (st != RK_OK) {
      snprintf(s->message, sizeof s->message, "%s", rk_last_error());
      atomic_store(&s->last, st);
      return NULL;
    }
    atomic_fetch_add(&s->answered, 1);
  }
}

/* Joins after 'first' and reaches it directly; exports second/add,
 * second/sup (supervised), second/plain and second/victim. Commands:
 * 's' streams calls to first/add ("streaming"), 'f' checks what the
 * killing of 'first' did ("failed-ok"), 'k' checks what the hub's links
 * did ("links-ok"). */
static int role_second(const char *addr) {
  g_ctx = cpu_context();
  rk_actor_t *add = launch(), *sup = launch(), *plain = launch(),
             *victim = launch(), *linked = launch();
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  EXPECT(rk_actor_supervise(sup, &so) == RK_OK, 20, "supervise");
  rk_cluster_t *c = member_join(addr, "second");
  /* At once, no retry: the join connected it to 'first'. */
  EXPECT(rk_cluster_peer_count(c) == 2, 21, "%zu peers, expected 2",
         rk_cluster_peer_count(c));
  rk_remote_actor_t *h = NULL;
  EXPECT(rk_cluster_lookup(c, "first/add", 5 * SEC, &h) == RK_OK, 22,
         "first/add from second");
  imsg_t q = {41}, r = {0};
  EXPECT(rk_remote_actor_call(h, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL) ==
                 RK_OK &&
             r.v == 42,
         23, "call first/add: %d", r.v);
  rk_remote_actor_t *none = NULL;
  EXPECT(rk_cluster_lookup(c, "nobody/x", 5 * SEC, &none) == RK_ERR_NOT_FOUND &&
             strstr(rk_last_error(), "'first'") &&
             strstr(rk_last_error(), "'hub'"),
         24, "not found, asking both");
  EXPECT(rk_cluster_export(c, add, "second/add") == RK_OK &&
             rk_cluster_export(c, sup, "second/sup") == RK_OK &&
             rk_cluster_export(c, plain, "second/plain") == RK_OK &&
             rk_cluster_export(c, victim, "second/victim") == RK_OK,
         25, "exports");
  EXPECT(rk_cluster_link(h, linked) == RK_OK, 26, "link");
  say("ready");
  streamer_t s;
  memset(&s, 0, sizeof s);
  s.h = h;
  pthread_t t;
  bool streaming = false;
  for (char b; (b = command()) != 0;) {
    if (b == 's') {
      pthread_create(&t, NULL, stream, &s);
      streaming = true;
      while (atomic_load(&s.answered) < 50 && atomic_load(&s.last) == RK_OK)
        usleep(1000);
      say("streaming");
    } else if (b == 'f') {
      EXPECT(streaming, 30, "not streaming");
      pthread_join(t, NULL);
      streaming = false;
      EXPECT(atomic_load(&s.last) == RK_ERR_INVALID_STATE, 31,
             "the waiting call: %s", rk_status_name(atomic_load(&s.last)));
      EXPECT(strstr(s.message, "member 'first' failed"), 32, "its message: %s",
             s.message);
      EXPECT(rk_remote_actor_state(h) == RK_ACTOR_FAILED, 33, "handle: %s",
             rk_actor_state_name(rk_remote_actor_state(h)));
      EXPECT(wait_state(linked, RK_ACTOR_FAILED), 34, "linked local: %s",
             rk_actor_state_name(rk_actor_state(linked)));
      EXPECT(wait_state(victim, RK_ACTOR_FAILED), 35,
             "second/victim, linked from 'first': %s",
             rk_actor_state_name(rk_actor_state(victim)));
      EXPECT(rk_actor_call(victim, &q, sizeof q, &r, sizeof r, SEC, NULL) ==
                     RK_ERR_INVALID_STATE &&
                 strstr(rk_last_error(), "member 'first'"),
             36, "second/victim's reason");
      /* The hub answers for itself; under a sanitizer on two CPUs, while
       * it handles the kill too, that has taken over 2 s. */
      EXPECT(rk_cluster_lookup(c, "first/add", 15 * SEC, &none) ==
                 RK_ERR_NOT_FOUND,
             37, "first/add after the kill");
      /* 'first' unlinked (and released) its links to second/add. */
      usleep(50000);
      rk_actor_stats_t st;
      EXPECT(rk_actor_state(add) == RK_ACTOR_ACTIVE &&
                 rk_actor_stats(add, &st) == RK_OK && st.restarts == 0,
             38, "second/add, unlinked by 'first': %s",
             rk_actor_state_name(rk_actor_state(add)));
      say("failed-ok");
    } else if (b == 'k') {
      rk_actor_stats_t st;
      const uint64_t end = rk__now_ns() + 5 * SEC;
      do {
        EXPECT(rk_actor_stats(sup, &st) == RK_OK, 40, "stats");
        if (st.restarts_by_cause[RK_ACTOR_FAULT_LINK]) break;
        usleep(1000);
      } while (rk__now_ns() < end);
      EXPECT(st.restarts_by_cause[RK_ACTOR_FAULT_LINK] == 1, 41,
             "second/sup: %llu restarts for the link",
             (unsigned long long)st.restarts_by_cause[RK_ACTOR_FAULT_LINK]);
      EXPECT(wait_state(plain, RK_ACTOR_FAILED), 42, "second/plain: %s",
             rk_actor_state_name(rk_actor_state(plain)));
      EXPECT(rk_actor_call(plain, &q, sizeof q, &r, sizeof r, SEC, NULL) ==
                     RK_ERR_INVALID_STATE &&
                 strstr(rk_last_error(), "hub/doomed") &&
                 strstr(rk_last_error(), "member 'hub'"),
             43, "second/plain's reason");
      EXPECT(rk_actor_state(add) == RK_ACTOR_ACTIVE, 44, "second/add: %s",
             rk_actor_state_name(rk_actor_state(add)));
      EXPECT(rk_actor_stats(add, &st) == RK_OK && st.restarts == 0, 45,
             "second/add restarted");
      say("links-ok");
    } else if (b == 'l') {
      rk_actor_stats_t st;
      const uint64_t end = rk__now_ns() + 5 * SEC;
      do {
        EXPECT(rk_actor_stats(sup, &st) == RK_OK, 46, "stats");
        if (st.restarts_by_cause[RK_ACTOR_FAULT_LINK] == 2) break;
        usleep(1000);
      } while (rk__now_ns() < end);
      EXPECT(st.restarts_by_cause[RK_ACTOR_FAULT_LINK] == 2, 47,
             "second/sup linked to an actor FAILED already: %llu restarts",
             (unsigned long long)st.restarts_by_cause[RK_ACTOR_FAULT_LINK]);
      say("late-ok");
    } else if (b == 'r') {
      /* 'first' failed: its slot is freed (the one of two). */
      const uint64_t end = rk__now_ns() + 10 * SEC;
      while (rk__cluster_peers_freed(c) < 1 && rk__now_ns() < end) usleep(2000);
      EXPECT(rk__cluster_peers_freed(c) >= 1, 48, "'first''s slot not freed");
      say("freed");
    } else if (b == 't') {
      rk_remote_actor_t *t3 = NULL;
      EXPECT(rk_cluster_lookup(c, "third/add", 5 * SEC, &t3) == RK_OK, 49,
             "third/add from second: %s", rk_last_error());
      const char *peer = NULL;
      rk_remote_actor_info(t3, NULL, NULL, NULL, &peer);
      EXPECT(!strcmp(peer, "third"), 51, "third/add belongs to '%s'", peer);
      imsg_t q3 = {99}, r3 = {0};
      EXPECT(rk_remote_actor_call(t3, &q3, sizeof q3, &r3, sizeof r3, 10 * SEC,
                                  NULL) == RK_OK &&
                 r3.v == 100,
             52, "call third/add: %d", r3.v);
      EXPECT(rk_remote_actor_state(h) == RK_ACTOR_FAILED, 53,
             "the handle to first/add after its slot was reused: %s",
             rk_actor_state_name(rk_remote_actor_state(h)));
      rk_remote_actor_release(t3);
      say("third-ok");
    }
  }
  if (streaming) pthread_join(t, NULL);
  rk_remote_actor_release(h);
  rk_cluster_destroy(c);
  rk_actor_destroy(add);
  rk_actor_destroy(sup);
  rk_actor_destroy(plain);
  rk_actor_destroy(victim);
  rk_actor_destroy(linked);
  return 0;
}

/* ---- the hub's side ------------------------------------------------------ */

typedef struct child {
  pid_t pid;
  int in, out;
} child_t;

static child_t spawn(const char *role) {
  int in[2], out[2];
  child_t ch = {-1, -1, -1};
  if (pipe(in) != 0) return ch;
  if (pipe(out) != 0) return ch;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execl(g_self, g_self, "--role", role, g_addr, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  ch.pid = pid;
  ch.in = in[1];
  ch.out = out[0];
  return ch;
}

/* Reads the child's lines until one equals `want` (true) or the output
 * ends or `seconds` pass (false). Echoes every line. */
static bool expect_line(child_t *ch, const char *want, unsigned seconds) {
  char line[512];
  size_t n = 0;
  const uint64_t end = rk__now_ns() + seconds * SEC;
  while (rk__now_ns() < end) {
    struct pollfd p = {.fd = ch->out, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    char b;
    if (read(ch->out, &b, 1) != 1) return false;
    if (b != '\n') {
      if (n < sizeof line - 1) line[n++] = b;
      continue;
    }
    line[n] = '\0';
    n = 0;
    printf("  [member] %s\n", line);
    if (!strcmp(line, want)) return true;
  }
  return false;
}

static void send_cmd(child_t *ch, char b) {
  if (write(ch->in, &b, 1) != 1) CHECK(false, "command %c", b);
}

static int reap(child_t *ch, unsigned seconds) {
  if (ch->in >= 0) close(ch->in);
  ch->in = -1;
  const uint64_t end = rk__now_ns() + seconds * SEC;
  int st = 0;
  for (;;) {
    const pid_t r = waitpid(ch->pid, &st, WNOHANG);
    if (r == ch->pid) break;
    if (rk__now_ns() > end) {
      kill(ch->pid, SIGKILL);
      waitpid(ch->pid, &st, 0);
      return -1;
    }
    usleep(10000);
  }
  if (ch->out >= 0) {
    /* Whatever it said last, for the log. */
    char buf[1024];
    ssize_t n;
    while ((n = read(ch->out, buf, sizeof buf - 1)) > 0) {
      buf[n] = '\0';
      printf("  [member] %s", buf);
    }
    close(ch->out);
    ch->out = -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void run(rk_cluster_t *c) {
  child_t first = spawn("first");
  if (!CHECK(expect_line(&first, "ready", 60), "'first' is ready")) {
    reap(&first, 5);
    return;
  }
  /* 'second' holds the hub and 'first': 'third' needs first's slot. */
  setenv("RK_CLUSTER_MAX_PEERS", "2", 1);
  child_t second = spawn("second");
  unsetenv("RK_CLUSTER_MAX_PEERS");
  if (!CHECK(expect_line(&second, "ready", 60),
             "'second' reached first/add directly")) {
    reap(&second, 5);
    reap(&first, 5);
    return;
  }
  send_cmd(&first, 'c');
  CHECK(expect_line(&first, "called", 30),
        "'first' reached second/add directly");

  /* The hub's own links to 'second': a local actor that fails for good
   * (supervised, no restarts allowed) fails second/plain and restarts
   * second/sup; an unlinked one leaves second/add alone. */
  rk_remote_actor_t *hsup = NULL, *hplain = NULL, *hadd = NULL, *hfirst = NULL;
  CHECK_OK(rk_cluster_lookup(c, "second/sup", 5 * SEC, &hsup));
  CHECK_OK(rk_cluster_lookup(c, "second/plain", 5 * SEC, &hplain));
  CHECK_OK(rk_cluster_lookup(c, "second/add", 5 * SEC, &hadd));
  CHECK_OK(rk_cluster_lookup(c, "first/add", 5 * SEC, &hfirst));
  /* doomed, undone and dropped fail for good at their first fault; undone
   * is unlinked and dropped's handle released before they fail. */
  rk_actor_t *doomed = launch(), *undone = launch(), *dropped = launch();
  CHECK_OK(rk_actor_register(doomed, "hub/doomed"));
  rk_supervisor_options_t so;
  rk_supervisor_options_init(&so);
  so.max_restarts = 0;
  CHECK_OK(rk_actor_supervise(doomed, &so));
  CHECK_OK(rk_actor_supervise(undone, &so));
  CHECK_OK(rk_actor_supervise(dropped, &so));
  rk_remote_actor_t *hadd2 = NULL;
  CHECK_OK(rk_cluster_lookup(c, "second/add", 5 * SEC, &hadd2));
  if (hsup && hplain && hadd && hadd2) {
    CHECK_OK(rk_cluster_link(hsup, doomed));
    CHECK_OK(rk_cluster_link(hplain, doomed));
    CHECK_OK(rk_cluster_link(hadd, undone));
    CHECK_OK(rk_cluster_unlink(hadd, undone));
    CHECK_OK(rk_cluster_link(hadd2, dropped));
    rk_remote_actor_release(hadd2);
    rk_actor_t *fail[3] = {undone, dropped, doomed};
    imsg_t q = {-1}, r;
    for (int i = 0; i < 3; ++i) {
      CHECK_STATUS(
          rk_actor_call(fail[i], &q, sizeof q, &r, sizeof r, 5 * SEC, NULL),
          RK_ERR_HANDLER);
      const uint64_t end = rk__now_ns() + 5 * SEC;
      while (rk_actor_state(fail[i]) != RK_ACTOR_FAILED && rk__now_ns() < end)
        usleep(1000);
      CHECK(rk_actor_state(fail[i]) == RK_ACTOR_FAILED, "local actor %d: %s", i,
            rk_actor_state_name(rk_actor_state(fail[i])));
    }
    send_cmd(&second, 'k');
    CHECK(expect_line(&second, "links-ok", 30),
          "the failure of hub/doomed reached its links in 'second'");
    q.v = 1;
    CHECK_OK(
        rk_remote_actor_call(hsup, &q, sizeof q, &r, sizeof r, 10 * SEC, NULL));
    CHECK(r.v == 2, "second/sup after its restart answers %d", r.v);
    CHECK_STATUS(
        rk_remote_actor_call(hplain, &q, sizeof q, &r, sizeof r, 5 * SEC, NULL),
        RK_ERR_INVALID_STATE);
  }

  /* Linked after the local actor FAILED: the owner is told at once. */
  if (hsup) {
    /* Its failure dropped the first link. */
    CHECK_STATUS(rk_cluster_unlink(hsup, doomed), RK_ERR_NOT_FOUND);
    CHECK_OK(rk_cluster_link(hsup, doomed));
    send_cmd(&second, 'l');
    CHECK(expect_line(&second, "late-ok", 30),
          "a link to an actor FAILED already faults the remote one");
  }

  /* A member killed while another member calls it. */
  send_cmd(&second, 's');
  CHECK(expect_line(&second, "streaming", 30), "'second' streams to 'first'");
  kill(first.pid, SIGKILL);
  send_cmd(&second, 'f');
  CHECK(expect_line(&second, "failed-ok", 30),
        "'second' saw 'first' fail: waiter woken, handle and links FAILED");
  if (hfirst) {
    const uint64_t end = rk__now_ns() + 10 * SEC;
    while (rk_remote_actor_state(hfirst) != RK_ACTOR_FAILED &&
           rk__now_ns() < end)
      usleep(1000);
    CHECK(rk_remote_actor_state(hfirst) == RK_ACTOR_FAILED,
          "the hub's handle to first/add: %s",
          rk_actor_state_name(rk_remote_actor_state(hfirst)));
  }
  reap(&first, 5);
  /* A slot of 'second' reused: 'third' introduces itself in first's. */
  send_cmd(&second, 'r');
  if (CHECK(expect_line(&second, "freed", 30), "'second' freed first's slot")) {
    child_t third = spawn("third");
    if (CHECK(expect_line(&third, "ready", 60), "'third' joined")) {
      send_cmd(&second, 't');
      CHECK(expect_line(&second, "third-ok", 30),
            "'second' reached third/add in first's slot");
    }
    CHECK(reap(&third, 30) == 0, "'third' exits cleanly");
  }
  const int code = reap(&second, 30);
  CHECK(code == 0, "'second' exited %d", code);
  rk_remote_actor_release(hsup);
  rk_remote_actor_release(hplain);
  rk_remote_actor_release(hadd);
  rk_remote_actor_release(hfirst);
  rk_actor_destroy(doomed);
  rk_actor_destroy(undone);
  rk_actor_destroy(dropped);
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "--role")) {
    if (!strcmp(argv[2], "first")) return role_first(argv[3]);
    if (!strcmp(argv[2], "second")) return role_second(argv[3]);
    if (!strcmp(argv[2], "third")) return role_third(argv[3]);
    return 2;
  }
  const char *version;
  if (rk_cluster_available(&version) != RK_OK)
    RK_TEST_SKIP("%s", rk_last_error());
  static char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  g_self = "/proc/self/exe";
  if (n > 0) {
    self[n] = '\0';
    g_self = self;
  }
  const char *tls = getenv("UCX_TLS");
  printf("UCX %s, UCX_TLS=%s\n", version, tls ? tls : "(default)");
  rk_test_use_temp_cache(); /* inherited by the members: one compile each */
  g_ctx = cpu_context();
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.listen = "127.0.0.1:0";
  o.name = "hub";
  o.token = "";
  setenv("RK_CLUSTER_TOKEN", "", 1);
  rk_cluster_t *c;
  if (!CHECK_OK(rk_cluster_create(&o, &c))) return rk_test_finish("mesh");
  CHECK_OK(rk_cluster_address(c, g_addr, sizeof g_addr));
  run(c);
  rk_cluster_destroy(c);
  return rk_test_finish("cluster_mesh");
}
