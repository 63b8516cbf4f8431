// SPDX-License-Identifier: Apache-2.0
// The `devctx` command-line tool: `devctx info` lists the devices, `devctx demo` runs the
// host -> device -> host round trip on one of them, checks it and times it, `devctx bench`
// sweeps transfer, launch and allocation sizes, `devctx trace summarize` reports on a trace
// file. Every bad invocation is an error that says what was wrong and what is accepted.
#include <charconv>
#include <clocale>
#include <cmath>
#include <initializer_list>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include <devctx/version.hpp>

#include "tool.hpp"

namespace devctx_tool {

std::size_t parse_count(const std::string& text, const char* option, std::size_t min, std::size_t max) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(std::string(option) + " " + text + ": " + why + " (from " + std::to_string(min) +
                                 " to " + std::to_string(max) + "; digits such as 1000000, or 1e6)");
  };
  if (text.empty()) throw bad("no number given");
  if (text.front() == '-') throw bad("a count cannot be negative");
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  long double value = 0;
  if (digits == text.size()) {
    if (digits > 20) throw bad("out of range");
    std::from_chars(text.data(), text.data() + text.size(), value);
  } else {
    // The 1e6 form: a mantissa and a power of ten that give a whole number. std::from_chars,
    // not strtold: the same under every locale (main() honours the user's, and "2.5" is then
    // a number only in some).
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || text.find_first_of("xXpP") != std::string::npos ||
        !std::isfinite(double(value)))
      throw bad("not a number");
    if (value != std::floor(value)) throw bad("not a whole number");
  }
  if (value < (long double)min || value > (long double)max) throw bad("out of range");
  return std::size_t(value);
}

}  // namespace devctx_tool

namespace {

constexpr const char* kCommands = "info, demo, bench, trace";

bool one_of(std::string_view word, std::initializer_list<std::string_view> words) {
  for (const auto w : words)
    if (word == w) return true;
  return false;
}

/// What CLI11 would say less clearly: a missing or unknown command.
bool command_is_unclear(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "devctx: error: no command given; the commands are %s (`devctx --help` describes them)\n",
                 kCommands);
    return true;
  }
  const std::string_view first = argv[1];
  if (!first.starts_with('-') && !one_of(first, {"info", "demo", "bench", "trace"})) {
    std::fprintf(stderr, "devctx: error: unknown command '%s'; the commands are %s (`devctx --help` describes them)\n",
                 argv[1], kCommands);
    return true;
  }
  if (first == "trace") {
    if (argc < 3) {
      std::fprintf(stderr,
                   "devctx trace: error: no subcommand given; use `devctx trace summarize FILE.json` or "
                   "`devctx trace timeline FILE.json --svg OUT.svg`\n");
      return true;
    }
    const std::string_view second = argv[2];
    if (!second.starts_with('-') && second != "summarize" && second != "timeline") {
      std::fprintf(stderr,
                   "devctx trace: error: unknown subcommand '%s'; use `devctx trace summarize FILE.json` or "
                   "`devctx trace timeline FILE.json --svg OUT.svg`\n",
                   argv[2]);
      return true;
    }
  }
  return false;
}

std::string check_device(const std::string& text) {
  try {
    (void)devctx::parse_device(text);  // the library's rule and message, as for DEVCTX_DEVICE
    return std::string();
  } catch (const devctx::Error& e) {
    return std::string(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace devctx_tool;
  // The user's locale for the tables people read (a decimal comma where that is the custom);
  // what machines read (--json, --csv, the SVG files, trace files) is written with
  // std::to_chars and stays the same under every locale (tests/tools/check_locale.py).
  std::setlocale(LC_ALL, "");
  CLI::App app{
      "devctx: one kernel source for the CPU and CUDA GPUs, with Mojo's DeviceContext model.\n"
      "Lists the devices (info), runs a checked, timed round trip (demo), measures transfers,\n"
      "launches and allocations (bench), and reports on a trace file (trace summarize).",
      "devctx"};
  app.set_version_flag("--version", std::string("devctx ") + DEVCTX_VERSION_STRING +
#if DEVCTX_TOOL_WITH_CUDA
                                        " (backends: cpu, cuda)"
#else
                                        " (backends: cpu; built without CUDA)"
#endif
  );
  app.require_subcommand(1);
  app.footer(
      "The default device is DEVCTX_DEVICE (cpu, cuda, cuda:N) if set, else the first CUDA GPU, else the CPU.\n"
      "DEVCTX_TRACE_FILE=out.json writes a trace of any devctx program (this one too), DEVCTX_REPORT=1\n"
      "prints where the time went at exit (docs/observability.md).");

  bool brief = false, info_json = false, info_settings = false;
  auto* info = app.add_subcommand("info", "List every device (CPU and each CUDA GPU) with its properties");
  info->add_flag("-b,--brief", brief, "Values only, without the explanation of each property");
  info->add_flag("--json", info_json,
                 "One JSON document: every device's properties (and a GPU's versions, PCI bus id, clocks, L2)");
  info->add_flag("--settings", info_settings,
                 "Every DEVCTX_* environment variable: type, default, allowed values, meaning, value now");

  DemoOptions demo_options;
  std::string demo_n = std::to_string(demo_options.n);
  auto* demo = app.add_subcommand("demo",
                                  "Round trip on a device: upload random vectors, vector_add -> scale -> block_sum, download;\n"
                                  "check every element against the host and show where the time went");
  demo->add_option("-d,--device", demo_options.device, "cpu, cuda or cuda:N (default: the default device)")->check(check_device);
  demo->add_option("-n,--n", demo_n, "Elements per vector, 1 to 2^34 (digits, or 1e6)")->capture_default_str();
  demo->add_flag("--block-level", demo_options.block_level,
                 "Run block_sum in the block-level form (devctx::Block): same result, much faster on the CPU");
  demo->add_option("-s,--seed", demo_options.seed, "Seed of the random inputs (default: a fresh one; printed)");

  BenchOptions bench_options;
  std::string bench_max;
  auto* bench = app.add_subcommand("bench",
                                   "Size sweeps on one device: transfers (each path and direction, raw CUDA\n"
                                   "next to devctx on a GPU), kernel launches, allocations");
  bench->add_option("suite", bench_options.suite, "transfers, launch, alloc or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"transfers", "launch", "alloc", "all"}).description(""));
  bench->add_option("-d,--device", bench_options.device, "cpu, cuda or cuda:N (default: the default device)")->check(check_device);
  bench->add_option("--max-bytes", bench_max,
                    "Largest transfer and allocation (default 256 MiB on a GPU, 16 MiB on the CPU)");
  auto* as_json = bench->add_flag("--json", bench_options.json, "Results as JSON (schema: tests/tools/bench_schema.json)");
  bench->add_flag("--csv", bench_options.csv, "Results as CSV")->excludes(as_json);
  bench->add_option("--plot", bench_options.plot,
                    "Also write an SVG plot: GB/s against size, one line per path and direction");

  std::string trace_file;
  auto* trace = app.add_subcommand("trace", "Work with a trace file written by DEVCTX_TRACE_FILE");
  trace->require_subcommand(1);
  auto* summarize = trace->add_subcommand("summarize",
                                          "Where the time went: bytes and time per transfer kind, kernels, advice");
  summarize->add_option("file", trace_file, "The trace (JSON) to read")->required();
  std::string timeline_svg;
  auto* timeline = trace->add_subcommand("timeline",
                                         "Draw the device work of a trace as an SVG timeline, one row per stream");
  timeline->add_option("file", trace_file, "The trace (JSON) to read")->required();
  timeline->add_option("--svg", timeline_svg, "The SVG file to write")->required();

  if (command_is_unclear(argc, argv)) return Exit::error;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "devctx: error: %s (`devctx --help`, or `devctx COMMAND --help`)\n", e.what());
    return Exit::error;
  }

  try {
    if (*info) return info_settings ? run_settings() : run_info(brief, info_json);
    if (*demo) {
      demo_options.n = parse_count(demo_n, "--n", 1, std::size_t{1} << 34);
      return run_demo(demo_options);
    }
    if (*bench) {
      if (!bench_max.empty())
        bench_options.max_bytes = parse_count(bench_max, "--max-bytes", 4096, std::size_t{1} << 36);
      return run_bench(bench_options);
    }
    if (*summarize) return run_trace_summarize(trace_file);
    if (*timeline) return run_trace_timeline(trace_file, timeline_svg);
  } catch (const devctx::Error& e) {
    std::fprintf(stderr, "devctx: error (%s): %s\n", devctx::to_string(e.code()), e.what());
    if (e.code() == devctx::Errc::not_available) std::fprintf(stderr, "(`devctx info` lists the devices)\n");
    return Exit::error;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "devctx: error: %s\n", e.what());
    return Exit::error;
  }
  return Exit::error;
}
