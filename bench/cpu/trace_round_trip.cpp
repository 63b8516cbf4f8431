// SPDX-License-Identifier: Apache-2.0
// The traces of docs/observability.md: lesson 4's chain of kernels (examples/04_transfers) run
// two ways, each recorded with devctx::trace into its own file and reported: "round trip"
// (download after every kernel and upload again, from ordinary std::vector memory) and
// "resident" (upload once, every kernel on device data, download once). The results of both
// are checked against the host. Usage:
//   devctx_trace_round_trip [--device cpu|cuda|cuda:N] [--n FLOATS] [--steps K] [--out DIR]
// writes DIR/round_trip.json and DIR/resident.json (DIR defaults to the current directory);
// `devctx trace timeline DIR/round_trip.json --svg round_trip.svg` draws one.
#include <devctx/devctx.hpp>

#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/args.hpp"

namespace {

DEVCTX_KERNEL void chain_step(devctx::span<float> x, float scale, float shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) x[i] = x[i] * scale + shift;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string device, out = ".";
  std::size_t n = std::size_t{4} << 20;
  int steps = 8;
  devctx_bench::Args args("devctx_trace_round_trip",
                          "The traces of docs/observability.md: lesson 4's chain, round trip and resident");
  args.option("--device", device, "cpu, cuda or cuda:N (default: the default device)");
  args.option("--n", n, "Floats in the vector", 1, std::size_t{1} << 32);
  args.option("--steps", steps, "Kernels in the chain", 1, 100000);
  args.option("--out", out, "Directory of round_trip.json and resident.json");
  args.parse(argc, argv);
  devctx::DeviceContext ctx = [&] {
    if (device.empty()) return devctx::DeviceContext{};
    const auto id = devctx::parse_device(device);
    return devctx::DeviceContext{id.api, id.id};
  }();
  const float scale = 0.5f, shift = 1.0f;
  std::vector<float> input(n), round_trip(n), resident(n);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (auto& v : input) v = dist(rng);
  auto d_x = ctx.enqueue_create_buffer<float>(n);
  auto h_x = ctx.enqueue_create_host_buffer<float>(n);
  const devctx::LaunchConfig cfg{.grid_dim = unsigned((n + 255) / 256), .block_dim = 256};
  // Warm-up: first touches of memory are not what either way costs.
  ctx.enqueue_copy(d_x, std::span<const float>(input));
  ctx.enqueue_function<chain_step>(cfg, d_x, scale, shift);
  ctx.enqueue_copy(std::span<float>(round_trip), d_x);
  ctx.enqueue_copy(h_x, d_x);
  ctx.enqueue_copy(d_x, h_x);
  ctx.synchronize();
  std::printf("device: %s; %zu floats (%.1f MiB), %d kernels in a chain\n", ctx.name().c_str(), n,
              double(n) * sizeof(float) / (1 << 20), steps);

  // Before: every intermediate result goes back to the host (std::vector) and up again.
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_copy(d_x, std::span<const float>(input));
  for (int s = 0; s < steps; ++s) {
    ctx.enqueue_function<chain_step>(cfg, d_x, scale, shift);
    ctx.enqueue_copy(std::span<float>(round_trip), d_x);
    if (s + 1 < steps) ctx.enqueue_copy(d_x, std::span<const float>(round_trip));
  }
  ctx.synchronize();
  devctx::trace::stop();
  devctx::trace::write(out + "/round_trip.json");
  std::printf("\n== round trip: %s/round_trip.json\n%s", out.c_str(), devctx::trace::to_string(ctx.report()).c_str());

  // After: the data stays on the device; the host side is a HostBuffer.
  devctx::trace::clear();
  devctx::trace::start();
  ctx.enqueue_copy(h_x, std::span<const float>(input));  // host -> host: filling the HostBuffer
  ctx.enqueue_copy(d_x, h_x);
  for (int s = 0; s < steps; ++s) ctx.enqueue_function<chain_step>(cfg, d_x, scale, shift);
  ctx.enqueue_copy(h_x, d_x);
  ctx.synchronize();
  devctx::trace::stop();
  devctx::trace::write(out + "/resident.json");
  std::printf("\n== resident: %s/resident.json\n%s", out.c_str(), devctx::trace::to_string(ctx.report()).c_str());
  devctx::trace::clear();
  for (std::size_t i = 0; i < n; ++i) resident[i] = h_x[i];

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float x = input[i];
    for (int s = 0; s < steps; ++s) x = x * scale + shift;
    wrong += (round_trip[i] != x) + (resident[i] != x);
  }
  if (wrong != 0) {
    std::printf("FAILED: %zu results differ from the host's\n", wrong);
    return 1;
  }
  std::printf("\nPASSED: both ways give the host's result for all %zu elements\n", n);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
