// SPDX-License-Identifier: Apache-2.0
// devctx/buffer.hpp - device and host buffers, and their slices.
//
// Ownership: DeviceBuffer and HostBuffer own their memory and are move-only. Their destructor
// never blocks and never throws: it frees in stream order, after all work already enqueued on
// every stream that used the buffer, so dropping a buffer right after enqueueing work that uses
// it is safe. A moved-from buffer is empty; using it throws devctx::Error (invalid_handle).
// Slices (DeviceSlice, HostSlice) are non-owning views, valid while their buffer lives.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include <devctx/detail/host/checked_size.hpp>
#include <devctx/detail/host/seam.hpp>
#include <devctx/span.hpp>

namespace devctx {

template <class T>
class DeviceBuffer;
template <class T>
class HostBuffer;

/// A buffer's memory after DeviceBuffer::release() or HostBuffer::release(): devctx no longer
/// frees it; its new owner does, by calling `free(owner)` exactly once. That call never blocks
/// and never throws; it frees the memory as the buffer's destructor would have: in stream order,
/// after all the work devctx had enqueued on it, on every devctx stream that used it. Work the
/// new owner enqueued on the memory elsewhere must have finished (or been ordered before a
/// devctx stream that used it) when it calls `free`. Do not call it from a CUDA stream
/// callback (it calls the CUDA runtime). The device stays open until `free` is called.
template <class T>
struct ReleasedBuffer {
  T* data = nullptr;
  std::size_t size = 0;                     ///< elements
  void* owner = nullptr;                    ///< devctx's record of the memory, for `free`
  void (*free)(void* owner) noexcept = nullptr;
};

namespace detail {
/// What enqueue_copy reads of a HostBuffer or HostSlice: its address without the host-access
/// check (enqueueing more work on a buffer is not touching it).
struct HostRaw {
  template <class S>
  [[nodiscard]] static auto* data(const S& s) noexcept {
    return s.data_;
  }
};

/// The `free` of a ReleasedBuffer: the stream-ordered release of the record.
inline void free_released(void* owner) noexcept { AllocationReleaser{}(static_cast<Allocation*>(owner)); }

template <class T>
ReleasedBuffer<T> release_buffer(AllocationPtr& allocation, T*& data, std::size_t& size, const char* what) {
  if (!allocation) throw_invalid_handle(what);
  ReleasedBuffer<T> out{data, size, allocation.release(), &free_released};
  data = nullptr;
  size = 0;
  return out;
}

inline void check_slice(const char* what, std::size_t offset, std::size_t count, std::size_t size) {
  const auto end = checked_add(offset, count);
  if (!end || *end > size) throw_slice_out_of_range(what, offset, count, size);
}
}  // namespace detail

/// A non-owning view of part of a DeviceBuffer. Usable wherever the buffer is: copies, memset,
/// kernel arguments (where it becomes span<T>). `T` may be const (slices of const buffers).
template <class T>
class DeviceSlice {
 public:
  DeviceSlice(detail::Allocation* allocation, T* data, std::size_t size) noexcept
      : allocation_(allocation), data_(data), size_(size) {}
  /// DeviceSlice<T> converts to DeviceSlice<const T>.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  DeviceSlice(const DeviceSlice<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : allocation_(other.allocation()), data_(other.data()), size_(other.size()) {}

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] DeviceSlice slice(std::size_t offset, std::size_t count) const {
    detail::check_slice("DeviceSlice::slice", offset, count, size_);
    return DeviceSlice(allocation_, data_ + offset, count);
  }
  /// The kernel's view of this slice.
  [[nodiscard]] devctx::span<T> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] detail::Allocation* allocation() const noexcept { return allocation_; }

 private:
  detail::Allocation* allocation_;
  T* data_;
  std::size_t size_;
};

/// `size()` elements of T in a device's memory. Created by enqueue_create_buffer<T>(n);
/// becomes devctx::span<T> when passed to a kernel (span<const T> when the buffer is const).
/// Contents are uninitialised until written (copy, memset or kernel).
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "DeviceBuffer<T> holds trivially copyable, non-const element types");

 public:
  /// An empty buffer (size 0, no device). Assign a real one to use it.
  DeviceBuffer() noexcept = default;
  DeviceBuffer(detail::AllocationPtr allocation, std::size_t size) noexcept
      : allocation_(std::move(allocation)), size_(size) {
    data_ = allocation_ ? static_cast<T*>(detail::allocation_data(*allocation_)) : nullptr;
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : allocation_(std::move(other.allocation_)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    allocation_ = std::move(other.allocation_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() = default;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// False for a default-constructed or moved-from buffer.
  [[nodiscard]] explicit operator bool() const noexcept { return allocation_ != nullptr; }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }

  /// A view of elements [offset, offset + count). Throws devctx::Error (size_mismatch) when
  /// the range does not fit, and (invalid_handle) on a moved-from buffer.
  [[nodiscard]] DeviceSlice<T> slice(std::size_t offset, std::size_t count) {
    return as_slice().slice(offset, count);
  }
  [[nodiscard]] DeviceSlice<const T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  /// The whole buffer as a slice.
  [[nodiscard]] DeviceSlice<T> as_slice() {
    if (!allocation_) detail::throw_invalid_handle("a moved-from or default-constructed DeviceBuffer: it owns no memory");
    return {allocation_.get(), data_, size_};
  }
  [[nodiscard]] DeviceSlice<const T> as_slice() const {
    if (!allocation_) detail::throw_invalid_handle("a moved-from or default-constructed DeviceBuffer: it owns no memory");
    return {allocation_.get(), data_, size_};
  }
  /// The kernel's view of the buffer.
  [[nodiscard]] devctx::span<T> span() noexcept { return {data_, size_}; }
  [[nodiscard]] devctx::span<const T> span() const noexcept { return {data_, size_}; }

  /// Hands the memory to another owner, who frees it with the result's `free` (see
  /// ReleasedBuffer); this buffer becomes empty. Throws devctx::Error (invalid_handle) on a
  /// moved-from buffer. Slices of the buffer stay valid until `free` is called.
  [[nodiscard]] ReleasedBuffer<T> release() {
    return detail::release_buffer(allocation_, data_, size_, "a moved-from or default-constructed DeviceBuffer: it owns no memory");
  }

 private:
  detail::AllocationPtr allocation_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A non-owning view of part of a HostBuffer; usable wherever a HostBuffer is. In checking mode
/// its accessors refuse, as the buffer's do, while a copy or fill on the buffer may be pending.
template <class T>
class HostSlice {
 public:
  HostSlice(detail::Allocation* allocation, T* data, std::size_t size) noexcept
      : allocation_(allocation),
        gate_(allocation != nullptr ? detail::allocation_host_gate(*allocation) : nullptr),
        data_(data),
        size_(size) {}
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  HostSlice(const HostSlice<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : allocation_(other.allocation_), gate_(other.gate_), data_(other.data_), size_(other.size_) {}

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] T* data() const { return touched("HostSlice::data()"); }
  T& operator[](std::size_t i) const { return touched("HostSlice::operator[]")[i]; }
  [[nodiscard]] T* begin() const { return touched("HostSlice::begin()"); }
  [[nodiscard]] T* end() const { return touched("HostSlice::end()") + size_; }
  [[nodiscard]] HostSlice slice(std::size_t offset, std::size_t count) const {
    detail::check_slice("HostSlice::slice", offset, count, size_);
    return HostSlice(allocation_, data_ + offset, count);
  }
  operator std::span<T>() const { return {touched("HostSlice's conversion to std::span"), size_}; }  // NOLINT
  [[nodiscard]] detail::Allocation* allocation() const noexcept { return allocation_; }

 private:
  template <class>
  friend class HostSlice;
  friend struct detail::HostRaw;

  /// data_, once checking mode (if on) has seen that no copy or fill on the buffer is pending.
  [[nodiscard]] T* touched(const char* access) const {
    if (gate_ != nullptr && gate_->pending.load(std::memory_order_acquire) != 0) [[unlikely]]
      detail::host_access_check(*gate_, access);
    return data_;
  }

  detail::Allocation* allocation_;
  detail::HostAccessGate* gate_;
  T* data_;
  std::size_t size_;
};

/// `size()` elements of T in host memory fit for fast transfers (page-locked on CUDA).
/// Created by enqueue_create_host_buffer<T>(n); fill it only after the context has been
/// synchronized once since its creation. Never pass it to a kernel: copy it to a DeviceBuffer.
/// A copy into or out of it, or a fill, is finished only once the host has waited for it
/// (synchronize, or an event recorded after it); in checking mode (docs/checking.md)
/// operator[], data(), begin(), end() and the conversion to std::span throw
/// Error(check_failed) until then.
template <class T>
class HostBuffer {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "HostBuffer<T> holds trivially copyable, non-const element types");

 public:
  HostBuffer() noexcept = default;
  HostBuffer(detail::AllocationPtr allocation, std::size_t size) noexcept
      : allocation_(std::move(allocation)), size_(size) {
    data_ = allocation_ ? static_cast<T*>(detail::allocation_data(*allocation_)) : nullptr;
    gate_ = allocation_ ? detail::allocation_host_gate(*allocation_) : nullptr;
  }
  HostBuffer(HostBuffer&& other) noexcept
      : allocation_(std::move(other.allocation_)),
        gate_(std::exchange(other.gate_, nullptr)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    allocation_ = std::move(other.allocation_);
    gate_ = std::exchange(other.gate_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() = default;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] explicit operator bool() const noexcept { return allocation_ != nullptr; }
  [[nodiscard]] T* data() { return touched("HostBuffer::data()"); }
  [[nodiscard]] const T* data() const { return touched("HostBuffer::data()"); }
  T& operator[](std::size_t i) { return touched("HostBuffer::operator[]")[i]; }
  const T& operator[](std::size_t i) const { return touched("HostBuffer::operator[]")[i]; }
  [[nodiscard]] T* begin() { return touched("HostBuffer::begin()"); }
  [[nodiscard]] T* end() { return touched("HostBuffer::end()") + size_; }
  [[nodiscard]] const T* begin() const { return touched("HostBuffer::begin()"); }
  [[nodiscard]] const T* end() const { return touched("HostBuffer::end()") + size_; }
  operator std::span<T>() { return {touched("HostBuffer's conversion to std::span"), size_}; }              // NOLINT
  operator std::span<const T>() const { return {touched("HostBuffer's conversion to std::span"), size_}; }  // NOLINT

  [[nodiscard]] HostSlice<T> slice(std::size_t offset, std::size_t count) {
    return as_slice().slice(offset, count);
  }
  [[nodiscard]] HostSlice<const T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  [[nodiscard]] HostSlice<T> as_slice() {
    if (!allocation_) detail::throw_invalid_handle("a moved-from or default-constructed HostBuffer: it owns no memory");
    return {allocation_.get(), data_, size_};
  }
  [[nodiscard]] HostSlice<const T> as_slice() const {
    if (!allocation_) detail::throw_invalid_handle("a moved-from or default-constructed HostBuffer: it owns no memory");
    return {allocation_.get(), data_, size_};
  }

  /// As DeviceBuffer::release(): the memory goes to another owner, who frees it with `free`.
  [[nodiscard]] ReleasedBuffer<T> release() {
    gate_ = nullptr;  // the memory's new owner is not checked
    return detail::release_buffer(allocation_, data_, size_, "a moved-from or default-constructed HostBuffer: it owns no memory");
  }

 private:
  /// data_, once checking mode (if on) has seen that no copy or fill on the buffer is pending.
  [[nodiscard]] T* touched(const char* access) const {
    if (gate_ != nullptr && gate_->pending.load(std::memory_order_acquire) != 0) [[unlikely]]
      detail::host_access_check(*gate_, access);
    return data_;
  }

  detail::AllocationPtr allocation_;
  detail::HostAccessGate* gate_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace devctx
