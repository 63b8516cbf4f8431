// SPDX-License-Identifier: Apache-2.0
// tests/support/test_env.hpp - the one reading of the DEVCTX_* variables that steer the test
// programs (DEVCTX_REQUIRE_GPU, DEVCTX_TEST_PRINT_ERRORS), through the library's own flag parser
// (src/core/environment.hpp): `DEVCTX_REQUIRE_GPU=yes` requires the GPU exactly as `=1` does, and
// a value that is no flag stops the program (exit status 2) with the library's message instead of
// being read as "off". Linked into every test program as devctx_test_env (tests/CMakeLists.txt).
// Python's tests read the same variables with the same rule (tests/support/devctx_env.py).
#pragma once

namespace devctx_test {

/// DEVCTX_REQUIRE_GPU: true when a missing CUDA device must fail a GPU test instead of skipping
/// it. Unset or empty: false. Exits the program (status 2) when the value is no flag.
bool require_gpu();

/// DEVCTX_TEST_PRINT_ERRORS: true when the tests print every devctx::Error message they check.
/// Read once. Exits the program (status 2) when the value is no flag.
bool print_errors();

}  // namespace devctx_test
