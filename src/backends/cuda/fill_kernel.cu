// SPDX-License-Identifier: Apache-2.0
// The pattern-fill kernel behind enqueue_memset for patterns cudaMemsetAsync cannot express
// (see fill_kernel.hpp). The body is written with aligned 16-byte stores; the unaligned head
// and the tail, and patterns whose period does not fit, are written byte by byte.
#include "backends/cuda/fill_kernel.hpp"

namespace devctx::detail::cuda {
namespace {

__global__ void fill_pattern(const FillParams p) {
  __shared__ uint4 vectors[kFillMaxPattern / 16];
  __shared__ unsigned char pattern[kFillMaxPattern];
  for (unsigned i = threadIdx.x; i < p.width; i += blockDim.x) pattern[i] = p.pattern[i];
  for (unsigned i = threadIdx.x; i < p.period_vectors; i += blockDim.x)
    vectors[i] = reinterpret_cast<const uint4*>(p.vectors)[i];
  __syncthreads();

  const unsigned long long first = blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  if (p.period_vectors == 0) {
    for (unsigned long long i = first; i < p.bytes; i += stride) p.dst[i] = pattern[i % p.width];
    return;
  }
  const unsigned long long body_vectors = (p.bytes - p.head) / 16;
  const unsigned long long tail = p.head + body_vectors * 16;
  for (unsigned long long i = first; i < p.head; i += stride) p.dst[i] = pattern[i % p.width];
  for (unsigned long long i = tail + first; i < p.bytes; i += stride) p.dst[i] = pattern[i % p.width];
  uint4* body = reinterpret_cast<uint4*>(p.dst + p.head);
  if (p.period_vectors == 1) {
    const uint4 v = vectors[0];
    for (unsigned long long k = first; k < body_vectors; k += stride) body[k] = v;
  } else {
    for (unsigned long long k = first; k < body_vectors; k += stride) body[k] = vectors[k % p.period_vectors];
  }
}

}  // namespace

const void* fill_kernel() noexcept { return reinterpret_cast<const void*>(&fill_pattern); }

}  // namespace devctx::detail::cuda
