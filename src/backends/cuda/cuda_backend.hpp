// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_backend.hpp - the CUDA backend's entry points, which its descriptor
// (cuda_backend.cpp) hands to core: cuda_device.cpp (and nvtx_ranges.cpp) define them in a
// build with CUDA, cuda_absent.cpp in one without.
#pragma once

#include <memory>
#include <string>

namespace devctx::detail {

class DeviceImpl;

/// The GPUs the CUDA runtime sees; 0 without a driver, a GPU, or CUDA in the build.
[[nodiscard]] int cuda_device_count() noexcept;
/// Why cuda_device_count() is 0 ("devctx was built without CUDA (...)"), for messages.
[[nodiscard]] std::string cuda_absent_reason();
[[nodiscard]] std::shared_ptr<DeviceImpl> open_cuda_device(int id);
/// Registers the NVTX tool while DEVCTX_NVTX is on (nvtx_ranges.cpp; nothing without CUDA).
void start_cuda_tools();

}  // namespace devctx::detail
