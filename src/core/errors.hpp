// src/core/errors.hpp - building devctx::Error messages.
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include <devctx/error.hpp>
#include <devctx/launch.hpp>

namespace devctx::detail {

/// Concatenates anything streamable into one message.
template <class... Parts>
[[nodiscard]] std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

template <class... Parts>
[[noreturn]] void fail(Errc code, Parts&&... parts) {
  throw Error(code, concat(std::forward<Parts>(parts)...));
}

/// "(256, 1, 1)"
[[nodiscard]] std::string to_string(const Dim3& d);
/// "1.5 MiB (1572864 bytes)"
[[nodiscard]] std::string bytes_text(std::size_t bytes);

}  // namespace devctx::detail
