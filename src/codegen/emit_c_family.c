/* The C-family printer: C, CUDA C++, OpenCL C 1.2 and MSL from one walk of
 * the checked tree, parameterised by the table kTargets below (emit.h).
 *
 * It prints the kernels the lowering planned (lower.h):
 *   - a stencil's kernel: the position as a local struct rk_stencil_pos_t,
 *     on GPU targets the staging loop that copies the tile plus halo of
 *     every buffer read through neighbour functions into block-shared
 *     memory, then the interior check; neighbour reads come from the tile
 *     on GPU targets and from global memory in C;
 *   - a handler's rk_handle_<name> (its body), its one-message kernel and
 *     its batch kernel, run by global thread 0, and with persistent_actors
 *     (CUDA) rk_actor_<name> (emit_cuda_actor.c prints it and the prelude
 *     it shares).
 * What the target's language needs besides:
 *   - MSL has no global thread indices: kernels receive them as parameters
 *     (rk_tid, rk_bid, rk_bdim, rk_gdim) and pass them on to helpers that
 *     use index built-ins, directly or through their callees.
 *   - MSL atomics cast the element's address to device/threadgroup
 *     atomic_int/atomic_uint; compare-and-swap goes through a small helper
 *     that turns the weak exchange into a strong one.
 *   - MSL: a struct operand of ?: in device, constant or threadgroup memory
 *     is cast to its struct type, a copy in thread memory, since the
 *     address space of an lvalue is part of its type.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/check.h"
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

static const target_desc_t kTargets[RK_TARGET_COUNT_] =
    {
        [RK_TARGET_C] =
            {
                .target = RK_TARGET_C,
                .name = "c",
                .language = "C11 for the rk CPU backend",
                .types = {"void", "bool", "int", "unsigned int", "long long",
                          "unsigned long long", "float", "double"},
                .i64_suffix = "ll",
                .u64_suffix = "ull",
                .kernel_decl = "RK_KERNEL void",
                .helper_decl = "",
                .global_space = "",
                .shared_decl = "RK_SHARED ",
                .const_decl = "static const",
                .restrict_kw = "restrict",
                .index_fmt = {"rk_thread_idx_$()", "rk_block_idx_$()",
                              "rk_block_dim_$()", "rk_grid_dim_$()",
                              "rk_global_idx_$()"},
                .sync = "rk_sync_threads()",
                .fence = "rk_thread_fence()",
                .atomic_style = ATOMIC_C,
                .math = {"sqrtf", "expf", "logf", "powf", "sinf", "cosf",
                         "tanf", "fabsf", "fminf", "fmaxf", "floorf", "ceilf",
                         "fmaf", "tanhf"},
                .asserts = ASSERT_C11,
                .alignof_name = "_Alignof",
                .offsetof_name = "offsetof",
            },
        [RK_TARGET_CUDA] =
            {
                .target = RK_TARGET_CUDA,
                .name = "cuda",
                .language = "CUDA C++ for NVRTC",
                .cxx = true,
                .types = {"void", "bool", "int", "unsigned int", "long long",
                          "unsigned long long", "float", "double"},
                .i64_suffix = "ll",
                .u64_suffix = "ull",
                .kernel_decl = "extern \"C\" __global__ void",
                .helper_decl = "__device__",
                .global_space = "",
                .shared_decl = "__shared__ ",
                .const_decl = "static constexpr",
                .restrict_kw = "__restrict__",
                .index_fmt = {"threadIdx.$", "blockIdx.$", "blockDim.$",
                              "gridDim.$",
                              "(blockIdx.$ * blockDim.$ + threadIdx.$)"},
                .sync = "__syncthreads()",
                .fence = "__threadfence()",
                .atomic_style = ATOMIC_CALL,
                .atomics = {"atomicAdd", "atomicSub", "atomicAnd", "atomicOr",
                            "atomicXor", "atomicExch", "atomicMin", "atomicMax",
                            "atomicCAS"},
                .math = {"sqrtf", "expf", "logf", "powf", "sinf", "cosf",
                         "tanf", "fabsf", "fminf", "fmaxf", "floorf", "ceilf",
                         "fmaf", "tanhf"},
                .asserts = ASSERT_CXX,
                .alignof_name = "alignof",
                .offsetof_name = NULL,
                .dyn_space = "",
                .dyn_style = "extern",
            },
        [RK_TARGET_OPENCL] =
            {
                .target = RK_TARGET_OPENCL,
                .name = "opencl",
                .language = "OpenCL C 1.2",
                .types = {"void", "bool", "int", "uint", "long", "ulong",
                          "float", "double"},
                .i64_suffix = "l",
                .u64_suffix = "ul",
                .kernel_decl = "__kernel void",
                .helper_decl = "",
                .global_space = "__global ",
                .shared_decl = "__local ",
                .const_decl = "__constant",
                .restrict_kw = "restrict",
                .index_fmt = {"(uint)get_local_id(#)", "(uint)get_group_id(#)",
                              "(uint)get_local_size(#)",
                              "(uint)get_num_groups(#)",
                              "(uint)get_global_id(#)"},
                .index_is_cast = true,
                .sync = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                .fence =
                    "mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                .atomic_style = ATOMIC_CALL,
                .atomics = {"atomic_add", "atomic_sub", "atomic_and",
                            "atomic_or", "atomic_xor", "atomic_xchg",
                            "atomic_min", "atomic_max", "atomic_cmpxchg"},
                .math = {"sqrt", "exp", "log", "pow", "sin", "cos", "tan",
                         "fabs", "fmin", "fmax", "floor", "ceil", "fma",
                         "tanh"},
                .asserts = ASSERT_TYPEDEF,
                .alignof_name = "__alignof__",
                .offsetof_name = "__builtin_offsetof",
                .explicit_builtin_casts = true,
                .dyn_space = "__local ",
                .dyn_style = "param",
            },
        [RK_TARGET_MSL] =
            {
                .target = RK_TARGET_MSL,
                .name = "msl",
                .language = "Metal Shading Language",
                .cxx = true,
                .types = {"void", "bool", "int", "uint", "long", "ulong",
                          "float", "double"},
                .i64_suffix = "l",
                .u64_suffix = "ul",
                .kernel_decl = "kernel void",
                .helper_decl = "",
                .global_space = "device ",
                .shared_decl = "threadgroup ",
                .const_decl = "constant",
                .restrict_kw = NULL,
                .index_fmt = {"rk_tid.$", "rk_bid.$", "rk_bdim.$", "rk_gdim.$",
                              "(rk_bid.$ * rk_bdim.$ + rk_tid.$)"},
                .sync = "metal::threadgroup_barrier(metal::mem_flags::mem_"
                        "device "
                        "| metal::mem_flags::mem_threadgroup)",
                .fence =
                    "metal::atomic_thread_fence(metal::mem_flags::mem_device, "
                    "metal::memory_order_seq_cst, "
                    "metal::thread_scope_device)",
                .atomic_style = ATOMIC_MSL,
                .atomics = {"metal::atomic_fetch_add_explicit",
                            "metal::atomic_fetch_sub_explicit",
                            "metal::atomic_fetch_and_explicit",
                            "metal::atomic_fetch_or_explicit",
                            "metal::atomic_fetch_xor_explicit",
                            "metal::atomic_exchange_explicit",
                            "metal::atomic_fetch_min_explicit",
                            "metal::atomic_fetch_max_explicit",
                            "rk_atomic_cas"},
                .math = {"metal::sqrt", "metal::exp", "metal::log",
                         "metal::pow", "metal::sin", "metal::cos", "metal::tan",
                         "metal::fabs", "metal::fmin", "metal::fmax",
                         "metal::floor", "metal::ceil", "metal::fma",
                         "metal::tanh"},
                .asserts = ASSERT_CXX,
                .alignof_name = "alignof",
                .offsetof_name = "__builtin_offsetof",
                .explicit_builtin_casts = true,
                .index_params = true,
                .const_ref_params = true,
                .struct_cond_copies = true,
                .dyn_space = "threadgroup ",
                .dyn_style = "threadgroup",
            },
};

/* ---- Printer state --------------------------------------------------------
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

static void puts_(printer_t *p, const char *s) { rk__strbuf_puts(p->out, s); }

static void printf_(printer_t *p, const char *fmt, ...) RK__PRINTF(2, 3);
static void printf_(printer_t *p, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    p->out->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    rk__strbuf_append(p->out, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    p->out->failed = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  rk__strbuf_append(p->out, big, (size_t)n);
  free(big);
}

static void indent(printer_t *p) {
  for (int i = 0; i < p->indent; ++i) puts_(p, "  ");
}

/* A user name as the target must spell it. */
static void name_(printer_t *p, const char *name) {
  rk__cg_put_name(p->out, p->t->target, name);
}

static void struct_name(printer_t *p, const cg_struct_t *st) {
  if (st->typedef_name) {
    name_(p, st->typedef_name);
  } else {
    puts_(p, "struct ");
    name_(p, st->tag);
  }
}

/* The base type of t (arrays stripped): "float", "msg_t". */
static void type_name(printer_t *p, const cg_type_t *t) {
  t = rk__cg_type_base(t);
  if (t->kind == CG_TY_STRUCT)
    struct_name(p, t->st);
  else if (t->kind == CG_TY_POS)
    puts_(p, "rk_stencil_pos_t");
  else
    puts_(p, p->t->types[t->kind]);
}

static void expr(printer_t *p, const cg_expr_t *e, int min_prec);

/* Whether lvalue e is in MSL's thread memory: a local, a helper's
 * parameter or an entry's by-value parameter that the kernel copies to a
 * local (it assigns to it), or a field or element of one. */
static bool in_thread_memory(const printer_t *p, const cg_expr_t *e) {
  for (;;) {
    if (e->kind == CG_E_MEMBER && !e->member.arrow)
      e = e->member.base;
    else if (e->kind == CG_E_INDEX)
      e = e->index.base;
    else
      break;
  }
  if (e->kind != CG_E_NAME || !e->name.var) return false;
  const cg_var_t *v = e->name.var;
  if (v->kind == CG_VAR_LOCAL) return true;
  return v->kind == CG_VAR_PARAM && v->type->kind != CG_TY_PTR && p->fn &&
         (p->fn->kind == CG_FN_HELPER || v->modified);
}

/* An operand of ?: (see struct_cond_copies). Calls and nested ?: are
 * values already, and thread memory needs no copy. */
static void cond_operand(printer_t *p, const cg_expr_t *e, int min_prec) {
  if (p->t->struct_cond_copies && e->type && e->type->kind == CG_TY_STRUCT &&
      e->kind != CG_E_CALL && e->kind != CG_E_COND && !in_thread_memory(p, e)) {
    puts_(p, "(");
    type_name(p, e->type);
    puts_(p, ")");
    min_prec = PREC_UNARY;
  }
  expr(p, e, min_prec);
}

/* ---- Expressions ----------------------------------------------------------
 */

static void int_literal(printer_t *p, uint64_t v, cg_type_kind_t k, bool hex) {
  rk__cg_emit_int_literal(p->out, v, k, hex, p->t->i64_suffix,
                          p->t->u64_suffix);
}

/* An implicit conversion spelled out: `(float)x`, or for a small integer
 * literal the literal in the new type (`1u`, `2.0f`). */
static void explicit_convert(printer_t *p, const cg_expr_t *e, int min_prec) {
  const cg_expr_t *x = e->convert.operand;
  cg_type_kind_t to = e->type->kind;
  if (x->kind == CG_E_INT && !x->paren && x->lit_int.value < (1u << 24)) {
    uint64_t v = x->lit_int.value;
    if (to == CG_TY_U32 || to == CG_TY_I32 || to == CG_TY_I64 ||
        to == CG_TY_U64) {
      int_literal(p, v, to, x->lit_int.hex);
      return;
    }
    if (to == CG_TY_F32 || to == CG_TY_F64) {
      printf_(p, "%llu.0%s", (unsigned long long)v, to == CG_TY_F32 ? "f" : "");
      return;
    }
  }
  if (min_prec > PREC_UNARY) puts_(p, "(");
  puts_(p, "(");
  type_name(p, e->type);
  puts_(p, ")");
  expr(p, x, PREC_UNARY);
  if (min_prec > PREC_UNARY) puts_(p, ")");
}

/* An argument of a built-in: conversions explicit where overloads would
 * otherwise pick another type. */
static void builtin_arg(printer_t *p, const cg_expr_t *e) {
  if (p->t->explicit_builtin_casts && e->kind == CG_E_CONVERT)
    explicit_convert(p, e, PREC_ASSIGN);
  else
    expr(p, e, PREC_ASSIGN);
}

static void index_builtin(printer_t *p, cg_index_kind_t kind, int axis,
                          int min_prec) {
  bool wrap = p->t->index_is_cast && min_prec > PREC_UNARY;
  if (wrap) puts_(p, "(");
  for (const char *s = p->t->index_fmt[kind]; *s; ++s) {
    char c = *s == '$' ? "xyz"[axis] : *s == '#' ? (char)('0' + axis) : *s;
    rk__strbuf_append(p->out, &c, 1);
  }
  if (wrap) puts_(p, ")");
}

static void atomic_call(printer_t *p, const cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  cg_atomic_op_t op = rk__cg_bi_atomic_op(b);
  const cg_expr_t *addr = e->call.args[0];
  const cg_var_t *root = rk__cg_index_root(addr->addr.operand);
  const char *space =
      root && (root->kind == CG_VAR_SHARED || root->kind == CG_VAR_DYNSHARED)
          ? "threadgroup"
          : "device";
  if (p->t->atomic_style == ATOMIC_C) {
    puts_(p, rk__cg_builtin_name(b));
  } else {
    puts_(p, p->t->atomics[op]);
    /* Metal's CAS helpers are per address space (rk_atomic_cas_device). */
    if (p->t->atomic_style == ATOMIC_MSL && op == CG_ATOMIC_CAS)
      printf_(p, "_%s", space);
  }
  puts_(p, "(");
  if (p->t->atomic_style == ATOMIC_MSL)
    printf_(p, "(%s metal::%s *)", space,
            rk__cg_bi_atomic_unsigned(b) ? "atomic_uint" : "atomic_int");
  puts_(p, "&");
  expr(p, addr->addr.operand, PREC_UNARY);
  for (uint32_t i = 1; i < e->call.nargs; ++i) {
    puts_(p, ", ");
    builtin_arg(p, e->call.args[i]);
  }
  if (p->t->atomic_style == ATOMIC_MSL && op != CG_ATOMIC_CAS)
    puts_(p, ", metal::memory_order_relaxed");
  puts_(p, ")");
}

/* A neighbour read: from the tile in block-shared memory on GPU targets,
 * from the buffer in C. */
static void stencil_read(printer_t *p, const cg_expr_t *e) {
  const cg_stencil_plan_t *s = p->fp->stencil;
  const cg_var_t *buf = e->call.buffer;
  const char *pos = s->pos->name;
  int d[CG_AXES] = {e->call.dx, e->call.dy, e->call.dz};
  if (s->staged) {
    puts_(p, CG_TILE_PREFIX);
    name_(p, buf->name);
    static const char *const kLocal[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (int axis = (int)s->dims - 1; axis >= 0; --axis) {
      printf_(p, "[%s", kLocal[axis]);
      if (d[axis] > 0) printf_(p, " + %d", d[axis]);
      if (d[axis] < 0) printf_(p, " - %d", -d[axis]);
      puts_(p, "]");
    }
    return;
  }
  name_(p, buf->name);
  puts_(p, "[");
  name_(p, pos);
  puts_(p, ".idx");
  /* idx + dz*nx*ny + dy*nx + dx */
  static const char *const kStride[] = {NULL, ".nx", ".nx * "};
  for (int axis = 2; axis >= 0; --axis) {
    int v = d[axis];
    if (!v) continue;
    puts_(p, v < 0 ? " - " : " + ");
    int m = v < 0 ? -v : v;
    if (axis == 0) {
      printf_(p, "%d", m);
      continue;
    }
    if (m != 1) printf_(p, "%d * ", m);
    name_(p, pos);
    if (axis == 1) {
      puts_(p, kStride[1]);
    } else {
      puts_(p, kStride[2]);
      name_(p, pos);
      puts_(p, ".ny");
    }
  }
  puts_(p, "]");
}

static void call(printer_t *p, const cg_expr_t *e, int min_prec) {
  cg_builtin_t b = e->call.builtin;
  if (b == CG_BI_NONE_) {
    const cg_func_t *callee = e->call.callee->def;
    name_(p, callee->name);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      expr(p, e->call.args[i], PREC_ASSIGN);
    }
    if (p->t->index_params && callee->uses_index)
      printf_(p, "%srk_tid, rk_bid, rk_bdim, rk_gdim",
              e->call.nargs ? ", " : "");
    puts_(p, ")");
    return;
  }
  if (rk__cg_bi_is_index(b)) {
    index_builtin(p, rk__cg_bi_index_kind(b), rk__cg_bi_axis(b), min_prec);
  } else if (b == CG_BI_SYNC_THREADS) {
    puts_(p, p->t->sync);
  } else if (b == CG_BI_THREAD_FENCE) {
    puts_(p, p->t->fence);
  } else if (rk__cg_bi_is_atomic(b)) {
    atomic_call(p, e);
  } else if (rk__cg_bi_is_math(b)) {
    puts_(p, p->t->math[b - CG_BI_SQRTF]);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      builtin_arg(p, e->call.args[i]);
    }
    puts_(p, ")");
  } else if (rk__cg_bi_is_stencil(b)) {
    stencil_read(p, e);
  }
}

static int prec_of(const printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
    case CG_E_NAME:
    case CG_E_INIT_LIST:
      return PREC_PRIMARY;
    case CG_E_CALL:
      return rk__cg_bi_is_index(e->call.builtin) && p->t->index_is_cast
                 ? PREC_UNARY
                 : PREC_POSTFIX;
    case CG_E_INDEX:
    case CG_E_MEMBER:
      return PREC_POSTFIX;
    case CG_E_INCDEC:
      return e->incdec.prefix ? PREC_UNARY : PREC_POSTFIX;
    case CG_E_UNARY:
    case CG_E_CAST:
    case CG_E_ADDR:
      return PREC_UNARY;
    case CG_E_BINARY:
      return PREC_BINARY0 + rk__cg_op_precedence(e->binary.op);
    case CG_E_COND:
      return PREC_COND;
    case CG_E_ASSIGN:
      return PREC_ASSIGN;
    case CG_E_CONVERT:
      return prec_of(p, e->convert.operand);
  }
  return PREC_PRIMARY;
}

static void expr(printer_t *p, const cg_expr_t *e, int min_prec) {
  if (e->kind == CG_E_CONVERT) {
    expr(p, e->convert.operand, min_prec);
    return;
  }
  int prec = prec_of(p, e);
  bool paren = e->paren || prec < min_prec;
  if (e->kind == CG_E_CALL && rk__cg_bi_is_index(e->call.builtin))
    paren = e->paren; /* index_builtin() handles precedence itself */
  if (paren) puts_(p, "(");
  int inner = paren ? PREC_ASSIGN : min_prec;
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
      rk__cg_emit_literal(p->out, e, p->t->i64_suffix, p->t->u64_suffix);
      break;
    case CG_E_NAME:
      name_(p, e->name.name);
      break;
    case CG_E_UNARY: {
      puts_(p, rk__cg_op_spelling(e->unary.op));
      const cg_expr_t *x = rk__cg_skip_converts(e->unary.operand);
      /* "- -x" must not become "--x". */
      bool sep = (e->unary.op == CG_OP_NEG || e->unary.op == CG_OP_PLUS) &&
                 !x->paren &&
                 ((x->kind == CG_E_UNARY &&
                   (x->unary.op == CG_OP_NEG || x->unary.op == CG_OP_PLUS)) ||
                  (x->kind == CG_E_INCDEC && x->incdec.prefix));
      expr(p, e->unary.operand, sep ? PREC_PRIMARY : PREC_UNARY);
      break;
    }
    case CG_E_BINARY: {
      int bp = PREC_BINARY0 + rk__cg_op_precedence(e->binary.op);
      expr(p, e->binary.lhs, bp);
      printf_(p, " %s ", rk__cg_op_spelling(e->binary.op));
      expr(p, e->binary.rhs, bp + 1);
      break;
    }
    case CG_E_ASSIGN:
      expr(p, e->assign.target, PREC_UNARY);
      printf_(
          p, " %s%s ",
          e->assign.op == CG_OP_NONE ? "" : rk__cg_op_spelling(e->assign.op),
          "=");
      expr(p, e->assign.value, PREC_ASSIGN);
      break;
    case CG_E_INCDEC:
      if (e->incdec.prefix) puts_(p, e->incdec.inc ? "++" : "--");
      expr(p, e->incdec.target, PREC_POSTFIX);
      if (!e->incdec.prefix) puts_(p, e->incdec.inc ? "++" : "--");
      break;
    case CG_E_COND:
      expr(p, e->cond.cond, PREC_COND + 1);
      puts_(p, " ? ");
      cond_operand(p, e->cond.then, PREC_ASSIGN);
      puts_(p, " : ");
      cond_operand(p, e->cond.other, PREC_COND);
      break;
    case CG_E_CAST:
      puts_(p, "(");
      type_name(p, e->type);
      puts_(p, ")");
      expr(p, e->cast.operand, PREC_UNARY);
      break;
    case CG_E_INDEX:
      expr(p, e->index.base, PREC_POSTFIX);
      puts_(p, "[");
      expr(p, e->index.index, PREC_ASSIGN);
      puts_(p, "]");
      break;
    case CG_E_MEMBER:
      expr(p, e->member.base, PREC_POSTFIX);
      puts_(p, e->member.arrow ? "->" : ".");
      if (e->member.field)
        name_(p, e->member.name);
      else
        puts_(p, e->member.name); /* rk_grid_pos_t fields */
      break;
    case CG_E_CALL:
      call(p, e, inner);
      break;
    case CG_E_ADDR:
      puts_(p, "&");
      expr(p, e->addr.operand, PREC_UNARY);
      break;
    case CG_E_INIT_LIST:
      puts_(p, "{");
      for (uint32_t i = 0; i < e->init.n; ++i) {
        if (i) puts_(p, ", ");
        const cg_expr_t *x = e->init.elems[i];
        /* C++ refuses narrowing in braces; spell conversions of anything
         * but a literal (and float -> integer always). */
        if (p->t->cxx && x->kind == CG_E_CONVERT) {
          const cg_expr_t *o = rk__cg_skip_converts(x);
          bool literal =
              o->kind == CG_E_INT || o->kind == CG_E_FLOAT ||
              o->kind == CG_E_BOOL ||
              (o->kind == CG_E_UNARY && o->unary.op == CG_OP_NEG &&
               (rk__cg_skip_converts(o->unary.operand)->kind == CG_E_INT ||
                rk__cg_skip_converts(o->unary.operand)->kind == CG_E_FLOAT));
          bool to_int = rk__cg_is_integer(x->type) && rk__cg_is_float(o->type);
          if (!literal || to_int) {
            explicit_convert(p, x, PREC_ASSIGN);
            continue;
          }
        }
        expr(p, x, PREC_ASSIGN);
      }
      puts_(p, "}");
      break;
    case CG_E_CONVERT:
      break;
  }
  if (paren) puts_(p, ")");
}

/* ---- Declarations ---------------------------------------------------------
 */

static void dims(printer_t *p, cg_expr_t *const *d, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    puts_(p, "[");
    expr(p, d[i], PREC_ASSIGN);
    puts_(p, "]");
  }
}

/* `const float *restrict x` with the target's address space. */
static void pointer_decl(printer_t *p, const cg_var_t *v) {
  puts_(p, p->t->global_space);
  if (v->type->elem_const) puts_(p, "const ");
  type_name(p, v->type->elem);
  puts_(p, " *");
  if (v->is_const) puts_(p, "const ");
  if (v->is_restrict && p->t->restrict_kw) printf_(p, "%s ", p->t->restrict_kw);
  name_(p, v->name);
}

static void value_decl(printer_t *p, const cg_var_t *v) {
  if (v->is_const) puts_(p, "const ");
  type_name(p, v->type);
  puts_(p, " ");
  name_(p, v->name);
  dims(p, v->dims, v->ndims);
}

static void param_decl(printer_t *p, const cg_var_t *v) {
  if (v->type->kind == CG_TY_PTR)
    pointer_decl(p, v);
  else
    value_decl(p, v);
}

/* ---- Statements -----------------------------------------------------------
 */

static void stmt(printer_t *p, const cg_stmt_t *s);

/* `T *p = (T *)rk_dynamic_shared()` in the target's spelling (the
 * checker makes it a declaration of its own). */
static void dyn_shared_decl(printer_t *p, const cg_var_t *v) {
  const char *space = p->t->dyn_space ? p->t->dyn_space : "";
  const char *c = v->type->elem_const ? "const " : "";
  printf_(p, "%s%s", space, c);
  type_name(p, v->type->elem);
  puts_(p, " *");
  if (v->is_const) puts_(p, "const ");
  name_(p, v->name);
  printf_(p, " = (%s%s", space, c);
  type_name(p, v->type->elem);
  puts_(p, p->t->dyn_space ? " *)rk_dyn_shared" : " *)rk_dynamic_shared()");
}

static void decl_inline(printer_t *p, const cg_stmt_t *s) {
  if (s->decl.n == 1 && s->decl.vars[0]->kind == CG_VAR_DYNSHARED) {
    dyn_shared_decl(p, s->decl.vars[0]);
    return;
  }
  for (uint32_t i = 0; i < s->decl.n; ++i) {
    const cg_var_t *v = s->decl.vars[i];
    if (i == 0) {
      if (v->kind == CG_VAR_SHARED) puts_(p, p->t->shared_decl);
      if (v->is_const) puts_(p, "const ");
      type_name(p, v->type);
      puts_(p, " ");
    } else {
      puts_(p, ", ");
    }
    name_(p, v->name);
    dims(p, v->dims, v->ndims);
    if (v->init) {
      puts_(p, " = ");
      expr(p, v->init, PREC_ASSIGN);
    }
  }
}

/* A statement as the body of if/else/loops: a block stays on the header's
 * line, anything else goes on its own indented line. */
static void body(printer_t *p, const cg_stmt_t *s) {
  if (s->kind == CG_S_BLOCK) {
    puts_(p, " ");
    stmt(p, s);
  } else {
    puts_(p, "\n");
    p->indent++;
    indent(p);
    stmt(p, s);
    p->indent--;
  }
}

static void block_items(printer_t *p, const cg_stmt_t *s) {
  for (uint32_t i = 0; i < s->block.n; ++i) {
    indent(p);
    stmt(p, s->block.items[i]);
    puts_(p, "\n");
  }
}

/* Prints one statement at the current position (the caller indented);
 * no trailing newline. */
static void stmt(printer_t *p, const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BLOCK:
      puts_(p, "{\n");
      p->indent++;
      block_items(p, s);
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    case CG_S_DECL:
      decl_inline(p, s);
      puts_(p, ";");
      return;
    case CG_S_EXPR:
      expr(p, s->expr, PREC_ASSIGN);
      puts_(p, ";");
      return;
    case CG_S_IF:
      puts_(p, "if (");
      expr(p, s->if_.cond, PREC_ASSIGN);
      puts_(p, ")");
      body(p, s->if_.then);
      if (s->if_.other) {
        if (s->if_.then->kind == CG_S_BLOCK) {
          puts_(p, " else");
        } else {
          puts_(p, "\n");
          indent(p);
          puts_(p, "else");
        }
        if (s->if_.other->kind == CG_S_IF) {
          puts_(p, " ");
          stmt(p, s->if_.other);
        } else {
          body(p, s->if_.other);
        }
      }
      return;
    case CG_S_WHILE:
      puts_(p, "while (");
      expr(p, s->loop.cond, PREC_ASSIGN);
      puts_(p, ")");
      body(p, s->loop.body);
      return;
    case CG_S_DO:
      puts_(p, "do");
      body(p, s->loop.body);
      if (s->loop.body->kind == CG_S_BLOCK) {
        puts_(p, " while (");
      } else {
        puts_(p, "\n");
        indent(p);
        puts_(p, "while (");
      }
      expr(p, s->loop.cond, PREC_ASSIGN);
      puts_(p, ");");
      return;
    case CG_S_FOR:
      puts_(p, "for (");
      if (s->for_.init) {
        if (s->for_.init->kind == CG_S_DECL)
          decl_inline(p, s->for_.init);
        else
          expr(p, s->for_.init->expr, PREC_ASSIGN);
      }
      puts_(p, ";");
      if (s->for_.cond) {
        puts_(p, " ");
        expr(p, s->for_.cond, PREC_ASSIGN);
      }
      puts_(p, ";");
      if (s->for_.step) {
        puts_(p, " ");
        expr(p, s->for_.step, PREC_ASSIGN);
      }
      puts_(p, ")");
      body(p, s->for_.body);
      return;
    case CG_S_SWITCH: {
      puts_(p, "switch (");
      expr(p, s->switch_.value, PREC_ASSIGN);
      puts_(p, ") {\n");
      const cg_stmt_t *b = s->switch_.body;
      p->indent++;
      for (uint32_t i = 0; i < b->block.n; ++i) {
        const cg_stmt_t *item = b->block.items[i];
        bool label = item->kind == CG_S_CASE || item->kind == CG_S_DEFAULT;
        if (!label) p->indent++;
        indent(p);
        stmt(p, item);
        puts_(p, "\n");
        if (!label) p->indent--;
      }
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    }
    case CG_S_CASE:
      puts_(p, "case ");
      expr(p, s->case_.value, PREC_COND);
      puts_(p, ":");
      return;
    case CG_S_DEFAULT:
      puts_(p, "default:");
      return;
    case CG_S_BREAK:
      puts_(p, "break;");
      return;
    case CG_S_CONTINUE:
      puts_(p, "continue;");
      return;
    case CG_S_RETURN:
      puts_(p, "return");
      if (s->expr) {
        puts_(p, " ");
        expr(p, s->expr, PREC_ASSIGN);
      }
      puts_(p, ";");
      return;
    case CG_S_EMPTY:
      puts_(p, ";");
      return;
  }
}

/* ---- File-scope items -----------------------------------------------------
 */

typedef enum layout_what {
  LAYOUT_SIZE,
  LAYOUT_ALIGN,
  LAYOUT_OFFSET
} layout_what_t;

/* One assertion of the layout: sizeof, alignof or offsetof == value. */
static void layout_assert(printer_t *p, const cg_struct_t *st,
                          layout_what_t what, const char *field,
                          uint32_t value) {
  switch (p->t->asserts) {
    case ASSERT_C11:
      puts_(p, "_Static_assert(");
      break;
    case ASSERT_CXX:
      puts_(p, "static_assert(");
      break;
    case ASSERT_TYPEDEF:
      printf_(p, "typedef char rk_layout_check_%d[(", p->nasserts++);
      break;
  }
  puts_(p, what == LAYOUT_SIZE    ? "sizeof("
           : what == LAYOUT_ALIGN ? p->t->alignof_name
                                  : p->t->offsetof_name);
  if (what != LAYOUT_SIZE) puts_(p, "(");
  struct_name(p, st);
  if (what == LAYOUT_OFFSET) {
    puts_(p, ", ");
    name_(p, field);
  }
  printf_(p, ") == %u", (unsigned)value);
  if (p->t->asserts == ASSERT_TYPEDEF) {
    puts_(p, ") ? 1 : -1];\n");
    return;
  }
  puts_(p, ", \"rk layout of ");
  puts_(p, st->typedef_name ? st->typedef_name : st->tag);
  if (field) printf_(p, ".%s", field);
  puts_(p, "\");\n");
}

static void struct_def(printer_t *p, const cg_struct_t *st) {
  if (st->typedef_name) puts_(p, "typedef ");
  puts_(p, "struct ");
  if (st->tag) {
    name_(p, st->tag);
    puts_(p, " ");
  }
  puts_(p, "{\n");
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    puts_(p, "  ");
    type_name(p, f->type);
    puts_(p, " ");
    name_(p, f->name);
    dims(p, f->dims, f->ndims);
    puts_(p, ";\n");
  }
  puts_(p, "}");
  if (st->typedef_name) {
    puts_(p, " ");
    name_(p, st->typedef_name);
  }
  puts_(p, ";\n");
  /* The layout the checker computed with C's rules; every target must
   * agree, or the host and the device would disagree about the bytes.
   * Without offsetof (NVRTC has none unless host headers are given), the
   * offsets follow from the asserted sizes and alignments. */
  layout_assert(p, st, LAYOUT_SIZE, NULL, st->size);
  layout_assert(p, st, LAYOUT_ALIGN, NULL, st->align);
  if (p->t->offsetof_name)
    for (uint32_t i = 0; i < st->nfields; ++i)
      layout_assert(p, st, LAYOUT_OFFSET, st->fields[i].name,
                    st->fields[i].offset);
}

static const char *kIndexParams =
    "uint3 rk_tid [[thread_position_in_threadgroup]],\n"
    "    uint3 rk_bid [[threadgroup_position_in_grid]],\n"
    "    uint3 rk_bdim [[threads_per_threadgroup]],\n"
    "    uint3 rk_gdim [[threadgroups_per_grid]]";

/* The int32_t status buffer of an int handler's kernel and of every batch
 * entry (lower.h). */
static void status_decl(printer_t *p) {
  printf_(p, "%s%s *" CG_HANDLER_STATUS_NAME, p->t->global_space,
          p->t->types[CG_TY_I32]);
}

/* With buffer offsets (OpenCL), pointer launch parameter `name` of element
 * type `elem` (printed by the callback) is declared as the buffer
 * `rk_pb_<name>` and the byte offset `ulong rk_po_<name>`; the prologue
 * (printed on the line of the body's brace, so line numbers stay put)
 * declares `name` itself at that offset. */
typedef void (*elem_printer_fn)(printer_t *p, const cg_var_t *v);

static void elem_of_var(printer_t *p, const cg_var_t *v) {
  if (v->type->elem_const) puts_(p, "const ");
  type_name(p, v->type->elem);
}

static void elem_i32(printer_t *p, const cg_var_t *v) {
  (void)v;
  puts_(p, p->t->types[CG_TY_I32]);
}

static void offset_param_decl(printer_t *p, const cg_var_t *v,
                              elem_printer_fn elem, const char *name) {
  puts_(p, p->t->global_space);
  elem(p, v);
  printf_(p, " *rk_pb_%s, ulong rk_po_%s", name, name);
}

static void offset_prologue(printer_t *p, const cg_var_t *v,
                            elem_printer_fn elem, const char *name) {
  puts_(p, " ");
  puts_(p, p->t->global_space);
  elem(p, v);
  puts_(p, " *");
  if (v && v->is_const) puts_(p, "const ");
  if (v && v->is_restrict && p->t->restrict_kw)
    printf_(p, "%s ", p->t->restrict_kw);
  printf_(p, "%s = (%s", name, p->t->global_space);
  elem(p, v);
  printf_(p, " *)((%suchar *)rk_pb_%s + rk_po_%s);", p->t->global_space, name,
          name);
}

/* The printed name of pointer parameter v. */
static const char *param_name(printer_t *p, const cg_var_t *v, char *buf,
                              size_t cap) {
  snprintf(
      buf, cap, "%s%.200s",
      rk__cg_target_reserves(p->t->target, v->name) ? CG_RENAME_PREFIX : "",
      v->name);
  return buf;
}

/* Launch parameter i of kernel ep; i == ep->nparams is OpenCL's hidden
 * __local buffer for rk_dynamic_shared(). */
static void launch_param_decl(printer_t *p, const cg_entry_plan_t *ep,
                              uint32_t i) {
  char buf[256];
  if (i == ep->nparams) {
    puts_(p, "__local uchar *rk_dyn_shared");
    return;
  }
  const cg_launch_param_t *lp = &ep->params[i];
  switch (lp->kind) {
    case CG_LAUNCH_PARAM:
      if (p->buffer_offsets && lp->var->type->kind == CG_TY_PTR)
        offset_param_decl(p, lp->var, elem_of_var,
                          param_name(p, lp->var, buf, sizeof buf));
      else
        param_decl(p, lp->var);
      return;
    case CG_LAUNCH_STATUS:
      if (p->buffer_offsets)
        offset_param_decl(p, NULL, elem_i32, CG_HANDLER_STATUS_NAME);
      else
        status_decl(p);
      return;
    case CG_LAUNCH_COUNT:
      printf_(p, "%s " CG_BATCH_COUNT_NAME, p->t->types[CG_TY_U32]);
      return;
  }
}

/* MSL: the launch parameters at [[buffer(i)]], one per line, then the
 * thread indices; by-value parameters the kernel assigns are copied. */
static void msl_entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  printf_(p, "%s %s(", p->t->kernel_decl, ep->name);
  uint32_t slot = 0;
  for (; slot < ep->nparams; ++slot) {
    const cg_launch_param_t *lp = &ep->params[slot];
    const cg_var_t *v = lp->var;
    puts_(p, slot ? ",\n    " : "\n    ");
    if (lp->kind == CG_LAUNCH_STATUS) {
      status_decl(p);
    } else if (lp->kind == CG_LAUNCH_COUNT) {
      printf_(p, "constant %s &" CG_BATCH_COUNT_NAME, p->t->types[CG_TY_U32]);
    } else if (v->type->kind == CG_TY_PTR) {
      pointer_decl(p, v);
    } else {
      puts_(p, "constant ");
      type_name(p, v->type);
      puts_(p, " &");
      if (v->modified) puts_(p, "rk_arg_");
      name_(p, v->name);
    }
    printf_(p, " [[buffer(%u)]]", (unsigned)slot);
  }
  puts_(p, slot ? ",\n    " : "\n    ");
  if (ep->dyn_shared)
    puts_(p, "threadgroup uchar *rk_dyn_shared [[threadgroup(0)]],\n    ");
  printf_(p, "%s) {\n", kIndexParams);
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (!v || v->type->kind == CG_TY_PTR || !v->modified) continue;
    puts_(p, "  ");
    type_name(p, v->type);
    puts_(p, " ");
    name_(p, v->name);
    puts_(p, " = rk_arg_");
    name_(p, v->name);
    puts_(p, ";\n");
  }
}

/* The signature of kernel ep, up to and including the opening brace and
 * the line's end, then what the body needs before its statements. */
static void entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  if (p->t->const_ref_params) {
    msl_entry_signature(p, ep);
    return;
  }
  /* OpenCL: the dynamic shared memory is a hidden parameter after the
   * listed ones (set with clSetKernelArg(k, nparams, bytes, NULL)). */
  const char *dyn = ep->dyn_shared ? p->t->dyn_style : NULL;
  uint32_t end = ep->nparams;
  if (dyn && strcmp(dyn, "param") == 0) end++;
  /* One line if it fits in 80 columns, else one parameter per line. */
  rk__strbuf_t line;
  rk__strbuf_init(&line);
  printer_t q = *p;
  q.out = &line;
  printf_(&q, "%s %s(", p->t->kernel_decl, ep->name);
  for (uint32_t i = 0; i < end; ++i) {
    if (i) puts_(&q, ", ");
    launch_param_decl(&q, ep, i);
  }
  if (end == 0 && !p->t->cxx) puts_(&q, "void");
  puts_(&q, ") {");
  if (line.failed) {
    p->out->failed = true;
  } else if (line.len > 80 && end > 1) {
    printf_(p, "%s %s(", p->t->kernel_decl, ep->name);
    for (uint32_t i = 0; i < end; ++i) {
      puts_(p, i ? ",\n    " : "\n    ");
      launch_param_decl(p, ep, i);
    }
    puts_(p, ") {");
  } else {
    rk__strbuf_append(p->out, line.data, line.len);
  }
  rk__strbuf_free(&line);
  if (p->buffer_offsets) {
    char buf[256];
    for (uint32_t i = 0; i < ep->nparams; ++i) {
      const cg_launch_param_t *lp = &ep->params[i];
      if (lp->kind == CG_LAUNCH_STATUS)
        offset_prologue(p, NULL, elem_i32, CG_HANDLER_STATUS_NAME);
      else if (lp->kind == CG_LAUNCH_PARAM && lp->var->type->kind == CG_TY_PTR)
        offset_prologue(p, lp->var, elem_of_var,
                        param_name(p, lp->var, buf, sizeof buf));
    }
  }
  puts_(p, "\n");
  if (dyn && strcmp(dyn, "extern") == 0)
    puts_(p,
          "  extern __shared__ __align__(16) unsigned char "
          "rk_dyn_shared[];\n");
}

/* A helper's signature; `name` (NULL: the function's own, spelled for the
 * target) is the name printed. */
static void helper_signature(printer_t *p, const cg_func_t *fn,
                             const char *name) {
  puts_(p, "static ");
  if (fn->is_inline) puts_(p, "inline ");
  if (*p->t->helper_decl) printf_(p, "%s ", p->t->helper_decl);
  type_name(p, fn->ret);
  puts_(p, " ");
  if (name)
    puts_(p, name);
  else
    name_(p, fn->name);
  puts_(p, "(");
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    if (i) puts_(p, ", ");
    param_decl(p, fn->params[i]);
  }
  const cg_func_t *def = fn->def ? fn->def : fn;
  if (p->t->index_params && def->uses_index)
    printf_(p, "%suint3 rk_tid, uint3 rk_bid, uint3 rk_bdim, uint3 rk_gdim",
            fn->nparams ? ", " : "");
  if (fn->nparams == 0 && !(p->t->index_params && def->uses_index) &&
      !p->t->cxx)
    puts_(p, "void");
  puts_(p, ")");
}

static void function_body(printer_t *p, const cg_stmt_t *b) {
  p->indent = 1;
  block_items(p, b);
  p->indent = 0;
}

/* An index built-in in generated code. */
static void idx(printer_t *p, cg_index_kind_t kind, int axis) {
  index_builtin(p, kind, axis, PREC_UNARY);
}

/* Staged cell rk_i along axis a: "rk_i % 18", "rk_i / 18 % 18". */
static void cell(printer_t *p, const cg_stencil_plan_t *s, int a) {
  rk__cg_emit_stencil_cell(p->out, s, a);
}

static void stencil_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  const cg_stencil_plan_t *s = fp->stencil;
  const cg_var_t *pos = s->pos;
  const uint32_t D = s->dims, H = s->halo;
  const uint32_t *T = s->tile;

  entry_signature(p, &fp->entries[0]);
  for (uint32_t i = 0; s->staged && i < s->ntiled; ++i) {
    const cg_var_t *b = s->tiled[i];
    printf_(p, "  %s", p->t->shared_decl);
    type_name(p, b->type->elem);
    puts_(p, " " CG_TILE_PREFIX);
    name_(p, b->name);
    for (int a = (int)D - 1; a >= 0; --a) printf_(p, "[%u]", s->full[a]);
    puts_(p, ";\n");
  }
  /* The position: global coordinates, the domain, the linear index. */
  puts_(p, "  rk_stencil_pos_t ");
  name_(p, pos->name);
  puts_(p, ";\n");
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    printf_(p, "  ");
    name_(p, pos->name);
    printf_(p, ".%c = ", "xyz"[a]);
    if (a >= D) {
      puts_(p, "0;\n");
      continue;
    }
    if (s->blocked) {
      puts_(p, "(int)(");
      idx(p, CG_INDEX_BLOCK, (int)a);
      printf_(p, " * %uu + ", (unsigned)T[a]);
      idx(p, CG_INDEX_THREAD, (int)a);
      puts_(p, ");\n");
    } else {
      puts_(p, "(int)");
      idx(p, CG_INDEX_GLOBAL, (int)a);
      puts_(p, ";\n");
    }
  }
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    printf_(p, "  ");
    name_(p, pos->name);
    printf_(p, ".n%c = ", "xyz"[a]);
    if (a < D)
      name_(p, s->extent[a]->name);
    else
      puts_(p, "1");
    puts_(p, ";\n");
  }

  if (s->staged) {
    /* Every thread of the block loads part of the tile plus halo of each
     * buffer read through neighbour functions; outside the domain the tile
     * holds 0 (never read: the body runs for interior points only). */
    printf_(p, "  /* Load the %ux%u", (unsigned)T[0], (unsigned)T[1]);
    if (D == 3) printf_(p, "x%u", (unsigned)T[2]);
    printf_(p, " tile and its halo of %u. */\n", (unsigned)H);
    puts_(p, "  for (int rk_i = (int)(");
    if (D == 3) {
      puts_(p, "(");
      idx(p, CG_INDEX_THREAD, 2);
      printf_(p, " * %uu + ", (unsigned)T[1]);
      idx(p, CG_INDEX_THREAD, 1);
      printf_(p, ") * %uu + ", (unsigned)T[0]);
    } else {
      idx(p, CG_INDEX_THREAD, 1);
      printf_(p, " * %uu + ", (unsigned)T[0]);
    }
    idx(p, CG_INDEX_THREAD, 0);
    printf_(p, "); rk_i < %u; rk_i += %u) {\n", (unsigned)s->cells,
            (unsigned)s->threads);
    static const char *const kG[] = {"rk_gx", "rk_gy", "rk_gz"};
    for (uint32_t a = 0; a < D; ++a) {
      printf_(p, "    int %s = (int)(", kG[a]);
      idx(p, CG_INDEX_BLOCK, (int)a);
      printf_(p, " * %uu) + ", (unsigned)T[a]);
      cell(p, s, (int)a);
      printf_(p, " - %u;\n", (unsigned)H);
    }
    puts_(p, "    bool rk_in = ");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " && ");
      printf_(p, "%s >= 0 && %s < ", kG[a], kG[a]);
      name_(p, s->extent[a]->name);
    }
    puts_(p, ";\n");
    for (uint32_t i = 0; i < s->ntiled; ++i) {
      const cg_var_t *b = s->tiled[i];
      puts_(p, "    " CG_TILE_PREFIX);
      name_(p, b->name);
      for (int a = (int)D - 1; a >= 0; --a) {
        puts_(p, "[");
        cell(p, s, a);
        puts_(p, "]");
      }
      puts_(p, " = rk_in ? ");
      name_(p, b->name);
      puts_(p, "[");
      if (D == 3) {
        puts_(p, "(rk_gz * ");
        name_(p, s->extent[1]->name);
        puts_(p, " + rk_gy) * ");
      } else {
        puts_(p, "rk_gy * ");
      }
      name_(p, s->extent[0]->name);
      puts_(p, " + rk_gx] : (");
      type_name(p, b->type->elem);
      puts_(p, ")0;\n");
    }
    puts_(p, "  }\n  ");
    puts_(p, p->t->sync);
    puts_(p, ";\n");
  }
  if (s->blocked) {
    /* Threads beyond the tile (a block larger than the tile) only helped
     * to load it. */
    puts_(p, "  if (");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " || ");
      idx(p, CG_INDEX_THREAD, (int)a);
      printf_(p, " >= %uu", (unsigned)T[a]);
    }
    puts_(p, ") return;\n");
  }
  /* Only interior points run the body. */
  rk__cg_emit_stencil_interior(p->out, p->t->target, s, ") return;\n");
  if (s->staged) {
    static const char *const kL[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (uint32_t a = 0; a < D; ++a) {
      printf_(p, "  const int %s = (int)", kL[a]);
      idx(p, CG_INDEX_THREAD, (int)a);
      printf_(p, " + %u;\n", (unsigned)H);
    }
  }
  puts_(p, "\n");
  function_body(p, fn->body);
  puts_(p, "}\n");
}

/* if (global thread 0), the condition that opens a handler's kernels. */
static void thread_zero(printer_t *p) {
  puts_(p, "  if (");
  for (int a = 0; a < CG_AXES; ++a) {
    if (a) puts_(p, " && ");
    idx(p, CG_INDEX_GLOBAL, a);
    puts_(p, " == 0");
  }
  puts_(p, ")");
}

/* rk_handle_<name>(args) with message index `m` (NULL: the buffers as
 * they are, i.e. message 0). The state is always the one element. */
static void handler_call(printer_t *p, const cg_func_plan_t *fp,
                         const char *m) {
  const cg_func_t *fn = fp->fn;
  const cg_handler_plan_t *h = fp->handler;
  puts_(p, h->handle_name);
  puts_(p, "(");
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    bool message = m && (v == h->in || v == h->out);
    if (i) puts_(p, ", ");
    if (message) puts_(p, "&");
    name_(p, v->name);
    if (message) printf_(p, "[%s]", m);
  }
  if (p->t->index_params && fn->uses_index)
    printf_(p, "%srk_tid, rk_bid, rk_bdim, rk_gdim", fn->nparams ? ", " : "");
  puts_(p, ")");
}

/* The name of type t as the target spells it, printed into `buf` (which
 * the caller frees). */
static const char *type_text(const printer_t *p, const cg_type_t *t,
                             rk__strbuf_t *buf) {
  printer_t q = *p;
  q.out = buf;
  type_name(&q, t);
  if (buf->failed || !buf->data) {
    p->out->failed = true;
    return "";
  }
  return buf->data;
}

/* The handler's persistent actor kernel (CUDA), after the prelude the
 * first time. */
static void actor_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_handler_plan_t *h = fp->handler;
  if (!p->actor_prelude) {
    rk__cg_emit_cuda_actor_prelude(p->out);
    p->actor_prelude = true;
  }
  rk__strbuf_t types[3];
  for (int i = 0; i < 3; ++i) rk__strbuf_init(&types[i]);
  cg_actor_desc_t d = {fp->fn->name, NULL, NULL, NULL, h->status};
  d.in_type = type_text(p, h->in->type->elem, &types[0]);
  d.out_type = type_text(p, h->out->type->elem, &types[1]);
  if (h->state) d.state_type = type_text(p, h->state->type->elem, &types[2]);
  rk__cg_emit_cuda_actor_kernel(p->out, &d);
  for (int i = 0; i < 3; ++i) rk__strbuf_free(&types[i]);
}

static void handler_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_handler_plan_t *h = fp->handler;
  /* The body, callable by ring templates as rk_handle_<name>. */
  helper_signature(p, fp->fn, h->handle_name);
  puts_(p, " {\n");
  function_body(p, fp->fn->body);
  puts_(p, "}\n\n");
  for (uint32_t k = 0; k < fp->nentries; ++k) {
    const cg_entry_plan_t *ep = &fp->entries[k];
    entry_signature(p, ep);
    thread_zero(p);
    if (ep->form == CG_FORM_HANDLER) {
      /* One message per launch, handled by global thread 0; an int
       * handler's return value goes to the caller through rk_status. */
      puts_(p, "\n    ");
      if (h->status) puts_(p, CG_HANDLER_STATUS_NAME "[0] = ");
      handler_call(p, fp, NULL);
      puts_(p, ";\n}\n\n");
      continue;
    }
    /* rk_count messages per launch, in order, handled by global thread
     * 0. */
    printf_(p,
            " {\n    for (%s rk_m = 0; rk_m < " CG_BATCH_COUNT_NAME
            "; ++rk_m) {\n      ",
            p->t->types[CG_TY_U32]);
    if (h->status) {
      puts_(p, CG_HANDLER_STATUS_NAME "[rk_m] = ");
      handler_call(p, fp, "rk_m");
      puts_(p, ";\n");
    } else {
      handler_call(p, fp, "rk_m");
      puts_(p, ";\n      " CG_HANDLER_STATUS_NAME "[rk_m] = 0;\n");
    }
    puts_(p, "    }\n  }\n}\n");
  }
  if (h->actor) actor_entry(p, fp);
}

static void function(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  p->fn = fn;
  p->fp = fp;
  if (fn->kind != CG_FN_HELPER && !fp->selected) return;
  puts_(p, "\n");
  switch (fn->kind) {
    case CG_FN_HELPER:
      helper_signature(p, fn, NULL);
      if (!fn->body) {
        puts_(p, ";\n");
        return;
      }
      puts_(p, " {\n");
      function_body(p, fn->body);
      puts_(p, "}\n");
      return;
    case CG_FN_KERNEL:
      entry_signature(p, &fp->entries[0]);
      function_body(p, fn->body);
      puts_(p, "}\n");
      return;
    case CG_FN_STENCIL:
      stencil_entry(p, fp);
      return;
    case CG_FN_HANDLER:
      handler_entry(p, fp);
      return;
  }
}

/* ---- Prelude --------------------------------------------------------------
 */

/* rk_atomic_cas_* for Metal: a strong compare-and-swap that returns the old
 * value, for each address space and element type. */
static void msl_cas_helpers(printer_t *p) {
  static const char *const kSpaces[] = {"device", "threadgroup"};
  static const char *const kTypes[][2] = {{"atomic_int", "int"},
                                          {"atomic_uint", "uint"}};
  puts_(p,
        "\n/* rk_atomic_cas_*: compare-and-swap returning the old value. Metal "
        "has only\n * the weak exchange, which may fail spuriously: retry "
        "until it succeeds or\n * sees another value. */\n");
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t)
      printf_(
          p,
          "static inline %s rk_atomic_cas_%s(%s metal::%s *p, %s expected,\n"
          "    %s desired) {\n"
          "  %s old = expected;\n"
          "  while (!metal::atomic_compare_exchange_weak_explicit(\n"
          "             p, &old, desired, metal::memory_order_relaxed,\n"
          "             metal::memory_order_relaxed) &&\n"
          "         old == expected) {\n"
          "  }\n"
          "  return old;\n"
          "}\n",
          kTypes[t][1], kSpaces[s], kSpaces[s], kTypes[t][0], kTypes[t][1],
          kTypes[t][1], kTypes[t][1]);
}

static void header_comment(printer_t *p, const char *source_name) {
  printf_(p, "/* Generated by rk for target %s (%s) from\n *   ", p->t->name,
          p->t->language);
  /* The name goes into a comment: keep it printable and unable to close
   * the comment. */
  for (const char *s = source_name; *s && s - source_name < 200; ++s) {
    char c = *s;
    if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
    if (c == '/' && s > source_name && s[-1] == '*') c = '?';
    rk__strbuf_append(p->out, &c, 1);
  }
  puts_(p,
        "\n * Do not edit: change the kernel source and transpile again. */\n");
}

static void prelude(printer_t *p) {
  switch (p->t->target) {
    case RK_TARGET_C:
      puts_(p, "#include <rk/kernel.h>\n");
      break;
    case RK_TARGET_OPENCL:
      if (p->plan->unit->uses_f64)
        puts_(p, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
      break;
    case RK_TARGET_MSL:
      puts_(p, "#include <metal_stdlib>\n");
      if (p->plan->unit->uses_cas) msl_cas_helpers(p);
      break;
    default:
      break;
  }
  if (p->plan->unit->has_stencil)
    puts_(p,
          "\n/* The position of a stencil point: global coordinates, the "
          "linear index\n * idx = (z * ny + y) * nx + x and the domain size. "
          "*/\n"
          "typedef struct rk_stencil_pos {\n"
          "  int x, y, z, idx, nx, ny, nz;\n"
          "} rk_stencil_pos_t;\n");
}

void rk__cg_emit_c_family(const cg_plan_t *plan, rk_target_t target,
                          const cg_emit_options_t *options, rk__strbuf_t *out) {
  const cg_unit_t *unit = plan->unit;
  printer_t p;
  memset(&p, 0, sizeof p);
  p.t = &kTargets[target];
  p.plan = plan;
  p.out = out;
  p.buffer_offsets = options->buffer_offsets && target == RK_TARGET_OPENCL;
  header_comment(&p, options->source_name ? options->source_name : "<source>");
  prelude(&p);
  bool after_defines = true;
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    switch (it->kind) {
      case CG_ITEM_STRUCT:
        puts_(&p, "\n");
        struct_def(&p, it->st);
        after_defines = true;
        break;
      case CG_ITEM_MACRO:
      case CG_ITEM_CONST: {
        if (after_defines) puts_(&p, "\n");
        after_defines = false;
        const cg_var_t *v = it->var;
        if (it->kind == CG_ITEM_MACRO) {
          puts_(&p, "#define ");
          name_(&p, v->name);
          puts_(&p, " ");
        } else {
          printf_(&p, "%s ", p.t->const_decl);
          type_name(&p, v->type);
          puts_(&p, " ");
          name_(&p, v->name);
          puts_(&p, " = ");
        }
        expr(&p, v->init, PREC_ASSIGN);
        puts_(&p, it->kind == CG_ITEM_MACRO ? "\n" : ";\n");
        break;
      }
      case CG_ITEM_FUNC:
        function(&p, &plan->funcs[i]);
        after_defines = true;
        break;
    }
  }
}
