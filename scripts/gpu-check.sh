#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-check.sh OUTDIR - the whole GPU check of devctx, on a machine with an NVIDIA GPU.
#
# Configures a fresh Release build (Ninja, -DCMAKE_CUDA_ARCHITECTURES=90 unless
# DEVCTX_CUDA_ARCH says otherwise), builds everything, then runs:
#   1. ctest -L gpu with DEVCTX_REQUIRE_GPU=1: the CUDA runs of the behavioural tests and the
#      CUDA smoke check (tests/cuda/cuda_smoke.cu), each of its device-fault runs in its own process
#   2. the full ctest
#   3. the CUDA benchmark (devctx vs raw CUDA) and the CPU benchmark, when built, and the CPU
#      pool benchmark (bench/cpu/pool_bench.cpp: devctx's workers vs OpenMP) into bench-cpu-pool.log
#   3a. the transfers benchmark (bench/cuda/transfers_bench.cu: pageable, page-locked and staged
#      copies, sweeps of the staging settings) and the pipeline example (examples/07_pipeline) at
#      its default size, into bench-transfers.log
#   3c. the trace of `devctx demo` (DEVCTX_TRACE_FILE) on the GPU: each step's device time in the
#      trace against the demo's own CUDA-event timing, within 5% (scripts/check_demo_trace.py), the
#      trace drawn as a timeline, and a run with DEVCTX_NVTX=1 whose NVTX ranges must name devctx's
#      operations and kernels: under Nsight Systems when nsys is installed, else through the
#      tests' NVTX injection library (tests/nvtx/nvtx_recorder.cpp, no profiler); into trace.log
#   3d. with two GPUs, the peer copy benchmark (bench/cuda/peer_bench.cu) into bench-peer.log
#   3e. the all-reduce benchmark (bench/cuda/allreduce_bench.cu: devctx vs ncclAllReduce called
#      directly, every GPU present) into bench-allreduce.log
#   3f. runtime-compiled kernels on the GPU (bench/runtime: nvcc's cold compile, cached load, launch
#      cost and kernel speed against the same kernels compiled in) into bench-runtime.log, and the
#      launch overhead from Python against CuPy's RawKernel (bench/python/launch_overhead.py, after
#      step 3b) into bench-launch.log
#   3g. with the fission translator carried (.whl/libclang-*.whl and the clang builtin headers in
#      .fres/, both kept out of git), the build above has the translator on (nvcc compiles the
#      translated kernel files: steps 1 and 2 run the GPU tests on them): `ctest -L fission` of
#      that build and the CPU kernel benchmark with twins on and off (DEVCTX_CPU_FISSION) into
#      fission.log
#   3b. the Python package built with CUDA (pip install ., no build isolation: the GPU
#      machine has no registry) and its pytest suite with DEVCTX_REQUIRE_GPU=1, PyTorch and CuPy
#      tests included (python/tests/test_gpu_interop.py)
#   4. compute-sanitizer memcheck, racecheck, initcheck and synccheck over every gpu-labelled test's command line
#      (found with `ctest -L gpu -LE "gpu_fault|fuzz|tools|nvtx|nccl" --show-only=json-v1`; the device-fault runs,
#      label gpu_fault, fault on purpose; the CUDA fuzzer run, label fuzz, and the tool's GPU
#      benchmark run, label tools, are too long under the sanitizers: 2-3 minutes together; the
#      NVTX check, label nvtx, loads its own NVTX injection library, which the sanitizer's would meet;
#      the NCCL tests, label nccl, are left out as NCCL's kernels synchronize through flags in memory
#      that racecheck/synccheck do not model - not yet tried under them)
# Every step's log goes to OUTDIR; a failed step does not stop the later ones. A summary table
# ends the output; the exit status is non-zero when any step failed.
#
# Environment: BUILD_DIR (default OUTDIR/build), DEVCTX_CUDA_ARCH (default 90), JOBS,
# STEP_TIMEOUT (seconds per step, default 1800),
# GPU_CHECK_SKIP (words among: ctest-gpu ctest-all consumer python frameworks cuda-bench fiber-bench
# transfers bench-plot trace peer allreduce tensor-bench cpu-bench pool-bench runtime-bench
# launch-bench fission sanitize-tests) to leave steps out,
# GPU_CHECK_TARGETS (targets to build instead of all, for a call that runs only some steps),
# GPU_CHECK_REUSE_BUILD=1 to build into an existing BUILD_DIR incrementally instead of afresh
# (a second call on a still-warm machine: e.g. only the sanitizers),
# DEVCTX_DLPACK_INCLUDE_DIR (a directory holding dlpack/dlpack.h; found by itself otherwise).
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

# A directory holding dlpack/dlpack.h: Debian's libdlpack-dev where installed, else the copy a
# Python package on the machine ships (CuPy, jaxlib), else PyTorch's ATen/dlpack.h reached
# through a one-line header generated in OUTDIR.
find_dlpack() {
  if [[ -n ${DEVCTX_DLPACK_INCLUDE_DIR:-} ]]; then echo "$DEVCTX_DLPACK_INCLUDE_DIR"; return; fi
  if [[ -f /usr/include/dlpack/dlpack.h ]]; then echo /usr/include; return; fi
  local found
  found=$(python3 - <<'PY' 2>/dev/null
import glob, importlib.util, os
for name in ("cupy", "jaxlib", "torch"):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        continue
    root = list(spec.submodule_search_locations)[0]
    for pattern in ("**/dlpack/dlpack.h", "**/ATen/dlpack.h"):
        hits = sorted(glob.glob(os.path.join(root, pattern), recursive=True))
        if hits:
            print(hits[0])
            raise SystemExit
PY
)
  [[ -z $found ]] && return
  if [[ $found == */dlpack/dlpack.h ]]; then dirname "$(dirname "$found")"; return; fi
  mkdir -p "$OUTDIR/dlpack-include/dlpack"
  printf '// Generated by scripts/gpu-check.sh: DLPack from %s\n#include "%s"\n' "$found" "$found" \
    >"$OUTDIR/dlpack-include/dlpack/dlpack.h"
  echo "$OUTDIR/dlpack-include"
}
DLPACK_DIR=$(find_dlpack)
echo "dlpack/dlpack.h from: ${DLPACK_DIR:-nowhere (the interop tests and the Python package need it)}"

# OpenSSL's headers (libcrypto's SHA-256 keys the runtime-kernel cache): the GPU machine has
# libcrypto.so.3 but no libssl-dev and no network. Where the headers are missing and a Debian
# libssl-dev .deb was carried in .ssl/ (kept out of git: .git/info/exclude), it is unpacked into
# OUTDIR and CMake is pointed at it and at the machine's own libcrypto.so.3.
find_openssl() {
  [[ -f /usr/include/openssl/sha.h ]] && return
  local deb lib
  deb=$(ls "$SRC"/.ssl/libssl-dev_*.deb 2>/dev/null | head -1)
  lib=$(ls /usr/lib/x86_64-linux-gnu/libcrypto.so.3 /lib/x86_64-linux-gnu/libcrypto.so.3 2>/dev/null | head -1)
  [[ -z $deb || -z $lib ]] && return
  dpkg-deb -x "$deb" "$OUTDIR/ssl" >/dev/null 2>&1 || return
  # The architecture's configuration headers next to the others: one include directory.
  cp -n "$OUTDIR"/ssl/usr/include/x86_64-linux-gnu/openssl/* "$OUTDIR/ssl/usr/include/openssl/" 2>/dev/null
  echo "-DOPENSSL_INCLUDE_DIR=$OUTDIR/ssl/usr/include -DOPENSSL_CRYPTO_LIBRARY=$lib"
}
OPENSSL_ARGS=$(find_openssl)
echo "OpenSSL headers: ${OPENSSL_ARGS:-from the system, or missing: then carry .ssl/libssl-dev_*.deb}"


# The fission translator, when carried: the libclang wheel installed into OUTDIR/fission-site (no
# registry here), the clang builtin headers from .fres/. The build translates its kernel files.
FISSION_ARGS=""
FISSION_WHEEL=$(ls "$SRC"/.whl/libclang-*.whl 2>/dev/null | head -1)
if [[ -n $FISSION_WHEEL && -d $SRC/.fres/include ]] &&
   python3 -m pip install --no-index --no-deps --target "$OUTDIR/fission-site" "$FISSION_WHEEL" >/dev/null; then
  printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$OUTDIR/fission-site" >"$OUTDIR/fission-python"
  chmod +x "$OUTDIR/fission-python"
  FISSION_ARGS="-DDEVCTX_FISSION_PYTHON=$OUTDIR/fission-python -DDEVCTX_FISSION_RESOURCE_DIR=$SRC/.fres"
fi
echo "fission translator: ${FISSION_ARGS:-not carried (.whl/libclang-*.whl, .fres/): off}"

configure() {
  # shellcheck disable=SC2086  # OPENSSL_ARGS, FISSION_ARGS: zero or two arguments
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DDEVCTX_ENABLE_CUDA=ON ${DLPACK_DIR:+-DDEVCTX_DLPACK_INCLUDE_DIR="$DLPACK_DIR"} $OPENSSL_ARGS $FISSION_ARGS "$@"
}

# The Python package with CUDA, into OUTDIR/python-site, and its tests with DEVCTX_REQUIRE_GPU=1.
python_tests() {
  local site=$OUTDIR/python-site status=0 a
  local openssl_pip=()  # OPENSSL_ARGS for pip's CMake run (cmake.define.NAME=VALUE)
  for a in $OPENSSL_ARGS; do openssl_pip+=("--config-settings=cmake.define.${a#-D}"); done
  rm -rf "$site"
  python3 -m pip install --no-build-isolation --no-deps --no-index --target "$site" \
    --config-settings=cmake.define.DEVCTX_ENABLE_CUDA=ON \
    --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="$ARCH" \
    ${DLPACK_DIR:+--config-settings=cmake.define.DEVCTX_DLPACK_INCLUDE_DIR="$DLPACK_DIR"} \
    "${openssl_pip[@]}" --config-settings=build-dir="$OUTDIR/python-build" "$SRC" || return 1
  cd "$SRC" && PYTHONPATH="$site" python3 -X faulthandler -m pytest -q -rs -p no:cacheprovider python/tests || status=$?
  [[ $status == 5 ]] && { echo "pytest collected no tests"; return 1; }
  if (( status > 128 )); then  # a crash: the native stack, under a debugger when there is one
    local gdb; gdb=$(command -v gdb || command -v cuda-gdb || true)
    [[ -n $gdb ]] && PYTHONPATH="$site" "$gdb" -batch -ex run -ex "thread apply all bt 12" --args \
      python3 -m pytest -q -x -p no:cacheprovider python/tests 2>&1 | tail -150
  fi
  return "$status"
}

# An outside project that takes devctx in with add_subdirectory, enables only CXX and sets
# CMAKE_CXX_STANDARD 20 (tests/consumers/add_subdirectory, issue 11's two failing cases), built
# with nvcc here and run on the GPU (its default device).
consumer() {
  local dir=$OUTDIR/consumer-add_subdirectory
  rm -rf "$dir"
  # shellcheck disable=SC2086
  cmake -S "$SRC/tests/consumers/add_subdirectory" -B "$dir" -G Ninja -DDEVCTX_SOURCE_DIR="$SRC" \
    -DCONSUMER_CXX20=ON -DCMAKE_BUILD_TYPE=Release $OPENSSL_ARGS || return 1
  cmake --build "$dir" -j "$JOBS" --target app || return 1
  "$dir/app" | tee "$dir/app.out"
  grep -q "PASSED app: .* on NVIDIA" "$dir/app.out"
}

# Pageable copies from NumPy: devctx's Python package next to PyTorch and CuPy (issue 13's second
# baseline), with the package python_tests installed.
frameworks() {
  [[ -d $OUTDIR/python-site ]] || { echo "the Python package was not built (python step)"; return 1; }
  PYTHONPATH="$OUTDIR/python-site" python3 "$SRC/bench/python/transfers_vs_frameworks.py"
}

# `devctx bench transfers` on the GPU: its table, JSON and the SVG plot for docs/observability.md.
bench_plot() {
  "$BUILD/tools/devctx" bench transfers --device cuda --plot "$OUTDIR/bench_transfers_gpu.svg" &&
    "$BUILD/tools/devctx" bench transfers --device cuda --json >"$OUTDIR/bench_transfers_gpu.json"
}

# The transfers benchmark, then the pipeline example at its default size (128 MiB in 16 chunks).
transfers() {
  local status=0
  "$BUILD/bench/cuda/devctx_bench_transfers" --4g || status=$?
  echo
  echo "==> examples/07_pipeline (default size)"
  "$BUILD/examples/07_pipeline" || status=$?
  return "$status"
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

export SRC BUILD ARCH OUTDIR DLPACK_DIR OPENSSL_ARGS FISSION_ARGS
# The trace of the demo against the demo's own CUDA events; the NVTX names under nsys if present.
trace_check() {
  local status=0 n=16777216
  python3 "$SRC/scripts/check_demo_trace.py" "$BUILD/tools/devctx" "$OUTDIR" --n "$n" || status=1
  "$BUILD/tools/devctx" trace summarize "$OUTDIR/demo_trace.json" || status=1
  "$BUILD/tools/devctx" trace timeline "$OUTDIR/demo_trace.json" --svg "$OUTDIR/demo_timeline.svg" || status=1
  if command -v nsys >/dev/null; then
    echo
    echo "== nsys with DEVCTX_NVTX=1"
    DEVCTX_NVTX=1 nsys profile -t cuda,nvtx --force-overwrite true -o "$OUTDIR/demo_nsys" \
      "$BUILD/tools/devctx" demo --n "$n" >/dev/null || status=1
    nsys stats --report nvtx_sum "$OUTDIR/demo_nsys.nsys-rep" | tee "$OUTDIR/demo_nvtx.txt" || status=1
    for name in vector_add scale block_sum "copy HtoD" "copy DtoH" synchronize; do
      grep -q "$name" "$OUTDIR/demo_nvtx.txt" || { echo "nsys: no NVTX range named '$name'"; status=1; }
    done
  elif [[ -f $BUILD/tests/libdevctx_nvtx_recorder.so ]]; then
    # No profiler: the tests' NVTX injection library (tests/nvtx/nvtx_recorder.cpp) records the
    # ranges NVTX hands a profiler, one line each: push<TAB>domain<TAB>name / pop<TAB>domain.
    echo
    echo "== nsys not installed: DEVCTX_NVTX=1 with the test NVTX injection library"
    rm -f "$OUTDIR/demo_nvtx.txt"
    DEVCTX_NVTX=1 NVTX_INJECTION64_PATH="$BUILD/tests/libdevctx_nvtx_recorder.so" \
      DEVCTX_NVTX_RECORD="$OUTDIR/demo_nvtx.txt" "$BUILD/tools/devctx" demo --n "$n" >/dev/null || status=1
    grep -P '^push\tdevctx\t' "$OUTDIR/demo_nvtx.txt" | cut -f3 | sed -E 's/ [0-9.]+ [KMG]iB \([0-9]+ bytes\)$| [0-9]+ bytes$/ <bytes>/' |
      sort | uniq -c | sort -rn || status=1
    local pushes pops
    pushes=$(grep -cP '^push\tdevctx\t' "$OUTDIR/demo_nvtx.txt")
    pops=$(grep -cP '^pop\tdevctx$' "$OUTDIR/demo_nvtx.txt")
    [[ $pushes == "$pops" && $pushes -gt 0 ]] || { echo "NVTX: $pushes devctx ranges pushed, $pops popped"; status=1; }
    for name in vector_add scale block_sum "copy HtoD .*bytes" "copy DtoH .*bytes" synchronize "free "; do
      grep -qP "^push\tdevctx\t.*$name" "$OUTDIR/demo_nvtx.txt" || { echo "NVTX: no devctx range named '$name'"; status=1; }
    done
  else
    echo "nsys not installed and the test NVTX injection library not built: NVTX names not checked"
  fi
  return $status
}

export -f environment configure sanitize python_tests transfers consumer trace_check frameworks bench_plot 2>/dev/null || true
step "environment" env.log environment

if [[ ${GPU_CHECK_REUSE_BUILD:-0} == 1 && -f $BUILD/build.ninja ]]; then
  skip "configure" "GPU_CHECK_REUSE_BUILD: building into $BUILD as it is"
else
  rm -rf "$BUILD"
  step "configure" configure.log configure
fi
if [[ ${RESULTS[-1]} != ok && ${RESULTS[-1]} != skipped* ]]; then
  # A missing test dependency should not hide the rest: try again without the tests.
  rm -rf "$BUILD"
  step "configure without tests" configure-notests.log configure -DDEVCTX_BUILD_TESTS=OFF
fi
# GPU_CHECK_TARGETS: build only these targets (a short call that runs a few steps), else all.
# shellcheck disable=SC2086  # a word list on purpose
step "build" build.log cmake --build "$BUILD" -j "$JOBS" ${GPU_CHECK_TARGETS:+--target $GPU_CHECK_TARGETS} -- -k 0

export DEVCTX_REQUIRE_GPU=1
if [[ -f $BUILD/CTestTestfile.cmake ]]; then
  if skipped ctest-gpu; then skip "ctest -L gpu" "GPU_CHECK_SKIP"
  else step "ctest -L gpu (DEVCTX_REQUIRE_GPU=1)" ctest-gpu.log \
    ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error; fi
  if skipped ctest-all; then skip "ctest (all)" "GPU_CHECK_SKIP"
  else step "ctest (all)" ctest-all.log ctest --test-dir "$BUILD" --output-on-failure -j 4; fi
else
  skip "ctest" "no tests configured"
fi
if skipped consumer; then skip "consumer" "GPU_CHECK_SKIP"
else step "consumer: add_subdirectory, CXX only, C++20, on the GPU" consumer.log consumer; fi
if skipped python; then skip "python package and tests" "GPU_CHECK_SKIP"
else step "python package and tests (DEVCTX_REQUIRE_GPU=1)" python.log python_tests; fi

if skipped python || skipped frameworks; then skip "pageable copies vs PyTorch and CuPy" "GPU_CHECK_SKIP"
else step "pageable copies from NumPy: devctx vs PyTorch and CuPy" bench-frameworks.log frameworks; fi

# Runtime-compiled kernels on the GPU, and their launch overhead from Python next to CuPy.
runtime_bench() {
  DEVCTX_DEVICE=cuda "$BUILD/bench/runtime/devctx_bench_runtime_kernels"
}
launch_bench() {
  [[ -d $OUTDIR/python-site ]] || { echo "the Python package was not built (python step)"; return 1; }
  PYTHONPATH="$OUTDIR/python-site" python3 "$SRC/bench/python/launch_overhead.py" --device cuda
}
# The fission translator on this host's CPU: the build's differential tests (twins compiled in
# nvcc's host pass) and the CPU kernel benchmark with twins on and off.
fission_check() {
  local status=0
  [[ -n $FISSION_ARGS ]] || { echo "no libclang wheel in .whl/ or headers in .fres/: not carried"; return 77; }
  grep -i "fission" "$OUTDIR/configure.log"
  ctest --test-dir "$BUILD" -L fission --output-on-failure -j 4 || status=1
  local bench=$BUILD/bench/cpu/devctx_bench_cpu_kernels
  if [[ -x $bench ]]; then
    for twins in 1 0 1; do
      echo; echo "==> DEVCTX_CPU_FISSION=$twins $bench --reps 9"
      DEVCTX_CPU_FISSION=$twins "$bench" --reps 9 || status=1
    done
  fi
  return "$status"
}
export -f runtime_bench launch_bench fission_check

# ---- the benchmarks -----------------------------------------------------------------------------------
BENCH=$BUILD/bench/cuda/devctx_bench_cuda
if skipped cuda-bench; then skip "cuda benchmark" "GPU_CHECK_SKIP"
elif [[ -x $BENCH ]]; then
  step "cuda benchmark (devctx vs raw CUDA)" bench-cuda.log "$BENCH"
else
  skip "cuda benchmark" "devctx_bench_cuda not built"
fi
FIBER_BENCH=$BUILD/bench/internal/devctx_bench_fiber_switch
if skipped fiber-bench; then skip "fiber switch benchmark" "GPU_CHECK_SKIP"
elif [[ -x $FIBER_BENCH ]]; then
  step "fiber switch: assembly vs Boost.Context" bench-fiber.log "$FIBER_BENCH" --reps 9 --switches 5000000
else
  skip "fiber switch benchmark" "not built (needs Boost.Context)"
fi
if skipped transfers; then skip "transfers benchmark" "GPU_CHECK_SKIP"
elif [[ -x $BUILD/bench/cuda/devctx_bench_transfers ]]; then
  step "transfers benchmark and pipeline example" bench-transfers.log transfers
else
  skip "transfers benchmark" "devctx_bench_transfers not built"
fi
if skipped bench-plot; then skip "devctx bench transfers --plot" "GPU_CHECK_SKIP"
elif [[ -x $BUILD/tools/devctx ]]; then
  step "devctx bench transfers on the GPU, its plot" bench-plot.log bench_plot
else
  skip "devctx bench transfers --plot" "the devctx tool not built"
fi
if skipped trace; then skip "trace of devctx demo" "GPU_CHECK_SKIP"
elif [[ -x $BUILD/tools/devctx ]]; then
  step "trace of devctx demo vs CUDA events (5%), NVTX under nsys" trace.log trace_check
else
  skip "trace of devctx demo" "the devctx tool not built"
fi
# Copies between two GPUs (docs/scale-out.md): only on a machine with two (nvidia-h200-x2).
PEER_BENCH=$BUILD/bench/cuda/devctx_bench_peer
GPUS=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
if skipped peer; then skip "peer copy benchmark" "GPU_CHECK_SKIP"
elif [[ -x $PEER_BENCH && $GPUS -ge 2 ]]; then
  step "peer copy benchmark (devctx vs cudaMemcpyPeerAsync, 2 GPUs)" bench-peer.log "$PEER_BENCH"
else
  skip "peer copy benchmark" "needs devctx_bench_peer and two GPUs ($GPUS present)"
fi
# All-reduce through the NCCL engine against ncclAllReduce called directly (docs/scale-out.md):
# with one GPU it measures the cost of a call only; with two, bus bandwidth too (nvidia-h200-x2).
ALLREDUCE_BENCH=$BUILD/bench/cuda/devctx_bench_allreduce
if skipped allreduce; then skip "all-reduce benchmark" "GPU_CHECK_SKIP"
elif [[ -x $ALLREDUCE_BENCH ]]; then
  step "all-reduce benchmark (devctx vs ncclAllReduce, $GPUS GPU(s))" bench-allreduce.log "$ALLREDUCE_BENCH"
else
  skip "all-reduce benchmark" "devctx_bench_allreduce not built (no NCCL found)"
fi
# LayoutTensor against flat indexing (tiled matmul, target within 2% on the GPU) and a
# devctx::Graph replay against a raw CUDA graph (target <= 1.1x), issue 14.
tensor_graph() {
  local status=0
  "$BUILD/bench/tensor/devctx_bench_tensor" || status=$?
  echo
  "$BUILD/bench/cuda/devctx_bench_graph" || status=$?
  return "$status"
}
export -f tensor_graph
if skipped tensor-bench; then skip "tensor and graph benchmarks" "GPU_CHECK_SKIP"
elif [[ -x $BUILD/bench/tensor/devctx_bench_tensor && -x $BUILD/bench/cuda/devctx_bench_graph ]]; then
  step "tensor vs flat matmul, graph replay vs raw CUDA graph" bench-tensor.log tensor_graph
else
  skip "tensor and graph benchmarks" "not built"
fi
# The kernels benchmark by its exact name: other devctx_bench_cpu_* programs (costs, pool) exist.
CPU_BENCH=$(find "$BUILD/bench" -maxdepth 2 -type f -name 'devctx_bench_cpu_kernels' -perm -u+x 2>/dev/null | head -1)
if skipped cpu-bench; then
  skip "cpu benchmark" "GPU_CHECK_SKIP"
elif [[ -n $CPU_BENCH ]]; then
  step "cpu benchmark" bench-cpu.log "$CPU_BENCH"
else
  skip "cpu benchmark" "not built"
fi
# The CPU backend's worker pool against OpenMP on this host's cores (issue 13 item 4): vector add,
# empty launch + synchronize (all, 1 and 2 workers), 256 MiB copy and memset; ratios and targets.
POOL_BENCH=$BUILD/bench/cpu/devctx_bench_cpu_pool
if skipped pool-bench; then skip "cpu pool benchmark" "GPU_CHECK_SKIP"
elif [[ -x $POOL_BENCH ]]; then
  step "cpu pool benchmark (devctx workers vs OpenMP)" bench-cpu-pool.log "$POOL_BENCH"
else
  skip "cpu pool benchmark" "not built"
fi

if skipped runtime-bench; then skip "runtime kernels benchmark" "GPU_CHECK_SKIP"
elif [[ -x $BUILD/bench/runtime/devctx_bench_runtime_kernels ]]; then
  step "runtime-compiled kernels on the GPU vs compiled in" bench-runtime.log runtime_bench
else
  skip "runtime kernels benchmark" "not built"
fi
if skipped python || skipped launch-bench; then skip "launch overhead from Python" "GPU_CHECK_SKIP"
else step "launch overhead from Python: devctx vs CuPy RawKernel" bench-launch.log launch_bench; fi
if skipped fission; then skip "fission translator on this host's CPU" "GPU_CHECK_SKIP"
else step "fission translator: ctest -L fission, CPU kernels" fission.log fission_check; fi

# ---- compute-sanitizer over the gpu tests' own command lines ------------------------------------
# Prints one line per gpu test but the device-fault runs: NAME<US>ENV1 ENV2...<US>COMMAND ARGS...,
# fields separated by the unit separator (0x1f): unlike a tab, `read` does not merge two of them,
# so an empty ENV field (a test without environment) stays a field.
gpu_test_commands() {
  ctest --test-dir "$BUILD" -L gpu -LE "gpu_fault|fuzz|tools|nvtx|nccl" --show-only=json-v1 2>/dev/null | python3 -c '
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
for log in bench-cuda.log bench-transfers.log; do
  if [[ -f $OUTDIR/$log ]]; then
    echo
    grep -E 'MISSED|targets? missed|WRONG' "$OUTDIR/$log" | sed "s/^/$log: /" || true
  fi
done
echo
if [[ $FAILED != 0 ]]; then
  echo "gpu-check: FAILED"
  exit 1
fi
echo "gpu-check: all steps passed"
