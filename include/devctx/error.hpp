// SPDX-License-Identifier: Apache-2.0
// devctx/error.hpp - the one exception type devctx throws, and its error codes.
#pragma once

#include <stdexcept>
#include <string>

namespace devctx {

/// What kind of failure a devctx::Error reports. Stable: tests and users may switch on it.
enum class Errc {
  invalid_argument,  ///< a bad value passed to an API (zero-sized where not allowed, bad name, ...)
  size_mismatch,     ///< copy endpoints or slices whose sizes do not fit
  invalid_launch,    ///< launch dimensions that are zero or exceed the device's limits
  invalid_handle,    ///< a moved-from or empty buffer, stream, event or context was used
  wrong_device,      ///< memory or events of one device used with another
  not_available,     ///< the requested backend or device does not exist or was not built
  out_of_memory,     ///< an allocation could not be satisfied
  kernel_failed,     ///< a kernel threw, trapped or faulted while running
  backend_error,     ///< the underlying runtime (e.g. CUDA) reported a failure
  context_lost,      ///< the device context is unusable (e.g. after a CUDA device fault)
  check_failed,      ///< checking mode (DEVCTX_CHECK, docs/checking.md) found a bug in the program
  compile_failed,    ///< a kernel given as source at run time did not compile (devctx::CompileError)
};

/// Human-readable name of an error code ("size_mismatch", ...).
[[nodiscard]] const char* to_string(Errc code) noexcept;

/// Every failure in devctx is reported as this exception. The message names the operation,
/// the sizes or dimensions involved and the device.
class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

}  // namespace devctx
