// SPDX-License-Identifier: Apache-2.0
// bench/runtime/bench_kernels.hpp - the kernels without barriers runtime_kernels_bench runs twice:
// compiled in (compiled_in.cpp includes this file) and compiled at run time (Module::from_file of
// this file). The barrier reduction is in reduction_kernel.cpp, a kernel file of its own, which
// the fission translator processes when compiled in as it does at run time.
#pragma once

#include <devctx/kernel.hpp>

DEVCTX_KERNEL void bench_noop(devctx::span<float> out, float value) {
  if (devctx::global_idx().x == 0 && out.size() == 0) out[0] = value;
}

DEVCTX_KERNEL void bench_saxpy(float a, devctx::span<const float> x, devctx::span<float> y) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = a * x[i] + y[i];
}
