/* short_lock.pml - a remote actor handle's lock and its sleepers
 * (src/cluster/cluster.c: rk_remote_actor_t's `mu`, `wake`, `sleepers`;
 * the lock is rk__short_lock_t of src/base/sys.h).
 *
 * The lock is taken with an atomic exchange and released with a plain
 * store; a thread that finds it taken retries (spins, yields, naps: all
 * the same retry here). A thread that waits for a change of the handle
 * (an answer, window room) holds the lock, reads the `wake` word, counts
 * itself in `sleepers`, releases the lock and sleeps on `wake` (a futex:
 * asleep only while the word still holds the value read), then takes the
 * lock again, uncounts itself and looks again. A thread that makes such a
 * change makes it under the lock and, when `sleepers` is not 0, moves
 * `wake` and wakes every sleeper on it (wake_handle).
 *
 * Here two waiters each wait for an answer of their own; two answerers
 * each deliver one. Checked: no two threads inside the lock at once (an
 * assertion), and nobody sleeps forever (no invalid end state: no lost
 * wake-up), whatever the interleaving.
 *
 * With -DCREDIT the change comes without the lock: a receive that takes
 * an answer without it (its receiving role, base/bias.h) returns window
 * room by storing its count `taken`, then (behind a light fence) reads
 * `sleepers`, and only when that is not 0 takes the lock to wake them. A
 * sender waiting for room, once it has counted itself and released the
 * lock, looks at `taken` again (behind the heavy fence) before it sleeps.
 * Promela's interleavings are sequentially consistent, which the two
 * fences give those two store-then-load pairs. One sender waits for room
 * that one receive returns.
 *
 * Negative controls:
 *   -DBUG_NO_RECHECK    (CREDIT) the sender sleeps without looking again:
 *                       room returned between its look and its count is
 *                       missed (deadlock)
 *   -DBUG_SEQ_UNLOCKED  the waiter reads `wake` after releasing the lock:
 *                       an answer and its wake between the release and
 *                       the read are missed (deadlock)
 *   -DBUG_COUNT_UNLOCKED the waiter counts itself after releasing the
 *                       lock: the answerer sees no sleeper and wakes
 *                       nobody (deadlock)
 *   -DBUG_TEST_THEN_SET the lock taken by a load and then a store rather
 *                       than one exchange: two threads inside (assert)
 */
#define NW 2 /* waiters, and answerers: one each per answer */

bit held = 0;     /* the short lock */
byte inside = 0;  /* threads inside the lock (checked) */
byte wake = 0;    /* the handle's wake word */
byte sleepers = 0;
bit answered[NW];
bit asleep[4];    /* per waiter process id: asleep on the futex */

inline lock() {
#ifdef BUG_TEST_THEN_SET
  do
  :: held == 0 -> held = 1; break
  :: else -> skip
  od;
#else
  atomic { held == 0 -> held = 1 };
#endif
  inside++;
  assert(inside == 1)
}

inline unlock() {
  inside--;
  held = 0
}

/* futex wait on `wake` for value s: asleep only if the word still holds
 * it, in one step; woken by a wake-all. */
inline futex_wait(s) {
  atomic {
    if
    :: wake == s -> asleep[_pid] = 1
    :: else -> skip
    fi
  };
  (asleep[_pid] == 0)
}

inline wake_all() {
  atomic {
    q = 0;
    do
    :: q < 4 -> asleep[q] = 0; q++
    :: else -> break
    od
  }
}

#ifndef CREDIT
proctype waiter(byte w) {
  byte s;
  lock();
  do
  :: answered[w] -> break
  :: else ->
#ifdef BUG_SEQ_UNLOCKED
#ifdef BUG_COUNT_UNLOCKED
     unlock(); s = wake; sleepers++;
#else
     sleepers++; unlock(); s = wake;
#endif
#else
#ifdef BUG_COUNT_UNLOCKED
     s = wake; unlock(); sleepers++;
#else
     s = wake; sleepers++; unlock();
#endif
#endif
     futex_wait(s);
     lock();
     sleepers--
  od;
  unlock()
}

proctype answerer(byte w) {
  byte q;
  lock();
  answered[w] = 1;
  if
  :: sleepers > 0 -> wake++; wake_all()
  :: else -> skip
  fi;
  unlock()
}
#endif

#ifdef CREDIT
bit taken = 0; /* the receive's count of window room returned */

proctype sender() {
  byte s;
  bit came;
  lock();
  do
  :: taken -> break
  :: else ->
     s = wake; sleepers++; unlock();
#ifdef BUG_NO_RECHECK
     came = 0;
#else
     lock(); came = taken; unlock();
#endif
     if
     :: !came -> futex_wait(s)
     :: else -> skip
     fi;
     lock();
     sleepers--
  od;
  unlock()
}

proctype receiver() {
  byte q;
  taken = 1;
  if
  :: sleepers > 0 ->
     lock();
     if
     :: sleepers > 0 -> wake++; wake_all()
     :: else -> skip
     fi;
     unlock()
  :: else -> skip
  fi
}

init {
  atomic {
    run sender();
    run receiver()
  }
}
#else
init {
  atomic {
    run waiter(0);
    run waiter(1);
    run answerer(0);
    run answerer(1)
  }
}
#endif
