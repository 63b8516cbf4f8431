# SPDX-License-Identifier: Apache-2.0
"""Zero-copy DLPack round trips between devctx and NumPy on the CPU backend (whose device memory
is host memory), both protocol versions, lifetimes and the stream-ordered release."""
import ctypes
import gc
import weakref

import pytest

import devctx

np = pytest.importorskip("numpy")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


def random_array(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("float"):
        return rng.uniform(-1e3, 1e3, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule).decode()


def test_numpy_array_imported_without_copy_is_written_by_a_kernel(ctx, rng):
    x = rng.standard_normal((37, 129)).astype(np.float32)
    before = x.copy()
    view = devctx.from_dlpack(x, ctx)
    assert view.data_ptr == x.ctypes.data
    assert view.shape == (37, 129) and view.dtype == "float32" and view.size == x.size and not view.readonly
    devctx.vector_add(ctx, view, view, view)  # in place
    ctx.synchronize()
    np.testing.assert_array_equal(x, before * 2)


def test_devctx_array_exported_to_numpy_without_copy_both_ways(ctx, rng):
    values = rng.standard_normal(1000)
    out = ctx.empty(1000, "float64")
    ctx.fill(out, np.nan)
    devctx.vector_add(ctx, devctx.to_device(ctx, values), devctx.to_device(ctx, values), out)
    n = np.from_dlpack(out)  # synchronizes the context: the kernel has finished
    assert n.ctypes.data == out.data_ptr
    np.testing.assert_array_equal(n, values * 2)
    n[:] = -values  # NumPy writes devctx's memory
    np.testing.assert_array_equal(devctx.to_numpy(out), -values)
    again = devctx.from_dlpack(n, ctx)  # devctx -> NumPy -> devctx: still the same memory
    assert again.data_ptr == out.data_ptr


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips(ctx, rng, dtype):
    x = random_array(rng, (3, 7), dtype)
    d = devctx.to_device(ctx, x)
    assert d.dtype == dtype and d.shape == (3, 7) and d.nbytes == x.nbytes
    np.testing.assert_array_equal(devctx.to_numpy(d), x)
    np.testing.assert_array_equal(np.from_dlpack(d), x)
    view = devctx.from_dlpack(x, ctx)
    assert view.dtype == dtype and view.data_ptr == x.ctypes.data


def test_host_arrays_export_to_numpy(ctx, rng):
    h = ctx.empty_host((4, 5), "int32")
    ctx.synchronize()
    assert h.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(h)
    values = random_array(rng, (4, 5), "int32")
    n[...] = values
    d = ctx.empty((4, 5), "int32")
    ctx.copy(d, h)
    np.testing.assert_array_equal(devctx.to_numpy(d), values)


def test_both_capsule_forms(ctx, rng):
    a = devctx.to_device(ctx, rng.standard_normal(10).astype(np.float32))
    plain = a.__dlpack__()
    versioned = a.__dlpack__(max_version=(1, 0))
    assert capsule_name(plain) == "dltensor"
    assert capsule_name(versioned) == "dltensor_versioned"
    old = a.__dlpack__(max_version=(0, 8))
    assert capsule_name(old) == "dltensor"
    v1 = devctx._devctx._from_capsule(ctx, plain)
    v2 = devctx._devctx._from_capsule(ctx, versioned)
    assert capsule_name(plain) == "used_dltensor" and capsule_name(versioned) == "used_dltensor_versioned"
    assert v1.data_ptr == v2.data_ptr == a.data_ptr
    with pytest.raises(TypeError, match="no one has consumed"):
        devctx._devctx._from_capsule(ctx, plain)
    del old  # an unconsumed capsule frees its tensor itself


def test_an_export_keeps_the_memory_after_the_array_is_gone(ctx, rng):
    values = rng.standard_normal(100_000)
    a = devctx.to_device(ctx, values)
    n = np.from_dlpack(a)
    del a
    gc.collect()
    ctx.empty(100_000, "float64")  # would reuse freed memory
    ctx.synchronize()
    np.testing.assert_array_equal(n, values)


def test_an_import_keeps_the_producer_alive_until_devctxs_work_has_finished(ctx, rng):
    x = rng.standard_normal(1 << 16).astype(np.float32)
    expected = x * 2
    alive = weakref.ref(x)
    view = devctx.from_dlpack(x, ctx)
    del x
    gc.collect()
    assert alive() is not None  # the view holds the producer
    devctx.vector_add(ctx, view, view, view)
    del view
    gc.collect()
    assert alive() is not None  # released only once devctx's work is done: at the next synchronize
    ctx.synchronize()
    gc.collect()
    assert alive() is None


def test_read_only_arrays_import_read_only(ctx, rng):
    x = rng.standard_normal(64).astype(np.float32)
    x.flags.writeable = False
    try:
        view = devctx.from_dlpack(x, ctx)
    except BufferError:
        pytest.skip("this NumPy does not export read-only arrays")
    assert view.readonly
    out = ctx.empty(64)
    devctx.vector_add(ctx, view, view, out)
    np.testing.assert_array_equal(devctx.to_numpy(out), x * 2)
    with pytest.raises(devctx.Error, match="read-only") as e:
        devctx.vector_add(ctx, view, view, view)
    assert e.value.code == "invalid_argument"
    with pytest.raises(devctx.Error, match="read-only"):
        ctx.fill(view, 0.0)
    assert capsule_name(view.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"


def test_imports_that_do_not_fit_are_refused(ctx, rng):
    x = rng.standard_normal((8, 8)).astype(np.float32)
    with pytest.raises(devctx.Error, match="not contiguous") as e:
        devctx.from_dlpack(x.T, ctx)
    assert e.value.code == "invalid_argument"
    with pytest.raises(devctx.Error, match="not contiguous"):
        devctx.from_dlpack(x[:, ::2], ctx)
    with pytest.raises(devctx.Error, match="no element type for DLPack's complex64"):
        devctx.from_dlpack(np.zeros(4, np.complex64), ctx)
    with pytest.raises(devctx.Error, match="float16"):
        devctx.from_dlpack(np.zeros(4, np.float16), ctx)
    view = devctx.from_dlpack(x[2:5], ctx)  # a contiguous part is fine
    assert view.data_ptr == x[2:5].ctypes.data and view.shape == (3, 8)


def test_export_options(ctx):
    a = ctx.empty(4)
    with pytest.raises(BufferError, match="without copying"):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="cannot be exported to that device"):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match="takes no stream"):
        a.__dlpack__(stream=5)
    assert capsule_name(a.__dlpack__(dl_device=(1, 0), copy=False)) == "dltensor"
    assert a.__dlpack_device__() == (1, 0)
