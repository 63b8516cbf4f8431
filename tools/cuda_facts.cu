// SPDX-License-Identifier: Apache-2.0
// tools/cuda_facts.cu - cuda_facts.hpp on the CUDA runtime (the tool's one file that calls it).
// The raw copy and the check of a raw call are the benchmarks' own (bench/support/raw_cuda.hpp):
// `devctx bench` and bench/cuda measure devctx against one raw CUDA baseline.
#include "cuda_facts.hpp"

#include "support/clock.hpp"
#include "support/raw_cuda.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>

/// The raw launch row's kernel: does nothing, as devctx's bench_empty_kernel.
__global__ void raw_empty_kernel(float* out) {
  if (blockIdx.x * blockDim.x + threadIdx.x == 0xffffffffu) out[0] = 1.0f;
}

namespace devctx_tool {
namespace {

using devctx_bench::ok;

/// Makes device `id` current for one scope (`fine()` says whether it could), then restores the
/// device that was current.
class OnDevice {
 public:
  explicit OnDevice(int id) noexcept { fine_ = ok(cudaGetDevice(&previous_)) && ok(cudaSetDevice(id)); }
  ~OnDevice() { (void)cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  [[nodiscard]] bool fine() const noexcept { return fine_; }

 private:
  int previous_ = 0;
  bool fine_ = false;
};

/// A stream with two events around the timed work: begin() after the warm-up, us_per(n) at
/// the end (microseconds per iteration by the GPU's clock, or nothing after a failure).
class TimedStream {
 public:
  TimedStream() noexcept {
    fine_ = ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) && ok(cudaEventCreate(&start_)) &&
            ok(cudaEventCreate(&stop_));
  }
  ~TimedStream() {
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  TimedStream(const TimedStream&) = delete;
  TimedStream& operator=(const TimedStream&) = delete;
  [[nodiscard]] bool fine() const noexcept { return fine_; }
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  /// Waits for the warm-up, then marks the start of the timed work.
  [[nodiscard]] bool begin() const noexcept {
    return ok(cudaStreamSynchronize(stream_)) && ok(cudaEventRecord(start_, stream_));
  }
  [[nodiscard]] std::optional<double> us_per(int iterations) const noexcept {
    float ms = 0;
    if (!ok(cudaEventRecord(stop_, stream_)) || !ok(cudaEventSynchronize(stop_)) ||
        !ok(cudaEventElapsedTime(&ms, start_, stop_)))
      return std::nullopt;
    return 1000.0 * double(ms) / iterations;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool fine_ = false;
};

}  // namespace

std::optional<GpuFacts> gpu_facts(int id) {
  int count = 0;
  if (!ok(cudaGetDeviceCount(&count)) || id < 0 || id >= count) return std::nullopt;
  GpuFacts f;
  (void)ok(cudaDriverGetVersion(&f.driver_version));
  (void)ok(cudaRuntimeGetVersion(&f.runtime_version));
  char bus[32] = {};
  if (ok(cudaDeviceGetPCIBusId(bus, int(sizeof bus), id))) f.pci_bus_id = bus;
  (void)ok(cudaDeviceGetAttribute(&f.clock_khz, cudaDevAttrClockRate, id));
  (void)ok(cudaDeviceGetAttribute(&f.memory_clock_khz, cudaDevAttrMemoryClockRate, id));
  (void)ok(cudaDeviceGetAttribute(&f.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, id));
  int l2 = 0;
  if (ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, id))) f.l2_bytes = std::size_t(l2);
  if (const OnDevice on(id); on.fine()) {
    std::size_t free_bytes = 0, total = 0;
    if (ok(cudaMemGetInfo(&free_bytes, &total))) f.free_bytes = free_bytes;
  }
  return f;
}

std::optional<double> raw_cuda_copy_us(int id, std::size_t bytes, bool host_to_device, bool pinned, int iterations) {
  const OnDevice on(id);
  if (!on.fine()) return std::nullopt;
  void* device = nullptr;
  void* host = nullptr;
  const TimedStream stream;
  std::optional<double> result;
  if (stream.fine() && ok(cudaMalloc(&device, bytes)) &&
      (pinned ? ok(cudaMallocHost(&host, bytes)) : (host = std::malloc(bytes)) != nullptr)) {
    // Pageable memory: touched first (no first-use page faults in the timing, as devctx's own
    // std::vector), and each copy waited for (raw_copy's `wait`), which is what devctx's
    // enqueue_copy from pageable memory promises (done on return).
    // Both sides hold defined bytes (compute-sanitizer's initcheck reads every copy's source).
    std::memset(host, 1, bytes);
    const auto copy = [&] {
      return ok(devctx_bench::raw_copy(device, host, bytes, host_to_device, stream.get(), !pinned));
    };
    bool fine = ok(cudaMemset(device, 2, bytes)) && copy() && stream.begin();  // warm-up
    for (int i = 0; fine && i < iterations; ++i) fine = copy();
    if (fine) result = stream.us_per(iterations);
  }
  if (host != nullptr) (void)(pinned ? cudaFreeHost(host) : (std::free(host), cudaSuccess));
  if (device != nullptr) (void)cudaFree(device);
  return result;
}

std::optional<double> raw_cuda_launch_us(int id, unsigned blocks, int iterations) {
  const OnDevice on(id);
  if (!on.fine()) return std::nullopt;
  const TimedStream stream;
  if (!stream.fine()) return std::nullopt;
  raw_empty_kernel<<<blocks, 256, 0, stream.get()>>>(nullptr);  // warm-up (loads the kernel)
  bool fine = ok(cudaGetLastError()) && stream.begin();
  for (int i = 0; fine && i < iterations; ++i) {
    raw_empty_kernel<<<blocks, 256, 0, stream.get()>>>(nullptr);
    fine = ok(cudaGetLastError());
  }
  return fine ? stream.us_per(iterations) : std::nullopt;
}

std::optional<double> raw_cuda_alloc_us(int id, std::size_t bytes, int iterations) {
  const OnDevice on(id);
  if (!on.fine()) return std::nullopt;
  const TimedStream stream;
  if (!stream.fine() || !ok(cudaStreamSynchronize(stream.get()))) return std::nullopt;
  // Host time: allocation is a host call; its cost is what the caller waits.
  const auto begin = devctx_bench::Clock::now();
  bool fine = true;
  for (int i = 0; fine && i < iterations; ++i) {
    void* p = nullptr;
    fine = ok(cudaMallocAsync(&p, bytes, stream.get())) && ok(cudaFreeAsync(p, stream.get()));
  }
  if (!fine || !ok(cudaStreamSynchronize(stream.get()))) return std::nullopt;
  return devctx_bench::us_since(begin) / iterations;
}

}  // namespace devctx_tool
