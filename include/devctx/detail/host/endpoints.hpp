// SPDX-License-Identifier: Apache-2.0
// devctx/detail/host/endpoints.hpp - turns the things enqueue_copy/enqueue_memset accept into MemRefs.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/host/endpoints.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/stream.hpp>) instead"
#endif

#include <ranges>
#include <span>
#include <type_traits>

#include <devctx/buffer.hpp>
#include <devctx/detail/base/seam.hpp>
#include <devctx/device_view.hpp>

namespace devctx::detail {

template <class T>
struct Endpoint {
  using element_type = T;
  MemRef ref;
};

template <class T>
Endpoint<T> endpoint(DeviceBuffer<T>& b) {
  const auto s = b.as_slice();
  return {{s.data(), s.size(), MemKind::device, s.allocation(), "DeviceBuffer"}};
}
template <class T>
Endpoint<const T> endpoint(const DeviceBuffer<T>& b) {
  const auto s = b.as_slice();
  return {{const_cast<T*>(s.data()), s.size(), MemKind::device, s.allocation(), "DeviceBuffer"}};
}
template <class T>
Endpoint<T> endpoint(const DeviceSlice<T>& s) {
  return {{const_cast<std::remove_const_t<T>*>(s.data()), s.size(), MemKind::device, s.allocation(), "DeviceBuffer slice"}};
}
template <class T>
Endpoint<T> endpoint(const DeviceView<T>& v) {
  const auto s = v.as_slice();
  return {{const_cast<std::remove_const_t<T>*>(s.data()), s.size(), MemKind::device, s.allocation(), "DeviceView"}};
}
template <class T>
Endpoint<T> endpoint(HostBuffer<T>& b) {
  const auto s = b.as_slice();
  return {{HostRaw::data(s), s.size(), MemKind::host_pinned, s.allocation(), "HostBuffer"}};
}
template <class T>
Endpoint<const T> endpoint(const HostBuffer<T>& b) {
  const auto s = b.as_slice();
  return {{const_cast<T*>(HostRaw::data(s)), s.size(), MemKind::host_pinned, s.allocation(), "HostBuffer"}};
}
template <class T>
Endpoint<T> endpoint(const HostSlice<T>& s) {
  return {{const_cast<std::remove_const_t<T>*>(HostRaw::data(s)), s.size(), MemKind::host_pinned, s.allocation(),
           "HostBuffer slice"}};
}
// A non-const HostSlice would otherwise bind to the range overload below (HostSlice is a
// contiguous range) and be taken for pageable memory.
template <class T>
Endpoint<T> endpoint(HostSlice<T>& s) {
  return endpoint(static_cast<const HostSlice<T>&>(s));
}
/// Ordinary (pageable) host memory: std::span, std::vector, std::array, C arrays.
template <class R>
  requires std::ranges::contiguous_range<R&> && std::ranges::sized_range<R&>
auto endpoint(R& range) {
  using T = std::remove_reference_t<std::ranges::range_reference_t<R&>>;
  return Endpoint<T>{{const_cast<std::remove_const_t<T>*>(std::ranges::data(range)),
                      std::size_t(std::ranges::size(range)), MemKind::host_pageable, nullptr, "host memory (std::span)"}};
}

template <class X>
using endpoint_element_t = typename decltype(endpoint(std::declval<X&>()))::element_type;

/// True for what enqueue_copy / enqueue_memset accept: buffers, slices, contiguous host ranges.
template <class X>
inline constexpr bool is_endpoint_v = requires(X& x) { endpoint(x); };

}  // namespace devctx::detail
