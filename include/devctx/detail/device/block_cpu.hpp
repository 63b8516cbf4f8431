// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/block_cpu.hpp - devctx::Block's members on the CPU backend (and in nvcc's
// host pass): a phase is one loop over the block's threads, with checking mode's checked phases
// (docs/checking.md). Included only at the end of <devctx/block.hpp>, which declares
// them (so this header does not include it).
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/block_cpu.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/block.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/cpu_state.hpp>

namespace devctx {

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

}  // namespace devctx
