// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber.hpp - the stacks fibers run on: one region per executor, reserved when a
// launch needs it and as large as its blocks need, a power-of-two slot per stack, a guard region
// below each. How fibers switch between them is in fiber_switch.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/fiber_switch.hpp"

namespace devctx::detail::cpu {

/// Stacks owned by one executor, reused by every block it runs, so they stay in cache.
///
/// All stacks lie in one reserved region, slot i at base + i * slot_bytes() with slot_bytes() a
/// power of two. So the running fiber's stack number is its stack pointer's offset in the region
/// shifted right: the barrier finds out which GPU thread is running from a register, without a
/// load that waits for the previous switch.
///
/// Each slot holds one stack of at least `stack_bytes` (DEVCTX_CPU_STACK_BYTES) at its top and a
/// guard region of at least 32 KiB below it, which faults when touched: a stack that overflows
/// faults there instead of running into the stack below, and so does a single frame up to the
/// guard's size (kernels built with -fstack-clash-protection touch every page of a larger frame
/// in order, so they fault in the guard whatever their frame's size).
class StackPool {
 public:
  /// Stacks of at least `stack_bytes` usable bytes. Reserves nothing yet.
  explicit StackPool(std::size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  /// Makes stacks 0..count-1 available. A pool with fewer releases its region first (only
  /// address space: call it when no fiber runs on it) and reserves one for `count`; a pool with
  /// as many or more keeps its stacks. Throws Error(out_of_memory) naming the size when the
  /// address space cannot be reserved; the pool then holds no stacks.
  void reserve(std::size_t count);

  /// Top of stack number i < the reserved count (its guard is set up on first use; throws
  /// Error(out_of_memory) if that fails). Tops are staggered by a cache line per stack so that
  /// the hot frames of different fibers fall into different cache sets.
  void* top(std::size_t i) { return i < tops_.size() ? tops_[i] : grow(i); }
  /// Stack number i as the switch takes it: from above its guard up to top(i).
  [[nodiscard]] FiberStack stack(std::size_t i) {
    void* const t = top(i);
    return {reinterpret_cast<void*>(base_ + (i << shift_) + guard_bytes_), t};
  }

  /// Stack i occupies [base() + i * 2^shift(), base() + (i + 1) * 2^shift()).
  [[nodiscard]] std::uintptr_t base() const noexcept { return base_; }
  [[nodiscard]] unsigned shift() const noexcept { return shift_; }
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return std::size_t{1} << shift_; }
  [[nodiscard]] std::size_t stack_bytes() const noexcept { return stack_bytes_; }
  [[nodiscard]] std::size_t guard_bytes() const noexcept { return guard_bytes_; }
  /// Stacks the region has room for now (0 before the first reserve()).
  [[nodiscard]] std::size_t reserved() const noexcept { return count_; }

  /// Whether `address` lies in the guard region of a stack in use. Async-signal-safe: the
  /// SIGSEGV handler (stack_overflow.cpp) asks it on the faulting thread.
  [[nodiscard]] bool in_guard(std::uintptr_t address) const noexcept {
    return address >= base_ && address - base_ < tops_.size() * slot_bytes() &&
           ((address - base_) & (slot_bytes() - 1)) < guard_bytes_;
  }

 private:
  void* grow(std::size_t i);
  void release() noexcept;

  std::size_t page_;
  std::size_t stack_bytes_;
  std::size_t guard_bytes_ = 0;
  unsigned shift_ = 0;
  std::size_t count_ = 0;
  void* region_ = nullptr;
  std::size_t region_bytes_ = 0;
  std::uintptr_t base_ = 0;
  std::vector<void*> tops_;  // capacity count_: top() never allocates
};

}  // namespace devctx::detail::cpu
