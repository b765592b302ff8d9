#!/bin/sh
# fiber_cross.sh MODE SRC_DIR WORK_DIR - the fiber switch where this machine
# cannot run it natively (exit 77, saying why, when a tool is missing):
#
#   aarch64  builds tests/backends/cpu/test_fiber_switch.c with
#            aarch64-linux-gnu-gcc (static) and runs it under qemu-aarch64:
#            it must pass, and so must its two negative controls (--clobber,
#            --misalign: each passes only when the broken run fails).
#   macho    compiles src/backends/cpu/cpu_fiber_switch.h with clang for
#            x86_64-apple-macos11 and arm64-apple-macos11 (no SDK needed: the
#            header includes nothing) and checks with llvm-nm that both
#            Mach-O objects define _rk__fiber_switch and _rk__fiber_start.
set -u
mode=$1 src=$2 work=$3
mkdir -p "$work" || exit 1
case $mode in
aarch64)
  cc=$(command -v aarch64-linux-gnu-gcc) ||
    { echo "aarch64-linux-gnu-gcc not found (apt-get install gcc-aarch64-linux-gnu): skipped"; exit 77; }
  qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static) ||
    { echo "qemu-aarch64 not found (apt-get install qemu-user): skipped"; exit 77; }
  "$cc" -std=c11 -O2 -Wall -Wextra -Werror -static -I"$src/src" \
    "$src/tests/backends/cpu/test_fiber_switch.c" -o "$work/fiber_aarch64" ||
    { echo "FAILED: cross-compiling the fiber test for AArch64"; exit 1; }
  "$qemu" "$work/fiber_aarch64" || { echo "FAILED: the AArch64 fiber switch"; exit 1; }
  for control in --clobber --misalign; do
    "$qemu" "$work/fiber_aarch64" $control ||
      { echo "FAILED: AArch64 $control control"; exit 1; }
  done
  ;;
macho)
  clang=$(command -v clang) || { echo "clang not found: skipped"; exit 77; }
  nm=$(command -v llvm-nm || ls /usr/bin/llvm-nm-* 2>/dev/null | head -n 1)
  [ -n "$nm" ] || { echo "llvm-nm not found (apt-get install llvm): skipped"; exit 77; }
  for target in x86_64-apple-macos11 arm64-apple-macos11; do
    obj="$work/fiber_switch-$target.o"
    "$clang" --target=$target -std=c11 -O2 -Wall -Wextra -Werror -Wno-unused-function -x c -c \
      "$src/src/backends/cpu/cpu_fiber_switch.h" -o "$obj" ||
      { echo "FAILED: compiling the fiber switch for $target"; exit 1; }
    syms=$("$nm" "$obj") || { echo "FAILED: llvm-nm $obj"; exit 1; }
    for sym in _rk__fiber_switch _rk__fiber_start; do
      echo "$syms" | grep -q " [Tt] $sym\$" ||
        { echo "FAILED: $target: $sym is not defined:"; echo "$syms"; exit 1; }
    done
    file_kind=$(od -An -tx1 -N4 "$obj" | tr -d ' ')
    [ "$file_kind" = cffaedfe ] ||
      { echo "FAILED: $target: not a 64-bit Mach-O object ($file_kind)"; exit 1; }
    echo "$target: Mach-O object defines _rk__fiber_switch and _rk__fiber_start"
  done
  ;;
*) echo "usage: fiber_cross.sh aarch64|macho SRC_DIR WORK_DIR" >&2; exit 2 ;;
esac
