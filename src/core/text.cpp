// SPDX-License-Identifier: Apache-2.0
// src/core/text.cpp - the formatting of values in messages and tool output (see text.hpp).
#include "core/text.hpp"

#include <cstdio>
#include <iterator>

#include <devctx/device_info.hpp>

namespace devctx {

const char* to_string(Api api) noexcept {
  switch (api) {
    case Api::cpu: return "cpu";
    case Api::cuda: return "cuda";
  }
  return "unknown";
}

namespace detail {

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
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s (%zu bytes)", value, units[unit], bytes);
  return text;
}

std::string launch_operation(std::string_view kernel) { return concat("enqueue_function<", kernel, '>'); }

}  // namespace detail
}  // namespace devctx
