// SPDX-License-Identifier: Apache-2.0
// devctx/device_view.hpp - DeviceView<T>: device memory that another library allocated, used
// by devctx wherever a DeviceBuffer slice is (copies, memset, kernel arguments).
//
// Made by wrap_device_memory() or from_dlpack() (<devctx/interop.hpp>, <devctx/dlpack.hpp>).
// A view never frees the memory. It belongs to the device of the stream it was made on, and
// the same device checks apply as for a buffer. Dropping it never blocks: devctx's work on the
// memory still runs, and the view's release callback (the DLPack deleter, say) runs only once
// that work has finished (docs/interop.md).
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <type_traits>
#include <utility>

#include <devctx/buffer.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/span.hpp>
#include <devctx/untyped_buffer.hpp>

namespace devctx {

/// `size()` elements of T at `data()` in a device's memory, owned by someone else. Move-only:
/// it holds devctx's record of the memory (which devices it belongs to, which streams used it).
/// `T` may be const: then kernels get span<const T> and copies into it do not compile.
template <class T>
class DeviceView {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceView<T> holds trivially copyable element types");

 public:
  /// An empty view (size 0, no device).
  DeviceView() noexcept = default;
  DeviceView(DeviceView&& other) noexcept
      : record_(std::move(other.record_)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  DeviceView& operator=(DeviceView&& other) noexcept {
    record_ = std::move(other.record_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  DeviceView(const DeviceView&) = delete;
  DeviceView& operator=(const DeviceView&) = delete;
  ~DeviceView() = default;

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// False for a default-constructed or moved-from view.
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(record_); }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }

  /// The whole view as a slice (a view is shallow: a const view still writes the memory, as a
  /// slice does). Throws devctx::Error (invalid_handle) on a moved-from view.
  [[nodiscard]] DeviceSlice<T> as_slice() const {
    detail::Allocation* record = detail::Access::record(record_);
    if (record == nullptr)
      detail::throw_invalid_handle("a moved-from or default-constructed DeviceView: it refers to no memory");
    return detail::Access::make<DeviceSlice<T>>(record, data_, size_);
  }
  /// Elements [offset, offset + count); devctx::Error (size_mismatch) when they do not fit.
  [[nodiscard]] DeviceSlice<T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  /// The kernel's view of the memory.
  [[nodiscard]] devctx::span<T> span() const noexcept { return {data_, size_}; }

  /// devctx's record of the memory as an untyped Buffer (MemoryKind::device; dropping it runs
  /// the view's release callback as dropping the view would); this view becomes empty.
  [[nodiscard]] Buffer take_buffer() noexcept {
    data_ = nullptr;
    size_ = 0;
    return std::move(record_);
  }

 private:
  friend struct detail::Access;
  DeviceView(Buffer record, T* data, std::size_t size) noexcept
      : record_(std::move(record)), data_(data), size_(size) {}

  Buffer record_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace devctx
