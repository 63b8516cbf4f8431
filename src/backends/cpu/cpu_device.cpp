// The CPU device: a pool of worker threads that executes the in-order queues of one device.
//
// Each queue is a FIFO of operations. The head operation of a queue is dispatched to the pool
// once everything before it has finished (and, for a wait, once its event has been reached);
// workers then claim its parts (ranges of blocks, chunks of a copy) until all are done. Ops of
// different queues are active at the same time and workers take parts from them in turn, so
// streams overlap without ever using more threads than the pool has. Idle workers sleep on a
// condition variable: an idle device uses no CPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <devctx/detail/cpu_state.hpp>

#include "backends/cpu/block_executor.hpp"
#include "backends/cpu/fiber.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace {

using Clock = std::chrono::steady_clock;
using cpu::BlockFailure;

constexpr std::size_t kSharedLimit = 48 * 1024;
constexpr std::size_t kMinStackBytes = 16 * 1024;
constexpr std::size_t kMaxStackBytes = 64 * 1024 * 1024;
constexpr std::size_t kCopyChunk = std::size_t{1} << 20;

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0)
    fail(Errc::invalid_argument, name, "='", text, "' must be a positive integer");
  return std::size_t(value);
}

bool trace_enabled() {
  const char* text = std::getenv("DEVCTX_TRACE");
  return text != nullptr && *text != '\0' && std::strcmp(text, "0") != 0;
}

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

class CpuDevice;
class CpuQueue;
struct Pool;

// ---- operations -----------------------------------------------------------------------------

struct Op {
  virtual ~Op() = default;
  /// Runs part `part` of `parts`, on a worker.
  virtual void run_part(std::size_t part, cpu::BlockExecutor& block) = 0;
  /// Called once, under the pool lock, when the op reaches the head of its queue with
  /// parts == 0 or after its last part. Returns an error to report at synchronize, if any.
  virtual bool finish(BlockFailure& /*failure*/) { return true; }
  /// Called under the pool lock once `seq` is assigned.
  virtual void enqueued() {}

  std::uint64_t seq = 0;
  CpuQueue* queue = nullptr;
  std::size_t parts = 0;
  std::size_t next_part = 0;   // guarded by the pool lock
  std::size_t done_parts = 0;  // guarded by the pool lock
};

struct KernelOp final : Op {
  KernelOp(const KernelLaunch& l, std::size_t workers, std::string label)
      : name(l.name), device_label(std::move(label)) {
    const std::size_t align = std::max<std::size_t>(l.args_align, 16);
    args.reset(static_cast<std::byte*>(std::aligned_alloc(align, (l.args_size + align) / align * align)));
    if (!args) throw std::bad_alloc();
    std::memcpy(args.get(), l.args, l.args_size);
    task.launch = l;
    task.launch.name = name;
    task.launch.args = args.get();
    task.launch.cuda_args = nullptr;
    task.launch.buffers = nullptr;
    task.launch.buffer_count = 0;
    static std::atomic<std::uint64_t> launches{0};
    task.launch_id = ++launches;
    blocks = l.config.grid_dim.volume();
    parts = std::size_t(std::min<std::uint64_t>(blocks, workers * 16));
    per_part = (blocks + parts - 1) / parts;
    parts = std::size_t((blocks + per_part - 1) / per_part);
    if (trace_enabled()) trace_start = Clock::now();
  }

  struct FreeDeleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };

  void run_part(std::size_t part, cpu::BlockExecutor& run) override {
    const std::uint64_t begin = part * per_part, end = std::min(blocks, begin + per_part);
    cpu::RangeResult result = run.run_range(task, begin, end, failed, !why_known);
    if (result.failure) {
      const std::lock_guard lock(failure_mutex);
      if (!failed.exchange(true)) first_failure = std::move(*result.failure);
    }
    cooperative_blocks += result.cooperative;
    plain_blocks += result.plain + result.block_level;
    if (!result.why.empty()) {
      const std::lock_guard lock(failure_mutex);
      if (why.empty()) why = std::move(result.why);
      why_known = true;
    }
  }

  bool finish(BlockFailure& failure) override {
    if (trace_enabled()) print_trace();
    if (!failed) return true;
    failure = std::move(first_failure);
    return false;
  }

  void print_trace() const {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - trace_start).count();
    std::string path;
    if (task.launch.block_level) path = "block-level: each for_each_thread phase ran as a loop over the block's threads";
    else if (cooperative_blocks == 0) path = "plain loop: no thread reached barrier() or a warp operation";
    else
      path = concat("cooperative fibers for ", cooperative_blocks.load(), " of ", blocks, " blocks (", why, ")",
                    plain_blocks > 0 ? concat("; plain loop for the other ", plain_blocks.load()) : std::string());
    std::fprintf(stderr, "devctx trace: %s %.*s grid %s block %s shared %zu B: %s; %.3f ms from enqueue\n",
                 device_label.c_str(), int(name.size()), name.data(), to_string(task.launch.config.grid_dim).c_str(),
                 to_string(task.launch.config.block_dim).c_str(), task.launch.config.shared_bytes, path.c_str(), ms);
  }

  std::unique_ptr<std::byte, FreeDeleter> args;
  std::string name;
  std::string device_label;
  cpu::BlockTask task;
  std::uint64_t blocks = 0;
  std::uint64_t per_part = 1;
  std::atomic<bool> failed{false};
  std::mutex failure_mutex;
  BlockFailure first_failure;
  std::string why;
  std::atomic<bool> why_known{false};  // `why` is set: later parts need not build a reason
  std::atomic<std::uint64_t> cooperative_blocks{0};
  std::atomic<std::uint64_t> plain_blocks{0};
  Clock::time_point trace_start;
};

struct CopyOp final : Op {
  CopyOp(void* d, const void* s, std::size_t n, std::size_t workers) : dst(static_cast<std::byte*>(d)), src(static_cast<const std::byte*>(s)), bytes(n) {
    parts = std::min<std::size_t>((bytes + kCopyChunk - 1) / kCopyChunk, workers * 4);
    chunk = (bytes + parts - 1) / parts;
  }
  void run_part(std::size_t part, cpu::BlockExecutor&) override {
    const std::size_t begin = part * chunk, end = std::min(bytes, begin + chunk);
    if (begin < end) std::memmove(dst + begin, src + begin, end - begin);
  }
  std::byte* dst;
  const std::byte* src;
  std::size_t bytes;
  std::size_t chunk = 0;
};

struct FillOp final : Op {
  FillOp(void* d, std::size_t n, const void* value, std::size_t width, std::size_t workers)
      : dst(static_cast<std::byte*>(d)), count(n), element_bytes(width) {
    pattern.resize(width);
    std::memcpy(pattern.data(), value, width);
    uniform = std::all_of(pattern.begin(), pattern.end(), [&](std::byte b) { return b == pattern[0]; });
    parts = std::min<std::size_t>((count * width + kCopyChunk - 1) / kCopyChunk, workers * 4);
    chunk = (count + parts - 1) / parts;
  }
  void run_part(std::size_t part, cpu::BlockExecutor&) override {
    const std::size_t begin = part * chunk, end = std::min(count, begin + chunk);
    if (begin >= end) return;
    std::byte* out = dst + begin * element_bytes;
    const std::size_t n = end - begin;
    if (uniform) {
      std::memset(out, int(pattern[0]), n * element_bytes);
    } else if (element_bytes == 4) {
      std::uint32_t v;
      std::memcpy(&v, pattern.data(), 4);
      std::fill_n(reinterpret_cast<std::uint32_t*>(out), n, v);
    } else if (element_bytes == 8) {
      std::uint64_t v;
      std::memcpy(&v, pattern.data(), 8);
      std::fill_n(reinterpret_cast<std::uint64_t*>(out), n, v);
    } else {
      for (std::size_t i = 0; i < n; ++i) std::memcpy(out + i * element_bytes, pattern.data(), element_bytes);
    }
  }
  std::byte* dst;
  std::size_t count;
  std::size_t element_bytes;
  std::vector<std::byte> pattern;
  bool uniform = false;
  std::size_t chunk = 0;
};

struct CpuEvent;

/// Completes when it reaches the head of its queue (parts == 0): events and frees.
struct MarkerOp final : Op {
  explicit MarkerOp(std::shared_ptr<CpuEvent> e) : event(std::move(e)) {}
  void run_part(std::size_t, cpu::BlockExecutor&) override {}
  bool finish(BlockFailure&) override;
  void enqueued() override;
  std::shared_ptr<CpuEvent> event;
};

struct FreeOp final : Op {
  explicit FreeOp(void* p) : data(p) {}
  void run_part(std::size_t, cpu::BlockExecutor&) override {}
  bool finish(BlockFailure&) override {
    std::free(data);
    return true;
  }
  void* data;
};

struct WaitOp final : Op {
  explicit WaitOp(std::shared_ptr<CpuEvent> e) : event(std::move(e)) {}
  void run_part(std::size_t, cpu::BlockExecutor&) override {}
  std::shared_ptr<CpuEvent> event;
};

// ---- pool -------------------------------------------------------------------------------------

/// Shared by the device and its workers, so a worker never touches a destroyed device.
struct Pool {
  std::mutex mutex;
  std::condition_variable work;
  std::vector<Op*> active;
  std::size_t round_robin = 0;
  /// Threads running a part now (workers and helping host threads), at most `capacity`, so that
  /// the device never runs more threads than it has workers.
  std::size_t running = 0;
  std::size_t capacity = 1;
  bool stopping = false;
  std::vector<std::thread> threads;
  std::vector<std::thread::id> ids;
};

// ---- queues and events ------------------------------------------------------------------------

struct QueuedFailure {
  std::uint64_t seq;
  BlockFailure failure;
};

class CpuQueue final : public QueueImpl {
 public:
  CpuQueue(std::shared_ptr<CpuDevice> device);
  ~CpuQueue() override = default;

  void* allocate(std::size_t bytes, MemKind kind) override;
  void free(void* data, std::size_t bytes, MemKind kind) noexcept override;
  void copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) override;
  void fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) override;
  void launch(const KernelLaunch& launch) override;
  void synchronize() override;
  std::shared_ptr<EventImpl> record_event() override;
  void wait_for(const std::shared_ptr<EventImpl>& event) override;

  // Called under the pool lock.
  void pump(std::vector<std::shared_ptr<CpuQueue>>& keep);
  void complete(Op* op, std::vector<std::shared_ptr<CpuQueue>>& keep);
  [[nodiscard]] bool reached(std::uint64_t seq) const { return completed_ >= seq; }
  /// Waits (pool lock held by `lock`) until `seq` completed; throws the first failure at or
  /// before `seq` and forgets the failures it covers.
  void wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report);

  std::condition_variable done;

 private:
  std::uint64_t push(std::unique_ptr<Op> op);
  CpuDevice& cpu() const;

  std::shared_ptr<CpuDevice> device_;
  std::deque<std::unique_ptr<Op>> ops_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t completed_ = 0;
  bool head_dispatched_ = false;
  std::shared_ptr<CpuQueue> self_while_busy_;
  std::vector<QueuedFailure> failures_;
  std::vector<std::pair<std::uint64_t, std::weak_ptr<CpuQueue>>> waiters_;
};

struct CpuEvent final : EventImpl {
  CpuEvent(std::shared_ptr<CpuQueue> q, std::shared_ptr<Pool> p) : queue(std::move(q)), pool(std::move(p)) {}
  DeviceImpl& device() const override { return queue->device(); }
  void synchronize() override {
    std::unique_lock lock(pool->mutex);
    queue->wait_until(lock, seq, true);
  }
  bool query() override {
    const std::lock_guard lock(pool->mutex);
    return queue->reached(seq);
  }
  double elapsed_ms_since(EventImpl& start) override {
    auto& s = static_cast<CpuEvent&>(start);
    s.synchronize_quietly();
    synchronize_quietly();
    return std::chrono::duration<double, std::milli>(when - s.when).count();
  }
  void synchronize_quietly() {
    std::unique_lock lock(pool->mutex);
    queue->wait_until(lock, seq, false);
  }

  std::shared_ptr<CpuQueue> queue;
  std::shared_ptr<Pool> pool;
  std::uint64_t seq = 0;
  Clock::time_point when;
};

bool MarkerOp::finish(BlockFailure&) {
  event->when = Clock::now();
  return true;
}

void MarkerOp::enqueued() { event->seq = seq; }

// ---- the device ---------------------------------------------------------------------------------

class CpuDevice final : public DeviceImpl {
 public:
  CpuDevice() : pool_(std::make_shared<Pool>()) {
    const std::size_t workers = env_size("DEVCTX_CPU_THREADS", std::max(1u, std::thread::hardware_concurrency()));
    const std::size_t stack_bytes = env_size("DEVCTX_CPU_STACK_BYTES", 64 * 1024);
    if (stack_bytes < kMinStackBytes || stack_bytes > kMaxStackBytes)
      fail(Errc::invalid_argument, "DEVCTX_CPU_STACK_BYTES=", stack_bytes, " is outside ", bytes_text(kMinStackBytes),
           " .. ", bytes_text(kMaxStackBytes), " (the stack of each GPU thread that reaches a barrier)");
    // Each worker reserves address space for a stack per thread of the largest block; reserving it
    // once here turns a failure into an error from the device's creation, not a dead worker.
    { const cpu::StackPool probe(stack_bytes, cpu::kMaxBlockThreads + 1); }
    stack_bytes_ = stack_bytes;
    info_.api = Api::cpu;
    info_.id = 0;
    info_.name = concat("CPU (", workers, workers == 1 ? " thread" : " threads", "): ", cpu_model());
    info_.multiprocessors = unsigned(workers);
    info_.max_threads_per_block = cpu::kMaxBlockThreads;
    info_.max_block_dim = {1024, 1024, 64};
    info_.max_grid_dim = {2147483647u, 65535, 65535};
    info_.max_shared_bytes_per_block = kSharedLimit;
    info_.warp_size = 32;
    info_.total_memory_bytes = std::size_t(sysconf(_SC_PHYS_PAGES)) * std::size_t(sysconf(_SC_PAGESIZE));
    pool_->capacity = workers;
    for (std::size_t i = 0; i < workers; ++i)
      pool_->threads.emplace_back([pool = pool_, stack_bytes] { worker_main(*pool, stack_bytes); });
    const std::lock_guard lock(pool_->mutex);
    for (const auto& t : pool_->threads) pool_->ids.push_back(t.get_id());
  }

  ~CpuDevice() override {
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

  const DeviceInfo& info() const noexcept override { return info_; }
  std::shared_ptr<QueueImpl> create_queue() override {
    return std::make_shared<CpuQueue>(std::static_pointer_cast<CpuDevice>(shared_from_this()));
  }
  Pool& pool() const noexcept { return *pool_; }
  const std::shared_ptr<Pool>& pool_ptr() const noexcept { return pool_; }
  std::size_t workers() const noexcept { return info_.multiprocessors; }

  /// Runs one unclaimed part of an operation of `queue` on the calling (host) thread, which is
  /// waiting for that queue anyway: a synchronize() then does not wait for a worker to wake up.
  /// Pool lock held by `lock`, released while the part runs. False when there is no such part.
  bool help(std::unique_lock<std::mutex>& lock, const CpuQueue* queue) {
    auto& active = pool_->active;
    const auto it = std::find_if(active.begin(), active.end(), [&](const Op* op) { return op->queue == queue; });
    if (it == active.end() || pool_->running >= pool_->capacity) return false;
    cpu::BlockExecutor& block = host_block();  // before claiming: creating it may throw
    Op* op = *it;
    const std::size_t part = op->next_part++;
    if (op->next_part >= op->parts) active.erase(it);
    ++pool_->running;
    lock.unlock();
    op->run_part(part, block);
    lock.lock();
    --pool_->running;
    pool_->work.notify_one();  // a worker may have waited for this slot
    if (++op->done_parts == op->parts) {
      std::vector<std::shared_ptr<CpuQueue>> keep;  // released after the lock
      op->queue->complete(op, keep);
      lock.unlock();
      keep.clear();
      lock.lock();
    }
    return true;
  }

  /// Makes `op`'s parts claimable; pool lock held.
  void dispatch(Op* op) {
    pool_->active.push_back(op);
    if (op->parts > 1) pool_->work.notify_all();
    else pool_->work.notify_one();
  }

 private:
  static void worker_main(Pool& pool, std::size_t stack_bytes) {
    cpu::BlockExecutor block(stack_bytes, kSharedLimit);
    std::unique_lock lock(pool.mutex);
    for (;;) {
      pool.work.wait(lock, [&] { return pool.stopping || (!pool.active.empty() && pool.running < pool.capacity); });
      if (pool.active.empty()) return;  // stopping
      const std::size_t slot = pool.round_robin++ % pool.active.size();
      Op* op = pool.active[slot];
      const std::size_t part = op->next_part++;
      if (op->next_part >= op->parts) pool.active.erase(pool.active.begin() + std::ptrdiff_t(slot));
      ++pool.running;
      lock.unlock();
      op->run_part(part, block);
      lock.lock();
      --pool.running;
      if (++op->done_parts == op->parts) {
        std::vector<std::shared_ptr<CpuQueue>> keep;  // released after the lock
        op->queue->complete(op, keep);
        lock.unlock();
        keep.clear();
        lock.lock();
      }
    }
  }

  cpu::BlockExecutor& host_block() {
    thread_local std::unique_ptr<cpu::BlockExecutor> block;
    if (!block) block = std::make_unique<cpu::BlockExecutor>(stack_bytes_, kSharedLimit);
    return *block;
  }

  std::shared_ptr<Pool> pool_;
  DeviceInfo info_;
  std::size_t stack_bytes_ = 0;
};

// ---- CpuQueue ---------------------------------------------------------------------------------

CpuQueue::CpuQueue(std::shared_ptr<CpuDevice> device) : QueueImpl(*device), device_(std::move(device)) {}

CpuDevice& CpuQueue::cpu() const { return *device_; }

std::uint64_t CpuQueue::push(std::unique_ptr<Op> op) {
  std::vector<std::shared_ptr<CpuQueue>> keep;
  std::uint64_t seq;
  {
    const std::lock_guard lock(cpu().pool().mutex);
    op->seq = seq = next_seq_++;
    op->queue = this;
    op->enqueued();
    if (ops_.empty()) self_while_busy_ = std::static_pointer_cast<CpuQueue>(shared_from_this());
    ops_.push_back(std::move(op));
    pump(keep);
  }
  return seq;
}

void CpuQueue::pump(std::vector<std::shared_ptr<CpuQueue>>& keep) {
  while (!ops_.empty() && !head_dispatched_) {
    Op* op = ops_.front().get();
    if (auto* wait = dynamic_cast<WaitOp*>(op); wait != nullptr && !wait->event->queue->reached(wait->event->seq)) {
      wait->event->queue->waiters_.emplace_back(wait->event->seq, std::static_pointer_cast<CpuQueue>(shared_from_this()));
      return;
    }
    head_dispatched_ = true;
    if (op->parts == 0) {
      complete(op, keep);
      continue;
    }
    cpu().dispatch(op);
  }
}

void CpuQueue::complete(Op* op, std::vector<std::shared_ptr<CpuQueue>>& keep) {
  BlockFailure failure;
  if (!op->finish(failure)) failures_.push_back({op->seq, std::move(failure)});
  completed_ = op->seq;
  ops_.pop_front();
  head_dispatched_ = false;
  done.notify_all();
  std::vector<std::shared_ptr<CpuQueue>> ready;
  std::erase_if(waiters_, [&](auto& w) {
    if (w.first > completed_) return false;
    if (auto q = w.second.lock()) ready.push_back(std::move(q));
    return true;
  });
  for (auto& q : ready) {
    q->pump(keep);
    keep.push_back(std::move(q));
  }
  pump(keep);
  if (ops_.empty() && self_while_busy_) keep.push_back(std::move(self_while_busy_));
}

void CpuQueue::wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t seq, bool report) {
  // Kernel code waiting for device work would wait for its own launch forever (and on a GPU it
  // could not call the host API at all).
  if (cpu::tls.mode != cpu::Mode::none)
    fail(Errc::invalid_argument, "synchronize (or an event or pageable-copy wait) was called from inside a kernel "
                                 "on ", device().label(), "; kernels cannot wait for device work: wait on the host");
  while (completed_ < seq) {
    if (!cpu().help(lock, this)) done.wait(lock);
  }
  if (!report) return;
  auto first = std::find_if(failures_.begin(), failures_.end(), [&](const QueuedFailure& f) { return f.seq <= seq; });
  if (first == failures_.end()) return;
  const BlockFailure failure = first->failure;
  const auto more = std::count_if(failures_.begin(), failures_.end(), [&](const QueuedFailure& f) { return f.seq <= seq; }) - 1;
  std::erase_if(failures_, [&](const QueuedFailure& f) { return f.seq <= seq; });
  throw Error(failure.code, more > 0 ? concat(failure.message, " (and ", more, " later failure(s) on this stream)") : failure.message);
}

void* CpuQueue::allocate(std::size_t bytes, MemKind kind) {
  const std::size_t align = bytes >= (std::size_t{1} << 20) ? 4096 : 64;
  const std::size_t rounded = std::max<std::size_t>((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr)
    fail(Errc::out_of_memory, kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer", " on ",
         device().label(), ": cannot allocate ", bytes_text(bytes), "; the machine has ",
         bytes_text(device().info().total_memory_bytes), " of memory");
  return p;
}

void CpuQueue::free(void* data, std::size_t, MemKind) noexcept {
  try {
    push(std::make_unique<FreeOp>(data));
  } catch (...) {
    // Out of memory while queueing the free: leaking is the only safe choice.
  }
}

void CpuQueue::copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) {
  const std::uint64_t seq = push(std::make_unique<CopyOp>(dst, src, bytes, cpu().workers()));
  if (dst_kind == MemKind::host_pageable || src_kind == MemKind::host_pageable) {
    std::unique_lock lock(cpu().pool().mutex);
    wait_until(lock, seq, false);
  }
}

void CpuQueue::fill(void* dst, MemKind, std::size_t count, const void* value, std::size_t element_bytes) {
  push(std::make_unique<FillOp>(dst, count, value, element_bytes, cpu().workers()));
}

void CpuQueue::launch(const KernelLaunch& launch) {
  if (launch.cpu_run_block == nullptr)
    fail(Errc::invalid_argument, "enqueue_function<", launch.name, ">: no CPU code for this kernel");
  push(std::make_unique<KernelOp>(launch, cpu().workers(), device().label()));
}

void CpuQueue::synchronize() {
  std::unique_lock lock(cpu().pool().mutex);
  wait_until(lock, next_seq_ - 1, true);
}

std::shared_ptr<EventImpl> CpuQueue::record_event() {
  auto event = std::make_shared<CpuEvent>(std::static_pointer_cast<CpuQueue>(shared_from_this()), cpu().pool_ptr());
  push(std::make_unique<MarkerOp>(event));
  return event;
}

void CpuQueue::wait_for(const std::shared_ptr<EventImpl>& event) {
  push(std::make_unique<WaitOp>(std::static_pointer_cast<CpuEvent>(event)));
}

}  // namespace

int cpu_device_count() noexcept { return 1; }

std::shared_ptr<DeviceImpl> open_cpu_device(int) { return std::make_shared<CpuDevice>(); }

}  // namespace devctx::detail
