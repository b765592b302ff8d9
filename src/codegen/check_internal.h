/* What the parts of the checker (check.h) share: its state, scopes and
 * the entry points of each part.
 *
 *   check.c           helpers, scopes, the call graph, rk__cg_check
 *   check_fold.c      constant folding (rk__cg_fold)
 *   check_types.c     declared types, structs, conversions, lvalues
 *   check_builtins.c  calls of built-in functions
 *   check_expr.c      expressions
 *   check_stmt.c      local declarations and statements
 *   check_decl.c      functions: signatures, entry points, bodies
 */
#ifndef RK_CODEGEN_CHECK_INTERNAL_H_
#define RK_CODEGEN_CHECK_INTERNAL_H_

#include "codegen/check.h"

/* A name in scope. Shadowed bindings of the same name chain through prev;
 * leaving a scope restores them. */
typedef struct binding {
  const char *name;
  cg_var_t *var;   /* a variable, parameter, constant or macro */
  cg_func_t *fn;   /* a function: its first declaration */
  cg_struct_t *st; /* a typedef name */
  uint32_t depth;  /* scope depth it was declared at */
  struct binding *prev;
} binding_t;

typedef struct checker {
  cg_ctx_t *ctx;
  cg_unit_t *unit;
  cg_map_t names;       /* name -> innermost binding_t* */
  cg_map_t tags;        /* struct tag -> cg_struct_t* */
  cg_map_t funcs;       /* every function name in the file -> cg_func_t* */
  cg_vec_t stack;       /* binding_t* in declaration order */
  cg_vec_t marks;       /* stack sizes at scope entries (as uintptr_t) */
  uint32_t depth;       /* current scope depth (0 = file) */
  cg_func_t *fn;        /* function being checked (its definition) */
  uint32_t block_depth; /* 1 = the function body's own block */
  int loops, breakables;
  const cg_var_t *binding_dynshared; /* the fn's rk_dynamic_shared() pointer */
} checker_t;

static inline const cg_type_t *scalar(cg_type_kind_t k) {
  return rk__cg_type_scalar(k);
}

/* The innermost binding of `name`, or NULL. */
static inline binding_t *lookup(checker_t *ch, const char *name) {
  return rk__cg_map_get(&ch->names, name);
}

/* ---- check.c ---------------------------------------------------------------
 */

/* Whether e is `(T *)rk_dynamic_shared()`, as written. */
bool rk__cg_check_is_dynamic_shared_init(const cg_expr_t *e);

/* t as C spells it, in buf (returned). */
const char *rk__cg_check_describe(const cg_type_t *t, char *buf, size_t cap);

/* "RK_KERNEL", "RK_STENCIL", "RK_HANDLER" or "helper"; and as a noun in
 * messages: "kernel", "stencil", "handler", "helper function". */
const char *rk__cg_check_fn_kind_name(cg_func_kind_t k);
const char *rk__cg_check_entry_word(cg_func_kind_t k);

/* Refuses a scalar the target cannot express, and notes what printers must
 * know (OpenCL's fp64 pragma). */
void rk__cg_check_require_type(checker_t *ch, const cg_type_t *t, cg_loc_t loc,
                               const cg_expr_t *literal);

/* Enters a scope; leaving it restores the bindings it shadowed. */
void rk__cg_check_push_scope(checker_t *ch);
void rk__cg_check_pop_scope(checker_t *ch);

/* Refuses names the language reserves. */
void rk__cg_check_user_name(checker_t *ch, const char *name, cg_loc_t loc);

/* A new binding of `name` in the current scope (refused if the scope has
 * one, or if it is a macro or type name); the caller sets what it binds. */
binding_t *rk__cg_check_declare(checker_t *ch, const char *name, cg_loc_t loc);

/* ---- check_fold.c ----------------------------------------------------------
 */

/* v as a value of integer type k (sign-extended for signed types). */
int64_t rk__cg_check_wrap_int(cg_type_kind_t k, uint64_t v);

/* ---- check_types.c ---------------------------------------------------------
 */

/* An integer constant expression that must lie in [lo, hi]. */
int64_t rk__cg_check_fold_int(checker_t *ch, cg_expr_t *e, const char *what,
                              int64_t lo, int64_t hi);

/* The type a specifier names (arrays not applied); refuses what the
 * target cannot express. */
const cg_type_t *rk__cg_check_resolve_base(checker_t *ch,
                                           const cg_typespec_t *spec);

/* Applies array dimensions (outermost first) to elem. */
const cg_type_t *rk__cg_check_apply_dims(checker_t *ch, const cg_type_t *elem,
                                         cg_expr_t **dims, uint32_t ndims);

/* Checks a struct definition and computes its C layout. */
void rk__cg_check_struct(checker_t *ch, cg_struct_t *st);

/* C's integer promotion over the language's types (bool -> int). */
cg_type_kind_t rk__cg_check_promote_kind(cg_type_kind_t k);

/* C's usual arithmetic conversions over the language's types. */
const cg_type_t *rk__cg_check_common_type(const cg_type_t *a,
                                          const cg_type_t *b);

/* A name for e in messages: the variable's name or "expression". */
const char *rk__cg_check_value_noun(const cg_expr_t *e);

/* Refuses values that are not first-class (arrays, buffers, positions,
 * void). */
cg_expr_t *rk__cg_check_rvalue(checker_t *ch, cg_expr_t *e);

/* Converts an rvalue to `to` as assignment does in C. */
cg_expr_t *rk__cg_check_convert(checker_t *ch, cg_expr_t *e,
                                const cg_type_t *to, const char *context);

/* e as a condition (converted to bool; a buffer means "not NULL"). */
cg_expr_t *rk__cg_check_to_bool(checker_t *ch, cg_expr_t *e,
                                const char *context);

/* Refuses an operand of `op` that is not a number (or not an integer). */
cg_expr_t *rk__cg_check_arith_operand(checker_t *ch, cg_expr_t *e, cg_op_t op,
                                      bool integer_only);

/* Checks that `e` may be assigned and notes the variable as modified. */
void rk__cg_check_assignable(checker_t *ch, cg_expr_t *e, const char *what);

/* ---- check_builtins.c ------------------------------------------------------
 */

/* The variable e names (through conversions), or NULL. */
cg_var_t *rk__cg_check_name_var(const cg_expr_t *e);

/* A call of a built-in function (e->call.builtin set); `top`: the call is
 * a statement of its own. */
void rk__cg_check_builtin(checker_t *ch, cg_expr_t *e, bool top);

/* ---- check_expr.c ----------------------------------------------------------
 */

/* Resolves and types e (`top`: e is a statement of its own, where
 * assignments and void calls are allowed); returns e. */
cg_expr_t *rk__cg_check_expr(checker_t *ch, cg_expr_t *e, bool top);

/* ---- check_stmt.c ----------------------------------------------------------
 */

/* The statements of block s, in the current scope. */
void rk__cg_check_block_items(checker_t *ch, cg_stmt_t *s);

/* ---- check_decl.c ----------------------------------------------------------
 */

/* A function: its signature, its name (a prototype's definition or a new
 * function) and its body. */
void rk__cg_check_function(checker_t *ch, cg_func_t *fn);

#endif /* RK_CODEGEN_CHECK_INTERNAL_H_ */
