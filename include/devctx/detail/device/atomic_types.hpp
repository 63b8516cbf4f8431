// SPDX-License-Identifier: Apache-2.0
// devctx/detail/device/atomic_types.hpp - which element types each kernel atomic accepts, one
// rule for both backends so that a kernel that compiles for the CPU compiles for the GPU too.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/device/atomic_types.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

namespace devctx::detail {

/// 32- and 64-bit integers (signed or not).
template <class T>
inline constexpr bool is_atomic_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                            (sizeof(T) == 4 || sizeof(T) == 8);
/// 32- and 64-bit unsigned integers (atomic_inc, atomic_dec).
template <class T>
inline constexpr bool is_atomic_unsigned_v = is_atomic_integer_v<T> && std::is_unsigned_v<T>;
/// The integers above, float and double (add, sub, min, max, exchange, compare-exchange).
template <class T>
inline constexpr bool is_atomic_arithmetic_v = is_atomic_integer_v<T> || std::is_same_v<T, float> ||
                                               std::is_same_v<T, double>;

}  // namespace devctx::detail

#define DEVCTX_ATOMIC_ARITHMETIC(T, fn) \
  static_assert(::devctx::detail::is_atomic_arithmetic_v<T>, fn " takes 32/64-bit integers, float or double")
#define DEVCTX_ATOMIC_INTEGER(T, fn) \
  static_assert(::devctx::detail::is_atomic_integer_v<T>, fn " takes 32/64-bit integers")
#define DEVCTX_ATOMIC_UNSIGNED(T, fn) \
  static_assert(::devctx::detail::is_atomic_unsigned_v<T>, fn " takes 32/64-bit unsigned integers")
