// SPDX-License-Identifier: Apache-2.0
// src/backends/cuda/cuda_device.hpp - one CUDA device (CudaDevice): its memory pools, its cache
// of kernel attributes, the page-locked host memory of the fallback path, and the settings and
// engine of its pageable copies. Private to src/backends/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/transfer_settings.hpp"
#include "core/backend.hpp"

namespace devctx::detail::cuda {

/// What devctx knows about one kernel on one device (cudaFuncGetAttributes), cached.
class StagingEngine;

struct KernelInfo {
  unsigned max_threads = 0;  ///< for its register use
  unsigned registers = 0;
  std::size_t static_shared = 0;
  std::size_t dynamic_limit = 0;  ///< cudaFuncAttributeMaxDynamicSharedMemorySize, as set now
};

class CudaDevice final : public DeviceImpl {
 public:
  explicit CudaDevice(int id);
  ~CudaDevice() override;

  const DeviceInfo& info() const noexcept override { return info_; }
  std::shared_ptr<QueueImpl> create_queue() override;
  /// cudaDeviceGetStreamPriorityRange, and queues made with cudaStreamCreateWithPriority.
  [[nodiscard]] StreamPriorityRange stream_priority_range() const override;
  std::shared_ptr<QueueImpl> create_priority_queue(int priority) override;
  /// A CUDA graph of the recorded work (cuda_graph.cpp), or null when a fill has no memset node.
  std::unique_ptr<NativeGraph> instantiate_graph(const std::vector<RecordedOp>& ops) override;
  void check_kernel_limits(const KernelLaunch& launch) override;
  /// cudaDeviceSynchronize: every stream of the device, devctx's and other libraries'.
  void synchronize_device() override;
  // Interop (cuda_interop.cpp): queues on streams made elsewhere, and what a pointer is.
  std::shared_ptr<QueueImpl> wrap_native_queue(void* native) override;
  void check_device_memory(const void* data, std::size_t bytes, std::string_view operation) const override;
  /// cudaMemGetInfo on this device.
  [[nodiscard]] MemoryInfo memory_info() const override;
  // Several GPUs (docs/scale-out.md): a stream waits for another GPU's event (cudaStreamWaitEvent
  // works across devices) and copies to and from its memory (cudaMemcpyPeerAsync: direct when
  // peer access exists, which the first copy enables; staged by CUDA through host memory else).
  /// GPUs' events, and CPU devices' (a host function on the stream waits for them: CudaQueue::wait_for).
  [[nodiscard]] bool can_wait_for(const DeviceImpl& other) const noexcept override {
    return other.info().api == Api::cuda || other.info().api == Api::cpu;
  }
  [[nodiscard]] bool can_access_peer(const DeviceImpl& other) const override;
  [[nodiscard]] bool can_copy_peer(const DeviceImpl& other) const override { return other.info().api == Api::cuda; }
  /// Enables this device's direct access to GPU `peer`'s memory, once, where the hardware
  /// allows it; otherwise leaves copies to CUDA's staged path. Never throws.
  void enable_peer_access(int peer) noexcept;

  // Registered host memory (host_pinning.cpp): cudaHostRegister / cudaHostUnregister.
  void pin_host_memory(const void* data, std::size_t bytes) override;
  void unpin_host_memory(const void* data) noexcept override;
  /// Whether `bytes` at `data`, which devctx knows only as a std::span, is memory the staging
  /// engine should move: ordinary host memory (CUDA calls it unregistered), or memory page-locked
  /// in another device's context only. False when CUDA says its first or last byte is
  /// page-locked for this device (a HostBuffer's data, cudaMallocHost memory, a framework's
  /// pinned tensor: a direct DMA is faster) or is device or managed memory (the CPU's copy
  /// threads cannot read device memory; cudaMemcpyAsync copies it). Never throws.
  [[nodiscard]] bool stage_host_memory(const void* data, std::size_t bytes) noexcept;

  [[nodiscard]] int id() const noexcept { return info_.id; }
  /// How pageable copies are made on this device (read from the environment when it opened).
  [[nodiscard]] const TransferSettings& transfer_settings() const noexcept { return transfers_; }
  /// The staged path of pageable copies, made at the first call; null when DEVCTX_CUDA_STAGING
  /// is off or its staging memory or threads could not be had (copies then take the direct path).
  [[nodiscard]] StagingEngine* staging();
  [[nodiscard]] cudaMemPool_t host_pool() const noexcept { return host_pool_; }
  [[nodiscard]] ContextHealth& health() const noexcept { return health_; }

  /// Makes this device current on the calling thread (only when it is not already).
  void make_current() const {
    if (only_device_) return;  // with one device, the runtime's current device is always it
    int current = -1;
    if (succeeded(cudaGetDevice(&current)) && current == info_.id) return;
    check(DEVCTX_CUDA(cudaSetDevice(info_.id)), *this, "selecting the device");
  }

  /// Throws Error(context_lost) when an earlier fault poisoned this device's context.
  void check_alive(std::string_view operation) const {
    if (health_.lost.load(std::memory_order_acquire)) [[unlikely]]
      throw_lost(*this, operation);
  }
  [[nodiscard]] bool lost() const noexcept { return health_.lost.load(std::memory_order_acquire); }

  // Page-locked host memory outside the pool (the fallback path, cudaHostAlloc): freed only
  // once its last use has completed, because cudaFreeHost waits for the whole device.
  void note_fallback_host(void* data);
  /// Whether `data` is fallback host memory; if it is, it is forgotten (it is being freed).
  [[nodiscard]] bool take_fallback_host(void* data);
  /// Frees `data` once `event` completes.
  void defer_host_free(void* data, cudaEvent_t event) noexcept;
  /// Frees the deferred memory whose event has completed (all of it, waiting, when `wait`).
  void reap_host_frees(bool wait) noexcept;

  /// The device's free and total memory and what devctx's pool holds, for out-of-memory messages.
  [[nodiscard]] std::string memory_text() const;

 private:
  KernelInfo kernel_info(const KernelLaunch& launch);

  DeviceInfo info_;
  bool only_device_ = false;
  ContextHealth& health_;
  cudaMemPool_t host_pool_ = nullptr;

  std::mutex kernels_mutex_;
  std::unordered_map<const void*, KernelInfo> kernels_;

  TransferSettings transfers_;
  std::mutex staging_mutex_;
  std::unique_ptr<StagingEngine> staging_;
  bool staging_failed_ = false;

  std::mutex peers_mutex_;
  std::unordered_set<int> peers_tried_;

  std::mutex host_mutex_;
  std::unordered_set<void*> fallback_host_;
  std::vector<std::pair<void*, cudaEvent_t>> pending_host_frees_;
};

}  // namespace devctx::detail::cuda
