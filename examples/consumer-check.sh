#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# consumer-check.sh BUILD_DIR_OF_DEVCTX WORKDIR
#
# Checks that devctx works for an outside project, as a user would consume it:
#   1. installs the devctx build in BUILD_DIR (cmake --install) into WORKDIR/prefix;
#   2. configures and builds examples/ as a separate project against that prefix only
#      (find_package(devctx) through -DCMAKE_PREFIX_PATH, no access to devctx's source tree);
#   3. runs every example and the installed `devctx` tool and checks their exit code and output.
# Exits 0 when everything passes. The examples run on the default device (DEVCTX_DEVICE, else
# the first GPU, else the CPU).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR_OF_DEVCTX WORKDIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
examples_src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
devctx_src=$(dirname "$examples_src")
prefix="$work/prefix"
consumer_build="$work/examples-build"

step() { printf '\n== %s\n' "$*"; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

step "install $build_dir into $prefix"
rm -rf "$prefix" "$consumer_build"
cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/lib/cmake/devctx/devctxConfig.cmake" || test -f "$prefix/lib64/cmake/devctx/devctxConfig.cmake" ||
  { echo "FAIL: no devctxConfig.cmake under $prefix"; exit 1; }
echo "installed $(grep -c -- "-- Installing" "$work/install.log") files"

step "configure and build the examples as an outside project"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
# Nothing about CUDA is passed: the kernels of a CUDA-enabled devctx are compiled by nvcc for the
# architectures devctx was built for (devctx_add_kernels).
cmake -S "$examples_src" -B "$consumer_build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "FAIL: configuring the examples against the installed devctx"; exit 1; }
cmake --build "$consumer_build" > "$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; echo "FAIL: building the examples against the installed devctx"; exit 1; }
# The consumer must see devctx's headers only through the install prefix.
if grep -rqs -- "$devctx_src/include" "$consumer_build/build.ninja" "$consumer_build/CMakeFiles" 2> /dev/null; then
  fail "the consumer build refers to devctx's source tree ($devctx_src/include)"
fi
echo "built in $consumer_build"

# run NAME EXPECTED_REGEX COMMAND...: the command must exit 0 and print a line matching the regex.
run() {
  local name=$1 expected=$2
  shift 2
  local log="$work/$name.log" rc=0
  "$@" > "$log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$name exited with $rc"; sed 's/^/    /' "$log" | tail -20
  elif ! grep -Eq "$expected" "$log"; then
    fail "$name printed no line matching '$expected'"; sed 's/^/    /' "$log" | tail -20
  else
    printf '  ok  %-26s %s\n' "$name" "$(grep -E "$expected" "$log" | head -1 | cut -c1-90)"
  fi
}

step "run the examples"
for dir in "$examples_src"/[0-9][0-9]_*/; do
  name=$(basename "$dir")
  run "$name" '^PASSED' "$consumer_build/$name"
done

step "run the installed devctx tool"
run "devctx --version" '^devctx [0-9]+\.[0-9]+\.[0-9]+' "$prefix/bin/devctx" --version
run "devctx info" '^(cpu|cuda):0 ' "$prefix/bin/devctx" info
run "devctx demo" '^PASSED' "$prefix/bin/devctx" demo --n 200000
run "devctx demo --block-level" '^PASSED' "$prefix/bin/devctx" demo --n 200000 --block-level

echo
if [[ $failures -ne 0 ]]; then
  echo "consumer-check: FAILED ($failures problems; logs in $work)"
  exit 1
fi
echo "consumer-check: PASSED (devctx installed to $prefix; examples built as an outside project and run)"
