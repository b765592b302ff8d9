/* What the parts of the WGSL printer (emit.h) share: its state and the
 * entry points of each part.
 *
 *   emit_wgsl.c        names, module-scope declarations, types, structs,
 *                      the module's header and rk__cg_emit_wgsl
 *   emit_wgsl_expr.c   expressions
 *   emit_wgsl_stmt.c   statements (?: hoisting, switch lowering)
 *   emit_wgsl_func.c   function bodies, helpers, atomic arrays, CAS helpers
 *   emit_wgsl_entry.c  entry points from the plan: bindings, signatures,
 *                      stencils, handlers
 */
#ifndef RK_CODEGEN_EMIT_WGSL_INTERNAL_H_
#define RK_CODEGEN_EMIT_WGSL_INTERNAL_H_

#include "codegen/emit.h"

/* Output larger than this means runaway duplication (switch fallthrough). */
enum { WGSL_MAX_OUTPUT = 32 << 20 };

/* Entry points that may keep the name of a WGSL built-in function they
 * shadow, per module; a further one is refused. */
enum { WGSL_MAX_SHADOWING = 8 };

/* Room for a node's address as text, a map key ("%p"). */
enum { WGSL_PTR_KEY = 32 };

/* The loop guard (cg_emit_options_t.loop_guard): a loop's exit as the
 * program says, counted; put before `break`. */
#define WGSL_GUARD_EXIT "rk_loops_ended += 1u; "

/* rk_cas_<array>: the compare-and-swap helper of an atomic array. */
#define WGSL_CAS_PREFIX "rk_cas_"

/* ---- Printer state ------------------------------------------------------- */

typedef struct printer {
  cg_ctx_t *ctx;
  const cg_plan_t *plan;
  rk__strbuf_t *out;
  int indent;
  const cg_func_t *fn;      /* the function being printed */
  const cg_func_plan_t *fp; /* what it becomes (lower.h); NULL outside */
  const cg_func_t *entry;   /* the entry point whose resources are in scope */
  bool multi;               /* several entry points: prefix their resources */
  cg_map_t module_names;    /* every module-scope name -> "" */
  cg_map_t atomic_vars;     /* "%p" of a cg_var_t -> "" */
  cg_map_t temps;           /* "%p" of a hoisted ?: -> its temporary's name */
  int ntemps;
  /* Entry points named like a WGSL built-in function (shadowing it); the
   * output must not call that built-in (checked at the end). */
  const cg_func_t *shadowing[WGSL_MAX_SHADOWING];
  int nshadowing;
  cg_map_t called; /* WGSL built-in functions the output calls -> "" */
  /* The loop guard is declared: every loop counts its start and its
   * exits (rk_transpile_options_t.wgsl_loop_guard). */
  bool guard;
  uint32_t loop_depth; /* loops around the statement being printed */
  bool break_loop;     /* a `break` here leaves a loop, not a switch */
  /* The function being printed takes `rk_depth: u32`, the loops its caller
   * has open (helpers that loop, with the guard). */
  bool depth_param;
} printer_t;

static inline void puts_(printer_t *p, const char *s) {
  rk__strbuf_puts(p->out, s);
}

static inline void indent(printer_t *p) {
  for (int i = 0; i < p->indent; ++i) puts_(p, "  ");
}

/* ---- emit_wgsl.c -----------------------------------------------------------
 */

/* Appends formatted text (short: longer output fails p->out). */
void rk__cg_wgsl_printf(printer_t *p, const char *fmt, ...) RK__PRINTF(2, 3);

/* `name(`: a call of WGSL built-in function `name`, noted as called. */
void rk__cg_wgsl_builtin_call(printer_t *p, const char *name);

/* A user name as WGSL must spell it. */
void rk__cg_wgsl_name(printer_t *p, const char *name);

/* The same spelling as a string in the arena. */
const char *rk__cg_wgsl_spelled(printer_t *p, const char *name);

/* Map keys for nodes: their address as text (in buf, 32 bytes). */
const char *rk__cg_wgsl_ptr_key(char *buf, const void *ptr);

/* The same key as a string in the arena. */
const char *rk__cg_wgsl_ptr_key_dup(printer_t *p, const void *ptr);

/* Registers a module-scope name; a second declaration is refused. */
void rk__cg_wgsl_declare(printer_t *p, const char *name, cg_loc_t loc);

/* The module-scope name of a buffer parameter or shared array of the
 * current entry; an rk_dynamic_shared() pointer names the workgroup array
 * rk_dyn_shared. */
const char *rk__cg_wgsl_resource_string(printer_t *p, const cg_var_t *v);

/* Prints that name. */
void rk__cg_wgsl_resource_name(printer_t *p, const cg_var_t *v);

/* Variables that live at module scope: shared arrays and the dynamic shared
 * memory (their declaration statements print nothing in the body). */
bool rk__cg_wgsl_is_module_var(const cg_var_t *v);

/* Module-scope variables and buffer parameters: named by
 * rk__cg_wgsl_resource_name(). */
bool rk__cg_wgsl_is_resource(const cg_var_t *v);

/* Whether array v has atomic elements in this entry (an atomic touches
 * it). */
bool rk__cg_wgsl_is_atomic_var(printer_t *p, const cg_var_t *v);

/* A type: "f32", "array<array<i32, 3>, 2>", "particle_t"; atomic wraps the
 * innermost element in atomic<>. */
void rk__cg_wgsl_type(printer_t *p, const cg_type_t *t, bool atomic);

/* ---- emit_wgsl_expr.c ------------------------------------------------------
 */

/* Whether evaluating e may do more than compute a value: atomics, and
 * helpers that reach a barrier. */
bool rk__cg_wgsl_has_effects(const cg_expr_t *e);

/* A ?: that select() cannot express: non-scalar, or a branch with side
 * effects (select evaluates both). */
bool rk__cg_wgsl_cond_needs_if(const cg_expr_t *e);

/* The shift amount: WGSL wants u32. */
void rk__cg_wgsl_shift_amount(printer_t *p, const cg_expr_t *e);

/* An operand of binary `op`, parenthesized where WGSL's grammar needs it. */
void rk__cg_wgsl_binary_operand(printer_t *p, cg_op_t op, const cg_expr_t *e,
                                bool lhs);

/* An implicit or explicit conversion to `to`: T(x), or a literal already
 * in the new type. */
void rk__cg_wgsl_convert(printer_t *p, const cg_type_t *to, const cg_expr_t *x);

/* An index built-in: rk_tid.x, rk_bid.x, rk_wg_x, rk_gdim.x or the global
 * index computed from them. */
void rk__cg_wgsl_index_builtin(printer_t *p, cg_index_kind_t kind, int axis);

/* An lvalue or element as a reference, without atomicLoad. */
void rk__cg_wgsl_place(printer_t *p, const cg_expr_t *e);

/* A value of type t from an initialiser: constructors for { } lists, the
 * zero value T() for missing elements. */
void rk__cg_wgsl_init_value(printer_t *p, const cg_type_t *t,
                            const cg_expr_t *e);

/* e as a WGSL expression (assignments are statements:
 * emit_wgsl_stmt.c). */
void rk__cg_wgsl_expr(printer_t *p, const cg_expr_t *e);

/* ---- emit_wgsl_stmt.c ------------------------------------------------------
 */

/* Refuses output beyond WGSL_MAX_OUTPUT, at loc. */
void rk__cg_wgsl_check_size(printer_t *p, cg_loc_t loc);

/* Prints the statements of a block (or one statement) as the items of a
 * { } the caller opened. */
void rk__cg_wgsl_items(printer_t *p, const cg_stmt_t *s);

/* With the loop guard (p->guard; nothing otherwise): the count of a loop
 * started, "rk_loops_begun += 1u;" and a newline, printed before it... */
void rk__cg_wgsl_guard_begin(printer_t *p, const char *indent_text);

/* ... and, right after it, the check that every loop started has ended as
 * the program says (but those open around it: rk__cg_wgsl_depth), which
 * sets the guard's hit word when one was cut short. Both lines start with
 * indent_text (NULL: p->indent). */
void rk__cg_wgsl_guard_check(printer_t *p, const char *indent_text);

/* With the loop guard: the number of loops open at this point, counting
 * the caller's (`rk_depth + 2u`, `1u`): the argument that a call of a
 * function that loops passes as its rk_depth. */
void rk__cg_wgsl_depth(printer_t *p);

/* ---- emit_wgsl_func.c ------------------------------------------------------
 */

/* The statements of body b, indented one level. */
void rk__cg_wgsl_function_body(printer_t *p, const cg_stmt_t *b);

/* The body of a function returning `ret` (not void), and a final return of
 * the zero value where control might reach the end as far as WGSL can
 * tell. WGSL requires one; C allows a function whose only returns are in
 * an endless loop (`while (true) { ... return x; }`), and leaves falling
 * off the end undefined when the caller uses the value. */
void rk__cg_wgsl_value_function_body(printer_t *p, const cg_type_t *ret,
                                     const cg_stmt_t *b);

/* A helper function (prototypes print nothing). */
void rk__cg_wgsl_helper(printer_t *p, const cg_func_plan_t *fp);

/* Records in p->atomic_vars the arrays that atomics below s work on. */
void rk__cg_wgsl_find_atomics_stmt(printer_t *p, const cg_stmt_t *s);

/* Shared arrays declared in the outermost block of a kernel. */
void rk__cg_wgsl_shared_arrays(printer_t *p, const cg_func_t *fn);

/* rk_cas_<array>: a strong compare-and-swap on one atomic array (WGSL
 * cannot pass pointers to storage or workgroup memory to functions). */
void rk__cg_wgsl_cas_helper(printer_t *p, const cg_var_t *v);

/* Whether statements below s compare-and-swap on array v. */
bool rk__cg_wgsl_uses_cas_stmt(const cg_stmt_t *s, const cg_var_t *v);

/* ---- emit_wgsl_entry.c -----------------------------------------------------
 */

/* A selected entry point: its module-scope resources and its kernels. */
void rk__cg_wgsl_entry(printer_t *p, const cg_func_plan_t *fp);

/* The module-scope name of handler fn's port control words (k < 0) or of
 * port k's message array (emit_wgsl_entry.c). */
const char *rk__cg_wgsl_port_string(printer_t *p, const cg_func_t *fn, int k);

#endif /* RK_CODEGEN_EMIT_WGSL_INTERNAL_H_ */
