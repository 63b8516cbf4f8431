// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_queue.hpp - how a CUDA device makes its queues (cuda_queue.cpp), the
// one thing the device needs from them: on a stream of their own, or on one made elsewhere.
// Private to src/backends/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "core/backend.hpp"

namespace devctx::detail::cuda {

class CudaDevice;

/// A new queue (one non-blocking CUDA stream) on `device`.
[[nodiscard]] std::shared_ptr<QueueImpl> make_queue(std::shared_ptr<CudaDevice> device, int priority = 0);
/// A queue on `stream`, made elsewhere and checked by the caller; the queue never destroys it.
[[nodiscard]] std::shared_ptr<QueueImpl> make_borrowed_queue(std::shared_ptr<CudaDevice> device, cudaStream_t stream);

}  // namespace devctx::detail::cuda
