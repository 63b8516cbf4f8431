// SPDX-License-Identifier: Apache-2.0
// tests/trace/trace_program.hpp - the scripted program whose trace the trace tests check: copies
// of each kind, kernels on two streams ordered by an event, a memset, host waits (a context's
// and a device's synchronize, Event::synchronize, elapsed_ms) and frees,
// with what each step should record.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

namespace devctx_test {

/// What one recorded operation of the program should be.
struct Expected {
  devctx::trace::Kind kind;
  std::string name;
  int stream;           ///< 1: the context's stream, 2: the created stream
  std::uint64_t bytes;  ///< 0 where the operation has no byte count
  devctx::trace::Direction direction = devctx::trace::Direction::none;
  bool pageable = false;
  bool host_memory = false;  ///< allocations and frees: a HostBuffer's memory
};

struct ProgramResult {
  std::vector<Expected> expected;
  std::size_t n = 0;
  unsigned grid = 0, block = 0;
  bool values_ok = false;  ///< every element of every result checked against the host
  std::string first_bad;   ///< the first wrong element, when not
};

/// Runs the program on `ctx` (recording must be on), synchronizes, and checks its results.
ProgramResult run_trace_program(devctx::DeviceContext& ctx, std::mt19937_64& rng);

/// Launches, with recording on, a kernel in an anonymous namespace inside a named one, one in a
/// top-level anonymous namespace and a template instance in a named namespace, and returns the
/// names the trace gives them, in that order.
std::vector<std::string> scoped_kernel_names(devctx::DeviceContext& ctx);

}  // namespace devctx_test
