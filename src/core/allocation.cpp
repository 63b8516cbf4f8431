// SPDX-License-Identifier: Apache-2.0
// src/core/allocation.cpp - allocating buffers and releasing them in stream order.
#include "core/allocation.hpp"

#include "core/memory.hpp"
#include "core/submit.hpp"

namespace devctx::detail {

void Allocation::note_use(QueueImpl& queue) {
  // Only queues whose events the home queue can wait for can order its free: its own device's,
  // and other devices' where the backend can wait across devices (CPU devices, GPUs). Work of
  // other queues is synchronous with the host (copies through host memory).
  if (&queue == home_.get() || !home_->device().can_wait_for(queue.device())) return;
  const std::lock_guard lock(users_mutex_);
  for (const auto& user : other_users_) {
    if (const auto q = user.lock(); q.get() == &queue) return;
  }
  other_users_.push_back(queue.weak_from_this());
}

void Allocation::release() noexcept {
  if (external_ && !on_release_) return;  // nothing to free and no one to tell
  // Other queues may still have work on this memory: make the home queue wait for them first.
  // If that ordering cannot be set up (the device failed), leaking is safer than a use-after-free.
  try {
    for (const auto& user : other_users_) {
      if (const auto q = user.lock()) home_->wait_for(q->record_event());
    }
    if (external_) {
      // Not devctx's memory: tell its owner, once the work devctx enqueued on it has finished.
      if (on_release_) home_->device().defer_release(home_->record_event(), std::move(on_release_));
      return;
    }
  } catch (...) {
    return;
  }
  submit(*home_, op::Free{.data = data_, .bytes = bytes_, .kind = kind_});
}

void AllocationReleaser::operator()(Allocation* allocation) const noexcept {
  allocation->release();
  delete allocation;
}

AllocationPtr queue_allocate(QueueImpl& queue, MemKind kind, std::size_t count, std::size_t element_bytes) {
  // Checked and bounded before the backend sees it, so that no backend's rounding can wrap.
  const std::size_t bytes = allocation_bytes(queue.device(), kind, count, element_bytes);
  void* data = submit(queue, op::Allocate{.bytes = bytes, .kind = kind});
  try {
    std::unique_ptr<HostGuard> guard;
    if (kind == MemKind::host_pinned && queue.checking()) guard = std::make_unique<HostGuard>();
    return AllocationPtr(new Allocation(queue.shared_from_this(), data, bytes, kind, std::move(guard)));
  } catch (...) {
    queue.free(data, bytes, kind);
    throw;
  }
}

void* allocation_data(const Allocation& allocation) noexcept { return allocation.data(); }
std::size_t allocation_size_bytes(const Allocation& allocation) noexcept { return allocation.bytes(); }
MemKind allocation_kind(const Allocation& allocation) noexcept { return allocation.kind(); }
QueueImpl& allocation_home_queue(const Allocation& allocation) noexcept { return allocation.home(); }

HostAccessGate* allocation_host_gate(const Allocation& allocation) noexcept { return allocation.host_guard(); }

void host_access_check(HostAccessGate& gate, const char* access) { static_cast<HostGuard&>(gate).check(access); }

}  // namespace devctx::detail
