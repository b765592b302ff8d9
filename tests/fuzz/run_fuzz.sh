#!/usr/bin/env bash
# tests/fuzz/run_fuzz.sh - build the libFuzzer target and fuzz the transpiler
# for a bounded time (what `make fuzz` runs).
#
#   tests/fuzz/run_fuzz.sh [BUILD_DIR [SECONDS]]    (defaults: build-fuzz 60)
#
# Builds tests/fuzz/libfuzzer with clang into BUILD_DIR, then runs
# fuzz_transpile for SECONDS (-max_total_time) with inputs of at most 4096
# bytes and 5 s each. The corpus it grows lives in BUILD_DIR/corpus; it
# starts from tests/fuzz/corpus, tests/fuzz/regressions and the codegen
# tests' kernels (tests/codegen/kernels/*.c), read in place.
#
# On a finding (crash, sanitizer report, broken contract, leak, timeout or
# out-of-memory) the input is copied into tests/fuzz/regressions/ (named by
# libFuzzer, e.g. crash-<sha1>), printed, and the script exits 1; the
# regular build's fuzz_replay test then replays it until it is fixed.
# Without clang and libFuzzer it says what to install and exits 1.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-fuzz}
seconds=${2:-60}
CLANG=${CLANG:-clang}
CMAKE=${CMAKE:-cmake}
case $build in /*) ;; *) build=$root/$build ;; esac
fuzz_dir=$root/tests/fuzz
regressions=$fuzz_dir/regressions

die() { echo "make fuzz: $*" >&2; exit 1; }

# ---- clang with libFuzzer ---------------------------------------------------
command -v "$CLANG" >/dev/null 2>&1 ||
  die "needs clang with libFuzzer; install: apt-get install clang libclang-rt-dev"
probe=$(mktemp -d "${TMPDIR:-/tmp}/rk-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {' \
  '  (void)d; (void)n; return 0; }' >"$probe/f.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe/f.c" \
    -o "$probe/f" >"$probe/log" 2>&1; then
  cat "$probe/log" >&2
  major=$("$CLANG" -dumpversion 2>/dev/null | cut -d. -f1)
  die "$CLANG cannot link a libFuzzer target (above); install:" \
    "apt-get install libclang-rt-${major:-N}-dev"
fi

# ---- build --------------------------------------------------------------------
generator=()
[ -f "$build/CMakeCache.txt" ] || ! command -v ninja >/dev/null 2>&1 ||
  generator=(-G Ninja)
"$CMAKE" -S "$fuzz_dir/libfuzzer" -B "$build" "${generator[@]}" \
  -DCMAKE_C_COMPILER="$CLANG" >/dev/null || die "configure failed"
"$CMAKE" --build "$build" -j "$(nproc 2>/dev/null || echo 2)" ||
  die "build failed (src/codegen must define rk_transpile and friends)"

# ---- fuzz ---------------------------------------------------------------------
# The seeds, read in place; the fuzzer adds what it finds to the first
# directory only.
seeds=("$fuzz_dir/corpus" "$regressions")
kernels=("$root"/tests/codegen/kernels/*.c)
mkdir -p "$build/corpus" "$build/codegen-kernels"
if [ -e "${kernels[0]}" ]; then
  # libFuzzer reads whole directories; this one holds only the *.c files.
  rm -f "$build/codegen-kernels"/*
  ln -s "${kernels[@]}" "$build/codegen-kernels/"
  seeds+=("$build/codegen-kernels")
fi
artifacts=$build/artifacts
rm -rf "$artifacts"
mkdir -p "$artifacts" "$regressions"

echo "make fuzz: fuzzing rk_transpile for ${seconds}s (corpus $build/corpus)"
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$build/fuzz_transpile" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
  -rss_limit_mb=2048 -dict="$fuzz_dir/kernel.dict" -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$build/corpus" "${seeds[@]}"
rc=$?

found=("$artifacts"/*)
if [ $rc -eq 0 ] && [ ! -e "${found[0]}" ]; then
  echo "make fuzz: no findings in ${seconds}s"
  exit 0
fi
if [ ! -e "${found[0]}" ]; then
  die "fuzz_transpile exited with $rc and left no input (see above)"
fi
for f in "${found[@]}"; do
  cp "$f" "$regressions/"
  echo "make fuzz: finding saved as tests/fuzz/regressions/$(basename "$f")" \
    "($(wc -c <"$f") bytes):" >&2
  echo "----8<----" >&2
  head -c 2048 "$f" | cat -v >&2
  echo >&2
  echo "---->8----" >&2
done
echo "make fuzz: reproduce with $build/fuzz_transpile FILE, or" \
  "the regular build's fuzz_replay test" >&2
exit 1
