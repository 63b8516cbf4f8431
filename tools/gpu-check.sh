#!/usr/bin/env bash
# tools/gpu-check.sh OUTDIR - the whole GPU check of devctx, on a machine with an NVIDIA GPU.
#
# Configures a fresh Release build (Ninja, -DCMAKE_CUDA_ARCHITECTURES=90 unless
# DEVCTX_CUDA_ARCH says otherwise), builds everything, then runs:
#   1. ctest -L gpu with DEVCTX_REQUIRE_GPU=1: the CUDA runs of the behavioural tests and the
#      CUDA smoke check (tests/cuda/cuda_smoke.cu), each of its device-fault runs in its own process
#   2. the full ctest
#   3. the CUDA benchmark (devctx vs raw CUDA) and the CPU benchmark, when built
#   4. compute-sanitizer memcheck, racecheck, initcheck and synccheck over every gpu-labelled test's command line
#      (found with `ctest -L gpu -LE gpu_fault --show-only=json-v1`; the device-fault runs,
#      label gpu_fault, fault on purpose)
# Every step's log goes to OUTDIR; a failed step does not stop the later ones. A summary table
# ends the output; the exit status is non-zero when any step failed.
#
# Environment: BUILD_DIR (default OUTDIR/build), DEVCTX_CUDA_ARCH (default 90), JOBS,
# STEP_TIMEOUT (seconds per step, default 1800),
# GPU_CHECK_SKIP (words among: ctest-all sanitize-tests cpu-bench) to leave steps out.
set -u

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
OUTDIR=$(mkdir -p "$1" && cd "$1" && pwd)
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$OUTDIR/build}
ARCH=${DEVCTX_CUDA_ARCH:-90}
JOBS=${JOBS:-$(nproc)}
STEP_TIMEOUT=${STEP_TIMEOUT:-1800}

declare -a NAMES=() RESULTS=() SECONDS_TAKEN=() LOGS=()
FAILED=0

# step NAME LOG COMMAND...: runs COMMAND with its output in OUTDIR/LOG, records the outcome.
# Exit status 77 counts as "skipped".
step() {
  local name=$1 log=$2
  shift 2
  local start=$SECONDS status result
  echo "==> $name (log: $log)"
  # Through bash -c so that the step may be one of this script's (exported) functions.
  timeout "$STEP_TIMEOUT" bash -c '"$@"' "$name" "$@" >"$OUTDIR/$log" 2>&1
  status=$?
  case $status in
    0) result=ok ;;
    77) result=skipped ;;
    124) result="TIMED OUT (${STEP_TIMEOUT}s)"; FAILED=1 ;;
    *) result="FAILED ($status)"; FAILED=1 ;;
  esac
  NAMES+=("$name"); RESULTS+=("$result"); SECONDS_TAKEN+=($((SECONDS - start))); LOGS+=("$log")
  echo "    $result"
}

skipped() { [[ " ${GPU_CHECK_SKIP:-} " == *" $1 "* ]]; }

skip() {
  NAMES+=("$1"); RESULTS+=("skipped: $2"); SECONDS_TAKEN+=(0); LOGS+=("-")
  echo "==> $1: skipped ($2)"
}

configure() {
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DDEVCTX_ENABLE_CUDA=ON "$@"
}

environment() {
  nvidia-smi || true
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv || true
  cmake --version | head -1
  nvcc --version | tail -2
  command -v compute-sanitizer || echo "compute-sanitizer: not found"
  echo "source: $SRC"
  git -C "$SRC" log -1 --oneline 2>/dev/null || true
  git -C "$SRC" status --short 2>/dev/null | head -50 || true
}

sanitize() {
  local tool=$1 env=$2
  shift 2
  local -a vars=()
  read -r -a vars <<<"$env"  # NAME=VALUE words, split without glob expansion
  # API errors that a test provokes on purpose (out of memory, bad launches) are not memory errors.
  env "${vars[@]}" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 86 "$@"
}

export SRC BUILD ARCH
export -f environment configure sanitize 2>/dev/null || true
step "environment" env.log environment

rm -rf "$BUILD"
step "configure" configure.log configure
if [[ ${RESULTS[-1]} != ok ]]; then
  # A missing test dependency should not hide the rest: try again without the tests.
  rm -rf "$BUILD"
  step "configure without tests" configure-notests.log configure -DDEVCTX_BUILD_TESTS=OFF
fi
step "build" build.log cmake --build "$BUILD" -j "$JOBS" -- -k 0

export DEVCTX_REQUIRE_GPU=1
if [[ -f $BUILD/CTestTestfile.cmake ]]; then
  step "ctest -L gpu (DEVCTX_REQUIRE_GPU=1)" ctest-gpu.log \
    ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error
  if skipped ctest-all; then skip "ctest (all)" "GPU_CHECK_SKIP"
  else step "ctest (all)" ctest-all.log ctest --test-dir "$BUILD" --output-on-failure -j 4; fi
else
  skip "ctest" "no tests configured"
fi

# ---- the benchmarks -----------------------------------------------------------------------------------
BENCH=$BUILD/bench/cuda/devctx_bench_cuda
if [[ -x $BENCH ]]; then
  step "cuda benchmark (devctx vs raw CUDA)" bench-cuda.log "$BENCH"
else
  skip "cuda benchmark" "devctx_bench_cuda not built"
fi
CPU_BENCH=$(find "$BUILD/bench" -maxdepth 2 -type f -name 'devctx_bench_cpu*' -perm -u+x 2>/dev/null | head -1)
if skipped cpu-bench; then
  skip "cpu benchmark" "GPU_CHECK_SKIP"
elif [[ -n $CPU_BENCH ]]; then
  step "cpu benchmark" bench-cpu.log "$CPU_BENCH"
else
  skip "cpu benchmark" "not built"
fi

# ---- compute-sanitizer over the gpu tests' own command lines ------------------------------------
# Prints one line per gpu test but the device-fault runs: NAME<US>ENV1 ENV2...<US>COMMAND ARGS...,
# fields separated by the unit separator (0x1f): unlike a tab, `read` does not merge two of them,
# so an empty ENV field (a test without environment) stays a field.
gpu_test_commands() {
  ctest --test-dir "$BUILD" -L gpu -LE gpu_fault --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
data = json.load(sys.stdin)
for t in data.get("tests", []):
    env = []
    for p in t.get("properties", []):
        if p.get("name") == "ENVIRONMENT":
            env = p.get("value", [])
    cmd = t.get("command") or []
    if cmd:
        print(t["name"] + "\x1f" + " ".join(env) + "\x1f" + " ".join(cmd))
'
}


if command -v compute-sanitizer >/dev/null; then
  SANITIZED=0
  if skipped sanitize-tests; then
    SANITIZED=1
    skip "compute-sanitizer over gpu tests" "GPU_CHECK_SKIP"
  elif [[ -f $BUILD/CTestTestfile.cmake ]] && command -v python3 >/dev/null; then
    while IFS=$'\x1f' read -r name env cmd; do
      [[ -z $name ]] && continue
      SANITIZED=1
      # shellcheck disable=SC2086  # env and cmd are word lists on purpose
      step "memcheck $name" "memcheck-$name.log" sanitize memcheck "$env" $cmd
      # Racecheck leaves out the tests where several host threads launch at once: under racecheck
      # (CUDA 13.0, driver 580) such a run hung in about one of five tries, every launching
      # thread blocked on a lock inside libcuda while the sanitizer's collection thread spun
      # (seen 2026-11-30; memcheck runs them). Racecheck only looks at shared memory inside a
      # kernel, which these tests do not use. The filter is an environment variable so that
      # programs other than GoogleTest ones (the smoke check) ignore it.
      # shellcheck disable=SC2086
      step "racecheck $name" "racecheck-$name.log" sanitize racecheck "$env GTEST_FILTER=-*HostThreads*" $cmd
      # initcheck: device memory read before anything wrote it; synccheck: barrier and warp-sync
      # misuse. Both over the whole program, like memcheck.
      # shellcheck disable=SC2086
      step "initcheck $name" "initcheck-$name.log" sanitize initcheck "$env" $cmd
      # shellcheck disable=SC2086
      step "synccheck $name" "synccheck-$name.log" sanitize synccheck "$env" $cmd
    done < <(gpu_test_commands)
  fi
  [[ $SANITIZED == 0 ]] && skip "compute-sanitizer over gpu tests" "no gpu-labelled tests found"
else
  skip "compute-sanitizer" "not installed"
fi

# ---- summary ---------------------------------------------------------------------------------------
echo
printf '%-52s %-22s %6s  %s\n' "step" "result" "secs" "log (in $OUTDIR)"
printf '%-52s %-22s %6s  %s\n' "----" "------" "----" "---"
for i in "${!NAMES[@]}"; do
  printf '%-52s %-22s %6s  %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${SECONDS_TAKEN[$i]}" "${LOGS[$i]}"
done
if [[ -f $OUTDIR/bench-cuda.log ]]; then
  echo
  grep -E 'MISSED|targets missed|WRONG' "$OUTDIR/bench-cuda.log" || true
fi
echo
if [[ $FAILED != 0 ]]; then
  echo "gpu-check: FAILED"
  exit 1
fi
echo "gpu-check: all steps passed"
