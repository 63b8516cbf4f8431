// SPDX-License-Identifier: Apache-2.0
// devctx/detail/host/buffer_verbs.hpp - the definitions of detail::BufferVerbs (declared in
// devctx/buffer.hpp): a buffer's or slice's verbs on its own stream. They need StreamRef
// complete, and stream.hpp needs the buffers, so stream.hpp includes this file once StreamRef is
// defined (cuda-api-wrappers' multi_wrapper_impls pattern): buffer.hpp stays below stream.hpp.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/host/buffer_verbs.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/stream.hpp>) instead"
#endif

#include <span>
#include <type_traits>
#include <utility>

#include <devctx/buffer.hpp>

namespace devctx {

inline StreamRef Buffer::stream() const {
  return detail::Access::make<StreamRef>(&detail::allocation_home_queue(record()));
}

namespace detail {

/// The stream that created the memory of `s` (a buffer or slice; throws invalid_handle for a
/// moved-from buffer).
template <class S>
StreamRef own_stream(const S& s) {
  return Access::make<StreamRef>(&allocation_home_queue(*s.as_slice().allocation()));
}

template <class Self>
template <class Dst>
void BufferVerbs<Self>::enqueue_copy_to(Dst&& dst) const {
  own_stream(self()).enqueue_copy(std::forward<Dst>(dst), self());
}
template <class Self>
template <class Src>
void BufferVerbs<Self>::enqueue_copy_from(Src&& src) {
  own_stream(self()).enqueue_copy(self(), std::forward<Src>(src));
}
template <class Self>
template <class Src>
void BufferVerbs<Self>::enqueue_copy_from(Src&& src) const {
  own_stream(self()).enqueue_copy(self(), std::forward<Src>(src));
}
template <class Self>
template <class V>
void BufferVerbs<Self>::enqueue_fill(const V& value) {
  own_stream(self()).enqueue_memset(self(), value);
}
template <class Self>
template <class V>
void BufferVerbs<Self>::enqueue_fill(const V& value) const {
  own_stream(self()).enqueue_memset(self(), value);
}
template <class Self>
template <class F>
auto BufferVerbs<Self>::map_to_host(F&& f) {
  return map(self(), std::forward<F>(f));
}
template <class Self>
template <class F>
auto BufferVerbs<Self>::map_to_host(F&& f) const {
  return map(self(), std::forward<F>(f));
}

template <class Self>
template <class S, class F>
auto BufferVerbs<Self>::map(S& buffer, F&& f) {
  static_assert(requires { buffer.span(); }, "map_to_host: only device buffers and slices are mapped");
  using Elem = typename decltype(buffer.span())::element_type;
  using T = std::remove_const_t<Elem>;
  constexpr bool read_only = maps_read_only<F, T>();
  static_assert(read_only || !std::is_const_v<Elem>,
                "map_to_host: this buffer or slice is read-only (const): f must take std::span<const T>");
  using View = std::conditional_t<read_only, std::span<const T>, std::span<T>>;
  static_assert(std::is_invocable_v<F&, View>, "map_to_host: f must be callable with std::span<T> or std::span<const T>");
  const auto whole = buffer.as_slice();
  StreamRef stream = own_stream(whole);
  auto host = stream.template enqueue_create_host_buffer<T>(whole.size());
  stream.enqueue_copy(host, whole);
  stream.synchronize();
  if constexpr (read_only) {
    return std::forward<F>(f)(std::span<const T>(host.data(), host.size()));
  } else if constexpr (std::is_void_v<std::invoke_result_t<F&, View>>) {
    std::forward<F>(f)(std::span<T>(host.data(), host.size()));
    stream.enqueue_copy(whole, host);
    stream.synchronize();
  } else {
    auto result = std::forward<F>(f)(std::span<T>(host.data(), host.size()));
    stream.enqueue_copy(whole, host);
    stream.synchronize();
    return result;
  }
}

}  // namespace detail
}  // namespace devctx
