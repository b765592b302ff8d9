/* Which operating-system facilities rk uses, decided in one place.
 *
 * rk builds on Linux and on macOS (Darwin). Code that uses a facility only
 * Linux has (futexes, memfd_create, pipe2, CPU affinity, membarrier,
 * /proc) tests RK__LINUX and keeps a POSIX path beside it, which is what
 * macOS and any other POSIX system get:
 *
 *   #include "base/platform.h"
 *   #if RK__LINUX
 *     ... futex, memfd_create ...
 *   #else
 *     ... pthread condition variables, mkstemp + unlink ...
 *   #endif
 *
 * RK_PORTABLE_POSIX (CMake -DRK_PORTABLE_POSIX=ON) builds the POSIX paths
 * on Linux too, so that the code macOS runs is built and tested on Linux:
 * RK__LINUX is then 0 although __linux__ is defined. RK__APPLE marks what
 * only Darwin has (getprogname, pthread_threadid_np, sysctlbyname,
 * _NSGetExecutablePath, Mach-O symbol names). */
#ifndef RK_BASE_PLATFORM_H_
#define RK_BASE_PLATFORM_H_

#if defined(__linux__) && !defined(RK_PORTABLE_POSIX)
#define RK__LINUX 1
#else
#define RK__LINUX 0
#endif

#if defined(__APPLE__) && defined(__MACH__)
#define RK__APPLE 1
#else
#define RK__APPLE 0
#endif

#endif /* RK_BASE_PLATFORM_H_ */
