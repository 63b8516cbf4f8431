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
#include <devctx/detail/host/seam.hpp>
#include <devctx/span.hpp>

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
  DeviceView(detail::AllocationPtr record, T* data, std::size_t size) noexcept
      : record_(std::move(record)), data_(data), size_(size) {}
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
  [[nodiscard]] explicit operator bool() const noexcept { return record_ != nullptr; }
  /// Device address of the first element (not dereferenceable on the host with CUDA).
  [[nodiscard]] T* data() const noexcept { return data_; }

  /// The whole view as a slice (a view is shallow: a const view still writes the memory, as a
  /// slice does). Throws devctx::Error (invalid_handle) on a moved-from view.
  [[nodiscard]] DeviceSlice<T> as_slice() const {
    if (!record_) detail::throw_invalid_handle("a moved-from or default-constructed DeviceView: it refers to no memory");
    return {record_.get(), data_, size_};
  }
  /// Elements [offset, offset + count); devctx::Error (size_mismatch) when they do not fit.
  [[nodiscard]] DeviceSlice<T> slice(std::size_t offset, std::size_t count) const {
    return as_slice().slice(offset, count);
  }
  /// The kernel's view of the memory.
  [[nodiscard]] devctx::span<T> span() const noexcept { return {data_, size_}; }

 private:
  detail::AllocationPtr record_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace devctx
