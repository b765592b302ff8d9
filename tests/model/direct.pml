/* direct.pml - requests answered beside an exported actor's rings
 * (src/cluster/cluster.c: direct_in, direct_run, forward_once, drive_turn;
 * src/hal/actor_loop.c: idle_call, rk__idle_direct).
 *
 * One member sends K requests to an exported actor, in order; they reach
 * the owner in order on the peer's UCP worker (`net`), whose callbacks run
 * on whichever thread turns that worker, one thread at a time (the
 * worker's lock). Two threads turn it: the actor's worker W, in a turn of
 * its idle work, and the progress thread P, at any time.
 *
 * A callback, under the export's mutex (an atomic step here): the request
 * goes into the actor's input ring (a route counted) - or, on W in its
 * turn, with no route counted, no answer taken and not yet posted
 * (`posting`) and fewer than DMAX kept, it is kept for the lane.
 * W outside its turns is the actor's loop: it runs the handler on what the
 * input ring holds, in order, each answer into the output ring. A turn of
 * W: forward_all, then callbacks, then direct_run - the handler on each
 * kept request, in order, each answer posted. forward_all, on either
 * thread (one at a time: exports_mu): takes the output ring's answers and
 * their routes under the export's mutex (posting + 1), posts them, then
 * posting - 1. The wire back to the member is a FIFO channel.
 *
 * Checked: the handler runs on the requests in the order sent, each once;
 * the member gets every answer once, in that order.
 *
 * Negative controls (spin must find an answer out of order):
 *   -DBUG_NO_POSTING  a request is kept while answers taken by forward_all
 *                     on the other thread are not yet posted
 *   -DBUG_NO_ROUTES   a request is kept while earlier ones are in the
 *                     actor (their routes counted)
 */
#ifndef K
#define K 4
#endif
#ifndef DMAX
#define DMAX 2
#endif

chan net = [K] of { byte };  /* member -> owner, on the peer's worker */
chan ring = [K] of { byte }; /* the actor's input ring */
chan out = [K] of { byte };  /* its output ring */
chan wire = [K] of { byte }; /* owner -> member */

byte routes = 0;  /* routes counted under the export's mutex */
byte posting = 0; /* answers taken by forward_all and not yet posted */
byte handled = 0; /* the last request the handler ran on */
bool wlock = false;   /* the peer's UCP worker */
bool fwd_mu = false;  /* exports_mu */
bool stop = false;

inline lock(l) { atomic { !l -> l = true } }
inline unlock(l) { l = false }

/* The handler on request r: in order, once. */
inline handle(r) {
  assert(r == handled + 1);
  handled = r
}

/* forward_all / forward_once: uses the caller's taken[], n and j. With
 * nothing in flight (the routes counted, which forward_once takes out
 * before it posts) it returns without exports_mu. */
inline forward() {
  if
  :: routes == 0 -> goto forwarded
  :: else -> skip
  fi;
  lock(fwd_mu);
  atomic {
    n = len(out);
    j = 0;
    do
    :: j < n -> out ? taken[j]; j++
    :: else -> break
    od;
    routes = routes - n;
    if
    :: n > 0 -> posting++
    :: else -> skip
    fi
  }
  j = 0;
  do
  :: j < n -> wire ! taken[j]; j++
  :: else -> break
  od;
  if
  :: n > 0 -> posting--
  :: else -> skip
  fi;
  unlock(fwd_mu);
forwarded:
  skip
}

/* A callback for request r on the thread `in_turn` says (W in its turn,
 * with its kept[] and nk). */
inline callback(r, in_turn) {
  atomic {
    keep = in_turn && nk < DMAX;
#ifndef BUG_NO_ROUTES
    keep = keep && routes == 0;
#endif
#ifndef BUG_NO_POSTING
    keep = keep && posting == 0;
#endif
    if
    :: keep -> kept[nk] = r; nk++
    :: else -> routes++; ring ! r
    fi
  }
}

active proctype member() {
  byte i = 1;
  do
  :: i <= K -> net ! i; i++
  :: else -> break
  od
}

active proctype worker() {
  byte taken[K];
  byte kept[DMAX];
  byte n = 0, j = 0, nk = 0, r = 0;
  bool keep = false;
  do
  :: /* the loop: a request from the input ring */
     atomic { ring ? r -> handle(r); out ! r }
  :: /* a turn of the idle work */
     forward();
     lock(wlock);
     do
     :: net ? r -> callback(r, true)
     :: true -> break
     od;
     unlock(wlock);
     /* direct_run */
     j = 0;
     do
     :: j < nk -> handle(kept[j]); wire ! kept[j]; j++
     :: else -> break
     od;
     nk = 0
  :: stop -> break
  od
}

active proctype progress() {
  byte taken[K];
  byte kept[DMAX]; /* unused: never in a turn */
  byte n = 0, j = 0, nk = 0, r = 0;
  bool keep = false;
  do
  :: lock(wlock);
     if
     :: nempty(net) -> net ? r; callback(r, false)
     :: empty(net) -> skip
     fi;
     unlock(wlock)
  :: forward()
  :: stop -> break
  od
}

/* The member's side: every answer once, in order; then everyone stops. */
active proctype receiver() {
  byte want = 1, r = 0;
  do
  :: want <= K -> wire ? r; assert(r == want); want++
  :: else -> break
  od;
  stop = true
}
