/* A wgpu-native of another major version is refused when the backend
 * opens, and the message names the version found, the one rk needs and
 * how to get it. FAKE_WGPU_NATIVE is the path of fake_wgpu_native.c's
 * library (wgpu-native 27.0.4). */
#define RK_TEST_IMPLEMENTATION
#include <stdlib.h>

#include "rk_test.h"

int main(void) {
  setenv("RK_WEBGPU_LIB", FAKE_WGPU_NATIVE, 1);
  unsetenv("RK_WEBGPU_SKIP_VERSION_CHECK");
  rk_backend_t *be = (rk_backend_t *)0x1;
  CHECK_STATUS(rk_backend_open(RK_BACKEND_WEBGPU, &be), RK_ERR_UNAVAILABLE);
  CHECK(be == (rk_backend_t *)0x1, "a failed open set *out_backend");
  CHECK_ERROR_HAS(FAKE_WGPU_NATIVE);
  CHECK_ERROR_HAS("is wgpu-native 27.0.4");
  CHECK_ERROR_HAS("rk needs wgpu-native 29.x");
  CHECK_ERROR_HAS("scripts/deps.sh");
  CHECK_ERROR_HAS("RK_WEBGPU_SKIP_VERSION_CHECK=1");
  return rk_test_finish("webgpu_version");
}
