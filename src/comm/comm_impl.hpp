// SPDX-License-Identifier: Apache-2.0
// src/comm/comm_impl.hpp - the one internal interface every communicator engine implements (CPU
// devices of one process, MPI ranks), and the names messages give collectives and types.
#pragma once

#include <cstddef>
#include <string>

#include <devctx/comm.hpp>

#include "core/backend.hpp"

namespace devctx::detail {

class CommImpl {
 public:
  CommImpl(DeviceImpl& device, int rank, int size) noexcept : device_(device), rank_(rank), size_(size) {}
  virtual ~CommImpl() = default;
  CommImpl(const CommImpl&) = delete;
  CommImpl& operator=(const CommImpl&) = delete;

  [[nodiscard]] DeviceImpl& device() const noexcept { return device_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  /// Enqueues this rank's part of `call` on `queue` (of device()); core has checked devices,
  /// sizes and ranks. Throws Error when the call does not match the other ranks' (nothing is
  /// then enqueued on this rank).
  virtual void enqueue(QueueImpl& queue, const CollectiveCall& call, std::size_t element_bytes) = 0;

 private:
  DeviceImpl& device_;
  int rank_;
  int size_;
};

[[nodiscard]] const char* to_string(CollectiveKind kind) noexcept;
[[nodiscard]] const char* to_string(DataType type) noexcept;
[[nodiscard]] const char* to_string(ReduceOp op) noexcept;
/// DEVCTX_COMM_TIMEOUT_S: how long a collective waits for the other ranks before it fails
/// (default 300 s; CPU devices and MPI ranks). Throws Error(invalid_argument) for a bad value.
[[nodiscard]] double comm_timeout_seconds();
/// Bytes of one element of `type`.
[[nodiscard]] std::size_t element_bytes_of(DataType type) noexcept;

}  // namespace devctx::detail
