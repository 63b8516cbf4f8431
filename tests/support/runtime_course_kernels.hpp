// SPDX-License-Identifier: Apache-2.0
// tests/support/runtime_course_kernels.hpp - the course's kernels as one runtime-compiled source
// (vector add, a template, a 2-D map through pointers, a shared-memory reduction, warp sums, a
// tiled matmul): launched on every backend by tests/runtime_kernels_test.cpp, compiled by NVRTC
// without a GPU by tests/cuda/nvrtc_compile_test.cpp.
#pragma once

namespace devctx_test {

inline constexpr const char* kCourseSource = R"(#include <devctx/kernel.hpp>

DEVCTX_KERNEL void vector_add(devctx::span<const float> a, devctx::span<const float> b, devctx::span<float> c) {
  const std::size_t i = devctx::global_idx().x;
  if (i < c.size()) c[i] = a[i] + b[i];
}

template <class T>
DEVCTX_KERNEL void saxpy(T alpha, devctx::span<const T> x, devctx::span<T> y) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = alpha * x[i] + y[i];
}

// A 2-D map over rows x cols through raw pointers and scalars.
DEVCTX_KERNEL void map2d(const float* in, float* out, int rows, int cols, float scale) {
  const devctx::Idx3 g = devctx::global_idx();
  const long c = long(g.x), r = long(g.y);
  if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c] * scale + float(r - c);
}

// One partial sum per block: shared memory and barriers (blocks of 256 threads).
DEVCTX_KERNEL void block_sum(devctx::span<const double> in, devctx::span<double> out) {
  DEVCTX_SHARED(double, tile, 256);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  tile[t] = i < in.size() ? in[i] : 0.0;
  devctx::barrier();
  for (unsigned s = devctx::block_dim().x / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    devctx::barrier();
  }
  if (t == 0) out[devctx::block_idx().x] = tile[0];
}

// One sum per warp of 32 lanes.
DEVCTX_KERNEL void warp_sums(devctx::span<const int> in, devctx::span<int> out) {
  const std::size_t i = devctx::global_idx().x;
  const int s = devctx::warp_sum(i < in.size() ? in[i] : 0);
  if (devctx::lane_id() == 0 && i / 32 < out.size()) out[i / 32] = s;
}

// C[M][N] = A[M][K] * B[K][N] in 16 x 16 tiles of shared memory.
constexpr unsigned kTile = 16;
DEVCTX_KERNEL void matmul(devctx::span<const float> A, devctx::span<const float> B, devctx::span<float> C,
                          unsigned M, unsigned N, unsigned K) {
  DEVCTX_SHARED(float, As, kTile * kTile);
  DEVCTX_SHARED(float, Bs, kTile * kTile);
  const unsigned tx = devctx::thread_idx().x, ty = devctx::thread_idx().y;
  const unsigned row = devctx::block_idx().y * kTile + ty, col = devctx::block_idx().x * kTile + tx;
  float acc = 0;
  for (unsigned t0 = 0; t0 < K; t0 += kTile) {
    As[ty * kTile + tx] = row < M && t0 + tx < K ? A[std::size_t(row) * K + t0 + tx] : 0.0f;
    Bs[ty * kTile + tx] = t0 + ty < K && col < N ? B[std::size_t(t0 + ty) * N + col] : 0.0f;
    devctx::barrier();
    for (unsigned k = 0; k < kTile; ++k) acc += As[ty * kTile + k] * Bs[k * kTile + tx];
    devctx::barrier();
  }
  if (row < M && col < N) C[std::size_t(row) * N + col] = acc;
}
)";

}  // namespace devctx_test
