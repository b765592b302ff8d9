/* park.pml - resident CUDA actor kernels stepping aside for the driver
 * (rk__cu_pause_actors / rk__cu_resume_actors in
 * src/backends/cuda/cuda_actor.c, rk_pa_next / rk_pa_exit in the kernel
 * text of src/codegen/emit_cuda_actor.c): the host asks a running kernel to
 * park (RK_ABI_TERMINATE_PARK, by compare-and-swap from 0), waits for it to
 * end, and relaunches it from the input ring's head; meanwhile the actor
 * layer may ask it to terminate (a plain store of DRAIN) at any moment.
 * Every request is answered exactly once and in order, a park never
 * reports a stop, a parked kernel is always relaunched unless it stopped,
 * and a terminate asked during a pause is never lost.
 *
 * Processes: a producer publishing N requests into a ring of CAP slots;
 * the kernel's B blocks (each claims the next request with a CAS on
 * `claim`, answers it in its turn (`publish`), and leaves on PARK at the
 * top of its loop, or on DRAIN once nothing is left to claim; the last
 * block out reports the stop unless it left to park); the pauser, which
 * pauses PAUSES times; the terminator, which asks for DRAIN once every
 * request is published (as rk_actor_terminate does) and waits for the
 * stop.
 *
 * A block polls until something it read changes (modelled as a wait on
 * that change), so a kernel that never ends or never comes back shows as
 * an invalid end state. A block that sees PARK leaves in the same step:
 * on the GPU nothing between that load and the kernel's end waits for the
 * host; the host's grace after it withdraws a request (10 ms) stands for
 * that step.
 *
 * -DTIMEOUT: the pauser may give up waiting (a kernel slow to leave): it
 * withdraws the request (CAS PARK -> 0) and relaunches the kernel only if
 * it has ended; blocks that stayed keep serving.
 *
 * Negative controls, which spin must reject:
 *   BUG_NO_CAS         the pauser stores PARK and then 0 without comparing:
 *                      a terminate asked meanwhile is lost (deadlock);
 *   BUG_SCHED_ZERO     a relaunch starts claiming at 0, not at the head
 *                      (a request answered twice: assertion);
 *   BUG_PARK_REPORTS_STOP  the last block out reports the stop even when
 *                      it parked: it is never relaunched, and the requests
 *                      left in the ring wait for ever (deadlock);
 *   BUG_SPLIT_EXIT     with TIMEOUT: a block that saw PARK leaves in a
 *                      later step than its load, with no grace: the
 *                      pauser decides before it is gone and never
 *                      relaunches it (deadlock).
 *
 * Requests are 1..N; the ring indices are free-running bytes.
 */
#ifndef N
#define N 3
#endif
#ifndef CAP
#define CAP 2
#endif
#ifndef B
#define B 2
#endif
#ifndef PAUSES
#define PAUSES 2
#endif

#define DRAIN 1
#define PARK 3

byte slot[CAP];
byte head = 0, tail = 0;
byte produced = 0;
byte answered = 0; /* requests answered so far, in order */
byte terminate = 0;
bit terminated = 0;
/* rk_sched: the next request to claim, the next to publish, blocks out. */
byte claim = 0, publish = 0, exited = 0;
byte running = 0; /* blocks of the kernel still running (its stream) */

/* The answer to request m: the next in order, never twice. */
#define ANSWER(m) \
  assert((m) == answered + 1); \
  answered = answered + 1

proctype producer() {
  do
  :: produced < N ->
     (tail - head < CAP);
     slot[tail % CAP] = produced + 1;
     tail = tail + 1; /* publish after the slot is written */
     produced = produced + 1
  :: produced == N -> break
  od
}

proctype block() {
  byte t, c, tl, m;
  do
  :: /* active and terminate in one load, before the tail */
#ifdef BUG_SPLIT_EXIT
     t = terminate;
     if
     :: t == PARK -> goto park
     :: else -> skip
     fi;
#else
     atomic {
       t = terminate;
       if
       :: t == PARK ->
          /* parked: counted out, no stop reported */
          exited = exited + 1;
#ifdef BUG_PARK_REPORTS_STOP
          if
          :: exited == B -> terminated = 1
          :: else -> skip
          fi;
#endif
          running = running - 1;
          goto done
       :: else -> skip
       fi
     };
#endif
     c = claim;
     tl = tail;
     if
     :: c != tl ->
        if
        :: atomic { claim == c -> claim = c + 1 } ->
           (publish == c); /* its turn */
           m = slot[c % CAP];
           ANSWER(m);
           head = c + 1;   /* the slot is free */
           publish = c + 1 /* the next turn */
        :: else -> skip    /* another block took it: look again */
        fi
     :: c == tl && t == DRAIN ->
        atomic {
          exited = exited + 1;
          if
          :: exited == B -> terminated = 1 /* the last one out */
          :: else -> skip
          fi;
          running = running - 1
        };
        goto done
     :: c == tl && t != DRAIN ->
        /* nothing to do: poll until something changes */
        (tail != tl || claim != c || terminate != t)
     fi
  od;
#ifdef BUG_SPLIT_EXIT
park:
  atomic {
    exited = exited + 1;
    running = running - 1
  };
#endif
done:
  skip
}

/* A launch: the scheduling words from the input ring's head. */
inline launch() {
  atomic {
#ifdef BUG_SCHED_ZERO
    claim = 0;
    publish = 0;
#else
    claim = head;
    publish = head;
#endif
    exited = 0;
    running = B;
    i = 0;
    do
    :: i < B -> run block(); i = i + 1
    :: i == B -> break
    od
  }
}

proctype pauser() {
  byte k = 0, i;
  bit parking, left;
  do
  :: k < PAUSES ->
     /* Ask: only a kernel nobody asked to stop. */
#ifdef BUG_NO_CAS
     terminate = PARK;
     parking = 1;
#else
     atomic {
       if
       :: terminate == 0 -> terminate = PARK; parking = 1
       :: else -> parking = 0
       fi
     };
#endif
     /* Wait for the kernel's stream. */
     if
     :: running == 0 -> left = 1
#ifdef TIMEOUT
     :: running != 0 ->
        /* Gives up: withdraws the request; after the grace, a kernel
         * that ended is relaunched. */
        atomic {
          if
          :: terminate == PARK -> terminate = 0
          :: else -> skip
          fi
        };
        left = (running == 0)
#endif
     fi;
     /* (the driver work) */
     /* Relaunch: withdraw the request first (a terminate asked meanwhile
      * stays), then launch unless the kernel stopped. */
#ifdef BUG_NO_CAS
     terminate = 0;
#else
     atomic {
       if
       :: terminate == PARK -> terminate = 0
       :: else -> skip
       fi
     };
#endif
     if
     :: parking && left && !terminated -> launch()
     :: else -> skip
     fi;
     k = k + 1
  :: k == PAUSES -> break
  od
}

proctype terminator() {
  (produced == N);
  terminate = DRAIN;
  (terminated == 1);
  assert(answered == N);
  assert(running == 0)
}

init {
  byte i;
  launch();
  atomic {
    run producer();
    run pauser();
    run terminator()
  }
}
