// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/fill_kernel.hpp - the pattern-fill kernel's parameters, shared by the host
// code (cuda_queue.cpp, compiled by the C++ compiler) and the kernel (fill_kernel.cu, nvcc).
//
// enqueue_memset needs fills with elements of any width and any byte pattern, into device
// memory and into page-locked host memory, in stream order. cudaMemsetAsync covers only
// patterns whose bytes are all equal (in device memory); this kernel covers the rest.
#pragma once

#include <cstddef>

namespace devctx::detail::cuda {

/// Widest element the kernel fills directly (wider ones are filled by doubling copies).
inline constexpr std::size_t kFillMaxPattern = 256;

struct FillParams {
  unsigned char* dst = nullptr;
  unsigned long long bytes = 0;  ///< total bytes to write
  unsigned width = 1;            ///< element bytes, 1..kFillMaxPattern
  unsigned head = 0;             ///< bytes before the first 16-byte aligned address (vector mode)
  /// 16-byte vectors in one period of the pattern as seen from the aligned body
  /// (lcm(width, 16) / 16); 0 selects byte mode (every byte written on its own).
  unsigned period_vectors = 0;
  alignas(16) unsigned char pattern[kFillMaxPattern] = {};  ///< one element
  alignas(16) unsigned char vectors[kFillMaxPattern] = {};  ///< the body's period, from `head`
};

/// The kernel's host stub, for cudaLaunchKernel (args: one FillParams).
[[nodiscard]] const void* fill_kernel() noexcept;

}  // namespace devctx::detail::cuda
