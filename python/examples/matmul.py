# SPDX-License-Identifier: Apache-2.0
"""Exercise 4, a tiled matrix multiply: C = A @ B with 16 x 16 tiles of A and B staged in shared
memory, one thread per element of C, two barriers per tile.

    python matmul.py [cpu|cuda]
"""
import sys

import numpy as np

import devctx

SOURCE = r"""
#include <devctx/kernel.hpp>

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
"""
TILE = 16


def run(ctx, a, b):
    """a @ b for float32 matrices, computed on ctx's device."""
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2
    fn = ctx.compile_function(devctx.Module(SOURCE, name="matmul.cpp"), "matmul")
    d_a = devctx.to_device(ctx, np.ascontiguousarray(a).reshape(-1))
    d_b = devctx.to_device(ctx, np.ascontiguousarray(b).reshape(-1))
    c = ctx.empty(m * n, "float32")
    ctx.fill(c, float("nan"))
    ctx.enqueue_function(fn, d_a, d_b, c, m, n, k, grid_dim=((n + TILE - 1) // TILE, (m + TILE - 1) // TILE),
                         block_dim=(TILE, TILE))
    return devctx.to_numpy(c).reshape(m, n)


def main(device):
    rng = np.random.default_rng()
    a, b = rng.standard_normal((150, 70), dtype=np.float32), rng.standard_normal((70, 90), dtype=np.float32)
    got = run(devctx.Context(device), a, b)
    assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    print(f"matmul on {device}: {a.shape} @ {b.shape}, every element within 1e-4 of NumPy's")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
