// SPDX-License-Identifier: Apache-2.0
// tests/split_kernels/kernels.cpp - the definitions of the kernels kernels.hpp declares; nothing
// here launches them (launch_test.cpp does).
#include "split_kernels/kernels.hpp"

namespace split {

DEVCTX_KERNEL void saxpy(float a, const float* x, float* y, unsigned n) {
  const std::size_t i = devctx::global_idx().x;
  if (i < n) y[i] = a * x[i] + y[i];
}

DEVCTX_KERNEL void reverse_tiles(devctx::span<const int> in, devctx::span<int> out) {
  DEVCTX_SHARED(int, tile, kTile);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t base = std::size_t(devctx::block_idx().x) * kTile;
  tile[t] = in[base + t];
  devctx::barrier();
  out[base + t] = tile[kTile - 1 - t];
}

}  // namespace split
