// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/launch_types.hpp - Dim3, Idx3 and LaunchConfig, the launch's value types.
// Public names (devctx::Dim3, ...; users include <devctx/launch.hpp>) kept in the base layer
// because the seam and the CPU executor's per-thread state, below every public header, hold them.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/launch_types.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/launch.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/config.hpp>

namespace devctx {

/// Grid or block dimensions. Built from one integer (`Dim3{256}` is 256x1x1) or from {x, y, z}.
struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;

  constexpr Dim3() = default;
  DEVCTX_HD constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}

  /// x * y * z, computed in 64 bits: exact for every grid and block a device accepts (core
  /// checks each dimension against the device's limits before it uses a volume; only
  /// dimensions near 2^32 in all three axes could exceed 64 bits).
  [[nodiscard]] DEVCTX_HD constexpr std::uint64_t volume() const { return std::uint64_t(x) * y * z; }
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

/// A 64-bit 3-D index, as returned by devctx::global_idx().
struct Idx3 {
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  std::uint64_t z = 0;
  friend constexpr bool operator==(const Idx3&, const Idx3&) = default;
};

/// How a kernel is launched: `{.grid_dim = blocks, .block_dim = 256, .shared_bytes = 0}`.
/// `shared_bytes` is the dynamic shared memory per block (see devctx::dynamic_shared).
struct LaunchConfig {
  Dim3 grid_dim;
  Dim3 block_dim;
  std::size_t shared_bytes = 0;
};

}  // namespace devctx
