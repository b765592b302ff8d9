#!/usr/bin/env bash
# tests/install/run_install_test.sh - installs the build tree into a temporary
# prefix and checks that a program outside the project can use it: consumer/
# is built with find_package(rk) (against rk::rk and rk::rk_static) and
# installed, and consumer/main.c once more with `cc $(pkg-config --cflags
# --libs rk)` and with rk.pc's static_libs; each program, and the installed
# rk command, must run and succeed without LD_LIBRARY_PATH (the prefix is
# not a system path: RUNPATHs must find librk.so). Where `cc -static`
# works, consumer/static_first.c linked with it must be refused by
# rk_backend_open rather than crash. Registered by
# tests/install/CMakeLists.txt:
#
#   run_install_test.sh CMAKE BUILD_DIR CONSUMER_DIR CC LIBDIR GENERATOR [MAKE]
#
# Exits 77 (skipped) when cmake or pkg-config is missing.
set -euo pipefail

cmake=$1 build_dir=$2 consumer=$3 cc=$4 libdir=$5 generator=$6
make_program=${7:-}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v "$cmake" >/dev/null 2>&1 || skip "cmake not found ($cmake)"
command -v pkg-config >/dev/null 2>&1 ||
  skip "pkg-config not found (apt-get install pkg-config, or make deps)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
# What the programs below find, they find through their RUNPATH.
unset LD_LIBRARY_PATH
export RK_CACHE_DIR=$tmp/cache

echo "== cmake --install $build_dir --prefix $prefix"
env -u DESTDIR "$cmake" --install "$build_dir" --prefix "$prefix" \
  >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "install failed"; }

# The shared library: librk.so, or librk.dylib on macOS.
shlib=librk.so
[ "$(uname -s)" = Darwin ] && shlib=librk.dylib
missing=()
for f in include/rk/rk.h include/rk/status.h include/rk/backend.h \
         include/rk/kernel.h bin/rk "$libdir/$shlib" "$libdir/librk.a" \
         "$libdir/cmake/rk/rkConfig.cmake" \
         "$libdir/cmake/rk/rkConfigVersion.cmake" \
         "$libdir/cmake/rk/rkTargets.cmake" "$libdir/pkgconfig/rk.pc"; do
  [ -e "$prefix/$f" ] || missing+=("$f")
done
[ ${#missing[@]} -eq 0 ] || fail "not installed: ${missing[*]}"

echo "== find_package(rk) consumer"
cmake_args=(-S "$consumer" -B "$tmp/consumer-build" -G "$generator"
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
[ -z "$make_program" ] || cmake_args+=(-DCMAKE_MAKE_PROGRAM="$make_program")
"$cmake" "${cmake_args[@]}" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configuring the consumer failed"; }
rk_dir=$(sed -n 's/^rk_DIR:PATH=//p' "$tmp/consumer-build/CMakeCache.txt")
[ "$rk_dir" = "$prefix/$libdir/cmake/rk" ] ||
  fail "find_package(rk) found '$rk_dir', not the temporary install"
"$cmake" --build "$tmp/consumer-build" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "building the consumer failed"; }
"$tmp/consumer-build/consumer" || fail "consumer (rk::rk) failed"
"$tmp/consumer-build/consumer_static" || fail "consumer (rk::rk_static) failed"
"$cmake" --install "$tmp/consumer-build" --prefix "$tmp/consumer-prefix" \
  >"$tmp/consumer-install.log" 2>&1 ||
  { cat "$tmp/consumer-install.log"; fail "installing the consumer failed"; }
"$tmp/consumer-prefix/bin/consumer" ||
  fail "the installed consumer (rk::rk, INSTALL_RPATH \${rk_LIBRARY_DIR}) failed"
"$tmp/consumer-prefix/bin/consumer_static" ||
  fail "the installed consumer (rk::rk_static) failed"

echo "== the installed rk command"
"$prefix/bin/rk" --version >"$tmp/version.out" 2>&1 ||
  { cat "$tmp/version.out"; fail "the installed rk --version failed"; }
grep -q '^rk .* (librk ' "$tmp/version.out" ||
  fail "rk --version: $(cat "$tmp/version.out")"
RK_BACKEND=cpu "$prefix/bin/rk" demo saxpy --n 100 >"$tmp/demo.out" 2>&1 ||
  { cat "$tmp/demo.out"; fail "the installed rk demo saxpy failed"; }

echo "== pkg-config consumer"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_dir=$(pkg-config --variable=pcfiledir rk) || fail "pkg-config cannot find rk"
[ "$pc_dir" = "$prefix/$libdir/pkgconfig" ] ||
  fail "pkg-config found rk in '$pc_dir', not the temporary install"
read -r -a pc_flags <<<"$(pkg-config --cflags --libs rk)"
echo "$cc main.c ${pc_flags[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_pc" \
  "$consumer/main.c" "${pc_flags[@]}" || fail "compiling with pkg-config failed"
"$tmp/consumer_pc" ||
  fail "consumer (pkg-config) failed without LD_LIBRARY_PATH (no RUNPATH?)"
read -r -a static_libs <<<"$(pkg-config --variable=static_libs rk)"
read -r -a pc_cflags <<<"$(pkg-config --cflags rk)"
echo "$cc main.c ${pc_cflags[*]} ${static_libs[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_pc_static" \
  "$consumer/main.c" "${pc_cflags[@]}" "${static_libs[@]}" ||
  fail "compiling with rk.pc's static_libs failed"
"$tmp/consumer_pc_static" || fail "consumer (static_libs) failed"

# librk.a holds machine code, not only LTO bytecode (src/lto/): a link
# that cannot read bytecode (GCC without its linker plugin, as any linker
# of another toolchain) still finds every symbol.
if "$cc" -v 2>&1 | grep -q '^gcc version'; then
  echo "== librk.a without the LTO linker plugin"
  "$cc" -std=c11 -fno-use-linker-plugin -o "$tmp/consumer_no_plugin" \
    "$consumer/main.c" "${pc_cflags[@]}" "${static_libs[@]}" ||
    fail "librk.a does not link without the LTO linker plugin"
  "$tmp/consumer_no_plugin" || fail "consumer (no LTO plugin) failed"
fi

echo "== cc -static"
if echo 'int main(void) { return 0; }' >"$tmp/empty.c" &&
   "$cc" -static -o "$tmp/empty" "$tmp/empty.c" >/dev/null 2>&1 &&
   "$tmp/empty"; then
  "$cc" -std=c11 -static -o "$tmp/static_first" "$consumer/static_first.c" \
    "${pc_cflags[@]}" "${static_libs[@]}" >"$tmp/static.log" 2>&1 ||
    { cat "$tmp/static.log"; fail "linking static_first.c with -static failed"; }
  "$tmp/static_first" || fail "a statically linked program was not refused"
else
  echo "(no static C library here: not checked)"
fi
echo "install test passed"
