/* Lowering: what stencils and handlers become, decided once per
 * compilation, before any printer runs.
 *
 * A checked unit (ast.h) holds its entry points as written. Every target
 * turns them into plain kernels the same way (docs/kernel-language.md,
 * "Lowering" under Stencils and Actor handlers):
 *
 *   - a stencil becomes a kernel of its launch parameters (the position
 *     is not one) whose prologue builds the position, on GPU targets first
 *     stages the tile plus halo of every buffer read through neighbour
 *     functions in block-shared memory, and skips points outside the
 *     interior;
 *   - a handler becomes the function rk_handle_<name> holding its body, a
 *     kernel <name> run by global thread 0 for one message (with a
 *     trailing rk_status buffer when it returns int), a batch kernel
 *     rk_batch_<name>(in, out[, state], rk_status, rk_count), and with
 *     persistent_actors (CUDA) the resident kernel rk_actor_<name>; a
 *     handler that sends (rk_send) has rk_ports and rk_port<p> after those
 *     parameters, rk_status always, and a batch run in order.
 *
 * rk__cg_lower() computes that description, the plan, from the tree, the
 * target's capabilities (ctx->caps, targets.h) and the entry selection.
 * Printers (emit.h) print from the plan; the entry list
 * (rk_codegen_list_entries) reads the same launch parameters.
 *
 *   cg_plan_t plan;
 *   rk__cg_lower(ctx, &unit, options->entry, options->persistent_actors,
 *                &plan);
 *   const cg_func_plan_t *fp = &plan.funcs[i];   // unit.items[i]
 *   for (uint32_t k = 0; k < fp->nentries; ++k) print(fp->entries[k]);
 *
 * The plan lives in the compilation's arena (context.h); lowering fails
 * only for memory, through rk__cg_oom(), so call it with ctx->jmp set.
 */
#ifndef RK_CODEGEN_LOWER_H_
#define RK_CODEGEN_LOWER_H_

#include <stdbool.h>
#include <stdint.h>

#include "codegen/ast.h"

/* ---- Names the lowering gives ------------------------------------------
 *
 * They start with rk_, which user names cannot, so they never clash with
 * the source's. */

/* A handler's body as a function: CG_HANDLE_PREFIX<name>. */
#define CG_HANDLE_PREFIX "rk_handle_"

/* A handler's batch kernel: CG_BATCH_PREFIX<name>. */
#define CG_BATCH_PREFIX "rk_batch_"

/* The int32_t buffer of a handler's results: element 0 for its own kernel
 * (an int handler only), element m for message m of a batch. */
#define CG_HANDLER_STATUS_NAME "rk_status"

/* Output ports (rk_send): the uint32_t control words of every port
 * (CG_PORT_WORDS per port, src/abi/k2k_abi.h) and port p's message buffer,
 * CG_PORT_PREFIX<p>. */
#define CG_PORTS_NAME "rk_ports"
#define CG_PORT_PREFIX "rk_port"
/* The function a send to port p of handler h calls:
 * CG_SEND_PREFIX<p>_<h>. */
#define CG_SEND_PREFIX "rk_send_"
enum {
  CG_PORT_WORDS = 4, /* credit, count, refusal, refused */
  CG_PORT_CREDIT = 0,
  CG_PORT_COUNT = 1,
  CG_PORT_REFUSAL = 2,
  CG_PORT_REFUSED = 3, /* sends refused, counted by the handler */
};

/* The number of messages of a batch (uint32_t, by value). */
#define CG_BATCH_COUNT_NAME "rk_count"

/* A stencil buffer's staged copy in block-shared memory:
 * CG_TILE_PREFIX<buffer>. */
#define CG_TILE_PREFIX "rk_tile_"

/* ---- Kernels of the output ---------------------------------------------- */

typedef enum cg_launch_kind {
  CG_LAUNCH_PARAM = 0, /* a parameter of the source function */
  CG_LAUNCH_STATUS,    /* int32_t *rk_status */
  CG_LAUNCH_COUNT,     /* uint32_t rk_count */
  CG_LAUNCH_PORTS,     /* uint32_t *rk_ports: the ports' control words */
  CG_LAUNCH_PORT,      /* T *rk_port<p>: port p's messages */
} cg_launch_kind_t;

/* One launch argument of a kernel, in the order the host passes them. */
typedef struct cg_launch_param {
  cg_launch_kind_t kind;
  const cg_var_t *var; /* CG_LAUNCH_PARAM */
  uint32_t port;       /* CG_LAUNCH_PORT */
} cg_launch_param_t;

typedef enum cg_entry_form {
  CG_FORM_KERNEL = 0, /* an RK_KERNEL, as written */
  CG_FORM_STENCIL,    /* a stencil's kernel */
  CG_FORM_HANDLER,    /* a handler's one-message kernel, <name> */
  CG_FORM_BATCH,      /* a handler's batch kernel, rk_batch_<name> */
} cg_entry_form_t;

/* A kernel the output defines. */
typedef struct cg_entry_plan {
  const cg_func_t *fn; /* the source function */
  cg_entry_form_t form;
  const char *name; /* fn->name, or CG_BATCH_PREFIX<fn->name> */
  const cg_launch_param_t *params;
  uint32_t nparams;
  bool has_status; /* one of params is CG_LAUNCH_STATUS */
  bool dyn_shared; /* receives the launch's dynamic shared memory */
  bool listed;     /* in rk_codegen_list_entries' list for the selection */
  /* The kernel may loop: its source function reaches a loop (uses_loop),
   * or the lowering adds one (a batch kernel's loop over its messages, a
   * staged stencil's loop over the tile). */
  bool loops;
} cg_entry_plan_t;

/* ---- Stencils ------------------------------------------------------------ */

typedef struct cg_stencil_plan {
  uint32_t dims; /* 2 or 3 */
  uint32_t halo;
  uint32_t tile[CG_AXES];          /* threads per axis (1 beyond dims) */
  const cg_var_t *pos;             /* the position parameter (not launched) */
  const cg_var_t *extent[CG_AXES]; /* nx, ny[, nz]; NULL beyond dims */
  /* GPU targets (cg_caps_t.staged_stencils): a block is a tile, positions
   * come from block and thread indices, and threads beyond the tile only
   * help to stage it. Elsewhere a position is a global thread index. */
  bool blocked;
  /* blocked, and some buffer is read through neighbour functions: every
   * such buffer (tiled) is staged, tile plus halo, in block-shared memory
   * (CG_TILE_PREFIX<buffer>), and neighbour reads come from there. */
  bool staged;
  const cg_var_t *const *tiled; /* in order of first use */
  uint32_t ntiled;
  uint32_t full[CG_AXES]; /* staged cells per axis: tile + 2 * halo */
  uint32_t cells;         /* full[0] * full[1] * full[2] */
  uint32_t threads;       /* tile[0] * tile[1] * tile[2] */
  /* Staged cell i is at (i / cell_div[a]) % cell_mod[a] along axis a; a
   * divisor or modulus of 0 is left out. */
  uint32_t cell_div[CG_AXES], cell_mod[CG_AXES];
} cg_stencil_plan_t;

/* ---- Handlers ------------------------------------------------------------ */

typedef struct cg_handler_plan {
  const char *handle_name; /* CG_HANDLE_PREFIX<name>: the body */
  const cg_var_t *in, *out;
  const cg_var_t *state; /* NULL without */
  bool status;           /* returns int: results go through rk_status */
  bool actor;            /* rk_actor_<name> is printed (CUDA) */
  /* Output ports: 1 + the highest used (0: none) and each one's message
   * type (NULL: unused). A handler with ports runs its batch in order on
   * global thread 0 (its sends keep their order), and its own kernel has
   * rk_status even when it returns void (0 is written), so both kernels
   * bind their buffers alike. */
  uint32_t nports;
  const cg_type_t *const *port_type;
  bool status_param; /* its own kernel takes rk_status: status || nports */
} cg_handler_plan_t;

/* ---- The plan ------------------------------------------------------------ */

/* What one function of the unit becomes. */
typedef struct cg_func_plan {
  const cg_func_t *fn;
  bool selected;              /* an entry point the selection prints */
  cg_stencil_plan_t *stencil; /* stencils */
  cg_handler_plan_t *handler; /* handlers */
  /* The kernels it becomes, in the order printed: one for a kernel or
   * stencil; for a handler its own kernel (unless the selection names the
   * batch entry) and then the batch kernel. Empty unless selected. */
  cg_entry_plan_t *entries;
  uint32_t nentries;
} cg_func_plan_t;

typedef struct cg_plan {
  const cg_unit_t *unit;
  cg_func_plan_t *funcs; /* per item of unit (zeroed for non-functions) */
  uint32_t nselected;    /* entry points selected */
  bool dyn_shared;       /* a selected entry uses rk_dynamic_shared() */
} cg_plan_t;

/* Lowers `unit` (checked) for ctx->caps with the selection `entry` (NULL:
 * every entry point; else as rk_transpile_options_t.entry) into *out. */
void rk__cg_lower(cg_ctx_t *ctx, const cg_unit_t *unit, const char *entry,
                  bool persistent_actors, cg_plan_t *out);

/* Whether options.entry `entry` selects function fn: NULL selects every
 * entry point; a handler is selected by its own name and by the name of its
 * batch entry (CG_BATCH_PREFIX<name>). */
bool rk__cg_entry_selected(const cg_func_t *fn, const char *entry);

/* An RK_HANDLER that returns int: its kernel takes a trailing int32_t
 * buffer, rk_status, whose element 0 receives rk_handle_<name>'s return
 * value (0: success, anything else: the handler's error code). */
static inline bool rk__cg_handler_status(const cg_func_t *fn) {
  return fn->kind == CG_FN_HANDLER && fn->ret && fn->ret->kind != CG_TY_VOID;
}

#endif /* RK_CODEGEN_LOWER_H_ */
