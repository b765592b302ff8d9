/* The table of built-in backends (see backends.def). */
#include "hal/hal.h"

#define RK_BACKEND(name) extern const rk__backend_vtable_t rk__##name##_backend;
#include "hal/backends.def"
#undef RK_BACKEND

static const rk__backend_vtable_t *const kRegistry[] = {
#define RK_BACKEND(name) &rk__##name##_backend,
#include "hal/backends.def"
#undef RK_BACKEND
};

const rk__backend_vtable_t *const *rk__backend_registry(size_t *out_count) {
  *out_count = sizeof kRegistry / sizeof kRegistry[0];
  return kRegistry;
}
