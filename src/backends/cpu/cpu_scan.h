/* Finds the RK_KERNEL entry points of a kernel source and their parameters,
 * so the CPU backend can generate launch wrappers and the runtime can check
 * launch arguments. It reads declarations only; the C compiler checks the
 * rest of the source. */
#ifndef RK_BACKENDS_CPU_CPU_SCAN_H_
#define RK_BACKENDS_CPU_CPU_SCAN_H_

#include <stdbool.h>
#include <stddef.h>

#include "rk/backend.h"

enum { kScanMaxParams = 64 };

typedef struct cpu_sig_param {
  rk_arg_kind_t kind;
  char type[256]; /* declared type, e.g. "const float *" */
  char name[64];
} cpu_sig_param_t;

typedef struct cpu_sig {
  char name[128];
  unsigned nparams;
  cpu_sig_param_t params[kScanMaxParams];
} cpu_sig_t;

typedef struct cpu_scan {
  cpu_sig_t *kernels;
  size_t count;
  bool uses_barrier; /* rk_sync_threads appears in the source */
} cpu_scan_t;

/* RK_ERR_COMPILE with "name:line:col: error: ..." plus the line and a caret
 * when a kernel declaration cannot be used. */
rk_status_t rk__cpu_scan(const char *source, const char *source_name,
                         cpu_scan_t *out);
void rk__cpu_scan_free(cpu_scan_t *scan);

#endif /* RK_BACKENDS_CPU_CPU_SCAN_H_ */
