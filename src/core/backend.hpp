// SPDX-License-Identifier: Apache-2.0
// src/core/backend.hpp - the one internal interface every backend implements.
//
// A backend provides devices (DeviceImpl), each with in-order queues (QueueImpl) and events
// (EventImpl). Core code validates every request before it reaches a backend, so backends see
// only well-formed work. Nothing here knows about CUDA.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <devctx/detail/base/seam.hpp>
#include <devctx/device_info.hpp>

#include "core/graph.hpp"
#include "core/host_access.hpp"
#include "core/host_registry.hpp"

namespace devctx::detail {

class QueueImpl;

class EventImpl {
 public:
  virtual ~EventImpl() = default;
  [[nodiscard]] virtual DeviceImpl& device() const = 0;
  /// The queue the event was recorded on (the trace puts a host wait for it on that stream's track).
  [[nodiscard]] virtual QueueImpl& recorded_on() const = 0;
  /// Blocks until the event's point has been reached; throws failures of work before it.
  virtual void synchronize() = 0;
  [[nodiscard]] virtual bool query() = 0;
  /// Milliseconds from `start` to this event; both have been reached.
  [[nodiscard]] virtual double elapsed_ms_since(EventImpl& start) = 0;
  /// The backend's own handle (a cudaEvent_t on CUDA), or null when the backend has none.
  [[nodiscard]] virtual void* native_handle() const noexcept { return nullptr; }
};

class QueueImpl : public std::enable_shared_from_this<QueueImpl> {
 public:
  explicit QueueImpl(DeviceImpl& device) noexcept : device_(device) {}
  virtual ~QueueImpl() = default;
  QueueImpl(const QueueImpl&) = delete;
  QueueImpl& operator=(const QueueImpl&) = delete;

  [[nodiscard]] DeviceImpl& device() const noexcept { return device_; }

  /// Checking mode (docs/checking.md), turned on by the context before the queue is used
  /// (host_access.hpp's enable_checking): the backend checks this queue's launches and guards
  /// its device memory. What the host has waited for is checking mode's own (host_access.cpp).
  [[nodiscard]] bool checking() const noexcept { return checking_; }

  /// Stream-ordered device allocation; throws Error(out_of_memory).
  [[nodiscard]] virtual void* allocate(std::size_t bytes, MemKind kind) = 0;
  /// Frees after all work enqueued so far on this queue. Never throws.
  virtual void free(void* data, std::size_t bytes, MemKind kind) noexcept = 0;
  /// `bytes` from src to dst. When either side is pageable host memory, returns only once the
  /// copy has read or written that memory.
  virtual void copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) = 0;
  /// `bytes` from device memory of `src_device` to device memory of `dst_device`: one of them
  /// is this queue's device, the other one of the same backend for which can_access_peer or
  /// can_copy_peer said yes (checked by core). Stream-ordered on this queue only.
  virtual void copy_peer(void* dst, DeviceImpl& dst_device, const void* src, DeviceImpl& src_device, std::size_t bytes);
  /// Fills `count` elements of `element_bytes` each with the pattern at `value`.
  virtual void fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) = 0;
  virtual void launch(const KernelLaunch& launch) = 0;
  /// Runs `task` on a host thread once all work enqueued before it on this queue has finished;
  /// later work waits for it. What it throws is the operation's failure: an Error keeps its
  /// code and message, any other exception becomes Error(backend_error); the queue's next
  /// synchronize reports it, as a kernel's failure. Returns at once.
  virtual void enqueue_host_task(std::function<void()> task) = 0;
  virtual void synchronize() = 0;
  [[nodiscard]] virtual std::shared_ptr<EventImpl> record_event() = 0;
  virtual void wait_for(const std::shared_ptr<EventImpl>& event) = 0;
  /// The backend's own handle (a cudaStream_t on CUDA), or null when the backend has none.
  [[nodiscard]] virtual void* native_handle() const noexcept { return nullptr; }
  /// A recording queue's recorder (core/graph.cpp); null for every queue that runs its work.
  [[nodiscard]] virtual GraphRecorder* recorder() noexcept { return nullptr; }

 private:
  friend void enable_checking(QueueImpl& queue);
  DeviceImpl& device_;
  bool checking_ = false;
};

class DeviceImpl : public std::enable_shared_from_this<DeviceImpl> {
 public:
  virtual ~DeviceImpl() = default;
  [[nodiscard]] virtual const DeviceInfo& info() const noexcept = 0;
  [[nodiscard]] virtual std::shared_ptr<QueueImpl> create_queue() = 0;
  /// Checks launch limits that only the backend knows (e.g. the kernel's own register-limited
  /// maximum block size on CUDA). Throws Error(invalid_launch). Default: nothing more to check.
  virtual void check_kernel_limits(const KernelLaunch& /*launch*/) {}
  /// Blocks until all work enqueued so far on every queue of this device has finished, including
  /// queues whose contexts and streams were dropped (DeviceContext::synchronize_device). Reports
  /// no failure of that work (each queue keeps its own for its synchronize); throws only when
  /// the device itself has failed (CUDA: a sticky error).
  virtual void synchronize_device() = 0;

  /// Whether this device's queues can wait for events of `other` in stream order
  /// (enqueue_wait_for), and so order a free after another device's use. Default: its own only.
  [[nodiscard]] virtual bool can_wait_for(const DeviceImpl& other) const noexcept { return &other == this; }
  /// Whether this device reads and writes `other`'s memory directly (DeviceContext::can_access_peer).
  [[nodiscard]] virtual bool can_access_peer(const DeviceImpl& other) const { return &other == this; }
  /// Whether this device's queues copy between its memory and `other`'s (copy_peer), directly
  /// or staged. Default: no other device.
  [[nodiscard]] virtual bool can_copy_peer(const DeviceImpl& other) const { return &other == this; }

  /// A queue over a native stream made elsewhere (a cudaStream_t on CUDA), which it never
  /// destroys. Throws Error(not_available) on a backend without native streams (the default).
  [[nodiscard]] virtual std::shared_ptr<QueueImpl> wrap_native_queue(void* native);
  /// Checks that [data, data + bytes) is memory kernels on this device can use; throws
  /// Error(invalid_argument or wrong_device) naming `operation` and what the memory is
  /// instead. Default: every address is fine (the CPU backend's device memory is host memory).
  virtual void check_device_memory(const void* /*data*/, std::size_t /*bytes*/, std::string_view /*operation*/) const {}
  /// Free and total bytes of the device's memory (DeviceContext::memory_info). Default: the
  /// host's (memory.cpp), for devices whose memory is host memory (the CPU backend).
  [[nodiscard]] virtual MemoryInfo memory_info() const;
  /// The stream priorities of the device (DeviceContext::stream_priority_range). Default: one
  /// priority, 0 (the CPU backend).
  [[nodiscard]] virtual StreamPriorityRange stream_priority_range() const { return {}; }
  /// A queue with `priority`, which core has checked to lie in stream_priority_range(). Default:
  /// create_queue() (a device with one priority).
  [[nodiscard]] virtual std::shared_ptr<QueueImpl> create_priority_queue(int /*priority*/) { return create_queue(); }
  /// The backend's own form of recorded work (core/graph.hpp), or null to have core replay the
  /// operations one by one (the default; also when the backend cannot express one of them).
  [[nodiscard]] virtual std::unique_ptr<NativeGraph> instantiate_graph(const std::vector<RecordedOp>& /*ops*/) {
    return nullptr;
  }

  /// Page-locks [data, data + bytes), ordinary host memory registered by the user
  /// (DeviceContext::register_host_memory, checked and reserved by core), so that this device
  /// copies it directly. Throws Error naming what was wrong. Default: nothing to do (the CPU
  /// backend copies host memory with memcpy whatever it is).
  virtual void pin_host_memory(const void* /*data*/, std::size_t /*bytes*/) {}
  /// Undoes pin_host_memory once no copy uses the range. Never throws.
  virtual void unpin_host_memory(const void* /*data*/) noexcept {}
  /// The host memory registered with this device.
  [[nodiscard]] HostRegistry& host_registry() noexcept { return host_registry_; }

  /// Runs `release` once `after` has been reached, on a thread that calls into devctx (the next
  /// synchronize of this device's work, or the creation of a view, or a context's end), never
  /// inside a backend's callback: a release may call other libraries and take their locks.
  /// Never throws: when it cannot be remembered, it is dropped (leaked) rather than run early.
  void defer_release(std::shared_ptr<EventImpl> after, std::function<void()> release) noexcept;
  /// Runs the deferred releases whose events have been reached. Never throws.
  void run_finished_releases() noexcept;

  /// "cpu:0 (CPU, 2 threads: AMD EPYC)" - how messages name the device. Built on first use and
  /// kept (a CPU launch names its device in case it fails: building the text for every launch
  /// took 40% of an empty launch + synchronize).
  [[nodiscard]] const std::string& label() const;

 private:
  // Deferred releases hold their event, and so their queue and this device: a device with
  // releases pending stays open until they have run (the next context on it runs them).
  std::mutex releases_mutex_;
  std::vector<std::pair<std::shared_ptr<EventImpl>, std::function<void()>>> releases_;
  std::atomic<std::size_t> pending_releases_{0};
  HostRegistry host_registry_;
  mutable std::once_flag label_once_;
  mutable std::string label_;
};

// Each backend's description and entry points: core/backend_descriptor.hpp.
/// DeviceContext::set_cpu_device_count (the CPU backend's, src/backends/cpu/cpu_device.cpp).
void set_cpu_device_count(int count);

}  // namespace devctx::detail
