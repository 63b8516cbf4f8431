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
#include <source_location>
#include <type_traits>

#include <devctx/detail/cpu_state.hpp>
#include <devctx/span.hpp>

namespace devctx {

inline Dim3 thread_idx() { return detail::cpu::tls.thread_idx; }
inline Dim3 block_idx() { return detail::cpu::tls.block_idx; }
inline Dim3 block_dim() { return detail::cpu::tls.block_dim; }
inline Dim3 grid_dim() { return detail::cpu::tls.grid_dim; }

inline Idx3 global_idx() {
  const auto& s = detail::cpu::tls;
  return {std::uint64_t(s.block_idx.x) * s.block_dim.x + s.thread_idx.x,
          std::uint64_t(s.block_idx.y) * s.block_dim.y + s.thread_idx.y,
          std::uint64_t(s.block_idx.z) * s.block_dim.z + s.thread_idx.z};
}

/// The call site travels with the call, as checking mode compares the barrier() calls that
/// threads wait at (a pointer in a register: unchecked launches ignore it).
inline void barrier(std::source_location site = std::source_location::current()) { detail::cpu::barrier(site); }

template <class T>
span<T> dynamic_shared() {
  const auto& s = detail::cpu::tls;
  if (s.mode == detail::cpu::Mode::none) detail::cpu::not_in_kernel("devctx::dynamic_shared");
  return span<T>(reinterpret_cast<T*>(s.dynamic_shared), s.dynamic_shared_bytes / sizeof(T));
}

namespace detail::cpu {
/// Tells checking mode about an atomic, which it never counts in a race.
inline void note_atomic(const void* address, std::size_t bytes) {
  if (in_checked_launch()) [[unlikely]] checked_atomic(address, bytes);
}
}  // namespace detail::cpu

template <class T>
T atomic_add(T* address, T value) {
  static_assert(std::is_arithmetic_v<T>, "devctx::atomic_add takes an arithmetic type");
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

template <class T>
T atomic_max(T* address, T value) {
  detail::cpu::note_atomic(address, sizeof(T));
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (old < value && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

template <class T>
T atomic_min(T* address, T value) {
  detail::cpu::note_atomic(address, sizeof(T));
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (value < old && !ref.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}

template <class T>
T atomic_exchange(T* address, T value) {
  detail::cpu::note_atomic(address, sizeof(T));
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}

template <class T>
T atomic_cas(T* address, T expected, T desired) {
  detail::cpu::note_atomic(address, sizeof(T));
  std::atomic_ref<T>(*address).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
}

/// Orders this thread's memory accesses for other threads of the device (__threadfence).
inline void memory_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline unsigned lane_id() {
  const auto& s = detail::cpu::tls;
  const unsigned linear = s.thread_idx.x + s.block_dim.x * (s.thread_idx.y + s.block_dim.y * s.thread_idx.z);
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

/// Sum over the warp, returned to every lane. Adds in the same order as the GPU's xor
/// butterfly, so both backends give bitwise-identical results.
template <class T>
T warp_sum(T value) {
  static_assert(std::is_arithmetic_v<T>, "devctx::warp_sum takes an arithmetic type");
  const std::byte* slots = detail::cpu::warp_publish(&value, sizeof(T));
  const unsigned width = detail::cpu::warp_width();
  T v[32];
  for (unsigned i = 0; i < 32; ++i) {
    // A lane missing from a partial warp contributes its partner's value, as a GPU shuffle
    // from an inactive lane does not exist; partial warps should use shuffles with care.
    if (i < width) std::memcpy(&v[i], slots + i * detail::cpu::kWarpSlotBytes, sizeof(T));
    else v[i] = T{};
  }
  detail::cpu::warp_release();
  for (unsigned m = 16; m >= 1; m /= 2) {
    T next[32];
    for (unsigned i = 0; i < 32; ++i) next[i] = v[i] + v[i ^ m];
    std::memcpy(v, next, sizeof(v));
  }
  return v[lane_id()];
}

}  // namespace devctx

namespace devctx::detail::cpu {

template <class T, std::size_t N>
class SharedArray;
template <class T>
struct SharedElement {
  using type = T;
};
template <class T, std::size_t M>
struct SharedElement<T[M]> {
  using type = SharedArray<T, M>;
};

/// What DEVCTX_SHARED(T, name, N) names on the CPU: N elements of T laid out exactly as T[N]
/// (each row of a two-dimensional array is itself a SharedArray), used as the array is:
/// name[i], &name[i], name[y][x], name + i, name where a T* or a T(&)[N] is expected,
/// sizeof(name), range-for. It cannot be copied: `auto p = name;` does not compile (write
/// `T* p = name;`), where it would otherwise copy the array out of shared memory.
///
/// In a checked launch name[i] goes through checking mode (docs/checking.md); otherwise it costs
/// a test that the compiler moves out of the kernel's loops.
template <class T, std::size_t N>
class SharedArray {
 public:
  using element_type = typename SharedElement<T>::type;
  using array_type = T[N];

  SharedArray() = delete;  // never constructed: it names memory of the executor's arena
  SharedArray(const SharedArray&) = delete;
  SharedArray& operator=(const SharedArray&) = delete;

  element_type& operator[](std::size_t i) {
    if (in_checked_launch()) [[unlikely]] {
      if constexpr (std::is_array_v<T>)
        return *static_cast<element_type*>(checked_shared_row(elements_, i, N, sizeof(element_type)));
      else
        return *static_cast<element_type*>(checked_shared_element(elements_, i, N, sizeof(element_type)));
    }
    return elements_[i];
  }
  const element_type& operator[](std::size_t i) const { return const_cast<SharedArray&>(*this)[i]; }
  operator array_type&() noexcept { return reinterpret_cast<array_type&>(elements_); }  // NOLINT
  operator const array_type&() const noexcept { return reinterpret_cast<const array_type&>(elements_); }  // NOLINT
  [[nodiscard]] element_type* begin() noexcept { return elements_; }
  [[nodiscard]] element_type* end() noexcept { return elements_ + N; }
  [[nodiscard]] const element_type* begin() const noexcept { return elements_; }
  [[nodiscard]] const element_type* end() const noexcept { return elements_ + N; }
  [[nodiscard]] static constexpr std::size_t size() noexcept { return N; }

 private:
  element_type elements_[N];
};

}  // namespace devctx::detail::cpu

// The declaration's name, as a string, is also its site: the key under which the executor lays
// the array out, and what checking mode calls it.
#define DEVCTX_SHARED(T, name, count)                                                                     \
  static constexpr char devctx_shared_site_##name[] = #name;                                              \
  ::devctx::detail::cpu::SharedArray<T, (count)>& name = *static_cast<::devctx::detail::cpu::SharedArray<T, (count)>*>( \
      ::devctx::detail::cpu::shared_array(devctx_shared_site_##name, sizeof(T) * (count), alignof(T)))
