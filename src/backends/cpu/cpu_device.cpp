// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/cpu_device.cpp - the CPU device's description, its worker threads, and the
// one sequence by which any thread (worker or helping host thread) claims, runs and completes a
// part of an operation.
#include "backends/cpu/cpu_device.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "backends/cpu/block_executor.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/fiber.hpp"
#include "backends/cpu/operations.hpp"
#include "backends/cpu/settings.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"
#include "core/thread_name.hpp"

namespace devctx::detail {
namespace cpu {
namespace {

constexpr std::size_t kSharedLimit = 48 * 1024;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown processor";
}

void worker_main(Pool& pool, Pool::Sleeper& me) {
  // No block executor yet: a kernel's part makes it when the worker first runs one (and fails
  // that launch, not the worker, when it cannot). Copies and fills need none.
  std::unique_lock lock(pool.mutex);
  using SteadyClock = std::chrono::steady_clock;
  SteadyClock::time_point spin_until{};
  bool idle_started = false;  // spin_until is set for this idle stretch
  for (;;) {
    if (Op* op = pool.take()) {
      pool.run_attached(lock, op, false);
      idle_started = false;
      continue;
    }
    if (pool.stopping.load(std::memory_order_relaxed)) return;
    if (pool.spin_ns > 0 && pool.spinning < Pool::kMaxSpinners) {
      // Spins until spin_ns after the last work or activation it saw: an op that another thread
      // (a helping host thread) took first keeps it spinning, as the device is in use; the spin
      // waits for the next activation, so it never spins on the lock.
      // Whatever ended the spin, it looks for work again under the lock before sleeping: an op
      // activated as the spin timed out found it counted as spinning and woke no one.
      if (!idle_started) spin_until = SteadyClock::now() + std::chrono::nanoseconds(pool.spin_ns);
      idle_started = true;
      if (SteadyClock::now() < spin_until) {
        if (pool.spin(lock, spin_until)) idle_started = false;
        continue;
      }
    }
    pool.sleep(lock, me);
    idle_started = false;
  }
}

}  // namespace

void Pool::activate(Op* op) noexcept {
  op->next_active = nullptr;
  op->prev_active = last_active;
  (last_active != nullptr ? last_active->next_active : first_active) = op;
  last_active = op;
  op->listed = true;
  active_count.fetch_add(1, std::memory_order_relaxed);
}

void Pool::deactivate(Op* op) noexcept {
  (op->prev_active != nullptr ? op->prev_active->next_active : first_active) = op->next_active;
  (op->next_active != nullptr ? op->next_active->prev_active : last_active) = op->prev_active;
  op->prev_active = op->next_active = nullptr;
  op->listed = false;
  active_count.fetch_sub(1, std::memory_order_relaxed);
}

Op* Pool::take() noexcept {
  if (running >= capacity) return nullptr;
  for (Op* op = first_active; op != nullptr;) {
    Op* const next = op->next_active;
    deactivate(op);
    if (op->next_part.load(std::memory_order_relaxed) < op->parts) {
      activate(op);  // its next part goes after the other active ops'
      return op;
    }
    op = next;  // every part claimed: off the list (its attached threads complete it)
  }
  return nullptr;
}

void Pool::run_attached(std::unique_lock<std::mutex>& lock, Op* op, bool helping) noexcept {
  ++op->attached;
  ++running;
  lock.unlock();
  for (;;) {
    const std::size_t part = op->next_part.fetch_add(1, std::memory_order_relaxed);
    if (part >= op->parts) break;
    op->run_part(part);
    // A helping host thread runs one part of an op (a one-part op: all of it) and leaves the rest
    // to the workers, as a host thread ran the parts of a big kernel measurably slower than a
    // worker (vector add on one worker: 5.3 against 7 GB/s); other ops active: back to the
    // list, so that they take turns part by part.
    if (helping || active_count.load(std::memory_order_relaxed) > 1) break;
  }
  lock_soon(lock);
  --running;
  --op->attached;
  const bool claimed = op->next_part.load(std::memory_order_relaxed) >= op->parts;
  if (claimed && op->listed) deactivate(op);
  if (helping && claimable()) {
    // The slot this thread leaves: a spinning worker sees the count move, else one is woken.
    activations.fetch_add(1, std::memory_order_release);
    if (spinning == 0) wake(1);
  }
  if (!claimed || op->attached != 0) return;
  // The last thread on an op whose parts are all claimed: every part has run (the others'
  // effects are visible through the lock each took to detach).
  op->queue->complete(op);
  CpuQueue::release_idle(*this, lock);
}

bool Pool::claimable() noexcept {
  while (first_active != nullptr) {
    if (first_active->next_part.load(std::memory_order_relaxed) < first_active->parts) return true;
    deactivate(first_active);
  }
  return false;
}

void Pool::wake(std::size_t count) noexcept {
  while (count-- > 0 && first_sleeper != nullptr) {
    Sleeper* s = first_sleeper;
    first_sleeper = s->next;
    s->next = nullptr;
    --sleepers;
    s->woken = true;
    s->wake.notify_one();
  }
}

void Pool::sleep(std::unique_lock<std::mutex>& lock, Sleeper& me) noexcept {
  me.woken = false;
  me.next = first_sleeper;
  first_sleeper = &me;
  ++sleepers;
  me.wake.wait(lock, [&] { return me.woken; });
}

bool Pool::spin(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until) noexcept {
  ++spinning;
  const std::uint64_t seen = activations.load(std::memory_order_relaxed);
  lock.unlock();
  bool activated = false;
  for (unsigned i = 1;; ++i) {
    if (activations.load(std::memory_order_acquire) != seen) {
      activated = true;
      break;
    }
    if (stopping.load(std::memory_order_relaxed)) break;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
  }
  lock_soon(lock);
  --spinning;
  return activated;
}

std::shared_ptr<SharedState> shared_state() {
  static const auto state = std::make_shared<SharedState>();
  return state;
}

CpuDevice::CpuDevice(int id, int count) : pool_(std::make_shared<Pool>()) {
  const CpuSettings settings = read_settings();
  // Split devices share the CPU's workers, as GPUs of one machine share nothing: each gets its
  // own threads so that one device's work never waits for another's.
  const std::size_t workers = std::max<std::size_t>(1, settings.workers / std::size_t(std::max(count, 1)));
  pool_->stack_bytes = settings.stack_bytes;
  pool_->spin_ns = std::int64_t(settings.spin_us) * 1000;
  info_.api = Api::cpu;
  info_.id = id;
  const std::string threads = concat(workers, workers == 1 ? " thread" : " threads");
  info_.name = count == 1 ? concat("CPU (", threads, "): ", cpu_model())
                          : concat("CPU device ", id, " of ", count, " (", threads, "): ", cpu_model());
  info_.multiprocessors = unsigned(workers);
  info_.max_threads_per_block = kMaxBlockThreads;
  info_.max_block_dim = {1024, 1024, 64};
  info_.max_grid_dim = {2147483647u, 65535, 65535};
  info_.max_shared_bytes_per_block = kSharedLimit;
  info_.warp_size = 32;
  info_.total_memory_bytes = host_memory_bytes();
  pool_->capacity = workers;
  pool_->sleeper_slots = std::make_unique<Pool::Sleeper[]>(workers);
  pool_->threads.reserve(workers);
  pool_->ids.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    try {
      pool_->threads.emplace_back([pool = pool_, i] { worker_main(*pool, pool->sleeper_slots[i]); });
      name_thread(pool_->threads.back(), "devctx-worker", i);
    } catch (const std::exception& e) {
      // A thread the system will not start (too many threads, or no memory for its stack):
      // the device does not exist, and neither do the workers it started.
      stop_workers();
      fail(Errc::out_of_memory, "CPU device: cannot start worker thread ", i + 1, " of ", workers, " (", e.what(),
           "); the ", i,
           " already started were stopped. Set DEVCTX_CPU_THREADS to fewer workers or raise the "
           "system's limits on threads and memory");
    }
  }
  const std::lock_guard lock(pool_->mutex);
  for (const auto& t : pool_->threads) pool_->ids.push_back(t.get_id());
}

CpuDevice::~CpuDevice() { stop_workers(); }

void CpuDevice::stop_workers() noexcept {
  {
    const std::lock_guard lock(pool_->mutex);
    pool_->stopping = true;
    pool_->wake(pool_->sleepers);
  }
  // The last reference may be dropped by a worker finishing the last op: it cannot join itself.
  const bool on_worker = std::find(pool_->ids.begin(), pool_->ids.end(), std::this_thread::get_id()) != pool_->ids.end();
  for (auto& t : pool_->threads) {
    if (!t.joinable()) continue;
    if (on_worker)
      t.detach();
    else
      t.join();
  }
}

std::shared_ptr<QueueImpl> CpuDevice::create_queue() {
  auto queue = std::make_shared<CpuQueue>(std::static_pointer_cast<CpuDevice>(shared_from_this()));
  const std::lock_guard lock(pool_->mutex);
  std::erase_if(queues_, [](const std::weak_ptr<CpuQueue>& q) { return q.expired(); });
  queues_.push_back(queue);
  return queue;
}

void CpuDevice::synchronize_device() {
  check_not_in_kernel(*this, "synchronize_device");
  std::unique_lock lock(pool_->mutex);
  // The queues with work now (dropped contexts' and streams' included: a queue with work holds
  // itself), each waited for up to its last operation enqueued before this call.
  std::vector<std::pair<std::shared_ptr<CpuQueue>, std::uint64_t>> busy;
  busy.reserve(queues_.size());
  for (const auto& weak : queues_) {
    auto q = weak.lock();
    if (q == nullptr || q->reached(q->last_enqueued())) continue;
    const std::uint64_t seq = q->last_enqueued();
    busy.emplace_back(std::move(q), seq);
  }
  for (const auto& [queue, seq] : busy) queue->wait_until(lock, seq, false);
  lock.unlock();  // the queues are released without the lock (a queue's last reference)
}

bool CpuDevice::help(std::unique_lock<std::mutex>& lock, const CpuQueue* queue) noexcept {
  if (pool_->running >= pool_->capacity) return false;
  Op* op = pool_->first_active;
  while (op != nullptr && (op->queue != queue || op->helped || op->next_part.load(std::memory_order_relaxed) >= op->parts))
    op = op->next_active;
  if (op == nullptr || !op->can_run_here()) return false;
  op->helped = true;
  pool_->run_attached(lock, op, true);
  return true;
}

void CpuDevice::dispatch(Op* op) noexcept {
  Pool& pool = *pool_;
  pool.activate(op);
  pool.activations.fetch_add(1, std::memory_order_release);  // what a spinning worker watches
  // As many workers as the op has parts for, less those spinning (they see it at once), within
  // the free slots.
  const std::size_t free_slots = pool.capacity > pool.running ? pool.capacity - pool.running : 0;
  const std::size_t wanted = std::min(op->parts, free_slots);
  if (wanted > pool.spinning) pool.wake(wanted - pool.spinning);
}

}  // namespace cpu

void set_cpu_device_count(int count) { cpu::set_device_count(count); }

}  // namespace devctx::detail
