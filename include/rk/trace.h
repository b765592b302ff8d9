/* rk/trace.h - a timeline of what rk does, for a trace viewer.
 *
 * While a trace runs, rk records its compiles (with cache hits), launches,
 * copies, allocations, synchronizations, actor messages (with their
 * correlation ids), the ops library's operations and the cost model's
 * choices (with every candidate's predicted time), each with its thread and
 * its time. rk_trace_stop() — or the end of the process — writes them as
 * Chrome trace-event JSON, which https://ui.perfetto.dev and
 * chrome://tracing open.
 *
 *   rk_trace_start("rk-trace.json", NULL);   // or RK_TRACE=rk-trace.json
 *   rk_trace_range_push("my step");         // the program's own ranges
 *   ... rk calls ...
 *   rk_trace_range_pop();
 *   rk_trace_stop();                        // writes the file
 *
 * RK_TRACE=FILE in the environment starts a trace when the library is
 * loaded and writes FILE when the process exits ("%p" in FILE becomes the
 * process id). A trace holds at most `max_events` events; later ones are
 * counted, not kept, and the file says how many were dropped.
 *
 * When no trace runs, each traced rk call pays one predictable branch.
 *
 * NVTX: where NVIDIA's NVTX library (libnvToolsExt.so.1) loads and a tool
 * such as Nsight Systems is attached (NVTX_INJECTION64_PATH set) — or
 * RK_NVTX=1 asks for it — the same operations are also pushed as NVTX
 * ranges. Without the library this is a no-op; RK_NVTX=0 turns it off and
 * RK_NVTX_LIB names another library file.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef RK_TRACE_H_
#define RK_TRACE_H_

#include <stdbool.h>
#include <stddef.h>

#include "rk/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rk_trace_options {
  /* The most events kept (each about 256 bytes, allocated as they come).
   * 0: RK_TRACE_MAX_EVENTS from the environment, else 262144. */
  size_t max_events;
} rk_trace_options_t;

/* Fills `options` with the defaults. */
void rk_trace_options_init(rk_trace_options_t *options);

/* Starts recording; rk_trace_stop() writes the trace to `path` ("%p" in it
 * becomes the process id). `options` may be NULL for the defaults. The
 * path is checked now: a directory, or a file in a directory this process
 * cannot write, is RK_ERR_INVALID_ARGUMENT or RK_ERR_UNAVAILABLE. A trace
 * that is already running is RK_ERR_INVALID_STATE. */
rk_status_t rk_trace_start(const char *path, const rk_trace_options_t *options);

/* Stops recording and writes the trace file (all or nothing, through a
 * temporary file and a rename). RK_ERR_INVALID_STATE when no trace runs;
 * RK_ERR_UNAVAILABLE (with the reason) when the file cannot be written. The
 * recorded events are released either way. */
rk_status_t rk_trace_stop(void);

/* Whether a trace is recording now. */
bool rk_trace_active(void);

/* A range of the program's own ("my step"), shown on the calling thread's
 * lane in category "user" (and as an NVTX range). Ranges nest; each push
 * needs a pop on the same thread. No-ops when no trace runs. */
void rk_trace_range_push(const char *name);
void rk_trace_range_pop(void);

#ifdef __cplusplus
}
#endif

#endif /* RK_TRACE_H_ */
