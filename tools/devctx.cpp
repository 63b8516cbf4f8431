// SPDX-License-Identifier: Apache-2.0
// The `devctx` command-line tool: `devctx info` lists the devices, `devctx demo` runs the
// host -> device -> host round trip on one of them, checks it and times it.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include <devctx/version.hpp>

#include "tool.hpp"

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
        try {
          (void)devctx::parse_device(text);  // the library's rule and message, as for DEVCTX_DEVICE
          return std::string();
        } catch (const devctx::Error& e) {
          return std::string(e.what());
        }
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
