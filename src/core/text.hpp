// SPDX-License-Identifier: Apache-2.0
// src/core/text.hpp - how devctx writes values in messages and tool output: the one formatting
// of byte counts, dimensions, backends and the name of a launch. Message building (concat)
// lives here too, so that every message is assembled the same way.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <devctx/launch.hpp>

namespace devctx::detail {

/// Concatenates anything streamable into one message.
template <class... Parts>
[[nodiscard]] std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// "(256, 1, 1)"
[[nodiscard]] std::string to_string(const Dim3& d);

/// "100 bytes" below 1 KiB, else the value in the largest binary unit that keeps it at least 1,
/// with the exact count: "1.5 MiB (1572864 bytes)". Messages need the exact count (a limit is
/// often one byte away); people need the rounded one.
[[nodiscard]] std::string bytes_text(std::size_t bytes);

/// "enqueue_function<vector_add>": how every message names a launch of a kernel.
[[nodiscard]] std::string launch_operation(std::string_view kernel);

}  // namespace devctx::detail
