// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/cuda.hpp - kernel-side functions in nvcc's device pass (__CUDA_ARCH__).
// CUDA's own built-ins (threadIdx, __syncthreads, atomicAdd, __shfl_*_sync) are always
// visible there, so this header includes nothing from CUDA.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/cuda.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/device/atomic_types.hpp>
#include <devctx/detail/device/reduce_ops.hpp>
#include <devctx/launch.hpp>
#include <devctx/span.hpp>

namespace devctx {

__device__ __forceinline__ Dim3 thread_idx() { return {threadIdx.x, threadIdx.y, threadIdx.z}; }
__device__ __forceinline__ Dim3 block_idx() { return {blockIdx.x, blockIdx.y, blockIdx.z}; }
__device__ __forceinline__ Dim3 block_dim() { return {blockDim.x, blockDim.y, blockDim.z}; }
__device__ __forceinline__ Dim3 grid_dim() { return {gridDim.x, gridDim.y, gridDim.z}; }

__device__ __forceinline__ Idx3 global_idx() {
  return {std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x, std::uint64_t(blockIdx.y) * blockDim.y + threadIdx.y,
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

namespace detail::cuda {
/// The type CUDA's atomic* overloads take for T: int / unsigned / long long / unsigned long long
/// by size and sign (std::int64_t is `long` on Linux, which CUDA's overloads do not take), or T.
template <class T>
using native_t =
    std::conditional_t<std::is_floating_point_v<T>, T,
                       std::conditional_t<sizeof(T) == 4, std::conditional_t<std::is_signed_v<T>, int, unsigned>,
                                          std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>>>;
/// The unsigned integer of T's size: what atomicCAS compares.
template <class T>
using bits_t = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;

template <class To, class From>
__device__ __forceinline__ To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}
template <class T>
__device__ __forceinline__ native_t<T>* native(T* address) {
  return reinterpret_cast<native_t<T>*>(address);
}
template <class T>
__device__ __forceinline__ bits_t<T>* as_bits(T* address) {
  return reinterpret_cast<bits_t<T>*>(address);
}

/// Replaces the value by next(old) with atomicCAS until that succeeds, or until keep(old) says
/// the value is to stay; returns the old value. For the operations CUDA has no instruction for.
template <class T, class Keep, class Next>
__device__ __forceinline__ T atomic_update(T* address, Keep keep, Next next) {
  bits_t<T> seen = *reinterpret_cast<volatile bits_t<T>*>(address);
  while (true) {
    const T old = bit_cast<T>(seen);
    if (keep(old)) return old;
    const bits_t<T> before = atomicCAS(as_bits(address), seen, bit_cast<bits_t<T>>(next(old)));
    if (before == seen) return old;
    seen = before;
  }
}
}  // namespace detail::cuda

template <class T>
__device__ __forceinline__ T atomic_add(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_add");
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8)  // two's complement: unsigned addition
    return T(atomicAdd(detail::cuda::as_bits(address), static_cast<unsigned long long>(value)));
  else
    return T(atomicAdd(detail::cuda::native(address), static_cast<detail::cuda::native_t<T>>(value)));
}
template <class T>
__device__ __forceinline__ T atomic_sub(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_sub");
  if constexpr (std::is_integral_v<T> && sizeof(T) == 4)
    return T(atomicSub(detail::cuda::native(address), static_cast<detail::cuda::native_t<T>>(value)));
  else if constexpr (std::is_integral_v<T>)
    return T(atomicAdd(detail::cuda::as_bits(address), 0ull - static_cast<unsigned long long>(value)));
  else
    return atomicAdd(address, -value);
}
template <class T>
__device__ __forceinline__ T atomic_max(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_max");
  if constexpr (std::is_integral_v<T>)
    return T(atomicMax(detail::cuda::native(address), static_cast<detail::cuda::native_t<T>>(value)));
  else
    return detail::cuda::atomic_update(address, [value](T old) { return !(old < value); }, [value](T) { return value; });
}
template <class T>
__device__ __forceinline__ T atomic_min(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_min");
  if constexpr (std::is_integral_v<T>)
    return T(atomicMin(detail::cuda::native(address), static_cast<detail::cuda::native_t<T>>(value)));
  else
    return detail::cuda::atomic_update(address, [value](T old) { return !(value < old); }, [value](T) { return value; });
}
template <class T>
__device__ __forceinline__ T atomic_and(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_and");
  return T(atomicAnd(detail::cuda::as_bits(address), static_cast<detail::cuda::bits_t<T>>(value)));
}
template <class T>
__device__ __forceinline__ T atomic_or(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_or");
  return T(atomicOr(detail::cuda::as_bits(address), static_cast<detail::cuda::bits_t<T>>(value)));
}
template <class T>
__device__ __forceinline__ T atomic_xor(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_xor");
  return T(atomicXor(detail::cuda::as_bits(address), static_cast<detail::cuda::bits_t<T>>(value)));
}
template <class T>
__device__ __forceinline__ T atomic_inc(T* address, std::type_identity_t<T> limit) {
  DEVCTX_ATOMIC_UNSIGNED(T, "devctx::atomic_inc");
  if constexpr (sizeof(T) == 4)
    return atomicInc(detail::cuda::as_bits(address), limit);
  else
    return detail::cuda::atomic_update(
        address, [](T) { return false; }, [limit](T old) { return old >= limit ? T{0} : T(old + 1); });
}
template <class T>
__device__ __forceinline__ T atomic_dec(T* address, std::type_identity_t<T> limit) {
  DEVCTX_ATOMIC_UNSIGNED(T, "devctx::atomic_dec");
  if constexpr (sizeof(T) == 4)
    return atomicDec(detail::cuda::as_bits(address), limit);
  else
    return detail::cuda::atomic_update(
        address, [](T) { return false; }, [limit](T old) { return old == 0 || old > limit ? limit : T(old - 1); });
}
template <class T>
__device__ __forceinline__ T atomic_exchange(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_exchange");
  if constexpr (std::is_same_v<T, float>)
    return atomicExch(address, value);
  else
    return detail::cuda::bit_cast<T>(
        atomicExch(detail::cuda::as_bits(address), detail::cuda::bit_cast<detail::cuda::bits_t<T>>(value)));
}
template <class T>
__device__ __forceinline__ T atomic_cas(T* address, std::type_identity_t<T> expected, std::type_identity_t<T> desired) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_cas");
  using B = detail::cuda::bits_t<T>;
  return detail::cuda::bit_cast<T>(atomicCAS(detail::cuda::as_bits(address), detail::cuda::bit_cast<B>(expected),
                                             detail::cuda::bit_cast<B>(desired)));
}

__device__ __forceinline__ void memory_fence() { __threadfence(); }
__device__ __forceinline__ void threadfence() { __threadfence(); }

__device__ __forceinline__ unsigned lane_id() {
  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u;
}

namespace detail::cuda {
/// Lanes in the calling thread's warp: 32, except in a block's last warp when the block's
/// thread count is not a multiple of 32. Warps are runs of 32 consecutive linear thread indices.
__device__ __forceinline__ unsigned warp_width() {
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned rest = threads - (linear & ~31u);
  return rest < 32u ? rest : 32u;
}
/// The lanes that exist: the only ones a *_sync mask may name (naming a lane that does not
/// exist is undefined behaviour in CUDA).
__device__ __forceinline__ unsigned warp_mask() {
  const unsigned width = warp_width();
  return width == 32u ? 0xffffffffu : (1u << width) - 1u;
}

/// The xor butterfly: at step m every lane combines op(own, lane ^ m). A partner missing from a
/// partial warp contributes the identity (every lane it would have combined with is missing too,
/// for the chain that ends in lane 0), and lane 0's result is broadcast, so that the result does
/// not depend on whether `op` is commutative bit for bit (max of -0 and +0) - the CPU backend
/// computes exactly lane 0's chain.
template <class Op, class T>
__device__ __forceinline__ T warp_reduce(T value) {
  static_assert(is_warp_arithmetic_v<T>, "warp and block reductions take arithmetic types of 4 or 8 bytes");
  const unsigned mask = warp_mask(), width = warp_width(), lane = lane_id();
  if constexpr (std::is_same_v<Op, SumOp>) {
    if (width == 32u) {
      // Full warp: + is commutative bit for bit, so every lane already holds lane 0's sum.
      for (unsigned m = 16; m >= 1; m /= 2) value += __shfl_xor_sync(0xffffffffu, value, m);
      return value;
    }
  }
  for (unsigned m = 16; m >= 1; m /= 2) {
    T other = __shfl_xor_sync(mask, value, m);
    if ((lane ^ m) >= width) other = Op::template identity<T>();
    value = Op{}(value, other);
  }
  return __shfl_sync(mask, value, 0);
}

/// The inclusive prefix sum by the shuffle-up ladder (lane i adds lane i - d at step d).
template <class T>
__device__ __forceinline__ T warp_scan(T value) {
  static_assert(is_warp_arithmetic_v<T>, "warp and block prefix sums take arithmetic types of 4 or 8 bytes");
  const unsigned mask = warp_mask(), lane = lane_id();
  for (unsigned d = 1; d < 32; d *= 2) {
    const T before = __shfl_up_sync(mask, value, d);
    if (lane >= d) value = before + value;
  }
  return value;
}
}  // namespace detail::cuda

// Shuffles name only the lanes that exist; a lane whose source lane does not exist (past the
// end of a partial warp) keeps its own value, as on the CPU backend.
template <class T>
__device__ __forceinline__ T shuffle(T value, unsigned source_lane) {
  const T r = __shfl_sync(detail::cuda::warp_mask(), value, source_lane);
  return source_lane % 32u < detail::cuda::warp_width() ? r : value;
}
template <class T>
__device__ __forceinline__ T shuffle_down(T value, unsigned delta) {
  const T r = __shfl_down_sync(detail::cuda::warp_mask(), value, delta);
  return lane_id() + delta < detail::cuda::warp_width() ? r : value;
}
template <class T>
__device__ __forceinline__ T shuffle_up(T value, unsigned delta) {
  return __shfl_up_sync(detail::cuda::warp_mask(), value, delta);
}
template <class T>
__device__ __forceinline__ T shuffle_xor(T value, unsigned mask) {
  const T r = __shfl_xor_sync(detail::cuda::warp_mask(), value, mask);
  return (lane_id() ^ mask) < detail::cuda::warp_width() ? r : value;
}
template <class T>
__device__ __forceinline__ T shuffle_idx(T value, unsigned source_lane) {
  return shuffle(value, source_lane);
}
template <class T>
__device__ __forceinline__ T warp_broadcast(T value) {
  return shuffle(value, 0);
}

namespace detail {
/// The warp reduction with `Op` (the block collectives of devctx/collectives.hpp build on it).
template <class Op, class T>
__device__ __forceinline__ T warp_reduce(T value) {
  return cuda::warp_reduce<Op>(value);
}
}  // namespace detail

template <class T>
__device__ __forceinline__ T warp_sum(T value) {
  return detail::cuda::warp_reduce<detail::SumOp>(value);
}
template <class T>
__device__ __forceinline__ T warp_max(T value) {
  return detail::cuda::warp_reduce<detail::MaxOp>(value);
}
template <class T>
__device__ __forceinline__ T warp_min(T value) {
  return detail::cuda::warp_reduce<detail::MinOp>(value);
}

template <Scan S = Scan::inclusive, class T>
__device__ __forceinline__ T warp_prefix_sum(T value) {
  const T inclusive = detail::cuda::warp_scan(value);
  if constexpr (S == Scan::inclusive) {
    return inclusive;
  } else {
    const T before = __shfl_up_sync(detail::cuda::warp_mask(), inclusive, 1);
    return lane_id() == 0 ? T{} : before;
  }
}

__device__ __forceinline__ std::uint32_t ballot(bool predicate) {
  return __ballot_sync(detail::cuda::warp_mask(), predicate);
}
__device__ __forceinline__ void syncwarp() { __syncwarp(detail::cuda::warp_mask()); }

}  // namespace devctx

// A real __shared__ array; T may be an array type (`DEVCTX_SHARED(float[16], tile, 16)` declares
// float tile[16][16]), as on the CPU backend (cpu.hpp).
#define DEVCTX_SHARED(T, name, count) __shared__ ::std::type_identity_t<T> name[(count)]
