// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/cpu.hpp - kernel-side functions as the CPU backend runs them.
// Included by kernel.hpp for every pass except nvcc's device pass.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/cpu.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/detail/device/atomic_types.hpp>
#include <devctx/detail/device/reduce_ops.hpp>
#include <devctx/span.hpp>

namespace devctx {

inline Dim3 thread_idx() { return detail::cpu::tls.thread_idx; }
inline Dim3 block_idx() { return detail::cpu::tls.block_idx; }
inline Dim3 block_dim() { return detail::cpu::tls.block_dim; }
inline Dim3 grid_dim() { return detail::cpu::tls.grid_dim; }

inline Idx3 global_idx() {
  using detail::cpu::tls;  // by name, never bound to a reference: see cpu_state.hpp
  return {std::uint64_t(tls.block_idx.x) * tls.block_dim.x + tls.thread_idx.x,
          std::uint64_t(tls.block_idx.y) * tls.block_dim.y + tls.thread_idx.y,
          std::uint64_t(tls.block_idx.z) * tls.block_dim.z + tls.thread_idx.z};
}

/// The call site travels with the call, as checking mode compares the barrier() calls that
/// threads wait at (its address in a register: unchecked launches ignore it).
inline void barrier(const detail::SourceSite& site = detail::SourceSite::current()) { detail::cpu::barrier(site); }

template <class T>
span<T> dynamic_shared() {
  using detail::cpu::tls;
  if (tls.mode == detail::cpu::Mode::none) detail::cpu::not_in_kernel("devctx::dynamic_shared");
  return span<T>(reinterpret_cast<T*>(tls.dynamic_shared), tls.dynamic_shared_bytes / sizeof(T));
}

// Atomics: std::atomic_ref, relaxed order (as CUDA's atomic* functions), return the old value.
namespace detail::cpu {
/// Tells checking mode about an atomic, which it never counts in a race.
inline void note_atomic(const void* address, std::size_t bytes) {
  if (in_checked_launch()) [[unlikely]]
    checked_atomic(address, bytes);
}
}  // namespace detail::cpu

template <class T>
T atomic_add(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_add");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

template <class T>
T atomic_sub(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_sub");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_sub(value, std::memory_order_relaxed);
}

namespace detail::cpu {
/// Replaces the value by next(old) until that succeeds; returns the old value.
template <class T, class Next>
T atomic_update(T* address, Next next) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (!ref.compare_exchange_weak(old, next(old), std::memory_order_relaxed)) {
  }
  return old;
}
}  // namespace detail::cpu

template <class T>
T atomic_max(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_max");
  detail::cpu::note_atomic(address, sizeof(T));
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (old < value && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

template <class T>
T atomic_min(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_min");
  detail::cpu::note_atomic(address, sizeof(T));
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (value < old && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

template <class T>
T atomic_and(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_and");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_and(value, std::memory_order_relaxed);
}

template <class T>
T atomic_or(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_or");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_or(value, std::memory_order_relaxed);
}

template <class T>
T atomic_xor(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_INTEGER(T, "devctx::atomic_xor");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_xor(value, std::memory_order_relaxed);
}

template <class T>
T atomic_inc(T* address, std::type_identity_t<T> limit) {
  DEVCTX_ATOMIC_UNSIGNED(T, "devctx::atomic_inc");
  detail::cpu::note_atomic(address, sizeof(T));
  return detail::cpu::atomic_update(address, [limit](T old) { return old >= limit ? T{0} : T(old + 1); });
}

template <class T>
T atomic_dec(T* address, std::type_identity_t<T> limit) {
  DEVCTX_ATOMIC_UNSIGNED(T, "devctx::atomic_dec");
  detail::cpu::note_atomic(address, sizeof(T));
  return detail::cpu::atomic_update(address, [limit](T old) { return old == 0 || old > limit ? limit : T(old - 1); });
}

template <class T>
T atomic_exchange(T* address, std::type_identity_t<T> value) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_exchange");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}

template <class T>
T atomic_cas(T* address, std::type_identity_t<T> expected, std::type_identity_t<T> desired) {
  DEVCTX_ATOMIC_ARITHMETIC(T, "devctx::atomic_cas");
  detail::cpu::note_atomic(address, sizeof(T));
  // Compares the bytes (value representations), as the GPU compares bit patterns.
  std::atomic_ref<T>(*address).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
}

/// Orders this thread's memory accesses for other threads of the device (__threadfence).
inline void memory_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
/// CUDA's name for memory_fence().
inline void threadfence() { memory_fence(); }

inline unsigned lane_id() {
  using detail::cpu::tls;
  const unsigned linear = tls.thread_idx.x + tls.block_dim.x * (tls.thread_idx.y + tls.block_dim.y * tls.thread_idx.z);
  return linear % 32u;
}

namespace detail::cpu {
template <class T>
T warp_read(T value, unsigned source_lane) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kWarpSlotBytes,
                "warp operations take trivially copyable values of at most 16 bytes");
  const std::byte* slots = warp_publish(&value, sizeof(T));
  T result = value;
  if (source_lane < warp_width()) std::memcpy(&result, slots + source_lane * kWarpSlotBytes, sizeof(T));
  warp_release();
  return result;
}
}  // namespace detail::cpu

template <class T>
T shuffle(T value, unsigned source_lane) {
  return detail::cpu::warp_read(value, source_lane % 32u);
}

template <class T>
T shuffle_down(T value, unsigned delta) {
  return detail::cpu::warp_read(value, lane_id() + delta);
}

template <class T>
T shuffle_up(T value, unsigned delta) {
  const unsigned lane = lane_id();
  return detail::cpu::warp_read(value, delta <= lane ? lane - delta : lane);
}

template <class T>
T shuffle_xor(T value, unsigned mask) {
  const unsigned lane = lane_id();
  const unsigned source = lane ^ mask;
  return detail::cpu::warp_read(value, source < 32u ? source : lane);
}

namespace detail::cpu {
/// The warp's values, one per lane; lanes missing from a partial last warp hold `fill`.
template <class T>
void warp_gather(T value, T fill, T (&v)[32]) {
  const std::byte* slots = warp_publish(&value, sizeof(T));
  const unsigned width = warp_width();
  for (unsigned i = 0; i < 32; ++i) {
    if (i < width)
      std::memcpy(&v[i], slots + i * kWarpSlotBytes, sizeof(T));
    else
      v[i] = fill;
  }
  warp_release();
}

/// Lane 0's result of the GPU's xor butterfly (reduce_ops.hpp's warp_reduce_lanes).
template <class Op, class T>
T warp_reduce(T value) {
  static_assert(is_warp_arithmetic_v<T>, "warp and block reductions take arithmetic types of 4 or 8 bytes");
  T v[32];
  warp_gather(value, Op::template identity<T>(), v);
  return warp_reduce_lanes<Op>(v);
}

/// The inclusive prefix sum of lane `lane` as the GPU's shuffle-up ladder computes it
/// (reduce_ops.hpp's warp_scan_lanes).
template <class T>
T warp_scan(T value, unsigned lane) {
  static_assert(is_warp_arithmetic_v<T>, "warp and block prefix sums take arithmetic types of 4 or 8 bytes");
  T v[32];
  warp_gather(value, T{}, v);
  warp_scan_lanes(v);
  return v[lane];
}
}  // namespace detail::cpu

namespace detail {
/// The warp reduction with `Op` (the block collectives of devctx/collectives.hpp build on it).
template <class Op, class T>
T warp_reduce(T value) {
  return cpu::warp_reduce<Op>(value);
}
}  // namespace detail

template <class T>
T warp_sum(T value) {
  return detail::cpu::warp_reduce<detail::SumOp>(value);
}
template <class T>
T warp_max(T value) {
  return detail::cpu::warp_reduce<detail::MaxOp>(value);
}
template <class T>
T warp_min(T value) {
  return detail::cpu::warp_reduce<detail::MinOp>(value);
}

template <Scan S = Scan::inclusive, class T>
T warp_prefix_sum(T value) {
  const unsigned lane = lane_id();
  if constexpr (S == Scan::inclusive) {
    return detail::cpu::warp_scan(value, lane);
  } else {
    const T inclusive = detail::cpu::warp_scan(value, lane == 0 ? 0u : lane - 1);
    return lane == 0 ? T{} : inclusive;
  }
}

template <class T>
T shuffle_idx(T value, unsigned source_lane) {
  return shuffle(value, source_lane);
}

template <class T>
T warp_broadcast(T value) {
  return shuffle(value, 0);
}

inline std::uint32_t ballot(bool predicate) {
  bool v[32];
  detail::cpu::warp_gather(predicate, false, v);
  std::uint32_t bits = 0;
  for (unsigned i = 0; i < 32; ++i) bits |= std::uint32_t(v[i]) << i;
  return bits;
}

inline void syncwarp() {
  const char none = 0;
  (void)detail::cpu::warp_publish(&none, 1);
  detail::cpu::warp_release();
}

}  // namespace devctx

// What DEVCTX_SHARED(T, name, n) declares on the CPU backend (and in nvcc's host pass): `name` is
// a reference to a T[n] in the executor's shared-memory arena, so that it is used exactly as the
// __shared__ T name[n] of CUDA's device pass: it decays to T*, deduces as T[n] (`T (&)[N]`) and
// as T* in templates, and works with sizeof, std::size, std::begin, range-for and pointer
// arithmetic. T may itself be an array type (`DEVCTX_SHARED(float[16], tile, 16)`, or a `using
// Row = float[16];`) for a two-dimensional `tile[y][x]`. The one difference from CUDA: the
// unparenthesized `decltype(name)` is `T(&)[n]` here and `T[n]` there; `decltype((name))` and
// std::remove_reference_t<decltype(name)> agree. Nothing checks an access on its way: checking
// mode finds out-of-bounds indices by guard pages and races by comparing memory
// (docs/checking.md), so the unchecked code is what it would be without checking mode.
//
// The declaration's name, as a string, is also its site: the key under which the executor lays
// the array out, and what checking mode calls it.
#define DEVCTX_SHARED(T, name, count)                                                                 \
  static constexpr char devctx_shared_site_##name[] = #name;                                          \
  ::std::type_identity_t<T>(&name)[(count)] = *static_cast<::std::type_identity_t<T>(*)[(count)]>(    \
      ::devctx::detail::cpu::shared_array(devctx_shared_site_##name, sizeof(T) * (count), alignof(T), \
                                          sizeof(::std::remove_all_extents_t<T>)))
