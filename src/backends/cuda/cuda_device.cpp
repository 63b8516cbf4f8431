// SPDX-License-Identifier: Apache-2.0
// One CUDA device (see cuda_device.hpp) and the backend's entry points (src/core/backend.hpp).
//
// This folder is the only code in devctx that includes CUDA headers. Its host code is plain
// C++ compiled by the host compiler and linked against the static CUDA runtime; only the
// fill kernel (fill_kernel.cu) needs nvcc. docs/cuda-backend.md describes the behaviour.
//
// - Device memory: cudaMallocAsync / cudaFreeAsync from the device's default pool, whose
//   release threshold is raised so that freed memory stays in the pool for reuse.
// - Host buffers: page-locked memory from a stream-ordered host memory pool where the driver
//   has them (cudaDevAttrHostMemoryPoolsSupported), else cudaHostAlloc with deferred frees.
// - Kernel attributes (cudaFuncGetAttributes) are cached per device and kernel, to check each
//   launch against the kernel's own limits.
// - Pageable copies: the settings are read when the device opens (transfer_settings.cpp); the
//   staging engine (staging_engine.cpp) is made at the first large pageable copy.
// The queues, events and fills are in cuda_queue.cpp; errors and context health in cuda_error.cpp.
#include "backends/cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_error.hpp"
#include "backends/cuda/cuda_queue.hpp"
#include "backends/cuda/staging_engine.hpp"
#include "core/backend.hpp"
#include "core/environment.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace cuda {
namespace {

/// The kernel this thread launched last, so that a loop of launches of one kernel skips the
/// device's lock. Kernel attributes are fixed per device id and kernel for the whole process.
struct LastKernel {
  int device = -1;
  const void* function = nullptr;
  KernelInfo info;
};
thread_local LastKernel last_kernel;

}  // namespace

CudaDevice::CudaDevice(int id) : health_(context_health(id)), transfers_(read_transfer_settings()) {
  cudaDeviceProp p{};
  info_.api = Api::cuda;
  info_.id = id;
  info_.name = concat("CUDA device ", id);
  check(DEVCTX_CUDA(cudaGetDeviceProperties(&p, id)), *this, "opening the device");
  info_.name = p.name;
  info_.multiprocessors = unsigned(p.multiProcessorCount);
  info_.max_threads_per_block = unsigned(p.maxThreadsPerBlock);
  info_.max_block_dim = {unsigned(p.maxThreadsDim[0]), unsigned(p.maxThreadsDim[1]), unsigned(p.maxThreadsDim[2])};
  info_.max_grid_dim = {unsigned(p.maxGridSize[0]), unsigned(p.maxGridSize[1]), unsigned(p.maxGridSize[2])};
  // The opt-in maximum: launches above 48 KiB raise the kernel's limit automatically.
  info_.max_shared_bytes_per_block = std::max(p.sharedMemPerBlockOptin, p.sharedMemPerBlock);
  info_.warp_size = unsigned(p.warpSize);
  info_.total_memory_bytes = p.totalGlobalMem;
  info_.compute_capability_major = p.major;
  info_.compute_capability_minor = p.minor;
  check_alive("opening the device");
  int devices = 0;
  only_device_ = succeeded(cudaGetDeviceCount(&devices)) && devices == 1;

  make_current();
  // Freed device memory stays in the default pool for reuse instead of going back to the
  // driver at every synchronization (the default threshold of 0 would release it).
  cudaMemPool_t pool = nullptr;
  check(DEVCTX_CUDA(cudaDeviceGetDefaultMemPool(&pool, id)), *this, "opening the device");
  std::uint64_t threshold = UINT64_MAX;
  check(DEVCTX_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold)), *this,
        "opening the device");

  // Stream-ordered page-locked host memory, where the driver offers it.
  int host_pools = 0;
  if (!succeeded(cudaDeviceGetAttribute(&host_pools, cudaDevAttrHostMemoryPoolsSupported, id))) host_pools = 0;
  if (host_pools != 0 && env_flag("DEVCTX_CUDA_HOST_POOL", true)) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeHost;
    props.location.id = 0;
    if (!succeeded(cudaMemPoolCreate(&host_pool_, &props))) {
      host_pool_ = nullptr;
    } else {
      ignore(cudaMemPoolSetAttribute(host_pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
      // Every device may copy from and to it (a HostBuffer is host memory to the others).
      if (devices <= id) devices = id + 1;
      for (int d = 0; d < devices; ++d) {
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = d;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        // Access from the other devices is optional; from this one, the pool is useless without it.
        if (!succeeded(cudaMemPoolSetAccess(host_pool_, &access, 1)) && d == id) {
          ignore(cudaMemPoolDestroy(host_pool_));
          host_pool_ = nullptr;
          break;
        }
      }
    }
  }
}

CudaDevice::~CudaDevice() {
  // The staging memory first: it may come from the host pool destroyed below. Its stream and
  // events belong to this device, which may not be current on the thread that closes it.
  if (staging_ != nullptr) {
    int current = -1;
    if (!succeeded(cudaGetDevice(&current)) || current != id()) ignore(cudaSetDevice(id()));
    staging_.reset();
  }
  // Only fallback host buffers can still be pending here: pool memory is freed in stream order,
  // and a destroyed pool goes away once its last allocation is freed.
  reap_host_frees(true);
  if (host_pool_ != nullptr) ignore(cudaMemPoolDestroy(host_pool_));
}

StagingEngine* CudaDevice::staging() {
  if (!transfers_.staging) return nullptr;
  const std::lock_guard lock(staging_mutex_);
  if (staging_ == nullptr && !staging_failed_) {
    try {
      staging_ = std::make_unique<StagingEngine>(transfers_, host_pool_);
    } catch (const std::exception&) {
      // No staging memory or no threads: every pageable copy takes the direct path, as fast as
      // the driver's own staging; trying again at each copy would cost each copy the attempt.
      staging_failed_ = true;
    }
  }
  return staging_.get();
}

MemoryInfo CudaDevice::memory_info() const {
  check_alive("memory_info");
  make_current();
  MemoryInfo m;
  check(DEVCTX_CUDA(cudaMemGetInfo(&m.free_bytes, &m.total_bytes)), *this, "memory_info (cudaMemGetInfo)");
  return m;
}

std::string CudaDevice::memory_text() const {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (!succeeded(cudaMemGetInfo(&free_bytes, &total_bytes))) return "the device's free memory is unknown";
  std::string text = concat("the device has ", bytes_text(free_bytes), " free of ", bytes_text(total_bytes), " in total");
  cudaMemPool_t pool = nullptr;
  std::uint64_t reserved = 0, used = 0;
  if (succeeded(cudaDeviceGetDefaultMemPool(&pool, info_.id)) &&
      succeeded(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved)) &&
      succeeded(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used)))
    text += concat(" (devctx's stream-ordered pool holds ", bytes_text(reserved), ", ", bytes_text(used), " of it in use)");
  return text;
}

KernelInfo CudaDevice::kernel_info(const KernelLaunch& launch) {
  if (last_kernel.function == launch.cuda_function && last_kernel.device == info_.id) return last_kernel.info;
  const std::lock_guard lock(kernels_mutex_);
  if (const auto it = kernels_.find(launch.cuda_function); it != kernels_.end()) {
    last_kernel = {info_.id, launch.cuda_function, it->second};
    return it->second;
  }
  const std::string operation = launch_operation(launch.name);
  make_current();
  cudaFuncAttributes a{};
  check(DEVCTX_CUDA(cudaFuncGetAttributes(&a, launch.cuda_function)), *this, operation);
  KernelInfo k;
  k.max_threads = unsigned(a.maxThreadsPerBlock);
  k.registers = unsigned(a.numRegs);
  k.static_shared = a.sharedSizeBytes;
  k.dynamic_limit = std::size_t(a.maxDynamicSharedSizeBytes);
  last_kernel = {info_.id, launch.cuda_function, k};
  return kernels_.emplace(launch.cuda_function, k).first->second;
}

void CudaDevice::check_kernel_limits(const KernelLaunch& launch) {
  if (launch.cuda_function == nullptr)
    fail(Errc::not_available, launch_operation(launch.name), " on ", label(),
         ": the kernel has no CUDA code because its source file was compiled without nvcc; add that file to its "
         "target with devctx_add_kernels(<target> <file>) so that nvcc compiles it");
  if (lost()) throw_lost(*this, launch_operation(launch.name));
  const KernelInfo k = kernel_info(launch);
  const LaunchConfig& c = launch.config;
  auto where = [&] { return concat(launch_operation(launch.name), " on ", label(), ": "); };
  if (c.block_dim.volume() > k.max_threads)
    fail(Errc::invalid_launch, where(), "block_dim ", to_string(c.block_dim), " has ", c.block_dim.volume(),
         " threads but this kernel can run at most ", k.max_threads, " threads per block on this device (it uses ",
         k.registers, " registers per thread); use smaller blocks");
  const std::size_t limit = info_.max_shared_bytes_per_block;
  if (k.static_shared + c.shared_bytes > limit)
    fail(Errc::invalid_launch, where(), "shared_bytes ", bytes_text(c.shared_bytes), " plus the kernel's ",
         bytes_text(k.static_shared),
         " of static shared memory (DEVCTX_SHARED) exceed the device's shared memory per block, ", bytes_text(limit));
  if (c.shared_bytes > k.dynamic_limit) {
    // Above the default 48 KiB a kernel must opt in; raise its limit once to the most it can have.
    const std::lock_guard lock(kernels_mutex_);
    KernelInfo& entry = kernels_.try_emplace(launch.cuda_function, k).first->second;
    if (c.shared_bytes > entry.dynamic_limit) {
      make_current();
      const std::size_t most = limit - entry.static_shared;
      check(DEVCTX_CUDA(cudaFuncSetAttribute(launch.cuda_function, cudaFuncAttributeMaxDynamicSharedMemorySize, int(most))),
            *this, [&] { return launch_operation(launch.name); });
      entry.dynamic_limit = most;
    }
    last_kernel = {info_.id, launch.cuda_function, entry};
  }
}

void CudaDevice::synchronize_device() {
  check_alive("synchronize_device");
  make_current();
  check(DEVCTX_CUDA(cudaDeviceSynchronize()), *this, "synchronize_device");
}

void CudaDevice::note_fallback_host(void* data) {
  const std::lock_guard lock(host_mutex_);
  fallback_host_.insert(data);
}

bool CudaDevice::take_fallback_host(void* data) {
  const std::lock_guard lock(host_mutex_);
  return fallback_host_.erase(data) != 0;
}

void CudaDevice::defer_host_free(void* data, cudaEvent_t event) noexcept {
  try {
    const std::lock_guard lock(host_mutex_);
    pending_host_frees_.emplace_back(data, event);
  } catch (...) {
    ignore(cudaEventDestroy(event));  // cannot remember it: leaking is the safe choice
  }
}

void CudaDevice::reap_host_frees(bool wait) noexcept {
  std::vector<std::pair<void*, cudaEvent_t>> done;
  {
    const std::lock_guard lock(host_mutex_);
    std::erase_if(pending_host_frees_, [&](const auto& entry) {
      const cudaError_t s = wait ? cudaEventSynchronize(entry.second) : cudaEventQuery(entry.second);
      if (s == cudaErrorNotReady) return false;
      if (s == cudaSuccess)
        done.push_back(entry);  // on failure the memory may still be in use: leak it
      else
        ignore(s);
      return true;
    });
  }
  for (const auto& [data, event] : done) {
    // cudaFreeHost waits for the device to be idle; only reached once the buffer's last use
    // completed, and only on drivers without host memory pools.
    ignore(cudaFreeHost(data));
    ignore(cudaEventDestroy(event));
  }
}

std::shared_ptr<QueueImpl> CudaDevice::create_queue() {
  return make_queue(std::static_pointer_cast<CudaDevice>(shared_from_this()));
}

bool CudaDevice::can_access_peer(const DeviceImpl& other) const {
  if (&other == this) return true;
  if (other.info().api != Api::cuda) return false;
  int can = 0;
  return succeeded(cudaDeviceCanAccessPeer(&can, info_.id, other.info().id)) && can != 0;
}

void CudaDevice::enable_peer_access(int peer) noexcept {
  if (peer == info_.id) return;
  const std::lock_guard lock(peers_mutex_);
  try {
    if (!peers_tried_.insert(peer).second) return;
  } catch (...) {
    return;  // no memory to remember it: the copy takes CUDA's staged path
  }
  int can = 0;
  if (!succeeded(cudaDeviceCanAccessPeer(&can, info_.id, peer)) || can == 0) return;
  int current = -1;
  const bool known = succeeded(cudaGetDevice(&current));
  if (succeeded(cudaSetDevice(info_.id))) {
    // Already enabled (by the program or another library) is fine; any other refusal leaves
    // the staged path, which is correct, only slower.
    ignore(cudaDeviceEnablePeerAccess(peer, 0));
  }
  if (known) ignore(cudaSetDevice(current));
}

StreamPriorityRange CudaDevice::stream_priority_range() const {
  check_alive("stream_priority_range");
  make_current();
  StreamPriorityRange range;
  check(DEVCTX_CUDA(cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest)), *this, "stream_priority_range");
  return range;
}

std::shared_ptr<QueueImpl> CudaDevice::create_priority_queue(int priority) {
  return make_queue(std::static_pointer_cast<CudaDevice>(shared_from_this()), priority);
}

}  // namespace cuda

int cuda_device_count() noexcept {
  int count = 0;
  // No driver, no GPU, or a driver too old for this runtime: no CUDA devices.
  if (!cuda::succeeded(cudaGetDeviceCount(&count))) return 0;
  return count;
}

std::string cuda_absent_reason() {
  return "devctx was built with CUDA but no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
}

std::shared_ptr<DeviceImpl> open_cuda_device(int id) { return std::make_shared<cuda::CudaDevice>(id); }

}  // namespace devctx::detail
