// SPDX-License-Identifier: Apache-2.0
// tools/tool.hpp - the pieces of the `devctx` command-line tool, shared by its source files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <devctx/devctx.hpp>

// The tool writes sizes as the library's messages do (one formatting, src/core/text.hpp).
#include "core/text.hpp"

namespace devctx_tool {

using devctx::detail::bytes_text;

/// Exit codes of the tool.
enum Exit : int { ok = 0, check_failed = 1, error = 2 };

/// `devctx info`: every device and its properties. Returns an Exit code.
int run_info(bool brief);

struct DemoOptions {
  std::string device;        ///< as devctx::parse_device reads it; empty: the default device
  std::size_t n = 1 << 20;   ///< elements per vector
  std::optional<std::uint32_t> seed;  ///< random seed of the inputs; fresh when empty
  float scale = 2.5f;
  bool block_level = false;  ///< block_sum in the block-level form (devctx::Block)
};
/// `devctx demo`: the lesson's round trip, checked against the host and timed. Returns an Exit code.
int run_demo(const DemoOptions& options);

}  // namespace devctx_tool
