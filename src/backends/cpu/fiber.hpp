// src/backends/cpu/fiber.hpp - the stacks fibers run on: one reserved region per worker, a
// power-of-two slot per stack, a guard page below each. How fibers switch between them is in
// fiber_switch.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/fiber_switch.hpp"

namespace devctx::detail::cpu {

/// Stacks owned by one worker, reused by every block it runs, so they stay in cache.
///
/// All stacks lie in one reserved region, slot i at base + i * slot_bytes() with slot_bytes() a
/// power of two and a guard page at the bottom of each slot. So the running fiber's stack number
/// is its stack pointer's offset in the region shifted right: the barrier finds out which GPU
/// thread is running from a register, without a load that waits for the previous switch.
class StackPool {
 public:
  /// `stack_bytes` usable bytes per stack (rounded up so that a slot with its guard page is a
  /// power of two), for at most `count` stacks. Only address space is reserved here.
  StackPool(std::size_t stack_bytes, std::size_t count);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  /// Top of stack number i (its guard page is set up on first use). Tops are staggered by a
  /// cache line per stack so that the hot frames of different fibers fall into different cache
  /// sets.
  void* top(std::size_t i) { return i < tops_.size() ? tops_[i] : grow(i); }
  /// Stack number i as the switch takes it: from above its guard page up to top(i).
  [[nodiscard]] FiberStack stack(std::size_t i) {
    void* const t = top(i);
    return {reinterpret_cast<void*>(base_ + (i << shift_) + page_), t};
  }
  /// Stack i occupies [base() + i * 2^shift(), base() + (i + 1) * 2^shift()).
  [[nodiscard]] std::uintptr_t base() const noexcept { return base_; }
  [[nodiscard]] unsigned shift() const noexcept { return shift_; }
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return std::size_t{1} << shift_; }

 private:
  void* grow(std::size_t i);

  std::size_t page_;
  unsigned shift_ = 0;
  std::size_t count_ = 0;
  void* region_ = nullptr;
  std::size_t region_bytes_ = 0;
  std::uintptr_t base_ = 0;
  std::vector<void*> tops_;
};

}  // namespace devctx::detail::cpu
