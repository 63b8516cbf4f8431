# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of devctx's Python tests: a CPU context, a seeded generator (printed, and
replayed with DEVCTX_TEST_SEED), and the GPU gate (skip without a GPU, fail instead when
DEVCTX_REQUIRE_GPU on: 1, true, yes or on, read by the library's flag rule in
tests/support/devctx_env.py)."""
import os
import pathlib
import random
import sys

import pytest

import devctx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "support"))
import devctx_env  # noqa: E402  (the flag rule, shared with tests/tools)

_SEED = int(os.environ.get("DEVCTX_TEST_SEED", "0"), 0) or random.SystemRandom().randrange(1, 2**63)


def pytest_report_header(config):
    return f"devctx seed {_SEED} (set DEVCTX_TEST_SEED to replay); cuda devices: {devctx.count('cuda')}"


@pytest.fixture
def rng(request):
    np = pytest.importorskip("numpy")
    return np.random.default_rng([_SEED, abs(hash(request.node.nodeid)) % 2**32])


@pytest.fixture
def ctx():
    context = devctx.Context("cpu")
    yield context
    context.synchronize()  # a test leaves no failure queued


def require_gpu() -> bool:
    return devctx_env.require_gpu()


def gpu_or_skip(module_name=None):
    """Skips (fails with DEVCTX_REQUIRE_GPU on) without a CUDA device or without `module_name`."""
    if devctx.count("cuda") == 0:
        if require_gpu():
            pytest.fail("DEVCTX_REQUIRE_GPU is on but devctx sees no CUDA device (built without CUDA, or no GPU)")
        pytest.skip("no CUDA device")
    if module_name is None:
        return None
    try:
        return __import__(module_name)
    except ImportError:
        if require_gpu():
            pytest.fail(f"DEVCTX_REQUIRE_GPU is on but {module_name} is not installed")
        pytest.skip(f"{module_name} is not installed")


def affine32(x, a, b, fused):
    """float32 x * a + b elementwise as a kernel computes it: rounded twice (x * a, then + b) or,
    with `fused`, once (a fused multiply-add, which nvcc makes of it by default, as CUDA does). The
    fused value comes from long double, whose 64-bit significand holds x * a exactly."""
    np = pytest.importorskip("numpy")
    x = np.asarray(x, dtype=np.float32)
    a, b = np.float32(a), np.asarray(b, dtype=np.float32)
    if not fused:
        return x * a + b
    return (x.astype(np.longdouble) * np.longdouble(a) + b.astype(np.longdouble)).astype(np.float32)


def equal_plain_or_fused(got, steps, device):
    """Whether `got` is what a chain of affine steps [(x, a, b) or (None, a, b) for the previous
    result] gives, all rounded twice, or (on a GPU) all fused; the whole array one way."""
    np = pytest.importorskip("numpy")
    for fused in ((False, True) if device != "cpu" else (False,)):
        value = None
        for x, a, b in steps:
            value = affine32(value if x is None else x, a, b, fused)
        if np.array_equal(got, value):
            return True
    return False
