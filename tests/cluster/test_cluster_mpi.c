/* rk clusters formed by an MPI job (options.mpi): run under mpirun with 2-4
 * ranks. Every rank exports an actor; every rank calls every other rank's
 * actor (member to member: an MPI cluster is fully connected), streams
 * sequence-numbered messages to the next rank (none lost, duplicated or
 * out of order), and gets NOT_FOUND for a name nobody exports. Exits 77
 * where UCX or MPI cannot be loaded, or without mpirun (--skip REASON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

#define SEC 1000000000ull

static const char kAddSource[] =
    "#include <rk/kernel.h>\n"
    "typedef struct { uint32_t lo, hi; } seq_t;\n"
    "RK_HANDLER void echo(const seq_t *in, seq_t *out) {\n"
    "  out->lo = in->lo; out->hi = in->hi + 1u;\n"
    "}\n";
typedef struct {
  uint32_t lo, hi;
} seq_t;

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--skip")) RK_TEST_SKIP("%s", argv[2]);
  if (rk_cluster_available(NULL) != RK_OK) RK_TEST_SKIP("%s", rk_last_error());
  if (rk_cluster_mpi_available(NULL) != RK_OK)
    RK_TEST_SKIP("%s", rk_last_error());
  uint32_t stream = argc >= 2 ? (uint32_t)atoi(argv[1]) : 10000;
  rk_test_use_temp_cache();
  rk_backend_t *be;
  rk_context_t *ctx;
  if (!CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be)) ||
      !CHECK_OK(rk_backend_create_context(be, 0, &ctx)))
    return rk_test_finish("cluster_mpi");
  rk_cluster_options_t o;
  rk_cluster_options_init(&o);
  o.mpi = true;
  rk_cluster_t *c;
  if (!CHECK_OK(rk_cluster_create(&o, &c)))
    return rk_test_finish("cluster_mpi");
  const char *me = rk_cluster_name(c);
  int rank = atoi(me + 4);
  int size = (int)rk_cluster_peer_count(c) + 1;
  CHECK(!strncmp(me, "rank", 4), "named %s", me);
  rk_actor_t *a;
  CHECK_OK(rk_actor_launch(ctx, kAddSource, "echo", NULL, &a));
  char name[64];
  snprintf(name, sizeof name, "r%d/echo", rank);
  CHECK_OK(rk_cluster_export(c, a, name));
  CHECK_OK(rk__cluster_barrier(c)); /* every rank has exported */

  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    snprintf(name, sizeof name, "r%d/echo", q);
    rk_remote_actor_t *h;
    if (!CHECK_OK(rk_cluster_lookup(c, name, 10 * SEC, &h))) continue;
    const char *peer;
    rk_remote_actor_info(h, NULL, NULL, NULL, &peer);
    char want[16];
    snprintf(want, sizeof want, "rank%d", q);
    CHECK(!strcmp(peer, want), "%s is owned by %s", name, peer);
    int bad = 0;
    for (uint32_t i = 0; i < 100; ++i) {
      seq_t m = {i, (uint32_t)rank}, r;
      if (rk_remote_actor_call(h, &m, sizeof m, &r, sizeof r, 10 * SEC, NULL) !=
              RK_OK ||
          r.lo != i || r.hi != (uint32_t)rank + 1)
        ++bad;
    }
    CHECK(bad == 0, "rank %d -> %d: %d bad calls (%s)", rank, q, bad,
          rk_last_error());
    if (q == (rank + 1) % size) {
      uint32_t sent = 0, got = 0, wrong = 0;
      while (got < stream) {
        while (sent < stream) {
          seq_t m = {sent, 0};
          rk_status_t s = rk_remote_actor_send(h, &m, sizeof m, 0, NULL);
          if (s == RK_ERR_QUEUE_FULL) break;
          if (!CHECK_OK(s)) goto done;
          ++sent;
        }
        seq_t r;
        if (!CHECK_OK(rk_remote_actor_receive(h, &r, sizeof r, 10 * SEC, NULL)))
          break;
        wrong += r.lo != got || r.hi != 1;
        ++got;
      }
    done:
      CHECK(got == stream && wrong == 0, "stream %d -> %d: %u of %u, %u wrong",
            rank, q, got, stream, wrong);
    }
    rk_remote_actor_release(h);
  }
  rk_remote_actor_t *none;
  CHECK_STATUS(rk_cluster_lookup(c, "nobody/exports/this", 10 * SEC, &none),
               RK_ERR_NOT_FOUND);

  CHECK_OK(rk__cluster_barrier(c)); /* everyone is done calling */
  rk_cluster_destroy(c);
  rk_actor_destroy(a);
  rk_context_destroy(ctx);
  rk_backend_destroy(be);
  char label[32];
  snprintf(label, sizeof label, "cluster_mpi rank %d", rank);
  return rk_test_finish(label);
}
