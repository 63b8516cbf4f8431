// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_device.hpp - the CPU device: a pool of worker threads that runs the parts
// of the operations its queues hand over.
//
// The head operation of a queue is dispatched to the pool once everything before it has
// finished (and, for a wait, once its event has been reached); workers then claim its parts
// (ranges of blocks, chunks of a copy) until all are done. Ops of different queues are active
// at the same time and workers take parts from them in turn, so streams overlap without ever
// using more threads than the pool has. Idle workers sleep (after a short bounded spin): an idle
// device uses no CPU. Pool says how parts are claimed and workers woken.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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

/// Tells the core this thread is spinning (less power; the sibling hyperthread runs).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// The cache line size assumed when keeping fields that one thread spins on apart from fields
/// other threads write (64 bytes on x86-64 and on most AArch64 cores).
inline constexpr std::size_t kCacheLine = 64;

/// Takes `lock` (deferred, not owned), trying for a short while before blocking: the pool lock
/// is held for well under a microsecond at a time, and a thread that blocks on it costs the
/// thread releasing it a wake-up (microseconds on a virtual machine) and itself a reschedule.
inline void lock_soon(std::unique_lock<std::mutex>& lock) noexcept {
  for (int i = 0; i < 128; ++i) {
    if (lock.try_lock()) return;
    cpu_relax();
  }
  lock.lock();
}

/// Shared by the device and its workers, so a worker never touches a destroyed device.
///
/// How parts are claimed: a thread (a worker, or a host thread helping in synchronize) takes the
/// pool lock once to attach itself to an active op (Pool::take), then claims that op's parts
/// with an atomic counter (Op::next_part) and runs them without the lock, and takes the lock
/// again only to detach; the last thread to detach from an op whose parts are all claimed
/// completes it. While more than one op is active, a thread detaches after each part so that
/// the active ops take turns as before.
///
/// How workers wake: each sleeping worker waits on its own condition variable, on a stack of
/// sleepers (the most recently busy worker first: its caches are warm). Activating an op wakes
/// as many sleepers as the op has parts (less the workers spinning, and never beyond the pool's
/// free slots), not all of them. A worker that runs out of work first spins for up to
/// DEVCTX_CPU_SPIN_US (at most kMaxSpinners workers at a time) watching for newly activated
/// work, then sleeps: back-to-back launches need no wake-up, and an idle device uses no CPU.
struct [[gnu::visibility("hidden")]] Pool {
  /// Workers that spin at the same time before sleeping.
  static constexpr std::size_t kMaxSpinners = 1;

  /// A worker's place on the stack of sleepers.
  struct Sleeper {
    std::condition_variable wake;
    bool woken = false;  // set by the thread that popped it (or by stop)
    Sleeper* next = nullptr;
  };

  Pool() : shared(shared_state()), mutex(shared->mutex) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() = default;

  /// The next active op a thread may attach to (parts left, a slot free: running < capacity),
  /// moved to the end of the active list so the active ops take turns; ops whose parts are all
  /// claimed are taken off the list on the way. Null when there is none. Pool lock held.
  [[nodiscard]] Op* take() noexcept;
  /// Attaches the calling thread to `op` (which take() returned, or which a helping host thread
  /// found and checked it can run), claims and runs parts of it with the lock released until
  /// none is left (or after one part, while other ops are active or when `helping`), detaches,
  /// and completes the op if it was the last thread on it with every part claimed. `helping`: a
  /// host thread that leaves the pool after one part, so a worker takes its slot if work is left.
  /// Pool lock held by `lock` on entry and exit. Never throws and allocates nothing.
  void run_attached(std::unique_lock<std::mutex>& lock, Op* op, bool helping) noexcept;

  // The list of ops with unclaimed parts, linked through Op::prev_active/next_active: queueing
  // an op must not allocate once it is in its queue (operations.hpp says why).
  void activate(Op* op) noexcept;
  void deactivate(Op* op) noexcept;
  /// Wakes up to `count` sleeping workers (pool lock held).
  void wake(std::size_t count) noexcept;
  /// Whether an active op has unclaimed parts; takes fully claimed ops off the list on the way.
  /// Pool lock held.
  [[nodiscard]] bool claimable() noexcept;
  /// The calling worker sleeps on `me` until woken (pool lock held by `lock`).
  void sleep(std::unique_lock<std::mutex>& lock, Sleeper& me) noexcept;
  /// The calling worker spins, with the lock released, until an op is activated, the pool stops,
  /// or `until`; true when it saw an activation. Pool lock held on entry and exit.
  bool spin(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until) noexcept;

  /// Counts dispatched ops (not an active op's turns): what a spinning worker watches, so that
  /// an op taken by others before it looked does not send it round again. It and `stopping`,
  /// the spinning worker's other read, have a cache line of their own: when they shared one
  /// with the fields below, which every launch writes under the lock, each of those writes
  /// first had to take the line back from the spinning reader (16-core H200 host, empty launch
  /// + synchronize with 16 workers: see docs/cpu-backend.md, "The pool on many cores").
  alignas(kCacheLine) std::atomic<std::uint64_t> activations{0};
  std::atomic<bool> stopping{false};

  alignas(kCacheLine) std::shared_ptr<SharedState> shared;
  std::mutex& mutex;  // shared->mutex
  Op* first_active = nullptr;
  Op* last_active = nullptr;
  /// How many ops are on the active list: read without the lock by spinning workers and by a
  /// thread deciding whether to take turns.
  std::atomic<std::size_t> active_count{0};
  /// Threads attached to an op now (workers and helping host threads), at most `capacity`, so
  /// that the device never runs more threads than it has workers.
  std::size_t running = 0;
  std::size_t capacity = 1;
  std::size_t stack_bytes = 0;  // of each fiber stack of each thread's BlockExecutor
  std::int64_t spin_ns = 0;     // DEVCTX_CPU_SPIN_US
  std::size_t spinning = 0;     // workers spinning now
  Sleeper* first_sleeper = nullptr;
  std::size_t sleepers = 0;
  std::unique_ptr<Sleeper[]> sleeper_slots;  // one per worker
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
  // and copy to and from every other. A CPU stream also waits for every other device's events
  // (a worker waits on the host: CpuQueue::wait_for).
  [[nodiscard]] bool can_wait_for(const DeviceImpl& /*other*/) const noexcept override { return true; }
  [[nodiscard]] bool can_access_peer(const DeviceImpl& other) const override { return other.info().api == Api::cpu; }
  [[nodiscard]] bool can_copy_peer(const DeviceImpl& other) const override { return other.info().api == Api::cpu; }

  [[nodiscard]] Pool& pool() const noexcept { return *pool_; }
  [[nodiscard]] const std::shared_ptr<Pool>& pool_ptr() const noexcept { return pool_; }
  [[nodiscard]] std::size_t workers() const noexcept { return info_.multiprocessors; }
  /// Which bytes of the device memory that checked contexts allocated have been written.
  [[nodiscard]] check::ShadowRegistry& written() noexcept { return written_; }

  /// Runs one unclaimed part of an operation of `queue` (once per operation) on the calling
  /// (host) thread, which is waiting for that queue anyway (Pool::run_attached): a synchronize()
  /// then does not wait for a worker to wake up. Pool lock held by `lock`, released while the parts
  /// run. False when there is no such part,
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
