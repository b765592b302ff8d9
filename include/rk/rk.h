/* rk/rk.h - umbrella header of the rk runtime.
 *
 *   #include <rk/rk.h>
 *
 * brings in the status codes, the backend interface, actors (with their
 * clocks, supervision and names), the transpiler, the cost model, the ops
 * library and tracing.
 * Kernel sources include <rk/kernel.h> instead. */
#ifndef RK_RK_H_
#define RK_RK_H_

#define RK_VERSION_MAJOR 0
#define RK_VERSION_MINOR 1
#define RK_VERSION_PATCH 0

#include "rk/actor.h"
#include "rk/actor_k2k.h"
#include "rk/backend.h"
#include "rk/cluster.h"
#include "rk/codegen.h"
#include "rk/hlc.h"
#include "rk/ops.h"
#include "rk/registry.h"
#include "rk/select.h"
#include "rk/status.h"
#include "rk/supervisor.h"
#include "rk/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
const char *rk_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RK_RK_H_ */
