// SPDX-License-Identifier: Apache-2.0
// devctx/device_tensor.hpp - devctx::tensor(memory, layout): a buffer plus a layout, on the host.
// Over device memory it gives a DeviceTensor, the launch argument that becomes a LayoutTensor in
// the kernel; over host memory (HostBuffer, std::span) it gives the LayoutTensor itself.
//
//   using Mat = devctx::RowMajor<devctx::dyn, devctx::dyn>;
//   DEVCTX_KERNEL void scale(devctx::LayoutTensor<float, Mat> t, float s);
//   ctx.enqueue_function<scale>(cfg, devctx::tensor(d_buf, Mat(rows, cols)), 2.0f);
//
// A kernel parameter whose layout is fully static also takes the buffer (or slice) itself:
// DEVCTX_KERNEL void k(devctx::LayoutTensor<float, devctx::RowMajor<64, 64>> t) is launched
// with `d_buf`. Either way the layout must fit in the memory: a layout that reaches more
// elements than the buffer holds throws devctx::Error(size_mismatch) and nothing is enqueued.
// A layout's size and span are exact (devctx/tensor.hpp refuses layouts whose arithmetic would
// wrap around past 2^64), and tensor() checks them again, overflow-checked, before comparing.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <span>
#include <type_traits>

#include <devctx/buffer.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/device_view.hpp>
#include <devctx/tensor.hpp>

namespace devctx {

namespace detail {
/// Throws Error(size_mismatch) unless `layout` fits in `size` elements of `what` ("a device
/// buffer", ...). The span is recomputed with checked arithmetic rather than trusted: a layout
/// whose size or span does not fit in std::size_t is refused naming its extents, whatever way
/// it was made.
template <class L>
void check_tensor_fits(const char* what, const L& layout, std::size_t size) {
  std::size_t extents[L::rank] = {}, strides[L::rank] = {};
  for (std::size_t d = 0; d < L::rank; ++d) {
    extents[d] = layout.extent(d);
    strides[d] = layout.stride(d);
  }
  const char* name = layout_name(L::order);
  if (!size_of(extents, L::rank)) throw_tensor_layout_overflow(name, extents, strides, L::rank, L::rank, false);
  const auto span = span_of(extents, strides, L::rank);
  if (!span) throw_tensor_layout_overflow(name, extents, strides, L::rank, L::rank + 1, false);
  if (*span > size) throw_tensor_too_large(what, name, extents, strides, L::rank, *span, size);
}
}  // namespace detail

/// Device memory (a DeviceBuffer's slice) seen through layout L, on the host. Pass it to
/// enqueue_function where the kernel takes LayoutTensor<T, L> (or LayoutTensor<const T, L>).
/// Cheap to copy; valid while the buffer lives, as its slice is.
template <class T, class L>
class DeviceTensor {
 public:
  using element_type = T;
  using layout_type = L;

  /// Throws Error(size_mismatch) when the layout reaches past the end of `slice`.
  DeviceTensor(const DeviceSlice<T>& slice, const L& layout) : slice_(slice), layout_(layout) {
    detail::check_tensor_fits("a device buffer", layout, slice.size());
  }

  [[nodiscard]] const DeviceSlice<T>& slice() const noexcept { return slice_; }
  [[nodiscard]] const L& layout() const noexcept { return layout_; }
  [[nodiscard]] std::size_t extent(std::size_t d) const noexcept { return layout_.extent(d); }
  [[nodiscard]] std::size_t size() const noexcept { return layout_.size(); }
  /// The kernel's view (its data is a device address: not dereferenceable on the host with CUDA).
  [[nodiscard]] LayoutTensor<T, L> view() const noexcept { return {slice_.data(), layout_}; }

 private:
  DeviceSlice<T> slice_;
  L layout_;
};

/// A DeviceBuffer, slice or DeviceView seen through `layout`; Error(size_mismatch) when the
/// layout does not fit.
template <class T, class L>
[[nodiscard]] DeviceTensor<T, L> tensor(DeviceBuffer<T>& buffer, const L& layout) {
  return {buffer.as_slice(), layout};
}
template <class T, class L>
[[nodiscard]] DeviceTensor<const T, L> tensor(const DeviceBuffer<T>& buffer, const L& layout) {
  return {buffer.as_slice(), layout};
}
/// A temporary buffer would be freed while the tensor still refers to it.
template <class T, class L>
void tensor(DeviceBuffer<T>&& buffer, const L& layout) = delete;
template <class T, class L>
[[nodiscard]] DeviceTensor<T, L> tensor(const DeviceSlice<T>& slice, const L& layout) {
  return {slice, layout};
}
template <class T, class L>
[[nodiscard]] DeviceTensor<T, L> tensor(const DeviceView<T>& view, const L& layout) {
  return {view.as_slice(), layout};
}
template <class T, class L>
void tensor(DeviceView<T>&& view, const L& layout) = delete;

/// Host memory seen through `layout`: a LayoutTensor for host code (checking mode checks the
/// HostBuffer once, here, not at every element); Error(size_mismatch) when the layout does not fit.
template <class T, class L>
[[nodiscard]] LayoutTensor<T, L> tensor(HostBuffer<T>& buffer, const L& layout) {
  detail::check_tensor_fits("a HostBuffer", layout, buffer.size());
  return {buffer.data(), layout};
}
template <class T, class L>
[[nodiscard]] LayoutTensor<const T, L> tensor(const HostBuffer<T>& buffer, const L& layout) {
  detail::check_tensor_fits("a HostBuffer", layout, buffer.size());
  return {buffer.data(), layout};
}
template <class T, class L>
void tensor(HostBuffer<T>&& buffer, const L& layout) = delete;
template <class T, std::size_t N, class L>
[[nodiscard]] LayoutTensor<T, L> tensor(std::span<T, N> memory, const L& layout) {
  detail::check_tensor_fits("a std::span", layout, memory.size());
  return {memory.data(), layout};
}

}  // namespace devctx
