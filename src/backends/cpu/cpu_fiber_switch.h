/* The CPU backend's fiber switch in assembly: x86-64 and AArch64, for ELF
 * (Linux) and Mach-O (macOS). Included by cpu_fiber.c only, and compiled on
 * its own by tests/backends/cpu (a switch test on Linux, natively and for
 * AArch64 under qemu, and an assembly check for both Mach-O targets), so
 * it includes no header.
 *
 *   void *sp = rk__fiber_initial_sp(stack_top, entry, arg);
 *   rk__fiber_switch(&main_sp, sp);   // runs entry(arg) on the new stack
 *   ... entry calls rk__fiber_switch(&its_sp, main_sp) to come back ...
 *
 * rk__fiber_switch(save_sp, new_sp) pushes the callee-saved registers of
 * the platform's C calling convention on the current stack, stores the
 * stack pointer in *save_sp, loads new_sp and pops the registers saved
 * there, returning into the other context. A new context's frame is laid
 * out by rk__fiber_initial_sp so that the first switch "returns" into
 * rk__fiber_start, which calls entry(arg); entry must never return (it
 * switches away for good instead; rk__fiber_start traps if it does).
 *
 * Registers saved: x86-64 rbx rbp r12-r15 (System V and Darwin alike; the
 * MXCSR and x87 control words are not switched: every fiber of a set runs
 * on one thread with the same settings). AArch64: x19-x28, x29 (frame),
 * x30 (link) and d8-d15 (AAPCS64 and Apple's arm64 ABI alike; x18 is the
 * platform register on Darwin and is never touched). */
#ifndef RK_BACKENDS_CPU_CPU_FIBER_SWITCH_H_
#define RK_BACKENDS_CPU_CPU_FIBER_SWITCH_H_

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(RK_FIBER_UCONTEXT)
#define RK_FIBER_ASM 1

/* Mach-O prefixes C symbols with an underscore and has no .type/.size; the
 * symbols stay inside the library either way (.hidden, .private_extern). */
#if defined(__APPLE__)
#define RK_FIBER_SYM(name) "_" #name
#define RK_FIBER_BEGIN(name)                                      \
  ".globl " RK_FIBER_SYM(name) "\n.private_extern " RK_FIBER_SYM( \
      name) "\n.p2align 4\n" RK_FIBER_SYM(name) ":\n"
#define RK_FIBER_END(name) ""
#define RK_FIBER_NOTE ""
#else
#define RK_FIBER_SYM(name) #name
#define RK_FIBER_BEGIN(name)                          \
  ".globl " #name "\n.hidden " #name "\n.type " #name \
  ",%function\n"                                      \
  ".p2align 4\n" #name ":\n"
#define RK_FIBER_END(name) ".size " #name ", .-" #name "\n"
/* No executable stack for this object. */
#define RK_FIBER_NOTE ".section .note.GNU-stack,\"\",%progbits\n"
#endif

void rk__fiber_switch(void **save_sp, void *new_sp);
void rk__fiber_start(void);

#if defined(__x86_64__)
/* Frame: r15 r14 r13 r12 rbx rbp, then the return address. */
__asm__(".text\n" RK_FIBER_BEGIN(rk__fiber_switch)
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n" RK_FIBER_END(rk__fiber_switch)
        /* First return of a new fiber: entry (r13) with arg (r12). */
        RK_FIBER_BEGIN(rk__fiber_start)
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n" RK_FIBER_END(rk__fiber_start) RK_FIBER_NOTE ".text\n");

enum { kRkFiberFrameWords = 9 };

static inline void *rk__fiber_initial_sp(void *stack_top, void (*entry)(void *),
                                         void *arg) {
  /* 16-byte aligned top; after the six pops and the ret, rsp = top - 16,
   * and the call in rk__fiber_start leaves entry's rsp + 8 16-aligned as
   * the ABI asks. */
  unsigned long top = (unsigned long)stack_top & ~15ul;
  void **sp = (void **)(top - kRkFiberFrameWords * sizeof(void *));
  for (int i = 0; i < kRkFiberFrameWords; ++i) sp[i] = 0;
  sp[2] = (void *)(unsigned long)entry;           /* r13 */
  sp[3] = arg;                                    /* r12 */
  sp[6] = (void *)(unsigned long)rk__fiber_start; /* return address */
  return sp;
}

#else /* __aarch64__ */
/* Frame (160 bytes, 16-aligned): x19-x28, x29 x30, d8-d15. */
__asm__(".text\n" RK_FIBER_BEGIN(rk__fiber_switch)
        "  sub sp, sp, #160\n"
        "  stp x19, x20, [sp, #0]\n"
        "  stp x21, x22, [sp, #16]\n"
        "  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n"
        "  stp x27, x28, [sp, #64]\n"
        "  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n"
        "  stp d10, d11, [sp, #112]\n"
        "  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mov x9, sp\n"
        "  str x9, [x0]\n"
        "  mov sp, x1\n"
        "  ldp x19, x20, [sp, #0]\n"
        "  ldp x21, x22, [sp, #16]\n"
        "  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n"
        "  ldp x27, x28, [sp, #64]\n"
        "  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n"
        "  ldp d10, d11, [sp, #112]\n"
        "  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  add sp, sp, #160\n"
        "  ret\n" RK_FIBER_END(rk__fiber_switch)
        /* First return of a new fiber: entry (x20) with arg (x19). */
        RK_FIBER_BEGIN(rk__fiber_start)
        "  mov x0, x19\n"
        "  blr x20\n"
        "  brk #0\n" RK_FIBER_END(rk__fiber_start) RK_FIBER_NOTE ".text\n");

enum { kRkFiberFrameWords = 20 };

static inline void *rk__fiber_initial_sp(void *stack_top, void (*entry)(void *),
                                         void *arg) {
  /* After the loads and `add sp, sp, #160`, sp is the 16-aligned top. */
  unsigned long top = (unsigned long)stack_top & ~15ul;
  void **sp = (void **)(top - kRkFiberFrameWords * sizeof(void *));
  for (int i = 0; i < kRkFiberFrameWords; ++i) sp[i] = 0;
  sp[0] = arg;                          /* x19 */
  sp[1] = (void *)(unsigned long)entry; /* x20 */
  sp[10] = 0;                           /* x29: the end of the frame chain */
  sp[11] = (void *)(unsigned long)rk__fiber_start; /* x30: where the ret goes */
  return sp;
}
#endif

#endif /* x86-64 or AArch64 */

#endif /* RK_BACKENDS_CPU_CPU_FIBER_SWITCH_H_ */
