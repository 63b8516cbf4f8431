// src/backends/cpu/cpu_device.cpp - the CPU device's description, its worker threads, and the
// one sequence by which any thread (worker or helping host thread) claims, runs and completes a
// part of an operation.
#include "backends/cpu/cpu_device.hpp"

#include <algorithm>
#include <fstream>
#include <string>


#include "backends/cpu/block_executor.hpp"
#include "backends/cpu/cpu_queue.hpp"
#include "backends/cpu/fiber.hpp"
#include "backends/cpu/operations.hpp"
#include "backends/cpu/settings.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"

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

void worker_main(Pool& pool) {
  BlockExecutor::prepare_for_this_thread(pool.stack_bytes, kSharedLimit);
  std::unique_lock lock(pool.mutex);
  for (;;) {
    pool.work.wait(lock, [&] { return pool.stopping || (!pool.active.empty() && pool.running < pool.capacity); });
    if (pool.active.empty()) return;  // stopping
    pool.run_part(lock, pool.round_robin++ % pool.active.size(), false);
  }
}

}  // namespace

void Pool::run_part(std::unique_lock<std::mutex>& lock, std::size_t slot, bool helping) {
  Op* op = active[slot];
  const std::size_t part = op->next_part++;
  if (op->next_part >= op->parts) active.erase(active.begin() + std::ptrdiff_t(slot));
  ++running;
  lock.unlock();
  op->run_part(part);
  lock.lock();
  --running;
  if (helping) work.notify_one();
  if (++op->done_parts == op->parts) {
    std::vector<std::shared_ptr<CpuQueue>> keep;  // released after the lock
    op->queue->complete(op, keep);
    lock.unlock();
    keep.clear();
    lock.lock();
  }
}

CpuDevice::CpuDevice() : pool_(std::make_shared<Pool>()) {
  const CpuSettings settings = read_settings();
  const std::size_t workers = settings.workers;
  // Each worker reserves address space for a stack per thread of the largest block; reserving it
  // once here turns a failure into an error from the device's creation, not a dead worker.
  { const StackPool probe(settings.stack_bytes, kMaxBlockThreads + 1); }
  pool_->stack_bytes = settings.stack_bytes;
  info_.api = Api::cpu;
  info_.id = 0;
  info_.name = concat("CPU (", workers, workers == 1 ? " thread" : " threads", "): ", cpu_model());
  info_.multiprocessors = unsigned(workers);
  info_.max_threads_per_block = kMaxBlockThreads;
  info_.max_block_dim = {1024, 1024, 64};
  info_.max_grid_dim = {2147483647u, 65535, 65535};
  info_.max_shared_bytes_per_block = kSharedLimit;
  info_.warp_size = 32;
  info_.total_memory_bytes = host_memory_bytes();
  pool_->capacity = workers;
  for (std::size_t i = 0; i < workers; ++i) pool_->threads.emplace_back([pool = pool_] { worker_main(*pool); });
  const std::lock_guard lock(pool_->mutex);
  for (const auto& t : pool_->threads) pool_->ids.push_back(t.get_id());
}

CpuDevice::~CpuDevice() {
  {
    const std::lock_guard lock(pool_->mutex);
    pool_->stopping = true;
  }
  pool_->work.notify_all();
  // The last reference may be dropped by a worker finishing the last op: it cannot join itself.
  const bool on_worker = std::find(pool_->ids.begin(), pool_->ids.end(), std::this_thread::get_id()) != pool_->ids.end();
  for (auto& t : pool_->threads) {
    if (on_worker) t.detach();
    else t.join();
  }
}

std::shared_ptr<QueueImpl> CpuDevice::create_queue() {
  return std::make_shared<CpuQueue>(std::static_pointer_cast<CpuDevice>(shared_from_this()));
}

bool CpuDevice::help(std::unique_lock<std::mutex>& lock, const CpuQueue* queue) {
  auto& active = pool_->active;
  const auto it = std::find_if(active.begin(), active.end(), [&](const Op* op) { return op->queue == queue; });
  if (it == active.end() || pool_->running >= pool_->capacity) return false;
  BlockExecutor::prepare_for_this_thread(pool_->stack_bytes, kSharedLimit);  // before claiming: it may throw
  pool_->run_part(lock, std::size_t(it - active.begin()), true);
  return true;
}

void CpuDevice::dispatch(Op* op) {
  pool_->active.push_back(op);
  if (op->parts > 1) pool_->work.notify_all();
  else pool_->work.notify_one();
}

}  // namespace cpu

int cpu_device_count() noexcept { return 1; }

std::shared_ptr<DeviceImpl> open_cpu_device(int) { return std::make_shared<cpu::CpuDevice>(); }

}  // namespace devctx::detail
