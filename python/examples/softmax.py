# SPDX-License-Identifier: Apache-2.0
"""Exercise 5, row-wise softmax: one block of 256 threads per row; the row's maximum and then the
sum of exponentials are block-wide reductions in shared memory between barriers.

    python softmax.py [cpu|cuda]
"""
import sys

import numpy as np

import devctx

SOURCE = r"""
#include <devctx/kernel.hpp>
#include <cmath>

constexpr unsigned kBlock = 256;

DEVCTX_KERNEL void softmax(devctx::span<const float> x, devctx::span<float> out, unsigned cols) {
  DEVCTX_SHARED(float, red, kBlock);
  const unsigned t = devctx::thread_idx().x;
  const std::size_t base = std::size_t(devctx::block_idx().x) * cols;
  float m = -INFINITY;
  for (unsigned c = t; c < cols; c += kBlock) m = fmaxf(m, x[base + c]);
  red[t] = m;
  devctx::barrier();
  for (unsigned s = kBlock / 2; s > 0; s /= 2) {
    if (t < s) red[t] = fmaxf(red[t], red[t + s]);
    devctx::barrier();
  }
  const float row_max = red[0];
  devctx::barrier();
  float sum = 0;
  for (unsigned c = t; c < cols; c += kBlock) sum += expf(x[base + c] - row_max);
  red[t] = sum;
  devctx::barrier();
  for (unsigned s = kBlock / 2; s > 0; s /= 2) {
    if (t < s) red[t] += red[t + s];
    devctx::barrier();
  }
  const float total = red[0];
  for (unsigned c = t; c < cols; c += kBlock) out[base + c] = expf(x[base + c] - row_max) / total;
}
"""
BLOCK = 256


def run(ctx, x):
    """Softmax of each row of the 2-D float32 array x, computed on ctx's device."""
    rows, cols = x.shape
    fn = ctx.compile_function(devctx.Module(SOURCE, name="softmax.cpp"), "softmax")
    d_x = devctx.to_device(ctx, np.ascontiguousarray(x).reshape(-1))
    out = ctx.empty(rows * cols, "float32")
    ctx.fill(out, float("nan"))
    ctx.enqueue_function(fn, d_x, out, cols, grid_dim=rows, block_dim=BLOCK)
    return devctx.to_numpy(out).reshape(rows, cols)


def reference(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(device):
    rng = np.random.default_rng()
    x = rng.standard_normal((67, 1000), dtype=np.float32) * 4
    got = run(devctx.Context(device), x)
    assert np.allclose(got, reference(x), rtol=1e-5, atol=1e-6)
    print(f"softmax on {device}: {x.shape}, every element within 1e-5 of NumPy's (float64)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
