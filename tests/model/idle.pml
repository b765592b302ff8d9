/* idle.pml - idle work offered to an actor's worker loop
 * (src/hal/actor_loop.c: rk__idle_slot_offer / rk__idle_slot_withdraw /
 * idle_call) and the cluster's use of it (src/cluster/cluster.c:
 * offer_drive, drive_turn, drive_leave, withdraw_drive).
 *
 * One worker loop makes TURNS passes; on each it does a turn of the work
 * on offer or its leave (as when it parks or stops), either one. Two exports of
 * one actor (works 1 and 2) are offered; export 1 is then withdrawn by
 * another thread, which hands the offer to export 2 as withdraw_drive does,
 * and frees export 1; finally export 2 is withdrawn and freed as well.
 *
 * Each turn of a work counts its export among the cluster's drivers the
 * first time (an exchange of `driving`); its leave, from the loop or from
 * the withdrawal, takes it out again (the same exchange).
 *
 * Checked: no call of a work runs or starts once its withdrawal returned
 * and it was freed; `drivers` never goes below zero and is zero at the end
 * (nobody stays counted as a driver, which would keep the progress thread
 * aside for good); the offer goes to one work at a time.
 *
 * Negative controls:
 *   -DBUG_NO_WAIT     the withdrawal does not wait for a call in progress
 *   -DBUG_READ_FIRST  the loop reads the work before it sets `busy`
 *   -DBUG_NO_LEAVE    the withdrawal does not take the export out of the
 *                     drivers itself (relies on the loop's leave)
 */
#ifndef TURNS
#define TURNS 3
#endif

byte work = 0;    /* the slot: 0 none, else the export (1, 2) */
bit busy = 0;     /* the loop is in a call, or about to read `work` */
bit freed[3];     /* ghost: the export is freed */
bit in_call[3];   /* ghost: a call of the export's work runs */
bit driving[3];
byte drivers = 0;
bit offered[3];   /* the cluster's flag (under its lock) */
bit done = 0;     /* the withdrawing thread finished */

/* drive_leave: the exchange of driving, then drivers--. */
inline leave(e) {
  atomic {
    if
    :: driving[e] -> driving[e] = 0; assert(drivers > 0); drivers--
    :: else -> skip
    fi
  }
}

/* drive_turn's first step. */
inline turn(e) {
  atomic {
    if
    :: !driving[e] -> driving[e] = 1; drivers++
    :: else -> skip
    fi
  }
}

/* idle_call: a turn of the work on offer, or its leave (as when the loop
 * parks or stops), whichever the loop is at. */
inline call() {
#ifdef BUG_READ_FIRST
  w = work;
  busy = 1;
#else
  busy = 1;
  w = work;
#endif
  if
  :: w != 0 ->
     assert(!freed[w]);
     in_call[w] = 1;
     if
     :: true -> leave(w)
     :: true -> turn(w)
     fi;
     assert(!freed[w]);
     in_call[w] = 0
  :: else -> skip
  fi;
  busy = 0
}

/* offer_drive: compare-and-swap of the slot from none. */
inline offer(e) {
  atomic {
    if
    :: work == 0 -> work = e; offered[e] = 1
    :: else -> offered[e] = 0
    fi
  }
}

/* withdraw_drive, then free. */
inline withdraw(e) {
  if
  :: offered[e] ->
     offered[e] = 0;
     atomic {
       if
       :: work == e -> work = 0; ok = 1
       :: else -> ok = 0
       fi
     };
     if
     :: ok ->
#ifndef BUG_NO_WAIT
        (busy == 0);
#endif
        skip
     :: else -> skip
     fi;
#ifndef BUG_NO_LEAVE
     leave(e);
#endif
     skip
  :: else -> skip
  fi
}

active proctype loop() {
  byte w, n = 0;
  do
  :: n < TURNS -> call(); n++
  :: n == TURNS -> break
  od;
  (done);
  assert(drivers == 0)
}

active proctype cluster() {
  bit ok;
  offer(1);
  offer(2); /* another export of the same actor: refused */
  assert(!offered[2]);
  /* rk_cluster_unexport of export 1: withdraw, hand the offer on, free. */
  withdraw(1);
  offer(2);
  atomic { assert(!in_call[1]); freed[1] = 1 };
  /* ... and of export 2. */
  withdraw(2);
  atomic { assert(!in_call[2]); freed[2] = 1 };
  done = 1
}
