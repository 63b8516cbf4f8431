// SPDX-License-Identifier: Apache-2.0
// tests/split_kernels/kernels.hpp - kernels declared in a header, defined in kernels.cpp and
// launched from launch_test.cpp, as a project that keeps its kernels in files of their own does
// (docs/guide.md, "Kernels in several files").
#pragma once

#include <devctx/devctx.hpp>

namespace split {

constexpr unsigned kTile = 64;

/// y[i] = a * x[i] + y[i] for i < n.
DEVCTX_KERNEL void saxpy(float a, const float* x, float* y, unsigned n);
/// Each block of kTile threads writes its tile of `in` reversed into `out` (through shared memory).
DEVCTX_KERNEL void reverse_tiles(devctx::span<const int> in, devctx::span<int> out);

}  // namespace split
