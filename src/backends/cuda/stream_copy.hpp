// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/stream_copy.hpp - memcpy with non-temporal (streaming) stores, for filling
// the page-locked staging memory of uploads: that memory is read next by the GPU's DMA engine,
// not by the CPU, so there is no point in carrying it through the caches. On the H200's host
// (Intel Xeon, AVX-512) the host alone copies 256 MiB into a 64 MiB page-locked window, cold,
// at 46.6-50.5 GB/s with 12 threads against 35.1-43.0 with memcpy, 9.1-9.7 against 5.9-6.6 with
// one (bench/cuda/upload_probe.cu, part 2b). Where the processor has no AVX-512, memcpy: 16-byte
// streaming stores measured no better than memcpy there (session 10). Private to src/backends/cuda/.
#pragma once

#include <cstddef>

namespace devctx::detail::cuda {

/// Whether stream_copy() can do more than memcpy on this processor (x86-64 with AVX-512F).
[[nodiscard]] bool stream_copy_available() noexcept;

/// How stream_copy copies where it can.
struct HostCopyStyle {
  bool streaming_stores = true;    ///< whole lines of the destination go to memory unread
  std::size_t prefetch_bytes = 0;  ///< prefetch the source this far ahead, non-temporal hint (0: no)
};

/// Copies `bytes` from `src` to `dst` (not overlapping), as memcpy does, in `style` where
/// stream_copy_available() (else memcpy). Every store is globally visible when it returns (it
/// ends with a store fence).
void stream_copy(void* dst, const void* src, std::size_t bytes, HostCopyStyle style = {}) noexcept;

}  // namespace devctx::detail::cuda
