#!/usr/bin/env bash
# scripts/deps.sh - check for the tools rk's build and tests need.
#
#   scripts/deps.sh        (or: make deps)
#   scripts/deps.sh --check   report only, never install
#
# Silent when everything is present. Run as root on Debian/Ubuntu, it installs
# what is missing with one `apt-get update` and one `apt-get install`; otherwise
# (or with --check) it prints what is missing and the command that installs
# it. It exits non-zero
# only when the build itself cannot proceed (no working C compiler, no CMake >=
# 3.20, neither make nor ninja); a missing test tool is reported, and the tests
# that need it fail or skip.
set -uo pipefail

CMAKE_MIN=3.20
install=1
case ${1:-} in
  --check) install=0 ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--check]" >&2; exit 2 ;;
esac
CC=${CC:-cc}

# ---- Commands the tests need: extend here ----------------------------------
# One entry per line, "command|Debian packages|what needs it". Each command is
# looked up on PATH.
TEST_COMMANDS=(
  "pkg-config|pkg-config|the install test (tests/install)"
  "spin|spin|model checking of the actor ring protocol (tests/model)"
  "mpirun|openmpi-bin|the cluster's MPI launcher test (tests/cluster, cluster_mpi; Open MPI, loaded by rk at run time)"
  "clang++|clang|the fake Metal that runs the MSL of the Metal backend's tests (tests/backends/metal)"
  "qemu-aarch64|qemu-user|running the AArch64 fiber switch under emulation (tests/backends/cpu, cpu_fiber_switch_aarch64)"
  "aarch64-linux-gnu-gcc|gcc-aarch64-linux-gnu libc6-dev-arm64-cross|building the AArch64 fiber switch test (cpu_fiber_switch_aarch64)"
  "llvm-nm|llvm|reading the Mach-O objects of the fiber switch and of the export list (cpu_fiber_switch_macho, platform_darwin_exports)"
  "ld.lld|lld|lld, whose Mach-O linker ld64.lld checks librk.dylib's export list (platform_darwin_exports)"
)
# Shared libraries the tests load with dlopen: "soname|Debian packages|what
# needs it", looked up in the ldconfig cache.
TEST_LIBRARIES=(
  "libOpenCL.so.1|ocl-icd-libopencl1|the OpenCL ICD loader (OpenCL compile checks, tests/gpucompile)"
  "libvulkan.so.1|libvulkan1|the Vulkan loader (WGSL validation, codegen_wgsl_validate)"
  "libopenblas.so.0|libopenblas0-pthread|OpenBLAS, the CBLAS behind matmul (tests/ops, bench/ops; without it rk's own GEMM runs)"
  "libsleef.so.3|libsleef3|SLEEF 3.5, the vector math library bench/ops/bench_transcendental compares rk's exp/sigmoid/tanh/log with (left out of the table without it)"
)
# Files: "glob|Debian packages|what needs it"; any match will do.
TEST_FILES=(
  "/etc/OpenCL/vendors/*.icd|pocl-opencl-icd|an OpenCL platform, e.g. PoCL's CPU device (OpenCL compile checks, tests/gpucompile)"
  "/usr/share/vulkan/icd.d/*.json|mesa-vulkan-drivers python3-venv|a Vulkan driver, e.g. Mesa's lavapipe (WGSL validation, codegen_wgsl_validate)"
  "/usr/include/ck_ring.h|libck-dev|Concurrency Kit, ck_ring.h and libck (the ck_ring comparison in bench/actors)"
  "/usr/include/ucp/api/ucp.h|libucx-dev|UCX headers (the cluster layer, src/cluster: without them it builds as a stub)"
)
# UCX, the cluster transport: libucp is loaded at run time (tests/cluster,
# bench/cluster, `rk cluster`); rk follows the UCP API of this release on.
RK_UCX_MIN=1.13
# Python's wgpu package (wgpu-py, which bundles wgpu-native: its naga front end
# validates WGSL) lives in its own virtual environment, never in the system
# Python; tests/codegen/CMakeLists.txt looks for it there. Optional: without
# it codegen_wgsl_validate skips.
RK_WGPU_VENV=${RK_WGPU_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/rk/wgpu-venv}
# rk follows the webgpu.h of one wgpu-native major (kWgpuNativeMajor in
# src/backends/webgpu/webgpu_loader.c); these wgpu-py releases bundle it.
RK_WGPU_NATIVE_MAJOR=29
RK_WGPU_PIN='wgpu>=0.32,<0.33'
# The same environment holds matplotlib, which draws `make report`'s
# pictures (scripts/report.py; the report_draw test skips without it).
RK_PLOT_PIN='matplotlib>=3.10,<3.12'
# ------------------------------------------------------------------------------

have() { command -v "$1" >/dev/null 2>&1; }

# version_ge A B: true when version A >= version B (dotted numbers; plain
# bash, as macOS's older sort has no -V).
version_ge() {
  local IFS=. i
  local -a a b
  read -r -a a <<<"${1%%[!0-9.]*}"
  read -r -a b <<<"${2%%[!0-9.]*}"
  for ((i = 0; i < ${#a[@]} || i < ${#b[@]}; ++i)); do
    ((10#${a[i]:-0} > 10#${b[i]:-0})) && return 0
    ((10#${a[i]:-0} < 10#${b[i]:-0})) && return 1
  done
  return 0
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rk-deps.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# compiles FLAGS...: links a C program read from stdin with $CC and FLAGS.
compiles() { "$CC" -x c - -o "$tmp/a.out" "$@" >/dev/null 2>&1; }

# has_library SONAME: the dynamic linker's cache lists SONAME.
has_library() {
  local ldconfig
  ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
  "$ldconfig" -p 2>/dev/null | awk -v so="$1" '$1 == so { f = 1 } END { exit !f }'
}

# make fuzz needs clang and its libFuzzer runtime (libclang-rt-N-dev, N the
# clang major version; with no clang, the distribution's default pair).
check_libfuzzer() {
  if ! have clang; then
    missing_test+=("clang with libFuzzer (make fuzz)|clang libclang-rt-dev")
    return
  fi
  local major
  major=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {' \
    '  (void)d; (void)n; return 0; }' |
    clang -x c - -o "$tmp/fuzz.out" -fsanitize=fuzzer,address,undefined \
      >/dev/null 2>&1 ||
    missing_test+=("libFuzzer for clang${major:+ $major} (make fuzz)|libclang-rt-${major:-14}-dev")
}

# check_ucx: libucp.so.0 in the linker cache, at least RK_UCX_MIN (the
# version in ucp/api/ucp_version.h of libucx-dev).
check_ucx() {
  if ! has_library libucp.so.0; then
    missing_test+=("libucp.so.0, UCX (tests/cluster, bench/cluster)|libucx0 libucx-dev")
    return
  fi
  local h=/usr/include/ucp/api/ucp_version.h major minor
  [ -r "$h" ] || return # reported with the headers
  major=$(sed -n 's/^#define UCP_API_MAJOR *\([0-9]*\).*/\1/p' "$h")
  minor=$(sed -n 's/^#define UCP_API_MINOR *\([0-9]*\).*/\1/p' "$h")
  version_ge "${major:-0}.${minor:-0}" "$RK_UCX_MIN" ||
    missing_test+=("UCX >= $RK_UCX_MIN (found ${major:-?}.${minor:-?})|libucx-dev")
}

# The GCC support package (libgcc-N-dev) holds omp.h, libgomp.so and the
# sanitizer runtime links of GCC N.
gcc_dev_pkg() {
  local major
  major=$("$CC" -dumpversion 2>/dev/null | cut -d. -f1)
  [ -n "$major" ] && echo "libgcc-$major-dev"
}

# Empty arrays are expanded as ${a[@]+"${a[@]}"}: macOS's bash 3.2 calls
# "${a[@]}" of an empty array unbound under set -u.
missing_build=()  # "what|packages"
missing_test=()

check() {
  missing_build=()
  missing_test=()

  if ! have "$CC"; then
    missing_build+=("a C compiler ($CC)|gcc libc6-dev")
  elif ! echo 'int main(void) { return 0; }' | compiles; then
    missing_build+=("a C compiler that links ($CC; C library headers?)|libc6-dev")
  else
    echo '#include <omp.h>
int main(void) { return omp_get_max_threads() < 1; }' | compiles -fopenmp ||
      missing_test+=("OpenMP, libgomp (the OpenMP benchmark)|libgomp1 $(gcc_dev_pkg)")
    echo 'int main(void) { return 0; }' | compiles -fsanitize=address,undefined ||
      missing_test+=("ASan/UBSan runtimes (make test-sanitize)|$(gcc_dev_pkg)")
    echo 'int main(void) { return 0; }' | compiles -fsanitize=thread ||
      missing_test+=("TSan runtime (make test-sanitize)|$(gcc_dev_pkg)")
  fi

  local v
  if ! have cmake; then
    missing_build+=("cmake >= $CMAKE_MIN|cmake")
  else
    v=$(cmake --version | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')
    version_ge "${v:-0}" "$CMAKE_MIN" || missing_build+=(
      "cmake >= $CMAKE_MIN (found ${v:-?}; try backports or pip)|cmake")
  fi

  have make || have ninja || missing_build+=("make or ninja|make")

  local entry cmd pkgs what
  for entry in "${TEST_COMMANDS[@]}"; do
    IFS='|' read -r cmd pkgs what <<<"$entry"
    have "$cmd" || missing_test+=("$cmd, for $what|$pkgs")
  done
  for entry in "${TEST_LIBRARIES[@]}"; do
    IFS='|' read -r cmd pkgs what <<<"$entry"
    has_library "$cmd" || missing_test+=("$cmd, $what|$pkgs")
  done
  for entry in "${TEST_FILES[@]}"; do
    IFS='|' read -r cmd pkgs what <<<"$entry"
    compgen -G "$cmd" >/dev/null || missing_test+=("$what|$pkgs")
  done
  check_libfuzzer
  check_ucx
  local native
  native=$(wgpu_native_version)
  if [ -z "$native" ]; then
    missing_test+=("python wgpu in $RK_WGPU_VENV (WGSL validation, codegen_wgsl_validate, the WebGPU backend's tests; as root deps.sh creates it: python3 -m venv \"$RK_WGPU_VENV\" && \"$RK_WGPU_VENV/bin/pip\" install '$RK_WGPU_PIN')|")
  elif [ "${native%%.*}" != "$RK_WGPU_NATIVE_MAJOR" ]; then
    missing_test+=("python wgpu in $RK_WGPU_VENV bundles wgpu-native $native; rk needs wgpu-native $RK_WGPU_NATIVE_MAJOR.x ($RK_WGPU_PIN: as root deps.sh installs it: \"$RK_WGPU_VENV/bin/pip\" install '$RK_WGPU_PIN')|")
  fi
  have_matplotlib ||
    missing_test+=("python matplotlib in $RK_WGPU_VENV (make report, the report_draw test; as root deps.sh installs it: \"$RK_WGPU_VENV/bin/pip\" install '$RK_PLOT_PIN')|")
}

# have_matplotlib: the venv's Python imports matplotlib.
have_matplotlib() {
  "$RK_WGPU_VENV/bin/python" -c 'import matplotlib' >/dev/null 2>&1 </dev/null
}

# wgpu_native_version: the wgpu-native version the venv's wgpu bundles
# ("29.0.1.1"), or nothing when there is none.
wgpu_native_version() {
  "$RK_WGPU_VENV/bin/python" -c \
    'import wgpu.backends.wgpu_native as n; print(n.__version__)' \
    2>/dev/null </dev/null
}

# install_wgpu: the project's venv (as root only, like the packages), with
# the wgpu release that bundles the wgpu-native major rk follows, and
# matplotlib.
install_wgpu() {
  local native
  native=$(wgpu_native_version)
  have python3 || return
  if [ "${native%%.*}" != "$RK_WGPU_NATIVE_MAJOR" ]; then
    echo "deps: installing python $RK_WGPU_PIN into $RK_WGPU_VENV" \
      "${native:+(it has wgpu-native $native)}"
    python3 -m venv "$RK_WGPU_VENV" >/dev/null 2>&1 &&
      "$RK_WGPU_VENV/bin/pip" install -q "$RK_WGPU_PIN" </dev/null >/dev/null 2>&1 ||
      echo "deps: pip install '$RK_WGPU_PIN' failed (optional)" >&2
  fi
  if ! have_matplotlib; then
    echo "deps: installing python $RK_PLOT_PIN into $RK_WGPU_VENV"
    { [ -x "$RK_WGPU_VENV/bin/pip" ] ||
        python3 -m venv "$RK_WGPU_VENV" >/dev/null 2>&1; } &&
      "$RK_WGPU_VENV/bin/pip" install -q "$RK_PLOT_PIN" </dev/null >/dev/null 2>&1 ||
      echo "deps: pip install '$RK_PLOT_PIN' failed (optional)" >&2
  fi
}

# packages_of LIST...: the Debian packages of "what|packages" entries.
packages_of() {
  local entry
  for entry in "$@"; do echo "${entry#*|}"; done | tr ' ' '\n' | sed '/^$/d' |
    sort -u | paste -sd ' ' -
}

check
all=(${missing_build[@]+"${missing_build[@]}"} ${missing_test[@]+"${missing_test[@]}"})
[ ${#all[@]} -eq 0 ] && exit 0

if [ "$install" -eq 1 ] && [ "$(id -u)" -eq 0 ] && have apt-get; then
  read -r -a pkgs <<<"$(packages_of "${all[@]}")"
  [ ${#pkgs[@]} -eq 0 ] || echo "deps: installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ ${#pkgs[@]} -eq 0 ] ||
     { apt-get update -qq </dev/null &&
       apt-get install -y -qq --no-install-recommends "${pkgs[@]}" </dev/null; }; then
    install_wgpu
    check
  else
    echo "deps: apt-get failed" >&2
  fi
fi

report() {  # report LEVEL ENTRY...
  local level=$1 entry
  shift
  for entry in "$@"; do echo "  $level: ${entry%%|*}" >&2; done
}
if [ ${#missing_build[@]} -gt 0 ] || [ ${#missing_test[@]} -gt 0 ]; then
  echo "deps: missing tools:" >&2
  report "build" ${missing_build[@]+"${missing_build[@]}"}
  report "tests" ${missing_test[@]+"${missing_test[@]}"}
  pkgs=$(packages_of ${missing_build[@]+"${missing_build[@]}"} \
    ${missing_test[@]+"${missing_test[@]}"})
  if [ -n "$pkgs" ]; then
    echo "deps: install with:" >&2
    echo "  sudo apt-get install --no-install-recommends $pkgs" >&2
  fi
fi
if [ ${#missing_build[@]} -gt 0 ]; then
  echo "deps: the build cannot proceed." >&2
  exit 1
fi
exit 0
