/* Internal hooks of the cluster layer, for its tests. */
#ifndef RK_CLUSTER_CLUSTER_INTERNAL_H_
#define RK_CLUSTER_CLUSTER_INTERNAL_H_

#include <stdint.h>

#include "rk/cluster.h"

/* Responses the export `name`'s forwarder took from the actor that no
 * remote request was waiting for (answers to local sends). */
uint64_t rk__cluster_dropped_local(rk_cluster_t *cluster, const char *name);

#endif /* RK_CLUSTER_CLUSTER_INTERNAL_H_ */
