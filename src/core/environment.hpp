// SPDX-License-Identifier: Apache-2.0
// src/core/environment.hpp - the one reading of every DEVCTX_* environment variable that the
// library obeys: one rule for on/off flags, one for sizes and counts (with their allowed range),
// and the device-name parser behind DEVCTX_DEVICE (public as devctx::parse_device, so that the
// devctx tool accepts exactly what the library accepts). A value that breaks its rule is an
// Error(invalid_argument) naming the variable, the value and what is allowed; never a silent
// default.
#pragma once

#include <cstddef>
#include <string>

namespace devctx::detail {

/// A flag (DEVCTX_TRACE, DEVCTX_CUDA_HOST_POOL): unset or empty -> `fallback`; 1, true, yes, on
/// -> true; 0, false, no, off -> false (any letter case); anything else throws.
[[nodiscard]] bool env_flag(const char* name, bool fallback);

/// A text variable (a path, a command): its value, empty when unset or empty. Every variable read
/// this way has a row in src/core/settings_table.hpp like every other.
[[nodiscard]] std::string setting_text(const char* name);

/// How env_size writes its range in a message.
enum class SizeUnit : unsigned char { count, bytes };

/// A size or count (DEVCTX_CPU_THREADS, DEVCTX_CPU_STACK_BYTES): unset or empty -> `fallback`;
/// otherwise a decimal integer (digits only: no sign, no spaces) within [min, max], else it
/// throws naming the variable, the value, the range (in bytes when `unit` is bytes) and
/// `meaning` ("worker threads of the CPU device"). `fallback` itself is not range-checked.
[[nodiscard]] std::size_t env_size(const char* name, std::size_t fallback, std::size_t min, std::size_t max,
                                   SizeUnit unit, const char* meaning);

}  // namespace devctx::detail
