// SPDX-License-Identifier: Apache-2.0
// tools/cuda_facts.cu - cuda_facts.hpp on the CUDA runtime (the tool's one file that calls it).
#include "cuda_facts.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

/// The raw launch row's kernel: does nothing, as devctx's bench_empty_kernel.
__global__ void raw_empty_kernel(float* out) {
  if (blockIdx.x * blockDim.x + threadIdx.x == 0xffffffffu) out[0] = 1.0f;
}

namespace devctx_tool {
namespace {

bool ok(cudaError_t status) {
  if (status == cudaSuccess) return true;
  (void)cudaGetLastError();  // clears a non-sticky error so that later calls are not blamed
  return false;
}

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
  int previous = 0;
  if (ok(cudaGetDevice(&previous)) && ok(cudaSetDevice(id))) {
    std::size_t free_bytes = 0, total = 0;
    if (ok(cudaMemGetInfo(&free_bytes, &total))) f.free_bytes = free_bytes;
    (void)ok(cudaSetDevice(previous));
  }
  return f;
}

std::optional<double> raw_cuda_copy_us(int id, std::size_t bytes, bool host_to_device, bool pinned, int iterations) {
  int previous = 0;
  if (!ok(cudaGetDevice(&previous)) || !ok(cudaSetDevice(id))) return std::nullopt;
  void* device = nullptr;
  void* host = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::optional<double> result;
  if (ok(cudaMalloc(&device, bytes)) &&
      (pinned ? ok(cudaMallocHost(&host, bytes)) : (host = std::malloc(bytes)) != nullptr) &&
      ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) && ok(cudaEventCreate(&start)) &&
      ok(cudaEventCreate(&stop))) {
    auto one = [&] {
      return host_to_device ? cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream)
                            : cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
    };
    // Pageable memory: touched first (no first-use page faults in the timing, as devctx's own
    // std::vector), and each copy waited for, which is what devctx's enqueue_copy from pageable
    // memory promises (done on return): the same work on both sides of the comparison.
    // Both sides hold defined bytes (compute-sanitizer's initcheck reads every copy's source).
    std::memset(host, 1, bytes);
    const auto copy = [&] { return ok(one()) && (pinned || ok(cudaStreamSynchronize(stream))); };
    bool fine = ok(cudaMemset(device, 2, bytes)) && copy() && ok(cudaStreamSynchronize(stream)) && ok(cudaEventRecord(start, stream));  // warm-up
    for (int i = 0; fine && i < iterations; ++i) fine = copy();
    float ms = 0;
    if (fine && ok(cudaEventRecord(stop, stream)) && ok(cudaEventSynchronize(stop)) &&
        ok(cudaEventElapsedTime(&ms, start, stop)))
      result = 1000.0 * double(ms) / iterations;
  }
  if (stop != nullptr) (void)cudaEventDestroy(stop);
  if (start != nullptr) (void)cudaEventDestroy(start);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  if (host != nullptr) (void)(pinned ? cudaFreeHost(host) : (std::free(host), cudaSuccess));
  if (device != nullptr) (void)cudaFree(device);
  (void)cudaSetDevice(previous);
  return result;
}

std::optional<double> raw_cuda_launch_us(int id, unsigned blocks, int iterations) {
  int previous = 0;
  if (!ok(cudaGetDevice(&previous)) || !ok(cudaSetDevice(id))) return std::nullopt;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::optional<double> result;
  if (ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) && ok(cudaEventCreate(&start)) &&
      ok(cudaEventCreate(&stop))) {
    raw_empty_kernel<<<blocks, 256, 0, stream>>>(nullptr);  // warm-up (loads the kernel)
    bool fine = ok(cudaGetLastError()) && ok(cudaStreamSynchronize(stream)) && ok(cudaEventRecord(start, stream));
    for (int i = 0; fine && i < iterations; ++i) {
      raw_empty_kernel<<<blocks, 256, 0, stream>>>(nullptr);
      fine = ok(cudaGetLastError());
    }
    float ms = 0;
    if (fine && ok(cudaEventRecord(stop, stream)) && ok(cudaEventSynchronize(stop)) &&
        ok(cudaEventElapsedTime(&ms, start, stop)))
      result = 1000.0 * double(ms) / iterations;
  }
  if (stop != nullptr) (void)cudaEventDestroy(stop);
  if (start != nullptr) (void)cudaEventDestroy(start);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  (void)cudaSetDevice(previous);
  return result;
}

std::optional<double> raw_cuda_alloc_us(int id, std::size_t bytes, int iterations) {
  int previous = 0;
  if (!ok(cudaGetDevice(&previous)) || !ok(cudaSetDevice(id))) return std::nullopt;
  cudaStream_t stream = nullptr;
  std::optional<double> result;
  if (ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) && ok(cudaStreamSynchronize(stream))) {
    const auto begin = std::chrono::steady_clock::now();
    bool fine = true;
    for (int i = 0; fine && i < iterations; ++i) {
      void* p = nullptr;
      fine = ok(cudaMallocAsync(&p, bytes, stream)) && ok(cudaFreeAsync(p, stream));
    }
    if (fine && ok(cudaStreamSynchronize(stream)))
      result = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count() / iterations;
  }
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  (void)cudaSetDevice(previous);
  return result;
}

}  // namespace devctx_tool
