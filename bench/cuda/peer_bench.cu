// SPDX-License-Identifier: Apache-2.0
// devctx_bench_peer: copies between two GPUs (issue 16), in one run: devctx's enqueue_copy
// between DeviceBuffers of GPU 0 and GPU 1 (cudaMemcpyPeerAsync, peer access enabled by devctx on
// the first copy) against the raw cudaMemcpyPeerAsync on a raw stream with peer access enabled,
// 1 MiB .. 1 GiB, each direction, measured in alternation (devctx, raw, devctx, ...) so that
// drift favours neither. Prints GB/s (10^9 bytes per second, bytes moved once) and the ratio
// devctx / raw, against the issue's target (>= 0.97 from 64 MiB).
//
// Method: warm-ups first; host wall time from the first enqueue to the end of a synchronize, over
// enough copies to last milliseconds; medians of 7 trials (--trials). Each devctx copy's result is checked
// once. Exit status: 77 with fewer than two GPUs, 1 when a result is wrong, 3 with --strict when
// the target is missed, else 0. scripts/gpu-check.sh runs it when two GPUs are present.
//
// The all-reduce half of the issue's benchmark is bench/cuda/allreduce_bench.cu.
#include <devctx/devctx.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "support/args.hpp"
#include "support/clock.hpp"
#include "support/raw_cuda.hpp"
#include "support/trials.hpp"

namespace {

using devctx_bench::Clock;
using devctx_bench::seconds_since;

}  // namespace

int main(int argc, char** argv) try {
  bool strict = false;
  int trials = 7;
  devctx_bench::Args args("devctx_bench_peer", "Copies between two GPUs: devctx against cudaMemcpyPeerAsync");
  args.flag("--strict", strict, "Exit status 3 when a target is missed");
  args.option("--trials", trials, "Alternating trials per size and direction (median reported)", 1, 1000);
  args.parse(argc, argv);
  if (devctx::DeviceContext::count(devctx::backend("cuda").api) < 2) {
    std::printf("devctx_bench_peer: fewer than two GPUs; nothing to measure\n");
    return 77;
  }
  devctx::DeviceContext g0(devctx::backend("cuda").api, 0), g1(devctx::backend("cuda").api, 1);
  std::printf("GPU 0: %s\nGPU 1: %s\ncan_access_peer: %s\n", g0.name().c_str(), g1.name().c_str(),
              g0.can_access_peer(g1) ? "yes" : "no (staged by CUDA)");
  const std::size_t max_bytes = std::size_t(1) << 30;
  auto a = g0.enqueue_create_buffer<unsigned char>(max_bytes);
  auto b = g1.enqueue_create_buffer<unsigned char>(max_bytes);
  // The raw baseline: its own buffers and stream, peer access enabled both ways.
  void *ra = nullptr, *rb = nullptr;
  cudaStream_t s0 = nullptr;
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&rb, max_bytes));
  if (g1.can_access_peer(g0)) {
    const cudaError_t e = cudaDeviceEnablePeerAccess(0, 0);
    if (e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
    (void)cudaGetLastError();
  }
  CK(cudaSetDevice(0));
  CK(cudaMalloc(&ra, max_bytes));
  if (g0.can_access_peer(g1)) {
    const cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
    if (e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
    (void)cudaGetLastError();
  }
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));

  // Correctness once: a pattern from GPU 0 to GPU 1 and back.
  {
    const std::size_t n = std::size_t(1) << 20;
    std::vector<unsigned char> pattern(n), back(n, 0);
    for (std::size_t i = 0; i < n; ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
    g0.enqueue_copy(a.slice(0, n), std::span<const unsigned char>(pattern));
    g0.enqueue_copy(b.slice(0, n), a.slice(0, n));
    g0.synchronize();
    g1.enqueue_copy(std::span<unsigned char>(back), b.slice(0, n));
    if (back != pattern) {
      std::printf("FAILED: the peer copy's result differs\n");
      return 1;
    }
  }
  bool missed = false;
  std::printf("%10s %6s %12s %12s %8s\n", "bytes", "dir", "devctx GB/s", "raw GB/s", "ratio");
  for (std::size_t bytes = std::size_t(1) << 20; bytes <= max_bytes; bytes *= 4) {
    for (int dir = 0; dir < 2; ++dir) {
      const int reps = int(std::max<std::size_t>(2, (std::size_t(1) << 31) / bytes));
      auto time_devctx = [&] {
        const auto t0 = Clock::now();
        for (int r = 0; r < reps; ++r) {
          if (dir == 0)
            g0.enqueue_copy(b.slice(0, bytes), a.slice(0, bytes));
          else
            g0.enqueue_copy(a.slice(0, bytes), b.slice(0, bytes));
        }
        g0.synchronize();
        return double(bytes) * reps / seconds_since(t0) / 1e9;
      };
      auto time_raw = [&] {
        const auto t0 = Clock::now();
        for (int r = 0; r < reps; ++r) {
          if (dir == 0)
            CK(cudaMemcpyPeerAsync(rb, 1, ra, 0, bytes, s0));
          else
            CK(cudaMemcpyPeerAsync(ra, 0, rb, 1, bytes, s0));
        }
        CK(cudaStreamSynchronize(s0));
        return double(bytes) * reps / seconds_since(t0) / 1e9;
      };
      const auto m = devctx_bench::alternating_medians(trials, 1, {time_devctx, time_raw});
      const double dm = m[0], rm = m[1], ratio = dm / rm;
      const bool target = bytes >= (std::size_t(64) << 20);
      if (target && ratio < 0.97) missed = true;
      std::printf("%10zu %6s %12.1f %12.1f %8.3f%s\n", bytes, dir == 0 ? "0->1" : "1->0", dm, rm, ratio,
                  target ? (ratio >= 0.97 ? "  (target >= 0.97: met)" : "  (target >= 0.97: MISSED)") : "");
    }
  }
  CK(cudaStreamDestroy(s0));
  CK(cudaFree(ra));
  CK(cudaSetDevice(1));
  CK(cudaFree(rb));
  return strict && missed ? 3 : 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
