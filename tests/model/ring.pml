/* ring.pml - a Promela model of the actor ring protocol, for spin.
 *
 * What it models: src/abi/actor_abi.h (the ring header: free-running head
 * and tail, waiter counts, wake sequences) and src/base/ring.c (the SPSC
 * producer and consumer ends, the parking protocol park()/signal(), and the
 * multi-producer stage rk__ring_mp_send in its CLAIM and LOCK kinds, with
 * rk__ring_mp_wait_space; kicks through rk__ring_wait_data_since). Each
 * Promela statement that touches a shared variable is one shared-memory
 * access of the C code (a load, a store or one atomic read-modify-write);
 * what the C code caches in an rk__ring_end_t or a local lives in a local
 * variable here. Ghost variables (busy[], next[]) exist only for the
 * assertions and are updated in the same indivisible step as the access they
 * describe.
 *
 * Configurations (spin -a -D...; tests/model/CMakeLists.txt lists the ones
 * the test suite runs, README.md explains them):
 *
 *   (default)     SPSC: one producer sends N messages to one consumer; both
 *                 park when they cannot go on (consumer: no data; producer:
 *                 no space).
 *   -DMP_CLAIM    NP producers through rk__ring_mp_send, CLAIM kind, K
 *                 messages each, into a ring of CAP slots, one consumer.
 *   -DMP_LOCK     the same through the LOCK kind.
 *   -DCAP=c       ring capacity, a power of two (default 2).
 *   -DN=n         SPSC messages (default 2*CAP+1: indices wrap twice).
 *   -DNP=p -DK=k  MP producers and messages per producer (default 2 and 3).
 *   -DMP_PARK     MP: on RK_ERR_QUEUE_FULL a producer parks in
 *                 rk__ring_mp_wait_space (rk__ring_wait_space with a fresh
 *                 load of the claim counter (CLAIM) or of tail (LOCK)), as
 *                 the runtime's enqueue() does, before it retries; without
 *                 it, it retries at once (busy retry).
 *   -DKICK        SPSC with control requests: the consumer starts inactive
 *                 and runs the worker's loop (read data_seq, look at the
 *                 control block's `active`, wait with
 *                 rk__ring_wait_data_since); a host process activates it
 *                 (active = 1, then rk__ring_kick).
 *   -DSTOP_WAIT   the actor stopping (FAILED or TERMINATED) while host
 *                 threads wait in wait_until (src/actor/actor.c) for a
 *                 response that never comes: NW threads share the drain
 *                 role; the one holding it parks on the output ring's
 *                 data_seq (rk__ring_wait_data_since, with the sequence
 *                 read before the state), the others on the epoch. A
 *                 stopper process runs wake_waiters(): the state, then
 *                 unconditional bumps of the wake sequences. Every waiter
 *                 must return.
 *   -DSTOP_SEND   the same for a sender parked for space (enqueue() and
 *                 trad_send(): rk__ring_wait_space_since with the sequence
 *                 read before the state) behind a device side that hangs
 *                 in its handler after M (default 1) messages; N = CAP +
 *                 M + 1, so the sender cannot finish unless woken by the
 *                 stop.
 *   -DCHECK_FULL_VERDICT  CLAIM: assert that RK_ERR_QUEUE_FULL is returned
 *                 only when the ring is full: in the step where the
 *                 producer loads head, if the verdict is "full", then
 *                 claim - head >= capacity (as ints, without wrapping).
 *
 *   -DMARKS       slot marks (RK_ABI_RING_SLOT_SEQ): every producer stores
 *                 the slot's mark (index + 1) after its contents and before
 *                 tail; the consumer finds a published slot by its mark
 *                 (rk__ring_peek's refresh()) and never loads tail except
 *                 when it parks, so its head may run ahead of tail.
 *
 * Deliberately broken variants (negative controls: spin must reject them):
 *   -DBUG_MARK_BEFORE_WRITE     MARKS: a producer marks the slot before it
 *                               writes it.
 *   -DBUG_PUBLISH_BEFORE_WRITE  SPSC/LOCK producer publishes tail before it
 *                               writes the slot.
 *   -DBUG_NO_RECHECK            park() sleeps without re-checking the ring
 *                               after raising the waiter count.
 *   -DBUG_LATE_SEQ              park() reads the wake sequence after the
 *                               re-check instead of before raising the count.
 *   -DBUG_CLAIM_NO_ORDER        CLAIM producers publish tail = mine + 1
 *                               without waiting for tail == mine.
 *   -DBUG_KICK_SEQ_LATE         KICK: the consumer reads data_seq after it
 *                               looked at `active` (a kick is lost).
 *   -DBUG_STOP_SEQ_LATE         STOP_*: a waiter reads the wake sequence
 *                               after it looked at the state (a stop is
 *                               lost).
 *   -DBUG_STOP_NO_KICK          STOP_*: the stopper only sets the state.
 *   -DFAST_CALL   STOP_WAIT: each waiter first holds the drain role across
 *                 its publish and spin, as a call on the fast path does
 *   -DBUG_ROLE_NO_RECHECK       STOP_WAIT: a thread waiting for the drain
 *                               role sleeps on the epoch without looking
 *                               at the role again after announcing itself
 *                               (a hand-off is lost, as in an earlier
 *                               actor.c, where only a 1 ms timeout ended
 *                               the sleep).
 *   -DBUG_UNSIGNED_INDEX        index differences compared as unsigned, as
 *                               ring.c did before: a stale index behind
 *                               head wraps and reads as "full" / "no
 *                               space" (spurious RK_ERR_QUEUE_FULL with
 *                               CHECK_FULL_VERDICT; a producer asleep
 *                               forever with MP_PARK). See README.md.
 *
 * Memory model. Spin interleaves statements: the model is sequentially
 * consistent. That is justified for this protocol by the C code's
 * release/acquire pairs and fences:
 *   - every published index carries the slot accesses before it: the
 *     producer's release store of tail is read by the consumer's acquire
 *     load, so the slot write happens-before the consumer's slot read; the
 *     consumer's release store of head, read by the producer's acquire load,
 *     orders its slot read before the producer's next write of that slot.
 *     In CLAIM, each producer's acquire load of tail (== mine) before its
 *     release store of mine + 1 chains the earlier producers' slot writes
 *     into the one the consumer acquires, and head_cache (release store,
 *     acquire load) passes a head one producer loaded on to the others.
 *   - the parking protocol's store-then-load pairs (index store, then the
 *     waiter count; waiter count, then the index) are made sequentially
 *     consistent by the full barrier between store and load in signal() and park() (a seq_cst fence, or on Linux a compiler barrier on the signalling side paired with membarrier on the parking side, which gives the same ordering).
 * What the SC model does not cover: a missing or too weak barrier (a model
 * run cannot tell a release store from a relaxed one, nor find a missing
 * fence: those need a weak-memory tool such as herd7/GenMC, or TSan on the
 * C tests); torn or partially visible slot writes (a slot write is one step
 * here; what the model proves is that no read of a slot overlaps a write of
 * it); the device side's own memory model (GPU scopes, host-mapped memory
 * coherence); 64-bit index and 32-bit sequence wrap-around (indices are small
 * here); futex timeouts and spurious wake-ups (they only make a waiter return
 * earlier, and every caller loops).
 */

#ifndef CAP
#define CAP 2
#endif
#define MASK (CAP - 1)

#if defined(MP_CLAIM) || defined(MP_LOCK)
#define MP 1
#ifndef NP
#define NP 2
#endif
#ifndef K
#define K 3
#endif
#define NPROD NP
#define TOTAL (NP * K)
#else
#if defined(STOP_WAIT) || defined(STOP_SEND)
#define STOP 1
#endif
#ifndef M
#define M 1
#endif
#ifndef N
#ifdef STOP_SEND
#define N (CAP + M + 1)
#else
#define N (2 * CAP + 1)
#endif
#endif
#define NPROD 1
#define TOTAL N
#endif
#ifndef NW
#define NW 2
#endif

/* A message: producer id and that producer's sequence number, in one byte. */
#define MSG(id, seq) ((id) * 16 + (seq))
#define EMPTY 255

/* ---- Shared memory -------------------------------------------------------
 * rk_abi_ring_t: tail (producer), head (consumer), data_seq and
 * space_waiters (producer's line), space_seq and data_waiters (consumer's). */
byte tail, head;
byte data_seq, space_waiters;
byte space_seq, data_waiters;
/* The slots: the message each holds; EMPTY before the first write. */
byte slot[CAP] = EMPTY;
#ifdef MARKS
/* The slots' marks (rk_abi_msg_t.seq): index + 1 of the last publish, 0
 * before the first. */
byte mark[CAP];
#endif

#ifdef MP_CLAIM
byte claim;      /* rk__ring_mp_t.claim: the next slot number to hand out */
byte head_cache; /* rk__ring_mp_t.head_cache */
#endif
#ifdef MP_LOCK
bit lock;        /* rk__ring_mp_t.lock */
byte p_own;      /* mp->end.own: the shared producer view, under the lock */
byte p_other;    /* mp->end.other */
#endif

#ifdef KICK
bit ctl_active;  /* rk_abi_control_t.active, written by the host */
#endif

#ifdef STOP
/* The actor's state, as far as waiters care: stopped (TERMINATED or
 * FAILED) or not; the drain role; the epoch threads without the role wait
 * on, and its waiter count; the output ring's data_seq and data_waiters
 * (STOP_WAIT: no response ever comes, so its indices never move). */
bit stopped;
bit role;
byte epoch, epoch_waiters;
byte odata_seq, odata_waiters;
#endif

/* Ghosts. busy[i]: slot i has been written and not yet released by the
 * consumer (set with the slot write, cleared with the head store). next[p]:
 * the sequence number the consumer expects next from producer p. */
bit busy[CAP];
byte next[NPROD];

/* ---- Index arithmetic ----------------------------------------------------
 * The C indices are uint64_t; has_space() and mp_send_claim() compare their
 * difference as signed, (int64_t)(a - b) >= (int64_t)cap: an index a that
 * head b has already passed (a stale claim, or a claim/tail loaded before
 * the consumer moved on) is behind, "not full" / "has space". Promela
 * computes a - b of two bytes as an int, so the plain comparison is the
 * signed one. BUG_UNSIGNED_INDEX models the unsigned a - b >= cap of the
 * earlier ring.c instead, where a < b wraps to a huge value ("full"). */
#ifdef BUG_UNSIGNED_INDEX
#define AT_LEAST_CAP(a, b) ((a) < (b) || (a) - (b) >= CAP)
#else
#define AT_LEAST_CAP(a, b) ((a) - (b) >= CAP)
#endif

/* ---- Slots ---------------------------------------------------------------- */

/* mark(): STORE_RELEASE of the slot's mark, after its contents (MARKS). */
#ifdef MARKS
#define MARK(idx) mark[(idx) & MASK] = (idx) + 1
#else
#define MARK(idx) skip
#endif

/* write_slot(): the whole message in one step. Never over a slot the
 * consumer has not released. */
inline write_slot(idx, msg) {
  d_step {
    assert(busy[(idx) & MASK] == 0);
    slot[(idx) & MASK] = msg;
    busy[(idx) & MASK] = 1
  }
}

/* ---- Parking protocol ----------------------------------------------------- */

/* park(): returns in ok whether the ring was ready on return; callers loop.
 * `s` is the value of seq the caller read before it last looked at the
 * ring: rk__ring_wait_data and rk__ring_wait_space read it as they call
 * park() (park_now below), rk__ring_wait_data_since gets it from the caller
 * (read with rk__ring_data_seq before the caller looked at its control
 * block). `ready` is one load of the other side's index (has_data /
 * has_space). The futex wait rk__wait_while_equal(seq, s) is the guard
 * (seq != s): the kernel compares and sleeps atomically, and a wake-up
 * without a change of seq is not modelled (a spurious return only makes the
 * caller look again). Deadlines are 0 (no timeout). */
inline park(seq, waiters, ready, ok) {
#ifdef BUG_LATE_SEQ
  waiters++;
  ok = ready;
  s = seq;
#else
  waiters++;    /* fetch_add(waiters, 1, SEQ_CST); fence(SEQ_CST) */
#ifdef BUG_NO_RECHECK
  ok = false;
#else
  ok = ready;   /* bool ok = ready(hdr, index) */
#endif
#endif
  if
  :: !ok ->
    if
    :: seq == s ->  /* && LOAD_ACQUIRE(seq) == s */
      (seq != s);   /* rk__wait_while_equal(seq, s, 0) */
      ok = ready
    :: else         /* a signal since s: return (not ready), look again */
    fi
  :: else
  fi;
  /* fetch_sub(waiters, 1, RELAXED); s and ok are dead from here on (the
   * callers loop and look again), and are cleared so that they do not tell
   * states apart. */
  atomic { waiters--; s = 0; ok = false }
}

/* rk__ring_wait_data / rk__ring_wait_space: park(..., LOAD_ACQUIRE(seq),
 * ...), the sequence read as the call starts. */
inline park_now(seq, waiters, ready, ok) {
#ifndef BUG_LATE_SEQ
  s = seq;
#endif
  park(seq, waiters, ready, ok)
}

/* signal(): after publishing. fence(SEQ_CST); if (waiters != 0) { seq++;
 * rk__wake_all(seq); } The wake itself is the change of seq (see park). */
inline signal(seq, waiters) {
  if
  :: waiters != 0 -> seq++
  :: else
  fi
}

/* has_data(hdr, h): (int64_t)(LOAD_ACQUIRE(tail) - h) > 0. has_space(hdr, t):
 * (int64_t)(t - LOAD_ACQUIRE(head)) < (int64_t)capacity. */
/* Signed: with MARKS the consumer's head may be ahead of tail. */
#define HAS_DATA(h) ((tail) - (h) > 0)
#define HAS_SPACE(t) (!AT_LEAST_CAP(t, head))

/* ---- Consumer ------------------------------------------------------------- */

/* The runtime's consumer loop (cpu_actor.c's worker, one message at a
 * time): peek one; if there is none, wait for data and look again; else
 * read it, release it, signal_space. With KICK the consumer starts inactive
 * and, like the worker, reads data_seq before it looks at the control
 * block's `active`; inactive, it waits with rk__ring_wait_data_since(hdr,
 * <tail now>, seq) for a kick; active and out of data, with
 * rk__ring_wait_data_since(hdr, own, seq). */
#ifndef STOP
proctype consumer() {
  byte own = 0;   /* c->own: head as last published */
  byte other = 0; /* c->other: tail as last loaded */
  byte v, s;
  bool ok;
  do
  :: own == TOTAL -> break
  :: else ->
#ifdef KICK
#ifdef BUG_KICK_SEQ_LATE
    if
    :: !ctl_active ->                /* !LOAD_ACQUIRE(&c->active) */
      s = data_seq;                  /* read too late */
#else
    s = data_seq;                    /* rk__ring_data_seq(in.hdr) */
    if
    :: !ctl_active ->                /* !LOAD_ACQUIRE(&c->active) */
#endif
      v = tail;                      /* LOAD_ACQUIRE(&in.hdr->tail) */
      park(data_seq, data_waiters, HAS_DATA(v), ok);
      v = 0
    :: else ->
#endif
    /* rk__ring_peek(c, 0) */
    if
#ifdef MARKS
    /* refresh(): the slot's mark (LOAD_ACQUIRE), never tail */
    :: other == own && mark[own & MASK] == own + 1 -> other = own + 1
    :: other == own && mark[own & MASK] != own + 1 -> skip
#else
    :: other == own -> other = tail  /* c->other - c->own <= 0: LOAD_ACQUIRE */
#endif
    :: else
    fi;
    if
    :: other == own ->               /* NULL */
#ifdef KICK
      park(data_seq, data_waiters, HAS_DATA(own), ok)
#else
      park_now(data_seq, data_waiters, HAS_DATA(own), ok)
#endif
    :: else ->
      /* Read the slot: one step. Never before it was written (busy), and
       * it holds the message expected next: every message exactly once, in
       * each producer's order. */
      d_step {
        v = slot[own & MASK];
        assert(busy[own & MASK] == 1);
        assert(v != EMPTY);
        assert(v / 16 < NPROD);
        assert(v % 16 == next[v / 16]);
#ifndef MP
        assert(v == own);            /* SPSC: the global order too */
#endif
        next[v / 16]++;
        v = 0;                       /* dead from here on */
        s = 0
      }
      /* rk__ring_release(c, 1): STORE_RELEASE(head, own + 1) */
      atomic { busy[own & MASK] = 0; own++; head = own }
      signal(space_seq, space_waiters)
    fi
#ifdef KICK
    fi
#endif
  od;
  /* Every producer's messages arrived, all of them. */
  v = 0;
  do
  :: v < NPROD -> assert(next[v] == TOTAL / NPROD); v++
  :: else -> break
  od
}
#endif

#ifdef KICK
/* The host activating the actor (rk_actor_activate): the control block's
 * `active`, then rk__ring_kick: fetch_add(data_seq, 1) and wake, whether or
 * not anyone waits. */
proctype host() {
  ctl_active = 1;                    /* STORE_RELEASE(&c->active, 1) */
  data_seq++                         /* rk__ring_kick */
}
#endif

/* ---- SPSC producer -------------------------------------------------------- */

#if !defined(MP) && !defined(STOP)
proctype producer() {
  byte own = 0;   /* p->own: tail as last published */
  byte other = 0; /* p->other: head as last loaded */
  byte s;
  bool ok;
  do
  :: own == N -> break
  :: else ->
    /* rk__ring_reserve(p) */
    if
    :: own - other >= CAP -> other = head  /* LOAD_ACQUIRE(&hdr->head) */
    :: else
    fi;
    if
    :: own - other >= CAP ->               /* NULL: wait for space */
      park_now(space_seq, space_waiters, HAS_SPACE(own), ok)
    :: else ->
#ifdef BUG_PUBLISH_BEFORE_WRITE
      atomic { own++; tail = own };
      write_slot(own - 1, MSG(0, own - 1));
#elif defined(BUG_MARK_BEFORE_WRITE)
      MARK(own);
      write_slot(own, MSG(0, own));
      atomic { own++; tail = own };
#else
      write_slot(own, MSG(0, own));
      /* rk__ring_publish(p, 1): the mark, then STORE_RELEASE(tail, own + 1) */
      MARK(own);
      atomic { own++; tail = own };
#endif
      signal(data_seq, data_waiters)       /* rk__ring_signal_data */
    fi
  od
}
#endif

/* ---- Multi-producer stage, CLAIM kind ------------------------------------- */

#ifdef MP_CLAIM
proctype claim_producer(byte id) {
  byte k = 0;     /* this producer's next sequence number */
  byte mine, h, s;
  bool ok, qfull;
  do
  :: k == K -> break
  :: else ->
    /* mp_send_claim() */
    mine = claim;                    /* LOAD_RELAXED(&mp->claim) */
    do
    :: h = head_cache;               /* LOAD_ACQUIRE(&mp->head_cache) */
      if
      :: AT_LEAST_CAP(mine, h) ->
#ifdef CHECK_FULL_VERDICT
        /* LOAD_ACQUIRE(&hdr->head), and in the same step: the verdict
         * below is decided by mine and this h; if it is "full", the ring
         * is full now: claim - head >= capacity (as ints, no wrapping). */
        atomic {
          h = head;
          assert(!AT_LEAST_CAP(mine, h) || claim - h >= CAP)
        }
#else
        h = head;                    /* LOAD_ACQUIRE(&hdr->head) */
#endif
        head_cache = h               /* STORE_RELEASE */
      :: else
      fi;
      if
      :: AT_LEAST_CAP(mine, h) ->    /* RK_ERR_QUEUE_FULL */
        qfull = true;
        break
      :: else
      fi;
      /* compare_exchange(&claim, &mine, mine + 1, weak): on failure mine
       * becomes the current value. A spurious failure of the weak form
       * leaves mine as it was: the same state as before the attempt. */
      if
      :: atomic { claim == mine -> claim = mine + 1; qfull = false; h = 0 };
        break
      :: atomic { claim != mine -> mine = claim }
      fi
    od;
    if
    :: atomic { qfull -> qfull = false; mine = 0; h = 0 } /* dead locals */
#ifdef MP_PARK
      /* rk__ring_mp_wait_space: LOAD_RELAXED(&mp->claim) */
      h = claim;
      park_now(space_seq, space_waiters, HAS_SPACE(h), ok);
      h = 0
#endif
      /* ... and the caller sends again */
    :: else ->
#ifdef BUG_MARK_BEFORE_WRITE
      MARK(mine);
      write_slot(mine, MSG(id, k));
#else
      write_slot(mine, MSG(id, k));
      MARK(mine);                    /* a marking consumer may take it now */
#endif
      /* Publish in claim order. */
#ifndef BUG_CLAIM_NO_ORDER
      (tail == mine);                /* while (LOAD_ACQUIRE(tail) != mine) */
#endif
      atomic { tail = mine + 1; mine = 0; h = 0 }  /* STORE_RELEASE */
      signal(data_seq, data_waiters);
      k++
    fi
  od
}
#endif

/* ---- Multi-producer stage, LOCK kind -------------------------------------- */

#ifdef MP_LOCK
proctype lock_producer(byte id) {
  byte k = 0;
  byte h, s;
  bool ok, sent;
  do
  :: k == K -> break
  :: else ->
    /* mp_send_lock(): test-and-test-and-set; a failed exchange writes 1
     * over 1 and changes nothing, so spinning is the wait for lock == 0. */
    atomic { lock == 0 -> lock = 1 };
    /* rk__ring_reserve(&mp->end) */
    if
    :: p_own - p_other >= CAP -> p_other = head
    :: else
    fi;
    if
    :: p_own - p_other >= CAP -> sent = false
    :: else ->
#ifdef BUG_PUBLISH_BEFORE_WRITE
      atomic { p_own++; tail = p_own };
      write_slot(p_own - 1, MSG(id, k));
#elif defined(BUG_MARK_BEFORE_WRITE)
      MARK(p_own);
      write_slot(p_own, MSG(id, k));
      atomic { p_own++; tail = p_own };
#else
      write_slot(p_own, MSG(id, k));
      MARK(p_own);                       /* rk__ring_publish: the mark, */
      atomic { p_own++; tail = p_own };  /* then tail */
#endif
      sent = true
    fi;
    lock = 0;                        /* store RELEASE */
    if
    :: atomic { sent -> sent = false }
      signal(data_seq, data_waiters);
      k++
    :: else ->
#ifdef MP_PARK
      /* rk__ring_mp_wait_space: LOAD_ACQUIRE(&hdr->tail) */
      h = tail;
      park_now(space_seq, space_waiters, HAS_SPACE(h), ok);
      h = 0
#else
      skip
#endif
      /* ... and the caller sends again */
    fi
  od
}
#endif

/* ---- The actor stopping (STOP_WAIT, STOP_SEND) ---------------------------- */

#ifdef STOP
/* wake_waiters() after set_state(): every wake sequence a host thread may
 * park on, bumped whether or not anyone waits (fetch_add, then wake). */
proctype stopper() {
  stopped = 1;                       /* set_state(a, RK_ACTOR_FAILED) */
#ifndef BUG_STOP_NO_KICK
  odata_seq++;                       /* rk__ring_kick(out) */
  space_seq++;                       /* rk__ring_kick_space(in) */
  epoch++                            /* fetch_add(&a->epoch), rk__wake_all */
#endif
}
#endif

#ifdef STOP_WAIT
/* bump_epoch() after the drain role is given up: fence_light; if
 * (epoch_waiters) { epoch++; wake }. */
inline bump_epoch() {
  if
  :: epoch_waiters != 0 -> epoch++
  :: else
  fi
}

/* wait_until() for a response that never comes: each round reads the
 * epoch and the output ring's data_seq, then the state; takes the drain
 * role if free (test and exchange), drains (nothing), parks on data_seq
 * unless stopped, gives the role up; or, without the role, announces
 * itself, looks at the role again and sleeps while the epoch is unchanged.
 * It returns (RK_ERR_INVALID_STATE) after a round with the role in which it
 * had seen the actor stopped. */
proctype host_waiter() {
  byte e, s;
  bool seen, ok;
#ifdef FAST_CALL
  /* call_fast(): a call that finds the role free takes it before its
   * request is published, spins (never parks) while it holds it, then --
   * its answer not in -- registers, gives the role up and bumps the epoch
   * before it waits as above. */
  if
  :: atomic { role == 0 -> role = 1 } ->
    role = 0;                        /* STORE_RELEASE(&a->drain_role, 0) */
    bump_epoch()
  :: else
  fi;
#endif
  do
  ::
#ifdef BUG_STOP_SEQ_LATE
    seen = stopped;
    e = epoch;
    s = odata_seq;
#else
    e = epoch;                       /* LOAD_ACQUIRE(&a->epoch) */
    s = odata_seq;                   /* rk__ring_data_seq(a->device.out) */
    seen = stopped;                  /* stopped_state(get_state(a)) */
#endif
    if
    :: atomic { role == 0 -> role = 1 } ->
      /* drain(): nothing moves */
      if
      :: !seen ->
        /* rk__ring_wait_data_since(out, own, s, ...): no data ever */
        park(odata_seq, odata_waiters, false, ok)
      :: else
      fi;
      role = 0;                      /* STORE_RELEASE(&a->drain_role, 0) */
      bump_epoch();
      if
      :: seen -> break
      :: else
      fi
    :: else ->
      epoch_waiters++;               /* fetch_add SEQ_CST; fence_heavy */
#ifdef BUG_ROLE_NO_RECHECK
      if
      :: epoch == e -> (epoch != e)  /* rk__wait_while_equal(&epoch, e) */
      :: else
      fi;
#else
      if
      :: role != 0 ->                /* LOAD_RELAXED(&a->drain_role) */
        if
        :: epoch == e -> (epoch != e)
        :: else
        fi
      :: else
      fi;
#endif
      epoch_waiters--
    fi;
    atomic { e = 0; s = 0; seen = false; ok = false }  /* dead locals */
  od;
  assert(stopped)
}
#endif

#ifdef STOP_SEND
/* enqueue() / trad_send() with no deadline: a full ring makes the sender
 * read space_seq, look at the state (refused if stopped) and park with
 * that sequence; back from a wait, it looks at the state first. */
proctype sender() {
  byte own = 0;   /* p->own */
  byte other = 0; /* p->other */
  byte s;
  bool ok, waited;
  do
  :: own == N -> break
  :: else ->
    if
    :: waited && stopped -> break    /* not_active(): refused */
    :: else
    fi;
    if
    :: own - other >= CAP -> other = head
    :: else
    fi;
    if
    :: own - other >= CAP ->
#ifdef BUG_STOP_SEQ_LATE
      if
      :: stopped -> break
      :: else
      fi;
      s = space_seq;
#else
      s = space_seq;                 /* rk__ring_space_seq(hdr) */
      if
      :: stopped -> break            /* refused */
      :: else
      fi;
#endif
      park(space_seq, space_waiters, HAS_SPACE(own), ok);
      waited = true
    :: else ->
      write_slot(own, MSG(0, own));
      atomic { own++; tail = own };
      signal(data_seq, data_waiters)
    fi
  od;
  assert(own == N || stopped)
}

/* The device side: takes M requests (waiting for each; its own parking is
 * checked by the other configurations), then hangs in its handler. */
proctype device() {
  byte own = 0, v;
  do
  :: own == M -> break               /* the handler never returns */
  :: else ->
end_device:
    (tail != own);
    d_step {
      v = slot[own & MASK];
      assert(busy[own & MASK] == 1);
      assert(v == own);
      v = 0
    }
    atomic { busy[own & MASK] = 0; own++; head = own };
    signal(space_seq, space_waiters)
  od
}
#endif

init {
  byte i;
  atomic {
#ifdef STOP
    run stopper();
#ifdef STOP_WAIT
    for (i : 1 .. NW) {
      run host_waiter()
    }
#else
    run sender();
    run device();
#endif
#else
    run consumer();
#ifdef KICK
    run host();
#endif
#ifdef MP
    for (i : 0 .. NP - 1) {
#ifdef MP_CLAIM
      run claim_producer(i);
#else
      run lock_producer(i);
#endif
    }
#else
    run producer();
#endif
#endif
  }
}
