/* Operating-system helpers (POSIX; futexes on Linux). */
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

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

extern char **environ;

uint64_t rk__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rk__wait_while_equal(const uint32_t *word, uint32_t expected,
                          uint64_t timeout_ns) {
#if defined(__linux__)
  struct timespec ts, *tsp = NULL;
  if (timeout_ns) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
    ts.tv_nsec = (long)(timeout_ns % 1000000000u);
    tsp = &ts;
  }
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
#else
  /* Portable fallback: a short sleep; callers loop on their condition. */
  (void)timeout_ns;
  if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == expected) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
#endif
}

void rk__wake_all(const uint32_t *word) {
#if defined(__linux__)
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
#else
  (void)word;
#endif
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

rk_status_t rk__write_file_atomic(const char *path, const void *data,
                                  size_t n) {
  char tmp[4200];
  int len =
      snprintf(tmp, sizeof tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid());
  if (len < 0 || (size_t)len >= sizeof tmp)
    return rk__fail(RK_ERR_INVALID_ARGUMENT, "path too long: %s", path);
  int fd = mkstemp(tmp);
  if (fd < 0)
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot create '%s': %s", tmp,
                    strerror(errno));
  const char *p = data;
  size_t left = n;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s", tmp,
                      strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return rk__fail(RK_ERR_UNAVAILABLE, "cannot write '%s': %s", path,
                    strerror(e));
  }
  return RK_OK;
}

rk_status_t rk__run_process(char *const argv[], char **out_output,
                            int *out_exit) {
  int fds[2];
  /* Close-on-exec on both ends: a child started by another thread at the
   * same time must not inherit this pipe (it would hold it open). */
  if (pipe2(fds, O_CLOEXEC) != 0)
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
#if defined(__linux__)
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
  pthread_setname_np(pthread_self(), buf);
}
