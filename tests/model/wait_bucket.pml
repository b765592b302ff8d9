/* wait_bucket.pml - waiting on a word without futexes: the POSIX path of
 * rk__wait_while_equal / rk__wake_all (src/base/sys.c, what macOS runs).
 *
 * Words hash to buckets of one mutex and one condition variable. A waiter
 * takes its bucket's mutex, reads the word, and if it still holds the value
 * it waits for, sleeps on the condition variable (which releases the mutex
 * atomically); it then unlocks and returns, and its caller re-checks. A
 * waker stores the new value and then takes the bucket's mutex to
 * broadcast. Here two words share the one bucket (a hash collision): two
 * waiters, one per word, loop until their word is set; two wakers set one
 * word each and wake. With -DSPURIOUS the condition variable also wakes one
 * sleeper once at any moment (a spurious wake-up, as POSIX allows; only
 * once, or it could mask a lost wake-up).
 *
 * Checked: nobody sleeps forever (no invalid end state), i.e. no wake-up is
 * lost, whatever the interleaving.
 *
 * Negative controls (each must deadlock):
 *   -DBUG_WAKE_UNLOCKED  the waker broadcasts without the bucket's mutex:
 *                        its broadcast can fall between a waiter's check
 *                        and its sleep
 *   -DBUG_CHECK_UNLOCKED the waiter reads the word before taking the mutex
 */
#define NW 2 /* words, one waiter and one waker each */

bit word[NW];
bit lk = 0;            /* the bucket's mutex */
#define NP 8             /* process ids: spurious, init, 2 waiters, 2 wakers */
bit sleeping[NP];      /* per process: asleep on the condition variable */
byte finished = 0;

inline lock() { atomic { lk == 0 -> lk = 1 } }
inline unlock() { lk = 0 }

/* pthread_cond_wait: releases the mutex and sleeps in one step, then takes
 * the mutex again once woken. */
inline cond_wait() {
  atomic { lk = 0; sleeping[_pid] = 1 };
  (sleeping[_pid] == 0);
  lock()
}

inline broadcast() {
  atomic {
    q = 0;
    do
    :: q < NP -> sleeping[q] = 0; q++
    :: else -> break
    od
  }
}

proctype waiter(byte w) {
  byte q;
  do
  :: word[w] == 1 -> break
  :: else ->
     /* rk__wait_while_equal(&word[w], 0, 0) */
#ifdef BUG_CHECK_UNLOCKED
     if
     :: word[w] == 0 -> lock(); cond_wait(); unlock()
     :: else -> skip
     fi
#else
     lock();
     if
     :: word[w] == 0 -> cond_wait()
     :: else -> skip
     fi;
     unlock()
#endif
  od;
  finished++
}

proctype waker(byte w) {
  byte q;
  word[w] = 1;
  /* rk__wake_all(&word[w]) */
#ifdef BUG_WAKE_UNLOCKED
  broadcast()
#else
  lock();
  broadcast();
  unlock()
#endif
}

#ifdef SPURIOUS
/* One spurious wake-up of one process, whenever it sleeps. */
active proctype spurious() {
  byte p = 0;
  do
  :: p < NP - 1 -> p++
  :: break
  od;
end_wait:
  atomic { sleeping[p] == 1 -> sleeping[p] = 0 }
}
#endif

init {
  atomic {
    run waiter(0);
    run waiter(1);
    run waker(0);
    run waker(1)
  }
}
