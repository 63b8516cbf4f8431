// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/cuda.hpp - kernel-side functions in nvcc's device pass (__CUDA_ARCH__).
// CUDA's own built-ins (threadIdx, __syncthreads, atomicAdd, __shfl_*_sync) are always
// visible there, so this header includes nothing from CUDA.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/cuda.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <devctx/span.hpp>
#include <devctx/launch.hpp>

namespace devctx {

__device__ __forceinline__ Dim3 thread_idx() { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
__device__ __forceinline__ Dim3 block_idx() { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
__device__ __forceinline__ Dim3 block_dim() { return {blockDim.x, blockDim.y, blockDim.z}; }
__device__ __forceinline__ Dim3 grid_dim() { return {gridDim.x, gridDim.y, gridDim.z}; }

__device__ __forceinline__ Idx3 global_idx() {
  return {std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x,
          std::uint64_t(blockIdx.y) * blockDim.y + threadIdx.y,
          std::uint64_t(blockIdx.z) * blockDim.z + threadIdx.z};
}

__device__ __forceinline__ void barrier() { __syncthreads(); }

template <class T>
__device__ __forceinline__ span<T> dynamic_shared() {
  extern __shared__ __align__(16) unsigned char devctx_dynamic_shared_bytes[];
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return span<T>(reinterpret_cast<T*>(devctx_dynamic_shared_bytes), bytes / sizeof(T));
}

template <class T>
__device__ __forceinline__ T atomic_add(T* address, T value) { return atomicAdd(address, value); }
template <class T>
__device__ __forceinline__ T atomic_max(T* address, T value) { return atomicMax(address, value); }
template <class T>
__device__ __forceinline__ T atomic_min(T* address, T value) { return atomicMin(address, value); }
template <class T>
__device__ __forceinline__ T atomic_exchange(T* address, T value) { return atomicExch(address, value); }
template <class T>
__device__ __forceinline__ T atomic_cas(T* address, T expected, T desired) {
  return atomicCAS(address, expected, desired);
}

__device__ __forceinline__ void memory_fence() { __threadfence(); }

__device__ __forceinline__ unsigned lane_id() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u;
}

template <class T>
__device__ __forceinline__ T shuffle(T value, unsigned source_lane) { return __shfl_sync(0xffffffffu, value, source_lane); }
template <class T>
__device__ __forceinline__ T shuffle_down(T value, unsigned delta) { return __shfl_down_sync(0xffffffffu, value, delta); }
template <class T>
__device__ __forceinline__ T shuffle_up(T value, unsigned delta) { return __shfl_up_sync(0xffffffffu, value, delta); }
template <class T>
__device__ __forceinline__ T shuffle_xor(T value, unsigned mask) { return __shfl_xor_sync(0xffffffffu, value, mask); }

template <class T>
__device__ __forceinline__ T warp_sum(T value) {
  for (unsigned m = 16; m >= 1; m /= 2) value += __shfl_xor_sync(0xffffffffu, value, m);
  return value;
}

}  // namespace devctx

#define DEVCTX_SHARED(T, name, count) __shared__ T name[count]
