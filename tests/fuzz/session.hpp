// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/session.hpp - one program run from start to end on a fresh context (generated
// from choices, or replayed from a list of ops), and the minimizer that shortens a failing one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

#include "fuzz/choices.hpp"
#include "fuzz/generator.hpp"
#include "fuzz/op.hpp"

namespace devctx_fuzz {

struct RunResult {
  bool failed = false;
  std::size_t failed_at = 0;  ///< index of the op that failed (ops.size() - 1: the final check)
  std::string failure;
  std::vector<Op> ops;             ///< the program (with its final ctx.synchronize())
  std::vector<std::string> trace;  ///< when asked for: the devctx calls, as C++
  std::uint64_t ran = 0, skipped = 0, checked_elements = 0;
  std::array<std::uint64_t, kOpKinds> ran_by_kind{}, refused_by_kind{};
};

/// Generates up to `max_ops` ops from `choices` (fewer when a byte input runs out), running
/// each as it is made, then a final ctx.synchronize() and check. Stops at the first failure.
[[nodiscard]] RunResult run_generated(devctx::Api api, Choices& choices, const GenOptions& options,
                                      std::uint64_t max_ops, bool keep_ops);
/// Runs `ops` as given (ops that make no sense any more are skipped), then the final check.
[[nodiscard]] RunResult run_ops(devctx::Api api, const std::vector<Op>& ops, bool keep_trace);

/// What kind of failure a message describes, so that minimizing keeps the same one.
[[nodiscard]] std::string failure_kind(const RunResult& r);

/// Delta debugging: the shortest program found within `seconds` that still fails the same
/// way. Prints progress to stderr.
[[nodiscard]] std::vector<Op> minimize(devctx::Api api, std::vector<Op> ops, const std::string& kind, double seconds);

/// The program as text (`devctx_fuzz_diff --replay` reads it) and as C++ statements.
[[nodiscard]] std::string reproduction(const RunResult& r);

}  // namespace devctx_fuzz
