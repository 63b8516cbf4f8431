// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/cpu_state.hpp - what a kernel running on the CPU backend can see of its
// thread: the per-worker state that the CPU executor sets before running a kernel's code,
// and the executor entry points that kernel-side functions call. Users never include this.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/cpu_state.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <cstddef>

#include <devctx/detail/base/launch_types.hpp>
#include <devctx/detail/base/source_site.hpp>

namespace devctx::detail::cpu {

class BlockExecutor;  // src/backends/cpu: the worker's executor of blocks (fibers, barriers, shared memory)
namespace check {
class Checker;  // src/backends/cpu/check: checking mode (docs/checking.md)
}

/// How the current worker is executing kernel code.
enum class Mode : unsigned char {
  none,         ///< not inside a kernel (host code)
  plain,        ///< the block's threads run one after another as a loop
  cooperative,  ///< each thread has its own fiber; barriers switch between them
  block_level,  ///< a block-level kernel (devctx::Block) is running its phases
};

/// Per worker thread. Fibers of one block share their worker, so the scheduler rewrites
/// `thread_idx` whenever it switches between GPU threads. The barrier assembly reads this
/// layout: its offsets are checked in src/backends/cpu/fiber_abi.hpp.
struct ThreadState {
  Dim3 thread_idx{0, 0, 0};
  /// Gives thread_idx 16 bytes of its own: a cooperative switch copies them in one move.
  unsigned thread_idx_pad = 0;
  Dim3 block_idx{0, 0, 0};
  Dim3 block_dim{1, 1, 1};
  Dim3 grid_dim{1, 1, 1};
  /// Upper bound of the plain loop over x. Lowered when the block turns cooperative so that
  /// the plain loop stops after the thread that reached the barrier.
  unsigned x_end = 0;
  Mode mode = Mode::none;
  /// The executor running a range of blocks on this thread; null outside kernel code.
  BlockExecutor* executor = nullptr;
  /// The running block's barrier state while it executes cooperatively-capable code (read by the
  /// assembly fast path of barrier(); see src/backends/cpu/fiber_abi.hpp).
  void* barrier_state = nullptr;
  std::byte* dynamic_shared = nullptr;
  std::size_t dynamic_shared_bytes = 0;
  /// The running launch's DEVCTX_SHARED arrays found so far (site -> address), so that the
  /// declarations a block or thread executes are resolved inline.
  const void* shared_sites[4] = {};
  void* shared_addresses[4] = {};
  unsigned shared_count = 0;
  /// Checking mode's record of the running launch; null unless it is a checked launch.
  check::Checker* checker = nullptr;
};

/// The calling worker's state. Code in headers names it directly (`tls.thread_idx`, or
/// `using cpu::tls;` in a function) and never binds a reference or pointer to it. Through a
/// reference, -fsanitize=null (UBSan) tests the address for null, and g++ 12 takes that test
/// from the flags of the `addq tls@gottpoff(%rip), %reg` that computes it; in an executable the
/// linker rewrites that instruction into a `leaq`, which sets no flags, so the branch follows
/// whatever the instruction before left (ASan's shadow test, say) and UBSan reports "member
/// access within null pointer of type 'ThreadState'" in the user's program (issue 25; seen at
/// -O1). A named thread_local is never tested for null, and the code at -O2 is the same.
extern constinit thread_local ThreadState tls;

// Entry points into the executor (src/backends/cpu/block_executor.cpp; barrier() in fiber_x86_64.cpp or cooperative.cpp).
/// `site`: where the kernel called devctx::barrier(), which checking mode compares.
void barrier(const SourceSite& site);
/// Publishes `bytes` bytes of this lane's value to its warp and waits for the whole warp.
/// Returns the warp's 32 slots (each kWarpSlotBytes wide); warp_release() must follow.
const std::byte* warp_publish(const void* value, std::size_t bytes);
void warp_release();
/// Number of threads in the calling thread's warp (32 except in a last, partial warp).
unsigned warp_width();
/// `element_bytes`: the size of the array's scalar elements, by which checking mode numbers them.
void* static_shared(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes);
void* per_thread_storage(std::size_t bytes, std::size_t align);
[[noreturn]] void not_in_kernel(const char* function);

inline constexpr std::size_t kWarpSlotBytes = 16;

// ---- checking mode (docs/checking.md): entry points into src/backends/cpu/check -----------------
/// True while the calling thread runs kernel code of a checked launch. Every checked accessor
/// (span[i], atomics, the end of a block-level phase and of a thread in one) tests it.
/// Declared const: its value cannot change while a kernel runs (a thread runs one launch's code
/// from its runner's call to its return), so the compiler may treat every test in a kernel as one
/// value - and the runners promise that value (launch_kernel.hpp), which removes the tests from
/// the code of unchecked launches altogether.
[[nodiscard, gnu::const]] bool in_checked_launch() noexcept;
/// &data[index] of a span of `count` elements in a checked launch, once the checker has seen it.
[[nodiscard]] void* checked_span_element(const void* data, std::size_t index, std::size_t count,
                                         std::size_t element_bytes, bool read_only);
/// An atomic on `bytes` bytes at `address` in a checked launch.
void checked_atomic(const void* address, std::size_t bytes);
/// The end of a block-level phase (its implied barrier) in a checked launch.
void checked_phase_end();
/// The running thread returned from the kernel, in a checked launch (the checked runners call it).
void checked_thread_end();
/// A block-level phase has run the body of thread tls.thread_idx (checking mode compares shared
/// memory before and after each thread's part).
void checked_thread_step();
/// Whether a checked block-level phase runs its threads in reverse order (checking mode runs
/// each block a second time that way and compares; docs/checking.md).
[[nodiscard]] bool checked_threads_reversed() noexcept;
/// Called by every block-level phase as it ends.
inline void phase_end() {
  if (in_checked_launch()) [[unlikely]]
    checked_phase_end();
}

/// The address of the DEVCTX_SHARED array declared at `site` in the running block.
inline void* shared_array(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes) {
  if (tls.executor != nullptr)  // tls by name: see its declaration
    for (unsigned i = 0; i < tls.shared_count; ++i)
      if (tls.shared_sites[i] == site) return tls.shared_addresses[i];
  return static_shared(site, bytes, align, element_bytes);
}

}  // namespace devctx::detail::cpu
