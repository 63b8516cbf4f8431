// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/fission.hpp - what a translated kernel's block-level twin needs at run
// time on the CPU backend (docs/cpu-backend.md, "Translated kernels"): the offer a plain-loop
// runner makes for each block, the twin's thread loops, and the thread ranges that guards on the
// thread index become. Host code only; the fission translator (tools/fission) writes the calls.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/fission.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

// Parsed by every pass, nvcc's device pass too (as cpu_state.hpp): the CPU runners that name it
// are parsed there, never emitted.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <devctx/detail/base/config.hpp>
#include <devctx/detail/base/cpu_state.hpp>

namespace devctx::detail::cpu {

/// A kernel function's identity, as the runner offers it and a prologue names itself.
using FissionId = void (*)();

/// Per worker thread: the offer of the running block to a translated twin.
struct FissionSlot {
  /// Set per launch by the executor: offers are made (an unchecked launch, DEVCTX_CPU_FISSION
  /// not 0).
  bool enabled = false;
  /// Set by a prologue that took the offer: the twin ran the whole block.
  bool taken = false;
  /// The kernel whose thread (0, 0, 0) is about to run with the offer, else null. Cleared when
  /// taken, when declined, when the block goes cooperative and after thread (0, 0, 0) returns.
  FissionId offer = nullptr;
  /// Why the translator left the offered kernel on fibers (a static string), once its
  /// prologue has said so; read by the executor after the block.
  const char* declined = nullptr;
};

extern constinit thread_local FissionSlot fission_slot;

/// A translated kernel's prologue: true when the running block was offered to `self`, which
/// then runs its twin for the whole block and returns.
template <class F>
[[nodiscard]] inline bool take_fission_offer(F* self) noexcept {
  if (fission_slot.offer != reinterpret_cast<FissionId>(self)) [[likely]] return false;
  fission_slot.offer = nullptr;
  fission_slot.taken = true;
  return true;
}

/// A kernel the translator declined: records why when offered, and runs on as before.
template <class F>
inline void decline_fission_offer(F* self, const char* reason) noexcept {
  if (fission_slot.offer != reinterpret_cast<FissionId>(self)) [[likely]] return;
  fission_slot.offer = nullptr;
  fission_slot.declined = reason;
}

/// Why the fission translator did not process kernel files of this program, as its build
/// said (DEVCTX_FISSION_OFF_REASON, which devctx_add_kernels defines for a kernel file when the
/// translator is off); the trace names it for kernels left on fibers. Returns true.
bool note_fission_off(const char* why) noexcept;
/// The first reason noted, else null.
[[nodiscard]] const char* fission_off_reason() noexcept;

#if defined(DEVCTX_FISSION_OFF_REASON) && !defined(__CUDA_ARCH__)
/// Once per program that compiles a kernel file the translator did not process.
inline const bool fission_off_noted = note_fission_off(DEVCTX_FISSION_OFF_REASON);
#endif

namespace fission {

/// Runs `f(rank)` for every thread of the block whose x lies in [x_begin, x_end) (clamped to
/// the block), x fastest, with tls.thread_idx set as the fibers would have it: a region of a
/// twin between two barriers. 64-bit indices and ivdep, as Block::for_each_thread.
template <class F>
[[gnu::always_inline]] inline void threads(std::size_t x_begin, std::size_t x_end, F&& f) {
  const Dim3 d = tls.block_dim;  // tls by name, never bound to a reference: see cpu_state.hpp
  // No dimension of a block exceeds 1024 threads: with that, the compiler can tell that 32-bit
  // index arithmetic on the thread index (`ty * 16 + tx`) does not wrap, and vectorise.
  if (d.x > 1024 || d.y > 1024 || d.z > 1024) __builtin_unreachable();
  if (x_end > d.x) x_end = d.x;
  if (d.y == 1 && d.z == 1) {
    tls.thread_idx.y = 0;
    tls.thread_idx.z = 0;
    DEVCTX_IVDEP
    for (std::size_t x = x_begin; x < x_end; ++x) {
      tls.thread_idx.x = unsigned(x);
      f(x);
      tls.thread_idx.x = unsigned(x);
    }
    return;
  }
  std::size_t row = 0;
  for (std::size_t z = 0; z < d.z; ++z) {
    for (std::size_t y = 0; y < d.y; ++y, row += d.x) {
      tls.thread_idx.z = unsigned(z);
      tls.thread_idx.y = unsigned(y);
      DEVCTX_IVDEP
      for (std::size_t x = x_begin; x < x_end; ++x) {
        tls.thread_idx.x = unsigned(x);
        f(row + x);
        tls.thread_idx.x = unsigned(x);
      }
    }
  }
}

/// Threads of the block (x * y * z).
[[nodiscard]] inline std::size_t block_threads() noexcept {
  const Dim3 d = tls.block_dim;
  return std::size_t(d.x) * d.y * d.z;
}

/// A value per thread that lives across a barrier: one T per thread of the block, from the
/// executor's per-thread arena (reset for every block), indexed by rank.
template <class T>
[[nodiscard]] inline T* per_thread() {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "a twin keeps only trivially copyable values across barriers");
  return static_cast<T*>(per_thread_storage(sizeof(T) * block_threads(), alignof(T)));
}

/// The comparison type of `T(x) op u`: x's type T (what the kernel's index variable has) against
/// the bound's type U, after C++'s usual arithmetic conversions.
template <class T, class U>
using Common = decltype(T{} + U{});

/// The threads x < d for which `T(x) < u` holds are [0, lt_end) (x small, u integral).
template <class T, class U>
[[nodiscard]] inline std::size_t lt_end(U u, std::size_t limit) noexcept {
  static_assert(std::is_integral_v<T> && std::is_integral_v<U>);
  using C = Common<T, U>;
  const C c = C(u);
  if (!(C(0) < c)) return 0;
  return C(limit) <= c ? limit : std::size_t(c);
}

/// The threads for which `T(x) >= u` holds are [ge_begin, limit).
template <class T, class U>
[[nodiscard]] inline std::size_t ge_begin(U u, std::size_t limit) noexcept {
  return lt_end<T>(u, limit);
}

/// The threads for which `T(x) <= u` holds are [0, le_end).
template <class T, class U>
[[nodiscard]] inline std::size_t le_end(U u, std::size_t limit) noexcept {
  static_assert(std::is_integral_v<T> && std::is_integral_v<U>);
  using C = Common<T, U>;
  const C c = C(u);
  if constexpr (std::is_signed_v<C>)
    if (c < C(0)) return 0;
  return C(limit) <= c ? limit : std::size_t(c) + 1;
}

/// The thread for which `T(x) == u` holds: [eq_begin, eq_begin + 1) when eq_begin < limit.
template <class T, class U>
[[nodiscard]] inline std::size_t eq_begin(U u, std::size_t limit) noexcept {
  static_assert(std::is_integral_v<T> && std::is_integral_v<U>);
  using C = Common<T, U>;
  const C c = C(u);
  if constexpr (std::is_signed_v<C>)
    if (c < C(0)) return limit;
  if (C(limit) <= c) return limit;
  return std::size_t(c);
}

/// A map kernel's twin (the translator's MapKernel): runs `f(x)` for x in [0, x_end) of every row
/// of the block, rows in the plain loop's order. With `SetIndex` false the copied code provably
/// reads no thread index but through `x`, so nothing is stored per thread and the loop over x
/// is one the compiler can vectorise.
template <bool SetIndex, class F>
[[gnu::always_inline]] inline void map_threads(std::size_t x_end, F&& f) {
  const Dim3 d = tls.block_dim;  // tls by name, never bound to a reference: see cpu_state.hpp
  if (d.x > 1024 || d.y > 1024 || d.z > 1024) __builtin_unreachable();
  if (x_end > d.x) x_end = d.x;
  for (unsigned z = 0; z < d.z; ++z) {
    for (unsigned y = 0; y < d.y; ++y) {
      if constexpr (SetIndex) {
        tls.thread_idx.z = z;
        tls.thread_idx.y = y;
      }
      DEVCTX_IVDEP
      for (std::size_t x = 0; x < x_end; ++x) {
        if constexpr (SetIndex) tls.thread_idx.x = unsigned(x);
        f(x);
        if constexpr (SetIndex) tls.thread_idx.x = unsigned(x);
      }
    }
  }
}

/// The threads x of the block for which `T(base + x) < u` holds are [0, global_lt_end): `base`
/// is the block's first global x index (below 2^42, so exact in T, a 64-bit integer type).
template <class T, class U>
[[nodiscard]] inline std::size_t global_lt_end(U u, std::uint64_t base) noexcept {
  static_assert(std::is_integral_v<T> && sizeof(T) == 8 && std::is_integral_v<U>);
  const std::size_t limit = tls.block_dim.x;
  using C = Common<T, U>;
  const C c = C(u), b = C(T(base));
  if (!(b < c)) return 0;
  const auto room = std::uint64_t(c - b);
  return room < limit ? std::size_t(room) : limit;
}

/// The threads x for which `T(base + x) <= u` holds are [0, global_le_end).
template <class T, class U>
[[nodiscard]] inline std::size_t global_le_end(U u, std::uint64_t base) noexcept {
  static_assert(std::is_integral_v<T> && sizeof(T) == 8 && std::is_integral_v<U>);
  const std::size_t limit = tls.block_dim.x;
  using C = Common<T, U>;
  const C c = C(u), b = C(T(base));
  if (c < b) return 0;
  const auto room = std::uint64_t(c - b);
  return room < limit ? std::size_t(room) + 1 : limit;
}

}  // namespace fission
}  // namespace devctx::detail::cpu
