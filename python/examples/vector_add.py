# SPDX-License-Identifier: Apache-2.0
"""Exercise 1, vector add: a kernel written in Python's process, compiled at run time for the
context's device (the same source on the CPU and on a GPU), launched with one thread per element.

    python vector_add.py [cpu|cuda]
"""
import sys

import numpy as np

import devctx

SOURCE = r"""
#include <devctx/kernel.hpp>

template <class T>
DEVCTX_KERNEL void vector_add(devctx::span<const T> a, devctx::span<const T> b, devctx::span<T> out) {
  const std::size_t i = devctx::global_idx().x;
  if (i < out.size()) out[i] = a[i] + b[i];
}
"""


def run(ctx, a, b):
    """a + b (float32 arrays of one length) computed by the kernel on ctx's device."""
    fn = ctx.compile_function(devctx.Module(SOURCE, name="vector_add.cpp"), "vector_add<float>")
    d_a, d_b = devctx.to_device(ctx, a), devctx.to_device(ctx, b)
    out = ctx.empty(len(a), "float32")
    ctx.fill(out, float("nan"))  # poison: every element must be written
    block = 256
    ctx.enqueue_function(fn, d_a, d_b, out, grid_dim=(len(a) + block - 1) // block, block_dim=block)
    return devctx.to_numpy(out)


def main(device):
    rng = np.random.default_rng()
    a, b = rng.standard_normal(100_003, dtype=np.float32), rng.standard_normal(100_003, dtype=np.float32)
    got = run(devctx.Context(device), a, b)
    assert np.array_equal(got, a + b)
    print(f"vector_add on {device}: {len(a)} elements, all equal to NumPy's")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
