// src/backends/cpu/fiber.hpp - the cheapest possible switch between GPU threads of one block.
//
// A fiber is a stack and a saved stack pointer. Switching saves the callee-saved registers on
// the current stack and loads the other fiber's: about 15 instructions and no system call.
// Unlike Boost.Context's fcontext it does not save the floating-point control words (MXCSR,
// x87), which costs several cycles per switch; all fibers of a block share the kernel's FP
// environment, so there is nothing to preserve. A kernel must not change the rounding mode.
#pragma once

#include <cstddef>
#include <vector>

namespace devctx::detail::cpu {

/// Stack pointer of a suspended fiber.
using FiberSp = void*;

/// Saves the current context into *save and resumes the fiber whose stack pointer is `load`.
extern "C" void devctx_fiber_switch(FiberSp* save, FiberSp load);

/// Prepares a fresh fiber on the stack ending at `top`: when first resumed it calls
/// entry(arg). `entry` must never return (it switches away for good instead).
FiberSp fiber_prepare(void* top, void (*entry)(void*), void* arg) noexcept;

/// Stacks owned by one worker, reused by every block it runs, so they stay in cache.
class StackPool {
 public:
  explicit StackPool(std::size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  /// Top of stack number i (allocated on first use, with a guard page below it). Tops are
  /// staggered by a cache line per stack so that the hot frames of different fibers fall into
  /// different cache sets.
  void* top(std::size_t i) { return i < tops_.size() ? tops_[i] : grow(i); }
  [[nodiscard]] std::size_t stack_bytes() const noexcept { return stack_bytes_; }

 private:
  void* grow(std::size_t i);

  std::size_t page_;
  std::size_t stack_bytes_;
  std::vector<void*> regions_;  // mmap'ed, guard page first
  std::vector<void*> tops_;
};

}  // namespace devctx::detail::cpu
