// SPDX-License-Identifier: Apache-2.0
// devctx_interop_gpu: devctx working with other CUDA libraries on a real GPU (issue 12), label
// `gpu`. cuBLAS sgemm and a CUB radix sort run on devctx streams over devctx buffers, between
// devctx kernels, ordered by the stream alone (one synchronize, at the end); a devctx stream over
// a CUDA stream made here (and over cudaStreamLegacy); memory from cudaMalloc used as a
// DeviceView, released with cudaFree once devctx is done; the pointer checks that refuse host
// memory and ranges past an allocation. Each check prints PASS/FAIL; the exit status is 0 when
// all pass, 1 otherwise, 77 (skipped) without a CUDA device unless DEVCTX_REQUIRE_GPU=1.
#include <devctx/devctx.hpp>

#include "../support/gpu_program.hpp"
#include <devctx/interop.hpp>

#include <cublas_v2.h>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

DEVCTX_KERNEL void affine(devctx::span<float> data, float mul, float add) {
  const std::size_t i = devctx::global_idx().x;
  if (i < data.size()) data[i] = data[i] * mul + add;
}

DEVCTX_KERNEL void iota_xor(devctx::span<std::uint32_t> out, std::uint32_t seed) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = (std::uint32_t(i) * 2654435761u) ^ seed;
}

/// flags[0] counts the neighbours out of order: a devctx kernel reading CUB's output in order.
DEVCTX_KERNEL void count_unsorted(devctx::span<const std::uint32_t> keys, devctx::span<unsigned> flags) {
  const std::size_t i = devctx::global_idx().x;
  if (i + 1 < keys.size() && keys[i] > keys[i + 1]) devctx::atomic_add(&flags[0], 1u);
}

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

void section(const char* name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    check(false, std::string(name) + ": threw " + e.what());
  }
}

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

void cublas_ok(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(status)));
}

devctx::LaunchConfig cover(std::size_t n) { return {.grid_dim = unsigned((n + 255) / 256), .block_dim = 256}; }

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* text = std::getenv("DEVCTX_TEST_SEED")) return std::uint64_t(std::strtoull(text, nullptr, 0));
    return std::uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return s;
}

/// sgemm and a sort between devctx kernels, on one devctx stream, with no synchronize between.
void blas_and_sort(devctx::DeviceContext& ctx) {
  const int m = 300, k = 257, n = 190;  // column-major, as cuBLAS reads them
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto stream = ctx.create_stream();
  auto h_a = stream.enqueue_create_host_buffer<float>(std::size_t(m) * k);
  auto h_b = stream.enqueue_create_host_buffer<float>(std::size_t(k) * n);
  auto h_c = stream.enqueue_create_host_buffer<float>(std::size_t(m) * n);
  auto h_sorted = stream.enqueue_create_host_buffer<float>(std::size_t(m) * n);
  stream.synchronize();  // host buffers are safe to fill now (before any work of the test)
  for (auto& x : h_a) x = dist(rng);
  for (auto& x : h_b) x = dist(rng);
  std::fill(h_c.begin(), h_c.end(), NAN);
  std::fill(h_sorted.begin(), h_sorted.end(), NAN);

  auto a = stream.enqueue_create_buffer<float>(h_a.size());
  auto b = stream.enqueue_create_buffer<float>(h_b.size());
  auto c = stream.enqueue_create_buffer<float>(h_c.size());
  auto sorted = stream.enqueue_create_buffer<float>(h_c.size());
  stream.enqueue_memset(c, NAN);
  stream.enqueue_memset(sorted, NAN);
  stream.enqueue_copy(a, h_a);
  stream.enqueue_copy(b, h_b);
  stream.enqueue_function<affine>(cover(a.size()), a, 2.0f, -0.5f);  // devctx before cuBLAS

  cublasHandle_t blas = nullptr;
  cublas_ok(cublasCreate(&blas), "cublasCreate");
  cublas_ok(cublasSetStream(blas, devctx::cuda_stream(stream)), "cublasSetStream");
  const float one = 1.0f, zero = 0.0f;
  cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.data(), m, b.data(), k, &zero, c.data(), m),
            "cublasSgemm");
  stream.enqueue_function<affine>(cover(c.size()), c, -1.0f, 3.0f);  // devctx after cuBLAS

  // CUB sorts devctx's result on the same stream, in temporary storage devctx allocates.
  std::size_t temp_bytes = 0;
  cuda_ok(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, c.data(), sorted.data(), int(c.size()), 0, 32,
                                         devctx::cuda_stream(stream)),
          "SortKeys (size query)");
  auto temp = stream.enqueue_create_buffer<unsigned char>(temp_bytes);
  cuda_ok(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, c.data(), sorted.data(), int(c.size()), 0, 32,
                                         devctx::cuda_stream(stream)),
          "SortKeys");
  stream.enqueue_copy(h_c, c);
  stream.enqueue_copy(h_sorted, sorted);
  stream.synchronize();  // the only wait
  cublas_ok(cublasDestroy(blas), "cublasDestroy");

  std::vector<double> ref(h_c.size());
  double worst = 0.0, largest_bound = 0.0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0.0, bound = 0.0;
      for (int p = 0; p < k; ++p) {
        const double x = 2.0 * double(h_a[std::size_t(p) * m + i]) - 0.5;
        sum += x * double(h_b[std::size_t(j) * k + p]);
        bound += std::abs(x * double(h_b[std::size_t(j) * k + p]));
      }
      largest_bound = std::max(largest_bound, bound);
      const std::size_t at = std::size_t(j) * m + i;
      ref[at] = 3.0 - sum;
      const double err = std::abs(double(h_c[at]) - ref[at]) / (bound + 1.0);
      worst = std::isnan(h_c[at]) ? INFINITY : std::max(worst, err);
    }
  }
  check(worst < 1e-5,
        "sgemm between devctx kernels on a devctx stream: every element within 1e-5 of the float64 "
        "reference, relative to the sum of |products| (worst " +
            std::to_string(worst) + ")");
  std::sort(ref.begin(), ref.end());
  double worst_sorted = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst_sorted = std::isnan(h_sorted[i]) ? INFINITY : std::max(worst_sorted, std::abs(double(h_sorted[i]) - ref[i]));
  check(worst_sorted < 1e-5 * (largest_bound + 1.0) && std::is_sorted(h_sorted.begin(), h_sorted.end()),
        "CUB radix sort of the sgemm result on the same stream: sorted, every element matches the sorted reference "
        "(worst " +
            std::to_string(worst_sorted) + ")");
}

/// A devctx Stream over a CUDA stream made here: every verb, CUB on the raw handle between
/// devctx kernels, an event that CUDA code waits for, and the raw stream outliving the wrapper.
void foreign_stream(devctx::DeviceContext& ctx) {
  const std::size_t n = 1 << 20;
  const auto s = std::uint32_t(seed());
  cudaStream_t raw = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), "cudaStreamCreate");
  {
    devctx::Stream wrapped = devctx::wrap_cuda_stream(ctx, raw);
    check(devctx::cuda_stream(wrapped) == raw, "wrap_cuda_stream: the wrapper's native handle is the wrapped stream");
    auto keys = wrapped.enqueue_create_buffer<std::uint32_t>(n);
    auto out = wrapped.enqueue_create_buffer<std::uint32_t>(n);
    auto flags = wrapped.enqueue_create_buffer<unsigned>(1);
    wrapped.enqueue_memset(out, 0xDEADBEEFu);
    wrapped.enqueue_memset(flags, 0u);
    wrapped.enqueue_function<iota_xor>(cover(n), keys, s);
    std::size_t temp_bytes = 0;
    cuda_ok(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.data(), out.data(), int(n), 0, 32, raw),
            "SortKeys size");
    auto temp = wrapped.enqueue_create_buffer<unsigned char>(temp_bytes);
    cuda_ok(cub::DeviceRadixSort::SortKeys(temp.data(), temp_bytes, keys.data(), out.data(), int(n), 0, 32, raw),
            "SortKeys");
    wrapped.enqueue_function<count_unsorted>(cover(n), out, flags);
    const devctx::Event done = wrapped.record_event();
    // CUDA code on another stream waits for devctx's event.
    cudaStream_t other = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_ok(cudaStreamWaitEvent(other, devctx::cuda_event(done), 0), "cudaStreamWaitEvent");
    std::vector<std::uint32_t> host(n, 0);
    cuda_ok(cudaMemcpyAsync(host.data(), out.data(), n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, other), "copy");
    cuda_ok(cudaStreamSynchronize(other), "cudaStreamSynchronize");
    cuda_ok(cudaStreamDestroy(other), "cudaStreamDestroy");
    std::vector<std::uint32_t> expect(n);
    for (std::size_t i = 0; i < n; ++i) expect[i] = (std::uint32_t(i) * 2654435761u) ^ s;
    std::sort(expect.begin(), expect.end());
    check(host == expect,
          "CUB on a wrapped stream between devctx kernels; a CUDA stream waiting on cuda_event() sees the result");
    std::vector<unsigned> unsorted(1, 99);
    wrapped.enqueue_copy(unsorted, flags);
    check(unsorted[0] == 0, "the devctx kernel after the sort read it in order (0 neighbours out of order)");
    ctx.synchronize();  // also waits for the wrapped stream
  }
  check(cudaStreamQuery(raw) == cudaSuccess, "dropping the wrapper (and its buffers) leaves the CUDA stream alive");
  cuda_ok(cudaStreamDestroy(raw), "cudaStreamDestroy");

  // The legacy default stream, named explicitly.
  devctx::Stream legacy = devctx::wrap_cuda_stream(ctx, cudaStreamLegacy);
  auto data = legacy.enqueue_create_buffer<std::uint32_t>(1000);
  legacy.enqueue_function<iota_xor>(cover(1000), data, 7u);
  std::vector<std::uint32_t> host(1000);
  legacy.enqueue_copy(host, data);
  bool ok = true;
  for (std::size_t i = 0; i < host.size(); ++i) ok = ok && host[i] == ((std::uint32_t(i) * 2654435761u) ^ 7u);
  check(ok, "a devctx Stream over cudaStreamLegacy runs kernels and copies");
}

/// Memory from cudaMalloc as a DeviceView; cudaFree in its release, once devctx is done.
void foreign_memory(devctx::DeviceContext& ctx) {
  const std::size_t n = 100'000;
  float* raw = nullptr;
  cuda_ok(cudaMalloc(&raw, n * sizeof(float)), "cudaMalloc");
  bool freed = false;
  {
    auto view = devctx::wrap_device_memory(ctx, raw, n, [&] {
      freed = cudaFree(raw) == cudaSuccess;  // a host thread, not a CUDA callback: CUDA calls are fine
    });
    ctx.enqueue_memset(view, 1.5f);
    ctx.enqueue_function<affine>(cover(n), view, 4.0f, 1.0f);
    std::vector<float> host(n, 0.0f);
    ctx.enqueue_copy(host, view);
    check(std::all_of(host.begin(), host.end(), [](float x) { return x == 7.0f; }),
          "a DeviceView of cudaMalloc memory: memset, kernel, copy");
  }
  check(!freed, "the view's release does not run inside its destructor");
  ctx.synchronize();
  check(freed, "the view's release (cudaFree) ran at the next synchronize");

  auto refused = [&](const std::function<void()>& f, devctx::Errc code, const char* text, const std::string& what) {
    try {
      f();
      check(false, what + ": nothing thrown");
    } catch (const devctx::Error& e) {
      std::printf("      %s\n", e.what());
      check(e.code() == code && std::string(e.what()).find(text) != std::string::npos, what);
    }
  };
  float* device = nullptr;
  cuda_ok(cudaMalloc(&device, 1000 * sizeof(float)), "cudaMalloc");
  refused([&] { (void)devctx::wrap_device_memory(ctx, device + 500, 501); }, devctx::Errc::invalid_argument,
          "past its end", "a view running past the end of a cudaMalloc allocation is refused");
  {
    auto whole = devctx::wrap_device_memory(ctx, device + 500, 500);
    check(whole.size() == 500, "a view up to the end is fine");
  }
  float* pinned = nullptr;
  cuda_ok(cudaMallocHost(&pinned, 64 * sizeof(float)), "cudaMallocHost");
  refused([&] { (void)devctx::wrap_device_memory(ctx, pinned, 64); }, devctx::Errc::invalid_argument,
          "page-locked host memory", "page-locked host memory is refused as device memory");
  std::vector<float> pageable(64);
  refused([&] { (void)devctx::wrap_device_memory(ctx, pageable.data(), 64); }, devctx::Errc::invalid_argument,
          "ordinary host memory", "pageable host memory is refused as device memory");
  ctx.synchronize();
  cuda_ok(cudaFreeHost(pinned), "cudaFreeHost");
  cuda_ok(cudaFree(device), "cudaFree");

  int gpus = 0;
  cuda_ok(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (gpus < 2) {
    std::printf("SKIP  wrong-device checks need two GPUs (%d here)\n", gpus);
    return;
  }
  devctx::DeviceContext second{devctx_test::gpu::cuda_api(), 1};
  auto other = second.enqueue_create_buffer<float>(100);
  second.synchronize();
  refused([&] { (void)devctx::wrap_device_memory(ctx, other.data(), 100); }, devctx::Errc::wrong_device,
          "CUDA device 1", "memory of another GPU is refused");
  refused([&] { (void)devctx::wrap_cuda_stream(ctx, devctx::cuda_stream(second)); }, devctx::Errc::wrong_device,
          "CUDA device 1", "a stream of another GPU is refused");
}

}  // namespace

int main() {
  const int gpus = devctx::DeviceContext::count(devctx_test::gpu::cuda_api());
  std::printf("cuda devices: %d; seed %llu (DEVCTX_TEST_SEED replays)\n", gpus, static_cast<unsigned long long>(seed()));
  if (gpus == 0) {
    return devctx_test::gpu::no_gpu_exit();
  }
  devctx::DeviceContext ctx{devctx_test::gpu::cuda_api(), 0};
  section("cuBLAS and CUB on a devctx stream", [&] { blas_and_sort(ctx); });
  section("a devctx stream over a CUDA stream", [&] { foreign_stream(ctx); });
  section("cudaMalloc memory as a DeviceView", [&] { foreign_memory(ctx); });
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
