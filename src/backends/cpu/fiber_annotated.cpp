// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/fiber_annotated.cpp - in AddressSanitizer and ThreadSanitizer builds, every
// fiber switch announced to the sanitizer around the configured implementation's own switch.
//
// ASan keeps the bounds of the running stack (to unpoison it when an exception unwinds, to tell
// stack from heap in reports) and TSan a shadow call stack and a vector clock per thread; a
// switch they are not told about makes ASan report false errors whenever a kernel throws, and
// TSan crash. So each switch calls __sanitizer_start_switch_fiber with the target's stack before
// and __sanitizer_finish_switch_fiber after it, and __tsan_switch_to_fiber before it: the target
// then sees everything the fiber that resumed it did (as a barrier promises).
//
// Here a FiberSp is a Suspended record on the suspended fiber's own stack: the implementation's
// saved context plus what the sanitizers need to resume it. A switch cannot know the bounds of
// its own stack, so the fiber it resumes fills them in from what ASan reports as the stack it
// came from. Each stack that a fiber was prepared on owns one TSan fiber, kept in a StackHead at
// its top and replaced whenever a fiber is prepared there again (parked fibers are abandoned at
// the end of a range without finishing, so ownership cannot follow the fiber).
#include <cstdint>
#include <cstdlib>

#include "backends/cpu/fiber_switch.hpp"

// Without a sanitizer this file compiles to nothing.
#if DEVCTX_FIBER_ANNOTATED

#if defined(__SANITIZE_ADDRESS__)
#define DEVCTX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEVCTX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DEVCTX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEVCTX_TSAN 1
#endif
#endif

#if defined(DEVCTX_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(DEVCTX_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace devctx::detail::cpu {

namespace {

/// A suspended fiber, on its own stack.
struct Suspended {
  FiberSp raw = nullptr;         // the implementation's saved context
  const void* bottom = nullptr;  // the fiber's stack, for ASan (filled in by the fiber it resumed)
  std::size_t bytes = 0;
  void* tsan = nullptr;        // its TSan fiber
  void* fake_stack = nullptr;  // ASan's handle on its fake stack while it is suspended
};

/// At the top of a stack that a fiber was prepared on, above every frame of that fiber.
struct alignas(16) StackHead {
  Suspended first;  // the fiber before it first runs
  void (*entry)(void*) = nullptr;
  void* arg = nullptr;
  void* tsan_owned = nullptr;  // the TSan fiber of whatever runs on this stack
  // The fiber on this stack finished or rests (fiber_finish, fiber_resting) with an empty shadow
  // call stack: a fiber prepared here may take over its TSan fiber.
  bool tsan_reusable = false;
};

/// The fiber the last switch on this thread left; nullptr if it had finished.
thread_local Suspended* left_behind = nullptr;

StackHead* head_of(FiberStack stack) {
  return reinterpret_cast<StackHead*>(static_cast<char*>(stack.top) - sizeof(StackHead));
}

// The two halves of every switch. `me` is the record of the fiber that is about to be suspended,
// or nullptr if it has finished (then ASan frees its fake stack). Always inlined: the switch
// happens inside it, so as a function of its own its entry would be recorded on the fiber it
// leaves and its exit on the one it resumes (uneven for a fiber that never resumes).
[[gnu::always_inline]] inline void before_switch([[maybe_unused]] Suspended* me, [[maybe_unused]] const Suspended& to) {
  left_behind = me;
#if defined(DEVCTX_ASAN)
  __sanitizer_start_switch_fiber(me != nullptr ? &me->fake_stack : nullptr, to.bottom, to.bytes);
#endif
#if defined(DEVCTX_TSAN)
  if (me != nullptr) me->tsan = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(to.tsan, 0);  // flags 0: the switch orders the two fibers' accesses
#endif
}

void after_switch([[maybe_unused]] Suspended& me) {
#if defined(DEVCTX_ASAN)
  Suspended* left = left_behind;
  __sanitizer_finish_switch_fiber(me.fake_stack, left != nullptr ? &left->bottom : nullptr,
                                  left != nullptr ? &left->bytes : nullptr);
#endif
}

[[noreturn]] DEVCTX_FIBER_FIRST_FRAME void start(void* head_address) {
  auto* head = static_cast<StackHead*>(head_address);
  after_switch(head->first);
  head->entry(head->arg);
  std::abort();  // a fiber's entry leaves with a jump and never returns
}

}  // namespace

DEVCTX_FIBER_FIRST_FRAME void annotated_fiber_switch(FiberSp* save, FiberSp load) {
  Suspended me;
  *save = &me;
  const auto& to = *static_cast<const Suspended*>(load);
  before_switch(&me, to);
  devctx_fiber_switch(&me.raw, to.raw);
  after_switch(me);
}

void annotated_fiber_jump(FiberSp load) {
  const auto& to = *static_cast<const Suspended*>(load);
  before_switch(nullptr, to);
  devctx_fiber_jump(to.raw);
}

void annotated_fiber_resting(FiberStack own, bool resting) noexcept {
  head_of(own)->tsan_reusable = resting && DEVCTX_FIBER_BALANCED != 0;
}

DEVCTX_FIBER_FIRST_FRAME void annotated_fiber_finish(FiberStack own, FiberSp load) {
  annotated_fiber_resting(own, true);
  const auto& to = *static_cast<const Suspended*>(load);
  before_switch(nullptr, to);
  devctx_fiber_jump(to.raw);
}

FiberSp annotated_fiber_prepare(FiberStack stack, void (*entry)(void*), void* arg) {
  StackHead* const head = head_of(stack);
  const auto bytes = std::size_t(static_cast<char*>(stack.top) - static_cast<char*>(stack.bottom));
#if defined(DEVCTX_ASAN)
  // Frames of a fiber abandoned on this stack left their redzones poisoned.
  __asan_unpoison_memory_region(stack.bottom, bytes);
#endif
#if defined(DEVCTX_TSAN)
  if (head->tsan_owned == nullptr || !head->tsan_reusable) {
    if (head->tsan_owned != nullptr) __tsan_destroy_fiber(head->tsan_owned);
    head->tsan_owned = __tsan_create_fiber(0);
  }
#endif
  head->tsan_reusable = false;
  head->entry = entry;
  head->arg = arg;
  head->first = {};
  head->first.raw = raw_fiber_prepare({stack.bottom, head}, &start, head);
  head->first.bottom = stack.bottom;
  head->first.bytes = bytes;
  head->first.tsan = head->tsan_owned;
  return &head->first;
}

void annotated_fiber_launch(FiberSp* save, FiberStack stack, void (*entry)(void*), void* arg) {
  annotated_fiber_switch(save, annotated_fiber_prepare(stack, entry, arg));
}

void annotated_stack_released([[maybe_unused]] FiberStack stack) noexcept {
#if defined(DEVCTX_ASAN)
  // Frames abandoned on this stack left their redzones poisoned in ASan's shadow, and the shadow
  // outlives the mapping: memory mapped later at these addresses (a large malloc, a checked
  // buffer) would be reported as a stack overflow when first touched (a checked buffer placed
  // there did; tests/fiber_test.cpp, StackPool.ReleasedStacksLeaveNoPoison).
  __asan_unpoison_memory_region(stack.bottom,
                                std::size_t(static_cast<char*>(stack.top) - static_cast<char*>(stack.bottom)));
#endif
#if defined(DEVCTX_TSAN)
  StackHead* const head = head_of(stack);
  if (head->tsan_owned != nullptr) __tsan_destroy_fiber(head->tsan_owned);
  head->tsan_owned = nullptr;
  head->tsan_reusable = false;
#endif
}

}  // namespace devctx::detail::cpu

#endif  // DEVCTX_FIBER_ANNOTATED
