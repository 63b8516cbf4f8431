// SPDX-License-Identifier: Apache-2.0
// src/core/host_access.cpp - checking mode's host-side rule (host_access.hpp): the queues'
// watches, the HostBuffers' guards, and the table that ties watches to queues, events and devices.
#include "core/host_access.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "core/allocation.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"

namespace devctx::detail {

std::uint64_t QueueWatch::next_ticket() {
  const std::lock_guard lock(mutex_);
  return ++issued_;
}

std::uint64_t QueueWatch::issued() const {
  const std::lock_guard lock(mutex_);
  return issued_;
}

bool QueueWatch::observed(std::uint64_t ticket) const {
  const std::lock_guard lock(mutex_);
  return ticket <= observed_;
}

void QueueWatch::reserve_wait() {
  const std::lock_guard lock(mutex_);
  waits_.reserve(waits_.size() + reserved_waits_ + 1);
  ++reserved_waits_;
}

void QueueWatch::unreserve_wait() noexcept {
  const std::lock_guard lock(mutex_);
  --reserved_waits_;
}

void QueueWatch::note_wait(std::uint64_t ticket, std::shared_ptr<QueueWatch> other, std::uint64_t event_ticket) noexcept {
  const std::lock_guard lock(mutex_);
  --reserved_waits_;
  waits_.push_back({ticket, std::move(other), event_ticket});  // within the reserved capacity
}

void QueueWatch::observe(std::uint64_t ticket) {
  std::vector<Wait> reached;
  {
    const std::lock_guard lock(mutex_);
    if (ticket <= observed_) return;
    observed_ = ticket;
    // Waits before `ticket` have been passed, so their events have been reached too. Followed
    // outside the lock: a wait always refers to an earlier point of another queue, so the
    // recursion ends.
    const auto passed = std::partition(waits_.begin(), waits_.end(), [&](const Wait& w) { return w.ticket > ticket; });
    reached.assign(std::make_move_iterator(passed), std::make_move_iterator(waits_.end()));
    waits_.erase(passed, waits_.end());
  }
  for (const Wait& w : reached) w.other->observe(w.event_ticket);
}

namespace {

/// Checking mode's table: which watch belongs to each checked queue, which ticket to each event
/// recorded on one, and the watches of each device's checked queues (so that synchronize_device
/// counts as a wait on each, dropped contexts' queues included). Keyed by address, each entry
/// with a weak reference that tells a dead object (and a new one at its address) from a live
/// one; dead entries are dropped as the table grows. Only checked work reaches it: an unchecked
/// queue's operations, and its events' waits, never take its lock.
class Watches {
 public:
  void add_queue(QueueImpl& queue, std::shared_ptr<QueueWatch> watch) {
    const std::lock_guard lock(mutex_);
    prune(queues_, queues_pruned_at_);
    auto& devices = devices_[&queue.device()];
    if (devices.device.expired() || devices.device.lock().get() != &queue.device()) devices = {};
    devices.device = queue.device().weak_from_this();
    std::erase_if(devices.watches, [](const std::weak_ptr<QueueWatch>& w) { return w.expired(); });
    devices.watches.push_back(watch);
    queues_[&queue] = {queue.weak_from_this(), std::move(watch)};
  }
  /// The watch of `queue`, a checked queue.
  [[nodiscard]] std::shared_ptr<QueueWatch> of_queue(const QueueImpl& queue) const {
    const std::lock_guard lock(mutex_);
    const auto it = queues_.find(&queue);
    return it != queues_.end() && !it->second.object.expired() ? it->second.watch : nullptr;
  }
  void add_event(const std::shared_ptr<EventImpl>& event, std::shared_ptr<QueueWatch> watch, std::uint64_t ticket) {
    const std::lock_guard lock(mutex_);
    prune(events_, events_pruned_at_);
    events_[event.get()] = {event, std::move(watch), ticket};
  }
  /// The watch and ticket of `event`, recorded on a checked queue; a null watch when unknown.
  [[nodiscard]] std::pair<std::shared_ptr<QueueWatch>, std::uint64_t> of_event(const EventImpl& event) const {
    const std::lock_guard lock(mutex_);
    const auto it = events_.find(&event);
    if (it == events_.end() || it->second.object.expired()) return {nullptr, 0};
    return {it->second.watch, it->second.ticket};
  }
  /// Each live watch of `device`'s checked queues with its last ticket: everything enqueued on
  /// the device so far.
  [[nodiscard]] std::vector<std::pair<std::shared_ptr<QueueWatch>, std::uint64_t>> issued(const DeviceImpl& device) const {
    std::vector<std::shared_ptr<QueueWatch>> live;
    {
      const std::lock_guard lock(mutex_);
      const auto it = devices_.find(&device);
      if (it == devices_.end() || it->second.device.lock().get() != &device) return {};
      for (const auto& w : it->second.watches)
        if (auto watch = w.lock()) live.push_back(std::move(watch));
    }
    std::vector<std::pair<std::shared_ptr<QueueWatch>, std::uint64_t>> marks;
    marks.reserve(live.size());
    for (auto& watch : live) {
      const std::uint64_t ticket = watch->issued();
      marks.emplace_back(std::move(watch), ticket);
    }
    return marks;
  }

 private:
  template <class Object>
  struct Entry {
    std::weak_ptr<Object> object;
    std::shared_ptr<QueueWatch> watch;
    std::uint64_t ticket = 0;
  };
  struct DeviceEntry {
    std::weak_ptr<const DeviceImpl> device;
    // Weak: a watch lives as long as its queue, or a HostBuffer's guard, or an event needs it.
    std::vector<std::weak_ptr<QueueWatch>> watches;
  };
  /// Drops the entries of dead objects once the table has doubled since the last time, so that
  /// adding stays amortised constant and the table no larger than twice its live entries.
  template <class Map>
  static void prune(Map& map, std::size_t& at) {
    if (map.size() < at) return;
    std::erase_if(map, [](const auto& kv) { return kv.second.object.expired(); });
    at = std::max<std::size_t>(64, 2 * map.size());
  }
  mutable std::mutex mutex_;
  std::unordered_map<const QueueImpl*, Entry<QueueImpl>> queues_;
  std::size_t queues_pruned_at_ = 64;
  std::unordered_map<const EventImpl*, Entry<EventImpl>> events_;
  std::size_t events_pruned_at_ = 64;
  std::unordered_map<const DeviceImpl*, DeviceEntry> devices_;
};

// Leaked on purpose: queues and events may be dropped from destructors of static objects.
Watches& watches() {
  static Watches* w = new Watches;
  return *w;
}

}  // namespace

void enable_checking(QueueImpl& queue) {
  watches().add_queue(queue, std::make_shared<QueueWatch>(queue.device().label()));
  queue.checking_ = true;
}

void HostGuard::reserve() {
  const std::lock_guard lock(mutex_);
  entries_.reserve(entries_.size() + reserved_ + 1);
  ++reserved_;
}

void HostGuard::unreserve() noexcept {
  const std::lock_guard lock(mutex_);
  --reserved_;
}

void HostGuard::add(std::shared_ptr<QueueWatch> queue, std::uint64_t ticket, Use use) noexcept {
  const std::lock_guard lock(mutex_);
  --reserved_;
  entries_.push_back({std::move(queue), ticket, use});  // within the reserved capacity
  pending.store(std::uint32_t(entries_.size()), std::memory_order_release);
}

void HostGuard::check(const char* access) {
  const std::lock_guard lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.queue->observed(e.ticket); });
  pending.store(std::uint32_t(entries_.size()), std::memory_order_release);
  if (entries_.empty()) return;
  const Entry& e = entries_.front();
  const char* what = e.use == Use::copy_into     ? "a copy into this HostBuffer"
                     : e.use == Use::copy_out_of ? "a copy out of this HostBuffer"
                                                 : "an enqueue_memset of this HostBuffer";
  fail(Errc::check_failed, access, " while ", what, " on ", e.queue->label(),
       " may still be running: the host may touch the buffer only after synchronize() or a wait on an "
       "event recorded after that work (devctx checking mode)");
}

namespace {

/// The guard of the HostBuffer on this side of a copy or fill, if it has one.
HostGuard* host_guard_of(const MemRef& ref) {
  if (ref.kind != MemKind::host_pinned || ref.allocation == nullptr) return nullptr;
  return ref.allocation->host_guard();
}

}  // namespace

CheckingScope::CheckingScope(QueueImpl& queue, const Operation& op) {
  if (!queue.checking()) return;
  std::shared_ptr<QueueWatch> watch = watches().of_queue(queue);
  op_ = &op;
  if (const auto* c = std::get_if<op::Copy>(&op)) {
    into_ = host_guard_of(c->dst);
    out_of_ = host_guard_of(c->src);
  } else if (const auto* f = std::get_if<op::Fill>(&op)) {
    into_ = host_guard_of(f->dst);
  }
  if (into_ != nullptr) into_->reserve();
  if (out_of_ != nullptr) {
    try {
      out_of_->reserve();
    } catch (...) {
      if (into_ != nullptr) into_->unreserve();
      throw;
    }
  }
  if (const auto* w = std::get_if<op::Wait>(&op); w != nullptr && (*w->event)->recorded_on().checking()) {
    try {
      std::tie(waited_, waited_ticket_) = watches().of_event(**w->event);
      if (waited_ != nullptr) {
        watch->reserve_wait();
        wait_reserved_ = true;
      }
    } catch (...) {
      if (into_ != nullptr) into_->unreserve();
      if (out_of_ != nullptr) out_of_->unreserve();
      throw;
    }
  }
  watch_ = std::move(watch);
}

CheckingScope::~CheckingScope() {
  if (into_ != nullptr) into_->unreserve();
  if (out_of_ != nullptr) out_of_->unreserve();
  if (wait_reserved_) watch_->unreserve_wait();
}

void CheckingScope::done(const std::shared_ptr<EventImpl>* recorded) noexcept {
  if (watch_ == nullptr) return;
  const std::shared_ptr<QueueWatch>& watch = watch_;
  const Operation& op = *op_;
  if (const auto* c = std::get_if<op::Copy>(&op)) {
    const std::uint64_t ticket = watch->next_ticket();
    if (into_ != nullptr) into_->add(watch, ticket, HostGuard::Use::copy_into);
    if (out_of_ != nullptr) out_of_->add(watch, ticket, HostGuard::Use::copy_out_of);
    into_ = out_of_ = nullptr;
    if (copy_waits_for_host(c->dst_kind, c->src_kind)) {
      // The call returned with the copy done. Out of memory to follow the queue's cross-stream
      // waits, a later host access may be refused though it need not be; never the reverse.
      try {
        watch->observe(ticket);
      } catch (...) {
      }
    }
  } else if (std::holds_alternative<op::Fill>(op)) {
    const std::uint64_t ticket = watch->next_ticket();
    if (into_ != nullptr) into_->add(watch, ticket, HostGuard::Use::fill);
    into_ = nullptr;
  } else if (std::holds_alternative<op::RecordEvent>(op)) {
    if (recorded != nullptr && *recorded != nullptr) {
      // Out of memory for the table's entry: waits for this event count for nothing, so a later
      // host access may be refused though it need not be; never the reverse.
      try {
        watches().add_event(*recorded, watch, watch->next_ticket());
      } catch (...) {
      }
    }
  } else if (std::holds_alternative<op::Wait>(op) && wait_reserved_) {
    watch->note_wait(watch->next_ticket(), std::move(waited_), waited_ticket_);
    wait_reserved_ = false;
  }
}

void synchronize_observed(QueueImpl& queue) {
  if (!queue.checking()) return queue.synchronize();
  const std::shared_ptr<QueueWatch> watch = watches().of_queue(queue);
  const std::uint64_t enqueued = watch->issued();
  try {
    queue.synchronize();
  } catch (...) {
    watch->observe(enqueued);
    throw;
  }
  watch->observe(enqueued);
}

void synchronize_device_observed(DeviceImpl& device) {
  // The marks come first: work enqueued while the device is waited for is not covered.
  const auto marks = watches().issued(device);
  device.synchronize_device();
  for (const auto& [watch, ticket] : marks) watch->observe(ticket);
}

void event_reached(const EventImpl& event) {
  if (!event.recorded_on().checking()) return;  // the table is never looked at for unchecked work
  const auto [watch, ticket] = watches().of_event(event);
  if (watch != nullptr) watch->observe(ticket);
}

void event_synchronize(EventImpl& event) {
  try {
    event.synchronize();
  } catch (...) {
    event_reached(event);
    throw;
  }
  event_reached(event);
}

bool event_query(EventImpl& event) {
  const bool reached = event.query();
  if (reached) event_reached(event);
  return reached;
}

}  // namespace devctx::detail
