// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/operations.hpp - the operations a CPU queue holds: kernel launches, copies and
// fills (which workers run in parts), and event markers, frees and waits (which have no parts).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <devctx/detail/base/seam.hpp>

#include "backends/cpu/block_executor.hpp"
#include "backends/cpu/check/init_shadow.hpp"
#include "backends/cpu/partition.hpp"

namespace devctx::detail::trace {
struct ExecutionNote;  // core/trace/hooks.hpp
}

namespace devctx::detail::cpu {

using Clock = std::chrono::steady_clock;

class CpuQueue;
struct CpuEvent;

/// A point in several queues (one per rank of a collective of CPU devices) that each waits at
/// until it opens: once every rank has arrived, or every rank has finished reading the others'
/// memory. Guarded by the shared lock (cpu_device.hpp). Room for every rank's queue is taken
/// when the gate is made, so that a queue reaching it links itself without allocating.
struct [[gnu::visibility("hidden")]] Gate {
  explicit Gate(std::size_t ranks) { waiters.reserve(ranks); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  virtual ~Gate() = default;
  /// Opens the gate and pumps the queues waiting at it. Shared lock held.
  void open_now() noexcept;
  /// A host thread waited at the gate past `deadline` (shared lock held): the gate's owner
  /// records why and opens it, so that the waiting ranks fail instead of hanging.
  virtual void expire() noexcept = 0;

  bool open = false;
  Clock::time_point deadline = Clock::time_point::max();
  std::vector<CpuQueue*> waiters;
};

// The CPU backend's operation, queue and device types are hidden: they never leave the library,
// and a hidden function cannot be interposed, so under -fPIC the compiler still inlines them
// into one another, as it did when they shared one file's anonymous namespace (launch +
// synchronize of an empty kernel measurably slower otherwise, devctx_bench_cpu_costs).

/// A failure a queue keeps until a synchronize reports it.
struct [[gnu::visibility("hidden")]] QueuedFailure {
  std::uint64_t seq = 0;
  BlockFailure failure;
};

/// One operation of a queue. The queue assigns `seq` and `queue`; the pool lock guards the
/// attached count and the active-list links (parts are claimed without it: Pool).
///
/// Once an operation is queued it must run and complete whatever happens, or its queue would
/// wait forever and memory the caller already reused could still be read: everything that can
/// fail (allocating the operation, copying its arguments, the node its failure will be queued
/// in) happens before it is queued, and running and completing it never throws.
struct [[gnu::visibility("hidden")]] Op {
  virtual ~Op() = default;
  /// Whether the calling thread can run a part now. A kernel's part needs the thread's block
  /// executor, which a helping host thread may fail to create; it then leaves the part to a
  /// worker. Pool lock held.
  [[nodiscard]] virtual bool can_run_here() noexcept { return true; }
  /// Runs part `part` of `parts` on the calling thread (a worker or a helping host thread),
  /// without the pool lock. A failure is recorded for finish(). Operations with no parts are
  /// never run.
  virtual void run_part(std::size_t /*part*/) noexcept {}
  /// Called once, under the pool lock, when the op reaches the head of its queue with
  /// parts == 0 or after its last part. A failed op moves its failure, in the node allocated
  /// with it, to the end of `failures`.
  virtual void finish(std::list<QueuedFailure>& /*failures*/) noexcept {}
  /// Called under the pool lock once `seq` is assigned.
  virtual void enqueued() noexcept {}
  /// The event this op holds its queue back for (a WaitOp's), or null. Asked of every op that
  /// reaches the head of a queue, so a virtual call rather than a dynamic_cast, which compares
  /// type names for types with external linkage.
  [[nodiscard]] virtual const CpuEvent* awaited() const noexcept { return nullptr; }
  /// The gate this op holds its queue back at until it opens, or null.
  [[nodiscard]] virtual Gate* gate() const noexcept { return nullptr; }
  /// Whether destroying the finished op may drop the last reference to a queue of another
  /// device (whose destruction takes the shared lock): it is then destroyed later, unlocked.
  [[nodiscard]] virtual bool retire_unlocked() const noexcept { return false; }

  std::uint64_t seq = 0;
  CpuQueue* queue = nullptr;
  std::size_t parts = 0;
  /// The next part to claim: threads attached to the op (Pool::run_attached) claim parts by
  /// incrementing it without the pool lock; it may run past `parts`.
  std::atomic<std::size_t> next_part{0};
  std::size_t attached = 0;  // threads attached now; guarded by the pool lock
  // The pool's list of ops with unclaimed parts (Pool::activate), guarded by the pool lock.
  Op* prev_active = nullptr;
  Op* next_active = nullptr;
  bool listed = false;         // on that list
  bool helped = false;         // a host thread ran a part of it (CpuDevice::help); pool lock
  Op* next_retired = nullptr;  // SharedState::first_retired's list
};

/// A kernel launch: its blocks in 16 ranges per worker (Partition), run by each thread's executor.
/// A checked launch (docs/checking.md) is one range: its blocks run one after another.
struct [[gnu::visibility("hidden")]] KernelOp final : Op {
  /// `registry`: the device's record of written device memory, which a checked launch reads and
  /// writes and an unchecked one keeps true (everything it may write counts as written).
  /// `stack_bytes` and `shared_limit` make each thread's executor (BlockExecutor). `label` is the
  /// device's (DeviceImpl::label), which outlives the op: its queue holds the device.
  KernelOp(const KernelLaunch& launch, std::size_t workers, const std::string& label, std::size_t stack_bytes,
           std::size_t shared_limit, check::ShadowRegistry& registry, bool checked);
  KernelOp(const KernelOp&) = delete;  // its launch points into it (inline_args_)
  KernelOp& operator=(const KernelOp&) = delete;
  [[nodiscard]] bool can_run_here() noexcept override;
  void run_part(std::size_t part) noexcept override;
  void finish(std::list<QueuedFailure>& failures) noexcept override;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  void run_range(std::size_t part);
  /// A checked launch's range, which counts what it changed as written.
  [[nodiscard]] RangeResult run_checked_range(std::uint64_t begin, std::uint64_t end);
  /// Records the first failure of the launch; later ones are dropped (their parts stop early).
  void record_failure(BlockFailure&& failure) noexcept;
  /// The exception that stopped a part before its blocks ran (no executor), as a failure.
  [[nodiscard]] BlockFailure failure_of_current_exception() const noexcept;
  /// How the launch ran (the trace line's path and Operation::execution).
  [[nodiscard]] std::string execution_path() const;
  /// Why the launch's cooperative blocks did not run a translated twin (the trace line).
  [[nodiscard]] std::string fission_reason() const;

  // The launch's arguments, copied at enqueue: here when they fit (most kernels': a launch then
  // allocates only its op), else in args_.
  alignas(16) std::byte inline_args_[128];
  std::unique_ptr<std::byte, FreeDeleter> args_;
  std::string_view name_;            // KernelLaunch::name: static storage
  const std::string* device_label_;  // the device's label, named in failures and trace lines
  std::size_t stack_bytes_;
  std::size_t shared_limit_;
  BlockTask task_;
  std::uint64_t blocks_ = 0;
  Partition partition_;
  /// Set by the first failing part, which then writes failure_slot_; also tells the other
  /// parts to stop.
  std::atomic<bool> failed_{false};
  std::list<QueuedFailure> failure_slot_;  // one node, allocated with the op
  std::mutex why_mutex_;
  std::string why_;
  std::atomic<bool> why_known_{false};  // `why_` is set: later parts need not build a reason
  std::atomic<std::uint64_t> cooperative_blocks_{0};
  std::atomic<std::uint64_t> plain_blocks_{0};
  std::atomic<std::uint64_t> translated_blocks_{0};  // run by the kernel's translated twin
  std::atomic<const char*> declined_{nullptr};       // why the translator left the kernel on fibers
  bool trace_ = false;                               // DEVCTX_TRACE, read at enqueue
  std::shared_ptr<trace::ExecutionNote> note_;       // the trace record's, while devctx::trace records
  Clock::time_point trace_start_;
  /// Checking mode's part, allocated only when there is one (docs/checking.md): a checked
  /// launch's task (task_.checked points to it), or the writable spans of an unchecked launch
  /// on a device where checked contexts track written memory (all of them count as written).
  struct Tracking {
    explicit Tracking(check::ShadowRegistry& r) : registry(r) {}
    check::ShadowRegistry& registry;
    CheckedTask checked;
    std::vector<LaunchSpan> writable;
  };
  std::unique_ptr<Tracking> tracking_;
};

/// A copy between any two kinds of memory, in up to 4 parts per worker of at least 1 MiB each
/// (Partition). What it writes of checked device memory counts as written (`registry`).
struct [[gnu::visibility("hidden")]] CopyOp final : Op {
  CopyOp(void* dst, const void* src, std::size_t bytes, std::size_t workers, check::ShadowRegistry& registry);
  void run_part(std::size_t part) noexcept override;

 private:
  check::ShadowRegistry& registry_;
  std::byte* dst_;
  const std::byte* src_;
  std::size_t bytes_;
  Partition partition_;  // in cache lines
};

/// Fills `count` elements of `element_bytes` each with one pattern, in up to 4 parts per worker of
/// at least 1 MiB each (Partition).
struct [[gnu::visibility("hidden")]] FillOp final : Op {
  FillOp(void* dst, std::size_t count, const void* value, std::size_t element_bytes, std::size_t workers,
         check::ShadowRegistry& registry);
  void run_part(std::size_t part) noexcept override;

 private:
  check::ShadowRegistry& registry_;
  std::byte* dst_;
  std::size_t count_;
  std::size_t element_bytes_;
  std::vector<std::byte> pattern_;
  bool uniform_ = false;
  Partition partition_;  // in elements
};

/// An event's point in its queue: records the event's sequence number when enqueued and its
/// time when it reaches the head of the queue.
struct [[gnu::visibility("hidden")]] MarkerOp final : Op {
  explicit MarkerOp(std::shared_ptr<CpuEvent> e) : event(std::move(e)) {}
  void finish(std::list<QueuedFailure>& failures) noexcept override;
  void enqueued() noexcept override;
  std::shared_ptr<CpuEvent> event;
};

/// Frees an allocation once everything before it in the queue has finished (and forgets its
/// record of written bytes, if it had one, before its memory can be reused). `guarded`: checking
/// mode's device memory (check/guarded_memory.hpp), unmapped rather than freed.
struct [[gnu::visibility("hidden")]] FreeOp final : Op {
  FreeOp(void* p, check::ShadowRegistry& r, bool g) : data(p), registry(r), guarded(g) {}
  void finish(std::list<QueuedFailure>& failures) noexcept override;
  void* data;
  check::ShadowRegistry& registry;
  bool guarded;
};

/// Runs a host function on a worker, in stream order (enqueue_host_task: users' tasks, the MPI
/// engine's collectives, waits for another backend's events). An Error it throws is the op's
/// failure, reported at synchronize.
struct [[gnu::visibility("hidden")]] HostTaskOp final : Op {
  explicit HostTaskOp(std::function<void()> f) : task(std::move(f)) {
    parts = 1;
    failure_slot.emplace_back();
  }
  void run_part(std::size_t part) noexcept override;
  void finish(std::list<QueuedFailure>& failures) noexcept override;
  std::function<void()> task;
  std::list<QueuedFailure> failure_slot;
  bool failed = false;
};

/// Holds its queue back until `event` has been reached (CpuQueue::pump checks).
struct [[gnu::visibility("hidden")]] WaitOp final : Op {
  explicit WaitOp(std::shared_ptr<CpuEvent> e) : event(std::move(e)) {}
  [[nodiscard]] const CpuEvent* awaited() const noexcept override { return event.get(); }
  [[nodiscard]] bool retire_unlocked() const noexcept override;
  std::shared_ptr<CpuEvent> event;
};

}  // namespace devctx::detail::cpu
