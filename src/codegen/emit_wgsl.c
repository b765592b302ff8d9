/* The WGSL printer: WebGPU Shading Language from the checked tree (emit.h).
 *
 * WGSL is not C, so this is a sibling of the C-family printer rather than a
 * row of its table. What it does differently (docs/kernel-language.md,
 * "WGSL", is the user-facing description):
 *
 *   - Resources live at module scope. Buffer parameters of an entry point
 *     are `var<storage, read|read_write>` runtime-sized arrays at
 *     @group(0) @binding(0..k-1) in parameter order; all by-value
 *     parameters are packed, in order, into one struct (rk_params_t) read
 *     from a `var<storage, read>` at the next binding, and copied into
 *     locals of the same names at entry. RK_SHARED arrays and stencil tiles
 *     are `var<workgroup>`. A module with several entry points prefixes
 *     these names with the entry's (`saxpy_x`); any clash of module-scope
 *     names is refused.
 *   - The workgroup size is pipeline-overridable: `override rk_wg_x`,
 *     rk_wg_y, rk_wg_z, set by the backend (pipeline constants by those
 *     names) from the launch's block size; rk_block_dim_*() reads them.
 *   - Thread indices are entry parameters (rk_tid, rk_bid, rk_gdim) that,
 *     as in MSL, are passed on to helpers that use index built-ins; this
 *     keeps them visible to WGSL's uniformity analysis (a var<private>
 *     would not be).
 *   - Every conversion is spelled (`f32(i)`), shift amounts are u32, ?: is
 *     select() when its branches are side-effect free scalars and an if
 *     with a temporary otherwise, C's switch fallthrough is lowered by
 *     duplicating the bodies fallen into, do/while is loop/continuing. A
 *     function returning a value whose end WGSL cannot rule out (C's
 *     `while (true) { ... return x; }` with nothing after the loop) ends in
 *     `return T();`, a value no program that C defines uses.
 *   - Elements that an atomic touches make their whole buffer or shared
 *     array atomic<i32>/atomic<u32>; every other access to it goes through
 *     atomicLoad/atomicStore. Compare-and-swap is a helper per array that
 *     retries atomicCompareExchangeWeak until it succeeds or sees another
 *     value (strong, as on the other targets).
 *   - Stencils and handlers are printed from the same plan as on the
 *     C-family GPU targets (lower.h); an int handler's rk_status buffer is
 *     bound after its message buffers. rk_handle_<name> takes the message index
 * rk_m and reads in[rk_m] / out[rk_m] (the state is element 0): the handler's
 * entry passes 0u, its batch entry rk_batch_<name> loops over rk_count
 *     messages. Both entries share the module-scope buffers (bindings
 *     0..k-1, rk_status at k); the batch entry adds rk_status (for a void
 *     handler) and a struct holding rk_count at k + 1.
 *
 * Refusals are compile errors with a location (rk__cg_error), raised while
 * printing: codegen.c runs this printer under the compilation's error exit.
 * An entry point may keep the name of a WGSL built-in function it shadows
 * only if the output never calls that built-in: every built-in call goes
 * through builtin_call(), which notes it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* Output larger than this means runaway duplication (switch fallthrough). */
enum { WGSL_MAX_OUTPUT = 32 << 20 };

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
  const cg_func_t *shadowing[8];
  int nshadowing;
  cg_map_t called; /* WGSL built-in functions the output calls -> "" */
} printer_t;

static void puts_(printer_t *p, const char *s) { rk__strbuf_puts(p->out, s); }

static void printf_(printer_t *p, const char *fmt, ...) RK__PRINTF(2, 3);
static void printf_(printer_t *p, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof small) {
    p->out->failed = true; /* every format here is short */
    return;
  }
  rk__strbuf_append(p->out, small, (size_t)n);
}

static void indent(printer_t *p) {
  for (int i = 0; i < p->indent; ++i) puts_(p, "  ");
}

/* `name(`: a call of WGSL built-in function `name`, noted as called. */
static void builtin_call(printer_t *p, const char *name) {
  rk__cg_map_put(p->ctx, &p->called, name, (void *)"");
  puts_(p, name);
  puts_(p, "(");
}

/* A user name as WGSL must spell it. */
static void name_(printer_t *p, const char *name) {
  rk__cg_put_name(p->out, RK_TARGET_WGSL, name);
}

static const char *spelled(printer_t *p, const char *name) {
  return rk__cg_spelled_name(p->ctx, RK_TARGET_WGSL, name);
}

/* Map keys for nodes: their address as text (in buf, 32 bytes). */
static const char *ptr_key(char *buf, const void *ptr) {
  snprintf(buf, 32, "%p", ptr);
  return buf;
}

static const char *ptr_key_dup(printer_t *p, const void *ptr) {
  char buf[32];
  ptr_key(buf, ptr);
  return rk__cg_strndup(p->ctx, buf, strlen(buf));
}

/* Registers a module-scope name; a second declaration is refused. */
static void declare(printer_t *p, const char *name, cg_loc_t loc) {
  if (rk__cg_map_get(&p->module_names, name))
    rk__cg_error(p->ctx, loc,
                 "'%s' would be declared twice at WGSL module scope (buffers "
                 "and shared arrays are module-scope variables there, beside "
                 "functions, structs and constants): rename one, or "
                 "transpile one entry point at a time (options.entry)",
                 name);
  rk__cg_map_put(p->ctx, &p->module_names, name, (void *)"");
}

/* The module-scope name of a buffer parameter or shared array of the
 * current entry; an rk_dynamic_shared() pointer names the workgroup array
 * rk_dyn_shared. */
static const char *resource_string(printer_t *p, const cg_var_t *v) {
  const char *own = v->kind == CG_VAR_DYNSHARED ? "rk_dyn_shared" : v->name;
  if (!(p->multi && p->entry))
    return v->kind == CG_VAR_DYNSHARED ? own : spelled(p, own);
  size_t a = strlen(p->entry->name), b = strlen(own);
  char *s = rk__cg_alloc(p->ctx, a + b + 2);
  memcpy(s, p->entry->name, a);
  s[a] = '_';
  memcpy(s + a + 1, own, b + 1);
  return s;
}

static void resource_name(printer_t *p, const cg_var_t *v) {
  puts_(p, resource_string(p, v));
}

/* Variables that live at module scope: shared arrays and the dynamic shared
 * memory (their declaration statements print nothing in the body). */
static bool is_module_var(const cg_var_t *v) {
  return v->kind == CG_VAR_SHARED || v->kind == CG_VAR_DYNSHARED;
}

static bool is_resource(const cg_var_t *v) {
  return (v->kind == CG_VAR_PARAM && v->type->kind == CG_TY_PTR) ||
         is_module_var(v);
}

static bool is_atomic_var(printer_t *p, const cg_var_t *v) {
  char key[32];
  return v && p->atomic_vars.count &&
         rk__cg_map_get(&p->atomic_vars, ptr_key(key, v)) != NULL;
}

static void struct_name(printer_t *p, const cg_struct_t *st) {
  name_(p, st->typedef_name ? st->typedef_name : st->tag);
}

static const char *const kScalar[] = {
    [CG_TY_VOID] = "void", [CG_TY_BOOL] = "bool", [CG_TY_I32] = "i32",
    [CG_TY_U32] = "u32",   [CG_TY_I64] = "i64",   [CG_TY_U64] = "u64",
    [CG_TY_F32] = "f32",   [CG_TY_F64] = "f64",
};

/* A type: "f32", "array<array<i32, 3>, 2>", "particle_t"; atomic wraps the
 * innermost element in atomic<>. */
static void type_(printer_t *p, const cg_type_t *t, bool atomic) {
  switch (t->kind) {
    case CG_TY_ARRAY:
      puts_(p, "array<");
      type_(p, t->elem, atomic);
      printf_(p, ", %u>", (unsigned)t->count);
      return;
    case CG_TY_STRUCT:
      struct_name(p, t->st);
      return;
    case CG_TY_POS:
      puts_(p, "rk_stencil_pos_t");
      return;
    case CG_TY_PTR:
      type_(p, t->elem, atomic);
      return;
    default:
      if (atomic) puts_(p, "atomic<");
      puts_(p, t->kind <= CG_TY_F64 ? kScalar[t->kind] : "void");
      if (atomic) puts_(p, ">");
      return;
  }
}

/* ---- Expressions --------------------------------------------------------- */

static void expr(printer_t *p, const cg_expr_t *e);

/* Whether evaluating e may do more than compute a value: atomics, and
 * helpers that reach a barrier. Helpers cannot write memory otherwise. */
static bool has_effects_cb(const cg_expr_t *e, void *arg) {
  (void)arg;
  switch (e->kind) {
    case CG_E_CALL:
      if (rk__cg_bi_is_atomic(e->call.builtin) ||
          e->call.builtin == CG_BI_SYNC_THREADS ||
          e->call.builtin == CG_BI_THREAD_FENCE)
        return true;
      if (e->call.builtin == CG_BI_NONE_ && e->call.callee &&
          e->call.callee->def && e->call.callee->def->uses_barrier)
        return true;
      return rk__cg_expr_any_child(e, has_effects_cb, NULL);
    case CG_E_ASSIGN:
    case CG_E_INCDEC:
      return true;
    default:
      return rk__cg_expr_any_child(e, has_effects_cb, NULL);
  }
}

static bool has_effects(const cg_expr_t *e) { return has_effects_cb(e, NULL); }

/* A ?: that select() cannot express: non-scalar, or a branch with side
 * effects (select evaluates both). */
static bool cond_needs_if(const cg_expr_t *e) {
  cg_type_kind_t k = e->type->kind;
  bool scalar = k >= CG_TY_BOOL && k <= CG_TY_F64;
  return !scalar || has_effects(e->cond.then) || has_effects(e->cond.other);
}

static void int_literal(printer_t *p, uint64_t v, cg_type_kind_t k, bool hex) {
  rk__cg_emit_int_literal(p->out, v, k, hex, "", "");
}

/* Binary operator classes for WGSL's grammar, which forbids mixing some
 * operators without parentheses (a & b | c, a << b + c, a < b == c). */
typedef enum op_class {
  OC_MUL,
  OC_ADD,
  OC_SHIFT,
  OC_AND,
  OC_OR,
  OC_XOR,
  OC_REL,
  OC_LAND,
  OC_LOR,
} op_class_t;

static op_class_t op_class(cg_op_t op) {
  switch (op) {
    case CG_OP_MUL:
    case CG_OP_DIV:
    case CG_OP_MOD:
      return OC_MUL;
    case CG_OP_ADD:
    case CG_OP_SUB:
      return OC_ADD;
    case CG_OP_SHL:
    case CG_OP_SHR:
      return OC_SHIFT;
    case CG_OP_BAND:
      return OC_AND;
    case CG_OP_BOR:
      return OC_OR;
    case CG_OP_BXOR:
      return OC_XOR;
    case CG_OP_LAND:
      return OC_LAND;
    case CG_OP_LOR:
      return OC_LOR;
    default:
      return OC_REL;
  }
}

/* Whether a binary child needs parentheses under a binary parent. */
static bool child_needs_paren(cg_op_t parent, const cg_expr_t *child,
                              bool lhs) {
  if (child->kind != CG_E_BINARY) return false;
  if (child->paren) return true;
  op_class_t pc = op_class(parent), cc = op_class(child->binary.op);
  switch (pc) {
    case OC_MUL:
      return !(cc == OC_MUL && lhs);
    case OC_ADD:
      return !(cc == OC_MUL || (cc == OC_ADD && lhs));
    case OC_SHIFT:
      return true;
    case OC_AND:
    case OC_OR:
    case OC_XOR:
    case OC_LAND:
    case OC_LOR:
      return !(cc == pc && lhs) && !(pc >= OC_LAND && cc == OC_REL);
    case OC_REL:
      return !(cc == OC_MUL || cc == OC_ADD || cc == OC_SHIFT);
  }
  return true;
}

/* An operand that must be a unary expression (of a unary operator, or the
 * base of [] and .). */
static void unary_operand(printer_t *p, const cg_expr_t *e) {
  bool paren = e->kind == CG_E_BINARY || e->kind == CG_E_UNARY;
  if (paren) puts_(p, "(");
  expr(p, e);
  if (paren) puts_(p, ")");
}

/* The shift amount: WGSL wants u32. */
static void shift_amount(printer_t *p, const cg_expr_t *e) {
  const cg_expr_t *x = rk__cg_skip_converts(e);
  if (x->kind == CG_E_INT && rk__cg_is_integer(x->type) &&
      x->lit_int.value < (1u << 31)) {
    int_literal(p, x->lit_int.value, CG_TY_U32, x->lit_int.hex);
    return;
  }
  if (e->type->kind == CG_TY_U32) {
    unary_operand(p, e);
    return;
  }
  puts_(p, "u32(");
  expr(p, e);
  puts_(p, ")");
}

static void binary_operand(printer_t *p, cg_op_t op, const cg_expr_t *e,
                           bool lhs) {
  bool paren = child_needs_paren(op, e, lhs);
  if (paren) puts_(p, "(");
  expr(p, e);
  if (paren) puts_(p, ")");
}

static void binary(printer_t *p, cg_op_t op, const cg_expr_t *lhs,
                   const cg_expr_t *rhs) {
  binary_operand(p, op, lhs, true);
  printf_(p, " %s ", rk__cg_op_spelling(op));
  if (op == CG_OP_SHL || op == CG_OP_SHR)
    shift_amount(p, rhs);
  else
    binary_operand(p, op, rhs, false);
}

/* An implicit or explicit conversion to `to`: T(x), or a literal already
 * in the new type. */
static void convert(printer_t *p, const cg_type_t *to, const cg_expr_t *x) {
  cg_type_kind_t k = to->kind;
  if (x->type->kind == CG_TY_PTR) {
    puts_(p, "true"); /* a buffer as a condition: bindings are never NULL */
    return;
  }
  if (x->type->kind == k && x->kind != CG_E_BINARY && x->kind != CG_E_UNARY) {
    expr(p, x);
    return;
  }
  if (x->kind == CG_E_INT && x->lit_int.value < (1u << 24)) {
    uint64_t v = x->lit_int.value;
    if (k == CG_TY_U32 || k == CG_TY_I32) {
      int_literal(p, v, k, x->lit_int.hex);
      return;
    }
    if (k == CG_TY_F32) {
      printf_(p, "%llu.0f", (unsigned long long)v);
      return;
    }
  }
  type_(p, to, false);
  puts_(p, "(");
  expr(p, x);
  puts_(p, ")");
}

static void index_builtin(printer_t *p, cg_index_kind_t kind, int axis) {
  char c = "xyz"[axis];
  switch (kind) {
    case CG_INDEX_THREAD:
      printf_(p, "rk_tid.%c", c);
      return;
    case CG_INDEX_BLOCK:
      printf_(p, "rk_bid.%c", c);
      return;
    case CG_INDEX_BLOCK_DIM:
      printf_(p, "rk_wg_%c", c);
      return;
    case CG_INDEX_GRID_DIM:
      printf_(p, "rk_gdim.%c", c);
      return;
    default: /* CG_INDEX_GLOBAL */
      printf_(p, "(rk_bid.%c * rk_wg_%c + rk_tid.%c)", c, c, c);
      return;
  }
}

/* An lvalue or element as a reference, without atomicLoad. */
static void place(printer_t *p, const cg_expr_t *e) {
  e = rk__cg_skip_converts(e);
  if (e->kind == CG_E_INDEX) {
    place(p, e->index.base);
    puts_(p, "[");
    expr(p, e->index.index);
    puts_(p, "]");
    return;
  }
  expr(p, e);
}

static const char *const kAtomicFns[] = {
    "atomicAdd",      "atomicSub", "atomicAnd", "atomicOr", "atomicXor",
    "atomicExchange", "atomicMin", "atomicMax", "rk_cas_",
};

static void atomic_call(printer_t *p, const cg_expr_t *e) {
  cg_atomic_op_t op = rk__cg_bi_atomic_op(e->call.builtin);
  const cg_expr_t *target = e->call.args[0]->addr.operand;
  if (op == CG_ATOMIC_CAS) {
    /* rk_cas_<array>(indices..., expected, desired) */
    const cg_var_t *root = rk__cg_index_root(target);
    puts_(p, "rk_cas_");
    if (root) resource_name(p, root);
    puts_(p, "(");
    const cg_expr_t *chain[16];
    int n = 0;
    for (const cg_expr_t *x = rk__cg_skip_converts(target);
         x->kind == CG_E_INDEX && n < 16;
         x = rk__cg_skip_converts(x->index.base))
      chain[n++] = x;
    for (int i = n - 1; i >= 0; --i) {
      convert(p, rk__cg_type_scalar(CG_TY_U32), chain[i]->index.index);
      puts_(p, ", ");
    }
    expr(p, e->call.args[1]);
    puts_(p, ", ");
    expr(p, e->call.args[2]);
    puts_(p, ")");
    return;
  }
  builtin_call(p, kAtomicFns[op]);
  puts_(p, "&");
  place(p, target);
  puts_(p, ", ");
  expr(p, e->call.args[1]);
  puts_(p, ")");
}

static const char *const kMath[] = {
    "sqrt", "exp", "log", "pow",   "sin",  "cos", "tan",
    "abs",  "min", "max", "floor", "ceil", "fma", "tanh",
};

/* A neighbour read from the tile in workgroup memory (as the C-family GPU
 * targets do). */
static void stencil_read(printer_t *p, const cg_expr_t *e) {
  int d[CG_AXES] = {e->call.dx, e->call.dy, e->call.dz};
  puts_(p, CG_TILE_PREFIX);
  resource_name(p, e->call.buffer);
  static const char *const kLocal[] = {"rk_lx", "rk_ly", "rk_lz"};
  for (int axis = (int)p->fp->stencil->dims - 1; axis >= 0; --axis) {
    printf_(p, "[%s", kLocal[axis]);
    if (d[axis] > 0) printf_(p, " + %d", d[axis]);
    if (d[axis] < 0) printf_(p, " - %d", -d[axis]);
    puts_(p, "]");
  }
}

static void call(printer_t *p, const cg_expr_t *e) {
  cg_builtin_t b = e->call.builtin;
  if (b == CG_BI_NONE_) {
    const cg_func_t *callee = e->call.callee->def;
    name_(p, callee->name);
    puts_(p, "(");
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      expr(p, e->call.args[i]);
    }
    if (callee->uses_index)
      printf_(p, "%srk_tid, rk_bid, rk_gdim", e->call.nargs ? ", " : "");
    puts_(p, ")");
  } else if (rk__cg_bi_is_index(b)) {
    index_builtin(p, rk__cg_bi_index_kind(b), rk__cg_bi_axis(b));
  } else if (b == CG_BI_SYNC_THREADS) {
    builtin_call(p, "workgroupBarrier");
    puts_(p, ")");
  } else if (b == CG_BI_THREAD_FENCE) {
    builtin_call(p, "storageBarrier");
    puts_(p, ")");
  } else if (rk__cg_bi_is_atomic(b)) {
    atomic_call(p, e);
  } else if (rk__cg_bi_is_math(b)) {
    builtin_call(p, kMath[b - CG_BI_SQRTF]);
    for (uint32_t i = 0; i < e->call.nargs; ++i) {
      if (i) puts_(p, ", ");
      expr(p, e->call.args[i]);
    }
    puts_(p, ")");
  } else if (rk__cg_bi_is_stencil(b)) {
    stencil_read(p, e);
  } else {
    puts_(p, "0"); /* rk_dynamic_shared: refused by the checker */
  }
}

/* A value of type t from an initialiser: constructors for { } lists, the
 * zero value T() for missing elements. */
static void init_value(printer_t *p, const cg_type_t *t, const cg_expr_t *e) {
  if (e->kind != CG_E_INIT_LIST) {
    expr(p, e);
    return;
  }
  type_(p, t, false);
  puts_(p, "(");
  uint32_t n = t->kind == CG_TY_ARRAY    ? t->count
               : t->kind == CG_TY_STRUCT ? t->st->nfields
                                         : 1;
  for (uint32_t i = 0; i < n; ++i) {
    const cg_type_t *et = t->kind == CG_TY_ARRAY    ? t->elem
                          : t->kind == CG_TY_STRUCT ? t->st->fields[i].type
                                                    : t;
    if (i) puts_(p, ", ");
    if (i < e->init.n) {
      init_value(p, et, e->init.elems[i]);
    } else {
      type_(p, et, false);
      puts_(p, "()");
    }
    if (p->out->len > WGSL_MAX_OUTPUT)
      rk__cg_error(p->ctx, e->loc, "the WGSL output would be too large");
  }
  puts_(p, ")");
}

/* Whether e names a message buffer (in, out) of the handler being printed:
 * rk_handle_<name> reads message rk_m of them (the state is one element). */
static bool handler_message(const printer_t *p, const cg_expr_t *e) {
  e = rk__cg_skip_converts(e);
  if (!p->fp || !p->fp->handler || e->kind != CG_E_NAME) return false;
  return e->name.var == p->fp->handler->in ||
         e->name.var == p->fp->handler->out;
}

static void expr(printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_INT:
    case CG_E_FLOAT:
    case CG_E_BOOL:
      rk__cg_emit_literal(p->out, e, "", "");
      return;
    case CG_E_NAME: {
      const cg_var_t *v = e->name.var;
      if (v && is_resource(v)) {
        if (is_atomic_var(p, v) && rk__cg_is_integer(e->type)) {
          builtin_call(p, "atomicLoad");
          puts_(p, "&");
          resource_name(p, v);
          puts_(p, ")");
        } else {
          resource_name(p, v);
        }
      } else {
        name_(p, e->name.name);
      }
      return;
    }
    case CG_E_UNARY: {
      const cg_expr_t *x = e->unary.operand;
      switch (e->unary.op) {
        case CG_OP_PLUS:
          unary_operand(p, x);
          return;
        case CG_OP_NEG:
          if (e->type->kind == CG_TY_U32) {
            puts_(p, "(0u - ");
            binary_operand(p, CG_OP_SUB, x, false);
            puts_(p, ")");
            return;
          }
          puts_(p, "-");
          break;
        default:
          puts_(p, rk__cg_op_spelling(e->unary.op));
          break;
      }
      unary_operand(p, x);
      return;
    }
    case CG_E_BINARY:
      binary(p, e->binary.op, e->binary.lhs, e->binary.rhs);
      return;
    case CG_E_COND: {
      char key[32];
      const char *t =
          p->temps.count ? rk__cg_map_get(&p->temps, ptr_key(key, e)) : NULL;
      if (t) {
        puts_(p, t);
        return;
      }
      if (cond_needs_if(e))
        rk__cg_error(p->ctx, e->loc,
                     "this ?: cannot be expressed in WGSL here: its branches "
                     "have side effects or are not scalars, so it becomes an "
                     "if with a temporary, which is not possible inside a "
                     "loop condition or step, the right operand of && or "
                     "||, or a branch of another ?: (use if/else)");
      builtin_call(p, "select");
      expr(p, e->cond.other);
      puts_(p, ", ");
      expr(p, e->cond.then);
      puts_(p, ", ");
      expr(p, e->cond.cond);
      puts_(p, ")");
      return;
    }
    case CG_E_CAST:
    case CG_E_CONVERT: {
      const cg_expr_t *x =
          e->kind == CG_E_CAST ? e->cast.operand : e->convert.operand;
      if (e->type->kind == CG_TY_VOID) {
        expr(p, x);
        return;
      }
      convert(p, e->type, x);
      return;
    }
    case CG_E_INDEX: {
      const cg_var_t *root = rk__cg_index_root(e);
      bool load = is_atomic_var(p, root) && rk__cg_is_integer(e->type);
      if (load) {
        builtin_call(p, "atomicLoad");
        puts_(p, "&");
      }
      unary_operand(p, e->index.base);
      puts_(p, "[");
      expr(p, e->index.index);
      puts_(p, "]");
      if (load) puts_(p, ")");
      return;
    }
    case CG_E_MEMBER:
      unary_operand(p, e->member.base);
      if (e->member.arrow)
        puts_(p, handler_message(p, e->member.base) ? "[rk_m]" : "[0]");
      puts_(p, ".");
      if (e->member.field)
        name_(p, e->member.name);
      else
        puts_(p, e->member.name); /* rk_grid_pos_t fields */
      return;
    case CG_E_CALL:
      call(p, e);
      return;
    case CG_E_ADDR:
      puts_(p, "&");
      place(p, e->addr.operand);
      return;
    case CG_E_INIT_LIST:
      init_value(p, e->type, e);
      return;
    case CG_E_ASSIGN:
    case CG_E_INCDEC:
      /* statements only (checked); printed by assignment() */
      return;
  }
}

/* ---- Statements ---------------------------------------------------------- */

static void stmt(printer_t *p, const cg_stmt_t *s);

static void check_size(printer_t *p, cg_loc_t loc) {
  if (p->out->len > WGSL_MAX_OUTPUT)
    rk__cg_error(p->ctx, loc,
                 "the WGSL output would be larger than %d MiB (switch "
                 "fallthrough duplicates the bodies it falls into)",
                 WGSL_MAX_OUTPUT >> 20);
}

/* Emits `var rk_tN: T; if (c) { rk_tN = a; } else { rk_tN = b; }` before
 * the statement for every ?: in e that select() cannot express. Branches
 * are hoisted inside their own arm, so they run only when C runs them. */
static void hoist(printer_t *p, const cg_expr_t *e);

static bool hoist_cb(const cg_expr_t *e, void *p) {
  hoist(p, e);
  return false;
}

/* Whether hoist(e) would declare a temporary. */
static bool hoists(const cg_expr_t *e);

static bool hoists_cb(const cg_expr_t *e, void *arg) {
  (void)arg;
  return hoists(e);
}

static bool hoists(const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_COND:
      return hoists(e->cond.cond) || cond_needs_if(e) || hoists(e->cond.then) ||
             hoists(e->cond.other);
    case CG_E_BINARY:
      return hoists(e->binary.lhs) ||
             (((e->binary.op != CG_OP_LAND && e->binary.op != CG_OP_LOR) ||
               !has_effects(e->binary.rhs)) &&
              hoists(e->binary.rhs));
    default:
      return rk__cg_expr_any_child(e, hoists_cb, NULL);
  }
}

static void hoist(printer_t *p, const cg_expr_t *e) {
  switch (e->kind) {
    case CG_E_COND: {
      hoist(p, e->cond.cond);
      if (!cond_needs_if(e)) {
        /* select() evaluates both branches, which have no effects: what
         * they need hoisted may run unconditionally. */
        hoist(p, e->cond.then);
        hoist(p, e->cond.other);
        return;
      }
      char name[32];
      snprintf(name, sizeof name, "rk_t%d", p->ntemps++);
      printf_(p, "var %s: ", name);
      type_(p, e->type, false);
      puts_(p, ";\n");
      indent(p);
      puts_(p, "if (");
      expr(p, e->cond.cond);
      puts_(p, ") {\n");
      for (int arm = 0; arm < 2; ++arm) {
        const cg_expr_t *x = arm ? e->cond.other : e->cond.then;
        p->indent++;
        indent(p);
        hoist(p, x);
        printf_(p, "%s = ", name);
        expr(p, x);
        puts_(p, ";\n");
        p->indent--;
        indent(p);
        puts_(p, arm ? "}\n" : "} else {\n");
      }
      indent(p);
      rk__cg_map_put(p->ctx, &p->temps, ptr_key_dup(p, e),
                     rk__cg_strndup(p->ctx, name, strlen(name)));
      return;
    }
    case CG_E_BINARY:
      hoist(p, e->binary.lhs);
      /* the right operand of && and || runs conditionally: not hoisted */
      if ((e->binary.op != CG_OP_LAND && e->binary.op != CG_OP_LOR) ||
          !has_effects(e->binary.rhs))
        hoist(p, e->binary.rhs);
      return;
    default:
      rk__cg_expr_any_child(e, hoist_cb, p);
      return;
  }
}

/* target = value, target op= value, ++, --, with atomicStore for atomic
 * arrays. No trailing ';'. */
static void assignment(printer_t *p, const cg_expr_t *e) {
  const cg_expr_t *target;
  const cg_expr_t *value = NULL;
  cg_op_t op;
  const cg_type_t *op_type;
  if (e->kind == CG_E_INCDEC) {
    target = e->incdec.target;
    op = e->incdec.inc ? CG_OP_ADD : CG_OP_SUB;
    op_type = target->type;
  } else {
    target = e->assign.target;
    value = e->assign.value;
    op = e->assign.op;
    op_type = e->assign.op_type ? e->assign.op_type : target->type;
  }
  const cg_type_t *tt = target->type;
  bool atomic =
      is_atomic_var(p, rk__cg_index_root(target)) && rk__cg_is_integer(tt);
  bool integer = tt->kind == CG_TY_I32 || tt->kind == CG_TY_U32;
  if (atomic) {
    builtin_call(p, "atomicStore");
    puts_(p, "&");
    place(p, target);
    puts_(p, ", ");
  } else if (e->kind == CG_E_INCDEC && integer) {
    place(p, target);
    puts_(p, e->incdec.inc ? "++" : "--");
    return;
  } else if (op == CG_OP_NONE ||
             (op_type->kind == tt->kind && e->kind == CG_E_ASSIGN)) {
    place(p, target);
    printf_(p, " %s= ", op == CG_OP_NONE ? "" : rk__cg_op_spelling(op));
    if (op == CG_OP_SHL || op == CG_OP_SHR)
      shift_amount(p, value);
    else
      init_value(p, tt, value);
    return;
  } else {
    place(p, target);
    puts_(p, " = ");
  }
  /* The value to store: value, or T(OP(target) op value). */
  if (op == CG_OP_NONE) {
    init_value(p, tt, value);
  } else {
    bool same = op_type->kind == tt->kind;
    if (!same) {
      type_(p, tt, false);
      puts_(p, "(");
    }
    if (op_type->kind != tt->kind) {
      type_(p, op_type, false);
      puts_(p, "(");
      expr(p, target);
      puts_(p, ")");
    } else {
      binary_operand(p, op, target, true);
    }
    printf_(p, " %s ", rk__cg_op_spelling(op));
    if (value == NULL) {
      if (op_type->kind == CG_TY_F32)
        puts_(p, "1.0f");
      else
        puts_(p, op_type->kind == CG_TY_U32 ? "1u" : "1");
    } else if (op == CG_OP_SHL || op == CG_OP_SHR) {
      shift_amount(p, value);
    } else {
      binary_operand(p, op, value, false);
    }
    if (!same) puts_(p, ")");
  }
  if (atomic) puts_(p, ")");
}

/* An expression statement without ';'. */
static void expr_stmt(printer_t *p, const cg_expr_t *e) {
  if (e->kind == CG_E_ASSIGN || e->kind == CG_E_INCDEC) {
    assignment(p, e);
    return;
  }
  const cg_expr_t *x = e;
  while (x->kind == CG_E_CAST || x->kind == CG_E_CONVERT)
    x = x->kind == CG_E_CAST ? x->cast.operand : x->convert.operand;
  if (x->kind == CG_E_CALL) {
    cg_builtin_t b = x->call.builtin;
    if (b == CG_BI_SYNC_THREADS) {
      /* C's barrier also orders global memory within the block. */
      builtin_call(p, "storageBarrier");
      puts_(p, ");\n");
      indent(p);
      builtin_call(p, "workgroupBarrier");
      puts_(p, ")");
      return;
    }
    if (b == CG_BI_NONE_ || rk__cg_bi_is_atomic(b) || b == CG_BI_THREAD_FENCE) {
      expr(p, x);
      return;
    }
  }
  if (x->kind == CG_E_NAME && x->name.var && is_resource(x->name.var)) {
    puts_(p, "_ = &"); /* (void)buffer: keeps the binding used */
    resource_name(p, x->name.var);
    return;
  }
  puts_(p, "_ = ");
  expr(p, x);
}

/* A local variable's declaration; `semicolon` false in a for's header. */
static void decl(printer_t *p, const cg_var_t *v, bool first, bool semicolon) {
  if (is_module_var(v)) return; /* at module scope */
  if (!first) indent(p);
  if (v->init) hoist(p, v->init);
  bool let = v->is_const && v->init && v->type->kind != CG_TY_ARRAY;
  puts_(p, let ? "let " : "var ");
  name_(p, v->name);
  puts_(p, ": ");
  type_(p, v->type, false);
  if (v->init) {
    puts_(p, " = ");
    init_value(p, v->type, v->init);
  }
  if (semicolon) puts_(p, ";");
}

static bool shared_only(const cg_stmt_t *s) {
  if (s->kind != CG_S_DECL) return false;
  for (uint32_t i = 0; i < s->decl.n; ++i)
    if (!is_module_var(s->decl.vars[i])) return false;
  return true;
}

/* Prints the statements of a block (or one statement) as the items of a
 * { } the caller opened. */
static void items(printer_t *p, const cg_stmt_t *s) {
  if (s->kind == CG_S_BLOCK) {
    for (uint32_t i = 0; i < s->block.n; ++i) {
      const cg_stmt_t *x = s->block.items[i];
      if (x->kind == CG_S_EMPTY || shared_only(x)) continue;
      indent(p);
      stmt(p, s->block.items[i]);
      puts_(p, "\n");
    }
  } else if (s->kind != CG_S_EMPTY) {
    indent(p);
    stmt(p, s);
    puts_(p, "\n");
  }
}

/* " {\n ...items... }" */
static void braced(printer_t *p, const cg_stmt_t *s) {
  puts_(p, "{\n");
  p->indent++;
  items(p, s);
  p->indent--;
  indent(p);
  puts_(p, "}");
}

/* Whether control never reaches the end of s. */
static bool jumps(const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_BREAK:
    case CG_S_CONTINUE:
    case CG_S_RETURN:
      return true;
    case CG_S_BLOCK:
      return s->block.n && jumps(s->block.items[s->block.n - 1]);
    case CG_S_IF:
      return s->if_.other && jumps(s->if_.then) && jumps(s->if_.other);
    default:
      return false;
  }
}

static void case_value(printer_t *p, const cg_type_t *sel, int64_t v) {
  if (sel->kind == CG_TY_U32)
    printf_(p, "%lluu", (unsigned long long)(uint32_t)v);
  else
    printf_(p, "%lld", (long long)v);
}

/* C's switch as WGSL's: consecutive labels become one clause; a clause whose
 * statements can fall off their end gets the following clauses' statements
 * too (duplicated), up to one that jumps. */
static void switch_stmt(printer_t *p, const cg_stmt_t *s) {
  const cg_stmt_t *b = s->switch_.body;
  const cg_type_t *sel = s->switch_.value->type;
  puts_(p, "switch (");
  if (sel->kind != CG_TY_I32 && sel->kind != CG_TY_U32) {
    sel = rk__cg_type_scalar(CG_TY_I32);
    convert(p, sel, s->switch_.value);
  } else {
    expr(p, s->switch_.value);
  }
  puts_(p, ") {\n");
  p->indent++;
  bool has_default = false;
  uint32_t i = 0;
  while (i < b->block.n) {
    const cg_stmt_t *it = b->block.items[i];
    if (it->kind != CG_S_CASE && it->kind != CG_S_DEFAULT) {
      i++; /* statements before the first label never run */
      continue;
    }
    indent(p);
    puts_(p, "case ");
    bool first = true;
    while (i < b->block.n && (b->block.items[i]->kind == CG_S_CASE ||
                              b->block.items[i]->kind == CG_S_DEFAULT)) {
      const cg_stmt_t *l = b->block.items[i++];
      if (!first) puts_(p, ", ");
      first = false;
      if (l->kind == CG_S_DEFAULT) {
        puts_(p, "default");
        has_default = true;
      } else {
        case_value(p, sel, l->case_.folded);
      }
    }
    puts_(p, ": {\n");
    p->indent++;
    /* This clause's statements, then those it falls into. */
    const cg_stmt_t *last = NULL;
    for (uint32_t k = i; k < b->block.n; ++k) {
      const cg_stmt_t *x = b->block.items[k];
      if (x->kind == CG_S_CASE || x->kind == CG_S_DEFAULT) continue;
      if (last && jumps(last)) break;
      last = x;
      if (x->kind == CG_S_EMPTY) continue;
      /* A final break only leaves the clause, which WGSL does anyway. */
      bool final_break = x->kind == CG_S_BREAK;
      if (!final_break) {
        indent(p);
        stmt(p, x);
        puts_(p, "\n");
      }
      check_size(p, x->loc);
    }
    p->indent--;
    indent(p);
    puts_(p, "}\n");
  }
  if (!has_default) {
    indent(p);
    puts_(p, "default: {}\n");
  }
  p->indent--;
  indent(p);
  puts_(p, "}");
}

/* Prints one statement at the current position (the caller indented); no
 * trailing newline. */
static void stmt(printer_t *p, const cg_stmt_t *s) {
  check_size(p, s->loc);
  switch (s->kind) {
    case CG_S_BLOCK:
      braced(p, s);
      return;
    case CG_S_DECL: {
      bool first = true;
      for (uint32_t i = 0; i < s->decl.n; ++i) {
        if (is_module_var(s->decl.vars[i])) continue;
        if (!first) puts_(p, "\n");
        decl(p, s->decl.vars[i], first, true);
        first = false;
      }
      return;
    }
    case CG_S_EXPR:
      hoist(p, s->expr);
      expr_stmt(p, s->expr);
      puts_(p, ";");
      return;
    case CG_S_IF:
      hoist(p, s->if_.cond);
      for (;;) {
        puts_(p, "if (");
        expr(p, s->if_.cond);
        puts_(p, ") ");
        braced(p, s->if_.then);
        if (!s->if_.other) return;
        puts_(p, " else ");
        const cg_stmt_t *o = s->if_.other;
        /* else if: only when the condition needs nothing hoisted */
        if (o->kind == CG_S_IF && !hoists(o->if_.cond)) {
          s = o;
          continue;
        }
        braced(p, o);
        return;
      }
    case CG_S_WHILE:
      puts_(p, "while (");
      expr(p, s->loop.cond);
      puts_(p, ") ");
      braced(p, s->loop.body);
      return;
    case CG_S_DO:
      puts_(p, "loop {\n");
      p->indent++;
      items(p, s->loop.body);
      indent(p);
      puts_(p, "continuing {\n");
      indent(p);
      puts_(p, "  break if !(");
      expr(p, s->loop.cond);
      puts_(p, ");\n");
      indent(p);
      puts_(p, "}\n");
      p->indent--;
      indent(p);
      puts_(p, "}");
      return;
    case CG_S_FOR: {
      const cg_stmt_t *init = s->for_.init;
      bool wrap = init && (init->kind == CG_S_DECL ? init->decl.n != 1
                                                   : init->kind != CG_S_EXPR);
      /* a ?: needing an if in the initialiser: declare it before */
      if (init && init->kind == CG_S_DECL && init->decl.n == 1 &&
          init->decl.vars[0]->init && hoists(init->decl.vars[0]->init))
        wrap = true;
      if (init && init->kind == CG_S_EXPR && hoists(init->expr)) wrap = true;
      if (wrap) {
        /* for (int i = 0, j = n; ...): the declarations in a block */
        puts_(p, "{\n");
        p->indent++;
        indent(p);
        stmt(p, init);
        puts_(p, "\n");
        indent(p);
      }
      puts_(p, "for (");
      if (init && !wrap) {
        if (init->kind == CG_S_DECL)
          decl(p, init->decl.vars[0], true, false);
        else
          expr_stmt(p, init->expr);
      }
      puts_(p, "; ");
      if (s->for_.cond) expr(p, s->for_.cond);
      puts_(p, "; ");
      if (s->for_.step) expr_stmt(p, s->for_.step);
      puts_(p, ") ");
      braced(p, s->for_.body);
      if (wrap) {
        puts_(p, "\n");
        p->indent--;
        indent(p);
        puts_(p, "}");
      }
      return;
    }
    case CG_S_SWITCH:
      hoist(p, s->switch_.value);
      switch_stmt(p, s);
      return;
    case CG_S_CASE:
    case CG_S_DEFAULT:
      return; /* handled by switch_stmt */
    case CG_S_BREAK:
      puts_(p, "break;");
      return;
    case CG_S_CONTINUE:
      puts_(p, "continue;");
      return;
    case CG_S_RETURN:
      if (s->expr) {
        hoist(p, s->expr);
        puts_(p, "return ");
        init_value(p, p->fn->ret, s->expr);
        puts_(p, ";");
      } else {
        puts_(p, "return;");
      }
      return;
    case CG_S_EMPTY:
      return;
  }
}

/* ---- Module-scope items -------------------------------------------------- */

static uint32_t wgsl_align(const cg_type_t *t);
static uint32_t wgsl_size(const cg_type_t *t);

/* WGSL's layout of host-shareable types (storage address space). */
static uint32_t wgsl_align(const cg_type_t *t) {
  switch (t->kind) {
    case CG_TY_ARRAY:
      return wgsl_align(t->elem);
    case CG_TY_STRUCT: {
      uint32_t a = 1;
      for (uint32_t i = 0; i < t->st->nfields; ++i) {
        uint32_t f = wgsl_align(t->st->fields[i].type);
        if (f > a) a = f;
      }
      return a;
    }
    case CG_TY_I64:
    case CG_TY_U64:
    case CG_TY_F64:
      return 8;
    default:
      return 4;
  }
}

static uint32_t round_up(uint32_t v, uint32_t a) {
  return a ? (v + a - 1) / a * a : v;
}

static uint32_t wgsl_size(const cg_type_t *t) {
  switch (t->kind) {
    case CG_TY_ARRAY: {
      uint64_t stride = round_up(wgsl_size(t->elem), wgsl_align(t->elem));
      uint64_t n = stride * t->count;
      return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    case CG_TY_STRUCT: {
      uint32_t off = 0;
      for (uint32_t i = 0; i < t->st->nfields; ++i) {
        const cg_type_t *f = t->st->fields[i].type;
        off = round_up(off, wgsl_align(f)) + wgsl_size(f);
      }
      return round_up(off, wgsl_align(t));
    }
    case CG_TY_I64:
    case CG_TY_U64:
    case CG_TY_F64:
      return 8;
    default:
      return 4;
  }
}

static void struct_def(printer_t *p, const cg_struct_t *st) {
  declare(p, spelled(p, st->typedef_name ? st->typedef_name : st->tag),
          st->loc);
  /* The layout the checker computed with C's rules must be WGSL's too, or
   * host and device would disagree about the bytes of a buffer. */
  uint32_t off = 0;
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    off = round_up(off, wgsl_align(f->type));
    if (off != f->offset || f->type->kind == CG_TY_BOOL)
      rk__cg_error(p->ctx, f->loc,
                   "field '%s' is at byte %u in C but would be at byte %u in "
                   "a WGSL storage buffer: the layouts cannot match",
                   f->name, (unsigned)f->offset, (unsigned)off);
    off += wgsl_size(f->type);
  }
  if (wgsl_size(&st->type) != st->size || wgsl_align(&st->type) != st->align)
    rk__cg_error(p->ctx, st->loc,
                 "this struct is %u bytes (alignment %u) in C but %u bytes "
                 "(alignment %u) in WGSL: the layouts cannot match",
                 (unsigned)st->size, (unsigned)st->align,
                 (unsigned)wgsl_size(&st->type),
                 (unsigned)wgsl_align(&st->type));
  printf_(p, "\n// %u bytes, the C layout: ", (unsigned)st->size);
  puts_(p, st->typedef_name ? st->typedef_name : "struct ");
  if (!st->typedef_name) puts_(p, st->tag);
  puts_(p, "\nstruct ");
  struct_name(p, st);
  puts_(p, " {\n");
  for (uint32_t i = 0; i < st->nfields; ++i) {
    const cg_field_t *f = &st->fields[i];
    puts_(p, "  ");
    name_(p, f->name);
    puts_(p, ": ");
    type_(p, f->type, false);
    puts_(p, ",\n");
  }
  puts_(p, "}\n");
}

static void params_list(printer_t *p, const cg_func_t *fn) {
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (i) puts_(p, ", ");
    if (v->modified) puts_(p, "rk_arg_");
    name_(p, v->name);
    puts_(p, ": ");
    type_(p, v->type, false);
  }
  if (fn->uses_index)
    printf_(p, "%srk_tid: vec3<u32>, rk_bid: vec3<u32>, rk_gdim: vec3<u32>",
            fn->nparams ? ", " : "");
}

/* Modified parameters are copied into variables (WGSL parameters are
 * immutable). */
static void param_copies(printer_t *p, const cg_func_t *fn) {
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (!v->modified) continue;
    puts_(p, "  var ");
    name_(p, v->name);
    puts_(p, ": ");
    type_(p, v->type, false);
    puts_(p, " = rk_arg_");
    name_(p, v->name);
    puts_(p, ";\n");
  }
}

static void function_body(printer_t *p, const cg_stmt_t *b) {
  p->indent = 1;
  items(p, b);
  p->indent = 0;
}

/* Whether every path through s ends in a return, as WGSL's validators see
 * it: an if/else counts when both branches do, a loop never does (naga
 * does not prove even `loop { }` without a break endless, and a `while
 * (true)` has a break for its condition), nor does a switch. */
static bool ends_in_return(const cg_stmt_t *s) {
  switch (s->kind) {
    case CG_S_RETURN:
      return true;
    case CG_S_BLOCK:
      return s->block.n && ends_in_return(s->block.items[s->block.n - 1]);
    case CG_S_IF:
      return s->if_.other && ends_in_return(s->if_.then) &&
             ends_in_return(s->if_.other);
    default:
      return false;
  }
}

/* The body of a function returning `ret` (not void), and a final return of
 * the zero value where control might reach the end as far as WGSL can
 * tell. WGSL requires one; C allows a function whose only returns are in
 * an endless loop (`while (true) { ... return x; }`), and leaves falling
 * off the end undefined when the caller uses the value. */
static void value_function_body(printer_t *p, const cg_type_t *ret,
                                const cg_stmt_t *b) {
  function_body(p, b);
  if (ends_in_return(b)) return;
  puts_(p, "  return ");
  type_(p, ret, false);
  puts_(p, "(); // WGSL requires a return at the end\n");
}

static void helper(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  if (!fn->body) return; /* WGSL needs no prototypes */
  p->fn = fn;
  p->fp = fp;
  p->ntemps = 0;
  declare(p, spelled(p, fn->name), fn->loc);
  puts_(p, "\nfn ");
  name_(p, fn->name);
  puts_(p, "(");
  params_list(p, fn);
  puts_(p, ")");
  if (fn->ret->kind != CG_TY_VOID) {
    puts_(p, " -> ");
    type_(p, fn->ret, false);
  }
  puts_(p, " {\n");
  param_copies(p, fn);
  if (fn->ret->kind != CG_TY_VOID)
    value_function_body(p, fn->ret, fn->body);
  else
    function_body(p, fn->body);
  puts_(p, "}\n");
}

/* Collects, into p->atomic_vars, the arrays an atomic built-in touches. */
/* Records in p->atomic_vars the arrays that atomics in e work on. */
static bool find_atomics_expr(const cg_expr_t *e, void *arg) {
  printer_t *p = arg;
  if (e->kind == CG_E_CALL && rk__cg_bi_is_atomic(e->call.builtin) &&
      e->call.nargs > 0 && e->call.args[0]->kind == CG_E_ADDR) {
    const cg_var_t *root = rk__cg_index_root(e->call.args[0]->addr.operand);
    if (root)
      rk__cg_map_put(p->ctx, &p->atomic_vars, ptr_key_dup(p, root),
                     (void *)root);
  }
  rk__cg_expr_any_child(e, find_atomics_expr, p);
  return false;
}

static void find_atomics_stmt(printer_t *p, const cg_stmt_t *s) {
  rk__cg_stmt_any_expr(s, find_atomics_expr, p);
}

/* Shared arrays declared in the outermost block of a kernel. */
static void shared_arrays(printer_t *p, const cg_func_t *fn) {
  const cg_stmt_t *b = fn->body;
  for (uint32_t i = 0; i < b->block.n; ++i) {
    const cg_stmt_t *s = b->block.items[i];
    if (s->kind != CG_S_DECL) continue;
    for (uint32_t k = 0; k < s->decl.n; ++k) {
      const cg_var_t *v = s->decl.vars[k];
      if (v->kind != CG_VAR_SHARED) continue;
      declare(p, resource_string(p, v), v->loc);
      puts_(p, "var<workgroup> ");
      resource_name(p, v);
      puts_(p, ": ");
      type_(p, v->type, is_atomic_var(p, v));
      puts_(p, ";\n");
    }
  }
}

/* rk_cas_<array>: a strong compare-and-swap on one atomic array (WGSL
 * cannot pass pointers to storage or workgroup memory to functions). */
static void cas_helper(printer_t *p, const cg_var_t *v) {
  const cg_type_t *t = v->type->kind == CG_TY_PTR ? v->type->elem : v->type;
  const cg_type_t *base = rk__cg_type_base(t);
  int dims = v->type->kind == CG_TY_PTR ? 1 : 0;
  for (const cg_type_t *x = t; x->kind == CG_TY_ARRAY; x = x->elem) dims++;
  const char *rname = resource_string(p, v);
  size_t n = strlen(rname);
  char *fname = rk__cg_alloc(p->ctx, n + 8);
  memcpy(fname, "rk_cas_", 7);
  memcpy(fname + 7, rname, n + 1);
  declare(p, fname, v->loc);
  printf_(p,
          "\n// Compare-and-swap on %s returning the old value: retries the "
          "weak\n// exchange until it succeeds or sees another value.\n",
          "an element");
  printf_(p, "fn %.400s(", fname);
  for (int i = 0; i < dims; ++i) printf_(p, "i%d: u32, ", i);
  puts_(p, "expected: ");
  type_(p, base, false);
  puts_(p, ", desired: ");
  type_(p, base, false);
  puts_(p, ") -> ");
  type_(p, base, false);
  puts_(p, " {\n  var old: ");
  type_(p, base, false);
  puts_(p, ";\n  loop {\n    let r = ");
  builtin_call(p, "atomicCompareExchangeWeak");
  puts_(p, "&");
  resource_name(p, v);
  for (int i = 0; i < dims; ++i) printf_(p, "[i%d]", i);
  puts_(p,
        ", expected, desired);\n"
        "    old = r.old_value;\n"
        "    if (r.exchanged || old != expected) {\n"
        "      break;\n"
        "    }\n"
        "  }\n"
        "  return old;\n"
        "}\n");
}

/* Whether e holds a compare-and-swap on array v (arg). */
static bool uses_cas_on(const cg_expr_t *e, void *arg) {
  const cg_var_t *v = arg;
  switch (e->kind) {
    case CG_E_CALL:
      if (rk__cg_bi_is_atomic(e->call.builtin) &&
          rk__cg_bi_atomic_op(e->call.builtin) == CG_ATOMIC_CAS &&
          e->call.nargs && e->call.args[0]->kind == CG_E_ADDR &&
          rk__cg_index_root(e->call.args[0]->addr.operand) == v)
        return true;
      return rk__cg_expr_any_child(e, uses_cas_on, arg);
    case CG_E_INCDEC:
    case CG_E_ADDR:
    case CG_E_INIT_LIST:
      return false; /* not looked into */
    default:
      return rk__cg_expr_any_child(e, uses_cas_on, arg);
  }
}

static bool uses_cas_stmt(const cg_stmt_t *s, const cg_var_t *v) {
  return rk__cg_stmt_any_expr(s, uses_cas_on, (void *)v);
}

/* The module-scope name of an int handler's status buffer (ast.h),
 * prefixed with the entry's name as buffers are. */
static const char *status_string(printer_t *p, const cg_func_t *fn) {
  char name[600];
  snprintf(name, sizeof name, "%.500s%s" CG_HANDLER_STATUS_NAME,
           p->multi ? fn->name : "", p->multi ? "_" : "");
  return rk__cg_strndup(p->ctx, name, strlen(name));
}

/* Bindings: buffers 0..k-1 in parameter order (an int handler's status
 * buffer last among them), then the by-value parameters packed into one
 * struct read from a storage buffer. */
static void resources(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  /* The function's own launch parameters: those of any of its kernels. */
  const cg_entry_plan_t *ep = &fp->entries[0];
  uint32_t binding = 0, nvalues = 0;
  puts_(p, "\n");
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (ep->params[i].kind != CG_LAUNCH_PARAM) continue;
    if (v->type->kind != CG_TY_PTR) {
      nvalues++;
      continue;
    }
    declare(p, resource_string(p, v), v->loc);
    printf_(p, "@group(0) @binding(%u) var<storage, %s> ", (unsigned)binding++,
            v->type->elem_const ? "read" : "read_write");
    resource_name(p, v);
    puts_(p, ": array<");
    type_(p, v->type->elem, is_atomic_var(p, v));
    puts_(p, ">;\n");
  }
  if (fp->handler && fp->handler->status) {
    const char *status = status_string(p, fn);
    declare(p, status, fn->loc);
    printf_(p,
            "// What %.400s returns (0: success, else its error code), "
            "written by\n// global thread 0.\n"
            "@group(0) @binding(%u) var<storage, read_write> %s: "
            "array<i32>;\n",
            fn->name, (unsigned)binding++, status);
  }
  if (nvalues) {
    const char *suffix = p->multi ? fn->name : "";
    char tname[300], vname[300];
    snprintf(tname, sizeof tname, "rk_params%s%.256s_t", *suffix ? "_" : "",
             suffix);
    snprintf(vname, sizeof vname, "rk_params%s%.256s", *suffix ? "_" : "",
             suffix);
    declare(p, rk__cg_strndup(p->ctx, tname, strlen(tname)), fn->loc);
    declare(p, rk__cg_strndup(p->ctx, vname, strlen(vname)), fn->loc);
    printf_(p,
            "\n// The by-value parameters of %.200s, in order, each at the "
            "next multiple\n// of its C alignment.\nstruct %s {\n",
            fn->name, tname);
    for (uint32_t i = 0; i < ep->nparams; ++i) {
      const cg_var_t *v = ep->params[i].var;
      if (!v || v->type->kind == CG_TY_PTR) continue;
      puts_(p, "  ");
      name_(p, v->name);
      puts_(p, ": ");
      type_(p, v->type, false);
      puts_(p, ",\n");
    }
    printf_(p, "}\n@group(0) @binding(%u) var<storage, read> %s: %s;\n",
            (unsigned)binding, vname, tname);
  }
  if (fn->kind == CG_FN_KERNEL) shared_arrays(p, fn);
  if (fn->dyn_shared) {
    /* Sized at pipeline creation by the override rk_dyn_shared_bytes. */
    const cg_var_t *v = fn->dyn_shared;
    declare(p, resource_string(p, v), v->loc);
    puts_(p, "var<workgroup> ");
    resource_name(p, v);
    puts_(p, ": array<");
    type_(p, v->type->elem, is_atomic_var(p, v));
    printf_(p, ", rk_dyn_shared_bytes / %uu>;\n",
            (unsigned)v->type->elem->size);
  }
  /* CAS helpers for the arrays that need them, in declaration order. */
  if (!p->plan->unit->uses_cas) return;
  for (uint32_t i = 0; i < fn->nparams; ++i) {
    const cg_var_t *v = fn->params[i];
    if (is_atomic_var(p, v) && uses_cas_stmt(fn->body, v)) cas_helper(p, v);
  }
  if (fn->dyn_shared && is_atomic_var(p, fn->dyn_shared) &&
      uses_cas_stmt(fn->body, fn->dyn_shared))
    cas_helper(p, fn->dyn_shared);
  const cg_stmt_t *b = fn->body;
  for (uint32_t i = 0; i < b->block.n; ++i) {
    const cg_stmt_t *s = b->block.items[i];
    if (s->kind != CG_S_DECL) continue;
    for (uint32_t k = 0; k < s->decl.n; ++k) {
      const cg_var_t *v = s->decl.vars[k];
      if (v->kind == CG_VAR_SHARED && is_atomic_var(p, v) &&
          uses_cas_stmt(fn->body, v))
        cas_helper(p, v);
    }
  }
}

/* The suffix of the by-value parameter struct's names for entry `name`
 * (rk_params<suffix>_t, rk_params<suffix>). */
static const char *params_suffix(printer_t *p, const char *name) {
  if (!p->multi) return "";
  char buf[600];
  snprintf(buf, sizeof buf, "_%.500s", name);
  return rk__cg_strndup(p->ctx, buf, strlen(buf));
}

static void entry_signature(printer_t *p, const cg_entry_plan_t *ep) {
  const cg_func_t *fn = ep->fn;
  bool batch = ep->form == CG_FORM_BATCH;
  if (!batch && rk__cg_target_reserves(RK_TARGET_WGSL, fn->name)) {
    if (!rk__cg_wgsl_builtin_function(fn->name) || p->nshadowing == 8)
      rk__cg_error(p->ctx, fn->loc,
                   "'%s' cannot name an entry point: WGSL reserves it (entry "
                   "points keep their names)",
                   fn->name);
    p->shadowing[p->nshadowing++] = fn;
  }
  const char *name = ep->name;
  declare(p, name, fn->loc);
  printf_(p,
          "\n@compute @workgroup_size(rk_wg_x, rk_wg_y, rk_wg_z)\n"
          "fn %.400s(@builtin(local_invocation_id) rk_tid: vec3<u32>,\n"
          "    @builtin(workgroup_id) rk_bid: vec3<u32>,\n"
          "    @builtin(num_workgroups) rk_gdim: vec3<u32>) {\n",
          name);
  const char *suffix = params_suffix(p, name);
  if (batch)
    printf_(p,
            "  let " CG_BATCH_COUNT_NAME
            ": u32 = rk_params%.400s." CG_BATCH_COUNT_NAME ";\n",
            suffix);
  for (uint32_t i = 0; i < ep->nparams; ++i) {
    const cg_var_t *v = ep->params[i].var;
    if (!v || v->type->kind == CG_TY_PTR) continue;
    puts_(p, v->modified ? "  var " : "  let ");
    name_(p, v->name);
    puts_(p, ": ");
    type_(p, v->type, false);
    printf_(p, " = rk_params%.400s.", suffix);
    name_(p, v->name);
    puts_(p, ";\n");
  }
}

/* Staged cell rk_i along axis a: "rk_i % 18", "rk_i / 18 % 18". */
static void cell(printer_t *p, const cg_stencil_plan_t *s, int a) {
  rk__cg_emit_stencil_cell(p->out, s, a);
}

static void stencil_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_stencil_plan_t *s = fp->stencil;
  const cg_var_t *pos = s->pos;
  const uint32_t D = s->dims, H = s->halo;
  const uint32_t *T = s->tile;
  for (uint32_t i = 0; s->staged && i < s->ntiled; ++i) {
    const cg_var_t *b = s->tiled[i];
    char name[600];
    snprintf(name, sizeof name, CG_TILE_PREFIX "%.500s", resource_string(p, b));
    declare(p, rk__cg_strndup(p->ctx, name, strlen(name)), b->loc);
    printf_(p, "var<workgroup> %s: ", name);
    for (uint32_t a = 0; a < D; ++a) puts_(p, "array<");
    type_(p, b->type->elem, false);
    for (uint32_t a = 0; a < D; ++a) printf_(p, ", %u>", (unsigned)s->full[a]);
    puts_(p, ";\n");
  }
  entry_signature(p, &fp->entries[0]);
  puts_(p, "  var ");
  name_(p, pos->name);
  puts_(p, ": rk_stencil_pos_t;\n");
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    puts_(p, "  ");
    name_(p, pos->name);
    printf_(p, ".%c = ", "xyz"[a]);
    if (a >= D) {
      puts_(p, "0;\n");
    } else if (s->blocked) {
      printf_(p, "i32(rk_bid.%c * %uu + rk_tid.%c);\n", "xyz"[a],
              (unsigned)T[a], "xyz"[a]);
    } else {
      puts_(p, "i32(");
      index_builtin(p, CG_INDEX_GLOBAL, (int)a);
      puts_(p, ");\n");
    }
  }
  for (uint32_t a = 0; a < CG_AXES; ++a) {
    puts_(p, "  ");
    name_(p, pos->name);
    printf_(p, ".n%c = ", "xyz"[a]);
    if (a < D)
      name_(p, s->extent[a]->name);
    else
      puts_(p, "1");
    puts_(p, ";\n");
  }
  if (s->staged) {
    printf_(p, "  // Load the %ux%u", (unsigned)T[0], (unsigned)T[1]);
    if (D == 3) printf_(p, "x%u", (unsigned)T[2]);
    printf_(p, " tile and its halo of %u.\n", (unsigned)H);
    puts_(p, "  for (var rk_i: i32 = i32(");
    if (D == 3)
      printf_(p, "(rk_tid.z * %uu + rk_tid.y) * %uu + rk_tid.x", (unsigned)T[1],
              (unsigned)T[0]);
    else
      printf_(p, "rk_tid.y * %uu + rk_tid.x", (unsigned)T[0]);
    printf_(p, "); rk_i < %u; rk_i += %u) {\n", (unsigned)s->cells,
            (unsigned)s->threads);
    static const char *const kG[] = {"rk_gx", "rk_gy", "rk_gz"};
    for (uint32_t a = 0; a < D; ++a) {
      printf_(p, "    let %s: i32 = i32(rk_bid.%c * %uu) + ", kG[a], "xyz"[a],
              (unsigned)T[a]);
      cell(p, s, (int)a);
      printf_(p, " - %u;\n", (unsigned)H);
    }
    puts_(p, "    let rk_in: bool = ");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " && ");
      printf_(p, "%s >= 0 && %s < ", kG[a], kG[a]);
      name_(p, s->extent[a]->name);
    }
    puts_(p, ";\n");
    for (uint32_t i = 0; i < s->ntiled; ++i) {
      const cg_var_t *b = s->tiled[i];
      puts_(p, "    " CG_TILE_PREFIX);
      resource_name(p, b);
      for (int a = (int)D - 1; a >= 0; --a) {
        /* `rk_i / 18 % 18` is fine as an index */
        puts_(p, "[");
        cell(p, s, a);
        puts_(p, "]");
      }
      puts_(p, " = ");
      builtin_call(p, "select");
      type_(p, b->type->elem, false);
      puts_(p, "(), ");
      resource_name(p, b);
      puts_(p, "[");
      if (D == 3) {
        puts_(p, "(rk_gz * ");
        name_(p, s->extent[1]->name);
        puts_(p, " + rk_gy) * ");
      } else {
        puts_(p, "rk_gy * ");
      }
      name_(p, s->extent[0]->name);
      puts_(p, " + rk_gx], rk_in);\n");
    }
    puts_(p, "  }\n  ");
    builtin_call(p, "workgroupBarrier");
    puts_(p, ");\n");
  }
  if (s->blocked) {
    /* Threads beyond the tile only helped to load it. */
    puts_(p, "  if (");
    for (uint32_t a = 0; a < D; ++a) {
      if (a) puts_(p, " || ");
      printf_(p, "rk_tid.%c >= %uu", "xyz"[a], (unsigned)T[a]);
    }
    puts_(p, ") {\n    return;\n  }\n");
  }
  /* Only interior points run the body. */
  rk__cg_emit_stencil_interior(p->out, RK_TARGET_WGSL, s,
                               ") {\n    return;\n  }\n");
  if (s->staged) {
    static const char *const kL[] = {"rk_lx", "rk_ly", "rk_lz"};
    for (uint32_t a = 0; a < D; ++a)
      printf_(p, "  let %s: i32 = i32(rk_tid.%c) + %u;\n", kL[a], "xyz"[a],
              (unsigned)H);
  }
  puts_(p, "\n");
  function_body(p, fp->fn->body);
  puts_(p, "}\n");
}

/* if (global thread 0) {, the condition that opens a handler's entries. */
static void thread_zero(printer_t *p) {
  puts_(p, "  if (");
  for (int a = 0; a < CG_AXES; ++a) {
    if (a) puts_(p, " && ");
    index_builtin(p, CG_INDEX_GLOBAL, a);
    puts_(p, " == 0u");
  }
  puts_(p, ") {\n");
}

/* A batch entry's bindings beyond its handler's: the status buffer (a
 * void handler's entry has none), then the struct holding rk_count. */
static void batch_resources(printer_t *p, const cg_func_plan_t *fp,
                            const cg_entry_plan_t *ep) {
  const cg_func_t *fn = fp->fn;
  uint32_t binding = fn->nparams;
  const char *name = ep->name;
  puts_(p, "\n");
  if (!fp->handler->status) {
    const char *status = status_string(p, fn);
    declare(p, status, fn->loc);
    printf_(p,
            "// 0 for each message %.400s handled, written by global thread 0 "
            "of\n// %.400s.\n"
            "@group(0) @binding(%u) var<storage, read_write> %s: "
            "array<i32>;\n",
            fn->name, name, (unsigned)binding, status);
  }
  binding++;
  const char *suffix = params_suffix(p, name);
  char tname[600], vname[600];
  snprintf(tname, sizeof tname, "rk_params%.500s_t", suffix);
  snprintf(vname, sizeof vname, "rk_params%.500s", suffix);
  declare(p, rk__cg_strndup(p->ctx, tname, strlen(tname)), fn->loc);
  declare(p, rk__cg_strndup(p->ctx, vname, strlen(vname)), fn->loc);
  printf_(p,
          "// The by-value parameters of %.400s.\nstruct %s {\n"
          "  " CG_BATCH_COUNT_NAME
          ": u32,\n}\n"
          "@group(0) @binding(%u) var<storage, read> %s: %s;\n",
          name, tname, (unsigned)binding, vname, tname);
}

static void handler_entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  const cg_handler_plan_t *h = fp->handler;
  /* The body as rk_handle_<name>, reading message rk_m of the module-scope
   * buffers. */
  const char *hname = h->handle_name;
  declare(p, hname, fn->loc);
  printf_(p, "\nfn %s(rk_m: u32%s)%s {\n", hname,
          fn->uses_index
              ? ", rk_tid: vec3<u32>, rk_bid: vec3<u32>, rk_gdim: vec3<u32>"
              : "",
          h->status ? " -> i32" : "");
  if (h->status)
    value_function_body(p, fn->ret, fn->body);
  else
    function_body(p, fn->body);
  puts_(p, "}\n");
  const char *ix = fn->uses_index ? ", rk_tid, rk_bid, rk_gdim" : "";
  const char *status = status_string(p, fn);
  for (uint32_t k = 0; k < fp->nentries; ++k) {
    const cg_entry_plan_t *ep = &fp->entries[k];
    if (ep->form == CG_FORM_HANDLER) {
      /* One message per launch, handled by global thread 0. */
      entry_signature(p, ep);
      thread_zero(p);
      /* An int handler's return value goes to the caller through
       * rk_status. */
      puts_(p, "    ");
      if (h->status) printf_(p, "%s[0] = ", status);
      printf_(p, "%s(0u%s);\n  }\n}\n", hname, ix);
      continue;
    }
    /* rk_count messages per launch, in order, handled by global thread
     * 0. */
    batch_resources(p, fp, ep);
    entry_signature(p, ep);
    thread_zero(p);
    puts_(p, "    for (var rk_m: u32 = 0u; rk_m < " CG_BATCH_COUNT_NAME
             "; rk_m++) {\n      ");
    if (h->status)
      printf_(p, "%s[rk_m] = %s(rk_m%s);\n", status, hname, ix);
    else
      printf_(p, "%s(rk_m%s);\n      %s[rk_m] = 0;\n", hname, ix, status);
    puts_(p, "    }\n  }\n}\n");
  }
}

static void entry(printer_t *p, const cg_func_plan_t *fp) {
  const cg_func_t *fn = fp->fn;
  p->fn = fn;
  p->fp = fp;
  p->entry = fn;
  p->ntemps = 0;
  memset(&p->atomic_vars, 0, sizeof p->atomic_vars);
  find_atomics_stmt(p, fn->body);
  resources(p, fp);
  switch (fn->kind) {
    case CG_FN_KERNEL:
      entry_signature(p, &fp->entries[0]);
      function_body(p, fn->body);
      puts_(p, "}\n");
      break;
    case CG_FN_STENCIL:
      stencil_entry(p, fp);
      break;
    case CG_FN_HANDLER:
      handler_entry(p, fp);
      break;
    default:
      break;
  }
  p->entry = NULL;
  memset(&p->atomic_vars, 0, sizeof p->atomic_vars);
}

static void header_comment(printer_t *p, const char *source_name) {
  puts_(p,
        "// Generated by rk for target wgsl (WebGPU Shading Language) "
        "from\n//   ");
  for (const char *s = source_name; *s && s - source_name < 200; ++s) {
    char c = *s;
    if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
    rk__strbuf_append(p->out, &c, 1);
  }
  puts_(
      p,
      "\n// Do not edit: change the kernel source and transpile again.\n"
      "//\n"
      "// Bindings (group 0) per entry point: its buffer parameters at 0..k-1 "
      "in\n// parameter order, then, if it has by-value parameters, the "
      "struct of them\n// (rk_params_t; rk_params_<entry>_t with several "
      "entries) at k. Set the\n// pipeline constants rk_wg_x, rk_wg_y, "
      "rk_wg_z to the launch's block size.\n");
}

void rk__cg_emit_wgsl(cg_ctx_t *ctx, const cg_plan_t *plan,
                      const cg_emit_options_t *options, rk__strbuf_t *out) {
  const cg_unit_t *unit = plan->unit;
  printer_t p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.plan = plan;
  p.out = out;
  p.multi = plan->nselected > 1;
  header_comment(&p, options->source_name ? options->source_name : "<source>");
  if (plan->nselected) {
    static const char *const kWg[] = {"rk_wg_x", "rk_wg_y", "rk_wg_z"};
    static const char *const kDefault[] = {"64u", "1u", "1u"};
    puts_(&p, "\n");
    for (int a = 0; a < 3; ++a) {
      cg_loc_t loc = {1, 1, 0};
      declare(&p, kWg[a], loc);
      printf_(&p, "override %s: u32 = %s;\n", kWg[a], kDefault[a]);
    }
  }
  if (plan->dyn_shared) {
    cg_loc_t loc = {1, 1, 0};
    declare(&p, "rk_dyn_shared_bytes", loc);
    puts_(&p,
          "\n// Bytes of the dynamic workgroup memory (rk_dynamic_shared()): "
          "set the\n// pipeline constant rk_dyn_shared_bytes to the launch's "
          "shared_mem, a\n// multiple of the element size, at least one "
          "element.\n"
          "override rk_dyn_shared_bytes: u32 = 16u;\n");
  }
  if (unit->has_stencil) {
    cg_loc_t loc = {1, 1, 0};
    declare(&p, "rk_stencil_pos_t", loc);
    puts_(&p,
          "\n// The position of a stencil point: global coordinates, the "
          "linear index\n// idx = (z * ny + y) * nx + x and the domain size.\n"
          "struct rk_stencil_pos_t {\n"
          "  x: i32,\n  y: i32,\n  z: i32,\n  idx: i32,\n"
          "  nx: i32,\n  ny: i32,\n  nz: i32,\n}\n");
  }
  bool after_consts = true;
  for (uint32_t i = 0; i < unit->nitems; ++i) {
    const cg_item_t *it = &unit->items[i];
    switch (it->kind) {
      case CG_ITEM_STRUCT:
        struct_def(&p, it->st);
        after_consts = true;
        break;
      case CG_ITEM_MACRO:
      case CG_ITEM_CONST: {
        const cg_var_t *v = it->var;
        declare(&p, spelled(&p, v->name), v->loc);
        if (after_consts) puts_(&p, "\n");
        after_consts = false;
        puts_(&p, "const ");
        name_(&p, v->name);
        cg_type_kind_t k = v->type->kind;
        if (k != CG_TY_I64 && k != CG_TY_U64 && k != CG_TY_F64) {
          puts_(&p, ": "); /* else abstract: only valid while unused */
          type_(&p, v->type, false);
        }
        puts_(&p, " = ");
        p.fn = NULL;
        p.fp = NULL;
        expr(&p, v->init);
        puts_(&p, ";\n");
        break;
      }
      case CG_ITEM_FUNC:
        after_consts = true;
        if (it->fn->kind == CG_FN_HELPER)
          helper(&p, &plan->funcs[i]);
        else if (plan->funcs[i].selected)
          entry(&p, &plan->funcs[i]);
        break;
    }
    check_size(&p, (cg_loc_t){1, 1, 0});
  }
  /* An entry point that shadows a built-in the output calls. */
  for (int i = 0; i < p.nshadowing && !out->failed; ++i) {
    const char *name = p.shadowing[i]->name;
    if (rk__cg_map_get(&p.called, name))
      rk__cg_error(ctx, p.shadowing[i]->loc,
                   "'%s' cannot name an entry point here: the WGSL output "
                   "calls WGSL's built-in %s(), which the entry point's "
                   "name would hide",
                   name, name);
  }
}
