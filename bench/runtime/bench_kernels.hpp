// SPDX-License-Identifier: Apache-2.0
// bench/runtime/bench_kernels.hpp - the kernels runtime_kernels_bench runs twice: compiled in
// (compiled_in.cpp includes this file) and compiled at run time (Module::from_file of this file).
#pragma once

#include <devctx/kernel.hpp>

DEVCTX_KERNEL void bench_noop(devctx::span<float> out, float value) {
  if (devctx::global_idx().x == 0 && out.size() == 0) out[0] = value;
}

DEVCTX_KERNEL void bench_block_sum(devctx::span<const float> in, devctx::span<float> out) {
  DEVCTX_SHARED(float, tile, 256);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  tile[t] = i < in.size() ? in[i] : 0.0f;
  devctx::barrier();
  for (unsigned s = devctx::block_dim().x / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = tile[0];
}

DEVCTX_KERNEL void bench_saxpy(float a, devctx::span<const float> x, devctx::span<float> y) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = a * x[i] + y[i];
}
