// SPDX-License-Identifier: Apache-2.0
// src/core/text.hpp - how devctx writes values in messages and tool output: the one formatting
// of byte counts, dimensions, backends and the name of a launch. Message building (concat)
// lives here too, so that every message is assembled the same way.
#pragma once

#include <charconv>
#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <devctx/launch.hpp>

namespace devctx::detail {

/// Appends `part` to `out` as `std::ostream <<` would write it in the "C" locale: text and
/// characters as they are, integers in decimal (bool as 1 or 0), floating-point values as
/// `%g` writes them (6 significant digits), always with a '.', whatever locale the program set
/// (setlocale, std::locale::global); anything else through a stream; a null `const char*` as
/// "(null)" (a stream would drop it and everything after it). Text and numbers skip the
/// stream, whose construction (a locale) cost about a microsecond per message: enough to show
/// in every CUDA copy's NVTX name (devctx_bench_nvtx_cost).
template <class T>
void append_text(std::string& out, const T& part) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
    out += part != nullptr ? std::string_view(part) : std::string_view("(null)");
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(part);
  } else if constexpr (std::is_same_v<U, char> || std::is_same_v<U, signed char> || std::is_same_v<U, unsigned char>) {
    out += static_cast<char>(part);
  } else if constexpr (std::is_same_v<U, bool>) {
    out += part ? '1' : '0';
  } else if constexpr (std::is_integral_v<U>) {
    char digits[48];  // room for any integer type's digits and sign, 128-bit ones included
    const auto end = std::to_chars(digits, digits + sizeof digits, part).ptr;
    // Pointer and length: append(first, last) goes through replace(), whose handling of a source
    // inside the string itself GCC 12 reports as an overlap (-Wrestrict) at -O3.
    out.append(digits, std::size_t(end - digits));
  } else if constexpr (std::is_floating_point_v<U>) {
    char digits[64];
    const auto end = std::to_chars(digits, digits + sizeof digits, part, std::chars_format::general, 6).ptr;
    out.append(digits, std::size_t(end - digits));
  } else {
    std::ostringstream stream;
    stream << part;
    out += std::move(stream).str();
  }
}

/// Concatenates anything streamable into one message.
template <class... Parts>
[[nodiscard]] std::string concat(Parts&&... parts) {
  std::string out;
  (append_text(out, parts), ...);
  return out;
}

/// Appends `value` with `decimals` digits after the point (as printf's "%.Nf" in the "C"
/// locale): the one way devctx writes a fractional number into output meant for machines
/// (trace files, the report, the tool's CSV and SVG). Always a '.', whatever locale the
/// program set: printf writes "12,345" under a comma-decimal locale, which is not JSON.
/// A value that is not finite is written as 0 (JSON has no NaN or infinity).
void append_fixed(std::string& out, double value, int decimals);
/// append_fixed into a new string.
[[nodiscard]] std::string fixed_text(double value, int decimals);

/// "(256, 1, 1)"
[[nodiscard]] std::string to_string(const Dim3& d);

/// "100 bytes" below 1 KiB, else the value in the largest binary unit that keeps it at least 1,
/// with the exact count: "1.5 MiB (1572864 bytes)". Messages need the exact count (a limit is
/// often one byte away); people need the rounded one.
[[nodiscard]] std::string bytes_text(std::size_t bytes);

/// "enqueue_function<vector_add>": how every message names a launch of a kernel.
[[nodiscard]] std::string launch_operation(std::string_view kernel);

}  // namespace devctx::detail
