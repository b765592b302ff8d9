/* The Metal backend's stream protocol (src/backends/metal/metal_stream.c)
 * in Promela, checked by check_model.sh (see README.md).
 *
 * Processes:
 *   U  the user's thread: issues NOPS operations in program order (kinds in
 *      kind[]), then synchronizes (rk__mtl_stream_drain) and destroys the
 *      stream (stop, join the stream thread).
 *   S  the stream's thread (stream_main).
 *   Q  Metal's queue: runs committed command buffers in commit order, then
 *      their completion handler (completed()): a waiter's flag, or
 *      inflight-- for a command buffer committed by launch_now.
 *   V  (-DSECOND_SYNC) another thread synchronizing the same stream at the
 *      same time (rk_context_synchronize on the default stream).
 *
 * The mutex is `lock`; a condition variable is a broadcast generation
 * `gen`: a waiter reads it under the lock, releases the lock, and wakes
 * (re-taking the lock) once it has changed. Every broadcast in the code is
 * made under the lock, so none is lost this way; spurious wake-ups only
 * add interleavings the loops already handle.
 *
 * Checked: operations run in program order (a copy only after every
 * command buffer before it has finished: exec() asserts the order); at
 * most one thread runs held work at a time; after U's synchronization
 * every operation has run; every process ends (no deadlock).
 *
 * Negative controls (must fail):
 *   -DBUG_COPY_IGNORES_INFLIGHT  a copy runs at once while a command buffer
 *                                committed before it is still running
 *   -DBUG_DRAIN_IGNORES_INFLIGHT the synchronization returns with command
 *                                buffers still running
 *   -DBUG_NO_HANDLER_BROADCAST   the handler does not wake the waiters
 */

#ifndef NOPS
#define NOPS 6
#endif

#define LAUNCH 1
#define COPY 2

byte kind[NOPS + 1];

bit lock = 0;
byte gen = 0;

/* Held operations: ids held[qhead .. qtail - 1] (always consecutive). */
byte held[NOPS + 1];
byte qhead = 0, qtail = 0;
bool busy = false, stop = false;
byte inflight = 0, syncing = 0;

byte executed = 0; /* operations run so far */
byte running = 0;  /* threads running held work or a copy */

/* Committed command buffers: first op id, count, waiter (0: launch_now). */
chan cbq = [NOPS] of { byte, byte, byte };
bool wdone[4];
bool sdone = false, vdone = false, qstop = false;

inline acquire() {
  atomic { lock == 0 -> lock = 1 }
}

inline release() {
  lock = 0
}

inline broadcast() {
  gen++
}

/* pthread_cond_wait: called and returns with the lock held. */
inline wait(g) {
  g = gen;
  lock = 0;
  atomic { gen != g && lock == 0 -> lock = 1 }
}

inline exec(id) {
  atomic {
    assert(id == executed + 1);
    executed++
  }
}

/* take_step_locked: one copy, or the run of launches at the front. */
inline take_step(first, count) {
  first = held[qhead];
  count = 1;
  qhead++;
  if
  :: kind[first] == LAUNCH ->
    do
    :: qhead < qtail && kind[held[qhead]] == LAUNCH ->
      count++;
      qhead++
    :: else -> break
    od
  :: else -> skip
  fi;
  busy = true
}

/* run_step_locked, for runner r (its waiter flag wdone[r]); both callers
 * take a step only when inflight is 0, under the lock it still holds. */
inline run_step(r, first, count, g) {
  assert(inflight == 0);
  running++;
  assert(running == 1);
  release();
  if
  :: kind[first] == COPY -> exec(first)
  :: else ->
    /* run_launches: one command buffer, commit_and_wait. */
    wdone[r] = false;
    cbq!first, count, r;
    acquire();
    do
    :: !wdone[r] -> wait(g)
    :: else -> break
    od;
    release()
  fi;
  acquire();
  running--;
  busy = false;
  broadcast()
}

/* rk__mtl_stream_drain for runner r. */
inline drain(r, first, count, g) {
  acquire();
  syncing++;
  do
#ifdef BUG_DRAIN_IGNORES_INFLIGHT
  :: qhead != qtail || busy ->
#else
  :: qhead != qtail || busy || inflight > 0 ->
#endif
    if
    :: qhead != qtail && !busy && inflight == 0 ->
      take_step(first, count);
      run_step(r, first, count, g)
    :: else -> wait(g)
    fi
  :: else -> break
  od;
  syncing--;
  broadcast()
}

proctype Queue() {
  byte f, c, w, i;
  do
  :: cbq?f, c, w ->
    i = 0;
    do
    :: i < c ->
      exec(f + i);
      i++
    :: else -> break
    od;
    acquire();
    if
    :: w == 0 -> inflight--
    :: else -> wdone[w] = true
    fi;
#ifndef BUG_NO_HANDLER_BROADCAST
    broadcast();
#endif
    release()
  :: qstop && len(cbq) == 0 -> break
  od
}

proctype Stream() {
  byte g, first, count;
  acquire();
  do
  :: true ->
    do
    :: (qhead == qtail || busy || inflight > 0 || syncing > 0) && !stop ->
      wait(g)
    :: else -> break
    od;
    if
    :: stop && qhead == qtail -> break
    :: else -> skip
    fi;
    if
    :: qhead == qtail || busy || inflight > 0 || syncing > 0 -> skip
    :: else ->
      take_step(first, count);
      run_step(1, first, count, g)
    fi
  od;
  release();
  sdone = true
}

#ifdef SECOND_SYNC
proctype Other() {
  byte g, first, count;
  drain(3, first, count, g);
  release();
  vdone = true
}
#endif

proctype User() {
  byte id = 1;
  byte g, first, count;
  do
  :: id <= NOPS ->
    if
    :: kind[id] == LAUNCH ->
      /* rk__mtl_stream_launch: launch_now on an idle stream. */
      acquire();
      if
      :: qhead == qtail && !busy ->
        inflight++;
        release();
        cbq!id, 1, 0
      :: else ->
        held[qtail] = id;
        qtail++;
        broadcast();
        release()
      fi
    :: kind[id] == COPY ->
      /* rk__mtl_stream_copy: at once when nothing is before it. */
      acquire();
      if
#ifdef BUG_COPY_IGNORES_INFLIGHT
      :: qhead == qtail && !busy ->
#else
      :: qhead == qtail && !busy && inflight == 0 ->
#endif
        busy = true;
        running++;
        assert(running == 1);
        release();
        exec(id);
        acquire();
        running--;
        busy = false;
        broadcast();
        release()
      :: else ->
        held[qtail] = id;
        qtail++;
        broadcast();
        release()
      fi
    fi;
    id++
  :: else -> break
  od;
  drain(2, first, count, g);
  assert(executed == NOPS);
  release();
#ifdef SECOND_SYNC
  (vdone);
#endif
  /* rk__mtl_stream_free: stop and join the stream's thread. */
  acquire();
  stop = true;
  broadcast();
  release();
  (sdone);
  qstop = true
}

init {
  /* launch, copy, launch, launch, copy, launch (then copies) */
  byte i = 1;
  do
  :: i <= NOPS ->
    if
    :: i == 1 || i == 3 || i == 4 || i == 6 -> kind[i] = LAUNCH
    :: else -> kind[i] = COPY
    fi;
    i++
  :: else -> break
  od;
  atomic {
    run Queue();
    run Stream();
#ifdef SECOND_SYNC
    run Other();
#endif
    run User()
  }
}
