/* Actor-to-actor messaging (see k2k_internal.h; the protocol is modelled in
 * tests/model/k2k.pml). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actor/actor_internal.h"
#include "actor/k2k_internal.h"
#include "base/error.h"
#include "base/ring.h"
#include "base/sys.h"
#include "hal/actor_hal.h"
#include "rk/cluster.h"

#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD_RELAXED(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

enum {
  kMaxLinks = 64,      /* receivers of one port (fan-out) */
  kCounterStride = 16, /* uint64_t: one RK_ABI_LINE per counter */
  kPortName = 16,      /* "rk_port7" */
  kTypeName = 128,     /* a message type's name */
  kRefusalFull = RK_SEND_FULL,
  kRefusalUnconnected = RK_SEND_UNCONNECTED,
};

/* A receiver's inbox. */
typedef struct inbox {
  rk__ring_mp_t mp; /* the senders' stage (aligned to RK_ABI_LINE) */
  rk_abi_ring_t *hdr;
  unsigned char *slots;
  void *mem;
  uint32_t capacity, payload;
  uint32_t links;     /* links into it; each gets capacity / links */
  uint32_t quota;     /* set by connect, before activation */
  uint64_t *consumed; /* per link, kCounterStride apart: receiver-owned */
  /* The consumer end: the receiver's device side, which writes it as it
   * takes messages (a line apart from what senders read). */
  _Alignas(RK_ABI_LINE) rk__ring_end_t c;
} inbox_t;

typedef struct link {
  rk__k2k_t *dst;
  uint32_t index; /* the link's number in dst's inbox */
  uint64_t sent;  /* messages put into dst's inbox (sender-owned) */
  /* The receiver's count of this link's messages done with, as last read
   * (sender-owned; see link_credit). */
  uint64_t seen;
  /* dst runs in a resident GPU kernel: the link's own channel (its ring's
   * tail is `sent`); NULL for an inbox on the host. */
  rk_abi_chan_t *chan;
  /* A resident GPU sender to a receiver on the host: the kernel writes
   * `chan` (in the sender's context) and the forwarder thread moves the
   * messages into dst's inbox (host-forwarded). */
  bool forwarded;
} link_t;

typedef struct port {
  uint32_t size; /* message bytes; 0: the handler never sends here */
  char type[kTypeName];
  char name[kTypeName];  /* its name in the source; "" if only a number */
  unsigned char *outbox; /* RK__K2K_OUTBOX messages */
  link_t links[kMaxLinks];
  uint32_t nlinks;
} port_t;

struct rk__k2k {
  /* Written by its senders (busy) and rarely by the host: a line of its
   * own. */
  _Alignas(RK_ABI_LINE) uint32_t busy; /* atomic: senders delivering now */
  uint32_t gone;                       /* atomic: the actor was released */
  uint32_t stopped; /* atomic: its device side left its loop */
  uint32_t refs;    /* atomic: the actor, and one per link into this inbox */
  _Alignas(RK_ABI_LINE) uint32_t in_size;
  uint32_t inbox_capacity;
  char in_type[kTypeName];
  bool resident, forwarded;
  /* A resident GPU kernel: it sends and receives through channels
   * (abi/actor_abi.h), wired in `table`, one per link into it. */
  bool gpu_resident;
  rk_abi_k2k_t *table;   /* in the actor's mapped block */
  rk_context_t *context; /* the actor's: its channels' memory */
  /* Channel i into it: mapped host memory (chans[i]), or, from a resident
   * kernel of the same context, device memory (dchans[i], chans[i] NULL):
   * both ends on one GPU, nothing crosses the bus. */
  rk_abi_chan_t *chans[RK_ABI_K2K_MAX_IN];
  rk_devptr_t dchans[RK_ABI_K2K_MAX_IN];
  uint32_t nchans;
  bool bridge; /* rk__k2k_bridge_create: the cluster's, takes any type */
  rk_abi_control_t *control;
  rk_abi_ring_t *in_ring; /* where the device side parks */
  uint32_t nports;
  inbox_t *inbox;
  /* Its senders, one entry per link into it (an entry's `owner` NULL for
   * the cluster's ingress): who must be held quiet while it is rewired.
   * Changed under g_wiring only. */
  rk__k2k_t **senders;
  uint32_t senders_in, senders_cap;
  rk_actor_t *owner; /* NULL: a bridge or an ingress */
  /* From here on written by its device side as it runs, on lines apart
   * from what its senders read above: a handler's send writes `ctl`, and
   * a sender pulling that line away on every message costs the handler a
   * cache miss per send. */
  _Alignas(RK_ABI_LINE) uint32_t ctl[RK__K2K_MAX_PORTS * RK__K2K_PORT_WORDS];
  port_t ports[RK__K2K_MAX_PORTS];
  /* Counters: written by the device side (one thread at a time: a CPU
   * worker, or a relaunch or cluster thread holding its lock), read by
   * stats. */
  uint64_t sent, refused_full, refused_unconnected; /* atomic */
  uint64_t undelivered; /* atomic: queued for a receiver released since */
  uint64_t received, received_errors; /* atomic */
  /* The stamps of the last message sent and the last one handled. */
  uint64_t last_sent_ts, last_received_ts; /* atomic */
};

/* ---- Creation ------------------------------------------------------------ */

/* "const req_t *" -> "req_t". */
static void base_type(const char *t, char *out, size_t cap) {
  if (strncmp(t, "const ", 6) == 0) t += 6;
  size_t n = strcspn(t, " *");
  if (n >= cap) n = cap - 1;
  memcpy(out, t, n);
  out[n] = '\0';
}

static void inbox_free(inbox_t *b) {
  if (!b) return;
  free(b->consumed);
  free(b->mem);
  free(b);
}

/* The channels into a GPU actor, once nobody writes them any more. One in
 * device memory stays until the context goes: a kernel that never stopped
 * (a terminate that timed out) or a sender between its look at `open` and
 * its publish may still write it, and freed device memory may be another
 * allocation's by then. (Mapped blocks are kept while any kernel of the
 * context is resident: cuda_memory.c.) */
static void chans_free(rk__k2k_t *k) {
  for (uint32_t i = 0; i < k->nchans; ++i)
    if (k->chans[i]) rk__hal_mapped_free(k->context, k->chans[i]);
  k->nchans = 0;
}

static void k2k_free(rk__k2k_t *k) {
  for (uint32_t p = 0; p < RK__K2K_MAX_PORTS; ++p) {
    port_t *pt = &k->ports[p];
    for (uint32_t i = 0; i < pt->nlinks; ++i) {
      rk__k2k_t *d = pt->links[i].dst;
      if (__atomic_sub_fetch(&d->refs, 1u, __ATOMIC_ACQ_REL) == 0) k2k_free(d);
    }
    free(pt->outbox);
  }
  inbox_free(k->inbox);
  free(k->senders);
  free(k);
}

/* Wiring and unwiring (connect, disconnect, a sender's release), one at a
 * time: the senders lists change under it, and rk_actor_connect holds it
 * while it keeps a receiver's senders quiet (lock order: g_wiring, then
 * the actors' ctl_lock in address order). */
static pthread_mutex_t g_wiring = PTHREAD_MUTEX_INITIALIZER;

/* Room for one more entry in d's senders list. */
static rk_status_t senders_reserve(rk__k2k_t *d) {
  if (d->senders_in < d->senders_cap) return RK_OK;
  const uint32_t cap = d->senders_cap ? 2 * d->senders_cap : 4;
  rk__k2k_t **n = realloc(d->senders, cap * sizeof *n);
  if (!n) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_connect: senders");
  d->senders = n;
  d->senders_cap = cap;
  return RK_OK;
}

/* After senders_reserve. */
static void senders_add(rk__k2k_t *d, rk__k2k_t *src) {
  d->senders[d->senders_in] = src;
  __atomic_store_n(&d->senders_in, d->senders_in + 1, __ATOMIC_RELAXED);
}

/* One entry of src (one link) out of d's list. */
static void senders_remove(rk__k2k_t *d, const rk__k2k_t *src) {
  for (uint32_t i = 0; i < d->senders_in; ++i) {
    if (d->senders[i] != src) continue;
    memmove(&d->senders[i], &d->senders[i + 1],
            (d->senders_in - i - 1) * sizeof d->senders[0]);
    __atomic_store_n(&d->senders_in, d->senders_in - 1, __ATOMIC_RELAXED);
    return;
  }
}

void rk__k2k_set_owner(rk__k2k_t *k, rk_actor_t *owner) {
  if (k) k->owner = owner;
}

rk_status_t rk__k2k_create(const rk_entry_t *e, uint32_t in_size,
                           uint32_t inbox_capacity, rk_actor_mode_t mode,
                           rk_actor_execution_t execution, bool polled,
                           rk__k2k_t **out) {
  rk__k2k_t *k =
      aligned_alloc(RK_ABI_LINE, sizeof(rk__k2k_t) + RK_ABI_LINE -
                                     sizeof(rk__k2k_t) % RK_ABI_LINE);
  if (!k) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: K2K state");
  memset(k, 0, sizeof *k);
  k->refs = 1;
  k->in_size = in_size;
  k->inbox_capacity = inbox_capacity;
  k->resident = execution == RK_ACTOR_EXEC_RESIDENT;
  k->gpu_resident = k->resident && polled;
  if (e->param_count) base_type(e->params[0].type, k->in_type, kTypeName);
  for (size_t i = 0; i < e->param_count; ++i) {
    const rk_entry_param_t *pa = &e->params[i];
    unsigned p;
    char tail;
    if (sscanf(pa->name, "rk_port%u%c", &p, &tail) != 1 ||
        p >= RK__K2K_MAX_PORTS)
      continue;
    port_t *pt = &k->ports[p];
    pt->size = (uint32_t)pa->elem_size;
    base_type(pa->type, pt->type, kTypeName);
    if (pa->port_name) snprintf(pt->name, sizeof pt->name, "%s", pa->port_name);
    pt->outbox = calloc(RK__K2K_OUTBOX, pt->size ? pt->size : 1);
    if (!pt->outbox) {
      k2k_free(k);
      return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: K2K outbox");
    }
    if (p + 1 > k->nports) k->nports = p + 1;
  }
  if (k->nports && mode == RK_ACTOR_TRADITIONAL) {
    k2k_free(k);
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "actor '%s': its handler sends to other actors (rk_send), "
                    "which needs persistent mode",
                    e->name);
  }
  for (uint32_t p = 0; p < k->nports; ++p) {
    uint32_t *w = &k->ctl[p * RK__K2K_PORT_WORDS];
    w[2] = kRefusalUnconnected;
  }
  *out = k;
  return RK_OK;
}

void rk__k2k_attach(rk__k2k_t *k, rk_abi_control_t *control,
                    rk_abi_ring_t *in_ring, rk_abi_k2k_t *table,
                    rk_context_t *context) {
  k->control = control;
  k->in_ring = in_ring;
  k->context = context;
  k->table = k->gpu_resident ? table : NULL;
  if (k->table) {
    memset(k->table, 0, sizeof *k->table);
    k->table->magic = RK_ABI_K2K_MAGIC;
    k->table->version = RK_ABI_VERSION;
    k->table->nports = k->nports;
  }
}

size_t rk__k2k_device_bytes(const rk__k2k_t *k, uint32_t out_size) {
  if (!k) return 0;
  uint64_t n = rk_abi_k2k_first_port(out_size);
  for (uint32_t p = 0; p < k->nports; ++p)
    if (k->ports[p].size) n += rk_abi_k2k_port_bytes(k->ports[p].size);
  return (size_t)n;
}

static void fwd_forget(rk__k2k_t *src);

void rk__k2k_release(rk__k2k_t *k) {
  if (!k) return;
  /* Its forwarded links leave the forwarder (their channels with them):
   * its kernel has stopped writing them. */
  fwd_forget(k);
  /* After this no sender touches the input ring (which goes away with the
   * actor): one that got in first is waited for. */
  __atomic_store_n(&k->gone, 1u, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&k->busy, __ATOMIC_SEQ_CST)) rk__cpu_relax();
  /* No host sender writes its channels any more (they look at `gone`
   * first), and a GPU sender has seen them closed since it stopped. */
  chans_free(k);
  /* Its own device side has stopped: its links let go of the receivers
   * (so that actors wired in a cycle are freed too), and it leaves their
   * senders lists. */
  pthread_mutex_lock(&g_wiring);
  for (uint32_t p = 0; p < RK__K2K_MAX_PORTS; ++p) {
    port_t *pt = &k->ports[p];
    for (uint32_t i = 0; i < pt->nlinks; ++i) {
      rk__k2k_t *d = pt->links[i].dst;
      senders_remove(d, k);
      if (__atomic_sub_fetch(&d->refs, 1u, __ATOMIC_ACQ_REL) == 0) k2k_free(d);
    }
    pt->nlinks = 0;
  }
  pthread_mutex_unlock(&g_wiring);
  if (__atomic_sub_fetch(&k->refs, 1u, __ATOMIC_ACQ_REL) == 0) k2k_free(k);
}

/* ---- Sending ------------------------------------------------------------- */

uint32_t rk__k2k_nports(const rk__k2k_t *k) { return k ? k->nports : 0; }
uint32_t *rk__k2k_ctl(rk__k2k_t *k) { return k->ctl; }
void *rk__k2k_outbox(rk__k2k_t *k, uint32_t p) { return k->ports[p].outbox; }
uint32_t rk__k2k_port_size(const rk__k2k_t *k, uint32_t p) {
  return k->ports[p].size;
}
void rk__k2k_set_forwarded(rk__k2k_t *k) { k->forwarded = true; }

/* What link l can still take, at least `want` if it can. The receiver's
 * count of messages done with only grows, so an old reading gives too
 * little credit, never too much: it is loaded again (acquire: the receiver
 * has finished reading the slots it counts) only when the last reading
 * would give less than `want`. A steady exchange then reads no line the
 * receiver writes on each send, only once every quota - want messages. */
static uint64_t link_credit(link_t *l, uint64_t want) {
  const uint64_t *done;
  uint64_t cap;
  if (l->chan && !l->forwarded) {
    /* The channel's own ring: the receiver frees a slot by advancing its
     * head (a release store after it read the slot). */
    done = &l->chan->ring.head;
    cap = l->chan->ring.capacity;
  } else {
    const inbox_t *b = l->dst->inbox;
    done = &b->consumed[(size_t)l->index * kCounterStride];
    cap = b->quota;
  }
  uint64_t in_flight = l->sent - l->seen;
  if (in_flight >= cap || cap - in_flight < want) {
    l->seen = LOAD_ACQUIRE(done);
    in_flight = l->sent - l->seen;
  }
  return in_flight >= cap ? 0 : cap - in_flight;
}

/* A receiver whose device side has stopped, or that is going away, takes
 * nothing more. (Only fields of the K2K state, which lives as long as a
 * link to it: the actor's own memory may be gone.) */
static bool receiver_gone(const rk__k2k_t *d) {
  return LOAD_ACQUIRE(&d->stopped) || LOAD_ACQUIRE(&d->gone);
}

/* A GPU sender reads `open` in each channel (the host ones `stopped`);
 * in device memory it is written by a copy. A copy that fails (the
 * context is lost) leaves nothing running to read it. */
static void chans_open(rk__k2k_t *k, uint32_t open) {
  for (uint32_t i = 0; i < k->nchans; ++i) {
    if (k->chans[i])
      STORE_RELEASE(&k->chans[i]->open, open);
    else
      (void)rk_context_copy_to_device(
          k->context, k->dchans[i] + offsetof(rk_abi_chan_t, open), &open,
          sizeof open);
  }
}

void rk__k2k_stopped(rk__k2k_t *k) {
  if (!k) return;
  STORE_RELEASE(&k->stopped, 1u);
  chans_open(k, 0u);
}

void rk__k2k_restarted(rk__k2k_t *k) {
  if (k && !LOAD_ACQUIRE(&k->gone)) {
    STORE_RELEASE(&k->stopped, 0u);
    chans_open(k, 1u);
  }
}

void rk__k2k_prepare(rk__k2k_t *k, uint32_t max) {
  if (max > RK__K2K_OUTBOX) max = RK__K2K_OUTBOX;
  for (uint32_t p = 0; p < k->nports; ++p) {
    port_t *pt = &k->ports[p];
    uint32_t *w = &k->ctl[p * RK__K2K_PORT_WORDS];
    uint64_t credit = pt->nlinks ? max : 0;
    uint32_t refusal = pt->nlinks ? kRefusalFull : kRefusalUnconnected;
    for (uint32_t i = 0; i < pt->nlinks && credit; ++i) {
      if (receiver_gone(pt->links[i].dst)) {
        credit = 0;
        refusal = kRefusalUnconnected;
        break;
      }
      link_t *l = &pt->links[i];
      uint64_t c;
      if (l->chan && !l->forwarded) {
        /* A GPU receiver's channel is freed when it is released: look at
         * it only while busy on it (the Dekker of rk__k2k_deliver). */
        rk__k2k_t *d = l->dst;
        __atomic_fetch_add(&d->busy, 1u, __ATOMIC_SEQ_CST);
        const bool gone = __atomic_load_n(&d->gone, __ATOMIC_SEQ_CST);
        c = gone ? 0 : link_credit(l, max);
        __atomic_fetch_sub(&d->busy, 1u, __ATOMIC_RELEASE);
        if (gone) {
          credit = 0;
          refusal = kRefusalUnconnected;
          break;
        }
      } else {
        c = link_credit(l, max);
      }
      if (c < credit) credit = c;
    }
    w[0] = (uint32_t)credit;
    w[1] = 0;
    w[2] = refusal;
    w[3] = 0;
  }
}

/* Wakes the receiver's device side if it said it sleeps: the signalling
 * half of ring.c's handshake on its input ring. It looks at the inbox
 * after raising the waiter count (rk__ring_wait_data_since_or), so either
 * it sees our message or we see it waiting. */
static void wake(rk__k2k_t *d) {
  if (d->in_ring) rk__ring_signal_data(d->in_ring);
}

/* ---- Forwarding: resident GPU senders to receivers on the host -----------
 *
 * A kernel cannot write the multi-producer inbox of a CPU or relaunch
 * actor, so such a link gets a channel (as a link into a GPU actor does)
 * that the kernel writes, and one process-wide host thread moves its
 * messages into the receiver's inbox: as many as the link's inbox credit
 * allows, in order, each once (the inbox link's producer is this thread
 * alone); it frees the channel's slots after it copied them (the kernel's
 * credit back) and wakes the receiver. It polls every link, backing off to
 * 20 us sleeps while nothing comes, and exists while any such link does. */

typedef struct fwd {
  struct fwd *next;
  rk__k2k_t *src;
  link_t *link;
  uint32_t size;
} fwd_t;

static struct {
  pthread_mutex_t lock; /* the list; held for a whole pass */
  fwd_t *list;
  pthread_t thread;
  bool running;  /* under lock: the thread exists */
  uint32_t stop; /* atomic */
} g_fwd = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Moves what it can of one link; returns the messages moved or dropped.
 * Messages for a stopped receiver go into its inbox as a host sender's
 * queued ones stay there (the next device side takes them). */
static uint64_t fwd_pass(fwd_t *f) {
  link_t *l = f->link;
  rk_abi_chan_t *ch = l->chan;
  rk__k2k_t *d = l->dst;
  /* The kernel's sends answer RK_SEND_UNCONNECTED while the receiver is
   * stopped (a restart opens the channel again), as a host sender's do. */
  const uint32_t open = receiver_gone(d) ? 0u : 1u;
  if (ch->open != open) STORE_RELEASE(&ch->open, open);
  const uint64_t head = ch->ring.head; /* ours: the only consumer */
  const uint64_t tail = LOAD_ACQUIRE(&ch->ring.tail);
  if (tail == head) return 0;
  uint64_t n = tail - head;
  __atomic_fetch_add(&d->busy, 1u, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&d->gone, __ATOMIC_SEQ_CST)) {
    /* Nobody will take them: they count as undelivered. */
    __atomic_fetch_sub(&d->busy, 1u, __ATOMIC_RELEASE);
    ADD_RELAXED(&f->src->undelivered, n);
    STORE_RELEASE(&ch->ring.head, tail);
    return n;
  }
  const uint64_t credit = link_credit(l, n); /* in the inbox */
  if (n > credit) n = credit;
  const uint32_t cap = ch->ring.capacity, slot = ch->ring.slot_size;
  const unsigned char *slots = (const unsigned char *)(ch + 1);
  inbox_t *b = d->inbox;
  for (uint64_t m = 0; m < n; ++m) {
    const unsigned char *sl = slots + (size_t)((head + m) & (cap - 1)) * slot;
    rk_abi_msg_t h;
    memcpy(&h, sl, sizeof h);
    h.status = l->index; /* whose credit comes back in the inbox */
    while (rk__ring_mp_send_quiet(&b->mp, &h, sl + RK_ABI_MSG_HEADER, f->size,
                                  NULL) != RK_OK)
      rk__cpu_relax();
    l->sent++;
  }
  if (n) {
    /* Copied out: the slots are the kernel's again. */
    STORE_RELEASE(&ch->ring.head, head + n);
    wake(d);
  }
  __atomic_fetch_sub(&d->busy, 1u, __ATOMIC_RELEASE);
  return n;
}

static void *fwd_main(void *arg) {
  (void)arg;
  rk__set_thread_name("rk-k2k-fwd");
  uint32_t idle = 0;
  while (!LOAD_ACQUIRE(&g_fwd.stop)) {
    uint64_t moved = 0;
    pthread_mutex_lock(&g_fwd.lock);
    for (fwd_t *f = g_fwd.list; f; f = f->next) moved += fwd_pass(f);
    pthread_mutex_unlock(&g_fwd.lock);
    if (moved) {
      idle = 0;
    } else if (++idle < 64) {
      rk__cpu_relax();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static rk_status_t fwd_add(rk__k2k_t *src, link_t *l, uint32_t size) {
  fwd_t *f = calloc(1, sizeof *f);
  if (!f) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_connect: forwarding");
  f->src = src;
  f->link = l;
  f->size = size;
  pthread_mutex_lock(&g_fwd.lock);
  if (!g_fwd.running) {
    STORE_RELEASE(&g_fwd.stop, 0u);
    if (pthread_create(&g_fwd.thread, NULL, fwd_main, NULL) != 0) {
      pthread_mutex_unlock(&g_fwd.lock);
      free(f);
      return rk__fail(RK_ERR_OUT_OF_MEMORY,
                      "actor_connect: cannot start the forwarding thread");
    }
    g_fwd.running = true;
  }
  f->next = g_fwd.list;
  g_fwd.list = f;
  pthread_mutex_unlock(&g_fwd.lock);
  return RK_OK;
}

static void fwd_forget(rk__k2k_t *src) {
  fwd_t *mine = NULL;
  bool join = false;
  pthread_t thread;
  pthread_mutex_lock(&g_fwd.lock);
  for (fwd_t **p = &g_fwd.list; *p;) {
    fwd_t *f = *p;
    if (f->src == src) {
      *p = f->next;
      f->next = mine;
      mine = f;
    } else {
      p = &f->next;
    }
  }
  if (mine && !g_fwd.list && g_fwd.running) {
    STORE_RELEASE(&g_fwd.stop, 1u);
    g_fwd.running = false;
    thread = g_fwd.thread;
    join = true;
  }
  pthread_mutex_unlock(&g_fwd.lock);
  if (join) pthread_join(thread, NULL);
  while (mine) {
    fwd_t *f = mine;
    mine = f->next;
    /* What the forwarder had not moved yet stays undelivered. */
    rk_abi_chan_t *ch = f->link->chan;
    const uint64_t left = LOAD_ACQUIRE(&ch->ring.tail) - ch->ring.head;
    if (left) ADD_RELAXED(&src->undelivered, left);
    f->link->chan = NULL;
    rk__hal_mapped_free(src->context, ch);
    free(f);
  }
}

void rk__k2k_deliver(rk__k2k_t *k, uint64_t stamp) {
  uint64_t sent = 0, full = 0, unconnected = 0;
  for (uint32_t p = 0; p < k->nports; ++p) {
    port_t *pt = &k->ports[p];
    uint32_t *w = &k->ctl[p * RK__K2K_PORT_WORDS];
    uint32_t n = w[1];
    /* A handler cannot send more than its credit; a device that reports
     * more wrote past the outbox: keep to what the credit allowed. */
    if (n > w[0]) n = w[0];
    if (w[3]) {
      if (w[2] == kRefusalFull)
        full += w[3];
      else
        unconnected += w[3];
    }
    for (uint32_t i = 0; i < pt->nlinks && n; ++i) {
      link_t *l = &pt->links[i];
      inbox_t *b = l->dst->inbox;
      /* Dekker with rk__k2k_release: we are busy before we look at `gone`,
       * or it sees us busy and waits. */
      __atomic_fetch_add(&l->dst->busy, 1u, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&l->dst->gone, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_sub(&l->dst->busy, 1u, __ATOMIC_RELEASE);
        ADD_RELAXED(&k->undelivered, n);
        continue;
      }
      if (l->chan && !l->forwarded) {
        /* A GPU receiver's channel: the slots, then the tail with a
         * release store (the kernel loads it with acquire); it polls, so
         * there is nobody to wake. The credit guarantees the room. */
        rk_abi_chan_t *ch = l->chan;
        const uint32_t cap = ch->ring.capacity, slot = ch->ring.slot_size;
        unsigned char *slots = (unsigned char *)(ch + 1);
        for (uint32_t m = 0; m < n; ++m) {
          unsigned char *sl =
              slots + (size_t)((l->sent + m) & (cap - 1)) * slot;
          const rk_abi_msg_t h = {.correlation_id = l->sent + m + 1,
                                  .timestamp = stamp,
                                  .type = RK__ABI_MSG_K2K,
                                  .size = pt->size,
                                  .status = l->index,
                                  .code = (int32_t)p};
          memcpy(sl, &h, sizeof h);
          memcpy(sl + RK_ABI_MSG_HEADER, pt->outbox + (size_t)m * pt->size,
                 pt->size);
        }
        l->sent += n;
        STORE_RELEASE(&ch->ring.tail, l->sent);
        sent += n;
        __atomic_fetch_sub(&l->dst->busy, 1u, __ATOMIC_RELEASE);
        continue;
      }
      for (uint32_t m = 0; m < n; ++m) {
        rk_abi_msg_t h = {.correlation_id = l->sent + 1,
                          .timestamp = stamp,
                          .type = RK__ABI_MSG_K2K,
                          .size = pt->size,
                          .status = l->index,
                          .code = (int32_t)p};
        /* The credit guarantees a slot; the loop only covers a stage
         * whose other producer is between its reserve and its publish. */
        while (rk__ring_mp_send_quiet(&b->mp, &h,
                                      pt->outbox + (size_t)m * pt->size,
                                      pt->size, NULL) != RK_OK)
          rk__cpu_relax();
        l->sent++;
      }
      sent += n;
      wake(l->dst);
      __atomic_fetch_sub(&l->dst->busy, 1u, __ATOMIC_RELEASE);
    }
  }
  if (sent) {
    /* The stamp before the count (release): a reader that sees the count
     * (acquire, rk_actor_k2k_stats) sees this stamp or a later one. The
     * receiver may take the messages before either is stored. */
    __atomic_store_n(&k->last_sent_ts, stamp, __ATOMIC_RELAXED);
    STORE_RELEASE(&k->sent, LOAD_RELAXED(&k->sent) + sent);
  }
  if (full) ADD_RELAXED(&k->refused_full, full);
  if (unconnected) ADD_RELAXED(&k->refused_unconnected, unconnected);
}

/* ---- Receiving ----------------------------------------------------------- */

rk__ring_end_t *rk__k2k_inbox_end(rk__k2k_t *k) {
  return k && k->inbox ? &k->inbox->c : NULL;
}

uint32_t rk__k2k_inbox_available(rk__k2k_t *k) {
  if (!k || !k->inbox) return 0;
  uint64_t n = rk__ring_available(&k->inbox->c);
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint64_t rk__k2k_inbox_timestamp(rk__k2k_t *k, uint32_t i) {
  const rk_abi_msg_t *h = rk__ring_peek(&k->inbox->c, i);
  return h ? h->timestamp : 0;
}

uint32_t rk__k2k_inbox_available_upto(rk__k2k_t *k, uint32_t want) {
  if (!k || !k->inbox) return 0;
  uint64_t n = rk__ring_available_upto(&k->inbox->c, want);
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

const void *rk__k2k_inbox_payload(rk__k2k_t *k, uint32_t i) {
  const unsigned char *s = rk__ring_peek(&k->inbox->c, i);
  return s ? s + RK_ABI_MSG_HEADER : NULL;
}

uint32_t rk__k2k_inbox_run(const rk__k2k_t *k, uint32_t i, uint32_t *stride) {
  const rk__ring_end_t *c = &k->inbox->c;
  *stride = c->slot_size;
  return (uint32_t)(c->mask + 1 - ((c->own + i) & c->mask));
}

void rk__k2k_inbox_release(rk__k2k_t *k, uint32_t n, uint32_t errors) {
  inbox_t *b = k->inbox;
  /* Whose credit comes back: read before the slots are freed. */
  uint32_t idx[256];
  uint32_t done = 0;
  if (n) {
    const rk_abi_msg_t *last = rk__ring_peek(&b->c, n - 1);
    __atomic_store_n(&k->last_received_ts, last->timestamp, __ATOMIC_RELAXED);
  }
  while (done < n) {
    uint32_t chunk = n - done < 256 ? n - done : 256;
    for (uint32_t i = 0; i < chunk; ++i) {
      const rk_abi_msg_t *h = rk__ring_peek(&b->c, i);
      idx[i] = h->status;
    }
    rk__ring_release(&b->c, chunk);
    /* Credit after the slots are free (a sender may reuse them at once). */
    for (uint32_t i = 0; i < chunk; ++i) {
      uint64_t *c = &b->consumed[(size_t)idx[i] * kCounterStride];
      STORE_RELEASE(c, LOAD_RELAXED(c) + 1);
    }
    done += chunk;
  }
  /* One writer (above): a store, not a locked add. */
  __atomic_store_n(&k->received, LOAD_RELAXED(&k->received) + n,
                   __ATOMIC_RELAXED);
  if (errors) ADD_RELAXED(&k->received_errors, errors);
}

/* ---- Wiring -------------------------------------------------------------- */

static rk_status_t make_inbox(rk__k2k_t *d) {
  inbox_t *b = aligned_alloc(
      RK_ABI_LINE, (sizeof *b + RK_ABI_LINE - 1) & ~(size_t)(RK_ABI_LINE - 1));
  if (!b) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: K2K inbox");
  memset(b, 0, sizeof *b);
  b->capacity = d->inbox_capacity;
  b->payload = d->in_size;
  const uint32_t slot = rk_abi_slot_size(d->in_size);
  const size_t bytes =
      sizeof(rk_abi_ring_t) + (size_t)rk__ring_slot_bytes(b->capacity, slot);
  b->mem = aligned_alloc(
      RK_ABI_LINE, (bytes + RK_ABI_LINE - 1) & ~(size_t)(RK_ABI_LINE - 1));
  if (!b->mem) {
    free(b);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor: K2K inbox of %zu bytes",
                    bytes);
  }
  memset(b->mem, 0, bytes);
  b->hdr = b->mem;
  b->slots = (unsigned char *)b->mem + sizeof(rk_abi_ring_t);
  rk_status_t s = rk__ring_init(b->hdr, b->capacity, slot);
  if (s != RK_OK) {
    inbox_free(b);
    return s;
  }
  /* Every producer goes through the stage below (base/ring.c): the
   * receiver finds messages by the slot marks. */
  rk__ring_mark_slots(b->hdr);
  rk__ring_mp_init(&b->mp, b->hdr, b->slots, RK__RING_MP_LOCK);
  rk__ring_attach(&b->c, b->hdr, b->slots, false);
  d->inbox = b;
  return RK_OK;
}

/* A link into an actor resident on a GPU: a channel of its own, in
 * portable mapped memory of the receiver's context, named in the
 * receiver's table and, for a GPU sender, in the sender's. */
static rk_status_t connect_chan(rk__k2k_t *src, const char *src_name,
                                uint32_t port, rk__k2k_t *dst,
                                const char *dst_name) {
  port_t *pt = &src->ports[port];
  if (!dst->table || (src->gpu_resident && !src->table))
    return rk__fail(RK_ERR_INVALID_STATE,
                    "actor_connect: '%s' has no K2K table", dst_name);
  if (dst->nchans == RK_ABI_K2K_MAX_IN)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: '%s' runs in a resident GPU kernel, which "
                    "takes at most %u links",
                    dst_name, RK_ABI_K2K_MAX_IN);
  if (src->gpu_resident && pt->nlinks == RK_ABI_K2K_MAX_OUT)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: port %u of '%s' (a resident GPU kernel) "
                    "already goes to %u actors",
                    port, src_name, RK_ABI_K2K_MAX_OUT);
  /* Between two kernels of one context: device memory, its header
   * written by a copy (RK_K2K_MAPPED_CHANNELS=1 keeps them in mapped host
   * memory, for comparison), and with a small payload, word slots
   * (actor_abi.h: no fence on either side; RK_K2K_WORD_SLOTS=0 keeps the
   * header-and-payload slots, for comparison). */
  const char *mapped_env = getenv("RK_K2K_MAPPED_CHANNELS");
  const char *words_env = getenv("RK_K2K_WORD_SLOTS");
  const bool on_device = src->gpu_resident && src->context == dst->context &&
                         !(mapped_env && strcmp(mapped_env, "1") == 0);
  const bool words = on_device && dst->in_size <= RK_ABI_K2K_WORDS_MAX &&
                     !(words_env && strcmp(words_env, "0") == 0);
  const uint32_t slot = words ? rk_abi_k2k_words_slot_size(dst->in_size)
                              : rk_abi_slot_size(dst->in_size);
  const size_t bytes =
      sizeof(rk_abi_chan_t) + rk__ring_slot_bytes(dst->inbox_capacity, slot);
  rk_abi_chan_t hdr, *ch = &hdr;
  rk_devptr_t dch = 0;
  void *mem = NULL;
  rk_status_t s = on_device ? rk_context_allocate(dst->context, bytes, &dch)
                            : rk__hal_mapped_alloc(dst->context, bytes, &mem);
  if (s != RK_OK)
    return rk__fail_context(s, "actor_connect: a channel to '%s'", dst_name);
  if (mem) {
    memset(mem, 0, bytes);
    ch = mem;
  } else {
    memset(&hdr, 0, sizeof hdr);
  }
  s = rk__ring_init(&ch->ring, dst->inbox_capacity, slot);
  if (s == RK_OK) {
    if (words) ch->ring.flags |= RK_ABI_RING_SLOT_WORDS;
    ch->open = 1;
    ch->link = dst->nchans;
    if (on_device)
      s = rk_context_copy_to_device(dst->context, dch, &hdr, sizeof hdr);
  }
  if (s != RK_OK) {
    if (mem)
      rk__hal_mapped_free(dst->context, mem);
    else
      rk_context_free(dst->context, dch);
    return rk__fail_context(s, "actor_connect: a channel to '%s'", dst_name);
  }
  /* The kernels read their tables after they see `active`, which the host
   * stores with release after this. An entry with bit 0 set names a
   * channel in device memory (channels are line-aligned). */
  const uint64_t entry =
      on_device ? (uint64_t)dch | 1u : (uint64_t)(uintptr_t)ch;
  dst->chans[dst->nchans] = on_device ? NULL : ch;
  dst->dchans[dst->nchans++] = dch;
  dst->table->in[dst->table->nin++] = entry;
  if (src->gpu_resident)
    src->table->out[port][src->table->nout[port]++] = entry;
  link_t *l = &pt->links[pt->nlinks++];
  l->dst = dst;
  l->index = ch->link;
  l->sent = 0;
  l->seen = 0;
  /* A device channel has no host sender: the kernel writes it. */
  l->chan = on_device ? NULL : ch;
  l->forwarded = false;
  senders_add(dst, src);
  __atomic_add_fetch(&dst->refs, 1u, __ATOMIC_ACQ_REL);
  return RK_OK;
}

/* Adds link (src, port, dst); the caller holds g_wiring. */
static rk_status_t link_add(rk__k2k_t *src, const char *src_name, uint32_t port,
                            rk__k2k_t *dst, const char *dst_name) {
  if (port >= RK__K2K_MAX_PORTS || port >= src->nports ||
      !src->ports[port].size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: '%s' never sends to port %u (its handler "
                    "sends to %u port%s)",
                    src_name, port, src->nports, src->nports == 1 ? "" : "s");
  if (src->gpu_resident && !dst->gpu_resident) {
    if (!src->table)
      return rk__fail(RK_ERR_INVALID_STATE,
                      "actor_connect: '%s' has no K2K table", src_name);
    if (src->ports[port].nlinks == RK_ABI_K2K_MAX_OUT)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "actor_connect: port %u of '%s' (a resident GPU kernel) "
                      "already goes to %u actors",
                      port, src_name, RK_ABI_K2K_MAX_OUT);
  }
  port_t *pt = &src->ports[port];
  if (pt->size != dst->in_size ||
      (!dst->bridge && strcmp(pt->type, dst->in_type) != 0))
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: port %u of '%s' sends %s (%u bytes), but "
                    "'%s' takes %s (%u bytes)",
                    port, src_name, pt->type, pt->size, dst_name, dst->in_type,
                    dst->in_size);
  for (uint32_t i = 0; i < pt->nlinks; ++i)
    if (pt->links[i].dst == dst)
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "actor_connect: port %u of '%s' is already connected to "
                      "'%s'",
                      port, src_name, dst_name);
  /* One link per (sender, receiver): each link keeps its messages in
   * order, two links of one pair would not keep theirs in order with each
   * other (a resident GPU receiver polls a channel per link), and the
   * receiver cannot tell them apart (it takes one message type). */
  for (uint32_t q = 0; q < src->nports; ++q)
    for (uint32_t i = 0; q != port && i < src->ports[q].nlinks; ++i)
      if (src->ports[q].links[i].dst == dst)
        return rk__fail(RK_ERR_INVALID_ARGUMENT,
                        "actor_connect: '%s' already sends to '%s' on port "
                        "%u; one sender reaches one receiver through one port "
                        "(that keeps its messages in order): send them all "
                        "on port %u",
                        src_name, dst_name, q, q);
  if (pt->nlinks == kMaxLinks)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: port %u of '%s' already goes to %d actors",
                    port, src_name, kMaxLinks);
  RK_RETURN_IF_ERROR(senders_reserve(dst));
  if (dst->gpu_resident)
    return connect_chan(src, src_name, port, dst, dst_name);
  if (dst->inbox && dst->inbox->links + 1 > dst->inbox_capacity)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: '%s' has an inbox of %u slots, too few for "
                    "%u senders (each needs one): raise its input_capacity",
                    dst_name, dst->inbox_capacity, dst->inbox->links + 1);
  if (!dst->inbox) RK_RETURN_IF_ERROR(make_inbox(dst));
  inbox_t *b = dst->inbox;
  uint64_t *consumed = realloc(
      b->consumed, (size_t)(b->links + 1) * kCounterStride * sizeof(uint64_t));
  if (!consumed)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_connect: credit counters");
  b->consumed = consumed;
  memset(&consumed[(size_t)b->links * kCounterStride], 0,
         kCounterStride * sizeof(uint64_t));
  rk_abi_chan_t *ch = NULL;
  if (src->gpu_resident) {
    /* The kernel's side of a forwarded link: a channel in the sender's
     * context, as large as the receiver's inbox. */
    const uint32_t slot = rk_abi_slot_size(dst->in_size);
    const size_t bytes =
        sizeof(rk_abi_chan_t) + rk__ring_slot_bytes(dst->inbox_capacity, slot);
    void *mem = NULL;
    rk_status_t s = rk__hal_mapped_alloc(src->context, bytes, &mem);
    if (s != RK_OK)
      return rk__fail_context(s, "actor_connect: a channel from '%s'",
                              src_name);
    memset(mem, 0, bytes);
    ch = mem;
    s = rk__ring_init(&ch->ring, dst->inbox_capacity, slot);
    if (s != RK_OK) {
      rk__hal_mapped_free(src->context, mem);
      return s;
    }
    ch->open = 1;
    ch->link = b->links;
  }
  link_t *l = &pt->links[pt->nlinks++];
  l->dst = dst;
  l->index = b->links++;
  l->sent = 0;
  l->seen = 0;
  l->chan = ch;
  l->forwarded = ch != NULL;
  b->quota = b->capacity / b->links;
  if (ch) {
    rk_status_t s = fwd_add(src, l, pt->size);
    if (s != RK_OK) {
      /* Undo: the link was the last one added. */
      pt->nlinks--;
      b->links--;
      b->quota = b->links ? b->capacity / b->links : 0;
      rk__hal_mapped_free(src->context, ch);
      return s;
    }
    src->table->out[port][src->table->nout[port]++] = (uint64_t)(uintptr_t)ch;
  }
  senders_add(dst, src);
  __atomic_add_fetch(&dst->refs, 1u, __ATOMIC_ACQ_REL);
  return RK_OK;
}

const char *rk_k2k_path_name(rk_k2k_path_t path) {
  switch (path) {
    case RK_K2K_NONE:
      return "none";
    case RK_K2K_DIRECT:
      return "direct";
    case RK_K2K_HOST_FORWARDED:
      return "host-forwarded";
  }
  return "unknown";
}

void rk__k2k_stats(const rk__k2k_t *k, rk_actor_k2k_stats_t *o) {
  memset(o, 0, sizeof *o);
  if (!k) return;
  bool forwarded = !k->resident, any = false;
  for (uint32_t p = 0; p < k->nports; ++p) {
    const port_t *pt = &k->ports[p];
    if (pt->size) o->ports++;
    o->links_out += pt->nlinks;
    for (uint32_t i = 0; i < pt->nlinks; ++i) {
      any = true;
      forwarded |= !pt->links[i].dst->resident || pt->links[i].forwarded;
    }
  }
  const uint32_t senders_in = LOAD_RELAXED(&k->senders_in);
  if (!any && senders_in) any = true;
  o->path = !any        ? RK_K2K_NONE
            : forwarded ? RK_K2K_HOST_FORWARDED
                        : RK_K2K_DIRECT;
  o->senders_in = senders_in;
  o->undelivered = LOAD_RELAXED(&k->undelivered);
  if (k->table) {
    /* Counted by the kernel (one writer; read as they are). */
    const rk_abi_k2k_t *t = k->table;
    o->sent = LOAD_RELAXED(&t->sent);
    o->refused_full = LOAD_RELAXED(&t->refused_full);
    o->refused_unconnected = LOAD_RELAXED(&t->refused_unconnected);
    o->received = LOAD_RELAXED(&t->received);
    o->received_errors = LOAD_RELAXED(&t->received_errors);
    o->last_sent_timestamp = LOAD_RELAXED(&t->last_sent_ts);
    o->last_received_timestamp = LOAD_RELAXED(&t->last_received_ts);
    /* Its inbox is its channels, one per link (read by a copy from
     * device memory). */
    for (uint32_t i = 0; i < k->nchans; ++i) {
      rk_abi_ring_t ring;
      if (k->chans[i])
        ring = k->chans[i]->ring;
      else if (rk_context_copy_to_host(k->context, &ring, k->dchans[i],
                                       sizeof ring) != RK_OK)
        continue;
      o->inbox_capacity += ring.capacity;
      o->inbox_depth += rk__ring_depth(&ring);
    }
    return;
  }
  o->sent = __atomic_load_n(&k->sent, __ATOMIC_ACQUIRE);
  o->refused_full = LOAD_RELAXED(&k->refused_full);
  o->refused_unconnected = LOAD_RELAXED(&k->refused_unconnected);
  o->received = LOAD_RELAXED(&k->received);
  o->received_errors = LOAD_RELAXED(&k->received_errors);
  o->last_sent_timestamp = LOAD_RELAXED(&k->last_sent_ts);
  o->last_received_timestamp = LOAD_RELAXED(&k->last_received_ts);
  if (k->inbox) {
    o->inbox_capacity = k->inbox->capacity;
    o->inbox_depth = rk__ring_depth(k->inbox->hdr);
  }
}

/* ---- Public API ---------------------------------------------------------- */

rk_status_t rk_actor_port(const rk_actor_t *actor, const char *name,
                          uint32_t *out_port) {
  if (!actor || !name || !out_port)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_port: actor, name and out_port are required");
  if (rk__actor_remote(actor)) return rk__proxy_refuse(actor, "actor_port");
  const rk__k2k_t *k = rk__actor_k2k(actor);
  char known[256] = "";
  size_t used = 0;
  for (uint32_t p = 0; k && p < k->nports; ++p) {
    const char *pn = k->ports[p].name;
    if (!pn[0]) continue;
    if (strcmp(pn, name) == 0) {
      *out_port = p;
      return RK_OK;
    }
    int w = snprintf(known + used, sizeof known - used, "%s%s = %u",
                     used ? ", " : "", pn, (unsigned)p);
    if (w > 0 && (size_t)w < sizeof known - used) used += (size_t)w;
  }
  return rk__fail(RK_ERR_NOT_FOUND,
                  "actor_port: handler '%s' has no port named '%s' (%s%s)",
                  rk__actor_handler_name(actor), name,
                  used ? "named ports: " : "",
                  used ? known
                       : "none is named: rk_send names a port by a "
                         "#define");
}

/* Gives the shares of removed links back: the links left are numbered
 * 0 .. n-1 and each gets capacity / n. The caller holds d and every
 * sender of d quiet (host threads all: no cluster ingress, no GPU
 * kernel's forwarder), with d's inbox empty; a link's count of messages
 * done starts where its sender's count of messages sent is. */
static void inbox_compact(rk__k2k_t *d) {
  inbox_t *b = d->inbox;
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->senders_in; ++i) {
    rk__k2k_t *e = d->senders[i];
    bool seen_before = false; /* a sender with several links into d */
    for (uint32_t j = 0; j < i && !seen_before; ++j)
      seen_before = d->senders[j] == e;
    if (seen_before) continue;
    for (uint32_t p = 0; p < e->nports; ++p) {
      port_t *pt = &e->ports[p];
      for (uint32_t k = 0; k < pt->nlinks; ++k) {
        link_t *l = &pt->links[k];
        if (l->dst != d) continue;
        l->index = n;
        l->seen = l->sent;
        b->consumed[(size_t)n * kCounterStride] = l->sent;
        n++;
      }
    }
  }
  b->links = n;
  b->quota = n ? b->capacity / n : 0;
}

/* The actors held quiet while a link is added (connect_held). */
typedef struct held {
  rk_actor_t **a;
  uint32_t n, cap;
} held_t;

static rk_status_t held_add(held_t *h, rk_actor_t *a) {
  for (uint32_t i = 0; i < h->n; ++i)
    if (h->a[i] == a) return RK_OK;
  if (h->n == h->cap) {
    const uint32_t cap = h->cap ? 2 * h->cap : 8;
    rk_actor_t **n = realloc(h->a, cap * sizeof *n);
    if (!n) return rk__fail(RK_ERR_OUT_OF_MEMORY, "actor_connect: senders");
    h->a = n;
    h->cap = cap;
  }
  h->a[h->n++] = a;
  return RK_OK;
}

static int cmp_addr(const void *x, const void *y) {
  const uintptr_t a = (uintptr_t) * (rk_actor_t *const *)x;
  const uintptr_t b = (uintptr_t) * (rk_actor_t *const *)y;
  return a < b ? -1 : a > b;
}

/* Who must be quiet while a link into dk is added: both ends and, for a
 * receiver with an inbox (whose links share it: capacity / links each),
 * every actor already sending to it, whose credit changes. Refuses what
 * cannot be held still: a sender ACTIVE, a GPU kernel or the cluster's
 * ingress writing into a receiver that has run. */
static rk_status_t connect_who(held_t *h, rk_actor_t *src, rk_actor_t *dst,
                               rk__k2k_t *dk, const char *dn, bool *all_held) {
  /* No src: a sender with no actor (a cluster's ingress), not fed yet. */
  if (src) RK_RETURN_IF_ERROR(held_add(h, src));
  RK_RETURN_IF_ERROR(held_add(h, dst));
  *all_held = false;
  if (dk->gpu_resident) return RK_OK; /* every link a channel of its own */
  const bool dst_ran = rk_actor_state(dst) != RK_ACTOR_LAUNCHED;
  *all_held = true;
  for (uint32_t i = 0; i < dk->senders_in; ++i) {
    const rk__k2k_t *e = dk->senders[i];
    if (!e->owner || e->gpu_resident) *all_held = false;
    if (!e->owner) {
      if (!dst_ran) continue;
      return rk__fail(RK_ERR_INVALID_STATE,
                      "actor_connect: '%s' takes messages from remote actors "
                      "(it is exported to a cluster), whose sends cannot be "
                      "held while it is wired: wire it before its first "
                      "activation",
                      dn);
    }
    if (e->owner == src || e->owner == dst) continue;
    const char *en = rk__actor_handler_name(e->owner);
    const rk_actor_state_t st = rk_actor_state(e->owner);
    if (e->gpu_resident && st != RK_ACTOR_LAUNCHED)
      return rk__fail(RK_ERR_UNIMPLEMENTED,
                      "actor_connect: '%s' takes messages from '%s', a "
                      "resident GPU kernel that has run (the host forwards "
                      "them): a new sender into '%s' is not built then",
                      dn, en, dn);
    if (st != RK_ACTOR_LAUNCHED && st != RK_ACTOR_DEACTIVATED &&
        st != RK_ACTOR_TERMINATED)
      return rk__fail(RK_ERR_INVALID_STATE,
                      "actor_connect: '%s' takes messages from '%s', which is "
                      "%s: deactivate it too while a sender is added (its "
                      "share of the inbox changes)",
                      dn, en, rk_actor_state_name(st));
    RK_RETURN_IF_ERROR(held_add(h, e->owner));
  }
  return RK_OK;
}

/* rk_actor_connect with g_wiring held (docs/actors.md, "Wiring a running
 * system"): every actor of connect_who held quiet (rk__actor_quiet_begin:
 * launched, deactivated or, for other senders, terminated; no handler
 * running; ctl_lock taken in address order), and the receiver's inbox
 * empty, so that no link has more messages in it than its new share. */
static rk_status_t connect_held(rk_actor_t *src, rk__k2k_t *sk, const char *sn,
                                uint32_t port, rk_actor_t *dst, rk__k2k_t *dk,
                                const char *dn, bool running) {
  if (running && (sk->gpu_resident || dk->gpu_resident))
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "actor_connect: '%s' is resident on a GPU, whose kernel "
                    "reads its wiring once: wiring it after activation is not "
                    "built (connect before activating)",
                    sk->gpu_resident ? sn : dn);
  held_t h = {0};
  bool all_held = false;
  rk_status_t s = connect_who(&h, src, dst, dk, dn, &all_held);
  if (s != RK_OK) {
    free(h.a);
    return s;
  }
  qsort(h.a, h.n, sizeof h.a[0], cmp_addr);
  uint32_t n = 0;
  while (n < h.n && s == RK_OK) {
    rk_actor_t *a = h.a[n];
    s = rk__actor_quiet_begin(a, a != src && a != dst);
    if (s == RK_OK) n++;
  }
  if (s == RK_OK) {
    const uint64_t left = dk->inbox ? rk__ring_depth(dk->inbox->hdr) : 0;
    if (left != 0)
      s = rk__fail(RK_ERR_INVALID_STATE,
                   "actor_connect: '%s' has %llu message%s in its inbox; a "
                   "new sender is wired into an empty one (activate it to "
                   "take them first)",
                   dn, (unsigned long long)left, left == 1 ? "" : "s");
    else {
      if (all_held && dk->inbox && dk->inbox->links > dk->senders_in)
        inbox_compact(dk);
      s = link_add(sk, sn, port, dk, dn);
    }
  }
  while (n > 0) rk__actor_quiet_end(h.a[--n]);
  free(h.a);
  return s;
}

rk_status_t rk_actor_connect(rk_actor_t *src, uint32_t port, rk_actor_t *dst) {
  if (!src || !dst)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_connect: src and dst are required");
  if (rk__actor_remote(src)) return rk__proxy_refuse(src, "actor_connect");
  /* A port to an actor in another process: through the cluster. */
  if (rk__actor_remote(dst))
    return rk_cluster_connect(src, port, rk__actor_remote(dst));
  const char *sn = rk__actor_handler_name(src);
  const char *dn = rk__actor_handler_name(dst);
  rk_actor_t *both[2] = {src, dst};
  bool running = false; /* either was activated before */
  for (int i = 0; i < 2; ++i) {
    const rk_actor_t *a = both[i];
    const char *n = i ? dn : sn;
    if (rk__actor_mode(a) != RK_ACTOR_PERSISTENT)
      return rk__fail(RK_ERR_INVALID_STATE,
                      "actor_connect: '%s' is in traditional mode; actors "
                      "that talk to actors are persistent",
                      n);
    rk_actor_state_t st = rk_actor_state(a);
    if (st == RK_ACTOR_DEACTIVATED) {
      running = true;
    } else if (st != RK_ACTOR_LAUNCHED) {
      return rk__fail(RK_ERR_INVALID_STATE,
                      "actor_connect: '%s' is %s; connect actors before "
                      "activating them (launch with auto_activate = false), "
                      "or deactivate them first (rk_actor_deactivate)",
                      n, rk_actor_state_name(st));
    }
  }
  pthread_mutex_lock(&g_wiring);
  const rk_status_t s = connect_held(src, rk__actor_k2k(src), sn, port, dst,
                                     rk__actor_k2k(dst), dn, running);
  pthread_mutex_unlock(&g_wiring);
  return s;
}

/* Removes link (src, port, dst); src's device side runs no handler (the
 * caller holds it quiet, and g_wiring). The receiver's inbox keeps the
 * link's share of it (nothing grows under a running sender) and the
 * messages already there. */
static rk_status_t disconnect(rk__k2k_t *src, const char *sn, uint32_t port,
                              rk__k2k_t *dst, const char *dn) {
  if (port >= RK__K2K_MAX_PORTS || port >= src->nports ||
      !src->ports[port].size)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_disconnect: '%s' never sends to port %u", sn, port);
  port_t *pt = &src->ports[port];
  uint32_t i = 0;
  while (i < pt->nlinks && pt->links[i].dst != dst) ++i;
  if (i == pt->nlinks)
    return rk__fail(RK_ERR_NOT_FOUND,
                    "actor_disconnect: port %u of '%s' is not connected to "
                    "'%s'",
                    port, sn, dn);
  memmove(&pt->links[i], &pt->links[i + 1],
          (size_t)(pt->nlinks - i - 1) * sizeof pt->links[0]);
  pt->nlinks--;
  senders_remove(dst, src);
  /* The receiver's actor holds a reference of its own: not the last. */
  __atomic_sub_fetch(&dst->refs, 1u, __ATOMIC_ACQ_REL);
  return RK_OK;
}

rk_status_t rk_actor_disconnect(rk_actor_t *src, uint32_t port,
                                rk_actor_t *dst) {
  if (!src || !dst)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_disconnect: src and dst are required");
  if (rk__actor_remote(src) || rk__actor_remote(dst))
    return rk__proxy_refuse(rk__actor_remote(src) ? src : dst,
                            "actor_disconnect");
  const char *sn = rk__actor_handler_name(src);
  const char *dn = rk__actor_handler_name(dst);
  if (rk__actor_mode(src) != RK_ACTOR_PERSISTENT ||
      rk__actor_mode(dst) != RK_ACTOR_PERSISTENT)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "actor_disconnect: '%s' is in traditional mode and has no "
                    "links",
                    rk__actor_mode(src) != RK_ACTOR_PERSISTENT ? sn : dn);
  rk__k2k_t *sk = rk__actor_k2k(src), *dk = rk__actor_k2k(dst);
  if (sk->gpu_resident || dk->gpu_resident)
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "actor_disconnect: '%s' is resident on a GPU, whose "
                    "kernel reads its wiring once: unwiring it is not built",
                    sk->gpu_resident ? sn : dn);
  pthread_mutex_lock(&g_wiring);
  rk_status_t s = rk__actor_quiet_begin(src, false);
  if (s == RK_OK) {
    s = disconnect(sk, sn, port, dk, dn);
    rk__actor_quiet_end(src);
  }
  pthread_mutex_unlock(&g_wiring);
  return s;
}

rk_status_t rk__k2k_bridge_create(uint32_t in_size, uint32_t capacity,
                                  rk__k2k_t **out) {
  rk__k2k_t *k =
      aligned_alloc(RK_ABI_LINE, sizeof(rk__k2k_t) + RK_ABI_LINE -
                                     sizeof(rk__k2k_t) % RK_ABI_LINE);
  if (!k) return rk__fail(RK_ERR_OUT_OF_MEMORY, "K2K bridge");
  memset(k, 0, sizeof *k);
  k->refs = 1;
  k->in_size = in_size;
  k->inbox_capacity = capacity;
  k->bridge = true;
  *out = k;
  return RK_OK;
}

rk_status_t rk__k2k_bridge_connect(rk_actor_t *src, uint32_t port,
                                   rk__k2k_t *bridge, const char *dst_name,
                                   rk__k2k_t *const *same, uint32_t nsame) {
  if (!src)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cluster_connect: src is NULL");
  const char *sn = rk__actor_handler_name(src);
  if (rk__actor_mode(src) != RK_ACTOR_PERSISTENT)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "cluster_connect: '%s' is in traditional mode; actors "
                    "that talk to actors are persistent",
                    sn);
  const rk_actor_state_t st = rk_actor_state(src);
  if (st != RK_ACTOR_LAUNCHED && st != RK_ACTOR_DEACTIVATED)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "cluster_connect: '%s' is %s; connect it before "
                    "activating it (launch with auto_activate = false), or "
                    "deactivate it first (rk_actor_deactivate)",
                    sn, rk_actor_state_name(st));
  rk__k2k_t *sk = rk__actor_k2k(src);
  if (st == RK_ACTOR_DEACTIVATED && sk->gpu_resident)
    return rk__fail(RK_ERR_UNIMPLEMENTED,
                    "cluster_connect: '%s' is resident on a GPU, whose kernel "
                    "reads its wiring once: wiring it after activation is not "
                    "built (connect before activating)",
                    sn);
  /* The bridge is a receiver of its own: only the sender is held (its
   * handler runs no send while its port gets the link). */
  pthread_mutex_lock(&g_wiring);
  rk_status_t s = RK_OK;
  /* One link per (sender, remote receiver), as link_add keeps one per
   * local pair: the remote actor's other bridges count as that receiver. */
  for (uint32_t b = 0; b < nsame && s == RK_OK; ++b)
    for (uint32_t q = 0; q < sk->nports && s == RK_OK; ++q)
      for (uint32_t i = 0; i < sk->ports[q].nlinks && s == RK_OK; ++i)
        if (sk->ports[q].links[i].dst == same[b])
          s = q == port ? rk__fail(RK_ERR_INVALID_ARGUMENT,
                                   "cluster_connect: port %u of '%s' is "
                                   "already connected to '%s'",
                                   port, sn, dst_name)
                        : rk__fail(RK_ERR_INVALID_ARGUMENT,
                                   "cluster_connect: '%s' already sends to "
                                   "'%s' on port %u; one sender reaches one "
                                   "receiver through one port (that keeps "
                                   "its messages in order): send them all on "
                                   "port %u",
                                   sn, dst_name, q, q);
  if (s == RK_OK) s = rk__actor_quiet_begin(src, false);
  if (s == RK_OK) {
    s = link_add(sk, sn, port, bridge, dst_name);
    rk__actor_quiet_end(src);
  }
  pthread_mutex_unlock(&g_wiring);
  return s;
}

rk_status_t rk_actor_k2k_stats(rk_actor_t *actor,
                               rk_actor_k2k_stats_t *out_stats) {
  if (!actor || !out_stats)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "actor_k2k_stats: actor and out_stats are required");
  if (rk__actor_remote(actor))
    return rk__proxy_refuse(actor, "actor_k2k_stats");
  rk__k2k_stats(rk__actor_k2k(actor), out_stats);
  return RK_OK;
}

/* ---- Ingress (the cluster's remote ports, arriving) -----------------------
 */

rk_status_t rk__k2k_ingress_create(rk_actor_t *dst, rk__k2k_t **out) {
  *out = NULL;
  if (!dst)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "K2K ingress: dst is NULL");
  const char *dn = rk__actor_handler_name(dst);
  if (rk__actor_mode(dst) != RK_ACTOR_PERSISTENT)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "K2K ingress: '%s' is in traditional mode", dn);
  const rk_actor_state_t st = rk_actor_state(dst);
  if (st != RK_ACTOR_LAUNCHED && st != RK_ACTOR_DEACTIVATED)
    return rk__fail(RK_ERR_INVALID_STATE,
                    "K2K ingress: '%s' is %s; wire it while it is not active",
                    dn, rk_actor_state_name(st));
  rk__k2k_t *d = rk__actor_k2k(dst);
  if (!d) return rk__fail(RK_ERR_INVALID_STATE, "K2K ingress: no K2K state");
  rk__k2k_t *k =
      aligned_alloc(RK_ABI_LINE, sizeof(rk__k2k_t) + RK_ABI_LINE -
                                     sizeof(rk__k2k_t) % RK_ABI_LINE);
  if (!k) return rk__fail(RK_ERR_OUT_OF_MEMORY, "K2K ingress");
  memset(k, 0, sizeof *k);
  k->refs = 1;
  k->nports = 1;
  port_t *pt = &k->ports[0];
  pt->size = d->in_size;
  memcpy(pt->type, d->in_type, sizeof pt->type);
  pt->outbox = calloc(RK__K2K_OUTBOX, pt->size ? pt->size : 1);
  k->ctl[2] = kRefusalUnconnected;
  if (!pt->outbox) {
    k2k_free(k);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "K2K ingress");
  }
  /* A new sender into dst's inbox, as rk_actor_connect adds one: dst and
   * its other senders held quiet, the inbox empty (the shares change).
   * The ingress itself is not fed yet. */
  pthread_mutex_lock(&g_wiring);
  const rk_status_t s = connect_held(NULL, k, "remote ports", 0, dst, d, dn,
                                     st == RK_ACTOR_DEACTIVATED);
  pthread_mutex_unlock(&g_wiring);
  if (s != RK_OK) {
    rk__k2k_release(k);
    return s;
  }
  *out = k;
  return RK_OK;
}

uint32_t rk__k2k_ingress_send(rk__k2k_t *k, const void *msg, uint64_t stamp,
                              bool *out_gone) {
  rk__k2k_prepare(k, 1);
  uint32_t *w = k->ctl;
  *out_gone = w[0] == 0 && w[2] == kRefusalUnconnected;
  if (!w[0]) return 0;
  memcpy(k->ports[0].outbox, msg, k->ports[0].size);
  w[1] = 1;
  rk__k2k_deliver(k, stamp);
  return 1;
}
