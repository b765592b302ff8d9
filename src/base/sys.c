/* Operating-system helpers: POSIX, with Linux's futexes, memfd_create,
 * pipe2 and CPU affinity where RK__LINUX (base/platform.h), and Darwin's
 * own calls where RK__APPLE. */
#include "base/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/platform.h"

#if RK__LINUX
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif
#if RK__APPLE
#include <mach-o/dyld.h>
#include <sys/sysctl.h>
#endif

extern char **environ;

uint64_t rk__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if RK__LINUX

void rk__wait_while_equal(const uint32_t *word, uint32_t expected,
                          uint64_t timeout_ns) {
  struct timespec ts, *tsp = NULL;
  if (timeout_ns) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
    ts.tv_nsec = (long)(timeout_ns % 1000000000u);
    tsp = &ts;
  }
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}

void rk__wake_all(const uint32_t *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

#else /* !RK__LINUX */

/* Waiting on an address without futexes: a fixed table of buckets, each a
 * mutex and a condition variable, chosen by hashing the word's address.
 * A waiter checks the word with its bucket's mutex held and sleeps on the
 * bucket's condition variable in the same critical section; the waker
 * (which changed the word first) takes the same mutex before it
 * broadcasts. So a waiter either sees the new value or is asleep when the
 * broadcast comes: no wake-up is lost. Words that share a bucket only cost
 * each other spurious wake-ups. */
enum { kWaitBuckets = 64 };
static struct wait_bucket {
  pthread_mutex_t lock;
  pthread_cond_t cond;
} g_wait_buckets[kWaitBuckets];
static pthread_once_t g_wait_once = PTHREAD_ONCE_INIT;

static void wait_buckets_init(void) {
  for (int i = 0; i < kWaitBuckets; ++i) {
    pthread_mutex_init(&g_wait_buckets[i].lock, NULL);
    rk__cond_init_monotonic(&g_wait_buckets[i].cond);
  }
}

static struct wait_bucket *wait_bucket(const uint32_t *word) {
  pthread_once(&g_wait_once, wait_buckets_init);
  uint64_t a = (uint64_t)(uintptr_t)word;
  a = (a >> 2) * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
  return &g_wait_buckets[a >> 58];      /* the top 6 bits: 64 buckets */
}

void rk__wait_while_equal(const uint32_t *word, uint32_t expected,
                          uint64_t timeout_ns) {
  struct wait_bucket *b = wait_bucket(word);
  uint64_t deadline = 0;
  if (timeout_ns) {
    uint64_t now = rk__now_ns();
    deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
  }
  pthread_mutex_lock(&b->lock);
  /* One sleep, like one futex wait: spurious returns are the caller's to
   * handle. */
  if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == expected) {
    if (timeout_ns)
      rk__cond_wait_until(&b->cond, &b->lock, deadline);
    else
      pthread_cond_wait(&b->cond, &b->lock);
  }
  pthread_mutex_unlock(&b->lock);
}

void rk__wake_all(const uint32_t *word) {
  struct wait_bucket *b = wait_bucket(word);
  pthread_mutex_lock(&b->lock);
  pthread_cond_broadcast(&b->cond);
  pthread_mutex_unlock(&b->lock);
}

#endif /* RK__LINUX */

void rk__short_lock_wait(rk__short_lock_t *lock) {
  /* Spins about as long as a section takes, then gives the CPU away: the
   * holder may be waiting for it (more runnable threads than CPUs). */
  for (unsigned i = 0;; ++i) {
    if (!__atomic_load_n(&lock->held, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&lock->held, 1u, __ATOMIC_ACQUIRE))
      return;
    if (i < 64) {
      rk__cpu_relax();
    } else if (i < 64 + 32) {
      sched_yield();
    } else {
      struct timespec nap = {0, 20000};
      nanosleep(&nap, NULL);
    }
  }
}

int rk__mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline_ns) {
  uint64_t now = rk__now_ns();
  if (now >= deadline_ns)
    return pthread_mutex_trylock(mutex) == 0 ? 0 : ETIMEDOUT;
#if RK__LINUX
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t ns = (uint64_t)ts.tv_nsec + (deadline_ns - now);
  ts.tv_sec += (time_t)(ns / 1000000000u);
  ts.tv_nsec = (long)(ns % 1000000000u);
  return pthread_mutex_timedlock(mutex, &ts);
#else
  long sleep_ns = 1000;
  for (;;) {
    if (pthread_mutex_trylock(mutex) == 0) return 0;
    now = rk__now_ns();
    if (now >= deadline_ns) return ETIMEDOUT;
    uint64_t left = deadline_ns - now;
    struct timespec ts = {
        0, (long)(left < (uint64_t)sleep_ns ? left : (uint64_t)sleep_ns)};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000) sleep_ns *= 2;
  }
#endif
}

void rk__barrier_init(rk__barrier_t *barrier, unsigned n) {
  pthread_mutex_init(&barrier->lock, NULL);
  pthread_cond_init(&barrier->cond, NULL);
  barrier->n = n;
  barrier->waiting = 0;
  barrier->phase = 0;
}

void rk__barrier_wait(rk__barrier_t *barrier) {
  pthread_mutex_lock(&barrier->lock);
  unsigned phase = barrier->phase;
  if (++barrier->waiting == barrier->n) {
    barrier->waiting = 0;
    ++barrier->phase; /* the next use waits for a new phase */
    pthread_cond_broadcast(&barrier->cond);
  } else {
    while (barrier->phase == phase)
      pthread_cond_wait(&barrier->cond, &barrier->lock);
  }
  pthread_mutex_unlock(&barrier->lock);
}

void rk__barrier_destroy(rk__barrier_t *barrier) {
  pthread_cond_destroy(&barrier->cond);
  pthread_mutex_destroy(&barrier->lock);
}

void rk__cond_init_monotonic(pthread_cond_t *cond) {
#if RK__LINUX
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
#else
  pthread_cond_init(cond, NULL);
#endif
}

int rk__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex,
                        uint64_t deadline_ns) {
  uint64_t now = rk__now_ns();
  if (deadline_ns <= now) return ETIMEDOUT;
  struct timespec ts;
#if RK__LINUX
  (void)now;
  ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
  ts.tv_nsec = (long)(deadline_ns % 1000000000u);
#else
  /* The condition variable measures on the real-time clock: wait as long
   * as is left on the monotonic one, capped at a day (a far deadline is
   * re-armed by the caller's loop). */
  uint64_t wait = deadline_ns - now;
  if (wait > 86400ull * 1000000000u) wait = 86400ull * 1000000000u;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + wait;
  ts.tv_sec += (time_t)(ns / 1000000000u);
  ts.tv_nsec = (long)(ns % 1000000000u);
#endif
  return pthread_cond_timedwait(cond, mutex, &ts);
}

static const unsigned __int128 kFnvPrime =
    ((unsigned __int128)0x0000000001000000ull << 64) | 0x000000000000013Bull;

void rk__hash_init(rk__hash_t *hash) {
  hash->h =
      ((unsigned __int128)0x6c62272e07bb0142ull << 64) | 0x62b821756295c58dull;
}

void rk__hash_update(rk__hash_t *hash, const void *data, size_t n) {
  const unsigned char *p = data;
  unsigned __int128 h = hash->h;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  hash->h = h;
}

void rk__hash_str(rk__hash_t *hash, const char *s) {
  rk__hash_update(hash, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* ---- rk__checksum128 ------------------------------------------------------
 *
 * Four 64-bit lanes each take every fourth word of a 32-byte block: add the
 * word times an odd constant, rotate, multiply by another (every step is a
 * bijection of the lane, so any change of one word changes its lane). The
 * tail and the length go into the lanes the same way; the lanes are then
 * folded into two words and each is finished with a xor-shift-multiply
 * avalanche. */

static const uint64_t kCkMul1 = 0x9e3779b97f4a7c15ull; /* 2^64 / golden ratio */
static const uint64_t kCkMul2 = 0xd6e8feb86659fd93ull;

static inline uint64_t ck_rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static inline uint64_t ck_word(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

static inline uint64_t ck_lane(uint64_t lane, uint64_t word) {
  return ck_rotl(lane + word * kCkMul2, 29) * kCkMul1;
}

static inline uint64_t ck_finish(uint64_t x) {
  x ^= x >> 32;
  x *= kCkMul2;
  x ^= x >> 29;
  x *= kCkMul1;
  x ^= x >> 32;
  return x;
}

void rk__checksum128(uint64_t seed, const void *data, size_t n,
                     unsigned char out[16]) {
  const unsigned char *p = data;
  uint64_t v[4] = {seed ^ kCkMul1, seed + kCkMul2, ck_rotl(seed, 17) ^ kCkMul2,
                   ck_rotl(seed, 41) + kCkMul1};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    v[0] = ck_lane(v[0], ck_word(p + i));
    v[1] = ck_lane(v[1], ck_word(p + i + 8));
    v[2] = ck_lane(v[2], ck_word(p + i + 16));
    v[3] = ck_lane(v[3], ck_word(p + i + 24));
  }
  int k = 0;
  for (; i + 8 <= n; i += 8, ++k) v[k] = ck_lane(v[k], ck_word(p + i));
  uint64_t last = 0;
  for (size_t j = 0; i + j < n; ++j) last |= (uint64_t)p[i + j] << (8 * j);
  v[k & 3] = ck_lane(v[k & 3], last);
  v[(k + 1) & 3] = ck_lane(v[(k + 1) & 3], (uint64_t)n);
  uint64_t a = ck_finish(v[0] ^ ck_rotl(v[1], 23));
  uint64_t b = ck_finish(v[2] ^ ck_rotl(v[3], 37));
  a += b;
  b += ck_finish(a);
  for (int j = 0; j < 8; ++j) {
    out[j] = (unsigned char)(a >> (8 * j));
    out[8 + j] = (unsigned char)(b >> (8 * j));
  }
}

void rk__hash_hex(const rk__hash_t *hash, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)(hash->h >> 64),
           (unsigned long long)hash->h);
}

rk_status_t rk__mkdirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "path '%s' is empty or too long",
                    path);
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
      return rk__fail(RK_ERR_UNAVAILABLE, "cannot create directory '%s': %s",
                      buf, strerror(errno));
    buf[i] = saved;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return rk__fail(RK_ERR_UNAVAILABLE, "'%s' is not a directory", path);
  return RK_OK;
}

rk_status_t rk__read_file(const char *path, char **out_data, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return rk__fail(RK_ERR_NOT_FOUND, "cannot open '%s': %s", path,
                    strerror(errno));
  size_t cap = 4096, n = 0;
  char *data = malloc(cap);
  while (data) {
    n += fread(data + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *bigger = realloc(data, cap * 2);
    if (!bigger) {
      free(data);
      data = NULL;
      break;
    }
    data = bigger;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (!data) return rk__fail(RK_ERR_OUT_OF_MEMORY, "reading '%s'", path);
  if (err) {
    free(data);
    return rk__fail(RK_ERR_UNAVAILABLE, "error reading '%s'", path);
  }
  data[n] = '\0';
  *out_data = data;
  if (out_size) *out_size = n;
  return RK_OK;
}

/* ---- Writing files -------------------------------------------------------
 *
 * What is at the path decides how it is written:
 *
 *   nothing               a new file (0666, or 0600 with RK__WRITE_PRIVATE,
 *                         less the umask), through a temporary file
 *   a regular file        replaced through a temporary file in its directory
 *                         and a rename, keeping its mode (and, where
 *                         allowed, its owner)
 *   a symbolic link       followed: its target is what is written (as above)
 *                         and the link stays; a dangling link is refused
 *   a FIFO or character   written in place with RK__WRITE_SPECIAL_IN_PLACE,
 *   device                refused otherwise (a rename would replace it)
 *   a directory, socket,  refused
 *   block device
 */

/* The file a write goes to, as rk__write_file_replace resolves it. */
typedef struct write_target {
  char *file;    /* malloc'd: `path`, or the target of a link */
  bool exists;   /* a regular file is there (keep its mode and owner) */
  bool in_place; /* a FIFO or character device, written in place */
  struct stat st;
} write_target_t;

static const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown kind";
}

static rk_status_t resolve_target(const char *path, unsigned flags,
                                  write_target_t *t) {
  memset(t, 0, sizeof *t);
  if (!path || !*path)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "cannot write '': empty path");
  struct stat lst;
  if (stat(path, &t->st) != 0) {
    int e = errno;
    if (e == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
      char link[1024];
      ssize_t n = readlink(path, link, sizeof link - 1);
      link[n > 0 ? n : 0] = '\0';
      return rk__fail(RK_ERR_INVALID_ARGUMENT,
                      "cannot write '%s': it is a symbolic link to '%s', "
                      "which does not exist (dangling links are not "
                      "followed)",
                      path, link);
    }
    if (e != ENOENT)
      return rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s", path,
                      strerror(e));
    t->file = strdup(path);
  } else if (S_ISREG(t->st.st_mode)) {
    t->exists = true;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
      t->file = realpath(path, NULL);
      if (!t->file)
        return rk__fail(RK_ERR_UNAVAILABLE,
                        "cannot write '%s': resolving the symbolic link: %s",
                        path, strerror(errno));
    } else {
      t->file = strdup(path);
    }
  } else if ((flags & RK__WRITE_SPECIAL_IN_PLACE) &&
             (S_ISFIFO(t->st.st_mode) || S_ISCHR(t->st.st_mode))) {
    t->in_place = true;
    t->file = strdup(path);
  } else {
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "cannot write '%s': it is %s, not a regular file", path,
                    file_kind(t->st.st_mode));
  }
  if (!t->file)
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cannot write '%s': out of memory",
                    path);
  return RK_OK;
}

/* Writes all of data to fd; false with errno set on failure. */
static bool write_all(int fd, const char *data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    data += w;
    n -= (size_t)w;
  }
  return true;
}

static rk_status_t write_in_place(const char *path, const void *data,
                                  size_t n) {
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  bool ok = fd >= 0 && write_all(fd, data, n);
  int e = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok)
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s", path,
                    strerror(e));
  return RK_OK;
}

/* Creates "<file>.rk-<random>" next to `file` with O_EXCL; the kernel
 * applies the umask to `mode`. Returns the descriptor, or -1 with errno. */
static int create_temporary(const char *file, char *tmp, size_t cap,
                            mode_t mode) {
  static _Atomic uint32_t counter;
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint64_t r = rk__now_ns() ^ ((uint64_t)getpid() << 32) ^
                 ((uint64_t)++counter * 0x9e3779b97f4a7c15ull);
    int len = snprintf(tmp, cap, "%s.rk-%012llx", file,
                       (unsigned long long)(r & 0xffffffffffffull));
    if (len < 0 || (size_t)len >= cap) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

rk_status_t rk__write_file_check(const char *path, unsigned flags) {
  write_target_t t;
  RK_RETURN_IF_ERROR(resolve_target(path, flags, &t));
  /* The directory that will hold the temporary file, or the file itself
   * when it is written in place. */
  char *dir = t.file;
  if (!t.in_place) {
    char *slash = strrchr(t.file, '/');
    if (!slash)
      dir = ".";
    else if (slash == t.file)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  rk_status_t s = RK_OK;
  if (faccessat(AT_FDCWD, dir, t.in_place ? W_OK : W_OK | X_OK, AT_EACCESS) !=
      0)
    s = rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s%s%s: %s", path,
                 t.in_place ? "" : "directory '", t.in_place ? "" : dir,
                 t.in_place ? "" : "'", strerror(errno));
  free(t.file);
  return s;
}

rk_status_t rk__write_file_replace(const char *path, const void *data, size_t n,
                                   unsigned flags) {
  write_target_t t;
  RK_RETURN_IF_ERROR(resolve_target(path, flags, &t));
  if (t.in_place) {
    rk_status_t s = write_in_place(path, data, n);
    free(t.file);
    return s;
  }
  size_t cap = strlen(t.file) + 32;
  char *tmp = malloc(cap);
  if (!tmp) {
    free(t.file);
    return rk__fail(RK_ERR_OUT_OF_MEMORY, "cannot write '%s': out of memory",
                    path);
  }
  mode_t mode = (flags & RK__WRITE_PRIVATE) ? 0600 : 0666;
  int fd = create_temporary(t.file, tmp, cap, t.exists ? 0600 : mode);
  int e = errno;
  bool ok = fd >= 0;
  if (ok && t.exists) {
    /* The replacement keeps the old file's owner where this process may
     * give it (root), and its permissions (after fchown, which clears
     * set-user-ID bits). */
    if (t.st.st_uid != geteuid() || t.st.st_gid != getegid())
      if (fchown(fd, t.st.st_uid, t.st.st_gid) != 0)
        (void)!fchown(fd, (uid_t)-1, t.st.st_gid);
    ok = fchmod(fd, t.st.st_mode & 07777) == 0;
    e = errno;
  }
  if (ok) {
    ok = write_all(fd, data, n);
    e = errno;
  }
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && rename(tmp, t.file) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok && fd >= 0) unlink(tmp);
  free(tmp);
  free(t.file);
  if (!ok)
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s", path,
                    strerror(e));
  return RK_OK;
}

rk_status_t rk__write_file_atomic(const char *path, const void *data,
                                  size_t n) {
  return rk__write_file_replace(path, data, n, RK__WRITE_PRIVATE);
}

rk_status_t rk__run_process(char *const argv[], char **out_output,
                            int *out_exit) {
  int fds[2];
  /* Close-on-exec on both ends: a child started by another thread at the
   * same time must not inherit this pipe (it would hold it open). */
  if (rk__pipe_cloexec(fds) != 0)
    return rk__fail(RK_ERR_UNAVAILABLE, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot run '%s': %s", argv[0],
                    strerror(rc));
  }
  size_t cap = 4096, n = 0;
  char *out = malloc(cap);
  for (;;) {
    if (out && n + 1 >= cap) {
      char *bigger = realloc(out, cap * 2);
      if (!bigger) {
        free(out);
        out = NULL;
      } else {
        out = bigger;
        cap *= 2;
      }
    }
    char sink[4096];
    char *dst = out ? out + n : sink;
    size_t room = out ? cap - n - 1 : sizeof sink;
    ssize_t r = read(fds[0], dst, room);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (out) n += (size_t)r;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out) out[n] = '\0';
  /* posix_spawnp reports a missing program through exit code 127. */
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0) {
    free(out);
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot run '%s': not found", argv[0]);
  }
  if (out_exit) *out_exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (out_output) {
    if (!out) return rk__fail(RK_ERR_OUT_OF_MEMORY, "reading output");
    *out_output = out;
  } else {
    free(out);
  }
  return RK_OK;
}

int rk__allowed_cpus(int *out_ids, int max) {
  int n = 0;
#if RK__LINUX
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE && n < max; ++c)
      if (CPU_ISSET(c, &set)) out_ids[n++] = c;
    if (n > 0) return n;
  }
#endif
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1) online = 1;
  for (long c = 0; c < online && n < max; ++c) out_ids[n++] = (int)c;
  return n;
}

long rk__machine_running(void) {
#if RK__LINUX
  /* /proc/loadavg's fourth field, "running/total": the tasks runnable on
   * the machine right now, the caller included. Opened once: a read at
   * offset 0 regenerates it, one system call per look instead of three
   * (an idle actor worker looks every 20 us). */
  static int g_fd = -2; /* -2: not opened yet; -1: cannot be */
  int fd = __atomic_load_n(&g_fd, __ATOMIC_ACQUIRE);
  if (fd == -2) {
    int mine = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    int expected = -2;
    if (__atomic_compare_exchange_n(&g_fd, &expected, mine < 0 ? -1 : mine,
                                    false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      fd = mine < 0 ? -1 : mine;
    } else {
      if (mine >= 0) close(mine);
      fd = expected;
    }
  }
  if (fd < 0) return -1;
  char buf[128];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char *p = buf;
  for (int field = 0; field < 3 && p; ++field) {
    p = strchr(p, ' ');
    if (p) ++p;
  }
  return p ? strtol(p, NULL, 10) : -1;
#else
  return -1;
#endif
}

/* CPUs online, looked up again at most once a second: on Linux the
 * lookup opens and reads a sysfs file (about 6 us, six times the read of
 * /proc/loadavg), and an idle actor worker asks every 20 us. */
static long online_cpus(void) {
  static long g_online;      /* 0: not looked up yet */
  static uint64_t g_when_ns; /* when it was */
  enum { kEveryNs = 1000000000 };
  const uint64_t now = rk__now_ns();
  long online = __atomic_load_n(&g_online, __ATOMIC_RELAXED);
  if (online > 0 &&
      now - __atomic_load_n(&g_when_ns, __ATOMIC_RELAXED) < kEveryNs)
    return online;
  online = sysconf(_SC_NPROCESSORS_ONLN);
  __atomic_store_n(&g_online, online, __ATOMIC_RELAXED);
  __atomic_store_n(&g_when_ns, now, __ATOMIC_RELAXED);
  return online;
}

bool rk__machine_crowded(void) {
  long running = rk__machine_running();
  long online = online_cpus();
  return running > 0 && online > 0 && running > online;
}

bool rk__move_off_cpu(void) {
#if RK__LINUX
  const int cpu = sched_getcpu();
  cpu_set_t mask, others;
  if (cpu < 0 || pthread_getaffinity_np(pthread_self(), sizeof mask, &mask))
    return false;
  others = mask;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 ||
      pthread_setaffinity_np(pthread_self(), sizeof others, &others))
    return false;
  /* Moved by now; allowed everywhere again, it stays where it is. */
  (void)pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);
  return true;
#else
  return false;
#endif
}

rk_status_t rk__env_long(const char *name, long lo, long hi, long *inout) {
  const char *v = getenv(name);
  if (!v || !*v) return RK_OK;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || x < lo || x > hi)
    return rk__fail(RK_ERR_INVALID_ARGUMENT,
                    "%s='%s' is not a whole number from %ld to %ld", name, v,
                    lo, hi);
  *inout = x;
  return RK_OK;
}

void rk__set_thread_name(const char *name) {
  char buf[16];
  snprintf(buf, sizeof buf, "%s", name);
#if RK__LINUX
  pthread_setname_np(pthread_self(), buf);
#elif RK__APPLE
  pthread_setname_np(buf); /* Darwin names the calling thread only */
#else
  (void)buf; /* POSIX has no thread names */
#endif
}

bool rk__pin_thread_set(pthread_t thread, const int *cpus, int n) {
#if RK__LINUX
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int i = 0; i < n; ++i) {
    if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) return false;
    CPU_SET(cpus[i], &set);
  }
  return n > 0 && pthread_setaffinity_np(thread, sizeof set, &set) == 0;
#else
  /* macOS has no CPU affinity (thread_policy_set's affinity tags only
   * group threads, and Apple silicon ignores them): the scheduler
   * decides. */
  (void)thread;
  (void)cpus;
  (void)n;
  return false;
#endif
}

bool rk__pin_thread(pthread_t thread, int cpu) {
  return rk__pin_thread_set(thread, &cpu, 1);
}

int rk__current_cpu(void) {
#if RK__LINUX
  return sched_getcpu();
#else
  return -1;
#endif
}

bool rk__cpu_brand(char *out, size_t cap) {
#if RK__APPLE
  size_t size = cap;
  if (cap == 0 ||
      sysctlbyname("machdep.cpu.brand_string", out, &size, NULL, 0) != 0)
    return false;
  out[cap - 1] = '\0';
  return out[0] != '\0';
#else
  (void)out;
  (void)cap;
  return false;
#endif
}

int32_t rk__thread_id(void) {
#if RK__LINUX
  return (int32_t)syscall(SYS_gettid);
#elif RK__APPLE
  uint64_t id = 0;
  pthread_threadid_np(pthread_self(), &id);
  return (int32_t)id;
#else
  static uint32_t next;
  static _Thread_local int32_t mine;
  if (mine == 0)
    mine = (int32_t)__atomic_add_fetch(&next, 1u, __ATOMIC_RELAXED);
  return mine;
#endif
}

#if !RK__APPLE && defined(__GLIBC__)
/* glibc declares it with _GNU_SOURCE only; the variable is always there. */
extern char *program_invocation_short_name;
#endif

const char *rk__program_name(void) {
  const char *name = NULL;
#if RK__APPLE
  name = getprogname();
#elif defined(__GLIBC__)
  name = program_invocation_short_name;
#endif
  return name && *name ? name : "unknown";
}

bool rk__executable_path(char *out, size_t cap) {
  if (!out || cap == 0) return false;
#if RK__LINUX
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  if (n <= 0 || (size_t)n >= cap - 1) return false;
  out[n] = '\0';
  return true;
#elif RK__APPLE
  char raw[4096];
  uint32_t size = sizeof raw;
  if (_NSGetExecutablePath(raw, &size) != 0) return false;
  char *real = realpath(raw, NULL);
  bool ok = real && strlen(real) < cap;
  if (ok) memcpy(out, real, strlen(real) + 1);
  free(real);
  return ok;
#else
  return false;
#endif
}

/* Moves fd to a descriptor >= 3 with close-on-exec; -1 on failure (fd is
 * closed either way when it moves). */
static int cloexec_above_stdio(int fd) {
  if (fd < 0) return -1;
  if (fd <= 2) {
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
  }
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int rk__anonymous_file(const char *name) {
#if RK__LINUX
  return cloexec_above_stdio(memfd_create(name, MFD_CLOEXEC));
#else
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char path[4096];
  int len = snprintf(path, sizeof path, "%s%s%s-XXXXXX", dir,
                     dir[strlen(dir) - 1] == '/' ? "" : "/", name);
  if (len < 0 || (size_t)len >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  unlink(path);
  return cloexec_above_stdio(fd);
#endif
}

int rk__pipe_cloexec(int fds[2]) {
#if RK__LINUX
  return pipe2(fds, O_CLOEXEC);
#else
  if (pipe(fds) != 0) return -1;
  if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    errno = e;
    return -1;
  }
  return 0;
#endif
}
