#!/usr/bin/env bash
# check_deps_wgpu.sh DEPS_SH - scripts/deps.sh --check on rk's wgpu venv:
# a venv whose wgpu bundles another wgpu-native major is reported with the
# version found, the one rk needs and the pinned wgpu release that has it;
# one with the right major is not reported. The venvs are stand-ins (a
# bin/python that prints the version), so nothing is installed or fetched.
set -euo pipefail

deps=$1
fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-deps-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# fake_venv DIR VERSION: a venv whose wgpu bundles wgpu-native VERSION.
fake_venv() {
  mkdir -p "$1/bin"
  printf '#!/bin/sh\necho %s\n' "$2" >"$1/bin/python"
  chmod +x "$1/bin/python"
}

fake_venv "$tmp/old" 27.0.4.0
err=$(RK_WGPU_VENV=$tmp/old bash "$deps" --check 2>&1 >/dev/null) ||
  fail "deps.sh --check failed: $err"
grep -q "python wgpu in $tmp/old bundles wgpu-native 27.0.4.0; rk needs wgpu-native 29.x" <<<"$err" ||
  fail "no version mismatch reported: $err"
grep -q "install 'wgpu>=0.32,<0.33'" <<<"$err" || fail "no pinned wgpu: $err"

fake_venv "$tmp/right" 29.0.1.1
err=$(RK_WGPU_VENV=$tmp/right bash "$deps" --check 2>&1 >/dev/null) ||
  fail "deps.sh --check failed: $err"
if grep -q "wgpu" <<<"$err"; then fail "a right wgpu reported: $err"; fi

err=$(RK_WGPU_VENV=$tmp/none bash "$deps" --check 2>&1 >/dev/null) ||
  fail "deps.sh --check failed: $err"
grep -q "python wgpu in $tmp/none .*install 'wgpu>=0.32,<0.33'" <<<"$err" ||
  fail "a missing venv: $err"
echo "deps wgpu check: passed"
