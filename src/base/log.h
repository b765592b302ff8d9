/* rk's log, off by default, and the capture of what vendor libraries print.
 *
 * The library prints nothing unless asked: RK_LOG=warn writes rk's warnings
 * (a cost model on default rates, a BLAS that does not load) to stderr,
 * RK_LOG=debug adds what vendor libraries printed while rk called them.
 * Library code that has something to say calls rk__log; code that calls
 * into a vendor library that may print (Mesa's Vulkan layers print
 * "error: XDG_RUNTIME_DIR is invalid..." from wgpuInstanceEnumerateAdapters)
 * wraps the call in a capture:
 *
 *   rk__capture_t cap;
 *   rk__capture_begin(&cap);
 *   n = wgpuInstanceEnumerateAdapters(...);
 *   char said[512];
 *   rk__capture_end(&cap, "webgpu", said, sizeof said);  // logged at debug
 *
 * A capture points file descriptor 2 at an anonymous in-memory file for its
 * duration, so it is process-wide: output of other threads in that window
 * is captured (and logged) too. Captures are serialised by one lock and
 * nest on one thread (the inner one is part of the outer one). Vendor calls
 * worth a capture are the probes, which rk makes once per process.
 */
#ifndef RK_BASE_LOG_H_
#define RK_BASE_LOG_H_

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef enum rk__log_level {
  RK__LOG_OFF = 0,
  RK__LOG_WARN,
  RK__LOG_DEBUG,
} rk__log_level_t;

/* The level RK_LOG asks for: unset, "", "off" or "0": off; "warn":
 * warnings; "debug" or "1": everything. Anything else is "warn". */
rk__log_level_t rk__log_level(void);

/* Writes "rk: <level>: <message>\n" to stderr when RK_LOG asks for `level`.
 * Thread-safe; one write per message. */
void rk__log(rk__log_level_t level, const char *fmt, ...) RK__PRINTF(2, 3);

typedef struct rk__capture {
  int saved; /* the original descriptor 2, -1 when it was closed */
  int file;  /* the capture's file, -1 when not capturing */
  bool outer;
} rk__capture_t;

/* Starts capturing descriptor 2. Never fails: when no capture is possible
 * (no memfd), output goes where it went before. */
void rk__capture_begin(rk__capture_t *capture);

/* Ends the capture and restores descriptor 2. Each captured line is logged
 * at debug level as "<who>: <line>"; the text (its first `cap - 1`
 * bytes, without a trailing newline) goes to out[0..cap) when out is not NULL,
 * "" when nothing was printed. Returns the number of bytes captured. */
size_t rk__capture_end(rk__capture_t *capture, const char *who, char *out,
                       size_t cap);

#endif /* RK_BASE_LOG_H_ */
