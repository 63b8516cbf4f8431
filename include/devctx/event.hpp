// SPDX-License-Identifier: Apache-2.0
// devctx/event.hpp - events: points in a stream's work, for ordering and timing.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <memory>

#include <devctx/detail/base/access.hpp>
#include <devctx/detail/base/seam.hpp>

namespace devctx {

/// A point in one stream's work, created by record_event(). Copyable handle (copies refer to
/// the same point). Another stream can wait for it (enqueue_wait_for), the host can wait for it
/// (synchronize) or poll it (query), and two events time the work between them (elapsed_ms).
class Event {
 public:
  Event() noexcept = default;

  /// Blocks until all work enqueued before the event has finished. Throws devctx::Error if any
  /// of that work failed (the failure is then not reported again by synchronize()).
  void synchronize() const;
  /// True when all work enqueued before the event has finished. Never blocks.
  [[nodiscard]] bool query() const;
  [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }
  [[nodiscard]] const std::shared_ptr<detail::EventImpl>& impl() const noexcept { return impl_; }

 private:
  friend struct detail::Access;
  explicit Event(std::shared_ptr<detail::EventImpl> impl) noexcept : impl_(std::move(impl)) {}

  std::shared_ptr<detail::EventImpl> impl_;
};

/// Milliseconds between two events of the same device, both recorded and finished (waits for
/// them). Throws devctx::Error for events of different devices or not yet recorded.
[[nodiscard]] double elapsed_ms(const Event& start, const Event& stop);

}  // namespace devctx
