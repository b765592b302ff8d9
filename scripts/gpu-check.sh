#!/usr/bin/env bash
# scripts/gpu-check.sh - everything rk checks on a machine with an NVIDIA GPU,
# in one call of bounded length, ending with a short table.
#
#   scripts/gpu-check.sh [--no-build] [--quick] [--budget SECONDS]
#                        [--tests REGEX]
#
# From any directory:
#   1. configures and builds rk (Release) into build-gpu/ at the repository
#      root (Ninja when installed, otherwise CMake's default generator); a
#      build that fails only on warnings (-Werror with another compiler) is
#      redone with warnings off, and that is reported as a failure;
#   2. records the machine: nvidia-smi, the driver and NVRTC libraries the
#      loader finds, rk devices. Where NVRTC or the driver is installed but
#      not on the loader's path (under /usr/local/cuda*, /usr/local/nvidia
#      or the Python packages), its folder is added to LD_LIBRARY_PATH;
#   3. runs the tests whose names match REGEX (default
#      cuda|cts|actor|^test_ops$) in
#      four passes: those that use the GPU (names with cuda or cts) one at
#      a time, each with the GPU to itself - the backend's own tests first,
#      then the actor tests, then actor_cuda alone (the generic actor
#      suite waits without deadlines, so a device side that never answers
#      holds it until ctest's limit); then the others in parallel;
#   4. runs bench/backends/bench_cuda in full (--json for the table);
#   5. runs `rk demo --backend cuda`, `rk demo saxpy --backend cuda`,
#      `rk bench --backend cuda --quick` and `rk demo halo --backend cuda
#      --json` (tiles as relaunch actors, then resident);
#   5b. with the time left, runs `bench_k2k --backend cuda --quick` (a K2K
#      hop between two resident actor kernels, and messages/s), then the
#      same with RK_K2K_MAPPED_CHANNELS=1 (channels in mapped host memory),
#      with RK_K2K_WORD_SLOTS=0 (header-and-payload slots in device memory)
#      and with RK_CUDA_DEFINES=RK_PA_PROFILE=1 (each kernel prints the time
#      the phases of its loop took, per message);
#   5c. with the time left, `bench_ops --gpu-gemm-only --quick` (matmul on
#      CUDA through cuBLAS against rk's own kernel, both checked first);
#   6. prints the table: test counts, each benchmark row's median (p50 and
#      p99 for the actor row) next to its target, and the time each step
#      took.
#
# The whole run keeps to a time budget (default 540 s, so that it ends
# inside a 10-minute limit): every step runs under `timeout` with what is
# left of the budget once the later steps' share is kept back, ctest stops
# at its share (--stop-time), and a step with too little time left is not
# run and counted as a failure. The summary is rewritten after every step,
# so it is there even when the script itself is killed.
#
# Where nvidia-smi lists a GPU, a CUDA test that skips counts as a FAILURE (the
# GPU path was not exercised), as does a cts run that skipped the cuda
# backend, a skipped bench_cuda or a failed demo. Without a GPU those are
# reported as skipped.
#
# Outputs go to ${OUT:-build-gpu/gpu-check}/ (twelve files: environment.txt,
# build.log, ctest.log, ctest-full.log, bench_cuda.txt, bench_cuda.json,
# demo.txt, bench_k2k.txt, bench_k2k.json, bench_gemm.txt, bench_gemm.json,
# summary.txt). A relative OUT is taken from the directory the
# script was started in.
#
#   --no-build        reuse build-gpu/ as it is (it must have been built)
#   --quick           bench_cuda --quick and rk demo --quick (a smoke run)
#   --budget SECONDS  the whole run's time budget (default 540; at least 120)
#   --tests REGEX     the ctest names to run (default
#                     'cuda|cts|actor|^test_ops$';
#                     '.' runs the whole suite)
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
budget=540
tests_re='cuda|cts|actor|^test_ops$'
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build_step=0 ;;
    --quick) quick=1 ;;
    --budget)
      if [ $# -lt 2 ] || ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 120 ]; then
        echo "gpu-check: --budget takes a number of seconds, at least 120" >&2
        exit 2
      fi
      budget=$2
      shift
      ;;
    --tests)
      if [ $# -lt 2 ] || [ -z "$2" ]; then
        echo "gpu-check: --tests takes a regular expression" >&2
        exit 2
      fi
      tests_re=$2
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "gpu-check: unknown option '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

t_start=$(date +%s)
deadline=$((t_start + budget))
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

# Seconds left of the budget.
remaining() { echo $((deadline - $(date +%s))); }

# share SECONDS: SECONDS of the default 540-s budget, scaled to this one.
share() { echo $(($1 * budget / 540)); }

# step_limit CAP RESERVE: the seconds a step may take: what is left of the
# budget once RESERVE seconds (of the default budget, see share) are kept
# for the later steps, at most CAP (0 when nothing is left).
step_limit() {
  local left=$(($(remaining) - $(share "$2")))
  [ "$left" -gt "$1" ] && left=$1
  [ "$left" -lt 0 ] && left=0
  echo "$left"
}

# limited SECONDS COMMAND...: runs COMMAND with a time limit (TERM, then
# KILL 10 s later) when `timeout` exists. Exit 124 or 137 means it ran out.
have_timeout=0
command -v timeout > /dev/null 2>&1 && have_timeout=1
limited() {
  local seconds=$1
  shift
  if [ "$have_timeout" = 1 ]; then
    timeout -k 10 "$seconds" "$@"
  else
    "$@"
  fi
}
timed_out() { [ "$1" = 124 ] || [ "$1" = 137 ]; }

# Seconds each step took, for the summary.
step_times=()
step_begin() { step_t0=$(date +%s); }
step_end() { step_times+=("$1 $(($(date +%s) - step_t0)) s,"); }

build_status="not run"
tests_status="not run"
bench_status="not run"
demo_status="not run"
k2k_status="not run"
gemm_status="not run"
gpu_present=0
gpu_list="not looked for yet"
bench_json="$out/bench_cuda.json"

# ---- Summary ----------------------------------------------------------------
# A field of one JSON row line written by bench_cuda (one row per line).
field() {
  printf '%s\n' "$1" | sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\).*/\1/p"
}

summary() {
  echo "gpu-check summary (outputs in $out)"
  if [ "$gpu_present" = 1 ]; then
    printf '%s\n' "$gpu_list" | grep '^GPU [0-9]' | sed 's/^/  device     : /'
  else
    echo "  device     : none listed by nvidia-smi ($gpu_list)"
  fi
  echo "  build      : $build_status"
  echo "  tests      : $tests_status   (ctest -R '$tests_re')"
  echo "  bench_cuda : $bench_status"
  echo "  rk demo    : $demo_status"
  echo "  bench_k2k  : $k2k_status"
  echo "  GPU GEMM   : $gemm_status"
  echo "  time       : ${step_times[*]:-none yet} $(($(date +%s) - t_start)) s of the $budget s budget"
  if [ -s "$bench_json" ]; then
    echo
    printf '  %-10s %14s %14s %9s   %s\n' "row" "rk" "raw CUDA" "ratio" \
      "target (rk)"
    local line row unit rk_v raw_v target target_of rk_p50 ratio rk_s raw_s
    local verdict value met
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
      if [ "$(field "$line" failed)" = "true" ]; then
        verdict="FAILED (see bench_cuda.txt)"
      elif [ -n "$target" ]; then
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

# The summary as it stands, kept in $out after every step.
save_summary() { summary > "$out/summary.txt" 2>&1; }

finish() {
  echo
  summary | tee "$out/summary.txt"
  if [ ${#failures[@]} -gt 0 ]; then
    exit 1
  elif [ "$gpu_present" = 1 ]; then
    exit 0
  else
    exit 2
  fi
}

# shellcheck disable=SC2317  # called by the trap below
on_signal() {
  fail "gpu-check was interrupted (signal) after $(($(date +%s) - t_start)) s"
  trap - TERM INT HUP
  finish
}
trap on_signal TERM INT HUP

# ---- 1. Build ---------------------------------------------------------------
# build_once LIMIT [extra cmake arguments]: configure and build, appending
# to build.log; the exit status of the first step that failed.
build_once() {
  local lim=$1
  shift
  local gen=()
  # A build tree keeps the generator it was made with.
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null 2>&1; then
    gen=(-G Ninja)
  fi
  local jobs t0 rc
  jobs=$(nproc 2> /dev/null || echo 4)
  t0=$(date +%s)
  limited "$lim" cmake -S "$root" -B "$build" ${gen[@]+"${gen[@]}"} \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DRK_BUILD_TESTS=ON \
    -DRK_BUILD_BENCH=ON "$@" >> "$out/build.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || return $rc
  lim=$((lim - ($(date +%s) - t0)))
  [ "$lim" -gt 5 ] || return 124
  limited "$lim" cmake --build "$build" -j "$jobs" >> "$out/build.log" 2>&1
}

step_begin
: > "$out/build.log"
if [ "$build_step" = 1 ]; then
  log "configuring and building into $build (log: $out/build.log)"
  rc=0
  # CFLAGS as given (usually none), also over a -w left by an earlier run.
  build_once "$(step_limit 300 240)" -DCMAKE_C_FLAGS="${CFLAGS:-}" || rc=$?
  if [ $rc -eq 0 ]; then
    build_status="ok"
  elif timed_out $rc; then
    build_status="TIMED OUT"
    fail "build did not finish in time: see $out/build.log"
  elif grep -q '\[-Werror\|warnings being treated as errors' "$out/build.log"; then
    # This compiler warns where the one rk is developed with does not:
    # build without -Werror so the GPU can still be checked, and say so.
    log "the build failed on warnings; building again with warnings off"
    echo "=== again with CMAKE_C_FLAGS=-w (warnings off)" >> "$out/build.log"
    rc=0
    build_once "$(step_limit 300 200)" -DCMAKE_C_FLAGS="${CFLAGS:-} -w" || rc=$?
    if [ $rc -eq 0 ]; then
      build_status="ok only with warnings off (-w)"
      fail "the build failed with -Werror on this compiler: see the warnings in $out/build.log"
    else
      build_status="FAILED (exit $rc)"
      fail "build failed (exit $rc), also with warnings off: see $out/build.log"
    fi
  else
    build_status="FAILED (exit $rc)"
    fail "build failed (exit $rc): see $out/build.log"
  fi
  [ $rc -eq 0 ] || tail -n 30 "$out/build.log"
else
  build_status="skipped (--no-build)"
  echo "build skipped (--no-build)" > "$out/build.log"
fi
built=0
[ -f "$build/CMakeCache.txt" ] && [ -x "$build/tools/rk/rk" ] && built=1
if [ "$built" = 0 ] && [ "$build_step" = 0 ]; then
  fail "--no-build, but $build has no built rk"
fi
step_end build
save_summary

# ---- 2. The machine ---------------------------------------------------------
# Whether the dynamic loader finds library NAME (its cache, LD_LIBRARY_PATH,
# the default folders).
loader_finds() {
  local dir
  ldconfig -p 2> /dev/null | grep -q "[[:space:]]$1[[:space:]]" && return 0
  local IFS=:
  for dir in ${LD_LIBRARY_PATH:-} /lib /usr/lib /lib64 /usr/lib64 \
    /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
    [ -n "$dir" ] && [ -e "$dir/$1" ] && return 0
  done
  return 1
}

# Puts the folder of the first existing file among "$@" on LD_LIBRARY_PATH.
add_library_folder() {
  local f
  for f in "$@"; do
    if [ -f "$f" ]; then
      LD_LIBRARY_PATH="$(dirname "$f")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      export LD_LIBRARY_PATH
      echo "added $(dirname "$f") to LD_LIBRARY_PATH (for $(basename "$f"))"
      return 0
    fi
  done
  return 1
}

step_begin
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(uname -a)"
  echo "cpus: $(nproc 2> /dev/null)"
  if command -v nvidia-smi > /dev/null 2>&1; then
    gpu_list=$(limited 30 nvidia-smi -L 2>&1)
    echo "--- nvidia-smi -L"
    echo "$gpu_list"
    echo "--- nvidia-smi --query-gpu=name,driver_version,compute_mode,memory.used"
    limited 30 nvidia-smi --query-gpu=name,driver_version,compute_mode,memory.used \
      --format=csv 2>&1
    echo "--- nvidia-smi"
    limited 30 nvidia-smi 2>&1
  else
    gpu_list="no nvidia-smi"
    echo "nvidia-smi: not installed"
  fi
  echo "--- libraries"
  if ! loader_finds libcuda.so.1; then
    # Never the toolkit's stubs/ folder: that libcuda is a placeholder.
    add_library_folder /usr/local/nvidia/lib64/libcuda.so.1 \
      /usr/local/nvidia/lib/libcuda.so.1 /usr/lib64/libcuda.so.1 ||
      echo "libcuda.so.1: not found by the loader nor in the usual folders"
  fi
  if [ -z "${RK_NVRTC_LIB:-}" ] && ! loader_finds libnvrtc.so.13 &&
    ! loader_finds libnvrtc.so.12; then
    # shellcheck disable=SC2046
    add_library_folder $(ls -dU /usr/local/cuda/lib64/libnvrtc.so.1[23] \
      /usr/local/cuda-*/lib64/libnvrtc.so.1[23] \
      /usr/local/cuda*/targets/*/lib/libnvrtc.so.1[23] \
      /opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so.1[23] \
      /usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libnvrtc.so.1[23] \
      2> /dev/null) ||
      echo "libnvrtc.so.13/.12: not found by the loader nor in the usual folders"
  fi
  if [ -z "${RK_CUBLAS_LIB:-}" ] && ! loader_finds libcublas.so.13 &&
    ! loader_finds libcublas.so.12; then
    # cuBLAS (the ops library's GEMM on CUDA; rk's own kernel without it).
    # shellcheck disable=SC2046
    add_library_folder $(ls -dU /usr/local/cuda/lib64/libcublas.so.1[23] \
      /usr/local/cuda-*/lib64/libcublas.so.1[23] \
      /usr/local/cuda*/targets/*/lib/libcublas.so.1[23] \
      /opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/libcublas.so.1[23] \
      /opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib/libcublas.so.1[23] \
      /usr/local/lib/python3*/dist-packages/nvidia/cu*/lib/libcublas.so.1[23] \
      2> /dev/null) ||
      echo "libcublas.so.13/.12: not found (GEMM on CUDA runs rk's kernel)"
  fi
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldconfig -p 2> /dev/null | grep -E 'libcuda\.so|libnvrtc|libcublas\.so' ||
    echo "(ldconfig lists no libcuda, libnvrtc or libcublas)"
  echo "--- compilers"
  cc --version 2>&1 | head -n 1
  gcc --version 2>&1 | head -n 1
  cmake --version 2>&1 | head -n 1
  if [ "$built" = 1 ]; then
    echo "--- rk devices"
    limited 60 "$build/tools/rk/rk" devices 2>&1
  fi
} > "$out/environment.txt" 2>&1
# The folders found above, for this shell too (the block ran in it).
grep '^added ' "$out/environment.txt" | sed 's/^/== /'
if printf '%s\n' "$gpu_list" | grep -q '^GPU [0-9]'; then
  gpu_present=1
  log "GPU(s):"
  printf '%s\n' "$gpu_list" | grep '^GPU [0-9]'
else
  log "no GPU listed by nvidia-smi ($gpu_list)"
fi
step_end machine
save_summary

# ---- 3. Tests -----------------------------------------------------------------
n_pass=0 n_fail=0 n_skip=0 n_cuda_skip=0 n_not_run=0
# Names of the selected tests, one per line.
select_tests() {
  (cd "$build" && ctest -N -R "$tests_re" 2> /dev/null) |
    sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\) *$/\1/p'
}
# ^(a|b|c)$ from names on stdin; empty for none.
name_regex() {
  local names
  names=$(paste -sd '|' -)
  [ -n "$names" ] && printf '^(%s)$' "$names"
}

# run_tests LABEL NAMES_REGEX LIMIT JOBS: one ctest pass; its console output
# is appended to ctest.log and its LastTest.log to ctest-full.log, and its
# results are counted. LIMIT bounds the pass (ctest --stop-time a little
# before, `timeout` a little after).
run_tests() {
  local label=$1 re=$2 lim=$3 jobs=$4
  [ -n "$re" ] || return 0
  local expected
  expected=$(cd "$build" && ctest -N -R "$re" | sed -n 's/^Total Tests: //p')
  printf '\n=== pass "%s": %s test(s), up to %s s, -j %s\n' "$label" \
    "$expected" "$lim" "$jobs" >> "$out/ctest.log"
  if [ "$lim" -lt 15 ]; then
    echo "not run: out of time" >> "$out/ctest.log"
    n_not_run=$((n_not_run + expected))
    fail "tests ($label): $expected not run, out of time"
    return 0
  fi
  log "ctest pass \"$label\": $expected test(s), up to $lim s"
  local pass_log="$build/gpu-check-pass.log" stop rc per_test
  stop=$(date -d "@$(($(date +%s) + lim - 5))" '+%H:%M:%S')
  # A test without a time limit of its own that hangs (the conformance
  # suite waiting on the device) ends after 90 s, so that the tests after
  # it in the pass still run; the actor tests have watchdogs.
  per_test=$((lim < 90 ? lim : 90))
  rm -f "$build/Testing/Temporary/LastTest.log"
  (cd "$build" && limited $((lim + 15)) ctest -R "$re" -j "$jobs" \
    --output-on-failure --timeout "$per_test" --stop-time "$stop") \
    > "$pass_log" 2>&1
  rc=$?
  cat "$pass_log" >> "$out/ctest.log"
  {
    printf '\n=== pass "%s"\n' "$label"
    cat "$build/Testing/Temporary/LastTest.log" 2> /dev/null ||
      echo "no LastTest.log"
  } >> "$out/ctest-full.log"
  # Lines like "  3/15 Test  #9: actor_cuda_blocks ......***Skipped  0.01 sec".
  local name status seen=0 fails_before=$n_fail
  while read -r name status; do
    seen=$((seen + 1))
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
    "$pass_log")
  if [ "$seen" -lt "$expected" ]; then
    n_not_run=$((n_not_run + expected - seen))
    if grep -q 'stop time has been passed' "$pass_log" || timed_out $rc; then
      fail "tests ($label): $((expected - seen)) of $expected not run, out of time"
    else
      fail "tests ($label): $((expected - seen)) of $expected gave no result (ctest exit $rc): see $out/ctest.log"
    fi
  elif [ "$rc" != 0 ] && [ "$n_fail" = "$fails_before" ]; then
    fail "tests ($label): ctest exited $rc with no failed test listed: see $out/ctest.log"
  fi
  # What did not pass, and ctest's count, on the console too.
  grep -E '\*\*\*|tests passed|stop time' "$pass_log"
  rm -f "$pass_log"
}

step_begin
# A conformance case that hangs (a driver blocking where rk expects it not
# to) ends the suite after 30 s with its name, not at ctest's limit.
export RK_CTS_CASE_LIMIT=${RK_CTS_CASE_LIMIT:-30}
: > "$out/ctest.log"
: > "$out/ctest-full.log"
if [ "$built" = 1 ]; then
  names=$(select_tests)
  # Tests that use the GPU (names with cuda or cts) get it to themselves,
  # the backend's own first, then the actor tests (bounded by their
  # watchdogs), then the generic actor suite, whose waits have no deadline
  # (a device side that never answers holds it until ctest's limit); the
  # others run in parallel at the end.
  gpu_names=$(printf '%s\n' "$names" | grep -E 'cuda|cts')
  gpu_re=$(printf '%s\n' "$gpu_names" | grep -v actor | name_regex)
  actor_re=$(printf '%s\n' "$gpu_names" | grep actor | grep -vx actor_cuda |
    name_regex)
  last_re=$(printf '%s\n' "$gpu_names" | grep -x actor_cuda | name_regex)
  cpu_re=$(printf '%s\n' "$names" | grep -vE 'cuda|cts' | name_regex)
  jobs=$(nproc 2> /dev/null || echo 4)
  [ "$jobs" -gt 8 ] && jobs=8
  # Everything after the tests (bench, demo, summary) keeps 150 s; the
  # passes share the rest, each keeping some for those after it.
  tests_end=$(($(date +%s) + $(step_limit 400 150)))
  run_tests "GPU, one at a time" "$gpu_re" \
    $((tests_end - $(date +%s) - $(share 150))) 1
  run_tests "GPU actors, one at a time" "$actor_re" \
    $((tests_end - $(date +%s) - $(share 80))) 1
  run_tests "actor_cuda (no deadlines of its own)" "$last_re" \
    $((tests_end - $(date +%s) - $(share 30))) 1
  run_tests "the others, in parallel" "$cpu_re" $((tests_end - $(date +%s))) \
    "$jobs"
  total=$((n_pass + n_fail + n_skip + n_not_run))
  if [ "$total" = 0 ]; then
    fail "no test matched '$tests_re': see $out/ctest.log"
  fi
  # cts runs every backend that opens; with a GPU it must have run cuda.
  if [ "$gpu_present" = 1 ] && grep -q '^\[cuda\] skipped' "$out/ctest-full.log"; then
    fail "cts skipped the cuda backend on a machine with a GPU: $(grep -m1 '^\[cuda\] skipped' "$out/ctest-full.log")"
  fi
  tests_status="$n_pass passed, $n_fail failed, $n_skip skipped"
  [ "$n_not_run" -gt 0 ] && tests_status="$tests_status, $n_not_run not run (time)"
  [ "$n_cuda_skip" -gt 0 ] &&
    tests_status="$tests_status ($n_cuda_skip CUDA skip(s) counted as failures)"
else
  echo "not run: no build" > "$out/ctest.log"
  echo "not run: no build" > "$out/ctest-full.log"
fi
step_end tests
save_summary

# ---- 4. bench_cuda --------------------------------------------------------------
step_begin
rm -f "$bench_json"
bench="$build/bench/backends/bench_cuda"
if [ -x "$bench" ]; then
  bench_args=(--json "$bench_json")
  [ "$quick" = 1 ] && bench_args+=(--quick)
  lim=$(step_limit 150 75)
  if [ "$lim" -lt 30 ]; then
    echo "not run: out of time" > "$out/bench_cuda.txt"
    bench_status="not run (out of time)"
    fail "bench_cuda not run: out of time"
  else
    log "bench_cuda ${bench_args[*]}, up to $lim s (output: $out/bench_cuda.txt)"
    limited "$lim" "$bench" "${bench_args[@]}" > "$out/bench_cuda.txt" 2>&1
    rc=$?
    cat "$out/bench_cuda.txt"
    case $rc in
      0) bench_status="ok" ;;
      77)
        bench_status="skipped: $(sed -n 's/^SKIPPED: //p' "$out/bench_cuda.txt" | head -n 1)"
        [ "$gpu_present" = 1 ] && fail "bench_cuda skipped on a machine with a GPU"
        ;;
      *)
        if timed_out $rc; then
          bench_status="TIMED OUT after $lim s (the rows it finished are below)"
        else
          bench_status="FAILED (exit $rc)"
        fi
        fail "bench_cuda: $bench_status: see $out/bench_cuda.txt"
        ;;
    esac
  fi
else
  echo "not run: no $bench" > "$out/bench_cuda.txt"
  [ "$built" = 1 ] && fail "no bench_cuda in the build"
fi
step_end bench
save_summary

# ---- 5. rk demo -----------------------------------------------------------------
step_begin
rk="$build/tools/rk/rk"
if [ -x "$rk" ]; then
  demo_args=(demo --backend cuda)
  [ "$quick" = 1 ] && demo_args+=(--quick)
  lim=$(step_limit 120 35)
  lim2=0
  log "rk ${demo_args[*]} (output: $out/demo.txt)"
  {
    echo "\$ rk ${demo_args[*]}   (up to $lim s)"
    if [ "$lim" -ge 20 ]; then
      limited "$lim" "$rk" "${demo_args[@]}" 2>&1
      echo "exit $?"
    else
      echo "not run: out of time"
    fi
    lim2=$(step_limit 60 10)
    echo "\$ rk demo saxpy --backend cuda   (up to $lim2 s)"
    if [ "$lim2" -ge 10 ]; then
      limited "$lim2" "$rk" demo saxpy --backend cuda 2>&1
      echo "exit $?"
    else
      echo "not run: out of time"
    fi
    # The command-line benchmark (a launch, actor calls, messages/s) on
    # cuda alone, quickly: the figures a user of an installed rk sees.
    lim5=$(step_limit 30 10)
    echo "\$ rk bench --backend cuda --quick   (up to $lim5 s)"
    if [ "$lim5" -ge 10 ]; then
      limited "$lim5" "$rk" bench --backend cuda --quick 2>&1
      echo "exit $?"
    else
      echo "not run: out of time"
    fi
    # Tile actors exchanging halos through K2K, against the stencil
    # kernel: as relaunch actors (host-forwarded halos), then resident
    # (the tile kernels write and poll their channels themselves).
    lim3=$(step_limit 90 10)
    echo "\$ RK_ACTOR_RELAUNCH=1 rk demo halo --backend cuda --json   (up to $lim3 s)"
    if [ "$lim3" -ge 10 ]; then
      halo_args=(demo halo --backend cuda --json)
      [ "$quick" = 1 ] && halo_args+=(--quick)
      RK_ACTOR_RELAUNCH=1 limited "$lim3" "$rk" "${halo_args[@]}" 2>&1
      echo "exit $?"
    else
      echo "not run: out of time"
    fi
    lim4=$(step_limit 90 10)
    echo "\$ rk demo halo --backend cuda --json   (resident; up to $lim4 s)"
    if [ "$lim4" -ge 10 ]; then
      halo_args=(demo halo --backend cuda --json)
      [ "$quick" = 1 ] && halo_args+=(--quick)
      limited "$lim4" "$rk" "${halo_args[@]}" 2>&1
      echo "exit $?"
    else
      echo "not run: out of time"
    fi
  } > "$out/demo.txt"
  cat "$out/demo.txt"
  demo_rcs=$(sed -n 's/^exit \([0-9]*\)$/\1/p' "$out/demo.txt" | tr '\n' ' ')
  if [ "$demo_rcs" = "0 0 0 0 0 " ]; then
    demo_status="ok"
  elif grep -q '^not run: out of time' "$out/demo.txt"; then
    demo_status="not run (out of time; exits: $demo_rcs)"
    fail "rk demo: not run, out of time: see $out/demo.txt"
  elif [ "$gpu_present" = 1 ]; then
    demo_status="FAILED (exits: $demo_rcs; 124 or 137: timed out)"
    fail "rk demo --backend cuda failed (exits: $demo_rcs): see $out/demo.txt"
  else
    demo_status="skipped: no GPU (exits: $demo_rcs)"
  fi
else
  echo "not run: no $rk" > "$out/demo.txt"
fi
step_end demo
save_summary

# ---- 5b. bench_k2k --backend cuda -----------------------------------------------
# Two resident actors bouncing a token through K2K channels (a hop between
# kernels of one GPU), and messages/s between them, beside the host's
# cache-line floor. With whatever time is left; not run is not a failure.
step_begin
k2k="$build/bench/actors/bench_k2k"
if [ -x "$k2k" ]; then
  lim=$(step_limit 60 0)
  if [ "$lim" -lt 20 ]; then
    echo "not run: out of time" > "$out/bench_k2k.txt"
    k2k_status="not run (out of time)"
  else
    log "bench_k2k --backend cuda --quick --json, up to $lim s (output: $out/bench_k2k.txt)"
    limited "$lim" "$k2k" --backend cuda --quick --json \
      > "$out/bench_k2k.json" 2> "$out/bench_k2k.txt"
    rc=$?
    hop=$(sed -n 's/^ *K2K hop, one way *\([0-9.]* [nu]s\).*/\1/p' "$out/bench_k2k.txt" | head -n 1)
    dfloor=$(sed -n 's/^ *device word, one way (floor) *\([0-9.]* [nu]s\).*/\1/p' "$out/bench_k2k.txt" | head -n 1)
    # The same with the channels in mapped host memory (as before they
    # moved to device memory), with what is left.
    lim2=$(step_limit 30 0)
    if [ "$rc" = 0 ] && [ "$lim2" -ge 15 ]; then
      echo "--- RK_K2K_MAPPED_CHANNELS=1 (channels in mapped host memory)" \
        >> "$out/bench_k2k.txt"
      RK_K2K_MAPPED_CHANNELS=1 limited "$lim2" "$k2k" --backend cuda --quick \
        --json 2>> "$out/bench_k2k.txt" > /dev/null
    fi
    # And with header-and-payload slots in device memory (as before the
    # word slots), with what is left: the hop lines only.
    lim4=$(step_limit 30 0)
    if [ "$rc" = 0 ] && [ "$lim4" -ge 15 ]; then
      echo "--- RK_K2K_WORD_SLOTS=0 (header-and-payload slots)" \
        >> "$out/bench_k2k.txt"
      RK_K2K_WORD_SLOTS=0 limited "$lim4" "$k2k" --backend cuda --quick \
        2>&1 | grep -E 'K2K hop|K2K messages' >> "$out/bench_k2k.txt"
    fi
    # And with the resident loop timing its phases (RK_PA_PROFILE: each
    # kernel prints a line when it leaves), with what is left.
    lim3=$(step_limit 30 0)
    if [ "$rc" = 0 ] && [ "$lim3" -ge 15 ]; then
      echo "--- RK_CUDA_DEFINES=RK_PA_PROFILE=1 (the loop's phases, per message)" \
        >> "$out/bench_k2k.txt"
      RK_CUDA_DEFINES=RK_PA_PROFILE=1 limited "$lim3" "$k2k" --backend cuda \
        --quick 2>&1 | grep -E '^rk profile|K2K hop' >> "$out/bench_k2k.txt"
    fi
    cat "$out/bench_k2k.txt"
    if [ "$rc" = 0 ]; then
      k2k_status="ok (hop ${hop:-?} one way; device floor ${dfloor:-?})"
    elif [ "$gpu_present" != 1 ]; then
      k2k_status="skipped: no GPU (exit $rc)"
    elif timed_out $rc; then
      k2k_status="TIMED OUT after $lim s"
      [ "$gpu_present" = 1 ] && fail "bench_k2k --backend cuda: $k2k_status: see $out/bench_k2k.txt"
    else
      k2k_status="FAILED (exit $rc)"
      [ "$gpu_present" = 1 ] && fail "bench_k2k --backend cuda: $k2k_status: see $out/bench_k2k.txt"
    fi
  fi
else
  echo "not run: no $k2k" > "$out/bench_k2k.txt"
fi
step_end k2k

# ---- 5c. GEMM on CUDA: cuBLAS against rk's kernel ----------------------------
# bench_ops's section 4 alone (resident operands, both engines checked
# against a double reference first), with what is left; not run is not a
# failure, a wrong result is.
step_begin
ops_bench="$build/bench/ops/bench_ops"
if [ -x "$ops_bench" ]; then
  lim=$(step_limit 60 0)
  if [ "$lim" -lt 20 ]; then
    gemm_status="not run (out of time)"
  else
    log "bench_ops --gpu-gemm-only --quick --json, up to $lim s (output: $out/bench_gemm.txt)"
    limited "$lim" "$ops_bench" --gpu-gemm-only --quick --json \
      > "$out/bench_gemm.json" 2> "$out/bench_gemm.txt"
    rc=$?
    # The table went to the JSON file's stdout only when --json could not
    # duplicate it: keep whatever lines name a size.
    row=$(grep -hE '^  1024 ' "$out/bench_gemm.txt" "$out/bench_gemm.json" | head -n 1)
    cat "$out/bench_gemm.txt"
    skipped=$(sed -n 's/^  skipped: //p' "$out/bench_gemm.txt" | head -n 1)
    if [ "$rc" = 0 ] && [ -n "$skipped" ]; then
      gemm_status="skipped: $skipped"
      [ "$gpu_present" = 1 ] && fail "bench_ops --gpu-gemm-only: CUDA did not open: $skipped"
    elif [ "$rc" = 0 ]; then
      gemm_status="ok (n = 1024: $(printf '%s' "$row" | awk '{print $2 " GFLOP/s vendor, " $4 " rk kernel, " $6 "; " $7}'))"
    elif [ "$gpu_present" != 1 ]; then
      gemm_status="skipped: no GPU (exit $rc)"
    else
      gemm_status="FAILED (exit $rc)"
      fail "bench_ops --gpu-gemm-only: $gemm_status: see $out/bench_gemm.txt"
    fi
  fi
fi
step_end gemm

# ---- 6. Summary -----------------------------------------------------------------
trap - TERM INT HUP
finish
