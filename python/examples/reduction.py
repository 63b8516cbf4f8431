# SPDX-License-Identifier: Apache-2.0
"""Exercise 3, a shared-memory reduction: each block of 256 threads sums its slice in shared
memory, halving the active threads between barriers; the per-block sums are added on the host.

    python reduction.py [cpu|cuda]
"""
import sys

import numpy as np

import devctx

SOURCE = r"""
#include <devctx/kernel.hpp>

constexpr unsigned kBlock = 256;

DEVCTX_KERNEL void block_sum(devctx::span<const double> in, devctx::span<double> partial) {
  DEVCTX_SHARED(double, tile, kBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t i = devctx::global_idx().x;
  tile[t] = i < in.size() ? in[i] : 0.0;
  devctx::barrier();
  for (unsigned s = kBlock / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    devctx::barrier();
  }
  if (t == 0) partial[devctx::block_idx().x] = tile[0];
}
"""
BLOCK = 256


def run(ctx, x):
    """The per-block sums of the float64 array x (one per 256 elements), computed on ctx's device."""
    fn = ctx.compile_function(devctx.Module(SOURCE, name="reduction.cpp"), "block_sum")
    blocks = (len(x) + BLOCK - 1) // BLOCK
    d_x = devctx.to_device(ctx, x)
    partial = ctx.empty(blocks, "float64")
    ctx.fill(partial, float("nan"))
    ctx.enqueue_function(fn, d_x, partial, grid_dim=blocks, block_dim=BLOCK)
    return devctx.to_numpy(partial)


def main(device):
    rng = np.random.default_rng()
    x = rng.standard_normal(1_000_001)
    partial = run(devctx.Context(device), x)
    padded = np.concatenate([x, np.zeros(len(partial) * BLOCK - len(x))]).reshape(-1, BLOCK)
    assert np.allclose(partial, padded.sum(axis=1), rtol=1e-12, atol=1e-12)
    print(f"reduction on {device}: sum {partial.sum():.6f}, NumPy's {x.sum():.6f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
