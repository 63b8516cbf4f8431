// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/stream_copy.hpp - a memcpy whose stores bypass the caches (non-temporal
// stores), for filling page-locked staging memory that only the GPU's DMA engine reads next:
// ordinary stores first read every destination line into the cache (a third more memory
// traffic) and evict the caller's data for lines nobody on the host will read.
// Private to src/backends/cuda/.
#pragma once

#include <cstddef>

namespace devctx::detail::cuda {

/// Copies `bytes` from `src` to `dst` (not overlapping), with non-temporal stores where the
/// processor has them (x86-64; a plain memcpy elsewhere and below a few KiB). On return the
/// stores are ordered before any later store of this thread (a store fence), so releasing a
/// lock or an atomic afterwards publishes them.
void stream_copy(void* dst, const void* src, std::size_t bytes) noexcept;

}  // namespace devctx::detail::cuda
