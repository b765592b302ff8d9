/* demo_halo.c - `rk demo halo`: a 2D heat simulation split into a grid of
 * tile actors that exchange halos with their neighbours through K2K
 * channels every step (rk_send), checked against the same simulation run
 * as one stencil kernel launched per step on the same backend.
 *
 * The host sends each tile one command, "advance N steps", and then only
 * asks the tiles where they are and reads their cells back. Each tile: on
 * reaching a step it sends its four edges to its neighbours (ports 0..3:
 * north, south, west, east); once the halos of that step are in from every
 * neighbour it computes the step. A neighbour is at most one step ahead,
 * so halos are kept for two steps (by step parity).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"
#include "rk/rk.h"
#include "tool.h"

/* tests/codegen/kernels/actor_halo_tile.c holds a copy of kSource, for the
 * codegen validators: change both together. */
enum {
  kT = 32,     /* cells per tile side (TILE in the source) */
  kWarmup = 2, /* steps run before the timed ones, by both versions */
  kMaxRounds = 16,
};

static const char kSource[] =
    "#include <rk/kernel.h>\n"
    "#define TILE 32\n"
    "\n"
    "/* kind 0: advance n steps (host); 1: a halo (side, step); 2: query. */\n"
    "typedef struct { int kind; int step; int side; int n; float edge[TILE]; "
    "} tile_msg_t;\n"
    "typedef struct { int step; int pending; int errors; int pad; "
    "float u[TILE][TILE]; } tile_view_t;\n"
    "typedef struct {\n"
    "  int tx, ty, ntx, nty;\n"
    "  int step, target, sent, errors;\n"
    "  int got[2];\n"
    "  int cur, pad;\n"
    "  float k;\n"
    "  float u[2][TILE][TILE];\n"
    "  float halo[2][4][TILE];\n"
    "} tile_t;\n"
    "\n"
    "RK_HANDLER int tile(const tile_msg_t *in, tile_view_t *out, tile_t *s) "
    "{\n"
    "  int has_n = s->ty > 0, has_s = s->ty < s->nty - 1;\n"
    "  int has_w = s->tx > 0, has_e = s->tx < s->ntx - 1;\n"
    "  int expected = has_n + has_s + has_w + has_e;\n"
    "  if (in->kind == 0) {\n"
    "    s->target = s->step + in->n;\n"
    "  } else if (in->kind == 1) {\n"
    "    int p = in->step & 1;\n"
    "    for (int i = 0; i < TILE; ++i) s->halo[p][in->side][i] = "
    "in->edge[i];\n"
    "    s->got[p] += 1;\n"
    "  }\n"
    "  int progress = 1;\n"
    "  while (progress) {\n"
    "    progress = 0;\n"
    "    if (s->step < s->target && s->sent != s->step) {\n"
    "      /* Our edges for this step go to the neighbours, where they are\n"
    "       * the opposite side's halo. */\n"
    "      tile_msg_t m;\n"
    "      m.kind = 1;\n"
    "      m.step = s->step;\n"
    "      m.n = 0;\n"
    "      int c = s->cur;\n"
    "      if (has_n) {\n"
    "        m.side = 1;\n"
    "        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][0][i];\n"
    "        if (rk_send(0, &m) != 0) s->errors += 1;\n"
    "      }\n"
    "      if (has_s) {\n"
    "        m.side = 0;\n"
    "        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][TILE - 1][i];\n"
    "        if (rk_send(1, &m) != 0) s->errors += 1;\n"
    "      }\n"
    "      if (has_w) {\n"
    "        m.side = 3;\n"
    "        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][i][0];\n"
    "        if (rk_send(2, &m) != 0) s->errors += 1;\n"
    "      }\n"
    "      if (has_e) {\n"
    "        m.side = 2;\n"
    "        for (int i = 0; i < TILE; ++i) m.edge[i] = s->u[c][i][TILE - 1];\n"
    "        if (rk_send(3, &m) != 0) s->errors += 1;\n"
    "      }\n"
    "      s->sent = s->step;\n"
    "    }\n"
    "    int p = s->step & 1;\n"
    "    if (s->step < s->target && s->got[p] == expected) {\n"
    "      int c = s->cur, d = 1 - s->cur;\n"
    "      for (int y = 0; y < TILE; ++y) {\n"
    "        for (int x = 0; x < TILE; ++x) {\n"
    "          float v = s->u[c][y][x];\n"
    "          float vn = y > 0 ? s->u[c][y - 1][x] : (has_n ? "
    "s->halo[p][0][x] : 0.0f);\n"
    "          float vs = y < TILE - 1 ? s->u[c][y + 1][x] : (has_s ? "
    "s->halo[p][1][x] : 0.0f);\n"
    "          float vw = x > 0 ? s->u[c][y][x - 1] : (has_w ? "
    "s->halo[p][2][y] : 0.0f);\n"
    "          float ve = x < TILE - 1 ? s->u[c][y][x + 1] : (has_e ? "
    "s->halo[p][3][y] : 0.0f);\n"
    "          s->u[d][y][x] = v + s->k * (vn + vs + vw + ve - 4.0f * v);\n"
    "        }\n"
    "      }\n"
    "      s->cur = d;\n"
    "      s->got[p] = 0;\n"
    "      s->step += 1;\n"
    "      progress = 1;\n"
    "    }\n"
    "  }\n"
    "  out->step = s->step;\n"
    "  out->pending = s->target - s->step;\n"
    "  out->errors = s->errors;\n"
    "  out->pad = 0;\n"
    "  if (in->kind == 2) {\n"
    "    for (int y = 0; y < TILE; ++y)\n"
    "      for (int x = 0; x < TILE; ++x) out->u[y][x] = s->u[s->cur][y][x];\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "\n"
    "/* The reference: one step of the whole grid per launch, on a grid with\n"
    " * a border of zeros (nx + 2 by ny + 2). */\n"
    "RK_KERNEL void heat_step(int nx, int ny, float k, const float *in,\n"
    "                         float *out) {\n"
    "  int x = (int)rk_global_idx_x(), y = (int)rk_global_idx_y();\n"
    "  if (x >= 1 && x <= nx && y >= 1 && y <= ny) {\n"
    "    int w = nx + 2, i = y * w + x;\n"
    "    float v = in[i];\n"
    "    out[i] = v + k * (in[i - w] + in[i + w] + in[i - 1] + in[i + 1] - "
    "4.0f * v);\n"
    "  }\n"
    "}\n";

typedef struct {
  int kind, step, side, n;
  float edge[kT];
} tile_msg_t;
typedef struct {
  int step, pending, errors, pad;
  float u[kT][kT];
} tile_view_t;
typedef struct {
  int tx, ty, ntx, nty;
  int step, target, sent, errors;
  int got[2];
  int cur, pad;
  float k;
  float u[2][kT][kT];
  float halo[2][4][kT];
} tile_t;

static const float kK = 0.2f; /* diffusion number: stable below 0.25 */
/* Both sides compute v + k*(n + s + w + e - 4v) in the same order, but a
 * compiler may fuse a multiply-add in one and not the other. */
static const double kTolerance = 1e-3; /* absolute, on values 0 .. 100 */

static bool ok(rk_status_t s, const char *what) {
  if (s == RK_OK) return true;
  fprintf(stderr, "rk demo halo: %s: %s: %s\n", what, rk_status_name(s),
          rk_last_error());
  return false;
}

/* The initial temperature: a hot square off centre on a cold plate. */
static float initial(int x, int y, int nx, int ny) {
  return x >= nx / 4 && x < nx / 2 && y >= ny / 3 && y < (2 * ny) / 3 ? 100.0f
                                                                      : 0.0f;
}

typedef struct {
  int ntx, nty, nx, ny, steps;
  int rounds, per_round; /* steps = rounds * per_round, timed per round */
  double actor_s[kMaxRounds], kernel_s[kMaxRounds];
  double max_diff;
  int errors;
  bool matches;
  const char *path;
  uint64_t k2k_messages;
  bool split; /* --split: the right half of the tiles in a second process */
} halo_result_t;

/* Sends "advance `steps`" to every tile and waits until all are there,
 * asking each in turn. */
static bool advance(rk_actor_t **tiles, int n, int steps, tile_view_t *view) {
  tile_msg_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.kind = 0;
  cmd.n = steps;
  bool good = true;
  for (int i = 0; good && i < n; ++i)
    good = ok(rk_actor_call(tiles[i], &cmd, sizeof cmd, view, sizeof *view,
                            RK_TIMEOUT_INFINITE, NULL),
              "advance");
  tile_msg_t q;
  memset(&q, 0, sizeof q);
  q.kind = 3; /* a no-op: just the step */
  for (int i = 0; good && i < n; ++i) {
    const double give_up = tool_now_seconds() + 300.0;
    /* Each question is a request the tile answers between halos: ask less
     * often the longer it takes (20 us to 2 ms). */
    long pause_ns = 20000;
    for (;;) {
      good = ok(rk_actor_call(tiles[i], &q, sizeof q, view, sizeof *view,
                              RK_TIMEOUT_INFINITE, NULL),
                "asking a tile");
      if (!good || view->pending <= 0) break;
      if (tool_now_seconds() > give_up) {
        fprintf(stderr,
                "rk demo halo: tile %d stopped at step %d (a halo that "
                "never came)\n",
                i, view->step);
        return false;
      }
      struct timespec ts = {0, pause_ns};
      nanosleep(&ts, NULL);
      if (pause_ns < 2000000) pause_ns *= 2;
    }
  }
  return good;
}

/* The tile actors: launch, wire (each port to its neighbour), activate,
 * advance `steps`, wait, read back into `grid` (nx by ny). */
static bool run_tiles(rk_context_t *ctx, halo_result_t *r, float *grid) {
  const int n = r->ntx * r->nty;
  rk_actor_t **tiles = calloc((size_t)n, sizeof *tiles);
  tile_t *init = calloc(1, sizeof *init);
  tile_view_t *view = malloc(sizeof *view);
  bool good = tiles && init && view;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  o.input_capacity = 64;
  o.output_capacity = 8;
  o.initial_state_size = sizeof *init;
  o.initial_state = init;
  o.source_name = "halo.c";
  for (int i = 0; good && i < n; ++i) {
    memset(init, 0, sizeof *init);
    init->tx = i % r->ntx;
    init->ty = i / r->ntx;
    init->ntx = r->ntx;
    init->nty = r->nty;
    init->sent = -1;
    init->k = kK;
    for (int y = 0; y < kT; ++y)
      for (int x = 0; x < kT; ++x)
        init->u[0][y][x] =
            initial(init->tx * kT + x, init->ty * kT + y, r->nx, r->ny);
    good = ok(rk_actor_launch(ctx, kSource, "tile", &o, &tiles[i]),
              "launching a tile actor");
  }
  /* Port 0 north, 1 south, 2 west, 3 east. */
  for (int i = 0; good && i < n; ++i) {
    const int tx = i % r->ntx, ty = i / r->ntx;
    if (ty > 0)
      good &= ok(rk_actor_connect(tiles[i], 0, tiles[i - r->ntx]),
                 "connecting north");
    if (ty < r->nty - 1)
      good &= ok(rk_actor_connect(tiles[i], 1, tiles[i + r->ntx]),
                 "connecting south");
    if (tx > 0)
      good &=
          ok(rk_actor_connect(tiles[i], 2, tiles[i - 1]), "connecting west");
    if (tx < r->ntx - 1)
      good &=
          ok(rk_actor_connect(tiles[i], 3, tiles[i + 1]), "connecting east");
  }
  for (int i = 0; good && i < n; ++i)
    good = ok(rk_actor_activate(tiles[i]), "activating a tile");
  /* kWarmup steps untimed (first launches, caches), then the timed ones. */
  if (good) good = advance(tiles, n, kWarmup, view);
  for (int round = 0; round < r->rounds && good; ++round) {
    const double t0 = tool_now_seconds();
    good = advance(tiles, n, r->per_round, view);
    r->actor_s[round] = tool_now_seconds() - t0;
  }
  tile_msg_t q;
  memset(&q, 0, sizeof q);
  q.kind = 2;
  for (int i = 0; good && i < n; ++i) {
    good = ok(rk_actor_call(tiles[i], &q, sizeof q, view, sizeof *view,
                            RK_TIMEOUT_INFINITE, NULL),
              "reading a tile back");
    if (!good) break;
    r->errors += view->errors;
    const int tx = i % r->ntx, ty = i / r->ntx;
    for (int y = 0; y < kT; ++y)
      memcpy(&grid[(size_t)(ty * kT + y) * r->nx + tx * kT], view->u[y],
             sizeof view->u[y]);
    if (view->step != r->steps + kWarmup) good = false;
  }
  if (good && n) {
    rk_actor_k2k_stats_t st;
    for (int i = 0; i < n; ++i) {
      if (!ok(rk_actor_k2k_stats(tiles[i], &st), "K2K stats")) break;
      r->k2k_messages += st.sent;
      r->path = rk_k2k_path_name(st.path);
    }
  }
  for (int i = 0; tiles && i < n; ++i) {
    if (!tiles[i]) continue;
    if (!ok(rk_actor_terminate(tiles[i], 10000000000ull), "terminating"))
      good = false;
    rk_actor_destroy(tiles[i]);
  }
  free(tiles);
  free(init);
  free(view);
  return good;
}

/* ---- --split: two processes, one cluster ----------------------------------
 * The tiles of columns tx < ntx/2 stay in this process (the hub), the rest
 * go to a child process that joins it. Each side launches its tiles,
 * exports them as "halo/tile-<i>", wires every port: to a tile on its side
 * with rk_actor_connect, across the cut too (to a proxy of the other
 * side's tile: rk_cluster_lookup_actor); then activates them. The hub
 * drives all tiles with rk_actor_call, its own and the proxies of the
 * others, exactly as run_tiles does. */

static bool split_mine(const halo_result_t *r, int i, bool hub) {
  return ((i % r->ntx) < r->ntx / 2) == hub;
}

/* A tile's call, local or remote alike (a remote one with a deadline: its
 * member may die). */
static rk_status_t ref_call(rk_actor_t *t, const tile_msg_t *q,
                            tile_view_t *v) {
  return rk_actor_call(
      t, q, sizeof *q, v, sizeof *v,
      rk_actor_remote(t) ? 60000000000ull : RK_TIMEOUT_INFINITE, NULL);
}

static rk_actor_t *split_find(rk_cluster_t *c, int i) {
  char name[64];
  snprintf(name, sizeof name, "halo/tile-%d", i);
  const double give_up = tool_now_seconds() + 30.0;
  for (;;) {
    rk_actor_t *h = NULL;
    const rk_status_t s = rk_cluster_lookup_actor(c, name, 5000000000ull, &h);
    if (s == RK_OK) return h;
    if ((s != RK_ERR_NOT_FOUND && s != RK_ERR_UNAVAILABLE) ||
        tool_now_seconds() > give_up) {
      ok(s, "looking a tile up in the other process");
      return NULL;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
}

/* One side: launch, export and wire its tiles, activate them. `tiles`
 * gets this side's actors (NULL elsewhere). */
static bool split_setup(rk_context_t *ctx, rk_cluster_t *c,
                        const halo_result_t *r, bool hub, rk_actor_t **tiles) {
  const int n = r->ntx * r->nty;
  tile_t *init = calloc(1, sizeof *init);
  bool good = init != NULL;
  rk_actor_options_t o;
  rk_actor_options_init(&o);
  o.auto_activate = false;
  o.input_capacity = 64;
  o.output_capacity = 8;
  o.initial_state_size = sizeof *init;
  o.initial_state = init;
  o.source_name = "halo.c";
  for (int i = 0; good && i < n; ++i) {
    if (!split_mine(r, i, hub)) continue;
    memset(init, 0, sizeof *init);
    init->tx = i % r->ntx;
    init->ty = i / r->ntx;
    init->ntx = r->ntx;
    init->nty = r->nty;
    init->sent = -1;
    init->k = kK;
    for (int y = 0; y < kT; ++y)
      for (int x = 0; x < kT; ++x)
        init->u[0][y][x] =
            initial(init->tx * kT + x, init->ty * kT + y, r->nx, r->ny);
    good = ok(rk_actor_launch(ctx, kSource, "tile", &o, &tiles[i]),
              "launching a tile actor");
    char name[64];
    snprintf(name, sizeof name, "halo/tile-%d", i);
    if (good) good = ok(rk_cluster_export(c, tiles[i], name), "exporting");
  }
  free(init);
  for (int i = 0; good && i < n; ++i) {
    if (!tiles[i]) continue;
    const int tx = i % r->ntx, ty = i / r->ntx;
    const int to[4] = {ty > 0 ? i - r->ntx : -1,
                       ty < r->nty - 1 ? i + r->ntx : -1, tx > 0 ? i - 1 : -1,
                       tx < r->ntx - 1 ? i + 1 : -1};
    for (uint32_t p = 0; good && p < 4; ++p) {
      if (to[p] < 0) continue;
      if (tiles[to[p]]) {
        good = ok(rk_actor_connect(tiles[i], p, tiles[to[p]]), "connecting");
      } else {
        rk_actor_t *h = split_find(c, to[p]);
        /* The proxy is the port's (freed with the cluster). */
        good = h && ok(rk_actor_connect(tiles[i], p, h),
                       "connecting across processes");
      }
    }
  }
  for (int i = 0; good && i < n; ++i)
    if (tiles[i]) good = ok(rk_actor_activate(tiles[i]), "activating a tile");
  return good;
}

/* The child: its half, until the hub leaves. */
static int split_member(rk_backend_t *be, const char *addr,
                        const halo_result_t *r) {
  rk_context_t *ctx = NULL;
  if (!ok(rk_backend_create_context(be, 0, &ctx), "creating a context"))
    return 1;
  rk_cluster_options_t co;
  rk_cluster_options_init(&co);
  co.connect = addr;
  co.name = "halo-right";
  rk_cluster_t *c = NULL;
  if (!ok(rk_cluster_create(&co, &c), "joining the hub")) return 1;
  const int n = r->ntx * r->nty;
  rk_actor_t **tiles = calloc((size_t)n, sizeof *tiles);
  bool good = tiles && split_setup(ctx, c, r, false, tiles);
  while (good && rk_cluster_peer_count(c) > 0) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  rk_cluster_destroy(c);
  for (int i = 0; tiles && i < n; ++i)
    if (tiles[i]) {
      (void)rk_actor_terminate(tiles[i], 10000000000ull);
      rk_actor_destroy(tiles[i]);
    }
  free(tiles);
  rk_context_destroy(ctx);
  return good ? 0 : 1;
}

static bool run_tiles_split(rk_backend_t *be, rk_context_t *ctx,
                            halo_result_t *r, float *grid) {
  const int n = r->ntx * r->nty;
  rk_cluster_options_t co;
  rk_cluster_options_init(&co);
  co.listen = "127.0.0.1:0";
  co.name = "halo-left";
  rk_cluster_t *c = NULL;
  char addr[128];
  if (!ok(rk_cluster_create(&co, &c), "starting the hub")) return false;
  if (!ok(rk_cluster_address(c, addr, sizeof addr), "address")) {
    rk_cluster_destroy(c);
    return false;
  }
  /* The second process: this program again (fork and exec, so that it
   * starts with a clean UCX and one thread), told the hub's address. */
  char self[4096];
  if (!rk__executable_path(self, sizeof self)) {
    rk_cluster_destroy(c);
    return ok(RK_ERR_UNAVAILABLE, "finding this program's file");
  }
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "demo", "halo", "--backend", rk_backend_name(be),
          r->ntx == 2 ? "--quick" : "--split", "--split-member", addr,
          (char *)NULL);
    _exit(127);
  }
  rk_actor_t **tiles = calloc((size_t)n, sizeof *tiles);
  /* This side's tiles, or proxies of our own for the other side's. */
  rk_actor_t **refs = calloc((size_t)n, sizeof *refs);
  tile_view_t *view = malloc(sizeof *view);
  bool good =
      pid > 0 && tiles && refs && view && split_setup(ctx, c, r, true, tiles);
  /* Each of the other side's tiles answers a no-op once it is active. */
  tile_msg_t q;
  memset(&q, 0, sizeof q);
  q.kind = 3;
  for (int i = 0; good && i < n; ++i) {
    refs[i] = tiles[i];
    if (tiles[i]) continue;
    refs[i] = split_find(c, i);
    good = refs[i] != NULL;
    const double give_up = tool_now_seconds() + 30.0;
    while (good && ref_call(refs[i], &q, view) != RK_OK) {
      if (tool_now_seconds() > give_up) {
        good = ok(RK_ERR_TIMEOUT, "waiting for the other process's tiles");
        break;
      }
      struct timespec ts = {0, 10000000};
      nanosleep(&ts, NULL);
    }
  }
  for (int round = -1; round < r->rounds && good; ++round) {
    const int steps = round < 0 ? kWarmup : r->per_round;
    const double t0 = tool_now_seconds();
    tile_msg_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.kind = 0;
    cmd.n = steps;
    for (int i = 0; good && i < n; ++i)
      good = ok(ref_call(refs[i], &cmd, view), "advance");
    for (int i = 0; good && i < n; ++i) {
      const double give_up = tool_now_seconds() + 300.0;
      long pause_ns = 20000;
      for (;;) {
        good = ok(ref_call(refs[i], &q, view), "asking a tile");
        if (!good || view->pending <= 0) break;
        if (tool_now_seconds() > give_up) {
          fprintf(stderr, "rk demo halo: tile %d stopped at step %d\n", i,
                  view->step);
          good = false;
          break;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 2000000) pause_ns *= 2;
      }
    }
    if (round >= 0) r->actor_s[round] = tool_now_seconds() - t0;
  }
  q.kind = 2;
  for (int i = 0; good && i < n; ++i) {
    good = ok(ref_call(refs[i], &q, view), "reading a tile back");
    if (!good) break;
    r->errors += view->errors;
    const int tx = i % r->ntx, ty = i / r->ntx;
    for (int y = 0; y < kT; ++y)
      memcpy(&grid[(size_t)(ty * kT + y) * r->nx + tx * kT], view->u[y],
             sizeof view->u[y]);
    if (view->step != r->steps + kWarmup) good = false;
  }
  if (good) {
    rk_actor_k2k_stats_t st;
    for (int i = 0; i < n; ++i) {
      if (!tiles[i]) continue;
      if (!ok(rk_actor_k2k_stats(tiles[i], &st), "K2K stats")) break;
      r->k2k_messages += st.sent; /* this side's sends */
    }
    r->path = "cluster (UCX) across the cut";
  }
  for (int i = 0; refs && i < n; ++i)
    if (refs[i] && !tiles[i]) rk_actor_destroy(refs[i]);
  rk_cluster_destroy(c); /* the child leaves when it sees the hub go */
  int st = 0;
  if (pid > 0 &&
      (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
    fprintf(stderr, "rk demo halo: the second process failed\n");
    good = false;
  }
  for (int i = 0; tiles && i < n; ++i)
    if (tiles[i]) {
      if (!ok(rk_actor_terminate(tiles[i], 10000000000ull), "terminating"))
        good = false;
      rk_actor_destroy(tiles[i]);
    }
  free(tiles);
  free(refs);
  free(view);
  return good;
}

/* The same simulation as one kernel launched per step. */
static bool run_kernel(rk_context_t *ctx, halo_result_t *r, float *grid) {
  const int w = r->nx + 2, h = r->ny + 2;
  const size_t bytes = (size_t)w * h * sizeof(float);
  float *host = calloc((size_t)w * h, sizeof(float));
  if (!host) return false;
  for (int y = 0; y < r->ny; ++y)
    for (int x = 0; x < r->nx; ++x)
      host[(size_t)(y + 1) * w + x + 1] = initial(x, y, r->nx, r->ny);
  rk_module_t *mod = NULL;
  rk_function_t *fn = NULL;
  rk_devptr_t buf[2] = {0, 0};
  rk_compile_options_t co;
  rk_compile_options_init(&co);
  co.source_name = "halo.c";
  bool good = ok(rk_context_compile(ctx, kSource, &co, &mod), "compiling") &&
              ok(rk_module_get_function(mod, "heat_step", &fn), "heat_step") &&
              ok(rk_context_allocate(ctx, bytes, &buf[0]), "allocating") &&
              ok(rk_context_allocate(ctx, bytes, &buf[1]), "allocating") &&
              ok(rk_context_copy_to_device(ctx, buf[0], host, bytes), "copy") &&
              ok(rk_context_copy_to_device(ctx, buf[1], host, bytes), "copy");
  const rk_dim3_t block = {16, 16, 1};
  const rk_dim3_t grid3 = {(uint32_t)(w + 15) / 16, (uint32_t)(h + 15) / 16, 1};
  const int total = kWarmup + r->steps;
  double t0 = tool_now_seconds();
  for (int s = 0; good && s < total; ++s) {
    /* A round ends with a synchronize: the warm-up, then each timed one. */
    const int round = s < kWarmup ? -1 : (s - kWarmup) / r->per_round;
    rk_arg_t args[5] = {rk_arg_i32(r->nx), rk_arg_i32(r->ny), rk_arg_f32(kK),
                        rk_arg_ptr(buf[s & 1]), rk_arg_ptr(buf[(s + 1) & 1])};
    good = ok(rk_function_launch(fn, grid3, block, 0, NULL, args, 5),
              "launching heat_step");
    const bool last = s + 1 == kWarmup ||
                      (round >= 0 && (s - kWarmup + 1) % r->per_round == 0);
    if (good && last) {
      good = ok(rk_context_synchronize(ctx), "synchronizing");
      const double t1 = tool_now_seconds();
      if (round >= 0) r->kernel_s[round] = t1 - t0;
      t0 = t1;
    }
  }
  if (good)
    good = ok(rk_context_copy_to_host(ctx, host, buf[total & 1], bytes),
              "copy back");
  for (int y = 0; good && y < r->ny; ++y)
    memcpy(&grid[(size_t)y * r->nx], &host[(size_t)(y + 1) * w + 1],
           (size_t)r->nx * sizeof(float));
  for (int i = 0; i < 2; ++i)
    if (buf[i]) rk_context_free(ctx, buf[i]);
  if (mod) rk_module_destroy(mod);
  free(host);
  return good;
}

typedef struct {
  double median, min, max;
} rate_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static rate_t rate_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  rate_t r = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1]};
  return r;
}

int tool_demo_halo(rk_backend_t *be, bool json, bool quick, bool split,
                   const char *member_of) {
  rk_device_info_t info;
  if (!ok(rk_backend_device_info(be, 0, &info), "reading device 0"))
    return TOOL_EXIT_FAILURE;
  halo_result_t r;
  memset(&r, 0, sizeof r);
  r.ntx = quick ? 2 : 3;
  r.nty = quick ? 2 : 3;
  r.rounds = quick ? 3 : 5;
  r.per_round = quick ? 10 : 40;
  r.steps = r.rounds * r.per_round;
  r.nx = r.ntx * kT;
  r.ny = r.nty * kT;
  r.path = "none";
  r.split = split;
  /* More tile workers than CPUs: a worker spinning for its neighbours'
   * halos takes the CPU they need to send them. */
  if (!getenv("RK_ACTOR_SPIN_US")) setenv("RK_ACTOR_SPIN_US", "0", 1);
  if (member_of) /* --split's second process */
    return split_member(be, member_of, &r) ? TOOL_EXIT_FAILURE : TOOL_EXIT_OK;
  rk_context_t *ctx = NULL;
  if (!ok(rk_backend_create_context(be, 0, &ctx), "creating a context"))
    return TOOL_EXIT_FAILURE;
  float *a = calloc((size_t)r.nx * r.ny, sizeof(float));
  float *k = calloc((size_t)r.nx * r.ny, sizeof(float));
  bool good =
      a && k &&
      (split ? run_tiles_split(be, ctx, &r, a) : run_tiles(ctx, &r, a)) &&
      run_kernel(ctx, &r, k);
  if (good) {
    for (size_t i = 0; i < (size_t)r.nx * r.ny; ++i) {
      double d = fabs((double)a[i] - (double)k[i]);
      if (!(d <= r.max_diff)) r.max_diff = d; /* NaN too */
    }
    r.matches = r.max_diff <= kTolerance && r.errors == 0;
  }
  free(a);
  free(k);
  if (!ok(rk_context_destroy(ctx), "releasing the context")) good = false;
  if (!good) return TOOL_EXIT_FAILURE;
  /* Steps per second per round: median, lowest, highest. */
  double ar[kMaxRounds], kr[kMaxRounds];
  for (int i = 0; i < r.rounds; ++i) {
    ar[i] = r.per_round / r.actor_s[i];
    kr[i] = r.per_round / r.kernel_s[i];
  }
  const rate_t actor_rate = rate_of(ar, r.rounds);
  const rate_t kernel_rate = rate_of(kr, r.rounds);
  if (json) {
    printf("{\"demo\":\"halo\",\"backend\":");
    tool_json_string(stdout, rk_backend_name(be));
    printf(",\"device\":");
    tool_json_string(stdout, info.name);
    printf(
        ",\"grid\":[%d,%d],\"tiles\":[%d,%d],\"tile\":%d,\"steps\":%d,"
        "\"rounds\":%d,\"processes\":%d,\"k2k_path\":",
        r.nx, r.ny, r.ntx, r.nty, kT, r.steps, r.rounds, split ? 2 : 1);
    tool_json_string(stdout, r.path);
    printf(
        ",\"k2k_messages\":%llu,\"tile_actors_steps_per_s\":{\"median\":%.1f,"
        "\"min\":%.1f,\"max\":%.1f},\"kernel_steps_per_s\":{\"median\":%.1f,"
        "\"min\":%.1f,\"max\":%.1f},\"max_abs_diff\":%.3g,"
        "\"tolerance_abs\":%.3g,\"send_errors\":%d,\"matches_reference\":%s}"
        "\n",
        (unsigned long long)r.k2k_messages, actor_rate.median, actor_rate.min,
        actor_rate.max, kernel_rate.median, kernel_rate.min, kernel_rate.max,
        r.max_diff, kTolerance, r.errors, r.matches ? "true" : "false");
  } else {
    printf("backend   %s\ndevice    %s\n", rk_backend_name(be), info.name);
    printf(
        "grid      %d x %d cells, %d x %d tile actors of %d x %d, %d steps\n",
        r.nx, r.ny, r.ntx, r.nty, kT, kT, r.steps);
    printf("halos     %llu K2K messages%s, path %s\n",
           (unsigned long long)r.k2k_messages,
           split ? " (sent by this process's tiles)" : "", r.path);
    if (split)
      printf(
          "processes 2 (tile columns 0..%d here, the rest in a second "
          "process; one cluster over UCX)\n",
          r.ntx / 2 - 1);
    printf("tile actors          %10.1f steps/s  (%.1f-%.1f)\n",
           actor_rate.median, actor_rate.min, actor_rate.max);
    printf("one kernel per step  %10.1f steps/s  (%.1f-%.1f)\n",
           kernel_rate.median, kernel_rate.min, kernel_rate.max);
    printf("          medians over %d rounds of %d steps (lowest-highest)\n",
           r.rounds, r.per_round);
    printf("result    %s (max |difference| %.3g, tolerance %.3g)\n",
           r.matches ? "matches the reference" : "DIFFERS from the reference",
           r.max_diff, kTolerance);
  }
  return r.matches ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}
