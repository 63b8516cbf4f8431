// SPDX-License-Identifier: Apache-2.0
// bench/support/clock.hpp - the benchmarks' host clock: steady_clock, and the time since a
// point in seconds or microseconds.
#pragma once

#include <chrono>

namespace devctx_bench {

using Clock = std::chrono::steady_clock;

/// Seconds from `t0` to now.
[[nodiscard]] inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Microseconds from `t0` to now.
[[nodiscard]] inline double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

/// Seconds one call of `f` takes.
template <class F>
[[nodiscard]] double seconds_of(F&& f) {
  const auto t0 = Clock::now();
  f();
  return seconds_since(t0);
}

}  // namespace devctx_bench
