// SPDX-License-Identifier: Apache-2.0
// src/core/backend_descriptor.hpp - what a backend tells devctx about itself: its public
// description (devctx::Backend) and the entry points core and comm call through it (opening a
// device, making a communicator group). Each backend folder defines its descriptor
// (src/backends/<name>/<name>_backend.cpp); core/backends.cpp is the one list of them.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <devctx/backend.hpp>

namespace devctx::detail {

class CommImpl;
class DeviceImpl;
class QueueImpl;

struct BackendDescriptor {
  /// What users see (devctx::backends()).
  Backend backend;
  /// Opens device `id` (core has checked 0 <= id < backend.device_count()); core shares it
  /// among the contexts of the device. Throws Error naming what failed.
  std::shared_ptr<DeviceImpl> (*open_device)(int id) = nullptr;
  /// Ranks 0..count-1 of one communicator, rank i on queues[i]'s device: all of this backend,
  /// distinct (checked by comm). Null when the backend has no collectives.
  std::vector<std::shared_ptr<CommImpl>> (*create_comm_group)(QueueImpl* const* queues, std::size_t count) = nullptr;
  /// Registers the backend's tools of the operation pipeline for the process (core/subscribers.hpp;
  /// the CUDA backend's NVTX ranges under DEVCTX_NVTX) when its settings ask for them. Called at
  /// every context's creation: cheap after the first call, and a bad setting throws Error each
  /// time. Null when the backend has none.
  void (*start_tools)() = nullptr;
};

/// Each backend folder's descriptor (constant-initialized, so usable from any static initializer).
extern const BackendDescriptor cpu_backend_descriptor;
extern const BackendDescriptor cuda_backend_descriptor;

/// The descriptor of `api`; throws Error(invalid_argument) for a value that names no backend.
[[nodiscard]] const BackendDescriptor& descriptor_of(Api api);
/// Each backend's start_tools(), for a context being created.
void start_backend_tools();

}  // namespace devctx::detail
