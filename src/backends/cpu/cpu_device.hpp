// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_device.hpp - the CPU device: a pool of worker threads that runs the parts
// of the operations its queues hand over.
//
// The head operation of a queue is dispatched to the pool once everything before it has
// finished (and, for a wait, once its event has been reached); workers then claim its parts
// (ranges of blocks, chunks of a copy) until all are done. Ops of different queues are active
// at the same time and workers take parts from them in turn, so streams overlap without ever
// using more threads than the pool has. Idle workers sleep on a condition variable: an idle
// device uses no CPU.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/cpu/check/init_shadow.hpp"
#include "core/backend.hpp"

namespace devctx::detail::cpu {

struct Op;
class CpuQueue;

// Hidden, as the operations are (operations.hpp says why).

/// What every CPU device of the process shares: one lock, so that a queue waits for an event of
/// another CPU device (or for the other ranks of a collective) exactly as for one of its own -
/// the waiter links and gates are guarded by it - and the lists of what must be released with
/// that lock released.
struct [[gnu::visibility("hidden")]] SharedState {
  std::mutex mutex;
  /// Queues that became idle while holding a reference to themselves (CpuQueue::release_idle).
  CpuQueue* first_idle = nullptr;
  /// Finished ops that may hold the last reference to a queue of another device, whose
  /// destruction takes this lock: destroyed by release_idle with the lock released.
  Op* first_retired = nullptr;
};
/// The process's one SharedState (each pool holds it, so it outlives every device).
[[nodiscard]] std::shared_ptr<SharedState> shared_state();

/// Shared by the device and its workers, so a worker never touches a destroyed device.
struct [[gnu::visibility("hidden")]] Pool {
  Pool() : shared(shared_state()), mutex(shared->mutex) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() = default;

  /// Claims the next part of `op` (active), runs it on the calling thread with the lock
  /// released, and completes the op if that was the last part. The caller has checked that
  /// running < capacity and that the op can run on its thread. `helping`: the caller is a host
  /// thread that leaves the pool after this part, so a worker that waited for its slot is woken
  /// (a worker itself goes on to claim the next part). Never throws and allocates nothing.
  void run_part(std::unique_lock<std::mutex>& lock, Op* op, bool helping) noexcept;

  // The list of ops with unclaimed parts, linked through Op::prev_active/next_active: queueing
  // an op must not allocate once it is in its queue (operations.hpp says why). Workers take the
  // first op's next part and move that op to the end, so the active ops take turns.
  void activate(Op* op) noexcept;
  void deactivate(Op* op) noexcept;

  std::shared_ptr<SharedState> shared;
  std::mutex& mutex;  // shared->mutex
  std::condition_variable work;
  Op* first_active = nullptr;
  Op* last_active = nullptr;
  /// Threads running a part now (workers and helping host threads), at most `capacity`, so that
  /// the device never runs more threads than it has workers.
  std::size_t running = 0;
  std::size_t capacity = 1;
  std::size_t stack_bytes = 0;  // of each fiber stack of each thread's BlockExecutor
  bool stopping = false;
  std::vector<std::thread> threads;
  std::vector<std::thread::id> ids;
};

class [[gnu::visibility("hidden")]] CpuDevice final : public DeviceImpl {
 public:
  /// Device `id` of `count` CPU devices: reads the settings (settings.hpp) and starts its share
  /// of the workers (DEVCTX_CPU_THREADS / count, at least one). Throws Error(invalid_argument)
  /// for a malformed setting, and Error(out_of_memory) when a worker thread cannot be started
  /// (after stopping the ones that were).
  CpuDevice(int id, int count);
  ~CpuDevice() override;

  const DeviceInfo& info() const noexcept override { return info_; }
  std::shared_ptr<QueueImpl> create_queue() override;
  void synchronize_device() override;
  // CPU devices share one lock (SharedState) and their memory is host memory: each can wait for
  // and copy to and from every other. A CPU stream also waits for a GPU's events (a worker waits
  // on the host: CpuQueue::wait_for).
  [[nodiscard]] bool can_wait_for(const DeviceImpl& other) const noexcept override {
    return other.info().api == Api::cpu || other.info().api == Api::cuda;
  }
  [[nodiscard]] bool can_access_peer(const DeviceImpl& other) const override { return other.info().api == Api::cpu; }
  [[nodiscard]] bool can_copy_peer(const DeviceImpl& other) const override { return other.info().api == Api::cpu; }

  [[nodiscard]] Pool& pool() const noexcept { return *pool_; }
  [[nodiscard]] const std::shared_ptr<Pool>& pool_ptr() const noexcept { return pool_; }
  [[nodiscard]] std::size_t workers() const noexcept { return info_.multiprocessors; }
  /// Which bytes of the device memory that checked contexts allocated have been written.
  [[nodiscard]] check::ShadowRegistry& written() noexcept { return written_; }

  /// Runs one unclaimed part of an operation of `queue` on the calling (host) thread, which is
  /// waiting for that queue anyway: a synchronize() then does not wait for a worker to wake up.
  /// Pool lock held by `lock`, released while the part runs. False when there is no such part,
  /// or none this thread can run (it then waits for the workers). Never throws: a waiting
  /// thread reports nothing but the failures of the work it waits for.
  bool help(std::unique_lock<std::mutex>& lock, const CpuQueue* queue) noexcept;
  /// Makes `op`'s parts claimable; pool lock held.
  void dispatch(Op* op) noexcept;

 private:
  /// Stops the workers started so far and waits for them (all of them, unless called on one).
  void stop_workers() noexcept;

  std::shared_ptr<Pool> pool_;
  DeviceInfo info_;
  check::ShadowRegistry written_;
  /// Every queue of the device, for synchronize_device (guarded by the pool lock).
  std::vector<std::weak_ptr<CpuQueue>> queues_;
};

}  // namespace devctx::detail::cpu
