// devctx/device_info.hpp - backends and device properties.
#pragma once

#include <cstddef>
#include <string>

#include <devctx/launch.hpp>

namespace devctx {

/// The backend a DeviceContext runs on.
enum class Api {
  cpu,   ///< the host's cores run the kernels (always built, always present)
  cuda,  ///< an NVIDIA GPU through the CUDA runtime (built when DEVCTX_ENABLE_CUDA is ON)
};

/// "cpu" or "cuda".
[[nodiscard]] const char* to_string(Api api) noexcept;

/// A device's properties and limits. Every launch is checked against these before it is
/// enqueued.
struct DeviceInfo {
  std::string name;
  Api api = Api::cpu;
  int id = 0;
  unsigned multiprocessors = 0;          ///< SMs on CUDA; worker threads on the CPU
  unsigned max_threads_per_block = 0;
  Dim3 max_block_dim;
  Dim3 max_grid_dim;
  std::size_t max_shared_bytes_per_block = 0;  ///< static + dynamic shared memory per block
  unsigned warp_size = 32;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;      ///< 0 on the CPU
  int compute_capability_minor = 0;
};

}  // namespace devctx
