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

#if !defined(__CUDA_ARCH__)
#include <devctx/detail/base/cpu_state.hpp>
#endif

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

#if defined(__CUDA_ARCH__)
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
#else
inline Dim3 Block::idx() const { return detail::cpu::tls.block_idx; }
inline Dim3 Block::dim() const { return detail::cpu::tls.block_dim; }
inline Dim3 Block::grid() const { return detail::cpu::tls.grid_dim; }

namespace detail::cpu {
/// A phase of a checked launch (docs/checking.md): threads of rank below `count`, in rank order
/// or, in the checker's second run of the block, in reverse order, each followed by
/// checked_thread_step(), then the phase's end. Out of line from the fast loops, which the
/// runners' promise (launch_kernel.hpp) lets the compiler keep free of it in unchecked code.
template <class F>
[[gnu::noinline]] void checked_phase(std::size_t count, F& f) {
  const Dim3 d = tls.block_dim;  // tls by name, never bound to a reference: see cpu_state.hpp
  const std::size_t n = std::size_t(d.x) * d.y * d.z, end = count < n ? count : n;
  const bool reversed = checked_threads_reversed();
  for (std::size_t i = 0; i < end; ++i) {
    const std::size_t rank = reversed ? end - 1 - i : i;
    const std::size_t x = rank % d.x, y = rank / d.x % d.y, z = rank / (std::size_t(d.x) * d.y);
    tls.thread_idx = {unsigned(x), unsigned(y), unsigned(z)};
    f(Thread{x, y, z, rank});
    checked_thread_step();
  }
  checked_phase_end();
}
}  // namespace detail::cpu

template <class F>
inline void Block::for_each_thread(F&& f) const {
  using detail::cpu::tls;  // by name, never bound to a reference: see cpu_state.hpp
  const Dim3 d = tls.block_dim;
  if (detail::cpu::in_checked_launch()) [[unlikely]] {
    detail::cpu::checked_phase(~std::size_t{0}, f);
    return;
  }
  if (d.y == 1 && d.z == 1) {  // 1-D blocks, the common case: a single loop
    DEVCTX_IVDEP
    for (std::size_t x = 0; x < d.x; ++x) {
      tls.thread_idx.x = unsigned(x);
      f(Thread{x, 0, 0, x});
      tls.thread_idx.x = unsigned(x);
    }
    detail::cpu::phase_end();
    return;
  }
  std::size_t rank = 0;
  for (std::size_t z = 0; z < d.z; ++z) {
    for (std::size_t y = 0; y < d.y; ++y) {
      tls.thread_idx.z = unsigned(z);
      tls.thread_idx.y = unsigned(y);
      // Threads of one phase are independent (a dependence between them would be a data race
      // on a GPU), which ivdep tells the compiler. The second store of x lets it keep x in a
      // register. Together they let the loop vectorise.
      DEVCTX_IVDEP
      for (std::size_t x = 0; x < d.x; ++x) {
        tls.thread_idx.x = unsigned(x);
        f(Thread{x, y, z, rank + x});
        tls.thread_idx.x = unsigned(x);
      }
      rank += d.x;
    }
  }
  detail::cpu::phase_end();
}

template <class F>
inline void Block::for_first_threads(std::size_t count, F&& f) const {
  using detail::cpu::tls;  // by name, never bound to a reference: see cpu_state.hpp
  const Dim3 d = tls.block_dim;
  if (detail::cpu::in_checked_launch()) [[unlikely]] {
    detail::cpu::checked_phase(count, f);
    return;
  }
  if (d.y == 1 && d.z == 1) {  // 1-D blocks, the common case: a single loop
    const std::size_t end = count < d.x ? count : d.x;
    DEVCTX_IVDEP
    for (std::size_t x = 0; x < end; ++x) {
      tls.thread_idx.x = unsigned(x);
      f(Thread{x, 0, 0, x});
      tls.thread_idx.x = unsigned(x);
    }
    detail::cpu::phase_end();
    return;
  }
  std::size_t rank = 0;
  for (std::size_t z = 0; z < d.z && rank < count; ++z) {
    for (std::size_t y = 0; y < d.y && rank < count; ++y) {
      tls.thread_idx.z = unsigned(z);
      tls.thread_idx.y = unsigned(y);
      const std::size_t end = count - rank < d.x ? count - rank : d.x;
      DEVCTX_IVDEP
      for (std::size_t x = 0; x < end; ++x) {
        tls.thread_idx.x = unsigned(x);
        f(Thread{x, y, z, rank + x});
        tls.thread_idx.x = unsigned(x);
      }
      rank += d.x;
    }
  }
  detail::cpu::phase_end();
}

template <class F>
inline void Block::single(F&& f) const {
  detail::cpu::tls.thread_idx = {0, 0, 0};
  f();
  if (detail::cpu::in_checked_launch()) [[unlikely]]
    detail::cpu::checked_thread_step();
  detail::cpu::phase_end();
}

template <class T>
inline PerThread<T> Block::per_thread(const T& init) const {
  const unsigned n = size();
  return PerThread<T>(static_cast<T*>(detail::cpu::per_thread_storage(sizeof(T) * n, alignof(T))), n, init);
}
#endif

}  // namespace devctx
