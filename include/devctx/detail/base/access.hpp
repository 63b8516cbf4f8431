// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/access.hpp - detail::Access: the one door through which devctx's own code
// makes public handles from its private records and reads the records back. Every public type
// whose constructor takes a detail:: type (a stream, an event, a buffer, a slice, a view) keeps
// that constructor private and befriends Access, so users cannot build a handle from an
// unchecked record: they get handles only from devctx (a context, a stream, a buffer).
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/access.hpp> is private to devctx: include <devctx/devctx.hpp> instead"
#endif

#include <utility>

namespace devctx::detail {

struct Access {
  /// `Handle(args...)` through its private constructor.
  template <class Handle, class... Args>
  [[nodiscard]] static Handle make(Args&&... args) {
    return Handle(std::forward<Args>(args)...);
  }
  /// The backend queue of a StreamRef (or a DeviceContext, a Stream); throws Error(invalid_handle)
  /// naming the handle when it has none.
  template <class Stream>
  [[nodiscard]] static auto& queue(const Stream& stream) {
    return stream.queue();
  }
  /// The record of a Buffer's memory (null for an empty Buffer).
  template <class Bytes>
  [[nodiscard]] static auto* record(const Bytes& bytes) noexcept {
    return bytes.record_.get();
  }
};

}  // namespace devctx::detail
