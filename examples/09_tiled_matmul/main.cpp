// SPDX-License-Identifier: Apache-2.0
// Tensors example - a tiled matrix multiply and a row-wise softmax written with LayoutTensor
// views instead of flat index arithmetic: probs = softmax(A * B), row by row.
//
// 1. matmul: C = A * B with 16 x 16 tiles. Each block computes one tile of C; per step it stages
//    one tile of A and one of B in shared memory (a.tile<16, 16>(bi, k) is the tile, as(i, j)
//    its element), waits at a barrier, and accumulates. No `row * n + col` anywhere.
// 2. softmax: one block of 256 threads per row of C, with devctx's block collectives:
//    block_max for the row maximum, block_sum for the sum of the exponentials.
//
// The host checks every element against a plain C++ computation.
//
//   ./09_tiled_matmul [m] [k] [n]     default 256 x 512 times 512 x 320 (multiples of 16)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <devctx/devctx.hpp>

constexpr unsigned kTile = 16;
constexpr unsigned kThreads = 256;
using Mat = devctx::RowMajor<devctx::dyn, devctx::dyn>;  // rows x cols, extents given at run time
using Tile = devctx::RowMajor<kTile, kTile>;             // a static 16 x 16 tile

DEVCTX_KERNEL void matmul(devctx::LayoutTensor<const float, Mat> a, devctx::LayoutTensor<const float, Mat> b,
                          devctx::LayoutTensor<float, Mat> c) {
  DEVCTX_SHARED(float, a_tile, kTile* kTile);
  DEVCTX_SHARED(float, b_tile, kTile* kTile);
  const devctx::LayoutTensor<float, Tile> as(a_tile), bs(b_tile);  // shared memory, as tensors
  const unsigned ty = devctx::thread_idx().y, tx = devctx::thread_idx().x;
  const unsigned bi = devctx::block_idx().y, bj = devctx::block_idx().x;
  float acc = 0.0f;
  for (unsigned k = 0; k < a.extent(1) / kTile; ++k) {
    as(ty, tx) = a.tile<kTile, kTile>(bi, k)(ty, tx);
    bs(ty, tx) = b.tile<kTile, kTile>(k, bj)(ty, tx);
    devctx::barrier();
    for (unsigned i = 0; i < kTile; ++i) acc += as(ty, i) * bs(i, tx);
    devctx::barrier();
  }
  c.tile<kTile, kTile>(bi, bj)(ty, tx) = acc;
}

DEVCTX_KERNEL void softmax_rows(devctx::LayoutTensor<const float, Mat> x, devctx::LayoutTensor<float, Mat> y) {
  const unsigned row = devctx::block_idx().x, t = devctx::thread_idx().x;
  const unsigned cols = unsigned(x.extent(1));
  float m = -INFINITY;
  for (unsigned c = t; c < cols; c += kThreads) m = std::fmax(m, x(row, c));
  m = devctx::block_max(m);
  float sum = 0.0f;
  for (unsigned c = t; c < cols; c += kThreads) {
    const float e = std::exp(x(row, c) - m);
    y(row, c) = e;
    sum += e;
  }
  const float inv = 1.0f / devctx::block_sum(sum);
  for (unsigned c = t; c < cols; c += kThreads) y(row, c) *= inv;
}

int main(int argc, char** argv) try {
  const unsigned m = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 256;
  const unsigned k = argc > 2 ? unsigned(std::strtoul(argv[2], nullptr, 10)) : 512;
  const unsigned n = argc > 3 ? unsigned(std::strtoul(argv[3], nullptr, 10)) : 320;
  if (m == 0 || k == 0 || n == 0 || m % kTile != 0 || k % kTile != 0 || n % kTile != 0) {
    std::fprintf(stderr, "m, k and n must be positive multiples of %u\n", kTile);
    return 2;
  }
  devctx::DeviceContext ctx;
  std::printf("device: %s\n", ctx.name().c_str());

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);

  auto d_a = ctx.enqueue_create_buffer<float>(a.size());
  auto d_b = ctx.enqueue_create_buffer<float>(b.size());
  auto d_c = ctx.enqueue_create_buffer<float>(std::size_t(m) * n);
  auto d_p = ctx.enqueue_create_buffer<float>(std::size_t(m) * n);
  ctx.enqueue_copy(d_a, std::span<const float>(a));
  ctx.enqueue_copy(d_b, std::span<const float>(b));
  // A buffer plus a layout becomes a LayoutTensor in the kernel.
  const auto& ca = d_a;
  const auto& cb = d_b;
  const auto& cc = d_c;
  ctx.enqueue_function<matmul>({.grid_dim = {n / kTile, m / kTile}, .block_dim = {kTile, kTile}},
                               devctx::tensor(ca, Mat(m, k)), devctx::tensor(cb, Mat(k, n)),
                               devctx::tensor(d_c, Mat(m, n)));
  ctx.enqueue_function<softmax_rows>({.grid_dim = m, .block_dim = kThreads}, devctx::tensor(cc, Mat(m, n)),
                                     devctx::tensor(d_p, Mat(m, n)));
  std::vector<float> probs(std::size_t(m) * n);
  ctx.enqueue_copy(std::span<float>(probs), d_p);  // blocks until the copy is done

  // The same on the host, in double, through host tensors over std::vector memory.
  const auto ha = devctx::tensor(std::span<const float>(a), Mat(m, k));
  const auto hb = devctx::tensor(std::span<const float>(b), Mat(k, n));
  const auto hp = devctx::tensor(std::span<const float>(probs), Mat(m, n));
  double worst = 0.0;
  std::vector<double> row(n);
  for (unsigned i = 0; i < m; ++i) {
    double mx = -INFINITY, sum = 0.0;
    for (unsigned j = 0; j < n; ++j) {
      double s = 0.0;
      for (unsigned p = 0; p < k; ++p) s += double(ha(i, p)) * double(hb(p, j));
      row[j] = s;
      mx = std::fmax(mx, s);
    }
    for (unsigned j = 0; j < n; ++j) sum += std::exp(row[j] - mx);
    for (unsigned j = 0; j < n; ++j)
      worst = std::fmax(worst, std::fabs(std::exp(row[j] - mx) / sum - double(hp(i, j))));
  }
  std::printf("softmax(A * B), %u x %u times %u x %u: largest difference from the host %.3g\n", m, k, k, n, worst);
  if (!(worst < 1e-5)) {
    std::printf("FAILED: the device result differs from the host's\n");
    return 1;
  }
  std::printf("PASSED: all %u probabilities match the host's softmax(A * B)\n", m * n);
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error: %s\n", e.what());
  return 1;
}
