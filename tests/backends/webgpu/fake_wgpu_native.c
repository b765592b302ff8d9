/* A stand-in for a wgpu-native of another major version (27.0.4): every
 * entry point rk requires exists (and does nothing), and wgpuGetVersion
 * reports 27.0.4.0. Loaded through RK_WEBGPU_LIB by test_webgpu_version.c,
 * which expects rk to refuse it before calling anything else. */
#include <stdint.h>

#include "backends/webgpu/webgpu_api.h"

#define STUB_(name, ret, params) \
  void name(void);               \
  void name(void) {}
#define SKIP_(name, ret, params)
RK_WGPU_SYMBOLS(STUB_, SKIP_)
#undef STUB_
#undef SKIP_

uint32_t wgpuGetVersion(void);
uint32_t wgpuGetVersion(void) { return 27u << 24 | 0u << 16 | 4u << 8; }
