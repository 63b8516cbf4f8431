// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_queue.hpp - a CPU stream and its events: the in-order queue of
// operations, when its head is handed to the worker pool, the failures it reports at
// synchronize, and the queues waiting for one of its events.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_device.hpp"  // kCacheLine
#include "backends/cpu/operations.hpp"
#include "core/backend.hpp"

namespace devctx::detail::cpu {

class CpuDevice;
struct Pool;

// Hidden, as the operations are (operations.hpp says why).
class [[gnu::visibility("hidden")]] CpuQueue final : public QueueImpl {
 public:
  explicit CpuQueue(std::shared_ptr<CpuDevice> device);
  ~CpuQueue() override = default;

  void* allocate(std::size_t bytes, MemKind kind) override;
  void free(void* data, std::size_t bytes, MemKind kind) noexcept override;
  void copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) override;
  void copy_peer(void* dst, DeviceImpl& dst_device, const void* src, DeviceImpl& src_device, std::size_t bytes) override;
  void fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) override;
  void launch(const KernelLaunch& launch) override;
  void enqueue_host_task(std::function<void()> task) override;
  void synchronize() override;
  std::shared_ptr<EventImpl> record_event() override;
  void wait_for(const std::shared_ptr<EventImpl>& event) override;

  // Called under the pool lock. None of these allocates or throws: an operation that is in its
  // queue always runs and completes (operations.hpp says why).
  /// Hands the head operation to the pool (or completes it, if it has no parts) once it may run.
  void pump() noexcept;
  /// `op`, the head, has finished: queues its failure, pops it and pumps this queue and the
  /// queues waiting for it. A queue left without work is put on the pool's idle list; the
  /// caller calls release_idle once it may release the lock.
  void complete(Op* op) noexcept;
  [[nodiscard]] bool reached(std::uint64_t seq) const noexcept {
    return completed_.load(std::memory_order_acquire) >= seq;
  }
  /// The sequence number of the last operation enqueued so far.
  [[nodiscard]] std::uint64_t last_enqueued() const noexcept { return next_seq_ - 1; }
  /// Waits (pool lock held by `lock`) until `seq` completed, helping with this queue's work
  /// meanwhile; with `report`, throws the first failure at or before `seq` and forgets the
  /// failures it covers. Throws nothing else, except when called from kernel code.
  void wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report);

  /// A queue keeps a reference to itself while it has work (self_while_busy_), so that work
  /// enqueued on a stream that is then dropped still runs. Dropping that reference may destroy
  /// the queue and, with the last queue, the device, which takes the pool lock: so a queue that
  /// runs out of work goes on the pool's idle list, and the thread that completed its last
  /// operation calls this, which drops each such reference with the lock released.
  /// Also destroys the retired ops (Op::retire_unlocked), likewise.
  static void release_idle(Pool& pool, std::unique_lock<std::mutex>& lock) noexcept;

  /// Enqueues an op made elsewhere in the backend (the collectives of CPU devices). Throws
  /// only std::bad_alloc, and then nothing is queued.
  std::uint64_t enqueue(std::unique_ptr<Op> op) { return push(std::move(op)); }
  /// Called by Gate::open_now for each queue that waited at it. Shared lock held.
  void gate_opened() noexcept {
    gate_linked_ = false;
    pump();
  }
  [[nodiscard]] CpuDevice& cpu_device() const noexcept { return *device_; }

  std::condition_variable done;

 private:
  std::uint64_t push(std::unique_ptr<Op> op);
  /// Spins with the pool lock released until `seq` is reached or DEVCTX_CPU_SPIN_US passed.
  void spin_until_reached(std::unique_lock<std::mutex>& lock, std::uint64_t seq) noexcept;
  void note_idle() noexcept;
  [[nodiscard]] CpuDevice& cpu() const noexcept { return *device_; }

  std::shared_ptr<CpuDevice> device_;
  std::deque<std::unique_ptr<Op>> ops_;
  std::uint64_t next_seq_ = 1;
  /// Written under the pool lock; read without it by a waiting host thread that spins. On a
  /// cache line of its own (kCacheLine), so that the spinning reads do not take away the line of
  /// the fields the completing thread writes just before it (Pool::activations says why).
  alignas(kCacheLine) std::atomic<std::uint64_t> completed_{0};
  alignas(kCacheLine) bool head_dispatched_ = false;
  std::shared_ptr<CpuQueue> self_while_busy_;
  /// Failures not reported yet; each node came with its operation (KernelOp), so queueing a
  /// failure needs no memory.
  std::list<QueuedFailure> failures_;
  // The queues whose head waits for an event of this queue, linked through next_waiter_: a
  // queue waits for at most one event at a time, so the links need no memory of their own.
  CpuQueue* first_waiter_ = nullptr;
  CpuQueue* next_waiter_ = nullptr;
  std::uint64_t waiting_for_ = 0;  // the awaited event's sequence number while linked, else 0
  bool gate_linked_ = false;       // the head op's gate holds this queue among its waiters
  // The pool's idle list (release_idle).
  CpuQueue* next_idle_ = nullptr;
  bool idle_listed_ = false;
};

/// Throws Error(invalid_argument) when called from kernel code running on the CPU backend:
/// kernel code waiting for device work would wait for its own launch forever (and on a GPU it
/// could not call the host API at all).
void check_not_in_kernel(const DeviceImpl& device, const char* operation);

struct [[gnu::visibility("hidden")]] CpuEvent final : EventImpl {
  CpuEvent(std::shared_ptr<CpuQueue> q, std::shared_ptr<Pool> p) : queue(std::move(q)), pool(std::move(p)) {}
  DeviceImpl& device() const override { return queue->device(); }
  QueueImpl& recorded_on() const override;
  void synchronize() override;
  bool query() override;
  double elapsed_ms_since(EventImpl& start) override;
  void synchronize_quietly();

  std::shared_ptr<CpuQueue> queue;
  std::shared_ptr<Pool> pool;
  std::uint64_t seq = 0;
  Clock::time_point when;
};

}  // namespace devctx::detail::cpu
