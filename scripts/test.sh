#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up a fresh machine and runs the whole test suite:
#  1. a build with the CUDA backend (when nvcc is found): every kernel compiles with nvcc, the
#     tests run on the CPU backend, and GPU tests skip unless a GPU is present
#     (DEVCTX_REQUIRE_GPU=1 makes a missing GPU a failure);
#  2. a CPU-only build with the C++ compiler alone (the library and the tool, for the consumers
#     below; its test suite runs in step 7's ASan + UBSan build, which is CPU-only too), built as
#     scripts/demo.sh builds: one translation unit per file, -O3. Without nvcc, this is the build
#     of step 1 and runs the whole suite;
#  3. the examples built as an outside project against the installed package (find_package);
#  4. every way a project takes devctx in (find_package, add_subdirectory, FetchContent, also with
#     FIND_PACKAGE_ARGS; CMake 3.25 and a current one from PyPI; with and without nvcc), a shared
#     libdevctx (Debian layout, dlopen), pkg-config and the Conan recipe (tests/consumers/run.sh);
#  5. the libFuzzer harness (clang, ASan + UBSan); 6. the Python package and its pytest suite;
#  7. the CPU suite with 1 and 3 workers, under ASan + UBSan with the portable Boost.Context fiber
#     switch, under TSan, and cross-built for AArch64 under qemu-user.
# Before them, the layout of every C++ source (scripts/format.sh --check), also in --quick.
# Every configuration is a preset of CMakePresets.json (build directory build-test-<preset>), so
# that a failure here is reproduced with `cmake --preset <name> && cmake --build --preset <name>
# && ctest --preset <name>` (cuda, cpu, release-cpu, fuzz, asan, tsan; aarch64 through
# scripts/cross-aarch64.sh).
# CI's machine has 2 cores and CI's time is bounded: the builds here are made for building fast
# (docs/internals.md, "CI"): no debug information, unity builds (CMAKE_UNITY_BUILD), -Og / -O1
# under the sanitizers. A developer's build keeps CMake's usual build types. Every build treats
# warnings as errors: the C++ compiler's -Wall -Wextra on every target, and nvcc's own warnings and
# its host compiler's for CUDA sources (cmake/devctxWarnings.cmake).
#
# Usage: bash scripts/test.sh            the whole CI (.ci/run runs exactly this)
#        bash scripts/test.sh --quick    the inner loop before a commit: CI's CPU build, built
#            incrementally in build-quick (kept between runs, through ccache when installed), and
#            the CPU suite without its long repeats (preset quick: no compile-fail snippets, fuzzer
#            runs, checking-mode or 1/3-worker reruns). A few minutes once built (docs/internals.md,
#            "The inner loop"); it is not what CI runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# Every step starts with `section NAME` (its banner); the seconds each took are printed at the end,
# also when a step fails, so that CI's log shows where its time goes.
section_name="setup (scripts/setup.sh)"
section_start=$SECONDS
section_times=()
section() {
  section_times+=("$(printf '%5d s  %s' $((SECONDS - section_start)) "$section_name")")
  section_name=$1
  section_start=$SECONDS
  [ "$1" = "(end)" ] || echo "== $1"
}
# When a step fails, the lines that say why (gtest failures, sanitizer reports, crashes) of every
# failed test of this run are printed again just before the table, so that they are in the last
# lines of the log, which is what a shortened CI log keeps.
failure_digest() {
  local log
  for log in build-test-*/Testing/Temporary/LastTest.log; do
    [ -f "$log" ] && [ "$log" -nt "$run_started" ] || continue
    # Only the sections of tests that failed (each ends with "Test Passed." or "Test Failed.").
    awk '/^[0-9]+\/[0-9]+ Testing: /{n=0} {buf[n++]=$0} /^Test Failed/{for(i=0;i<n;i++) print buf[i]; n=0}' "$log" |
      grep -E 'Testing: |Command: |Failure|FAILED|failed|Error|error:|ERROR|AddressSanitizer|ThreadSanitizer|runtime error|SUMMARY|Segmentation|Aborted|Expected|Which is|Value of|Actual|Exception|terminate|^ +#[0-7] ' |
      grep -vE '^\[       OK|tests? passed|0 tests failed' | head -80 | sed "s|^|$log: |"
  done
}
trap 'status=$?; section "(end)"; [ $status = 0 ] || { echo "== why it failed (from each build directory'"'"'s Testing/Temporary/LastTest.log)"; failure_digest; }
  printf "%s\n" "== seconds per step (total ${SECONDS} s, exit status $status)" "${section_times[@]}"; rm -f "$run_started"' EXIT
run_started=$(mktemp)
# gtest prints only failed tests and the summary (GTEST_BRIEF): a failure stays visible in CI's log.
export GTEST_BRIEF=1
bash scripts/setup.sh
jobs=$(nproc)
# The sources' layout first: seconds, and a formatting slip should not wait for the builds.
section "layout: every C++ source as .clang-format says (scripts/format.sh --check, clang-format 19.1.7)"
bash scripts/format.sh --check
# preset NAME [CMAKE_ARGS...]: configure (CMakePresets.json's NAME, plus CMAKE_ARGS), build, run
# the tests of the test preset NAME (its labels and sanitizer options).
preset() {
  local name=$1; shift
  cmake --preset "$name" "$@" >/dev/null
  cmake --build --preset "$name" -j "$jobs"
  ctest --preset "$name" -j "$jobs"
}
if [ $quick = 1 ]; then
  section "quick: CPU build (preset quick, build-quick) and the CPU suite"
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  preset quick "${launcher[@]}"
  exit 0
fi
# The tools tests validate `devctx bench --json` against its schema; here the schema is required.
export DEVCTX_REQUIRE_JSONSCHEMA=1
# Built for CI's time (presets inheriting ci-base): -O2 without debug information (-g made a test
# file 36% slower to compile), translation units built together (CMAKE_UNITY_BUILD), warnings as
# errors.
full=cpu
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  full=cuda
else
  echo "test: nvcc not found: building the CPU-only configuration only"
fi
# The whole suite (every label) in the full build: the CUDA one when nvcc is here.
section "configuration $full (DEVCTX_ENABLE_CUDA=$([ $full = cuda ] && echo ON || echo OFF)): build, whole suite"
preset $full
if [ $full = cuda ]; then
  # What the consumers below install: the library and the tool, with the C++ compiler alone.
  # Built as scripts/demo.sh builds them, not for speed: CMake's Release flags (-O3) and one
  # translation unit per source file. GCC's warnings that depend on what it inlines
  # (-Wstringop-overflow, -Wrestrict) showed in that shape and not in the unity builds.
  section "configuration cpu (DEVCTX_ENABLE_CUDA=OFF): the library and the tool, non-unity, -O3"
  cmake --preset release-cpu >/dev/null
  cmake --build --preset release-cpu -j "$jobs"
  build-test-release-cpu/tools/devctx info --brief
fi
# The library and the tool the consumers install: the release-cpu build beside a CUDA one, else
# the CPU build itself.
consumer_cpu=build-test-cpu
[ $full = cuda ] && consumer_cpu=build-test-release-cpu
section "examples as an outside consumer (find_package(devctx))"
bash examples/consumer-check.sh "build-test-$full" build-test-consumer

# ---- step 4: CMake routes, shared library and packaging, as outside consumers --------------------
section "CMake routes, shared library, pkg-config and Conan (tests/consumers/run.sh)"
cuda_build=()
[ $full = cuda ] && cuda_build=(build-test-cuda)
bash tests/consumers/run.sh build-test-consumers "$consumer_cpu" "${cuda_build[@]}"

# ---- step 5: fuzzing (docs/fuzzing.md) ----------------------------------------------------------------
# The differential fuzzer ran above (ctest label fuzz). Here: devctx built by clang with ASan and
# UBSan in its own build directory, the checked-in corpus replayed, then a bounded libFuzzer run
# (DEVCTX_FUZZ_SECONDS, default 60). A failing input is left in build-test-fuzz/tests/fuzz_artifacts.
section "libFuzzer harness (clang, ASan + UBSan, ${DEVCTX_FUZZ_SECONDS:-60} s)"
preset fuzz -DDEVCTX_FUZZ_SECONDS="${DEVCTX_FUZZ_SECONDS:-60}"

# ---- step 6: the Python package (python/, issue 12) ----------------------------------------------
# `pip install .` into a virtual environment of Debian's python3, then its pytest suite:
# NumPy zero-copy round trips and the Python API on the CPU backend (GPU tests skip here). Built
# CPU-only to keep this step short; scripts/gpu-check.sh builds and runs it with CUDA on a GPU.
section "the Python package (pip install .; pytest python/tests; the sdist and a wheel from it)"
DEVCTX_PIP_ARGS="--config-settings=cmake.define.DEVCTX_ENABLE_CUDA=OFF ${DEVCTX_PIP_ARGS:-}" \
  bash scripts/python-test.sh build-python/venv

# ---- step 7: the CPU backend under other conditions (issues 10 and 11) ---------------------------
# CPU-only builds without benchmarks, each in its own build directory. Labels left out there:
# compile (compile_fail.* only runs the compiler on snippets), fuzz (repeats ctest -L fuzz above),
# checked (the suite again in checking mode, much slower under sanitizers) and workers (the
# suite again with 1 and 3 workers: run without sanitizers just below).
section "the CPU suite with 1 and 3 workers (DEVCTX_CPU_THREADS)"
for workers in 1 3; do
  DEVCTX_CPU_THREADS=$workers ctest --test-dir "build-test-$full" --output-on-failure -j "$jobs" -LE "compile|fuzz|checked|workers"
done
# The presets asan and tsan: CPU-only, without benchmarks; their test presets leave out the labels
# compile|fuzz|checked|workers (and mpi and differential under TSan) and set the sanitizer options
# (why: below).
# Every fiber switch is announced to the sanitizer in these builds (fiber_annotated.cpp).
# allocator_may_return_null=1: tests ask for absurd sizes on purpose and expect devctx's
# out_of_memory error; ASan would otherwise abort on the request itself.
# DEVCTX_FIBER=boost: Boost.Context (the portable fallback for machines without devctx's own
# switch) forced on x86-64, so that the whole suite runs on it here too (the native switch runs in
# every other build). -Og: UBSan's checks make -O2 builds three times as slow to compile. Every
# UBSan check is on (a user's UBSan build of their own program is clean too: tests/consumers).
section "ASan + UBSan, with the portable fiber switch (DEVCTX_FIBER=boost)"
preset asan
section "TSan"
# Every fiber switch is announced to TSan too (fiber_annotated.cpp; fibers that finish or park
# reuse their TSan fiber, see fiber_switch.hpp). -Wno-tsan: GCC warns that TSan does not model
# std::atomic_thread_fence, which checking mode uses for its own bookkeeping (label checked, not
# run here). allocator_may_return_null=1 as for ASan. Left out besides: the examples and the demo
# (large sizes: the suite covers the same code; so they are not built either, nor is the tool),
# the MPI tests (OpenMPI's own threads are not instrumented; their races would be reported
# against it), and the fission differential (label differential: it reruns whole programs with
# twins on and off to compare which kernels ran translated, a check with nothing for TSan to add,
# while devctx_tests_cpu and devctx_tests_cpu_fibers run the same kernels with twins on and off
# here; under TSan its three runs took 376 s of test time, in a step of 549 s on 2 cores).
preset tsan
section "AArch64: cross-built, the whole suite under qemu-user (scripts/cross-aarch64.sh)"
bash scripts/cross-aarch64.sh build-test-aarch64
