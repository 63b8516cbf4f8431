// SPDX-License-Identifier: Apache-2.0
// src/core/host_registry.hpp - ordinary host memory registered with a device
// (DeviceContext::register_host_memory): the ranges each device holds, the one rule that two
// registrations on a device never share a byte, and the hold that keeps a range registered
// while a copy uses it directly. The backend page-locks the memory (DeviceImpl::pin_host_memory).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <vector>

namespace devctx::detail {

class DeviceImpl;

class HostRegistry {
 public:
  /// Registers [data, data + bytes) with `device`: reserves the range (Error(invalid_argument)
  /// naming both ranges when it overlaps one registered on this device), has the backend
  /// page-lock it, then lets copies see it. When the backend throws, nothing stays reserved.
  void add(DeviceImpl& device, const void* data, std::size_t bytes);
  /// Unregisters the range that starts at `data` once no copy holds it. Never throws.
  void remove(DeviceImpl& device, const void* data) noexcept;
  /// A shared hold on the registry, taken when [data, data + bytes) lies inside one registered
  /// range (owns_lock() is then true; the range stays registered until the hold goes), else an
  /// empty lock.
  [[nodiscard]] std::shared_lock<std::shared_mutex> hold_if_registered(const void* data, std::size_t bytes) const;
  /// How to copy [data, data + bytes) directly when it overlaps registered ranges without lying
  /// inside one: CUDA refuses a copy whose host side crosses a registration's edge
  /// (cudaErrorInvalidValue), so the copy goes in pieces, each inside one range or outside all.
  /// `lengths` is empty when no edge falls inside the range (copy it whole); `hold` keeps the
  /// ranges it touches registered until the copy is done (empty when it touches none).
  struct Pieces {
    std::shared_lock<std::shared_mutex> hold;
    std::vector<std::size_t> lengths;
  };
  [[nodiscard]] Pieces split_at_edges(const void* data, std::size_t bytes) const;

 private:
  enum class State : unsigned char { reserved, ready, removing };
  struct Range {
    std::uintptr_t end;
    State state;
  };
  mutable std::shared_mutex mutex_;
  std::map<std::uintptr_t, Range> ranges_;  ///< by start address
  std::atomic<std::size_t> ready_{0};       ///< ranges in State::ready: copies skip the lock at 0
};

}  // namespace devctx::detail
