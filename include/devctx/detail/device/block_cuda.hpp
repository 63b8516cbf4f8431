// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/block_cuda.hpp - devctx::Block's members in nvcc's device pass
// (__CUDA_ARCH__): each thread runs a phase for itself, then __syncthreads(). Included only at
// the end of <devctx/block.hpp>, which declares them (so this header does not include it).
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/block_cuda.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/block.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

namespace devctx {

__device__ __forceinline__ Dim3 Block::idx() const { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
__device__ __forceinline__ Dim3 Block::dim() const { return {blockDim.x, blockDim.y, blockDim.z}; }
__device__ __forceinline__ Dim3 Block::grid() const { return {gridDim.x, gridDim.y, gridDim.z}; }

template <class F>
__device__ __forceinline__ void Block::for_each_thread(F&& f) const {
  f(Thread{threadIdx.x, threadIdx.y, threadIdx.z,
           threadIdx.x + blockDim.x * (threadIdx.y + std::size_t(blockDim.y) * threadIdx.z)});
  __syncthreads();
}

template <class F>
__device__ __forceinline__ void Block::for_first_threads(std::size_t count, F&& f) const {
  const std::size_t rank = threadIdx.x + blockDim.x * (threadIdx.y + std::size_t(blockDim.y) * threadIdx.z);
  if (rank < count) f(Thread{threadIdx.x, threadIdx.y, threadIdx.z, rank});
  __syncthreads();
}

template <class F>
__device__ __forceinline__ void Block::single(F&& f) const {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) f();
  __syncthreads();
}

template <class T>
__device__ __forceinline__ PerThread<T> Block::per_thread(const T& init) const {
  return PerThread<T>(init);
}

}  // namespace devctx
