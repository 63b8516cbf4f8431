// The `devctx` command-line tool: `devctx info` lists the devices, `devctx demo` runs the
// host -> device -> host round trip on one of them, checks it and times it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include <devctx/version.hpp>

#include "tool.hpp"

namespace devctx_tool {

std::optional<DeviceName> parse_device(const std::string& text) {
  std::string name = text;
  int id = 0;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    name = text.substr(0, colon);
    const std::string number = text.substr(colon + 1);
    if (number.empty() || number.size() > 6 || number.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    id = std::stoi(number);
  }
  if (name == "cpu") return DeviceName{devctx::Api::cpu, id};
  if (name == "cuda" || name == "gpu") return DeviceName{devctx::Api::cuda, id};
  return std::nullopt;
}

std::string bytes_text(std::size_t bytes) {
  static constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) std::snprintf(text, sizeof text, "%zu bytes", bytes);
  else std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace devctx_tool

int main(int argc, char** argv) {
  using namespace devctx_tool;
  CLI::App app{"devctx: one kernel source for the CPU and CUDA GPUs, with Mojo's DeviceContext model.\n"
               "Lists the devices (info) and runs a checked, timed host -> device -> host round trip (demo).",
               "devctx"};
  app.set_version_flag("--version", std::string("devctx ") + DEVCTX_VERSION_STRING +
#if DEVCTX_TOOL_WITH_CUDA
                                        " (backends: cpu, cuda)"
#else
                                        " (backends: cpu; built without CUDA)"
#endif
  );
  app.require_subcommand(1);
  app.footer("The default device is DEVCTX_DEVICE (cpu, cuda, cuda:N) if set, else the first CUDA GPU, else the CPU.");

  bool brief = false;
  auto* info = app.add_subcommand("info", "List every device (CPU and each CUDA GPU) with its properties");
  info->add_flag("-b,--brief", brief, "Values only, without the explanation of each property");

  DemoOptions demo_options;
  auto* demo = app.add_subcommand(
      "demo", "Round trip on a device: upload random vectors, vector_add -> scale -> block_sum, download;\n"
              "check every element against the host and show where the time went");
  demo->add_option("-d,--device", demo_options.device, "cpu, cuda or cuda:N (default: the default device)")
      ->check([](const std::string& text) {
        return parse_device(text) ? std::string() : "'" + text + "' names no device: use cpu, cuda or cuda:N";
      });
  demo->add_option("-n,--n", demo_options.n, "Elements per vector")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 34).description(""));
  demo->add_flag("--block-level", demo_options.block_level,
                 "Run block_sum in the block-level form (devctx::Block): same result, much faster on the CPU");
  demo->add_option("-s,--seed", demo_options.seed, "Seed of the random inputs (default: a fresh one; printed)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? Exit::ok : Exit::error;  // --help and --version exit 0
  }

  try {
    if (*info) return run_info(brief);
    if (*demo) return run_demo(demo_options);
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
