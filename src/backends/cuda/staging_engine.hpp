// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/staging_engine.hpp - the staged path of copies between ordinary (pageable)
// host memory and the GPU: the copy is cut into chunks that pass through a bounded pool of
// page-locked staging slots; copy threads (copy_workers.hpp) and the calling thread move chunk
// i+1 between the caller's memory and a slot while the DMA engine moves chunk i between a slot
// and the device, in the order of the copy's stream. One engine per device, made at its first
// large pageable copy (CudaDevice::staging). docs/cuda-backend.md describes it. Private to
// src/backends/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/cuda/copy_workers.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/transfer_settings.hpp"

namespace devctx::detail::cuda {

class StagingEngine {
 public:
  /// Allocates the staging memory (from `host_pool` when not null, else cudaHostAlloc) and
  /// starts the copy threads; the device is current. Throws Error when CUDA refuses.
  StagingEngine(const TransferSettings& settings, cudaMemPool_t host_pool);
  /// Frees the staging memory once the copies that used it have finished. No copy may be running.
  ~StagingEngine();
  StagingEngine(const StagingEngine&) = delete;
  StagingEngine& operator=(const StagingEngine&) = delete;

  /// `bytes` of device memory at `dst` <- pageable host memory at `src`, in `stream`'s order.
  /// Returns once the copy and the stream's earlier work are done, as the direct path does. A
  /// failed CUDA call is returned (ok() otherwise) once nothing touches `src` any more.
  [[nodiscard]] CudaCall upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);
  /// `bytes` of pageable host memory at `dst` <- device memory at `src`, in `stream`'s order.
  /// Returns once all of `dst` has been written; a failed call as upload() does.
  [[nodiscard]] CudaCall download(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

 private:
  class Run;
  enum class SlotState : unsigned char { free, owned, pending, lost };
  struct Slot {
    std::byte* memory = nullptr;
    cudaEvent_t done = nullptr;  ///< recorded after the slot's last DMA
    SlotState state = SlotState::free;
    std::uint64_t released = 0;  ///< when it became pending: the oldest is waited for first
  };

  /// A slot for the calling copy. With `wait` false, std::nullopt when none is free now; with
  /// `wait` true, waits for one (for the oldest DMA still using one, else for another copy to
  /// give one back). A failure of the stream's work surfacing in an event goes to `failure`.
  std::optional<std::size_t> acquire(bool wait, CudaCall& failure);
  /// Gives a slot back: free, or pending until its event (recorded after its DMA) completes.
  void release(std::size_t slot, SlotState state) noexcept;

  std::size_t chunk_bytes_;
  cudaMemPool_t pool_ = nullptr;        ///< where memory_ came from (null: cudaHostAlloc)
  cudaStream_t pool_stream_ = nullptr;  ///< the stream memory_ is allocated and freed on (pool only)
  std::byte* memory_ = nullptr;
  std::mutex slots_mutex_;
  std::condition_variable slot_released_;
  std::vector<Slot> slots_;
  std::uint64_t releases_ = 0;
  CopyWorkers workers_;
};

}  // namespace devctx::detail::cuda
