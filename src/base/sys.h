/* Small operating-system helpers: clocks, futex-style waiting, hashing,
 * files and running a child process. Each has a Linux path and a POSIX
 * one (macOS); base/platform.h says which is built. */
#ifndef RK_BASE_SYS_H_
#define RK_BASE_SYS_H_

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rk/status.h"

/* Monotonic clock in nanoseconds. */
uint64_t rk__now_ns(void);

/* A CPU hint inside spin loops. */
static inline void rk__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

/* Between the first few looks of a spin that expects its answer within
 * a cache-line transfer or two (a call's answer, the next request of a
 * ping-pong): on x86 a load fence, which keeps one look in flight at a
 * time without PAUSE's wait (24 ns on AMD family 26, longer on recent
 * Intel), so the answer is seen as soon as its line arrives. Longer
 * spins use rk__cpu_relax. */
static inline void rk__cpu_relax_brief(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_lfence();
#else
  rk__cpu_relax();
#endif
}

/* memcpy for a message's payload, which is mostly a few bytes: 4 to 16
 * bytes inline, as two loads and two stores that may overlap; anything
 * else through memcpy (a call, for a size the compiler cannot see). The
 * two regions must not overlap. */
static inline void rk__copy_payload(void *dst, const void *src, size_t n) {
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + n - 8, 8);
    memcpy(d, &a, 8);
    memcpy(d + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    memcpy(&a, s, 4);
    memcpy(&b, s + n - 4, 4);
    memcpy(d, &a, 4);
    memcpy(d + n - 4, &b, 4);
  } else if (n) {
    memcpy(d, s, n);
  }
}

/* A full (sequentially consistent) fence, for store-then-load handshakes.
 * ThreadSanitizer does not support fences (GCC refuses to compile them with
 * -fsanitize=thread): there a sequentially consistent read-modify-write on a
 * thread-local word stands in, which is a full barrier on x86 and keeps the
 * handshakes working under TSan. */
#if defined(__SANITIZE_THREAD__)
#define RK__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RK__TSAN 1
#endif
#endif
/* For a small thread-local on a hot path: the initial-exec TLS model, so
 * that librk.so reaches it at a fixed offset from the thread pointer
 * rather than through a call to __tls_get_addr (about 10 % of a pipelined
 * send and receive on the host). It takes a few bytes of the static TLS
 * block that glibc keeps for libraries loaded with dlopen; the large ones
 * (the error message) keep the default model. ELF only. */
#if defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define RK__TLS_FAST __attribute__((tls_model("initial-exec")))
#else
#define RK__TLS_FAST
#endif

static inline void rk__fence_seq_cst(void) {
#ifdef RK__TSAN
  static _Thread_local uint32_t word;
  __atomic_fetch_add(&word, 0u, __ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Blocks while *word == expected (a futex on Linux; elsewhere a mutex and
 * condition variable from a table hashed by address). May return
 * spuriously; callers re-check their condition. timeout_ns 0 waits
 * forever. The waker changes *word before calling rk__wake_all. */
void rk__wait_while_equal(const uint32_t *word, uint32_t expected,
                          uint64_t timeout_ns);
/* Wakes all threads blocked on `word`. */
void rk__wake_all(const uint32_t *word);

/* A lock for short sections that never block: taking it is one atomic
 * exchange and releasing it a plain store, where a mutex's release is a
 * second locked instruction (each one waits for the thread's earlier
 * stores to drain, which after writing lines another thread or process
 * reads costs more than a short section itself). Nobody is woken by a
 * release: a thread that finds it taken spins briefly, then yields, then
 * naps (20 us) until it is free, so sections must be short and must not
 * wait for anything (no lock ordered after a thread that may wait for
 * this one, no sleeping). Not recursive. */
typedef struct rk__short_lock {
  uint32_t held; /* atomic: 1 while taken */
} rk__short_lock_t;

void rk__short_lock_wait(rk__short_lock_t *lock);
static inline void rk__short_lock(rk__short_lock_t *lock) {
  if (__atomic_exchange_n(&lock->held, 1u, __ATOMIC_ACQUIRE))
    rk__short_lock_wait(lock);
}
static inline void rk__short_unlock(rk__short_lock_t *lock) {
  __atomic_store_n(&lock->held, 0u, __ATOMIC_RELEASE);
}

/* 128-bit FNV-1a, incrementally. */
typedef struct rk__hash {
  unsigned __int128 h;
} rk__hash_t;
void rk__hash_init(rk__hash_t *hash);
void rk__hash_update(rk__hash_t *hash, const void *data, size_t n);
/* Updates with a NUL-terminated string including its terminator, so that
 * consecutive strings cannot run into each other. */
void rk__hash_str(rk__hash_t *hash, const char *s);
/* 32 lowercase hex digits and a NUL. */
void rk__hash_hex(const rk__hash_t *hash, char out[33]);

/* A 128-bit checksum of data (n bytes) under `seed`, into out (16 bytes),
 * eight bytes at a time in four independent lanes: several times faster
 * than rk__hash_update, for detecting damaged or changed files (the cache's
 * entries), not for keys. Not cryptographic: it finds accidents, not
 * attacks (which the cache's trust rules are for). */
void rk__checksum128(uint64_t seed, const void *data, size_t n,
                     unsigned char out[16]);

/* mkdir -p with mode 0700 for new directories. */
rk_status_t rk__mkdirs(const char *path);
/* Reads a whole file into a NUL-terminated malloc'd buffer. */
rk_status_t rk__read_file(const char *path, char **out_data, size_t *out_size);

/* Flags of rk__write_file_replace. */
enum {
  /* A FIFO or character device at the path (/dev/stdout, /dev/null) is
   * opened and written in place; without this flag it is refused. */
  RK__WRITE_SPECIAL_IN_PLACE = 1u << 0,
  /* A new file gets mode 0600 (less the umask) instead of 0666. */
  RK__WRITE_PRIVATE = 1u << 1,
};

/* Writes n bytes of data to `path`, all or nothing: through a temporary
 * file ("<file>.rk-<random>") in the file's directory, then a rename, so
 * readers never see a partial file and a failed write leaves the old one.
 * An existing regular file keeps its mode (and its owner where this process
 * may set it); a new one gets 0666 (0600 with RK__WRITE_PRIVATE) less the
 * umask. A symbolic link is followed: its target is replaced and the link
 * kept; a dangling link is refused (its target is not created). A directory,
 * socket or block device is refused, and so is a FIFO or character device
 * unless RK__WRITE_SPECIAL_IN_PLACE (then written in place, not atomically).
 * Errors: RK_ERR_INVALID_ARGUMENT for what is refused, RK_ERR_UNAVAILABLE
 * when the system call fails; the message starts "cannot write '<path>': ".
 * A process killed while writing may leave the temporary file. */
rk_status_t rk__write_file_replace(const char *path, const void *data, size_t n,
                                   unsigned flags);
/* What rk__write_file_replace would refuse, checked without writing: the
 * same refusals, and a directory this process cannot write into. For
 * failing early, before expensive work; the write itself checks again. */
rk_status_t rk__write_file_check(const char *path, unsigned flags);
/* rk__write_file_replace with RK__WRITE_PRIVATE (caches). */
rk_status_t rk__write_file_atomic(const char *path, const void *data, size_t n);

/* Runs argv[0] (searched in PATH) with argv, no shell, waiting for it.
 * Combined stdout+stderr is returned in *out_output (malloc'd, NUL-
 * terminated, may be NULL if out_output is NULL) and the exit status in
 * *out_exit (-1 when killed by a signal). RK_ERR_UNAVAILABLE if the program
 * cannot be started. */
rk_status_t rk__run_process(char *const argv[], char **out_output,
                            int *out_exit);

/* Reads environment variable `name` as a whole number in [lo, hi] into
 * *inout; leaves *inout alone when the variable is unset or empty. Anything
 * else is RK_ERR_INVALID_ARGUMENT naming the variable. */
rk_status_t rk__env_long(const char *name, long lo, long hi, long *inout);

/* Names the calling thread (as shown by top, gdb, /proc; at most 15
 * characters are kept). Best effort. */
void rk__set_thread_name(const char *name);

/* Number of CPUs this process may run on, and their ids (up to max). */
int rk__allowed_cpus(int *out_ids, int max);

/* The threads runnable on the machine right now, the caller and other
 * processes' included (one read of /proc/loadavg); -1 where the system
 * does not say. */
long rk__machine_running(void);

/* Whether more threads are runnable right now than the machine has CPUs
 * online: a spinning thread would then take a CPU from one that has work.
 * False where the system does not say. */
bool rk__machine_crowded(void);

/* Moves the calling thread off the CPU it runs on, once, leaving its
 * allowed CPUs as they were: for a spinning waiter whose answers keep
 * coming late while the machine is not crowded, which is what happens
 * when it shares a CPU with the spinning thread that answers it (the
 * scheduler can take tens of milliseconds to move one of them to an
 * idle CPU). False where it cannot (one CPU allowed, not Linux). */
bool rk__move_off_cpu(void);

/* Pins `thread` to CPU `cpu`. A hint: false where the system has no CPU
 * affinity (macOS) or refuses it (containers). */
bool rk__pin_thread(pthread_t thread, int cpu);
/* The same for the n CPUs of `cpus` (e.g. all of rk__allowed_cpus, to undo
 * a pin). */
bool rk__pin_thread_set(pthread_t thread, const int *cpus, int n);
/* The CPU the caller runs on, or -1 where the system does not say. */
int rk__current_cpu(void);

/* The CPU's model name where the system names it outside /proc/cpuinfo
 * (macOS: sysctl machdep.cpu.brand_string, "Apple M2"); false elsewhere,
 * where callers read /proc/cpuinfo. */
bool rk__cpu_brand(char *out, size_t cap);

/* A small number naming the calling thread in traces: the kernel's thread
 * id on Linux and macOS, else a per-process counter. */
int32_t rk__thread_id(void);
/* The running program's name without its directory ("rk"), never NULL. */
const char *rk__program_name(void);
/* The running program's file, for starting copies of it (tests, demos):
 * false when the system does not say or it does not fit in cap. */
bool rk__executable_path(char *out, size_t cap);

/* A file with no name, open for reading and writing with close-on-exec,
 * never descriptor 0-2 (memfd_create on Linux; elsewhere mkstemp in
 * $TMPDIR, unlinked at once). -1 with errno on failure. */
int rk__anonymous_file(const char *name);
/* pipe(2) with close-on-exec on both ends (pipe2 on Linux; elsewhere pipe
 * and fcntl, which leaves a window in which a fork by another thread can
 * inherit the ends). 0, or -1 with errno. */
int rk__pipe_cloexec(int fds[2]);

/* pthread_mutex_lock until deadline_ns (an rk__now_ns time): 0, or
 * ETIMEDOUT. pthread_mutex_timedlock where the system has it (Linux);
 * macOS has none: there trylock with sleeps of up to a millisecond. */
int rk__mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline_ns);

/* A reusable barrier for n threads (pthread barriers are optional in POSIX
 * and macOS has none). rk__barrier_wait returns once n threads wait. */
typedef struct rk__barrier {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  unsigned n, waiting, phase;
} rk__barrier_t;
void rk__barrier_init(rk__barrier_t *barrier, unsigned n);
void rk__barrier_wait(rk__barrier_t *barrier);
void rk__barrier_destroy(rk__barrier_t *barrier);

/* A condition variable whose timed waits follow rk__now_ns's monotonic
 * clock where the system allows (Linux); elsewhere (macOS has no
 * pthread_condattr_setclock) they are measured on the real-time clock,
 * converted from the monotonic deadline at each wait. */
void rk__cond_init_monotonic(pthread_cond_t *cond);
/* pthread_cond_timedwait until deadline_ns (an rk__now_ns time): 0 when
 * woken, ETIMEDOUT (at once when the deadline has passed), or another
 * error. Spurious wake-ups return 0; callers loop. */
int rk__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex,
                        uint64_t deadline_ns);

#endif /* RK_BASE_SYS_H_ */
