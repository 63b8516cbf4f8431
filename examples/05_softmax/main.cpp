// SPDX-License-Identifier: Apache-2.0
// AI example - row-wise softmax, as at the end of a language model (one row of logits per
// token) or inside attention: y[c] = exp(x[c] - max(x)) / sum_c' exp(x[c'] - max(x)).
//
// One block of 256 threads per row. Each thread handles every 256th element; the block then
// combines the threads' partial results in two steps:
//   1. inside a warp (32 threads that run in lockstep) with shuffles, no memory needed;
//   2. across the block's 8 warps through a small DEVCTX_SHARED array, after a barrier.
// This is done twice: once for the row's maximum (subtracting it keeps exp() from
// overflowing) and once for the sum of the exponentials.
//
//   ./05_softmax [rows] [cols]     default 512 rows x 1000 columns
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / devctx::warp_size;

// Maximum over the 32 lanes of a warp: after log2(32) = 5 butterfly exchanges every lane holds it.
DEVCTX_DEVICE float warp_max(float v) {
  for (unsigned mask = devctx::warp_size / 2; mask > 0; mask /= 2) v = std::fmax(v, devctx::shuffle_xor(v, mask));
  return v;
}

// Block-wide maximum / sum, returned to every thread. `partial` holds one value per warp.
// Every warp re-reduces the warp results itself, so no second broadcast step is needed; the
// final barrier keeps `partial` from being overwritten by the next call while still read.
DEVCTX_DEVICE float block_max(float v, float* partial) {
  const unsigned lane = devctx::lane_id(), warp = devctx::thread_idx().x / devctx::warp_size;
  v = warp_max(v);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  v = warp_max(lane < kWarps ? partial[lane] : -INFINITY);
  devctx::barrier();
  return v;
}

DEVCTX_DEVICE float block_sum(float v, float* partial) {
  const unsigned lane = devctx::lane_id(), warp = devctx::thread_idx().x / devctx::warp_size;
  v = devctx::warp_sum(v);
  if (lane == 0) partial[warp] = v;
  devctx::barrier();
  v = devctx::warp_sum(lane < kWarps ? partial[lane] : 0.0f);
  devctx::barrier();
  return v;
}

DEVCTX_KERNEL void softmax_rows(devctx::span<const float> logits, devctx::span<float> probs, unsigned cols) {
  DEVCTX_SHARED(float, partial, kWarps);
  const std::size_t row_start = std::size_t(devctx::block_idx().x) * cols;
  const auto x = logits.subspan(row_start, cols);
  const auto y = probs.subspan(row_start, cols);
  const unsigned t = devctx::thread_idx().x;

  float m = -INFINITY;
  for (unsigned c = t; c < cols; c += kThreads) m = std::fmax(m, x[c]);
  m = block_max(m, partial);

  float sum = 0.0f;
  for (unsigned c = t; c < cols; c += kThreads) {
    const float e = std::exp(x[c] - m);
    y[c] = e;
    sum += e;
  }
  sum = block_sum(sum, partial);

  const float inv = 1.0f / sum;
  for (unsigned c = t; c < cols; c += kThreads) y[c] *= inv;
}

int main(int argc, char** argv) try {
  using Clock = std::chrono::steady_clock;
  const unsigned rows = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 512;
  const unsigned cols = argc > 2 ? unsigned(std::strtoul(argv[2], nullptr, 10)) : 1000;
  const std::size_t n = std::size_t(rows) * cols;

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("softmax over %u rows of %u logits, one block of %u threads per row\n", rows, cols, kThreads);

  std::vector<float> logits(n), probs(n);
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> dist(0.0f, 4.0f);
  for (auto& v : logits) v = dist(rng);

  auto d_logits = ctx.enqueue_create_buffer<float>(n);
  auto d_probs = ctx.enqueue_create_buffer<float>(n);
  ctx.enqueue_copy(d_logits, logits);
  const devctx::LaunchConfig cfg{.grid_dim = rows, .block_dim = kThreads};
  ctx.enqueue_function<softmax_rows>(cfg, d_logits, d_probs, cols);  // warm-up
  const auto k0 = ctx.record_event();
  ctx.enqueue_function<softmax_rows>(cfg, d_logits, d_probs, cols);
  const auto k1 = ctx.record_event();
  ctx.enqueue_copy(probs, d_probs);
  ctx.synchronize();

  // Host reference, in double precision.
  const auto h0 = Clock::now();
  std::vector<double> expected(n);
  for (unsigned r = 0; r < rows; ++r) {
    const float* x = &logits[std::size_t(r) * cols];
    double m = -INFINITY, sum = 0.0;
    for (unsigned c = 0; c < cols; ++c) m = std::fmax(m, double(x[c]));
    for (unsigned c = 0; c < cols; ++c) sum += std::exp(double(x[c]) - m);
    for (unsigned c = 0; c < cols; ++c) expected[std::size_t(r) * cols + c] = std::exp(double(x[c]) - m) / sum;
  }
  const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - h0).count();
  std::printf("  kernel %.3f ms, host reference (1 thread, double) %.3f ms\n", devctx::elapsed_ms(k0, k1), host_ms);

  std::size_t wrong = 0;
  double max_diff = 0.0, worst_row_sum = 1.0;
  for (unsigned r = 0; r < rows; ++r) {
    double row_sum = 0.0;
    for (unsigned c = 0; c < cols; ++c) {
      const std::size_t i = std::size_t(r) * cols + c;
      const double diff = std::fabs(probs[i] - expected[i]);
      max_diff = std::fmax(max_diff, diff);
      row_sum += probs[i];
      if (!(diff <= 1e-6 + 1e-4 * expected[i]) && wrong++ < 5)
        std::printf("  probs[%u][%u] = %g, host %g\n", r, c, probs[i], expected[i]);
    }
    if (std::fabs(row_sum - 1.0) > std::fabs(worst_row_sum - 1.0)) worst_row_sum = row_sum;
  }
  std::printf("  largest difference from the host %.1e; the row sum farthest from 1 is %.7f\n", max_diff, worst_row_sum);
  if (wrong != 0 || std::fabs(worst_row_sum - 1.0) > 1e-4) {
    std::printf("FAILED: %zu of %zu probabilities differ from the host's\n", wrong, n);
    return 1;
  }
  std::printf("PASSED: all %zu probabilities match the host's softmax\n", n);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
