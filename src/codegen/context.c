/* Arena, diagnostics and small containers of one compilation (context.h). */
#include "codegen/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Arena ------------------------------------------------------------- */

enum {
  kChunkSize = 64 * 1024, /* bytes of an arena chunk */
  kAlign = 16,            /* of every arena allocation */
  kShownLine = 300,       /* bytes of the source line a diagnostic shows */
  /* Room beside a diagnostic's message for the name, position, source
   * line and caret. */
  kDiagExtra = 1024,
};

struct cg_chunk {
  cg_chunk_t *next;
  size_t used, cap;
  _Alignas(kAlign) unsigned char data[];
};

static _Thread_local unsigned g_fail_after;

void rk__cg_fail_alloc_after(unsigned n) { g_fail_after = n; }

void *rk__cg_arena_alloc(cg_arena_t *arena, size_t n) {
  if (g_fail_after && --g_fail_after == 0) return NULL;
  if (n > CG_MAX_ARENA) return NULL;
  n = (n + kAlign - 1) & ~(size_t)(kAlign - 1);
  if (n == 0) n = kAlign;
  cg_chunk_t *c = arena->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > kChunkSize / 2 ? n : kChunkSize;
    if (arena->total + cap > CG_MAX_ARENA) return NULL;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    arena->total += cap;
    if (n > kChunkSize / 2 && arena->head) {
      /* A big block gets its own chunk behind the current one, so the
       * current chunk's free space is not lost. */
      c->next = arena->head->next;
      arena->head->next = c;
    } else {
      c->next = arena->head;
      arena->head = c;
    }
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

void rk__cg_arena_free(cg_arena_t *arena) {
  for (cg_chunk_t *c = arena->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  arena->head = NULL;
  arena->total = 0;
}

/* ---- Context ----------------------------------------------------------- */

void rk__cg_ctx_init(cg_ctx_t *ctx, const char *source, size_t len,
                     const char *source_name, const cg_caps_t *caps) {
  memset(ctx, 0, sizeof *ctx);
  ctx->source = source;
  ctx->source_len = len;
  ctx->source_name = source_name && *source_name ? source_name : "<source>";
  if (caps) ctx->caps = *caps;
  snprintf(ctx->diag.source_name, sizeof ctx->diag.source_name, "%s",
           ctx->source_name);
}

void rk__cg_ctx_free(cg_ctx_t *ctx) { rk__cg_arena_free(&ctx->arena); }

/* Fills *diag (message already there) with loc, and out[cap] with
 * "name:line:col: error: <message>", the source line and a caret. */
static void format_diag(const cg_ctx_t *ctx, cg_loc_t loc,
                        rk_diagnostic_t *diag, char *out, size_t cap) {
  diag->line = loc.line;
  diag->column = loc.col;

  /* The source line and a caret under the column (tabs kept so the caret
   * lines up in a terminal). */
  size_t off = loc.offset <= ctx->source_len ? loc.offset : ctx->source_len;
  size_t start = off;
  while (start > 0 && ctx->source[start - 1] != '\n') --start;
  size_t end = off;
  while (end < ctx->source_len && ctx->source[end] != '\n') ++end;
  size_t shown = end - start > kShownLine ? kShownLine : end - start;
  char caret[kShownLine + 20];
  size_t ci = 0;
  for (size_t i = start; i < off && ci < sizeof caret - 2; ++i)
    caret[ci++] = ctx->source[i] == '\t' ? '\t' : ' ';
  caret[ci++] = '^';
  caret[ci] = '\0';
  /* Control characters would garble a terminal; show them as '?'. */
  char line[kShownLine + 4];
  for (size_t i = 0; i < shown; ++i) {
    unsigned char ch = (unsigned char)ctx->source[start + i];
    line[i] = (ch < 32 && ch != '\t') || ch == 127 ? '?' : (char)ch;
  }
  line[shown] = '\0';
  snprintf(out, cap, "%s:%u:%u: error: %s\n%s\n%s", ctx->source_name,
           (unsigned)loc.line, (unsigned)loc.col, diag->message, line, caret);
}

_Noreturn void rk__cg_error(cg_ctx_t *ctx, cg_loc_t loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->diag.message, sizeof ctx->diag.message, fmt, ap);
  va_end(ap);
  char text[sizeof ctx->diag.message + kDiagExtra];
  format_diag(ctx, loc, &ctx->diag, text, sizeof text);
  rk__fail(RK_ERR_COMPILE, "%s", text);
  ctx->status = RK_ERR_COMPILE;
  longjmp(*ctx->jmp, 1);
}

void rk__cg_refuse(cg_ctx_t *ctx, cg_loc_t loc, const char *fmt, ...) {
  if (ctx->defer_refusal && ctx->refusal) return; /* the first one stands */
  char message[sizeof ctx->diag.message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  if (!ctx->defer_refusal) rk__cg_error(ctx, loc, "%s", message);
  rk_diagnostic_t *diag = &ctx->refusal_diag;
  memcpy(diag->message, message, sizeof message);
  snprintf(diag->source_name, sizeof diag->source_name, "%s", ctx->source_name);
  char text[sizeof message + kDiagExtra];
  format_diag(ctx, loc, diag, text, sizeof text);
  ctx->refusal = rk__cg_strndup(ctx, text, strlen(text));
}

_Noreturn void rk__cg_oom(cg_ctx_t *ctx) {
  rk__fail(RK_ERR_OUT_OF_MEMORY, "%s: out of memory while transpiling",
           ctx->source_name);
  ctx->status = RK_ERR_OUT_OF_MEMORY;
  memset(&ctx->diag.line, 0,
         sizeof ctx->diag - offsetof(rk_diagnostic_t, line));
  longjmp(*ctx->jmp, 1);
}

void *rk__cg_alloc(cg_ctx_t *ctx, size_t n) {
  void *p = rk__cg_arena_alloc(&ctx->arena, n);
  if (!p) rk__cg_oom(ctx);
  return p;
}

char *rk__cg_strndup(cg_ctx_t *ctx, const char *s, size_t n) {
  char *p = rk__cg_alloc(ctx, n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

const char *rk__cg_concat(cg_ctx_t *ctx, const char *a, const char *b,
                          const char *c) {
  size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
  char *s = rk__cg_alloc(ctx, na + nb + nc + 1);
  memcpy(s, a, na);
  memcpy(s + na, b, nb);
  memcpy(s + na + nb, c, nc + 1);
  return s;
}

void rk__cg_vec_push(cg_ctx_t *ctx, cg_vec_t *vec, void *item) {
  if (vec->n == vec->cap) {
    uint32_t cap = vec->cap ? vec->cap * 2 : 8;
    void **grown = rk__cg_alloc(ctx, (size_t)cap * sizeof *grown);
    if (vec->n) memcpy(grown, vec->v, (size_t)vec->n * sizeof *grown);
    vec->v = grown;
    vec->cap = cap;
  }
  vec->v[vec->n++] = item;
}

/* ---- Map --------------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

void *rk__cg_map_get(const cg_map_t *map, const char *key) {
  if (!map->cap) return NULL;
  for (uint32_t i = hash_str(key) & (map->cap - 1);;
       i = (i + 1) & (map->cap - 1)) {
    if (!map->slots[i].key) return NULL;
    if (strcmp(map->slots[i].key, key) == 0) return map->slots[i].value;
  }
}

static void map_insert(cg_map_slot_t *slots, uint32_t cap, const char *key,
                       void *value) {
  for (uint32_t i = hash_str(key) & (cap - 1);; i = (i + 1) & (cap - 1)) {
    if (!slots[i].key || strcmp(slots[i].key, key) == 0) {
      slots[i].key = key;
      slots[i].value = value;
      return;
    }
  }
}

void rk__cg_map_put(cg_ctx_t *ctx, cg_map_t *map, const char *key,
                    void *value) {
  if ((map->count + 1) * 2 > map->cap) {
    uint32_t cap = map->cap ? map->cap * 2 : 64;
    cg_map_slot_t *slots = rk__cg_alloc(ctx, (size_t)cap * sizeof *slots);
    for (uint32_t i = 0; i < map->cap; ++i)
      if (map->slots[i].key)
        map_insert(slots, cap, map->slots[i].key, map->slots[i].value);
    map->slots = slots;
    map->cap = cap;
  }
  if (!rk__cg_map_get(map, key)) map->count++;
  map_insert(map->slots, map->cap, key, value);
}
