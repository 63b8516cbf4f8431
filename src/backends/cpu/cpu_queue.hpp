// src/backends/cpu/cpu_queue.hpp - a CPU stream and its events: the in-order queue of
// operations, when its head is handed to the worker pool, the failures it reports at
// synchronize, and the queues waiting for one of its events.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/cpu/operations.hpp"
#include "core/backend.hpp"

namespace devctx::detail::cpu {

class CpuDevice;
struct Pool;

// Hidden, as the operations are (operations.hpp says why).
struct [[gnu::visibility("hidden")]] QueuedFailure {
  std::uint64_t seq;
  BlockFailure failure;
};

class [[gnu::visibility("hidden")]] CpuQueue final : public QueueImpl {
 public:
  explicit CpuQueue(std::shared_ptr<CpuDevice> device);
  ~CpuQueue() override = default;

  void* allocate(std::size_t bytes, MemKind kind) override;
  void free(void* data, std::size_t bytes, MemKind kind) noexcept override;
  void copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) override;
  void fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) override;
  void launch(const KernelLaunch& launch) override;
  void synchronize() override;
  std::shared_ptr<EventImpl> record_event() override;
  void wait_for(const std::shared_ptr<EventImpl>& event) override;

  // Called under the pool lock. Queues whose last reference must not be dropped under the lock
  // go to `keep`, which the caller clears after unlocking.
  /// Hands the head operation to the pool (or completes it, if it has no parts) once it may run.
  void pump(std::vector<std::shared_ptr<CpuQueue>>& keep);
  /// `op`, the head, has finished: records its failure, pops it and pumps this queue and the
  /// queues waiting for it.
  void complete(Op* op, std::vector<std::shared_ptr<CpuQueue>>& keep);
  [[nodiscard]] bool reached(std::uint64_t seq) const { return completed_ >= seq; }
  /// Waits (pool lock held by `lock`) until `seq` completed, helping with this queue's work
  /// meanwhile; with `report`, throws the first failure at or before `seq` and forgets the
  /// failures it covers.
  void wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report);

  std::condition_variable done;

 private:
  std::uint64_t push(std::unique_ptr<Op> op);
  [[nodiscard]] CpuDevice& cpu() const noexcept { return *device_; }

  std::shared_ptr<CpuDevice> device_;
  std::deque<std::unique_ptr<Op>> ops_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t completed_ = 0;
  bool head_dispatched_ = false;
  std::shared_ptr<CpuQueue> self_while_busy_;
  std::vector<QueuedFailure> failures_;
  std::vector<std::pair<std::uint64_t, std::weak_ptr<CpuQueue>>> waiters_;
};

struct [[gnu::visibility("hidden")]] CpuEvent final : EventImpl {
  CpuEvent(std::shared_ptr<CpuQueue> q, std::shared_ptr<Pool> p) : queue(std::move(q)), pool(std::move(p)) {}
  DeviceImpl& device() const override { return queue->device(); }
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
