// src/backends/cuda/cuda_queue.hpp - how a CUDA device makes its queues (cuda_queue.cpp), the
// one thing the device needs from them. Private to src/backends/cuda/.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace devctx::detail::cuda {

class CudaDevice;

/// A new queue (one non-blocking CUDA stream) on `device`.
[[nodiscard]] std::shared_ptr<QueueImpl> make_queue(std::shared_ptr<CudaDevice> device);

}  // namespace devctx::detail::cuda
