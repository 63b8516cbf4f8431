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

}  // namespace devctx::detail::cpu
