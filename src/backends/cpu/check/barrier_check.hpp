// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/check/barrier_check.hpp - checking mode's barrier divergence rules for one
// block, fed by the executor as threads arrive at barriers and return.
//
// What counts as divergence (docs/checking.md):
//  * threads that wait at the same barrier from different barrier() calls (source locations);
//  * a thread that returns after taking part in at least one barrier while another thread of its
//    block waits at, or later reaches, a further barrier.
// A thread that returns before its first barrier is not divergence: CUDA lets a barrier skip
// exited threads, and `if (i >= n) return;` before a kernel's shared-memory work relies on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace devctx::detail::cpu::check {

/// Where a barrier() call is in the kernel's source (from detail::SourceSite).
struct BarrierSite {
  std::string_view file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  friend bool operator==(const BarrierSite&, const BarrierSite&) = default;
};

/// "kernels.cpp:52:5"
[[nodiscard]] std::string describe(const BarrierSite& site);

struct Divergence {
  enum class Kind : std::uint8_t {
    exited,           ///< `other` returned after `other_passed` barriers while `waiting` waits
    different_sites,  ///< `waiting` and `other` wait at the same barrier from different calls
  };
  Kind kind = Kind::exited;
  std::uint32_t barrier = 0;  ///< 1-based number of the barrier waited at, counted in the block
  std::uint32_t waiting = 0;  ///< a thread waiting at it
  BarrierSite waiting_site;
  std::uint32_t other = 0;
  std::uint32_t other_passed = 0;
  BarrierSite other_site;
};

class BarrierCheck {
 public:
  /// A block of `threads` threads starts: none has passed a barrier.
  void begin_block(std::uint32_t threads);
  /// Thread `rank` arrives at a barrier from `site`.
  [[nodiscard]] std::optional<Divergence> arrive(std::uint32_t rank, const BarrierSite& site);
  /// Every live thread has arrived: the barrier is passed.
  void complete() noexcept;
  /// Thread `rank` returned from the kernel.
  [[nodiscard]] std::optional<Divergence> exit(std::uint32_t rank);
  /// Barriers the block has passed.
  [[nodiscard]] std::uint32_t completed() const noexcept { return completed_; }
  /// The call site of the last barrier passed (empty when none was).
  [[nodiscard]] const BarrierSite& last_site() const noexcept { return last_site_; }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::vector<std::uint32_t> passed_;  // barriers each thread arrived at
  std::uint32_t completed_ = 0;
  bool open_ = false;  // some thread waits at barrier completed_ + 1
  std::uint32_t open_first_ = 0;
  BarrierSite open_site_;
  BarrierSite last_site_;
  std::uint32_t exited_ = kNone;  // a thread that returned after taking part in a barrier
};

}  // namespace devctx::detail::cpu::check
