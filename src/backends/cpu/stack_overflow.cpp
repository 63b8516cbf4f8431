// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/stack_overflow.cpp - the SIGSEGV handler that reports fiber stack overflows
// and (checking mode) indices past DEVCTX_SHARED arrays and accesses past (or before) checked
// device memory, and each kernel-running thread's alternate signal stack.
#include "backends/cpu/stack_overflow.hpp"

#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <new>
#include <string_view>

#include <devctx/detail/base/cpu_state.hpp>

#include "backends/cpu/block_executor.hpp"
#include "backends/cpu/check/guarded_memory.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

struct sigaction g_previous{};  // SIGSEGV's action before devctx installed its own

/// Builds the report in a fixed buffer: the handler may not allocate or take locks.
class SignalSafeText {
 public:
  SignalSafeText& operator<<(std::string_view text) noexcept {
    // Each store tests the bound itself: the compiler sees that no index passes the buffer.
    for (std::size_t i = 0; i < text.size() && used_ < sizeof buffer_; ++i) buffer_[used_++] = text[i];
    return *this;
  }
  SignalSafeText& operator<<(std::uint64_t value) noexcept {
    char digits[20];
    std::size_t n = 0;
    do {
      digits[n++] = char('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (n > 0 && used_ < sizeof buffer_) buffer_[used_++] = digits[--n];
    return *this;
  }
  SignalSafeText& operator<<(const Dim3& d) noexcept {
    return *this << "(" << std::uint64_t{d.x} << ", " << std::uint64_t{d.y} << ", " << std::uint64_t{d.z} << ")";
  }
  void write_to_stderr() const noexcept {
    std::size_t done = 0;
    while (done < used_) {
      const ssize_t n = ::write(STDERR_FILENO, buffer_ + done, used_ - done);
      if (n <= 0) return;
      done += std::size_t(n);
    }
  }

 private:
  char buffer_[1024];
  std::size_t used_ = 0;
};

void restore_default() noexcept {
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGSEGV, &dfl, nullptr);
}

/// A fault that is not a fiber stack overflow: what would have happened without devctx.
void pass_on(int signal, siginfo_t* info, void* context) noexcept {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
    return;
  }
  // Default action (an ignored fault would repeat forever): a faulting access repeats when the
  // handler returns and then ends the process; a SIGSEGV sent by kill() is raised again.
  restore_default();
  if (info->si_code <= 0) raise(signal);
}

/// Where the faulting thread goes on instead of retrying the access (see report_guard).
extern "C" [[noreturn]] void devctx_guard_resume() noexcept { tls.executor->leave_after_guard_fault(); }

/// What the faulting access did: x86-64's page-fault error code says (bit 1: a write).
check::Access access_of([[maybe_unused]] void* context) noexcept {
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? check::Access::write : check::Access::read;
#else
  return check::Access::unknown;
#endif
}

/// Checking mode: an index past the end of a DEVCTX_SHARED array reached the guard page after it
/// (arenas.hpp), or an access through a pointer reached a guard page around checked device memory
/// (check/guarded_memory.hpp). The faulting thread is resumed, on its own stack below the faulting
/// frame (past the red zone), in devctx_guard_resume, as if that had been called with a null
/// return address (the unwinder and backtraces stop there); it turns the fault into the launch's
/// report. Where the context cannot be rewritten, the report is printed and the process ends.
bool report_guard(BlockExecutor& executor, [[maybe_unused]] const ThreadState& st, std::uintptr_t address,
                  void* context) noexcept {
  if (!executor.checked_launch()) return false;
  SharedArena::GuardHit hit;
  check::GuardedHit allocation;
  if (executor.shared_guard_hit(address, hit))
    executor.note_shared_guard_fault(address);
  else if (check::guarded_hit(address, allocation))
    executor.note_allocation_guard_fault(address, allocation, access_of(context));
  else
    return false;
#if defined(__x86_64__)
  auto* uc = static_cast<ucontext_t*>(context);
  std::uintptr_t sp = (std::uintptr_t(uc->uc_mcontext.gregs[REG_RSP]) - 256) & ~std::uintptr_t{15};
  sp -= 8;  // as after a call: (sp + 8) is 16-byte aligned at the function's entry
  *reinterpret_cast<std::uintptr_t*>(sp) = 0;
  uc->uc_mcontext.gregs[REG_RSP] = greg_t(sp);
  uc->uc_mcontext.gregs[REG_RIP] = greg_t(reinterpret_cast<std::uintptr_t>(&devctx_guard_resume));
  return true;
#elif defined(__aarch64__)
  auto* uc = static_cast<ucontext_t*>(context);
  uc->uc_mcontext.sp = (uc->uc_mcontext.sp - 256) & ~std::uint64_t{15};
  uc->uc_mcontext.regs[30] = 0;  // the link register: a null return address
  uc->uc_mcontext.pc = reinterpret_cast<std::uint64_t>(&devctx_guard_resume);
  uc->uc_mcontext.pstate &= ~std::uint64_t{3 << 10};  // BTYPE: no branch-target check pending
  return true;
#else
  (void)context;
  SignalSafeText text;
  text << "devctx: kernel '" << executor.kernel_name() << "' failed in block " << st.block_idx << ", thread "
       << st.thread_idx << ": out-of-bounds access: ";
  if (hit.name != nullptr)
    text << "index " << std::uint64_t{hit.index} << " of shared array '" << std::string_view(hit.name)
         << "', which has " << std::uint64_t{hit.count} << " elements (found at the guard page after it";
  else
    text << (allocation.before ? "before the start" : "past the end") << " of a device buffer of "
         << std::uint64_t{allocation.bytes} << " bytes (found at the guard page "
         << (allocation.before ? "before" : "after") << " it";
  text << "; the process ends here) (devctx checking mode)\n";
  text.write_to_stderr();
  restore_default();  // the access repeats and the default action ends the process
  return true;
#endif
}

/// An unchecked launch reached a guard page of checked device memory (a buffer of a checked
/// context used by an unchecked one): it cannot be resumed safely (an unchecked block-level
/// kernel runs on the worker's own stack), so the report is printed and the process ends. The
/// thread is not named: an unchecked plain loop may be vectorised, its thread index not stored.
bool report_unchecked_guard(BlockExecutor& executor, const ThreadState& st, std::uintptr_t address) noexcept {
  check::GuardedHit allocation;
  if (st.mode == Mode::none || !check::guarded_hit(address, allocation)) return false;
  SignalSafeText text;
  text << "devctx: kernel '" << executor.kernel_name() << "' (an unchecked launch) accessed memory "
       << (allocation.before ? "before the start" : "past the end") << " of a device buffer of "
       << std::uint64_t{allocation.bytes} << " bytes made by a checked context, in block " << st.block_idx
       << " (found at the guard page " << (allocation.before ? "before" : "after")
       << " it); the process ends here. Launch the kernel from a checked context for a report that names the "
          "argument (devctx checking mode)\n";
  text.write_to_stderr();
  restore_default();  // the access repeats and the default action ends the process
  return true;
}

extern "C" void devctx_on_sigsegv(int signal, siginfo_t* info, void* context) {
  const ThreadState& st = tls;
  BlockExecutor* executor = st.executor;
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (executor != nullptr &&
      (report_guard(*executor, st, address, context) || report_unchecked_guard(*executor, st, address)))
    return;
  if (executor == nullptr || !executor->in_stack_guard(reinterpret_cast<std::uintptr_t>(info->si_addr))) {
    pass_on(signal, info, context);
    return;
  }
  SignalSafeText text;
  text << "devctx: stack overflow in kernel '" << executor->kernel_name() << "', block " << st.block_idx << ", thread "
       << st.thread_idx << ", on the CPU backend: the GPU thread needed more than its "
       << std::uint64_t{executor->stack_bytes()}
       << " bytes of stack (DEVCTX_CPU_STACK_BYTES=" << std::uint64_t{executor->stack_bytes()}
       << "). Raise DEVCTX_CPU_STACK_BYTES (at most 64 MiB), or keep large arrays in shared or device memory "
          "instead of local variables.\n";
  text.write_to_stderr();
  restore_default();  // the access repeats and the default action ends the process
}

void install_handler() {
  struct sigaction ours{};
  ours.sa_sigaction = &devctx_on_sigsegv;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGSEGV, &ours, &g_previous);
}

}  // namespace

OverflowReporter::OverflowReporter() {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) return;  // the thread has one
  alt_bytes_ = std::max<std::size_t>(64 * 1024, std::size_t(sysconf(_SC_SIGSTKSZ)));
  alt_stack_ = ::operator new(alt_bytes_, std::nothrow);
  if (alt_stack_ == nullptr)
    fail(Errc::out_of_memory, "CPU backend: cannot allocate the ", bytes_text(alt_bytes_),
         " signal stack that reports fiber stack overflows");
  stack_t mine{};
  mine.ss_sp = alt_stack_;
  mine.ss_size = alt_bytes_;
  if (sigaltstack(&mine, nullptr) != 0) {
    ::operator delete(alt_stack_);
    alt_stack_ = nullptr;
  }
}

OverflowReporter::~OverflowReporter() {
  if (alt_stack_ == nullptr) return;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == alt_stack_) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  }
  ::operator delete(alt_stack_);
}

}  // namespace devctx::detail::cpu
