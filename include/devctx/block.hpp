// SPDX-License-Identifier: Apache-2.0
// devctx/block.hpp - the block-level kernel form.
//
// A block-level kernel takes `devctx::Block` as its first parameter and describes the work
// between barriers as phases: `blk.for_each_thread([&](devctx::Thread t) { ... })` runs the
// lambda for every thread of the block and ends with a block barrier. Values that a thread
// keeps from one phase to the next live in `blk.per_thread<T>()`; block-shared arrays are
// declared with DEVCTX_SHARED as usual.
//
//   DEVCTX_KERNEL void block_sum(devctx::Block blk, devctx::span<const float> in,
//                                devctx::span<float> out) {
//     DEVCTX_SHARED(float, s, 256);
//     blk.for_each_thread([&](devctx::Thread t) {
//       const auto i = blk.global_idx(t).x;
//       s[t.x] = i < in.size() ? in[i] : 0.0f;
//     });
//     for (unsigned stride = blk.dim().x / 2; stride > 0; stride /= 2)
//       blk.for_first_threads(stride, [&](devctx::Thread t) { s[t.x] += s[t.x + stride]; });
//     blk.single([&] { out[blk.idx().x] = s[0]; });
//   }
//
// It is launched like any kernel: ctx.enqueue_function<block_sum>(cfg, d_in, d_out).
// On CUDA every thread runs each phase for itself followed by __syncthreads(). On the CPU a
// phase is one loop over the block's threads, which the compiler can vectorise, and no fiber
// switch is ever needed. Rules: every thread of the block must reach every for_each_thread
// (uniform control flow around phases, as for barrier()); inside a phase do not call
// barrier() or warp operations; code outside phases runs once per block on the CPU and once
// per thread on the GPU, so it may only compute block-uniform values.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/config.hpp>
#include <devctx/launch.hpp>

namespace devctx {

/// One thread of a block inside a for_each_thread phase: its thread index and its rank
/// (x + y * block_dim.x + z * block_dim.x * block_dim.y). The fields are 64-bit so that index
/// arithmetic on them cannot wrap, which is what lets the CPU backend vectorise a phase.
struct Thread {
  std::size_t x;
  std::size_t y;
  std::size_t z;
  std::size_t rank;
};

/// A value per thread that persists across phases. Index it with the phase's Thread.
template <class T>
class PerThread {
 public:
#if defined(__CUDA_ARCH__)
  __device__ explicit PerThread(const T& init) : value_(init) {}
  __device__ T& operator[](Thread) { return value_; }

 private:
  T value_;
#else
  PerThread(T* storage, unsigned count, const T& init) : values_(storage) {
    for (unsigned i = 0; i < count; ++i) new (values_ + i) T(init);
  }
  T& operator[](Thread t) { return values_[t.rank]; }

 private:
  T* values_;
#endif
};

/// The block a block-level kernel runs for. Passed by value as the kernel's first parameter;
/// created by the launch, never by users.
class Block {
 public:
  [[nodiscard]] DEVCTX_HD_INLINE Dim3 idx() const;
  [[nodiscard]] DEVCTX_HD_INLINE Dim3 dim() const;
  [[nodiscard]] DEVCTX_HD_INLINE Dim3 grid() const;
  /// Threads in the block.
  [[nodiscard]] DEVCTX_HD_INLINE unsigned size() const {
    const Dim3 d = dim();
    return d.x * d.y * d.z;
  }
  /// block_idx * block_dim + t, 64-bit: the thread's global index.
  [[nodiscard]] DEVCTX_HD_INLINE Idx3 global_idx(Thread t) const {
    const Dim3 b = idx(), d = dim();
    return {std::uint64_t(b.x) * d.x + t.x, std::uint64_t(b.y) * d.y + t.y, std::uint64_t(b.z) * d.z + t.z};
  }

  /// Runs `f(Thread)` for every thread of the block, then a block barrier.
  template <class F>
  DEVCTX_HD_INLINE void for_each_thread(F&& f) const;

  /// Runs `f(Thread)` for the threads whose rank is below `count` (all threads when `count` is
  /// at least size()), then a block barrier. The natural phase of tree reductions and scans:
  /// `for (s = n / 2; s > 0; s /= 2) blk.for_first_threads(s, [&](Thread t) { v[t.x] += v[t.x + s]; });`
  /// On the CPU only those threads are visited, with no per-thread test.
  template <class F>
  DEVCTX_HD_INLINE void for_first_threads(std::size_t count, F&& f) const;

  /// Runs `f()` once for the block (by the thread of rank 0 on a GPU), then a block barrier.
  template <class F>
  DEVCTX_HD_INLINE void single(F&& f) const;

  /// A per-thread value, initialised to `init` for every thread.
  template <class T>
  DEVCTX_HD_INLINE PerThread<T> per_thread(const T& init = T{}) const;
};

}  // namespace devctx

// The members' definitions, one backend each.
#if defined(__CUDA_ARCH__)
#include <devctx/detail/device/block_cuda.hpp>
#else
#include <devctx/detail/device/block_cpu.hpp>
#endif
