/* batch.pml - a remote handle's send buffer (src/cluster/cluster.c:
 * post_request, out_flush_locked, flush_handles).
 *
 * NS threads send K requests each on a handle. Each goes either into the
 * handle's buffer (when requests are on their way: modelled as a free
 * choice, except that a buffer that holds some and is not full always
 * takes the next one) or straight to the endpoint (always when the
 * buffer is full: another thread's send filled it and is posting it). Under the handle's mutex (an atomic step here)
 * a send appends to the buffer, or, going straight, notes whether it is
 * `behind`: the buffer is not empty or a taken-out buffer is being posted
 * (`flushing`). A send that is behind takes send_mu and posts the buffer
 * before its own request. Any thread may post the buffer (a pump): with
 * send_mu held it takes the buffer out under the mutex (flushing + 1),
 * posts it as one message, and then lowers `flushing`. The endpoint is a
 * FIFO channel: what is posted earlier arrives earlier.
 *
 * Property: the receiver gets every request once, each thread's in the
 * order that thread sent them.
 *
 * -DNO_BEHIND, the negative control, posts a request that goes straight
 * without looking whether a buffer is being posted (only whether the
 * buffer holds requests): spin must find a request overtaking buffered ones
 * that a pump took out but has not posted yet (an assertion).
 */

#ifndef K
#define K 2
#endif
#define NS 2
#define BMAX 2

chan wire = [NS * K] of { byte }; /* a request: sender * 16 + its number */
byte buf[BMAX];
byte nbuf = 0;
byte flushing = 0;
bool send_mu = false;
byte sent = 0;

inline lock(l) { atomic { !l -> l = true } }
inline unlock(l) { l = false }

/* out_flush_locked: with send_mu held. The buffer taken out under the
 * handle's mutex, posted as one message (its requests in order). Uses
 * the caller's taken[], n and j. */
inline flush_locked() {
  atomic {
    n = nbuf;
    j = 0;
    do
    :: j < n -> taken[j] = buf[j]; j++
    :: else -> break
    od;
    nbuf = 0;
    if
    :: n > 0 -> flushing++
    :: else -> skip
    fi
  }
  if
  :: n > 0 ->
     atomic {
       j = 0;
       do
       :: j < n -> wire ! taken[j]; j++
       :: else -> break
       od
     };
     flushing--
  :: else -> skip
  fi
}

active [NS] proctype sender() {
  byte taken[BMAX];
  byte n = 0;
  byte j = 0;
  byte i = 0;
  byte me = _pid * 16;
  bool behind = false;
  bool isfull = false; /* this send filled the buffer */
  do
  :: i < K ->
     if
     :: atomic {
          /* into the buffer, unless it is full (another thread's send
           * filled it and is about to post it) */
          nbuf < BMAX ->
          buf[nbuf] = me + i;
          nbuf++;
          isfull = (nbuf == BMAX);
          i++
        };
        if
        :: isfull -> lock(send_mu); flush_locked(); unlock(send_mu)
        :: !isfull -> skip /* still many on their way */
        :: !isfull -> lock(send_mu); flush_locked(); unlock(send_mu)
        fi
     :: atomic {
          /* straight to the endpoint: an empty buffer (nothing on its way,
           * or a call), or a full one */
          (nbuf == 0 || nbuf == BMAX) ->
#ifdef NO_BEHIND
          behind = (nbuf > 0)
#else
          behind = (nbuf > 0 || flushing > 0)
#endif
        };
        if
        :: behind ->
           lock(send_mu);
           flush_locked();
           wire ! me + i;
           unlock(send_mu)
        :: else ->
           wire ! me + i
        fi;
        i++
     fi
  :: else -> break
  od;
  /* What is left in the buffer goes at the end (a wait, a release). */
  lock(send_mu);
  flush_locked();
  unlock(send_mu);
  sent++
}

/* A thread that turns the workers posts due buffers (flush_handles). */
active proctype pump() {
  byte taken[BMAX];
  byte n = 0;
  byte j = 0;
  do
  :: lock(send_mu); flush_locked(); unlock(send_mu)
  :: sent == NS -> break
  od
}

active proctype receiver() {
  byte next[NS];
  byte got;
  byte total = 0;
  do
  :: total < NS * K ->
     wire ? got;
     assert(got / 16 < NS && got % 16 == next[got / 16]);
     next[got / 16]++;
     total++
  :: else -> break
  od
}
