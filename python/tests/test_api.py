# SPDX-License-Identifier: Apache-2.0
"""The Python API on the CPU backend: contexts, arrays, copies, fills, the kernels against NumPy
references (poisoned outputs, every element checked), devctx.Error, and the type stubs."""

import pytest

import devctx

np = pytest.importorskip("numpy")


def test_contexts(ctx):
    assert ctx.api == "cpu" and ctx.id == 0 and "CPU" in ctx.name
    assert devctx.count("cpu") == 1
    assert devctx.count("cuda") >= 0
    assert repr(ctx).startswith("Context('cpu:0'")
    with pytest.raises(devctx.Error, match="names no backend") as e:
        devctx.Context("tpu")
    assert e.value.code == "invalid_argument"
    with pytest.raises(devctx.Error, match="non-negative integer"):
        devctx.Context("cpu:x")
    with pytest.raises(devctx.Error, match="does not exist") as e:
        devctx.Context("cpu:3")
    assert e.value.code == "not_available"
    with pytest.raises(devctx.Error, match="backends are 'cpu' and 'cuda'"):
        devctx.count("gpu")


def test_native_handles_are_refused_on_the_cpu(ctx):
    with pytest.raises(devctx.Error, match="no native CUDA stream") as e:
        ctx.cuda_stream
    assert e.value.code == "not_available"
    assert isinstance(e.value, RuntimeError)


def test_arrays(ctx):
    a = ctx.empty((2, 3, 4), "int16")
    assert a.shape == (2, 3, 4) and a.size == 24 and a.nbytes == 48 and a.dtype == "int16" and len(a) == 2
    assert a.context.api == "cpu"
    b = a.reshape((6, 4))
    assert b.shape == (6, 4) and b.data_ptr == a.data_ptr
    with pytest.raises(devctx.Error, match="holds 25 elements") as e:
        a.reshape(25)
    assert e.value.code == "size_mismatch"
    assert ctx.empty(0).size == 0
    with pytest.raises(devctx.Error, match="unknown dtype 'float16'"):
        ctx.empty(3, "float16")
    with pytest.raises(devctx.Error, match="negative"):
        ctx.empty((2, -1))
    assert "DeviceArray(shape=(2, 3, 4), dtype=int16, device=cpu:0)" == repr(a)


def test_copies_between_every_kind(ctx, rng):
    values = rng.integers(-1000, 1000, size=500).astype(np.int32)
    d1, d2 = ctx.empty(500, "int32"), ctx.empty(500, "int32")
    h = ctx.empty_host(500, "int32")
    ctx.synchronize()
    ctx.copy(d1, values)      # numpy -> device
    ctx.copy(h, d1)           # device -> host array
    ctx.copy(d2, h)           # host array -> device
    out = np.full(500, -1, np.int32)
    ctx.copy(out, d2)         # device -> numpy (returns once copied)
    np.testing.assert_array_equal(out, values)
    import array

    ctx.copy(d1, array.array("i", range(500)))  # any buffer-protocol host memory
    np.testing.assert_array_equal(devctx.to_numpy(d1), np.arange(500, dtype=np.int32))


def test_copy_misuse(ctx):
    d = ctx.empty(10)
    with pytest.raises(devctx.Error, match="has 10 elements") as e:
        ctx.copy(d, np.zeros(11, np.float32))
    assert e.value.code == "size_mismatch"
    with pytest.raises(devctx.Error, match="destination holds float32 and the source float64") as e:
        ctx.copy(d, np.zeros(10))
    assert e.value.code == "invalid_argument"
    with pytest.raises(TypeError, match="C-contiguous"):
        ctx.copy(d, np.zeros((10, 2), np.float32)[:, 0])
    with pytest.raises(TypeError, match="writable"):
        ro = np.zeros(10, np.float32)
        ro.flags.writeable = False
        ctx.copy(ro, d)
    with pytest.raises(TypeError):
        ctx.copy(d, "not memory")


def test_fill(ctx):
    for dtype, value in [("float32", 2.5), ("int8", -7), ("uint64", 2**64 - 1), ("bool", True)]:
        a = ctx.empty(1001, dtype)
        ctx.fill(a, value)
        np.testing.assert_array_equal(devctx.to_numpy(a), np.full(1001, value, dtype))
    h = ctx.empty_host(7, "float64")
    ctx.fill(h, -1.25)
    ctx.synchronize()
    np.testing.assert_array_equal(np.from_dlpack(h), np.full(7, -1.25))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 255, 256, 257, 100_003])
def test_vector_add(ctx, rng, dtype, n):
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = ctx.empty(n, dtype)
    ctx.fill(out, np.nan)
    devctx.vector_add(ctx, devctx.to_device(ctx, a), devctx.to_device(ctx, b), out)
    np.testing.assert_array_equal(devctx.to_numpy(out), a + b)


@pytest.mark.parametrize("dtype,tolerance", [("float32", 1e-6), ("float64", 1e-14)])
@pytest.mark.parametrize("shape", [(1, 1), (3, 1000), (64, 257), (1000,)])
def test_softmax(ctx, rng, dtype, tolerance, shape):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    out = ctx.empty(shape, dtype)
    ctx.fill(out, np.nan)
    devctx.softmax(ctx, devctx.to_device(ctx, x), out)
    got = devctx.to_numpy(out)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=tolerance * 50, atol=tolerance)


def test_kernel_misuse(ctx):
    a, b = ctx.empty(10), ctx.empty(11)
    with pytest.raises(devctx.Error, match="b 11") as e:
        devctx.vector_add(ctx, a, b, a)
    assert e.value.code == "size_mismatch"
    with pytest.raises(devctx.Error, match="takes float32 or float64"):
        devctx.vector_add(ctx, ctx.empty(10, "int32"), a, a)
    with pytest.raises(devctx.Error, match="inputs hold float64 but out holds float32"):
        devctx.vector_add(ctx, ctx.empty(10, "float64"), ctx.empty(10, "float64"), a)
    with pytest.raises(TypeError, match="must be a devctx DeviceArray"):
        devctx.vector_add(ctx, np.zeros(10, np.float32), a, a)
    with pytest.raises(devctx.Error, match="same shape"):
        devctx.softmax(ctx, ctx.empty((2, 5)), ctx.empty((5, 2)))
