// The CUDA device: the backend interface (src/core/backend.hpp) over the CUDA runtime.
//
// This folder is the only code in devctx that includes CUDA headers. Its host code is plain
// C++ compiled by the host compiler and linked against the static CUDA runtime; only the
// fill kernel (fill_kernel.cu) needs nvcc. docs/cuda-backend.md describes the behaviour.
//
// - One non-blocking stream per queue (DeviceContext and each Stream).
// - Device memory: cudaMallocAsync / cudaFreeAsync from the device's default pool, whose
//   release threshold is raised so that freed memory stays in the pool for reuse.
// - Host buffers: page-locked memory from a stream-ordered host memory pool where the driver
//   has them (cudaDevAttrHostMemoryPoolsSupported), else cudaHostAlloc with deferred frees.
// - Every CUDA call is checked (DEVCTX_CUDA_CHECK, CudaDevice::raise); a fault that poisons the CUDA context is recorded
//   per device, so every later call says plainly that the context is lost.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "backends/cuda/fill_kernel.hpp"
#include "core/backend.hpp"
#include "core/errors.hpp"

namespace devctx::detail {
namespace {

class CudaDevice;
class CudaQueue;

// ---- errors -----------------------------------------------------------------------------------

/// Errors after which the CUDA context is unusable: every later call in the process returns
/// them again (CUDA's "sticky" errors).
bool is_sticky(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

/// "an illegal memory access was encountered (cudaErrorIllegalAddress)"
std::string describe(cudaError_t status) {
  return concat(cudaGetErrorString(status), " (", cudaGetErrorName(status), ')');
}

/// Where a failed CUDA call was made: "cudaMemcpyAsync at cuda_device.cpp:412".
struct CallSite {
  const char* call;
  const char* file;
  int line;
};

std::string call_text(const CallSite& site) {
  std::string_view call = site.call;
  call = call.substr(0, call.find('('));
  std::string_view file = site.file;
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return concat(call, " at ", file, ':', site.line);
}

/// The state of one device's CUDA context, for the whole process: a context poisoned by a
/// device fault stays poisoned until the process ends, whichever DeviceContext saw it.
struct ContextHealth {
  std::atomic<bool> lost{false};
  std::mutex mutex;
  std::string cause;  ///< "cudaErrorIllegalAddress (...) in enqueue_function<k>"
};

ContextHealth& context_health(int id) {
  static std::array<ContextHealth, 64> health;
  return health[std::size_t(id) % health.size()];
}

// ---- the device -------------------------------------------------------------------------------

/// What devctx knows about one kernel on one device (cudaFuncGetAttributes), cached.
struct KernelInfo {
  unsigned max_threads = 0;         ///< for its register use
  unsigned registers = 0;
  std::size_t static_shared = 0;
  std::size_t dynamic_limit = 0;    ///< cudaFuncAttributeMaxDynamicSharedMemorySize, as set now
};

class CudaDevice final : public DeviceImpl {
 public:
  explicit CudaDevice(int id);
  ~CudaDevice() override;

  const DeviceInfo& info() const noexcept override { return info_; }
  std::shared_ptr<QueueImpl> create_queue() override;
  void check_kernel_limits(const KernelLaunch& launch) override;

  [[nodiscard]] int id() const noexcept { return info_.id; }
  [[nodiscard]] cudaMemPool_t host_pool() const noexcept { return host_pool_; }

  /// Makes this device current on the calling thread (only when it is not already).
  void make_current() const;

  /// Throws for a failed call: the message names the operation, the device and the call;
  /// a sticky error marks the context lost. `kernels` names the kernels that may have failed.
  [[noreturn]] void raise(cudaError_t status, std::string_view operation, const CallSite& site,
                          const std::string& kernels = {}) const;
  /// Throws Error(context_lost) when an earlier fault poisoned this device's context.
  void check_alive(std::string_view operation) const {
    if (health_.lost.load(std::memory_order_acquire)) [[unlikely]] throw_lost(operation);
  }
  [[noreturn]] void throw_lost(std::string_view operation) const;
  [[nodiscard]] bool lost() const noexcept { return health_.lost.load(std::memory_order_acquire); }

  /// Page-locked host memory outside the pool (fallback path): freed once `event` completes.
  void defer_host_free(void* data, cudaEvent_t event) noexcept;
  void note_fallback_host(void* data);
  [[nodiscard]] bool is_fallback_host(void* data);
  void reap_host_frees(bool wait) noexcept;

  [[nodiscard]] std::string memory_text() const;

 private:
  KernelInfo kernel_info(const KernelLaunch& launch);

  DeviceInfo info_;
  bool only_device_ = false;
  ContextHealth& health_;
  cudaMemPool_t host_pool_ = nullptr;

  std::mutex kernels_mutex_;
  std::unordered_map<const void*, KernelInfo> kernels_;

  std::mutex host_mutex_;
  std::unordered_set<void*> fallback_host_;
  std::vector<std::pair<void*, cudaEvent_t>> pending_host_frees_;
};

/// Checks one CUDA call: on failure, raises with the call's text, file and line. `operation`
/// (a string naming the devctx operation) is evaluated only on failure, so building it costs
/// nothing on the fast path.
#define DEVCTX_CUDA_CHECK(call, device, operation)                                          \
  do {                                                                                      \
    if (const cudaError_t devctx_status_ = (call); devctx_status_ != cudaSuccess) [[unlikely]] \
      (device).raise(devctx_status_, (operation), {#call, __FILE__, __LINE__});              \
  } while (false)

/// Runs a CUDA call whose failure cannot be reported (destructors, frees); clears a
/// non-sticky error so that it does not surface later at an unrelated call.
void ignore(cudaError_t status) noexcept {
  if (status != cudaSuccess && !is_sticky(status)) (void)cudaGetLastError();
}

bool env_disabled(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr && std::strcmp(text, "0") == 0;
}

CudaDevice::CudaDevice(int id) : health_(context_health(id)) {
  cudaDeviceProp p{};
  const CallSite here{"cudaGetDeviceProperties", __FILE__, __LINE__};
  info_.api = Api::cuda;
  info_.id = id;
  info_.name = concat("CUDA device ", id);
  if (const cudaError_t s = cudaGetDeviceProperties(&p, id); s != cudaSuccess) raise(s, "opening the device", here);
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
  only_device_ = cudaGetDeviceCount(&devices) == cudaSuccess && devices == 1;

  make_current();
  // Freed device memory stays in the default pool for reuse instead of going back to the
  // driver at every synchronization (the default threshold of 0 would release it).
  cudaMemPool_t pool = nullptr;
  DEVCTX_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, id), *this, "opening the device");
  std::uint64_t threshold = UINT64_MAX;
  DEVCTX_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), *this,
                    "opening the device");

  // Stream-ordered page-locked host memory, where the driver offers it.
  int host_pools = 0;
  if (cudaDeviceGetAttribute(&host_pools, cudaDevAttrHostMemoryPoolsSupported, id) != cudaSuccess) {
    (void)cudaGetLastError();
    host_pools = 0;
  }
  if (host_pools != 0 && !env_disabled("DEVCTX_CUDA_HOST_POOL")) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeHost;
    props.location.id = 0;
    if (cudaMemPoolCreate(&host_pool_, &props) != cudaSuccess) {
      (void)cudaGetLastError();
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
        const cudaError_t s = cudaMemPoolSetAccess(host_pool_, &access, 1);
        if (s != cudaSuccess && d == id) {
          (void)cudaGetLastError();
          ignore(cudaMemPoolDestroy(host_pool_));
          host_pool_ = nullptr;
          break;
        }
        ignore(s);
      }
    }
  }
}

CudaDevice::~CudaDevice() {
  // Only fallback host buffers can still be pending here (pool memory is freed in stream
  // order and the pool goes away once its last allocation is freed).
  reap_host_frees(true);
  if (host_pool_ != nullptr) ignore(cudaMemPoolDestroy(host_pool_));
}

void CudaDevice::make_current() const {
  if (only_device_) return;  // with one device, the runtime's current device is always it
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == info_.id) return;
  DEVCTX_CUDA_CHECK(cudaSetDevice(info_.id), *this, "selecting the device");
}

void CudaDevice::throw_lost(std::string_view operation) const {
  std::string cause;
  {
    const std::lock_guard lock(health_.mutex);
    cause = health_.cause;
  }
  fail(Errc::context_lost, "the CUDA context of cuda:", info_.id, " (", info_.name, ") is lost after ", cause, ": ",
       operation, " cannot run; the process must restart to use this GPU again");
}

void CudaDevice::raise(cudaError_t status, std::string_view operation, const CallSite& site,
                       const std::string& kernels) const {
  if (is_sticky(status)) {
    bool first = false;
    {
      const std::lock_guard lock(health_.mutex);
      if (!health_.lost.load(std::memory_order_relaxed)) {
        first = true;
        health_.cause = concat(describe(status), kernels.empty() ? std::string(" in a kernel enqueued earlier") : " in " + kernels);
        health_.lost.store(true, std::memory_order_release);
      }
    }
    if (!first) throw_lost(operation);
    fail(Errc::kernel_failed, operation, " on ", label(), ": ",
         kernels.empty() ? std::string("a kernel enqueued earlier") : kernels, " failed: ", describe(status),
         "; the CUDA context of cuda:", info_.id, " is now lost: the process must restart to use this GPU again");
  }
  (void)cudaGetLastError();  // a non-sticky error: clear it so that later calls do not see it
  if (lost()) throw_lost(operation);
  Errc code = Errc::backend_error;
  std::string hint;
  switch (status) {
    case cudaErrorMemoryAllocation: code = Errc::out_of_memory; hint = concat("; ", memory_text()); break;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorCooperativeLaunchTooLarge: code = Errc::invalid_launch; break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorInvalidKernelImage:
    case cudaErrorUnsupportedPtxVersion:
      code = Errc::not_available;
      hint = concat("; the kernel has no code for this GPU (compute capability ", info_.compute_capability_major, '.',
                    info_.compute_capability_minor, "): build with -DCMAKE_CUDA_ARCHITECTURES=",
                    info_.compute_capability_major, info_.compute_capability_minor, " (or \"native\")");
      break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInvalidDevice: code = Errc::not_available; break;
    default: break;
  }
  fail(code, operation, " on ", label(), ": ", call_text(site), " failed: ", describe(status), hint);
}

std::string CudaDevice::memory_text() const {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return "the device's free memory is unknown";
  }
  std::string text = concat("the device has ", bytes_text(free_bytes), " free of ", bytes_text(total_bytes), " in total");
  cudaMemPool_t pool = nullptr;
  std::uint64_t reserved = 0, used = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, info_.id) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess) {
    text += concat(" (devctx's stream-ordered pool holds ", bytes_text(reserved), ", ", bytes_text(used), " of it in use)");
  } else {
    (void)cudaGetLastError();
  }
  return text;
}

/// The kernel this thread launched last, so that a loop of launches of one kernel skips the
/// device's lock. Kernel attributes are fixed per device id and kernel for the whole process.
struct LastKernel {
  int device = -1;
  const void* function = nullptr;
  KernelInfo info;
};
thread_local LastKernel last_kernel;

KernelInfo CudaDevice::kernel_info(const KernelLaunch& launch) {
  if (last_kernel.function == launch.cuda_function && last_kernel.device == info_.id) return last_kernel.info;
  const std::lock_guard lock(kernels_mutex_);
  if (const auto it = kernels_.find(launch.cuda_function); it != kernels_.end()) {
    last_kernel = {info_.id, launch.cuda_function, it->second};
    return it->second;
  }
  const std::string operation = concat("enqueue_function<", launch.name, '>');
  make_current();
  cudaFuncAttributes a{};
  DEVCTX_CUDA_CHECK(cudaFuncGetAttributes(&a, launch.cuda_function), *this, operation);
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
    fail(Errc::not_available, "enqueue_function<", launch.name, "> on ", label(),
         ": the kernel has no CUDA code because its source file was compiled without nvcc; add that file to its "
         "target with devctx_add_kernels(<target> <file>) so that nvcc compiles it");
  if (lost()) throw_lost(concat("enqueue_function<", launch.name, '>'));
  const KernelInfo k = kernel_info(launch);
  const LaunchConfig& c = launch.config;
  auto where = [&] { return concat("enqueue_function<", launch.name, "> on ", label(), ": "); };
  if (c.block_dim.volume() > k.max_threads)
    fail(Errc::invalid_launch, where(), "block_dim ", to_string(c.block_dim), " has ", c.block_dim.volume(),
         " threads but this kernel can run at most ", k.max_threads, " threads per block on this device (it uses ",
         k.registers, " registers per thread); use smaller blocks");
  const std::size_t limit = info_.max_shared_bytes_per_block;
  if (k.static_shared + c.shared_bytes > limit)
    fail(Errc::invalid_launch, where(), "shared_bytes ", bytes_text(c.shared_bytes), " plus the kernel's ",
         bytes_text(k.static_shared), " of static shared memory (DEVCTX_SHARED) exceed the device's shared memory per block, ",
         bytes_text(limit));
  if (c.shared_bytes > k.dynamic_limit) {
    // Above the default 48 KiB a kernel must opt in; raise its limit once to the most it can have.
    const std::lock_guard lock(kernels_mutex_);
    KernelInfo& entry = kernels_.try_emplace(launch.cuda_function, k).first->second;
    if (c.shared_bytes > entry.dynamic_limit) {
      make_current();
      const std::size_t most = limit - entry.static_shared;
      DEVCTX_CUDA_CHECK(cudaFuncSetAttribute(launch.cuda_function, cudaFuncAttributeMaxDynamicSharedMemorySize, int(most)),
                        *this, concat("enqueue_function<", launch.name, '>'));
      entry.dynamic_limit = most;
    }
    last_kernel = {info_.id, launch.cuda_function, entry};
  }
}

void CudaDevice::note_fallback_host(void* data) {
  const std::lock_guard lock(host_mutex_);
  fallback_host_.insert(data);
}

bool CudaDevice::is_fallback_host(void* data) {
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
      if (s == cudaSuccess) done.push_back(entry);  // on failure the memory may still be in use: leak it
      else ignore(s);
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

// ---- queues and events ------------------------------------------------------------------------

class CudaQueue final : public QueueImpl {
 public:
  explicit CudaQueue(std::shared_ptr<CudaDevice> device);
  ~CudaQueue() override;

  void* allocate(std::size_t bytes, MemKind kind) override;
  void free(void* data, std::size_t bytes, MemKind kind) noexcept override;
  void copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) override;
  void fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) override;
  void launch(const KernelLaunch& launch) override;
  void synchronize() override;
  std::shared_ptr<EventImpl> record_event() override;
  void wait_for(const std::shared_ptr<EventImpl>& event) override;

  [[nodiscard]] CudaDevice& cuda() const noexcept { return *device_; }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

  /// Raises for a failure that surfaced when waiting for this queue's work: names the
  /// kernels enqueued since the last successful wait.
  [[noreturn]] void raise_async(cudaError_t status, std::string_view operation, const CallSite& site);
  /// Called after a successful wait for everything enqueued so far.
  void forget_kernels() noexcept;

 private:
  void fill_doubling(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes);

  std::shared_ptr<CudaDevice> device_;
  cudaStream_t stream_ = nullptr;

  // The names of the last kernels enqueued since the last successful synchronize, so that a
  // fault reported later can name its likely culprit.
  static constexpr std::size_t kRecentKernels = 4;
  std::mutex names_mutex_;
  std::array<std::string_view, kRecentKernels> recent_{};
  std::size_t launched_ = 0;  ///< since the last successful synchronize
};

class CudaEvent final : public EventImpl {
 public:
  CudaEvent(std::shared_ptr<CudaQueue> queue, cudaEvent_t event) noexcept : queue_(std::move(queue)), event_(event) {}
  ~CudaEvent() override { ignore(cudaEventDestroy(event_)); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  DeviceImpl& device() const override { return queue_->device(); }
  [[nodiscard]] cudaEvent_t handle() const noexcept { return event_; }

  void synchronize() override {
    queue_->cuda().check_alive("Event::synchronize");
    if (const cudaError_t s = cudaEventSynchronize(event_); s != cudaSuccess)
      queue_->raise_async(s, "Event::synchronize", {"cudaEventSynchronize", __FILE__, __LINE__});
  }
  bool query() override {
    queue_->cuda().check_alive("Event::query");
    const cudaError_t s = cudaEventQuery(event_);
    if (s == cudaSuccess) return true;
    if (s == cudaErrorNotReady) return false;
    queue_->raise_async(s, "Event::query", {"cudaEventQuery", __FILE__, __LINE__});
  }
  double elapsed_ms_since(EventImpl& start) override {
    auto& first = static_cast<CudaEvent&>(start);
    first.synchronize();
    synchronize();
    float ms = 0.0f;
    DEVCTX_CUDA_CHECK(cudaEventElapsedTime(&ms, first.event_, event_), queue_->cuda(), "elapsed_ms");
    return double(ms);
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  cudaEvent_t event_;
};

CudaQueue::CudaQueue(std::shared_ptr<CudaDevice> device) : QueueImpl(*device), device_(std::move(device)) {
  device_->check_alive("create_stream");
  device_->make_current();
  DEVCTX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), *device_, "create_stream");
}

CudaQueue::~CudaQueue() {
  // Returns at once; work still enqueued completes and then the stream's resources go.
  // At process exit the runtime may already be unloading: nothing to report then.
  ignore(cudaStreamDestroy(stream_));
}

void* CudaQueue::allocate(std::size_t bytes, MemKind kind) {
  const char* operation = kind == MemKind::device ? "enqueue_create_buffer" : "enqueue_create_host_buffer";
  device_->check_alive(operation);
  if (bytes == 0) return nullptr;
  device_->make_current();
  void* data = nullptr;
  cudaError_t s = cudaSuccess;
  CallSite site{"cudaMallocAsync", __FILE__, __LINE__};
  if (kind == MemKind::device) {
    s = cudaMallocAsync(&data, bytes, stream_);
  } else if (device_->host_pool() != nullptr) {
    site = {"cudaMallocFromPoolAsync", __FILE__, __LINE__};
    s = cudaMallocFromPoolAsync(&data, bytes, device_->host_pool(), stream_);
  } else {
    site = {"cudaHostAlloc", __FILE__, __LINE__};
    device_->reap_host_frees(false);
    s = cudaHostAlloc(&data, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
    if (s == cudaSuccess) {
      try {
        device_->note_fallback_host(data);
      } catch (...) {
        ignore(cudaFreeHost(data));
        throw;
      }
    }
  }
  if (s == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    if (kind == MemKind::device)
      fail(Errc::out_of_memory, operation, " on ", device_->label(), ": cannot allocate ", bytes_text(bytes), " of device memory; ",
           device_->memory_text());
    fail(Errc::out_of_memory, operation, " on ", device_->label(), ": cannot allocate ", bytes_text(bytes),
         " of page-locked host memory; the machine has ",
         bytes_text(std::size_t(sysconf(_SC_PHYS_PAGES)) * std::size_t(sysconf(_SC_PAGESIZE))),
         " of memory (page-locked memory may also be limited by `ulimit -l`)");
  }
  if (s != cudaSuccess) device_->raise(s, concat(operation, " (", bytes_text(bytes), ')'), site);
  return data;
}

void CudaQueue::free(void* data, std::size_t, MemKind kind) noexcept {
  if (data == nullptr || device_->lost()) return;  // nothing to free, or no context to free it in
  if (kind == MemKind::host_pinned && device_->is_fallback_host(data)) {
    cudaEvent_t event = nullptr;
    if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      return;  // cannot order the free after the buffer's use: leak it
    }
    if (cudaEventRecord(event, stream_) != cudaSuccess) {
      (void)cudaGetLastError();
      ignore(cudaEventDestroy(event));
      return;  // the buffer may still be in use: leak it rather than free it early
    }
    device_->defer_host_free(data, event);
    return;
  }
  // Pool memory (device or host): released in this stream's order; core has already made this
  // stream wait for the other streams that used the buffer.
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_->id()) ignore(cudaSetDevice(device_->id()));
  ignore(cudaFreeAsync(data, stream_));
}

void CudaQueue::copy(void* dst, MemKind dst_kind, const void* src, MemKind src_kind, std::size_t bytes) {
  device_->check_alive("enqueue_copy");
  device_->make_current();
  DEVCTX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), *device_,
                    concat("enqueue_copy (", bytes_text(bytes), ')'));
  if (dst_kind == MemKind::host_pageable || src_kind == MemKind::host_pageable) {
    // Ordinary host memory may be reused as soon as enqueue_copy returns: wait for the copy.
    if (const cudaError_t s = cudaStreamSynchronize(stream_); s != cudaSuccess)
      raise_async(s, "enqueue_copy", {"cudaStreamSynchronize", __FILE__, __LINE__});
  }
}

void CudaQueue::fill(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) {
  device_->check_alive("enqueue_memset");
  device_->make_current();
  const std::size_t bytes = count * element_bytes;
  const auto* pattern = static_cast<const unsigned char*>(value);
  const bool uniform = std::all_of(pattern, pattern + element_bytes, [&](unsigned char b) { return b == pattern[0]; });
  const auto operation = [&] { return concat("enqueue_memset (", count, " elements of ", element_bytes, " bytes)"); };
  if (uniform && kind == MemKind::device) {
    DEVCTX_CUDA_CHECK(cudaMemsetAsync(dst, pattern[0], bytes, stream_), *device_, operation());
    return;
  }
  if (element_bytes > cuda::kFillMaxPattern) return fill_doubling(dst, kind, count, value, element_bytes);

  // The kernel: device memory, or page-locked host memory that the device writes through its
  // mapping (same address under unified addressing).
  cuda::FillParams p;
  p.dst = static_cast<unsigned char*>(dst);
  p.bytes = bytes;
  p.width = unsigned(element_bytes);
  std::memcpy(p.pattern, pattern, element_bytes);
  const std::size_t period = std::lcm(element_bytes, std::size_t{16});
  std::uint64_t units = bytes;
  if (period <= cuda::kFillMaxPattern) {
    const auto address = reinterpret_cast<std::uintptr_t>(dst);
    p.head = unsigned(std::min<std::size_t>((16 - address % 16) % 16, bytes));
    p.period_vectors = unsigned(period / 16);
    for (std::size_t i = 0; i < period; ++i) p.vectors[i] = pattern[(p.head + i) % element_bytes];
    units = (bytes - p.head) / 16 + 32;
  }
  const unsigned threads = 256;
  const std::uint64_t wanted = (units + threads - 1) / threads;
  const unsigned blocks = unsigned(std::clamp<std::uint64_t>(wanted, 1, std::uint64_t(device_->info().multiprocessors) * 16));
  void* args[] = {&p};
  DEVCTX_CUDA_CHECK(cudaLaunchKernel(cuda::fill_kernel(), dim3(blocks), dim3(threads), args, 0, stream_), *device_, operation());
}

void CudaQueue::fill_doubling(void* dst, MemKind kind, std::size_t count, const void* value, std::size_t element_bytes) {
  // Elements wider than the kernel's pattern: write one, then copy what is written onto the
  // rest, doubling each time (log2(count) copies). The first copy reads the caller's value
  // (ordinary host memory), so this waits like a copy from a std::span.
  auto* out = static_cast<unsigned char*>(dst);
  copy(out, kind, value, MemKind::host_pageable, element_bytes);
  const std::size_t bytes = count * element_bytes;
  for (std::size_t done = element_bytes; done < bytes; done *= 2)
    DEVCTX_CUDA_CHECK(cudaMemcpyAsync(out + done, out, std::min(done, bytes - done), cudaMemcpyDefault, stream_), *device_,
                      "enqueue_memset");
}

void CudaQueue::launch(const KernelLaunch& launch) {
  device_->make_current();
  const Dim3 g = launch.config.grid_dim, b = launch.config.block_dim;
  const cudaError_t s = cudaLaunchKernel(launch.cuda_function, dim3(g.x, g.y, g.z), dim3(b.x, b.y, b.z),
                                         const_cast<void**>(launch.cuda_args), launch.config.shared_bytes, stream_);
  if (s != cudaSuccess) [[unlikely]] {
    // A sticky error here is the fault of earlier work, not of this launch.
    if (is_sticky(s)) raise_async(s, concat("enqueue_function<", launch.name, '>'), {"cudaLaunchKernel", __FILE__, __LINE__});
    device_->raise(s, concat("enqueue_function<", launch.name, "> with grid_dim ", to_string(g), ", block_dim ",
                             to_string(b), ", shared_bytes ", launch.config.shared_bytes),
                   {"cudaLaunchKernel", __FILE__, __LINE__});
  }
  const std::lock_guard lock(names_mutex_);
  recent_[launched_ % kRecentKernels] = launch.name;
  ++launched_;
}

void CudaQueue::raise_async(cudaError_t status, std::string_view operation, const CallSite& site) {
  std::string kernels;
  {
    const std::lock_guard lock(names_mutex_);
    if (launched_ == 1) {
      kernels = concat("kernel '", recent_[0], "'");
    } else if (launched_ > 1) {
      const std::size_t shown = std::min(launched_, kRecentKernels);
      kernels = concat("one of the ", launched_, " kernels enqueued on this stream since its last synchronize (the last ",
                       shown, ": ");
      for (std::size_t i = launched_ - shown; i < launched_; ++i)
        kernels += concat(i == launched_ - shown ? "" : ", ", '\'', recent_[i % kRecentKernels], '\'');
      kernels += ", most recent last)";
    }
  }
  if (is_sticky(status) && kernels.empty())
    kernels = "a kernel enqueued on another stream of this device";
  device_->raise(status, operation, site, kernels);
}

void CudaQueue::forget_kernels() noexcept {
  const std::lock_guard lock(names_mutex_);
  launched_ = 0;
}

void CudaQueue::synchronize() {
  device_->check_alive("synchronize");
  if (const cudaError_t s = cudaStreamSynchronize(stream_); s != cudaSuccess)
    raise_async(s, "synchronize", {"cudaStreamSynchronize", __FILE__, __LINE__});
  forget_kernels();
}

std::shared_ptr<EventImpl> CudaQueue::record_event() {
  device_->check_alive("record_event");
  device_->make_current();
  cudaEvent_t event = nullptr;
  DEVCTX_CUDA_CHECK(cudaEventCreate(&event), *device_, "record_event");
  auto impl = std::make_shared<CudaEvent>(std::static_pointer_cast<CudaQueue>(shared_from_this()), event);
  DEVCTX_CUDA_CHECK(cudaEventRecord(event, stream_), *device_, "record_event");
  return impl;
}

void CudaQueue::wait_for(const std::shared_ptr<EventImpl>& event) {
  device_->check_alive("enqueue_wait_for");
  DEVCTX_CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<CudaEvent&>(*event).handle(), 0), *device_,
                    "enqueue_wait_for");
}

std::shared_ptr<QueueImpl> CudaDevice::create_queue() {
  return std::make_shared<CudaQueue>(std::static_pointer_cast<CudaDevice>(shared_from_this()));
}

}  // namespace

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver, no GPU, or a driver too old for this runtime: no CUDA devices.
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::shared_ptr<DeviceImpl> open_cuda_device(int id) { return std::make_shared<CudaDevice>(id); }

}  // namespace devctx::detail
