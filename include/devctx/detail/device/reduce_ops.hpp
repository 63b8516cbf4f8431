// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/reduce_ops.hpp - the combining operations of the warp and block
// reductions (sum, max, min) and their identities, shared by both backends so that each
// combines the same values in the same order and gets bitwise-identical results.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/reduce_ops.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/config.hpp>

namespace devctx::detail {

/// a + b; identity 0. Signed integers wrap as they do on the GPU (added as unsigned: a signed
/// overflow would be undefined behaviour in C++, and UBSan stops on it).
struct SumOp {
  template <class T>
  DEVCTX_HD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
  template <class T>
  DEVCTX_HD_INLINE static T identity() {
    return T{};
  }
};

/// The larger of a and b (a when neither is larger, so NaN in `a` sticks, as it does on both
/// backends alike); identity -infinity (the lowest value for integers).
struct MaxOp {
  template <class T>
  DEVCTX_HD_INLINE T operator()(T a, T b) const {
    return a < b ? b : a;
  }
  template <class T>
  DEVCTX_HD_INLINE static T identity() {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
};

/// The smaller of a and b (a when neither is smaller); identity +infinity (the largest value).
struct MinOp {
  template <class T>
  DEVCTX_HD_INLINE T operator()(T a, T b) const {
    return b < a ? b : a;
  }
  template <class T>
  DEVCTX_HD_INLINE static T identity() {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
};

/// The CPU's reduction of a warp's 32 lane values `v` (v[i] from lane i), in the order of the
/// GPU's xor butterfly (cuda.hpp's warp_reduce): at step m lane i combines op(own, lane i + m)
/// for i < m, the chain that ends in lane 0. Returns lane 0's result. The CPU backend's warp
/// collectives and the fission translator's twins (fission.hpp) both combine through it.
template <class Op, class T>
inline T warp_reduce_lanes(T (&v)[32]) {
  for (unsigned m = 16; m >= 1; m /= 2)
    for (unsigned i = 0; i < m; ++i) v[i] = Op{}(v[i], v[i + m]);
  return v[0];
}

/// The GPU's shuffle-up ladder (steps 1, 2, 4, 8, 16) over a warp's 32 lane values: v[i]
/// becomes lane i's inclusive prefix sum. Shared as warp_reduce_lanes is.
template <class T>
inline void warp_scan_lanes(T (&v)[32]) {
  for (unsigned d = 1; d < 32; d *= 2)
    for (unsigned i = 31; i >= d; --i) v[i] = v[i - d] + v[i];  // descending: v[i - d] is still the old value
}

/// Bytes of the warp-shuffled value types: warp collectives take arithmetic types of 4 or 8 bytes,
/// the widths a GPU shuffles in one or two instructions.
template <class T>
inline constexpr bool is_warp_arithmetic_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                                             (sizeof(T) == 4 || sizeof(T) == 8);

}  // namespace devctx::detail
