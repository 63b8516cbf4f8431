// SPDX-License-Identifier: Apache-2.0
// devctx/simd.hpp - SIMD<T, N>: a small vector of N elements (Mojo's SIMD, CUDA's float2/float4),
// aligned to its size so that a kernel loads and stores it whole: one 8- or 16-byte memory
// instruction on the GPU (ld.global.v4.f32 for SIMD<float, 4>; checked by the ctest
// simd_one_instruction in CUDA builds), and a vectorisable block of N elements on the CPU.
//
//   DeviceBuffer<float> d = ...;                       // 4 * n floats
//   ctx.enqueue_function<k>(cfg, d.view_as<SIMD<float, 4>>());   // kernel takes span<SIMD<float, 4>>
//   SIMD<float, 4> q = in[i]; q = q * 2.0f + q; out[i] = q;      // whole-vector loads and stores
//
// Element-wise +, -, *, / between vectors and with a scalar; [i] reads and writes element i;
// reduce_add() / reduce_max() / reduce_min() combine the elements in index order (the same on
// both backends). A trivially copyable aggregate: SIMD<float, 4>{{1, 2, 3, 4}}.
#pragma once

// The private devctx/detail/ headers refuse to be included unless a public header came first.
#define DEVCTX_DETAIL_HEADERS_OK 1

#include <cstddef>
#include <type_traits>

#include <devctx/detail/base/config.hpp>

namespace devctx {
namespace detail {
/// The alignment of SIMD<T, N>: its size when that is a power of two of at most 16 bytes (the
/// widest single GPU load), else 16 bytes when it is a multiple of 16, else T's own.
template <class T, std::size_t N>
constexpr std::size_t simd_alignment() {
  constexpr std::size_t bytes = sizeof(T) * N;
  if constexpr ((bytes & (bytes - 1)) == 0 && bytes <= 16)
    return bytes;
  else if constexpr (bytes % 16 == 0)
    return 16;
  else
    return alignof(T);
}
}  // namespace detail

template <class T, std::size_t N>
struct alignas(detail::simd_alignment<T, N>()) SIMD {
  static_assert(std::is_arithmetic_v<T> && N >= 1, "SIMD<T, N> holds N >= 1 arithmetic elements");
  using value_type = T;
  static constexpr std::size_t size = N;

  T elements[N];

  /// Every element set to `value`.
  DEVCTX_HD_INLINE static SIMD splat(T value) {
    SIMD r;
    for (std::size_t i = 0; i < N; ++i) r.elements[i] = value;
    return r;
  }
  DEVCTX_HD_INLINE T& operator[](std::size_t i) { return elements[i]; }
  DEVCTX_HD_INLINE const T& operator[](std::size_t i) const { return elements[i]; }

  DEVCTX_HD_INLINE T reduce_add() const {
    T r = elements[0];
    for (std::size_t i = 1; i < N; ++i) r = r + elements[i];
    return r;
  }
  DEVCTX_HD_INLINE T reduce_max() const {
    T r = elements[0];
    for (std::size_t i = 1; i < N; ++i) r = r < elements[i] ? elements[i] : r;
    return r;
  }
  DEVCTX_HD_INLINE T reduce_min() const {
    T r = elements[0];
    for (std::size_t i = 1; i < N; ++i) r = elements[i] < r ? elements[i] : r;
    return r;
  }

#define DEVCTX_SIMD_OPERATOR(op)                                                        \
  DEVCTX_HD_INLINE friend SIMD operator op(SIMD a, SIMD b) {                            \
    SIMD r;                                                                             \
    for (std::size_t i = 0; i < N; ++i) r.elements[i] = a.elements[i] op b.elements[i]; \
    return r;                                                                           \
  }                                                                                     \
  DEVCTX_HD_INLINE friend SIMD operator op(SIMD a, T b) { return a op splat(b); }       \
  DEVCTX_HD_INLINE friend SIMD operator op(T a, SIMD b) { return splat(a) op b; }       \
  DEVCTX_HD_INLINE SIMD& operator op##=(const SIMD & b) { return *this = *this op b; }  \
  DEVCTX_HD_INLINE SIMD& operator op##=(T b) { return *this = *this op b; }
  DEVCTX_SIMD_OPERATOR(+)
  DEVCTX_SIMD_OPERATOR(-)
  DEVCTX_SIMD_OPERATOR(*)
  DEVCTX_SIMD_OPERATOR(/)
#undef DEVCTX_SIMD_OPERATOR

  DEVCTX_HD_INLINE friend bool operator==(const SIMD& a, const SIMD& b) {
    for (std::size_t i = 0; i < N; ++i)
      if (!(a.elements[i] == b.elements[i])) return false;
    return true;
  }
};

}  // namespace devctx
