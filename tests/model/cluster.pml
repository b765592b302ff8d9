/* cluster.pml - two protocols of the cluster layer (src/cluster/cluster.c).
 *
 * JOIN (default): the hub answers a joiner's HELLO with WELCOME through its
 * outbox (UCX callbacks may not send), and only then, once the WELCOME is
 * posted, marks the joiner UP; a hub thread that looks a name up sends
 * LOOKUP only to UP peers. Messages on one endpoint arrive in order (a
 * FIFO channel). Property: the joiner never receives a LOOKUP before its
 * WELCOME (it would drop it: it does not know the hub yet, and the lookup
 * would time out). -DEARLY_UP, the negative control, marks the joiner UP
 * when the HELLO arrives, as the first version did: spin must find the
 * LOOKUP overtaking the WELCOME (an assertion).
 *
 * FAIL (-DFAIL): a caller waits for an answer on a handle (a condition
 * variable under the handle's mutex), re-checking "answered or the owner
 * failed" each time it wakes. The UCX error callback marks the peer FAILED
 * (under the cluster mutex, not the handle's), then locks each handle's
 * mutex and broadcasts. Property: the caller always finishes (no invalid
 * end state: nobody sleeps through the failure). -DNO_BROADCAST, the
 * negative control, skips the broadcast: spin must find the caller asleep
 * forever (a deadlock).
 *
 * MESH (-DMESH): N members join one hub at once. The hub handles HELLOs one
 * at a time (UCX callbacks): each joiner's WELCOME carries the cards of the
 * members the hub has welcomed so far -- UP, or WELCOMING (the WELCOME
 * queued in the outbox, not yet posted) -- and the joiner, once welcomed,
 * introduces itself (INTRO) to each. Property: every pair of members is
 * introduced exactly once (neither missing, which would leave the two
 * unable to reach each other's actors, nor twice). -DLIST_UP_ONLY, the
 * negative control, leaves WELCOMING members out of the cards: spin must
 * find a pair never introduced (two joins that overlap).
 */

#if defined(MESH)

#define N 3
byte hub[N];          /* the hub's view of member i: 0, 1 WELCOMING, 2 UP */
bool card[N * N];     /* card[i*N+j]: j's card is in i's WELCOME */
chan outbox = [N] of { byte };
bool welcome[N];      /* i's WELCOME has been posted */
byte intro[N * N];    /* intro[i*N+j]: i introduced itself to j */
byte finished = 0;

proctype hello(byte i) {
  /* on_hello: one callback at a time */
  byte j = 0;
  atomic {
    do
    :: j < N ->
       if
#ifdef LIST_UP_ONLY
       :: j != i && hub[j] == 2 -> card[i * N + j] = true
#else
       :: j != i && hub[j] != 0 -> card[i * N + j] = true
#endif
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
    hub[i] = 1;
    outbox ! i
  }
}

active proctype drain() {
  /* outbox_drain: posts a WELCOME, then marks the member UP */
  byte i, n = 0;
  do
  :: n < N -> outbox ? i; welcome[i] = true; hub[i] = 2; n++
  :: else -> break
  od
}

proctype joiner(byte i) {
  /* join() then introduce() */
  byte j = 0;
  welcome[i];
  do
  :: j < N ->
     if
     :: card[i * N + j] -> intro[i * N + j]++
     :: else -> skip
     fi;
     j++
  :: else -> break
  od;
  finished++
}

init {
  byte i = 0, j;
  atomic {
    do
    :: i < N -> run hello(i); run joiner(i); i++
    :: else -> break
    od
  }
  finished == N;
  i = 0;
  do
  :: i < N ->
     j = i + 1;
     do
     :: j < N -> assert(intro[i * N + j] + intro[j * N + i] == 1); j++
     :: else -> break
     od;
     i++
  :: else -> break
  od
}

#elif !defined(FAIL)

chan wire = [4] of { byte };  /* hub -> joiner, one endpoint, in order */
mtype = { WELCOME, LOOKUP };
bool up = false;              /* the hub's view of the joiner */
bool outbox = false;          /* a WELCOME waiting in the hub's outbox */
bool welcomed = false;        /* the joiner's view */
byte got = 0;

active proctype hub_callback() {
  /* on_hello: decides, queues the WELCOME */
#ifdef EARLY_UP
  up = true;
#endif
  outbox = true;
}

active proctype hub_progress() {
  /* outbox_drain: posts the WELCOME, then marks the joiner UP */
  outbox;
  wire ! WELCOME;
  outbox = false;
#ifndef EARLY_UP
  up = true;
#endif
}

active proctype hub_lookup() {
  up;
  wire ! LOOKUP;
}

active proctype joiner() {
  byte m;
  do
  :: got < 2 ->
     wire ? m;
     if
     :: m == WELCOME -> welcomed = true
     :: m == LOOKUP -> assert(welcomed)
     fi;
     got++
  :: got == 2 -> break
  od
}

#else /* FAIL */

bool h_lock = false;   /* the handle's mutex */
bool c_lock = false;   /* the cluster's mutex */
bool failed = false;   /* the peer's state: FAILED */
bool answered = false;
bool sleeping = false; /* the caller is in pthread_cond_wait */
bool signal = false;   /* a broadcast since it went to sleep */

inline lock(l) { atomic { !l -> l = true } }
inline unlock(l) { l = false }

active proctype caller() {
  lock(h_lock);
  do
  :: answered || failed -> break
  :: else ->
     /* pthread_cond_wait: releases the mutex and sleeps, atomically */
     atomic { signal = false; sleeping = true; unlock(h_lock) };
     signal;
     atomic { sleeping = false };
     lock(h_lock)
  od;
  unlock(h_lock)
}

active proctype error_callback() {
  lock(c_lock);
  failed = true;
  lock(h_lock);
#ifndef NO_BROADCAST
  signal = true;
#endif
  unlock(h_lock);
  unlock(c_lock)
}

#endif
