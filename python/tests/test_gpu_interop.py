# SPDX-License-Identifier: Apache-2.0
"""devctx with PyTorch and CuPy on a CUDA GPU: tensors modified in place by devctx kernels through
DLPack and back, ordered by CUDA streams alone (the DLPack stream handshake, no synchronize), and
devctx's stream shared with torch. Skipped without a GPU or without torch/cupy; with
DEVCTX_REQUIRE_GPU=1 those are failures instead."""
import gc

import pytest

import devctx
from conftest import gpu_or_skip


@pytest.fixture
def gpu_ctx():
    gpu_or_skip()
    context = devctx.Context("cuda:0")
    yield context
    context.synchronize()


def test_torch_tensor_modified_in_place_by_a_devctx_kernel_and_back(gpu_ctx):
    torch = gpu_or_skip("torch")
    n = 1 << 22
    t = torch.randn(n, device="cuda:0")  # enqueued on torch's stream
    expected = t * 2  # torch's stream
    view = devctx.from_dlpack(t, gpu_ctx)  # devctx's stream waits for torch's
    assert view.data_ptr == t.data_ptr() and view.shape == (n,) and view.dtype == "float32"
    devctx.vector_add(gpu_ctx, view, view, view)  # in place, on devctx's stream
    back = torch.from_dlpack(view)  # torch's stream waits for devctx's
    assert back.data_ptr() == t.data_ptr()
    torch.testing.assert_close(back, expected, rtol=0, atol=0)
    torch.testing.assert_close(t, expected, rtol=0, atol=0)  # the original tensor, changed in place


def test_torch_softmax_against_devctx_softmax_with_a_shared_stream(gpu_ctx):
    torch = gpu_or_skip("torch")
    x = torch.randn(513, 1000, device="cuda:0") * 10
    out = gpu_ctx.empty((513, 1000))
    gpu_ctx.fill(out, float("nan"))
    devctx.softmax(gpu_ctx, devctx.from_dlpack(x, gpu_ctx), out)
    # torch runs on devctx's own stream: ordered after the kernel by the stream alone.
    with torch.cuda.stream(torch.cuda.ExternalStream(gpu_ctx.cuda_stream)):
        got = torch.from_dlpack(out).double()
        reference = torch.softmax(x.double(), dim=1)
        error = (got - reference).abs().max().item()
    assert error < 1e-6


def test_devctx_array_handed_to_torch_outlives_the_devctx_array(gpu_ctx):
    torch = gpu_or_skip("torch")
    a = gpu_ctx.empty(1000)
    gpu_ctx.fill(a, 3.0)
    t = torch.from_dlpack(a)
    del a
    gc.collect()
    torch.cuda.synchronize()
    assert torch.equal(t, torch.full((1000,), 3.0, device="cuda:0"))
    t.mul_(2)  # torch writes devctx's memory; devctx reads it after the handshake
    again = devctx.from_dlpack(t, gpu_ctx)
    assert torch.equal(torch.from_dlpack(again), torch.full((1000,), 6.0, device="cuda:0"))


def test_a_released_torch_tensor_is_kept_until_devctxs_work_is_done(gpu_ctx):
    torch = gpu_or_skip("torch")
    n = 1 << 24
    t = torch.ones(n, device="cuda:0")
    view = devctx.from_dlpack(t, gpu_ctx)
    del t
    gc.collect()
    for _ in range(20):  # a queue of work that outlasts the view
        devctx.vector_add(gpu_ctx, view, view, view)
    host = gpu_ctx.empty_host(n)
    gpu_ctx.copy(host, view)
    del view
    gc.collect()
    torch.empty(n, device="cuda:0").fill_(-1.0)  # would reuse the tensor's memory if it were freed early
    gpu_ctx.synchronize()
    import numpy as np

    assert np.all(np.from_dlpack(host) == 2.0**20)


def test_cupy_array_modified_in_place_by_a_devctx_kernel_and_back(gpu_ctx):
    cp = gpu_or_skip("cupy")
    x = cp.random.standard_normal((300, 700), dtype=cp.float64)
    expected = x * 2
    view = devctx.from_dlpack(x, gpu_ctx)
    assert view.data_ptr == x.data.ptr and view.shape == (300, 700)
    devctx.vector_add(gpu_ctx, view, view, view)
    back = cp.from_dlpack(view)
    assert back.data.ptr == x.data.ptr
    assert bool(cp.all(back == expected)) and bool(cp.all(x == expected))
    out = gpu_ctx.empty((300, 700), "float64")
    devctx.softmax(gpu_ctx, view, out)
    ref = cp.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    assert float(cp.abs(cp.from_dlpack(out) - ref).max()) < 1e-12


def test_gpu_misuse(gpu_ctx):
    np = pytest.importorskip("numpy")
    with pytest.raises(devctx.Error, match="host memory") as e:
        devctx.from_dlpack(np.zeros(10, np.float32), gpu_ctx)
    assert e.value.code == "invalid_argument"
    a = gpu_ctx.empty(10)
    with pytest.raises(ValueError, match="ambiguous"):
        a.__dlpack__(stream=0)
    assert a.__dlpack_device__() == (2, 0)
    assert gpu_ctx.cuda_stream != 0
    h = gpu_ctx.empty_host(10)
    assert h.__dlpack_device__() == (3, 0)
    gpu_ctx.fill(h, 1.5)
    assert np.all(np.from_dlpack(h) == 1.5)  # NumPy takes page-locked memory (synchronizes first)
