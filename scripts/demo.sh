#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up a fresh machine, builds devctx and runs the main demo on the default device
# (DEVCTX_DEVICE if set, else the first CUDA GPU, else the CPU).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVCTX_BUILD_TESTS=OFF -DDEVCTX_BUILD_BENCH=OFF -DDEVCTX_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build --target devctx_tool
./build/tools/devctx demo "$@"
