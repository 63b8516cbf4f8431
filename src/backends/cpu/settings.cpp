// SPDX-License-Identifier: Apache-2.0
// src/backends/cpu/settings.cpp - parses the CPU backend's environment variables.
#include "backends/cpu/settings.hpp"

#include <algorithm>
#include <thread>

#include "core/environment.hpp"

namespace devctx::detail::cpu {
namespace {

constexpr std::size_t kMinStackBytes = 16 * 1024;
constexpr std::size_t kMaxStackBytes = 64 * 1024 * 1024;
/// More workers than this is a mistyped value, not a machine (it also bounds the threads a bad
/// value could start).
constexpr std::size_t kMaxWorkers = 1024;

}  // namespace

CpuSettings read_settings() {
  CpuSettings settings;
  const std::size_t cores = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kMaxWorkers);
  settings.workers = env_size("DEVCTX_CPU_THREADS", cores, 1, kMaxWorkers, SizeUnit::count,
                              "worker threads of the CPU device");
  settings.stack_bytes = env_size("DEVCTX_CPU_STACK_BYTES", 64 * 1024, kMinStackBytes, kMaxStackBytes, SizeUnit::bytes,
                                  "the stack of each GPU thread of a thread-level kernel");
  return settings;
}

bool trace_enabled() { return env_flag("DEVCTX_TRACE", false); }

}  // namespace devctx::detail::cpu
