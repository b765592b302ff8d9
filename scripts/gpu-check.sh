#!/usr/bin/env bash
# scripts/gpu-check.sh - everything rk checks on a machine with an NVIDIA GPU,
# in one call, ending with a short table.
#
#   scripts/gpu-check.sh [--no-build] [--quick]
#
# From any directory:
#   1. configures and builds rk (Release) into build-gpu/ at the repository
#      root (Ninja when installed, otherwise CMake's default generator);
#   2. records the machine: nvidia-smi -L and nvidia-smi, rk devices;
#   3. runs the tests whose names match cuda|cts|actor (ctest, one at a time);
#   4. runs bench/backends/bench_cuda in full (--json for the table);
#   5. runs `rk demo --backend cuda` and `rk demo saxpy --backend cuda`;
#   6. prints the table: test counts and each benchmark row's median (p50 and
#      p99 for the actor row) next to its target.
#
# Where nvidia-smi lists a GPU, a CUDA test that skips counts as a FAILURE (the
# GPU path was not exercised), as does a cts run that skipped the cuda
# backend, a skipped bench_cuda or a failed demo. Without a GPU those are
# reported as skipped.
#
# Outputs go to ${OUT:-build-gpu/gpu-check}/ (eight files: environment.txt,
# build.log, ctest.log, ctest-full.log, bench_cuda.txt, bench_cuda.json,
# demo.txt, summary.txt). A relative OUT is taken from the directory the
# script was started in.
#
#   --no-build  reuse build-gpu/ as it is (it must have been built)
#   --quick     bench_cuda --quick and rk demo --quick (a smoke run)
#
# Exit status: 0 when a GPU was found and everything passed, 1 when anything
# failed, 2 when nothing failed but no GPU was found (nothing GPU-specific
# was exercised).
set -uo pipefail

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

build_step=1
quick=0
for arg in "$@"; do
  case $arg in
    --no-build) build_step=0 ;;
    --quick) quick=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "gpu-check: unknown option '$arg' (see --help)" >&2
      exit 2
      ;;
  esac
done

start_dir=$(pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-gpu"
out=${OUT:-$build/gpu-check}
case $out in
  /*) ;;
  *) out="$start_dir/$out" ;;
esac
if ! mkdir -p "$out"; then
  echo "gpu-check: cannot create $out" >&2
  exit 1
fi

failures=()   # one line per failure, for the summary
fail() { failures+=("$1"); }
log() { printf '== %s\n' "$*"; }

# Runs a command with a time limit when `timeout` exists.
limited() {
  local seconds=$1
  shift
  if command -v timeout > /dev/null 2>&1; then
    timeout "$seconds" "$@"
  else
    "$@"
  fi
}

# ---- 1. Build ---------------------------------------------------------------
build_status="skipped (--no-build)"
if [ "$build_step" = 1 ]; then
  log "configuring and building into $build (log: $out/build.log)"
  gen=()
  # A build tree keeps the generator it was made with.
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null 2>&1; then
    gen=(-G Ninja)
  fi
  jobs=$(nproc 2> /dev/null || echo 4)
  {
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTING=ON -DRK_BUILD_TESTS=ON -DRK_BUILD_BENCH=ON &&
      cmake --build "$build" -j "$jobs"
  } > "$out/build.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    build_status="ok"
  else
    build_status="FAILED (exit $rc)"
    fail "build failed (exit $rc): see $out/build.log"
    tail -n 30 "$out/build.log"
  fi
else
  echo "build skipped (--no-build)" > "$out/build.log"
fi
built=0
[ -f "$build/CMakeCache.txt" ] && [ -x "$build/tools/rk/rk" ] && built=1
if [ "$built" = 0 ] && [ "$build_step" = 0 ]; then
  fail "--no-build, but $build has no built rk"
fi

# ---- 2. The machine ---------------------------------------------------------
gpu_present=0
gpu_list="no nvidia-smi"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(uname -a)"
  if command -v nvidia-smi > /dev/null 2>&1; then
    gpu_list=$(nvidia-smi -L 2>&1)
    echo "--- nvidia-smi -L"
    echo "$gpu_list"
    echo "--- nvidia-smi"
    nvidia-smi 2>&1
  else
    echo "nvidia-smi: not installed"
  fi
  echo "--- compilers"
  cc --version 2>&1 | head -n 1
  cmake --version 2>&1 | head -n 1
  if [ "$built" = 1 ]; then
    echo "--- rk devices"
    "$build/tools/rk/rk" devices 2>&1
  fi
} > "$out/environment.txt"
if printf '%s\n' "$gpu_list" | grep -q '^GPU [0-9]'; then
  gpu_present=1
  log "GPU(s):"
  printf '%s\n' "$gpu_list" | grep '^GPU [0-9]'
else
  log "no GPU listed by nvidia-smi ($gpu_list)"
fi

# ---- 3. Tests -----------------------------------------------------------------
n_pass=0 n_fail=0 n_skip=0 n_cuda_skip=0
tests_status="not run"
if [ "$built" = 1 ]; then
  log "ctest -R 'cuda|cts|actor' (log: $out/ctest.log)"
  (cd "$build" && ctest -R 'cuda|cts|actor' --output-on-failure) \
    > "$out/ctest.log" 2>&1
  ctest_rc=$?
  cp "$build/Testing/Temporary/LastTest.log" "$out/ctest-full.log" \
    2> /dev/null || echo "no LastTest.log" > "$out/ctest-full.log"
  # Lines like "  3/15 Test  #9: actor_cuda_blocks ......***Skipped  0.01 sec".
  while read -r name status; do
    case $status in
      Passed) n_pass=$((n_pass + 1)) ;;
      Skipped | Not\ Run*Disabled*)
        n_skip=$((n_skip + 1))
        if [ "$gpu_present" = 1 ] && printf '%s' "$name" | grep -qi cuda; then
          n_cuda_skip=$((n_cuda_skip + 1))
          fail "test $name SKIPPED on a machine with a GPU"
        fi
        ;;
      *)
        n_fail=$((n_fail + 1))
        fail "test $name: $status"
        ;;
    esac
  done < <(sed -n 's/^ *[0-9]*\/[0-9]* *Test *#[0-9]*: *\([^ ]*\) *\.*[ *]*\([A-Za-z][^0-9]*[A-Za-z]\).*sec.*$/\1 \2/p' \
    "$out/ctest.log")
  total=$((n_pass + n_fail + n_skip))
  if [ "$total" = 0 ]; then
    fail "ctest ran no tests (exit $ctest_rc): see $out/ctest.log"
  elif [ "$ctest_rc" != 0 ] && [ "$n_fail" = 0 ]; then
    fail "ctest exited $ctest_rc with no failed test listed: see $out/ctest.log"
  fi
  # cts runs every backend that opens; with a GPU it must have run cuda.
  if [ "$gpu_present" = 1 ] && grep -q '^\[cuda\] skipped' "$out/ctest-full.log"; then
    fail "cts skipped the cuda backend on a machine with a GPU: $(grep -m1 '^\[cuda\] skipped' "$out/ctest-full.log")"
  fi
  tests_status="$n_pass passed, $n_fail failed, $n_skip skipped"
  [ "$n_cuda_skip" -gt 0 ] &&
    tests_status="$tests_status ($n_cuda_skip CUDA skip(s) counted as failures)"
else
  echo "not run: no build" > "$out/ctest.log"
  echo "not run: no build" > "$out/ctest-full.log"
fi

# ---- 4. bench_cuda --------------------------------------------------------------
bench_status="not run"
bench_json="$out/bench_cuda.json"
rm -f "$bench_json"
bench="$build/bench/backends/bench_cuda"
if [ -x "$bench" ]; then
  bench_args=(--json "$bench_json")
  [ "$quick" = 1 ] && bench_args+=(--quick)
  log "bench_cuda ${bench_args[*]} (output: $out/bench_cuda.txt)"
  limited 900 "$bench" "${bench_args[@]}" > "$out/bench_cuda.txt" 2>&1
  rc=$?
  cat "$out/bench_cuda.txt"
  case $rc in
    0) bench_status="ok" ;;
    77)
      bench_status="skipped: $(sed -n 's/^SKIPPED: //p' "$out/bench_cuda.txt" | head -n 1)"
      [ "$gpu_present" = 1 ] && fail "bench_cuda skipped on a machine with a GPU"
      ;;
    *)
      bench_status="FAILED (exit $rc)"
      fail "bench_cuda failed (exit $rc): see $out/bench_cuda.txt"
      ;;
  esac
else
  echo "not run: no $bench" > "$out/bench_cuda.txt"
  [ "$built" = 1 ] && fail "no bench_cuda in the build"
fi

# ---- 5. rk demo -----------------------------------------------------------------
demo_status="not run"
rk="$build/tools/rk/rk"
if [ -x "$rk" ]; then
  demo_args=(demo --backend cuda)
  [ "$quick" = 1 ] && demo_args+=(--quick)
  log "rk ${demo_args[*]} (output: $out/demo.txt)"
  {
    echo "\$ rk ${demo_args[*]}"
    limited 600 "$rk" "${demo_args[@]}" 2>&1
    echo "exit $?"
    echo "\$ rk demo saxpy --backend cuda"
    limited 300 "$rk" demo saxpy --backend cuda 2>&1
    echo "exit $?"
  } > "$out/demo.txt"
  cat "$out/demo.txt"
  demo_rcs=$(sed -n 's/^exit \([0-9]*\)$/\1/p' "$out/demo.txt" | tr '\n' ' ')
  if [ "$demo_rcs" = "0 0 " ]; then
    demo_status="ok"
  elif [ "$gpu_present" = 1 ]; then
    demo_status="FAILED (exits: $demo_rcs)"
    fail "rk demo --backend cuda failed (exits: $demo_rcs): see $out/demo.txt"
  else
    demo_status="skipped: no GPU (exits: $demo_rcs)"
  fi
else
  echo "not run: no $rk" > "$out/demo.txt"
fi

# ---- 6. Summary -----------------------------------------------------------------
# A field of one JSON row line written by bench_cuda (one row per line).
field() {
  printf '%s\n' "$1" | sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\).*/\1/p"
}

summary() {
  echo "gpu-check summary (outputs in $out)"
  if [ "$gpu_present" = 1 ]; then
    printf '%s\n' "$gpu_list" | grep '^GPU [0-9]' | sed 's/^/  device     : /'
  else
    echo "  device     : none listed by nvidia-smi"
  fi
  echo "  build      : $build_status"
  echo "  tests      : $tests_status   (ctest -R 'cuda|cts|actor')"
  echo "  bench_cuda : $bench_status"
  echo "  rk demo    : $demo_status"
  if [ -s "$bench_json" ]; then
    echo
    printf '  %-10s %14s %14s %9s   %s\n' "row" "rk" "raw CUDA" "ratio" \
      "target (rk)"
    while IFS= read -r line; do
      row=$(field "$line" row)
      [ -n "$row" ] || continue
      unit=$(field "$line" unit)
      rk_v=$(field "$line" rk_median)
      raw_v=$(field "$line" raw_median)
      target=$(field "$line" target_us)
      target_of=$(field "$line" target_of)
      rk_p50=$(field "$line" rk_p50)
      ratio="-"
      if [ -n "$raw_v" ]; then
        ratio=$(awk -v a="$rk_v" -v b="$raw_v" \
          'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
      fi
      if [ "$unit" = "us" ]; then
        rk_s=$(printf '%.2f us' "$rk_v")
        raw_s=$([ -n "$raw_v" ] && printf '%.2f us' "$raw_v" || echo "-")
      else
        rk_s=$(printf '%.0f %s' "$rk_v" "$unit")
        raw_s="-"
      fi
      verdict=""
      if [ -n "$target" ]; then
        value=$rk_v
        [ "$target_of" = "p50" ] && [ -n "$rk_p50" ] && value=$rk_p50
        met=$(awk -v v="$value" -v t="$target" 'BEGIN { print (v <= t) ? "met" : "MISSED" }')
        verdict="$target_of <= $target us: $met"
      fi
      printf '  %-10s %14s %14s %9s   %s\n' "$row" "$rk_s" "$raw_s" "$ratio" \
        "$verdict" | sed 's/ *$//'
      if [ -n "$rk_p50" ]; then
        printf '  %-10s p50 %.2f / p99 %.2f us (rk), p50 %.2f / p99 %.2f us (raw)\n' \
          "" "$rk_p50" "$(field "$line" rk_p99)" "$(field "$line" raw_p50)" \
          "$(field "$line" raw_p99)"
      fi
    done < "$bench_json"
  fi
  echo
  if [ ${#failures[@]} -gt 0 ]; then
    echo "RESULT: FAILED (${#failures[@]})"
    printf '  - %s\n' "${failures[@]}"
  elif [ "$gpu_present" = 1 ]; then
    echo "RESULT: PASSED"
  else
    echo "RESULT: NO GPU - nothing failed, but no GPU path was exercised"
  fi
}

echo
summary | tee "$out/summary.txt"
if [ ${#failures[@]} -gt 0 ]; then
  exit 1
elif [ "$gpu_present" = 1 ]; then
  exit 0
else
  exit 2
fi
