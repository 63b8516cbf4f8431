// tests/fuzz/libfuzzer_options.hpp - how the libFuzzer harness decodes an input, in one place,
// so that `devctx_fuzz_diff --bytes FILE` replays a crash input exactly as the harness ran it.
#pragma once

#include <cstdint>

#include "fuzz/generator.hpp"

namespace devctx_fuzz {

/// Ops decoded from one input at most: inputs stay fast, and libFuzzer's -max_len bounds them too.
inline constexpr std::uint64_t kLibFuzzerMaxOps = 200;

/// Small buffers (libFuzzer runs thousands of inputs a second), no 1-2 MiB ones; every op kind,
/// overlapping copies and kernels that throw on a fiber included (generator.hpp).
inline GenOptions libfuzzer_options() {
  GenOptions o;
  o.max_elements = 256;
  o.large_buffers = false;
  return o;
}

}  // namespace devctx_fuzz
