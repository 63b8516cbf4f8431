// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/settings.hpp - the CPU backend's environment settings, all read here:
// DEVCTX_CPU_THREADS, DEVCTX_CPU_STACK_BYTES, DEVCTX_CPU_SPIN_US, DEVCTX_CPU_DEVICES,
// DEVCTX_CPU_FISSION and DEVCTX_TRACE (DEVCTX_COMM_TIMEOUT_S: src/comm/communicator.cpp).
#pragma once

#include <cstddef>

namespace devctx::detail::cpu {

/// Most CPU devices a process may split the CPU into (DEVCTX_CPU_DEVICES, set_cpu_device_count).
inline constexpr int kMaxCpuDevices = 64;

struct CpuSettings {
  std::size_t workers = 1;      ///< DEVCTX_CPU_THREADS, else one per hardware thread; split among the devices
  std::size_t stack_bytes = 0;  ///< DEVCTX_CPU_STACK_BYTES, else 64 KiB
  std::size_t spin_us = 0;      ///< DEVCTX_CPU_SPIN_US: how long a worker out of work spins before sleeping
};

/// Reads the settings a CPU device is created with. Throws Error(invalid_argument) naming the
/// variable when one is malformed or out of range.
[[nodiscard]] CpuSettings read_settings();

/// How many CPU devices there are: the count set by DeviceContext::set_cpu_device_count if any,
/// else DEVCTX_CPU_DEVICES (1 to kMaxCpuDevices), else 1. Throws Error(invalid_argument) for a
/// malformed DEVCTX_CPU_DEVICES.
[[nodiscard]] int device_count();
/// Overrides DEVCTX_CPU_DEVICES from now on; 0 goes back to the variable. Throws
/// Error(invalid_argument) outside 0..kMaxCpuDevices.
void set_device_count(int count);

/// DEVCTX_CPU_FISSION: offer the blocks of unchecked launches to kernels' translated twins
/// (default on; 0 turns it off, docs/cpu-backend.md, "Translated kernels").
[[nodiscard]] bool fission_enabled();

/// DEVCTX_TRACE: print one line per kernel launch (docs/cpu-backend.md).
[[nodiscard]] bool trace_enabled();

}  // namespace devctx::detail::cpu
