// SPDX-License-Identifier: Apache-2.0
// tests/support/gpu_program.hpp - the harness of a GPU test program without GoogleTest: a PASS or
// FAIL line per check, sections that turn an exception into a failure, refusals checked by code
// and message, the run's seed (DEVCTX_TEST_SEED replays it) and the exit status without a GPU
// (77, skipped, unless DEVCTX_REQUIRE_GPU=1 makes it a failure).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include <devctx/devctx.hpp>

#include "test_env.hpp"  // require_gpu()

namespace devctx_test::gpu {

inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

inline void section(const std::string& name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    check(false, name + ": threw " + e.what());
  }
}

/// Whether `body` throws devctx::Error with `code` and a message containing `text`.
inline void refused(const std::function<void()>& body, devctx::Errc code, const std::string& text, const std::string& what) {
  try {
    body();
    check(false, what + " (nothing was thrown)");
  } catch (const devctx::Error& e) {
    const bool ok = e.code() == code && std::string(e.what()).find(text) != std::string::npos;
    check(ok, what + (ok ? "" : std::string(" (threw: ") + e.what() + ")"));
  }
}

inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* text = std::getenv("DEVCTX_TEST_SEED")) return std::uint64_t(std::strtoull(text, nullptr, 0));
    return std::uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return s;
}

/// The CUDA backend these programs test, picked by its name (devctx/backend.hpp).
inline devctx::Api cuda_api() { return devctx::backend("cuda").api; }

/// The exit status of a program that found no GPU: 1 when DEVCTX_REQUIRE_GPU is on, else 77.
inline int no_gpu_exit() {
  if (devctx_test::require_gpu()) {
    std::printf("FAIL  DEVCTX_REQUIRE_GPU is on but there is no CUDA device\n");
    return 1;
  }
  std::printf("no CUDA device: skipped\n");
  return 77;
}

}  // namespace devctx_test::gpu
