/* pool.pml - the shared CPU worker pool of src/base/pool.c: workers that
 * spin and then park on a futex for new jobs, launchers that publish a job,
 * help run it, then spin and park until its last item is done, unlink it
 * and wait for the workers still inside it to leave.
 *
 * NW workers, NL launchers (each runs one job of ITEMS items, chunk 1),
 * all concurrently; then a stopper stops the pool (rk__pool_release's
 * last reference) and every worker must exit.
 *
 * Futexes are modelled with explicit sleepers: futex_wait(word, val)
 * blocks only if word == val at the call, and then until a futex_wake on
 * that word; a store without a wake wakes nobody. So a wake that is skipped
 * when it is needed shows up as an invalid end state (a deadlock).
 *
 * Checked: every item of every job runs exactly once (ghost counters); a
 * launcher returns only after all its items ran, and no worker is inside a
 * job once its launcher has returned (its stack frame is gone); nobody
 * sleeps forever (no invalid end state).
 *
 * Negative controls:
 *   -DBUG_NO_RECHECK     a worker parks without re-reading gen after it
 *                        raised sleepers: a lost wake-up
 *   -DBUG_NO_WAITING     the last item's finisher never wakes a parked
 *                        launcher (does not look at `waiting`)
 *   -DBUG_NO_ACTIVE_WAIT the launcher returns without waiting for workers
 *                        still inside its job
 *   -DBUG_LATE_SEEN      a worker that ran the only listed job waits for
 *                        the next generation with gen read after the job
 *                        instead of the value read under the lock: a bump
 *                        during the job (the stopper's) is lost
 *
 * A worker that found a job with no other job listed does not take the
 * lock again after it: it waits for the next generation with the `seen`
 * it read under the lock (every job listed later bumps gen after it). */
#ifndef NW
#define NW 2
#endif
#ifndef NL
#define NL 1
#endif
#ifndef ITEMS
#define ITEMS 2
#endif

/* futex words: 0 = gen, 1 + j = finished[j] */
#define NWORDS (1 + NL)
byte gen = 0;
byte sleepers = 0;
bool stop = false;
bit lk = 0; /* pool->lock */

byte next[NL];
byte done[NL];
bit finished[NL];
bit waiting[NL];
byte inside[NL];
bit listed[NL];   /* on the pool's list */
bit returned[NL]; /* ghost: the launcher has returned */
byte ran[NL * ITEMS];
byte launchers_done = 0;

/* sleeping[p] = the word process p sleeps on + 1, or 0 */
byte sleeping[NW + NL + 2];

inline word_value(w, v) {
  if
  :: w == 0 -> v = gen
  :: else -> v = finished[w - 1]
  fi
}

/* Blocks while the word equals val (checked atomically with going to
 * sleep), until a wake on the word. */
inline futex_wait(w, val) {
  atomic {
    word_value(w, tmp);
    if
    :: tmp == val -> sleeping[_pid] = w + 1
    :: else -> skip
    fi
  };
  (sleeping[_pid] == 0)
}

inline futex_wake(w) {
  atomic {
    q = 0;
    do
    :: q < NW + NL + 2 ->
       if
       :: sleeping[q] == w + 1 -> sleeping[q] = 0
       :: else -> skip
       fi;
       q++
    :: else -> break
    od
  }
}

inline lock() { atomic { lk == 0 -> lk = 1 } }
inline unlock() { lk = 0 }

/* work(job): claim and run items until none are left. */
inline work(j) {
  do
  :: assert(!returned[j]); /* the job lives in the launcher's frame */
     atomic { first = next[j]; next[j] = next[j] + 1 };
     if
     :: first >= ITEMS -> break
     :: else ->
        assert(!returned[j]);
        ran[j * ITEMS + first]++;
        assert(ran[j * ITEMS + first] == 1);
        atomic { done[j] = done[j] + 1; d = done[j] };
        if
        :: d == ITEMS ->
           finished[j] = 1;
#ifndef BUG_NO_WAITING
           if
           :: waiting[j] -> futex_wake(1 + j)
           :: else -> skip
           fi
#endif
        :: else -> skip
        fi
     fi
  od
}

proctype worker() {
  byte seen, first, d, tmp, q, j;
  bool found, others;
  do
  :: lock();
     if
     :: stop -> unlock(); break
     :: else -> skip
     fi;
     /* find_job: a listed job with items left */
     found = false;
     others = false;
     j = 0;
     do
     :: j < NL && !found ->
        if
        :: listed[j] && next[j] < ITEMS -> found = true
        :: else -> j++
        fi
     :: else -> break
     od;
     /* ... and whether another listed job has items left (pool.c's
      * find_job says "another job is listed after it", which covers
      * every such job: this is the weakest form of the condition) */
     q = 0;
     do
     :: q < NL ->
        if
        :: listed[q] && !(found && q == j) && next[q] < ITEMS -> others = true
        :: else -> skip
        fi;
        q++
     :: else -> break
     od;
     q = 0;
     if
     :: found -> inside[j]++
     :: else -> skip
     fi;
     seen = gen;
     unlock();
     if
     :: found ->
        work(j);
        assert(!returned[j]);
        inside[j]--;
#ifdef BUG_LATE_SEEN
        seen = gen;
#endif
        /* Alone: fall through to the wait below with `seen`. */
        found = others
     :: else -> skip
     fi;
     if
     :: found -> skip       /* others listed: look at the list again */
     :: else ->
        /* (the spin phase is left out: it only delays parking) */
        if
        :: gen != seen -> skip
        :: else ->
           sleepers++;
#ifdef BUG_NO_RECHECK
           /* parks on the value read before raising sleepers, without
            * the futex's own check: a bump in between is lost */
           atomic { sleeping[_pid] = 1 };
           (sleeping[_pid] == 0);
#else
           if
           :: gen == seen -> futex_wait(0, seen)
           :: else -> skip
           fi;
#endif
           sleepers--
        fi
     fi
  od
}

proctype launcher(byte j) {
  byte first, d, tmp, q;
  lock();
  listed[j] = 1;
  unlock();
  gen++;
  if
  :: sleepers > 0 -> futex_wake(0)
  :: else -> skip
  fi;
  work(j);
  /* spin, then park on finished */
  if
  :: finished[j] -> skip
  :: true ->
     waiting[j] = 1;
     do
     :: finished[j] -> break
     :: else -> futex_wait(1 + j, 0)
     od
  fi;
  lock();
  listed[j] = 0;
  unlock();
#ifndef BUG_NO_ACTIVE_WAIT
  (inside[j] == 0);
#endif
  assert(done[j] == ITEMS);
  returned[j] = 1;
  launchers_done++
}

proctype stopper() {
  byte q;
  (launchers_done == NL);
  lock();
  stop = true;
  unlock();
  gen++;
  futex_wake(0)
}

init {
  byte i;
  atomic {
    i = 0;
    do
    :: i < NW -> run worker(); i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < NL -> run launcher(i); i++
    :: else -> break
    od;
    run stopper()
  }
}
