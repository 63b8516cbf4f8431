// SPDX-License-Identifier: Apache-2.0
// devctx/untyped_buffer.hpp - devctx::Buffer: bytes of one device's memory with no element type,
// the one owner under DeviceBuffer<T> and HostBuffer<T> (as rmm's device_uvector<T> sits over
// device_buffer) and under DeviceView<T>.
//
// Ownership: a Buffer owns its memory and is move-only. Its destructor never blocks and never
// throws: it frees in stream order, after all work already enqueued on every stream that used
// the memory (for a DeviceView's bytes: runs the view's release callback then). A moved-from
// or default-constructed Buffer is empty; every accessor but size_bytes(), data() and
// operator bool throws devctx::Error (invalid_handle) on it.
//
// Typed access: DeviceBuffer<T>(std::move(bytes)) / HostBuffer<T>(std::move(bytes)) take it
// over; DeviceSlice<T>(bytes) / HostSlice<T>(bytes) view it (devctx/buffer.hpp). A typed buffer
// gives its bytes back with take_buffer().
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <utility>

#include <devctx/detail/base/access.hpp>
#include <devctx/detail/base/seam.hpp>

namespace devctx {

class StreamRef;  // devctx/stream.hpp

/// Where a Buffer's memory is.
enum class MemoryKind : unsigned char {
  device,  ///< a device's memory (DeviceBuffer, DeviceView)
  host,    ///< host memory fit for fast transfers (HostBuffer; page-locked on CUDA)
};

/// A buffer's memory after release(): devctx no longer frees it; its new owner does, by calling
/// `free(owner)` exactly once. That call never blocks and never throws; it frees the memory as
/// the buffer's destructor would have: in stream order, after all the work devctx had enqueued
/// on it, on every devctx stream that used it. Work the new owner enqueued on the memory
/// elsewhere must have finished (or been ordered before a devctx stream that used it) when it
/// calls `free`. Do not call it from a CUDA stream callback (it calls the CUDA runtime). The
/// device stays open until `free` is called.
template <class T>
struct ReleasedBuffer {
  T* data = nullptr;
  std::size_t size = 0;   ///< elements
  void* owner = nullptr;  ///< devctx's record of the memory, for `free`
  void (*free)(void* owner) noexcept = nullptr;
};

namespace detail {
/// The `free` of a ReleasedBuffer: the stream-ordered release of the record.
inline void free_released(void* owner) noexcept { AllocationReleaser{}(static_cast<Allocation*>(owner)); }
}  // namespace detail

/// `size_bytes()` bytes of one device's memory (or of host memory fit for its transfers).
/// Made by devctx only: take one from a typed buffer or view (take_buffer()).
class Buffer {
 public:
  /// An empty Buffer (no memory, no device).
  Buffer() noexcept = default;
  Buffer(Buffer&& other) noexcept
      : record_(std::move(other.record_)),
        data_(std::exchange(other.data_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  /// Frees the memory held before (in stream order), then takes `other`'s.
  Buffer& operator=(Buffer&& other) noexcept {
    record_ = std::move(other.record_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() = default;

  [[nodiscard]] std::size_t size_bytes() const noexcept { return bytes_; }
  /// The first byte (a device address for MemoryKind::device on CUDA; null when empty). Host
  /// memory read through it is not watched by checking mode: use a HostBuffer or HostSlice.
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// False for a default-constructed or moved-from Buffer.
  [[nodiscard]] explicit operator bool() const noexcept { return record_ != nullptr; }

  /// Device or host memory.
  [[nodiscard]] MemoryKind kind() const {
    return detail::allocation_kind(record()) == detail::MemKind::device ? MemoryKind::device : MemoryKind::host;
  }
  /// The device the memory belongs to (for host memory: the device it was allocated for).
  [[nodiscard]] const DeviceInfo& device() const { return detail::allocation_device_info(record()); }
  /// The home stream: the stream that allocated (or wrapped) the memory, where the buffer's own
  /// verbs enqueue and its stream-ordered free is ordered. Valid while the memory is owned
  /// (by this Buffer or whoever took it over). Defined in devctx/stream.hpp.
  [[nodiscard]] StreamRef stream() const;

  /// Hands the memory to another owner, who frees it with the result's `free` (see
  /// ReleasedBuffer; `size` counts bytes); this Buffer becomes empty.
  [[nodiscard]] ReleasedBuffer<std::byte> release() {
    (void)record();  // throws invalid_handle when empty
    ReleasedBuffer<std::byte> out{static_cast<std::byte*>(data_), bytes_, record_.release(), &detail::free_released};
    data_ = nullptr;
    bytes_ = 0;
    return out;
  }

 private:
  friend struct detail::Access;
  explicit Buffer(detail::AllocationPtr record) noexcept
      : record_(std::move(record)),
        data_(record_ ? detail::allocation_data(*record_) : nullptr),
        bytes_(record_ ? detail::allocation_size_bytes(*record_) : 0) {}

  [[nodiscard]] detail::Allocation& record() const {
    if (!record_) detail::throw_invalid_handle("a moved-from or default-constructed Buffer: it owns no memory");
    return *record_;
  }

  detail::AllocationPtr record_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace devctx
