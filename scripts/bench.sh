#!/usr/bin/env bash
# scripts/bench.sh - run every benchmark program of a build, in name order.
#
#   scripts/bench.sh [BUILD_DIR]     (or: make bench)
#
# Runs each executable named bench_* under BUILD_DIR/bench (default build/).
# A benchmark that exits 77 was skipped (its backend is absent; it says why).
# Every benchmark runs even when an earlier one fails; the script exits 1 if
# any failed.
set -uo pipefail

build_dir=${1:-build}
if [ ! -d "$build_dir/bench" ]; then
  echo "bench: no $build_dir/bench; build first (make build)" >&2
  exit 1
fi

# (a read loop, not mapfile: macOS's bash is 3.2)
benches=()
while IFS= read -r bench; do benches+=("$bench"); done < <(
  find "$build_dir/bench" -name CMakeFiles -prune -o \
    -type f -name 'bench_*' -perm -u+x -print | sort)
if [ ${#benches[@]} -eq 0 ]; then
  echo "bench: no benchmark programs (bench_*) in $build_dir/bench"
  exit 0
fi

failed=()
for bench in "${benches[@]}"; do
  echo "=== $bench"
  "$bench"
  rc=$?
  case $rc in
    0) ;;
    77) echo "=== $bench: skipped" ;;
    *) echo "=== $bench: FAILED (exit $rc)"; failed+=("$bench") ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: ${#failed[@]} failed: ${failed[*]}" >&2
  exit 1
fi
