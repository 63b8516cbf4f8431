// SPDX-License-Identifier: Apache-2.0
// devctx/kernel.hpp - the device-side API: what code inside a kernel may call.
//
// The same kernel source runs on every backend. In nvcc's device pass these functions map to
// CUDA built-ins; everywhere else (g++, and nvcc's host pass) they read the CPU executor's
// per-worker state. Reference (all usable only inside a running kernel):
//
//   thread_idx(), block_idx(), block_dim(), grid_dim()  -> Dim3 (.x .y .z), as in CUDA
//   global_idx()                 -> Idx3: block_idx * block_dim + thread_idx, 64-bit
//   barrier()                    block-wide barrier (__syncthreads); every non-exited thread
//                                of the block must reach the same barrier
//   DEVCTX_SHARED(T, name, n);   a block-shared array `T name[n]` (n a constant)
//   dynamic_shared<T>()          span<T> over the launch's LaunchConfig::shared_bytes
//   atomic_add/sub/min/max/exchange(T* addr, T v), atomic_cas(T* addr, expected, desired)
//                                32/64-bit integers, float, double
//   atomic_and/or/xor(T* addr, T v)   32/64-bit integers
//   atomic_inc/dec(T* addr, T limit)  32/64-bit unsigned, CUDA's wrapping semantics:
//                                inc stores old >= limit ? 0 : old + 1, dec stores
//                                old == 0 || old > limit ? limit : old - 1
//                                All atomics return the old value, relaxed order (no fence);
//                                those without a GPU instruction (float/double min and max,
//                                64-bit inc and dec) are compare-exchange loops on the GPU.
//                                atomic_cas compares bit patterns (also for float and double).
//                                T comes from the pointer alone: the values convert to it, as
//                                CUDA's do (atomic_add(&unsigned_bins[b], 1) adds 1u). The
//                                address may be device memory or a DEVCTX_SHARED element.
//   memory_fence(), threadfence()   __threadfence
//   warp_size, lane_id(), shuffle(v, lane), shuffle_down(v, d), shuffle_up(v, d),
//   shuffle_xor(v, m), warp_sum(v)   warps of 32 lanes on every backend; every existing lane
//                                    of the warp must take part. More warp collectives, their
//                                    partial-warp rules and the block collectives:
//                                    devctx/collectives.hpp
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/config.hpp>
#include <devctx/launch.hpp>
#include <devctx/span.hpp>

namespace devctx {
/// Threads per warp, on every backend.
inline constexpr unsigned warp_size = 32;
/// Which prefix sum warp_prefix_sum / block_prefix_sum compute: element i's own value included
/// (inclusive) or not (exclusive: element 0 gets 0).
enum class Scan : unsigned char { inclusive, exclusive };
}  // namespace devctx

#if defined(__CUDA_ARCH__)
#include <devctx/detail/device/cuda.hpp>
#else
#include <devctx/detail/device/cpu.hpp>
// What the fission translator's twins call (docs/cpu-backend.md, "Translated kernels"): a kernel
// file that includes only this header is translated too.
#include <devctx/detail/device/fission.hpp>
#endif

#include <devctx/block.hpp>
