// SPDX-License-Identifier: Apache-2.0
// tests/support/test_env.cpp - the test programs' DEVCTX_* flags, read by the library's parser
// (test_env.hpp).
#include "test_env.hpp"

#include <cstdio>
#include <cstdlib>

#include <devctx/error.hpp>

#include "core/environment.hpp"

namespace devctx_test {
namespace {

bool flag(const char* name) {
  try {
    return devctx::detail::env_flag(name, false);
  } catch (const devctx::Error& e) {
    std::fprintf(stderr, "devctx tests: %s\n", e.what());
    std::exit(2);
  }
}

}  // namespace

bool require_gpu() { return flag("DEVCTX_REQUIRE_GPU"); }

bool print_errors() {
  static const bool enabled = flag("DEVCTX_TEST_PRINT_ERRORS");
  return enabled;
}

}  // namespace devctx_test
