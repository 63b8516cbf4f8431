// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/settings.hpp - the CPU backend's environment settings, all read here:
// DEVCTX_CPU_THREADS, DEVCTX_CPU_STACK_BYTES and DEVCTX_TRACE.
#pragma once

#include <cstddef>

namespace devctx::detail::cpu {

struct CpuSettings {
  std::size_t workers = 1;      ///< DEVCTX_CPU_THREADS, else one per hardware thread
  std::size_t stack_bytes = 0;  ///< DEVCTX_CPU_STACK_BYTES, else 64 KiB
};

/// Reads the settings a CPU device is created with. Throws Error(invalid_argument) naming the
/// variable when one is malformed or out of range.
[[nodiscard]] CpuSettings read_settings();

/// DEVCTX_TRACE: print one line per kernel launch (docs/cpu-backend.md).
[[nodiscard]] bool trace_enabled();

}  // namespace devctx::detail::cpu
