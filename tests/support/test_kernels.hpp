// SPDX-License-Identifier: Apache-2.0
// tests/support/test_kernels.hpp - the small kernels that several test files launch. They are
// inline so that each file that includes them (and, with CUDA, each nvcc translation unit) has
// its own copy of the same definition. They live in the global namespace, as users' kernels
// usually do, so that messages name them as users would see theirs ("enqueue_function<write_marker>").
#pragma once

#include <cstdint>

#include <devctx/devctx.hpp>

/// out[i] = base + i.
DEVCTX_KERNEL inline void iota_kernel(devctx::span<std::uint32_t> out, std::uint32_t base) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = base + std::uint32_t(i);
}

/// data[i] += value.
DEVCTX_KERNEL inline void add_kernel(devctx::span<std::uint32_t> data, std::uint32_t value) {
  const auto i = devctx::global_idx().x;
  if (i < data.size()) data[i] += value;
}

/// out[i] = in[i] * mul + add: reads one buffer, writes another (ordering between them matters).
DEVCTX_KERNEL inline void affine_kernel(devctx::span<const std::uint32_t> in, devctx::span<std::uint32_t> out,
                                        std::uint32_t mul, std::uint32_t add) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = in[i] * mul + add;
}

/// out[i] = marker.
DEVCTX_KERNEL inline void write_marker(devctx::span<unsigned> out, unsigned marker) {
  const auto i = devctx::global_idx().x;
  if (i < out.size()) out[i] = marker;
}
