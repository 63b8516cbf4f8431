// SPDX-License-Identifier: Apache-2.0
// tools/tool.hpp - the pieces of the `devctx` command-line tool, shared by its source files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <devctx/devctx.hpp>

// The tool writes sizes as the library's messages do (one formatting, src/core/text.hpp).
#include "core/text.hpp"

namespace devctx_tool {

using devctx::detail::bytes_text;

/// Exit codes of the tool.
enum Exit : int { ok = 0, check_failed = 1, error = 2 };

/// `devctx info`: every device and its properties (`json`: as one JSON document). Returns an Exit code.
int run_info(bool brief, bool json);

/// `devctx info --settings`: every DEVCTX_* variable (src/core/settings_table.hpp) with its value now.
int run_settings();

/// A count given on the command line: digits ("1000000") or a whole power-of-ten form ("1e6"),
/// within [min, max]. Throws std::invalid_argument with a message naming `option` and what
/// is accepted.
[[nodiscard]] std::size_t parse_count(const std::string& text, const char* option, std::size_t min, std::size_t max);

/// The operations of a trace file written by devctx (DEVCTX_TRACE_FILE, devctx::trace::write).
/// Throws std::runtime_error saying what is wrong with the file.
[[nodiscard]] std::vector<devctx::trace::Operation> read_trace(const std::string& path);
/// `devctx trace summarize FILE`: the report of a DEVCTX_TRACE_FILE trace. Returns an Exit code.
int run_trace_summarize(const std::string& path);
/// `devctx trace timeline FILE --svg OUT`: the device tracks of a trace drawn as an SVG
/// timeline (one row per stream, one bar per operation). Returns an Exit code.
int run_trace_timeline(const std::string& path, const std::string& svg_path);
/// `text` with the characters XML gives a meaning to (& < > ") written as entities (svg_plot.cpp).
[[nodiscard]] std::string xml_escape(const std::string& text);
/// A coordinate or length in an SVG file: one decimal (svg_plot.cpp).
[[nodiscard]] std::string svg_number(double v);

struct BenchOptions {
  std::string suite = "all";       ///< transfers, launch, alloc or all
  std::string device;              ///< as for demo; empty: the default device
  std::size_t max_bytes = 0;       ///< largest transfer/allocation; 0: the suite's default
  bool json = false, csv = false;  ///< output formats (a table otherwise)
  std::string plot;                ///< SVG file to write, if any
};
/// One measurement of `devctx bench`.
struct BenchRow {
  std::string suite;   ///< "transfers", "launch", "alloc"
  std::string series;  ///< "devctx HtoD pinned", "raw CUDA DtoH pageable", ...
  std::uint64_t size = 0;
  std::string unit;  ///< "bytes" or "blocks"
  std::uint64_t iterations = 0;
  double time_us = 0;    ///< per operation
  double gb_per_s = -1;  ///< transfers only (10^9 bytes per second); -1 elsewhere
};
/// `devctx bench`: size sweeps on one device. Returns an Exit code.
int run_bench(const BenchOptions& options);
/// `rows` as JSON (tests/tools/bench_schema.json), as CSV, or printed as a table.
[[nodiscard]] std::string bench_json(const std::vector<BenchRow>& rows, const std::string& device,
                                     const std::string& device_name, const std::string& suite);
[[nodiscard]] std::string bench_csv(const std::vector<BenchRow>& rows);
void bench_table(const std::vector<BenchRow>& rows);
/// The SVG plot of `rows`: x the size (log scale), y GB/s for transfer rows (time otherwise),
/// one polyline per series. Written by the tool itself (no plotting library).
[[nodiscard]] std::string bench_svg(const std::vector<BenchRow>& rows, const std::string& title);

struct DemoOptions {
  std::string device;                 ///< as devctx::parse_device reads it; empty: the default device
  std::size_t n = 1 << 20;            ///< elements per vector
  std::optional<std::uint32_t> seed;  ///< random seed of the inputs; fresh when empty
  float scale = 2.5f;
  bool block_level = false;  ///< block_sum in the block-level form (devctx::Block)
};
/// `devctx demo`: the lesson's round trip, checked against the host and timed. Returns an Exit code.
int run_demo(const DemoOptions& options);

}  // namespace devctx_tool
