// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/block_executor.hpp - one worker's block executor: runs ranges of blocks of a
// kernel on the calling thread. Every thread that runs kernel code (each worker, and each host
// thread that helps while it waits) has one, reused by every block it runs.
//
// Three paths (docs/cpu-backend.md explains them and their costs):
//  * plain: the block's threads run one after another as a loop (the kernel's run_block), on a fiber
//    stack. A kernel that never reaches barrier() or a warp operation stays on this path, and
//    the compiler can vectorise the loop.
//  * cooperative: the first time a thread reaches barrier() or a warp operation, that thread
//    keeps the plain fiber, the threads after it get fibers of their own, and barriers switch
//    between fibers round-robin (one switch per thread per barrier). Threads before it have
//    already finished, which is exactly what CUDA allows for threads that exit early.
//    A fiber that finishes its thread parks instead of ending; the next block of the range then
//    starts cooperative right away, each thread in the parked fiber of the same thread index, so
//    a thread's start and end cost about as much as one more barrier. cooperative.cpp holds
//    this path's scheduler.
//  * block_level: a kernel taking devctx::Block runs once per block; its phases are loops.
//  * translated: on the plain path, thread (0, 0, 0) runs with the block offered to the
//    kernel's block-level twin, written by the fission translator; a twin that takes the offer
//    runs the whole block as loops over its threads (include/devctx/detail/device/fission.hpp).
//
// Checks performed here on every path: shared memory limits, barrier divergence (threads
// waiting at different kinds of barrier with nobody able to proceed), exceptions in kernels.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/detail/base/seam.hpp>
#include <devctx/error.hpp>
#include <devctx/launch.hpp>

#include "backends/cpu/arenas.hpp"
#include "backends/cpu/check/checker.hpp"
#include "backends/cpu/check/guarded_memory.hpp"
#include "backends/cpu/fiber.hpp"
#include "backends/cpu/stack_overflow.hpp"
#include "backends/cpu/fiber_abi.hpp"

namespace devctx::detail::cpu {

/// Thrown inside the fibers of a failed block to unwind their stacks.
struct BlockAbort {};

/// What a checked launch (docs/checking.md) adds to its task: its span arguments, and the
/// device's record of written device memory.
struct CheckedTask {
  std::vector<LaunchSpan> spans;
  const check::ShadowRegistry* registry = nullptr;
};

/// What one launch asks of the block executor: the launch as enqueued, its arguments and name
/// owned by the operation that runs it (its fields for CUDA and buffer tracking are not read).
struct BlockTask {
  KernelLaunch launch;
  /// The kernel's runners for this launch: launch.cpu's checked ones for a checked launch.
  void (*run_block)(const void* args) = nullptr;
  void (*run_thread)(const void* args) = nullptr;
  /// Distinct for every launch: blocks of one launch share their shared-memory layout.
  std::uint64_t launch_id = 0;
  /// Set for a checked launch: its blocks run in one range, through the checked runners, with
  /// the executor's checker watching. One pointer, so that an unchecked launch pays one test.
  const CheckedTask* checked = nullptr;
  /// Offer each block of an unchecked thread-level launch to the kernel's translated twin
  /// (DEVCTX_CPU_FISSION, on unless 0; never for checked launches).
  bool fission = false;
};

/// A failure inside a block: the error code and the full message.
struct BlockFailure {
  Errc code = Errc::kernel_failed;
  std::string message;
};

/// What running a range of blocks produced.
struct RangeResult {
  // How many blocks took each path.
  std::uint64_t plain = 0;
  std::uint64_t cooperative = 0;
  std::uint64_t block_level = 0;
  /// Blocks that a translated twin ran (counted in none of the above).
  std::uint64_t translated = 0;
  /// Why the translator left the kernel on fibers, when its prologue said so (a static string).
  const char* declined = nullptr;
  /// The first failure; the range stopped at it.
  std::optional<BlockFailure> failure;
  /// Why the first cooperative block went cooperative, when asked for and there was one.
  std::string why;
};

/// Most threads in a block (the CPU device's max_threads_per_block).
inline constexpr std::uint32_t kMaxBlockThreads = 1024;

class BlockExecutor {
 public:
  BlockExecutor(std::size_t stack_bytes, std::size_t shared_limit);
  BlockExecutor(const BlockExecutor&) = delete;
  BlockExecutor& operator=(const BlockExecutor&) = delete;

  /// Creates the calling thread's executor unless it has one: a worker's, or a waiting host
  /// thread's, before the first kernel part it runs. Throws Error(out_of_memory) or
  /// std::bad_alloc when its memory cannot be allocated (the thread then has none, and the next
  /// call tries again). Fiber stacks are not reserved here but by run_range, as launches need them.
  static void prepare_for_this_thread(std::size_t stack_bytes, std::size_t shared_limit);
  /// The calling thread's executor; prepare_for_this_thread has made it.
  [[nodiscard]] static BlockExecutor& of_this_thread() noexcept;

  /// Runs blocks begin..end-1 of `task` (numbered x fastest, then y, then z) to completion, one
  /// after another. Stops early when `stop` becomes true (another worker's block failed) or a
  /// block fails. With `want_why`, reports the reason the first block went cooperative. State
  /// that is the same for every block of the launch is set once per range, so the per-block
  /// cost of a block-level kernel is little more than the call to it. A thread-level kernel's
  /// range first makes sure of a fiber stack per thread of its blocks (plus the plain loop's);
  /// when they cannot be reserved, the range fails with out_of_memory before any block runs.
  [[nodiscard]] RangeResult run_range(const BlockTask& task, std::uint64_t begin, std::uint64_t end,
                                      const std::atomic<bool>& stop, bool want_why);

  // What the SIGSEGV handler asks the executor of the faulting thread (async-signal-safe).
  /// Whether `address` is in the guard region of one of this executor's fiber stacks.
  [[nodiscard]] bool in_stack_guard(std::uintptr_t address) const noexcept { return stacks_.in_guard(address); }
  /// The kernel whose range is running (valid while tls.executor is this executor).
  [[nodiscard]] std::string_view kernel_name() const noexcept { return task_->launch.name; }
  [[nodiscard]] std::size_t stack_bytes() const noexcept { return stacks_.stack_bytes(); }
  /// Whether a checked launch is running (its checker is set).
  [[nodiscard]] bool checked_launch() const noexcept { return checking_ != nullptr; }
  /// Whether `address` is in the guard page after a DEVCTX_SHARED array of the checked launch
  /// this executor runs, and which array and index it is (docs/checking.md).
  [[nodiscard]] bool shared_guard_hit(std::uintptr_t address, SharedArena::GuardHit& hit) const noexcept {
    return checking_ != nullptr && shared_.guard_hit(address, hit);
  }
  /// The handler found such a fault at `address` and resumes the faulting thread in
  /// leave_after_guard_fault() (stack_overflow.cpp).
  void note_shared_guard_fault(std::uintptr_t address) noexcept {
    guard_fault_ = address;
    allocation_fault_ = {};
  }
  /// The same for a fault at `address` in a guard page of checked device memory (`hit`, from
  /// check/guarded_memory.hpp), by an access of kind `access`.
  void note_allocation_guard_fault(std::uintptr_t address, const check::GuardedHit& hit, check::Access access) noexcept {
    guard_fault_ = address;
    allocation_fault_ = hit;
    fault_access_ = access;
  }
  /// Runs on the faulting thread's stack instead of the faulting access: makes the report the
  /// block's failure, abandons the thread's frames (no destructor of theirs runs) and goes on as
  /// after any failure: the block's other threads unwind, the launch fails at synchronize().
  [[noreturn]] void leave_after_guard_fault() noexcept;

  // Kernel-side entry points (through detail::cpu::barrier() etc.).
#if DEVCTX_FIBER_FAST_BARRIER
  /// The C++ half of the assembly barrier() (see barrier_decide in cooperative.cpp); `site` is
  /// where the kernel called it (checking mode compares them).
  inline void* barrier_decide(void* sp, const SourceSite& site);
  /// The C++ half of the assembly devctx_fiber_park (see thread_loop in cooperative.cpp).
  [[nodiscard]] FiberSp park(void* sp);
#else
  /// devctx::barrier() without the assembly fast path (see barrier_arrive in cooperative.cpp).
  void arrive_at_barrier(const SourceSite& site);
  /// devctx_fiber_park without the assembly (see thread_loop in cooperative.cpp).
  void park_thread();
#endif
  const std::byte* warp_publish(const void* value, std::size_t bytes);
  void warp_release();
  [[nodiscard]] unsigned warp_width() const;
  [[nodiscard]] void* static_shared(const void* site, std::size_t bytes, std::size_t align, std::size_t element_bytes);
  [[nodiscard]] void* per_thread_storage(std::size_t bytes, std::size_t align) {
    return per_thread_.allocate(bytes, align);
  }

 private:
  // block_executor.cpp: the range, the plain path, failures.
  [[nodiscard]] bool reserve_stacks(const BlockTask& task, RangeResult& result);
  void enter_launch(const BlockTask& task);
  void enter_checked_launch(const BlockTask& task);
  void set_block(unsigned bx, unsigned by, unsigned bz);
  static void plain_entry(void* self);
  static void checked_block_level_entry(void* self);
  void record_current_exception();
  void start_aborting();
  // Checking mode's hooks (checked launches only; block_executor.cpp).
  void record_check_exception() noexcept;
  void check_block_end() noexcept;
  [[nodiscard]] bool check_block_twice();
  void check_interval_end_quietly() noexcept;

  // cooperative.cpp: the cooperative path.
  static void thread_loop(void* self);
  void run_parked();
  void go_cooperative(const char* cause);
  [[nodiscard]] Dim3 thread_coords(std::uint32_t j) const;
  void warp_sync();
  [[nodiscard]] std::uint32_t running_thread() const;
  [[nodiscard]] std::uint32_t running_thread_index() const;  // running_thread(), out of line
  [[nodiscard]] Fiber* fibers() const { return static_cast<Fiber*>(bs_.fibers); }
  [[nodiscard]] bool runnable(const Fiber& f, std::uint32_t j) const;
  [[nodiscard]] FiberSp barrier_arrive(std::uint32_t& me, const SourceSite& site);
  [[nodiscard]] FiberSp park_target(std::uint32_t me);
  [[nodiscard]] FiberSp next_target(std::uint32_t me);
  [[nodiscard]] FiberSp start_fiber(std::uint32_t j);
  void prefetch_ahead(std::uint32_t j) const;
  [[nodiscard]] FiberSp leave_block(std::uint32_t me);
  [[noreturn]] void exit_current();
  [[noreturn]] void report_divergence(std::uint32_t me);

  // Every change of BarrierState::fast or ::gen goes through these, which keep ::released true.
  void set_fast(bool fast) {
    bs_.fast = fast;
    sync_released();
  }
  void advance_gen(std::uint64_t by) {
    bs_.gen += by;
    sync_released();
  }
  void sync_released() { bs_.released = bs_.fast ? (kAtBarrier | (bs_.gen - 1)) : kNever; }

  bool cooperative_ = false;
  bool aborting_ = false;
  bool failed_ = false;
  bool warp_synced_ = false;            // a warp operation completed in the current block
  bool reversed_ = false;               // checking mode's second run of a block: fiber j runs thread n - 1 - j
  std::uintptr_t guard_fault_ = 0;      // the address of the last guard-page fault (checking mode)
  check::GuardedHit allocation_fault_;  // its allocation, when it was one of device memory
  check::Access fault_access_ = check::Access::unknown;
  /// Fibers from this index on are parked at the end of the previous block (see thread_loop);
  /// those below it have not run yet in this range.
  std::uint32_t parked_from_ = 0;

  BarrierState bs_;

  StackPool stacks_;
  OverflowReporter overflow_reporter_;  // this thread's signal stack, for the SIGSEGV handler
  std::unique_ptr<Fiber[]> fiber_storage_;
  SharedArena shared_;
  PerThreadArena per_thread_;

  const BlockTask* task_ = nullptr;
  /// The checker of the running launch when it is checked, else null (also in tls.checker).
  check::Checker* checking_ = nullptr;
  std::unique_ptr<check::Checker> checker_;  // made for the first checked launch
  Dim3 block_idx_;
  BlockFailure failure_;
  std::string* why_ = nullptr;  // the reason to fill in, until a block went cooperative
  FiberSp scheduler_sp_ = nullptr;
  std::uint32_t warp_live_[32] = {};
  std::uint32_t warp_arrived_[32] = {};
  std::uint32_t warp_gen_[32] = {};
  CacheLineBytes warp_slots_;  // 32 warps x 32 lanes x kWarpSlotBytes
};

}  // namespace devctx::detail::cpu
