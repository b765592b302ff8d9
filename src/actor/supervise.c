/* Supervision (rk/supervisor.h): groups, links and the supervision thread.
 *
 * Every actor that is supervised, linked, or has been supervised has a
 * `tracked_t` in one process-wide table. One thread ("rk-supervise"),
 * started when the first actor is supervised or linked and gone when none
 * is, looks at each about once a millisecond: the actor's counters
 * (rk__actor_counts: handler errors, device faults, progress) against the
 * values it saw last, and its state (FAILED by itself: a missed
 * termination deadline). A fault restarts the actor (rk__actor_restart),
 * or the group, within the restart budget; past it, or when the restart
 * fails, the actor is FAILED and its links are told.
 *
 * Locks: g_lock guards the table, the groups and the links, and is held
 * by the thread while it restarts or fails actors, so rk_actor_destroy
 * (rk__supervise_forget) waits for that to finish and nothing is
 * restarted after it. g_stats_lock guards the statistics only, so that
 * rk_actor_stats never waits for a restart. Order: g_lock, then an
 * actor's ctl_lock (inside rk__actor_restart), or g_lock then
 * g_stats_lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "base/error.h"
#include "base/sys.h"
#include "rk/cluster.h"
#include "rk/supervisor.h"

enum {
  kPollNs = 1000000, /* how often the thread looks */
  kMaxBudget = 1024, /* restarts remembered per window */
  kWhy = 256,        /* room for a cause in words */
};
#define kLinkStopNs UINT64_C(1000000000) /* linked, unsupervised: stop */

struct rk_supervisor {
  rk_supervisor_options_t o;
  bool owned; /* rk_actor_supervise's: freed with its actor */
  /* One-for-all: the times of the group's restarts in the window. */
  uint64_t *times;
  size_t ntimes;
};

typedef struct tracked {
  rk_actor_t *actor;
  rk_supervisor_t *group; /* NULL: linked only, or removed */
  rk__actor_counts_t seen;
  uint64_t progress_ns; /* when it last finished something, or was idle */
  uint64_t *times;      /* one-for-one: its restarts in the window */
  size_t ntimes;
  bool failed;  /* its failure was handled (links told) */
  bool watched; /* rk__supervise_watch: its failure is wanted */
  bool link_fault;
  char link_why[kWhy];
  /* Statistics (g_stats_lock). */
  bool in_group; /* group != NULL */
  uint64_t restarts, by_cause[RK_ACTOR_FAULT_COUNT_];
  rk_actor_fault_t last_fault;
  int32_t last_code;
} tracked_t;

typedef struct link {
  rk_actor_t *a, *b;
} link_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake;
static bool g_running; /* the thread exists (g_lock) */
static tracked_t **g_tracked;
static size_t g_ntracked, g_captracked;
static link_t *g_links;
static size_t g_nlinks, g_caplinks;
/* rk__actor_failed_hook_add (g_lock). */
enum { kMaxFailedHooks = 16 };
static struct {
  rk__actor_failed_hook_fn fn;
  void *user;
} g_failed_hooks[kMaxFailedHooks];
static size_t g_nfailed_hooks;

static const char *const kFaultNames[] = {"none",     "handler", "device",
                                          "deadline", "group",   "link"};

const char *rk_actor_fault_name(rk_actor_fault_t fault) {
  if ((unsigned)fault < sizeof kFaultNames / sizeof kFaultNames[0])
    return kFaultNames[fault];
  return "unknown";
}

void rk_supervisor_options_init(rk_supervisor_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->strategy = RK_SUPERVISE_ONE_FOR_ONE;
  o->max_restarts = 3;
  o->window_ns = UINT64_C(5000000000);
  o->restart_state = RK_RESTART_FRESH;
  o->handler_faults = RK_HANDLER_FAULT_NONZERO;
  o->stop_timeout_ns = UINT64_C(1000000000);
}

/* ---- Table ---------------------------------------------------------------
 * Callers hold g_lock; changes to the table also hold g_stats_lock. */

static tracked_t *find(const rk_actor_t *a) {
  for (size_t i = 0; i < g_ntracked; ++i)
    if (g_tracked[i]->actor == a) return g_tracked[i];
  return NULL;
}

static tracked_t *find_or_add(rk_actor_t *a) {
  tracked_t *t = find(a);
  if (t) return t;
  if (g_ntracked == g_captracked) {
    const size_t cap = g_captracked ? g_captracked * 2 : 16;
    tracked_t **grown = realloc(g_tracked, cap * sizeof *grown);
    if (!grown) return NULL;
    g_tracked = grown;
    g_captracked = cap;
  }
  t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->actor = a;
  pthread_mutex_lock(&g_stats_lock);
  g_tracked[g_ntracked++] = t;
  pthread_mutex_unlock(&g_stats_lock);
  return t;
}

static void set_group(tracked_t *t, rk_supervisor_t *g) {
  t->group = g;
  pthread_mutex_lock(&g_stats_lock);
  t->in_group = g != NULL;
  pthread_mutex_unlock(&g_stats_lock);
}

static bool linked(const rk_actor_t *a, const rk_actor_t *b) {
  for (size_t i = 0; i < g_nlinks; ++i)
    if ((g_links[i].a == a && g_links[i].b == b) ||
        (g_links[i].a == b && g_links[i].b == a))
      return true;
  return false;
}

/* Whether the thread has anything to watch. */
static bool watching(void) {
  if (g_nlinks) return true;
  for (size_t i = 0; i < g_ntracked; ++i)
    if (g_tracked[i]->group || g_tracked[i]->link_fault ||
        (g_tracked[i]->watched && !g_tracked[i]->failed))
      return true;
  return false;
}

static void free_group(rk_supervisor_t *g) {
  if (!g) return;
  free(g->times);
  free(g);
}

/* ---- Budget -------------------------------------------------------------- */

/* Whether one more restart fits max_restarts within the window. */
static bool budget_allows(const rk_supervisor_t *g, const uint64_t *times,
                          size_t n, uint64_t now) {
  uint32_t recent = 0;
  for (size_t i = 0; i < n; ++i)
    if (now - times[i] < g->o.window_ns) ++recent;
  return recent < g->o.max_restarts;
}

/* Remembers a restart at `now` (dropping ones outside the window). */
static void budget_note(const rk_supervisor_t *g, uint64_t **times, size_t *n,
                        uint64_t now) {
  size_t k = 0;
  for (size_t i = 0; i < *n; ++i)
    if (now - (*times)[i] < g->o.window_ns) (*times)[k++] = (*times)[i];
  *n = k;
  if (!*times) *times = calloc(kMaxBudget, sizeof **times);
  if (!*times) return;
  if (*n == kMaxBudget) {
    memmove(*times, *times + 1, (kMaxBudget - 1) * sizeof **times);
    --*n;
  }
  (*times)[(*n)++] = now;
}

/* ---- Events -------------------------------------------------------------- */

static void emit(const tracked_t *t, rk_supervisor_event_kind_t kind,
                 rk_actor_fault_t cause, int32_t code, const char *detail) {
  const rk_supervisor_t *g = t->group;
  if (!g || !g->o.on_event) return;
  const rk_supervisor_event_t e = {kind, t->actor, cause, code, detail};
  g->o.on_event(&e, g->o.user);
}

static void note_fault(tracked_t *t, rk_actor_fault_t cause, int32_t code,
                       bool restarted) {
  pthread_mutex_lock(&g_stats_lock);
  t->last_fault = cause;
  t->last_code = code;
  if (restarted) {
    t->restarts++;
    t->by_cause[cause]++;
  }
  pthread_mutex_unlock(&g_stats_lock);
}

static void describe(const rk_actor_t *a, char *buf, size_t cap) {
  rk__registry_describe(a, buf, cap);
}

/* The actor is FAILED for good because `reason`: tell on_event and the
 * linked actors (supervised ones fault, others are stopped and FAILED in
 * turn). */
static void failed(tracked_t *t, rk_actor_fault_t cause, int32_t code,
                   const char *reason) {
  if (t->failed) return;
  t->failed = true;
  for (size_t i = 0; i < g_nfailed_hooks; ++i)
    g_failed_hooks[i].fn(t->actor, reason, g_failed_hooks[i].user);
  note_fault(t, cause, code, false);
  emit(t, RK_SUPERVISOR_FAILED, cause, code, reason);
  char name[80], why[kWhy];
  describe(t->actor, name, sizeof name);
  snprintf(why, sizeof why, "linked actor %s failed (%.*s)", name, 120, reason);
  for (size_t i = 0; i < g_nlinks; ++i) {
    rk_actor_t *other = g_links[i].a == t->actor   ? g_links[i].b
                        : g_links[i].b == t->actor ? g_links[i].a
                                                   : NULL;
    tracked_t *o = other ? find(other) : NULL;
    if (!o || o->failed) continue;
    const rk_actor_state_t st = rk_actor_state(other);
    if (st == RK_ACTOR_TERMINATED || st == RK_ACTOR_FAILED) continue;
    if (o->group) {
      o->link_fault = true;
      snprintf(o->link_why, sizeof o->link_why, "%s", why);
    } else {
      /* The statistics first: whoever sees it FAILED sees why. */
      note_fault(o, RK_ACTOR_FAULT_LINK, 0, false);
      rk__actor_stop_and_fail(other, kLinkStopNs, why);
      failed(o, RK_ACTOR_FAULT_LINK, 0, why);
    }
  }
}

/* Stops `t`'s actor and makes it FAILED because `reason`. */
static void give_up(tracked_t *t, rk_actor_fault_t cause, int32_t code,
                    const char *reason) {
  const uint64_t stop = t->group ? t->group->o.stop_timeout_ns : kLinkStopNs;
  note_fault(t, cause, code, false); /* before anyone sees it FAILED */
  rk__actor_stop_and_fail(t->actor, stop, reason);
  failed(t, cause, code, reason);
}

/* Restarts one actor; on failure it is FAILED (by rk__actor_restart). */
static void restart_one(tracked_t *t, rk_actor_fault_t cause, int32_t code,
                        const char *detail) {
  const rk_supervisor_t *g = t->group;
  const rk_status_t s =
      rk__actor_restart(t->actor, g->o.restart_state == RK_RESTART_LAST_KNOWN,
                        g->o.stop_timeout_ns, detail);
  if (s == RK_ERR_INVALID_STATE && rk_actor_state(t->actor) != RK_ACTOR_FAILED)
    return; /* terminated meanwhile: nothing to restart */
  if (s != RK_OK) {
    char reason[kWhy];
    snprintf(reason, sizeof reason, "%s", rk__actor_fail_reason(t->actor));
    failed(t, s == RK_ERR_TIMEOUT ? RK_ACTOR_FAULT_DEADLINE : cause, code,
           reason);
    return;
  }
  note_fault(t, cause, code, true);
  /* What the old incarnation did after the fault was noticed is its own. */
  rk__actor_counts(t->actor, &t->seen);
  t->progress_ns = rk__now_ns();
  t->link_fault = false;
  emit(t, RK_SUPERVISOR_RESTARTED, cause, code, detail);
}

static bool running(const rk_actor_t *a) {
  const rk_actor_state_t st = rk_actor_state(a);
  return st != RK_ACTOR_TERMINATING && st != RK_ACTOR_TERMINATED &&
         st != RK_ACTOR_FAILED;
}

/* `t` faulted: restart it (one-for-one) or its group (one-for-all) within
 * the budget, else give up. */
static void on_fault(tracked_t *t, rk_actor_fault_t cause, int32_t code,
                     const char *detail) {
  rk_supervisor_t *g = t->group;
  const uint64_t now = rk__now_ns();
  const bool all = g->o.strategy == RK_SUPERVISE_ONE_FOR_ALL;
  uint64_t **times = all ? &g->times : &t->times;
  size_t *ntimes = all ? &g->ntimes : &t->ntimes;
  char name[80], member[kWhy];
  describe(t->actor, name, sizeof name);
  snprintf(member, sizeof member, "group member %s faulted (%.*s)", name, 120,
           detail);
  if (!budget_allows(g, *times, *ntimes, now)) {
    char reason[kWhy];
    snprintf(reason, sizeof reason,
             "restarted %u times within %.3f ms; the last fault: %.*s",
             g->o.max_restarts, (double)g->o.window_ns / 1e6, 120, detail);
    give_up(t, cause, code, reason);
    if (all)
      for (size_t i = 0; i < g_ntracked; ++i) {
        tracked_t *m = g_tracked[i];
        if (m != t && m->group == g && running(m->actor))
          give_up(m, RK_ACTOR_FAULT_GROUP, 0, reason);
      }
    return;
  }
  budget_note(g, times, ntimes, now);
  restart_one(t, cause, code, detail);
  if (all)
    for (size_t i = 0; i < g_ntracked; ++i) {
      tracked_t *m = g_tracked[i];
      if (m != t && m->group == g && running(m->actor))
        restart_one(m, RK_ACTOR_FAULT_GROUP, 0, member);
    }
}

/* One look at a tracked actor. */
static void check(tracked_t *t, uint64_t now) {
  rk_actor_t *a = t->actor;
  const rk_actor_state_t st = rk_actor_state(a);
  if (st == RK_ACTOR_FAILED) {
    if (t->failed) return;
    /* FAILED by itself: its handler missed rk_actor_terminate's deadline
     * (or a link or a group failed it before this look). */
    char reason[kWhy];
    snprintf(reason, sizeof reason, "%s", rk__actor_fail_reason(a));
    failed(t, RK_ACTOR_FAULT_DEADLINE, 0, reason);
    rk_supervisor_t *g = t->group;
    if (g && g->o.strategy == RK_SUPERVISE_ONE_FOR_ALL) {
      char name[80], why[kWhy];
      describe(a, name, sizeof name);
      snprintf(why, sizeof why, "group member %s failed (%.*s)", name, 120,
               reason);
      for (size_t i = 0; i < g_ntracked; ++i) {
        tracked_t *m = g_tracked[i];
        if (m != t && m->group == g && running(m->actor))
          give_up(m, RK_ACTOR_FAULT_GROUP, 0, why);
      }
    }
    return;
  }
  if (!t->group && t->link_fault) {
    /* Told of a remote failure (rk__supervise_link_fault), unsupervised:
     * stopped and FAILED, and its own links told. */
    t->link_fault = false;
    if (!running(a)) return;
    char why[kWhy];
    snprintf(why, sizeof why, "%s", t->link_why);
    note_fault(t, RK_ACTOR_FAULT_LINK, 0, false);
    rk__actor_stop_and_fail(a, kLinkStopNs, why);
    failed(t, RK_ACTOR_FAULT_LINK, 0, why);
    return;
  }
  if (!t->group || !running(a)) return;
  const rk_supervisor_options_t *o = &t->group->o;
  rk__actor_counts_t c;
  rk__actor_counts(a, &c);
  rk_actor_fault_t fault = RK_ACTOR_FAULT_NONE;
  int32_t code = 0;
  char detail[kWhy];
  /* Work waiting, none finished since the last look, and nothing else
   * holding it up: a deactivated actor keeps its requests queued, and a
   * full output ring waits for a receiver. */
  const bool hanging = st == RK_ACTOR_ACTIVE && c.waiting && !c.output_full &&
                       c.processed == t->seen.processed;
  if (c.device_faults > t->seen.device_faults) {
    fault = RK_ACTOR_FAULT_DEVICE;
    code = c.last_device_status;
    snprintf(detail, sizeof detail,
             "the device could not run its requests (%s)",
             rk_status_name((rk_status_t)code));
  } else if (o->handler_faults == RK_HANDLER_FAULT_NONZERO &&
             c.handler_errors > t->seen.handler_errors) {
    fault = RK_ACTOR_FAULT_HANDLER;
    code = c.last_handler_code;
    snprintf(detail, sizeof detail, "the handler returned %d", (int)code);
  } else if (t->link_fault) {
    fault = RK_ACTOR_FAULT_LINK;
    snprintf(detail, sizeof detail, "%s", t->link_why);
  } else if (o->hang_timeout_ns && hanging &&
             now - t->progress_ns >= o->hang_timeout_ns) {
    fault = RK_ACTOR_FAULT_DEADLINE;
    snprintf(detail, sizeof detail,
             "no request finished within %.3f ms while %llu waited",
             (double)o->hang_timeout_ns / 1e6, (unsigned long long)c.waiting);
  }
  if (!hanging) t->progress_ns = now;
  t->seen = c;
  if (fault != RK_ACTOR_FAULT_NONE) on_fault(t, fault, code, detail);
}

/* ---- The thread ---------------------------------------------------------- */

static void *supervise_main(void *arg) {
  (void)arg;
  rk__set_thread_name("rk-supervise");
  pthread_mutex_lock(&g_lock);
  while (watching()) {
    const uint64_t now = rk__now_ns();
    for (size_t i = 0; i < g_ntracked; ++i) check(g_tracked[i], now);
    rk__cond_wait_until(&g_wake, &g_lock, rk__now_ns() + kPollNs);
  }
  g_running = false;
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

static void init_wake(void) { rk__cond_init_monotonic(&g_wake); }

/* Starts the thread if it is not running. Caller holds g_lock. */
static rk_status_t ensure_thread(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_wake);
  if (g_running) return RK_OK;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  const int err = pthread_create(&th, &attr, supervise_main, NULL);
  pthread_attr_destroy(&attr);
  if (err)
    return rk__fail(RK_ERR_OUT_OF_MEMORY,
                    "supervisor: cannot start the supervision thread (%s)",
                    strerror(err));
  g_running = true;
  return RK_OK;
}

/* ---- API ----------------------------------------------------------------- */

static rk_status_t check_options(const rk_supervisor_options_t *o) {
  if (o->strategy != RK_SUPERVISE_ONE_FOR_ONE &&
      o->strategy != RK_SUPERVISE_ONE_FOR_ALL)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "supervisor: unknown strategy %d",
                    (int)o->strategy);
  if (o->restart_state != RK_RESTART_FRESH &&
      o->restart_state != RK_RESTART_LAST_KNOWN)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor: unknown restart state %d",
                    (int)o->restart_state);
  if (o->handler_faults != RK_HANDLER_FAULT_NONZERO &&
      o->handler_faults != RK_HANDLER_FAULT_NEVER)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor: unknown handler fault policy %d",
                    (int)o->handler_faults);
  if (!o->window_ns || !o->stop_timeout_ns)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor: window_ns and stop_timeout_ns must be "
                    "positive");
  if (o->max_restarts > kMaxBudget)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor: max_restarts %u is more than %d",
                    o->max_restarts, kMaxBudget);
  return RK_OK;
}

rk_status_t rk_supervisor_create(const rk_supervisor_options_t *options,
                                 rk_supervisor_t **out_supervisor) {
  if (!out_supervisor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor_create: out_supervisor is NULL");
  rk_supervisor_options_t o;
  rk_supervisor_options_init(&o);
  if (options) o = *options;
  RK_RETURN_IF_ERROR(check_options(&o));
  rk_supervisor_t *g = calloc(1, sizeof *g);
  if (!g) return rk__fail(RK_ERR_OUT_OF_MEMORY, "supervisor_create");
  g->o = o;
  *out_supervisor = g;
  return RK_OK;
}

rk_status_t rk_supervisor_add(rk_supervisor_t *g, rk_actor_t *actor) {
  if (!g || !actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor_add: supervisor and actor are required");
  if (rk__actor_remote(actor)) return rk__proxy_refuse(actor, "supervisor_add");
  if (!running(actor))
    return rk__fail(RK_ERR_INVALID_STATE, "supervisor_add: the actor is %s",
                    rk_actor_state_name(rk_actor_state(actor)));
  if (g->o.restart_state == RK_RESTART_LAST_KNOWN &&
      !rk__actor_can_read_state(actor))
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "supervisor_add: this actor's state cannot be read back "
                    "for a restart with the last-known state (a resident "
                    "actor on this backend); use RK_RESTART_FRESH");
  pthread_mutex_lock(&g_lock);
  rk_status_t s = RK_OK;
  tracked_t *t = find_or_add(actor);
  if (!t) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "supervisor_add");
  } else if (t->group) {
    s = rk__fail(RK_ERR_ALREADY_EXISTS,
                 "supervisor_add: the actor is supervised already (one "
                 "group per actor; rk_supervisor_remove first)");
  } else {
    set_group(t, g);
    t->failed = false;
    t->link_fault = false;
    t->ntimes = 0;
    rk__actor_counts(actor, &t->seen);
    t->progress_ns = rk__now_ns();
    s = ensure_thread();
    if (s != RK_OK) set_group(t, NULL);
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

rk_status_t rk_supervisor_remove(rk_supervisor_t *g, rk_actor_t *actor) {
  if (!g || !actor)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "supervisor_remove: supervisor and actor are required");
  pthread_mutex_lock(&g_lock);
  tracked_t *t = find(actor);
  const bool member = t && t->group == g;
  if (member) set_group(t, NULL);
  pthread_mutex_unlock(&g_lock);
  if (!member)
    return rk__fail(RK_ERR_NOT_FOUND,
                    "supervisor_remove: the actor is not in this group");
  return RK_OK;
}

void rk_supervisor_destroy(rk_supervisor_t *g) {
  if (!g) return;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_ntracked; ++i)
    if (g_tracked[i]->group == g) set_group(g_tracked[i], NULL);
  pthread_mutex_unlock(&g_lock);
  free_group(g);
}

rk_status_t rk_actor_supervise(rk_actor_t *actor,
                               const rk_supervisor_options_t *options) {
  if (rk__actor_remote(actor))
    return rk__proxy_refuse(actor, "actor_supervise");
  rk_supervisor_t *g = NULL;
  RK_RETURN_IF_ERROR(rk_supervisor_create(options, &g));
  g->owned = true;
  rk_status_t s = rk_supervisor_add(g, actor);
  if (s != RK_OK) free_group(g);
  return s;
}

rk_status_t rk_actor_link(rk_actor_t *a, rk_actor_t *b) {
  if (!a || !b || a == b)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_link: two different actors are required");
  /* A remote one: the link goes through its cluster (both ways too). */
  if (rk__actor_remote(a) && rk__actor_remote(b))
    return rk__proxy_refuse(a, "actor_link");
  if (rk__actor_remote(a)) return rk_cluster_link(rk__actor_remote(a), b);
  if (rk__actor_remote(b)) return rk_cluster_link(rk__actor_remote(b), a);
  pthread_mutex_lock(&g_lock);
  rk_status_t s = RK_OK;
  if (linked(a, b)) {
    s = rk__fail(RK_ERR_ALREADY_EXISTS, "actor_link: linked already");
  } else if (!find_or_add(a) || !find_or_add(b)) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_link");
  } else {
    if (g_nlinks == g_caplinks) {
      const size_t cap = g_caplinks ? g_caplinks * 2 : 16;
      link_t *grown = realloc(g_links, cap * sizeof *grown);
      if (!grown) s = rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_link");
      if (grown) {
        g_links = grown;
        g_caplinks = cap;
      }
    }
    if (s == RK_OK) {
      g_links[g_nlinks++] = (link_t){a, b};
      s = ensure_thread();
      if (s != RK_OK) --g_nlinks;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

/* Caller holds g_lock. */
static bool unlink_locked(const rk_actor_t *a, const rk_actor_t *b) {
  for (size_t i = 0; i < g_nlinks; ++i)
    if ((g_links[i].a == a && g_links[i].b == b) ||
        (g_links[i].a == b && g_links[i].b == a)) {
      g_links[i] = g_links[--g_nlinks];
      return true;
    }
  return false;
}

rk_status_t rk_actor_unlink(rk_actor_t *a, rk_actor_t *b) {
  if (!a || !b)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_unlink: two actors are required");
  if (rk__actor_remote(a) && rk__actor_remote(b))
    return rk__fail(RK_ERR_NOT_FOUND, "actor_unlink: not linked");
  if (rk__actor_remote(a)) return rk_cluster_unlink(rk__actor_remote(a), b);
  if (rk__actor_remote(b)) return rk_cluster_unlink(rk__actor_remote(b), a);
  pthread_mutex_lock(&g_lock);
  const bool was = unlink_locked(a, b);
  pthread_mutex_unlock(&g_lock);
  if (!was) return rk__fail(RK_ERR_NOT_FOUND, "actor_unlink: not linked");
  return RK_OK;
}

/* ---- Hooks of the actor layer -------------------------------------------- */

rk_status_t rk__supervise_link_fault(rk_actor_t *actor, const char *why) {
  pthread_mutex_lock(&g_lock);
  tracked_t *t = find_or_add(actor);
  rk_status_t s = RK_OK;
  if (!t) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "supervisor: link fault");
  } else {
    t->link_fault = true;
    snprintf(t->link_why, sizeof t->link_why, "%s", why);
    s = ensure_thread();
    pthread_cond_signal(&g_wake);
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

rk_status_t rk__supervise_watch(rk_actor_t *actor, bool on) {
  pthread_mutex_lock(&g_lock);
  tracked_t *t = on ? find_or_add(actor) : find(actor);
  rk_status_t s = RK_OK;
  if (t) {
    t->watched = on;
    if (on) s = ensure_thread();
  } else if (on) {
    s = rk__fail(RK_ERR_OUT_OF_MEMORY, "supervisor: watch");
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

rk_status_t rk__actor_failed_hook_add(rk__actor_failed_hook_fn fn, void *user) {
  pthread_mutex_lock(&g_lock);
  rk_status_t s = RK_OK;
  if (g_nfailed_hooks == kMaxFailedHooks)
    s = rk__fail(RK_ERR_OUT_OF_RANGE, "supervisor: more than %d failure hooks",
                 kMaxFailedHooks);
  else {
    g_failed_hooks[g_nfailed_hooks].fn = fn;
    g_failed_hooks[g_nfailed_hooks++].user = user;
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

void rk__actor_failed_hook_remove(rk__actor_failed_hook_fn fn, void *user) {
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_nfailed_hooks; ++i)
    if (g_failed_hooks[i].fn == fn && g_failed_hooks[i].user == user) {
      g_failed_hooks[i] = g_failed_hooks[--g_nfailed_hooks];
      break;
    }
  pthread_mutex_unlock(&g_lock);
}

void rk__supervise_forget(rk_actor_t *actor) {
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_nlinks;)
    if (g_links[i].a == actor || g_links[i].b == actor)
      g_links[i] = g_links[--g_nlinks];
    else
      ++i;
  if (g_nlinks == 0) {
    free(g_links);
    g_links = NULL;
    g_caplinks = 0;
  }
  tracked_t *t = NULL;
  pthread_mutex_lock(&g_stats_lock);
  for (size_t i = 0; i < g_ntracked; ++i)
    if (g_tracked[i]->actor == actor) {
      t = g_tracked[i];
      g_tracked[i] = g_tracked[--g_ntracked];
      break;
    }
  if (g_ntracked == 0) {
    free(g_tracked);
    g_tracked = NULL;
    g_captracked = 0;
  }
  pthread_mutex_unlock(&g_stats_lock);
  pthread_mutex_unlock(&g_lock);
  if (t) {
    if (t->group && t->group->owned) free_group(t->group);
    free(t->times);
    free(t);
  }
}

void rk__supervise_stats(const rk_actor_t *actor, rk_actor_stats_t *st) {
  pthread_mutex_lock(&g_stats_lock);
  for (size_t i = 0; i < g_ntracked; ++i) {
    const tracked_t *t = g_tracked[i];
    if (t->actor != actor) continue;
    st->supervised = t->in_group;
    st->restarts = t->restarts;
    memcpy(st->restarts_by_cause, t->by_cause, sizeof t->by_cause);
    st->last_fault = t->last_fault;
    st->last_fault_code = t->last_code;
    break;
  }
  pthread_mutex_unlock(&g_stats_lock);
}
