/* A fake Objective-C runtime and Metal.framework for testing the Metal
 * backend without a Mac: one shared library the backend loads as both
 * libobjc and Metal ($RK_METAL_OBJC_LIB, $RK_METAL_LIB).
 *
 * Runtime: objc_getClass, sel_registerName, objc_msgSend (and
 * objc_msgSend_stret on x86-64), autorelease pools and the block runtime's
 * _NSConcreteStackBlock. objc_msgSend is a small assembly trampoline, as in
 * the real runtime: it saves every argument register, asks
 * fake_objc_lookup(self, _cmd) for the method's implementation (a C
 * function with the method's real prototype) and jumps to it with the
 * registers and the stack as the caller left them, so every prototype the
 * caller casts objc_msgSend to is handled by the ABI itself. An unknown
 * message aborts with its name.
 *
 * Objects are reference counted (retain/release/autorelease); the number
 * alive is exported, so the tests can check that the backend releases what
 * it owns.
 *
 * Metal: devices (MTLCopyAllDevices), buffers (shared storage is host
 * memory; private storage has no `contents`, as in Metal), libraries,
 * pipelines, command queues (each with a thread that runs committed command
 * buffers in order, then calls their completion handlers), compute and
 * blit encoders. newLibraryWithSource:options:error: runs the MSL itself:
 * it is compiled with clang++ against fake_msl/metal_stdlib (a C++
 * implementation of the part of Metal's library rk prints) into a shared
 * object, cached by content hash; threads of a threadgroup run as fibers,
 * switched at barriers. Every MSL text received is written to
 * $RK_FAKE_METAL_DUMP_DIR (if set) for the clang-based MSL check.
 *
 * Failure injection and the message log are exported as fake_metal_*
 * functions (test_metal_fake.c finds them with dlsym).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAKE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FAKE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FAKE_TSAN 1
#endif
#endif
#ifdef FAKE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef FAKE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

typedef void *id;
typedef const char *SEL;
typedef void (*IMP)(void);

typedef struct {
  unsigned long width, height, depth;
} MTLSize;

/* ---- Objects ------------------------------------------------------------ */

typedef struct method {
  const char *name;
  IMP imp;
} method_t;

typedef struct fclass {
  const char *name;
  const method_t *methods;
  const struct fclass *super;
} fclass_t;

typedef struct fobj fobj_t;
struct fobj {
  const fclass_t *isa;
  atomic_int refs;
  void (*dealloc)(fobj_t *self);
};

static atomic_long g_live;

static void *new_obj(size_t size, const fclass_t *cls,
                     void (*dealloc)(fobj_t *)) {
  fobj_t *o = calloc(1, size);
  if (!o) abort();
  o->isa = cls;
  atomic_init(&o->refs, 1);
  o->dealloc = dealloc;
  atomic_fetch_add(&g_live, 1);
  return o;
}

static void obj_release(id self) {
  fobj_t *o = self;
  if (!o) return;
  int left = atomic_fetch_sub(&o->refs, 1) - 1;
  if (left < 0) {
    fprintf(stderr, "fake metal: over-release of a %s\n", o->isa->name);
    abort();
  }
  if (left == 0) {
    if (o->dealloc) o->dealloc(o);
    atomic_fetch_sub(&g_live, 1);
    free(o);
  }
}

static id obj_retain(id self) {
  if (self) atomic_fetch_add(&((fobj_t *)self)->refs, 1);
  return self;
}

/* ---- Message log and injected failures --------------------------------- */

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct log_entry {
  const char *sel;
  long count;
} log_entry_t;
static log_entry_t g_log[256];
static char g_fail_compile[1024];
static char g_fail_cb[1024];
static int g_devices = 1;
static int g_unified = 1;
static MTLSize g_last_grid, g_last_block;
static unsigned long g_last_tg_len;

static void log_message(SEL sel) {
  pthread_mutex_lock(&g_log_lock);
  for (int i = 0; i < 256; ++i) {
    if (!g_log[i].sel) g_log[i].sel = sel;
    if (g_log[i].sel == sel) {
      g_log[i].count++;
      break;
    }
  }
  pthread_mutex_unlock(&g_log_lock);
}

/* ---- Selectors and dispatch -------------------------------------------- */

typedef struct sel_node {
  struct sel_node *next;
  char name[];
} sel_node_t;
static sel_node_t *g_sels;
static pthread_mutex_t g_sel_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT SEL sel_registerName(const char *name) {
  pthread_mutex_lock(&g_sel_lock);
  for (sel_node_t *n = g_sels; n; n = n->next)
    if (strcmp(n->name, name) == 0) {
      pthread_mutex_unlock(&g_sel_lock);
      return n->name;
    }
  size_t len = strlen(name) + 1;
  sel_node_t *n = malloc(sizeof *n + len);
  if (!n) abort();
  memcpy(n->name, name, len);
  n->next = g_sels;
  g_sels = n;
  pthread_mutex_unlock(&g_sel_lock);
  return n->name;
}

static long nil_imp(void) { return 0; }

HIDDEN IMP fake_objc_lookup(id self, SEL sel) {
  if (!self) return (IMP)nil_imp;
  log_message(sel);
  for (const fclass_t *c = ((fobj_t *)self)->isa; c; c = c->super)
    for (const method_t *m = c->methods; m->name; ++m)
      if (strcmp(m->name, sel) == 0) return m->imp;
  fprintf(stderr, "fake metal: a %s does not answer -%s\n",
          ((fobj_t *)self)->isa->name, sel);
  abort();
}

/* objc_msgSend: save the argument registers, look the method up, restore
 * them and jump to it. */
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl objc_msgSend\n"
    ".type objc_msgSend,@function\n"
    "objc_msgSend:\n"
    "  pushq %rbp\n"
    "  movq %rsp, %rbp\n"
    "  subq $192, %rsp\n"
    "  movq %rdi, 0(%rsp)\n"
    "  movq %rsi, 8(%rsp)\n"
    "  movq %rdx, 16(%rsp)\n"
    "  movq %rcx, 24(%rsp)\n"
    "  movq %r8, 32(%rsp)\n"
    "  movq %r9, 40(%rsp)\n"
    "  movq %rax, 48(%rsp)\n"
    "  movdqu %xmm0, 64(%rsp)\n"
    "  movdqu %xmm1, 80(%rsp)\n"
    "  movdqu %xmm2, 96(%rsp)\n"
    "  movdqu %xmm3, 112(%rsp)\n"
    "  movdqu %xmm4, 128(%rsp)\n"
    "  movdqu %xmm5, 144(%rsp)\n"
    "  movdqu %xmm6, 160(%rsp)\n"
    "  movdqu %xmm7, 176(%rsp)\n"
    "  call fake_objc_lookup\n"
    "  movq %rax, %r11\n"
    "1:\n"
    "  movq 0(%rsp), %rdi\n"
    "  movq 8(%rsp), %rsi\n"
    "  movq 16(%rsp), %rdx\n"
    "  movq 24(%rsp), %rcx\n"
    "  movq 32(%rsp), %r8\n"
    "  movq 40(%rsp), %r9\n"
    "  movq 48(%rsp), %rax\n"
    "  movdqu 64(%rsp), %xmm0\n"
    "  movdqu 80(%rsp), %xmm1\n"
    "  movdqu 96(%rsp), %xmm2\n"
    "  movdqu 112(%rsp), %xmm3\n"
    "  movdqu 128(%rsp), %xmm4\n"
    "  movdqu 144(%rsp), %xmm5\n"
    "  movdqu 160(%rsp), %xmm6\n"
    "  movdqu 176(%rsp), %xmm7\n"
    "  leave\n"
    "  jmp *%r11\n"
    ".size objc_msgSend, .-objc_msgSend\n"
    /* Struct returns in memory: the result's address comes first. */
    ".globl objc_msgSend_stret\n"
    ".type objc_msgSend_stret,@function\n"
    "objc_msgSend_stret:\n"
    "  pushq %rbp\n"
    "  movq %rsp, %rbp\n"
    "  subq $192, %rsp\n"
    "  movq %rdi, 0(%rsp)\n"
    "  movq %rsi, 8(%rsp)\n"
    "  movq %rdx, 16(%rsp)\n"
    "  movq %rcx, 24(%rsp)\n"
    "  movq %r8, 32(%rsp)\n"
    "  movq %r9, 40(%rsp)\n"
    "  movq %rax, 48(%rsp)\n"
    "  movdqu %xmm0, 64(%rsp)\n"
    "  movdqu %xmm1, 80(%rsp)\n"
    "  movdqu %xmm2, 96(%rsp)\n"
    "  movdqu %xmm3, 112(%rsp)\n"
    "  movdqu %xmm4, 128(%rsp)\n"
    "  movdqu %xmm5, 144(%rsp)\n"
    "  movdqu %xmm6, 160(%rsp)\n"
    "  movdqu %xmm7, 176(%rsp)\n"
    "  movq %rsi, %rdi\n"
    "  movq %rdx, %rsi\n"
    "  call fake_objc_lookup\n"
    "  movq %rax, %r11\n"
    "  jmp 1b\n"
    ".size objc_msgSend_stret, .-objc_msgSend_stret\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n"
    ".globl objc_msgSend\n"
    ".type objc_msgSend,%function\n"
    "objc_msgSend:\n"
    "  stp x29, x30, [sp, #-224]!\n"
    "  mov x29, sp\n"
    "  stp x0, x1, [sp, #16]\n"
    "  stp x2, x3, [sp, #32]\n"
    "  stp x4, x5, [sp, #48]\n"
    "  stp x6, x7, [sp, #64]\n"
    "  str x8, [sp, #80]\n"
    "  stp q0, q1, [sp, #96]\n"
    "  stp q2, q3, [sp, #128]\n"
    "  stp q4, q5, [sp, #160]\n"
    "  stp q6, q7, [sp, #192]\n"
    "  bl fake_objc_lookup\n"
    "  mov x16, x0\n"
    "  ldp x0, x1, [sp, #16]\n"
    "  ldp x2, x3, [sp, #32]\n"
    "  ldp x4, x5, [sp, #48]\n"
    "  ldp x6, x7, [sp, #64]\n"
    "  ldr x8, [sp, #80]\n"
    "  ldp q0, q1, [sp, #96]\n"
    "  ldp q2, q3, [sp, #128]\n"
    "  ldp q4, q5, [sp, #160]\n"
    "  ldp q6, q7, [sp, #192]\n"
    "  ldp x29, x30, [sp], #224\n"
    "  br x16\n"
    ".size objc_msgSend, .-objc_msgSend\n");
#else
#error "the fake Objective-C runtime has a trampoline for x86-64 and aarch64"
#endif

/* ---- Autorelease pools --------------------------------------------------- */

static __thread id *t_pool;
static __thread size_t t_pool_len, t_pool_cap;
static atomic_long g_pool_pushes, g_pool_pops;

EXPORT void *objc_autoreleasePoolPush(void) {
  atomic_fetch_add(&g_pool_pushes, 1);
  return (void *)(uintptr_t)(t_pool_len + 1);
}

EXPORT void objc_autoreleasePoolPop(void *token) {
  atomic_fetch_add(&g_pool_pops, 1);
  size_t mark = (uintptr_t)token - 1;
  while (t_pool_len > mark) obj_release(t_pool[--t_pool_len]);
  if (t_pool_len == 0) {
    free(t_pool);
    t_pool = NULL;
    t_pool_cap = 0;
  }
}

static id autorelease(id o) {
  if (!o) return o;
  if (t_pool_len == t_pool_cap) {
    t_pool_cap = t_pool_cap ? 2 * t_pool_cap : 64;
    t_pool = realloc(t_pool, t_pool_cap * sizeof *t_pool);
    if (!t_pool) abort();
  }
  t_pool[t_pool_len++] = o;
  return o;
}

/* ---- Blocks ------------------------------------------------------------- */

EXPORT void *_NSConcreteStackBlock[32];
EXPORT void *_NSConcreteMallocBlock[32];

typedef struct block_descriptor {
  unsigned long reserved, size;
  const char *signature;
} block_descriptor_t;

typedef struct block {
  void *isa;
  int flags;
  int reserved;
  void (*invoke)(struct block *, id);
  const block_descriptor_t *descriptor;
} block_t;

enum { kBlockHasCopyDispose = 1 << 25, kBlockHasSignature = 1 << 30 };

/* Block_copy of a stack block without helpers: a heap copy. */
static block_t *block_copy(const block_t *b) {
  if (b->isa != (void *)_NSConcreteStackBlock ||
      (b->flags & kBlockHasCopyDispose) || !(b->flags & kBlockHasSignature) ||
      strcmp(b->descriptor->signature, "v16@?0@8") != 0 ||
      b->descriptor->size < sizeof *b) {
    fprintf(stderr, "fake metal: not a completion handler block literal\n");
    abort();
  }
  block_t *c = malloc(b->descriptor->size);
  if (!c) abort();
  memcpy(c, b, b->descriptor->size);
  c->isa = _NSConcreteMallocBlock;
  return c;
}

/* ---- Foundation ---------------------------------------------------------- */

typedef struct nsstring {
  fobj_t o;
  char *utf8;
} nsstring_t;

typedef struct nsarray {
  fobj_t o;
  unsigned long n;
  id items[8];
} nsarray_t;

typedef struct nserror {
  fobj_t o;
  id desc;
  long code;
} nserror_t;

static id m_retain(id self, SEL s) {
  (void)s;
  return obj_retain(self);
}
static void m_release(id self, SEL s) {
  (void)s;
  obj_release(self);
}
static id m_autorelease(id self, SEL s) {
  (void)s;
  return autorelease(self);
}

static const method_t kObjectMethods[] = {{"retain", (IMP)m_retain},
                                          {"release", (IMP)m_release},
                                          {"autorelease", (IMP)m_autorelease},
                                          {NULL, NULL}};
static const fclass_t kNSObject = {"NSObject", kObjectMethods, NULL};

static void string_dealloc(fobj_t *o) { free(((nsstring_t *)o)->utf8); }
static const method_t kStringMethods[];
static const fclass_t kNSString = {"NSString", kStringMethods, &kNSObject};

static id make_string(const char *s) {
  nsstring_t *str = new_obj(sizeof *str, &kNSString, string_dealloc);
  str->utf8 = strdup(s ? s : "");
  return str;
}
static const char *m_utf8(id self, SEL s) {
  (void)s;
  return ((nsstring_t *)self)->utf8;
}
static unsigned long m_length(id self, SEL s) {
  (void)s;
  return strlen(((nsstring_t *)self)->utf8);
}
static const method_t kStringMethods[] = {
    {"UTF8String", (IMP)m_utf8}, {"length", (IMP)m_length}, {NULL, NULL}};
static id c_string_with_utf8(id cls, SEL s, const char *utf8) {
  (void)cls, (void)s;
  return autorelease(make_string(utf8));
}
static const method_t kStringClassMethods[] = {
    {"stringWithUTF8String:", (IMP)c_string_with_utf8}, {NULL, NULL}};
static const fclass_t kNSStringMeta = {"NSString class", kStringClassMethods,
                                       NULL};
static fobj_t g_string_class = {&kNSStringMeta, 1 << 30, NULL};

static void array_dealloc(fobj_t *o) {
  nsarray_t *a = (nsarray_t *)o;
  for (unsigned long i = 0; i < a->n; ++i) obj_release(a->items[i]);
}
static unsigned long m_count(id self, SEL s) {
  (void)s;
  return ((nsarray_t *)self)->n;
}
static id m_object_at(id self, SEL s, unsigned long i) {
  (void)s;
  nsarray_t *a = self;
  if (i >= a->n) abort();
  return a->items[i];
}
static const method_t kArrayMethods[] = {{"count", (IMP)m_count},
                                         {"objectAtIndex:", (IMP)m_object_at},
                                         {NULL, NULL}};
static const fclass_t kNSArray = {"NSArray", kArrayMethods, &kNSObject};

static void error_dealloc(fobj_t *o) { obj_release(((nserror_t *)o)->desc); }
static id m_localized(id self, SEL s) {
  (void)s;
  return ((nserror_t *)self)->desc;
}
static long m_code(id self, SEL s) {
  (void)s;
  return ((nserror_t *)self)->code;
}
static const method_t kErrorMethods[] = {
    {"localizedDescription", (IMP)m_localized},
    {"code", (IMP)m_code},
    {NULL, NULL}};
static const fclass_t kNSError = {"NSError", kErrorMethods, &kNSObject};

static id make_error(const char *desc, long code) {
  nserror_t *e = new_obj(sizeof *e, &kNSError, error_dealloc);
  e->desc = make_string(desc);
  e->code = code;
  return e;
}

/* ---- MTLCompileOptions ----------------------------------------------------
 */

typedef struct options {
  fobj_t o;
  bool fast_math;
} options_t;

static id m_init(id self, SEL s) {
  (void)s;
  return self;
}
static void m_set_fast_math(id self, SEL s, unsigned char on) {
  (void)s;
  ((options_t *)self)->fast_math = on;
}
static const method_t kOptionsMethods[] = {
    {"init", (IMP)m_init},
    {"setFastMathEnabled:", (IMP)m_set_fast_math},
    {NULL, NULL}};
static const fclass_t kOptions = {"MTLCompileOptions", kOptionsMethods,
                                  &kNSObject};
static id c_options_alloc(id cls, SEL s) {
  (void)cls, (void)s;
  options_t *o = new_obj(sizeof *o, &kOptions, NULL);
  o->fast_math = true; /* Metal's default */
  return o;
}
static const method_t kOptionsClassMethods[] = {{"alloc", (IMP)c_options_alloc},
                                                {NULL, NULL}};
static const fclass_t kOptionsMeta = {"MTLCompileOptions class",
                                      kOptionsClassMethods, NULL};
static fobj_t g_options_class = {&kOptionsMeta, 1 << 30, NULL};

EXPORT id objc_getClass(const char *name) {
  if (strcmp(name, "NSString") == 0) return &g_string_class;
  if (strcmp(name, "MTLCompileOptions") == 0) return &g_options_class;
  return NULL;
}

/* ---- Metal objects --------------------------------------------------------
 */

typedef struct device {
  fobj_t o;
  char name[64];
  uint64_t registry;
  bool unified;
} device_t;

typedef struct buffer {
  fobj_t o;
  unsigned char *mem;
  unsigned long len;
  bool shared;
} buffer_t;

typedef void (*launcher_t)(void **slots, const unsigned *ids);

typedef struct library {
  fobj_t o;
  void *so;
  bool barriers;
  char *msl;
} library_t;

typedef struct function {
  fobj_t o;
  id library; /* retained */
  launcher_t launch;
  int nbuffers; /* [[buffer(i)]] parameters */
  bool dyn;     /* takes threadgroup memory 0 */
} function_t;

typedef struct pipeline {
  fobj_t o;
  id function; /* retained */
} pipeline_t;

enum { kSlots = 31 };

typedef struct command {
  struct command *next;
  bool blit;
  /* dispatch */
  id pipeline; /* retained */
  id buffers[kSlots];
  unsigned long offsets[kSlots];
  unsigned char *bytes[kSlots];
  unsigned long tg_len;
  MTLSize grid, block;
  /* blit */
  id src, dst;
  unsigned long soff, doff, n;
} command_t;

typedef struct queue queue_t;

typedef struct cmdbuf {
  fobj_t o;
  queue_t *queue;
  command_t *head, *tail;
  block_t *handlers[8];
  int nhandlers;
  atomic_ulong status; /* MTLCommandBufferStatus */
  id error;
  struct cmdbuf *next_committed;
} cmdbuf_t;

typedef struct fiber fiber_t;

struct queue {
  fobj_t o;
  fiber_t *fibers; /* the queue thread's fibers, kept between dispatches */
  unsigned nfibers;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  cmdbuf_t *head, *tail;
  bool stop;
};

typedef struct encoder {
  fobj_t o;
  cmdbuf_t *cb; /* not retained: encoders live inside their buffer's use */
  id pipeline;
  id buffers[kSlots];
  unsigned long offsets[kSlots];
  unsigned char *bytes[kSlots];
  unsigned long nbytes[kSlots];
  unsigned long tg_len;
} encoder_t;

/* Device. */
static const method_t kDeviceMethods[];
static const fclass_t kDevice = {"FakeMTLDevice", kDeviceMethods, &kNSObject};
static id m_dev_name(id self, SEL s) {
  (void)s;
  return autorelease(make_string(((device_t *)self)->name));
}
static uint64_t m_registry(id self, SEL s) {
  (void)s;
  return ((device_t *)self)->registry;
}
static unsigned char m_unified(id self, SEL s) {
  (void)s;
  return ((device_t *)self)->unified;
}
static MTLSize m_max_threads(id self, SEL s) {
  (void)self, (void)s;
  MTLSize r = {1024, 1024, 1024};
  return r;
}
static unsigned long m_tg_mem(id self, SEL s) {
  (void)self, (void)s;
  return 32768;
}
static uint64_t m_working_set(id self, SEL s) {
  (void)self, (void)s;
  return (uint64_t)1 << 30;
}
static unsigned long m_max_buffer(id self, SEL s) {
  (void)self, (void)s;
  return (unsigned long)256 << 20;
}

static void buffer_dealloc(fobj_t *o) { free(((buffer_t *)o)->mem); }
static void *m_contents(id self, SEL s) {
  (void)s;
  buffer_t *b = self;
  return b->shared ? b->mem : NULL; /* private storage: nil */
}
static unsigned long m_buf_length(id self, SEL s) {
  (void)s;
  return ((buffer_t *)self)->len;
}
static const method_t kBufferMethods[] = {
    {"contents", (IMP)m_contents}, {"length", (IMP)m_buf_length}, {NULL, NULL}};
static const fclass_t kBuffer = {"FakeMTLBuffer", kBufferMethods, &kNSObject};

static id new_buffer(unsigned long len, unsigned long options) {
  if (len == 0 || len > ((unsigned long)256 << 20)) return NULL;
  unsigned long mode = (options >> 4) & 0xf;
  if (mode != 0 && mode != 2) abort(); /* only shared and private */
  buffer_t *b = new_obj(sizeof *b, &kBuffer, buffer_dealloc);
  b->mem = calloc(1, len);
  b->len = len;
  b->shared = mode == 0;
  return b;
}
static id m_new_buffer(id self, SEL s, unsigned long len,
                       unsigned long options) {
  (void)self, (void)s;
  return new_buffer(len, options);
}
static id m_new_buffer_bytes(id self, SEL s, const void *bytes,
                             unsigned long len, unsigned long options) {
  (void)self, (void)s;
  buffer_t *b = new_buffer(len, options);
  if (b) memcpy(b->mem, bytes, len);
  return b;
}

/* ---- Command queues --------------------------------------------------------
 */

static void run_command_buffer(cmdbuf_t *cb);
static void free_fibers(queue_t *q);

static void *queue_main(void *arg) {
  queue_t *q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (!q->head && !q->stop) pthread_cond_wait(&q->cond, &q->lock);
    if (!q->head) break;
    cmdbuf_t *cb = q->head;
    q->head = cb->next_committed;
    if (!q->head) q->tail = NULL;
    pthread_mutex_unlock(&q->lock);
    run_command_buffer(cb);
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->cond);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

static void queue_dealloc(fobj_t *o) {
  queue_t *q = (queue_t *)o;
  pthread_mutex_lock(&q->lock);
  q->stop = true;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  pthread_join(q->thread, NULL);
  free_fibers(q);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->lock);
}

static const method_t kQueueMethods[];
static const fclass_t kQueue = {"FakeMTLCommandQueue", kQueueMethods,
                                &kNSObject};
static id m_new_queue(id self, SEL s) {
  (void)self, (void)s;
  queue_t *q = new_obj(sizeof *q, &kQueue, queue_dealloc);
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->cond, NULL);
  if (pthread_create(&q->thread, NULL, queue_main, q) != 0) abort();
  return q;
}

static void cmd_free(command_t *c) {
  obj_release(c->pipeline);
  for (int i = 0; i < kSlots; ++i) {
    obj_release(c->buffers[i]);
    free(c->bytes[i]);
  }
  obj_release(c->src);
  obj_release(c->dst);
  free(c);
}

static void cmdbuf_dealloc(fobj_t *o) {
  cmdbuf_t *cb = (cmdbuf_t *)o;
  for (command_t *c = cb->head, *n; c; c = n) {
    n = c->next;
    cmd_free(c);
  }
  for (int i = 0; i < cb->nhandlers; ++i) free(cb->handlers[i]);
  obj_release(cb->error);
}

static const method_t kCmdbufMethods[];
static const fclass_t kCmdbuf = {"FakeMTLCommandBuffer", kCmdbufMethods,
                                 &kNSObject};
static id m_command_buffer(id self, SEL s) {
  (void)s;
  cmdbuf_t *cb = new_obj(sizeof *cb, &kCmdbuf, cmdbuf_dealloc);
  cb->queue = self;
  atomic_init(&cb->status, 0); /* NotEnqueued */
  return autorelease(cb);
}
static const method_t kQueueMethods[] = {
    {"commandBuffer", (IMP)m_command_buffer}, {NULL, NULL}};

static void append(cmdbuf_t *cb, command_t *c) {
  if (cb->tail)
    cb->tail->next = c;
  else
    cb->head = c;
  cb->tail = c;
}

/* Encoders. */
static void encoder_dealloc(fobj_t *o) {
  encoder_t *e = (encoder_t *)o;
  obj_release(e->pipeline);
  for (int i = 0; i < kSlots; ++i) {
    obj_release(e->buffers[i]);
    free(e->bytes[i]);
  }
}
static void m_set_pipeline(id self, SEL s, id pso) {
  (void)s;
  encoder_t *e = self;
  obj_retain(pso);
  obj_release(e->pipeline);
  e->pipeline = pso;
}
static void m_set_buffer(id self, SEL s, id buf, unsigned long off,
                         unsigned long i) {
  (void)s;
  encoder_t *e = self;
  if (i >= kSlots) abort();
  obj_retain(buf);
  obj_release(e->buffers[i]);
  free(e->bytes[i]);
  e->bytes[i] = NULL;
  e->buffers[i] = buf;
  e->offsets[i] = off;
}
static void m_set_bytes(id self, SEL s, const void *p, unsigned long n,
                        unsigned long i) {
  (void)s;
  encoder_t *e = self;
  if (i >= kSlots || n > 4096) abort();
  obj_release(e->buffers[i]);
  e->buffers[i] = NULL;
  free(e->bytes[i]);
  e->bytes[i] = malloc(n ? n : 1);
  if (!e->bytes[i]) abort();
  memcpy(e->bytes[i], p, n);
  e->nbytes[i] = n;
}
static void m_set_tg_len(id self, SEL s, unsigned long n, unsigned long i) {
  (void)s;
  if (i != 0 || n % 16 != 0) abort();
  ((encoder_t *)self)->tg_len = n;
}
static void m_dispatch(id self, SEL s, MTLSize grid, MTLSize block) {
  (void)s;
  encoder_t *e = self;
  command_t *c = calloc(1, sizeof *c);
  if (!c || !e->pipeline) abort();
  c->pipeline = obj_retain(e->pipeline);
  for (int i = 0; i < kSlots; ++i) {
    c->buffers[i] = obj_retain(e->buffers[i]);
    c->offsets[i] = e->offsets[i];
    if (e->bytes[i]) {
      c->bytes[i] = malloc(e->nbytes[i] ? e->nbytes[i] : 1);
      if (!c->bytes[i]) abort();
      memcpy(c->bytes[i], e->bytes[i], e->nbytes[i]);
    }
  }
  c->tg_len = e->tg_len;
  c->grid = grid;
  c->block = block;
  pthread_mutex_lock(&g_log_lock);
  g_last_grid = grid;
  g_last_block = block;
  g_last_tg_len = e->tg_len;
  pthread_mutex_unlock(&g_log_lock);
  append(e->cb, c);
}
static void m_end_encoding(id self, SEL s) { (void)self, (void)s; }
static void m_copy_buffer(id self, SEL s, id src, unsigned long soff, id dst,
                          unsigned long doff, unsigned long n) {
  (void)s;
  encoder_t *e = self;
  command_t *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->blit = true;
  c->src = obj_retain(src);
  c->dst = obj_retain(dst);
  c->soff = soff;
  c->doff = doff;
  c->n = n;
  append(e->cb, c);
}
static const method_t kComputeMethods[] = {
    {"setComputePipelineState:", (IMP)m_set_pipeline},
    {"setBuffer:offset:atIndex:", (IMP)m_set_buffer},
    {"setBytes:length:atIndex:", (IMP)m_set_bytes},
    {"setThreadgroupMemoryLength:atIndex:", (IMP)m_set_tg_len},
    {"dispatchThreadgroups:threadsPerThreadgroup:", (IMP)m_dispatch},
    {"endEncoding", (IMP)m_end_encoding},
    {NULL, NULL}};
static const fclass_t kCompute = {"FakeMTLComputeCommandEncoder",
                                  kComputeMethods, &kNSObject};
static const method_t kBlitMethods[] = {
    {"copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:",
     (IMP)m_copy_buffer},
    {"endEncoding", (IMP)m_end_encoding},
    {NULL, NULL}};
static const fclass_t kBlit = {"FakeMTLBlitCommandEncoder", kBlitMethods,
                               &kNSObject};

static id m_compute_encoder(id self, SEL s) {
  (void)s;
  encoder_t *e = new_obj(sizeof *e, &kCompute, encoder_dealloc);
  e->cb = self;
  return autorelease(e);
}
static id m_blit_encoder(id self, SEL s) {
  (void)s;
  encoder_t *e = new_obj(sizeof *e, &kBlit, encoder_dealloc);
  e->cb = self;
  return autorelease(e);
}
static void m_add_handler(id self, SEL s, const block_t *block) {
  (void)s;
  cmdbuf_t *cb = self;
  if (cb->nhandlers == 8) abort();
  cb->handlers[cb->nhandlers++] = block_copy(block);
}
static void m_commit(id self, SEL s) {
  (void)s;
  cmdbuf_t *cb = self;
  queue_t *q = cb->queue;
  obj_retain(cb); /* the queue's reference, dropped once it has run */
  atomic_store(&cb->status, 2); /* Committed */
  pthread_mutex_lock(&q->lock);
  if (q->tail)
    q->tail->next_committed = cb;
  else
    q->head = cb;
  q->tail = cb;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
}
static void m_wait(id self, SEL s) {
  (void)s;
  cmdbuf_t *cb = self;
  queue_t *q = cb->queue;
  pthread_mutex_lock(&q->lock);
  while (atomic_load(&cb->status) < 4) pthread_cond_wait(&q->cond, &q->lock);
  pthread_mutex_unlock(&q->lock);
}
static unsigned long m_status(id self, SEL s) {
  (void)s;
  return atomic_load(&((cmdbuf_t *)self)->status);
}
static id m_cb_error(id self, SEL s) {
  (void)s;
  return ((cmdbuf_t *)self)->error;
}
static const method_t kCmdbufMethods[] = {
    {"computeCommandEncoder", (IMP)m_compute_encoder},
    {"blitCommandEncoder", (IMP)m_blit_encoder},
    {"addCompletedHandler:", (IMP)m_add_handler},
    {"commit", (IMP)m_commit},
    {"waitUntilCompleted", (IMP)m_wait},
    {"status", (IMP)m_status},
    {"error", (IMP)m_cb_error},
    {NULL, NULL}};

/* ---- Running kernels ------------------------------------------------------
 */

/* Threads of one threadgroup as fibers, when the kernel has barriers: each
 * runs until it reaches a barrier (rk_fake_barrier) or returns; rounds
 * repeat until all have returned. */
enum { kFiberStack = 128 * 1024 };

struct fiber {
  ucontext_t uc;
  void *stack;
  bool done;
#ifdef FAKE_TSAN
  void *tsan;
#endif
};

typedef struct group_run {
  launcher_t launch;
  void **slots;
  unsigned ids[12];
  fiber_t *fibers;
  unsigned nthreads, current;
  ucontext_t sched;
#ifdef FAKE_ASAN
  void *sched_fake_stack;
  const void *sched_bottom;
  size_t sched_size;
#endif
#ifdef FAKE_TSAN
  void *sched_tsan;
#endif
} group_run_t;

static __thread group_run_t *t_run;

static void switch_to_scheduler(group_run_t *g, bool leaving) {
  fiber_t *f = &g->fibers[g->current];
  (void)leaving;
#ifdef FAKE_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(leaving ? NULL : &fake, g->sched_bottom,
                                 g->sched_size);
#endif
#ifdef FAKE_TSAN
  __tsan_switch_to_fiber(g->sched_tsan, 0);
#endif
  swapcontext(&f->uc, &g->sched);
#ifdef FAKE_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

static void fake_barrier(void) {
  group_run_t *g = t_run;
  if (!g) abort(); /* a barrier outside a fiber-run group */
  switch_to_scheduler(g, false);
}

static void fiber_main(void) {
  group_run_t *g = t_run;
#ifdef FAKE_ASAN
  __sanitizer_finish_switch_fiber(NULL, &g->sched_bottom, &g->sched_size);
#endif
  unsigned ids[12];
  memcpy(ids, g->ids, sizeof ids);
  unsigned t = g->current, bx = g->ids[6], by = g->ids[7];
  ids[0] = t % bx;
  ids[1] = t / bx % by;
  ids[2] = t / (bx * by);
  g->launch(g->slots, ids);
  g->fibers[g->current].done = true;
  switch_to_scheduler(g, true);
}

static void run_group_fibers(group_run_t *g) {
  for (volatile unsigned t = 0; t < g->nthreads; ++t) {
    fiber_t *f = &g->fibers[t];
    f->done = false;
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = kFiberStack;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_main, 0);
  }
  t_run = g;
  /* volatile: swapcontext returns twice as far as the compiler knows. */
  for (volatile bool any = true; any;) {
    any = false;
    for (volatile unsigned t = 0; t < g->nthreads; ++t) {
      fiber_t *f = &g->fibers[t];
      if (f->done) continue;
      any = true;
      g->current = t;
#ifdef FAKE_ASAN
      void *fake = NULL;
      __sanitizer_start_switch_fiber(&fake, f->stack, kFiberStack);
#endif
#ifdef FAKE_TSAN
      __tsan_switch_to_fiber(f->tsan, 0);
#endif
      swapcontext(&g->sched, &f->uc);
#ifdef FAKE_ASAN
      __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
    }
  }
  t_run = NULL;
}

/* At least n fibers of the queue's thread (stacks and sanitizer fibers
 * are made once and kept). */
static fiber_t *queue_fibers(queue_t *q, unsigned n) {
  if (q->nfibers >= n) return q->fibers;
  q->fibers = realloc(q->fibers, n * sizeof *q->fibers);
  if (!q->fibers) abort();
  for (unsigned t = q->nfibers; t < n; ++t) {
    memset(&q->fibers[t], 0, sizeof q->fibers[t]);
    q->fibers[t].stack = mmap(NULL, kFiberStack, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->fibers[t].stack == MAP_FAILED) abort();
#ifdef FAKE_TSAN
    q->fibers[t].tsan = __tsan_create_fiber(0);
#endif
  }
  q->nfibers = n;
  return q->fibers;
}

static void free_fibers(queue_t *q) {
  for (unsigned t = 0; t < q->nfibers; ++t) {
    munmap(q->fibers[t].stack, kFiberStack);
#ifdef FAKE_TSAN
    __tsan_destroy_fiber(q->fibers[t].tsan);
#endif
  }
  free(q->fibers);
  q->fibers = NULL;
  q->nfibers = 0;
}

static void run_dispatch(queue_t *q, command_t *c) {
  pipeline_t *pso = c->pipeline;
  function_t *fn = pso->function;
  library_t *lib = fn->library;
  void *slots[kSlots + 1];
  memset(slots, 0, sizeof slots);
  for (int i = 0; i < kSlots; ++i) {
    buffer_t *b = c->buffers[i];
    if (b) slots[i] = b->mem + c->offsets[i];
    if (c->bytes[i]) slots[i] = c->bytes[i];
  }
  unsigned char *tg = NULL;
  if (fn->dyn) {
    tg = calloc(1, c->tg_len ? c->tg_len : 16);
    if (!tg) abort();
    slots[fn->nbuffers] = tg;
  }
  unsigned bx = c->block.width, by = c->block.height, bz = c->block.depth;
  unsigned nthreads = bx * by * bz;
  group_run_t g;
  memset(&g, 0, sizeof g);
  g.launch = fn->launch;
  g.slots = slots;
  g.nthreads = nthreads;
  if (lib->barriers) {
    g.fibers = queue_fibers(q, nthreads);
#ifdef FAKE_TSAN
    g.sched_tsan = __tsan_get_current_fiber();
#endif
  }
  unsigned ids[12] = {0,
                      0,
                      0,
                      0,
                      0,
                      0,
                      bx,
                      by,
                      bz,
                      (unsigned)c->grid.width,
                      (unsigned)c->grid.height,
                      (unsigned)c->grid.depth};
  for (unsigned gz = 0; gz < c->grid.depth; ++gz)
    for (unsigned gy = 0; gy < c->grid.height; ++gy)
      for (unsigned gx = 0; gx < c->grid.width; ++gx) {
        ids[3] = gx;
        ids[4] = gy;
        ids[5] = gz;
        if (lib->barriers) {
          memcpy(g.ids, ids, sizeof ids);
          run_group_fibers(&g);
          continue;
        }
        for (unsigned t = 0; t < nthreads; ++t) {
          ids[0] = t % bx;
          ids[1] = t / bx % by;
          ids[2] = t / (bx * by);
          fn->launch(slots, ids);
        }
      }
  free(tg);
}

static void run_blit(command_t *c) {
  buffer_t *src = c->src, *dst = c->dst;
  if (c->soff + c->n > src->len || c->doff + c->n > dst->len) abort();
  memmove(dst->mem + c->doff, src->mem + c->soff, c->n);
}

static void run_command_buffer(cmdbuf_t *cb) {
  char fail[1024] = "";
  pthread_mutex_lock(&g_log_lock);
  if (g_fail_cb[0]) {
    snprintf(fail, sizeof fail, "%s", g_fail_cb);
    g_fail_cb[0] = '\0';
  }
  pthread_mutex_unlock(&g_log_lock);
  if (fail[0]) {
    /* MTLCommandBufferErrorInternal (1); nothing runs. */
    cb->error = make_error(fail, 1);
    atomic_store(&cb->status, 5); /* Error */
  } else {
    for (command_t *c = cb->head; c; c = c->next) {
      if (c->blit)
        run_blit(c);
      else
        run_dispatch(cb->queue, c);
    }
    atomic_store(&cb->status, 4); /* Completed */
  }
  for (int i = 0; i < cb->nhandlers; ++i)
    cb->handlers[i]->invoke(cb->handlers[i], cb);
  obj_release(cb);
}

/* ---- Libraries: MSL compiled with clang++ ----------------------------------
 */

static pthread_mutex_t g_lib_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct so_cache {
  uint64_t hash;
  void *so;
  struct so_cache *next;
} so_cache_t;
static so_cache_t *g_so_cache;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

static bool write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

/* The MSL as C++ for fake_msl/metal_stdlib: threadgroup variables become
 * static thread_local, [[threadgroup(0)]] goes, and each kernel gets a
 * launcher. Lines stay where they were. */
static char *to_cxx(const char *msl) {
  size_t cap = strlen(msl) * 2 + 4096, len = 0;
  char *out = malloc(cap);
  if (!out) abort();
  char names[64][128];
  int nk = 0;
  for (const char *line = msl; *line;) {
    size_t n = strcspn(line, "\n");
    const char *p = line;
    while (p < line + n && *p == ' ') ++p;
    bool decl = strncmp(p, "threadgroup ", 12) == 0 &&
                memchr(line, '=', n) == NULL && n && line[n - 1] == ';';
    if (len + n + 64 > cap) {
      cap = 2 * cap + n;
      out = realloc(out, cap);
      if (!out) abort();
    }
    if (decl) {
      memcpy(out + len, line, (size_t)(p - line));
      len += (size_t)(p - line);
      len += (size_t)sprintf(out + len, "static thread_local %.*s",
                             (int)(n - (size_t)(p - line) - 12), p + 12);
    } else {
      memcpy(out + len, line, n);
      len += n;
    }
    out[len++] = '\n';
    if (strncmp(line, "kernel void ", 12) == 0 && nk < 64) {
      size_t k = strcspn(line + 12, "( ");
      snprintf(names[nk++], sizeof names[0], "%.*s", (int)k, line + 12);
    }
    line += n;
    if (*line) ++line;
  }
  out[len] = '\0';
  /* Drop the attribute the erased address space would leave broken. */
  for (char *a; (a = strstr(out, "[[threadgroup(0)]]")) != NULL;)
    memset(a, ' ', strlen("[[threadgroup(0)]]"));
  for (int i = 0; i < nk; ++i) {
    size_t need = len + 256 + 2 * strlen(names[i]);
    if (need > cap) {
      cap = need * 2;
      out = realloc(out, cap);
      if (!out) abort();
    }
    len +=
        (size_t)sprintf(out + len,
                        "extern \"C\" __attribute__((visibility(\"default\")))"
                        " void rk_fake_launch_%s(void **s, const uint *ids) "
                        "{ rk_fake_invoke(%s, s, ids); }\n",
                        names[i], names[i]);
  }
  return out;
}

/* Compiles `msl`; the shared object, or NULL with clang's message in
 * `log` (file name program_source, as Metal names it). */
static void *compile_msl(const char *msl, char *log, size_t cap) {
  uint64_t h = fnv1a(msl);
  pthread_mutex_lock(&g_lib_lock);
  for (so_cache_t *c = g_so_cache; c; c = c->next)
    if (c->hash == h) {
      pthread_mutex_unlock(&g_lib_lock);
      return c->so;
    }
  pthread_mutex_unlock(&g_lib_lock);
  const char *cache = env_or("RK_FAKE_METAL_CACHE", "/tmp");
  char dir[1024], so_path[1200];
  snprintf(dir, sizeof dir, "%s/rk-fake-metal-%016llx-%d", cache,
           (unsigned long long)h, (int)getpid());
  char final_so[1200];
  snprintf(final_so, sizeof final_so, "%s/rk-fake-metal-%016llx.so", cache,
           (unsigned long long)h);
  void *so = dlopen(final_so, RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    char *cxx = to_cxx(msl);
    char src[1200];
    mkdir(cache, 0700);
    mkdir(dir, 0700);
    snprintf(src, sizeof src, "%s/program_source", dir);
    snprintf(so_path, sizeof so_path, "%s/lib.so", dir);
    if (!write_text(src, cxx)) {
      free(cxx);
      snprintf(log, cap, "fake metal: cannot write %s", src);
      return NULL;
    }
    free(cxx);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' -std=c++17 -O1 -fPIC -shared -w "
             "-fno-color-diagnostics -I'%s' -x c++ program_source -o lib.so "
             "2>&1",
             dir, env_or("RK_FAKE_METAL_CXX", RK_FAKE_METAL_CXX),
             env_or("RK_FAKE_METAL_INCLUDE", RK_FAKE_METAL_INCLUDE));
    FILE *p = popen(cmd, "r");
    size_t got = 0;
    if (p) {
      got = fread(log, 1, cap - 1, p);
      int rc = pclose(p);
      log[got] = '\0';
      if (rc != 0) {
        if (!got) snprintf(log, cap, "fake metal: %s failed", cmd);
        return NULL;
      }
    }
    if (rename(so_path, final_so) != 0) {
      snprintf(log, cap, "fake metal: rename %s: %s", so_path, strerror(errno));
      return NULL;
    }
    unlink(src);
    rmdir(dir);
    so = dlopen(final_so, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      snprintf(log, cap, "fake metal: dlopen %s: %s", final_so, dlerror());
      return NULL;
    }
  }
  void (**hook)(void) = dlsym(so, "rk_fake_barrier");
  if (hook) *hook = fake_barrier;
  so_cache_t *c = malloc(sizeof *c);
  if (!c) abort();
  c->hash = h;
  c->so = so;
  pthread_mutex_lock(&g_lib_lock);
  c->next = g_so_cache;
  g_so_cache = c;
  pthread_mutex_unlock(&g_lib_lock);
  return so;
}

static atomic_int g_dump_serial;

static void library_dealloc(fobj_t *o) { free(((library_t *)o)->msl); }
static const method_t kLibraryMethods[];
static const fclass_t kLibrary = {"FakeMTLLibrary", kLibraryMethods,
                                  &kNSObject};

static id m_new_library(id self, SEL s, id source, id options, id *error) {
  (void)self, (void)s;
  const char *msl = ((nsstring_t *)source)->utf8;
  if (!((options_t *)options)->fast_math) log_message("(fast math off)");
  const char *dump = getenv("RK_FAKE_METAL_DUMP_DIR");
  if (dump && *dump) {
    char path[1200];
    mkdir(dump, 0700);
    snprintf(path, sizeof path, "%s/%d-%d.metal", dump, (int)getpid(),
             atomic_fetch_add(&g_dump_serial, 1));
    write_text(path, msl);
  }
  char log[8192] = "";
  pthread_mutex_lock(&g_log_lock);
  if (g_fail_compile[0]) {
    snprintf(log, sizeof log, "%s", g_fail_compile);
    g_fail_compile[0] = '\0';
  }
  pthread_mutex_unlock(&g_log_lock);
  void *so = log[0] ? NULL : compile_msl(msl, log, sizeof log);
  if (!so) {
    if (error) *error = autorelease(make_error(log, 3)); /* CompileFailure */
    return NULL;
  }
  library_t *lib = new_obj(sizeof *lib, &kLibrary, library_dealloc);
  lib->so = so;
  lib->barriers = strstr(msl, "threadgroup_barrier") != NULL;
  lib->msl = strdup(msl);
  return lib;
}

static void function_dealloc(fobj_t *o) {
  obj_release(((function_t *)o)->library);
}
static const method_t kFunctionMethods[] = {{NULL, NULL}};
static const fclass_t kFunction = {"FakeMTLFunction", kFunctionMethods,
                                   &kNSObject};

static id m_new_function(id self, SEL s, id name) {
  (void)s;
  library_t *lib = self;
  const char *n = ((nsstring_t *)name)->utf8;
  char sym[256];
  snprintf(sym, sizeof sym, "rk_fake_launch_%s", n);
  launcher_t launch = NULL;
  void *p = dlsym(lib->so, sym);
  memcpy(&launch, &p, sizeof p);
  if (!launch) return NULL;
  /* The kernel's signature: its [[buffer(i)]] count, threadgroup(0). */
  char head[300];
  snprintf(head, sizeof head, "kernel void %s(", n);
  const char *sig = strstr(lib->msl, head);
  const char *end = sig ? strstr(sig, ") {") : NULL;
  if (!end) return NULL;
  function_t *fn = new_obj(sizeof *fn, &kFunction, function_dealloc);
  fn->library = obj_retain(lib);
  fn->launch = launch;
  for (const char *b = sig; (b = strstr(b, "[[buffer(")) && b < end; ++b)
    fn->nbuffers++;
  const char *tg = strstr(sig, "[[threadgroup(0)]]");
  fn->dyn = tg && tg < end;
  return fn;
}
static const method_t kLibraryMethods[] = {
    {"newFunctionWithName:", (IMP)m_new_function}, {NULL, NULL}};

static void pipeline_dealloc(fobj_t *o) {
  obj_release(((pipeline_t *)o)->function);
}
static unsigned long m_max_total(id self, SEL s) {
  (void)self, (void)s;
  return 1024;
}
static const method_t kPipelineMethods[] = {
    {"maxTotalThreadsPerThreadgroup", (IMP)m_max_total}, {NULL, NULL}};
static const fclass_t kPipeline = {"FakeMTLComputePipelineState",
                                   kPipelineMethods, &kNSObject};
static id m_new_pipeline(id self, SEL s, id function, id *error) {
  (void)self, (void)s;
  if (!function) {
    if (error) *error = autorelease(make_error("no function", 1));
    return NULL;
  }
  pipeline_t *p = new_obj(sizeof *p, &kPipeline, pipeline_dealloc);
  p->function = obj_retain(function);
  return p;
}

static const method_t kDeviceMethods[] = {
    {"name", (IMP)m_dev_name},
    {"registryID", (IMP)m_registry},
    {"hasUnifiedMemory", (IMP)m_unified},
    {"maxThreadsPerThreadgroup", (IMP)m_max_threads},
    {"maxThreadgroupMemoryLength", (IMP)m_tg_mem},
    {"recommendedMaxWorkingSetSize", (IMP)m_working_set},
    {"maxBufferLength", (IMP)m_max_buffer},
    {"newCommandQueue", (IMP)m_new_queue},
    {"newBufferWithLength:options:", (IMP)m_new_buffer},
    {"newBufferWithBytes:length:options:", (IMP)m_new_buffer_bytes},
    {"newLibraryWithSource:options:error:", (IMP)m_new_library},
    {"newComputePipelineStateWithFunction:error:", (IMP)m_new_pipeline},
    {NULL, NULL}};

static id make_device(int i) {
  device_t *d = new_obj(sizeof *d, &kDevice, NULL);
  snprintf(d->name, sizeof d->name, "Fake Apple GPU %d%s", i,
           g_unified ? "" : " (discrete)");
  d->registry = 0x100000400ull + (uint64_t)i;
  d->unified = g_unified;
  return d;
}

EXPORT id MTLCopyAllDevices(void) {
  nsarray_t *a = new_obj(sizeof *a, &kNSArray, array_dealloc);
  pthread_mutex_lock(&g_log_lock);
  int n = g_devices;
  pthread_mutex_unlock(&g_log_lock);
  for (int i = 0; i < n && i < 8; ++i) a->items[a->n++] = make_device(i);
  return a;
}

EXPORT id MTLCreateSystemDefaultDevice(void) {
  return g_devices > 0 ? make_device(0) : NULL;
}

/* ---- Test controls ---------------------------------------------------------
 */

__attribute__((constructor)) static void fake_init(void) {
  const char *n = getenv("RK_FAKE_METAL_DEVICES");
  if (n && *n) g_devices = atoi(n);
  const char *d = getenv("RK_FAKE_METAL_DISCRETE");
  if (d && *d == '1') g_unified = 0;
}

EXPORT void fake_metal_set_devices(int n, int unified) {
  pthread_mutex_lock(&g_log_lock);
  g_devices = n;
  g_unified = unified;
  pthread_mutex_unlock(&g_log_lock);
}

/* The next newLibraryWithSource: fails with this message. */
EXPORT void fake_metal_fail_next_compile(const char *message) {
  pthread_mutex_lock(&g_log_lock);
  snprintf(g_fail_compile, sizeof g_fail_compile, "%s", message);
  pthread_mutex_unlock(&g_log_lock);
}

/* The next command buffer to run fails with this message. */
EXPORT void fake_metal_fail_next_command_buffer(const char *message) {
  pthread_mutex_lock(&g_log_lock);
  snprintf(g_fail_cb, sizeof g_fail_cb, "%s", message);
  pthread_mutex_unlock(&g_log_lock);
}

/* How many times `selector` was sent so far. */
EXPORT long fake_metal_count(const char *selector) {
  long n = 0;
  pthread_mutex_lock(&g_log_lock);
  for (int i = 0; i < 256 && g_log[i].sel; ++i)
    if (strcmp(g_log[i].sel, selector) == 0) n = g_log[i].count;
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

EXPORT long fake_metal_live_objects(void) { return atomic_load(&g_live); }

EXPORT void fake_metal_pools(long *pushes, long *pops) {
  *pushes = atomic_load(&g_pool_pushes);
  *pops = atomic_load(&g_pool_pops);
}

/* The last dispatch: grid, threadgroup and threadgroup memory length. */
EXPORT void fake_metal_last_dispatch(unsigned long out[7]) {
  pthread_mutex_lock(&g_log_lock);
  out[0] = g_last_grid.width;
  out[1] = g_last_grid.height;
  out[2] = g_last_grid.depth;
  out[3] = g_last_block.width;
  out[4] = g_last_block.height;
  out[5] = g_last_block.depth;
  out[6] = g_last_tg_len;
  pthread_mutex_unlock(&g_log_lock);
}
