// SPDX-License-Identifier: Apache-2.0
// src/core/text.cpp - the formatting of values in messages and tool output (see text.hpp).
#include "core/text.hpp"

#include <charconv>
#include <cmath>
#include <iterator>

#include <devctx/device_info.hpp>

namespace devctx {

namespace detail {

void append_fixed(std::string& out, double value, int decimals) {
  if (!std::isfinite(value)) value = 0;
  char digits[352];  // the longest finite double in fixed notation (309 digits) and 17 decimals
  const int places = decimals < 0 ? 0 : decimals > 17 ? 17 : decimals;
  const auto end = std::to_chars(digits, digits + sizeof digits, value, std::chars_format::fixed, places).ptr;
  out.append(digits, end);
}

std::string fixed_text(double value, int decimals) {
  std::string out;
  append_fixed(out, value, decimals);
  return out;
}

std::string to_string(const Dim3& d) { return concat('(', d.x, ", ", d.y, ", ", d.z, ')'); }

std::string bytes_text(std::size_t bytes) {
  static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr int last = int(std::size(units)) - 1;
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < last) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return concat(bytes, " bytes");
  // to_chars, not snprintf: the same exactly rounded "%.1f", without a format string to parse
  // (a CUDA copy's NVTX name is built with this; devctx_bench_nvtx_cost).
  char rounded[32];
  const auto end = std::to_chars(rounded, rounded + sizeof rounded, value, std::chars_format::fixed, 1).ptr;
  return concat(std::string_view(rounded, std::size_t(end - rounded)), ' ', units[unit], " (", bytes, " bytes)");
}

std::string launch_operation(std::string_view kernel) { return concat("enqueue_function<", kernel, '>'); }

}  // namespace detail
}  // namespace devctx
