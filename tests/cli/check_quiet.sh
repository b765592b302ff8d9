#!/usr/bin/env bash
# check_quiet.sh RK CC INCLUDE_DIR LIBRK_A README [FLAGS] - the README's first
# program, `rk devices` and `rk demo saxpy` print nothing on stderr on a
# headless machine (XDG_RUNTIME_DIR unset, as in containers, CI and ssh),
# where Mesa's Vulkan layers complain while rk probes WebGPU: rk captures
# vendor libraries' output into its debug log (RK_LOG=debug) instead.
#
# The program is the README's own: the first ```c block after
# "## A first program", compiled against this build's librk.a (with FLAGS,
# the sanitizer options of a sanitizer build).
set -euo pipefail

rk=$1 cc=$2 include=$3 librk=$4 readme=$5
read -r -a flags <<<"${6:-}"

fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-quiet.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

awk '/^## A first program/ { section = 1 }
     section && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" >"$tmp/first.c"
grep -q 'rk_backend_open' "$tmp/first.c" ||
  fail "no first program found in $readme"
"$cc" -std=c11 -Wall -Wextra -Werror ${flags[@]+"${flags[@]}"} \
  -o "$tmp/first" "$tmp/first.c" -I"$include" "$librk" -lpthread -ldl -lm ||
  fail "the README's first program does not compile"

# quiet NAME COMMAND...: runs COMMAND headless; its stderr must be empty.
quiet() {
  local name=$1
  shift
  local status=0
  env -u XDG_RUNTIME_DIR -u RK_LOG -u RK_BACKEND "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || status=$?
  [ "$status" -eq 0 ] || {
    cat "$tmp/$name.err"
    fail "$name exited with $status"
  }
  if [ -s "$tmp/$name.err" ]; then
    echo "--- stderr of $name:"
    cat "$tmp/$name.err"
    fail "$name printed on stderr"
  fi
  echo "$name: stderr empty"
}

quiet first "$tmp/first"
grep -q '^x\[999\] = 1998 on ' "$tmp/first.out" ||
  fail "first program: unexpected output: $(cat "$tmp/first.out")"
quiet devices "$rk" devices
quiet demo "$rk" demo saxpy --n 1000
quiet select "$rk" select add 1000

# What was captured is in the debug log.
if grep -q '^webgpu +available' "$tmp/devices.out"; then
  env -u XDG_RUNTIME_DIR RK_LOG=debug "$rk" devices >/dev/null 2>"$tmp/debug.err" ||
    fail "rk devices with RK_LOG=debug failed"
  if [ -s "$tmp/debug.err" ] && grep -qv '^rk: debug: ' "$tmp/debug.err"; then
    cat "$tmp/debug.err"
    fail "RK_LOG=debug: lines without the 'rk: debug: ' prefix"
  fi
fi
echo "quiet: passed"
