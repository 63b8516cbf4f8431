// SPDX-License-Identifier: Apache-2.0
// bench/support/raw_cuda.hpp - the raw CUDA baseline that devctx is measured against, shared by
// the CUDA benchmarks (bench/cuda) and `devctx bench` (tools/cuda_facts.cu):
//  - the one check of a raw CUDA call: ok() (false after a failure, whose error it clears) and
//    CK(call), which ends a benchmark with exit status 2 naming the call;
//  - the one raw host<->device copy: cudaMemcpyAsync on a stream, and for pageable memory a
//    cudaStreamSynchronize after each copy, which is what devctx's enqueue_copy from pageable
//    memory promises (done on return): the same work on both sides of a comparison.
// Compiled by nvcc only (it includes cuda_runtime.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace devctx_bench {

/// True when `status` is success; otherwise clears a non-sticky error (so that later calls are
/// not blamed for it) and returns false.
[[nodiscard]] inline bool ok(cudaError_t status) noexcept {
  if (status == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

/// Ends the run with exit status 2 when `status` is an error, naming `what` (CK's call).
inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "raw CUDA: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}

/// One raw copy of `bytes` between `host` and `device` on `stream` (to the device when
/// `to_device`), followed by a wait for the stream when `wait` (pageable host memory: what
/// devctx's copy promises). Page-locked copies are issued back to back (wait false) and waited
/// for once at the end by the caller: the DMA ceiling. Returns the first failure.
[[nodiscard]] inline cudaError_t raw_copy(void* device, void* host, std::size_t bytes, bool to_device,
                                          cudaStream_t stream, bool wait) noexcept {
  const cudaError_t s = to_device ? cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream)
                                  : cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream);
  if (s != cudaSuccess || !wait) return s;
  return cudaStreamSynchronize(stream);
}

}  // namespace devctx_bench

/// Checks a raw CUDA call in a benchmark: exit status 2 with the call's text on failure.
#define CK(call) ::devctx_bench::cuda_check((call), #call)
