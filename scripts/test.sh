#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite:
#  1. a build with the CUDA backend (when nvcc is found): every kernel compiles with nvcc, the
#     tests run on the CPU backend, and GPU tests skip unless a GPU is present
#     (DEVCTX_REQUIRE_GPU=1 makes a missing GPU a failure);
#  2. a CPU-only build with the C++ compiler alone;
#  3. the examples built as an outside project against the installed package (find_package);
#  4. every way a project takes devctx in (find_package, add_subdirectory, FetchContent, also with
#     FIND_PACKAGE_ARGS; CMake 3.25 and a current one from PyPI; with and without nvcc), a shared
#     libdevctx (Debian layout, dlopen), pkg-config and the Conan recipe (tests/consumers/run.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
jobs=$(nproc)
configs=(cpu)
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  configs=(cuda cpu)
else
  echo "test: nvcc not found: building the CPU-only configuration only"
fi
for config in "${configs[@]}"; do
  dir="build-test-$config"
  cuda=OFF; [ "$config" = cuda ] && cuda=ON
  echo "== configuration $config (DEVCTX_ENABLE_CUDA=$cuda)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVCTX_ENABLE_CUDA=$cuda \
    -DDEVCTX_WARNINGS_AS_ERRORS=ON >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
echo "== examples as an outside consumer (find_package(devctx))"
bash examples/consumer-check.sh "build-test-${configs[0]}" build-test-consumer

# ---- step 4: CMake routes, shared library and packaging, as outside consumers --------------------
echo "== CMake routes, shared library, pkg-config and Conan (tests/consumers/run.sh)"
cuda_build=()
[ "${configs[0]}" = cuda ] && cuda_build=(build-test-cuda)
bash tests/consumers/run.sh build-test-consumers build-test-cpu "${cuda_build[@]}"
