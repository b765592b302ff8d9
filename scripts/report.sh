#!/usr/bin/env bash
# scripts/report.sh - run the benchmarks in a quick mode and draw their
# pictures (make report).
#
#   scripts/report.sh [BUILD_DIR [OUT_DIR]]      (or: make report)
#   scripts/report.sh --draw RESULTS_DIR OUT_DIR  only draw (tests)
#   scripts/report.sh --python                    print the Python it uses
#
# Runs each benchmark of BUILD_DIR (default build/) with --json into
# BUILD_DIR/report/ (rk demo on every backend that opens, bench_regret's
# --curves grid with and without software devices, bench_ops, the backend
# benchmarks, bench_launch and bench_actors), traces a known program with
# RK_TRACE, then scripts/report.py draws the PNGs into OUT_DIR (default
# docs/img/). Everything runs with RK_CACHE_DIR=BUILD_DIR/report/cache:
# the cost model is calibrated quickly there on each run, and the user's
# own cache and profile are left alone. A benchmark that is skipped (77: no such device) or fails
# leaves its picture out or partial, and the script goes on; it exits 1
# if any failed. A few minutes on a 2-core machine.
#
# Python: $RK_PYTHON, else the project's virtual environment
# ($RK_WGPU_VENV, as scripts/deps.sh makes it, with matplotlib), else
# python3; the first that imports matplotlib. Without one the script says
# how to get it (exit 77 with --draw).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
venv=${RK_WGPU_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/rk/wgpu-venv}

find_python() {
  local py
  for py in "${RK_PYTHON:-}" "$venv/bin/python" python3; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || [ -x "$py" ] || continue
    if "$py" -c 'import matplotlib' >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

no_python() {
  echo "report: no Python with matplotlib (tried \$RK_PYTHON, $venv/bin/python," \
    "python3); run 'make deps' as root, or: python3 -m venv \"$venv\" &&" \
    "\"$venv/bin/pip\" install 'matplotlib>=3.10,<3.12'" >&2
}

case ${1:-} in
  --python)
    find_python || { no_python; exit 77; }
    exit 0
    ;;
  --draw)
    [ $# -eq 3 ] || { echo "usage: $0 --draw RESULTS_DIR OUT_DIR" >&2; exit 2; }
    py=$(find_python) || { no_python; exit 77; }
    exec "$py" "$here/report.py" "$2" "$3"
    ;;
  -*)
    echo "usage: $0 [BUILD_DIR [OUT_DIR]] | --draw RESULTS OUT | --python" >&2
    exit 2
    ;;
esac

build=${1:-build}
out=${2:-$root/docs/img}
py=$(find_python) || { no_python; exit 1; }
if [ ! -x "$build/tools/rk/rk" ]; then
  echo "report: no $build/tools/rk/rk; build first (make build)" >&2
  exit 1
fi
results="$build/report"
rm -rf "$results"
mkdir -p "$results"
failed=()

# run NAME OUTPUT COMMAND...: the command's stdout to RESULTS/OUTPUT, its
# stderr (the human table) to RESULTS/NAME.log.
run() {
  local name=$1 output=$2
  shift 2
  echo "report: $name"
  "$@" >"$results/$output" 2>"$results/$name.log"
  local rc=$?
  case $rc in
    0) ;;
    77) echo "report: $name skipped: $(tail -n 1 "$results/$name.log")"
        rm -f "$results/$output" ;;
    *) echo "report: $name FAILED (exit $rc; see $results/$name.log)"
       rm -f "$results/$output"
       failed+=("$name") ;;
  esac
}

rk="$build/tools/rk/rk"
# A cache of the report's own: the user's cache and profile are left alone.
mkdir -p "$results/cache"
export RK_CACHE_DIR="$results/cache"
run demo-cpu demo-cpu.json "$rk" demo --backend cpu --quick --json
for be in cuda webgpu opencl; do
  # Only backends that open here (software devices included, and labelled).
  if "$rk" devices --json 2>/dev/null | "$py" -c '
import json, sys
be = sys.argv[1]
d = json.load(sys.stdin)
ok = any(b.get("name") == be and b.get("devices") for b in d.get("backends", []))
sys.exit(0 if ok else 1)' "$be"; then
    run "demo-$be" "demo-$be.json" "$rk" demo --backend "$be" --quick --json
  fi
done

b="$build/bench"
# The cost model's profile: calibrated quickly in the report's own cache by
# the first run, the software devices included (for the curves).
run regret-software regret-software.json \
  "$b/cost/bench_regret" --curves --software --json
run regret regret.json "$b/cost/bench_regret" --curves --json
run ops ops.json "$b/ops/bench_ops" --rounds 3 --json
run launch launch.json "$b/launch/bench_launch" --rounds 15 --json
run actors actors.json "$b/actors/bench_actors" --rounds 9 --iters 5000 \
  --msgs 20000 --json
for be in opencl webgpu cuda; do
  [ -x "$b/backends/bench_$be" ] &&
    run "$be" "$be.json" "$b/backends/bench_$be" --quick --json
done

# A trace of a known program: the test suite's trace_program when it was
# built, else rk demo.
tp="$build/tests/trace/trace_program"
if [ -x "$tp" ]; then
  echo "report: trace ($tp)"
  RK_TRACE="$results/trace.json" "$tp" >"$results/trace.log" 2>&1 ||
    failed+=(trace)
else
  echo "report: trace (rk demo)"
  RK_TRACE="$results/trace.json" "$rk" demo --quick >"$results/trace.log" \
    2>&1 || failed+=(trace)
fi

echo "report: drawing into $out with $py"
"$py" "$here/report.py" "$results" "$out" || failed+=(report.py)
if [ ${#failed[@]} -gt 0 ]; then
  echo "report: failed: ${failed[*]}" >&2
  exit 1
fi
