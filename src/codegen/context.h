/* The state of one compilation: an arena that owns every node, token and
 * string (freed at once when the compilation ends), the source, the target's
 * capabilities, and the error exit.
 *
 * Errors do not propagate through return values. The lexer, parser and
 * checker call rk__cg_error(), which records the diagnostic and longjmps to
 * the one setjmp in codegen.c; since everything lives in the arena, nothing
 * needs unwinding. The printers never fail except for allocation (sticky in
 * the string buffer).
 *
 *   cg_ctx_t ctx;
 *   jmp_buf jb;
 *   rk__cg_ctx_init(&ctx, source, "saxpy.c", &caps);
 *   ctx.jmp = &jb;
 *   if (setjmp(jb) == 0) { ...lex, parse, check, print... }
 *   else status = ctx.status;       // RK_ERR_COMPILE or RK_ERR_OUT_OF_MEMORY
 *   rk__cg_ctx_free(&ctx);
 */
#ifndef RK_CODEGEN_CONTEXT_H_
#define RK_CODEGEN_CONTEXT_H_

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "rk/codegen.h"

/* Limits that keep every input bounded in time and memory. */
enum {
  CG_MAX_SOURCE = 1 << 20,    /* bytes of source */
  CG_MAX_DEPTH = 256,         /* nesting of statements and expressions */
  CG_MAX_PARAMS = 64,         /* parameters of one function */
  CG_MAX_CONDS = 64,          /* nesting of #ifdef/#ifndef */
  CG_MAX_FIELDS = 256,        /* fields of one struct */
  CG_MAX_ARENA = 256 << 20,   /* bytes of one compilation's arena */
  CG_MAX_OBJECT = 1 << 30,    /* bytes of one type */
  CG_MAX_STRUCT_ARG = 256,    /* bytes of a struct passed by value */
  CG_MAX_DIMS = 8,            /* dimensions of an array */
  CG_MAX_IDENT = 255,         /* characters of an identifier */
  CG_MAX_TILE_THREADS = 1024, /* threads of a stencil's tile (a block) */
  CG_MAX_HALO = 16,           /* a stencil's halo */
};

/* ---- Arena ------------------------------------------------------------- */

typedef struct cg_chunk cg_chunk_t;

typedef struct cg_arena {
  cg_chunk_t *head;
  size_t total; /* bytes obtained from malloc so far */
} cg_arena_t;

/* Zeroed, 16-byte aligned memory; NULL when malloc fails or the arena would
 * grow past CG_MAX_ARENA. */
void *rk__cg_arena_alloc(cg_arena_t *arena, size_t n);
void rk__cg_arena_free(cg_arena_t *arena);

/* Test hook: the n-th arena allocation from now on this thread fails
 * (0 = never). Lets tests prove that every allocation failure is handled. */
void rk__cg_fail_alloc_after(unsigned n);

/* ---- Locations and the compilation context ---------------------------- */

typedef struct cg_loc {
  uint32_t line, col; /* 1-based */
  uint32_t offset;    /* byte offset of the first character */
} cg_loc_t;

/* What a target can express; the checker refuses the rest. */
typedef struct cg_caps {
  const char *target_name; /* for messages: "msl"; NULL = no target */
  bool i64;                /* int64_t, uint64_t, long long */
  bool f64;                /* double */
  /* Stencils run one block per tile (positions from block and thread
   * indices; threads beyond the tile return) and read neighbours from
   * copies of the tile staged in block-shared memory: the GPU targets. */
  bool staged_stencils;
} cg_caps_t;

typedef struct cg_ctx {
  cg_arena_t arena;
  const char *source;
  size_t source_len;
  const char *source_name;
  cg_caps_t caps;
  jmp_buf *jmp;         /* rk__cg_error() jumps here */
  rk_status_t status;   /* why it jumped */
  rk_diagnostic_t diag; /* filled for RK_ERR_COMPILE */
  /* Refusals of what the target cannot express (rk__cg_refuse): with
   * defer_refusal the first is kept here and checking goes on. */
  bool defer_refusal;
  const char *refusal; /* "name:line:col: error: ..." with line and caret */
  rk_diagnostic_t refusal_diag;
} cg_ctx_t;

void rk__cg_ctx_init(cg_ctx_t *ctx, const char *source, size_t len,
                     const char *source_name, const cg_caps_t *caps);
void rk__cg_ctx_free(cg_ctx_t *ctx);

/* Records "name:line:col: error: <message>", the source line and a caret in
 * rk_last_error() and ctx->diag, then jumps to ctx->jmp with
 * RK_ERR_COMPILE. */
_Noreturn void rk__cg_error(cg_ctx_t *ctx, cg_loc_t loc, const char *fmt, ...)
    RK__PRINTF(3, 4);
/* A construct the target cannot express (a type, a built-in): as
 * rk__cg_error(), unless ctx->defer_refusal, where the first refusal is
 * kept in ctx->refusal / ctx->refusal_diag and the call returns, so the
 * source is still checked and described in full. */
void rk__cg_refuse(cg_ctx_t *ctx, cg_loc_t loc, const char *fmt, ...)
    RK__PRINTF(3, 4);
/* Jumps to ctx->jmp with RK_ERR_OUT_OF_MEMORY. */
_Noreturn void rk__cg_oom(cg_ctx_t *ctx);

/* Arena allocation that jumps out on failure; zeroed. */
void *rk__cg_alloc(cg_ctx_t *ctx, size_t n);
/* A NUL-terminated copy of s[0..n) in the arena. */
char *rk__cg_strndup(cg_ctx_t *ctx, const char *s, size_t n);
/* a, b and c (any may be "") joined, in the arena. */
const char *rk__cg_concat(cg_ctx_t *ctx, const char *a, const char *b,
                          const char *c);

/* A growable array of pointers in the arena (old storage is left to the
 * arena; growth doubles, so the waste is bounded). */
typedef struct cg_vec {
  void **v;
  uint32_t n, cap;
} cg_vec_t;

void rk__cg_vec_push(cg_ctx_t *ctx, cg_vec_t *vec, void *item);

/* ---- A string-keyed hash map (arena-backed) ---------------------------- */

typedef struct cg_map_slot {
  const char *key; /* NULL = empty */
  void *value;
} cg_map_slot_t;

typedef struct cg_map {
  cg_map_slot_t *slots;
  uint32_t cap, count; /* cap is a power of two or 0 */
} cg_map_t;

/* The value stored for key, or NULL. */
void *rk__cg_map_get(const cg_map_t *map, const char *key);
/* Inserts or replaces. */
void rk__cg_map_put(cg_ctx_t *ctx, cg_map_t *map, const char *key, void *value);

#endif /* RK_CODEGEN_CONTEXT_H_ */
