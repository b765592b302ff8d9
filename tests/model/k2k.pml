/* k2k.pml - a Promela model of actor-to-actor (K2K) channels, for spin.
 *
 * What it models: src/actor/k2k.c. Every receiving actor has one K2K inbox,
 * a ring of src/abi/actor_abi.h (free-running head and tail) written by the
 * NP sending actors wired to it and read by the receiver's device side.
 *
 *   - Flow control by credit. Sender s may have at most Q = CAP / NP of its
 *     messages in the inbox: before its handler runs it computes
 *     credit = Q - (sent[s] - seen[s]), where consumed[s] is a counter
 *     only the receiver writes (one per sender) and seen[s] the sender's
 *     last reading of it, taken again when it would give no credit (and
 *     at will: the C code reads it when it gives less than a full outbox). A handler's rk_try_send
 *     beyond the credit is answered "full" on the spot; a message within it
 *     always finds a slot, so nobody waits for space and nothing is dropped.
 *     With NP = 1 (-DPAIR) the inbox is the (sender, receiver) pair channel:
 *     a plain SPSC ring with Q = CAP.
 *   - Fan-in (NP > 1): senders write through the multi-producer stage of
 *     src/base/ring.c, LOCK kind (lock, take tail, write the slot, publish
 *     tail + 1 with a release store, unlock).
 *   - The receiver: load tail (acquire), read the slot at head, hand it to
 *     the handler, release it (head + 1, release store) and only then bump
 *     consumed[sender] (the sender's credit comes back after the slot is
 *     free).
 *   - Waking: the receiver parks on its input ring's wake sequence (it also
 *     waits for host requests there): it reads the sequence at the top of
 *     its loop, and with nothing to do raises the waiter count, looks at
 *     the inbox again (rk__ring_wait_data_since_or) and sleeps (a futex
 *     wait) while the sequence is unchanged. A sender, after publishing,
 *     bumps the sequence and wakes sleepers only when the count is
 *     non-zero (rk__ring_signal_data; a full fence on each side between
 *     the store and the load, so sequentially consistent here).
 *
 * Each statement touching shared memory is one access of the C code; ghost
 * variables (busy[], want[]) exist only for the assertions.
 *
 * Properties: every message is received exactly once and in order per
 * sender (per (sender, receiver) pair); no slot is read before it is
 * written or written while unconsumed; no receiver sleeps with a message
 * waiting (no invalid end state).
 *
 * Configurations: -DCAP=c (a power of two, default 2), -DNP=p senders
 * (default 2), -DK=k messages per sender (default 3), -DPAIR (NP = 1, no
 * lock: the pair channel).
 *
 * -DCHAN: the channels of an actor resident on a GPU (src/abi/actor_abi.h,
 * rk_abi_chan_t; src/codegen/emit_cuda_actor.c). Each of the NP links has
 * a pair channel of its own (CAP slots; no lock: a GPU's atomics on host
 * memory are not atomic with the host's), its credit is
 * CAP - (sent - head), and the receiver frees a slot by advancing the
 * channel's head after it read it -- the credit and the release are one
 * store. The receiver polls (a GPU kernel cannot be woken), looking at the
 * channels in turn from where it last stopped, and never sleeps. The
 * negative controls BUG_PUBLISH_BEFORE_WRITE and BUG_ADVANCE_BEFORE_READ
 * apply to it too.
 *
 * -DWORDS (with -DCHAN): word slots (RK_ABI_RING_SLOT_WORDS, a channel
 * between two kernels of one GPU). A message is W words, each stored
 * whole with its mark (index + 1) and no fence, in any order; the
 * receiver polls the next slot's first word (not tail), then waits until
 * every word carries the mark before it reads the message. It may hold
 * its head back (a credit not yet returned) while it holds fewer than
 * HOLD messages and at most half the channel, and publishes what it holds
 * when a sweep of its channels finds nothing to take.
 *   -DBUG_WORDS_FIRST_ONLY    the receiver takes the message once the first
 *                             word is marked (reads a word not yet stored).
 *   -DBUG_ADVANCE_BEFORE_READ applies too: the head published before the
 *                             words are read.
 *
 * -DREWIRE: a sender wired into a receiver that already has senders
 * (rk_actor_connect on a running system, src/actor/k2k.c connect_held).
 * Senders 0 .. NP-2 start with Q = CAP / (NP-1) each; a host process
 * deactivates them (each stops between two handler calls and says so),
 * waits until the inbox is empty (rk_actor_connect refuses until it is;
 * the receiver keeps running here, which only empties it), sets every
 * link's share to CAP / NP and starts sender NP-1, then lets them all
 * run. -DBUG_REWIRE_BUSY: the host does not wait for the empty inbox (a
 * link holds more messages than its new share): a slot is overwritten.
 *
 * Negative controls (spin must reject them):
 *   -DBUG_PUBLISH_BEFORE_WRITE  tail published before the slot is written.
 *   -DBUG_ADVANCE_BEFORE_READ   the receiver releases the slot (head + 1,
 *                               credit back) before it reads it.
 *   -DBUG_OVERCOMMIT            every sender gets the whole ring as its
 *                               credit (Q = CAP): a slot is overwritten.
 *   -DBUG_RINGKERNEL            RingKernel's device inbox: a sender bumps
 *                               tail (its claim) before it writes the slot,
 *                               and the receiver, finding a slot that does
 *                               not look valid, drops it and moves on.
 *   -DBUG_LATE_SEQ              the receiver reads the wake sequence after
 *                               its second look at the inbox.
 *   -DBUG_NO_RECHECK            the receiver sleeps without looking at the
 *                               inbox again after raising the waiter count.
 *   -DBUG_CREDIT_GUESS          a sender that keeps its old reading of the
 *                               receiver's count takes one more message as
 *                               done without reading it (credit it was
 *                               never given): a slot is overwritten.
 */
#ifndef CAP
#define CAP 2
#endif
#ifdef PAIR
#undef NP
#define NP 1
#endif
#ifndef NP
#define NP 2
#endif
#ifndef K
#define K 3
#endif
#define TOTAL (NP * K)
#ifdef BUG_OVERCOMMIT
#define Q CAP
#elif defined(REWIRE)
#define Q q
#else
#define Q (CAP / NP)
#endif

/* The inbox. */
byte tail = 0;
byte head = 0;
byte slot_from[CAP]; /* the sender of the message in the slot */
byte slot_seq[CAP];  /* its per-sender number, 1-based (0: never written) */
bit busy[CAP];       /* ghost: written and not yet released */
byte consumed[NP];   /* receiver-owned credit counters */
bit lock = 0;        /* the multi-producer stage's lock (LOCK kind) */
/* The receiver's wake sequence and waiter count (its input ring's). */
byte wake_seq = 0;
byte waiters = 0;
bit asleep = 0; /* the receiver is in its futex wait */
/* Ghost: the next per-sender number the receiver must see. */
byte want[NP];
byte received = 0;
byte dropped = 0;
#ifdef REWIRE
/* Every link's share of the inbox (b->quota); rk_actor_connect's
 * deactivation of the senders (pause) and each one's quiet point. */
byte q = CAP / (NP - 1);
bit pause = 0;
bit held[NP];
#endif

#ifdef CHAN
/* One pair channel per link: tail (the sender's), head (the receiver's,
 * which is also the link's credit counter), the slots. */
byte ctail[NP];
byte chead[NP];
byte cslot_seq[NP * CAP];
bit cbusy[NP * CAP]; /* ghost */
#ifdef WORDS
#ifndef W
#define W 2
#endif
#ifndef HOLD
#define HOLD 1
#endif
/* Word slots: each word's mark and the message number it carries, stored
 * together (one 8-byte store). */
byte wmark[NP * CAP * W];
byte wseq[NP * CAP * W];
#endif

proctype csender(byte id) {
  byte sent = 0;
  byte seen = 0; /* the channel's head as this sender last read it */
  byte idx;
#ifdef WORDS
  byte k, left;
  bit done[W]; /* the words of this message stored */
#endif
  do
  :: sent == K -> break
  :: else ->
    /* The credit before the handler runs, from the head as last read:
     * link_credit reads it again when that reading gives too little, and
     * may at any time. */
    if
    :: seen = chead[id]
    :: (CAP - (sent - seen) > 0) -> skip
    fi;
#ifdef BUG_CREDIT_GUESS
    if
    :: sent - seen > 0 -> seen++
    :: else -> skip
    fi;
#endif
    if
    :: CAP - (sent - seen) == 0 ->
      /* A send beyond it is answered "full" and the handler runs again
       * later: modelled as a wait, then a fresh reading. */
      (CAP - (sent - chead[id]) > 0);
      goto next
    :: else -> skip
    fi;
    idx = ctail[id];
#ifdef BUG_PUBLISH_BEFORE_WRITE
    ctail[id] = idx + 1;
#endif
#ifdef WORDS
    /* Every word, in any order, each whole; no fence, and tail only for
     * the counts (the receiver does not read it). */
    atomic {
      assert(!cbusy[id * CAP + idx % CAP]); /* no unread slot overwritten */
      cbusy[id * CAP + idx % CAP] = 1
    };
    left = W;
    k = 0;
    do
    :: k < W -> done[k] = 0; k++
    :: else -> break
    od;
    {
      do
      :: left == 0 -> break
      :: else ->
        select(k : 0 .. W - 1);
        if
        :: !done[k] ->
          atomic {
            wseq[(id * CAP + idx % CAP) * W + k] = sent + 1;
            wmark[(id * CAP + idx % CAP) * W + k] = idx + 1
          };
          done[k] = 1;
          left--
        :: else -> skip
        fi
      od
    };
    ctail[id] = idx + 1;
#else
    atomic {
      assert(!cbusy[id * CAP + idx % CAP]); /* no unread slot overwritten */
      cslot_seq[id * CAP + idx % CAP] = sent + 1;
      cbusy[id * CAP + idx % CAP] = 1
    };
#ifndef BUG_PUBLISH_BEFORE_WRITE
    ctail[id] = idx + 1; /* release: the slot first */
#endif
#endif
    sent++;
next:
    skip
  od
}

#ifdef WORDS
/* Publishes every head held back (one fence, then the stores). */
inline publish_heads() {
  atomic {
    j = 0;
    do
    :: j < NP -> chead[j] = own[j]; j++
    :: else -> break
    od;
    held = 0
  }
}

proctype creceiver() {
  byte c = 0;
  byte own[NP]; /* the next message to take; chead[] is what is published */
  byte held = 0; /* messages taken whose heads are not published */
  bit any = 0;   /* a message taken in this sweep of the channels */
  byte seq, k, base, j;
  byte i = 0;
  do
  :: received == TOTAL -> break
  :: else ->
    base = (c * CAP + own[c] % CAP) * W;
    if
    :: wmark[base] == own[c] + 1 ->
#ifdef BUG_ADVANCE_BEFORE_READ
      atomic { chead[c] = own[c] + 1; cbusy[c * CAP + own[c] % CAP] = 0 };
#endif
#ifndef BUG_WORDS_FIRST_ONLY
      /* The first word is there: wait for every other word's mark. */
      k = 1;
      do
      :: k == W -> break
      :: else -> (wmark[base + k] == own[c] + 1); k++
      od;
#endif
      atomic {
        seq = wseq[base];
        k = 1;
        do
        :: k == W -> break
        :: else -> assert(wseq[base + k] == seq); k++ /* one message */
        od;
#ifndef BUG_ADVANCE_BEFORE_READ
        assert(cbusy[c * CAP + own[c] % CAP]); /* written */
#endif
        assert(seq == want[c] + 1);           /* once, in order per link */
        want[c] = seq;
        received++;
        cbusy[c * CAP + own[c] % CAP] = 0     /* read */
      };
      own[c]++;
      held++;
      any = 1;
      /* The head may wait: fewer than HOLD messages, at most half the
       * channel (rk_pa_inbox_done). */
      if
      :: held >= HOLD || 2 * held > CAP - 1 -> publish_heads()
      :: else -> skip
      fi
    :: else -> skip
    fi;
    if
    :: c == NP - 1 ->
      /* A sweep that found nothing: idle, the held heads go out. */
      if
      :: !any && held > 0 -> publish_heads()
      :: else -> skip
      fi;
      any = 0
    :: else -> skip
    fi;
    c = (c + 1) % NP /* the next channel: none starves */
  od;
  assert(received == TOTAL);
  do
  :: i < NP -> assert(want[i] == K); i++
  :: else -> break
  od
}
#else
proctype creceiver() {
  byte c = 0;
  byte h;
  byte seq;
  byte i = 0;
  do
  :: received == TOTAL -> break
  :: else ->
    h = chead[c];
    if
    :: ctail[c] != h ->
#ifdef BUG_ADVANCE_BEFORE_READ
      atomic { cbusy[c * CAP + h % CAP] = 0; chead[c] = h + 1 };
      atomic {
        seq = cslot_seq[c * CAP + h % CAP];
        assert(seq == want[c] + 1);
        want[c] = seq;
        received++
      }
#else
      atomic {
        seq = cslot_seq[c * CAP + h % CAP];
        assert(cbusy[c * CAP + h % CAP]); /* not read before it is written */
        assert(seq == want[c] + 1);       /* once, in order per link */
        want[c] = seq;
        received++
      };
      /* Handled: free the slot, which is the link's credit back. */
      atomic { cbusy[c * CAP + h % CAP] = 0; chead[c] = h + 1 }
#endif
    :: else -> skip
    fi;
    c = (c + 1) % NP /* the next channel: none starves */
  od;
  assert(received == TOTAL);
  do
  :: i < NP -> assert(want[i] == K); i++
  :: else -> break
  od
}
#endif /* WORDS */

init {
  byte i = 0;
  atomic {
    do
    :: i < NP -> run csender(i); i++
    :: else -> break
    od;
    run creceiver()
  }
}
#else

inline signal() {
  if
  :: waiters > 0 -> wake_seq++; asleep = 0 /* futex wake */
  :: else -> skip
  fi
}

proctype sender(byte id) {
  byte sent = 0;
  byte seen = 0; /* consumed[id] as this sender last read it */
  short credit;  /* below 0 after a share shrank: no credit */
  byte idx;
  do
  :: sent == K -> break
  :: else ->
#ifdef REWIRE
    /* Deactivated: quiet between two handler calls until reactivated. */
    if
    :: pause -> held[id] = 1; (pause == 0); held[id] = 0
    :: else -> skip
    fi;
#endif
    /* Before the handler runs: the credit for this call, from the
     * receiver's count as last read. link_credit reads it again when that
     * reading gives too little, and may at any time (an old reading only
     * gives less credit: the count only grows). */
    if
    :: seen = consumed[id]
    :: (Q - (sent - seen) > 0) -> skip
    fi;
#ifdef BUG_CREDIT_GUESS
    if
    :: sent - seen > 0 -> seen++
    :: else -> skip
    fi;
#endif
    credit = Q - (sent - seen);
    if
    :: credit <= 0 ->
      /* The handler sees "full" and runs again later: modelled as waiting
       * until credit comes back, so a credit that never returns is a
       * deadlock spin reports. */
      (Q - (sent - consumed[id]) > 0)
    :: else ->
      /* The handler's rk_try_send queued one message: the device side
       * moves it into the inbox. */
#ifndef PAIR
      atomic { lock == 0 -> lock = 1 };
#endif
#ifdef BUG_RINGKERNEL
      atomic { idx = tail; tail++ };
      atomic {
        assert(!busy[idx % CAP]);
        slot_from[idx % CAP] = id;
        slot_seq[idx % CAP] = sent + 1;
        busy[idx % CAP] = 1
      };
#else
      idx = tail;
#ifdef BUG_PUBLISH_BEFORE_WRITE
      tail = idx + 1;
#endif
      atomic {
        assert(!busy[idx % CAP]); /* no unconsumed slot is overwritten */
        slot_from[idx % CAP] = id;
        slot_seq[idx % CAP] = sent + 1;
        busy[idx % CAP] = 1
      };
#ifndef BUG_PUBLISH_BEFORE_WRITE
      tail = idx + 1;
#endif
#endif
#ifndef PAIR
      lock = 0;
#endif
      sent++;
      signal()
    fi
  od;
#ifdef REWIRE
  held[id] = 1 /* a sender that has finished sends no more */
#else
  skip
#endif
}

#ifdef REWIRE
/* rk_actor_connect(new sender, port, receiver) on a running system. */
proctype host() {
  byte i = 0;
  pause = 1;
  do
  :: i < NP - 1 -> (held[i] == 1); i++
  :: else -> break
  od;
#ifndef BUG_REWIRE_BUSY
  (tail == head);
#endif
  q = CAP / NP;
  run sender(NP - 1);
  pause = 0
}
#endif

proctype receiver() {
  byte h;
  byte t;
  byte from;
  byte seq;
  byte s0;
  byte i = 0;
  do
  :: received + dropped == TOTAL -> break
  :: else ->
#ifndef BUG_LATE_SEQ
    s0 = wake_seq;
#endif
    h = head;
    t = tail;
    if
    :: t != h ->
#if defined(BUG_ADVANCE_BEFORE_READ)
      /* Broken: the slot is released before it is read. */
      atomic { from = slot_from[h % CAP]; busy[h % CAP] = 0; head = h + 1 };
      consumed[from]++;
      atomic {
        from = slot_from[h % CAP];
        seq = slot_seq[h % CAP];
        assert(seq == want[from] + 1);
        want[from] = seq;
        received++
      }
#elif defined(BUG_RINGKERNEL)
      /* Broken: a slot that does not look written yet is dropped. */
      atomic {
        if
        :: busy[h % CAP] ->
          from = slot_from[h % CAP];
          seq = slot_seq[h % CAP];
          assert(seq == want[from] + 1);
          want[from] = seq;
          received++;
          busy[h % CAP] = 0;
          head = h + 1
        :: else ->
          from = NP; /* unknown sender: its credit never comes back */
          dropped++;
          head = h + 1
        fi
      };
      if
      :: from < NP -> consumed[from]++
      :: else -> skip
      fi
#else
      atomic {
        from = slot_from[h % CAP];
        seq = slot_seq[h % CAP];
        assert(busy[h % CAP]); /* not read before it is written */
        assert(seq == want[from] + 1); /* once, in order per sender */
        want[from] = seq;
        received++
      };
      atomic { busy[h % CAP] = 0; head = h + 1 };
      consumed[from]++
#endif
    :: else ->
      /* Park: the count, a second look at the inbox, then a futex wait
       * while the sequence is s0. */
      waiters++;
#ifndef BUG_NO_RECHECK
      if
      :: tail != h -> goto awake
      :: else -> skip
      fi;
#endif
#ifdef BUG_LATE_SEQ
      s0 = wake_seq;
#endif
      atomic {
        if
        :: wake_seq == s0 -> asleep = 1
        :: else -> skip
        fi
      };
      asleep == 0;
awake:
      waiters--
    fi
  od;
  /* Nothing lost: every sender's messages all arrived. */
  assert(received == TOTAL);
  do
  :: i < NP -> assert(want[i] == K); i++
  :: else -> break
  od
}

init {
  byte i = 0;
  atomic {
    do
#ifdef REWIRE
    :: i < NP - 1 -> run sender(i); i++
#else
    :: i < NP -> run sender(i); i++
#endif
    :: else -> break
    od;
#ifdef REWIRE
    run host();
#endif
    run receiver()
  }
}
#endif /* CHAN */
