#!/usr/bin/env bash
# scripts/cuda-tune.sh - the resident actor loop's tuning macros side by side
# on an NVIDIA GPU, in one call of bounded length.
#
#   scripts/cuda-tune.sh [--no-build] [--reps N] [--profile] [NAME=DEFINES ...]
#
# Builds bench_k2k and bench_cuda (Release, into build-gpu/ as
# scripts/gpu-check.sh does), then for each variant, with RK_CUDA_DEFINES set
# to its DEFINES (docs/cuda.md, "Tuning the resident loop"), runs
#   bench_k2k --backend cuda --quick        (K2K hop between two resident
#                                            kernels, messages/s)
#   bench_cuda --rounds 5 --iters 300       (the actor row: a round trip
#                                            host -> resident kernel -> host)
# and prints one table: hop median (p10-p90), the device floor bench_k2k
# measures beside it (two kernels passing a counter), messages/s, actor p50
# and p99, and the raw mailbox p50 measured in the same run. The variants run in turn,
# N times over (--reps, default 2), so that drift of the machine shows as a
# difference between repetitions of one variant rather than between variants.
#
# --profile also runs, for each variant once, bench_k2k and bench_cuda
# --quick with RK_PA_PROFILE=1 added (the resident kernels time their loop's
# phases and print them when they leave) and prints those lines last.
#
# DEFINES is a list of NAME=VALUE macros separated by commas; an item
# written env:NAME=VALUE sets an environment variable of the runs instead
# (the host's choices, such as RK_K2K_WORD_SLOTS=0 or
# RK_K2K_MAPPED_CHANNELS=1). Without NAME=DEFINES arguments it runs a
# built-in list: the defaults, then each macro that can differ from them
# changed alone, then the K2K channels with header-and-payload slots.
# Outputs (one JSON file per run and the table) go to
# ${OUT:-build-gpu/cuda-tune}/.
#
# Exit status: 0 when every run finished, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
out="${OUT:-$build/cuda-tune}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
no_build=false
profile=false
reps=2
variants=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) no_build=true ;;
    --profile) profile=true ;;
    --reps)
      reps="$2"
      shift
      ;;
    *=*) variants+=("$1") ;;
    *)
      echo "usage: $0 [--no-build] [--reps N] [--profile] [NAME=DEFINES ...]" >&2
      exit 2
      ;;
  esac
  shift
done
if [ ${#variants[@]} -eq 0 ]; then
  variants=(
    "default="
    "no-solo=RK_PA_SOLO=0"
    "fences2=RK_PA_COMMIT_FENCES=2"
    "spin=RK_PA_BACKOFF_CAP=0,RK_PA_BACKOFF_CAP_IN=0"
    "no-head-cache=RK_PA_HEAD_CACHED=0"
    "no-shared-ports=RK_PA_PORT_SHARED_MAX=0"
    "first-words-first=RK_PA_FIRST_WORDS_LAST=0"
    "peek0=RK_PA_PEEK_WORDS=0"
    "peek2=RK_PA_PEEK_WORDS=2"
    "open-every=RK_PA_OPEN_EVERY=16384"
    "busy16k=RK_PA_HOST_BUSY=16384"
    "old-slots=env:RK_K2K_WORD_SLOTS=0"
  )
fi
mkdir -p "$out"

if ! $no_build; then
  gen=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null 2>&1; then
    gen=(-G Ninja)
  fi
  cmake -S "$root" -B "$build" ${gen[@]+"${gen[@]}"} \
    -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target bench_k2k bench_cuda \
      >> "$out/build.log" 2>&1 || {
    tail -n 30 "$out/build.log"
    echo "cuda-tune: the build failed (log: $out/build.log)"
    exit 1
  }
fi
k2k="$build/bench/actors/bench_k2k"
cuda="$build/bench/backends/bench_cuda"

# A variant's DEFINES as the macros (defs, for RK_CUDA_DEFINES) and the
# environment variables (envs, env:NAME=VALUE items) of its runs.
split_variant() {
  defs=""
  envs=()
  local item
  for item in ${1//,/ }; do
    case $item in
      env:*=*) envs+=("${item#env:}") ;;
      *) defs="${defs:+$defs }$item" ;;
    esac
  done
}

failed=0
for ((r = 1; r <= reps; ++r)); do
  for v in "${variants[@]}"; do
    name=${v%%=*}
    split_variant "${v#*=}"
    echo "== $name (rep $r): RK_CUDA_DEFINES='$defs'${envs[*]:+ ${envs[*]}}"
    env ${envs[@]+"${envs[@]}"} RK_CUDA_DEFINES="$defs" timeout 60 "$k2k" \
      --backend cuda --quick \
      --json > "$out/$name.$r.k2k.json" 2> "$out/$name.$r.k2k.txt" ||
      {
        echo "   bench_k2k failed: $(tail -n 3 "$out/$name.$r.k2k.txt")"
        failed=1
      }
    env ${envs[@]+"${envs[@]}"} RK_CUDA_DEFINES="$defs" timeout 90 "$cuda" \
      --rounds 5 --iters 300 \
      --json "$out/$name.$r.cuda.json" > "$out/$name.$r.cuda.txt" 2>&1 ||
      {
        echo "   bench_cuda failed: $(tail -n 3 "$out/$name.$r.cuda.txt")"
        failed=1
      }
  done
done

python3 - "$out" "$reps" "${variants[@]}" << 'EOF' | tee "$out/table.txt"
import json, os, sys
out, reps, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None
print("%-14s %3s %24s %8s %10s %16s %8s" % ("variant", "rep",
      "K2K hop ns (p10-p90)", "floor ns", "msgs/s", "actor p50/p99 us",
      "raw p50"))
for r in range(1, reps + 1):
    for v in variants:
        name = v.split("=", 1)[0]
        k = load(os.path.join(out, "%s.%d.k2k.json" % (name, r)))
        c = load(os.path.join(out, "%s.%d.cuda.json" % (name, r)))
        hop = msgs = floor = "-"
        if k:
            if "device_floor_one_way_ns" in k:
                floor = "%.0f" % k["device_floor_one_way_ns"]["median"]
            h = k["hop_one_way_ns"]
            hop = "%.0f (%.0f-%.0f)" % (h["median"], h["p10"], h["p90"])
            msgs = "%.0f" % k["messages_per_s"]["median"]
        act = raw = "-"
        if c:
            for row in c.get("rows", []):
                if row.get("row") == "actor":
                    act = "%.2f / %.2f" % (row["rk_p50"], row["rk_p99"])
                    raw = "%.2f" % row["raw_p50"]
        print("%-14s %3d %24s %8s %10s %16s %8s" % (name, r, hop, floor, msgs,
              act, raw))
EOF
if $profile; then
  for v in "${variants[@]}"; do
    name=${v%%=*}
    split_variant "${v#*=}"
    defs="${defs:+$defs }RK_PA_PROFILE=1"
    {
      env ${envs[@]+"${envs[@]}"} RK_CUDA_DEFINES="$defs" timeout 60 "$k2k" \
        --backend cuda --quick 2>&1
      env ${envs[@]+"${envs[@]}"} RK_CUDA_DEFINES="$defs" timeout 90 "$cuda" \
        --quick 2>&1
    } > "$out/$name.profile.txt" || failed=1
    echo "== $name, RK_CUDA_DEFINES='$defs'${envs[*]:+ ${envs[*]}}"
    grep '^rk profile' "$out/$name.profile.txt" | head -n 12
  done | tee "$out/profile.txt"
fi
exit $failed
