// SPDX-License-Identifier: Apache-2.0
#include "core/host_access.hpp"

#include <algorithm>
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

void DeviceWatches::add(const std::shared_ptr<QueueWatch>& watch) {
  const std::lock_guard lock(mutex_);
  std::erase_if(watches_, [](const std::weak_ptr<QueueWatch>& w) { return w.expired(); });
  watches_.push_back(watch);
}

std::vector<std::pair<std::shared_ptr<QueueWatch>, std::uint64_t>> DeviceWatches::issued() const {
  std::vector<std::shared_ptr<QueueWatch>> live;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& w : watches_)
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
  if (const auto* w = std::get_if<op::Wait>(&op); w != nullptr && (*w->event)->watch) {
    try {
      queue.watch()->reserve_wait();
    } catch (...) {
      if (into_ != nullptr) into_->unreserve();
      if (out_of_ != nullptr) out_of_->unreserve();
      throw;
    }
    wait_reserved_ = true;
  }
  queue_ = &queue;
}

CheckingScope::~CheckingScope() {
  if (into_ != nullptr) into_->unreserve();
  if (out_of_ != nullptr) out_of_->unreserve();
  if (wait_reserved_) queue_->watch()->unreserve_wait();
}

void CheckingScope::done(EventImpl* recorded) noexcept {
  if (queue_ == nullptr) return;
  const std::shared_ptr<QueueWatch>& watch = queue_->watch();
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
    if (recorded != nullptr) {
      recorded->watch = watch;
      recorded->ticket = watch->next_ticket();
    }
  } else if (const auto* w = std::get_if<op::Wait>(&op); w != nullptr && wait_reserved_) {
    watch->note_wait(watch->next_ticket(), (*w->event)->watch, (*w->event)->ticket);
    wait_reserved_ = false;
  }
}

void synchronize_observed(QueueImpl& queue) {
  if (!queue.checking()) return queue.synchronize();
  const std::uint64_t enqueued = queue.watch()->issued();
  try {
    queue.synchronize();
  } catch (...) {
    queue.watch()->observe(enqueued);
    throw;
  }
  queue.watch()->observe(enqueued);
}

void synchronize_device_observed(DeviceImpl& device) {
  // The marks come first: work enqueued while the device is waited for is not covered.
  const auto marks = device.watches().issued();
  device.synchronize_device();
  for (const auto& [watch, ticket] : marks) watch->observe(ticket);
}

void event_reached(const EventImpl& event) {
  if (event.watch) event.watch->observe(event.ticket);
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
