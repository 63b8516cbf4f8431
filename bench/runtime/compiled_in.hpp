// SPDX-License-Identifier: Apache-2.0
// bench/runtime/compiled_in.hpp - launches of bench_kernels.hpp's kernels (compiled_in.cpp) and
// of reduction_kernel.cpp's, compiled into the program.
#pragma once

#include <devctx/devctx.hpp>

void launch_noop(devctx::StreamRef s, devctx::DeviceBuffer<float>& out);
void launch_block_sum(devctx::StreamRef s, const devctx::LaunchConfig& c, const devctx::DeviceBuffer<float>& in,
                      devctx::DeviceBuffer<float>& out);
void launch_saxpy(devctx::StreamRef s, const devctx::LaunchConfig& c, const devctx::DeviceBuffer<float>& x,
                  devctx::DeviceBuffer<float>& y);
