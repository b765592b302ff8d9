/* What the parts of the C-family printer (emit.h) share: the per-target
 * table, the printer's state and the entry points of each part.
 *
 *   emit_c_family.c   file-scope items, the prelude, rk__cg_emit_c_family
 *   emit_c_targets.c  the table: how each target spells what differs
 *   emit_c_expr.c     names, types and expressions
 *   emit_c_stmt.c     declarations and statements
 *   emit_c_entry.c    kernels from the plan: signatures, stencils, handlers
 */
#ifndef RK_CODEGEN_EMIT_C_INTERNAL_H_
#define RK_CODEGEN_EMIT_C_INTERNAL_H_

#include "codegen/emit.h"

typedef enum atomic_style {
  ATOMIC_C,    /* rk_atomic_add_i32(&x[i], v), as written */
  ATOMIC_CALL, /* atomicAdd(&x[i], v) / atomic_add(&x[i], v) */
  ATOMIC_MSL,  /* metal::atomic_fetch_add_explicit((device ...*)&x[i], v, */
} atomic_style_t;

typedef enum assert_style {
  ASSERT_C11,     /* _Static_assert(cond, "msg"); */
  ASSERT_CXX,     /* static_assert(cond, "msg"); */
  ASSERT_TYPEDEF, /* typedef char name[(cond) ? 1 : -1]; */
} assert_style_t;

typedef struct target_desc {
  rk_target_t target;
  const char *name;     /* "cuda" */
  const char *language; /* for the header comment */
  bool cxx;             /* C++-based: brace-initialiser narrowing rules */
  const char *types[CG_TY_F64 + 1]; /* scalar type names */
  const char *i64_suffix, *u64_suffix;
  const char *kernel_decl;  /* "RK_KERNEL void" */
  const char *helper_decl;  /* "" or "__device__" (after static/inline) */
  const char *global_space; /* address space of buffers, with a space */
  const char *shared_decl;  /* block-shared arrays, with a space */
  const char *const_decl;   /* file-scope constants */
  const char *restrict_kw;  /* NULL: dropped */
  /* Index built-ins: thread, block, block dim, grid dim, global. '$'
   * becomes the axis letter, '#' the axis number. */
  const char *index_fmt[CG_INDEX_COUNT_];
  bool index_is_cast; /* the spellings above are casts (precedence) */
  const char *sync, *fence;
  atomic_style_t atomic_style;
  const char *atomics[CG_ATOMIC_COUNT_]; /* in cg_atomic_op_t order */
  const char *math[CG_MATH_COUNT];       /* CG_BI_SQRTF .. CG_BI_TANHF */
  assert_style_t asserts;
  const char *alignof_name;
  const char *offsetof_name;   /* NULL: the target has none (NVRTC) */
  bool explicit_builtin_casts; /* overloaded built-ins: spell conversions */
  bool index_params;           /* MSL: indices are entry parameters */
  bool const_ref_params;       /* MSL: `constant T &x [[buffer(i)]]` */
  /* MSL: a struct operand of ?: in device, constant or threadgroup memory
   * is cast to its type. An lvalue's address space is part of its type in
   * Metal's C++, so `c ? f(r) : r` with r in constant memory has operands
   * of two types; the cast copies r into a thread value. */
  bool struct_cond_copies;
  /* rk_dynamic_shared(): the pointer's address space (with a space) and
   * how the kernel receives the memory, rk_dyn_shared: NULL for C (the
   * call stays), else "extern" (CUDA: an extern __shared__ array), "param"
   * (OpenCL: a hidden last parameter), "threadgroup" (MSL: a parameter at
   * [[threadgroup(0)]]). */
  const char *dyn_space;
  const char *dyn_style;
} target_desc_t;

/* How C, CUDA, OpenCL and MSL spell what differs (emit_c_targets.c). */
extern const target_desc_t rk__cg_c_targets[RK_TARGET_COUNT_];

/* ---- Printer state ---------------------------------------------------------
 */

typedef struct printer {
  const target_desc_t *t;
  const cg_plan_t *plan;
  rk__strbuf_t *out;
  int indent;
  const cg_func_t *fn;      /* the function being printed */
  const cg_func_plan_t *fp; /* what it becomes (lower.h) */
  int nasserts;             /* OpenCL assertion typedef counter */
  bool actor_prelude;       /* the persistent actor prelude is printed */
  /* OpenCL: each pointer launch parameter is a buffer and a byte offset
   * (cg_emit_options_t.buffer_offsets). */
  bool buffer_offsets;
} printer_t;

/* Precedence levels for printing (higher binds tighter). */
enum {
  PREC_ASSIGN = 1,
  PREC_COND = 2,
  PREC_BINARY0 = 2, /* + rk__cg_op_precedence(): 3 (||) .. 12 (* / %) */
  PREC_UNARY = 13,
  PREC_POSTFIX = 14,
  PREC_PRIMARY = 15,
};

static inline void puts_(printer_t *p, const char *s) {
  rk__strbuf_puts(p->out, s);
}

static inline void indent(printer_t *p) {
  for (int i = 0; i < p->indent; ++i) puts_(p, "  ");
}

/* ---- emit_c_expr.c ---------------------------------------------------------
 */

/* Appends formatted text (allocation failure is sticky in p->out). */
void rk__cg_c_printf(printer_t *p, const char *fmt, ...) RK__PRINTF(2, 3);

/* A user name as the target must spell it. */
void rk__cg_c_name(printer_t *p, const char *name);

/* A struct as C refers to it: its typedef name or `struct tag`. */
void rk__cg_c_struct_name(printer_t *p, const cg_struct_t *st);

/* The base type of t (arrays stripped): "float", "msg_t". */
void rk__cg_c_type_name(printer_t *p, const cg_type_t *t);

/* An index built-in in the target's spelling, parenthesized where its
 * spelling is a cast and min_prec needs it. */
void rk__cg_c_index_builtin(printer_t *p, cg_index_kind_t kind, int axis,
                            int min_prec);

/* e, parenthesized if it binds less tightly than min_prec (PREC_*). */
void rk__cg_c_expr(printer_t *p, const cg_expr_t *e, int min_prec);

/* ---- emit_c_stmt.c ---------------------------------------------------------
 */

/* Array dimensions as written: "[N][2]". */
void rk__cg_c_dims(printer_t *p, cg_expr_t *const *d, uint32_t n);

/* `const float *restrict x` with the target's address space. */
void rk__cg_c_pointer_decl(printer_t *p, const cg_var_t *v);

/* A parameter: a pointer as above, a value as declared. */
void rk__cg_c_param_decl(printer_t *p, const cg_var_t *v);

/* The statements of block s, one per line at the current indentation. */
void rk__cg_c_block_items(printer_t *p, const cg_stmt_t *s);

/* ---- emit_c_entry.c --------------------------------------------------------
 */

/* A function of the unit as its plan says: a helper (or its prototype),
 * or the kernels an entry point becomes; nothing for an entry point the
 * selection leaves out. */
void rk__cg_c_function(printer_t *p, const cg_func_plan_t *fp);

#endif /* RK_CODEGEN_EMIT_C_INTERNAL_H_ */
