#!/bin/sh
# darwin_exports.sh SRC_DIR WORK_DIR - the exported-symbols list librk.dylib
# is linked with on macOS (cmake/darwin_exports.cmake), given to lld's Mach-O
# linker (ld64.lld, which follows Apple's ld in this) with a small arm64
# object: rk_* must be exported, rk__* and other names must not. A negative
# control links with the naive list "_rk_*" and must see rk__* exported, so
# the check can fail. Exit 77 without clang, ld64.lld or llvm-nm.
set -u
src=$1 work=$2
mkdir -p "$work" || exit 1
find_tool() {
  for t in "$@"; do
    command -v "$t" 2>/dev/null && return 0
    ls /usr/bin/"$t"-[0-9]* 2>/dev/null | sort -V | tail -n 1 | grep . && return 0
  done
  return 1
}
clang=$(find_tool clang) || { echo "clang not found: skipped"; exit 77; }
ld64=$(find_tool ld64.lld) || { echo "ld64.lld not found (apt-get install lld): skipped"; exit 77; }
nm=$(find_tool llvm-nm) || { echo "llvm-nm not found (apt-get install llvm): skipped"; exit 77; }

cmake -DOUT="$work/librk.exports" -P "$src/cmake/darwin_exports.cmake" || exit 1
cat >"$work/api.c" <<'C'
int rk_version_x(void) { return 1; }
int rk_Upper(void) { return 2; }
int rk_9lives(void) { return 3; }
int rk__internal(void) { return 4; }
int rk_(void) { return 5; }
int other(void) { return 6; }
C
"$clang" --target=arm64-apple-macos11 -c "$work/api.c" -o "$work/api.o" ||
  { echo "FAILED: compiling the arm64 object"; exit 1; }

# exported LIST: the global defined names of a dylib linked with LIST.
exported() {
  "$ld64" -dylib -arch arm64 -platform_version macos 11.0 11.0 \
    -exported_symbols_list "$1" -o "$work/api.dylib" "$work/api.o" ||
    { echo "FAILED: ld64.lld with $1" >&2; return 1; }
  "$nm" -g --defined-only "$work/api.dylib" | awk '{print $3}' | sort | tr '\n' ' '
}

got=$(exported "$work/librk.exports") || exit 1
want="_rk_9lives _rk_Upper _rk_version_x "
if [ "$got" != "$want" ]; then
  echo "FAILED: librk.exports exports '$got', want '$want'"
  exit 1
fi
echo "exported: $got(not _rk__internal, _rk_, _other)"

printf '_rk_*\n' >"$work/naive.exports"
got=$(exported "$work/naive.exports") || exit 1
case $got in
*_rk__internal*) echo "control: the naive list '_rk_*' exports _rk__internal, as it must" ;;
*) echo "FAILED: the control list '_rk_*' did not export _rk__internal: '$got'"; exit 1 ;;
esac
