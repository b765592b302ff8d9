/* fake_nvtx.c - a stand-in for NVIDIA's libnvToolsExt.so.1 that counts the
 * ranges rk pushes, for test_nvtx.c (loaded through RK_NVTX_LIB). */
#include <stdio.h>
#include <string.h>

static int g_push, g_pop, g_mark, g_depth, g_max_depth;
static char g_names[64][48];

int nvtxRangePushA(const char *message) {
  int i = __atomic_fetch_add(&g_push, 1, __ATOMIC_SEQ_CST);
  if (i < 64) snprintf(g_names[i], sizeof g_names[i], "%s", message);
  int d = __atomic_add_fetch(&g_depth, 1, __ATOMIC_SEQ_CST);
  if (d > __atomic_load_n(&g_max_depth, __ATOMIC_SEQ_CST))
    __atomic_store_n(&g_max_depth, d, __ATOMIC_SEQ_CST);
  return d - 1;
}

int nvtxRangePop(void) {
  __atomic_add_fetch(&g_pop, 1, __ATOMIC_SEQ_CST);
  return __atomic_sub_fetch(&g_depth, 1, __ATOMIC_SEQ_CST);
}

void nvtxMarkA(const char *message) {
  (void)message;
  __atomic_add_fetch(&g_mark, 1, __ATOMIC_SEQ_CST);
}

/* The counts so far, and whether `name` was pushed. */
void fake_nvtx_counts(int *push, int *pop, int *max_depth) {
  *push = __atomic_load_n(&g_push, __ATOMIC_SEQ_CST);
  *pop = __atomic_load_n(&g_pop, __ATOMIC_SEQ_CST);
  *max_depth = __atomic_load_n(&g_max_depth, __ATOMIC_SEQ_CST);
}

int fake_nvtx_pushed(const char *name) {
  int n = __atomic_load_n(&g_push, __ATOMIC_SEQ_CST);
  for (int i = 0; i < n && i < 64; ++i)
    if (strcmp(g_names[i], name) == 0) return 1;
  return 0;
}
