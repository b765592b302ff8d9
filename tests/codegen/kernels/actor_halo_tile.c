/* The tile actor of `rk demo halo` (tools/rk/demo_halo.c, kSource): a
 * stateful handler that sends its edges to four neighbours (rk_send on
 * ports 0-3) and computes a step once their halos are in; and the
 * one-kernel-per-step reference. Kept in the corpus so that every target
 * prints it and the validators (NVRTC, naga, clang for MSL, PoCL) check
 * it. A copy: change both together. */
#include <rk/kernel.h>
#define TILE 32

/* kind 0: advance n steps (host); 1: a halo (side, step); 2: query. */
typedef struct { int kind; int step; int side; int n; float edge[TILE]; } tile_msg_t;
typedef struct { int step; int pending; int errors; int pad; float u[TILE][TILE]; } tile_view_t;
typedef struct {
  int tx, ty, ntx, nty;
  int step, target, sent, errors;
  int got[2];
  int cur, pad;
  float k;
  float u[2][TILE][TILE];
  float halo[2][4][TILE];
} tile_t;

RK_HANDLER int tile(const tile_msg_t *in, tile_view_t *out, tile_t *s) {
  int has_n = s->ty > 0, has_s = s->ty < s->nty - 1;
  int has_w = s->tx > 0, has_e = s->tx < s->ntx - 1;
  int expected = has_n + has_s + has_w + has_e;
  if (in->kind == 0) {
    s->target = s->step + in->n;
  } else if (in->kind == 1) {
    int p = in->step & 1;
    for (int i = 0; i < TILE; ++i) s->halo[p][in->side][i] = in->edge[i];
    s->got[p] += 1;
  }
  int progress = 1;
  while (progress) {
    progress = 0;
    if (s->step < s->target && s->sent != s->step) {
      /* Our edges for this step go to the neighbours, where they are
       * the opposite side's halo. */
      tile_msg_t m;
      m.kind = 1;
      m.step = s->step;
      m.n = 0;
      int c = s->cur;
      if (has_n) {
        m.side = 1;
        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][0][i];
        if (rk_send(0, &m) != 0) s->errors += 1;
      }
      if (has_s) {
        m.side = 0;
        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][TILE - 1][i];
        if (rk_send(1, &m) != 0) s->errors += 1;
      }
      if (has_w) {
        m.side = 3;
        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][i][0];
        if (rk_send(2, &m) != 0) s->errors += 1;
      }
      if (has_e) {
        m.side = 2;
        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][i][TILE - 1];
        if (rk_send(3, &m) != 0) s->errors += 1;
      }
      s->sent = s->step;
    }
    int p = s->step & 1;
    if (s->step < s->target && s->got[p] == expected) {
      int c = s->cur, d = 1 - s->cur;
      for (int y = 0; y < TILE; ++y) {
        for (int x = 0; x < TILE; ++x) {
          float v = s->u[c][y][x];
          float vn = y > 0 ? s->u[c][y - 1][x] : (has_n ? s->halo[p][0][x] : 0.0f);
          float vs = y < TILE - 1 ? s->u[c][y + 1][x] : (has_s ? s->halo[p][1][x] : 0.0f);
          float vw = x > 0 ? s->u[c][y][x - 1] : (has_w ? s->halo[p][2][y] : 0.0f);
          float ve = x < TILE - 1 ? s->u[c][y][x + 1] : (has_e ? s->halo[p][3][y] : 0.0f);
          s->u[d][y][x] = v + s->k * (vn + vs + vw + ve - 4.0f * v);
        }
      }
      s->cur = d;
      s->got[p] = 0;
      s->step += 1;
      progress = 1;
    }
  }
  out->step = s->step;
  out->pending = s->target - s->step;
  out->errors = s->errors;
  out->pad = 0;
  if (in->kind == 2) {
    for (int y = 0; y < TILE; ++y)
      for (int x = 0; x < TILE; ++x) out->u[y][x] = s->u[s->cur][y][x];
  }
  return 0;
}

/* The reference: one step of the whole grid per launch, on a grid with
 * a border of zeros (nx + 2 by ny + 2). */
RK_KERNEL void heat_step(int nx, int ny, float k, const float *in,
                         float *out) {
  int x = (int)rk_global_idx_x(), y = (int)rk_global_idx_y();
  if (x >= 1 && x <= nx && y >= 1 && y <= ny) {
    int w = nx + 2, i = y * w + x;
    float v = in[i];
    out[i] = v + k * (in[i - w] + in[i + w] + in[i - 1] + in[i + 1] - 4.0f * v);
  }
}
