# SPDX-License-Identifier: Apache-2.0
"""Exercise 2, a 2-D map: a 2-D grid of 2-D blocks, one thread per element of a rows x cols
matrix, with scalar arguments (the ints and the float are converted to the kernel's declared
types, range-checked).

    python map2d.py [cpu|cuda]
"""
import sys

import numpy as np

import devctx

SOURCE = r"""
#include <devctx/kernel.hpp>

DEVCTX_KERNEL void map2d(devctx::span<const float> in, devctx::span<float> out, int rows, int cols, float scale) {
  const devctx::Idx3 g = devctx::global_idx();
  const long c = long(g.x), r = long(g.y);
  if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c] * scale + float(r - c);
}
"""


def run(ctx, x, scale):
    """x * scale + (row - col) for a 2-D float32 array x, computed on ctx's device."""
    rows, cols = x.shape
    fn = ctx.compile_function(devctx.Module(SOURCE, name="map2d.cpp"), "map2d")
    d_x = devctx.to_device(ctx, np.ascontiguousarray(x).reshape(-1))
    out = ctx.empty(rows * cols, "float32")
    ctx.fill(out, float("nan"))
    ctx.enqueue_function(fn, d_x, out, rows, cols, scale, grid_dim=((cols + 15) // 16, (rows + 7) // 8),
                         block_dim=(16, 8))
    return devctx.to_numpy(out).reshape(rows, cols)


def reference(x, scale):
    rows, cols = x.shape
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return x * np.float32(scale) + (r - c).astype(np.float32)


def main(device):
    rng = np.random.default_rng()
    x = rng.standard_normal((123, 457), dtype=np.float32)
    got = run(devctx.Context(device), x, 1.5)
    assert np.array_equal(got, reference(x, 1.5))
    print(f"map2d on {device}: {x.shape} elements, all equal to NumPy's")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
