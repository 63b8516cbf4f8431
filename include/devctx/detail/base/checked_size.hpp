// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/checked_size.hpp - overflow-checked size arithmetic: the one way devctx
// multiplies, adds or rounds a count that a user gave. Each returns std::nullopt where the
// exact result does not fit in std::size_t, so no size can silently wrap around (a wrapped
// byte count would back a large buffer with a small block of memory). Used by the public
// templates (slices) and by src/core (allocations, copies, launches), which turns a nullopt
// into a devctx::Error naming the operation and the sizes.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/checked_size.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/buffer.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

namespace devctx::detail {

/// a + b, or nullopt when it does not fit.
[[nodiscard]] constexpr std::optional<std::size_t> checked_add(std::size_t a, std::size_t b) noexcept {
  if (a > std::numeric_limits<std::size_t>::max() - b) return std::nullopt;
  return a + b;
}

/// a * b, or nullopt when it does not fit.
[[nodiscard]] constexpr std::optional<std::size_t> checked_mul(std::size_t a, std::size_t b) noexcept {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) return std::nullopt;
  return a * b;
}

/// The smallest multiple of `multiple` (non-zero) that is at least `value`, or nullopt when it
/// does not fit.
[[nodiscard]] constexpr std::optional<std::size_t> checked_round_up(std::size_t value, std::size_t multiple) noexcept {
  if (multiple == 0) return std::nullopt;
  const std::size_t rest = value % multiple;
  if (rest == 0) return value;
  return checked_add(value, multiple - rest);
}

}  // namespace devctx::detail
