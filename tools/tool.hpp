// tools/tool.hpp - the pieces of the `devctx` command-line tool, shared by its source files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <devctx/devctx.hpp>

namespace devctx_tool {

/// Exit codes of the tool.
enum Exit : int { ok = 0, check_failed = 1, error = 2 };

/// A device named as DEVCTX_DEVICE names it: "cpu", "cuda", "cuda:N" ("gpu" = "cuda").
struct DeviceName {
  devctx::Api api = devctx::Api::cpu;
  int id = 0;
};
/// Parses a device name; std::nullopt when it names none.
[[nodiscard]] std::optional<DeviceName> parse_device(const std::string& text);

/// `devctx info`: every device and its properties. Returns an Exit code.
int run_info(bool brief);

struct DemoOptions {
  std::string device;        ///< empty: the default device
  std::size_t n = 1 << 20;   ///< elements per vector
  std::optional<std::uint32_t> seed;  ///< random seed of the inputs; fresh when empty
  float scale = 2.5f;
  bool block_level = false;  ///< block_sum in the block-level form (devctx::Block)
};
/// `devctx demo`: the lesson's round trip, checked against the host and timed. Returns an Exit code.
int run_demo(const DemoOptions& options);

/// "4.0 MiB", "512 KiB", "1.5 GiB".
[[nodiscard]] std::string bytes_text(std::size_t bytes);

}  // namespace devctx_tool
