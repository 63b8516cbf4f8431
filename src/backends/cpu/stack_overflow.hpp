// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/stack_overflow.hpp - a fiber stack overflow becomes a report, not a bare SIGSEGV.
//
// Every fiber stack has a guard region below it (fiber.hpp). A GPU thread that needs more stack
// than DEVCTX_CPU_STACK_BYTES gives it faults there. The SIGSEGV handler installed here runs on
// an alternate signal stack (the faulting stack has no room left), recognises a fault in a guard
// region of the calling thread's executor, prints which kernel, block and thread overflowed and
// the setting to raise, and ends the process with SIGSEGV's default action. In checked launches
// it also turns faults at the guard pages of DEVCTX_SHARED arrays (arenas.hpp) and of checked
// device memory (check/guarded_memory.hpp) into the launch's report. Any other fault goes to the
// handler that was installed before devctx's.
#pragma once

#include <cstddef>

namespace devctx::detail::cpu {

/// Owned by each thread that runs kernel code. The first one installs the process's SIGSEGV
/// handler; each gives its thread an alternate signal stack, unless the thread has one already,
/// and removes it again when destroyed (on the same thread). Throws Error(out_of_memory) when
/// the alternate stack cannot be allocated.
class OverflowReporter {
 public:
  OverflowReporter();
  ~OverflowReporter();
  OverflowReporter(const OverflowReporter&) = delete;
  OverflowReporter& operator=(const OverflowReporter&) = delete;

 private:
  void* alt_stack_ = nullptr;  // ours, when this thread had none
  std::size_t alt_bytes_ = 0;
};

}  // namespace devctx::detail::cpu
