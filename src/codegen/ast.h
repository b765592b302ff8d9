/* The typed tree of a kernel-language source.
 *
 * The parser builds it (syntax only: names unresolved, types as written);
 * the checker (check.c) then resolves every name to its declaration, gives
 * every expression its type, folds the constants the language needs
 * (array sizes, case labels, stencil tiles, rk_at offsets), and makes C's
 * implicit conversions explicit as CG_E_CONVERT nodes. After checking, a
 * printer can rely on:
 *
 *   - expr->type set on every expression (never NULL);
 *   - operands of arithmetic, comparisons, assignments, call arguments,
 *     returns and initialisers already of the type the operation needs
 *     (CG_E_CONVERT where C converts implicitly; conditions of if/while/for/
 *     ?:/!/&&/|| converted to bool);
 *   - CG_E_NAME.var / CG_E_CALL.callee|builtin / CG_E_MEMBER.field resolved
 *     (a call's callee is the function's first declaration; callee->def is
 *     its definition);
 *   - folded constants: array sizes in the types (cg_type_t.count),
 *     CG_S_CASE.folded, stencil tiles and halo (cg_func_t) and neighbour
 *     offsets (CG_E_CALL.dx/dy/dz);
 *   - per function: calls made, and uses of index built-ins and barriers
 *     propagated from callees (cg_func_t).
 *
 * Everything is allocated in the compilation's arena (context.h) and
 * released with it. C-family printers print CG_E_CONVERT as nothing (C does
 * the conversion itself) except where a target needs the cast spelled out;
 * a WGSL printer prints every one.
 */
#ifndef RK_CODEGEN_AST_H_
#define RK_CODEGEN_AST_H_

#include <stdbool.h>
#include <stdint.h>

#include "codegen/context.h"

/* Axes of thread indices and of stencil domains: x, y, z. */
enum { CG_AXES = 3 };

/* ---- Types --------------------------------------------------------------- */

typedef enum cg_type_kind {
  CG_TY_VOID = 0,
  CG_TY_BOOL,
  CG_TY_I32, /* int, int32_t, signed */
  CG_TY_U32, /* unsigned, unsigned int, uint32_t */
  CG_TY_I64, /* int64_t, long long */
  CG_TY_U64, /* uint64_t, unsigned long long */
  CG_TY_F32,
  CG_TY_F64,
  CG_TY_STRUCT,
  CG_TY_ARRAY,
  CG_TY_PTR, /* a buffer parameter of an entry point (global memory) */
  CG_TY_POS, /* rk_grid_pos_t: the stencil position */
  CG_TY_COUNT_
} cg_type_kind_t;

typedef struct cg_type cg_type_t;
typedef struct cg_struct cg_struct_t;
typedef struct cg_expr cg_expr_t;
typedef struct cg_stmt cg_stmt_t;
typedef struct cg_var cg_var_t;
typedef struct cg_func cg_func_t;

struct cg_type {
  cg_type_kind_t kind;
  uint32_t size, align;  /* C layout (identical on every target) */
  const cg_type_t *elem; /* ARRAY: element; PTR: pointee */
  uint32_t count;        /* ARRAY: elements */
  bool elem_const;       /* PTR: `const T *` (read-only buffer) */
  const cg_struct_t *st; /* STRUCT */
};

/* A type as written, before the checker resolves it. */
typedef struct cg_typespec {
  cg_loc_t loc;
  uint8_t base;            /* cg_type_kind_t: a scalar, VOID, STRUCT or POS */
  const char *struct_name; /* STRUCT: the tag or typedef name */
  bool struct_tag;         /* written `struct name` */
  bool base_const;         /* const on the base type */
  bool is_ptr;             /* one '*' */
  bool ptr_const;          /* `T *const` */
  bool is_restrict;        /* `T *restrict` */
  cg_loc_t ptr_loc;
} cg_typespec_t;

typedef struct cg_field {
  const char *name;
  cg_loc_t loc;
  cg_typespec_t spec;
  cg_expr_t **dims; /* array dimensions as written */
  uint32_t ndims;
  const cg_type_t *type;
  uint32_t offset; /* bytes from the start of the struct */
} cg_field_t;

struct cg_struct {
  const char *tag;          /* `struct tag`; NULL if anonymous */
  const char *typedef_name; /* `typedef struct ... name;`; may be NULL */
  cg_loc_t loc;
  cg_field_t *fields;
  uint32_t nfields;
  uint32_t size, align;
  cg_type_t type; /* the CG_TY_STRUCT type of this struct */
};

/* ---- Expressions --------------------------------------------------------- */

typedef enum cg_op {
  CG_OP_NONE = 0,
  CG_OP_ADD,
  CG_OP_SUB,
  CG_OP_MUL,
  CG_OP_DIV,
  CG_OP_MOD,
  CG_OP_SHL,
  CG_OP_SHR,
  CG_OP_BAND,
  CG_OP_BOR,
  CG_OP_BXOR,
  CG_OP_LT,
  CG_OP_GT,
  CG_OP_LE,
  CG_OP_GE,
  CG_OP_EQ,
  CG_OP_NE,
  CG_OP_LAND,
  CG_OP_LOR,
  CG_OP_NEG,
  CG_OP_PLUS,
  CG_OP_NOT,
  CG_OP_BNOT, /* unary */
  CG_OP_COUNT_
} cg_op_t;

/* C spelling of an operator ("+", "<<", "!"). */
const char *rk__cg_op_spelling(cg_op_t op);
/* C precedence of a binary operator: 10 (* / %) down to 1 (||). */
int rk__cg_op_precedence(cg_op_t op);

/* Built-in functions. X(enum suffix, name, number of arguments). */
#define CG_BUILTINS(X)                        \
  X(THREAD_IDX_X, "rk_thread_idx_x", 0)       \
  X(THREAD_IDX_Y, "rk_thread_idx_y", 0)       \
  X(THREAD_IDX_Z, "rk_thread_idx_z", 0)       \
  X(BLOCK_IDX_X, "rk_block_idx_x", 0)         \
  X(BLOCK_IDX_Y, "rk_block_idx_y", 0)         \
  X(BLOCK_IDX_Z, "rk_block_idx_z", 0)         \
  X(BLOCK_DIM_X, "rk_block_dim_x", 0)         \
  X(BLOCK_DIM_Y, "rk_block_dim_y", 0)         \
  X(BLOCK_DIM_Z, "rk_block_dim_z", 0)         \
  X(GRID_DIM_X, "rk_grid_dim_x", 0)           \
  X(GRID_DIM_Y, "rk_grid_dim_y", 0)           \
  X(GRID_DIM_Z, "rk_grid_dim_z", 0)           \
  X(GLOBAL_IDX_X, "rk_global_idx_x", 0)       \
  X(GLOBAL_IDX_Y, "rk_global_idx_y", 0)       \
  X(GLOBAL_IDX_Z, "rk_global_idx_z", 0)       \
  X(SYNC_THREADS, "rk_sync_threads", 0)       \
  X(THREAD_FENCE, "rk_thread_fence", 0)       \
  X(DYNAMIC_SHARED, "rk_dynamic_shared", 0)   \
  X(ATOMIC_ADD_I32, "rk_atomic_add_i32", 2)   \
  X(ATOMIC_SUB_I32, "rk_atomic_sub_i32", 2)   \
  X(ATOMIC_AND_I32, "rk_atomic_and_i32", 2)   \
  X(ATOMIC_OR_I32, "rk_atomic_or_i32", 2)     \
  X(ATOMIC_XOR_I32, "rk_atomic_xor_i32", 2)   \
  X(ATOMIC_EXCH_I32, "rk_atomic_exch_i32", 2) \
  X(ATOMIC_MIN_I32, "rk_atomic_min_i32", 2)   \
  X(ATOMIC_MAX_I32, "rk_atomic_max_i32", 2)   \
  X(ATOMIC_CAS_I32, "rk_atomic_cas_i32", 3)   \
  X(ATOMIC_ADD_U32, "rk_atomic_add_u32", 2)   \
  X(ATOMIC_SUB_U32, "rk_atomic_sub_u32", 2)   \
  X(ATOMIC_AND_U32, "rk_atomic_and_u32", 2)   \
  X(ATOMIC_OR_U32, "rk_atomic_or_u32", 2)     \
  X(ATOMIC_XOR_U32, "rk_atomic_xor_u32", 2)   \
  X(ATOMIC_EXCH_U32, "rk_atomic_exch_u32", 2) \
  X(ATOMIC_MIN_U32, "rk_atomic_min_u32", 2)   \
  X(ATOMIC_MAX_U32, "rk_atomic_max_u32", 2)   \
  X(ATOMIC_CAS_U32, "rk_atomic_cas_u32", 3)   \
  X(SQRTF, "sqrtf", 1)                        \
  X(EXPF, "expf", 1)                          \
  X(LOGF, "logf", 1)                          \
  X(POWF, "powf", 2)                          \
  X(SINF, "sinf", 1)                          \
  X(COSF, "cosf", 1)                          \
  X(TANF, "tanf", 1)                          \
  X(FABSF, "fabsf", 1)                        \
  X(FMINF, "fminf", 2)                        \
  X(FMAXF, "fmaxf", 2)                        \
  X(FLOORF, "floorf", 1)                      \
  X(CEILF, "ceilf", 1)                        \
  X(FMAF, "fmaf", 3)                          \
  X(TANHF, "tanhf", 1)                        \
  X(NORTH, "rk_north", 2)                     \
  X(SOUTH, "rk_south", 2)                     \
  X(EAST, "rk_east", 2)                       \
  X(WEST, "rk_west", 2)                       \
  X(UP, "rk_up", 2)                           \
  X(DOWN, "rk_down", 2)                       \
  X(CENTER, "rk_center", 2)                   \
  X(AT, "rk_at", 4)                           \
  X(AT3, "rk_at3", 5)                         \
  X(SEND, "rk_send", 2)                       \
  X(TRY_SEND, "rk_try_send", 2)

typedef enum cg_builtin {
  CG_BI_NONE_ = 0,
#define CG_BI_ENUM_(name, text, nargs) CG_BI_##name,
  CG_BUILTINS(CG_BI_ENUM_)
#undef CG_BI_ENUM_
      CG_BI_COUNT_
} cg_builtin_t;

/* Ranges of the table above. */
static inline bool rk__cg_bi_is_index(cg_builtin_t b) {
  return b >= CG_BI_THREAD_IDX_X && b <= CG_BI_GLOBAL_IDX_Z;
}
static inline bool rk__cg_bi_is_atomic(cg_builtin_t b) {
  return b >= CG_BI_ATOMIC_ADD_I32 && b <= CG_BI_ATOMIC_CAS_U32;
}
static inline bool rk__cg_bi_is_math(cg_builtin_t b) {
  return b >= CG_BI_SQRTF && b <= CG_BI_TANHF;
}
/* rk_send / rk_try_send: a message to an actor's output port. */
static inline bool rk__cg_bi_is_send(cg_builtin_t b) {
  return b == CG_BI_SEND || b == CG_BI_TRY_SEND;
}
static inline bool rk__cg_bi_is_stencil(cg_builtin_t b) {
  return b >= CG_BI_NORTH && b <= CG_BI_AT3;
}
/* What an index built-in indexes, in the table's order (x, y, z each). */
typedef enum cg_index_kind {
  CG_INDEX_THREAD = 0, /* rk_thread_idx_* */
  CG_INDEX_BLOCK,      /* rk_block_idx_* */
  CG_INDEX_BLOCK_DIM,  /* rk_block_dim_* */
  CG_INDEX_GRID_DIM,   /* rk_grid_dim_* */
  CG_INDEX_GLOBAL,     /* rk_global_idx_* */
  CG_INDEX_COUNT_
} cg_index_kind_t;

/* The operation of an atomic built-in, in the table's order (i32, then
 * u32). */
typedef enum cg_atomic_op {
  CG_ATOMIC_ADD = 0,
  CG_ATOMIC_SUB,
  CG_ATOMIC_AND,
  CG_ATOMIC_OR,
  CG_ATOMIC_XOR,
  CG_ATOMIC_EXCH,
  CG_ATOMIC_MIN,
  CG_ATOMIC_MAX,
  CG_ATOMIC_CAS, /* three arguments: (p, expected, desired) */
  CG_ATOMIC_COUNT_
} cg_atomic_op_t;

/* The math built-ins, CG_BI_SQRTF .. CG_BI_TANHF. */
enum { CG_MATH_COUNT = CG_BI_TANHF - CG_BI_SQRTF + 1 };

static inline cg_index_kind_t rk__cg_bi_index_kind(cg_builtin_t b) {
  return (cg_index_kind_t)((b - CG_BI_THREAD_IDX_X) / CG_AXES);
}
/* The axis of an index built-in: 0 (x) .. 2 (z). */
static inline int rk__cg_bi_axis(cg_builtin_t b) {
  return (int)(b - CG_BI_THREAD_IDX_X) % CG_AXES;
}
static inline cg_atomic_op_t rk__cg_bi_atomic_op(cg_builtin_t b) {
  return (cg_atomic_op_t)((b - CG_BI_ATOMIC_ADD_I32) % CG_ATOMIC_COUNT_);
}
static inline bool rk__cg_bi_atomic_unsigned(cg_builtin_t b) {
  return b >= CG_BI_ATOMIC_ADD_U32;
}

/* The built-in called `name`, or CG_BI_NONE_. */
cg_builtin_t rk__cg_builtin_lookup(const char *name);
const char *rk__cg_builtin_name(cg_builtin_t b);
int rk__cg_builtin_nargs(cg_builtin_t b);

typedef enum cg_expr_kind {
  CG_E_INT = 1,  /* integer literal */
  CG_E_FLOAT,    /* floating literal */
  CG_E_BOOL,     /* true / false */
  CG_E_NAME,     /* a variable, parameter, constant or #define */
  CG_E_UNARY,    /* - + ! ~ */
  CG_E_BINARY,   /* arithmetic, bitwise, comparison, && || */
  CG_E_ASSIGN,   /* = and op= (only as a statement) */
  CG_E_INCDEC,   /* ++ -- (only as a statement) */
  CG_E_COND,     /* ?: */
  CG_E_CAST,     /* (T)x as written */
  CG_E_CONVERT,  /* an implicit conversion made explicit by the checker */
  CG_E_INDEX,    /* a[i] */
  CG_E_MEMBER,   /* s.f, p->f (p a pointer parameter: element 0) */
  CG_E_CALL,     /* helper or built-in */
  CG_E_ADDR,     /* &a[i]: only as the first argument of an atomic */
  CG_E_INIT_LIST /* { ... } in an initialiser */
} cg_expr_kind_t;

struct cg_expr {
  cg_expr_kind_t kind;
  cg_loc_t loc;
  uint16_t height;       /* 1 + the tallest child; bounded by CG_MAX_DEPTH */
  bool paren;            /* written in parentheses */
  const cg_type_t *type; /* set by the checker */
  union {
    struct {
      uint64_t value; /* the bits, in the literal's type */
      bool hex;
    } lit_int;
    struct {
      double value;
      const char *text; /* spelling without suffix: "0.5", "1e-3" */
    } lit_float;
    bool lit_bool;
    struct {
      const char *name;
      cg_var_t *var; /* resolved */
    } name;
    struct {
      cg_op_t op;
      cg_expr_t *operand;
    } unary;
    struct {
      cg_op_t op;
      cg_expr_t *lhs, *rhs;
      /* Type the operation is done in (the operands' common type, or for
       * comparisons the type compared); the result is expr->type. */
      const cg_type_t *op_type;
    } binary;
    struct {
      cg_op_t op; /* CG_OP_NONE for '=' */
      cg_expr_t *target, *value;
      /* op=: the type `target op value` is computed in before it is
       * converted back to the target's type; value is converted to it
       * (for shifts: to its own promoted type). */
      const cg_type_t *op_type;
    } assign;
    struct {
      bool inc, prefix;
      cg_expr_t *target;
    } incdec;
    struct {
      cg_expr_t *cond, *then, *other;
    } cond;
    struct {
      cg_typespec_t spec;
      cg_expr_t *operand;
    } cast; /* the target type is expr->type */
    struct {
      cg_expr_t *operand;
    } convert;
    struct {
      cg_expr_t *base, *index;
    } index;
    struct {
      cg_expr_t *base;
      const char *name;
      bool arrow;
      const cg_field_t *field; /* NULL for rk_grid_pos_t fields */
    } member;
    struct {
      const char *name;
      cg_expr_t **args;
      uint32_t nargs;
      cg_builtin_t builtin; /* or CG_BI_NONE_ for a helper */
      cg_func_t *callee;    /* helper: its first declaration (->def) */
      /* Stencil reads: the buffer parameter and the folded offset. */
      cg_var_t *buffer;
      int32_t dx, dy, dz;
      /* rk_send / rk_try_send: the folded port number. */
      uint32_t port;
    } call;
    struct {
      cg_expr_t *operand;
    } addr;
    struct {
      cg_expr_t **elems;
      uint32_t n;
    } init;
  };
};

/* ---- Variables (locals, parameters, shared arrays, constants) ----------- */

typedef enum cg_var_kind {
  CG_VAR_LOCAL = 1,
  CG_VAR_PARAM,
  CG_VAR_SHARED, /* RK_SHARED array in a kernel */
  CG_VAR_CONST,  /* top-level `static const` scalar */
  CG_VAR_MACRO,  /* #define NAME value (init holds the value) */
  /* `T *p = (T *)rk_dynamic_shared();` in a kernel: p (type PTR to the
   * scalar T) is the launch's dynamic block-shared memory, used only by
   * indexing. Each printer spells the declaration itself (the init is not
   * printed as an expression). At most one per kernel. */
  CG_VAR_DYNSHARED,
} cg_var_kind_t;

struct cg_var {
  const char *name;
  cg_loc_t loc;
  cg_var_kind_t kind;
  cg_typespec_t spec;
  cg_expr_t **dims; /* array dimensions as written */
  uint32_t ndims;
  cg_expr_t *init;       /* initialiser (or a macro's value); may be NULL */
  const cg_type_t *type; /* resolved */
  bool is_const;         /* the object is const (`const int k`, `T *const p`) */
  bool is_restrict;      /* `T *restrict p` */
  bool modified;         /* assigned somewhere (MSL copies such parameters) */
  uint32_t index;        /* parameter position */
  /* Stencil buffers read through neighbour functions get a tile. */
  bool tiled;
};

/* ---- Statements ---------------------------------------------------------- */

typedef enum cg_stmt_kind {
  CG_S_BLOCK = 1,
  CG_S_DECL, /* one or more variables of one declaration */
  CG_S_EXPR, /* assignment, ++/--, call, (void)x */
  CG_S_IF,
  CG_S_WHILE,
  CG_S_DO,
  CG_S_FOR,
  CG_S_SWITCH,
  CG_S_CASE,    /* label only: a direct child of a switch body */
  CG_S_DEFAULT, /* likewise */
  CG_S_BREAK,
  CG_S_CONTINUE,
  CG_S_RETURN,
  CG_S_EMPTY,
} cg_stmt_kind_t;

struct cg_stmt {
  cg_stmt_kind_t kind;
  cg_loc_t loc;
  union {
    struct {
      cg_stmt_t **items;
      uint32_t n;
    } block;
    struct {
      cg_var_t **vars;
      uint32_t n;
    } decl;
    cg_expr_t *expr; /* CG_S_EXPR, CG_S_RETURN (may be NULL) */
    struct {
      cg_expr_t *cond;
      cg_stmt_t *then, *other; /* other may be NULL */
    } if_;
    struct {
      cg_expr_t *cond;
      cg_stmt_t *body;
    } loop; /* WHILE, DO */
    struct {
      cg_stmt_t *init; /* DECL, EXPR or NULL */
      cg_expr_t *cond; /* may be NULL */
      cg_expr_t *step; /* may be NULL */
      cg_stmt_t *body;
    } for_;
    struct {
      cg_expr_t *value;
      cg_stmt_t *body; /* a BLOCK */
    } switch_;
    struct {
      cg_expr_t *value;
      int64_t folded; /* in the switch's promoted type */
    } case_;
  };
};

/* ---- Functions and the unit ---------------------------------------------- */

typedef enum cg_func_kind {
  CG_FN_HELPER = 0,
  CG_FN_KERNEL,
  CG_FN_STENCIL,
  CG_FN_HANDLER,
} cg_func_kind_t;

/* Where the checker's walk of the call graph is with a function. */
typedef enum cg_visit {
  CG_VISIT_NONE = 0, /* not reached yet */
  CG_VISIT_ACTIVE,   /* on the walk's stack: reaching it again is a cycle */
  CG_VISIT_DONE,     /* it and its callees are done */
} cg_visit_t;

/* A handler's parameters, in order. */
enum {
  CG_HANDLER_IN = 0, /* const IN *in: the request */
  CG_HANDLER_OUT,    /* OUT *out: the response */
  CG_HANDLER_STATE,  /* STATE *state: optional, shared by every message */
  CG_HANDLER_MAX_PARAMS
};

/* Output ports of a handler (rk_send): numbers 0 .. CG_MAX_PORTS - 1. */
enum { CG_MAX_PORTS = 8 };

typedef struct cg_call_edge {
  cg_func_t *callee;
  cg_loc_t loc;
} cg_call_edge_t;

struct cg_func {
  const char *name;
  cg_loc_t loc;
  cg_func_kind_t kind;
  bool is_static, is_inline;
  cg_typespec_t ret_spec;
  const cg_type_t *ret;
  cg_var_t **params;
  uint32_t nparams;
  cg_stmt_t *body; /* NULL for a prototype */
  cg_func_t *def;  /* the definition (itself when this is it) */

  /* Stencils: dimensions (2 or 3), tile and halo as written and folded. */
  uint32_t dims;
  cg_expr_t *tile_exprs[CG_AXES], *halo_expr;
  uint32_t tile[CG_AXES], halo;
  cg_vec_t tiled; /* cg_var_t*: buffers read via neighbours, in order */

  /* Filled by the checker (transitively over calls where it says so). */
  cg_vec_t calls;    /* cg_call_edge_t* made by this body */
  bool uses_index;   /* thread/block index built-ins, transitively */
  bool uses_barrier; /* rk_sync_threads, transitively */
  /* A loop (for, while, do) or a compare-and-swap (which WGSL retries in a
   * loop) in this body or, transitively, in a function it calls. */
  bool uses_loop;
  uint64_t shared_bytes;      /* RK_SHARED arrays (+ stencil tiles) */
  bool uses_dynamic_shared;   /* rk_dynamic_shared() in this body */
  const cg_var_t *dyn_shared; /* its pointer (CG_VAR_DYNSHARED), or NULL */
  /* Handlers: the message type of each output port used with rk_send or
   * rk_try_send (NULL: unused), where it was first used, and 1 + the
   * highest port used (0: none). */
  const cg_type_t *port_type[CG_MAX_PORTS];
  cg_loc_t port_loc[CG_MAX_PORTS];
  uint32_t nports;
  /* The name each port is given where rk_send names it with a #define
   * rather than a number (NULL: never), and where. */
  const char *port_name[CG_MAX_PORTS];
  cg_loc_t port_name_loc[CG_MAX_PORTS];
  cg_visit_t visit; /* checker scratch (the call graph's walk) */
};

typedef enum cg_item_kind {
  CG_ITEM_STRUCT = 1,
  CG_ITEM_FUNC,
  CG_ITEM_CONST, /* static const */
  CG_ITEM_MACRO, /* #define */
} cg_item_kind_t;

typedef struct cg_item {
  cg_item_kind_t kind;
  union {
    cg_struct_t *st;
    cg_func_t *fn;
    cg_var_t *var;
  };
} cg_item_t;

typedef struct cg_unit {
  cg_item_t *items;
  uint32_t nitems;
  /* Summary for printers, set by the checker. */
  bool uses_f64;
  bool has_stencil;
  bool uses_cas;  /* rk_atomic_cas_* anywhere */
  bool uses_loop; /* a function with uses_loop anywhere */
} cg_unit_t;

/* ---- Type helpers -------------------------------------------------------- */

/* The shared, immutable type of a scalar kind (VOID .. F64, POS). */
const cg_type_t *rk__cg_type_scalar(cg_type_kind_t kind);
const cg_type_t *rk__cg_type_array(cg_ctx_t *ctx, const cg_type_t *elem,
                                   uint32_t count);
const cg_type_t *rk__cg_type_ptr(cg_ctx_t *ctx, const cg_type_t *elem,
                                 bool elem_const);

static inline bool rk__cg_is_integer(const cg_type_t *t) {
  return t->kind >= CG_TY_BOOL && t->kind <= CG_TY_U64;
}
static inline bool rk__cg_is_float(const cg_type_t *t) {
  return t->kind == CG_TY_F32 || t->kind == CG_TY_F64;
}
static inline bool rk__cg_is_arith(const cg_type_t *t) {
  return t->kind >= CG_TY_BOOL && t->kind <= CG_TY_F64;
}
static inline bool rk__cg_is_signed(const cg_type_t *t) {
  return t->kind == CG_TY_I32 || t->kind == CG_TY_I64;
}
/* The innermost element of an array type (the type itself otherwise). */
const cg_type_t *rk__cg_type_base(const cg_type_t *t);
/* Room for a type's description in messages. */
enum { CG_TYPE_TEXT_MAX = 256 };

/* "float", "const float *", "msg_t", "float[4]" as C spells it. */
void rk__cg_type_describe(const cg_type_t *t, char *buf, size_t cap);
/* Name of a struct as C refers to it: the typedef name or "struct tag". */
void rk__cg_struct_c_name(const cg_struct_t *st, char *buf, size_t cap);

/* ---- Walks --------------------------------------------------------------- */

/* A predicate over expressions, with the caller's state. */
typedef bool (*cg_expr_pred_t)(const cg_expr_t *e, void *arg);

/* f on each direct sub-expression of e, in source order; true as soon as
 * one call returns true (the rest are not visited). */
bool rk__cg_expr_any_child(const cg_expr_t *e, cg_expr_pred_t f, void *arg);

/* f on each expression that statements below s (s included, may be NULL)
 * hold directly (initialisers, conditions, steps, values), in source
 * order; true as soon as one call returns true. f is not applied to the
 * sub-expressions itself: it recurses with rk__cg_expr_any_child. */
bool rk__cg_stmt_any_expr(const cg_stmt_t *s, cg_expr_pred_t f, void *arg);

/* e without the implicit conversions around it. */
const cg_expr_t *rk__cg_skip_converts(const cg_expr_t *e);

/* The root variable of an indexing chain (a[i][j] -> a), or NULL. */
const cg_var_t *rk__cg_index_root(const cg_expr_t *e);

#endif /* RK_CODEGEN_AST_H_ */
