// src/backends/cpu/fiber.hpp - the cheapest possible switch between GPU threads of one block.
//
// A fiber is a stack and a saved stack pointer. Switching saves the callee-saved registers on
// the current stack and loads the other fiber's: about 15 instructions and no system call.
// Unlike Boost.Context's fcontext it does not save the floating-point control words (MXCSR,
// x87), which costs several cycles per switch; all fibers of a block share the kernel's FP
// environment, so there is nothing to preserve. A kernel must not change the rounding mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace devctx::detail::cpu {

/// Stack pointer of a suspended fiber.
using FiberSp = void*;

/// Saves the current context into *save and resumes the fiber whose stack pointer is `load`.
extern "C" void devctx_fiber_switch(FiberSp* save, FiberSp load);

/// Saves the current context into *save, then calls entry(arg) on the fresh stack ending at `top`
/// (16-byte aligned). `entry` must never return: it leaves with devctx_fiber_jump. Starting a
/// fiber this way writes nothing to its stack beforehand and calls `entry` directly, so the
/// return-address predictor is not misled as it would be by "returning" into a new fiber.
extern "C" void devctx_fiber_launch(FiberSp* save, void* top, void (*entry)(void*), void* arg);

/// Prepares a fiber on the fresh stack ending at `top` (16-byte aligned) so that switching to
/// the returned stack pointer calls entry(arg) there. Used where a fiber must start from the same
/// path as every other resumption.
FiberSp fiber_prepare(void* top, void (*entry)(void*), void* arg) noexcept;

/// Makes the suspended fiber at `sp` throw (a BlockAbort, see block_executor.hpp) from the call
/// it is suspended in, instead of returning from it, when it is next resumed. A frame made by
/// fiber_prepare is left as it is: its entry must check for the abort itself.
void fiber_arm_abort(FiberSp sp) noexcept;

/// Resumes the fiber whose stack pointer is `load`, saving nothing (the caller has finished).
extern "C" [[noreturn]] void devctx_fiber_jump(FiberSp load);

/// Parks the calling fiber, whose GPU thread has finished (`executor` is its BlockExecutor):
/// saves its frame and resumes the one that BlockExecutor::park chooses. Returns when the fiber
/// is resumed for its thread in the next block. Only BlockExecutor's thread loop calls it.
extern "C" void devctx_fiber_park(const void* executor);

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
