/* Fibers for block-wide barriers on the CPU.
 *
 * A block whose kernel calls rk_sync_threads() runs each of its GPU threads
 * on a fiber of the worker that owns the block. Fibers run round-robin: each
 * runs until it reaches a barrier (rk__cpu_fiber_yield) or returns, then the
 * next one runs. When every live fiber has reached the barrier, the next
 * round resumes them in order, so all writes before a barrier are seen by
 * all threads after it, exactly as on a GPU.
 *
 * On x86-64 and AArch64 (Linux and macOS) the switch is a few instructions
 * saving the callee-saved registers (cpu_fiber_switch.h); elsewhere
 * ucontext is used (deprecated on macOS, which gets the assembly). Under ASan
 * and TSan every switch is announced to the sanitizer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/cpu/cpu.h"
#include "base/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define RK_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RK_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RK_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RK_FIBER_TSAN 1
#endif
#endif

#ifdef RK_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef RK_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
/* The functions that leave a fiber for good carry no TSan instrumentation,
 * so the fiber's shadow call stack is empty when it ends and the TSan fiber
 * can be reused for the next block. */
#define RK_FIBER_NO_TSAN __attribute__((no_sanitize_thread))
#else
#define RK_FIBER_NO_TSAN
#endif

#include "backends/cpu/cpu_fiber_switch.h"
#ifndef RK_FIBER_ASM
#include <ucontext.h>
#endif

enum { kStackSize = 256 * 1024 };

enum fiber_state { kReady, kWaiting, kDone };

struct cpu_fiber {
#ifdef RK_FIBER_ASM
  void *sp;
#else
  ucontext_t uc;
#endif
  unsigned char *map; /* guard page + stack */
  size_t map_size;
  uint32_t index;
  enum fiber_state state;
  cpu_fiber_set_t *set;
#ifdef RK_FIBER_TSAN
  void *tsan;
#endif
};

struct cpu_fiber_set {
  cpu_fiber_t *fibers;
  uint32_t cap;
  uint32_t current;
  cpu_fiber_fn_t fn;
  void *arg;
#ifdef RK_FIBER_ASM
  void *main_sp;
#else
  ucontext_t main_uc;
#endif
#ifdef RK_FIBER_ASAN
  const void *main_bottom;
  size_t main_size;
#endif
#ifdef RK_FIBER_TSAN
  void *tsan_main;
#endif
};

cpu_fiber_set_t *rk__cpu_fiber_set_create(void) {
  return calloc(1, sizeof(cpu_fiber_set_t));
}

void rk__cpu_fiber_set_destroy(cpu_fiber_set_t *set) {
  if (!set) return;
  for (uint32_t i = 0; i < set->cap; ++i) {
    if (set->fibers[i].map) {
#ifdef RK_FIBER_ASAN
      /* Frames left on a fiber stack keep their redzones poisoned; clear
       * them, or whatever maps this memory next (another library's thread
       * stack) reads through stale poison. */
      ASAN_UNPOISON_MEMORY_REGION(set->fibers[i].map, set->fibers[i].map_size);
#endif
      munmap(set->fibers[i].map, set->fibers[i].map_size);
    }
#ifdef RK_FIBER_TSAN
    __tsan_destroy_fiber(set->fibers[i].tsan);
#endif
  }
  free(set->fibers);
  free(set);
}

static rk_status_t reserve(cpu_fiber_set_t *set, uint32_t n) {
  if (n <= set->cap) return RK_OK;
  cpu_fiber_t *grown = realloc(set->fibers, n * sizeof *grown);
  if (!grown)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cpu: %u fiber descriptors", n);
  memset(grown + set->cap, 0, (n - set->cap) * sizeof *grown);
  set->fibers = grown;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (uint32_t i = set->cap; i < n; ++i) {
    size_t size = kStackSize + page;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      set->cap = i;
      return rk__fail(RK_ERR_OUT_OF_MEMORY,
                      "cpu: cannot map a %zu-byte fiber stack: %s", size,
                      strerror(errno));
    }
    /* The lowest page stays inaccessible: an overflow faults instead of
     * corrupting the neighbouring stack. */
    mprotect(m, page, PROT_NONE);
    set->fibers[i].map = m;
    set->fibers[i].map_size = size;
#ifdef RK_FIBER_TSAN
    set->fibers[i].tsan = __tsan_create_fiber(0);
#endif
    set->cap = i + 1;
  }
  return RK_OK;
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Switch from the running fiber `f` back to the scheduler. `exiting` marks
 * the fiber's last switch. */
RK_FIBER_NO_TSAN static void switch_to_main(cpu_fiber_t *f, bool exiting) {
  cpu_fiber_set_t *set = f->set;
#ifdef RK_FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(exiting ? NULL : &fake, set->main_bottom,
                                 set->main_size);
#else
  (void)exiting;
#endif
#ifdef RK_FIBER_TSAN
  __tsan_switch_to_fiber(set->tsan_main, 0);
#endif
#ifdef RK_FIBER_ASM
  rk__fiber_switch(&f->sp, set->main_sp);
#else
  swapcontext(&f->uc, &set->main_uc);
#endif
#ifdef RK_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

static void switch_to_fiber(cpu_fiber_set_t *set, cpu_fiber_t *f) {
#ifdef RK_FIBER_ASAN
  void *fake = NULL;
  size_t page = page_size();
  __sanitizer_start_switch_fiber(&fake, f->map + page, f->map_size - page);
#endif
#ifdef RK_FIBER_TSAN
  __tsan_switch_to_fiber(f->tsan, 0);
#endif
#ifdef RK_FIBER_ASM
  rk__fiber_switch(&set->main_sp, f->sp);
#else
  swapcontext(&set->main_uc, &f->uc);
#endif
#ifdef RK_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

RK_FIBER_NO_TSAN static void fiber_main(void *arg) {
  cpu_fiber_t *f = arg;
  cpu_fiber_set_t *set = f->set;
#ifdef RK_FIBER_ASAN
  __sanitizer_finish_switch_fiber(NULL, &set->main_bottom, &set->main_size);
#endif
  set->fn(set->arg, f->index);
  f->state = kDone;
  switch_to_main(f, true);
  abort(); /* unreachable: a finished fiber is never resumed */
}

#ifndef RK_FIBER_ASM
static void fiber_main_uc(unsigned hi, unsigned lo) {
  fiber_main((cpu_fiber_t *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

static void prepare(cpu_fiber_set_t *set, cpu_fiber_t *f, uint32_t index) {
  size_t page = page_size();
  f->index = index;
  f->state = kReady;
  f->set = set;
#ifdef RK_FIBER_ASM
  f->sp = rk__fiber_initial_sp(f->map + f->map_size, fiber_main, f);
#else
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->map + page;
  f->uc.uc_stack.ss_size = f->map_size - page;
  f->uc.uc_link = NULL;
  uintptr_t p = (uintptr_t)f;
  makecontext(&f->uc, (void (*)(void))fiber_main_uc, 2, (unsigned)(p >> 32),
              (unsigned)(p & 0xffffffffu));
#endif
  (void)page;
}

rk_status_t rk__cpu_fiber_run(cpu_fiber_set_t *set, uint32_t n,
                              cpu_fiber_fn_t fn, void *arg) {
  RK_RETURN_IF_ERROR(reserve(set, n));
  set->fn = fn;
  set->arg = arg;
#ifdef RK_FIBER_TSAN
  set->tsan_main = __tsan_get_current_fiber();
#endif
  for (uint32_t i = 0; i < n; ++i) prepare(set, &set->fibers[i], i);
  uint32_t live = n;
  while (live > 0) {
    for (uint32_t i = 0; i < n; ++i) {
      cpu_fiber_t *f = &set->fibers[i];
      if (f->state == kDone) continue;
      f->state = kReady;
      set->current = i;
      switch_to_fiber(set, f);
      if (f->state == kDone) --live;
    }
  }
  return RK_OK;
}

void rk__cpu_fiber_yield(cpu_fiber_set_t *set) {
  cpu_fiber_t *f = &set->fibers[set->current];
  f->state = kWaiting;
  switch_to_main(f, false);
}
