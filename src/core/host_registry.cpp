// SPDX-License-Identifier: Apache-2.0
// src/core/host_registry.cpp - registered host memory (host_registry.hpp) and the checked entry
// point behind DeviceContext::register_host_memory: null, empty and overflowing ranges are
// refused here, for every backend, before the backend page-locks anything.
#include "core/host_registry.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <devctx/detail/base/checked_size.hpp>
#include <devctx/detail/base/seam.hpp>

#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace {

std::string range_text(std::uintptr_t begin, std::uintptr_t end) {
  return concat("[", reinterpret_cast<const void*>(begin), ", ", reinterpret_cast<const void*>(end), ") (",
                bytes_text(end - begin), ')');
}

}  // namespace

void HostRegistry::add(DeviceImpl& device, const void* data, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = begin + bytes;  // checked by the caller not to wrap
  {
    const std::unique_lock lock(mutex_);
    // The nearest range starting at or after `begin`, and the one before it, are the only
    // ones that can overlap (registered ranges never overlap one another).
    auto after = ranges_.lower_bound(begin);
    auto clash = ranges_.end();
    if (after != ranges_.end() && after->first < end) clash = after;
    if (clash == ranges_.end() && after != ranges_.begin() && std::prev(after)->second.end > begin)
      clash = std::prev(after);
    if (clash != ranges_.end())
      fail(Errc::invalid_argument, "register_host_memory on ", device.label(), ": the range ", range_text(begin, end),
           " overlaps the range ", range_text(clash->first, clash->second.end),
           " registered earlier on this device and still registered; a byte can be registered once per device at a "
           "time: drop (or reset()) the earlier HostRegistration first, or register one range that covers both");
    ranges_.emplace(begin, Range{end, State::reserved});
  }
  try {
    device.pin_host_memory(data, bytes);
  } catch (...) {
    const std::unique_lock lock(mutex_);
    ranges_.erase(begin);
    throw;
  }
  const std::unique_lock lock(mutex_);
  ranges_.at(begin).state = State::ready;
  ready_.fetch_add(1, std::memory_order_release);
}

void HostRegistry::remove(DeviceImpl& device, const void* data) noexcept {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  {
    // Exclusive: waits for the copies that hold the range; afterwards no copy sees it.
    const std::unique_lock lock(mutex_);
    const auto it = ranges_.find(begin);
    if (it == ranges_.end() || it->second.state != State::ready) return;
    it->second.state = State::removing;
    ready_.fetch_sub(1, std::memory_order_release);
  }
  // Still reserved while the backend unpins it, so that no new registration of the same bytes
  // reaches the backend before it is done.
  device.unpin_host_memory(data);
  const std::unique_lock lock(mutex_);
  ranges_.erase(begin);
}

std::shared_lock<std::shared_mutex> HostRegistry::hold_if_registered(const void* data, std::size_t bytes) const {
  if (ready_.load(std::memory_order_acquire) == 0) return {};
  std::shared_lock lock(mutex_);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  auto it = ranges_.upper_bound(begin);
  if (it == ranges_.begin()) return {};
  --it;
  if (it->second.state != State::ready || begin >= it->second.end || bytes > it->second.end - begin) return {};
  return lock;
}

HostRegistry::Pieces HostRegistry::split_at_edges(const void* data, std::size_t bytes) const {
  Pieces pieces;
  if (ready_.load(std::memory_order_acquire) == 0 || bytes == 0) return pieces;
  std::shared_lock lock(mutex_);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = begin + bytes;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second.end > begin) --it;  // the range begin lies in
  std::uintptr_t at = begin;
  for (; it != ranges_.end() && it->first < end; ++it) {
    const std::uintptr_t lo = std::max(it->first, begin), hi = std::min(it->second.end, end);
    if (lo > at) pieces.lengths.push_back(lo - at);  // unregistered memory before this range
    pieces.lengths.push_back(hi - lo);
    at = hi;
  }
  if (pieces.lengths.empty()) return {};  // no registered byte: nothing to hold
  pieces.hold = std::move(lock);
  if (pieces.lengths.size() == 1 && at == end)
    pieces.lengths.clear();  // inside one range: whole
  else if (at < end)
    pieces.lengths.push_back(end - at);
  return pieces;
}

/// One registration: its device (kept open while it lives) and where the range starts.
class HostRegistrationRecord {
 public:
  HostRegistrationRecord(std::shared_ptr<DeviceImpl> device, const void* data) noexcept
      : device_(std::move(device)), data_(data) {}
  ~HostRegistrationRecord() { device_->host_registry().remove(*device_, data_); }
  HostRegistrationRecord(const HostRegistrationRecord&) = delete;
  HostRegistrationRecord& operator=(const HostRegistrationRecord&) = delete;

 private:
  std::shared_ptr<DeviceImpl> device_;
  const void* data_;
};

void HostRegistrationReleaser::operator()(HostRegistrationRecord* record) const noexcept { delete record; }

HostRegistrationPtr queue_register_host_memory(QueueImpl& queue, const void* data, std::size_t count,
                                               std::size_t element_bytes) {
  DeviceImpl& device = queue.device();
  const auto where = [&] { return concat("register_host_memory on ", device.label(), ": "); };
  if (count == 0)
    fail(Errc::invalid_argument, where(), "the range is empty (0 elements); there is nothing to page-lock");
  if (data == nullptr)
    fail(Errc::invalid_argument, where(), "the range's data pointer is null but it claims ", count, " elements");
  const auto bytes = checked_mul(count, element_bytes);
  if (!bytes || *bytes > std::numeric_limits<std::uintptr_t>::max() - reinterpret_cast<std::uintptr_t>(data))
    fail(Errc::invalid_argument, where(), "the range at ", data, " claims ", count, " elements of ", element_bytes,
         " bytes, which run past the end of the address space: the count is wrong");
  device.host_registry().add(device, data, *bytes);
  try {
    return HostRegistrationPtr(new HostRegistrationRecord(device.shared_from_this(), data));
  } catch (...) {
    device.host_registry().remove(device, data);
    throw;
  }
}

}  // namespace devctx::detail
