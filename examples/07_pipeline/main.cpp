// SPDX-License-Identifier: Apache-2.0
// Lesson 4, continued - hiding transfers behind work: a GPU has separate copy engines for each
// direction, so an upload, a kernel and a download can all run at the same time if they work on
// different data. Cut the data into chunks and run three streams: while the kernel works on
// chunk i, chunk i+1 is uploaded and chunk i-1 downloaded. Events order each chunk's three steps;
// a few device slots, reused in turn, hold the chunks in flight.
//
// This program runs a transfer-bound job (a few multiply-adds per element) two ways and times
// both on the host clock:
//   serial:    for each chunk, upload, kernel, download, all on one stream
//   pipelined: the same work on an upload, a compute and a download stream
// The data lives in HostBuffers (page-locked on CUDA): only page-locked memory lets a copy run
// while the host and the other engines work. Both ways must give the host's result exactly.
//
//   ./07_pipeline [n] [chunks] [work]   n floats (default 33554432 = 128 MiB), chunks (default 16),
//                                       multiply-adds per element (default 4)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

DEVCTX_KERNEL void work_kernel(devctx::span<float> x, int work, float scale, float shift) {
  const std::size_t i = devctx::global_idx().x;
  if (i < x.size()) {
    float v = x[i];
    for (int k = 0; k < work; ++k) v = v * scale + shift;
    x[i] = v;
  }
}

int main(int argc, char** argv) try {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{32} << 20;
  const std::size_t chunks = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16;
  const int work = argc > 3 ? std::atoi(argv[3]) : 4;
  if (chunks == 0 || n % chunks != 0) {
    std::printf("FAILED: n (%zu) must be a multiple of chunks (%zu)\n", n, chunks);
    return 1;
  }
  const std::size_t c = n / chunks;
  const float scale = 0.5f, shift = 1.0f;  // x * 0.5 is exact: fused or not, every device agrees
  constexpr std::size_t kSlots = 3;        // chunks in flight: one uploading, one computing, one downloading

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("%zu floats (%.1f MiB) in %zu chunks, %d multiply-adds per element\n", n,
              double(n) * sizeof(float) / (1 << 20), chunks, work);

  auto h_in = ctx.enqueue_create_host_buffer<float>(n);
  auto h_serial = ctx.enqueue_create_host_buffer<float>(n);
  auto h_pipelined = ctx.enqueue_create_host_buffer<float>(n);
  std::vector<devctx::DeviceBuffer<float>> slots;
  for (std::size_t s = 0; s < kSlots; ++s) slots.push_back(ctx.enqueue_create_buffer<float>(c));
  auto up = ctx.create_stream();
  auto compute = ctx.create_stream();
  auto down = ctx.create_stream();
  ctx.synchronize();
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (auto& v : h_in) v = dist(rng);
  for (auto& v : h_serial) v = NAN;
  for (auto& v : h_pipelined) v = NAN;
  const devctx::LaunchConfig cfg{.grid_dim = unsigned((c + 255) / 256), .block_dim = 256};

  const auto serial = [&] {
    for (std::size_t i = 0; i < chunks; ++i) {
      ctx.enqueue_copy(slots[0], h_in.slice(i * c, c));
      ctx.enqueue_function<work_kernel>(cfg, slots[0], work, scale, shift);
      ctx.enqueue_copy(h_serial.slice(i * c, c), slots[0]);
    }
    ctx.synchronize();
  };
  const auto pipelined = [&] {
    std::vector<devctx::Event> freed(kSlots);  // the download that last used each slot
    for (std::size_t i = 0; i < chunks; ++i) {
      auto& slot = slots[i % kSlots];
      if (freed[i % kSlots]) up.enqueue_wait_for(freed[i % kSlots]);
      up.enqueue_copy(slot, h_in.slice(i * c, c));
      const auto uploaded = up.record_event();
      compute.enqueue_wait_for(uploaded);
      compute.enqueue_function<work_kernel>(cfg, slot, work, scale, shift);
      const auto computed = compute.record_event();
      down.enqueue_wait_for(computed);
      down.enqueue_copy(h_pipelined.slice(i * c, c), slot);
      freed[i % kSlots] = down.record_event();
    }
    ctx.synchronize();  // the context's streams: up, compute and down included
  };
  const auto ms = [](const auto& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };

  // Warm-up (first use of the memory and the kernel), then the best of three of each, in turn.
  serial();
  pipelined();
  double serial_ms = 1e300, pipelined_ms = 1e300;
  for (int trial = 0; trial < 3; ++trial) {
    serial_ms = std::min(serial_ms, ms(serial));
    pipelined_ms = std::min(pipelined_ms, ms(pipelined));
  }
  const double gb = 2.0 * double(n) * sizeof(float) / 1e9;  // bytes moved, both directions
  std::printf("  serial round trip  %9.3f ms  (%.1f GB/s moved)\n", serial_ms, gb / (serial_ms / 1e3));
  std::printf("  pipelined          %9.3f ms  (%.1f GB/s moved)\n", pipelined_ms, gb / (pipelined_ms / 1e3));
  std::printf("  pipelining was %.2fx the serial round trip's speed\n", serial_ms / pipelined_ms);

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float x = h_in[i];
    for (int k = 0; k < work; ++k) x = x * scale + shift;
    if (h_serial[i] != x || h_pipelined[i] != x) {
      if (wrong++ < 5) std::printf("  x[%zu]: serial %g, pipelined %g, host %g\n", i, h_serial[i], h_pipelined[i], x);
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
