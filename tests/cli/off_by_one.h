/* off_by_one.h - forced into the demo kernel (cc -include) by the test
 * cli_demo_detects_mismatch: every thread works on the element after its
 * own, so y[0] is never written and `rk demo` must report it. */
#include <rk/kernel.h>
#define rk_global_idx_x() (rk_global_idx_x() + 1)
