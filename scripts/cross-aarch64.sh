#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds devctx (CPU-only) for AArch64 Linux with Debian's cross compiler, runs the whole
# test suite under qemu-user, then checks the AArch64 fiber switch with branch protection (BTI
# and pointer authentication) enforced by qemu. Installs what it needs (as root or with sudo):
# g++-aarch64-linux-gnu and qemu-user (scripts/packages.txt), and GoogleTest for arm64 from
# Debian's multiarch archive (after `dpkg --add-architecture arm64`), with libssl-dev for arm64,
# and libstdc++6 for arm64: the tests run on the target's own runtime (glibc's loader, libc,
# libstdc++, libcrypto all from Debian's arm64 packages; see cmake/toolchains/aarch64-linux-gnu.cmake).
#
# Usage: bash scripts/cross-aarch64.sh [BUILD_DIR]     (default build-aarch64)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-build-aarch64}
jobs=$(nproc)
sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"

bash scripts/setup.sh
arm64_packages=(libgtest-dev:arm64 libgmock-dev:arm64 libssl-dev:arm64 libstdc++6:arm64)  # libssl-dev: the runtime-kernel cache's SHA-256
missing=()
for p in "${arm64_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cross-aarch64: installing ${missing[*]}"
  log=$(mktemp)
  if ! { { dpkg --print-foreign-architectures | grep -qx arm64 || $sudo_cmd dpkg --add-architecture arm64; } &&
         $sudo_cmd apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log"; echo "cross-aarch64: package installation failed" >&2; exit 1
  fi
  rm -f "$log"
fi

echo "== AArch64 cross build (qemu-aarch64 runs the tests)"
# Built as scripts/test.sh builds for CI (-O2 without debug information, a unity build): the
# preset aarch64 of CMakePresets.json (its toolchain file), in BUILD_DIR.
cmake --preset aarch64 -B "$dir" >/dev/null
cmake --build "$dir" -j "$jobs"
# The trust tests' death tests re-execute the AArch64 program themselves, which the kernel can
# only do with qemu registered with binfmt_misc (qemu-user-binfmt's entry; mounted and registered
# here when this machine lets us, as CI's VM does). Where it cannot be, those tests are left out
# and the script says so. (Scripted tests - version.agree, the tool's messages - name the
# emulator themselves.)
binfmt=/proc/sys/fs/binfmt_misc
entry=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ ! -e "$binfmt/qemu-aarch64" ] && [ -f "$entry" ]; then
  [ -e "$binfmt/register" ] || $sudo_cmd mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
  [ -e "$binfmt/register" ] && $sudo_cmd sh -c "cat '$entry' > '$binfmt/register'" 2>/dev/null || true
fi
# Always left out: the trust tests that set an address-space or thread limit on the process
# (CpuAddressSpace, CpuThreadsEnv' worker that cannot start): under qemu-user the limits apply to
# qemu's own process, with its own reservations and threads, not to what the tests model (two of
# four and one of two fail there; all pass natively, in CI's x86-64 runs).
left_out=(-E "^devctx_trust_tests_Cpu(AddressSpace|ThreadsEnv)$")
if [ -e "$binfmt/qemu-aarch64" ] && grep -qx enabled "$binfmt/qemu-aarch64" 2>/dev/null; then
  export QEMU_LD_PREFIX=/  # for the programs the kernel starts through qemu: the multiarch runtime
else
  echo "cross-aarch64: binfmt_misc cannot start AArch64 programs here: the trust tests that re-execute themselves are left out"
  left_out=(-E "^devctx_trust_tests_Cpu")
fi
# Every test but the compile_fail snippets (label compile: the same compiler front end as on
# x86-64, where they run), the differential fuzzers' long runs (label fuzz, 8 x 100,000 ops), the
# suite's second run in checking mode (label checked) and its runs with 1 and 3 workers (label
# workers): under qemu they would take most of CI's time; one shorter fuzzer run stands in for
# the fuzzers.
ctest --test-dir "$dir" --output-on-failure -j "$jobs" -LE "compile|fuzz|checked|workers" "${left_out[@]}"
qemu-aarch64 -L / "$dir/tests/devctx_fuzz_diff" --seed 1 --ops 20000

echo "== AArch64 fiber switch with BTI and PAC enforced (qemu-aarch64 -cpu max)"
bp="$dir/branch-protection"
mkdir -p "$bp"
aarch64-linux-gnu-g++ -std=c++20 -O2 -fPIC -shared -nostartfiles -mbranch-protection=standard \
  -DDEVCTX_FIBER_AARCH64=1 -Isrc src/backends/cpu/fiber_aarch64.cpp tests/fiber_branch_protection.cpp \
  -o "$bp/libdevctx_bp.so"
if ! aarch64-linux-gnu-readelf -n "$bp/libdevctx_bp.so" | grep -q "AArch64 feature: BTI, PAC"; then
  echo "cross-aarch64: $bp/libdevctx_bp.so is not marked BTI and PAC" >&2; exit 1
fi
aarch64-linux-gnu-g++ -std=c++20 -O2 -DDEVCTX_BRANCH_PROTECTION_PROGRAM tests/fiber_branch_protection.cpp \
  -L"$bp" -ldevctx_bp -o "$bp/check"
run_bp() { LD_LIBRARY_PATH="$bp" qemu-aarch64 -L / -cpu max "$bp/check" "$@"; }
for violation in bti pac; do
  if run_bp --expect-fault "$violation" >/dev/null 2>&1; then
    echo "cross-aarch64: a planted $violation violation was not caught: qemu does not enforce it here" >&2; exit 1
  fi
done
run_bp
