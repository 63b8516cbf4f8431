# SPDX-License-Identifier: Apache-2.0
"""devctx.softmax's launch shape fits the array's shape (issue 25, defect 7: (65536, 1) took tens
of seconds on the CPU backend, one 256-thread block with barriers and warp shuffles per one-element
row). Results against a NumPy reference (random inputs, poisoned outputs, every element) for many
shapes, with the launch shape devctx picks and with every shape a GPU may use, forced through
devctx._devctx._softmax; on the CPU backend every launch runs as a plain loop (DEVCTX_TRACE)."""
import re

import pytest

import devctx

np = pytest.importorskip("numpy")

TOLERANCE = {"float32": 1e-6, "float64": 1e-14}


def reference(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(ctx, rng, shape, dtype, launch_shape=None):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    out = ctx.empty(shape, dtype)
    ctx.fill(out, np.nan)
    if launch_shape is None:
        devctx.softmax(ctx, devctx.to_device(ctx, x), out)
    else:
        devctx._devctx._softmax(ctx, devctx.to_device(ctx, x), out, launch_shape)
    got = devctx.to_numpy(out)
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(got, reference(x), rtol=tolerance * 50, atol=tolerance)


SHAPES = [(65536, 1), (1, 65536), (3, 1000), (1, 1), (7, 3), (257, 2), (33, 31), (65, 33), (100, 64), (9, 129),
          (5, 1025), (2, 4097), (1000,), (1,), (1, 1000003)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_softmax_matches_numpy(ctx, rng, shape, dtype):
    run(ctx, rng, shape, dtype)


# (threads per row, block size): every shape softmax_shape picks on a GPU or the CPU, and more.
LAUNCH_SHAPES = [(1, 1), (1, 3), (1, 64), (1, 256), (1, 1024), (2, 32), (4, 64), (8, 256), (16, 96), (32, 32),
                 (32, 256), (32, 1024), (256, 256)]
ROW_SHAPES = [(37, 1), (5, 3), (9, 33), (3, 1000), (2, 2049), (300, 17)]


@pytest.mark.parametrize("launch_shape", LAUNCH_SHAPES, ids=[f"{g}per{b}" for g, b in LAUNCH_SHAPES])
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=["x".join(map(str, s)) for s in ROW_SHAPES])
def test_every_launch_shape_matches_numpy(ctx, rng, shape, launch_shape):
    run(ctx, rng, shape, "float32", launch_shape)


@pytest.mark.parametrize("launch_shape", [(3, 256), (0, 256), (64, 256), (2, 48), (256, 128), (1, 0), (128, 128)])
def test_launch_shapes_that_do_not_fit_are_refused(ctx, rng, launch_shape):
    x = devctx.to_device(ctx, rng.standard_normal((4, 8)).astype(np.float32))
    out = ctx.empty((4, 8))
    ctx.fill(out, 1.5)
    with pytest.raises(devctx.Error, match="threads per row in blocks of") as e:
        devctx._devctx._softmax(ctx, x, out, launch_shape)
    assert e.value.code == "invalid_argument"
    np.testing.assert_array_equal(devctx.to_numpy(out), np.full((4, 8), 1.5, np.float32))  # nothing ran
    with pytest.raises(devctx.ArgumentError, match="each up to 1024"):
        devctx._devctx._softmax(ctx, x, out, (1, 2048))


@pytest.mark.parametrize("shape", [(4096, 1), (4096, 7), (512, 1000), (3, 1000), (1, 65536)],
                         ids=["4096x1", "4096x7", "512x1000", "3x1000", "1x65536"])
def test_cpu_launches_run_as_plain_loops(ctx, rng, monkeypatch, capfd, shape):
    """On the CPU backend no thread reaches a barrier or a warp operation (one thread per row), so
    no block pays a fiber per thread: what made (65536, 1) take tens of seconds."""
    capfd.readouterr()
    monkeypatch.setenv("DEVCTX_TRACE", "1")  # read at enqueue
    run(ctx, rng, shape, "float32")
    monkeypatch.delenv("DEVCTX_TRACE")
    ctx.synchronize()
    lines = [line for line in capfd.readouterr().err.splitlines() if "softmax" in line]
    assert len(lines) == 1, lines
    assert "plain loop: no thread reached barrier() or a warp operation" in lines[0], lines[0]
    block = int(re.search(r"block \((\d+), 1, 1\)", lines[0]).group(1))
    grid = int(re.search(r"grid \((\d+), 1, 1\)", lines[0]).group(1))
    assert 1 <= block <= 256 and grid * block >= shape[0] > (grid - 1) * block, lines[0]
