// src/backends/cpu/block_run.hpp - executes a range of blocks of a kernel on the calling worker.
//
// Three paths (docs/cpu-backend.md explains them and their costs):
//  * plain: the block's threads run one after another as a loop (cpu_run_block), on a fiber
//    stack. A kernel that never reaches barrier() or a warp operation stays on this path, and
//    the compiler can vectorise the loop.
//  * cooperative: the first time a thread reaches barrier() or a warp operation, that thread
//    keeps the plain fiber, the threads after it get fibers of their own, and barriers switch
//    between fibers round-robin (one switch per thread per barrier). Threads before it have
//    already finished, which is exactly what CUDA allows for threads that exit early.
//    A fiber that finishes its thread parks instead of ending; the next block of the range then
//    starts cooperative right away, each thread in the parked fiber of the same thread index, so
//    a thread's start and end cost about as much as one more barrier.
//  * block_level: a kernel taking devctx::Block runs once per block; its phases are loops.
//
// Checks performed here on every path: shared memory limits, barrier divergence (threads
// waiting at different kinds of barrier with nobody able to proceed), exceptions in kernels.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <devctx/error.hpp>
#include <devctx/launch.hpp>

#include "backends/cpu/fiber.hpp"

namespace devctx::detail::cpu {

/// Thrown inside the fibers of a failed block to unwind their stacks.
struct BlockAbort {};

/// What one launch asks of the block executor.
struct BlockTask {
  std::string_view kernel;
  void (*run_block)(const void* args) = nullptr;
  void (*run_thread)(const void* args) = nullptr;
  const void* args = nullptr;
  bool block_level = false;
  Dim3 grid_dim;
  Dim3 block_dim;
  std::size_t shared_bytes = 0;
  /// Distinct for every launch: blocks of one launch share their shared-memory layout.
  std::uint64_t launch_id = 0;
};

/// A failure inside a block: the error code and the full message.
struct BlockFailure {
  Errc code = Errc::kernel_failed;
  std::string message;
};

/// Most threads in a block (the CPU device's max_threads_per_block).
inline constexpr std::uint32_t kMaxBlockThreads = 1024;

/// Offset of ThreadState::barrier_state, which the assembly in fiber.cpp hard-codes.
inline constexpr std::size_t kBarrierStateOffset = 0x48;

/// How many fibers ahead a switch prefetches (measured: 1 leaves most TLB misses exposed).
inline constexpr std::uint32_t kPrefetchAhead = 12;

class BlockRun {
 public:
  BlockRun(std::size_t stack_bytes, std::size_t shared_limit);
  BlockRun(const BlockRun&) = delete;
  BlockRun& operator=(const BlockRun&) = delete;

  /// How many blocks of a range took each path.
  struct RangeStats {
    std::uint64_t plain = 0;
    std::uint64_t cooperative = 0;
    std::uint64_t block_level = 0;
  };

  /// Runs blocks begin..end-1 of `task` (numbered x fastest, then y, then z) to completion, one
  /// after another. Stops early when `stop` becomes true (another worker's block failed) or a
  /// block fails; then returns false and fills `failure`. `why` (if not null and empty) receives
  /// the reason the first block went cooperative. State that is the same for every block of the
  /// launch is set once per range, so the per-block cost of a block-level kernel is little more
  /// than the call to it.
  bool run_range(const BlockTask& task, std::uint64_t begin, std::uint64_t end, const std::atomic<bool>& stop,
                 RangeStats& stats, BlockFailure& failure, std::string* why);

  // Kernel-side entry points (through detail::cpu::barrier() etc.).
  /// The decision half of devctx::barrier() on the CPU (see barrier_decide in block_run.cpp).
  inline void* barrier_decide(void* sp);
  const std::byte* warp_publish(const void* value, std::size_t bytes);
  void warp_release();
  [[nodiscard]] unsigned warp_width() const;
  void* static_shared(const void* site, std::size_t bytes, std::size_t align);
  void* per_thread_storage(std::size_t bytes, std::size_t align);

 private:
  /// One GPU thread of a cooperative block (32 bytes: two share a cache line). idx comes first
  /// so that a switch copies idx and next (16 bytes) into tls.thread_idx and its padding at once.
  struct Fiber {
    Dim3 idx;
    std::uint32_t next = 0;  // successor in the ring (exited fibers are unlinked lazily)
    FiberSp sp = nullptr;    // saved stack pointer while suspended
    std::uint64_t wait = 0;  // kRunning, kExited, or kAtBarrier / kAtWarp | generation waited in
  };
  static constexpr std::uint64_t kKindMask = std::uint64_t{3} << 62;
  static constexpr std::uint64_t kRunning = 0;
  static constexpr std::uint64_t kAtBarrier = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kAtWarp = std::uint64_t{2} << 62;
  static constexpr std::uint64_t kExited = ~std::uint64_t{0};
  /// BarrierState::released while the fast paths are off: no fiber ever waits with this value.
  static constexpr std::uint64_t kNever = std::uint64_t{3} << 62;

  struct SharedSite {
    const void* site;
    std::size_t offset;
  };

  void enter_launch(const BlockTask& task);
  void set_block(unsigned bx, unsigned by, unsigned bz);
  static void plain_entry(void* self);
  static void thread_loop(void* self);
  void run_parked();
  [[nodiscard]] Dim3 thread_coords(std::uint32_t j) const;

  void go_cooperative(const char* cause);
  void warp_sync();
  void record_current_exception();
  void start_aborting();
  [[nodiscard]] std::uint32_t running_thread() const;
  [[nodiscard]] Fiber* fibers() const { return static_cast<Fiber*>(bs_.fibers); }
  [[nodiscard]] bool runnable(const Fiber& f, std::uint32_t j) const;
  [[nodiscard]] FiberSp next_target(std::uint32_t me);
  [[nodiscard]] FiberSp start_fiber(std::uint32_t j);
  void prefetch_ahead(std::uint32_t j) const;
  [[nodiscard]] FiberSp leave_block(std::uint32_t me);
  [[noreturn]] void exit_current();

 public:
  /// The decision half of devctx_fiber_park (see thread_loop in block_run.cpp).
  [[nodiscard]] FiberSp park(void* sp);

 private:
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
  bool warp_synced_ = false;  // a warp operation completed in the current block
  /// Fibers from this index on are parked at the end of the previous block (see thread_loop);
  /// those below it have not run yet in this range.
  std::uint32_t parked_from_ = 0;

 public:
  /// What a barrier reads and writes, in one standard-layout block: the assembly fast path of
  /// barrier() (fiber.cpp) uses these fields at fixed offsets, checked by static_asserts in
  /// block_run.cpp.
  struct BarrierState {
    // Read by the assembly (offsets checked by static_asserts in block_run.cpp):
    /// 0: what a thread released by the previous barrier has in Fiber::wait (kAtBarrier | gen - 1)
    /// while the block runs cooperatively and is not aborting; kNever otherwise.
    std::uint64_t released = kNever;
    std::uint64_t last = 0;         // 8: n - 1, the highest thread index
    std::uint32_t remaining = 0;    // 16: live threads yet to reach the current barrier
    std::uint32_t shift = 0;        // 20: log2 of a stack slot
    void* fibers = nullptr;         // 24: Fiber[kMaxBlockThreads + kPrefetchAhead]
    std::uintptr_t stack_base = 0;  // 32
    // C++ only:
    /// Barrier generation. It only grows, across blocks too, so that a fiber's `wait` left over
    /// from an earlier block can never look like a waiter released by this block's last barrier.
    std::uint64_t gen = 2;
    std::uint32_t n = 0;  // threads in the block
    // Fibers run in ring order first, first + 1, ..., n - 1, first, ...; those from `started`
    // on have not run yet (threads before `first` finished in the plain loop before any barrier).
    std::uint32_t first = 0;
    std::uint32_t live = 0;  // threads of the ring that have not exited
    std::uint32_t started = 0;
    bool fast = false;  // cooperative and not aborting
  };

 private:
  BarrierState bs_;

  StackPool stacks_;
  std::unique_ptr<Fiber[]> fiber_storage_;
  std::size_t shared_limit_;
  static constexpr std::size_t shared_stride(std::size_t limit) { return (limit + 127) / 64 * 64; }
  [[nodiscard]] std::byte* shared_base() const { return shared_.get() + shared_half_ * shared_stride(shared_limit_); }
  std::unique_ptr<std::byte[]> shared_;  // two copies (alternate blocks); dynamic shared memory first, static after it
  unsigned shared_half_ = 0;
  std::size_t shared_offsets_[4] = {};  // offsets of the sites cached in tls.shared_addresses
  std::unique_ptr<std::byte[]> per_thread_;  // block-level per_thread<T>() values
  std::size_t per_thread_top_ = 0;
  std::size_t static_top_ = 0;
  std::vector<SharedSite> sites_;  // the current launch's DEVCTX_SHARED layout
  std::uint64_t sites_launch_ = 0;

  const BlockTask* task_ = nullptr;
  Dim3 block_idx_;
  BlockFailure failure_;
  std::string* why_ = nullptr;
  FiberSp scheduler_sp_ = nullptr;
  std::uint32_t warp_live_[32] = {};
  std::uint32_t warp_arrived_[32] = {};
  std::uint32_t warp_gen_[32] = {};
  std::unique_ptr<std::byte[]> warp_slots_;  // 32 warps x 32 lanes x kWarpSlotBytes
};

}  // namespace devctx::detail::cpu
