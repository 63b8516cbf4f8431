// src/backends/cpu/settings.cpp - parses the CPU backend's environment variables.
#include "backends/cpu/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/errors.hpp"

namespace devctx::detail::cpu {
namespace {

constexpr std::size_t kMinStackBytes = 16 * 1024;
constexpr std::size_t kMaxStackBytes = 64 * 1024 * 1024;

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0)
    fail(Errc::invalid_argument, name, "='", text, "' must be a positive integer");
  return std::size_t(value);
}

}  // namespace

CpuSettings read_settings() {
  CpuSettings settings;
  settings.workers = env_size("DEVCTX_CPU_THREADS", std::max(1u, std::thread::hardware_concurrency()));
  settings.stack_bytes = env_size("DEVCTX_CPU_STACK_BYTES", 64 * 1024);
  if (settings.stack_bytes < kMinStackBytes || settings.stack_bytes > kMaxStackBytes)
    fail(Errc::invalid_argument, "DEVCTX_CPU_STACK_BYTES=", settings.stack_bytes, " is outside ",
         bytes_text(kMinStackBytes), " .. ", bytes_text(kMaxStackBytes),
         " (the stack of each GPU thread that reaches a barrier)");
  return settings;
}

bool trace_enabled() {
  const char* text = std::getenv("DEVCTX_TRACE");
  return text != nullptr && *text != '\0' && std::strcmp(text, "0") != 0;
}

}  // namespace devctx::detail::cpu
