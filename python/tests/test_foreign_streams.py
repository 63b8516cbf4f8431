# SPDX-License-Identifier: Apache-2.0
"""CUDA streams made by other libraries as devctx streams (issue 28, Python launch path): Context.wrap_stream
and the stream= of enqueue_function, bind_function, a bound launch, copy, fill and enqueue_wait_for take
an int cudaStream_t, an object with the CUDA stream protocol (__cuda_stream__() -> (0, handle)), a
torch.cuda.Stream or a cupy.cuda.Stream. On the CPU backend each is a devctx.Error ('not_available')
naming the stream and the device, and nothing is enqueued; a handle that is no stream (0, negative,
past 64 bits, a protocol version devctx does not know) is refused before any device is asked. On a
GPU (skipped without one, failures with DEVCTX_REQUIRE_GPU=1): launches and copies on torch and CuPy
streams, ordered with those libraries' own work by the stream alone, every element checked."""
import pytest

import devctx
from conftest import gpu_or_skip

np = pytest.importorskip("numpy")

AFFINE = r"""
#include <devctx/kernel.hpp>

DEVCTX_KERNEL void affine(devctx::span<float> y, float a, float b) {
  const std::size_t i = devctx::global_idx().x;
  if (i < y.size()) y[i] = y[i] * a + b;
}
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVCTX_CACHE_DIR", str(tmp_path / "cache"))


class Protocol:
    """A stream of the CUDA stream protocol, as cuda.core, PyTorch (2.9+) and numba-cuda make them."""

    def __init__(self, value):
        self.value = value

    def __cuda_stream__(self):
        return self.value


class OldTorchStream:
    """What torch.cuda.Stream was before the protocol: the handle as an int `cuda_stream`."""

    def __init__(self, handle):
        self.cuda_stream = handle


class CupyStream:
    """What cupy.cuda.Stream is without the protocol: the handle as `ptr`, in a cupy module."""

    def __init__(self, handle):
        self.ptr = handle


CupyStream.__module__ = "cupy.cuda.stream"


def verbs(ctx, fn, d_y, host):
    """Every verb with a stream= (or other=) argument, as a function of that argument."""
    launch = ctx.bind_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256)
    return {
        "enqueue_function": lambda s: ctx.enqueue_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256, stream=s),
        "bind_function": lambda s: ctx.bind_function(fn, d_y, 2.0, 1.0, grid_dim=2, block_dim=256, stream=s),
        "Launch": lambda s: launch(stream=s),
        "copy": lambda s: ctx.copy(d_y, host, stream=s),
        "fill": lambda s: ctx.fill(d_y, 5.0, stream=s),
        "Context.enqueue_wait_for": lambda s: ctx.enqueue_wait_for(s),
        "Stream.enqueue_wait_for": lambda s: ctx.create_stream().enqueue_wait_for(s),
        "wrap_stream": lambda s: ctx.wrap_stream(s),
    }


@pytest.fixture
def setup(ctx, rng):
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    y = rng.standard_normal(300, dtype=np.float32)
    return fn, devctx.to_device(ctx, y), y


def unchanged(ctx, d_y, y):
    ctx.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(d_y), y)


@pytest.mark.parametrize("stream, named", [
    (1, "cudaStream_t 0x1"),
    (0x7F00DEAD0000, "cudaStream_t 0x7f00dead0000"),
    (2**64 - 1, "cudaStream_t 0xffffffffffffffff"),
    (Protocol((0, 0x1234)), "Protocol (cudaStream_t 0x1234)"),
    (OldTorchStream(0x5678), "OldTorchStream (cudaStream_t 0x5678)"),
    (CupyStream(0x9ABC), "cupy.cuda.stream.CupyStream (cudaStream_t 0x9abc)"),
])
def test_a_cuda_stream_on_the_cpu_backend_is_refused_by_name(ctx, setup, stream, named):
    fn, d_y, y = setup
    host = np.zeros(300, np.float32)
    for verb, call in verbs(ctx, fn, d_y, host).items():
        with pytest.raises(devctx.Error) as info:
            call(stream)
        e = info.value
        assert e.code == "not_available", (verb, str(e))
        assert not isinstance(e, devctx.ArgumentError)
        assert named in str(e), (verb, str(e))
        assert "cpu:0" in str(e) and "no native CUDA streams" in str(e), (verb, str(e))
        assert str(e).startswith(verb + ": "), (verb, str(e))
    unchanged(ctx, d_y, y)


@pytest.mark.parametrize("stream, error, message", [
    (0, devctx.ArgumentError, "0 is ambiguous: CUDA's legacy or per-thread default stream"),
    (-1, devctx.ArgumentError, "-1 is not a stream's handle"),
    (2**64, devctx.ArgumentOverflowError, "does not fit in 64 bits"),
    pytest.param(10**5000, devctx.ArgumentOverflowError, "does not fit in 64 bits", id="huge"),  # repr() fails
    (Protocol((0, 0)), devctx.ArgumentError, r"__cuda_stream__\(\)'s handle 0 is ambiguous"),
    (Protocol((1, 0x1234)), devctx.ArgumentError, "speaks version 1 of the CUDA stream protocol"),
    (Protocol([0, 0x1234]), TypeError, r"returned \[0, 4660\], not a \(version, handle\) tuple"),
    (Protocol((0, "0x1234")), TypeError, r"handle is str \('0x1234'\), not an int cudaStream_t"),
    (Protocol((0, 1.0)), TypeError, "handle is float"),
    (OldTorchStream(-5), devctx.ArgumentError, r"OldTorchStream.cuda_stream -5 is not a stream's handle"),
    (OldTorchStream(None), TypeError, r"OldTorchStream.cuda_stream is NoneType"),
    (CupyStream(0), devctx.ArgumentError, r"CupyStream.ptr 0 is ambiguous"),
])
def test_a_handle_that_is_no_stream_is_refused_before_any_device(ctx, setup, stream, error, message):
    fn, d_y, y = setup
    host = np.zeros(300, np.float32)
    for verb, call in verbs(ctx, fn, d_y, host).items():
        with pytest.raises(error, match=message) as info:
            call(stream)
        if error is not TypeError:
            assert info.value.code == "invalid_argument"
    unchanged(ctx, d_y, y)


@pytest.mark.parametrize("bad", [True, 1.5, "0x1234", object(), [1], None])
def test_other_objects_are_not_streams(ctx, setup, bad):
    fn, d_y, y = setup
    host = np.zeros(300, np.float32)
    for verb, call in verbs(ctx, fn, d_y, host).items():
        if bad is None and verb not in ("wrap_stream", "Context.enqueue_wait_for", "Stream.enqueue_wait_for"):
            continue  # None is the context's own stream
        with pytest.raises(TypeError, match="takes .*CUDA stream") as info:
            call(bad)
        assert type(bad).__name__ in str(info.value)
    unchanged(ctx, d_y, y)


def test_devctx_streams_speak_the_cuda_stream_protocol(ctx):
    stream = ctx.create_stream()
    assert not stream.wrapped
    with pytest.raises(devctx.Error) as info:
        stream.__cuda_stream__()
    assert info.value.code == "not_available"
    assert ctx.wrap_stream(stream) is stream  # a devctx stream of the context is itself
    assert repr(stream) == "Stream(cpu:0)"


def test_copy_and_fill_on_a_devctx_stream(ctx, rng):
    """stream= of copy and fill, on a stream of the CPU backend: in its order, ordered with the
    context's stream by waits."""
    stream = ctx.create_stream()
    fn = ctx.compile_function(devctx.Module(AFFINE), "affine")
    x = rng.standard_normal(10_000, dtype=np.float32)
    d = ctx.empty(10_000)
    ctx.fill(d, float("nan"))
    stream.enqueue_wait_for(ctx)
    ctx.copy(d, x, stream=stream)
    ctx.enqueue_function(fn, d, 2.0, 1.0, grid_dim=40, block_dim=256, stream=stream)
    out = np.empty_like(x)
    ctx.copy(out, d, stream=stream)  # host memory: returns once the copy is done
    np.testing.assert_array_equal(out, x * np.float32(2) + np.float32(1))
    ctx.fill(d, 3.0, stream=stream)
    ctx.enqueue_wait_for(stream)
    np.testing.assert_array_equal(devctx.to_numpy(d), np.full(10_000, 3.0, np.float32))
    h = ctx.empty_host(10_000)
    ctx.fill(h, -1.0, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(h), np.full(10_000, -1.0, np.float32))


# ---- GPU: PyTorch and CuPy streams -----------------------------------------------------------------


@pytest.fixture
def gpu_ctx():
    gpu_or_skip()
    context = devctx.Context("cuda:0")
    yield context
    context.synchronize()


def integers(rng, n):
    """float32 values that stay exact through the affine maps below (no rounding, fused or not)."""
    return rng.integers(-1000, 1000, size=n).astype(np.float32)


@pytest.mark.parametrize("form", ["object", "int", "wrapped", "bound"])
def test_launch_on_a_torch_stream_between_torch_ops(gpu_ctx, rng, form):
    """torch op, devctx kernel, torch op, all on one torch stream, no synchronize between them:
    ((x * 2) * 3 + 1) + 1, every element checked."""
    torch = gpu_or_skip("torch")
    fn = gpu_ctx.compile_function(devctx.Module(AFFINE), "affine")
    n = 1 << 20
    x = integers(rng, n)
    s = torch.cuda.Stream()
    stream = {"object": s, "int": s.cuda_stream, "wrapped": gpu_ctx.wrap_stream(s), "bound": s}[form]
    if form == "wrapped":
        assert stream.wrapped and stream.cuda_stream == s.cuda_stream and repr(stream) == "Stream(cuda:0, wrapped)"
    with torch.cuda.stream(s):
        t = torch.from_numpy(x).to("cuda:0", non_blocking=False)
        t = t * 2  # on s
        grid = (n + 255) // 256
        if form == "bound":
            launch = gpu_ctx.bind_function(fn, t, 3.0, 1.0, grid_dim=grid, block_dim=256, stream=s)
            assert launch.stream.wrapped
            launch()
        else:
            gpu_ctx.enqueue_function(fn, t, 3.0, 1.0, grid_dim=grid, block_dim=256, stream=stream)
        z = t + 1  # on s, after the kernel by the stream's order alone
    s.synchronize()
    np.testing.assert_array_equal(z.cpu().numpy(), (x * 2) * 3 + 1 + 1)


def test_torch_protocol_and_attribute_name_the_same_stream(gpu_ctx):
    torch = gpu_or_skip("torch")
    s = torch.cuda.Stream()
    w = gpu_ctx.wrap_stream(s)
    assert w.cuda_stream == s.cuda_stream
    if hasattr(s, "__cuda_stream__"):
        assert s.__cuda_stream__() == (0, s.cuda_stream)
    assert gpu_ctx.wrap_stream(s.cuda_stream).cuda_stream == s.cuda_stream
    assert gpu_ctx.create_stream().__cuda_stream__()[0] == 0
    own = gpu_ctx.create_stream()
    assert own.__cuda_stream__() == (0, own.cuda_stream)
    ext = torch.cuda.ExternalStream(own.cuda_stream)  # devctx's stream in torch, and back
    assert gpu_ctx.wrap_stream(ext).cuda_stream == own.cuda_stream


def test_copy_fill_and_waits_on_torch_streams(gpu_ctx, rng):
    """fill and copy on a torch stream, a wait of devctx's stream for another torch stream, and a
    wait of a torch stream for devctx's stream (Stream.enqueue_wait_for, torch's wait_stream)."""
    torch = gpu_or_skip("torch")
    fn = gpu_ctx.compile_function(devctx.Module(AFFINE), "affine")
    n = 1 << 20
    x = integers(rng, n)
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    d = gpu_ctx.empty(n)
    gpu_ctx.fill(d, float("nan"))
    a.wait_stream(torch.cuda.current_stream())
    gpu_ctx.wrap_stream(a).enqueue_wait_for(gpu_ctx)  # the fill above is on devctx's stream
    gpu_ctx.copy(d, x, stream=a)  # from host memory: returns once copied
    gpu_ctx.enqueue_function(fn, d, 2.0, 0.0, grid_dim=n // 256, block_dim=256, stream=a)
    b.wait_stream(a)
    with torch.cuda.stream(b):
        t = torch.from_dlpack(d)  # devctx's stream waits... for nothing new; b is ordered by the wait
        t.add_(1)  # on b
    gpu_ctx.enqueue_wait_for(b)  # devctx's own stream waits for torch's stream b
    gpu_ctx.enqueue_function(fn, d, 1.0, 5.0, grid_dim=n // 256, block_dim=256)
    np.testing.assert_array_equal(devctx.to_numpy(d), x * 2 + 1 + 5)
    gpu_ctx.fill(d, 7.0, stream=b)
    b.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(d), np.full(n, 7.0, np.float32))


def test_context_synchronize_waits_for_a_wrapped_stream(gpu_ctx, rng):
    torch = gpu_or_skip("torch")
    fn = gpu_ctx.compile_function(devctx.Module(AFFINE), "affine")
    n = 1 << 22
    x = integers(rng, n)
    d = devctx.to_device(gpu_ctx, x)
    gpu_ctx.synchronize()
    s = torch.cuda.Stream()
    w = gpu_ctx.wrap_stream(s)
    for _ in range(20):
        gpu_ctx.enqueue_function(fn, d, 1.0, 1.0, grid_dim=n // 256, block_dim=256, stream=w)
    gpu_ctx.synchronize()  # waits for s too while w lives
    assert s.query()
    np.testing.assert_array_equal(devctx.to_numpy(d), x + 20)


def test_legacy_default_stream_by_number(gpu_ctx, rng):
    torch = gpu_or_skip("torch")
    fn = gpu_ctx.compile_function(devctx.Module(AFFINE), "affine")
    x = integers(rng, 4096)
    t = torch.from_numpy(x).cuda()
    torch.cuda.synchronize()
    gpu_ctx.enqueue_function(fn, t, 2.0, 1.0, grid_dim=16, block_dim=256, stream=1)  # cudaStreamLegacy
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), x * 2 + 1)
    with pytest.raises(devctx.ArgumentError, match="0 is ambiguous"):
        gpu_ctx.enqueue_function(fn, t, 2.0, 1.0, grid_dim=16, block_dim=256, stream=0)


def test_launch_on_a_cupy_stream_between_cupy_ops(gpu_ctx, rng):
    cupy = gpu_or_skip("cupy")
    fn = gpu_ctx.compile_function(devctx.Module(AFFINE), "affine")
    n = 1 << 20
    x = integers(rng, n)
    s = cupy.cuda.Stream(non_blocking=True)
    for stream in (s, s.ptr, gpu_ctx.wrap_stream(s)):
        with s:
            c = cupy.asarray(x) * 2  # on s
            gpu_ctx.enqueue_function(fn, c, 3.0, 1.0, grid_dim=n // 256, block_dim=256, stream=stream)
            z = c + 1  # on s
        s.synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(z), x * 2 * 3 + 1 + 1)


def test_a_stream_of_another_gpu_is_refused(rng):
    gpu_or_skip()
    if devctx.count("cuda") < 2:
        pytest.skip("needs two CUDA devices")
    ctx0, ctx1 = devctx.Context("cuda:0"), devctx.Context("cuda:1")
    other = ctx1.create_stream().cuda_stream
    with pytest.raises(devctx.Error) as info:
        ctx0.wrap_stream(other)
    assert info.value.code == "wrong_device"
    fn = ctx0.compile_function(devctx.Module(AFFINE), "affine")
    y = integers(rng, 512)
    d = devctx.to_device(ctx0, y)
    with pytest.raises(devctx.Error) as info:
        ctx0.enqueue_function(fn, d, 2.0, 1.0, grid_dim=2, block_dim=256, stream=other)
    assert info.value.code == "wrong_device"
    ctx0.synchronize()
    np.testing.assert_array_equal(devctx.to_numpy(d), y)
