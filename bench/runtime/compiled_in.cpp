// SPDX-License-Identifier: Apache-2.0
// bench/runtime/compiled_in.cpp - bench_kernels.hpp compiled into the program, and the launches
// of its kernels the benchmark compares runtime-compiled launches with.
#include "compiled_in.hpp"

#include "bench_kernels.hpp"

void launch_noop(devctx::StreamRef s, devctx::DeviceBuffer<float>& out) {
  s.enqueue_function<bench_noop>({.grid_dim = 1, .block_dim = 32}, out, 1.0f);
}
void launch_saxpy(devctx::StreamRef s, const devctx::LaunchConfig& c, const devctx::DeviceBuffer<float>& x,
                  devctx::DeviceBuffer<float>& y) {
  s.enqueue_function<bench_saxpy>(c, 2.0f, x, y);
}
