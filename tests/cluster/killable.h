/* tests/cluster: members a test kills. */
#ifndef RK_TESTS_CLUSTER_KILLABLE_H_
#define RK_TESTS_CLUSTER_KILLABLE_H_

#include <stdlib.h>
#include <string.h>

/* Called in a child between fork and exec when the test will kill it
 * (SIGKILL, or SIGSTOP and then SIGKILL) while it may be sending: such a
 * member talks TCP only. UCX's shared-memory transport has one receive FIFO
 * per worker, shared by every sender, and a sender stopped between claiming
 * an element and marking it written wedges that FIFO for every sender
 * (docs/cluster.md, "Failures"; bench/cluster/probe_shm_wedge shows it with
 * raw UCX). rk does not repair that yet, so the tests kill only members whose
 * traffic cannot be in a shared-memory FIFO; the survivors keep the
 * transports the test runs with (shared memory among themselves in the
 * _shm variants). */
static inline void rk_test_member_to_be_killed(void) {
  const char *tls = getenv("UCX_TLS");
  if (!tls || strstr(tls, "shm") || strstr(tls, "sm") || strstr(tls, "mm") ||
      strstr(tls, "posix") || strstr(tls, "sysv") || strstr(tls, "all"))
    setenv("UCX_TLS", "tcp", 1);
}

#endif /* RK_TESTS_CLUSTER_KILLABLE_H_ */
