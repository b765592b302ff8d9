/* Force-included (-include) into every C file of a -DRK_PORTABLE_POSIX=ON
 * build. That build declares only POSIX and BSD interfaces, which hides
 * GNU's own calls; this header also poisons the POSIX functions macOS does
 * not have, so that a use of one outside a Linux branch (RK__LINUX, see
 * src/base/platform.h) fails to compile here instead of on a Mac. The
 * headers that declare them come first, so the declarations are seen
 * before the poison. Only files built with rk's feature macros
 * (${RK_FEATURE_DEFINES}: _XOPEN_SOURCE here) are checked; a file that sets
 * its own (the fake vendor libraries of the tests) is left alone, since
 * including system headers before its #define would change what they
 * declare. */
#ifndef RK_CMAKE_PORTABLE_POSIX_H_
#define RK_CMAKE_PORTABLE_POSIX_H_
#if defined(_XOPEN_SOURCE)

#include <pthread.h>
#include <semaphore.h>
#include <time.h>

/* Barriers and spin locks (optional in POSIX), timed mutex locks, condition
 * clocks, unnamed semaphores' waits, clock_nanosleep and POSIX timers. */
#pragma GCC poison pthread_barrier_init pthread_barrier_wait
#pragma GCC poison pthread_spin_init pthread_spin_lock
#pragma GCC poison pthread_mutex_timedlock pthread_condattr_setclock
#pragma GCC poison sem_init sem_timedwait clock_nanosleep timer_create

#endif /* _XOPEN_SOURCE */
#endif
