/* NVTX ranges: with RK_NVTX=1 and RK_NVTX_LIB pointing at a stand-in
 * library (fake_nvtx.c), rk's traced calls push and pop balanced ranges
 * named like the trace's slices, with no JSON trace running. With
 * --absent (RK_NVTX_LIB naming no file) the same calls work and nothing is
 * pushed: NVTX is optional. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define RK_TEST_IMPLEMENTATION
#include "rk_test.h"

static void some_calls(void) {
  rk_backend_t *be = NULL;
  rk_context_t *ctx = NULL;
  rk_devptr_t p;
  rk_trace_range_push("outer");
  if (CHECK_OK(rk_backend_open(RK_BACKEND_CPU, &be)) &&
      CHECK_OK(rk_backend_create_context(be, 0, &ctx))) {
    CHECK_OK(rk_context_allocate(ctx, 64, &p));
    CHECK_OK(rk_context_free(ctx, p));
    CHECK_OK(rk_context_destroy(ctx));
  }
  if (be) CHECK_OK(rk_backend_destroy(be));
  rk_trace_range_pop();
}

int main(int argc, char **argv) {
  bool absent = argc > 1 && strcmp(argv[1], "--absent") == 0;
  const char *lib = getenv("RK_NVTX_LIB");
  if (!lib || !getenv("RK_NVTX")) RK_TEST_SKIP("RK_NVTX and RK_NVTX_LIB unset");
  CHECK(!rk_trace_active(), "a JSON trace is recording");
  some_calls();
  if (absent) {
    /* Nothing to count: that the calls above worked is the test. A trace
     * still records. */
    char path[4096];
    snprintf(path, sizeof path, "%s/t.json", rk_test_temp_dir());
    CHECK_OK(rk_trace_start(path, NULL));
    some_calls();
    CHECK_OK(rk_trace_stop());
    return rk_test_finish("trace_nvtx --absent");
  }
  void *dl = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!CHECK(dl != NULL, "rk did not load %s", lib))
    return rk_test_finish("trace_nvtx");
  void (*counts)(int *, int *, int *);
  int (*pushed)(const char *);
  *(void **)&counts = dlsym(dl, "fake_nvtx_counts");
  *(void **)&pushed = dlsym(dl, "fake_nvtx_pushed");
  int push = 0, pop = 0, depth = 0;
  counts(&push, &pop, &depth);
  CHECK(push >= 5 && push == pop, "%d pushes, %d pops", push, pop);
  CHECK(depth >= 2, "ranges never nested (depth %d)", depth);
  CHECK(pushed("outer") && pushed("open backend") && pushed("create context") &&
            pushed("allocate") && pushed("free"),
        "a range is missing");
  dlclose(dl);
  return rk_test_finish("trace_nvtx");
}
