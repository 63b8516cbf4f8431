// SPDX-License-Identifier: Apache-2.0
// Lesson 1 - why GPUs for AI workloads: a matrix multiply, the core of every neural network
// layer, done by one host thread (a naive triple loop) and by a devctx kernel.
//
// C = A x B does n^3 multiply-adds on only 3 n^2 numbers: lots of independent work per byte,
// which is what thousands of GPU threads are good at. The kernel gives each thread one element
// of C and has each block of 16 x 16 threads walk along A and B in 16 x 16 tiles: the block
// loads a tile of each into fast shared memory (DEVCTX_SHARED), waits until all its threads
// have loaded (devctx::barrier), uses the tiles 16 times each, and waits again before the next
// tile overwrites them. So every element is read from main memory n/16 times instead of n.
//
//   ./01_why_gpus [n]          n x n matrices (default 512)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

constexpr unsigned kTile = 16;

DEVCTX_KERNEL void matmul_tiled(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c,
                                unsigned n) {
  DEVCTX_SHARED(float, tile_a, kTile* kTile);
  DEVCTX_SHARED(float, tile_b, kTile* kTile);
  const unsigned tx = devctx::thread_idx().x;
  const unsigned ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty;
  const unsigned col = devctx::block_idx().x * kTile + tx;

  float acc = 0.0f;
  for (unsigned t = 0; t < n; t += kTile) {
    // Each thread loads one element of each tile (zero past the matrix edge).
    tile_a[ty * kTile + tx] = (row < n && t + tx < n) ? a[std::size_t(row) * n + t + tx] : 0.0f;
    tile_b[ty * kTile + tx] = (t + ty < n && col < n) ? b[std::size_t(t + ty) * n + col] : 0.0f;
    devctx::barrier();  // the tiles are complete
    for (unsigned k = 0; k < kTile; ++k) acc += tile_a[ty * kTile + k] * tile_b[k * kTile + tx];
    devctx::barrier();  // everyone is done with the tiles before they are overwritten
  }
  if (row < n && col < n) c[std::size_t(row) * n + col] = acc;
}

static void matmul_host(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c, unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (unsigned k = 0; k < n; ++k) acc += a[std::size_t(i) * n + k] * b[std::size_t(k) * n + j];
      c[std::size_t(i) * n + j] = acc;
    }
}

int main(int argc, char** argv) try {
  using Clock = std::chrono::steady_clock;
  const unsigned n = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 512;
  const std::size_t nn = std::size_t(n) * n;

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("C = A x B, %u x %u matrices: %.0f million multiply-adds on %.1f MiB of data\n", n, n,
              double(nn) * n / 1e6, 3.0 * double(nn) * sizeof(float) / (1 << 20));

  std::vector<float> a(nn), b(nn), c_host(nn), c_dev(nn);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);

  const auto h0 = Clock::now();
  matmul_host(a, b, c_host, n);
  const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - h0).count();

  auto d_a = ctx.enqueue_create_buffer<float>(nn);
  auto d_b = ctx.enqueue_create_buffer<float>(nn);
  auto d_c = ctx.enqueue_create_buffer<float>(nn);
  const auto t0 = Clock::now();
  ctx.enqueue_copy(d_a, a);  // std::vector works too: ordinary (pageable) host memory
  ctx.enqueue_copy(d_b, b);
  const unsigned blocks = (n + kTile - 1) / kTile;
  const devctx::LaunchConfig cfg{.grid_dim = {blocks, blocks}, .block_dim = {kTile, kTile}};
  ctx.enqueue_function<matmul_tiled>(cfg, d_a, d_b, d_c, n);  // a warm-up run
  const auto k0 = ctx.record_event();
  ctx.enqueue_function<matmul_tiled>(cfg, d_a, d_b, d_c, n);  // the timed run
  const auto k1 = ctx.record_event();
  ctx.enqueue_copy(c_dev, d_c);
  ctx.synchronize();
  const double total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double kernel_ms = devctx::elapsed_ms(k0, k1);

  const double flop = 2.0 * double(nn) * n;
  std::printf("  %-36s %9.2f ms  %7.2f GFLOP/s\n", "host, naive triple loop (1 thread)", host_ms, flop / host_ms / 1e6);
  std::printf("  %-36s %9.2f ms  %7.2f GFLOP/s\n", "device, tiled kernel (16 x 16 tiles)", kernel_ms,
              flop / kernel_ms / 1e6);
  std::printf("  the kernel ran %.1fx as fast as the host loop (transfers and the warm-up run: %.2f ms more)\n",
              host_ms / kernel_ms, total_ms - kernel_ms);
  if (ctx.api() == devctx::Api::cpu)
    std::printf("  (the CPU backend runs kernels on this machine's %u cores; a GPU has thousands of lanes)\n",
                ctx.info().multiprocessors);

  // Both sum over k in the same order, but a GPU fuses multiply and add (FMA): allow rounding.
  double max_diff = 0.0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < nn; ++i) {
    const double diff = std::fabs(double(c_dev[i]) - double(c_host[i]));
    max_diff = std::fmax(max_diff, diff);
    if (!(diff <= 1e-3 + 1e-4 * std::fabs(double(c_host[i])))) {
      if (wrong++ < 5) std::printf("  C[%zu][%zu] = %g, host has %g\n", i / n, i % n, c_dev[i], c_host[i]);
    }
  }
  if (wrong != 0) {
    std::printf("FAILED: %zu of %zu elements differ from the host's result\n", wrong, nn);
    return 1;
  }
  std::printf("PASSED: all %zu elements agree with the host (largest difference %.1e)\n", nn, max_diff);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
