// SPDX-License-Identifier: Apache-2.0
// devctx/stream.hpp - the enqueue verbs (StreamRef) and owned streams (Stream).
//
// Every enqueue_* verb returns at once: the work runs later, in order with everything else
// enqueued on the same stream, on the device's own workers. Nothing enqueued is guaranteed
// finished until synchronize() (or an event wait) returns. Work on different streams may
// overlap; order it with record_event() / enqueue_wait_for().
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include <devctx/buffer.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/detail/host/endpoints.hpp>
#include <devctx/detail/host/launch_kernel.hpp>
#include <devctx/event.hpp>
#include <devctx/launch.hpp>

namespace devctx {

class DeviceFunction;  // devctx/module.hpp

/// A non-owning reference to a stream: all the enqueue verbs. DeviceContext (its default
/// stream) and Stream are StreamRefs. Valid while the stream it refers to lives.
class StreamRef {
 public:
  /// A StreamRef of no stream: every verb throws Error(invalid_handle). Assign a
  /// DeviceContext or Stream to use it.
  StreamRef() noexcept : queue_(nullptr) {}

  /// A DeviceBuffer of `count` elements (contents uninitialised), allocated in stream order:
  /// usable by work enqueued after this call on this stream (or on streams that wait for it).
  /// Throws devctx::Error (out_of_memory) naming the size and the device's free memory, and
  /// enqueues nothing; also when count * sizeof(T) exceeds 2^62 bytes, which no device can
  /// address (a negative count converted to std::size_t is such a count).
  template <class T>
  [[nodiscard]] DeviceBuffer<T> enqueue_create_buffer(std::size_t count) {
    return detail::Access::make<DeviceBuffer<T>>(
        count, detail::Access::make<Buffer>(detail::queue_allocate(queue(), detail::MemKind::device, count, sizeof(T))));
  }

  /// A HostBuffer of `count` elements: host memory fit for fast transfers (page-locked on CUDA).
  /// Fill it once synchronize() has returned after its creation. Throws as
  /// enqueue_create_buffer does.
  template <class T>
  [[nodiscard]] HostBuffer<T> enqueue_create_host_buffer(std::size_t count) {
    return detail::Access::make<HostBuffer<T>>(count, detail::Access::make<Buffer>(detail::queue_allocate(
                                                          queue(), detail::MemKind::host_pinned, count, sizeof(T))));
  }

  /// Copies `src` into `dst`. Each may be a DeviceBuffer, HostBuffer, a slice of either, or
  /// ordinary host memory (std::span, std::vector, std::array). Element types must match
  /// (compile time) and sizes must be equal, else devctx::Error (size_mismatch) and nothing is
  /// enqueued. The two sides must not share memory (two overlapping slices of one buffer, a
  /// buffer onto itself): no backend copies overlapping ranges as memmove would, so such a copy
  /// throws devctx::Error (invalid_argument) naming both ranges and enqueues nothing; copy
  /// through a second buffer. With ordinary host memory on either side the call returns only
  /// once that memory has been read or written, so it may be reused at once; otherwise it
  /// returns immediately. (On CUDA, a large copy through a std::span whose memory is in fact
  /// page-locked - a HostBuffer's data, a framework's pinned tensor - or GPU memory is
  /// recognised and made directly, not through the staging engine: docs/cuda-backend.md.)
  template <class Dst, class Src>
  void enqueue_copy(Dst&& dst, Src&& src) {
    constexpr bool dst_ok = detail::is_endpoint_v<std::remove_reference_t<Dst>>;
    constexpr bool src_ok = detail::is_endpoint_v<std::remove_reference_t<Src>>;
    static_assert(dst_ok && src_ok,
                  "enqueue_copy: each side must be a DeviceBuffer, a HostBuffer, a slice of either, or a "
                  "contiguous host range (std::span, std::vector, std::array). A raw pointer carries no "
                  "size: wrap it as std::span(pointer, count)");
    if constexpr (dst_ok && src_ok) {
      using DT = detail::endpoint_element_t<std::remove_reference_t<Dst>>;
      using ST = detail::endpoint_element_t<std::remove_reference_t<Src>>;
      static_assert(!std::is_const_v<DT>, "enqueue_copy: the destination is read-only (const)");
      static_assert(std::is_same_v<std::remove_const_t<DT>, std::remove_const_t<ST>>,
                    "enqueue_copy: the element types of destination and source differ");
      const auto d = detail::endpoint(dst);
      const auto s = detail::endpoint(src);
      detail::queue_copy(queue(), d.ref, s.ref, sizeof(DT));
    }
  }

  /// Sets every element of `dst` (a DeviceBuffer, HostBuffer or slice) to `value`.
  template <class Dst, class V>
  void enqueue_memset(Dst&& dst, const V& value) {
    constexpr bool dst_ok = detail::is_endpoint_v<std::remove_reference_t<Dst>>;
    static_assert(dst_ok,
                  "enqueue_memset: the destination must be a DeviceBuffer, a HostBuffer or a slice of "
                  "either. A raw pointer carries no size");
    if constexpr (dst_ok) {
      using DT = detail::endpoint_element_t<std::remove_reference_t<Dst>>;
      static_assert(!std::is_const_v<DT>, "enqueue_memset: the destination is read-only (const)");
      static_assert(std::is_convertible_v<const V&, DT>, "enqueue_memset: the value does not convert to the element type");
      const auto d = detail::endpoint(dst);
      const DT v = static_cast<DT>(value);
      detail::queue_fill(queue(), d.ref, &v, sizeof(DT));
    }
  }

  /// Launches `Kernel` over `config.grid_dim` blocks of `config.block_dim` threads. Buffers
  /// become devctx::span in the kernel; scalars pass by value; host memory does not compile.
  /// The launch is checked against the device's limits first: devctx::Error (invalid_launch)
  /// and nothing enqueued when it does not fit. Failures while the kernel runs surface at the
  /// next synchronize().
  template <auto Kernel, class... Args>
  void enqueue_function(const LaunchConfig& config, Args&&... args) {
    detail::launch_kernel<Kernel>(queue(), config, std::forward<Args>(args)...);
  }

  /// Launches a kernel compiled at run time (DeviceContext::compile_function; defined in
  /// devctx/module.hpp, docs/runtime-kernels.md) on this stream. Each argument is checked against
  /// the kernel's compiled signature first: element type, const-ness, device and scalar range;
  /// a mismatch throws devctx::Error (invalid_argument, or wrong_device) naming the parameter and
  /// enqueues nothing. Then as the launch above.
  template <class... Args>
  void enqueue_function(const DeviceFunction& function, const LaunchConfig& config, Args&&... args);

  /// Blocks until all work enqueued on this stream has finished; throws devctx::Error for the
  /// first failure among it (then forgets it: the stream stays usable).
  void synchronize() { detail::queue_synchronize(queue()); }

  /// An event at the current end of this stream's work.
  [[nodiscard]] Event record_event() { return detail::Access::make<Event>(detail::queue_record_event(queue())); }

  /// Work enqueued on this stream after this call starts only once `event` has completed.
  /// Returns at once. The event may belong to another device: of the same backend (two GPUs, two
  /// CPU devices), or a GPU's event on a CPU device's stream and the reverse (a CPU worker, or a
  /// host function on the GPU's stream, waits on the host: docs/scale-out.md); a failure of the
  /// awaited work is reported by the stream it ran on.
  void enqueue_wait_for(const Event& event) { detail::queue_wait_for(queue(), event.impl()); }
  /// Work enqueued on this stream after this call starts only once all work enqueued so far on
  /// `other` (another DeviceContext's default stream, or a Stream) has completed. Returns at
  /// once. `other` may be of another device, as for enqueue_wait_for(const Event&). Waiting for
  /// itself is allowed and changes nothing (a stream runs its work in order).
  void enqueue_wait_for(StreamRef other) {
    const Event end = other.record_event();
    detail::queue_wait_for(queue(), end.impl());
  }

  /// Runs `task()` on a host thread once all work enqueued before it on this stream has
  /// finished; work enqueued after it waits for it (cccl's host_launch, cudaLaunchHostFunc).
  /// Returns at once; the task is copied (it must be copy-constructible: a graph replays it) and
  /// destroyed once it has run. What it throws is reported by this stream's next synchronize(),
  /// as a kernel's failure is: a devctx::Error with its code and message, any other exception as
  /// Error(backend_error) with its what(). A task must not wait for work of its own stream (it
  /// would wait for itself) nor call devctx enqueue verbs: it runs where a kernel would (on a
  /// GPU, on the CUDA runtime's callback thread, where CUDA calls are not allowed). Inside
  /// Graph::record on the recording stream, the task becomes part of the graph and runs at each
  /// replay. Throws Error(invalid_argument) for an empty std::function.
  template <class F>
    requires std::is_invocable_v<std::decay_t<F>&> && std::is_copy_constructible_v<std::decay_t<F>>
  void enqueue_host_task(F&& task) {
    detail::queue_host_task(queue(), std::function<void()>(std::forward<F>(task)));
  }

  [[nodiscard]] explicit operator bool() const noexcept { return queue_ != nullptr; }

 protected:
  /// For DeviceContext and Stream: `empty` is what a use of the handle without a stream (once
  /// moved from) says it is, a literal.
  StreamRef(detail::QueueImpl* queue, const char* empty) noexcept : queue_(queue), empty_(empty) {}
  void reset(detail::QueueImpl* queue) noexcept { queue_ = queue; }

 private:
  friend struct detail::Access;
  explicit StreamRef(detail::QueueImpl* queue) noexcept : queue_(queue) {}
  /// The backend queue (devctx's own code reaches it through detail::Access::queue).
  /// Throws Error(invalid_handle) naming the handle (a moved-from DeviceContext, a moved-from
  /// Stream, or a StreamRef of neither) when there is no stream.
  [[nodiscard]] detail::QueueImpl& queue() const {
    if (queue_ == nullptr) detail::throw_invalid_handle(empty_);
    return *queue_;
  }

  detail::QueueImpl* queue_;
  const char* empty_ =
      "a StreamRef of no stream (default-constructed, or copied from a moved-from DeviceContext "
      "or Stream)";
};

/// An owned stream of its device (from DeviceContext::create_stream()). Move-only; dropping it
/// never blocks: work already enqueued still runs.
class Stream : public StreamRef {
 public:
  Stream(Stream&& other) noexcept : StreamRef(other.owner_.get(), kEmpty), owner_(std::move(other.owner_)) {
    other.reset(nullptr);
  }
  Stream& operator=(Stream&& other) noexcept {
    owner_ = std::move(other.owner_);
    reset(owner_.get());
    other.reset(nullptr);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() = default;

 private:
  friend struct detail::Access;
  explicit Stream(std::shared_ptr<detail::QueueImpl> queue) noexcept
      : StreamRef(queue.get(), kEmpty), owner_(std::move(queue)) {}

  static constexpr const char* kEmpty = "a moved-from Stream: it has no stream any more";
  std::shared_ptr<detail::QueueImpl> owner_;
};

}  // namespace devctx

// The buffers' own verbs (declared in buffer.hpp) need StreamRef complete: defined here.
#include <devctx/detail/host/buffer_verbs.hpp>

// StreamRef::enqueue_function(const DeviceFunction&, ...) and the types it takes.
#include <devctx/module.hpp>
