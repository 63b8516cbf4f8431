// SPDX-License-Identifier: Apache-2.0
// Lesson 4 - transferring data: host and device memories are separate, and copying between
// them is the slow part of a GPU program (a PCIe link moves tens of GB/s; a GPU's own memory
// several TB/s). So upload once, keep intermediate results on the device across kernels, and
// download only the final result.
//
// This program runs the same chain of `steps` kernels (x = x * 0.5 + 1, a stand-in for the
// layers of a model) two ways and times both with devctx events:
//   resident:   upload, `steps` kernels on device data, download
//   round trip: upload, kernel, download, then again for every step
//
//   ./04_transfers [n] [steps]     n floats (default 4194304 = 16 MiB), steps (default 8)
#include <cstdio>
#include <cstdlib>
#include <random>

#include <devctx/devctx.hpp>

DEVCTX_KERNEL void step(devctx::span<float> x, float scale, float shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) x[i] = x[i] * scale + shift;
}

int main(int argc, char** argv) try {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{4} << 20;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 8;
  const float scale = 0.5f, shift = 1.0f;

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("%zu floats (%.1f MiB), %d kernels in a chain\n", n, double(n) * sizeof(float) / (1 << 20), steps);

  auto h_in = ctx.enqueue_create_host_buffer<float>(n);
  auto h_resident = ctx.enqueue_create_host_buffer<float>(n);
  auto h_round_trip = ctx.enqueue_create_host_buffer<float>(n);
  auto d_x = ctx.enqueue_create_buffer<float>(n);
  ctx.synchronize();
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (auto& v : h_in) v = dist(rng);

  const devctx::LaunchConfig cfg{.grid_dim = unsigned((n + 255) / 256), .block_dim = 256};

  // Warm-up: the first use of a device and its memory costs extra (page faults, lazy loading).
  ctx.enqueue_copy(d_x, h_in);
  ctx.enqueue_function<step>(cfg, d_x, scale, shift);
  ctx.enqueue_copy(h_resident, d_x);
  ctx.synchronize();

  // 1. Resident: the data stays on the device between kernels.
  const auto r0 = ctx.record_event();
  ctx.enqueue_copy(d_x, h_in);
  for (int s = 0; s < steps; ++s) ctx.enqueue_function<step>(cfg, d_x, scale, shift);
  ctx.enqueue_copy(h_resident, d_x);
  const auto r1 = ctx.record_event();

  // 2. Round trip: copy back to the host after every kernel and up again for the next one.
  const auto t0 = ctx.record_event();
  ctx.enqueue_copy(d_x, h_in);
  for (int s = 0; s < steps; ++s) {
    ctx.enqueue_function<step>(cfg, d_x, scale, shift);
    ctx.enqueue_copy(h_round_trip, d_x);
    if (s + 1 < steps) ctx.enqueue_copy(d_x, h_round_trip);
  }
  const auto t1 = ctx.record_event();
  ctx.synchronize();  // the host buffers hold the results only after this

  const double resident_ms = devctx::elapsed_ms(r0, r1);
  const double round_trip_ms = devctx::elapsed_ms(t0, t1);
  std::printf("  resident   (2 copies, %2d kernels)  %9.3f ms\n", steps, resident_ms);
  std::printf("  round trip (%2d copies, %2d kernels) %9.3f ms\n", 2 * steps, steps, round_trip_ms);
  std::printf("  keeping the data on the device was %.1fx faster\n", round_trip_ms / resident_ms);

  // The host reference does the same float operations in the same order: results are exact.
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float x = h_in[i];
    for (int s = 0; s < steps; ++s) x = x * scale + shift;
    if (h_resident[i] != x || h_round_trip[i] != x) {
      if (wrong++ < 5)
        std::printf("  x[%zu]: resident %g, round trip %g, host %g\n", i, h_resident[i], h_round_trip[i], x);
    }
  }
  if (wrong != 0) {
    std::printf("FAILED: %zu of %zu elements differ from the host's result\n", wrong, n);
    return 1;
  }
  std::printf("PASSED: both ways give the host's result for all %zu elements\n", n);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
