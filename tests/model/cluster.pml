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
 * LOOKUP overtaking the WELCOME (an assertion). The joiner's `welcomed`
 * is its JOINING state in the code: set in the callback that takes the
 * WELCOME, so that what follows on the endpoint is taken, while the
 * joiner's own messages' endpoint is opened after the worker's turn and
 * every reply waits for it in the outbox (not modelled: the joiner sends
 * nothing here).
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
 * LEAVE (-DLEAVE): a member that leaves posts its last messages and BYE
 * on its message endpoint, then closes; the endpoint that watches it (the
 * socket the connection was made on: another transport) reports an error
 * to the observer, and nothing orders that error after the BYE. The
 * observer drives its worker in turns; each turn takes at most one
 * message and at most one error, in either order; an error only marks the
 * peer broken, and after each turn fail_broken fails a peer broken for
 * POLLS turns (kBrokenPolls; the code also waits 20 ms) unless its BYE
 * came. Property: the member that left is seen LEFT, never FAILED (its
 * actors TERMINATED). -DNO_GRACE, the negative control, fails the peer at
 * the error, as the first version did: spin must find it FAILED. A member
 * that dies says no BYE and fails after the grace (-DKILLED: the property
 * is then that it ends FAILED).
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

#elif defined(LEAVE)

#ifndef POLLS
#define POLLS 3
#endif
#ifdef NO_GRACE
#undef POLLS
#define POLLS 0
#endif
mtype = { DATA, BYE, ERR };
chan msgs = [3] of { mtype }; /* the message endpoint, in order */
chan errs = [1] of { mtype }; /* the watching endpoint's error */
byte state = 0;               /* the observer's view: 0 UP, 1 LEFT, 2 FAILED */
bool broken = false;
byte polls = 0;
bool gone = false;            /* the leaver has closed */

active proctype leaver() {
  msgs ! DATA;
  msgs ! DATA;
#ifndef KILLED
  msgs ! BYE;
#endif
  /* ucp_ep_close_nbx: the posted messages are flushed first; the watching
   * endpoint then sees the connection close. */
  errs ! ERR;
  gone = true
}

active proctype observer() {
  mtype m;
  do
  :: state != 0 -> break
  :: else ->
     /* one turn of ucp_worker_progress: a message and an error, either
      * order, each only if there */
     if
     :: atomic { nempty(msgs) -> msgs ? m;
          if
          :: m == BYE -> state = 1 /* peer_down(P_LEFT) */
          :: else -> skip
          fi }
     :: atomic { nempty(errs) -> errs ? m; broken = true }
     :: atomic { empty(msgs) && empty(errs) -> skip }
     fi;
     if
     :: state == 0 && nempty(errs) -> atomic { errs ? m; broken = true }
     :: else -> skip
     fi;
     if
     :: state == 0 && nempty(msgs) -> atomic { msgs ? m;
          if
          :: m == BYE -> state = 1
          :: else -> skip
          fi }
     :: else -> skip
     fi;
     /* fail_broken */
     if
     :: state == 0 && broken ->
        if
        :: polls >= POLLS -> state = 2 /* peer_down(P_FAILED) */
        :: else -> polls++
        fi
     :: else -> skip
     fi
  od;
#ifdef KILLED
  assert(state == 2)
#else
  assert(state == 1)
#endif
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
