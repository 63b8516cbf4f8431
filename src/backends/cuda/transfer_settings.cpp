// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/transfer_settings.cpp - parses the environment variables of the CUDA
// backend's pageable copies (transfer_settings.hpp), through core/environment.
#include "backends/cuda/transfer_settings.hpp"

#include <algorithm>
#include <thread>

#include "core/environment.hpp"
#include "core/errors.hpp"
#include "core/memory.hpp"

namespace devctx::detail::cuda {
namespace {

constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
/// More copy threads than this is a mistyped value, not a machine.
constexpr std::size_t kMaxCopyThreads = 256;
/// The default number of copy threads: three quarters of the hardware threads (the caller copies
/// too), at most 12 (issue 13's probe reached 39.6 GB/s up with 12 threads on the H200's host,
/// 23.5 GB/s of host copies with 8). A starting point for the sweep of transfers_bench.cu.
std::size_t default_copy_threads() {
  const std::size_t hardware = std::max<std::size_t>(std::thread::hardware_concurrency(), 1);
  return std::clamp<std::size_t>(hardware * 3 / 4, 1, 12);
}

}  // namespace

TransferSettings read_transfer_settings() {
  TransferSettings s;
  s.staging = env_flag("DEVCTX_CUDA_STAGING", true);
  s.threshold = env_size("DEVCTX_CUDA_STAGING_THRESHOLD", s.threshold, 0, kMaxAllocationBytes, SizeUnit::bytes,
                         "the smallest copy between pageable host memory and the GPU that goes through staging");
  s.chunk_bytes = env_size("DEVCTX_CUDA_STAGING_CHUNK_BYTES", s.chunk_bytes, 64 * kKiB, kGiB, SizeUnit::bytes,
                           "one chunk of page-locked staging memory");
  s.staging_bytes = env_size("DEVCTX_CUDA_STAGING_BYTES", s.staging_bytes, 128 * kKiB, 16 * kGiB, SizeUnit::bytes,
                             "the page-locked staging memory of one GPU, all chunks together");
  s.copy_threads = env_size("DEVCTX_CUDA_COPY_THREADS", default_copy_threads(), 0, kMaxCopyThreads, SizeUnit::count,
                            "host threads of one GPU that copy between pageable and staging memory");
  s.spin_us = env_size("DEVCTX_CUDA_COPY_SPIN_US", s.spin_us, 0, 100'000, SizeUnit::count,
                       "microseconds a copy thread waits actively for the next chunk of a staged copy before it sleeps");
  if (s.chunks() < 2)
    fail(Errc::invalid_argument, "DEVCTX_CUDA_STAGING_BYTES (", bytes_text(s.staging_bytes),
         ") holds fewer than two chunks of DEVCTX_CUDA_STAGING_CHUNK_BYTES (", bytes_text(s.chunk_bytes),
         "): staging needs at least two, one filling while the other moves; raise the first or lower the second");
  return s;
}

}  // namespace devctx::detail::cuda
