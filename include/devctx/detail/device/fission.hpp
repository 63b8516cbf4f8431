// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/fission.hpp - what a translated kernel's block-level twin needs at run
// time on the CPU backend (docs/cpu-backend.md, "Translated kernels"): the offer a plain-loop
// runner makes for each block, the twin's thread loops, the thread ranges that guards on the
// thread index become, and the warp operations and block collectives over per-thread arrays,
// computed in the fibers' order (reduce_ops.hpp) so that results are bitwise the same. Host code
// only; the fission translator (tools/fission) writes the calls.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/fission.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

// Parsed by every pass, nvcc's device pass too (as cpu_state.hpp): the CPU runners that name it
// are parsed there, never emitted.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <devctx/detail/base/config.hpp>
#include <devctx/detail/base/cpu_state.hpp>
#include <devctx/detail/device/reduce_ops.hpp>

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
  /// Set by the executor with each offer: the blocks from the offered one on along x (the same
  /// y and z, all of them the running worker's) that a map twin may run in the same call.
  std::uint32_t range = 1;
  /// Set by a map twin that ran more blocks than the offered one (fission::map_blocks): how
  /// many; the executor resets it to 1.
  std::uint32_t ran = 1;
};

extern constinit thread_local FissionSlot fission_slot;

/// A translated kernel's prologue: true when the running block was offered to `self`, which
/// then runs its twin for the whole block and returns.
template <class F>
[[nodiscard]] inline bool take_fission_offer(F* self) noexcept {
  if (fission_slot.offer != reinterpret_cast<FissionId>(self)) [[likely]]
    return false;
  fission_slot.offer = nullptr;
  fission_slot.taken = true;
  return true;
}

/// Whether the running block is being offered to `self` (a prologue whose twin holds only under
/// run-time conditions asks first, then takes the offer or declines it).
template <class F>
[[nodiscard]] inline bool fission_offered(F* self) noexcept {
  return fission_slot.offer == reinterpret_cast<FissionId>(self);
}

/// A kernel the translator declined: records why when offered, and runs on as before.
template <class F>
inline void decline_fission_offer(F* self, const char* reason) noexcept {
  if (fission_slot.offer != reinterpret_cast<FissionId>(self)) [[likely]]
    return;
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

/// The blocks a map twin whose code tells blocks apart only by the index runs in this call: the
/// executor's run of blocks along x (FissionSlot::range) when blocks are 1-D, since their
/// threads' global x indices are then consecutive across the run; else the offered one. The
/// executor skips the blocks it says were run. One call per run saves the executor's per-block
/// work (about 40 ns a block, a sixth of a 256-thread vector add's block).
[[nodiscard]] inline std::uint64_t map_blocks() noexcept {
  if (tls.block_dim.y != 1 || tls.block_dim.z != 1) return 1;
  fission_slot.ran = fission_slot.range;
  return fission_slot.range;
}

/// A map kernel's twin (the translator's MapKernel): runs `f(x)` for x in [0, x_end) of every row
/// of the block, rows in the plain loop's order; over `blocks` > 1 consecutive 1-D blocks
/// (map_blocks), x runs on across them. With `SetIndex` false the copied code provably reads no
/// thread index but through `x`, so nothing is stored per thread and the loop over x is one the
/// compiler can vectorise.
template <bool SetIndex, class F>
[[gnu::always_inline]] inline void map_threads(std::size_t x_end, std::uint64_t blocks, F&& f) {
  const Dim3 d = tls.block_dim;  // tls by name, never bound to a reference: see cpu_state.hpp
  if (d.x > 1024 || d.y > 1024 || d.z > 1024) __builtin_unreachable();
  if constexpr (!SetIndex) {
    if (blocks > 1) {
      DEVCTX_IVDEP
      for (std::size_t x = 0; x < x_end; ++x) f(x);
      return;
    }
  }
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

/// The threads x of `blocks` consecutive blocks for which `T(base + x) < u` (`<=` when Inclusive)
/// holds are [0, global_end): `base` is the first block's first global x index (below 2^42, so
/// exact in T, a 64-bit integer type); the comparison is made in the guard's own type, as the
/// kernel makes it.
template <class T, bool Inclusive, class U>
[[nodiscard]] inline std::size_t global_end(U u, std::uint64_t base, std::uint64_t blocks = 1) noexcept {
  static_assert(std::is_integral_v<T> && sizeof(T) == 8 && std::is_integral_v<U>);
  const std::size_t limit = std::size_t(tls.block_dim.x) * blocks;
  using C = Common<T, U>;
  const C c = C(u), b = C(T(base));
  if (c < b || (!Inclusive && c == b)) return 0;
  const auto room = std::uint64_t(c - b);  // threads past x = 0 the guard still admits
  if (room >= limit) return limit;
  return std::size_t(room) + (Inclusive ? 1 : 0);
}

/// `x()` at the block's first thread (0, 0, 0) and at its last (every component at its largest):
/// {lo, hi}. `x` reads the thread index through the thread-local state; the translator passes
/// only sums of thread index components and block-uniform values (its `affine`), non-decreasing
/// in each component unless an unsigned addition wraps, and then hi < lo. So lo <= hi and
/// `hi < bound` mean every thread of the block compares below the bound. The thread index is
/// restored.
template <class X>
[[nodiscard]] inline auto corner_values(X&& x) {
  const Dim3 saved = tls.thread_idx;
  const Dim3 d = tls.block_dim;
  tls.thread_idx = Dim3{0, 0, 0};
  const auto lo = x();
  tls.thread_idx = Dim3{d.x - 1, d.y - 1, d.z - 1};
  const auto hi = x();
  tls.thread_idx = saved;
  return std::pair{lo, hi};
}

// ---- warp operations and block collectives over per-thread arrays ------------------------------
// A twin evaluates a collective's arguments for every thread of the block into per-thread arrays
// (indexed by the linear thread index, the rank), calls one of these, and reads each thread's
// result back in the next stretch. Each gives every thread what the CPU backend's fiber path
// (detail/device/cpu.hpp, collectives.hpp) gives it, bitwise: lanes missing from a partial last
// warp as there, the same combining order. `active`, where not null, is the per-thread flag of a
// warp-uniform condition the collective sits under: warps whose lane 0 has it clear are skipped.
// Arguments that are the same for the whole block come as values, others as arrays.

/// The `rank`th thread's value of an argument: an array element, or the block-uniform value.
template <class A>
[[nodiscard, gnu::always_inline]] inline auto arg(const A& a, std::size_t rank) noexcept {
  if constexpr (std::is_pointer_v<A>)
    return a[rank];
  else
    return a;
}

/// Calls f(warp_base, width) for each warp of the block that takes part.
template <class F>
[[gnu::always_inline]] inline void each_warp(const unsigned char* active, F&& f) {
  const std::size_t n = block_threads();
  for (std::size_t w = 0; w < n; w += 32)
    if (active == nullptr || active[w] != 0) f(w, n - w < 32 ? n - w : std::size_t{32});
}

/// warp_sum / warp_max / warp_min: every lane gets its warp's reduction.
template <class Op, class T>
void warp_reduce(const unsigned char* active, const T* in, T* out) {
  each_warp(active, [&](std::size_t w, std::size_t width) {
    T v[32];
    for (std::size_t i = 0; i < 32; ++i) v[i] = i < width ? in[w + i] : Op::template identity<T>();
    const T r = ::devctx::detail::warp_reduce_lanes<Op>(v);
    for (std::size_t i = 0; i < width; ++i) out[w + i] = r;
  });
}

/// warp_prefix_sum (inclusive, or exclusive: lane 0 gets T{}).
template <bool Exclusive, class T>
void warp_prefix_sum(const unsigned char* active, const T* in, T* out) {
  each_warp(active, [&](std::size_t w, std::size_t width) {
    T v[32];
    for (std::size_t i = 0; i < 32; ++i) v[i] = i < width ? in[w + i] : T{};
    ::devctx::detail::warp_scan_lanes(v);
    for (std::size_t i = 0; i < width; ++i) out[w + i] = Exclusive ? (i == 0 ? T{} : v[i - 1]) : v[i];
  });
}

/// A shuffle: lane i gets the value of lane source(i, its argument), or its own value when that
/// lane does not exist (>= the warp's width), as cpu.hpp's warp_read.
template <class T, class A, class Source>
[[gnu::always_inline]] inline void shuffle_by(const unsigned char* active, const T* in, const A& a, T* out, Source source) {
  each_warp(active, [&](std::size_t w, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
      const unsigned s = source(unsigned(i), unsigned(arg(a, w + i)));
      out[w + i] = s < width ? in[w + s] : in[w + i];
    }
  });
}
template <class T, class A>
void shuffle(const unsigned char* active, const T* in, const A& lane, T* out) {
  shuffle_by(active, in, lane, out, [](unsigned, unsigned l) { return l % 32u; });
}
template <class T, class A>
void shuffle_down(const unsigned char* active, const T* in, const A& delta, T* out) {
  shuffle_by(active, in, delta, out, [](unsigned lane, unsigned d) { return lane + d; });
}
template <class T, class A>
void shuffle_up(const unsigned char* active, const T* in, const A& delta, T* out) {
  shuffle_by(active, in, delta, out, [](unsigned lane, unsigned d) { return d <= lane ? lane - d : lane; });
}
template <class T, class A>
void shuffle_xor(const unsigned char* active, const T* in, const A& mask, T* out) {
  shuffle_by(active, in, mask, out, [](unsigned lane, unsigned m) {
    const unsigned s = lane ^ m;
    return s < 32u ? s : lane;
  });
}

/// ballot: bit i of every lane's result is lane i's predicate (missing lanes 0).
inline void ballot(const unsigned char* active, const bool* in, std::uint32_t* out) {
  each_warp(active, [&](std::size_t w, std::size_t width) {
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < width; ++i) bits |= std::uint32_t(in[w + i]) << i;
    for (std::size_t i = 0; i < width; ++i) out[w + i] = bits;
  });
}

/// block_sum / block_max / block_min (collectives.hpp's block_reduce): each warp's reduction,
/// then warp 0's reduction of those (warps beyond the block's count contribute the identity).
template <class Op, class T>
[[nodiscard]] T block_reduce(const T* in) {
  T partial[32];
  std::size_t warps = 0;
  each_warp(nullptr, [&](std::size_t w, std::size_t width) {
    T v[32];
    for (std::size_t i = 0; i < 32; ++i) v[i] = i < width ? in[w + i] : Op::template identity<T>();
    partial[warps++] = ::devctx::detail::warp_reduce_lanes<Op>(v);
  });
  for (std::size_t i = warps; i < 32; ++i) partial[i] = Op::template identity<T>();
  return ::devctx::detail::warp_reduce_lanes<Op>(partial);
}

/// block_prefix_sum (collectives.hpp): each warp's inclusive scan, warp 0's exclusive scan of
/// the warp totals, then the warp's offset plus the thread's (inclusive or exclusive) value.
template <bool Exclusive, class T>
void block_prefix_sum(const T* in, T* out) {
  T totals[32];
  std::size_t warps = 0;
  each_warp(nullptr, [&](std::size_t w, std::size_t width) {
    T v[32];
    for (std::size_t i = 0; i < 32; ++i) v[i] = i < width ? in[w + i] : T{};
    ::devctx::detail::warp_scan_lanes(v);
    for (std::size_t i = 0; i < width; ++i) out[w + i] = v[i];
    totals[warps++] = v[width - 1];
  });
  for (std::size_t i = warps; i < 32; ++i) totals[i] = T{};
  ::devctx::detail::warp_scan_lanes(totals);  // warp 0's inclusive scan; lane i's exclusive is [i - 1]
  std::size_t k = 0;
  each_warp(nullptr, [&](std::size_t w, std::size_t width) {
    const T offset = k == 0 ? T{} : totals[k - 1];
    ++k;
    if constexpr (Exclusive) {
      for (std::size_t i = width; i-- > 0;) out[w + i] = offset + (i == 0 ? T{} : out[w + i - 1]);
    } else {
      for (std::size_t i = 0; i < width; ++i) out[w + i] = offset + out[w + i];
    }
  });
}

/// block_broadcast: the value of the thread whose rank is the source; every thread keeps its
/// own when the source is not a thread of the block.
template <class T, class A>
void block_broadcast(const T* in, const A& source, T* out) {
  const std::size_t n = block_threads();
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t s = std::size_t(unsigned(arg(source, r)));
    out[r] = s < n ? in[s] : in[r];
  }
}

}  // namespace fission
}  // namespace devctx::detail::cpu
