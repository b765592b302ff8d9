/* The CPU backend's fiber switch (src/backends/cpu/cpu_fiber_switch.h) on
 * its own: no rk library, so that it builds for another CPU too (AArch64
 * under qemu-user, tests/backends/cpu/CMakeLists.txt).
 *
 * Four fibers and the main context take turns; in every turn each side
 * keeps many integer and floating-point values live across the switch
 * (the compiler holds them in callee-saved registers, which the switch
 * must preserve) and checks them afterwards against the same computation
 * without a switch. Each fiber also checks that its stack is aligned as
 * the ABI requires.
 *
 *   test_fiber_switch             the test
 *   test_fiber_switch --clobber   negative control: runs the test in a child
 *                                 process with garbage put in the
 *                                 callee-saved registers after every
 *                                 switch; passes only when the child fails
 *                                 (or crashes), which shows the values
 *                                 really live in those registers
 *   test_fiber_switch --misalign  negative control, the same way: fiber
 *                                 stacks 8 bytes off must be caught */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu/cpu_fiber_switch.h"

#ifndef RK_FIBER_ASM
int main(void) {
  puts("no assembly fiber switch on this CPU (ucontext is used): skipped");
  return 77;
}
#else

enum { kFibers = 4, kRounds = 50, kStack = 64 * 1024 };

static void *g_main_sp;
static void *g_fiber_sp[kFibers];
static int g_current;
static int g_done[kFibers];
static int g_failures;
static int g_clobber;
static volatile long g_k = 3;         /* read after each switch */
static volatile double g_kd = 1.25;   /* read after each switch */
static volatile long g_seed_base = 7; /* defeats constant folding */

/* Writes garbage into every callee-saved register without saying so: the
 * --clobber control. */
void rk_test_clobber_callee_saved(void);
#if defined(__x86_64__)
__asm__(".text\n" RK_FIBER_BEGIN(rk_test_clobber_callee_saved)
        "  movabsq $0x5a5a5a5a5a5a5a5a, %rax\n"
        "  movq %rax, %rbx\n"
        "  movq %rax, %r12\n"
        "  movq %rax, %r13\n"
        "  movq %rax, %r14\n"
        "  movq %rax, %r15\n"
        "  ret\n" RK_FIBER_END(rk_test_clobber_callee_saved) ".text\n");
#else
__asm__(".text\n" RK_FIBER_BEGIN(rk_test_clobber_callee_saved)
        "  movz x9, #0x5a5a\n"
        "  mov x19, x9\n  mov x20, x9\n  mov x21, x9\n  mov x22, x9\n"
        "  mov x23, x9\n  mov x24, x9\n  mov x25, x9\n  mov x26, x9\n"
        "  mov x27, x9\n  mov x28, x9\n"
        "  fmov d8, x9\n  fmov d9, x9\n  fmov d10, x9\n  fmov d11, x9\n"
        "  fmov d12, x9\n  fmov d13, x9\n  fmov d14, x9\n  fmov d15, x9\n"
        "  ret\n" RK_FIBER_END(rk_test_clobber_callee_saved) ".text\n");
#endif

static void fail(const char *what, int who, int round) {
  if (g_failures++ < 10)
    fprintf(stderr, "FAILED: %s (context %d, round %d)\n", what, who, round);
}

/* `who` is -1 for the main context, else a fiber's index. */
static void switch_away(int who) {
  if (who < 0) {
    rk__fiber_switch(&g_main_sp, g_fiber_sp[g_current]);
  } else {
    rk__fiber_switch(&g_fiber_sp[who], g_main_sp);
  }
  if (g_clobber) rk_test_clobber_callee_saved();
}

/* Twelve integers and eight doubles made from seed, kept across one
 * switch (when `sw`), then folded together with values read after it. */
__attribute__((noinline)) static void work(int sw, int who, long seed,
                                           long *out_i, double *out_d) {
  long a0 = seed * 3 + 1, a1 = seed * 5 + 2, a2 = seed * 7 + 3,
       a3 = seed * 11 + 4, a4 = seed * 13 + 5, a5 = seed * 17 + 6,
       a6 = seed * 19 + 7, a7 = seed * 23 + 8, a8 = seed * 29 + 9,
       a9 = seed * 31 + 10, a10 = seed * 37 + 11, a11 = seed * 41 + 12;
  double d0 = (double)seed * 0.5, d1 = (double)seed * 0.25 + 1,
         d2 = (double)seed * 1.5 + 2, d3 = (double)seed * 2.5 + 3,
         d4 = (double)seed * 3.5 + 4, d5 = (double)seed * 4.5 + 5,
         d6 = (double)seed * 5.5 + 6, d7 = (double)seed * 6.5 + 7;
  if (sw) switch_away(who);
  long k = g_k;
  double kd = g_kd;
  long h = a0;
  h = h * k + a1;
  h = h * k + a2;
  h = h * k + a3;
  h = h * k + a4;
  h = h * k + a5;
  h = h * k + a6;
  h = h * k + a7;
  h = h * k + a8;
  h = h * k + a9;
  h = h * k + a10;
  h = h * k + a11;
  double hd = d0;
  hd = hd * kd + d1;
  hd = hd * kd + d2;
  hd = hd * kd + d3;
  hd = hd * kd + d4;
  hd = hd * kd + d5;
  hd = hd * kd + d6;
  hd = hd * kd + d7;
  *out_i = h;
  *out_d = hd;
}

static void check_round(int who, int round) {
  long seed = g_seed_base + who * 1000 + round, hi, ei;
  double hd, ed;
  work(1, who, seed, &hi, &hd);
  work(0, who, seed, &ei, &ed);
  if (hi != ei || hd != ed)
    fail("a value changed across the switch", who, round);
}

static void fiber_entry(void *arg) {
  int who = (int)(intptr_t)arg;
  _Alignas(16) char probe[16];
  if (((uintptr_t)probe & 15u) != 0 ||
      ((uintptr_t)__builtin_frame_address(0) & 15u) != 0)
    fail("the fiber's stack is not 16-byte aligned", who, -1);
  memset(probe, who, sizeof probe);
  for (int r = 0; r < kRounds; ++r) check_round(who, r);
  g_done[who] = 1;
  for (;;) rk__fiber_switch(&g_fiber_sp[who], g_main_sp); /* never back */
}

static int run(int misalign);

/* Runs the test broken on purpose in a child: 0 when the child failed. */
static int control(const char *name, int misalign) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) _exit(run(misalign) == 0 ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    fprintf(stderr, "FAILED: the %s control passed: the test cannot see %s\n",
            name, misalign ? "a misaligned stack" : "lost registers");
    return 1;
  }
  printf("the %s control failed as it must (%s %d)\n", name,
         WIFEXITED(status) ? "exit" : "signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--clobber")) {
    g_clobber = 1;
    return control("--clobber", 0);
  }
  if (argc == 2 && !strcmp(argv[1], "--misalign"))
    return control("--misalign", 1);
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--clobber|--misalign]\n", argv[0]);
    return 2;
  }
  return run(0);
}

static int run(int misalign) {
  unsigned char *stacks[kFibers];
  for (int f = 0; f < kFibers; ++f) {
    stacks[f] = aligned_alloc(64, kStack);
    if (!stacks[f]) return 1;
    unsigned char *top = stacks[f] + kStack;
    g_fiber_sp[f] = rk__fiber_initial_sp(top, fiber_entry, (void *)(intptr_t)f);
    if (misalign) {
      /* The same frame, 8 bytes lower: the fiber starts misaligned. */
      memmove((char *)g_fiber_sp[f] - 8, g_fiber_sp[f],
              kRkFiberFrameWords * sizeof(void *));
      g_fiber_sp[f] = (char *)g_fiber_sp[f] - 8;
    }
  }
  /* Round robin; the main context checks its own values around each. */
  int live = kFibers, turns = 0;
  while (live > 0 && turns < 10 * kRounds * kFibers) {
    for (int f = 0; f < kFibers; ++f) {
      if (g_done[f]) continue;
      g_current = f;
      check_round(-1, turns++);
      if (g_done[f]) --live;
    }
  }
  if (live > 0) fail("fibers did not finish", -1, turns);
  for (int f = 0; f < kFibers; ++f) free(stacks[f]);
  if (g_failures) {
    fprintf(stderr, "%d check(s) FAILED\n", g_failures);
    return 1;
  }
  printf("fiber switch: %d fibers x %d rounds, registers and alignment kept\n",
         kFibers, kRounds);
  return 0;
}
#endif
