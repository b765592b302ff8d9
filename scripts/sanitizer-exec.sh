#!/usr/bin/env bash
# scripts/sanitizer-exec.sh - run a command where sanitized programs can run.
#
#   scripts/sanitizer-exec.sh thread build-tsan ctest --test-dir build-tsan
#
# SANITIZER is the RK_SANITIZE value of BUILD_DIR (address or thread). First a
# tiny threaded program is built with BUILD_DIR's C compiler and that sanitizer
# and run ten times with the caller's *SAN_OPTIONS. If it runs, so does the
# command. If it fails but runs with address-space randomisation off -- gcc 12's TSan
# aborts with "unexpected memory mapping" when vm.mmap_rnd_bits is high -- the
# command runs under `setarch $(uname -m) -R`, which its children inherit.
# Otherwise the script says why and exits 1 without running the command.
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 address|thread BUILD_DIR COMMAND..." >&2
  exit 2
fi
sanitizer=$1 build_dir=$2
shift 2

case $sanitizer in
  address) flags="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
  thread) flags="-fsanitize=thread" ;;
  *) echo "$0: unknown sanitizer '$sanitizer'" >&2; exit 2 ;;
esac

cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" \
  2>/dev/null || true)
cc=${cc:-${CC:-cc}}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-sanitizer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/probe.c" <<'C'
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *work(void *arg) {
  for (int i = 0; i < 1000; i++) {
    pthread_mutex_lock(&lock);
    counter++;
    pthread_mutex_unlock(&lock);
  }
  free(malloc(64));
  return arg;
}

int main(void) {
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, work, NULL);
  for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
  return counter == 2000 ? 0 : 1;
}
C
# shellcheck disable=SC2086  # flags is a list
if ! "$cc" -g -O1 $flags -pthread "$tmp/probe.c" -o "$tmp/probe" \
    >"$tmp/cc.log" 2>&1; then
  echo "$0: cannot build a program with $flags using $cc:" >&2
  cat "$tmp/cc.log" >&2
  exit 1
fi

# The failure is random (it depends on where the kernel put the program), so
# one lucky run proves little: ten in a row must pass.
plain_ok=1
for _ in 1 2 3 4 5 6 7 8 9 10; do
  "$tmp/probe" >"$tmp/run.log" 2>&1 || { plain_ok=0; break; }
done
if [ $plain_ok -eq 1 ]; then
  rm -rf "$tmp"
  exec "$@"
fi

norandom=(setarch "$(uname -m)" -R)
if "${norandom[@]}" "$tmp/probe" >"$tmp/norandom.log" 2>&1; then
  echo "$0: $sanitizer sanitizer needs ASLR off here" \
    "(vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?'));" \
    "running under ${norandom[*]}" >&2
  rm -rf "$tmp"
  exec "${norandom[@]}" "$@"
fi

{
  echo "$0: programs built with $flags cannot run on this machine."
  echo "--- plain run:"
  tail -n 20 "$tmp/run.log"
  echo "--- under ${norandom[*]}:"
  tail -n 20 "$tmp/norandom.log"
  echo "vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?')." \
    "If the log says 'unexpected memory mapping', lower it (as root:" \
    "sysctl -w vm.mmap_rnd_bits=28) or allow personality(ADDR_NO_RANDOMIZE)."
} >&2
exit 1
