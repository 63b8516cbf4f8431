// SPDX-License-Identifier: Apache-2.0
// src/core/host_access.hpp - checking mode's host-side rule: the host may touch a HostBuffer only
// once it has waited for every copy or fill enqueued on it. Completion is not enough: a copy that
// happens to have finished when the host reads the buffer is still a bug (the same program reads
// garbage on a busier machine), so what counts is what the host *waited for*.
//
// Each queue of a checked context numbers the operations that matter here (copies, fills, event
// records and waits) with tickets; a HostBuffer's guard keeps the tickets of the work pending on
// it, and the waits of the host (synchronize, event synchronize, a successful query, a copy with
// pageable memory, which returns once done) mark tickets observed, through cross-stream waits too.
//
// This state is checking mode's own: the backend interface (backend.hpp) knows only whether a
// queue is checked. Each checked queue's watch, each checked event's ticket and each device's
// list of watches live in one table of host_access.cpp, keyed by the object and dropped with it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <devctx/detail/base/seam.hpp>
#include <devctx/launch.hpp>

#include "core/operation.hpp"

namespace devctx::detail {

class DeviceImpl;
class EventImpl;
class QueueImpl;

/// What the host has waited for on one queue.
class QueueWatch {
 public:
  explicit QueueWatch(std::string label) : label_(std::move(label)) {}

  /// Numbers an operation as it is enqueued.
  [[nodiscard]] std::uint64_t next_ticket();
  /// The last ticket given out: everything enqueued so far.
  [[nodiscard]] std::uint64_t issued() const;
  /// The host has waited for every operation up to `ticket`, and so for whatever they waited for.
  void observe(std::uint64_t ticket);
  [[nodiscard]] bool observed(std::uint64_t ticket) const;
  /// Room for one note_wait() more: taken before the wait is queued, so that note_wait() cannot
  /// fail once it is (a failing enqueue queues nothing); unreserve_wait() when it was refused.
  void reserve_wait();
  void unreserve_wait() noexcept;
  /// Operation `ticket` of this queue waits for `event_ticket` of `other` (enqueue_wait_for),
  /// after a reserve_wait().
  void note_wait(std::uint64_t ticket, std::shared_ptr<QueueWatch> other, std::uint64_t event_ticket) noexcept;
  /// "cpu:0 (CPU ...)": how messages name the queue's device.
  [[nodiscard]] const std::string& label() const noexcept { return label_; }

 private:
  struct Wait {
    std::uint64_t ticket;
    std::shared_ptr<QueueWatch> other;
    std::uint64_t event_ticket;
  };
  mutable std::mutex mutex_;
  std::string label_;
  std::uint64_t issued_ = 0;
  std::uint64_t observed_ = 0;
  std::vector<Wait> waits_;
  std::size_t reserved_waits_ = 0;
};

/// Turns checking mode on for `queue`, before it is used (a checked context's queues): the
/// backend checks its launches (QueueImpl::checking()), and a watch follows what the host has
/// waited for on it.
void enable_checking(QueueImpl& queue);

/// The work pending on one HostBuffer's memory. Its gate's `pending` is what the buffer's
/// accessors test inline.
class HostGuard : public HostAccessGate {
 public:
  enum class Use : std::uint8_t { copy_into, copy_out_of, fill };

  /// Room for one add() more: taken before the work is queued, so that add() cannot fail once it
  /// is (a failing enqueue queues nothing); unreserve() when the work was refused.
  void reserve();
  void unreserve() noexcept;
  /// Work numbered `ticket` on `queue` uses the buffer (after a reserve()).
  void add(std::shared_ptr<QueueWatch> queue, std::uint64_t ticket, Use use) noexcept;
  /// The host is about to touch the buffer through `access` ("HostBuffer::operator[]"): throws
  /// devctx::Error unless the host has waited for all the work on it.
  void check(const char* access);

 private:
  struct Entry {
    std::shared_ptr<QueueWatch> queue;
    std::uint64_t ticket;
    Use use;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::size_t reserved_ = 0;  // entries_ has room for this many more
};

/// Checking mode as a subscriber of the operation pipeline (core/submit.hpp), on a checked
/// queue: the room the operation's record needs is taken before it is queued (the constructor,
/// which throws only std::bad_alloc, and then nothing is queued), and the record is made once it
/// is (done(), which cannot fail). A scope never done() gives its room back. On an unchecked
/// queue it does nothing.
class CheckingScope {
 public:
  CheckingScope(QueueImpl& queue, const Operation& op);
  ~CheckingScope();
  CheckingScope(const CheckingScope&) = delete;
  CheckingScope& operator=(const CheckingScope&) = delete;
  /// The operation is queued; `recorded` is the event of an op::RecordEvent.
  void done(const std::shared_ptr<EventImpl>* recorded) noexcept;

 private:
  std::shared_ptr<QueueWatch> watch_;  ///< the queue's; null when the queue is not checked
  const Operation* op_ = nullptr;
  HostGuard* into_ = nullptr;    ///< the guard of a HostBuffer written (copy, fill)
  HostGuard* out_of_ = nullptr;  ///< the guard of a HostBuffer read (copy)
  bool wait_reserved_ = false;
  std::shared_ptr<QueueWatch> waited_;  ///< op::Wait of a checked event: its queue's watch
  std::uint64_t waited_ticket_ = 0;     ///< and the event's ticket there
};

// The host's waits, which tell a checked queue's watch what the host has seen finish (core's
// synchronize, Event and elapsed_ms call these).
/// queue.synchronize(), counting everything enqueued before the call observed even when the wait
/// throws (the work has finished; it failed).
void synchronize_observed(QueueImpl& queue);
/// Event::synchronize(): waits, and counts the event reached even when the wait throws (the work
/// has finished; it failed).
void event_synchronize(EventImpl& event);
/// Event::query(): a true answer tells the host the event was reached.
[[nodiscard]] bool event_query(EventImpl& event);
/// DeviceContext::synchronize_device(): waits for the device, and counts everything enqueued
/// on its checked queues before the call observed.
void synchronize_device_observed(DeviceImpl& device);
/// The host has waited for `event` some other way (elapsed_ms).
void event_reached(const EventImpl& event);

}  // namespace devctx::detail
