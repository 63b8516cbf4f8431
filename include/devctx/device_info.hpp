// SPDX-License-Identifier: Apache-2.0
// devctx/device_info.hpp - backends, device names and device properties.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <devctx/launch.hpp>

namespace devctx {

/// The backend a DeviceContext runs on.
enum class Api {
  cpu,   ///< the host's cores run the kernels (always built, always present)
  cuda,  ///< an NVIDIA GPU through the CUDA runtime (built when DEVCTX_ENABLE_CUDA is ON)
};

/// "cpu" or "cuda".
[[nodiscard]] const char* to_string(Api api) noexcept;

/// A device as DEVCTX_DEVICE and `devctx demo --device` name it.
struct DeviceId {
  Api api = Api::cpu;
  int id = 0;
  friend constexpr bool operator==(const DeviceId&, const DeviceId&) = default;
};

/// Parses a device name: "cpu", "cuda" or "gpu" (device 0), or "cpu:N", "cuda:N", "gpu:N" with
/// N a decimal number (lower case, no spaces). Throws devctx::Error (invalid_argument) naming
/// the text and the accepted forms. Whether the device exists is checked when a DeviceContext
/// opens it.
[[nodiscard]] DeviceId parse_device(std::string_view name);

/// The device DEVCTX_DEVICE names (parsed as by parse_device), or std::nullopt when it is unset
/// or empty. Throws devctx::Error (invalid_argument) naming DEVCTX_DEVICE and its value when it
/// names no device. DeviceContext's default constructor obeys it.
[[nodiscard]] std::optional<DeviceId> device_from_environment();

/// A device's properties and limits. Every launch is checked against these before it is
/// enqueued.
struct DeviceInfo {
  std::string name;
  Api api = Api::cpu;
  int id = 0;
  unsigned multiprocessors = 0;  ///< SMs on CUDA; worker threads on the CPU
  unsigned max_threads_per_block = 0;
  Dim3 max_block_dim;
  Dim3 max_grid_dim;
  std::size_t max_shared_bytes_per_block = 0;  ///< static + dynamic shared memory per block
  unsigned warp_size = 32;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;  ///< 0 on the CPU
  int compute_capability_minor = 0;
};

/// A device's memory now (DeviceContext::memory_info): on CUDA what cudaMemGetInfo reports; on
/// the CPU the host's available memory (MemAvailable) and its total.
struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

/// The stream priorities of a device (DeviceContext::stream_priority_range), in CUDA's order: a
/// numerically lower value is a higher priority. `least` is the default (0); `greatest` <= least.
/// On the CPU backend both are 0 (one priority: its workers take work in the order it is ready).
struct StreamPriorityRange {
  int least = 0;
  int greatest = 0;
};

}  // namespace devctx
