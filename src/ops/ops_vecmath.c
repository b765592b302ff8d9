/* glibc's vector math library (libmvec.so.1) loaded at run time, once per
 * process, for the one function where it beats rk's own kernels at equal or
 * better accuracy: tanh (see docs/ops.md, "Transcendental functions").
 * RK_VECMATH=none turns it off (rk's own tanh runs); nothing is needed at
 * build time, and without libmvec (musl, glibc before 2.35) rk's own code
 * runs.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static rk__ops_vecmath_t g_vm;

static void load_once(void) {
  const char *env = getenv("RK_VECMATH");
  if (env && strcmp(env, "none") == 0) return;
  void *dl = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) return;
  /* The x86-64 vector function ABI names: 'd' AVX2 (8 floats in a ymm
   * register), 'e' AVX-512 (16 in a zmm). */
  g_vm.tanh8 = dlsym(dl, "_ZGVdN8v_tanhf");
  g_vm.tanh16 = dlsym(dl, "_ZGVeN16v_tanhf");
  if (!g_vm.tanh8 && !g_vm.tanh16) {
    dlclose(dl);
    return;
  }
  g_vm.name = "libmvec.so.1"; /* stays loaded for the life of the process */
}

const rk__ops_vecmath_t *rk__ops_vecmath(void) {
  pthread_once(&g_once, load_once);
  return &g_vm;
}
