/* The persistent actor kernel for CUDA (rk_transpile_options_t's
 * persistent_actors): for each handler h, a kernel rk_actor_<h> that stays
 * resident and serves the rings of abi/actor_abi.h, behaving as the host
 * thread loop of hal/actor_loop.c does (responses in request order, the
 * counters, run_state, the clock, termination that answers what is queued).
 *
 * The protocol lives once per module, in a prelude of device functions
 * (rk_pa_*: "persistent actor"); each handler adds a thin kernel that calls
 * them around its rk_handle_<h>. Every offset the device code uses is
 * printed here from the C structs with offsetof(), so the CUDA text cannot
 * disagree with the ABI header.
 *
 * Generated names start with rk_ (which user names cannot), and the helpers
 * with rk_pa_, which no generated kernel name (rk_actor_<h>, rk_batch_<h>)
 * or other generated name of the C-family printer starts with.
 */
#include <stddef.h>

#include "abi/actor_abi.h"
#include "codegen/emit.h"
#include "rk/actor_k2k.h"

/* The ABI's numbers as CUDA constants. */
static void abi_constants(rk__strbuf_t *out) {
  static const struct {
    const char *name;
    size_t value;
  } kConsts[] = {
      {"rk_pa_ring_capacity", offsetof(rk_abi_ring_t, capacity)},
      {"rk_pa_ring_slot_size", offsetof(rk_abi_ring_t, slot_size)},
      {"rk_pa_ring_tail", offsetof(rk_abi_ring_t, tail)},
      {"rk_pa_ring_head", offsetof(rk_abi_ring_t, head)},
      {"rk_pa_ctl_out_payload", offsetof(rk_abi_control_t, out_payload)},
      {"rk_pa_ctl_active", offsetof(rk_abi_control_t, active)},
      {"rk_pa_ctl_terminate", offsetof(rk_abi_control_t, terminate)},
      {"rk_pa_ctl_run_state", offsetof(rk_abi_control_t, run_state)},
      {"rk_pa_ctl_terminated", offsetof(rk_abi_control_t, terminated)},
      {"rk_pa_ctl_processed", offsetof(rk_abi_control_t, processed)},
      {"rk_pa_ctl_errors", offsetof(rk_abi_control_t, errors)},
      {"rk_pa_ctl_last_error", offsetof(rk_abi_control_t, last_error)},
      {"rk_pa_ctl_clock", offsetof(rk_abi_control_t, clock)},
      {"rk_pa_msg_header", RK_ABI_MSG_HEADER},
      {"rk_pa_msg_response", RK_ABI_MSG_RESPONSE},
      {"rk_pa_msg_ok", RK_ABI_MSG_OK},
      {"rk_pa_msg_handler_error", RK_ABI_MSG_HANDLER_ERROR},
      {"rk_pa_run_idle", RK_ABI_RUN_IDLE},
      {"rk_pa_run_active", RK_ABI_RUN_ACTIVE},
      {"rk_pa_run_stopped", RK_ABI_RUN_STOPPED},
      {"rk_pa_terminate_park", RK_ABI_TERMINATE_PARK},
      {"rk_pa_line", RK_ABI_LINE},
      {"rk_pa_msg_k2k", RK_ABI_MSG_K2K},
      {"rk_pa_send_full", RK_SEND_FULL},
      {"rk_pa_send_unconnected", RK_SEND_UNCONNECTED},
      {"rk_pa_chan_open", offsetof(rk_abi_chan_t, open)},
      {"rk_pa_chan_link", offsetof(rk_abi_chan_t, link)},
      {"rk_pa_chan_slots", sizeof(rk_abi_chan_t)},
      {"rk_pa_k2k_nin", offsetof(rk_abi_k2k_t, nin)},
      {"rk_pa_k2k_nout", offsetof(rk_abi_k2k_t, nout)},
      {"rk_pa_k2k_in", offsetof(rk_abi_k2k_t, in)},
      {"rk_pa_k2k_out", offsetof(rk_abi_k2k_t, out)},
      {"rk_pa_k2k_sent", offsetof(rk_abi_k2k_t, sent)},
      {"rk_pa_k2k_refused_full", offsetof(rk_abi_k2k_t, refused_full)},
      {"rk_pa_k2k_refused_unconnected",
       offsetof(rk_abi_k2k_t, refused_unconnected)},
      {"rk_pa_k2k_received", offsetof(rk_abi_k2k_t, received)},
      {"rk_pa_k2k_received_errors", offsetof(rk_abi_k2k_t, received_errors)},
      {"rk_pa_k2k_last_sent_ts", offsetof(rk_abi_k2k_t, last_sent_ts)},
      {"rk_pa_k2k_last_received_ts", offsetof(rk_abi_k2k_t, last_received_ts)},
      {"rk_pa_k2k_max_ports", RK_ABI_K2K_MAX_PORTS},
      {"rk_pa_k2k_max_out", RK_ABI_K2K_MAX_OUT},
      {"rk_pa_k2k_outbox", RK_ABI_K2K_OUTBOX},
      {"rk_pa_k2k_max_in", RK_ABI_K2K_MAX_IN},
      {"rk_pa_k2k_view_size", RK_ABI_K2K_VIEW},
      {"rk_pa_k2k_scratch", RK_ABI_K2K_SCRATCH},
      {"rk_pa_sched_clock", RK_ABI_SCHED_CLOCK},
      {"rk_pa_sched_processed", RK_ABI_SCHED_PROCESSED},
      {"rk_pa_sched_errors", RK_ABI_SCHED_ERRORS},
  };
  rk__strbuf_printf(out,
                    "\n/* abi/actor_abi.h, RK_ABI_VERSION %u: byte offsets in "
                    "the ring header and\n * the control block, message and "
                    "run states. */\n",
                    RK_ABI_VERSION);
  for (size_t i = 0; i < sizeof kConsts / sizeof kConsts[0]; ++i)
    rk__strbuf_printf(out, "static constexpr unsigned int %s = %zuu;\n",
                      kConsts[i].name, kConsts[i].value);

  /* rk_pa_next() reads active and terminate with one 64-bit load. */
  _Static_assert(offsetof(rk_abi_control_t, terminate) ==
                         offsetof(rk_abi_control_t, active) + 4 &&
                     offsetof(rk_abi_control_t, active) % 8 == 0,
                 "control flags share one aligned 64-bit word");
  rk__strbuf_puts(out,
                  "static_assert(rk_pa_ctl_terminate == rk_pa_ctl_active + 4u "
                  "&&\n"
                  "              rk_pa_ctl_active % 8u == 0u,\n"
                  "              \"active and terminate: one 64-bit word, "
                  "active low\");\n");
  /* The slot header as a CUDA struct. NVRTC has no offsetof, so the
   * generated code can pin only its size and alignment; the fields are
   * declared in the ABI's order with the ABI's sizes, each at its natural
   * alignment, which gives the offsets asserted here. */
  _Static_assert(offsetof(rk_abi_msg_t, correlation_id) == 0 &&
                     offsetof(rk_abi_msg_t, timestamp) == 8 &&
                     offsetof(rk_abi_msg_t, type) == 16 &&
                     offsetof(rk_abi_msg_t, status) == 18 &&
                     offsetof(rk_abi_msg_t, size) == 20 &&
                     offsetof(rk_abi_msg_t, seq) == 24 &&
                     offsetof(rk_abi_msg_t, code) == 28,
                 "rk_pa_msg_t below follows the message header");
  rk__strbuf_puts(out,
                  "\ntypedef struct rk_pa_msg {\n"
                  "  unsigned long long correlation_id;\n"
                  "  unsigned long long timestamp;\n"
                  "  unsigned short type;\n"
                  "  unsigned short status;\n"
                  "  unsigned int size;\n"
                  "  unsigned int seq;\n"
                  "  int code;\n"
                  "} rk_pa_msg_t;\n");
  rk__strbuf_printf(out,
                    "static_assert(sizeof(rk_pa_msg_t) == %zu, \"rk message "
                    "header\");\n",
                    sizeof(rk_abi_msg_t));
  rk__strbuf_printf(out,
                    "static_assert(alignof(rk_pa_msg_t) == %zu, \"rk message "
                    "header\");\n",
                    _Alignof(rk_abi_msg_t));
}

/* The device side of the protocol, independent of the handler. */
static const char kPreludeCode[] =
    "\n"
    "/* The protocol needs sm_70 (acquire/release at system scope,\n"
    " * __nanosleep); on older devices the kernels only trap, so that a "
    "module\n"
    " * with handlers still builds there for its other entry points. */\n"
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700\n"
    "#define RK_PA_SUPPORTED 1\n"
    "\n"
    "/* Shared with the host (mapped host memory): system-scope acquire and\n"
    " * release (sm_70+). */\n"
    "static __device__ inline unsigned long long rk_pa_load_sys_u64(\n"
    "    const unsigned char *p) {\n"
    "  unsigned long long v;\n"
    "  asm volatile(\"ld.acquire.sys.global.u64 %0, [%1];\"\n"
    "               : \"=l\"(v) : \"l\"(p) : \"memory\");\n"
    "  return v;\n"
    "}\n"
    "static __device__ inline unsigned int rk_pa_load_sys_u32(\n"
    "    const unsigned char *p) {\n"
    "  unsigned int v;\n"
    "  asm volatile(\"ld.acquire.sys.global.u32 %0, [%1];\"\n"
    "               : \"=r\"(v) : \"l\"(p) : \"memory\");\n"
    "  return v;\n"
    "}\n"
    "static __device__ inline void rk_pa_store_sys_u32(unsigned char *p,\n"
    "                                                  unsigned int v) {\n"
    "  asm volatile(\"st.release.sys.global.u32 [%0], %1;\"\n"
    "               : : \"l\"(p), \"r\"(v) : \"memory\");\n"
    "}\n"
    "static __device__ inline void rk_pa_store_sys_u64(unsigned char *p,\n"
    "                                                  unsigned long long v) "
    "{\n"
    "  asm volatile(\"st.release.sys.global.u64 [%0], %1;\"\n"
    "               : : \"l\"(p), \"l\"(v) : \"memory\");\n"
    "}\n"
    "/* Two words of the host's memory read together: both loads leave"
    " before\n"
    " * either is waited for (one trip over the bus, not two), and the"
    " fence\n"
    " * after them makes both acquire loads. */\n"
    "static __device__ inline void rk_pa_load2_sys_u64(const unsigned char"
    " *p,\n"
    "                                                  const unsigned char"
    " *q,\n"
    "                                                  unsigned long long"
    " *a,\n"
    "                                                  unsigned long long"
    " *b) {\n"
    "  unsigned long long x, y;\n"
    "  /* Three statements: no output can share a register with the\n"
    "   * other load's address. */\n"
    "  asm volatile(\"ld.relaxed.sys.global.u64 %0, [%1];\"\n"
    "               : \"=l\"(x) : \"l\"(p) : \"memory\");\n"
    "  asm volatile(\"ld.relaxed.sys.global.u64 %0, [%1];\"\n"
    "               : \"=l\"(y) : \"l\"(q) : \"memory\");\n"
    "  asm volatile(\"fence.acq_rel.sys;\" : : : \"memory\");\n"
    "  *a = x;\n"
    "  *b = y;\n"
    "}\n"
    "/* Shared by the blocks only (rk_sched, device memory): GPU scope. */\n"
    "static __device__ inline unsigned long long rk_pa_load_gpu(\n"
    "    const unsigned long long *p) {\n"
    "  unsigned long long v;\n"
    "  asm volatile(\"ld.acquire.gpu.global.u64 %0, [%1];\"\n"
    "               : \"=l\"(v) : \"l\"(p) : \"memory\");\n"
    "  return v;\n"
    "}\n"
    "static __device__ inline void rk_pa_store_gpu(unsigned long long *p,\n"
    "                                              unsigned long long v) {\n"
    "  asm volatile(\"st.release.gpu.global.u64 [%0], %1;\"\n"
    "               : : \"l\"(p), \"l\"(v) : \"memory\");\n"
    "}\n"
    "\n"
    "/* A channel as its one user on this side sees it, kept in device memory\n"
    " * (rk_k2k_mem) so that only the other side's index and the slots cross "
    "the\n"
    " * bus: its address, size and slot size, and this side's own index (the\n"
    " * head of a channel in, the tail of a channel out). */\n"
    "typedef struct rk_pa_view {\n"
    "  unsigned char *chan;\n"
    "  unsigned int mask, slot_size;\n"
    "  unsigned long long own;\n"
    "  unsigned int link; /* the channel's link number (read once) */\n"
    "  unsigned int pad;\n"
    "} rk_pa_view_t;\n"
    "static_assert(sizeof(rk_pa_view_t) == rk_pa_k2k_view_size, \"rk view "
    "size\");\n"
    "\n"
    "/* One block's view of an actor; only thread (0, 0, 0) of a block has "
    "one.\n"
    " * rk_sched (set before launch): [0] the next request index to claim,\n"
    " * [1] the next to publish (both the input ring's head: 0 at the first\n"
    " * launch, where the last kernel stopped after a restart or a park), "
    "[2]\n"
    " * blocks that have left their loop (0), [3] spare, and [4..6] the\n"
    " * control block's clock, processed and errors as the host left"
    " them:\n"
    " * the kernel reads them from here (device memory) and writes both,"
    " so\n"
    " * that answering a request reads nothing back over the bus. Request"
    " i is\n"
    " * answered by response i: the two rings move together. */\n"
    "typedef struct rk_pa {\n"
    "  unsigned char *control, *in, *out, *in_slots, *out_slots;\n"
    "  unsigned long long *sched;\n"
    "  unsigned int in_mask, in_slot_size; /* set before launch: read once */\n"
    "  unsigned int out_capacity, out_slot_size, out_payload;\n"
    "  unsigned long long out_head; /* the host's last seen output head */\n"
    "  unsigned int backoff;   /* ns of the next sleep, 32 .. 1024 */\n"
    "  unsigned int run_state; /* last written; block (0, 0, 0) only */\n"
    "  bool leader;            /* block (0, 0, 0): it writes run_state */\n"
    "  bool parked;            /* left for RK_ABI_TERMINATE_PARK */\n"
    "  unsigned long long index; /* the claimed request */\n"
    "  unsigned char *req, *resp; /* its slot and its response's slot */\n"
    "  /* The header of the message in hand (rk_pa_take): its id and"
    " stamp. */\n"
    "  unsigned long long req_id, req_stamp;\n"
    "  /* The handler's answer: a request's response payload, or for an"
    " inbox\n"
    "   * message the scratch answer (its message: rk_pa_take). */\n"
    "  unsigned char *out_msg;\n"
    "  /* K2K (abi/actor_abi.h): the wiring and counters (mapped host memory)\n"
    "   * and the ports' words, scratch and buffers (device memory). */\n"
    "  unsigned char *k2k, *kmem;\n"
    "  bool k2k_read;    /* the wiring is read (at the first activation) */\n"
    "  bool k2k_on;      /* wired: block (0, 0, 0) alone serves */\n"
    "  bool inbox_turn;  /* the inbox goes before the requests next time */\n"
    "  unsigned int nin, next_in; /* channels in; where the next look starts "
    "*/\n"
    "  unsigned int nout[rk_pa_k2k_max_ports]; /* links of each port */\n"
    "  rk_pa_view_t *views; /* in rk_k2k_mem: channels in, then out */\n"
    "  rk_pa_view_t *chan;  /* the channel of the inbox message in hand */\n"
    "  /* The K2K counters as this kernel last wrote them to the table:"
    " read\n"
    "   * once with the wiring, then only written (no trip over the bus"
    " to\n"
    "   * read them back); the one block that serves a wired actor keeps"
    " them. */\n"
    "  unsigned long long k_sent, k_refused_full, k_refused_unconnected;\n"
    "  unsigned long long k_received, k_received_errors;\n"
    "} rk_pa_t;\n"
    "\n"
    "/* false for every thread but (0, 0, 0) of its block: handlers are\n"
    " * single-threaded, so the other threads leave at once. */\n"
    "static __device__ bool rk_pa_begin(rk_pa_t *a, unsigned char *control,\n"
    "                                   unsigned char *in, unsigned char "
    "*out,\n"
    "                                   unsigned char *in_slots,\n"
    "                                   unsigned char *out_slots,\n"
    "                                   unsigned long long *sched,\n"
    "                                   unsigned char *k2k, unsigned char "
    "*kmem) {\n"
    "  if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return "
    "false;\n"
    "  a->control = control;\n"
    "  a->in = in;\n"
    "  a->out = out;\n"
    "  a->in_slots = in_slots;\n"
    "  a->out_slots = out_slots;\n"
    "  a->sched = sched;\n"
    "  a->in_mask = *(const unsigned int *)(in + rk_pa_ring_capacity) - 1u;\n"
    "  a->in_slot_size = *(const unsigned int *)(in + rk_pa_ring_slot_size);\n"
    "  a->out_capacity = *(const unsigned int *)(out + rk_pa_ring_capacity);\n"
    "  a->out_slot_size = *(const unsigned int *)(out + "
    "rk_pa_ring_slot_size);\n"
    "  a->out_payload = *(const unsigned int *)(control + "
    "rk_pa_ctl_out_payload);\n"
    "  a->out_head = 0;\n"
    "  a->backoff = 32u;\n"
    "  a->run_state = ~0u;\n"
    "  a->leader = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;\n"
    "  a->parked = false;\n"
    "  a->index = 0;\n"
    "  a->req = a->resp = a->out_msg = nullptr;\n"
    "  a->req_id = a->req_stamp = 0;\n"
    "  a->k_sent = a->k_refused_full = a->k_refused_unconnected = 0;\n"
    "  a->k_received = a->k_received_errors = 0;\n"
    "  a->k2k = k2k;\n"
    "  a->kmem = kmem;\n"
    "  a->k2k_read = a->k2k_on = false;\n"
    "  a->inbox_turn = true;\n"
    "  a->nin = a->next_in = 0u;\n"
    "  for (unsigned int p = 0; p < rk_pa_k2k_max_ports; ++p) a->nout[p] = "
    "0u;\n"
    "  a->views = (rk_pa_view_t *)(kmem + rk_pa_line);\n"
    "  a->chan = nullptr;\n"
    "  return true;\n"
    "}\n"
    "\n"
    "/* Sleeps, twice as long as last time up to about a microsecond. */\n"
    "static __device__ void rk_pa_backoff(rk_pa_t *a) {\n"
    "  __nanosleep(a->backoff);\n"
    "  if (a->backoff < 1024u) a->backoff *= 2u;\n"
    "}\n"
    "\n"
    "/* Reads the K2K wiring, which the host wrote before it activated the\n"
    " * actor (seen here after the acquire of `active` or `terminate`). A "
    "wired\n"
    " * actor runs on block (0, 0, 0) alone: its inbox channels have one\n"
    " * consumer, and its ports' channels one producer. */\n"
    "/* The view of link l of port p (the channels in come first). */\n"
    "static __device__ rk_pa_view_t *rk_pa_out_view(const rk_pa_t *a,\n"
    "                                               unsigned int p,\n"
    "                                               unsigned int l) {\n"
    "  return &a->views[rk_pa_k2k_max_in + p * rk_pa_k2k_max_out + l];\n"
    "}\n"
    "\n"
    "/* The view of channel `ch` (a table entry), whose own index is at `own`. "
    "*/\n"
    "static __device__ void rk_pa_view_init(rk_pa_view_t *v, unsigned char "
    "*k2k,\n"
    "                                       unsigned int entry, unsigned int "
    "own) {\n"
    "  unsigned char *ch = (unsigned char *)*(volatile const unsigned long "
    "long *)(\n"
    "      k2k + entry);\n"
    "  v->chan = ch;\n"
    "  v->mask = *(volatile const unsigned int *)(ch + rk_pa_ring_capacity) - "
    "1u;\n"
    "  v->slot_size = *(volatile const unsigned int *)(ch + "
    "rk_pa_ring_slot_size);\n"
    "  v->own = *(volatile const unsigned long long *)(ch + own);\n"
    "  v->link = *(volatile const unsigned int *)(ch + rk_pa_chan_link);\n"
    "  v->pad = 0u;\n"
    "}\n"
    "\n"
    "static __device__ void rk_pa_k2k_read(rk_pa_t *a) {\n"
    "  a->k2k_read = true;\n"
    "  if (a->k2k == nullptr) return;\n"
    "  /* The counters carry on from an earlier kernel's (a restart, a"
    " park). */\n"
    "  a->k_sent = *(volatile const unsigned long long *)(a->k2k +"
    " rk_pa_k2k_sent);\n"
    "  a->k_refused_full =\n"
    "      *(volatile const unsigned long long *)(a->k2k +"
    " rk_pa_k2k_refused_full);\n"
    "  a->k_refused_unconnected = *(volatile const unsigned long long *)(\n"
    "      a->k2k + rk_pa_k2k_refused_unconnected);\n"
    "  a->k_received =\n"
    "      *(volatile const unsigned long long *)(a->k2k +"
    " rk_pa_k2k_received);\n"
    "  a->k_received_errors = *(volatile const unsigned long long *)(\n"
    "      a->k2k + rk_pa_k2k_received_errors);\n"
    "  a->nin = *(volatile const unsigned int *)(a->k2k + rk_pa_k2k_nin);\n"
    "  unsigned int links = a->nin;\n"
    "  for (unsigned int p = 0; p < rk_pa_k2k_max_ports; ++p) {\n"
    "    a->nout[p] = *(volatile const unsigned int *)(a->k2k + rk_pa_k2k_nout "
    "+\n"
    "                                                   4u * p);\n"
    "    links += a->nout[p];\n"
    "  }\n"
    "  a->k2k_on = links != 0u;\n"
    "  /* The views, from the table and the channels (whose indices carry on\n"
    "   * from an earlier kernel's: a restart), by the one block that serves "
    "a\n"
    "   * wired actor: the others leave without touching them (one of them,\n"
    "   * late, could read an index the server has moved on from). */\n"
    "  if (!a->k2k_on || !a->leader) return;\n"
    "  for (unsigned int i = 0; i < a->nin; ++i)\n"
    "    rk_pa_view_init(&a->views[i], a->k2k, rk_pa_k2k_in + 8u * i,\n"
    "                    rk_pa_ring_head);\n"
    "  for (unsigned int p = 0; p < rk_pa_k2k_max_ports; ++p)\n"
    "    for (unsigned int l = 0; l < a->nout[p]; ++l)\n"
    "      rk_pa_view_init(rk_pa_out_view(a, p, l), a->k2k,\n"
    "                      rk_pa_k2k_out + 8u * (p * rk_pa_k2k_max_out + l),\n"
    "                      rk_pa_ring_tail);\n"
    "}\n"
    "\n"
    "static __device__ unsigned char *rk_pa_view_slot(const rk_pa_view_t *v,\n"
    "                                                 unsigned long long i) {\n"
    "  return v->chan + rk_pa_chan_slots +\n"
    "         (unsigned long long)((unsigned int)i & v->mask) * v->slot_size;\n"
    "}\n"
    "/* Counter `c` (this kernel's copy) up by n, and the table's at"
    " `off`. */\n"
    "static __device__ void rk_pa_count(rk_pa_t *a, unsigned long long"
    " *c,\n"
    "                                   unsigned int off, unsigned long"
    " long n) {\n"
    "  *c += n;\n"
    "  *(volatile unsigned long long *)(a->k2k + off) = *c;\n"
    "}\n"
    "\n"
    "/* Finds a message in the inbox channels, looking at each in turn from\n"
    " * where the last look stopped (no link starves another): true with "
    "chan,\n"
    " * and req (its slot) set. The channel's head is this block's\n"
    " * own (kept in its view); its tail is the sender's, read with acquire, "
    "so\n"
    " * the slot is written. */\n"
    "static __device__ bool rk_pa_inbox_peek(rk_pa_t *a) {\n"
    "  for (unsigned int k = 0; k < a->nin; ++k) {\n"
    "    unsigned int c = a->next_in + k;\n"
    "    if (c >= a->nin) c -= a->nin;\n"
    "    rk_pa_view_t *v = &a->views[c];\n"
    "    if (rk_pa_load_sys_u64(v->chan + rk_pa_ring_tail) == v->own) "
    "continue;\n"
    "    a->chan = v;\n"
    "    a->req = rk_pa_view_slot(v, v->own);\n"
    "    a->next_in = c + 1u == a->nin ? 0u : c + 1u;\n"
    "    return true;\n"
    "  }\n"
    "  return false;\n"
    "}\n"
    "\n"
    "/* What to do next: 1, a request claimed (index and req set); 2, an "
    "inbox\n"
    " * message found (rk_pa_inbox_peek); 0, leave: termination is asked and\n"
    " * every queued request is claimed and the inbox is empty (or this block\n"
    " * is not the one that serves a wired actor). Requests and inbox "
    "messages\n"
    " * take turns when both wait. */\n"
    "static __device__ int rk_pa_next(rk_pa_t *a) {\n"
    "  for (;;) {\n"
    "    /* active and terminate in one load (adjacent words), and the"
    " input\n"
    "     * ring's tail beside it: one trip over the bus per look. */\n"
    "    unsigned long long flags, tail;\n"
    "    rk_pa_load2_sys_u64(a->control + rk_pa_ctl_active, a->in +"
    " rk_pa_ring_tail,\n"
    "                        &flags, &tail);\n"
    "    /* Parking: leave at this request boundary, the queued requests\n"
    "     * and inbox messages stay for the relaunched kernel. */\n"
    "    if ((unsigned int)(flags >> 32) == rk_pa_terminate_park) {\n"
    "      a->parked = true;\n"
    "      return 0;\n"
    "    }\n"
    "    bool active = (unsigned int)flags != 0u;\n"
    "    bool terminate = (unsigned int)(flags >> 32) != 0u;\n"
    "    /* The host publishes its last requests before it asks to"
    " terminate:\n"
    "     * a tail read beside the request may predate them, so a"
    " terminating\n"
    "     * kernel reads it again, after the flags, and answers them all."
    " */\n"
    "    if (terminate) tail = rk_pa_load_sys_u64(a->in +"
    " rk_pa_ring_tail);\n"
    "    unsigned long long claim = *(volatile unsigned long long "
    "*)&a->sched[0];\n"
    "    bool taking = active || terminate;\n"
    "    unsigned int state = taking ? rk_pa_run_active : rk_pa_run_idle;\n"
    "    if (a->leader && state != a->run_state) {\n"
    "      a->run_state = state;\n"
    "      rk_pa_store_sys_u32(a->control + rk_pa_ctl_run_state, state);\n"
    "    }\n"
    "    if (!taking) {\n"
    "      rk_pa_backoff(a); /* inactive: requests stay queued */\n"
    "      continue;\n"
    "    }\n"
    "    if (!a->k2k_read) {\n"
    "      rk_pa_k2k_read(a);\n"
    "      if (a->k2k_on && !a->leader) return 0;\n"
    "    }\n"
    "    if (a->nin != 0u && a->inbox_turn && rk_pa_inbox_peek(a)) {\n"
    "      a->inbox_turn = false;\n"
    "      a->backoff = 32u;\n"
    "      return 2;\n"
    "    }\n"
    "    if (claim < tail) {\n"
    "      if (atomicCAS(&a->sched[0], claim, claim + 1ull) == claim) {\n"
    "        a->index = claim;\n"
    "        a->req = a->in_slots +\n"
    "                 (unsigned long long)((unsigned int)claim & a->in_mask) "
    "*\n"
    "                     a->in_slot_size;\n"
    "        a->inbox_turn = true;\n"
    "        a->backoff = 32u;\n"
    "        return 1;\n"
    "      }\n"
    "      continue; /* another block took it: look again at once */\n"
    "    }\n"
    "    if (a->nin != 0u && rk_pa_inbox_peek(a)) {\n"
    "      a->inbox_turn = false;\n"
    "      a->backoff = 32u;\n"
    "      return 2;\n"
    "    }\n"
    "    if (terminate) return 0;\n"
    "    rk_pa_backoff(a);\n"
    "  }\n"
    "}\n"
    "\n"
    "/* Waits until the claimed request is the next to publish. */\n"
    "static __device__ void rk_pa_wait_turn(rk_pa_t *a) {\n"
    "  while (rk_pa_load_gpu(&a->sched[1]) != a->index) rk_pa_backoff(a);\n"
    "  a->backoff = 32u;\n"
    "}\n"
    "\n"
    "/* Waits until the claimed request may run and sets resp: with "
    "`in_order`\n"
    " * (a handler with state: message i + 1 sees what i left; or with ports)\n"
    " * its turn first, then room for its response (the host has taken\n"
    " * response index - capacity). */\n"
    "static __device__ void rk_pa_reserve(rk_pa_t *a, bool in_order) {\n"
    "  if (in_order) rk_pa_wait_turn(a);\n"
    "  while (a->index - a->out_head >= a->out_capacity) {\n"
    "    /* Full as last seen: look at the host's head again. */\n"
    "    a->out_head = rk_pa_load_sys_u64(a->out + rk_pa_ring_head);\n"
    "    if (a->index - a->out_head >= a->out_capacity) rk_pa_backoff(a);\n"
    "  }\n"
    "  a->backoff = 32u;\n"
    "  a->resp = a->out_slots +\n"
    "            (unsigned long long)((unsigned int)a->index &\n"
    "                                 (a->out_capacity - 1u)) *\n"
    "                a->out_slot_size;\n"
    "  a->out_msg = a->resp + rk_pa_msg_header;\n"
    "}\n"
    "\n"
    "/* Reads the message in hand (a request or an inbox message): its"
    " header's\n"
    " * id and stamp, and its payload into `copy` when it is small, in one"
    " go\n"
    " * (the loads leave together and cross the bus once; the handler"
    " then\n"
    " * reads device-local memory). A large payload is left where it is,"
    " and\n"
    " * the handler reads it there. Returns what the handler reads. */\n"
    "template <typename T>\n"
    "static __device__ inline const T *rk_pa_take(rk_pa_t *a, T *copy) {\n"
    "  const rk_pa_msg_t *h = (const rk_pa_msg_t *)a->req;\n"
    "  const T *in = (const T *)(a->req + rk_pa_msg_header);\n"
    "  const unsigned long long id = h->correlation_id, stamp ="
    " h->timestamp;\n"
    "  if constexpr (sizeof(T) <= 256u) {\n"
    "    *copy = *in;\n"
    "    in = copy;\n"
    "  }\n"
    "  a->req_id = id;\n"
    "  a->req_stamp = stamp;\n"
    "  return in;\n"
    "}\n"
    "\n"
    "/* The actor's clock past its last value and the stamp of the message in\n"
    " * hand, written back; the block in turn (or the only one) calls it. */\n"
    "static __device__ unsigned long long rk_pa_tick(rk_pa_t *a) {\n"
    "  volatile unsigned long long *clock = &a->sched[rk_pa_sched_clock];\n"
    "  const unsigned long long stamp = a->req_stamp;\n"
    "  unsigned long long now = *clock + 1ull;\n"
    "  if (stamp + 1ull > now) now = stamp + 1ull;\n"
    "  *clock = now;\n"
    "  *(volatile unsigned long long *)(a->control + rk_pa_ctl_clock) ="
    " now;\n"
    "  return now;\n"
    "}\n"
    "\n"
    "/* Takes the inbox message rk_pa_inbox_peek found: a receive event (the\n"
    " * clock merges its stamp before the handler runs); its answer goes to "
    "the\n"
    " * scratch space nobody reads. */\n"
    "static __device__ void rk_pa_inbox_take(rk_pa_t *a) {\n"
    "  (void)rk_pa_tick(a);\n"
    "  a->out_msg = a->kmem + rk_pa_k2k_scratch;\n"
    "}\n"
    "\n"
    "/* The inbox message in hand is handled: counted, then its slot "
    "released,\n"
    " * which gives the link its credit back (after the handler's last read "
    "of\n"
    " * the slot: a release store). */\n"
    "static __device__ void rk_pa_inbox_done(rk_pa_t *a, int code) {\n"
    "  rk_pa_count(a, &a->k_received, rk_pa_k2k_received, 1ull);\n"
    "  if (code != 0)\n"
    "    rk_pa_count(a, &a->k_received_errors, rk_pa_k2k_received_errors,"
    " 1ull);\n"
    "  *(volatile unsigned long long *)(a->k2k + rk_pa_k2k_last_received_ts) "
    "=\n"
    "      a->req_stamp;\n"
    "  a->chan->own += 1ull;\n"
    "  rk_pa_store_sys_u64(a->chan->chan + rk_pa_ring_head, a->chan->own);\n"
    "}\n"
    "\n"
    "/* Before the handler runs: port p's credit (what every link of it can\n"
    " * still take, at most rk_pa_k2k_outbox), count 0, and the refusal a "
    "send\n"
    " * beyond it answers (full; unconnected without links or once a receiver\n"
    " * has stopped). The port's words are rk_k2k_mem's, 4 per port. */\n"
    "static __device__ void rk_pa_port_open(rk_pa_t *a, unsigned int p) {\n"
    "  volatile unsigned int *w = (volatile unsigned int *)a->kmem + 4u * p;\n"
    "  const unsigned int n = a->nout[p];\n"
    "  unsigned int credit = n != 0u ? rk_pa_k2k_outbox : 0u;\n"
    "  unsigned int refusal = n != 0u ? rk_pa_send_full : "
    "rk_pa_send_unconnected;\n"
    "  for (unsigned int l = 0; l < n; ++l) {\n"
    "    const rk_pa_view_t *v = rk_pa_out_view(a, p, l);\n"
    "    /* `open` (the low half of the word it shares with `link`) and"
    " the\n"
    "     * receiver's head, together. */\n"
    "    unsigned long long open_link, head;\n"
    "    rk_pa_load2_sys_u64(v->chan + rk_pa_chan_open, v->chan +"
    " rk_pa_ring_head,\n"
    "                        &open_link, &head);\n"
    "    if ((unsigned int)open_link == 0u) {\n"
    "      credit = 0u;\n"
    "      refusal = rk_pa_send_unconnected;\n"
    "      break;\n"
    "    }\n"
    "    const unsigned long long room = v->mask + 1ull - (v->own - head);\n"
    "    if (room < credit) credit = (unsigned int)room;\n"
    "  }\n"
    "  w[0] = credit;\n"
    "  w[1] = 0u;\n"
    "  w[2] = refusal;\n"
    "  w[3] = 0u;\n"
    "}\n"
    "\n"
    "/* The stamp of the handler's sends: a tick of the clock after the\n"
    " * message's stamp was merged. */\n"
    "static __device__ unsigned long long rk_pa_send_stamp(rk_pa_t *a) {\n"
    "  return rk_pa_tick(a);\n"
    "}\n"
    "\n"
    "/* After the handler: the messages it queued on port p (at most its\n"
    " * credit, `size` bytes each in `buf`) go into every link's channel, "
    "slots\n"
    " * first, then the channel's tail with a release store at system scope;\n"
    " * the counters follow. */\n"
    "static __device__ void rk_pa_port_send(rk_pa_t *a, unsigned int p,\n"
    "                                       const unsigned char *buf,\n"
    "                                       unsigned int size,\n"
    "                                       unsigned long long stamp) {\n"
    "  if (a->k2k == nullptr) return; /* no ports: nothing was queued */\n"
    "  volatile unsigned int *w = (volatile unsigned int *)a->kmem + 4u * p;\n"
    "  const unsigned int credit = w[0], queued = w[1], refused = w[3];\n"
    "  const unsigned int n = queued < credit ? queued : credit;\n"
    "  if (refused != 0u) {\n"
    "    if (w[2] == rk_pa_send_full)\n"
    "      rk_pa_count(a, &a->k_refused_full, rk_pa_k2k_refused_full,"
    " refused);\n"
    "    else\n"
    "      rk_pa_count(a, &a->k_refused_unconnected,"
    " rk_pa_k2k_refused_unconnected,\n"
    "                  refused);\n"
    "  }\n"
    "  if (n == 0u) return;\n"
    "  const unsigned int links = a->nout[p];\n"
    "  for (unsigned int l = 0; l < links; ++l) {\n"
    "    rk_pa_view_t *v = rk_pa_out_view(a, p, l);\n"
    "    unsigned char *ch = v->chan;\n"
    "    const unsigned long long tail = v->own;\n"
    "    const unsigned int link = v->link;\n"
    "    for (unsigned int m = 0; m < n; ++m) {\n"
    "      unsigned char *slot = rk_pa_view_slot(v, tail + m);\n"
    "      rk_pa_msg_t *h = (rk_pa_msg_t *)slot;\n"
    "      h->correlation_id = tail + m + 1ull;\n"
    "      h->timestamp = stamp;\n"
    "      h->type = rk_pa_msg_k2k;\n"
    "      h->size = size;\n"
    "      h->status = link;\n"
    "      h->code = (int)p;\n"
    "      const unsigned char *src = buf + (unsigned long long)m * size;\n"
    "      for (unsigned int b = 0; b < size; ++b)\n"
    "        slot[rk_pa_msg_header + b] = src[b];\n"
    "    }\n"
    "    /* Publish: the receiver that sees the tail sees the slots. */\n"
    "    v->own = tail + n;\n"
    "    rk_pa_store_sys_u64(ch + rk_pa_ring_tail, tail + n);\n"
    "  }\n"
    "  rk_pa_count(a, &a->k_sent, rk_pa_k2k_sent, (unsigned long long)n *"
    " links);\n"
    "  *(volatile unsigned long long *)(a->k2k + rk_pa_k2k_last_sent_ts) = "
    "stamp;\n"
    "}\n"
    "\n"
    "/* rk_k2k_mem's layout (abi/actor_abi.h): the first port buffer after "
    "the\n"
    " * words, the views and the scratch answer, and the room each port's\n"
    " * buffer takes. */\n"
    "static __device__ constexpr unsigned long long rk_pa_round(\n"
    "    unsigned long long n) {\n"
    "  return (n + rk_pa_line - 1ull) & ~(unsigned long long)(rk_pa_line - "
    "1u);\n"
    "}\n"
    "static __device__ constexpr unsigned long long rk_pa_first_port(\n"
    "    unsigned long long out_payload) {\n"
    "  return rk_pa_k2k_scratch + rk_pa_round(out_payload);\n"
    "}\n"
    "static __device__ constexpr unsigned long long rk_pa_port_bytes(\n"
    "    unsigned long long msg_size) {\n"
    "  return rk_pa_round(rk_pa_k2k_outbox * msg_size);\n"
    "}\n"
    "\n"
    "/* Answers the claimed request with the handler's `code`, in request\n"
    " * order: response header, clock, counters, then the indices. */\n"
    "static __device__ void rk_pa_commit(rk_pa_t *a, int code) {\n"
    "  rk_pa_wait_turn(a);\n"
    "  rk_pa_msg_t *resp = (rk_pa_msg_t *)a->resp;\n"
    "  /* The clock and the counters from device memory (rk_sched),"
    " written\n"
    "   * there and to the control block: nothing is read back from the"
    " host. */\n"
    "  volatile unsigned long long *m = a->sched;\n"
    "  const unsigned long long stamp = a->req_stamp;\n"
    "  unsigned long long now = m[rk_pa_sched_clock] + 1ull;\n"
    "  const unsigned long long done = m[rk_pa_sched_processed] + 1ull;\n"
    "  const unsigned long long failed =\n"
    "      code != 0 ? m[rk_pa_sched_errors] + 1ull : 0ull;\n"
    "  /* The actor's clock: the device has no wall clock, so it ticks\n"
    "   * logically past both its last value and the request's stamp. Only\n"
    "   * the block in turn writes it, and the counters. */\n"
    "  if (stamp + 1ull > now) now = stamp + 1ull;\n"
    "  m[rk_pa_sched_clock] = now;\n"
    "  m[rk_pa_sched_processed] = done;\n"
    "  if (code != 0) m[rk_pa_sched_errors] = failed;\n"
    "  *(volatile unsigned long long *)(a->control + rk_pa_ctl_clock) ="
    " now;\n"
    "  resp->correlation_id = a->req_id;\n"
    "  resp->timestamp = now;\n"
    "  resp->type = rk_pa_msg_response;\n"
    "  resp->size = a->out_payload;\n"
    "  resp->status = code != 0 ? rk_pa_msg_handler_error : rk_pa_msg_ok;\n"
    "  resp->code = code;\n"
    "  if (code != 0) {\n"
    "    *(volatile int *)(a->control + rk_pa_ctl_last_error) = code;\n"
    "    *(volatile unsigned long long *)(a->control + rk_pa_ctl_errors) ="
    " failed;\n"
    "  }\n"
    "  *(volatile unsigned long long *)(a->control + rk_pa_ctl_processed)"
    " = done;\n"
    "  /* The response, the clock and the counters reach the host before the\n"
    "   * indices that publish them: a host that sees a response sees it\n"
    "   * counted. */\n"
    "  __threadfence_system();\n"
    "  /* The request is read: free its slot before publishing the response,\n"
    "   * so a host that sees the response sees the request gone. */\n"
    "  rk_pa_store_sys_u64(a->in + rk_pa_ring_head, a->index + 1ull);\n"
    "  rk_pa_store_sys_u64(a->out + rk_pa_ring_tail, a->index + 1ull);\n"
    "  rk_pa_store_gpu(&a->sched[1], a->index + 1ull); /* the next turn */\n"
    "}\n"
    "\n"
    "/* Leaves the loop. The last block out reports the actor stopped, unless\n"
    " * it left to park (blocks that left earlier for the stop are counted "
    "in\n"
    " * rk_sched[2] all the same, so a relaunched kernel drains what is "
    "left). */\n"
    "static __device__ void rk_pa_exit(rk_pa_t *a) {\n"
    "  const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;\n"
    "  /* This block's answers are published before it counts itself out, "
    "so\n"
    "   * the last one out publishes `terminated` after all of them. */\n"
    "  __threadfence_system();\n"
    "  if (atomicAdd(&a->sched[2], 1ull) != blocks - 1u) return;\n"
    "  /* Parked: the host relaunches the kernel; there is no stop to "
    "report. */\n"
    "  if (a->parked) return;\n"
    "  __threadfence_system();\n"
    "  rk_pa_store_sys_u32(a->control + rk_pa_ctl_run_state, "
    "rk_pa_run_stopped);\n"
    "  __threadfence_system();\n"
    "  rk_pa_store_sys_u32(a->control + rk_pa_ctl_terminated, 1u);\n"
    "}\n"
    "#endif /* sm_70 */\n";

void rk__cg_emit_cuda_actor_prelude(rk__strbuf_t *out) {
  rk__strbuf_puts(
      out,
      "\n/* ---- Persistent actor kernels ----------------------------------"
      "-----------\n"
      " * rk_actor_<h> keeps handler h resident. Thread (0, 0, 0) of each "
      "block\n"
      " * claims requests from the input ring, runs the handler and answers "
      "in\n"
      " * request order; blocks may run handlers without state concurrently. "
      "The\n"
      " * control block and the rings are host memory mapped into the "
      "device: what\n"
      " * is shared with the host is read with acquire and written with "
      "release at\n"
      " * system scope, and payloads are plain accesses ordered by those and "
      "by\n"
      " * a system fence before each publish. Nothing wakes the host: it "
      "polls. */\n");
  abi_constants(out);
  rk__strbuf_puts(out, kPreludeCode);
}

void rk__cg_emit_cuda_actor_kernel(rk__strbuf_t *out,
                                   const cg_actor_desc_t *d) {
  rk__strbuf_printf(out,
                    "\n/* Handler %s, resident. Any block size works (thread 0 "
                    "of a block\n * serves); launch no more blocks than the "
                    "device holds at once. */\n",
                    d->name);
  rk__strbuf_printf(out,
                    "extern \"C\" __global__ void " CG_ACTOR_PREFIX
                    "%s(\n"
                    "    unsigned char *rk_control,\n"
                    "    unsigned char *rk_in,\n"
                    "    unsigned char *rk_out,\n"
                    "    unsigned char *rk_in_slots,\n"
                    "    unsigned char *rk_out_slots,\n"
                    "    unsigned char *rk_state,\n"
                    "    unsigned long long *rk_sched,\n"
                    "    unsigned char *rk_k2k,\n"
                    "    unsigned char *rk_k2k_mem) {\n"
                    "#ifdef RK_PA_SUPPORTED\n"
                    "  rk_pa_t rk_a;\n"
                    "  if (!rk_pa_begin(&rk_a, rk_control, rk_in, rk_out, "
                    "rk_in_slots, rk_out_slots,\n"
                    "                   rk_sched, rk_k2k, rk_k2k_mem))\n"
                    "    return;\n",
                    d->name);
  /* The ports' words and buffers (abi/actor_abi.h's rk_k2k_mem layout). */
  uint32_t prev = CG_MAX_PORTS; /* none yet */
  if (d->nports)
    rk__strbuf_puts(out,
                    "  unsigned int *rk_ports = (unsigned int *)"
                    "rk_k2k_mem;\n");
  for (uint32_t p = 0; p < d->nports; ++p) {
    const char *t = d->port_types[p];
    if (!t) continue;
    if (prev == CG_MAX_PORTS)
      rk__strbuf_printf(out,
                        "  %s *rk_port%u = (%s *)(rk_k2k_mem + "
                        "rk_pa_first_port(sizeof(%s)));\n",
                        t, p, t, d->out_type);
    else
      rk__strbuf_printf(out,
                        "  %s *rk_port%u = (%s *)((unsigned char *)rk_port%u "
                        "+\n      rk_pa_port_bytes(sizeof(*rk_port%u)));\n",
                        t, p, t, prev, prev);
    prev = p;
  }
  rk__strbuf_printf(out,
                    "  for (;;) {\n"
                    "    const int rk_kind = rk_pa_next(&rk_a);\n"
                    "    if (rk_kind == 0) break;\n"
                    "    %s rk_copy;\n"
                    "    const %s *rk_msg = rk_pa_take(&rk_a, &rk_copy);\n"
                    "    if (rk_kind == 1)\n"
                    "      rk_pa_reserve(&rk_a, %s);\n"
                    "    else\n"
                    "      rk_pa_inbox_take(&rk_a);\n",
                    d->in_type, d->in_type,
                    d->state_type || d->nports ? "true" : "false");
  for (uint32_t p = 0; p < d->nports; ++p)
    if (d->port_types[p])
      rk__strbuf_printf(out, "    rk_pa_port_open(&rk_a, %uu);\n", p);
  rk__strbuf_puts(out, "    ");
  if (d->status) rk__strbuf_puts(out, "const int rk_code = ");
  rk__strbuf_printf(out,
                    "%s(\n"
                    "        rk_msg,\n"
                    "        (%s *)rk_a.out_msg",
                    d->handle, d->out_type);
  if (d->state_type)
    rk__strbuf_printf(out, ",\n        (%s *)rk_state", d->state_type);
  if (d->nports) {
    rk__strbuf_puts(out, ", rk_ports");
    for (uint32_t p = 0; p < d->nports; ++p)
      if (d->port_types[p]) rk__strbuf_printf(out, ", rk_port%u", p);
  }
  rk__strbuf_puts(out, ");\n");
  if (!d->status) rk__strbuf_puts(out, "    const int rk_code = 0;\n");
  if (d->nports) {
    rk__strbuf_puts(out,
                    "    const unsigned long long rk_stamp = "
                    "rk_pa_send_stamp(&rk_a);\n");
    for (uint32_t p = 0; p < d->nports; ++p)
      if (d->port_types[p])
        rk__strbuf_printf(out,
                          "    rk_pa_port_send(&rk_a, %uu, (const unsigned "
                          "char *)rk_port%u, sizeof(*rk_port%u),\n"
                          "                    rk_stamp);\n",
                          p, p, p);
  }
  rk__strbuf_puts(out,
                  "    if (rk_kind == 1)\n"
                  "      rk_pa_commit(&rk_a, rk_code);\n"
                  "    else\n"
                  "      rk_pa_inbox_done(&rk_a, rk_code);\n"
                  "  }\n"
                  "  rk_pa_exit(&rk_a);\n"
                  "#else\n"
                  "  __trap();\n"
                  "#endif\n"
                  "}\n");
}
