// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/settings.cpp - parses the CPU backend's environment variables.
#include "backends/cpu/settings.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/environment.hpp"
#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

constexpr std::size_t kMinStackBytes = 16 * 1024;
constexpr std::size_t kMaxStackBytes = 64 * 1024 * 1024;
/// More workers than this is a mistyped value, not a machine (it also bounds the threads a bad
/// value could start).
constexpr std::size_t kMaxWorkers = 1024;
/// A worker out of work spins this long before sleeping (docs/cpu-backend.md, "Streams and
/// workers"): long enough for the next launch of a launch + synchronize loop to find it awake.
constexpr std::size_t kDefaultSpinUs = 50;
constexpr std::size_t kMaxSpinUs = 10000;

/// set_device_count's value; 0 while the environment decides.
std::atomic<int> chosen_devices{0};

}  // namespace

CpuSettings read_settings() {
  CpuSettings settings;
  const std::size_t cores = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kMaxWorkers);
  settings.workers = env_size("DEVCTX_CPU_THREADS", cores, 1, kMaxWorkers, SizeUnit::count,
                              "worker threads of the CPU device");
  settings.stack_bytes = env_size("DEVCTX_CPU_STACK_BYTES", 64 * 1024, kMinStackBytes, kMaxStackBytes, SizeUnit::bytes,
                                  "the stack of each GPU thread of a thread-level kernel");
  settings.spin_us = env_size("DEVCTX_CPU_SPIN_US", kDefaultSpinUs, 0, kMaxSpinUs, SizeUnit::count,
                              "microseconds a CPU worker out of work spins before it sleeps");
  return settings;
}

int device_count() {
  if (const int chosen = chosen_devices.load()) return chosen;
  return int(env_size("DEVCTX_CPU_DEVICES", 1, 1, kMaxCpuDevices, SizeUnit::count, "CPU devices the CPU is split into"));
}

void set_device_count(int count) {
  if (count < 0 || count > kMaxCpuDevices)
    fail(Errc::invalid_argument, "DeviceContext::set_cpu_device_count(", count, "): the count must be 1 to ",
         kMaxCpuDevices, " (or 0 to let DEVCTX_CPU_DEVICES decide again)");
  chosen_devices.store(count);
}

bool fission_enabled() { return env_flag("DEVCTX_CPU_FISSION", true); }

bool trace_enabled() { return env_flag("DEVCTX_TRACE", false); }

}  // namespace devctx::detail::cpu
