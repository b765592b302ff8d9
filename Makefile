# Makefile - the front door of rk. CMake does the work underneath; these
# targets are the commands the README and CI use.
#
#   make                 build into build/ (Release)
#   make test            install missing test tools where possible, build, ctest
#   make demo            build, then `rk demo` on the best available backend
#   make test-sanitize   the whole suite under ASan+UBSan, then under TSan
#   make test-portable   the POSIX paths macOS takes, built and tested on
#                        Linux (-DRK_PORTABLE_POSIX=ON, a subset of the suite)
#   make bench           build, then run every build/bench/**/bench_*
#   make report          build, run the benchmarks quickly with --json into
#                        build/report/ and draw their pictures into docs/img/
#   make fuzz            fuzz the transpiler with libFuzzer (clang) for
#                        FUZZ_SECONDS; a finding lands in tests/fuzz/regressions
#   make format          clang-format every tracked .c/.h (format-check: verify)
#   make install         build the libraries and rk only, install them into
#                        $(PREFIX) (/usr/local); DESTDIR honoured
#   make clean           remove the build directories
#
# Variables: BUILD_DIR (build), PREFIX (/usr/local), DESTDIR, CMAKE_ARGS (extra
# arguments for the configure step), CMAKE_GENERATOR (default Ninja when ninja
# is installed, else Unix Makefiles; used for new build directories only),
# FUZZ_SECONDS (60) and FUZZ_BUILD_DIR (build-fuzz) for make fuzz,
# PORTABLE_BUILD_DIR (build-portable) and PORTABLE_CC (clang, else cc) for
# make test-portable.

# Targets run one after another in the order written ("test: deps build");
# the parallelism is inside each build (cmake --build -j).
.NOTPARALLEL:

BUILD_DIR ?= build
PREFIX ?= /usr/local
CMAKE ?= cmake
CTEST ?= ctest
CMAKE_ARGS ?=
NPROC := $(shell nproc 2>/dev/null || echo 2)
CLANG_FORMAT ?= clang-format
FUZZ_SECONDS ?= 60
FUZZ_BUILD_DIR ?= build-fuzz

HAVE_NINJA := $(shell command -v ninja 2>/dev/null)
export CMAKE_GENERATOR ?= $(if $(HAVE_NINJA),Ninja,Unix Makefiles)

# Sanitizer builds: debug info at -O1, and every report is fatal.
# intercept_tls_get_addr=0: up to GCC 13 (and LLVM 16) the runtime's
# __tls_get_addr interceptor takes a dynamic TLS block whose address is
# sizeof(its glibc 2.19 header) past a page boundary for a pre-2.25 glibc
# block, reads a garbage range from before it, and LeakSanitizer's tracer
# then crashes at exit ("Tracer caught signal 11", "DTLS 8 at 0x1bd-...");
# whether it happens depends on where malloc puts the block (seen in
# actor_supervise_relaunch_cpu, which loads and unloads kernel modules
# with thread-locals, with GCC 12 and glibc 2.36). Leaks are still checked;
# dynamic TLS blocks are not scanned for pointers.
SANITIZE_CMAKE_ARGS = -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1"
ASAN_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:print_stacktrace=1:intercept_tls_get_addr=0 \
           UBSAN_OPTIONS=halt_on_error=1:detect_leaks=1:print_stacktrace=1
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp

.PHONY: all build deps test demo test-sanitize test-asan test-tsan \
        test-portable bench \
        report fuzz format format-check install clean

# Default target: build.
all: build

# Check for (and, as root, apt-get install) the tools the build and tests need.
deps:
	@bash scripts/deps.sh

# Configure build/ (Release) and build everything with one job per CPU.
build:
	$(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	$(CMAKE) --build $(BUILD_DIR) -j $(NPROC)

# Build, then run the whole test suite; fails when any test fails.
test: deps build
	$(CTEST) --test-dir $(BUILD_DIR) --output-on-failure -j2

# Build, then run the main job on the best available backend.
demo: deps build
	$(BUILD_DIR)/tools/rk/rk demo

# The whole suite under ASan+UBSan (build-asan/), then under TSan (build-tsan/).
test-sanitize: test-asan test-tsan

# $(call sanitize,DIR,RK_SANITIZE value,environment): configure, build, ctest.
# scripts/sanitizer-exec.sh first runs a tiny program built with the same
# sanitizer; where that needs ASLR off (gcc 12 TSan with a high
# vm.mmap_rnd_bits: "unexpected memory mapping"), ctest runs under setarch -R.
define sanitize
	$(CMAKE) -S . -B $(1) -DRK_SANITIZE=$(2) $(SANITIZE_CMAKE_ARGS) $(CMAKE_ARGS)
	$(CMAKE) --build $(1) -j $(NPROC)
	$(3) bash scripts/sanitizer-exec.sh $(2) $(1) \
	  $(CTEST) --test-dir $(1) --output-on-failure -j2
endef

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	$(call sanitize,build-asan,address,$(ASAN_ENV))

# The suite under ThreadSanitizer.
test-tsan: deps
	$(call sanitize,build-tsan,thread,$(TSAN_ENV))

# The POSIX paths that macOS takes instead of Linux's own calls (futexes,
# memfd_create, pipe2, CPU affinity, membarrier, /proc; src/base/platform.h),
# built on Linux with only POSIX and BSD declarations (-DRK_PORTABLE_POSIX=ON)
# into $(PORTABLE_BUILD_DIR), then a subset of the suite that exercises them:
# base helpers, the CPU backend and its fibers, the kernel cache, actors and
# rings, the conformance suite, tracing and the rk command. Only the targets
# those tests need are built.
# Built with clang where there is one: macOS's compiler is clang, whose
# warnings (errors here) differ from gcc's.
PORTABLE_BUILD_DIR ?= build-portable
PORTABLE_CC ?= $(shell command -v clang 2>/dev/null || echo cc)
PORTABLE_TARGETS = rk_tool base_status base_cache_dir base_log base_sys base_quiesce \
  cpu_cache cpu_exec test_fiber_switch actor actor_device ring actor_stuck \
  actor_clock actor_supervise actor_k2k hal cts test_pool_shared trace_api \
  trace_program
PORTABLE_TESTS = base_.* cpu_cache cpu_exec cpu_fiber_switch \
  cpu_fiber_switch_clobber cpu_fiber_switch_misalign actor \
  actor_device ring actor_stuck actor_relaunch_cpu actor_clock \
  actor_clock_relaunch_cpu actor_supervise actor_supervise_relaunch_cpu \
  actor_k2k actor_k2k_relaunch_cpu hal cts test_pool_shared trace_api \
  trace_events cli_devices cli_demo
empty :=
space := $(empty) $(empty)

test-portable:
	$(CMAKE) -S . -B $(PORTABLE_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(PORTABLE_CC) -DRK_PORTABLE_POSIX=ON \
	  -DRK_BUILD_BENCH=OFF $(CMAKE_ARGS)
	$(CMAKE) --build $(PORTABLE_BUILD_DIR) -j $(NPROC) --target $(PORTABLE_TARGETS)
	$(CTEST) --test-dir $(PORTABLE_BUILD_DIR) --output-on-failure -j2 \
	  -R '^($(subst $(space),|,$(strip $(PORTABLE_TESTS))))$$'

# Build, then run each benchmark program (build/bench/**/bench_*) in order.
bench: build
	@bash scripts/bench.sh $(BUILD_DIR)

# Build, run the benchmarks in a quick mode with --json into
# $(BUILD_DIR)/report/ and draw the pictures of docs/img/ with matplotlib
# (the project's venv, as make deps sets it up); a few minutes.
report: deps build
	@bash scripts/report.sh $(BUILD_DIR) docs/img

# Build tests/fuzz/libfuzzer with clang into $(FUZZ_BUILD_DIR), then fuzz
# rk_transpile for FUZZ_SECONDS (inputs <= 4096 bytes, 5 s each), seeded
# from tests/fuzz/corpus, tests/fuzz/regressions and tests/codegen/kernels.
# Fails, with the input copied into tests/fuzz/regressions/, on any finding;
# fails too, saying what to install, without clang's libFuzzer.
fuzz: deps
	@bash tests/fuzz/run_fuzz.sh $(FUZZ_BUILD_DIR) $(FUZZ_SECONDS)

# Kernel sources and generated output under test are data: their exact text
# (lines, columns) is what the tests compare.
FORMAT_FILES = git ls-files -z -- '*.c' '*.h' ':!:tests/codegen/kernels' \
  ':!:tests/codegen/golden' ':!:tests/cli/*.c' ':!:tests/fuzz/corpus'

# Reformat every tracked C source and header in place.
format:
	@command -v $(CLANG_FORMAT) >/dev/null || \
	  { echo "$(CLANG_FORMAT) not found: apt-get install clang-format" >&2; exit 1; }
	$(FORMAT_FILES) | xargs -0 -r $(CLANG_FORMAT) -i

# Fail (listing the places) if `make format` would change any tracked file.
format-check:
	@command -v $(CLANG_FORMAT) >/dev/null || \
	  { echo "$(CLANG_FORMAT) not found: apt-get install clang-format" >&2; exit 1; }
	$(FORMAT_FILES) | xargs -0 -r $(CLANG_FORMAT) --dry-run --Werror

# Install headers, libraries, the rk tool, the CMake package and rk.pc.
# Builds only what is installed (the libraries and rk), not the tests and
# benchmarks (configure with -DRK_BUILD_TESTS=OFF -DRK_BUILD_BENCH=OFF in
# CMAKE_ARGS to leave them out of the build directory altogether).
install:
	$(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	$(CMAKE) --build $(BUILD_DIR) -j $(NPROC) --target rk rk_static rk_tool
	DESTDIR="$(DESTDIR)" $(CMAKE) --install $(BUILD_DIR) --prefix "$(PREFIX)"

# Remove every build directory this Makefile creates.
clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan $(FUZZ_BUILD_DIR) \
	  $(PORTABLE_BUILD_DIR)
