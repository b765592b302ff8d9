/* restart.pml - a supervisor's restart of an actor's device side
 * (rk__actor_restart in src/actor/actor.c, RK_ABI_TERMINATE_NOW in
 * src/hal/actor_loop.c, rk__relaunch_restart in src/actor/actor_relaunch.c):
 * the old device side stops with requests still queued, a new one takes
 * over the same input ring, and every request is still answered exactly
 * once and in order.
 *
 * Processes: a producer (the host's senders) publishing N requests into a
 * ring of CAP slots; the device side (incarnation 1, then 2), which
 * answers requests and releases their slots; the supervisor, which at any
 * moment sets terminate = NOW, waits for `terminated`, resets the control
 * block and starts incarnation 2, and at the end terminates it with DRAIN
 * (answer everything queued) and checks that every request was answered.
 *
 * -DRELAUNCH: the relaunch driver, whose consumer role is a lock
 * (`consume`) that a caller may take to run a batch itself
 * (rk__relaunch_hold: only while `terminated` is clear), re-attached to the
 * ring under the lock each time; the device side takes the lock before it
 * says it stopped (stop_lock), and the supervisor clears `terminated`
 * under it. Without it: the CPU worker, which keeps its own head and
 * attaches once when it starts.
 *
 * The relaunch driver also keeps a view of the ring between batches (its
 * own head as of its last batch, stale while callers run batches), and
 * runs a batch only when that view says a request waits; otherwise it
 * parks, which returns at once while tail differs from that head. The view
 * goes by tail: after a caller has lapped the ring, the slot after a stale
 * head carries a later index's mark, so a view by the slot marks would say
 * "nothing" while tail says "something" and the driver would spin, never
 * answering (asserted: at most two such turns in a row).
 *
 * Negative controls, which spin must reject (an assertion: a request
 * answered twice or out of order, or a driver spinning on its view):
 *   BUG_NO_WAIT      the supervisor starts incarnation 2 without waiting
 *                    for incarnation 1 to say it stopped;
 *   BUG_ATTACH_EARLY incarnation 2 starts from a head read before the
 *                    old side stopped (CPU worker only);
 *   BUG_SHARED_MARKS the relaunch driver's view goes by the slot marks.
 *
 * Requests are 1..N; the ring indices are free-running bytes.
 */
#ifndef N
#define N 4
#endif
#ifndef CAP
#define CAP 2
#endif

byte slot[CAP];
byte mark[CAP]; /* index + 1 of the slot's last request */
byte head = 0, tail = 0;
byte produced = 0;
byte answered = 0; /* requests answered so far, in order */
bit terminate_now = 0, terminate_drain = 0, terminated = 0;
#ifdef RELAUNCH
bit consume = 0;
#define LOCK() atomic { consume == 0 -> consume = 1 }
#define UNLOCK() consume = 0
#endif

/* The answer to request m: the next in order, never twice. */
#define ANSWER(m) \
  assert((m) == answered + 1); \
  answered = answered + 1

proctype producer() {
  do
  :: produced < N ->
     (tail - head < CAP);
     slot[tail % CAP] = produced + 1;
     mark[tail % CAP] = tail + 1;
     tail = tail + 1; /* publish after the slot is written */
     produced = produced + 1
  :: produced == N -> break
  od
}

#ifdef RELAUNCH
/* One batch (of one request) under the consumer lock, from the ring's own
 * head (available_locked), which is then the driver's view. */
inline run_batch() {
  LOCK();
  h = head;
  if
  :: h != tail ->
     m = slot[h % CAP];
     ANSWER(m);
     head = h + 1
  :: else -> skip
  fi;
  own = head;
  UNLOCK()
}

/* Whether the driver's view (head `own`, maybe stale) says a request
 * waits. */
#ifdef BUG_SHARED_MARKS
#define WAITING(own) (mark[(own) % CAP] == (own) + 1)
#else
#define WAITING(own) (tail != (own))
#endif

proctype device(byte start) {
  byte h, m, own = start, spins = 0;
  do
  :: terminate_now -> LOCK(); break
  :: terminate_drain && head == tail -> LOCK(); break
  :: !terminate_now && !(terminate_drain && head == tail) ->
     if
     :: WAITING(own) -> run_batch(); spins = 0
     :: else ->
        if
        :: tail != own -> /* the park returns at once */
           spins++;
           assert(spins < 3)
        :: else -> (tail != own || terminate_now || terminate_drain)
        fi
     fi
  od;
  terminated = 1;
  UNLOCK()
}

/* rk_actor_call running its own batch on the relaunch path. */
proctype caller() {
  byte h, m;
  LOCK();
  if
  :: terminated == 0 ->
     h = head;
     if
     :: h != tail ->
        m = slot[h % CAP];
        ANSWER(m);
        head = h + 1
     :: else -> skip
     fi
  :: else -> skip
  fi;
  UNLOCK()
}
#else
/* The CPU worker: attaches once (`start`), then keeps its own head. */
proctype device(byte start) {
  byte h = start, m;
  do
  :: terminate_now -> break
  :: terminate_drain && h == tail -> break
  :: !terminate_now && !(terminate_drain && h == tail) ->
     if
     :: h != tail ->
        m = slot[h % CAP];
        ANSWER(m);
        h = h + 1;
        head = h /* release after the answer */
     :: else -> skip
     fi
  od;
  terminated = 1
}
#endif

proctype supervisor() {
  byte early = head;
  /* The restart, at any moment. */
  terminate_now = 1;
#ifndef BUG_NO_WAIT
  terminated == 1;
#endif
#ifdef RELAUNCH
  LOCK();
#endif
  terminate_now = 0;
  terminated = 0;
#ifdef RELAUNCH
  UNLOCK();
#endif
#ifdef BUG_ATTACH_EARLY
  run device(early);
#else
  run device(head);
#endif
  /* Then stop it for good, answering everything. */
  produced == N;
  terminate_drain = 1;
  terminated == 1;
  assert(answered == N)
}

init {
  atomic {
    run producer();
    run device(0);
    run supervisor();
#ifdef RELAUNCH
    run caller();
#endif
  }
}
