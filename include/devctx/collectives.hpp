// SPDX-License-Identifier: Apache-2.0
// devctx/collectives.hpp - warp and block collectives (Mojo's gpu.warp and gpu.block): values
// exchanged, reduced and scanned across the lanes of a warp or the threads of a block.
//
// Every collective gives bitwise-identical results on the CPU and CUDA backends: both combine the
// same values in the same order (floating-point sums included). Usable in thread-level kernels
// (not in a devctx::Block kernel's phases on the CPU backend).
//
// Warps. A warp is 32 consecutive linear thread indices of a block (linear = x + dx * (y + dy * z),
// as CUDA numbers them); lane_id() is the linear index % 32. When the block's thread count is not
// a multiple of 32, its last warp is partial: it has width = threads % 32 lanes.
// Every lane of the warp that exists must call the same warp collective: no lane may have
// returned or be in another branch. Otherwise the results are undefined on both backends (the
// CPU backend does not wait for lanes that have returned, and reads their stale values).
//
//   shuffle_idx(v, lane)   (= shuffle) the value of lane `lane % 32`
//   shuffle_up(v, d)       the value of lane - d; lanes below d keep their own
//   shuffle_down(v, d)     the value of lane + d; lanes whose lane + d >= width keep their own
//   shuffle_xor(v, m)      the value of lane ^ m; own value when lane ^ m >= width
//   warp_broadcast(v)      lane 0's value
//   warp_sum(v), warp_max(v), warp_min(v)
//                          the reduction over the warp's existing lanes, the same value in every
//                          lane: an xor butterfly (16, 8, 4, 2, 1) in which lanes missing from a
//                          partial warp contribute the identity (0, -inf / lowest, +inf / max).
//                          max(a, b) = a < b ? b : a and min(a, b) = b < a ? b : a, so NaN
//                          handling is the same on both backends.
//   warp_prefix_sum(v)     inclusive prefix sum over lanes 0..lane (Scan::inclusive), or
//   warp_prefix_sum<Scan::exclusive>(v)   over lanes 0..lane-1 (lane 0 gets 0); a shuffle-up
//                          ladder (steps 1, 2, 4, 8, 16), so partial warps need nothing special.
//   ballot(pred)           bit i set when lane i's predicate is true; bits of missing lanes are 0
//   syncwarp()             the warp's lanes meet (__syncwarp)
// Reductions and scans take arithmetic types of 4 or 8 bytes; shuffles any of CUDA's shuffle
// types (4/8-byte arithmetic) - the CPU also takes trivially copyable values of up to 16 bytes.
//
// Blocks. Every thread of the block must call the same block collective (each contains barriers).
// They work for any block shape (1-D to 3-D, 1 to 1024 threads, partial last warp), use a little
// static shared memory of their own (at most 64 values), and may be called repeatedly and one
// after another without extra barriers.
//
//   block_sum(v), block_max(v), block_min(v)
//                          the reduction over all threads, returned to every thread: each warp
//                          reduces as warp_sum etc. do, then warp 0 reduces the warp results
//                          (warps beyond the block's count contribute the identity).
//   block_prefix_sum(v)    inclusive prefix sum in linear thread order; block_prefix_sum<
//                          Scan::exclusive>(v) leaves out the thread's own value (thread 0 gets
//                          0). Each thread's result is (sum of the earlier warps' totals, an
//                          exclusive warp_prefix_sum of the warp totals) + its warp prefix sum.
//   block_broadcast(v, src = 0)
//                          the value of the thread whose linear index is `src`; every thread
//                          keeps its own value when src >= the block's thread count.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <devctx/detail/base/config.hpp>
#include <devctx/detail/device/reduce_ops.hpp>
#include <devctx/kernel.hpp>

namespace devctx {
namespace detail {

DEVCTX_HD_INLINE unsigned block_linear_idx() {
  const Dim3 t = thread_idx(), d = block_dim();
  return t.x + d.x * (t.y + d.y * t.z);
}
DEVCTX_HD_INLINE unsigned block_threads() {
  const Dim3 d = block_dim();
  return d.x * d.y * d.z;
}

/// A reduction over the block: per warp, then over the warp results in warp 0. Slot 32 holds the
/// result apart from the warp results, so two barriers suffice between back-to-back calls: the
/// next call writes slots 0..31 only after this call's warp 0 has read them (second barrier),
/// and slot 32 only after every thread has read it (the next call's first barrier).
template <class Op, class T>
DEVCTX_DEVICE T block_reduce(T value) {
  DEVCTX_SHARED(T, devctx_block_partials, 33);
  const unsigned linear = block_linear_idx();
  const unsigned warps = (block_threads() + 31u) / 32u;
  const T mine = warp_reduce<Op>(value);
  if (linear % 32u == 0) devctx_block_partials[linear / 32u] = mine;
  barrier();
  if (linear < 32u) {
    T partial = linear < warps ? devctx_block_partials[linear] : Op::template identity<T>();
    partial = warp_reduce<Op>(partial);
    if (linear == 0) devctx_block_partials[32] = partial;
  }
  barrier();
  return devctx_block_partials[32];
}

}  // namespace detail

template <class T>
DEVCTX_DEVICE T block_sum(T value) {
  return detail::block_reduce<detail::SumOp>(value);
}
template <class T>
DEVCTX_DEVICE T block_max(T value) {
  return detail::block_reduce<detail::MaxOp>(value);
}
template <class T>
DEVCTX_DEVICE T block_min(T value) {
  return detail::block_reduce<detail::MinOp>(value);
}

/// Warp totals in slots 0..31, their exclusive prefix sums in 32..63 (apart, for back-to-back
/// calls, as in block_reduce).
template <Scan S = Scan::inclusive, class T>
DEVCTX_DEVICE T block_prefix_sum(T value) {
  DEVCTX_SHARED(T, devctx_block_scan, 64);
  const unsigned linear = detail::block_linear_idx(), threads = detail::block_threads();
  const unsigned warp = linear / 32u, lane = linear % 32u;
  const unsigned warps = (threads + 31u) / 32u;
  const unsigned width = threads - warp * 32u < 32u ? threads - warp * 32u : 32u;
  const T inclusive = warp_prefix_sum(value);
  if (lane == width - 1u) devctx_block_scan[warp] = inclusive;
  barrier();
  if (warp == 0) {
    const T total = lane < warps ? devctx_block_scan[lane] : T{};
    const T offset = warp_prefix_sum<Scan::exclusive>(total);
    if (lane < warps) devctx_block_scan[32u + lane] = offset;
  }
  barrier();
  const T offset = devctx_block_scan[32u + warp];
  if constexpr (S == Scan::inclusive) {
    return offset + inclusive;
  } else {
    const T before = shuffle_up(inclusive, 1);
    return offset + (lane == 0 ? T{} : before);
  }
}

template <class T>
DEVCTX_DEVICE T block_broadcast(T value, unsigned source_thread = 0) {
  DEVCTX_SHARED(T, devctx_block_broadcast, 1);
  if (source_thread >= detail::block_threads()) return value;  // the same branch in every thread
  if (detail::block_linear_idx() == source_thread) devctx_block_broadcast[0] = value;
  barrier();
  const T result = devctx_block_broadcast[0];
  barrier();  // before the next call may overwrite the slot
  return result;
}

}  // namespace devctx
