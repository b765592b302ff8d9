/* NVTX ranges, for NVIDIA's tools (Nsight Systems), loaded at run time.
 *
 * rk declares the three NVTX functions it uses itself and looks them up in
 * NVIDIA's NVTX library (libnvToolsExt.so.1, which hands them on to the
 * attached tool) with dlopen, so no NVTX header or library is needed to
 * build rk, and a machine without them runs as before:
 *
 *   if (rk__nvtx_load(&why))      // once, when the trace module starts
 *     rk__nvtx_push("launch scale");
 *   ...
 *   rk__nvtx_pop();
 *
 * Which library: $RK_NVTX_LIB alone when set, else libnvToolsExt.so.1,
 * then libnvToolsExt.so.
 */
#ifndef RK_BASE_NVTX_H_
#define RK_BASE_NVTX_H_

#include <stdbool.h>
#include <stddef.h>

/* Loads the library and its symbols once per process. True when they
 * loaded; otherwise false, with why[0..cap) saying what was tried. */
bool rk__nvtx_load(char *why, size_t cap);

/* nvtxRangePushA / nvtxRangePop on the calling thread; no-ops before a
 * successful rk__nvtx_load. */
void rk__nvtx_push(const char *name);
void rk__nvtx_pop(void);

/* nvtxMarkA: an instant marker. */
void rk__nvtx_mark(const char *name);

#endif /* RK_BASE_NVTX_H_ */
