// SPDX-License-Identifier: Apache-2.0
// python/src/binding_errors.hpp - the argument error that streams.cpp and runtime_kernels.cpp
// raise (module.cpp has its own, with the same rule): a value of the right Python type that devctx
// cannot take. runtime_kernels.cpp's exception translator makes it devctx.ArgumentError, or
// devctx.ArgumentOverflowError when `overflow` is set (the number does not fit its C type).
#pragma once

#include <string>

#include <devctx/error.hpp>

struct BindingArgumentError : devctx::Error {
  bool overflow;
  BindingArgumentError(bool overflows, const std::string& message)
      : devctx::Error(devctx::Errc::invalid_argument, message), overflow(overflows) {}
};
