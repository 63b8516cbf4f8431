// SPDX-License-Identifier: Apache-2.0
// devctx/detail/base/std.hpp - the standard library that devctx's kernel-side headers use, in one
// place. Under nvcc and the host compiler: the standard headers. Under NVRTC (__CUDACC_RTC__),
// which compiles device code alone and ships no C++ standard library: libcu++'s cuda::std
// equivalents (the CUDA toolkit's include/cccl), with the names devctx's headers and kernels use
// declared in namespace std, so that the same source (`std::size_t`, `std::is_same_v`, ...)
// compiles under all three. Host-only headers (seam.hpp, cpu_state.hpp) stay out of NVRTC's path.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/base/std.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/kernel.hpp>) instead"
#endif

#if defined(__CUDACC_RTC__)

#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/optional>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

// What a runtime-compiled kernel may name in std:: under NVRTC (docs/runtime-kernels.md).
namespace std {
// <cstddef>, <cstdint>
using ::cuda::std::byte;
using ::cuda::std::max_align_t;
using ::cuda::std::nullptr_t;
using ::cuda::std::ptrdiff_t;
using ::cuda::std::size_t;
// The fixed-width integers exactly as glibc declares them on LP64 Linux (libcu++'s 64-bit ones
// are long long), so that a kernel's types are the same types, spelled the same in its signature
// ("signed long" for std::int64_t, as nvcc spells it), under NVRTC as under nvcc.
static_assert(sizeof(long) == 8 && sizeof(void*) == 8, "devctx's NVRTC path assumes LP64 (64-bit Linux)");
using int8_t = signed char;
using int16_t = signed short int;
using int32_t = signed int;
using int64_t = signed long int;
using intptr_t = long int;
using uint8_t = unsigned char;
using uint16_t = unsigned short int;
using uint32_t = unsigned int;
using uint64_t = unsigned long int;
using uintptr_t = unsigned long int;
// <limits>
using ::cuda::std::numeric_limits;
// <optional>
using ::cuda::std::nullopt;
using ::cuda::std::nullopt_t;
using ::cuda::std::optional;
// <utility>
using ::cuda::std::declval;
using ::cuda::std::forward;
using ::cuda::std::index_sequence;
using ::cuda::std::index_sequence_for;
using ::cuda::std::integer_sequence;
using ::cuda::std::make_index_sequence;
using ::cuda::std::move;
using ::cuda::std::swap;
// <type_traits>
using ::cuda::std::add_const_t;
using ::cuda::std::bool_constant;
using ::cuda::std::common_type_t;
using ::cuda::std::conditional;
using ::cuda::std::conditional_t;
using ::cuda::std::decay_t;
using ::cuda::std::enable_if;
using ::cuda::std::enable_if_t;
using ::cuda::std::false_type;
using ::cuda::std::integral_constant;
using ::cuda::std::is_arithmetic;
using ::cuda::std::is_arithmetic_v;
using ::cuda::std::is_const;
using ::cuda::std::is_const_v;
using ::cuda::std::is_constant_evaluated;
using ::cuda::std::is_floating_point;
using ::cuda::std::is_floating_point_v;
using ::cuda::std::is_integral;
using ::cuda::std::is_integral_v;
using ::cuda::std::is_pointer_v;
using ::cuda::std::is_same;
using ::cuda::std::is_same_v;
using ::cuda::std::is_signed;
using ::cuda::std::is_signed_v;
using ::cuda::std::is_trivially_copyable;
using ::cuda::std::is_trivially_copyable_v;
using ::cuda::std::is_unsigned;
using ::cuda::std::is_unsigned_v;
using ::cuda::std::make_signed_t;
using ::cuda::std::make_unsigned;
using ::cuda::std::make_unsigned_t;
using ::cuda::std::remove_const_t;
using ::cuda::std::remove_cv_t;
using ::cuda::std::remove_cvref_t;
using ::cuda::std::remove_pointer_t;
using ::cuda::std::remove_reference_t;
using ::cuda::std::true_type;
using ::cuda::std::type_identity;
using ::cuda::std::type_identity_t;
using ::cuda::std::underlying_type_t;
}  // namespace std

/// memcpy in device code: NVRTC declares memcpy itself and knows no __builtin_memcpy.
#define DEVCTX_MEMCPY memcpy

#else

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

/// memcpy without <cstring>, in host and device code alike.
#define DEVCTX_MEMCPY __builtin_memcpy

#endif
