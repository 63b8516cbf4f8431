// SPDX-License-Identifier: Apache-2.0
// src/core/allocation.hpp - the record behind every DeviceBuffer and HostBuffer: which queue
// allocated the memory, which other queues used it, and its stream-ordered release.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <devctx/detail/base/seam.hpp>

#include "core/backend.hpp"
#include "core/host_access.hpp"

namespace devctx::detail {

class Allocation {
 public:
  Allocation(std::shared_ptr<QueueImpl> home, void* data, std::size_t bytes, MemKind kind) noexcept
      : home_(std::move(home)), data_(data), bytes_(bytes), kind_(kind) {}
  /// A HostBuffer's record in a checked context, with checking mode's guard of host access.
  Allocation(std::shared_ptr<QueueImpl> home, void* data, std::size_t bytes, MemKind kind,
             std::unique_ptr<HostGuard> guard) noexcept
      : home_(std::move(home)), data_(data), bytes_(bytes), kind_(kind), guard_(std::move(guard)) {}
  /// A record of memory devctx did not allocate (DeviceView): release() never frees it; it
  /// runs `on_release` (if any) once devctx's work on the memory has finished.
  Allocation(std::shared_ptr<QueueImpl> home, void* data, std::size_t bytes, MemKind kind,
             std::function<void()> on_release) noexcept
      : home_(std::move(home)),
        data_(data),
        bytes_(bytes),
        kind_(kind),
        external_(true),
        on_release_(std::move(on_release)) {}

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] MemKind kind() const noexcept { return kind_; }
  [[nodiscard]] DeviceImpl& device() const noexcept { return home_->device(); }
  [[nodiscard]] QueueImpl& home() const noexcept { return *home_; }
  /// Checking mode's record of the work pending on a HostBuffer made by a checked context; null
  /// for every other allocation.
  [[nodiscard]] HostGuard* host_guard() const noexcept { return guard_.get(); }

  /// Remembers that `queue` enqueued work on this memory, so the free waits for it too.
  void note_use(QueueImpl& queue);
  /// Frees in stream order: after the work enqueued so far on every queue that used it.
  void release() noexcept;

 private:
  std::shared_ptr<QueueImpl> home_;
  void* data_;
  std::size_t bytes_;
  MemKind kind_;
  bool external_ = false;
  std::function<void()> on_release_;
  std::mutex users_mutex_;
  std::vector<std::weak_ptr<QueueImpl>> other_users_;
  std::unique_ptr<HostGuard> guard_;
};

}  // namespace devctx::detail
