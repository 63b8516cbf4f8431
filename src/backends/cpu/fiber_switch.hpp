// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_switch.hpp - the switch between fibers that the executor uses, whichever
// implementation was configured, and the macros saying which one it is.
//
// CMake (cmake/devctxFiber.cmake, option DEVCTX_FIBER) defines exactly one of
//   DEVCTX_FIBER_X86_64   fiber_x86_64.cpp: assembly, plus barrier() and the park in assembly
//   DEVCTX_FIBER_AARCH64  fiber_aarch64.cpp: assembly
//   DEVCTX_FIBER_BOOST    fiber_boost.cpp: Boost.Context's fcontext, for any other architecture
// on the devctx target. A build with AddressSanitizer or ThreadSanitizer routes every switch
// through fiber_annotated.cpp, which tells the sanitizer about it (DEVCTX_FIBER_ANNOTATED).
//
// The assembly barrier of x86-64 reads the executor's state at fixed offsets and switches
// without a call into C++; everywhere else (DEVCTX_FIBER_FAST_BARRIER unset) barrier() and the
// park are C++ built on fiber_switch(), and a fiber resumed while its block aborts finds out
// from the executor's flag instead of having its frame rewritten (fiber_arm_abort).
#pragma once

#include <cstddef>

#if !defined(DEVCTX_FIBER_X86_64) && !defined(DEVCTX_FIBER_AARCH64) && !defined(DEVCTX_FIBER_BOOST)
#error "no fiber implementation configured: the devctx target defines DEVCTX_FIBER_<X86_64|AARCH64|BOOST>"
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DEVCTX_FIBER_ANNOTATED 1
#endif
#endif
#if !defined(DEVCTX_FIBER_ANNOTATED) && (defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__))
#define DEVCTX_FIBER_ANNOTATED 1
#endif
#if !defined(DEVCTX_FIBER_ANNOTATED)
#define DEVCTX_FIBER_ANNOTATED 0
#endif

// DEVCTX_FIBER_FIRST_FRAME marks the functions that are a fiber's outermost frames in sanitizer
// builds (see fiber_finish): ThreadSanitizer keeps a shadow call stack per fiber that every
// instrumented function pushes to on entry and pops on return, and such frames never return. Not
// instrumenting them leaves a finished fiber's shadow stack empty, so that the next fiber on the
// same stack can reuse its TSan fiber. GCC's no_sanitize("thread") removes the function's entry
// and exit hooks; clang's keeps them, but its disable_sanitizer_instrumentation does not.
#if DEVCTX_FIBER_ANNOTATED && defined(__clang__)
#if __has_attribute(disable_sanitizer_instrumentation)
#define DEVCTX_FIBER_FIRST_FRAME __attribute__((disable_sanitizer_instrumentation))
#define DEVCTX_FIBER_BALANCED 1
#endif
#elif DEVCTX_FIBER_ANNOTATED && defined(__GNUC__)
#define DEVCTX_FIBER_FIRST_FRAME __attribute__((no_sanitize("thread")))
#define DEVCTX_FIBER_BALANCED 1
#endif
#if !defined(DEVCTX_FIBER_FIRST_FRAME)
#define DEVCTX_FIBER_FIRST_FRAME
#define DEVCTX_FIBER_BALANCED 0
#endif

#if defined(DEVCTX_FIBER_X86_64) && !DEVCTX_FIBER_ANNOTATED
#define DEVCTX_FIBER_FAST_BARRIER 1
#else
#define DEVCTX_FIBER_FAST_BARRIER 0
#endif

namespace devctx::detail::cpu {

/// A suspended fiber, as the implementation saved it (a stack pointer for the assembly).
using FiberSp = void*;

/// A fiber's stack: usable bytes [bottom, top), top 16-byte aligned.
struct FiberStack {
  void* bottom;
  void* top;
};

// ---- the implementation's switch, unannotated ---------------------------------------------------

/// Saves the running fiber into *save and resumes `load`.
extern "C" void devctx_fiber_switch(FiberSp* save, FiberSp load);
/// Resumes `load`, saving nothing: the running fiber has finished.
extern "C" [[noreturn]] void devctx_fiber_jump(FiberSp load);
/// Saves the running fiber into *save and calls entry(arg) on `stack`; entry never returns (it
/// leaves with a jump).
void raw_fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg);
/// A fiber on `stack` that calls entry(arg) when first resumed; entry never returns.
[[nodiscard]] FiberSp raw_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) noexcept;

#if defined(DEVCTX_FIBER_X86_64) || defined(DEVCTX_FIBER_AARCH64)
/// The assembly's launch: calls `entry` directly on the fresh stack, writing nothing there first.
extern "C" void devctx_fiber_launch(FiberSp* save, void* top, void (*entry)(void*), void* arg);
inline void raw_fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg) {
  devctx_fiber_launch(save, stack.top, entry, arg);
}
#endif

// ---- sanitizer builds: every switch announced (fiber_annotated.cpp) ------------------------------
#if DEVCTX_FIBER_ANNOTATED
void annotated_fiber_switch(FiberSp* save, FiberSp load);
[[noreturn]] void annotated_fiber_jump(FiberSp load);
[[noreturn]] void annotated_fiber_finish(FiberStack own, FiberSp load);
void annotated_fiber_resting(FiberStack own, bool resting) noexcept;
void annotated_fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg);
[[nodiscard]] FiberSp annotated_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg);
/// Forgets what the sanitizers keep for fibers that ran on `stack` (before it is unmapped).
void annotated_stack_released(FiberStack stack) noexcept;
#endif

// ---- the interface ------------------------------------------------------------------------------

/// Saves the running fiber into *save and resumes `load` (from a switch, a launch or a prepare).
[[gnu::always_inline]] inline void fiber_switch(FiberSp* save, FiberSp load) {
#if DEVCTX_FIBER_ANNOTATED
  annotated_fiber_switch(save, load);
#else
  devctx_fiber_switch(save, load);
#endif
}

/// Resumes `load`; the running fiber has finished and is never resumed.
[[noreturn]] inline void fiber_jump(FiberSp load) {
#if DEVCTX_FIBER_ANNOTATED
  annotated_fiber_jump(load);
#else
  devctx_fiber_jump(load);
#endif
}

/// Resumes `load`, called when the running fiber has finished from a DEVCTX_FIBER_FIRST_FRAME
/// function with nothing but such functions below it on `own`, the fiber's stack: fiber_jump,
/// but in sanitizer builds what the sanitizer keeps for the fiber is left for the next fiber
/// prepared on `own` (a TSan fiber costs an mmap and a memset of its state: made for each block
/// of a barrier-free kernel, it took a launch of 65535 one-thread blocks 150 s).
[[noreturn, gnu::always_inline]] DEVCTX_FIBER_FIRST_FRAME inline void fiber_finish([[maybe_unused]] FiberStack own,
                                                                                   FiberSp load) {
#if DEVCTX_FIBER_ANNOTATED
  annotated_fiber_finish(own, load);
#else
  devctx_fiber_jump(load);
#endif
}

/// Says that the fiber on `own` is about to be suspended (true) with nothing but
/// DEVCTX_FIBER_FIRST_FRAME functions on its stack, where it may be abandoned for a fiber
/// prepared in its place, or that it was resumed (false). Sanitizer builds then reuse what the
/// sanitizer keeps for it, as after fiber_finish; elsewhere it does nothing.
[[gnu::always_inline]] inline void fiber_resting([[maybe_unused]] FiberStack own, [[maybe_unused]] bool resting) noexcept {
#if DEVCTX_FIBER_ANNOTATED
  annotated_fiber_resting(own, resting);
#endif
}

/// Saves the running fiber into *save and calls entry(arg) on `stack` at once. `entry` must
/// never return: it leaves with fiber_jump.
inline void fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg) {
#if DEVCTX_FIBER_ANNOTATED
  annotated_fiber_launch(save, stack, entry, arg);
#else
  raw_fiber_launch(save, stack, entry, arg);
#endif
}

/// A fiber on `stack` that calls entry(arg) when a switch first resumes it. `entry` must never
/// return. Whatever ran on `stack` before is abandoned.
[[nodiscard]] inline FiberSp fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) {
#if DEVCTX_FIBER_ANNOTATED
  return annotated_fiber_prepare(stack, entry, arg);
#else
  return raw_fiber_prepare(stack, entry, arg);
#endif
}

/// Called before `stack` is unmapped, once no fiber runs on it.
inline void fiber_stack_released([[maybe_unused]] FiberStack stack) noexcept {
#if DEVCTX_FIBER_ANNOTATED
  annotated_stack_released(stack);
#endif
}

// ---- the executor's side ------------------------------------------------------------------------

/// Parks the calling fiber, whose GPU thread has finished (`executor` is its BlockExecutor), and
/// resumes the fiber that BlockExecutor chooses; returns when the fiber is resumed for its thread
/// in the next block. Only BlockExecutor's thread loop calls it. Assembly with the fast barrier
/// (fiber_x86_64.cpp), C++ elsewhere (cooperative.cpp).
extern "C" void devctx_fiber_park(const void* executor);

#if DEVCTX_FIBER_FAST_BARRIER
/// Makes the suspended fiber at `sp` throw (a BlockAbort, see block_executor.hpp) from the call
/// it is suspended in, instead of returning from it, when it is next resumed. A frame made by
/// fiber_prepare is left as it is: its entry must check for the abort itself. (Without the fast
/// barrier, a resumed fiber checks the executor's abort flag instead.)
void fiber_arm_abort(FiberSp sp) noexcept;
#endif

}  // namespace devctx::detail::cpu
