// SPDX-License-Identifier: Apache-2.0
// src/runtime/nvrtc.hpp - NVRTC, the default compiler of runtime-compiled CUDA kernels
// (docs/runtime-kernels.md), as the runtime layer sees it: no CUDA header here. Implemented by the
// CUDA backend (src/backends/cuda/nvrtc_compiler.cpp), which loads libnvrtc with dlopen on first
// use; src/backends/cuda/nvrtc_absent.cpp in a build without CUDA.
#pragma once

#include <string>
#include <vector>

namespace devctx::detail::rt {

/// What one NVRTC compile gave: the cubin when `ok`, and NVRTC's log either way.
struct NvrtcOutput {
  bool ok = false;
  std::string cubin;
  std::string log;
};

/// NVRTC's identity for cache keys: its version (nvrtcVersion), the library's path, size and
/// modification time, and libcu++'s include directories. Loads NVRTC: throws Error(not_available)
/// saying what to install (or DEVCTX_NVRTC, DEVCTX_RT_CUDA_COMPILER=nvcc) when it cannot be loaded.
[[nodiscard]] std::string nvrtc_identity();

/// The include options NVRTC compiles with besides devctx's own: libcu++ (-I...).
[[nodiscard]] std::vector<std::string> nvrtc_include_options();

/// Compiles `source` as program `program_name` (the name compiler messages give lines before the
/// first #line) with `options`, for a cubin. A source that does not compile (or options NVRTC
/// refuses) is ok == false with the log; Error(not_available) when NVRTC cannot be loaded,
/// Error(backend_error) when NVRTC fails otherwise.
[[nodiscard]] NvrtcOutput nvrtc_compile(const std::string& source, const std::string& program_name,
                                        const std::vector<std::string>& options);

}  // namespace devctx::detail::rt
