// SPDX-License-Identifier: Apache-2.0
// devctx/detail/runtime/signature.hpp - a kernel's parameter list as data, computed by templates
// from the kernel's function type: the machine-readable signature text that a runtime-compiled
// kernel carries (devctx/module.hpp), and the "wire" layout in which the host hands such a kernel
// its arguments. Compiled by the library, by the host compiler into a kernel's shared object and
// by nvcc into its cubin, so that all three agree by construction.
#pragma once

#if !defined(DEVCTX_DETAIL_HEADERS_OK)
#error "<devctx/detail/runtime/signature.hpp> is private to devctx: include <devctx/devctx.hpp> (or <devctx/module.hpp>) instead"
#endif

#include <devctx/detail/base/std.hpp>

#include <devctx/detail/base/config.hpp>
#include <devctx/span.hpp>

namespace devctx {

class Block;

/// The element type of a kernel parameter (a scalar, or what a span or pointer points at), as a
/// runtime-compiled kernel's signature states it and as a KernelArg carries it.
enum class ScalarType : unsigned char {
  other = 0,  ///< anything else (a struct): matched by size and spelled type name
  boolean,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float32,
  float64,
};

}  // namespace devctx

namespace devctx::detail::rt {

/// Bumped whenever the signature text, the wire layout or the CPU entry table changes.
inline constexpr unsigned kAbiVersion = 1;

// ---- small traits (no standard library: this header is also compiled for the device) ------------
template <class T>
struct RemoveConst {
  using type = T;
};
template <class T>
struct RemoveConst<const T> {
  using type = T;
};
template <class T>
inline constexpr bool is_const_v = false;
template <class T>
inline constexpr bool is_const_v<const T> = true;

template <class T, bool Signed = (T(-1) < T(0))>
constexpr ScalarType integer_type() {
  if constexpr (sizeof(T) == 1)
    return Signed ? ScalarType::int8 : ScalarType::uint8;
  else if constexpr (sizeof(T) == 2)
    return Signed ? ScalarType::int16 : ScalarType::uint16;
  else if constexpr (sizeof(T) == 4)
    return Signed ? ScalarType::int32 : ScalarType::uint32;
  else if constexpr (sizeof(T) == 8)
    return Signed ? ScalarType::int64 : ScalarType::uint64;
  else
    return ScalarType::other;
}
/// The ScalarType of T (const ignored): ScalarType::other for every non-arithmetic type.
template <class T>
struct ScalarOf {
  static constexpr ScalarType value = ScalarType::other;
};
template <class T>
struct ScalarOf<const T> : ScalarOf<T> {};
template <>
struct ScalarOf<bool> {
  static constexpr ScalarType value = ScalarType::boolean;
};
template <>
struct ScalarOf<char> {
  static constexpr ScalarType value = integer_type<char>();
};
template <>
struct ScalarOf<signed char> {
  static constexpr ScalarType value = integer_type<signed char>();
};
template <>
struct ScalarOf<unsigned char> {
  static constexpr ScalarType value = integer_type<unsigned char>();
};
template <>
struct ScalarOf<short> {
  static constexpr ScalarType value = integer_type<short>();
};
template <>
struct ScalarOf<unsigned short> {
  static constexpr ScalarType value = integer_type<unsigned short>();
};
template <>
struct ScalarOf<int> {
  static constexpr ScalarType value = integer_type<int>();
};
template <>
struct ScalarOf<unsigned> {
  static constexpr ScalarType value = integer_type<unsigned>();
};
template <>
struct ScalarOf<long> {
  static constexpr ScalarType value = integer_type<long>();
};
template <>
struct ScalarOf<unsigned long> {
  static constexpr ScalarType value = integer_type<unsigned long>();
};
template <>
struct ScalarOf<long long> {
  static constexpr ScalarType value = integer_type<long long>();
};
template <>
struct ScalarOf<unsigned long long> {
  static constexpr ScalarType value = integer_type<unsigned long long>();
};
template <>
struct ScalarOf<float> {
  static constexpr ScalarType value = ScalarType::float32;
};
template <>
struct ScalarOf<double> {
  static constexpr ScalarType value = ScalarType::float64;
};

/// How a parameter travels, one character in the signature text.
enum class ParamWire : char {
  scalar = 's',       ///< its own bytes (an arithmetic type or a trivially copyable struct)
  span = 'p',         ///< devctx::span<T>: {T* data; std::size_t count}
  pointer = 'r',      ///< T*: {T* data; std::size_t reach}
  unsupported = 'x',  ///< anything else (LayoutTensor, references, ...): the kernel cannot be launched
};

template <class P>
struct ParamTraits {
  static constexpr ParamWire wire = __is_trivially_copyable(P) && __is_trivially_constructible(P)
                                        ? ParamWire::scalar
                                        : ParamWire::unsupported;
  using element = P;
  static constexpr bool read_only = false;
  static constexpr std::size_t bytes = sizeof(P);
  static constexpr std::size_t wire_size = sizeof(P);
  static constexpr std::size_t wire_align = alignof(P);
};
template <class T>
struct ParamTraits<span<T>> {
  static constexpr ParamWire wire = ParamWire::span;
  using element = typename RemoveConst<T>::type;
  static constexpr bool read_only = is_const_v<T>;
  static constexpr std::size_t bytes = sizeof(T);
  static constexpr std::size_t wire_size = 2 * sizeof(void*);
  static constexpr std::size_t wire_align = alignof(void*);
};
template <class T>
struct ParamTraits<T*> {
  static constexpr ParamWire wire = __is_trivially_copyable(T) ? ParamWire::pointer : ParamWire::unsupported;
  using element = typename RemoveConst<T>::type;
  static constexpr bool read_only = is_const_v<T>;
  static constexpr std::size_t bytes = sizeof(T);
  static constexpr std::size_t wire_size = 2 * sizeof(void*);
  static constexpr std::size_t wire_align = alignof(void*);
};

// ---- type names, read from the compiler's own description of a template argument ---------------
template <class T>
constexpr const char* pretty_function() {
  return __PRETTY_FUNCTION__;
}
constexpr std::size_t text_length(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
constexpr bool text_starts(const char* s, const char* prefix) {
  for (std::size_t i = 0; prefix[i] != '\0'; ++i)
    if (s[i] != prefix[i]) return false;
  return true;
}
/// T as the compiler spells it ("devctx::span<const float>"): [begin, end) of a static string.
struct Spelled {
  const char* begin;
  std::size_t size;
};
template <class T>
constexpr Spelled spelled_type() {
  const char* text = pretty_function<T>();
  std::size_t n = text_length(text);
  std::size_t at = 0;
  while (at + 4 <= n && !text_starts(text + at, "T = ")) ++at;
  if (at + 4 > n) return {"?", 1};
  at += 4;
  std::size_t end = at;
  while (end < n && text[end] != ';' && text[end] != ']') ++end;
  return {text + at, end - at};
}

// ---- the signature text ------------------------------------------------------------------------
/// Writes text to `out` (or only counts it when `out` is null).
struct TextSink {
  char* out = nullptr;
  std::size_t size = 0;
  constexpr void put(char c) {
    if (out != nullptr) out[size] = c;
    ++size;
  }
  constexpr void put(const char* s) {
    for (std::size_t i = 0; s[i] != '\0'; ++i) put(s[i]);
  }
  /// A type as the compiler spelled it, on one line; CUDA's front end (nvcc's and NVRTC's) spells
  /// bool `__nv_bool`, written `bool` as the host compiler and the user write it.
  constexpr void put(Spelled s) {
    for (std::size_t i = 0; i < s.size; ++i) {
      if (s.size - i >= 9 && text_starts(s.begin + i, "__nv_bool")) {
        put("bool");
        i += 8;
      } else {
        put(s.begin[i] == '\n' ? ' ' : s.begin[i]);
      }
    }
  }
  constexpr void put_number(std::size_t v) {
    char digits[24] = {};
    std::size_t n = 0;
    do {
      digits[n++] = char('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put(digits[--n]);
  }
};

template <class P>
constexpr void write_param(TextSink& sink) {
  using Tr = ParamTraits<P>;
  sink.put(static_cast<char>(Tr::wire));
  sink.put(' ');
  sink.put_number(static_cast<std::size_t>(ScalarOf<typename Tr::element>::value));
  sink.put(' ');
  sink.put(Tr::read_only ? '1' : '0');
  sink.put(' ');
  sink.put_number(Tr::bytes);
  sink.put(' ');
  sink.put_number(Tr::wire_size);
  sink.put(' ');
  sink.put_number(Tr::wire_align);
  sink.put(' ');
  sink.put(spelled_type<P>());
  sink.put('\n');
}

/// The signature text of a parameter list:
///   devctx-signature <abi>\nblock <0|1>\nparams <n>\n
/// then one line per parameter: "<wire> <ScalarType> <const> <element bytes> <wire size> <wire align> <C++ type>".
template <bool BlockLevel, class... P>
constexpr void write_signature(TextSink& sink) {
  sink.put("devctx-signature ");
  sink.put_number(kAbiVersion);
  sink.put("\nblock ");
  sink.put(BlockLevel ? '1' : '0');
  sink.put("\nparams ");
  sink.put_number(sizeof...(P));
  sink.put('\n');
  (write_param<P>(sink), ...);
}

template <class F>
struct FunctionParams;
template <class R, class... P>
struct FunctionParams<R (*)(P...)> {
  static constexpr bool block_level = false;
  template <template <bool, class...> class L>
  using apply = L<false, P...>;
};
template <class R, class... P>
struct FunctionParams<R (*)(Block, P...)> {
  static constexpr bool block_level = true;
  template <template <bool, class...> class L>
  using apply = L<true, P...>;
};

template <bool BlockLevel, class... P>
struct SignatureOf {
  static constexpr std::size_t length = [] {
    TextSink sink;
    write_signature<BlockLevel, P...>(sink);
    return sink.size;
  }();
  struct Text {
    char chars[length + 1] = {};
  };
  static constexpr Text text = [] {
    Text t;
    TextSink sink{t.chars};
    write_signature<BlockLevel, P...>(sink);
    return t;
  }();
};

// ---- the wire: the arguments as the host packs them --------------------------------------------
constexpr std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

template <std::size_t N>
struct WireOffsets {
  std::size_t offset[N + 1] = {};
  std::size_t size = 0;
  std::size_t align = 1;
};
/// Each parameter at the next multiple of its wire alignment, in order; the whole rounded up
/// to the largest alignment (src/runtime/launch.cpp computes the same from the signature text).
template <class... P>
constexpr WireOffsets<sizeof...(P)> wire_offsets() {
  WireOffsets<sizeof...(P)> w;
  const std::size_t sizes[] = {ParamTraits<P>::wire_size..., 0};
  const std::size_t aligns[] = {ParamTraits<P>::wire_align..., 1};
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizeof...(P); ++i) {
    at = align_up(at, aligns[i]);
    w.offset[i] = at;
    at += sizes[i];
    if (aligns[i] > w.align) w.align = aligns[i];
  }
  w.size = align_up(at, w.align);
  return w;
}

/// The wire as one kernel parameter (CUDA) of the right size and alignment.
/// Words of the wire's alignment (at most 8 bytes), not bytes: nvcc copies a kernel parameter
/// element by element, so a parameter of bytes costs every thread a load per byte.
template <std::size_t Size, std::size_t Align>
struct alignas(Align) WireBytes {
  static constexpr std::size_t word_bytes = Align >= 8 ? 8 : Align;
  using Word = std::conditional_t<
      word_bytes == 8, unsigned long long,
      std::conditional_t<word_bytes == 4, unsigned, std::conditional_t<word_bytes == 2, unsigned short, unsigned char>>>;
  Word words[Size == 0 ? 1 : (Size + word_bytes - 1) / word_bytes];
  [[nodiscard]] DEVCTX_HD const unsigned char* bytes() const noexcept {
    return reinterpret_cast<const unsigned char*>(words);
  }
};

/// A T from the wire's bytes at `w`.
template <class T>
DEVCTX_HD inline T wire_load(const unsigned char* w) {
  T value;
  DEVCTX_MEMCPY(static_cast<void*>(&value), w, sizeof(T));
  return value;
}

/// Parameter P from its bytes on the wire.
template <class P>
DEVCTX_HD inline P from_wire(const unsigned char* w) {
  using Tr = ParamTraits<P>;
  if constexpr (Tr::wire == ParamWire::span) {
    return P(wire_load<typename P::element_type*>(w), wire_load<std::size_t>(w + sizeof(void*)));
  } else if constexpr (Tr::wire == ParamWire::pointer) {
    return wire_load<P>(w);
  } else {
    static_assert(Tr::wire == ParamWire::scalar,
                  "a runtime-compiled kernel takes spans, pointers and trivially copyable values only");
    return wire_load<P>(w);
  }
}
/// The reach stored after a pointer parameter's address on the wire.
DEVCTX_HD inline std::size_t reach_from_wire(const unsigned char* w) {
  std::size_t reach;
  DEVCTX_MEMCPY(&reach, w + sizeof(void*), sizeof reach);
  return reach;
}

}  // namespace devctx::detail::rt
