// SPDX-License-Identifier: Apache-2.0
// The CUDA queues and events: one non-blocking stream per queue (DeviceContext and each Stream)
// running allocations, frees, copies, fills and launches in order (large copies with pageable
// host memory through the device's staging engine, staging_engine.cpp), and the CUDA events that
// order queues after one another. A queue may also run on a stream made elsewhere
// (wrap_cuda_stream), which it never destroys. A failure that surfaces when waiting for a queue's work names
// the kernels enqueued on it since its last successful synchronize.
#include "backends/cuda/cuda_queue.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/fill_kernel.hpp"
#include "backends/cuda/staging_engine.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"
#include "core/operation.hpp"
#include "core/trace/hooks.hpp"

namespace devctx::detail::cuda {
namespace {

class CudaQueue final : public QueueImpl {
 public:
  /// A stream of its own with `priority` (0: the default priority).
  CudaQueue(std::shared_ptr<CudaDevice> device, int priority);
  /// A queue on `borrowed`, a stream made elsewhere, which it never destroys.
  CudaQueue(std::shared_ptr<CudaDevice> device, cudaStream_t borrowed) noexcept
      : QueueImpl(*device), device_(std::move(device)), stream_(borrowed), owns_stream_(false) {}
  ~CudaQueue() override;
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

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
  void* native_handle() const noexcept override { return stream_; }

  [[nodiscard]] CudaDevice& cuda() const noexcept { return *device_; }

  /// The kernels that a failure which surfaced when waiting for this queue's work may come
  /// from: those enqueued since the last successful synchronize ("" when there were none).
  [[nodiscard]] std::string recent_kernels();

 private:
  /// Called after a successful wait for everything enqueued so far.
  void forget_kernels() noexcept;
  void fill_doubling(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes);
  /// Whether the stream is being captured into a CUDA graph (or cannot say).
  [[nodiscard]] bool capturing() const noexcept;
  /// wait_for an event of a CPU device: a host task on the stream waits for it.
  void wait_for_host_event(const std::shared_ptr<EventImpl>& event);
  /// Drops the host tasks that have returned without failing.
  void forget_host_tasks() noexcept;
  /// After a successful wait for the stream: throws the first failure of the host tasks that
  /// have returned, and forgets them all.
  void report_host_tasks();

  /// One host task (enqueue_host_task; also a wait for a CPU device's event): the host function
  /// gets a pointer to it, and the queue drops it only once that function has returned (never in
  /// the function itself, which must make no CUDA call: dropping the last reference to an event
  /// could lead to one). The function writes a failure before `done`.
  struct HostTask {
    std::function<void()> task;
    std::atomic<bool> done{false};
    bool failed = false;
    Errc code = Errc::backend_error;
    std::string message;
  };
  std::mutex host_tasks_mutex_;
  std::vector<std::unique_ptr<HostTask>> host_tasks_;

  std::shared_ptr<CudaDevice> device_;
  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = true;

  // The names of the last kernels enqueued since the last successful synchronize, so that a
  // fault reported later can name its likely culprit.
  static constexpr std::size_t kRecentKernels = 4;
  std::mutex names_mutex_;
  std::array<std::string_view, kRecentKernels> recent_{};
  std::size_t launched_ = 0;  ///< since the last successful synchronize
};

/// The reporter check() uses for calls that wait for `queue`'s work: raises for a failure that
/// surfaced then, naming the kernels enqueued since the queue's last successful synchronize.
[[noreturn]] void raise(CudaQueue& queue, const CudaCall& call, std::string_view operation) {
  std::string kernels = queue.recent_kernels();
  if (is_sticky(call.status) && kernels.empty()) kernels = "a kernel enqueued on another stream of this device";
  raise(queue.cuda(), call, operation, kernels);
}

class CudaEvent final : public EventImpl {
 public:
  CudaEvent(std::shared_ptr<CudaQueue> queue, cudaEvent_t event) noexcept : queue_(std::move(queue)), event_(event) {}
  ~CudaEvent() override { ignore(cudaEventDestroy(event_)); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  DeviceImpl& device() const override { return queue_->device(); }
  QueueImpl& recorded_on() const override { return *queue_; }
  [[nodiscard]] cudaEvent_t handle() const noexcept { return event_; }
  void* native_handle() const noexcept override { return event_; }

  void synchronize() override {
    queue_->cuda().check_alive("Event::synchronize");
    check(DEVCTX_CUDA(cudaEventSynchronize(event_)), *queue_, "Event::synchronize");
  }
  bool query() override {
    queue_->cuda().check_alive("Event::query");
    const CudaCall call = DEVCTX_CUDA(cudaEventQuery(event_));
    if (call.status == cudaErrorNotReady) return false;
    check(call, *queue_, "Event::query");
    return true;
  }
  double elapsed_ms_since(EventImpl& start) override {
    auto& first = static_cast<CudaEvent&>(start);
    first.synchronize();
    synchronize();
    float ms = 0.0f;
    check(DEVCTX_CUDA(cudaEventElapsedTime(&ms, first.event_, event_)), queue_->cuda(), "elapsed_ms");
    return double(ms);
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  cudaEvent_t event_;
};

CudaQueue::CudaQueue(std::shared_ptr<CudaDevice> device, int priority)
    : QueueImpl(*device), device_(std::move(device)) {
  device_->check_alive("create_stream");
  device_->make_current();
  check(DEVCTX_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority)), *device_, "create_stream");
}

CudaQueue::~CudaQueue() {
  // A host function still to run reads its HostTask: wait for the stream before they go.
  forget_host_tasks();
  if (!host_tasks_.empty()) ignore(cudaStreamSynchronize(stream_));
  // Returns at once; work still enqueued completes and then the stream's resources go.
  // At process exit the runtime may already be unloading: nothing to report then.
  if (owns_stream_) ignore(cudaStreamDestroy(stream_));
}

void* CudaQueue::allocate(std::size_t bytes, MemKind kind) {
  const char* operation = allocation_operation(kind);
  device_->check_alive(operation);
  if (bytes == 0) return nullptr;
  device_->make_current();
  void* data = nullptr;
  CudaCall call;
  if (kind == MemKind::device) {
    call = DEVCTX_CUDA(cudaMallocAsync(&data, bytes, stream_));
  } else if (device_->host_pool() != nullptr) {
    call = DEVCTX_CUDA(cudaMallocFromPoolAsync(&data, bytes, device_->host_pool(), stream_));
  } else {
    device_->reap_host_frees(false);
    call = DEVCTX_CUDA(cudaHostAlloc(&data, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    if (call.ok()) {
      try {
        device_->note_fallback_host(data);
      } catch (...) {
        ignore(cudaFreeHost(data));
        throw;
      }
    }
  }
  if (call.status == cudaErrorMemoryAllocation) {
    ignore(call.status);  // reported here, with what the device or the machine has
    if (kind == MemKind::device) throw_out_of_memory(*device_, kind, bytes, "device memory", device_->memory_text());
    throw_out_of_memory(*device_, kind, bytes, "page-locked host memory",
                        host_memory_text() + " (page-locked memory may also be limited by `ulimit -l`)");
  }
  check(call, *device_, [&] { return concat(operation, " (", bytes_text(bytes), ')'); });
  return data;
}

void CudaQueue::free(void* data, std::size_t /*bytes*/, MemKind kind) noexcept {
  if (data == nullptr || device_->lost()) return;  // nothing to free, or no context to free it in
  if (kind == MemKind::host_pinned && device_->take_fallback_host(data)) {
    cudaEvent_t event = nullptr;
    if (!succeeded(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)))
      return;  // cannot order the free after the buffer's use: leak it
    if (!succeeded(cudaEventRecord(event, stream_))) {
      ignore(cudaEventDestroy(event));
      return;  // the buffer may still be in use: leak it rather than free it early
    }
    device_->defer_host_free(data, event);
    return;
  }
  // Pool memory (device or host): released in this stream's order; core has already made this
  // stream wait for the other streams that used the buffer.
  int current = -1;
  if (!succeeded(cudaGetDevice(&current)) || current != device_->id()) ignore(cudaSetDevice(device_->id()));
  ignore(cudaFreeAsync(data, stream_));
}

void CudaQueue::copy_peer(void* dst, DeviceImpl& dst_device, const void* src, DeviceImpl& src_device, std::size_t bytes) {
  device_->check_alive("enqueue_copy");
  // Core checked that both are GPUs, one of them this queue's.
  auto& other = static_cast<CudaDevice&>(&dst_device == device_.get() ? src_device : dst_device);
  device_->enable_peer_access(other.id());
  other.enable_peer_access(device_->id());
  device_->make_current();
  const auto operation = [&] {
    return concat("enqueue_copy (", bytes_text(bytes), " from ", src_device.label(), " to ", dst_device.label(), ')');
  };
  check(DEVCTX_CUDA(cudaMemcpyPeerAsync(dst, dst_device.info().id, src, src_device.info().id, bytes, stream_)),
        *device_, operation);
}

void CudaQueue::copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) {
  device_->check_alive("enqueue_copy");
  device_->make_current();
  const auto operation = [&] { return concat("enqueue_copy (", bytes_text(bytes), ')'); };
  if (!copy_waits_for_host(dst_kind, src_kind)) {
    check(DEVCTX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_)), *device_, operation);
    return;
  }
  // Between pageable host memory and the device, a large copy goes through the staging engine
  // unless the host range is registered (then the direct path is a DMA, held registered until
  // it is done), is not ordinary memory though devctx sees only a std::span (page-locked
  // already - a HostBuffer's data, cudaMallocHost memory, a framework's pinned tensor: staged,
  // it would move at 41 GB/s instead of 55 on the H200 - or device or managed memory, which the
  // copy threads cannot read), or the stream is being captured into a graph (a graph would keep
  // pointers to staging memory that later copies reuse; the direct path reports the capture as
  // before).
  const bool upload = src_kind == MemKind::host_pageable && dst_kind == MemKind::device;
  const bool download = dst_kind == MemKind::host_pageable && src_kind == MemKind::device;
  std::shared_lock<std::shared_mutex> registered;
  if ((upload || download) && bytes >= device_->transfer_settings().threshold) {
    registered = device_->host_registry().hold_if_registered(upload ? src : dst, bytes);
    if (!registered.owns_lock() && !capturing() && device_->stage_host_memory(upload ? src : dst, bytes)) {
      if (StagingEngine* engine = device_->staging()) {
        trace::note_staged_copy();
        const CudaCall call = upload ? engine->upload(dst, src, bytes, stream_)
                                     : engine->download(dst, src, bytes, stream_);
        if (!call.ok()) [[unlikely]] {
          // A sticky error is the fault of earlier work on the stream, not of this copy.
          if (is_sticky(call.status)) raise(*this, call, operation());
          raise(*device_, call, operation());
        }
        return;
      }
    }
  }
  HostRegistry::Pieces pieces;  // held until the copy below has finished
  if (!registered.owns_lock() && (upload || download))
    pieces = device_->host_registry().split_at_edges(upload ? src : dst, bytes);
  if (pieces.lengths.empty()) {
    check(DEVCTX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_)), *device_, operation);
  } else {
    std::size_t offset = 0;
    for (const std::size_t length : pieces.lengths) {
      check(DEVCTX_CUDA(cudaMemcpyAsync(static_cast<std::byte*>(dst) + offset,
                                        static_cast<const std::byte*>(src) + offset, length, cudaMemcpyDefault, stream_)),
            *device_, operation);
      offset += length;
    }
  }
  // Ordinary host memory may be reused as soon as enqueue_copy returns: wait for the copy.
  check(DEVCTX_CUDA(cudaStreamSynchronize(stream_)), *this, "enqueue_copy");
}

void CudaQueue::wait_for_host_event(const std::shared_ptr<EventImpl>& event) {
  // A graph would replay the host function long after this event: refuse, as for staging.
  if (capturing())
    fail(Errc::invalid_argument, "enqueue_wait_for on ", device_->label(),
         ": the stream is being recorded into a "
         "graph, which cannot wait for an event of ",
         event->device().label(),
         " (a CPU device); wait for it before "
         "recording, or record on a CPU stream");
  // The GPU stream stops at this host task until the CPU device has reached the event. A
  // failure of the CPU stream is reported there (at its synchronize), not here: the GPU goes on.
  // The task holds the event until the queue drops it, on a thread that calls into devctx.
  enqueue_host_task([event] {
    try {
      event->synchronize();
    } catch (...) {  // NOLINT(bugprone-empty-catch): reported on the CPU stream itself
    }
  });
}

void CudaQueue::enqueue_host_task(std::function<void()> task) {
  device_->check_alive("enqueue_host_task");
  // A graph would run the function at each replay, long after this queue let go of it.
  if (capturing())
    fail(Errc::invalid_argument, "enqueue_host_task on ", device_->label(),
         ": the stream is being captured into a "
         "CUDA graph; enqueue the task before or after the capture (or record a devctx::Graph, which keeps it)");
  forget_host_tasks();
  auto entry = std::make_unique<HostTask>();
  entry->task = std::move(task);
  HostTask* raw = entry.get();
  {
    const std::lock_guard lock(host_tasks_mutex_);
    host_tasks_.push_back(std::move(entry));
  }
  const auto run = [](void* data) {
    auto* t = static_cast<HostTask*>(data);
    try {
      t->task();
    } catch (const Error& e) {
      t->failed = true;
      t->code = e.code();
      try {
        t->message = e.what();
      } catch (...) {  // NOLINT(bugprone-empty-catch): reported without its message
      }
    } catch (const std::exception& e) {
      t->failed = true;
      try {
        t->message = e.what();
      } catch (...) {  // NOLINT(bugprone-empty-catch): reported without its message
      }
    } catch (...) {
      t->failed = true;
    }
    t->done.store(true, std::memory_order_release);
  };
  device_->make_current();
  const CudaCall call = DEVCTX_CUDA(cudaLaunchHostFunc(stream_, run, raw));
  if (!call.ok()) {
    raw->done.store(true, std::memory_order_release);  // never enqueued
    check(call, *device_, "enqueue_host_task");
  }
}

void CudaQueue::forget_host_tasks() noexcept {
  const std::lock_guard lock(host_tasks_mutex_);
  std::erase_if(host_tasks_,
                [](const std::unique_ptr<HostTask>& t) { return t->done.load(std::memory_order_acquire) && !t->failed; });
}

void CudaQueue::report_host_tasks() {
  std::vector<std::unique_ptr<HostTask>> finished;
  {
    const std::lock_guard lock(host_tasks_mutex_);
    const auto done = std::stable_partition(host_tasks_.begin(), host_tasks_.end(), [](const std::unique_ptr<HostTask>& t) {
      return !t->done.load(std::memory_order_acquire);
    });
    finished.assign(std::make_move_iterator(done), std::make_move_iterator(host_tasks_.end()));
    host_tasks_.erase(done, host_tasks_.end());
  }
  const auto first = std::find_if(finished.begin(), finished.end(), [](const auto& t) { return t->failed; });
  if (first == finished.end()) return;
  const auto more = std::count_if(first + 1, finished.end(), [](const auto& t) { return t->failed; });
  std::string message = (*first)->message.empty()
                            ? concat("a host task failed on ", device_->label(), " (enqueue_host_task)")
                            : std::move((*first)->message);
  if (more > 0) message += concat(" (and ", more, " later failure(s) on this stream)");
  throw Error((*first)->code, message);
}

bool CudaQueue::capturing() const noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // When the query itself fails, the direct path is the one that reports failures clearly.
  return !succeeded(cudaStreamIsCapturing(stream_, &status)) || status != cudaStreamCaptureStatusNone;
}

void CudaQueue::fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) {
  device_->check_alive("enqueue_memset");
  device_->make_current();
  const std::size_t bytes = count * element_bytes;
  const auto* pattern = static_cast<const unsigned char*>(value);
  const bool uniform = std::all_of(pattern, pattern + element_bytes, [&](unsigned char b) { return b == pattern[0]; });
  const auto operation = [&] { return concat("enqueue_memset (", count, " elements of ", element_bytes, " bytes)"); };
  if (uniform && kind == MemKind::device) {
    check(DEVCTX_CUDA(cudaMemsetAsync(dst, pattern[0], bytes, stream_)), *device_, operation);
    return;
  }
  if (element_bytes > kFillMaxPattern) return fill_doubling(dst, kind, count, value, element_bytes);

  // The kernel: device memory, or page-locked host memory that the device writes through its
  // mapping (same address under unified addressing).
  FillParams p;
  p.dst = static_cast<unsigned char*>(dst);
  p.bytes = bytes;
  p.width = unsigned(element_bytes);
  std::memcpy(p.pattern, pattern, element_bytes);
  const std::size_t period = std::lcm(element_bytes, std::size_t{16});
  std::uint64_t units = bytes;
  if (period <= kFillMaxPattern) {
    const auto address = reinterpret_cast<std::uintptr_t>(dst);
    p.head = unsigned(std::min<std::size_t>((16 - address % 16) % 16, bytes));
    p.period_vectors = unsigned(period / 16);
    for (std::size_t i = 0; i < period; ++i) p.vectors[i] = pattern[(p.head + i) % element_bytes];
    units = (bytes - p.head) / 16 + 32;
  }
  const unsigned threads = 256;
  const std::uint64_t wanted = (units + threads - 1) / threads;
  const unsigned blocks = unsigned(
      std::clamp<std::uint64_t>(wanted, 1, std::uint64_t(device_->info().multiprocessors) * 16));
  void* args[] = {&p};
  check(DEVCTX_CUDA(cudaLaunchKernel(fill_kernel(), dim3(blocks), dim3(threads), args, 0, stream_)), *device_, operation);
}

void CudaQueue::fill_doubling(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) {
  // Elements wider than the kernel's pattern: write one, then copy what is written onto the
  // rest, doubling each time (log2(count) copies). The first copy reads the caller's value
  // (ordinary host memory), so this waits like a copy from a std::span.
  auto* out = static_cast<unsigned char*>(dst);
  copy(out, kind, value, MemKind::host_pageable, element_bytes);
  const std::size_t bytes = count * element_bytes;
  for (std::size_t done = element_bytes; done < bytes; done *= 2)
    check(DEVCTX_CUDA(cudaMemcpyAsync(out + done, out, std::min(done, bytes - done), cudaMemcpyDefault, stream_)),
          *device_, "enqueue_memset");
}

void CudaQueue::launch(const KernelLaunch& launch) {
  device_->make_current();
  const Dim3 g = launch.config.grid_dim, b = launch.config.block_dim;
  const CudaCall call = DEVCTX_CUDA(cudaLaunchKernel(launch.cuda_function, dim3(g.x, g.y, g.z), dim3(b.x, b.y, b.z),
                                                     const_cast<void**>(launch.cuda_args), launch.config.shared_bytes,
                                                     stream_));
  if (!call.ok()) [[unlikely]] {
    // A sticky error here is the fault of earlier work, not of this launch.
    if (is_sticky(call.status)) raise(*this, call, launch_operation(launch.name));
    raise(*device_, call,
          concat(launch_operation(launch.name), " with grid_dim ", to_string(g), ", block_dim ", to_string(b),
                 ", shared_bytes ", launch.config.shared_bytes));
  }
  const std::lock_guard lock(names_mutex_);
  recent_[launched_ % kRecentKernels] = launch.name;
  ++launched_;
}

std::string CudaQueue::recent_kernels() {
  const std::lock_guard lock(names_mutex_);
  if (launched_ == 0) return {};
  if (launched_ == 1) return concat("kernel '", recent_[0], "'");
  const std::size_t shown = std::min(launched_, kRecentKernels);
  std::string kernels = concat("one of the ", launched_,
                               " kernels enqueued on this stream since its last synchronize (the last ", shown, ": ");
  for (std::size_t i = launched_ - shown; i < launched_; ++i)
    kernels += concat(i == launched_ - shown ? "" : ", ", '\'', recent_[i % kRecentKernels], '\'');
  kernels += ", most recent last)";
  return kernels;
}

void CudaQueue::forget_kernels() noexcept {
  const std::lock_guard lock(names_mutex_);
  launched_ = 0;
}

void CudaQueue::synchronize() {
  device_->check_alive("synchronize");
  check(DEVCTX_CUDA(cudaStreamSynchronize(stream_)), *this, "synchronize");
  forget_kernels();
  report_host_tasks();
}

std::shared_ptr<EventImpl> CudaQueue::record_event() {
  device_->check_alive("record_event");
  device_->make_current();
  cudaEvent_t event = nullptr;
  check(DEVCTX_CUDA(cudaEventCreate(&event)), *device_, "record_event");
  auto impl = std::make_shared<CudaEvent>(std::static_pointer_cast<CudaQueue>(shared_from_this()), event);
  check(DEVCTX_CUDA(cudaEventRecord(event, stream_)), *device_, "record_event");
  return impl;
}

void CudaQueue::wait_for(const std::shared_ptr<EventImpl>& event) {
  device_->check_alive("enqueue_wait_for");
  if (event->device().info().api != Api::cuda) return wait_for_host_event(event);
  check(DEVCTX_CUDA(cudaStreamWaitEvent(stream_, static_cast<CudaEvent&>(*event).handle(), 0)), *device_,
        "enqueue_wait_for");
}

}  // namespace

std::shared_ptr<QueueImpl> make_queue(std::shared_ptr<CudaDevice> device, int priority) {
  return std::make_shared<CudaQueue>(std::move(device), priority);
}

std::shared_ptr<QueueImpl> make_borrowed_queue(std::shared_ptr<CudaDevice> device, cudaStream_t stream) {
  return std::make_shared<CudaQueue>(std::move(device), stream);
}

}  // namespace devctx::detail::cuda
