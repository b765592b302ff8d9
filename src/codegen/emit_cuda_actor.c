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
    "/* One block's view of an actor; only thread (0, 0, 0) of a block has "
    "one.\n"
    " * rk_sched (zeroed before launch): [0] the next request index to "
    "claim,\n"
    " * [1] the next to publish, [2] blocks that have left their loop. "
    "Request\n"
    " * i is answered by response i: both rings start at index 0. */\n"
    "typedef struct rk_pa {\n"
    "  unsigned char *control, *in, *out, *in_slots, *out_slots;\n"
    "  unsigned long long *sched;\n"
    "  unsigned int in_mask, in_slot_size; /* set before launch: read once "
    "*/\n"
    "  unsigned int out_capacity, out_slot_size, out_payload;\n"
    "  unsigned long long out_head; /* the host's last seen output head */\n"
    "  unsigned int backoff;   /* ns of the next sleep, 32 .. 1024 */\n"
    "  unsigned int run_state; /* last written; block (0, 0, 0) only */\n"
    "  bool leader;            /* block (0, 0, 0): it writes run_state */\n"
    "  unsigned long long index; /* the claimed request */\n"
    "  unsigned char *req, *resp; /* its slot and its response's slot */\n"
    "} rk_pa_t;\n"
    "\n"
    "/* false for every thread but (0, 0, 0) of its block: handlers are\n"
    " * single-threaded, so the other threads leave at once. */\n"
    "static __device__ bool rk_pa_begin(rk_pa_t *a, unsigned char *control,\n"
    "                                   unsigned char *in, unsigned char "
    "*out,\n"
    "                                   unsigned char *in_slots,\n"
    "                                   unsigned char *out_slots,\n"
    "                                   unsigned long long *sched) {\n"
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
    "  a->index = 0;\n"
    "  a->req = a->resp = nullptr;\n"
    "  return true;\n"
    "}\n"
    "\n"
    "/* Sleeps, twice as long as last time up to about a microsecond. */\n"
    "static __device__ void rk_pa_backoff(rk_pa_t *a) {\n"
    "  __nanosleep(a->backoff);\n"
    "  if (a->backoff < 1024u) a->backoff *= 2u;\n"
    "}\n"
    "\n"
    "/* Claims the next request: true with index and req set; false once\n"
    " * termination is asked and every queued request is claimed. */\n"
    "static __device__ bool rk_pa_next(rk_pa_t *a) {\n"
    "  for (;;) {\n"
    "    /* active and terminate in one load (adjacent words), and before "
    "tail:\n"
    "     * the host publishes its last requests before it asks to "
    "terminate,\n"
    "     * so they are seen and answered. */\n"
    "    unsigned long long flags =\n"
    "        rk_pa_load_sys_u64(a->control + rk_pa_ctl_active);\n"
    "    bool active = (unsigned int)flags != 0u;\n"
    "    bool terminate = (unsigned int)(flags >> 32) != 0u;\n"
    "    unsigned long long claim = *(volatile unsigned long long "
    "*)&a->sched[0];\n"
    "    unsigned long long tail = rk_pa_load_sys_u64(a->in + "
    "rk_pa_ring_tail);\n"
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
    "    if (claim < tail) {\n"
    "      if (atomicCAS(&a->sched[0], claim, claim + 1ull) == claim) {\n"
    "        a->index = claim;\n"
    "        a->req = a->in_slots +\n"
    "                 (unsigned long long)((unsigned int)claim & a->in_mask) "
    "*\n"
    "                     a->in_slot_size;\n"
    "        a->backoff = 32u;\n"
    "        return true;\n"
    "      }\n"
    "      continue; /* another block took it: look again at once */\n"
    "    }\n"
    "    if (terminate) return false;\n"
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
    " * (a handler with state: message i + 1 sees what i left) its turn "
    "first,\n"
    " * then room for its response (the host has taken response index -\n"
    " * capacity). */\n"
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
    "}\n"
    "\n"
    "/* Answers the claimed request with the handler's `code`, in request\n"
    " * order: response header, clock, counters, then the indices. */\n"
    "static __device__ void rk_pa_commit(rk_pa_t *a, int code) {\n"
    "  rk_pa_wait_turn(a);\n"
    "  const rk_pa_msg_t *req = (const rk_pa_msg_t *)a->req;\n"
    "  rk_pa_msg_t *resp = (rk_pa_msg_t *)a->resp;\n"
    "  volatile unsigned long long *clock =\n"
    "      (volatile unsigned long long *)(a->control + rk_pa_ctl_clock);\n"
    "  volatile unsigned long long *processed =\n"
    "      (volatile unsigned long long *)(a->control + "
    "rk_pa_ctl_processed);\n"
    "  volatile unsigned long long *errors =\n"
    "      (volatile unsigned long long *)(a->control + rk_pa_ctl_errors);\n"
    "  /* Every read first, so they travel to the host together. */\n"
    "  const unsigned long long id = req->correlation_id;\n"
    "  const unsigned long long stamp = req->timestamp;\n"
    "  unsigned long long now = *clock + 1ull;\n"
    "  const unsigned long long done = *processed + 1ull;\n"
    "  const unsigned long long failed = code != 0 ? *errors + 1ull : 0ull;\n"
    "  /* The actor's clock: the device has no wall clock, so it ticks\n"
    "   * logically past both its last value and the request's stamp. Only\n"
    "   * the block in turn writes it, and the counters. */\n"
    "  if (stamp + 1ull > now) now = stamp + 1ull;\n"
    "  *clock = now;\n"
    "  resp->correlation_id = id;\n"
    "  resp->timestamp = now;\n"
    "  resp->type = rk_pa_msg_response;\n"
    "  resp->size = a->out_payload;\n"
    "  resp->status = code != 0 ? rk_pa_msg_handler_error : rk_pa_msg_ok;\n"
    "  resp->code = code;\n"
    "  if (code != 0) {\n"
    "    *(volatile int *)(a->control + rk_pa_ctl_last_error) = code;\n"
    "    *errors = failed;\n"
    "  }\n"
    "  *processed = done;\n"
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
    "/* Leaves the loop. The last block out reports the actor stopped. */\n"
    "static __device__ void rk_pa_exit(rk_pa_t *a) {\n"
    "  const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;\n"
    "  /* This block's answers are published before it counts itself out, "
    "so\n"
    "   * the last one out publishes `terminated` after all of them. */\n"
    "  __threadfence_system();\n"
    "  if (atomicAdd(&a->sched[2], 1ull) != blocks - 1u) return;\n"
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
                    "    unsigned long long *rk_sched) {\n"
                    "#ifdef RK_PA_SUPPORTED\n"
                    "  rk_pa_t rk_a;\n"
                    "  if (!rk_pa_begin(&rk_a, rk_control, rk_in, rk_out, "
                    "rk_in_slots, rk_out_slots,\n"
                    "                   rk_sched))\n"
                    "    return;\n"
                    "  while (rk_pa_next(&rk_a)) {\n"
                    "    rk_pa_reserve(&rk_a, %s);\n"
                    "    ",
                    d->name, d->state_type ? "true" : "false");
  if (d->status) rk__strbuf_puts(out, "int rk_code = ");
  rk__strbuf_printf(out,
                    "%s(\n"
                    "        (const %s *)(rk_a.req + rk_pa_msg_header),\n"
                    "        (%s *)(rk_a.resp + rk_pa_msg_header)",
                    d->handle, d->in_type, d->out_type);
  if (d->state_type)
    rk__strbuf_printf(out, ",\n        (%s *)rk_state", d->state_type);
  rk__strbuf_puts(out, ");\n");
  rk__strbuf_puts(out, d->status ? "    rk_pa_commit(&rk_a, rk_code);\n"
                                 : "    rk_pa_commit(&rk_a, 0);\n");
  rk__strbuf_puts(out,
                  "  }\n"
                  "  rk_pa_exit(&rk_a);\n"
                  "#else\n"
                  "  __trap();\n"
                  "#endif\n"
                  "}\n");
}
