// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/transfer_settings.hpp - the settings of the CUDA backend's copies between
// ordinary (pageable) host memory and the GPU, all read here from the environment when a device
// opens: whether the staged path is used (DEVCTX_CUDA_STAGING), from which size
// (DEVCTX_CUDA_STAGING_THRESHOLD), with how much page-locked staging memory in chunks of which
// size (DEVCTX_CUDA_STAGING_BYTES, DEVCTX_CUDA_STAGING_CHUNK_BYTES), how many copy threads
// (DEVCTX_CUDA_COPY_THREADS) and how long they wait actively for the next chunk of a copy in
// progress before they sleep (DEVCTX_CUDA_COPY_SPIN_US). docs/cuda-backend.md documents them. Private to src/backends/cuda/.
#pragma once

#include <cstddef>

namespace devctx::detail::cuda {

struct TransferSettings {
  bool staging = true;                                ///< DEVCTX_CUDA_STAGING
  std::size_t threshold = std::size_t{8} << 20;       ///< smallest pageable copy that is staged
  std::size_t chunk_bytes = std::size_t{8} << 20;     ///< one staging chunk
  std::size_t staging_bytes = std::size_t{64} << 20;  ///< all chunks together
  std::size_t copy_threads = 1;                       ///< host threads besides the caller
  std::size_t spin_us = 500;                          ///< active wait for the next chunk during a copy

  /// How many chunks the staging memory holds (at least 2: one filling while one moves).
  [[nodiscard]] std::size_t chunks() const noexcept { return staging_bytes / chunk_bytes; }
};

/// Reads the settings a CUDA device is opened with. Throws Error(invalid_argument) naming the
/// variable when one is malformed or out of range, or when the staging memory holds fewer than
/// two chunks.
[[nodiscard]] TransferSettings read_transfer_settings();

}  // namespace devctx::detail::cuda
