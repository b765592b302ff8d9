/* bias.pml - a Promela model of the biased role (src/base/bias.c), for spin.
 *
 * NP threads each do K operations on data the role protects. An operation
 * first tries rk__bias_enter: the first thread that asks claims the role
 * (NONE -> CLAIMING, its token, BIASED) and its operations then run in a
 * section of their own (busy = 1, load state, plain access, busy = 0)
 * with no lock. A thread that is not the owner, or an owner whose bias was
 * revoked, calls rk__bias_share (revoking the bias when another thread
 * holds it: BIASED -> REVOKING, wait for busy == 0, SHARED) and takes the
 * shared path, a lock; an operation may also go to rk__bias_share
 * straight away, as the C code's slow paths do. The protected data is a counter each operation
 * reads and writes back in two steps: a lost update means two operations
 * overlapped. Ghost `inside` counts the operations in progress.
 *
 * Each statement that touches a shared variable is one access of the C
 * code (a load, a store, or one compare-and-swap); spin's interleavings are
 * sequentially consistent, which the C code gets from its fences (the
 * owner's compiler barrier with the revoker's membarrier, or a full fence
 * on both sides).
 *
 * Configurations: -DNP=p (threads, default 2), -DK=k (operations each,
 * default 2). Negative controls, which spin must reject:
 *   -DBUG_STATE_FIRST  the owner loads state before it stores busy
 *   -DBUG_NO_WAIT      the revoker does not wait for busy == 0
 *   -DBUG_NO_RECHECK   the owner enters on its token alone, without
 *                      looking at state after storing busy
 */
#ifndef NP
#define NP 2
#endif
#ifndef K
#define K 2
#endif

#define NONE 0
#define CLAIMING 1
#define BIASED 2
#define REVOKING 3
#define SHARED 4

byte state = NONE;
byte owner = 0; /* the owner's pid + 1; 0 before the claim */
bit busy = 0;
bit lock = 0;
byte data = 0;
byte inside = 0; /* ghost */
byte finished = 0;

/* The protected access, in two steps; at most one at a time. */
inline access() {
  atomic { inside++; assert(inside == 1) }
  tmp = data;
  data = tmp + 1;
  atomic { inside-- }
}

/* claim(): NONE -> CLAIMING by CAS, then the token, then BIASED. */
inline claim() {
  atomic {
    if
    :: state == NONE -> state = CLAIMING; won = 1
    :: else -> won = 0
    fi
  }
  if
  :: won ->
    owner = me;
    state = BIASED
  :: else
  fi
}

proctype thread(byte me) {
  byte k = 0, s, tmp;
  bit won, entered;
  do
  :: k < K ->
    /* ---- rk__bias_enter (or, as the C code's slow paths do, straight
     * to rk__bias_share) ---- */
    entered = 0;
    if
    :: true -> won = 0
    :: true ->
      if
      :: owner == me -> won = 1
      :: else ->
        s = state;
        if
        :: s == NONE -> claim()
        :: else -> won = 0
        fi
      fi
    fi;
    if
    :: won ->
#if defined(BUG_STATE_FIRST)
      s = state;
      busy = 1;
#elif defined(BUG_NO_RECHECK)
      busy = 1;
      s = BIASED;
#else
      busy = 1;
      s = state;
#endif
      if
      :: s == BIASED -> entered = 1
      :: else -> busy = 0
      fi
    :: else
    fi;
    if
    :: entered ->
      access();
      busy = 0 /* rk__bias_leave */
    :: else ->
      /* ---- rk__bias_share ---- */
      do
      :: s = state;
        if
        :: s == SHARED -> break
        :: s == NONE ->
          claim();
          if
          :: won -> break
          :: else
          fi
        :: s == BIASED ->
          if
          :: owner == me -> break
          :: else ->
            atomic {
              if
              :: state == BIASED -> state = REVOKING; won = 1
              :: else -> won = 0
              fi
            }
            if
            :: won ->
#ifndef BUG_NO_WAIT
              (busy == 0);
#endif
              state = SHARED;
              break
            :: else
            fi
          fi
        :: s == CLAIMING || s == REVOKING -> skip
        fi
      od;
      /* ---- the shared path: a lock ---- */
      atomic { lock == 0 -> lock = 1 }
      access();
      lock = 0
    fi;
    k++
  :: else -> break
  od;
  atomic { finished++ }
}

init {
  byte i;
  atomic {
    for (i : 1 .. NP) { run thread(i) }
  }
  (finished == NP);
  assert(data == NP * K);
}
