// SPDX-License-Identifier: Apache-2.0
// src/core/errors.hpp - throwing devctx::Error: the one way core and the backends report a
// failure (fail), built from the message pieces of core/text.hpp.
#pragma once

#include <utility>

#include <devctx/error.hpp>

#include "core/text.hpp"

namespace devctx::detail {

/// Throws devctx::Error(code) whose message is the concatenation of `parts`.
template <class... Parts>
[[noreturn]] void fail(Errc code, Parts&&... parts) {
  throw Error(code, concat(std::forward<Parts>(parts)...));
}

}  // namespace devctx::detail
